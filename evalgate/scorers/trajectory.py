"""`trajectory_accuracy`: the run's tool calls against the item's `expected_trajectory`.

Gives the number of Mastra's unified trajectory scorer (`createTrajectoryScorerCode` in
`@mastra/evals` 1.10.2): the same expectation fields, the same comparison per ordering, the same
dimension weights and Mastra's rounding (each dimension to 2 decimals, then the weighted score).
The run's trajectory is its tool calls as Mastra extracts them from an agent's messages: a call
succeeded unless it errored or is pending, and it has its result unless it is pending (a failed
call that returned one, Mastra's `isError`, keeps it). Step data
(tool_args, tool_result, success) and repeated arguments are compared as JSON strings, as Mastra
does, so key order matters. Options that depart from Mastra: `round: false` (no rounding: a
gate passes only when everything matches) and `compare_data: value` (key order ignored).
See docs/multiturn.md and docs/scorers.md.

Expectation (on the item, or as the entry's defaults; camelCase keys accepted):
    steps: [name | {name, step_type?, tool_args?, tool_result?, success?}]   (a null name matches nothing)
    ordering: strict | relaxed | unordered          (default relaxed)
    allow_repeated_steps: bool                      (default true)
    max_steps, max_total_tokens, max_total_duration_ms: budgets
    no_redundant_calls: bool                        (default true once any budget is set)
    blacklisted_tools: [name], blacklisted_sequences: [[name, ...]]
    max_retries_per_tool: int                       (default 2: failed calls retried, tolerated)

Score: 0 on a blacklist hit; else the weighted mean of the active dimensions
(accuracy 0.4 when steps are given, efficiency 0.3 when a budget or no_redundant_calls is set,
tool failures 0.2 when a failed call was retried, blacklist 0.1 when a blacklist is set),
1.0 when no dimension is active; Math.round(score * 100) / 100.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from evalgate.load.items import Item
from evalgate.replies import Run, ToolCall
from evalgate.replies.model import ToolName, name_key, shown_name
from evalgate.scorers.base import NotScorable
from evalgate.scorers.js import text as jstext
from evalgate.scorers.registry import scorer_type

Ordering = Literal["strict", "relaxed", "unordered"]
ORDERINGS = ("strict", "relaxed", "unordered")
# Mastra's step types; a run's steps are all tool calls, so other kinds never match.
STEP_TYPES = (
    "tool_call",
    "mcp_tool_call",
    "model_generation",
    "agent_run",
    "workflow_step",
    "workflow_run",
    "workflow_conditional",
    "workflow_parallel",
    "workflow_loop",
    "workflow_sleep",
    "workflow_wait_event",
    "processor_run",
)
WEIGHTS = {"accuracy": 0.4, "efficiency": 0.3, "tool_failures": 0.2, "blacklist": 0.1}
_STEP_FIELDS = ("tool_args", "tool_result", "success")
_BUDGETS = ("max_steps", "max_total_tokens", "max_total_duration_ms")
# What an explicit null in an expectation means in Mastra (None: the dimension is off).
_NULL_MEANS: dict[str, Any] = {
    "ordering": "relaxed",
    "allow_repeated_steps": True,
    "no_redundant_calls": True,  # `null !== undefined` turns efficiency on; `?? true` then checks redundancy
    "max_retries_per_tool": 2,
}
# What makes an expectation (rather than only tuning one): without any, an item is not scorable.
_EXPECTING = ("steps", *_BUDGETS, "no_redundant_calls", "blacklisted_tools", "blacklisted_sequences")


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


class _Undefined:
    """JavaScript's `undefined`: the name of a step given none. Equal only to itself, so in strict
    order it matches the missing call past the end of the run, as `undefined === undefined`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED = _Undefined()


@dataclass(frozen=True)
class Step:
    """One expected step: a name, optionally a kind and the tool call's data to compare.

    A name that is null, empty or missing (UNDEFINED) matches no call: every call's name is truthy.
    """

    name: str | _Undefined | None
    step_type: str | None = None
    data: dict[str, Any] = field(default_factory=dict)  # tool_args / tool_result / success given


@dataclass(frozen=True)
class Actual:
    name: ToolName  # compared with JavaScript's `===` (name_key): 7 is never "7"
    tool_args: Any
    tool_result: Any
    success: bool
    step_type: str = "tool_call"


