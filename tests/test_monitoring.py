"""monitoring/: the alert rules pass their promtool unit tests, the generated dashboards are valid
against Grafana's published JSON schema, and every PromQL expression in either parses and reads only
metrics a dagger really exposes (found here by running the collector, not from a list)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry
from yamllint import linter
from yamllint.config import YamlLintConfig

from dagger_runtime.metrics import DaggerCollector
from monitoring import dashboards

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "monitoring" / "rules" / "daggers.rules.yml"
RULE_TESTS = ROOT / "monitoring" / "rules" / "daggers.rules.test.yml"
SCHEMAS = ROOT / "monitoring" / "schema"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# what Prometheus adds to each target: job from the scrape config, team and cluster from file_sd
TARGET = {"job": "dagger", "instance": "10.0.0.5:9464", "team": "fraud", "cluster": "eu1"}


# --- what a dagger exposes -------------------------------------------------------------------------


def _exposition() -> str:
    """A collector over fakes with every family populated (dead letters and lag are per key)."""
    counters = SimpleNamespace(
        batches=3, messages_read=120, rows_written=40, late_rows_dropped=1, dead_letters={("payments", "decode"): 2}
    )
    sink = SimpleNamespace(stats=SimpleNamespace(errors=1, retries=2))
    listener = SimpleNamespace(
        last={
            "input_rows_per_s": 10.0,
            "processed_rows_per_s": 12.0,
            "batch_duration_ms": 850,
            "watermark": "2024-05-01T12:00:00Z",
            "state_rows": 7,
            "lag_by_partition": {"payments-0": 5},
        }
    )
    registry = CollectorRegistry()
    registry.register(DaggerCollector("card-velocity", counters, sink, listener))
    return generate_latest(registry).decode()


@pytest.fixture(scope="module")
def families():
    return list(text_string_to_metric_families(_exposition()))


@pytest.fixture(scope="module")
def exposed(families) -> set[str]:
    """Names of the sample lines served at /metrics (counters with their _total suffix)."""
    return {sample.name for family in families for sample in family.samples}


def test_the_fake_collector_populates_every_family(families):
    assert all(family.samples for family in families), [f.name for f in families if not f.samples]
    assert "dagger_batches_total" in {s.name for f in families for s in f.samples}


# --- PromQL helpers --------------------------------------------------------------------------------

_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """Metric names an expression selects: identifiers left once strings, label matchers, ranges and
    label lists are gone, and that are neither functions/aggregations (followed by `(`) nor keywords."""
    expr = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    names = re.findall(r"(?<![\w.:])([a-zA-Z_:][\w:]*)(?![\w:]|\s*\()", expr)
    return set(names) - _KEYWORDS


def test_metric_names_finds_selectors_only():
    expr = (
        'sum by (team) (rate(foo_total{a="b", c=~"$x"}[5m])) / on (x) group_left (y) bar:rate5m offset 10m'
        " > 0.01 and group by (i) (baz) or vector(0)"
    )
    assert metric_names(expr) == {"foo_total", "bar:rate5m", "baz"}


def grafana_to_promql(expr: str) -> str:
    """Grafana's variables replaced by values that any label and range accept."""
    return re.sub(r"\$(\w+)", lambda m: "5m" if m[1] == "__rate_interval" else ".+", expr)


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail(
            "promtool is not installed: it comes with the Debian package `prometheus` "
            "(apt-get install -y --no-install-recommends prometheus)",
            pytrace=False,
        )
    return path


