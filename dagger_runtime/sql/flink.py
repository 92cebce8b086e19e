"""Flink 1.20's built-in functions with Flink's meaning, in Spark SQL.

Analysts write Flink SQL; Spark has functions of the same names that mean something else
(Spark's LOCATE returns 0 for a start position below 1, its REGEXP_EXTRACT takes group 1 by
default and returns '' when nothing matches, its LN returns NULL for 0...). Every Flink built-in
a dagger query can use is translated here so that it gives Flink's result, or is refused with
the construct named and the alternative; docs/reference/flink-functions.md lists the few
differences that remain and why.

Two passes, both on sqlglot trees:
- `normalise` runs before the sandbox's first check (dagger_runtime.sandbox.guard), on the nodes
  sqlglot parses into typed expressions (FLOOR(x TO HOUR), SIMILAR TO, PERCENTILE_CONT ... WITHIN
  GROUP, EXTRACT, SUBSTRING, INITCAP, ARRAY_AGG): the check then sees the Spark
  functions that will run.
- calls by name (SPLIT_INDEX, TIMESTAMPADD, LOG...; dialect.FLINK_CALLS makes sqlglot keep the
  name) are registered here as macros of dagger_runtime.sql.functions, rewritten after the check
  like raystack/dagger's own functions.
Every translation is checked once more in the JVM on Spark's plan (dagger_runtime.sandbox).
"""

from __future__ import annotations

import re
import zoneinfo

from sqlglot import exp

from ..errors import QueryError
from . import flink_json
from .functions import Budget, DaggerFunction, refuse, refuse_reserved_names, register, string_literal, template

_MS = {
    "MILLISECOND": 1,
    "SECOND": 1_000,
    "MINUTE": 60_000,
    "HOUR": 3_600_000,
    "DAY": 86_400_000,
    "WEEK": 7 * 86_400_000,
}
_MONTHS = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}
_TRUNC_UNITS = ("MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR")


_UNITS = ("MICROSECOND", "MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR")


def _unit(node: exp.Expression) -> str:
    """A time unit written as a bare word (MINUTE, MINUTES) or a string literal ('MINUTE')."""
    if isinstance(node, (exp.Var, exp.Column, exp.Identifier)) or (isinstance(node, exp.Literal) and node.is_string):
        name = node.name.upper()
        return name[:-1] if name.endswith("S") and name[:-1] in _UNITS else name
    return ""


def _int_literal(node: exp.Expression) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(node.this)
        except ValueError:
            return None
    if isinstance(node, exp.Neg):
        inner = _int_literal(node.this)
        return -inner if inner is not None else None
    if isinstance(node, exp.Paren):
        return _int_literal(node.this)
    return None


def _call(name: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=[a.copy() for a in args])


# --- time: FLOOR/CEIL(x TO unit), TIMESTAMPADD, TIMESTAMPDIFF -----------------------------------------

# Flink's weeks start on Sunday; Spark's date_trunc('WEEK') on Monday
_FLOOR = {u: template(f"date_trunc('{u}', {{0}})") for u in _TRUNC_UNITS if u != "WEEK"}
_FLOOR["WEEK"] = template("date_trunc('WEEK', {0} + INTERVAL 1 DAY) - INTERVAL 1 DAY")
_STEP = {
    "MILLISECOND": "INTERVAL 1 MILLISECOND",
    "SECOND": "INTERVAL 1 SECOND",
    "MINUTE": "INTERVAL 1 MINUTE",
    "HOUR": "INTERVAL 1 HOUR",
    "DAY": "INTERVAL 1 DAY",
    "WEEK": "INTERVAL 7 DAY",
    "MONTH": "INTERVAL 1 MONTH",
    "QUARTER": "INTERVAL 3 MONTH",
    "YEAR": "INTERVAL 1 YEAR",
}


def _time_floor_ceil(sql: str, node: exp.Floor | exp.Ceil) -> exp.Expression:
    unit = _unit(node.args["to"])
    name = "FLOOR" if isinstance(node, exp.Floor) else "CEIL"
    if unit not in _TRUNC_UNITS:
        raise refuse(
            sql, node, f"{name}(... TO {node.args['to'].sql()}): the unit must be one of {', '.join(_TRUNC_UNITS)}"
        )
    floor = _FLOOR[unit]([node.this])
    if isinstance(node, exp.Floor):
        return exp.Paren(this=floor)
    # CEIL: the value itself when it is on a boundary, else the next boundary
    return template(f"(CASE WHEN {{0}} = {{1}} THEN {{1}} ELSE {{0}} + {_STEP[unit]} END)")([floor, node.this])


def _timestampadd(args: list[exp.Expression]) -> exp.Expression:
    unit, count, time = args
    name = _unit(unit)
    if name in _MONTHS:
        step = f"make_ym_interval(0, {_MONTHS[name]})"
    elif name in _MS or name == "MICROSECOND":
        step = {
            "MICROSECOND": "INTERVAL '0.000001' SECOND",
            "MILLISECOND": "INTERVAL '0.001' SECOND",
            "SECOND": "INTERVAL 1 SECOND",
            "MINUTE": "INTERVAL 1 MINUTE",
            "HOUR": "INTERVAL 1 HOUR",
            "DAY": "INTERVAL 1 DAY",
            "WEEK": "INTERVAL 7 DAY",
        }[name]
    else:
        raise QueryError(
            f"refused: TIMESTAMPADD({unit.sql()}, ...): the unit must be one of MICROSECOND, "
            "MILLISECOND, SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, QUARTER, YEAR"
        )
    return template(f"({{1}} + {{0}} * {step})")([count, time])


