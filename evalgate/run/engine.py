"""Pure orchestration: each case through the target, then its gates, then its scorers.

The target and the checks are passed in; nothing here reads files or the network itself.
Errors are isolated per item (docs/results.md, *Errors are data*): a failing target errors the item, a
raising scorer errors that scorer's result, a raising gate scores 0 with the error as reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from time import perf_counter, sleep
from typing import Any

from evalgate.decide.verdict import Entry
from evalgate.infra.isolation import user_interrupt
from evalgate.infra.textsafe import plain
from evalgate.load.cases import Case, Check
from evalgate.replies import Run, conversation
from evalgate.run.budget import saturated
from evalgate.run.judge_ledger import Ledger, close_ledger, open_ledger
from evalgate.run.user_code import describe_exception
from evalgate.scorers.base import NotScorable, normalize
from evalgate.targets.base import Target, TargetError

Contribution = tuple[Entry, float | None]


@dataclass(slots=True)
class TurnScores:
    index: int
    input: Any
    run: Run
    gates: dict[str, float] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    # The ids not scorable at this turn, by kind ("gates", "scores"): the item's `not_scorable` labels
    # (`turn-N:id`) are one for a gate and a scorer of one id, so `evalgate merge` could not tell them apart.
    not_scorable: dict[str, list[str]] = field(default_factory=dict)
    # A gate and a scorer of one id at this turn share the `reasons` key (it holds the reason given last):
    # each one's reason by kind ("gates", "scores"), only for such ids and only when one gave a reason.
    reasons_by_kind: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {"index": self.index, "input": self.input, "output": self.run.to_dict(),
               "gates": self.gates, "scores": self.scores}
        if self.reasons:
            out["reasons"] = self.reasons
        if self.not_scorable:
            out["not_scorable"] = self.not_scorable
        if self.reasons_by_kind:
            out["reasons_by_kind"] = self.reasons_by_kind
        return out


@dataclass(slots=True)
class ItemResult:
    """One item's run, scores and reasons; `contributions` feed the Aggregator in data order."""

    index: int
    id: str
    input: Any
    run: Run | None = None
    error: str | None = None
    gates: dict[str, float] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    not_scorable: dict[str, str] = field(default_factory=dict)
    scorer_errors: dict[str, str] = field(default_factory=dict)
    # A top-level gate and scorer of one id share the `reasons` key (it holds the scorer's reason, given
    # last): each one's reason by kind ("gates", "scores"), as `TurnScores.reasons_by_kind` for a turn.
    reasons_by_kind: dict[str, dict[str, str]] = field(default_factory=dict)
    turns: list[TurnScores] | None = None
    contributions: list[Contribution] = field(default_factory=list)
    duration_ms: float = 0.0
    turn_count: int = 0  # turns declared by a `turns` item, whether or not it errored
    trial: int | None = None  # with repeats: this result is one trial of the item
    trials: list[ItemResult] | None = None  # with repeats: the item's trials, in order
    later: list[list[Contribution]] = field(default_factory=list)  # trials 2..K's contributions
    case: Case | None = field(default=None, repr=False)  # for `data_hash`, computed when a record is written
    _data_hash: str | None = None
    judge_cost: dict[str, float] = field(default_factory=dict)  # USD of judge calls, by check label
    judge_tokens: int = 0  # tokens of judge calls, for a resumed run's token cap

    def __init__(  # written out: one runs per item, and the generated one costs twice as much
        self,
        index: int,
        id: str,
        input: Any,
        case: Case | None = None,  # before the rest: `evaluate_case` passes these two by position, not by name
        trial: int | None = None,
        run: Run | None = None,
        error: str | None = None,
        gates: dict[str, float] | None = None,
        scores: dict[str, float] | None = None,
        reasons: dict[str, str] | None = None,
        not_scorable: dict[str, str] | None = None,
        scorer_errors: dict[str, str] | None = None,
        reasons_by_kind: dict[str, dict[str, str]] | None = None,
        turns: list[TurnScores] | None = None,
        contributions: list[Contribution] | None = None,
        duration_ms: float = 0.0,
        turn_count: int = 0,
        trials: list[ItemResult] | None = None,
        later: list[list[Contribution]] | None = None,
        _data_hash: str | None = None,
        judge_cost: dict[str, float] | None = None,
        judge_tokens: int = 0,
    ) -> None:
        self.index = index
        self.id = id
        self.input = input
        self.run = run
        self.error = error
        self.gates = {} if gates is None else gates
        self.scores = {} if scores is None else scores
        self.reasons = {} if reasons is None else reasons
        self.not_scorable = {} if not_scorable is None else not_scorable
        self.scorer_errors = {} if scorer_errors is None else scorer_errors
        self.reasons_by_kind = {} if reasons_by_kind is None else reasons_by_kind
        self.turns = turns
        self.contributions = [] if contributions is None else contributions
        self.duration_ms = duration_ms
        self.turn_count = turn_count
        self.trial = trial
        self.trials = trials
        self.later = [] if later is None else later
        self.case = case
        self._data_hash = _data_hash
        self.judge_cost = {} if judge_cost is None else judge_cost
        self.judge_tokens = judge_tokens

    @property
    def data_hash(self) -> str | None:
        if self._data_hash is None and self.case is not None:
            self._data_hash = data_hash(self.case)
        return self._data_hash

    @data_hash.setter
    def data_hash(self, value: str | None) -> None:
        self._data_hash = value

    @property
    def cost_usd(self) -> float | None:
        """What the item cost: its run's reported cost plus its judge calls (with repeats: every trial's);
        None when nothing was priced."""
        if self.trials is not None:
            costs = [c for c in (t.cost_usd for t in self.trials) if c is not None]
            if not costs:
                return None
            total = 0.0
            for usd in costs:
                total += usd
            return saturated(total)
        run_cost = self.run.cost_usd if self.run is not None else None
        if run_cost is None and not self.judge_cost:
            return None
        total = run_cost or 0.0
        for usd in self.judge_cost.values():
            total += usd
        return saturated(total)  # amounts of 1e308 add up to infinity: the record would say null

    @property
    def errored(self) -> bool:
        if self.trials is not None:
            return any(t.errored for t in self.trials)
        return self.error is not None or bool(self.scorer_errors)

    def trial_dict(self) -> dict[str, Any]:
        """One trial's record: `run` is what the target produced (the run format)."""
        out: dict[str, Any] = {
            "trial": self.trial,
            "run": self.run.to_dict() if self.run is not None else None,
            "error": self.error,
            "gates": self.gates,
            "scores": self.scores,
        }
        if self.reasons:
            out["reasons"] = self.reasons
        if self.reasons_by_kind:
            out["reasons_by_kind"] = self.reasons_by_kind
        self._details(out)
        out["duration_ms"] = round(self.duration_ms, 3)
        return out

    def _details(self, out: dict[str, Any]) -> None:
        """What an item's record and a trial's share beyond the scores, each only when there is one."""
        if self.not_scorable:
            out["not_scorable"] = self.not_scorable
        if self.scorer_errors:
            out["scorer_errors"] = self.scorer_errors
        if self.turns is not None:
            out["turns"] = [t.to_dict() for t in self.turns]
        if self.judge_cost:
            out["judge_cost_usd"] = self.judge_cost
        if self.judge_tokens:
            out["judge_tokens"] = self.judge_tokens

    def to_dict(self) -> dict[str, Any]:
        out = self.record()
        del out["index"]
        return out

    def record(self) -> dict[str, Any]:
        """The item as the journal and the results file hold it: `to_dict` led by its data index.

        With repeats the scores on top are the item means of every entry (what its error bar
        clusters), the output and reasons those of its first failing trial, each trial below."""
        run = self.run
        out: dict[str, Any] = {
            "index": self.index,
            "id": self.id,
            "input": self.input,
            "output": run.to_dict() if run is not None else None,
            "error": self.error,
            "gates": self.gates,
            "scores": self.scores,
            "reasons": self.reasons,
        }
        if self.reasons_by_kind:
            out["reasons_by_kind"] = self.reasons_by_kind
        if self.trials is not None:
            out["trials"] = [t.trial_dict() for t in self.trials]
            cost = self.cost_usd
            if cost is not None and any(t.judge_cost for t in self.trials):
                out["cost_usd"] = cost
        elif self.not_scorable or self.scorer_errors or self.turns is not None or self.judge_cost or self.judge_tokens:
            self._details(out)
            if self.judge_cost:
                out["cost_usd"] = self.cost_usd
        out["duration_ms"] = round(self.duration_ms, 3)
        hashed = self._data_hash
        if hashed is None and self.case is not None:
            hashed = self._data_hash = data_hash(self.case)
        if hashed is not None:
            out["data_hash"] = hashed
        if self.case is not None and self.case.turn_checks is not None:
            params = turn_params_hash(self.case)
            if params:
                out["turn_params_hash"] = params
        return out


