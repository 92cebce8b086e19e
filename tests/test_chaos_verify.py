"""The data verdict (chaos/verify.py): windows from a ledger, read back from InfluxDB, compared.
Every expected number here is counted by hand from the rows written in the test."""

from __future__ import annotations

import types
import urllib.request

import pandas as pd
import pytest
import s2sphere

from chaos.verify import compare, expected, ledger_fields, parse_key, parse_measure, read_influx, s2_cell
from loadtest.ledger import Ledger

T0 = 1_795_000_000_000  # 2026-11-18T11:06:40Z (date -u -d @1795000000); windows of 10 s from it
# s2sphere's level-13 cell of (-6.175392, 106.827153), as a signed 64-bit decimal (computed once
# in a Python shell with s2sphere.CellId.from_lat_lng(...).parent(13).id(), and pasted here)
MONAS_CELL = "3344474489181175808"


def verify(**fields):
    base = {
        "dagger": "d",
        "window": 10.0,
        "keys": {"tag_service_type": "service_type"},
        "measures": {"bookings": "count"},
        "where": {},
        "at": "end",
    }
    return types.SimpleNamespace(**{**base, **fields})


def ledger() -> pd.DataFrame:
    rows = [  # (ms after T0, service, status, fare)
        (1_000, "GO_RIDE", "COMPLETED", 10.0),
        (2_000, "GO_RIDE", "COMPLETED", 5.5),
        (3_000, "GO_CAR", "COMPLETED", 7.0),
        (4_000, "GO_RIDE", "CREATED", 100.0),
        (12_000, "GO_RIDE", "COMPLETED", 1.0),
        (19_999, "GO_CAR", "CREATED", 2.0),
        (25_000, "GO_CAR", "COMPLETED", 3.0),
    ]
    led = Ledger(["service_type", "status", "total_fare", "lat", "long"])
    for i, (ms, service, status, fare) in enumerate(rows):
        led.record(
            index=i,
            topic="t",
            partition=i % 2,
            offset=i,
            timestamp_ms=T0 + ms,
            key=None,
            event_time_ms=T0 + ms,
            facts={"service_type": service, "status": status, "total_fare": fare, "lat": -6.175392, "long": 106.827153},
        )
    led.record_failure(
        index=99,
        topic="t",
        key=None,
        event_time_ms=T0 + 1_500,
        error="lost",
        facts={"service_type": "GO_RIDE", "status": "COMPLETED", "total_fare": 1000.0},
    )
    return led.frame(failures=True)


def rows(df: pd.DataFrame) -> list[tuple]:
    return [tuple(r) for r in df.itertuples(index=False)]


def test_the_grammar_is_an_allow_list():
    assert parse_key("c", "pickup.latitude").path == "pickup.latitude"
    assert parse_key("c", " s2id(lat , long, 13) ").s2 == ("lat", "long", 13)
    assert parse_measure("m", "sum(total_fare)").how == "sum"
    assert parse_measure("m", "count").path is None
    for bad in (
        "s2id(lat, long, 31)",
        "s2id(lat, long, 13); drop",
        "__import__('os')",
        "lat + 1",
        "",
        7,
        "s2id(lat, long)",
        "city_id.",
        "1city",
        "s2id(lat, long, ١٣)",
    ):  # Arabic-Indic digits: ASCII only
        with pytest.raises(ValueError):
            parse_key("c", bad)
    for bad in ("avg(total_fare)", "count(*)", "sum(total_fare) + 1", "sum()", "count ", None):
        if bad == "count ":
            assert parse_measure("m", bad).how == "count"  # surrounding spaces are YAML's, not the grammar's
            continue
        with pytest.raises(ValueError):
            parse_measure("m", bad)
    assert ledger_fields(
        [verify(where={"status": "COMPLETED"}, keys={"s": "s2id(lat, long, 13)"}, measures={"f": "sum(total_fare)"})]
    ) == ["lat", "long", "total_fare", "status"]


