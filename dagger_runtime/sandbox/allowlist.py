"""What a dagger query may use: the one list both sandbox checks read.

Every function Spark lists (`SHOW SYSTEM FUNCTIONS`, and its table functions) is classified here
as allowed or refused with a reason; `tests/test_sql_sandbox.py` fails when Spark lists one that
is not, so a Spark upgrade cannot silently widen the sandbox. The parse-tree check
(`dagger_runtime.sandbox.guard`) reads these lists for the analyst's SQL; the JVM plan check
(`jvm/plan-guard/.../PlanGuard.java`) reads the same allowed names for the translated query.
"""

from __future__ import annotations


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# --- Spark built-ins a dagger may call, by kind -------------------------------------------------
_OPERATORS = _names("""
    ! != % & * + - / < << <= <=> <> = == > >= >> >>> ^ | || ~
    and or not in between case when like ilike rlike regexp regexp_like div mod
""")
_MATH = _names("""
    abs acos acosh asin asinh atan atan2 atanh bin bround cbrt ceil ceiling conv cos cosh cot csc
    degrees e exp expm1 factorial floor greatest hypot least ln log log10 log1p log2 negative pi
    pmod positive pow power radians rint round sec sign signum sin sinh sqrt tan tanh width_bucket
    hex unhex shiftleft shiftright shiftrightunsigned bit_count bit_get getbit isnan nanvl
    try_add try_divide try_mod try_multiply try_subtract nullifzero zeroifnull
""")
_TYPES_AND_NULLS = _names("""
    bigint binary boolean cast date decimal double float int smallint string timestamp tinyint typeof
    coalesce if ifnull isnotnull isnull nullif nvl nvl2 equal_null
""")
_STRINGS = _names("""
    ascii base64 unbase64 bit_length btrim char char_length character_length chr concat concat_ws
    contains decode encode elt endswith find_in_set format_number format_string initcap instr lcase
    left len length levenshtein locate lower lpad ltrim mask octet_length overlay position printf
    regexp_count regexp_extract regexp_extract_all regexp_instr regexp_replace regexp_substr repeat
    replace reverse right rpad rtrim sentences soundex space split split_part startswith substr
    substring substring_index to_binary to_char to_number to_varchar translate trim try_to_binary
    try_to_number ucase upper luhn_check is_valid_utf8 make_valid_utf8 validate_utf8
    try_validate_utf8 collate collation url_decode url_encode try_url_decode parse_url try_parse_url
    crc32 hash md5 sha sha1 sha2 xxhash64 aes_decrypt try_aes_decrypt
""")
_TIME = _names("""
    add_months convert_timezone date_add date_diff date_format date_from_unix_date date_part date_sub
    date_trunc dateadd datediff datepart day dayname dayofmonth dayofweek dayofyear extract
    from_unixtime from_utc_timestamp hour last_day make_date make_dt_interval make_interval
    make_timestamp make_timestamp_ltz make_timestamp_ntz make_ym_interval minute month monthname
    months_between next_day quarter second timestamp_micros timestamp_millis timestamp_seconds
    to_date to_timestamp to_timestamp_ltz to_timestamp_ntz to_unix_timestamp to_utc_timestamp trunc
    try_make_interval try_make_timestamp try_make_timestamp_ltz try_make_timestamp_ntz
    try_to_timestamp unix_date unix_micros unix_millis unix_seconds unix_timestamp weekday weekofyear
    year window session_window window_time current_timezone
""")
_COLLECTIONS = _names("""
    aggregate array array_append array_compact array_contains array_distinct array_except
    array_insert array_intersect array_join array_max array_min array_position array_prepend
    array_remove array_repeat array_size array_sort array_union arrays_overlap arrays_zip cardinality
    element_at exists filter flatten forall get map map_concat map_contains_key map_entries
    map_filter map_from_arrays map_from_entries map_keys map_values map_zip_with named_struct reduce
    sequence size slice sort_array str_to_map struct transform transform_keys transform_values
    try_element_at zip_with
""")
_JSON_CSV_VARIANT = _names("""
    from_csv from_json get_json_object json_array_length json_object_keys json_tuple schema_of_csv
    schema_of_json to_csv to_json is_variant_null parse_json try_parse_json schema_of_variant
    schema_of_variant_agg to_variant_object try_variant_get variant_get
""")
# generators: in the SELECT list or LATERAL VIEW, never as a table in FROM
_GENERATORS = _names("""
    explode explode_outer inline inline_outer posexplode posexplode_outer stack json_tuple
    variant_explode variant_explode_outer
""")
_AGGREGATES = _names("""
    any any_value approx_count_distinct approx_percentile array_agg avg bit_and bit_or bit_xor
    bitmap_bit_position bitmap_bucket_number bitmap_construct_agg bitmap_count bitmap_or_agg bool_and
    bool_or collect_list collect_set corr count count_if count_min_sketch covar_pop covar_samp every
    first first_value grouping grouping_id histogram_numeric hll_sketch_agg hll_sketch_estimate
    hll_union hll_union_agg kurtosis last last_value listagg max max_by mean median min min_by mode
    percentile percentile_approx percentile_cont percentile_disc regr_avgx regr_avgy regr_count
    regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy skewness some std stddev stddev_pop
    stddev_samp string_agg sum try_avg try_sum var_pop var_samp variance
""")
_WINDOW_FUNCTIONS = _names("cume_dist dense_rank lag lead nth_value ntile percent_rank rank row_number")

