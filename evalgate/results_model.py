"""The results JSON read back (docs/results.md): pydantic models that validate a results file.

The report, JUnit, `compare` and the Action read results files through these. A run and a merge
build results without them (evalgate.results, evalgate.verdict): a merge starts without pydantic.
The gate, threshold and turn results are evalgate.verdict's dataclasses, validated as fields here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from typing_extensions import TypedDict  # pydantic reads typing's TypedDict only from Python 3.12

from evalgate.files import MAX_RESULTS_BYTES, read_capped
from evalgate.results import SCHEMA_VERSION
from evalgate.verdict import GateResult, Outcome, ScoreStats, ThresholdResult, TurnResult, Verdict


class Summary(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)  # built when results are read

    total_items: int
    errored_items: int
    not_scorable: dict[str, int] = Field(default_factory=dict)
    max_errors: int = 0
    error_budget_exceeded: bool = False
    failure_reason: str | None = None  # "errors" (too many errored items) or "gates"; null unless failed
    top_error: dict[str, Any] | None = None  # the most common item error: {"message", "items"}
    duration_s: float | None = None


class ItemRecord(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)  # built when results are read

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
    # a gate and a scorer of one id share their `reasons` key: each one's reason, {"gates": {...}, "scores": {...}}
    reasons_by_kind: dict[str, dict[str, str]] | None = None
    turns: list[dict[str, Any]] | None = None
    trials: list[dict[str, Any]] | None = None  # with repeats: {trial, run, gates, scores, error, duration_ms}
    data_hash: str | None = None


class ComparedEntry(TypedDict, total=False):
    """One entry of `comparison.entries` (evalgate.comparison.EntryComparison as written)."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    id: str
    turn: int | None
    kind: str
    status: str
    base_average: float | None
    head_average: float | None
    delta: float | None
    ci95: tuple[float | None, float | None] | None
    p_value: float | None
    p_regression: float | None
    p_within: float | None  # one-sided: the drop is within max_drop
    p_decision: float | None  # the p the status came from, held to `alpha`
    alpha: float | None
    base_matched: float | None  # the averages on the matched items, the ones delta compares
    head_matched: float | None
    mde: float | None  # the drop found with 80% power
    method: str | None
    pairs: int
    errored_pairs: int
    max_drop: float | None
    higher_is_better: bool
    when_uncertain: str
    fails: bool
    reason: str | None


class FlippedItem(TypedDict, total=False):
    """One item of `comparison.flipped`: an item that passed an entry in one run and failed it in the other."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    item: str
    entry: str
    turn: int | None
    kind: str
    base_score: float | None
    head_score: float | None
    direction: str


class BaselineInfo(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    name: str | None
    verdict: str | None
    created_at: str | None
    git_sha: str | None
    items: int | None


class BaseItem(TypedDict, total=False):
    """One item of `comparison.base_items`: the base's record of an item whose pass or fail changed."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    id: str
    output: Any
    error: str | None
    gates: dict[str, float | None]
    scores: dict[str, float | None]
    reasons: dict[str, str]
    flips: dict[str, str]  # entry label → "pass->fail" | "fail->pass"


class HistoryRun(TypedDict, total=False):
    """One run of `comparison.history`: the base branch's recent runs, oldest first (the trend)."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    name: str | None
    created_at: str | None
    git_sha: str | None
    verdict: str | None
    items: int | None
    scores: dict[str, float | None]


class ComparisonRecord(TypedDict, total=False):
    """`comparison`, added by `--baseline` or `compare -o`: read as a mapping, each of its fields typed."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    baseline: BaselineInfo
    settings: dict[str, Any]
    entries: list[ComparedEntry]
    flipped: list[FlippedItem]
    flipped_count: int
    matched_items: int
    new_items: int
    missing_items: int
    changed_items: int
    regressions: int
    failures: int  # entries failing the verdict: regressions and, under when_uncertain: fail, uncertain ones
    warnings: list[str]
    base_items: list[BaseItem]  # additive: absent when no item's status changed
    history: list[HistoryRun]  # additive: the base's history, then the base (at most 100)


class Results(BaseModel):
    """The results JSON, schema_version 1."""

    model_config = ConfigDict(extra="allow", defer_build=True)  # built when results are read

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
    comparison: ComparisonRecord | None = None  # with a baseline (docs/results.md)

    @model_validator(mode="after")
    def _bounds_are_numbers(self) -> Results:
        """A threshold's `min` and `max` are numbers (or absent): the report compares scores with them."""
        results = [*self.threshold_results, *(r for t in self.turn_results or [] for r in t.threshold_results)]
        for result in results:
            if isinstance(result.threshold, dict):
                for key in ("min", "max"):
                    bound = result.threshold.get(key)
                    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int | float)):
                        raise ValueError(f"threshold_results: {result.id}: its `{key}` is no number")
        return self

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


def load_results(path: Path) -> Results:
    """A results file back; whatever a run writes (lone surrogates, nulls for NaN) reads back.

    ValueError for a path that is no regular file (a FIFO would block, a device never end) or one over
    MAX_RESULTS_BYTES (UnreadableFile, also an OSError)."""
    data = read_capped(path, limit=MAX_RESULTS_BYTES, what="results file")
    try:
        return Results.model_validate_json(data)
    except ValueError:
        # pydantic's JSON parser refuses a lone surrogate escape, which Python's accepts
        try:
            raw = json.loads(data)
        except RecursionError:
            raise ValueError("nested too deeply to read") from None
        return Results.model_validate(_nan_for_null(raw))


def _nan_for_null(raw: Any) -> Any:
    """A NaN average was written as null (strict JSON has no NaN): read it back as NaN."""
    if not isinstance(raw, dict):
        return raw
    nan = float("nan")

    def scores(value: Any) -> Any:
        return {k: nan if v is None else v for k, v in value.items()} if isinstance(value, dict) else value

    def results(value: Any, key: str) -> Any:
        if not isinstance(value, list):
            return value
        return [{**r, key: nan} if isinstance(r, dict) and r.get(key, 0) is None else r for r in value]

    out = {**raw, "scores": scores(raw.get("scores"))}
    out["gate_results"] = results(raw.get("gate_results"), "score")
    out["threshold_results"] = results(raw.get("threshold_results"), "average_score")
    if isinstance(raw.get("turn_results"), list):
        out["turn_results"] = [
            {**t, "scores": scores(t.get("scores")), "gate_results": results(t.get("gate_results"), "score"),
             "threshold_results": results(t.get("threshold_results"), "average_score")}
            if isinstance(t, dict) else t
            for t in raw["turn_results"]
        ]
    return out
