"""Message lists (Mastra's and OpenAI's) converted to the run format (docs/spec.md; docs/multiturn.md).

Teams export traces as message lists; these functions turn one into a `Run` so it can be
recorded as an `output:` or returned by a target. Pure, no I/O.

Mastra (`MastraDBMessage`, what `agent.generate()` persists): `content` is a string, a list of
parts, or `{format: 2, parts: [...], content?, toolInvocations?}`. The rules follow
`@mastra/evals` so every check scores as Mastra's would:

- one text per assistant message, even an empty one: `content` if a string; else
  `content.content` or `content.text` if a non-empty string; else the *last* `text` part's
  `text`, a non-string one written as JavaScript's `join` writes it (5 is "5", {} "[object Object]",
  0 ""); Mastra's code scorers read the same text of every message, whatever its role
  (`Run.output_texts`), its LLM scorers each assistant message's text by the more lenient
  getTextFromValue (`Run.judge_texts`);
- a `toolName` that is not a string but truthy in JavaScript (7, true) is kept as it is: Mastra
  counts the call, and compares names with `===`, so 7 never matches the tool "7";
- tool calls come from every message's `tool-invocation` parts merged with the legacy
  `content.toolInvocations` (parts win on a shared `toolCallId`, compared as JavaScript `Map`
  keys: an object id is never shared), in order; states `result`,
  `call` and `output-error` count as calls; `partial-call` (an unfinished stream fragment)
  and the approval states do not, as in Mastra's `extractToolCalls`;
- `result` with `isError: true` is an error (it keeps its result); so is `output-error` (its
  `errorText` is the error); `call` (no result came back) is `pending`; a `result` carrying a
  truthy `error` field returned (`status: ok`, a success for the trajectory, as in Mastra's
  `extractTrajectory`) but is a failed call for `no_tool_errors` (`ToolCall.failed`);
- faithfulness's tool evidence is not the calls: Mastra reads only the assistant messages' legacy
  `content.toolInvocations` (`Run.legacy_tool_invocations`), whatever their `toolName`;
- an invocation that is not a call (no `toolName`, or another state) but that Mastra's
  `noToolErrors` flags (`call`/`output-error` state, `isError: true`, a truthy `result.error`)
  is listed in the run's `uncounted_tool_errors`;
- where Mastra's readers throw, the run's `unreadable` says why, and every check reading that part
  raises (`Run.require`): its tool readers (`mergeToolInvocations`, `extractTrajectory`) on any
  message whose `content.parts` or `content.toolInvocations` is there (not null) but no list
  (`parts?.filter`, `(legacy ?? []).map`), or whose parts hold a null (`p.type`); its text reader
  (`getTextContentFromMastraDBMessage`) on an assistant message whose content list, or whose parts
  when it reads them (no non-empty `content.content` or `content.text`), hold a null. Other
  entries that are no objects (`5`, `"x"`, a null in `toolInvocations`) are skipped, as in Mastra.

OpenAI chat (`messages` of the Chat Completions API): an assistant message's `tool_calls`
(`{id, type: function, function: {name, arguments}}`, `arguments` a JSON string) are paired
with the `tool` messages by `tool_call_id`:

- a call with no tool message is `status: pending`;
- a tool message's `content` (a string, or a list of text parts joined) is parsed as JSON when
  it is JSON, else kept as the string; it is an error when the message has `is_error: true`
  (then the content is the error); JSON that is an object with a truthy `error` field returned
  (`status: ok`) but fails `no_tool_errors`, mirroring Mastra's `result.error`;
- one text per assistant message: the string content, or the text parts joined with nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from evalgate.replies.model import (
    UNREADABLE_PARTS,
    NoJsString,
    Run,
    RunFormatError,
    ToolCall,
    float_sized,
    float_sized_usage,
    js_string,
    js_truthy,
    name_key,
    not_a_number,
    shown_name,
)

# Tool-invocation states that count as calls (Mastra's extractToolCalls).
_COUNTED_STATES = frozenset({"result", "call", "output-error"})
_ENVELOPE_KEYS = frozenset({"messages", "latency_ms", "usage", "cost_usd"})


def run_from_messages(value: Any) -> Run:
    """A Run from a Mastra or OpenAI message list, or `{messages, latency_ms?, usage?, cost_usd?}`."""
    extras: Mapping[str, Any] = {}
    messages = value
    if isinstance(value, Mapping):
        unknown = value.keys() - _ENVELOPE_KEYS
        if unknown:
            raise RunFormatError(
                f"unknown key(s) {sorted(unknown)} next to `messages`; allowed: {sorted(_ENVELOPE_KEYS)}"
            )
        messages, extras = value.get("messages"), value
    messages = _checked(messages)
    run = _from_openai(messages) if _is_openai(messages) else _from_mastra(messages)
    run.latency_ms = _number(extras.get("latency_ms"), "latency_ms")
    run.cost_usd = _number(extras.get("cost_usd"), "cost_usd")
    usage = extras.get("usage")
    if usage is not None and not isinstance(usage, Mapping):
        raise RunFormatError("`usage` must be a mapping")
    run.usage = float_sized_usage(usage) if usage is not None else None
    return run


def run_from_mastra_messages(messages: Sequence[Any]) -> Run:
    """A Run from Mastra messages (`MastraDBMessage`s), whatever they contain."""
    return _from_mastra(_checked(messages))


def run_from_openai_messages(messages: Sequence[Any]) -> Run:
    """A Run from OpenAI chat messages, whatever they contain."""
    return _from_openai(_checked(messages))


def _checked(messages: Any) -> Sequence[Mapping[str, Any]]:
    if not isinstance(messages, list):
        raise RunFormatError("`messages` must be a list of messages")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise RunFormatError(f"messages[{index}] must be a mapping with a string `role`")
    return messages


def _number(value: Any, key: str) -> float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise not_a_number(key, value, "no number")
    return float_sized(value)


def _is_openai(messages: Sequence[Mapping[str, Any]]) -> bool:
    # An object `content` is Mastra's format 2 (OpenAI's is a string, a part list or null), even in a
    # message of role "tool", which both formats have.
    if any(isinstance(m.get("content"), Mapping) for m in messages):
        return False
    return any(m.get("role") == "tool" or "tool_calls" in m or "tool_call_id" in m for m in messages)


# ---- Mastra ----


def _from_mastra(messages: Sequence[Mapping[str, Any]]) -> Run:
    texts: list[str] = []
    every: list[str] = []  # every message's text, whatever its role: Mastra's code scorers
    judged: list[str] = []  # the assistant messages' texts as the LLM scorers read them
    calls: list[ToolCall] = []
    uncounted: list[str] = []
    legacy: list[Any] = []
    unreadable: dict[str, str] = {}
    # where Mastra's agent response reader (summarization's getSummary) throws: an assistant message its text
    # reader throws on (all are read before any is trimmed), else the first whose text is no string to trim()
    thrown: str | None = None
    untrimmable: str | None = None
    for index, message in enumerate(messages):
        content = message.get("content")
        if "tool_calls" not in unreadable and (problem := _unreadable_calls(content)) is not None:
            unreadable["tool_calls"] = _unreadable(index, problem, "tool readers (mergeToolInvocations, "
                                                                   "extractTrajectory)")
        assistant = message["role"] == "assistant"
        problem = _unreadable_text(content)
        value = _mastra_text(content)
        if assistant and thrown is None:
            if problem is not None:
                thrown = f"messages[{index}].{problem}"
            elif value.__class__ is not str and untrimmable is None:
                kind = "a list" if isinstance(value, list) else _kind(value)
                untrimmable = (f"messages[{index}].{_text_path(content)} is {kind}, not a string "
                               "(trim is not a function)")
        try:
            text = value if value.__class__ is str else js_string(value)
        except NoJsString as exc:  # the checks' and scorers' `join` throws on it, after the reader
            text, problem = "", problem or f"{_text_field(content)} {exc}"
        if problem is not None:
            if assistant and "text" not in unreadable:
                unreadable["text"] = _unreadable(index, problem, "text reader (getTextContentFromMastraDBMessage)")
            if "output_texts" not in unreadable:
                unreadable["output_texts"] = _unreadable(index, problem, "code scorers' text reader "
                                                                         "(getTextContentFromMastraDBMessage)")
        every.append(text)
        if assistant:
            texts.append(text)
            legacy.extend(_legacy_invocations(content))
        if assistant or (message["role"] == "signal" and _effective_role(message) == "assistant"):
            judged.append(_judge_text(message) or "")
        _add_calls(message, index, calls, uncounted)
    if not messages:  # the tool-call accuracy scorers' `run.output.length === 0`
        unreadable["output_messages"] = ("the output holds no message: Mastra's tool-call accuracy scorers throw on "
                                         "it (Input and output messages cannot be null or empty)")
    # isScorerRunOutputForAgent: only then does Mastra's summarization read the assistant texts with trim()
    agent_output = all(m.get("id").__class__ is str and "content" in m and "createdAt" in m for m in messages)
    if agent_output and (thrown or untrimmable):
        unreadable["agent_responses"] = (f"{thrown or untrimmable}: Mastra's agent response reader "
                                         "(extractAgentResponseMessages, then trim(): summarization's getSummary) "
                                         "throws on it, so this scorer gives no number")
    # Kept only where they differ from `texts`: most runs' messages are all the assistant's, in plain text.
    return Run(texts=texts, tool_calls=calls, uncounted_tool_errors=uncounted, legacy_tool_invocations=legacy,
               unreadable={part: unreadable[part] for part in UNREADABLE_PARTS if part in unreadable},
               output_texts=every if every != texts else None, judge_texts=judged if judged != texts else None,
               agent_output=agent_output)


def _legacy_invocations(content: Any) -> list[Any]:
    """faithfulness's evidence: `flatMap((m) => m.content?.toolInvocations ?? [])`, as it is."""
    value = content.get("toolInvocations") if isinstance(content, Mapping) else None
    if isinstance(value, list):
        return value
    return [] if value is None else [value]


