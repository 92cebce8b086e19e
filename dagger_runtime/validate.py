"""Spark's analysis of a planned query against the streams' schemas: names and types, no data."""

from __future__ import annotations

import logging

from py4j.protocol import Py4JJavaError
from sqlglot import exp

from dagger_runtime.suggest import closest

from . import sandbox
from .constants import check_constants, check_regexes, optimize, spark_failure
from .errors import QueryError
from .plan import JobPlan
from .sandbox import allowlist
from .session import build_session
from .source import read_kafka
from .sql.positions import locate
from .streams import register_tables
from .udfs import register_all


def analyze(plan: JobPlan, spark=None) -> list[dict]:
    """Every check, over the job's streams as `run` would read them (Spark's Kafka source is only
    described, never connected): nothing is read and nothing runs. Returns the query's output
    columns. validate, preview and run all start here."""
    spark = spark or build_session(f"validate-{plan.job.name}", parallelism=1, short_lived=True)
    stream_tables(spark, plan)
    schema = streaming_query(spark, plan).schema
    return [{"name": f.name, "type": f.dataType.simpleString()} for f in schema.fields]


def stream_tables(
    spark,
    plan: JobPlan,
    set_aside: dict | None = None,
    starting: dict | None = None,
    heartbeats: dict | None = None,
    late: dict | None = None,
) -> None:
    """Register the UDFs and each stream's table over its Kafka topics (streaming DataFrames,
    not started); set_aside: each table's dead-letter function, when the tables will run;
    starting: Kafka starting options by table, for a new checkpoint; heartbeats: each table's
    heartbeat directory, when idle streams are let go (dagger_runtime.idle); late: each table's
    late-message function (dagger_runtime.late), set aside with the bad messages."""
    register_all(spark)
    raws = {
        s.table: read_kafka(spark, plan.job.streams[i], (starting or {}).get(s.table))
        for i, s in enumerate(plan.streams)
    }
    register_tables(spark, plan, raws, set_aside, heartbeats, late)


def streaming_query(spark, plan: JobPlan):
    """checked_query over streaming tables, plus Spark's own check that the plan can run as a
    stream whose results are appended once each (what `run` will start)."""
    dataframe = checked_query(spark, plan)
    check_streaming(spark, dataframe, plan.query)
    return dataframe


_DISTINCT_COUNT = "COUNT(DISTINCT ...) cannot run on a stream; use DistinctCount(x), dagger's exact distinct count"
# Spark's UnsupportedOperationChecker messages (Spark 4.0), what they mean to the analyst, and the
# SQL node to point at
_STREAMING = (
    (
        "Sorting is not supported",
        "Order",
        "ORDER BY cannot run on a stream: each result row is written once, when its window closes; "
        "sort where the results are read",
    ),
    (
        "without watermark",
        "Group",
        "GROUP BY without a TUMBLE or HOP window on the rowtime never closes a group, so a stream would "
        "never write its result; add TUMBLE(rowtime, INTERVAL '1' MINUTE) to the GROUP BY",
    ),
    (
        "NON_TIME_WINDOW_NOT_SUPPORTED_IN_STREAMING",
        "Window",
        "OVER (...) windows cannot run on a stream; aggregate per TUMBLE or HOP window instead",
    ),
    (
        "join between two streaming",
        "Join",
        "a join of two streams needs a time bound between their rowtimes, e.g. "
        "ON a.id = b.id AND b.rowtime BETWEEN a.rowtime - INTERVAL '10' MINUTE AND a.rowtime",
    ),
)


def _distinct_aggregate(query, refuse) -> QueryError:
    """Spark's refusal of an aggregate over DISTINCT values, naming the aggregate written."""
    node = next((d for d in query.tree.find_all(exp.Distinct) if isinstance(d.parent, exp.AggFunc)), None)
    if node is None or isinstance(node.parent, exp.Count):
        return refuse("Distinct", _DISTINCT_COUNT)
    call = node.parent
    name = (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).upper()
    value = node.expressions[0].sql() if node.expressions else "x"
    total = f"aggregate(collect_set({value}), CAST(0 AS DOUBLE), (s, v) -> s + v)"
    alternative = {
        "SUM": f"sum the window's set of values instead: {total}",
        "AVG": f"average the window's set of values instead: {total} / size(collect_set({value}))",
    }.get(name, f"aggregate the window's set of values instead, collect_set({value})")
    line, col = locate(query.source, call)
    return QueryError(
        f"{name}(DISTINCT ...) cannot run on a stream; {alternative}", line=line, col=col, sql=query.source
    )


