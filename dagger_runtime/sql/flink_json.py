"""Flink 1.20's JSON functions and MAP_UNION with Flink's meaning, in Spark SQL.

JSON_STRING, JSON_OBJECT, JSON_ARRAY, JSON_QUERY, JSON_EXISTS, JSON_VALUE's RETURNING / ON EMPTY /
ON ERROR clauses and the aggregates JSON_ARRAYAGG and JSON_OBJECTAGG, as Flink 1.20 runs them
(checked against Flink itself by tests/conformance): JSON text without spaces; JSON_OBJECT's keys
sorted, a repeated key's last value kept; a nested JSON_OBJECT/JSON_ARRAY inserted as JSON, any
other string as a JSON string; DECIMALs as Jackson writes a BigDecimal without its trailing zeros
(1.50 -> 1.5, 100.00 -> 1E+2); timestamps as ISO-8601 local date-times. A path without 'lax' is
strict in Flink: a missing value, a JSON null or JSON that does not parse is an error there (ON
ERROR applies), empty in lax mode (ON EMPTY applies). Clauses that fail the job (ERROR ON ...)
are refused: a dagger never stops because of its data.

sqlglot does not read Flink's clauses: FUNCTION_PARSERS (merged into dialect.FlinkSQL) read the
calls into FlinkJson nodes; `rewrite` (called from flink.normalise, before the sandbox's first
check) writes them, and sqlglot's JSON_OBJECT/JSON_OBJECTAGG nodes, as Spark SQL. MAP_UNION is
a macro by name. docs/reference/flink-functions.md lists what remains different.
"""

from __future__ import annotations

import json
import re

from sqlglot import exp
from sqlglot.tokens import TokenType

from ..errors import QueryError
from .functions import DaggerFunction, refuse, register, string_literal, template


class FlinkJson(exp.Expression, exp.Func):
    """A Flink JSON call as written: its name (this), arguments and clauses."""

    arg_types = {
        "this": True,
        "expressions": False,
        "returning": False,
        "wrapper": False,
        "on_empty": False,
        "on_error": False,
        "empty_default": False,
        "error_default": False,
        "on_null": False,
        "order": False,
    }


_NAMES = ("JSON_STRING", "JSON_ARRAY", "JSON_ARRAYAGG", "JSON_QUERY", "JSON_EXISTS", "JSON_VALUE")


# --- parsing: Flink's clauses, as sqlglot Parser methods -------------------------------------------
def _behaviour(parser, on: str, words: tuple[str, ...]):
    """`<word> ON EMPTY|ERROR` or `DEFAULT expr ON ...`: (word, default expression) or None."""
    for word in words:
        parts = word.split()
        if parser._match_text_seq(*parts, "ON", on):
            return word, None
    index = parser._index
    if "DEFAULT" in words and parser._match_text_seq("DEFAULT"):
        value = parser._parse_bitwise()
        if parser._match_text_seq("ON", on):
            return "DEFAULT", value
    parser._retreat(index)
    return None


_WRAPPERS = (
    (("WITHOUT", "ARRAY", "WRAPPER"), "WITHOUT"),
    (("WITHOUT", "WRAPPER"), "WITHOUT"),
    (("WITH", "CONDITIONAL", "ARRAY", "WRAPPER"), "CONDITIONAL"),
    (("WITH", "CONDITIONAL", "WRAPPER"), "CONDITIONAL"),
    (("WITH", "UNCONDITIONAL", "ARRAY", "WRAPPER"), "UNCONDITIONAL"),
    (("WITH", "UNCONDITIONAL", "WRAPPER"), "UNCONDITIONAL"),
    (("WITH", "ARRAY", "WRAPPER"), "UNCONDITIONAL"),
    (("WITH", "WRAPPER"), "UNCONDITIONAL"),
)
_BEHAVIOURS = {
    "JSON_VALUE": ("NULL", "ERROR", "DEFAULT"),
    "JSON_QUERY": ("NULL", "ERROR", "EMPTY ARRAY", "EMPTY OBJECT"),
    "JSON_EXISTS": ("TRUE", "FALSE", "UNKNOWN", "ERROR"),
}


