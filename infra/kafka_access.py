"""Kafka access as data: the ACLs a team's principals get on the shared Kafka clusters.

Pure functions of a validated TeamSpec and the Platform (its topic catalogue, infra/topics.py):

  acls_for(spec, platform)     the team's daggers, principal User:dagger-<team> (SCRAM-SHA-512):
                               READ and DESCRIBE on each catalogue entry the team's patterns reach
                               (all of them granted: validation refused the rest), PREFIXED for a
                               prefix entry; READ on its own consumer groups, prefix dagger-<team>-- (see
                               GROUP_DELIMITER: no other team's prefix extends it).
  mirror_acls(spec, platform)  each mirror's MirrorMaker 2, principal User:mm2-<team>-<source>:
                               READ, DESCRIBE and DESCRIBE_CONFIGS on the entries it replicates, and
                               nothing else: no WRITE, no CREATE, no group, no cluster operation, so
                               it cannot write to the shared cluster even if misconfigured.

Kafka denies what no ACL allows (allow.everyone.if.no.acl.found=false on the shared clusters), so
these lists are the whole of what each principal may do. Applied by the platform team's tooling
(kafka-acls / the Admin API) from the `kafka_acls` of each team; proven on the lab's real Kafka.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from . import topic_quota
from .spec import Platform, TeamSpec
from .topics import Topic

READ, WRITE, DESCRIBE, DESCRIBE_CONFIGS = "READ", "WRITE", "DESCRIBE", "DESCRIBE_CONFIGS"


@dataclass(frozen=True, order=True)
class Acl:
    cluster: str  # the shared Kafka cluster the ACL is set on
    principal: str  # User:<name>
    resource_type: str  # TOPIC | GROUP
    name: str
    pattern_type: str  # LITERAL | PREFIXED
    operation: str  # READ | DESCRIBE | DESCRIBE_CONFIGS
    permission: str = "ALLOW"
    host: str = "*"

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def team_principal(spec: TeamSpec) -> str:
    return f"User:dagger-{spec.name}"


def mirror_principal(spec: TeamSpec, source: str) -> str:
    return f"User:mm2-{spec.name}-{source}"


# Between the team and the dagger's name in a consumer group: `dagger-<team>--<dagger>`. Team names
# never contain '--' (dagger_runtime/names.py, checked again here), so no team's prefix is a
# prefix of another's: `dagger-growth--` does not cover `dagger-growth-lab--...` (with a single '-'
# it did). A dagger's kafka.group_id must start with it; Spark appends `-<uuid>...` to it.
GROUP_DELIMITER = topic_quota.DELIMITER  # the same delimiter as the team's own topics


def consumer_group_prefix(team: str) -> str:
    if GROUP_DELIMITER in team:
        raise ValueError(
            f"team name {team!r} contains {GROUP_DELIMITER!r}: its consumer groups would overlap another team's"
        )
    return f"dagger-{team}{GROUP_DELIMITER}"


def consumer_group(team: str, dagger: str) -> str:
    """The kafka.group_id of a team's dagger, inside the prefix its ACL allows: what whoever writes
    a dagger's spec (lab/demo.py, chaos/runner.py, a team) should call rather than spell it."""
    return consumer_group_prefix(team) + dagger


def _reached(spec: TeamSpec, platform: Platform, cluster: str, reaches: tuple[str, ...]) -> list[Topic]:
    catalogue = platform.kafka_clusters[cluster].topics
    # reaches holds labels, checked against the catalogue again: an entry must still be granted
    return [t for t in catalogue if t.label in reaches and t.readable_by(spec.name)]


def _topic_acls(cluster: str, principal: str, entries: list[Topic], operations: tuple[str, ...]) -> list[Acl]:
    return [
        Acl(cluster, principal, "TOPIC", t.value, "PREFIXED" if t.is_prefix else "LITERAL", op)
        for t in entries
        for op in operations
    ]


def acls_for(spec: TeamSpec, platform: Platform) -> list[Acl]:
    """The team principal's ACLs on every shared cluster it reads (sorted, no duplicates), and on
    its own topics (infra/topic_quota.py): READ, WRITE and DESCRIBE each, LITERAL; never CREATE or
    ALTER, so the partitions and retention the spec was checked for are all it can have."""
    principal = team_principal(spec)
    acls: set[Acl] = {
        Acl(t.cluster, principal, "TOPIC", t.name, "LITERAL", op)
        for t in spec.own_topics
        for op in (READ, WRITE, DESCRIBE)
    }
    for read in spec.kafka:
        acls.update(
            _topic_acls(read.cluster, principal, _reached(spec, platform, read.cluster, read.reaches), (READ, DESCRIBE))
        )
        acls.add(Acl(read.cluster, principal, "GROUP", consumer_group_prefix(spec.name), "PREFIXED", READ))
    return sorted(acls)


def mirror_acls(spec: TeamSpec, platform: Platform) -> list[Acl]:
    """Each mirror's MirrorMaker principal's ACLs on its source cluster (sorted, no duplicates)."""
    acls: set[Acl] = set()
    for read in spec.kafka:
        if read.mirrored:
            acls.update(
                _topic_acls(
                    read.cluster,
                    mirror_principal(spec, read.cluster),
                    _reached(spec, platform, read.cluster, read.reaches),
                    (READ, DESCRIBE, DESCRIBE_CONFIGS),
                )
            )
    return sorted(acls)