ALLOWED_SPARK_FUNCTIONS: frozenset[str] = (
    _OPERATORS
    | _MATH
    | _TYPES_AND_NULLS
    | _STRINGS
    | _TIME
    | _COLLECTIONS
    | _JSON_CSV_VARIANT
    | _GENERATORS
    | _AGGREGATES
    | _WINDOW_FUNCTIONS
)

# --- Spark built-ins a dagger may not call, each with the reason the analyst is told -------------
_JVM = "calls any Java method in the cluster's JVM"
_FILES = "reveals the paths of the files the cluster reads"
_CLUSTER = "reveals the cluster's catalog, user or version"
_PROCESSING_TIME = (
    "reads the clock of the machine: a dagger runs on event time (use rowtime), "
    "so that a replayed window gives the same result"
)
_RANDOM = "gives a different value on every run, so a replayed window would give another result"
_PARTITIONING = "depends on how Spark partitions the data, so a replayed window would give another result"
_STOPS = "stops the job on a value; a dagger never stops because of its data"
_XML = "parses XML with Java's XML parser; XML is not part of the dagger dialect"
_NOT_IN_RUNTIME = "needs a Spark module the dagger runtime does not ship (Avro)"
_PROTOBUF = "reads a descriptor file by path; a dagger's protobuf decoding comes from the job's schema"
_TABLE_FUNCTION = "is a table function; a dagger query reads only its own streams"