def _add_calls(message: Mapping[str, Any], index: int, calls: list[ToolCall], uncounted: list[str]) -> None:
    """A message's tool calls, and the failed invocations that are no calls (noToolErrors counts them)."""
    for invocation in _merged_invocations(message.get("content")):
        call = _mastra_call(invocation, index)
        if call is not None:
            calls.append(call)
        elif (error := _uncounted_error(invocation)) is not None:
            uncounted.append(error)


def _unreadable(index: int, problem: str, reader: str) -> str:
    return f"messages[{index}].{problem}: Mastra's {reader} throw on it, so this check gives no number"


def _unreadable_calls(content: Any) -> str | None:
    """Why Mastra's mergeToolInvocations throws on this message's content, if it does."""
    if not isinstance(content, Mapping):  # a string's or a list's `.parts` is undefined
        return None
    parts = content.get("parts")
    if parts is not None:  # `parts?.filter(...)`: null or absent is no parts
        if not isinstance(parts, list):
            return f"content.parts is {_kind(parts)}, not a list"
        if None in parts:  # `p.type` on null; any other entry reads as no tool-invocation
            return f"content.parts[{parts.index(None)}] is null"
    legacy = content.get("toolInvocations")
    if legacy is not None and not isinstance(legacy, list):  # `(legacy ?? []).map(...)`; null entries are skipped
        return f"content.toolInvocations is {_kind(legacy)}, not a list"
    return None


def _unreadable_text(content: Any) -> str | None:
    """Why Mastra's getTextContentFromMastraDBMessage throws on this content, if it does."""
    if isinstance(content, list):
        return f"content[{content.index(None)}] is null" if None in content else None
    if not isinstance(content, Mapping) or any(
        isinstance(content.get(key), str) and content[key] for key in ("content", "text")
    ):
        return None  # the parts are never read
    parts = content.get("parts")
    if isinstance(parts, list) and None in parts:  # `.filter((p) => p.type === "text")` on a null
        return f"content.parts[{parts.index(None)}] is null"
    return None


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {json.dumps(value[:40], ensure_ascii=False)}"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


