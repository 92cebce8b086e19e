"""Compile protos/src into one versioned FileDescriptorSet.

The set is what the runtime (Python and JVM decoders) loads instead of
generated classes, so analysts can add a topic's schema without a code
release. Its bytes must depend only on the .proto sources (and protoc's
bundled well-known types): the version name is their sha256.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pb2

from protos.errors import CompileError
from protos.versions import (
    DESCRIPTORS_DIR,
    SRC_DIR,
    VersionInfo,
    atomic_write,
    desc_path,
    read_index,
    sha256_hex,
    version_of,
    write_index,
)

PROTOC_TIMEOUT_S = 120


def find_sources(src_dir: Path = SRC_DIR) -> list[str]:
    """Every .proto under `src_dir`, as sorted posix paths relative to it.

    Sorted so protoc sees the same argument order on every machine (its
    output order follows it); relative so no absolute path leaks into the set.
    """
    src_dir = Path(src_dir)
    if not src_dir.is_dir():
        raise CompileError(f"schema source folder {src_dir} does not exist")
    sources = sorted(p.relative_to(src_dir).as_posix() for p in src_dir.rglob("*.proto"))
    if not sources:
        raise CompileError(f"no .proto files under {src_dir}")
    return sources


def well_known_include() -> Path:
    """grpc_tools' bundled `_proto` folder (google/protobuf/*.proto)."""
    spec = importlib.util.find_spec("grpc_tools")
    if spec is None or not spec.submodule_search_locations:
        raise CompileError("grpcio-tools is not installed: it provides protoc (pip install grpcio-tools)")
    path = Path(list(spec.submodule_search_locations)[0]) / "_proto"
    if not (path / "google" / "protobuf" / "timestamp.proto").exists():
        raise CompileError(f"grpcio-tools has no well-known types at {path}")
    return path


def normalize(data: bytes) -> bytes:
    """Canonical bytes of a FileDescriptorSet.

    Source info (comments, line spans) is dropped: it changes with comment
    edits that cannot affect decoding, and it is the one place protoc could
    record where a file came from.
    """
    fds = descriptor_pb2.FileDescriptorSet.FromString(data)
    for f in fds.file:
        f.ClearField("source_code_info")
    return fds.SerializeToString(deterministic=True)


def compile_sources(src_dir: Path = SRC_DIR) -> bytes:
    """Compile every .proto under `src_dir` into one normalized descriptor set (bytes)."""
    src_dir = Path(src_dir).resolve()
    sources = find_sources(src_dir)
    with tempfile.TemporaryDirectory(prefix="protos-") as tmp:
        out = Path(tmp) / "set.desc"
        # A subprocess rather than grpc_tools.protoc.main(): protoc writes its
        # errors straight to fd 2, and we want them in the exception.
        cmd = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I.",
            f"-I{well_known_include()}",
            "--include_imports",
            f"--descriptor_set_out={out}",
            *sources,
        ]
        try:
            proc = subprocess.run(cmd, cwd=src_dir, capture_output=True, text=True, timeout=PROTOC_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            raise CompileError(f"protoc did not finish within {PROTOC_TIMEOUT_S}s compiling {src_dir}") from e
        if proc.returncode != 0 or not out.exists():
            detail = (proc.stderr or proc.stdout).strip() or f"exit code {proc.returncode}"
            raise CompileError(f"protoc failed on the schemas in {src_dir}:\n{detail}")
        return normalize(out.read_bytes())


@dataclass(frozen=True)
class CompileResult:
    version: str
    sha256: str
    path: Path
    created: bool  # a new .desc file was written
    latest_changed: bool  # index.json's "latest" now points somewhere else


def publish(data: bytes, descriptors_dir: Path = DESCRIPTORS_DIR) -> CompileResult:
    """Store `data` as a version in `descriptors_dir` and make it the latest.

    Existing versions are never rewritten nor removed: running jobs are
    pinned to them.
    """
    descriptors_dir = Path(descriptors_dir)
    version, digest = version_of(data), sha256_hex(data)
    path = desc_path(version, descriptors_dir)
    created = False
    if path.exists():
        if path.read_bytes() != data:
            raise CompileError(
                f"{path} exists but its content is not version {version}: it was edited or corrupted; "
                "restore it from git (jobs may be pinned to it)"
            )
    else:
        atomic_write(path, data)
        created = True
    index = read_index(descriptors_dir)
    previous = index.latest
    index.versions.setdefault(version, VersionInfo.of(data))
    index.latest = version
    write_index(index, descriptors_dir)
    return CompileResult(version, digest, path, created, latest_changed=previous != version)


def compile_protos(src_dir: Path = SRC_DIR, descriptors_dir: Path = DESCRIPTORS_DIR) -> CompileResult:
    """`make protos`: compile `src_dir` and publish the result into `descriptors_dir`."""
    return publish(compile_sources(src_dir), descriptors_dir)
