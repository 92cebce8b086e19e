"""The vectorised geo kernels against independent references.

S2 results are checked against s2sphere (an independent pure-Python port of
S2, one point at a time), the geohash against published vectors and a small
scalar encoder written here from the geohash description, and both against the
test vectors in raystack/dagger's own Java tests (S2IdTest, S2AreaInKm2Test,
GeoHashTest).
"""

import math

import numpy as np
import pandas as pd
import pytest
import s2sphere

from dagger_runtime.udfs.geo_kernels import (
    geohash,
    parse_cell_ids,
    s2_cell_approx_area,
    s2_cell_area_km2,
    s2_cell_exact_area,
    s2_cell_id,
    s2_cell_id_str,
    s2_cell_is_valid,
    s2_cell_level,
)

KM2_PER_STERADIAN = 510072000 / (4 * math.pi)  # dagger's S2AreaInKm2 scale
JAKARTA = (-6.170024, 106.8243203)  # the point in dagger's S2IdTest / GeoHashTest


# ---------------------------------------------------------------- references
def to_signed(unsigned_id: int) -> int:
    return unsigned_id - (1 << 64) if unsigned_id >= (1 << 63) else unsigned_id


def s2sphere_cell(lat: float, lng: float, level: int) -> s2sphere.CellId:
    return s2sphere.CellId.from_lat_lng(s2sphere.LatLng.from_degrees(lat, lng)).parent(int(level))


def s2sphere_ids(lats, lngs, levels) -> np.ndarray:
    return np.array([to_signed(s2sphere_cell(a, b, c).id()) for a, b, c in zip(lats, lngs, levels)], dtype=np.int64)


BASE32 = "0123456789bcdefghjkmnpqrstuvwxyz"


def to180(d: float) -> float:
    """grumpy Position.to180, which davidmoten's encodeHash applies first."""
    if d < 0:
        return -to180(-d)
    if d > 180:
        return d - math.floor((d + 180) / 360.0) * 360
    return d


def reference_geohash(lat: float, lng: float, length: int) -> str:
    """Textbook geohash: alternately halve the longitude and latitude ranges
    (longitude first, upper half on >=), 5 bits per base-32 character."""
    lng = to180(lng)
    lat_range, lng_range = [-90.0, 90.0], [-180.0, 180.0]
    chars, value, nbits, use_lng = [], 0, 0, True
    while len(chars) < length:
        rng, x = (lng_range, lng) if use_lng else (lat_range, lat)
        mid = (rng[0] + rng[1]) / 2
        if x >= mid:
            value, rng[0] = value * 2 + 1, mid
        else:
            value, rng[1] = value * 2, mid
        use_lng = not use_lng
        nbits += 1
        if nbits == 5:
            chars.append(BASE32[value])
            value, nbits = 0, 0
    return "".join(chars)


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def random_points():
    rng = np.random.default_rng(20240601)
    n = 3000
    lat = np.degrees(np.arcsin(rng.uniform(-1.0, 1.0, n)))  # uniform on the sphere
    lng = rng.uniform(-180.0, 180.0, n)
    level = rng.integers(0, 31, n)
    return lat, lng, level


SPECIAL_POINTS = [
    (90.0, 0.0),
    (90.0, 123.4),
    (-90.0, 0.0),
    (-90.0, -77.7),  # poles
    (0.0, 180.0),
    (0.0, -180.0),
    (45.0, 180.0),
    (-45.0, -180.0),  # antimeridian
    (12.5, 179.9999999999),
    (-12.5, -179.9999999999),
    (60.0, 180.0),
    (0.0, 0.0),
    (0.0, 90.0),
    (0.0, -90.0),  # face centres
    (0.0, 45.0),
    (0.0, -135.0),
    (45.0, 0.0),
    (-45.0, 90.0),  # face edges
    (35.26438968275466, 45.0),
    (-35.26438968275466, -135.0),  # cube corners
    (89.9999999, 45.0),
    (-89.9999999, 10.0),
    JAKARTA,
]


# ----------------------------------------------------------------- S2 cell id
def test_the_point_from_daggers_s2id_test_gets_daggers_level_13_id():
    assert s2_cell_id(*JAKARTA, 13) == 3344474489181175808
    assert list(s2_cell_id_str([JAKARTA[0]], [JAKARTA[1]], 13)) == ["3344474489181175808"]