# Calcite's month difference, which Flink uses: the largest m with add_months(d1, m) <= d0 (d0 >= d1),
# negated when d0 < d1; then one less when add_months(d1, m) lands on d0's day and d0's time of day
# is earlier than d1's (so 2020-02-01 10:00 -> 2020-01-01 09:00 is -2 months, as in Flink)
_MONTHS_INT = (
    "((year(@A@) * 12 + month(@A@)) - (year(@B@) * 12 + month(@B@))"
    " - CASE WHEN add_months(@B@, (year(@A@) * 12 + month(@A@)) - (year(@B@) * 12 + month(@B@))) > @A@"
    " THEN 1 ELSE 0 END)"
)
_D0, _D1 = "to_date({0})", "to_date({1})"
_MONTHS_SIGNED = (
    f"(CASE WHEN {_D0} >= {_D1} THEN {_MONTHS_INT.replace('@A@', _D0).replace('@B@', _D1)}"
    f" ELSE -{_MONTHS_INT.replace('@A@', _D1).replace('@B@', _D0)} END)"
)
_TIME_OF_DAY = "(unix_millis(CAST(@T@ AS TIMESTAMP)) - unix_millis(CAST(to_date(@T@) AS TIMESTAMP)))"
_MONTH_DIFF_OF = (
    f"({_MONTHS_SIGNED} - CASE WHEN add_months({_D1}, {_MONTHS_SIGNED}) = {_D0}"
    f" AND {_TIME_OF_DAY.replace('@T@', '{0}')} < {_TIME_OF_DAY.replace('@T@', '{1}')} THEN 1 ELSE 0 END)"
)
# the formula reads each time point 22 times: they are bound once, as the fields of a lambda's
# argument, so that nested calls (TIMESTAMPDIFF(MONTH, TIMESTAMPADD(...), ...)) do not multiply
_MONTH_DIFF = template(
    "element_at(transform(array(named_struct('t0', {0}, 't1', {1})), p -> "
    + _MONTH_DIFF_OF.replace("{0}", "p.t0").replace("{1}", "p.t1")
    + "), 1)"
)


def _timestampdiff(args: list[exp.Expression]) -> exp.Expression:
    unit, first, second = args
    name = _unit(unit)
    if name == "MICROSECOND":
        return template("unix_micros(CAST({1} AS TIMESTAMP)) - unix_micros(CAST({0} AS TIMESTAMP))")([first, second])
    if name in _MS:
        # milliseconds between the two, divided and truncated toward zero (Java's long division)
        return template(
            f"CAST((unix_millis(CAST({{1}} AS TIMESTAMP)) - unix_millis(CAST({{0}} AS TIMESTAMP)))"
            f" DIV {_MS[name]} AS INT)"
        )([first, second])
    if name in _MONTHS:
        months = _MONTH_DIFF([second, first])
        return months if name == "MONTH" else template(f"CAST({{0}} DIV {_MONTHS[name]} AS INT)")([months])
    raise QueryError(
        f"refused: TIMESTAMPDIFF({unit.sql()}, ...): the unit must be one of MICROSECOND, MILLISECOND, "
        "SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, QUARTER, YEAR"
    )


def _to_timestamp_ltz(args: list[exp.Expression]) -> exp.Expression:
    if len(args) == 1 or string_literal(args[1]) is not None:
        # Spark's TO_TIMESTAMP_LTZ(string[, pattern]); Flink 1.20 has only (epoch, precision)
        if len(args) == 2:
            args = [args[0], spark_pattern("", args[1], "TO_TIMESTAMP_LTZ")]
        return _call("to_timestamp_ltz", *args)
    value, precision = args
    p = _int_literal(precision)
    if p == 3:
        return template("timestamp_millis(CAST({0} AS BIGINT))")([value])
    if p == 0:
        return template("timestamp_millis(CAST({0} * 1000 AS BIGINT))")([value])
    raise QueryError(
        "refused: TO_TIMESTAMP_LTZ(value, precision): the precision must be the literal 0 "
        "(epoch seconds) or 3 (epoch milliseconds)"
    )


# --- datetime patterns ---------------------------------------------------------------------------
# Flink formats with java.time's DateTimeFormatter, as Spark does, but Spark refuses or reads
# differently the week-based and localized letters; those are refused here by name.
_PATTERN_LETTERS = {
    "y": 4,
    "M": 4,
    "d": 2,
    "H": 2,
    "h": 2,
    "m": 2,
    "s": 2,
    "S": 9,
    "a": 1,
    "E": 4,
    "D": 3,
    "k": 2,
    "K": 2,
    "G": 3,
}
_PATTERN_ALTERNATIVES = {
    "u": "use DAYOFWEEK(x) (Sunday = 1)",
    "e": "use DAYOFWEEK(x) (Sunday = 1)",
    "c": "use DAYOFWEEK(x) (Sunday = 1)",
    "w": "use WEEK(x)",
    "W": "compute the week of the month from DAYOFMONTH(x)",
    "Y": "use YEAR(x), or EXTRACT(ISOYEAR FROM x) for the week-based year",
    "F": "use DAYOFMONTH(x)",
    "z": "format in UTC and append the zone as text ('UTC')",
    "Z": "append the offset as text ('+0000')",
    "X": "append the offset as text ('Z')",
    "x": "append the offset as text ('+00')",
    "V": "append the zone as text",
    "O": "append the offset as text",
    "Q": "use QUARTER(x)",
    "q": "use QUARTER(x)",
    "L": "use MM or MMM",
    "n": "use S (fraction of second)",
    "N": "use S (fraction of second)",
    "A": "use HOUR, MINUTE and SECOND",
    "B": "use a",
    "g": "use TO_DATE",
    "p": "pad with LPAD",
}


