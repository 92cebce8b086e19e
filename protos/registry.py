"""Load the descriptor set a job decodes its topics with.

Either from a schema registry, the way raystack/stencil clients do it
(`SCHEMA_REGISTRY_STENCIL_URLS`: comma-separated URLs of serialized
FileDescriptorSets, merged), or from the versions compiled into
protos/descriptors. A job may pin a version: loading anything else fails
rather than decoding with a schema the job's SQL was not validated against.
"""

from __future__ import annotations

import re
import urllib.parse
import urllib.request  # url2pathname: a file:// URL's path
from functools import cached_property
from pathlib import Path

from google.protobuf import descriptor, descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from dagger_runtime import http_client
from dagger_runtime.suggest import closest
from dagger_runtime.urls import carries_login
from protos.errors import SchemaError
from protos.versions import (
    DESCRIPTORS_DIR,
    MIN_PREFIX_LEN,
    desc_path,
    message_names,
    read_index,
    sha256_hex,
    version_of,
)

__all__ = ["DescriptorSet", "SchemaError", "load", "find_version", "fetch", "merge", "DEFAULT_TIMEOUT_S"]

DEFAULT_TIMEOUT_S = 10.0
_HEX = re.compile(r"^[0-9a-f]+$")


class DescriptorSet:
    """A serialized FileDescriptorSet and the views a job needs of it."""

    def __init__(self, data: bytes, source: str = "<bytes>") -> None:
        self.data = bytes(data)
        self.source = source  # where it came from, for error messages
        try:
            self.file_set = descriptor_pb2.FileDescriptorSet.FromString(self.data)
        except DecodeError as e:
            raise SchemaError(f"{source} is not a serialized FileDescriptorSet: {e}") from e
        # Arbitrary bytes can parse as an empty message; a set without a
        # named file is never what was meant (an HTML error page, say).
        if not self.file_set.file or any(not f.name for f in self.file_set.file):
            raise SchemaError(f"{source} is not a FileDescriptorSet (no named .proto files in it)")

    def __repr__(self) -> str:
        return f"DescriptorSet({self.digest}, {len(self.file_set.file)} files, from {self.source})"

    @cached_property
    def sha256(self) -> str:
        return sha256_hex(self.data)

    @cached_property
    def digest(self) -> str:
        """The version name: first 16 hex digits of the sha256."""
        return version_of(self.data)

    @cached_property
    def pool(self) -> descriptor_pool.DescriptorPool:
        # A pool of its own, not the default one: two versions of the same
        # .proto file can be loaded side by side (a job and its upgrade check).
        pool = descriptor_pool.DescriptorPool()
        for f in _dependency_order(list(self.file_set.file), self.source):
            try:
                pool.Add(f)
            except Exception as e:  # upb raises TypeError, the C++ backend others
                raise SchemaError(f"{f.name} from {self.source} does not build: {e}") from e
        return pool

    def files(self) -> list[str]:
        return [f.name for f in self.file_set.file]

    def messages(self) -> list[str]:
        """Fully qualified names of every message (nested ones too), sorted."""
        return message_names(self.file_set)

    def message_descriptor(self, full_name: str) -> descriptor.Descriptor:
        """A message by its proto name, or by the Java class raystack/dagger configs name it with
        (`com.gojek.esb.booking.BookingLogMessage`: java_package, java_outer_classname and
        java_multiple_files say which); `descriptor.full_name` is its proto name either way."""
        name = full_name.lstrip(".")
        try:
            return self.pool.FindMessageTypeByName(name)
        except KeyError:
            if name in self.java_names:
                return self.pool.FindMessageTypeByName(self.java_names[name])
            raise SchemaError(self._unknown_message(name)) from None

    def resolve(self, name: str) -> str:
        """A message's proto name from any name a user gives it: the proto name, the Java class
        name, or the simple name when one message has it (BookingLogMessage)."""
        full = name.lstrip(".")
        known = self.messages()
        if full in known:
            return full
        if full in self.java_names:
            return self.java_names[full]
        simple = [m for m in known if m.rsplit(".", 1)[-1] == full]
        if len(simple) == 1:
            return simple[0]
        if simple:
            raise SchemaError(f"message {name!r} is ambiguous: {', '.join(simple)}")
        return self.message_descriptor(full).full_name  # unknown: SchemaError with its did-you-mean

    @cached_property
    def java_names(self) -> dict[str, str]:
        """Each message's Java class name(s) -> its proto name, as protoc's Java generator names
        the classes: in java_package (else the proto package); top-level classes of their own with
        java_multiple_files, else nested in the file's outer class (java_outer_classname, else the
        file's name in CamelCase, with OuterClass appended when a message has that name); a nested
        message both as Outer.Inner and as Java's binary name Outer$Inner."""
        out: dict[str, str] = {}
        for f in self.file_set.file:
            package = f.options.java_package or f.package
            if f.options.java_multiple_files:
                prefix = package
            else:
                outer = f.options.java_outer_classname or _outer_class(f)
                prefix = f"{package}.{outer}" if package else outer

            def add(messages, proto_prefix: str, java_prefix: str, binary_prefix: str) -> None:
                for m in messages:
                    proto = f"{proto_prefix}.{m.name}" if proto_prefix else m.name
                    for java in (f"{java_prefix}.{m.name}", f"{binary_prefix}${m.name}"):
                        out.setdefault(java.lstrip(".$"), proto)
                    add(m.nested_type, proto, f"{java_prefix}.{m.name}", f"{binary_prefix}${m.name}")

            for m in f.message_type:
                proto = f"{f.package}.{m.name}" if f.package else m.name
                java = f"{prefix}.{m.name}" if prefix else m.name
                out.setdefault(java, proto)
                if not f.options.java_multiple_files:
                    out.setdefault(f"{prefix}${m.name}", proto)
                add(m.nested_type, proto, java, java if f.options.java_multiple_files else f"{prefix}${m.name}")
        # a Java name that is also some message's proto name means that message
        return {java: proto for java, proto in out.items() if java != proto}

    def message_class(self, full_name: str) -> type:
        return message_factory.GetMessageClass(self.message_descriptor(full_name))

    def _unknown_message(self, name: str) -> str:
        known = self.messages()
        simple = name.rsplit(".", 1)[-1]
        # Same simple name in another package first (a wrong or missing
        # package is the usual mistake), then spelling neighbours.
        by_simple: dict[str, list[str]] = {}
        for m in known:
            by_simple.setdefault(m.rsplit(".", 1)[-1], []).append(m)
        close = list(by_simple.get(simple, []))
        for s in closest(simple, by_simple):
            close += [m for m in by_simple[s] if m not in close]
        close += [m for m in closest(name, known) if m not in close]
        hint = f"; did you mean {', '.join(close[:3])}?" if close else f"; it has {len(known)} messages"
        return f"unknown message '{name}' in descriptor set {self.digest} (from {self.source}){hint}"


