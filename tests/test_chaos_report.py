"""The drill report: the report.json contract, the self-contained HTML, the run history, and the
report rendered in headless Chromium (marked `browser`)."""

from __future__ import annotations

import copy
import io
import json
import multiprocessing
import re
from datetime import datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest

from chaos.browser import parse_console, render
from chaos.report_model import ReportError, dump_report, load_report, parse_report

FIXTURE = Path(__file__).parent / "fixtures" / "reports" / "kafka-failover.json"


@pytest.fixture
def data() -> dict:
    return json.loads(FIXTURE.read_text())


def shifted(at: str, seconds: float) -> str:
    return (datetime.fromisoformat(at.replace("Z", "+00:00")) + timedelta(seconds=seconds)).isoformat()


def passing(d: dict) -> dict:
    """The fixture made into a passing run: api-health recovered in time and lost nothing."""
    d = copy.deepcopy(d)
    c = d["cases"][1]
    c.update(
        verdict="pass",
        rto_seconds=52.0,
        windows_matched=360,
        windows_missing=0,
        windows_wrong=0,
        windows_extra=0,
        rpo_seconds=0,
        rpo_messages=0,
        late_messages=0,
        windows_late=0,
        examples={"missing": [], "extra": [], "wrong": []},
    )
    c["rto_steps"][-1]["seconds"] = 15.0
    d["hypotheses"][6].update(value=150, ok=True)
    d.update(verdict="pass", verdict_reasons=[])
    return d


# ------------------------------------------------------------------------------------------ the model


def test_the_sample_report_loads_and_round_trips():
    report = load_report(FIXTURE)
    assert report.verdict == "fail" and [c.name for c in report.cases] == ["surge-demand", "api-health"]
    assert report.run.duration_seconds == 360
    fault = report.faults[0]
    assert (fault.undone_at - fault.injected_at).total_seconds() == 60
    assert [e.kind for e in report.events].count("failover") == 1
    assert parse_report(dump_report(report)) == report
    assert dump_report(report)["run"]["started_at"] == "2026-11-23T15:20:04Z"


def _set(path: str, value):
    def mutate(d):
        *parents, last = path.split(".")
        node = d
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        if value is _DELETE:
            del node[int(last) if last.isdigit() else last]
        else:
            node[int(last) if last.isdigit() else last] = value(node) if callable(value) else value

    return mutate


_DELETE = object()


def _timeline_ms(d):
    d["timeline"]["t"] = [t * 1000 for t in d["timeline"]["t"]]


def _unordered_t(d):
    d["timeline"]["t"][5] = d["timeline"]["t"][4]


def _rename_case(d):
    d["cases"][1]["name"] = "surge-demand"


