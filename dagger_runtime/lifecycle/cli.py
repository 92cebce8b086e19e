"""`dagger deploy|edit|failover|watchdog|stop|status|list|logs|history`: the lifecycle commands of the dagger CLI."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
import time

from rich.console import Console
from rich.table import Table

from ..errors import DaggerError
from .state import parse_start
from .watchdog import Watchdog

# wide enough for the status table when the output is a pipe or a file (rich assumes 80 columns)
_console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 200)


def _registry(args):
    from .registry import Registry, resolve_url

    return Registry(resolve_url(args.registry))


def _start(args):
    return parse_start(args.start) if getattr(args, "start", None) else None


def _print(outcome, as_json: bool) -> None:
    if as_json:
        print(json.dumps(outcome.data, indent=2, default=str))
    else:
        for line in outcome.lines:
            _console.print(line, markup=False)


def _wait_first_row(args, outcome, began: float) -> None:
    from .clusters import get_cluster
    from .operations import wait_first_row

    data = outcome.data
    if not args.wait or not data.get("metrics_port"):
        return
    cluster = get_cluster(data["cluster"], args.clusters, team=data.get("team"))
    with _console.status(f"waiting for {data['dagger']}'s first result row ..."):
        waited = wait_first_row(cluster.metrics_host, data["metrics_port"], timeout_s=args.wait_timeout)
    if waited is None:
        raise DaggerError(
            f"{data['dagger']} wrote no result row within {args.wait_timeout:.0f} s; "
            f"see `dagger status {data['dagger']}` and `dagger logs {data['dagger']}`"
        )
    data["deploy_to_first_row_s"] = round(time.monotonic() - began, 1)
    outcome.say(f"  first result row written {data['deploy_to_first_row_s']} s after the command started")


def cmd_deploy(args) -> int:
    from .operations import deploy

    began = time.monotonic()
    with _console.status("validating the spec and submitting it ..."):
        outcome = deploy(
            _registry(args),
            args.job,
            args.cluster,
            actor=args.actor,
            clusters_dir=args.clusters,
            start=_start(args),
            standby=args.standby,
        )
    _wait_first_row(args, outcome, began)
    _print(outcome, args.json)
    return 0


def cmd_edit(args) -> int:
    from .operations import edit

    began = time.monotonic()
    with _console.status(f"validating the spec and redeploying {args.name} ..."):
        outcome = edit(
            _registry(args),
            args.name,
            args.job,
            actor=args.actor,
            clusters_dir=args.clusters,
            start=_start(args),
            cluster_name=args.cluster,
        )
    _wait_first_row(args, outcome, began)
    _print(outcome, args.json)
    return 0


def cmd_failover(args) -> int:
    from .operations import failover_kafka, failover_spark

    began = time.monotonic()
    with _console.status(f"moving {args.name} ..."):
        if args.kafka:
            outcome = failover_kafka(
                _registry(args), args.name, args.kafka, actor=args.actor, clusters_dir=args.clusters
            )
        else:
            outcome = failover_spark(
                _registry(args), args.name, args.cluster, actor=args.actor, clusters_dir=args.clusters, force=args.force
            )
    _wait_first_row(args, outcome, began)
    _print(outcome, args.json)
    return 0


def cmd_watchdog(args) -> int:
    from .registry import resolve_url

    def say(kind: str, name: str, text: str, at: float) -> None:
        stamp = time.strftime("%H:%M:%S", time.gmtime(at))
        _console.print(f"{stamp}Z  {name}: {kind}: {text}", markup=False)

    dog = Watchdog(
        args.names,
        registry_url=resolve_url(args.registry),
        clusters_dir=args.clusters,
        kafka_to=args.kafka_to,
        spark_to=args.spark_to,
        interval_s=args.interval,
        confirm=args.confirm,
        actor=args.actor,
        on_event=say,
    )
    _console.print(
        f"watching {', '.join(args.names)} every {args.interval:g} s (a loss is {args.confirm} failed "
        "checks in a row); Ctrl-C stops",
        markup=False,
    )
    dog.start()
    try:
        while dog.is_alive() and not all(w.done_at or w.error for w in dog.watched.values()):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        dog.stop()
    return 1 if any(w.error for w in dog.watched.values()) else 0


def cmd_stop(args) -> int:
    from .operations import stop

    with _console.status(f"stopping {args.name} ..."):
        outcome = stop(_registry(args), args.name, actor=args.actor, clusters_dir=args.clusters)
    _print(outcome, args.json)
    return 0


def _num(value, fmt="{:,.0f}") -> str:
    return "-" if value is None else fmt.format(value)


def cmd_status(args) -> int:
    from .operations import status

    outcome = status(_registry(args), args.name, actor=args.actor, clusters_dir=args.clusters)
    if args.json:
        _print(outcome, True)
        return 0
    table = Table(title="daggers", title_justify="left")
    for column in (
        "dagger",
        "cluster",
        "v",
        "status",
        "standby",
        "in/s",
        "done/s",
        "lag",
        "watermark delay",
        "last batch",
        "rows written",
        "dead letters",
        "sink errors",
    ):
        table.add_column(column, justify="left" if column in ("dagger", "cluster", "status", "standby") else "right")
    for row in outcome.data["daggers"]:
        standby = row.get("standby")
        table.add_row(
            row["dagger"],
            row["cluster"],
            str(row["version"]),
            row["status"],
            f"{standby['cluster']} {standby['state']}" if standby else "-",
            _num(row.get("input_per_s"), "{:,.1f}"),
            _num(row.get("processed_per_s"), "{:,.1f}"),
            _num(row.get("lag")),
            _num(row.get("watermark_delay_s"), "{:,.0f} s"),
            _num(row.get("last_batch_s"), "{:.2f} s"),
            _num(row.get("rows_written")),
            _num(row.get("dead_letters")),
            _num(row.get("sink_errors")),
        )
    _console.print(table)
    clusters = Table(title="clusters", title_justify="left")
    for column in ("cluster", "team", "master", "workers", "cores used", "memory used"):
        clusters.add_column(column)
    for c in outcome.data["clusters"]:
        clusters.add_row(
            c["cluster"],
            c.get("team") or "any",
            c["master"],
            str(c["workers"]),
            f"{_num(c['cores_used'])} of {_num(c['cores'])}",
            f"{_num(c['memory_used_mb'])} of {_num(c['memory_mb'])} MB",
        )
    _console.print(clusters)
    return 0


def cmd_list(args) -> int:
    registry = _registry(args)
    daggers = registry.list(args.cluster)
    rows = []
    for d in daggers:
        version = registry.version(d.name)
        rows.append(
            {
                "dagger": d.name,
                "team": d.team,
                "cluster": d.cluster,
                "version": d.version,
                "status": d.status,
                "deployed_by": version.deployed_by,
                "deployed_at": version.deployed_at.isoformat(timespec="seconds"),
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(title=f"daggers in {registry.where}", title_justify="left")
    for column in ("dagger", "team", "cluster", "version", "status", "deployed by", "deployed at"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            r["dagger"],
            r["team"] or "-",
            r["cluster"],
            str(r["version"]),
            r["status"],
            r["deployed_by"],
            r["deployed_at"],
        )
    _console.print(table)
    return 0


def cmd_history(args) -> int:
    registry = _registry(args)
    if registry.get(args.name) is None:
        raise DaggerError(f"no dagger named {args.name} in the registry ({registry.where})")
    versions, events = registry.versions(args.name), registry.history(args.name)
    if args.json:
        print(
            json.dumps(
                {
                    "versions": [
                        {
                            "version": v.number,
                            "spec_digest": v.spec_digest,
                            "state_key": v.state_key,
                            "checkpoint": v.checkpoint,
                            "start": v.start,
                            "cluster": v.cluster,
                            "deployed_by": v.deployed_by,
                            "deployed_at": v.deployed_at.isoformat(),
                        }
                        for v in versions
                    ],
                    "events": [
                        {
                            "at": e.at.isoformat(),
                            "actor": e.actor,
                            "action": e.action,
                            "status": e.status,
                            "detail": e.detail,
                        }
                        for e in events
                    ],
                },
                indent=2,
            )
        )
        return 0
    table = Table(title=f"{args.name}: events", title_justify="left")
    for column in ("at", "by", "action", "status", "detail"):
        table.add_column(column)
    for e in events:
        table.add_row(e.at.isoformat(timespec="seconds"), e.actor, e.action, e.status, e.detail)
    _console.print(table)
    return 0


def cmd_logs(args) -> int:
    from .clusters import get_cluster
    from .spark import driver_log

    registry = _registry(args)
    dagger = registry.get(args.name)
    if dagger is None or not dagger.submission_id:
        raise DaggerError(f"no deployed dagger named {args.name} in the registry ({registry.where})")
    text = driver_log(
        get_cluster(dagger.cluster, args.clusters, team=dagger.team),
        dagger.submission_id,
        which=args.stream,
        tail_bytes=args.bytes,
    )
    lines = text.splitlines()
    print("\n".join(lines[-args.lines :] if args.lines else lines))
    return 0


def add_commands(sub) -> None:
    """The lifecycle subcommands, on the dagger CLI's subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--registry",
        metavar="URL",
        help="the registry database: sqlite:///FILE or postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB, "
        "or @FILE to read the URL from FILE (default $DAGGER_REGISTRY_URL, else "
        "~/.local/state/daggers/registry.db)",
    )
    common.add_argument(
        "--clusters",
        metavar="DIR",
        help="the directory of cluster definitions (default $DAGGER_CLUSTERS, else the lab's .lab/clusters)",
    )
    common.add_argument(
        "--as",
        dest="actor",
        default=getpass.getuser(),
        metavar="WHO",
        help="who is acting, as recorded in the registry (default: the login name)",
    )
    common.add_argument("--json", action="store_true", help="print the result as JSON")
    start_help = (
        "where a new checkpoint starts reading: committed (the previous version's last committed "
        "offsets), earliest, latest, or a time (2026-11-23T10:00:00Z, epoch ms); a start always makes "
        "a new checkpoint"
    )
    waiting = argparse.ArgumentParser(add_help=False)
    waiting.add_argument(
        "--wait",
        action="store_true",
        help="wait until the dagger has written its first result row and say how long it took",
    )
    waiting.add_argument(
        "--wait-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="give up waiting after SECONDS (default 300)",
    )

    d = sub.add_parser(
        "deploy",
        parents=[common, waiting],
        help="validate a job and start it on a cluster",
        description="Validate the job like `validate`, then submit it to the cluster's Spark master "
        "(spark-submit, cluster deploy mode, --supervise: the master restarts a failed "
        "driver) and record it in the registry. A dagger that was stopped resumes from "
        "its checkpoint when its query is unchanged.",
    )
    d.add_argument("job", metavar="JOB", help="a native YAML job spec or a raystack/dagger .properties file")
    d.add_argument("--cluster", required=True, help="the cluster to run on (a name in the clusters directory)")
    d.add_argument("--from", dest="start", metavar="POSITION", help=start_help)
    d.add_argument(
        "--standby",
        metavar="CLUSTER",
        help="also start a standby driver on CLUSTER: its Spark session and executors up, waiting for "
        "the checkpoint's lease, which it takes the moment the dagger's driver is gone (a lost "
        "cluster, a killed driver); `dagger failover --cluster CLUSTER` then only records the move. "
        "The checkpoint must be on a folder both clusters share",
    )
    d.set_defaults(func=cmd_deploy)

    e = sub.add_parser(
        "edit",
        parents=[common, waiting],
        help="redeploy a dagger with a changed spec",
        description="Stop the running version, then start the new spec on the same checkpoint if "
        "the change leaves its state usable (same query, streams and watermark). If "
        "not, it says so and starts a new checkpoint from --from (default: the old "
        "version's last committed offsets).",
    )
    e.add_argument("name", metavar="NAME", help="the dagger (its job name)")
    e.add_argument("job", metavar="JOB", help="the new job spec (same job name)")
    e.add_argument("--from", dest="start", metavar="POSITION", help=start_help)
    e.add_argument("--cluster", help="move the dagger to this cluster (its checkpoint must be reachable there)")
    e.set_defaults(func=cmd_edit)

    f = sub.add_parser(
        "failover",
        parents=[common, waiting],
        help="move a dagger to another Spark cluster or onto a Kafka mirror",
        description="--cluster: resume the dagger on another Spark cluster from the same checkpoint "
        "(a lost cluster's driver must be gone: its /metrics must not answer). --kafka: "
        "read the copy of its topics on another Kafka cluster (or go back to the "
        "original), on a new checkpoint that replays from before the windows the old "
        "version had not written and writes only those. Pass the target cluster's "
        "Kafka password in the same DAGGER_SECRET_ variable the spec names.",
    )
    f.add_argument("name", metavar="NAME", help="the dagger (its job name)")
    where = f.add_mutually_exclusive_group(required=True)
    where.add_argument("--cluster", help="the Spark cluster to resume on (a name in the clusters directory)")
    where.add_argument("--kafka", metavar="CLUSTER", help="the Kafka cluster to read (a name in <clusters>/kafka/)")
    f.add_argument(
        "--force", action="store_true", help="with --cluster: go on although the old driver's state cannot be checked"
    )
    f.set_defaults(func=cmd_failover)

    w = sub.add_parser(
        "watchdog",
        parents=[common],
        help="fail daggers over by themselves when their cluster is lost",
        description="Check every --interval seconds whether any broker of the Kafka cluster each "
        "dagger reads accepts a connection and whether its Spark master answers ALIVE; "
        "after --confirm failed checks in a row, run `dagger failover` for it (--kafka "
        "to its mirror, or back; --cluster to the other Spark cluster). Each dagger is "
        "moved once; it ends when all are moved or on Ctrl-C. Exit 1 if a move failed.",
    )
    w.add_argument("names", metavar="NAME", nargs="+", help="the daggers to watch")
    w.add_argument(
        "--kafka-to",
        metavar="CLUSTER",
        help="the Kafka cluster to move to (default: the mirror of the one read, or the one a mirror copies)",
    )
    w.add_argument("--spark-to", metavar="CLUSTER", help="the Spark cluster to move to (default: the other one)")
    w.add_argument("--interval", type=float, default=1.0, metavar="SECONDS", help="between checks (default 1)")
    w.add_argument(
        "--confirm", type=int, default=3, metavar="N", help="failed checks in a row that make a loss (default 3)"
    )
    w.set_defaults(func=cmd_watchdog)

    s = sub.add_parser(
        "stop",
        parents=[common],
        help="stop a dagger (its checkpoint is kept)",
        description="Kill the dagger's driver through the Spark master and record it as STOPPED. "
        "Results of the batch in flight are written again on the next start, so "
        "nothing is lost.",
    )
    s.add_argument("name", metavar="NAME")
    s.set_defaults(func=cmd_stop)

    st = sub.add_parser(
        "status",
        parents=[common],
        help="each dagger's health and the clusters' state",
        description="The driver's state on its master and the dagger's own metrics: input and "
        "processed rate, lag, watermark delay, last batch, rows written, dead letters, "
        "sink errors; then each cluster's master, workers, cores and memory.",
    )
    st.add_argument("name", metavar="NAME", nargs="?", help="one dagger (default: all)")
    st.set_defaults(func=cmd_status)

    ls = sub.add_parser(
        "list",
        parents=[common],
        help="the daggers in the registry",
        description="Every dagger in the registry: cluster, version, status, who deployed the "
        "current version and when.",
    )
    ls.add_argument("--cluster", help="only the daggers of this cluster")
    ls.set_defaults(func=cmd_list)

    h = sub.add_parser(
        "history",
        parents=[common],
        help="a dagger's versions and status changes",
        description="Every deploy, edit, stop and status change of a dagger, with who and when.",
    )
    h.add_argument("name", metavar="NAME")
    h.set_defaults(func=cmd_history)

    lg = sub.add_parser(
        "logs",
        parents=[common],
        help="the end of a dagger's driver log",
        description="Read the driver's log from the Spark worker it runs on (the worker's /log endpoint).",
    )
    lg.add_argument("name", metavar="NAME")
    lg.add_argument(
        "--stream",
        choices=("stdout", "stderr"),
        default="stdout",
        help="which log: stdout (default) holds the dagger's own output, progress lines included "
        "(Spark's PythonRunner sends the Python driver's stdout and stderr there); stderr "
        "holds the driver JVM's launch command and Spark's log",
    )
    lg.add_argument("-n", "--lines", type=int, default=50, help="how many lines from the end (0: all read)")
    lg.add_argument("--bytes", type=int, default=200_000, help="how many bytes to read from the end")
    lg.set_defaults(func=cmd_logs)

    # the web portal calls these same operations; it lives in the portal package
    from portal.serve import add_parser as add_portal
    from portal.serve import main as portal_main

    add_portal(sub).set_defaults(func=portal_main)
