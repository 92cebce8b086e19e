"""Team specs (infra/teams/<team>.yaml): load, validate, fill in the tier's defaults.

Pure: a spec file in, a TeamSpec or a SpecError listing every problem out. The problems name the
file, the line and the field (`infra/teams/fraud.yaml:12: network.cidr: ...`) so a team sees
them on its pull request; TeamSpec.where(field) gives the same prefix to checks made elsewhere.
Checks across teams (overlapping ranges, duplicate names) live in check_all(); topic patterns
against the catalogue in infra/topics.py; cluster sizes against machines and quotas in
infra/sizing.py.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator

from dagger_runtime.names import team_problem
from dagger_runtime.yaml_lines import Document, Problems, line_of, printable, shown
from dagger_runtime.yaml_lines import read_yaml as _read_yaml

from . import sizing, spec_file, topic_quota, topics
from .policy.rules import gcp_name_limits, reserved_name_problem
from .tiers import (
    CEILINGS,
    MIRROR_BROKER_CPU,
    MIRROR_BROKER_MEMORY_GB,
    MIRROR_BROKERS,
    MIRROR_MM2_CPU,
    MIRROR_MM2_MEMORY_GB,
    SIZES,
    TIERS,
)

INFRA = Path(__file__).resolve().parent
TEAMS_DIR = INFRA / "teams"
SCHEMA_PATH = INFRA / "schema" / "team.schema.json"
PLATFORM_PATH = INFRA / "platform.yaml"

# GCP limits that names derived from the team must meet: the policy pack's gcp_name_limits, run
# on each name by derived_name_problems
BUCKET_MAX = 63  # bucket names: 3-63 chars, lowercase
LABEL_VALUE_MAX = 63
# names a team may not take: the platform's own stack and Kubernetes' namespaces (refused here;
# the policy pack refuses them too)


class SpecError(ValueError):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid team spec:\n" + "\n".join(f"  - {printable(p)}" for p in problems))


@dataclass(frozen=True)
class KafkaCluster:
    name: str
    bootstrap_servers: str
    tiers: tuple[str, ...]
    topics: tuple[topics.Topic, ...] = ()  # the catalogue (infra/topics.py)
    network_range: str = ""  # where its brokers listen (teams' egress to them)


@dataclass(frozen=True)
class Platform:
    project: str
    region: str
    network: str
    network_range: ipaddress.IPv4Network
    gke_cluster: str
    kafka_clusters: dict[str, KafkaCluster]


@dataclass(frozen=True)
class SparkSpec:
    flavour: str  # gke | vm
    size: str
    workers: int
    worker_cores: int
    worker_memory_gb: int
    machine_type: str
    peak_msgs_per_s: int | None = None  # the team's stated peak: workers sized for it (infra/sizing.py)


@dataclass(frozen=True)
class KafkaRead:
    cluster: str
    mirrored: bool
    topics: tuple[str, ...] = ()  # Java regexes; default: what the catalogue grants the team
    # the granted catalogue entries the patterns reach (labels: a name, or a prefix ending in '*')
    reaches: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Quota:
    cpu: int
    memory_gb: int
    pods: int


@dataclass(frozen=True)
class TeamSpec:
    name: str
    description: str
    owners: tuple[str, ...]
    tier: str
    region: str
    spark: SparkSpec
    kafka: tuple[KafkaRead, ...]
    checkpoint_retention_days: int
    cidr: ipaddress.IPv4Network
    quota: Quota
    labels: dict[str, str] = field(default_factory=dict)
    # the team's own topics (infra/topic_quota.py), created by the platform as listed
    own_topics: tuple[topic_quota.OwnTopic, ...] = ()
    source: str = "<memory>"
    # the line of every field in the file: {("kafka", 0, "topics", 1): 14, ...}
    lines: Mapping[tuple, int] = field(default_factory=dict, compare=False, repr=False)

    def where(self, field: str) -> str:
        """ "<source>:<line>: <field>": the line of the field, else of its nearest present parent, else 1."""
        return f"{self.source}:{line_of(self.lines, field)}: {field}"

    # Names derived from the team, one place so components and tests agree.
    @property
    def namespace(self) -> str:
        return f"dagger-{self.name}"

    @property
    def service_account_id(self) -> str:
        return f"dagger-{self.name}"

    def bucket_name(self, project: str) -> str:
        # project ids are globally unique, so this name is too
        return f"{project}-{self.name}-checkpoints"

    @property
    def all_labels(self) -> dict[str, str]:
        return {**self.labels, "team": self.name, "tier": self.tier, "managed-by": "daggers-infra"}


# -- where a field is, and reading the YAML (dagger_runtime/yaml_lines.py, shared with chaos/playbook/ and the job loader) ----------

_TEAM_SPEC = Document(
    error=SpecError, holds="a team spec", gets="the platform gets", needs="a spec needs team, owners, tier and network"
)
_Problems = Problems


def read_yaml(text: str, source: str) -> tuple[object, dict[tuple, int]]:
    """(the document, the line of every field): SpecError on bad YAML, tags, aliases, merges, duplicates."""
    return _read_yaml(text, source, _TEAM_SPEC)


_INVISIBLE = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def _control_characters(raw, path: tuple, problems: _Problems, key: bool = False) -> None:
    """Every string (names and values) is printable text on one line. A field name is reported at
    its own path (`path`), quoted."""
    if isinstance(raw, dict):
        for k, v in raw.items():
            _control_characters(k, path + (k,), problems, key=True)
            _control_characters(v, path + (k,), problems)
    elif isinstance(raw, list):
        for i, v in enumerate(raw):
            _control_characters(v, path + (i,), problems)
    elif isinstance(raw, str) and (key or not (len(path) == 4 and path[0] == "kafka" and path[2] == "topics")):
        # (topic patterns: infra/topics.py says more)
        bad = next((ch for ch in raw if unicodedata.category(ch) in _INVISIBLE), None)
        if bad is not None:
            char = repr(bad)[1:-1] if bad.isprintable() else f"U+{ord(bad):04X}"
            what = "the field name " if key else ""
            problems.add(
                path,
                f"{what}{shown(raw)} has a control or invisible character ({char} at index "
                f"{raw.index(bad)}): write printable text on one line",
            )


# -- the schema -------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))


def load_platform(path: Path = PLATFORM_PATH) -> Platform:
    raw = yaml.safe_load(path.read_text())
    restricted = topics.load_restricted_readers()
    stray = sorted(f for f in restricted if f.split("/")[2] not in raw["kafka_clusters"])
    if stray:
        raise topics.CatalogueError(f"{stray[0]}: grants a topic on a cluster the platform does not have")
    clusters = {
        name: KafkaCluster(
            name,
            c["bootstrap_servers"],
            tuple(c["tiers"]),
            topics.parse_catalogue(name, c.get("topics"), restricted),
            str(ipaddress.IPv4Network(c["network_range"], strict=True)),
        )
        for name, c in raw["kafka_clusters"].items()
    }
    described = [t for c in clusters.values() for t in c.topics if t.message]
    if described:
        from protos import registry as protos_registry

        wrong = topics.message_problems(described, protos_registry.load())
        if wrong:
            raise topics.CatalogueError("; ".join(wrong))
    return Platform(
        raw["project"],
        raw["region"],
        raw["network"],
        ipaddress.IPv4Network(raw["network_range"]),
        raw["gke_cluster"],
        clusters,
    )


def _schema_problems(problems: _Problems, raw) -> None:
    # every message quotes the spec's text with shown() (ascii()): jsonschema's own messages quote it
    # with repr(), which lets printable non-ASCII through, so they are made ASCII by printable()
    for error in sorted(_validator().iter_errors(raw), key=lambda e: list(map(str, e.absolute_path))):
        path = tuple(error.absolute_path)
        message = printable(error.message)
        if error.validator == "pattern":
            # the field's own description says what fits in words; the regex only when there is none
            described = error.schema.get("description")
            message = (
                f"{shown(error.instance)} does not match what this field takes: {described[:1].lower()}"
                f"{described[1:].rstrip('.')}"
                if described
                else f"{shown(error.instance)} does not match {error.validator_value!r}"
            )
            if path and path[0] == "owners":
                message += (
                    " (a GitHub user @name or team @org/team; Google identities such as user: or "
                    "an email are not owners)"
                )
        elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = sorted(error.schema.get("properties", {}))
            for key in sorted(set(error.instance) - set(known), key=str):
                # the field's name, quoted (yaml_lines.field_name) when it is not plain: a newline, ESC...
                problems.add(
                    path + (key,),
                    f"unknown field{sizing.did_you_mean(str(key), known)}; the fields here are {', '.join(known)}",
                )
            continue
        elif error.validator == "type" and isinstance(error.instance, float) and error.validator_value == "integer":
            message = f"{shown(error.instance)} is not a whole number (type 'integer')"
        elif error.validator in ("minimum", "maximum"):
            message = f"{shown(error.instance)} is out of range: {error.validator} {error.validator_value}"
        problems.add(path, message)


def parse(text: str, *, source: str = "<memory>", platform: Platform | None = None) -> TeamSpec:
    shape = spec_file.shape_problem(text, source)  # size and depth, before YAML builds anything
    if shape:
        raise SpecError([shape])
    raw, lines = read_yaml(text, source)
    problems = _Problems(source, lines)
    if not isinstance(raw, dict):
        problems.add("(top level)", f"expected a mapping of fields, got {type(raw).__name__}")
        raise SpecError(problems)
    # Text first: a spec with a control character, ESC, a line break or a surrogate anywhere (a
    # field name too) stops here, so no later check ever formats it; then the schema, then the
    # team's name (dagger_runtime.names: the runtime's and the lab's rule too), all before _build
    _control_characters(raw, (), problems)
    _schema_problems(problems, raw)
    if isinstance(raw.get("team"), str):
        why = team_problem(raw["team"])
        if why:
            problems.add("team", why)
    if problems:
        raise SpecError(problems)
    return _build(raw, problems, platform or load_platform())


def _team_name_problem(name: str) -> str | None:
    # one list of reserved names, the policy pack's, so validate and the pack agree
    why = reserved_name_problem(name)
    return f"{why}: choose another name" if why else None


# The names a team's stack derives from the team's name, as the resources the pack judges them on
# (type, inputs): validate runs the pack's own rule on them, so the two cannot disagree.
def _derived_names(team: str, project: str) -> list[tuple[str, dict]]:
    ident = f"dagger-{team}"
    return [
        ("gcp:storage/bucket:Bucket", {"name": f"{project}-{team}-checkpoints"}),
        ("gcp:serviceaccount/account:Account", {"accountId": ident}),
        ("kubernetes:core/v1:Namespace", {"metadata": {"name": ident}}),
        ("gcp:compute/subnetwork:Subnetwork", {"name": ident}),
    ]


def derived_name_problems(team: str, project: str) -> list[str]:
    """The policy pack's name rule (gcp_name_limits) on every name derived from `team`."""
    return [
        v.message
        for kind, props in _derived_names(team, project)
        for v in gcp_name_limits(kind, props, f"urn:pulumi:{team}::daggers::{kind}::{team}", team)
    ]


