"""The analysts' dialect as sqlglot reads it: Spark's grammar with Calcite's string literals.

Flink (Calcite) escapes a quote inside a string by doubling it ('it''s') and keeps backslashes
literal ('\\s+' is backslash-s); Spark would read 'it''s' as two adjacent strings.

`TABLE name` is read as a table reference where a function's argument starts (Flink's window
table-valued functions: TABLE(TUMBLE(TABLE bookings, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE))).

SESSION is a plain word, as in Flink (`GROUP BY SESSION(rowtime, INTERVAL '10' MINUTE)`), not
the keyword of Spark's `SET SESSION`. Flink built-ins whose meaning differs from the Spark
function sqlglot would read them as (TIMESTAMPADD, TRUNCATE, LOG, LOCATE...) are read as plain
calls under the name written, so that dagger_runtime.sql.flink translates them with Flink's
meaning instead of sqlglot's guess.
"""

from sqlglot import exp, parser
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

from .flink_json import FUNCTION_PARSERS as _JSON_PARSERS

# meta flag of a table read from `TABLE name` in an argument (window_tvf consumes or refuses each)
TABLE_ARGUMENT = "table_argument"

# Flink built-ins read as calls by name (translated by dagger_runtime.sql.flink)
FLINK_CALLS = frozenset(
    """
    TIMESTAMPADD TIMESTAMPDIFF TRUNCATE TO_TIMESTAMP TO_TIMESTAMP_LTZ TO_DATE DATE_FORMAT
    FROM_UNIXTIME UNIX_TIMESTAMP LOG LN LOG10 LOG2 FIRST_VALUE LAST_VALUE LOCATE LPAD RPAD
    LTRIM RTRIM WEEK SHA2 REGEXP_EXTRACT FROM_BASE64 STR_TO_MAP ARRAY_REVERSE ARRAY_SLICE CARDINALITY
""".split()
)


def _call(name: str):
    return lambda args: exp.Anonymous(this=name, expressions=args)


class FlinkSQL(Spark):
    class Tokenizer(Spark.Tokenizer):
        STRING_ESCAPES = ["'"]
        KEYWORDS = {
            k: v for k, v in Spark.Tokenizer.KEYWORDS.items() if not (k == "SESSION" and v == TokenType.SESSION)
        }

    class Parser(Spark.Parser):
        FUNCTIONS = {**Spark.Parser.FUNCTIONS, **{name: _call(name) for name in FLINK_CALLS}}
        # Flink's JSON functions with their clauses (RETURNING, ON EMPTY, WRAPPER...): flink_json
        FUNCTION_PARSERS = {**Spark.Parser.FUNCTION_PARSERS, **_JSON_PARSERS}

        def _parse_types(self, check_func=False, schema=False, allow_identifiers=True, **kwargs):
            # Hive's parser reads CHAR(n)/VARCHAR(n) as STRING (as Spark's CAST does); Flink cuts
            # (and pads) to n, so a cast's own type keeps its length for
            # dagger_runtime.sql.flink_types; a CHAR/VARCHAR nested in another type is a STRING
            this = parser.Parser._parse_types(
                self, check_func=check_func, schema=schema, allow_identifiers=allow_identifiers, **kwargs
            )
            if this is None or schema:
                return this
            for node in list(this.walk()):
                if node is not this and isinstance(node, exp.DataType) and node.is_type("char", "varchar"):
                    node.set("this", exp.DataType.Type.TEXT)
                    node.set("expressions", None)
            return this

        def _parse_lambda(self, alias: bool = False):
            # a window table-valued function's input, TABLE(TUMBLE(TABLE bookings, ...)): a table
            # reference (dagger_runtime.sql.window_tvf rewrites the call or refuses it)
            if (
                self._curr
                and self._curr.token_type == TokenType.TABLE
                and self._next
                and self._next.token_type != TokenType.L_PAREN
            ):
                self._advance()
                table = self._parse_table_parts()
                table.meta[TABLE_ARGUMENT] = True
                return table
            return super()._parse_lambda(alias)
