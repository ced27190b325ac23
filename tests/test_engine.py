"""The engine (CONTRACT sections 2 and 6): per item target, gates, scorers; errors isolated; data order."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from evalgate import NotScorable, checks, run_evals
from evalgate.decide.verdict import Entry
from evalgate.load.cases import Case, Check
from evalgate.load.items import Item
from evalgate.replies import Run, ToolCall
from evalgate.run import engine
from evalgate.run.engine import DRAWN_AHEAD, evaluate, evaluate_case, in_data_order
from evalgate.scorers.base import Scorer
from evalgate.targets.base import TargetError

WAIT_S = 30.0


class FakeTarget:
    """Replies from a table keyed by input; raises what the table holds."""

    concurrent = True

    def __init__(self, replies: dict[Any, Any], delays: dict[Any, float] | None = None) -> None:
        self.replies = replies
        self.delays = delays or {}
        self.calls: list[Any] = []
        self.lock = threading.Lock()

    def run(self, case: Case, turn: int, history: Any) -> Run:
        value = case.item.turn_inputs()[turn]
        with self.lock:
            self.calls.append(value)
        time.sleep(self.delays.get(value, 0.0))
        reply = self.replies[value]
        if isinstance(reply, Exception):
            raise reply
        return reply

    def close(self) -> None:
        pass


def check(fn: Any, id: str, kind: str = "scorer", threshold: Any = None) -> Check:
    return Check(Scorer(id, fn), Entry(id, kind, threshold))  # type: ignore[arg-type]


def case(index: int, value: Any) -> Case:
    return Case(index=index, item=Item(input=value))


SUNNY = Run(texts=["Sunny in Brooklyn"], tool_calls=[ToolCall("get_weather")])


def test_target_then_gates_then_scorers_in_spec_order() -> None:
    order: list[str] = []

    def recorder(name: str, value: float) -> Any:
        def fn(item: Item, run: Run) -> float:
            order.append(name)
            return value

        return fn

    gates = [check(recorder("g1", 1.0), "g1", "gate"), check(recorder("g2", 1.0), "g2", "gate")]
    scorers = [check(recorder("s1", 0.5), "s1"), check(recorder("s2", 0.25), "s2")]
    result = evaluate_case(case(0, "q"), FakeTarget({"q": SUNNY}), gates, scorers)
    assert order == ["g1", "g2", "s1", "s2"]
    assert result.gates == {"g1": 1.0, "g2": 1.0}
    assert result.scores == {"s1": 0.5, "s2": 0.25}
    assert [(e.id, v) for e, v in result.contributions] == [("g1", 1.0), ("g2", 1.0), ("s1", 0.5), ("s2", 0.25)]
    assert result.error is None and not result.errored


@pytest.mark.parametrize(
    ("failure", "message"),
    [(TargetError("HTTP 503 from the agent"), "HTTP 503 from the agent"), (KeyError("city"), "KeyError: 'city'")],
)
def test_a_failing_target_errors_the_item_and_skips_its_checks(failure: Exception, message: str) -> None:
    called: list[str] = []
    gate = check(lambda item, run: called.append("gate") or 1.0, "g", "gate")
    result = evaluate_case(case(0, "q"), FakeTarget({"q": failure}), [gate], [])
    assert result.error == message
    assert result.errored
    assert result.contributions == []
    assert called == []


def test_a_raising_gate_scores_zero_with_the_error_as_reason() -> None:
    def broken(item: Item, run: Run) -> float:
        raise ZeroDivisionError("division by zero")

    result = evaluate_case(case(0, "q"), FakeTarget({"q": SUNNY}), [check(broken, "g", "gate")], [])
    assert result.gates == {"g": 0.0}
    assert result.reasons["g"] == "ZeroDivisionError: division by zero"
    assert result.scorer_errors == {}
    assert [(e.id, v) for e, v in result.contributions] == [("g", 0.0)]


@pytest.mark.parametrize(
    "returns",
    [
        pytest.param(lambda: (_ for _ in ()).throw(RuntimeError("judge unreachable")), id="raises"),
        pytest.param(lambda: 1.5, id="out of range"),
        pytest.param(lambda: "high", id="not a number"),
    ],
)
def test_a_broken_scorer_is_recorded_and_not_averaged(returns: Any) -> None:
    scorers = [check(lambda item, run: returns(), "broken"), check(lambda item, run: 0.5, "fine")]
    result = evaluate_case(case(0, "q"), FakeTarget({"q": SUNNY}), [], scorers)
    assert "broken" in result.scorer_errors
    assert "broken" not in result.scores
    assert result.scores == {"fine": 0.5}
    assert [e.id for e, _ in result.contributions] == ["fine"]
    assert result.errored  # counts against max_errors


def test_reasons_and_not_scorable() -> None:
    scorers = [
        check(lambda item, run: (0.5, "half right"), "tuple"),
        check(lambda item, run: {"score": 1.0, "reason": "all good"}, "mapping"),
        check(lambda item, run: NotScorable("no ground truth"), "returned"),
        check(lambda item, run: (_ for _ in ()).throw(NotScorable("no context")), "raised"),
    ]
    result = evaluate_case(case(0, "q"), FakeTarget({"q": SUNNY}), [], scorers)
    assert result.scores == {"tuple": 0.5, "mapping": 1.0}
    assert result.reasons == {
        "tuple": "half right",
        "mapping": "all good",
        "returned": "no ground truth",
        "raised": "no context",
    }
    assert result.not_scorable == {"returned": "no ground truth", "raised": "no context"}
    assert [(e.id, v) for e, v in result.contributions][2:] == [("returned", None), ("raised", None)]
    assert not result.errored


def test_concurrent_results_come_back_in_data_order() -> None:
    inputs = list(range(8))
    # earlier items take longer, so they finish last
    target = FakeTarget({i: Run(texts=[str(i)]) for i in inputs}, {i: 0.05 * (8 - i) for i in inputs})
    cases = [case(i, i) for i in inputs]
    scorer = [check(lambda item, run: 1.0, "s")]
    finished = list(evaluate(cases, target, [], scorer, concurrency=4))
    assert sorted(r.index for r in finished) == inputs
    assert [r.index for r in finished] != inputs  # really out of order ...
    assert [r.index for r in in_data_order(finished)] == inputs  # ... and put back


@pytest.mark.parametrize("draw_ahead", [False, True])
def test_concurrency_bounds_items_in_flight(draw_ahead: bool) -> None:
    in_flight = 0
    peak = 0
    lock = threading.Lock()

    class Counting(FakeTarget):
        def run(self, case: Case, turn: int, history: Any) -> Run:
            nonlocal in_flight, peak
            with lock:
                in_flight += 1
                peak = max(peak, in_flight)
            time.sleep(0.02)
            with lock:
                in_flight -= 1
            return SUNNY

    results = list(evaluate([case(i, i) for i in range(12)], Counting({}), [], [check(lambda i, r: 1.0, "s")], 3,
                            draw_ahead=draw_ahead))
    assert len(results) == 12
    assert 1 < peak <= 3  # cases drawn ahead wait for a worker: no more requests in flight


@pytest.mark.parametrize(("draw_ahead", "drawn"), [(False, 3), (True, 3 + DRAWN_AHEAD)])
def test_cases_are_drawn_when_a_worker_is_free_unless_drawn_ahead(draw_ahead: bool, drawn: int) -> None:
    """What a budget relies on (it checks its cap as each case is drawn): without `draw_ahead`, no case is drawn
    before a worker is free for it; with it, a bounded number wait for one."""
    taken = 0
    release = threading.Event()

    def cases() -> Any:
        nonlocal taken
        for i in range(200):
            taken += 1
            yield case(i, i)

    class Held(FakeTarget):
        def run(self, case: Case, turn: int, history: Any) -> Run:
            release.wait(WAIT_S)
            return SUNNY

    results = evaluate(cases(), Held({}), [], [check(lambda i, r: 1.0, "s")], 3, draw_ahead=draw_ahead)
    first = threading.Thread(target=lambda: got.append(next(results)))
    got: list[Any] = []
    first.start()
    deadline = time.monotonic() + WAIT_S
    while taken < drawn and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # a draw past the bound would have happened by now
    assert taken == drawn
    release.set()
    first.join(WAIT_S)
    assert len(got) == 1 and len(list(results)) == 199


def test_drawn_ahead_every_item_comes_back_once_in_batches() -> None:
    """Many fast items, each finishing at its own time: handed out in batches, none lost or repeated."""
    inputs = list(range(400))
    target = FakeTarget({i: Run(texts=[str(i)]) for i in inputs}, {i: (i * 7 % 5) / 2000 for i in inputs})
    finished = list(evaluate([case(i, i) for i in inputs], target, [], [check(lambda i, r: 1.0, "s")], 8,
                             draw_ahead=True))
    assert sorted(r.index for r in finished) == inputs
    assert [r.run.text for r in in_data_order(finished)] == [str(i) for i in inputs]  # type: ignore[union-attr]


def test_an_interrupt_while_results_gather_hands_out_the_finished_ones_first(monkeypatch: Any) -> None:
    """Ctrl-C lands in the loop's thread, often while it lets finished items gather: those already taken off
    the workers' queue are handed out (and journaled by the run) before the interrupt is raised."""
    def interrupted(seconds: float) -> None:
        time.sleep(0.2)  # the other items finish meanwhile
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "sleep", interrupted)
    target = FakeTarget({i: Run(texts=[str(i)]) for i in range(4)}, {0: 0.0, 1: 0.05, 2: 0.05, 3: 0.05})
    handed: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        for result in evaluate([case(i, i) for i in range(4)], target, [], [check(lambda i, r: 1.0, "s")], 4,
                               draw_ahead=True):
            handed.append(result.index)
    assert sorted(handed) == [0, 1, 2, 3]