def _parser(name: str):
    def parse(self) -> exp.Expression:
        args: dict = {"this": name}
        if name in ("JSON_ARRAY", "JSON_ARRAYAGG", "JSON_STRING"):
            values = [] if self._curr and self._curr.text == ")" else self._parse_csv(self._parse_assignment)
            if name == "JSON_ARRAYAGG" and self._curr and self._curr.token_type == TokenType.ORDER_BY:
                args["order"] = self._parse_order()
            for word in ("NULL", "ABSENT"):
                if self._match_text_seq(word, "ON", "NULL"):
                    args["on_null"] = word
            args["expressions"] = values
            return self.expression(FlinkJson(**args))
        json_arg = self._parse_assignment()
        if not self._match(TokenType.COMMA):
            self.raise_error(f"{name}(json, path ...): a comma must separate the JSON value and the path")
        path = self._parse_assignment()
        args["expressions"] = [a for a in (json_arg, path) if a is not None]

        def once(key: str, clause: str) -> None:
            # Calcite reads each clause at most once; a second would otherwise silently win
            if key in args:
                self.raise_error(f"{name}: {clause} is given twice")

        while self._curr and self._curr.text != ")":
            if self._match_text_seq("RETURNING"):
                once("returning", "RETURNING")
                args["returning"] = self._parse_types()
                continue
            wrapper = next((kind for words, kind in _WRAPPERS if self._match_text_seq(*words)), None)
            if wrapper is not None and name != "JSON_QUERY":
                self.raise_error(f"{name}: a WRAPPER clause belongs to JSON_QUERY")
            if wrapper is not None:
                once("wrapper", "the WRAPPER clause")
                args["wrapper"] = wrapper
                continue
            found = False
            for on, key in (("EMPTY", "on_empty"), ("ERROR", "on_error")):
                if name == "JSON_EXISTS" and on == "EMPTY":
                    continue
                got = _behaviour(self, on, _BEHAVIOURS[name])
                if got is not None:
                    once(key, f"ON {on}")
                    args[key] = got[0]
                    if got[1] is not None:
                        args[key.replace("on_", "") + "_default"] = got[1]
                    found = True
            if not found:
                self.raise_error(
                    f"{name}: unexpected '{self._curr.text}'; the clauses Flink reads are "
                    + {
                        "JSON_VALUE": "RETURNING type, {NULL | DEFAULT value} ON EMPTY, "
                        "{NULL | DEFAULT value} ON ERROR",
                        "JSON_QUERY": "RETURNING STRING, WITH [CONDITIONAL | UNCONDITIONAL] ARRAY "
                        "WRAPPER, {NULL | EMPTY ARRAY | EMPTY OBJECT} ON EMPTY / ON ERROR",
                        "JSON_EXISTS": "{TRUE | FALSE | UNKNOWN} ON ERROR",
                    }[name]
                )
                break
        if name == "JSON_VALUE" and len(args) == 2:
            # no clause: the by-name macro of dagger_runtime.sql.flink, as before
            return self.expression(exp.Anonymous(this=name, expressions=args["expressions"]))
        return self.expression(FlinkJson(**args))

    return parse


FUNCTION_PARSERS = {name: _parser(name) for name in _NAMES}


# --- helpers ---------------------------------------------------------------------------------------


def _literal(node: exp.Expression | None) -> str | None:
    return node.this if isinstance(node, exp.Literal) and node.is_string else None


_RAW = "flink_json"  # meta key on a translation whose result is JSON text: "raw" (object/array) or "text"


def _mark(node: exp.Expression, kind: str) -> exp.Expression:
    wrapped = exp.Paren(this=node)
    wrapped.meta[_RAW] = kind
    return wrapped


def _kind(node: exp.Expression) -> str | None:
    return node.meta.get(_RAW) if node.meta else None


