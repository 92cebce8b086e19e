"""Result rows as JSON: timestamps ISO-8601 in UTC, numbers stay numbers, keys in query order."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math

TS_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"


def to_json_ready(df):
    """Format timestamps in the JVM (session zone UTC), so the Python process's zone never matters."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType, TimestampNTZType, TimestampType

    cols = []
    for f in df.schema.fields:
        c = F.col(f"`{f.name}`")
        if isinstance(f.dataType, (TimestampType, TimestampNTZType)):
            c = F.date_format(c, TS_FORMAT)
        elif isinstance(f.dataType, (StructType, ArrayType, MapType)):
            c = F.to_json(c, {"timestampFormat": TS_FORMAT + "'Z'", "ignoreNullFields": "false"})
            c = F.concat(F.lit("\u0000json:"), c)
        cols.append(c.alias(f.name))
    return (
        df.select(*cols),
        [f.name for f in df.schema.fields],
        {f.name for f in df.schema.fields if isinstance(f.dataType, (TimestampType, TimestampNTZType))},
    )


def _iso(text: str) -> str:
    # 2026-11-22T00:01:00.000000 -> 2026-11-22T00:01:00Z ; keep a fraction only when it is not zero
    head, _, frac = text.partition(".")
    frac = frac.rstrip("0")
    return f"{head}.{frac}Z" if frac else f"{head}Z"


def _fix_nested(value):
    if isinstance(value, dict):
        return {k: _fix_nested(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fix_nested(v) for v in value]
    if isinstance(value, str) and len(value) >= 20 and value.endswith("Z") and value[10:11] == "T":
        try:
            dt.datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S")
            return _iso(value[:-1])
        except ValueError:
            return value
    return value


def plain(value, is_timestamp: bool = False):
    if value is None:
        return None
    if is_timestamp:
        return _iso(value)
    if isinstance(value, str) and value.startswith("\u0000json:"):
        return _fix_nested(json.loads(value[6:]))
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return value


def rows_as_dicts(df) -> list[dict]:
    ready, names, timestamps = to_json_ready(df)
    out = []
    for row in ready.collect():
        out.append({name: plain(row[i], name in timestamps) for i, name in enumerate(names)})
    return out


def _is_time(v) -> bool:
    return isinstance(v, str) and len(v) >= 20 and v[4:5] == "-" and v[10:11] == "T" and v.endswith("Z")


def sort_key(row: dict):
    """Time columns first (windows in order), then the other columns left to right."""
    values = [v for v in row.values() if _is_time(v)] + [v for v in row.values() if not _is_time(v)]
    return tuple(
        (
            v is None,
            json.dumps(v, sort_keys=True) if not isinstance(v, (int, float)) else "",
            v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0,
        )
        for v in values
    )


def dumps(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(", ", ": "))
