"""The data verdict: the windows a dagger's sink holds against the same windows computed from the
drill's ledger (every message Kafka acknowledged), never from the dagger.

A playbook's `verify` entry says how each sink column follows from a fed message:

    keys:     {tag_city_id: city_id, tag_s2id: "s2id(lat, long, 13)"}    a field path, or an S2 cell
    measures: {num_of_bookings: count, fare: "sum(total_fare)"}          count | AGG(path)
    where:    {status: COMPLETED}                                        before windowing

The expressions are a small allow-listed grammar (`parse_key`, `parse_measure`), parsed when the
playbook is loaded; nothing in them is evaluated as code.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

import s2sphere

from dagger_runtime import http_client

PATH = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_S2 = re.compile(rf"s2id\(\s*({PATH})\s*,\s*({PATH})\s*,\s*([0-9]{{1,2}})\s*\)")
_AGG = re.compile(rf"(count|sum|min|max|mean|nunique)\(\s*({PATH})\s*\)")
AGGREGATES = ("count", "sum", "min", "max", "mean", "nunique")
REL_TOL = ABS_TOL = 1e-9


@dataclass(frozen=True)
class Key:
    column: str
    path: str | None = None  # a field's value
    s2: tuple[str, str, int] | None = None  # (lat path, lng path, level)

    @property
    def paths(self) -> tuple[str, ...]:
        return self.s2[:2] if self.s2 else (self.path,)


@dataclass(frozen=True)
class Measure:
    column: str
    how: str  # count, sum, min, max, mean, nunique
    path: str | None = None  # None: count rows

    @property
    def paths(self) -> tuple[str, ...]:
        return () if self.path is None else (self.path,)


def parse_key(column: str, expr: Any) -> Key:
    """`field.path` or `s2id(lat_path, lng_path, level)`; ValueError says what is allowed."""
    text = expr.strip() if isinstance(expr, str) else expr
    if isinstance(text, str) and re.fullmatch(PATH, text):
        return Key(column, path=text)
    if isinstance(text, str) and (m := _S2.fullmatch(text)):
        level = int(m.group(3))
        if level > 30:
            raise ValueError(f"{text!r}: an S2 level is 0 to 30, not {level}")
        return Key(column, s2=(m.group(1), m.group(2), level))
    raise ValueError(
        f"{expr!r} is not a key expression: give a field path (city_id, pickup.latitude) or "
        "s2id(LAT_FIELD, LNG_FIELD, LEVEL)"
    )


def parse_measure(column: str, expr: Any) -> Measure:
    """`count` (rows) or AGG(field.path) with AGG one of count, sum, min, max, mean, nunique."""
    text = expr.strip() if isinstance(expr, str) else expr
    if text == "count":
        return Measure(column, "count")
    if isinstance(text, str) and (m := _AGG.fullmatch(text)):
        return Measure(column, m.group(1), m.group(2))
    raise ValueError(f"{expr!r} is not a measure: give count, or {'|'.join(AGGREGATES)}(FIELD) such as sum(total_fare)")


@dataclass(frozen=True)
class Expectation:
    """A verify entry, parsed: how each sink column follows from the fed messages."""

    window_ms: int
    keys: tuple[Key, ...]
    measures: tuple[Measure, ...]
    where: tuple[tuple[str, tuple], ...] = ()
    at: str = "end"

    @classmethod
    def of(cls, verify) -> "Expectation":
        where = tuple((p, tuple(v) if isinstance(v, list) else (v,)) for p, v in (verify.where or {}).items())
        return cls(
            int(round(verify.window * 1000)),
            tuple(parse_key(c, e) for c, e in verify.keys.items()),
            tuple(parse_measure(c, e) for c, e in verify.measures.items()),
            where,
            verify.at,
        )

    @property
    def paths(self) -> list[str]:
        out = [p for k in self.keys for p in k.paths] + [p for m in self.measures for p in m.paths]
        return list(dict.fromkeys(out + [p for p, _ in self.where]))

    @property
    def columns(self) -> list[str]:
        return ["window", *(k.column for k in self.keys), *(m.column for m in self.measures)]


def ledger_fields(verify_entries: Iterable) -> list[str]:
    """The fact paths a ledger must keep for these verify entries."""
    out: list[str] = []
    for v in verify_entries:
        out += Expectation.of(v).paths
    return list(dict.fromkeys(out))


def s2_cell(lat: float, lng: float, level: int) -> str | None:
    """The S2 cell id at `level` as a signed 64-bit decimal, as dagger's S2Id writes it; None where
    the runtime's S2Id gives NULL (a latitude beyond +-90, a coordinate that is not a number)."""
    if not (lat is not None and lng is not None and abs(lat) <= 90 and math.isfinite(lng)):
        return None
    unsigned = s2sphere.CellId.from_lat_lng(s2sphere.LatLng.from_degrees(lat, lng)).parent(level).id()
    return str(unsigned - (1 << 64) if unsigned >= 1 << 63 else unsigned)


