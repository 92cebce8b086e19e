"""raystack/dagger's functions in Spark SQL.

Each dagger function is either a macro (rewritten into Spark built-ins, so it runs in the JVM
with code generation) or a vectorised UDF (registered by dagger_runtime.udfs, called on whole
Arrow batches). Names are matched case-insensitively, as Spark and Flink do. Contracts follow
raystack/dagger's Java implementations (docs/reference/udf-contracts.md).
"""
from __future__ import annotations

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
    build: Builder | None = None       # macro: Spark SQL expression built from the arguments
    vectorised: bool = False           # a UDF registered under `name` by dagger_runtime.udfs
    optional: int = 0                  # how many trailing params may be omitted
    aggregate: bool = False

    def arity_ok(self, n: int) -> bool:
        return len(self.params) - self.optional <= n <= len(self.params)

    def signature(self) -> str:
        required = self.params[: len(self.params) - self.optional]
        optional = [f"[{p}]" for p in self.params[len(self.params) - self.optional:]]
        return f"{self.name}({', '.join([*required, *optional])})"


def template(text: str) -> Builder:
    """A macro from Spark SQL text with {0}, {1}... standing for the arguments."""
    import re

    spark_text = re.sub(r"\{(\d+)\}", r"__arg\1__", text)
    tree = sqlglot.parse_one(spark_text, read="spark")

    def build(args: list[exp.Expression]) -> exp.Expression:
        def substitute(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Column) and not node.table and node.name.startswith("__arg"):
                return args[int(node.name[5:-2])].copy()
            return node
        return tree.copy().transform(substitute)

    return build


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
    for node in reversed(calls):  # innermost first, so nested dagger calls are rewritten too
        if isinstance(node, exp.Anonymous):
            fn = lookup(str(node.this))
            args = list(node.expressions)
        else:
            fn = lookup(_TYPED[type(node)])
            args = [a for a in (node.this, node.expression) if a is not None]
        if not fn.arity_ok(len(args)):
            line, col = locate(sql, node)
            raise QueryError(f"{fn.name} takes {_count(fn)} arguments: {fn.signature()}; got {len(args)}",
                             line=line, col=col, sql=sql)
        if fn.vectorised:
            used.add(fn.name)
            node.replace(exp.Anonymous(this=fn.name, expressions=[a.copy() for a in args]))
        elif fn.build is not None:
            node.replace(fn.build(args))
    return used


def _count(fn: DaggerFunction) -> str:
    lo, hi = len(fn.params) - fn.optional, len(fn.params)
    return str(hi) if lo == hi else f"{lo} to {hi}"


_TYPED: dict[type, str] = {exp.RegexpSplit: "Split"}

from . import catalog  # noqa: E402,F401  (registers the functions)
