"""Drill playbooks from the command line: `dagger drill ...` (also `daggers-drill ...`).

    list                    the playbooks of chaos/drills/: name, type, faults, downtime, failover
    validate PLAYBOOK...    check playbooks without touching anything; exit 2 listing every problem
    run PLAYBOOK            run it on the lab, with live progress; the last line printed is the
                            path of the run's report.json (exit 0 pass, 3 fail, 4 aborted);
                            --dry-run prints the plan of steps with their times
    history [RUNS_DIR]      past runs and trends per drill

A PLAYBOOK is a file, or the name of one in chaos/drills/ (kafka-failover).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from dagger_runtime import exit_codes
from dagger_runtime.closed_pipe import survives_closed_pipe

from .plan import plan, render
from .playbook import NAME, PLAYBOOKS_DIR, REPO, Playbook, PlaybookError, fmt_duration, load, playbook_files
from .runs import RUNS_DIR

EXIT_INVALID = exit_codes.REFUSED
EXIT_FAIL = exit_codes.DRILL_FAILED
EXIT_ABORTED = exit_codes.DRILL_ABORTED


def resolve(arg: str, directory: Path = PLAYBOOKS_DIR) -> Path:
    """A path as given, or a drill's name: <directory>/<name>.yaml."""
    path = Path(arg)
    if not path.exists() and NAME.fullmatch(arg):
        for suffix in (".yaml", ".yml", ".json"):
            if (directory / f"{arg}{suffix}").is_file():
                return directory / f"{arg}{suffix}"
    return path


def summary(book: Playbook) -> dict:
    """One playbook as a row of `drill list` (and its --json)."""
    fo = book.failover
    types = sorted({f.system for f in book.faults})
    return {
        "name": book.name,
        "file": book.source,
        "type": ", ".join(types) or (book.type or ""),
        "faults": [
            {
                "name": f.name,
                "kind": f.kind,
                "target": f.describe(),
                "at_s": f.at,
                "downtime_s": f.downtime,
                "recovers": f.recovers,
            }
            for f in book.faults
        ],
        "downtime_s": max((f.downtime for f in book.faults), default=0.0),
        "failover": None
        if fo is None
        else {"kind": fo.kind, "to": fo.to, "mode": fo.mode, "rto_target_s": fo.rto_target},
        "length_s": book.timeline.end,
        "description": book.description,
    }


def _console(file=None):
    from rich.console import Console

    out = file or sys.stdout
    terminal = hasattr(out, "isatty") and out.isatty()
    return Console(file=out, highlight=False, width=None if terminal else 200)


def cmd_list(args) -> int:
    directory = Path(args.dir)
    rows, problems = [], []
    for path in playbook_files(directory):
        try:
            rows.append(summary(load(path)))
        except PlaybookError as e:
            problems.extend(e.problems)
            rows.append({"name": path.stem, "file": str(path), "invalid": e.problems})
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        from rich.table import Table

        table = Table(title=f"drill playbooks in {_shown(directory)}", title_justify="left")
        for column in ("name", "type", "faults", "downtime", "failover", "description"):
            table.add_column(column, overflow="fold")
        for row in rows:
            if "invalid" in row:
                table.add_row(row["name"], "", "", "", "", f"[red]invalid: {len(row['invalid'])} problem(s)[/red]")
                continue
            fo = row["failover"]
            table.add_row(
                row["name"],
                row["type"],
                "\n".join(f"{f['kind']} at {fmt_duration(f['at_s'])}" for f in row["faults"]),
                "\n".join(fmt_duration(f["downtime_s"]) + ("" if f["recovers"] else " (stays)") for f in row["faults"]),
                f"{fo['kind']} -> {fo['to']} ({fo['mode']}, rto {fmt_duration(fo['rto_target_s'])})" if fo else "",
                row["description"],
            )
        _console().print(table if rows else f"no playbooks in {_shown(directory)}")
    for p in problems:
        print(p, file=sys.stderr)
    return EXIT_INVALID if problems else 0


def cmd_validate(args) -> int:
    status, results = 0, []
    for arg in args.playbooks:
        try:
            book = load(resolve(arg))
        except PlaybookError as e:
            status = EXIT_INVALID
            results.append({"playbook": arg, "valid": False, "problems": list(e.problems)})
            if not args.json:
                print(
                    f"{arg}: invalid ({len(e.problems)} problem{'s' if len(e.problems) != 1 else ''})", file=sys.stderr
                )
                for p in e.problems:
                    print(f"  {p}", file=sys.stderr)
            continue
        results.append(
            {
                "playbook": arg,
                "valid": True,
                "name": book.name,
                "source": str(book.source),
                "faults": [f.describe() for f in book.faults],
                "seconds": book.timeline.end,
                "problems": [],
            }
        )
        if not args.json:
            faults = ", ".join(f.describe() for f in book.faults) or "no faults"
            print(f"{book.source}: {book.name}: valid ({faults}; {fmt_duration(book.timeline.end)} in all)")
    if args.json:
        print(json.dumps(results, indent=2))
    return status


