"""Base vs head: paired comparison of two runs' results, entry by entry. Pure: results in, a Comparison out.

Items are matched by id (and, for per-turn entries, turn). An item whose data changed (same id, another
`data_hash`) is not matched; an item or trial that errored counts as a failure (`errors: fail`, the default).
For each entry both runs have: head - base on the matched items, paired (exact and score tests with
Newcombe's interval for 0/1 entries with one trial per item; paired t on item means otherwise), a status,
multiplicity control across the entries that can fail the verdict (Holm-Bonferroni within Tarone's family by
default), and the drop it could detect. Gates and thresholds regress the verdict; tracked scorers are
compared and reported, never failing. docs/statistics.md explains the methods and what the enumeration and
simulations showed.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from evalgate.decide import stats
from evalgate.decide.verdict import Decision, ScoreStats, TurnResult, higher_is_better
from evalgate.infra.textsafe import plain
from evalgate.results.model import read_decision

Correction = Literal["holm", "bonferroni", "none"]
ErrorPolicy = Literal["fail", "skip"]
Uncertain = Literal["pass", "fail"]
Key = tuple[int | None, str, str]  # (turn, kind "gate" | "scorer", id)
FLIPPED_KEPT = 200
NAN = float("nan")
BASE_ITEMS_KEPT = 1000  # items whose status changed that carry the base's record (for the HTML report)
HISTORY_KEPT = 100  # the base branch's runs whose summaries travel with the results (the trend)
BASE_FIELDS = ("id", "output", "error", "gates", "scores", "reasons", "scorer_errors", "not_scorable",
               "reasons_by_kind")
FLIPS_KEPT = max(FLIPPED_KEPT * 4, BASE_ITEMS_KEPT)  # an entry's flipped items kept while items are paired
PASS_K = stats.PASS_K_ID  # `<entry id>.pass^k`: an entry's pass^k compared (repeats), as `compare.entries` names it


def pass_k_id(entry_id: str) -> str:
    """The id of an entry's pass^k comparison: `called_tool:get_weather.pass^k`."""
    return entry_id + PASS_K


@dataclass(frozen=True)
class CompareOptions:
    """confidence: of the intervals; max_drop: the drop tolerated before an entry regresses (per entry in
    `entries`, by id); correction: how the regression tests of several entries are kept to 1 - confidence;
    errors: `fail` counts an item or trial that errored on one side as a failure there, `skip` leaves the
    pair out; when_uncertain: `fail` fails the verdict on a gating entry whose drop is not shown to be within
    max_drop (non-inferiority; per entry in `uncertain_entries`)."""

    confidence: float = 0.95
    max_drop: float = 0.0
    entries: Mapping[str, float] = field(default_factory=dict)
    correction: Correction = "holm"
    errors: ErrorPolicy = "fail"
    when_uncertain: Uncertain = "pass"
    uncertain_entries: Mapping[str, str] = field(default_factory=dict)

    def drop_for(self, entry_id: str) -> float:
        return self.entries.get(entry_id, self.max_drop)

    def uncertain_for(self, entry_id: str) -> str:
        return self.uncertain_entries.get(entry_id, self.when_uncertain)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"confidence": self.confidence, "max_drop": self.max_drop, "correction": self.correction,
                               "errors": self.errors, "when_uncertain": self.when_uncertain}
        entries: dict[str, dict[str, Any]] = {k: {"max_drop": v} for k, v in self.entries.items()}
        for k, v in self.uncertain_entries.items():
            entries.setdefault(k, {})["when_uncertain"] = v
        if entries:
            out["entries"] = entries
        return out

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None, **overrides: Any) -> CompareOptions:
        """From a spec's `compare:` section (as recorded in results) and keyword overrides (None: not given)."""
        if settings is not None and not isinstance(settings, Mapping):
            raise ValueError(f"compare settings are a mapping, not {type(settings).__name__}")
        settings = dict(settings or {})
        if not isinstance(settings.get("entries") or {}, Mapping):
            raise ValueError("compare settings' `entries` are a mapping of ids")
        try:
            entries = {k: float(v["max_drop"]) for k, v in (settings.get("entries") or {}).items()
                       if isinstance(v, Mapping) and v.get("max_drop") is not None}
            uncertain = {k: v["when_uncertain"] for k, v in (settings.get("entries") or {}).items()
                         if isinstance(v, Mapping) and v.get("when_uncertain") is not None}
            values: dict[str, Any] = {
                "confidence": float(settings.get("confidence", 0.95)),
                "max_drop": float(settings.get("max_drop", 0.0)),
                "entries": entries,
                "correction": settings.get("correction", "holm"),
                "errors": settings.get("errors") or "fail",
                "when_uncertain": settings.get("when_uncertain") or "pass",
                "uncertain_entries": uncertain,
            }
        except TypeError as exc:  # a results file's settings edited into something else
            raise ValueError(f"compare settings hold a non-number: {exc}") from None
        values.update({k: v for k, v in overrides.items() if v is not None})
        options = cls(**values)
        options.check()
        return options

    def check(self) -> None:
        if not 0.5 < self.confidence < 1.0:
            raise ValueError(f"confidence must lie between 0.5 and 1, got {self.confidence}")
        drops = [("max_drop", self.max_drop), *((f"entries.{k}.max_drop", v) for k, v in self.entries.items())]
        for name, drop in drops:
            if not 0.0 <= drop <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {drop}")
        if self.correction not in ("holm", "bonferroni", "none"):
            raise ValueError(f"correction must be holm, bonferroni or none, got {self.correction!r}")
        if self.errors not in ("fail", "skip"):
            raise ValueError(f"errors must be fail or skip, got {self.errors!r}")
        for name, policy in [("when_uncertain", self.when_uncertain),
                             *((f"entries.{k}.when_uncertain", v) for k, v in self.uncertain_entries.items())]:
            if policy not in ("pass", "fail"):
                raise ValueError(f"{name} must be pass or fail, got {policy!r}")


