"""The load side of the drills without a broker: the generator's values, hints and their errors;
the ledger's expected windows; the token bucket; recordings and replay's schedule; load shapes.

Every expectation is computed here, from the decoded protobuf messages or by hand, not by the
code under test."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import threading
import time as _time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from google.protobuf import descriptor_pb2, duration_pb2, timestamp_pb2, wrappers_pb2

from loadtest import traffic
from loadtest.generator import HintError, MessageGenerator
from loadtest.ledger import Ledger
from loadtest.producer import TokenBucket
from loadtest.recording import Recorded, RecordingError, RecordingWriter, read_recording, replay
from loadtest.shapes import ShapeError, plan_from_config
from protos import registry
from protos.registry import DescriptorSet

ROOT = Path(__file__).resolve().parent.parent
NOW = 1_795_000_000_123  # a fixed "now" (ms): 2026-11-18
SAMPLES = [traffic.BOOKING, traffic.DRIVER_PING, traffic.API_LOG]

# Generous boxes from the map, independent of the generator's own table.
BOXES = {
    "jakarta": ((-6.5, -5.9), (106.5, 107.2)),
    "bangkok": ((13.4, 14.1), (100.2, 100.95)),
    "singapore": ((1.1, 1.5), (103.5, 104.1)),
    "bandung": ((-7.1, -6.7), (107.4, 107.8)),
    "surabaya": ((-7.5, -7.0), (112.5, 112.9)),
    "ho-chi-minh": ((10.6, 11.0), (106.5, 106.9)),
}


@pytest.fixture(scope="module")
def dset():
    return registry.load()


def trip_set() -> DescriptorSet:
    """A schema with what the sample ones lack: wrappers, Duration, a oneof, a recursive message,
    maps of messages, repeated Timestamps and enums, unsigned and float fields."""
    files = []
    for module in (timestamp_pb2, wrappers_pb2, duration_pb2):
        fdp = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(fdp)
        files.append(fdp)
    T, L = descriptor_pb2.FieldDescriptorProto, descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(
        name="drill/trip.proto",
        package="drill",
        syntax="proto3",
        dependency=[
            "google/protobuf/timestamp.proto",
            "google/protobuf/wrappers.proto",
            "google/protobuf/duration.proto",
        ],
    )
    mode = f.enum_type.add(name="Mode")
    for i, n in enumerate(["MODE_UNSPECIFIED", "WALK", "RIDE", "FERRY"]):
        mode.value.add(name=n, number=i)
    trip = f.message_type.add(name="Trip")
    stop = trip.nested_type.add(name="Stop")
    stop.field.add(name="lat", number=1, type=T.TYPE_DOUBLE, label=L.LABEL_OPTIONAL)
    stop.field.add(name="lng", number=2, type=T.TYPE_DOUBLE, label=L.LABEL_OPTIONAL)
    stop.field.add(name="name", number=3, type=T.TYPE_STRING, label=L.LABEL_OPTIONAL)
    stop.field.add(name="mode", number=4, type=T.TYPE_ENUM, label=L.LABEL_OPTIONAL, type_name=".drill.Mode")
    stop.field.add(name="next", number=5, type=T.TYPE_MESSAGE, label=L.LABEL_OPTIONAL, type_name=".drill.Trip.Stop")
    for name, _number, value_type, type_name in [
        ("StopsByNameEntry", 4, T.TYPE_MESSAGE, ".drill.Trip.Stop"),
        ("CountersEntry", 5, T.TYPE_INT64, None),
    ]:
        entry = trip.nested_type.add(name=name)
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=T.TYPE_STRING, label=L.LABEL_OPTIONAL)
        value = entry.field.add(name="value", number=2, type=value_type, label=L.LABEL_OPTIONAL)
        if type_name:
            value.type_name = type_name
    fields = [
        ("id", 1, T.TYPE_STRING, None, L.LABEL_OPTIONAL),
        ("started_at", 2, T.TYPE_MESSAGE, ".google.protobuf.Timestamp", L.LABEL_OPTIONAL),
        ("stops", 3, T.TYPE_MESSAGE, ".drill.Trip.Stop", L.LABEL_REPEATED),
        ("stops_by_name", 4, T.TYPE_MESSAGE, ".drill.Trip.StopsByNameEntry", L.LABEL_REPEATED),
        ("counters", 5, T.TYPE_MESSAGE, ".drill.Trip.CountersEntry", L.LABEL_REPEATED),
        ("passengers", 6, T.TYPE_MESSAGE, ".google.protobuf.Int32Value", L.LABEL_OPTIONAL),
        ("note", 7, T.TYPE_MESSAGE, ".google.protobuf.StringValue", L.LABEL_OPTIONAL),
        ("fare", 8, T.TYPE_MESSAGE, ".google.protobuf.DoubleValue", L.LABEL_OPTIONAL),
        ("wait", 9, T.TYPE_MESSAGE, ".google.protobuf.Duration", L.LABEL_OPTIONAL),
        ("card", 10, T.TYPE_STRING, None, L.LABEL_OPTIONAL),
        ("wallet_id", 11, T.TYPE_INT64, None, L.LABEL_OPTIONAL),
        ("pings", 12, T.TYPE_MESSAGE, ".google.protobuf.Timestamp", L.LABEL_REPEATED),
        ("score", 13, T.TYPE_FLOAT, None, L.LABEL_OPTIONAL),
        ("big", 14, T.TYPE_UINT64, None, L.LABEL_OPTIONAL),
        ("blob", 15, T.TYPE_BYTES, None, L.LABEL_OPTIONAL),
        ("flag", 16, T.TYPE_BOOL, None, L.LABEL_OPTIONAL),
        ("modes", 17, T.TYPE_ENUM, ".drill.Mode", L.LABEL_REPEATED),
    ]
    trip.oneof_decl.add(name="payment")
    for name, number, kind, type_name, label in fields:
        fd = trip.field.add(name=name, number=number, type=kind, label=label)
        if type_name:
            fd.type_name = type_name
        if name in ("card", "wallet_id"):
            fd.oneof_index = 0
    fds = descriptor_pb2.FileDescriptorSet(file=[*files, f])
    return DescriptorSet(fds.SerializeToString(), source="test:trip")


TRIP = "drill.Trip"
WRAPPERS = {"google.protobuf.Int32Value", "google.protobuf.StringValue", "google.protobuf.DoubleValue"}


def assert_matches(msg, facts: dict, where: str = "") -> None:
    """The decoded message holds exactly the facts: every fact is there with its value, every field
    without a fact is absent. Written against protobuf's own API, field by field."""
    d = msg.DESCRIPTOR
    for f in d.fields:
        path = f"{where}{f.name}"
        repeated = f.label == f.LABEL_REPEATED
        is_map = repeated and f.message_type is not None and f.message_type.GetOptions().map_entry
        if f.name not in facts:
            if repeated:
                assert len(getattr(msg, f.name)) == 0, path
            elif f.message_type is not None or f.containing_oneof is not None:
                assert not msg.HasField(f.name), path
            continue
        want = facts[f.name]
        got = getattr(msg, f.name)
        if is_map:
            assert set(got.keys()) == set(want), path
            vf = f.message_type.fields_by_name["value"]
            for k, v in want.items():
                if vf.message_type is not None:
                    assert_matches(got[k], v, f"{path}[{k}].")
                else:
                    assert got[k] == v, f"{path}[{k}]"
        elif repeated:
            assert len(got) == len(want), path
            for i, (g, w) in enumerate(zip(got, want)):
                check_value(f, g, w, f"{path}[{i}]")
        else:
            if f.message_type is not None:
                assert msg.HasField(f.name), f"{path} should be present"
            check_value(f, got, want, path)


