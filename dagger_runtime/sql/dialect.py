"""The analysts' dialect as sqlglot reads it: Spark's grammar with Calcite's string literals.

Flink (Calcite) escapes a quote inside a string by doubling it ('it''s') and keeps backslashes
literal ('\\s+' is backslash-s); Spark would read 'it''s' as two adjacent strings.

SESSION is a plain word, as in Flink (`GROUP BY SESSION(rowtime, INTERVAL '10' MINUTE)`), not
the keyword of Spark's `SET SESSION`. Flink built-ins whose meaning differs from the Spark
function sqlglot would read them as (TIMESTAMPADD, TRUNCATE, LOG, LOCATE...) are read as plain
calls under the name written, so that dagger_runtime.sql.flink translates them with Flink's
meaning instead of sqlglot's guess.
"""
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

# Flink built-ins read as calls by name (translated by dagger_runtime.sql.flink)
FLINK_CALLS = frozenset("""
    TIMESTAMPADD TIMESTAMPDIFF TRUNCATE TO_TIMESTAMP TO_TIMESTAMP_LTZ TO_DATE DATE_FORMAT
    FROM_UNIXTIME UNIX_TIMESTAMP LOG LN LOG10 LOG2 FIRST_VALUE LAST_VALUE LOCATE LPAD RPAD
    LTRIM RTRIM WEEK SHA2 REGEXP_EXTRACT FROM_BASE64 STR_TO_MAP ARRAY_REVERSE ARRAY_SLICE CARDINALITY
""".split())


def _call(name: str):
    return lambda args: exp.Anonymous(this=name, expressions=args)


class FlinkSQL(Spark):
    class Tokenizer(Spark.Tokenizer):
        STRING_ESCAPES = ["'"]
        KEYWORDS = {k: v for k, v in Spark.Tokenizer.KEYWORDS.items()
                    if not (k == "SESSION" and v == TokenType.SESSION)}

    class Parser(Spark.Parser):
        FUNCTIONS = {**Spark.Parser.FUNCTIONS, **{name: _call(name) for name in FLINK_CALLS}}