# what may stand between the letters, unquoted, read the same way by both
_PATTERN_OTHERS = frozenset(" -:.,/_0123456789")


def spark_pattern(sql: str, node: exp.Expression, function: str) -> exp.Expression:
    """A Flink datetime pattern that Spark reads the same way, else a refusal naming the letter."""
    text = string_literal(node)
    if text is None:
        raise refuse(
            sql,
            node,
            f"{function}: the pattern must be a string literal such as 'yyyy-MM-dd HH:mm:ss', "
            "so that it can be checked before the job runs",
        )
    for match in re.finditer(r"''|'(?:[^']|'')*'?|([A-Za-z])\1*|.", text, re.DOTALL):
        token = match.group(0)
        if token.startswith("'"):
            # '' is a quote; '...' is quoted text, '' inside it a quote; it must be closed
            if token != "''" and (
                len(token) == 1 or not token.endswith("'") or re.fullmatch(r"'(?:[^']|'')*'", token) is None
            ):
                raise refuse(
                    sql,
                    node,
                    f"{function}: the pattern '{text}' has a quote (') that is not closed; "
                    "quote literal text as 'T' and write a quote itself as ''",
                )
            continue
        if match.group(1) is None:
            if token in _PATTERN_OTHERS:
                continue
            raise refuse(
                sql,
                node,
                f"{function}: the character '{token}' in the pattern '{text}' is not supported "
                "(Spark reads it differently or not at all); outside the pattern letters use "
                "only digits, spaces and - : . , / _, or quote literal text: 'T'",
            )
        letter, count = match.group(1), len(match.group(0))
        if letter in _PATTERN_LETTERS and count <= _PATTERN_LETTERS[letter]:
            continue
        why = (
            f"'{match.group(0)}' (more than {_PATTERN_LETTERS[letter]} '{letter}')"
            if letter in _PATTERN_LETTERS
            else f"'{letter}'"
        )
        alternative = _PATTERN_ALTERNATIVES.get(letter, "use the letters y M d H h m s S a E D k K G")
        raise refuse(
            sql,
            node,
            f"{function}: the pattern letter {why} in '{text}' is not supported "
            f"(Spark's datetime patterns read it differently from Flink's); {alternative}",
        )
    return node.copy()


def _pattern_args(function: str, index: int):
    """Builder wrapper: the pattern argument at `index`, checked; sql text for messages comes later."""

    def check(args: list[exp.Expression]) -> list[exp.Expression]:
        if len(args) > index:
            args = list(args)
            args[index] = spark_pattern("", args[index], function)
        return args

    return check


_DEFAULT_PATTERN = "yyyy-MM-dd HH:mm:ss"


def _date_format(args: list[exp.Expression]) -> exp.Expression:
    value, pattern = _pattern_args("DATE_FORMAT", 1)(args)
    return _call("date_format", value, pattern)


def _from_unixtime(args: list[exp.Expression]) -> exp.Expression:
    args = _pattern_args("FROM_UNIXTIME", 1)(args)
    pattern = args[1] if len(args) == 2 else exp.Literal.string(_DEFAULT_PATTERN)
    return _call("from_unixtime", args[0], pattern)


def _unix_timestamp(args: list[exp.Expression]) -> exp.Expression:
    if not args:
        raise QueryError(
            "refused: UNIX_TIMESTAMP() without arguments reads the clock of the machine: a dagger runs "
            "on event time; use UNIX_TIMESTAMP(CAST(rowtime AS STRING)) or unix_seconds(rowtime)"
        )
    args = _pattern_args("UNIX_TIMESTAMP", 1)(args)
    if len(args) == 1:
        # Flink's default pattern is parsed leniently: one- or two-digit fields, anything after the
        # seconds ignored ('2020-01-31 10:15:30.999' is 10:15:30)
        parsed = template(r"unix_timestamp(regexp_extract({0}, '^\\d+-\\d+-\\d+ \\d+:\\d+:\\d+', 0), 'y-M-d H:m:s')")(
            args
        )
    else:
        parsed = _call("unix_timestamp", *args)
    # a string Flink cannot parse gives Long.MIN_VALUE, not NULL
    return template("CASE WHEN {1} IS NULL THEN NULL ELSE coalesce({0}, -9223372036854775808) END")([parsed, args[0]])


def _to_timestamp(args: list[exp.Expression]) -> exp.Expression:
    if len(args) == 1:
        return _call("to_timestamp", args[0])
    args = _pattern_args("TO_TIMESTAMP", 1)(args)
    return _call("to_timestamp", *args)


def _to_date(args: list[exp.Expression]) -> exp.Expression:
    if len(args) == 1:
        return _call("to_date", args[0])
    args = _pattern_args("TO_DATE", 1)(args)
    return _call("to_date", *args)


_CONVERT_TZ_TEXT = template(r"""
  date_format(convert_timezone({1}, {2},
    to_timestamp_ntz(regexp_extract({0}, '^\\d+-\\d+-\\d+ \\d+:\\d+:\\d+', 0), 'y-M-d H:m:s')),
    'yyyy-MM-dd HH:mm:ss')
""")


# Flink reads a zone with java.util.TimeZone, which takes an unknown name as GMT; Spark's
# convert_timezone fails the row on it, and reads '+08:00' or 'UTC+8' as offsets where TimeZone
# reads GMT. Only the names both read alike pass: a region of the tz database (Area/City), UTC,
# GMT, GMT+h[h][:mm] (up to 18 hours, java.time's limit), and the three-letter names of Java's
# ZoneId.SHORT_IDS, which Spark reads through that map and TimeZone as the same zones (PST is
# America/Los_Angeles, EST -05:00).
_GMT_OFFSET = re.compile(r"GMT[+-](?:(\d{1,2})(?::(\d{2}))?|(\d{2})(\d{2}))")  # h, hh, h:mm, hh:mm, hhmm
_SHORT_IDS = frozenset(
    "ACT AET AGT ART AST BET BST CAT CNT CST CTT EAT ECT IET IST JST MIT NET NST PLT PNT PRT PST "
    "SST VST EST MST HST".split()
)