def _mastra_text(content: Any) -> Any:
    """Mastra's getTextContentFromMastraDBMessage: a string, or the last text part's `text` as it is when that
    is truthy in JavaScript (5, {}, [1, 2], true), which the readers' `join` then makes a string (js_string)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return _last_text(content)
    if not isinstance(content, Mapping):
        return ""
    for key in ("content", "text"):  # `typeof ... === "string"`: any other value is passed over
        value = content.get(key)
        if isinstance(value, str) and value:
            return value
    parts = content.get("parts")
    return _last_text(parts) if isinstance(parts, list) else ""


def _last_text(parts: list[Any]) -> Any:
    texts = [p for p in parts if isinstance(p, Mapping) and p.get("type") == "text"]
    if not texts:
        return ""
    text = texts[-1].get("text")
    return text if js_truthy(text) else ""  # `?.text || ""`: 0, false and null give ""


def _text_field(content: Any) -> str:
    """Where the text part _mastra_text read sits, for a reason."""
    return "the last text part's text" + (" (content.parts)" if isinstance(content, Mapping) else " (content)")


def _text_path(content: Any) -> str:
    """Where the last text part _mastra_text read sits: `content[3].text`, `content.parts[0].text`."""
    parts = content if isinstance(content, list) else content.get("parts")
    last = max(i for i, p in enumerate(parts) if isinstance(p, Mapping) and p.get("type") == "text")
    return f"content[{last}].text" if parts is content else f"content.parts[{last}].text"


def _judge_text(value: Any) -> str | None:
    """Mastra's getTextFromValue, which its LLM scorers read a message with (getAssistantMessageFromRunOutput):
    `content` (a string, a part list, or an object read the same way), then a non-empty `text` or `body`,
    then the parts; of a part list, the last text part whose text is a string. None for undefined."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, list):
        for part in reversed(value):
            text = part.get("text") if isinstance(part, Mapping) and part.get("type") == "text" else None
            if isinstance(text, str):
                return text  # "" too: it ends the `??` chain, and the scorer passes the message over
        return None
    if not isinstance(value, Mapping):
        return None
    found = _judge_text(value.get("content"))
    if found is not None:
        return found
    for key in ("text", "body"):
        text = value.get(key)
        if isinstance(text, str) and text:
            return text
    parts = value.get("parts")
    return _judge_text(parts) if isinstance(parts, list) else None


def _effective_role(message: Mapping[str, Any]) -> Any:
    """Mastra's getEffectiveMessageRole: a `signal` message stands for the role its metadata names."""
    content = message.get("content")
    meta = content.get("metadata") if isinstance(content, Mapping) else None
    signal = meta.get("signal") if isinstance(meta, Mapping) else None
    for value in ((signal.get("tagName"), signal.get("type")) if isinstance(signal, Mapping) else ()):
        if isinstance(value, str):
            return value
    kind = message.get("type")
    return kind if isinstance(kind, str) else None


def _merged_invocations(content: Any) -> list[Mapping[str, Any]]:
    """Mastra's mergeToolInvocations: `parts` and legacy `toolInvocations`, parts winning."""
    if not isinstance(content, Mapping):
        return []
    found = content.get("parts")
    parts = found if isinstance(found, list) else []
    from_parts = [
        p["toolInvocation"]
        for p in parts
        if isinstance(p, Mapping)
        and p.get("type") == "tool-invocation"
        and isinstance(p.get("toolInvocation"), Mapping)
    ]
    raw_legacy = content.get("toolInvocations")
    legacy = [i for i in raw_legacy if isinstance(i, Mapping)] if isinstance(raw_legacy, list) else []
    # Ids are a JS Set's and Map's keys (name_key): any JSON value, an object or list equal only to
    # itself (so never shared), `true` never 1; falsy ids are never looked up.
    part_ids = {name_key(i.get("toolCallId")) for i in from_parts if js_truthy(i.get("toolCallId"))}
    positions: dict[tuple[str, Any], int] = {}
    for position, invocation in enumerate(legacy):
        positions[name_key(invocation.get("toolCallId"))] = position  # last one wins, as a JS Map built in order
    merged: list[Mapping[str, Any]] = []
    next_legacy = 0
    for invocation in from_parts:
        call_id = invocation.get("toolCallId")
        shared = positions.get(name_key(call_id)) if js_truthy(call_id) else None
        if shared is not None and shared >= next_legacy:
            # Keep legacy-only calls that came before this shared one where they were.
            for previous in legacy[next_legacy:shared]:
                if name_key(previous.get("toolCallId")) not in part_ids:
                    merged.append(previous)
            next_legacy = shared + 1
        merged.append(invocation)
    merged.extend(i for i in legacy[next_legacy:] if name_key(i.get("toolCallId")) not in part_ids)
    return merged


def _mastra_call(invocation: Mapping[str, Any], message_index: int) -> ToolCall | None:
    state = invocation.get("state")
    name = invocation.get("toolName")
    # Mastra: `invocation.toolName && ...`; a state that is an object or a list is no counted state
    if state.__class__ is not str or state not in _COUNTED_STATES or name is None or not js_truthy(name):
        return None
    args = invocation.get("args")
    if state == "call":
        return ToolCall(name, args, status="pending")
    if state == "output-error":
        return ToolCall(name, args, error=_error_text(invocation.get("errorText")) or "the tool threw", status="error")
    result = invocation.get("result")
    if invocation.get("isError") is True:
        error = (_result_error(result) or _error_text(invocation.get("errorText")) or _error_text(result)
                 or "the tool reported an error")
        return ToolCall(name, args, result, error, "error")
    # A result with an `error` field still returned (extractTrajectory: success); ToolCall.failed
    # flags it for noToolErrors. Marking it `error` would read back as Mastra's `isError`.
    return ToolCall(name, args, result, status="ok")


