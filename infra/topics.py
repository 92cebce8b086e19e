"""The topic catalogue (infra/platform.yaml) and the checks on a team's topic patterns.

Each shared Kafka cluster lists its shared topics, or topic prefixes, with the team that owns
them, their sensitivity and criticality, whom to ask, and the teams granted to read them (seed
002: topics classified by nature, criticality, sensitivity and volume). A team may read:
  - public topics: every team whose tier may use the cluster;
  - internal and restricted ones: their owner and the teams listed in `readers`.
(restricted topics hold personal or payment data: the same rule, but their readers are listed in
infra/topic-grants/<cluster>/<name|prefix>/<topic>.yaml, a file CODEOWNERS gives to the topic's
data owner alone, so a grant to them needs the data owner's approval.)

A team's `kafka[i].topics` are MirrorMaker 2 patterns, i.e. Java regexes, which MirrorMaker 2 joins
with '|' into one. Each must first keep to infra/topic_regex.py's allow-list (no inline flags, \\Q,
comments or unbalanced brackets, nothing that backtracks catastrophically), which makes it
self-contained. Then Java itself (jvm/topic-patterns/TopicPatterns.java; Python's re is another
dialect) checks each pattern and each read's joined pattern: it must compile, run within a step
budget on stress names, and not be able to reach a catalogue entry the team is not granted; the
joined pattern must reach exactly what its parts reach. For a `name`
entry that is a full match; for a `prefix` entry, Java's Matcher.hitEnd() says whether some longer
name starting with the prefix could match (a safe over-approximation). Topics outside the
catalogue belong to nobody: a pattern must reach at least one granted entry, and the Kafka ACLs
(infra/kafka_access.py) grant only catalogue entries, so what a pattern matches beyond them is
never readable.

One JVM serves the whole process (a validate run): started on first use, asked in batches.
"""

from __future__ import annotations

import atexit
import os
import re
import select
import shutil
import subprocess
import threading
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from dagger_runtime.names import TEAM_NAME

from . import topic_quota, topic_regex

REPO = Path(__file__).resolve().parent.parent
JAVA_SOURCE = REPO / "jvm" / "topic-patterns" / "TopicPatterns.java"
SENSITIVITIES = ("public", "internal", "restricted")
CRITICALITIES = ("critical", "standard", "low")
# Kafka's own rule for topic names (org.apache.kafka.common.internals.Topic): 1-249 of these
TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
# owners and readers are team names: dagger_runtime.names.TEAM_NAME (imported above), the one rule
CONTACT = re.compile(r"@[A-Za-z0-9-]+(/[A-Za-z0-9._-]+)?|[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[a-z]{2,}")
ENTRY_KEYS = {
    "name",
    "prefix",
    "owner",
    "sensitivity",
    "criticality",
    "contact",
    "readers",
    "description",
    "message",
    "event_time",
}
# a protobuf message's full name and a field's name (protobuf's own identifier rules)
MESSAGE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")
FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_PATTERN = 1000


class CatalogueError(ValueError):
    """infra/platform.yaml's catalogue is malformed (the platform team's file, checked on load)."""


@dataclass(frozen=True)
class Topic:
    """One catalogue entry: a topic (`name`) or every topic starting with `prefix`."""

    cluster: str
    value: str
    is_prefix: bool
    owner: str
    sensitivity: str
    criticality: str
    contact: str
    readers: tuple[str, ...] = ()
    description: str = ""
    message: str | None = None  # the protobuf message its values hold (a full name in protos/)
    event_time: str | None = None  # that message's event-time field (a Timestamp)

    @property
    def label(self) -> str:
        return f"{self.value}*" if self.is_prefix else self.value

    def readable_by(self, team: str) -> bool:
        return self.sensitivity == "public" or team == self.owner or team in self.readers

    @property
    def as_pattern(self) -> str:
        """The entry as a Java regex: names hold only [A-Za-z0-9._-], of which only '.' is special."""
        literal = self.value.replace(".", r"\.")
        return f"{literal}.*" if self.is_prefix else literal


