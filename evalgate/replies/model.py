"""The run's data: `Run` (one target reply), `ToolCall`, and a conversation's runs as one."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

TOOL_STATUSES = ("ok", "error", "pending")
# A string; from Mastra messages, whatever `toolName` held that is truthy in JavaScript (7, true, ...),
# which Mastra counts as a call and compares with `===`: 7 is never "7".
ToolName: TypeAlias = str | int | float | bool | dict[str, Any] | list[Any]


class RunFormatError(ValueError):
    """A run (recorded output or a target's reply) is not in the run format."""


# What a Mastra message list's readers may throw on: the assistant messages' text (the checks), every
# message's text (the code scorers), every message's calls, the assistant messages' text to trim() (summarization),
# the list itself when it is empty (the tool-call accuracy scorers).
UNREADABLE_PARTS = ("text", "output_texts", "tool_calls", "agent_responses", "output_messages")


class UnreadableRun(ValueError):
    """A check read a part of the run that Mastra's reader throws on (`Run.unreadable`): it gives no number."""


@dataclass(slots=True)
class ToolCall:
    name: ToolName
    args: Any = None
    result: Any = None
    error: str | None = None
    status: str | None = None

    @property
    def failed(self) -> bool:
        """True if the call errored, never got a result back, or its result has a truthy `error`
        field (Mastra's noToolErrors: `Boolean(inv.result?.error)`)."""
        if not self.succeeded:
            return True
        result = self.result
        if result.__class__ is dict:  # the common result: no ABC check, and no `error` key is no error
            error = result.get("error")
            return error is not None and js_truthy(error)
        return isinstance(result, Mapping) and js_truthy(result.get("error"))

    @property
    def succeeded(self) -> bool:
        """True if the call returned and was not flagged as failed (Mastra's trajectory `success`:
        `state === 'result' && isError !== true`; a result's own `error` field does not count)."""
        return not self.error and self.status not in ("error", "pending")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "args": self.args}
        if self.result is not None:
            out["result"] = self.result
        if self.error:
            out["error"] = self.error
        if self.status is not None:
            out["status"] = self.status
        return out


def name_key(name: Any) -> tuple[str, Any]:
    """Equal for two names exactly when JavaScript's `===` (and a Map's keys) says so: strings and
    numbers by value, `true` is not 1, an object or list only to itself."""
    if isinstance(name, str):
        return ("string", name)
    if isinstance(name, bool):
        return ("boolean", name)
    if isinstance(name, int | float):
        try:
            return ("number", float(name))
        except OverflowError:  # an integer beyond a double: JSON.parse makes it Infinity
            return ("number", math.inf if name > 0 else -math.inf)
    return ("object", id(name))


