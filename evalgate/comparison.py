"""Base vs head: paired comparison of two runs' results, entry by entry. Pure: results in, a Comparison out.

Items are matched by id (and, for per-turn entries, turn). An item whose data changed (same id, another
`data_hash`) is not matched. For each entry both runs have: head - base on the matched items, paired (exact
McNemar + Newcombe for 0/1 entries with one trial per item; paired t on item means otherwise), a status, and
multiplicity control across the entries that can fail the verdict (Holm-Bonferroni by default). Gates and
thresholds regress the verdict; tracked scorers are compared and reported, never failing. docs/statistics.md
explains the methods and what simulations showed.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from evalgate import stats
from evalgate.textsafe import plain
from evalgate.verdict import ThresholdRange, higher_is_better

Correction = Literal["holm", "bonferroni", "none"]
Key = tuple[int | None, str, str]  # (turn, kind "gate" | "scorer", id)
FLIPPED_KEPT = 200
NAN = float("nan")


@dataclass(frozen=True)
class CompareOptions:
    """confidence: of the intervals; max_drop: the drop tolerated before an entry regresses (per entry in
    `entries`, by id); correction: how the regression tests of several entries are kept to 1 - confidence."""

    confidence: float = 0.95
    max_drop: float = 0.0
    entries: Mapping[str, float] = field(default_factory=dict)
    correction: Correction = "holm"

    def drop_for(self, entry_id: str) -> float:
        return self.entries.get(entry_id, self.max_drop)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"confidence": self.confidence, "max_drop": self.max_drop, "correction": self.correction}
        if self.entries:
            out["entries"] = {k: {"max_drop": v} for k, v in self.entries.items()}
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
            values: dict[str, Any] = {
                "confidence": float(settings.get("confidence", 0.95)),
                "max_drop": float(settings.get("max_drop", 0.0)),
                "entries": entries,
                "correction": settings.get("correction", "holm"),
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


# ---- what a results file says about its entries and items ----


@dataclass
class EntryInfo:
    key: Key
    gating: bool  # a gate or a threshold: may fail the verdict
    average: float | None
    higher_is_better: bool
    params_hash: str | None
    judged: bool


def _get(obj: Any, name: str, default: Any = None) -> Any:
    return obj.get(name, default) if isinstance(obj, Mapping) else getattr(obj, name, default)


def _as_dict(results: Any) -> dict[str, Any]:
    """Everything but the items of a results file read back (`Results.each_record` streams those)."""
    if isinstance(results, Mapping):
        return dict(results)
    if hasattr(results, "model_dump"):
        exclude = {"items"} if hasattr(results, "each_record") else None
        try:
            return results.model_dump(mode="json", exclude=exclude)
        except UnicodeEncodeError:  # a lone surrogate in a key of an output: pydantic cannot encode it, Python can
            return plain(results.model_dump(mode="python", exclude=exclude))
    if hasattr(results, "to_dict"):
        return results.to_dict()
    raise TypeError(f"not results: {type(results).__name__}")


def entry_infos(results: Mapping[str, Any]) -> dict[Key, EntryInfo]:
    infos: dict[Key, EntryInfo] = {}

    def section(turn: int | None, holder: Mapping[str, Any]) -> None:
        for gate in holder.get("gate_results") or []:
            infos[(turn, "gate", gate["id"])] = EntryInfo((turn, "gate", gate["id"]), True, gate.get("score"), True,
                                                          gate.get("params_hash"), bool(gate.get("judged")))
        with_threshold = set()
        for t in holder.get("threshold_results") or []:
            with_threshold.add(t["id"])
            default = t.get("higher_is_better", True)
            infos[(turn, "scorer", t["id"])] = EntryInfo(
                (turn, "scorer", t["id"]), True, t.get("average_score"),
                higher_is_better(_threshold(t.get("threshold")), True if default is None else default),
                t.get("params_hash"), bool(t.get("judged")))
        stats_of = holder.get("score_stats") or {}
        for sid, average in (holder.get("scores") or {}).items():
            if sid in with_threshold:
                continue
            bar = stats_of.get(sid) or {}
            default = bar.get("higher_is_better")
            infos[(turn, "scorer", sid)] = EntryInfo((turn, "scorer", sid), False, average,
                                                     True if default is None else bool(default),
                                                     bar.get("params_hash"), bool(bar.get("judged")))

    section(None, results)
    for turn in results.get("turn_results") or []:
        section(turn.get("index"), turn)
    return infos


def _threshold(value: Any) -> ThresholdRange | None:
    """A threshold as a results file holds it, typed; None when there is none (or none that reads)."""
    try:
        return ThresholdRange.of(value) if value is not None else None
    except ValueError:
        return None


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


def item_values(record: Mapping[str, Any]) -> dict[Key, list[float]]:
    """An item record's scored values per entry: one per trial (one in all without repeats)."""
    values: dict[Key, list[float]] = {}
    trials = record.get("trials")
    if isinstance(trials, list):
        for trial in trials:
            if isinstance(trial, Mapping) and trial.get("error") is None:
                _collect(values, trial)
    elif record.get("error") is None:
        _collect(values, record)
    return values


