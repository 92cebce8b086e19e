"""Traffic for any message of a descriptor set, steered by per-field hints.

    gen = MessageGenerator(registry.load(), "gojek.esb.booking.BookingLogMessage", hints={
        "lat": {"lat": "jakarta"}, "long": {"lng": "jakarta"},
        "status": {"enum": {"COMPLETED": 6, "CREATED": 3, "CUSTOMER_CANCELLED": 1}},
        "driver_id": {"pool": {"prefix": "d", "size": 100}},
        "total_fare": {"range": [10000, 90000], "decimals": 2},
        "event_timestamp": {"now": {"jitter_ms": 500}},
    }, seed=7)
    value, facts = gen.make(index=0, now=now_ms)

`value` is the encoded message; `facts` the same values as plain Python, nested like the message
(enums by name, Timestamp and Duration as integer milliseconds, wrappers as their inner value,
float fields as the float32 value the wire carries), so a drill computes its expected aggregates
from the facts without decoding anything. The same seed and index give the same values; only
Timestamps that follow `now` change with it.

Without a hint a field gets a value by its type: strings `<field>-<0..999>`, small non-negative
integers, floats in [0, 1000), booleans, enums uniform over their values except a first value
numbered 0 (UNKNOWN/UNSPECIFIED-like) when others exist, nested messages to `max_depth` levels,
0..3 elements for repeated and map fields, Timestamps at `now`, one member of each oneof.

Hints are keyed by dotted field path ("pickup.latitude", a map's "metadata.key" and
"metadata.value"); a repeated field's hint applies to each element. Kinds (one per field, plus the
modifiers `weights`, `decimals`, `count`):

    {"lat": CITY} / {"lng": CITY}     inside the city's bounding box (CITIES); CITY is a name, a
                                      list of names or {name: weight}; the lat and lng fields of one
                                      message instance always fall in the same city
    {"enum": {NAME: weight, ...}}     only these values, in these proportions
    {"pool": {"prefix": "d", "size": 100}}   ids d0..d99 (integers 0..99 for integer fields)
    {"range": [lo, hi]}               integers inclusive, floats uniform (+ "decimals": n)
    {"choice": [a, b], "weights": [3, 1]}
    {"const": v}
    {"now": true} / {"now": {"jitter_ms": 500}}   Timestamps: now, or now +- a uniform jitter
    {"count": [lo, hi]}               elements of a repeated or map field

A hint that does not fit the descriptor raises HintError, naming the path and what is wrong.

Speed: one closure per field is built once, here; a message costs its closures, one seeding of a
random.Random (~8 us) and protobuf's upb (C) serializer; pure-Python protobuf is several times slower.
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
import random
import struct
import time
from typing import Any, Callable, NamedTuple

from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from dagger_runtime.suggest import closest

__all__ = ["CITIES", "Generated", "HintError", "MessageGenerator", "fact", "now_ms"]

# (lat_min, lat_max, lng_min, lng_max): the built-up area of each city, roughly
CITIES: dict[str, tuple[float, float, float, float]] = {
    "jakarta": (-6.37, -6.09, 106.69, 106.97),
    "bandung": (-6.97, -6.85, 107.55, 107.70),
    "surabaya": (-7.35, -7.21, 112.63, 112.80),
    "bangkok": (13.62, 13.90, 100.42, 100.72),
    "singapore": (1.26, 1.45, 103.64, 103.99),
    "ho-chi-minh": (10.70, 10.88, 106.60, 106.78),
}

KINDS = ("lat", "lng", "enum", "pool", "range", "choice", "const", "now", "count")
MODIFIERS = {"weights": "choice", "decimals": "range"}

TIMESTAMP = "google.protobuf.Timestamp"
DURATION = "google.protobuf.Duration"
WRAPPERS = {
    f"google.protobuf.{n}Value"
    for n in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
}

_T = FieldDescriptor
_INT_BOUNDS = {
    _T.TYPE_INT32: (-(2**31), 2**31 - 1),
    _T.TYPE_SINT32: (-(2**31), 2**31 - 1),
    _T.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    _T.TYPE_INT64: (-(2**63), 2**63 - 1),
    _T.TYPE_SINT64: (-(2**63), 2**63 - 1),
    _T.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    _T.TYPE_UINT32: (0, 2**32 - 1),
    _T.TYPE_FIXED32: (0, 2**32 - 1),
    _T.TYPE_UINT64: (0, 2**64 - 1),
    _T.TYPE_FIXED64: (0, 2**64 - 1),
}
_FLOAT32 = struct.Struct("<f")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_F32_MAX = 3.4028234663852886e38


class HintError(ValueError):
    """A hint that does not fit the message: unknown path, wrong kind for the field's type, bad values."""


