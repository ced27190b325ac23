"""Whole agent replies read as runs: Mastra, OpenAI and AI SDK shapes, and message lists. Pure, no I/O.

- `mastra`: the JSON of `agent.generate()` as Mastra's server returns it (`POST /api/agents/{id}/generate`).
  The run is read from `response.dbMessages`, the messages Mastra persists and its scorers read, with
  the rules of `evalgate.replies.messages` (so every check scores as Mastra's `runEvals` would). Without them,
  from `text` and the steps' content parts. Usage from `totalUsage` (else `usage`).
- `openai`: a Chat Completions reply (`choices[0].message`: text and the tool calls the model asked
  for, which nothing ran, so they carry no status), a Responses API reply (`output` items), or a
  chat message list (calls paired with `tool` messages; unanswered calls are pending).
- `ai-sdk`: the JSON of the AI SDK's `generateText()` result (`steps[].content` or `content` parts:
  `tool-call`, `tool-result`, `tool-error`; else `toolCalls`/`toolResults`; else `response.messages`),
  or a list of UI messages (`parts` of type `tool-<name>` or `dynamic-tool` with a `state`).
- `messages`: a message list, bare or as `{messages: [...]}`, in any of these shapes (detected).

Usage is normalized to `prompt_tokens`, `completion_tokens`, `total_tokens` (plus `reasoning_tokens`
and `cached_tokens` when the reply has them).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from evalgate.replies.messages import (
    error_text,
    parse_json,
    run_from_mastra_messages,
    run_from_messages,
    run_from_openai_messages,
)
from evalgate.replies.model import Run, RunFormatError, ToolCall, name_key

FORMATS = ("mastra", "openai", "ai-sdk", "messages")

_USAGE_KEYS = {
    "inputTokens": "prompt_tokens",
    "outputTokens": "completion_tokens",
    "totalTokens": "total_tokens",
    "reasoningTokens": "reasoning_tokens",
    "cachedInputTokens": "cached_tokens",
    "promptTokens": "prompt_tokens",
    "completionTokens": "completion_tokens",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
    "total_tokens": "total_tokens",
    "input_tokens": "prompt_tokens",
    "output_tokens": "completion_tokens",
}


def read_reply(format_name: str, body: Any) -> Run:
    """The run in a reply of the given format; RunFormatError saying what did not fit."""
    return _READERS[format_name](body)


# ---- usage ----


def measure(value: Any) -> int | float | None:
    """A finite, non-negative number, else None. A reply's token counts, cost and latency are the
    agent's word: a NaN, an Infinity (`1e999`) or a negative would poison every sum and budget."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        if not math.isfinite(value) or value < 0:
            return None
    except OverflowError:  # an integer past the largest float (`1` and 400 zeros): as unusable as 1e999
        return None
    return value


def usage_as_sent(usage: Any) -> dict[str, Any] | None:
    """A reply's usage kept as it is, less the counts that are not `measure`s (a token count sent as
    "100", a NaN, a negative); None if it is not a mapping or nothing is left."""
    if not isinstance(usage, Mapping):
        return None
    out = {}
    for key, value in usage.items():
        if key in _USAGE_KEYS or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            value = measure(value)
            if value is None:
                continue
        out[key] = value
    return out or None


def checked_measures(run: Run) -> Run:
    """The run with a cost, latency or usage count that is not a `measure` left out (a run a command or
    a function returned: its numbers are the agent's word too)."""
    run.cost_usd = measure(run.cost_usd)
    latency = measure(run.latency_ms)
    run.latency_ms = float(latency) if latency is not None else None
    if run.usage is not None:
        run.usage = usage_as_sent(run.usage)
    return run


def normalize_usage(usage: Any) -> dict[str, Any] | None:
    """Token counts under evalgate's names; None if there are none."""
    if not isinstance(usage, Mapping):
        return None
    out: dict[str, Any] = {}
    for key, name in _USAGE_KEYS.items():
        value = measure(usage.get(key))
        if value is not None and name not in out:
            out[name] = value
    if "total_tokens" not in out and "prompt_tokens" in out and "completion_tokens" in out:
        out["total_tokens"] = out["prompt_tokens"] + out["completion_tokens"]
    return out or None