@dataclass
class ItemView:
    id: str
    data_hash: str | None
    values: dict[Key, list[float]]


def item_views(records: Iterable[Mapping[str, Any]]) -> list[ItemView]:
    return [ItemView(str(r.get("id")), r.get("data_hash"), item_values(r)) for r in records]


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

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id, "turn": self.turn, "kind": self.kind, "base_average": self.base_average,
            "head_average": self.head_average, "delta": self.delta,
            "ci95": list(self.ci95) if self.ci95 is not None else None, "p_value": self.p_value,
            "method": self.method, "status": self.status, "pairs": self.pairs, "max_drop": self.max_drop,
            "higher_is_better": self.higher_is_better,
        }
        if self.p_regression is not None:
            out["p_regression"] = self.p_regression
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

    @property
    def regressions(self) -> list[EntryComparison]:
        """Entries that fail the verdict: regressed gates and thresholds."""
        return [e for e in self.entries if e.status == "regressed" and e.kind != "tracked"]

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
            "warnings": self.warnings,
        }


def _judge(results: Mapping[str, Any]) -> dict[str, Any]:
    judge = (results.get("summary") or {}).get("judge")
    return judge if isinstance(judge, Mapping) else {}


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


def _mean(values: list[float]) -> float:
    total = 0.0
    for value in values:
        total += value
    return total / len(values)


class _BaseItems:
    """The baseline's items, kept compactly for pairing (a million items in a few arrays, not a million
    objects): the first position of each id, each item's `data_hash`, and per entry one score per item
    (NaN where it has none) or, where an item has several (repeats), all of them."""

    def __init__(self, views: Iterable[ItemView]) -> None:
        self.position: dict[str, int] = {}
        self.hashes: list[str | None] = []
        self.single: dict[Key, array[float]] = {}
        self.several: dict[Key, dict[int, list[float]]] = {}
        self.duplicates = 0
        for view in views:
            if view.id in self.position:
                self.duplicates += 1
                continue
            at = self.position[view.id] = len(self.hashes)
            self.hashes.append(view.data_hash)
            for key, values in view.values.items():
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
    """One entry's matched pairs, folded as they come: what its difference and flipped items need."""

    __slots__ = ("better_high", "binary", "counts", "differences", "flip_count", "flips", "ones_and_zeros", "same")

    def __init__(self, better_high: bool) -> None:
        self.better_high = better_high
        self.binary = True  # one 0/1 score a side, every pair: McNemar
        self.ones_and_zeros = True  # every score 0 or 1 (repeats too): items can flip
        self.same = True  # every pair scored alike
        self.counts = [0, 0, 0, 0]  # both, regressed, improved, neither (oriented: higher is better)
        self.differences = array("d")  # head - base of item means (oriented)
        self.flips: list[tuple[str, list[float], list[float]]] = []
        self.flip_count = 0

    def __len__(self) -> int:
        return len(self.differences)

    def add(self, item_id: str, base: list[float], head: list[float]) -> None:
        better_high = self.better_high

        def orient(value: float) -> float:
            return value if better_high else 1.0 - value

        self.differences.append(orient(_mean(head)) - orient(_mean(base)))
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
                return
            good = 1.0 if better_high else 0.0
            if all(v == good for v in base) != all(v == good for v in head):
                self.flip_count += 1
                if len(self.flips) < FLIPPED_KEPT * 4:
                    self.flips.append((item_id, base, head))

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
        yield ItemView(str(record.get("id")), record.get("data_hash"), item_values(record))


