"""deploy, edit, stop, status: a dagger's life on a named cluster, recorded in the registry.

Each operation checks everything it can before it touches the cluster (the spec is validated
like `dagger validate`, the cluster answers, the name is free or the dagger exists), then acts
through Spark's interfaces (spark.py) and records what happened.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Collection
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import http_client
from ..errors import DaggerError
from ..launches import local_root
from ..lease import fence, held, holder, ready_standby
from ..sinks import check_sink
from . import spark as spark_api
from .clusters import Cluster, get_cluster, load_all, pick
from .failover import kafka_clusters, moved_spec, replay_from_ms
from .registry import Dagger, Registry
from .state import Start, committed_offsets, committed_watermark, crash_loop, first_start, starting_options, state_key

# driver states in which the driver (or its relaunch) still holds the checkpoint
LIVE_STATES = ("SUBMITTED", "RUNNING", "RELAUNCHING", "UNKNOWN")


class DriverStillAnswers(DaggerError):
    """A Spark failover refused because the lost cluster's driver still serves its /metrics: two
    drivers on one checkpoint would both write it. It clears when that driver dies (retry)."""


@dataclass
class Outcome:
    """What an operation did, for people (lines) and for machines (data)."""

    lines: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)

    def say(self, line: str) -> None:
        self.lines.append(line)


def load_spec(path: str):
    """The job file, fully validated (config, schema, SQL, sink), and its text."""
    from ..config import load_job
    from ..plan import plan_job
    from ..validate import analyze

    job = load_job(path)
    plan = plan_job(job)
    check_sink(plan, analyze(plan))
    return plan, Path(path).read_text()


def _store_spec(cluster: Cluster, name: str, number: int, text: str, suffix: str) -> str:
    """Where the driver reads the spec: <spec_dir>/<name>/v<N>/<name><suffix> (a spec without a
    name takes it from its file name), readable by the owner and spec_dir's group: the drivers run
    as the workers' unprivileged user, whose group the spark role gives spec_dir (no one else's)."""
    if "://" in cluster.spec_dir:
        raise DaggerError(
            f"cluster {cluster.name}: spec_dir must be a folder the workers share, not {cluster.spec_dir}"
        )
    root = Path(cluster.spec_dir)
    group = root.stat().st_gid if root.is_dir() else -1
    folder = root / name / f"v{number}"
    folder.mkdir(parents=True, exist_ok=True, mode=0o750)
    for part in (root / name, folder):
        os.chown(part, -1, group)
        part.chmod(0o750)
    path = folder / f"{name}{suffix}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
    with os.fdopen(fd, "w") as f:
        os.fchown(f.fileno(), -1, group)
        os.fchmod(f.fileno(), 0o640)
        f.write(text)
    return str(path)


# Ports chosen but not yet recorded in the registry (a submit takes seconds): two deploys or
# failovers running at once in one process (a drill moves its daggers together) must not both
# take the first free port, or one driver dies with "Address already in use", over and over.
_PORTS_LOCK = threading.Lock()
_RESERVED: set[tuple[str, int]] = set()


def _free_port(registry: Registry, cluster: Cluster, keep: int | None = None) -> int:
    used = registry.ports_in_use(cluster.name) - ({keep} if keep else set())
    used |= {port for c, port in _RESERVED if c == cluster.name}
    if keep and cluster.metrics_ports[0] <= keep <= cluster.metrics_ports[1] and keep not in used:
        return keep
    for port in range(cluster.metrics_ports[0], cluster.metrics_ports[1] + 1):
        if port not in used and not _answers(cluster.metrics_host, port):
            return port
    raise DaggerError(
        f"cluster {cluster.name}: every metrics port in {cluster.metrics_ports} is taken; "
        "stop a dagger or widen metrics_ports"
    )


def _answers(host: str, port: int) -> bool:
    """Something listens there already (a driver the registry thinks stopped, another program)."""
    try:
        with socket.create_connection((host, port), timeout=0.3):
            return True
    except OSError:
        return False


@contextmanager
def _reserved_port(registry: Registry, cluster: Cluster, keep: int | None = None):
    """A free metrics port, held from its choice until the caller has recorded it in the registry."""
    with _PORTS_LOCK:
        port = _free_port(registry, cluster, keep)
        _RESERVED.add((cluster.name, port))
    try:
        yield port
    finally:
        with _PORTS_LOCK:
            _RESERVED.discard((cluster.name, port))


def _write_target(cluster: Cluster, dagger: str, team: str | None, port: int | None) -> None:
    """Prometheus file_sd: one file per dagger, written whole then renamed (Prometheus may read
    at any moment); removed when the dagger stops."""
    if not cluster.prometheus_targets:
        return
    folder = Path(cluster.prometheus_targets)
    target = folder / f"{dagger}.json"
    if port is None:
        target.unlink(missing_ok=True)
        return
    folder.mkdir(parents=True, exist_ok=True)
    labels = {"dagger": dagger, "team": team or "", "cluster": cluster.name}
    tmp = folder / f".{dagger}.json.tmp"
    tmp.write_text(json.dumps([{"targets": [f"{cluster.metrics_host}:{port}"], "labels": labels}], indent=2))
    tmp.replace(target)


def _wait_ended(cluster: Cluster, driver_id: str, timeout_s: float = 90.0) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        state = spark_api.master_state(cluster).drivers.get(driver_id, {}).get("state", "UNKNOWN")
        if state not in LIVE_STATES or time.monotonic() > deadline:
            return state
        time.sleep(1)


def _check_team(plan, cluster: Cluster, current: Dagger | None) -> None:
    """A team's dagger runs on its team's cluster (a cluster without a team, like the lab's, takes
    any), and a dagger's name stays with the team that first deployed it."""
    team = plan.job.team
    if cluster.team and team != cluster.team:
        raise DaggerError(
            f"cluster {cluster.name} belongs to team {cluster.team}; the job's team is "
            f"{team or 'not set'} (set `team: {cluster.team}` if it is theirs)"
        )
    if current is not None and current.team != team:
        raise DaggerError(
            f"dagger {plan.job.name} belongs to team {current.team or 'none'}; this spec says team "
            f"{team or 'none'}: a dagger cannot change teams (deploy it under another name)"
        )


