"""What a query's constants may cost, checked before Spark evaluates them: the caps on counts and
sizes (ConstantGuard.java on the analysed plan), regexes that would backtrack for hours
(sql.regexes, then a step budget), Spark's constant folding under a time budget, and a constant
that fails said as a refusal of the analyst's call, at its line and column."""

from __future__ import annotations

import re

from py4j.protocol import Py4JError, Py4JJavaError

from .errors import QueryError
from .sandbox import allowlist


def check_constants(spark, analyzed, query) -> None:
    """What the query's constants would cost Spark's driver, before its optimizer evaluates them:
    counts and sizes within allowlist's caps (ConstantGuard.java), and every regex given as a
    constant, however it is spelt or built (concat of literals...), checked for catastrophic
    backtracking: statically (sql.regexes) and on pumped texts under a step budget."""
    from pyspark.errors import PySparkException

    guard = spark._jvm.dev.daggers.runtime.ConstantGuard
    try:  # it evaluates constant counts: under the same time budget as the optimizer
        checked = guard.check(
            analyzed,
            allowlist.MAX_STRING_LITERAL,
            allowlist.MAX_CONSTANT_COUNT,
            allowlist.MAX_CONSTANT_SIZE,
            int(allowlist.CONSTANT_FOLDING_BUDGET_S * 1000),
        )
        items = [str(i).split("\0", 2) for i in checked]
    except (Py4JError, PySparkException) as e:
        raise _folding_refusal(e, query, analyzed, spark) from None
    for kind, function, text in items:
        if kind == "refuse":
            raise refuse_call(query, function, f"{{call}}(): {text}")
    check_regexes(spark, items, query)


def check_regexes(spark, items, query) -> None:
    """Each ("regex", function, pattern) of items checked for catastrophic backtracking: the shapes
    sql.regexes names, then the pattern run on pumped texts under a step budget in the JVM."""
    from .sql import regexes

    guard = spark._jvm.dev.daggers.runtime.ConstantGuard
    for kind, function, pattern in items:
        if kind != "regex":
            continue
        shown = pattern if len(pattern) <= 60 else pattern[:60] + "..."
        if len(pattern) > allowlist.MAX_REGEX_LENGTH:
            raise refuse_call(
                query,
                function,
                f"the regex '{shown}' of {{call}}() has {len(pattern):,} characters; "
                f"a regex may have at most {allowlist.MAX_REGEX_LENGTH:,}",
                literal=pattern,
            )
        invalid = guard.regexError(pattern)
        if invalid is not None:
            raise refuse_call(
                query,
                function,
                f"{{call}}() fails on its constant arguments, so it would fail on "
                f"every row: the regex '{shown}' is not valid: {invalid}",
                literal=pattern,
            )
        why = regexes.problem(pattern)
        if why is None:
            slow = guard.regexProblem(pattern, allowlist.REGEX_PUMP_LENGTH, allowlist.REGEX_STEP_BUDGET)
            if slow is not None:
                why = (
                    f"java.util.regex took more than {allowlist.REGEX_STEP_BUDGET:,} steps on the "
                    f"{len(slow)}-character text {slow[:40]!r}, and takes far longer on longer texts; "
                    "make each character matchable in one way only"
                )
        if why:
            raise refuse_call(
                query, function, f"the regex '{shown}' of {{call}}() would backtrack for hours: {why}", literal=pattern
            )


def optimize(spark, analyzed, query):
    """Spark's optimizer on the analysed plan, under CONSTANT_FOLDING_BUDGET_S: it evaluates the
    query's constant expressions, whose failures are said as refusals of the analyst's call."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    guard = spark._jvm.dev.daggers.runtime.ConstantGuard
    try:
        return guard.optimize(spark._jsparkSession, analyzed, int(allowlist.CONSTANT_FOLDING_BUDGET_S * 1000))
    except (Py4JJavaError, PySparkException) as e:
        raise _folding_refusal(e, query, analyzed, spark) from None


def _folding_refusal(e, query, analyzed, spark) -> QueryError:
    """A failure while constants were evaluated (checked or folded): past the time budget, or
    Spark's error (out of memory included), as a refusal."""
    if not isinstance(e, Py4JJavaError) and type(e).__module__.startswith("py4j"):
        return QueryError(
            f"refused: Spark could not check the query's constants: {str(e).splitlines()[0]}", sql=query.source
        )
    text = _java_message(e)
    if "TimeoutException" in _java_class(e) or text.startswith("Spark took longer than"):
        return QueryError(
            f"refused: {text}; a dagger's constants must be cheap to compute (no long "
            "strings compared or searched in constants)",
            sql=query.source,
        )
    return spark_failure(e, query, analyzed, spark)


def _java_class(e) -> str:
    if isinstance(e, Py4JJavaError):
        return str(e.java_exception.getClass().getName())
    return type(e).__name__


def _java_message(e) -> str:
    from py4j.protocol import Py4JJavaError

    if isinstance(e, Py4JJavaError):
        text = e.java_exception.getMessage() or e.java_exception.toString()
    else:
        text = str(e)
    return str(text).strip().split("\n")[0].split(" SQLSTATE")[0]