# ---- what a results file says about its entries and items ----


@dataclass
class EntryInfo:
    key: Key
    gating: bool  # a gate or a threshold: may fail the verdict
    average: float | None
    higher_is_better: bool
    params_hash: str | None
    judged: bool
    unscored: str | None = None  # no result could be scored on that run: why
    pass_all_k: float | None = None  # the run's pass^K (0/1 entries with repeats)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    return obj.get(name, default) if isinstance(obj, Mapping) else getattr(obj, name, default)


def _as_dict(results: Any) -> dict[str, Any]:
    """Everything but the items of a results file read back (`Results.each_record` streams those)."""
    if isinstance(results, Mapping):
        return dict(results)
    if hasattr(results, "model_dump"):
        exclude = {"items"} if hasattr(results, "each_record") else None
        try:
            dumped: dict[str, Any] = results.model_dump(mode="json", exclude=exclude)
        except UnicodeEncodeError:  # a lone surrogate in a key of an output: pydantic cannot encode it, Python can
            dumped = plain(results.model_dump(mode="python", exclude=exclude))
        return dumped
    if hasattr(results, "to_dict"):
        as_dict: dict[str, Any] = results.to_dict()
        return as_dict
    raise TypeError(f"not results: {type(results).__name__}")


def entry_infos(results: Any, written: Mapping[str, Any] | None = None) -> dict[Key, EntryInfo]:
    """Each gate, threshold and tracked score of `results` (a results file, a run, results JSON), read from its
    typed decision (a threshold a ThresholdRange); `written`: its JSON (`_as_dict`), for `summary.not_scored`."""
    written = _as_dict(results) if written is None else written
    infos: dict[Key, EntryInfo] = {}
    for turn, section in _sections(_decision(results, written)):
        _section_infos(infos, turn, section)
    for record in (written.get("summary") or {}).get("not_scored") or []:  # all not scorable: still configured
        key = (record.get("turn"), "gate" if record.get("kind") == "gate" else "scorer", str(record.get("id")))
        infos.setdefault(key, EntryInfo(key, True, None, True, None, False, str(record.get("reason"))))
    return infos


def _decision(results: Any, written: Mapping[str, Any]) -> Decision:
    """The decision `results` holds, typed: a results file and a run hold one; results JSON is read as one."""
    if isinstance(results, Decision):
        return results
    outcome = getattr(results, "outcome", None)
    return outcome if isinstance(outcome, Decision) else read_decision(written)


Section = Decision | TurnResult  # the whole run's results, or one turn's


def _sections(decision: Decision) -> Iterator[tuple[int | None, Section]]:
    yield None, decision
    for turn in decision.turn_results or []:
        yield turn.index, turn


def _section_infos(infos: dict[Key, EntryInfo], turn: int | None, section: Section) -> None:
    for gate in section.gate_results:
        key: Key = (turn, "gate", gate.id)
        infos[key] = EntryInfo(key, True, _average(gate.score), True, gate.params_hash, bool(gate.judged),
                               gate.unscored, _rate(gate.pass_all_k))
    for t in section.threshold_results:
        key = (turn, "scorer", t.id)
        infos[key] = EntryInfo(key, True, _average(t.average_score), higher_is_better(t.threshold, t.higher_is_better),
                               t.params_hash, bool(t.judged), t.unscored, _rate(t.pass_all_k))
    with_threshold = {t.id for t in section.threshold_results}
    for sid, average in section.scores.items():
        if sid in with_threshold:
            continue
        bar = section.score_stats.get(sid) or ScoreStats()
        key = (turn, "scorer", sid)
        infos[key] = EntryInfo(key, False, _average(average),
                               True if bar.higher_is_better is None else bar.higher_is_better,
                               bar.params_hash, bool(bar.judged), pass_all_k=_rate(bar.pass_all_k))


def _average(value: float | None) -> float | None:
    """An average as results JSON holds it: NaN (no score) and infinities are null."""
    return value if value is not None and math.isfinite(value) else None


def _rate(value: Any) -> float | None:
    return _average(float(value)) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _numbers(values: Any) -> dict[str, float]:
    if not isinstance(values, Mapping):
        return {}
    # a score is in [0, 1] (NaN is written as null): an edited file's 1e308 overflowed the paired test's
    # squares, an integer past any float its conversion; neither is a score
    return {k: float(v) for k, v in values.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1}


def _collect(into: dict[Key, list[float]], record: Mapping[str, Any]) -> None:
    for kind, name in (("gate", "gates"), ("scorer", "scores")):
        for sid, value in _numbers(record.get(name)).items():
            into.setdefault((None, kind, sid), []).append(value)
    for turn in record.get("turns") or []:
        if not isinstance(turn, Mapping):
            continue
        index = turn.get("index")
        for kind, name in (("gate", "gates"), ("scorer", "scores")):
            for sid, value in _numbers(turn.get(name)).items():
                into.setdefault((index, kind, sid), []).append(value)