def _submit(
    cluster: Cluster,
    plan,
    text: str,
    *,
    number: int,
    checkpoint: str,
    starting: dict | None,
    port: int,
    passed_env: tuple[str, ...],
    emit_after_ms: int | None = None,
    standby: bool = False,
) -> tuple[str, str]:
    suffix = ".properties" if plan.job.origin == "dagger-properties" else ".yaml"
    spec_path = _store_spec(cluster, plan.job.name, number, text, suffix)
    argv = spark_api.submit_argv(
        cluster,
        name=plan.job.name,
        spec_path=spec_path,
        checkpoint=checkpoint,
        metrics_port=port,
        parallelism=plan.job.parallelism,
        executor_mb=spark_api.executor_memory_mb(plan.job.state_rows),
        starting=starting,
        emit_after_ms=emit_after_ms,
        version=number,
        standby=standby,
    )
    return spark_api.submit(argv, passed_env, cluster), suffix


def _standby_cluster(
    name: str | None, active: Cluster, checkpoint: str, plan, clusters_dir: str | None
) -> Cluster | None:
    """The cluster a standby driver may wait on, checked before anything is submitted: another
    cluster of the team's, alive with room, whose drivers write where this checkpoint is, and a
    checkpoint on a shared folder (the lease is a file lock; see dagger_runtime/lease.py)."""
    if name is None:
        return None
    standby = get_cluster(name, clusters_dir, team=plan.job.team)
    if standby.name == active.name:
        raise DaggerError(f"--standby {name}: the standby runs on another cluster than the dagger ({active.name})")
    if local_root(checkpoint) is None:
        raise DaggerError(
            f"--standby {name}: the checkpoint {checkpoint} is not a folder the clusters share; "
            "a standby's fence is a file lock, which object storage does not have"
        )
    if not _under_root(checkpoint, standby):
        raise DaggerError(
            f"--standby {name}: cluster {name}'s drivers write under {standby.checkpoint_root}, "
            f"not where {plan.job.name}'s checkpoint is ({checkpoint})"
        )
    _check_team(plan, standby, None)
    _check_alive(standby, plan)
    return standby


def _under_root(checkpoint: str, cluster: Cluster) -> bool:
    """The local checkpoint is below the cluster's checkpoint root (where its drivers write)."""
    return checkpoint.removeprefix("file://").startswith(cluster.checkpoint_root.rstrip("/") + "/")


def _add_standby(
    registry: Registry,
    cluster: Cluster,
    plan,
    text: str,
    *,
    number: int,
    checkpoint: str,
    starting: dict | None,
    passed_env: tuple[str, ...],
    emit_after_ms: int | None,
    actor: str,
    action: str,
    out: "Outcome",
) -> None:
    """A second driver of version `number` on `cluster`, waiting for the checkpoint's lease."""
    with _reserved_port(registry, cluster) as port:
        driver, _ = _submit(
            cluster,
            plan,
            text,
            number=number,
            checkpoint=checkpoint,
            starting=starting,
            port=port,
            passed_env=passed_env,
            emit_after_ms=emit_after_ms,
            standby=True,
        )
        registry.record_standby(
            plan.job.name,
            version=number,
            cluster=cluster.name,
            submission_id=driver,
            metrics_port=port,
            actor=actor,
            action=action,
        )
    out.say(
        f"  standby    {driver} on {cluster.name}, waiting for the checkpoint's lease "
        f"(metrics http://{cluster.metrics_host}:{port}/metrics once it takes over)"
    )
    out.data["standby"] = {"cluster": cluster.name, "submission_id": driver, "metrics_port": port}


def _retire_standby(
    registry: Registry, name: str, *, actor: str, action: str, clusters_dir: str | None, why: str
) -> str | None:
    """Kill the dagger's standby driver, if it has one (the checkpoint's fence already excludes
    its version, so one that cannot be reached now never writes). Says what was done."""
    standby = registry.standby(name)
    if standby is None:
        return None
    said = f"standby {standby.submission_id} on {standby.cluster} killed"
    try:
        dagger = registry.get(name)
        cluster = get_cluster(standby.cluster, clusters_dir, team=dagger.team if dagger else None)
        state = spark_api.master_state(cluster, timeout=3.0).drivers.get(standby.submission_id, {}).get("state")
        if state in LIVE_STATES:
            spark_api.kill(cluster, standby.submission_id)
    except DaggerError as e:
        said = (
            f"standby {standby.submission_id} on {standby.cluster} could not be reached ({e}); fenced, it "
            "ends if it ever takes the lease"
        )
    registry.drop_standby(name, actor=actor, action=action, detail=f"{said}; {why}")
    return said


def deploy(
    registry: Registry,
    spec_path: str,
    cluster_name: str,
    *,
    actor: str,
    clusters_dir: str | None = None,
    start: Start | None = None,
    standby: str | None = None,
) -> Outcome:
    plan, text = load_spec(spec_path)
    name = plan.job.name
    cluster = get_cluster(cluster_name, clusters_dir, team=plan.job.team)
    existing = registry.get(name)
    if existing and existing.running:
        raise DaggerError(
            f"dagger {name} already runs on {existing.cluster} (version {existing.version}); "
            f"change it with `dagger edit {name} {spec_path}`, or stop it first"
        )
    _check_team(plan, cluster, existing)
    _check_alive(cluster, plan)
    if existing:  # deployed before and stopped: resume it like an edit (its checkpoint if still valid)
        return _redeploy(
            registry,
            plan,
            text,
            existing,
            cluster,
            start=start,
            actor=actor,
            action="deploy",
            clusters_dir=clusters_dir,
            standby=standby,
        )
    if start is not None and start.kind == "committed":
        raise DaggerError("--from committed needs a previous version of the dagger to take offsets from")
    number = 1
    key = state_key(plan)
    checkpoint = f"{cluster.checkpoint_root.rstrip('/')}/{name}/v{number}"
    standby_cluster = _standby_cluster(standby, cluster, checkpoint, plan, clusters_dir)
    start = start or Start("job")
    starting = starting_options(start, plan.job.streams)
    passed = spark_api.referenced_env(
        text, plan.job.team, "properties" if plan.job.origin == "dagger-properties" else "yaml"
    )
    with _reserved_port(registry, cluster) as port:
        started = time.monotonic()
        driver, suffix = _submit(
            cluster, plan, text, number=number, checkpoint=checkpoint, starting=starting, port=port, passed_env=passed
        )
        try:
            registry.record_version(
                name=name,
                team=plan.job.team,
                cluster=cluster.name,
                spec=text,
                spec_format=suffix,
                spec_digest=hashlib.sha256(text.encode()).hexdigest(),
                state_key=key,
                checkpoint=checkpoint,
                start=str(start),
                actor=actor,
                submission_id=driver,
                metrics_port=port,
                action="deploy",
                new=True,
            )
        except DaggerError:
            # another deploy of the name won the race: this driver must not run unrecorded
            spark_api.kill(cluster, driver)
            raise
    _write_target(cluster, name, plan.job.team, port)
    out = Outcome()
    out.say(f"deployed {name} version {number} to {cluster.name} as {driver}")
    out.say(f"  checkpoint {checkpoint} (new, reading {start})")
    out.say(f"  metrics    http://{cluster.metrics_host}:{port}/metrics")
    out.data = {
        "dagger": name,
        "version": number,
        "cluster": cluster.name,
        "team": plan.job.team,
        "submission_id": driver,
        "checkpoint": checkpoint,
        "metrics_port": port,
        "submitted_after_s": time.monotonic() - started,
        "started_at": started,
    }
    if standby_cluster is not None:
        _add_standby(
            registry,
            standby_cluster,
            plan,
            text,
            number=number,
            checkpoint=checkpoint,
            starting=starting,
            passed_env=passed,
            emit_after_ms=None,
            actor=actor,
            action="deploy",
            out=out,
        )
    return out


