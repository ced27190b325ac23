r"""JavaScript regular expressions, run by Python's `regex` with JavaScript's meaning.

Mastra's `matches` check tests a JavaScript RegExp; evalgate's gives the same result on the same
pattern, flags and text (docs/mastra-semantics.md, section 8). The two dialects share a syntax,
not its meaning: JavaScript's `\d` and `\w` are ASCII, `.` also stops at `\r`, `$` is the end of
the text, `[^]` is any character, `\a` is the letter a, `{,5}` is text, and without the `u` flag a
pattern sees UTF-16 code units, so `.` matches half an emoji. So the pattern is parsed by
JavaScript's grammar (ECMAScript with its Annex B, or the stricter one of the `u` flag) and written
out for `regex` in constructs that mean one thing in both: explicit character sets, lookarounds
for the anchors, case folding spelt out. What cannot be reproduced exactly is refused by name.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from evalgate.scorers.js import properties as jsproperties
from evalgate.scorers.js.text import utf16

FLAGS = frozenset("dgimsu")  # `d` and `g` do not change a test's result; `y` (sticky) and `v` are refused
MAX_REPEATED = 10_000  # `regex` builds every required repetition: `a{10000000}` alone takes gigabytes
_INFINITE = 2**31 - 1  # V8 takes a bound this large as no bound
_SYNTAX = frozenset(map(ord, "^$\\.*+?()[]{}|/"))
_LINE_ENDS = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_DIGITS = ((0x30, 0x39),)
_WORD = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_WORD_UNICODE_IGNORE_CASE = (*_WORD, (0x17F, 0x17F), (0x212A, 0x212A))  # long s and Kelvin fold into \w
_SPACE = ((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
          (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF))


class JsRegexError(ValueError):
    """The pattern is not a JavaScript regex (JavaScript throws too), or not one evalgate runs exactly."""


Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Translation:
    pattern: str  # for `regex`, VERSION0, no flags: case folding is spelt out in its sets
    code_units: bool  # without `u`, JavaScript sees UTF-16 code units: match on jstext.utf16(text)


def translate(source: str, flags: str) -> Translation:
    """The pattern as `regex` source with JavaScript's meaning; JsRegexError names what is wrong."""
    unknown = sorted(set(flags) - FLAGS)
    if unknown:
        sticky = " (with y, Mastra's check depends on the item before: evalgate does not run it)" * ("y" in unknown)
        raise JsRegexError(f"unknown regex flag(s) {''.join(unknown)!r}; use i, m, s, u, g or d{sticky}")
    if len(set(flags)) != len(flags):
        raise JsRegexError(f"flags {flags!r} repeat a letter (JavaScript refuses them)")
    unicode = "u" in flags
    units = list(map(ord, source)) if unicode else _code_units(source)
    parser = _Parser(units, unicode=unicode, ignore_case="i" in flags, dot_all="s" in flags,
                     multiline="m" in flags)
    try:
        node = parser.parse()
        _check_repeats(node)
        _check_backrefs(parser, node)
        out = _Writer(parser).write(node)
    except RecursionError:
        raise JsRegexError("the pattern nests groups too deeply") from None
    return Translation(out, code_units=not unicode)


@dataclass(frozen=True)
class JsPattern:
    """A JavaScript regex compiled for `regex`: found in a text, or matching all of it, within a deadline
    (TimeoutError past it: `regex`, unlike `re`, can stop a pattern that backtracks catastrophically)."""

    compiled: Any
    code_units: bool

    def search(self, text: str, timeout: float) -> bool:
        return self.compiled.search(utf16(text) if self.code_units else text, timeout=timeout) is not None

    def fullmatch(self, text: str, timeout: float) -> bool:
        return self.compiled.fullmatch(utf16(text) if self.code_units else text, timeout=timeout) is not None


def compile_js(source: str, flags: str = "") -> JsPattern:
    """The pattern compiled with JavaScript's meaning; JsRegexError names the pattern and what is wrong."""
    try:
        translation = translate(source, flags)
    except JsRegexError as exc:
        raise JsRegexError(f"invalid regex {source[:200]!r}: {exc}") from None
    import regex  # imported by what needs it: ~10 ms off every other run's start

    try:
        compiled = regex.compile(translation.pattern, regex.VERSION0)
    except (regex.error, OverflowError, RecursionError, ValueError) as exc:
        raise JsRegexError(f"invalid regex {source[:200]!r}: {str(exc)[:200] or type(exc).__name__}") from None
    return JsPattern(compiled, translation.code_units)


