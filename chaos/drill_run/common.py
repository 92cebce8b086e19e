"""What every part of a drill run uses: the lab's access, a deployed dagger, the waits, Abort."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from dagger_runtime.lifecycle.failover import kafka_clusters
from lab import access

from ..playbook import REPO

# how long the verdict waits for the sink to hold every window the fed messages close
VERIFY_WAIT_S = 150.0
# a dagger's first batch after a deploy, at most
FIRST_BATCH_WAIT_S = 240.0
STANDBY_WARM_WAIT_S = 240.0  # how long the drill waits for its standbys to be warm before its clock starts
RECOVERY_GRACE_S = 240.0  # how long past the settle time the after phase waits for a failover


class Abort(Exception):
    """The drill stops before it can judge: the report's verdict is `aborted`, with this reason."""


def _utc(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class LabAccess:
    """What the runner reaches on a lab: its folder, ports, Spark and Kafka clusters, registry."""

    dir: Path
    port_base: int

    @classmethod
    def of(cls, lab_dir: str | Path, port_base: int | None = None) -> "LabAccess":
        base = port_base if port_base is not None else int(os.environ.get("DAGGER_LAB_PORT_BASE") or 19000)
        return cls(Path(lab_dir).resolve(), base)

    @property
    def clusters_dir(self) -> str:
        return str(self.dir / "clusters")

    @property
    def registry_url(self) -> str:
        path = self.dir / "secrets" / "registry.url"
        if not path.is_file():
            raise Abort(f"the lab at {self.dir} has no registry ({path}): is it up? (python -m lab up)")
        return path.read_text().strip()

    def faults_lab(self):
        from ..faults import Lab

        return Lab(self.dir, self.port_base)

    def kafka(self) -> dict:
        return kafka_clusters(self.clusters_dir)

    def login(self, principal: str = "admin", cluster: str = "primary") -> dict:
        return access.kafka_python(principal, cluster, lab=self.dir)

    def sink_address(self, kind: str) -> str:
        """host:port of the lab's influxdb or postgresql."""
        for c in self.faults_lab().components():
            if c.kind == kind:
                return c.address
        raise Abort(f"the lab has no {kind}")


# -- the daggers, pointed at the lab ------------------------------------------------------------


def lab_spec(deployment, *, name: str, lab: LabAccess, kafka_cluster: str) -> dict:
    """The deployment's spec (a YAML dagger spec), renamed and pointed at the lab: its streams read
    `kafka_cluster` as the spec's team, its sink writes to the lab's servers under the run's name.
    Built as data and written with a YAML writer."""
    job = yaml.safe_load(Path(deployment.spec).read_text())
    if not isinstance(job, dict):
        raise Abort(f"{deployment.spec}: the runner deploys YAML dagger specs only")
    team = job.get("team")
    if not team:
        raise Abort(f"{deployment.spec}: a drill's dagger needs a team (its Kafka login on the lab)")
    bootstrap = lab.kafka()[kafka_cluster].bootstrap_servers
    job["name"] = name
    job["dead_letter_topic"] = f"{team}-{name}-dlq"
    if getattr(deployment, "watermark_delay", None):
        job["watermark_delay"] = f"{int(deployment.watermark_delay)}s"
    for stream in job["streams"]:
        stream.setdefault("kafka", {}).update(
            bootstrap_servers=bootstrap,
            auto_offset_reset="latest",
            group_id=access.consumer_group(team, name),
            client=access.team_client(team),
        )
    sink = job.get("sink", {}).get("type")
    if sink == "influx":  # the team's own database, as the team's own InfluxDB user
        job["sink"] = {
            "type": "influx",
            "influx": access.team_influx_sink(team, f"http://{lab.sink_address('influxdb')}", name.replace("-", "_")),
        }
    elif sink == "kafka":
        job["sink"]["kafka"].update(brokers=bootstrap, topic=f"{team}-{name}", client=access.team_client(team))
    elif sink != "log":
        raise Abort(f"{deployment.spec}: the runner verifies influx and kafka sinks; {sink} is not supported yet")
    return job


@dataclass
class Deployed:
    """One of the drill's daggers, as deployed: the playbook's name and the registry's."""

    playbook_name: str
    name: str
    team: str
    cluster: str  # where it was deployed (a failover's target is in the registry)
    spec_path: Path
    job: dict
    failover_started: float | None = None
    failover_done: float | None = None
    failover_error: str | None = None
    failover_version: int | None = None
    failover_timings: dict = field(default_factory=dict)  # check, stop, submit (seconds)
    first_batch_after: float | None = None
    first_batch_seconds: float | None = None  # how long that batch itself took
    outcome: list[str] = field(default_factory=list)
    # the move back (failover.fail_back): started, the first batch of the version it submitted
    fail_back_started: float | None = None
    fail_back_version: int | None = None
    fail_back_first_batch: float | None = None
    fail_back_error: str | None = None


def produced_rate(frame, times: list[float]) -> list[float | None]:
    """Messages a second the feeders had acknowledged, per sample interval (by their Kafka
    time, i.e. when they were sent: a message buffered through an outage counts when it was sent)."""
    import numpy as np

    sent = np.sort(frame["timestamp_ms"].dropna().to_numpy(dtype="float64") / 1000.0)
    out: list[float | None] = [None]
    for a, b in zip(times, times[1:]):
        n = np.searchsorted(sent, b, side="right") - np.searchsorted(sent, a, side="right")
        out.append(round(float(n) / (b - a), 3))
    return out


def _watermark_delay_ms(spec_path: Path) -> int:
    from dagger_runtime.config import load_job

    return int(load_job(spec_path).watermark_delay_ms)


def _git_commit() -> str | None:
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=5
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        return None