def run_promtool(promtool: str, *args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run([promtool, *args], capture_output=True, text=True, cwd=cwd, timeout=120)
    assert proc.returncode == 0, f"promtool {' '.join(args)}:\n{proc.stdout}{proc.stderr}"
    return proc.stdout


# --- alert rules -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rules() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def test_rules_pass_promtool_check(promtool):
    assert "SUCCESS" in run_promtool(promtool, "check", "rules", str(RULES))


def test_rules_pass_their_unit_tests(promtool):
    assert "SUCCESS" in run_promtool(promtool, "test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)


def test_rule_files_are_clean_yaml():
    config = YamlLintConfig("extends: default\nrules: {line-length: {max: 120}, document-start: disable}")
    for path in (RULES, RULE_TESTS):
        problems = [f"{path.name}:{p.line}: {p.desc}" for p in linter.run(path.read_text(), config)]
        assert problems == []


def test_the_required_alerts_exist_with_severity_and_annotations(rules):
    alerts = {rule["alert"]: rule for rule in rules if "alert" in rule}
    assert set(alerts) == {
        "DaggerTargetDown",
        "DaggerNoBatches",
        "DaggerConsumerLagGrowing",
        "DaggerWatermarkStuck",
        "DaggerDeadLetterRateHigh",
        "DaggerSinkErrors",
        "DaggerCrashLoop",
        "DaggerLateMessages",
    }
    for name, rule in alerts.items():
        assert re.fullmatch(r"\d+[smh]", rule["for"]), name
        assert rule["labels"]["severity"] in {"critical", "warning"}, name
        for key in ("summary", "description"):
            assert "$labels.dagger" in rule["annotations"][key] and "$labels.team" in rule["annotations"][key], (
                name,
                key,
            )


def test_recording_rules_are_named_by_convention_and_used(rules):
    recorded = [rule["record"] for rule in rules if "record" in rule]
    assert recorded
    for name in recorded:
        assert re.fullmatch(r"[a-z]+:[a-z_]+(:[a-z0-9_]+)?", name), f"{name}: not level:metric:operations"
    used = set().union(*(metric_names(rule["expr"]) for rule in rules if "alert" in rule))
    assert set(recorded) <= used, f"recorded but used by no alert: {set(recorded) - used}"


def test_each_alert_is_tested_firing_and_silent(rules):
    cases = [case for test in yaml.safe_load(RULE_TESTS.read_text())["tests"] for case in test["alert_rule_test"]]
    alerts = {rule["alert"] for rule in rules if "alert" in rule}
    tested = {case["alertname"] for case in cases}
    # promtool passes a test of an alert that does not exist: it expects nothing and gets nothing
    assert tested <= alerts, f"tests of unknown alerts: {tested - alerts}"
    for alert in alerts:
        outcomes = {bool(case["exp_alerts"]) for case in cases if case["alertname"] == alert}
        assert outcomes == {True, False}, f"{alert}: needs a case where it fires and one where it does not"


def test_rules_read_only_exposed_metrics(rules, exposed):
    recorded = {rule["record"] for rule in rules if "record" in rule}
    for rule in rules:
        unknown = metric_names(rule["expr"]) - exposed - recorded - {"up"}
        assert not unknown, f"{rule.get('alert') or rule['record']}: {unknown} not exposed by a dagger"


# --- dashboards ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def boards(tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("dashboards")
    assert dashboards.main(["--out", str(out)]) == 0
    return {path.name: json.loads(path.read_text()) for path in sorted(out.iterdir())}


def panels(board: dict) -> list[dict]:
    """Every panel, rows included, and those inside collapsed rows."""
    return [p for top in board["panels"] for p in [top, *top.get("panels", [])]]


def queries(board: dict) -> list[str]:
    """Every PromQL expression: the panels' targets and the selectors of the label_values variables."""
    exprs = [t["expr"] for p in panels(board) for t in p.get("targets", [])]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            selector = re.fullmatch(r"label_values\((.+), *\w+\)", variable["query"])
            assert selector, variable["query"]
            exprs.append(selector[1])
    return exprs


def test_cli_writes_both_dashboards_and_has_help(boards):
    assert set(boards) == {"daggers.json", "team-cluster.json"}
    proc = subprocess.run(
        [sys.executable, "-m", "monitoring.dashboards", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "--out" in proc.stdout


def _schema(name: str, definition: str) -> dict:
    document = json.loads((SCHEMAS / f"{name}.jsonschema.json").read_text())
    return {**document, "$ref": f"#/definitions/{definition}"}


def _errors(schema: dict, instance) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
        for e in jsonschema.Draft7Validator(schema).iter_errors(instance)
    ]


def test_dashboards_match_grafanas_schema(boards):
    for name, board in boards.items():
        assert _errors(_schema("dashboard", "Dashboard"), board) == [], name
        for panel in panels(board):
            if panel["type"] == "row":
                continue
            kind = panel["type"]
            assert _errors(_schema(kind, "Options"), panel["options"]) == [], (name, panel["title"])
            if kind == "timeseries":
                custom = panel["fieldConfig"]["defaults"]["custom"]
                assert _errors(_schema(kind, "FieldConfig"), custom) == [], (name, panel["title"])
            for target in panel["targets"]:
                assert _errors(_schema("prometheus", "Dataquery"), target) == [], (name, panel["title"])


def test_the_schema_check_rejects_a_broken_dashboard(boards):
    board = json.loads(json.dumps(boards["daggers.json"]))
    board["panels"][1]["gridPos"]["w"] = "wide"
    board["refresh_rate"] = "30s"
    errors = _errors(_schema("dashboard", "Dashboard"), board)
    assert len(errors) >= 2 and any("refresh_rate" in e for e in errors), errors


def test_panel_ids_are_unique_and_panels_fit_the_grid(boards):
    for name, board in boards.items():
        ids = [p["id"] for p in panels(board)]
        assert len(ids) == len(set(ids)) and all(isinstance(i, int) and i > 0 for i in ids), (name, ids)
        for p in panels(board):
            assert 0 <= p["gridPos"]["x"] and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24, (name, p["title"])


def test_one_datasource_everywhere(boards):
    for name, board in boards.items():
        variables = {v["name"]: v for v in board["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
        refs = [p["datasource"] for p in panels(board) if p["type"] != "row"]
        refs += [t["datasource"] for p in panels(board) for t in p.get("targets", [])]
        refs += [v["datasource"] for v in variables.values() if v["type"] == "query"]
        assert refs and all(ref == DATASOURCE for ref in refs), (name, refs)


def test_daggers_dashboard_repeats_a_row_per_dagger(boards):
    board = boards["daggers.json"]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    for name in ("team", "cluster", "dagger"):
        assert variables[name]["multi"] and variables[name]["query"].startswith("label_values("), name
    rows = [p for p in board["panels"] if p["type"] == "row"]
    assert board["panels"][0] is rows[0] and len(rows) == 1
    # an expanded row owns the panels that follow it
    assert rows[0]["repeat"] == "dagger" and not rows[0]["collapsed"] and rows[0]["panels"] == []
    in_row = board["panels"][1:]
    exprs = [t["expr"] for p in in_row for t in p["targets"]]
    assert all('dagger=~"$dagger"' in e for e in exprs), exprs
    assert set().union(*map(metric_names, exprs)) >= {
        "dagger_input_messages_total",
        "dagger_processed_messages_per_second",
        "dagger_consumer_lag_messages",
        "dagger_watermark_timestamp_seconds",
        "dagger_batch_duration_seconds",
        "dagger_dead_letters_total",
        "dagger_sink_errors_total",
    }


def test_team_cluster_dashboard_follows_its_variables(boards):
    board = boards["team-cluster.json"]
    assert {v["name"] for v in board["templating"]["list"]} == {"datasource", "team", "cluster"}
    exprs = [t["expr"] for p in panels(board) for t in p.get("targets", [])]
    assert all('team=~"$team"' in e and 'cluster=~"$cluster"' in e for e in exprs), exprs
    assert {
        "up",
        "dagger_batches_total",
        "dagger_input_messages_total",
        "dagger_consumer_lag_messages",
        "dagger_dead_letters_total",
        "dagger_sink_errors_total",
    } <= set().union(*map(metric_names, exprs))


def test_dashboards_read_only_exposed_metrics(boards, exposed):
    for name, board in boards.items():
        for expr in queries(board):
            unknown = metric_names(expr) - exposed - {"up"}
            assert not unknown, f"{name}: {expr}: {unknown} not exposed by a dagger"


def _dashboard_exprs(boards) -> list[str]:
    return [grafana_to_promql(e) for board in boards.values() for e in queries(board)]


def test_dashboard_queries_parse(boards, promtool, tmp_path):
    rules = [{"record": f"dashboard:query_{n}", "expr": expr} for n, expr in enumerate(_dashboard_exprs(boards))]
    path = tmp_path / "dashboards.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    assert "SUCCESS" in run_promtool(promtool, "check", "rules", str(path))


def test_dashboard_queries_return_data_from_a_dagger(boards, families, promtool, tmp_path):
    """On the series one dagger serves (with the target labels Prometheus adds), every query yields
    data: a misspelt metric or label, or a filter that drops everything, leaves it empty."""
    series = [{"series": "up" + _labels(TARGET), "values": "1x30"}]
    for family in families:
        for sample in family.samples:
            values = f"0+{sample.value}x30" if family.type == "counter" else f"{sample.value}x30"
            series.append({"series": sample.name + _labels({**sample.labels, **TARGET}), "values": values})
    cases = [{"expr": f"absent({expr})", "eval_time": "20m", "exp_samples": []} for expr in _dashboard_exprs(boards)]
    (tmp_path / "dashboards.test.yml").write_text(
        yaml.safe_dump(
            {
                "rule_files": [],
                "evaluation_interval": "1m",
                "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": cases}],
            }
        )
    )
    assert "SUCCESS" in run_promtool(promtool, "test", "rules", "dashboards.test.yml", cwd=tmp_path)


def _labels(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"
