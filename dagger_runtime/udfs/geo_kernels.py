"""Vectorised geo kernels behind the S2Id, S2AreaInKm2 and GeoHash UDFs.

Each function works on whole numpy arrays at once (the only Python loops run
over the 30 S2 levels, the 8 lookup steps of the Hilbert curve or the 12
geohash characters, never over rows), so the Arrow pandas UDFs can call them
once per batch.

Behaviour is that of raystack/dagger's Java UDFs
(``dagger-functions/src/main/java/org/raystack/dagger/functions/udfs/scalar``):

``S2Id(Double latitude, Double longitude, Integer level)``
    ``Long.toString(S2CellId.fromLatLng(S2LatLng.fromDegrees(lat, lng)).parent(level).id())``
    with ``org.isuper:s2-geometry-library-java:0.0.1`` (Google's 2011 Java S2
    code).  That version keeps (s, t) in [-1, 1] (``uvToST`` is
    ``sqrt(1 + 3u) - 1`` and ``stToIJ`` is ``Math.round(m*s + (m - 0.5))`` with
    m = 2^29); for every double input these give exactly the same (i, j) as
    today's [0, 1] form (all the intermediate steps are exact), which is what
    the code below computes.  Ids are signed 64-bit values like Java's ``long``:
    faces 4 and 5 give negative ids.

``S2AreaInKm2(String s2id)``
    ``new S2Cell(new S2CellId(Long.parseLong(s2id))).exactArea() * 510072000
    / (4 * Math.PI)``, i.e. the *exact* area (two l'Huilier triangles) in
    steradians scaled so that the whole sphere is 510,072,000 km^2 (an earth
    radius of about 6371.0 km).

``GeoHash(Double latitude, Double longitude, Integer length)``
    ``com.github.davidmoten.geo.GeoHash.encodeHash(lat, lng, length)``
    (geo 0.7.6): ``length`` is the number of base-32 characters and must be
    1..12, latitude must lie in [-90, 90], the longitude is first brought into
    range with grumpy's ``Position.to180`` and then bisected with ``>=`` (a
    point exactly on a split goes to the upper half).

Null semantics (where Java would throw, or return a meaningless value, the
kernels report the row as invalid so the UDF returns SQL NULL):

* ``s2_cell_id``: invalid when lat or lng is NaN/None, lng is +-inf,
  ``|lat| > 90``, or the level is NaN, not an integer, or outside 0..30.
  Invalid rows hold 0 (``S2CellId.none()``; no valid cell has id 0), so
  ``valid = ids != 0``; ``return_valid=True`` also returns that mask.
  (Java throws a NullPointerException on a null argument and silently returns
  a cell of a reflected/garbage point for |lat| > 90, infinities, or levels
  outside 0..30.)  Longitudes outside [-180, 180] are valid and wrap, as in
  Java.
* ``s2_cell_id_str``: the decimal string, or None where invalid.
* ``parse_cell_ids``: ``Long.parseLong`` rules: optional ``+``/``-``, then one
  or more decimal digits (any Unicode BMP decimal digit, like
  ``Character.digit``), no blanks, value within the signed 64-bit range;
  anything else (None, NaN, '', ' 1', '1e3', unsigned values >= 2^63) is
  invalid.
* ``s2_cell_area_*``: NaN for ids that are not valid S2 cells
  (``S2CellId.isValid()`` false: face bits 6 or 7, or no level marker bit,
  e.g. 0).
* ``geohash``: None when lat is NaN or outside [-90, 90], lng is NaN/inf, or
  the length is NaN, not an integer, or outside 1..12.

Numerics: from the (x, y, z) point onwards every step uses only IEEE-exact
operations (+ - * / sqrt) in Java's order, so results equal Java's bit for bit;
the only possible difference is in the last bit of sin/cos/atan2/tan/atan,
which can move a point lying within ~1e-16 of a cell edge into the neighbour
leaf cell, and changes areas by ~1e-15 relative.
"""

from __future__ import annotations

import unicodedata

import numpy as np

__all__ = [
    "MAX_LEVEL",
    "TOTAL_EARTH_AREA_KM2",
    "s2_cell_id",
    "s2_cell_id_str",
    "parse_cell_ids",
    "s2_cell_is_valid",
    "s2_cell_level",
    "s2_cell_exact_area",
    "s2_cell_approx_area",
    "s2_cell_area_km2",
    "GEOHASH_MAX_LENGTH",
    "geohash",
]

