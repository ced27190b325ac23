"""Pure aggregation: averages, gates, thresholds, turns, the verdict (docs/results.md).

No I/O. Scores are added in data order and summed left to right, as Mastra's runEvals does,
so averages agree to the last bit (no compensated summation, no rounding).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["passed", "scored", "failed"]
FailureReason = Literal["errors", "gates"]
Kind = Literal["gate", "scorer"]
ThresholdValue = float | dict[str, float]


@dataclass(frozen=True, slots=True)
class Range:
    """A threshold's inclusive bounds; either may be absent."""

    min: float | None = None
    max: float | None = None

    def admits(self, average: float) -> bool:
        if not math.isfinite(average):
            return False
        if self.min is not None and average < self.min:
            return False
        return not (self.max is not None and average > self.max)


def bounds_of(threshold: ThresholdValue) -> Range:
    """A number means a minimum; a mapping gives `min` and/or `max`."""
    if isinstance(threshold, dict):
        return Range(threshold.get("min"), threshold.get("max"))
    return Range(min=threshold)


def gate_passes(average: float) -> bool:
    return average >= 1.0


@dataclass(frozen=True, slots=True)
class Entry:
    """What the aggregator needs to know of one gate or scorer."""

    id: str
    kind: Kind
    threshold: ThresholdValue | None = None
    higher_is_better: bool = True
    turn: int | None = None

    @property
    def key(self) -> tuple[int | None, Kind, str]:
        return (self.turn, self.kind, self.id)


class ScoreSum:
    """One entry's scores so far: their sum (left to right), count, and not-scorable results."""

    __slots__ = ("count", "not_scorable", "total")

    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0
        self.not_scorable = 0

    @property
    def average(self) -> float | None:
        return self.total / self.count if self.count else None


# ---- results (also the schema of those parts of the results JSON) ----


class GateResult(BaseModel):
    id: str
    passed: bool
    score: float


class ThresholdResult(BaseModel):
    id: str
    passed: bool
    average_score: float
    threshold: ThresholdValue
    higher_is_better: bool = True


class TurnResult(BaseModel):
    index: int
    gate_results: list[GateResult] = Field(default_factory=list)
    threshold_results: list[ThresholdResult] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict)


