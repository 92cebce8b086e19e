"""Drill playbooks (chaos/playbook/): the samples load and plan their faults at the times their
YAML says; LOKI's own document loads with its strings normalised; hostile playbooks are refused
naming the file, the line and the field; the `python -m chaos drill` commands.

Every expected time, line and message below is written by hand from the files, not computed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from chaos import cli
from chaos.catalog import BY_NAME
from chaos.plan import ACTIONS, plan, render
from chaos.playbook import (
    PLAYBOOKS_DIR,
    Lab,
    PlaybookError,
    duration,
    flag,
    fmt_duration,
    lab_inventory,
    load,
    parse,
    percentage,
)

REPO = Path(__file__).resolve().parent.parent
HOSTILE = REPO / "tests" / "fixtures" / "hostile_playbooks"
SAMPLES = [
    "kafka-failover",
    "spark-failover",
    "brokers-half-down",
    "broker-disk-failure",
    "network-partition",
    "sink-down",
]


def sample(name: str):
    return load(PLAYBOOKS_DIR / f"{name}.yaml")


def timed(steps, *actions: str) -> list[tuple[float, str]]:
    return [(s.at, s.action) for s in steps if s.action in actions]


# -- scalars as LOKI writes them ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("20m", 1200),
        ("90s", 90),
        ("1h30m", 5400),
        ("2h", 7200),
        ("1m30s", 90),
        ("500ms", 0.5),
        ("0s", 0),
        ("1.5h", 5400),
        ("30s1m", 90),
    ],
)
def test_durations_are_loki_strings(text, seconds):
    """Go's duration grammar, which LOKI's are: decimals, and parts in any order, each with its unit."""
    assert duration(text) == seconds


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("20 mins", "is not a duration"),
        ("-20m", "is negative"),
        (20, "has no unit"),
        ("1h30", "is not a duration"),
        ("m", "is not a duration"),
        (True, "expected a duration"),
        ("20", "has no unit"),
        ("1.5.2s", "is not a duration"),
    ],
)
def test_a_duration_needs_a_unit_on_every_number(text, fragment):
    with pytest.raises(ValueError, match=fragment):
        duration(text)


@pytest.mark.parametrize("given, value", [("10%", 10.0), (10, 10.0), ("100%", 100.0), (" 12.5 % ", 12.5), (50.0, 50.0)])
def test_failure_percentages_are_loki_strings_or_numbers(given, value):
    assert percentage(given) == value


@pytest.mark.parametrize(
    "given, fragment",
    [
        ("0%", "fails nothing"),
        (0, "fails nothing"),
        ("150%", "more than every instance"),
        ("-5%", "fails nothing"),
        ("ten", "not a percentage"),
        (True, "expected a percentage"),
    ],
)
def test_a_failure_percentage_is_in_0_to_100(given, fragment):
    with pytest.raises(ValueError, match=fragment):
        percentage(given)


@pytest.mark.parametrize(
    "given, value", [("true", True), ("false", False), (True, True), (False, False), ("True", True)]
)
def test_flags_are_loki_strings_or_booleans(given, value):
    assert flag(given) is value


def test_a_flag_is_only_true_or_false():
    with pytest.raises(ValueError, match="'yes' is not true or false"):
        flag("yes")


def test_durations_print_as_they_are_written():
    assert [fmt_duration(s) for s in (1200, 5400, 90, 0.5, 0, 45)] == ["20m", "1h30m", "1m30s", "500ms", "0s", "45s"]


# -- the lab ---------------------------------------------------------------------------------------------


def test_the_lab_is_read_from_its_inventory():
    lab = lab_inventory()
    assert dict(lab.kafka) == {"primary": (1, 2, 3), "mirror": (1,)}
    assert dict(lab.min_insync) == {"primary": 2, "mirror": 1}
    assert dict(lab.spark) == {
        c: (f"spark-{c}-allocations-worker", f"spark-{c}-api-health-worker") for c in ("blue", "green")
    }
    assert lab.sinks == ("influxdb", "postgresql")
    names, prefixes = lab.topics["primary"]
    assert "GO_RIDE-booking-log" in names and "p-logstream-" in prefixes
    assert lab.topic_problem("primary", "p-logstream-all") is None
    assert "did you mean GO_RIDE-booking-log" in lab.topic_problem("primary", "GO_RIDE-boking-log")


# -- the sample playbooks -------------------------------------------------------------------------------


def test_every_sample_playbook_is_there_and_loads():
    assert sorted(p.stem for p in PLAYBOOKS_DIR.glob("*.yaml")) == sorted(SAMPLES)
    for name in SAMPLES:
        book = sample(name)
        assert book.name == name
        assert book.faults and book.deployments and book.feeders and book.verify
        assert all(f.kind in BY_NAME for f in book.faults)
        assert book.timeline.end <= 12 * 60, f"{name}: minutes on the lab"


def test_kafka_failover_plan():
    book = sample("kafka-failover")
    (f,) = book.faults
    assert (f.kind, f.cluster, f.count, f.of, f.at, f.downtime, f.recovers) == (
        "cluster-down",
        "primary",
        3,
        3,
        120,
        180,
        True,
    )
    fo = book.failover
    assert (fo.kind, fo.to, fo.mode, fo.rto_target) == ("kafka", "mirror", "command", 30)
    steps = plan(book)
    # at 2m the cluster goes down for 3m; the failover is due 30s later; the primary is back at 5m
    # (MirrorMaker copies what it had not); after: 5m + settle 1m, observed 2m
    assert timed(steps, "inject", "undo", "failover-command", "expect-failover", "verify", "rollback") == [
        (120, "inject"),
        (120, "failover-command"),
        (150, "expect-failover"),
        (300, "undo"),
        (660, "verify"),
    ]
    assert [(s.at, s.until) for s in steps if s.action == "check-after"] == [(420, 660), (420, 660)]
    assert [(s.at, s.until) for s in steps if s.action == "check-before"] == [(60, 120)] * 3


def test_a_fail_back_is_planned_after_the_undo_and_the_short_kafka_drill_has_one():
    book = load(REPO / "tests" / "fixtures" / "drills" / "kafka-failover-short.yaml")
    (f,) = book.faults
    assert (f.at, f.end, book.failover.fail_back) == (40, 80, 10)
    steps = plan(book)
    assert timed(steps, "inject", "failover-command", "undo", "fail-back", "check-after") == [
        (40, "inject"),
        (40, "failover-command"),
        (80, "undo"),
        (90, "fail-back"),
        (180, "check-after"),
    ]
    assert "back to primary" in next(s.what for s in steps if s.action == "fail-back")


def test_spark_failover_plan():
    book = sample("spark-failover")
    (f,) = book.faults
    assert (f.kind, f.cluster, f.at, f.downtime, f.recovers) == ("spark-cluster-down", "blue", 120, 180, True)
    assert (book.failover.to, book.failover.rto_target) == ("green", 45)
    assert [d.cluster for d in book.deployments] == ["blue", "blue"]
    steps = plan(book)
    assert timed(steps, "inject", "undo", "expect-failover", "check-after", "verify") == [
        (120, "inject"),
        (165, "expect-failover"),
        (300, "undo"),
        (360, "check-after"),
        (360, "check-after"),
        (420, "verify"),
        (420, "verify"),
    ]


def test_brokers_half_down_plan():
    book = sample("brokers-half-down")
    (f,) = book.faults
    # LOKI's fields only: type kafka below 100% -> broker-stop; 50% of 3 brokers rounds up to 2
    assert (f.kind, f.derived, f.percentage, f.count, f.of, f.instances) == ("broker-stop", True, 50.0, 2, 3, ())
    assert book.chaos[0].fault == "broker-stop" and book.chaos[0].failure_percentage == 50.0
    assert book.failover is None
    # LOKI's top-level topic and proto_schema fill the feeder in
    assert (book.feeders[0].topic, book.feeders[0].message) == (
        "GO_RIDE-booking-log",
        "gojek.esb.booking.BookingLogMessage",
    )
    assert timed(plan(book), "inject", "undo", "verify") == [(120, "inject"), (240, "undo"), (360, "verify")]


def test_broker_disk_failure_plan():
    book = sample("broker-disk-failure")
    (f,) = book.faults
    assert (f.kind, f.derived, f.count, f.at, f.end) == ("disk-break", True, 1, 120, 240)
    steps = plan(book)
    assert timed(steps, "inject", "undo", "verify") == [(120, "inject"), (240, "undo"), (360, "verify")]
    assert [(s.at, s.until) for s in steps if s.action == "check-during"] == [(120, 240)]


def test_network_partition_plan():
    book = sample("network-partition")
    (f,) = book.faults
    assert (f.kind, f.cluster, f.instances, f.count, f.at, f.downtime) == ("network-cut", "primary", (2,), 1, 120, 90)
    shape = book.feeders[0].shape
    assert (shape.kind, shape.every, shape.by, shape.max) == ("steps", 60, 20, 100)
    steps = plan(book)
    # cut at 2m for 90s; after from 3m30s + 1m, observed 90s
    assert timed(steps, "inject", "undo", "check-after", "verify") == [
        (120, "inject"),
        (210, "undo"),
        (270, "check-after"),
        (270, "check-after"),
        (360, "verify"),
    ]


def test_sink_down_plan():
    book = sample("sink-down")
    (f,) = book.faults
    assert (f.kind, f.cluster, f.at, f.downtime) == ("sink-down", "influxdb", 120, 120)
    assert book.deployments[0].sink_server == "influxdb"
    assert timed(plan(book), "inject", "check-during", "undo", "verify") == [
        (120, "inject"),
        (120, "check-during"),
        (240, "undo"),
        (360, "verify"),
    ]


@pytest.mark.parametrize(
    "shape, rates",
    [
        # rate 40; t = 0, 59, 60, 130, 300 s
        ("constant", [40, 40, 40, 40, 40]),
        ("{kind: steps, every: 1m, by: 20, max: 100}", [40, 40, 60, 80, 100]),
        ("{kind: ramp, to: 100, over: 2m}", [40, 69.5, 70, 100, 100]),
        ("{kind: spike, at: 1m, peak: 400, lasting: 70s}", [40, 40, 400, 40, 40]),
    ],
)
def test_a_feeders_shape_moves_its_rate(shape, rates):
    text = (
        (HOSTILE / "zero-percent.yaml")
        .read_text()
        .replace('"0%"', '"50%"')
        .replace("    rate: 40\n", f"    rate: 40\n    shape: {shape}\n")
    )
    feeder = parse(text, source="x.yaml").feeders[0]
    assert [feeder.rate_at(t) for t in (0, 59, 60, 130, 300)] == rates


def test_steps_at_one_time_come_in_the_runners_order():
    for name in SAMPLES:
        steps = plan(sample(name))
        assert steps == sorted(steps, key=lambda s: (s.at, ACTIONS.index(s.action)))
        assert steps[0].at == 0 and steps[0].action == "deploy"


def test_the_rendered_plan_names_each_step_with_its_time():
    text = render(sample("kafka-failover"), plan(sample("kafka-failover")))
    assert text.splitlines()[0].startswith("drill kafka-failover: 1 fault(s), 11m in all")
    assert re.search(r"^\s+2m\s+inject\s+primary lost: cluster-down primary \(all 3 brokers\) for 3m", text, re.M)
    assert re.search(r"^\s+2m30s\s+expect-failover\s+daggers on mirror", text, re.M)
    assert re.search(r"^\s+5m\s+undo\s+primary lost: starts them", text, re.M)


def test_a_json_playbook_is_the_same_drill(tmp_path):
    data = yaml.safe_load((PLAYBOOKS_DIR / "spark-failover.yaml").read_text())
    path = tmp_path / "spark-failover.json"
    path.write_text(json.dumps(data, indent="\t"))
    assert plan(load(path)) == plan(sample("spark-failover"))


def test_where_names_the_line_of_a_field():
    book = sample("kafka-failover")
    assert book.where("chaos[0].downtime") == "chaos/drills/kafka-failover.yaml:53: chaos[0].downtime"
    assert book.where("failover.rto_target") == "chaos/drills/kafka-failover.yaml:84: failover.rto_target"


# -- LOKI's own document -------------------------------------------------------------------------------

# anchors.md: name, description, cluster, producers, chaos [{name, blast_radius, type: kafka,
# failure_percentage: "10%", data_disk_failure: "true", instance_recovery: "true", downtime: "20m"}],
# consumers {topic, offset, count, consumer_per_group, schema}, feeders {name, topic, count}; the
# slide's topic, proto_schema (a Java class name) and proto_class_prefix
LOKI = """\
name: esb-kafka-mirror-resiliency-test-phase-3
description: Resiliency test for ESB kafka mirror phase 3
cluster: primary
producers: 2
topic: GO_RIDE-booking-log
proto_schema: com.gojek.esb.booking.BookingLogMessage
proto_class_prefix: com.gojek.esb.booking.BookingLog
feeders:
  - {name: bookings, topic: GO_RIDE-booking-log, count: 100000}