def _code_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


# ---- the syntax tree ----


@dataclass
class _Set:
    ranges: Ranges = ()
    properties: tuple[str, ...] = ()  # `\p{..}`/`\P{..}` as written (the `u` flag only)
    negated: bool = False


@dataclass
class _Group:
    kind: str  # "(" capture, "(?:", "(?=", "(?!", "(?<=", "(?<!"
    body: _Alt
    number: int = 0


@dataclass
class _Backref:
    number: int
    position: int
    inside: bool = False  # within its own group, which has no capture yet: it matches empty


@dataclass
class _Repeat:
    body: _Node
    low: int
    high: int | None
    lazy: bool


@dataclass
class _Anchor:
    kind: str  # ^ $ b B


@dataclass
class _Alt:
    options: list[list[_Node]] = field(default_factory=list)


_Node = _Set | _Group | _Backref | _Repeat | _Anchor | _Alt


# ---- the parser: ECMAScript's Pattern grammar, Annex B without `u` ----


class _Parser:
    def __init__(self, src: list[int], *, unicode: bool, ignore_case: bool, dot_all: bool, multiline: bool) -> None:
        self.src = src
        self.pos = 0
        self.unicode = unicode
        self.ignore_case = ignore_case
        self.dot_all = dot_all
        self.multiline = multiline
        self.captures, self.names = _scan_groups(src)
        self.named: dict[str, int] = {}
        self.groups: list[_Group] = []
        self.backrefs: list[tuple[_Backref, list[_Node]]] = []  # each with the nodes it sits in
        self.stack: list[_Node] = []

    # -- reading --
    def peek(self, ahead: int = 0) -> int | None:
        at = self.pos + ahead
        return self.src[at] if at < len(self.src) else None

    def at(self, chars: str, ahead: int = 0) -> bool:
        c = self.peek(ahead)
        return c is not None and c < 0x80 and chr(c) in chars

    def fail(self, what: str) -> JsRegexError:
        return JsRegexError(f"{what} (at character {self.pos + 1})")

    def parse(self) -> _Alt:
        node = self.disjunction()
        if self.pos < len(self.src):  # only a `)` stops a disjunction early
            raise self.fail("unmatched ')'")
        return node

    def disjunction(self) -> _Alt:
        alt = _Alt([])
        self.stack.append(alt)
        alt.options.append(self.alternative())
        while self.at("|"):
            self.pos += 1
            alt.options.append(self.alternative())
        self.stack.pop()
        return alt

    def alternative(self) -> list[_Node]:
        terms: list[_Node] = []
        while self.pos < len(self.src) and not self.at("|)"):
            terms.append(self.term())
        return terms

    def term(self) -> _Node:
        if self.at("^$"):
            self.pos += 1
            return self.unquantified(_Anchor(chr(self.src[self.pos - 1])))
        if self.at("\\") and self.at("bB", 1):
            self.pos += 2
            return self.unquantified(_Anchor(chr(self.src[self.pos - 1])))
        if self.at("(") and self.at("?", 1) and (self.at("=!", 2) or (self.at("<", 2) and self.at("=!", 3))):
            group = self.group()
            if group.kind in ("(?<=", "(?<!") or self.unicode:
                return self.unquantified(group)
            return self.quantified(group)  # Annex B: a lookahead may take a quantifier
        return self.quantified(self.atom())

    def unquantified(self, node: _Node) -> _Node:
        if self.at("*+?") or (self.at("{") and self.brace() is not None):
            raise self.fail("nothing to repeat")
        return node

    def quantified(self, node: _Node) -> _Node:
        if self.at("*+?"):
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[chr(self.src[self.pos])]
            self.pos += 1
        elif self.at("{"):
            bounds = self.brace()
            if bounds is None:
                if self.unicode:
                    raise self.fail("incomplete quantifier")
                return node  # Annex B: the `{` is a character, read as the next atom
            low, high, self.pos = bounds
            if high is not None and high < low:
                raise self.fail("numbers out of order in {} quantifier")
        else:
            return node
        lazy = self.at("?")
        self.pos += lazy
        return _Repeat(node, low, high, lazy)

    def brace(self) -> tuple[int, int | None, int] | None:
        """`{n}`, `{n,}` or `{n,m}` at the position: (n, m or None, the position after it)."""
        i = self.pos + 1
        low, i = self.number(i)
        if low is None:
            return None
        high: int | None = low
        if i < len(self.src) and self.src[i] == 0x2C:  # ,
            high, i = self.number(i + 1)
        if i >= len(self.src) or self.src[i] != 0x7D:  # }
            return None
        return low, (None if high is not None and high >= _INFINITE else high), i + 1

    def number(self, i: int) -> tuple[int | None, int]:
        start = i
        while i < len(self.src) and 0x30 <= self.src[i] <= 0x39:
            i += 1
        if i == start:
            return None, i
        digits = "".join(map(chr, self.src[start:i])).lstrip("0") or "0"
        if len(digits) > 10:  # past any bound V8 keeps (and past what int() reads of a long digit run)
            return _INFINITE, i
        return min(int(digits), _INFINITE), i

    def atom(self) -> _Node:
        c = self.src[self.pos]
        if c == 0x2E:  # .
            self.pos += 1
            return _Set(((0, 0x10FFFF),) if self.dot_all else _complement(_LINE_ENDS))
        if c == 0x28:  # (
            return self.group()
        if c == 0x5B:  # [
            return self.char_class()
        if c == 0x5C:  # backslash
            return self.atom_escape()
        if c in (0x2A, 0x2B, 0x3F):
            raise self.fail("nothing to repeat")
        if c == 0x7B and (self.unicode or self.brace() is not None):
            raise self.fail("nothing to repeat" if self.brace() is not None else "lone quantifier brackets")
        if c in (0x5D, 0x7D) and self.unicode:
            raise self.fail("lone quantifier brackets")
        self.pos += 1
        return self.char(c)

    def char(self, c: int) -> _Set:
        return _Set(((c, c),))

    def group(self) -> _Group:
        self.pos += 1
        kind = "("
        if self.at("?"):
            for opening in ("?:", "?=", "?!", "?<=", "?<!"):
                if all(self.at(ch, k) for k, ch in enumerate(opening)):
                    kind = "(" + opening
                    self.pos += len(opening)
                    break
            else:
                if not self.at("<", 1):
                    raise self.fail("invalid group")
                self.pos += 2
                name = self.group_name()
                if name in self.named:
                    raise self.fail(f"duplicate capture group name {name!r}")
                self.named[name] = len(self.groups) + 1
        group = _Group(kind, _Alt([]))
        if kind == "(":
            self.groups.append(group)
            group.number = len(self.groups)
        self.stack.append(group)
        group.body = self.disjunction()
        self.stack.pop()
        if not self.at(")"):
            raise self.fail("unterminated group")
        self.pos += 1
        return group

    def group_name(self) -> str:
        """The name of `(?<name>` or `\\k<name>`, and the `>` after it."""
        start = self.pos
        while self.pos < len(self.src) and self.src[self.pos] != 0x3E:  # >
            self.pos += 1
        if self.pos >= len(self.src):
            raise self.fail("invalid capture group name")
        raw = "".join(map(chr, self.src[start : self.pos]))
        self.pos += 1
        name = _group_name(raw)
        if name is None:
            raise self.fail(f"invalid capture group name {raw!r}")
        return name

    def atom_escape(self) -> _Node:
        self.pos += 1
        c = self.peek()
        if c is None:
            raise self.fail("\\ at end of pattern")
        if chr(c) in "dDsSwW":
            self.pos += 1
            return self.class_escape(chr(c))
        if self.unicode and chr(c) in "pP":
            return self.property()
        if c == 0x6B and (self.unicode or self.names):  # \k<name>
            self.pos += 1
            if not self.at("<"):
                raise self.fail("invalid named reference")
            self.pos += 1
            start = self.pos
            name = self.group_name()
            if name not in self.names:
                self.pos = start
                raise self.fail(f"invalid named capture referenced: {name!r}")
            return self.backref(self.names[name], start)
        if 0x31 <= c <= 0x39:  # \1 .. \9...
            start = self.pos
            number, end = self.number(self.pos)
            assert number is not None
            if number <= self.captures:
                self.pos = end
                return self.backref(number, start)
            if self.unicode:
                raise self.fail("invalid escape")
            if c >= 0x38:  # \8 and \9 are the digits themselves
                self.pos += 1
                return self.char(c)
            return self.char(self.octal())
        return self.char(self.char_escape(in_class=False))

    def backref(self, number: int, position: int) -> _Backref:
        ref = _Backref(number, position, any(isinstance(n, _Group) and n.number == number for n in self.stack))
        self.backrefs.append((ref, list(self.stack)))
        return ref

    def octal(self) -> int:
        """Annex B's legacy octal escape: up to three digits, at most \\377."""
        value = self.src[self.pos] - 0x30
        self.pos += 1
        for _ in range(2 if value <= 3 else 1):
            c = self.peek()
            if c is None or not 0x30 <= c <= 0x37:
                break
            value = value * 8 + c - 0x30
            self.pos += 1
        return value

    def char_escape(self, in_class: bool) -> int:
        """The character of the escape at the position (after the backslash)."""
        c = self.src[self.pos]
        letter = chr(c) if c < 0x80 else ""
        simple = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
        if letter in simple:
            self.pos += 1
            return simple[letter]
        if letter == "c":
            nxt = self.peek(1)
            if nxt is not None and (0x41 <= nxt <= 0x5A or 0x61 <= nxt <= 0x7A):
                self.pos += 2
                return nxt % 32
            if in_class and not self.unicode and nxt is not None and (0x30 <= nxt <= 0x39 or nxt == 0x5F):
                self.pos += 2  # Annex B: \c0 .. \c9 and \c_ inside a class
                return nxt % 32
            if self.unicode:
                raise self.fail("invalid unicode escape")
            return 0x5C  # Annex B: the backslash itself; the `c` is read next, as a character
        if letter == "0" and not self.at("0123456789", 1):
            self.pos += 1
            return 0
        if letter.isdigit():
            if self.unicode:
                raise self.fail("invalid class escape" if in_class else "invalid decimal escape")
            if c >= 0x38:
                self.pos += 1
                return c
            return self.octal()
        if letter == "x":
            value = self.hex(self.pos + 1, 2)
            if value is not None:
                self.pos += 3
                return value
            if self.unicode:
                raise self.fail("invalid escape")
            self.pos += 1
            return c
        if letter == "u":
            value = self.unicode_escape()
            if value is not None:
                return value
            if self.unicode:
                raise self.fail("invalid unicode escape")
            self.pos += 1
            return c
        if self.unicode:
            if c in _SYNTAX or (in_class and c == 0x2D):
                self.pos += 1
                return c
            raise self.fail("invalid escape")
        if letter == "k" and self.names:
            raise self.fail("invalid named reference")
        self.pos += 1
        return c  # Annex B: any other escaped character is itself

    def hex(self, start: int, count: int) -> int | None:
        digits = self.src[start : start + count]
        if len(digits) != count or not all(d < 0x80 and chr(d) in "0123456789abcdefABCDEF" for d in digits):
            return None
        return int("".join(map(chr, digits)), 16)

    def unicode_escape(self) -> int | None:
        """`\\uXXXX`, and with `u` `\\u{X...}` and a surrogate pair of escapes as one character."""
        if self.unicode and self.peek(1) == 0x7B:  # {
            end = self.pos + 2
            while end < len(self.src) and self.src[end] != 0x7D:
                end += 1
            value = self.hex(self.pos + 2, end - self.pos - 2) if end > self.pos + 2 else None
            if value is None or end >= len(self.src) or value > 0x10FFFF:
                raise self.fail("invalid unicode escape")
            self.pos = end + 1
            return value
        value = self.hex(self.pos + 1, 4)
        if value is None:
            return None
        self.pos += 5
        if self.unicode and 0xD800 <= value <= 0xDBFF and self.at("\\") and self.at("u", 1):
            low = self.hex(self.pos + 2, 4)
            if low is not None and 0xDC00 <= low <= 0xDFFF:
                self.pos += 6
                return 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
        return value

    def class_escape(self, letter: str) -> _Set:
        base = {"d": _DIGITS, "s": _SPACE, "w": _WORD}[letter.lower()]
        if letter.lower() == "w" and self.unicode and self.ignore_case:
            base = _WORD_UNICODE_IGNORE_CASE
        return _Set(_complement(base) if letter.isupper() else base)  # a set, not an inverted one: it matters under i

    def property(self) -> _Set:
        """`\\p{...}` or `\\P{...}` (the `u` flag): passed to `regex` by its JavaScript name."""
        negated = self.src[self.pos] == 0x50
        self.pos += 1
        if not self.at("{"):
            raise self.fail("invalid property name")
        end = self.pos + 1
        while end < len(self.src) and self.src[end] != 0x7D:
            end += 1
        name = "".join(map(chr, self.src[self.pos + 1 : end]))
        try:
            known = jsproperties.regex_name(name) if end < len(self.src) else None
        except jsproperties.UnsupportedProperty:
            raise self.fail(f"\\p{{{name}}} has no table in the regex engine evalgate uses; evalgate does not run "
                            "this pattern") from None
        if known is None:  # JavaScript's names are exact: `\p{lu}`, `\p{Greek}` are syntax errors there
            hint = jsproperties.suggestion(name) if end < len(self.src) else None
            raise self.fail("invalid property name" + (f" (JavaScript spells it \\p{{{hint}}})" if hint else ""))
        self.pos = end + 1
        return _Set(properties=(("\\P{%s}" if negated else "\\p{%s}") % known,))

    def char_class(self) -> _Set:
        self.pos += 1
        negated = self.at("^")
        self.pos += negated
        ranges: list[tuple[int, int]] = []
        properties: list[str] = []
        while not self.at("]"):
            if self.pos >= len(self.src):
                raise self.fail("unterminated character class")
            first = self.class_atom()
            if self.at("-") and self.peek(1) is not None and not self.at("]", 1):
                self.pos += 1
                second = self.class_atom()
                if isinstance(first, int) and isinstance(second, int):
                    if second < first:
                        raise self.fail("range out of order in character class")
                    ranges.append((first, second))
                    continue
                if self.unicode:
                    raise self.fail("invalid character class")
                for part in (first, 0x2D, second):  # Annex B: `[\d-z]` is \d, `-` and z
                    _add_class_atom(part, ranges, properties)
                continue
            _add_class_atom(first, ranges, properties)
        self.pos += 1
        return _Set(_normal(ranges), tuple(properties), negated)

    def class_atom(self) -> int | _Set:
        c = self.src[self.pos]
        if c != 0x5C:
            self.pos += 1
            return c
        self.pos += 1
        e = self.peek()
        if e is None:
            raise self.fail("\\ at end of pattern")
        letter = chr(e) if e < 0x80 else ""
        if letter == "b":
            self.pos += 1
            return 0x08
        if letter and letter in "dDsSwW":
            self.pos += 1
            return self.class_escape(letter)
        if self.unicode and letter and letter in "pP":
            return self.property()
        if self.unicode and letter == "-":
            self.pos += 1
            return 0x2D
        return self.char_escape(in_class=True)