# ---- Mastra ----


def read_mastra(body: Any) -> Run:
    if isinstance(body, list):
        return run_from_mastra_messages(body)
    if not isinstance(body, Mapping):
        raise RunFormatError(f"a Mastra reply is an object, got {_kind(body)}")
    response = body.get("response")
    db_messages = response.get("dbMessages") if isinstance(response, Mapping) else None
    if isinstance(db_messages, list):
        run = run_from_mastra_messages(db_messages)
    elif _has_steps(body):
        run = _from_content_parts(_step_parts(body), body.get("text"))
    elif isinstance(body.get("messages"), list):
        run = run_from_mastra_messages(body["messages"])
    elif isinstance(body.get("text"), str):
        run = Run(texts=[body["text"]], tool_calls=_from_call_lists(body))
    else:
        raise RunFormatError(
            "not a Mastra generate() reply: no `response.dbMessages`, `steps`, `messages` or `text`"
        )
    run.usage = normalize_usage(body.get("totalUsage")) or normalize_usage(body.get("usage"))
    return run


# ---- OpenAI ----


def read_openai(body: Any) -> Run:
    if isinstance(body, list):
        return run_from_openai_messages(body)
    if not isinstance(body, Mapping):
        raise RunFormatError(f"an OpenAI reply is an object, got {_kind(body)}")
    if isinstance(body.get("choices"), list):
        return run_from_chat_completion(body)
    if isinstance(body.get("output"), list):
        return _from_responses_api(body)
    if isinstance(body.get("messages"), list):
        run = run_from_openai_messages(body["messages"])
        run.usage = normalize_usage(body.get("usage"))
        return run
    raise RunFormatError("not an OpenAI reply: no `choices`, `output` or `messages`")