def _uncounted_error(invocation: Mapping[str, Any]) -> str | None:
    """What is wrong with an invocation that is no call, if noToolErrors' isErrorInvocation flags it."""
    state, result = invocation.get("state"), invocation.get("result")
    if state in ("call", "output-error") or invocation.get("isError") is True or _result_error(result):
        error = _result_error(result) or _error_text(invocation.get("errorText")) or "no result"
        name = invocation.get("toolName")
        who = f"tool {shown_name(name)}" if js_truthy(name) else "a tool with no name"
        return f"{who} (state {_error_text(state) or 'missing'}): {error}"
    return None


# ---- OpenAI ----


def _from_openai(messages: Sequence[Mapping[str, Any]]) -> Run:
    replies = _tool_replies(messages)
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        texts.append(_openai_text(message.get("content"), index))
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise RunFormatError(f"messages[{index}].tool_calls must be a list")
        for position, raw in enumerate(raw_calls):
            calls.append(_openai_call(raw, replies, f"messages[{index}].tool_calls[{position}]"))
    return Run(texts=texts, tool_calls=calls)


def _tool_replies(messages: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    replies: dict[str, Mapping[str, Any]] = {}
    for message in messages:
        call_id = message.get("tool_call_id")
        if message["role"] == "tool" and isinstance(call_id, str):
            replies.setdefault(call_id, message)  # the first reply to a call is its result
    return replies


def _openai_text(content: Any, index: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
        return "".join(t for t in texts if isinstance(t, str))
    raise RunFormatError(f"messages[{index}].content must be a string, a list of parts or null")


def _openai_call(raw: Any, replies: Mapping[str, Mapping[str, Any]], where: str) -> ToolCall:
    function = raw.get("function") if isinstance(raw, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str) or not function["name"]:
        raise RunFormatError(f"{where} needs `function.name`")
    name: str = function["name"]
    args = _parse_json(function.get("arguments"))
    reply = replies.get(raw.get("id")) if isinstance(raw.get("id"), str) else None
    if reply is None:
        return ToolCall(name, args, status="pending")
    content = reply.get("content")
    if isinstance(content, list):
        content = _openai_text(content, 0)
    result = _parse_json(content)
    if reply.get("is_error") is True:
        return ToolCall(name, args, None, _error_text(result) or "the tool reported an error", "error")
    # A JSON `{error}` reply returned, as Mastra's `result.error`: ToolCall.failed flags it.
    return ToolCall(name, args, result, status="ok")


def _parse_json(value: Any) -> Any:
    """JSON text parsed; anything else (or text that is not JSON, or nests too deeply) as it is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


# ---- shared ----


def _result_error(result: Any) -> str | None:
    """A result object's truthy `error` field, as text (Mastra's `result.error`): truthy as in
    JavaScript, where an empty object or list is truthy too."""
    if isinstance(result, Mapping) and js_truthy(result.get("error")):
        return _error_text(result["error"])
    return None


def _error_text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    message = value.get("message") if isinstance(value, Mapping) else None
    if isinstance(message, str) and message:
        return message
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


# Shared with evalgate.replies.formats, which reads whole agent replies in these and the AI SDK's shapes.
error_text = _error_text
result_error = _result_error
parse_json = _parse_json


# ---- an item's input, as Mastra's scorers read it ----


class UnreadableInput(ValueError):
    """An item input that Mastra's agent rejects, or converts in a way evalgate does not reproduce."""


class NotReproduced(UnreadableInput):
    """A message Mastra's agent takes, but converts (merges, replaces) in a way evalgate does not reproduce."""


# The part types of an input message the agent converts without a text of their own (tool calls and results become
# tool invocations, whatever the role); the v6 tool-approval parts are not reproduced.
_REPLY_PARTS = ("text", "image", "file", "tool-call", "tool-result", "reasoning", "redacted-reasoning")
_INPUT_PARTS = {"user": _REPLY_PARTS, "assistant": _REPLY_PARTS, "tool": _REPLY_PARTS}  # none adds text
# The part types Mastra's agent converts (AIV4Adapter.fromCoreMessage, AIV5Adapter.fromModelMessage, the v6 approval
# parts); anything else in a part list (null, a string, a part of no or another type) it drops.
_KNOWN_PARTS = frozenset({"text", "image", "file", "tool-call", "tool-result", "reasoning", "redacted-reasoning",
                          "tool-approval-request", "tool-approval-response"})


@dataclass(slots=True)
class _Input:
    """What a real agent's `generate(input)` makes of a message-like input, as far as Mastra's scorers read it."""

    messages: list[Mapping[str, Any]] = field(default_factory=list)  # its inputMessages (MastraDBMessages)
    any_message: bool = False  # whether it makes any inputMessage, one evalgate does not reproduce too
    system: list[str] = field(default_factory=list)  # the system prompt's messages, as getCombinedSystemPrompt reads
    unreproduced: str | None = None  # why evalgate cannot read it as Mastra does (the first such message)


def mastra_input_texts(value: Any) -> tuple[str, str]:
    """(the code scorers' input text, the LLM scorers' user message) of an item's `input`, as Mastra reads what
    a real agent's `generate(input)` puts in `scoringData.input.inputMessages` (its MessageList's conversion,
    verified by running one: tests/test_mastra_scorers.py, groups `input_messages` and `input_shapes`).

    The code scorers read every input message's text (getTextContentFromMastraDBMessage) joined by ", ", the
    LLM scorers the first user message's (getTextFromValue). A string is one user message; system messages
    go to the agent's system prompt, not the input; a part list becomes `content.content`, its text parts
    joined by "\\n" (empty ones dropped unless all are empty), except in an AI SDK v4 message (a part's
    `mimeType`, the message's `experimental_providerMetadata` or `threadId`), which keeps the parts only, so
    the last text part is read; entries of no type Mastra converts (null, a string, `{}`) are dropped; an object
    content that is no format 2 keeps no text; format-2 content is kept as it is, its parts that are no
    objects dropped. Assistant and tool messages in a row (a conversation history with tool calls: the tool
    message's results merged into the calls before it) are one input message, read as its last non-empty
    `content.content`, else their text parts merged as the agent merges them (`_merged`). Raises UnreadableInput
    where the agent throws (a text that is no string, an unknown role, no content, a content that is a number,
    a system message with no text) and where its conversion is not reproduced here (merges: assistant or tool
    messages not followed by a user message, which the agent merges into its own reply; v4 text parts of
    merged messages beside a tool call answering an earlier one, or null, or with providerOptions; format-2
    content, metadata or a threadId in a merged one; messages sharing an id, but for user messages of text
    parts, of which the later replaces the earlier (sorted last) unless equal to it; UI messages (`parts`) of
    other parts than text, step-start, file, reasoning and tool ones; signal messages; the v6 tool-approval
    parts; a v4 system message). Tool-call, tool-result, reasoning, image and file parts add no text, whatever
    the role; a UI message of text parts reads as its last one, a v5 one (file, reasoning, tool parts) as its
    texts joined with "". An input that is no message at all (no `role`,
    `content` or `parts`: `{city: Paris}`, `[1, 2]`, `5`) is evalgate's structured input, which no Mastra
    agent takes: both read its JSON text, as evalgate always has."""
    if value is None:
        return "", ""
    if isinstance(value, str):
        return value, value
    if not _message_like(value):  # evalgate's structured input (an HTTP body, a function's arguments): its JSON
        text = json.dumps(value, ensure_ascii=False, default=str)
        return text, text
    converted = _read(value)
    code = ", ".join(js_string(_mastra_text(m["content"])) for m in converted.messages)
    first_user = next((m for m in converted.messages if m["role"] == "user"), None)
    judged = _judge_text(first_user) if first_user is not None else None
    return code, judged or ""


def mastra_system_prompt(value: Any) -> str:
    """The system prompt Mastra's prompt alignment reads of an item's input (getCombinedSystemPrompt): its system
    messages' texts, a repeated one once, joined by a blank line; "" for a string or no system message. The
    agent's own instructions, which evalgate does not know, would come first. Raises as mastra_input_texts."""
    if isinstance(value, str) or not _message_like(value):
        return ""
    return "\n\n".join(_read(value).system)


NO_INPUT_MESSAGES = ("the input holds no message (none, or only system messages): Mastra's tool-call accuracy "
                     "scorers throw on it (Input and output messages cannot be null or empty)")


def no_input_messages(value: Any) -> bool:
    """True for an input a real agent turns into no input message at all: `[]`, or only system messages
    (the system prompt). Mastra's tool-call accuracy scorers throw on it ("Input and output messages
    cannot be null or empty"). Raises UnreadableInput where the agent throws on the input (the item has no run
    in Mastra), not where evalgate only does not reproduce the conversion: the scorers read no text of it."""
    if isinstance(value, str) or not _message_like(value):
        return False
    return not _converted(value).any_message


def _read(value: Any) -> _Input:
    converted = _converted(value)
    if converted.unreproduced is not None:
        raise NotReproduced(converted.unreproduced)
    return converted


_MESSAGE_KEYS = ("role", "content", "parts")


def _message_like(value: Any) -> bool:
    """A message or a list of messages (strings too), which Mastra's agents take; other JSON is evalgate's own
    structured input, which no Mastra agent takes and which evalgate's scorers read as its JSON text."""
    def one(message: Any) -> bool:
        return isinstance(message, str) or (isinstance(message, Mapping) and any(k in message for k in _MESSAGE_KEYS))

    return all(map(one, value)) if isinstance(value, list) else isinstance(value, Mapping) and one(value)


def _converted(value: Any) -> _Input:
    """A message-like input as the agent's MessageList converts it (`MessageList.addOne`, `inputToMastraDBMessage`).
    Raises UnreadableInput where the agent throws; where it converts a message in a way evalgate does not
    reproduce, `unreproduced` says why (the rest is still checked: a later message may make the agent throw)."""
    out = _Input()
    others = _system_set_aside(value, out)
    out.any_message = bool(others)
    ids: dict[tuple[str, Any], tuple[str, Mapping[str, Any], Mapping[str, Any]]] = {}
    group: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]] = []  # assistant and tool messages in a row
    for n, (where, message) in enumerate(others):
        role = message.get("role")
        try:
            if role not in _INPUT_PARTS:
                if role == "signal":
                    raise NotReproduced(f"{where} has a signal message, which Mastra's agent keeps with its own "
                                         "signal metadata: evalgate does not reproduce it")
                raise UnreadableInput(f"{where} has role {json.dumps(role)}, which Mastra's agent rejects "
                                      "(Unsupported role)")
            db = _input_db_message(where, role, message)
            ident = db.get("id")
            if js_truthy(ident):  # MessageList.shouldReplaceMessage: a later message with the id replaces it
                earlier = ids.setdefault(name_key(ident), (where, message, db))
                if earlier[0] != where:
                    if _replaced(earlier, (where, message, db)):
                        ids[name_key(ident)] = (where, message, db)
                        kept = [m for m in out.messages if m is not earlier[2]]
                        out.messages[:] = kept  # the later message goes last (sorted by its newer createdAt)
                    elif n and others[n - 1][1].get("role") != "user":
                        raise NotReproduced(f"{where} equals {earlier[0]}, whose id it has, and follows an assistant "
                                             "or tool message: Mastra's agent drops it, so that message is merged "
                                             "with the next one or its own reply, which evalgate does not reproduce")
                    else:  # messagesAreEqual: the later one is dropped, the earlier stays where it is
                        continue
            if db["role"] == "assistant":
                # MessageMerger.shouldMerge: an assistant message (a tool message is one) is merged into the one
                # before it, so each run of them is one input message, unless a user message ends it
                group.append((where, message, db))
                following = others[n + 1][1].get("role") if n + 1 < len(others) else None
                if following in ("assistant", "tool"):
                    continue
                if following != "user":
                    raise NotReproduced(
                        f"{where} is {'an assistant' if role == 'assistant' else 'a tool'} message "
                        + (f"followed by a {following} message" if following else "ending the input")
                        + ": Mastra's agent merges it into its own reply, which evalgate does not reproduce")
                db = _merged(group)
        except NotReproduced as exc:
            out.unreproduced = out.unreproduced or str(exc)
            continue
        group = []
        out.messages.append(db)
    return out


