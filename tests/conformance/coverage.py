"""Every function Flink 1.20.3 lists (SHOW FUNCTIONS, in flink_functions.txt) and where the corpus covers it.

A name is covered when a corpus query calls it (as a word, any case). The others are here, each with
why no case calls it, so that a function added to the list is either given a case or a reason.
SHOW FUNCTIONS lists the core module's definitions, not Calcite's standard operators (CHAR_LENGTH,
DATE_FORMAT, EXTRACT...), which the corpus covers from Flink's built-in functions reference.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conformance.corpus import CASES

LISTED = Path(__file__).with_name("flink_functions.txt")

# Checked on Flink 1.20.3: `SELECT name(...)` fails with "No match found for function signature":
# these are the Table API's names (upperCase, isNull...), which SQL writes otherwise (UPPER, IS NULL),
# or the planner's internal helpers.
_TABLE_API = (
    "asc at charLength convertTz currentDatabase currentDate currentRowTimestamp currentTime "
    "currentTimestamp dateFormat divide equals flatten fromBase64 fromUnixtime get greaterThan "
    "greaterThanOrEqual ifThenElse isFalse isNotFalse isNotNull isNotTrue isNull isTrue lessThan "
    "lessThanOrEqual lowerCase minus minusPrefix notBetween notEquals parseUrl plus randInteger rangeTo "
    "regexpExtract regexpReplace reinterpretCast splitIndex start stddevPop stddevSamp strToMap "
    "streamRecordTimestamp sum0 temporalOverlaps times toBase64 toDate toTimestamp toTimestampLtz "
    "unixTimestamp upperCase varPop varSamp withColumns withoutColumns"
).split()
NOT_CALLED: dict[str, str] = {
    **dict.fromkeys(_TABLE_API, "a Table API name; SQL spells it otherwise and the corpus calls that spelling"),
    **dict.fromkeys(
        ("AGG_DECIMAL_MINUS", "AGG_DECIMAL_PLUS", "HIVE_AGG_DECIMAL_PLUS"),
        "the planner's internal aggregate helper, not for queries",
    ),
    "IS_JSON": "the internal name of the `x IS JSON` predicate, which the corpus writes (case is_json)",
    **dict.fromkeys(
        (
            "JSON_ARRAYAGG_ABSENT_ON_NULL",
            "JSON_ARRAYAGG_NULL_ON_NULL",
            "JSON_OBJECTAGG_ABSENT_ON_NULL",
            "JSON_OBJECTAGG_NULL_ON_NULL",
        ),
        "the internal name of JSON_ARRAYAGG/JSON_OBJECTAGG with their ON NULL clause, which the corpus writes",
    ),
    "SOURCE_WATERMARK": "used only in a table's DDL (WATERMARK FOR ... AS SOURCE_WATERMARK()); a dagger's watermark "
    "is its job's setting",
}


def listed() -> list[str]:
    return [line.strip() for line in LISTED.read_text().splitlines() if line.strip() and not line.startswith("#")]


def called(name: str) -> bool:
    word = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", re.IGNORECASE)
    return any(word.search(c.query) for c in CASES)


def uncovered() -> list[str]:
    """Listed functions neither called by a case nor explained in NOT_CALLED."""
    return [n for n in listed() if not called(n) and n not in NOT_CALLED]
