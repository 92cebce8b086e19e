"""`dagger faults kinds|inject|undo|show`: the drills' faults by hand, on the lab.

    kinds   the catalogue's fault kinds, and which are implemented
    inject  inject one fault, keep it for --downtime, undo it and wait until the targets are
            healthy (Ctrl-C or SIGTERM undo it at once); --keep leaves it injected
    undo    undo what a journal's drill left active (after a crash, a kill -9, or --keep)
    show    what a journal records: each fault, its targets, times, pids, errors

The lab is DAGGER_LAB_DIR / DAGGER_LAB_PORT_BASE (or --lab-dir / --port-base); a journal names
its own lab. Targets: --target CLUSTER[:ID,...] (a Kafka or Spark cluster, and broker ids, worker
programs or addresses, driver ids or dagger names), or a sink's name (influxdb, postgresql).

    dagger faults inject broker-kill --target primary:2 --downtime 30s
    dagger faults inject broker-stop --target primary --failure-percentage 50 --seed 7
    dagger faults inject sink-down --target influxdb --keep
    dagger faults undo .lab/chaos/faults-20261123T220000Z-sink-down.json

Exit status: 0 done and healthy, 1 something still unhealthy or not undone, 2 refused.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import logging
import os
import sys
import time
from pathlib import Path

from chaos.catalog import FAULT_KINDS
from dagger_runtime.closed_pipe import survives_closed_pipe

from .base import HEALTH_TIMEOUT_S, iso, parse_duration
from .errors import FaultError, Interrupted, RollbackError
from .journal import Faults, Journal, rollback
from .kinds import in_scope, make_fault
from .targets import Lab


def _console(file=None):
    from rich.console import Console

    out = file or sys.stdout
    # a log or a pipe gets whole rows, not rich's 80 columns
    return Console(file=out, highlight=False, soft_wrap=True, width=None if out.isatty() else 200)


def _lab(args) -> Lab:
    env = dict(os.environ)
    if args.lab_dir:
        env["DAGGER_LAB_DIR"] = args.lab_dir
    if args.port_base:
        env["DAGGER_LAB_PORT_BASE"] = str(args.port_base)
    return Lab.from_env(env)


def _target(text: str | None, ids: str | None) -> tuple[str | None, list[str] | None]:
    target, listed = text, None
    if text and ":" in text:
        target, _, rest = text.partition(":")
        listed = [i for i in rest.split(",") if i]
    if ids:
        listed = (listed or []) + [i for i in ids.split(",") if i]
    return target or None, listed or None


def _show(console, faults) -> None:
    from rich.table import Table

    table = Table()
    for column in ("kind", "targets", "state", "injected", "undone", "healthy", "pids"):
        table.add_column(column)
    for f in faults:
        signals: dict[int, list[str]] = {}
        for t in f.touched:
            signals.setdefault(t["pid"], []).append(t["signal"].removeprefix("SIG"))
        pids = ", ".join(f"{pid} {'+'.join(sigs)}" for pid, sigs in signals.items()) or "-"
        state = {
            "undone": "[green]undone[/green]",
            "active": "[red]active[/red]",
            "failed": "[red]failed[/red]",
            "injecting": "[red]injecting[/red]",
        }.get(f.state, f.state)
        table.add_row(f.kind, f.label, state, iso(f.injected_at), iso(f.undone_at), iso(f.healthy_at), pids)
    console.print(table)
    for f in faults:
        for line in f.errors + f.unhealthy:
            console.print(f"[red]{f.kind} on {f.label}:[/red] {line}")


def cmd_kinds(args) -> int:
    from rich.table import Table

    if args.json:
        print(json.dumps([{**dataclasses.asdict(k), "implemented": in_scope(k.name)} for k in FAULT_KINDS], indent=2))
        return 0
    table = Table(title="fault kinds (chaos/catalog.py)")
    for column in ("kind", "system", "hits", "does", "undo", "here"):
        table.add_column(column)
    for k in FAULT_KINDS:
        table.add_row(
            k.name,
            k.system,
            k.target,
            k.does,
            k.undo,
            "[green]yes[/green]" if in_scope(k.name) else "[yellow]not yet[/yellow]",
        )
    _console().print(table)
    return 0


def cmd_inject(args) -> int:
    console, err = _console(), _console(sys.stderr)
    lab = _lab(args)
    target, ids = _target(args.target, args.ids)
    fault = make_fault(
        args.kind,
        lab,
        target=target,
        ids=ids,
        failure_percentage=args.failure_percentage,
        seed=args.seed,
        downtime=args.downtime,
        instance_recovery=True,
    )
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = Path(args.journal or lab.dir / "chaos" / f"faults-{stamp}-{args.kind}.json")
    console.print(f"[bold]{fault.kind}[/bold] on {fault.label} (lab {lab.dir}); journal {path}")
    if args.keep:
        path.parent.mkdir(parents=True, exist_ok=True)
        journal = Journal(path, lab, [fault])
        fault.on_change = journal.save
        journal.save()
        try:
            fault.inject()
        except BaseException:
            fault.restore()
            raise
        console.print(fault.describe())
        console.print(f"left injected; undo it with: python -m chaos.faults undo {path}")
        return 0
    started = time.monotonic()
    with Faults(path, lab, timeout_s=args.timeout) as faults:
        faults.inject(fault)
        console.print(f"injected at {iso(fault.injected_at)} ({time.monotonic() - started:.1f} s)")
        with err.status(f"down for {fault.downtime_s:g} s (Ctrl-C undoes it now)"):
            time.sleep(fault.downtime_s)
        with err.status("undoing, waiting until healthy"):
            problems = faults.undo(fault)
    console.print(fault.describe())
    if problems:
        return 1
    console.print(f"[green]healthy again[/green] {fault.healthy_at - fault.undone_at:.1f} s after the undo")
    return 0


def cmd_undo(args) -> int:
    console = _console()
    journal = Journal.load(Path(args.journal))
    if journal.drill_alive() and not args.force:
        raise FaultError(
            f"the drill that wrote {args.journal} (pid {journal.drill['pid']}) still runs: it rolls "
            "its faults back itself; --force to undo them under it"
        )
    left = journal.active()
    if not left:
        console.print(f"nothing to undo: every fault of {args.journal} is undone")
        _show(console, journal.faults)
        return 0
    console.print(f"undoing {len(left)} fault(s) of {args.journal} on the lab at {journal.lab.dir}")
    problems = rollback(journal.faults, wait=not args.no_wait, timeout_s=args.timeout)
    _show(console, journal.faults)
    for p in problems:
        console.print(f"[red]still wrong:[/red] {p}")
    return 1 if problems else 0


def cmd_show(args) -> int:
    journal = Journal.load(Path(args.journal))
    if args.json:
        print(
            json.dumps(
                {
                    "journal": str(args.journal),
                    "lab": journal.lab.as_dict(),
                    "drill": {**(journal.drill or {}), "running": journal.drill_alive()},
                    "active": [f.kind for f in journal.active()],
                    "faults": [f.to_dict() for f in journal.faults],
                },
                indent=2,
                default=str,
            )
        )
        return 1 if journal.active() else 0
    console = _console()
    console.print(
        f"journal {args.journal}: lab {journal.lab.dir} (port base {journal.lab.port_base}), "
        f"drill pid {journal.drill.get('pid')}{' (still running)' if journal.drill_alive() else ''}"
    )
    _show(console, journal.faults)
    return 1 if journal.active() else 0


def build_parser(prog: str = "python -m chaos.faults") -> argparse.ArgumentParser:
    """The command line's parser (`dagger` builds it under its own name; docs/reference/commands.md)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    commands = parser.add_subparsers(dest="command", required=True)
    kinds = commands.add_parser("kinds", help="the catalogue's fault kinds")
    kinds.add_argument("--json", action="store_true", help="print the kinds as JSON")

    inject = commands.add_parser("inject", help="inject one fault, keep it for --downtime, undo it")
    inject.add_argument(
        "kind", choices=[k.name for k in FAULT_KINDS], metavar="KIND", help="a kind of chaos/catalog.py (see `kinds`)"
    )
    inject.add_argument("--target", help="CLUSTER[:ID,...] or a sink (influxdb, postgresql)")
    inject.add_argument("--ids", help="instances, comma-separated (same as after the ':' of --target)")
    inject.add_argument(
        "--failure-percentage",
        type=float,
        metavar="P",
        help="instead of ids: P%% of the cluster's instances, rounded up, at least one",
    )
    inject.add_argument("--seed", default="0", help="which instances a --failure-percentage picks (default 0)")
    inject.add_argument("--downtime", default="30s", help="how long it stays (30s, 2m; default 30s)")
    inject.add_argument("--keep", action="store_true", help="leave it injected; undo it later from the journal")
    inject.add_argument("--journal", help="the journal file (default <lab>/chaos/faults-<time>-<kind>.json)")
    inject.add_argument(
        "--timeout",
        type=float,
        default=HEALTH_TIMEOUT_S,
        help=f"seconds to wait for health after the undo (default {HEALTH_TIMEOUT_S:g})",
    )

    undo = commands.add_parser("undo", help="undo what a journal's drill left active")
    undo.add_argument("journal", metavar="JOURNAL")
    undo.add_argument(
        "--timeout",
        type=float,
        default=HEALTH_TIMEOUT_S,
        help=f"seconds to wait for health (default {HEALTH_TIMEOUT_S:g})",
    )
    undo.add_argument("--no-wait", action="store_true", help="restore, do not wait for health")
    undo.add_argument("--force", action="store_true", help="even when the drill that wrote it still runs")

    show = commands.add_parser("show", help="what a journal records")
    show.add_argument("journal", metavar="JOURNAL")
    show.add_argument("--json", action="store_true", help="print the journal's faults as JSON")

    for sub in (inject,):
        # --lab as `drill run` spells it; --lab-dir, its first spelling here, still works
        sub.add_argument(
            "--lab",
            "--lab-dir",
            dest="lab_dir",
            metavar="DIR",
            help="the lab (default $DAGGER_LAB_DIR, else <repo>/.lab)",
        )
        sub.add_argument("--port-base", type=int, help="its port base (default $DAGGER_LAB_PORT_BASE, else 19000)")
    return parser


@survives_closed_pipe
def main(argv: list[str] | None = None, prog: str = "python -m chaos.faults") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    # kafka-python logs every refused connection while brokers are down: the health lines say it
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    if getattr(args, "downtime", None) is not None:
        try:
            parse_duration(args.downtime)
        except FaultError as e:
            parser.error(str(e))
    try:
        return {"kinds": cmd_kinds, "inject": cmd_inject, "undo": cmd_undo, "show": cmd_show}[args.command](args)
    except RollbackError as e:
        print(f"chaos.faults: {e}", file=sys.stderr)
        return 1
    except FaultError as e:
        print(f"chaos.faults: {e}", file=sys.stderr)
        return 2
    except (Interrupted, KeyboardInterrupt) as e:
        # the faults were rolled back on the way out
        signum = getattr(e, "signum", 2)
        print(f"chaos.faults: interrupted by signal {signum}; rolled back", file=sys.stderr)
        return 128 + signum