Failures = Mapping[Key, float]  # per entry, the score that counts as a failure: 0, or 1 when lower is better


def failure_scores(infos: Mapping[Key, EntryInfo]) -> dict[Key, float]:
    return {key: 0.0 if info.higher_is_better else 1.0 for key, info in infos.items()}


@dataclass
class TrialView:
    """One trial (the item itself without repeats): its scores, whether it errored, which scorers raised."""

    scores: dict[Key, float]
    errored: bool
    raised: set[tuple[int | None, str]]  # (turn, scorer id) of `scorer_errors`

    def values(self, failures: Failures | None) -> dict[Key, float]:
        if failures is None or not (self.errored or self.raised):
            return self.scores
        out = dict(self.scores)
        for key, worst in failures.items():
            if self.errored or (key[0], key[2]) in self.raised:
                out.setdefault(key, worst)
        return out


def trial_view(record: Mapping[str, Any]) -> TrialView:
    values: dict[Key, list[float]] = {}
    errored = record.get("error") is not None
    if not errored:
        _collect(values, record)
    errors = record.get("scorer_errors")
    raised = {_scorer_label(str(label)) for label in errors} if isinstance(errors, Mapping) else set()
    return TrialView({key: v[0] for key, v in values.items()}, errored, raised)


def _scorer_label(label: str) -> tuple[int | None, str]:
    """`scorer_errors` names a per-turn check `turn-N:id` (evalgate.run.engine), a top-level one by its id."""
    head, colon, rest = label.partition(":")
    if colon and head.startswith("turn-") and head[5:].isdigit():
        return int(head[5:]), rest
    return None, label


@dataclass
class ItemView:
    id: str
    data_hash: str | None
    trials: list[TrialView]

    def values(self, failures: Failures | None = None) -> dict[Key, list[float]]:
        """Scored values per entry, one per trial. failures: when given, a trial (or item) that errored counts
        as a failure of every entry and a scorer that raised as a failure of its entry, scored as `failures`
        says; else they leave no value."""
        out: dict[Key, list[float]] = {}
        for trial in self.trials:
            for key, value in trial.values(failures).items():
                out.setdefault(key, []).append(value)
        return out

    @property
    def errored(self) -> bool:
        return any(t.errored or t.raised for t in self.trials)


def item_views(records: Iterable[Mapping[str, Any]]) -> list[ItemView]:
    views = []
    for record in records:
        trials = record.get("trials")
        units = [t for t in trials if isinstance(t, Mapping)] if isinstance(trials, list) else [record]
        views.append(ItemView(str(record.get("id")), record.get("data_hash"), [trial_view(u) for u in units]))
    return views


def item_values(record: Mapping[str, Any], failures: Failures | None = None) -> dict[Key, list[float]]:
    """An item record's scored values per entry: one per trial (one in all without repeats)."""
    return item_views([record])[0].values(failures)


# ---- the comparison ----


@dataclass
class EntryComparison:
    id: str
    turn: int | None
    kind: str  # "gate" | "threshold" | "tracked"
    base_average: float | None
    head_average: float | None
    delta: float | None = None
    ci95: tuple[float, float] | None = None
    p_value: float | None = None
    method: str | None = None
    status: str = "incomparable"  # improved | regressed | unchanged | uncertain | incomparable
    pairs: int = 0
    max_drop: float = 0.0
    higher_is_better: bool = True
    reason: str | None = None  # why incomparable, or why a drop is uncertain after correction
    p_regression: float | None = None  # one-sided: head is worse than base by more than max_drop
    p_within: float | None = None  # one-sided: head is worse than base by less than max_drop (non-inferiority)
    p_decision: float | None = None  # the p the status came from, compared with `alpha`
    alpha: float | None = None  # the level p_decision met or missed (after the correction, for a regression)
    base_matched: float | None = None  # the averages on the matched items, the ones delta compares
    head_matched: float | None = None
    mde: float | None = None  # the drop this comparison finds with 80% power (docs/statistics.md)
    errored_pairs: int = 0  # pairs with an error on either side, counted as failures there (errors: fail)
    when_uncertain: str = "pass"
    fails: bool = False  # fails the verdict: regressed, or uncertain under when_uncertain: fail
    measure: str | None = None  # "pass^k": an entry's pass^k compared (its id ends in .pass^k), not its average
    k: int | None = None  # with measure pass^k: the k compared (the fewer trials of the two runs)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id, "turn": self.turn, "kind": self.kind, "base_average": self.base_average,
            "head_average": self.head_average, "delta": self.delta,
            "ci95": list(self.ci95) if self.ci95 is not None else None, "p_value": self.p_value,
            "method": self.method, "status": self.status, "pairs": self.pairs, "max_drop": self.max_drop,
            "higher_is_better": self.higher_is_better,
        }
        optional = {"p_regression": self.p_regression, "p_within": self.p_within, "p_decision": self.p_decision,
                    "alpha": self.alpha, "base_matched": self.base_matched, "head_matched": self.head_matched,
                    "mde": self.mde, "measure": self.measure, "k": self.k}
        out.update({k: v for k, v in optional.items() if v is not None})
        if self.errored_pairs:
            out["errored_pairs"] = self.errored_pairs
        if self.when_uncertain != "pass":
            out["when_uncertain"] = self.when_uncertain
        if self.fails:
            out["fails"] = True
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass
class Comparison:
    baseline: dict[str, Any]
    options: CompareOptions
    entries: list[EntryComparison] = field(default_factory=list)
    flipped: list[dict[str, Any]] = field(default_factory=list)
    flipped_count: int = 0
    matched_items: int = 0
    new_items: int = 0
    missing_items: int = 0
    changed_items: int = 0
    warnings: list[str] = field(default_factory=list)
    changes: dict[str, dict[str, str]] = field(default_factory=dict)  # item id → {entry label: direction}
    base_items: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def regressions(self) -> list[EntryComparison]:
        """Regressed gates and thresholds."""
        return [e for e in self.entries if e.status == "regressed" and e.kind != "tracked"]

    @property
    def failures(self) -> list[EntryComparison]:
        """Entries that fail the verdict: the regressions, and gating entries left uncertain under
        `when_uncertain: fail` (a drop within max_drop not shown)."""
        return [e for e in self.entries if e.fails]

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "settings": self.options.to_dict(),
            "entries": [e.to_dict() for e in self.entries],
            "flipped": self.flipped,
            "flipped_count": self.flipped_count,
            "matched_items": self.matched_items,
            "new_items": self.new_items,
            "missing_items": self.missing_items,
            "changed_items": self.changed_items,
            "regressions": len(self.regressions),
            "failures": len(self.failures),
            "warnings": self.warnings,
            **({"base_items": self.base_items} if self.base_items else {}),
            **({"history": self.history} if self.history else {}),
        }