def spark_failure(e, query, analyzed=None, spark=None) -> QueryError:
    """A Spark error while analysing or optimizing (evaluating constants): the function whose
    constant arguments fail, pointed at in the analyst's SQL, as a refusal."""
    message = _java_message(e)
    failing = []
    if analyzed is not None and spark is not None:
        try:
            failing = list(spark._jvm.dev.daggers.runtime.ConstantGuard.failingConstant(analyzed))
        except Exception:  # noqa: BLE001 - the message below still says what Spark said
            failing = []
    if "OutOfMemoryError" in _java_class(e) or "OutOfMemoryError" in message:
        return QueryError(
            "refused: evaluating the query's constants ran Spark's driver out of memory; build smaller constants",
            sql=query.source,
        )
    if "StackOverflowError" in _java_class(e) or "StackOverflowError" in message:
        return QueryError(
            "refused: the query is nested too deeply for Spark (its stack overflowed); split "
            "long AND/OR chains or nested calls",
            sql=query.source,
        )
    if failing:
        function, why = failing[0], failing[1].split("\n")[0].split(" SQLSTATE")[0]
        return refuse_call(
            query, function, f"{{call}}() fails on its constant arguments, so it would fail on every row: {_plain(why)}"
        )
    return QueryError(f"refused: Spark cannot evaluate the query's constants: {_plain(message)}", sql=query.source)


def _plain(text: str) -> str:
    """Spark's message without its [ERROR_CLASS] prefix."""
    return re.sub(r"^\[[A-Z_.]+\]\s*", "", text)


def _shown_name(function: str) -> str:
    return {"__dartcontains4": "DartContains", "__dartget4": "DartGet"}.get(function.lower(), function)


# the analyst's spellings of a Spark function, for pointing at a call Spark names
_SPELLINGS = {
    "rlike": {"rlike", "regexp", "regexp_like", "regexplike", "similarto", "similar_to"},
    "like": {"like"},
    "ilike": {"ilike"},
    "printf": {"printf", "format_string"},
    "format_string": {"printf", "format_string"},
    "__dartcontains4": {"dartcontains"},
    "__dartget4": {"dartget"},
    "split": {"split", "regexpsplit", "regexp_split"},
}


def _translates_to(query, node, function: str) -> bool:
    """Whether the analyst's call `node`, translated alone, calls Spark's `function`."""

    from sqlglot import exp

    from .sql import functions

    wrapper = exp.Select(expressions=[node.copy()])
    try:
        from .sql import flink  # the Flink built-ins' translations, when present

        flink.normalise(query.source, wrapper)
    except Exception:  # noqa: BLE001 - the call as written
        wrapper = exp.Select(expressions=[node.copy()])
    try:
        functions.rewrite(query.source, wrapper)
        text = wrapper.sql(dialect="spark", comments=False)
    except Exception:  # noqa: BLE001 - a call that cannot be translated alone is not the one
        return False
    return re.search(rf"\b{re.escape(function)}\s*\(", text, re.IGNORECASE) is not None


def refuse_call(query, function: str, message: str, literal: str | None = None) -> QueryError:
    """A refusal of a call Spark names, pointed at the analyst's first call of that name (the
    one with `literal` among its arguments when there is one)."""
    from sqlglot import exp

    from .sandbox.guard import function_name
    from .sql.positions import locate

    names = _SPELLINGS.get(function.lower(), {function.lower()})
    calls = []
    for node in query.tree.walk():
        if isinstance(node, exp.Anonymous):
            name = str(node.this).lower()
        elif isinstance(node, (exp.Func, exp.Like, exp.ILike)) or type(node).__name__ in ("RegexpLike", "SimilarTo"):
            name = type(node).__name__.lower()
            if isinstance(node, exp.Func) and not isinstance(node, (exp.And, exp.Or)):
                try:
                    name = function_name(node).lower()
                except Exception:  # noqa: BLE001 - a node sqlglot cannot print alone
                    pass
        else:
            continue
        if name in names or type(node).__name__.lower() in names:
            calls.append(node)
    if not calls:  # a call sqlglot models otherwise (element_at as a subscript): by how Spark would read it
        prefix = function.upper() + "("
        calls = [
            n
            for n in query.tree.walk()
            if isinstance(n, (exp.Func, exp.Bracket)) and n.sql(dialect="spark", comments=False).startswith(prefix)
        ]
    if not calls:  # a Flink function the translation writes with this Spark one: the smallest such call
        calls = sorted(
            (n for n in query.tree.walk() if isinstance(n, exp.Func) and _translates_to(query, n, function)),
            key=lambda n: len(n.sql(comments=False)),
        )[:1]
    if literal is not None:
        with_literal = [
            c for c in calls if any(isinstance(a, exp.Literal) and a.this == literal for a in c.iter_expressions())
        ]
        calls = with_literal or calls
    line, col = locate(query.source, calls[0]) if calls else (None, None)
    call = _shown_name(function)
    if calls and isinstance(calls[0], (exp.Func, exp.Bracket)) and line is not None:
        # the name as the analyst wrote it there (space, not the repeat sqlglot reads it as)
        written = re.match(r"`?([A-Za-z_][A-Za-z0-9_]*)`?\s*\(", query.source.splitlines()[line - 1][col - 1 :])
        call = written.group(1) if written else call
    return QueryError(f"refused: {message.replace('{call}', call)}", line=line, col=col, sql=query.source)