class Generated(NamedTuple):
    value: bytes
    facts: dict


def now_ms(now: int | dt.datetime | None = None) -> int:
    """Epoch milliseconds of `now` (an int is taken as milliseconds already; None is the clock)."""
    if now is None:
        return time.time_ns() // 1_000_000
    if isinstance(now, dt.datetime):
        if now.tzinfo is None:
            raise ValueError(f"now={now!r} has no time zone; give an aware datetime (UTC) or epoch milliseconds")
        return (now - _EPOCH) // dt.timedelta(milliseconds=1)  # exact: no float rounding
    if isinstance(now, bool) or not isinstance(now, int):
        raise TypeError(f"now must be epoch milliseconds (int), an aware datetime or None, not {now!r}")
    return now


def fact(facts: dict, path: str, default: Any = None) -> Any:
    """The value at a dotted path of a facts dict, or `default` when a part of it is absent."""
    value: Any = facts
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return default
        value = value[part]
    return value


def _f32(x: float) -> float:
    return _FLOAT32.unpack(_FLOAT32.pack(x))[0]


def _is_repeated(field: FieldDescriptor) -> bool:
    return field.label == FieldDescriptor.LABEL_REPEATED


def _is_map(field: FieldDescriptor) -> bool:
    return field.type == _T.TYPE_MESSAGE and _is_repeated(field) and field.message_type.GetOptions().map_entry


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _did_you_mean(name: str, known: list[str]) -> str:
    close = closest(name, known)
    if close:
        return "; did you mean " + " or ".join(close) + "?"
    return f"; it has {', '.join(known[:12])}{', ...' if len(known) > 12 else ''}"


def _weights(path: str, what: str, weights: Any, n: int | None = None) -> list[float]:
    """Validated weights: numbers >= 0, finite, not all zero (and n of them when n is given)."""
    items = list(weights.items()) if isinstance(weights, dict) else list(enumerate(weights or []))
    if n is not None and len(items) != n:
        raise HintError(f"hint for {path!r}: {what} has {len(items)} weights for {n} values")
    out = []
    for name, w in items:
        if not _is_number(w) or not math.isfinite(w) or w < 0:
            raise HintError(f"hint for {path!r}: {what}: weight {w!r} for {name!r} is not a finite number >= 0")
        out.append(float(w))
    if not out or sum(out) <= 0:
        raise HintError(f"hint for {path!r}: {what}: the weights add up to zero; give at least one a weight > 0")
    return out


def _picker(values: list, weights: list[float] | None) -> Callable[[random.Random], Any]:
    """A draw from values (uniform, or by weights) as one closure, its cumulative weights precomputed."""
    if len(values) == 1:
        only = values[0]
        return lambda rng: only
    if weights is None or len(set(weights)) == 1:
        n = len(values)
        return lambda rng: values[int(rng.random() * n)]
    cum, total = [], 0.0
    for w in weights:
        total += w
        cum.append(total)

    hi = len(values) - 1
    return lambda rng: values[min(bisect.bisect_right(cum, rng.random() * total), hi)]


