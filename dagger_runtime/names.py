"""The rule for a team's name, in one place: the runtime's job configs (`team:`), the platform's
team specs (infra/, which imports this) and the lab's sink identities all check names with it.

A team name is a DNS label of 3 to 20 characters: lowercase ASCII letters, digits and single '-',
starting with a letter and ending with a letter or digit. Why each part:
  - it is part of every name derived from it: namespace and service account `dagger-<team>`
    (a GCP service account id is 6 to 30 characters), bucket `<project>-<team>-checkpoints`,
    labels, the Kafka principal `dagger-<team>`, the sinks' role and database;
  - no '--': a team's own topics are `<team>--<name>` and its consumer groups
    `dagger-<team>--<dagger>`, so no team's prefix extends another's; its secrets are
    DAGGER_SECRET_<TEAM>__<NAME> ('-' read as '_'), so `api--health` would name team api's;
  - ASCII only, lowercase only: no look-alike, other case or other spelling stands for a name.

    from dagger_runtime.names import check_team, team_problem
    check_team("fraud")             # "fraud"
    team_problem("Fraud")           # "a team name is a DNS label (...), got 'Fraud'"

Pure and cheap: imports `re` only (infra imports it; it imports nothing of infra).
"""

from __future__ import annotations

import re

# use with fullmatch (re.fullmatch never lets '$'-style matching take a trailing newline)
TEAM_PATTERN = r"(?!.*--)[a-z][a-z0-9-]{1,18}[a-z0-9]"
TEAM_NAME = re.compile(TEAM_PATTERN)
TEAM_RULE = (
    "a team name is a DNS label (lowercase letters, digits and single '-', 3 to 20 characters, "
    "starting with a letter and ending with a letter or digit, without '--')"
)
_SHOWN_MAX = 80


def _shown(value: object) -> str:
    """`value` quoted for a message: ascii() escapes newlines, ESC, surrogates and every other
    non-ASCII character, so no name can write a line of its own or a terminal sequence."""
    text = ascii(value)
    return text if len(text) <= _SHOWN_MAX else text[: _SHOWN_MAX - 3] + "..."


def is_team(name: object) -> bool:
    return isinstance(name, str) and TEAM_NAME.fullmatch(name) is not None


def team_problem(name: object) -> str | None:
    """Why `name` cannot be a team's name (one sentence, the name quoted safely), or None."""
    if is_team(name):
        return None
    return f"{TEAM_RULE}, got {_shown(name)}"


def check_team(name: object) -> str:
    """`name` if it is a team name, else ValueError saying why."""
    why = team_problem(name)
    if why:
        raise ValueError(why)
    return name  # type: ignore[return-value]