def check_value(f, got, want, path: str) -> None:
    mt = f.message_type.full_name if f.message_type is not None else None
    if mt in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        assert got.ToMilliseconds() == want, path
    elif mt in WRAPPERS:
        assert got.value == want, path
    elif mt is not None:
        assert_matches(got, want, path + ".")
    elif f.enum_type is not None:
        assert f.enum_type.values_by_number[got].name == want, path
    else:
        assert got == want, path


def generate(dset, name, n, hints=None, seed=0, now=NOW):
    g = MessageGenerator(dset, name, hints, seed=seed)
    cls = dset.message_class(name)
    out = []
    for i in range(n):
        value, facts = g.make(i, now)
        out.append((cls.FromString(value), facts))
    return out


# ------------------------------------------------------------------------------------ generator


@pytest.mark.parametrize("name", [*SAMPLES, TRIP])
def test_the_facts_are_what_the_encoded_message_decodes_to(dset, name):
    ds = trip_set() if name == TRIP else dset
    for msg, facts in generate(ds, name, 300, seed=3):
        assert_matches(msg, facts)


@pytest.mark.parametrize("name", [*SAMPLES, TRIP])
def test_the_same_seed_and_index_give_the_same_values_and_only_timestamps_follow_now(dset, name):
    ds = trip_set() if name == TRIP else dset
    a = MessageGenerator(ds, name, seed=11)
    b = MessageGenerator(ds, name, seed=11)  # a second generator: nothing carried over between them
    other = MessageGenerator(ds, name, seed=12)
    ts_fields = [
        f.name
        for f in ds.message_descriptor(name).fields
        if f.message_type is not None
        and f.message_type.full_name == "google.protobuf.Timestamp"
        and f.label != f.LABEL_REPEATED
    ]
    for i in (0, 1, 17, 10_000_000):
        assert a.make(i, NOW) == b.make(i, NOW)
        assert a.make(i, NOW).value != other.make(i, NOW).value
        later = a.make(i, NOW + 5000).facts
        earlier = a.make(i, NOW).facts
        for field in ts_fields:
            assert later[field] == earlier[field] + 5000
            del later[field], earlier[field]
        later.pop("pings", None)
        earlier.pop("pings", None)
        assert later == earlier
    assert a.make(3, NOW) != a.make(4, NOW)


