"""Reading a judge's JSON reply as Mastra reads a structured-output reply, cut-off replies included.

Mastra (`@mastra/core` 1.71.0, `ObjectFormatHandler.validateAndTransformFinal`) does not re-ask a
judge whose reply ended normally but whose JSON is cut off or wrapped: it preprocesses the text
(`preprocessText`) and parses it with the AI SDK's `parsePartialJson`, which on a parse failure
repairs the text with `fixJson` (closing open strings, arrays and objects, completing `tr`/`fa`/`nu`,
dropping a dangling key or a number's `.`/`e`) and parses that. What it gets is then validated
like any reply. A reply that ended for its length is another matter (evalgate/judge/client.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

# JavaScript's `\s` and trim() whitespace (evalgate.scorers.js.text.WS_CLASS); `$` is `\Z`, `\b` ASCII
_JS_WS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
# The same characters for str.strip: Mastra's regexes here backtrack (`\s+$` over a long run of spaces,
# a lazy group before a closing fence), quadratic in a hostile judge's reply; strip and find are linear.
_WS_CHARS = ("\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
             + "\u2028\u2029\u202f\u205f\u3000\ufeff")
_MESSAGE = "<|message|>"
_JSON_FENCE = re.compile(r"^```json\b", re.ASCII)
_OPEN_FENCE = re.compile(f"^```json[{_JS_WS}]*\n?")


def _whole_fence(text: str) -> str | None:
    """What Mastra's `/^```json\\s*\\n?([\\s\\S]*?)\\n?\\s*```\\s*$/` captures in `text` (which starts
    with ```json), trimmed, or None: the fence closes at the text's end, whitespace aside, and
    the lazy group holds what lies between, less the whitespace around it."""
    body_end = len(text.rstrip(_WS_CHARS)) - 3
    if body_end < 7 or text[body_end : body_end + 3] != "```":
        return None
    return text[7:body_end].strip(_WS_CHARS)


def preprocess(text: str) -> str:
    """Mastra's `preprocessText`: after a `<|message|>` marker, inside a ```json fence (or after an
    unclosed one), the last balanced `{...}` when the text does not start with `{` or `[`, and raw
    newlines, carriage returns and tabs inside strings escaped."""
    marker = text.find(_MESSAGE)
    if marker >= 0 and len(text) > marker + len(_MESSAGE):  # `/<\|message\|>([\s\S]+)$/`: its first marker
        text = text[marker + len(_MESSAGE) :]
    start = text.lstrip(_WS_CHARS)
    if _JSON_FENCE.match(start):
        text = _whole_fence(start) or _OPEN_FENCE.sub("", start, count=1)
    balanced = last_balanced_object(text)
    if balanced is not None:
        text = balanced
    return escape_control_chars(text)


def last_balanced_object(text: str) -> str | None:
    """Mastra's `extractBalancedJsonObject`: the last top-level `{...}`, unless the text starts with `{` or `[`."""
    if text.strip(_WS_CHARS).startswith(("{", "[")):
        return None
    start, depth, in_string, escaped = -1, 0, False, False
    last = None
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            in_string = not in_string
        elif in_string:
            continue
        elif char == "{":
            if depth == 0:
                start = i
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0 and start != -1:
                last = text[start : i + 1]
    return last


def escape_control_chars(text: str) -> str:
    """Mastra's `escapeUnescapedControlCharsInJsonStrings`."""
    out: list[str] = []
    in_string = False
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            out.append(text[i : i + 2])
            i += 2
            continue
        if char == '"':
            in_string = not in_string
        elif in_string and char in "\n\r\t":
            char = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char]
        out.append(char)
        i += 1
    return "".join(out)


_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_OBJECT_STATES = ("OBJECT_KEY", "OBJECT_AFTER_KEY", "OBJECT_AFTER_COMMA", "OBJECT_START", "OBJECT_BEFORE_VALUE",
                  "OBJECT_AFTER_VALUE")
_ARRAY_STATES = ("ARRAY_START", "ARRAY_AFTER_COMMA", "ARRAY_AFTER_VALUE")


