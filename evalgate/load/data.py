"""Data files (.jsonl, .json, .yaml/.yml, .csv): raw items, each with where it is in its file.

Reading only: the loader validates the items and builds them into cases. Every problem names
the data file and line (the JSONL line, the YAML node, the CSV row).
"""

from __future__ import annotations

import codecs
import csv
import json
import re
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from evalgate.errors import TOO_DEEP, display_path, not_a_file, not_utf8, not_utf8_line
from evalgate.infra.textsafe import depth_exceeds
from evalgate.load.items import ITEM_FIELDS
from evalgate.load.yaml_positions import MAX_DEPTH, MAX_YAML_CHARS, Positions, YAMLSyntaxError, load

Located = tuple[Any, Positions, tuple[str | int, ...]]  # raw item, positions, path prefix
MAX_JSON_BYTES = 256 * 2**20  # a .json file is read whole; bigger data sets belong in .jsonl (streamed)
MAX_LINE_BYTES = 16 * 2**20  # one JSONL item
_JSON_COLUMNS = ("inputs", "turns", "context", "expected_trajectory", "metadata", "output", "outputs", "ground_truth")


def count_lines(path: Path) -> int:
    """Items in a data file, for progress: JSONL lines; 0 when it cannot tell cheaply."""
    count = 0
    try:
        if path.suffix.lower() != ".jsonl" or not path.is_file():
            return 0
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                count += block.count(b"\n")
    except (OSError, ValueError):  # a name too long, a NUL, unreadable: reading it says what is wrong
        return 0
    return count


@dataclass(frozen=True)
class BadLine:
    """A data line that holds no item (not JSON, not UTF-8, too deep): its problem, for the builder to
    collect with the others instead of ending the reading at the first."""

    message: str