def _judge(results: Mapping[str, Any]) -> dict[str, Any]:
    judge = (results.get("summary") or {}).get("judge")
    return dict(judge) if isinstance(judge, Mapping) else {}


def _incomparable(base: EntryInfo, head: EntryInfo, base_judge: Mapping[str, Any],
                  head_judge: Mapping[str, Any]) -> str | None:
    if base.params_hash and head.params_hash and base.params_hash != head.params_hash:
        return "its parameters changed"
    if base.judged or head.judged:
        if base_judge.get("model") != head_judge.get("model"):
            return f"judged by another model (base {base_judge.get('model')!r}, head {head_judge.get('model')!r})"
        base_prompts, head_prompts = base_judge.get("prompts"), head_judge.get("prompts")
        base_prompts = base_prompts if isinstance(base_prompts, Mapping) else {}  # an edited file's: no hashes
        head_prompts = head_prompts if isinstance(head_prompts, Mapping) else {}
        changed = sorted(k for k in set(base_prompts) & set(head_prompts) if base_prompts[k] != head_prompts[k])
        if changed:
            return "the judge's prompts changed (" + ", ".join(changed) + ")"
    return None


def _mean(values: Sequence[float]) -> float:
    total = 0.0
    for value in values:
        total += value
    return total / len(values)


class _BaseItems:
    """The baseline's items, kept compactly for pairing (a million items in a few arrays, not a million
    objects): the first position of each id, each item's `data_hash`, whether it errored, and per entry one
    score per item (NaN where it has none) or, where an item has several (repeats), all of them."""

    def __init__(self, views: Iterable[ItemView], failures: Failures | None) -> None:
        self.position: dict[str, int] = {}
        self.hashes: list[str | None] = []
        self.errored = bytearray()
        self.single: dict[Key, array[float]] = {}
        self.several: dict[Key, dict[int, list[float]]] = {}
        self.duplicates = 0
        for view in views:
            if view.id in self.position:
                self.duplicates += 1
                continue
            at = self.position[view.id] = len(self.hashes)
            self.hashes.append(view.data_hash)
            self.errored.append(view.errored)
            for key, values in view.values(failures).items():
                if len(values) == 1:
                    column = self.single.get(key)
                    if column is None:
                        column = self.single[key] = array("d")
                    if len(column) < at:
                        column.extend([NAN] * (at - len(column)))
                    column.append(values[0])
                elif values:
                    self.several.setdefault(key, {})[at] = values

    def values(self, at: int, key: Key) -> list[float] | None:
        column = self.single.get(key)
        if column is not None and at < len(column):
            value = column[at]
            if value == value:  # not NaN: the item's one score
                return [value]
        several = self.several.get(key)
        return several.get(at) if several is not None else None


