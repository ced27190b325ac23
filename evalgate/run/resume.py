"""`--resume`: items already in `<output>.items.jsonl` are not run again.

Each journal record is turned back into an `ItemResult` whose contributions are rebuilt from
its recorded gates, scores, not-scorable results and scorer errors, so the aggregator sees
every item exactly once, whether it ran now or in the killed run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from evalgate.load.cases import Case, Check
from evalgate.replies import Run, RunFormatError, run_from_value
from evalgate.results.model import journal_record_fits
from evalgate.results.writer import read_journal
from evalgate.run.budget import BUDGET_EXCEEDED, token_count
from evalgate.run.engine import (
    Contribution,
    ItemResult,
    TurnScores,
    data_hash,
    merge_trials,
    turn_params_hash,
)

NAN = float("nan")


class Journaled(Protocol):
    """The finished items by data index: a mapping, or the journal read as each is asked for
    (`ResultsWriter.journaled`)."""

    def __len__(self) -> int: ...

    def get(self, index: int, default: Any = None) -> Any: ...


def finished_records(journal: Path) -> dict[int, dict[str, Any]]:
    """The finished items of a journal by data index (a later line for the same index wins)."""
    return {r["index"]: r for r in read_journal(journal) if type(r.get("index")) is int}  # not a bool


class Changes:
    """What differs between the journal and the spec now, said to the user after the run."""

    def __init__(self, records: Journaled) -> None:
        self.journaled = len(records)
        self.matched = 0
        self.changed_ids = 0
        self.rescored: dict[str, int] = {}  # new check id -> items re-scored for it
        self.rerun_for_checks = 0
        self.rerun_for_repeats = 0
        self.dropped_checks: set[str] = set()
        self.last_index = -1
        self.changed_checks: set[str] = set()  # ids whose params hash differs from the journal's
        self.moved_checks: dict[str, str] = {}  # id -> how it moved between `gates` and `scorers`
        self.added_beside: set[str] = set()  # ids new beside a check of the other kind and that id
        self.rescored_changed = 0
        self.rerun_for_data = 0
        self.rerun_unreadable = 0
        self.rerun_budget = 0
        self.changed_turn_checks: set[str] = set()  # `turn-N:id` labels whose params hash differs from the record's
        self.changed_turn_items = 0
        self.moved_turn_checks: set[str] = set()  # `turn-N:id` labels the record scored as the other kind
        self.moved_turn_items = 0
        self.unknown_turn_params = 0  # records of turn items written before per-turn params were recorded
        self.unreadable_lines = 0  # journal lines that are no JSON record: left out

    def notes(self) -> list[str]:
        out = []
        if self.changed_checks:
            shown = ", ".join(f"`{c}`" for c in sorted(self.changed_checks)[:10])
            out.append(f"resume: {shown} changed since the journal (other parameters, the same id); its journaled "
                       "scores were not used: each resumed item was scored again (from its recorded output, or "
                       "run again)")
        if self.moved_checks:
            shown = ", ".join(f"`{c}` {how}" for c, how in sorted(self.moved_checks.items())[:10])
            out.append(f"resume: {shown} moved since the journal (the same id, the other kind); its journaled "
                       "scores were not used: each resumed item was scored again (from its recorded output, or "
                       "run again)")
        if self.changed_turn_checks:
            shown = ", ".join(f"`{c}`" for c in sorted(self.changed_turn_checks)[:10])
            out.append(f"resume: per-turn {shown} changed since the journal (other parameters, the same id) on "
                       f"{self.changed_turn_items} resumed items; their journaled scores were not used: each was "
                       "scored again (from its recorded output, or run again)")
        if self.moved_turn_checks:
            shown = ", ".join(f"`{c}`" for c in sorted(self.moved_turn_checks)[:10])
            out.append(f"resume: per-turn {shown} moved between `gates` and `scorers` since the journal (the same "
                       f"id, the other kind) on {self.moved_turn_items} resumed items; their journaled scores were "
                       "not used: each was scored again (from its recorded output, or run again)")
        if self.unknown_turn_params:
            out.append(f"resume: {self.unknown_turn_params} journaled items with per-turn checks do not record "
                       "those checks' parameters (an earlier evalgate wrote them); their per-turn scores were kept: "
                       "run without --resume if you changed a per-turn check")
        if self.unreadable_lines:
            out.append(f"resume: {self.unreadable_lines} journal lines are no JSON record (edited or damaged?); "
                       "they were left out, and the items they held were run again")
        run_again = (
            (self.changed_ids, "journaled items have a different id at their position now (the data changed)"),
            (self.rerun_for_data, "journaled items hold other data now (their input or what they expect changed)"),
            (self.rerun_unreadable, "journaled items could not be read back (edited?)"),
            (self.rerun_for_repeats, "journaled items ran a different number of trials than `repeats` asks now"),
        )
        out += [f"resume: {count} {what}; they were run again" for count, what in run_again if count]
        if self.rerun_budget:
            out.append(f"resume: {self.rerun_budget} items the budget had stopped were started again, as far as "
                       "the budget allows")
        dropped = self.journaled - self.matched - self.changed_ids
        if dropped > 0:
            out.append(f"resume: {dropped} journaled items are no longer in the data set; they are left out")
        for check_id, count in sorted(self.rescored.items()):
            out.append(f"resume: `{check_id}` is new since the journal; it was scored on {count} resumed items "
                       "from their recorded output")
        if self.rerun_for_checks:
            out.append(f"resume: {self.rerun_for_checks} resumed items were run again to score checks added "
                       "or changed since the journal")
        if self.dropped_checks:
            shown = ", ".join(f"`{c}`" for c in sorted(self.dropped_checks)[:10])
            out.append(f"resume: no longer in the spec, ignored in the verdict: {shown}")
        return out


def skip_finished(
    cases: Iterable[Case],
    records: Journaled,
    gates: list[Check],
    scorers: list[Check],
    take: Callable[[ItemResult], None],
    repeats: int | None = None,
    rescore: Callable[[Case, list[Run]], None] | None = None,
    changes: Changes | None = None,
) -> Iterator[Case]:
    """Yield the cases still to run; hand each already-finished one to `take` as an ItemResult.

    A record whose id does not match the case at that index (the data changed), or whose trials are
    not the `repeats` asked for now, is run again.
    A record scored before a check was added is scored again from its recorded runs (`rescore`),
    or run again when those runs were not recorded per turn (an item with trials: always run again; an
    errored trial holds no scores, so the trials that scored decide).
    """
    reuse = _Reuse(gates, scorers, take, rescore, changes or Changes(records))
    for case in cases:
        record = records.get(case.index)
        if record is None or not _record_fits(record, case, repeats, reuse.changes):
            yield case
        elif not (reuse.trials(record, case) if repeats is not None else reuse.item(record, case)):
            reuse.changes.rerun_for_checks += 1
            yield case


def _record_fits(record: dict[str, Any], case: Case, repeats: int | None, changes: Changes) -> bool:
    """Whether the journal's record is of this case as it is now (its id, data, readable runs, a run the
    budget did not stop, the trials asked for); counted in `changes` under why not."""
    if record.get("id") != case.id:
        changes.changed_ids += 1
        return False
    changes.matched += 1
    if not journal_record_fits(record):  # edited: its scores cannot be trusted
        changes.rerun_unreadable += 1
        return False
    recorded_hash = record.get("data_hash")
    if isinstance(recorded_hash, str) and recorded_hash != data_hash(case):
        changes.rerun_for_data += 1
        return False
    if _budget_stopped(record):
        changes.rerun_budget += 1
        return False
    if not _same_trials(record, repeats):
        changes.rerun_for_repeats += 1
        return False
    return True


class _Reuse:
    """A fitting record taken as the item's result, or rescored from its runs; False: run the item again."""

    def __init__(self, gates: list[Check], scorers: list[Check], take: Callable[[ItemResult], None],
                 rescore: Callable[[Case, list[Run]], None] | None, changes: Changes) -> None:
        self.gates, self.scorers, self.take, self.rescore, self.changes = gates, scorers, take, rescore, changes
        self.stale = changes.changed_checks | set(changes.moved_checks)  # top-level checks the journal scored otherwise
        # A check new beside one of the other kind and its id: the record's entry of that id is not its own
        self.beside = changes.added_beside

    def trials(self, record: dict[str, Any], case: Case) -> bool:
        """An item with trials: taken when no scored trial misses a check (never rescored)."""
        changed_turns, new_turns = _changed_turn_checks(record, case, self.changes)
        trials = record["trials"]
        # An errored trial holds no scores (nothing stale, nothing to compare): the scored ones decide
        missing: set[str] = set()
        for trial in (t for t in trials if t.get("error") is None):
            trial_missing, extra = _check_ids(trial, case, self.gates, self.scorers)
            missing |= trial_missing | self.stale | self.beside | changed_turns | new_turns
            self.changes.dropped_checks |= extra
        if missing:
            return False
        self.take(merge_trials([_trial_from_record(t, record, case, self.gates, self.scorers) for t in trials]))
        return True

    def item(self, record: dict[str, Any], case: Case) -> bool:
        """An item: taken when it misses no check (or errored), else rescored from its recorded runs."""
        changed_turns, new_turns = _changed_turn_checks(record, case, self.changes)
        missing, extra = _check_ids(record, case, self.gates, self.scorers)
        missing |= self.stale | self.beside | changed_turns | new_turns
        self.changes.dropped_checks |= extra
        if not missing or record.get("error") is not None:
            self.take(item_from_record(record, case, self.gates, self.scorers))
            return True
        runs = _recorded_runs(record, case)
        if runs is None or self.rescore is None:
            return False
        for check_id in missing - self.stale - changed_turns:  # a changed or moved check has its own note
            self.changes.rescored[check_id] = self.changes.rescored.get(check_id, 0) + 1
        self.rescore(case, runs)
        return True


