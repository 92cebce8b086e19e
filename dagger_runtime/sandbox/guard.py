"""The first sandbox check: an allow-list over the analyst's parsed SQL.

A dagger query runs inside the team's Spark cluster, with the team's credentials and network, so
it may only read its own streams. Every node of the parsed tree must be of a kind listed here and
every function one that `allowlist` allows; anything else is refused with the construct named and
its line and column. What is not listed is refused, so a new spelling cannot slip through: the
second check (`dagger_runtime.sandbox`, in the JVM) runs on Spark's own plans of the translated
query and does not depend on this parser agreeing with Spark's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import TokenType

from dagger_runtime.suggest import closest

from ..sql import functions, regexes, windows
from ..sql.dialect import FlinkSQL
from ..sql.positions import locate, offset_to_line_col
from . import allowlist

# The statement a dagger is: one query.
_QUERIES = (exp.Select, exp.Union, exp.Subquery)

# Clauses and expression nodes a dagger query may contain. Functions (exp.Func) are checked by
# name against the allow-list, except the few sqlglot models as functions that are operators.
_ALLOWED_NODES: frozenset[type] = frozenset(
    {
        # query structure
        exp.Select,
        exp.Union,
        exp.Subquery,
        exp.With,
        exp.CTE,
        exp.From,
        exp.Join,
        exp.Where,
        exp.Group,
        exp.Having,
        exp.Order,
        exp.Ordered,
        exp.Limit,
        exp.Distinct,
        exp.Table,
        exp.TableAlias,
        exp.Lateral,
        exp.Window,
        exp.WindowSpec,
        exp.Cube,
        exp.Rollup,
        exp.GroupingSets,
        # names and values
        exp.Column,
        exp.Identifier,
        exp.Star,
        exp.Literal,
        exp.Boolean,
        exp.Null,
        exp.Alias,
        exp.Aliases,
        exp.Paren,
        exp.Tuple,
        exp.Dot,
        exp.Bracket,
        exp.DataType,
        exp.DataTypeParam,
        exp.ColumnDef,
        exp.Interval,
        exp.Var,
        exp.Lambda,
        # operators
        exp.Add,
        exp.Sub,
        exp.Mul,
        exp.Div,
        exp.IntDiv,
        exp.Mod,
        exp.Neg,
        exp.BitwiseAnd,
        exp.BitwiseOr,
        exp.BitwiseXor,
        exp.BitwiseNot,
        exp.BitwiseLeftShift,
        exp.BitwiseRightShift,
        exp.DPipe,
        exp.EQ,
        exp.NEQ,
        exp.GT,
        exp.GTE,
        exp.LT,
        exp.LTE,
        exp.NullSafeEQ,
        exp.NullSafeNEQ,
        exp.Not,
        exp.Is,
        exp.In,
        exp.Between,
        exp.Like,
        exp.ILike,
        exp.Escape,
        exp.Any,
        exp.All,
        # how sqlglot holds some arguments: JSON paths of get_json_object, STRUCT's fields
        exp.JSONPath,
        exp.JSONPathRoot,
        exp.JSONPathKey,
        exp.JSONPathSubscript,
        exp.JSONPathWildcard,
        exp.JSONPathSlice,
        exp.JSONPathUnion,
        exp.PropertyEQ,
        # literal and call syntax: x'ff', INTERVAL '1-2' YEAR TO MONTH, first(x) IGNORE NULLS,
        # mode() WITHIN GROUP (ORDER BY x)
        exp.HexString,
        exp.IntervalSpan,
        exp.IgnoreNulls,
        exp.RespectNulls,
        exp.WithinGroup,
        # COUNT(*) FILTER (WHERE ...): an aggregate over the rows that pass, in Flink and Spark alike
        exp.Filter,
    }
)
# Nodes sqlglot does not model as functions but writes for Spark as one call (from_utc_timestamp,
# to_utc_timestamp): checked by the name of that call.
_CALL_SHAPED: frozenset[type] = frozenset({exp.AtTimeZone, exp.FromTimeZone})
# Names Spark reads as a function call when no column has that name (`SELECT user FROM ...`)
_LITERAL_FUNCTIONS = frozenset(
    {"current_date", "current_timestamp", "current_time", "current_user", "user", "session_user", "grouping__id"}
)
_OPERATOR_FUNCS: frozenset[type] = frozenset(
    {exp.And, exp.Or, exp.Case, exp.If, exp.Cast, exp.TryCast, exp.RegexpLike, exp.Exists}
)

# What the analyst is told for the constructs most often tried; others are named by their kind.
_LABELS: dict[type, str] = {
    exp.QueryTransform: "script transformation (TRANSFORM ... USING) runs a shell command",
    exp.Hint: "query hints (/*+ ... */) are not allowed: the platform plans the query",
    exp.Values: "inline tables (VALUES) are not allowed: a dagger query reads only its own streams",
    exp.TableSample: "TABLESAMPLE is not allowed",
    exp.Pivot: "PIVOT/UNPIVOT is not allowed",
    exp.Placeholder: "query parameters are not allowed",
    exp.Parameter: "query parameters are not allowed",
    exp.SessionParameter: "session variables are not allowed",
    exp.Into: "SELECT INTO is not allowed: a dagger query only reads its streams",
    exp.Sort: "SORT BY is not allowed: the platform decides how data is partitioned",
    exp.Cluster: "CLUSTER BY is not allowed: the platform decides how data is partitioned",
    exp.Distribute: "DISTRIBUTE BY is not allowed: the platform decides how data is partitioned",
    exp.Lock: "FOR UPDATE is not allowed",
    exp.Kwarg: "named arguments (=>) are not allowed",
    exp.Except: "EXCEPT is not allowed in a dagger query",
    exp.Intersect: "INTERSECT is not allowed in a dagger query",
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(")


@dataclass(frozen=True)
class Refusal:
    what: str
    line: int | None
    col: int | None

    def __str__(self) -> str:
        where = f"line {self.line}, column {self.col}: " if self.line else ""
        return f"{where}{self.what}"


def function_name(node: exp.Func) -> str:
    """The name Spark will resolve for a function node: as written for a call sqlglot does not
    know, else the name sqlglot writes for Spark (what actually runs)."""
    if isinstance(node, exp.Anonymous):
        return node.name
    match = _CALL.match(_head_sql(node))
    return (match.group(1) if match else node.sql_name()).lower()


_PLACEHOLDER = "__dagger_arg"


def _head_sql(node: exp.Expression) -> str:
    """The node written for Spark with each argument that has arguments of its own replaced by a
    placeholder column: the call's name does not depend on what its arguments hold, and writing
    the whole subtree at every call (sqlglot copies it to write it) made checking a large query
    quadratic (a 190 KB tree of ORs took 40 s)."""

    def stand_in(value):
        if isinstance(value, exp.Expression):
            if isinstance(value, (exp.DataType, exp.Var, exp.Interval)) or not any(value.iter_expressions()):
                return value.copy()
            return exp.column(_PLACEHOLDER)
        if isinstance(value, list):
            return [stand_in(v) for v in value]
        return value

    head = type(node)(**{key: stand_in(value) for key, value in node.args.items()})
    return head.sql(dialect="spark", comments=False)


def _words(class_name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", " ", class_name).lower()


def statement_kind(sql: str) -> str:
    """What a statement is, by its first words as written (EXECUTE IMMEDIATE, SET, TABLE...)."""
    words = re.findall(r"[A-Za-z_]+", sql)[:2]
    if not words:
        return "an empty statement"
    two = " ".join(words).upper()
    return (
        two
        if two
        in (
            "EXECUTE IMMEDIATE",
            "LOAD DATA",
            "CACHE TABLE",
            "UNCACHE TABLE",
            "ADD JAR",
            "ADD FILE",
            "ADD ARCHIVE",
            "INSERT INTO",
            "INSERT OVERWRITE",
        )
        else words[0].upper()
    )


def _dialect_function(name: str) -> bool:
    """Group windows and their bounds (TUMBLE, HOP_END...) and raystack/dagger's UDFs."""
    upper = name.upper()
    return (
        upper in windows.GROUP_FUNCS
        or windows.AUX_FUNCTION.match(upper) is not None
        or functions.lookup(name) is not None
    )


