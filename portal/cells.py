"""A dagger's latest window drawn as cells on a map: which output column is an S2 cell or a
geohash (read from its query), the cells' outlines, and the latest window read back from the
dagger's own InfluxDB sink as its team.

The key is the outermost SELECT's column computed by S2Id(...) or GeoHash(...) (the query's own
words, not a guess from values: a city id 1 is also a valid S2 cell). Outlines are pure: S2 cells
through s2sphere, geohashes decoded here. The sink is read only at the portal's own InfluxDB
(`--influx`), with the dagger's team's password, so a spec's URL never sends a request elsewhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import s2sphere
from sqlglot import exp

from dagger_runtime import http_client
from dagger_runtime.errors import DaggerError
from dagger_runtime.sql.translate import parse

KINDS = {"s2id": "s2", "geohash": "geohash"}
MAX_CELLS = 5000
LOOK_BACK = "31d"  # the latest window is looked for this far back in event time
TIMEOUT_S = 5.0
_BASE32 = "0123456789bcdefghjkmnpqrstuvwxyz"
_GEOHASH = re.compile(f"[{_BASE32}]{{1,12}}")
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # measurements and columns a query may name, quoted


@dataclass(frozen=True)
class Key:
    column: str
    kind: str  # "s2" or "geohash"


def key_of(sql: str) -> Key | None:
    """The output column the query keys by S2 cell or geohash, or None."""
    try:
        tree = parse(sql)
    except DaggerError:
        return None
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    for item in select.expressions if select is not None else []:
        call = item.this if isinstance(item, exp.Alias) else item
        if isinstance(call, exp.Anonymous) and str(call.this).lower() in KINDS and item.alias_or_name:
            return Key(item.alias_or_name, KINDS[str(call.this).lower()])
    return None


def s2_outline(cell: str) -> list[tuple[float, float]]:
    """The (lat, lng) corners of the S2 cell S2Id wrote (a signed 64-bit id in decimal)."""
    try:
        value = int(cell)
    except (TypeError, ValueError):
        raise DaggerError(f"not an S2 cell id: {str(cell)[:40]!a}") from None
    if not -(1 << 63) <= value < (1 << 63):
        raise DaggerError(f"not an S2 cell id: {str(cell)[:40]!a}")
    cell_id = s2sphere.CellId(value % (1 << 64))
    if not cell_id.is_valid():
        raise DaggerError(f"not an S2 cell id: {str(cell)[:40]!a}")
    corners = s2sphere.Cell(cell_id)
    out = []
    for k in range(4):
        point = s2sphere.LatLng.from_point(corners.get_vertex(k))
        out.append((round(point.lat().degrees, 7), round(point.lng().degrees, 7)))
    return out


def geohash_outline(cell: str) -> list[tuple[float, float]]:
    """The (lat, lng) corners of a geohash's box."""
    if not isinstance(cell, str) or not _GEOHASH.fullmatch(cell):
        raise DaggerError(f"not a geohash: {str(cell)[:40]!a}")
    lat, lng = [-90.0, 90.0], [-180.0, 180.0]
    even = True  # bits alternate longitude, latitude, starting with longitude
    for char in cell:
        bits = _BASE32.index(char)
        for shift in range(4, -1, -1):
            half = lng if even else lat
            middle = (half[0] + half[1]) / 2
            if bits >> shift & 1:
                half[0] = middle
            else:
                half[1] = middle
            even = not even
    return [(lat[0], lng[0]), (lat[1], lng[0]), (lat[1], lng[1]), (lat[0], lng[1])]


OUTLINES = {"s2": s2_outline, "geohash": geohash_outline}


def _quoted(name: str, what: str) -> str:
    if not _NAME.fullmatch(name):
        raise DaggerError(f"the map cannot read a {what} named {name[:40]!a} (letters, digits, _ . - only)")
    return f'"{name}"'


class Influx:
    """The platform's InfluxDB 1.x, read as one team's user."""

    def __init__(self, url: str, timeout_s: float = TIMEOUT_S):
        self.url, self.timeout_s = url.rstrip("/"), timeout_s
        # no proxy from the environment sees a team's password (the house's session)
        self.session = http_client.session()

    def query(self, db: str, q: str, user: str | None, password: str | None) -> list[dict]:
        try:
            response = self.session.post(
                f"{self.url}/query",
                data={"db": db, "q": q, "epoch": "ms"},
                auth=(user, password or "") if user else None,
                timeout=self.timeout_s,
            )
        except http_client.Error as e:
            raise DaggerError(f"InfluxDB did not answer: {type(e).__name__}") from None
        if response.status_code in (401, 403):
            raise DaggerError("InfluxDB refused the dagger's team's login")
        try:
            response.raise_for_status()
            results = response.json()["results"]
        except (http_client.Error, ValueError, KeyError):
            raise DaggerError(f"InfluxDB answered {response.status_code}") from None
        if results and results[0].get("error"):
            raise DaggerError(f"InfluxDB refused the query: {results[0]['error']}")
        return results[0].get("series", []) if results else []


def latest_window(influx: Influx, db: str, measurement: str, user: str | None, password: str | None) -> list[dict]:
    """The rows of the measurement's latest point time (the latest window within LOOK_BACK), as dicts."""
    name = _quoted(measurement, "measurement")
    # bounded: an unbounded search for the last point reads every shard the measurement has
    last = influx.query(
        db, f"SELECT * FROM {name} WHERE time > now() - {LOOK_BACK} ORDER BY time DESC LIMIT 1", user, password
    )
    if not last or not last[0].get("values"):
        return []
    at = int(last[0]["values"][0][0])
    series = influx.query(db, f"SELECT * FROM {name} WHERE time = {at}ms LIMIT {MAX_CELLS + 1}", user, password)
    rows = []
    for s in series:
        for values in s.get("values", []):
            rows.append(dict(zip(s["columns"], values)))
    return rows


def cells(rows: list[dict], key: Key) -> dict:
    """The rows as map cells: each key's outline and its numeric columns; rows whose key is not a
    cell are counted, not drawn."""
    if len(rows) > MAX_CELLS:
        raise DaggerError(f"the latest window has over {MAX_CELLS} cells, more than the map draws")
    outline = OUTLINES[key.kind]
    drawn, skipped = [], 0
    for row in rows:
        try:
            corners = outline(row.get(key.column))
        except DaggerError:
            skipped += 1
            continue
        values = {
            k: v
            for k, v in row.items()
            if k not in ("time", key.column) and isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        drawn.append({"cell": str(row[key.column]), "outline": corners, "values": values})
    window = max((r["time"] for r in rows if isinstance(r.get("time"), int)), default=None)
    return {"key": key.column, "kind": key.kind, "window_ms": window, "cells": drawn, "not_cells": skipped}