def _text(value: Any) -> str:
    """A key as text, the way a sink's tag or column reads back (1, not 1.0; true, not True)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def expected(frame, verify, *, closed_by_ms: int, topics: Iterable[str] | None = None):
    """The windows the acknowledged rows of `frame` (Ledger.frame()) make: one row per window and
    key, the keys as text, for windows that end by `closed_by_ms`."""
    import pandas as pd

    exp = Expectation.of(verify)
    df = frame[frame["error"].isna()] if "error" in frame else frame
    if topics is not None:
        df = df[df["topic"].isin(list(topics))]
    for path, values in exp.where:
        df = df[df[path].isin(list(values))]
    df = df[df["event_time_ms"].notna()]
    size = exp.window_ms
    start = (df["event_time_ms"].astype("int64") // size) * size
    df = df.assign(__start=start)
    df = df[df["__start"] + size <= closed_by_ms]
    keys = []
    for k in exp.keys:
        if k.s2:
            lat, lng, level = k.s2
            values = [_text(s2_cell(a, b, level)) for a, b in zip(df[lat], df[lng])]
        else:
            values = [_text(v) for v in df[k.path]]
        df = df.assign(**{f"__k_{k.column}": values})
        keys.append(f"__k_{k.column}")
    if df.empty:
        return pd.DataFrame({c: [] for c in exp.columns})
    groups = df.groupby(["__start", *keys], sort=True)
    parts = {}
    for m in exp.measures:
        parts[m.column] = groups.size() if m.path is None else getattr(groups[m.path], m.how)()
    out = pd.DataFrame(parts).reset_index()
    out["window"] = out["__start"] + (size if exp.at == "end" else 0)
    out = out.rename(columns={f"__k_{k.column}": k.column for k in exp.keys})
    return out[exp.columns].reset_index(drop=True)


# -- reading the sink back ------------------------------------------------------------------------


def _ident(name: str) -> str:
    """An InfluxQL identifier, quoted (a measurement name comes from a spec)."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def read_influx(
    url: str,
    db: str,
    measurement: str,
    verify,
    *,
    since_ms: int,
    until_ms: int,
    timeout_s: float = 10.0,
    auth: tuple[str, str] | None = None,
):
    """The measurement's points with times in [since_ms, until_ms], as the columns of `expected`
    (the point's time is the window's time). `auth`: (user, password) for a server that
    authenticates, sent as HTTP basic auth (never in the URL)."""
    import pandas as pd

    exp = Expectation.of(verify)
    q = f"SELECT * FROM {_ident(measurement)} WHERE time >= {int(since_ms)}ms AND time <= {int(until_ms)}ms"
    data = http_client.get(
        f"{url.rstrip('/')}/query", params={"db": db, "q": q, "epoch": "ms"}, auth=auth, timeout=timeout_s
    ).json()
    result = data.get("results", [{}])[0]
    if "error" in result:
        raise RuntimeError(f"InfluxDB {url} db {db}: {result['error']}")
    rows = []
    for series in result.get("series", []):
        columns = series["columns"]
        for values in series["values"]:
            rows.append({**series.get("tags", {}), **dict(zip(columns, values))})
    if not rows:
        return pd.DataFrame({c: [] for c in exp.columns})
    df = pd.DataFrame(rows).rename(columns={"time": "window"})
    for k in exp.keys:
        # label_* columns are tags without their prefix; tag_* keep their name
        name = k.column[len("label_") :] if k.column.startswith("label_") and k.column not in df else k.column
        df[k.column] = [_text(v) for v in df[name]] if name in df else ""
    for m in exp.measures:
        if m.column not in df:
            df[m.column] = None
    return df[exp.columns].reset_index(drop=True)