def _system_set_aside(value: Any, out: _Input) -> list[tuple[str, Mapping[str, Any]]]:
    """The input's system messages into `out.system` (MessageList.add hands them to addSystem: the system prompt,
    not inputMessages); the other messages, each with where it is, returned in order."""
    given = value if isinstance(value, list) else [value]
    others: list[tuple[str, Mapping[str, Any]]] = []
    for index, message in enumerate(given):
        where = f"input[{index}]" if isinstance(value, list) else "input"
        if isinstance(message, str):
            message = {"role": "user", "content": message}
        if not isinstance(message, Mapping):
            raise UnreadableInput(f"{where} is {_kind(message)}, not a message")
        _check_content(where, message)
        if message.get("role") != "system":
            others.append((where, message))
            continue
        try:
            text = _system_text(where, message)
        except NotReproduced as exc:
            out.unreproduced = out.unreproduced or str(exc)
            continue
        if text and text not in out.system:  # isDuplicateSystem drops a repeated one
            out.system.append(text)
    return others


def _replaced(earlier: tuple[str, Mapping[str, Any], Mapping[str, Any]],
              later: tuple[str, Mapping[str, Any], Mapping[str, Any]]) -> bool:
    """Whether a user message replaces the earlier user message with its id (MessageList.addOne: the earlier one
    is taken out and the later one, the newest, sorted last), rather than being dropped as equal to it
    (messagesAreEqual: the same parts' cache keys, a text part's "text" and its text). Raises NotReproduced for
    messages evalgate does not compare as the agent does (only plain v5 user messages of text parts are)."""
    keys = []
    for where, message, _ in (earlier, later):
        content = message.get("content")
        parts: Any = [{"type": "text", "text": content}] if isinstance(content, str) else content
        plain = (message.get("role") == "user" and isinstance(parts, list) and not _v4_message(message)
                 and not any(key in message for key in ("metadata", "createdAt", "parts"))
                 and all(isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str)
                         and p.keys() <= {"type", "text"} for p in parts))
        if not plain:
            raise NotReproduced(f"{later[0]} has the id of {earlier[0]}: Mastra's agent replaces (or merges) the "
                                 "earlier message with it, which evalgate reproduces for user messages of text "
                                 f"parts only ({where} is not one)")
        texts = [p["text"] for p in parts]
        if any(texts):  # filterEmptyTextParts
            texts = [t for t in texts if t]
        keys.append("".join("text" + t for t in texts))
    return keys[0] != keys[1]