def check_streaming(spark, dataframe, query) -> None:
    """Spark's UnsupportedOperationChecker on the analysed streaming plan, in append mode, its
    refusals said in the analyst's terms and pointed at in the analyst's SQL."""
    from pyspark.errors import PySparkException

    def refuse(kind, message):
        node = next(query.tree.find_all(getattr(exp, kind)), None)
        line, col = locate(query.source, node) if node is not None else (None, None)
        return QueryError(message, line=line, col=col, sql=query.source)

    # Spark runs LIMIT on a stream (the first N rows ever, then nothing): never what a dagger means
    for kind in ("Limit", "Offset", "Fetch"):
        if next(query.tree.find_all(getattr(exp, kind)), None) is not None:
            raise refuse(
                kind,
                f"{kind.upper()} cannot run on a stream: a stream has no end to count "
                "rows from; filter or aggregate per window instead",
            )
    jvm = spark._jvm
    plan = dataframe._jdf.queryExecution().analyzed()
    try:
        jvm.org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker.checkForStreaming(
            plan, jvm.org.apache.spark.sql.streaming.OutputMode.Append()
        )
    except (Py4JJavaError, PySparkException) as e:
        text = (
            str(e.java_exception.getMessage() or e.java_exception.toString())
            if isinstance(e, Py4JJavaError)
            else str(e)
        )
        if "without watermark" in text and next(query.tree.find_all(exp.Group), None) is None:
            raise refuse(
                "Distinct",
                "SELECT DISTINCT on a stream keeps every value it has ever seen and "
                "never writes a result; GROUP BY a TUMBLE window instead",
            ) from None
        if "Distinct aggregations are not supported" in text:
            raise _distinct_aggregate(query, refuse) from None
        for needle, kind, message in _STREAMING:
            if needle in text:
                raise refuse(kind, message) from None
        first = text.splitlines()[0].split(";;")[0]
        raise QueryError(f"cannot run on a stream: {first}", sql=query.source) from None
    # Spark runs an inner join of two streams with no time bound, keeping both streams for ever
    # (the optimizer puts WHERE conditions into the join; QueryExecution.optimizedPlan refuses a stream)
    optimized = optimize(spark, plan, query)
    # a regex that reaches its function through a subquery's column is a literal only now
    check_regexes(
        spark, [str(i).split("\0", 2) for i in jvm.dev.daggers.runtime.ConstantGuard.regexesOf(optimized)], query
    )
    if list(jvm.dev.daggers.runtime.StreamingChecks.unboundedJoins(optimized)):
        raise refuse(
            "Join",
            "a join of two streams needs a time bound between their rowtimes, or it keeps "
            "every message of both streams for ever; e.g. ON a.id = b.id AND b.rowtime "
            "BETWEEN a.rowtime - INTERVAL '10' MINUTE AND a.rowtime",
        )


def checked_query(spark, plan: JobPlan):
    """The job's query as a DataFrame over the stream tables registered in `spark`, after both
    sandbox checks and Spark's analysis; nothing has executed yet. The one path of checks that
    validate, preview and run share."""
    from pyspark.errors import AnalysisException, PySparkException

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
    except (Py4JJavaError, PySparkException) as e:  # a constant evaluated while analysing (from_json's schema...)
        raise spark_failure(e, plan.query) from None
    sandbox.check_analyzed(spark, dataframe, plan.query, tables)
    check_constants(spark, dataframe._jdf.queryExecution().analyzed(), plan.query)
    return dataframe


def _unquote(name: str) -> str:
    return name.replace("`", "").replace('"', "")