# A restricted topic's readers are not in platform.yaml (the platform team's file) but in a file of
# their own that CODEOWNERS gives to the topic's data owner (its contact): a grant to personal or
# payment data needs the data owner's approval, which a line of a shared file could not ask for.
RESTRICTED_GRANTS_DIR = REPO / "infra" / "topic-grants"


def restricted_grant_path(cluster: str, value: str, is_prefix: bool) -> str:
    """Where a restricted entry's readers live, relative to the repository (topic names hold only
    [A-Za-z0-9._-], none of them special in a path or a CODEOWNERS pattern)."""
    return f"infra/topic-grants/{cluster}/{'prefix' if is_prefix else 'name'}/{value}.yaml"


def load_restricted_readers(grants_dir: Path = RESTRICTED_GRANTS_DIR) -> dict[str, tuple[str, ...]]:
    """{path relative to the repository: readers} of every restricted-topic grant file (CatalogueError
    on a malformed one). parse_catalogue refuses files that match no restricted entry."""
    out = {}
    for path in sorted(grants_dir.rglob("*")) if grants_dir.is_dir() else ():
        if path.is_dir():
            continue
        where = f"infra/topic-grants/{path.relative_to(grants_dir)}"
        try:
            raw = yaml.safe_load(path.read_text()) if path.suffix == ".yaml" and not path.is_symlink() else None
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            raise CatalogueError(f"{where}: not valid YAML ({e})") from None
        readers = raw.get("readers") if isinstance(raw, dict) and set(raw) == {"readers"} else None
        if not isinstance(readers, list) or not all(isinstance(r, str) and TEAM_NAME.fullmatch(r) for r in readers):
            raise CatalogueError(f"{where}: a restricted topic's grant is a YAML file holding `readers: [team, ...]`")
        out[where] = tuple(readers)
    return out


def parse_catalogue(
    cluster: str, raw, restricted_readers: Mapping[str, Sequence[str]] | None = None
) -> tuple[Topic, ...]:
    """A cluster's `topics:` list from platform.yaml, checked (raises CatalogueError). A restricted
    entry's readers come from `restricted_readers` ({restricted_grant_path: readers}), never from
    platform.yaml; a grant file of this cluster that matches no restricted entry is refused."""
    restricted_readers = restricted_readers or {}
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise CatalogueError(f"kafka_clusters.{cluster}.topics: must be a list")
    out = []
    for i, e in enumerate(raw):
        where = f"kafka_clusters.{cluster}.topics[{i}]"
        if not isinstance(e, dict) or set(e) - ENTRY_KEYS:
            raise CatalogueError(f"{where}: a mapping of {', '.join(sorted(ENTRY_KEYS))}")
        if ("name" in e) == ("prefix" in e):
            raise CatalogueError(f"{where}: give exactly one of name or prefix")
        value = e.get("name", e.get("prefix"))
        if not isinstance(value, str) or not TOPIC_NAME.fullmatch(value):
            raise CatalogueError(f"{where}: {value!a} is not a Kafka topic name")
        if e.get("sensitivity") not in SENSITIVITIES or e.get("criticality") not in CRITICALITIES:
            raise CatalogueError(f"{where}: sensitivity one of {SENSITIVITIES}, criticality one of {CRITICALITIES}")
        readers = e.get("readers", [])
        if e.get("sensitivity") == "restricted":
            grant_file = restricted_grant_path(cluster, value, "prefix" in e)
            if "readers" in e:
                raise CatalogueError(
                    f"{where}: a restricted topic's readers are granted in {grant_file}, which its "
                    "data owner owns (CODEOWNERS), not here"
                )
            readers = list(restricted_readers.get(grant_file, ()))
        if (
            not isinstance(e.get("owner"), str)
            or not TEAM_NAME.fullmatch(e["owner"])
            or not isinstance(readers, list)
            or not all(isinstance(r, str) and TEAM_NAME.fullmatch(r) for r in readers)
        ):
            raise CatalogueError(f"{where}: owner and readers are team names")
        if not isinstance(e.get("contact"), str) or not CONTACT.fullmatch(e["contact"]):
            raise CatalogueError(f"{where}: contact is a GitHub @user, @org/team or an email address")
        message, event_time = e.get("message"), e.get("event_time")
        if message is not None and not (isinstance(message, str) and MESSAGE_NAME.fullmatch(message)):
            raise CatalogueError(
                f"{where}: message is a protobuf message's full name (package.Message), not {message!a}"
            )
        if event_time is not None and (
            message is None or not isinstance(event_time, str) or not FIELD_NAME.fullmatch(event_time)
        ):
            raise CatalogueError(f"{where}: event_time names a field of the entry's message (and needs message)")
        out.append(
            Topic(
                cluster,
                value,
                "prefix" in e,
                e["owner"],
                e["sensitivity"],
                e["criticality"],
                e["contact"],
                tuple(readers),
                str(e.get("description", "")),
                message,
                event_time,
            )
        )
    labels = [t.label for t in out]
    if len(set(labels)) != len(labels):
        raise CatalogueError(f"kafka_clusters.{cluster}.topics: an entry is listed twice")
    expected = {restricted_grant_path(cluster, t.value, t.is_prefix) for t in out if t.sensitivity == "restricted"}
    stray = sorted(
        f for f in restricted_readers if f.startswith(f"infra/topic-grants/{cluster}/") and f not in expected
    )
    if stray:
        raise CatalogueError(
            f"{stray[0]}: grants a topic that is not a restricted entry of {cluster}'s catalogue "
            "(infra/platform.yaml): remove it, or fix its path"
        )
    return tuple(out)