def test_defaults_follow_the_field_types(dset):
    rows = generate(trip_set(), TRIP, 400, seed=5)
    modes, lengths, payments = Counter(), Counter(), Counter()
    for msg, _facts in rows:
        assert msg.started_at.ToMilliseconds() == NOW
        assert all(p.ToMilliseconds() == NOW for p in msg.pings)
        assert msg.HasField("passengers") and msg.HasField("note") and msg.HasField("fare")
        assert msg.WhichOneof("payment") in ("card", "wallet_id")
        payments[msg.WhichOneof("payment")] += 1
        lengths[len(msg.stops)] += 1
        lengths[len(msg.counters)] += 1
        for s in msg.stops:
            modes[s.mode] += 1
            # depth limit 3: Trip -> Stop -> Stop.next, and no deeper
            assert not s.next.HasField("next")
    assert set(modes) == {1, 2, 3}  # MODE_UNSPECIFIED (0) is not traffic
    assert set(lengths) == {0, 1, 2, 3}
    assert min(payments.values()) > 100  # both members of the oneof, about half each


def test_city_hints_fall_in_the_city_and_lat_and_lng_of_a_message_in_the_same_one(dset):
    hints = {
        "lat": {"lat": "jakarta"},
        "long": {"lng": "jakarta"},
        "pickup.latitude": {"lat": ["jakarta", "bangkok"]},
        "pickup.longitude": {"lng": ["jakarta", "bangkok"]},
        "dropoff.latitude": {"lat": "Ho Chi Minh"},
    }
    seen = Counter()
    for msg, _ in generate(dset, traffic.BOOKING, 600, hints):
        (la, lb), (ga, gb) = BOXES["jakarta"]
        assert la < msg.lat < lb and ga < msg.long < gb
        cities = [
            c
            for c, ((la, lb), (ga, gb)) in BOXES.items()
            if la < msg.pickup.latitude < lb and ga < msg.pickup.longitude < gb
        ]
        assert len(cities) == 1, (msg.pickup.latitude, msg.pickup.longitude)
        seen[cities[0]] += 1
        (la, lb), _ = BOXES["ho-chi-minh"]
        assert la < msg.dropoff.latitude < lb
    assert set(seen) == {"jakarta", "bangkok"}
    for msg, _ in generate(
        trip_set(), TRIP, 200, {"stops.lat": {"lat": "singapore"}, "stops.lng": {"lng": "singapore"}}
    ):
        (la, lb), (ga, gb) = BOXES["singapore"]
        assert all(la < s.lat < lb and ga < s.lng < gb for s in msg.stops)


def test_enum_weights_are_kept_within_a_chi_square_bound(dset):
    weights = {"COMPLETED": 6, "CREATED": 3, "DRIVER_FOUND": 1, "PICKED_UP": 0}
    n = 6000
    names = {
        v.number: v.name for v in dset.message_descriptor(traffic.BOOKING).fields_by_name["status"].enum_type.values
    }
    counts = Counter(names[m.status] for m, _ in generate(dset, traffic.BOOKING, n, {"status": {"enum": weights}}))
    assert counts["PICKED_UP"] == 0 and set(counts) == {"COMPLETED", "CREATED", "DRIVER_FOUND"}
    chi2 = sum((counts[k] - n * w / 10) ** 2 / (n * w / 10) for k, w in weights.items() if w)
    assert chi2 < 13.82  # 2 degrees of freedom, p = 0.001


def test_choice_weights_and_unhinted_enums_are_spread_as_asked(dset):
    n = 4000
    rows = generate(dset, traffic.BOOKING, n, {"vehicle_type": {"choice": ["bike", "car"], "weights": [3, 1]}})
    bikes = sum(m.vehicle_type == "bike" for m, _ in rows)
    assert abs(bikes - 0.75 * n) < 4 * math.sqrt(n * 0.75 * 0.25)
    services = Counter(m.service_type for m, _ in rows)
    assert set(services) == {1, 2, 3, 4, 5}  # every ServiceType but UNKNOWN_SERVICE (0)
    chi2 = sum((c - n / 5) ** 2 / (n / 5) for c in services.values())
    assert chi2 < 18.47  # 4 degrees of freedom, p = 0.001