def fix_json(text: str) -> str:
    """The AI SDK's `fixJson`: `text` cut after its last complete token, with what is open closed."""
    fixer = _JsonFixer(text)
    for i, char in enumerate(text):
        fixer.step(char, i)
    return fixer.closed()


class _JsonFixer:
    """`fixJson`'s state machine: a stack of states, one method per state, and the last valid position."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.stack = ["ROOT"]
        self.last_valid = -1
        self.literal_start = 0
        self.unicode_digits = 0
        self.steps = {
            "ROOT": self.root, "OBJECT_START": self.object_start, "OBJECT_AFTER_COMMA": self.object_after_comma,
            "OBJECT_KEY": self.object_key, "OBJECT_AFTER_KEY": self.object_after_key,
            "OBJECT_BEFORE_VALUE": self.object_before_value, "OBJECT_AFTER_VALUE": self.after_object_value,
            "STRING": self.string, "ARRAY_START": self.array_start, "ARRAY_AFTER_VALUE": self.array_after_value,
            "ARRAY_AFTER_COMMA": self.array_after_comma, "STRING_ESCAPE": self.string_escape,
            "STRING_UNICODE_ESCAPE": self.string_unicode_escape, "NUMBER": self.number, "LITERAL": self.literal,
        }  # FINISH: the value is whole, the rest is ignored

    def step(self, char: str, i: int) -> None:
        step = self.steps.get(self.stack[-1])
        if step is not None:
            step(char, i)

    def swap(self, state: str) -> None:
        self.stack.pop()
        self.stack.append(state)

    def value_start(self, char: str, i: int, swap: str) -> None:
        opened = {'"': "STRING", "f": "LITERAL", "t": "LITERAL", "n": "LITERAL", "-": "NUMBER", "{": "OBJECT_START",
                  "[": "ARRAY_START"}.get(char) or ("NUMBER" if char in _DIGITS else None)
        if opened is None:
            return
        if char != "-":
            self.last_valid = i
        if opened == "LITERAL":
            self.literal_start = i
        self.swap(swap)
        self.stack.append(opened)

    def after_value(self, char: str, i: int, comma: str, close: str) -> None:
        if char == ",":
            self.swap(comma)
        elif char == close:
            self.last_valid = i
            self.stack.pop()

    def after_object_value(self, char: str, i: int) -> None:
        self.after_value(char, i, "OBJECT_AFTER_COMMA", "}")

    def after_array_value(self, char: str, i: int) -> None:
        self.after_value(char, i, "ARRAY_AFTER_COMMA", "]")

    def root(self, char: str, i: int) -> None:
        self.value_start(char, i, "FINISH")

    def object_start(self, char: str, i: int) -> None:
        if char == '"':
            self.swap("OBJECT_KEY")
        elif char == "}":
            self.last_valid = i
            self.stack.pop()

    def object_after_comma(self, char: str, i: int) -> None:
        if char == '"':
            self.swap("OBJECT_KEY")

    def object_key(self, char: str, i: int) -> None:
        if char == '"':
            self.swap("OBJECT_AFTER_KEY")

    def object_after_key(self, char: str, i: int) -> None:
        if char == ":":
            self.swap("OBJECT_BEFORE_VALUE")

    def object_before_value(self, char: str, i: int) -> None:
        self.value_start(char, i, "OBJECT_AFTER_VALUE")

    def string(self, char: str, i: int) -> None:
        if char == '"':
            self.stack.pop()
            self.last_valid = i
        elif char == "\\":
            self.stack.append("STRING_ESCAPE")
        else:
            self.last_valid = i

    def array_start(self, char: str, i: int) -> None:
        self.last_valid = i
        if char == "]":
            self.stack.pop()
        else:
            self.value_start(char, i, "ARRAY_AFTER_VALUE")

    def array_after_value(self, char: str, i: int) -> None:
        if char in ",]":
            self.after_array_value(char, i)
        else:
            self.last_valid = i

    def array_after_comma(self, char: str, i: int) -> None:
        self.value_start(char, i, "ARRAY_AFTER_VALUE")

    def string_escape(self, char: str, i: int) -> None:
        self.stack.pop()
        if char == "u":
            self.unicode_digits = 0
            self.stack.append("STRING_UNICODE_ESCAPE")
        else:
            self.last_valid = i

    def string_unicode_escape(self, char: str, i: int) -> None:
        if char in _HEX:
            self.unicode_digits += 1
            if self.unicode_digits == 4:
                self.stack.pop()
                self.last_valid = i

    def number(self, char: str, i: int) -> None:
        if char in _DIGITS:
            self.last_valid = i
            return
        if char in "eE-.":
            return
        self.stack.pop()
        if char == "," and self.stack[-1] == "ARRAY_AFTER_VALUE":
            self.after_array_value(char, i)
        if char in ",}" and self.stack[-1] == "OBJECT_AFTER_VALUE":
            self.after_object_value(char, i)
        if char == "]" and self.stack[-1] == "ARRAY_AFTER_VALUE":
            self.after_array_value(char, i)

    def literal(self, char: str, i: int) -> None:
        partial = self.text[self.literal_start : i + 1]
        if any(word.startswith(partial) for word in ("false", "true", "null")):
            self.last_valid = i
            return
        self.stack.pop()
        if self.stack[-1] == "OBJECT_AFTER_VALUE":
            self.after_object_value(char, i)
        elif self.stack[-1] == "ARRAY_AFTER_VALUE":
            self.after_array_value(char, i)

    def closed(self) -> str:
        """The text up to its last valid character, then what each open state needs to close."""
        out = self.text[: self.last_valid + 1]
        for state in reversed(self.stack):
            if state == "STRING":
                out += '"'
            elif state in _OBJECT_STATES:
                out += "}"
            elif state in _ARRAY_STATES:
                out += "]"
            elif state == "LITERAL":
                partial = self.text[self.literal_start :]
                endings = (word[len(partial) :] for word in ("true", "false", "null") if word.startswith(partial))
                out += next(endings, "")
        return out


# secure-json-parse's prefilter (the AI SDK's `secureJsonParse`): a `"__proto__":` or `"constructor":`
# key, its letters possibly \u-escaped; only a reply that has one is walked
_PROTO_KEY = re.compile(r'"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)'
                        r'(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:')
_CONSTRUCTOR_KEY = re.compile(r'"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)'
                              r'(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:')


class ForbiddenKey(ValueError):
    """The reply holds a key the AI SDK's JSON reader refuses (secure-json-parse)."""


