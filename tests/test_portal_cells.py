"""The map's cells (portal/cells.py): the key column read from the query, the outlines of S2 cells
and geohashes checked against the points the runtime's own S2Id/GeoHash kernels put in them and
against published geohash boxes, the latest window read from a real InfluxDB, and the map offered
only for a dagger of the viewer's team whose sink is the portal's own InfluxDB."""

from __future__ import annotations

import math
import os
import random
import time

import numpy as np
import pytest
import requests

from dagger_runtime.errors import DaggerError
from dagger_runtime.udfs import geo_kernels
from lab import access
from portal import cells

SURGE = """SELECT city_id AS tag_city_id, S2Id(lat,long,13) AS tag_s2id, count(1) AS num_of_bookings,
       TUMBLE_END(rowtime,INTERVAL '60' SECOND) AS window_timestamp
FROM `data_stream` WHERE status='COMPLETED'
GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND), city_id, S2Id(lat, long, 13)"""


@pytest.mark.parametrize(
    "sql, key",
    [
        (SURGE, cells.Key("tag_s2id", "s2")),
        (
            "SELECT geohash(lat, long, 6) AS area, COUNT(1) AS n FROM data_stream GROUP BY geohash(lat, long, 6)",
            cells.Key("area", "geohash"),
        ),
        (
            "SELECT S2ID(lat, long, 13) AS s2, COUNT(1) AS n FROM data_stream GROUP BY S2ID(lat, long, 13)",
            cells.Key("s2", "s2"),
        ),
        # named like a cell, computed otherwise: no map
        ("SELECT city_id AS tag_s2id, COUNT(1) AS n FROM data_stream GROUP BY city_id", None),
        # a cell only inside a subquery or a condition: the outermost SELECT's columns are what is written
        (
            "SELECT n FROM (SELECT S2Id(lat, long, 13) AS c, COUNT(1) AS n FROM data_stream GROUP BY S2Id(lat, long, 13))",
            None,
        ),
        ("SELECT COUNT(1) AS n FROM data_stream WHERE S2Id(lat, long, 13) = '1'", None),
        ("SELECT FROM WHERE", None),
    ],
)
def test_the_key_is_the_outermost_column_computed_by_s2id_or_geohash(sql, key):
    assert cells.key_of(sql) == key


def _inside(lat, lng, polygon) -> bool:
    """Ray casting in the (lng, lat) plane: good enough for cells of a few km away from the poles."""
    inside = False
    for (la1, lo1), (la2, lo2) in zip(polygon, polygon[1:] + polygon[:1]):
        if (la1 > lat) != (la2 > lat) and lng < (lo2 - lo1) * (lat - la1) / (la2 - la1) + lo1:
            inside = not inside
    return inside


def _km(a, b) -> float:
    (la1, lo1), (la2, lo2) = [(math.radians(x), math.radians(y)) for x, y in (a, b)]
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * 6371.0088 * math.asin(math.sqrt(h))


def test_an_s2_cells_outline_holds_the_points_s2id_put_in_it_and_is_a_level_13_cells_size():
    rng = random.Random(13)
    # Jakarta's bookings, and points on faces 4 and 5, whose ids S2Id writes as negative longs
    points = [(-6.2 + rng.uniform(-0.2, 0.2), 106.8 + rng.uniform(-0.2, 0.2)) for _ in range(200)]
    points += [(-60 + rng.uniform(-5, 5), 100 + rng.uniform(-5, 5)) for _ in range(50)]
    lat, lng = np.array([p[0] for p in points]), np.array([p[1] for p in points])
    ids = geo_kernels.s2_cell_id_str(lat, lng, 13)
    assert any(i.startswith("-") for i in ids)
    for (la, lo), cell in zip(points, ids):
        outline = cells.s2_outline(cell)
        assert len(outline) == 4 and _inside(la, lo, outline), (cell, la, lo, outline)
        # level 13 cells are 0.6-1.8 km a side (S2's cell statistics)
        sides = [_km(outline[k], outline[(k + 1) % 4]) for k in range(4)]
        assert all(0.5 < s < 2.0 for s in sides), sides


def test_a_geohash_box_is_the_published_one_and_holds_the_points_geohash_put_in_it():
    # the worked example of geohash.org and Wikipedia: ezs42 is 42.583-42.627 N, 5.625-5.581 W
    (s, w), (n, _), (_, e), _ = cells.geohash_outline("ezs42")
    assert (s, n, w, e) == (42.5830078125, 42.626953125, -5.625, -5.5810546875)
    rng = random.Random(7)
    points = [(rng.uniform(-80, 80), rng.uniform(-179, 179)) for _ in range(200)]
    hashes = geo_kernels.geohash(np.array([p[0] for p in points]), np.array([p[1] for p in points]), 7)
    for (la, lo), cell in zip(points, hashes):
        (s, w), (n, _), (_, e), _ = cells.geohash_outline(cell)
        assert s <= la <= n and w <= lo <= e


@pytest.mark.parametrize("bad", ["", "12l", "ezs42a" + "0" * 10, "EZS42", "ai", None, 42])
def test_what_is_not_a_geohash_is_refused(bad):
    with pytest.raises(DaggerError, match="not a geohash"):
        cells.geohash_outline(bad)


@pytest.mark.parametrize("bad", ["", "abc", "1.5", str(1 << 64), "0", None])
def test_what_is_not_an_s2_cell_is_refused(bad):
    with pytest.raises(DaggerError, match="not an S2 cell id"):
        cells.s2_outline(bad)


