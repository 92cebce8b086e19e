"""Every drill run, one line each, in `<runs_dir>/history.jsonl`; trends per drill over the runs.

    append(runs_dir, report, report_path)   # the runner, once per run (locked: runs may end together)
    trends(runs_dir)                        # per drill: verdict counts, per case RTO over the runs
    write_trends_html(runs_dir, path)       # the same as a self-contained HTML page

    python -m chaos.history [RUNS_DIR] [--json] [--html PATH] [--drill NAME] [--limit N]

A line is a compact summary of one report.json (drill, run id, start, verdict, per case the RTO
and the windows missing, extra and wrong). A run killed while appending leaves a truncated last
line: readers skip it (and say so), the next append starts on a fresh line. The same run appended
twice counts once (the last line wins).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import statistics
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import matplotlib
from markupsafe import Markup
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from rich.console import Console
from rich.table import Table

from chaos.report_model import Report, iso, load_report, parse_report
from chaos.runs import RUNS_DIR
from dagger_runtime.closed_pipe import survives_closed_pipe

HISTORY = "history.jsonl"
ENTRY_SCHEMA = 1
DEFAULT_RUNS_DIR = RUNS_DIR
CASE_COLOURS = ["#0969da", "#e16f24", "#8250df", "#1b7c83", "#bf3989", "#9a6700", "#57606a"]


# ------------------------------------------------------------------------------------------- writing


def summary(report: Report, report_path: str | Path | None = None, runs_dir: str | Path | None = None) -> dict:
    """The history line of one run (a dict; `append` writes it as one line of compact JSON)."""
    where = None
    if report_path is not None:
        where = str(report_path)
        if runs_dir is not None:
            try:
                where = os.path.relpath(Path(report_path).resolve(), Path(runs_dir).resolve())
            except ValueError:
                pass
    return {
        "schema": ENTRY_SCHEMA,
        "drill": report.drill.name,
        "run_id": report.run.id,
        "started_at": iso(report.run.started_at),
        "ended_at": iso(report.run.ended_at),
        "verdict": report.verdict,
        "git_commit": report.run.git_commit,
        "report": where,
        "cases": [
            {
                "name": c.name,
                "verdict": c.verdict,
                "failover": c.failover,
                "rto_seconds": c.rto_seconds,
                "rto_target_seconds": c.rto_target_seconds,
                "windows_missing": c.windows_missing,
                "windows_extra": c.windows_extra,
                "windows_wrong": c.windows_wrong,
            }
            for c in report.cases
        ],
    }


def append(runs_dir: str | Path, report: Report | dict | str | Path, report_path: str | Path | None = None) -> dict:
    """Append the run's line to `<runs_dir>/history.jsonl` under an exclusive lock; returns the entry.

    `report` is a Report, its dict or the path of its report.json (then `report_path` defaults to it)."""
    if isinstance(report, (str, Path)):
        report_path = report_path or report
        report = load_report(report)
    elif isinstance(report, dict):
        report = parse_report(report)
    runs_dir = Path(runs_dir)
    runs_dir.mkdir(parents=True, exist_ok=True)
    entry = summary(report, report_path, runs_dir)
    line = (json.dumps(entry, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(runs_dir / HISTORY, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # a writer died mid-line: leave its fragment on a line of its own
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)  # releases the lock
    return entry


# ------------------------------------------------------------------------------------------- reading


@dataclass
class History:
    entries: list[dict] = field(default_factory=list)  # in start order, one per run id
    skipped: list[str] = field(default_factory=list)  # "line 7: truncated ..." for each unreadable line


def _valid(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and entry.get("schema") == ENTRY_SCHEMA
        and all(isinstance(entry.get(k), str) for k in ("drill", "run_id", "started_at", "verdict"))
        and isinstance(entry.get("cases"), list)
        and all(isinstance(c, dict) and "name" in c for c in entry["cases"])
    )


def read_history(runs_dir: str | Path) -> History:
    path = Path(runs_dir) / HISTORY
    history = History()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return history
    lines = raw.split(b"\n")
    complete = raw.endswith(b"\n")
    by_run: dict[str, dict] = {}
    for n, chunk in enumerate(lines, 1):
        if not chunk.strip():
            continue
        last = n == len(lines) and not complete
        try:
            entry = json.loads(chunk.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            history.skipped.append(f"line {n}: {'truncated last line' if last else 'not JSON'} ({len(chunk)} bytes)")
            continue
        if not _valid(entry):
            history.skipped.append(f"line {n}: not a history entry of schema {ENTRY_SCHEMA}")
            continue
        by_run.pop(entry["run_id"], None)
        by_run[entry["run_id"]] = entry
    history.entries = sorted(by_run.values(), key=lambda e: e["started_at"])
    return history


def _stats(values: list[float]) -> dict:
    if not values:
        return {"last": None, "median": None, "max": None}
    return {"last": values[-1], "median": round(statistics.median(values), 3), "max": max(values)}


def trends(runs_dir: str | Path, history: History | None = None) -> list[dict]:
    """Per drill (by name): runs and verdicts, the last run, and per case the RTO over the runs
    (last, median, max against the latest target, how often over target) and how many runs lost
    or changed results. JSON-ready."""
    history = history or read_history(runs_dir)
    drills: dict[str, list[dict]] = {}
    for e in history.entries:
        drills.setdefault(e["drill"], []).append(e)
    out = []
    for drill in sorted(drills):
        runs = drills[drill]
        verdicts = {v: sum(r["verdict"] == v for r in runs) for v in ("pass", "fail", "aborted")}
        case_names: list[str] = []
        for r in runs:
            for c in r["cases"]:
                if c["name"] not in case_names:
                    case_names.append(c["name"])
        cases = []
        for name in case_names:
            series = []
            for r in runs:
                c = next((c for c in r["cases"] if c["name"] == name), None)
                if c is not None:
                    series.append(
                        {
                            "run_id": r["run_id"],
                            "started_at": r["started_at"],
                            "run_verdict": r["verdict"],
                            **{
                                k: c.get(k)
                                for k in (
                                    "verdict",
                                    "rto_seconds",
                                    "rto_target_seconds",
                                    "windows_missing",
                                    "windows_extra",
                                    "windows_wrong",
                                )
                            },
                        }
                    )
            rtos = [s["rto_seconds"] for s in series if s["rto_seconds"] is not None]
            targets = [s["rto_target_seconds"] for s in series if s["rto_target_seconds"] is not None]
            cases.append(
                {
                    "name": name,
                    "runs": len(series),
                    "passed": sum(s["verdict"] == "pass" for s in series),
                    "rto_target_seconds": targets[-1] if targets else None,
                    "rto_seconds": _stats(rtos),
                    "over_target": sum(
                        1
                        for s in series
                        if s["rto_seconds"] is not None
                        and s["rto_target_seconds"] is not None
                        and s["rto_seconds"] > s["rto_target_seconds"]
                    ),
                    "runs_losing_data": sum(
                        1 for s in series if (s["windows_missing"] or 0) + (s["windows_wrong"] or 0)
                    ),
                    "series": series,
                }
            )
        last = runs[-1]
        out.append(
            {
                "drill": drill,
                "runs": len(runs),
                "verdicts": verdicts,
                "pass_rate": round(verdicts["pass"] / len(runs), 3),
                "last": {k: last[k] for k in ("run_id", "started_at", "verdict")},
                "cases": cases,
            }
        )
    return out


# ---------------------------------------------------------------------------------------------- html


def _when(started_at: str) -> datetime:
    return datetime.fromisoformat(started_at.replace("Z", "+00:00"))


def trend_figure(trend: dict, runs: list[dict]) -> tuple[Figure, str]:
    """RTO per case over the drill's runs (x: runs in start order), each case's target dashed, each
    point marked by the case's verdict; a strip of run verdicts along the top."""
    from chaos.report_html import COLOURS, RC, mpl_text

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(10, 3.1), layout="constrained")
        ax = fig.subplots()
        x_of = {r["run_id"]: i for i, r in enumerate(runs)}
        handles: list[Any] = []
        top = 0.0
        for j, case in enumerate(trend["cases"]):
            colour = CASE_COLOURS[j % len(CASE_COLOURS)]
            pts = [
                (x_of[s["run_id"]], s["rto_seconds"], s["verdict"])
                for s in case["series"]
                if s["rto_seconds"] is not None
            ]
            if pts:
                (line,) = ax.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    color=colour,
                    lw=1.3,
                    label=mpl_text(f"{case['name']} RTO"),
                )
                line.set_gid(f"case-{j}")
                handles.append(line)
                top = max(top, max(p[1] for p in pts))
                for verdict, marker in (("pass", "o"), ("fail", "X")):
                    sel = [p for p in pts if p[2] == verdict]
                    if sel:
                        ax.scatter(
                            [p[0] for p in sel],
                            [p[1] for p in sel],
                            marker=marker,
                            s=34 if marker == "o" else 52,
                            color=COLOURS[verdict],
                            edgecolors=colour,
                            linewidths=1.2,
                            zorder=3,
                        ).set_gid(f"case-{j}-{verdict}")
            targets = [
                (x_of[s["run_id"]], s["rto_target_seconds"])
                for s in case["series"]
                if s["rto_target_seconds"] is not None
            ]
            if targets:
                (target_line,) = ax.step(
                    [t[0] for t in targets],
                    [t[1] for t in targets],
                    where="mid",
                    color=colour,
                    ls="--",
                    lw=1,
                    alpha=0.8,
                )
                target_line.set_gid(f"target-{j}")
                top = max(top, max(t[1] for t in targets))
        for i, r in enumerate(runs):
            ax.plot(
                [i],
                [1.05],
                ls="",
                marker="s",
                ms=7,
                color=COLOURS.get(r["verdict"], "#8c959f"),
                transform=ax.get_xaxis_transform(),
                clip_on=False,
                zorder=4,
            )[0].set_gid(f"run-{i}")
        ax.set_ylim(0, (top or 1) * 1.15)
        ax.set_xlim(-0.5, len(runs) - 0.5)
        step = max(1, len(runs) // 12)
        ticks = list(range(0, len(runs), step))
        ax.set_xticks(ticks, [_when(runs[i]["started_at"]).strftime("%m-%d\n%H:%M") for i in ticks])
        ax.set_ylabel("RTO (s)")
        ax.set_xlabel("runs, in start order (UTC); squares along the top: the run's verdict")
        ax.grid(True, axis="y")
        extra = [
            Line2D([], [], color="#57606a", ls="--", label="target"),
            Line2D([], [], ls="", marker="o", color=COLOURS["pass"], label="case passed"),
            Line2D([], [], ls="", marker="X", color=COLOURS["fail"], label="case failed"),
        ]
        ax.legend(handles=handles + extra, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    parts = [f"RTO of each case of drill {trend['drill']} over its {len(runs)} runs"]
    for case in trend["cases"]:
        st = case["rto_seconds"]
        if st["last"] is not None:
            parts.append(
                f"{case['name']}: last {st['last']:.1f} s, median {st['median']:.1f} s, worst {st['max']:.1f} s"
                + ("" if case["rto_target_seconds"] is None else f", target {case['rto_target_seconds']:g} s")
                + f", over target in {case['over_target']} runs"
            )
    parts.append(
        f"run verdicts: {trend['verdicts']['pass']} pass, {trend['verdicts']['fail']} fail, "
        f"{trend['verdicts']['aborted']} aborted"
    )
    return fig, "; ".join(parts) + "."


def _rto_text(case: dict) -> str:
    rto, target = case.get("rto_seconds"), case.get("rto_target_seconds")
    return ("–" if rto is None else f"{rto:g} s") + ("" if target is None else f" / {target:g} s")


# what a run's link may be on the history page: a path to a report's HTML, of plain characters
# (a browser strips blanks and tabs from a URL, so " javascript:..." is not plain), never "//host"
RELATIVE_HTML = re.compile(r"(?!//)[A-Za-z0-9._/][A-Za-z0-9._/-]*\.html")


def render_trends_html(runs_dir: str | Path) -> str:
    """Per drill, its RTO over runs as a figure and its runs as a table (chaos/templates/trends.html.j2)."""

    from chaos.report_html import figure_svg, templates

    history = read_history(runs_dir)
    drills = []
    used: set[str] = set()
    for trend in trends(runs_dir, history):
        slug = re.sub(r"[^a-z0-9]+", "-", trend["drill"].lower()).strip("-") or "drill"
        while slug in used:
            slug += "-x"
        used.add(slug)
        runs = [e for e in history.entries if e["drill"] == trend["drill"]]
        fig, desc = trend_figure(trend, runs)
        svg = figure_svg(fig, f"trend-{slug}", f"RTO over runs of drill {trend['drill']}", desc)
        rows = []
        for r in reversed(runs):
            href = None
            if r.get("report"):
                target = Path(r["report"]).with_suffix(".html").as_posix()
                if RELATIVE_HTML.fullmatch(target):  # a relative path only: never a URL, a scheme or a blank
                    href = target
            cases = [
                {
                    "name": c["name"],
                    "rto": _rto_text(c),
                    "missing": c.get("windows_missing"),
                    "extra": c.get("windows_extra"),
                    "wrong": c.get("windows_wrong"),
                    "verdict": c.get("verdict"),
                }
                for c in r["cases"]
            ]
            started = _when(r["started_at"]).strftime("%Y-%m-%d %H:%M:%S")
            rows.append(
                {"started": started, "run_id": r["run_id"], "href": href, "verdict": r["verdict"], "cases": cases}
            )
        drills.append({"trend": trend, "slug": slug, "svg": Markup(svg), "rows": rows})
    return (
        templates()
        .get_template("trends.html.j2")
        .render(
            title="Drill history",
            runs=len(history.entries),
            drills=drills,
            source=str(Path(runs_dir) / HISTORY),
            skipped=history.skipped,
        )
    )


def write_trends_html(runs_dir: str | Path, path: str | Path) -> Path:
    """Per drill, RTO over runs against the target with pass/fail markers, and the runs; one
    self-contained HTML file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(render_trends_html(runs_dir), encoding="utf-8")
    tmp.replace(path)
    return path


# ----------------------------------------------------------------------------------------------- cli


def _print_tables(history: History, all_trends: list[dict], limit: int, console: Any) -> None:
    colour = {"pass": "green", "fail": "bold red", "aborted": "yellow"}

    def red_if(text: str, bad: bool) -> str:
        return f"[red]{text}[/red]" if bad else text

    runs = history.entries[-limit:] if limit else history.entries
    table = Table(title=f"drill runs ({len(runs)} of {len(history.entries)}, latest last)", title_justify="left")
    table.add_column("started (UTC)", no_wrap=True)
    table.add_column("drill")
    table.add_column("run", overflow="fold")
    table.add_column("verdict", no_wrap=True)
    table.add_column("case")
    table.add_column("RTO / target", justify="right", no_wrap=True)
    table.add_column("missing/extra/wrong", justify="right", no_wrap=True)
    for r in runs:
        cases = r["cases"] or [{}]
        for k, c in enumerate(cases):
            rto, target = c.get("rto_seconds"), c.get("rto_target_seconds")
            counts = [c.get(f"windows_{x}") for x in ("missing", "extra", "wrong")]
            head = (
                [
                    _when(r["started_at"]).strftime("%Y-%m-%d %H:%M"),
                    r["drill"],
                    r["run_id"],
                    f"[{colour.get(r['verdict'], '')}]{r['verdict']}[/]",
                ]
                if k == 0
                else ["", "", "", ""]
            )
            case = "" if not c else c["name"] + ("" if c.get("verdict") == "pass" else " [red](fail)[/red]")
            table.add_row(
                *head,
                case,
                red_if(_rto_text(c), rto is not None and target is not None and rto > target) if c else "",
                "/".join(red_if("–" if n is None else str(n), bool(n)) for n in counts) if c else "",
                end_section=k == len(cases) - 1,
            )
    console.print(table)

    summary_table = Table(title="per drill", title_justify="left")
    summary_table.add_column("drill", overflow="fold")
    summary_table.add_column("runs", justify="right")
    summary_table.add_column("pass/fail/aborted", justify="right", no_wrap=True)
    summary_table.add_column("last", no_wrap=True)
    summary_table.add_column("case", overflow="fold")
    summary_table.add_column("RTO last/median/worst", justify="right", no_wrap=True)
    summary_table.add_column("target", justify="right", no_wrap=True)
    summary_table.add_column("runs over target", justify="right")
    summary_table.add_column("runs losing data", justify="right")
    for t in all_trends:
        cases = t["cases"] or [None]
        v = t["verdicts"]
        for k, c in enumerate(cases):
            head = (
                [
                    t["drill"],
                    str(t["runs"]),
                    f"{v['pass']}/{red_if(str(v['fail']), bool(v['fail']))}/{v['aborted']}",
                    f"[{colour.get(t['last']['verdict'], '')}]{t['last']['verdict']}[/]",
                ]
                if k == 0
                else [""] * 4
            )
            if c is None:
                summary_table.add_row(*head, "", "", "", "", "")
                continue
            st = c["rto_seconds"]
            rto = "–" if st["last"] is None else f"{st['last']:.1f} / {st['median']:.1f} / {st['max']:.1f} s"
            summary_table.add_row(
                *head,
                c["name"],
                rto,
                "–" if c["rto_target_seconds"] is None else f"{c['rto_target_seconds']:g} s",
                red_if(str(c["over_target"]), bool(c["over_target"])),
                red_if(str(c["runs_losing_data"]), bool(c["runs_losing_data"])),
                end_section=k == len(cases) - 1,
            )
    console.print(summary_table)


@survives_closed_pipe
def main(argv: list[str] | None = None, console: Any = None, prog: str = "python -m chaos.history") -> int:
    """`dagger drill history` (and `python -m chaos.history`): the runs and trends per drill."""
    p = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    p.add_argument(
        "runs_dir",
        nargs="?",
        type=Path,
        default=DEFAULT_RUNS_DIR,
        help=f"folder of the drill runs, holding {HISTORY} (default: $DAGGER_DRILL_RUNS, else out/drills)",
    )
    p.add_argument("--json", action="store_true", help="print the trends as JSON instead of tables")
    p.add_argument("--html", type=Path, metavar="PATH", help="also write the trends as a self-contained HTML page")
    p.add_argument("--drill", help="only this drill")
    p.add_argument("--limit", type=int, default=20, help="runs shown in the table (0: all; default 20)")
    args = p.parse_args(argv)

    console = console or Console()
    err = Console(stderr=True, soft_wrap=True)  # a path and its problem stay on one line in a log
    history = read_history(args.runs_dir)
    for line in history.skipped:
        err.print(f"[yellow]{args.runs_dir / HISTORY}: skipped {line}[/yellow]", highlight=False)
    if args.drill:
        history.entries = [e for e in history.entries if e["drill"] == args.drill]
    all_trends = trends(args.runs_dir, history)
    if args.html:
        if args.drill:
            # the page reads the whole history; a drill filter applies to the terminal output only
            err.print("note: --html writes every drill (--drill filters the terminal output)")
        write_trends_html(args.runs_dir, args.html)
        err.print(f"wrote {args.html}", highlight=False)
    if args.json:
        print(
            json.dumps(
                {
                    "runs_dir": str(args.runs_dir),
                    "runs": len(history.entries),
                    "skipped": history.skipped,
                    "drills": all_trends,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    if not history.entries:
        console.print(f"no drill runs recorded in {args.runs_dir / HISTORY}", highlight=False)
        return 0
    _print_tables(history, all_trends, args.limit, console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