# Java's BigDecimal.stripTrailingZeros().toString() of a decimal's plain text (Flink writes a
# DECIMAL through Jackson's numberNode): 1.50 -> 1.5, 100.00 -> 1E+2, 0.00 -> 0, 0.00000010 -> 1E-7
_DECIMAL_TEXT = """
  element_at(transform(array(regexp_replace(regexp_replace({0}, '(\\\\.[0-9]*?)0+$', '$1'), '\\\\.$', '')), __d ->
    CASE WHEN __d LIKE '%E%' THEN regexp_replace(__d, '\\\\.?0*E', 'E')
         WHEN __d RLIKE '^-?0$' THEN '0'
         WHEN __d RLIKE '^-?[1-9][0-9]*?0+$' THEN concat(
           regexp_extract(__d, '^(-?[1-9])', 1),
           CASE WHEN char_length(regexp_extract(__d, '^-?[1-9]([0-9]*?)0+$', 1)) > 0
                THEN concat('.', regexp_extract(__d, '^-?[1-9]([0-9]*?)0+$', 1)) ELSE '' END,
           'E+', CAST(char_length(regexp_extract(__d, '^-?([0-9]+)$', 1)) - 1 AS STRING))
         WHEN __d RLIKE '^-?0\\\\.0{6,}[1-9]' THEN concat(
           regexp_extract(__d, '^(-?)', 1), regexp_extract(__d, '^-?0\\\\.0*([1-9])', 1),
           CASE WHEN char_length(regexp_extract(__d, '^-?0\\\\.0*[1-9]([0-9]*)$', 1)) > 0
                THEN concat('.', regexp_extract(__d, '^-?0\\\\.0*[1-9]([0-9]*)$', 1)) ELSE '' END,
           'E-', CAST(char_length(regexp_extract(__d, '^-?0\\\\.(0*)[1-9]', 1)) + 1 AS STRING))
         ELSE __d END), 1)
"""
# The JSON text of one value as Flink's JsonGenerateUtils.createNodeTerm writes it; NULL for NULL.
# typeof is folded when Spark plans the query, so each value takes one branch.
_FRAGMENT = template(f"""
  CASE WHEN {{0}} IS NULL THEN NULL
       WHEN typeof({{0}}) LIKE 'decimal%' THEN {_DECIMAL_TEXT.replace("{0}", "CAST({0} AS STRING)")}
       WHEN typeof({{0}}) IN ('timestamp', 'timestamp_ntz')
         THEN concat('"', replace(CAST({{0}} AS STRING), ' ', 'T'), '"')
       ELSE regexp_extract(to_json(array({{0}}), map('ignoreNullFields', 'false')), '(?s)^\\\\[(.*)\\\\]$', 1) END
""")
_KEY_TEXT = template("regexp_extract(to_json(array(CAST({0} AS STRING))), '(?s)^\\\\[(.*)\\\\]$', 1)")


def _fragment(value: exp.Expression) -> exp.Expression:
    """JSON text of a value: a nested JSON_OBJECT/JSON_ARRAY as is, anything else converted."""
    if _kind(value) == "raw":
        return value.copy()
    return _FRAGMENT([value])


def _java_order(key: str) -> bytes:
    return key.encode("utf-16-be")  # String.compareTo: UTF-16 code units


def _on_null(node: exp.Expression, default: str) -> str:
    handling = node.args.get("null_handling") or node.args.get("on_null") or ""
    handling = str(handling).upper()
    return "ABSENT" if handling.startswith("ABSENT") else "NULL" if handling.startswith("NULL") else default


# an array of named_struct(k, i, v) (v: JSON text, NULL for NULL) as a JSON object: sorted by key
# (Flink's ObjectMapper sorts them), a repeated key's last value kept, NULL keys left out
_ASSEMBLE = template("""
  element_at(transform(array(array_sort(filter({0}, __e -> __e.k IS NOT NULL))), __s ->
    concat('{', array_join(transform(filter(__s, (__e, __p) -> __p + 1 = size(__s) OR __s[__p + 1].k <> __e.k),
                                     __e -> concat(regexp_extract(to_json(array(__e.k)), '(?s)^\\\\[(.*)\\\\]$', 1),
                                                   ':', coalesce(__e.v, 'null'))), ','), '}')), 1)
""")