def _changed_turn_checks(record: dict[str, Any], case: Case, changes: Changes) -> tuple[set[str], set[str]]:
    """Labels (`turn-N:id`) of the case's per-turn checks whose parameters differ from those the record
    was scored with, or that the record scored as the other kind; counted into `changes`. Then the labels of
    checks new beside one of the other kind and their id at their turn (the record's is not theirs).

    A record without `turn_params_hash` (written before evalgate recorded it) cannot tell: its per-turn
    scores are kept, as before, and a note says so, rather than running every such item again."""
    if case.turn_checks is None or not _scored(record):
        return set(), set()
    moved, new = _other_kind_turn_checks(record, case)
    if moved:
        changes.moved_turn_checks |= moved
        changes.moved_turn_items += 1
    now = turn_params_hash(case)
    recorded = record.get("turn_params_hash")
    if not now:
        return moved, new
    if recorded is None:
        changes.unknown_turn_params += 1
        return moved, new
    # a check the record has no hash for is new (scored as such) or was not hashed then: nothing to compare
    changed = {label for label, params in now.items() if label in recorded and recorded[label] != params}
    if changed:
        changes.changed_turn_checks |= changed
        changes.changed_turn_items += 1
    return changed | moved, new


def _other_kind_turn_checks(record: dict[str, Any], case: Case) -> tuple[set[str], set[str]]:
    """Labels (`turn-N:id`) of the case's per-turn checks the record scored only as the other kind (a gate
    then, a scorer now, or the other way): moved ones, and new ones beside a check of the other kind and
    their id. The turn's `gates`/`scores`, its `not_scorable` by kind and the scorer errors say which kind
    it was; a record that says neither cannot tell."""
    trials = record.get("trials")
    parts = [t for t in trials if t.get("error") is None] if isinstance(trials, list) else [record]
    moved: set[str] = set()
    new: set[str] = set()
    for part in parts:
        turns = part.get("turns")
        if not isinstance(turns, list):
            continue
        errors = part.get("scorer_errors") or {}
        for index, checks in enumerate(case.turn_checks or ()):
            turn = turns[index] if index < len(turns) else None
            if not isinstance(turn, dict):
                continue
            kinds = turn.get("not_scorable") or {}
            gates, scores = turn.get("gates") or {}, turn.get("scores") or {}
            now_gates = {c.entry.id for c in checks if c.entry.kind == "gate"}
            now_scorers = {c.entry.id for c in checks if c.entry.kind != "gate"}
            for check in checks:
                key = check.entry.id
                label = f"turn-{index}:{key}"
                as_gate = key in gates or key in kinds.get("gates", ())
                as_scorer = key in scores or key in kinds.get("scores", ()) or label in errors
                if (as_scorer and not as_gate) if check.entry.kind == "gate" else (as_gate and not as_scorer):
                    (new if key in now_gates and key in now_scorers else moved).add(label)
    return moved, new


