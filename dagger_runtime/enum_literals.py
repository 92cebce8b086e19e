"""Literals compared with enum fields, checked against the enum's values before anything runs.

A stream's enum field reads as its value's name (dagger's row layout), so `status = 'DRIVER_CANCELED'`
(one L short) or `driver_status = 1` (a number) is valid SQL that silently matches nothing: the
results are wrong and nothing says so. Here every literal a query compares with an enum field, by
`=`, `<>`, `IN (...)` or a `CASE field WHEN ...`, must be one of the enum's names; each one that is
not is refused at its place in the SQL with the closest names (or, for a number, the name it stands
for). Pure: the analyst's parsed query and the streams' descriptors.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from sqlglot import exp

from dagger_runtime.suggest import closest

from .errors import QueryError
from .sql.positions import locate


@dataclass(frozen=True)
class Problem:
    message: str
    node: exp.Expression


def check(query, descriptors: dict[str, Descriptor]) -> None:
    """Refuse the query (QueryError, at the first problem, naming every one) when a literal it
    compares with an enum field is not one of that enum's names. descriptors: table -> message."""
    if query.tree is None:
        return
    found = problems(query.tree, descriptors)
    if not found:
        return
    first = found[0]
    line, col = locate(query.source, first.node)
    also = "".join(f"\n  also: {p.message}" + _at(query.source, p.node) for p in found[1:])
    raise QueryError(first.message + also, line=line, col=col, sql=query.source)


def _at(sql: str, node: exp.Expression) -> str:
    line, col = locate(sql, node)
    return f" (line {line}, column {col})" if line is not None else ""


def problems(tree: exp.Expression, descriptors: dict[str, Descriptor]) -> list[Problem]:
    by_table = {name.lower(): d for name, d in descriptors.items()}
    out: list[Problem] = []
    for node in tree.walk():
        if isinstance(node, (exp.EQ, exp.NEQ)):
            pairs = [(node.left, node.right), (node.right, node.left)]
            for column, literal in pairs:
                field = _enum_field(column, by_table)
                if field is not None and _is_literal(literal):
                    out += _judge(field, column, [literal])
        elif isinstance(node, exp.In) and not node.args.get("query"):
            field = _enum_field(node.this, by_table)
            if field is not None:
                out += _judge(field, node.this, [e for e in node.expressions if _is_literal(e)])
        elif isinstance(node, exp.Case) and node.this is not None:
            field = _enum_field(node.this, by_table)
            if field is not None:
                out += _judge(field, node.this, [i.this for i in node.args.get("ifs") or [] if _is_literal(i.this)])
    return out


def _is_literal(node: exp.Expression) -> bool:
    node = node.unnest() if isinstance(node, exp.Paren) else node
    return isinstance(node, exp.Literal) or (isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal))


def _judge(field: FieldDescriptor, column: exp.Expression, literals: list[exp.Expression]) -> list[Problem]:
    enum = field.enum_type
    names = [v.name for v in enum.values]
    what = f"{_path(column)} is the enum {enum.full_name}"
    out = []
    for literal in literals:
        literal = literal.unnest() if isinstance(literal, exp.Paren) else literal
        if isinstance(literal, exp.Literal) and literal.is_string:
            value = literal.this
            if value in names:
                continue
            close = [n for n in names if n.lower() == value.lower()] or closest(value, names)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "."
            out.append(
                Problem(
                    f"{value!r} is not a value of {enum.full_name} ({_path(column)}): it matches "
                    f"nothing{hint} Its values: {_listing(names)}",
                    literal,
                )
            )
        else:
            text = literal.sql()
            try:
                number = int(text)
            except ValueError:
                number = None
            named = enum.values_by_number.get(number) if number is not None else None
            fix = (
                f"write '{named.name}' ({text} is its number)"
                if named is not None
                else f"compare with one of its names: {_listing(names)}"
            )
            out.append(
                Problem(
                    f"{what}, which reads as its value's name, so the number {text} matches nothing: {fix}", literal
                )
            )
    return out


def _listing(names: list[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _path(column: exp.Expression) -> str:
    return ".".join(p.name for p in column.parts) if isinstance(column, exp.Column) else column.sql()


def _enum_field(node: exp.Expression, by_table: dict[str, Descriptor]) -> FieldDescriptor | None:
    """The enum field a column stands for: in a stream table of the SELECT it is read in, directly
    (not through a subquery, whose columns may be anything); None when it is not one."""
    node = node.unnest() if isinstance(node, exp.Paren) else node
    if not isinstance(node, exp.Column):
        return None
    select = node.find_ancestor(exp.Select)
    if select is None:
        return None
    sources = _sources(select)
    names = [p.name for p in node.parts]
    if len(names) > 1 and names[0].lower() in sources:
        candidates, path = [sources[names[0].lower()]], names[1:]
    elif any(d is None for d in sources.values()):
        return None  # a subquery or a table that is not a stream could hold the name
    else:
        if names[0] in {e.alias for e in select.expressions if isinstance(e, exp.Alias)}:
            return None  # a name the SELECT gives a computed column
        candidates, path = [d for d in dict.fromkeys(sources.values())], names
    fields = [f for d in candidates if d is not None and (f := _resolve(by_table.get(d), path)) is not None]
    if (
        len(fields) == 1
        and fields[0].type == FieldDescriptor.TYPE_ENUM
        and fields[0].label != FieldDescriptor.LABEL_REPEATED
    ):
        return fields[0]
    return None


def _sources(select: exp.Select) -> dict[str, str | None]:
    """The SELECT's FROM and JOIN sources by name and alias (lowercase) -> its stream table, or
    None for anything else (a subquery, an unnest)."""
    out: dict[str, str | None] = {}
    for source in [select.args.get("from_") or select.args.get("from"), *(select.args.get("joins") or [])]:
        if source is None:
            continue
        item = source.this
        if isinstance(item, exp.Table):
            table = item.name.lower()
            out[(item.alias or item.name).lower()] = table
            out.setdefault(table, table)
        else:
            out[(item.alias_or_name or "").lower()] = None
    return out


def _resolve(descriptor: Descriptor | None, path: list[str]) -> FieldDescriptor | None:
    """The field at `path` in the message, matched without case as Spark matches column names."""
    field = None
    for name in path:
        if descriptor is None:
            return None
        field = next((f for f in descriptor.fields if f.name.lower() == name.lower()), None)
        if field is None:
            return None
        descriptor = field.message_type if field.type == FieldDescriptor.TYPE_MESSAGE else None
    return field
