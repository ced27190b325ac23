"""Mastra and OpenAI message lists converted to the run format (evalgate.formats)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

import evalgate
from evalgate.replies import RunFormatError, run_from_value


def inv(state: str, name: str, call_id: str, **extra: Any) -> dict[str, Any]:
    """A Mastra tool-invocation part."""
    return {
        "type": "tool-invocation",
        "toolInvocation": {"state": state, "toolCallId": call_id, "toolName": name, **extra},
    }


def mastra(role: str, *parts: dict[str, Any], **content: Any) -> dict[str, Any]:
    return {"id": "m", "role": role, "content": {"format": 2, "parts": list(parts), **content}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def calls(value: Any) -> list[dict[str, Any]]:
    return [c.to_dict() for c in run_from_value(value).tool_calls]


# ---- Mastra ----


def test_mastra_every_tool_state() -> None:
    messages = [
        {"role": "user", "content": "Weather in Paris and save it"},
        mastra(
            "assistant",
            text("Checking."),
            inv("result", "get_weather", "c1", args={"city": "Paris"}, result={"temp": 64}),
            inv("output-error", "save", "c2", args={"v": 1}, errorText="disk full"),
            inv("result", "notify", "c3", args={}, result={"sent": False}, isError=True),
            inv("result", "lookup", "c4", args={"q": "x"}, result={"error": "not found"}),
            inv("call", "slow_tool", "c5", args={"n": 2}),
            inv("partial-call", "half_tool", "c6", args={}),
            text("Done: 64F."),
        ),
    ]
    assert calls(messages) == [
        {"name": "get_weather", "args": {"city": "Paris"}, "result": {"temp": 64}, "status": "ok"},
        {"name": "save", "args": {"v": 1}, "error": "disk full", "status": "error"},
        {"name": "notify", "args": {}, "result": {"sent": False}, "error": '{"sent": false}', "status": "error"},
        {
            "name": "lookup",
            "args": {"q": "x"},
            "result": {"error": "not found"},
            "status": "ok",  # it returned (Mastra's trajectory: success); noToolErrors flags it
        },
        {"name": "slow_tool", "args": {"n": 2}, "status": "pending"},
    ]


def test_mastra_is_error_prefers_error_text() -> None:
    messages = [
        mastra("assistant", inv("result", "t", "c", args={}, result="boom", isError=True, errorText="bad input"))
    ]
    assert calls(messages)[0]["error"] == "bad input"


def test_mastra_text_is_the_last_text_part_one_per_assistant_message() -> None:
    # Mastra's getTextContentFromMastraDBMessage: the last text part; `content.content` first.
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        mastra("assistant", text("Let me"), text("check.")),
        mastra("assistant", inv("result", "t", "c", args={}, result=1)),  # no text: an empty text
        mastra("assistant", text("ignored"), content="It is sunny."),
        {"role": "assistant", "content": "Anything else?"},
    ]
    run = run_from_value(messages)
    assert run.texts == ["check.", "", "It is sunny.", "Anything else?"]
    assert run.text == "check.  It is sunny. Anything else?"
    assert run.joined_text == "check.It is sunny.Anything else?"


def test_mastra_legacy_tool_invocations_merge_with_parts() -> None:
    legacy = [
        {"state": "result", "toolCallId": "a", "toolName": "first", "args": {}, "result": 1},
        {"state": "call", "toolCallId": "b", "toolName": "second", "args": {}},
        {"state": "result", "toolCallId": "z", "toolName": "legacy_only", "args": {}, "result": 3},
    ]
    # The part for `b` holds its real terminal state and wins over the legacy `call`.
    messages = [
        mastra("assistant", inv("output-error", "second", "b", args={}, errorText="threw"), toolInvocations=legacy)
    ]
    assert [(c["name"], c["status"]) for c in calls(messages)] == [
        ("first", "ok"),
        ("second", "error"),
        ("legacy_only", "ok"),
    ]


def test_mastra_envelope_carries_measurements() -> None:
    run = run_from_value(
        {"messages": [mastra("assistant", text("ok"))], "latency_ms": 12, "usage": {"total_tokens": 5}}
    )
    assert (run.text, run.latency_ms, run.usage) == ("ok", 12, {"total_tokens": 5})


# ---- OpenAI ----


def openai_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


OPENAI = [
    {"role": "system", "content": "You are a weather bot."},
    {"role": "user", "content": "Weather in Oslo and Lima?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            openai_call("call_1", "get_weather", '{"city": "Oslo"}'),
            openai_call("call_2", "get_weather", '{"city": "Lima"}'),
            openai_call("call_3", "get_alerts", '{"region": "EU"}'),
            openai_call("call_4", "translate", "not json"),
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 41}'},
    {"role": "tool", "tool_call_id": "call_2", "content": '{"error": "rate limited"}'},
    {"role": "tool", "tool_call_id": "call_4", "content": "tool crashed", "is_error": True},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "Oslo: 41F. "}, {"type": "text", "text": "Lima: unknown."}],
    },
]


def test_openai_calls_paired_by_id_with_errors_and_pending() -> None:
    assert calls(OPENAI) == [
        {"name": "get_weather", "args": {"city": "Oslo"}, "result": {"temp": 41}, "status": "ok"},
        {
            "name": "get_weather",
            "args": {"city": "Lima"},
            "result": {"error": "rate limited"},
            "status": "ok",  # it returned; ToolCall.failed flags its `error` field
        },
        {"name": "get_alerts", "args": {"region": "EU"}, "status": "pending"},
        {"name": "translate", "args": "not json", "error": "tool crashed", "status": "error"},
    ]


def test_openai_texts_one_per_assistant_message() -> None:
    run = run_from_value(OPENAI)
    assert run.texts == ["", "Oslo: 41F. Lima: unknown."]


def test_openai_plain_text_tool_result_is_kept_as_text() -> None:
    messages = [
        {"role": "assistant", "content": "", "tool_calls": [openai_call("x", "echo", "{}")]},
        {"role": "tool", "tool_call_id": "x", "content": "hello"},
    ]
    assert calls(messages) == [{"name": "echo", "args": {}, "result": "hello", "status": "ok"}]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([{"content": "no role"}], "messages[0] must be a mapping with a string `role`"),
        ([{"role": "assistant", "tool_calls": [{"id": "a", "function": {}}]}], "function.name"),
        ({"messages": [], "extra": 1}, "unknown key(s) ['extra']"),
        ({"messages": "nope"}, "`messages` must be a list"),
        ([{"role": "assistant", "content": 3, "tool_calls": []}], "content must be a string"),
        ({"text": "a", "txet": "b"}, "unknown run key(s) ['txet']; a run has ['agent_output', 'cost_usd', "),
        ({"text": "a", 3: "b", "zz": 1}, "unknown run key(s) ['3', 'zz']"),  # YAML allows a number as a key
        ({"tool_calls": [{"name": "f", "arguments": {}}]}, "tool_calls[0] has unknown key(s) ['arguments']"),
        ({"tool_calls": [{"name": "f"}, {"name": "g", None: 1}]}, "tool_calls[1] has unknown key(s) ['None']"),
    ],
)
def test_malformed_message_lists_are_run_format_errors(value: Any, message: str) -> None:
    with pytest.raises(RunFormatError, match=None) as caught:
        run_from_value(value)
    assert message in str(caught.value)



@pytest.mark.parametrize("calls", ["{}", "false", "0", '""'])
def test_tool_calls_that_are_no_list_are_a_data_error_even_when_falsy(tmp_path: Path, calls: str) -> None:
    # `tool_calls: {}` (a call not wrapped in a list, emptied) was read as no calls: `called_tool`
    # failed with nothing saying the recorded run was malformed, while `tool_calls: "f"` was refused
    bad = f'{{"id": "a", "input": "q", "output": {{"text": "x", "tool_calls": {calls}}}}}'
    good = '{"id": "b", "input": "q", "output": {"text": "x", "tool_calls": null}}'
    (tmp_path / "data.jsonl").write_text(f"{bad}\n{good}\n")
    spec = tmp_path / "evalgate.yaml"
    spec.write_text("version: 1\ndata: data.jsonl\ngates:\n  - type: used_no_tools\n")
    result = run_cli("validate", spec)
    assert result.code == 2, result.output
    assert "data.jsonl:1: item 1: `tool_calls` must be a list, got a" in result.stderr
    assert "data.jsonl:2" not in result.stderr  # null: no calls, as before


# ---- through the public API and the CLI ----


def test_run_evals_scores_a_recorded_openai_trace() -> None:
    result = evalgate.run_evals(
        data=[{"input": "Oslo and Lima?", "output": OPENAI}],
        gates=[evalgate.checks.called_tool("get_weather", times=2)],
        scorers=[evalgate.checks.no_tool_errors(), evalgate.checks.includes("Oslo: 41F")],
    )
    assert result.verdict == "passed"
    assert result.scores == {"no_tool_errors": 0.0, "includes:Oslo: 41F": 1.0}


def test_python_target_may_return_a_message_list() -> None:
    def agent(question: str) -> list[dict[str, Any]]:
        return [mastra("assistant", inv("call", "get_weather", "c", args={"city": question}), text("one moment"))]

    result = evalgate.run_evals(
        data=[{"input": "Paris"}],
        target=agent,
        gates=[evalgate.checks.no_tool_errors()],
        scorers=[evalgate.checks.includes("moment")],
    )
    assert result.verdict == "failed"  # the call never got a result: pending counts as a tool error
    assert result.items[0].run is not None and result.items[0].run.tool_calls[0].status == "pending"


def test_spec_with_mastra_outputs_and_a_bad_one_names_the_line(tmp_path: Path) -> None:
    good = [
        mastra("assistant", inv("result", "get_weather", "c", args={"city": "Rome"}, result={"t": 70}), text("70F"))
    ]
    (tmp_path / "data.jsonl").write_text(
        json.dumps({"input": "Rome?", "output": good})
        + "\n"
        + json.dumps({"input": "Bad?", "output": [{"content": "no role"}]})
        + "\n",
        encoding="utf-8",
    )
    spec = tmp_path / "evalgate.yaml"
    spec.write_text("version: 1\ndata: data.jsonl\ngates:\n  - type: called_tool\n    tool: get_weather\n")
    bad = run_cli("run", spec)
    assert bad.code == 2, bad.output
    assert "data.jsonl" in bad.output and ":2" in bad.output and "role" in bad.output
    (tmp_path / "data.jsonl").write_text(json.dumps({"input": "Rome?", "output": good}) + "\n", encoding="utf-8")
    out = tmp_path / "results.json"
    ok = run_cli("run", spec, "--output", out)
    assert ok.code == 0, ok.output
    results = json.loads(out.read_text())
    assert results["verdict"] == "passed"
    assert results["items"][0]["output"]["tool_calls"][0]["result"] == {"t": 70}


@pytest.mark.parametrize(
    "value", [{"text": "x", "latency_ms": 5}, {"latency_ms": 5}, {"text": "x", "tool_calls": [], "latency_ms": 5}]
)
def test_run_format_keeps_a_measurement_next_to_the_text(value: dict[str, Any]) -> None:
    assert run_from_value(value).latency_ms == 5


@pytest.mark.parametrize(
    ("call", "failed", "succeeded"),
    [
        ({"name": "t", "error": 0}, False, True),  # falsy in JavaScript: no error
        ({"name": "t", "error": float("nan")}, False, True),
        ({"name": "t", "error": False}, False, True),
        ({"name": "t", "error": {}}, True, False),  # an empty object is truthy
        ({"name": "t", "result": {"error": "not found"}}, True, True),  # noToolErrors flags it; it returned
        ({"name": "t", "result": {"error": 0}}, False, True),
        ({"name": "t", "result": {"error": []}}, True, True),
    ],
)
def test_run_format_errors_are_truthy_as_in_javascript(call: dict[str, Any], failed: bool, succeeded: bool) -> None:
    (tool_call,) = run_from_value({"text": "x", "tool_calls": [call]}).tool_calls
    assert (tool_call.failed, tool_call.succeeded) == (failed, succeeded)


def test_mastra_invocations_that_are_no_calls_keep_their_errors() -> None:
    messages = [
        mastra(
            "assistant",
            {"type": "tool-invocation", "toolInvocation": {"state": "call", "toolCallId": "c1", "args": {}}},
            inv("partial-call", "half", "c2", args={}, isError=True, errorText="cut off"),
            inv("partial-call", "fine", "c3", args={}),
            inv("approval-requested", "pay", "c4", args={}, result={"error": "denied"}),
            inv("result", "t", "c5", args={}, result=1),
        )
    ]
    run = run_from_value(messages)
    assert [c.name for c in run.tool_calls] == ["t"]
    assert run.uncounted_tool_errors == [
        "a tool with no name (state call): no result",
        "tool half (state partial-call): cut off",
        "tool pay (state approval-requested): denied",
    ]
    # written to the results and read back (--resume) the same
    again = run_from_value(run.to_dict())
    assert again.uncounted_tool_errors == run.uncounted_tool_errors
    assert [c.to_dict() for c in again.tool_calls] == [c.to_dict() for c in run.tool_calls]


def test_mastra_tool_name_that_is_no_string_is_kept_when_truthy() -> None:
    messages = [mastra("assistant", *(inv("result", n, f"c{i}", args={}, result=1)  # type: ignore[arg-type]
                                      for i, n in enumerate([7, True, 0, False, "", "t"])))]
    run = run_from_value(messages)
    assert [c.name for c in run.tool_calls] == [7, True, "t"]
    assert [c.name for c in run_from_value(run.to_dict()).tool_calls] == [7, True, "t"]
    with pytest.raises(RunFormatError, match="non-empty string `name`"):
        run_from_value({"text": "x", "tool_calls": [{"name": 0}]})


@pytest.mark.parametrize("state", [[], {}, ["result"], {"s": "result"}])
def test_a_mastra_state_that_is_an_object_or_a_list_is_no_call(tmp_path: Path, state: Any) -> None:
    # Looked up in a set of the counted states, it raised "TypeError: unhashable type" (exit 3)
    messages = [mastra("assistant", inv(state, "get_weather", "c1", args={}, result={"error": "x"}),
                       inv("result", "get_weather", "c2", args={}, result=1), text("done"))]
    (tmp_path / "data.jsonl").write_text(json.dumps({"input": "q", "output": messages}) + "\n", encoding="utf-8")
    spec = tmp_path / "evalgate.yaml"
    spec.write_text("version: 1\ndata: data.jsonl\ngates:\n  - type: called_tool\n    tool: get_weather\n"
                    "    times: 2\n")
    result = run_cli("run", spec, "--output", tmp_path / "r.json")
    assert result.code == 1, result.output  # one call counted, as Mastra counts it: `times: 2` fails
    output = json.loads((tmp_path / "r.json").read_text())["items"][0]["output"]
    assert [c["args"] for c in output["tool_calls"]] == [{}]
    assert output["uncounted_tool_errors"] == [f"tool get_weather (state {json.dumps(state)}): x"]


def test_faithfulness_evidence_is_the_assistant_messages_legacy_invocations() -> None:
    # Mastra's faithfulness reads only `content.toolInvocations` of assistant messages (not parts).
    legacy = {"state": "result", "toolCallId": "c2", "toolName": "b", "args": {}, "result": 2}
    messages = [
        mastra("user", toolInvocations=[{"state": "result", "toolName": "u", "result": 0}]),
        mastra("assistant", inv("result", "a", "c1", args={}, result=1), toolInvocations=[legacy]),
        mastra("assistant", text("done")),
    ]
    run = run_from_value(messages)
    assert [c.name for c in run.tool_calls] == ["u", "a", "b"]
    assert run.legacy_tool_invocations == [legacy]
    # a conversation: a run-format turn gives its returned calls, as the harness writes them
    recorded = run_from_value({"text": "x", "tool_calls": [{"name": "c", "args": {}, "result": 3},
                                                           {"name": "d", "status": "pending"}]})
    whole = evalgate.replies.conversation([run, recorded])
    assert whole.legacy_tool_invocations == [legacy, {"state": "result", "toolName": "c", "args": {}, "result": 3}]
    assert evalgate.replies.conversation([recorded, recorded]).legacy_tool_invocations is None


def test_faithfulness_evidence_survives_the_results_file() -> None:
    """A results file or journal read back as a recorded run (a resumed rescore, a replay) gives
    faithfulness the same evidence as the live run: the legacy invocations are written and read."""
    from evalgate.scorers.judged import faithfulness_tool_results

    legacy = [{"state": "result", "toolCallId": "c2", "toolName": "b", "args": {}, "result": 2},
              {"state": "result", "toolCallId": "c3", "args": {}, "result": "unnamed"}]
    run = run_from_value([mastra("assistant", inv("result", "a", "c1", args={}, result=1), toolInvocations=legacy)])
    written = json.loads(json.dumps(run.to_dict()))
    assert written["legacy_tool_invocations"] == legacy
    again = run_from_value(written)
    assert again.legacy_tool_invocations == legacy
    assert faithfulness_tool_results(again) == faithfulness_tool_results(run) != ""
    assert "legacy_tool_invocations" not in run_from_value({"text": "x", "tool_calls": []}).to_dict()
    with pytest.raises(RunFormatError, match="`legacy_tool_invocations` must be a list"):
        run_from_value({"text": "x", "legacy_tool_invocations": {"state": "result"}})


def test_what_mastras_summarization_reads_of_messages_survives_results_and_turns() -> None:
    """Mastra's summarization trims each assistant text of an agent's output (getSummary), and throws on one that
    is no string; a list that is no agent's output (a message without a string `id`, `content` or `createdAt`)
    it reads as its other LLM scorers do. The run keeps both, through the results (a resumed rescore) and in a
    conversation (the turns' messages as one list)."""
    five = {"type": "text", "text": 5}
    run = run_from_value([mastra("assistant", five) | {"createdAt": 0}])
    assert run.agent_output and run.texts == ["5"]
    assert run.unreadable["agent_responses"].startswith("messages[0].content.parts[0].text is the number 5, not a")
    again = run_from_value(json.loads(json.dumps(run.to_dict())))
    assert again.unreadable == run.unreadable and again.agent_output
    other = run_from_value([mastra("assistant", five)])
    assert not other.agent_output and not other.unreadable
    written = json.loads(json.dumps(other.to_dict()))
    assert written["agent_output"] is False and run_from_value(written).agent_output is False
    assert "agent_output" not in run_from_value("x").to_dict()
    with pytest.raises(RunFormatError, match="`agent_output` must be true or false"):
        run_from_value({"text": "x", "agent_output": 0})
    whole = evalgate.replies.conversation([run_from_value("ok"), run])
    assert whole.agent_output and whole.unreadable["agent_responses"].startswith("turn 2: messages[0].")
    mixed = evalgate.replies.conversation([other, run])
    assert not mixed.agent_output and not mixed.unreadable


def test_messages_mastra_cannot_read_stay_unreadable_through_results_turns_and_replies(tmp_path: Path) -> None:
    """Where Mastra's readers throw (`parts: {}`), the run says so: written to the results and read back
    (a resumed rescore), in a conversation, and in a Mastra server reply, the same checks error."""
    from evalgate.replies.formats import read_reply

    bad = [mastra("assistant", text("hi"), toolInvocations={"state": "result"})]
    run = run_from_value(bad)
    assert run.texts == ["hi"] and list(run.unreadable) == ["tool_calls"]
    assert "messages[0].content.toolInvocations is an object, not a list" in run.unreadable["tool_calls"]
    again = run_from_value(json.loads(json.dumps(run.to_dict())))
    assert again.unreadable == run.unreadable
    with pytest.raises(RunFormatError, match="`unreadable` must map"):
        run_from_value({"text": "x", "unreadable": {"texts": "?"}})
    whole = evalgate.replies.conversation([run_from_value("ok"), run])
    assert whole.unreadable["tool_calls"].startswith("turn 2: messages[0].")
    reply = read_reply("mastra", {"text": "hi", "response": {"dbMessages": bad}})
    assert reply.unreadable == run.unreadable
    # through the API: the scorer errors (no number), the gate scores 0 with the reason, the text check scores
    result = evalgate.run_evals(data=[{"input": "q", "output": bad}], gates=[evalgate.checks.used_no_tools()],
                               scorers=[evalgate.checks.called_tool("t"), evalgate.checks.includes("hi")])
    item = result.items[0]
    assert item.gates == {"used_no_tools": 0.0} and "content.toolInvocations" in item.reasons["used_no_tools"]
    assert item.scores == {"includes:hi": 1.0} and "content.toolInvocations" in item.scorer_errors["called_tool:t"]


_MEASURED_VALUES: dict[str, list[Any]] = {
    "text": ["hi", "", None, 3], "texts": [["a", "b"], [], "x"],
    "tool_calls": [[], None, [{"name": "f", "args": {"a": 1}}], {}, [{"name": ""}]],
    "latency_ms": [None, 2.5, float("nan"), True, "3", 10**400], "usage": [None, {"tokens": 1}, [], {"b": 10**400}],
    "cost_usd": [None, 0.5, "x", False],
}


def _read(value: dict[str, Any]) -> tuple[str, str]:
    try:
        return "run", repr(run_from_value(value))
    except RunFormatError as exc:
        return "error", str(exc)


@pytest.mark.parametrize("key", sorted(_MEASURED_VALUES))
def test_a_reply_of_text_calls_and_measures_reads_as_the_full_reader_reads_it(key: str) -> None:
    """An HTTP target's reply (text, tool calls, usage, latency, cost) takes a shortcut past the checks of the
    run's other keys: it reads as the same run, or fails with the same message, as with one of those keys
    set to its empty value (which takes the full reader)."""
    others = [k for k in _MEASURED_VALUES if k != key]
    for value_of_key in _MEASURED_VALUES[key]:
        for other in others:
            for value_of_other in _MEASURED_VALUES[other]:
                value = {key: value_of_key, other: value_of_other}
                assert _read(value) == _read({**value, "steps": None}), value
                with_text = {"text": "t", **value}
                assert _read(with_text) == _read({**with_text, "result": None}), with_text
