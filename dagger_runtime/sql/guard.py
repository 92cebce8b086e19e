"""What an analyst's query may do: read its own streams, nothing else.

The query runs inside the team's Spark cluster, so anything that reaches past the job's own
streams (DDL/DML, files by path, other tables, calls into the JVM) is refused before the job
starts, with the construct and its position named.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from .positions import locate

# Statements that change state or reach outside the query.
_REFUSED_NODES: dict[type, str] = {
    exp.Create: "CREATE (DDL)",
    exp.Drop: "DROP (DDL)",
    exp.Alter: "ALTER (DDL)",
    exp.Insert: "INSERT (DML)",
    exp.Update: "UPDATE (DML)",
    exp.Delete: "DELETE (DML)",
    exp.Merge: "MERGE (DML)",
    exp.TruncateTable: "TRUNCATE (DML)",
    exp.Command: "a command",
    exp.Use: "USE",
    exp.Set: "SET",
    exp.LoadData: "LOAD DATA",
    exp.Cache: "CACHE TABLE",
    exp.Uncache: "UNCACHE TABLE",
    exp.Refresh: "REFRESH",
    exp.Describe: "DESCRIBE",
}
for _name in ("Copy", "Pragma", "Analyze", "Grant", "Revoke"):
    if hasattr(exp, _name):
        _REFUSED_NODES[getattr(exp, _name)] = _name.upper()

# Functions that call into the JVM, read files, or reveal where the data comes from.
REFUSED_FUNCTIONS = {
    "reflect": "calls into the JVM",
    "java_method": "calls into the JVM",
    "try_reflect": "calls into the JVM",
    "read_files": "reads files by path",
    "input_file_name": "reveals file paths",
    "input_file_block_start": "reveals file paths",
    "input_file_block_length": "reveals file paths",
    "current_catalog": "reveals the cluster's catalog",
    "current_database": "reveals the cluster's catalog",
    "current_schema": "reveals the cluster's catalog",
}


@dataclass(frozen=True)
class Refusal:
    what: str
    line: int | None
    col: int | None

    def __str__(self) -> str:
        where = f"line {self.line}, column {self.col}: " if self.line else ""
        return f"{where}{self.what}"


def function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this)
    return node.sql_name() if hasattr(node, "sql_name") else type(node).__name__


def check(sql: str, tree: exp.Expression, tables: set[str]) -> list[Refusal]:
    """Every refused construct in the query, in order of appearance."""
    refusals: list[Refusal] = []
    allowed = {t.lower() for t in tables}
    cte_names = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}

    def refuse(node: exp.Expression, what: str) -> None:
        line, col = locate(sql, node)
        refusals.append(Refusal(what, line, col))

    if not isinstance(tree, exp.Query):
        refuse(tree, f"only a SELECT query is allowed, not {_REFUSED_NODES.get(type(tree), type(tree).__name__.upper())}")
        return refusals

    for node in tree.walk():
        kind = _REFUSED_NODES.get(type(node))
        if kind:
            refuse(node, f"{kind} is not allowed: a dagger query only reads its streams")
        elif isinstance(node, exp.Func):
            name = function_name(node).lower()
            if name in REFUSED_FUNCTIONS:
                refuse(node, f"function {function_name(node)}() is not allowed: it {REFUSED_FUNCTIONS[name]}")
        if isinstance(node, exp.Table):
            refusals.extend(_check_table(sql, node, allowed, cte_names))
    return refusals


def _check_table(sql: str, node: exp.Table, allowed: set[str], ctes: set[str]) -> list[Refusal]:
    line, col = locate(sql, node)
    if isinstance(node.this, exp.Func):
        return [Refusal(f"table function {function_name(node.this)}() is not allowed: "
                        "a dagger query reads only its own streams", line, col)]
    if node.args.get("db") is not None or node.args.get("catalog") is not None:
        return [Refusal(f"table {node.sql(dialect='spark')} is not allowed: a dagger query reads only its own "
                        f"streams ({', '.join(sorted(allowed))}), not other databases or files", line, col)]
    name = node.name.lower()
    if name in allowed or name in ctes:
        return []
    return [Refusal(f"unknown table `{node.name}`: this job's streams are "
                    f"{', '.join('`' + t + '`' for t in sorted(allowed))}", line, col)]
