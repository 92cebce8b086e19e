"""Dagger's aggregate functions (contracts section 7) through GROUP BY: dagger SQL -> translate -> Spark.

Expected values are raystack/dagger's own test vectors (DistinctCountTest, CollectArrayTest,
PercentileAggregatorTest, PercentileAccumulatorTest) and the contracts doc's commons-math3 values,
plus random samples checked against a LEGACY percentile estimator written here from
commons-math3's description (no numpy, not the runtime's code). Each test runs one query.
"""

from __future__ import annotations

import datetime as dt
import math
import random

import pytest
from pyspark.sql import DataFrame

from tests.sqlrun import run

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc


def in_one_partition(spark, rows, schema) -> DataFrame:
    """Rows in arrival order in a single partition, so a list aggregate sees them in that order."""
    return spark.createDataFrame(rows, schema).coalesce(1)


# ================================================================ DistinctCount, CollectArray
GROUPS = {  # group -> items in arrival order
    "vector": ["1234", "1234", "1233"],  # DistinctCountTest -> 2
    "single_null": [None],  # -> 0
    "acc1": ["111", "222", "222", "333"],  # -> 3
    "acc2": ["444", "555"],  # -> 2
    "merged": ["1", "2", "3", "4", "5", "6", "7"],  # {1,2,3}+{4,5}+{6,7} -> 7
    "accumulator": ["First", "Second", "First", "Third", "Second"],  # -> 3
    "values": [f"value{i}" for i in range(1, 8)],  # CollectArrayTest
    "nulls_and_dups": ["a", None, "a", None, "b"],
}


@pytest.fixture(scope="module")
def grouped(spark):
    rows = [(g, item) for g, items in GROUPS.items() for item in items]
    got = run(
        spark,
        "SELECT g, DistinctCount(item) AS n, CollectArray(item) AS items FROM t GROUP BY g",
        in_one_partition(spark, rows, "g STRING, item STRING"),
    )
    return {r["g"]: r for r in got}


def test_distinct_count_follows_daggers_vectors_and_skips_nulls(grouped):
    assert {g: grouped[g]["n"] for g in GROUPS} == {
        "vector": 2,
        "single_null": 0,
        "acc1": 3,
        "acc2": 2,
        "merged": 7,
        "accumulator": 3,
        "values": 7,
        "nulls_and_dups": 2,
    }


def test_distinct_count_of_no_rows_is_zero(spark):
    got = run(spark, "SELECT DistinctCount(item) AS n FROM t WHERE item = 'absent'", [("x",)], "item STRING")
    assert [r["n"] for r in got] == [0]


def test_collect_array_keeps_every_item_in_arrival_order_with_nulls_and_duplicates(grouped):
    assert {g: list(grouped[g]["items"]) for g in GROUPS} == GROUPS


def test_collect_array_keeps_the_element_type(spark):
    ts = dt.datetime(2019, 7, 4, 7, 0, tzinfo=UTC)
    got = run(
        spark,
        "SELECT CollectArray(v) AS vs, CollectArray(ts) AS tss FROM t",
        in_one_partition(spark, [(1.5, ts), (None, ts), (2.5, None)], "v DOUBLE, ts TIMESTAMP"),
    )[0]
    assert list(got["vs"]) == [1.5, None, 2.5]
    assert [t is None for t in got["tss"]] == [False, False, True]


def test_exponential_moving_average_over_collect_arrays_reproduces_daggers_vector(spark):
    """The way daggers use it: EMA over CollectArray(rowtime) and CollectArray(value) of a window."""
    hop = dt.datetime(2019, 7, 4, 7, 0, tzinfo=UTC)
    rows = [(hop + dt.timedelta(seconds=s), v) for s, v in [(0, 1.0), (60, 4.0), (120, 3.0), (300, 7.0)]]
    got = run(
        spark,
        """
        SELECT ExponentialMovingAverage(CollectArray(rowtime), CollectArray(v),
                                        TIMESTAMP '2019-07-04 07:00:00', 6.0, 0.2) AS ema,
               LinearTrend(CollectArray(rowtime), CollectArray(v), TIMESTAMP '2019-07-04 07:00:00', 6) AS slope
        FROM t""",
        in_one_partition(spark, rows, "rowtime TIMESTAMP, v DOUBLE"),
    )[0]
    # positions 5,4,3,0 (oldest..newest): 1*0.8^5 + 4*0.2*0.8^4 + 3*0.2*0.8^3 + 7*0.2
    assert got["ema"] == pytest.approx(1 * 0.8**5 + 4 * 0.2 * 0.8**4 + 3 * 0.2 * 0.8**3 + 7 * 0.2, abs=1e-12)
    assert got["ema"] == pytest.approx(2.36256, abs=1e-7)
    # y = [1, 4, 3, 0, 0, 7] over x = 0..5
    y = [1, 4, 3, 0, 0, 7]
    n, sx, sy = 6, sum(range(6)), sum(y)
    slope = (sum(x * v for x, v in enumerate(y)) - sx * sy / n) / (sum(x * x for x in range(6)) - sx * sx / n)
    assert got["slope"] == pytest.approx(slope, rel=1e-12)