def _default_worker_memory(spark_raw: dict, size: dict) -> int:
    """The preset's worker memory; on a VM at most what the machine leaves after the OS's share
    (the presets are sized for GKE pods, where the node's reservations are subtracted already)."""
    machine = sizing.MACHINE_TYPES.get(spark_raw.get("machine_type", size["machine_type"]))
    if spark_raw["flavour"] != "vm" or machine is None:
        return size["worker_memory_gb"]
    return min(size["worker_memory_gb"], sizing.vm_worker_room_gb(machine[1]))


def _build(raw: dict, problems: _Problems, platform: Platform) -> TeamSpec:
    label = problems.source
    tier = TIERS[raw["tier"]]
    name = raw["team"]
    reserved = _team_name_problem(name)
    if reserved:
        problems.add("team", reserved)
    spark_raw = {**tier["spark"], **raw.get("spark", {})}
    size = SIZES[spark_raw.get("size", tier["spark"]["size"])]
    worker_cores = spark_raw.get("worker_cores", size["worker_cores"])
    peak = spark_raw.get("peak_msgs_per_s")
    peak = int(peak) if peak is not None else None  # 1.0e+5 is an integer to the schema
    workers = spark_raw.get("workers")
    peak_past_ceiling = False
    if peak is not None and workers is None:  # sized for the stated peak, from the measured rate
        workers = sizing.workers_for(peak, worker_cores)
        if peak_past_ceiling := workers > (ceiling := CEILINGS[raw["tier"]]["workers"]):
            problems.add(
                "spark.peak_msgs_per_s",
                f"{peak:,} msg/s needs {workers} workers of {worker_cores} cores at the measured rate "
                f"(infra/throughput.json), more than the {raw['tier']} tier's {ceiling}: ask for larger "
                "workers (spark.worker_cores), or for a higher tier",
            )
    elif peak is not None and (too_few := sizing.peak_problem(peak, workers, worker_cores)):
        problems.add("spark.workers", too_few)
    spark = SparkSpec(
        flavour=spark_raw["flavour"],
        size=spark_raw["size"],
        workers=workers if workers is not None else size["workers"],
        worker_cores=worker_cores,
        worker_memory_gb=spark_raw.get("worker_memory_gb", _default_worker_memory(spark_raw, size)),
        machine_type=spark_raw.get("machine_type", size["machine_type"]),
        peak_msgs_per_s=peak,
    )
    kafka_raw = raw.get("kafka", copy.deepcopy(tier["kafka"]))
    seen: dict[str, int] = {}
    reads = []
    for i, k in enumerate(kafka_raw):
        cluster = platform.kafka_clusters.get(k["cluster"])
        if k["cluster"] in seen:
            problems.add(
                f"kafka[{i}].cluster",
                f"{shown(k['cluster'])} is listed already "
                f"(kafka[{seen[k['cluster']]}]): one entry a cluster; merge "
                "their topics",
            )
        seen.setdefault(k["cluster"], i)
        if cluster is None:
            problems.add(
                f"kafka[{i}].cluster",
                f"unknown Kafka cluster {shown(k['cluster'])}"
                f"{sizing.did_you_mean(k['cluster'], platform.kafka_clusters)} "
                f"(the platform has: {', '.join(sorted(platform.kafka_clusters))})",
            )
        elif raw["tier"] not in cluster.tiers:
            problems.add(
                f"kafka[{i}].cluster", f"{k['cluster']} is for tiers {', '.join(cluster.tiers)}, not {raw['tier']}"
            )
            cluster = None  # its catalogue is beside the point
        if "topics" in k:
            patterns = tuple(k["topics"])
            if not patterns:
                problems.add(
                    f"kafka[{i}].topics",
                    "an empty list mirrors nothing: leave topics out to read what "
                    "the catalogue grants the team, or list patterns",
                )
        else:
            patterns = topics.default_patterns(cluster.topics, name) if cluster else ()
            if "kafka" not in raw and not patterns:
                continue  # a tier default with nothing granted: no read, rather than a mirror of nothing
            if cluster is not None and not patterns:
                problems.add(
                    f"kafka[{i}]",
                    f"the catalogue grants {name} nothing on {k['cluster']} (infra/platform.yaml):"
                    " ask a topic's owner for a grant, or remove the cluster",
                )
        reads.append((k["cluster"], k.get("mirrored", False), patterns))
    catalogues = {
        c: platform.kafka_clusters[c].topics
        for c, _, _ in reads
        if c in platform.kafka_clusters and raw["tier"] in platform.kafka_clusters[c].tiers
    }
    pattern_problems = topics.check_patterns(name, [(c, p) for c, _, p in reads], catalogues)
    for (i, j), message in sorted(pattern_problems.items()):
        where = (
            f"kafka[{i}]"
            if "topics" not in kafka_raw[i]
            else f"kafka[{i}].topics"
            if j < 0
            else f"kafka[{i}].topics[{j}]"
        )
        problems.add(where, message)
    kafka = []
    for c, mirrored, patterns in reads:
        # reaches only of a spec whose patterns all passed (a refused one never gets there: no Java)
        clean = c in catalogues and not pattern_problems
        reaches = tuple(t.label for t in topics.reached_entries(name, c, patterns, catalogues[c])) if clean else ()
        kafka.append(KafkaRead(c, mirrored, patterns, reaches))
    kafka = tuple(kafka)
    own_topics = tuple(
        topic_quota.OwnTopic(t["cluster"], t["name"], t["partitions"], t.get("retention_hours"), t.get("retention_gb"))
        for t in raw.get("topics", ())
    )
    for_tier = sorted(c.name for c in platform.kafka_clusters.values() if raw["tier"] in c.tiers)
    for i, t in enumerate(own_topics):
        if t.cluster not in for_tier:
            problems.add(
                f"topics[{i}].cluster",
                f"{shown(t.cluster)} is not a Kafka cluster of the platform for tier "
                f"{raw['tier']} ({', '.join(for_tier)})",
            )
    for i, where, message in topic_quota.problems(name, raw["tier"], own_topics):
        problems.add("topics" if i is None else f"topics[{i}].{where}", message)
    # the team's name and its own topics against every catalogue entry, on every cluster
    entries = [t for c in platform.kafka_clusters.values() for t in c.topics]
    for message in topics.team_name_problems(name, entries):
        problems.add("team", message)
    for i, t in enumerate(own_topics):
        message = topics.own_topic_problem(t.name, entries)
        if message:
            problems.add(f"topics[{i}].name", message)
    quota = Quota(**{**tier["quota"], **raw.get("quota", {})})
    try:
        cidr = ipaddress.IPv4Network(raw["network"]["cidr"], strict=True)
    except ValueError as e:
        problems.add("network.cidr", f"{shown(raw['network']['cidr'])} is not a network address ({printable(e)})")
        cidr = None
    if cidr is not None and not cidr.subnet_of(platform.network_range):
        problems.add("network.cidr", f"{cidr} is outside the platform's range {platform.network_range}")
    labels = dict(raw.get("labels", {}))
    for reserved_label in ("team", "tier", "managed-by"):
        if reserved_label in labels:
            problems.add(f"labels.{reserved_label}", "set by the platform; remove it")
    # lengths, characters, 'goog': the pack's own rule on each derived name (one list of rules)
    for message in derived_name_problems(name, platform.project):
        problems.add("team", f"{message}: choose another team name")
    # the namespace holds the Spark workers and master, and each mirror's brokers and MM2
    mirrors = sum(1 for k in kafka if k.mirrored)
    brokers = MIRROR_BROKERS[raw["tier"]]
    needed_cpu = spark.workers * spark.worker_cores + 2 + mirrors * (brokers * MIRROR_BROKER_CPU + MIRROR_MM2_CPU)
    needed_mem = (
        spark.workers * spark.worker_memory_gb
        + 4
        + mirrors * (brokers * MIRROR_BROKER_MEMORY_GB + MIRROR_MM2_MEMORY_GB)
    )
    if spark.flavour == "gke" and (quota.cpu < needed_cpu or quota.memory_gb < needed_mem):
        problems.add(
            "quota",
            f"{quota.cpu} CPUs / {quota.memory_gb} GB cannot hold the Spark cluster "
            f"({spark.workers} workers x {spark.worker_cores} CPUs / {spark.worker_memory_gb} GB "
            f"plus the master) and {mirrors} Kafka mirror(s): they need {needed_cpu:g} / "
            f"{needed_mem:g}",
        )
    for where, message in sizing.check(
        tier=raw["tier"],
        flavour=spark.flavour,
        workers=spark.workers,
        worker_cores=spark.worker_cores,
        worker_memory_gb=spark.worker_memory_gb,
        machine_type=spark.machine_type,
        quota_cpu=quota.cpu,
        quota_memory_gb=quota.memory_gb,
        quota_pods=quota.pods,
        mirrors=mirrors,
        brokers=brokers,
    ):
        if where == "spark.workers" and peak_past_ceiling:
            continue  # said once, at spark.peak_msgs_per_s: the workers are the peak's, not asked for
        problems.add(where, message)
    region = raw.get("region", platform.region)
    region_problem = sizing.region_problem(region)
    if region_problem:
        problems.add("region", region_problem)
    elif spark.flavour == "gke" and region != platform.region:
        problems.add(
            "region", f"gke teams run on the platform's cluster in {platform.region}; use spark.flavour vm for {region}"
        )
    if problems:
        raise SpecError(list(problems))
    return TeamSpec(
        name=name,
        description=raw.get("description", ""),
        owners=tuple(raw["owners"]),
        tier=raw["tier"],
        region=region,
        spark=spark,
        kafka=kafka,
        checkpoint_retention_days=raw.get("checkpoints", {}).get(
            "retention_days", tier["checkpoints"]["retention_days"]
        ),
        cidr=cidr,
        quota=quota,
        labels=labels,
        own_topics=own_topics,
        source=label,
        lines=problems.lines,
    )


