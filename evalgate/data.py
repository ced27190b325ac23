"""Data set loaders (.jsonl, .json, .yaml/.yml, .csv, inline) that turn items into Cases.

Every problem names the data file and line (the JSONL line, the YAML node, the CSV row).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalgate.errors import (
    MAX_PROBLEMS,
    TOO_DEEP,
    Problem,
    display_path,
    not_utf8,
    not_utf8_line,
    problems_from_validation,
)
from evalgate.items import ITEM_FIELDS, Item
from evalgate.runs import RunFormatError, run_from_value
from evalgate.scorers.registry import BuildContext
from evalgate.spec import Case, Check, Spec, build_checks, validate_entries
from evalgate.yamlpos import Positions, YAMLSyntaxError, load

Located = tuple[Any, Positions, tuple[str | int, ...]]  # raw item, positions, path prefix
_JSON_COLUMNS = ("inputs", "turns", "context", "expected_trajectory", "metadata", "output", "outputs", "ground_truth")


def load_cases(
    spec: Spec, spec_path: Path, spec_positions: Positions, ctx: BuildContext
) -> tuple[list[Case], list[Problem]]:
    """Every case, validated, in memory (for targets whose runs cost something)."""
    stream = CaseStream(spec, spec_path, spec_positions, ctx)
    cases = list(stream.iterate())
    return cases, stream.problems


class CaseStream:
    """Cases read and validated one at a time, for large recorded data sets.

    `problems` is complete once iteration has finished; `count` is known up front.
    """

    def __init__(self, spec: Spec, spec_path: Path, spec_positions: Positions, ctx: BuildContext) -> None:
        self.spec = spec
        self.spec_path = spec_path
        self.spec_positions = spec_positions
        self.ctx = ctx
        self.problems: list[Problem] = []
        self.count = len(spec.data) if isinstance(spec.data, list) else _count_lines(spec_path.parent / spec.data)

    def iterate(self) -> Iterator[Case]:
        spec, spec_path = self.spec, self.spec_path
        if isinstance(spec.data, list):
            file = display_path(spec_path)
            located: Iterator[Located] = (
                (raw, self.spec_positions, ("data", i)) for i, raw in enumerate(spec.data)
            )
            line_of_data = self.spec_positions.line(("data",))
        else:
            data_path = spec_path.parent / spec.data
            file = display_path(data_path)
            line_of_data = None
            try:
                located = _read_file(data_path)
            except _DataError as exc:
                if exc.in_spec:  # the file cannot be used at all: point at the spec's `data:` line
                    where = Problem(display_path(spec_path), self.spec_positions.line(("data",)), f"data: {exc}")
                    self.problems = [where]
                    return
                self.problems = [Problem(exc.file or file, exc.line, str(exc))]
                return
        builder = _CaseBuilder(spec, file, self.ctx)
        self.problems = builder.problems
        try:
            for raw, positions, prefix in located:
                case = builder.add(raw, positions, prefix)
                if case is not None and not builder.problems:
                    yield case
                if len(builder.problems) >= MAX_PROBLEMS:
                    break
        except _DataError as exc:
            builder.problems.append(Problem(file, exc.line, str(exc)))
        if not builder.count and not builder.problems:
            where = file if isinstance(spec.data, str) else display_path(spec_path)
            builder.problems.append(Problem(where, line_of_data, "the data set is empty; add at least one item"))


def _count_lines(path: Path) -> int:
    """Items in a data file, for progress: JSONL lines; 0 when it cannot tell cheaply."""
    if path.suffix.lower() != ".jsonl" or not path.is_file():
        return 0
    count = 0
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            count += block.count(b"\n")
    return count


class _DataError(ValueError):
    def __init__(self, message: str, line: int | None = None, file: str | None = None, in_spec: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.file = file
        self.in_spec = in_spec  # the spec's `data:` value is at fault, not the file's content


def _read_file(path: Path) -> Iterator[Located]:
    suffix = path.suffix.lower()
    readers = {".jsonl": _read_jsonl, ".json": _read_json, ".yaml": _read_yaml, ".yml": _read_yaml, ".csv": _read_csv}
    reader = readers.get(suffix)
    if reader is None:
        raise _DataError(f"unknown data file type `{suffix}`; use .jsonl, .json, .yaml, .yml or .csv", in_spec=True)
    if not path.is_file():
        raise _DataError(
            f"no such data file `{display_path(path)}`; `data:` is a path relative to the spec file", in_spec=True
        )
    return reader(path)


class _Line(Positions):
    """Every path of a one-line item (JSONL, CSV) is on that line."""

    __slots__ = ("number",)

    def __init__(self, number: int) -> None:  # no dicts: one of these per item read
        self.number = number

    def line(self, path: tuple[str | int, ...], *, key: bool = False) -> int | None:
        return self.number


_line_positions = _Line


def _read_jsonl(path: Path) -> Iterator[Located]:
    with path.open("rb") as handle:  # bytes: a line that is not UTF-8 is named by its number
        for number, data in enumerate(handle, 1):
            try:
                line = data.decode("utf-8-sig" if number == 1 else "utf-8")  # a BOM is fine
            except UnicodeDecodeError as exc:
                raise _DataError(not_utf8(exc), number) from None
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except ValueError as exc:
                raise _DataError(f"invalid JSON: {exc}", number) from None
            except RecursionError:
                raise _DataError(TOO_DEEP, number) from None
            yield raw, _line_positions(number), ()


class _JSONPositions(Positions):
    """Lines of a .json file's nodes, found only when an error asks for one (JSON parses as YAML)."""

    def __init__(self, text: str, wrapped: bool) -> None:
        super().__init__()
        self._text: str | None = text
        self._wrapped = wrapped

    def line(self, path: tuple[str | int, ...], *, key: bool = False) -> int | None:
        if self._text is not None:
            try:
                _, found = load(self._text)
            except (YAMLSyntaxError, RecursionError):  # valid JSON that YAML refuses: no lines
                found = Positions()
            found = _unwrap_items(found) if self._wrapped else found
            self.values, self.keys, self._text = found.values, found.keys, None
        return super().line(path, key=key)


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
        raise _DataError(not_utf8(exc), not_utf8_line(exc)) from None


