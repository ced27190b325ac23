"""The `openai` target against a fake OpenAI-compatible chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_agent import FakeServer

from evalgate.api import run_spec

SECRET = "sk-test-0123456789abcdef"
TOOLS = [{
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}]


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("FAKE_OPENAI_KEY", SECRET)
    return SECRET


def write_spec(tmp_path: Path, url: str, data: list[dict], target: dict | None = None, **top: object) -> Path:
    spec = {
        "version": 1,
        "data": data,
        "target": {
            "type": "openai",
            "base_url": f"{url}/v1",
            "model": "fake-mini",
            "api_key_env": "FAKE_OPENAI_KEY",
            "retries": {"attempts": 3, "backoff_s": 0.01, "max_backoff_s": 0.05},
            "timeout_s": 2,
            **(target or {}),
        },
        "scorers": [{"type": "includes", "value": "said"}],
        **top,
    }
    path = tmp_path / "evalgate.yaml"
    path.write_text(json.dumps(spec, indent=2))
    return path


def items(result_path: Path) -> dict[str, dict]:
    return {i["id"]: i for i in json.loads(result_path.read_text())["items"]}


def test_text_tool_calls_usage_and_cost_are_recorded(tmp_path: Path, server: FakeServer, api_key: str) -> None:
    target = {
        "system": "You are a weather bot.",
        "temperature": 0.2,
        "max_tokens": 50,
        "tools": TOOLS,
        "prices": {"fake-mini": {"prompt": 1.0, "completion": 2.0}},
    }
    data = [{"id": "w", "input": "weather in Paris?"}, {"id": "h", "input": "hello there"}]
    spec = write_spec(tmp_path, server.url, data, target)
    result = run_spec(spec, output=tmp_path / "out.json")
    got = items(tmp_path / "out.json")
    weather = got["w"]["output"]
    assert weather["tool_calls"] == [{"name": "get_weather", "args": {"city": "Paris"}}]
    assert weather["text"] == ""
    assert got["h"]["output"]["text"] == "You said: hello there"
    usage = got["h"]["output"]["usage"]
    assert usage == {"prompt_tokens": 7, "completion_tokens": 10, "total_tokens": 17}  # 5 system + 2 user words
    assert got["h"]["output"]["cost_usd"] == pytest.approx((7 * 1.0 + 10 * 2.0) / 1_000_000)
    assert result.summary["errored_items"] == 0
    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == f"Bearer {SECRET}"
    body = sent["body"]
    assert body["model"] == "fake-mini" and body["temperature"] == 0.2 and body["max_tokens"] == 50
    assert body["messages"][0] == {"role": "system", "content": "You are a weather bot."}
    assert body["tools"] == [{"type": "function", "function": TOOLS[0]}]
    assert SECRET not in (tmp_path / "out.json").read_text()


def test_multi_turn_sends_the_growing_message_list(tmp_path: Path, server: FakeServer, api_key: str) -> None:
    data = [{"id": "c", "inputs": ["hi", "and again", "bye"]}]
    spec = write_spec(tmp_path, server.url, data, {"system": "Be brief."})
    run_spec(spec, output=tmp_path / "out.json")
    messages = [r["body"]["messages"] for r in server.requests]
    assert [len(m) for m in messages] == [2, 4, 6]
    assert messages[2] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "You said: hi"},
        {"role": "user", "content": "and again"},
        {"role": "assistant", "content": "You said: and again"},
        {"role": "user", "content": "bye"},
    ]
    texts = items(tmp_path / "out.json")["c"]["output"]["texts"]
    assert texts == ["You said: hi", "You said: and again", "You said: bye"]


def test_faults_are_retried_or_error_the_item(tmp_path: Path, server: FakeServer, api_key: str) -> None:
    server.faults["flaky"] = ["500", "429:0.01"]
    server.faults["junk"] = ["malformed"]
    server.faults["gone"] = ["503"] * 5
    data = [{"id": "f", "input": "flaky"}, {"id": "j", "input": "junk"}, {"id": "g", "input": "gone"}]
    spec = write_spec(tmp_path, server.url, data, max_errors=5)
    result = run_spec(spec, output=tmp_path / "out.json")
    got = items(tmp_path / "out.json")
    assert got["f"]["error"] is None and got["f"]["output"]["text"] == "You said: flaky"
    assert "not JSON" in got["j"]["error"]
    assert "HTTP 503" in got["g"]["error"] and "after 3 attempts" in got["g"]["error"]
    assert result.summary["errored_items"] == 2
    assert server.requests_for("gone") == 3 and server.requests_for("junk") == 1


def test_missing_api_key_errors_items_without_sending(tmp_path: Path, server: FakeServer,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAKE_OPENAI_KEY", raising=False)
    spec = write_spec(tmp_path, server.url, [{"id": "a", "input": "hi"}])
    run_spec(spec, output=tmp_path / "out.json")
    assert "FAKE_OPENAI_KEY is not set" in items(tmp_path / "out.json")["a"]["error"]
    assert server.count == 0


def test_endpoint_without_a_key(tmp_path: Path, server: FakeServer) -> None:
    spec = write_spec(tmp_path, server.url, [{"id": "a", "input": "hi"}], {"api_key_env": None})
    result = run_spec(spec)
    assert result.summary["errored_items"] == 0
    assert "Authorization" not in server.requests[0]["headers"]


def test_cli_output_never_shows_the_key(tmp_path: Path, server: FakeServer) -> None:
    server.faults["leak"] = ["echo"]
    server.faults["leak2"] = ["400echo"]
    data = [{"id": "a", "input": "leak"}, {"id": "b", "input": "leak2"}]
    write_spec(tmp_path, server.url, data, max_errors=5)
    proc = subprocess.run(
        [sys.executable, "-m", "evalgate.cli", "run", "-o", "out.json"],
        cwd=tmp_path, env={**os.environ, "FAKE_OPENAI_KEY": SECRET}, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    assert "HTTP 400" in items(tmp_path / "out.json")["b"]["error"]


def test_usage_that_is_not_a_count_is_left_out_never_an_error(tmp_path: Path, server: FakeServer) -> None:
    # A token count sent as "100" used to error the item (`TypeError: can't multiply sequence`); a
    # NaN or a negative one made a NaN or negative cost, which a budget never reaches.
    data = [{"id": "s", "input": "as string"}, {"id": "n", "input": "nan"}, {"id": "m", "input": "minus"}]
    server.faults["as string"] = ['extra:{"usage": {"prompt_tokens": "100", "completion_tokens": 10}}']
    server.faults["nan"] = ['extra:{"usage": {"prompt_tokens": NaN, "completion_tokens": 1e999}}']
    server.faults["minus"] = ['extra:{"usage": {"prompt_tokens": -1000000, "completion_tokens": 10, "x": [1]}}']
    target = {"api_key_env": None, "prices": {"fake-mini": {"prompt": 1.0, "completion": 2.0}}}
    result = run_spec(write_spec(tmp_path, server.url, data, target), output=tmp_path / "out.json")
    got = items(tmp_path / "out.json")
    assert result.summary["errored_items"] == 0
    assert got["s"]["output"]["usage"] == {"completion_tokens": 10}
    assert "usage" not in got["n"]["output"] and "cost_usd" not in got["n"]["output"]  # unknown, not NaN
    assert got["m"]["output"]["usage"] == {"completion_tokens": 10, "x": [1]}
    assert got["s"]["output"]["cost_usd"] == got["m"]["output"]["cost_usd"] == pytest.approx(20 / 1_000_000)


def test_content_parts_whose_text_is_not_a_string_add_no_text(tmp_path: Path, server: FakeServer) -> None:
    # a text part with a null or numeric `text` errored the item with "TypeError: sequence item 0:
    # expected str instance, NoneType found", which says nothing of the reply
    parts = [{"type": "text", "text": None}, {"type": "text", "text": "Sunny, "}, {"type": "text", "text": 5},
             {"type": "text", "text": "72F"}, {"type": "text", "text": ["x"]}]
    message = {"role": "assistant", "content": parts}
    server.faults["parts"] = ["extra:" + json.dumps({"choices": [{"index": 0, "message": message}]})]
    spec = write_spec(tmp_path, server.url, [{"id": "p", "input": "parts"}], {"api_key_env": None})
    result = run_spec(spec, output=tmp_path / "out.json")
    assert result.summary["errored_items"] == 0
    assert items(tmp_path / "out.json")["p"]["output"]["text"] == "Sunny, 72F"


def test_an_error_sent_with_status_200_is_not_replayed_from_the_cache(tmp_path: Path, server: FakeServer) -> None:
    # the reply was stored as any JSON reply is, so every later run replayed the outage from the cache
    server.faults["hello there"] = ['extra:{"error": {"message": "overloaded"}}']
    spec = write_spec(tmp_path, server.url, [{"id": "h", "input": "hello there"}],
                      {"api_key_env": None, "cache": {"dir": "cache"}, "retries": {"attempts": 1}}, max_errors=1)
    run_spec(spec, output=tmp_path / "out.json")
    assert "answered with an error" in items(tmp_path / "out.json")["h"]["error"]
    second = run_spec(spec, output=tmp_path / "out.json")
    assert items(tmp_path / "out.json")["h"]["output"]["text"] == "You said: hello there"
    assert server.requests_for("hello there") == 2 and second.summary["network"]["cache_hits"] == 0
    run_spec(spec, output=tmp_path / "out.json")  # the good reply is kept
    assert server.requests_for("hello there") == 2


def test_tool_arguments_nested_past_the_recursion_limit_are_kept_as_sent(tmp_path: Path, server: FakeServer) -> None:
    # json.loads raised RecursionError, which no `except ValueError` catches: the item errored with Python's
    # "maximum recursion depth exceeded"; arguments that cannot be read are kept as the string they came as
    arguments = "[" * 5000 + "]" * 5000
    call = {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    server.faults["deep"] = ["extra:" + json.dumps({"choices": [{"index": 0, "message": message}]})]
    spec = write_spec(tmp_path, server.url, [{"id": "d", "input": "deep"}], {"api_key_env": None})
    result = run_spec(spec, output=tmp_path / "out.json")
    assert result.summary["errored_items"] == 0
    assert items(tmp_path / "out.json")["d"]["output"]["tool_calls"] == [{"name": "get_weather", "args": arguments}]
