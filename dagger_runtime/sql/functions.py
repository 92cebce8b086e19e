"""raystack/dagger's functions in Spark SQL.

Each dagger function is either a macro (rewritten into Spark built-ins, so it runs in the JVM
with code generation) or a vectorised UDF (registered by dagger_runtime.udfs, called on whole
Arrow batches). Names are matched case-insensitively, as Spark and Flink do. Contracts follow
raystack/dagger's Java implementations (docs/reference/udf-contracts.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import sqlglot
from sqlglot import exp

from ..errors import QueryError
from .positions import locate

Builder = Callable[[list[exp.Expression]], exp.Expression]


@dataclass(frozen=True)
class DaggerFunction:
    name: str
    params: tuple[str, ...]
    build: Builder | None = None  # macro: Spark SQL expression built from the arguments
    vectorised: bool = False  # a UDF registered under `name` by dagger_runtime.udfs
    optional: int = 0  # how many trailing params may be omitted
    aggregate: bool = False
    variadic: bool = False  # the last param repeats (ROW(a, b, ...))

    def arity_ok(self, n: int) -> bool:
        return len(self.params) - self.optional <= n <= (n if self.variadic else len(self.params))

    def signature(self) -> str:
        if self.variadic:
            return f"{self.name}({self.params[0]}, ...)"
        required = self.params[: len(self.params) - self.optional]
        optional = [f"[{p}]" for p in self.params[len(self.params) - self.optional :]]
        return f"{self.name}({', '.join([*required, *optional])})"


def template(text: str) -> Builder:
    """A macro from Spark SQL text with {0}, {1}... standing for the arguments."""
    spark_text = re.sub(r"\{(\d+)\}", r"__arg\1__", text)
    tree = _reserve_lambda_variables(sqlglot.parse_one(spark_text, read="spark"))

    def build(args: list[exp.Expression]) -> exp.Expression:
        def substitute(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Column) and not node.table and node.name.startswith("__arg"):
                return args[int(node.name[5:-2])].copy()
            return node

        return tree.copy().transform(substitute)

    return build


# A template's lambda variables (x -> ...) are renamed into this prefix, which an analyst's query may
# not use (refuse_reserved_names): an argument substituted into the lambda's body can then never be
# captured by it (INITCAP(__i) over a column named __i read the template's position instead).
RESERVED_PREFIX = "__dagger_"


def _reserve_lambda_variables(tree: exp.Expression) -> exp.Expression:
    for lam in list(tree.find_all(exp.Lambda)):
        names = {v.name for v in lam.expressions}
        renamed = {n: RESERVED_PREFIX + n.lstrip("_") for n in names}
        for v in lam.expressions:
            v.set("this", renamed[v.name])
        for ident in lam.this.find_all(exp.Identifier):
            # the variable itself or the head of its field access (__e.key); a column named
            # as a placeholder (__arg0__) is never a lambda variable
            if ident.name in renamed and (not isinstance(ident.parent, exp.Dot) or ident.parent.this is ident):
                ident.set("this", renamed[ident.name])
    return tree


def refuse_reserved_names(sql: str, tree: exp.Expression) -> None:
    """The analyst's query may not name anything with the prefix the templates' lambdas use."""
    for ident in tree.find_all(exp.Identifier):
        if str(ident.this).lower().startswith(RESERVED_PREFIX):
            line, col = locate(sql, ident)
            raise QueryError(
                f"refused: the name {ident.this} starts with {RESERVED_PREFIX}, which is reserved for "
                "the translation's own variables; rename it (an alias such as AS i)",
                line=line,
                col=col,
                sql=sql,
            )


_REGISTRY: dict[str, DaggerFunction] = {}


def register(fn: DaggerFunction) -> DaggerFunction:
    _REGISTRY[fn.name.lower()] = fn
    return fn


def lookup(name: str) -> DaggerFunction | None:
    return _REGISTRY.get(name.lower())


def all_functions() -> list[DaggerFunction]:
    return sorted(_REGISTRY.values(), key=lambda f: f.name.lower())


def rewrite(sql: str, tree: exp.Expression) -> set[str]:
    """Replace dagger function calls by their Spark forms in place; return the vectorised ones used."""
    used: set[str] = set()
    calls = [n for n in tree.walk() if isinstance(n, exp.Anonymous) and lookup(str(n.this))]
    # typed nodes sqlglot already knows under a dagger name (Split -> RegexpSplit)
    calls += [n for n in tree.walk() if type(n) in _TYPED]
    budget = Budget(sql)
    for node in reversed(calls):  # innermost first, so nested dagger calls are rewritten too
        if isinstance(node, exp.Anonymous):
            fn = lookup(str(node.this))
            args = list(node.expressions)
        else:
            fn = lookup(_TYPED[type(node)])
            args = [a for a in (node.this, node.expression) if a is not None]
        if not fn.arity_ok(len(args)):
            line, col = locate(sql, node)
            raise QueryError(
                f"{fn.name} takes {_count(fn)} arguments: {fn.signature()}; got {len(args)}",
                line=line,
                col=col,
                sql=sql,
            )
        if fn.vectorised:
            used.add(fn.name)
            node.replace(exp.Anonymous(this=fn.name, expressions=[a.copy() for a in args]))
        elif fn.build is not None:
            budget.before(args, node)
            try:
                built = fn.build(args)
            except QueryError as e:
                if e.line is not None:
                    raise
                line, col = locate(sql, node)
                raise QueryError(e.reason, line=line, col=col, sql=sql) from None
            budget.spend(built, node)
            node.replace(built)
    return used


# A macro may repeat an argument (INITCAP reads its string six times), so nesting one in another
# multiplies: the expressions built for one query are capped, and a query over the cap is refused
# before its translation grows any further.
MAX_TRANSLATED_NODES = 50_000
# how many times the most repetitive macro reads one argument, for the check before a macro is built
_MOST_REPEATS = 12


class Budget:
    def __init__(self, sql: str):
        self.sql = sql
        self.left = MAX_TRANSLATED_NODES

    def before(self, args: list[exp.Expression], call: exp.Expression) -> None:
        """Refuse before building a macro whose copies of its arguments could pass the cap."""
        size = 0
        for arg in args:
            for _ in arg.walk():
                size += _MOST_REPEATS
                if size > self.left:
                    self._refuse(call)

    def spend(self, built: exp.Expression, call: exp.Expression) -> None:
        for _ in built.walk():
            self.left -= 1
            if self.left < 0:
                self._refuse(call)

    def _refuse(self, call: exp.Expression) -> None:
        line, col = locate(self.sql, call)
        raise QueryError(
            "refused: the query's functions, nested as written, translate into more than "
            f"{MAX_TRANSLATED_NODES:,} expressions; compute the inner value in a subquery "
            "and apply the outer function to its column",
            line=line,
            col=col,
            sql=self.sql,
        )


def _count(fn: DaggerFunction) -> str:
    lo, hi = len(fn.params) - fn.optional, len(fn.params)
    if fn.variadic:
        return f"{lo} or more"
    return str(hi) if lo == hi else f"{lo} to {hi}"


_TYPED: dict[type, str] = {exp.RegexpSplit: "Split"}


def refuse(sql: str, node: exp.Expression, what: str) -> QueryError:
    """A refusal at the node's line and column in the query (none inside a macro: functions.rewrite
    adds where the call is)."""
    if not sql:
        return QueryError(f"refused: {what}")
    line, col = locate(sql, node)
    return QueryError(f"refused: {what}", line=line, col=col, sql=sql)


def string_literal(node: exp.Expression) -> str | None:
    return node.this if isinstance(node, exp.Literal) and node.is_string else None