class DataError(ValueError):
    """A data file that cannot be read as items: the problem, its line, and whether `data:` is at fault."""

    def __init__(self, message: str, line: int | None = None, file: str | None = None, in_spec: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.file = file
        self.in_spec = in_spec  # the spec's `data:` value is at fault, not the file's content


def read_file(path: Path) -> Iterator[Located]:
    suffix = path.suffix.lower()
    readers = {".jsonl": _read_jsonl, ".json": _read_json, ".yaml": _read_yaml, ".yml": _read_yaml, ".csv": _read_csv}
    reader = readers.get(suffix)
    if reader is None:
        # `data: ""` or `.` names the spec's folder, `data: questions` a file of no type: say which
        unusable = not_a_file(path, what=f"data file `{display_path(path)}`")
        what = f"unknown data file type `{suffix}`" if suffix else f"the data file `{display_path(path)}` has no type"
        raise DataError(unusable or f"{what}; use .jsonl, .json, .yaml, .yml or .csv", in_spec=True)
    limit = {".json": MAX_JSON_BYTES, ".yaml": MAX_YAML_CHARS, ".yml": MAX_YAML_CHARS}.get(suffix)
    unusable = not_a_file(path, limit=limit, what=f"data file `{display_path(path)}`")
    if unusable is not None:
        raise DataError(unusable, in_spec=True)
    if not path.is_file():
        raise DataError(
            f"no such data file `{display_path(path)}`; `data:` is a path relative to the spec file", in_spec=True
        )
    return reader(path)


def _check_depth(raw: Any, text: str, line: int | None) -> None:
    """Refuse items nested past MAX_DEPTH: they would overflow the stack later, in validation or writing."""
    if text.count("{") + text.count("[") > MAX_DEPTH and depth_exceeds(raw, MAX_DEPTH):
        raise DataError(f"nested more than {MAX_DEPTH} levels deep; flatten the structure", line)


_HUGE_INTEGER = re.compile(rf"-?[0-9]{{{sys.get_int_max_str_digits() + 1},}}")


def _json_problem(exc: ValueError, text: str) -> str:
    """What to change in JSON that json refused. Python reads integers of up to 4300 digits only: its
    own message for a longer one ("use sys.set_int_max_str_digits()") is nothing a data file can do."""
    if isinstance(exc, json.JSONDecodeError) or "integer string conversion" not in str(exc):
        return f"invalid JSON: {exc}"
    found = _HUGE_INTEGER.search(text)
    shown = f" ({found.group()[:12]}..., {len(found.group().lstrip('-'))} digits)" if found else ""
    return (f"a number longer than {sys.get_int_max_str_digits()} digits{shown}, more than evalgate reads; "
            "quote it to keep it as text")


def _jsonl_problem(exc: ValueError, line: str) -> str:
    """`_json_problem` for one JSONL line, placed by column: json's own "line 2 column 1" counted the
    line's newline, beside the file's line number. A line that ends before its JSON does is most often
    an item spread over several lines, as JSON is pretty-printed: JSONL holds one on each."""
    if not isinstance(exc, json.JSONDecodeError):
        return _json_problem(exc, line)
    if exc.pos >= len(line.rstrip()):
        return f"invalid JSON: {exc.msg} at the end of the line; JSONL holds one whole item on each line"
    return f"invalid JSON: {exc.msg} at column {exc.pos + 1}"


def _json_line(exc: ValueError, text: str) -> int | None:
    """The line json's error is at; for an integer too long to read, the line of the first such one."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.lineno
    found = _HUGE_INTEGER.search(text)
    return text.count("\n", 0, found.start()) + 1 if found else None


class _Line(Positions):
    """Every path of a one-line item (JSONL, CSV) is on that line."""

    __slots__ = ("number",)

    def __init__(self, number: int) -> None:  # no dicts: one of these per item read
        self.number = number

    def line(self, path: tuple[str | int, ...], *, key: bool = False) -> int | None:
        return self.number


_line_positions = _Line
_LONG_DIGITS = re.compile(rb"[0-9]{19}")
_DIGITS = b"0123456789"
_MANY_BRACKETS = 256


def _long_integer(data: bytes) -> bool:
    """Whether a line may hold an integer of 19 digits or more (orjson would read it as a float).

    Counting digits (a C loop) first spares the regex on almost every line: it costs 10x as much.
    """
    return len(data) - len(data.translate(None, _DIGITS)) >= 19 and _LONG_DIGITS.search(data) is not None


def _read_jsonl(path: Path) -> Iterator[Located]:
    with path.open("rb") as handle:  # bytes: a line that is not UTF-8 is named by its number
        for number, data in enumerate(iter(partial(handle.readline, MAX_LINE_BYTES + 1), b""), 1):
            if len(data) > MAX_LINE_BYTES:
                raise DataError(f"the line is over {MAX_LINE_BYTES // 2**20} MiB; evalgate reads items up to "
                                 "that size", number)
            # orjson reads an integer beyond 64 bits as a float, and nests deeper than json refuses to
            brackets = data.count(b"[") + data.count(b"{")
            if brackets < _MANY_BRACKETS and not _long_integer(data):
                try:
                    raw = orjson.loads(data)  # the common case, about twice as fast as json
                except orjson.JSONDecodeError:
                    pass  # a BOM, a blank line, NaN, a lone surrogate, or bad JSON: json decides, as before
                else:
                    if brackets > MAX_DEPTH and depth_exceeds(raw, MAX_DEPTH):
                        raise DataError(f"nested more than {MAX_DEPTH} levels deep; flatten the structure", number)
                    yield raw, _line_positions(number), ()
                    continue
            # A line that holds no item is one problem among the others: every one is reported at once
            try:
                line = data.decode("utf-8-sig" if number == 1 else "utf-8")  # a BOM is fine
            except UnicodeDecodeError as exc:
                yield BadLine(not_utf8(exc)), _line_positions(number), ()
                continue
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                _check_depth(raw, line, number)
            except DataError as exc:
                yield BadLine(str(exc)), _line_positions(number), ()
                continue
            except ValueError as exc:
                yield BadLine(_jsonl_problem(exc, line)), _line_positions(number), ()
                continue
            except RecursionError:
                yield BadLine(TOO_DEEP), _line_positions(number), ()
                continue
            yield raw, _line_positions(number), ()


class _JSONPositions(Positions):
    """Lines of a .json file's nodes, found when the first line is asked for (by `_scan_json`); in a file
    too big for that, the line each item starts on."""

    def __init__(self, text: str, wrapped: bool) -> None:
        super().__init__()
        self._text: str | None = text
        self._wrapped = wrapped
        self._item_lines: array[int] | None = None

    def line(self, path: tuple[str | int, ...], *, key: bool = False) -> int | None:
        if self._text is not None:
            if len(self._text) <= MAX_POSITIONS_CHARS:
                found = Positions()
                _scan_json(self._text, found)
                found = _unwrap_items(found) if self._wrapped else found
                self.values, self.keys = found.values, found.keys
            else:
                self._item_lines = _item_lines(self._text, self._wrapped)
            self._text = None
        lines = self._item_lines
        if lines is not None:
            index = path[0] if path else None
            return lines[index] if index.__class__ is int and 0 <= index < len(lines) else None
        return super().line(path, key=key)


# Lines are found for every node of a .json file up to this size (bounded time and memory); a larger file's
# problems name the line its item starts on. As much as YAML was read for, which found them before.
MAX_POSITIONS_CHARS = MAX_YAML_CHARS
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _item_lines(text: str, wrapped: bool) -> array[int]:
    """The line each item of a .json file starts on, by item index: one pass of json's C decoder over the
    list (and, with `wrapped`, over the top-level mapping to find its last `items`), one int per item kept.

    `text` is what json.loads read without error, so every value here decodes."""
    def space(at: int) -> int:
        return _JSON_SPACE.match(text, at).end()  # type: ignore[union-attr]  # matches the empty string

    at = space(0)
    if wrapped:  # {"k": v, ..., "items": [...]}: json.loads keeps the last `items`
        items_at, at = None, space(at + 1)
        while text[at] == '"':
            key, at = _DECODER.raw_decode(text, at)
            at = space(space(at) + 1)  # past the colon
            if key == "items":
                items_at = at
            at = space(_DECODER.raw_decode(text, at)[1])
            if text[at] == ",":
                at = space(at + 1)
        if items_at is None:
            return array("q")
        at = items_at
    lines = array("q")
    line, counted = 1, 0
    at = space(at + 1)  # past the `[`
    while text[at] != "]":
        line += text.count("\n", counted, at)
        counted = at
        lines.append(line)
        at = space(_DECODER.raw_decode(text, at)[1])
        if text[at] == ",":
            at = space(at + 1)
    return lines


# A JSON token: a string (escapes and all, so brackets and commas in it are text), a bracket or
# separator, or a bare scalar (number, true, false, null). Whitespace, tabs included, lies between.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]|[^\s\[\]{},:"]+')


def _scan_json(text: str, positions: Positions | None, limit: int | None = None) -> tuple[int, tuple[Any, ...]] | None:
    """Walk JSON text without recursion: the line of every value and key into `positions`. With `limit`,
    stop at the first `[` or `{` nested deeper (as `depth_exceeds` counts) and return its line and path.

    The lines are JSON's own: only `\\n` ends a line. Reading the file again as YAML found them before,
    but YAML reads some JSON otherwise: tabs as indentation it refuses, brackets inside strings it counts
    as nesting, a NEL (U+0085) in a string it takes for a line break; the lines were lost or off."""
    stack: list[list[Any]] = []  # per open container: [path, is a mapping, index, key, a key is next]
    line, last = 1, 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first == ",":
            if stack:
                frame = stack[-1]
                if frame[1]:
                    frame[4] = True
                else:
                    frame[2] += 1
            continue
        if first == ":":
            continue
        if first == "]" or first == "}":
            if stack:
                stack.pop()
            continue
        start = match.start()
        line += text.count("\n", last, start)
        last = start
        if stack:
            frame = stack[-1]
            if frame[1] and frame[4]:  # a mapping's key
                frame[3] = _json_key(token)
                frame[4] = False
                if positions is not None:
                    positions.keys[(*frame[0], frame[3])] = line
                continue
            here = (*frame[0], frame[3] if frame[1] else frame[2])
        else:
            here = ()
        if positions is not None:
            positions.values[here] = line
        if first == "[" or first == "{":
            if limit is not None and len(stack) >= limit:
                return line, here
            stack.append([here, first == "{", 0, None, True])
    return None


def _json_key(token: str) -> Any:
    if "\\" not in token:
        return token[1:-1]
    try:
        return json.loads(token)
    except ValueError:  # not a string (a file json refused): the text stands for it
        return token


def _too_deep(text: str) -> DataError:
    """Nesting past MAX_DEPTH, at the line where it passes it and in the item it is in."""
    found = _scan_json(text, None, MAX_DEPTH)
    if found is None:  # json refused it, and no bracket passes the limit outside a string
        return DataError(TOO_DEEP, None)
    line, path = found
    index = path[1] if path[:1] == ("items",) and len(path) > 1 else path[0] if path else None
    item = f"item {index + 1}: " if isinstance(index, int) else ""
    return DataError(f"{item}nested more than {MAX_DEPTH} levels deep; flatten the structure", line)


def _unwrap_items(positions: Positions) -> Positions:
    """Positions of `{items: [...]}` seen from the list."""
    return Positions(
        values={p[1:]: v for p, v in positions.values.items() if p[:1] == ("items",)},
        keys={p[1:]: v for p, v in positions.keys.items() if p[:1] == ("items",)},
    )


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")  # spreadsheet and editor exports may start with a BOM
    except UnicodeDecodeError as exc:
        raise DataError(not_utf8(exc), not_utf8_line(exc)) from None


def _read_json(path: Path) -> Iterator[Located]:
    text = _read_text(path)
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise DataError(_json_problem(exc, text), _json_line(exc, text)) from None
    except RecursionError:
        raise _too_deep(text) from None
    if text.count("{") + text.count("[") > MAX_DEPTH and depth_exceeds(raw, MAX_DEPTH):
        raise _too_deep(text)
    wrapped = isinstance(raw, dict) and isinstance(raw.get("items"), list)
    if wrapped:
        raw = raw["items"]
    if not isinstance(raw, list):
        raise DataError("a .json data file holds a list of items (or {\"items\": [...]})", 1)
    positions = _JSONPositions(text, wrapped)
    return ((item, positions, (i,)) for i, item in enumerate(raw))


def _read_yaml(path: Path) -> Iterator[Located]:
    try:
        raw, positions = load(_read_text(path))
    except YAMLSyntaxError as exc:
        raise DataError(str(exc), exc.line) from None
    except RecursionError:
        raise DataError(TOO_DEEP, None) from None
    if isinstance(raw, dict) and isinstance(raw.get("items"), list):
        raw = raw["items"]
        positions = _unwrap_items(positions)
    if not isinstance(raw, list):
        raise DataError("a YAML data file holds a list of items", 1)
    return ((item, positions, (i,)) for i, item in enumerate(raw))


def _misnamed_input(columns: list[str]) -> str:
    """`; the column `inptu` is probably it (rename it `input`)` for a header that misspells `input`."""
    import difflib  # only on this error

    for column in columns:
        if difflib.get_close_matches(str(column).strip().lower(), ["input", "inputs"], n=1, cutoff=0.75):
            return f"; did you mean `input` for the column `{str(column)[:60]}`?"
    return ""


def _read_csv(path: Path) -> Iterator[Located]:
    """A row per item; `input`, `id`, item fields as columns (JSON where a field is structured);
    any other column goes into `metadata`."""
    # csv's own field limit is 128 KiB; a row (and so a field) may be as long as a JSONL line
    csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))
    with path.open(encoding="utf-8-sig", newline="") as handle:  # Excel writes a BOM first
        # strict: an unclosed quote is an error, not one long field; lines are bounded like JSONL's
        reader = csv.DictReader(_bounded_lines(handle), strict=True)
        rows = _csv_rows(reader, path)
        fields = next(rows)
        if not fields or not {"input", "inputs", "turns"} & set(fields):
            raise DataError("a CSV data file needs an `input` column" + _misnamed_input(fields or []), 1)
        repeated = sorted({f for f in fields if fields.count(f) > 1})
        if repeated:
            raise DataError(f"the header names {', '.join(f'`{f}`' for f in repeated)} more than once; "
                             "the later column would silently replace the earlier: rename one", 1)
        line = reader.line_num + 1
        for row in rows:
            extra = row.get(None)
            if extra and any(extra):  # cells past the header's columns: an unquoted comma split a field
                raise DataError(f"this row has {len(fields) + len(extra)} fields, the header {len(fields)}: the "
                                "last would be dropped; quote a field that holds a comma (\"a, b\")", line)
            item: dict[str, Any] = {}
            metadata: dict[str, Any] = {}
            for key, value in row.items():
                if key is None or value is None or value == "":
                    continue
                if key in _JSON_COLUMNS:
                    item[key] = _csv_json(key, value, line)
                elif key in ITEM_FIELDS:
                    item[key] = value
                else:
                    metadata[key] = value
            if metadata:
                item["metadata"] = _csv_metadata(item.get("metadata"), metadata, line)
            yield item, _line_positions(line), ()
            line = reader.line_num + 1


def _csv_metadata(given: Any, columns: dict[str, Any], line: int) -> dict[str, Any]:
    """The `metadata` column's object with the other columns added: neither may silently drop the other."""
    if given is None:
        return columns
    names = ", ".join(f"`{name}`" for name in columns)
    if not isinstance(given, dict):
        shown = json.dumps(given, ensure_ascii=False)
        raise DataError(f"column `metadata` holds {shown[:60]}{'...' if len(shown) > 60 else ''}, but the other "
                        f"columns ({names}) go into the metadata: make it a JSON object or leave it empty", line)
    clash = [name for name in columns if name in given]
    if clash:
        raise DataError(f"column `{clash[0]}` and the key `{clash[0]}` of column `metadata` both set metadata's "
                        f"`{clash[0]}`: the column would silently replace the key; rename one", line)
    return {**given, **columns}


def _bounded_lines(handle: Any) -> Iterator[str]:
    for number, line in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), ""), 1):
        if len(line) > MAX_LINE_BYTES:
            raise DataError(f"the line is over {MAX_LINE_BYTES // 2**20} MiB; evalgate reads rows up to that size",
                             number)
        yield line


