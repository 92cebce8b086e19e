"""raystack/dagger's UDFs, one definition each (contracts: docs/reference/udf-contracts.md).

Macros expand into Spark built-ins and higher-order functions, so they run in the JVM with
code generation; S2AreaInKm2 and GeoHash run vectorised on Arrow batches (dagger_runtime.udfs);
S2Id, the JSON and the DART functions are JVM UDFs (jvm/sql-functions, dagger_runtime.udfs.java_udfs).
Deliberate differences from dagger (documented in docs/udfs.md): bad input gives NULL instead
of failing the job; StartOfMonth returns the first day of the month (dagger returns a Monday).
"""

from __future__ import annotations

import re

from sqlglot import exp

from ..errors import QueryError
from .functions import DaggerFunction, register, template


def _macro(name: str, params: tuple[str, ...], text: str, *, optional: int = 0, aggregate: bool = False) -> None:
    register(DaggerFunction(name, params, build=template(text), optional=optional, aggregate=aggregate))


def _vectorised(name: str, params: tuple[str, ...]) -> None:
    register(DaggerFunction(name, params, vectorised=True))


# --- geo -------------------------------------------------------------------------------------
_vectorised("S2AreaInKm2", ("s2id",))
_vectorised("GeoHash", ("lat", "lng", "length"))
# haversine with R = 6371 km and atan2, as dagger's Distance.java
_macro(
    "Distance",
    ("lat1", "lng1", "lat2", "lng2"),
    """
  6371 * 2 * atan2(
    sqrt(pow(sin(radians({2} - {0}) / 2), 2) + cos(radians({0})) * cos(radians({2})) * pow(sin(radians({3} - {1}) / 2), 2)),
    sqrt(1 - (pow(sin(radians({2} - {0}) / 2), 2) + cos(radians({0})) * cos(radians({2})) * pow(sin(radians({3} - {1}) / 2), 2))))
""",
)

# --- arrays, maps, strings -----------------------------------------------------------------------
# 0-based index, negative counts from the end, out of range -> NULL, element as its string
_macro("ListContains", ("list", "item"), "coalesce(array_contains({0}, {1}), false)")
# maps are ARRAY<ROW(key, value)> (dagger's mapping): the value of the first entry with that key
_macro("MapGet", ("map", "key"), "try_element_at(filter({0}, __e -> __e.key = {1}), 1).value")
# Java String.split: regex delimiter, trailing empty strings dropped, "" delimiter means " ",
# NULL input or delimiter -> empty array
_macro(
    "Split",
    ("input", "delimiter"),
    """
  CASE WHEN {0} IS NULL OR {1} IS NULL THEN CAST(array() AS ARRAY<STRING>)
       WHEN size(split({0}, CASE WHEN {1} = '' THEN ' ' ELSE {1} END)) <= 1
         THEN split({0}, CASE WHEN {1} = '' THEN ' ' ELSE {1} END)
       ELSE slice(split({0}, CASE WHEN {1} = '' THEN ' ' ELSE {1} END), 1,
                  size(split({0}, CASE WHEN {1} = '' THEN ' ' ELSE {1} END))
                  - coalesce(nullif(array_position(transform(reverse(split({0}, CASE WHEN {1} = '' THEN ' ' ELSE {1} END)),
                                                             __s -> __s <> ''), true), 0) - 1,
                             size(split({0}, CASE WHEN {1} = '' THEN ' ' ELSE {1} END))))
  END
""",
)
_macro("ByteToString", ("bytes",), "CAST({0} AS STRING)")

# --- time ----------------------------------------------------------------------------------------
_macro("TimestampFromUnix", ("seconds",), "timestamp_seconds(abs({0}))")
_format_time_in_zone = template("date_format(from_utc_timestamp({0}, {1}), {2})")


def _format_time_in_zone_build(args: list[exp.Expression]) -> exp.Expression:
    # dagger formats with java.text.SimpleDateFormat, which takes AM/PM as any run of 'a'
    # ('hh:mm aa' in dagger's tests); Spark's java.time patterns refuse more than one 'a', so a
    # literal pattern gets each unquoted run of 'a' shortened to one (quoted text is left alone)
    pattern = args[2]
    if isinstance(pattern, exp.Literal) and pattern.is_string:
        spark_pattern = re.sub(r"('[^']*')|a+", lambda m: m.group(1) or "a", pattern.this)
        args = [args[0], args[1], exp.Literal.string(spark_pattern)]
    return _format_time_in_zone(args)


