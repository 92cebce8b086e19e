"""The analysts' dialect as sqlglot reads it: Spark's grammar with Calcite's string literals.

Flink (Calcite) escapes a quote inside a string by doubling it ('it''s') and keeps backslashes
literal ('\\s+' is backslash-s); Spark would read 'it''s' as two adjacent strings.
"""
from sqlglot.dialects.spark import Spark


class FlinkSQL(Spark):
    class Tokenizer(Spark.Tokenizer):
        STRING_ESCAPES = ["'"]