def _check_alive(cluster: Cluster, plan=None) -> None:
    """The cluster's master is alive with workers, and (given the dagger's plan) has room for it now."""
    state = spark_api.master_state(cluster)
    if state.status != "ALIVE" or state.workers_alive == 0:
        raise DaggerError(
            f"cluster {cluster.name} cannot take a dagger: master {state.status}, {state.workers_alive} workers alive"
        )
    executor_mb = spark_api.executor_memory_mb(plan.job.state_rows) if plan is not None else 0
    if plan is not None and not spark_api.fits(list(state.workers_free), plan.job.parallelism, executor_mb):
        p = plan.job.parallelism
        free = spark_api.describe_free(state.workers_free)
        raise DaggerError(
            f"cluster {cluster.name} has no room for {plan.job.name} now: it needs a core and "
            f"{spark_api.DRIVER_MEMORY_MB} MB for its driver and {p} cores (its parallelism) and "
            f"{executor_mb} MB for its executor; the workers have {free} free. Stop a "
            f"dagger there, use another cluster, or lower parallelism (Spark would leave it waiting for "
            f"cores without a word)"
        )


def edit(
    registry: Registry,
    name: str,
    spec_path: str,
    *,
    actor: str,
    clusters_dir: str | None = None,
    start: Start | None = None,
    cluster_name: str | None = None,
) -> Outcome:
    """Redeploy a changed spec (or move the dagger to another cluster): the same checkpoint when
    the change leaves its state usable, else a new one from `start` (default: the old version's
    committed offsets)."""
    plan, text = load_spec(spec_path)
    if plan.job.name != name:
        raise DaggerError(
            f"{spec_path} is the job {plan.job.name!r}, not {name!r}: a dagger's name cannot change "
            "(deploy it as a new dagger and stop the old one)"
        )
    current = registry.get(name)
    if current is None:
        raise DaggerError(f"no dagger named {name} in the registry ({registry.where}); deploy it first")
    cluster = get_cluster(cluster_name or current.cluster, clusters_dir, team=plan.job.team)
    _check_team(plan, cluster, current)
    if cluster.name != current.cluster or not current.running:
        _check_alive(cluster, plan)  # (on its own running cluster, the old driver's room is freed first)
    return _redeploy(
        registry,
        plan,
        text,
        current,
        cluster,
        start=start,
        actor=actor,
        action="edit",
        clusters_dir=clusters_dir,
        standby=_kept_standby(registry, name, cluster),
    )


def _kept_standby(registry: Registry, name: str, cluster: Cluster) -> str | None:
    """The cluster of the dagger's standby, for its next version (none when the dagger moves there)."""
    standby = registry.standby(name)
    return standby.cluster if standby is not None and standby.cluster != cluster.name else None


