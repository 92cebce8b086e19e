"""The regex syntax a topic pattern may use: an allow-list, checked before Java sees the pattern.

MirrorMaker 2 joins a flow's patterns with '|' into one java.util.regex (DefaultTopicFilter), so
anything in one pattern that acts beyond its own text (an inline flag `(?i)`, `(?x)` and its `#`
comments, `\\Q` quoting, an unbalanced bracket) changes what the other patterns match. Rather than
list what to refuse, this takes only what a topic filter needs:

    topic-name characters   A-Z a-z 0-9 _ -   (and \\. for a literal dot)
    any character           .                 \\d  \\w
    a character class       [a-z0-9_.-]  [^...]  (letters, digits, _ . - and ranges a-z, A-Z, 0-9)
    groups                  ( )  (?: )        alternation  |
    repetition              *  +  ?  {n}      (no {n,m}: MirrorMaker splits its setting on ',')
    anchors                 ^ at the start, $ at the end of a pattern

A pattern so made is self-contained, so the joined pattern matches exactly the union of its parts.
It must also match in bounded time (MirrorMaker runs it on every topic of the source cluster):
no repetition of something that itself holds a quantifier or alternatives (`(a*)*`, `(a|a)*`,
`(a?){30}`, the catastrophic-backtracking shapes), and a bound on the ways a backtracking matcher
may try (the pattern's cost: each `*`/`+` multiplies it by a name's length, each `?` adds a try,
alternatives add up, a sequence multiplies), so `a?a?a?...` or `(a|b)(a|b)...` written out are
refused too. The bound is what real patterns need and a little more: the committed specs' and the
catalogue's patterns have one '*' (cost NAME_LENGTH), the bound allows two; three '*' in a row made
Java's checker run out its step budget on each stress name (seconds a pattern). A spec's patterns
together have a budget too (MAX_SPEC_PATTERNS, MAX_SPEC_COST: infra/topics.py checks it before
Java sees any), so many patterns each just under the bound cannot add up to minutes either.
Pure: the text in, the first problem (or the cost) out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from string import ascii_letters, digits

TOPIC_CHARS = frozenset(ascii_letters + digits + "_-")
ESCAPES = {".": "a literal dot", "-": "a literal '-'", "_": "a literal '_'", "d": "a digit", "w": "a word character"}
NAME_LENGTH = 250  # a topic name is at most 249 characters: what one '*' may try
# Two '*' in a row, or one with '?' and alternatives. Real patterns need NAME_LENGTH (one '*': every
# committed spec, accepted fixture and catalogue default); NAME_LENGTH ** 3 (three '*') kept Java's
# checker at its full step budget on every stress name of such a pattern
MAX_COST = NAME_LENGTH**2
# A spec's patterns together (every kafka[i].topics, or the catalogue's defaults): at most this many,
# and at most this much cost summed (four patterns at MAX_COST, or a hundred with one '*' each)
MAX_SPEC_PATTERNS = 100
MAX_SPEC_COST = 4 * MAX_COST
MAX_GROUP_DEPTH = 8
MAX_COUNT = 249  # {n}: no topic name is longer
ALLOWED = (
    "topic-name characters (letters, digits, '_', '-'), '\\.' for a dot, and . \\d \\w [...] [^...] ( ) (?: ) "
    "| * + ? {n}, ^ at the start and $ at the end"
)


class PatternRefused(ValueError):
    def __init__(self, index: int, why: str):
        self.index, self.why = index, why
        super().__init__(f"{why} (at index {index})")


@dataclass
class _Part:
    repeats: bool = False  # holds a quantifier (*, +, ?, {n})
    alternates: bool = False  # holds a '|'
    empty: bool = True  # matches nothing but the empty string (no atom)
    cost: int = 1  # how many ways a backtracking matcher may try it (see the docstring)


class _Parser:
    def __init__(self, text: str):
        self.text, self.i = text, 0

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def refuse(self, why: str, at: int | None = None):
        raise PatternRefused(self.i if at is None else at, why)

    def pattern(self) -> int:
        """The pattern's cost, or PatternRefused."""
        if self.peek() == "^":
            self.i += 1
        part = self.alternation(0, None)
        if self.peek() == "$":
            self.i += 1
        if self.i < len(self.text):
            ch = self.text[self.i]
            if ch == ")":
                self.refuse("')' closes a group that was never opened")
            self.refuse(
                f"{ch!a} is allowed only at the {'start' if ch == '^' else 'end'} of a pattern"
                if ch in "^$"
                else f"{ch!a} is not allowed here"
            )
        if part.empty:
            self.refuse("the pattern matches only the empty name", 0)
        if part.cost > MAX_COST:
            self.refuse(
                "too many ways to match a name for a backtracking matcher: each '*' or '+' multiplies the "
                "work by a name's length, each '?' or alternative adds to it (at most two '*' or '+', "
                "fewer with '?' and '|'): split it into several patterns",
                0,
            )
        return part.cost

    def alternation(self, depth: int, open_at: int | None) -> _Part:
        out = _Part()
        while True:
            start = self.i
            branch = self.sequence(depth)
            if open_at is not None and not self.peek():
                self.refuse("'(' is never closed with ')'", open_at)
            if branch.empty:
                self.refuse(
                    "an empty alternative ('|' with nothing on one side, or '()') matches the empty name; remove it",
                    start,
                )
            out.repeats |= branch.repeats
            out.alternates |= branch.alternates
            out.cost = branch.cost if out.empty else out.cost + branch.cost
            out.empty = False
            if self.peek() != "|":
                return out
            out.alternates = True
            self.i += 1

    def sequence(self, depth: int) -> _Part:
        out = _Part()
        while self.peek() and self.peek() not in "|)$":
            start = self.i
            atom = self.atom(depth)
            self.quantifier(atom, start)
            out.repeats |= atom.repeats
            out.alternates |= atom.alternates
            out.cost = min(out.cost * atom.cost, MAX_COST + 1)
            out.empty = False
        if self.peek() == "$" and self.i != len(self.text) - 1:
            self.refuse("'$' is allowed only at the end of a pattern")
        return out

    def atom(self, depth: int) -> _Part:
        ch, at = self.peek(), self.i
        if ch in TOPIC_CHARS or ch == ".":
            self.i += 1
            return _Part(empty=False)
        if ch == "\\":
            self.escape()
            return _Part(empty=False)
        if ch == "[":
            self.char_class()
            return _Part(empty=False)
        if ch == "(":
            return self.group(depth)
        if ch in "*+?{":
            self.refuse(f"{ch!a} repeats nothing (at the start of a pattern, a group or an alternative)")
        if ch == "^":
            self.refuse("'^' is allowed only at the start of a pattern")
        if ch == "]":
            self.refuse("']' closes a character class that was never opened")
        if ch == "#":
            self.refuse(
                "'#' is not a topic-name character (with (?x) it starts a comment that hides the rest of "
                "the joined pattern)"
            )
        if ch == " ":
            self.refuse("a space is not a topic-name character")
        self.refuse(f"{ch!a} is not a topic-name character nor allowed regex syntax", at)

    def escape(self) -> None:
        nxt = self.text[self.i + 1 : self.i + 2]
        if nxt in ("Q", "E"):
            self.refuse(
                f"'\\{nxt}' quoting is not allowed: an unclosed \\Q quotes the next patterns too once "
                "MirrorMaker 2 joins them with '|'; write a dot as '\\.'"
            )
        if not nxt or nxt not in ESCAPES:
            self.refuse(
                f"'\\{nxt}' is not allowed: the escapes a topic pattern may use are "
                f"{', '.join(chr(92) + e for e in ESCAPES)}"
            )
        self.i += 2

    def char_class(self) -> None:
        open_at = self.i
        self.i += 1
        if self.peek() == "^":
            self.i += 1
        first, items = self.i, 0
        while True:
            ch = self.peek()
            if not ch:
                self.refuse("'[' is never closed with ']'", open_at)
            if ch == "]":
                if not items:
                    self.refuse("an empty character class", open_at)
                self.i += 1
                return
            if ch == "\\":
                self.escape()
            elif ch == "-":
                if not self.text[self.i + 1 : self.i + 2]:
                    self.refuse("'[' is never closed with ']'", open_at)
                if self.i != first and self.text[self.i + 1 : self.i + 2] != "]":
                    self.refuse(
                        "'-' inside [...] is a range between two letters or digits, or a literal '-' first or last"
                    )
                self.i += 1
            elif ch in TOPIC_CHARS or ch == ".":
                if self.text[self.i + 1 : self.i + 2] == "-" and self.text[self.i + 2 : self.i + 3] not in ("]", ""):
                    self.range(ch, self.text[self.i + 2])
                    self.i += 3
                else:
                    self.i += 1
            else:
                self.refuse(
                    f"{ch!a} is not allowed in a character class (letters, digits, '_', '.', '-', ranges "
                    "and \\d \\w; no nested [...], && or other characters)"
                )
            items += 1

    def range(self, low: str, high: str) -> None:
        same_kind = any(
            low in s and high in s for s in ("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", digits)
        )
        if not same_kind or low > high:
            self.refuse(
                f"the range {low}-{high} is not allowed: ranges go up within lowercase letters, uppercase "
                "letters or digits (a-z, A-Z, 0-9)"
            )

    def group(self, depth: int) -> _Part:
        open_at = self.i
        if depth >= MAX_GROUP_DEPTH:
            self.refuse(f"groups nested more than {MAX_GROUP_DEPTH} deep")
        self.i += 1
        if self.peek() == "?":
            if self.text[self.i + 1 : self.i + 2] != ":":
                self.refuse(self._why_not_group(self.text[self.i + 1 : self.i + 2]), open_at)
            self.i += 2
        inner = self.alternation(depth + 1, open_at) if self.peek() != ")" else _Part()
        if inner.empty:
            self.refuse("an empty group '()' matches the empty name; remove it", open_at)
        if self.peek() != ")":
            self.refuse("'(' is never closed with ')'", open_at)
        self.i += 1
        return inner

    @staticmethod
    def _why_not_group(kind: str) -> str:
        if kind in ("=", "!", "<", "P"):
            return "lookarounds and named groups are not allowed: only ( ) and (?: ) group"
        if kind == "#":
            return "a comment (?#...) is not allowed"
        return (
            "an inline flag such as (?i) or (?x) is not allowed: MirrorMaker 2 joins the patterns with '|', so "
            "the flag would change every pattern after it (case, comments); only ( ) and (?: ) group"
        )

    def quantifier(self, atom: _Part, start: int) -> None:
        ch = self.peek()
        if ch not in ("*", "+", "?", "{"):
            return
        many = ch != "?"
        if ch == "{":
            end = self.text.find("}", self.i)
            count = self.text[self.i + 1 : end] if end > 0 else ""
            if not count.isdigit() or not count.isascii() or len(count) > 3 or int(count) > MAX_COUNT:
                self.refuse(
                    f"a count is {{n}} with n from 0 to {MAX_COUNT} ({{n,m}} is not possible: MirrorMaker 2 "
                    "splits its topics setting on ','; repeat the item instead)"
                )
            many = int(count) > 1
            self.i = end + 1
        else:
            self.i += 1
        if self.peek() in ("*", "+", "?", "{"):
            self.refuse("a quantifier after a quantifier (lazy *?, possessive *+ or a double *): write one")
        if many and atom.repeats:
            self.refuse(
                "repeating a group that holds a quantifier, such as (a*)*, (a?){30} or (x-(a|b)*)*, makes "
                "the matcher backtrack exponentially on a name that almost matches (catastrophic "
                "backtracking): repeat the inner part only",
                start,
            )
        if many and atom.alternates:
            self.refuse(
                "repeating a group with alternatives, such as (a|b)*, can backtrack exponentially: use a "
                "character class [ab]* or list the alternatives as separate patterns",
                start,
            )
        if ch in "*+":
            atom.cost = min(atom.cost * NAME_LENGTH, MAX_COST + 1)
        elif ch == "?":
            atom.cost += 1
        atom.repeats = True