class _Leaf:
    """How one scalar-like field (or one element of a repeated one) is typed: enough to check hints."""

    def __init__(self, field: FieldDescriptor):
        self.field = field
        t = field.type
        self.message = field.message_type.full_name if t == _T.TYPE_MESSAGE else None
        # a wrapper is generated and hinted as its inner value
        inner = field.message_type.fields_by_name["value"] if self.message in WRAPPERS else field
        self.type = inner.type
        self.enum = inner.enum_type if inner.type == _T.TYPE_ENUM else None
        self.int_bounds = _INT_BOUNDS.get(inner.type)
        self.is_float = inner.type in (_T.TYPE_FLOAT, _T.TYPE_DOUBLE)

    @property
    def label(self) -> str:
        if self.message in (TIMESTAMP, DURATION) or self.message in WRAPPERS:
            return self.message
        if self.enum is not None:
            return f"enum {self.enum.full_name}"
        return {
            _T.TYPE_STRING: "string",
            _T.TYPE_BYTES: "bytes",
            _T.TYPE_BOOL: "bool",
            _T.TYPE_FLOAT: "float",
            _T.TYPE_DOUBLE: "double",
        }.get(self.type) or _type_name(self.type)

    def coerce(self, path: str, v: Any, what: str) -> tuple[Any, Any]:
        """(wire value, fact value) of a literal from a hint, or HintError if it does not fit."""
        bad = HintError(f"hint for {path!r}: {what} {v!r} does not fit a {self.label} field")
        if self.message in (TIMESTAMP, DURATION):
            if isinstance(v, bool) or not isinstance(v, int):
                raise HintError(f"hint for {path!r}: {what} {v!r}: a {self.message} is given as integer milliseconds")
            return v, v
        if self.enum is not None:
            names = [e.name for e in self.enum.values]
            if isinstance(v, str) and v in self.enum.values_by_name:
                return self.enum.values_by_name[v].number, v
            if isinstance(v, int) and not isinstance(v, bool) and v in self.enum.values_by_number:
                return v, self.enum.values_by_number[v].name
            raise HintError(
                f"hint for {path!r}: {self.enum.full_name} has no value {v!r}"
                + (_did_you_mean(v, names) if isinstance(v, str) else f"; it has {', '.join(names)}")
            )
        if self.type == _T.TYPE_STRING:
            if not isinstance(v, str):
                raise bad
            return v, v
        if self.type == _T.TYPE_BYTES:
            if isinstance(v, str):
                v = v.encode()
            if not isinstance(v, (bytes, bytearray)):
                raise bad
            return bytes(v), bytes(v)
        if self.type == _T.TYPE_BOOL:
            if not isinstance(v, bool):
                raise bad
            return v, v
        if self.int_bounds:
            lo, hi = self.int_bounds
            if isinstance(v, bool) or not isinstance(v, int):
                raise bad
            if not lo <= v <= hi:
                raise HintError(f"hint for {path!r}: {what} {v} is outside the {self.label} range [{lo}, {hi}]")
            return v, v
        if self.is_float:
            if not _is_number(v):
                raise bad
            if self.type == _T.TYPE_FLOAT:
                if math.isfinite(v) and abs(v) > _F32_MAX:
                    raise HintError(f"hint for {path!r}: {what} {v} is outside the float (32-bit) range")
                v = _f32(v)
            return float(v), float(v)
        raise bad


def _type_name(t: int) -> str:
    for name in dir(_T):
        if name.startswith("TYPE_") and getattr(_T, name) == t:
            return name[5:].lower()
    return str(t)


# A value maker: (rng, now_ms, city) -> (wire value, fact value)
Maker = Callable[[random.Random, int, Any], tuple[Any, Any]]