def load(path: str | Path, platform: Platform | None = None) -> TeamSpec:
    p = Path(path)
    label = _label(p)
    if not p.is_file():
        raise SpecError([f"{label}:1: (file): no such file"])
    text, refused = spec_file.read_text(p, label)
    if refused:
        raise SpecError([refused])
    spec = parse(text, source=label, platform=platform)
    if p.stem != spec.name:
        raise SpecError([f"{spec.where('team')}: the file must be named after the team ({spec.name}.yaml)"])
    return spec


def _label(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(INFRA.parent))
    except ValueError:
        return str(p)


def check_all(specs: list[TeamSpec]) -> list[str]:
    """Problems between teams: duplicate names, overlapping network ranges."""
    problems = []
    seen: dict[str, TeamSpec] = {}
    for spec in specs:
        if spec.name in seen:
            problems.append(f"{spec.where('team')}: {spec.name} is already used by {seen[spec.name].source}")
        seen.setdefault(spec.name, spec)
    for i, a in enumerate(specs):
        for b in specs[i + 1 :]:
            if a.cidr.overlaps(b.cidr):
                problems.append(
                    f"{b.where('network.cidr')}: {b.cidr} overlaps {a.name}'s {a.cidr} "
                    f"({a.source}:{line_of(a.lines, 'network.cidr')})"
                )
    return problems


