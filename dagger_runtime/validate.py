"""Spark's analysis of a planned query against the streams' schemas: names and types, no data."""
from __future__ import annotations

import difflib
import logging

from .errors import QueryError
from .plan import JobPlan


def analyze(plan: JobPlan, spark=None) -> list[dict]:
    """Every check, over empty tables of the streams' schemas: nothing is read and nothing runs.
    Returns the query's output columns. validate, preview and run all start here."""
    from .session import build_session
    from .streams import decode
    from .udfs import register_all

    spark = spark or build_session(f"validate-{plan.job.name}", parallelism=1)
    register_all(spark)
    for stream in plan.streams:
        raw = spark.createDataFrame([], "value binary")
        table, _, _ = decode(spark, raw, stream, plan.descriptor_set)
        table.createOrReplaceTempView(stream.table)
    schema = checked_query(spark, plan).schema
    return [{"name": f.name, "type": f.dataType.simpleString()} for f in schema.fields]


def checked_query(spark, plan: JobPlan):
    """The job's query as a DataFrame over the stream tables registered in `spark`, after both
    sandbox checks and Spark's analysis; nothing has executed yet. The one path of checks that
    validate, preview and run share."""
    from pyspark.errors import AnalysisException

    from . import sandbox

    tables = [s.table for s in plan.streams]
    sandbox.check_parsed(spark, plan.query, tables)
    _check_literal_arguments(plan, spark)
    # PySpark logs every analysis error with its JVM stack trace; the QueryError below says it better
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    try:
        dataframe = spark.sql(plan.query.spark_sql)
    except AnalysisException as e:
        columns = [c for t in tables for c in spark.table(t).columns]
        raise explain(e, plan.query, columns) from None
    sandbox.check_analyzed(spark, dataframe, plan.query, tables)
    return dataframe


def _unquote(name: str) -> str:
    return name.replace("`", "").replace('"', "")


def explain(error, query, columns: list[str] = ()) -> QueryError:
    """Spark's analysis error, said in the analyst's terms and pointed at in the analyst's SQL
    (Spark only knows the translated query)."""
    from sqlglot import exp

    from .sql.positions import locate

    condition = (error.getCondition() if hasattr(error, "getCondition") else error.getErrorClass()) or ""
    params = error.getMessageParameters() or {}
    sql, tree = query.source, query.tree
    node, message = None, None
    if condition.startswith("UNRESOLVED_COLUMN"):
        name = _unquote(params.get("objectName", ""))
        leaf = name.split(".")[-1].lower()
        node = next((c for c in tree.find_all(exp.Column) if c.name.lower() == leaf), None)
        # suggest from the streams' own columns (Spark also proposes its internal `window`)
        proposals = difflib.get_close_matches(leaf, sorted(set(columns)), n=1, cutoff=0.5)
        message = f"unknown column `{name}`" + (f"; did you mean `{proposals[0]}`?" if proposals else "")
    elif condition.startswith("UNRESOLVED_ROUTINE"):
        name = _unquote(params.get("routineName", ""))
        node = next((f for f in tree.find_all(exp.Anonymous) if str(f.this).lower() == name.lower()), None)
        message = f"unknown function {node.this if node is not None else name}()"
    elif condition.startswith(("MISSING_AGGREGATION", "MISSING_GROUP_BY")):
        name = _unquote(params.get("expression", ""))
        node = next((c for c in tree.find_all(exp.Column) if c.sql().lower() == name.lower()), None)
        message = (f"{name} is neither in GROUP BY nor inside an aggregate" if name
                   else "the query aggregates without GROUP BY")
    if message is None:
        first = str(error).split("\n")[0]
        message = "does not fit the streams' schemas: " + first.split(" SQLSTATE")[0]
    line, col = locate(sql, node) if node is not None else (None, None)
    return QueryError(message, line=line, col=col, sql=sql)


def _check_literal_arguments(plan: JobPlan, spark) -> None:
    """JSON paths and DART regexes written as literals are checked by the JVM code that will use
    them, so a typo is refused before the job runs rather than giving NULLs for ever."""
    from sqlglot import exp

    from .sql.positions import locate
    from .udfs.java_udfs import check_dart_regex, check_json_path

    sql = plan.query.source
    for node in plan.query.tree.find_all(exp.Anonymous):
        name = str(node.this).lower()
        args = node.expressions
        if name in ("jsonquery", "jsonupdate", "jsondelete") and len(args) >= 2:
            arg, check, what = args[1], check_json_path, "JSON path"
        elif name == "dartcontains" and len(args) >= 3 and isinstance(args[2], exp.Literal) and args[2].is_string:
            arg, check, what = args[2], check_dart_regex, "DartContains regex"
        else:
            continue
        if isinstance(arg, exp.Literal) and arg.is_string:
            problem = check(spark, arg.this)
            if problem:
                line, col = locate(sql, node)
                raise QueryError(f"{node.this}: bad {what} '{arg.this}': {problem}", line=line, col=col, sql=sql)
