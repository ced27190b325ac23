"""The parts of a run that follow the run loop's events (`evalgate/run/loop.py`): each keeps one concern.

`run_finished` is called in the order `api.execute` lists them, which is the order the summary's keys
are written in: network and warnings, the judge tally, the trial counts, the verdict, the cost, the
budget, the shard record, the resume notes, the comparison, then the results file.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from evalgate.decide.verdict import Aggregator, Entry, split_label
from evalgate.judge.accounting import JudgeRun
from evalgate.results.score_columns import Recorder
from evalgate.results.writer import ITEMS_SHA256_PENDING, ErrorTally, EvalResult, ResultsWriter
from evalgate.run.budget import Budget, CostTotals
from evalgate.run.engine import ItemResult
from evalgate.run.loop import Listener
from evalgate.targets import Target

KEEP_ERRORED = 20
log = logging.getLogger(__name__)


def spending(item: ItemResult) -> tuple[ItemResult, ...]:
    """The parts of an item that spent (with repeats its trials, else the item itself), in order: a run
    with a cost or a judge's calls; none for an item without spend (a replayed run)."""
    trials = item.trials
    run = item.run
    if trials is None and not item.judge_cost and (run is None or run.cost_usd is None):
        return ()
    return tuple(part for part in (trials or (item,))
                 if part.judge_cost or (part.run is not None and part.run.cost_usd is not None))


def turn_scorer(item: ItemResult) -> Callable[[int, str], Entry | None]:
    """The item's scorer of an id at a turn (its `turns` checks), for `Aggregator.add_causes`."""
    def find(turn: int, key: str) -> Entry | None:
        checks = item.case.turn_checks if item.case is not None else None
        if checks is None or turn >= len(checks):
            return None
        return next((c.entry for c in checks[turn] if c.entry.kind == "scorer" and c.entry.id == key), None)
    return find


class Journal(Listener):
    """Each finished item appended to the journal as it finishes (`ResultsFile` writes the results).

    resume: the results keep the items this run took (a resumed journal may hold others): `taken`.
    """

    def __init__(self, writer: ResultsWriter | None, *, resume: bool) -> None:
        self.writer = writer
        self.taken: set[int] | None = set() if resume else None

    def item_finished(self, item: ItemResult) -> None:
        if self.writer is not None:
            self.writer.append(item.record())

    def item_in_order(self, item: ItemResult) -> None:
        if self.taken is not None:
            self.taken.add(item.index)

    def discard(self) -> None:
        """No results for an invalid spec (a streamed data set's bad item)."""
        if self.writer is not None:
            self.writer.discard()
            self.writer = None



class ResultsFile(Listener):
    """The results file, written from the journal once the summary is complete (the last listener).

    items_digest: the shard's score columns need the items' digest (a shard without repeats)."""

    def __init__(self, journal: Journal, *, items_digest: bool) -> None:
        self.journal = journal
        self.items_digest = items_digest

    def run_finished(self, result: EvalResult) -> None:
        writer = self.journal.writer
        if writer is not None:
            # Only this run's items: a journal of a longer data set keeps its extra lines out.
            writer.finish(result.header(), complete=not result.interrupted, keep=self.journal.taken,
                          items_digest=self.items_digest)
            writer.close()


class Aggregation(Listener):
    """The scores, in data order, into the aggregator; the errored items; the items kept in memory."""

    def __init__(self, aggregator: Aggregator, result: EvalResult, *, max_errors: int, keep_items: bool) -> None:
        self.aggregator = aggregator
        self.result = result
        self.max_errors = max_errors
        self.keep_items = keep_items
        self.errors = ErrorTally()

    def item_in_order(self, item: ItemResult) -> None:
        aggregator = self.aggregator
        aggregator.add_scores(item.contributions)
        for trial, contributions in enumerate(item.later, 1):  # with repeats: trials 2..K
            for entry, score in contributions:
                aggregator.add(entry, score, trial)
        errored = item.errored
        if errored or item.not_scorable or item.trials is not None:
            for part in item.trials or (item,):
                aggregator.add_causes(part.error is not None, part.scorer_errors, part.not_scorable,
                                      turn_scorer(item))
        aggregator.add_item(errored, item.turn_count, item.id, len(item.trials) if item.trials is not None else None)
        if errored:
            self.errors.add(item)
            if len(self.result.errored) < KEEP_ERRORED:
                self.result.errored.append(item)
        if self.keep_items:
            self.result.items.append(item)

    def run_finished(self, result: EvalResult) -> None:
        result.outcome = self.aggregator.outcome(self.max_errors)
        top_error = self.errors.top()
        if top_error is not None:
            result.extra_summary["top_error"] = top_error