def _redeploy(
    registry: Registry,
    plan,
    text: str,
    current: Dagger,
    cluster: Cluster,
    *,
    start: Start | None,
    actor: str,
    action: str,
    clusters_dir: str | None,
    emit_after_ms: int | None = None,
    old_cluster_lost: bool = False,
    standby: str | None = None,
) -> Outcome:
    """Stop the running version (unless its cluster is lost: then the caller has made sure its
    driver is gone, and the fence makes sure it does not write again) and start `plan` as the next
    version, with a standby on `standby` when given."""
    name = plan.job.name
    checked_from = time.monotonic()
    previous = registry.version(name)
    out = Outcome()
    key = state_key(plan)
    number = current.version + 1
    if previous.spec == text and current.running and cluster.name == current.cluster and start is None:
        out.say(f"{name}: the spec is unchanged (version {current.version}); nothing to do")
        out.data = {"dagger": name, "version": current.version, "changed": False}
        return out
    # the team's drivers write under the cluster's checkpoint root only (the lab's, per team): a
    # checkpoint elsewhere (a lab from before teams had their own) is read for offsets, not reused
    reachable = current.checkpoint.startswith(cluster.checkpoint_root.rstrip("/") + "/")
    keep = key == previous.state_key and start is None and reachable
    if keep:
        checkpoint = current.checkpoint
        how = "kept: the query, its streams and watermark are unchanged, so the old state stays valid"
    else:
        if key != previous.state_key:
            why = (
                "the query, its streams or its watermark changed, so the open windows and offsets in the old "
                "checkpoint cannot be used"
            )
        elif start is not None:
            why = "a start position was asked for"
        else:
            why = f"the old checkpoint is outside {cluster.checkpoint_root}, where this cluster's drivers write"
        start = start or Start("committed")
        checkpoint = f"{cluster.checkpoint_root.rstrip('/')}/{name}/v{number}"
        how = f"new: {why}; reading {start}"
    try:
        standby_cluster = _standby_cluster(standby, cluster, checkpoint, plan, clusters_dir)
    except DaggerError as e:
        if action == "deploy":
            raise
        standby_cluster = None  # an edit or a move goes on without it, and says so
        out.say(f"  no standby for version {number}: {e}")
    # everything that can be checked before the old version stops
    passed = spark_api.referenced_env(
        text, plan.job.team, "properties" if plan.job.origin == "dagger-properties" else "yaml"
    )
    with _reserved_port(registry, cluster, current.metrics_port if cluster.name == current.cluster else None) as port:
        if not keep and start.kind == "committed":
            starting_options(start, plan.job.streams, committed_offsets(current.checkpoint))
        timings = {"check": time.monotonic() - checked_from}
        # one writer per checkpoint: the old version's drivers are fenced off it, its standby
        # killed, and its driver gone before the new one starts
        stop_from = time.monotonic()
        _fence(current.checkpoint, number, get_cluster(current.cluster, clusters_dir, team=current.team))
        _retire_standby(
            registry, name, actor=actor, action=action, clusters_dir=clusters_dir, why=f"replaced by version {number}"
        )
        if current.running:
            old_cluster = (
                get_cluster(current.cluster, clusters_dir, team=current.team)
                if current.cluster != cluster.name
                else cluster
            )
            if old_cluster_lost:
                registry.record_status(
                    name,
                    "LOST",
                    actor=actor,
                    action=action,
                    detail=f"cluster {old_cluster.name} lost; replaced by version {number}",
                )
            else:
                _stop_driver(
                    registry,
                    old_cluster,
                    current,
                    actor,
                    action=action,
                    detail=f"replaced by version {number}",
                    clusters_dir=clusters_dir,
                )
            if old_cluster is not cluster:
                _write_target(old_cluster, name, current.team, None)
        timings["stop"] = time.monotonic() - stop_from
        started = time.monotonic()
        try:
            # the offsets read again now that the old version has committed its last batch
            starting = (
                None
                if keep
                else starting_options(
                    start,
                    plan.job.streams,
                    committed_offsets(current.checkpoint) if start.kind == "committed" else None,
                )
            )
            driver, suffix = _submit(
                cluster,
                plan,
                text,
                number=number,
                checkpoint=checkpoint,
                starting=starting,
                port=port,
                passed_env=passed,
                emit_after_ms=None if keep else emit_after_ms,
            )
        except DaggerError as e:
            if not current.running:
                raise
            raise DaggerError(
                f"{e}. Version {current.version} was stopped before, so {name} is not running now: "
                f"start it again with `dagger deploy SPEC --cluster {current.cluster}`"
            ) from None
        registry.record_version(
            name=name,
            team=plan.job.team,
            cluster=cluster.name,
            spec=text,
            spec_format=suffix,
            spec_digest=hashlib.sha256(text.encode()).hexdigest(),
            state_key=key,
            checkpoint=checkpoint,
            actor=actor,
            start="from its checkpoint"
            if keep
            else str(start) + ("" if emit_after_ms is None else f", writing windows that end after {emit_after_ms}"),
            submission_id=driver,
            metrics_port=port,
            action=action,
        )
    _write_target(cluster, name, plan.job.team, port)
    timings["submit"] = time.monotonic() - started
    verb = "edited" if action == "edit" else "redeployed"
    out.lines[:0] = [
        f"{verb} {name}: version {number} on {cluster.name} as {driver}",
        f"  checkpoint {checkpoint} ({how})",
        f"  metrics    http://{cluster.metrics_host}:{port}/metrics",
    ]
    if standby_cluster is not None:
        _add_standby(
            registry,
            standby_cluster,
            plan,
            text,
            number=number,
            checkpoint=checkpoint,
            starting=starting,
            passed_env=passed,
            emit_after_ms=None if keep else emit_after_ms,
            actor=actor,
            action=action,
            out=out,
        )
    out.data.update(
        {
            "dagger": name,
            "version": number,
            "changed": True,
            "state_kept": keep,
            "checkpoint": checkpoint,
            "cluster": cluster.name,
            "team": plan.job.team,
            "submission_id": driver,
            "metrics_port": port,
            "started_at": started,
            # seconds per step, for a drill's recovery time: check (spec, environment, offsets),
            # stop (the old driver killed and gone), submit (spark-submit and the registry)
            "timings": {k: round(v, 3) for k, v in timings.items()},
        }
    )
    return out


def _add_timings(out: Outcome, **before: float) -> None:
    """Steps an operation took before `_redeploy`, added to its timings."""
    timings = out.data.setdefault("timings", {})
    for step, seconds in before.items():
        timings[step] = round(timings.get(step, 0.0) + seconds, 3)


# --- failover -------------------------------------------------------------------------------------
def _running_plan(registry: Registry, name: str, text: str | None = None):
    """The plan of the dagger's current spec (or of `text`, a changed one), validated again."""
    version = registry.version(name)
    suffix = version.spec_format if version.spec_format.startswith(".") else f".{version.spec_format}"
    with tempfile.TemporaryDirectory(prefix="dagger-failover-") as folder:
        path = Path(folder) / f"{name}{suffix}"  # a spec without a name takes its file's
        path.write_text(version.spec if text is None else text)
        return load_spec(str(path))


def failover_spark(
    registry: Registry, name: str, to: str, *, actor: str, clusters_dir: str | None = None, force: bool = False
) -> Outcome:
    """Resume the dagger on cluster `to` from its checkpoint. When its own cluster still answers,
    this is a planned move (the driver is stopped there first); when it does not, the driver must
    be gone too: the dagger's /metrics must not answer (`force` skips that check)."""
    current = registry.get(name)
    if current is None:
        raise DaggerError(f"no dagger named {name} in the registry ({registry.where})")
    checked_from = time.monotonic()
    old, new = (
        get_cluster(current.cluster, clusters_dir, team=current.team),
        get_cluster(to, clusters_dir, team=current.team),
    )
    if old.name == new.name:
        raise DaggerError(f"{name} already runs on {to}")
    standby = registry.standby(name)
    if standby is not None and standby.cluster == new.name and standby.version == current.version:
        taken = _take_over(registry, current, standby, old, new, actor=actor, checked_from=checked_from)
        if taken is not None:
            return taken
    plan, text = _running_plan(registry, name)
    _check_alive(new, plan)
    _check_team(plan, new, current)
    try:
        lost = spark_api.master_state(old, timeout=3.0).status != "ALIVE"
    except DaggerError:
        lost = True
    if lost and current.running and current.metrics_port and not force:
        if scrape(old.metrics_host, current.metrics_port) is not None:
            raise DriverStillAnswers(
                f"cluster {old.name}'s master does not answer, but {name}'s driver still does "
                f"(http://{old.metrics_host}:{current.metrics_port}/metrics): two drivers on one "
                "checkpoint would write it both; stop that driver first, or pass --force if it "
                "cannot be reached but is known to be gone"
            )
    checked = time.monotonic() - checked_from
    out = _redeploy(
        registry,
        plan,
        text,
        current,
        new,
        start=None,
        actor=actor,
        action="failover",
        clusters_dir=clusters_dir,
        old_cluster_lost=lost,
    )
    _add_timings(out, check=checked)
    out.lines.insert(
        0,
        f"{name}: {old.name} {'lost' if lost else 'answers (a planned move)'}; resuming on "
        f"{new.name} from the same checkpoint",
    )
    out.data["from_cluster"], out.data["old_cluster_lost"] = old.name, lost
    return out