def _zone_ok(zone: str) -> bool:
    if zone in ("UTC", "GMT") or zone in _SHORT_IDS:
        return True
    offset = _GMT_OFFSET.fullmatch(zone)
    if offset:
        hours, minutes = int(offset.group(1) or offset.group(3)), int(offset.group(2) or offset.group(4) or 0)
        return minutes < 60 and hours * 60 + minutes <= 18 * 60
    if "/" not in zone or zone.startswith(("posix/", "right/", "SystemV/")):
        return False

    return zone in zoneinfo.available_timezones()


def _convert_tz(args: list[exp.Expression]) -> exp.Expression:
    for node, which in ((args[1], "from"), (args[2], "to")):
        zone = string_literal(node)
        if zone is None:
            raise QueryError(
                f"refused: CONVERT_TZ(string, from_zone, to_zone): the {which} zone must be a string "
                "literal such as 'Asia/Jakarta', 'UTC' or 'GMT+07:00', so that it can be checked before "
                "the job runs; for a zone per row use a CASE over the zones it can be"
            )
        if not _zone_ok(zone):
            raise QueryError(
                f"refused: CONVERT_TZ: '{zone}' is not a time zone both Flink and Spark read alike; "
                "write a region such as 'Asia/Jakarta', or 'UTC', or an offset as 'GMT+07:00'"
            )
    return _CONVERT_TZ_TEXT(args)


# --- numbers -----------------------------------------------------------------------------------
# Flink's LN, LOG10, LOG2 and LOG are Java's Math.log: -Infinity at 0, NaN below (Spark: NULL)
def _flink_log(fn: str) -> str:
    return (
        f"(CASE WHEN {{0}} = 0 THEN CAST('-Infinity' AS DOUBLE) WHEN {{0}} < 0 THEN CAST('NaN' AS DOUBLE) "
        f"ELSE {fn}({{0}}) END)"
    )


_LN = template(_flink_log("ln"))
_LOG_BASE = template(
    "(CASE WHEN {0} > 0 AND {1} > 0 THEN log({0}, {1}) ELSE "
    + _flink_log("ln").replace("{0}", "{1}")
    + " / "
    + _flink_log("ln")
    + " END)"
)


def _log(args: list[exp.Expression]) -> exp.Expression:
    return _LN(args) if len(args) == 1 else _LOG_BASE(args)


def _truncate(args: list[exp.Expression]) -> exp.Expression:
    # toward zero at the decimal digits of the value as written (0.29 stays 0.29), as Flink's
    # BigDecimal; `x - x +` keeps a DOUBLE a DOUBLE
    digits = args[1] if len(args) == 2 else exp.Literal.number(0)
    if _int_literal(digits) is None:
        raise QueryError(
            "refused: TRUNCATE(x, digits): the number of digits must be an integer literal such as 2 "
            "(Spark cannot truncate at a number of digits computed per row); for a few values use "
            "CASE WHEN d = 1 THEN TRUNCATE(x, 1) WHEN d = 2 THEN TRUNCATE(x, 2) ... END"
        )
    return template("({0} - {0} + CASE WHEN {0} >= 0 THEN floor({0}, {1}) ELSE ceil({0}, {1}) END)")([args[0], digits])


# --- strings -----------------------------------------------------------------------------------
def _split_index(args: list[exp.Expression]) -> exp.Expression:
    # Flink: StringUtils.splitByWholeSeparatorPreserveAllTokens: the delimiter is text (not a regex),
    # empty tokens are kept, an empty delimiter splits at each whitespace character, an empty
    # string has no tokens; a negative or too large index gives NULL
    return template(r"""
      CASE WHEN {2} < 0 OR {0} = '' THEN NULL
           ELSE try_element_at(split({0}, CASE WHEN {1} = '' THEN '\\p{javaWhitespace}'
                                                ELSE concat('\\Q', replace({1}, '\\E', '\\E\\\\E\\Q'), '\\E') END, -1),
                               {2} + 1) END
    """)(args)


_LOCATE = template("locate({0}, {1}, CASE WHEN {2} < 1 THEN 1 ELSE {2} END)")


def _locate(args: list[exp.Expression]) -> exp.Expression:
    # Flink counts a start position below 1 as 1; Spark's LOCATE returns 0 for it
    return _call("locate", *args) if len(args) == 2 else _LOCATE(args)


def _pad(fn: str, arity: int = 3):
    # Flink: a negative length or an empty pad gives NULL (Spark: '' and the string unchanged);
    # Spark's two-argument form (a space, or a zero byte for BINARY) keeps its pad
    if arity == 2:
        return template(f"CASE WHEN {{1}} < 0 THEN NULL ELSE {fn}({{0}}, {{1}}) END")
    return template(f"CASE WHEN {{1}} < 0 OR {{2}} = '' THEN NULL ELSE {fn}({{0}}, {{1}}, {{2}}) END")


def _trim(position: str):
    def build(args: list[exp.Expression]) -> exp.Expression:
        if len(args) == 1:
            return _call("ltrim" if position == "LEADING" else "rtrim", args[0])  # spaces only, as Flink
        return exp.Trim(this=args[0].copy(), expression=args[1].copy(), position=position)

    return build


_HASHES = {"SHA224": 224, "SHA256": 256, "SHA384": 384, "SHA512": 512}