def shown_name(name: Any) -> str:
    """A name as text, for reasons and reports."""
    if isinstance(name, str):
        return name
    try:
        return json.dumps(name, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(name)


T = TypeVar("T")
_LARGEST = int(1.7976931348623157e308)


# A number YAML 1.1 (PyYAML) reads as text: an exponent without a dot or without its sign (`1e-6`, `1.0e6`).
_YAML_TEXT_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+")


def not_a_number(key: str, value: Any, kind: str) -> RunFormatError:
    """`key` must be a number; for text that is one to JSON and YAML 1.2, say why YAML read it as text."""
    if isinstance(value, str) and _YAML_TEXT_NUMBER.fullmatch(value.strip()):
        mantissa, e, exponent = repr(float(value)).partition("e")
        written = (mantissa if "." in mantissa else mantissa + ".0") + (e + exponent if e else "")
        return RunFormatError(f"`{key}` must be a number, got the string {value.strip()!r} (in YAML, a number with "
                              f"an exponent is text unless it has a dot and a signed exponent: write {written})")
    return RunFormatError(f"`{key}` must be a number, got {kind}")


def float_sized(value: T) -> T | float:
    """A number as a float can hold it: an integer past the largest float (`1` and 400 zeros, which JSON
    and YAML read as an int) is +-Infinity, as `1e999` is; anything else is returned as it is. Every sum,
    comparison and division with a run's latency, cost or tokens is float arithmetic, which such an
    integer overflows (OverflowError)."""
    if isinstance(value, int) and type(value) is int and abs(value) > _LARGEST:
        return math.inf if value > 0 else -math.inf
    return value


def float_sized_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    return {key: float_sized(count) for key, count in usage.items()}


class NoJsString(ValueError):
    """JavaScript's ToString throws on this value (or evalgate cannot say what it would give)."""


def js_number(value: float) -> str:
    """Number.prototype.toString(): the shortest digits that read back (Python's repr finds the same),
    written plainly from 1e-6 up to 1e21 and in exponent form outside (`1e+21`, `1.5e-7`)."""
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"  # -0 too
    mantissa, _, exp = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    point = len(whole) + int(exp or 0) - (len(whole + fraction) - len(digits))  # value = 0.digits x 10^point
    digits = digits.rstrip("0")
    sign = "-" if value < 0 else ""
    if len(digits) <= point <= 21:
        return sign + digits + "0" * (point - len(digits))
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    shown = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{shown}e{'+' if point > 0 else '-'}{abs(point - 1)}"


def js_string(value: Any, _open: tuple[int, ...] = ()) -> str:
    """JavaScript's ToString of a JSON value, as `Array.prototype.join` applies it: an object is
    "[object Object]", a list its items' strings joined by "," (null as ""), a number as JavaScript
    writes it. Raises NoJsString where JavaScript throws: an object with its own `toString` key (JSON
    cannot make it a function, so `Cannot convert object to primitive value`)."""
    if value.__class__ is str:
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        try:
            return js_number(float(value))
        except OverflowError:  # an integer beyond a double: JSON.parse makes it Infinity
            return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Mapping):
        if "toString" in value:
            raise NoJsString('is an object with its own "toString", which JavaScript cannot make a string '
                             "(Cannot convert object to primitive value)")
        return "[object Object]"
    if isinstance(value, list):
        if id(value) in _open:  # V8's join writes a list inside itself as ""
            return ""
        inner = (*_open, id(value))
        return ",".join(js_string(v, inner) for v in value)
    raise NoJsString(f"is a {type(value).__name__}, which JSON has no value for")


def js_truthy(value: Any) -> bool:
    """JavaScript's truthiness: an empty object or list is truthy, NaN is falsy."""
    if isinstance(value, Mapping | list):
        return True
    if isinstance(value, float):
        return value == value and value != 0.0  # NaN is falsy
    return bool(value)


