"""The Python API: `run_evals` (Mastra's shape) and `run_spec` (what the CLI and the Action call)."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from evalgate.decide.verdict import NOT_SCORABLE_RULES, Aggregator, NotScorableRule
from evalgate.errors import Problem, SpecError, display_path
from evalgate.infra import heap, isolation
from evalgate.judge.accounting import JudgeRun
from evalgate.load.build import python_cases, python_checks
from evalgate.load.cases import Case, Check
from evalgate.load.loader import LoadedSpec, load_spec, unpriced_spend
from evalgate.results.lock import lock_path, writing
from evalgate.results.shards import Shard, fingerprints, parse_shard, select
from evalgate.results.writer import EvalResult, ResultsWriter
from evalgate.run.budget import Budget
from evalgate.run.engine import ItemResult, evaluate, input_of, runs_inline
from evalgate.run.listeners import (
    Aggregation,
    BudgetKeeper,
    BudgetSummary,
    Comparison,
    DebugLog,
    Journal,
    JudgeTally,
    Progress,
    ResultsFile,
    ResumeNotes,
    ShardRecorder,
    Spending,
    TargetReport,
    TrialCounts,
)
from evalgate.run.loop import DataOrder, Events, Listener
from evalgate.targets import Target, build_target
from evalgate.targets.python import PythonTarget
from evalgate.targets.recorded import RecordedTarget

OnResult = Callable[[ItemResult], None]
NETWORK_TARGETS = frozenset({"http", "openai"})


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def execute(
    name: str,
    cases: Iterable[Case],
    target: Target,
    gates: list[Check],
    scorers: list[Check],
    *,
    concurrency: int,
    max_errors: int,
    output: Path | None = None,
    keep_items: bool = True,
    on_result: OnResult | None = None,
    resume: bool = False,
    journal: Path | None = None,
    repeats: int | None = None,
    finalize: Callable[[EvalResult], None] | None = None,
    compare_settings: dict[str, Any] | None = None,
    shard: dict[str, Any] | None = None,
    budget: Budget | None = None,
    late_warnings: Callable[[], list[str]] | None = None,
) -> EvalResult:
    """Run every case, journal each as it finishes, aggregate in data order, write the results.

    resume: items already in the journal are taken from it instead of being run again.
    journal: where the journal lives (default `<output>.items.jsonl`); removed once a complete run's
    results are written.
    repeats: run every case that many times as independent trials (averages over every trial).
    finalize: called with the finished result before the results file is written (the comparison
    with a baseline); not after an interruption.
    shard: the run is one shard (`index`, `count`, fingerprints): the results record what the merge needs.
    budget: once the spend reaches it, no new item starts; the rest are errored as `budget exceeded`.
    late_warnings: warnings known once every case was read (a streamed data set's), for `summary.warnings`.

    On Ctrl-C the finished items are still aggregated and written before the interrupt propagates.
    """
    run = RunSetup(name, target, gates, scorers, max_errors=max_errors, repeats=repeats,
                   compare_settings=compare_settings, output=output)
    try:
        checks = {kind: {c.entry.id: c.entry.params_hash for c in group if c.entry.params_hash}
                  for kind, group in (("gates", gates), ("scorers", scorers))}
        writer = ResultsWriter(output, resume=resume, journal=journal, checks=checks) if output is not None else None
    except BaseException:
        target.close()  # nothing ran: release what the target holds (a served agent, a pool)
        raise
    loop = RunLoop(run, writer, concurrency=concurrency, keep_items=keep_items, on_result=on_result, resume=resume,
                   finalize=finalize, shard=shard, budget=budget, late_warnings=late_warnings)
    return loop.run(cases)


class RunSetup:
    """What every run has: its result, the aggregator of its scores, the tally of its judges."""

    def __init__(self, name: str, target: Target, gates: list[Check], scorers: list[Check], *, max_errors: int,
                 repeats: int | None, compare_settings: dict[str, Any] | None, output: Path | None) -> None:
        self.started = time.perf_counter()
        self.target, self.gates, self.scorers = target, gates, scorers
        self.max_errors, self.repeats = max_errors, repeats
        self.aggregator = Aggregator([c.entry for c in (*gates, *scorers)], clustered=repeats is not None)
        self.result = EvalResult(name=name, outcome=self.aggregator.outcome(max_errors), results_path=output,
                                 created_at=_now(), git_sha=os.environ.get("GITHUB_SHA") or None,
                                 compare_settings=compare_settings)
        self.judging = JudgeRun(c.scorer for c in (*gates, *scorers))  # LLM-judge usage for summary.judge


class RunLoop:
    """Schedules the cases (resumed, gated by the budget, run by the engine) and emits the run's events
    to its listeners (`evalgate/run/loop.py`, `evalgate/run/listeners.py`)."""

    def __init__(self, run: RunSetup, writer: ResultsWriter | None, *, concurrency: int, keep_items: bool,
                 on_result: OnResult | None, resume: bool, finalize: Callable[[EvalResult], None] | None,
                 shard: dict[str, Any] | None, budget: Budget | None,
                 late_warnings: Callable[[], list[str]] | None) -> None:
        self.setup, self.concurrency, self.resume, self.budget = run, concurrency, resume, budget
        self.on_result = on_result
        self.completed = False
        self.from_journal: set[int] = set()  # items resumed as journaled: this run's judges made none of their calls
        # A shard without repeats records its scores as columns too: the merge adds them without reading items.
        columns = shard is not None and run.repeats is None
        self.journal = Journal(writer, resume=resume)
        # Inline, results come in data order: the reorder buffer is needed only when they may not.
        self.order = DataOrder(not resume and runs_inline(run.target, run.gates, run.scorers, concurrency,
                                                          run.repeats))
        self.notes = ResumeNotes()
        if budget is not None:
            budget.judging = run.judging
        # As items finish: the journal, then the data order (and so the aggregation), then the caller, then
        # the budget. At the end, the summary in the order its keys are written, the results file last.
        listeners: list[Listener] = [self.journal, self.order]
        listeners += [Progress(on_result)] if on_result is not None else []
        listeners += [BudgetKeeper(budget)] if budget is not None else []
        listeners += [TargetReport(run.target, late_warnings, budget), JudgeTally(run.judging)]
        listeners += [TrialCounts(run.repeats)] if run.repeats is not None else []
        listeners += [Aggregation(run.aggregator, run.result, max_errors=run.max_errors, keep_items=keep_items),
                      Spending(run.judging, self.from_journal)]
        listeners += [BudgetSummary(budget)] if budget is not None else []
        listeners += [ShardRecorder(shard, run.aggregator, columns=columns,
                                    journaled=lambda: self.journal.writer is not None)] if shard is not None else []
        listeners.append(self.notes)
        listeners += [Comparison(finalize, lambda: self.completed)] if finalize is not None else []
        listeners += [DebugLog()] if DebugLog.wanted() else []
        listeners.append(ResultsFile(self.journal, items_digest=columns))
        self.events = Events(listeners)
        self.order.emit = self.events.item_in_order

    def run(self, cases: Iterable[Case]) -> EvalResult:
        setup, events, result = self.setup, self.events, self.setup.result
        cases = events.drawn(cases)
        writer = self.journal.writer
        if self.resume and writer is not None:
            cases, self.notes.changes = _skip_finished(cases, writer, setup.gates, setup.scorers, self.order,
                                                       self.on_result, result, setup.repeats, self.budget,
                                                       self.from_journal)
        if self.budget is not None:
            cases = self.budget.gate(cases, self._skip)
        try:
            trial = events.trial_finished if events.trial else None
            # a budget's cap is checked as each case is drawn: then none is drawn before a worker is free
            for item in evaluate(setup.judging.watch(cases), setup.target, setup.gates, setup.scorers,
                                 self.concurrency, setup.repeats, trial, draw_ahead=self.budget is None):
                events.item_finished(item)
            self.completed = True
        except SpecError:
            self.journal.discard()  # a streamed data set had a bad item: no results for an invalid spec
            raise
        except BaseException:
            result.interrupted = True
            raise
        finally:
            self.order.drain()
            result.duration_s = time.perf_counter() - setup.started
            events.run_finished(result)
        return result

    def _skip(self, case: Case, reason: str) -> None:
        """A case the budget kept from starting: an errored item, finished as any other."""
        item = ItemResult(index=case.index, id=case.id, input=input_of(case), error=reason, case=case)
        if case.item.turns is not None:
            item.turn_count = len(case.item.turns)
        self.events.item_finished(item)


def _skip_finished(
    cases: Iterable[Case],
    writer: ResultsWriter,
    gates: list[Check],
    scorers: list[Check],
    reorder: DataOrder,
    on_result: OnResult | None,
    result: EvalResult,
    repeats: int | None = None,
    budget: Budget | None = None,
    from_journal: set[int] | None = None,
) -> tuple[Iterator[Case], Any]:
    """from_journal: gets the index of each item taken as the journal holds it (not scored again)."""
    from evalgate.run.engine import evaluate_case
    from evalgate.run.resume import Changes, skip_finished

    records = writer.journaled()  # read from the journal as each case asks: a million are never held
    result.extra_summary["resumed_items"] = 0
    changes = Changes(records)
    changes.unreadable_lines = writer.unreadable_lines
    _changed_checks(changes, writer, gates, scorers)

    def take(item: ItemResult, rescored: bool = False) -> None:
        result.extra_summary["resumed_items"] += 1
        if budget is not None:  # the journal's spend counts: the cap holds across an interruption
            # a rescored item's judge calls were made now: the judges' tallies have them already
            if rescored:
                budget.add(item)
            else:
                budget.add_resumed(item)
        if from_journal is not None and not rescored:
            from_journal.add(item.index)
        reorder.push(item)
        if on_result is not None:
            on_result(item)

    def rescore(case: Case, runs: list[Any]) -> None:
        # Checks added since the journal: score the recorded runs, the target is not asked again.
        case.recorded = runs
        item = evaluate_case(case, RecordedTarget(), gates, scorers)
        writer.append(item.record())
        take(item, rescored=True)

    return skip_finished(cases, records, gates, scorers, take, repeats, rescore, changes), changes


def _changed_checks(changes: Any, writer: ResultsWriter, gates: list[Check], scorers: list[Check]) -> None:
    """Into `changes`: the checks whose journaled scores are stale. A check whose parameters changed since
    the journal (same id, other `value`); one that moved between `gates` and `scorers` under its id (a
    gate's score read as a scorer's, or the other way, would be the wrong kind: a raising gate scored 0
    where a scorer errors; a gate has no threshold)."""
    journaled = writer.checks
    if journaled is None:
        return
    kinds = journaled.kinds
    if kinds is None:  # an earlier evalgate's journal: hashes by id only
        changes.changed_checks = {c.entry.id for c in (*gates, *scorers) if c.entry.id in journaled.hashes
                                  and journaled.hashes[c.entry.id] != c.entry.params_hash}
        return
    ids = {"gates": {c.entry.id for c in gates}, "scorers": {c.entry.id for c in scorers}}
    for kind, other, group in (("gates", "scorers", gates), ("scorers", "gates", scorers)):
        for check in group:
            key = check.entry.id
            if key in kinds[kind]:
                if kinds[kind][key] != check.entry.params_hash:
                    changes.changed_checks.add(key)
            elif key in kinds[other]:
                if key in ids[other]:  # new beside the other kind's entry of its id: that one's scores are not its
                    changes.added_beside.add(key)
                else:
                    changes.moved_checks[key] = f"from `{other}` to `{kind}`"


def prepare_target(loaded: LoadedSpec, *, concurrency: int | None = None, use_cache: bool = True) -> Target:
    """The spec's target, or a SpecError pointing at `target:`."""
    try:
        return build_target(
            loaded.spec.target,
            loaded.base_dir,
            concurrency=concurrency or loaded.spec.concurrency,
            use_cache=use_cache,
        )
    except ValueError as exc:
        message = str(exc)
        # a message that starts with the setting at fault (`tls.ca_bundle x: ...`, `conversation: ...`) is
        # said at that setting's line, not at `type:`, which is not what to change
        named = _TARGET_KEY.match(message)
        path = ("target", *named.group(1).split(".")) if named else ()
        if named and path in loaded.positions.values:
            raise SpecError([Problem(loaded.file, loaded.positions.line(path), f"target.{message}")]) from None
        key = "function" if loaded.spec.target.type == "python" else "type"
        line = loaded.positions.line(("target", key))
        raise SpecError([Problem(loaded.file, line, f"target.{key}: {message}")]) from None


_TARGET_KEY = re.compile(r"([a-z_]+(?:\.[a-z_]+)*)[: ]")


def network_retries(loaded: LoadedSpec) -> Callable[[], int]:
    """Retries so far over the spec's network clients (its target and judge), for progress lines.

    A spec with no network target and no judge reads 0 without loading the HTTP stack.
    """
    if loaded.spec.target.type not in NETWORK_TARGETS and loaded.spec.judge is None:
        return lambda: 0
    from evalgate.infra.net import global_stats

    return lambda: global_stats()["retries"]


def real_path(path: Path) -> Path:
    """The path with its symlinks followed; as it is (made absolute) where they loop, as reading it will say."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # a symlink loop: RuntimeError before Python 3.13, OSError after
        return path.absolute()


def refuse_clobber(loaded: LoadedSpec, path: Path, flag: str) -> None:
    """A SpecError when writing `path` (or the journal beside it) would overwrite the spec or its data."""
    from evalgate.results.writer import journal_path

    mine = {real_path(loaded.path): "the spec file"}
    if isinstance(loaded.spec.data, str):
        mine[real_path(loaded.base_dir / loaded.spec.data)] = "the data file"
    written = [path, journal_path(path), path.with_name(path.name + ".tmp"), lock_path(path)] \
        if flag == "--output" else [path]
    for candidate in written:
        what = mine.get(real_path(candidate))
        if what is not None:
            raise SpecError([Problem(loaded.file, None, f"{flag} {path} would overwrite {what} "
                                     f"({candidate}); write the results somewhere else")])


def run_spec(
    path: str | Path,
    *,
    output: str | Path | None = None,
    concurrency: int | None = None,
    keep_items: bool = False,
    on_start: Callable[[LoadedSpec], None] | None = None,
    on_result: OnResult | None = None,
    resume: bool = False,
    use_cache: bool = True,
    journal: str | Path | None = None,
    repeats: int | None = None,
    baseline: Any = None,
    shard: Shard | str | None = None,
    max_cost: float | None = None,
) -> EvalResult:
    """Load, validate and run a spec file; SpecError (before anything runs) on a bad spec.

    resume: skip items already journaled in `<output>.items.jsonl` (needs `output`).
    output: while another process writes it (a run, a merge), WriterBusy (an OSError) before anything runs.
    use_cache: False bypasses the target's and the judge's response caches (`--no-cache`).
    journal: put the journal here instead of beside `output` (the Action: under RUNNER_TEMP).
    repeats: trials per item, overriding the spec's `repeats`.
    baseline: a results file (path) or results to compare with, as the spec's `compare:` says; a regressed
    gate or threshold fails the verdict (`summary.failure_reason: "regression"`). BaselineError when the
    file cannot be read, before anything runs.
    shard: run only the items of shard I of N (`"2/4"` or a Shard); `evalgate merge` joins the shards' results.
    max_cost: a USD cap for this run (`--max-cost`), instead of the spec's `budget.max_usd`; a shard takes 1/N.
    """
    if isinstance(shard, str):
        shard = parse_shard(shard)
    if resume and output is None:
        raise ValueError("resume needs an output path: the journal beside it holds the finished items")
    # Absolute before any user code runs: a python target that changes the working directory (an agent
    # at work in its own folder) sent the results there, or nowhere (exit 2, every finished item lost).
    output_at = Path(output).absolute() if output is not None else None
    journal_at = Path(journal).absolute() if journal is not None else None
    loaded = load_spec(path, use_cache=use_cache)
    if max_cost is not None:
        unpriced = unpriced_spend(loaded.spec, "--max-cost")
        if unpriced:
            raise SpecError([Problem(display_path(loaded.path), None, message) for message in unpriced])
    base = load_baseline(baseline) if baseline is not None else None
    compare_settings = loaded.spec.compare.model_dump() if loaded.spec.compare is not None else None
    finalize = None
    if base is not None:
        from evalgate.decide.comparison import CompareOptions, compare_results, item_views

        views: list[tuple[int, Any]] = []
        user_on_result = on_result

        def on_result(item: ItemResult) -> None:
            views.extend((item.index, view) for view in item_views([item.to_dict()]))
            if user_on_result is not None:
                user_on_result(item)

        def finalize(result: EvalResult) -> None:
            options = CompareOptions.from_settings(compare_settings)
            # items finish in any order; paired in data order, the sums (and so every figure) are the same each run
            in_order = [view for _, view in sorted(views, key=lambda pair: pair[0])]
            result.apply_comparison(compare_results(base, result.header(), options, head_items=in_order))
    isolation.register_spec_secrets(loaded.spec)
    isolation.pass_env(loaded.spec.pass_env)
    if output is not None:
        refuse_clobber(loaded, Path(output), "--output")
    # One writer per results file, from before the target starts to after the results are written: a second
    # run (or a --resume) on the same --output is refused here, before anything of it runs (WriterBusy).
    with writing(Path(output)) if output is not None else contextlib.nullcontext():
        return _run_loaded(loaded, output_at, journal_at, concurrency=concurrency, keep_items=keep_items,
                           on_start=on_start, on_result=on_result, resume=resume, use_cache=use_cache,
                           repeats=repeats, shard=shard, max_cost=max_cost, finalize=finalize,
                           compare_settings=compare_settings)


def _run_loaded(loaded: LoadedSpec, output_at: Path | None, journal_at: Path | None, *, concurrency: int | None,
                keep_items: bool, on_start: Callable[[LoadedSpec], None] | None, on_result: OnResult | None,
                resume: bool, use_cache: bool, repeats: int | None, shard: Shard | None, max_cost: float | None,
                finalize: Callable[[EvalResult], None] | None,
                compare_settings: dict[str, Any] | None) -> EvalResult:
    target = prepare_target(loaded, concurrency=concurrency, use_cache=use_cache)
    if on_start is not None:
        on_start(loaded)
    heap.keep_startup_heap()  # in a command's process: what lives to the end is no longer the collector's to walk
    cases = loaded.iter_cases()
    shard_info = None
    if shard is not None:
        spec_hash, data_hash = fingerprints(loaded)
        shard_info = {"index": shard.index, "count": shard.count, "spec_sha256": spec_hash, "data_sha256": data_hash}
        if loaded.stream is not None:  # a big recorded set: skip the other shards' items before validating them
            loaded.stream.keep = shard.holds
        else:
            cases = select(cases, shard)
    return execute(
        loaded.name,
        cases,
        target,
        loaded.gates,
        loaded.scorers,
        concurrency=concurrency or loaded.spec.concurrency,
        max_errors=loaded.spec.max_errors,
        output=output_at,
        keep_items=keep_items,
        on_result=on_result,
        resume=resume,
        journal=journal_at,
        repeats=repeats or loaded.spec.repeats,
        finalize=finalize,
        compare_settings=compare_settings,
        shard=shard_info,
        budget=Budget.of(loaded.spec.budget, max_cost, shard, agent=loaded.spec.target.type != "recorded"),
        late_warnings=lambda: [str(w) for w in loaded.late_warnings],
    )


class BaselineError(ValueError):
    """The baseline results cannot be read."""


def load_baseline(baseline: Any) -> Any:
    """A baseline given as a path is read now, so a bad one stops the run before it starts."""
    if not isinstance(baseline, str | Path):
        return baseline
    from pydantic import ValidationError as PydanticError

    from evalgate.results.model import load_results

    path = Path(baseline)
    try:
        return load_results(path)
    except FileNotFoundError:
        raise BaselineError(f"{path}: no such baseline results file") from None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
    except (PydanticError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BaselineError(f"{path}: not an evalgate results file ({first[:200]})") from None


def run_evals(
    *,
    data: Iterable[Any],
    target: Callable[..., Any] | Target | None = None,
    gates: Iterable[Any] = (),
    scorers: Iterable[Any] = (),
    concurrency: int = 4,
    max_errors: int = 0,
    name: str = "evals",
    repeats: int | None = None,
    not_scorable: NotScorableRule = "leave_out",
) -> EvalResult:
    """Mastra's runEvals in Python: `target` is a function of (input[, item]); None replays `output`s.

    gates: scorers that must average 1.0; scorers: a scorer, or {"scorer": s, "threshold": t}.
    repeats: run every item that many times as independent trials (averages over every trial).
    not_scorable: a gate or threshold whose every result was not scorable is left out of the verdict
    ("leave_out", as Mastra's runEvals) or not met ("fail"); an entry's own "not_scorable" overrides it.
    """
    if repeats is not None and (isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1):
        raise ValueError(f"repeats must be a whole number >= 1, got {repeats!r}")
    if not_scorable not in NOT_SCORABLE_RULES:
        raise ValueError(f"not_scorable must be {' or '.join(map(repr, NOT_SCORABLE_RULES))}, got {not_scorable!r}")
    gate_checks = python_checks(gates, "gate", not_scorable=not_scorable)
    scorer_checks = python_checks(scorers, "scorer", not_scorable=not_scorable)
    if target is None:
        adapter: Target = RecordedTarget()
    elif hasattr(target, "run") and hasattr(target, "concurrent"):
        adapter = target  # type: ignore[assignment]
    else:
        adapter = PythonTarget(target)
    cases = python_cases(data, recorded=target is None, not_scorable=not_scorable)
    if not cases:
        raise ValueError("the data set is empty")
    if not gate_checks and not scorer_checks and not any(any(c.turn_checks or ()) for c in cases):
        raise ValueError("pass at least one gate or scorer (top level or on a turn)")
    return execute(
        name, cases, adapter, gate_checks, scorer_checks, concurrency=concurrency, max_errors=max_errors,
        repeats=repeats,
    )
