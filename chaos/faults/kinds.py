"""From a kind's name in the catalogue to its implementation."""

from __future__ import annotations

from chaos.catalog import BY_NAME, FAULT_KINDS

from .base import Fault, parse_duration
from .disk import DiskBreak, DiskFill
from .errors import FaultError, NotInScope
from .kafka import BrokerKill, BrokerPause, BrokerStop, ClusterDown
from .network import NetworkCut, NetworkSlow
from .sink import SinkDown
from .spark import DriverKill, MasterKill, SparkClusterDown, WorkerKill
from .targets import Lab

IMPLEMENTED: dict[str, type[Fault]] = {
    cls.kind: cls
    for cls in (
        BrokerStop,
        BrokerKill,
        BrokerPause,
        DiskFill,
        DiskBreak,
        NetworkCut,
        NetworkSlow,
        ClusterDown,
        MasterKill,
        WorkerKill,
        DriverKill,
        SparkClusterDown,
        SinkDown,
    )
}
assert set(IMPLEMENTED) <= set(BY_NAME), "an implementation of a kind the catalogue does not list"


def in_scope(kind: str) -> bool:
    return kind in IMPLEMENTED


def not_yet() -> list[str]:
    """The catalogue's kinds without an implementation (they need changes to the lab first)."""
    return [k.name for k in FAULT_KINDS if k.name not in IMPLEMENTED]


def fault_class(kind: str) -> type[Fault]:
    if kind not in BY_NAME:
        raise FaultError(f"unknown fault kind {kind!r}; the catalogue's kinds: {', '.join(BY_NAME)}")
    if kind not in IMPLEMENTED:
        raise NotInScope(
            f"{kind} ({BY_NAME[kind].does}) is not implemented yet: it needs changes to the lab "
            "(its data directories, or its network between clients and brokers) that are not made"
        )
    return IMPLEMENTED[kind]


def make_fault(
    kind: str,
    lab: Lab,
    *,
    target: str | None = None,
    ids: list | None = None,
    failure_percentage: float | None = None,
    seed: int | str = 0,
    downtime: str | float | None = 0,
    instance_recovery: bool = True,
) -> Fault:
    """A fault of `kind` with its targets resolved on `lab` now (not injected).

    target: a Kafka or Spark cluster's name, or a sink's (influxdb, postgresql)
    ids: which instances: broker node ids, worker programs or addresses, driver ids or dagger names
    failure_percentage: instead of ids, that share of the cluster's instances (rounded up, at least
        one), chosen by `seed` the same way every time
    downtime: how long `Faults.run` keeps it before undoing it (30, "30s", "2m")
    instance_recovery: True: `Faults.run` undoes it at the end of its downtime; False: it stays
        until the drill's final rollback
    """
    cls = fault_class(kind)
    return cls.prepare(
        lab,
        target=target,
        ids=list(ids) if ids else None,
        failure_percentage=failure_percentage,
        seed=seed,
        downtime_s=parse_duration(downtime),
        instance_recovery=instance_recovery,
    )


def fault_from_dict(lab: Lab, data: dict) -> Fault:
    return fault_class(data["kind"]).from_dict(lab, data)