consumers:
  - {topic: GO_RIDE-booking-log, offset: latest, count: 2, consumer_per_group: 3,
     schema: com.gojek.esb.booking.BookingLogMessage}
chaos:
  - name: CASE 1
    blast_radius: primary
    type: kafka
    failure_percentage: "10%"
    data_disk_failure: "true"
    instance_recovery: "true"
    downtime: "20m"
"""


def test_lokis_document_loads_with_its_values_normalised(tmp_path):
    path = tmp_path / "loki.yaml"
    path.write_text(LOKI)
    book = load(path)
    case = book.chaos[0]
    assert (
        case.name,
        case.blast_radius,
        case.type,
        case.failure_percentage,
        case.data_disk_failure,
        case.instance_recovery,
        case.downtime,
    ) == ("CASE 1", "primary", "kafka", 10.0, True, True, 1200.0)
    # data_disk_failure -> disk-break; 10% of the primary's 3 brokers is 1; the first fault after
    # the default warm-up (1m) and baseline (1m)
    assert (case.fault, case.at) == ("disk-break", 120.0)
    (f,) = book.faults
    assert (f.kind, f.cluster, f.count, f.of, f.derived, f.end) == ("disk-break", "primary", 1, 3, True, 1320.0)
    # the Java class names become the descriptor set's message names
    assert book.feeders[0].message == "gojek.esb.booking.BookingLogMessage"
    assert book.consumers[0].schema_ == "gojek.esb.booking.BookingLogMessage"
    assert (book.consumers[0].count, book.consumers[0].consumer_per_group, book.producers) == (2, 3, 2)
    assert timed(plan(book), "inject", "undo") == [(120, "inject"), (1320, "undo")]


def test_lokis_one_case_at_the_top_level_is_the_drills_fault():
    text = LOKI[: LOKI.index("chaos:")] + textwrap.dedent("""\
        blast_radius: primary
        type: kafka
        failure_percentage: 100%
        instance_recovery: "false"
        downtime: 10m
        """)
    book = parse(text, source="loki.yaml")
    (f,) = book.faults
    assert (f.name, f.kind, f.count, f.recovers, f.downtime) == (book.name, "cluster-down", 3, False, 600)


def test_top_level_loki_fields_are_the_defaults_of_each_case():
    text = LOKI.replace('    downtime: "20m"\n', "").replace("chaos:\n", "downtime: 5m\nchaos:\n") + (
        "  - name: CASE 2\n    fault: network-slow\n    target: primary/3\n    downtime: 1m\n"
    )
    book = parse(text, source="loki.yaml")
    assert [(f.name, f.kind, f.at, f.downtime) for f in book.faults] == [
        ("CASE 1", "disk-break", 120, 300),
        ("CASE 2", "network-slow", 420, 60),
    ]


# -- hostile playbooks -----------------------------------------------------------------------------------

# file -> (line, field, a part of the message): read off the fixtures by hand
EXPECTED = {
    "broker-not-in-cluster.yaml": (18, "chaos[0].target", "4 not in primary (its broker ids: 1, 2, 3)"),
    "disk-failure-on-spark.yaml": (
        20,
        "chaos[0].data_disk_failure",
        "a data disk failure breaks a Kafka broker's disk",
    ),
    "downtime-20-mins.yaml": (20, "chaos[0].downtime", "'20 mins' is not a duration"),
    "downtime-no-unit.yaml": (20, "chaos[0].downtime", "20 has no unit: write 20s, 20m or 20h"),
    "downtime-too-long.yaml": (20, "chaos[0].downtime", "3h is above the ceiling of 2h"),
    "drill-name-dotdot.yaml": (2, "name", "'../../etc/cron.d/x' is not allowed as a drill name"),
    "drill-name-uppercase.yaml": (2, "name", "'Kafka_Failover' is not allowed as a drill name"),
    "duplicate-key.yaml": (22, "chaos[0].downtime", "given twice (lines 20 and 22)"),
    "fail-back-after-settle.yaml": (
        24,
        "failover.fail_back",
        '2m after primary is back, but "after" is checked 1m after it (timing.settle)',
    ),
    "fail-back-never-back.yaml": (25, "failover.fail_back", "cannot move back to primary: chaos[0] leaves it lost"),
    "failover-cluster-survives.yaml": (
        21,
        "failover.kind",
        "a kafka failover needs primary lost, but the faults leave it serving",
    ),
    "failover-contradicts-faults.yaml": (
        22,
        "failover.kind",
        "a kafka failover, but no fault breaks kafka (the faults break spark)",
    ),
    "failover-to-broken-cluster.yaml": (23, "failover.to", "the daggers move to blue, but chaos[0] breaks blue"),
    "fault-in-warmup.yaml": (21, "chaos[0].at", "30s is inside the warm-up (timing.warmup 1m)"),
    "feeder-key-not-a-field.yaml": (10, "feeders[0].key", "has no 'order_numbr' (did you mean order_number"),
    "feeder-message-mismatch.yaml": (
        8,
        "feeders[0].message",
        "but the dagger surge-demand reads GO_RIDE-booking-log as gojek.esb.booking.BookingLogMessage",
    ),
    "flag-yes.yaml": (20, "chaos[0].instance_recovery", "'yes' is not true or false"),
    "merge-key.yaml": (16, "chaos[0].<<", "merge keys (<<) are not allowed"),
    "missing-dagger-file.yaml": (12, "daggers[0].spec", "no dagger spec at examples/daggers/completed_bookings.yaml"),
    "missing-downtime.yaml": (16, "chaos[0].downtime", "required: how long the fault lasts"),
    "negative-downtime.yaml": (20, "chaos[0].downtime", "'-20m' is negative"),
    "percent-150.yaml": (19, "chaos[0].failure_percentage", "150% is more than every instance"),
    "percentage-on-cluster-down.yaml": (20, "chaos[0].failure_percentage", "50%, but cluster-down hits all of primary"),
    "rto-longer-than-downtime.yaml": (23, "failover.rto_target", "1m, but chaos[0] is undone after 20s"),
    "shape-wrong-param.yaml": (10, "feeders[0].shape.peak", "a ramp shape takes to and over, not peak"),
    "sink-nobody-writes.yaml": (18, "chaos[0].target", "no dagger of the drill writes to postgresql"),
    "tolerance-without-unit.yaml": (24, "steady_state[0].tolerance.max", "90 has no unit: this probe is a time"),
    "topic-not-in-lab.yaml": (
        7,
        "feeders[0].topic",
        "'GO_RIDE-boking-log' is not a topic of the lab's primary cluster (did you mean GO_RIDE-booking-log",
    ),
    "topic-with-space.yaml": (7, "feeders[0].topic", "' ' is not allowed"),
    "typo-fault-kind.yaml": (18, "chaos[0].fault", "'broker-stp' is not a fault kind (did you mean broker-stop"),
    "unknown-blast-radius.yaml": (
        18,
        "chaos[0].blast_radius",
        "'mainstream-perf' is not a Kafka cluster of the lab (it has primary, mirror)",
    ),
    "unknown-key-in-chaos.yaml": (20, "chaos[0].downtme", "unknown field (did you mean downtime?)"),
    "unknown-key.json": (19, "chaos[0].instance_recovry", "unknown field (did you mean instance_recovery?)"),
    "unknown-key.yaml": (5, "failovr", "unknown field (did you mean failover?)"),
    "unknown-message-type.yaml": (8, "feeders[0].message", "unknown message 'gojek.esb.booking.BookingMessage'"),
    "verify-unknown-column.yaml": (
        29,
        "verify[0].measures.bookings",
        "'bookings' is not a column surge-demand writes (did you mean num_of_bookings?)",
    ),
    "verify-window-mismatch.yaml": (27, "verify[0].window", "30s, but surge-demand aggregates over 1m windows"),
    "wrong-type-fault.yaml": (18, "chaos[0].fault", "master-kill breaks spark (a master), but the type here is kafka"),
    "yaml-alias.yaml": (24, "steady_state[0].tolerance.max", "an alias (*name) repeats another part of the file"),
    "yaml-tag.yaml": (3, "description", "the YAML tag !!python/name:os.system is not allowed"),
    "zero-percent.yaml": (19, "chaos[0].failure_percentage", "0% fails nothing"),
}
CASES = sorted(p.name for p in HOSTILE.iterdir())


def test_there_are_at_least_25_hostile_playbooks_each_with_an_expectation():
    assert len(CASES) >= 25
    assert sorted(EXPECTED) == CASES


@pytest.mark.parametrize("name", CASES)
def test_a_hostile_playbook_is_refused_naming_file_line_and_field(name):
    line, field, fragment = EXPECTED[name]
    with pytest.raises(PlaybookError) as e:
        load(HOSTILE / name)
    problems = e.value.problems
    label = f"tests/fixtures/hostile_playbooks/{name}"
    assert any(p.startswith(f"{label}:{line}: {field}: ") and fragment in p for p in problems), "\n".join(problems)
    assert all(re.match(rf"{re.escape(label)}:\d+: \S+: \S", p) for p in problems), problems
    assert str(e.value).startswith("invalid drill playbook:")


def test_the_base_of_the_hostile_playbooks_is_itself_valid():
    # each fixture breaks one thing of this one (the duplicate key put back, the first line a comment)
    text = (HOSTILE / "duplicate-key.yaml").read_text().replace("    downtime: 5m\n", "")
    book = parse(text, source="base.yaml")
    assert [(f.kind, f.count) for f in book.faults] == [("broker-stop", 2)]


def test_every_problem_is_listed_at_once():
    text = (
        (HOSTILE / "zero-percent.yaml")
        .read_text()
        .replace("name: hostile", "name: ../x")
        .replace("downtime: 2m", "downtime: 20 mins")
    )
    with pytest.raises(PlaybookError) as e:
        parse(text, source="x.yaml")
    assert [p.split(": ")[0] for p in e.value.problems] == ["x.yaml:2", "x.yaml:19", "x.yaml:20"]


def test_the_lab_decides_which_names_a_playbook_may_use():
    lab = Lab(
        kafka={"primary": (1, 2, 3, 4, 5)}, min_insync={"primary": 3}, spark={"blue": ("w1",)}, sinks=("influxdb",)
    )
    text = (HOSTILE / "broker-not-in-cluster.yaml").read_text()
    book = parse(text, source="x.yaml", lab=lab)
    assert book.faults[0].instances == (4,) and book.faults[0].of == 5


def test_a_missing_file_is_a_problem_not_a_traceback(tmp_path):
    with pytest.raises(PlaybookError) as e:
        load(tmp_path / "nope.yaml")
    assert e.value.problems == [f"{tmp_path / 'nope.yaml'}:1: (file): no such file"]


# -- the commands --------------------------------------------------------------------------------------------


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.chaos_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_drill_list_shows_every_sample(capsys):
    code, out, _ = run(capsys, "drill", "list")
    assert code == 0
    for name in SAMPLES:
        assert name in out
    row = next(line for line in out.splitlines() if "kafka-failover" in line)
    for cell in (
        "kafka",
        "cluster-down at 2m",
        "3m ",
        "kafka -> mirror (command, rto 30s)",
        "Primary Kafka cluster lost",
    ):
        assert cell in row


def test_drill_list_json(capsys):
    code, out, _ = run(capsys, "drill", "list", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert sorted(rows) == sorted(SAMPLES)
    assert rows["spark-failover"]["failover"] == {
        "kind": "spark",
        "to": "green",
        "mode": "command",
        "rto_target_s": 45.0,
    }
    assert rows["network-partition"]["faults"] == [
        {
            "name": "broker 2 partitioned",
            "kind": "network-cut",
            "target": "network-cut primary broker 2",
            "at_s": 120.0,
            "downtime_s": 90.0,
            "recovers": True,
        }
    ]
    assert rows["sink-down"]["type"] == "sink" and rows["sink-down"]["length_s"] == 360.0


def test_drill_list_of_a_directory_with_a_bad_playbook_fails(capsys, tmp_path):
    (tmp_path / "good.yaml").write_text((PLAYBOOKS_DIR / "sink-down.yaml").read_text())
    (tmp_path / "bad.yaml").write_text((HOSTILE / "zero-percent.yaml").read_text())
    code, out, err = run(capsys, "drill", "list", "--dir", str(tmp_path))
    assert code == 2
    assert "sink-down" in out and "invalid: 1 problem(s)" in out
    assert "bad.yaml:19: chaos[0].failure_percentage: 0% fails nothing" in err


def test_drill_validate_exit_codes(capsys):
    code, out, _ = run(capsys, "drill", "validate", "kafka-failover", str(PLAYBOOKS_DIR / "sink-down.yaml"))
    assert code == 0
    assert "kafka-failover: valid (cluster-down primary (all 3 brokers); 11m in all)" in out
    assert "sink-down: valid" in out
    code, out, err = run(capsys, "drill", "validate", "sink-down", str(HOSTILE / "percent-150.yaml"))
    assert code == 2
    assert "sink-down: valid" in out
    assert "percent-150.yaml: invalid (1 problem)" in err
    assert "tests/fixtures/hostile_playbooks/percent-150.yaml:19: chaos[0].failure_percentage: 150%" in err


def test_drill_run_dry_run_prints_the_plan(capsys):
    code, out, _ = run(capsys, "drill", "run", "spark-failover", "--dry-run", "--seed", "7")
    assert code == 0
    assert out.startswith("drill spark-failover: 1 fault(s), 7m in all")
    assert re.search(r"^\s+2m45s\s+expect-failover\s+daggers on green", out, re.M)
    assert re.search(r"^\s+5m\s+undo\s+blue lost: starts them", out, re.M)


def test_drill_run_refuses_an_invalid_playbook_and_aborts_without_a_lab(capsys, tmp_path):
    code, _, err = run(capsys, "drill", "run", str(HOSTILE / "yaml-tag.yaml"), "--dry-run")
    assert code == 2 and "yaml-tag.yaml:3: description: the YAML tag" in err
    # no lab there: the run stops before touching anything, and its report says why
    code, out, _ = run(
        capsys,
        "drill",
        "run",
        "sink-down",
        "--lab",
        str(tmp_path / "no-lab"),
        "--port-base",
        "45000",
        "--out",
        str(tmp_path / "runs"),
    )
    assert code == 4
    report = json.loads(Path(out.strip().splitlines()[-1]).read_text())
    assert report["verdict"] == "aborted" and report["faults"] == [] and report["cases"] == []
    assert any("no lab at" in r for r in report["verdict_reasons"]), report["verdict_reasons"]


def test_the_console_script_takes_the_drill_commands(capsys):
    assert cli.main(["validate", "brokers-half-down"]) == 0
    assert "brokers-half-down: valid" in capsys.readouterr().out


@pytest.mark.parametrize("command", [[], ["drill"], ["drill", "list"], ["drill", "validate"], ["drill", "run"]])
def test_each_drill_command_has_help(command):
    proc = subprocess.run(
        [sys.executable, "-m", "chaos", *command, "--help"], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m chaos")
    if command[-1:] == ["run"]:
        for option in ("PLAYBOOK", "--lab DIR", "--out DIR", "--seed", "--dry-run", "$DAGGER_DRILL_RUNS", "out/drills"):
            assert option in proc.stdout


def test_pyproject_installs_the_command_and_the_package():
    text = (REPO / "pyproject.toml").read_text()
    assert 'daggers-drill = "chaos.cli:main"' in text
    assert '"chaos*"' in text


def test_a_feeder_hint_may_be_a_generator_kind_and_a_wrong_one_is_refused_at_its_line(tmp_path):
    from chaos.feeders import generator_hints

    text = (PLAYBOOKS_DIR / "sink-down.yaml").read_text()
    book = load(PLAYBOOKS_DIR / "sink-down.yaml")
    assert generator_hints(book.feeders[0].hints) == {"lat": {"lat": "jakarta"}, "long": {"lng": "jakarta"}}
    line = text[: text.index("hints:")].count("\n") + 1
    for wrong, said in (("{latt: jakarta}", "one of the generator's kinds"), ("{lat: atlantis}", "atlantis")):
        path = tmp_path / "wrong-hint.yaml"
        path.write_text(text.replace("{lat: jakarta}", wrong))
        with pytest.raises(PlaybookError) as e:
            load(path)
        (problem,) = e.value.problems
        assert problem.startswith(f"{path}:{line}: feeders[0].hints") and said in problem, problem
