"""A dagger's charts on its page: the samples scaled into the chart's box (checked against a
computation here), and the label selector that reaches PromQL refusing anything but a name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dagger_runtime.errors import DaggerError
from portal import charts


def test_a_series_is_scaled_into_the_box_from_zero_to_its_highest():
    samples = [(100.0, 0.0), (150.0, 5.0), (200.0, 10.0)]
    points = [tuple(map(float, p.split(","))) for p in charts.polyline(samples, 100.0, 200.0, 400, 100).split()]
    assert points == [(0.0, 100.0), (200.0, 50.0), (400.0, 0.0)]
    # all the same: drawn at the bottom, not divided by zero
    flat = charts.polyline([(0.0, 0.0), (10.0, 0.0)], 0.0, 10.0, 100, 50)
    assert flat == "0.0,50.0 100.0,50.0"
    # a negative value lowers the floor below 0
    low = [
        tuple(map(float, p.split(","))) for p in charts.polyline([(0.0, -2.0), (10.0, 2.0)], 0.0, 10.0, 10, 40).split()
    ]
    assert low == [(0.0, 40.0), (10.0, 0.0)]
    assert charts.polyline([], 0.0, 10.0) == "" and charts.polyline([(1.0, 1.0)], 5.0, 5.0) == ""


@pytest.mark.parametrize(
    "team,dagger",
    [
        ('allocations"}or vector(1)', "x"),
        ("allocations", 'x",team=~".*'),
        ("allocations", "x}"),
        ("allocations", ""),
        ("allocations", "x" * 129),
        ("allocations", "x\ny"),
        (None, "x"),
    ],
)
def test_only_names_reach_a_promql_selector(team, dagger):
    with pytest.raises(DaggerError):
        charts.selector(team, dagger)


def test_the_selector_names_the_daggers_team_and_name():
    assert charts.selector("api-health", "api_errors.v2") == '{team="api-health",dagger="api_errors.v2"}'


def test_each_chart_selects_by_labels_its_series_keeps():
    """A recorded series keeps only its rule's `by` labels (a selector naming job would match
    nothing); a raw metric keeps its target's and its own labels."""

    import yaml

    rules = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / "monitoring" / "rules" / "daggers.rules.yml").read_text()
    )
    kept = {}
    for rule in rules["groups"][0]["rules"]:
        if "record" in rule:
            kept[rule["record"]] = set(re.search(r"by \(([^)]*)\)", rule["expr"]).group(1).replace(" ", "").split(","))
    selected = set(re.findall(r"(\w+)=", charts.selector("allocations", "surge")))
    recorded = 0
    for _, _, _, query in charts.SERIES:
        name = re.search(r"([\w:]+)\{sel\}", query).group(1)
        if ":" in name:
            recorded += 1
            assert name in kept and selected <= kept[name], (name, selected, kept.get(name))
    assert recorded == 3 and selected == {"team", "dagger"}