def _scored(record: dict[str, Any]) -> bool:
    """Whether the record holds any scores: an errored item holds none; with repeats, each trial's own
    error counts (the item's `error` is its first errored trial's)."""
    trials = record.get("trials")
    if isinstance(trials, list):
        return any(isinstance(t, dict) and t.get("error") is None for t in trials)
    return record.get("error") is None


def _budget_stopped(record: dict[str, Any]) -> bool:
    """An item the budget kept from starting: a resume (perhaps with a higher cap) starts it."""
    records = trials if isinstance(trials := record.get("trials"), list) else [record]
    return any(isinstance(r, dict) and isinstance(r.get("error"), str) and r["error"].startswith(BUDGET_EXCEEDED)
               for r in records)


def _same_trials(record: dict[str, Any], repeats: int | None) -> bool:
    trials = record.get("trials")
    if repeats is None:
        return trials is None
    return isinstance(trials, list) and len(trials) == repeats and all(isinstance(t, dict) for t in trials)


def _trial_from_record(trial: dict[str, Any], record: dict[str, Any], case: Case, gates: list[Check],
                       scorers: list[Check]) -> ItemResult:
    item = item_from_record({**trial, "output": trial.get("run"), "input": record.get("input")}, case, gates, scorers)
    item.trial = trial.get("trial") if isinstance(trial.get("trial"), int) else None
    item.data_hash = record.get("data_hash")
    return item