class TrialCounts(Listener):
    """With repeats: the trials run and errored, for the summary."""

    def __init__(self, repeats: int) -> None:
        self.repeats = repeats
        self.counts = {"trials": 0, "errored_trials": 0}

    def item_in_order(self, item: ItemResult) -> None:
        trials = item.trials
        if trials is not None:
            self.counts["trials"] += len(trials)
            self.counts["errored_trials"] += sum(t.errored for t in trials)

    def run_finished(self, result: EvalResult) -> None:
        result.extra_summary.update(repeats=self.repeats, **self.counts)


class Spending(Listener):
    """The agent's and the judges' spend, in data order, for `summary.cost` and `summary.judge.cost_usd`.

    from_journal: items resumed as journaled, whose judge calls this run's judges did not make.
    """

    def __init__(self, judging: JudgeRun, from_journal: set[int]) -> None:
        self.costs = CostTotals()
        self.judging = judging
        self.from_journal = from_journal

    def item_in_order(self, item: ItemResult) -> None:
        for part in spending(item):
            self.costs.add(part.run.cost_usd if part.run is not None else None, part.judge_cost)
            if part.judge_cost and item.index not in self.from_journal:
                self.judging.charged(part.judge_cost)  # summary.judge.cost_usd, in data order

    def run_finished(self, result: EvalResult) -> None:
        if self.costs.items:
            result.extra_summary["cost"] = self.costs.summary()


class JudgeTally(Listener):
    """The judges' calls, tokens and cost, for `summary.judge`."""

    def __init__(self, judging: JudgeRun) -> None:
        self.judging = judging

    def run_finished(self, result: EvalResult) -> None:
        if result.interrupted:  # items cut short were billed too: the tallies hold every call
            self.judging.items_usd = None
        self.judging.finish(result.extra_summary)


class BudgetKeeper(Listener):
    """The spend counted against the budget as items (with repeats, trials) finish; its summary."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    def trial_finished(self, trial: ItemResult) -> None:
        # with repeats, a trial's spend counts as it finishes: its item's other trials may still run
        self.budget.add(trial)

    def item_finished(self, item: ItemResult) -> None:
        if item.trials is None:  # with repeats, each trial counted as it finished
            self.budget.add(item)


class BudgetSummary(Listener):
    """The budget's caps and spend, for `summary.budget`."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    def run_finished(self, result: EvalResult) -> None:
        result.extra_summary["budget"] = self.budget.summary()


class Progress(Listener):
    """The caller's callback for each item as it finishes (the CLI's progress, the Action's log)."""

    def __init__(self, on_result: Callable[[ItemResult], None]) -> None:
        self.on_result = on_result

    def item_finished(self, item: ItemResult) -> None:
        self.on_result(item)


class TargetReport(Listener):
    """The target's network counters and every warning known by the end; the target closed."""

    def __init__(self, target: Target, late_warnings: Callable[[], list[str]] | None, budget: Budget | None) -> None:
        self.target = target
        self.late_warnings = late_warnings
        self.budget = budget

    def run_finished(self, result: EvalResult) -> None:
        stats = getattr(self.target, "stats", None)
        if stats is not None:
            result.extra_summary["network"] = stats()
        warnings = getattr(self.target, "warnings", None)
        said = [*(warnings() if warnings is not None else ()), *(self.late_warnings() if self.late_warnings else ()),
                *(self.budget.warnings() if self.budget is not None else ())]
        if said:
            result.extra_summary["warnings"] = said
        self.target.close()