# --- JSON_OBJECT, JSON_ARRAY, JSON_STRING ------------------------------------------------------------
def _json_object(sql: str, node: exp.JSONObject) -> exp.Expression:
    if node.args.get("unique_keys"):
        raise refuse(
            sql,
            node,
            "JSON_OBJECT(... WITH UNIQUE KEYS) is not supported (Flink 1.20 does not read it); "
            "write JSON_OBJECT without it: a repeated key keeps its last value",
        )
    if node.args.get("return_type") or node.args.get("encoding"):
        raise refuse(sql, node, "JSON_OBJECT(... RETURNING/ENCODING) is not supported; JSON_OBJECT returns a STRING")
    pairs = node.expressions
    if any(not isinstance(p, exp.JSONKeyValue) for p in pairs):
        raise refuse(sql, node, "JSON_OBJECT(*) is not supported; write JSON_OBJECT(KEY 'k' VALUE v, ...)")
    absent = _on_null(node, "NULL") == "ABSENT"
    if not pairs:
        return _mark(exp.Literal.string("{}"), "raw")
    keys = [_literal(p.this) for p in pairs]
    if all(k is not None for k in keys):
        by_key: dict[str, list[exp.Expression]] = {}
        for key, pair in zip(keys, pairs):
            by_key.setdefault(key, []).append(_fragment(pair.expression))
        entries = []
        for key in sorted(by_key, key=_java_order):
            values = by_key[key]
            # ABSENT ON NULL: a NULL value sets nothing, so the last non-NULL one stays
            value = (
                values[-1]
                if not absent or len(values) == 1
                else exp.Coalesce(this=values[-1], expressions=list(reversed(values[:-1])))
            )
            text = exp.Literal.string(json.dumps(key, ensure_ascii=False) + ":")
            if absent:
                entries.append(exp.Anonymous(this="concat", expressions=[text, value]))
            else:
                entries.append(
                    exp.Anonymous(
                        this="concat",
                        expressions=[text, exp.Coalesce(this=value, expressions=[exp.Literal.string("null")])],
                    )
                )
        body = exp.Anonymous(this="concat_ws", expressions=[exp.Literal.string(","), *entries])
        return _mark(
            exp.Anonymous(this="concat", expressions=[exp.Literal.string("{"), body, exp.Literal.string("}")]), "raw"
        )
    structs = []
    for i, pair in enumerate(pairs):
        structs.append(
            template("named_struct('k', CAST({0} AS STRING), 'i', {1}, 'v', {2})")(
                [pair.this, exp.Literal.number(i), _fragment(pair.expression)]
            )
        )
    array = exp.Anonymous(this="array", expressions=structs)
    if absent:
        array = template("filter({0}, __e -> __e.v IS NOT NULL)")([array])
    return _mark(_ASSEMBLE([array]), "raw")


def _json_array(sql: str, node: FlinkJson) -> exp.Expression:
    absent = _on_null(node, "ABSENT") == "ABSENT"
    values = node.expressions
    if not values:
        return _mark(exp.Literal.string("[]"), "raw")
    parts = [_fragment(v) for v in values]
    if not absent:
        parts = [exp.Coalesce(this=p, expressions=[exp.Literal.string("null")]) for p in parts]
    # concat_ws leaves NULLs out: ABSENT ON NULL
    body = exp.Anonymous(this="concat_ws", expressions=[exp.Literal.string(","), *parts])
    return _mark(
        exp.Anonymous(this="concat", expressions=[exp.Literal.string("["), body, exp.Literal.string("]")]), "raw"
    )


