"""Is a new schema safe for the jobs and data written with the old one?

Two audiences can break:
- the wire: Kafka holds messages written with the old schema; a decoder with
  the new one must read them as they were meant (numbers and types);
- SQL: dagger queries and their outputs refer to fields and enum values by
  *name* (`WHERE status = 'COMPLETED'`), so renames break them even when the
  wire does not notice.

`check(old, new)` lists every difference it knows about; `breaking` says which
ones would break either audience.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Union

from google.protobuf import descriptor_pb2

FDP = descriptor_pb2.FieldDescriptorProto
SetLike = Union[descriptor_pb2.FileDescriptorSet, bytes]

_SCALARS = {
    FDP.TYPE_DOUBLE: "double",
    FDP.TYPE_FLOAT: "float",
    FDP.TYPE_INT64: "int64",
    FDP.TYPE_UINT64: "uint64",
    FDP.TYPE_INT32: "int32",
    FDP.TYPE_FIXED64: "fixed64",
    FDP.TYPE_FIXED32: "fixed32",
    FDP.TYPE_BOOL: "bool",
    FDP.TYPE_STRING: "string",
    FDP.TYPE_BYTES: "bytes",
    FDP.TYPE_UINT32: "uint32",
    FDP.TYPE_SFIXED32: "sfixed32",
    FDP.TYPE_SFIXED64: "sfixed64",
    FDP.TYPE_SINT32: "sint32",
    FDP.TYPE_SINT64: "sint64",
}


@dataclass(frozen=True)
class Change:
    kind: str  # e.g. "field_type_changed"; stable, for tools and tests
    breaking: bool
    where: str  # e.g. "gojek.esb.booking.BookingLogMessage.status (field 4)"
    message: str  # for humans: what changed and what to do about it

    def __str__(self) -> str:
        return f"{'BREAKING' if self.breaking else 'ok      '} {self.where}: {self.message} [{self.kind}]"


def breaking(changes: Iterable[Change]) -> list[Change]:
    return [c for c in changes if c.breaking]


# ---------------------------------------------------------------- flattening


@dataclass(frozen=True)
class _Type:
    """A message or enum, wherever it is nested."""

    full_name: str
    file: str
    parent: str | None  # containing message, None for top level
    proto: object  # DescriptorProto | EnumDescriptorProto


@dataclass
class _Schema:
    messages: dict[str, _Type]
    enums: dict[str, _Type]
    map_entries: dict[str, descriptor_pb2.DescriptorProto]


def _as_file_set(value) -> descriptor_pb2.FileDescriptorSet:
    if isinstance(value, descriptor_pb2.FileDescriptorSet):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return descriptor_pb2.FileDescriptorSet.FromString(bytes(value))
    file_set = getattr(value, "file_set", None)  # protos.registry.DescriptorSet
    if isinstance(file_set, descriptor_pb2.FileDescriptorSet):
        return file_set
    raise TypeError(f"expected a FileDescriptorSet or its bytes, got {type(value).__name__}")


def _flatten(file_set: descriptor_pb2.FileDescriptorSet) -> _Schema:
    schema = _Schema({}, {}, {})

    def walk(file: str, prefix: str, parent: str | None, msgs, enums) -> None:
        for e in enums:
            name = f"{prefix}.{e.name}" if prefix else e.name
            schema.enums[name] = _Type(name, file, parent, e)
        for m in msgs:
            name = f"{prefix}.{m.name}" if prefix else m.name
            if m.options.map_entry:
                # Compared as part of the map field's type, not as a message.
                schema.map_entries[name] = m
                continue
            schema.messages[name] = _Type(name, file, parent, m)
            walk(file, name, name, m.nested_type, m.enum_type)

    for f in file_set.file:
        walk(f.name, f.package, None, f.message_type, f.enum_type)
    return schema


def _base_type(field: FDP) -> str:
    if field.type in (FDP.TYPE_MESSAGE, FDP.TYPE_ENUM, FDP.TYPE_GROUP):
        return field.type_name.lstrip(".")
    return _SCALARS.get(field.type, f"type#{field.type}")


def _map_type(field: FDP, schema: _Schema) -> str | None:
    entry = schema.map_entries.get(field.type_name.lstrip(".")) if field.type == FDP.TYPE_MESSAGE else None
    if entry is None:
        return None
    fields = {f.name: f for f in entry.field}
    return f"map<{_base_type(fields['key'])}, {_base_type(fields['value'])}>"


def _type_str(field: FDP, schema: _Schema) -> str:
    as_map = _map_type(field, schema)
    if as_map:
        return as_map
    base = _base_type(field)
    return f"repeated {base}" if field.label == FDP.LABEL_REPEATED else base


def _is_repeated(field: FDP, schema: _Schema) -> bool:
    return field.label == FDP.LABEL_REPEATED and _map_type(field, schema) is None


def _field_reserved(msg: descriptor_pb2.DescriptorProto, number: int) -> bool:
    return any(r.start <= number < r.end for r in msg.reserved_range)  # end is exclusive here


def _enum_reserved(enum: descriptor_pb2.EnumDescriptorProto, number: int) -> bool:
    return any(r.start <= number <= r.end for r in enum.reserved_range)  # ...and inclusive here


# ---------------------------------------------------------------- comparison


def _compare_types(where: str, name: str, old: FDP, new: FDP, o: _Schema, n: _Schema) -> list[Change]:
    old_t, new_t = _type_str(old, o), _type_str(new, n)
    if old_t == new_t:
        return []
    if _is_repeated(old, o) != _is_repeated(new, n) and _base_type(old) == _base_type(new):
        return [
            Change(
                "field_label_changed",
                True,
                where,
                f"'{name}' changed from {old_t} to {new_t}: repeated and singular values decode differently "
                "and SQL sees an array on one side only",
            )
        ]
    return [
        Change(
            "field_type_changed",
            True,
            where,
            f"'{name}' changed type from {old_t} to {new_t}: data already in Kafka was written as {old_t}",
        )
    ]


def _compare_fields(
    msg: str, old: descriptor_pb2.DescriptorProto, new: descriptor_pb2.DescriptorProto, o: _Schema, n: _Schema
) -> list[Change]:
    changes: list[Change] = []
    old_by_name = {f.name: f for f in old.field}
    new_by_name = {f.name: f for f in new.field}
    old_by_num = {f.number: f for f in old.field}
    new_by_num = {f.number: f for f in new.field}

    def at(name: str, number: int) -> str:
        return f"{msg}.{name} (field {number})"

    renamed: set[int] = set()
    for f in old.field:
        g = new_by_name.get(f.name)
        if g is not None:
            if g.number != f.number:
                changes.append(
                    Change(
                        "field_number_changed",
                        True,
                        at(f.name, g.number),
                        f"'{f.name}' moved from number {f.number} to {g.number}: "
                        f"data already in Kafka carries it as {f.number}",
                    )
                )
            else:
                changes += _compare_types(at(f.name, f.number), f.name, f, g, o, n)
            continue
        g = new_by_num.get(f.number)
        if g is not None and g.name not in old_by_name:
            # Same number, new name nobody had before: a rename. The wire is
            # fine, but queries select `f.name` and break.
            renamed.add(f.number)
            changes.append(
                Change(
                    "field_renamed",
                    True,
                    at(g.name, f.number),
                    f"'{f.name}' was renamed to '{g.name}' (number {f.number} kept): the wire format "
                    f"is unchanged but SQL queries and JSON refer to fields by name, so those using "
                    f"'{f.name}' break; add a new field instead and deprecate the old one",
                )
            )
            changes += _compare_types(at(g.name, f.number), g.name, f, g, o, n)
        elif _field_reserved(new, f.number):
            changes.append(
                Change(
                    "field_removed",
                    False,
                    at(f.name, f.number),
                    f"'{f.name}' was removed and its number {f.number} is reserved, so old data is "
                    f"skipped safely; queries selecting '{f.name}' must be updated",
                )
            )
        else:
            changes.append(
                Change(
                    "field_removed",
                    True,
                    at(f.name, f.number),
                    f"'{f.name}' was removed without reserving its number {f.number}: a later field "
                    f"could reuse it and misread old data; add `reserved {f.number};` "
                    f'and `reserved "{f.name}";` to {msg.rsplit(".", 1)[-1]}',
                )
            )

    for g in new.field:
        if g.name in old_by_name or g.number in renamed:
            continue  # compared above
        f = old_by_num.get(g.number)
        if f is not None:
            changes.append(
                Change(
                    "field_number_reused",
                    True,
                    at(g.name, g.number),
                    f"number {g.number} used to be '{f.name}' ({_type_str(f, o)}) and is now "
                    f"'{g.name}' ({_type_str(g, n)}): old data would decode into the wrong field",
                )
            )
        elif _field_reserved(old, g.number):
            changes.append(
                Change(
                    "field_number_reused",
                    True,
                    at(g.name, g.number),
                    f"'{g.name}' uses number {g.number}, which was reserved: data written before "
                    f"the reservation may still carry the old field under that number",
                )
            )
        else:
            changes.append(
                Change(
                    "field_added",
                    False,
                    at(g.name, g.number),
                    f"new field '{g.name}' ({_type_str(g, n)}); old data reads it as its default",
                )
            )
    return changes


def _compare_enum_values(
    enum: str, old: descriptor_pb2.EnumDescriptorProto, new: descriptor_pb2.EnumDescriptorProto
) -> list[Change]:
    changes: list[Change] = []
    old_by_name = {v.name: v.number for v in old.value}
    new_by_name = {v.name: v.number for v in new.value}
    new_names_by_num: dict[int, list[str]] = {}
    for v in new.value:
        new_names_by_num.setdefault(v.number, []).append(v.name)
    old_nums = set(old_by_name.values())

    def at(name: str, number: int) -> str:
        return f"{enum}.{name} (value {number})"

    renamed: set[str] = set()
    for name, num in old_by_name.items():
        if name in new_by_name:
            if new_by_name[name] != num:
                changes.append(
                    Change(
                        "enum_value_number_changed",
                        True,
                        at(name, new_by_name[name]),
                        f"'{name}' changed from {num} to {new_by_name[name]}: enums travel as "
                        f"numbers, so old data would read as a different value",
                    )
                )
            continue
        fresh = [m for m in new_names_by_num.get(num, []) if m not in old_by_name]
        if fresh:
            renamed.update(fresh)
            changes.append(
                Change(
                    "enum_value_renamed",
                    True,
                    at(fresh[0], num),
                    f"'{name}' was renamed to '{fresh[0]}' (number {num} kept): SQL compares enum "
                    f"values by name (e.g. status = '{name}'), so those queries silently stop matching",
                )
            )
        elif _enum_reserved(new, num):
            changes.append(
                Change(
                    "enum_value_removed",
                    False,
                    at(name, num),
                    f"'{name}' was removed and its number {num} is reserved; queries comparing "
                    f"with '{name}' will no longer match anything",
                )
            )
        else:
            changes.append(
                Change(
                    "enum_value_removed",
                    True,
                    at(name, num),
                    f"'{name}' was removed without reserving its number {num}: old data with {num} "
                    f"has no name any more and the number could be reused; add `reserved {num};`",
                )
            )

    for name, num in new_by_name.items():
        if name in old_by_name or name in renamed:
            continue
        if num in old_nums:
            old_names = sorted(k for k, v in old_by_name.items() if v == num)
            if any(new_by_name.get(k) == num for k in old_names):
                # an alias (allow_alias) next to a value that is still there
                changes.append(
                    Change("enum_value_added", False, at(name, num), f"new alias '{name}' for {', '.join(old_names)}")
                )
            else:
                changes.append(
                    Change(
                        "enum_value_number_reused",
                        True,
                        at(name, num),
                        f"number {num} used to mean {', '.join(old_names)} and now means '{name}'",
                    )
                )
        elif _enum_reserved(old, num):
            changes.append(
                Change(
                    "enum_value_number_reused",
                    True,
                    at(name, num),
                    f"'{name}' uses number {num}, which was reserved: old data may carry the value that was removed",
                )
            )
        else:
            changes.append(Change("enum_value_added", False, at(name, num), f"new value '{name}' = {num}"))
    return changes


def _compare_kinds(label: str, old: dict[str, _Type], new: dict[str, _Type]) -> list[Change]:
    """Removed, added and moved messages (or enums)."""
    changes: list[Change] = []
    by_simple: dict[str, list[str]] = {}
    for name in new:
        by_simple.setdefault(name.rsplit(".", 1)[-1], []).append(name)

    for name, t in old.items():
        if name not in new:
            if t.parent is not None and t.parent not in new:
                continue  # reported with its parent
            elsewhere = [m for m in by_simple.get(name.rsplit(".", 1)[-1], []) if m not in old]
            hint = (
                (
                    f"; {', '.join(elsewhere)} is new: moving a {label} to another package is a removal "
                    f"for every job that reads '{name}'"
                )
                if elsewhere
                else ""
            )
            changes.append(Change(f"{label}_removed", True, name, f"{label} '{name}' (in {t.file}) was removed{hint}"))
        elif t.parent is None and new[name].file != t.file:
            changes.append(
                Change(
                    f"{label}_moved",
                    True,
                    name,
                    f"{label} '{name}' moved from {t.file} to {new[name].file}: files that import "
                    f"{t.file} for it no longer compile, treat it as a removal",
                )
            )
    for name, t in new.items():
        if name not in old and not (t.parent is not None and t.parent not in old):
            changes.append(Change(f"{label}_added", False, name, f"new {label} '{name}' (in {t.file})"))
    return changes


def check(old: SetLike, new: SetLike) -> list[Change]:
    """Every difference between two descriptor sets, breaking ones first.

    `old` is what data and jobs were made with (protos/released), `new` the
    candidate. Accepts FileDescriptorSet messages, their serialized bytes, or
    a protos.registry.DescriptorSet.
    """
    o, n = _flatten(_as_file_set(old)), _flatten(_as_file_set(new))
    changes = _compare_kinds("message", o.messages, n.messages)
    changes += _compare_kinds("enum", o.enums, n.enums)
    for name in sorted(o.messages.keys() & n.messages.keys()):
        changes += _compare_fields(name, o.messages[name].proto, n.messages[name].proto, o, n)
    for name in sorted(o.enums.keys() & n.enums.keys()):
        changes += _compare_enum_values(name, o.enums[name].proto, n.enums[name].proto)
    # Stable order: breaking first, then by place, so reports diff cleanly.
    return sorted(changes, key=lambda c: (not c.breaking, c.where, c.kind))


def format_report(changes: list[Change]) -> str:
    if not changes:
        return "no schema changes"
    n_break = len(breaking(changes))
    head = f"{n_break} breaking, {len(changes) - n_break} compatible change(s):"
    return "\n".join([head, *(f"  {c}" for c in changes)])
