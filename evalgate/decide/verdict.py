"""Pure aggregation: averages, gates, thresholds, turns, the verdict (docs/results.md).

No I/O. Scores are added in data order and summed left to right, as Mastra's runEvals does,
so averages agree to the last bit (no compensated summation, no rounding).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import reduce
from operator import add
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalgate.decide.stats import Estimate, Moments, PassK, pass_k_curve, whole_steps

Verdict = Literal["passed", "scored", "failed"]
FailureReason = Literal["errors", "gates"]
Kind = Literal["gate", "scorer"]
# What a gate or threshold whose every result was not scorable does to the verdict: left out of it, as
# Mastra's runEvals leaves it out (the default: same name, same number), or not met (evalgate's option)
NotScorableRule = Literal["leave_out", "fail"]
NOT_SCORABLE_RULES: tuple[NotScorableRule, ...] = ("leave_out", "fail")
FLAKY_IDS_KEPT = 20
JUDGE_ERROR_PREFIX = "JudgeError:"  # how a result the judge lost reads (`describe_exception` of a JudgeError)
FOLD_EVERY = 4096  # scores waiting to be summed, per entry: a bound on memory


# Values the code never changes, yet not frozen: a frozen dataclass's generated methods cost every
# command's start about 0.5 ms each (nothing hashes these, which frozen would allow).
@dataclass(slots=True)
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


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


class ThresholdRange:
    """A scorer's threshold, typed from the spec to the results and back: the range its average must lie
    in (`min`, `max`, `range`) and, with `confidence`, the rule on the interval (`rule`). It is its written
    form too (the spec's, the results'): a number is a `Minimum`, a mapping a `Bounds`, so it writes, reads
    and compares as that number or mapping."""

    __slots__ = ()

    @property
    def min(self) -> float | None:
        raise NotImplementedError

    @property
    def max(self) -> float | None:
        raise NotImplementedError

    @property
    def confidence(self) -> float | None:  # decide on the interval at this confidence, not on the average
        return None

    @property
    def when_uncertain(self) -> Literal["pass", "fail"] | None:
        return None

    @staticmethod
    def of(value: Any) -> ThresholdRange:
        """From its written form (a number, or a mapping with `min` and/or `max`); ValueError otherwise."""
        if isinstance(value, ThresholdRange):
            return value
        if _number(value):
            try:
                return Minimum(value)
            except OverflowError:  # an integer past the largest float
                raise ValueError("it is past the largest number") from None
        if not isinstance(value, dict):
            raise ValueError("a threshold is a number or a mapping with `min` and/or `max`")
        for key in ("min", "max", "confidence"):
            if value.get(key) is not None and not _number(value[key]):
                raise ValueError(f"its `{key}` is no number")
        when = value.get("when_uncertain")
        if when is not None and when not in ("pass", "fail"):
            raise ValueError("its `when_uncertain` is neither pass nor fail")
        return Bounds(value)

    def to_json(self) -> float | dict[str, Any]:
        """As the spec wrote it, as the results hold it."""
        raise NotImplementedError

    @property
    def range(self) -> Range:
        return Range(self.min, self.max)

    def higher_is_better(self, default: bool = True) -> bool:
        """The direction the user's bound says: only a `max` reads lower is better, only a minimum higher."""
        if self.max is not None and self.min is None:
            return False
        if self.min is not None and self.max is None:
            return True
        return default

    @property
    def rule(self) -> StatisticalRule | None:
        if self.confidence is None:
            return None
        return StatisticalRule(float(self.confidence), "fail" if self.when_uncertain == "fail" else "pass")

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """Read from and written to the results JSON in its written form (pydantic, results.model)."""
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(
            ThresholdRange.of, serialization=core_schema.plain_serializer_function_ser_schema(_written))


def _written(threshold: ThresholdRange) -> float | dict[str, Any]:
    return threshold.to_json()


class Minimum(float, ThresholdRange):
    """`threshold: 0.8`: a number, the average's minimum."""

    __slots__ = ()

    @property
    def min(self) -> float:
        return float(self)

    @property
    def max(self) -> None:
        return None

    def to_json(self) -> float:
        return float(self)