REFUSALS = [
    # (why, mutation, message expected in the error)
    ("verdict value", _set("verdict", "passed"), "verdict: Input should be 'pass', 'fail' or 'aborted', got 'passed'"),
    ("case verdict value", _set("cases.0.verdict", "ok"), "cases[0].verdict: Input should be 'pass' or 'fail'"),
    ("failover value", _set("cases.0.failover", "mirror"), "cases[0].failover: Input should be 'kafka' or 'spark'"),
    ("phase value", _set("hypotheses.0.phase", "after-all"), "hypotheses[0].phase: Input should be 'before'"),
    ("event kind", _set("events.0.kind", "restart"), "events[0].kind: Input should be 'fault', 'undo'"),
    (
        "negative count",
        _set("cases.1.windows_extra", -1),
        "cases[1].windows_extra: Input should be greater than or equal to 0",
    ),
    (
        "negative rto",
        _set("cases.0.rto_seconds", -3),
        "cases[0].rto_seconds: Input should be greater than or equal to 0",
    ),
    ("negative produced", _set("produced.failed", -1), "produced.failed: Input should be greater than or equal to 0"),
    (
        "windows do not add up",
        _set("cases.1.windows_expected", 361),
        "cases[1]: case 'api-health': windows_expected (361) != windows_matched + windows_missing + windows_wrong "
        "(355 + 3 + 2 = 360)",
    ),
    (
        "more examples than windows",
        _set("cases.1.windows_extra", 0),
        "case 'api-health': examples.extra has 1 rows but windows_extra is 0",
    ),
    (
        "rto steps longer than rto",
        _set("cases.0.rto_seconds", 20.0),
        "case 'surge-demand': rto_steps add up to 30.6 s, more than rto_seconds 20 s",
    ),
    (
        "passing case that lost windows",
        _set("cases.1.verdict", "pass"),
        "case 'api-health': verdict is pass but 3 windows are missing and 2 wrong",
    ),
    (
        "passing case over its RTO target",
        _set("cases.0.rto_target_seconds", 25),
        "case 'surge-demand': verdict is pass but rto_seconds 30.6 is above rto_target_seconds 25",
    ),
    (
        "run ends before it starts",
        _set("run.ended_at", "2026-11-23T15:20:03Z"),
        "run: ended_at 2026-11-23T15:20:03Z is before started_at 2026-11-23T15:20:04Z",
    ),
    (
        "fault undone before injected",
        _set("faults.0.undone_at", "2026-11-23T15:22:00Z"),
        "faults[0]: fault 'primary-down': undone_at 2026-11-23T15:22:00Z is before injected_at 2026-11-23T15:22:04.400000Z",
    ),
    (
        "fault outside the run",
        _set("faults.0.undone_at", "2026-11-23T15:40:00Z"),
        "faults[0] (primary-down): undone_at 2026-11-23T15:40:00Z is outside the run (2026-11-23T15:20:04Z .. "
        "2026-11-23T15:26:04Z)",
    ),
    (
        "event outside the run",
        _set("events.0.at", "2026-11-23T15:19:00Z"),
        "events (deploy 'surge-demand v1 and api-health v1 running on spark blue'): at 2026-11-23T15:19:00Z is outside the run",
    ),
    (
        "undo_ok without undone_at",
        _set("faults.0.undone_at", None),
        "fault 'primary-down': undo_ok is true but undone_at is null",
    ),
    ("timeline not increasing", _unordered_t, "timeline: t must strictly increase: t[5]"),
    (
        "series shorter than t",
        _set("timeline.latency_ms", lambda tl: tl["latency_ms"][:-1]),
        "timeline: latency_ms has 71 values for 72 times in t",
    ),
    ("negative lag", _set("timeline.consumer_lag.3", -5), "timeline: consumer_lag[3] = -5 is negative"),
    ("timeline in milliseconds", _timeline_ms, "(milliseconds or seconds since the start instead of epoch seconds?)"),
    (
        "unknown fault kind",
        _set("faults.0.kind", "broker-nuke"),
        "faults[0].kind: unknown fault kind 'broker-nuke'; the catalogue's: broker-kill",
    ),
    ("duplicate case names", _rename_case, "cases[1]: name 'surge-demand' is used twice"),
    (
        "hypothesis ok disagrees with its value",
        _set("hypotheses.6.ok", True),
        "hypotheses[6]: hypothesis 'mirror-lag-recovered': ok is true but value 641 is outside tolerance ≤ 200 messages",
    ),
    (
        "hypothesis measured, ok null",
        _set("hypotheses.0.ok", None),
        "hypothesis 'consumer-lag-steady': value 84 was measured but ok is null",
    ),
    (
        "hypothesis without a bound",
        _set("hypotheses.0.tolerance", {}),
        "hypotheses[0].tolerance: tolerance needs max or min (or both)",
    ),
    ("fail without a reason", _set("verdict_reasons", []), "verdict is fail but verdict_reasons is empty: say why"),
    (
        "pass with a failed case",
        _set("verdict", "pass"),
        "verdict is pass but cases failed: api-health; verdict is pass but hypotheses are not ok (failed or not "
        "measured): mirror-lag-recovered",
    ),
    (
        "by_topic does not add up",
        _set("produced.messages", 41560),
        "produced: by_topic adds up to 41559, not messages (41560)",
    ),
    ("a typo in a key", _set("cases.0.window_missing", 0), "cases[0].window_missing: unknown field (not in schema 1)"),
    ("a missing section", _set("produced", _DELETE), "produced: required field is missing"),
    (
        "a time without its zone",
        _set("run.started_at", "2026-11-23T15:20:04"),
        "run.started_at: Input should have timezone info",
    ),
    ("a NaN", _set("hypotheses.0.value", float("nan")), "hypotheses[0].value: Input should be a finite number"),
    ("another schema", _set("schema", 2), "schema: this reader knows schema 1, the file says 2"),
]


