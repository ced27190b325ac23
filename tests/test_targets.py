"""The `python` and `command` targets: real imports, real subprocesses."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from conftest import dedent

from evalgate import checks, run_evals
from evalgate.api import run_spec
from evalgate.run import overruns
from evalgate.run.overruns import MAX_OVERRUNNING
from evalgate.targets.python import PythonTarget

DATA = """\
data:
  - id: brooklyn
    input: Weather in Brooklyn?
    ground_truth: sunny
  - id: paris
    input: Weather in Paris?
    ground_truth: cloudy
"""
CHECKS = """\
gates:
  - type: called_tool
    tool: get_weather
scorers:
  - type: includes
    value: Brooklyn
"""


def _module(tmp_path: Path, source: str) -> str:
    """Write an agent module under a unique name (modules are cached per process by name)."""
    name = f"agent_{uuid.uuid4().hex[:12]}"
    (tmp_path / f"{name}.py").write_text(dedent(source), encoding="utf-8")
    return name


def _python_spec(tmp_path: Path, source: str, function: str = "answer", extra: str = "") -> Path:
    module = _module(tmp_path, source)
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(
        f"version: 1\n{DATA}target:\n  type: python\n  function: {module}:{function}\n{extra}{CHECKS}",
        encoding="utf-8",
    )
    return spec


def _command_spec(tmp_path: Path, source: str, timeout_s: float | None = None, max_errors: int = 0) -> Path:
    (tmp_path / "agent.py").write_text(dedent(source), encoding="utf-8")
    timeout = f"  timeout_s: {timeout_s}\n" if timeout_s is not None else ""
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(
        f"version: 1\n{DATA}max_errors: {max_errors}\n"
        f"target:\n  type: command\n  run: [{sys.executable!r}, agent.py]\n{timeout}{CHECKS}",
        encoding="utf-8",
    )
    return spec


# ---- python ----


def test_python_sync_function_returning_a_run(tmp_path: Path) -> None:
    spec = _python_spec(
        tmp_path,
        """
        def answer(question):
            city = question.split()[-1].rstrip("?")
            return {"text": f"Sunny in {city}", "tool_calls": [{"name": "get_weather", "args": {"city": city}}]}
        """,
    )
    result = run_spec(spec, keep_items=True)
    assert result.verdict == "passed"
    assert [i.run.text for i in result.items] == ["Sunny in Brooklyn", "Sunny in Paris"]
    assert result.items[0].run.tool_calls[0].args == {"city": "Brooklyn"}
    assert result.scores == {"includes:Brooklyn": 0.5}


def test_python_function_returning_plain_text(tmp_path: Path) -> None:
    spec = _python_spec(tmp_path, "def answer(question):\n    return 'Brooklyn is sunny'\n")
    result = run_spec(spec, keep_items=True)
    assert [i.run.text for i in result.items] == ["Brooklyn is sunny"] * 2
    assert result.gate_results[0].score == 0.0
    assert result.verdict == "failed"


def test_python_async_function(tmp_path: Path) -> None:
    spec = _python_spec(
        tmp_path,
        """
        import asyncio

        async def answer(question):
            await asyncio.sleep(0.01)
            return {"text": question.upper(), "tool_calls": [{"name": "get_weather"}]}
        """,
    )
    result = run_spec(spec, keep_items=True)
    assert [i.run.text for i in result.items] == ["WEATHER IN BROOKLYN?", "WEATHER IN PARIS?"]
    assert result.verdict == "passed"


def test_python_two_argument_form_gets_the_item(tmp_path: Path) -> None:
    spec = _python_spec(
        tmp_path,
        """
        def answer(question, item):
            return {"text": f"{item.id}: {item.ground_truth}", "tool_calls": [{"name": "get_weather"}]}
        """,
    )
    result = run_spec(spec, keep_items=True)
    assert [i.run.text for i in result.items] == ["brooklyn: sunny", "paris: cloudy"]


def test_python_raising_function_errors_only_that_item(tmp_path: Path) -> None:
    spec = _python_spec(
        tmp_path,
        """
        def answer(question):
            if "Paris" in question:
                raise RuntimeError("the model is down")
            return {"text": "Brooklyn", "tool_calls": [{"name": "get_weather"}]}
        """,
        extra="max_errors: 1\n",
    )
    result = run_spec(spec, keep_items=True)
    brooklyn, paris = result.items
    assert brooklyn.error is None and brooklyn.gates == {"called_tool:get_weather": 1.0}
    assert paris.error == "RuntimeError: the model is down"
    assert paris.run is None and paris.gates == {} and paris.scores == {}
    assert result.outcome.errored_items == 1
    # the errored item is left out of every average
    assert result.gate_results[0].score == 1.0
    assert result.scores == {"includes:Brooklyn": 1.0}
    assert result.verdict == "passed"  # 1 errored item <= max_errors 1


def test_python_function_returning_a_non_run_errors_the_item(tmp_path: Path) -> None:
    spec = _python_spec(tmp_path, "def answer(question):\n    return 42\n", extra="max_errors: 5\n")
    result = run_spec(spec, keep_items=True)
    assert all("not a run" in (i.error or "") for i in result.items)
    # every item errored (within max_errors): nothing scored, so the configured entries are not met, and say why
    assert result.verdict == "failed"
    assert all(g.score is None and g.unscored and "target error" in g.unscored for g in result.gate_results)


def test_python_async_timeout_errors_the_item(tmp_path: Path) -> None:
    spec = _python_spec(
        tmp_path,
        """
        import asyncio

        async def answer(question):
            await asyncio.sleep(0 if "Brooklyn" in question else 30)
            return {"text": "Brooklyn", "tool_calls": [{"name": "get_weather"}]}
        """,
        extra="max_errors: 1\n",
    )
    spec.write_text(spec.read_text().replace("  type: python\n", "  type: python\n  timeout_s: 0.5\n"))
    started = time.monotonic()
    result = run_spec(spec, keep_items=True)
    assert time.monotonic() - started < 10
    assert result.items[0].error is None
    assert "timed out after 0.5s" in (result.items[1].error or "")


# ---- command ----


def test_command_json_stdout_gets_the_item_on_stdin(tmp_path: Path) -> None:
    spec = _command_spec(
        tmp_path,
        """
        import json, sys
        item = json.load(sys.stdin)
        print(json.dumps({
            "text": f"{item['id']} asked {item['input']} ({item['ground_truth']})",
            "tool_calls": [{"name": "get_weather", "args": {"q": item["input"]}, "result": {"ok": True}}],
            "usage": {"prompt_tokens": 3},
        }))
        """,
    )
    result = run_spec(spec, keep_items=True)
    assert result.verdict == "passed"
    assert result.items[0].run.text == "brooklyn asked Weather in Brooklyn? (sunny)"
    assert result.items[1].run.tool_calls[0].args == {"q": "Weather in Paris?"}
    assert result.items[0].run.usage == {"prompt_tokens": 3}
    assert result.items[0].run.latency_ms is not None  # measured when the command reports none


def test_command_and_python_runs_with_a_nan_or_negative_cost_cannot_switch_the_budget_off(tmp_path: Path) -> None:
    # {"cost_usd": NaN} (json writes and reads it) made the spend NaN: a `budget:` never stopped the run.
    agent = """
        import json, sys
        item = json.load(sys.stdin)
        cost = {"brooklyn": "NaN", "paris": "-1e300"}.get(item["id"], "0.25")
        print('{"text": "ok", "cost_usd": %s, "latency_ms": -3, "usage": {"total_tokens": -9, "x": 1}}' % cost)
        """
    data = "data:\n" + "".join(f"  - {{id: {i}, input: q}}\n" for i in ("brooklyn", "paris", "a", "b", "c"))
    budget = "concurrency: 1\nbudget: {max_usd: 0.5}\ngates: [{type: includes, value: ok}]\n"
    (tmp_path / "agent.py").write_text(dedent(agent), encoding="utf-8")
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(f"version: 1\n{data}target:\n  type: command\n  run: [{sys.executable!r}, agent.py]\n{budget}")
    result = run_spec(spec, keep_items=True)
    first = result.items[0].run
    assert first.cost_usd is None and first.latency_ms is not None and first.latency_ms >= 0 and first.usage == {"x": 1}
    assert result.items[1].run.cost_usd is None
    assert result.summary["budget"]["items_not_run"] == 1 and "budget exceeded" in result.items[4].error
    module = _module(tmp_path, "def answer(q):\n    return {'text': 'ok', 'cost_usd': float('nan')}\n")
    spec.write_text(f"version: 1\n{data}target:\n  type: python\n  function: {module}:answer\n{budget}")
    assert all(item.run.cost_usd is None for item in run_spec(spec, keep_items=True).items)


def test_a_reported_number_past_the_largest_float_is_left_out_not_an_item_error(tmp_path: Path) -> None:
    # `1` and 400 zeros is a JSON integer: checking that it was finite raised OverflowError, every item errored
    huge = "1" + "0" * 400
    agent = f"""
        print('{{"text": "Brooklyn", "cost_usd": {huge}, "latency_ms": {huge}, "usage": {{"total_tokens": {huge}}}}}')
        """
    result = run_spec(_command_spec(tmp_path, agent), keep_items=True)
    assert [item.error for item in result.items] == [None, None]
    run = result.items[0].run
    assert run.cost_usd is None and run.usage is None and run.latency_ms is not None and run.latency_ms < 10**6
    module = _module(tmp_path, f"def answer(q):\n    return {{'text': 'Brooklyn', 'cost_usd': {huge}}}\n")
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(f"version: 1\n{DATA}target:\n  type: python\n  function: {module}:answer\n{CHECKS}")
    items = run_spec(spec, keep_items=True).items
    assert [item.error for item in items] == [None, None] and items[0].run.cost_usd is None


def test_command_plain_text_stdout(tmp_path: Path) -> None:
    spec = _command_spec(tmp_path, "import sys, json\nprint('Brooklyn: ' + json.load(sys.stdin)['input'])\n")
    result = run_spec(spec, keep_items=True)
    assert [i.run.text for i in result.items] == ["Brooklyn: Weather in Brooklyn?", "Brooklyn: Weather in Paris?"]
    assert result.items[0].run.tool_calls == []
    assert result.scores == {"includes:Brooklyn": 1.0}


def test_command_json_nested_past_the_recursion_limit_errors_the_item_saying_so(tmp_path: Path) -> None:
    # the reason was Python's "RecursionError: maximum recursion depth exceeded while decoding a JSON array"
    deep = "[" * 5000 + "]" * 5000
    spec = _command_spec(tmp_path, f"print('{{\"text\": \"Brooklyn\", \"tool_calls\": {deep}}}')\n",
                         max_errors=2)
    result = run_spec(spec, keep_items=True)
    assert [i.error for i in result.items] == ["stdout is JSON nested too deeply (about 1,000 levels or more) "
                                               "to be read"] * 2


def test_command_crash_errors_the_item_with_the_stderr_tail(tmp_path: Path) -> None:
    spec = _command_spec(
        tmp_path,
        """
        import json, sys
        item = json.load(sys.stdin)
        if item["id"] == "paris":
            sys.stderr.write("x" * 5000 + "\\nKeyError: 'paris' is not a city we know\\n")
            sys.exit(3)
        print(json.dumps({"text": "Brooklyn", "tool_calls": [{"name": "get_weather"}]}))
        """,
    )
    result = run_spec(spec, keep_items=True)
    brooklyn, paris = result.items
    assert brooklyn.error is None
    assert paris.error is not None
    assert "exited with code 3" in paris.error
    assert paris.error.rstrip().endswith("KeyError: 'paris' is not a city we know")
    assert len(paris.error) < 1000  # the tail, not the whole stream
    assert result.outcome.errored_items == 1
    assert result.verdict == "failed"  # 1 errored item > max_errors 0


def test_a_crashed_command_agent_names_its_exception_first(tmp_path: Path) -> None:
    spec = _command_spec(
        tmp_path,
        """
        import json, sys
        item = json.load(sys.stdin)
        def answer(city):
            return {"paris": 1}[city + "!"]
        answer(item["id"])
        """,
    )
    result = run_spec(spec, keep_items=True)
    error = result.items[0].error or ""
    assert error.startswith("exited with code 1: KeyError: 'brooklyn!'; stderr: ")  # a cut report keeps it
    assert "Traceback (most recent call last)" in error and error.rstrip().endswith("KeyError: 'brooklyn!'")


def test_command_hanging_is_killed_by_timeout(tmp_path: Path) -> None:
    spec = _command_spec(
        tmp_path,
        """
        import json, subprocess, sys, time
        item = json.load(sys.stdin)
        if item["id"] == "paris":
            sys.stderr.write("thinking...\\n")
            sys.stderr.flush()
            # a grandchild that keeps stdout open: the whole process group must go
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            time.sleep(60)
        print(json.dumps({"text": "Brooklyn", "tool_calls": [{"name": "get_weather"}]}))
        """,
        timeout_s=1,
        max_errors=1,
    )
    started = time.monotonic()
    result = run_spec(spec, keep_items=True)
    elapsed = time.monotonic() - started
    assert elapsed < 10, f"timeout_s: 1 took {elapsed:.1f}s"
    brooklyn, paris = result.items
    assert brooklyn.error is None
    assert "timed out after 1s" in (paris.error or "")
    assert "thinking..." in (paris.error or "")
    assert result.verdict == "passed"


def test_command_that_cannot_start_errors_each_item(tmp_path: Path) -> None:
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(
        f"version: 1\n{DATA}max_errors: 2\ntarget:\n  type: command\n  run: ./no-such-program\n{CHECKS}",
        encoding="utf-8",
    )
    result = run_spec(spec, keep_items=True)
    assert all("cannot start" in (i.error or "") for i in result.items)


def test_python_sync_timeout_errors_the_item(tmp_path: Path) -> None:
    spec = _python_spec(
        tmp_path,
        """
        import time

        def answer(question):
            if "Paris" in question:
                time.sleep(30)
            return {"text": "Brooklyn", "tool_calls": [{"name": "get_weather"}]}
        """,
        extra="max_errors: 1\n",
    )
    spec.write_text(spec.read_text().replace("  type: python\n", "  type: python\n  timeout_s: 0.5\n"))
    started = time.monotonic()
    result = run_spec(spec, keep_items=True)
    assert time.monotonic() - started < 10
    assert result.items[0].error is None
    assert result.items[1].error == "timed out after 0.5s"
    assert result.verdict == "passed"


def test_a_python_function_hung_on_every_item_stops_being_called_until_one_returns() -> None:
    # Python cannot stop a thread: each timed-out call keeps one. A function hung for good used to get
    # a thread per item and take items x timeout_s to fail; now the 33rd item is refused at once.
    release = threading.Event()
    calls: list[str] = []

    def answer(question: str) -> dict:
        calls.append(question)
        if question.startswith("hang"):
            release.wait(30)
        return {"text": "Brooklyn", "tool_calls": [{"name": "get_weather"}]}

    target = PythonTarget(answer, timeout_s=0.05)
    hung = [{"id": f"h{i}", "input": f"hang {i}"} for i in range(MAX_OVERRUNNING + 8)]
    try:
        result = run_evals(data=hung, target=target, gates=[checks.called_tool("get_weather")],
                           concurrency=1, max_errors=100)
        errors = [item.error for item in sorted(result.items, key=lambda i: i.index)]
        assert errors[:MAX_OVERRUNNING] == ["timed out after 0.05s"] * MAX_OVERRUNNING
        assert all(e.startswith(f"not called: {MAX_OVERRUNNING} earlier calls are still running past timeout_s")
                   for e in errors[MAX_OVERRUNNING:]), errors[MAX_OVERRUNNING:]
        assert len(calls) == MAX_OVERRUNNING  # the refused items never reached the function
        assert sum(t.name == "evalgate-call" for t in threading.enumerate()) >= MAX_OVERRUNNING
    finally:
        release.set()
    deadline = time.monotonic() + 10
    while target.overruns.count and time.monotonic() < deadline:  # the hung calls return, one by one
        time.sleep(0.01)
    assert target.overruns.count == 0
    after = run_evals(data=[{"id": "ok", "input": "weather"}], target=target,
                      gates=[checks.called_tool("get_weather")])
    assert after.items[0].error is None and after.verdict == "passed"


def test_async_functions_that_stall_their_event_loop_count_as_hung_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # Blocking code in a coroutine stalls the shared loop: each stall leaves a loop thread behind and
    # the next call gets a fresh loop. Those count against the same limit (3 here, to keep it quick).
    monkeypatch.setattr(overruns, "MAX_OVERRUNNING", 3)
    release = threading.Event()

    async def answer(question: str) -> dict:
        if question.startswith("hang"):
            release.wait(30)  # blocks the loop's thread, not just this coroutine
        return {"text": "Brooklyn", "tool_calls": [{"name": "get_weather"}]}

    target = PythonTarget(answer, timeout_s=0.05)
    try:
        result = run_evals(data=[{"id": f"h{i}", "input": f"hang {i}"} for i in range(5)], target=target,
                           gates=[checks.called_tool("get_weather")], concurrency=1, max_errors=100)
        errors = [item.error for item in sorted(result.items, key=lambda i: i.index)]
        assert errors[:3] == ["timed out after 0.05s"] * 3
        assert all(e.startswith("not called: 3 earlier calls") for e in errors[3:]), errors
    finally:
        release.set()
    deadline = time.monotonic() + 10
    while target.overruns.count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert target.overruns.count == 0
    after = run_evals(data=[{"id": "ok", "input": "weather"}], target=target,
                      gates=[checks.called_tool("get_weather")])
    assert after.items[0].error is None
