"""Untrusted text made safe to show, and untrusted values made safe to write as JSON.

- `visible` turns control characters (ESC, OSC, BEL, C1, DEL, ...), bidirectional overrides
  (U+202A-U+202E, U+2066-U+2069, ...) and invisible characters into visible escapes like `\\x1b`,
  `\\u202e` and `\\U000e0041`, so model output cannot move the cursor, retitle a terminal, reorder
  what a reviewer reads, hide text in it or make two different ids look the same. Invisible: Unicode's
  default-ignorable code points (drawn as nothing) such as the tag characters U+E0000-U+E00FF (text
  only a model reads: "ASCII smuggling"), U+200B zero width space, U+2060-U+2064 word joiner and
  invisible operators, U+FEFF, U+180E, U+00AD soft hyphen and the Hangul fillers U+115F, U+1160,
  U+3164, U+FFA0. Kept, as scripts and emoji need them: U+200C/U+200D (ZWNJ, ZWJ; a run of four or
  more has no use and is escaped), one variation selector after a character (U+FE00-U+FE0F,
  U+E0100-U+E01EF, Mongolian U+180B-U+180D, U+180F; a second in a row, hidden bytes after an emoji,
  is escaped) and the tags of the flags of England, Scotland and Wales.
- `terminal` is `visible` for a stream: evalgate's own SGR colours, `\\r`, and the zero width space
  it puts in a `::` or `##[` of untrusted text (so that no line of its table is a workflow command) pass.
- `no_surrogates` replaces lone surrogates (valid in JSON and Python strings, not in UTF-8).
- `plain` makes any value JSON-writable: cycles, nesting past `MAX_DEPTH` and integers too long
  to write become markers, NaN and infinities null, other objects their `str`.
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_DEPTH = 64
# Bidi controls and the default-ignorable code points (drawn as nothing) but the joiners and variation
# selectors: U+00AD, U+034F, U+061C, U+115F-1160, U+17B4-17B5, U+180E, U+200B, U+200E-200F, U+202A-202E,
# U+2060-206F, U+3164, U+FEFF, U+FFA0, U+FFF0-FFF8; past U+FFFF, U+1BCA0-1BCA3, U+1D173-1D17A, U+E0000-E00FF
# (the tag characters) and U+E01F0-E0FFF.
_HIDDEN_BMP = ("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u206f"
               "\u3164\ufeff\uffa0\ufff0-\ufff8")
_HIDDEN = _HIDDEN_BMP + "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e00ff\U000e01f0-\U000e0fff"
_SELECTORS_BMP = "\u180b-\u180d\u180f\ufe00-\ufe0f"
_SELECTORS = _SELECTORS_BMP + "\U000e0100-\U000e01ef"
# The flags of England, Scotland and Wales: U+1F3F4, `gbeng`/`gbsct`/`gbwls` in tag characters, a cancel tag.
_TAG_FLAG = ("\U0001f3f4\U000e0067\U000e0062(?:\U000e0065\U000e006e\U000e0067|\U000e0073\U000e0063\U000e0074|"
             "\U000e0077\U000e006c\U000e0073)\U000e007f")
_SURROGATES = "\ud800-\udfff"
# Whatever of these may need an escape past U+FFFF: looked for only in text that is not ASCII.
_ASTRAL = re.compile("[\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")


class _Unsafe:
    """What to escape, given the control characters to: `candidate` finds, in one scan of a class that is
    all below U+10000 (Python's fastest), any character that may need an escape (or a lone surrogate);
    `pattern` matches what does. A flag is matched whole (and kept); a variation selector is escaped after
    another (a base character takes one), and ZWNJ/ZWJ in a run of four or more (three is the longest
    the Unicode Standard uses: ZWJ ZWNJ ZWJ)."""

    def __init__(self, controls: str) -> None:
        self.controls = controls
        self.candidate = re.compile(f"[{controls}{_HIDDEN_BMP}{_SELECTORS_BMP}\u200c\u200d{_SURROGATES}]")
        self._pattern: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        """Compiled when first needed: most text needs no escape, and its 0.7 ms would be every command's."""
        if self._pattern is None:
            self._pattern = re.compile(f"[{self.controls}{_HIDDEN}]|[{_SELECTORS}](?<=[{_SELECTORS}]{{2}})"
                                       f"|[\u200c\u200d]{{4,}}|{_TAG_FLAG}")
        return self._pattern

    def clean(self, text: str) -> bool:
        """Nothing in `text` needs an escape, nor is a lone surrogate (the common case, found fast)."""
        return self.candidate.search(text) is None and (text.isascii() or _ASTRAL.search(text) is None)


# C0 but tab and newline (carriage return too: it rewrites a terminal line), DEL, C1.
_UNSAFE = _Unsafe("\x00-\x08\x0b-\x1f\x7f-\x9f")
_UNSAFE_KEEP_CR = _Unsafe("\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f")
_SURROGATE = re.compile(f"[{_SURROGATES}]")
# What a terminal stream lets through unchanged: our own colour codes (SGR) only.
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _escape(match: re.Match[str]) -> str:
    text = match.group()
    if text[0] == "\U0001f3f4":  # a flag's tags
        return text
    return "".join(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
                   for code in map(ord, text))


def _escape_but_breaks(match: re.Match[str]) -> str:
    """As `_escape`, but the zero width space evalgate itself puts in a `::` and a `##[` of untrusted text
    (report.terminal.one_line: no workflow command from the terminal table) passes."""
    if match.group() == "\u200b":
        start, end, line = match.start(), match.end(), match.string
        if (line[start - 1 : start] == ":" and line[end : end + 1] == ":") or \
                (line[start - 2 : start] == "##" and line[end : end + 1] == "["):
            return "\u200b"
    return _escape(match)


def visible(text: str, *, keep_cr: bool = False, own_breaks: bool = False) -> str:
    """Control, bidi and invisible characters as visible escapes; tab and newline kept.
    own_breaks: keep the zero width space evalgate puts in `:\\u200b:` and `##\\u200b[`."""
    unsafe = _UNSAFE_KEEP_CR if keep_cr else _UNSAFE
    if unsafe.clean(text):
        return text
    return unsafe.pattern.sub(_escape_but_breaks if own_breaks else _escape, no_surrogates(text))


def terminal(text: str) -> str:
    """For a terminal stream: like `visible`, but SGR colour sequences (evalgate's own), \\r and evalgate's
    own workflow-command breaks pass."""
    if _UNSAFE_KEEP_CR.clean(text):
        return text
    parts = []
    last = 0
    for match in _SGR.finditer(text):
        parts.append(visible(text[last : match.start()], keep_cr=True, own_breaks=True))
        parts.append(match.group())
        last = match.end()
    parts.append(visible(text[last:], keep_cr=True, own_breaks=True))
    return "".join(parts)


def no_surrogates(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def plain(value: Any, depth: int = MAX_DEPTH) -> Any:
    """A JSON-writable copy of `value`: bounded depth, no cycles, finite numbers."""
    return _plain(value, depth, set())


def _plain(value: Any, depth: int, active: set[int]) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= _SHORT_INT_BITS else _long_int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (dict, list, tuple)):
        if depth <= 0:
            return "…(nested too deeply)"
        if id(value) in active:
            return "…(cycle)"
        active.add(id(value))
        try:
            if isinstance(value, dict):
                return {str(k): _plain(v, depth - 1, active) for k, v in value.items()}
            return [_plain(v, depth - 1, active) for v in value]
        finally:
            active.discard(id(value))
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__name__}>"


_SHORT_INT_BITS = 2000  # about 600 digits: under any limit Python lets sys.set_int_max_str_digits() set


def _long_int(value: int) -> int | str:
    """The integer, or a marker where Python refuses to write it out (more than sys.get_int_max_str_digits()
    digits: json.dumps raised ValueError, and a function returning 10**5000 ended the run)."""
    try:
        str(value)
    except ValueError:
        return f"…(an integer of about {int(value.bit_length() * 0.30103):,} digits)"
    return value


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether a parsed JSON/YAML value nests deeper than `limit` (iterative: no recursion limit)."""
    stack = [(value, 0)]
    seen: set[int] = set()
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth >= limit:
                return True
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return False
