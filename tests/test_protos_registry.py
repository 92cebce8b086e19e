"""protos.compile and protos.registry: deterministic versions, loading from
protos/descriptors and from stencil URLs (file:// and http://), pins."""

from __future__ import annotations

import functools
import itertools
import json
import json as _json
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from protos import registry
from protos.__main__ import main as cli
from protos.compile import compile_protos, compile_sources, publish
from protos.errors import CompileError, SchemaError
from protos.registry import DescriptorSet, find_version, load
from protos.versions import DESCRIPTORS_DIR, RELEASED_PATH, SRC_DIR, read_index, version_of

_counter = itertools.count()

BOOKING = """syntax = "proto3";
package t.booking;
import "google/protobuf/timestamp.proto";
// a comment
message BookingLogMessage {
  string order_number = 1;
  google.protobuf.Timestamp event_timestamp = 5;
  double lat = 10;
  double long = 11;
  map<string, string> metadata = 17;
}
"""
APILOG = """syntax = "proto3";
package t.apilog;
import "google/protobuf/timestamp.proto";
message ApiLogMessage {
  string request_id = 1;
  google.protobuf.Timestamp event_timestamp = 5;
}
"""


def write_src(root: Path, files: dict[str, str]) -> Path:
    src = root / f"src{next(_counter)}"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    return src


def compile_text(root: Path, files: dict[str, str]) -> bytes:
    return compile_sources(write_src(root, files))


@pytest.fixture(scope="module")
def booking_set(tmp_path_factory) -> bytes:
    return compile_text(tmp_path_factory.mktemp("booking"), {"t/booking.proto": BOOKING})


@pytest.fixture(scope="module")
def apilog_set(tmp_path_factory) -> bytes:
    return compile_text(tmp_path_factory.mktemp("apilog"), {"t/apilog.proto": APILOG})


# ---------------------------------------------------------------- compile


def test_compiling_the_same_sources_twice_in_different_folders_gives_the_same_bytes(tmp_path, booking_set):
    again = compile_text(tmp_path / "elsewhere", {"t/booking.proto": BOOKING})
    assert again == booking_set
    assert str(tmp_path).encode() not in again and b"/tmp" not in again


def test_comment_only_edits_do_not_make_a_new_version(tmp_path, booking_set):
    edited = compile_text(tmp_path, {"t/booking.proto": BOOKING.replace("// a comment", "// another one")})
    assert version_of(edited) == version_of(booking_set)


def test_file_names_in_the_set_are_relative_to_the_source_folder(booking_set):
    assert DescriptorSet(booking_set).files() == ["google/protobuf/timestamp.proto", "t/booking.proto"]


def test_a_protoc_error_names_the_file_and_line(tmp_path):
    with pytest.raises(CompileError, match=r"t/bad\.proto:3:.*"):
        compile_text(tmp_path, {"t/bad.proto": 'syntax = "proto3";\npackage t;\nmessage M { strin x = 1; }\n'})


def test_an_empty_source_folder_is_an_error(tmp_path):
    with pytest.raises(CompileError, match="no .proto files under"):
        compile_sources(tmp_path)


def test_publishing_keeps_old_versions_and_moves_latest(tmp_path, booking_set):
    out = tmp_path / "descriptors"
    first = compile_protos(write_src(tmp_path, {"t/booking.proto": BOOKING}), out)
    assert first.created and first.version == version_of(booking_set)
    assert first.path.read_bytes() == booking_set

    same = compile_protos(write_src(tmp_path, {"t/booking.proto": BOOKING}), out)
    assert (same.created, same.latest_changed) == (False, False)

    grown = BOOKING.replace("double lat = 10;", "double lat = 10;\n  string driver_id = 7;")
    second = compile_protos(write_src(tmp_path, {"t/booking.proto": grown}), out)
    assert second.created and second.version != first.version
    index = read_index(out)
    assert index.latest == second.version and set(index.versions) == {first.version, second.version}
    assert first.path.read_bytes() == booking_set  # still there for jobs pinned to it

    back = publish(booking_set, out)  # reverting the sources reuses the old version
    assert (back.created, back.latest_changed) == (False, True)
    assert read_index(out).latest == first.version
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{first.version}.desc", f"{second.version}.desc", "index.json"]
    )