def test_windows_by_hand_with_a_filter_and_the_closing_cut():
    v = verify(where={"status": "COMPLETED"}, measures={"bookings": "count", "fare": "sum(total_fare)"})
    # closed by T0+20s: the windows ending at +10s and +20s; the failed send is not counted
    got = expected(ledger(), v, closed_by_ms=T0 + 20_000)
    assert rows(got) == [
        (T0 + 10_000, "GO_CAR", 1, 7.0),
        (T0 + 10_000, "GO_RIDE", 2, 15.5),
        (T0 + 20_000, "GO_RIDE", 1, 1.0),
    ]
    # one millisecond short of +20s closes only the first window
    assert {r[0] for r in rows(expected(ledger(), v, closed_by_ms=T0 + 19_999))} == {T0 + 10_000}
    # by window start, every status, the S2 cell as the dagger writes it
    v = verify(keys={"tag_s2id": "s2id(lat, long, 13)"}, at="start")
    assert rows(expected(ledger(), v, closed_by_ms=T0 + 30_000)) == [
        (T0, MONAS_CELL, 4),
        (T0 + 10_000, MONAS_CELL, 2),
        (T0 + 20_000, MONAS_CELL, 1),
    ]


def test_compare_counts_matched_missing_extra_and_wrong():
    v = verify()
    want = expected(ledger(), v, closed_by_ms=T0 + 30_000)
    # by hand: +10s GO_RIDE 3, GO_CAR 1; +20s GO_RIDE 1, GO_CAR 1; +30s GO_CAR 1
    assert rows(want) == [
        (T0 + 10_000, "GO_CAR", 1),
        (T0 + 10_000, "GO_RIDE", 3),
        (T0 + 20_000, "GO_CAR", 1),
        (T0 + 20_000, "GO_RIDE", 1),
        (T0 + 30_000, "GO_CAR", 1),
    ]
    sink = pd.DataFrame(
        {
            "window": [T0 + 10_000, T0 + 10_000, T0 + 20_000, T0 + 30_000, T0 + 40_000, T0 - 5_000],
            "tag_service_type": ["GO_CAR", "GO_RIDE", "GO_CAR", "GO_SEND", "GO_CAR", "GO_CAR"],
            "bookings": [1, 2, 1, 4, 9, 9],
        }
    )
    result = compare(want, sink, v, since_ms=T0, until_ms=T0 + 30_000)
    # matched: +10s GO_CAR, +20s GO_CAR; wrong: +10s GO_RIDE (2, not 3); missing: +20s GO_RIDE and
    # +30s GO_CAR; extra: +30s GO_SEND (+40s and before T0 lie outside the range compared)
    assert (
        result.windows_expected,
        result.windows_matched,
        result.windows_missing,
        result.windows_extra,
        result.windows_wrong,
    ) == (5, 2, 2, 1, 1)
    assert result.examples["wrong"] == [
        {
            "window": "2026-11-18T11:06:50Z",
            "key": {"tag_service_type": "GO_RIDE"},
            "expected": {"bookings": 3},
            "got": {"bookings": 2},
        }
    ]
    assert [e["tag_service_type"] for e in result.examples["missing"]] == ["GO_RIDE", "GO_CAR"]
    assert result.examples["extra"] == [
        {"window": "2026-11-18T11:07:10Z", "tag_service_type": "GO_SEND", "bookings": 4}
    ]
    fields = result.as_case_fields()
    assert fields["windows_expected"] == fields["windows_matched"] + fields["windows_missing"] + fields["windows_wrong"]
    assert "windows_late" not in fields  # not asked which were late

    # the dagger set aside as late the GO_RIDE booking at +2s and the GO_CAR one at +25s (rows 1
    # and 6): they fall in the wrong +10s GO_RIDE window and the missing +30s GO_CAR one; the
    # missing +20s GO_RIDE window had none (lost for another reason)
    frame = ledger()
    late = frame[frame["index"].isin([1, 6])]
    result.explain_late(expected(late, v, closed_by_ms=T0 + 30_000), v)
    assert result.windows_late == 2
    assert result.examples["late"] == [
        {"window": "2026-11-18T11:06:50Z", "tag_service_type": "GO_RIDE"},
        {"window": "2026-11-18T11:07:10Z", "tag_service_type": "GO_CAR"},
    ]
    assert result.as_case_fields()["windows_late"] == 2
    # a late message in a window that was written right is no explanation of anything
    result.explain_late(expected(frame[frame["index"] == 2], v, closed_by_ms=T0 + 30_000), v)
    assert (result.windows_late, result.examples["late"]) == (0, [])