def test_pools_ranges_consts_counts_and_jitter(dset):
    hints = {
        "driver_id": {"pool": {"prefix": "d", "size": 100}},
        "city_id": {"pool": {"size": 5}},
        "total_fare": {"range": [10_000, 90_000], "decimals": 2},
        "distance_km": {"range": [1, 2]},
        "customer_id": {"const": "c-1"},
        "items": {"choice": ["food", "drink"], "count": [2, 2]},
        "metadata": {"count": [1, 1]},
        "metadata.key": {"const": "app"},
        "metadata.value": {"choice": ["4.1", "4.2"]},
        "event_timestamp": {"now": {"jitter_ms": 500}},
        "is_scheduled": {"const": True},
    }
    rows = generate(dset, traffic.BOOKING, 3000, hints)
    ids = Counter(m.driver_id for m, _ in rows)
    assert all(re.fullmatch(r"d(\d+)", d) and 0 <= int(d[1:]) < 100 for d in ids)
    assert len(ids) == 100  # 3000 draws over 100 ids: missing one has odds about 1e-11
    assert {m.city_id for m, _ in rows} == {0, 1, 2, 3, 4}
    offsets = set()
    for m, _ in rows:
        assert 10_000 <= m.total_fare <= 90_000 and round(m.total_fare, 2) == m.total_fare
        assert 1 <= m.distance_km <= 2
        assert m.customer_id == "c-1" and m.is_scheduled
        assert len(m.items) == 2 and set(m.items) <= {"food", "drink"}
        assert list(m.metadata) == ["app"] and m.metadata["app"] in ("4.1", "4.2")
        offset = m.event_timestamp.ToMilliseconds() - NOW
        assert -500 <= offset <= 500
        offsets.add(offset)
    assert len(offsets) > 300
    assert m.booking_creation_time.ToMilliseconds() == NOW  # an unhinted Timestamp is now


def test_hints_on_wrappers_maps_of_messages_and_repeated_enums(dset):
    hints = {
        "passengers": {"range": [1, 4]},
        "note": {"choice": ["", "vip"]},
        "fare": {"const": 0.0},
        "modes": {"enum": {"FERRY": 1}, "count": [1, 3]},
        "stops_by_name.key": {"pool": {"prefix": "s", "size": 3}},
        "stops_by_name.value.mode": {"enum": {"WALK": 1}},
        "wait": {"const": 90_000},
        "big": {"range": [2**63, 2**64 - 1]},
        "score": {"range": [0.5, 0.75]},
    }
    for msg, facts in generate(trip_set(), TRIP, 300, hints):
        assert_matches(msg, facts)
        assert 1 <= msg.passengers.value <= 4
        assert msg.HasField("fare") and msg.fare.value == 0.0  # a wrapper at 0 is still there
        assert msg.note.value in ("", "vip") and msg.HasField("note")
        assert 1 <= len(msg.modes) <= 3 and set(msg.modes) == {3}
        assert set(msg.stops_by_name) <= {"s0", "s1", "s2"}
        assert all(s.mode == 1 for s in msg.stops_by_name.values())
        assert msg.wait.ToMilliseconds() == 90_000
        assert msg.big >= 2**63
        assert 0.5 <= msg.score <= 0.75


