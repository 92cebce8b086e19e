"""The JVM decoder runs once per message, whatever filters the analyst's query puts on its output."""

from __future__ import annotations

from pathlib import Path

import pytest

from dagger_runtime.config import load_job
from dagger_runtime.plan import plan_job
from dagger_runtime.streams import register_tables
from dagger_runtime.validate import checked_query

pytestmark = pytest.mark.spark
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "daggers"


@pytest.mark.parametrize("example", ["completed_bookings_by_s2.yaml", "pings_before_completion.yaml"])
def test_each_stream_is_decoded_by_one_call_in_the_physical_plan(spark, example):
    plan = plan_job(load_job(EXAMPLES / example))
    # batch tables with the Kafka source's columns: a streaming plan has no physical plan until it runs
    empty = spark.createDataFrame(
        [], "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"
    )
    register_tables(spark, plan, {s.table: empty for s in plan.streams})
    physical = checked_query(spark, plan)._jdf.queryExecution().executedPlan().toString()
    for stream in plan.streams:
        # a filter pushed below the projection would carry its own call of the decoder
        # (the decoder is a Catalyst expression, invoke(<name>.decode(value)), since it writes
        # Spark's internal rows itself)
        assert physical.count(f"__dagger_decode_{stream.table}.decode(") == 1, physical