def _json_string(sql: str, node: FlinkJson) -> exp.Expression:
    if len(node.expressions) != 1:
        raise refuse(sql, node, f"JSON_STRING takes 1 argument: JSON_STRING(value); got {len(node.expressions)}")
    value = node.expressions[0]
    if _kind(value) == "raw":  # Flink: the JSON text of a nested JSON_OBJECT/JSON_ARRAY, as a JSON string
        return _mark(_KEY_TEXT([value]), "text")
    return _mark(_FRAGMENT([value]), "text")


# --- paths: JSON_QUERY, JSON_EXISTS, JSON_VALUE's clauses ------------------------------------------------
def _path(sql: str, node: FlinkJson) -> tuple[exp.Expression, str, bool]:
    """(json, Spark path, lax) from the call's arguments; the path allow-listed as JSON_VALUE's."""
    name = node.name.upper()
    if len(node.expressions) != 2:
        raise refuse(sql, node, f"{name} takes 2 arguments: {name}(json, path); got {len(node.expressions)}")
    json_arg, path = node.expressions
    text = _literal(path)
    if text is None:
        raise refuse(sql, node, f"{name}(json, path): the path must be a string literal such as '$.a.b'")
    mode = re.match(r"^\s*(lax|strict)\s+", text, flags=re.IGNORECASE)
    body = text[mode.end() :].strip() if mode else text.strip()
    if not _JSON_PATH.fullmatch(body):
        raise refuse(
            sql,
            node,
            f"{name} path '{text}': only member and index steps are supported "
            "($.a.b, $.a[0], $['a b']); wildcards, filters and '..' are not",
        )
    spark_path = re.sub(r'\["([^"\]]*)"\]', r"['\1']", body)
    # Flink reads a path without a mode as strict (SqlJsonUtils.jsonApiCommonSyntax)
    return json_arg, spark_path, bool(mode) and mode.group(1).lower() == "lax"


def _no_error_clause(sql: str, node: FlinkJson) -> None:
    for key, on in (("on_empty", "EMPTY"), ("on_error", "ERROR")):
        if node.args.get(key) == "ERROR":
            raise refuse(
                sql,
                node,
                f"{node.name.upper()}(... ERROR ON {on}) fails the job on a message; a dagger "
                f"never stops because of its data: write NULL ON {on}"
                + (" or DEFAULT value ON " + on if node.name.upper() == "JSON_VALUE" else "")
                + (" (or FALSE/UNKNOWN ON ERROR)" if node.name.upper() == "JSON_EXISTS" else ""),
            )


# x: the value at the path as a VARIANT (SQL NULL when the JSON does not parse or the path is missing)
_AT = "variant_get(try_parse_json({0}), {1})"
_TYPE = f"schema_of_variant({_AT})"
_ABSENT = f"({_AT} IS NULL OR {_TYPE} = 'VOID')"  # no value: bad JSON, missing path, JSON null
_NON_SCALAR = f"({_TYPE} LIKE 'OBJECT%' OR {_TYPE} LIKE 'ARRAY%')"
_TEXT = "get_json_object({0}, {1})"  # Jackson's text of the value, as Flink writes it


def _json_query(sql: str, node: FlinkJson) -> exp.Expression:
    _no_error_clause(sql, node)
    returning = node.args.get("returning")
    if returning is not None and not returning.is_type(exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR):
        written = returning.sql(dialect="spark")
        raise refuse(
            sql,
            node,
            f"JSON_QUERY(... RETURNING {written}) is not supported; JSON_QUERY returns "
            "the JSON text as a STRING (RETURNING STRING)",
        )
    json_arg, path, lax = _path(sql, node)
    results = {"NULL": "NULL", None: "NULL", "EMPTY ARRAY": "'[]'", "EMPTY OBJECT": "'{}'"}
    empty, error = results[node.args.get("on_empty")], results[node.args.get("on_error")]
    wrapper = node.args.get("wrapper") or "WITHOUT"
    wrapped = f"CASE WHEN {_TYPE} = 'STRING' THEN to_json(array({_TEXT})) ELSE concat('[', {_TEXT}, ']') END"
    value = {
        "WITHOUT": f"CASE WHEN {_NON_SCALAR} THEN {_TEXT} ELSE {empty if lax else error} END",
        "CONDITIONAL": f"CASE WHEN {_TYPE} LIKE 'ARRAY%' THEN {_TEXT} ELSE {wrapped} END",
        "UNCONDITIONAL": wrapped,
    }[wrapper]
    text = f"CASE WHEN {{0}} IS NULL THEN NULL WHEN {_ABSENT} THEN {empty if lax else error} ELSE {value} END"
    return _mark(template(text)([json_arg, exp.Literal.string(path)]), "text")