def parse_step(raw: Any, where: str) -> Step:
    if isinstance(raw, str) and raw:
        return Step(raw)
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: a step is a tool name or a mapping with `name`")
    values = {_snake(k): v for k, v in raw.items()}
    unknown = values.keys() - {"name", "step_type", *_STEP_FIELDS}
    if unknown:
        allowed = ", ".join(("name", "step_type", *_STEP_FIELDS))
        raise ValueError(f"{where}: unknown step key(s) {sorted(unknown)}; a step has {allowed}")
    name = values.get("name", UNDEFINED)
    if name is not None and name is not UNDEFINED and not isinstance(name, str):
        raise ValueError(f"{where}: a step's `name` must be a string")
    step_type = values.get("step_type")
    if step_type is not None and step_type not in STEP_TYPES:
        raise ValueError(f"{where}: step_type must be one of {', '.join(STEP_TYPES)}; got {step_type!r}")
    if values.get("success") is not None and not isinstance(values["success"], bool):
        raise ValueError(f"{where}: `success` must be true or false")
    # An explicit null is compared too, as Mastra does: no call's data is null, so it never matches.
    data = {k: values[k] for k in _STEP_FIELDS if k in values}
    return Step(name, step_type, data)


def parse_expectation(raw: Any, where: str) -> dict[str, Any]:
    """An expectation mapping (snake_case keys, validated); a bare list is its `steps`."""
    if isinstance(raw, list):
        raw = {"steps": raw}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: expected_trajectory is a list of steps or a mapping with `steps`")
    values = {_snake(k): v for k, v in raw.items()}
    known = {
        "steps",
        "ordering",
        "allow_repeated_steps",
        *_BUDGETS,
        "no_redundant_calls",
        "blacklisted_tools",
        "blacklisted_sequences",
        "max_retries_per_tool",
    }
    unknown = values.keys() - known
    if unknown:
        allowed = ", ".join(sorted(known))
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}; expected_trajectory has {allowed}")
    out: dict[str, Any] = {}
    # An explicit null still overrides the entry's default, as `{...defaults, ...item}` does in Mastra,
    # and then means what Mastra's `??` fallback (or the value's falsiness) makes of it.
    # A null budget is kept, to throw when scored (an item's own budget may still replace a default's).
    for key in [k for k, v in values.items() if v is None]:
        del values[key]
        out[key] = _NULL_MEANS.get(key)
    if "steps" in values:
        if not isinstance(values["steps"], list):
            raise ValueError(f"{where}: `steps` must be a list")
        out["steps"] = [parse_step(s, f"{where}.steps[{i}]") for i, s in enumerate(values["steps"])]
    if "ordering" in values:
        if values["ordering"] not in ORDERINGS:
            raise ValueError(f"{where}: ordering must be strict, relaxed or unordered; got {values['ordering']!r}")
        out["ordering"] = values["ordering"]
    for key in ("allow_repeated_steps", "no_redundant_calls"):
        if key in values:
            if not isinstance(values[key], bool):
                raise ValueError(f"{where}: `{key}` must be true or false")
            out[key] = values[key]
    for key in (*_BUDGETS, "max_retries_per_tool"):
        if key in values:
            value = values[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{where}: `{key}` must be a finite number >= 0")
            out[key] = value
    if "blacklisted_tools" in values:
        tools = values["blacklisted_tools"]
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise ValueError(f"{where}: `blacklisted_tools` must be a list of tool names")
        out["blacklisted_tools"] = list(tools)
    if "blacklisted_sequences" in values:
        seqs = values["blacklisted_sequences"]
        if not isinstance(seqs, list) or not all(
            isinstance(s, list) and all(isinstance(t, str) for t in s) for s in seqs
        ):
            raise ValueError(f"{where}: `blacklisted_sequences` must be a list of lists of tool names")
        out["blacklisted_sequences"] = [list(s) for s in seqs]
    return out


# ---- the dimensions (ports of @mastra/evals' compareTrajectories & co.) ----


def _same(a: Any, b: Any) -> bool:
    """JSON equality: key order ignored, true is not 1, 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


Same = Callable[[Any, Any], bool]
CompareData = Literal["json_string", "value"]
_COMPARE: dict[str, Same] = {"json_string": jstext.json_equal, "value": _same}


def step_matches(actual: Actual, expected: Step, same: Same = jstext.json_equal) -> bool:
    if actual.name != expected.name:
        return False
    if expected.step_type is None:
        return True
    if actual.step_type != expected.step_type:
        return False
    for key, value in expected.data.items():
        seen = getattr(actual, key)
        if seen is None or not same(seen, value):
            return False
    return True


@dataclass
class Accuracy:
    score: float
    matched: int
    expected: int
    missing: list[str | _Undefined | None]  # the expected steps' names
    extra: list[ToolName]  # the run's calls' names
    out_of_order: list[str]


def compare(
    actual: list[Actual],
    expected: list[Step],
    ordering: str,
    allow_repeated: bool,
    same: Same = jstext.json_equal,
    rounding: bool = True,
) -> Accuracy:
    names = [a.name for a in actual]
    expected_names = [s.name for s in expected]
    if not expected:
        return Accuracy(1.0 if not actual else 0.0, 0, 0, [], names, [])
    counts: dict[tuple[str, Any], int] = {}
    for name in names:
        counts[name_key(name)] = counts.get(name_key(name), 0) + 1
    repeated = [n for n, c in counts.items() if c > 1]
    matched_idx: set[int] = set()
    out_of_order: list[str] = []
    if ordering == "strict":
        for i in range(max(len(names), len(expected))):
            at_i: ToolName | _Undefined = names[i] if i < len(names) else UNDEFINED
            if i < len(expected) and at_i == expected_names[i]:
                # past the run's end only a nameless step gets here: Mastra counts it matched
                if i >= len(names) or step_matches(actual[i], expected[i], same):
                    matched_idx.add(i)
            elif i < len(names) and name in expected_names:
                out_of_order.append(name)
    elif ordering == "unordered":
        used: set[int] = set()
        for i, step in enumerate(expected):
            for j, seen in enumerate(actual):
                if j not in used and step_matches(seen, step, same):
                    matched_idx.add(i)
                    used.add(j)
                    break
    else:
        last = -1
        for i, step in enumerate(expected):
            for j in range(last + 1, len(actual)):
                if names[j] == step.name and step_matches(actual[j], step, same):
                    matched_idx.add(i)
                    last = j
                    break
            else:
                if step.name in names:
                    out_of_order.append(step.name)
    matched = len(matched_idx)
    score = matched / len(expected)
    if ordering == "strict" and len(names) > len(expected):
        score = max(0.0, score - (len(names) - len(expected)) / len(expected) * 0.5)
    if not allow_repeated and repeated:
        score = max(0.0, score - len(repeated) * 0.1)
    missing = [n for i, n in enumerate(expected_names) if i not in matched_idx]
    expected_set = set(expected_names)  # strings: a name of another type is never among them
    extra = [n for n in names if not (isinstance(n, str) and n in expected_set)]
    return Accuracy(_round2(max(0.0, min(1.0, score)), rounding), matched, len(expected), missing, extra, out_of_order)


def _round2(value: float, rounding: bool) -> float:
    return jstext.round2(value) if rounding else value


def _over(total: float, limit: float) -> float:
    # Mastra: 1 - overshoot / budget (a budget of 0 with any overshoot scores 0).
    if total <= limit:
        return 1.0
    return max(0.0, 1.0 - (total - limit) / limit) if limit > 0 else 0.0


def efficiency(
    actual: list[Actual], run: Run, config: dict[str, Any], same: Same = jstext.json_equal, rounding: bool = True
) -> tuple[float, list[str]]:
    dims: list[float] = []
    notes: list[str] = []
    if "max_steps" in config:
        dims.append(_over(len(actual), config["max_steps"]))
        if len(actual) > config["max_steps"]:
            notes.append(f"{len(actual)} steps over the budget of {config['max_steps']:g}")
    if "max_total_tokens" in config:
        tokens = _total_tokens(run)
        dims.append(_over(tokens, config["max_total_tokens"]))
        if tokens > config["max_total_tokens"]:
            notes.append(f"{tokens:g} tokens over the budget of {config['max_total_tokens']:g}")
    if "max_total_duration_ms" in config:
        if run.latency_ms is None:
            raise NotScorable("max_total_duration_ms needs the run's latency_ms")
        dims.append(_over(run.latency_ms, config["max_total_duration_ms"]))
        if run.latency_ms > config["max_total_duration_ms"]:
            notes.append(f"{run.latency_ms:g} ms over the budget of {config['max_total_duration_ms']:g}")
    if config.get("no_redundant_calls", True):
        redundant = [
            cur.name
            for prev, cur in itertools.pairwise(actual)
            if name_key(prev.name) == name_key(cur.name) and same(prev.tool_args, cur.tool_args)
        ]
        dims.append(max(0.0, 1.0 - len(redundant) * 0.2) if redundant else 1.0)
        if redundant:
            notes.append(f"redundant calls: {', '.join(map(shown_name, redundant))}")
    total = 0.0
    for value in dims:
        total += value
    score = total / len(dims) if dims else 1.0
    return _round2(max(0.0, min(1.0, score)), rounding), notes


def _total_tokens(run: Run) -> float:
    usage = run.usage or {}
    total = usage.get("total_tokens")
    if isinstance(total, (int, float)):
        return total
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(prompt, (int, float)) or not isinstance(completion, (int, float)):
        raise NotScorable("max_total_tokens needs usage: total_tokens, or prompt_tokens and completion_tokens")
    return prompt + completion


def blacklist_hits(actual: list[Actual], config: dict[str, Any]) -> list[str]:
    names = [a.name for a in actual]
    hits = [t for t in config.get("blacklisted_tools") or [] if t in names]
    for seq in config.get("blacklisted_sequences") or []:
        n = len(seq)
        if n and any(names[i : i + n] == seq for i in range(len(names) - n + 1)):
            hits.append(" → ".join(seq))
    return hits


def tool_failures(actual: list[Actual], tolerated: float, rounding: bool = True) -> tuple[float | None, list[str]]:
    """Retries of a tool after it failed; None when there were none (the dimension is off)."""
    retried: list[tuple[ToolName, int]] = []
    i = 0
    while i < len(actual):
        j, retries = i + 1, 0
        while j < len(actual) and name_key(actual[j].name) == name_key(actual[i].name):
            if not actual[j - 1].success:
                retries += 1
            j += 1
        if retries:
            retried.append((actual[i].name, retries))
        i = j
    if not retried:
        return None, []
    excess = sum(max(0, r - tolerated) for _, r in retried)
    notes = [f"{shown_name(name)} retried {r} times (tolerated {tolerated:g})" for name, r in retried if r > tolerated]
    return _round2(max(0.0, min(1.0, max(0.0, 1 - excess * 0.2))), rounding), notes


def actual_steps(run: Run) -> list[Actual]:
    run.require("tool_calls")
    return [_actual(call) for call in run.tool_calls]


def _actual(call: ToolCall) -> Actual:
    # Mastra wraps non-object args and results as {value: ...}. Every `state: 'result'` keeps its
    # result, `isError` ones too; a thrown call has none to keep, a pending one none yet.
    def wrap(value: Any) -> Any:
        if value is None or isinstance(value, Mapping):
            return value
        return {"value": value}

    # success: `state === 'result' && isError !== true`; a result's own `error` field does not count.
    return Actual(call.name, wrap(call.args), wrap(call.result) if call.status != "pending" else None,
                  call.succeeded)


def score_trajectory(
    run: Run,
    config: dict[str, Any],
    weights: Mapping[str, float],
    same: Same = jstext.json_equal,
    rounding: bool = True,
) -> tuple[float, str | None]:
    """The score and, below 1, a reason naming what differed."""
    run.require("tool_calls")  # Mastra's extractTrajectory runs before the scorer and throws first
    for key in _BUDGETS:
        if key in config and config[key] is None:  # checkTrajectoryEfficiency: "Invalid maxSteps budget"
            raise ValueError(f"`{key}` must be a finite number >= 0, not null")
    actual = actual_steps(run)
    hits = blacklist_hits(actual, config)
    if hits:
        return 0.0, f"blacklisted: {', '.join(hits)}"
    dims: list[tuple[float, float]] = []
    notes: list[str] = []
    if config.get("steps") is not None:
        ordering = config.get("ordering", "relaxed")
        acc = compare(actual, config["steps"], ordering, config.get("allow_repeated_steps", True), same, rounding)
        dims.append((weights["accuracy"], acc.score))
        if acc.score < 1.0:
            detail = [f"{acc.matched}/{acc.expected} expected steps matched"]
            for label, names in (("missing", acc.missing), ("extra", acc.extra), ("out of order", acc.out_of_order)):
                if names:
                    detail.append(f"{label}: {', '.join(map(shown_name, names))}")
            notes.append("; ".join(detail))
    if any(k in config for k in (*_BUDGETS, "no_redundant_calls")):
        value, more = efficiency(actual, run, config, same, rounding)
        dims.append((weights["efficiency"], value))
        notes += more
    failures, more = tool_failures(actual, config.get("max_retries_per_tool", 2), rounding)
    if failures is not None:
        dims.append((weights["tool_failures"], failures))
        notes += more
    if config.get("blacklisted_tools") or config.get("blacklisted_sequences"):
        dims.append((weights["blacklist"], 1.0))
    if not dims:
        return 1.0, None
    total_weight = 0.0
    for weight, _ in dims:
        total_weight += weight
    score = 1.0
    if total_weight > 0:
        # Mastra's sum order: each dimension's weight share times its value.
        score = 0.0
        for weight, value in dims:
            score += weight / total_weight * value
    if rounding:
        score = jstext.js_round(score * 100) / 100
    return score, ("; ".join(notes) if score < 1.0 and notes else None)


@scorer_type("trajectory_accuracy")
def trajectory_accuracy(
    steps: list[str | dict[str, Any]] | None = None,
    ordering: Ordering | None = None,
    allow_repeated_steps: bool | None = None,
    max_steps: int | None = None,
    max_total_tokens: int | None = None,
    max_total_duration_ms: float | None = None,
    no_redundant_calls: bool | None = None,
    blacklisted_tools: list[str] | None = None,
    blacklisted_sequences: list[list[str]] | None = None,
    max_retries_per_tool: int | None = None,
    weights: dict[str, float | None] | None = None,
    round: bool = True,
    compare_data: CompareData = "json_string",
    empty: Literal["score", "not_scorable"] = "score",
    *,
    nulls: frozenset[str] = frozenset(),
) -> Any:
    """How well the run's tool calls follow the item's `expected_trajectory` (1.0: all as expected).

    The parameters are defaults that an item's `expected_trajectory` overrides key by key.
    An item with no `expected_trajectory` is scored by these parameters alone, as Mastra scores it
    (nothing expected and no failed call: 1); with `empty: not_scorable` (evalgate's option) it is
    not scorable unless these parameters set steps, a budget or a blacklist. A parameter set to
    null stays null under the item's (as in Mastra's `{...defaults, ...item}`): a null budget is
    every such item's error, a null no_redundant_calls checks redundancy, a null weight is its
    default. Mastra rounds to 2 decimals (`round: false` keeps the exact value) and compares step
    data as JSON strings (`compare_data: value` ignores key order).
    """
    given = {
        "steps": steps,
        "ordering": ordering,
        "allow_repeated_steps": allow_repeated_steps,
        "max_steps": max_steps,
        "max_total_tokens": max_total_tokens,
        "max_total_duration_ms": max_total_duration_ms,
        "no_redundant_calls": no_redundant_calls,
        "blacklisted_tools": blacklisted_tools,
        "blacklisted_sequences": blacklisted_sequences,
        "max_retries_per_tool": max_retries_per_tool,
    }
    # `nulls`: the parameters the spec entry set to null (None from Python means absent).
    defaults = parse_expectation({k: v for k, v in given.items() if v is not None or k in nulls},
                                 "trajectory_accuracy")
    if "weights" in nulls:  # createTrajectoryScorerCode reads `null.accuracy`: it throws
        raise ValueError("`weights` must be a mapping of weights, not null (or leave it out)")
    chosen = {k: w for k, w in (weights or {}).items() if w is not None}  # a null weight: `?? default`
    unknown = (weights or {}).keys() - WEIGHTS.keys()
    if unknown:
        raise ValueError(f"unknown weight(s) {sorted(unknown)}; weights are {', '.join(WEIGHTS)}")
    if any(isinstance(w, bool) or not math.isfinite(w) for w in chosen.values()):
        raise ValueError("weights must be finite numbers")
    merged_weights = {k: max(0.0, float(chosen.get(k, v))) for k, v in WEIGHTS.items()}
    # A null that expects nothing (steps, a blacklist) does not make items without one scorable.
    stand_alone = any(k in defaults and (defaults[k] is not None or k in _BUDGETS) for k in _EXPECTING)

    def score(item: Item, run: Run) -> tuple[float, str | None]:
        raw = item.expected_trajectory
        if raw is None and empty == "not_scorable" and not stand_alone:
            raise NotScorable("the item has no expected_trajectory")
        config = {**defaults, **(parse_expectation(raw, "expected_trajectory") if raw is not None else {})}
        return score_trajectory(run, config, merged_weights, _COMPARE[compare_data], round)

    return score
