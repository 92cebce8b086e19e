"""Preview input files: length-delimited protobuf (writeDelimitedTo) or proto3 JSON lines."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from google.protobuf.internal.encoder import _VarintBytes

from .errors import DaggerError


@dataclass(frozen=True)
class Record:
    position: int  # 1-based message number in the file
    offset: int  # byte offset of the record (protobuf) or its line number (JSON)
    value: bytes | None  # None: the framing itself is broken (the error says why)
    error: str | None = None
    rest: bytes | None = None  # with a broken frame: the bytes from there to the end, kept


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("the file ends inside a length prefix")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("malformed length prefix (more than 10 bytes)")


def read_delimited(data: bytes) -> list[Record]:
    """Split varint-length-prefixed messages. A broken frame ends the file: past it, no message
    boundary can be trusted, so the rest is one bad record rather than a guess."""
    records: list[Record] = []
    pos = 0
    n = 0
    while pos < len(data):
        n += 1
        start = pos
        try:
            length, pos = _varint(data, pos)
        except ValueError as e:
            records.append(Record(n, start, None, str(e), data[start:]))
            break
        if pos + length > len(data):
            records.append(
                Record(
                    n,
                    start,
                    None,
                    f"truncated message: the prefix says {length} bytes, {len(data) - pos} remain",
                    data[start:],
                )
            )
            break
        records.append(Record(n, start, data[pos : pos + length]))
        pos += length
    return records


def read_jsonl(data: bytes) -> list[Record]:
    records = []
    n = 0
    for line_no, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        n += 1
        records.append(Record(n, line_no, line.rstrip(b"\r")))
    return records


def is_json(path: str | Path) -> bool:
    return str(path).lower().endswith((".jsonl", ".ndjson", ".json"))


def read_input(path: str | Path) -> list[Record]:
    p = Path(path)
    if not p.is_file():
        raise DaggerError(f"input {path}: no such file")
    data = p.read_bytes()
    return read_jsonl(data) if is_json(p) else read_delimited(data)


def write_delimited(messages, path: str | Path) -> None:
    """Write messages as protobuf's writeDelimitedTo does (for generators and tests)."""
    with open(path, "wb") as out:
        for m in messages:
            body = m if isinstance(m, (bytes, bytearray)) else m.SerializeToString()
            out.write(_VarintBytes(len(body)))
            out.write(body)