def _json_exists(sql: str, node: FlinkJson) -> exp.Expression:
    _no_error_clause(sql, node)
    json_arg, path, lax = _path(sql, node)
    error = (
        "false"
        if lax
        else {"TRUE": "true", "FALSE": "false", "UNKNOWN": "NULL", None: "false"}[node.args.get("on_error")]
    )
    return template(f"CASE WHEN {{0}} IS NULL THEN NULL WHEN {_ABSENT} THEN {error} ELSE true END")(
        [json_arg, exp.Literal.string(path)]
    )


_RETURNING = {
    exp.DataType.Type.TEXT: "STRING",
    exp.DataType.Type.VARCHAR: "STRING",
    exp.DataType.Type.INT: "INT",
    exp.DataType.Type.DOUBLE: "DOUBLE",
    exp.DataType.Type.BOOLEAN: "BOOLEAN",
}
# the value as the RETURNING type where Flink 1.20 gives it (a JSON integer within INT's range for
# INT, a JSON number with a fraction or exponent for DOUBLE, a JSON boolean for BOOLEAN); Flink
# fails the job on any other (a ClassCastException), here the ON ERROR behaviour applies
_TYPED_VALUE = {
    "INT": (
        f"{_TYPE} = 'BIGINT' AND CAST({_TEXT} AS BIGINT) BETWEEN -2147483648 AND 2147483647",
        f"CAST({_TEXT} AS INT)",
    ),
    "DOUBLE": (
        f"({_TYPE} = 'DOUBLE' OR ({_TYPE} LIKE 'DECIMAL%' AND {_TYPE} NOT LIKE '%,0)'))",
        f"CAST({_TEXT} AS DOUBLE)",
    ),
    "BOOLEAN": (f"{_TYPE} = 'BOOLEAN'", f"{_TEXT} = 'true'"),
}


def _json_value(sql: str, node: FlinkJson) -> exp.Expression:
    plain = json_value_plain
    _no_error_clause(sql, node)
    returning = node.args.get("returning")
    kind = "STRING"
    if returning is not None:
        kind = _RETURNING.get(returning.this)
        if kind is None or (returning.expressions and kind != "STRING"):
            written = returning.sql(dialect="spark")
            raise refuse(
                sql,
                node,
                f"JSON_VALUE(... RETURNING {written}) is not supported (Flink 1.20 "
                "returns STRING, INT, DOUBLE or BOOLEAN); write RETURNING INT, DOUBLE, BOOLEAN "
                "or STRING, or CAST the STRING",
            )
    json_arg, path, lax = _path(sql, node)
    spark_path = exp.Literal.string(path)

    def outcome(key: str) -> exp.Expression:
        if node.args.get(key) == "DEFAULT":
            default = node.args[key.replace("on_", "") + "_default"]
            return exp.Cast(this=default.copy(), to=exp.DataType.build(kind))
        return exp.Null()

    empty, error = outcome("on_empty"), outcome("on_error")
    if kind == "STRING":
        scalar = plain([json_arg, exp.Literal.string(path)])
        test = "true"
    else:
        test, value = _TYPED_VALUE[kind]
        scalar = template(value)([json_arg, spark_path])
    missing = "{3}" if lax else "{4}"
    return template(
        f"CASE WHEN {{0}} IS NULL THEN NULL WHEN {_ABSENT} THEN {missing} "
        f"WHEN {_NON_SCALAR} THEN {missing} WHEN {test} THEN {{2}} ELSE {{4}} END"
    )([json_arg, spark_path, scalar, empty, error])


