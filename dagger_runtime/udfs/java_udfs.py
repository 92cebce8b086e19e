"""raystack/dagger's S2Id, JSON and DART UDFs, as Spark Java UDFs (jvm/sql-functions/.../runtime/udf).

Registered names and SQL signatures (docs/reference/udf-contracts.md §1, §4, §6):

``S2Id(lat DOUBLE, lng DOUBLE, level INT) -> STRING``
    The level's S2 cell id as Java's ``Long.toString``, over Google's Java S2 library (dagger's
    own code). Any numbers are taken; NULL for a NULL or non-numeric argument, NaN, a latitude
    outside [-90, 90], an infinite longitude or a level that is not a whole number in 0..30.

``JsonQuery(json STRING, path STRING) -> STRING``
    The value at the Jayway JsonPath as JSON text: a string comes back quoted (``"v2"``), an
    object/array as compact JSON; a JSON null or a missing leaf gives NULL.
``JsonUpdate(json STRING, path STRING, newValue ANY) -> STRING``
    Sets the value at the path (or adds a missing leaf key). newValue may be a STRING, a number,
    a boolean, NULL, or a MAP/STRUCT/ARRAY, which becomes a nested JSON object/array: Java UDFs
    registered without input types take any argument type, so one name covers dagger's
    ``Object newValue`` (no separate ``JsonUpdateMap`` is needed).
``JsonDelete(json STRING, path STRING) -> STRING``
    Removes what the path selects.
``__DartGet4(collection STRING, key STRING, refreshHours INT, defaultValue STRING) -> STRING``
    ``<base>/dart-get/<collection>`` is a JSON object of strings. A missing key gives
    defaultValue; the SQL translator maps dagger's ``DartGet(c, k, h)`` to ``(c, k, h, NULL)``
    (NULL for a missing key, where dagger fails the job).
``__DartContains4(list STRING, field STRING, regex STRING, refreshHours INT) -> BOOLEAN``
    ``<base>/dart-contains/<list>`` is ``{"data": [...]}``. A NULL regex means plain set
    membership; otherwise some element ``s`` must satisfy
    ``Pattern.matches(String.format(regex, s), field)``. The translator maps
    ``DartContains(l, f)`` to ``(l, f, NULL, 1)``, ``(l, f, hours)`` to ``(l, f, NULL, hours)``
    and ``(l, f, regex)`` to ``(l, f, regex, 1)``.

The JSON UDFs return NULL for a row they cannot handle (bad JSON, a path that walks through a
non-container) where dagger fails the task; literal paths should be validated up front with
:func:`check_json_path`.

The DART base URL is the Spark conf ``spark.dagger.dart.base`` (:data:`DART_BASE_CONF`), e.g.
``gs://bucket`` or ``file:///dir``. It can be set when the session is built (``--conf``, builder,
``build_session(extra_conf=...)``) or at run time with ``spark.conf.set``; Spark propagates it to
the executors with every query. Files are read through Hadoop's FileSystem API, cached per JVM
and reloaded after refreshHours (``<= 0``: on every call). See ``DartStore.java``.
"""

from __future__ import annotations

from pyspark.sql.types import BooleanType, StringType

_PACKAGE = "dev.daggers.runtime.udf"

DART_BASE_CONF = "spark.dagger.dart.base"

# registered name -> (Java class, return type)
JAVA_UDFS = {
    "S2Id": (f"{_PACKAGE}.S2Id", StringType()),
    "JsonQuery": (f"{_PACKAGE}.JsonQuery", StringType()),
    "JsonUpdate": (f"{_PACKAGE}.JsonUpdate", StringType()),
    "JsonDelete": (f"{_PACKAGE}.JsonDelete", StringType()),
    "__DartGet4": (f"{_PACKAGE}.DartGet", StringType()),
    "__DartContains4": (f"{_PACKAGE}.DartContains", BooleanType()),
}


def register_java_udfs(spark) -> None:
    """Registers the JSON and DART Java UDFs in ``spark`` under the names in :data:`JAVA_UDFS`."""
    for name, (java_class, return_type) in JAVA_UDFS.items():
        spark.udf.registerJavaFunction(name, java_class, return_type)


def _jvm(spark):
    return spark.sparkContext._jvm


def check_json_path(spark, path: str) -> str | None:
    """None if ``path`` is a valid Jayway JsonPath, else the parser's message.

    For literal paths in JsonQuery/JsonUpdate/JsonDelete calls: at run time a bad path only
    turns every row into NULL, so the validator reports it instead.
    """
    return _jvm(spark).dev.daggers.runtime.udf.JsonPaths.check(path)


def check_dart_regex(spark, regex: str) -> str | None:
    """None if ``regex`` works as DartContains' regex (a ``%s`` format that compiles), else why not."""
    return _jvm(spark).dev.daggers.runtime.udf.DartStore.checkRegex(regex)


def clear_dart_cache(spark) -> None:
    """Forgets every cached DART collection in the driver's JVM (local mode: the only JVM)."""
    _jvm(spark).dev.daggers.runtime.udf.DartStore.clearCache()