def _take_over(
    registry: Registry, current: Dagger, standby, old: Cluster, new: Cluster, *, actor: str, checked_from: float
) -> Outcome | None:
    """The standby on `new` becomes the dagger's driver: it takes the checkpoint's lease by itself
    once the old driver's process is gone (killed here when its cluster still answers: a planned
    move), so this only records the move. None when the standby is not running (the caller then
    submits a new driver, as without a standby)."""
    name = current.name
    try:
        state = spark_api.master_state(new, timeout=3.0).drivers.get(standby.submission_id, {}).get("state")
    except DaggerError:
        state = None
    if state not in ("RUNNING", "RELAUNCHING", "SUBMITTED"):
        registry.drop_standby(
            name,
            actor=actor,
            action="failover",
            detail=f"standby {standby.submission_id} on {new.name} is {state or 'not known to its master'}",
        )
        return None
    checked = time.monotonic() - checked_from
    stop_from = time.monotonic()
    try:
        lost = spark_api.master_state(old, timeout=3.0).status != "ALIVE"
    except DaggerError:
        lost = True
    if not lost and current.running and current.submission_id:
        # a planned move: the old driver goes (same version: no fence), the standby takes the lease
        spark_api.kill(old, current.submission_id)
        final = _wait_ended(old, current.submission_id)
        if final in LIVE_STATES:
            raise DaggerError(
                f"{current.submission_id} on {old.name} is still {final} after the kill; its "
                f"standby on {new.name} stays a standby"
            )
    stopped = time.monotonic() - stop_from
    found = holder(current.checkpoint)
    waiting = held(current.checkpoint) is False or (found or {}).get("master") != new.master
    registry.take_over(
        name,
        actor=actor,
        driver=current.submission_id,
        standby_driver=standby.submission_id,
        detail=(
            f"cluster {old.name} {'lost' if lost else 'left (a planned move)'}; standby "
            f"{standby.submission_id} on {new.name} takes over version {current.version}"
        ),
    )
    _write_target(old, name, current.team, None)
    _write_target(new, name, current.team, standby.metrics_port)
    out = Outcome()
    out.say(
        f"{name}: {old.name} {'lost' if lost else 'answers (a planned move: its driver was stopped)'}; its "
        f"standby {standby.submission_id} on {new.name} "
        + (
            "takes the checkpoint's lease as soon as the old driver's process is gone"
            if waiting
            else "holds the checkpoint's lease and runs the query from it"
        )
    )
    out.say(f"  metrics    http://{new.metrics_host}:{standby.metrics_port}/metrics")
    out.say(f"  no standby now: deploy the next version with --standby {old.name} once {old.name} is back")
    out.data = {
        "dagger": name,
        "version": current.version,
        "changed": True,
        "state_kept": True,
        "checkpoint": current.checkpoint,
        "cluster": new.name,
        "team": current.team,
        "submission_id": standby.submission_id,
        "metrics_port": standby.metrics_port,
        "from_cluster": old.name,
        "old_cluster_lost": lost,
        "standby_took_over": True,
        "timings": {
            "check": round(checked, 3),
            "stop": round(stopped, 3),
            "takeover": round(time.monotonic() - checked_from - checked - stopped, 3),
        },
    }
    return out


def failover_kafka(registry: Registry, name: str, to: str, *, actor: str, clusters_dir: str | None = None) -> Outcome:
    """Move the dagger's streams to the Kafka cluster `to` (a copy of the cluster they read, or
    back to the original), on a new checkpoint that rebuilds the windows the old version had not
    written (failover.py says how)."""
    current = registry.get(name)
    if current is None:
        raise DaggerError(f"no dagger named {name} in the registry ({registry.where})")
    checked_from = time.monotonic()
    text = moved_spec(registry.version(name).spec, to, kafka_clusters(clusters_dir))
    plan, text = _running_plan(registry, name, text)
    replay_from_ms(plan, 0)  # refuses a query without windows before anything stops
    cluster = get_cluster(current.cluster, clusters_dir, team=current.team)
    standby = _kept_standby(registry, name, cluster)
    handoff = _handoff_target(registry, current, plan, text, clusters_dir) if current.running else None
    checked, stop_from = time.monotonic() - checked_from, time.monotonic()
    if current.running:
        # the watermark is read once the old version is gone: a batch it commits meanwhile counts
        _stop_driver(
            registry,
            cluster,
            current,
            actor,
            action="failover",
            detail=f"moving to Kafka cluster {to}",
            clusters_dir=clusters_dir,
            wait_gone=False,
            keep_standby=handoff is not None,
        )
        current = registry.get(name)
    stopped = time.monotonic() - stop_from
    try:
        watermark = committed_watermark(current.checkpoint)
    except DaggerError:
        watermark = 0  # no batch committed: no window written
    if watermark > 0:
        start, emit_after = Start("timestamp", replay_from_ms(plan, watermark)), watermark
        said = (
            f"the windows that ended by the last committed watermark ({_iso(watermark)}) were written by "
            f"version {current.version} and stay"
        )
    else:
        # it wrote no window yet (it had no watermark, or committed nothing): the new version reads
        # all the old one read, from where it began, and writes every window whole
        version = registry.version(name, current.version)
        start = first_start(current.checkpoint, plan.job.streams, int(version.deployed_at.timestamp() * 1000))
        emit_after = None
        said = f"version {current.version} had written no window yet, so it reads from where that began ({start})"
    out = None
    if handoff is not None:
        out = _hand_off(
            registry,
            plan,
            text,
            current,
            *handoff,
            start=start,
            emit_after_ms=emit_after,
            actor=actor,
            old=cluster,
            clusters_dir=clusters_dir,
        )
        current = registry.get(name)
    if out is None:
        out = _redeploy(
            registry,
            plan,
            text,
            current,
            cluster,
            start=start,
            actor=actor,
            action="failover",
            clusters_dir=clusters_dir,
            emit_after_ms=emit_after,
            standby=standby,
        )
    _add_timings(out, check=checked, stop=stopped)
    out.lines.insert(0, f"{name}: reading Kafka cluster {to}; {said}")
    out.data.update({"kafka_cluster": to, "watermark_ms": watermark or None, "replay_from_ms": start.timestamp_ms})
    return out


HANDOFF_TAKE_S = 30.0  # how long a handed-off standby has to take the new checkpoint's lease
FIRST_BATCH_WAIT_S = 120.0  # how long its first batch may take before the next standby starts anyway