# --- the aggregates ---------------------------------------------------------------------------------
def _agg_value(sql: str, node: exp.Expression, name: str, value: exp.Expression) -> exp.Expression:
    # Flink 1.20 takes a STRING only and inserts it unquoted, as JSON text (JSON_ARRAYAGG(vehicle_type)
    # gives [car,bike]), and refuses numbers and booleans: only values that are JSON text pass
    if _kind(value) is None:
        raise refuse(
            sql,
            node,
            f"{name} of a plain value is not supported: Flink 1.20 inserts a STRING unquoted, "
            f"which is not JSON ([car,bike]), and refuses numbers and booleans; write "
            f"{name}({'KEY k VALUE ' if name == 'JSON_OBJECTAGG' else ''}JSON_STRING(x)) for the "
            f"value as JSON, or a JSON_OBJECT(...)/JSON_ARRAY(...) or JSON_QUERY(...) value",
        )
    return value.copy()


def _json_arrayagg(sql: str, node: FlinkJson) -> exp.Expression:
    if node.args.get("order") is not None:
        raise refuse(
            sql,
            node,
            "JSON_ARRAYAGG(... ORDER BY ...) is not supported; the elements come in the order "
            "the window's messages are collected",
        )
    if len(node.expressions) != 1:
        raise refuse(sql, node, f"JSON_ARRAYAGG takes 1 argument; got {len(node.expressions)}")
    if isinstance(node.expressions[0], exp.Distinct):
        raise refuse(sql, node, "JSON_ARRAYAGG(DISTINCT ...) is not supported")
    value = _agg_value(sql, node, "JSON_ARRAYAGG", node.expressions[0])
    if _on_null(node, "ABSENT") == "ABSENT":
        built = template("concat('[', array_join(collect_list({0}), ','), ']')")([value])
    else:
        built = template("concat('[', array_join(collect_list(coalesce({0}, 'null')), ','), ']')")([value])
    return _mark(built, "text")


def _json_objectagg(sql: str, node: exp.JSONObjectAgg) -> exp.Expression:
    if node.args.get("unique_keys") or node.args.get("return_type") or node.args.get("encoding"):
        raise refuse(
            sql,
            node,
            "JSON_OBJECTAGG(... WITH UNIQUE KEYS / RETURNING) is not supported; write "
            "JSON_OBJECTAGG(KEY k VALUE v [NULL | ABSENT ON NULL])",
        )
    pairs = node.expressions
    if len(pairs) != 1 or not isinstance(pairs[0], exp.JSONKeyValue):
        raise refuse(sql, node, "JSON_OBJECTAGG takes one KEY k VALUE v pair")
    key, value = pairs[0].this, _agg_value(sql, node, "JSON_OBJECTAGG", pairs[0].expression)
    # each entry's text collected with its key, sorted by key; a NULL key is left out. Flink fails the
    # job on a repeated key; here each is written (the few transforms keep the sandbox's size bound low)
    kept = "{0} IS NOT NULL" + (" AND {1} IS NOT NULL" if _on_null(node, "NULL") == "ABSENT" else "")
    return _mark(
        template(
            f"concat('{{', array_join(transform(array_sort(collect_list(CASE WHEN {kept} THEN named_struct("
            "'k', CAST({0} AS STRING), 'e', concat(regexp_extract(to_json(array(CAST({0} AS STRING))), "
            "'(?s)^\\\\[(.*)\\\\]$', 1), ':', coalesce({1}, 'null'))) END)), __x -> __x.e), ','), '}')"
        )([key, value]),
        "text",
    )