def _pair_items(comparison: Comparison, base: _BaseItems, head_views: Iterable[ItemView],
                pairs: dict[Key, _Pairs]) -> int:
    """Match head's items to the baseline's by id, in head's order, each entry's pairs folded; the
    number of head's ids seen before."""
    seen = bytearray(len(base.hashes))  # the baseline's items head has named
    new_ids: set[str] = set()
    duplicates = 0
    for view in head_views:
        at = base.position.get(view.id)
        if at is None:
            if view.id in new_ids:
                duplicates += 1
            else:
                new_ids.add(view.id)
                comparison.new_items += 1
            continue
        if seen[at]:
            duplicates += 1
            continue
        seen[at] = 1
        old_hash = base.hashes[at]
        if old_hash and view.data_hash and old_hash != view.data_hash:
            comparison.changed_items += 1
            continue
        comparison.matched_items += 1
        for key, found in pairs.items():
            head_values = view.values.get(key)
            if head_values:
                base_values = base.values(at, key)
                if base_values:
                    found.add(view.id, base_values, head_values)
    comparison.missing_items = len(seen) - sum(seen)
    return duplicates


def compare_results(base: Any, head: Any, options: CompareOptions | None = None, *,
                    head_items: list[ItemView] | None = None) -> Comparison:
    """Compare two results (dicts, Results models or EvalResults with items). A results file's items are
    read as a stream: the baseline's kept compactly, head's paired one at a time.

    head_items: the head's item views when its items are not in `head` (a run in progress).
    """
    options = options or CompareOptions()
    options.check()
    base_d, head_d = _as_dict(base), _as_dict(head)
    base_info, head_info = entry_infos(base_d), entry_infos(head_d)
    summary = base_d.get("summary") or {}
    comparison = Comparison(
        baseline={"name": base_d.get("name"), "verdict": base_d.get("verdict"),
                  "created_at": base_d.get("created_at"), "git_sha": base_d.get("git_sha"),
                  "items": summary.get("total_items")},
        options=options,
    )
    base_items = _BaseItems(_views(_records(base, base_d)))
    if not base_items.hashes:
        comparison.warnings.append("the baseline has no item records: nothing can be paired")
    pairs = {key: _Pairs(info.higher_is_better) for key, info in head_info.items()}
    head_views = head_items if head_items is not None else _views(_records(head, head_d))
    duplicates = base_items.duplicates + _pair_items(comparison, base_items, head_views, pairs)
    if duplicates:
        comparison.warnings.append(f"{duplicates} item ids appear more than once: only the first of each is compared")
    if comparison.changed_items:
        comparison.warnings.append(f"{comparison.changed_items} items have the same id but other data (input or "
                                   "expected fields): they are not compared")
    if base_d.get("name") and head_d.get("name") and base_d.get("name") != head_d.get("name"):
        comparison.warnings.append(f"the baseline is another spec ({base_d.get('name')!r})")
    _compare_entries(comparison, base_info, head_info, pairs, (_judge(base_d), _judge(head_d)))
    comparison.flipped.sort(key=lambda f: (f["direction"] != "pass->fail", f["entry"], f["item"]))
    comparison.flipped = comparison.flipped[:FLIPPED_KEPT]
    return comparison