class _Pairs:
    """One entry's matched pairs, folded as they come: what its difference, matched averages and flipped
    items need."""

    __slots__ = ("base_means", "better_high", "binary", "counts", "differences", "errored", "flip_count", "flips",
                 "head_means", "ones_and_zeros", "same", "trial_counts")

    def __init__(self, better_high: bool) -> None:
        self.better_high = better_high
        self.binary = True  # one 0/1 score a side, every pair: McNemar
        self.ones_and_zeros = True  # every score 0 or 1 (repeats too): items can flip
        self.same = True  # every pair scored alike
        self.counts = [0, 0, 0, 0]  # both, regressed, improved, neither (oriented: higher is better)
        self.differences = array("d")  # head - base of item means (oriented)
        self.base_means = array("d")  # each side's item means, as scored: the matched averages
        self.head_means = array("d")
        self.errored = 0  # pairs with an error on either side
        self.flips: list[tuple[str, list[float], list[float]]] = []
        self.flip_count = 0
        # 0/1 entries: pairs by (base trials, base passes, head trials, head passes), for pass^k
        self.trial_counts: dict[tuple[int, int, int, int], int] = {}

    def __len__(self) -> int:
        return len(self.differences)

    def add(self, item_id: str, base: list[float], head: list[float], errored: bool) -> None:
        better_high = self.better_high

        def orient(value: float) -> float:
            return value if better_high else 1.0 - value

        base_mean, head_mean = _mean(base), _mean(head)
        self.base_means.append(base_mean)
        self.head_means.append(head_mean)
        self.differences.append(orient(head_mean) - orient(base_mean))
        self.errored += errored
        if base != head:
            self.same = False
        if self.binary and not (len(base) == 1 and len(head) == 1 and base[0] in (0.0, 1.0) and head[0] in (0.0, 1.0)):
            self.binary = False
        if self.binary:
            was, now = orient(base[0]) == 1.0, orient(head[0]) == 1.0
            self.counts[0 if was and now else 1 if was else 2 if now else 3] += 1
        if self.ones_and_zeros:
            if any(v not in (0.0, 1.0) for v in (*base, *head)):
                self.ones_and_zeros = False
                self.flips = []
                self.trial_counts = {}
                return
            good = 1.0 if better_high else 0.0
            key = (len(base), base.count(good), len(head), head.count(good))
            self.trial_counts[key] = self.trial_counts.get(key, 0) + 1
            if all(v == good for v in base) != all(v == good for v in head):
                self.flip_count += 1
                if len(self.flips) < FLIPS_KEPT:
                    self.flips.append((item_id, base, head))

    def pass_k(self) -> tuple[int, list[tuple[float, float, int]]] | None:
        """For pass^k: k, the fewer trials of the two runs (at least 2), and per pair of items with k trials on
        both sides (base pass^k, head pass^k, how many such pairs), in one order; None for a continuous entry
        or one trial a side."""
        if not self.ones_and_zeros or not self.trial_counts:
            return None
        k = min(max(key[0] for key in self.trial_counts), max(key[2] for key in self.trial_counts))
        if k < 2:
            return None
        rows = [(stats.pass_all_k(nb, cb, k), stats.pass_all_k(nh, ch, k), count)
                for (nb, cb, nh, ch), count in sorted(self.trial_counts.items()) if nb >= k and nh >= k]
        return k, rows

    def difference(self, confidence: float) -> stats.Difference:
        """head - base, as `better_high` orients it (lower-is-better entries flipped so a drop is always bad)."""
        if self.binary:
            both, regressed, improved, neither = self.counts
            return stats.paired_binary(both, regressed, improved, neither, confidence)
        return stats.paired_means(self.differences, confidence)


