"""A results file read as a stream: its header whole, its `items` array one item at a time.

A results file holds every item; read whole, 1,000,000 items take gigabytes. Here the header (every
top-level key but `items`) is parsed on its own and the items are parsed one by one from bounded
chunks, so memory holds the header and one item, whatever the file's size.

Two ways in. evalgate's own layout (a run's and a merge's: the header on the first line, then one item
per line, `]}` at the end) is read line by line. Anything else (a file reformatted, or rewritten on one
line by `compare -o`) is scanned by a small incremental reader: a regular expression skips strings and
plain text in C and stops at each bracket outside a string, so the depth is counted in Python only
once per bracket. The items' bytes are parsed by `json` (strict JSON a run writes; a lone surrogate's
escape reads back), so what this reads is what `json.loads` of the whole file gives.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

CHUNK = 1 << 20
LINE_MAX = 64 * CHUNK  # a line read whole (a header with a shard's columns, an item) up to this; past it, chunks
ITEMS_MARK = b', "items": ['
ITEMS_END = b"]}"
# From a point outside any string: plain text and whole strings (possessive: never backtracked), then the
# next bracket outside a string, captured. No match: the buffer ends inside a string (or the text is broken).
_TO_BRACKET = re.compile(rb'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.)*+")*+([\[\]{}])', re.DOTALL)
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_CLOSES = {ord("]"): ord("["), ord("}"): ord("{")}
_SPACE = b" \t\r\n"


class ResultsFormatError(ValueError):
    """The file is not JSON a run writes (the message says where)."""


def loads(text: bytes) -> Any:
    """One JSON value as a run writes it: orjson, else `json` (a lone surrogate's escape, NaN)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            return json.loads(text.decode("utf-8"))
        except RecursionError:
            raise ResultsFormatError("nested too deeply to read") from None
        except UnicodeDecodeError as exc:
            raise ResultsFormatError(f"not UTF-8 text ({exc.reason})") from None


class StreamedResults:
    """A results file's header (a mapping without `items`) and its items, read again on each `items()`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines_from: int | None = None  # evalgate's layout: the first item's line starts here
        self.array_at: int | None = None  # otherwise: the `[` of the items array
        self.has_items = False
        self.held: list[Any] | None = None  # items found in the header's text (a key spelled with escapes)
        self.header = self._read_header()

    def _read_header(self) -> dict[str, Any]:
        with self.path.open("rb") as handle:
            first = handle.readline(LINE_MAX)  # a shard's header holds its score columns
            mark = first.find(ITEMS_MARK)
            if first.startswith(b"{") and mark > 0 and first.endswith(b"\n") and _ends_with_items(handle):
                try:
                    head = loads(first[:mark] + b"}")
                except ValueError:
                    head = None
                if isinstance(head, dict) and "items" not in head:
                    self.lines_from = mark + len(ITEMS_MARK)
                    rest = first[self.lines_from:].strip()
                    self.has_items = rest not in (b"]}", b"")
                    return head
            handle.seek(0)
            return self._scan_header(handle)

    def _scan_header(self, handle: BinaryIO) -> dict[str, Any]:
        """The header of a file in any layout: its text with the items array left out, parsed."""
        scanner = _Scanner(handle)
        span = scanner.items_span()
        if span is None:  # no items array at the top level: no results, or a key spelled with escapes
            handle.seek(0)
            raw = loads(handle.read())
            if not isinstance(raw, dict):
                raise ResultsFormatError("the results are not a JSON object")
            if isinstance(raw.get("items"), list):
                self.held = raw.pop("items")
                self.has_items = bool(self.held)
            return raw
        start, end = span
        self.array_at = start
        handle.seek(0)
        before = handle.read(start)
        handle.seek(end)
        after = handle.read()
        raw = loads(before + b"[]" + after)
        if not isinstance(raw, dict):
            raise ResultsFormatError("the results are not a JSON object")
        raw.pop("items", None)
        self.has_items = scanner.array_has_element
        return raw

    @property
    def has_items_array(self) -> bool:
        """Whether the file has a top-level `items` list (empty or not)."""
        return self.lines_from is not None or self.array_at is not None or self.held is not None

    def items(self) -> Iterator[Any]:
        """Each item's parsed JSON value, in file order; ResultsFormatError where the file is broken."""
        if self.held is not None:
            yield from self.held
        elif "items" in self.header:
            raise ResultsFormatError("`items` is not a list")
        elif self.lines_from is not None:
            yield from self._lines()
        elif self.array_at is not None:
            with self.path.open("rb") as handle:
                handle.seek(self.array_at)
                yield from _Scanner(handle).elements()

    def _lines(self) -> Iterator[Any]:
        assert self.lines_from is not None
        count = 0
        with self.path.open("rb") as handle:
            handle.seek(self.lines_from)
            for line in iter(lambda: handle.readline(LINE_MAX), b""):
                value = _line_item(line)  # None for a line cut at LINE_MAX: the incremental reader takes it
                if value is None:
                    if count == 0 and line == b"]}\n":
                        return  # `"items": []}`
                    break  # not one item a line after all: the incremental reader takes over
                count += 1
                yield value
                if not line.endswith(b",\n"):  # `]}`: the last, when nothing follows
                    if handle.read(1) == b"":
                        return
                    break
        # the layout broke: scan from the array's start, past the items already given
        self.array_at = self.lines_from - 1
        with self.path.open("rb") as handle:
            handle.seek(self.array_at)
            for n, value in enumerate(_Scanner(handle).elements()):
                if n >= count:
                    yield value


def _line_item(line: bytes) -> dict[str, Any] | None:
    """The item of a line as evalgate writes them (`{...},` or, the last, `{...}]}`); None otherwise."""
    if line.endswith(b",\n"):
        body = line[:-2]
    elif line.endswith(b"]}\n"):
        body = line[:-3]
    else:
        return None
    if not body:
        return None
    try:
        value = loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _ends_with_items(handle: BinaryIO) -> bool:
    """Whether the file ends as evalgate ends one: `]}` and a newline. Leaves the handle after the first line."""
    at = handle.tell()
    handle.seek(0, 2)
    size = handle.tell()
    if size < at + 3:
        handle.seek(at)
        return False
    handle.seek(size - 3)
    tail = handle.read(3)
    handle.seek(at)
    return tail == b"]}\n"


class _Scanner:
    """Brackets outside strings, found chunk by chunk: the items array's span, then its elements."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.buffer = b""
        self.offset = handle.tell()  # the file offset of buffer[0]
        self.at = 0  # where scanning resumes in the buffer (outside any string)
        self.eof = False
        self.array_has_element = False

    def _more(self, keep_from: int) -> None:
        """Drop the buffer before `keep_from`, read another chunk (twice the kept text when it is long:
        a long string read again each time would be quadratic)."""
        kept = self.buffer[keep_from:]
        block = self.handle.read(max(CHUNK, len(kept)))
        if not block:
            self.eof = True
        self.offset += keep_from
        self.at -= keep_from
        self.buffer = kept + block

    def _next(self, keep_from: int) -> tuple[int, int, int]:
        """(bracket byte, its index in the buffer, the index where the text before it starts)."""
        while True:
            found = _TO_BRACKET.match(self.buffer, self.at)
            if found is not None:
                start = self.at
                self.at = found.end()
                return self.buffer[found.start(1)], found.start(1), start
            if self.eof:
                raise ResultsFormatError(f"the file ends early (near byte {self.offset + self.at})")
            drop = min(keep_from, self.at)
            self._more(drop)
            keep_from -= drop

    def items_span(self) -> tuple[int, int] | None:
        """The file offsets of the top-level `items` array's `[` and of the byte after its `]`."""
        stack: list[int] = []
        span = None
        while True:
            try:
                bracket, where, start = self._next(self.at)
            except ResultsFormatError:
                if not stack:
                    return span
                raise
            if bracket in (ord("["), ord("{")):
                if len(stack) == 1 and bracket == ord("[") and _key_before(self.buffer[start:where]) == "items":
                    array_at = self.offset + where
                    self.at = where
                    self.array_has_element = False
                    end = self._skip_array()
                    span = (array_at, end)
                    continue
                stack.append(bracket)
            else:
                if not stack or stack.pop() != _CLOSES[bracket]:
                    raise ResultsFormatError(f"a bracket does not match (near byte {self.offset + where})")
                if not stack:
                    return span

    def _skip_array(self) -> int:
        """Past the array starting at `at`; the file offset after its `]`."""
        for _ in self.elements(parse=False):
            self.array_has_element = True
        return self.offset + self.at

    def elements(self, parse: bool = True) -> Iterator[Any]:
        """Each element of the array whose `[` is at `at`, parsed (or, unparsed, its bytes); the buffer
        holds one element at most."""
        bracket, where, _ = self._next(self.at)
        if bracket != ord("["):
            raise ResultsFormatError(f"`items` is not a list (near byte {self.offset + where})")
        first = True
        while True:
            bracket, where, start = self._next(self.at)
            between = self.buffer[start:where].strip(_SPACE)
            if between or bracket != ord("{"):
                if first and not between and bracket == ord("]"):
                    return  # `[]`
                raise ResultsFormatError(self._not_object(where))
            first = False
            element = self._element(where)
            yield loads(element) if parse else element
            if self._after_element() == ord("]"):
                return

    def _element(self, begin: int) -> bytes:
        """The object starting at buffer[begin]: its bytes (the buffer keeps them while they are read)."""
        stack = [ord("{")]
        begin_offset = self.offset + begin
        while stack:
            keep = begin_offset - self.offset
            bracket, where, _ = self._next(keep)
            if bracket in (ord("["), ord("{")):
                stack.append(bracket)
            elif stack.pop() != _CLOSES[bracket]:
                raise ResultsFormatError(f"a bracket does not match (near byte {self.offset + where})")
        return self.buffer[begin_offset - self.offset:self.at]

    def _after_element(self) -> int:
        """The byte after an element (`,` or `]`), consumed; ResultsFormatError for anything else."""
        while True:
            buffer, at = self.buffer, self.at
            while at < len(buffer) and buffer[at] in _SPACE:
                at += 1
            self.at = at
            if at < len(buffer):
                byte = buffer[at]
                if byte not in (ord(","), ord("]")):
                    raise ResultsFormatError(self._not_object(at))
                self.at += 1
                return byte
            if self.eof:
                raise ResultsFormatError(f"the file ends early (near byte {self.offset + self.at})")
            self._more(self.at)

    def _not_object(self, where: int) -> str:
        return f"an item is not a JSON object (near byte {self.offset + where})"


def _key_before(text: bytes) -> str | None:
    """The key a value starting after `text` belongs to: `..., "items": ` gives "items"."""
    text = text.rstrip(_SPACE)
    if not text.endswith(b":"):
        return None
    strings = list(_STRING.finditer(text))
    if not strings or text[strings[-1].end():-1].strip(_SPACE):
        return None
    try:
        key = json.loads(strings[-1].group())
    except ValueError:
        return None
    return key if isinstance(key, str) else None
