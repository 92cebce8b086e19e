"""The watchdog's decisions (dagger_runtime/lifecycle/watchdog.py), from plain inputs: when a loss
is confirmed, and where a dagger goes. Its actions on a lab are the Spark failover drill's
(tests/test_drills.py)."""

from __future__ import annotations

import json

from dagger_runtime import launches
from dagger_runtime.lifecycle.failover import KafkaCluster
from dagger_runtime.lifecycle.watchdog import Loss, Watchdog, kafka_target, spark_target


def test_a_loss_is_confirmed_by_consecutive_failed_checks_only():
    loss = Loss(confirm=3)
    seen = [loss.observe(lost, at) for at, lost in enumerate([True, True, False, True, True, True, True])]
    # the blip at 0-1 is forgotten at 2; 3, 4, 5 confirm it, and it stays confirmed
    assert seen == [False, False, False, False, False, True, True]
    assert loss.since == 3 and loss.failed == 4
    assert Loss(confirm=1).observe(True, 7.0) is True


def test_where_a_dagger_goes():
    clusters = {
        "primary": KafkaCluster(name="primary", bootstrap_servers="127.0.0.1:9092"),
        "mirror": KafkaCluster(
            name="mirror",
            bootstrap_servers="127.0.0.1:9192",
            mirror_of={"cluster": "primary", "topic_prefix": "primary."},
        ),
        "other": KafkaCluster(name="other", bootstrap_servers="127.0.0.1:9292"),
    }
    assert kafka_target("primary", clusters) == "mirror"  # to its copy
    assert kafka_target("mirror", clusters) == "primary"  # and back
    assert kafka_target("other", clusters) is None  # nothing copies it
    assert spark_target("blue", ["blue", "green"]) == "green"
    assert spark_target("blue", ["blue", "green", "red"]) is None  # ambiguous: name it (--spark-to)
    assert spark_target("blue", ["blue"]) is None


def test_a_crash_loop_is_a_failure_the_watchdog_reports_and_does_not_move(tmp_path, fake_master):
    """Moving a driver that fails at every start to the other cluster would not help; the watchdog
    says so once, records CRASH_LOOP, and keeps watching the dagger's clusters."""
    from dagger_runtime.lifecycle.registry import Registry

    state, url = fake_master
    clusters = tmp_path / "clusters"
    clusters.mkdir()
    (clusters / "blue.json").write_text(
        json.dumps(
            {
                "name": "blue",
                "master": "spark://127.0.0.1:7077",
                "web_ui": url,
                "python": "/opt/daggers/venv/bin/python",
                "jvm_dir": "/opt/daggers/jvm",
                "checkpoint_root": "/ck",
                "spec_dir": "/specs",
                "metrics_ports": [24000, 24049],
            }
        )
    )
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    registry = Registry(url)
    checkpoint = tmp_path / "ck" / "surge" / "v1"
    registry.record_version(
        name="surge",
        team="allocations",
        cluster="blue",
        spec="name: surge\n",
        spec_format=".yaml",
        spec_digest="d",
        state_key="k",
        checkpoint=str(checkpoint),
        start="from earliest",
        actor="ana",
        submission_id="driver-20261123000000-0000",
        metrics_port=24000,
        action="deploy",
    )
    watchdog = Watchdog(["surge"], registry_url=url, clusters_dir=str(clusters))
    watched = watchdog.watched["surge"]
    launches.record(str(checkpoint), now_ms=1_000)
    watchdog.check(registry, watched)
    assert watchdog.events == [] and registry.get("surge").status == "SUBMITTED"
    for at in (2_000, 3_000):
        launches.record(str(checkpoint), now_ms=at)
    for _ in range(2):  # said once, not at every check
        watchdog.check(registry, watched)
    assert [(e["kind"], e["text"]) for e in watchdog.events] == [
        (
            "failed",
            "crash loop on blue: 3 driver launches in a row without a committed batch since "
            "1970-01-01T00:00:01Z (no batch committed yet)",
        )
    ]
    assert registry.get("surge").status == "CRASH_LOOP"
    assert watched.error is None and watched.started_at is None  # still watched, nothing moved