def test_random_points_at_per_row_levels_get_the_same_ids_as_s2sphere(random_points):
    lat, lng, level = random_points
    ids = s2_cell_id(lat, lng, level)
    assert ids.dtype == np.int64
    np.testing.assert_array_equal(ids, s2sphere_ids(lat, lng, level))


def test_random_points_reach_all_six_faces_and_faces_four_and_five_are_negative(random_points):
    lat, lng, _ = random_points
    ids = s2_cell_id(lat, lng, 30)
    faces = np.array([s2sphere_cell(a, b, 30).face() for a, b in zip(lat, lng)])
    assert set(faces.tolist()) == {0, 1, 2, 3, 4, 5}
    np.testing.assert_array_equal(ids < 0, faces >= 4)


def test_poles_antimeridian_face_edges_and_cube_corners_match_s2sphere_at_every_level():
    levels = np.arange(31)
    for lat, lng in SPECIAL_POINTS:
        ids = s2_cell_id(lat, lng, levels)
        np.testing.assert_array_equal(ids, s2sphere_ids([lat] * 31, [lng] * 31, levels), err_msg=f"{lat}, {lng}")


def test_a_scalar_level_applies_to_every_row(random_points):
    lat, lng, _ = random_points
    np.testing.assert_array_equal(s2_cell_id(lat[:200], lng[:200], 7), s2sphere_ids(lat[:200], lng[:200], [7] * 200))


def test_longitudes_beyond_180_degrees_wrap_around_as_in_s2():
    lat = np.array([10.0, 10.0, -33.3, 51.5, 0.5])
    lng = np.array([190.0, -190.0, 360.0, 540.25, -1000.5])
    np.testing.assert_array_equal(s2_cell_id(lat, lng, 20), s2sphere_ids(lat, lng, [20] * 5))


def test_invalid_points_and_levels_give_id_zero_and_a_false_mask():
    lat = np.array([np.nan, 1.0, 1.0, 90.0001, -91.0, 1.0, 1.0, 1.0, 1.0, 1.0, 90.0])
    lng = np.array([1.0, np.nan, np.inf, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -np.inf, 1.0])
    lvl = np.array([10, 10, 10, 10, 10, -1, 31, np.nan, 12.5, 10, 30])
    ids, valid = s2_cell_id(lat, lng, lvl, return_valid=True)
    assert valid.tolist() == [False] * 10 + [True]
    assert ids[:10].tolist() == [0] * 10
    assert ids[10] == to_signed(s2sphere_cell(90.0, 1.0, 30).id())
    strings = s2_cell_id_str(lat, lng, lvl)
    assert strings[:10].tolist() == [None] * 10
    assert strings[10] == str(ids[10])


def test_nulls_in_pandas_and_object_inputs_are_invalid_rows():
    lat = pd.Series([JAKARTA[0], None, JAKARTA[0]], dtype="Float64")
    lng = np.array([JAKARTA[1], JAKARTA[1], None], dtype=object)
    level = pd.Series([13, 13, 13], dtype="Int64")
    assert s2_cell_id_str(lat, lng, level).tolist() == ["3344474489181175808", None, None]
    assert s2_cell_id(JAKARTA[0], JAKARTA[1], pd.Series([13, None], dtype="Int64")).tolist() == [3344474489181175808, 0]


def test_s2id_strings_are_the_signed_decimal_ids(random_points):
    lat, lng, level = random_points
    expected = [str(v) for v in s2sphere_ids(lat[:300], lng[:300], level[:300]).tolist()]
    assert s2_cell_id_str(lat[:300], lng[:300], level[:300]).tolist() == expected