class Bounds(dict[str, Any], ThresholdRange):
    """`threshold: {min: 0.2, max: 0.8, confidence: 0.95, when_uncertain: fail}`: a range, its keys as written."""

    __slots__ = ()

    @property
    def min(self) -> float | None:
        return self.get("min")

    @property
    def max(self) -> float | None:
        return self.get("max")

    @property
    def confidence(self) -> float | None:
        return self.get("confidence")

    @property
    def when_uncertain(self) -> Literal["pass", "fail"] | None:
        return self.get("when_uncertain")

    def to_json(self) -> dict[str, Any]:
        return dict(self)


def higher_is_better(threshold: ThresholdRange | None, default: bool = True) -> bool:
    """The direction the user's bound says (`ThresholdRange.higher_is_better`); no threshold: `default`."""
    return default if threshold is None else threshold.higher_is_better(default)


@dataclass(slots=True)  # not frozen: see Range
class StatisticalRule:
    """`threshold: {min: 0.8, confidence: 0.95, when_uncertain: pass}`: decide on the interval, not the average."""

    confidence: float
    when_uncertain: Literal["pass", "fail"] = "pass"


def split_label(label: str) -> tuple[int | None, str]:
    """(turn, id) of how an item's record names a check: `id`, or `turn-N:id` for a per-turn one."""
    if label.startswith("turn-"):
        turn, colon, key = label[5:].partition(":")
        if colon and turn.isdigit():
            return int(turn), key
    return None, label


def gate_passes(average: float) -> bool:
    return average >= 1.0


@dataclass(frozen=True, slots=True)
class Entry:
    """What the aggregator needs to know of one gate or scorer."""

    id: str
    kind: Kind
    threshold: ThresholdRange | None = None
    higher_is_better: bool = True
    turn: int | None = None
    params_hash: str | None = None  # what the entry measures, so a baseline measured differently is recognised
    judged: bool = False  # scored by the LLM judge: a baseline judged by another model is not comparable
    not_scorable: NotScorableRule = "leave_out"  # when every result was not scorable (`NotScorableRule`)

    def __post_init__(self) -> None:
        if self.threshold is not None and not isinstance(self.threshold, ThresholdRange):  # its written form
            object.__setattr__(self, "threshold", ThresholdRange.of(self.threshold))

    @property
    def key(self) -> tuple[int | None, Kind, str]:
        return (self.turn, self.kind, self.id)


