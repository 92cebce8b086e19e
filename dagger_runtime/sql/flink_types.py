"""Flink's meaning where it depends on a value's type, which the translation cannot see.

The translation reads the query, not the streams' schemas. Where Flink's result depends on the
type of an operand, the translation writes a call to one of the runtime's own functions, and
Spark's analyser, once it has typed the arguments, builds the Spark expression with Flink's
meaning (jvm/sql-functions/.../FlinkTypes.java, registered in every session by
dagger_runtime.udfs.register_all):

- `a / b` -> `__dagger_divide(a, b)`: two integers divide as integers (7 / 2 = 3, -7 / 2 = -3,
  typed as the wider of the two), anything else as Spark's `/`;
- `AVG(x) [FILTER (WHERE c)]` -> `__dagger_avg(AVG(x) [FILTER (WHERE c)])`: the average of an
  integer is an integer of x's type (SUM DIV COUNT), of a FLOAT a FLOAT;
- `TYPEOF(x)` -> `__dagger_typeof(x[, precision])`: Flink's type names (INT, STRING, TIMESTAMP(3),
  ... NOT NULL);
- `CAST(x AS STRING/VARCHAR)` -> `__dagger_cast_string(x[, precision])`: a timestamp with its
  precision's fraction digits, a boolean as TRUE/FALSE; `CAST(x AS VARCHAR(n))` cuts that string
  to n characters and `CAST(x AS CHAR(n))` also pads it with spaces to n (CHAR alone is CHAR(1)).

Only the analyst's own nodes are rewritten (`mark`, before any rewrite): the translation's
templates keep Spark's meaning (`typeof(a) LIKE 'map<%'`). The calls are written after both
checks of the analyst's query (their names start with the reserved __dagger_, which an analyst
may not write); the JVM plan check sees what their builders make, Spark's allowed expressions.
"""

from __future__ import annotations

from sqlglot import exp

DIVIDE = "__dagger_divide"
AVG = "__dagger_avg"
TYPEOF = "__dagger_typeof"
CAST_STRING = "__dagger_cast_string"
NAMES = (DIVIDE, AVG, TYPEOF, CAST_STRING)  # as FlinkTypes.names() in the JVM

_MARK = "dagger_flink_types"
_STRINGS = (
    exp.DataType.Type.TEXT,
    exp.DataType.Type.VARCHAR,
    exp.DataType.Type.CHAR,
    exp.DataType.Type.NVARCHAR,
    exp.DataType.Type.NCHAR,
)
_TIMESTAMPS = (
    exp.DataType.Type.TIMESTAMP,
    exp.DataType.Type.TIMESTAMPTZ,
    exp.DataType.Type.TIMESTAMPLTZ,
    exp.DataType.Type.TIMESTAMPNTZ,
)


def mark(tree: exp.Expression) -> None:
    """Mark the analyst's nodes that `rewrite` may change; copies made by later rewrites keep it."""
    for node in tree.walk():
        if isinstance(node, (exp.Div, exp.Avg, exp.Typeof, exp.Cast)):
            node.meta[_MARK] = True


def rewrite(tree: exp.Expression) -> None:
    """Rewrite, in place, the marked nodes into the runtime's typed functions (innermost first)."""
    for node in reversed(list(tree.walk())):
        if not node.meta.get(_MARK):
            continue
        if isinstance(node, exp.Div):
            node.replace(_call(DIVIDE, node.this, node.expression))
        elif isinstance(node, exp.Avg):
            _wrap_avg(node)
        elif isinstance(node, exp.Typeof):
            node.replace(_call(TYPEOF, *_with_precision(node.this)))
        elif isinstance(node, exp.Cast) and node.to.is_type(*_STRINGS):
            node.replace(_string_cast(node))


def _call(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _wrap_avg(node: exp.Avg) -> None:
    target: exp.Expression = node.parent if isinstance(node.parent, exp.Filter) else node
    if isinstance(target.parent, exp.Window):
        return  # AVG(x) OVER (...): Spark's (OVER cannot run on a stream in any case)
    wrapper = exp.Anonymous(this=AVG, expressions=[])
    target.replace(wrapper)
    wrapper.set("expressions", [target])


def _string_cast(node: exp.Cast) -> exp.Expression:
    text: exp.Expression = _call(CAST_STRING, *_with_precision(node.this))
    to = node.to
    if to.is_type(exp.DataType.Type.TEXT):
        return text
    length = _length(to)
    fixed = to.is_type(exp.DataType.Type.CHAR, exp.DataType.Type.NCHAR)
    if length is None:
        if not fixed:
            return text  # VARCHAR: Flink's STRING
        length = 1  # CHAR: Flink's CHAR(1)
    cut = exp.Substring(this=text, start=exp.Literal.number(1), length=exp.Literal.number(length))
    if not fixed:
        return cut
    # Flink pads a CHAR(n) with spaces to n characters
    return exp.Pad(this=cut, expression=exp.Literal.number(length), fill_pattern=exp.Literal.string(" "), is_left=False)


def _with_precision(value: exp.Expression) -> list[exp.Expression]:
    precision = _timestamp_precision(value)
    return [value] if precision is None else [value, exp.Literal.number(precision)]


def _length(to: exp.DataType) -> int | None:
    params = to.expressions
    if len(params) != 1:
        return None
    value = params[0].this if isinstance(params[0], exp.DataTypeParam) else params[0]
    try:
        return int(value.this) if isinstance(value, exp.Literal) and not value.is_string else None
    except ValueError:
        return None


def _timestamp_precision(value: exp.Expression) -> int | None:
    """The precision of a timestamp as Flink types it, when the query says it: a literal
    (TIMESTAMP '... 00:00:00.5' has 1) or a CAST to TIMESTAMP(p) (TIMESTAMP alone is 6). None
    otherwise: the runtime's timestamps (rowtime, window bounds, TO_TIMESTAMP) are TIMESTAMP(3)."""
    while isinstance(value, exp.Paren):
        value = value.this
    if not isinstance(value, exp.Cast) or not value.to.is_type(*_TIMESTAMPS):
        return None
    literal = value.this
    if type(value) is exp.Cast and isinstance(literal, exp.Literal) and literal.is_string:
        # TIMESTAMP '...': as many digits as the fraction written
        text = literal.this.strip()
        return len(text.rsplit(".", 1)[1]) if "." in text.split(" ")[-1] else 0
    written = _length(value.to)
    return 6 if written is None else written
