"""Preview input files: length-delimited framing, broken frames kept whole, JSON lines."""

from google.protobuf.internal.encoder import _VarintBytes

from dagger_runtime.inputs import read_delimited, read_jsonl


def frame(body: bytes) -> bytes:
    return _VarintBytes(len(body)) + body


def test_messages_are_split_at_their_length_prefixes_with_positions_and_offsets():
    data = frame(b"abc") + frame(b"") + frame(b"x" * 300)
    recs = read_delimited(data)
    assert [(r.position, r.offset, r.value) for r in recs] == [(1, 0, b"abc"), (2, 4, b""), (3, 5, b"x" * 300)]


def test_a_truncated_last_message_is_reported_and_its_bytes_kept():
    data = frame(b"abc") + _VarintBytes(10) + b"12345"
    good, broken = read_delimited(data)
    assert good.value == b"abc"
    assert broken.value is None and "prefix says 10 bytes, 5 remain" in broken.error
    assert broken.rest == _VarintBytes(10) + b"12345" and broken.offset == 4


def test_a_length_prefix_that_never_ends_is_reported():
    (broken,) = read_delimited(b"\xff" * 11)
    assert "malformed length prefix" in broken.error and broken.rest == b"\xff" * 11


def test_json_lines_skip_blank_lines_and_number_messages_by_line():
    recs = read_jsonl(b'{"a": 1}\n\n{"a": 2}\r\n')
    assert [(r.position, r.offset, r.value) for r in recs] == [(1, 1, b'{"a": 1}'), (2, 3, b'{"a": 2}')]