@pytest.mark.parametrize("why,mutate,message", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_the_model_refuses_an_inconsistent_report(data, why, mutate, message):
    mutate(data)
    with pytest.raises(ReportError) as refused:
        parse_report(data, "report.json")
    assert message in str(refused.value), str(refused.value)
    assert str(refused.value).startswith("report.json: ")


def test_a_passing_report_passes_and_aborted_may_leave_things_unmeasured(data):
    assert parse_report(passing(data)).verdict == "pass"
    aborted = copy.deepcopy(data)
    aborted.update(verdict="aborted", verdict_reasons=["the lab lost broker 2 before the fault"], cases=[], timeline={})
    for h in aborted["hypotheses"][2:]:
        h.update(value=None, ok=None)
    aborted["faults"][0].update(undone_at=None, undo_ok=False, error="start broker 1: timed out after 60 s")
    report = parse_report(aborted)
    assert report.timeline.series("throughput") is None and report.faults[0].undone_at is None


def test_every_problem_is_listed_with_its_place(data):
    data["cases"][0]["windows_missing"] = -2
    data["verdict"] = "maybe"
    data["run"]["host"] = None
    with pytest.raises(ReportError) as refused:
        parse_report(data, "r.json")
    text = str(refused.value)
    assert text.startswith("r.json: 3 problems:\n")
    assert "  - verdict: Input should be" in text and "  - run.host: Input should be a valid string" in text
    assert "  - cases[0].windows_missing: Input should be greater than or equal to 0" in text
    assert len(refused.value.problems) == 3


def test_load_report_says_what_is_wrong_with_the_file(tmp_path):
    with pytest.raises(ReportError, match=r"nope\.json: no such file"):
        load_report(tmp_path / "nope.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": 1,\n "drill": {,}')
    with pytest.raises(
        ReportError,
        match=r"broken\.json: not JSON: Expecting property name enclosed in double quotes "
        r"at line 2 column 12",
    ):
        load_report(broken)
    nan = tmp_path / "nan.json"
    nan.write_text(FIXTURE.read_text().replace('"value": 84', '"value": NaN'))
    with pytest.raises(ReportError, match="NaN is not a number in JSON"):
        load_report(nan)
    listing = tmp_path / "list.json"
    listing.write_text("[]")
    with pytest.raises(ReportError, match="a report is a JSON object, not list"):
        load_report(listing)


def test_events_are_kept_in_time_order(data):
    data["events"].reverse()
    report = parse_report(data)
    assert [e.at for e in report.events] == sorted(e.at for e in report.events)


# ------------------------------------------------------------------------------------------- the html


class Page(HTMLParser):
    """Every tag with its attributes, and the text of <style> elements."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.styles: list[str] = []
        self._in_style = False
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False

    def handle_data(self, data):
        (self.styles if self._in_style else self.text).append(data)

    def named(self, tag):
        return [a for t, a in self.tags if t == tag]


def assert_self_contained(text: str) -> Page:
    page = Page(text)
    for tag, attrs in page.tags:
        for name, value in attrs.items():
            value = (value or "").strip().lower()
            if name in ("src", "href", "xlink:href", "action", "poster", "data", "srcset"):
                assert not re.match(r"^(https?:)?//", value), f"<{tag} {name}={value!r}>: an external reference"
                if tag != "a":
                    assert value.startswith(("#", "data:")), f"<{tag} {name}={value!r}> is not inline"
            assert not name.startswith("on"), f"<{tag} {name}>: an event handler"
            if name == "style":
                page.styles.append(value)
        assert tag not in ("script", "iframe", "object", "embed", "link", "base", "meta") or (
            tag == "meta" and set(attrs) <= {"charset", "name", "content"}
        ), f"<{tag} {attrs}>"
    for img in page.named("img"):
        assert img.get("src", "").startswith("data:"), img
    css = "\n".join(page.styles)
    assert "@import" not in css and "@font-face" not in css
    for url in re.findall(r"url\(\s*([^)]*)\)", css):
        assert url.strip("'\" ").startswith(("#", "data:")), f"url({url}) in CSS"
    ids = [a["id"] for _, a in page.tags if "id" in a]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)[:5]
    return page


@pytest.fixture(scope="module")
def report_html(tmp_path_factory) -> tuple[Path, str]:
    from chaos.report_html import write_html

    path = write_html(FIXTURE, tmp_path_factory.mktemp("report") / "report.html")
    return path, path.read_text()


def test_the_html_is_self_contained_and_says_the_verdict_cases_and_numbers(report_html):
    _, text = report_html
    page = assert_self_contained(text)
    assert text.startswith("<!DOCTYPE html>") and '<html lang="en">' in text
    assert '<div class="verdict v-fail" role="status" aria-label="verdict: fail">fail</div>' in text
    assert page.named("title") and "FAIL · kafka-failover" in text
    words = "".join(page.text)
    for name in (
        "surge-demand",
        "api-health",
        "primary-down",
        "mirror-lag-recovered",
        "chaos/drills/kafka-failover.yaml",
    ):
        assert name in words
    for reason in load_report(FIXTURE).verdict_reasons:
        assert reason in words
    # the numbers: RTO against target, windows, RPO, produced
    assert "74.2 s" in words and "/ target 60 s" in words and "14.2 s over the target" in words
    assert "29.4 s under the target" in words
    for value in ("1440", "355", "360", "3", "1", "2", "41559", "1236", "37.2"):
        assert f'data-value="{value}"' in text, value
    assert "14 s (560 messages)" in words
    # late messages and the windows they fell in, with examples
    assert 'data-value="17"' in text and "late windows (2 of 2 shown)" in words
    assert "service=pricing-api, status=4xx" in words
    assert "PostgreSQL sink reconnect (longest)" in words
    # the examples, with the differing aggregate marked
    assert "service=booking-api, status=5xx" in words and "<mark>requests=2178</mark>" in text
    # the faults table: injected and undone, relative to the start
    assert "15:22:04.4 UTC (t+120.4 s)" in words and "15:23:04.4 UTC (t+180.4 s)" in words
    # the printable layout
    assert "@media print" in text and "break-inside:avoid" in text


def test_every_figure_is_an_accessible_inline_svg(report_html):
    _, text = report_html
    page = Page(text)
    svgs = page.named("svg")
    assert len(svgs) == 3  # the timeline and one RTO bar per case
    for svg in svgs:
        assert svg["role"] == "img" and svg["class"] == "figure"
        title_id, desc_id = svg["aria-labelledby"].split()
        assert f'<title id="{title_id}">' in text and f'<desc id="{desc_id}">' in text
    desc = re.search(r'<desc id="timeline-desc">(.*?)</desc>', text, re.S).group(1)
    assert (
        "Shaded: fault primary-down (cluster-down on kafka primary (brokers 1, 2, 3)) from 120.4 s to 180.4 s" in desc
    )
    assert "Marker: failover at 138.2 s" in desc and "Marker: first batch at 151.0 s" in desc
    # text stays text (searchable, selectable), no XML prolog inside the HTML
    assert "<text " in text and "<?xml" not in text and "<!DOCTYPE svg" not in text


def _fault_shades(text: str) -> dict[int, int]:
    shades: dict[int, int] = {}
    for k, _panel in re.findall(r'<g id="timeline-fault-(\d+)-(\d+)">', text):
        shades[int(k)] = shades.get(int(k), 0) + 1
    return shades


def test_the_timeline_shades_each_fault_once_per_panel_and_marks_the_events(report_html, data):
    from chaos.report_html import render_html

    _, text = report_html
    assert _fault_shades(text) == {0: 4}  # one fault; 4 panels: rates, consumer lag, latency, mirror lag
    events = load_report(FIXTURE).events
    marked = {int(i) for i, _ in re.findall(r'<g id="timeline-event-(\d+)-(\d+)">', text)}
    assert {events[i].kind for i in marked} == {"failover", "first-batch"}

    # three faults, and no mirror lag: three panels, each fault shaded once in each
    start = data["faults"][0]["injected_at"]
    data["faults"] += [
        {
            "name": "worker-2-killed",
            "kind": "worker-kill",
            "target": "spark blue worker 2",
            "injected_at": shifted(start, 100),
            "undone_at": shifted(start, 130),
            "undo_ok": True,
            "error": None,
        },
        {
            "name": "slow-network",
            "kind": "network-slow",
            "target": "broker 3 (+200 ms)",
            "injected_at": shifted(start, 150),
            "undone_at": shifted(start, 200),
            "undo_ok": True,
            "error": None,
        },
    ]
    del data["timeline"]["mirror_lag"]
    text = render_html(data)
    assert _fault_shades(text) == {0: 3, 1: 3, 2: 3}
    assert len(re.findall(r'<g id="timeline-fault-label-\d+">', text)) == 3


def test_a_hostile_drill_cannot_inject_markup(data):
    from chaos.report_html import render_html, write_markdown_summary

    data["drill"]["name"] = "<script>alert(1)</script>"
    data["drill"]["description"] = '"><img src=x onerror=alert(2)> & <iframe src="https://evil.example/">'
    data["drill"]["playbook"] = "</span><script src=https://evil.example/x.js></script>"
    data["cases"][0]["name"] = "<b onmouseover=alert(3)>case</b>"
    data["faults"][0]["name"] = "</text><script>alert(4)</script> $5 and $6"
    data["faults"][0]["target"] = "<style>body{background:url(https://evil.example/x)}</style>"
    data["verdict_reasons"].append("<svg onload=alert(5)>")
    data["events"][0]["text"] = "]]><script>alert(6)</script>"
    data["cases"][1]["examples"]["wrong"][0]["got"] = {"<img src=x>": "<script>"}
    text = render_html(data)
    assert "<script" not in text.lower() and "<iframe" not in text.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    page = assert_self_contained(text)
    assert not page.named("img") and len(page.named("style")) == 1
    assert all(set(b) <= {"class"} for b in page.named("b"))  # the summary tiles' own
    assert "alert(4)" in text and "$5 and $6" in text  # the fault's label, escaped, with its dollars (no mathtext)
    assert "<script>" in write_markdown_summary(data)  # plain text for terminals: not escaped


def test_an_aborted_run_without_timeline_or_cases_renders(data):
    from chaos.report_html import render_html, write_markdown_summary

    data.update(
        verdict="aborted",
        verdict_reasons=["broker 2 did not start: the lab is not healthy"],
        cases=[],
        timeline={"t": data["timeline"]["t"], "throughput": [None] * 72},
    )
    for h in data["hypotheses"]:
        h.update(value=None, ok=None)
    text = render_html(data)
    assert_self_contained(text)
    assert "v-aborted" in text and "No timeline was recorded." in text and "No case was checked." in text
    assert "not measured" in text
    summary = write_markdown_summary(data)
    assert summary.startswith("**kafka-failover: ABORTED**")
    assert "not measured: consumer-lag-steady" in summary


def test_the_markdown_summary_has_a_line_per_case():
    from chaos.report_html import write_markdown_summary

    lines = write_markdown_summary(FIXTURE).splitlines()
    assert lines[0] == (
        "**kafka-failover: FAIL** (run 20261123T152004Z-kafka-failover-7, 2026-11-23 15:20:04 UTC, 6 min 0 s)"
    )
    assert lines[1] == (
        "- case surge-demand (kafka failover): pass: RTO 30.6 s / 60 s; windows 1,440/1,440 matched, "
        "0 missing, 0 extra, 0 wrong"
    )
    assert lines[2] == (
        "- case api-health (kafka failover): FAIL: RTO 74.2 s / 60 s; windows 355/360 matched, "
        "3 missing, 1 extra, 2 wrong; 17 late messages in the dead letters, in 2 of those windows; "
        "RPO 14 s (560 messages)"
    )
    assert lines[3] == "- hypotheses: 7/8 ok; failed: mirror-lag-recovered (641 messages, tolerance ≤ 200 messages)"
    assert lines[4] == "- faults: primary-down (cluster-down, undone)"
    assert len(lines) == 8 and all(line.startswith("- why: ") for line in lines[5:])


# ---------------------------------------------------------------------------------------- the history


def _run(d: dict, n: int, *, rto: float | None = None, verdict: str | None = None) -> dict:
    """The fixture as run n, n days later (and api-health's RTO, when given)."""
    d = copy.deepcopy(d if verdict != "pass" else passing(d))
    days = n * 86400
    d["run"]["id"] = f"run-{n}"
    for section, keys in (("run", ("started_at", "ended_at")),):
        for k in keys:
            d[section][k] = shifted(d[section][k], days)
    for f in d["faults"]:
        f["injected_at"], f["undone_at"] = shifted(f["injected_at"], days), shifted(f["undone_at"], days)
    for e in d["events"]:
        e["at"] = shifted(e["at"], days)
    d["timeline"] = {}
    if rto is not None:
        d["cases"][1]["rto_seconds"] = rto
        d["cases"][1]["rto_steps"] = []
    return d


def _append_many(runs_dir: str, report: dict, n: int) -> None:
    from chaos.history import append

    parsed = parse_report(report)
    for _ in range(n):
        append(runs_dir, parsed)


def test_history_appends_under_a_lock_and_survives_a_truncated_line(data, tmp_path):
    from chaos.history import HISTORY, append, read_history, trends

    append(tmp_path, _run(data, 0), tmp_path / "run-0" / "report.json")
    append(tmp_path, _run(data, 1, verdict="pass"))
    history_file = tmp_path / HISTORY
    lines = history_file.read_text().splitlines()
    assert len(lines) == 2 and all(len(line) < 900 for line in lines)  # compact: one line per run
    first = json.loads(lines[0])
    assert first["report"] == "run-0/report.json" and first["verdict"] == "fail"
    assert first["cases"][1] == {
        "name": "api-health",
        "verdict": "fail",
        "failover": "kafka",
        "rto_seconds": 74.2,
        "rto_target_seconds": 60.0,
        "windows_missing": 3,
        "windows_extra": 1,
        "windows_wrong": 2,
    }

    with history_file.open("ab") as f:  # a runner killed in the middle of its line
        f.write(lines[0][:57].encode())
    history = read_history(tmp_path)
    assert [e["run_id"] for e in history.entries] == ["run-0", "run-1"]
    assert history.skipped == ["line 3: truncated last line (57 bytes)"]

    append(tmp_path, _run(data, 2, rto=80.5))  # starts on a line of its own
    append(tmp_path, _run(data, 1, verdict="pass"))  # the same run again counts once
    history = read_history(tmp_path)
    assert [e["run_id"] for e in history.entries] == ["run-0", "run-1", "run-2"]
    assert history.skipped == ["line 3: not JSON (57 bytes)"]

    (trend,) = trends(tmp_path)
    assert trend["drill"] == "kafka-failover" and trend["runs"] == 3
    assert trend["verdicts"] == {"pass": 1, "fail": 2, "aborted": 0} and trend["last"]["run_id"] == "run-2"
    surge, api = trend["cases"]
    assert api["rto_seconds"] == {"last": 80.5, "median": 74.2, "max": 80.5}
    assert api["over_target"] == 2 and api["runs_losing_data"] == 2 and api["passed"] == 1
    assert surge["over_target"] == 0 and surge["rto_target_seconds"] == 60


def test_concurrent_appends_lose_no_line(data, tmp_path):
    from chaos.history import read_history

    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_append_many, args=(str(tmp_path), _run(data, n), 25)) for n in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    raw = (tmp_path / "history.jsonl").read_text().splitlines()
    assert len(raw) == 100 and all(json.loads(line)["schema"] == 1 for line in raw)
    assert len(read_history(tmp_path).entries) == 4


def test_history_cli_tables_json_and_the_trends_page(data, tmp_path, capsys):
    from rich.console import Console

    from chaos.history import append, main

    for n, rto in enumerate([49.7, 74.7, 58.0, 62.4]):
        append(tmp_path, _run(data, n, rto=rto, verdict="pass" if rto <= 60 else None))
    (tmp_path / "history.jsonl").open("ab").write(b'{"schema":1,"dri')
    out = io.StringIO()
    html_path = tmp_path / "trends.html"
    assert main([str(tmp_path), "--html", str(html_path)], console=Console(file=out, width=160)) == 0
    tables = out.getvalue()
    assert "drill runs (4 of 4, latest last)" in tables and "per drill" in tables
    assert "74.7 s / 60 s" in tables and "3/1/2" in tables and "0/0/0" in tables
    assert "62.4 / 60.2 / 74.7 s" in tables  # api-health's RTO: last / median / worst
    err = capsys.readouterr().err
    assert "skipped line 5: truncated last line" in err and "wrote" in err

    assert main([str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["runs"] == 4 and doc["drills"][0]["verdicts"] == {"pass": 2, "fail": 2, "aborted": 0}
    assert [s["rto_seconds"] for s in doc["drills"][0]["cases"][1]["series"]] == [49.7, 74.7, 58.0, 62.4]

    text = html_path.read_text()
    assert_self_contained(text)
    assert len(re.findall(r'<g id="trend-kafka-failover-run-\d+">', text)) == 4
    assert re.search(r'<g id="trend-kafka-failover-target-1">', text)
    assert '<a href="' not in text  # no report path was given
    assert "truncated last line" in text

    assert main([str(tmp_path / "empty")]) == 0
    assert "no drill runs recorded" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------- the browser

CHROMIUM_STDERR = """\
/usr/bin/chromium: 9: [: 25272848384: unexpected operator
[13417:13446:1123/214632.120056:ERROR:dbus/bus.cc:405] Failed to connect to the bus: Failed to connect to socket
[13460:13460:1123/214632.361588:WARNING:media/gpu/vaapi/vaapi_wrapper.cc:1655] drmGetDevices2() has not found any devices
[13794:13794:1123/214654.271493:INFO:CONSOLE:5] "line one
line "two" [object Object]", source: file:///tmp/cr/more.html (5)
[13794:13794:1123/214654.271579:INFO:CONSOLE:6] "Uncaught ReferenceError: undefinedFn is not defined", source: file:///tmp/cr/more.html (6)
[13417:13417:1123/214632.519333:ERROR:dbus/object_proxy.cc:572] Failed to call method: org.freedesktop.DBus.NameHasOwner
[1:1:1123/214654.284350:INFO:CONSOLE(3)] "x", source: file:///old.html (3)
"""


def test_console_messages_are_told_from_chromium_noise():
    assert parse_console(CHROMIUM_STDERR) == [
        'file:///tmp/cr/more.html:5: line one\nline "two" [object Object]',
        "file:///tmp/cr/more.html:6: Uncaught ReferenceError: undefinedFn is not defined",
        "file:///old.html:3: x",
    ]
    assert parse_console("[1:1:1123/214632.1:ERROR:dbus/bus.cc:405] Failed\n") == []


@pytest.mark.browser
def test_chromium_renders_the_report_without_console_errors(report_html):
    path, _ = report_html
    rendered = render(path)
    assert rendered.console_errors == [], rendered.console_errors
    dom = rendered.dom
    assert re.search(r'<svg[^>]*aria-labelledby="timeline-title timeline-desc"', dom)
    assert dom.count('<g id="timeline-fault-0-') == 4
    assert '<div class="verdict v-fail" role="status" aria-label="verdict: fail">fail</div>' in dom
    assert dom.count('<span class="badge b-pass">pass</span>') == 1  # surge-demand
    assert dom.count('<span class="badge b-fail">fail</span>') == 1  # api-health
    assert "surge-demand" in dom and "api-health" in dom


@pytest.mark.browser
def test_chromium_catches_a_console_error_and_a_thrown_one(tmp_path):
    """The control: a page that does log an error and throw makes the check fail."""
    page = tmp_path / "control.html"
    page.write_text(
        "<!DOCTYPE html><html><head><title>control</title></head><body><p>control</p>\n"
        "<script>console.error('x')</script>\n"
        "<script>throw new Error('deliberate')</script>\n</body></html>\n"
    )
    rendered = render(page, screenshot=tmp_path / "control.png")
    url = page.resolve().as_uri()
    assert rendered.console_errors == [f"{url}:2: x", f"{url}:3: Uncaught Error: deliberate"]
    assert "<p>control</p>" in rendered.dom
    assert rendered.screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_trends_page_links_a_run_only_by_a_plain_relative_path(data, tmp_path):
    # a browser strips blanks and tabs from a link, so " javascript:..." or "java\tscript:..." in a
    # hand-edited history would run as a script if any string not a plain path were linked
    from chaos.history import append, render_trends_html

    paths = [
        str(tmp_path / "runs" / "run-0" / "report.json"),  # kept relative to the history's folder
        " javascript:alert(1)//x.json",
        "java\tscript:alert(2)//y.json",
        "https://elsewhere.example/z.json",
        "//elsewhere.example/w.json",
    ]
    for n, path in enumerate(paths):
        append(tmp_path, _run(data, n), path)
    text = render_trends_html(tmp_path)
    links = re.findall(r'<a href="([^"]*)"', text)
    # the first, and "//elsewhere..." kept as a path on this machine (the history holds paths
    # relative to its folder); no blank, tab, scheme or host anywhere
    assert "runs/run-0/report.html" in links and len(links) == 2, links
    assert all(not re.search(r"[:\s]|&#", link) and not link.startswith("//") for link in links), links