class Outcome(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    verdict: Verdict | None
    scores: dict[str, float]
    gate_results: list[GateResult]
    threshold_results: list[ThresholdResult]
    turn_results: list[TurnResult] | None = None
    not_scorable: dict[str, int] = Field(default_factory=dict)
    errored_items: int = 0
    max_errors: int = 0
    total_items: int = 0

    @property
    def error_budget_exceeded(self) -> bool:
        return self.errored_items > self.max_errors

    @property
    def failure_reason(self) -> FailureReason | None:
        """Why the verdict is `failed`: "errors" when more items errored than `max_errors` allows (an
        outage: nothing was measured), which outranks "gates" (a gate averaged below 1.0)."""
        if self.verdict != "failed":
            return None
        return "errors" if self.error_budget_exceeded else "gates"

    @property
    def gate_failures(self) -> list[GateResult]:
        fails = [g for g in self.gate_results if not g.passed]
        for turn in self.turn_results or []:
            fails.extend(g for g in turn.gate_results if not g.passed)
        return fails

    @property
    def threshold_misses(self) -> list[ThresholdResult]:
        misses = [t for t in self.threshold_results if not t.passed]
        for turn in self.turn_results or []:
            misses.extend(t for t in turn.threshold_results if not t.passed)
        return misses


def decide(
    gates: list[GateResult],
    thresholds: list[ThresholdResult],
    errored_items: int = 0,
    max_errors: int = 0,
) -> Verdict | None:
    """failed > scored > passed; None when no gate or threshold produced a number."""
    if errored_items > max_errors:
        return "failed"
    if not gates and not thresholds:
        return None
    if any(not g.passed for g in gates):
        return "failed"
    if any(not t.passed for t in thresholds):
        return "scored"
    return "passed"


class Aggregator:
    """Folds item scores, in data order, into an Outcome.

    Top-level entries are declared up front (spec order); per-turn entries are declared
    as first seen, so turn results list them in the order items first used them.
    """

    def __init__(self, entries: list[Entry] = ()) -> None:  # type: ignore[assignment]
        self.entries: dict[tuple[int | None, Kind, str], Entry] = {}
        self.tallies: dict[tuple[int | None, Kind, str], ScoreSum] = {}
        self.total_items = 0
        self.errored_items = 0
        self._by_entry: dict[int, ScoreSum] = {}
        self._pinned: list[Entry] = []
        self.turn_count = 0  # Mastra lists every turn index of `turns` items, asserted or not
        for entry in entries:
            self.declare(entry)

    def declare(self, entry: Entry) -> ScoreSum:
        tally = self.tallies.get(entry.key)
        if tally is None:
            self.entries[entry.key] = entry
            tally = self.tallies[entry.key] = ScoreSum()
        return tally

    def add(self, entry: Entry, score: float | None) -> None:
        """Add one item's score; None means not scorable."""
        tally = self._by_entry.get(id(entry))
        if tally is None:  # per-turn entries of many items share one tally by key
            tally = self.tallies.get(entry.key) or self.declare(entry)
            self._by_entry[id(entry)] = tally
            self._pinned.append(entry)  # keeps id(entry) from being reused while cached
        if score is None:
            tally.not_scorable += 1
        else:
            tally.total += score
            tally.count += 1

    def add_item(self, errored: bool, turns: int = 0) -> None:
        self.total_items += 1
        self.turn_count = max(self.turn_count, turns)
        if errored:
            self.errored_items += 1

    def outcome(self, max_errors: int = 0) -> Outcome:
        top = _Section()
        turns: dict[int, _Section] = {index: _Section() for index in range(self.turn_count)}
        not_scorable: dict[str, int] = {}
        for key, entry in self.entries.items():
            tally = self.tallies[key]
            section = top if entry.turn is None else turns.setdefault(entry.turn, _Section())
            if tally.not_scorable:
                # one map for top level and turns, keyed by id, as Mastra's summary.notScorable
                not_scorable[entry.id] = not_scorable.get(entry.id, 0) + tally.not_scorable
            average = tally.average
            if average is None:
                continue
            section.add(entry, average)
        turn_results = [
            TurnResult(
                index=index,
                gate_results=section.gates,
                threshold_results=section.thresholds,
                scores=section.scores,
            )
            for index, section in sorted(turns.items())
        ]
        all_gates = top.gates + [g for t in turn_results for g in t.gate_results]
        all_thresholds = top.thresholds + [t for r in turn_results for t in r.threshold_results]
        return Outcome(
            verdict=decide(all_gates, all_thresholds, self.errored_items, max_errors),
            scores=top.scores,
            gate_results=top.gates,
            threshold_results=top.thresholds,
            turn_results=turn_results or None,
            not_scorable=not_scorable,
            errored_items=self.errored_items,
            max_errors=max_errors,
            total_items=self.total_items,
        )


class _Section:
    def __init__(self) -> None:
        self.gates: list[GateResult] = []
        self.thresholds: list[ThresholdResult] = []
        self.scores: dict[str, float] = {}

    def add(self, entry: Entry, average: float) -> None:
        if entry.kind == "gate":
            self.gates.append(GateResult(id=entry.id, passed=gate_passes(average), score=average))
            return
        self.scores[entry.id] = average
        if entry.threshold is not None:
            self.thresholds.append(
                ThresholdResult(
                    id=entry.id,
                    passed=bounds_of(entry.threshold).admits(average),
                    average_score=average,
                    threshold=entry.threshold,
                    higher_is_better=entry.higher_is_better,
                )
            )