def _outer_class(f: descriptor_pb2.FileDescriptorProto) -> str:
    """protoc's default Java outer class name: the file's base name in CamelCase, "OuterClass"
    appended when a message, enum or service of the file has that name."""
    base = f.name.rsplit("/", 1)[-1].removesuffix(".proto")
    name = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", base) if part)
    taken = {m.name for m in f.message_type} | {e.name for e in f.enum_type} | {s.name for s in f.service}
    return name + "OuterClass" if name in taken else name


def _dependency_order(
    files: list[descriptor_pb2.FileDescriptorProto], source: str
) -> list[descriptor_pb2.FileDescriptorProto]:
    """Files with every dependency before its dependents (what a pool needs).

    protoc emits that order already; merged sets from several URLs need not
    be in it. Stable: otherwise keeps the given order.
    """
    by_name = {f.name: f for f in files}
    done: set[str] = set()
    out: list[descriptor_pb2.FileDescriptorProto] = []

    def visit(f: descriptor_pb2.FileDescriptorProto, stack: tuple[str, ...]) -> None:
        if f.name in done:
            return
        if f.name in stack:
            raise SchemaError(f"import cycle in {source}: {' -> '.join(stack + (f.name,))}")
        for dep in f.dependency:
            if dep not in by_name:
                raise SchemaError(
                    f"{f.name} imports {dep}, which is not in {source} (was the set compiled with --include_imports?)"
                )
            visit(by_name[dep], stack + (f.name,))
        done.add(f.name)
        out.append(f)

    for f in files:
        visit(f, ())
    return out