def _handoff_target(registry: Registry, current: Dagger, plan, text: str, clusters_dir: str | None):
    """(standby, its cluster) when the dagger's standby can run the moved version: it waits for
    this version, says it is ready, runs per its master, and the moved spec needs no environment
    variable it was not given. None otherwise (a new driver is submitted, as without a standby)."""
    standby = registry.standby(current.name)
    if standby is None or standby.version != current.version:
        return None
    said = ready_standby(current.checkpoint) or {}
    if said.get("version") != current.version:
        return None
    try:
        cluster = get_cluster(standby.cluster, clusters_dir, team=current.team)
        state = spark_api.master_state(cluster, timeout=3.0).drivers.get(standby.submission_id, {}).get("state")
    except DaggerError:
        return None
    old_text = registry.version(current.name).spec
    kind = "properties" if plan.job.origin == "dagger-properties" else "yaml"
    if (
        state != "RUNNING"
        or not _under_root(current.checkpoint, cluster)
        or (
            set(spark_api.referenced_env(text, plan.job.team, kind))
            - set(spark_api.referenced_env(old_text, plan.job.team, kind))
        )
    ):
        return None
    return standby, cluster


def _hand_off(
    registry: Registry,
    plan,
    text: str,
    current: Dagger,
    standby,
    new: Cluster,
    *,
    start: Start,
    emit_after_ms: int | None,
    actor: str,
    old: Cluster,
    clusters_dir: str | None,
) -> Outcome | None:
    """The dagger's standby (fenced off the old checkpoint, waiting) runs the moved version on a
    new checkpoint: its JVMs are warm, so this costs no spark-submit, driver start or cold first
    batch. None when it does not take the new checkpoint within HANDOFF_TAKE_S (it is killed; the
    caller submits a new driver)."""
    from ..lease import hand_off, held, holder

    name, number = plan.job.name, current.version + 1
    started = time.monotonic()
    # beside the old one (the standby checks that)
    checkpoint = current.checkpoint.rstrip("/").rsplit("/", 1)[0] + f"/v{number}"
    starting = starting_options(start, plan.job.streams, None)
    suffix = ".properties" if plan.job.origin == "dagger-properties" else ".yaml"
    spec_path = _store_spec(new, name, number, text, suffix)
    order = {
        "version": number,
        "spec": spec_path,
        "checkpoint": checkpoint,
        "starting": starting,
        "emit_after_ms": emit_after_ms,
    }
    try:
        hand_off(current.checkpoint, order, within=old.checkpoint_root)
    except (OSError, DaggerError) as e:
        _retire_standby(
            registry, name, actor=actor, action="failover", clusters_dir=clusters_dir, why=f"no handoff ({e})"
        )
        return None
    deadline = time.monotonic() + HANDOFF_TAKE_S

    def taken() -> bool:
        return bool(held(checkpoint)) and (holder(checkpoint) or {}).get("version") == number

    while time.monotonic() < deadline and not taken():
        time.sleep(0.1)
    if not taken():
        # cancelled first, so a standby that follows it late ends instead of running beside the new driver
        try:
            hand_off(current.checkpoint, {"version": number, "cancelled": True}, within=old.checkpoint_root)
        except (OSError, DaggerError):
            pass
        _retire_standby(
            registry,
            name,
            actor=actor,
            action="failover",
            clusters_dir=clusters_dir,
            why=f"it did not take version {number}'s checkpoint within {HANDOFF_TAKE_S:g} s",
        )
        return None
    registry.record_version(
        name=name,
        team=plan.job.team,
        cluster=new.name,
        spec=text,
        spec_format=suffix,
        spec_digest=hashlib.sha256(text.encode()).hexdigest(),
        state_key=state_key(plan),
        checkpoint=checkpoint,
        actor=actor,
        start=str(start) + ("" if emit_after_ms is None else f", writing windows that end after {emit_after_ms}"),
        submission_id=standby.submission_id,
        metrics_port=standby.metrics_port,
        action="failover",
    )
    registry.drop_standby(
        name,
        actor=actor,
        action="failover",
        detail=f"standby {standby.submission_id} on {new.name} runs version {number}",
    )
    _write_target(old, name, current.team, None)
    _write_target(new, name, current.team, standby.metrics_port)
    took = time.monotonic() - started
    out = Outcome()
    out.say(f"handed off {name}: version {number} on {new.name} as {standby.submission_id} (its standby, warm)")
    out.say(f"  checkpoint {checkpoint} (new: reading {start})")
    out.say(f"  metrics    http://{new.metrics_host}:{standby.metrics_port}/metrics")
    out.data.update(
        {
            "dagger": name,
            "version": number,
            "changed": True,
            "state_kept": False,
            "checkpoint": checkpoint,
            "cluster": new.name,
            "team": plan.job.team,
            "submission_id": standby.submission_id,
            "metrics_port": standby.metrics_port,
            "standby_took_over": True,
            "timings": {"handoff": round(took, 3)},
        }
    )
    # a standby for the new version where the old one ran, if that cluster has room: once the
    # new version has committed its first batch, so that the new standby's start (a JVM, a
    # session, a rehearsal) does not take the cores that first batch needs
    from ..launches import last_committed_batch, local_root

    waited_from = time.monotonic()
    while time.monotonic() - waited_from < FIRST_BATCH_WAIT_S and last_committed_batch(local_root(checkpoint)) < 0:
        time.sleep(0.5)
    if last_committed_batch(local_root(checkpoint)) >= 0:
        out.say(f"  first batch committed {time.monotonic() - started:.1f} s after the handoff")
    try:
        standby_cluster = _standby_cluster(old.name, new, checkpoint, plan, clusters_dir)
    except DaggerError as e:
        out.say(f"  no standby for version {number}: {e}")
        return out
    passed = spark_api.referenced_env(
        text, plan.job.team, "properties" if plan.job.origin == "dagger-properties" else "yaml"
    )
    try:
        _add_standby(
            registry,
            standby_cluster,
            plan,
            text,
            number=number,
            checkpoint=checkpoint,
            starting=starting,
            passed_env=passed,
            emit_after_ms=emit_after_ms,
            actor=actor,
            action="failover",
            out=out,
        )
    except DaggerError as e:
        out.say(f"  no standby for version {number}: {e}")
    return out


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _fence(checkpoint: str, version: int, cluster: Cluster) -> None:
    """Only drivers of `version` or later may run on the checkpoint from now (lease.py). A
    checkpoint outside the cluster's root (a lab from before teams had their own) is not fenced."""
    if not _under_root(checkpoint, cluster):
        return
    try:
        fence(checkpoint, version, within=cluster.checkpoint_root)
    except OSError as e:
        raise DaggerError(f"cannot fence the checkpoint {checkpoint} ({e.strerror}): nothing was stopped") from None


