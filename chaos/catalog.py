"""The one list of fault kinds a drill can inject: what each breaks and what undoes it.

Playbook validation, the fault implementations and the report all read this list; a kind is
added here first.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FaultKind:
    name: str
    system: str  # kafka | spark | sink
    target: str  # what one instance of the fault hits
    does: str
    undo: str


FAULT_KINDS: tuple[FaultKind, ...] = (
    FaultKind("broker-stop", "kafka", "broker", "stops brokers cleanly (controlled shutdown)", "starts them"),
    FaultKind("broker-kill", "kafka", "broker", "kills brokers with SIGKILL and keeps them down", "starts them"),
    FaultKind("broker-pause", "kafka", "broker", "freezes brokers with SIGSTOP: hung, sockets open", "SIGCONT"),
    FaultKind(
        "disk-fill",
        "kafka",
        "broker",
        "fills the filesystem under a broker's data directory: writes fail with ENOSPC (a full overlay over it)",
        "removes the full layer and restarts the broker",
    ),
    FaultKind(
        "disk-break",
        "kafka",
        "broker",
        "makes a broker's data directory fail on write (EROFS: a read-only mount over it)",
        "removes the mount and restarts the broker",
    ),
    FaultKind(
        "network-cut",
        "kafka",
        "broker",
        "drops every packet to and from brokers' client port "
        "(nftables on loopback; the controller quorum still sees them)",
        "deletes the rules",
    ),
    FaultKind(
        "network-slow",
        "kafka",
        "broker",
        "throttles brokers' client traffic to a congested link's bandwidth (tc htb on loopback)",
        "removes the throttle",
    ),
    FaultKind("cluster-down", "kafka", "cluster", "stops every broker of a Kafka cluster", "starts them"),
    FaultKind("master-kill", "spark", "master", "kills a Spark master with SIGKILL", "starts it"),
    FaultKind("worker-kill", "spark", "worker", "kills a Spark worker with SIGKILL (its executors die)", "starts it"),
    FaultKind(
        "driver-kill",
        "spark",
        "driver",
        "kills a dagger's driver with SIGKILL (--supervise restarts it)",
        "nothing to undo unless it stays down: then it is redeployed",
    ),
    FaultKind("spark-cluster-down", "spark", "cluster", "stops a Spark cluster's master and workers", "starts them"),
    FaultKind("sink-down", "sink", "sink", "stops a sink's server (InfluxDB, PostgreSQL)", "starts it"),
)

BY_NAME = {k.name: k for k in FAULT_KINDS}