def _csv_rows(reader: csv.DictReader[str], path: Path) -> Iterator[Any]:
    """The header, then the rows; what the csv module or the decoder refuses becomes a DataError."""
    start = 1
    try:
        yield reader.fieldnames
        start = reader.line_num + 1
        for row in reader:
            yield row
            start = reader.line_num + 1
    except UnicodeDecodeError as exc:  # decoded by the block: the line is found again from the bytes
        raise DataError(not_utf8(exc), _undecodable_line(path)) from None
    except csv.Error as exc:
        hint = " (a quote opened on this row is never closed)" if "end of data" in str(exc) else ""
        raise DataError(f"invalid CSV: {exc}{hint}", start) from None


def _undecodable_line(path: Path) -> int | None:
    """The line of a file's first byte that is not UTF-8, read again by the block (bounded memory)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines = 0
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                try:
                    decoder.decode(block)
                except UnicodeDecodeError as exc:  # exc.object: this block after the bytes held back
                    return lines + exc.object[: exc.start].count(b"\n") + 1
                lines += block.count(b"\n")
    except OSError:
        return None
    return None


def _csv_json(key: str, value: str, line: int) -> Any:
    text = value.strip()
    if key in ("context", "output", "ground_truth") and not text.startswith(("{", "[", '"')):
        return [value] if key == "context" else value
    try:
        return json.loads(text)
    except RecursionError:
        raise DataError(f"column `{key}`: {TOO_DEEP}", line) from None
    except ValueError as exc:
        if not isinstance(exc, json.JSONDecodeError):  # JSON, with an integer too long to read
            raise DataError(f"column `{key}`: {_json_problem(exc, text)}", line) from None
        raise DataError(f"column `{key}` must hold JSON here, got {value[:60]!r}", line) from None