def reject_prototype_keys(text: str, value: Any) -> Any:
    """`value` (parsed from `text`), or ForbiddenKey as secure-json-parse raises: an object anywhere in
    it with a `__proto__` key, or a `constructor` key holding an object with a `prototype` key.

    Mastra's judge replies go through the AI SDK's `safeParseJSON`, which uses it: such a reply is
    no JSON to Mastra, whatever its other keys (so a retry, then the scorer's error), where Python's
    json reads `__proto__` as any key.
    """
    if not isinstance(value, (dict, list)) or not (_PROTO_KEY.search(text) or _CONSTRUCTOR_KEY.search(text)):
        return value
    pending: list[Any] = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if "__proto__" in node:
                raise ForbiddenKey("the reply has a `__proto__` key, which Mastra's JSON reader rejects")
            if isinstance(node.get("constructor"), dict) and "prototype" in node["constructor"]:
                raise ForbiddenKey("the reply has a `constructor.prototype` key, which Mastra's JSON reader rejects")
            pending.extend(v for v in node.values() if isinstance(v, (dict, list)))
        else:
            pending.extend(v for v in node if isinstance(v, (dict, list)))
    return value


def parse_partial(text: str, loads: Any = json.loads) -> Any:
    """The AI SDK's `parsePartialJson`: `text` as JSON, else `fix_json(text)` as JSON; ValueError if neither."""
    try:
        return loads(text)
    except ValueError:
        return loads(fix_json(text))
