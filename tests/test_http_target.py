"""The `http` target end to end: a real agent server on 127.0.0.1, the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import dedent
from fake_agent import FakeServer

from evalgate.api import run_spec
from evalgate.load.spec import ResponseMapping
from evalgate.targets.http import ReplyMapping, compile_body

SECRET = "agt-9f8e7d6c5b4a-secret"
CLI_TIMEOUT_S = 60


def evalgate(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalgate.cli", *map(str, args)],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )


def spec_text(url: str, data: list[dict], target: dict | None = None, **top: object) -> str:
    """A spec as JSON (which is YAML): an http target with fast retries, one gate, one scorer."""
    spec = {
        "version": 1,
        "data": data,
        "target": {
            "type": "http",
            "url": f"{url}/agent",
            "response": {"text": "output.text", "tool_calls": "output.tool_calls", "usage": "usage"},
            "retries": {"attempts": 3, "backoff_s": 0.01, "max_backoff_s": 0.05},
            "timeout_s": 0.5,
            **(target or {}),
        },
        "gates": [{"type": "called_tool", "tool": "get_weather"}],
        "scorers": [{"type": "includes", "value": "72F"}],
        **top,
    }
    return json.dumps(spec, indent=2)


# ---- templates and mapping (pure) ----


def test_placeholders_become_json_values_not_pasted_strings() -> None:
    render = compile_body({
        "q": "{{input}}",
        "meta": "{{item.metadata}}",
        "user": "{{ item.metadata.user }}",
        "line": "asked: {{input}} by {{item.metadata.user}}",
        "fixed": [1, {"k": "v"}],
    })
    ctx = {"input": {"city": "Paris", "days": 3}, "item": {"metadata": {"user": 7}}}
    assert render(ctx) == {
        "q": {"city": "Paris", "days": 3},
        "meta": {"user": 7},
        "user": 7,
        "line": 'asked: {"city": "Paris", "days": 3} by 7',
        "fixed": [1, {"k": "v"}],
    }
    assert compile_body('{"q": "{{input}}"}')({"input": [1, 2]}) == {"q": [1, 2]}  # a JSON string body
    assert compile_body({"q": "{{item.missing}}"})({"item": {}}) == {"q": None}


def test_unknown_placeholder_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown placeholder `\\{\\{inptu\\}\\}`"):
        compile_body({"q": "{{inptu}}"})


def test_response_mapping_with_jmespath_and_tool_call_fields() -> None:
    mapping = ReplyMapping(ResponseMapping(
        text="data.answer",
        tool_calls="data.steps[?kind=='tool']",
        usage="meta.tokens",
        cost_usd="meta.cost",
        tool_call_fields={"name": "tool", "args": "input", "error": "failure"},
    ))
    run = mapping.run({
        "data": {"answer": "Sunny.", "steps": [
            {"kind": "tool", "tool": "get_weather", "input": {"city": "Paris"}},
            {"kind": "think"},
            {"kind": "tool", "tool": "search", "input": "x", "failure": "timeout"},
        ]},
        "meta": {"tokens": {"prompt_tokens": 3}, "cost": 0.002},
    })
    assert run.text == "Sunny."
    assert [(c.name, c.args, c.error) for c in run.tool_calls] == [
        ("get_weather", {"city": "Paris"}, None), ("search", "x", "timeout")]
    assert run.usage == {"prompt_tokens": 3} and run.cost_usd == 0.002


def test_bad_jmespath_is_a_spec_error_on_its_line(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(dedent("""
        version: 1
        data: [{input: hi}]
        target:
          type: http
          url: http://127.0.0.1:9/agent
          response:
            text: "output.[text"
        gates: [{type: used_no_tools}]
        """))
    proc = evalgate("validate", cwd=tmp_path)
    assert proc.returncode == 2
    assert "evalgate.yaml:7:" in proc.stderr and "not a JMESPath expression" in proc.stderr


def test_unknown_placeholder_is_a_spec_error(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(dedent("""
        version: 1
        data: [{input: hi}]
        target:
          type: http
          url: http://127.0.0.1:9/agent
          body: {question: "{{question}}"}
        gates: [{type: used_no_tools}]
        """))
    proc = evalgate("validate", cwd=tmp_path)
    assert proc.returncode == 2 and "{{question}}" in proc.stderr and "Traceback" not in proc.stderr


# ---- end to end ----


def write_spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "evalgate.yaml"
    path.write_text(text)
    return path


def test_every_item_is_scored_or_errored_exactly_once_under_faults(tmp_path: Path, server: FakeServer) -> None:
    faults = {
        "Paris ok": [],
        "Oslo 500 then ok": ["500", "503"],
        "Lima reset then ok": ["reset"],
        "Cairo 429 then ok": ["429:0.05"],
        "Tokyo slow": ["slow:0.1"],
        "Sydney hangs once": ["hang"],
        "London always 500": ["500"] * 10,
        "Brooklyn malformed": ["malformed"],
        "Paris 400": ["400"],
        "Oslo hangs forever": ["hang"] * 10,
    }
    server.faults.update({k: list(v) for k, v in faults.items()})
    data = [{"id": f"i{n}", "input": text} for n, text in enumerate(faults)]
    write_spec(tmp_path, spec_text(server.url, data, concurrency=4, max_errors=10))
    proc = evalgate("run", "--output", "out.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "out.json").read_text())
    assert not (tmp_path / "out.json.items.jsonl").exists()  # the results replaced the journal
    items = {i["id"]: i for i in results["items"]}
    assert [i["id"] for i in results["items"]] == [d["id"] for d in data]
    errored = {i for i, item in items.items() if item["error"]}
    assert errored == {"i6", "i7", "i8", "i9"}
    assert "HTTP 500" in items["i6"]["error"] and "after 3 attempts" in items["i6"]["error"]
    assert "not JSON" in items["i7"]["error"]
    assert "HTTP 400" in items["i8"]["error"]
    assert "timed out" in items["i9"]["error"]
    for item_id, item in items.items():  # errored items carry no scores; the rest are scored once
        assert bool(item["gates"]) != (item_id in errored)
    assert results["summary"]["errored_items"] == 4
    assert results["gate_results"][0]["score"] == 1.0  # averaged over the 6 scored items only
    for text in faults:  # retries are bounded by attempts
        assert server.requests_for(text) <= 3
    assert server.requests_for("Paris 400") == 1 and server.requests_for("Brooklyn malformed") == 1
    network = results["summary"]["network"]
    assert network["retries"] == sum(server.requests_for(t) - 1 for t in faults)
    assert "retries" in proc.stdout


def test_an_interim_1xx_reply_is_never_taken_for_the_next_items_reply(tmp_path: Path, server: FakeServer) -> None:
    # One connection, kept alive: a 103 read as the reply left the real one there for the next item to
    # read as its own, so it was scored on another item's answer
    faults = {"Paris hints": ["early_hints"], "Tokyo next": [], "Oslo switches": ["switching"], "Lima next": []}
    server.faults.update({k: list(v) for k, v in faults.items()})
    data = [{"id": f"i{n}", "input": text} for n, text in enumerate(faults)]
    write_spec(tmp_path, spec_text(server.url, data, concurrency=1, max_errors=1))
    proc = evalgate("run", "--output", "out.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    items = {i["id"]: i for i in json.loads((tmp_path / "out.json").read_text())["items"]}
    assert items["i0"]["output"]["text"] == "It is sunny in Paris, 72F."  # the final reply, after the hints
    assert items["i1"]["output"]["text"] == "It is sunny in Tokyo, 72F."
    assert "HTTP 101" in items["i2"]["error"]  # an upgrade nobody asked for: that item's error
    assert items["i3"]["output"]["text"] == "It is sunny in Lima, 72F."


def test_an_input_with_a_lone_surrogate_is_sent_as_its_json_escape(tmp_path: Path, server: FakeServer) -> None:
    # valid JSON, not UTF-8: the item errored with "UnicodeEncodeError: 'utf-8' codec can't encode character"
    (tmp_path / "data.jsonl").write_text('{"id": "s", "input": "Paris \\ud800 now"}\n')
    spec = json.loads(spec_text(server.url, [], {"cache": {"dir": "cache"}}))
    write_spec(tmp_path, json.dumps({**spec, "data": "data.jsonl"}))
    for _ in range(2):  # sent, then replayed from the cache
        proc = evalgate("run", "--output", "out.json", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        [item] = json.loads((tmp_path / "out.json").read_text())["items"]
        assert item["error"] is None and item["output"]["text"] == "It is sunny in Paris, 72F."
    assert [r["body"] for r in server.requests] == [{"input": "Paris \ud800 now"}]


def test_rate_limited_run_slows_down_instead_of_failing(tmp_path: Path, server: FakeServer) -> None:
    server.max_in_flight = 2
    server.retry_after = 0.02
    server.default_fault = "slow:0.03"
    data = [{"id": f"q{n}", "input": f"weather in Paris #{n}"} for n in range(40)]
    retries = {"attempts": 8, "backoff_s": 0.02, "max_backoff_s": 0.2}
    write_spec(tmp_path, spec_text(server.url, data, {"retries": retries}, concurrency=8))
    proc = evalgate("run", "--output", "out.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((tmp_path / "out.json").read_text())
    assert results["summary"]["errored_items"] == 0 and results["verdict"] == "passed"
    network = results["summary"]["network"]
    assert network["rate_limited"] > 0
    assert network["lowest_limit"] < 8  # the in-flight limit adapted
    assert network["concurrency_limit"] == 8
    # far fewer 429s than a client hammering at 8 in flight would collect
    assert network["rate_limited"] < 40
    assert "rate-limited" in proc.stdout


def test_secrets_never_appear_in_any_output(tmp_path: Path, server: FakeServer) -> None:
    server.faults["leak please"] = ["echo"]
    server.faults["leak in error"] = ["400echo"]
    data = [
        {"id": "ok", "input": "weather in Paris"},
        {"id": "echo", "input": "leak please"},
        {"id": "err", "input": "leak in error"},
    ]
    headers = {"Authorization": "Bearer ${AGENT_TOKEN}", "X-Api-Key": "${AGENT_TOKEN}"}
    write_spec(tmp_path, spec_text(server.url, data, {"headers": headers}, max_errors=5))
    proc = evalgate("run", "--output", "out.json", cwd=tmp_path, env={"AGENT_TOKEN": SECRET})
    assert proc.returncode in (0, 1), proc.stderr
    # the agent did receive it...
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert server.requests[0]["headers"]["X-Api-Key"] == SECRET
    # ...and it is nowhere in what evalgate wrote or printed
    assert SECRET not in proc.stdout and SECRET not in proc.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    results = json.loads((tmp_path / "out.json").read_text())
    items = {i["id"]: i for i in results["items"]}
    assert "***" in items["echo"]["output"]["text"]
    assert "HTTP 400" in items["err"]["error"] and "***" in items["err"]["error"]


def test_missing_header_variable_errors_items_with_a_clear_message(tmp_path: Path, server: FakeServer) -> None:
    data = [{"id": "a", "input": "weather in Paris"}]
    headers = {"Authorization": "Bearer ${EVALGATE_TEST_UNSET_TOKEN}"}
    write_spec(tmp_path, spec_text(server.url, data, {"headers": headers}))
    env = {k: v for k, v in os.environ.items() if k != "EVALGATE_TEST_UNSET_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "-o", "out.json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    assert proc.returncode == 4  # every item errored: could not evaluate
    item = json.loads((tmp_path / "out.json").read_text())["items"][0]
    assert "EVALGATE_TEST_UNSET_TOKEN is not set" in item["error"]
    assert server.count == 0


@pytest.mark.parametrize("pasted", ["\n", "\r\n", "\nX-Injected: 1"])
def test_a_header_secret_with_a_line_break_names_its_variable_and_never_shows(tmp_path: Path, server: FakeServer,
                                                                              pasted: str) -> None:
    """A secret pasted with a trailing newline: a clear error, not an exception quoting the value."""
    secret = "sk-evalgate-pasted-4c3b2a1f0e9d"
    data = [{"id": "a", "input": "weather in Paris"}]
    write_spec(tmp_path, spec_text(server.url, data, {"headers": {"Authorization": "Bearer ${EVALGATE_PASTED}"}}))
    env = {**os.environ, "EVALGATE_PASTED": secret + pasted}
    proc = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "-o", "out.json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    item = json.loads((tmp_path / "out.json").read_text())["items"][0]
    assert "environment variable EVALGATE_PASTED contains a line break" in item["error"]
    assert server.count == 0
    assert secret not in proc.stdout + proc.stderr
    assert all(secret.encode() not in f.read_bytes() for f in tmp_path.rglob("*") if f.is_file())


def test_body_template_and_item_fields_reach_the_agent(tmp_path: Path, server: FakeServer) -> None:
    data = [{"id": "a", "input": {"q": "weather in Oslo"}, "metadata": {"user": "u1", "n": 2}}]
    body = {"input": "{{input}}", "user": "{{item.metadata.user}}", "n": "{{item.metadata.n}}", "id": "{{item.id}}"}
    write_spec(tmp_path, spec_text(server.url, data, {"body": body}))
    proc = evalgate("run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert server.requests[0]["body"] == {"input": {"q": "weather in Oslo"}, "user": "u1", "n": 2, "id": "a"}


def test_conversation_messages_sends_the_growing_history(tmp_path: Path, server: FakeServer) -> None:
    write_spec(tmp_path, dedent(f"""
        version: 1
        data:
          - {{id: chat, inputs: ["hello", "weather in Paris?", "thanks"]}}
        target:
          type: http
          url: {server.url}/agent
          conversation: messages
          response: {{text: output.text, tool_calls: output.tool_calls}}
        gates:
          - type: called_tool
            tool: get_weather
        """))
    proc = evalgate("run", "-o", "out.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bodies = [r["body"] for r in server.requests]
    assert [len(b["messages"]) for b in bodies] == [1, 3, 5]
    assert bodies[2]["messages"][:3] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "You said: hello"},
        {"role": "user", "content": "weather in Paris?"},
    ]
    item = json.loads((tmp_path / "out.json").read_text())["items"][0]
    assert item["output"]["texts"] == ["You said: hello", "It is sunny in Paris, 72F.", "You said: thanks"]


def test_conversation_session_carries_the_id_between_turns(tmp_path: Path, server: FakeServer) -> None:
    write_spec(tmp_path, dedent(f"""
        version: 1
        data:
          - {{id: chat, inputs: ["hello", "weather in Paris?"]}}
          - {{id: other, inputs: ["hi", "weather in Oslo?"]}}
        target:
          type: http
          url: {server.url}/agent
          conversation: session
          session: session
          body: {{input: "{{{{input}}}}", session: "{{{{session}}}}"}}
          response: {{text: output.text, tool_calls: output.tool_calls}}
        concurrency: 2
        gates:
          - type: called_tool
            tool: get_weather
        """))
    proc = evalgate("run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    by_input = {r["body"]["input"]: r["body"] for r in server.requests}
    assert by_input["hello"]["session"] is None and by_input["hi"]["session"] is None
    assert by_input["weather in Paris?"]["session"] == server_session("hello")
    assert by_input["weather in Oslo?"]["session"] == server_session("hi")


def server_session(first_input: str) -> str:
    from fake_agent import agent_reply

    return agent_reply({"input": first_input})["session"]


def test_run_spec_reports_network_stats_in_the_summary(tmp_path: Path, server: FakeServer) -> None:
    server.faults["weather in Oslo"] = ["500"]
    data = [{"id": "a", "input": "weather in Paris"}, {"id": "b", "input": "weather in Oslo"}]
    spec = write_spec(tmp_path, spec_text(server.url, data))
    result = run_spec(spec)
    network = result.summary["network"]
    assert network["requests"] == 3 and network["retries"] == 1 and network["failed_requests"] == 0
    assert result.verdict == "passed"


def test_the_demo_agent_served_over_http_passes(tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parent.parent / "examples" / "weather"
    proc = subprocess.Popen([sys.executable, "serve.py", "--port", "0"], cwd=demo, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[-1]  # ".../answer"
        spec = (demo / "http.yaml").read_text().replace("http://127.0.0.1:8787/answer", url)
        (tmp_path / "http.yaml").write_text(spec)
        (tmp_path / "questions.jsonl").write_text((demo / "questions.jsonl").read_text())
        result = evalgate("run", "http.yaml", cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "verdict: PASSED" in result.stdout and "10 requests" in result.stdout
    finally:
        proc.kill()
        proc.wait()


def test_cache_files_hold_no_secret_even_when_the_agent_echoes_it(tmp_path: Path, server: FakeServer) -> None:
    token = "tok-evalgate-cache-77d1e0c9ab"
    server.default_fault = "echo"  # every reply quotes the Authorization header back
    data = [{"id": f"c{n}", "input": f"weather in city {n}"} for n in range(3)]
    extra = {"headers": {"Authorization": "Bearer ${EVALGATE_CACHE_TOKEN}"}, "cache": {"dir": "cache"},
             "response": {"text": "output.text"}}
    write_spec(tmp_path, spec_text(server.url, data, extra))
    env = {**os.environ, "EVALGATE_CACHE_TOKEN": token}
    for _ in range(2):  # the second run is served from the cache
        proc = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "-o", "out.json"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
        assert token not in proc.stdout + proc.stderr
    cached = [f for f in (tmp_path / "cache").rglob("*") if f.is_file()]
    assert len(cached) == 3 and server.count == 3
    assert "Bearer ***" in cached[0].read_text()
    assert all(token.encode() not in f.read_bytes() for f in tmp_path.rglob("*") if f.is_file())


def test_a_secret_echoed_in_json_escapes_is_redacted_before_the_cache(tmp_path: Path, server: FakeServer) -> None:
    # the text was searched for the secret, not the parsed reply: `\u0074\u006f...` (or PHP's `\/` for a
    # `/` in a key) hid it, and the reply went to the cache with the token in it
    token = "tok-evalgate-escaped-5c0ffee1"
    server.default_fault = "echo_escaped"
    extra = {"headers": {"Authorization": "Bearer ${EVALGATE_CACHE_TOKEN}"}, "cache": {"dir": "cache"},
             "response": {"text": "output.text"}}
    write_spec(tmp_path, spec_text(server.url, [{"id": "e", "input": "weather"}], extra))
    proc = evalgate("run", "-o", "out.json", cwd=tmp_path, env={"EVALGATE_CACHE_TOKEN": token})
    assert token not in proc.stdout + proc.stderr
    [cached] = [f for f in (tmp_path / "cache").rglob("*") if f.is_file()]
    assert "Bearer ***" in cached.read_text()
    assert all(token.encode() not in f.read_bytes() for f in tmp_path.rglob("*") if f.is_file())


def test_a_nan_or_negative_cost_in_a_reply_cannot_switch_the_budget_off(tmp_path: Path, server: FakeServer) -> None:
    # One reply saying `"cost": NaN` made the run's spend NaN, which never reaches a cap: every item ran.
    data = [{"id": f"q{i}", "input": f"q{i}"} for i in range(5)]
    server.faults["q0"] = ['extra:{"cost": NaN, "latency": -5, "usage": {"prompt_tokens": -1000, "total_tokens": NaN}}']
    server.faults["q1"] = ['extra:{"cost": -1e300}']
    server.default_fault = 'extra:{"cost": 0.25}'
    target = {"response": {"text": "output.text", "usage": "usage", "cost_usd": "cost", "latency_ms": "latency"}}
    spec = write_spec(tmp_path, spec_text(server.url, data, target, concurrency=1, budget={"max_usd": 0.5},
                                          gates=[{"type": "includes", "value": "said"}], scorers=[]))
    result = run_spec(spec, output=tmp_path / "out.json")
    items = {i["id"]: i for i in json.loads((tmp_path / "out.json").read_text())["items"]}
    first = items["q0"]["output"]
    assert "cost_usd" not in first and "usage" not in first and first["latency_ms"] >= 0  # measured instead
    assert "cost_usd" not in items["q1"]["output"]
    assert [items[f"q{i}"]["output"]["cost_usd"] for i in (2, 3)] == [0.25, 0.25]
    assert result.summary["budget"]["items_not_run"] == 1 and "budget exceeded" in items["q4"]["error"]


def test_an_agent_trickling_its_headers_errors_the_item_at_timeout_s(tmp_path: Path, server: FakeServer) -> None:
    # The status line and headers a byte every 0.1 s: no socket read ever times out, and the server
    # would hold each attempt 10 s; the item errors once its attempts' deadlines pass.
    server.faults["slow head"] = ["trickle_headers"] * 2
    data = [{"id": "q0", "input": "slow head"}, {"id": "q1", "input": "weather in Paris"}]
    target = {"timeout_s": 1, "retries": {"attempts": 2, "backoff_s": 0.01, "max_backoff_s": 0.05}}
    spec = write_spec(tmp_path, spec_text(server.url, data, target, concurrency=2, max_errors=5))
    started = time.monotonic()
    run_spec(spec, output=tmp_path / "out.json")
    assert time.monotonic() - started < 5.0
    items = {i["id"]: i for i in json.loads((tmp_path / "out.json").read_text())["items"]}
    assert "timed out after 1s" in items["q0"]["error"] and server.requests_for("slow head") == 2
    assert items["q1"]["error"] is None


def test_a_reply_nested_hundreds_of_levels_deep_is_written_with_its_secrets_masked(
        tmp_path: Path, server: FakeServer) -> None:
    # Past orjson's 255 levels the item is written by json, its secrets masked by walking it: that walk
    # recursed past Python's limit on a reply ~900 levels deep, and the run ended with exit 3, no results.
    deep = "[" * 900 + "]" * 900
    server.faults["deep weather"] = ["extra:" + json.dumps({"output": {"text": "72F", "tool_calls": [
        {"name": "get_weather", "args": {"x": "PLACEHOLDER"}}]}}).replace('"PLACEHOLDER"', deep)]
    data = [{"id": "ok", "input": "weather in Paris"}, {"id": "deep", "input": "deep weather"}]
    write_spec(tmp_path, spec_text(server.url, data, {"headers": {"X-Api-Key": "${AGENT_TOKEN}"}}))
    proc = evalgate("run", "--output", "out.json", cwd=tmp_path, env={"AGENT_TOKEN": SECRET})
    assert proc.returncode == 0, proc.stderr
    items = {i["id"]: i for i in json.loads((tmp_path / "out.json").read_text())["items"]}
    assert items["deep"]["gates"] == {"called_tool:get_weather": 1.0} and items["ok"]["error"] is None


def test_field_only_mappings_find_what_jmespath_finds() -> None:
    """`response.text: output.text` (fields only) is walked without jmespath's interpreter: it must find
    exactly what jmespath finds, on every shape a reply takes (a missing part, a string, a list, null)."""
    import jmespath

    from evalgate.targets.http import FieldPath, compile_path

    replies = [{"output": {"text": "hi", "tool_calls": [{"name": "a"}]}, "usage": {"total": 3}},
               {"output": "plain"}, {"output": None}, {"output": {"text": False}}, [1, 2], "text", None, 3,
               {"a.b": {"c": 1}}, {"a": {"b": {"c": 2}}}, {}]
    for expression in ("output.text", "usage", "output.tool_calls", '"a.b".c', "a.b.c", "output"):
        path = compile_path(expression)
        assert isinstance(path, FieldPath), expression
        for reply in replies:
            assert path.search(reply) == jmespath.search(expression, reply), (expression, reply)
    assert not isinstance(compile_path("output.tool_calls[0].name"), FieldPath)  # jmespath's own
    assert not isinstance(compile_path("a || b"), FieldPath)