def cmd_run(args) -> int:
    try:
        book = load(resolve(args.playbook))
    except PlaybookError as e:
        for p in e.problems:
            print(p, file=sys.stderr)
        return EXIT_INVALID
    if args.dry_run:
        print(render(book, plan(book)))
        return 0
    from .report_model import load_report
    from .runner import DrillRun, LabAccess

    port_base = args.port_base if args.port_base is not None else int(os.environ.get("DAGGER_LAB_PORT_BASE") or 19000)
    err = _console(sys.stderr)
    run = DrillRun(
        book,
        LabAccess.of(args.lab, port_base),
        out_root=args.out,
        seed=args.seed,
        progress=lambda line: err.print(line, markup=False),
        stop_others=args.stop_others,
    )
    err.print(render(book, run.steps), markup=False)
    path = run.execute()
    report = load_report(path)
    err.print(f"drill {book.name}: {report.verdict.upper()}", markup=False)
    for reason in report.verdict_reasons:
        err.print(f"  - {reason}", markup=False)
    for case in report.cases:
        rto = f"rto {case.rto_seconds:g} s" if case.rto_seconds is not None else "rto -"
        err.print(
            f"  {case.name}: {case.verdict}, {rto}, windows {case.windows_matched}/{case.windows_expected} "
            f"matched, {case.windows_missing} missing, {case.windows_extra} extra, {case.windows_wrong} wrong"
            + (f", {case.late_rows_dropped} late row(s) dropped" if case.late_rows_dropped else "")
            + (f", {case.late_messages} late message(s) set aside" if case.late_messages else ""),
            markup=False,
        )
    err.print(f"report: {path.parent / 'report.html'}", markup=False)
    print(path)
    return {"pass": 0, "fail": EXIT_FAIL}.get(report.verdict, EXIT_ABORTED)


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def add_drill_commands(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="command", required=True, metavar="{list,validate,run}")
    p = sub.add_parser(
        "list",
        help="the playbooks of chaos/drills/",
        description="The drill playbooks in a directory (chaos/drills/): name, type, faults, "
        "downtime, failover, description. Exit 2 if one is invalid.",
    )
    p.add_argument("--json", action="store_true", help="one JSON document, for machines")
    p.add_argument(
        "--dir",
        default=str(PLAYBOOKS_DIR),
        metavar="DIR",
        help=f"where the playbooks are (default: {_shown(PLAYBOOKS_DIR)})",
    )
    p.set_defaults(func=cmd_list)
    p = sub.add_parser(
        "validate",
        help="check playbooks, touching nothing",
        description="Check playbooks against the lab's inventory, the descriptor set and the dagger "
        "specs, touching nothing. Every problem as file:line: field: message; exit 2 if "
        "any.",
    )
    p.add_argument("playbooks", nargs="+", metavar="PLAYBOOK", help="a playbook file, or a name in chaos/drills/")
    p.add_argument(
        "--json", action="store_true", help="print one {playbook, valid, problems, ...} per playbook as JSON"
    )
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser(
        "run",
        help="run a drill on the lab (--dry-run: its plan)",
        description="Run a drill on the lab: its daggers deployed, its feeders producing, its faults "
        "injected and undone, the failover, then the verdict from what was fed. Progress "
        "goes to stderr; the last line on stdout is the path of the run's report.json. "
        "Exit 0 pass, 2 invalid playbook, 3 fail, 4 aborted. --dry-run prints the plan: "
        "every step with its time from the drill's start.",
    )
    p.add_argument("playbook", metavar="PLAYBOOK", help="a playbook file, or a name in chaos/drills/")
    p.add_argument(
        "--lab",
        metavar="DIR",
        default=os.environ.get("DAGGER_LAB_DIR") or str(REPO / ".lab"),
        help="the lab's directory (default: DAGGER_LAB_DIR or <repo>/.lab)",
    )
    p.add_argument(
        "--port-base",
        type=int,
        default=None,
        metavar="N",
        help="the lab's port base (default: DAGGER_LAB_PORT_BASE or 19000)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        default=str(RUNS_DIR),
        help="where the run's record goes (default: $DAGGER_DRILL_RUNS, else out/drills)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="chooses the instances a failure_percentage hits (default: random, recorded in the run)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan of steps with their times and exit")
    p.add_argument(
        "--stop-others",
        action="store_true",
        help="stop the lab's daggers that hold the cores or memory the drill needs on its Spark clusters "
        "(default: refuse, naming them)",
    )
    p.set_defaults(func=cmd_run)
    # its own options are chaos.history's (parsed there, so matplotlib loads only for it)
    p = sub.add_parser("history", add_help=False, help="past runs and trends per drill")
    p.set_defaults(func=cmd_history, history_prog=f"{parser.prog} history")


def cmd_history(args) -> int:
    from .history import main as history_main  # matplotlib: only when it is asked for

    return history_main(args.rest, prog=args.history_prog)


def _parse(parser: argparse.ArgumentParser, argv: list[str] | None):
    args, rest = parser.parse_known_args(argv)
    if rest and args.func is not cmd_history:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.rest = rest
    return args


def build_parser(prog: str = "daggers-drill") -> argparse.ArgumentParser:
    """The command line's parser (`dagger` builds it under its own name; docs/reference/commands.md)."""
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_drill_commands(parser)
    return parser


@survives_closed_pipe
def main(argv: list[str] | None = None, prog: str = "daggers-drill") -> int:
    """`daggers-drill list|validate|run`."""
    args = _parse(build_parser(prog), argv)
    return args.func(args)


@survives_closed_pipe
def chaos_main(argv: list[str] | None = None) -> int:
    """`python -m chaos drill list|validate|run`."""
    parser = argparse.ArgumentParser(prog="python -m chaos", description="Chaos and failover drills on the lab.")
    sub = parser.add_subparsers(dest="group", required=True, metavar="{drill}")
    drill = sub.add_parser(
        "drill",
        help="drill playbooks: list, validate, run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_drill_commands(drill)
    args = _parse(parser, argv)
    return args.func(args)