def test_floats_compare_within_a_tolerance_and_counts_exactly():
    v = verify(measures={"fare": "sum(total_fare)"})
    want = pd.DataFrame({"window": [T0], "tag_service_type": ["GO_RIDE"], "fare": [0.1 + 0.2]})
    close = pd.DataFrame({"window": [T0], "tag_service_type": ["GO_RIDE"], "fare": [0.3]})
    off = pd.DataFrame({"window": [T0], "tag_service_type": ["GO_RIDE"], "fare": [0.3001]})
    assert compare(want, close, v, since_ms=T0, until_ms=T0).windows_matched == 1
    assert compare(want, off, v, since_ms=T0, until_ms=T0).windows_wrong == 1


def test_read_influx_gives_back_what_was_written(influxdb):
    influxdb.create_database("verify")
    lines = "\n".join(
        [
            f'my\\ "m,tag_service_type=GO_RIDE,status=COMPLETED bookings=3i {T0 + 10_000}',
            f'my\\ "m,tag_service_type=GO_CAR,status=COMPLETED bookings=1i {T0 + 10_000}',
            f'my\\ "m,tag_service_type=GO_CAR,status=CREATED bookings=7i {T0 + 20_000}',
        ]
    )
    request = urllib.request.Request(f"{influxdb.url}/write?db=verify&precision=ms", data=lines.encode(), method="POST")
    urllib.request.urlopen(request, timeout=10).close()
    v = verify(keys={"tag_service_type": "service_type", "label_status": "status"})
    got = read_influx(influxdb.url, "verify", 'my "m', v, since_ms=T0, until_ms=T0 + 15_000)
    assert sorted(rows(got)) == [(T0 + 10_000, "GO_CAR", "COMPLETED", 1), (T0 + 10_000, "GO_RIDE", "COMPLETED", 3)]
    with pytest.raises(RuntimeError, match="database not found"):
        read_influx(influxdb.url, "no-such-db", "m", v, since_ms=T0, until_ms=T0)


def test_an_s2_key_is_empty_where_the_runtimes_s2id_gives_null():
    """The runtime's S2Id is NULL for a latitude beyond +-90 (an InfluxDB point then has no such
    tag, read back as ""): the expected key must say the same, or every such window is both missing
    and extra (seen in a drill fed coordinates without a city hint)."""

    assert s2_cell(806.9, 459.0, 13) is None and s2_cell(float("nan"), 10.0, 13) is None
    assert s2_cell(10.0, float("inf"), 13) is None
    cell = s2sphere.CellId.from_lat_lng(s2sphere.LatLng.from_degrees(-6.2, 106.8)).parent(13).id()
    assert s2_cell(-6.2, 106.8, 13) == str(cell - (1 << 64) if cell >= 1 << 63 else cell)
    frame = pd.DataFrame(
        {
            "topic": ["t"] * 2,
            "event_time_ms": [1_000, 2_000],
            "error": [None, None],
            "lat": [806.9, -6.2],
            "long": [459.0, 106.8],
        }
    )
    spec = types.SimpleNamespace(
        window=60.0, keys={"tag_s2id": "s2id(lat, long, 13)"}, measures={"n": "count"}, where={}, at="end"
    )
    got = expected(frame, spec, closed_by_ms=10**12)
    assert sorted(got["tag_s2id"]) == sorted(["", s2_cell(-6.2, 106.8, 13)])
