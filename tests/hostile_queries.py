"""Queries an attacker would try as a dagger's SQL, each with the construct its refusal must name.

`{marker}` stands for a file the query's shell command would create: the tests check it never
appears. Spread over spellings on purpose: quoted and mixed-case names, subqueries, CTEs, joins,
unions, lateral views, comments, statements, session variables, hints, script transforms,
functions that reveal the machine or the cluster. Every query reads the job's one stream,
`data_stream` (gojek.esb.booking.BookingLogMessage).
"""

from __future__ import annotations

_SYSTEM = "'java.lang.System', 'getenv', 'HOME'"

HOSTILE: list[tuple[str, str]] = [
    # script transformation: runs a shell command on the cluster
    ("SELECT TRANSFORM(city_id) USING 'touch {marker}' AS (a) FROM data_stream", "script transformation"),
    ("select transform(city_id) using 'touch {marker}' as (a) from data_stream", "script transformation"),
    (
        "SELECT * FROM (SELECT TRANSFORM(city_id) USING 'touch {marker}' AS (a) FROM data_stream) t",
        "script transformation",
    ),
    (
        "WITH x AS (SELECT TRANSFORM(city_id) USING 'touch {marker}' AS (a) FROM data_stream) SELECT * FROM x",
        "script transformation",
    ),
    (
        "SELECT city_id AS a FROM data_stream UNION ALL "
        "SELECT TRANSFORM(city_id) USING 'touch {marker}' AS (a) FROM data_stream",
        "script transformation",
    ),
    (
        "SELECT TRANSFORM(city_id) /* a comment */ USING 'touch {marker}' AS (a) FROM data_stream",
        "script transformation",
    ),
    ("FROM data_stream MAP city_id USING 'touch {marker}' AS c", "script transformation"),
    ("FROM data_stream REDUCE city_id USING 'touch {marker}' AS c", "script transformation"),
    ("FROM data_stream SELECT TRANSFORM(city_id) USING 'touch {marker}'", "script transformation"),
    (
        "SELECT TRANSFORM(city_id) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' USING 'touch {marker}' "
        "AS (a) FROM data_stream",
        "script transformation",
    ),
    # calls into the JVM, in every clause and spelling
    (f"SELECT reflect({_SYSTEM}) AS home FROM data_stream", "reflect"),
    (f"SELECT `reflect`({_SYSTEM}) AS home FROM data_stream", "reflect"),
    (f"SELECT ReFlEcT({_SYSTEM}) AS home FROM data_stream", "ReFlEcT"),
    (f"SELECT reflect/* hidden */({_SYSTEM}) AS home FROM data_stream", "reflect"),
    ("SELECT city_id FROM data_stream WHERE `java_method`('java.lang.System', 'exit', 1) = 1", "java_method"),
    ("SELECT JAVA_METHOD('java.lang.Runtime', 'getRuntime') AS r FROM data_stream", "JAVA_METHOD"),
    (f"SELECT try_reflect({_SYSTEM}) AS home FROM data_stream", "try_reflect"),
    (f"SELECT city_id FROM data_stream WHERE order_number IN (SELECT reflect({_SYSTEM}) FROM data_stream)", "reflect"),
    (f"WITH r AS (SELECT reflect({_SYSTEM}) AS home FROM data_stream) SELECT home FROM r", "reflect"),
    (f"SELECT city_id, count(1) AS n FROM data_stream GROUP BY city_id HAVING max(reflect({_SYSTEM})) > ''", "reflect"),
    (f"SELECT count(1) AS n FROM data_stream GROUP BY reflect({_SYSTEM})", "reflect"),
    (f"SELECT city_id FROM data_stream ORDER BY reflect({_SYSTEM})", "reflect"),
    (f"SELECT a.city_id FROM data_stream a JOIN data_stream b ON reflect({_SYSTEM}) = b.order_number", "reflect"),
    (f"SELECT home FROM data_stream LATERAL VIEW explode(array(reflect({_SYSTEM}))) t AS home", "reflect"),
    (f"SELECT x FROM data_stream LATERAL VIEW Java_Method({_SYSTEM}) t AS x", "Java_Method"),
    ("SELECT x FROM data_stream LATERAL VIEW range(3) t AS x", "range"),
    (f"SELECT city_id FROM data_stream WINDOW w AS (PARTITION BY reflect({_SYSTEM}))", "reflect"),
    (f"SELECT CASE WHEN city_id = 1 THEN reflect({_SYSTEM}) END AS home FROM data_stream", "reflect"),
    (f"SELECT transform(array(1), x -> reflect({_SYSTEM})) AS home FROM data_stream", "reflect"),
    (f"SELECT system.builtin.reflect({_SYSTEM}) AS home FROM data_stream", "qualified function"),
    (f"SELECT builtin.java_method({_SYSTEM}) AS home FROM data_stream", "qualified function"),
    (f"SELECT `system`.`builtin`.`reflect`({_SYSTEM}) AS home FROM data_stream", "qualified function"),
    (f"SELECT IDENTIFIER('reflect')({_SYSTEM}) AS home FROM data_stream", "IDENTIFIER"),
    (f"SELECT city_id FROM data_stream UNION SELECT reflect({_SYSTEM}) FROM data_stream", "reflect"),
    # what the machine or the cluster is
    ("SELECT version() AS v FROM data_stream", "version"),
    ("SELECT current_user() AS u FROM data_stream", "current_user"),
    ("SELECT user AS u FROM data_stream", "user"),
    ("SELECT session_user() AS u FROM data_stream", "session_user"),
    ("SELECT current_database() AS d FROM data_stream", "current_database"),
    ("SELECT current_catalog() AS c FROM data_stream", "current_catalog"),
    ("SELECT input_file_name() AS f FROM data_stream", "input_file_name"),
    ("SELECT spark_partition_id() AS p FROM data_stream", "spark_partition_id"),
    ("SELECT '${{env:HOME}}' AS home FROM data_stream", "${...}"),
    ("SELECT city_id AS `${{system:user.home}}` FROM data_stream", "${...}"),
    ("SELECT now() AS t FROM data_stream", "now"),
    ("SELECT uuid() AS u FROM data_stream", "uuid"),
    ("SELECT raise_error('stop') AS e FROM data_stream", "raise_error"),
    ("SELECT xpath_string('<a>x</a>', 'a') AS x FROM data_stream", "xpath_string"),
    # statements other than one query
    (f'EXECUTE IMMEDIATE "SELECT reflect({_SYSTEM})"', "EXECUTE IMMEDIATE"),
    ("SET spark.sql.variable.substitute=true", "SET"),
    ("SET VAR x = 1", "SET"),
    ("DECLARE VARIABLE x INT DEFAULT 1", "DECLARE"),
    ("CREATE TEMPORARY FUNCTION f AS 'java.lang.String'", "CREATE"),
    ("ADD JAR '/tmp/evil.jar'", "ADD JAR"),
    ("CREATE TEMPORARY VIEW v AS SELECT * FROM data_stream", "CREATE"),
    ("INSERT OVERWRITE DIRECTORY '{marker}' SELECT * FROM data_stream", "INSERT OVERWRITE"),
    ("DROP TABLE data_stream", "DROP"),
    ("CACHE TABLE data_stream", "CACHE TABLE"),
    (
        "SELECT city_id FROM data_stream; SELECT reflect('java.lang.System', 'exit', 1) FROM data_stream",
        "exactly one SELECT",
    ),
    ("LOAD DATA LOCAL INPATH '/etc/passwd' INTO TABLE data_stream", "LOAD DATA"),
    ("BEGIN SELECT 1; END", "BEGIN"),
    ("SHOW TABLES", "SHOW"),
    ("EXPLAIN SELECT city_id FROM data_stream", "EXPLAIN"),
    # reading anything but the job's streams
    ("SELECT * FROM parquet.`/etc`", "not other databases or files"),
    ("SELECT * FROM csv.`/etc/passwd`", "not other databases or files"),
    ("SELECT * FROM default.data_stream", "not other databases or files"),
    ("SELECT * FROM spark_catalog.default.secrets", "not other databases or files"),
    ("SELECT * FROM payments_stream", "unknown table `payments_stream`"),
    ("SELECT * FROM range(10)", "range"),
    ("SELECT * FROM IDENTIFIER('data_stream')", "IDENTIFIER"),
    ("SELECT * FROM explode(array(1, 2))", "table function"),
    ("SELECT * FROM VALUES (1) AS t(a)", "VALUES"),
    ("SELECT * FROM data_stream TABLESAMPLE (1 ROWS)", "TABLESAMPLE"),
    (f"SELECT * FROM data_stream, LATERAL (SELECT reflect({_SYSTEM}))", "LATERAL"),
    ("WITH RECURSIVE r AS (SELECT 1 AS n FROM data_stream) SELECT n FROM r", "RECURSIVE"),
    # hints, parameters, session variables, partitioning
    ("SELECT /*+ REPARTITION(100000) */ city_id FROM data_stream", "hints"),
    ("SELECT /*+ BROADCAST(data_stream) */ city_id FROM data_stream", "hints"),
    ("SELECT @@spark.sql.variable.substitute AS v FROM data_stream", "parameters"),
    ("SELECT :param AS p FROM data_stream", "parameters"),
    ("SELECT city_id FROM data_stream DISTRIBUTE BY city_id", "DISTRIBUTE BY"),
    ("SELECT city_id FROM data_stream CLUSTER BY city_id", "CLUSTER BY"),
]

