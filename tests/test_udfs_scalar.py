"""Dagger's scalar functions, run as an analyst would write them: dagger SQL -> translate -> Spark.

Expected values come from raystack/dagger's own Java tests (docs/reference/udf-contracts.md,
sections 1, 2, 3 and 5) or are computed here independently (s2sphere, plain Python formulas),
never from the runtime's own code. Where we deliberately differ from dagger (documented in
dagger_runtime/sql/catalog.py and the contracts doc) the test says so in its name.

Spark queries are batched: each test (or module fixture) builds one table with many rows and
evaluates every case in a single query.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from zoneinfo import ZoneInfo

import pytest
import s2sphere

from dagger_runtime.errors import QueryError
from dagger_runtime.sql import translate
from tests.sqlrun import run

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc


def by_id(rows) -> dict:
    return {r["id"]: r for r in rows}


def utc_seconds(*args) -> int:
    return int(dt.datetime(*args, tzinfo=UTC).timestamp())


# ================================================================== geo (contracts section 1)
JAKARTA = (-6.170024, 106.8243203)
KM2_PER_STERADIAN = 510072000 / (4 * math.pi)


def signed(unsigned_id: int) -> int:
    return unsigned_id - (1 << 64) if unsigned_id >= (1 << 63) else unsigned_id


def s2sphere_cell(lat: float, lng: float, level: int) -> s2sphere.CellId:
    return s2sphere.CellId.from_lat_lng(s2sphere.LatLng.from_degrees(lat, lng)).parent(level)


@pytest.fixture(scope="module")
def random_points():
    rnd = random.Random(20190704)
    points = [(rnd.uniform(-90, 90), rnd.uniform(-180, 180), rnd.randint(0, 30)) for _ in range(200)]
    # the faces' corners and the poles, where face and sign change
    points += [(90.0, 0.0, 30), (-90.0, 0.0, 30), (0.0, 180.0, 12), (0.0, -180.0, 12), (45.0, 45.0, 0)]
    return points


@pytest.fixture(scope="module")
def geo_rows(spark, random_points):
    rows = [
        (i, lat, lng, level, str(signed(s2sphere_cell(lat, lng, level).id())))
        for i, (lat, lng, level) in enumerate(random_points)
    ]
    rows += [
        (1000, *JAKARTA, 13, "3267730965564227584"),  # S2IdTest / S2AreaInKm2Test
        (1001, None, JAKARTA[1], 13, None),  # NULL latitude
        (1002, JAKARTA[0], None, 13, None),  # NULL longitude
        (1003, *JAKARTA, None, "not-a-number"),
    ]  # NULL level, bad id
    schema = "id INT, lat DOUBLE, lng DOUBLE, level INT, cell STRING"
    return by_id(run(spark, "SELECT id, S2Id(lat, lng, level) AS s2, S2AreaInKm2(cell) AS area FROM t", rows, schema))


def test_s2id_of_daggers_jakarta_vector_is_3344474489181175808(geo_rows):
    assert geo_rows[1000]["s2"] == "3344474489181175808"


def test_s2id_equals_s2spheres_signed_cell_id_on_200_random_points_at_random_levels(geo_rows, random_points):
    expected = {i: str(signed(s2sphere_cell(*p).id())) for i, p in enumerate(random_points)}
    got = {i: geo_rows[i]["s2"] for i in expected}
    assert got == expected
    assert any(v.startswith("-") for v in got.values()), "faces 4-5 must print as negative longs"


def test_s2id_of_a_null_argument_is_null(geo_rows):
    assert [geo_rows[i]["s2"] for i in (1001, 1002, 1003)] == [None, None, None]


def test_s2id_takes_any_number_and_gives_null_where_dagger_would_throw_or_answer_garbage(spark):
    # numbers of every SQL type reach the JVM UDF as they are (no casts are declared): an INT or
    # DECIMAL latitude and a BIGINT or DOUBLE level are the same point and level
    jakarta_13 = "3344474489181175808"
    lng_wraps = str(signed(s2sphere_cell(10.0, 190.0 - 360.0, 7).id()))
    cases = {
        "CAST(-6.170024 AS DECIMAL(9, 6)), CAST(106.8243203 AS DECIMAL(10, 7)), 13": jakarta_13,
        "-6.170024D, 106.8243203D, CAST(13 AS BIGINT)": jakarta_13,
        "-6.170024D, 106.8243203D, 13.0D": jakarta_13,
        "10, 190, 7": lng_wraps,  # integers; a longitude past 180 wraps, as in dagger
        "CAST('NaN' AS DOUBLE), 0D, 13": None,
        "0D, CAST('NaN' AS DOUBLE), 13": None,
        "0D, CAST('Infinity' AS DOUBLE), 13": None,
        "90.0001D, 0D, 13": None,
        "-90.0001D, 0D, 13": None,
        "0D, 0D, 31": None,
        "0D, 0D, -1": None,
        "0D, 0D, 12.5D": None,
        "0D, 0D, CAST('NaN' AS DOUBLE)": None,
        "'1.5', 0D, 13": None,  # not a number: NULL, not a parse
    }
    sql = "SELECT " + ", ".join(f"S2Id({args}) AS c{i}" for i, args in enumerate(cases)) + " FROM t"
    (row,) = run(spark, sql, [(1,)], "id INT")
    assert [row[f"c{i}"] for i in range(len(cases))] == list(cases.values())


def test_s2_area_of_daggers_vector_cell_is_909_97058_km2(geo_rows):
    assert geo_rows[1000]["area"] == pytest.approx(909.97058, abs=1e-4)


def test_s2_area_is_s2spheres_exact_area_scaled_to_an_earth_of_510072000_km2(geo_rows, random_points):
    for i, point in enumerate(random_points):
        expected = s2sphere.Cell(s2sphere_cell(*point)).exact_area() * KM2_PER_STERADIAN
        assert geo_rows[i]["area"] == pytest.approx(expected, rel=1e-9, abs=0), point


def test_s2_area_of_a_null_or_non_numeric_id_is_null(geo_rows):
    assert geo_rows[1001]["area"] is None
    assert geo_rows[1003]["area"] is None


def test_geohash_matches_daggers_vector_and_wikipedias_examples(spark):
    rows = [
        (0, *JAKARTA, 6, "qqguyu"),  # GeoHashTest
        (1, 42.6, -5.6, 5, "ezs42"),  # en.wikipedia.org/wiki/Geohash
        (2, 57.64911, 10.40744, 11, "u4pruydqqvj"),
        (3, 42.605, -5.603, 5, "ezs42"),
        (4, 0.0, 0.0, 1, "s"),
        (5, -90.0, -180.0, 3, "000"),
        (6, None, 106.8243203, 6, None),
    ]
    got = run(
        spark,
        "SELECT id, GeoHash(lat, lng, len) AS h, want FROM t ORDER BY id",
        rows,
        "id INT, lat DOUBLE, lng DOUBLE, len INT, want STRING",
    )
    assert [(r["id"], r["h"]) for r in got] == [(r["id"], r["want"]) for r in got]


def test_distance_is_haversine_km_paris_london_and_bangalore_jakarta(spark):
    rows = [
        (48.8566, 2.3522, 51.5074, 0.1278, 334.5761379805),
        (12.9716, 77.5946, 6.1751, 106.8650, 3294.208197583382),
        (0.0, 0.0, 0.0, 0.0, 0.0),
    ]
    got = run(
        spark,
        "SELECT Distance(a, b, c, d) AS km, want FROM t",
        rows,
        "a DOUBLE, b DOUBLE, c DOUBLE, d DOUBLE, want DOUBLE",
    )
    for r in got:
        assert r["km"] == pytest.approx(r["want"], rel=1e-9, abs=1e-12)


# ==================================================== arrays, maps, strings (contracts section 3)
def test_element_at_with_two_arguments_follows_daggers_vectors(spark):
    abbva, with_null, abc = ["a", "a", "b", "v", "a"], ["a", "a", "b", None, "a"], ["a", "a", "b"]
    cases = [  # (strings, index, expected)             ElementAtTest
        (abbva, 2, "b"),
        (with_null, 3, None),  # a null element gives null
        (["a", "a", "c", "d", "e"], 2, "c"),
        (abbva, -2, "v"),  # negative counts from the end
        (["a", "a", "c", "d", "e"], -2, "d"),
        (abc, 5, None),
        (abc, -5, None),  # out of range either way
        (abc, 3, None),
        (abc, -3, "a"),
        (abc, -1, "b"),
        (abc, 0, "a"),
        ([], 0, None),
        ([], -1, None),
        (None, 1, None),  # a null array gives null
    ]
    rows = [(i, s, [1.0, 3.0], idx) for i, (s, idx, _) in enumerate(cases)]
    got = by_id(
        run(
            spark,
            "SELECT id, ElementAt(strs, idx) AS e, ElementAt(dbls, 1) AS d FROM t",
            rows,
            "id INT, strs ARRAY<STRING>, dbls ARRAY<DOUBLE>, idx INT",
        )
    )
    assert {i: got[i]["e"] for i in got} == {i: c[2] for i, c in enumerate(cases)}
    assert got[0]["d"] == "3.0"  # the element as a string, as String.valueOf(3.0D)


ROUTES = (
    "ARRAY<STRUCT<start: STRUCT<latitude: DOUBLE, longitude: DOUBLE>, "
    "end: STRUCT<latitude: DOUBLE, longitude: DOUBLE>, distance_in_kms: FLOAT>>"
)


def test_element_at_with_a_proto_path_reads_a_leaf_of_one_element_as_text(spark):
    route = ((JAKARTA[0], JAKARTA[1]), None, 21.5)
    cases = [  # (routes, index)
        ([route], 0),
        ([route], 1),  # index 1 on a 1-element array
        (None, 1),  # null array
        ([], 1),  # empty array
        ([route], -1),  # negative index: ArrayIndexOutOfBounds, swallowed
        ([route, (None, None, None)], 1),  # null leaves print as "null"
    ]
    rows = [(i, routes, idx) for i, (routes, idx) in enumerate(cases)]
    got = by_id(
        run(
            spark,
            """
        SELECT id,
               ElementAt(routes, 'routes', idx, 'distance_in_kms') AS km,
               ElementAt(routes, 'routes', idx, 'distance_in_kms', 'booking') AS km5,
               ElementAt(routes, 'routes', idx, 'start.latitude') AS lat,
               ElementAt(routes, 'routes', idx, 'start.longitude') AS lng
        FROM t""",
            rows,
            f"id INT, routes {ROUTES}, idx INT",
        )
    )
    assert (got[0]["km"], got[0]["km5"], got[0]["lat"], got[0]["lng"]) == ("21.5", "21.5", "-6.170024", "106.8243203")
    for i in (1, 2, 3, 4):
        assert (got[i]["km"], got[i]["km5"], got[i]["lat"], got[i]["lng"]) == ("", "", "", ""), cases[i]
    assert (got[5]["km"], got[5]["lat"]) == ("null", "null")


def test_element_at_takes_two_four_or_five_arguments():
    for n_args in ("a, 'routes', 0", "a"):
        with pytest.raises(QueryError, match="ElementAt"):
            translate(f"SELECT ElementAt({n_args}) AS x FROM t", ["t"])


def test_list_contains_follows_daggers_vectors(spark):
    cases = [
        (["test1", "test2"], "test1", True),
        (["test1", "test2"], "test3", False),
        (["test1", "test2"], None, False),
        (None, "item1", False),
        ([], "item1", False),
        (["a", None, "b"], "b", True),
        (["a", None], "b", False),
    ]
    rows = [(i, *c) for i, c in enumerate(cases)]
    got = run(
        spark,
        "SELECT id, ListContains(list, item) AS c, want FROM t",
        rows,
        "id INT, list ARRAY<STRING>, item STRING, want BOOLEAN",
    )
    assert {r["id"]: r["c"] for r in got} == {r["id"]: r["want"] for r in got}


def test_map_get_returns_the_value_of_the_first_entry_with_the_key_or_null(spark):
    strings = [("payment_switch", "PB-123456"), ("weighted_abuse_probability", "0.4")]
    ints = [("payment_switch", 1), ("weighted_abuse_probability", 4)]
    cases = [  # (string map, int map, key, expected string, expected int)   MapGetTest
        (strings, ints, "weighted_abuse_probability", "0.4", 4),
        (strings, ints, "abuse_probability", None, None),
        ([("k", "first"), ("k", "second")], [("k", 1), ("k", 2)], "k", "first", 1),
        ([], [], "k", None, None),
    ]
    rows = [(i, *c) for i, c in enumerate(cases)]
    got = by_id(
        run(
            spark,
            "SELECT id, MapGet(m, k) AS s, MapGet(mi, k) AS n FROM t",
            rows,
            "id INT, m ARRAY<STRUCT<key: STRING, value: STRING>>, "
            "mi ARRAY<STRUCT<key: STRING, value: INT>>, k STRING, ws STRING, wi INT",
        )
    )
    assert {i: (got[i]["s"], got[i]["n"]) for i in got} == {i: (c[3], c[4]) for i, c in enumerate(cases)}


def test_split_has_javas_string_split_semantics(spark):
    digits = "1234567890 0987654321 000000000"
    cases = [  # (input, delimiter, expected)   SplitTest, then Java's String.split rules
        (digits, " ", ["1234567890", "0987654321", "000000000"]),
        (digits, "", ["1234567890", "0987654321", "000000000"]),  # "" means " "
        (digits, ",", [digits]),
        (None, " ", []),  # null input -> empty array
        (digits, None, []),  # null delimiter -> empty array
        ("a,b,,", ",", ["a", "b"]),  # trailing empties dropped
        ("", ",", [""]),  # no match -> the input
        (",", ",", []),  # only empties -> none
        (",a,,b", ",", ["", "a", "", "b"]),  # leading/inner empties kept
        ("a  b", "\\s+", ["a", "b"]),  # the delimiter is a regex
        ("a.b", ".", []),  # "." matches every char
        ("a|b", "|", ["a", "|", "b"]),  # empty regex: every char
    ]
    rows = [(i, s, d) for i, (s, d, _) in enumerate(cases)]
    got = by_id(run(spark, "SELECT id, Split(s, d) AS parts FROM t", rows, "id INT, s STRING, d STRING"))
    assert {i: list(got[i]["parts"]) for i in got} == {i: c[2] for i, c in enumerate(cases)}


def test_byte_to_string_decodes_utf8_and_null_gives_null(spark):
    cases = [(b"testString", "testString"), (b"", ""), ("héllo wörld".encode(), "héllo wörld"), (None, None)]
    rows = [(i, bytearray(b) if b is not None else None) for i, (b, _) in enumerate(cases)]
    got = by_id(run(spark, "SELECT id, ByteToString(b) AS s FROM t", rows, "id INT, b BINARY"))
    assert {i: got[i]["s"] for i in got} == {i: c[1] for i, c in enumerate(cases)}


# ================================================================ time (contracts section 2)
T0 = 1562224758  # 2019-07-04T07:19:18Z, a Thursday: the instant in dagger's time tests


def test_time_in_date_follows_daggers_vectors_with_and_without_a_zone(spark):
    cases = [  # (seconds, hour, minute, zone, expected)     TimeInDateTest
        (T0, 21, 0, "Asia/Kolkata", 1562254200),
        (T0, 21, 0, "Asia/Jakarta", 1562248800),
        (T0, 21, 0, "UTC", 1562274000),
        (T0, 25, 0, "UTC", 1562274000 + 4 * 3600),  # lenient Calendar: 25h is 01:00 next day
        (T0, 21, 90, "UTC", 1562274000 + 90 * 60),  # and 90 minutes roll into the hour
        (T0, 0, 0, "Asia/Kolkata", utc_seconds(2019, 7, 3, 18, 30)),
    ]
    rows = [(i, *c[:4]) for i, c in enumerate(cases)]
    got = by_id(
        run(
            spark,
            """SELECT id, TimeInDate(s, h, m, zone) AS zoned, TimeInDate(s, h, m) AS utc
                              FROM t""",
            rows,
            "id INT, s BIGINT, h INT, m INT, zone STRING",
        )
    )
    assert {i: got[i]["zoned"] for i in got} == {i: c[4] for i, c in enumerate(cases)}

    def in_utc(seconds, hour, minute):  # the 3-argument form always uses UTC
        day = dt.datetime.fromtimestamp(seconds, UTC).replace(hour=0, minute=0, second=0)
        return int((day + dt.timedelta(hours=hour, minutes=minute)).timestamp())

    assert {i: got[i]["utc"] for i in got} == {i: in_utc(*c[:3]) for i, c in enumerate(cases)}


def ms(*args) -> int:
    return utc_seconds(*args[:6]) * 1000 + (args[6] if len(args) > 6 else 0)


# (seconds, zone, StartOfWeek ms, EndOfWeek ms, StartOfMonth s (ours), EndOfMonth s)
CALENDAR_CASES = [
    # dagger's vectors (StartOfWeekTest, EndOfWeekTest, StartOfMonthTest, EndOfMonthTest)
    (T0, "Asia/Kolkata", 1561919400000, 1562524199999, 1561919400, 1564597799),
    (T0, "Asia/Jakarta", 1561914000000, 1562518799999, 1561914000, 1564592399),
    (T0, "UTC", 1561939200000, 1562543999999, 1561939200, 1564617599),
    (1561939200, "UTC", 1561939200000, 1562543999999, 1561939200, 1564617599),  # Mon 00:00Z
    # the contracts doc's extra table (dagger's bodies on JDK 17, locale en); StartOfMonth is ours
    (
        utc_seconds(2019, 7, 6, 12),
        "UTC",
        ms(2019, 7, 1),
        ms(2019, 7, 7, 23, 59, 59, 999),
        utc_seconds(2019, 7, 1),
        utc_seconds(2019, 7, 31, 23, 59, 59),
    ),
    # a Sunday belongs to the week that starts the next day, in dagger and in ours
    (
        utc_seconds(2019, 7, 7, 12),
        "UTC",
        ms(2019, 7, 8),
        ms(2019, 7, 14, 23, 59, 59, 999),
        utc_seconds(2019, 7, 1),
        utc_seconds(2019, 7, 31, 23, 59, 59),
    ),
    (
        utc_seconds(2019, 6, 30, 12),
        "UTC",
        ms(2019, 7, 1),
        ms(2019, 7, 7, 23, 59, 59, 999),
        utc_seconds(2019, 6, 1),
        utc_seconds(2019, 6, 30, 23, 59, 59),
    ),
    (
        utc_seconds(2019, 7, 20, 12),
        "UTC",
        ms(2019, 7, 15),
        ms(2019, 7, 21, 23, 59, 59, 999),
        utc_seconds(2019, 7, 1),
        utc_seconds(2019, 7, 31, 23, 59, 59),
    ),
    (
        utc_seconds(2020, 2, 15, 12),
        "UTC",
        ms(2020, 2, 10),
        ms(2020, 2, 16, 23, 59, 59, 999),
        utc_seconds(2020, 2, 1),
        utc_seconds(2020, 2, 29, 23, 59, 59),
    ),  # leap year
]


@pytest.fixture(scope="module")
def calendar_rows(spark):
    rows = [(i, s, zone) for i, (s, zone, *_) in enumerate(CALENDAR_CASES)]
    return by_id(
        run(
            spark,
            """
        SELECT id, StartOfWeek(s * 1000, zone) AS sow, EndOfWeek(s * 1000, zone) AS eow,
               StartOfMonth(s, zone) AS som, EndOfMonth(s, zone) AS eom
        FROM t""",
            rows,
            "id INT, s BIGINT, zone STRING",
        )
    )


def test_start_of_week_is_monday_midnight_local_in_millis_and_a_sunday_starts_the_next_week(calendar_rows):
    assert {i: calendar_rows[i]["sow"] for i in calendar_rows} == {i: c[2] for i, c in enumerate(CALENDAR_CASES)}


def test_end_of_week_is_the_last_millisecond_of_sunday_local(calendar_rows):
    assert {i: calendar_rows[i]["eow"] for i in calendar_rows} == {i: c[3] for i, c in enumerate(CALENDAR_CASES)}


def test_start_of_month_is_our_documented_first_day_of_the_month_not_daggers_monday(calendar_rows):
    assert {i: calendar_rows[i]["som"] for i in calendar_rows} == {i: c[4] for i, c in enumerate(CALENDAR_CASES)}
    # dagger (JDK 17) returns 2019-07-15, the Monday of that week; we return the first of July
    assert calendar_rows[7]["som"] == utc_seconds(2019, 7, 1)


def test_end_of_month_is_the_last_second_of_the_local_month(calendar_rows):
    assert {i: calendar_rows[i]["eom"] for i in calendar_rows} == {i: c[5] for i, c in enumerate(CALENDAR_CASES)}


def test_start_and_end_of_week_and_month_agree_with_python_zoneinfo_on_random_instants(spark):
    rnd = random.Random(7)
    zones = ["UTC", "Asia/Kolkata", "Asia/Jakarta", "America/New_York", "Europe/London", "Australia/Adelaide"]
    cases = [(rnd.randint(0, 2_000_000_000), rnd.choice(zones)) for _ in range(200)]
    rows = [(i, s, z) for i, (s, z) in enumerate(cases)]
    got = by_id(
        run(
            spark,
            """
        SELECT id, StartOfWeek(s * 1000, zone) AS sow, EndOfWeek(s * 1000, zone) AS eow,
               StartOfMonth(s, zone) AS som, EndOfMonth(s, zone) AS eom
        FROM t""",
            rows,
            "id INT, s BIGINT, zone STRING",
        )
    )

    def local_midnight(day: dt.date, zone) -> dt.datetime:
        return dt.datetime(day.year, day.month, day.day, tzinfo=zone)

    for i, (s, z) in enumerate(cases):
        zone = ZoneInfo(z)
        day = dt.datetime.fromtimestamp(s, zone).date()
        monday = (day + dt.timedelta(days=1)) - dt.timedelta(days=(day + dt.timedelta(days=1)).weekday())
        sunday = monday + dt.timedelta(days=6)
        first = day.replace(day=1)
        next_first = (first + dt.timedelta(days=32)).replace(day=1)
        expected = {
            "sow": int(local_midnight(monday, zone).timestamp() * 1000),
            "eow": int(local_midnight(sunday + dt.timedelta(days=1), zone).timestamp() * 1000) - 1,
            "som": int(local_midnight(first, zone).timestamp()),
            "eom": int(local_midnight(next_first, zone).timestamp()) - 1,
        }
        assert {k: got[i][k] for k in expected} == expected, (s, z, day)


def test_format_time_in_zone_follows_daggers_vectors_with_simple_date_format_patterns(spark):
    rows = [(0, 1607003114, "Asia/Kolkata"), (1, 1607003114, "Asia/Jakarta"), (2, 0, "UTC")]
    got = by_id(
        run(
            spark,
            """
        SELECT id,
               FormatTimeInZone(TimestampFromUnix(s), zone, 'hh:mm aa') AS hhmm,
               FormatTimeInZone(TimestampFromUnix(s), zone, 'yyyy/MM/dd') AS ymd,
               FormatTimeInZone(TimestampFromUnix(s), zone, 'hh:mm a') AS one_a,
               FormatTimeInZone(TimestampFromUnix(s), zone, 'EEE d MMM yyyy HH:mm:ss.SSS aaaa') AS long
        FROM t""",
            rows,
            "id INT, s BIGINT, zone STRING",
        )
    )
    # FormatTimeInZoneTest: Timestamp(1607003114000) = 2020-12-03T13:45:14Z
    assert (got[0]["hhmm"], got[1]["hhmm"], got[0]["ymd"]) == ("07:15 PM", "08:45 PM", "2020/12/03")
    # SimpleDateFormat takes AM/PM as any run of 'a'
    assert (got[0]["one_a"], got[2]["hhmm"]) == ("07:15 PM", "12:00 AM")
    assert got[0]["long"] == "Thu 3 Dec 2020 19:15:14.000 PM"


def test_format_time_in_zone_keeps_quoted_text_written_with_flinks_doubled_quote(spark):
    got = run(
        spark,
        """
        SELECT FormatTimeInZone(TimestampFromUnix(1607003114), 'UTC', 'yyyy-MM-dd''T''HH:mm:ss') AS iso,
               FormatTimeInZone(TimestampFromUnix(1607003114), 'UTC', 'h ''aa'' aaa') AS quoted
        FROM t""",
    )[0]
    assert (got["iso"], got["quoted"]) == ("2020-12-03T13:45:14", "1 aa PM")


def test_timestamp_from_unix_takes_the_absolute_value_of_epoch_seconds(spark):
    rows = [(0, 1554101494), (1, -1554101494), (2, 0), (3, None)]
    got = by_id(
        run(
            spark,
            "SELECT id, DATE_FORMAT(TimestampFromUnix(s), 'yyyy-MM-dd HH:mm:ss') AS ts FROM t",
            rows,
            "id INT, s BIGINT",
        )
    )
    # "2019-04-01 13:51:34 WIB" in TimestampFromUnixTest; the session runs in UTC
    assert {i: got[i]["ts"] for i in got} == {
        0: "2019-04-01 06:51:34",
        1: "2019-04-01 06:51:34",
        2: "1970-01-01 00:00:00",
        3: None,
    }


# ===================================================== time-series helpers (contracts section 5)
HOP = dt.datetime(2019, 7, 4, 7, 0, tzinfo=UTC)


def ema_reference(offsets_s, values, window, alpha) -> float:
    """dagger's ExponentialMovingAverage, written from its description: position
    p = window - 1 - whole minutes since the hop start (later sample wins a duplicate);
    sum v_p * alpha * (1 - alpha)^p, except the oldest position: v * (1 - alpha)^(window - 1)."""
    by_position = {}
    for off, v in zip(offsets_s, values):
        by_position[int(window) - 1 - int(off * 1000 / 60000)] = v
    total = 0.0
    for p, v in by_position.items():
        total += v * (1 - alpha) ** p if p == window - 1 else v * alpha * (1 - alpha) ** p
    return total


def test_exponential_moving_average_matches_daggers_vector_and_the_formula(spark):
    cases = [  # (offsets in seconds from the hop start, values, window, alpha)
        ([0, 60, 120, 300], [1.0, 4.0, 3.0, 7.0], 6.0, 0.2),  # ExponentialMovingAverageTest: 2.36256
        ([300, 0, 120, 60], [7.0, 1.0, 3.0, 4.0], 6.0, 0.2),  # order does not matter
        ([0, 30, 59], [1.0, 2.0, 5.0], 3.0, 0.5),  # same minute: the later sample wins
        ([], [], 6.0, 0.2),
        ([0, 60, 120, 180, 240, 299], [3.0, 1.0, 4.0, 1.0, 5.0, 9.0], 6.0, 0.3),
    ]
    rows = [
        (i, [HOP + dt.timedelta(seconds=o) for o in offs], vals, HOP, w, a)
        for i, (offs, vals, w, a) in enumerate(cases)
    ]
    got = by_id(
        run(
            spark,
            "SELECT id, ExponentialMovingAverage(ts, vs, hop, w, a) AS ema FROM t",
            rows,
            "id INT, ts ARRAY<TIMESTAMP>, vs ARRAY<DOUBLE>, hop TIMESTAMP, w DOUBLE, a DOUBLE",
        )
    )
    assert got[0]["ema"] == pytest.approx(2.36256, abs=1e-7)
    # the vector, from the formula: 7*0.2 + 3*0.2*0.8^3 + 4*0.2*0.8^4 + 1*0.8^5
    assert ema_reference(*cases[0]) == pytest.approx(2.36256, abs=1e-12)
    for i, case in enumerate(cases):
        assert got[i]["ema"] == pytest.approx(ema_reference(*case), rel=1e-12, abs=1e-12), case


LINEAR_TREND_CASES = [  # (offsets in seconds, values, n, expected)     LinearTrendTest
    ([0, 60, 120, 180, 240], [0, 2, 1, 4, 4], 5, 1.0),
    ([0, 120, 240], [2, 1, 4], 5, 0.4),
    ([60, 180], [2, 1], 5, -0.1),
    ([60], [2], 5, -0.2),
    ([], [], 5, 0.0),
    ([0, 60, 120, 180, 240], [2, 2, 2, 2, 2], 5, 0.0),
    ([60, 180, 300, 1140, 420, 480, 600, 660], [1, 1, 2, 1, 2, 2, 1, 1], 20, -0.030827067669172932),
    ([60, 180, 300, 420, 480, 600, 660, 660, 1140], [1, 1, 2, 2, 2, 1, 1, 1, 1], 20, -0.030827067669172932),
]


def test_linear_trend_follows_every_row_of_daggers_vector_table(spark):
    rows = [
        (i, [HOP + dt.timedelta(seconds=o) for o in offs], [float(v) for v in vals], HOP, n)
        for i, (offs, vals, n, _) in enumerate(LINEAR_TREND_CASES)
    ]
    got = by_id(
        run(
            spark,
            "SELECT id, LinearTrend(ts, vs, hop, n) AS slope FROM t",
            rows,
            "id INT, ts ARRAY<TIMESTAMP>, vs ARRAY<DOUBLE>, hop TIMESTAMP, n INT",
        )
    )
    for i, case in enumerate(LINEAR_TREND_CASES):
        assert got[i]["slope"] == pytest.approx(case[3], rel=1e-12, abs=1e-12), case


# ========================================= ArrayAggregate / ArrayOperate (contracts section 3)
def test_array_aggregate_and_array_operate_follow_daggers_vectors(spark):
    rows = [
        (
            [1, 2, 3],
            [1.3, 2.3, 3.3],
            [1, 2, 3],
            [1, 1, 1, 2, 3],
            ["a", "a", "b", "v", "a"],
            [1, 2, 1, 2, 1],
            [1.3, 2.1, 1.3, 0.1, 1.3],
            [],
        )
    ]
    got = run(
        spark,
        """
        SELECT ArrayAggregate(ints, 'average', 'Integer') AS int_avg,
               ArrayAggregate(dbls, 'average', 'double') AS dbl_avg,
               ArrayAggregate(longs, 'average', 'long') AS long_avg,
               ArrayAggregate(longs5, 'distinct.average', 'long') AS distinct_avg,
               ArrayAggregate(strs, 'distinct.count', 'other') AS distinct_count,
               ArrayAggregate(ints, 'sum', 'Int') AS int_sum,
               ArrayAggregate(longs5, 'distinct.sorted.sum', 'BigInt') AS chain_sum,
               ArrayAggregate(empty, 'average', 'Integer') AS empty_avg,
               ArrayOperate(strs, 'distinct', 'other') AS distinct_strs,
               ArrayOperate(ints5, 'distinct.sorted', 'int') AS sorted_ints,
               ArrayOperate(dbls5, 'distinct.sorted', 'double') AS sorted_dbls
        FROM t""",
        rows,
        "ints ARRAY<INT>, dbls ARRAY<DOUBLE>, longs ARRAY<BIGINT>, longs5 ARRAY<BIGINT>, "
        "strs ARRAY<STRING>, ints5 ARRAY<INT>, dbls5 ARRAY<DOUBLE>, empty ARRAY<INT>",
    )[0]
    assert got["int_avg"] == 2.0
    assert got["dbl_avg"] == pytest.approx(2.3, abs=1e-12)
    assert (got["long_avg"], got["distinct_avg"]) == (2.0, 2.0)
    assert got["distinct_count"] == 3
    assert (got["int_sum"], got["chain_sum"]) == (6, 6)
    assert got["empty_avg"] == 0.0  # OptionalDouble.orElse(0)
    assert sorted(got["distinct_strs"]) == ["a", "b", "v"]
    assert list(got["sorted_ints"]) == [1, 2]
    assert list(got["sorted_dbls"]) == [0.1, 1.3, 2.1]


@pytest.mark.parametrize(
    "call, message",
    [
        ("ArrayAggregate(strs, 'distinct.coun', 'other')", r"ArrayAggregate.*'coun'"),
        ("ArrayAggregate(strs, 'distinct.count', 'String')", r"no support for inputDataType: String"),
        ("ArrayOperate(strs, 'distinct.sort', 'other')", r"ArrayOperate.*'sort'"),
        ("ArrayAggregate(strs, 'sum', 'other')", r"ArrayAggregate.*'sum'"),  # Stream has no sum()
        ("ArrayAggregate(strs, op, 'other')", r"string literals"),
    ],
)
def test_array_functions_refuse_unknown_operations_and_input_types_when_translated(call, message):
    with pytest.raises(QueryError, match=message):
        translate(f"SELECT {call} AS x FROM t", ["t"])