@pytest.mark.parametrize(
    "hints, message",
    [
        (
            {"statuss": {"const": "CREATED"}},
            "hint for 'statuss': gojek.esb.booking.BookingLogMessage (at BookingLogMessage) "
            "has no field 'statuss'; did you mean status?",
        ),
        ({"pickup.lattitude": {"lat": "jakarta"}}, "has no field 'lattitude'; did you mean latitude"),
        ({"city_id.x": {"const": 1}}, "hint for 'city_id.x': city_id is a int32, it has no fields"),
        (
            {"event_timestamp.seconds": {"const": 1}},
            "event_timestamp is a google.protobuf.Timestamp; hint the field itself",
        ),
        (
            {"status": {"enum": {"COMPLETE": 1}}},
            "hint for 'status': gojek.esb.booking.BookingStatus has no value 'COMPLETE'; did you mean COMPLETED?",
        ),
        (
            {"status": {"enum": {"COMPLETED": -1, "CREATED": 2}}},
            "hint for 'status': enum: weight -1 for 'COMPLETED' is not a finite number >= 0",
        ),
        ({"status": {"enum": {"COMPLETED": 0}}}, "hint for 'status': enum: the weights add up to zero"),
        ({"status": {"enum": {"COMPLETED": "many"}}}, "weight 'many' for 'COMPLETED' is not a finite number"),
        (
            {"vehicle_type": {"choice": ["a", "b"], "weights": [1]}},
            "hint for 'vehicle_type': choice has 1 weights for 2 values",
        ),
        ({"vehicle_type": {"choice": ["a", 1]}}, "hint for 'vehicle_type': choice 1 does not fit a string field"),
        ({"vehicle_type": {"weights": [1]}}, "hint for 'vehicle_type': 'weights' goes with 'choice'"),
        ({"lat": {"enum": {"A": 1}}}, "hint for 'lat': enum needs an enum field; lat is a double field"),
        (
            {"status": {"lat": "jakarta"}},
            "hint for 'status': lat needs a double or float field; status is a enum "
            "gojek.esb.booking.BookingStatus field",
        ),
        ({"lat": {"lat": "jakartta"}}, "hint for 'lat': unknown city 'jakartta'; did you mean jakarta?"),
        ({"lat": {"lat": "jakarta"}, "long": {"lng": "bangkok"}}, "lat and lng fields of one message share a city"),
        (
            {"driver_id": {"pool": {"prefix": "d", "size": 0}}},
            "hint for 'driver_id': pool size must be an integer >= 1",
        ),
        (
            {"city_id": {"pool": {"prefix": "c", "size": 3}}},
            "hint for 'city_id': a pool of a int32 field has no prefix",
        ),
        ({"lat": {"pool": {"size": 3}}}, "hint for 'lat': pool needs a string, bytes or integer field"),
        ({"city_id": {"range": [5, 1]}}, "hint for 'city_id': range [5, 1] has lo > hi"),
        (
            {"city_id": {"range": [0, 2**40]}},
            "hint for 'city_id': range bound 1099511627776 is outside the int32 range",
        ),
        ({"city_id": {"range": [1, 2.5]}}, "range of a int32 field wants integers"),
        ({"vehicle_type": {"range": [1, 2]}}, "hint for 'vehicle_type': range needs a number field"),
        ({"city_id": {"now": True}}, "hint for 'city_id': now needs a google.protobuf.Timestamp field"),
        ({"event_timestamp": {"now": {"jitter": 5}}}, 'now wants true or {"jitter_ms": 500}'),
        ({"event_timestamp": {"const": "today"}}, "a google.protobuf.Timestamp is given as integer milliseconds"),
        (
            {"pickup": {"const": 1}},
            "hint for 'pickup': pickup is a message (gojek.esb.booking.BookingLogMessage.Location); hint its fields",
        ),
        (
            {"metadata": {"choice": ["a"]}},
            "hint for 'metadata': metadata is a map; hint metadata.key and metadata.value",
        ),
        ({"items": {"count": [3, 1]}}, "hint for 'items': count wants [lo, hi]"),
        ({"city_id": {"count": [1, 2]}}, "hint for 'city_id': count is for repeated and map fields"),
        ({"status": {"choise": ["CREATED"]}}, "hint for 'status': unknown hint kind 'choise'; did you mean choice?"),
        ({"status": {"const": "CREATED", "choice": ["CREATED"]}}, "hint for 'status': one kind per field"),
        ({"status": "CREATED"}, "hint for 'status': 'CREATED' is not a dict"),
    ],
)
def test_a_hint_that_does_not_fit_is_refused_naming_path_and_problem(dset, hints, message):
    with pytest.raises(HintError) as e:
        MessageGenerator(dset, traffic.BOOKING, hints)
    assert message in str(e.value)


def test_a_hint_below_the_depth_limit_is_refused(dset):
    with pytest.raises(HintError, match=r"hint for 'stops.next.next.name': nothing is generated there"):
        MessageGenerator(trip_set(), TRIP, {"stops.next.next.name": {"const": "x"}})


# ---------------------------------------------------------------------------------------- ledger


def small_ledger() -> Ledger:
    """Nine sends by hand: event times across three 10 s windows, one failure."""
    ledger = Ledger(["service_type", "total_fare", "status"])
    rows = [  # event_time_ms, service, fare, status, partition
        (1_000, "GO_RIDE", 10.0, "COMPLETED", 0),
        (9_999, "GO_RIDE", 5.5, "COMPLETED", 1),
        (2_000, "GO_CAR", 20.0, "CREATED", 0),
        (10_000, "GO_RIDE", 1.0, "COMPLETED", 0),
        (15_000, "GO_CAR", 2.0, "COMPLETED", 1),
        (19_999, "GO_CAR", 3.0, "COMPLETED", 1),
        (35_000, "GO_RIDE", 7.25, "CREATED", 0),
        (35_001, "GO_RIDE", 0.75, "COMPLETED", 2),
    ]
    for i, (t, service, fare, status, partition) in enumerate(rows):
        ledger.record(
            index=i,
            topic="t",
            partition=partition,
            offset=i,
            timestamp_ms=100_000 + i,
            key=None,
            event_time_ms=t,
            facts={"service_type": service, "total_fare": fare, "status": status},
        )
    ledger.record_failure(
        index=99,
        topic="t",
        key=b"k",
        event_time_ms=1_500,
        error=RuntimeError("boom"),
        facts={"service_type": "GO_RIDE", "total_fare": 1000.0, "status": "COMPLETED"},
    )
    return ledger