class MessageGenerator:
    """Encoded messages of one type, and their facts, from a seed and an index. make() keeps no
    state between calls, so threads (or greenlets) may share one generator."""

    def __init__(
        self,
        descriptor_set,
        message_name: str,
        hints: dict | None = None,
        seed: int = 0,
        *,
        max_depth: int = 3,
        repeated: tuple[int, int] = (0, 3),
    ):
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be an integer >= 0, not {seed!r}")
        if not (isinstance(max_depth, int) and max_depth >= 1):
            raise ValueError(f"max_depth must be an integer >= 1, not {max_depth!r}")
        if not (len(repeated) == 2 and all(isinstance(x, int) for x in repeated) and 0 <= repeated[0] <= repeated[1]):
            raise ValueError(f"repeated must be (lo, hi) with 0 <= lo <= hi, not {repeated!r}")
        self.message_name = message_name.lstrip(".")
        self.descriptor: Descriptor = descriptor_set.message_descriptor(self.message_name)
        self.seed = seed
        self.max_depth = max_depth
        self.repeated = repeated
        self._seed_base = seed << 64  # distinct seeds never share an index's random stream
        self._class = message_factory.GetMessageClass(self.descriptor)
        self.hints = dict(hints or {})
        self._used: set[str] = set()
        self._check_paths(self.hints)
        self._fill = self._compile(self.descriptor, "", 0)
        unused = sorted(set(self.hints) - self._used)
        if unused:  # only when a path is valid but lies where nothing is generated
            raise HintError(f"hint for {unused[0]!r}: nothing is generated there (deeper than max_depth={max_depth})")

    # ------------------------------------------------------------------ public

    def make(self, index: int, now: int | dt.datetime | None = None) -> Generated:
        """The message number `index` (>= 0): encoded bytes and facts; Timestamps at `now`."""
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError(f"index must be an integer >= 0, not {index!r}")
        wire, facts = self._fill(random.Random(self._seed_base + index), now_ms(now))
        # one constructor call from nested dicts: far cheaper in upb than a setattr per field
        return Generated(self._class(**wire).SerializeToString(deterministic=True), facts)

    @property
    def message_class(self) -> type:
        return self._class

    @property
    def event_time_field(self) -> str | None:
        """The first top-level Timestamp field (daggers' rowtime by convention), or None."""
        for f in self.descriptor.fields:
            if f.type == _T.TYPE_MESSAGE and f.message_type.full_name == TIMESTAMP and not _is_repeated(f):
                return f.name
        return None

    def scalar_paths(self) -> list[str]:
        """Dotted paths of every singular non-message (or wrapper/Timestamp) field, nested ones
        included, up to max_depth: what a ledger can keep as columns."""
        out: list[str] = []

        def walk(d: Descriptor, prefix: str, depth: int) -> None:
            for f in d.fields:
                if _is_repeated(f):
                    continue
                if f.type == _T.TYPE_MESSAGE and f.message_type.full_name not in WRAPPERS | {TIMESTAMP, DURATION}:
                    if depth + 1 < self.max_depth:
                        walk(f.message_type, f"{prefix}{f.name}.", depth + 1)
                    continue
                out.append(prefix + f.name)

        walk(self.descriptor, "", 0)
        return out

    # ------------------------------------------------------------ hint paths

    def _check_paths(self, hints: dict) -> None:
        """Every hint path names a field, and every hint is a dict of known keys with one kind."""
        for path, hint in hints.items():
            if not isinstance(path, str) or not path:
                raise HintError(f"hint path {path!r} is not a dotted field path")
            d = self.descriptor
            parts = path.split(".")
            for i, part in enumerate(parts):
                f = d.fields_by_name.get(part)
                where = ".".join(parts[:i]) or self.descriptor.name
                if f is None:
                    raise HintError(
                        f"hint for {path!r}: {d.full_name} (at {where}) has no field {part!r}"
                        + _did_you_mean(part, [x.name for x in d.fields])
                    )
                if i < len(parts) - 1:
                    if f.type != _T.TYPE_MESSAGE:
                        raise HintError(
                            f"hint for {path!r}: {'.'.join(parts[: i + 1])} is a {_Leaf(f).label}, it has no fields"
                        )
                    if f.message_type.full_name in WRAPPERS | {TIMESTAMP, DURATION}:
                        raise HintError(
                            f"hint for {path!r}: {'.'.join(parts[: i + 1])} is a "
                            f"{f.message_type.full_name}; hint the field itself, not its parts"
                        )
                    d = f.message_type
            if not isinstance(hint, dict):
                raise HintError(f'hint for {path!r}: {hint!r} is not a dict like {{"choice": [...]}}')
            unknown = [k for k in hint if k not in KINDS and k not in MODIFIERS]
            if unknown:
                raise HintError(
                    f"hint for {path!r}: unknown hint kind {unknown[0]!r}"
                    + _did_you_mean(str(unknown[0]), list(KINDS) + list(MODIFIERS))
                )
            kinds = [k for k in hint if k in KINDS and k != "count"]
            if len(kinds) > 1:
                raise HintError(f"hint for {path!r}: one kind per field, got {' and '.join(kinds)}")
            for mod, needs in MODIFIERS.items():
                if mod in hint and needs not in hint:
                    raise HintError(f"hint for {path!r}: {mod!r} goes with {needs!r}")

    def _hint(self, path: str) -> dict:
        hint = self.hints.get(path)
        if hint is None:
            return {}
        self._used.add(path)
        return hint

    # ------------------------------------------------------------- compiling

    def _compile(self, d: Descriptor, prefix: str, depth: int):
        """The filler of one message type at one path: (rng, now_ms) -> (wire dict, facts dict).

        The wire dict is what the message class's constructor takes (nested dicts, lists, enum
        numbers, Timestamps as {seconds, nanos}); plain singular fields go through one tight loop,
        everything else through a step closure."""
        city_pick = self._city_picker(d, prefix)
        plain: list[tuple[str, Maker]] = []
        steps: list = []  # (rng, wire, facts, now, city) -> None
        oneofs_done: set[str] = set()
        for f in d.fields:
            oneof = f.containing_oneof
            if oneof is not None and len(oneof.fields) > 1:  # a real oneof, not proto3 `optional`
                if oneof.name in oneofs_done:
                    continue
                oneofs_done.add(oneof.name)
                members = [s for s in (self._field_step(m, prefix, depth) for m in oneof.fields) if s]
                if members:
                    steps.append(self._oneof_step([_as_step(m) for m in members]))
                continue
            step = self._field_step(f, prefix, depth)
            if isinstance(step, tuple):
                plain.append(step)
            elif step is not None:
                steps.append(step)
        plain_t, steps_t = tuple(plain), tuple(steps)

        def fill(rng, now):
            wire: dict = {}
            facts: dict = {}
            city = city_pick(rng) if city_pick is not None else None
            for name, make in plain_t:
                wire[name], facts[name] = make(rng, now, city)
            for step in steps_t:
                step(rng, wire, facts, now, city)
            return wire, facts

        return fill

    @staticmethod
    def _oneof_step(members: list):
        n = len(members)

        def step(rng, wire, facts, now, city):
            members[int(rng.random() * n)](rng, wire, facts, now, city)

        return step

    def _city_picker(self, d: Descriptor, prefix: str):
        """One city per message instance for all lat/lng hints of this message, which must agree."""
        specs = {}
        for f in d.fields:
            hint = self.hints.get(prefix + f.name) or {}
            for kind in ("lat", "lng"):
                if kind in hint:
                    specs[prefix + f.name] = (kind, hint[kind])
        if not specs:
            return None
        parsed = {path: self._cities(path, kind, spec) for path, (kind, spec) in specs.items()}
        first_path, first = next(iter(parsed.items()))
        for path, cities in parsed.items():
            if cities != first:
                raise HintError(
                    f"hint for {path!r}: lat and lng fields of one message share a city, but "
                    f"{path!r} names {_show_cities(cities)} and {first_path!r} {_show_cities(first)}"
                )
        names, weights = first
        return _picker(names, weights)

    @staticmethod
    def _cities(path: str, kind: str, spec: Any) -> tuple[tuple, tuple | None]:
        if isinstance(spec, str):
            raw, weights = [spec], None
        elif isinstance(spec, list) and spec:
            raw, weights = spec, None
        elif isinstance(spec, dict) and spec:
            raw, weights = list(spec), _weights(path, kind, spec)
        else:
            raise HintError(
                f"hint for {path!r}: {kind} wants a city name, a list of names or {{name: weight}}, not {spec!r}"
            )
        names = []
        for c in raw:
            key = str(c).strip().lower().replace("_", "-").replace(" ", "-")
            if key not in CITIES:
                raise HintError(f"hint for {path!r}: unknown city {c!r}" + _did_you_mean(key, list(CITIES)))
            names.append(key)
        if weights is not None and len(set(weights)) == 1:
            weights = None
        return tuple(names), (tuple(weights) if weights else None)

    def _field_step(self, f: FieldDescriptor, prefix: str, depth: int):
        """(name, maker) for a plain singular field, a step closure for the rest, None to skip."""
        path = prefix + f.name
        hint = self._hint(path)
        name = f.name
        if _is_map(f):
            return self._map_step(f, path, hint, depth)
        count = self._count(f, path, hint)
        if f.type == _T.TYPE_MESSAGE and f.message_type.full_name not in WRAPPERS | {TIMESTAMP, DURATION}:
            if any(k in hint for k in KINDS if k != "count"):
                raise HintError(
                    f"hint for {path!r}: {path} is a message ({f.message_type.full_name}); "
                    f"hint its fields ({path}.{f.message_type.fields[0].name}, ...)"
                )
            if depth + 1 >= self.max_depth:
                return None
            sub = self._compile(f.message_type, path + ".", depth + 1)
            if count is None:

                def step(rng, wire, facts, now, city):
                    wire[name], facts[name] = sub(rng, now)  # {} still makes the field present

                return step
            lo, hi = count

            def step(rng, wire, facts, now, city):
                pairs = [sub(rng, now) for _ in range(rng.randint(lo, hi))]
                wire[name] = [w for w, _ in pairs]
                facts[name] = [v for _, v in pairs]

            return step
        make = self._maker(f, path, hint)
        if count is None:
            return name, make
        lo, hi = count

        def step(rng, wire, facts, now, city):
            pairs = [make(rng, now, city) for _ in range(rng.randint(lo, hi))]
            wire[name] = [w for w, _ in pairs]
            facts[name] = [v for _, v in pairs]

        return step

    def _count(self, f: FieldDescriptor, path: str, hint: dict) -> tuple[int, int] | None:
        if not _is_repeated(f):
            if "count" in hint:
                raise HintError(f"hint for {path!r}: count is for repeated and map fields; {path} is singular")
            return None
        if "count" not in hint:
            return self.repeated
        c = hint["count"]
        if (
            not isinstance(c, (list, tuple))
            or len(c) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in c)
            or not 0 <= c[0] <= c[1]
        ):
            raise HintError(f"hint for {path!r}: count wants [lo, hi], integers with 0 <= lo <= hi, not {c!r}")
        return int(c[0]), int(c[1])

    def _map_step(self, f: FieldDescriptor, path: str, hint: dict, depth: int):
        name = f.name
        if any(k in hint for k in KINDS if k != "count"):
            raise HintError(
                f"hint for {path!r}: {path} is a map; hint {path}.key and {path}.value (and its size with count)"
            )
        lo, hi = self._count(f, path, hint)
        entry = f.message_type
        key_make = self._maker(entry.fields_by_name["key"], path + ".key", self._hint(path + ".key"))
        value_field = entry.fields_by_name["value"]
        vpath = path + ".value"
        if value_field.type == _T.TYPE_MESSAGE and value_field.message_type.full_name not in WRAPPERS | {
            TIMESTAMP,
            DURATION,
        }:
            if depth + 1 >= self.max_depth:
                return None
            sub = self._compile(value_field.message_type, vpath + ".", depth + 1)
            sub_class = message_factory.GetMessageClass(value_field.message_type)

            def value_make(rng, now, city):
                wire, facts = sub(rng, now)
                return sub_class(**wire), facts  # a map's message values must be messages, not dicts
        else:
            value_make = self._maker(value_field, vpath, self._hint(vpath))

        def step(rng, wire, facts, now, city):
            w, out = {}, {}
            for _ in range(rng.randint(lo, hi)):
                k, kf = key_make(rng, now, city)
                w[k], out[kf] = value_make(rng, now, city)  # a repeated key: the last one wins, in both
            wire[name], facts[name] = w, out

        return step

    # --------------------------------------------------------------- values

    def _maker(self, f: FieldDescriptor, path: str, hint: dict) -> Maker:
        """(rng, now_ms, city) -> (wire value, fact value) for one scalar-like field: the wire
        value as the message constructor takes it."""
        leaf = _Leaf(f)
        make = self._value_maker(leaf, f, path, hint)
        if leaf.message in (TIMESTAMP, DURATION):

            def timed(rng, now, city):
                ms = make(rng, now, city)[0]
                return {"seconds": ms // 1000, "nanos": ms % 1000 * 1_000_000}, ms

            return timed
        if leaf.message in WRAPPERS:

            def wrapped(rng, now, city):
                w, v = make(rng, now, city)
                return {"value": w}, v  # present even when the value is 0

            return wrapped
        return make

    def _value_maker(self, leaf: _Leaf, f: FieldDescriptor, path: str, hint: dict) -> Maker:
        kinds = [k for k in hint if k in KINDS and k != "count"]
        if not kinds:
            return self._default(leaf, f.name)
        kind = kinds[0]
        spec = hint[kind]
        label = leaf.label

        def unfit(wants: str) -> HintError:
            return HintError(f"hint for {path!r}: {kind} needs {wants}; {path} is a {label} field")

        if kind in ("lat", "lng"):
            if not leaf.is_float:
                raise unfit("a double or float field")
            lo_i, hi_i = (0, 1) if kind == "lat" else (2, 3)
            f32 = leaf.type == _T.TYPE_FLOAT
            # a map's key or value has no message of its own to share a city with: it picks its own
            own = _picker(*self._cities(path, kind, spec))

            def make(rng, now, city):
                box = CITIES[city if city is not None else own(rng)]
                v = round(box[lo_i] + rng.random() * (box[hi_i] - box[lo_i]), 6)
                if f32:
                    v = _f32(v)
                return v, v

            return make

        if kind == "enum":
            if leaf.enum is None:
                raise unfit("an enum field")
            if not isinstance(spec, dict) or not spec:
                raise HintError(f"hint for {path!r}: enum wants {{VALUE: weight, ...}}, not {spec!r}")
            values = [leaf.coerce(path, name, "enum value") for name in spec]
            return _pair_picker(values, _weights(path, "enum", spec))

        if kind == "pool":
            if not isinstance(spec, dict) or set(spec) - {"prefix", "size"} or "size" not in spec:
                raise HintError(f'hint for {path!r}: pool wants {{"prefix": "d", "size": 100}}, not {spec!r}')
            size, prefix = spec["size"], spec.get("prefix", "")
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise HintError(f"hint for {path!r}: pool size must be an integer >= 1, not {size!r}")
            if not isinstance(prefix, str):
                raise HintError(f"hint for {path!r}: pool prefix must be a string, not {prefix!r}")
            if leaf.type in (_T.TYPE_STRING, _T.TYPE_BYTES) and leaf.message not in (TIMESTAMP, DURATION):
                as_bytes = leaf.type == _T.TYPE_BYTES

                def make(rng, now, city):  # made on the fly: a pool may be huge (unique ids)
                    v = prefix + str(int(rng.random() * size))
                    if as_bytes:
                        v = v.encode()
                    return v, v

                return make
            if leaf.int_bounds and leaf.message not in (TIMESTAMP, DURATION):
                if prefix:
                    raise HintError(f"hint for {path!r}: a pool of a {label} field has no prefix")
                leaf.coerce(path, size - 1, "pool id")

                def make(rng, now, city):
                    v = int(rng.random() * size)
                    return v, v

                return make
            raise unfit("a string, bytes or integer field")

        if kind == "range":
            if leaf.message in (TIMESTAMP, DURATION) or not (leaf.int_bounds or leaf.is_float):
                raise unfit("a number field")
            if not isinstance(spec, (list, tuple)) or len(spec) != 2 or not all(_is_number(x) for x in spec):
                raise HintError(f"hint for {path!r}: range wants [lo, hi], not {spec!r}")
            lo, hi = spec
            if lo > hi:
                raise HintError(f"hint for {path!r}: range [{lo}, {hi}] has lo > hi")
            if leaf.int_bounds:
                if not all(isinstance(x, int) for x in spec):
                    raise HintError(f"hint for {path!r}: range of a {label} field wants integers, not {spec!r}")
                leaf.coerce(path, lo, "range bound")
                leaf.coerce(path, hi, "range bound")

                def make(rng, now, city):
                    v = rng.randint(lo, hi)
                    return v, v

                return make
            decimals = hint.get("decimals")
            if decimals is not None and (isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0):
                raise HintError(f"hint for {path!r}: decimals must be an integer >= 0, not {decimals!r}")
            leaf.coerce(path, lo, "range bound")
            leaf.coerce(path, hi, "range bound")
            f32 = leaf.type == _T.TYPE_FLOAT
            width = hi - lo

            def make(rng, now, city):
                v = lo + rng.random() * width
                if decimals is not None:
                    v = round(v, decimals)
                if f32:
                    v = _f32(v)
                return v, v

            return make

        if kind == "choice":
            if not isinstance(spec, (list, tuple)) or not spec:
                raise HintError(f"hint for {path!r}: choice wants a non-empty list, not {spec!r}")
            values = [leaf.coerce(path, v, "choice") for v in spec]
            weights = _weights(path, "choice", hint["weights"], len(spec)) if "weights" in hint else None
            return _pair_picker(values, weights)

        if kind == "const":
            wire, fv = leaf.coerce(path, spec, "const")
            return lambda rng, now, city: (wire, fv)

        if kind == "now":
            if leaf.message != TIMESTAMP:
                raise unfit("a google.protobuf.Timestamp field")
            if spec is True:
                return lambda rng, now, city: (now, now)
            if not isinstance(spec, dict) or set(spec) != {"jitter_ms"}:
                raise HintError(f'hint for {path!r}: now wants true or {{"jitter_ms": 500}}, not {spec!r}')
            jitter = spec["jitter_ms"]
            if isinstance(jitter, bool) or not isinstance(jitter, int) or jitter < 0:
                raise HintError(f"hint for {path!r}: jitter_ms must be an integer >= 0, not {jitter!r}")

            def make(rng, now, city):
                v = now + rng.randint(-jitter, jitter)
                return v, v

            return make
        raise AssertionError(kind)

    @staticmethod
    def _default(leaf: _Leaf, name: str) -> Maker:
        if leaf.message == TIMESTAMP:
            return lambda rng, now, city: (now, now)
        if leaf.message == DURATION:

            def make(rng, now, city):
                v = rng.randrange(60_000)
                return v, v

            return make
        if leaf.enum is not None:
            values = [(v.number, v.name) for v in leaf.enum.values]
            seen, distinct = set(), []
            for number, vname in values:  # aliases share a number: keep the first name
                if number not in seen:
                    seen.add(number)
                    distinct.append((number, vname))
            if len(distinct) > 1 and distinct[0][0] == 0:
                distinct = distinct[1:]  # UNKNOWN/UNSPECIFIED is not traffic
            return _pair_picker(distinct, None)
        t = leaf.type
        if t == _T.TYPE_STRING:

            def make(rng, now, city):
                v = f"{name}-{int(rng.random() * 1000)}"
                return v, v

            return make
        if t == _T.TYPE_BYTES:

            def make(rng, now, city):
                v = rng.randbytes(8)
                return v, v

            return make
        if t == _T.TYPE_BOOL:

            def make(rng, now, city):
                v = rng.random() < 0.5
                return v, v

            return make
        if leaf.int_bounds:
            top = 1_000_000 if leaf.int_bounds[1] > 2**32 else 1000

            def make(rng, now, city):
                v = int(rng.random() * top)
                return v, v

            return make
        if t == _T.TYPE_FLOAT:

            def make(rng, now, city):
                v = _f32(round(rng.random() * 1000, 3))
                return v, v

            return make
        if t == _T.TYPE_DOUBLE:

            def make(rng, now, city):
                v = round(rng.random() * 1000, 6)
                return v, v

            return make
        raise HintError(f"{name}: no default for a {leaf.label} field")


def _as_step(member):
    """A oneof member as a step, whether it came as a (name, maker) pair or a step already."""
    if not isinstance(member, tuple):
        return member
    name, make = member

    def step(rng, wire, facts, now, city):
        wire[name], facts[name] = make(rng, now, city)

    return step


def _pair_picker(pairs: list[tuple[Any, Any]], weights: list[float] | None) -> Maker:
    pick = _picker(pairs, weights)
    return lambda rng, now, city: pick(rng)


def _show_cities(cities: tuple) -> str:
    names, weights = cities
    if weights is None:
        return "/".join(names)
    return ", ".join(f"{n}:{w:g}" for n, w in zip(names, weights))
