"""What a fault can hit in a lab: its Kafka brokers per cluster, Spark masters and workers, sinks.

Read from what the playbooks wrote into the lab (`supervisor/components/*.json`, one per
service, and `clusters/*.json`, the Spark clusters) and from supervisord's own view of each
program; the lab is named explicitly (its folder and port base), never taken from globals, so two
labs on one machine are never confused.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import javaproperties

from dagger_runtime.errors import DaggerError

from .errors import FaultError
from .supervisor import Supervisor

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PORT_BASE = 19000
# every lab port is within this distance of its base (README: ports for DAGGER_LAB_PORT_BASE)
PORT_SPAN = 10000
SINK_KINDS = ("influxdb", "postgresql")


@dataclass(frozen=True)
class Component:
    name: str  # "kafka primary 1"
    kind: str  # kafka, spark, influxdb, postgresql, ...
    program: str  # supervisord's program
    address: str  # host:port it serves on
    cluster: str | None = None
    team: str | None = None  # a Spark cluster of the team's own within `cluster`
    role: str | None = None  # a Spark master or worker

    @property
    def host_port(self) -> tuple[str, int]:
        host, _, port = self.address.rpartition(":")
        return host, int(port)

    def answers(self, timeout_s: float = 1.0) -> bool:
        try:
            with socket.create_connection(self.host_port, timeout=timeout_s):
                return True
        except OSError:
            return False


@dataclass(frozen=True)
class Lab:
    dir: Path
    port_base: int

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Lab":
        """The lab `env` names (DAGGER_LAB_DIR, DAGGER_LAB_PORT_BASE), read now; `env` defaults to
        this process's environment."""
        env = os.environ if env is None else env
        return cls(
            Path(env.get("DAGGER_LAB_DIR") or REPO / ".lab").resolve(),
            int(env.get("DAGGER_LAB_PORT_BASE") or DEFAULT_PORT_BASE),
        )

    def as_dict(self) -> dict:
        return {"dir": str(self.dir), "port_base": self.port_base}

    @property
    def supervisor_conf(self) -> Path:
        return self.dir / "supervisor" / "supervisord.conf"

    def supervisor(self) -> Supervisor:
        if not self.supervisor_conf.is_file():
            raise FaultError(f"no lab at {self.dir} (no {self.supervisor_conf}): start it with `python -m lab up`")
        return Supervisor(self.supervisor_conf)

    def components(self) -> list[Component]:
        found = []
        for path in sorted((self.dir / "supervisor" / "components").glob("*.json")):
            d = json.loads(path.read_text())
            found.append(
                Component(
                    d["name"], d["kind"], d["program"], d["address"], d.get("cluster"), d.get("team"), d.get("role")
                )
            )
        if not found:
            raise FaultError(f"no lab at {self.dir}: it describes no component; start it with `python -m lab up`")
        # a lab folder of one lab with the port base of another would make faults hit one and
        # health checks ask the other
        strays = [c for c in found if not self.port_base <= c.host_port[1] < self.port_base + PORT_SPAN]
        if strays:
            raise FaultError(
                f"the lab at {self.dir} serves {strays[0].name} on {strays[0].address}, outside port base "
                f"{self.port_base}: DAGGER_LAB_DIR and DAGGER_LAB_PORT_BASE name different labs"
            )
        return found

    def component(self, program: str) -> Component:
        for c in self.components():
            if c.program == program:
                return c
        raise FaultError(f"the lab at {self.dir} has no program {program!r}")


# --- Kafka -------------------------------------------------------------------------------------


def kafka_clusters(lab: Lab) -> list[str]:
    return sorted({c.cluster for c in lab.components() if c.kind == "kafka" and c.cluster})


def brokers(lab: Lab, cluster: str, supervisor: Supervisor | None = None) -> dict[int, Component]:
    """The cluster's brokers by node id (read from each program's server.properties)."""
    found = [c for c in lab.components() if c.kind == "kafka" and c.cluster == cluster]
    if not found:
        raise FaultError(f"the lab has no Kafka cluster {cluster!r}; it has: {', '.join(kafka_clusters(lab))}")
    supervisor = supervisor or lab.supervisor()
    by_id = {}
    for c in found:
        try:
            node_id = int(broker_properties(supervisor, c.program)["node.id"])
        except (KeyError, ValueError) as e:
            raise FaultError(f"cannot read the node id of {c.program}: {e}") from None
        by_id[node_id] = c
    return dict(sorted(by_id.items()))