# ------------------------------------------------------------ parsing ids
def test_cell_id_strings_round_trip_through_parse(random_points):
    lat, lng, level = random_points
    expected = s2sphere_ids(lat, lng, level)
    ids, valid = parse_cell_ids(np.array([str(v) for v in expected.tolist()], dtype=object))
    assert valid.all()
    np.testing.assert_array_equal(ids, expected)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("3267730965564227584", 3267730965564227584),
        ("-6917529027641081856", -6917529027641081856),
        ("+42", 42),
        ("00000123", 123),
        ("9223372036854775807", 9223372036854775807),
        ("-9223372036854775808", -9223372036854775808),
        ("0" * 40 + "7", 7),
        ("\u0661\u0662\u0663", 123),  # Arabic-Indic digits: Character.digit accepts them
        ("9223372036854775808", None),  # unsigned ids (>= 2^63) do not fit a Java long
        ("-9223372036854775809", None),
        ("13835058055282163712", None),
        ("99999999999999999999999", None),
        ("", None),
        ("-", None),
        ("+", None),
        (" 12", None),
        ("12 ", None),
        ("1_000", None),
        ("1e3", None),
        ("0x10", None),
        ("12a", None),
        ("--1", None),
        (None, None),
        (float("nan"), None),
    ],
)
def test_parse_cell_ids_accepts_exactly_what_java_long_parselong_accepts(text, expected):
    ids, valid = parse_cell_ids(np.array([text, "5"], dtype=object))
    assert valid[1] and ids[1] == 5
    if expected is None:
        assert not valid[0] and ids[0] == 0
    else:
        assert valid[0] and ids[0] == expected


def test_parse_cell_ids_takes_pandas_string_series_with_missing_values():
    ids, valid = parse_cell_ids(pd.Series(["3344474489181175808", None, "x"], dtype="string"))
    assert valid.tolist() == [True, False, False]
    assert ids.tolist() == [3344474489181175808, 0, 0]


# ------------------------------------------------------------------- areas
@pytest.fixture(scope="module")
def random_cells(random_points):
    lat, lng, level = random_points
    cells = [s2sphere_cell(a, b, c) for a, b, c in zip(lat[:1500], lng[:1500], level[:1500])]
    # plus every level 0..30 around a few special points
    cells += [s2sphere_cell(a, b, lv) for a, b in SPECIAL_POINTS[::3] for lv in range(31)]
    ids = np.array([to_signed(c.id()) for c in cells], dtype=np.int64)
    return ids, [s2sphere.Cell(c) for c in cells]


def test_exact_area_matches_s2sphere_cell_exact_area(random_cells):
    ids, cells = random_cells
    np.testing.assert_allclose(s2_cell_exact_area(ids), [c.exact_area() for c in cells], rtol=1e-9, atol=0)


def test_approx_area_matches_s2sphere_cell_approx_area(random_cells):
    ids, cells = random_cells
    np.testing.assert_allclose(s2_cell_approx_area(ids), [c.approx_area() for c in cells], rtol=1e-9, atol=0)


def test_area_in_km2_is_the_exact_area_on_an_earth_of_510072000_km2(random_cells):
    ids, cells = random_cells
    expected = [c.exact_area() * 510072000 / (4 * math.pi) for c in cells]
    np.testing.assert_allclose(s2_cell_area_km2(ids), expected, rtol=1e-9, atol=0)


def test_the_cell_from_daggers_s2area_test_has_daggers_area():
    ids, valid = parse_cell_ids(["3267730965564227584"])
    assert valid[0]
    assert s2_cell_area_km2(ids)[0] == pytest.approx(909.97058, abs=1e-4)


def test_the_six_face_cells_add_up_to_the_whole_earth():
    faces = np.array([to_signed(s2sphere.CellId.from_face_pos_level(f, 0, 0).id()) for f in range(6)], dtype=np.int64)
    assert s2_cell_level(faces).tolist() == [0] * 6
    assert s2_cell_area_km2(faces).sum() == pytest.approx(510072000, rel=1e-12)


def test_four_children_add_up_to_their_parent(random_points):
    lat, lng, _ = random_points
    for level in range(0, 25, 3):
        parents = [s2sphere_cell(a, b, level) for a, b in zip(lat[:20], lng[:20])]
        children = np.array([[to_signed(c.id()) for c in p.children()] for p in parents], dtype=np.int64)
        parent_area = s2_cell_exact_area(np.array([to_signed(p.id()) for p in parents], dtype=np.int64))
        np.testing.assert_allclose(s2_cell_exact_area(children).sum(axis=1), parent_area, rtol=1e-8)


def test_unsigned_uint64_ids_give_the_same_areas_as_signed_ones(random_cells):
    ids, _ = random_cells
    np.testing.assert_array_equal(s2_cell_area_km2(ids.view(np.uint64)), s2_cell_area_km2(ids))


