"""A drill's report as ONE self-contained HTML file, and a few lines of Markdown for terminals and CI.

    write_html(report, "out/drills/<run>/report.html")   # report: a Report, a dict or a report.json path
    print(write_markdown_summary(report))

The file opens offline: no script, no external stylesheet, font or image; the figures are matplotlib
figures rendered to SVG and inlined (text kept as <text>, each with <title> and <desc> for screen
readers, ids prefixed per figure so that several figures never share one). Every string from the
report is escaped: drill names and descriptions come from playbooks. The page is Jinja2's, from
chaos/templates/ (report.html.j2, a case's card in case.html.j2, the drill history's trends.html.j2),
autoescaping everything but the figures' SVG built here; this module gives them their data.

The figures carry ids the tests and tools can count: `timeline-fault-<k>-<panel>` is fault k's shading
in each panel of the timeline, `timeline-event-<i>-<panel>` event i's marker, `rto-<case>-step-<j>`
step j of a case's RTO bar.
"""

from __future__ import annotations

import functools
import html
import io
import json
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

import jinja2
import matplotlib
from markupsafe import Markup
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from chaos.catalog import BY_NAME as FAULT_KINDS
from chaos.report_model import Case, Report, iso, load_report, parse_report

COLOURS = {"pass": "#1a7f37", "fail": "#cf222e", "aborted": "#9a6700"}
SERIES_COLOURS = {
    "throughput": "#0969da",
    "processed": "#e16f24",
    "consumer_lag": "#6639ba",
    "latency_ms": "#1b7c83",
    "mirror_lag": "#bf3989",
}
FAULT_COLOUR = "#cf222e"
EVENT_STYLES = {  # the events drawn on the timeline: colour, line style, legend label
    "failover": ("#24292f", "-", "failover"),
    "fail-back": ("#57606a", "-.", "fail-back"),
    "first-batch": ("#1a7f37", "--", "first batch"),
    "abort": ("#cf222e", ":", "abort"),
}
STEP_COLOURS = ["#0969da", "#e16f24", "#8250df", "#1b7c83", "#bf3989", "#9a6700", "#57606a"]
PHASES = (
    ("before", "Before the fault: steady state"),
    ("during", "During the fault"),
    ("after", "After the fault: recovered"),
)
RC = {
    "svg.fonttype": "none",  # text stays text: selectable, searchable, smaller
    "svg.hashsalt": "daggers-drill-report",  # the same report gives the same SVG
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],  # matplotlib's own: measured text matches the browser's
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#8c959f",
    "axes.labelcolor": "#24292f",
    "axes.titlesize": 9,
    "xtick.color": "#57606a",
    "ytick.color": "#57606a",
    "grid.color": "#d0d7de",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
}

