"""The Python API: `run_evals` (Mastra's shape) and `run_spec` (what the CLI and the Action call)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalgate import __version__
from evalgate.build import python_cases, python_checks
from evalgate.cases import Case, Check
from evalgate.engine import ItemResult, evaluate
from evalgate.errors import Problem, SpecError
from evalgate.judge.accounting import JudgeRun
from evalgate.loader import LoadedSpec, load_spec
from evalgate.results import ResultsWriter, dumps_item, header
from evalgate.targets import Target, build_target
from evalgate.targets.python import PythonTarget
from evalgate.targets.recorded import RecordedTarget
from evalgate.verdict import Aggregator, GateResult, Outcome, ThresholdResult, TurnResult

OnResult = Callable[[ItemResult], None]
NETWORK_TARGETS = frozenset({"http", "openai"})
KEEP_ERRORED = 20
ERROR_KINDS = 100  # distinct error messages counted for summary.top_error: a bound on memory
ERROR_CHARS = 300


class ErrorTally:
    """The most common item error (target error, else the first scorer error), for "could not evaluate"."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, item: ItemResult) -> None:
        message = item.error or next(iter(item.scorer_errors.values()), None)
        if message is None:
            return
        message = message[:ERROR_CHARS]
        if message in self.counts or len(self.counts) < ERROR_KINDS:
            self.counts[message] = self.counts.get(message, 0) + 1

    def top(self) -> dict[str, Any] | None:
        if not self.counts:
            return None
        message = max(self.counts, key=lambda m: self.counts[m])  # the first seen wins a tie
        return {"message": message, "items": self.counts[message]}


@dataclass
class EvalResult:
    """What a run produced: the outcome (verdict, averages) and, when kept, every item."""

    name: str
    outcome: Outcome
    items: list[ItemResult] = field(default_factory=list)
    errored: list[ItemResult] = field(default_factory=list)
    duration_s: float = 0.0
    interrupted: bool = False
    results_path: Path | None = None
    extra_summary: dict[str, Any] = field(default_factory=dict)  # network stats, resumed items

    @property
    def verdict(self) -> str | None:
        return self.outcome.verdict

    @property
    def gate_results(self) -> list[GateResult]:
        return self.outcome.gate_results

    @property
    def threshold_results(self) -> list[ThresholdResult]:
        return self.outcome.threshold_results

    @property
    def turn_results(self) -> list[TurnResult] | None:
        return self.outcome.turn_results

    @property
    def scores(self) -> dict[str, float]:
        return self.outcome.scores

    @property
    def summary(self) -> dict[str, Any]:
        return self.header()["summary"]

    def header(self) -> dict[str, Any]:
        return header(
            self.name,
            self.outcome,
            {
                "summary": {
                    "duration_s": round(self.duration_s, 3),
                    "interrupted": self.interrupted,
                    **self.extra_summary,
                },
                "evalgate_version": __version__,
            },
        )

    def to_dict(self) -> dict[str, Any]:
        """The results JSON (docs/results.md), items included when they were kept."""
        import json

        out = self.header()
        out["items"] = [json.loads(dumps_item({"index": r.index, **r.to_dict()})) for r in self.items]
        return out


