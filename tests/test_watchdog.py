"""The watchdog's decisions (dagger_runtime/lifecycle/watchdog.py), from plain inputs: when a loss
is confirmed, and where a dagger goes. Its actions on a lab are the Spark failover drill's
(tests/test_drills.py)."""
from __future__ import annotations

from dagger_runtime.lifecycle.failover import KafkaCluster
from dagger_runtime.lifecycle.watchdog import Loss, kafka_target, spark_target


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
        "mirror": KafkaCluster(name="mirror", bootstrap_servers="127.0.0.1:9192",
                               mirror_of={"cluster": "primary", "topic_prefix": "primary."}),
        "other": KafkaCluster(name="other", bootstrap_servers="127.0.0.1:9292"),
    }
    assert kafka_target("primary", clusters) == "mirror"       # to its copy
    assert kafka_target("mirror", clusters) == "primary"       # and back
    assert kafka_target("other", clusters) is None             # nothing copies it
    assert spark_target("blue", ["blue", "green"]) == "green"
    assert spark_target("blue", ["blue", "green", "red"]) is None   # ambiguous: name it (--spark-to)
    assert spark_target("blue", ["blue"]) is None
