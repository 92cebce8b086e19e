"""Where compiled descriptor sets live and how their versions are named.

A version *is* the content: the first 16 hex digits of the sha256 of the
serialized FileDescriptorSet. Jobs pin the version they were validated
against, so a set must never change once written; `index.json` only maps
versions to what they contain and says which one is the latest.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import descriptor_pb2

from protos.errors import SchemaError

PROTOS_DIR = Path(__file__).resolve().parent
SRC_DIR = PROTOS_DIR / "src"
DESCRIPTORS_DIR = PROTOS_DIR / "descriptors"
RELEASED_PATH = PROTOS_DIR / "released" / "daggers.desc"
INDEX_NAME = "index.json"
VERSION_LEN = 16
MIN_PREFIX_LEN = 8


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def version_of(data: bytes) -> str:
    return sha256_hex(data)[:VERSION_LEN]


def desc_path(version: str, descriptors_dir: Path = DESCRIPTORS_DIR) -> Path:
    return Path(descriptors_dir) / f"{version}.desc"


def message_names(file_set: descriptor_pb2.FileDescriptorSet) -> list[str]:
    """Fully qualified names of every message, nested ones included.

    Map entry messages are left out: protoc synthesizes them for `map<,>`
    fields and nobody can name them in SQL.
    """
    names: list[str] = []

    def walk(prefix: str, msgs) -> None:
        for msg in msgs:
            if msg.options.map_entry:
                continue
            full = f"{prefix}.{msg.name}" if prefix else msg.name
            names.append(full)
            walk(full, msg.nested_type)

    for f in file_set.file:
        walk(f.package, f.message_type)
    return sorted(names)


@dataclass(frozen=True)
class VersionInfo:
    sha256: str
    messages: tuple[str, ...]
    files: tuple[str, ...]

    @classmethod
    def of(cls, data: bytes) -> "VersionInfo":
        fds = descriptor_pb2.FileDescriptorSet.FromString(data)
        return cls(
            sha256=sha256_hex(data),
            messages=tuple(message_names(fds)),
            files=tuple(sorted(f.name for f in fds.file)),
        )

    def to_json(self) -> dict:
        return {"sha256": self.sha256, "messages": list(self.messages), "files": list(self.files)}


@dataclass
class Index:
    latest: str | None = None
    versions: dict[str, VersionInfo] = field(default_factory=dict)

    def to_text(self) -> str:
        # Sorted keys and a trailing newline: the file is committed, and a
        # re-run that changes nothing must leave no diff.
        doc = {"latest": self.latest, "versions": {v: i.to_json() for v, i in self.versions.items()}}
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def read_index(descriptors_dir: Path = DESCRIPTORS_DIR) -> Index:
    """The index of `descriptors_dir`; an empty Index when there is none yet."""
    path = Path(descriptors_dir) / INDEX_NAME
    if not path.exists():
        return Index()
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        versions = {
            v: VersionInfo(sha256=i["sha256"], messages=tuple(i["messages"]), files=tuple(i["files"]))
            for v, i in doc["versions"].items()
        }
        return Index(latest=doc.get("latest"), versions=versions)
    except (ValueError, KeyError, TypeError) as e:
        raise SchemaError(f"{path} is not a valid descriptor index ({e}); re-run `make protos`") from e


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temp file and rename, so a reader (or a concurrent
    `make protos`) never sees a half-written descriptor set or index."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_index(index: Index, descriptors_dir: Path = DESCRIPTORS_DIR) -> bool:
    """Write the index if its text changed; True when the file was written."""
    path = Path(descriptors_dir) / INDEX_NAME
    text = index.to_text()
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    atomic_write(path, text.encode("utf-8"))
    return True