def test_expected_windows_match_a_hand_computed_example():
    got = small_ledger().expected_windows(
        10_000,
        keys=["service_type"],
        measures={"n": ("count", None), "fare": ("sum", "total_fare"), "top": ("max", "total_fare")},
    )
    ts = lambda s: pd.Timestamp(s * 1000, unit="ms", tz="UTC")  # noqa: E731
    want = pd.DataFrame(
        {
            "window_start": [ts(0), ts(0), ts(10), ts(10), ts(30)],
            "window_end": [ts(10), ts(10), ts(20), ts(20), ts(40)],
            "service_type": ["GO_CAR", "GO_RIDE", "GO_CAR", "GO_RIDE", "GO_RIDE"],
            "n": [1, 2, 2, 1, 2],
            "fare": [20.0, 15.5, 5.0, 1.0, 8.0],
            "top": [20.0, 10.0, 3.0, 1.0, 7.25],
        }
    )
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    completed = small_ledger().expected_windows(10_000, measures={"n": ("count", None)}, where={"status": "COMPLETED"})
    assert completed["n"].tolist() == [2, 3, 1]
    assert [t.value // 10**6 for t in completed["window_start"]] == [0, 10_000, 30_000]
    by_kafka_time = small_ledger().expected_windows(60_000, time="kafka")
    assert by_kafka_time["count"].tolist() == [8]


def test_ledger_counts_save_and_load():
    ledger = small_ledger()
    assert (ledger.acked, ledger.failed, len(ledger)) == (8, 1, 9)
    assert ledger.counts_by_partition() == {("t", 0): 4, ("t", 1): 3, ("t", 2): 1}
    assert ledger.counts_by_topic() == {"t": 8}
    assert ledger.failures == [
        {"index": 99, "topic": "t", "key": b"k", "event_time_ms": 1_500, "error": "RuntimeError: boom"}
    ]


def test_a_saved_ledger_loads_back_the_same(tmp_path):
    ledger = small_ledger()
    ledger.record(
        index=100,
        topic="u",
        partition=3,
        offset=7,
        timestamp_ms=None,
        key=b"\x00\xff",
        event_time_ms=None,
        facts={"total_fare": 0.1 + 0.2},
    )
    ledger.save(tmp_path / "l.parquet")
    back = Ledger.load(tmp_path / "l.parquet")
    pd.testing.assert_frame_equal(back.frame(failures=True), ledger.frame(failures=True))
    assert back.frame(failures=True)["total_fare"].iloc[-1] == 0.1 + 0.2  # float bits kept
    assert back.counts_by_partition() == ledger.counts_by_partition() and back.failed == 1
    (tmp_path / "x.parquet").write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="x.parquet is not a readable ledger"):
        Ledger.load(tmp_path / "x.parquet")


def test_ledger_appends_from_many_threads_are_all_kept():
    ledger = Ledger(["n"])

    def work(t: int) -> None:
        for i in range(3000):
            ledger.record(
                index=i, topic="t", partition=t, offset=i, timestamp_ms=0, key=None, event_time_ms=i, facts={"n": i}
            )

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ledger.counts_by_partition() == {("t", p): 3000 for p in range(6)}
    df = ledger.frame()
    assert len(df) == 18_000 and (df["offset"] == df["n"]).all()  # each row's columns stayed together


def test_ledger_refuses_unknown_keys_and_clashing_fields():
    with pytest.raises(ValueError, match="'driver_id' is not kept by this ledger"):
        small_ledger().expected_windows(1000, keys=["driver_id"])
    with pytest.raises(ValueError, match="measure 'x': want \\(aggregate, fact path\\)"):
        small_ledger().expected_windows(1000, measures={"x": ("median", "total_fare")})
    with pytest.raises(ValueError, match="fact field 'offset' has the name of a ledger column"):
        Ledger(["offset"])


# ---------------------------------------------------------------------------------- token bucket