def test_the_index_lists_messages_and_files_but_not_map_entries(tmp_path, booking_set):
    version = publish(booking_set, tmp_path).version
    doc = json.loads((tmp_path / "index.json").read_text())
    assert doc["latest"] == version
    entry = doc["versions"][version]
    assert entry["sha256"].startswith(version) and len(entry["sha256"]) == 64
    assert entry["messages"] == ["google.protobuf.Timestamp", "t.booking.BookingLogMessage"]
    assert entry["files"] == ["google/protobuf/timestamp.proto", "t/booking.proto"]


def test_the_committed_latest_version_is_a_fresh_compile_of_protos_src():
    latest = read_index(DESCRIPTORS_DIR).latest
    fresh = compile_sources(SRC_DIR)
    assert latest == version_of(fresh), "protos/src changed without `make protos`: run it and commit protos/descriptors"
    assert (DESCRIPTORS_DIR / f"{latest}.desc").read_bytes() == fresh


def test_the_released_set_is_one_of_the_committed_versions():
    released = DescriptorSet(RELEASED_PATH.read_bytes())
    assert released.digest in read_index(DESCRIPTORS_DIR).versions


def test_every_log_message_has_event_timestamp_as_field_5():
    ds = load()
    for name in (
        "gojek.esb.booking.BookingLogMessage",
        "gojek.esb.driverlocation.DriverLocationLogMessage",
        "gojek.esb.apilog.ApiLogMessage",
    ):
        f = ds.message_descriptor(name).fields_by_number[5]
        assert (f.name, f.message_type.full_name) == ("event_timestamp", "google.protobuf.Timestamp")


# ---------------------------------------------------------------- DescriptorSet


def test_a_message_class_round_trips_a_booking(booking_set):
    cls = DescriptorSet(booking_set).message_class("t.booking.BookingLogMessage")
    msg = cls(order_number="A-1", lat=-6.2, metadata={"k": "v"})
    msg.long = 106.8  # `long` is a field name here, as in the analysts' queries
    msg.event_timestamp.seconds = 1_700_000_000
    back = cls.FromString(msg.SerializeToString())
    assert (back.order_number, back.long, back.metadata["k"], back.event_timestamp.seconds) == (
        "A-1",
        106.8,
        "v",
        1_700_000_000,
    )


def test_an_unknown_message_error_names_it_and_suggests_close_matches(booking_set):
    ds = DescriptorSet(booking_set, source="test.desc")
    with pytest.raises(SchemaError) as e:
        ds.message_descriptor("t.booking.BookingLogMesage")
    text = str(e.value)
    assert "unknown message 't.booking.BookingLogMesage'" in text and "test.desc" in text
    assert "did you mean t.booking.BookingLogMessage" in text


def test_a_message_without_its_package_is_suggested_with_it(booking_set):
    with pytest.raises(SchemaError, match="did you mean t.booking.BookingLogMessage"):
        DescriptorSet(booking_set).message_class("BookingLogMessage")


def test_bytes_that_are_not_a_descriptor_set_are_rejected_with_their_source():
    with pytest.raises(SchemaError, match="page.html is not a"):
        DescriptorSet(b"<html>404</html>", source="page.html")


def test_two_versions_of_the_same_file_load_side_by_side(tmp_path, booking_set):
    grown = compile_text(tmp_path, {"t/booking.proto": BOOKING.replace("double lat = 10;", "string x = 7;")})
    old_cls = DescriptorSet(booking_set).message_class("t.booking.BookingLogMessage")
    new_cls = DescriptorSet(grown).message_class("t.booking.BookingLogMessage")
    assert "lat" in old_cls.DESCRIPTOR.fields_by_name and "x" in new_cls.DESCRIPTOR.fields_by_name


# ---------------------------------------------------------------- load: local versions


@pytest.fixture
def local_versions(tmp_path, booking_set, apilog_set) -> tuple[Path, str, str]:
    out = tmp_path / "descriptors"
    old = publish(booking_set, out).version
    new = publish(apilog_set, out).version
    return out, old, new


def test_load_without_arguments_gives_the_latest_version(local_versions):
    out, _, new = local_versions
    assert load(descriptors_dir=out).digest == new


def test_load_with_a_version_prefix_gives_that_version(local_versions):
    out, old, _ = local_versions
    ds = load(version=old[:8], descriptors_dir=out)
    assert ds.digest == old and ds.messages() == ["google.protobuf.Timestamp", "t.booking.BookingLogMessage"]