def team_files(teams_dir: Path = TEAMS_DIR) -> tuple[list[Path], list[str]]:
    """(every <team>.yaml of teams_dir, a problem for each other entry there). Every check reads
    *.yaml only, so anything else (team.yml, a directory, a link) would sit there unchecked."""
    files, problems = [], []
    for path in sorted(teams_dir.iterdir()):
        if path.suffix == ".yaml" and path.is_file() and not path.is_symlink():
            files.append(path)
        else:
            problems.append(
                f"{_label(path)}:1: (file): not a team spec file (a regular file <team>.yaml): no check "
                "reads it; remove or rename it"
            )
    return files, problems


def unloadable(path: Path, problems: list[str]) -> str:
    """The problem every run reports while a committed spec cannot load: the checks between teams
    would otherwise compare one team fewer (fail closed, naming the file)."""
    return (
        f"{_label(path)}:1: (file): this team spec does not load ({len(problems)} problem(s), shown when it is validated "
        "itself), so no team can be checked against it (ranges, names): the checks between teams fail for "
        "every team until it is fixed"
    )


def load_all(teams_dir: Path = TEAMS_DIR, platform: Platform | None = None) -> list[TeamSpec]:
    """Every team spec, validated one by one and together; all problems reported at once. Any spec
    that does not load, or any stray file, fails the whole registry: nothing is skipped."""
    platform = platform or load_platform()
    paths, problems = team_files(teams_dir)
    specs = []
    for path in paths:
        try:
            specs.append(load(path, platform))
        except SpecError as e:
            problems.extend(e.problems)
    problems.extend(check_all(specs))
    if problems:
        raise SpecError(problems)
    return specs