def check(sql: str, tree: exp.Expression, tables: set[str] | list[str] | tuple[str, ...]) -> list[Refusal]:
    """Every refused construct in the query, in order of appearance."""
    refusals: list[Refusal] = []
    streams = {t.lower() for t in tables}

    def refuse(node: exp.Expression, what: str) -> None:
        line, col = locate(sql, node)
        refusals.append(Refusal(what, line, col))

    if not isinstance(tree, _QUERIES):
        start = len(sql) - len(sql.lstrip())
        line, col = offset_to_line_col(sql, start)
        refusals.append(
            Refusal(
                f"only a SELECT query is allowed, not {statement_kind(sql)}: a dagger query only reads its streams",
                line,
                col,
            )
        )
        return refusals

    parens = too_many_parentheses(sql)
    if parens is not None:
        refusals.append(parens)
        return refusals
    deep, depth = _too_deep(tree)
    if deep is not None:
        # nothing else walks this tree: Python's and Spark's recursive code would overflow its stack
        refuse(
            deep,
            f"the query is nested {depth} levels deep, more than the {allowlist.MAX_NESTING_DEPTH} "
            "allowed (each AND or OR of a chain, each operator and each call inside another is a "
            "level); split the condition, e.g. x IN (1, 2, 3) for a chain of ORs, or compute parts "
            "in a subquery",
        )
        return refusals
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for node in tree.walk():
        for problem in _costs(node):
            refuse(node, problem)
        kind = type(node)
        if isinstance(node, exp.With) and node.args.get("recursive"):
            refuse(node, "WITH RECURSIVE is not allowed")
        elif isinstance(node, exp.Func) and kind not in _OPERATOR_FUNCS:
            problem = _check_function(node)
            if problem:
                refuse(node, problem)
        elif kind in _CALL_SHAPED:
            problem = _check_call_shaped(node)
            if problem:
                refuse(node, problem)
        elif kind not in _ALLOWED_NODES and kind not in _OPERATOR_FUNCS:
            refuse(node, _LABELS.get(kind) or f"{_words(kind.__name__)} is not allowed in a dagger query")
        elif isinstance(node, exp.PropertyEQ) and not isinstance(node.parent, exp.Struct):
            refuse(node, "named arguments (:=) are not allowed")
        elif isinstance(node, exp.Column) and not node.table and node.name.lower() in _LITERAL_FUNCTIONS:
            refuse(
                node,
                f"`{node.name}` on its own is read by Spark as the function {node.name.lower()}(), "
                f"which {allowlist.classify(node.name) or 'is not allowed'}; if the stream has a "
                f"field of that name, write it with the table name (table.{node.name})",
            )
        elif isinstance(node, exp.Table):
            problem = _check_table(node, streams, ctes)
            if problem:
                refuse(node, problem)
        elif isinstance(node, exp.Lateral) and not (node.args.get("view") and isinstance(node.this, exp.Func)):
            refuse(node, "LATERAL subqueries are not allowed; use LATERAL VIEW with a generator such as explode")
        elif isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
            refuse(
                node,
                f"qualified function names ({node.sql(comments=False)[:40]}) are not allowed: "
                "call functions by their plain name",
            )
        elif isinstance(node, (exp.Literal, exp.Identifier)) and "${" in str(node.this):
            refuse(node, "${...} is not allowed: Spark's variable substitution is off in daggers")
    return refusals