def test_load_from_the_committed_descriptors_by_default():
    ds = load()
    assert ds.digest == read_index(DESCRIPTORS_DIR).latest
    assert "gojek.esb.booking.BookingLogMessage" in ds.messages()


def test_find_version_accepts_prefixes_of_eight_or_more_hex_digits(local_versions):
    out, old, _ = local_versions
    assert find_version(old[:8], out) == find_version(old.upper(), out) == old
    with pytest.raises(SchemaError, match="at least 8 hex digits"):
        find_version(old[:7], out)
    with pytest.raises(SchemaError, match=r"no schema version 00000000 in .*known: "):
        find_version("00000000", out)


def test_find_version_reports_an_ambiguous_prefix(tmp_path):
    index = {
        "latest": "abcdef0011111111",
        "versions": {
            v: {"sha256": v + "0" * 48, "messages": [], "files": []} for v in ("abcdef0011111111", "abcdef0022222222")
        },
    }
    (tmp_path / "index.json").write_text(json.dumps(index))
    with pytest.raises(SchemaError, match="ambiguous: abcdef0011111111, abcdef0022222222"):
        find_version("abcdef00", tmp_path)


def test_a_modified_descriptor_file_is_refused(local_versions):
    out, old, _ = local_versions
    (out / f"{old}.desc").write_bytes(compile_sources(SRC_DIR))
    with pytest.raises(SchemaError, match=f"does not hold version {old}"):
        load(version=old, descriptors_dir=out)


def test_load_from_an_empty_folder_says_to_run_make_protos(tmp_path):
    with pytest.raises(SchemaError, match="run `make protos`"):
        load(descriptors_dir=tmp_path)


# ---------------------------------------------------------------- load: stencil URLs


def test_load_from_a_file_url(tmp_path, booking_set):
    path = tmp_path / "booking.desc"
    path.write_bytes(booking_set)
    ds = load(path.as_uri())
    assert ds.data == booking_set and ds.source == path.as_uri()


def test_several_urls_are_merged_and_shared_imports_deduplicated(tmp_path, booking_set, apilog_set):
    (tmp_path / "a.desc").write_bytes(booking_set)
    (tmp_path / "b.desc").write_bytes(apilog_set)
    ds = load(f"{(tmp_path / 'a.desc').as_uri()}, {(tmp_path / 'b.desc').as_uri()}")
    assert ds.files() == ["google/protobuf/timestamp.proto", "t/booking.proto", "t/apilog.proto"]
    assert ds.message_class("t.apilog.ApiLogMessage")(request_id="r").request_id == "r"
    assert ds.message_descriptor("t.booking.BookingLogMessage").fields_by_name["long"].number == 11


def test_conflicting_files_of_the_same_name_in_two_urls_are_an_error(tmp_path, booking_set):
    other = compile_text(tmp_path, {"t/booking.proto": BOOKING.replace("double lat = 10;", "float lat = 10;")})
    (tmp_path / "a.desc").write_bytes(booking_set)
    (tmp_path / "b.desc").write_bytes(other)
    a, b = (tmp_path / "a.desc").as_uri(), (tmp_path / "b.desc").as_uri()
    with pytest.raises(SchemaError, match=f"t/booking.proto is in both {a} and {b} with different content"):
        load(f"{a},{b}")


def test_a_missing_file_url_is_named_in_the_error(tmp_path):
    url = (tmp_path / "nope.desc").as_uri()
    with pytest.raises(SchemaError, match=f"could not fetch descriptor set from {url}"):
        load(url)


def test_a_job_pinned_to_another_version_is_refused(tmp_path, booking_set, apilog_set):
    (tmp_path / "a.desc").write_bytes(booking_set)
    url = (tmp_path / "a.desc").as_uri()
    pinned, found = version_of(apilog_set), version_of(booking_set)
    with pytest.raises(SchemaError, match=f"job is pinned to schema version {pinned} but {found} was found at {url}"):
        load(url, version=pinned)
    assert load(url, version=found[:10]).digest == found


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep test output clean
        pass


