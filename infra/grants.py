"""What the platform team grants each team: infra/grants/<team>.yaml.

A team's spec (infra/teams/<team>.yaml) is approved by the team's own owners, so anything a team
must not give itself lives here instead, in files only @gojek/data-platform owns (CODEOWNERS): the
highest tier, the quota ceilings, the Kafka clusters, and the Google group its owners' Kubernetes
RBAC binding names. `python -m infra.validate` refuses a spec that asks for more than its grant.

    team: fraud
    tier: critical                                   # the highest tier the spec may ask for
    quota: {cpu: 160, memory_gb: 640, pods: 200}     # ceilings of the namespace quota
    kafka_clusters: [esb-critical]                   # the clusters the spec may read or mirror
    rbac_group: dagger-fraud-owners@daggers.dev      # the owners' group in the cluster's RBAC

Pure: text in, a Grant or a GrantError listing every problem (`<file>:<line>: <field>: ...`) out.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from dagger_runtime.yaml_lines import field_name

from . import spec_file
from .tiers import TIERS

INFRA = Path(__file__).resolve().parent
GRANTS_DIR = INFRA / "grants"
PLATFORM_OWNER = "@gojek/data-platform"
# The Google Workspace domain of the groups GKE's RBAC knows. Google Groups for RBAC only resolves
# groups nested in the cluster's security group, which must be gke-security-groups@<that domain>
# (platform_stack sets it on the cluster), so every owners' group is a group of this domain.
GROUPS_DOMAIN = "daggers.dev"
SECURITY_GROUP = f"gke-security-groups@{GROUPS_DOMAIN}"
# The platform operators (@gojek/data-platform): every team's daggers in the portal, and failovers.
OPERATORS_GROUP = f"dagger-platform-operators@{GROUPS_DOMAIN}"
# Tiers from the least to the most a team may ask for (a grant of `standard` allows experimental).
TIER_ORDER = ("experimental", "standard", "critical")
QUOTA_FIELDS = ("cpu", "memory_gb", "pods")
FIELDS = ("team", "tier", "quota", "kafka_clusters", "rbac_group")
# A group address as Workspace writes it: lowercase ASCII only, so no look-alike or other spelling
# of a group can stand for it.
_GROUP_LOCAL = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$")

assert set(TIER_ORDER) == set(TIERS), "TIER_ORDER must rank every tier of tiers.TIERS"


class GrantError(ValueError):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid grant:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True)
class Grant:
    team: str
    tier: str
    cpu: int
    memory_gb: int
    pods: int
    kafka_clusters: tuple[str, ...]
    rbac_group: str
    source: str = "<memory>"
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def path(self) -> str:
        """Where the platform team changes this grant (what a refusal tells the team to ask for)."""
        return f"infra/grants/{self.team}.yaml"

    def where(self, name: str) -> str:
        """`<file>:<line>: <field>` for a field of this grant (its line, or its parent's)."""
        key = name
        while key not in self.lines and "." in key:
            key = key.rsplit(".", 1)[0]
        return f"{self.source}:{self.lines.get(key, 1)}: {name}"

    def allows_tier(self, tier: str) -> bool:
        return tier in TIER_ORDER and TIER_ORDER.index(tier) <= TIER_ORDER.index(self.tier)


def _lines(node: yaml.Node) -> dict[str, int]:
    """Each field's line (1-based) in a grant file: `tier`, `quota`, `quota.cpu`, ..."""
    out: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                out[key.value] = key.start_mark.line + 1
                if isinstance(value, yaml.MappingNode):
                    for sub, _ in value.value:
                        if isinstance(sub, yaml.ScalarNode):
                            out[f"{key.value}.{sub.value}"] = sub.start_mark.line + 1
    return out


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def group_problem(group: str) -> str | None:
    """Why `group` cannot be an owners' group in the cluster's RBAC, or None."""
    if unicodedata.normalize("NFKC", group) != group or not group.isascii():
        return f"{group!a} is not plain ASCII"
    local, at, domain = group.partition("@")
    if not at or domain != GROUPS_DOMAIN or not _GROUP_LOCAL.fullmatch(local):
        return (
            f"{group!a} is not a group of {GROUPS_DOMAIN}: Google Groups for RBAC only resolves groups "
            f"nested in {SECURITY_GROUP}, so write <lowercase name>@{GROUPS_DOMAIN}"
        )
    if group == SECURITY_GROUP:
        return f"{group!a} is the cluster's security group itself (every RBAC group is in it), not a team's"
    return None


def team_group_problem(group: str) -> str | None:
    """Why `group` cannot be a team's owners' group (group_problem, or the operators' own), or None."""
    if group == OPERATORS_GROUP:
        return f"{group!a} is the platform operators' group (every team's daggers), not a team's"
    return group_problem(group)


def parse(
    text: str,
    *,
    source: str = "<memory>",
    team: str | None = None,
    kafka_clusters: Mapping[str, Iterable[str]] | None = None,
) -> Grant:
    """A grant from its text. team: the name the file must carry (its file name); kafka_clusters:
    the platform's clusters and the tiers that may read each (platform.yaml), to check against."""
    shape = spec_file.shape_problem(text, source)  # size and depth, before YAML builds anything
    if shape:
        raise GrantError([shape])
    try:
        node = yaml.compose(text)
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise GrantError([f"{source}:1: not valid YAML: {ascii(str(e))[1:-1]}"]) from None
    if not isinstance(raw, dict):
        raise GrantError([f"{source}:1: expected a mapping with {', '.join(FIELDS)}; got {type(raw).__name__}"])
    lines = _lines(node)

    def at(name: str) -> str:
        key = name
        while key not in lines and "." in key:
            key = key.rsplit(".", 1)[0]
        return f"{source}:{lines.get(key, 1)}: {name}"

    problems = []
    for name in raw:
        if name not in FIELDS:
            # the name quoted when it is not plain (a newline or ESC in it would print as itself)
            problems.append(
                f"{source}:{lines.get(name, 1)}: {field_name((str(name),))}: unknown field "
                f"(a grant has {', '.join(FIELDS)})"
            )
    for name in FIELDS:
        if name not in raw:
            problems.append(f"{source}:1: {name}: missing (a grant has {', '.join(FIELDS)})")
    name = raw.get("team")
    if "team" in raw and (not isinstance(name, str) or (team is not None and name != team)):
        problems.append(f"{at('team')}: {name!a} is not the team the file is named after ({team})")
    tier = raw.get("tier")
    if "tier" in raw and tier not in TIER_ORDER:
        problems.append(f"{at('tier')}: {tier!a} is not a tier ({', '.join(TIER_ORDER)})")
    quota = raw.get("quota")
    if "quota" in raw:
        if not isinstance(quota, dict):
            problems.append(f"{at('quota')}: expected a mapping of {', '.join(QUOTA_FIELDS)}")
            quota = {}
        for key in quota:
            if key not in QUOTA_FIELDS:
                problems.append(
                    f"{source}:{lines.get(f'quota.{key}', lines.get('quota', 1))}: "
                    f"{field_name(('quota', str(key)))}: unknown field (a quota has "
                    f"{', '.join(QUOTA_FIELDS)})"
                )
        for key in QUOTA_FIELDS:
            if key not in quota:
                problems.append(f"{at('quota')}.{key}: missing")
            elif not _count(quota[key]):
                problems.append(f"{at(f'quota.{key}')}: {quota[key]!a} is not a whole number >= 0")
    clusters = raw.get("kafka_clusters")
    if "kafka_clusters" in raw:
        if not isinstance(clusters, list) or not all(isinstance(c, str) for c in clusters):
            problems.append(f"{at('kafka_clusters')}: expected a list of Kafka cluster names")
            clusters = []
        for c in sorted({c for c in clusters if clusters.count(c) > 1}):
            problems.append(f"{at('kafka_clusters')}: {c!a} is listed twice")
        for c in clusters:
            if kafka_clusters is None:
                continue
            if c not in kafka_clusters:
                problems.append(
                    f"{at('kafka_clusters')}: unknown Kafka cluster {c!a} "
                    f"(the platform has: {', '.join(sorted(kafka_clusters))})"
                )
            elif tier in TIER_ORDER and tier not in kafka_clusters[c]:
                problems.append(f"{at('kafka_clusters')}: {c} is for tiers {', '.join(kafka_clusters[c])}, not {tier}")
    group = raw.get("rbac_group")
    if "rbac_group" in raw:
        why = team_group_problem(group) if isinstance(group, str) else f"{group!a} is not a group address"
        if why:
            problems.append(f"{at('rbac_group')}: {why}")
    if problems:
        raise GrantError(problems)
    return Grant(
        team=name,
        tier=tier,
        cpu=quota["cpu"],
        memory_gb=quota["memory_gb"],
        pods=quota["pods"],
        kafka_clusters=tuple(clusters),
        rbac_group=group,
        source=source,
        lines=lines,
    )


def _label(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(INFRA.parent))
    except ValueError:
        return str(p)


def load(path: str | Path, kafka_clusters: Mapping[str, Iterable[str]] | None = None) -> Grant:
    p = Path(path)
    if not p.is_file():
        raise GrantError([f"{_label(p)}: no such file"])
    return parse(p.read_text(), source=_label(p), team=p.stem, kafka_clusters=kafka_clusters)


def load_all(
    grants_dir: Path = GRANTS_DIR, kafka_clusters: Mapping[str, Iterable[str]] | None = None
) -> tuple[dict[str, Grant], dict[str, list[str]]]:
    """Every grant file, parsed once: ({team: grant}, {team: problems of a broken file})."""
    grants, broken = {}, {}
    for path in sorted(grants_dir.glob("*.yaml")):
        try:
            grants[path.stem] = load(path, kafka_clusters)
        except GrantError as e:
            broken[path.stem] = e.problems
    return grants, broken


def find(team: str, grants_dir: Path = GRANTS_DIR) -> Grant | None:
    """The team's grant, None without a grant file (a broken file raises GrantError)."""
    path = grants_dir / f"{team}.yaml"
    return load(path) if path.is_file() else None


def platform_clusters(platform) -> dict[str, tuple[str, ...]]:
    """{cluster: tiers} from a spec.Platform, what parse() checks kafka_clusters against."""
    return {name: tuple(c.tiers) for name, c in platform.kafka_clusters.items()}


def problems_of(spec, grant: Grant | None, where) -> list[str]:
    """Why `spec` asks for more than `grant` allows (none: []). where(field) -> `<file>:<line>: <field>`."""
    ask = f"ask {PLATFORM_OWNER} to change infra/grants/{spec.name}.yaml"
    if grant is None:
        return [
            f"{where('team')}: {spec.name} has no grant: the platform team grants each team its tier, "
            f"quota ceilings, Kafka clusters and owners' group in infra/grants/{spec.name}.yaml; "
            f"ask {PLATFORM_OWNER} to add it"
        ]
    out = []
    if not grant.allows_tier(spec.tier):
        out.append(f"{where('tier')}: {spec.tier} is above the tier granted to {spec.name} ({grant.tier}); {ask}")
    for key, unit in (("cpu", " CPUs"), ("memory_gb", " GB"), ("pods", " pods")):
        asked, ceiling = getattr(spec.quota, key), getattr(grant, key)
        if asked > ceiling:
            out.append(
                f"{where(f'quota.{key}')}: {asked}{unit} is above the ceiling granted to {spec.name} "
                f"({ceiling}{unit}); {ask}"
            )
    granted = ", ".join(grant.kafka_clusters) or "none"
    for i, read in enumerate(spec.kafka):
        if read.cluster not in grant.kafka_clusters:
            out.append(
                f"{where(f'kafka[{i}].cluster')}: {read.cluster} is not among the Kafka clusters granted "
                f"to {spec.name} ({granted}); {ask}"
            )
    for i, topic in enumerate(getattr(spec, "own_topics", ())):
        if topic.cluster not in grant.kafka_clusters:
            out.append(
                f"{where(f'topics[{i}].cluster')}: {topic.cluster} is not among the Kafka clusters granted "
                f"to {spec.name} ({granted}); {ask}"
            )
    return out
