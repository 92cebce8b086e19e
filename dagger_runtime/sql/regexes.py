"""Catastrophic backtracking in a regex a dagger query writes, found before the query runs.

Spark matches RLIKE/REGEXP/regexp_like, regexp_extract, regexp_replace, split... with
java.util.regex, a backtracking engine: `(a+)+$` over thirty `a`s and a `!` takes minutes, and
`a*a*a*a*a*a*a*a*a*a*b` over a few dozen `a`s takes hours, on every row or, when both sides are
literals, inside the driver while the query is planned. `problem` reads a Java regex and names the
two shapes that cost that much:

- a repetition inside a repetition that can match the same text in several ways: `(a+)+`,
  `(\\w+\\s?)*`, `(a|aa)*`, `(.*,)*` (time exponential in the text's length);
- more than MAX_OVERLAPPING_REPEATS unbounded repetitions in a row that can all match one
  character, with nothing in between that must match something else: `a*a*a*a*b`, `.*.*.*.*x`
  (time grows as the text's length to the power of their count).

It is a static check, conservative where the syntax is rare (a class it does not understand
matches anything); the JVM then runs the regex on pumped texts under a step budget
(`dev.daggers.runtime.ConstantGuard.regexProblem`), which catches what this misses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# more unbounded repetitions than this in a row that overlap: refused (a*a*a*b is 3: allowed)
MAX_OVERLAPPING_REPEATS = 3
# more '.*' (any character, unbounded) than this in one pattern: refused ('.*foo.*bar.*' is 3)
MAX_WILDCARDS = 3
# a counted repetition {n} of a part of variable length ((a{1,2}){40}, (a?){40}): refused from n = 10
MAX_COUNTED_VARIABLE = 10
INF = float("inf")

# the characters sets are compared on: ASCII, a few beyond, and every character the regex names
_ALPHABET_BASE = [chr(c) for c in range(128)] + ["é", "Ā", "Ω", "中", "\u2028", "\u00a0", "\uffff"]


class _Unsupported(Exception):
    pass


@dataclass
class CharSet:
    """A set of characters, by a predicate; `any` for what the parser does not model exactly."""

    test: object = None  # callable(ch) -> bool, or None for every character
    label: str = "."

    def has(self, ch: str) -> bool:
        return True if self.test is None else bool(self.test(ch))


@dataclass
class Node:
    kind: str  # chars, seq, alt, repeat, empty, group
    chars: CharSet | None = None
    items: list = field(default_factory=list)  # seq items, alt branches, repeat/group body in [0]
    lo: int = 1
    hi: float = 1
    greedy_backtracks: bool = True  # False: possessive or atomic, never gives back
    text: str = ""  # as written, for the message


_CLASS_ESCAPES = {
    "d": lambda c: "0" <= c <= "9",
    "D": lambda c: not ("0" <= c <= "9"),
    "w": lambda c: c.isascii() and (c.isalnum() or c == "_"),
    "W": lambda c: not (c.isascii() and (c.isalnum() or c == "_")),
    "s": lambda c: c in " \t\n\x0b\f\r",
    "S": lambda c: c not in " \t\n\x0b\f\r",
    "h": lambda c: (
        c in " \t\xa0\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
    ),
    "v": lambda c: c in "\n\x0b\f\r\x85\u2028\u2029",
}
_CLASS_ESCAPES["H"] = lambda c: not _CLASS_ESCAPES["h"](c)
_CLASS_ESCAPES["V"] = lambda c: not _CLASS_ESCAPES["v"](c)
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "a": "\x07", "e": "\x1b"}
_ZERO_WIDTH_ESCAPES = set("bBAGZzR") - {"R"}


class _Parser:
    def __init__(self, text: str):
        self.s, self.i = text, 0
        self.icase, self.dotall, self.comments = False, False, False
        self.literals: set[str] = set()

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def parse(self) -> Node:
        node = self.alt()
        if self.i < len(self.s):
            raise _Unsupported("unbalanced )")
        return node

    def alt(self) -> Node:
        start = self.i
        branches = [self.seq()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.seq())
        if len(branches) == 1:
            return branches[0]
        return Node("alt", items=branches, text=self.s[start : self.i])

    def seq(self) -> Node:
        start = self.i
        items = []
        while self.i < len(self.s) and self.peek() not in "|)":
            atom_start = self.i
            atom = self.atom()
            if atom is None:
                continue
            atom = self.quantified(atom, atom_start)
            items.append(atom)
        return Node("seq", items=items, text=self.s[start : self.i])

    def quantified(self, atom: Node, atom_start: int) -> Node:
        while True:
            c = self.peek()
            if c == "*":
                lo, hi = 0, INF
                self.i += 1
            elif c == "+":
                lo, hi = 1, INF
                self.i += 1
            elif c == "?":
                lo, hi = 0, 1
                self.i += 1
            elif c == "{" and self._bounds() is not None:
                lo, hi, self.i = self._bounds()
            else:
                return atom
            backtracks = True
            if self.peek() == "?":
                self.i += 1
            elif self.peek() == "+":
                self.i += 1
                backtracks = False
            atom = Node(
                "repeat", items=[atom], lo=lo, hi=hi, greedy_backtracks=backtracks, text=self.s[atom_start : self.i]
            )

    def _bounds(self):
        j = self.i + 1
        k = self.s.find("}", j)
        if k < 0:
            return None
        inner = self.s[j:k]
        parts = inner.split(",")
        try:
            if len(parts) == 1:
                lo = hi = int(parts[0])
            elif len(parts) == 2:
                lo = int(parts[0])
                hi = int(parts[1]) if parts[1].strip() else INF
            else:
                return None
        except ValueError:
            return None
        return lo, hi, k + 1

    def _char(self, ch: str) -> Node:
        self.literals.add(ch)
        if self.icase and ch.lower() != ch.upper():
            lo, up = ch.lower(), ch.upper()
            return Node("chars", chars=CharSet(lambda c, lo=lo, up=up: c in (lo, up), ch))
        return Node("chars", chars=CharSet(lambda c, ch=ch: c == ch, ch))

    def atom(self) -> Node | None:
        c = self.peek()
        if self.comments and c in " \t\n\r\f\x0b":
            self.i += 1
            return None
        if self.comments and c == "#":
            k = self.s.find("\n", self.i)
            self.i = len(self.s) if k < 0 else k + 1
            return None
        if c == "(":
            return self.group()
        if c == "[":
            start = self.i
            chars = self.char_class()
            return Node("chars", chars=CharSet(chars, self.s[start : self.i]))
        if c == ".":
            self.i += 1
            return Node(
                "chars", chars=CharSet(None if self.dotall else (lambda ch: ch not in "\n\r\u0085\u2028\u2029"), ".")
            )
        if c in "^$":
            self.i += 1
            return Node("empty", text=c)
        if c == "\\":
            return self.escape()
        self.i += 1
        return self._char(c)

    def escape(self) -> Node:
        self.i += 1
        c = self.peek()
        self.i += 1
        if c == "":
            raise _Unsupported("trailing backslash")
        if c == "Q":
            k = self.s.find("\\E", self.i)
            end = len(self.s) if k < 0 else k
            quoted, self.i = self.s[self.i : end], (len(self.s) if k < 0 else k + 2)
            return Node("seq", items=[self._char(ch) for ch in quoted], text=quoted)
        if c in _ZERO_WIDTH_ESCAPES:
            return Node("empty", text="\\" + c)
        if c in _CLASS_ESCAPES:
            return Node("chars", chars=CharSet(_CLASS_ESCAPES[c], "\\" + c))
        if c in "pP":
            # \p{...}: modelled as any character (conservative)
            if self.peek() == "{":
                k = self.s.find("}", self.i)
                self.i = len(self.s) if k < 0 else k + 1
            else:
                self.i += 1
            return Node("chars", chars=CharSet(None, "\\" + c))
        if c == "R" or c == "X":
            return Node("chars", chars=CharSet(None, "\\" + c))
        if c.isdigit() and c != "0":
            return Node("chars", chars=CharSet(None, "\\" + c))  # a back-reference: any text
        if c == "k" and self.peek() == "<":
            k = self.s.find(">", self.i)
            self.i = len(self.s) if k < 0 else k + 1
            return Node("chars", chars=CharSet(None, "\\k"))
        return self._char(self._escaped_char(c))

    def _escaped_char(self, c: str) -> str:
        if c in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[c]
        if c == "x":
            if self.peek() == "{":
                k = self.s.find("}", self.i)
                digits, self.i = self.s[self.i + 1 : k], k + 1
            else:
                digits, self.i = self.s[self.i : self.i + 2], self.i + 2
            try:
                return chr(int(digits, 16))
            except ValueError:
                raise _Unsupported("bad \\x") from None
        if c == "u":
            digits, self.i = self.s[self.i : self.i + 4], self.i + 4
            try:
                return chr(int(digits, 16))
            except ValueError:
                raise _Unsupported("bad \\u") from None
        if c == "0":
            j = self.i
            while j < len(self.s) and j - self.i < 3 and self.s[j] in "01234567":
                j += 1
            digits, self.i = self.s[self.i : j], j
            return chr(int(digits or "0", 8))
        if c == "c":
            ch, self.i = self.peek(), self.i + 1
            return chr(ord(ch or "@") ^ 64)
        return c

    def char_class(self):
        """[...] as a predicate: ranges, negation, nested classes, && intersections."""
        assert self.peek() == "["
        self.i += 1
        negate = False
        if self.peek() == "^":
            negate, self.i = True, self.i + 1
        parts: list = []
        intersect: list = []
        first = True
        while True:
            c = self.peek()
            if c == "":
                raise _Unsupported("unterminated [")
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "[":
                parts.append(self.char_class())
                continue
            if c == "&" and self.peek(1) == "&":
                self.i += 2
                union = list(parts)
                intersect.append(lambda ch, union=union: any(p(ch) for p in union))
                parts = []
                continue
            lo = self._class_char()
            if callable(lo):
                parts.append(lo)
                continue
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                hi = self._class_char()
                if callable(hi):
                    parts.append(lambda ch, lo=lo: ch == lo)
                    parts.append(lambda ch: ch == "-")
                    parts.append(hi)
                    continue
                parts.append(self._range(lo, hi))
            else:
                parts.append(self._range(lo, lo))
        union = list(parts)
        sets = intersect + [lambda ch, union=union: any(p(ch) for p in union)]

        def test(ch: str, sets=sets, negate=negate) -> bool:
            inside = all(s(ch) for s in sets)
            return not inside if negate else inside

        return test

    def _range(self, lo: str, hi: str):
        self.literals.update({lo, hi})
        if self.icase:
            return lambda ch, lo=lo, hi=hi: lo <= ch <= hi or lo <= ch.lower() <= hi or lo <= ch.upper() <= hi
        return lambda ch, lo=lo, hi=hi: lo <= ch <= hi

    def _class_char(self):
        c = self.peek()
        self.i += 1
        if c != "\\":
            return c
        e = self.peek()
        self.i += 1
        if e in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[e]
        if e in "pP":
            if self.peek() == "{":
                k = self.s.find("}", self.i)
                self.i = len(self.s) if k < 0 else k + 1
            else:
                self.i += 1
            return lambda ch: True
        if e == "Q":
            k = self.s.find("\\E", self.i)
            end = len(self.s) if k < 0 else k
            quoted, self.i = self.s[self.i : end], (len(self.s) if k < 0 else k + 2)
            return lambda ch, quoted=quoted: ch in quoted
        return self._escaped_char(e)

    def group(self) -> Node:
        start = self.i
        self.i += 1
        atomic = False
        lookaround = False
        if self.peek() == "?":
            self.i += 1
            c = self.peek()
            if c == ":":
                self.i += 1
            elif c == ">":
                self.i += 1
                atomic = True
            elif c in "=!":
                self.i += 1
                lookaround = True
            elif c == "<" and self.peek(1) in "=!":
                self.i += 2
                lookaround = True
            elif c == "<":
                k = self.s.find(">", self.i)
                if k < 0:
                    raise _Unsupported("bad group name")
                self.i = k + 1
            else:
                # inline flags: (?i) (?s) (?x) (?-i) or (?i:...)
                j = self.i
                on = True
                while j < len(self.s) and self.s[j] not in ":)":
                    f = self.s[j]
                    if f == "-":
                        on = False
                    elif f == "i":
                        self.icase = on
                    elif f == "s":
                        self.dotall = on
                    elif f == "x":
                        self.comments = on
                    j += 1
                if j >= len(self.s):
                    raise _Unsupported("unterminated group")
                self.i = j + 1
                if self.s[j] == ")":
                    return Node("empty", text=self.s[start : self.i])
        body = self.alt()
        if self.peek() != ")":
            raise _Unsupported("unterminated group")
        self.i += 1
        if lookaround:
            # zero-width, but its body still backtracks: kept for the nesting check only
            return Node("group", items=[body], lo=0, hi=0, text=self.s[start : self.i])
        return Node("group", items=[body], greedy_backtracks=not atomic, text=self.s[start : self.i])


# ---------------------------------------------------------------------------------------------
# what a node can match: nullable, first characters, whether it repeats without bound


def _nullable(n: Node) -> bool:
    if n.kind == "empty":
        return True
    if n.kind == "chars":
        return False
    if n.kind == "seq":
        return all(_nullable(i) for i in n.items)
    if n.kind == "alt":
        return any(_nullable(i) for i in n.items)
    if n.kind == "repeat":
        return n.lo == 0 or _nullable(n.items[0])
    if n.kind == "group":
        return n.hi == 0 or _nullable(n.items[0])
    return True


def _first(n: Node, alphabet) -> set[str]:
    """Characters a non-empty match of n can start with (over the alphabet)."""
    if n.kind == "chars":
        return {c for c in alphabet if n.chars.has(c)}
    if n.kind == "empty":
        return set()
    if n.kind == "seq":
        out: set[str] = set()
        for item in n.items:
            out |= _first(item, alphabet)
            if not _nullable(item):
                break
        return out
    if n.kind == "alt":
        return set().union(*(_first(i, alphabet) for i in n.items))
    if n.kind == "group" and n.hi == 0:
        return set()
    return _first(n.items[0], alphabet)


def _all_chars(n: Node, alphabet) -> set[str]:
    """Every character n can match anywhere."""
    if n.kind == "chars":
        return {c for c in alphabet if n.chars.has(c)}
    if n.kind == "empty" or (n.kind == "group" and n.hi == 0):
        return set()
    return set().union(set(), *(_all_chars(i, alphabet) for i in n.items))


def _unbounded_inside(n: Node) -> list[Node]:
    """Backtracking unbounded repetitions within n (n included)."""
    out = []
    stack = [n]
    while stack:
        x = stack.pop()
        if x.kind == "group" and (not x.greedy_backtracks or x.hi == 0):
            continue  # atomic group or lookaround: gives nothing back to the outside
        if x.kind == "repeat" and x.hi == INF and x.greedy_backtracks:
            out.append(x)
        stack.extend(x.items)
    return out


def _walk(n: Node):
    stack = [n]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(x.items))


def _shown(ch: str) -> str:
    return repr(ch)[1:-1] if not ch.isprintable() or ch == " " else ch


def problem(regex: str) -> str | None:
    """None when the regex has neither costly shape, else what it is, said for the analyst."""
    parser = _Parser(regex)
    try:
        tree = parser.parse()
    except (_Unsupported, ValueError, IndexError, RecursionError):
        return None  # Java's own compile reports a malformed regex; the JVM budget judges the rest
    alphabet = list(dict.fromkeys(_ALPHABET_BASE + sorted(parser.literals)))
    wildcards = [
        n
        for n in _walk(tree)
        if n.kind == "repeat"
        and n.hi == INF
        and n.greedy_backtracks
        and n.items[0].kind == "chars"
        and sum(n.items[0].chars.has(chr(c)) for c in range(128)) >= 120
    ]
    if len(wildcards) > MAX_WILDCARDS:
        return (
            f"{len(wildcards)} repetitions of any character ('.*', or '%' in LIKE) in one pattern, so a "
            f"text that does not match is tried in about n^{len(wildcards)} ways (hours on a few thousand "
            f"characters); at most {MAX_WILDCARDS} may appear in one pattern"
        )
    for node in _walk(tree):
        if (
            node.kind == "repeat"
            and node.hi != INF
            and node.hi >= MAX_COUNTED_VARIABLE
            and node.greedy_backtracks
            and any(x.kind == "repeat" and x.lo != x.hi and x.greedy_backtracks for x in _walk(node.items[0]))
        ):
            return (
                f"the repetition {node.text!r} repeats a part of variable length up to {int(node.hi)} times, "
                "so a text that does not match is cut between the rounds in exponentially many ways "
                "(hours on a few dozen characters); repeat a part of fixed length, or at most "
                f"{MAX_COUNTED_VARIABLE - 1} times"
            )
        if node.kind == "repeat" and node.hi > 1 and node.greedy_backtracks:
            body = node.items[0]
            found = _nested(body, alphabet)
            if found:
                return (
                    f"the repetition {node.text!r} repeats {found}, so a text can be split between "
                    "them in exponentially many ways and java.util.regex tries them all before it "
                    "fails (hours on a few dozen characters); write it so each character can be "
                    "matched in one way only, e.g. (a+)+ as a+, or use a possessive quantifier "
                    "(a++) or an atomic group (?>...)"
                )
        if node.kind == "seq":
            run = _overlapping_run(node.items, alphabet)
            if run:
                repeats, ch = run
                shown = ", ".join(repr(r.text) for r in repeats)
                return (
                    f"{len(repeats)} unbounded repetitions in a row ({shown}) can all match "
                    f"'{_shown(ch)}', so a text that does not match is tried in about n^{len(repeats)} "
                    f"ways (hours on a few dozen characters); at most {MAX_OVERLAPPING_REPEATS} may "
                    "overlap: merge them (a*a* is a*) or separate them by what they cannot match"
                )
    return None


def _nested(body: Node, alphabet) -> str | None:
    """In a repeated body: an inner unbounded repetition that can match what follows it (the rest
    of the body, or the next round's start), or an alternation whose branches can cut one text in
    two ways; either way the rounds can be cut in exponentially many ways."""
    starts = _first(body, alphabet)
    for inner, follow in _repeat_follows(body, starts, alphabet):
        overlap = _all_chars(inner.items[0], alphabet) & follow
        if overlap:
            return f"{inner.text!r} inside it, which can also match the '{_shown(min(overlap))}' that may follow it"
    for alt in (x for x in _walk(body) if x.kind == "alt"):
        for i in range(len(alt.items)):
            for j in range(i + 1, len(alt.items)):
                if _ambiguous(alt.items[i], alt.items[j], starts, alphabet):
                    return (
                        f"the alternatives {alt.items[i].text!r} and {alt.items[j].text!r}, which can "
                        "match the same text"
                    )
    if _nullable(body) and _unbounded_inside(body):
        return "something that can match nothing"
    return None


def _repeat_follows(n: Node, follow: set[str], alphabet):
    """(unbounded repetition, the characters that can come right after it) inside n, when what
    comes after n is `follow`."""
    if n.kind == "seq":
        after = set(follow)
        for item in reversed(n.items):
            yield from _repeat_follows(item, after, alphabet)
            after = _first(item, alphabet) | (after if _nullable(item) else set())
    elif n.kind == "alt":
        for branch in n.items:
            yield from _repeat_follows(branch, follow, alphabet)
    elif n.kind == "group":
        if n.greedy_backtracks and n.hi != 0:
            yield from _repeat_follows(n.items[0], follow, alphabet)
    elif n.kind == "repeat":
        if n.greedy_backtracks:
            if n.hi == INF:
                yield n, follow
            again = _first(n.items[0], alphabet) if n.hi > 1 else set()
            yield from _repeat_follows(n.items[0], follow | again, alphabet)


def _flat(n: Node) -> list[Node] | None:
    """A branch as a list of single-character sets, None when it is not that simple."""
    if n.kind == "chars":
        return [n]
    if n.kind == "seq":
        out: list[Node] = []
        for item in n.items:
            flat = _flat(item)
            if flat is None:
                return None
            out += flat
        return out
    if n.kind == "group" and n.hi != 0:
        return _flat(n.items[0])
    return None


def _ambiguous(a: Node, b: Node, starts: set[str], alphabet) -> bool:
    fa, fb = _flat(a), _flat(b)
    if fa is None or fb is None:
        return bool(_first(a, alphabet) & _first(b, alphabet))  # conservative
    for x, y in zip(fa, fb):
        if not (_all_chars(x, alphabet) & _all_chars(y, alphabet)):
            return False  # they part at this character: one text, one branch
    longer = fa if len(fa) > len(fb) else fb
    if len(fa) == len(fb):
        return True  # the same text twice
    # the shorter one ends; the next round may start where the longer one goes on
    return bool(_all_chars(longer[min(len(fa), len(fb))], alphabet) & starts)


def _overlapping_run(items: list[Node], alphabet):
    """The longest run of unbounded repetitions in one sequence sharing a character c, where
    everything between them can be skipped or can match c."""
    best = None
    candidates = [i for i, it in enumerate(items) if it.kind == "repeat" and it.hi == INF and it.greedy_backtracks]
    if len(candidates) <= MAX_OVERLAPPING_REPEATS:
        return None
    sets = {i: _all_chars(items[i].items[0], alphabet) for i in candidates}
    for ch in alphabet:
        run: list[int] = []
        for i, item in enumerate(items):
            if i in sets and ch in sets[i]:
                run.append(i)
            elif _nullable(item) or ch in _all_chars(item, alphabet) and _single(item):
                continue
            else:
                if len(run) > MAX_OVERLAPPING_REPEATS and (best is None or len(run) > len(best[0])):
                    best = (run, ch)
                run = []
        if len(run) > MAX_OVERLAPPING_REPEATS and (best is None or len(run) > len(best[0])):
            best = (run, ch)
        if best is not None:
            break
    return ([items[i] for i in best[0]], best[1]) if best else None


def _single(n: Node) -> bool:
    """Matches exactly one character (a literal or class between two repetitions: `.*a.*`)."""
    return n.kind == "chars"


__all__ = ["MAX_OVERLAPPING_REPEATS", "problem"]