register(DaggerFunction("FormatTimeInZone", ("timestamp", "zone", "pattern"), build=_format_time_in_zone_build))
# seconds -> seconds: that local date at hour:minute (hour and minute may roll over, as Calendar)
_time_in_date = template("""
  unix_timestamp(to_utc_timestamp(
    date_trunc('DAY', from_utc_timestamp(timestamp_seconds({0}), coalesce({3}, 'UTC')))
      + make_dt_interval(0, {1}, {2}, 0),
    coalesce({3}, 'UTC')))
""")
# the 3-argument form is dagger's eval(long, int, int), which uses "UTC"
register(
    DaggerFunction(
        "TimeInDate",
        ("seconds", "hour", "minute", "zone"),
        optional=1,
        build=lambda a: _time_in_date(a if len(a) == 4 else [*a, exp.Literal.string("UTC")]),
    )
)
# milliseconds -> milliseconds; weeks run Monday..Sunday and, as in dagger, a Sunday belongs to
# the week that starts the next day
_macro(
    "StartOfWeek",
    ("milliseconds", "zone"),
    """
  unix_millis(to_utc_timestamp(
    date_trunc('WEEK', from_utc_timestamp(timestamp_millis({0}), {1}) + INTERVAL 1 DAY), {1}))
""",
)
_macro(
    "EndOfWeek",
    ("milliseconds", "zone"),
    """
  unix_millis(to_utc_timestamp(
    date_trunc('WEEK', from_utc_timestamp(timestamp_millis({0}), {1}) + INTERVAL 1 DAY)
      + INTERVAL 7 DAYS - INTERVAL 1 MILLISECOND, {1}))
""",
)
# seconds -> seconds
_macro(
    "StartOfMonth",
    ("seconds", "zone"),
    """
  unix_timestamp(to_utc_timestamp(
    date_trunc('MONTH', from_utc_timestamp(timestamp_seconds({0}), {1})), {1}))
""",
)
_macro(
    "EndOfMonth",
    ("seconds", "zone"),
    """
  unix_timestamp(to_utc_timestamp(
    date_trunc('MONTH', from_utc_timestamp(timestamp_seconds({0}), {1})) + INTERVAL 1 MONTH
      - INTERVAL 1 SECOND, {1}))
""",
)

# --- time series over CollectArray(...) lists ---------------------------------------------------
# position p = window - 1 - trunc((t - hop) / 1 min); the later sample wins on a duplicate
# minute; EMA = sum v_p * a * (1-a)^p, except the oldest position (window - 1): v * (1-a)^(window-1)
_macro(
    "ExponentialMovingAverage",
    ("timestamps", "values", "hop_start", "window", "alpha"),
    """
  aggregate(
    map_entries(map_from_entries(zip_with({0}, {1}, (__t, __v) -> named_struct(
      'p', CAST({3} AS BIGINT) - 1 - CAST((unix_millis(__t) - unix_millis({2})) / 60000 AS BIGINT),
      'v', CAST(__v AS DOUBLE))))),
    CAST(0 AS DOUBLE),
    (__acc, __e) -> __acc + CASE WHEN __e.key = CAST({3} AS BIGINT) - 1
                                 THEN __e.value * pow(1 - {4}, CAST({3} AS BIGINT) - 1)
                                 ELSE __e.value * {4} * pow(1 - {4}, __e.key) END)
""",
)
# least-squares slope of y over x = 0..n-1, y[minute since hop] = value (0 where no sample)
_macro(
    "LinearTrend",
    ("timestamps", "values", "hop_start", "window_minutes"),
    """
  (aggregate(map_entries(map_from_entries(zip_with({0}, {1}, (__t, __v) -> named_struct(
       'i', CAST((unix_millis(__t) - unix_millis({2})) / 60000 AS BIGINT), 'v', CAST(__v AS DOUBLE))))),
     CAST(0 AS DOUBLE),
     (__acc, __e) -> __acc + CASE WHEN __e.key >= 0 AND __e.key < {3} THEN __e.key * __e.value ELSE 0 END)
   - (CAST({3} AS DOUBLE) * ({3} - 1) / 2)
     * aggregate(map_entries(map_from_entries(zip_with({0}, {1}, (__t, __v) -> named_struct(
       'i', CAST((unix_millis(__t) - unix_millis({2})) / 60000 AS BIGINT), 'v', CAST(__v AS DOUBLE))))),
     CAST(0 AS DOUBLE),
     (__acc, __e) -> __acc + CASE WHEN __e.key >= 0 AND __e.key < {3} THEN __e.value ELSE 0 END) / {3})
  / ((CAST({3} AS DOUBLE) - 1) * {3} * (2 * {3} - 1) / 6 - pow(CAST({3} AS DOUBLE) * ({3} - 1) / 2, 2) / {3})
""",
)

