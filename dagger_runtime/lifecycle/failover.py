"""`dagger failover`: move a dagger off a lost Kafka or Spark cluster, keeping its results exact.

Spark: the standby cluster resumes the same checkpoint (shared by both clusters), so the query
goes on from the last batch the lost cluster committed. The old driver must be gone first, or two
writers share a checkpoint: its master must not answer and neither must the dagger's /metrics.

Kafka: a Spark checkpoint holds the offsets of the cluster it read, which mean nothing on another
cluster, so the dagger starts a new checkpoint on the cluster that holds a copy of its topics
(MirrorMaker 2 names them `<source>.<topic>`). It reads from a time early enough to rebuild every
window the old version had not written yet: MirrorMaker keeps each record's timestamp, and a
record's timestamp is not earlier than its event time. Windows the old version wrote (those ending
at or before its last committed watermark) are not written again, because the replay sees only
their tail; the others are rebuilt whole and written once. Failing back is the same move the
other way.
"""

from __future__ import annotations

import json
import re

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import DaggerError
from .clusters import NAME, clusters_dir

# how much earlier than the oldest open window the replay starts: producers' and brokers' clocks
# differ a little, and a few seconds more input only costs a few seconds of reading
REPLAY_MARGIN_MS = 30_000


class Mirror(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cluster: str = Field(pattern=NAME)  # the cluster whose topics this one holds copies of
    topic_prefix: str = Field(pattern=r"^[A-Za-z0-9._-]{1,200}$")  # MM2's DefaultReplicationPolicy: "<source>."


class KafkaCluster(BaseModel):
    """One Kafka cluster daggers may read, from <clusters>/kafka/<name>.json (the lab's Kafka role
    writes them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME)
    bootstrap_servers: str = Field(pattern=r"^[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*$")
    mirror_of: Mirror | None = None

    @property
    def addresses(self) -> frozenset[str]:
        return frozenset(self.bootstrap_servers.split(","))


def kafka_clusters(directory: str | None = None) -> dict[str, KafkaCluster]:
    folder = clusters_dir(directory) / "kafka"
    found = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            cluster = KafkaCluster.model_validate(json.loads(path.read_text()))
        except (ValueError, ValidationError) as e:
            raise DaggerError(f"{path}: not a Kafka cluster definition: {str(e).splitlines()[0]}") from None
        if path.stem != cluster.name:
            raise DaggerError(f"{path}: the file name must be the cluster's name ({cluster.name}.json)")
        found[cluster.name] = cluster
    if not found:
        raise DaggerError(
            f"no Kafka clusters defined in {folder} (one <name>.json each, with name, "
            "bootstrap_servers and, for a mirror, mirror_of)"
        )
    return found


def _addresses(bootstrap) -> frozenset[str]:
    values = bootstrap if isinstance(bootstrap, list) else str(bootstrap).split(",")
    return frozenset(v.strip() for v in values if str(v).strip())


def _which(bootstrap, clusters: dict[str, KafkaCluster]) -> KafkaCluster | None:
    addresses = _addresses(bootstrap)
    return next((c for c in clusters.values() if addresses & c.addresses), None)


def moved_spec(text: str, to: str, clusters: dict[str, KafkaCluster]) -> str:
    """The spec with every stream that reads a cluster with a copy on `to` reading that copy (pure).

    Only native YAML specs: a raystack .properties spec is edited by hand for now."""
    try:
        spec = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise DaggerError(
            f"the running spec is not YAML ({str(e).splitlines()[0]}); a .properties dagger is "
            "moved with `dagger edit` and a spec that names the other cluster"
        ) from None
    if not isinstance(spec, dict) or not isinstance(spec.get("streams"), list):
        raise DaggerError("the running spec has no streams list; move it with `dagger edit`")
    target = clusters.get(to)
    if target is None:
        raise DaggerError(f"no Kafka cluster named {to!r}; known: {', '.join(sorted(clusters))}")
    moved = 0
    for i, stream in enumerate(spec["streams"]):
        _check_shape(i, stream)
        kafka = stream.get("kafka") or {}
        source = _which(kafka.get("bootstrap_servers", ""), clusters)
        if source is None:
            raise DaggerError(
                f"streams[{i}] ({stream.get('table')}) reads {kafka.get('bootstrap_servers')}, which "
                "is none of the Kafka clusters defined; nothing can be said about its copies"
            )
        if source.name == target.name:
            continue
        if target.mirror_of and target.mirror_of.cluster == source.name:  # onto the copy
            rename = lambda topic, p=target.mirror_of.topic_prefix: p + topic  # noqa: E731
            pattern = lambda rx, p=target.mirror_of.topic_prefix: re.escape(p) + f"(?:{rx})"  # noqa: E731
        elif source.mirror_of and source.mirror_of.cluster == target.name:  # back to the original
            prefix = source.mirror_of.topic_prefix

            def rename(topic, p=prefix, i=i):
                if not topic.startswith(p):
                    raise DaggerError(
                        f"streams[{i}] reads {topic} on {source.name}, which is not a copy of "  # noqa: B023 - rename is called in this iteration
                        f"{target.name} (no {p} prefix)"
                    )
                return topic[len(p) :]

            def pattern(rx, p=prefix, i=i):
                if not rx.startswith(re.escape(p) + "(?:") or not rx.endswith(")"):
                    raise DaggerError(
                        f"streams[{i}]: its topic_pattern {rx!r} was not written by a failover, "
                        f"so it cannot be turned back; move it with `dagger edit`"
                    )
                return rx[len(re.escape(p)) + 3 : -1]
        else:
            raise DaggerError(
                f"{target.name} holds no copy of {source.name}'s topics (streams[{i}], "
                f"{stream.get('table')}); clusters with copies: "
                f"{', '.join(sorted(c.name for c in clusters.values() if c.mirror_of)) or 'none'}"
            )
        if stream.get("topics"):
            stream["topics"] = [rename(t) for t in stream["topics"]]
        if stream.get("topic_pattern"):
            stream["topic_pattern"] = pattern(stream["topic_pattern"])
        kafka["bootstrap_servers"] = target.bootstrap_servers
        kafka["cluster"] = target.name
        stream["kafka"] = kafka
        moved += 1
    if not moved:
        raise DaggerError(f"every stream already reads {to}; nothing to move")
    return yaml.safe_dump(spec, sort_keys=False, allow_unicode=True)


def _check_shape(i: int, stream) -> None:
    """The parts a move rewrites, as the native format writes them (a spec in the registry passed
    validation, but a hand-edited registry row need not have)."""
    kafka = stream.get("kafka") if isinstance(stream, dict) else None
    topics = stream.get("topics") if isinstance(stream, dict) else None
    pattern = stream.get("topic_pattern") if isinstance(stream, dict) else None
    if (
        not isinstance(kafka, dict)
        or not (topics is None or isinstance(topics, list) and all(isinstance(t, str) for t in topics))
        or not (pattern is None or isinstance(pattern, str))
    ):
        raise DaggerError(
            f"streams[{i}] is not a stream of the native format (a mapping with a kafka mapping, "
            "topics as a list of names, topic_pattern as a string); move it with `dagger edit`"
        )


def replay_from_ms(plan, watermark_ms: int) -> int:
    """The Kafka time from which a new checkpoint rebuilds every window that ends after
    `watermark_ms`: such a window started less than its size before the watermark (less than the
    sizes of all nested windows, for a query with windows over windows), and its events are not
    older than their records' timestamps."""
    if not plan.query.windows:
        raise DaggerError(
            "the dagger's query has no TUMBLE or HOP window: a replay on another Kafka cluster "
            "cannot tell which rows were already written; move it with `dagger edit --from`"
        )
    span = sum(w.size.millis for w in plan.query.windows)
    return max(0, watermark_ms - span - plan.job.watermark_delay_ms - REPLAY_MARGIN_MS)