def _sha2(args: list[exp.Expression]) -> exp.Expression:
    # Flink fails on a length other than 224, 256, 384, 512; Spark reads 0 as 256
    return template("CASE WHEN {1} IN (224, 256, 384, 512) THEN sha2({0}, {1}) END")(args)


def _row(args: list[exp.Expression]) -> exp.Expression:
    # Flink names the fields of ROW(a, b) EXPR$0, EXPR$1
    fields: list[exp.Expression] = []
    for i, a in enumerate(args):
        fields += [exp.Literal.string(f"EXPR${i}"), a.copy()]
    return exp.Anonymous(this="named_struct", expressions=fields)


def _refusal(message: str):
    def build(args: list[exp.Expression]) -> exp.Expression:
        raise QueryError(f"refused: {message}")

    return build


def _str_to_map(args: list[exp.Expression]) -> exp.Expression:
    # Flink's default delimiters are ',' between pairs and '=' within one (Spark's: ',' and ':')
    defaults = [exp.Literal.string(","), exp.Literal.string("=")]
    args = [*args, *defaults[len(args) - 1 :]]
    delimiters = []
    for node in args[1:]:
        text = string_literal(node)
        if text is None or text == "":
            raise QueryError(
                "refused: STR_TO_MAP(string, pair_delimiter, key_value_delimiter): the delimiters must be "
                "non-empty string literals such as ',' and '=' (Spark reads a delimiter as a regex)"
            )
        # Flink splits at the delimiter as text; Spark's str_to_map reads it as a regex
        quoted = (
            text
            if re.fullmatch(r"[A-Za-z0-9 ,=;:&_#@%\-]+", text)
            else "\\Q" + text.replace("\\E", "\\E\\\\E\\Q") + "\\E"
        )
        delimiters.append(exp.Literal.string(quoted))
    return _call("str_to_map", args[0], *delimiters)


def _array_slice(args: list[exp.Expression]) -> exp.Expression:
    # Flink: positions from 1, negative from the end, 0 is the start, the end position included
    # (Spark's slice takes a length); out of range is clamped, an empty range is an empty array
    if len(args) == 2:
        args = [*args, exp.Anonymous(this="size", expressions=[args[0].copy()])]
    first = "greatest(CASE WHEN {1} < 0 THEN size({0}) + {1} + 1 WHEN {1} = 0 THEN 1 ELSE {1} END, 1)"
    last = "least(CASE WHEN {2} < 0 THEN size({0}) + {2} + 1 WHEN {2} = 0 THEN 1 ELSE {2} END, size({0}))"
    return template(
        f"CASE WHEN {{0}} IS NULL OR {{1}} IS NULL OR {{2}} IS NULL THEN NULL "
        f"WHEN {first} > {last} THEN slice({{0}}, 1, 0) "
        f"ELSE slice({{0}}, {first}, {last} - {first} + 1) END"
    )(args)


def _collect(args: list[exp.Expression]) -> exp.Expression:
    raise QueryError(
        "refused: COLLECT returns a MULTISET, which the dagger runtime has not; use ARRAY_AGG(x) "
        "(every value, NULLs included) or CollectArray(x)"
    )


# --- registration --------------------------------------------------------------------------------
def _fn(name: str, params: tuple[str, ...], build, optional: int = 0, aggregate: bool = False) -> None:
    register(DaggerFunction(name, params, build=build, optional=optional, aggregate=aggregate))


_fn("TIMESTAMPADD", ("unit", "count", "timepoint"), _timestampadd)
_fn("TIMESTAMPDIFF", ("unit", "timepoint1", "timepoint2"), _timestampdiff)
_fn("TO_TIMESTAMP_LTZ", ("epoch", "precision"), _to_timestamp_ltz, optional=1)
_fn("TO_TIMESTAMP", ("string", "pattern"), _to_timestamp, optional=1)
_fn("TO_DATE", ("string", "pattern"), _to_date, optional=1)
_fn("DATE_FORMAT", ("timestamp", "pattern"), _date_format)
_fn("FROM_UNIXTIME", ("seconds", "pattern"), _from_unixtime, optional=1)
_fn("UNIX_TIMESTAMP", ("string", "pattern"), _unix_timestamp, optional=2)
_fn("CONVERT_TZ", ("string", "from_zone", "to_zone"), _convert_tz)
_fn("WEEK", ("date",), lambda a: _call("weekofyear", *a))
_fn("LOG", ("base_or_x", "x"), _log, optional=1)
_fn("LN", ("x",), _LN)
_fn("LOG10", ("x",), template(_flink_log("log10")))
_fn("LOG2", ("x",), template(_flink_log("log2")))
_fn("TRUNCATE", ("x", "digits"), _truncate, optional=1)
_fn("SPLIT_INDEX", ("string", "delimiter", "index"), _split_index)
_fn("LOCATE", ("needle", "haystack", "start"), _locate, optional=1)
_fn("LPAD", ("string", "length", "pad"), lambda a: _pad("lpad", len(a))(a), optional=1)
_fn("RPAD", ("string", "length", "pad"), lambda a: _pad("rpad", len(a))(a), optional=1)
_fn("LTRIM", ("string", "characters"), _trim("LEADING"), optional=1)
_fn("RTRIM", ("string", "characters"), _trim("TRAILING"), optional=1)
_fn("SHA2", ("string", "bits"), _sha2)
for _name, _bits in _HASHES.items():
    _fn(_name, ("string",), lambda a, b=_bits: _call("sha2", a[0], exp.Literal.number(b)))
