"""UDFs registered in every dagger's Spark session (the macros live in dagger_runtime.sql.catalog)."""

from __future__ import annotations


def register_all(spark) -> None:
    from . import java_udfs, vectorised

    vectorised.register(spark)
    java_udfs.register_java_udfs(spark)
    # Flink's meaning by type (__dagger_divide, __dagger_avg...: dagger_runtime.sql.flink_types)
    spark._jvm.dev.daggers.runtime.FlinkTypes.register(spark._jsparkSession)