def _too_deep(tree: exp.Expression) -> tuple[exp.Expression | None, int]:
    """The first node deeper than MAX_NESTING_DEPTH and the tree's depth, found without recursion."""
    stack, first, deepest = [(tree, 1)], None, 0
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > allowlist.MAX_NESTING_DEPTH and first is None:
            first = node
        stack.extend((child, depth + 1) for child in node.iter_expressions())
    return first, deepest


def query_too_long(sql: str) -> str | None:
    """A query text past MAX_QUERY_TEXT, said before it is parsed (parsing and Spark's analysis of
    hundreds of thousands of tokens take minutes)."""
    if len(sql) > allowlist.MAX_QUERY_TEXT:
        return (
            f"the query has {len(sql):,} characters; a dagger's query may have at most "
            f"{allowlist.MAX_QUERY_TEXT:,} (256 KB): keep long lists of values in a DART or a "
            "lookup, not in the query"
        )
    return None


def regex_too_long(regex: str) -> str | None:
    """A regex past MAX_REGEX_LENGTH, said before its static check runs."""
    if len(regex) > allowlist.MAX_REGEX_LENGTH:
        return (
            f"it has {len(regex):,} characters; a regex or LIKE pattern may have at most {allowlist.MAX_REGEX_LENGTH:,}"
        )
    return None