def _item_means(trials: list[ItemResult], kind: str) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for trial in trials:
        for key, value in (trial.gates if kind == "gate" else trial.scores).items():
            sums.setdefault(key, []).append(value)
    out = {}
    for key, values in sums.items():
        total = 0.0
        for value in values:
            total += value
        out[key] = total / len(values)
    return out


def merge_trials(trials: list[ItemResult]) -> ItemResult:
    """One item's K trial results as one result: contributions kept per trial, top-level scores the item means.

    The item's output and reasons on top are those of its first failing trial (a gate below 1 or an
    error), else of its first: what a reader of a failure needs to see.
    """
    trials = sorted(trials, key=lambda t: t.trial or 0)
    first = trials[0]
    shown = next((t for t in trials if t.error is not None or any(v < 1.0 for v in t.gates.values())), first)
    merged = ItemResult(index=first.index, id=first.id, input=first.input, run=shown.run, error=shown.error,
                        reasons=dict(shown.reasons), reasons_by_kind=dict(shown.reasons_by_kind), trials=trials,
                        case=first.case, _data_hash=first._data_hash)
    merged.gates = _item_means(trials, "gate")
    merged.scores = _item_means(trials, "scorer")
    merged.contributions = first.contributions
    merged.later = [t.contributions for t in trials[1:]]
    merged.duration_ms = sum(t.duration_ms for t in trials)
    merged.turn_count = max(t.turn_count for t in trials)
    if merged.error is None:
        merged.error = next((t.error for t in trials if t.error is not None), None)
    return merged


