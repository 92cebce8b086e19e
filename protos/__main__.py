"""`dagger protos`: compile, check, list and inspect the schemas."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from google.protobuf.descriptor import FieldDescriptor

from dagger_runtime.closed_pipe import survives_closed_pipe
from protos import compat, registry
from protos import compile as compiler
from protos.errors import SchemaError
from protos.versions import DESCRIPTORS_DIR, PROTOS_DIR, RELEASED_PATH, SRC_DIR, read_index

_SCALAR_NAMES = {
    getattr(FieldDescriptor, n): n[len("TYPE_") :].lower()
    for n in dir(FieldDescriptor)
    if n.startswith("TYPE_") and isinstance(getattr(FieldDescriptor, n), int)
}


def _shown(path: Path) -> str:
    """A default path as the repository names it, not as this machine does."""
    return path.relative_to(PROTOS_DIR.parent).as_posix()


def _cmd_compile(args: argparse.Namespace) -> int:
    result = compiler.compile_protos(Path(args.src), Path(args.out))
    if result.created:
        print(f"{result.version} new ({result.path})")
    elif result.latest_changed:
        print(f"{result.version} existing version, now the latest again")
    else:
        print(f"{result.version} unchanged")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    against = Path(args.against)
    if not against.exists():
        print(f"error: no released descriptor set at {against}", file=sys.stderr)
        return 2
    old = registry.DescriptorSet(against.read_bytes(), source=str(against))
    new = registry.DescriptorSet(compiler.compile_sources(Path(args.src)), source=str(args.src))
    changes = compat.check(old.file_set, new.file_set)
    if args.json:
        print(
            json.dumps(
                {
                    "src": str(args.src),
                    "src_digest": new.digest,
                    "against": str(against),
                    "against_digest": old.digest,
                    "breaking": bool(compat.breaking(changes)),
                    "changes": [dataclasses.asdict(c) for c in changes],
                },
                indent=2,
                default=str,
            )
        )
        return 1 if compat.breaking(changes) else 0
    print(f"{args.src} ({new.digest}) against {against} ({old.digest}):")
    print(compat.format_report(changes))
    if compat.breaking(changes):
        print(
            "\nbreaking changes found: data in Kafka or running jobs would be misread; "
            "add new fields and reserve removed numbers instead",
            file=sys.stderr,
        )
        return 1
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    index = read_index(Path(args.dir))
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "version": version,
                        "latest": version == index.latest,
                        "files": list(info.files),
                        "messages": list(info.messages),
                    }
                    for version, info in sorted(index.versions.items())
                ],
                indent=2,
            )
        )
        return 0
    if not index.versions:
        print(f"no versions in {args.dir}: run `make protos`")
        return 0
    for version, info in sorted(index.versions.items()):
        mark = "* " if version == index.latest else "  "
        print(f"{mark}{version}  {len(info.files)} files, {len(info.messages)} messages")
        if args.verbose:
            for m in info.messages:
                print(f"      {m}")
    return 0


def _field_type(f: FieldDescriptor) -> str:
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        k, v = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        return f"map<{_field_type(k)}, {_field_type(v)}>"
    if f.message_type is not None:
        base = f.message_type.full_name
    elif f.enum_type is not None:
        base = f.enum_type.full_name
    else:
        base = _SCALAR_NAMES.get(f.type, str(f.type))
    # `is_repeated` is the newer API; `label` is the older one
    repeated = f.is_repeated if hasattr(f, "is_repeated") else f.label == FieldDescriptor.LABEL_REPEATED
    return f"repeated {base}" if repeated else base


def _cmd_show(args: argparse.Namespace) -> int:
    ds = registry.load(args.urls, args.version, descriptors_dir=Path(args.dir))
    msg = ds.message_descriptor(ds.resolve(args.message))
    if args.json:
        print(json.dumps(_message_json(msg, ds.digest), indent=2))
        return 0
    print(f"{msg.full_name} ({msg.file.name}, schema version {ds.digest})")
    for f in sorted(msg.fields, key=lambda f: f.number):
        print(f"  {f.number:>4}  {f.name:<28} {_field_type(f)}")
    # every enum its fields use (a query compares them with these names), and its own nested ones
    enums = [f.enum_type for f in sorted(msg.fields, key=lambda f: f.number) if f.enum_type is not None]
    for e in dict.fromkeys([*enums, *msg.enum_types]):
        print(f"  enum {e.full_name}: " + ", ".join(f"{v.name}={v.number}" for v in e.values))
    return 0


def _message_json(msg, digest: str) -> dict:
    fields = sorted(msg.fields, key=lambda f: f.number)
    enums = [f.enum_type for f in fields if f.enum_type is not None]
    return {
        "message": msg.full_name,
        "file": msg.file.name,
        "schema_version": digest,
        "fields": [{"number": f.number, "name": f.name, "type": _field_type(f)} for f in fields],
        "enums": {e.full_name: {v.name: v.number for v in e.values} for e in dict.fromkeys([*enums, *msg.enum_types])},
    }


def build_parser(prog: str = "python -m protos") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__)
    sub = p.add_subparsers(dest="command", required=True, metavar="{compile,check,list,show}")

    c = sub.add_parser("compile", help="compile protos/src into a new descriptor set version (make protos)")
    c.add_argument("--src", default=str(SRC_DIR), help=f"folder of .proto files (default: {_shown(SRC_DIR)})")
    c.add_argument("--out", default=str(DESCRIPTORS_DIR), help=f"versions folder (default: {_shown(DESCRIPTORS_DIR)})")
    c.set_defaults(func=_cmd_compile)

    k = sub.add_parser("check", help="compare the current sources with the released set; exit 1 if breaking")
    k.add_argument("--against", default=str(RELEASED_PATH), help=f"released set (default: {_shown(RELEASED_PATH)})")
    k.add_argument("--json", action="store_true", help="print the changes as JSON (exit 1 still says breaking)")
    k.add_argument("--src", default=str(SRC_DIR), help=f"folder of .proto files (default: {_shown(SRC_DIR)})")
    k.set_defaults(func=_cmd_check)

    ls = sub.add_parser("list", help="list compiled versions (* = latest)")
    ls.add_argument("--dir", default=str(DESCRIPTORS_DIR), help=f"versions folder (default: {_shown(DESCRIPTORS_DIR)})")
    ls.add_argument("--json", action="store_true", help="print the versions, their files and messages as JSON")
    ls.add_argument("-v", "--verbose", action="store_true", help="also list each version's messages")
    ls.set_defaults(func=_cmd_list)

    s = sub.add_parser("show", help="print a message's fields (number, name, type)")
    s.add_argument(
        "message",
        help="full, Java or unique simple name, e.g. gojek.esb.booking.BookingLogMessage or BookingLogMessage",
    )
    s.add_argument("--version", help="schema version (>= 8 hex digits); default: latest")
    s.add_argument("--json", action="store_true", help="print the fields and enums as JSON")
    s.add_argument("--urls", help="stencil URLs (SCHEMA_REGISTRY_STENCIL_URLS) instead of local versions")
    s.add_argument("--dir", default=str(DESCRIPTORS_DIR), help=f"versions folder (default: {_shown(DESCRIPTORS_DIR)})")
    s.set_defaults(func=_cmd_show)
    return p


@survives_closed_pipe
def main(argv: list[str] | None = None, prog: str = "python -m protos") -> int:
    args = build_parser(prog).parse_args(argv)
    try:
        return args.func(args)
    except SchemaError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