def too_many_parentheses(sql: str) -> Refusal | None:
    """Parentheses (a call's included) nested deeper than MAX_PAREN_DEPTH, from the tokens: the
    parser itself recurses once per level."""
    try:
        tokens = FlinkSQL().tokenize(sql)
    except Exception:  # noqa: BLE001 - the parser reports the syntax error itself
        return None
    depth, deepest, where = 0, 0, None
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if depth == allowlist.MAX_PAREN_DEPTH + 1:
                    where = token
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
    if where is None:
        return None
    return Refusal(
        f"parentheses and calls are nested {deepest} deep, more than the {allowlist.MAX_PAREN_DEPTH} "
        "allowed; compute inner parts in a subquery or a WITH clause",
        where.line,
        where.col - len(where.text) + 1,
    )


# functions whose arguments after the first are regexes (Spark's and dagger's names)
REGEX_FUNCTIONS = frozenset(
    {
        "rlike",
        "regexp",
        "regexp_like",
        "regexp_extract",
        "regexp_extract_all",
        "regexp_replace",
        "regexp_count",
        "regexp_instr",
        "regexp_substr",
        "split",
        "str_to_map",
        "dartcontains",
        "similar_to",
        "regexp_split",
    }
)
_REGEX_NODES = tuple(
    t for t in (getattr(exp, n, None) for n in ("RegexpLike", "RegexpILike", "SimilarTo")) if t is not None
)


_REGEX_LABELS = {"RegexpLike": "RLIKE", "RegexpILike": "ILIKE", "SimilarTo": "SIMILAR TO"}


def _costs(node: exp.Expression) -> list[str]:
    """What a node's literals would cost: an over-long string, a regex that backtracks for hours,
    a DART refresh rate that is not an integer."""
    problems = []
    if isinstance(node, exp.Literal) and node.is_string and len(node.this) > allowlist.MAX_STRING_LITERAL:
        problems.append(
            f"a string literal of {len(node.this):,} characters; literals may have at most "
            f"{allowlist.MAX_STRING_LITERAL:,} (1 MB)"
        )
        return problems
    if isinstance(node, exp.HexString) and len(str(node.this)) // 2 > allowlist.MAX_STRING_LITERAL:
        problems.append(
            f"a binary literal of {len(str(node.this)) // 2:,} bytes; literals may have at most "
            f"{allowlist.MAX_STRING_LITERAL:,} (1 MB)"
        )
        return problems
    if isinstance(node, (exp.Like, exp.ILike)):
        pattern = node.expression
        if isinstance(pattern, exp.Literal) and pattern.is_string:
            long = regex_too_long(pattern.this)
            if long:
                problems.append(f"the LIKE pattern '{_short(pattern.this)}': {long}")
                return problems
            why = regexes.problem(like_regex(pattern.this))
            if why:
                problems.append(
                    f"the LIKE pattern '{_short(pattern.this)}' would backtrack for hours: as a regex, {why}"
                )
        return problems
    name = None
    if isinstance(node, _REGEX_NODES):
        name, args = _REGEX_LABELS.get(type(node).__name__, type(node).__name__), [node.expression]
    elif isinstance(node, exp.Func):
        name = function_name(node).lower() if not isinstance(node, exp.Anonymous) else str(node.this).lower()
        args = list(node.iter_expressions())[1:] if name in REGEX_FUNCTIONS else []
        if name in ("dartcontains", "dartget"):
            problems += _dart_numbers(name, list(node.expressions))
            args = list(node.expressions)[2:3] if name == "dartcontains" else []
    else:
        args = []
    for arg in args:
        if isinstance(arg, exp.Literal) and arg.is_string:
            label = name if name in _REGEX_LABELS.values() else f"{name}()"
            long = regex_too_long(arg.this)
            if long:
                problems.append(f"the regex '{_short(arg.this)}' of {label}: {long}")
                continue
            why = regexes.problem(arg.this)
            if why:
                problems.append(f"the regex '{_short(arg.this)}' of {label} would backtrack for hours: {why}")
    return problems


