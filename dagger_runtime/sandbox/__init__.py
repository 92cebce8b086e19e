"""The query sandbox: what an analyst's SQL may do, checked twice by two parsers that share no code.

- allowlist: the one list of what a query may call (functions, by name), read by both checks
- guard: the first check, on the analyst's SQL as sqlglot parses it (before the translation)
- plan_guard: the second, in the JVM on Spark's own plans of the translated query
  (jvm/plan-guard/.../PlanGuard.java), and what feeds it

A spelling one check misreads, the other still refuses. The Spark settings that close what
neither needs to allow are in dagger_runtime/session.py.
"""

from __future__ import annotations

from .plan_guard import check_analyzed, check_parsed, java_strings, runtime_udfs

__all__ = ["check_analyzed", "check_parsed", "java_strings", "runtime_udfs"]