def _merged(group: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]]) -> Mapping[str, Any]:
    """The one input message a real agent makes of assistant and tool messages in a row (MessageMerger.merge),
    as far as the scorers read it: the last non-empty `content.content` of them, else their text parts merged as
    the agent merges them. Raises NotReproduced where evalgate does not reproduce the merge."""
    if len(group) == 1:
        return group[0][2]
    for where, message, _ in group:
        why = ("has a threadId or resourceId (a Mastra v1 message)" if "threadId" in message or "resourceId" in message
               else "has format-2 content" if _is_format_2(message.get("content"))
               else "has metadata" if "metadata" in message else None)
        if why is not None:
            raise NotReproduced(f"{where} {why}, and Mastra's agent merges it with the assistant or tool messages "
                                 "next to it: evalgate does not reproduce that merge")
    # `if (incoming.content.content) latest.content.content = incoming.content.content`: the last non-empty wins
    strings = [db["content"]["content"] for _, _, db in group if js_truthy(db["content"].get("content"))]
    if strings:
        content: dict[str, Any] = {"format": 2, "parts": [], "content": strings[-1]}
    elif any(db.get("ui5") for _, _, db in group):
        raise NotReproduced(f"{group[0][0]} starts assistant messages merged into one with no text (content.content) "
                             "and a v5 UI message: evalgate does not reproduce how the agent merges its parts")
    else:  # no content.content: the scorers read the merged parts' last text part
        bearing = [(where, db["content"]["parts"]) for where, _, db in group if db["content"]["parts"]]
        for n, (where, message, db) in enumerate(group):
            ids = _tool_call_ids(message)
            if n and db["content"]["parts"] and (None in ids or ids & set().union(
                    *(_tool_call_ids(m) for _, m, _ in group[:n]))):
                # MessageMerger.merge anchors a call or result on the earlier one with its toolCallId, and
                # addPartsToMessage places the text parts around it, or drops them
                raise NotReproduced(f"{where} has text parts beside a tool call or result answering an earlier "
                                     "one, and no text (content.content): Mastra's agent merges them into the "
                                     "message before it in an order evalgate does not reproduce")
        if len(bearing) > 1 and any(p.get("text") is None or "providerOptions" in p for _, parts in bearing
                                    for p in parts):
            raise NotReproduced(f"{bearing[-1][0]} has text parts, as {bearing[0][0]} has, one of them with no "
                                 "text or with providerOptions, and no text (content.content): Mastra's agent "
                                 "compares their cache keys in a way evalgate does not reproduce")
        kept = bearing[0][1] if len(bearing) == 1 else []
        if len(bearing) > 1:
            # MessageMerger.pushNewPart appends a part only while the message has fewer parts of its cache key
            # ("text" and the text) than the incoming message has
            merged: list[str] = []
            for _, parts in bearing:
                texts = [p["text"] for p in parts]
                for text in texts:
                    if merged.count(text) < texts.count(text):
                        merged.append(text)
            kept = [{"type": "text", "text": text} for text in merged]
        content = {"format": 2, "parts": kept}
    return {"role": "assistant", "content": content, "id": group[0][2].get("id")}