class ScoreSum:
    """An entry's running sum (data order, left to right, as Mastra) and its per-item moments.

    With repeats, trials after the first are kept in `later` and added at the end, trial by trial,
    so the sum is exactly the one of the data set listed K times.
    """

    __slots__ = ("count", "flaky_ids", "item_unscorable", "judge_errors", "later", "moments", "not_scorable",
                 "not_scorable_why", "pending", "scorer_errors", "total", "trial_counts",
                 "trials_seen", "unfolded")

    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0
        self.not_scorable = 0
        self.not_scorable_why: str | None = None  # the first reason given, to say why nothing was scored
        self.judge_errors = 0  # results lost to the judge (no usable reply), beside those lost to the scorer
        self.scorer_errors = 0
        self.pending: list[float] = []  # the current item's scores (all its trials)
        self.moments = Moments()
        self.later: dict[int, array[float]] | None = None
        self.flaky_ids: list[str] = []
        # With repeats: items by (n, ones, zeros), n the item's trials less those not scorable (an errored
        # trial counts: a failure of pass@k and pass^k); and the current item's not-scorable trials
        self.trial_counts: dict[tuple[int, int, int], int] = {}
        self.trials_seen: dict[int, int] = {}  # the items counted there, by their trials
        self.item_unscorable = 0
        # Without repeats, each item's one score waits here (data order) to be folded into `count`,
        # `total` and `moments` by one loop: the same arithmetic in the same order, without a call per score.
        self.unfolded = array("d")

    def fold(self) -> None:
        """Count the waiting scores and add them to the sum, left to right, and to the moments, one item each."""
        values = self.unfolded
        if values:
            self.unfolded = array("d")
            self.fold_in(values)

    def fold_in(self, values: Sequence[float]) -> None:
        """Count and add these scores as `fold` does the waiting ones (folded first: data order). A merged
        column comes as a list: counting its 0s and 1s reads the floats it holds, an array's makes each."""
        self.count += len(values)
        ones = values.count(1.0)
        if ones + values.count(0.0) == len(values) and whole_steps(self.total, len(values)):
            self.total += ones  # 0/1 scores: the very float the left-to-right sum gives (`whole_steps`)
        else:
            self.total = reduce(add, values, self.total)  # left to right, as a loop would
        self.moments.add_each(values)

    @property
    def average(self) -> float | None:
        self.fold()
        if not self.count:
            return None
        total = self.total
        for trial in sorted(self.later or ()):
            for value in self.later[trial]:  # type: ignore[index]
                total += value
        return total / self.count

    def close_item(self, item_id: str | None, trials: int | None = None) -> None:
        """trials: the item's trials, errored ones included (with repeats), for pass@k and pass^k."""
        values = self.pending
        self.moments.add_item(values)
        if (len(values) > 1 and item_id is not None and len(self.flaky_ids) < FLAKY_IDS_KEPT
                and 0.0 < sum(values) < len(values) and all(v == 0.0 or v == 1.0 for v in values)):
            self.flaky_ids.append(item_id)
        if trials is not None:
            ones, zeros = values.count(1.0), values.count(0.0)
            key = (max(trials - self.item_unscorable, ones + zeros), ones, zeros)
            self.trial_counts[key] = self.trial_counts.get(key, 0) + 1
            self.trials_seen[trials] = self.trials_seen.get(trials, 0) + 1
        self.pending = []
        self.item_unscorable = 0


# ---- results: plain dataclasses, built without validation; `Decision` holds them, and evalgate.results.model
# validates them when a results file is read (and so describes those parts of the results JSON) ----

# Written only when they say something: absent from a run without repeats, statistical rules or hashes.
_WHEN_SET = ("pass_at_k", "pass_all_k", "flaky", "flaky_items", "uncertain", "interval", "params_hash", "judged",
             "unscored", "pass_k_curve")


@dataclass(kw_only=True)
class ErrorBar:
    """How sure an average is: scored results, items behind them, standard error, 95% interval."""

    n: int | None = None
    items: int | None = None
    stderr: float | None = None
    ci95: tuple[float, float] | None = None
    # 0/1 entries with repeats: share of items with a passing trial, and (pass^k) with every trial passing;
    # a trial passes when it scores 1, or 0 where lower is better (a `max` bound)
    pass_at_k: float | None = None
    pass_all_k: float | None = None
    flaky: int | None = None  # items whose trials disagree
    flaky_items: list[str] | None = None  # their ids, the first few
    params_hash: str | None = None
    judged: bool | None = None  # scored by the LLM judge (`summary.judge` names it)
    unscored: str | None = None  # a gate or threshold no result could be scored for: why (it is not met)
    # 0/1 entries with repeats: pass@k and pass^k for k = 1..K with their intervals (docs/statistics.md);
    # pass_at_k and pass_all_k above are its last point, k = K
    pass_k_curve: list[PassK] | None = None

    def to_dict(self) -> dict[str, Any]:
        """As the results JSON holds it: the result's own fields first (id, passed, score...), its error
        bar after; the extras that say nothing (no repeats, no rule, no hash) left out."""
        own, bar = _FIELDS[type(self)]
        data = {name: getattr(self, name) for name in own}
        if isinstance(data.get("threshold"), ThresholdRange):
            data["threshold"] = data["threshold"].to_json()
        data.update((name, getattr(self, name)) for name in bar)
        for key in _WHEN_SET:
            if data.get(key, True) is None:
                del data[key]
        if self.pass_k_curve is not None:
            data["pass_k_curve"] = curve_json(self.pass_k_curve)
        return data

    def set_pass_k(self, curve: list[PassK]) -> None:
        """The curve, and pass@k and pass^k at its last k (K): unbiased, errored trials counted as failures."""
        self.pass_k_curve = curve
        self.pass_at_k, self.pass_all_k = curve[-1].pass_at_k, curve[-1].pass_all_k

    def set_error_bar(self, estimate: Estimate | None, flaky_ids: list[str], entry: Entry) -> None:
        self.params_hash = entry.params_hash
        self.judged = True if entry.judged else None
        if estimate is None:
            return
        self.n, self.items, self.stderr, self.ci95 = estimate.n, estimate.items, estimate.stderr, estimate.ci
        if estimate.pass_at_k is not None:
            if higher_is_better(entry.threshold, entry.higher_is_better):
                self.pass_at_k, self.pass_all_k = estimate.pass_at_k, estimate.pass_all_k
            else:  # a pass is a 0 here (`includes: sorry` under a max): a trial passes when it scores 0
                self.pass_at_k, self.pass_all_k = 1.0 - estimate.pass_all_k, 1.0 - estimate.pass_at_k  # type: ignore[operator]
            self.flaky, self.flaky_items = estimate.flaky, list(flaky_ids)