def explain(error, query, columns: list[str] = ()) -> QueryError:
    """Spark's analysis error, said in the analyst's terms and pointed at in the analyst's SQL
    (Spark only knows the translated query)."""
    condition = (error.getCondition() if hasattr(error, "getCondition") else error.getErrorClass()) or ""
    params = error.getMessageParameters() or {}
    sql, tree = query.source, query.tree
    node, message = None, None
    if condition.startswith("UNRESOLVED_COLUMN"):
        name = _unquote(params.get("objectName", ""))
        leaf = name.split(".")[-1].lower()
        node = next((c for c in tree.find_all(exp.Column) if c.name.lower() == leaf), None)
        # suggest from the streams' own columns (Spark also proposes its internal `window`)
        proposals = closest(leaf, columns, n=1)
        message = f"unknown column `{name}`" + (f"; did you mean `{proposals[0]}`?" if proposals else "")
    elif condition.startswith("FIELD_NOT_FOUND"):
        name = _unquote(params.get("fieldName", ""))
        fields = [_unquote(f.strip()) for f in params.get("fields", "").split(",") if f.strip()]
        node = next((c for c in tree.find_all(exp.Column) if c.name.lower() == name.lower()), None)
        written = node.sql(dialect="spark").replace("`", "") if node is not None else name
        proposals = closest(name, fields, n=1)
        parent = written.rsplit(".", 1)[0] if "." in written else "the message"
        message = (
            f"{parent} has no field `{name}`"
            + (f"; did you mean `{proposals[0]}`?" if proposals else "")
            + (f" (its fields: {', '.join(fields)})" if fields else "")
        )
    elif condition.startswith("UNRESOLVED_ROUTINE"):
        name = _unquote(params.get("routineName", ""))
        node = next((f for f in tree.find_all(exp.Anonymous) if str(f.this).lower() == name.lower()), None)
        message = f"unknown function {node.this if node is not None else name}()"
    elif condition.startswith(("MISSING_AGGREGATION", "MISSING_GROUP_BY")):
        name = _unquote(params.get("expression", ""))
        node = next((c for c in tree.find_all(exp.Column) if c.sql().lower() == name.lower()), None)
        message = (
            f"{name} is neither in GROUP BY nor inside an aggregate"
            if name
            else "the query aggregates without GROUP BY"
        )
    elif condition.startswith("INVALID_SUBQUERY_EXPRESSION.STREAMING_QUERY"):
        node = next(
            (
                n
                for n in tree.find_all(exp.In, exp.Exists, exp.Subquery)
                if isinstance(n, (exp.In, exp.Exists))
                and n.find(exp.Select) is not None
                or isinstance(n, exp.Subquery)
                and not isinstance(n.parent, (exp.From, exp.Join))
            ),
            None,
        )
        what = (
            "IN (SELECT ...)"
            if isinstance(node, exp.In)
            else "EXISTS (SELECT ...)"
            if isinstance(node, exp.Exists)
            else "a subquery inside an expression"
        )
        message = (
            f"refused: {what} cannot run on a stream (Spark runs no subquery over a stream inside an "
            "expression); join the two streams instead, with an interval join on rowtime: "
            "JOIN p ON p.k = b.k AND p.rowtime BETWEEN b.rowtime - INTERVAL '1' MINUTE AND b.rowtime"
        )
    if message is None:
        first = str(error).split("\n")[0]
        message = "does not fit the streams' schemas: " + first.split(" SQLSTATE")[0]
    line, col = locate(sql, node) if node is not None else (None, None)
    return QueryError(message, line=line, col=col, sql=sql)


def _check_literal_arguments(plan: JobPlan, spark) -> None:
    """JSON paths and DART regexes written as literals are checked by the JVM code that will use
    them, so a typo is refused before the job runs rather than giving NULLs for ever."""

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
            problem = _json_path_size(arg.this) if what == "JSON path" else None
            problem = problem or check(spark, arg.this)
            if problem:
                line, col = locate(sql, node)
                shown = arg.this if len(arg.this) <= 80 else arg.this[:80] + "..."
                raise QueryError(f"{node.this}: bad {what} '{shown}': {problem}", line=line, col=col, sql=sql)


def _json_path_size(path: str) -> str | None:
    """A JSON path too long or nested too deeply for Jayway's recursive compiler."""
    if len(path) > allowlist.MAX_JSON_PATH:
        return f"it has {len(path):,} characters; a JSON path may have at most {allowlist.MAX_JSON_PATH:,}"
    depth = deepest = 0
    for c in path:
        if c in "([":
            depth += 1
            deepest = max(deepest, depth)
        elif c in ")]":
            depth -= 1
    if deepest > allowlist.MAX_JSON_PATH_NESTING:
        return f"its brackets and parentheses are nested {deepest} deep; at most {allowlist.MAX_JSON_PATH_NESTING}"
    return None
