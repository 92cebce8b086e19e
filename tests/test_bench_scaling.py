"""The scaling figures of `make bench` (bench/scaling.py) and the sizing they feed: the sustained
rate over a run's batches, infra/throughput.json as infra/ reads it back, and the page it makes."""

from __future__ import annotations

import json
import math

import pytest

from bench import scaling
from infra import sizing, sizing_reference


def test_the_sustained_rate_is_the_messages_of_the_batches_that_read_any_over_their_time():
    batches = [
        {"input_rows": 100_000, "batch_duration_ms": 2_000},
        {"input_rows": 50_000, "batch_duration_ms": 500},
        {"input_rows": 0, "batch_duration_ms": 900},  # the batch that closes the windows: no read
    ]
    assert scaling.sustained_rate(batches) == 150_000 / 2.5
    assert scaling.sustained_rate([{"input_rows": 0, "batch_duration_ms": 10}]) == 0.0


def test_the_measured_figures_become_the_table_infra_reads_back_and_the_page_shows(tmp_path):
    figures = {"per_core_msgs_per_s": 40_000, "efficiency": 0.8, "utilisation": 0.5, "cluster": "blue (t)"}
    path = tmp_path / "throughput.json"
    doc = scaling.write_throughput(figures, "0123456789abcdef", path)
    assert json.loads(path.read_text()) == doc
    usable = 40_000 * 0.8 * 0.5  # 16,000 msg/s a core
    by_peak = {row["peak_msgs_per_s"]: row for row in doc["table"]}
    assert by_peak[10_000]["executor_cores"] == 1
    assert by_peak[100_000]["executor_cores"] == 7  # 100,000 / 16,000 = 6.25
    assert by_peak[1_000_000]["executor_cores"] == math.ceil(1_000_000 / usable) == 63
    assert by_peak[100_000]["planned_for_msgs_per_s"] == 112_000
    read = sizing.throughput(path)
    assert read.executor_cores(100_000) == 7 and read.capacity(7) == 112_000
    # 7 cores: 2 workers of 4 cores; of 8 or 16 one would do, but never fewer than 2
    assert [sizing.workers_for(100_000, c, read) for c in (4, 8, 16)] == [2, 2, 2]
    # 63 cores: 16 workers of 4, 8 of 8, 4 of 16
    assert [sizing.workers_for(1_000_000, c, read) for c in (4, 8, 16)] == [16, 8, 4]
    text = sizing_reference.page(path)
    assert "| 100,000 | 7 | 112,000 | 2 | 2 | 2 |" in text
    assert "| 1,000,000 | 63 | 1,008,000 | 16 | 8 | 4 |" in text
    assert "at commit `0123456789ab`" in text


@pytest.mark.parametrize(
    "figures, wrong",
    [
        ({"per_core_msgs_per_s": 40_000, "efficiency": 0, "utilisation": 0.5}, "efficiency must be above 0"),
        ({"per_core_msgs_per_s": 40_000, "efficiency": 1.2, "utilisation": 0.5}, "efficiency must be above 0"),
        ({"per_core_msgs_per_s": -5, "efficiency": 0.8, "utilisation": 0.5}, "per_core_msgs_per_s must be"),
        ({"per_core_msgs_per_s": "nan", "efficiency": 0.8, "utilisation": 0.5}, "per_core_msgs_per_s must be"),
        ({"per_core_msgs_per_s": 40_000, "efficiency": 0.8, "utilisation": 0}, "utilisation must be above 0"),
    ],
)
def test_figures_that_would_size_every_cluster_wrong_are_refused_with_the_file_named(tmp_path, figures, wrong):
    path = tmp_path / "throughput.json"
    path.write_text(json.dumps(figures))
    with pytest.raises(ValueError, match=wrong) as e:
        sizing.throughput(path)
    assert str(path) in str(e.value)