_fn("JSON_VALUE", ("json", "path"), flink_json.json_value_plain)
register(DaggerFunction("ROW", ("value", "..."), build=_row, optional=1, variadic=True))
# Flink's FIRST_VALUE/LAST_VALUE skip NULLs (Spark's keep them unless told); Spark's own
# (value, ignore_nulls) form is left as written
_fn(
    "FIRST_VALUE",
    ("value", "ignore_nulls"),
    lambda a: _call("first_value", a[0], a[1] if len(a) == 2 else exp.true()),
    optional=1,
    aggregate=True,
)
_fn(
    "LAST_VALUE",
    ("value", "ignore_nulls"),
    lambda a: _call("last_value", a[0], a[1] if len(a) == 2 else exp.true()),
    optional=1,
    aggregate=True,
)
_fn("COLLECT", ("value",), _collect, aggregate=True)
_fn("FROM_BASE64", ("string",), template("CAST(unbase64({0}) AS STRING)"))  # Flink: a STRING (Spark: BINARY)
_fn("STR_TO_MAP", ("string", "pair_delimiter", "key_value_delimiter"), _str_to_map, optional=2)
_fn("ARRAY_REVERSE", ("array",), lambda a: _call("reverse", a[0]))
# Spark's size/cardinality of NULL is -1 (spark.sql.legacy.sizeOfNull); Flink's is NULL
_fn("CARDINALITY", ("collection",), template("CASE WHEN {0} IS NULL THEN NULL ELSE cardinality({0}) END"))
_fn("ARRAY_SLICE", ("array", "start", "end"), lambda a: _array_slice(a), optional=1)
# Flink: the sole element, NULL when empty (Flink fails the job on more than one; NULL here)
_fn("ELEMENT", ("array",), template("CASE WHEN size({0}) = 1 THEN element_at({0}, 1) END"))
# JSON_QUERY, JSON_EXISTS, JSON_STRING, JSON_OBJECT, JSON_ARRAY, JSON_OBJECTAGG, JSON_ARRAYAGG, MAP_UNION and
# JSON_VALUE's clauses: dagger_runtime.sql.flink_json


# --- typed nodes, before the sandbox's first check --------------------------------------------------
def _similar_regex(sql: str, node: exp.Expression, pattern: str) -> str:
    """Calcite's SIMILAR TO pattern as a Java regex matched against the whole string (Flink's
    SqlLikeUtils, no ESCAPE): _ any character, % any text, [...] a class, $ and \\ literal, the
    other regex characters (. ^ | * + ? {} ()) as regex."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "_":
            out.append(".")
        elif c == "%":
            out.append("(?s:.*)")
        elif c == "\\":
            out.append("\\\\")
        elif c == "$":
            out.append("\\$")
        elif c == "]":
            raise refuse(sql, node, f"SIMILAR TO pattern '{pattern}': ']' without '['")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                raise refuse(sql, node, f"SIMILAR TO pattern '{pattern}': '[' without ']'")
            inner = pattern[i + 1 : end]
            classes = {
                "[:ALPHA:]": r"\p{Alpha}",
                "[:alpha:]": r"\p{Alpha}",
                "[:UPPER:]": r"\p{Upper}",
                "[:upper:]": r"\p{Upper}",
                "[:LOWER:]": r"\p{Lower}",
                "[:lower:]": r"\p{Lower}",
                "[:DIGIT:]": r"\d",
                "[:digit:]": r"\d",
                "[:SPACE:]": " ",
                "[:space:]": " ",
                "[:WHITESPACE:]": r"\s",
                "[:whitespace:]": r"\s",
                "[:ALNUM:]": r"\p{Alnum}",
                "[:alnum:]": r"\p{Alnum}",
            }
            if inner.startswith("[:"):
                end = pattern.find(":]", i + 1)
                name = pattern[i + 1 : end + 2] if end > 0 else ""
                if name not in classes or pattern[end + 2 : end + 3] != "]":
                    raise refuse(sql, node, f"SIMILAR TO pattern '{pattern}': unknown character class")
                out.append("[" + classes[name] + "]")
                i = end + 3
                continue
            if any(ch in "()|+*_%?{}[" for ch in inner):
                raise refuse(sql, node, f"SIMILAR TO pattern '{pattern}': special character inside [...]")
            out.append("[" + inner + "]")
            i = end
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _similar_to(sql: str, node: exp.SimilarTo) -> exp.Expression:
    if node.args.get("escape") is not None or isinstance(node.parent, exp.Escape):
        raise refuse(
            sql,
            node,
            "SIMILAR TO ... ESCAPE is not supported; write the pattern without an escape "
            "character, or use REGEXP(string, regex)",
        )
    pattern = string_literal(node.expression)
    if pattern is None:
        raise refuse(
            sql,
            node,
            "SIMILAR TO: the pattern must be a string literal; for a computed pattern use REGEXP(string, regex)",
        )
    regex = r"\A(?:" + _similar_regex(sql, node, pattern) + r")\z"
    return exp.RegexpLike(this=node.this.copy(), expression=exp.Literal.string(regex))


def _percentile(sql: str, node: exp.WithinGroup) -> exp.Expression | None:
    fn = node.this
    if not isinstance(fn, (exp.PercentileCont, exp.PercentileDisc)):
        return None
    order = node.expression
    keys = order.expressions if isinstance(order, exp.Order) else []
    if len(keys) != 1:
        raise refuse(sql, node, "PERCENTILE_CONT/PERCENTILE_DISC ... WITHIN GROUP takes exactly one ORDER BY key")
    key = keys[0]
    if isinstance(fn, exp.PercentileDisc):
        return exp.WithinGroup(this=_call("percentile_disc", fn.this), expression=order.copy())
    # exact, with linear interpolation (Spark's percentile), never an approximation
    number = fn.this
    try:
        ok = isinstance(number, exp.Literal) and not number.is_string and 0 <= float(number.this) <= 1
    except ValueError:
        ok = False
    if not ok:
        raise refuse(
            sql,
            node,
            f"PERCENTILE_CONT({fn.this.sql()}): the fraction must be a number literal between "
            "0 and 1, such as PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY x)",
        )
    fraction = fn.this.copy()
    if key.args.get("desc"):
        fraction = exp.Sub(this=exp.Literal.number(1), expression=exp.Paren(this=fraction))
    return _call("percentile", key.this, fraction)


_EXTRACT = {
    "SECOND": "CAST(second({0}) AS BIGINT)",  # Spark: seconds with the fraction
    "MILLISECOND": "pmod(unix_millis(CAST({0} AS TIMESTAMP)), 1000)",  # Flink: within the second
    "MICROSECOND": "pmod(unix_micros(CAST({0} AS TIMESTAMP)), 1000000)",
    "NANOSECOND": "pmod(unix_micros(CAST({0} AS TIMESTAMP)), 1000000) * 1000",
    "EPOCH": "unix_millis(CAST({0} AS TIMESTAMP)) DIV 1000",
    "ISODOW": "weekday({0}) + 1",
    "ISOYEAR": "extract(YEAROFWEEK FROM {0})",
    "DECADE": "year({0}) DIV 10",
    "CENTURY": "(year({0}) + 99) DIV 100",
    "MILLENNIUM": "(year({0}) + 999) DIV 1000",
}
_EXTRACT_AS_IS = {"YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "DOW", "DOY"}


def _extract(sql: str, node: exp.Extract) -> exp.Expression | None:
    unit = node.this.name.upper() if isinstance(node.this, (exp.Var, exp.Column, exp.Identifier)) else ""
    if unit in _EXTRACT_AS_IS:
        return None
    if unit in _EXTRACT:
        return exp.Paren(this=template(_EXTRACT[unit])([node.expression]))
    return None  # not a Flink unit: Spark's own spelling (SECONDS, DAYOFWEEK_ISO...), with Spark's meaning


def _substring(node: exp.Substring) -> exp.Expression | None:
    length = node.args.get("length")
    if length is None or (_int_literal(length) or -1) >= 0:
        return None
    # Flink: a negative length gives NULL (Spark: '')
    return template("CASE WHEN {1} < 0 THEN NULL ELSE {0} END")([node.copy(), length])


# Calcite's INITCAP, which Flink uses: words are runs of ASCII letters and digits; the first a-z of
# a word is upper-cased, the A-Z after it lower-cased; every other character is left as it is
_INITCAP = template(r"""
  CASE WHEN {0} = '' THEN '' ELSE array_join(transform(sequence(1, char_length({0})), __i ->
    CASE WHEN substring({0}, __i, 1) RLIKE '^[a-z]$'
              AND (__i = 1 OR NOT substring({0}, __i - 1, 1) RLIKE '^[A-Za-z0-9]$')
           THEN upper(substring({0}, __i, 1))
         WHEN substring({0}, __i, 1) RLIKE '^[A-Z]$'
              AND __i > 1 AND substring({0}, __i - 1, 1) RLIKE '^[A-Za-z0-9]$'
           THEN lower(substring({0}, __i, 1))
         ELSE substring({0}, __i, 1) END), '') END
