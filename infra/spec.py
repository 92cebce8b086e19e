"""Team specs (infra/teams/<team>.yaml): load, validate, fill in the tier's defaults.

Pure: a spec file in, a TeamSpec or a SpecError listing every problem out. The problems name the
file and the field (`infra/teams/fraud.yaml: network.cidr: ...`) so a team sees them on its
pull request. Checks across teams (overlapping ranges, duplicate names) live in check_all().
"""
from __future__ import annotations

import copy
import ipaddress
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator

from .tiers import (MIRROR_BROKER_CPU, MIRROR_BROKER_MEMORY_GB, MIRROR_BROKERS, MIRROR_MM2_CPU,
                    MIRROR_MM2_MEMORY_GB, SIZES, TIERS)

INFRA = Path(__file__).resolve().parent
TEAMS_DIR = INFRA / "teams"
SCHEMA_PATH = INFRA / "schema" / "team.schema.json"
PLATFORM_PATH = INFRA / "platform.yaml"

# GCP limits that names derived from the team must meet
SA_ID_MAX = 30          # service account ids: 6-30 chars
BUCKET_MAX = 63         # bucket names: 3-63 chars, lowercase
LABEL_VALUE_MAX = 63


class SpecError(ValueError):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid team spec:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True)
class KafkaCluster:
    name: str
    bootstrap_servers: str
    tiers: tuple[str, ...]


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
    flavour: str            # gke | vm
    size: str
    workers: int
    worker_cores: int
    worker_memory_gb: int
    machine_type: str


@dataclass(frozen=True)
class KafkaRead:
    cluster: str
    mirrored: bool
    topics: tuple[str, ...] = (".*",)


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
    source: str = "<memory>"

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


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))


def load_platform(path: Path = PLATFORM_PATH) -> Platform:
    raw = yaml.safe_load(path.read_text())
    clusters = {name: KafkaCluster(name, c["bootstrap_servers"], tuple(c["tiers"]))
                for name, c in raw["kafka_clusters"].items()}
    return Platform(raw["project"], raw["region"], raw["network"], ipaddress.IPv4Network(raw["network_range"]),
                    raw["gke_cluster"], clusters)


def _where(error) -> str:
    path = ""
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(top level)"


def _schema_problems(label: str, raw) -> list[str]:
    problems = []
    for error in sorted(_validator().iter_errors(raw), key=lambda e: list(map(str, e.absolute_path))):
        message = error.message
        if error.validator == "pattern":
            message = f"{error.instance!r} does not match {error.validator_value!r}"
            if error.absolute_path and error.absolute_path[-1] == "team":
                message += " (a DNS label: lowercase letters, digits and '-', 3 to 20 characters)"
        elif error.validator == "additionalProperties":
            message = message.replace("Additional properties are not allowed", "unknown field(s)")
        problems.append(f"{label}: {_where(error)}: {message}")
    return problems


def parse(text: str, *, source: str = "<memory>", platform: Platform | None = None) -> TeamSpec:
    label = source
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise SpecError([f"{label}: not valid YAML: {e}"]) from None
    if not isinstance(raw, dict):
        raise SpecError([f"{label}: expected a mapping of fields, got {type(raw).__name__}"])
    problems = _schema_problems(label, raw)
    if problems:
        raise SpecError(problems)
    return _build(raw, label, platform or load_platform())


