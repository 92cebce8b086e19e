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
    try:
        schema = spark.sql(plan.query.spark_sql).schema
    except AnalysisException as e:
        message = str(e).split("\n")[0]
        raise QueryError(f"does not fit the streams' schemas: {message}") from None
    return [{"name": f.name, "type": f.dataType.simpleString()} for f in schema.fields]