# ---- through run_evals: errored items, max_errors, the verdict ----


def _agent(question: str) -> dict[str, Any]:
    if question.startswith("crash"):
        raise ConnectionError("agent unreachable")
    return {"text": f"Sunny: {question}", "tool_calls": [{"name": "get_weather"}]}


@pytest.mark.parametrize(
    ("crashes", "max_errors", "verdict"),
    [(0, 0, "passed"), (1, 0, "failed"), (1, 1, "passed"), (2, 1, "failed"), (2, 2, "passed")],
)
def test_errored_items_against_max_errors(crashes: int, max_errors: int, verdict: str) -> None:
    data = [{"input": "crash" if i < crashes else f"q{i}"} for i in range(4)]
    result = run_evals(
        data=data, target=_agent, gates=[checks.called_tool("get_weather")], max_errors=max_errors, concurrency=2
    )
    assert result.verdict == verdict
    assert result.summary["errored_items"] == crashes
    assert result.summary["total_items"] == 4
    assert result.summary["error_budget_exceeded"] is (crashes > max_errors)
    assert result.gate_results[0].score == 1.0  # errored items are left out of the average
    errors = [i.error for i in result.items if i.error]
    assert errors == ["ConnectionError: agent unreachable"] * crashes


def test_a_raising_scorer_is_left_out_of_the_average() -> None:
    def picky(item: Item, run: Run) -> float:
        if item.input == "b":
            raise ValueError("cannot score b")
        return 1.0 if item.input == "a" else 0.0

    result = run_evals(
        data=[{"input": "a"}, {"input": "b"}, {"input": "c"}],
        target=lambda q: q,
        scorers=[{"scorer": Scorer("picky", picky), "threshold": 0.5}],
        max_errors=1,
    )
    assert result.scores == {"picky": 0.5}  # (1 + 0) / 2, not / 3
    assert result.threshold_results[0].passed
    assert result.items[1].scorer_errors == {"picky": "ValueError: cannot score b"}
    assert result.summary["errored_items"] == 1
    assert result.verdict == "passed"


