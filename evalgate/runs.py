"""The run format: what a target produced for one item (CONTRACT section 3).

Pure data and conversions, no I/O. Hot path: the recorded target converts every item's
`output` through `run_from_value`, so it is plain dataclasses and hand-written checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

TOOL_STATUSES = ("ok", "error", "pending")


class RunFormatError(ValueError):
    """A run (recorded output or a target's reply) is not in the run format."""


@dataclass(slots=True)
class ToolCall:
    name: str
    args: Any = None
    result: Any = None
    error: str | None = None
    status: str | None = None

    @property
    def failed(self) -> bool:
        """True if the call errored or never got a result back."""
        return bool(self.error) or self.status in ("error", "pending")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "args": self.args}
        if self.result is not None:
            out["result"] = self.result
        if self.error:
            out["error"] = self.error
        if self.status is not None:
            out["status"] = self.status
        return out


@dataclass(slots=True)
class Run:
    """One target reply. `texts` holds each assistant message's text, in order."""

    texts: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    latency_ms: float | None = None
    usage: dict[str, Any] | None = None
    cost_usd: float | None = None

    @property
    def text(self) -> str:
        """The assistant texts joined by one space (includes, excludes, similarity)."""
        texts = self.texts
        return texts[0] if len(texts) == 1 else " ".join(texts)

    @property
    def joined_text(self) -> str:
        """The assistant texts joined with nothing (equals, matches)."""
        texts = self.texts
        return texts[0] if len(texts) == 1 else "".join(texts)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "text": self.text,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
        }
        if len(self.texts) > 1:
            out["texts"] = list(self.texts)
        if self.latency_ms is not None:
            out["latency_ms"] = self.latency_ms
        if self.usage is not None:
            out["usage"] = self.usage
        if self.cost_usd is not None:
            out["cost_usd"] = self.cost_usd
        return out


def conversation(runs: list[Run]) -> Run:
    """The whole conversation as one run: texts and tool calls in turn order, costs added."""
    if len(runs) == 1:
        return runs[0]
    texts: list[str] = []
    calls: list[ToolCall] = []
    for run in runs:
        texts.extend(run.texts)
        calls.extend(run.tool_calls)
    return Run(
        texts=texts,
        tool_calls=calls,
        latency_ms=_total(r.latency_ms for r in runs),
        usage=_merge_usage([r.usage for r in runs]),
        cost_usd=_total(r.cost_usd for r in runs),
    )


def _total(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _merge_usage(usages: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    merged: dict[str, Any] = {}
    for usage in usages:
        for key, value in (usage or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                merged[key] = merged.get(key, 0) + value
    return merged or None


def run_from_value(value: Any) -> Run:
    """Convert a recorded output or a target's reply to a Run.

    Accepts a string (text shorthand), a mapping in the run format, or a Mastra/OpenAI
    message list (bare, or as `{messages: [...], latency_ms?, usage?, cost_usd?}`).
    """
    if isinstance(value, str):
        return Run(texts=[value])
    if isinstance(value, Run):
        return value
    if isinstance(value, list) or (isinstance(value, Mapping) and "messages" in value):
        from evalgate.formats import run_from_messages  # formats imports this module

        return run_from_messages(value)
    if isinstance(value, Mapping):
        return _run_from_mapping(value)
    raise RunFormatError(
        f"a run must be a string, a mapping with `text` and `tool_calls`, or a message list, got {_kind(value)}"
    )


_RUN_KEYS = frozenset({"text", "texts", "tool_calls", "latency_ms", "usage", "cost_usd"})


def _run_from_mapping(value: Mapping[str, Any]) -> Run:
    for key in value:
        if key not in _RUN_KEYS:
            unknown = sorted(k for k in value if k not in _RUN_KEYS)
            raise RunFormatError(f"unknown run key(s) {unknown}; a run has {sorted(_RUN_KEYS)}")
    texts = value.get("texts")
    if texts is not None:
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise RunFormatError("`texts` must be a list of strings")
    else:
        text = value.get("text")
        if text.__class__ is str:
            texts = [text]
        elif text is None:
            texts = [""]  # still one assistant message: Mastra joins its empty text with the others
        else:
            raise RunFormatError(f"`text` must be a string, got {_kind(text)}")
    raw_calls = value.get("tool_calls")
    if raw_calls:
        if not isinstance(raw_calls, list):
            raise RunFormatError(f"`tool_calls` must be a list, got {_kind(raw_calls)}")
        calls = [_tool_call(c, i) for i, c in enumerate(raw_calls)]
    else:
        calls = []
    # The common case: text and tool_calls only (a measurement may be one of two keys).
    if len(value) <= 2 and "latency_ms" not in value and "usage" not in value and "cost_usd" not in value:
        return Run(texts, calls)
    return Run(
        texts=texts,
        tool_calls=calls,
        latency_ms=_number(value.get("latency_ms"), "latency_ms"),
        usage=_usage(value.get("usage")),
        cost_usd=_number(value.get("cost_usd"), "cost_usd"),
    )


_CALL_KEYS = frozenset({"name", "args", "result", "error", "status"})


def _tool_call(raw: Any, index: int) -> ToolCall:
    if raw.__class__ is not dict and not isinstance(raw, Mapping):
        raise RunFormatError(f"tool_calls[{index}] must be a mapping, got {_kind(raw)}")
    name = raw.get("name")
    if name.__class__ is not str or not name:
        raise RunFormatError(f"tool_calls[{index}] needs a non-empty string `name`")
    for key in raw:
        if key not in _CALL_KEYS:
            unknown = sorted(k for k in raw if k not in _CALL_KEYS)
            raise RunFormatError(
                f"tool_calls[{index}] has unknown key(s) {unknown}; a tool call has {sorted(_CALL_KEYS)}"
            )
    error = raw.get("error")
    if error is not None and error.__class__ is not str:
        error = str(error) if error not in (False, 0) else None  # falsy, as for Mastra: no error
    status = raw.get("status")
    if status is not None and status not in TOOL_STATUSES:
        raise RunFormatError(
            f"tool_calls[{index}].status must be one of {list(TOOL_STATUSES)}, got {status!r}"
        )
    return ToolCall(name, raw.get("args"), raw.get("result"), error, status)


def _number(value: Any, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RunFormatError(f"`{key}` must be a number, got {_kind(value)}")
    return value


def _usage(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise RunFormatError(f"`usage` must be a mapping, got {_kind(value)}")
    return dict(value)


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
