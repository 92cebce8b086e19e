"""docs/reference/metrics-and-alerts.md is current, and the rules it lists only read series that
exist: every dagger_* name in a rule's expression is one a dagger serves (as its collector names
it on /metrics) or one a recording rule makes, and every alert has a severity, a summary and a
promtool unit test."""

from __future__ import annotations

import re

import yaml

from monitoring import reference

TESTS = reference.ROOT / "monitoring" / "rules" / "daggers.rules.test.yml"


def test_the_committed_page_is_current():
    assert reference.main(["--check"]) == 0


def test_the_rules_read_only_series_a_dagger_serves_or_a_rule_records():
    served = {m["name"] for m in reference.metrics()}
    recorded, alerts = reference.rules()
    made = {r["record"] for r in recorded}
    for rule in recorded + alerts:
        for name in re.findall(r"\b(dagger[_:][a-z0-9_:]+)", rule["expr"]):
            rule_name = rule.get("alert") or rule.get("record")
            assert name in served | made, f"{rule_name} reads {name}, which nothing serves"
    # and what the page says a dagger serves is what Prometheus's client exposes: counters as _total
    assert all(m["name"].endswith("_total") == (m["type"] == "counter") for m in reference.metrics())


def test_every_alert_has_a_severity_a_summary_and_a_unit_test():
    _, alerts = reference.rules()
    tested = {
        t["alertname"]
        for test in yaml.safe_load(TESTS.read_text())["tests"]
        for t in test.get("alert_rule_test", [])
        if t.get("exp_alerts")
    }
    for alert in alerts:
        assert alert["labels"]["severity"] in {"critical", "warning"}, alert["alert"]
        assert alert["annotations"]["summary"], alert["alert"]
        assert alert["alert"] in tested, f"{alert['alert']} has no promtool test that expects it to fire"
