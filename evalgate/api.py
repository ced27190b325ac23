"""The Python API: `run_evals` (Mastra's shape) and `run_spec` (what the CLI and the Action call)."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from evalgate import isolation
from evalgate.budget import Budget, CostTotals
from evalgate.build import python_cases, python_checks
from evalgate.cases import Case, Check
from evalgate.engine import ItemResult, evaluate, input_of, runs_inline
from evalgate.errors import Problem, SpecError, display_path
from evalgate.judge.accounting import JudgeRun
from evalgate.loader import LoadedSpec, load_spec, unpriced_spend
from evalgate.replay import Recorder
from evalgate.results import ITEMS_SHA256_PENDING, ErrorTally, EvalResult, ResultsWriter
from evalgate.shards import Shard, fingerprints, parse_shard, select
from evalgate.targets import Target, build_target
from evalgate.targets.python import PythonTarget
from evalgate.targets.recorded import RecordedTarget
from evalgate.verdict import Aggregator, Entry
from evalgate.writelock import lock_path, writing

OnResult = Callable[[ItemResult], None]
NETWORK_TARGETS = frozenset({"http", "openai"})
KEEP_ERRORED = 20


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class _Reorder:
    """Feeds results to the aggregator in data order, whatever order they finish in.

    `order` holds the indices of the cases handed out, in data order (a shard's have gaps).
    """

    def __init__(self, sink: Callable[[ItemResult], None]) -> None:
        self.sink = sink
        self.waiting: dict[int, ItemResult] = {}
        self.order: deque[int] = deque()

    def track(self, cases: Iterable[Case]) -> Iterator[Case]:
        order = self.order
        for case in cases:
            order.append(case.index)
            yield case

    def push(self, result: ItemResult) -> None:
        order = self.order
        if not self.waiting and order and order[0] == result.index:
            order.popleft()
            self.sink(result)
            return
        self.waiting[result.index] = result
        while order and order[0] in self.waiting:
            self.sink(self.waiting.pop(order.popleft()))

    def drain(self) -> None:
        for index in sorted(self.waiting):
            self.sink(self.waiting.pop(index))


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
    started = time.perf_counter()
    aggregator = Aggregator([c.entry for c in (*gates, *scorers)], clustered=repeats is not None)
    result = EvalResult(name=name, outcome=aggregator.outcome(max_errors), results_path=output,
                        created_at=_now(), git_sha=os.environ.get("GITHUB_SHA") or None,
                        compare_settings=compare_settings)
    judging = JudgeRun(c.scorer for c in (*gates, *scorers))  # LLM-judge usage for summary.judge
    errors = ErrorTally()
    trial_counts = {"trials": 0, "errored_trials": 0}
    first_seen: dict[Any, tuple[Entry, int, int]] | None = {} if shard is not None else None
    # A shard without repeats records its scores as columns too: the merge adds them without reading items.
    replay = Recorder() if shard is not None and repeats is None else None
    costs = CostTotals()

    taken: set[int] | None = set() if resume else None  # a resumed journal may hold other items
    from_journal: set[int] = set()  # items resumed as journaled: this run's judges made none of their calls

    def take(item: ItemResult) -> None:
        if first_seen is not None:  # per-turn entries: where each was first seen, for the merge's order
            # the aggregator meets an item's later trials after its first: their positions follow on
            offset = 0
            for contributions in (item.contributions, *item.later):
                for position, (entry, _) in enumerate(contributions, offset):
                    if entry.turn is not None and entry.key not in first_seen:
                        first_seen[entry.key] = (entry, item.index, position)
                offset += len(contributions)
        if taken is not None:
            taken.add(item.index)
        aggregator.add_scores(item.contributions)
        if item.later:  # with repeats: trials 2..K
            for trial, contributions in enumerate(item.later, 1):
                for entry, score in contributions:
                    aggregator.add(entry, score, trial)
        errored = item.errored
        aggregator.add_item(errored, item.turn_count, item.id)
        if errored:
            errors.add(item)
            if len(result.errored) < KEEP_ERRORED:
                result.errored.append(item)
        trials = item.trials
        if trials is not None:
            trial_counts["trials"] += len(trials)
            trial_counts["errored_trials"] += sum(t.errored for t in trials)
        spent = False
        run = item.run
        # with repeats: every trial's spend; else the item's, when it has any (a replayed run has none)
        if trials is not None or item.judge_cost or (run is not None and run.cost_usd is not None):
            for part in trials or (item,):
                if part.judge_cost or (part.run is not None and part.run.cost_usd is not None):
                    costs.add(part.run.cost_usd if part.run is not None else None, part.judge_cost)
                    spent = True
                    if part.judge_cost and item.index not in from_journal:
                        judging.charged(part.judge_cost)  # summary.judge.cost_usd, in data order
        if replay is not None:
            replay.add(item.index, item.id, item.contributions, errored or spent)
        if keep_items:
            result.items.append(item)

    reorder = _Reorder(take)
    # Inline, results come in data order: the reorder buffer is needed only when they may not.
    in_order = not resume and runs_inline(target, gates, scorers, concurrency, repeats)
    if not in_order:
        cases = reorder.track(cases)
    try:
        checks = {kind: {c.entry.id: c.entry.params_hash for c in group if c.entry.params_hash}
                  for kind, group in (("gates", gates), ("scorers", scorers))}
        writer = ResultsWriter(output, resume=resume, journal=journal, checks=checks) if output is not None else None
    except BaseException:
        target.close()  # nothing ran: release what the target holds (a served agent, a pool)
        raise
    changes = None
    if resume and writer is not None:
        cases, changes = _skip_finished(cases, writer, gates, scorers, reorder, on_result, result, repeats, budget,
                                        from_journal)
    completed = False

    def finished(item: ItemResult) -> None:
        if writer is not None:
            writer.append(item.record())
        if in_order:
            take(item)
        else:
            reorder.push(item)
        if on_result is not None:
            on_result(item)
        if budget is not None and item.trials is None:  # with repeats, each trial counted as it finished
            budget.add(item)

    if budget is not None:
        budget.judging = judging

        def skip(case: Case, reason: str) -> None:
            item = ItemResult(index=case.index, id=case.id, input=input_of(case), error=reason, case=case)
            if case.item.turns is not None:
                item.turn_count = len(case.item.turns)
            finished(item)

        cases = budget.gate(cases, skip)
    try:
        # with repeats, a trial's spend counts as it finishes: its item's other trials may still run
        on_trial = budget.add if budget is not None else None
        for item in evaluate(judging.watch(cases), target, gates, scorers, concurrency, repeats, on_trial):
            finished(item)
        completed = True
    except SpecError:
        # A streamed data set had a bad item: no results for an invalid spec.
        if writer is not None:
            writer.discard()
            writer = None
        raise
    except BaseException:
        result.interrupted = True
        raise
    finally:
        reorder.drain()
        stats = getattr(target, "stats", None)
        if stats is not None:
            result.extra_summary["network"] = stats()
        warnings = getattr(target, "warnings", None)
        said = [*(warnings() if warnings is not None else ()), *(late_warnings() if late_warnings else ()),
                *(budget.warnings() if budget is not None else ())]
        if said:
            result.extra_summary["warnings"] = said
        target.close()
        if result.interrupted:  # items cut short were billed too: the tallies hold every call
            judging.items_usd = None
        judging.finish(result.extra_summary)
        if repeats is not None:
            result.extra_summary.update(repeats=repeats, **trial_counts)
        result.outcome = aggregator.outcome(max_errors)
        top_error = errors.top()
        if top_error is not None:
            result.extra_summary["top_error"] = top_error
        result.duration_s = time.perf_counter() - started
        if costs.items:
            result.extra_summary["cost"] = costs.summary()
        if budget is not None:
            result.extra_summary["budget"] = budget.summary()
        if shard is not None and first_seen is not None:
            result.extra["shard"] = _shard_record(shard, aggregator, first_seen, replay if writer else None)
        if changes is not None:
            result.notes += changes.notes()
        if finalize is not None and completed:
            try:
                finalize(result)
            except Exception as exc:  # the run's own results are written whatever the comparison does
                result.extra_summary["comparison_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        if writer is not None:
            # Only this run's items: a journal of a longer data set keeps its extra lines out.
            writer.finish(result.header(), complete=not result.interrupted, keep=taken, items_digest=replay is not None)
            writer.close()
    return result


def _shard_record(shard: dict[str, Any], aggregator: Aggregator, first_seen: dict[Any, tuple[Entry, int, int]],
                  replay: Recorder | None) -> dict[str, Any]:
    from evalgate.shards import entry_record

    top = [e for e in aggregator.entries.values() if e.turn is None]
    record = {**shard, "turn_count": aggregator.turn_count,
              "entries": [entry_record(e, None) for e in top]
              + [entry_record(e, (index, position)) for e, index, position in first_seen.values()]}
    columns = replay.record([e.key for e in top] + list(first_seen)) if replay is not None else None
    if columns is not None:  # the writer puts the items' digest in: the merge uses the columns for those items only
        record["replay"] = {**columns, "items_sha256": ITEMS_SHA256_PENDING}
    return record


def _skip_finished(
    cases: Iterable[Case],
    writer: ResultsWriter,
    gates: list[Check],
    scorers: list[Check],
    reorder: _Reorder,
    on_result: OnResult | None,
    result: EvalResult,
    repeats: int | None = None,
    budget: Budget | None = None,
    from_journal: set[int] | None = None,
) -> tuple[Iterator[Case], Any]:
    """from_journal: gets the index of each item taken as the journal holds it (not scored again)."""
    from evalgate.engine import evaluate_case
    from evalgate.resume import Changes, skip_finished

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
    from evalgate.net import global_stats

    return lambda: global_stats()["retries"]


def real_path(path: Path) -> Path:
    """The path with its symlinks followed; as it is (made absolute) where they loop, as reading it will say."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # a symlink loop: RuntimeError before Python 3.13, OSError after
        return path.absolute()


def refuse_clobber(loaded: LoadedSpec, path: Path, flag: str) -> None:
    """A SpecError when writing `path` (or the journal beside it) would overwrite the spec or its data."""
    from evalgate.results import journal_path

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
        from evalgate.comparison import CompareOptions, compare_results, item_views

        views: list[Any] = []
        user_on_result = on_result

        def on_result(item: ItemResult) -> None:
            views.extend(item_views([item.to_dict()]))
            if user_on_result is not None:
                user_on_result(item)

        def finalize(result: EvalResult) -> None:
            options = CompareOptions.from_settings(compare_settings)
            result.apply_comparison(compare_results(base, result.header(), options, head_items=views))
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

    from evalgate.results_model import load_results

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
) -> EvalResult:
    """Mastra's runEvals in Python: `target` is a function of (input[, item]); None replays `output`s.

    gates: scorers that must average 1.0; scorers: a scorer, or {"scorer": s, "threshold": t}.
    repeats: run every item that many times as independent trials (averages over every trial).
    """
    if repeats is not None and (isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1):
        raise ValueError(f"repeats must be a whole number >= 1, got {repeats!r}")
    gate_checks = python_checks(gates, "gate")
    scorer_checks = python_checks(scorers, "scorer")
    if target is None:
        adapter: Target = RecordedTarget()
    elif hasattr(target, "run") and hasattr(target, "concurrent"):
        adapter = target  # type: ignore[assignment]
    else:
        adapter = PythonTarget(target)  # type: ignore[arg-type]
    cases = python_cases(data, recorded=target is None)
    if not cases:
        raise ValueError("the data set is empty")
    if not gate_checks and not scorer_checks and not any(any(c.turn_checks or ()) for c in cases):
        raise ValueError("pass at least one gate or scorer (top level or on a turn)")
    return execute(
        name, cases, adapter, gate_checks, scorer_checks, concurrency=concurrency, max_errors=max_errors,
        repeats=repeats,
    )