def message_problems(entries: Iterable[Topic], descriptor_set) -> list[str]:
    """Each entry's message must be in the descriptor set (protos/) and its event_time a
    google.protobuf.Timestamp field of it: the portal shows analysts these fields, and a dagger
    reading the topic takes its rowtime from that field."""
    problems = []
    known = set(descriptor_set.messages())
    for t in entries:
        if t.message is None:
            continue
        where = f"kafka_clusters.{t.cluster}.topics {t.label}"
        if t.message not in known:
            problems.append(f"{where}: message {t.message} is not in the protobuf descriptor set (protos/)")
            continue
        if t.event_time is None:
            continue
        field = descriptor_set.message_descriptor(t.message).fields_by_name.get(t.event_time)
        if field is None or field.message_type is None or field.message_type.full_name != "google.protobuf.Timestamp":
            problems.append(
                f"{where}: event_time {t.event_time} is not a google.protobuf.Timestamp field of {t.message}"
            )
    return problems


# -- the catalogue and the teams' own names ------------------------------------------------------------
# A team's own topics are `<team>--<name>` (infra/topic_quota.py), READ, WRITE and DESCRIBE to its
# principal (infra/kafka_access.py). None may lie inside a catalogue entry: a team named `payment`
# would otherwise write `payment--cards` inside payments' restricted prefix `payment-`, and every
# reader granted that prefix would read it. Kafka treats '.' and '_' in topic names as colliding
# (two topics differing only there cannot both exist), so names are compared with '.' read as '_'.


def _kafka_key(name: str) -> str:
    return name.replace(".", "_")


def entries_covering(name: str, entries: Iterable[Topic]) -> list[Topic]:
    """The catalogue entries whose topics include the topic `name` (a literal equal to it, or a
    prefix it starts with, '.' and '_' alike)."""
    key = _kafka_key(name)
    return [t for t in entries if (key.startswith(_kafka_key(t.value)) if t.is_prefix else key == _kafka_key(t.value))]


def _entry(t: Topic) -> str:
    kind = "prefix" if t.is_prefix else "topic"
    return (
        f"the catalogue's {kind} {t.label} on {t.cluster} ({t.sensitivity}, owned by team {t.owner}; "
        "infra/platform.yaml)"
    )


def own_topic_problem(name: str, entries: Iterable[Topic]) -> str | None:
    """Why the team's own topic `name` may not be created: it lies in a catalogue entry (any owner's)."""
    hit = entries_covering(name, entries)
    if not hit:
        return None
    return (
        f"{name!a} lies inside {_entry(hit[0])}: a team's own topics are outside every catalogue entry, or "
        "the team would write into topics the catalogue gives to their owner and readers; choose another name"
    )


