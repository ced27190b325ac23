"""Results JSON v1 (docs/results.md): the models, the streaming writer, reading back.

Each finished item is appended and flushed to `<output>.items.jsonl` (the journal; the Action keeps
it under RUNNER_TEMP) as it completes, so a crash loses nothing; `finish` then writes the results
JSON atomically, copying the journal's lines in data order without holding every item in memory,
and removes the journal once a complete run's results are safely written.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalgate.verdict import GateResult, Outcome, ScoreStats, ThresholdResult, TurnResult, Verdict

SCHEMA_VERSION = 1


class Summary(BaseModel):
    model_config = ConfigDict(extra="allow")

    total_items: int
    errored_items: int
    not_scorable: dict[str, int] = Field(default_factory=dict)
    max_errors: int = 0
    error_budget_exceeded: bool = False
    failure_reason: str | None = None  # "errors" (too many errored items) or "gates"; null unless failed
    top_error: dict[str, Any] | None = None  # the most common item error: {"message", "items"}
    duration_s: float | None = None


class ItemRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    index: int | None = None
    input: Any = None
    output: dict[str, Any] | None = None
    error: str | None = None
    gates: dict[str, float | None] = Field(default_factory=dict)
    scores: dict[str, float | None] = Field(default_factory=dict)
    reasons: dict[str, str] = Field(default_factory=dict)
    not_scorable: dict[str, str] = Field(default_factory=dict)
    scorer_errors: dict[str, str] = Field(default_factory=dict)
    turns: list[dict[str, Any]] | None = None
    trials: list[dict[str, Any]] | None = None  # with repeats: {trial, run, gates, scores, error, duration_ms}
    data_hash: str | None = None


class Results(BaseModel):
    """The results JSON, schema_version 1."""

    model_config = ConfigDict(extra="allow")

    schema_version: Literal[1] = SCHEMA_VERSION
    name: str
    verdict: Verdict | None
    scores: dict[str, float]
    gate_results: list[GateResult]
    threshold_results: list[ThresholdResult]
    turn_results: list[TurnResult] | None = None
    score_stats: dict[str, ScoreStats] = Field(default_factory=dict)
    summary: Summary
    items: list[ItemRecord] = Field(default_factory=list)

    @property
    def outcome(self) -> Outcome:
        return Outcome(
            verdict=self.verdict,
            scores=self.scores,
            gate_results=self.gate_results,
            threshold_results=self.threshold_results,
            turn_results=self.turn_results,
            score_stats=self.score_stats,
            not_scorable=self.summary.not_scorable,
            errored_items=self.summary.errored_items,
            max_errors=self.summary.max_errors,
            total_items=self.summary.total_items,
        )


def header(name: str, outcome: Outcome, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything of the results JSON but `items`, in the documented key order."""
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "verdict": outcome.verdict,
        "scores": outcome.scores,
        "gate_results": [g.model_dump() for g in outcome.gate_results],
        "threshold_results": [t.model_dump() for t in outcome.threshold_results],
    }
    if outcome.turn_results is not None:
        out["turn_results"] = [t.model_dump() for t in outcome.turn_results]
    out["score_stats"] = {k: v.model_dump() for k, v in outcome.score_stats.items()}
    summary = {
        "total_items": outcome.total_items,
        "errored_items": outcome.errored_items,
        "not_scorable": outcome.not_scorable,
        "max_errors": outcome.max_errors,
        "error_budget_exceeded": outcome.error_budget_exceeded,
        "failure_reason": outcome.failure_reason,
    }
    meta = dict(meta or {})
    summary.update(meta.pop("summary", {}))
    out["summary"] = summary
    out.update(meta)
    return _finite(out)