def fetch(url: str, timeout: float = DEFAULT_TIMEOUT_S) -> DescriptorSet:
    """One descriptor set from an http(s):// or file:// URL (or a plain path)."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else "file"
    parts = urllib.parse.urlsplit(url) if "://" in url else None
    if carries_login(url):
        # refused before any request, and the URL never repeated: it holds a login
        raise SchemaError(
            f"a descriptor-set URL may not carry a login ({scheme}://user:password@...): give the server's address only"
        )
    if parts is not None and scheme == "file" and parts.netloc not in ("", "localhost"):
        raise SchemaError(f"could not fetch descriptor set from {url}: a file:// URL names a file on this machine")
    try:
        if scheme == "file":
            path = urllib.request.url2pathname(parts.path) if parts is not None else url
            data = Path(path).read_bytes()
        elif scheme in ("http", "https"):
            data = http_client.get(url, timeout=timeout).content
        else:
            raise SchemaError(f"could not fetch descriptor set from {url}: only http(s):// and file:// are read")
    except http_client.HTTPError as e:
        response = e.response
        raise SchemaError(
            f"could not fetch descriptor set from {url}: HTTP {response.status_code} {response.reason}"
        ) from e
    except (OSError, ValueError) as e:  # refused, timeouts, resets, a missing file, a malformed URL
        raise SchemaError(f"could not fetch descriptor set from {url}: {e}") from e
    return DescriptorSet(data, source=url)


def merge(sets: list[DescriptorSet]) -> DescriptorSet:
    """One set with every file of `sets`; a file seen twice must be identical."""
    if len(sets) == 1:
        return sets[0]  # keep its bytes as they are, so its digest still matches a pin
    files: dict[str, tuple[descriptor_pb2.FileDescriptorProto, str]] = {}
    for s in sets:
        for f in s.file_set.file:
            seen = files.get(f.name)
            if seen is None:
                files[f.name] = (f, s.source)
            elif seen[0].SerializeToString(deterministic=True) != f.SerializeToString(deterministic=True):
                raise SchemaError(
                    f"{f.name} is in both {seen[1]} and {s.source} with different content; "
                    "the schema registry URLs disagree about it"
                )
    source = ",".join(s.source for s in sets)
    merged = descriptor_pb2.FileDescriptorSet()
    merged.file.extend(_dependency_order([f for f, _ in files.values()], source))
    return DescriptorSet(merged.SerializeToString(deterministic=True), source=source)


def find_version(prefix: str, descriptors_dir: Path = DESCRIPTORS_DIR) -> str:
    """The full version name in `descriptors_dir` starting with `prefix` (>= 8 hex digits)."""
    p = prefix.strip().lower()
    if len(p) < MIN_PREFIX_LEN or not _HEX.match(p):
        raise SchemaError(f"'{prefix}' is not a schema version: give at least {MIN_PREFIX_LEN} hex digits")
    index = read_index(descriptors_dir)
    matches = sorted(v for v, info in index.versions.items() if v.startswith(p) or info.sha256.startswith(p))
    if not matches:
        known = ", ".join(sorted(index.versions)) or "none; run `make protos`"
        raise SchemaError(f"no schema version {prefix} in {descriptors_dir} (known: {known})")
    if len(matches) > 1:
        raise SchemaError(f"schema version prefix {prefix} is ambiguous: {', '.join(matches)}")
    return matches[0]


def _load_local(version: str | None, descriptors_dir: Path) -> DescriptorSet:
    if version is None:
        version = read_index(descriptors_dir).latest
        if version is None:
            raise SchemaError(f"no compiled descriptor sets in {descriptors_dir}: run `make protos`")
    else:
        version = find_version(version, descriptors_dir)
    path = desc_path(version, descriptors_dir)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise SchemaError(f"schema version {version} is in the index but {path} cannot be read: {e}") from e
    ds = DescriptorSet(data, source=str(path))
    if ds.digest != version:
        raise SchemaError(
            f"{path} does not hold version {version} (its content is {ds.digest}): it was modified; restore it from git"
        )
    return ds


def load(
    urls: str | None = None,
    version: str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    descriptors_dir: Path = DESCRIPTORS_DIR,
) -> DescriptorSet:
    """The descriptor set a job runs with.

    `urls`: the SCHEMA_REGISTRY_STENCIL_URLS value (comma-separated); when
    empty or None, the compiled versions in `descriptors_dir` are used.
    `version`: the digest the job is pinned to (>= 8 hex digits of it); the
    loaded set must have exactly that content.
    """
    if version is not None:
        pin = version.strip().lower()
        if len(pin) < MIN_PREFIX_LEN or not _HEX.match(pin):
            raise SchemaError(f"job pins schema version '{version}': need at least {MIN_PREFIX_LEN} hex digits")
    url_list = [u.strip() for u in (urls or "").split(",") if u.strip()]
    if not url_list:
        return _load_local(version, Path(descriptors_dir))
    ds = merge([fetch(u, timeout=timeout) for u in url_list])
    if version is not None and not ds.sha256.startswith(pin):
        raise SchemaError(
            f"job is pinned to schema version {version} but {ds.digest} was found at "
            f"{', '.join(url_list)}; re-validate the job against the new schema "
            "(`python -m protos check`) and update its pin"
        )
    return ds