def _read_json(path: Path) -> Iterator[Located]:
    text = _read_text(path)
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise _DataError(f"invalid JSON: {exc}", getattr(exc, "lineno", None)) from None
    except RecursionError:
        raise _DataError(TOO_DEEP, None) from None
    wrapped = isinstance(raw, dict) and isinstance(raw.get("items"), list)
    if wrapped:
        raw = raw["items"]
    if not isinstance(raw, list):
        raise _DataError("a .json data file holds a list of items (or {\"items\": [...]})", 1)
    positions = _JSONPositions(text, wrapped)
    return ((item, positions, (i,)) for i, item in enumerate(raw))


def _read_yaml(path: Path) -> Iterator[Located]:
    try:
        raw, positions = load(_read_text(path))
    except YAMLSyntaxError as exc:
        raise _DataError(str(exc), exc.line) from None
    except RecursionError:
        raise _DataError(TOO_DEEP, None) from None
    if isinstance(raw, dict) and isinstance(raw.get("items"), list):
        raw = raw["items"]
        positions = _unwrap_items(positions)
    if not isinstance(raw, list):
        raise _DataError("a YAML data file holds a list of items", 1)
    return ((item, positions, (i,)) for i, item in enumerate(raw))


def _read_csv(path: Path) -> Iterator[Located]:
    """A row per item; `input`, `id`, item fields as columns (JSON where a field is structured);
    any other column goes into `metadata`."""
    with path.open(encoding="utf-8-sig", newline="") as handle:  # Excel writes a BOM first
        reader = csv.DictReader(handle)
        rows = _csv_rows(reader)
        fields = next(rows)
        if not fields or not {"input", "inputs", "turns"} & set(fields):
            raise _DataError("a CSV data file needs an `input` column", 1)
        line = reader.line_num + 1
        for row in rows:
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
                item.setdefault("metadata", {}).update(metadata)
            yield item, _line_positions(line), ()
            line = reader.line_num + 1


def _csv_rows(reader: csv.DictReader[str]) -> Iterator[Any]:
    """The header, then the rows; what the csv module or the decoder refuses becomes a _DataError."""
    try:
        yield reader.fieldnames
        yield from reader
    except UnicodeDecodeError as exc:  # decoded by the block: no exact line
        raise _DataError(not_utf8(exc), None) from None
    except csv.Error as exc:
        raise _DataError(f"invalid CSV: {exc}", reader.line_num + 1) from None


def _csv_json(key: str, value: str, line: int) -> Any:
    text = value.strip()
    if key in ("context", "output", "ground_truth") and not text.startswith(("{", "[", '"')):
        return [value] if key == "context" else value
    try:
        return json.loads(text)
    except RecursionError:
        raise _DataError(f"column `{key}`: {TOO_DEEP}", line) from None
    except ValueError:
        raise _DataError(f"column `{key}` must hold JSON here, got {value[:60]!r}", line) from None




