"""The second sandbox check, in the JVM (jvm/plan-guard/.../PlanGuard.java), and what feeds it.

The first check (`dagger_runtime.sandbox.guard`) reads the analyst's SQL as sqlglot parses it. This
one reads the translated query as Spark itself parses and analyses it, so the two do not share a
parser: a spelling one misreads, the other still refuses. Both read the same allow-list
(`dagger_runtime.sandbox.allowlist`).
"""

from __future__ import annotations

from ..errors import QueryError
from . import allowlist


def runtime_udfs() -> list[str]:
    """Names of the UDFs the runtime registers in every session (vectorised and JVM), and of its
    functions built by type, which only the translation writes (dagger_runtime.sql.flink_types)."""
    from ..sql import flink_types, functions
    from ..udfs.java_udfs import JAVA_UDFS

    return sorted({f.name for f in functions.all_functions() if f.vectorised} | set(JAVA_UDFS) | set(flink_types.NAMES))


def _guard(spark):
    return spark._jvm.dev.daggers.runtime.PlanGuard


def java_strings(spark, values) -> object:
    """A Java String[] of values, for the JVM guard's arguments."""
    gateway = spark.sparkContext._gateway
    out = gateway.new_array(gateway.jvm.java.lang.String, len(values))
    for i, value in enumerate(values):
        out[i] = value
    return out


_CONSTANT_ARRAYS: dict[int, tuple] = {}


def _constant_arrays(spark) -> tuple:
    """The allowed functions' and the runtime UDFs' String[] (over four hundred names), made once
    per JVM: element by element they were a Py4J round trip each, twice per check. The guard only
    reads them."""
    gateway = spark.sparkContext._gateway
    known = _CONSTANT_ARRAYS.get(id(gateway))
    if known is None or known[0] is not gateway:
        known = (
            gateway,
            java_strings(spark, sorted(allowlist.ALLOWED_SPARK_FUNCTIONS)),
            java_strings(spark, runtime_udfs()),
        )
        _CONSTANT_ARRAYS.clear()
        _CONSTANT_ARRAYS[id(gateway)] = known
    return known[1], known[2]


def _raise(refusals, translation) -> None:
    if refusals:
        first, rest = refusals[0], refusals[1:]
        more = "".join(f"\n  also refused: {r}" for r in rest)
        raise QueryError(f"refused by the plan check: {first}{more}", sql=translation.source)


def _arguments(spark, translation, tables):
    return (*_constant_arrays(spark), java_strings(spark, sorted(tables)))


def check_parsed(spark, translation, tables) -> None:
    """Spark's parser on the query it is about to run; nothing is analysed or executed."""
    refusals = list(
        _guard(spark).checkParsed(spark._jsparkSession, translation.spark_sql, *_arguments(spark, translation, tables))
    )
    _raise(refusals, translation)


def check_analyzed(spark, dataframe, translation, tables) -> None:
    """The analysed plan, before anything executes."""
    analyzed = dataframe._jdf.queryExecution().analyzed()
    refusals = list(
        _guard(spark).checkAnalyzed(spark._jsparkSession, analyzed, *_arguments(spark, translation, tables))
    )
    _raise(refusals, translation)