def _add_class_atom(atom: int | _Set, ranges: list[tuple[int, int]], properties: list[str]) -> None:
    if isinstance(atom, int):
        ranges.append((atom, atom))
    elif atom.properties:
        properties.extend(atom.properties)
    else:
        ranges.extend(atom.ranges)


def _scan_groups(src: list[int]) -> tuple[int, dict[str, int]]:
    """How many capturing groups the pattern has, and the number of each named one: JavaScript
    reads `\\10` and `\\k` by them before it parses."""
    names: dict[str, int] = {}
    count, i, in_class = 0, 0, False
    while i < len(src):
        c = src[i]
        if c == 0x5C:
            i += 2
            continue
        if in_class:
            in_class = c != 0x5D
        elif c == 0x5B:
            in_class = True
        elif c == 0x28 and (i + 1 >= len(src) or src[i + 1] != 0x3F):
            count += 1
        elif c == 0x28 and src[i + 2 : i + 3] == [0x3C] and src[i + 3 : i + 4] not in ([0x3D], [0x21]):
            count += 1
            end = i + 3
            while end < len(src) and src[end] != 0x3E:
                end += 1
            names.setdefault(_group_name("".join(map(chr, src[i + 3 : end]))) or "", count)
        i += 1
    return count, names


_NAME_ESCAPE = re.compile(r"\\u(?:\{([0-9A-Fa-f]+)\}|([0-9A-Fa-f]{4}))")


