"""InfluxDB line protocol built by Spark, in the JVM: one string column per result row, the
same points influxdb-client's `Point.to_line_protocol()` writes for the Python path (`points`),
without a Python call per row.

The mapping is influx.py's (raystack/dagger's): the window is the time in milliseconds, `tag_*`
and `label_*` columns are tags, every other column a field, NULLs left out, a row with no window
or no field is no point. Tags and fields are sorted by name and escaped as influxdb-client
escapes them. Numbers of a FLOAT column are written as the double they widen to, as Python sees
them. Only the column types whose text Spark writes as Python would, or whose number InfluxDB
stores alike, take this path (`applies`); a result with any other type (a boolean, timestamp or
floating-point tag, a binary, date or nested column) goes through the Python path.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .base import WINDOW_COLUMN

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
# str() of these in Python is Spark's cast to STRING (a DECIMAL keeps its scale in both)
_TAG_TYPES = (T.StringType, *_INTEGRAL, T.DecimalType)
_FIELD_TYPES = (T.StringType, *_INTEGRAL, T.DecimalType, T.FloatType, T.DoubleType, T.BooleanType, T.TimestampType)

# influxdb-client's escapes (client/write/point.py)
_ESCAPE_KEY = {",": r"\,", "=": r"\=", " ": r"\ ", "\n": r"\n", "\t": r"\t", "\r": r"\r"}
_ESCAPE_MEASUREMENT = {k: v for k, v in _ESCAPE_KEY.items() if k != "="}


def applies(schema: T.StructType, tag_name) -> bool:
    """Whether every column of the result can be written by the JVM path."""
    for f in schema.fields:
        if f.name == WINDOW_COLUMN:
            continue
        allowed = _TAG_TYPES if tag_name(f.name) is not None else _FIELD_TYPES
        if not isinstance(f.dataType, allowed):
            return False
    return True


_TRANSLATE_KEY, _TRANSLATE_MEASUREMENT = str.maketrans(_ESCAPE_KEY), str.maketrans(_ESCAPE_MEASUREMENT)


def escape(text: str, measurement: bool = False) -> str:
    """A key (or, with `measurement`, a measurement's name) as influxdb-client escapes it."""
    return text.translate(_TRANSLATE_MEASUREMENT if measurement else _TRANSLATE_KEY)


def _replace_all(column: Column, table: dict[str, str]) -> Column:
    for raw, escaped in table.items():
        column = F.replace(column, F.lit(raw), F.lit(escaped))
    return column


def _tag(key: str, column: Column) -> Column:
    raw = column.cast("string")
    text = _replace_all(raw, _ESCAPE_KEY)
    # a value ending in a backslash gets a blank, or the backslash would escape the separator
    text = F.when(text.endswith("\\"), F.concat(text, F.lit(" "))).otherwise(text)
    return F.when(raw.isNull() | (raw == ""), F.lit(None)).otherwise(F.concat(F.lit("," + escape(key) + "="), text))


def _field(key: str, column: Column, kind: T.DataType) -> Column:
    if isinstance(kind, T.StringType):
        quoted = F.replace(F.replace(column, F.lit("\\"), F.lit("\\\\")), F.lit('"'), F.lit('\\"'))
        value = F.concat(F.lit('"'), quoted, F.lit('"'))
    elif isinstance(kind, _INTEGRAL):
        value = F.concat(column.cast("string"), F.lit("i"))
    elif isinstance(kind, T.TimestampType):
        value = F.concat(F.unix_millis(column).cast("string"), F.lit("i"))
    elif isinstance(kind, T.BooleanType):
        value = column.cast("string")  # true, false
    else:  # a float, double or decimal: the double, written so that it reads back the same
        number = column.cast("double")
        finite = ~(F.isnan(number) | (F.abs(number) == F.lit(float("inf"))))
        value = F.when(finite, number.cast("string"))
    return F.concat(F.lit(escape(key) + "="), value)


def line_column(measurement: str, schema: T.StructType, tag_name) -> Column:
    """A column of each row's line, NULL for a row that is no point."""
    tags, fields = [], []
    for f in schema.fields:
        if f.name == WINDOW_COLUMN:
            continue
        tag = tag_name(f.name)
        column = F.col(f"`{f.name}`")
        if tag is not None:
            tags.append((tag, _tag(tag, column)))
        else:
            fields.append((f.name, _field(f.name, column, f.dataType)))
    tag_text = F.concat_ws("", *[c for _, c in sorted(tags, key=lambda t: t[0])]) if tags else F.lit("")
    field_text = F.concat_ws(",", *[c for _, c in sorted(fields, key=lambda t: t[0])])
    window = F.col(f"`{WINDOW_COLUMN}`")
    line = F.concat(
        F.lit(escape(measurement, measurement=True)),
        tag_text,
        F.lit(" "),
        field_text,
        F.lit(" "),
        F.unix_millis(window).cast("string"),
    )
    return F.when(window.isNotNull() & (field_text != ""), line)


def _points(dataframe, measurement: str, tag_name):
    """The batch's points: a `line` column, rows that are no point left out."""
    return dataframe.select(line_column(measurement, dataframe.schema, tag_name).alias("line")).where(
        "line IS NOT NULL"
    )


def lines(dataframe, measurement: str, tag_name) -> list[str]:
    """The batch's points as line protocol, built in the JVM, a string each."""
    return [row[0] for row in _points(dataframe, measurement, tag_name).collect()]


def bodies(dataframe, measurement: str, tag_name, size: int = 0) -> list[tuple[str, int]]:
    """The batch's points as request bodies of line protocol, built and joined in the JVM: (body,
    points) pairs, a body for each partition of the batch, or for each `size` points of a
    partition when `size` is set. Only the bodies reach Python, not a row each; each partition's
    are joined in the task that made its lines (jvm/sql-functions/.../sink/LineBodies.java)."""
    points = _points(dataframe, measurement, tag_name)
    joined = points.sparkSession._jvm.dev.daggers.runtime.sink.LineBodies.of(points._jdf, size)
    return [(row["body"], row["points"]) for row in DataFrame(joined, points.sparkSession).collect()]