@pytest.fixture
def http_root(tmp_path, monkeypatch):
    """A static file server on 127.0.0.1 (a stand-in for a stencil server)."""
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "www"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_load_from_http_urls_like_stencil(http_root, booking_set, apilog_set):
    root, base = http_root
    (root / "v1").mkdir()
    (root / "v1" / "booking.desc").write_bytes(booking_set)
    (root / "v1" / "apilog.desc").write_bytes(apilog_set)
    ds = load(f"{base}/v1/booking.desc,{base}/v1/apilog.desc", timeout=5)
    assert set(ds.messages()) >= {"t.booking.BookingLogMessage", "t.apilog.ApiLogMessage"}


def test_an_http_error_names_the_url_and_status(http_root):
    _, base = http_root
    with pytest.raises(SchemaError, match=f"could not fetch descriptor set from {base}/missing.desc: HTTP 404"):
        load(f"{base}/missing.desc", timeout=5)


def test_a_server_that_does_not_answer_times_out_with_the_url(monkeypatch):
    release = threading.Event()

    class Stalled(_QuietHandler):
        def do_GET(self) -> None:
            release.wait(10)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Stalled)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/slow.desc"
    try:
        with pytest.raises(SchemaError, match=f"could not fetch descriptor set from {url}: .*timed out"):
            registry.fetch(url, timeout=0.3)
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# ---------------------------------------------------------------- CLI


def test_the_compile_command_prints_the_version_then_unchanged(tmp_path, booking_set, capsys):
    src = write_src(tmp_path, {"t/booking.proto": BOOKING})
    args = ["compile", "--src", str(src), "--out", str(tmp_path / "out")]
    assert cli(args) == 0 and capsys.readouterr().out.startswith(f"{version_of(booking_set)} new")
    assert cli(args) == 0 and capsys.readouterr().out == f"{version_of(booking_set)} unchanged\n"


def test_the_list_and_show_commands_describe_versions_and_fields(local_versions, capsys):
    out, old, new = local_versions
    assert cli(["list", "--dir", str(out)]) == 0
    listing = capsys.readouterr().out
    assert f"* {new}" in listing and f"  {old}" in listing
    assert cli(["show", "t.booking.BookingLogMessage", "--dir", str(out), "--version", old]) == 0
    shown = capsys.readouterr().out
    assert "11  long" in shown and "map<string, string>" in shown and "google.protobuf.Timestamp" in shown


def test_the_show_command_reports_an_unknown_message_with_exit_code_2(capsys):
    assert cli(["show", "gojek.esb.booking.BookingLog"]) == 2
    assert "did you mean gojek.esb.booking.BookingLogMessage" in capsys.readouterr().err


def test_show_lists_the_values_of_every_enum_a_field_uses(capsys):
    """A file-level enum (BookingStatus) is not nested in the message: show lists it too, since a
    query compares the field with these names."""
    assert cli(["show", "gojek.esb.booking.BookingLogMessage"]) == 0
    shown = capsys.readouterr().out
    status = (
        registry.load(None, None)
        .message_descriptor("gojek.esb.booking.BookingLogMessage")
        .fields_by_name["status"]
        .enum_type
    )
    line = next(line for line in shown.splitlines() if f"enum {status.full_name}:" in line)
    assert line.split(": ", 1)[1] == ", ".join(f"{v.name}={v.number}" for v in status.values)
    assert shown.count(f"enum {status.full_name}:") == 1


def test_java_class_names_follow_protocs_java_rules():
    """java_multiple_files: top-level classes in java_package; without it, classes nested in the
    outer class (java_outer_classname, else the file name in CamelCase, OuterClass appended when a
    message has that name); nested messages as Outer.Inner and Outer$Inner."""

    from protos.registry import DescriptorSet

    def file(name, package, messages, **options):
        f = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax="proto3")
        for m in messages:
            msg = f.message_type.add(name=m)
            msg.nested_type.add(name="Inner")
        for k, v in options.items():
            setattr(f.options, k, v)
        return f

    files = descriptor_pb2.FileDescriptorSet(
        file=[
            file("a/multi.proto", "p.a", ["Multi"], java_package="com.x.a", java_multiple_files=True),
            file("b/ride_log.proto", "p.b", ["Ride"], java_package="com.x.b"),
            file("c/named.proto", "p.c", ["Named"], java_outer_classname="Outer"),
            file("d/clash.proto", "p.d", ["Clash"]),
        ]
    )
    names = DescriptorSet(files.SerializeToString()).java_names
    assert names["com.x.a.Multi"] == "p.a.Multi"
    assert names["com.x.a.Multi.Inner"] == names["com.x.a.Multi$Inner"] == "p.a.Multi.Inner"
    assert names["com.x.b.RideLog.Ride"] == names["com.x.b.RideLog$Ride"] == "p.b.Ride"
    assert names["com.x.b.RideLog.Ride.Inner"] == names["com.x.b.RideLog$Ride$Inner"] == "p.b.Ride.Inner"
    assert names["p.c.Outer.Named"] == "p.c.Named"
    assert names["p.d.ClashOuterClass.Clash"] == "p.d.Clash"
    assert "com.x.b.Ride" not in names  # not a class of its own without java_multiple_files
    ds = DescriptorSet(files.SerializeToString())
    assert ds.message_descriptor("com.x.b.RideLog$Ride").full_name == "p.b.Ride"


