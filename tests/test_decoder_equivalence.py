"""The fast wire-format reader decodes exactly as protobuf-java's reflective parser does.

Both decoders run in the same Spark session over the same bytes: generated traffic, messages with
every field filled at random, and broken or unusual encodings (merged messages, packed and unpacked
repeated fields, wrong wire types, unknown fields and enum numbers, bad UTF-8, truncation). The
reflective one (DynamicMessage) is the reference.
"""

from __future__ import annotations

import random
import zlib

import pytest
from google.protobuf.descriptor import FieldDescriptor as FD
from google.protobuf.internal.encoder import _VarintBytes

from loadtest import traffic
from protos import registry

pytestmark = pytest.mark.spark

MESSAGES = [
    (traffic.BOOKING, traffic.bookings),
    (traffic.DRIVER_PING, traffic.driver_pings),
    (traffic.API_LOG, traffic.api_logs),
]


def random_message(cls, rng: random.Random, depth: int = 0):
    m = cls()
    for f in m.DESCRIPTOR.fields:
        if rng.random() < 0.2:
            continue  # leave some fields absent
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            target = getattr(m, f.name)
            for _ in range(rng.randrange(3)):
                target[_scalar(f.message_type.fields_by_name["key"], rng)] = _scalar(
                    f.message_type.fields_by_name["value"], rng
                )
        elif f.type == FD.TYPE_MESSAGE:
            if f.message_type.full_name == "google.protobuf.Timestamp":
                ts = getattr(m, f.name)
                ts.seconds, ts.nanos = rng.randrange(0, 2_000_000_000), rng.randrange(0, 999_999_999)
            elif depth < 3:
                if f.label == FD.LABEL_REPEATED:
                    for _ in range(rng.randrange(3)):
                        getattr(m, f.name).add().CopyFrom(
                            random_message(getattr(m, f.name).add().__class__, rng, depth + 1)
                        )
                else:
                    getattr(m, f.name).CopyFrom(random_message(getattr(m, f.name).__class__, rng, depth + 1))
        elif f.label == FD.LABEL_REPEATED:
            getattr(m, f.name).extend(_scalar(f, rng) for _ in range(rng.randrange(4)))
        else:
            setattr(m, f.name, _scalar(f, rng))
    return m


def _scalar(f, rng: random.Random):
    t = f.type
    if t in (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32):
        return rng.randrange(-(2**31), 2**31)
    if t in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
        return rng.randrange(0, 2**32)
    if t in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64):
        return rng.randrange(-(2**63), 2**63)
    if t in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        return rng.randrange(0, 2**64)
    if t == FD.TYPE_DOUBLE:
        return rng.uniform(-1e6, 1e6)
    if t == FD.TYPE_FLOAT:
        return float(rng.randrange(-1000, 1000)) / 8
    if t == FD.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FD.TYPE_STRING:
        return "".join(rng.choice("abcé漢 -_") for _ in range(rng.randrange(8)))
    if t == FD.TYPE_BYTES:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(6)))
    if t == FD.TYPE_ENUM:
        return rng.choice(f.enum_type.values).number
    raise AssertionError(f"no generator for {f.full_name}")


def key(tag: int, wire: int) -> bytes:
    return _VarintBytes(tag << 3 | wire)


def ld(tag: int, body: bytes) -> bytes:
    return key(tag, 2) + _VarintBytes(len(body)) + body