_HASH_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
# The SHA-256 state after "input\x00", copied for each item: a new hash object costs about as much as the
# hashing of a short input itself (OpenSSL sets up its digest each time), a copy far less.
_INPUT_HASH = hashlib.sha256(b"input\x00")


def data_hash(case: Case) -> str:
    """A short hash of what an item asks and expects, so a baseline's item with the same id but other data
    is not compared with it."""
    item = case.item
    text = item.input
    if (text.__class__ is str and item.inputs is None and item.turns is None and item.ground_truth is None
            and item.expected_trajectory is None and item.context is None):  # the common case, no encoder
        hashed = _INPUT_HASH.copy()
        hashed.update(text.encode("utf-8", "backslashreplace"))  # "input\x00" + text, as below
        return hashed.hexdigest()[:16]
    fields = {
        "input": item.input, "inputs": item.inputs,
        "turns": [t.input for t in item.turns] if item.turns is not None else None,
        "ground_truth": item.ground_truth, "expected_trajectory": item.expected_trajectory,
        "context": item.context,
    }
    present = {k: v for k, v in fields.items() if v is not None}
    if len(present) == 1 and isinstance(item.input, str):  # a str subclass: the same key as a str
        data = "input\x00" + item.input
    else:
        try:
            data = _HASH_ENCODER.encode(present)
        except TypeError:  # keys that do not sort together (YAML's `{1: a, b: c}`): sorted as JSON writes them
            data = _HASH_ENCODER.encode(plain(present))
    return hashlib.sha256(data.encode("utf-8", "backslashreplace")).hexdigest()[:16]


def turn_params_hash(case: Case) -> dict[str, str]:
    """Each per-turn check's `params_hash` by its label (`turn-N:id`), for the item's record.

    `data_hash` covers the turns' inputs, not their checks (and matches baseline items, so it stays
    as it is): `--resume` compares these to tell a per-turn check whose parameters changed."""
    return {f"turn-{index}:{c.entry.id}": c.entry.params_hash
            for index, checks in enumerate(case.turn_checks or ()) for c in checks if c.entry.params_hash}


def input_of(case: Case) -> Any:
    """What the item's record shows as its input: the input, the inputs, or each turn's input."""
    item = case.item
    if item.turns is not None:
        return [t.input for t in item.turns]
    if item.inputs is not None:
        return item.inputs
    return item.input