def _left_by_fence(checkpoint: str) -> bool:
    """Whether the driver holding the checkpoint's lease lets it go once fenced (it reads the
    fence every second): seconds sooner than a kill through the master, which starts a JVM. False
    when no driver holds it (still starting, or a checkpoint without a lease): then it is killed."""
    from ..lease import held
    from ..run import FENCE_CHECK_S

    if held(checkpoint) is not True:
        return False
    deadline = time.monotonic() + FENCE_CHECK_S + 5.0
    while time.monotonic() < deadline:
        if held(checkpoint) is False:
            return True
        time.sleep(0.1)
    return False


def _stop_driver(
    registry: Registry,
    cluster: Cluster,
    dagger: Dagger,
    actor: str,
    *,
    action: str,
    detail: str,
    clusters_dir: str | None = None,
    wait_gone: bool = True,
    keep_standby: bool = False,
) -> str:
    """Fence the dagger's version off its checkpoint, kill its standby, then end its driver: the
    fence ends it within seconds once it holds the lease (else, or if it lingers, a kill through
    the master). Without wait_gone, a driver that let the checkpoint go is left to end by itself
    (its JVM's shutdown takes seconds a Kafka failover need not wait for)."""
    ended = "STOPPED"
    try:
        _fence(dagger.checkpoint, dagger.version + 1, cluster)
    except DaggerError as e:
        # a team's folder can block the fence (a link, a folder named dagger-fence): the drivers
        # are still killed through their masters, and the history says why no fence was written
        detail = f"{detail}; no fence: {e}"
    if not keep_standby:  # (kept: fenced too, it waits for its handoff)
        _retire_standby(registry, dagger.name, actor=actor, action=action, clusters_dir=clusters_dir, why=detail)
    if (
        dagger.submission_id
        and dagger.running
        and _left_by_fence(dagger.checkpoint)
        and (not wait_gone or _wait_ended(cluster, dagger.submission_id, timeout_s=20.0) not in LIVE_STATES)
    ):
        pass  # its query stopped and it let the checkpoint go: it ended by itself (exit 0)
    elif dagger.submission_id and dagger.running:
        state = spark_api.master_state(cluster).drivers.get(dagger.submission_id, {}).get("state")
        if state in LIVE_STATES:
            try:
                spark_api.kill(cluster, dagger.submission_id)
            except DaggerError:
                # the fence may have ended it first (it stops within seconds of seeing it)
                if spark_api.master_state(cluster).drivers.get(dagger.submission_id, {}).get("state") in LIVE_STATES:
                    raise
            final = _wait_ended(cluster, dagger.submission_id)
            if final in LIVE_STATES:
                raise DaggerError(
                    f"{dagger.submission_id} on {cluster.name} is still {final} after the kill; "
                    "nothing else was changed"
                )
    registry.record_status(dagger.name, ended, actor=actor, action=action, detail=detail)
    return ended


def stop(registry: Registry, name: str, *, actor: str, clusters_dir: str | None = None) -> Outcome:
    current = registry.get(name)
    if current is None:
        raise DaggerError(f"no dagger named {name} in the registry ({registry.where})")
    out = Outcome()
    if not current.running:
        out.say(f"{name} is not running ({current.status}); nothing to do")
        return out
    cluster = get_cluster(current.cluster, clusters_dir, team=current.team)
    _stop_driver(
        registry,
        cluster,
        current,
        actor,
        action="stop",
        detail=f"{current.submission_id} killed",
        clusters_dir=clusters_dir,
    )
    _write_target(cluster, name, current.team, None)
    out.say(
        f"stopped {name} (version {current.version}, {current.submission_id} on {cluster.name}); "
        f"its checkpoint {current.checkpoint} is kept"
    )
    out.data = {"dagger": name, "status": "STOPPED"}
    return out


# --- status --------------------------------------------------------------------------------------
def scrape(host: str, port: int, timeout: float = 3.0) -> dict[str, float] | None:
    """A dagger's metrics, summed per name over their labels (None if it does not answer); those
    with a `kind` (dead letters) also per kind, as `name:kind`."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        text = http_client.get(f"http://{host}:{port}/metrics", timeout=timeout).text
    except http_client.Error:
        return None
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            values[sample.name] = values.get(sample.name, 0.0) + sample.value
            if "kind" in sample.labels:
                by_kind = f"{sample.name}:{sample.labels['kind']}"
                values[by_kind] = values.get(by_kind, 0.0) + sample.value
    return values


def health(dagger: Dagger, driver_state: str | None, metrics: dict[str, float] | None, now: float) -> dict:
    """One row of `status`: the driver's state and what its metrics say."""
    row = {
        "dagger": dagger.name,
        "team": dagger.team,
        "cluster": dagger.cluster,
        "version": dagger.version,
        "status": driver_state or dagger.status,
        "submission_id": dagger.submission_id,
    }
    if metrics:
        watermark = metrics.get("dagger_watermark_timestamp_seconds") or None
        row.update(
            {
                "input_per_s": metrics.get("dagger_input_messages_per_second", 0.0),
                "processed_per_s": metrics.get("dagger_processed_messages_per_second", 0.0),
                "lag": int(metrics.get("dagger_consumer_lag_messages", 0)),
                "watermark_delay_s": round(now - watermark, 1) if watermark else None,
                "batches": int(metrics.get("dagger_batches_total", 0)),
                "last_batch_s": metrics.get("dagger_batch_duration_seconds"),
                "rows_written": int(metrics.get("dagger_result_rows_written_total", 0)),
                "dead_letters": int(metrics.get("dagger_dead_letters_total", 0)),
                "sink_errors": int(metrics.get("dagger_sink_errors_total", 0)),
            }
        )
    return row