def test_show_takes_the_names_loadtest_takes_a_simple_a_java_and_an_ambiguous_one(tmp_path, capsys):
    """`protos show` resolves a message as `load produce -m` does: its simple name when one message
    has it, its Java class name, and an ambiguous simple name refused naming every candidate."""
    assert cli(["show", "BookingLogMessage"]) == 0
    assert capsys.readouterr().out.startswith("gojek.esb.booking.BookingLogMessage (")
    assert cli(["show", "com.gojek.esb.booking.BookingLogMessage"]) == 0
    assert capsys.readouterr().out.startswith("gojek.esb.booking.BookingLogMessage (")

    two = {
        "a/x.proto": 'syntax = "proto3";\npackage a;\nmessage Ping { string id = 1; }\n',
        "b/x.proto": 'syntax = "proto3";\npackage b;\nmessage Ping { int64 id = 1; }\n',
    }
    out = tmp_path / "out"
    assert cli(["compile", "--src", str(write_src(tmp_path, two)), "--out", str(out)]) == 0
    capsys.readouterr()
    assert cli(["show", "Ping", "--dir", str(out)]) == 2
    assert "message 'Ping' is ambiguous: a.Ping, b.Ping" in capsys.readouterr().err
    assert cli(["show", "b.Ping", "--dir", str(out)]) == 0
    assert "1  id                           int64" in capsys.readouterr().out


def test_list_show_and_check_answer_json_with_what_the_text_says(capsys):
    assert cli(["show", "BookingLogMessage", "--json"]) == 0
    shown = _json.loads(capsys.readouterr().out)
    descriptor = registry.load(None, None).message_descriptor("gojek.esb.booking.BookingLogMessage")
    assert [(f["number"], f["name"]) for f in shown["fields"]] == sorted((f.number, f.name) for f in descriptor.fields)
    status = descriptor.fields_by_name["status"].enum_type
    assert shown["enums"][status.full_name] == {v.name: v.number for v in status.values}

    assert cli(["list", "--json"]) == 0
    versions = _json.loads(capsys.readouterr().out)
    index = read_index(DESCRIPTORS_DIR)
    assert {v["version"] for v in versions} == set(index.versions)
    assert [v["version"] for v in versions if v["latest"]] == [index.latest]

    assert cli(["check", "--json"]) == 0
    checked = _json.loads(capsys.readouterr().out)
    assert checked["breaking"] is False and all(not c["breaking"] for c in checked["changes"])


def test_a_descriptor_set_url_with_a_login_is_refused_without_repeating_it():
    with pytest.raises(SchemaError) as caught:
        registry.fetch("https://stencil:s3cret-token@registry.invalid/set.desc")
    assert "s3cret-token" not in str(caught.value) and "login" in str(caught.value)


def test_a_file_url_names_a_file_on_this_machine_only(tmp_path):
    path = tmp_path / "set.desc"
    path.write_bytes(next(Path(DESCRIPTORS_DIR).glob("*.desc")).read_bytes())
    assert registry.fetch(path.as_uri()).digest == registry.fetch(str(path)).digest
    assert registry.fetch(f"file://localhost{path}").digest == registry.fetch(str(path)).digest
    with pytest.raises(SchemaError, match="a file:// URL names a file on this machine"):
        registry.fetch(f"file://elsewhere.example{path}")