class FakeClock:
    def __init__(self, overshoot: float = 0.0):
        self.t = 100.0
        self.overshoot = overshoot

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s + self.overshoot  # every wake-up late, as a loaded machine does


@pytest.mark.parametrize("overshoot", [0.0, 0.003])
def test_the_token_bucket_keeps_the_long_run_rate_despite_late_wake_ups(overshoot):
    clock = FakeClock(overshoot)
    bucket = TokenBucket(200, clock=clock, sleep=clock.sleep)
    for _ in range(2001):
        assert bucket.acquire()
    # the first token is there at once; 2000 more at 200/s take 10 s, late wake-ups or not
    assert 9.99 <= clock.t - 100.0 <= 10.0 + 2 * overshoot + 1e-9
    assert bucket.acquire(deadline=clock.t + 0.001) is False  # the next token is 5 ms away


# ---------------------------------------------------------------------------- recording, replay


def test_a_recording_reads_back_what_was_written_and_broken_files_are_named(tmp_path):
    frames = [
        Recorded(1000, None, b"v1", "t", 0, 5),
        Recorded(1001, b"", b"", "t", 1, 6, 1, (("h", b"x"),)),
        Recorded(1002, b"k", None, "u", 2, 7),
    ]
    path = tmp_path / "a.rec"
    with RecordingWriter(path) as w:
        for f in frames:
            w.write(f)
    assert list(read_recording(path)) == frames  # a null key is not an empty one
    data = path.read_bytes()
    (tmp_path / "cut.rec").write_bytes(data[:-3])
    with pytest.raises(RecordingError, match=r"cut.rec: frame 3 at byte \d+ is truncated"):
        list(read_recording(tmp_path / "cut.rec"))
    (tmp_path / "junk.rec").write_bytes(b"\x05hello")
    with pytest.raises(RecordingError, match="junk.rec: frame 1 at byte 0 is not a recorded message"):
        list(read_recording(tmp_path / "junk.rec"))


class FakeProducer:
    """Acknowledges every send at once, noting the (fake) time it was called."""

    def __init__(self, clock):
        self.clock, self.sent = clock, []

    def send(self, topic, value=None, key=None, partition=None, headers=None):
        from kafka.future import Future
        from kafka.producer.future import RecordMetadata

        self.sent.append((self.clock(), topic, key, value, partition))
        md = dict.fromkeys(RecordMetadata._fields) | {
            "topic": topic,
            "partition": partition or 0,
            "offset": len(self.sent) - 1,
            "timestamp": 0,
        }
        return Future().success(RecordMetadata(**md))

    def flush(self, timeout=None):
        pass


def test_replay_keeps_the_spacing_scaled_by_speed_and_moves_event_time(dset, tmp_path):
    cls = dset.message_class(traffic.BOOKING)
    recorded_at = [50_000, 50_100, 50_250, 51_000]  # Kafka timestamps (ms)
    event_at = [49_990, 50_100, 50_000, 51_500]  # event times: one late, one early
    path = tmp_path / "r.rec"
    with RecordingWriter(path) as w:
        for i, (ts, ev) in enumerate(zip(recorded_at, event_at)):
            m = cls(order_number=f"o{i}", city_id=i)
            m.event_timestamp.FromMilliseconds(ev)
            w.write(Recorded(ts, f"k{i}".encode(), m.SerializeToString(), "orig", i % 2, i))
        w.write(Recorded(51_200, None, b"\xff\xff not a booking", "orig", 0, 9))
    clock = FakeClock()
    producer = FakeProducer(clock)
    before = _time.time_ns() // 1_000_000
    result = replay(
        path,
        producer,
        "copy",
        speed=2.0,
        message_name=traffic.BOOKING,
        descriptor_set=dset,
        clock=clock,
        sleep=clock.sleep,
    )
    after = _time.time_ns() // 1_000_000
    assert (result.sent, result.acked, result.failed, result.not_moved) == (5, 5, 0, 1)
    sent_at = [t - 100.0 for t, *_ in producer.sent]
    assert sent_at == pytest.approx([0.0, 0.05, 0.125, 0.5, 0.6])  # (ts - 50 000) / 2, in seconds
    assert [p[1] for p in producer.sent] == ["copy"] * 5
    assert [p[2] for p in producer.sent] == [b"k0", b"k1", b"k2", b"k3", None]
    assert producer.sent[-1][3] == b"\xff\xff not a booking"  # undecodable: sent as recorded
    moved = [cls.FromString(p[3]) for p in producer.sent[:4]]
    new_events = [m.event_timestamp.ToMilliseconds() for m in moved]
    start = new_events[0] + 5  # event' = now0 + (event - 50 000) / 2: the first is now0 - 5
    assert before <= start <= after
    assert [e - start for e in new_events] == [-5, 50, 0, 750]
    for i, m in enumerate(moved):
        assert (m.order_number, m.city_id) == (f"o{i}", i)
    assert result.ledger.acked == 5