MAX_LEVEL = 30
_POS_BITS = 2 * MAX_LEVEL + 1  # 61
_MAX_SIZE = 1 << MAX_LEVEL
_SWAP_MASK = 1
_INVERT_MASK = 2
_LOOKUP_BITS = 4

#: raystack/dagger S2AreaInKm2.TOTAL_EARTH_AREA_KM2 (the divisor is FACTOR=4 * PI)
TOTAL_EARTH_AREA_KM2 = 510072000

_U64 = np.uint64
_ONE = _U64(1)

# --------------------------------------------------------------------------
# Hilbert curve lookup tables (S2CellId.LOOKUP_POS / LOOKUP_IJ), built with
# numpy: key "iiiijjjjoo" -> "ppppppppoo" and back.
# --------------------------------------------------------------------------
_POS_TO_IJ = np.array([[0, 1, 3, 2], [0, 2, 3, 1], [3, 2, 0, 1], [3, 1, 0, 2]], dtype=np.int64)
_IJ_TO_POS = np.argsort(_POS_TO_IJ, axis=1).astype(np.int64)
_POS_TO_ORIENTATION = np.array([_SWAP_MASK, 0, 0, _INVERT_MASK | _SWAP_MASK], dtype=np.int64)


def _build_lookup_tables() -> tuple[np.ndarray, np.ndarray]:
    n = 1 << (2 * _LOOKUP_BITS + 2)
    key = np.arange(n, dtype=np.int64)
    i4 = key >> (_LOOKUP_BITS + 2)
    j4 = (key >> 2) & ((1 << _LOOKUP_BITS) - 1)
    orig = key & 3
    orientation = orig.copy()
    pos = np.zeros(n, dtype=np.int64)
    for b in range(_LOOKUP_BITS - 1, -1, -1):
        ij = (((i4 >> b) & 1) << 1) | ((j4 >> b) & 1)
        sub = _IJ_TO_POS[orientation, ij]
        pos = (pos << 2) | sub
        orientation = orientation ^ _POS_TO_ORIENTATION[sub]
    lookup_pos = (pos << 2) | orientation
    lookup_ij = np.empty(n, dtype=np.int64)
    lookup_ij[(pos << 2) | orig] = (i4 << (_LOOKUP_BITS + 2)) | (j4 << 2) | orientation
    return lookup_pos, lookup_ij


LOOKUP_POS, LOOKUP_IJ = _build_lookup_tables()
LOOKUP_POS.setflags(write=False)
LOOKUP_IJ.setflags(write=False)


# --------------------------------------------------------------------------
# input coercion
# --------------------------------------------------------------------------
def _as_float(x) -> np.ndarray:
    """Any array-like (numpy, pandas incl. nullable dtypes, list, scalar) ->
    float64 ndarray with NaN for missing values."""
    to_numpy = getattr(x, "to_numpy", None)
    if to_numpy is not None:
        try:
            return np.asarray(to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)
        except (TypeError, ValueError):
            pass
    arr = np.asarray(x)
    if arr.dtype == object:
        import pandas as pd  # only for None / pd.NA detection in object arrays

        missing = np.asarray(pd.isna(arr), dtype=bool)
        if missing.any():
            arr = arr.copy()
            arr[missing] = np.nan
    return arr.astype(np.float64)


def _as_cell_ids(cell_ids) -> np.ndarray:
    arr = np.asarray(cell_ids)
    if arr.dtype == np.uint64:
        return arr.view(np.int64)
    return arr.astype(np.int64)


def _integral_in(values: np.ndarray, lo: int, hi: int) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return (values >= lo) & (values <= hi) & (values == np.floor(values))