def test_a_raising_gate_fails_the_verdict_through_run_evals() -> None:
    def flaky(item: Item, run: Run) -> float:
        if item.input == "b":
            raise RuntimeError("tool log missing")
        return 1.0

    result = run_evals(data=[{"input": "a"}, {"input": "b"}], target=lambda q: q, gates=[Scorer("flaky", flaky)])
    assert result.verdict == "failed"
    assert result.gate_results[0].score == 0.5
    assert result.items[1].gates == {"flaky": 0.0}
    assert result.items[1].reasons == {"flaky": "RuntimeError: tool log missing"}
    assert result.summary["errored_items"] == 0  # a raising gate is a score, not an error


# ---- a user's own scorer in a spec: `type: python` ----


def test_python_scorer_in_a_spec(tmp_path: Any) -> None:
    from evalgate.api import run_spec

    (tmp_path / "my_scorers_engine.py").write_text(
        "from evalgate import NotScorable\n"
        "def grounded(item, run):\n"
        "    if item.ground_truth is None:\n"
        "        return NotScorable('no ground truth')\n"
        "    return (1.0, 'matches') if item.ground_truth in run.text else (0.0, 'differs')\n"
        "def length(run):\n"
        "    return min(len(run.text) / 100, 1.0)\n"
    )
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\n"
        "data:\n"
        "  - {input: a, ground_truth: sunny, output: It is sunny}\n"
        "  - {input: b, ground_truth: rain, output: It is dry}\n"
        "  - {input: c, output: Hello}\n"
        "scorers:\n"
        "  - type: python\n"
        "    function: my_scorers_engine:grounded\n"
        "    threshold: 0.5\n"
        "  - type: python\n"
        "    function: my_scorers_engine:length\n"
    )
    result = run_spec(tmp_path / "evalgate.yaml", keep_items=True)
    assert result.scores == {"python:grounded": 0.5, "python:length": (0.11 + 0.09 + 0.05) / 3}
    assert result.threshold_results[0].passed
    assert result.verdict == "passed"
    assert result.summary["not_scorable"] == {"python:grounded": 1}
    assert [i.reasons.get("python:grounded") for i in result.items] == ["matches", "differs", "no ground truth"]


