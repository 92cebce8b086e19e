"""protos.compat: every breaking and compatible change, on schemas compiled by
the real protoc (the same code path as `make protos`)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from protos import compat
from protos.__main__ import main as cli
from protos.compile import compile_sources
from protos.registry import DescriptorSet
from protos.versions import RELEASED_PATH, SRC_DIR

_counter = itertools.count()


def compile_text(root: Path, files: dict[str, str]) -> bytes:
    """Write `files` (path -> .proto text) into a fresh folder and compile it."""
    src = root / f"src{next(_counter)}"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    return compile_sources(src)


HEADER = 'syntax = "proto3";\npackage t.v1;\nimport "google/protobuf/timestamp.proto";\n'

BASE = (
    HEADER
    + """
enum Status { UNKNOWN_STATUS = 0; CREATED = 1; COMPLETED = 2; }
enum Unused { UNUSED_UNKNOWN = 0; }
message Driver { string driver_id = 1; }
message Booking {
  message Location { double latitude = 1; double longitude = 2; }
  reserved 9;
  string order_number = 1;
  Status status = 2;
  int32 city_id = 3;
  Location pickup = 4;
  google.protobuf.Timestamp event_timestamp = 5;
  repeated string items = 6;
  map<string, string> metadata = 7;
}
"""
)


def edit(old: str, new: str, text: str = BASE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


@pytest.fixture(scope="module")
def base_set(tmp_path_factory) -> bytes:
    return compile_text(tmp_path_factory.mktemp("base"), {"t/booking.proto": BASE})


def changes_for(tmp_path: Path, base_set: bytes, files: dict[str, str]) -> list[compat.Change]:
    return compat.check(base_set, compile_text(tmp_path, files))


def find(changes: list[compat.Change], kind: str) -> compat.Change:
    matching = [c for c in changes if c.kind == kind]
    assert matching, f"no {kind} in:\n{compat.format_report(changes)}"
    return matching[0]


def one_file(text: str) -> dict[str, str]:
    return {"t/booking.proto": text}


BREAKING = [
    (
        "scalar type change",
        one_file(edit("int32 city_id", "int64 city_id")),
        "field_type_changed",
        "t.v1.Booking.city_id (field 3)",
        "from int32 to int64",
    ),
    (
        "message type change",
        one_file(edit("Location pickup", "google.protobuf.Timestamp pickup")),
        "field_type_changed",
        "t.v1.Booking.pickup (field 4)",
        "t.v1.Booking.Location to google.protobuf.Timestamp",
    ),
    (
        "enum type change",
        one_file(edit("Status status", "Unused status")),
        "field_type_changed",
        "t.v1.Booking.status (field 2)",
        "t.v1.Status to t.v1.Unused",
    ),
    (
        "repeated to singular",
        one_file(edit("repeated string items", "string items")),
        "field_label_changed",
        "t.v1.Booking.items (field 6)",
        "repeated string to string",
    ),
    (
        "singular to repeated",
        one_file(edit("string order_number", "repeated string order_number")),
        "field_label_changed",
        "t.v1.Booking.order_number (field 1)",
        "string to repeated string",
    ),
    (
        "map value type change",
        one_file(edit("map<string, string> metadata", "map<string, int64> metadata")),
        "field_type_changed",
        "t.v1.Booking.metadata (field 7)",
        "map<string, string> to map<string, int64>",
    ),
    (
        "map to repeated",
        one_file(edit("map<string, string> metadata", "repeated string metadata")),
        "field_type_changed",
        "t.v1.Booking.metadata (field 7)",
        "map<string, string> to repeated string",
    ),
    (
        "field number change",
        one_file(edit("int32 city_id = 3;", "int32 city_id = 8;")),
        "field_number_changed",
        "t.v1.Booking.city_id (field 8)",
        "from number 3 to 8",
    ),
    (
        "field number reused by another name",
        one_file(edit("int32 city_id = 3;", "int32 city_id = 8; string vehicle_type = 3;")),
        "field_number_reused",
        "t.v1.Booking.vehicle_type (field 3)",
        "number 3 used to be 'city_id' (int32)",
    ),
    (
        "reserved number reused",
        one_file(edit("reserved 9;", "string note = 9;")),
        "field_number_reused",
        "t.v1.Booking.note (field 9)",
        "which was reserved",
    ),
    (
        "field removed without reservation",
        one_file(edit("int32 city_id = 3;", "")),
        "field_removed",
        "t.v1.Booking.city_id (field 3)",
        "without reserving its number 3",
    ),
    (
        "field renamed",
        one_file(edit("int32 city_id = 3;", "int32 city = 3;")),
        "field_renamed",
        "t.v1.Booking.city (field 3)",
        "SQL queries and JSON refer to fields by name",
    ),
    (
        "message removed",
        one_file(edit("message Driver { string driver_id = 1; }", "")),
        "message_removed",
        "t.v1.Driver",
        "'t.v1.Driver' (in t/booking.proto) was removed",
    ),
    (
        "message moved to another package",
        {
            "t/booking.proto": edit("message Driver { string driver_id = 1; }", ""),
            "t2/driver.proto": 'syntax = "proto3";\npackage t.v2;\nmessage Driver { string driver_id = 1; }\n',
        },
        "message_removed",
        "t.v1.Driver",
        "t.v2.Driver is new: moving a message to another package is a removal",
    ),
    (
        "message moved to another file",
        {
            "t/booking.proto": edit("message Driver { string driver_id = 1; }", ""),
            "t/driver.proto": 'syntax = "proto3";\npackage t.v1;\nmessage Driver { string driver_id = 1; }\n',
        },
        "message_moved",
        "t.v1.Driver",
        "moved from t/booking.proto to t/driver.proto",
    ),
    (
        "enum removed",
        one_file(edit("enum Unused { UNUSED_UNKNOWN = 0; }", "")),
        "enum_removed",
        "t.v1.Unused",
        "enum 't.v1.Unused' (in t/booking.proto) was removed",
    ),
    (
        "enum value number change",
        one_file(edit("COMPLETED = 2;", "COMPLETED = 3;")),
        "enum_value_number_changed",
        "t.v1.Status.COMPLETED (value 3)",
        "changed from 2 to 3",
    ),
    (
        "enum value removed without reservation",
        one_file(edit("COMPLETED = 2;", "")),
        "enum_value_removed",
        "t.v1.Status.COMPLETED (value 2)",
        "without reserving its number 2",
    ),
    (
        "enum value renamed",
        one_file(edit("COMPLETED = 2;", "DONE = 2;")),
        "enum_value_renamed",
        "t.v1.Status.DONE (value 2)",
        "SQL compares enum values by name",
    ),
    (
        "enum value number reused",
        one_file(edit("COMPLETED = 2;", "COMPLETED = 3; CANCELLED = 2;")),
        "enum_value_number_reused",
        "t.v1.Status.CANCELLED (value 2)",
        "number 2 used to mean COMPLETED",
    ),
]


@pytest.mark.parametrize("files,kind,where,text", [c[1:] for c in BREAKING], ids=[c[0] for c in BREAKING])
def test_each_breaking_change_is_reported_as_breaking(tmp_path, base_set, files, kind, where, text):
    change = find(changes_for(tmp_path, base_set, files), kind)
    assert change.breaking
    assert change.where == where
    assert text in change.message


COMPATIBLE = [
    (
        "field added",
        one_file(edit("int32 city_id = 3;", "int32 city_id = 3; string driver_id = 8;")),
        "field_added",
        "t.v1.Booking.driver_id (field 8)",
        "new field 'driver_id' (string)",
    ),
    (
        "message added",
        one_file(BASE + "message Rating { int32 stars = 1; }\n"),
        "message_added",
        "t.v1.Rating",
        "new message 't.v1.Rating'",
    ),
    (
        "enum added",
        one_file(BASE + "enum Tier { TIER_UNKNOWN = 0; }\n"),
        "enum_added",
        "t.v1.Tier",
        "new enum 't.v1.Tier'",
    ),
    (
        "enum value added",
        one_file(edit("COMPLETED = 2;", "COMPLETED = 2; CANCELLED = 3;")),
        "enum_value_added",
        "t.v1.Status.CANCELLED (value 3)",
        "new value 'CANCELLED' = 3",
    ),
    (
        "field removed with its number reserved",
        one_file(edit("int32 city_id = 3;", 'reserved 3; reserved "city_id";')),
        "field_removed",
        "t.v1.Booking.city_id (field 3)",
        "its number 3 is reserved",
    ),
    (
        "enum value removed with its number reserved",
        one_file(edit("COMPLETED = 2;", "reserved 2;")),
        "enum_value_removed",
        "t.v1.Status.COMPLETED (value 2)",
        "its number 2 is reserved",
    ),
    (
        "enum alias added",
        one_file(
            edit(
                "COMPLETED = 2;",
                "COMPLETED = 2; FINISHED = 2;",
                edit("enum Status {", "enum Status { option allow_alias = true;"),
            )
        ),
        "enum_value_added",
        "t.v1.Status.FINISHED (value 2)",
        "new alias 'FINISHED' for COMPLETED",
    ),
    (
        "nested message added",
        one_file(edit("message Driver {", "message Driver { message Car { string plate = 1; }")),
        "message_added",
        "t.v1.Driver.Car",
        "new message 't.v1.Driver.Car'",
    ),
]


@pytest.mark.parametrize("files,kind,where,text", [c[1:] for c in COMPATIBLE], ids=[c[0] for c in COMPATIBLE])
def test_each_compatible_change_is_reported_as_not_breaking(tmp_path, base_set, files, kind, where, text):
    changes = changes_for(tmp_path, base_set, files)
    assert compat.breaking(changes) == [], compat.format_report(changes)
    change = find(changes, kind)
    assert change.where == where
    assert text in change.message


def test_an_identical_schema_has_no_changes(tmp_path, base_set):
    assert changes_for(tmp_path, base_set, one_file(BASE)) == []


def test_a_rename_that_also_changes_the_type_reports_both(tmp_path, base_set):
    changes = changes_for(tmp_path, base_set, one_file(edit("int32 city_id = 3;", "string city = 3;")))
    assert {c.kind for c in compat.breaking(changes)} == {"field_renamed", "field_type_changed"}


def test_swapping_two_field_numbers_reports_both_fields(tmp_path, base_set):
    text = edit("int32 city_id = 3;", "int32 city_id = 4;", edit("Location pickup = 4;", "Location pickup = 3;"))
    changes = changes_for(tmp_path, base_set, one_file(text))
    moved = sorted(c.where for c in changes if c.kind == "field_number_changed")
    assert moved == ["t.v1.Booking.city_id (field 4)", "t.v1.Booking.pickup (field 3)"]


def test_removing_a_message_reports_it_once_not_also_its_nested_messages(tmp_path, base_set):
    text = edit("message Driver {", "message Driver { message Car { string plate = 1; }")
    old = compile_text(tmp_path, one_file(text))
    new = compile_text(
        tmp_path, one_file(edit("message Driver { message Car { string plate = 1; } string driver_id = 1; }", "", text))
    )
    assert [c.where for c in compat.check(old, new) if c.kind == "message_removed"] == ["t.v1.Driver"]


def test_breaking_changes_are_listed_first(tmp_path, base_set):
    text = edit("int32 city_id = 3;", "int64 city_id = 3; string driver_id = 8;")
    changes = changes_for(tmp_path, base_set, one_file(text))
    assert [c.breaking for c in changes] == [True, False]
    assert "BREAKING" in str(changes[0]) and "field_type_changed" in str(changes[0])


def test_check_accepts_bytes_file_descriptor_sets_and_descriptor_sets(base_set):
    ds = DescriptorSet(base_set)
    assert compat.check(base_set, ds.file_set) == compat.check(ds, base_set) == []
    with pytest.raises(TypeError, match="FileDescriptorSet"):
        compat.check("not a set", base_set)


def test_the_current_sources_are_compatible_with_the_released_set():
    changes = compat.check(RELEASED_PATH.read_bytes(), compile_sources(SRC_DIR))
    assert compat.breaking(changes) == [], "protos/src breaks protos/released/daggers.desc:\n" + compat.format_report(
        changes
    )


def test_the_check_command_exits_1_and_lists_breaking_changes(tmp_path, base_set, capsys):
    released = tmp_path / "released.desc"
    released.write_bytes(base_set)
    src = tmp_path / "src"
    (src / "t").mkdir(parents=True)
    (src / "t/booking.proto").write_text(edit("COMPLETED = 2;", "DONE = 2;"))
    assert cli(["check", "--against", str(released), "--src", str(src)]) == 1
    out = capsys.readouterr().out
    assert "1 breaking" in out and "t.v1.Status.DONE (value 2)" in out and "enum_value_renamed" in out


def test_the_check_command_exits_0_when_changes_are_compatible(tmp_path, base_set, capsys):
    released = tmp_path / "released.desc"
    released.write_bytes(base_set)
    src = tmp_path / "src"
    (src / "t").mkdir(parents=True)
    (src / "t/booking.proto").write_text(BASE + "message Rating { int32 stars = 1; }\n")
    assert cli(["check", "--against", str(released), "--src", str(src)]) == 0
    assert "0 breaking, 1 compatible" in capsys.readouterr().out
