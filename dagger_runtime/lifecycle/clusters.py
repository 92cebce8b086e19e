"""The Spark clusters daggers are deployed to, by name.

A name is one cluster any team's daggers may run on, or a failure domain with a cluster of each
team's own (the lab's blue and green: a team's daggers run, and fail over, between its own two).
Each cluster is one JSON or YAML file in the clusters directory (`--clusters`, $DAGGER_CLUSTERS,
default `<repo>/.lab/clusters`): the lab's Spark role writes one per cluster; for a team cluster
in the cloud, write one from the team stack's outputs. Paths are as the cluster's workers see
them, because drivers run on the workers (spark-submit's cluster deploy mode).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import DaggerError
from ..jvm import REPO_ROOT
from ..names import check_team

NAME = r"^[a-z][a-z0-9-]{0,30}$"


class Cluster(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(pattern=NAME)]
    team: str | None = None  # the team whose own cluster it is (dagger_runtime.names)
    master: Annotated[str, Field(pattern=r"^spark://[A-Za-z0-9.-]+:\d{1,5}$")]
    web_ui: Annotated[str, Field(pattern=r"^https?://[A-Za-z0-9.-]+:\d{1,5}$")]
    # the Python that runs drivers and Python workers, and the runtime's jars (make jars' .jvm/)
    python: str
    jvm_dir: str
    checkpoint_root: str
    # where deploy puts job specs for the drivers to read (shared with the workers)
    spec_dir: str
    # the host daggers serve /metrics on, and the ports deploy hands out
    metrics_host: str = "127.0.0.1"
    metrics_ports: tuple[int, int]
    # where Prometheus reads its file_sd targets (optional)
    prometheus_targets: str | None = None
    # the Spark installation spark-submit runs from here (default: pyspark's own)
    spark_home: str | None = None
    # the cluster's Spark secret (spark.authenticate) and its UIs' JWS key, each a file only the
    # deploy tooling can read (none: a cluster without authentication, e.g. a test's own)
    auth_secret_file: str | None = None
    ui_key_file: str | None = None

    @field_validator(
        "python",
        "jvm_dir",
        "checkpoint_root",
        "spec_dir",
        "prometheus_targets",
        "spark_home",
        "auth_secret_file",
        "ui_key_file",
    )
    @classmethod
    def _absolute(cls, value):
        if value is not None and not (value.startswith(("/", "gs://"))):
            raise ValueError("must be an absolute path")
        if value is not None and any(ord(c) < 32 for c in value):
            raise ValueError("must not contain control characters")
        return value

    @field_validator("team")
    @classmethod
    def _team(cls, value):
        if value is not None:
            check_team(value)
        return value

    @field_validator("metrics_ports")
    @classmethod
    def _ports(cls, value):
        low, high = value
        if not 1024 <= low <= high <= 65535:
            raise ValueError("must be [first, last] with 1024 <= first <= last <= 65535")
        return value


def clusters_dir(value: str | None = None) -> Path:
    return Path(
        value
        or os.environ.get("DAGGER_CLUSTERS")
        or Path(os.environ.get("DAGGER_LAB_DIR") or REPO_ROOT / ".lab") / "clusters"
    )


def load_all(directory: str | None = None) -> list[Cluster]:
    """Every cluster definition of the folder. A name is either one cluster any team's daggers may
    run on, or a failure domain holding a cluster per team (the lab's blue and green): never both."""
    root = clusters_dir(directory)
    found: dict[tuple[str, str | None], tuple[Path, Cluster]] = {}
    for path in sorted(root.glob("*")):
        if path.suffix not in (".json", ".yaml", ".yml"):
            continue
        try:
            data = yaml.safe_load(path.read_text())  # JSON is YAML
            cluster = Cluster.model_validate(data)
        except (yaml.YAMLError, OSError) as e:
            raise DaggerError(f"{path}: cannot read the cluster definition: {e}") from None
        except ValidationError as e:
            problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'file'}: {err['msg']}" for err in e.errors())
            raise DaggerError(f"{path}: {problems}") from None
        key = (cluster.name, cluster.team)
        if key in found:
            whose = f" of team {cluster.team}" if cluster.team else ""
            raise DaggerError(f"{path}: cluster {cluster.name}{whose} is defined twice (also in {found[key][0]})")
        mixed = next(
            (
                p
                for (name, team), (p, _) in found.items()
                if name == cluster.name and (team is None) != (cluster.team is None)
            ),
            None,
        )
        if mixed is not None:
            raise DaggerError(
                f"{path}: cluster {cluster.name} is defined both for any team and for a team "
                f"(also in {mixed}): a name holds one shared cluster or one cluster per team"
            )
        found[key] = (path, cluster)
    return [cluster for _, cluster in found.values()]


def cluster_names(directory: str | None = None) -> list[str]:
    return sorted({c.name for c in load_all(directory)})


def members(name: str, directory: str | None = None) -> list[Cluster]:
    """The clusters a name stands for: the shared one, or one per team (a fault on blue hits them all)."""
    found = [c for c in load_all(directory) if c.name == name]
    if not found:
        raise DaggerError(_unknown(name, directory))
    return sorted(found, key=lambda c: c.team or "")


def load_clusters(directory: str | None = None, team: str | None = None) -> dict[str, Cluster]:
    """The clusters a team's daggers may run on, by name: in each failure domain the team's own
    cluster, or the one any team's daggers share."""
    return {c.name: c for c in load_all(directory) if c.team is None or c.team == team}


def pick(clusters: list[Cluster], name: str, team: str | None) -> Cluster | None:
    """Of `clusters`, the one a dagger of `team` runs on when it is deployed to `name`: the team's
    own there, or the one any team shares."""
    return next((c for c in clusters if c.name == name and c.team in (None, team)), None)


def get_cluster(name: str, directory: str | None = None, team: str | None = None) -> Cluster:
    """The cluster a dagger of `team` runs on when it is deployed to `name`."""
    every = [c for c in load_all(directory) if c.name == name]
    if not every:
        raise DaggerError(_unknown(name, directory))
    chosen = pick(every, name, team)
    if chosen is None:
        teams = ", ".join(sorted(c.team or "" for c in every))
        raise DaggerError(
            f"cluster {name} has no Spark cluster for "
            f"{'team ' + team if team else 'a dagger without a team (set `team:` in its spec)'}; "
            f"it holds the clusters of: {teams}"
        )
    return chosen


def _unknown(name: str, directory: str | None) -> str:
    known = (
        ", ".join(cluster_names(directory))
        or f"none (is the lab up? `make lab-up`; looked in {clusters_dir(directory)})"
    )
    return f"unknown cluster {name!r}; known clusters: {known}"