def problem(pattern: str) -> str | None:
    """Why `pattern` is refused as a topic pattern (the allow-list above), or None."""
    try:
        _Parser(pattern).pattern()
    except PatternRefused as e:
        return f"{pattern!a} is refused: {e.why} (index {e.index}); a topic pattern may use {ALLOWED}"
    return None


def cost(pattern: str) -> int | None:
    """How many ways a backtracking matcher may try `pattern` on a name (see the docstring), at most
    MAX_COST; None when the allow-list refuses it (problem() says why)."""
    try:
        return _Parser(pattern).pattern()
    except PatternRefused:
        return None


def as_mirrormaker_joins(written: str) -> str:
    """The one regex MirrorMaker 2 compiles from a `topics` setting: split on ',', trimmed, joined
    with '|' (DefaultTopicFilter, through ConfigDef's LIST type and MirrorUtils.compilePatterns)."""
    return "|".join(p.strip() for p in written.split(",") if p.strip())


def stress_names(pattern: str) -> list[str]:
    """Names that make a backtracking matcher work hardest on `pattern`: each literal run of the
    pattern, then a long run of one character it names, ending in one it cannot match (the shape of
    `campaign-aaaa...aX` against `(campaign-(a|a)*)*$`). The structural rules above should make them
    cheap; the Java checker runs them under a step budget as a second line."""
    chars = sorted({c for c in pattern if c in TOPIC_CHARS} or {"a"})[:8]
    runs = [""] + sorted({run for run in re.findall(r"[A-Za-z0-9_-]+", pattern)}, key=len, reverse=True)[:4]
    tail = next((c for c in "Z9zq_" if c not in chars), ".")
    return [(run + c * 248)[:248] + tail for run in runs for c in chars]