CSS = """
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#fff;--soft:#f6f8fa;--pass:#1a7f37;--fail:#cf222e;
--aborted:#9a6700}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI","DejaVu Sans",Roboto,Arial,sans-serif;
color:var(--fg);background:var(--bg)}
main,header .inner,footer{max-width:1180px;margin:0 auto;padding:0 24px}
header{border-bottom:1px solid var(--line);background:var(--soft);padding:20px 0}
header .inner{display:flex;gap:24px;align-items:center}
.verdict{font-size:40px;font-weight:800;letter-spacing:.04em;color:#fff;border-radius:10px;padding:10px 26px;
text-transform:uppercase;white-space:nowrap}
.v-pass{background:var(--pass)}.v-fail{background:var(--fail)}.v-aborted{background:var(--aborted)}
h1{font-size:26px;margin:0 0 4px;word-break:break-word}
h2{font-size:19px;margin:32px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:16px;margin:0}
.muted{color:var(--muted)}
.desc{margin:0;max-width:80ch}
dl.meta{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:4px 24px;margin:16px 0}
dl.meta div{display:flex;gap:8px;min-width:0}
dl.meta dt{color:var(--muted);flex:0 0 92px}
dl.meta dd{margin:0;overflow-wrap:anywhere}
.reasons{border-left:4px solid var(--line);padding:6px 14px;margin:12px 0;background:var(--soft)}
.reasons.r-fail{border-color:var(--fail)}.reasons.r-aborted{border-color:var(--aborted)}
.reasons.r-pass{border-color:var(--pass)}
.reasons ul{margin:4px 0;padding-left:20px}
.tiles{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.tile{border:1px solid var(--line);border-radius:8px;padding:8px 14px;min-width:150px}
.tile b{display:block;font-size:20px}
table{border-collapse:collapse;width:100%;margin:6px 0 12px;font-variant-numeric:tabular-nums}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
thead th{font-size:12px;color:var(--muted);font-weight:600;border-bottom:2px solid var(--line)}
td.num,th.num{text-align:right}
tbody th[scope=rowgroup]{background:var(--soft);font-weight:600;padding-top:8px}
.badge{display:inline-block;border-radius:999px;padding:1px 10px;font-size:12px;font-weight:700;color:#fff;
text-transform:uppercase;letter-spacing:.03em;white-space:nowrap}
.b-pass,.b-ok{background:var(--pass)}.b-fail{background:var(--fail)}.b-aborted,.b-unknown{background:var(--aborted)}
.b-none{background:#8c959f}
.bad{color:var(--fail);font-weight:700}.good{color:var(--pass)}
figure{margin:8px 0 16px}
figcaption{color:var(--muted);font-size:13px}
svg.figure{display:block;width:100%;height:auto}
svg.figure *{stroke-linejoin:round;stroke-linecap:butt}
.cards{display:grid;gap:16px}
.card{border:1px solid var(--line);border-radius:10px;padding:14px 18px;border-top:5px solid var(--line)}
.card.c-pass{border-top-color:var(--pass)}.card.c-fail{border-top-color:var(--fail)}
.card-head{display:flex;flex-wrap:wrap;gap:10px;align-items:baseline;margin-bottom:8px}
.card-body{display:grid;grid-template-columns:minmax(0,5fr) minmax(0,6fr);gap:20px}
.rto-big{font-size:28px;font-weight:800}
.rto-big small{font-size:14px;font-weight:400;color:var(--muted)}
h4{font-size:13px;margin:10px 0 2px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
mark{background:#fff8c5;color:inherit;padding:0 2px}
code,.mono{font-family:ui-monospace,SFMono-Regular,"DejaVu Sans Mono",Menlo,monospace;font-size:12.5px}
footer{color:var(--muted);font-size:12px;padding-top:24px;padding-bottom:32px}
@media (max-width:800px){.card-body{grid-template-columns:1fr}header .inner{flex-direction:column;
align-items:flex-start}}
@media print{
body{font-size:10pt}main,header .inner,footer{max-width:none;padding:0}
header{background:none;border-bottom:2px solid #000;padding:0 0 8px}
.verdict,.badge,.card{-webkit-print-color-adjust:exact;print-color-adjust:exact}
h2{break-after:avoid}
figure,.card,tr,.tile,.reasons{break-inside:avoid}
.card-body{grid-template-columns:1fr 1fr}
}
"""


# --------------------------------------------------------------------------------------------- text


def mpl_text(value: Any) -> str:
    """A report string for a matplotlib label: '$' would start mathtext (and fail on '$5 and $6')."""
    return str(value).replace("\\", "\\\\").replace("$", r"\$")


def fmt_count(n: int | float | None) -> str:
    if n is None:
        return "–"
    if isinstance(n, float) and not n.is_integer():
        return f"{n:,.1f}"
    return f"{int(n):,}"


def fmt_number(x: float | None, unit: str = "") -> str:
    if x is None:
        return "–"
    text = f"{x:,.0f}" if float(x).is_integer() else f"{x:.3g}" if abs(x) < 1 else f"{x:,.1f}"
    return f"{text} {unit}".rstrip() if unit else text


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "–"
    return f"{s:.1f} s"