def _tool_call_ids(message: Mapping[str, Any]) -> set[Any]:
    """The toolCallIds of a message's tool-call and tool-result parts, as JavaScript compares them (name_key);
    None for a missing or null one, which evalgate does not compare as the agent does."""
    content = message.get("content")
    parts = [p for p in content if isinstance(p, Mapping)] if isinstance(content, list) else []
    return {None if p.get("toolCallId") is None else name_key(p["toolCallId"])
            for p in parts if p.get("type") in ("tool-call", "tool-result")}


def _check_content(where: str, message: Mapping[str, Any]) -> None:
    """Where MessageList.addOne throws on a message whatever its role."""
    content = message.get("content")
    if ("content" not in message or not (js_truthy(content) or isinstance(content, str))) \
            and not js_truthy(message.get("parts")):
        raise UnreadableInput(f"{where} has no content (a string or a list of parts): Mastra's MessageList throws")
    if js_truthy(content) and not isinstance(content, str | list | Mapping):  # `"format" in content`
        raise UnreadableInput(f"{where}.content is {_kind(content)}: Mastra's agent throws (Cannot use 'in' "
                              "operator to search for 'format')")


def _v4_message(message: Mapping[str, Any]) -> bool:
    """Whether the agent converts this message as an AI SDK v4 one (TypeDetector: a MastraMessageV1, with a
    `threadId` or `resourceId`, or not hasAIV5CoreMessageCharacteristics): its parts are kept, with no
    `content.content`."""
    if "threadId" in message or "resourceId" in message or "experimental_providerMetadata" in message:
        return True
    content = message.get("content")
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if (kind == "tool-result" and "output" in part) or (kind == "tool-call" and "input" in part):
            return False
        if (kind == "tool-result" and "result" in part) or (kind == "tool-call" and "args" in part):
            return True
        if "mediaType" in part:
            return False
        if "mimeType" in part or "experimental_providerMetadata" in part or kind == "redacted-reasoning" \
                or (kind == "reasoning" and "signature" in part):
            return True
    return False