# --------------------------------------------------------------------------
# S2: lat/lng -> cell id
# --------------------------------------------------------------------------
def _leaf_face_ij(lat_deg: np.ndarray, lng_deg: np.ndarray):
    """S2LatLng.fromDegrees(...).toPoint() -> (face, i, j) of the leaf cell."""
    phi = lat_deg * (np.pi / 180)  # S1Angle.degrees: degrees * (Math.PI / 180)
    theta = lng_deg * (np.pi / 180)
    cosphi = np.cos(phi)
    x = np.cos(theta) * cosphi
    y = np.sin(theta) * cosphi
    z = np.sin(phi)

    # S2Projections.xyzToFace: largestAbsComponent, +3 when that component < 0
    ax, ay, az = np.abs(x), np.abs(y), np.abs(z)
    axis = np.where(ax > ay, np.where(ax > az, 0, 2), np.where(ay > az, 1, 2))
    comp = np.where(axis == 0, x, np.where(axis == 1, y, z))
    neg = comp < 0
    face = axis + 3 * neg

    # validFaceXyzToUv.  faces 0/1/2: (y/x, z/x) (-x/y, z/y) (-x/z, -y/z);
    # faces 3/4/5 are the same pairs swapped: (z/x, y/x) (z/y, -x/y) (-y/z, -x/z)
    n1 = np.where(axis == 0, y, -x)
    n2 = np.where(axis == 2, -y, z)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = n1 / comp
        b = n2 / comp
    u = np.where(neg, b, a)
    v = np.where(neg, a, b)
    return face, _uv_to_ij(u), _uv_to_ij(v)


