"""inventory_export: the team stacks' outputs, as `pulumi stack output --json` would print them, without a cloud.

    python -m infra.inventory_export --out DIR [TEAM ...]

Runs each team's program under Pulumi's mocks (what `python -m infra.plan --json` does: its main is
called, not copied) and writes DIR/<stack>.json with the stack's outputs (infra.team.OUTPUT_NAMES).
The Ansible inventory plugin playbooks/inventory_plugins/dagger_stacks.py reads these files when
DAGGER_STACKS_EXPORT_DIR=DIR, so CI and the tests get the cloud inventory the stacks would export.
Teams: every spec in infra/teams/ unless named. Exit status 0, or 2 when a team is unknown or its
spec is refused (plan's reasons on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from . import plan
from .spec import TEAMS_DIR


def stack_outputs(team: str) -> dict | None:
    """The team stack's outputs under the mocks, or None when plan refuses the spec (reasons on stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = plan.main([str(TEAMS_DIR / f"{team}.yaml"), "--json"])
    if status != 0:
        sys.stderr.write(stderr.getvalue())
        return None
    return json.loads(stdout.getvalue())["outputs"]


def build_parser(prog: str = "python -m infra.inventory_export") -> argparse.ArgumentParser:
    """The command line's parser (`dagger` builds it under its own name; docs/reference/commands.md)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory to write <stack>.json into (created)")
    parser.add_argument("teams", nargs="*", metavar="TEAM", help="team stacks to export (default: every team)")
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "python -m infra.inventory_export") -> int:
    args = build_parser(prog).parse_args(argv)

    known = sorted(p.stem for p in TEAMS_DIR.glob("*.yaml"))
    unknown = [t for t in args.teams if t not in known]
    if unknown:
        print(f"unknown team(s): {', '.join(unknown)} (known: {', '.join(known)})", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    status = 0
    for team in args.teams or known:
        outputs = stack_outputs(team)
        if outputs is None:
            status = 2
            continue
        with open(args.out / f"{team}.json", "w", encoding="utf-8") as f:
            json.dump(outputs, f, indent=2, sort_keys=True)
            f.write("\n")
        print(f"{args.out / f'{team}.json'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
