"""Kafka faults: brokers stopped, killed or frozen, a whole cluster down.

Health after undo, asked of the cluster as the platform's administrator (lab.access): every
target broker is registered and unfenced, and no partition is under-replicated.
"""

from __future__ import annotations

from lab.access import kafka_python

from .base import Fault, kill_programs, pause_programs, resume_frozen, start_programs, stop_programs
from .errors import FaultError
from .targets import Component, Lab, bootstrap, brokers, choose

DEFAULT_CLUSTER = "primary"


def cluster_health(lab: Lab, cluster: str, node_ids: list[int]) -> list[str]:
    """What keeps `node_ids` from being back in `cluster` (empty: they are)."""
    from kafka.admin import KafkaAdminClient

    members = brokers(lab, cluster)
    problems = [f"broker {i} ({members[i].address}) refuses connections" for i in node_ids if not members[i].answers()]
    live = [c for c in members.values() if c.answers()]
    if not live:
        return problems or [f"no broker of {cluster} accepts connections"]
    try:
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap(live),
            client_id="chaos-faults-health",
            request_timeout_ms=5000,
            **kafka_python("admin", cluster, lab.dir),
        )
    except Exception as e:  # noqa: BLE001 - no connection, for any reason, is a health problem to report
        return problems + [f"cluster {cluster}: no admin connection ({type(e).__name__}: {e})"]
    try:
        registered = {b["broker_id"]: b for b in admin.describe_cluster()["brokers"]}
        for i in node_ids:
            if i not in registered:
                problems.append(f"broker {i} is not registered in {cluster}")
            elif registered[i].get("is_fenced"):
                problems.append(f"broker {i} is fenced in {cluster}")
        serving = {i for i, b in registered.items() if not b.get("is_fenced")}
        lagging, offline = [], []
        for topic in admin.describe_topics(admin.list_topics()):
            for p in topic["partitions"]:
                name = f"{topic['name']}-{p['partition_index']}"
                if p["leader_id"] < 0:
                    offline.append(name)
                # a replica on a broker that is down on purpose (another fault still active) keeps
                # its partition short; with every broker back this is exactly "no under-replicated
                # partition"
                elif set(p["isr_nodes"]) != set(p["replica_nodes"]) and set(p["replica_nodes"]) <= serving:
                    lagging.append(name)
        if offline:
            problems.append(f"{len(offline)} partitions of {cluster} without a leader: {', '.join(offline[:5])}")
        if lagging:
            problems.append(f"{len(lagging)} under-replicated partitions on {cluster}: {', '.join(lagging[:5])}")
    except Exception as e:  # noqa: BLE001 - a cluster that cannot be described is a health problem to report
        problems.append(f"cluster {cluster}: cannot describe it ({type(e).__name__}: {e})")
    finally:
        admin.close()
    return problems


class BrokerFault(Fault):
    """Brokers of one cluster, by node id or a seeded share."""

    @classmethod
    def prepare(
        cls,
        lab: Lab,
        *,
        target: str | None,
        ids: list | None,
        failure_percentage: float | None,
        seed: int | str,
        **settings,
    ) -> "BrokerFault":
        cluster = target or DEFAULT_CLUSTER
        members = brokers(lab, cluster)
        if ids and failure_percentage is not None:
            raise FaultError("name the brokers or give a failure_percentage, not both")
        if ids:
            try:
                chosen = sorted({int(i) for i in ids})
            except ValueError:
                raise FaultError(f"broker ids are numbers: {ids}") from None
            unknown = [i for i in chosen if i not in members]
            if unknown:
                raise FaultError(f"{cluster} has no broker {unknown[0]}; its brokers: {sorted(members)}")
            selection = {"ids": chosen}
        elif failure_percentage is not None:
            chosen = choose(list(members), failure_percentage, seed)
            selection = {"failure_percentage": failure_percentage, "seed": seed, "of": sorted(members)}
        else:
            raise FaultError(
                f"{cls.kind}: name the brokers (ids) or a failure_percentage of {cluster}'s "
                f"{len(members)}; every broker is cluster-down"
            )
        return cls(
            lab,
            programs=[members[i].program for i in chosen],
            label=f"{cluster} broker{'s' if len(chosen) > 1 else ''} {', '.join(map(str, chosen))}",
            params={"cluster": cluster, "brokers": chosen},
            selection=selection,
            **settings,
        )

    def health(self) -> list[str]:
        return cluster_health(self.lab, self.params["cluster"], self.params["brokers"])

    def _restore(self) -> None:
        start_programs(self, [self.affected])


class BrokerStop(BrokerFault):
    kind = "broker-stop"

    def _inject(self) -> None:
        stop_programs(self, self.programs)


class BrokerKill(BrokerFault):
    kind = "broker-kill"

    def _inject(self) -> None:
        kill_programs(self, self.programs, whole_group=False)


class BrokerPause(BrokerFault):
    kind = "broker-pause"

    def _inject(self) -> None:
        pause_programs(self, self.programs)

    def _restore(self) -> None:
        resume_frozen(self, self._supervisor(), self.affected)


class ClusterDown(BrokerFault):
    kind = "cluster-down"

    @classmethod
    def prepare(
        cls,
        lab: Lab,
        *,
        target: str | None,
        ids: list | None,
        failure_percentage: float | None,
        seed: int | str,
        **settings,
    ) -> "ClusterDown":
        if ids or failure_percentage is not None:
            raise FaultError("cluster-down takes every broker of the cluster: no ids, no failure_percentage")
        cluster = target or DEFAULT_CLUSTER
        members: dict[int, Component] = brokers(lab, cluster)
        return cls(
            lab,
            programs=[c.program for c in members.values()],
            label=f"Kafka cluster {cluster}",
            params={"cluster": cluster, "brokers": sorted(members)},
            **settings,
        )

    def _inject(self) -> None:
        # all at once: one by one, the last brokers' controlled shutdown waits on a quorum that is gone
        stop_programs(self, self.programs)
