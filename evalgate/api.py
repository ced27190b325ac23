"""The Python API: `run_evals` (Mastra's shape) and `run_spec` (what the CLI and the Action call)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from evalgate import __version__
from evalgate.build import shape_problem
from evalgate.cases import Case, Check
from evalgate.engine import ItemResult, evaluate
from evalgate.errors import Problem, SpecError
from evalgate.items import Item
from evalgate.judge.accounting import JudgeRun
from evalgate.loader import LoadedSpec, load_spec
from evalgate.results import ResultsWriter, dumps_item, header
from evalgate.runs import RunFormatError, run_from_value
from evalgate.scorers.base import Scorer
from evalgate.scorers.custom import as_scorer
from evalgate.scorers.registry import BuildContext, Threshold, lookup
from evalgate.targets import Target, build_target
from evalgate.targets.python import PythonTarget
from evalgate.targets.recorded import RecordedTarget
from evalgate.verdict import Aggregator, Entry, GateResult, Outcome, ThresholdResult, TurnResult

OnResult = Callable[[ItemResult], None]
NETWORK_TARGETS = frozenset({"http", "openai"})
KEEP_ERRORED = 20


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
        """The results JSON (CONTRACT section 7), items included when they were kept."""
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
) -> EvalResult:
    """Run every case, journal each as it finishes, aggregate in data order, write the results.

    resume: items already in `<output>.items.jsonl` are taken from it instead of being run again.

    On Ctrl-C the finished items are still aggregated and written before the interrupt propagates.
    """
    started = time.perf_counter()
    aggregator = Aggregator([c.entry for c in (*gates, *scorers)])
    result = EvalResult(name=name, outcome=aggregator.outcome(max_errors), results_path=output)
    judging = JudgeRun(c.scorer for c in (*gates, *scorers))  # LLM-judge usage for summary.judge

    def take(item: ItemResult) -> None:
        for entry, score in item.contributions:
            aggregator.add(entry, score)
        aggregator.add_item(item.errored, item.turn_count)
        if keep_items:
            result.items.append(item)
        if item.errored and len(result.errored) < KEEP_ERRORED:
            result.errored.append(item)

    reorder = _Reorder(take)
    writer = ResultsWriter(output, resume=resume) if output is not None else None
    if resume and writer is not None:
        cases = _skip_finished(cases, writer, gates, scorers, reorder, on_result, result)
    try:
        for item in evaluate(judging.watch(cases), target, gates, scorers, concurrency):
            if writer is not None:
                writer.append({"index": item.index, **item.to_dict()})
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
        result.duration_s = time.perf_counter() - started
        if writer is not None:
            writer.finish(result.header())
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
) -> EvalResult:
    """Load, validate and run a spec file; SpecError (before anything runs) on a bad spec.

    resume: skip items already journaled in `<output>.items.jsonl` (needs `output`).
    use_cache: False bypasses the target's and the judge's response caches (`--no-cache`).
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
    )


_threshold = TypeAdapter(Threshold)


def _checks(values: Iterable[Any], kind: str, turn: int | None = None) -> list[Check]:
    checks: list[Check] = []
    seen: set[str] = set()
    for value in values:
        threshold = None
        if isinstance(value, dict) and "type" in value:  # a spec-style entry
            scorer = _spec_entry(value, kind)
            threshold = value.get("threshold")
        elif isinstance(value, dict):
            unknown = value.keys() - {"scorer", "threshold"}
            if unknown or "scorer" not in value:
                raise ValueError(
                    f"a scorer entry is a scorer or {{'scorer': s, 'threshold': t}}, got keys {sorted(value)}"
                )
            if kind == "gate" and value.get("threshold") is not None:
                raise ValueError("gates take no threshold: a gate must average 1.0")
            threshold = value.get("threshold")
            scorer = as_scorer(value["scorer"])
        else:
            scorer = as_scorer(value)
        if scorer.id in seen:
            raise ValueError(f"two {kind}s have the id `{scorer.id}`; pass id=... to one of them")
        seen.add(scorer.id)
        if threshold is not None:
            try:
                parsed = _threshold.validate_python(threshold)
            except ValidationError as exc:
                raise ValueError(f"invalid threshold for `{scorer.id}`: {exc.errors()[0]['msg']}") from None
            threshold = parsed if isinstance(parsed, float) else parsed.model_dump(exclude_none=True)
        checks.append(Check(scorer, Entry(scorer.id, kind, threshold, scorer.higher_is_better, turn)))  # type: ignore[arg-type]
    return checks


def _spec_entry(value: dict[str, Any], kind: str) -> Scorer:
    """A spec-style entry ({"type": "includes", "value": "x"}) built through the registry."""
    scorer_type = lookup(value["type"])
    if scorer_type is None:
        raise ValueError(f"unknown scorer type `{value['type']}`")
    model = scorer_type.model("gate" if kind == "gate" else "scorer").model_validate(value)
    params = model.model_dump(exclude={"type", "id", "threshold"})
    return scorer_type.build(params, id=model.id, ctx=BuildContext())


def _cases(data: Iterable[Any], recorded: bool) -> Iterator[Case]:
    thresholds: dict[tuple[int, str], Any] = {}
    for index, raw in enumerate(data):
        item = Item.model_validate(raw) if not isinstance(raw, Item) else raw
        problem = shape_problem(item)
        if problem is not None:
            raise ValueError(f"item {index + 1}: {problem}")
        case = Case(index=index, item=item)
        if item.turns is not None:
            case.turn_checks = []
            for turn_index, turn in enumerate(item.turns):
                checks = _checks(turn.gates, "gate", turn_index) + _checks(turn.scorers, "scorer", turn_index)
                for check in checks:
                    if check.entry.kind == "scorer":
                        key = (turn_index, check.entry.id)
                        if thresholds.setdefault(key, check.entry.threshold) != check.entry.threshold:
                            raise ValueError(
                                f"turn {turn_index} scorer `{check.entry.id}` has two thresholds; "
                                "entries sharing an id at a turn index share a threshold"
                            )
                case.turn_checks.append(checks)
        if recorded:
            outputs = item.outputs if item.inputs is not None else None
            if item.inputs is not None and len(outputs or ()) != len(item.inputs):
                raise ValueError(
                    f"item {index + 1}: replaying recorded runs needs one output per input ({len(item.inputs)}), "
                    f"got {len(outputs or ())}"
                )
            try:
                if item.turns is not None:
                    case.recorded = [run_from_value(t.output) for t in item.turns]
                elif outputs is not None:
                    case.recorded = [run_from_value(o) for o in outputs]
                else:
                    case.recorded = [run_from_value(item.output)]
            except RunFormatError as exc:
                raise ValueError(f"item {index + 1}: {exc}") from None
        yield case


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
    gate_checks = _checks(gates, "gate")
    scorer_checks = _checks(scorers, "scorer")
    if target is None:
        adapter: Target = RecordedTarget()
    elif hasattr(target, "run") and hasattr(target, "concurrent"):
        adapter = target  # type: ignore[assignment]
    else:
        adapter = PythonTarget(target)  # type: ignore[arg-type]
    cases = list(_cases(data, recorded=target is None))
    if not cases:
        raise ValueError("the data set is empty")
    if not gate_checks and not scorer_checks and not any(any(c.turn_checks or ()) for c in cases):
        raise ValueError("pass at least one gate or scorer (top level or on a turn)")
    return execute(
        name, cases, adapter, gate_checks, scorer_checks, concurrency=concurrency, max_errors=max_errors
    )