# -- the comparison -------------------------------------------------------------------------------


@dataclass
class Comparison:
    windows_expected: int
    windows_matched: int
    windows_missing: int
    windows_extra: int
    windows_wrong: int
    examples: dict = field(default_factory=lambda: {"missing": [], "extra": [], "wrong": []})
    # the (window, key...) of each missing or wrong window, and those of them late messages fell in
    failed: set = field(default_factory=set, repr=False)
    windows_late: int | None = None

    def as_case_fields(self) -> dict:
        fields = {
            "windows_expected": self.windows_expected,
            "windows_matched": self.windows_matched,
            "windows_missing": self.windows_missing,
            "windows_extra": self.windows_extra,
            "windows_wrong": self.windows_wrong,
            "examples": self.examples,
        }
        if self.windows_late is not None:
            fields["windows_late"] = self.windows_late
        return fields

    def explain_late(self, late_windows, verify, *, examples: int = 5) -> None:
        """Which missing or wrong windows late messages fell in (`late_windows`: `expected()` of
        the ledger rows the dagger set aside as late): those were written without them."""
        keys = set(_index(late_windows, Expectation.of(verify)))
        hit = sorted(self.failed & keys)
        self.windows_late = len(hit)
        cols = [k.column for k in Expectation.of(verify).keys]
        self.examples["late"] = [{"window": _iso(k[0]), **dict(zip(cols, k[1:]))} for k in hit[:examples]]


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return math.isclose(x, y, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _index(df, exp) -> dict:
    """(window, key values as text...) -> the measures, per row of an expected or read frame."""
    key_cols = [k.column for k in exp.keys]
    measures = [m.column for m in exp.measures]
    out = {}
    for row in df.to_dict("records"):
        out[(int(row["window"]), *(str(row[c]) for c in key_cols))] = [_plain(row[m]) for m in measures]
    return out


def compare(want, got, verify, *, since_ms: int, until_ms: int, examples: int = 5) -> Comparison:
    """Each expected (window, key) against the sink: matched, missing or wrong; and the sink's
    windows in [since_ms, until_ms] that nothing fed makes (extra)."""
    exp = Expectation.of(verify)
    key_cols = [k.column for k in exp.keys]
    measures = [m.column for m in exp.measures]
    expected_rows = _index(want, exp)
    sink_rows = {k: v for k, v in _index(got, exp).items() if since_ms <= k[0] <= until_ms}
    result = Comparison(len(expected_rows), 0, 0, 0, 0)

    def show(k) -> dict:
        return {"window": _iso(k[0]), **dict(zip(key_cols, k[1:]))}

    for k, values in sorted(expected_rows.items()):
        if k not in sink_rows:
            result.windows_missing += 1
            result.failed.add(k)
            if len(result.examples["missing"]) < examples:
                result.examples["missing"].append({**show(k), **dict(zip(measures, values))})
        elif all(_same(a, b) for a, b in zip(values, sink_rows[k])):
            result.windows_matched += 1
        else:
            result.windows_wrong += 1
            result.failed.add(k)
            if len(result.examples["wrong"]) < examples:
                result.examples["wrong"].append(
                    {
                        "window": _iso(k[0]),
                        "key": dict(zip(key_cols, k[1:])),
                        "expected": dict(zip(measures, values)),
                        "got": dict(zip(measures, sink_rows[k])),
                    }
                )
    for k in sorted(set(sink_rows) - set(expected_rows)):
        result.windows_extra += 1
        if len(result.examples["extra"]) < examples:
            result.examples["extra"].append({**show(k), **dict(zip(measures, sink_rows[k]))})
    return result