def _compare_entries(comparison: Comparison, base_info: dict[Key, EntryInfo], head_info: dict[Key, EntryInfo],
                     pairs: dict[Key, _Pairs], judges: tuple[Mapping[str, Any], Mapping[str, Any]]) -> None:
    """Each of head's entries against the baseline's: its difference, status and flipped items."""
    options = comparison.options
    tested: list[tuple[EntryComparison, stats.Difference, bool]] = []
    for key, info in head_info.items():
        turn, kind, entry_id = key
        label = "gate" if kind == "gate" else "threshold" if info.gating else "tracked"
        old = base_info.get(key)
        entry = EntryComparison(entry_id, turn, label, old.average if old else None, info.average,
                                max_drop=options.drop_for(entry_id), higher_is_better=info.higher_is_better)
        comparison.entries.append(entry)
        if old is None:
            entry.reason = "not in the baseline"
            continue
        reason = _incomparable(old, info, *judges)
        if reason is not None:
            entry.reason = reason
            continue
        paired = pairs[key]
        entry.pairs = len(paired)
        if not paired:
            entry.reason = "no item was scored on both runs"
            continue
        diff = paired.difference(options.confidence)
        sign = 1.0 if info.higher_is_better else -1.0
        entry.delta = sign * diff.delta
        shown = diff if options.confidence == 0.95 else paired.difference(0.95)
        low, high = shown.ci
        entry.ci95 = (low, high) if sign > 0 else (-high, -low)
        entry.p_value = diff.p_value
        entry.method = diff.method
        entry.p_regression = diff.below(-entry.max_drop)
        tested.append((entry, diff, paired.same))
        _flips(comparison, key, label, paired)
    gone = [key for key in base_info if key not in head_info]
    if gone:
        names = ", ".join(k[2] if k[0] is None else f"turn {k[0]}: {k[2]}" for k in gone[:10])
        comparison.warnings.append(f"{len(gone)} entries of the baseline are not in this run: {names}")
    _decide(tested, options)


def _flips(comparison: Comparison, key: Key, kind: str, paired: _Pairs) -> None:
    """Items whose 0/1 outcome changed (with repeats: whose pass on every trial changed)."""
    if not paired.ones_and_zeros:
        return  # a continuous entry: nothing flips
    turn, _, entry_id = key
    good = 1.0 if paired.better_high else 0.0
    comparison.flipped_count += paired.flip_count
    for item_id, base, head in paired.flips:
        if len(comparison.flipped) >= FLIPPED_KEPT * 4:
            break
        base_pass = all(v == good for v in base)
        comparison.flipped.append({"item": item_id, "entry": entry_id, "turn": turn, "kind": kind,
                                   "base_score": _mean(base), "head_score": _mean(head),
                                   "direction": "pass->fail" if base_pass else "fail->pass"})


def _decide(tested: list[tuple[EntryComparison, stats.Difference, bool]], options: CompareOptions) -> None:
    """Statuses, the regression tests of gating entries (and, apart, of tracked ones) corrected together.

    An entry whose every matched item scored exactly as on the baseline is `unchanged`, whatever its interval
    allows: nothing changed on the items measured.
    """
    alpha = (1.0 - options.confidence) / 2.0  # one-sided: the interval's upper end below -max_drop
    for gating in (True, False):
        group = [(e, d, same) for e, d, same in tested if (e.kind != "tracked") == gating]
        p_values = [e.p_regression if e.p_regression is not None else 1.0 for e, _, _ in group]
        if options.correction == "holm":
            rejected = stats.holm(p_values, alpha)
        elif options.correction == "bonferroni":
            rejected = stats.bonferroni(p_values, alpha)
        else:
            rejected = [p <= alpha for p in p_values]
        for (entry, diff, same), regressed in zip(group, rejected, strict=True):
            if same:
                entry.status = "unchanged"
                continue
            entry.status = stats.status(diff.ci, entry.max_drop, regressed)  # diff.ci: higher is better
            if entry.status == "uncertain" and diff.ci[1] < -entry.max_drop:
                entry.reason = (f"a drop beyond max_drop at {options.confidence:.0%}, but not significant once "
                                f"{options.correction} across {len(group)} entries is applied")


def add_to_results(head: dict[str, Any], comparison: Comparison) -> dict[str, Any]:
    """A results file's JSON with the comparison added: a regression fails a verdict that had not failed
    (`summary.failure_reason: regression`), as `EvalResult.apply_comparison` does for a run in progress."""
    head["comparison"] = comparison.to_dict()
    if comparison.regressions and head.get("verdict") != "failed":
        head["verdict"] = "failed"
        head.setdefault("summary", {})["failure_reason"] = "regression"
    return head


def compare(base: Any, head: Any, **options: Any) -> Comparison:
    """Compare two runs: results file paths, results dicts, `Results` models or `EvalResult`s (with items).

    options: confidence (0.95), max_drop (0.0), entries ({id: max_drop}), correction ("holm").
    """
    from pathlib import Path

    from evalgate.results_model import load_results

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