def _input_db_message(where: str, role: str, message: Mapping[str, Any]) -> Mapping[str, Any]:
    """The MastraDBMessage a real agent makes of one input message (`inputToMastraDBMessage`), with the id it keeps."""
    content = message.get("content")
    if _is_format_2(content):  # a MastraDBMessage already (hydrateMastraDBMessageFields): kept as it is
        if role == "tool":
            raise NotReproduced(f"{where} is a tool message with format-2 content, which evalgate does not convert "
                                 "as Mastra's agent does")
        parts = content.get("parts")
        parts = [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []
        _check_texts(where, parts)
        return {**message, "content": {**content, "parts": parts}}
    if "parts" in message:
        return _ui_db_message(where, role, message)
    v4 = _v4_message(message)
    if isinstance(content, str):
        parts = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        parts = _input_parts(where, role, content, v4)
    else:
        parts = []  # an object that is no format-2 content: neither adapter keeps anything of it
    texts = [p for p in parts if p.get("type") == "text"]
    if any(not _empty_text(p) for p in parts):  # filterEmptyTextParts: "" parts go unless nothing else is left
        texts = [p for p in texts if not _empty_text(p)]
    _check_texts(where, texts)
    db_content: dict[str, Any] = {"format": 2, "parts": texts}
    if isinstance(content, str) or not v4:  # AIV5Adapter: the texts joined; AIV4Adapter: a string content only
        joined = "\n".join(js_string(p.get("text")) for p in texts)  # null joins as ""
        if joined:
            db_content["content"] = joined  # `contentString || undefined`
    # the id the agent keeps: any with the v4 conversion, a string one with the v5 (another gets a new one)
    ident = message.get("id")
    kept = ident if v4 or isinstance(ident, str) else None
    return {"role": "assistant" if role == "tool" else role, "content": db_content, "id": kept}


_UI_KEYS: dict[Any, AbstractSet[str]] = {"text": {"type", "text"}, "step-start": {"type"}}
# AI SDK v5 UI parts evalgate converts as the agent does: (allowed keys, required keys), a tool part being `tool-*`
_UI5_PARTS: dict[str, tuple[set[str], set[str]]] = {
    "file": ({"type", "mediaType", "url", "filename"}, {"mediaType"}),
    "reasoning": ({"type", "text", "state"}, {"text"}),
    "tool": ({"type", "toolCallId", "state", "input", "output", "errorText"}, {"toolCallId", "state"}),
}
_UI5_TOOL_STATES = ("input-available", "output-available", "output-error")


def _ui5_part(part: Any) -> bool:
    """A v5 UI part (file, reasoning, tool) evalgate converts: text-less, and a v5 characteristic."""
    if not isinstance(part, Mapping) or part.get("type").__class__ is not str:
        return False
    kind = "tool" if part["type"].startswith("tool-") and len(part["type"]) > 5 else part["type"]
    if kind not in _UI5_PARTS or not _UI5_PARTS[kind][1] <= part.keys() <= _UI5_PARTS[kind][0]:
        return False
    if kind == "tool":
        return part["state"] in _UI5_TOOL_STATES
    return isinstance(part["mediaType" if kind == "file" else "text"], str)


def _ui_db_message(where: str, role: str, message: Mapping[str, Any]) -> Mapping[str, Any]:
    """The MastraDBMessage a real agent makes of an AI SDK UI message (`parts`, no `content`). One of text and
    step-start parts only it takes for a v4 one (no AI SDK v5 UI characteristics): AIV4Adapter.fromUIMessage keeps
    the parts, without `content.content`, so the last text part is read. One with file, reasoning or tool parts
    too is a v5 one: AIV5Adapter.fromUIMessage joins its texts with "" (empty ones too) into `content.content`.
    Raises NotReproduced for any other."""
    parts: Any = message.get("parts")
    plain = (role in ("user", "assistant") and isinstance(parts, list)
             and not any(key in message for key in ("content", "createdAt", "metadata", "threadId", "resourceId",
                                                    "toolInvocations", "reasoning", "experimental_attachments",
                                                    "data", "annotations"))
             and all((isinstance(p, Mapping) and p.keys() == _UI_KEYS.get(p.get("type"))) or _ui5_part(p)
                     for p in parts))
    if not plain:
        raise NotReproduced(f"{where} is a UI message (`parts`) with parts other than text, step-start, file, "
                             "reasoning and tool ones, or other fields, whose conversion evalgate does not reproduce")
    v5 = any(_ui5_part(p) for p in parts)  # hasAIV5UIMessageCharacteristics
    texts = [p for p in parts if p["type"] == "text"]
    # filterEmptyTextParts: the v5 tool, file and reasoning parts count as others
    kept = [p for p in texts if not _empty_text(p)] if any(not _empty_text(p) for p in parts) else texts
    _check_texts(where, kept)
    content: dict[str, Any] = {"format": 2, "parts": kept}
    ident = message.get("id")
    if not v5:
        return {"role": role, "content": content, "id": ident if js_truthy(ident) else None}
    _check_texts(where, texts)
    if texts:  # `textParts.map((p) => p.text).join("")`, before the empty ones are dropped
        content["content"] = "".join("" if p["text"] is None else p["text"] for p in texts)  # null joins as ""
    return {"role": role, "content": content, "id": ident if isinstance(ident, str) else None, "ui5": True}


def _input_parts(where: str, role: str, content: list[Any], v4: bool) -> list[Mapping[str, Any]]:
    parts = []
    for i, part in enumerate(content):
        if part is None and v4:  # AIV4Adapter reads `part.type` of every entry
            raise UnreadableInput(f"{where}.content[{i}] is null in an AI SDK v4 message: Mastra's agent throws "
                                  "(Cannot read properties of null)")
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "tool-result" and v4 and _v4_call_without_args(content, part):
            raise UnreadableInput(f"{where}.content[{i}] is a tool result whose call in the same AI SDK v4 message "
                                  "has no args: Mastra's agent throws (Cannot convert undefined or null to object)")
        if kind.__class__ is not str or kind not in _KNOWN_PARTS:
            continue  # the agent drops it
        if kind not in _INPUT_PARTS[role]:
            raise NotReproduced(f"{where}.content[{i}] is no {' or '.join(_INPUT_PARTS[role])} part, which "
                                 "evalgate does not convert as Mastra's agent does")
        parts.append(part)
    return parts


def _v4_call_without_args(content: list[Any], result: Mapping[str, Any]) -> bool:
    """AIV4Adapter.fromCoreMessage: a tool result takes the args of the first tool call in its message with its
    toolCallId (`===`: an absent one matches an absent one only, an object none), and `Object.keys` throws on
    a call whose args are absent or null."""
    def same(part: Mapping[str, Any]) -> bool:
        if "toolCallId" not in part or "toolCallId" not in result:
            return "toolCallId" not in part and "toolCallId" not in result
        one, other = part["toolCallId"], result["toolCallId"]
        if isinstance(one, Mapping | list) or isinstance(other, Mapping | list):
            return False
        return name_key(one) == name_key(other)

    call = next((p for p in content if isinstance(p, Mapping) and p.get("type") == "tool-call" and same(p)), None)
    return call is not None and call.get("args") is None


def _empty_text(part: Mapping[str, Any]) -> bool:
    return part.get("type") == "text" and part.get("text") == ""


def _system_text(where: str, message: Mapping[str, Any]) -> str:
    """A system message's text in the agent's system prompt (`addSystem`, `systemMessageToAIV4Core`), as
    getSystemMessagesFromRunInput reads it; "" for none. Raises where the agent throws on it."""
    content = message.get("content")
    if _is_format_2(content):  # AIV4Adapter.systemToV4Core: `content.content` is the message
        text = content.get("content")
        if not js_truthy(text):
            raise UnreadableInput(f"{where} is a format-2 system message without content.content: Mastra's agent "
                                  "throws (Invalid system message format)")
        if not isinstance(text, str):
            raise NotReproduced(f"{where} is a format-2 system message whose content.content is {_kind(text)}, "
                                 "which evalgate does not read as Mastra does")
        return text
    if any(key in message for key in ("parts", "threadId", "resourceId")):  # no core message, no format 2
        raise UnreadableInput(f"{where} is a system message with `parts`, `threadId` or `resourceId`: Mastra's agent "
                              "throws (Invalid system message format)")
    if _v4_message(message):
        raise NotReproduced(f"{where} is an AI SDK v4 system message, which Mastra's agent passes on unconverted: "
                             "evalgate does not reproduce it")
    # AIV5Adapter.fromModelMessage, then systemToV4Core: its text parts' texts joined by "\n", which must not be ""
    parts = [p for p in content if isinstance(p, Mapping)] if isinstance(content, list) else []
    for part in parts:
        kind = part.get("type")
        if kind.__class__ is str and kind in _KNOWN_PARTS - {"text", "image", "file"}:
            raise NotReproduced(f"{where} is a system message with a {part['type']} part, which evalgate does not "
                                 "convert as Mastra's agent does")
    parts = [p for p in parts if p.get("type") in ("text", "image", "file")]
    texts = [p for p in parts if p.get("type") == "text"]
    if any(not _empty_text(p) for p in parts):
        texts = [p for p in texts if not _empty_text(p)]
    try:
        text = content if isinstance(content, str) else "\n".join(js_string(p.get("text")) for p in texts)
    except NoJsString as exc:
        raise UnreadableInput(f"{where} has a text part whose text {exc}: Mastra's agent throws") from None
    if not text:
        raise UnreadableInput(f"{where} is a system message with no text: Mastra's agent throws (Invalid system "
                              "message format)")
    return text


def _is_format_2(content: Any) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(content, Mapping) and content.get("format") == 2 and content["format"].__class__ is not bool


def _check_texts(where: str, parts: list[Any]) -> None:
    for part in parts:
        text = part.get("text") if part.get("type") == "text" else None
        if text is not None and not isinstance(text, str):  # the agent calls `p.text?.trim()` on every text part
            raise UnreadableInput(f"{where} has a text part whose text is {_kind(text)}: Mastra's agent throws "
                                  "(p.text?.trim is not a function)")