def status(
    registry: Registry,
    name: str | None,
    *,
    actor: str,
    clusters_dir: str | None = None,
    teams: Collection[str] | None = None,
) -> Outcome:
    """Each dagger's health and its clusters' state; `teams`: only those teams' daggers and
    clusters (the portal's view of a user), nothing of the others asked or shown."""
    daggers = [registry.get(name)] if name else registry.list()
    if name and daggers[0] is None:
        raise DaggerError(f"no dagger named {name} in the registry ({registry.where})")
    if teams is not None:
        daggers = [d for d in daggers if d is not None and d.team in teams]
        if name and not daggers:
            raise DaggerError(f"no dagger named {name} in the registry ({registry.where})")
    # each dagger on its team's cluster of its failure domain; without a name, every cluster
    every = load_all(clusters_dir)
    shown = every if not name else [c for c in every if c.name == daggers[0].cluster]
    if teams is not None:
        shown = [c for c in shown if c.team in teams]
    masters: dict[tuple[str, str | None], object] = {}
    for cluster in shown:
        try:
            masters[(cluster.name, cluster.team)] = spark_api.master_state(cluster)
        except DaggerError:
            masters[(cluster.name, cluster.team)] = None
    rows = []
    now = time.time()
    for dagger in daggers:
        dagger = _follow_lease(registry, dagger, every, masters, actor=actor)
        cluster = pick(every, dagger.cluster, dagger.team)
        master = _master(cluster, masters)
        driver_state = None
        if master is not None and dagger.submission_id:
            driver_state = master.drivers.get(dagger.submission_id, {}).get("state")
            # the master says RUNNING while --supervise restarts a driver that keeps failing
            looping = crash_loop(dagger.checkpoint) if driver_state in ("RUNNING", "RELAUNCHING") else None
            if looping:
                driver_state = "CRASH_LOOP"
            if driver_state and dagger.running and driver_state != dagger.status:
                registry.record_status(
                    dagger.name,
                    driver_state,
                    actor=actor,
                    detail=looping or "seen on the master",
                    submission_id=dagger.submission_id,
                )
            elif (
                driver_state is None
                and dagger.running
                and master.status == "ALIVE"
                and cluster
                and not (dagger.metrics_port and scrape(cluster.metrics_host, dagger.metrics_port))
            ):
                # a master restarted without recovery forgets its drivers, and theirs die with the
                # workers: a driver it does not know, whose /metrics is silent, is gone
                driver_state = "LOST"
                registry.record_status(
                    dagger.name,
                    "LOST",
                    actor=actor,
                    submission_id=dagger.submission_id,
                    detail=f"the master of {dagger.cluster} does not know driver "
                    f"{dagger.submission_id} and its /metrics does not answer",
                )
                dagger = registry.get(dagger.name)
        elif dagger.running:
            driver_state = "UNREACHABLE"
        metrics = (
            scrape(cluster.metrics_host, dagger.metrics_port)
            if cluster and dagger.metrics_port and dagger.running
            else None
        )
        rows.append(health(dagger, driver_state, metrics, now))
        standby = registry.standby(dagger.name)
        if standby is not None:
            rows[-1]["standby"] = _standby_row(
                standby, pick(every, standby.cluster, dagger.team), masters, dagger.checkpoint
            )
    cluster_rows = [
        {
            "cluster": n,
            "team": t,
            "master": m.status if m else "DOWN",
            "workers": m.workers_alive if m else 0,
            "cores_used": m.cores_used if m else None,
            "cores": m.cores if m else None,
            "memory_used_mb": m.memory_used_mb if m else None,
            "memory_mb": m.memory_mb if m else None,
        }
        for (n, t), m in sorted(masters.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))
        if teams is None or t in teams
    ]  # a shared cluster's totals hold other teams' use
    return Outcome(data={"daggers": rows, "clusters": cluster_rows})


def _master(cluster: Cluster | None, masters: dict):
    """The cluster's master state, asked once per `status`."""
    if cluster is None:
        return None
    key = (cluster.name, cluster.team)
    if key not in masters:
        try:
            masters[key] = spark_api.master_state(cluster)
        except DaggerError:
            masters[key] = None
    return masters[key]


def _follow_lease(registry: Registry, dagger: Dagger, every: list[Cluster], masters: dict, *, actor: str) -> Dagger:
    """When the dagger's standby holds the checkpoint's lease (its driver was killed and the
    standby took over by itself), the registry follows: the standby becomes the dagger's driver,
    and the old one, if its master runs it again (--supervise), becomes the standby."""
    standby = registry.standby(dagger.name)
    if standby is None or not dagger.running or standby.version != dagger.version:
        return dagger
    cluster = pick(every, standby.cluster, dagger.team)
    found = holder(dagger.checkpoint) or {}
    if (
        cluster is None
        or found.get("master") != cluster.master
        or found.get("version") != standby.version
        or not held(dagger.checkpoint)
    ):
        return dagger
    old = pick(every, dagger.cluster, dagger.team)
    try:
        registry.take_over(
            dagger.name,
            actor=actor,
            driver=dagger.submission_id,
            standby_driver=standby.submission_id,
            detail=(
                f"standby {standby.submission_id} on {standby.cluster} holds the checkpoint's lease (pid "
                f"{found.get('pid')}): driver {dagger.submission_id} on {dagger.cluster} is no longer the writer"
            ),
        )
    except DaggerError:
        return registry.get(dagger.name) or dagger  # changed meanwhile: show it as it is now
    if old is not None:
        _write_target(old, dagger.name, dagger.team, None)
    _write_target(cluster, dagger.name, dagger.team, standby.metrics_port)
    master = _master(old, masters)
    state = master.drivers.get(dagger.submission_id, {}).get("state") if master and dagger.submission_id else None
    if state in ("RUNNING", "RELAUNCHING", "SUBMITTED") and dagger.metrics_port:
        registry.record_standby(
            dagger.name,
            version=dagger.version,
            cluster=dagger.cluster,
            submission_id=dagger.submission_id,
            metrics_port=dagger.metrics_port,
            actor=actor,
            action="status",
        )
    return registry.get(dagger.name)


def _standby_row(standby, cluster: Cluster | None, masters: dict, checkpoint: str) -> dict:
    """A standby's part of `status`: READY when its driver runs and has said its session and
    query are ready and its rehearsal has warmed its JVMs (a takeover then costs only the query's
    start), WARMING while it rehearses, STARTING before, else its master's state."""
    master = _master(cluster, masters)
    state = (master.drivers.get(standby.submission_id, {}).get("state") or "UNKNOWN") if master else "UNREACHABLE"
    if state == "RUNNING":
        said = ready_standby(checkpoint) or {}
        state = (
            "STARTING"
            if cluster is None or said.get("master") != cluster.master or said.get("version") != standby.version
            else "WARMING"
            if said.get("warm") is False
            else "READY"
        )
    return {
        "cluster": standby.cluster,
        "submission_id": standby.submission_id,
        "version": standby.version,
        "metrics_port": standby.metrics_port,
        "state": state,
    }


def wait_first_row(host: str, port: int, *, timeout_s: float = 300.0) -> float | None:
    """Seconds until the dagger's sink has accepted its first result row (None on timeout)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        metrics = scrape(host, port)
        if metrics and metrics.get("dagger_result_rows_written_total", 0) > 0:
            return time.monotonic() - started
        time.sleep(0.5)
    return None