def _group_name(raw: str) -> str | None:
    """A group's name with its `\\uXXXX` and `\\u{X}` escapes read (as JavaScript allows), or None if invalid."""
    try:
        name = _NAME_ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), raw)
    except (ValueError, OverflowError):
        return None
    name = name.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")  # a pair of units, one letter
    if not name or "\\" in name or not (name[0].isidentifier() or name[0] == "$"):
        return None
    return name if all(("a" + ch).isidentifier() or ch in "$\u200c\u200d" for ch in name[1:]) else None


# ---- checks JavaScript's meaning needs ----


def _walk(node: _Node) -> Iterable[_Node]:
    yield node
    for child in _children(node):
        yield from _walk(child)


def _check_repeats(node: _Node, times: int = 1) -> None:
    """Refuse a pattern whose required repetitions, multiplied through its nesting, exceed MAX_REPEATED."""
    for child in _children(node):
        if isinstance(child, _Repeat):
            inner = times * max(child.low, 1)
            if inner > MAX_REPEATED:
                raise JsRegexError(f"a quantifier repeats at least {inner:,} times in all; evalgate runs at most "
                                   f"{MAX_REPEATED:,} required repetitions (write the repeat with a smaller minimum)")
            _check_repeats(child.body, inner)
        else:
            _check_repeats(child, times)