def _dart_numbers(name: str, args: list[exp.Expression]) -> list[str]:
    """DartContains(list, field, regex_or_hours[, hours]) and DartGet(c, k, hours[, default]): a
    number written as a refresh rate must be a whole number of hours."""
    positions = (2, 3) if name == "dartcontains" else (2,)
    out = []
    for i in positions:
        if i >= len(args):
            continue
        arg = args[i]
        value = arg.this if isinstance(arg, exp.Neg) else arg
        if isinstance(value, exp.Literal) and not value.is_string and not re.fullmatch(r"\d+", value.this):
            out.append(
                f"{'DartContains' if name == 'dartcontains' else 'DartGet'}: the refresh rate "
                f"{arg.sql()} is not a whole number of hours; write e.g. 1 or 24"
            )
    return out


def like_regex(pattern: str, escape: str = "\\") -> str:
    """A LIKE pattern as the regex Spark runs it as: % any text, _ one character."""
    out, i = ["(?s)"], 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 1
        elif c == "%":
            out.append(".*")
        elif c == "_":
            out.append(".")
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _check_call_shaped(node: exp.Expression) -> str | None:
    """One of _CALL_SHAPED: allowed when the call Spark receives is."""
    match = _CALL.match(_head_sql(node))
    if match is None:
        return f"{_words(type(node).__name__)} is not allowed in a dagger query"
    reason = allowlist.classify(match.group(1))
    return f"function {match.group(1).lower()}() is not allowed: it {reason}" if reason else None


def _check_function(node: exp.Func) -> str | None:
    name = function_name(node)
    if not _NAME.fullmatch(name):
        return f"function {name!r} is not allowed: function names are plain ASCII words"
    if isinstance(node, exp.Anonymous) and name.startswith("__"):
        return f"function {name}() is not allowed: names starting with __ are the runtime's own"
    if isinstance(node, exp.Anonymous) and _dialect_function(name):
        return None
    reason = allowlist.classify(name)
    if reason and name.lower() not in allowlist.REFUSED_SPARK_FUNCTIONS:
        return f"unknown function {name}()" + _did_you_mean(name)
    if reason:
        return f"function {name}() is not allowed: it {reason}"
    args = [a for a in node.iter_expressions() if not isinstance(a, (exp.Var, exp.DataType))]
    call = allowlist.REFUSED_CALLS.get((name.lower(), len(args)))
    if call:
        return f"function {name}() is not allowed {call}"
    return None


def _did_you_mean(name: str) -> str:

    known = {f.name for f in functions.all_functions()} | set(allowlist.ALLOWED_SPARK_FUNCTIONS)
    close = closest(name, known, n=1)
    return f"; did you mean {close[0]}()?" if close else ""


def _check_table(node: exp.Table, streams: set[str], ctes: set[str]) -> str | None:
    if isinstance(node.this, exp.Func):
        return f"table function {function_name(node.this)}() is not allowed: a dagger query reads only its own streams"
    if (
        not isinstance(node.this, exp.Identifier)
        or node.args.get("db") is not None
        or node.args.get("catalog") is not None
    ):
        return (
            f"table {node.sql(dialect='spark', comments=False)} is not allowed: a dagger query reads "
            f"only its own streams ({', '.join(sorted(streams))}), not other databases or files"
        )
    name = node.name.lower()
    if name in streams or name in ctes:
        return None
    return f"unknown table `{node.name}`: this job's streams are {', '.join('`' + t + '`' for t in sorted(streams))}"


def explain_unparsable(sql: str) -> Refusal | None:
    """Constructs sqlglot cannot parse but Spark would run, named from the tokens so the analyst
    hears what was refused rather than "syntax error": Hive's script forms (MAP/REDUCE/TRANSFORM
    ... USING 'command') and the IDENTIFIER clause."""
    deep = too_many_parentheses(sql)
    if deep is not None:
        return deep
    try:
        tokens = FlinkSQL().tokenize(sql)
    except Exception:  # noqa: BLE001 - the caller reports the syntax error itself
        return None
    for token, following in zip(tokens, tokens[1:]):
        col = token.col - len(token.text) + 1
        if token.token_type == TokenType.USING and following.token_type == TokenType.STRING:
            return Refusal(
                "script transformation (MAP/REDUCE/TRANSFORM ... USING 'command') runs a shell "
                "command; it is not allowed",
                token.line,
                col,
            )
        if token.text.upper() == "IDENTIFIER" and following.token_type == TokenType.L_PAREN:
            return Refusal(
                "the IDENTIFIER clause is not allowed: name tables, columns and functions as they are", token.line, col
            )
    return None