def _uv_to_ij(u: np.ndarray) -> np.ndarray:
    """stToIJ(uvToST(u)) of the 2011 Java library, quadratic projection.

    uvToST: u >= 0 -> sqrt(1 + 3u) - 1, else 1 - sqrt(1 - 3u) (both exact
    subtractions); stToIJ: max(0, min(2m - 1, Math.round(m*s + (m - 0.5)))) with
    m = 2^29.  m*s + (m - 0.5) and the + 0.5 of Math.round are exact here, so
    floor() reproduces Math.round bit for bit.
    """
    r = np.sqrt(1 + 3 * np.abs(u))  # 1 - 3u == 1 + 3|u| exactly for u < 0
    s = np.where(u >= 0, r - 1, 1 - r)
    m = float(_MAX_SIZE // 2)
    rounded = np.floor((m * s + (m - 0.5)) + 0.5)
    return np.clip(rounded, 0, 2 * m - 1).astype(np.int64)


def _face_ij_to_leaf(face: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """S2CellId.fromFaceIJ, 4 bits of i and j per step (uint64 ids)."""
    mask = (1 << _LOOKUP_BITS) - 1
    bits = face & _SWAP_MASK
    pos = np.zeros(np.shape(face), dtype=_U64)
    for k in range(7, -1, -1):
        key = (
            bits
            + (((i >> (k * _LOOKUP_BITS)) & mask) << (_LOOKUP_BITS + 2))
            + (((j >> (k * _LOOKUP_BITS)) & mask) << 2)
        )
        value = LOOKUP_POS[key]
        pos |= (value >> 2).astype(_U64) << _U64(k * 2 * _LOOKUP_BITS)
        bits = value & (_SWAP_MASK | _INVERT_MASK)
    return (face.astype(_U64) << _U64(_POS_BITS)) | (pos << _ONE) | _ONE


def s2_cell_id(lat_deg, lng_deg, level, *, return_valid: bool = False):
    """S2 cell id (signed int64, Java ``long``) of each point at ``level``.

    ``S2CellId.fromLatLng(S2LatLng.fromDegrees(lat, lng)).parent(level).id()``.
    ``lat_deg``, ``lng_deg`` and ``level`` broadcast against each other; level
    may be a scalar or a per-row array.  Invalid rows (NaN/None inputs,
    |lat| > 90, infinite lng, level not an integer in 0..30) get id 0, which is
    never a valid cell, so ``valid = ids != 0``.  With ``return_valid=True``
    returns ``(ids, valid)``.
    """
    lat = _as_float(lat_deg)
    lng = _as_float(lng_deg)
    lvl = _as_float(level)
    lat, lng, lvl = np.broadcast_arrays(lat, lng, lvl)
    with np.errstate(invalid="ignore"):
        valid = (np.abs(lat) <= 90) & np.isfinite(lng) & _integral_in(lvl, 0, MAX_LEVEL)
    all_valid = bool(valid.all())
    if not all_valid:
        lat = np.where(valid, lat, 0.0)
        lng = np.where(valid, lng, 0.0)
        lvl = np.where(valid, lvl, MAX_LEVEL)
    face, i, j = _leaf_face_ij(lat, lng)
    leaf = _face_ij_to_leaf(face, i, j)
    # parent(level): lsb = 1L << 2*(30 - level); (id & -lsb) | lsb
    lsb = _ONE << (2 * (MAX_LEVEL - lvl.astype(np.int64))).astype(_U64)
    ids = ((leaf & ~(lsb - _ONE)) | lsb).view(np.int64)
    if not all_valid:
        ids = np.where(valid, ids, np.int64(0))
    if return_valid:
        return ids, valid
    return ids


def s2_cell_id_str(lat_deg, lng_deg, level) -> np.ndarray:
    """What SQL ``S2Id(lat, lng, level)`` returns: ``Long.toString`` of the
    signed id, as an object array of str, None where invalid (see s2_cell_id)."""
    ids, valid = s2_cell_id(lat_deg, lng_deg, level, return_valid=True)
    out = ids.astype(str).astype(object)
    out[~valid] = None
    return out


# --------------------------------------------------------------------------
# decimal strings -> ids (Long.parseLong)
# --------------------------------------------------------------------------
def _build_digit_table() -> np.ndarray:
    # Character.digit(ch, 10) for every UTF-16 code unit: Unicode decimal digits.
    table = np.full(0x10000, -1, dtype=np.int8)
    for cp in range(0x10000):
        d = unicodedata.decimal(chr(cp), -1) if not 0xD800 <= cp <= 0xDFFF else -1
        if d >= 0:
            table[cp] = d
    return table


_DIGIT = _build_digit_table()
# "-9223372036854775808" has 20 characters; longer strings (only valid with
# leading zeros) are cut here and re-parsed one by one on a slow path
_PARSE_WIDTH = 21


def _parse_long_scalar(text) -> tuple[int, bool]:
    if not isinstance(text, str):
        return 0, False
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body:
        return 0, False
    digits = []
    for ch in body:
        cp = ord(ch)
        if cp >= 0x10000 or _DIGIT[cp] < 0:
            return 0, False
        digits.append(int(_DIGIT[cp]))
    value = int("".join(map(str, digits)))
    if text[0] == "-":
        value = -value
    if not -(1 << 63) <= value < (1 << 63):
        return 0, False
    return value, True


def parse_cell_ids(strings) -> tuple[np.ndarray, np.ndarray]:
    """Parse decimal cell-id strings the way ``Long.parseLong`` does.

    Returns ``(ids int64, valid bool)``; invalid rows (None, NaN, empty, blanks,
    non-digits, out of the signed 64-bit range) hold 0.  Whether an id is a
    valid S2 cell is a separate question (``s2_cell_is_valid``).
    """
    to_numpy = getattr(strings, "to_numpy", None)
    try:
        arr = np.asarray(to_numpy(dtype=object) if to_numpy is not None else strings)
    except TypeError:  # e.g. a pyarrow array
        arr = np.asarray(strings)
    shape = arr.shape
    arr = np.ascontiguousarray(arr.reshape(-1))
    if arr.dtype.kind == "U" and arr.dtype.itemsize // 4 <= _PARSE_WIDTH:
        text = arr
    else:
        text = arr.astype(f"<U{_PARSE_WIDTH}")  # None -> 'None', nan -> 'nan': rejected below
    n = text.shape[0]
    width = text.dtype.itemsize // 4
    length = np.char.str_len(text) if n else np.zeros(0, dtype=np.int64)
    if width == 0:
        codes = np.zeros((n, 1), dtype=np.uint32)
        width = 1
    else:
        codes = text.view(np.uint32).reshape(n, width)

    first = codes[:, 0]
    signed = (first == ord("+")) | (first == ord("-"))
    negative = first == ord("-")
    start = signed.astype(np.int64)
    ok = length > start
    acc = np.zeros(n, dtype=_U64)
    over = np.zeros(n, dtype=bool)
    cut = _U64(922337203685477580)  # 2^63 // 10
    for k in range(int(length.max()) if n else 0):
        in_number = (k >= start) & (k < length)
        c = codes[:, k]
        digit = np.where(c < 0x10000, _DIGIT[np.minimum(c, 0xFFFF)], -1).astype(np.int64)
        ok &= ~in_number | (digit >= 0)
        d = np.where(in_number & (digit >= 0), digit, 0).astype(_U64)
        # magnitude may reach 2^63 (for Long.MIN_VALUE) but no further
        over |= in_number & ((acc > cut) | ((acc == cut) & (d > _U64(8))))
        acc = np.where(in_number & ~over, acc * _U64(10) + d, acc)
    limit = np.where(negative, _U64(1) << _U64(63), (_U64(1) << _U64(63)) - _ONE)
    ok &= ~over & (acc <= limit)
    value = np.where(negative, ~acc + _ONE, acc).view(np.int64)
    value = np.where(ok, value, np.int64(0))

    if text is not arr:  # rows that may have been cut at _PARSE_WIDTH characters
        long_rows = np.flatnonzero(length >= _PARSE_WIDTH)
        for r in long_rows:  # pathological input only (21+ characters)
            value[r], ok[r] = _parse_long_scalar(arr[r])
    return value.reshape(shape), ok.reshape(shape)


# --------------------------------------------------------------------------
# S2: cell id -> cell geometry and area
# --------------------------------------------------------------------------
def s2_cell_is_valid(cell_ids) -> np.ndarray:
    """S2CellId.isValid(): face < 6 and the level marker bit on an even position."""
    u = _as_cell_ids(cell_ids).view(_U64)
    lsb = u & (~u + _ONE)
    return ((u >> _U64(_POS_BITS)) < _U64(6)) & ((lsb & _U64(0x1555555555555555)) != _U64(0))


def s2_cell_level(cell_ids) -> np.ndarray:
    """Level 0..30 of each valid cell id (-1 for invalid ids)."""
    ids = _as_cell_ids(cell_ids)
    valid = s2_cell_is_valid(ids)
    u = np.where(valid, ids, np.int64(1)).view(_U64)
    lsb = (u & (~u + _ONE)).astype(np.float64)  # a power of two: exact
    trailing = np.frexp(lsb)[1].astype(np.int64) - 1
    return np.where(valid, MAX_LEVEL - trailing // 2, -1)


def _st_to_uv(s: np.ndarray) -> np.ndarray:
    """2011 Java S2Projections.stToUV (quadratic, s in [-1, 1])."""
    return np.where(s >= 0, (1 / 3.0) * ((1 + s) * (1 + s) - 1), (1 / 3.0) * (1 - (1 - s) * (1 - s)))


def _face_uv_to_xyz(face, u, v):
    conds = [face == 0, face == 1, face == 2, face == 3, face == 4]
    x = np.select(conds, [np.ones_like(u), -u, -u, -np.ones_like(u), v], default=v)
    y = np.select(conds, [u, np.ones_like(u), -v, -v, -np.ones_like(u)], default=u)
    z = np.select(conds, [v, v, np.ones_like(u), -u, -u], default=-np.ones_like(u))
    return x, y, z


def _normalize(p):
    x, y, z = p
    norm = np.sqrt(x * x + y * y + z * z)
    with np.errstate(divide="ignore"):
        inv = np.where(norm != 0, 1.0 / norm, norm)
    return x * inv, y * inv, z * inv


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _angle(a, b):
    cx, cy, cz = _cross(a, b)
    return np.arctan2(np.sqrt(cx * cx + cy * cy + cz * cz), a[0] * b[0] + a[1] * b[1] + a[2] * b[2])


def _triangle_area(a, b, c):
    """S2.area (l'Huilier, with Girard for very skinny triangles), as in Java."""
    sa = _angle(b, c)
    sb = _angle(c, a)
    sc = _angle(a, b)
    s = 0.5 * (sa + sb + sc)
    with np.errstate(invalid="ignore"):
        area = 4 * np.arctan(
            np.sqrt(
                np.maximum(
                    0.0, np.tan(0.5 * s) * np.tan(0.5 * (s - sa)) * np.tan(0.5 * (s - sb)) * np.tan(0.5 * (s - sc))
                )
            )
        )
    s2 = s * s
    dmin = s - np.maximum(sa, np.maximum(sb, sc))
    skinny = (s >= 3e-4) & (dmin < 1e-2 * s * s2 * s2)
    if skinny.any():
        idx = np.flatnonzero(skinny)
        pa, pb, pc = ([comp[idx] for comp in p] for p in (a, b, c))
        ab, bc, ac = _cross(pa, pb), _cross(pb, pc), _cross(pa, pc)  # girardArea: plain cross products
        girard = np.maximum(0.0, _angle(ab, ac) - _angle(ab, bc) + _angle(bc, ac))
        use = dmin[idx] < s[idx] * (0.1 * girard)
        area[idx[use]] = girard[use]
    return area


def _cell_vertices(ids: np.ndarray):
    """The four unit vertices (SW, SE, NE, NW) of each cell, as S2Cell builds them."""
    u = ids.view(_U64)
    face = (u >> _U64(_POS_BITS)).astype(np.int64)
    level = s2_cell_level(ids)
    # toFaceIJOrientation: 8 bits of position -> 4 bits of i and j per step
    bits = face & _SWAP_MASK
    i = np.zeros(ids.shape, dtype=np.int64)
    j = np.zeros(ids.shape, dtype=np.int64)
    for k in range(7, -1, -1):
        nbits = MAX_LEVEL - 7 * _LOOKUP_BITS if k == 7 else _LOOKUP_BITS
        chunk = ((u >> _U64(k * 2 * _LOOKUP_BITS + 1)) & _U64((1 << (2 * nbits)) - 1)).astype(np.int64)
        value = LOOKUP_IJ[bits + (chunk << 2)]
        i += (value >> (_LOOKUP_BITS + 2)) << (k * _LOOKUP_BITS)
        j += ((value >> 2) & ((1 << _LOOKUP_BITS) - 1)) << (k * _LOOKUP_BITS)
        bits = value & (_SWAP_MASK | _INVERT_MASK)
    cell_size = np.int64(1) << (MAX_LEVEL - level)
    uv = []
    for ij in (i, j):
        sij_lo = (ij & -cell_size) * 2 - _MAX_SIZE
        sij_hi = sij_lo + cell_size * 2
        uv.append((_st_to_uv((1.0 / _MAX_SIZE) * sij_lo), _st_to_uv((1.0 / _MAX_SIZE) * sij_hi)))
    (u0, u1), (v0, v1) = uv
    # getVertexRaw(k) = faceUvToXyz(face, uv[0][(k>>1) ^ (k&1)], uv[1][k>>1])
    verts = [_normalize(_face_uv_to_xyz(face, uu, vv)) for uu, vv in ((u0, v0), (u1, v0), (u1, v1), (u0, v1))]
    return verts, level


def _valid_ids(cell_ids):
    ids = _as_cell_ids(cell_ids)
    valid = s2_cell_is_valid(ids)
    # a harmless stand-in for invalid rows (face 0 leaf cell); they become NaN
    return np.where(valid, ids, np.int64(1)), valid


def s2_cell_exact_area(cell_ids) -> np.ndarray:
    """S2Cell.exactArea() in steradians (NaN for invalid ids)."""
    ids, valid = _valid_ids(cell_ids)
    (v0, v1, v2, v3), _ = _cell_vertices(ids)
    area = _triangle_area(v0, v1, v2) + _triangle_area(v0, v2, v3)
    return np.where(valid, area, np.nan)


def s2_cell_approx_area(cell_ids) -> np.ndarray:
    """S2Cell.approxArea() in steradians (NaN for invalid ids)."""
    ids, valid = _valid_ids(cell_ids)
    (v0, v1, v2, v3), level = _cell_vertices(ids)
    d1 = tuple(p - q for p, q in zip(v2, v0))
    d2 = tuple(p - q for p, q in zip(v3, v1))
    cx, cy, cz = _cross(d1, d2)
    flat = 0.5 * np.sqrt(cx * cx + cy * cy + cz * cz)
    area = flat * 2 / (1 + np.sqrt(1 - np.minimum((1 / np.pi) * flat, 1.0)))
    # level < 2: averageArea(level) = AVG_AREA (Pi/6) scaled by 2^(2*(1-level))
    average = np.ldexp(np.pi / 6, 2 * (1 - np.clip(level, 0, MAX_LEVEL)))
    area = np.where(level < 2, average, area)
    return np.where(valid, area, np.nan)


def s2_cell_area_km2(cell_ids) -> np.ndarray:
    """What SQL ``S2AreaInKm2(s2id)`` returns for already-parsed ids:
    ``exactArea() * 510072000 / (4 * Math.PI)``; NaN for invalid cell ids."""
    return (s2_cell_exact_area(cell_ids) * float(TOTAL_EARTH_AREA_KM2)) / (4.0 * np.pi)


# --------------------------------------------------------------------------
# geohash (com.github.davidmoten.geo.GeoHash.encodeHash)
# --------------------------------------------------------------------------
GEOHASH_MAX_LENGTH = 12
_BASE32 = np.frombuffer(b"0123456789bcdefghjkmnpqrstuvwxyz", dtype=np.uint8)
_HALF_BITS = 5 * GEOHASH_MAX_LENGTH // 2  # 30 bits of longitude, 30 of latitude


def _to180(d: np.ndarray) -> np.ndarray:
    """grumpy Position.to180: d<0 -> -to180(|d|); d>180 -> d - round(floor((d+180)/360))*360
    (the product in Java long arithmetic)."""
    a = np.abs(d)
    f = np.floor((a + 180) / 360.0)
    # Math.round saturates at Long.MAX_VALUE; 2^63 - 1024 is the largest double below 2^63
    n = np.where(f >= 2.0**63, np.iinfo(np.int64).max, np.minimum(f, 2.0**63 - 1024).astype(np.int64))
    with np.errstate(over="ignore"):
        shifted = a - (n * np.int64(360)).astype(np.float64)  # long multiply wraps like Java
    r = np.where(a > 180, shifted, a)
    return np.where(d < 0, -r, r)


def _bisect(value: np.ndarray, lo: float, hi: float, bits: int) -> np.ndarray:
    """Index of the interval the repeated ``value >= mid`` bisection of [lo, hi]
    ends in after ``bits`` steps.  The split points lo + k*(hi-lo)/2^bits are
    exact doubles, so the float estimate is corrected against them exactly."""
    top = (1 << bits) - 1
    span = hi - lo
    step = span / (1 << bits)  # a power-of-two fraction of span: exact
    est = np.clip(np.floor((value - lo) / step), 0, top)
    q = est.astype(np.int64)

    def split(k):
        return lo + k.astype(np.float64) * step  # exact

    q = np.where((q > 0) & (value < split(q)), q - 1, q)
    q = np.where((q < top) & (value >= split(q + 1)), q + 1, q)
    return q.astype(_U64)


def _spread(x: np.ndarray) -> np.ndarray:
    """Move bit b of a 32-bit value to bit 2b."""
    x = (x | (x << _U64(16))) & _U64(0x0000FFFF0000FFFF)
    x = (x | (x << _U64(8))) & _U64(0x00FF00FF00FF00FF)
    x = (x | (x << _U64(4))) & _U64(0x0F0F0F0F0F0F0F0F)
    x = (x | (x << _U64(2))) & _U64(0x3333333333333333)
    x = (x | (x << _U64(1))) & _U64(0x5555555555555555)
    return x


def geohash(lat, lng, precision) -> np.ndarray:
    """Base-32 geohash strings of ``precision`` characters (1..12), as
    ``GeoHash(lat, lng, length)`` / davidmoten ``encodeHash(lat, lng, length)``.

    Arguments broadcast; precision may be a scalar or per row.  Returns an
    object array of str, None where invalid (NaN/None inputs, lat outside
    [-90, 90], infinite lng, precision not an integer in 1..12)."""
    lat = _as_float(lat)
    lng = _as_float(lng)
    prec = _as_float(precision)
    lat, lng, prec = np.broadcast_arrays(lat, lng, prec)
    shape = lat.shape
    lat, lng, prec = lat.reshape(-1), lng.reshape(-1), prec.reshape(-1)
    with np.errstate(invalid="ignore"):
        valid = (lat >= -90) & (lat <= 90) & np.isfinite(lng) & _integral_in(prec, 1, GEOHASH_MAX_LENGTH)
    lat = np.where(valid, lat, 0.0)
    lng = _to180(np.where(valid, lng, 0.0))
    length = np.where(valid, prec, GEOHASH_MAX_LENGTH).astype(np.int64)

    # 60 bits: longitude takes the even bits (from the top), latitude the odd ones
    code = (_spread(_bisect(lng, -180.0, 180.0, _HALF_BITS)) << _ONE) | _spread(_bisect(lat, -90.0, 90.0, _HALF_BITS))
    chars = np.empty((lat.shape[0], GEOHASH_MAX_LENGTH), dtype=np.uint8)
    for c in range(GEOHASH_MAX_LENGTH):
        idx = (code >> _U64(5 * (GEOHASH_MAX_LENGTH - 1 - c))) & _U64(31)
        chars[:, c] = np.where(c < length, _BASE32[idx.astype(np.intp)], 0)  # NUL pads are dropped by 'S'
    out = chars.view(f"S{GEOHASH_MAX_LENGTH}").reshape(-1).astype(f"U{GEOHASH_MAX_LENGTH}").astype(object)
    out[~valid] = None
    return out.reshape(shape)
