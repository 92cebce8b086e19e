"""Spark's analysis of a planned query against the streams' schemas: names and types, no data."""
from __future__ import annotations

from .errors import QueryError
from .plan import JobPlan


def analyze(plan: JobPlan, spark=None) -> list[dict]:
    """Resolve the translated query over empty tables of the streams' schemas; return its columns."""
    from pyspark.errors import AnalysisException

    from .session import build_session
    from .streams import decode
    from .udfs import register_all

    spark = spark or build_session(f"validate-{plan.job.name}", parallelism=1)
    register_all(spark)
    for stream in plan.streams:
        raw = spark.createDataFrame([], "value binary")
        table, _, _ = decode(spark, raw, stream, plan.descriptor_set)
        table.createOrReplaceTempView(stream.table)
    _check_literal_arguments(plan, spark)
    try:
        schema = spark.sql(plan.query.spark_sql).schema
    except AnalysisException as e:
        message = str(e).split("\n")[0]
        raise QueryError(f"does not fit the streams' schemas: {message}") from None
    return [{"name": f.name, "type": f.dataType.simpleString()} for f in schema.fields]


def _check_literal_arguments(plan: JobPlan, spark) -> None:
    """JSON paths and DART regexes written as literals are checked by the JVM code that will use
    them, so a typo is refused before the job runs rather than giving NULLs for ever."""
    from sqlglot import exp

    from .sql.positions import locate
    from .sql.translate import parse
    from .udfs.java_udfs import check_dart_regex, check_json_path

    sql = plan.query.source
    for node in parse(sql).find_all(exp.Anonymous):
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