def _build(raw: dict, label: str, platform: Platform) -> TeamSpec:
    problems: list[str] = []
    tier = TIERS[raw["tier"]]
    spark_raw = {**tier["spark"], **raw.get("spark", {})}
    size = SIZES[spark_raw.get("size", tier["spark"]["size"])]
    spark = SparkSpec(
        flavour=spark_raw["flavour"], size=spark_raw["size"],
        workers=spark_raw.get("workers", size["workers"]),
        worker_cores=spark_raw.get("worker_cores", size["worker_cores"]),
        worker_memory_gb=spark_raw.get("worker_memory_gb", size["worker_memory_gb"]),
        machine_type=spark_raw.get("machine_type", size["machine_type"]))
    kafka_raw = raw.get("kafka", copy.deepcopy(tier["kafka"]))
    kafka = tuple(KafkaRead(k["cluster"], k.get("mirrored", False), tuple(k.get("topics", [".*"])))
                  for k in kafka_raw)
    for i, k in enumerate(kafka):
        cluster = platform.kafka_clusters.get(k.cluster)
        if cluster is None:
            problems.append(f"{label}: kafka[{i}].cluster: unknown Kafka cluster {k.cluster!r} "
                            f"(the platform has: {', '.join(sorted(platform.kafka_clusters))})")
        elif raw["tier"] not in cluster.tiers:
            problems.append(f"{label}: kafka[{i}].cluster: {k.cluster} is for tiers {', '.join(cluster.tiers)}, "
                            f"not {raw['tier']}")
    quota = Quota(**{**tier["quota"], **raw.get("quota", {})})
    name = raw["team"]
    try:
        cidr = ipaddress.IPv4Network(raw["network"]["cidr"], strict=True)
    except ValueError as e:
        problems.append(f"{label}: network.cidr: {raw['network']['cidr']!r} is not a network address ({e})")
        cidr = None
    if cidr is not None and not cidr.subnet_of(platform.network_range):
        problems.append(f"{label}: network.cidr: {cidr} is outside the platform's range {platform.network_range}")
    labels = dict(raw.get("labels", {}))
    for reserved in ("team", "tier", "managed-by"):
        if reserved in labels:
            problems.append(f"{label}: labels.{reserved}: set by the platform; remove it")
    if len(f"dagger-{name}") > SA_ID_MAX:
        problems.append(f"{label}: team: service account id dagger-{name} is longer than {SA_ID_MAX} characters")
    bucket = f"{platform.project}-{name}-checkpoints"
    if len(bucket) > BUCKET_MAX:
        problems.append(f"{label}: team: bucket name {bucket} is longer than {BUCKET_MAX} characters")
    # the namespace holds the Spark workers and master, and each mirror's brokers and MM2
    mirrors = sum(1 for k in kafka if k.mirrored)
    brokers = MIRROR_BROKERS[raw["tier"]]
    needed_cpu = (spark.workers * spark.worker_cores + 2
                  + mirrors * (brokers * MIRROR_BROKER_CPU + MIRROR_MM2_CPU))
    needed_mem = (spark.workers * spark.worker_memory_gb + 4
                  + mirrors * (brokers * MIRROR_BROKER_MEMORY_GB + MIRROR_MM2_MEMORY_GB))
    if spark.flavour == "gke" and (quota.cpu < needed_cpu or quota.memory_gb < needed_mem):
        problems.append(f"{label}: quota: {quota.cpu} CPUs / {quota.memory_gb} GB cannot hold the Spark cluster "
                        f"({spark.workers} workers x {spark.worker_cores} CPUs / {spark.worker_memory_gb} GB "
                        f"plus the master) and {mirrors} Kafka mirror(s): they need {needed_cpu:g} / {needed_mem:g}")
    if spark.flavour == "gke" and raw.get("region", platform.region) != platform.region:
        problems.append(f"{label}: region: gke teams run on the platform's cluster in {platform.region}; "
                        f"use spark.flavour vm for {raw['region']}")
    if problems:
        raise SpecError(problems)
    return TeamSpec(
        name=name, description=raw.get("description", ""), owners=tuple(raw["owners"]), tier=raw["tier"],
        region=raw.get("region", platform.region), spark=spark, kafka=kafka,
        checkpoint_retention_days=raw.get("checkpoints", {}).get(
            "retention_days", tier["checkpoints"]["retention_days"]),
        cidr=cidr, quota=quota, labels=labels, source=label)


def load(path: str | Path, platform: Platform | None = None) -> TeamSpec:
    p = Path(path)
    label = _label(p)
    if not p.is_file():
        raise SpecError([f"{label}: no such file"])
    spec = parse(p.read_text(), source=label, platform=platform)
    if p.stem != spec.name:
        raise SpecError([f"{label}: team: the file must be named after the team ({spec.name}.yaml)"])
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
            problems.append(f"{spec.source}: team: {spec.name} is already used by {seen[spec.name].source}")
        seen.setdefault(spec.name, spec)
    for i, a in enumerate(specs):
        for b in specs[i + 1:]:
            if a.cidr.overlaps(b.cidr):
                problems.append(f"{b.source}: network.cidr: {b.cidr} overlaps {a.name}'s {a.cidr} ({a.source})")
    return problems


def load_all(teams_dir: Path = TEAMS_DIR, platform: Platform | None = None) -> list[TeamSpec]:
    """Every team spec, validated one by one and together; all problems reported at once."""
    platform = platform or load_platform()
    specs, problems = [], []
    for path in sorted(teams_dir.glob("*.yaml")):
        try:
            specs.append(load(path, platform))
        except SpecError as e:
            problems.extend(e.problems)
    problems.extend(check_all(specs))
    if problems:
        raise SpecError(problems)
    return specs