def fmt_duration(s: float) -> str:
    s = max(0.0, s)
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m} min {sec} s"
    h, m = divmod(m, 60)
    return f"{h} h {m} min"


def fmt_time(at: datetime | None, report: Report) -> str:
    """15:22:04.4 UTC (t+120.4 s)"""
    if at is None:
        return "–"
    return f"{at:%H:%M:%S}.{at.microsecond // 100000} UTC (t+{report.since_start(at):.1f} s)"


def fmt_value(value: Any) -> str:
    """An example's window, key or aggregate as short text: dicts as k=v, the rest as JSON."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={fmt_value(v)}" for k, v in value.items())
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


# ------------------------------------------------------------------------------------------- figures


def figure_svg(fig: Figure, prefix: str, title: str, desc: str) -> str:
    """An inline <svg> of a matplotlib figure: no XML prolog or metadata, every id prefixed (several
    figures share one HTML document), <title> and <desc> for screen readers, scaled to its container."""
    buf = io.StringIO()
    with matplotlib.rc_context(RC):  # svg.* are read when saving
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'<style type="text/css">\*\{stroke-linejoin: round; stroke-linecap: butt\}</style>\s*', "", svg)
    ids = set(re.findall(r'\bid="([^"]+)"', svg))

    def rename(m: re.Match) -> str:
        name = m.group(2)
        return f"{m.group(1)}{prefix}-{name}{m.group(3)}" if name in ids else m.group(0)

    svg = re.sub(r'(\bid=")([^"]+)(")', rename, svg)
    svg = re.sub(r"(url\(#)([^)]+)(\))", rename, svg)
    svg = re.sub(r'(href="#)([^"]+)(")', rename, svg)

    def root(m: re.Match) -> str:
        attrs = m.group(1)
        width = re.search(r'\bwidth="([\d.]+)pt"', attrs)
        attrs = re.sub(r'\s(width|height)="[^"]*"', "", attrs)
        max_width = f"max-width:{float(width.group(1)) * 4 / 3:.0f}px;" if width else ""
        return (
            f'<svg{attrs} class="figure" role="img" aria-labelledby="{prefix}-title {prefix}-desc" '
            f'style="{max_width}" preserveAspectRatio="xMinYMin meet">'
            f'<title id="{prefix}-title">{esc(title)}</title><desc id="{prefix}-desc">{esc(desc)}</desc>'
        )

    return re.sub(r"<svg([^>]*)>", root, svg, count=1)


def _thousands(x: float, _pos: Any = None) -> str:
    return f"{x:,.0f}" if abs(x) >= 10 or float(x).is_integer() else f"{x:g}"


def _nan(values: Iterable[float | None], scale: float = 1.0) -> list[float]:
    return [math.nan if v is None else v * scale for v in values]


PANELS = (  # (panel, [(series, legend label, scale)], y label)
    (
        "rate",
        [("throughput", "produced (msg/s)", 1.0), ("processed", "processed by the daggers (rows/s)", 1.0)],
        "rate (per second)",
    ),
    ("lag", [("consumer_lag", "consumer lag (messages)", 1.0)], "consumer lag\n(messages)"),
    ("latency", [("latency_ms", "end-to-end latency (s)", 0.001)], "end-to-end\nlatency (s)"),
    ("mirror", [("mirror_lag", "mirror lag (messages)", 1.0)], "mirror lag\n(messages)"),
)


def timeline_figure(report: Report) -> tuple[Figure, str] | None:
    """The stacked timeline panels and a text description of them; None when nothing was recorded."""
    tl = report.timeline
    panels = [
        (name, [(s, label, scale) for s, label, scale in series if tl.series(s) is not None], ylabel)
        for name, series, ylabel in PANELS
    ]
    panels = [p for p in panels if p[1]]
    if not panels or not tl.t:
        return None
    x = [t - report.t0 for t in tl.t]
    end = report.run.duration_seconds
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(11, 0.7 + 1.75 * len(panels)), layout="constrained")
        axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
        handles: list[Any] = []
        for p, (ax, (_name, series, ylabel)) in enumerate(zip(axes, panels)):
            for s, label, scale in series:
                (line,) = ax.plot(
                    x,
                    _nan(tl.series(s), scale),
                    color=SERIES_COLOURS[s],
                    lw=1.4,
                    label=label,
                    marker="o" if len(x) < 30 else None,
                    ms=2.5,
                )
                line.set_gid(f"series-{s}")
                handles.append(line)
            ax.set_ylabel(ylabel)
            ax.set_ylim(bottom=0)
            ax.grid(True, axis="y")
            ax.yaxis.set_major_locator(MaxNLocator(4))
            ax.yaxis.set_major_formatter(FuncFormatter(_thousands))
            for k, fault in enumerate(report.faults):
                x0 = report.since_start(fault.injected_at)
                x1 = report.since_start(fault.undone_at) if fault.undone_at else end
                span = ax.axvspan(x0, x1, color=FAULT_COLOUR, alpha=0.11, lw=0, hatch=None if fault.undone_at else "//")
                span.set_gid(f"fault-{k}-{p}")
                if p == 0:
                    label = fault.name if fault.undone_at else f"{fault.name} (not undone)"
                    text = ax.text(
                        x0 + end * 0.004,
                        0.97 - 0.13 * (k % 3),
                        mpl_text(label),
                        transform=ax.get_xaxis_transform(),
                        va="top",
                        ha="left",
                        fontsize=8,
                        color=FAULT_COLOUR,
                        fontweight="bold",
                        bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1.5},
                    )
                    text.set_gid(f"fault-label-{k}")
            for i, event in enumerate(report.events):
                if event.kind not in EVENT_STYLES:
                    continue
                colour, style, _ = EVENT_STYLES[event.kind]
                ax.axvline(report.since_start(event.at), color=colour, ls=style, lw=1.2).set_gid(f"event-{i}-{p}")
        kinds = [k for k in EVENT_STYLES if any(e.kind == k for e in report.events)]
        extra = [Patch(color=FAULT_COLOUR, alpha=0.2, label="fault (injected .. undone)")] if report.faults else []
        extra += [
            Line2D([], [], color=EVENT_STYLES[k][0], ls=EVENT_STYLES[k][1], label=EVENT_STYLES[k][2]) for k in kinds
        ]
        fig.legend(
            handles=handles + extra, loc="outside upper center", ncol=min(6, len(handles) + len(extra)), fontsize=8.5
        )
        axes[-1].set_xlim(0, max(end, x[-1]))
        axes[-1].set_xlabel(f"seconds since the start of the run ({report.run.started_at:%Y-%m-%d %H:%M:%S} UTC)")

    desc = [
        f"{len(panels)} stacked panels sharing the time axis, in seconds since the start of the run "
        f"({iso(report.run.started_at)}, {fmt_duration(end)} long): "
        + "; ".join(", ".join(label for _, label, _ in series) for _, series, _ in panels)
        + "."
    ]
    for fault in report.faults:
        x0 = report.since_start(fault.injected_at)
        if fault.undone_at:
            desc.append(
                f"Shaded: fault {fault.name} ({fault.kind} on {fault.target}) from {x0:.1f} s to "
                f"{report.since_start(fault.undone_at):.1f} s."
            )
        else:
            desc.append(f"Shaded: fault {fault.name} ({fault.kind} on {fault.target}) from {x0:.1f} s, never undone.")
    for event in report.events:
        if event.kind in EVENT_STYLES:
            desc.append(
                f"Marker: {EVENT_STYLES[event.kind][2]} at {report.since_start(event.at):.1f} s ({event.text})."
            )
    return fig, " ".join(desc)


def rto_figure(case: Case, slug: str) -> Figure:
    """One horizontal bar: the RTO split into its steps, against the target."""
    steps = [(s.step, s.seconds) for s in case.rto_steps] or [("recovery (no steps recorded)", case.rto_seconds or 0)]
    total = sum(sec for _, sec in steps)
    target = case.rto_target_seconds
    span = max(total, case.rto_seconds or 0, target or 0) or 1.0
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(5.4, 1.25), layout="constrained")
        ax = fig.subplots()
        left = 0.0
        for j, (_name, sec) in enumerate(steps):
            colour = STEP_COLOURS[j % len(STEP_COLOURS)]
            bar = ax.barh(0, sec, left=left, height=0.55, color=colour, edgecolor="white", lw=1)
            bar.patches[0].set_gid(f"step-{j}")
            if sec >= span * 0.09:
                ax.text(
                    left + sec / 2,
                    0,
                    f"{sec:.1f}",
                    ha="center",
                    va="center",
                    color="white",
                    fontsize=8,
                    fontweight="bold",
                )
            left += sec
        if target is not None:
            ax.axvline(target, color="#24292f", ls="--", lw=1.2).set_gid("target")
            right = target < span * 0.8
            ax.text(
                target,
                0.45,
                f" target {target:g} s" if right else f"target {target:g} s ",
                va="bottom",
                ha="left" if right else "right",
                fontsize=8,
                color="#24292f",
            )
        ax.set_xlim(0, span * 1.05)
        ax.set_ylim(-0.5, 0.85)
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
        ax.set_xlabel("seconds since the fault")
        ax.grid(True, axis="x")
        ax.set_axisbelow(True)
    return fig


# ---------------------------------------------------------------------------------------------- html


_BADGE_CLASSES = {"pass": "pass", "ok": "ok", "fail": "fail", "failed": "fail", "aborted": "aborted"}


def badge_class(verdict: str | None) -> str:
    return _BADGE_CLASSES.get(verdict or "", "none")


def esc(value: Any) -> str:
    """Escape a value for HTML text and attribute values (the figures' <title> and <desc>, built here)."""
    return html.escape("" if value is None else str(value), quote=True)


@functools.cache
def templates() -> jinja2.Environment:
    """The report's templates (chaos/templates/): every value escaped unless marked as markup
    (the figures' SVG, built here), and an undefined name an error rather than an empty string."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("chaos", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(count=fmt_count, number=fmt_number, duration=fmt_duration, value=fmt_value)
    env.globals.update(badge_class=badge_class, css=Markup(CSS))
    return env


def _slug(text: str, used: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "case"
    slug, n = base, 2
    while slug in used:
        slug, n = f"{base}-{n}", n + 1
    used.add(slug)
    return slug


def _tiles(report: Report) -> list[tuple[str, str, bool]]:
    cases_ok = sum(c.verdict == "pass" for c in report.cases)
    hyp_ok = sum(h.ok is True for h in report.hypotheses)
    undone = sum(f.undo_ok for f in report.faults)
    lost = sum(c.windows_missing + c.windows_wrong for c in report.cases)
    return [
        ("cases passed", f"{cases_ok} / {len(report.cases)}", cases_ok == len(report.cases)),
        ("hypotheses ok", f"{hyp_ok} / {len(report.hypotheses)}", hyp_ok == len(report.hypotheses)),
        ("faults undone", f"{undone} / {len(report.faults)}", undone == len(report.faults)),
        ("windows lost or wrong", fmt_count(lost), lost == 0),
        ("messages produced", fmt_count(report.produced.messages), True),
        ("sends failed", fmt_count(report.produced.failed), True),
    ]


def _example_rows(rows: list, late: bool = False) -> list[dict]:
    """Examples as the table shows them: a window and a key, or the example whole. A late
    example (verify.explain_late's) is the window's start and the key's columns, flat."""
    out = []
    for r in rows:
        if isinstance(r, dict) and late:
            key = ", ".join(f"{k}={fmt_value(v)}" for k, v in r.items() if k != "window")
            out.append({"window": fmt_value(r.get("window")), "key": key, "raw": None})
        elif isinstance(r, dict) and set(r) <= {"window", "key"}:
            out.append({"window": fmt_value(r.get("window")), "key": fmt_value(r.get("key")), "raw": None})
        else:
            out.append({"window": None, "key": None, "raw": fmt_value(r)})
    return out


def _wrong_rows(case: Case) -> list[dict]:
    """Wrong windows with each value's parts, those that differ from the expected marked."""
    rows = []
    for w in case.examples.wrong:
        expected, got = w.expected, w.got
        if isinstance(expected, dict) and isinstance(got, dict):
            exp_parts = [(f"{k}={fmt_value(v)}", False) for k, v in expected.items()]
            got_parts = [(f"{k}={fmt_value(v)}", expected.get(k) != v) for k, v in got.items()]
        else:
            exp_parts, got_parts = [(fmt_value(expected), False)], [(fmt_value(got), expected != got)]
        rows.append({"window": fmt_value(w.window), "key": fmt_value(w.key), "expected": exp_parts, "got": got_parts})
    return rows


def case_view(case: Case, slug: str) -> dict:
    """What a case's card shows (chaos/templates/case.html.j2), its RTO figure rendered."""
    ex = case.examples
    view: dict[str, Any] = {
        "case": case,
        "slug": slug,
        "failover": f"failover: {case.failover}" if case.failover else "no failover",
        "rpo": ("–" if case.rpo_seconds is None else f"{case.rpo_seconds:g} s")
        + ("" if case.rpo_messages is None else f" ({fmt_count(case.rpo_messages)} messages)"),
        "listed": [
            {"kind": kind, "count": count, "what": what, "rows": _example_rows(getattr(ex, kind))}
            for kind, count, what in (
                ("missing", case.windows_missing, "expected but not in the sink"),
                ("extra", case.windows_extra, "in the sink but not expected"),
            )
            if getattr(ex, kind)
        ],
        "wrong": _wrong_rows(case),
        "late": {
            "kind": "late",
            "count": case.windows_late,
            "what": "missing or wrong because messages came after the watermark had closed them "
            "(kept in the dead letters, kind late)",
            "rows": _example_rows(ex.late, late=True),
        }
        if ex.late
        else None,
    }
    if case.rto_seconds is None:
        return view
    steps_desc = "; ".join(f"{s.step} {s.seconds:.1f} s" for s in case.rto_steps) or "no steps recorded"
    svg = figure_svg(
        rto_figure(case, slug),
        f"rto-{slug}",
        f"RTO of case {case.name}",
        f"Recovery took {case.rto_seconds:.1f} s"
        + ("" if case.rto_target_seconds is None else f" against a target of {case.rto_target_seconds:g} s")
        + f". Steps: {steps_desc}.",
    )
    longest = max(case.rto_steps, key=lambda s: s.seconds) if case.rto_steps else None
    total = sum(s.seconds for s in case.rto_steps) or 1.0
    view.update(
        rto_svg=Markup(svg),
        met=case.rto_met,
        delta=None if case.rto_met is None else case.rto_seconds - case.rto_target_seconds,
        target="" if case.rto_target_seconds is None else f" / target {case.rto_target_seconds:g} s",
        steps=[
            {
                "colour": STEP_COLOURS[j % len(STEP_COLOURS)],
                "step": s.step,
                "longest": s is longest and len(case.rto_steps) > 1,
                "seconds": s.seconds,
                "share": s.seconds / total,
            }
            for j, s in enumerate(case.rto_steps)
        ],
    )
    return view


def _as_report(report: Report | dict | str | Path) -> Report:
    if isinstance(report, Report):
        return report
    if isinstance(report, dict):
        return parse_report(report)
    return load_report(report)


def render_html(report: Report | dict | str | Path) -> str:
    """The report as one HTML document (a string), from chaos/templates/report.html.j2."""
    report = _as_report(report)
    made = timeline_figure(report)
    timeline = None
    if made is not None:
        fig, desc = made
        timeline = Markup(figure_svg(fig, "timeline", f"Timeline of drill {report.drill.name}", desc))
    used: set[str] = set()
    return (
        templates()
        .get_template("report.html.j2")
        .render(
            title=f"{report.verdict.upper()} · {report.drill.name} · drill report",
            report=report,
            reasons=[x for x in report.verdict_reasons if x.strip()],
            tiles=_tiles(report),
            timeline=timeline,
            timeline_faults=", ".join(f"{f.name} (shaded)" for f in report.faults) or "none",
            hypothesis_groups=[
                (title, rows) for phase, title in PHASES if (rows := [h for h in report.hypotheses if h.phase == phase])
            ],
            cases=[case_view(c, _slug(c.name, used)) for c in report.cases],
            fault_does=lambda kind: FAULT_KINDS[kind].does if kind in FAULT_KINDS else None,
            at=lambda when: fmt_time(when, report),
        )
    )


def write_html(report: Report | dict | str | Path, path: str | Path) -> Path:
    """Write the report's HTML file (self-contained, opens offline); returns its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = render_html(report)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


# ------------------------------------------------------------------------------------------ markdown


def write_markdown_summary(report: Report | dict | str | Path) -> str:
    """A few lines of Markdown for a terminal or a CI log: verdict, each case, hypotheses, faults, why."""
    report = _as_report(report)
    r = report.run
    lines = [
        f"**{report.drill.name}: {report.verdict.upper()}** (run {r.id}, {r.started_at:%Y-%m-%d %H:%M:%S} UTC, "
        f"{fmt_duration(r.duration_seconds)})"
    ]
    for c in report.cases:
        rto = (
            "RTO –"
            if c.rto_seconds is None
            else f"RTO {c.rto_seconds:.1f} s"
            + ("" if c.rto_target_seconds is None else f" / {c.rto_target_seconds:g} s")
        )
        rpo = (
            ""
            if not (c.rpo_seconds or c.rpo_messages)
            else (f"; RPO {c.rpo_seconds or 0:g} s ({fmt_count(c.rpo_messages or 0)} messages)")
        )
        late = (
            ""
            if not c.late_messages
            else (
                f"; {fmt_count(c.late_messages)} late messages in the dead letters"
                + ("" if c.windows_late is None else f", in {fmt_count(c.windows_late)} of those windows")
            )
        )
        lines.append(
            f"- case {c.name} ({c.failover + ' failover' if c.failover else 'no failover'}): "
            f"{c.verdict if c.verdict == 'pass' else c.verdict.upper()}: {rto}; windows "
            f"{fmt_count(c.windows_matched)}/{fmt_count(c.windows_expected)} matched, {c.windows_missing} missing, "
            f"{c.windows_extra} extra, {c.windows_wrong} wrong{late}{rpo}"
        )
    if report.hypotheses:
        ok = sum(h.ok is True for h in report.hypotheses)
        bad = [
            f"{h.name} ({fmt_number(h.value, h.unit)}, tolerance {h.tolerance.describe(h.unit)})"
            for h in report.hypotheses
            if h.ok is False
        ]
        unmeasured = [h.name for h in report.hypotheses if h.ok is None]
        line = f"- hypotheses: {ok}/{len(report.hypotheses)} ok"
        if bad:
            line += f"; failed: {', '.join(bad)}"
        if unmeasured:
            line += f"; not measured: {', '.join(unmeasured)}"
        lines.append(line)
    if report.faults:
        parts = [
            f"{f.name} ({f.kind}, {'undone' if f.undo_ok else 'NOT UNDONE'}" + (f": {f.error}" if f.error else "") + ")"
            for f in report.faults
        ]
        lines.append(f"- faults: {', '.join(parts)}")
    for reason in report.verdict_reasons:
        if reason.strip():
            lines.append(f"- why: {reason}")
    return "\n".join(lines) + "\n"


__all__ = [
    "write_html",
    "render_html",
    "write_markdown_summary",
    "figure_svg",
    "timeline_figure",
    "rto_figure",
    "esc",
    "CSS",
    "RC",
]