def test_a_python_scorer_hung_on_every_item_stops_being_called(tmp_path: Any) -> None:
    # Each overrunning call keeps a thread; after MAX_OVERRUNNING of them the rest are refused at
    # once instead of costing a thread and a timeout each.
    import sys

    from evalgate.api import run_spec
    from evalgate.run.overruns import MAX_OVERRUNNING

    (tmp_path / "hung_scorer_engine.py").write_text(
        "import threading\n"
        "release = threading.Event()\n"
        "calls = []\n"
        "def stuck(run):\n"
        "    calls.append(run.text)\n"
        "    release.wait(30)\n"
        "    return 1.0\n"
    )
    items = "".join(f"  - {{id: q{i}, input: a, output: It is sunny}}\n" for i in range(MAX_OVERRUNNING + 4))
    (tmp_path / "evalgate.yaml").write_text(
        f"version: 1\nconcurrency: 1\ndata:\n{items}scorers:\n"
        "  - {type: python, function: hung_scorer_engine:stuck, timeout_s: 0.05}\n"
    )
    try:
        result = run_spec(tmp_path / "evalgate.yaml", keep_items=True)
        errors = [i.scorer_errors["python:stuck"] for i in result.items]
        assert errors[:MAX_OVERRUNNING] == ["ScorerTimeout: the scorer ran over 0.05s"] * MAX_OVERRUNNING
        assert all(e.startswith(f"ScorerTimeout: not called: {MAX_OVERRUNNING} earlier calls") for e in
                   errors[MAX_OVERRUNNING:]), errors[MAX_OVERRUNNING:]
        assert len(sys.modules["hung_scorer_engine"].calls) == MAX_OVERRUNNING
    finally:
        sys.modules["hung_scorer_engine"].release.set()