def _score(
    checks: list[Check],
    item: Any,
    run: Run,
    result: ItemResult,
    into: dict[str, float],
    reasons: dict[str, str],
    ledger: Ledger | None = None,
    turn: int | None = None,
) -> None:
    """Score the run with each check into `into`; one call per list, as this runs for every item."""
    contributions = result.contributions
    for check in checks:
        entry = check.entry
        if ledger is not None and check.scorer.judged:
            ledger.check = _label(entry, turn)
        try:
            raw = check.scorer.fn(item, run)
            if raw.__class__ is float and 0.0 <= raw <= 1.0:  # the common score: nothing to normalize
                into[entry.id] = raw
                contributions.append((entry, raw))
                continue
            value, reason = normalize(raw)
        except NotScorable as exc:
            value, reason = None, exc.reason
        except BaseException as exc:  # sys.exit or GeneratorExit in a scorer too: that result's error only
            if user_interrupt(exc):
                raise
            message = describe_exception(exc)
            if entry.kind != "gate":
                result.scorer_errors[_label(entry, turn)] = message
                continue
            value, reason = 0.0, message  # as Mastra: a raising gate scores 0
        if reason:
            reasons[entry.id] = reason
        if value is None:
            result.not_scorable[_label(entry, turn)] = reason or "not scorable"
        else:
            into[entry.id] = value
        contributions.append((entry, value))


def _label(entry: Entry, turn: int | None) -> str:
    """How an item's record names a check: its id, or `turn-N:id` for a per-turn check."""
    return entry.id if turn is None else f"turn-{turn}:{entry.id}"


def _shared_ids(checks: list[Check]) -> set[str] | None:
    """The ids a turn gives both a gate and a scorer (rare), or None."""
    gates = {c.entry.id for c in checks if c.entry.kind == "gate"}
    if not gates or len(gates) == len(checks):
        return None
    return {c.entry.id for c in checks if c.entry.kind != "gate" and c.entry.id in gates} or None


def _keep_by_kind(scores: TurnScores, key: str, kind: str, prior: str | None) -> None:
    """After a check of a shared id was scored: its reason (if any) by kind; `reasons` keeps the reason
    given last, as it always held (`prior`: the other kind's, taken out before this check was scored)."""
    mine = scores.reasons.get(key)
    if mine is not None:
        scores.reasons_by_kind.setdefault(kind, {})[key] = mine
    elif prior is not None:
        scores.reasons[key] = prior


def top_shared_ids(gates: list[Check], scorers: list[Check]) -> frozenset[str]:
    """The ids of the top-level gates that a top-level scorer has too (rare: Mastra allows it)."""
    if not gates or not scorers:
        return frozenset()
    return frozenset(c.entry.id for c in gates) & frozenset(c.entry.id for c in scorers)


def _score_beside_gates(scorers: list[Check], item: Any, run: Run, result: ItemResult, shared: frozenset[str],
                        ledger: Ledger | None) -> None:
    """`_score` of the top-level scorers when some share an id with a gate: `reasons` then holds the
    scorer's reason where both gave one (given last, as it always held), and `reasons_by_kind` each one's
    own, for the shared ids with a reason only."""
    gate_reasons = {key: reason for key, reason in result.reasons.items() if key in shared}  # in spec order
    reasons: dict[str, str] = {}
    _score(scorers, item, run, result, result.scores, reasons, ledger)
    result.reasons.update(reasons)  # a key shared keeps its place, as when the scorer wrote over it
    scorer_reasons = {key: reason for key, reason in reasons.items() if key in shared}
    if gate_reasons:
        result.reasons_by_kind["gates"] = gate_reasons
    if scorer_reasons:
        result.reasons_by_kind["scores"] = scorer_reasons


def _score_turn(case: Case, index: int, checks: list[Check], turn_input: Any, run: Run, result: ItemResult,
                ledger: Ledger | None) -> TurnScores:
    """One turn's gates and scorers, in the order the item lists them, on that turn's run."""
    view = case.item.model_copy(update={"input": turn_input, "inputs": None, "turns": None})
    scores = TurnScores(index, turn_input, run)
    shared = _shared_ids(checks)
    for check in checks:
        gate = check.entry.kind == "gate"
        before = len(result.contributions)
        prior = scores.reasons.pop(check.entry.id, None) if shared and check.entry.id in shared else None
        _score([check], view, run, result, scores.gates if gate else scores.scores, scores.reasons, ledger, index)
        if len(result.contributions) > before and result.contributions[-1][1] is None:
            scores.not_scorable.setdefault("gates" if gate else "scores", []).append(check.entry.id)
        if shared and check.entry.id in shared:
            _keep_by_kind(scores, check.entry.id, "gates" if gate else "scores", prior)
    return scores