""")


def _regexp_extract(args: list[exp.Expression]) -> exp.Expression:
    if len(args) == 2:
        args = [*args, exp.Literal.number(0)]  # Flink: the whole match by default (Spark: group 1)
    # no match: NULL in Flink ('' in Spark)
    return exp.Case(
        ifs=[
            exp.If(
                this=exp.EQ(this=_call("regexp_instr", *args[:2]), expression=exp.Literal.number(0)), true=exp.Null()
            )
        ],
        default=_call("regexp_extract", *args),
    )


_fn("REGEXP_EXTRACT", ("string", "regex", "group"), _regexp_extract, optional=1)


def _array_agg(sql: str, node: exp.ArrayAgg) -> exp.Expression:
    value = node.this
    if isinstance(value, exp.Distinct):
        raise refuse(sql, node, "ARRAY_AGG(DISTINCT ...) is not supported; use array_distinct(ARRAY_AGG(x))")
    # Flink keeps NULLs (Spark's collect_list drops them)
    return template("transform(collect_list(named_struct('v', {0})), __x -> __x.v)")([value])


def _bracket(sql: str, node: exp.Bracket) -> exp.Expression | None:
    base = node.this
    if (
        isinstance(base, exp.Column)
        and not base.table
        and base.name.upper() == "MAP"
        and not base.this.args.get("quoted")
    ):
        # Flink's MAP['k1', v1, 'k2', v2] constructor
        return exp.Anonymous(this="map", expressions=[e.copy() for e in node.expressions])
    if len(node.expressions) != 1 or node.args.get("offset"):
        return None  # element_at/try_element_at as written: 1-based already
    index = node.expressions[0]
    if string_literal(index) is not None:
        return None  # map['key']: the same in both
    number = _constant_int(index)
    if number is not None and number < 1 and _is_array(base):
        # Flink refuses it when it validates the query
        raise refuse(
            sql, node, f"{node.sql()}: Flink's array positions start at 1; write {base.sql()}[1] for the first element"
        )
    if number is not None and number >= 1:
        # Flink counts array positions from 1 (Spark's [] from 0); element_at counts from 1 and
        # reads a map by key as well; out of range gives NULL in both
        return _call("try_element_at", base, index)
    # An index computed per row (or a key below 1, which only a map can take): the translation
    # reads the query, not the schemas, so the base may be an array or a map. On an array Flink
    # gives NULL below 1 where Spark's element_at fails (0) or counts from the end (negative);
    # typeof, folded when Spark plans the query, keeps a map's lookup by any key
    return template("CASE WHEN {1} >= 1 OR typeof({0}) LIKE 'map<%' THEN try_element_at({0}, {1}) END")([base, index])


def _constant_int(node: exp.Expression) -> int | None:
    """An integer the query writes as a constant (2, -1, 1 - 1), as Flink folds it before checking."""
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        left, right = _constant_int(node.this), _constant_int(node.expression)
        if left is None or right is None:
            return None
        return (
            left + right if isinstance(node, exp.Add) else left - right if isinstance(node, exp.Sub) else left * right
        )
    if isinstance(node, exp.Paren):
        return _constant_int(node.this)
    if isinstance(node, exp.Neg):
        inner = _constant_int(node.this)
        return -inner if inner is not None else None
    return _int_literal(node)


_ARRAY_BUILDERS = {
    "array",
    "split",
    "sequence",
    "array_repeat",
    "slice",
    "collect_list",
    "array_distinct",
    "array_sort",
    "sort_array",
    "reverse",
    "array_remove",
    "array_union",
    "array_intersect",
    "array_except",
    "flatten",
    "arrays_zip",
    "map_keys",
    "map_values",
    "transform",
    "filter",
}


def _is_array(node: exp.Expression) -> bool:
    """The query itself says this is an array (a constructor or an array function)."""
    if isinstance(node, (exp.Array, exp.RegexpSplit, exp.Split)):
        return True
    name = node.name.lower() if isinstance(node, exp.Anonymous) else (node.key if isinstance(node, exp.Func) else "")
    return name in _ARRAY_BUILDERS or (
        isinstance(node, exp.Func)
        and not isinstance(node, exp.Anonymous)
        and type(node).__name__ in ("ArrayDistinct", "ArraySort", "SortArray", "Flatten", "Transform", "ArrayFilter")
    )


_JSON_KINDS = {
    "": None,
    "VALUE": None,
    "SCALAR": "NOT IN ('OBJECT', 'ARRAY')",
    "OBJECT": "= 'OBJECT'",
    "ARRAY": "= 'ARRAY'",
}


def _is_json(sql: str, node: exp.Is) -> exp.Expression | None:
    kind_node = node.expression
    if not isinstance(kind_node, exp.JSON):
        return None
    kind = str(kind_node.this or "").upper() if kind_node.this not in (False, None) else ""
    # WITHOUT UNIQUE KEYS is the default; WITH UNIQUE KEYS (or UNIQUE KEYS) checks for duplicate keys
    unique = bool(kind_node.args.get("unique")) and kind_node.args.get("with_") is not False
    if kind not in _JSON_KINDS or unique:
        written = " ".join(w for w in ("IS JSON", kind, "WITH UNIQUE KEYS" if unique else "") if w)
        raise refuse(
            sql,
            node,
            f"{written} is not supported; use IS JSON, IS JSON SCALAR, IS JSON OBJECT "
            "or IS JSON ARRAY (duplicate keys are not checked)",
        )
    test = _JSON_KINDS[kind]
    if test is None:
        return template("coalesce(try_parse_json({0}) IS NOT NULL, false)")([node.this])
    return template(f"coalesce(regexp_extract(schema_of_variant(try_parse_json({{0}})), '^[A-Z]+', 0) {test}, false)")(
        [node.this]
    )


# the typed rewrites that read an argument more than once
_TYPED_REWRITES = (exp.Ceil, exp.Initcap)


def normalise(sql: str, tree: exp.Expression) -> None:
    """Rewrite, in place, the Flink constructs sqlglot parses into typed nodes."""
    refuse_reserved_names(sql, tree)
    budget = Budget(sql)
    for node in reversed(list(tree.walk())):
        new: exp.Expression | None = None
        if isinstance(node, _TYPED_REWRITES):
            budget.before([node], node)
        if isinstance(node, (exp.Floor, exp.Ceil)) and node.args.get("to") is not None:
            new = _time_floor_ceil(sql, node)
        elif isinstance(node, exp.SimilarTo):
            new = _similar_to(sql, node)
        elif isinstance(node, exp.WithinGroup):
            new = _percentile(sql, node)
        elif isinstance(node, exp.Extract):
            new = _extract(sql, node)
        elif isinstance(node, exp.Substring):
            new = _substring(node)
        elif isinstance(node, exp.Initcap):
            new = exp.Paren(this=_INITCAP([node.this]))
        elif isinstance(node, exp.ArrayAgg):
            new = _array_agg(sql, node)
        elif isinstance(node, exp.Bracket):
            new = _bracket(sql, node)
        elif isinstance(node, exp.Is):
            new = _is_json(sql, node)
        elif isinstance(node, flink_json.NODES):
            new = flink_json.rewrite(sql, node, budget)
        if new is not None:
            budget.spend(new, node)
            node.replace(new)


_WINDOW_TVF = re.compile(r"\bTABLE\s*\(\s*(TUMBLE|HOP|CUMULATE|SESSION)\s*\(", re.IGNORECASE)


def explain_unparsable(sql: str) -> tuple[str, int] | None:
    """Flink syntax sqlglot cannot read, named with its alternative: (message, offset)."""
    tvf = _WINDOW_TVF.search(sql)
    if tvf:
        kind = tvf.group(1).upper()
        if kind == "SESSION":
            return (
                "the window table-valued function TABLE(SESSION(...)) is not supported; write the group "
                "window: GROUP BY SESSION(rowtime, INTERVAL '10' MINUTE), key",
                tvf.start(),
            )
        return (
            f"TABLE({kind}(...)) is read with its arguments in order (named arguments are not supported): "
            f"TABLE({kind}(TABLE stream, DESCRIPTOR(rowtime), INTERVAL ...))",
            tvf.start(),
        )
    return None