def test_rows_whose_key_is_not_a_cell_are_counted_and_only_numbers_are_values():
    cell = str(geo_kernels.s2_cell_id_str(np.array([-6.2]), np.array([106.8]), 13)[0])
    rows = [
        {"time": 60_000, "tag_s2id": cell, "tag_city_id": "1", "num_of_bookings": 4, "flag": True},
        {"time": 60_000, "tag_s2id": "not-a-cell", "num_of_bookings": 2},
        {"time": 60_000, "tag_s2id": None, "num_of_bookings": 1},
    ]
    got = cells.cells(rows, cells.Key("tag_s2id", "s2"))
    assert got["not_cells"] == 2 and got["window_ms"] == 60_000
    (drawn,) = got["cells"]
    assert drawn["cell"] == cell and drawn["values"] == {"num_of_bookings": 4}
    with pytest.raises(DaggerError, match="over 5000 cells"):
        cells.cells([rows[0]] * (cells.MAX_CELLS + 1), cells.Key("tag_s2id", "s2"))


@pytest.mark.parametrize("measurement", ['m" WHERE 1=1 --', "m;DROP DATABASE x", "m\nSELECT", "", "a" * 129])
def test_a_measurement_the_map_cannot_quote_safely_is_refused_before_a_query(measurement):
    class Refusing(cells.Influx):
        def query(self, *args, **kwargs):
            raise AssertionError("queried")

    with pytest.raises(DaggerError, match="cannot read a measurement"):
        cells.latest_window(Refusing("http://127.0.0.1:1"), "db", measurement, None, None)


def test_the_latest_window_is_read_from_a_real_influxdb(influxdb):
    db = "cells_latest"
    influxdb.create_database(db)
    day_ago = (int(time.time()) // 60 - 24 * 60) * 60_000  # windows of yesterday, a minute apart
    lines = []
    for minute in (1, 2, 3):
        for cell, n in (("-7", minute), ("11", 10 * minute), ("13", 100 * minute)):
            lines.append(f"surge,tag_s2id={cell} num_of_bookings={n}i {day_ago + minute * 60_000}")
    lines.append(f"other,tag_s2id=99 num_of_bookings=5i {day_ago + 3_600_000}")  # another measurement, later
    lines.append("old,tag_s2id=99 num_of_bookings=5i 180000")  # 1970: past the look-back
    requests.post(
        f"{influxdb.url}/write", params={"db": db, "precision": "ms"}, data="\n".join(lines), timeout=10
    ).raise_for_status()
    rows = cells.latest_window(cells.Influx(influxdb.url), db, "surge", None, None)
    last = day_ago + 180_000
    assert sorted((r["tag_s2id"], r["num_of_bookings"], r["time"]) for r in rows) == [
        ("-7", 3, last),
        ("11", 30, last),
        ("13", 300, last),
    ]
    assert cells.latest_window(cells.Influx(influxdb.url), db, "missing", None, None) == []
    assert cells.latest_window(cells.Influx(influxdb.url), db, "old", None, None) == []
    with pytest.raises(DaggerError, match="InfluxDB did not answer"):
        cells.latest_window(cells.Influx("http://127.0.0.1:9"), db, "surge", None, None)


def test_the_map_is_offered_only_for_a_cell_keyed_dagger_writing_to_the_portals_influxdb(tmp_path, monkeypatch):
    from dagger_runtime.lifecycle.registry import Registry
    from tests.test_portal import _signed_in, portal_app

    influx = "http://127.0.0.1:18086"
    monkeypatch.setenv("DAGGER_SECRET_ALLOCATIONS__INFLUX_PASSWORD", "p" * 20)
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    for name, url in (("surge-here", influx), ("surge-elsewhere", "http://127.0.0.1:18087")):
        sink = access.team_influx_sink("allocations", url, "surge")
        spec = (
            f"name: {name}\nteam: allocations\nstreams:\n  - table: data_stream\n"
            "    proto: gojek.esb.booking.BookingLogMessage\n    topics: [GO_RIDE-booking-log]\n    event_time: 5\n"
            "    kafka: {bootstrap_servers: '127.0.0.1:9092'}\n"
            f"sql: |\n"
            + "".join(f"  {line}\n" for line in SURGE.splitlines())
            + "sink:\n  type: influx\n  influx:\n"
            + "".join(f"    {k}: '{v}'\n" for k, v in sink.items())
        )
        registry.record_version(
            name=name,
            team="allocations",
            cluster="blue",
            spec=spec,
            spec_format=".yaml",
            spec_digest="d" * 64,
            state_key="k",
            checkpoint=f"/c/{name}",
            start="latest",
            actor="someone",
            submission_id=None,
            metrics_port=None,
            action="deploy",
        )
    app = portal_app(tmp_path, registry, influx_url=influx)
    own = _signed_in(app, teams=("allocations",))
    page = own.get("/daggers/surge-here").get_data(as_text=True)
    assert 'id="map"' in page and 'data-key="tag_s2id"' in page and "/static/build/map.js" in page
    # the portal's InfluxDB does not answer here: said, with a 503, not a traceback
    assert own.get("/api/daggers/surge-here/cells").status_code == 503
    # a sink elsewhere: no map, and the API reads nothing
    assert 'id="map"' not in own.get("/daggers/surge-elsewhere").get_data(as_text=True)
    assert own.get("/api/daggers/surge-elsewhere/cells").status_code == 404
    other = _signed_in(app, teams=("api-health",))
    for path in ("/daggers/surge-here", "/api/daggers/surge-here/cells"):
        seen = other.get(path)
        assert seen.status_code == 404 and "surge-here" not in seen.get_data(as_text=True)
    # the team's secret reaches no page
    assert "p" * 20 not in page
    registry.close()
    assert os.environ["DAGGER_SECRET_ALLOCATIONS__INFLUX_PASSWORD"] == "p" * 20