def _children(node: _Node) -> list[_Node]:
    if isinstance(node, _Alt):
        return [term for option in node.options for term in option]
    if isinstance(node, _Group):
        return [node.body]
    if isinstance(node, _Repeat):
        return [node.body]
    return []


def _check_backrefs(parser: _Parser, root: _Alt) -> None:
    """Backreferences behave as in JavaScript only where Python keeps the same captures."""
    if not parser.backrefs:
        return
    if parser.ignore_case:
        raise JsRegexError("a backreference with the i flag compares letters by JavaScript's case rules, which "
                           "evalgate does not reproduce there; evalgate does not run this pattern")
    repeated: set[int] = set()
    for node in _walk(root):
        if isinstance(node, _Repeat) and (node.high is None or node.high > 1):
            repeated.update(n.number for n in _walk(node.body) if isinstance(n, _Group) and n.kind == "(")
    for ref, around in parser.backrefs:
        if ref.number in repeated:
            raise JsRegexError(f"backreference \\{ref.number} (at character {ref.position}) names a group inside a "
                               "repeated part: JavaScript forgets its capture on every repetition and Python does "
                               "not; evalgate does not run this pattern")
        if any(isinstance(n, _Group) and n.kind in ("(?<=", "(?<!") for n in around):
            raise JsRegexError(f"backreference \\{ref.number} (at character {ref.position}) inside a lookbehind: "
                               "JavaScript matches it backwards; evalgate does not run this pattern")