def team_name_problems(team: str, entries: Iterable[Topic]) -> list[str]:
    """Why `team` cannot be a team's name next to the catalogue: an entry of another owner covers the
    team's own topics (`<team>--...` inside prefix `payment-`), the team's topics would cover an entry
    (a literal `<team>--x`, a prefix `<team>--x`), or the team is named like an entry (`sandbox` and
    the prefix `sandbox-`, `audit-log` and the topic audit-log). An entry the team owns itself is its own."""
    own = _kafka_key(topic_quota.prefix(team))
    out = []
    for t in entries:
        if t.owner == team:
            continue
        value = _kafka_key(t.value)
        if t.is_prefix and own.startswith(value):
            why = f"{_entry(t)} covers every topic team {team} would own ({own}<name>)"
        elif value.startswith(own):
            why = f"team {team}'s own topics ({own}<name>) would cover {_entry(t)}"
        elif value.rstrip("-_") == team:
            why = f"{team!a} is named like {_entry(t)}"
        else:
            continue
        out.append(f"{why}: a team's name keeps its own topics apart from the catalogue's; choose another name")
    return out


def granted(catalogue: Iterable[Topic], team: str) -> tuple[Topic, ...]:
    return tuple(t for t in catalogue if t.readable_by(team))


def default_patterns(catalogue: Iterable[Topic], team: str) -> tuple[str, ...]:
    """What a team reads when its spec names no topics: everything it is granted, nothing more."""
    return tuple(t.as_pattern for t in granted(catalogue, team))


# -- checks before Java ------------------------------------------------------------------------------


def _shown(ch: str) -> str:
    return repr(ch)[1:-1] if ch.isprintable() else f"U+{ord(ch):04X}"


def text_problem(pattern: str) -> str | None:
    """Refusals that need no regex engine: control and invisible characters, ',' and length."""
    for i, ch in enumerate(pattern):
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            return (
                f"{pattern!a} has a control or invisible character ({_shown(ch)} at index {i}); "
                "a topic pattern is printable text on one line"
            )
    if "," in pattern:
        return (
            f"{pattern!a} has a ','; MirrorMaker 2 splits its topics setting on commas, so one pattern "
            "would become several: give each pattern as its own list item (use {m,n} bounds without a comma)"
        )
    if len(pattern) > MAX_PATTERN:
        return f"a pattern of {len(pattern)} characters; at most {MAX_PATTERN}"
    if pattern != pattern.strip():
        return f"{pattern!a} starts or ends with white space, which MirrorMaker 2 trims: remove it"
    return None


# -- the JVM ------------------------------------------------------------------------------------------


class JavaUnavailable(RuntimeError):
    pass


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").is_file():
        return str(Path(home, "bin", "java"))
    found = shutil.which("java")
    if not found:
        raise JavaUnavailable("no `java` on PATH (and JAVA_HOME unset): topic patterns are checked with Java 17+")
    return found