@dataclass(slots=True)
class Run:
    """One target reply. `texts` holds each assistant message's text, in order.

    `result` and `steps` are a workflow's structured result and its steps' outcomes
    (`{step_id: {status, output?, error?}}`), for scorers that read more than text.
    `uncounted_tool_errors` describes the failed tool invocations of Mastra messages that are not
    calls (no `toolName`, or a state other than result/call/output-error): Mastra's noToolErrors
    counts them, its call counts and trajectories do not.
    `legacy_tool_invocations` (Mastra messages only, else None): every entry of the assistant
    messages' legacy `content.toolInvocations`, the only tool evidence Mastra's faithfulness reads.
    `unreadable` (Mastra messages only): for "text", "output_texts", "tool_calls" and "agent_responses", why
    Mastra's reader of that part throws on these messages (`parts: {}`, a null part, ...); a check reading it
    raises (`require`). "output_messages": the list is empty, on which the tool-call accuracy scorers throw.
    "agent_responses" is summarization's (getSummary: each assistant message's text, which
    must be a string to `trim()`), recorded only where `agent_output`.
    `output_texts` (Mastra messages only, and only where it differs from `texts`, else None): the text of
    every output message whatever its role, which Mastra's code scorers read.
    `judge_texts` (Mastra messages only, where it differs from `texts`, else None): each assistant
    message's text as Mastra's LLM scorers read it (getTextFromValue: the last text part whose text is
    a string, `content.body` too).
    `agent_output` (False for Mastra messages only): whether every message is one Mastra's
    isScorerRunOutputForAgent accepts (a string `id`, `content` and `createdAt`), as a real agent's are. Where
    not, Mastra's summarization reads the output as its other LLM scorers do, never trimming a text.
    """

    texts: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    latency_ms: float | None = None
    usage: dict[str, Any] | None = None
    cost_usd: float | None = None
    result: Any = None
    steps: dict[str, Any] | None = None
    uncounted_tool_errors: list[str] = field(default_factory=list)
    legacy_tool_invocations: list[Any] | None = None
    unreadable: dict[str, str] = field(default_factory=dict)
    output_texts: list[str] | None = None
    judge_texts: list[str] | None = None
    agent_output: bool = True

    def require(self, part: str) -> None:
        """Raise where Mastra's reader of `part` (one of UNREADABLE_PARTS) throws on this run's messages:
        the check gives no number (a scorer's error, a gate's 0), as Mastra's throwing check gives none."""
        if self.unreadable and part in self.unreadable:
            raise UnreadableRun(self.unreadable[part])

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
        if self.result is not None:
            out["result"] = self.result
        if self.steps is not None:
            out["steps"] = self.steps
        if self.uncounted_tool_errors:
            out["uncounted_tool_errors"] = list(self.uncounted_tool_errors)
        if self.legacy_tool_invocations is not None:  # faithfulness' evidence: a resumed rescore needs it
            out["legacy_tool_invocations"] = list(self.legacy_tool_invocations)
        if self.unreadable:  # a resumed rescore errors the same checks
            out["unreadable"] = dict(self.unreadable)
        if self.output_texts is not None:  # what the code scorers read, for a resumed rescore
            out["output_texts"] = list(self.output_texts)
        if self.judge_texts is not None:
            out["judge_texts"] = list(self.judge_texts)
        if not self.agent_output:
            out["agent_output"] = False
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
    agent_output = all(r.agent_output for r in runs)  # the turns' messages as one list
    return Run(
        texts=texts,
        tool_calls=calls,
        latency_ms=_total(r.latency_ms for r in runs),
        usage=_merge_usage([r.usage for r in runs]),
        cost_usd=_total(r.cost_usd for r in runs),
        result=next((r.result for r in reversed(runs) if r.result is not None), None),
        steps=next((r.steps for r in reversed(runs) if r.steps is not None), None),
        uncounted_tool_errors=[e for r in runs for e in r.uncounted_tool_errors],
        legacy_tool_invocations=_legacy_invocations(runs),
        # a reader of the whole conversation meets the first turn it cannot read; summarization trims no text
        # of a list that is no agent's output
        unreadable={k: f"turn {n}: {v}" for n, r in reversed(list(enumerate(runs, 1)))
                    for k, v in r.unreadable.items() if (agent_output or k != "agent_responses")
                    and (k != "output_messages" or all("output_messages" in t.unreadable for t in runs))},
        output_texts=_per_message(runs, "output_texts"),
        judge_texts=_per_message(runs, "judge_texts"),
        agent_output=agent_output,
    )


def _per_message(runs: list[Run], name: str) -> list[str] | None:
    """The turns' `output_texts` or `judge_texts` in order; a turn without them gives its `texts`."""
    if all(getattr(r, name) is None for r in runs):
        return None
    return [t for r in runs for t in (getattr(r, name) if getattr(r, name) is not None else r.texts)]


def _legacy_invocations(runs: list[Run]) -> list[Any] | None:
    """The turns' legacy invocations in order; a turn in the run format gives its returned calls."""
    if all(r.legacy_tool_invocations is None for r in runs):
        return None
    out: list[Any] = []
    for run in runs:
        if run.legacy_tool_invocations is not None:
            out.extend(run.legacy_tool_invocations)
            continue
        out.extend({"state": "result", "toolName": c.name, "args": c.args, "result": c.result}
                   for c in run.tool_calls if c.result is not None and c.status != "pending")
    return out


def _total(values: Iterable[float | None]) -> float | None:
    """Added left to right, as JavaScript adds: Python 3.12's `sum()` compensates, and would give
    the image (3.12) other last digits than a 3.11 run."""
    total: float | None = None
    for value in values:
        if value is not None:
            total = value if total is None else total + value
    # finite turns (1e308 each) can add up to infinity: held at the largest float, as every sum of spend is
    # (budget.saturated), or the conversation's cost would count as nothing against a cap
    return total if total is None or total <= sys.float_info.max else sys.float_info.max


def _merge_usage(usages: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    merged: dict[str, Any] = {}
    for usage in usages:
        for key, value in (usage or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                merged[key] = merged.get(key, 0) + value
    return merged or None
