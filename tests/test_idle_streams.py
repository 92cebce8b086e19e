"""When the driver writes an idle stream's heartbeat (dagger_runtime.idle.IdleStreams), from batch
progress as Spark reports it; the heartbeats' effect on a running job is in test_source_watermark."""

from __future__ import annotations

from dagger_runtime.idle import IdleStreams


def progress(**streams) -> dict:
    """A batch's progress: table -> (rows, latest event time) or None for a stream that read nothing."""
    metrics = {}
    for table, seen in streams.items():
        rows, latest = seen if seen else (0, None)
        metrics[f"__dagger_source_{table}"] = {"rows": rows, "max_event_time": latest}
    return {"observedMetrics": metrics}


T = "2026-11-22T00:0{}:00.000Z"
MS = {m: 1_795_305_600_000 + m * 60_000 for m in range(10)}  # 2026-11-22T00:0m:00Z


def test_no_heartbeat_while_every_stream_reads():
    idle = IdleStreams(["a", "b"], timeout_ms=5_000, now=0.0)
    assert idle.observe(progress(a=(10, T.format(1)), b=(3, T.format(0))), now=1.0) == []
    assert idle.observe(progress(a=(10, T.format(2)), b=(1, T.format(0))), now=4.0) == []


def test_a_stream_quiet_for_the_timeout_gets_the_active_streams_latest_event_time():
    idle = IdleStreams(["a", "b"], timeout_ms=5_000, now=0.0)
    idle.observe(progress(a=(10, T.format(1)), b=(3, T.format(0))), now=1.0)
    assert idle.observe(progress(a=(10, T.format(2)), b=None), now=5.9) == []  # b quiet 4.9 s
    assert idle.observe(progress(a=(10, T.format(3)), b=None), now=6.0) == [("b", MS[3])]
    # said once per new event time, not once per batch
    assert idle.observe(progress(a=(0, None), b=None), now=7.0) == []
    assert idle.observe(progress(a=(4, T.format(5)), b=None), now=8.0) == [("b", MS[5])]


def test_the_heartbeat_is_the_slowest_active_stream_and_never_behind_the_idle_ones_own():
    idle = IdleStreams(["a", "b", "c"], timeout_ms=1_000, now=0.0)
    idle.observe(progress(a=(1, T.format(4)), b=(1, T.format(2)), c=(1, T.format(6))), now=0.5)
    # c quiet: a and b are active, the slower (b, minute 2) is behind c's own minute 6: nothing to say
    assert idle.observe(progress(a=(1, T.format(5)), b=(1, T.format(3)), c=None), now=2.0) == []
    assert idle.observe(progress(a=(1, T.format(8)), b=(1, T.format(7)), c=None), now=3.0) == [("c", MS[7])]


def test_all_quiet_moves_nothing_and_a_stream_that_never_spoke_is_let_go():
    idle = IdleStreams(["a", "b"], timeout_ms=1_000, now=0.0)
    assert idle.observe(progress(a=None, b=None), now=5.0) == []  # nothing seen anywhere
    assert idle.observe(progress(a=(2, T.format(1)), b=None), now=6.0) == [("b", MS[1])]
    assert idle.observe(progress(a=None, b=None), now=9.0) == []  # both idle: stand still
