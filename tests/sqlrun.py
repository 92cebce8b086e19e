"""Run a dagger query (translated) over a one-table view `t`: how the UDF tests call functions."""
from __future__ import annotations

from pyspark.sql import DataFrame

from dagger_runtime.sql import translate


def run(spark, select_sql: str, rows=None, schema=None) -> list:
    """Run a dagger query over a one-table view `t` built from rows (or a DataFrame)."""
    if isinstance(rows, DataFrame):
        rows.createOrReplaceTempView("t")
    elif rows is not None:
        spark.createDataFrame(rows, schema).createOrReplaceTempView("t")
    else:
        spark.sql("SELECT 1 AS one").createOrReplaceTempView("t")
    return spark.sql(translate(select_sql, ["t"]).spark_sql).collect()
