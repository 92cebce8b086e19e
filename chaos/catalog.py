"""The one list of fault kinds a drill can inject: what each breaks and what undoes it.

Playbook validation, the fault implementations and the report all read this list; a kind is
added here first.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FaultKind:
    name: str
    system: str          # kafka | spark | sink
    target: str          # what one instance of the fault hits
    does: str
    undo: str


FAULT_KINDS: tuple[FaultKind, ...] = (
    FaultKind("broker-stop", "kafka", "broker", "stops brokers cleanly (controlled shutdown)", "starts them"),
    FaultKind("broker-kill", "kafka", "broker", "kills brokers with SIGKILL and keeps them down", "starts them"),
    FaultKind("broker-pause", "kafka", "broker", "freezes brokers with SIGSTOP: hung, sockets open",
              "SIGCONT"),
    FaultKind("disk-fill", "kafka", "broker", "fills the filesystem of a broker's data directory",
              "frees the space and restarts the broker if it stopped"),
    FaultKind("disk-break", "kafka", "broker", "makes a broker's data directory fail on write",
              "makes it writable and restarts the broker"),
    FaultKind("network-cut", "kafka", "broker", "cuts brokers off their clients", "reconnects them"),
    FaultKind("network-slow", "kafka", "broker", "adds latency to brokers' client traffic", "removes it"),
    FaultKind("cluster-down", "kafka", "cluster", "stops every broker of a Kafka cluster", "starts them"),
    FaultKind("master-kill", "spark", "master", "kills a Spark master with SIGKILL", "starts it"),
    FaultKind("worker-kill", "spark", "worker", "kills a Spark worker with SIGKILL (its executors die)",
              "starts it"),
    FaultKind("driver-kill", "spark", "driver", "kills a dagger's driver with SIGKILL (--supervise restarts it)",
              "nothing to undo unless it stays down: then it is redeployed"),
    FaultKind("spark-cluster-down", "spark", "cluster", "stops a Spark cluster's master and workers",
              "starts them"),
    FaultKind("sink-down", "sink", "sink", "stops a sink's server (InfluxDB, PostgreSQL)", "starts it"),
)

BY_NAME = {k.name: k for k in FAULT_KINDS}