# ---- the writer ----


class _Writer:
    def __init__(self, parser: _Parser) -> None:
        self.unicode = parser.unicode
        self.fold = parser.ignore_case  # spelt out: regex's IGNORECASE is neither of JavaScript's two foldings
        self.multiline = parser.multiline
        self.top = 0x10FFFF if parser.unicode else 0xFFFF
        word = _WORD_UNICODE_IGNORE_CASE if parser.unicode and parser.ignore_case else _WORD
        self.word = _set_text(word, self.top)

    def write(self, node: _Node) -> str:
        if isinstance(node, _Alt):
            return "|".join("".join(map(self.write, option)) for option in node.options)
        if isinstance(node, _Set):
            return self.set(node)
        if isinstance(node, _Group):
            opening = "(" if node.kind == "(" else node.kind
            return f"{opening}{self.write(node.body)})"
        if isinstance(node, _Repeat):
            high = "" if node.high is None else str(node.high)
            count = f"{{{node.low}}}" if node.high == node.low else f"{{{node.low},{high}}}"
            body = self.write(node.body)
            if not isinstance(node.body, _Set) or body.startswith("("):
                body = f"(?:{body})"
            return f"{body}{count}{'?' if node.lazy else ''}"
        if isinstance(node, _Backref):
            if node.inside:
                return ""
            # an unset group matches empty in JavaScript; \g<N>, as `\100` would be an octal escape to `regex`
            return f"(?({node.number})\\g<{node.number}>|)"
        if node.kind == "^":
            return "(?<![^\\n\\r\\u2028\\u2029])" if self.multiline else "\\A"
        if node.kind == "$":
            return "(?![^\\n\\r\\u2028\\u2029])" if self.multiline else "\\Z"
        w = self.word
        if node.kind == "b":
            return f"(?:(?<={w})(?!{w})|(?<!{w})(?={w}))"
        return f"(?:(?<={w})(?={w})|(?<!{w})(?!{w}))"

    def set(self, node: _Set) -> str:
        if node.properties and not self.fold:
            inside = "".join(_range_text(lo, hi) for lo, hi in node.ranges) + "".join(node.properties)
            return f"[{'^' if node.negated else ''}{inside}]"
        ranges = node.ranges
        if self.fold:
            ranges = _fold(_normal([*ranges, *(r for name in node.properties for r in _property(name))]),
                           self.unicode)
        if node.negated:
            ranges = _complement(ranges, self.top)
        return _set_text(ranges, self.top)


