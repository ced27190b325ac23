"""Untrusted text made safe to show, and untrusted values made safe to write as JSON.

- `visible` turns control characters (ESC, OSC, BEL, C1, DEL, ...) and bidirectional overrides
  (U+202A-U+202E, U+2066-U+2069, ...) into visible escapes like `\\x1b` and `\\u202e`, so model
  output cannot move the cursor, retitle a terminal, hide text or reorder what a reviewer reads.
- `no_surrogates` replaces lone surrogates (valid in JSON and Python strings, not in UTF-8).
- `plain` makes any value JSON-writable: cycles, nesting past `MAX_DEPTH` and integers too long
  to write become markers, NaN and infinities null, other objects their `str`.
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_DEPTH = 64
# C0 but tab and newline (carriage return too: it rewrites a terminal line), DEL, C1, bidi controls.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_KEEP_CR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# What a terminal stream lets through unchanged: our own colour codes (SGR) only.
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, keep_cr: bool = False) -> str:
    """Control and bidi characters as visible escapes; tab and newline kept."""
    return (_UNSAFE_KEEP_CR if keep_cr else _UNSAFE).sub(_escape, no_surrogates(text))


def terminal(text: str) -> str:
    """For a terminal stream: like `visible`, but SGR colour sequences (evalgate's own) and \\r pass."""
    if not _UNSAFE_KEEP_CR.search(text) and not _SURROGATE.search(text):
        return text
    parts = []
    last = 0
    for match in _SGR.finditer(text):
        parts.append(visible(text[last : match.start()], keep_cr=True))
        parts.append(match.group())
        last = match.end()
    parts.append(visible(text[last:], keep_cr=True))
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