REFUSED_SPARK_FUNCTIONS: dict[str, str] = {
    **dict.fromkeys(("reflect", "java_method", "try_reflect"), _JVM),
    **dict.fromkeys(("input_file_name", "input_file_block_start", "input_file_block_length"), _FILES),
    **dict.fromkeys(
        ("current_catalog", "current_database", "current_schema", "current_user", "user", "session_user", "version"),
        _CLUSTER,
    ),
    # Flink's clock functions too (CURRENT_TIME, LOCALTIME, CURRENT_ROW_TIMESTAMP(), PROCTIME())
    **dict.fromkeys(
        (
            "current_timestamp",
            "now",
            "current_date",
            "curdate",
            "localtimestamp",
            "current_time",
            "localtime",
            "current_row_timestamp",
            "proctime",
        ),
        _PROCESSING_TIME,
    ),
    "current_watermark": (
        "depends on when the engine moves its watermark, which a replay does not repeat; "
        "Spark moves a query's watermark between batches, never within one. Compare rowtime "
        "with the window instead, or let the watermark drop late messages"
    ),
    **dict.fromkeys(("rand", "randn", "random", "randstr", "uniform", "uuid", "shuffle"), _RANDOM),
    # AES-GCM and CBC draw a random initialisation vector
    "aes_encrypt": _RANDOM,
    **dict.fromkeys(("monotonically_increasing_id", "spark_partition_id"), _PARTITIONING),
    **dict.fromkeys(("assert_true", "raise_error"), _STOPS),
    **dict.fromkeys(
        (
            "xpath",
            "xpath_boolean",
            "xpath_double",
            "xpath_float",
            "xpath_int",
            "xpath_long",
            "xpath_number",
            "xpath_short",
            "xpath_string",
            "from_xml",
            "schema_of_xml",
            "to_xml",
        ),
        _XML,
    ),
    **dict.fromkeys(("from_avro", "to_avro", "schema_of_avro"), _NOT_IN_RUNTIME),
    **dict.fromkeys(("from_protobuf", "to_protobuf"), _PROTOBUF),
    **dict.fromkeys(("range", "collations", "sql_keywords"), _TABLE_FUNCTION),
}

# Spark functions allowed with some arguments only: (name, argument count) -> reason
REFUSED_CALLS: dict[tuple[str, int], str] = {
    ("unix_timestamp", 0): "without arguments " + _PROCESSING_TIME,
}


def classify(name: str) -> str | None:
    """None when a Spark function may be called, else why not; unknown names are refused."""
    key = name.lower()
    if key in ALLOWED_SPARK_FUNCTIONS:
        return None
    return REFUSED_SPARK_FUNCTIONS.get(key, "is not a function a dagger query may call")


# --- What a dagger query's constants and shape may cost (dagger_runtime.validate, ConstantGuard) --
# Spark evaluates constant expressions in the driver while it plans the query: past these caps a
# query is refused instead of running the driver out of heap or holding it for hours.
MAX_STRING_LITERAL = 1_048_576  # characters (or bytes) of one literal: 1 MB
MAX_CONSTANT_COUNT = 100_000  # a constant count, length or position: repeat, space, lpad/rpad,
# array_repeat, array_insert, sequence's elements, printf widths
MAX_CONSTANT_SIZE = 16_777_216  # what one constant expression may build, nested sizes multiplied
MAX_NESTING_DEPTH = 400  # levels of the query's tree (each AND/OR of a chain is one)
MAX_PAREN_DEPTH = 40  # parentheses (calls included) inside one another
MAX_JSON_PATH = 1_024  # characters of a literal JSON path
MAX_JSON_PATH_NESTING = 32  # brackets and parentheses inside one another in a JSON path
CONSTANT_FOLDING_BUDGET_S = 10.0  # Spark's optimizer (constant folding) at validation: its CPU time
REGEX_STEP_BUDGET = 200_000  # steps java.util.regex may take on a pumped text of
REGEX_PUMP_LENGTH = 24  # this many characters, per constant regex
MAX_REGEX_LENGTH = 10_000  # characters of one constant regex or LIKE pattern
MAX_QUERY_TEXT = 262_144  # characters of the query's text, checked before it is parsed

__all__ = [
    "ALLOWED_SPARK_FUNCTIONS",
    "REFUSED_CALLS",
    "REFUSED_SPARK_FUNCTIONS",
    "classify",
    "MAX_STRING_LITERAL",
    "MAX_CONSTANT_COUNT",
    "MAX_CONSTANT_SIZE",
    "MAX_NESTING_DEPTH",
    "MAX_PAREN_DEPTH",
    "MAX_JSON_PATH",
    "MAX_JSON_PATH_NESTING",
    "CONSTANT_FOLDING_BUDGET_S",
    "REGEX_STEP_BUDGET",
    "REGEX_PUMP_LENGTH",
    "MAX_REGEX_LENGTH",
    "MAX_QUERY_TEXT",
]
