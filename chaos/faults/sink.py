"""Sink faults: a sink's server (InfluxDB, PostgreSQL) stopped; back when it answers its ping."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

from dagger_runtime import http_client

from .base import Fault, start_programs, stop_programs
from .errors import FaultError
from .targets import Component, Lab, sink


def ping(lab: Lab, server: Component) -> str | None:
    """None when the server answers its ping, else why not."""
    host, port = server.host_port
    if server.kind == "influxdb":
        try:
            status = http_client.get(f"http://{host}:{port}/ping", timeout=3).status_code
            return None if status == 204 else f"InfluxDB /ping answers {status}"
        except http_client.Error as e:
            return f"InfluxDB /ping at {host}:{port} fails ({e})"
    if server.kind == "postgresql":
        # pg_isready: the server accepts connections, without logging in; the one next to the
        # lab's postgres binary, so client and server are of one release
        command = shlex.split(lab.supervisor().config(server.program)["command"])
        binary = next((Path(c).with_name("pg_isready") for c in command if c.endswith("/postgres")), None)
        tool = str(binary) if binary and binary.exists() else shutil.which("pg_isready")
        if tool is None:
            raise FaultError("no pg_isready to ping PostgreSQL with")
        done = subprocess.run(
            [tool, "-h", host, "-p", str(port), "-t", "3"], capture_output=True, text=True, timeout=10
        )
        return (
            None if done.returncode == 0 else f"PostgreSQL at {host}:{port}: {done.stdout.strip() or done.returncode}"
        )
    raise FaultError(f"no ping for a {server.kind} sink")


class SinkDown(Fault):
    kind = "sink-down"

    @classmethod
    def prepare(cls, lab: Lab, *, target, ids, failure_percentage, seed, **settings) -> "SinkDown":
        if ids or failure_percentage is not None:
            raise FaultError("sink-down stops one sink's server: name it as the target, no ids")
        if not target:
            raise FaultError("sink-down: name the sink (target): influxdb or postgresql")
        server = sink(lab, target)
        return cls(lab, programs=[server.program], label=server.name, params={"sink": server.program}, **settings)

    def _inject(self) -> None:
        stop_programs(self, self.programs)

    def _restore(self) -> None:
        start_programs(self, [self.affected])

    def health(self) -> list[str]:
        why = ping(self.lab, self.lab.component(self.params["sink"]))
        return [why] if why else []
