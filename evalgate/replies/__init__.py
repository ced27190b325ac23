"""The run format: what a target produced for one item (docs/spec.md), and `run_from_value`.

Pure data and conversions, no I/O. Hot path: the recorded target converts every item's
`output` through `run_from_value`, so it is plain dataclasses and hand-written checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import count
from typing import Any

from evalgate.replies.messages import run_from_messages
from evalgate.replies.model import (
    TOOL_STATUSES,
    UNREADABLE_PARTS,
    Run,
    RunFormatError,
    ToolCall,
    ToolName,
    UnreadableRun,
    conversation,
    float_sized,
    float_sized_usage,
    js_truthy,
    not_a_number,
)


def run_from_value(value: Any) -> Run:
    """Convert a recorded output or a target's reply to a Run.

    Accepts a string (text shorthand), a mapping in the run format, or a Mastra/OpenAI
    message list (bare, or as `{messages: [...], latency_ms?, usage?, cost_usd?}`).
    """
    if value.__class__ is dict and "messages" not in value:  # first: the recorded output of most items
        return _run_from_mapping(value)
    if isinstance(value, str):
        return Run(texts=[value])
    if isinstance(value, Run):
        return value
    if isinstance(value, list) or (isinstance(value, Mapping) and "messages" in value):
        return run_from_messages(value)
    if isinstance(value, Mapping):
        return _run_from_mapping(value)
    raise RunFormatError(
        f"a run must be a string, a mapping with `text` and `tool_calls`, or a message list, got {_kind(value)}"
    )


_RUN_KEYS = frozenset(
    {"text", "texts", "tool_calls", "latency_ms", "usage", "cost_usd", "result", "steps", "uncounted_tool_errors",
     "legacy_tool_invocations", "unreadable", "output_texts", "judge_texts", "agent_output"}
)

# A run of these keys only (`texts` or `text`, at most one each of the others) holds nothing to check past them.
_MEASURED_KEYS = frozenset({"text", "texts", "tool_calls", "latency_ms", "usage", "cost_usd"})


def _texts_of(value: Mapping[str, Any]) -> list[str]:
    """A run mapping's assistant texts: `texts`, or its one `text` (none is one empty message)."""
    texts = value.get("texts")
    if texts is not None:
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise RunFormatError("`texts` must be a list of strings")
        return texts
    text = value.get("text")
    if text.__class__ is str:
        return [text]
    if text is None:
        return [""]  # still one assistant message: Mastra joins its empty text with the others
    raise RunFormatError(f"`text` must be a string, got {_kind(text)}")