def odd_encodings(dset) -> list[bytes]:
    """Valid-but-unusual and broken encodings of BookingLogMessage (field numbers from the .proto)."""
    ts = ld(5, key(1, 0) + _VarintBytes(1_700_000_000))
    cls = dset.message_class(traffic.BOOKING)
    base = cls(order_number="A-1", city_id=3, status=4)
    base.event_timestamp.seconds = 1_700_000_000
    good = base.SerializeToString()
    loc1 = ld(12, key(1, 1) + (1.5).hex().encode()[:0] + b"\x00" * 7 + b"\x40")  # pickup.latitude = 2.0
    loc2 = ld(12, key(2, 1) + b"\x00" * 7 + b"\x40")  # pickup.longitude = 2.0
    return [
        good,
        good + loc1 + loc2,  # a singular message seen twice is merged
        good + ld(16, b"x") + ld(16, b"y"),  # repeated strings
        ts + key(8, 0) + _VarintBytes(7) + key(8, 0) + _VarintBytes(9),  # last value wins
        ts + key(8, 2) + _VarintBytes(1) + b"\x07",  # wrong wire type for an int32: an unknown field
        ts + key(99, 0) + _VarintBytes(5),  # unknown field number
        ts + key(4, 0) + _VarintBytes(77),  # unknown enum number
        ts + ld(1, b"\xff\xfe"),  # invalid UTF-8 in a proto3 string
        ts + ld(17, ld(1, b"k") + ld(2, b"v")) + ld(17, ld(2, b"only-value")),  # map entries
        good[:-1],  # truncated
        b"\xff\xff\xff\xff\xff",  # garbage
        key(8, 0) + _VarintBytes(3),  # no event time
        ts + key(3, 4),  # an end-group tag with no group
        b"",  # empty message: no event time
    ]


@pytest.fixture(scope="module")
def dset():
    return registry.load()


def decode_both(spark, dset, message: str, values: list[bytes], *, descriptor_set: bytes | None = None, event: int = 5):
    """Each value through both readers, as (i, w: ours, r: protobuf-java's reflective) rows in order;
    the message type from `dset`, or from `descriptor_set` when a test builds its own."""
    jf = spark._jvm.dev.daggers.runtime.Functions
    data = descriptor_set if descriptor_set is not None else dset.data
    for name, reader in (("__t_wire", "wire"), ("__t_reflective", "reflective")):
        jf.registerDecoder(spark._jsparkSession, name, bytearray(data), message, "PROTO", event, reader)
    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "i long, value binary")
    return df.selectExpr("i", "__t_wire(value) AS w", "__t_reflective(value) AS r").orderBy("i").collect()


@pytest.mark.parametrize("message, generator", MESSAGES)
def test_generated_traffic_decodes_identically(spark, dset, message, generator):
    events = generator(300, minutes=2, seed=31)
    rows = decode_both(spark, dset, message, traffic.encode(events, dset.message_class(message)))
    assert all(r["w"] == r["r"] for r in rows)
    assert all(r["w"]["error"] is None for r in rows)


@pytest.mark.parametrize("message, _", MESSAGES)
def test_messages_with_random_fields_and_mutations_decode_identically(spark, dset, message, _):
    rng = random.Random(zlib.crc32(message.encode()))  # the same messages every run
    cls = dset.message_class(message)
    values = [random_message(cls, rng).SerializeToString() for _ in range(300)]
    mutated = []
    for v in values[:200]:
        b = bytearray(v)
        if b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        mutated.append(bytes(b))
        mutated.append(v[: rng.randrange(len(v) + 1)])
    rows = decode_both(spark, dset, message, values + mutated)
    mismatched = [
        (r["i"], r["w"], r["r"])
        for r in rows
        if (r["w"]["message"], r["w"]["rowtime"]) != (r["r"]["message"], r["r"]["rowtime"])
        or (r["w"]["error"] is None) != (r["r"]["error"] is None)
    ]
    assert not mismatched, mismatched[:3]
    assert sum(r["w"]["error"] is not None for r in rows) > 20, "the mutations should break some messages"


def test_unusual_and_broken_encodings_decode_as_protobuf_java_does(spark, dset):
    rows = decode_both(spark, dset, traffic.BOOKING, odd_encodings(dset))
    for r in rows:
        assert (r["w"]["message"], r["w"]["rowtime"]) == (r["r"]["message"], r["r"]["rowtime"]), r["i"]
        assert (r["w"]["error"] is None) == (r["r"]["error"] is None), (r["i"], r["w"]["error"], r["r"]["error"])
    merged = rows[1]["w"]["message"]["pickup"]
    assert (merged["latitude"], merged["longitude"]) == (2.0, 2.0)
    assert rows[3]["w"]["message"]["city_id"] == 9
    assert rows[6]["w"]["message"]["status"] == "UNKNOWN_ENUM_VALUE_BookingStatus_77"
    assert [r["w"]["error"] is not None for r in rows[7:]] == [True, False, True, True, True, True, True]