class ShardRecorder(Listener):
    """What `merge` needs of a shard: where each per-turn entry was first seen, and (without repeats) the
    scores as columns, so the merge adds them without reading every item."""

    def __init__(self, shard: dict[str, Any], aggregator: Aggregator, *, columns: bool,
                 journaled: Callable[[], bool]) -> None:
        self.shard = shard
        self.aggregator = aggregator
        self.first_seen: dict[Any, tuple[Entry, int, int]] = {}
        self.not_scorable_why: dict[Any, tuple[int, str]] = {}  # by entry key: (item index, reason), first given
        self.replay = Recorder() if columns else None
        self.journaled = journaled

    def item_in_order(self, item: ItemResult) -> None:
        first_seen = self.first_seen
        # the aggregator meets an item's later trials after its first: their positions follow on
        offset = 0
        for contributions in (item.contributions, *item.later):
            for position, (entry, _) in enumerate(contributions, offset):
                if entry.turn is not None and entry.key not in first_seen:
                    first_seen[entry.key] = (entry, item.index, position)
            offset += len(contributions)
        if item.errored or item.not_scorable or item.trials is not None:
            self._unscored_causes(item, offset)
        if self.replay is not None:
            self.replay.add(item.index, item.id, item.contributions, item.errored or bool(spending(item)))

    def _unscored_causes(self, item: ItemResult, offset: int) -> None:
        """A per-turn scorer met only erroring is an entry of the shard too; the first not scorable reason
        of each entry is kept, so the merge says why an entry has no score as one run does."""
        find = turn_scorer(item)
        for part in item.trials or (item,):
            for label in part.scorer_errors:
                turn, key = split_label(label)
                entry = find(turn, key) if turn is not None else None
                if entry is not None and entry.key not in self.first_seen:
                    self.first_seen[entry.key] = (entry, item.index, offset)
                    offset += 1
            for label, reason in part.not_scorable.items():
                turn, key = split_label(label)
                for kind in ("gate", "scorer"):
                    self.not_scorable_why.setdefault((turn, kind, key), (item.index, reason))

    def run_finished(self, result: EvalResult) -> None:
        from evalgate.results.shards import entry_record

        replay = self.replay if self.journaled() else None
        top = [e for e in self.aggregator.entries.values() if e.turn is None]
        entries = [entry_record(e, None) for e in top] + [
            entry_record(e, (index, position)) for e, index, position in self.first_seen.values()]
        for entry in entries:
            why = self.not_scorable_why.get((entry["turn"], entry["kind"], entry["id"]))
            if why is not None:
                entry["not_scorable_why"] = list(why)
        record = {**self.shard, "turn_count": self.aggregator.turn_count, "entries": entries}
        columns = replay.record([e.key for e in top] + list(self.first_seen)) if replay is not None else None
        if columns is not None:  # the writer puts the items' digest in: the merge uses the columns for those items only
            record["replay"] = {**columns, "items_sha256": ITEMS_SHA256_PENDING}
        result.extra["shard"] = record


class ResumeNotes(Listener):
    """What changed since the journal a `--resume` read (checks changed, moved, added), for the notes."""

    def __init__(self) -> None:
        self.changes: Any = None  # resume.Changes, once a --resume read its journal

    def run_finished(self, result: EvalResult) -> None:
        if self.changes is not None:
            result.notes += self.changes.notes()


class Comparison(Listener):
    """The comparison with a baseline, once a run completed: a failure of it is recorded, never raised."""

    def __init__(self, finalize: Callable[[EvalResult], None], completed: Callable[[], bool]) -> None:
        self.finalize = finalize
        self.completed = completed

    def run_finished(self, result: EvalResult) -> None:
        if not self.completed():
            return
        try:
            self.finalize(result)
        except Exception as exc:  # the run's own results are written whatever the comparison does
            result.extra_summary["comparison_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"


class DebugLog(Listener):
    """The debug log's lines: each item's time, the run's (a listener only while debug is on)."""

    @staticmethod
    def wanted() -> bool:
        return log.isEnabledFor(logging.DEBUG)

    def item_finished(self, item: ItemResult) -> None:
        log.debug("item %s finished in %.1f ms%s", item.id, item.duration_ms or 0.0,
                  f" (error: {item.error})" if item.error else "")

    def run_finished(self, result: EvalResult) -> None:
        log.debug("run finished in %.3f s: %d items, verdict %s", result.duration_s or 0.0,
                  result.outcome.total_items, result.outcome.verdict)