def _records(results: Any, as_dict: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """The item records of results: read one at a time from a results file, else those held."""
    each_record = getattr(results, "each_record", None)
    if each_record is not None:
        return each_record()  # type: ignore[no-any-return]
    return as_dict.get("items") or []


def _views(records: Iterable[Mapping[str, Any]]) -> Iterator[ItemView]:
    for record in records:
        yield item_views([record])[0]


@dataclass
class _Matching:
    """What pairing head's items with the baseline's gives besides the pairs: the duplicated ids, and the
    matched items that errored on either side."""

    duplicates: int = 0
    errored: int = 0


def _pair_items(comparison: Comparison, base: _BaseItems, head_views: Iterable[ItemView],
                pairs: dict[Key, _Pairs], failures: Failures | None) -> _Matching:
    """Match head's items to the baseline's by id, in head's order, each entry's pairs folded; new, missing,
    changed and duplicated items counted."""
    seen = bytearray(len(base.hashes))  # the baseline's items head has named
    new_ids: set[str] = set()
    found = _Matching()
    for view in head_views:
        at = base.position.get(view.id)
        if at is None:
            if view.id in new_ids:
                found.duplicates += 1
            else:
                new_ids.add(view.id)
                comparison.new_items += 1
            continue
        if seen[at]:
            found.duplicates += 1
            continue
        seen[at] = 1
        old_hash = base.hashes[at]
        if old_hash and view.data_hash and old_hash != view.data_hash:
            comparison.changed_items += 1
            continue
        comparison.matched_items += 1
        errored = bool(base.errored[at]) or view.errored
        found.errored += errored
        head_values = view.values(failures)
        for key, paired in pairs.items():
            values = head_values.get(key)
            if values:
                base_values = base.values(at, key)
                if base_values:
                    paired.add(view.id, base_values, values, errored)
    comparison.missing_items = len(seen) - sum(seen)
    return found


def _matching_warnings(comparison: Comparison, found: _Matching) -> None:
    if found.duplicates:
        comparison.warnings.append(f"{found.duplicates} item ids appear more than once: only the first of each is "
                                   "compared")
    if comparison.changed_items:
        comparison.warnings.append(f"{comparison.changed_items} items have the same id but other data (input or "
                                   "expected fields): they are not compared")


def _repeats(results: Mapping[str, Any]) -> int:
    repeats = (results.get("summary") or {}).get("repeats")
    return repeats if isinstance(repeats, int) and not isinstance(repeats, bool) and repeats > 0 else 1


def _setting_warnings(comparison: Comparison, base_d: Mapping[str, Any], head_d: Mapping[str, Any]) -> None:
    if base_d.get("name") and head_d.get("name") and base_d.get("name") != head_d.get("name"):
        comparison.warnings.append(f"the baseline is another spec ({base_d.get('name')!r})")
    base_k, head_k = _repeats(base_d), _repeats(head_d)
    if base_k != head_k:
        fewer = min(base_k, head_k)
        also = f" (and pass^k at k = {fewer})" if fewer > 1 else ""
        comparison.warnings.append(
            f"the baseline ran {base_k} trial{'s' if base_k != 1 else ''} per item, this run {head_k}: item means "
            f"are compared{also}, but flaky items and the noise of each side differ")


def _error_warnings(comparison: Comparison, errored: int, counted: bool) -> None:
    if errored and counted:
        comparison.warnings.append(
            f"{errored} matched item{'s' if errored != 1 else ''} errored on one side or both: an error counts as "
            "a failure of the entries it left unscored (compare: errors: skip leaves such pairs out)")
    elif errored:
        comparison.warnings.append(f"{errored} matched items errored on one side or both: their unscored entries "
                                   "are left out of the comparison (errors: skip)")


def compare_results(base: Any, head: Any, options: CompareOptions | None = None, *,
                    head_items: list[ItemView] | None = None) -> Comparison:
    """Compare two results (dicts, Results models or EvalResults with items). A results file's items are
    read as a stream: the baseline's kept compactly, head's paired one at a time (the baseline's read
    again for `base_items`, the records of the items that flipped).

    head_items: the head's item views when its items are not in `head` (a run in progress).
    """
    options = options or CompareOptions()
    options.check()
    base_d, head_d = _as_dict(base), _as_dict(head)
    base_info, head_info = entry_infos(base, base_d), entry_infos(head, head_d)
    summary = base_d.get("summary") or {}
    comparison = Comparison(
        baseline={"name": base_d.get("name"), "verdict": base_d.get("verdict"),
                  "created_at": base_d.get("created_at"), "git_sha": base_d.get("git_sha"),
                  "items": summary.get("total_items")},
        options=options,
    )
    counted = options.errors == "fail"
    base_items = _BaseItems(_views(_records(base, base_d)), failure_scores(base_info) if counted else None)
    if not base_items.hashes:
        comparison.warnings.append("the baseline has no item records: nothing can be paired")
    pairs = {key: _Pairs(info.higher_is_better) for key, info in head_info.items()}
    head_views = head_items if head_items is not None else _views(_records(head, head_d))
    found = _pair_items(comparison, base_items, head_views, pairs, failure_scores(head_info) if counted else None)
    found.duplicates += base_items.duplicates
    _matching_warnings(comparison, found)
    _setting_warnings(comparison, base_d, head_d)
    _error_warnings(comparison, found.errored, counted)
    base_judge, head_judge = _judge(base_d), _judge(head_d)
    tested: list[Tested] = []
    for key, info in head_info.items():
        entry = _compare_entry(comparison, key, info, base_info.get(key), (base_judge, head_judge), pairs[key],
                               tested)
        comparison.entries.append(entry)
        reliability = _compare_pass_k(comparison.options, entry, info, base_info.get(key), pairs[key], tested)
        if reliability is not None:
            comparison.entries.append(reliability)
    gone = [key for key in base_info if key not in head_info]
    if gone:
        names = ", ".join(k[2] if k[0] is None else f"turn {k[0]}: {k[2]}" for k in gone[:10])
        comparison.warnings.append(f"{len(gone)} entries of the baseline are not in this run: {names}")
    _decide(tested, options)
    if comparison.changes:
        comparison.base_items = base_records(_records(base, base_d), comparison.changes)
    comparison.history = run_history(base_d)
    comparison.flipped.sort(key=lambda f: (f["direction"] != "pass->fail", f["entry"], f["item"]))
    comparison.flipped = comparison.flipped[:FLIPPED_KEPT]
    return comparison


Tested = tuple[EntryComparison, stats.Difference, bool]


def _compare_entry(comparison: Comparison, key: Key, info: EntryInfo, old: EntryInfo | None,
                   judges: tuple[Mapping[str, Any], Mapping[str, Any]], paired: _Pairs,
                   tested: list[Tested]) -> EntryComparison:
    turn, kind, entry_id = key
    options = comparison.options
    label = "gate" if kind == "gate" else "threshold" if info.gating else "tracked"
    entry = EntryComparison(entry_id, turn, label, old.average if old else None, info.average,
                            max_drop=options.drop_for(entry_id), higher_is_better=info.higher_is_better,
                            when_uncertain=options.uncertain_for(entry_id))
    if old is None:
        entry.reason = "not in the baseline"
        return entry
    reason = _incomparable(old, info, *judges)
    if reason is not None:
        entry.reason = reason
        return entry
    entry.pairs = len(paired)
    if not paired:
        entry.reason = _unpaired_reason(old, info)
        return entry
    entry.errored_pairs = paired.errored
    diff = paired.difference(options.confidence)
    sign = 1.0 if info.higher_is_better else -1.0
    entry.delta = sign * diff.delta
    entry.base_matched = _mean(paired.base_means)
    entry.head_matched = _mean(paired.head_means)
    shown = diff if options.confidence == 0.95 else paired.difference(0.95)
    low, high = shown.ci
    entry.ci95 = (low, high) if sign > 0 else (-high, -low)
    entry.p_value = diff.p_value
    entry.method = diff.method
    entry.p_regression = diff.below(-entry.max_drop)
    entry.p_within = diff.above(-entry.max_drop)
    tested.append((entry, diff, paired.same))
    _flips(comparison, key, label, paired)
    return entry


def _unpaired_reason(base: EntryInfo, head: EntryInfo) -> str:
    """Why an entry of both runs has no pair: a run that scored none of it says why (its `unscored`)."""
    for run, info in (("this run", head), ("the baseline", base)):
        if info.unscored:
            return f"no result could be scored on {run}" + info.unscored.removeprefix("no result could be scored")
    return "no item was scored on both runs"


def _compare_pass_k(options: CompareOptions, entry: EntryComparison, info: EntryInfo, old: EntryInfo | None,
                    paired: _Pairs, tested: list[Tested]) -> EntryComparison | None:
    """A 0/1 entry run with repeats on both sides: its pass^k compared too, paired on items (head - base of
    each item's unbiased pass^k, paired t), as `<id>.pass^k`. It gates when `compare.entries` names it (and
    its entry is a gate or threshold); otherwise it is reported, never failing, in a family of its own."""
    if old is None or entry.reason is not None or entry.pairs == 0:
        return None
    found = paired.pass_k()
    if found is None:
        return None
    k, rows = found
    name = pass_k_id(entry.id)
    named = name in options.entries or name in options.uncertain_entries
    compared = EntryComparison(name, entry.turn, entry.kind if named else "tracked", old.pass_all_k, info.pass_all_k,
                               max_drop=options.drop_for(name), when_uncertain=options.uncertain_for(name),
                               measure="pass^k", k=k)
    differences = array("d", (head - base for base, head, count in rows for _ in range(count)))
    compared.pairs = len(differences)
    if not differences:
        compared.reason = f"no item ran {k} trials on both runs"
        return compared
    compared.errored_pairs = entry.errored_pairs
    diff = stats.paired_means(differences, options.confidence)
    compared.delta = diff.delta
    compared.base_matched = _mean([base for base, _, count in rows for _ in range(count)])
    compared.head_matched = _mean([head for _, head, count in rows for _ in range(count)])
    shown = diff if options.confidence == 0.95 else stats.paired_means(differences, 0.95)
    compared.ci95 = shown.ci
    compared.p_value, compared.method = diff.p_value, diff.method
    compared.p_regression = diff.below(-compared.max_drop)
    compared.p_within = diff.above(-compared.max_drop)
    tested.append((compared, diff, all(d == 0.0 for d in differences)))
    return compared


def _flips(comparison: Comparison, key: Key, kind: str, paired: _Pairs) -> None:
    """Items whose 0/1 outcome changed (with repeats: whose pass on every trial changed). Of an entry's
    flipped items the first FLIPS_KEPT are kept (its count is exact): the items kept in `flipped`, and
    those whose base record `base_items` carries."""
    if not paired.ones_and_zeros:
        return  # a continuous entry: nothing flips
    turn, _, entry_id = key
    good = 1.0 if paired.better_high else 0.0
    comparison.flipped_count += paired.flip_count
    for item_id, base, head in paired.flips:
        base_pass = all(v == good for v in base)
        if item_id in comparison.changes or len(comparison.changes) < BASE_ITEMS_KEPT:
            label = entry_id if turn is None else f"turn {turn + 1}: {entry_id}"
            comparison.changes.setdefault(item_id, {})[label] = "pass->fail" if base_pass else "fail->pass"
        if len(comparison.flipped) < FLIPPED_KEPT * 4:
            comparison.flipped.append({"item": item_id, "entry": entry_id, "turn": turn, "kind": kind,
                                       "base_score": _mean(base), "head_score": _mean(head),
                                       "direction": "pass->fail" if base_pass else "fail->pass"})


def base_records(records: Iterable[Any], changes: Mapping[str, Mapping[str, str]]) -> list[dict[str, Any]]:
    """The base's record of each item whose pass or fail changed, with its `flips` ({entry: direction}):
    the HTML report shows the base's output and reasons beside the head's without the baseline file."""
    out = []
    seen: set[str] = set()
    for record in records:
        record = record if isinstance(record, Mapping) else _as_dict(record)
        item_id = str(record.get("id"))
        if item_id in changes and item_id not in seen:
            seen.add(item_id)
            out.append({**{k: record[k] for k in BASE_FIELDS if record.get(k) not in (None, {}, [])},
                        "id": item_id, "flips": dict(changes[item_id])})
    return out


def run_history(base: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The base branch's recent runs, oldest first: the base's own history, then the base itself."""
    earlier = (base.get("comparison") or {}).get("history")
    earlier = [r for r in earlier if isinstance(r, Mapping)] if isinstance(earlier, list) else []
    summary = base.get("summary") or {}
    gates = {str(g.get("id")): g.get("score") for g in base.get("gate_results") or [] if isinstance(g, Mapping)}
    this = {"name": base.get("name"), "created_at": base.get("created_at"), "git_sha": base.get("git_sha"),
            "verdict": base.get("verdict"), "items": summary.get("total_items"),
            "scores": {**dict(base.get("scores") or {}), **gates}}
    return [*earlier, this][-HISTORY_KEPT:]


def _decide(tested: list[Tested], options: CompareOptions) -> None:
    """Statuses, the regression tests of gating entries (and, apart, of tracked ones, and of the pass^k
    comparisons reported only) corrected together.

    An entry whose every matched item scored exactly as on the baseline is `unchanged`, whatever its interval
    allows: nothing changed on the items measured.
    """
    alpha = (1.0 - options.confidence) / 2.0  # one-sided: head - base below -max_drop
    for kind in ("gating", "tracked", "pass^k"):
        group = [(e, d, same) for e, d, same in tested if _family(e) == kind]
        p_values = [e.p_regression if e.p_regression is not None else 1.0 for e, _, _ in group]
        # the smallest p each test could give on its discordant pairs: Tarone's modification keeps the
        # entries that cannot move (constant on both runs) from spending the family's alpha
        least = [d.least_p(-e.max_drop) for e, d, _ in group]
        if options.correction == "holm":
            rejected = stats.holm(p_values, alpha, least)
        elif options.correction == "bonferroni":
            rejected = stats.bonferroni(p_values, alpha, least)
        else:
            rejected = [p <= alpha for p in p_values]
        family = len(stats.tarone_family(least, alpha)) if options.correction != "none" else 1
        corrected = stats.adjusted(p_values, alpha, options.correction, least)
        for (entry, diff, same), regressed, p_adjusted in zip(group, rejected, corrected, strict=True):
            entry.mde = stats.detectable_drop(diff.sd, diff.pairs, alpha / max(1, len(group)),
                                              max_drop=entry.max_drop, binary=diff.method == "mcnemar-newcombe")
            _entry_status(entry, diff, same, regressed, alpha, family, options)
            if entry.status in ("regressed", "uncertain"):
                entry.p_decision = p_adjusted  # held to alpha: rejected exactly when at most alpha


def _family(entry: EntryComparison) -> str:
    """Whose regression tests are corrected together: the gating entries (a pass^k that `compare.entries`
    names among them), the tracked scorers, and apart the pass^k comparisons reported only (so adding them
    changes no other entry's status)."""
    if entry.kind != "tracked":
        return "gating"
    return "pass^k" if entry.measure == "pass^k" else "tracked"


def _entry_status(entry: EntryComparison, diff: stats.Difference, same: bool, regressed: bool, alpha: float,
                  family: int, options: CompareOptions) -> None:
    """The status and the p it came from: a regression by the corrected test; otherwise unchanged when a drop
    beyond max_drop is ruled out (the one-sided test of non-inferiority at alpha; an intersection-union
    test, so no correction), improved when the interval lies above 0, uncertain when neither is shown."""
    within = entry.p_within if entry.p_within is not None else 1.0
    if same:
        entry.status, entry.p_decision, entry.alpha = "unchanged", None, None
    elif regressed:
        entry.status, entry.p_decision, entry.alpha = "regressed", entry.p_regression, alpha
    elif diff.ci[0] > 0.0:
        entry.status, entry.p_decision, entry.alpha = "improved", within, alpha
    elif within <= alpha:
        entry.status, entry.p_decision, entry.alpha = "unchanged", within, alpha
    else:
        entry.status, entry.p_decision, entry.alpha = "uncertain", entry.p_regression, alpha
        if entry.p_regression is not None and entry.p_regression <= alpha:
            entry.reason = (f"a drop beyond max_drop at {options.confidence:.0%}, but not significant once "
                            f"{options.correction} across {family} entries is applied")
    gating = entry.kind != "tracked"
    entry.fails = gating and (entry.status == "regressed"
                              or (entry.status == "uncertain" and entry.when_uncertain == "fail"))
    if entry.fails and entry.status == "uncertain":
        note = f"when_uncertain: fail, and a drop within max_drop ({entry.max_drop:g}) is not shown"
        entry.reason = f"{entry.reason}; {note}" if entry.reason else note


def add_to_results(head: dict[str, Any], comparison: Comparison) -> dict[str, Any]:
    """A results file's JSON with the comparison added: a regression fails a verdict that had not failed
    (`summary.failure_reason: regression`), as `EvalResult.apply_comparison` does for a run in progress."""
    head["comparison"] = comparison.to_dict()
    if comparison.failures and head.get("verdict") != "failed":
        head["verdict"] = "failed"
        head.setdefault("summary", {})["failure_reason"] = "regression"
    return head


def compare(base: Any, head: Any, **options: Any) -> Comparison:
    """Compare two runs: results file paths, results dicts, `Results` models or `EvalResult`s (with items).

    options: confidence (0.95), max_drop (0.0), entries ({id: max_drop}), correction ("holm").
    """
    from pathlib import Path

    from evalgate.results.model import load_results

    def load(value: Any) -> Any:
        if isinstance(value, str | Path):
            return load_results(Path(value))
        return value

    base, head = load(base), load(head)
    entries = options.pop("entries", None)
    if entries is not None:
        options["entries"] = {k: (v["max_drop"] if isinstance(v, Mapping) else float(v)) for k, v in entries.items()}
    recorded = _get(head, "compare_settings") or (_get(head, "model_extra") or {}).get("compare_settings")
    return compare_results(base, head, CompareOptions.from_settings(recorded, **options))