def _run_from_mapping(value: Mapping[str, Any]) -> Run:
    if not _RUN_KEYS.issuperset(value):
        unknown = sorted(map(str, value.keys() - _RUN_KEYS))
        raise RunFormatError(f"unknown run key(s) {unknown}; a run has {sorted(_RUN_KEYS)}")
    texts = _texts_of(value)
    raw_calls = value.get("tool_calls")
    if raw_calls:
        if not isinstance(raw_calls, list):
            raise RunFormatError(f"`tool_calls` must be a list, got {_kind(raw_calls)}")
        calls = list(map(_tool_call, raw_calls, count()))  # C-level: no comprehension frame, no index tuples
    elif raw_calls is None or isinstance(raw_calls, list):
        calls = []
    else:  # `{}`, `false`, `0`, `""`: no list of calls, whatever their truth
        raise RunFormatError(f"`tool_calls` must be a list, got {_kind(raw_calls)}")
    # The common cases: text and tool_calls, perhaps measured (an HTTP target's reply, most recorded outputs),
    # built without the checks of the optional keys.
    if _MEASURED_KEYS.issuperset(value):
        if len(value) <= 2 and ("text" in value or "texts" in value) and ("tool_calls" in value or len(value) == 1):
            return Run(texts, calls)
        return Run(texts, calls, _number(value.get("latency_ms"), "latency_ms"), _usage(value.get("usage")),
                   _number(value.get("cost_usd"), "cost_usd"))
    steps = value.get("steps")
    if steps is not None and not isinstance(steps, Mapping):
        raise RunFormatError(f"`steps` must be a mapping of step id to its outcome, got {_kind(steps)}")
    uncounted = value.get("uncounted_tool_errors") or []
    if not isinstance(uncounted, list) or not all(isinstance(e, str) for e in uncounted):
        raise RunFormatError("`uncounted_tool_errors` must be a list of strings")
    legacy = value.get("legacy_tool_invocations")
    if legacy is not None and not isinstance(legacy, list):
        raise RunFormatError(f"`legacy_tool_invocations` must be a list, got {_kind(legacy)}")
    unreadable = value.get("unreadable") or {}
    if not isinstance(unreadable, Mapping) or not all(
        k in UNREADABLE_PARTS and isinstance(v, str) for k, v in unreadable.items()
    ):
        raise RunFormatError(f"`unreadable` must map {' or '.join(UNREADABLE_PARTS)} to why Mastra cannot read it")
    per_message = {key: value.get(key) for key in ("output_texts", "judge_texts")}
    for key, listed in per_message.items():
        if listed is not None and (not isinstance(listed, list) or not all(isinstance(t, str) for t in listed)):
            raise RunFormatError(f"`{key}` must be a list of strings")
    agent_output = value.get("agent_output", True)
    if agent_output.__class__ is not bool:
        raise RunFormatError(f"`agent_output` must be true or false, got {_kind(agent_output)}")
    return Run(
        texts=texts,
        tool_calls=calls,
        latency_ms=_number(value.get("latency_ms"), "latency_ms"),
        usage=_usage(value.get("usage")),
        cost_usd=_number(value.get("cost_usd"), "cost_usd"),
        result=value.get("result"),
        steps=dict(steps) if steps is not None else None,
        uncounted_tool_errors=list(uncounted),
        legacy_tool_invocations=list(legacy) if legacy is not None else None,
        unreadable=dict(unreadable),
        output_texts=list(per_message["output_texts"]) if per_message["output_texts"] is not None else None,
        judge_texts=list(per_message["judge_texts"]) if per_message["judge_texts"] is not None else None,
        agent_output=agent_output,
    )


_CALL_KEYS = frozenset({"name", "args", "result", "error", "status"})


def _tool_call(raw: Any, index: int) -> ToolCall:
    if raw.__class__ is not dict and not isinstance(raw, Mapping):
        raise RunFormatError(f"tool_calls[{index}] must be a mapping, got {_kind(raw)}")
    name: Any = raw.get("name")  # JSON: checked below
    if (name.__class__ is not str or not name) and not _other_name(name):
        raise RunFormatError(f"tool_calls[{index}] needs a non-empty string `name`")
    if not _CALL_KEYS.issuperset(raw):
        unknown = sorted(map(str, raw.keys() - _CALL_KEYS))
        raise RunFormatError(
            f"tool_calls[{index}] has unknown key(s) {unknown}; a tool call has {sorted(_CALL_KEYS)}"
        )
    error = raw.get("error")
    if error is not None and error.__class__ is not str:
        error = str(error) if js_truthy(error) else None  # falsy in JavaScript (0, NaN, false): no error
    status = raw.get("status")
    if status is not None and status not in TOOL_STATUSES:
        raise RunFormatError(
            f"tool_calls[{index}].status must be one of {list(TOOL_STATUSES)}, got {status!r}"
        )
    return ToolCall(name, raw.get("args"), raw.get("result"), error, status)


def _other_name(name: Any) -> bool:
    """A name a Mastra message may hold (and evalgate writes back): any JSON value truthy in JavaScript."""
    return isinstance(name, int | float | Mapping | list) and js_truthy(name)


def _number(value: Any, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise not_a_number(key, value, _kind(value))
    return float_sized(value)


def _usage(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise RunFormatError(f"`usage` must be a mapping, got {_kind(value)}")
    return float_sized_usage(value)


def _kind(value: Any) -> str:
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


__all__ = ["TOOL_STATUSES", "Run", "RunFormatError", "ToolCall", "ToolName", "UnreadableRun", "conversation",
           "run_from_value"]
