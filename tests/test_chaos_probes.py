"""The drill's measurements judged (chaos/probes.py): a hypothesis per phase takes its phase's
worst sample, a safeguard its latest; probes that cannot reach a cluster answer None, quickly.
Expected verdicts are worked out by hand from the samples written here."""

from __future__ import annotations

import json
import socket
import threading
import time
import types
from pathlib import Path

import pytest

from chaos.probes import (
    Sampler,
    end_offsets,
    evaluate,
    mirror_lag_seconds,
    safeguard_breach,
    under_replicated_partitions,
)
from dagger_runtime import launches


def sampler_with(samples: list[dict]) -> Sampler:
    s = Sampler(
        registry_url="sqlite://",
        clusters_dir="/nonexistent",
        kafka={},
        primary="primary",
        mirror=None,
        logins={},
        topics=[],
    )
    s.samples = samples
    return s


def sample(t: float, lag_a, lag_b=0.0, *, input_a=30.0, wm_age=None, urp=0, disk=40.0) -> dict:
    a = (
        None
        if lag_a is None
        else {
            "version": 1,
            "cluster": "blue",
            "input": input_a,
            "processed": input_a,
            "lag": lag_a,
            "batches": 1,
            "latency": wm_age,
        }
    )
    b = {
        "version": 1,
        "cluster": "blue",
        "input": 10.0,
        "processed": 10.0,
        "lag": lag_b,
        "batches": 1,
        "latency": None if wm_age is None else wm_age / 2,
    }
    return {"t": t, "daggers": {"a": a, "b": b}, "disk": disk, "urp": {"primary": urp}, "mirror_lag": None}


def hyp(probe, *, of=None, low=None, high=None, phases=("before", "after"), name="h"):
    return types.SimpleNamespace(
        name=name, probe=probe, of=of, bounds=(low, high), phases=phases, unit="u", describe=lambda: name
    )


SAMPLES = [
    sample(100, 5, 1),
    sample(102, 50, 2),
    sample(104, None, 0),
    sample(106, 3000, 10),
    sample(108, 20, 0, input_a=2.0),
]
PHASES = {"before": (100, 104), "during": (104, 108), "after": (108, 110)}


def test_each_phase_is_judged_by_its_worst_sample():
    s = sampler_with(SAMPLES)
    out = evaluate([hyp("consumer_lag", of="a", high=100, phases=("before", "during", "after"))], s, PHASES)
    # before: samples at 100 and 102 -> worst 50; during: 104 (not answering) and 106 -> 3000
    assert [(h["phase"], h["value"], h["ok"]) for h in out] == [
        ("before", 50, True),
        ("during", 3000, False),
        ("after", 20, True),
    ]
    # both daggers together: a dagger not answering makes the sum unknown (sample 104 left out)
    out = evaluate([hyp("consumer_lag", high=60, phases=("before",))], s, PHASES)
    assert (out[0]["value"], out[0]["ok"]) == (52, True)
    # a minimum is judged by the lowest sample: throughput of a is 2.0 after
    out = evaluate([hyp("throughput", of="a", low=25, phases=("before", "after"))], s, PHASES)
    assert [(h["value"], h["ok"]) for h in out] == [(30, True), (2, False)]
    assert out[0]["tolerance"] == {"max": None, "min": 25}


def test_a_hypothesis_never_measured_says_so():
    out = evaluate([hyp("end_to_end_latency", of="a", high=60, phases=("before",))], sampler_with(SAMPLES), PHASES)
    assert (out[0]["value"], out[0]["ok"]) == (None, None)
    s = sampler_with([sample(100, 1, 1, wm_age=12.5), sample(102, 1, 1, wm_age=40.0)])
    out = evaluate([hyp("end_to_end_latency", high=30, phases=("before",))], s, PHASES)
    assert (out[0]["value"], out[0]["ok"]) == (40.0, False)  # the worst dagger's, not a sum


def test_safeguards_trip_on_the_latest_sample():
    s = sampler_with(SAMPLES)
    disk = types.SimpleNamespace(
        probe="disk_usage",
        of=None,
        abort_above=90,
        abort_below=None,
        threshold=90,
        unit="percent",
        describe=lambda: "abort if disk_usage > 90%",
    )
    lag = types.SimpleNamespace(
        probe="consumer_lag",
        of="a",
        abort_above=1000,
        abort_below=None,
        threshold=1000,
        unit="messages",
        describe=lambda: "abort if consumer_lag of a > 1000",
    )
    assert safeguard_breach([disk, lag], SAMPLES[1], s) is None
    assert safeguard_breach([disk, lag], SAMPLES[3], s) == "abort if consumer_lag of a > 1000 (it was 3000 messages)"
    assert safeguard_breach([disk, lag], sample(0, 1, disk=95.5), s).startswith("abort if disk_usage > 90%")
    s.samples = [SAMPLES[3]]
    assert s.breach() is None  # the sampler holds no safeguards of its own here
    tl = sampler_with(SAMPLES).timeline()
    assert tl["t"] == [100, 102, 104, 106, 108] and tl["consumer_lag"] == [6, 52, None, 3010, 20]