def run_from_chat_completion(body: Mapping[str, Any]) -> Run:
    """A Chat Completions reply: the first choice's text and requested tool calls, and usage."""
    if body.get("error"):
        raise RunFormatError(f"the endpoint answered with an error: {_short(body['error'])}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise RunFormatError("the reply has no choices")
    message = choices[0].get("message") or {}
    if not isinstance(message, Mapping):
        raise RunFormatError("choices[0].message must be an object")
    content = message.get("content")
    if isinstance(content, list):  # content parts; one whose `text` is no string adds none, as in messages
        content = "".join(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    calls = []
    for raw in message.get("tool_calls") or []:
        if not isinstance(raw, Mapping):
            continue
        function = raw_function if isinstance(raw_function := raw.get("function"), Mapping) else {}
        name = function.get("name") or raw.get("name") or "?"
        calls.append(ToolCall(str(name), parse_arguments(function.get("arguments", raw.get("arguments")))))
    return Run(
        texts=[content if isinstance(content, str) else ""],
        tool_calls=calls,
        usage=usage_as_sent(body.get("usage")),
    )


def parse_arguments(arguments: Any) -> Any:
    """OpenAI sends tool arguments as a JSON string; keep the string if it is not JSON (or nests too deeply)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return arguments
    return arguments


def _from_responses_api(body: Mapping[str, Any]) -> Run:
    texts: list[str] = []
    calls: list[ToolCall] = []
    outputs = {
        o.get("call_id"): o.get("output")
        for o in body["output"]
        if isinstance(o, Mapping) and o.get("type") == "function_call_output"
    }
    for item in body["output"]:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "message" and item.get("role", "assistant") == "assistant":
            parts = raw_content if isinstance(raw_content := item.get("content"), list) else []
            texts.append("".join(p.get("text", "") for p in parts if isinstance(p, Mapping)
                                 and p.get("type") in ("output_text", "text") and isinstance(p.get("text"), str)))
        elif item.get("type") == "function_call" and isinstance(item.get("name"), str):
            args = parse_arguments(item.get("arguments"))
            if item.get("call_id") in outputs:
                calls.append(_with_result(item["name"], args, parse_json(outputs[item["call_id"]])))
            else:
                calls.append(ToolCall(item["name"], args))
    return Run(texts=texts or [""], tool_calls=calls, usage=normalize_usage(body.get("usage")))


# ---- AI SDK ----


def read_ai_sdk(body: Any) -> Run:
    if isinstance(body, list):
        return _from_ai_sdk_messages(body)
    if not isinstance(body, Mapping):
        raise RunFormatError(f"an AI SDK reply is an object, got {_kind(body)}")
    text = body.get("text")
    if _has_steps(body):
        run = _from_content_parts(_step_parts(body), text)
    elif isinstance(body.get("content"), list):
        run = _from_content_parts(body["content"], text)
    elif isinstance(body.get("toolCalls"), list):
        run = Run(texts=[text if isinstance(text, str) else ""], tool_calls=_from_call_lists(body))
    elif isinstance(body.get("response"), Mapping) and isinstance(body["response"].get("messages"), list):
        run = _from_ai_sdk_messages(body["response"]["messages"])
        if isinstance(text, str):
            run.texts = [text]
    elif isinstance(body.get("messages"), list):
        run = _from_ai_sdk_messages(body["messages"])
    elif isinstance(text, str):
        run = Run(texts=[text])
    else:
        raise RunFormatError("not an AI SDK generateText() reply: no `text`, `steps`, `content` or `toolCalls`")
    run.usage = normalize_usage(body.get("totalUsage")) or normalize_usage(body.get("usage"))
    return run


def _has_steps(body: Mapping[str, Any]) -> bool:
    steps = body.get("steps")
    return isinstance(steps, list) and any(isinstance(s, Mapping) and isinstance(s.get("content"), list) for s in steps)


def _step_parts(body: Mapping[str, Any]) -> list[Any]:
    # a step whose content is no list (a number, a string) holds no parts, as a step that is no object
    return [p for s in body["steps"] if isinstance(s, Mapping) and isinstance(s.get("content"), list)
            for p in s["content"] if p is not None]


def _from_content_parts(parts: Sequence[Any], text: Any) -> Run:
    """Content parts of generateText() (`tool-call`, `tool-result`, `tool-error`, `text`), in order."""
    order: list[str] = []
    calls: dict[str, dict[str, Any]] = {}
    texts: list[str] = []
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        call_id = str(part.get("toolCallId", len(order)))
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind in ("tool-call", "tool-result", "tool-error") and isinstance(part.get("toolName"), str):
            if call_id not in calls:
                order.append(call_id)
                calls[call_id] = {"name": part["toolName"], "args": _args(part)}
            call = calls[call_id]
            if kind == "tool-result":
                call["output"] = part.get("output", part.get("result"))
                call["done"] = True
            elif kind == "tool-error":
                error = part.get("error")  # a thrown Error serializes as {}
                call["error"] = (error_text(error) if error != {} else None) or "the tool threw"
                call["done"] = True
    run_calls = [_content_call(calls[i]) for i in order]
    final = text if isinstance(text, str) else (texts[-1] if texts else "")
    return Run(texts=[final], tool_calls=run_calls)


def _args(part: Mapping[str, Any]) -> Any:
    value = part.get("input", part.get("args"))
    return parse_arguments(value) if isinstance(value, str) else value


def _content_call(call: Mapping[str, Any]) -> ToolCall:
    if "error" in call:
        return ToolCall(call["name"], call["args"], error=call["error"], status="error")
    if not call.get("done"):
        return ToolCall(call["name"], call["args"], status="pending")
    return _with_output(call["name"], call["args"], call.get("output"))


def _with_output(name: str, args: Any, output: Any) -> ToolCall:
    """A result that may be a model-message output (`{type: json|text|error-text|error-json, value}`)."""
    if isinstance(output, Mapping) and isinstance(output.get("type"), str) and "value" in output \
            and set(output) <= {"type", "value", "providerOptions"}:
        if output["type"].startswith("error"):
            return ToolCall(name, args, error=error_text(output["value"]) or "the tool threw", status="error")
        if output["type"] in ("json", "text", "content"):
            output = output["value"]
    return _with_result(name, args, output)


def _with_result(name: str, args: Any, result: Any) -> ToolCall:
    # A result with an `error` field returned (Mastra's `result.error`): ToolCall.failed flags it.
    return ToolCall(name, args, result, status="ok")


def _from_call_lists(body: Mapping[str, Any]) -> list[ToolCall]:
    """`toolCalls` paired with `toolResults` by id (Mastra nests both under `payload`)."""
    def fields(raw: Any) -> Mapping[str, Any]:
        if not isinstance(raw, Mapping):
            return {}
        return raw["payload"] if isinstance(raw.get("payload"), Mapping) else raw

    lists = {}
    for key in ("toolResults", "toolCalls"):
        value = body.get(key) or []
        if not isinstance(value, list):
            raise RunFormatError(f"`{key}` must be a list, got {_kind(value)}")
        lists[key] = value
    results = {}
    for raw in lists["toolResults"]:
        entry = fields(raw)
        if entry.get("toolCallId") is not None:
            results[name_key(entry["toolCallId"])] = entry  # ids compared as JavaScript compares them
    calls = []
    for raw in lists["toolCalls"]:
        entry = fields(raw)
        if not isinstance(entry.get("toolName"), str):
            continue
        args = _args(entry)
        found = results.get(name_key(entry.get("toolCallId")))
        if found is None:
            calls.append(ToolCall(entry["toolName"], args, status="pending"))
        elif found.get("isError") is True or found.get("type") == "tool-error" or "error" in found:
            message = error_text(found.get("error")) or error_text(found.get("result")) or "the tool threw"
            calls.append(ToolCall(entry["toolName"], args, error=message, status="error"))
        else:
            calls.append(_with_output(entry["toolName"], args, found.get("output", found.get("result"))))
    return calls


# AI SDK UI message tool states: what counts as a call, and its status.
_UI_STATES = {"output-available": "ok", "output-error": "error", "input-available": "pending"}


def _from_ai_sdk_messages(messages: Any) -> Run:
    """AI SDK UI messages (`parts`) or model messages (`content` parts, `tool` role results)."""
    if not isinstance(messages, list):
        raise RunFormatError("`messages` must be a list of messages")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise RunFormatError(f"messages[{index}] must be a mapping with a string `role`")
    if any(isinstance(m.get("parts"), list) for m in messages):
        return _from_ui_messages(messages)
    parts: list[Any] = []
    texts: list[str] = []
    for message in messages:
        content = message.get("content")
        if message["role"] == "assistant":
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts.append("".join(p["text"] for p in content if isinstance(p, Mapping)
                                     and p.get("type") == "text" and isinstance(p.get("text"), str)))
        if isinstance(content, list) and message["role"] in ("assistant", "tool"):
            parts += [p for p in content if isinstance(p, Mapping) and p.get("type") != "text"]
    run = _from_content_parts(parts, None)
    run.texts = texts
    return run


def _from_ui_messages(messages: Sequence[Mapping[str, Any]]) -> Run:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for message in messages:
        parts = raw_parts if isinstance(raw_parts := message.get("parts"), list) else []
        if message["role"] == "assistant":
            texts.append("".join(p["text"] for p in parts if isinstance(p, Mapping)
                                 and p.get("type") == "text" and isinstance(p.get("text"), str)))
        for part in parts:
            if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
                continue
            kind = part["type"]
            if kind == "dynamic-tool":
                name = part.get("toolName")
            elif kind.startswith("tool-") and kind != "tool-invocation":
                name = kind.removeprefix("tool-")
            else:
                continue
            state = part.get("state")
            status = _UI_STATES.get(state) if isinstance(state, str) else None
            if not isinstance(name, str) or not name or status is None:
                continue  # streaming input and approval states are not calls yet
            args = part.get("input")
            if status == "pending":
                calls.append(ToolCall(name, args, status="pending"))
            elif status == "error":
                calls.append(ToolCall(name, args, error=error_text(part.get("errorText")) or "the tool threw",
                                      status="error"))
            else:
                calls.append(_with_result(name, args, part.get("output")))
    return Run(texts=texts, tool_calls=calls)


# ---- message lists of any of these shapes ----


def read_messages(body: Any) -> Run:
    messages = body.get("messages") if isinstance(body, Mapping) else body
    if not isinstance(messages, list):
        raise RunFormatError(
            f"format: messages reads a message list or `{{messages: [...]}}`, got {_kind(body)}"
        )
    run = _from_ai_sdk_messages(messages) if _looks_ai_sdk(messages) else run_from_messages(messages)
    if isinstance(body, Mapping):
        run.usage = normalize_usage(body.get("usage"))
    return run


def _looks_ai_sdk(messages: Sequence[Any]) -> bool:
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        parts = message.get("parts")
        if isinstance(parts, list) and any(
            isinstance(p, Mapping) and isinstance(p.get("type"), str)
            and (p["type"] == "dynamic-tool" or (p["type"].startswith("tool-") and p["type"] != "tool-invocation"))
            for p in parts
        ):
            return True
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(p, Mapping) and p.get("type") in ("tool-call", "tool-result") for p in content
        ):
            return True
    return False


_READERS: dict[str, Callable[[Any], Run]] = {
    "mastra": read_mastra,
    "openai": read_openai,
    "ai-sdk": read_ai_sdk,
    "messages": read_messages,
}


# ---- recognizing shapes, for helpful errors and warnings ----


def guess_format(body: Any) -> str | None:
    """The reply format `body` looks like, if any."""
    if isinstance(body, list):
        return "messages" if body and all(isinstance(m, Mapping) and "role" in m for m in body) else None
    if not isinstance(body, Mapping):
        return None
    response = body.get("response")
    if isinstance(response, Mapping) and isinstance(response.get("dbMessages"), list):
        return "mastra"
    calls = body.get("toolCalls")
    if isinstance(calls, list) and any(isinstance(c, Mapping) and "payload" in c for c in calls):
        return "mastra"
    if isinstance(body.get("choices"), list) or (isinstance(body.get("output"), list) and "object" in body):
        return "openai"
    if _has_steps(body) or isinstance(calls, list):
        return "ai-sdk"
    if isinstance(body.get("messages"), list):
        return "messages"
    return None


# The keys `guess_format` tells a Mastra or AI SDK reply by: an object without any is neither
_FAILING_FORMAT_KEYS = frozenset(("response", "toolCalls", "steps"))


def guess_failing_format(body: Any) -> str | None:
    """`guess_format`'s answer when it is one of the formats whose tool calls can say they failed ("mastra",
    "ai-sdk"), else None; an object without the keys those are told by is answered without the guess (most
    replies of an agent mapped by JMESPath, each checked for failures its mapping misses)."""
    if isinstance(body, dict) and _FAILING_FORMAT_KEYS.isdisjoint(body):
        return None
    guess = guess_format(body)
    return guess if guess in ("mastra", "ai-sdk") else None


_CALL_KEYS = ("toolCalls", "tool_calls", "toolInvocations")
_CALL_PART_TYPES = ("tool-invocation", "tool-call")
_WALK_BUDGET = 2000
_IDENTIFIER = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")


def tool_call_paths(body: Any) -> list[str]:
    """JMESPaths to things in `body` that look like tool calls (bounded walk)."""
    found: list[str] = []
    budget = [_WALK_BUDGET]
    for path in _walk(body, "", 0, budget):
        if path not in found:
            found.append(path)
        if len(found) >= 3:
            break
    return found


def _walk(value: Any, path: str, depth: int, budget: list[int]) -> Iterator[str]:
    budget[0] -= 1
    if budget[0] <= 0 or depth > 8:
        return
    if isinstance(value, Mapping):
        for key, child in value.items():
            if not isinstance(key, str):
                continue
            child_path = f"{path}.{_key(key)}" if path else _key(key)
            if len(child_path) > 200:
                continue  # a path nobody would type; and reply keys stay out of the warning unbounded
            if key in _CALL_KEYS and isinstance(child, list) and child:
                yield child_path
            elif key in ("parts", "content") and isinstance(child, list) and any(
                isinstance(p, Mapping) and p.get("type") in _CALL_PART_TYPES for p in child
            ):
                yield f"{child_path}[?type=='{_part_type(child)}']"
            else:
                yield from _walk(child, child_path, depth + 1, budget)
    elif isinstance(value, list):
        for child in value[:20]:
            yield from _walk(child, f"{path}[]", depth + 1, budget)


def _part_type(parts: list[Any]) -> str:
    kind: str = next(p["type"] for p in parts if isinstance(p, Mapping) and p.get("type") in _CALL_PART_TYPES)
    return kind


def _key(key: str) -> str:
    return key if _IDENTIFIER.match(key) else json.dumps(key)


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