def assert_same_with_reasons(rows) -> None:
    """Each row decoded alike by both readers: message, event time, and the error's very words."""
    for r in rows:
        ours, reference = r["w"], r["r"]
        assert (ours["message"], ours["rowtime"], ours["error"]) == (
            reference["message"],
            reference["rowtime"],
            reference["error"],
        ), r["i"]


def group(number: int, body: bytes = b"") -> bytes:
    return key(number, 3) + body + key(number, 4)


def wire_edges() -> list[bytes]:
    """The wire format's corners, each on an otherwise good BookingLogMessage: the longest and
    too-long varints, lengths past the end or negative, groups nested up to protobuf-java's
    limit of 100 and one past it, mismatched and stray end-group tags, bad wire types, fixed-width
    values cut short, strings near the end of the message."""
    ts = ld(5, key(1, 0) + _VarintBytes(1_700_000_000))
    minus_one = b"\xff" * 9 + b"\x01"  # a negative int32 takes ten bytes
    nested = b""
    for _ in range(100):
        nested = group(99, nested)
    too_deep = group(99, nested)
    return [
        ts + key(8, 0) + minus_one,  # city_id = -1
        ts + key(8, 0) + b"\xff" * 10 + b"\x01",  # eleven bytes: malformed
        ts + key(8, 0) + b"\xff" * 9 + b"\x7f",  # ten bytes, high bits past 64 dropped
        ts + key(8, 0) + b"\x80\x80",  # cut inside a varint
        ts + key(8, 0) + b"\xff\xff\xff\xff\x7f",  # five bytes, bits past 32
        ts + key(1, 2) + b"\xff\xff\xff\xff\x0f" + b"abc",  # a negative length
        ts + key(1, 2) + _VarintBytes(4) + b"abc",  # a length past the end
        ts + key(12, 2) + _VarintBytes(20) + key(1, 1) + b"\x00" * 7,  # a message longer than what is left
        ts + ld(12, key(1, 1) + b"\x00" * 7),  # a double cut short inside a message
        ts + key(15, 5) + b"\x00\x00",  # a float cut short
        ts + nested,  # 100 unknown groups in each other: the limit
        ts + too_deep,  # 101: one past it
        ts + group(99, key(1, 0) + b"\x01" + ld(2, b"x") + key(3, 1) + b"\x00" * 8 + key(4, 5) + b"\x00" * 4),
        ts + key(99, 3) + key(98, 4),  # an end-group of another number
        ts + key(99, 3),  # a group never ended
        ts + key(99, 6) + b"\x00",  # wire types 6 and 7 do not exist
        ts + key(99, 7),
        b"\x00" + ts,  # a zero tag
        ts + key(99, 2) + _VarintBytes(0),  # empty unknown field
        ts + ld(9, b"car") + ld(1, b"\xc3\xa9t\xc3\xa9"),  # UTF-8 as the last bytes
        ts + ld(1, ("x" * 9 + "é").encode()),  # a non-ASCII byte past the first eight
        ts + ld(1, b"12345678\xc3"),  # a cut sequence past the first eight
        ts + ld(20, b"\x00\xff") + ld(16, b"a") + ld(16, b""),  # bytes, and an empty repeated string
    ]


def test_wire_format_corners_decode_as_protobuf_java_does_with_its_reasons(spark, dset):
    rows = decode_both(spark, dset, traffic.BOOKING, wire_edges())
    assert_same_with_reasons(rows)
    errors = [r["w"]["error"] is not None for r in rows]
    assert errors == [False, True, False, True, False, True, True, True, True, True, False, True, False] + [
        True,
        True,
        True,
        True,
        True,
        False,
        False,
        False,
        True,
        False,
    ]
    assert rows[0]["w"]["message"]["city_id"] == -1
    assert "too many levels of nesting" in rows[11]["w"]["error"]


