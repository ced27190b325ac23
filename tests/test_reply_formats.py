"""Whole agent replies in Mastra, OpenAI and AI SDK shapes read by the http target's `response.format`.

The fixtures are replies as those libraries serialize them (Mastra's from a real server in
test_mastra_target.py); the last tests run the CLI against a fake agent serving them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from evalgate.load.spec import ResponseMapping
from evalgate.replies.formats import read_reply
from evalgate.targets.base import TargetError
from evalgate.targets.http import ReplyMapping

# ---- fixtures ----

# The AI SDK's generateText() result as JSON: a tool that answered, one that threw, the final text.
AI_SDK_RESULT = {
    "text": "It is 64F in Paris; Atlantis has no weather station.",
    "steps": [
        {"content": [
            {"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool-result", "toolCallId": "c1", "toolName": "get_weather", "input": {"city": "Paris"},
             "output": {"temp": 64}},
            {"type": "tool-call", "toolCallId": "c2", "toolName": "get_weather", "input": {"city": "Atlantis"}},
            {"type": "tool-error", "toolCallId": "c2", "toolName": "get_weather", "input": {"city": "Atlantis"},
             "error": "no weather station in Atlantis"},
        ], "finishReason": "tool-calls"},
        {"content": [{"type": "text", "text": "It is 64F in Paris; Atlantis has no weather station."}],
         "finishReason": "stop"},
    ],
    "usage": {"inputTokens": 40, "outputTokens": 12, "totalTokens": 52},
    "totalUsage": {"inputTokens": 90, "outputTokens": 30, "totalTokens": 120, "reasoningTokens": 5},
}

# AI SDK UI messages (useChat): one tool answered, one threw, one still waiting for its input to run.
AI_SDK_UI_MESSAGES = [
    {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Paris, Atlantis, and book Oslo"}]},
    {"id": "a1", "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "tool-get_weather", "toolCallId": "c1", "state": "output-available",
         "input": {"city": "Paris"}, "output": {"temp": 64}},
        {"type": "tool-get_weather", "toolCallId": "c2", "state": "output-error",
         "input": {"city": "Atlantis"}, "errorText": "no weather station in Atlantis"},
        {"type": "dynamic-tool", "toolName": "book_table", "toolCallId": "c3", "state": "input-available",
         "input": {"city": "Oslo"}},
        {"type": "tool-get_weather", "toolCallId": "c4", "state": "input-streaming", "input": {"ci": ""}},
        {"type": "text", "text": "It is 64F in Paris."},
    ]},
]

# AI SDK model messages (`response.messages`): tool results carry typed outputs.
AI_SDK_MODEL_MESSAGES = [
    {"role": "assistant", "content": [
        {"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool-call", "toolCallId": "c2", "toolName": "get_weather", "input": {"city": "Atlantis"}},
    ]},
    {"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": "c1", "toolName": "get_weather",
         "output": {"type": "json", "value": {"temp": 64}}},
        {"type": "tool-result", "toolCallId": "c2", "toolName": "get_weather",
         "output": {"type": "error-text", "value": "no weather station in Atlantis"}},
    ]},
    {"role": "assistant", "content": [{"type": "text", "text": "It is 64F in Paris."}]},
]

# OpenAI Chat Completions: the model asks for a tool; nothing ran it.
OPENAI_COMPLETION = {
    "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}}],
    "usage": {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30},
}

# OpenAI chat messages of an agent loop: one call answered, one failed, one never answered.
OPENAI_MESSAGES = [
    {"role": "user", "content": "Weather in Oslo, Atlantis and Lima?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}},
        {"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Atlantis\"}"}},
        {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Lima\"}"}},
    ]},
    {"role": "tool", "tool_call_id": "a", "content": "{\"temp\": 41}"},
    {"role": "tool", "tool_call_id": "b", "content": "{\"error\": \"no weather station\"}"},
    {"role": "assistant", "content": "It is 41F in Oslo."},
]

# OpenAI Responses API.
OPENAI_RESPONSE = {
    "id": "resp_1", "object": "response",
    "output": [
        {"type": "function_call", "call_id": "f1", "name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"},
        {"type": "function_call_output", "call_id": "f1", "output": "{\"temp\": 41}"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "41F in Oslo."}]},
    ],
    "usage": {"input_tokens": 30, "output_tokens": 8, "total_tokens": 38},
}

# Mastra's generate() reply, trimmed to the parts that matter (a real one is in test_mastra_target.py).
MASTRA_REPLY = {
    "text": "Sorry, I could not get the weather.",
    "toolCalls": [{"type": "tool-call", "from": "AGENT",
                   "payload": {"toolCallId": "c1", "toolName": "get_weather", "args": {"city": "Atlantis"}}}],
    "toolResults": [],
    "totalUsage": {"inputTokens": 30, "outputTokens": 14, "totalTokens": 44},
    "response": {"dbMessages": [{"id": "m1", "role": "assistant", "content": {"format": 2, "parts": [
        {"type": "tool-invocation", "toolInvocation": {
            "state": "output-error", "toolCallId": "c1", "toolName": "get_weather", "args": {"city": "Atlantis"},
            "errorText": "no weather station in Atlantis"}},
        {"type": "step-start"},
        {"type": "text", "text": "Sorry, I could not get the weather."}],
        "content": "Sorry, I could not get the weather."}}]},
}


def calls(run: Any) -> list[tuple[str, Any, str | None, str | None]]:
    return [(c.name, c.args, c.status, c.error) for c in run.tool_calls]


# ---- each format ----


def test_ai_sdk_result_reads_results_and_thrown_tools() -> None:
    run = read_reply("ai-sdk", AI_SDK_RESULT)
    assert run.texts == ["It is 64F in Paris; Atlantis has no weather station."]
    assert calls(run) == [
        ("get_weather", {"city": "Paris"}, "ok", None),
        ("get_weather", {"city": "Atlantis"}, "error", "no weather station in Atlantis"),
    ]
    assert run.tool_calls[0].result == {"temp": 64}
    # the whole generation's usage, under evalgate's names
    assert run.usage == {"prompt_tokens": 90, "completion_tokens": 30, "total_tokens": 120, "reasoning_tokens": 5}


def test_ai_sdk_tool_error_serialized_from_an_error_object_still_fails() -> None:
    reply = {"text": "", "content": [
        {"type": "tool-call", "toolCallId": "c", "toolName": "t", "input": {}},
        {"type": "tool-error", "toolCallId": "c", "toolName": "t", "input": {}, "error": {}},  # JSON.stringify(Error)
    ]}
    assert calls(read_reply("ai-sdk", reply)) == [("t", {}, "error", "the tool threw")]


def test_ai_sdk_call_without_result_is_pending() -> None:
    reply = {"text": "", "toolCalls": [{"type": "tool-call", "toolCallId": "x", "toolName": "book", "input": {}}],
             "toolResults": []}
    assert calls(read_reply("ai-sdk", reply)) == [("book", {}, "pending", None)]


def test_ai_sdk_ui_messages_map_states() -> None:
    run = read_reply("ai-sdk", AI_SDK_UI_MESSAGES)
    assert run.texts == ["It is 64F in Paris."]
    assert calls(run) == [
        ("get_weather", {"city": "Paris"}, "ok", None),
        ("get_weather", {"city": "Atlantis"}, "error", "no weather station in Atlantis"),
        ("book_table", {"city": "Oslo"}, "pending", None),
    ]  # the streaming input is not a call yet


def test_ai_sdk_model_messages_read_typed_outputs() -> None:
    run = read_reply("ai-sdk", {"text": "It is 64F in Paris.", "response": {"messages": AI_SDK_MODEL_MESSAGES}})
    assert run.texts == ["It is 64F in Paris."]
    assert calls(run) == [
        ("get_weather", {"city": "Paris"}, "ok", None),
        ("get_weather", {"city": "Atlantis"}, "error", "no weather station in Atlantis"),
    ]
    assert run.tool_calls[0].result == {"temp": 64}


def test_openai_completion_calls_were_not_run_so_carry_no_status() -> None:
    run = read_reply("openai", OPENAI_COMPLETION)
    assert run.texts == [""] and calls(run) == [("get_weather", {"city": "Oslo"}, None, None)]
    assert run.usage == {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}


def test_openai_messages_pair_results_errors_and_pending() -> None:
    for body in (OPENAI_MESSAGES, {"messages": OPENAI_MESSAGES}):
        run = read_reply("openai", body)
        assert run.texts == ["", "It is 41F in Oslo."]
        assert calls(run) == [
            ("get_weather", {"city": "Oslo"}, "ok", None),
            ("get_weather", {"city": "Atlantis"}, "ok", None),  # returned `{error}`: ToolCall.failed
            ("get_weather", {"city": "Lima"}, "pending", None),
        ]
        assert [c.failed for c in run.tool_calls] == [False, True, True]


def test_openai_responses_api() -> None:
    run = read_reply("openai", OPENAI_RESPONSE)
    assert run.texts == ["41F in Oslo."]
    assert calls(run) == [("get_weather", {"city": "Oslo"}, "ok", None)] and run.tool_calls[0].result == {"temp": 41}
    assert run.usage == {"prompt_tokens": 30, "completion_tokens": 8, "total_tokens": 38}


def test_mastra_reply_reads_the_error_its_tool_calls_hide() -> None:
    run = read_reply("mastra", MASTRA_REPLY)
    assert run.texts == ["Sorry, I could not get the weather."]
    assert calls(run) == [("get_weather", {"city": "Atlantis"}, "error", "no weather station in Atlantis")]
    assert run.usage == {"prompt_tokens": 30, "completion_tokens": 14, "total_tokens": 44}


def test_a_mapped_text_replaces_what_summarization_reads_of_mastra_messages() -> None:
    # Every scorer reads the mapped text, not Mastra's: summarization does not error on the messages' text 5,
    # nor read them as no agent's output (no createdAt)
    def message(text: Any, **extra: Any) -> dict[str, Any]:
        return {"id": "m1", "role": "assistant", "content": {"format": 2, "parts": [{"type": "text", "text": text}]},
                **extra}

    for messages in ([message(5, createdAt=0)], [message(" ")]):
        body = {"answer": "It is sunny.", "response": {"dbMessages": messages}}
        plain = ReplyMapping(ResponseMapping(format="mastra")).run(body)
        assert "agent_responses" in plain.unreadable or not plain.agent_output
        mapped = ReplyMapping(ResponseMapping(format="mastra", text="answer")).run(body)
        assert mapped.texts == ["It is sunny."] and mapped.agent_output and not mapped.unreadable


def test_a_mastra_reply_of_odd_call_lists_is_a_format_error_or_keyed_as_javascript_does() -> None:
    # Found by fuzzing replies: `toolCalls` that is no list, or a toolCallId that is an object, ended
    # in a TypeError instead of saying what is wrong with the reply.
    mapping = ReplyMapping(ResponseMapping(format="mastra"))
    for key in ("toolCalls", "toolResults"):
        with pytest.raises(TargetError, match=f"`{key}` must be a list, got a number"):
            mapping.run({"text": "hi", key: 4.5})

    def call(call_id: Any) -> dict[str, Any]:
        return {"payload": {"toolCallId": call_id, "toolName": "get_weather", "args": {}}}

    def result(call_id: Any) -> dict[str, Any]:
        return {"payload": {"toolCallId": call_id, "toolName": "get_weather", "result": {"temp": 1}}}

    reply = {"text": "hi", "toolCalls": [call({"id": 1}), call(True), call(1)],
             "toolResults": [result({"id": 1}), result(1)]}
    # an object id is only itself (two parsed objects never ===), and true is not 1
    assert [c.status for c in read_reply("mastra", reply).tool_calls] == ["pending", "pending", "ok"]


def test_usage_counts_that_are_not_counts_are_left_out() -> None:
    # NaN (json reads it), Infinity (1e999), negatives and strings: none may reach a budget's sum.
    bad = json.loads('{"inputTokens": NaN, "outputTokens": -7, "totalTokens": 1e999, "promptTokens": "9", '
                     '"completionTokens": 4}')
    assert read_reply("mastra", {"text": "hi", "usage": bad}).usage == {"completion_tokens": 4}
    assert read_reply("ai-sdk", {"text": "hi", "totalUsage": {"inputTokens": -1}}).usage is None


def test_a_tool_result_nested_past_the_recursion_limit_is_kept_as_its_text() -> None:
    # json.loads raised RecursionError, which skipped the `except ValueError` keeping text that is not JSON
    deep = "[" * 5000 + "]" * 5000
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "1", "content": deep},
        {"role": "assistant", "content": "done"},
    ]
    [call] = read_reply("messages", messages).tool_calls
    assert call.result == deep


def test_messages_format_detects_each_shape() -> None:
    assert calls(read_reply("messages", OPENAI_MESSAGES))[2][2] == "pending"
    assert calls(read_reply("messages", {"messages": AI_SDK_UI_MESSAGES}))[1][2] == "error"
    mastra = MASTRA_REPLY["response"]["dbMessages"]
    assert calls(read_reply("messages", mastra)) == calls(read_reply("mastra", MASTRA_REPLY))


@pytest.mark.parametrize("fmt,body", [("openai", {"id": 1}), ("ai-sdk", 3), ("messages", {"text": "hi"}),
                                      ("mastra", "just text")])
def test_a_reply_in_another_shape_says_what_is_missing(fmt: str, body: Any) -> None:
    mapping = ReplyMapping(ResponseMapping(format=fmt))
    with pytest.raises(TargetError, match=f"not in the `{fmt}` format"):
        mapping.run(body)


# ---- the mapping around a format ----


def test_an_openai_shaped_call_whose_function_is_no_object_is_named() -> None:
    mapping = ReplyMapping(ResponseMapping())
    with pytest.raises(TargetError, match=r"a tool call's `function` must be an object, got 5"):
        mapping.run({"text": "hi", "tool_calls": [{"id": "c1", "function": 5}]})


def test_jmespath_fields_override_one_part_of_a_format() -> None:
    body = {**AI_SDK_RESULT, "answer": {"short": "64F"}, "meta": {"ms": 12.5, "usd": 0.001}}
    mapping = ReplyMapping(ResponseMapping(format="ai-sdk", text="answer.short", latency_ms="meta.ms",
                                           cost_usd="meta.usd"))
    run = mapping.run(body)
    assert run.texts == ["64F"] and len(run.tool_calls) == 2  # text overridden, calls from the format
    assert run.latency_ms == 12.5 and run.cost_usd == 0.001
    assert run.usage == {"prompt_tokens": 90, "completion_tokens": 30, "total_tokens": 120, "reasoning_tokens": 5}
    assert mapping.run(AI_SDK_RESULT).texts == [AI_SDK_RESULT["text"]]  # nothing at `answer.short`: the format's


def test_text_landing_on_a_message_list_is_an_error_suggesting_format() -> None:
    mapping = ReplyMapping(ResponseMapping(text="messages"))
    with pytest.raises(TargetError) as info:
        mapping.run({"messages": OPENAI_MESSAGES})
    message = str(info.value)
    assert "found a list of 5" in message and "format: messages" in message
    with pytest.raises(TargetError, match=r"found an object with keys `id`.*`choices`.*OpenAI reply.*format: openai"):
        ReplyMapping(ResponseMapping(text="reply")).run({"reply": OPENAI_COMPLETION})


def test_status_map_reads_the_agent_states() -> None:
    mapping = ReplyMapping(ResponseMapping(
        text="text",
        tool_calls="response.dbMessages[].content.parts[?type=='tool-invocation'].toolInvocation[]",
        tool_call_fields={"name": "toolName", "args": "args", "result": "result", "error": "errorText",
                          "status": {"path": "state",
                                     "map": {"result": "ok", "output-error": "error", "call": "pending"}}},
    ))
    reply = json.loads(json.dumps(MASTRA_REPLY))
    parts = reply["response"]["dbMessages"][0]["content"]["parts"]
    parts.insert(0, {"type": "tool-invocation", "toolInvocation": {
        "state": "call", "toolCallId": "c0", "toolName": "book_table", "args": {"city": "Oslo"}}})
    run = mapping.run(reply)
    assert calls(run) == [("book_table", {"city": "Oslo"}, "pending", None),
                          ("get_weather", {"city": "Atlantis"}, "error", "no weather station in Atlantis")]
    parts[0]["toolInvocation"]["state"] = "partial-call"
    with pytest.raises(TargetError, match=r"state `partial-call` is not in tool_call_fields\.status\.map"):
        mapping.run(reply)


def test_an_unmapped_status_suggests_the_map() -> None:
    mapping = ReplyMapping(ResponseMapping(tool_calls="calls", tool_call_fields={"name": "n", "status": "state"}))
    with pytest.raises(TargetError, match=r"status `output-error` is not ok, error or pending.*map"):
        mapping.run({"text": "x", "calls": [{"n": "t", "state": "output-error"}]})


def test_tool_calls_the_mapping_misses_warn_once_with_the_path() -> None:
    mapping = ReplyMapping(ResponseMapping())
    for _ in range(3):
        mapping.run(MASTRA_REPLY)
    (warning,) = mapping.warnings()
    assert "`toolCalls`" in warning and "format: mastra" in warning
    found = ReplyMapping(ResponseMapping())
    found.run({"text": "a", "tool_calls": [{"name": "t"}]})
    found.run(MASTRA_REPLY)
    assert found.warnings() == []  # some item did have calls: the mapping works


# ---- end to end through the CLI ----


class FixtureAgent(ThreadingHTTPServer):
    """Answers every POST with the reply stored for the request's `input`."""

    def __init__(self, replies: dict[str, Any]) -> None:
        self.replies = replies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                data = json.dumps(replies[body["input"]]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/agent"


@pytest.fixture
def agent() -> Iterator[FixtureAgent]:
    server = FixtureAgent({
        "ai-sdk": AI_SDK_RESULT, "ui": AI_SDK_UI_MESSAGES, "openai": OPENAI_MESSAGES, "mastra": MASTRA_REPLY,
    })
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def spec(url: str, response: dict[str, Any], inputs: list[str]) -> str:
    return json.dumps({
        "version": 1,
        "data": [{"id": i, "input": i} for i in inputs],
        "target": {"type": "http", "url": url, "response": response, "retries": {"attempts": 1}},
        "gates": [{"type": "called_tool", "tool": "get_weather"}],
        "scorers": [{"type": "no_tool_errors", "threshold": 0.5}],
    })


@pytest.mark.parametrize("fmt,item", [("ai-sdk", "ai-sdk"), ("ai-sdk", "ui"), ("openai", "openai"),
                                      ("messages", "ui"), ("mastra", "mastra")])
def test_formats_count_thrown_tools_as_tool_errors(tmp_path: Path, agent: FixtureAgent, fmt: str, item: str) -> None:
    (tmp_path / "evalgate.yaml").write_text(spec(agent.url, {"format": fmt}, [item]))
    result = run_cli("run", "-o", "out.json", cwd=tmp_path)
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["verdict"] == "scored", result.output  # no_tool_errors is 0: below its 0.5 threshold
    assert out["gate_results"][0]["score"] == 1.0
    assert out["scores"]["no_tool_errors"] == 0.0
    # a failed call: thrown (status error), or one that returned `{error}` (OpenAI's JSON reply)
    assert any(c.get("status") == "error" or "error" in (c.get("result") or {})
               for c in out["items"][0]["output"]["tool_calls"])


def test_a_tool_state_or_step_content_of_another_type_is_skipped_not_a_crash(tmp_path: Path) -> None:
    # a UI tool part whose `state` was an object ("TypeError: unhashable type: 'dict'"), or a step whose
    # `content` was a number ("TypeError: 'int' object is not iterable"), errored the item with a Python error
    odd_state = [{"role": "assistant", "parts": [
        {"type": "tool-get_weather", "toolCallId": "c0", "state": {"phase": "done"}, "input": {}},
        {"type": "tool-get_weather", "toolCallId": "c1", "state": "output-available", "input": {}, "output": 64},
        {"type": "text", "text": "64F"}]}]
    odd_step = {"text": "64F", "steps": [{"content": 5}, {"content": "abc"}, {"content": {"type": "text"}},
                                         *AI_SDK_RESULT["steps"][:1]]}
    server = FixtureAgent({"state": odd_state, "step": odd_step, "mastra-step": odd_step})
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for fmt, item, calls in (("ai-sdk", "state", 1), ("messages", "state", 1), ("ai-sdk", "step", 2),
                                 ("mastra", "mastra-step", 2)):
            (tmp_path / "evalgate.yaml").write_text(spec(server.url, {"format": fmt}, [item]))
            result = run_cli("run", "-o", "out.json", cwd=tmp_path)
            got = json.loads((tmp_path / "out.json").read_text())["items"][0]
            assert got["error"] is None, (fmt, result.output)
            assert len(got["output"]["tool_calls"]) == calls and got["gates"]["called_tool:get_weather"] == 1.0
    finally:
        server.shutdown()
        server.server_close()


def test_default_mapping_of_a_mastra_reply_warns_with_the_format_to_use(tmp_path: Path, agent: FixtureAgent) -> None:
    (tmp_path / "evalgate.yaml").write_text(spec(agent.url, {}, ["mastra"]))
    result = run_cli("run", "-o", "out.json", cwd=tmp_path)
    assert result.code == 1  # called_tool is 0: the default mapping found no calls...
    assert result.stderr.count("warning: no tool calls were found") == 1  # ...and says so, once
    assert "format: mastra" in result.stderr
    (warning,) = json.loads((tmp_path / "out.json").read_text())["summary"]["warnings"]
    assert "`toolCalls`" in warning


def test_text_pointing_at_messages_errors_every_item_instead_of_scoring_json(tmp_path: Path,
                                                                            agent: FixtureAgent) -> None:
    (tmp_path / "evalgate.yaml").write_text(spec(agent.url, {"text": "[0]", "tool_calls": None}, ["ui"]))
    result = run_cli("run", "-o", "out.json", cwd=tmp_path)
    item = json.loads((tmp_path / "out.json").read_text())["items"][0]
    assert result.code == 4 and item["output"] is None
    assert "not text" in item["error"] and "format: " in item["error"]


def test_a_mapping_that_hides_thrown_tools_warns() -> None:
    # The obvious mapping of Mastra's toolCalls: they carry no errors, so no_tool_errors would pass.
    mapping = ReplyMapping(ResponseMapping(
        tool_calls="toolCalls", tool_call_fields={"name": "payload.toolName", "args": "payload.args"}))
    run = mapping.run(MASTRA_REPLY)
    assert calls(run) == [("get_weather", {"city": "Atlantis"}, None, None)]
    (warning,) = mapping.warnings()
    assert "as successful" in warning and "format: mastra" in warning
    honest = ReplyMapping(ResponseMapping(format="mastra"))
    honest.run(MASTRA_REPLY)
    assert honest.warnings() == []


def test_a_jmespath_mapping_of_an_ai_sdk_result_that_hides_thrown_tools_warns() -> None:
    mapping = ReplyMapping(ResponseMapping(
        text="text", tool_calls="steps[].content[?type=='tool-call'][]",
        tool_call_fields={"name": "toolName", "args": "input"}))
    assert len(mapping.run(AI_SDK_RESULT).tool_calls) == 2
    (warning,) = mapping.warnings()
    assert "as successful" in warning and "format: ai-sdk" in warning


def test_a_reply_is_checked_for_failures_its_mapping_misses_as_guess_format_tells_its_format() -> None:
    # the check skips the guess for an object without the keys a Mastra or AI SDK reply is told by: every
    # reply of these tests, and each with those keys or their values added, taken or changed, is answered
    # as the guess answers it
    from evalgate.replies.formats import guess_failing_format, guess_format

    bodies: list[Any] = [AI_SDK_RESULT, AI_SDK_UI_MESSAGES, AI_SDK_MODEL_MESSAGES, OPENAI_COMPLETION,
                         OPENAI_MESSAGES, OPENAI_RESPONSE, MASTRA_REPLY, {"output": {"text": "hi"}}, {}, [], "text"]
    values = [None, [], [{"payload": {}}], [{"content": []}], {"dbMessages": []}, {"dbMessages": None}, "x"]
    for body in [*bodies]:
        if isinstance(body, dict):
            for key in ("response", "toolCalls", "steps", "choices", "messages"):
                bodies += [{**body, key: value} for value in values]
                bodies.append({k: v for k, v in body.items() if k != key})
    failing = [guess_failing_format(body) for body in bodies]
    assert failing == [g if (g := guess_format(body)) in ("mastra", "ai-sdk") else None for body in bodies]
    assert {"mastra", "ai-sdk", None} <= set(failing)


def test_response_latency_ms_is_read_when_mapped(tmp_path: Path, agent: FixtureAgent) -> None:
    agent.replies["timed"] = {"text": "It is 64F.", "timing": {"ms": 7.5}}
    agent.replies["untimed"] = {"text": "It is 64F."}
    (tmp_path / "evalgate.yaml").write_text(json.dumps({
        "version": 1, "data": [{"id": "timed", "input": "timed"}, {"id": "untimed", "input": "untimed"}],
        "target": {"type": "http", "url": agent.url, "response": {"latency_ms": "timing.ms"}},
        "scorers": [{"type": "includes", "value": "64F"}],
    }))
    assert run_cli("run", "-o", "out.json", cwd=tmp_path).code == 0
    got = {i["id"]: i["output"] for i in json.loads((tmp_path / "out.json").read_text())["items"]}
    assert got["timed"]["latency_ms"] == 7.5
    assert got["untimed"]["latency_ms"] > 0 and got["untimed"]["latency_ms"] != 7.5  # measured instead