def evaluate_case(case: Case, target: Target, gates: list[Check], scorers: list[Check],
                  top_judged: bool | None = None, top_shared: frozenset[str] | None = None) -> ItemResult:
    """Run one case through the target and every check; never raises for the target's or a scorer's sake.

    top_judged: whether a top-level check asks a judge (`evaluate` works it out once for all items);
    top_shared: `top_shared_ids(gates, scorers)`, likewise.
    """
    started = perf_counter()
    item = case.item
    single = item.turns is None and item.inputs is None
    # case and trial by position: by name, among 22 parameters, they cost a third of the call; `item.id or`:
    # case.id without its property call for a named item
    result = ItemResult(case.index, item.id or case.id, item.input if single else input_of(case), case, case.trial)
    if item.turns is not None:
        result.turn_count = len(item.turns)
    inputs = [item.input] if single else item.turn_inputs()
    runs: list[Run] = []
    try:
        if single:
            runs.append(target.run(case, 0, ()))
        else:
            for turn in range(len(inputs)):
                runs.append(target.run(case, turn, list(zip(inputs, runs, strict=False))))
    except TargetError as exc:
        result.error = str(exc) or type(exc).__name__
    except BaseException as exc:
        if user_interrupt(exc):
            raise  # the user's Ctrl-C, not the target's own
        result.error = describe_exception(exc)
    if result.error is not None:
        if runs:  # the turns before the one that failed were billed: their spend counts (budget, summary.cost)
            result.run = conversation(runs)
        result.duration_ms = (perf_counter() - started) * 1000.0
        return result
    run = result.run = runs[0] if single else conversation(runs)
    if not single:  # top-level checks see the conversation, and its first input (as Mastra)
        item = item.model_copy(update={"input": item.first_input})
    if top_judged is None:
        top_judged = any(c.scorer.judged for c in (*gates, *scorers))
    judged = top_judged or (case.turn_checks is not None and any(
        c.scorer.judged for checks in case.turn_checks for c in checks))
    ledger = open_ledger(case.trial) if judged else None  # judge calls are charged to this item, by check
    try:
        _score(gates, item, run, result, result.gates, result.reasons, ledger)
        if top_shared is None:
            top_shared = top_shared_ids(gates, scorers)
        if top_shared:
            _score_beside_gates(scorers, item, run, result, top_shared, ledger)
        else:
            _score(scorers, item, run, result, result.scores, result.reasons, ledger)
        if case.turn_checks is not None:
            result.turns = [_score_turn(case, index, checks, inputs[index], runs[index], result, ledger)
                            for index, checks in enumerate(case.turn_checks)]
    finally:
        if ledger is not None:
            close_ledger()
            result.judge_cost = ledger.by_check
            result.judge_tokens = ledger.tokens
    result.duration_ms = (perf_counter() - started) * 1000.0
    return result


# With `draw_ahead`, the cases drawn beyond one per worker: enough that no worker runs out while the loop lets
# finished items gather (GATHER_S), even for a target answering in a few microseconds.
DRAWN_AHEAD = 64
# How long the loop, woken by a finished item, lets others finish before it handles them together. On two
# cores, waking it for each item (and the worker's GIL hand-off to it) cost more than the listeners' work.
GATHER_S = 0.001


def evaluate(
    cases: Iterable[Case],
    target: Target,
    gates: list[Check],
    scorers: list[Check],
    concurrency: int = 1,
    repeats: int | None = None,
    on_trial: Callable[[ItemResult], None] | None = None,
    *,
    draw_ahead: bool = False,
) -> Iterator[ItemResult]:
    """Results as items finish (completion order), at most `concurrency` in flight.

    repeats: every case runs that many times as independent trials (in flight together); an item's
    result comes when its last trial finishes, its trials merged (`merge_trials`).
    on_trial: with repeats, called with each trial as it finishes, before the next case is drawn.
    draw_ahead: draw up to DRAWN_AHEAD cases before a worker is free for them, so none waits on the loop,
    and hand out finished items in batches (GATHER_S): the loop's thread wakes a few times less often (7%
    less CPU at 10,000 items and concurrency 64, bench/http.py). Off, a case is drawn only when a worker is
    free: a budget's cap, checked as each case is drawn, has then seen every finished item's spend.
    """
    if repeats is not None:
        yield from _repeated(cases, target, gates, scorers, concurrency, repeats, on_trial, draw_ahead)
        return
    judged = any(c.scorer.judged for c in (*gates, *scorers))
    shared = top_shared_ids(gates, scorers)
    if runs_inline(target, gates, scorers, concurrency):
        for case in cases:
            yield evaluate_case(case, target, gates, scorers, judged, shared)
        return
    workers = _Workers(concurrency, lambda case: evaluate_case(case, target, gates, scorers, judged, shared))
    drawn = concurrency + DRAWN_AHEAD if draw_ahead else concurrency  # at most this many drawn, unfinished
    unfinished = 0
    source = iter(cases)
    try:
        for case in source:
            workers.start(case)
            unfinished += 1
            if unfinished >= drawn:
                break
        while unfinished:
            for result in workers.finished(GATHER_S if draw_ahead else 0.0):
                unfinished -= 1
                yield result
                next_case = next(source, None)
                if next_case is not None:
                    workers.start(next_case)
                    unfinished += 1
    finally:
        # On Ctrl-C or an early close, drop what has not started; do not wait for stragglers.
        workers.stop()