# ======================================================================== PercentileAggregator
def legacy_percentile(p: float, values: list[float]) -> float:
    """commons-math3 Percentile(p).evaluate with EstimationType.LEGACY (math3 3.6.1):
    pos = p/100 * (n + 1) on the sorted values (1-based); below 1 the minimum, from n on the
    maximum, otherwise linear interpolation between x[floor(pos)] and x[floor(pos) + 1]."""
    x = sorted(values)
    n = len(x)
    if n == 0:
        return math.nan
    if n == 1:
        return x[0]
    pos = p / 100 * (n + 1)
    if pos < 1:
        return x[0]
    if pos >= n:
        return x[-1]
    lower = math.floor(pos)
    return x[lower - 1] + (pos - lower) * (x[lower] - x[lower - 1])


def percentile_cases() -> dict[str, tuple[float, list[float]]]:
    shuffled = [10, 30, 40, 20, 70, 90, 100, 80, 50, 60]
    cases = {
        "one_to_seven": (90, list(range(1, 8))),  # {1,2,3} merged with {4,5},{6,7} -> 7.0
        "one_to_three": (90, [1, 2, 3]),  # -> 3.0
        "shuffled": (90, shuffled),  # PercentileAccumulatorTest -> 99.0
        "thousand": (90, list(range(1, 1001))),  # -> 900 (+-1); LEGACY gives 900.9
        "p50": (50, [1, 2, 3, 4]),
        "p25": (25, [1, 2, 3, 4]),
        "p1": (1, [1, 2, 3, 4]),
        "p100": (100, [1, 2, 3, 4]),
        "p0.5": (0.5, [1, 2, 3, 4]),
        "single": (37.5, [42.125]),
    }
    rnd = random.Random(1000)
    for i in range(40):
        n = rnd.randint(1, 80)
        values = [round(rnd.uniform(-5000, 5000), 3) for _ in range(n)]
        if i % 4 == 0:
            values += values[: n // 2]  # ties
        p = rnd.choice([round(rnd.uniform(0.001, 100), 3), 50, 90, 95, 99, 100, 0.1])
        cases[f"random{i}"] = (p, values)
    return cases


@pytest.fixture(scope="module")
def percentiles(spark):
    cases = percentile_cases()
    rows = [(g, float(p), float(v)) for g, (p, values) in cases.items() for v in values]
    rows += [("rounded", 1.0, 1.23456), ("rounded", 1.0, 2.0)]
    got = run(
        spark, "SELECT g, PercentileAggregator(p, v) AS q FROM t GROUP BY g", rows, "g STRING, p DOUBLE, v DOUBLE"
    )
    return {r["g"]: r["q"] for r in got}


def test_percentile_aggregator_follows_daggers_exact_vectors(percentiles):
    assert percentiles["one_to_seven"] == 7.0
    assert percentiles["one_to_three"] == 3.0
    assert percentiles["shuffled"] == pytest.approx(99.0, abs=0.001)


def test_percentile_aggregator_p90_of_one_to_a_thousand_is_the_legacy_900_9(percentiles):
    assert abs(percentiles["thousand"] - 900) <= 1  # dagger's own tolerance
    assert percentiles["thousand"] == pytest.approx(900.9, abs=1e-9)


def test_percentile_aggregator_matches_commons_math_legacy_values_from_the_contracts_doc(percentiles):
    assert {k: percentiles[k] for k in ("p50", "p25", "p1", "p100", "p0.5", "single")} == pytest.approx(
        {"p50": 2.5, "p25": 1.25, "p1": 1.0, "p100": 4.0, "p0.5": 1.0, "single": 42.125}, abs=1e-12
    )


def test_percentile_aggregator_matches_an_independent_legacy_estimator_on_random_samples(percentiles):
    for g, (p, values) in percentile_cases().items():
        assert percentiles[g] == pytest.approx(legacy_percentile(p, values), rel=1e-12, abs=1e-9), (g, p)


def test_percentile_aggregator_rounds_values_to_three_decimals_like_decimal_30_3(percentiles):
    assert percentiles["rounded"] == pytest.approx(1.235, abs=1e-12)