@dataclass(kw_only=True)
class GateResult(ErrorBar):
    id: str
    passed: bool
    score: float | None  # None: no result could be scored (`unscored` says why)


@dataclass(kw_only=True)
class ThresholdResult(ErrorBar):
    id: str
    passed: bool
    average_score: float | None  # None: no result could be scored (`unscored` says why)
    threshold: ThresholdRange
    higher_is_better: bool = True
    uncertain: bool | None = None  # with `confidence`: the interval overlaps a bound
    interval: tuple[float, float] | None = None  # with `confidence`: the interval at that confidence

    def __post_init__(self) -> None:
        if not isinstance(self.threshold, ThresholdRange):  # its written form
            self.threshold = ThresholdRange.of(self.threshold)


@dataclass(kw_only=True)
class ScoreStats(ErrorBar):
    """The error bar of a tracked score (`scores` keeps Mastra's plain numbers)."""

    higher_is_better: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field of the error bar, then `higher_is_better` when it is set (false: lower is better)."""
        data = {name: getattr(self, name) for name in _ERROR_BAR}
        curve = data.pop("pass_k_curve")
        if curve is not None:
            data["pass_k_curve"] = curve_json(curve)
        if self.higher_is_better is not None:
            data["higher_is_better"] = self.higher_is_better
        return data


def curve_json(curve: list[PassK]) -> list[dict[str, Any]]:
    """The pass@k / pass^k curve as the results JSON holds it."""
    return [{"k": p.k, "items": p.items, "pass_at_k": p.pass_at_k, "pass_at_k_ci95": p.pass_at_k_ci95,
             "pass_all_k": p.pass_all_k, "pass_all_k_ci95": p.pass_all_k_ci95} for p in curve]


_ERROR_BAR = tuple(f.name for f in fields(ErrorBar))
_FIELDS = {cls: (tuple(f.name for f in fields(cls) if f.name not in _ERROR_BAR), _ERROR_BAR)
           for cls in (ErrorBar, GateResult, ThresholdResult, ScoreStats)}


@dataclass(kw_only=True)
class TurnResult:
    index: int
    gate_results: list[GateResult] = field(default_factory=list)
    threshold_results: list[ThresholdResult] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    score_stats: dict[str, ScoreStats] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "gate_results": [g.to_dict() for g in self.gate_results],
                "threshold_results": [t.to_dict() for t in self.threshold_results], "scores": self.scores,
                "score_stats": {k: v.to_dict() for k, v in self.score_stats.items()}}


@dataclass(frozen=True, slots=True)
class NotScored:
    """A gate or threshold whose every result was not scorable: left out of the verdict (Mastra's rule)."""

    id: str
    kind: Literal["gate", "threshold"]
    turn: int | None
    reason: str  # "no result could be scored: 12 not scorable (the item has no expected_trajectory)"

    @property
    def label(self) -> str:
        return self.id if self.turn is None else f"turn {self.turn + 1}: {self.id}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "turn": self.turn, "reason": self.reason}


class Decision(BaseModel):
    """The verdict and the results it rests on: the results JSON's fields of these names, in this order
    (docs/results.md). A run's Outcome is one, and so is a results file read back (results.model.Results)."""

    model_config = ConfigDict(defer_build=True)

    verdict: Verdict | None
    scores: dict[str, float]
    gate_results: list[GateResult]
    threshold_results: list[ThresholdResult]
    turn_results: list[TurnResult] | None = None  # absent without turns
    score_stats: dict[str, ScoreStats] = Field(default_factory=dict)

    def written(self) -> dict[str, Any]:
        """These fields as the results JSON holds them, in its order (NaN not yet made null)."""
        out: dict[str, Any] = {"verdict": self.verdict, "scores": self.scores,
                               "gate_results": [g.to_dict() for g in self.gate_results],
                               "threshold_results": [t.to_dict() for t in self.threshold_results]}
        if self.turn_results is not None:
            out["turn_results"] = [t.to_dict() for t in self.turn_results]
        out["score_stats"] = {k: v.to_dict() for k, v in self.score_stats.items()}
        return out


class Outcome(Decision):
    """A run's (or a merge's) decision and the counts behind it, which the results file keeps in `summary`."""

    not_scorable: dict[str, int] = Field(default_factory=dict)
    errored_items: int = 0
    max_errors: int = 0
    total_items: int = 0
    # gates and thresholds whose every result was not scorable: left out of the verdict as Mastra leaves
    # them out, and reported (`summary.not_scored`)
    not_scored: list[NotScored] = Field(default_factory=list)

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
    if any(not g.passed for g in gates) or any(t.unscored for t in thresholds):
        return "failed"  # a threshold no result could be scored for: nothing was measured, not a miss
    if any(not t.passed for t in thresholds):
        return "scored"
    return "passed"


class Aggregator:
    """Folds item scores, in data order, into an Outcome.

    Top-level entries are declared up front (spec order); per-turn entries are declared
    as first seen, so turn results list them in the order items first used them.
    """

    def __init__(self, entries: list[Entry] = (), *, clustered: bool = False) -> None:  # type: ignore[assignment]
        """clustered: items contribute several scores to an entry (repeats): error bars cluster by item."""
        self.clustered = clustered
        self.entries: dict[tuple[int | None, Kind, str], Entry] = {}
        self.tallies: dict[tuple[int | None, Kind, str], ScoreSum] = {}
        self.total_items = 0
        self.errored_items = 0
        self.target_errors = 0  # items (trials) whose target failed: none of their checks ran
        self._by_entry: dict[int, ScoreSum] = {}
        self._pinned: list[Entry] = []
        self._touched: list[ScoreSum] = []  # tallies the current item has scored
        self._top: set[int] = set()  # id() of the top-level entries' tallies: every item has them
        self._items_by_trials: dict[int, int] = {}  # with repeats: items closed, by their trials
        self._unfolded_items = 0  # add_scores calls since its last fold of every tally
        self.turn_count = 0  # Mastra lists every turn index of `turns` items, asserted or not
        for entry in entries:
            self.declare(entry)

    def declare(self, entry: Entry) -> ScoreSum:
        tally = self.tallies.get(entry.key)
        if tally is None:
            self.entries[entry.key] = entry
            tally = self.tallies[entry.key] = ScoreSum()
            if entry.turn is None:
                self._top.add(id(tally))
        return tally

    def add(self, entry: Entry, score: float | None, trial: int = 0) -> None:
        """Add one item's score (of one trial, with repeats); None means not scorable."""
        tally = self._by_entry.get(id(entry))
        if tally is None:  # per-turn entries of many items share one tally by key
            tally = self.tallies.get(entry.key) or self.declare(entry)
            self._by_entry[id(entry)] = tally
            self._pinned.append(entry)  # keeps id(entry) from being reused while cached
        if score is None:
            tally.not_scorable += 1
            if self.clustered:
                if not tally.pending and not tally.item_unscorable:
                    self._touched.append(tally)
                tally.item_unscorable += 1
            return
        if not self.clustered:  # one score per item and entry: each is its own cluster
            if trial:
                raise ValueError("trials (repeats) need a clustered aggregator")
            tally.unfolded.append(score)  # counted when folded
            if len(tally.unfolded) >= FOLD_EVERY:
                tally.fold()
            return
        tally.count += 1
        if trial:
            if tally.later is None:
                tally.later = {}
            later = tally.later.get(trial)
            if later is None:
                later = tally.later[trial] = array("d")
            later.append(score)
        else:
            tally.total += score
        if not tally.pending and not tally.item_unscorable:
            self._touched.append(tally)
        tally.pending.append(score)

    def add_scores(self, contributions: list[tuple[Entry, float | None]]) -> None:
        """`add` for each of one item's (entry, score) pairs: one call per item, the hot path of a big run."""
        if self.clustered:
            for entry, score in contributions:
                self.add(entry, score)
            return
        by_entry = self._by_entry
        for entry, score in contributions:
            tally = by_entry.get(id(entry))
            if tally is None or score is None:
                self.add(entry, score)
            else:
                tally.unfolded.append(score)  # counted and summed when folded
        # An item holds one score of an entry at most: after FOLD_EVERY items none waits with more.
        self._unfolded_items += 1
        if self._unfolded_items >= FOLD_EVERY:
            self._unfolded_items = 0
            for waiting in self.tallies.values():
                waiting.fold()

    def add_column(self, entry: Entry, scores: Sequence[float], not_scorable: int = 0) -> None:
        """`add` for many items' one score each, in data order, and `not_scorable` Nones: the same floats.

        How the merge adds a shard's column of scores (single scores only, no repeats)."""
        if self.clustered:
            raise ValueError("a column holds single scores; with repeats add each trial's score")
        tally = self.declare(entry)
        tally.not_scorable += not_scorable
        tally.fold()
        tally.fold_in(scores)  # no copy into the waiting array

    def add_items(self, count: int, errored: int) -> None:
        """`add_item` for `count` items of single scores, `errored` of them errored."""
        if self.clustered:
            raise ValueError("with repeats each item closes its own cluster: add_item")
        self.total_items += count
        self.errored_items += errored

    def add_item(self, errored: bool, turns: int = 0, item_id: str | None = None, trials: int | None = None) -> None:
        """Close an item: its scores so far form one cluster of the error bars.

        trials: with repeats, how many trials the item ran, errored ones included (pass@k and pass^k count an
        errored trial as a failure)."""
        self.total_items += 1
        if turns > self.turn_count:
            self.turn_count = turns
        if errored:
            self.errored_items += 1
        if trials is not None and self.clustered:
            self._items_by_trials[trials] = self._items_by_trials.get(trials, 0) + 1
        if self._touched:  # with repeats: the item's scores are one cluster
            for tally in self._touched:
                tally.close_item(item_id, trials)
            self._touched = []

    def add_error(self, entry: Entry, message: str) -> None:
        """One result of `entry` lost to an error (the item's `scorer_errors`): counted to say why, when nothing
        was scored, how many the judge lost (a `JudgeError`) and how many the scorer; declares a per-turn entry
        so one whose every turn errored is reported too."""
        tally = self.tallies.get(entry.key) or self.declare(entry)
        if message.startswith(JUDGE_ERROR_PREFIX):
            tally.judge_errors += 1
        else:
            tally.scorer_errors += 1

    def add_causes(self, target_error: bool, scorer_errors: Mapping[str, str], not_scorable: Mapping[str, str],
                   per_turn: Callable[[int, str], Entry | None]) -> None:
        """One item's (or trial's) results that gave no score, by their labels (`id`, `turn-N:id`): counted by
        cause. per_turn: the scorer of that id at that turn (per-turn entries are declared as first met)."""
        if target_error:
            self.target_errors += 1
        for label, message in scorer_errors.items():
            turn, key = split_label(label)
            entry = self.entries.get((None, "scorer", key)) if turn is None else per_turn(turn, key)
            if entry is not None:
                self.add_error(entry, message)
        for label, reason in not_scorable.items():
            turn, key = split_label(label)
            for kind in ("gate", "scorer"):
                self.add_not_scorable_reason((turn, kind, key), reason)

    def add_not_scorable_reason(self, key: tuple[int | None, Kind, str], reason: str) -> None:
        """The reason an entry's result was not scorable; the first one is kept, to say why nothing was scored."""
        tally = self.tallies.get(key)
        if tally is not None and tally.not_scorable_why is None:
            tally.not_scorable_why = reason

    def _unscored_reason(self, tally: ScoreSum, top_level: bool) -> str:
        """Why an entry has no score, in counts by cause: "no result could be scored: 60 judge errors"."""
        causes = [f"{count} {name}{'' if count == 1 else 's'}" for count, name in (
            (tally.judge_errors, "judge error"), (tally.scorer_errors, "scorer error"),
            (self.target_errors if top_level else 0, "target error")) if count]
        if not causes and top_level:  # errored items, the aggregator not told which errors
            errored = self.errored_items if self.clustered else self.total_items - tally.not_scorable
            if errored:
                causes.append(f"{errored} errored item{'' if errored == 1 else 's'}")
        if tally.not_scorable:
            why = f" ({tally.not_scorable_why})" if tally.not_scorable_why else ""
            causes.append(f"{tally.not_scorable} not scorable{why}")
        return "no result could be scored: " + ", ".join(causes)

    def pass_k(self, entry: Entry, tally: ScoreSum) -> list[PassK] | None:
        """pass@k and pass^k for k = 1..K of a 0/1 entry run with repeats (None otherwise): a trial passes when
        it scores 1, or 0 where lower is better; one that errored, or whose scorer raised, fails."""
        if not self._items_by_trials or not tally.moments.binary:
            return None
        trial_counts = dict(tally.trial_counts)
        if id(tally) in self._top:  # an item that gave it no result in any trial (each errored, or its scorer
            for trials, items in self._items_by_trials.items():  # raised): that many failed trials
                unscored = items - tally.trials_seen.get(trials, 0)
                if unscored > 0:
                    trial_counts[(trials, 0, 0)] = trial_counts.get((trials, 0, 0), 0) + unscored
        good_is_one = higher_is_better(entry.threshold, entry.higher_is_better)
        counts: dict[tuple[int, int], int] = {}
        for (n, ones, zeros), items in trial_counts.items():
            key = (n, ones if good_is_one else zeros)
            counts[key] = counts.get(key, 0) + items
        curve = pass_k_curve(counts)
        return curve if len(curve) >= 2 else None

    def outcome(self, max_errors: int = 0) -> Outcome:
        for tally in self._touched:  # scores added without add_item form one last item
            tally.close_item(None)
        self._touched = []
        top = _Section()
        turns: dict[int, _Section] = {index: _Section() for index in range(self.turn_count)}
        not_scorable: dict[str, int] = {}
        not_scored: list[NotScored] = []
        for key, entry in self.entries.items():
            tally = self.tallies[key]
            section = top if entry.turn is None else turns.setdefault(entry.turn, _Section())
            if tally.not_scorable:
                # one map for top level and turns, keyed by id, as Mastra's summary.notScorable
                not_scorable[entry.id] = not_scorable.get(entry.id, 0) + tally.not_scorable
            average = tally.average
            if average is None:
                if entry.kind == "gate" or entry.threshold is not None:
                    self._unscored(entry, tally, section, not_scored)
                continue
            section.add(entry, average, tally, self.pass_k(entry, tally))
        turn_results = [
            TurnResult(
                index=index,
                gate_results=section.gates,
                threshold_results=section.thresholds,
                scores=section.scores,
                score_stats=section.score_stats,
            )
            for index, section in sorted(turns.items())
        ]
        all_gates = top.gates + [g for t in turn_results for g in t.gate_results]
        all_thresholds = top.thresholds + [t for r in turn_results for t in r.threshold_results]
        return Outcome.model_construct(  # built of results made here: nothing to check
            verdict=decide(all_gates, all_thresholds, self.errored_items, max_errors),
            scores=top.scores,
            gate_results=top.gates,
            threshold_results=top.thresholds,
            turn_results=turn_results or None,
            score_stats=top.score_stats,
            not_scorable=not_scorable,
            errored_items=self.errored_items,
            max_errors=max_errors,
            total_items=self.total_items,
            not_scored=not_scored,
        )

    def _unscored(self, entry: Entry, tally: ScoreSum, section: _Section, not_scored: list[NotScored]) -> None:
        """A gate or threshold with no score. One whose results errored (the judge, the scorer, the target)
        is reported and not met: the verdict fails. One whose every result was not scorable is left out of
        the verdict, as Mastra's runEvals leaves it out (same name, same number), and named in `not_scored`;
        with `not_scorable: fail` it is not met either (a gate that could score nothing has failed)."""
        if entry.turn is not None:  # declared by a turn that scored, was not scorable or errored
            errored = bool(tally.judge_errors or tally.scorer_errors or not tally.not_scorable)
        else:  # every item has the entry: what was not "not scorable" errored
            errored = bool(tally.judge_errors or tally.scorer_errors or self.target_errors or (
                not tally.not_scorable if self.clustered else tally.not_scorable < self.total_items))
        reason = self._unscored_reason(tally, entry.turn is None)
        if errored or entry.not_scorable == "fail":
            section.add_unscored(entry, reason)
        else:
            not_scored.append(NotScored(entry.id, "gate" if entry.kind == "gate" else "threshold", entry.turn, reason))


class _Section:
    def __init__(self) -> None:
        self.gates: list[GateResult] = []
        self.thresholds: list[ThresholdResult] = []
        self.scores: dict[str, float] = {}
        self.score_stats: dict[str, ScoreStats] = {}

    def add(self, entry: Entry, average: float, tally: ScoreSum, curve: list[PassK] | None = None) -> None:
        estimate = tally.moments.estimate(mean=average)
        result: ErrorBar
        if entry.kind == "gate":
            result = GateResult(id=entry.id, passed=gate_passes(average), score=average)
            self.gates.append(result)
        else:
            self.scores[entry.id] = average
            if entry.threshold is None:
                result = ScoreStats(higher_is_better=None if entry.higher_is_better else False)
                self.score_stats[entry.id] = result
            else:
                result = threshold_result(entry, average, tally)
                self.thresholds.append(result)
        result.set_error_bar(estimate, tally.flaky_ids, entry)
        if curve is not None:
            result.set_pass_k(curve)

    def add_unscored(self, entry: Entry, reason: str) -> None:
        """A gate or threshold without any scored result: not met, with why; Mastra's `scores` leave it out."""
        judged = True if entry.judged else None
        if entry.kind == "gate":
            self.gates.append(GateResult(id=entry.id, passed=False, score=None, unscored=reason,
                                         params_hash=entry.params_hash, judged=judged))
            return
        assert entry.threshold is not None
        self.thresholds.append(ThresholdResult(id=entry.id, passed=False, average_score=None,
                                               threshold=entry.threshold, higher_is_better=entry.higher_is_better,
                                               unscored=reason, params_hash=entry.params_hash, judged=judged))


def threshold_result(entry: Entry, average: float, tally: ScoreSum) -> ThresholdResult:
    """Mastra's rule on the average; with `confidence`, the rule on the interval at that confidence."""
    assert entry.threshold is not None
    bounds = entry.threshold.range
    passed = bounds.admits(average)
    result = ThresholdResult(id=entry.id, passed=passed, average_score=average, threshold=entry.threshold,
                             higher_is_better=entry.higher_is_better)
    rule = entry.threshold.rule
    if rule is None:
        return result
    estimate = tally.moments.estimate(rule.confidence, mean=average)
    if estimate is None or estimate.ci is None:
        result.uncertain = False  # a non-finite average: no interval, Mastra's rule (it fails)
        return result
    low, high = estimate.ci
    inside = bounds.admits(low) and bounds.admits(high)
    outside = (bounds.min is not None and high < bounds.min) or (bounds.max is not None and low > bounds.max)
    result.interval = (low, high)
    result.uncertain = not inside and not outside
    result.passed = inside or (result.uncertain and rule.when_uncertain == "pass")
    return result