class _Workers:
    """`size` threads, each evaluating the cases it takes from one queue and putting the result (or what
    it raised) on another: per item two queue operations, where an executor made a future, a work item,
    a condition and a callback for each."""

    def __init__(self, size: int, work: Callable[[Case], ItemResult]) -> None:
        self.todo: queue.SimpleQueue[Case | None] = queue.SimpleQueue()
        self.done: queue.SimpleQueue[tuple[ItemResult | None, BaseException | None]] = queue.SimpleQueue()
        self.work = work
        self.size = size
        self.threads: list[threading.Thread] = []

    def start(self, case: Case) -> None:
        self.todo.put(case)
        if len(self.threads) < self.size:  # started as needed, as an executor does: a short run needs few
            thread = threading.Thread(target=self._serve, name=f"evalgate_{len(self.threads)}")
            self.threads.append(thread)
            thread.start()

    def finished(self, gather_s: float) -> Iterator[ItemResult]:
        """The results finished by now, in the order they finished: waits for one, then `gather_s` for others
        to join it. What a worker raised (a user's interrupt) is raised in its place."""
        batch = [self.done.get()]
        interrupted: BaseException | None = None
        try:
            if gather_s:
                sleep(gather_s)
        except BaseException as exc:  # Ctrl-C while gathering: what finished is handed out first, then raised
            interrupted = exc
        with contextlib.suppress(queue.Empty):
            while True:
                batch.append(self.done.get_nowait())
        for result, raised in batch:
            if raised is not None:
                raise raised
            assert result is not None
            yield result
        if interrupted is not None:
            raise interrupted

    def stop(self) -> None:
        """No more cases: the queued ones are dropped, each thread ends after its current one (not waited for)."""
        with contextlib.suppress(queue.Empty):
            while True:
                self.todo.get_nowait()
        for _ in self.threads:
            self.todo.put(None)

    def _serve(self) -> None:
        todo, done, work = self.todo, self.done, self.work
        while (case := todo.get()) is not None:
            try:
                done.put((work(case), None))
            except BaseException as exc:  # to the loop's thread, as a future's result would raise it
                done.put((None, exc))


def runs_inline(target: Target, gates: list[Check], scorers: list[Check], concurrency: int,
                repeats: int | None = None) -> bool:
    """Whether `evaluate` runs the items one after another, so results come in data order.

    Items run inline unless something waits on I/O: the target, or a judge behind a scorer.
    """
    if repeats is not None:
        return False
    return concurrency <= 1 or not (target.concurrent or any(c.scorer.judged for c in (*gates, *scorers)))


def _repeated(cases: Iterable[Case], target: Target, gates: list[Check], scorers: list[Check],
              concurrency: int, repeats: int,
              on_trial: Callable[[ItemResult], None] | None = None, draw_ahead: bool = False) -> Iterator[ItemResult]:
    trials = (replace(case, trial=trial) for case in cases for trial in range(repeats))
    waiting: dict[int, list[ItemResult]] = {}
    for result in evaluate(trials, target, gates, scorers, concurrency, draw_ahead=draw_ahead):
        if on_trial is not None:
            on_trial(result)
        done = waiting.setdefault(result.index, [])
        done.append(result)
        if len(done) == repeats:
            del waiting[result.index]
            yield merge_trials(done)


def in_data_order(results: Iterable[ItemResult], start: int = 0) -> Iterator[ItemResult]:
    """Reorder completion-order results into data order (small buffer of early finishers)."""
    waiting: dict[int, ItemResult] = {}
    expected = start
    for result in results:
        if result.index != expected:
            waiting[result.index] = result
            continue
        yield result
        expected += 1
        while expected in waiting:
            yield waiting.pop(expected)
            expected += 1
    for index in sorted(waiting):
        yield waiting[index]