_SCALARS = {
    "JSON_STRING": _json_string,
    "JSON_ARRAY": _json_array,
    "JSON_QUERY": _json_query,
    "JSON_EXISTS": _json_exists,
    "JSON_VALUE": _json_value,
    "JSON_ARRAYAGG": _json_arrayagg,
}
NODES = (FlinkJson, exp.JSONObject, exp.JSONObjectAgg)


def rewrite(sql: str, node: exp.Expression, budget) -> exp.Expression:
    """The Spark form of one Flink JSON node (flink.normalise replaces it, innermost first)."""
    budget.before(list(node.iter_expressions()), node)
    if isinstance(node, exp.JSONObjectAgg):
        return _json_objectagg(sql, node)
    if isinstance(node, exp.JSONObject):
        return _json_object(sql, node)
    return _SCALARS[node.name.upper()](sql, node)


# --- MAP_UNION ---------------------------------------------------------------------------------------
def _map_union(args: list[exp.Expression]) -> exp.Expression:
    # Flink: NULL when any map is NULL; a key of a later map replaces an earlier one's value, in
    # the earlier one's place. map_concat does the same under spark.sql.mapKeyDedupPolicy=LAST_WIN,
    # which dagger_runtime.session sets (under Spark's default a repeated key fails the query:
    # never a silent difference)
    nulls = " OR ".join(f"{{{i}}} IS NULL" for i in range(len(args)))
    concat = ", ".join(f"{{{i}}}" for i in range(len(args)))
    return template(f"CASE WHEN {nulls} THEN NULL ELSE map_concat({concat}) END")(args)


register(DaggerFunction("MAP_UNION", ("map", "..."), build=_map_union, optional=1, variadic=True))


# --- JSON_VALUE(json, path): the plain form (flink.py registers it) --------------------------------
# Member and index steps only. An index fits Spark's int (variant_get parses it as one: a larger
# one passes validation, then fails every message); digits are ASCII (Python's \d also takes '٣',
# Java's does not); a quoted key has a character other than space, holds no '*' (get_json_object
# finds nothing for '*', ' ' or '' where Flink does), and a double-quoted one no ' (rewritten to
# the single-quoted form Spark reads).
_JSON_PATH = re.compile(
    r"""\$(?:\.[A-Za-z_][A-Za-z0-9_]*|\[(?:0|[1-9][0-9]{0,8})\]"""
    r"""|\['[^'\]*]*[^'\]*\s][^'\]*]*'\]|\["[^"'\]*]*[^"'\]*\s][^"'\]*]*"\])*""",
    re.ASCII,
)


def json_value_plain(args: list[exp.Expression]) -> exp.Expression:
    """JSON_VALUE(json, path) without clauses: Spark's get_json_object on an allow-listed path."""
    json, path = args
    text = string_literal(path)
    if text is None:
        raise QueryError("refused: JSON_VALUE(json, path): the path must be a string literal such as '$.a.b'")
    body = re.sub(r"^\s*(lax|strict)\s+", "", text, flags=re.IGNORECASE).strip()
    if not _JSON_PATH.fullmatch(body):
        raise QueryError(
            f"refused: JSON_VALUE path '{text}': only member and index steps are supported "
            "($.a.b, $.a[0], $['a b']); wildcards, filters and '..' are not"
        )
    spark_path = re.sub(r'\["([^"\]]*)"\]', r"['\1']", body)
    spark = exp.Literal.string(spark_path)
    # Flink returns scalars only: an object or an array gives NULL (Spark's get_json_object returns
    # its JSON text); numbers, strings, booleans are rendered as Spark's get_json_object does, the
    # same as Flink's Jackson (1.50 -> 1.5, 1e3 -> 1000.0)
    return template("""
      CASE WHEN schema_of_variant(variant_get(try_parse_json({0}), {1})) LIKE 'OBJECT%'
             OR schema_of_variant(variant_get(try_parse_json({0}), {1})) LIKE 'ARRAY%' THEN NULL
           ELSE get_json_object({0}, {1}) END
    """)([json, spark])
