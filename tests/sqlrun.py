"""Run a dagger query (translated) over a one-table view `t`: how the UDF tests call functions.

Every query goes through both sandbox checks, as a job's query does, so the suite also proves
that each UDF and query form it uses passes them."""

from __future__ import annotations

from pyspark.sql import DataFrame

from dagger_runtime import sandbox
from dagger_runtime.sql import translate


def run(spark, select_sql: str, rows=None, schema=None) -> list:
    """Run a dagger query over a one-table view `t` built from rows (or a DataFrame)."""
    if isinstance(rows, DataFrame):
        rows.createOrReplaceTempView("t")
    elif rows is not None:
        spark.createDataFrame(rows, schema).createOrReplaceTempView("t")
    else:
        spark.sql("SELECT 1 AS one").createOrReplaceTempView("t")
    query = translate(select_sql, ["t"])
    sandbox.check_parsed(spark, query, ["t"])
    dataframe = spark.sql(query.spark_sql)
    sandbox.check_analyzed(spark, dataframe, query, ["t"])
    return dataframe.collect()