# Queries a second check must refuse on its own: Spark parses them, and they name a construct the
# plan check knows (the first check is bypassed for these).
PLAN_CHECK_ONLY: list[tuple[str, str]] = [
    ("SELECT TRANSFORM(city_id) USING 'touch {marker}' AS (a) FROM data_stream", "script transformation"),
    ("FROM data_stream SELECT TRANSFORM(city_id) USING 'touch {marker}'", "script transformation"),
    (f"SELECT `reflect`({_SYSTEM}) AS home FROM data_stream", "reflect"),
    (f"SELECT city_id FROM data_stream WHERE `java_method`({_SYSTEM}) = ''", "java_method"),
    (f"SELECT system.builtin.reflect({_SYSTEM}) AS home FROM data_stream", "plain name"),
    (f"SELECT IDENTIFIER('reflect')({_SYSTEM}) AS home FROM data_stream", "not allowed"),
    (f"WITH r AS (SELECT reflect({_SYSTEM}) AS home FROM data_stream) SELECT home FROM r", "reflect"),
    (f"SELECT city_id FROM data_stream WHERE order_number IN (SELECT reflect({_SYSTEM}) FROM data_stream)", "reflect"),
    (f"SELECT home FROM data_stream LATERAL VIEW explode(array(reflect({_SYSTEM}))) t AS home", "reflect"),
    ("SELECT version() AS v FROM data_stream", "version"),
    ("SELECT input_file_name() AS f FROM data_stream", "input_file_name"),
    (f"SELECT city_id FROM data_stream WINDOW w AS (PARTITION BY reflect({_SYSTEM}))", "reflect"),
    ("SELECT x FROM data_stream LATERAL VIEW range(3) t AS x", "generator range()"),
    (f"SELECT x FROM data_stream LATERAL VIEW Java_Method({_SYSTEM}) t AS x", "generator java_method()"),
    ("SELECT * FROM parquet.`/etc`", "not one of the job's streams"),
    ("SELECT * FROM range(10)", "reads something other than the job's streams"),
    ("SELECT * FROM VALUES (1) AS t(a)", "reads something other than the job's streams"),
    ("SELECT * FROM payments_stream", "not one of the job's streams"),
    ("SELECT /*+ REPARTITION(100000) */ city_id FROM data_stream", "hints"),
    ("SET spark.sql.variable.substitute=true", "SetCommand"),
    ("CREATE TEMPORARY VIEW v AS SELECT * FROM data_stream", "CreateViewCommand"),
    ("CACHE TABLE data_stream", "CacheTable"),
    (f'EXECUTE IMMEDIATE "SELECT reflect({_SYSTEM})"', "ExecuteImmediate"),
]

# Refused only after analysis: the parsed plan looks innocent, the analysed one is not.
ANALYSIS_ONLY: list[tuple[str, str]] = [
    ("SELECT user AS u FROM data_stream", "current_user"),
    ("SELECT current_date AS d FROM data_stream", "current_date"),
    ("SELECT unix_timestamp() AS t FROM data_stream", "current_timestamp"),
]