def broker_properties(supervisor: Supervisor, program: str) -> dict[str, str]:
    """A broker program's server.properties, read with a Java properties reader."""
    # kafka.Kafka's one argument, the last of the command, is the broker's config file
    config = Path(shlex.split(supervisor.config(program)["command"])[-1])
    try:
        with config.open() as f:
            return javaproperties.load(f)
    except (OSError, ValueError) as e:
        raise FaultError(f"cannot read {program}'s config {config}: {e}") from None


def bootstrap(components: list[Component]) -> str:
    return ",".join(c.address for c in components)


# --- Spark -------------------------------------------------------------------------------------


def spark_clusters(lab: Lab) -> list[str]:
    return sorted({c.cluster for c in lab.components() if c.kind == "spark" and c.cluster})


def spark_role(c: Component) -> str:
    if c.role in ("master", "worker"):
        return c.role
    raise FaultError(
        f"the lab does not say whether {c.program} is a Spark master or worker: "
        "bring it up to date with `python -m lab up`"
    )


@dataclass(frozen=True)
class SparkPart:
    """One Spark cluster within a name: the one any team shares, or a team's own (the lab's blue
    holds one per team, and a fault on blue hits them all)."""

    team: str | None
    master: Component
    workers: tuple[Component, ...]
    definition: object  # dagger_runtime.lifecycle.clusters.Cluster: its UI, UI key, secret

    @property
    def label(self) -> str:
        return self.definition.name + (f" ({self.team})" if self.team else "")


def spark_parts(lab: Lab, cluster: str) -> list[SparkPart]:
    """The Spark clusters a name stands for, each with its master, workers and definition."""
    from dagger_runtime.lifecycle.clusters import members

    nodes = [c for c in lab.components() if c.kind == "spark" and c.cluster == cluster]
    if not nodes:
        raise FaultError(f"the lab has no Spark cluster {cluster!r}; it has: {', '.join(spark_clusters(lab))}")
    try:
        definitions = {d.team: d for d in members(cluster, str(lab.dir / "clusters"))}
    except DaggerError as e:
        raise FaultError(str(e)) from None
    parts = []
    for team in sorted({c.team for c in nodes}, key=lambda t: t or ""):
        own = [c for c in nodes if c.team == team]
        masters = [c for c in own if spark_role(c) == "master"]
        whose = f" of team {team}" if team else ""
        if len(masters) != 1:
            raise FaultError(f"Spark cluster {cluster}{whose} has {len(masters)} masters in the lab, not one")
        if team not in definitions:
            raise FaultError(f"no definition of Spark cluster {cluster}{whose} in {lab.dir / 'clusters'}")
        parts.append(SparkPart(team, masters[0], tuple(c for c in own if spark_role(c) == "worker"), definitions[team]))
    return parts


# --- sinks -------------------------------------------------------------------------------------


def sink(lab: Lab, name: str) -> Component:
    """A sink's server by its component name (`influxdb`, `postgresql`) or program."""
    found = [c for c in lab.components() if c.kind in SINK_KINDS]
    for c in found:
        if name in (c.name, c.program, c.kind):
            return c
    raise FaultError(f"the lab has no sink {name!r}; its sinks: {', '.join(c.name for c in found)}")


# --- choosing a share of the instances ---------------------------------------------------------


def choose(ids: list, percentage: float, seed: int | str) -> list:
    """`percentage` of `ids` (rounded up, at least one), the same for the same seed on every run and
    Python version: each id is ranked by a hash of seed and id, not by `random`'s generator."""
    share = Fraction(str(percentage))  # exact: 50% of 3 is 1.5, rounded up to 2, never 1.4999
    if not 0 < share <= 100:
        raise FaultError(f"failure_percentage must be more than 0 and at most 100, not {percentage}")
    if not ids:
        raise FaultError("nothing to choose from")
    count = max(1, math.ceil(len(ids) * share / 100))
    ranked = sorted(ids, key=lambda i: hashlib.sha256(f"{seed}\0{i}".encode()).hexdigest())
    return sorted(ranked[:count])
