"""A team's own Kafka topics (what its daggers' Kafka sinks write) and the caps on them.

A team never creates topics itself: its principal gets READ, WRITE and DESCRIBE on each topic its
spec lists (infra/kafka_access.py), no CREATE and no ALTER, and the platform's tooling creates
exactly those topics with the partitions and retention the spec asks for. So the caps below,
checked by `infra.validate` on the spec and by the policy pack on any Kafka topic a stack declares,
are the whole of what a team can hold: 1,000 partitions under its prefix is refused, not created.

A team's topics are named `<team>--<name>`: team names never contain `--` (dagger_runtime/names.py), so
no team's prefix extends another's (`growth--` is not a prefix of `growth-lab--...`).

Pure: numbers in, (index, field, message) problems out; the spec and the pack share it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

DELIMITER = "--"
# Kafka's own rule for topic names (org.apache.kafka.common.internals.Topic)
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


@dataclass(frozen=True)
class Quota:
    partitions_per_topic: int
    partitions: int  # every topic under the team's prefix, on all clusters together
    retention_hours: int  # retention.ms, in hours
    retention_gb: int  # retention.bytes: per partition, in GB


# By tier (infra/tiers.py's names); a team the registry does not know gets the smallest (fail closed).
QUOTAS = {
    "critical": Quota(partitions_per_topic=48, partitions=480, retention_hours=336, retention_gb=50),
    "standard": Quota(partitions_per_topic=24, partitions=120, retention_hours=168, retention_gb=20),
    "experimental": Quota(partitions_per_topic=12, partitions=24, retention_hours=72, retention_gb=5),
}
SMALLEST = "experimental"


@dataclass(frozen=True)
class OwnTopic:
    cluster: str
    name: str
    partitions: int
    retention_hours: int | None = None
    retention_gb: int | None = None

    @property
    def config(self) -> dict[str, str]:
        """The topic's Kafka configs, as the platform's tooling sets them."""
        out = {}
        if self.retention_hours is not None:
            out["retention.ms"] = str(self.retention_hours * 3600 * 1000)
        if self.retention_gb is not None:
            out["retention.bytes"] = str(self.retention_gb * 1024**3)
        return out


def prefix(team: str) -> str:
    if DELIMITER in team:
        raise ValueError(f"team name {team!a} contains {DELIMITER!a}: its topics would overlap another team's")
    return f"{team}{DELIMITER}"


def quota(tier: str | None) -> Quota:
    return QUOTAS.get(tier or SMALLEST, QUOTAS[SMALLEST])


def problems(team: str, tier: str | None, topics: Sequence[OwnTopic]) -> list[tuple[int | None, str, str]]:
    """Why a team's own topics are refused: (topic index or None for all of them, field, message)."""
    q, out, seen = quota(tier), [], {}
    own = prefix(team)
    for i, t in enumerate(topics):
        if not t.name.startswith(own) or len(t.name) == len(own) or not _TOPIC_NAME.fullmatch(t.name):
            out.append(
                (
                    i,
                    "name",
                    f"{t.name!a} is not a topic of team {team}: a team's topics are named "
                    f"{own}<name>, of Kafka's characters (letters, digits, '.', '_', '-'), at most 249",
                )
            )
        if (t.cluster, t.name) in seen:
            out.append(
                (i, "name", f"{t.name!a} on {t.cluster!a} is listed already (topics[{seen[(t.cluster, t.name)]}])")
            )
        seen.setdefault((t.cluster, t.name), i)
        if t.partitions > q.partitions_per_topic:
            out.append(
                (
                    i,
                    "partitions",
                    f"{t.partitions} partitions is above the {tier or SMALLEST} tier's cap of "
                    f"{q.partitions_per_topic} a topic",
                )
            )
        if t.retention_hours is not None and t.retention_hours > q.retention_hours:
            out.append(
                (
                    i,
                    "retention_hours",
                    f"{t.retention_hours} hours is above the {tier or SMALLEST} tier's cap of {q.retention_hours}",
                )
            )
        if t.retention_gb is not None and t.retention_gb > q.retention_gb:
            out.append(
                (
                    i,
                    "retention_gb",
                    f"{t.retention_gb} GB a partition is above the {tier or SMALLEST} tier's cap of {q.retention_gb}",
                )
            )
    total = sum(t.partitions for t in topics)
    if total > q.partitions:
        out.append(
            (
                None,
                "partitions",
                f"{total} partitions under {own} in all is above the {tier or SMALLEST} "
                f"tier's cap of {q.partitions} a team",
            )
        )
    return out