@pytest.mark.kafka
def test_kafka_probes_read_a_real_broker_and_give_up_quickly_on_a_dead_one(kafka_broker):
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    bootstrap = kafka_broker.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("probe-t", 2, 1), NewTopic("primary.probe-t", 2, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(5):  # 3 to partition 0, 2 to partition 1 of the "primary" topic
        producer.send("probe-t", b"x", partition=0 if i < 3 else 1, timestamp_ms=1_000_000 + i * 1000)
    # the "mirror" copy: partition 0 up to its second record, partition 1 whole
    for p, ts in ((0, 1_000_000), (0, 1_001_000), (1, 1_003_000), (1, 1_004_000)):
        producer.send("primary.probe-t", b"x", partition=p, timestamp_ms=ts)
    producer.flush()
    producer.close()
    assert end_offsets(bootstrap, {}, ["probe-t"]) == {("probe-t", 0): 3, ("probe-t", 1): 2}
    # partition 0's last record on the primary is at 1_002_000 ms, its copy's at 1_001_000 ms
    assert mirror_lag_seconds(bootstrap, {}, bootstrap, {}, ["probe-t"], "primary.") == 1.0
    assert under_replicated_partitions(bootstrap, {}) == 0
    started = time.monotonic()
    assert end_offsets("127.0.0.1:1", {}, ["probe-t"]) is None
    assert under_replicated_partitions("127.0.0.1:1", {}) is None
    assert time.monotonic() - started < 10


def test_the_produced_rate_is_counted_per_sample_interval():
    import pandas as pd

    from chaos.runner import produced_rate

    # sent at 100.5, 101, 101.5 (interval 100-102: 3 in 2 s), 103 (102-104: 1), none in 104-106
    frame = pd.DataFrame({"timestamp_ms": [100_500, 101_000, 101_500, 103_000, None]})
    assert produced_rate(frame, [100.0, 102.0, 104.0, 106.0]) == [None, 1.5, 0.5, 0.0]


def test_the_failover_commands_time_is_split_as_the_operation_timed_it():
    from chaos.runner import DrillRun

    steps = DrillRun.move_steps(20.0, {"check": 1.234, "stop": 12.5, "submit": 5.0})
    assert steps == [
        {"step": "check", "seconds": 1.23},
        {"step": "stop the old driver", "seconds": 12.5},
        {"step": "submit", "seconds": 5.0},
        {"step": "retries and bookkeeping", "seconds": 1.27},
    ]
    assert abs(sum(s["seconds"] for s in steps) - 20.0) < 0.011
    # the operation's clock runs inside the caller's: a rounding overshoot is taken off its last step
    assert DrillRun.move_steps(6.0, {"check": 1.004, "submit": 5.004}) == [
        {"step": "check", "seconds": 1.0},
        {"step": "submit", "seconds": 5.0},
    ]
    # an operation that timed nothing (an older one) keeps the one step
    assert DrillRun.move_steps(7.5, {}) == [{"step": "stop, check and submit", "seconds": 7.5}]


def test_the_after_phase_waits_for_a_failover_still_running_and_says_so(tmp_path):
    """A slow machine's fail-back past the settle time moves the after phase later instead of
    judging a dagger that is still restarting (a CI run judged one and found no sample)."""

    from chaos.playbook import load
    from chaos.runner import DrillRun

    book = load(Path(__file__).parent / "fixtures" / "drills" / "kafka-failover-short.yaml")
    run = DrillRun(book, lab=None, out_root=tmp_path, run_id="t")
    after = book.timeline.after  # warm-up... settle: 180 s on this playbook
    assert after == 180
    run.t0 = time.time() - after  # the settle time is now
    slow = threading.Thread(target=time.sleep, args=(2.0,), name="fail-back-bookings")
    slow.start()
    run._threads.append(slow)
    run.await_recovery()
    assert not slow.is_alive()
    assert 1.5 <= run.late <= 4.0
    assert any("past the settle time" in n for n in run.notes)
    # nothing running: the after phase starts when planned, with nothing said
    quick = DrillRun(book, lab=None, out_root=tmp_path, run_id="u")
    quick.t0 = time.time() - after
    quick.await_recovery()
    assert quick.late < 1.0 and quick.notes == []
    # a watchdog's failover has no thread of the runner's until it is done: started, not yet run
    from chaos.runner import Deployed

    auto = DrillRun(book, lab=None, out_root=tmp_path, run_id="v")
    d = Deployed("bookings", "drill-bookings", "t", "blue", Path("x.yaml"), {}, failover_started=time.time())
    auto.deployed[d.name] = d
    assert auto.recovering() == ["failover-drill-bookings"]
    threading.Timer(1.5, lambda: setattr(d, "first_batch_after", time.time())).start()
    auto.t0 = time.time() - after
    auto.await_recovery()
    assert auto.recovering() == [] and 1.0 <= auto.late <= 3.5


def test_a_crash_looping_dagger_reads_nothing_for_the_drill_answering_or_not(tmp_path):
    """A drill's "throughput after" passed while a dagger crash-looped: each launch read a batch and
    stored nothing, and the samples where it did not answer were left out. Now its samples say 0,
    and the verdict names the loop."""

    from dagger_runtime.lifecycle.registry import Registry

    with socket.socket() as free:  # a port nothing listens on: the dagger's silent /metrics
        free.bind(("127.0.0.1", 0))
        silent = free.getsockname()[1]
    clusters = tmp_path / "clusters"
    clusters.mkdir()
    (clusters / "blue.json").write_text(
        json.dumps(
            {
                "name": "blue",
                "master": "spark://127.0.0.1:7077",
                "web_ui": "http://127.0.0.1:8080",
                "python": "/opt/daggers/venv/bin/python",
                "jvm_dir": "/opt/daggers/jvm",
                "checkpoint_root": "/ck",
                "spec_dir": "/specs",
                "metrics_ports": [silent, silent],
            }
        )
    )
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    registry = Registry(url)
    checkpoint = tmp_path / "ck" / "surge-demand" / "v2"
    registry.record_version(
        name="drill-surge-demand",
        team=None,
        cluster="blue",
        spec="a",
        spec_format=".yaml",
        spec_digest="d",
        state_key="k",
        checkpoint=str(checkpoint),
        start="from earliest",
        actor="drill",
        submission_id="driver-20261123000000-0000",
        metrics_port=silent,
        action="deploy",
    )
    s = Sampler(
        registry_url=url, clusters_dir=str(clusters), kafka={}, primary="primary", mirror=None, logins={}, topics=[]
    )
    s.watch("drill-surge-demand", "surge-demand")
    launches.record(str(checkpoint), now_ms=1_000)
    assert s.sample(registry)["daggers"]["surge-demand"] is None  # starting, silent: unknown
    for at in (2_000, 3_000):
        launches.record(str(checkpoint), now_ms=at)
    looped = s.sample(registry)["daggers"]["surge-demand"]
    assert (looped["input"], looped["lag"]) == (0.0, None)
    assert looped["crash_loop"].startswith("3 driver launches in a row without a committed batch")
    s.samples = [{"t": 120.0, "disk": 1.0, "urp": {}, "mirror_lag": None, "daggers": {"surge-demand": looped}}]
    out = evaluate([hyp("throughput", of="surge-demand", low=30, phases=("after",))], s, {"after": (100, 130)})
    assert (out[0]["value"], out[0]["ok"]) == (0, False)
    assert s.crash_loops(100, 130) == {"surge-demand": looped["crash_loop"]}
    assert s.crash_loops(130, 160) == {}  # not seen after: not a loop at the end


def test_late_rows_add_up_over_drivers_whose_counters_start_again():
    """Each driver counts its late rows from its own start: a standby that took over on green, a
    driver started again on the same cluster (its counter went down), a new version."""

    def at(t, version, cluster, late):
        return {"t": t, "daggers": {"a": {"version": version, "cluster": cluster, "late": late}}}

    s = sampler_with(
        [
            at(1, 1, "blue", 0.0),
            at(2, 1, "blue", 5.0),
            at(3, 1, "green", 2.0),  # blue's 5, then green
            at(4, 1, "green", 7.0),
            at(5, 1, "green", 1.0),
            at(6, 1, "green", 3.0),  # green restarted: 7 + 3
            at(7, 2, "green", 4.0),
        ]
    )  # version 2: 4
    assert s.late_rows("a") == 5 + 7 + 3 + 4
    assert sampler_with([at(1, 1, "blue", 0.0)]).late_rows("a") == 0
    assert sampler_with([{"t": 1, "daggers": {"a": None}}]).late_rows("a") is None