# --- aggregates ----------------------------------------------------------------------------------
# exact; NULLs ignored; collect_set keeps the state a streaming aggregation needs (Spark refuses
# COUNT(DISTINCT) on streams)
_macro("DistinctCount", ("item",), "CAST(size(collect_set(CAST({0} AS STRING))) AS INT)", aggregate=True)
# every value, NULLs included (collect_list alone would drop them)
_macro("CollectArray", ("item",), "transform(collect_list(named_struct('v', {0})), __x -> __x.v)", aggregate=True)
# PercentileAggregator(percentile 0..100, value): commons-math3's LEGACY estimator
# pos = p (n + 1) / 100 over the sorted values; below 1 the minimum, from n on the maximum.
_macro(
    "PercentileAggregator",
    ("percentile", "value"),
    """
  aggregate(array(named_struct('s', array_sort(collect_list(CAST(ROUND({1}, 3) AS DOUBLE))),
                               'pos', CAST(max({0}) AS DOUBLE) * (count({1}) + 1) / 100)),
    CAST(NULL AS DOUBLE), (__acc, __a) ->
    CASE WHEN size(__a.s) = 0 THEN CAST('NaN' AS DOUBLE)
         WHEN __a.pos < 1 THEN __a.s[0]
         WHEN __a.pos >= size(__a.s) THEN __a.s[size(__a.s) - 1]
         ELSE __a.s[CAST(floor(__a.pos) AS INT) - 1]
              + (__a.pos - floor(__a.pos)) * (__a.s[CAST(floor(__a.pos) AS INT)] - __a.s[CAST(floor(__a.pos) AS INT) - 1])
    END)
""",
    aggregate=True,
)


# --- functions whose form depends on literal arguments -------------------------------------------
def _literal_int(node: exp.Expression) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(node.this)
        except ValueError:
            return None
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return -int(node.this.this)
    return None


def _element_at(args: list[exp.Expression]) -> exp.Expression:
    if len(args) == 2:
        return template("""
          CAST(CASE WHEN {1} >= 0 THEN try_element_at({0}, {1} + 1) ELSE try_element_at({0}, {1}) END AS STRING)
        """)(args)
    if len(args) in (4, 5):
        # ElementAt(array, 'array_field', index, 'path.to.leaf' [, 'table']): the leaf of one
        # element as text; '' when the index is out of range (dagger's proto-path form)
        array, _, index, path = args[:4]
        if not (isinstance(path, exp.Literal) and path.is_string):
            raise QueryError("ElementAt: the path (4th argument) must be a string literal such as 'start.latitude'")
        leaf: exp.Expression = exp.Anonymous(
            this="try_element_at",
            expressions=[array.copy(), exp.Add(this=exp.Paren(this=index.copy()), expression=exp.Literal.number(1))],
        )
        for part in path.this.split("."):
            leaf = exp.Dot(this=leaf, expression=exp.to_identifier(part))
        return template("""
          CASE WHEN {1} < 0 OR {1} >= size({0}) OR {0} IS NULL THEN ''
               ELSE coalesce(CAST({2} AS STRING), 'null') END
        """)([array, index, leaf])
    raise QueryError(f"ElementAt takes 2, 4 or 5 arguments, got {len(args)}")


register(
    DaggerFunction(
        "ElementAt", ("array", "index_or_array_field", "index", "path", "table"), build=_element_at, optional=3
    )
)


_STREAM_TYPES = {
    "INTEGER": "INT",
    "INT": "INT",
    "DOUBLE": "DOUBLE",
    "FLOAT": "DOUBLE",
    "LONG": "BIGINT",
    "BIGINT": "BIGINT",
    "OTHER": None,
}