class _CaseBuilder:
    def __init__(self, spec: Spec, file: str, ctx: BuildContext) -> None:
        self.recorded = spec.target.type == "recorded"
        self.file = file
        self.ctx = ctx
        self.count = 0  # valid cases so far
        self.problems: list[Problem] = []
        self.ids: dict[str, int | None] = {}
        self.seen = 0
        self.turn_thresholds: dict[tuple[int, str], tuple[Any, int | None]] = {}

    def problem(self, positions: Positions, path: tuple[str | int, ...], message: str) -> None:
        self.problems.append(Problem(self.file, positions.line(path), message))

    def add(self, raw: Any, positions: Positions, prefix: tuple[str | int, ...]) -> Case | None:
        self.seen += 1
        where = _where(prefix, self.seen - 1)
        if not isinstance(raw, dict):
            self.problem(positions, prefix, f"{where}: an item is a mapping with `input`, `inputs` or `turns`")
            return None
        try:
            item = Item.model_validate(raw)
        except ValidationError as exc:
            self.problems += problems_from_validation(
                exc, file=self.file, positions=positions, model=Item, raw=raw, prefix=prefix
            )
            return None
        shape = shape_problem(item)
        if shape is not None:
            given = [k for k in ("input", "inputs", "turns") if k in item.model_fields_set]
            self.problem(positions, (*prefix, *given) if len(given) == 1 else prefix, f"{where}: {shape}")
            return None
        case = Case(index=self.count, item=item, line=positions.line(prefix))
        if item.id is not None:
            if item.id in self.ids:
                message = f"{where}: the id `{item.id}` is already used at line {self.ids[item.id]}"
                self.problem(positions, (*prefix, "id"), message)
                return None
            self.ids[item.id] = case.line
        if self.recorded and not self._recorded_runs(case, positions, prefix, where):
            return None
        if item.turns is not None and not self._turn_checks(case, positions, prefix, where):
            return None
        self.count += 1
        return case

    def _recorded_runs(self, case: Case, positions: Positions, prefix: tuple[str | int, ...], where: str) -> bool:
        item = case.item
        if item.turns is not None:
            outputs = [(t.output, (*prefix, "turns", i, "output")) for i, t in enumerate(item.turns)]
        elif item.inputs is not None:
            if item.outputs is None or len(item.outputs) != len(item.inputs):
                have = "no `outputs`" if item.outputs is None else f"{len(item.outputs)} outputs"
                message = f"{where}: the recorded target needs one output per input ({len(item.inputs)}), got {have}"
                self.problem(positions, (*prefix, "outputs"), message)
                return False
            outputs = [(o, (*prefix, "outputs", i)) for i, o in enumerate(item.outputs)]
        else:
            outputs = [(item.output, (*prefix, "output"))]
        runs = []
        for value, path in outputs:
            if value is None:
                key = path[-1] if isinstance(path[-1], str) else "outputs"
                self.problem(positions, path, f"{where}: the recorded target needs `{key}` here")
                return False
            try:
                runs.append(run_from_value(value))
            except RunFormatError as exc:
                self.problem(positions, path, f"{where}: {exc}")
                return False
        case.recorded = runs
        # The raw output now lives on as the Run: drop it so 100k items stay small in memory.
        item.__dict__["output"] = None
        item.__dict__["outputs"] = None
        if item.turns is not None:
            for turn in item.turns:
                turn.__dict__["output"] = None
        return True

    def _turn_checks(self, case: Case, positions: Positions, prefix: tuple[str | int, ...], where: str) -> bool:
        ok = True
        case.turn_checks = []
        for turn_index, turn in enumerate(case.item.turns or []):
            checks: list[Check] = []
            for kind, entries in (("gate", turn.gates), ("scorer", turn.scorers)):
                key = "gates" if kind == "gate" else "scorers"
                sub = (*prefix, "turns", turn_index, key)
                models, problems = validate_entries(entries, kind, file=self.file, positions=positions, prefix=sub)
                if problems:
                    self.problems += problems
                    ok = False
                    continue
                built, problems, _ = build_checks(
                    models, kind, file=self.file, positions=positions, prefix=sub, ctx=self.ctx, turn=turn_index
                )
                self.problems += problems
                ok = ok and not problems
                for check in built:
                    if kind == "scorer" and not self._same_threshold(check, positions, sub, where):
                        ok = False
                checks += built
            case.turn_checks.append(checks)
        return ok

    def _same_threshold(self, check: Check, positions: Positions, sub: tuple[str | int, ...], where: str) -> bool:
        key = (check.entry.turn or 0, check.entry.id)
        seen = self.turn_thresholds.get(key)
        if seen is None:
            self.turn_thresholds[key] = (check.entry.threshold, check.line)
            return True
        if seen[0] == check.entry.threshold:
            return True
        self.problem(
            positions,
            sub,
            f"{where}: turn {key[0]} scorer `{key[1]}` has threshold {check.entry.threshold!r}, but the same id "
            f"at that turn has {seen[0]!r} at line {seen[1]}; entries sharing an id at a turn index share a threshold",
        )
        return False


def shape_problem(item: Item) -> str | None:
    """Why an item is not exactly one of `input`, a non-empty `inputs`, non-empty `turns` (as Mastra checks)."""
    given = [k for k in ("input", "inputs", "turns") if k in item.model_fields_set]
    if len(given) != 1:
        what = "none of them" if not given else " and ".join(f"`{k}`" for k in given)
        return f"an item needs exactly one of `input`, `inputs`, `turns`; it has {what}"
    if given[0] != "input" and not getattr(item, given[0]):
        return f"`{given[0]}` needs at least one entry"
    return None


def _where(prefix: tuple[str | int, ...], index: int) -> str:
    if prefix and prefix[0] == "data":
        return f"data[{prefix[1]}]"
    if prefix:
        return f"item {prefix[0] + 1}" if isinstance(prefix[0], int) else str(prefix)
    return f"item {index + 1}"