def test_sixty_four_bit_varints_of_ten_bytes_decode_as_protobuf_java_does(spark, dset):
    # a ten-byte varint: protobuf-java keeps the ninth byte's continuation bit as bit 63 and drops
    # the tenth byte's payload; on a singular int64 (response.latency_ms), a packed and an
    # unpacked repeated one (upstream_latencies_ms), and near the end of the message
    ts = ld(5, key(1, 0) + _VarintBytes(1_700_000_000))
    tens = [b"\xff" * 8 + bytes([b9, b10]) for b9 in (0x80, 0xFE, 0xFF) for b10 in (0x00, 0x01, 0x02, 0x7F)]
    values = []
    for v in tens:
        values += [
            ts + ld(4, key(2, 0) + v),
            ts + key(8, 0) + v + key(8, 0) + _VarintBytes(5),
            ts + ld(8, v + _VarintBytes(7) + v),
            ts + key(8, 0) + v,
        ]
    values += [ts + key(8, 0) + b"\xff" * 9 + b"\x80", ts + ld(8, b"\xff" * 9)]  # an eleventh byte; cut
    rows = decode_both(spark, dset, traffic.API_LOG, values)
    assert_same_with_reasons(rows)
    assert rows[0]["w"]["message"]["response"]["latency_ms"] == -(1 << 63) + (0x00FFFFFFFFFFFFFF)
    assert [r["w"]["error"] is not None for r in rows[-2:]] == [True, True]