def _set_text(ranges: Ranges, top: int) -> str:
    if not ranges:
        return "(?!)"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _char_text(ranges[0][0])
    return "[" + "".join(_range_text(lo, min(hi, top)) for lo, hi in ranges if lo <= top) + "]"


def _range_text(lo: int, hi: int) -> str:
    return _char_text(lo) if lo == hi else f"{_char_text(lo)}-{_char_text(hi)}"


def _char_text(c: int) -> str:
    if c < 0x80 and chr(c).isalnum():
        return chr(c)
    if c < 0x100:
        return f"\\x{c:02x}"
    return f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


def _normal(ranges: Iterable[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def _complement(ranges: Ranges, top: int = 0x10FFFF) -> Ranges:
    out, start = [], 0
    for lo, hi in _normal(ranges):
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= top:
        out.append((start, top))
    return tuple(out)


_CASED_ASTRAL = ((0x10400, 0x105FF), (0x10C80, 0x10DFF), (0x118A0, 0x118FF), (0x16E40, 0x16E9F),
                 (0x1E900, 0x1E95F))  # the only blocks past U+FFFF whose letters have a case


@cache
def _canonical(unicode: bool) -> tuple[dict[int, int], dict[int, list[int]]]:
    """JavaScript's Canonicalize for every character that has a case, and the characters of each
    canonical value. Without `u`: the upper case, when it is one code unit and does not take a
    non-ASCII unit to ASCII. With `u`: simple case folding (C and S of CaseFolding.txt)."""
    canon: dict[int, int] = {}
    for lo, hi in ((0, 0xFFFF), *(_CASED_ASTRAL if unicode else ())):
        for c in range(lo, hi + 1):
            ch = chr(c)
            if unicode:
                folded = ch.casefold()
                if len(folded) != 1:
                    folded = ch.lower()  # the S mapping, where full folding (F) takes more characters
                value = ord(folded) if len(folded) == 1 else c
            else:
                upper = ch.upper()
                value = ord(upper) if len(upper) == 1 and (c < 0x80 or ord(upper) >= 0x80) else c
            if value != c:
                canon[c] = value
    sharing: dict[int, list[int]] = {}
    for c in {*canon, *canon.values()}:
        sharing.setdefault(canon.get(c, c), []).append(c)
    return canon, sharing


def _fold(ranges: Ranges, unicode: bool) -> Ranges:
    """The set under `i`: every character canonically equal to a member (the rest fold to themselves)."""
    canon, sharing = _canonical(unicode)
    if sum(hi - lo + 1 for lo, hi in ranges) <= 64:  # a letter or a small class: its members, not every cased one
        values = {canon.get(c, c) for lo, hi in ranges for c in range(lo, hi + 1)}
    else:
        starts = [lo for lo, _ in ranges]
        values = set()
        for c in sharing.keys() | canon.keys():
            at = bisect_right(starts, c) - 1
            if at >= 0 and c <= ranges[at][1]:
                values.add(canon.get(c, c))
    return _normal([*ranges, *((c, c) for value in values for c in sharing.get(value, ()))])


@cache
def _property(name: str) -> Ranges:
    """The characters of `\\p{..}`/`\\P{..}` by `regex`'s tables, to fold them under `i`."""
    import regex

    try:
        runs = regex.compile(f"[{name}]+", regex.VERSION0).finditer(_every_character())
        return tuple((m.start(), m.end() - 1) for m in runs)  # offsets are code points
    except regex.error as exc:
        raise JsRegexError(f"{name}: {exc}") from None


@cache
def _every_character() -> str:
    return "".join(map(chr, range(0x110000)))