class _Checker:
    """One `java TopicPatterns.java` for the process, asked in batches (see the Java file)."""

    TIMEOUT = 120.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._buffer = b""
        self._cache: dict[tuple[str, ...], str] = {}

    def _start(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._buffer = b""
            self._proc = subprocess.Popen(
                [_java(), "-Xss8m", str(JAVA_SOURCE)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        return self._proc

    def _line(self, proc: subprocess.Popen) -> str:
        fd = proc.stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], self.TIMEOUT)
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                self.close()
                raise JavaUnavailable("the topic pattern checker (Java) stopped or timed out")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def ask(self, requests: Sequence[tuple[str, ...]]) -> list[str]:
        with self._lock:
            todo = list(dict.fromkeys(r for r in requests if r not in self._cache))
            if todo:
                proc = self._start()
                body = "".join(f"{r[0]} {' '.join(x.encode().hex() for x in r[1:])}\n" for r in todo) + "END\n"
                try:
                    proc.stdin.write(body.encode())
                    proc.stdin.flush()
                except OSError as e:
                    self.close()
                    raise JavaUnavailable(f"the topic pattern checker (Java) failed: {e}") from None
                for r in todo:
                    self._cache[r] = self._line(proc)
                if self._line(proc) != "END":
                    self.close()
                    raise JavaUnavailable("the topic pattern checker (Java) answered out of step")
            return [self._cache[r] for r in requests]

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.stdin.close()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()


_checker = _Checker()
atexit.register(_checker.close)


def _decode_error(answer: str) -> str:
    _, index, description = answer.split(" ", 2)
    # Java's description may quote the pattern: shown as ASCII, one line
    return f"{ascii(bytes.fromhex(description).decode(errors='replace'))[1:-1]} near index {index}"


# -- the check -----------------------------------------------------------------------------------------


def check_patterns(
    team: str, reads: Sequence[tuple[str, Sequence[str]]], catalogues: Mapping[str, Sequence[Topic]]
) -> dict[tuple[int, int], str]:
    """Problems of a team's topic patterns: {(read index, pattern index): message}; pattern index
    -1 is the read's list as a whole (the patterns joined as MirrorMaker 2 compiles them).

    reads: (cluster, patterns) per kafka[i] entry; clusters not in `catalogues` are skipped (the
    spec reports unknown clusters itself). Each pattern: the allow-list of infra/topic_regex.py,
    then Java (compiles; no runaway match on stress names; what it reaches). Then each read's
    joined pattern, in Java again: it must reach exactly what its parts reach. All Java questions
    of a stage go in one batch.
    """
    problems: dict[tuple[int, int], str] = {}
    asks: list[tuple[tuple[int, int], str, Topic | str | None]] = []
    count = total = 0
    over: tuple[int, int] | None = None  # the pattern at which the spec's budget ran out
    for i, (cluster, patterns) in enumerate(reads):
        if cluster not in catalogues:
            continue
        for j, pattern in enumerate(patterns):
            why = text_problem(pattern) or topic_regex.problem(pattern)
            if why:
                problems[(i, j)] = why
                continue
            count += 1
            total += topic_regex.cost(pattern) or 0
            if over is None and (count > topic_regex.MAX_SPEC_PATTERNS or total > topic_regex.MAX_SPEC_COST):
                over = (i, j)
            asks.append(((i, j), pattern, None))
            asks.extend(((i, j), pattern, entry) for entry in catalogues[cluster])
            asks.extend(((i, j), pattern, name) for name in topic_regex.stress_names(pattern))
    if over is not None:
        # the whole spec is refused before Java runs any pattern on any name
        problems[(over[0], -1)] = _budget_problem(count, total)
        return problems
    reached = _ask_reach(asks, problems)
    if reached is None:
        return problems
    for i, (cluster, patterns) in enumerate(reads):
        for j, pattern in enumerate(patterns):
            key = (i, j)
            if key in problems or cluster not in catalogues:
                continue
            problem = _reach_problem(team, cluster, pattern, reached.get(key, []), catalogues[cluster])
            if problem:
                problems[key] = problem
    _check_joined(team, reads, catalogues, reached, problems)
    return problems


def _budget_problem(count: int, total: int) -> str:
    if count > topic_regex.MAX_SPEC_PATTERNS:
        what = (
            f"{count} topic patterns in all (every kafka[i].topics of the spec together), more than the "
            f"{topic_regex.MAX_SPEC_PATTERNS} a spec may list"
        )
    else:
        what = (
            f"the spec's topic patterns together cost {total:,} (every kafka[i].topics: the sum of each "
            f"pattern's cost, the ways a backtracking matcher may try it on one name, infra/topic_regex.py), "
            f"more than the {topic_regex.MAX_SPEC_COST:,} a spec may use"
        )
    return (
        f"{what}: the spec is refused before Java runs any of its patterns (MirrorMaker runs them on "
        "every topic of the cluster); list fewer patterns, or ones with fewer '*', '+' and '?' "
        "(a prefix such as campaign-.* costs one '*')"
    )


def _ask_reach(asks, problems: dict) -> dict[tuple[int, int], list[Topic]] | None:
    """Ask Java (compile, reach each entry, stress names); record refusals in `problems`; return
    {key: the catalogue entries reached}, None when Java could not be asked (problems say so)."""
    if not asks:
        return {}
    requests = [("C", p) if e is None else ("M", p, e.value if isinstance(e, Topic) else e) for _, p, e in asks]
    try:
        answers = _checker.ask(requests)
    except JavaUnavailable as e:
        for key, _, _ in asks:
            problems.setdefault(key, f"cannot be checked: {e}")
        return None
    reached: dict[tuple[int, int], list[Topic]] = {}
    for (key, pattern, entry), answer in zip(asks, answers):
        if key in problems:
            continue
        if answer.startswith("ERR"):
            problems[key] = f"{pattern!a} is not a Java regex (MirrorMaker 2's dialect): {_decode_error(answer)}"
        elif answer == "SLOW":
            name = entry.value if isinstance(entry, Topic) else entry
            problems[key] = (
                f"{pattern!a} backtracks without end on a topic name such as {name[:40]!a}...; "
                "MirrorMaker would pay that on every topic: simplify it (no nested repetition like (a*)*)"
            )
        elif isinstance(entry, Topic) and (answer == "FULL" or (answer == "PREFIX" and entry.is_prefix)):
            reached.setdefault(key, []).append(entry)
    return reached


def _granted_labels(catalogue: Sequence[Topic], team: str) -> str:
    return ", ".join(x.label for x in granted(catalogue, team)) or "nothing"


def _reach_problem(
    team: str, cluster: str, pattern: str, entries: list[Topic], catalogue: Sequence[Topic]
) -> str | None:
    refused = [t for t in entries if not t.readable_by(team)]
    if refused:
        t = refused[0]
        more = f" (and {len(refused) - 1} more: {', '.join(x.label for x in refused[1:])})" if refused[1:] else ""
        return (
            f"{pattern!a} can reach {t.label} on {cluster}, {t.sensitivity} topic(s) of team "
            f"{t.owner} not granted to {team}{more}: ask {t.owner} ({t.contact}) to add {team} to "
            f"its readers in infra/platform.yaml, or narrow the pattern to what {team} is granted"
            f" ({_granted_labels(catalogue, team)})"
        )
    if not entries:
        return (
            f"{pattern!a} matches no topic the catalogue grants {team} on {cluster} (granted: "
            f"{_granted_labels(catalogue, team)}); "
            "topics outside infra/platform.yaml's catalogue are readable by no team"
        )
    return None


def _check_joined(team: str, reads, catalogues, reached: dict, problems: dict) -> None:
    """Each read's patterns as MirrorMaker 2 compiles them, one regex joined with '|' from the
    setting mm2.properties carries: it must compile and reach exactly the union of what its parts
    reach (the allow-list makes each part self-contained; this proves it on Java)."""
    asks = []
    for i, (cluster, patterns) in enumerate(reads):
        if cluster not in catalogues or not patterns or any(k[0] == i for k in problems):
            continue
        joined = topic_regex.as_mirrormaker_joins(", ".join(patterns))
        asks.append(((i, -1), joined, None))
        asks.extend(((i, -1), joined, entry) for entry in catalogues[cluster])
    whole = _ask_reach(asks, problems)
    if whole is None:
        return
    for (i, j), joined, entry in asks:
        if entry is not None or (i, j) in problems:
            continue
        cluster, patterns = reads[i]
        union = {t for k in range(len(patterns)) for t in reached.get((i, k), [])}
        got = set(whole.get((i, -1), []))
        problem = _reach_problem(team, cluster, joined, sorted(got, key=lambda t: t.label), catalogues[cluster])
        if problem:
            problems[(i, -1)] = f"joined as MirrorMaker 2 compiles them: {problem}"
        elif got != union:
            extra = ", ".join(sorted(t.label for t in got ^ union))
            problems[(i, -1)] = (
                f"joined as MirrorMaker 2 compiles them ({joined!a}) the patterns reach {extra} "
                "differently from each pattern alone: a pattern acts beyond its own text"
            )


def reached_entries(team: str, cluster: str, patterns: Sequence[str], catalogue: Sequence[Topic]) -> tuple[Topic, ...]:
    """The granted catalogue entries that the (already checked) patterns reach, in catalogue order."""
    asks = [(p, t) for p in patterns for t in catalogue if t.readable_by(team)]
    answers = _checker.ask([("M", p, t.value) for p, t in asks])
    hit = {t for (p, t), a in zip(asks, answers) if a == "FULL" or (a == "PREFIX" and t.is_prefix)}
    return tuple(t for t in catalogue if t in hit)