def _check_ids(
    record: dict[str, Any], case: Case, gates: list[Check], scorers: list[Check]
) -> tuple[set[str], set[str]]:
    """(ids of checks the record was not scored with, ids it has that no check has now)."""
    have: set[str] = set()
    for key in ("gates", "scores", "not_scorable", "scorer_errors", "reasons"):
        value = record.get(key)
        if isinstance(value, dict):
            have |= set(map(str, value))
    turns = record.get("turns")
    for index, turn in enumerate(turns if isinstance(turns, list) else []):
        if isinstance(turn, dict):
            for key in ("gates", "scores", "reasons"):
                value = turn.get(key)
                if isinstance(value, dict):
                    have |= {f"turn-{index}:{k}" for k in value}
    top = {c.entry.id for c in (*gates, *scorers)}
    wanted = set(top)
    for index, checks in enumerate(case.turn_checks or []):
        wanted |= {f"turn-{index}:{c.entry.id}" for c in checks}
    recorded_top = {h for h in have if not h.startswith("turn-")}
    return wanted - have, recorded_top - top


def _recorded_runs(record: dict[str, Any], case: Case) -> list[Run] | None:
    """The runs a journal record holds, one per turn, when it holds them all."""
    item = case.item
    if item.turns is None and item.inputs is None:
        run = _run(record.get("output"), strict=True)
        return [run] if run is not None else None
    turns = record.get("turns")
    if item.turns is not None and isinstance(turns, list) and len(turns) == len(item.turns):
        runs = [_run(t.get("output"), strict=True) if isinstance(t, dict) else None for t in turns]
        return runs if all(r is not None for r in runs) else None  # type: ignore[return-value]
    return None


