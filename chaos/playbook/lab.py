"""The lab a playbook is checked against: its inventory's Kafka and Spark clusters, sinks and topics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from .values import LAB_INVENTORY, REPO, did_you_mean

# -- the lab ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lab:
    """What a playbook may name, from the lab's Ansible inventory."""

    kafka: Mapping[str, tuple[int, ...]]  # cluster -> broker ids
    min_insync: Mapping[str, int]  # cluster -> min.insync.replicas
    spark: Mapping[str, tuple[str, ...]]  # cluster -> worker hosts
    sinks: tuple[str, ...]  # sink servers: influxdb, postgresql
    topics: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    # cluster -> (topic names, topic prefixes) its ACLs grant; no entry: only the syntax is checked
    source: str = "<memory>"

    def topic_problem(self, cluster: str, topic: str) -> str | None:
        if cluster not in self.topics:
            return None
        names, prefixes = self.topics[cluster]
        if topic in names or any(topic.startswith(p) for p in prefixes):
            return None
        granted = ", ".join([*names, *(p + "*" for p in prefixes)])
        return (
            f"{topic!r} is not a topic of the lab's {cluster} cluster{did_you_mean(topic, names)}; its ACLs "
            f"({self.source}) grant {granted}"
        )


@lru_cache(maxsize=4)
def lab_inventory(inventory: Path = LAB_INVENTORY) -> Lab:
    inventory = Path(inventory)
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    kafka: dict[str, list[int]] = {}
    spark: dict[str, list[str]] = {}
    sinks: list[str] = []
    cluster_groups: dict[str, str] = {}

    def visit(group: str, body: dict, inherited: dict, path: tuple[str, ...]) -> None:
        body = body or {}
        own = {**inherited, **(body.get("vars") or {})}
        if "kafka_cluster" in (body.get("vars") or {}):
            cluster_groups[own["kafka_cluster"]] = group
        for host, host_vars in (body.get("hosts") or {}).items():
            v = {**own, **(host_vars or {})}
            if "kafka_cluster" in v and "kafka_node_id" in v:
                kafka.setdefault(v["kafka_cluster"], []).append(int(v["kafka_node_id"]))
            elif "spark_cluster" in v:
                spark.setdefault(v["spark_cluster"], [])
                if v.get("spark_role") == "worker":
                    spark[v["spark_cluster"]].append(host)
            elif group in ("influxdb", "postgresql"):
                if group not in sinks:
                    sinks.append(group)
        for child, child_body in (body.get("children") or {}).items():
            visit(child, child_body, own, path + (child,))

    visit("all", hosts.get("all", {}), {}, ())
    min_insync: dict[str, int] = {}
    topics: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for cluster, group in cluster_groups.items():
        path = inventory / "group_vars" / f"{group}.yml"
        if not path.is_file():
            continue
        gv = yaml.safe_load(path.read_text()) or {}
        if "kafka_min_insync_replicas" in gv:
            min_insync[cluster] = int(gv["kafka_min_insync_replicas"])
        names: list[str] = []
        prefixes: list[str] = []
        for acl in gv.get("kafka_acls") or []:
            if acl.get("resource_type") != "TOPIC" or acl.get("name") == "*":
                continue
            target = prefixes if acl.get("pattern_type") == "PREFIXED" else names
            if acl["name"] not in target:
                target.append(acl["name"])
        if names or prefixes:
            topics[cluster] = (tuple(names), tuple(prefixes))
    try:
        label = str(inventory.resolve().relative_to(REPO) / "group_vars")
    except ValueError:
        label = str(inventory / "group_vars")
    return Lab(
        {c: tuple(sorted(ids)) for c, ids in kafka.items()},
        min_insync,
        {c: tuple(w) for c, w in spark.items()},
        tuple(sinks),
        topics,
        label,
    )


@lru_cache(maxsize=1)
def _descriptors():
    from protos import registry

    return registry.load()