# ----------------------------------------------------------------------------------- shapes


def test_shapes_give_users_and_spawn_rates_over_time():
    steps = plan_from_config(
        {
            "shape": "steps",
            "per_user_rate": 20,
            "steps": [{"rate": 40, "duration_s": 5}, {"users": 5, "duration_s": 5}, {"rate": 20, "duration_s": 2}],
        }
    )
    assert [steps.tick(t) for t in (0, 4.9, 5, 9.99, 10, 11.9)] == [
        (2, 5.0),
        (2, 5.0),
        (5, 5.0),
        (5, 5.0),
        (1, 5.0),
        (1, 5.0),
    ]
    assert steps.tick(12) is None and steps.rate_at(6) == 100
    assert steps.nominal_messages() == 40 * 5 + 100 * 5 + 20 * 2
    ramp = plan_from_config(
        {"shape": "ramp", "from_rate": 10, "to_rate": 50, "duration_s": 25, "step_s": 5, "spawn_rate": 2}
    )
    assert [ramp.tick(t)[0] for t in (0, 5, 10, 15, 20, 24.9)] == [1, 2, 3, 4, 5, 5]
    assert ramp.tick(25) is None and ramp.tick(0)[1] == 2
    spike = plan_from_config(
        {"shape": "spike", "rate": 10, "spike_rate": 100, "spike_at_s": 3, "spike_s": 2, "duration_s": 8}
    )
    assert [spike.tick(t)[0] for t in (0, 2.9, 3, 4.9, 5, 7.9)] == [1, 1, 10, 10, 1, 1]
    assert spike.tick(8) is None
    constant = plan_from_config('{"shape": "constant", "rate": 30, "duration_s": 4}')
    assert constant.tick(3.9) == (3, 3.0) and constant.tick(4) is None


@pytest.mark.parametrize(
    "config, message",
    [
        ({"shape": "wave"}, "shape: 'wave' is not one of constant, steps, ramp, spike"),
        (
            {"shape": "constant", "rate": 25, "duration_s": 5},
            "constant.rate: 25 msg/s is not a whole number of users at 10 msg/s each; use 20 or 30",
        ),
        ({"shape": "constant", "rate": 20}, "constant: missing 'duration_s'"),
        ({"shape": "steps", "steps": [{"rate": 10, "duration_s": 0}]}, "steps[0].duration_s: must be > 0"),
        ({"shape": "steps", "steps": [{"rate": 10, "secs": 1}]}, "steps[0]: unknown key 'secs'"),
        ({"shape": "steps", "steps": []}, "steps.steps: want a non-empty list"),
        (
            {"shape": "spike", "rate": 10, "spike_rate": 20, "spike_at_s": 5, "spike_s": 10, "duration_s": 12},
            "spike: the spike (5 s + 10 s) ends after duration_s 12",
        ),
        ({"shape": "constant", "rate": 10, "duration_s": 5, "users": 1}, "constant: give 'rate' or 'users', not both"),
        (
            {"shape": "ramp", "from_rate": 10, "to_rate": 20, "duration_s": 5, "per_user_rate": -1},
            "ramp.per_user_rate: must be > 0",
        ),
    ],
)
def test_a_bad_shape_is_refused_naming_the_key(config, message):
    with pytest.raises(ShapeError) as e:
        plan_from_config(config)
    assert message in str(e.value)


# ------------------------------------------------------------------------------------ commands


def test_every_loadtest_command_has_help():
    for command in ([], ["produce"], ["record"], ["replay"], ["shapes"]):
        proc = subprocess.run(
            [sys.executable, "-m", "loadtest", *command, "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("usage: python -m loadtest" + (f" {command[0]}" if command else ""))


def test_the_shapes_command_prints_the_plan_and_refuses_a_bad_one(tmp_path):
    shape = tmp_path / "s.json"
    shape.write_text('{"shape": "steps", "per_user_rate": 5, "steps": [{"rate": 10, "duration_s": 3}]}')
    ok = subprocess.run(
        [sys.executable, "-m", "loadtest", "shapes", str(shape)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert ok.returncode == 0, ok.stderr
    assert "steps: 3 s, 5 msg/s per user" in ok.stdout and "2 users" in ok.stdout and "locust -f" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "loadtest", "shapes", '{"shape": "steps"}'],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert bad.returncode == 2
    assert (
        bad.stderr.strip() == "python -m loadtest shapes: steps.steps: want a non-empty list of "
        '{"rate": R, "duration_s": S}'
    )