def _array_ops(args: list[exp.Expression], terminal: bool) -> exp.Expression:
    name = "ArrayAggregate" if terminal else "ArrayOperate"
    array, ops, kind = args
    if not (isinstance(ops, exp.Literal) and ops.is_string and isinstance(kind, exp.Literal) and kind.is_string):
        raise QueryError(
            f"{name}: the operation and input type must be string literals, "
            f"e.g. {name}(values, 'distinct.sum', 'Integer')"
        )
    spark_type = _STREAM_TYPES.get(kind.this.upper(), "?")
    if spark_type == "?":
        raise QueryError(
            f"{name}: no support for inputDataType: {kind.this}. Use one of Integer, Int, Double, "
            "Float, Long, BigInt or Other"
        )
    text = "{0}" if spark_type is None else f"transform({{0}}, __x -> CAST(__x AS {spark_type}))"
    steps = ops.this.split(".")
    last = steps[-1] if terminal else None
    for op in steps[:-1] if terminal else steps:
        if op == "distinct":
            text = f"array_distinct({text})"
        elif op == "sorted":
            text = f"array_sort({text})"
        elif op == "boxed":
            pass
        else:
            raise QueryError(
                f"{name}: unsupported operation '{op}' in '{ops.this}' "
                "(supported: distinct, sorted, boxed, then sum, average, count, min, max, findFirst, findAny)"
            )
    if terminal:
        zero = "CAST(0 AS DOUBLE)" if spark_type in ("DOUBLE",) else f"CAST(0 AS {spark_type or 'BIGINT'})"
        finals = {
            "sum": f"aggregate({text}, {zero}, (__a, __x) -> __a + __x)",
            "average": f"coalesce(aggregate({text}, CAST(0 AS DOUBLE), (__a, __x) -> __a + __x) / nullif(size({text}), 0), CAST(0 AS DOUBLE))",
            "count": f"CAST(size({text}) AS BIGINT)",
            "min": f"coalesce(array_min({text}), {zero})",
            "max": f"coalesce(array_max({text}), {zero})",
            "findFirst": f"try_element_at({text}, 1)",
            "findAny": f"try_element_at({text}, 1)",
        }
        if last not in finals or (spark_type is None and last in ("sum", "average", "min", "max")):
            raise QueryError(f"{name}: unsupported final operation '{last}' in '{ops.this}' for {kind.this}")
        text = finals[last]
    return template(text)([array])


register(DaggerFunction("ArrayAggregate", ("array", "operation", "input_type"), build=lambda a: _array_ops(a, True)))
register(DaggerFunction("ArrayOperate", ("array", "operation", "input_type"), build=lambda a: _array_ops(a, False)))


# --- JVM UDFs (dagger_runtime.udfs.java_udfs) -----------------------------------------------------
def _java(name: str, params: tuple[str, ...]) -> None:
    register(
        DaggerFunction(name, params, build=lambda a, n=name: exp.Anonymous(this=n, expressions=[x.copy() for x in a]))
    )


_java("S2Id", ("lat", "lng", "level"))
_java("JsonQuery", ("json", "path"))
_java("JsonUpdate", ("json", "path", "new_value"))
_java("JsonDelete", ("json", "path"))


def _dart_get(args: list[exp.Expression]) -> exp.Expression:
    default = args[3].copy() if len(args) == 4 else exp.Cast(this=exp.Null(), to=exp.DataType.build("STRING"))
    return exp.Anonymous(this="__DartGet4", expressions=[args[0].copy(), args[1].copy(), args[2].copy(), default])


def _dart_contains(args: list[exp.Expression]) -> exp.Expression:
    regex: exp.Expression = exp.Cast(this=exp.Null(), to=exp.DataType.build("STRING"))
    refresh: exp.Expression = exp.Literal.number(1)
    if len(args) == 3:
        third = args[2]
        if isinstance(third, exp.Literal) and third.is_string:
            regex = third.copy()
        elif _literal_int(third) is not None:
            refresh = third.copy()
        else:
            raise QueryError(
                "DartContains: the third argument must be a regex string literal or a refresh "
                "rate in hours (an integer literal)"
            )
    elif len(args) == 4:
        regex, refresh = args[2].copy(), args[3].copy()
    return exp.Anonymous(this="__DartContains4", expressions=[args[0].copy(), args[1].copy(), regex, refresh])


register(DaggerFunction("DartGet", ("collection", "key", "refresh_hours", "default"), build=_dart_get, optional=1))
register(
    DaggerFunction(
        "DartContains", ("list", "field", "regex_or_refresh", "refresh_hours"), build=_dart_contains, optional=2
    )
)