class _Reorder:
    """Feeds results to the aggregator in data order, whatever order they finish in."""

    def __init__(self, sink: Callable[[ItemResult], None]) -> None:
        self.sink = sink
        self.waiting: dict[int, ItemResult] = {}
        self.expected = 0

    def push(self, result: ItemResult) -> None:
        if result.index == self.expected and not self.waiting:
            self.sink(result)
            self.expected += 1
            return
        self.waiting[result.index] = result
        while self.expected in self.waiting:
            self.sink(self.waiting.pop(self.expected))
            self.expected += 1

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
) -> EvalResult:
    """Run every case, journal each as it finishes, aggregate in data order, write the results.

    resume: items already in the journal are taken from it instead of being run again.
    journal: where the journal lives (default `<output>.items.jsonl`); removed once a complete run's
    results are written.

    On Ctrl-C the finished items are still aggregated and written before the interrupt propagates.
    """
    started = time.perf_counter()
    aggregator = Aggregator([c.entry for c in (*gates, *scorers)])
    result = EvalResult(name=name, outcome=aggregator.outcome(max_errors), results_path=output)
    judging = JudgeRun(c.scorer for c in (*gates, *scorers))  # LLM-judge usage for summary.judge
    errors = ErrorTally()

    def take(item: ItemResult) -> None:
        for entry, score in item.contributions:
            aggregator.add(entry, score)
        aggregator.add_item(item.errored, item.turn_count)
        if item.errored:
            errors.add(item)
        if keep_items:
            result.items.append(item)
        if item.errored and len(result.errored) < KEEP_ERRORED:
            result.errored.append(item)

    reorder = _Reorder(take)
    writer = ResultsWriter(output, resume=resume, journal=journal) if output is not None else None
    if resume and writer is not None:
        cases = _skip_finished(cases, writer, gates, scorers, reorder, on_result, result)
    try:
        for item in evaluate(judging.watch(cases), target, gates, scorers, concurrency):
            if writer is not None:
                writer.append(item.record())
            reorder.push(item)
            if on_result is not None:
                on_result(item)
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
        target.close()
        judging.finish(result.extra_summary)
        result.outcome = aggregator.outcome(max_errors)
        top_error = errors.top()
        if top_error is not None:
            result.extra_summary["top_error"] = top_error
        result.duration_s = time.perf_counter() - started
        if writer is not None:
            writer.finish(result.header(), complete=not result.interrupted)
            writer.close()
    return result


def _skip_finished(
    cases: Iterable[Case],
    writer: ResultsWriter,
    gates: list[Check],
    scorers: list[Check],
    reorder: _Reorder,
    on_result: OnResult | None,
    result: EvalResult,
) -> Iterator[Case]:
    from evalgate.resume import finished_records, skip_finished

    records = finished_records(writer.journal_path)
    result.extra_summary["resumed_items"] = 0

    def take(item: ItemResult) -> None:
        result.extra_summary["resumed_items"] += 1
        reorder.push(item)
        if on_result is not None:
            on_result(item)

    return skip_finished(cases, records, gates, scorers, take)


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
        key = "function" if loaded.spec.target.type == "python" else "type"
        line = loaded.positions.line(("target", key))
        raise SpecError([Problem(loaded.file, line, f"target.{key}: {exc}")]) from None


def network_retries(loaded: LoadedSpec) -> Callable[[], int]:
    """Retries so far over the spec's network clients (its target and judge), for progress lines.

    A spec with no network target and no judge reads 0 without loading the HTTP stack.
    """
    if loaded.spec.target.type not in NETWORK_TARGETS and loaded.spec.judge is None:
        return lambda: 0
    from evalgate.net import global_stats

    return lambda: global_stats()["retries"]


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
) -> EvalResult:
    """Load, validate and run a spec file; SpecError (before anything runs) on a bad spec.

    resume: skip items already journaled in `<output>.items.jsonl` (needs `output`).
    use_cache: False bypasses the target's and the judge's response caches (`--no-cache`).
    journal: put the journal here instead of beside `output` (the Action: under RUNNER_TEMP).
    """
    if resume and output is None:
        raise ValueError("resume needs an output path: the journal beside it holds the finished items")
    loaded = load_spec(path, use_cache=use_cache)
    target = prepare_target(loaded, concurrency=concurrency, use_cache=use_cache)
    if on_start is not None:
        on_start(loaded)
    return execute(
        loaded.name,
        loaded.iter_cases(),
        target,
        loaded.gates,
        loaded.scorers,
        concurrency=concurrency or loaded.spec.concurrency,
        max_errors=loaded.spec.max_errors,
        output=Path(output) if output is not None else None,
        keep_items=keep_items,
        on_result=on_result,
        resume=resume,
        journal=Path(journal) if journal is not None else None,
    )


def run_evals(
    *,
    data: Iterable[Any],
    target: Callable[..., Any] | Target | None = None,
    gates: Iterable[Any] = (),
    scorers: Iterable[Any] = (),
    concurrency: int = 4,
    max_errors: int = 0,
    name: str = "evals",
) -> EvalResult:
    """Mastra's runEvals in Python: `target` is a function of (input[, item]); None replays `output`s.

    gates: scorers that must average 1.0; scorers: a scorer, or {"scorer": s, "threshold": t}.
    """
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
        name, cases, adapter, gate_checks, scorer_checks, concurrency=concurrency, max_errors=max_errors
    )