def item_from_record(record: dict[str, Any], case: Case, gates: list[Check], scorers: list[Check]) -> ItemResult:
    """The ItemResult a journal record came from, contributions included."""
    item = ItemResult(
        index=case.index,
        id=case.id,
        input=record.get("input"),
        run=_run(record.get("output")),
        error=record.get("error"),
        gates=dict(record.get("gates") or {}),
        scores=dict(record.get("scores") or {}),
        reasons=dict(record.get("reasons") or {}),
        not_scorable=dict(record.get("not_scorable") or {}),
        scorer_errors=dict(record.get("scorer_errors") or {}),
        reasons_by_kind={k: dict(v) for k, v in (record.get("reasons_by_kind") or {}).items()},
        duration_ms=float(record.get("duration_ms") or 0.0),
        _data_hash=record.get("data_hash"),
        judge_cost=dict(record.get("judge_cost_usd") or {}),
        judge_tokens=token_count(record.get("judge_tokens")),  # an edited journal's "lots" or -5: none
    )
    if case.item.turns is not None:
        item.turn_count = len(case.item.turns)
    if item.error is not None:
        return item  # an errored target: no scores, no contributions
    item.contributions = contributions(item, gates, scorers, "")
    turns = record.get("turns")
    if case.turn_checks is not None and isinstance(turns, list):
        item.turns = []
        for index, checks in enumerate(case.turn_checks):
            turn = turns[index] if index < len(turns) and isinstance(turns[index], dict) else {}
            scores = TurnScores(index, turn.get("input"), _run(turn.get("output")) or Run(),
                                dict(turn.get("gates") or {}), dict(turn.get("scores") or {}),
                                dict(turn.get("reasons") or {}),
                                {k: list(v) for k, v in (turn.get("not_scorable") or {}).items()},
                                {k: dict(v) for k, v in (turn.get("reasons_by_kind") or {}).items()})
            item.turns.append(scores)
            turn_gates = [c for c in checks if c.entry.kind == "gate"]
            turn_scorers = [c for c in checks if c.entry.kind != "gate"]
            view = ItemResult(index=0, id="", input=None, gates=scores.gates, scores=scores.scores,
                              scorer_errors=item.scorer_errors)
            item.contributions += contributions(view, turn_gates, turn_scorers, f"turn-{index}:")
    return item


def contributions(item: ItemResult, gates: list[Check], scorers: list[Check], label: str) -> list[Contribution]:
    """What each check gave the aggregator for this item, as the engine's `_score` decided it.

    A gate always contributes (a raising gate scored 0); absent from `gates` means not scorable.
    A scorer contributes its score, nothing if it errored, else None (not scorable).
    A null score in the journal was a NaN (strict JSON has none).
    """
    out: list[Contribution] = []
    for check in gates:
        key = check.entry.id
        out.append((check.entry, _number(item.gates[key]) if key in item.gates else None))
    for check in scorers:
        key = check.entry.id
        if key in item.scores:
            out.append((check.entry, _number(item.scores[key])))
        elif f"{label}{key}" not in item.scorer_errors:
            out.append((check.entry, None))
    return out


def _number(value: Any) -> float:
    return NAN if value is None else float(value)


def _run(value: Any, strict: bool = False) -> Run | None:
    """The recorded run; one that is no run (an edited record) is an empty one, or None when `strict`:
    scored again, an empty run would give every check a number it never gave the real one."""
    if value is None:
        return None
    try:
        return run_from_value(value)
    except RunFormatError:
        return None if strict else Run()