def _proto2_set() -> bytes:
    """A proto2 file of its own: a closed enum (singular, repeated, packed), a plain string and a
    map of strings, whose UTF-8 protobuf-java checks although the file is proto2."""
    from google.protobuf import descriptor_pb2, timestamp_pb2

    ts = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(ts)
    f = descriptor_pb2.FileDescriptorProto(
        name="legacy.proto", package="legacy", syntax="proto2", dependency=["google/protobuf/timestamp.proto"]
    )
    enum = f.enum_type.add(name="Color")
    for name, number in (("RED", 0), ("BLUE", 1)):
        enum.value.add(name=name, number=number)
    shade = f.enum_type.add(name="Shade")  # 0 has two names; a default may name the second
    shade.options.allow_alias = True
    for name, number in (("LIGHT", 0), ("PALE", 0), ("DARK", 1)):
        shade.value.add(name=name, number=number)
    tint = f.message_type.add(name="Tint")  # its one default is an alias of 0: no default is zero
    tint.field.add(
        name="shade",
        number=1,
        label=FD.LABEL_OPTIONAL,
        type=FD.TYPE_ENUM,
        type_name=".legacy.Shade",
        default_value="PALE",
    )
    m = f.message_type.add(name="Paint")
    entry = m.nested_type.add(name="TagsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, label=1, type=FD.TYPE_STRING)
    entry.field.add(name="value", number=2, label=1, type=FD.TYPE_STRING)
    opt, rep = FD.LABEL_OPTIONAL, FD.LABEL_REPEATED
    m.field.add(name="at", number=1, label=opt, type=FD.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp")
    m.field.add(name="color", number=2, label=opt, type=FD.TYPE_ENUM, type_name=".legacy.Color")
    m.field.add(name="colors", number=3, label=rep, type=FD.TYPE_ENUM, type_name=".legacy.Color")
    packed = m.field.add(name="packed", number=4, label=rep, type=FD.TYPE_ENUM, type_name=".legacy.Color")
    packed.options.packed = True
    m.field.add(name="name", number=5, label=opt, type=FD.TYPE_STRING)
    m.field.add(name="tags", number=6, label=rep, type=FD.TYPE_MESSAGE, type_name=".legacy.Paint.TagsEntry")
    # defaults of proto2's own: an unset field reads as its default, a set one as itself (zero too)
    for name, number, kind, default in (
        ("size", 7, FD.TYPE_SINT32, "-5"),
        ("label", 8, FD.TYPE_STRING, "none"),
        ("ratio", 9, FD.TYPE_DOUBLE, "1.5"),
        ("flag", 10, FD.TYPE_BOOL, "true"),
        ("weight", 11, FD.TYPE_FLOAT, "0.25"),
        ("count", 12, FD.TYPE_UINT64, "7"),
    ):
        m.field.add(name=name, number=number, label=opt, type=kind, default_value=default)
    m.field.add(name="tone", number=13, label=opt, type=FD.TYPE_ENUM, type_name=".legacy.Color", default_value="BLUE")
    m.field.add(name="raw", number=14, label=opt, type=FD.TYPE_BYTES, default_value="ab")
    m.field.add(name="shade", number=15, label=opt, type=FD.TYPE_ENUM, type_name=".legacy.Shade", default_value="PALE")
    m.field.add(name="tint", number=16, label=opt, type=FD.TYPE_MESSAGE, type_name=".legacy.Tint")
    return descriptor_pb2.FileDescriptorSet(file=[ts, f]).SerializeToString()


def test_proto2_closed_enums_and_checked_strings_decode_as_protobuf_java_does(spark):
    at = ld(1, key(1, 0) + _VarintBytes(1_700_000_000))
    values = [
        at + key(2, 0) + _VarintBytes(1) + key(2, 0) + _VarintBytes(7),  # unknown number: BLUE stays
        at + key(3, 0) + _VarintBytes(1) + key(3, 0) + _VarintBytes(9) + key(3, 0) + _VarintBytes(0),
        at + ld(4, _VarintBytes(1) + _VarintBytes(5) + _VarintBytes(0)),  # packed, one unknown
        at + ld(5, b"caf\xc3"),  # a proto2 string: bad UTF-8 is replaced, not refused
        at + ld(6, ld(1, b"k") + ld(2, b"\xff")),  # a map's string: checked, even in proto2
        at + ld(6, ld(1, "ké".encode()) + ld(2, "漢".encode())),
        at,  # every default
        at + key(7, 0) + _VarintBytes(0) + ld(8, b"") + key(9, 1) + b"\x00" * 8 + key(10, 0) + b"\x00",
        at + key(11, 5) + b"\x00" * 4 + key(12, 0) + _VarintBytes(0) + key(13, 0) + _VarintBytes(0) + ld(14, b""),
        at + key(7, 0) + _VarintBytes(10) + ld(8, b"set") + key(13, 0) + _VarintBytes(5),  # 5: not a Color
        at + ld(16, b""),  # a Tint present and empty
    ]
    rows = decode_both(spark, None, "legacy.Paint", values, descriptor_set=_proto2_set(), event=1)
    for r in rows:
        assert r["w"] == r["r"], (r["i"], r["w"], r["r"])
    assert rows[0]["w"]["message"]["color"] == "BLUE"
    assert rows[1]["w"]["message"]["colors"] == ["BLUE", "RED"]
    assert rows[2]["w"]["message"]["packed"] == ["BLUE", "RED"]
    assert rows[3]["w"]["message"]["name"] == "caf\ufffd"
    assert rows[4]["w"]["error"] is not None and rows[4]["w"]["message"] is None
    assert [t.asDict() for t in rows[5]["w"]["message"]["tags"]] == [{"key": "ké", "value": "漢"}]
    defaults = rows[6]["w"]["message"]
    assert (defaults["size"], defaults["label"], defaults["ratio"], defaults["flag"]) == (-5, "none", 1.5, True)
    assert (defaults["weight"], defaults["count"], defaults["tone"], defaults["raw"]) == (0.25, 7, "BLUE", b"ab")
    assert defaults["shade"] == "PALE" and rows[7]["w"]["message"]["shade"] == "PALE"
    assert defaults["tint"]["shade"] == "PALE" and rows[10]["w"]["message"]["tint"]["shade"] == "PALE"
    zeros, more_zeros = rows[7]["w"]["message"], rows[8]["w"]["message"]
    assert [zeros[k] for k in ("size", "label", "ratio", "flag")] == [0, "", 0.0, False]
    assert [more_zeros[k] for k in ("weight", "count", "tone", "raw")] == [0.0, 0, "RED", bytearray(b"")]
    # zigzag 10 is 5; the closed enum's unknown 5 leaves its default
    assert [rows[9]["w"]["message"][k] for k in ("size", "label", "tone")] == [5, "set", "BLUE"]


def _oneof_set() -> bytes:
    """A proto3 file with a real oneof (a number, a string, a message, bytes) beside proto3's own
    `optional` (a oneof of one field, which clears nothing)."""
    from google.protobuf import descriptor_pb2, timestamp_pb2

    ts = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(ts)
    f = descriptor_pb2.FileDescriptorProto(
        name="choice.proto", package="choice", syntax="proto3", dependency=["google/protobuf/timestamp.proto"]
    )
    inner = f.message_type.add(name="Inner")
    inner.field.add(name="x", number=1, label=FD.LABEL_OPTIONAL, type=FD.TYPE_INT32)
    inner.field.add(name="y", number=2, label=FD.LABEL_OPTIONAL, type=FD.TYPE_STRING)
    m = f.message_type.add(name="Pick")
    m.oneof_decl.add(name="what")
    m.oneof_decl.add(name="_note")
    opt = FD.LABEL_OPTIONAL
    m.field.add(name="at", number=1, label=opt, type=FD.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp")
    m.field.add(name="n", number=2, label=opt, type=FD.TYPE_INT64, oneof_index=0)
    m.field.add(name="s", number=3, label=opt, type=FD.TYPE_STRING, oneof_index=0)
    m.field.add(name="inner", number=4, label=opt, type=FD.TYPE_MESSAGE, type_name=".choice.Inner", oneof_index=0)
    m.field.add(name="raw", number=5, label=opt, type=FD.TYPE_BYTES, oneof_index=0)
    m.field.add(name="note", number=6, label=opt, type=FD.TYPE_STRING, oneof_index=1, proto3_optional=True)
    m.field.add(name="after", number=7, label=opt, type=FD.TYPE_INT32)
    return descriptor_pb2.FileDescriptorSet(file=[ts, f]).SerializeToString()


def test_a_oneof_holds_the_last_of_its_fields_read_as_protobuf_java_does(spark):
    at = ld(1, key(1, 0) + _VarintBytes(1_700_000_000))
    n, s, raw = key(2, 0) + _VarintBytes(7), ld(3, b"text"), ld(5, b"\x01\x02")

    def inner(body: bytes) -> bytes:
        return ld(4, body)

    values = [
        at + n + s,  # s clears n
        at + s + n,  # n clears s
        at + inner(key(1, 0) + _VarintBytes(1)) + inner(ld(2, b"b")),  # the same field: merged
        at + inner(key(1, 0) + _VarintBytes(1)) + n + inner(ld(2, b"b")),  # n between: a new inner
        at + raw + ld(6, b"kept") + n + key(7, 0) + _VarintBytes(3),  # optional and plain fields stay
        at + n + key(2, 2) + _VarintBytes(1) + b"x",  # a wrong wire type is unknown: n stays
        at + ld(6, b"note") + s + raw,
    ]
    rows = decode_both(spark, None, "choice.Pick", values, descriptor_set=_oneof_set(), event=1)
    for r in rows:
        assert r["w"] == r["r"], (r["i"], r["w"], r["r"])
    got = [r["w"]["message"] for r in rows]
    assert (got[0]["n"], got[0]["s"]) == (0, "text") and (got[1]["n"], got[1]["s"]) == (7, "")
    assert got[2]["inner"].asDict() == {"x": 1, "y": "b"} and got[3]["inner"].asDict() == {"x": 0, "y": "b"}
    assert (got[4]["raw"], got[4]["note"], got[4]["n"], got[4]["after"]) == (bytearray(), "kept", 7, 3)
    assert got[5]["n"] == 7 and (got[6]["s"], got[6]["raw"], got[6]["note"]) == ("", bytearray(b"\x01\x02"), "note")