def test_ids_that_are_not_s2_cells_have_nan_area_and_level_minus_one():
    bad = np.array([0, (1 << 64) - 1, 2, (6 << 61) | (1 << 60), 7 << 61, 3344474489181175808], dtype=np.uint64).view(
        np.int64
    )
    assert s2_cell_is_valid(bad).tolist() == [False] * 5 + [True]
    assert s2_cell_level(bad).tolist() == [-1] * 5 + [13]
    area = s2_cell_area_km2(bad)
    assert np.isnan(area[:5]).all() and area[5] > 0
    assert np.isnan(s2_cell_approx_area(bad)[:5]).all()


# ----------------------------------------------------------------- geohash
@pytest.mark.parametrize(
    "lat, lng, length, expected",
    [
        (57.64911, 10.40744, 11, "u4pruydqqvj"),  # Wikipedia
        (42.6, -5.6, 5, "ezs42"),  # Wikipedia
        (JAKARTA[0], JAKARTA[1], 6, "qqguyu"),  # dagger's GeoHashTest
        (0.0, 0.0, 12, "s00000000000"),
        (-90.0, -180.0, 12, "000000000000"),
        (90.0, 180.0, 12, "zzzzzzzzzzzz"),
    ],
)
def test_known_geohashes_are_reproduced(lat, lng, length, expected):
    assert geohash(lat, lng, length) == expected
    assert geohash([lat], [lng], [length]).tolist() == [expected]


def test_random_points_at_every_length_match_a_scalar_geohash_encoder(random_points):
    lat, lng, _ = random_points
    rng = np.random.default_rng(5)
    length = rng.integers(1, 13, lat.size)
    expected = [reference_geohash(a, b, int(c)) for a, b, c in zip(lat, lng, length)]
    assert geohash(lat, lng, length).tolist() == expected


def test_points_exactly_on_bisection_lines_go_to_the_upper_half():
    rng = np.random.default_rng(11)
    # multiples of 180/2^k and 360/2^k lie exactly on geohash cell edges
    lat = rng.integers(0, 2**15 + 1, 2000) * (180.0 / 2**15) - 90.0
    lng = rng.integers(0, 2**15 + 1, 2000) * (360.0 / 2**15) - 180.0
    # and the doubles just either side of such edges, at the finest (12-char) level
    fine_lat = rng.integers(1, 2**30, 2000) * (180.0 / 2**30) - 90.0
    fine_lng = rng.integers(1, 2**30, 2000) * (360.0 / 2**30) - 180.0
    lat = np.concatenate([lat, np.nextafter(fine_lat, -np.inf), np.nextafter(fine_lat, np.inf), fine_lat])
    lng = np.concatenate([lng, np.nextafter(fine_lng, -np.inf), np.nextafter(fine_lng, np.inf), fine_lng])
    length = np.concatenate([rng.integers(1, 13, 2000), np.full(6000, 12)])
    expected = [reference_geohash(a, b, int(c)) for a, b, c in zip(lat, lng, length)]
    assert geohash(lat, lng, length).tolist() == expected


def test_longitudes_beyond_180_degrees_are_wrapped_first():
    lng = np.array([190.0, -190.0, 540.0, -540.0, 360.0, 725.125, -1e7 + 0.3])
    lat = np.full(lng.size, 33.3)
    assert geohash(lat, lng, 9).tolist() == [reference_geohash(33.3, x, 9) for x in lng]
    assert geohash(33.3, 190.0, 9) == geohash(33.3, -170.0, 9)


def test_shorter_geohashes_are_prefixes_of_longer_ones(random_points):
    lat, lng, _ = random_points
    full = geohash(lat[:100], lng[:100], 12)
    for length in range(1, 12):
        assert geohash(lat[:100], lng[:100], length).tolist() == [h[:length] for h in full]


def test_invalid_geohash_inputs_give_none():
    lat = np.array([np.nan, 90.5, -90.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 90.0])
    lng = np.array([1.0, 1.0, 1.0, np.nan, np.inf, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    length = np.array([5, 5, 5, 5, 5, 0, 13, -1, np.nan, 2.5, 5])
    out = geohash(lat, lng, length)
    assert out[:10].tolist() == [None] * 10
    assert out[10] == reference_geohash(90.0, 1.0, 5)
    assert geohash(pd.Series([1.0, None], dtype="Float64"), 1.0, 4).tolist() == [reference_geohash(1.0, 1.0, 4), None]