def _finite(value: Any) -> Any:
    """NaN and infinities become null: the results must parse as strict JSON everywhere."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


# One encoder for every item: json.dumps with options builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=str)


def dumps_item(record: dict[str, Any]) -> str:
    try:
        return _ENCODER.encode(record)
    except ValueError:  # a NaN score from a user's scorer
        return _ENCODER.encode(_finite(record))


def _utf8(text: str) -> bytes:
    """UTF-8, with a lone surrogate (valid in JSON data, not in UTF-8) kept as its JSON escape `\\udXXX`.

    Every string in the results is a JSON string literal, so the backslash escape is valid JSON.
    """
    return text.encode("utf-8", "backslashreplace")


class ResultsWriter:
    """Journal each item as it finishes; write the results JSON at the end."""

    def __init__(self, path: Path, *, resume: bool = False, journal: Path | None = None) -> None:
        self.path = path
        self.journal_path = journal or journal_path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.journal_path.parent.mkdir(parents=True, exist_ok=True)
        self.offsets: dict[int, tuple[int, int]] = {}
        if resume and not self.journal_path.exists():
            self._journal_from_results()  # a finished run's journal is gone: its results hold the items
        if resume and self.journal_path.exists():
            self._index_journal()
            self.handle = self.journal_path.open("ab")
        else:
            self.handle = self.journal_path.open("wb")

    def _journal_from_results(self) -> None:
        try:
            items = json.loads(self.path.read_bytes()).get("items")
        except (OSError, ValueError, AttributeError):
            return
        if not isinstance(items, list):
            return
        with self.journal_path.open("wb") as handle:
            for item in items:
                if isinstance(item, dict) and isinstance(item.get("index"), int):
                    handle.write(_utf8(dumps_item(item) + "\n"))

    def _index_journal(self) -> None:
        good = 0
        with self.journal_path.open("rb") as handle:
            offset = 0
            for line in handle:
                try:
                    index = json.loads(line)["index"]
                except (ValueError, KeyError, TypeError):
                    break  # a torn last line from a killed run
                if not line.endswith(b"\n"):
                    break
                self.offsets[index] = (offset, len(line) - 1)
                offset += len(line)
                good = offset
        with self.journal_path.open("r+b") as handle:
            handle.truncate(good)

    def append(self, record: dict[str, Any]) -> None:
        data = _utf8(dumps_item(record) + "\n")
        offset = self.handle.tell()
        self.handle.write(data)
        self.handle.flush()
        self.offsets[record["index"]] = (offset, len(data) - 1)

    def finish(self, head: dict[str, Any], *, complete: bool = True) -> None:
        """Write the results JSON; a complete run's journal is then removed (an interrupted run keeps
        it for `--resume`)."""
        self.handle.flush()
        tmp = self.path.with_name(self.path.name + ".tmp")
        opening = json.dumps(head, ensure_ascii=False, indent=None)[:-1]
        with self.journal_path.open("rb") as journal, tmp.open("wb") as out:
            out.write(_utf8(opening))
            out.write(b', "items": [')
            position = 0
            for n, index in enumerate(sorted(self.offsets)):
                offset, length = self.offsets[index]
                if offset != position:  # seek only when out of order: sequential reads stay buffered
                    journal.seek(offset)
                if n:
                    out.write(b",\n")
                out.write(journal.read(length + 1)[:length])  # the line without its newline
                position = offset + length + 1
            out.write(b"]}\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)
        if complete:
            self.handle.close()
            self.journal_path.unlink(missing_ok=True)

    def close(self) -> None:
        self.handle.close()

    def discard(self) -> None:
        """Remove the journal: the run was not valid."""
        self.handle.close()
        self.journal_path.unlink(missing_ok=True)


def journal_path(path: Path) -> Path:
    return path.with_name(path.name + ".items.jsonl")


def read_journal(path: Path) -> list[dict[str, Any]]:
    """Finished items from a journal, skipping a torn last line."""
    records = []
    if not path.exists():
        return records
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            try:
                records.append(json.loads(line))
            except ValueError:
                break
    return records


def load_results(path: Path) -> Results:
    return Results.model_validate_json(path.read_bytes())
