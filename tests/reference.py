"""Independent reference computations for the tests: plain Python over the generated events,
s2sphere for S2 — never the runtime's own code."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

import s2sphere


def s2id(lat: float, lng: float, level: int) -> str:
    unsigned = s2sphere.CellId.from_lat_lng(s2sphere.LatLng.from_degrees(lat, lng)).parent(level).id()
    return str(unsigned - (1 << 64) if unsigned >= 1 << 63 else unsigned)


def window_end(t: dt.datetime, seconds: int) -> dt.datetime:
    epoch = int(t.timestamp() // seconds) * seconds
    return dt.datetime.fromtimestamp(epoch + seconds, tz=dt.timezone.utc)


def window_start(t: dt.datetime, seconds: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(int(t.timestamp() // seconds) * seconds, tz=dt.timezone.utc)


def iso(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def group(events, key, agg):
    groups = defaultdict(list)
    for e in events:
        groups[key(e)].append(e)
    return {k: agg(v) for k, v in groups.items()}


def as_multiset(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(sorted(r.items())) for r in rows)
