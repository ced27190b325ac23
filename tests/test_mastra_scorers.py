"""Differential test: evalgate's built-in scorers against @mastra/evals' own, number for number.

Random cases (seeded: unicode, odd whitespace, several output messages, empty strings, tool calls
that fail or return `{error: ...}`, trajectories with nested arguments in shuffled key order) are
scored by Mastra's prebuilt scorers under Node (tests/mastra/run_scorers.mjs, one process for all
cases) and by evalgate's scorers, and compared per case at 1e-9. The judged scorers get the same
verdicts on both sides: Mastra's scorer a scripted model answering each of its judge steps,
evalgate's the fake judge (a real HTTP server on 127.0.0.1) answering its one call with the same
classification in evalgate's shape. The agreement per scorer is printed (`pytest -s` shows it).

Where Mastra rejects a run (answer_similarity without ground truth, prompt_alignment with an empty
output), evalgate's scorer must say not scorable. completeness runs compromise's own build in V8
(evalgate.scorers.compromise), the version tests/mastra's lock installs for Mastra.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fake_judge import FakeJudge

from evalgate.judge import Judge
from evalgate.load.build import build_entry
from evalgate.load.items import Item
from evalgate.load.spec.context import BuildContext
from evalgate.replies import Run, run_from_value
from evalgate.replies.messages import mastra_system_prompt, no_input_messages
from evalgate.scorers import checks, code, judged, trajectory
from evalgate.scorers.base import NotScorable, normalize
from evalgate.scorers.registry import lookup

HARNESS = Path(__file__).parent / "mastra"
READY = shutil.which("node") is not None and (HARNESS / "node_modules" / "@mastra" / "evals").is_dir()

if not READY and os.environ.get("CI"):
    pytest.fail("CI must run the Mastra scorer differential test: `npm ci` in tests/mastra", pytrace=False)
pytestmark = pytest.mark.skipif(not READY, reason="needs node and `npm ci` in tests/mastra")

TOLERANCE = 1e-9

WORDS = [
    "It", "is", "sunny", "in", "Brooklyn", "rain", "raining", "rains", "72F.", "SNOW", "😀", "😀😃", "ab", "a",
    "Ärger", "café", "naïve", "the", "weather", "was", "running", "don't", "isn't", "it's", "I", "love",
    "hate", "good", "bad", "not", "great!", "terrible.", "Why?", "forecast", "forecasts", "said", "went",
    "<b>bold</b>", "http://x.io/a.b", "2024", "3.5", "#", "@", "'quoted'", "“curly”", "stores", "book",
    "booked", "search", "searching", "today", "Tomorrow", "", "ﬁne", "İstanbul", "ΣΟΦΟΣ", "she", "has", "eaten",
    "will", "can't", "happy", "sad", "no", "very", "they", "are", "we'll", "told", "ran",
]
SEPARATORS = [" ", " ", " ", "  ", "\u00a0", "\n", "\t", "\u2003", ", ", ". ", "! ", "\ufeff"]
TOOLS = ["get_weather", "search", "book"]


def text(rng: random.Random, most: int = 9) -> str:
    words = rng.choices(WORDS, k=rng.randint(0, most))
    out = ""
    for n, word in enumerate(words):
        out += (rng.choice(SEPARATORS) if n else "") + word
    if rng.random() < 0.2:
        out = rng.choice(SEPARATORS) + out + rng.choice(SEPARATORS)
    return out


def nested(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.random()
    if depth < 2 and kind < 0.3:
        keys = rng.sample(["city", "unit", "days", "q", "opts"], k=rng.randint(0, 3))
        return {k: nested(rng, depth + 1) for k in keys}
    if depth < 2 and kind < 0.4:
        return [nested(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    return rng.choice(["Brooklyn", "F", 3, 3.0, True, 1, None, "", "ü"])


def shuffled(value: Any, rng: random.Random) -> Any:
    """The same JSON value, object keys possibly in another order."""
    if isinstance(value, dict):
        keys = list(value)
        if rng.random() < 0.3:
            rng.shuffle(keys)
        return {k: shuffled(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


def calls(rng: random.Random, most: int = 4) -> list[dict[str, Any]]:
    out = []
    for _ in range(rng.randint(0, most)):
        call: dict[str, Any] = {"name": rng.choice(TOOLS), "args": nested(rng) if rng.random() < 0.8 else {}}
        if not isinstance(call["args"], dict):
            call["args"] = {"v": call["args"]}
        outcome = rng.random()
        if outcome < 0.55:
            call["result"] = rng.choice([{"temp": 72}, {"ok": True}, "done", [1, 2], 5])
        elif outcome < 0.7:
            call["result"] = {"error": rng.choice(["not found", "", 0, {}])}
        elif outcome < 0.85:
            call["error"] = "timeout"
        else:
            call["status"] = "pending"
        out.append(call)
    # repeat a call now and then: redundancy and retries
    if out and rng.random() < 0.4:
        out.insert(rng.randrange(len(out) + 1), dict(rng.choice(out)))
    return out


def output(rng: random.Random, tools: bool = True) -> tuple[Any, Any]:
    """(run for the Node harness, the same run for evalgate)."""
    tool_calls = calls(rng) if tools and rng.random() < 0.6 else []
    if rng.random() < 0.25:
        texts = [text(rng) for _ in range(rng.randint(2, 3))]
        return {"text": texts, "tool_calls": tool_calls}, {"texts": texts, "tool_calls": tool_calls}
    one = text(rng)
    return {"text": one, "tool_calls": tool_calls}, {"text": one, "tool_calls": tool_calls}


# ---- cases: (scorer label, case for Node, evalgate scorer, item, run, judge answer for evalgate) ----


class Case:
    def __init__(self, label: str, node: dict[str, Any], scorer: Any, item: dict[str, Any], run: Any,
                 answer: dict[str, Any] | str | None = None, mastra_rejects: bool = False,
                 mastra_throws: bool = False, out_of_range: bool = False) -> None:
        self.label, self.node, self.scorer, self.answer = label, node, scorer, answer
        self.item = Item(**item)
        self.run: Run = run_from_value(run)
        self.mastra_rejects = mastra_rejects
        self.mastra_throws = mastra_throws  # Mastra's scorer throws: evalgate's must raise (a scorer error)
        # Mastra's score is a number outside [0, 1], which evalgate cannot report: a scorer error instead
        self.out_of_range = out_of_range


def code_cases(rng: random.Random, per_scorer: int) -> Iterator[Case]:
    for _ in range(per_scorer):
        question = text(rng)
        theirs, ours = output(rng)
        base = {"input": question, "output": theirs}
        item = {"input": question}
        if rng.random() < 0.3:
            item["ground_truth"] = base["ground_truth"] = text(rng)  # Mastra's code scorers ignore it
        ignore_case, ignore_ws = rng.random() < 0.7, rng.random() < 0.7
        yield Case("content_similarity", {**base, "scorer": "content_similarity",
                                          "options": {"ignoreCase": ignore_case, "ignoreWhitespace": ignore_ws}},
                   code.content_similarity(ignore_case=ignore_case, ignore_whitespace=ignore_ws), item, ours)
        yield Case("textual_difference", {**base, "scorer": "textual_difference"}, code.textual_difference(),
                   item, ours)
        yield Case("keyword_coverage", {**base, "scorer": "keyword_coverage"}, code.keyword_coverage(), item, ours)
        yield Case("completeness", {**base, "scorer": "completeness"}, code.completeness(), item, ours)
        tone = text(rng) if rng.random() < 0.4 else None
        yield Case("tone_consistency", {**base, "scorer": "tone", "options": {"referenceTone": tone} if tone else {}},
                   code.tone_consistency(reference_tone=tone), item, ours)
        strict = rng.random() < 0.3
        if rng.random() < 0.5:
            tool = rng.choice(TOOLS)
            options = {"expectedTool": tool, "strictMode": strict}
            ours_scorer = code.tool_call_accuracy_code(expected_tool=tool, strict=strict)
        else:
            order = rng.sample(TOOLS, k=rng.randint(0, 3))
            options = {"expectedToolOrder": order, "strictMode": strict}
            ours_scorer = code.tool_call_accuracy_code(expected_order=order, strict=strict)
        yield Case("tool_call_accuracy_code", {**base, "scorer": "tool_call_accuracy_code", "options": options},
                   ours_scorer, item, ours)


def mastra_message(rng: random.Random, tool_calls: list[dict[str, Any]]) -> dict[str, Any]:
    """An assistant message as a Mastra agent persists it, its calls in `parts` (and maybe `toolInvocations`)."""
    invocations = []
    for n, call in enumerate(tool_calls):
        inv: dict[str, Any] = {"toolCallId": f"c{n}", "toolName": call["name"], "args": call["args"]}
        if call.get("status") == "pending":
            inv["state"] = "call"
        elif "error" in call:
            inv |= {"state": "output-error", "errorText": call["error"]}
        else:
            inv |= {"state": "result", "result": call.get("result", {"error": "bad"})}
            if rng.random() < 0.2:
                inv["isError"] = True
        invocations.append(inv)
    parts: list[dict[str, Any]] = [{"type": "tool-invocation", "toolInvocation": i} for i in invocations]
    content: dict[str, Any] = {"format": 2, "parts": [*parts, {"type": "text", "text": "done"}], "content": "done"}
    if rng.random() < 0.5:
        content["toolInvocations"] = [i for i in invocations if i["state"] == "result"]
    return {"id": "m1", "role": "assistant", "createdAt": "1970-01-01T00:00:00.000Z", "content": content}


def expected_steps(rng: random.Random, actual: list[dict[str, Any]]) -> list[Any]:
    steps: list[Any] = []
    for _ in range(rng.randint(0, 4)):
        call = rng.choice(actual) if actual and rng.random() < 0.6 else None
        name = call["name"] if call else rng.choice(TOOLS)
        step: dict[str, Any] = {"name": name}
        if rng.random() < 0.5:
            step["stepType"] = "tool_call"
            if call and rng.random() < 0.6:
                step["toolArgs"] = shuffled(call["args"], rng)
            if call and "result" in call and rng.random() < 0.3:
                result = call["result"]
                step["toolResult"] = result if isinstance(result, dict) else {"value": result}
            if rng.random() < 0.3:
                step["success"] = rng.random() < 0.6
        steps.append(step)
    return steps


def trajectory_cases(rng: random.Random, count: int) -> Iterator[Case]:
    for _ in range(count):
        tool_calls = calls(rng, most=5)
        theirs, ours = {"text": "done", "tool_calls": tool_calls}, {"text": "done", "tool_calls": tool_calls}
        if rng.random() < 0.3:  # the same calls as Mastra messages, with isError and {error} results
            theirs = ours = {"messages": [mastra_message(rng, tool_calls)]}
        expectation: dict[str, Any] = {}
        if rng.random() < 0.85:
            expectation["steps"] = expected_steps(rng, tool_calls)
        if rng.random() < 0.5:
            expectation["ordering"] = rng.choice(["strict", "relaxed", "unordered"])
        if rng.random() < 0.3:
            expectation["allowRepeatedSteps"] = rng.random() < 0.5
        if rng.random() < 0.3:
            expectation["maxSteps"] = rng.randint(0, 4)
        if rng.random() < 0.3:
            expectation["noRedundantCalls"] = rng.random() < 0.7
        if rng.random() < 0.15:
            expectation["blacklistedTools"] = rng.sample(TOOLS, k=1)
        if rng.random() < 0.15:
            expectation["blacklistedSequences"] = [rng.sample(TOOLS, k=2)]
        if rng.random() < 0.3:
            expectation["maxRetriesPerTool"] = rng.randint(0, 2)
        defaults: dict[str, Any] = {}
        if rng.random() < 0.2:
            defaults["maxSteps"] = rng.randint(1, 5)
        snake = {"maxSteps": "max_steps"}
        node = {"scorer": "trajectory", "input": "q", "output": theirs, "expected_trajectory": expectation,
                "options": {"defaults": defaults} if defaults else {}}
        item = {"input": "q", "expected_trajectory": expectation}
        if rng.random() < 0.15:  # no expectation at all: Mastra scores the calls by the defaults alone
            del node["expected_trajectory"], item["expected_trajectory"]
        scorer = trajectory.trajectory_accuracy(**{snake[k]: v for k, v in defaults.items()})
        yield Case("trajectory_accuracy", node, scorer, item, ours)


# Sentences where compromise's context rules decide what is a noun and what a verb, or rewrite a verb
# phrase (negations, auxiliaries, contractions, hyphens, line breaks); several read otherwise in 14.17.0.
COMPLETENESS_SENTENCES = [
    ("Return current working directory.", "working directory. Return"),
    ("No operation should be done on it afterwards.", "done on it afterwards. No operation"),
    ("The tests do not pass.", "the tests pass"),
    ("She has not eaten the cake.", "she ate the cake"),
    ("It used to refuse the empty list too.", "the empty list too. It used"),
    ("No normalization or symlink resolution is performed.", "symlink resolution is performed. No normalization"),
    ("Open a tar archive for reading, writing or appending.", "for reading, writing or appending. Open a tar"),
    ("The file cannot be read.", "the file is read"),
    ("Mine, it's.", "mine it"),
    ("The new socket is non-inheritable.", "socket is non-inheritable. The"),
    ("You should have told me earlier, and you should've told me.", "you told me earlier"),
    ("What's the weather like in Tokyo today?", "the weather in Tokyo today"),
    ("Hello, what can you do?", "I can help"),
    ("it's\nÄrger", "it s"),
    ("ΣΟΦΟΣ the café's closed", "the cafe is closed"),
]


def completeness_cases(ctx: Any) -> Iterator[Case]:
    """compromise's hard cases, then longer random texts than the main run's: several messages, unicode."""
    for question, answer in COMPLETENESS_SENTENCES:
        yield Case("completeness", {"scorer": "completeness", "input": question, "output": answer},
                   code.completeness(), {"input": question}, answer)
    rng = random.Random(38)
    for _ in range(60):
        question = text(rng, 25)
        texts = [text(rng, 25) for _ in range(rng.randint(1, 3))]
        yield Case("completeness", {"scorer": "completeness", "input": question, "output": {"text": texts}},
                   code.completeness(), {"input": question}, {"texts": texts})


def js_rule_cases(ctx: Any) -> Iterator[Case]:
    """Inputs where JavaScript's rules differ from Python's, found by probing against Mastra."""
    for output, tone in (("constructor good", "good day"), ("constructor good. good!", None)):
        # `negators[prev]` in the sentiment package finds Object.prototype.constructor: a negator
        yield Case("tone_consistency", {"scorer": "tone", "input": "q", "output": output,
                                        "options": {"referenceTone": tone} if tone else {}},
                   code.tone_consistency(reference_tone=tone), {"input": "q"}, output)
    # JSON.stringify writes integer-like keys first, ascending: these arguments are equal there
    for args, expected in (({"b": 1, "1": 2}, {"1": 2, "b": 1}), ({"9": 2, "10": 1}, {"10": 1, "9": 2})):
        call = {"name": "t", "args": args, "result": {"x": 1, "0": 0}}
        for expectation in ({"steps": [{"name": "t", "stepType": "tool_call", "toolArgs": expected,
                                        "toolResult": {"0": 0, "x": 1}}]},
                            {"steps": [{"name": "t"}], "noRedundantCalls": True}):
            calls = [call, {**call, "args": expected}] if "noRedundantCalls" in expectation else [call]
            out = {"text": "done", "tool_calls": calls}
            node = {"scorer": "trajectory", "input": "q", "output": out, "expected_trajectory": expectation}
            yield Case("trajectory_accuracy", node, trajectory.trajectory_accuracy(),
                       {"input": "q", "expected_trajectory": expectation}, out)
    for error in ({}, []):  # `result.error` is truthy in JavaScript whenever it is an object
        message = {"role": "assistant", "content": {"format": 2, "parts": [{"type": "tool-invocation",
                   "toolInvocation": {"state": "result", "toolCallId": "c1", "toolName": "t", "args": {},
                                      "result": {"error": error}}}]}}
        expectation = {"steps": [{"name": "t", "stepType": "tool_call", "success": False}]}
        out = {"messages": [message]}
        node = {"scorer": "trajectory", "input": "q", "output": out, "expected_trajectory": expectation}
        yield Case("trajectory_accuracy", node, trajectory.trajectory_accuracy(),
                   {"input": "q", "expected_trajectory": expectation}, out)


def trajectory_case(label: str, calls: list[dict[str, Any]], expectation: dict[str, Any],
                    defaults: dict[str, Any] | None = None, throws: bool = False) -> Case:
    """The run format's calls against `expectation` (Mastra's keys), entry defaults in Mastra's keys."""
    out = {"text": "done", "tool_calls": calls}
    node = {"scorer": "trajectory", "input": "q", "output": out, "expected_trajectory": expectation,
            "options": {"defaults": defaults} if defaults else {}}
    snake = {k: re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower() for k in defaults or {}}
    scorer = trajectory.trajectory_accuracy(**{snake[k]: v for k, v in (defaults or {}).items()})
    return Case(label, node, scorer, {"input": "q", "expected_trajectory": expectation}, out, mastra_throws=throws)


def null_expectation_cases(ctx: Any) -> Iterator[Case]:
    """An item's explicit null overrides the entry's default (`{...defaults, ...item}`), then falls back."""
    b, a = {"name": "b", "args": {}}, {"name": "a", "args": {}}
    failed = {"name": "b", "args": {}, "error": "boom"}
    yield trajectory_case("ordering null is relaxed", [b, a], {"steps": [{"name": "a"}, {"name": "b"}],
                                                               "ordering": None}, {"ordering": "strict"})
    yield trajectory_case("steps null: no accuracy", [b], {"steps": None}, {"steps": [{"name": "a"}]})
    yield trajectory_case("maxSteps null throws", [b], {"maxSteps": None}, {"maxSteps": 3}, throws=True)
    yield trajectory_case("noRedundantCalls null checks", [b, b], {"noRedundantCalls": None},
                          {"noRedundantCalls": False})
    yield trajectory_case("allowRepeatedSteps null allows", [b, b], {"steps": [{"name": "b"}],
                                                                     "allowRepeatedSteps": None},
                          {"allowRepeatedSteps": False})
    yield trajectory_case("blacklistedTools null: none", [b], {"blacklistedTools": None}, {"blacklistedTools": ["b"]})
    yield trajectory_case("maxRetriesPerTool null is 2", [failed, failed, failed, b], {"maxRetriesPerTool": None},
                          {"maxRetriesPerTool": 0})
    for field in ("toolArgs", "toolResult", "success"):  # a null step field is compared: it never matches
        yield trajectory_case(f"step {field} null", [{"name": "b", "args": {}, "result": {}}],
                              {"steps": [{"name": "b", "stepType": "tool_call", field: None}]})


CHECKS: dict[str, Callable[[dict[str, Any]], Any]] = {  # the harness's options -> evalgate's check
    "called_tool": lambda o: checks.called_tool(o["tool"], **({"times": o["times"]} if "times" in o else {})),
    "did_not_call": lambda o: checks.did_not_call(o["tool"]),
    "tool_order": lambda o: checks.tool_order(o["tools"]),
    "max_tool_calls": lambda o: checks.max_tool_calls(o["max"]),
    "used_no_tools": lambda o: checks.used_no_tools(),
    "no_tool_errors": lambda o: checks.no_tool_errors(),
}


def check_case(check: str, output: Any, **options: Any) -> Case:
    node = {"scorer": check, "input": "q", "output": output, "options": options}
    return Case(check, node, CHECKS[check](options), {"input": "q"}, output)


def falsy_error_cases(ctx: Any) -> Iterator[Case]:
    """The run format's `error` and a result's `error` field are errors when truthy in JavaScript."""
    for error in (0, 0.0, False, "", "0", {}, [], 1, "boom"):
        out = {"text": "done", "tool_calls": [{"name": "t", "args": {}, "error": error}]}
        yield check_case("no_tool_errors", out)
        yield trajectory_case("trajectory", out["tool_calls"],
                              {"steps": [{"name": "t", "stepType": "tool_call", "success": True}]})
    for value in ("bad", 0, "", False, {}, [], True):
        call = {"name": "t", "args": {}, "result": {"error": value}}
        yield check_case("no_tool_errors", {"text": "done", "tool_calls": [call]})
        # the trajectory: a call that returned `{error}` still succeeded, and keeps its result
        yield trajectory_case("trajectory", [call], {"steps": [{"name": "t", "stepType": "tool_call", "success": True,
                                                                "toolResult": {"error": value}}]})


def assistant(*invocations: dict[str, Any], legacy: bool = True, text: str = "done") -> dict[str, Any]:
    """One assistant message with these tool invocations in its parts (and, as an agent writes them,
    the returned ones in the legacy `toolInvocations`)."""
    parts: list[dict[str, Any]] = [{"type": "tool-invocation", "toolInvocation": i} for i in invocations]
    content: dict[str, Any] = {"format": 2, "parts": [*parts, {"type": "text", "text": text}], "content": text}
    if legacy:
        content["toolInvocations"] = [i for i in invocations if i.get("state") == "result"]
    return {"id": "m1", "role": "assistant", "createdAt": "1970-01-01T00:00:00.000Z", "content": content}


def is_error_result_cases(ctx: Any) -> Iterator[Case]:
    """A `state: 'result'` call flagged `isError` keeps its result in Mastra (and still failed)."""
    flagged = {"state": "result", "toolCallId": "c1", "toolName": "t", "args": {}, "result": {"temp": 72},
               "isError": True}
    raw = {"messages": [assistant(flagged, text="It is 72F.")]}
    late = {"name": "t", "args": {}, "error": "late", "result": {"temp": 72}}  # the run format's failed call
    recorded = {"text": "It is 72F.", "tool_calls": [late]}
    for out in (raw, recorded):
        for step in ({"toolResult": {"temp": 72}}, {"toolResult": {"temp": 72}, "success": False},
                     {"success": True}, {"toolArgs": {}}):
            expectation = {"steps": [{"name": "t", "stepType": "tool_call", **step}]}
            node = {"scorer": "trajectory", "input": "q", "output": out, "expected_trajectory": expectation}
            yield Case("trajectory", node, trajectory.trajectory_accuracy(),
                       {"input": "q", "expected_trajectory": expectation}, out)
        # faithfulness: with no context, the results of the calls are the evidence, this one's too
        yield Case("faithfulness", {"scorer": "faithfulness", "input": "Weather?", "output": out, "judge": [
                       {"claims": ["c0"]}, {"verdicts": [{"verdict": "yes", "reason": "r"}]}]},
                   judged.faithfulness(ctx=ctx), {"input": "Weather?"}, out,
                   {"claims": [{"claim": "c0", "verdict": "supported", "reason": "r"}]})


def tool_invocation_cases(ctx: Any) -> Iterator[Case]:
    """Invocations that are no calls (no name, another state): noToolErrors still reads them all."""
    def inv(state: str | None, name: Any = None, **extra: Any) -> dict[str, Any]:
        out = {"toolCallId": "x1", "args": {}, **extra}
        if state is not None:
            out["state"] = state
        if name is not None:
            out["toolName"] = name
        return out

    odd = [
        inv("call"), inv("output-error", errorText="boom"), inv("result", result={"error": "x"}),
        inv("result", result={"temp": 1}), inv("result", result={"error": 0}), inv("call", ""),
        inv("partial-call", "t", isError=True), inv("partial-call", "t"),
        inv("partial-call", "t", result={"error": {}}),
        inv("approval-requested", "t", result={"error": "denied"}), inv("approval-requested", "t"),
        inv(None, "t", isError=True), inv(None, "t"), inv("result", isError=True, result={"ok": 1}),
    ]
    for invocation in odd:
        for legacy_only in (False, True):
            message = assistant(invocation, legacy=False)
            if legacy_only:  # only in the legacy `toolInvocations`
                message["content"]["parts"] = message["content"]["parts"][-1:]
                message["content"]["toolInvocations"] = [invocation]
            out = {"messages": [message]}
            yield check_case("no_tool_errors", out)
            yield check_case("max_tool_calls", out, max=0)
            yield check_case("called_tool", out, tool="t")
            expectation = {"steps": [], "noRedundantCalls": True}  # 1 only when there is no call
            yield Case("trajectory", {"scorer": "trajectory", "input": "q", "output": out,
                                      "expected_trajectory": expectation},
                       trajectory.trajectory_accuracy(), {"input": "q", "expected_trajectory": expectation}, out)
    # the run format carries them (what evalgate writes for such messages)
    for errors in ([], ["a tool with no name (state call): no result"]):
        out = {"text": "done", "tool_calls": [{"name": "t", "args": {}, "result": 1}], "uncounted_tool_errors": errors}
        yield check_case("no_tool_errors", out)
        yield check_case("max_tool_calls", out, max=1)


def tool_name_cases(ctx: Any) -> Iterator[Case]:
    """A `toolName` that is no string: a call when truthy in JavaScript, compared with `===`."""
    def calls(*names: Any, state: str = "result", failed: bool = False) -> dict[str, Any]:
        invocations = []
        for n, name in enumerate(names):
            invocation = {"state": state, "toolCallId": f"c{n}", "toolName": name, "args": {}, "result": {"n": 1}}
            invocations.append(invocation | ({"isError": True} if failed else {}))
        return {"messages": [assistant(*invocations)]}

    def trajectory_of(out: Any, expectation: dict[str, Any]) -> Case:
        node = {"scorer": "trajectory", "input": "q", "output": out, "expected_trajectory": expectation}
        return Case("trajectory", node, trajectory.trajectory_accuracy(),
                    {"input": "q", "expected_trajectory": expectation}, out)

    for name in (7, 7.5, -1, True, {}, [], {"a": 1}, 0, False, "", None, "7"):
        out = calls(name)
        yield check_case("called_tool", out, tool="7")
        yield check_case("did_not_call", out, tool="7")
        yield check_case("tool_order", out, tools=["7"])
        yield check_case("max_tool_calls", out, max=0)
        yield check_case("used_no_tools", out)
        yield check_case("no_tool_errors", calls(name, state="call"))
        for options in ({"expectedTool": "7"}, {"expectedToolOrder": ["7"], "strictMode": True}):
            yield Case("tool_call_accuracy_code", {"scorer": "tool_call_accuracy_code", "input": "q", "output": out,
                                                   "options": options},
                       code.tool_call_accuracy_code(expected_tool=options.get("expectedTool"),
                                                    expected_order=options.get("expectedToolOrder"),
                                                    strict=options.get("strictMode", False)),
                       {"input": "q"}, out)
        yield trajectory_of(out, {"steps": [{"name": "7"}], "blacklistedTools": ["7"]})
    # between the calls' own names: 7 is 7 (and 7.0), never "7" nor true; an object only itself
    for pair in ((7, 7), (7, 7.0), (7, "7"), (True, 1), (True, True), ({}, {}), ([1], [1]), ("a", "a")):
        yield trajectory_of(calls(*pair), {"noRedundantCalls": True})
        yield trajectory_of(calls(*pair), {"steps": [{"name": "a"}], "allowRepeatedSteps": False})
        yield trajectory_of(calls(*pair, failed=True), {"maxRetriesPerTool": 0})
    # the run format takes such a name too (what evalgate writes back for these messages)
    out = {"text": "done", "tool_calls": [{"name": 7, "args": {}, "result": 1}]}
    yield check_case("called_tool", out, tool="7")
    yield check_case("max_tool_calls", out, max=0)


def spec_trajectory(params: dict[str, Any]) -> Any:
    """trajectory_accuracy as a spec entry builds it: an explicit null stays a null there."""
    entry = lookup("trajectory_accuracy")
    assert entry is not None
    return build_entry(entry.model("scorer").model_validate({"type": "trajectory_accuracy", **params}),
                       BuildContext())


def entry_null_cases(ctx: Any) -> Iterator[Case]:
    """Nulls in the entry's own parameters (Mastra's `defaults`): `{...defaults, ...item}` keeps them."""
    b, a = {"name": "b", "args": {}}, {"name": "a", "args": {}}

    def case(label: str, calls: list[dict[str, Any]], expectation: dict[str, Any], defaults: dict[str, Any],
             throws: bool = False, weights: dict[str, Any] | None = None) -> Case:
        out = {"text": "done", "tool_calls": calls}
        options: dict[str, Any] = {"defaults": defaults}
        snake = {re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower(): v for k, v in defaults.items()}
        if weights is not None:
            options["weights"] = weights
            snake["weights"] = {"tool_failures" if k == "toolFailures" else k: v for k, v in weights.items()}
        node = {"scorer": "trajectory", "input": "q", "output": out, "expected_trajectory": expectation,
                "options": options}
        return Case(label, node, spec_trajectory(snake), {"input": "q", "expected_trajectory": expectation}, out,
                    mastra_throws=throws)

    steps = {"steps": [{"name": "b"}]}
    for budget in ("maxSteps", "maxTotalTokens", "maxTotalDurationMs"):  # a null budget throws for every item
        yield case(f"{budget} null", [b], steps, {budget: None}, throws=True)
    yield case("maxSteps null, blacklist hit", [b], {"blacklistedTools": ["b"]}, {"maxSteps": None}, throws=True)
    yield case("maxSteps null, the item's 3", [b, a], {**steps, "maxSteps": 3}, {"maxSteps": None})
    yield case("noRedundantCalls null checks", [b, b], steps, {"noRedundantCalls": None})
    yield case("noRedundantCalls null, the item's false", [b, b], {**steps, "noRedundantCalls": False},
               {"noRedundantCalls": None})
    nulls = {"steps": None, "ordering": None, "allowRepeatedSteps": None, "blacklistedTools": None,
             "blacklistedSequences": None, "maxRetriesPerTool": None}
    yield case("the rest null: as if absent", [a, b, b], {"steps": [{"name": "b"}, {"name": "a"}]}, nulls)
    # a null weight is Mastra's default weight (`?? 0.4`)
    yield case("accuracy weight null", [b, b], {"steps": [{"name": "b"}, {"name": "a"}], "maxSteps": 1}, {},
               weights={"accuracy": None, "efficiency": 1})


def is_error_field_cases(ctx: Any) -> Iterator[Case]:
    """`isError` with a result that has an `error` field: failed (Mastra reads only `isError`)."""
    flagged = {"state": "result", "toolCallId": "c1", "toolName": "t", "args": {}, "result": {"error": "x"},
               "isError": True}
    returned = {**flagged, "isError": False}
    recorded = {"text": "done", "tool_calls": [{"name": "t", "args": {}, "result": {"error": "x"}, "error": "x"}]}
    # what evalgate writes for a call that returned `{error}`, read back as a recorded output
    written = run_from_value({"messages": [assistant(returned)]}).to_dict()
    for out in ({"messages": [assistant(flagged)]}, {"messages": [assistant(flagged, legacy=False)]}, recorded,
                {"messages": [assistant(returned)]}, written):
        for step in ({"success": False}, {"success": True}, {"success": False, "toolResult": {"error": "x"}}):
            expectation = {"steps": [{"name": "t", "stepType": "tool_call", **step}]}
            node = {"scorer": "trajectory", "input": "q", "output": out, "expected_trajectory": expectation}
            yield Case("trajectory", node, trajectory.trajectory_accuracy(),
                       {"input": "q", "expected_trajectory": expectation}, out)
        expectation = {"steps": [{"name": "t"}], "maxRetriesPerTool": 0}
        twice = {"messages": [msg | {"content": {**msg["content"], "parts": msg["content"]["parts"] * 2}}
                              for msg in out.get("messages", [])]} if "messages" in out else \
            {**out, "tool_calls": out["tool_calls"] * 2}
        node = {"scorer": "trajectory", "input": "q", "output": twice, "expected_trajectory": expectation}
        yield Case("trajectory retried", node, trajectory.trajectory_accuracy(),
                   {"input": "q", "expected_trajectory": expectation}, twice)
        yield check_case("no_tool_errors", out)


def null_step_name_cases(ctx: Any) -> Iterator[Case]:
    """An expected step whose name is null (or missing): it matches no call, as `===` never does."""
    b = {"name": "b", "args": {}, "result": 1}
    for ordering in ("strict", "relaxed", "unordered"):
        for nameless in ({"name": None}, {"name": None, "stepType": "tool_call"}, {"stepType": "tool_call"}):
            yield trajectory_case(f"{ordering} {nameless}", [b], {"steps": [nameless, {"name": "b"}],
                                                                  "ordering": ordering})
            yield trajectory_case(f"{ordering} {nameless} after", [b, b], {"steps": [{"name": "b"}, nameless],
                                                                           "ordering": ordering})
    # strict order: past the run's end a missing name is `undefined === undefined`, a match; null is not
    for nameless in ({}, {"name": None}, {"name": ""}, {"stepType": "tool_call", "success": False}):
        yield trajectory_case(f"strict, past the end: {nameless}", [b], {"steps": [{"name": "b"}, nameless],
                                                                         "ordering": "strict"})
        yield trajectory_case(f"strict, no calls: {nameless}", [], {"steps": [nameless, nameless],
                                                                    "ordering": "strict"})
    yield trajectory_case("a null step throws", [b], {"steps": [None]}, throws=True)


def tool_call_id_cases(ctx: Any) -> Iterator[Case]:
    """`toolCallId`s of any JSON type: Mastra's merge keys them by SameValueZero (an object only itself)."""
    def merged(part_id: Any, legacy_id: Any) -> dict[str, Any]:
        call = {"state": "result", "toolName": "t", "args": {}, "result": {"ok": 1}}
        message = assistant({**call, "toolCallId": part_id}, legacy=False)
        message["content"]["toolInvocations"] = [{**call, "toolCallId": legacy_id}]
        return {"messages": [message]}

    for part_id, legacy_id in (({"a": 1}, {"a": 1}), ([1], [1]), ({}, {}), (True, 1), (1, 1.0), ("1", 1),
                               (1, 1), ({"a": 1}, "a"), (0, 0), (False, False), ("", ""), (10**400, 10**400)):
        out = merged(part_id, legacy_id)
        yield check_case("max_tool_calls", out, max=1)
        yield check_case("called_tool", out, tool="t", times=1)
        expectation = {"steps": [{"name": "t"}], "allowRepeatedSteps": False}
        node = {"scorer": "trajectory", "input": "q", "output": out, "expected_trajectory": expectation}
        yield Case("trajectory", node, trajectory.trajectory_accuracy(),
                   {"input": "q", "expected_trajectory": expectation}, out)


def faithfulness_evidence_cases(ctx: Any) -> Iterator[Case]:
    """Mastra's faithfulness reads its evidence from the assistant messages' legacy `toolInvocations` only."""
    call = {"state": "result", "toolCallId": "c1", "toolName": "t", "args": {}, "result": {"temp": 72}}

    def message(role: str, parts: list[dict[str, Any]], legacy: Any = None) -> dict[str, Any]:
        out = assistant(*parts, legacy=False, text="It is 72F.") | {"role": role}
        if legacy is not None:
            out["content"]["toolInvocations"] = legacy
        return out

    cases: list[tuple[list[dict[str, Any]], str]] = [  # (messages, "evidence" | "none" | "throws")
        ([message("assistant", [call])], "none"),  # in the parts only
        ([message("assistant", [], [call])], "evidence"),
        ([message("assistant", [call], [call])], "evidence"),
        ([message("assistant", [], [{k: v for k, v in call.items() if k != "toolName"}])], "evidence"),
        ([message("assistant", [], [call | {"state": "output-error", "errorText": "x"}])], "none"),
        ([message("assistant", [], [call | {"state": "call"}])], "none"),
        ([message("assistant", [], [call | {"isError": True}])], "evidence"),
        ([message("system", [], [call]), message("assistant", [])], "none"),  # not an assistant's
        ([message("user", [call], [call]), message("assistant", [])], "none"),
        ([message("assistant", [], call)], "evidence"),  # one invocation, not in a list
        ([message("assistant", [], [call, None])], "throws"),
        ([message("assistant", [], [call, 5, "x", [call]])], "evidence"),
    ]
    for messages, evidence in cases:
        # a judge shown no evidence cannot confirm; both sides are asked (Mastra judges an empty context),
        # so the evidence each shows its judge is held apart: test_faithfulness_shows_the_evidence_mastra_reads
        found = evidence == "evidence"
        out = {"messages": messages}
        yield Case("faithfulness", {"scorer": "faithfulness", "input": "Weather?", "output": out, "judge": [
                       {"claims": ["c0"]}, {"verdicts": [{"verdict": "yes" if found else "unsure", "reason": "r"}]}]},
                   judged.faithfulness(ctx=ctx), {"input": "Weather?"}, out,
                   {"claims": [{"claim": "c0", "verdict": "supported" if found else "unsupported", "reason": "r"}]},
                   mastra_throws=evidence == "throws")


def message_field_cases(ctx: Any) -> Iterator[Case]:
    """`content.parts` / `content.toolInvocations` that are no list, and null parts: where Mastra's readers
    (mergeToolInvocations, extractTrajectory, getTextContentFromMastraDBMessage) throw, evalgate's scorer raises."""
    call = {"state": "result", "toolCallId": "c1", "toolName": "t", "args": {}, "result": {"temp": 72}}
    part = {"type": "tool-invocation", "toolInvocation": call}
    text = {"type": "text", "text": "It is 72F."}

    def message(**content: Any) -> dict[str, Any]:
        return {"id": "m1", "role": "assistant", "createdAt": "1970-01-01T00:00:00.000Z",
                "content": {"format": 2, **content}}

    variants: list[tuple[dict[str, Any], set[str]]] = [  # (message, what Mastra cannot read: "tools", "text")
        (message(content="It is 72F.", parts={"0": part}, toolInvocations=[call]), {"tools"}),
        (message(content="It is 72F.", parts="", toolInvocations=[call]), {"tools"}),
        (message(content="It is 72F.", parts=None, toolInvocations=[call]), set()),
        (message(content="It is 72F.", parts=[part, text], toolInvocations=call), {"tools"}),
        (message(content="It is 72F.", parts=[part, text], toolInvocations=0), {"tools"}),
        (message(content="It is 72F.", parts=[part, text], toolInvocations=None), set()),
        (message(content="It is 72F.", parts=[part, None, text], toolInvocations=[call]), {"tools"}),
        (message(parts=[part, None, text], toolInvocations=[call]), {"tools", "text"}),
        (message(parts=[part, 5, "x", text], toolInvocations=[None, 5, call]), set()),
    ]
    for raw, thrown in variants:
        out = {"messages": [raw]}
        expectation = {"steps": [{"name": "t"}]}
        yield Case("trajectory", {"scorer": "trajectory", "input": "q", "output": out,
                                  "expected_trajectory": expectation},
                   trajectory.trajectory_accuracy(), {"input": "q", "expected_trajectory": expectation}, out,
                   mastra_throws="tools" in thrown)
        yield Case("tool_call_accuracy_code", {"scorer": "tool_call_accuracy_code", "input": "q", "output": out,
                                               "options": {"expectedTool": "t"}},
                   code.tool_call_accuracy_code(expected_tool="t"), {"input": "q"}, out,
                   mastra_throws="tools" in thrown)
        yield Case("content_similarity", {"scorer": "content_similarity", "input": "It is 72F.", "output": out},
                   code.content_similarity(), {"input": "It is 72F."}, out, mastra_throws="text" in thrown)
        for check, options in (("max_tool_calls", {"max": 0}), ("no_tool_errors", {})):
            case = check_case(check, out, **options)
            case.mastra_throws = "tools" in thrown
            yield case
        # faithfulness reads only the legacy list (`flatMap` takes any value), and the text defensively:
        # none of these throws there but a null legacy entry (`toolCall.state`)
        legacy = raw["content"]["toolInvocations"]
        evidence = legacy == call or (isinstance(legacy, list) and call in legacy)
        verdict = "yes" if evidence else "unsure"  # a judge shown no evidence cannot confirm; both are asked
        yield Case("faithfulness", {"scorer": "faithfulness", "input": "Weather?", "output": out, "judge": [
                       {"claims": ["c0"]}, {"verdicts": [{"verdict": verdict, "reason": "r"}]}]},
                   judged.faithfulness(ctx=ctx), {"input": "Weather?"}, out,
                   {"claims": [{"claim": "c0", "verdict": "supported" if evidence else "unsupported", "reason": "r"}]},
                   mastra_throws=isinstance(legacy, list) and None in legacy)


# ---- judged scorers: one random classification, in Mastra's shape and in evalgate's ----


def judge_type_cases(ctx: Any) -> Iterator[Case]:
    """Judge replies of a JSON type Mastra's schema rejects (it throws after one retry) or reads as JavaScript."""
    context = ["Brooklyn is sunny.", "Paris is rainy."]
    base = {"input": "Weather?", "output": "It is sunny."}
    item = {"input": "Weather?", "context": context}
    precision = judged.context_precision(ctx=ctx)

    def precision_case(theirs: Any, ours: Any, throws: bool) -> Case:
        node = {**base, "scorer": "context_precision", "options": {"context": context}, "judge": [theirs]}
        return Case("context_precision", node, precision, item, base["output"], ours, mastra_throws=throws)

    def verdicts(index: Any, verdict: Any) -> dict[str, Any]:
        return {"verdicts": [{"context_index": index, "verdict": verdict, "reason": "r"},
                             {"context_index": 1, "verdict": "no", "reason": "r"}]}

    def useful(index: Any, value: Any) -> dict[str, Any]:
        return {"verdicts": [{"index": index, "useful": value, "reason": "r"}, {"index": 2, "useful": False,
                                                                               "reason": "r"}]}

    # a boolean is no number, a string no boolean
    yield precision_case(verdicts(True, "yes"), useful(True, True), True)
    yield precision_case(verdicts(0, True), useful(1, "yes"), True)
    yield precision_case(verdicts(0, 1), useful(1, 1), True)
    # any JSON number is an index, 1e400 (Infinity) too; of duplicate keys the last wins
    yield precision_case(verdicts(1.5, "yes"), useful(2.5, True), False)
    yield precision_case('{"verdicts": [{"context_index": 1e400, "verdict": "yes", "reason": "r"}, '
                         '{"context_index": 1, "verdict": "no", "reason": "r"}]}',
                         '{"verdicts": [{"index": 1e400, "useful": true, "reason": "r"}, '
                         '{"index": 2, "useful": false, "reason": "r"}]}', False)
    yield precision_case('{"verdicts": [], "verdicts": [{"context_index": 1, "verdict": "yes", "reason": "r"}, '
                         '{"context_index": 0, "verdict": "no", "reason": "r"}]}',
                         '{"verdicts": [], "verdicts": [{"index": 2, "useful": true, "reason": "r"}, '
                         '{"index": 1, "useful": false, "reason": "r"}]}', False)
    aligned = {"intentAlignment": {"score": True, "primaryIntent": "p", "isAddressed": True, "reasoning": "r"},
               "requirementsFulfillment": {"requirements": [], "overallScore": 1},
               "completeness": {"score": 1, "missingElements": [], "reasoning": "r"},
               "responseAppropriateness": {"score": 1, "formatAlignment": True, "toneAlignment": True,
                                           "reasoning": "r"}, "overallAssessment": "a"}
    yield Case("prompt_alignment", {**base, "scorer": "prompt_alignment", "judge": [aligned]},
               judged.prompt_alignment(ctx=ctx), {"input": "Weather?"}, base["output"],
               {"intent": {"score": True, "reason": "r"}, "requirements": {"items": [], "score": 1},
                "completeness": {"score": 1, "reason": "r"}, "appropriateness": {"score": 1, "reason": "r"}},
               mastra_throws=True)
    calls = {"text": "Booked.", "tool_calls": [{"name": "book", "args": {}, "result": "ok"}]}
    yield Case("tool_call_accuracy", {"scorer": "tool_call_accuracy", "input": "Book it", "output": calls,
                                      "options": {"availableTools": [{"id": "book", "description": "books"}]},
                                      "judge": [{"evaluations": [{"toolCalled": "book", "wasAppropriate": "yes",
                                                                  "reasoning": "r"}], "missingTools": []}]},
               judged.tool_call_accuracy(tools=["book"], ctx=ctx), {"input": "Book it"}, calls,
               {"calls": [{"index": 1, "appropriate": "yes", "reason": "r"}]}, mastra_throws=True)
    yield Case("summarization", {**base, "scorer": "summarization", "judge": [
                   {"alignment": [{"claim": "c", "supported": 1, "reason": "r"}], "questions": ["q"]},
                   {"coverage": [{"question": "q", "answered": True, "reason": "r"}]}]},
               judged.summarization(ctx=ctx), {"input": "Weather?"}, base["output"],
               {"claims": [{"claim": "c", "verdict": "supported", "reason": "r"}],
                "key_points": [{"point": "q", "covered": 1, "reason": "r"}]}, mastra_throws=True)


BASE = {"input": "Weather?", "output": "It is sunny."}
CONTEXT = ["Brooklyn is sunny.", "Paris is rainy."]


def _db_message(content: Any, role: str = "assistant", **extra: Any) -> dict[str, Any]:
    return {"id": "m1", "role": role, "createdAt": "1970-01-01T00:00:00.000Z", "content": content, **extra}


def message_text_cases(ctx: Any) -> Iterator[Case]:
    """The text Mastra's scorers read from raw messages: the code scorers every message's, whatever its role,
    with a non-string text part made a string as JavaScript's `join` makes it (5, {}, [1, 2], 1e21; 0 is "");
    the LLM scorers the last assistant message with text by getTextFromValue (string text parts only,
    `content.body`, `content.content` as a part list, a `signal` message standing for an assistant)."""
    text = {"type": "text", "text": "It is sunny in Brooklyn."}

    def parts(*values: Any) -> dict[str, Any]:
        return {"format": 2, "parts": [{"type": "text", "text": v} for v in values]}

    outputs: list[tuple[str, list[dict[str, Any]], bool]] = [  # (label, messages, Mastra's code scorers throw)
        ("a user message", [_db_message("Sunny in Brooklyn today", "user"), _db_message("It is sunny.")], False),
        ("a system message last", [_db_message("It is sunny."), _db_message("Be brief, kind words", "system")], False),
        ("a tool message", [_db_message({"format": 2, "parts": [text]}, "tool"), _db_message("Sunny.")], False),
        ("a signal message", [_db_message({"format": 2, "parts": [text]}, "signal"), _db_message("Great, sunny!")],
         False),
        ("no assistant message", [_db_message("wonderful sunny day", "user")], False),
        ("a number", [_db_message(parts(5))], False),
        ("an exponent", [_db_message(parts(1e21))], False),
        ("zero", [_db_message(parts("sunny", 0))], False),
        ("an object", [_db_message(parts({"a": 1}))], False),
        ("a list", [_db_message(parts([1, [2, None], "sunny", True]))], False),
        ("true", [_db_message(parts(True)), _db_message("sunny day")], False),
        ("a number in a content list", [_db_message([{"type": "text", "text": 12.5}])], False),
        ("content.content a number", [_db_message({"format": 2, "content": 7, "parts": [text]})], False),
        ("a user message's null part", [_db_message({"format": 2, "parts": [None, text]}, "user"),
                                        _db_message("It is sunny.")], True),
        ("an object with toString", [_db_message(parts({"toString": "x"}))], True),
        ("a system message's toString list", [_db_message(parts([{"toString": 1}]), "system"),
                                              _db_message("It is sunny.")], True),
    ]
    question = "Is it sunny in Brooklyn today?"
    for label, messages, throws in outputs:
        out = {"messages": messages}
        for scorer, ours in (("content_similarity", code.content_similarity()),
                             ("textual_difference", code.textual_difference()),
                             ("keyword_coverage", code.keyword_coverage()),
                             ("completeness", code.completeness()),
                             ("tone", code.tone_consistency())):
            yield Case(f"{scorer}: {label}", {"scorer": scorer, "input": question, "output": out}, ours,
                       {"input": question}, out, mastra_throws=throws)

    # (label, messages, whether Mastra's LLM scorers find text to judge)
    judged_outputs: list[tuple[str, list[dict[str, Any]], bool]] = [
        ("a number after the text", [_db_message(parts("It is sunny.", 5))], True),
        ("only a number", [_db_message(parts(5))], False),
        ("an empty last text part", [_db_message(parts("It is sunny.", ""))], False),
        ("content.body", [_db_message({"format": 2, "body": "It is sunny.", "parts": []})], True),
        ("content.content a part list", [_db_message({"format": 2, "content": [text], "parts": []})], True),
        ("content.content an object", [_db_message({"format": 2, "content": {"text": "It is sunny."}})], True),
        ("the message's own text", [_db_message({"format": 2, "parts": []}, text="It is sunny.")], True),
        ("a signal standing for an assistant",
         [_db_message({"format": 2, "parts": [text], "metadata": {"signal": {"type": "assistant"}}}, "signal")], True),
        ("an earlier assistant message", [_db_message("It is sunny."), _db_message(parts(5))], True),
        ("a null part", [_db_message({"format": 2, "parts": [None, text]})], True),
    ]
    for label, messages, found in judged_outputs:
        out = {"messages": messages}
        verdicts = ["yes"] if found else []  # a judge shown no output finds no statements in it
        case = judged_case("answer_relevancy", [{"statements": [f"s{i}" for i in range(len(verdicts))]},
                                                {"results": [{"result": v, "reason": "r"} for v in verdicts]}],
                           {"statements": [{"statement": f"s{i}", "verdict": v, "reason": "r"}
                                           for i, v in enumerate(verdicts)]}, ctx=ctx, out=out)
        case.label = f"answer_relevancy: {label}"
        yield case
        case = judged_case("toxicity", [{"verdicts": [{"verdict": "no", "reason": "r"}] if found else []}],
                           {"statements": [{"statement": "s", "verdict": "ok", "reason": "r"}] if found else []},
                           ctx=ctx, out=out)
        case.label = f"toxicity: {label}"
        yield case


class InputCase(Case):
    """What Mastra's scorers read of an item's input (harness scorer "input_text", Mastra's own readers on what
    a real agent makes of it): the code scorers' text, the LLM scorers' user message, prompt alignment's system
    prompt and whether any input message is left (the tool-call accuracy scorers throw on none). `refused`:
    Mastra reads it, but evalgate does not reproduce the agent's conversion and refuses by name."""

    def __init__(self, label: str, value: Any, throws: bool = False, refused: bool = False) -> None:
        super().__init__(f"input_text: {label}", {"scorer": "input_text", "input": value}, None,
                         {"input": value}, "", mastra_throws=throws)
        self.refused = refused


def input_reading(case: Case) -> tuple[str, str, str, bool] | str:
    """evalgate's (code scorers' input text, LLM scorers' input text, system prompt, no input message), or
    "error" where it refuses."""
    try:
        value = case.item.first_input
        return (code.input_text(case.item), judged._input(case.item, judged.Options()), mastra_system_prompt(value),
                no_input_messages(value))
    except ValueError:
        return "error"


def input_agrees(mastra: dict[str, Any], ours: tuple[str, str, str, bool] | str, case: Case) -> bool:
    if case.mastra_throws:
        return "error" in mastra and ours == "error"
    if getattr(case, "refused", False):
        return "error" not in mastra and ours == "error"
    return "error" not in mastra and ours == (mastra["code"], mastra["user"] or "", mastra["system"],
                                              mastra["messages"] == 0)


def user(content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, **extra}


def texts(*values: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": v} for v in values]


IMAGE = {"type": "image", "image": "data:image/png;base64,iVBORw0KGgo="}  # a URL would be downloaded


def input_code_scorers() -> tuple[tuple[str, Any], ...]:
    """The code scorers that read the item's input, by Mastra's name."""
    return (("content_similarity", code.content_similarity()), ("textual_difference", code.textual_difference()),
            ("keyword_coverage", code.keyword_coverage()), ("completeness", code.completeness()))


def input_message_cases(ctx: Any) -> Iterator[Case]:
    """Message-list inputs as a real agent reads them: system messages set aside, a part list's text parts
    joined by a newline (empty ones dropped), format-2 content read as it is, the first user message for the
    LLM scorers; where the agent throws (a non-string text, an unknown role) evalgate refuses too."""
    yield InputCase("a string", "Is it sunny?")
    yield InputCase("one message", user("Is it sunny?"))
    yield InputCase("two user messages", [user("Is it sunny?"), user("In Brooklyn?")])
    yield InputCase("strings and messages", ["Is it sunny?", user("In Brooklyn?")])
    yield InputCase("several text parts", [user(texts("Is it sunny?", "In Brooklyn?"))])
    yield InputCase("an empty text part", [user(texts("Is it", "", "sunny?"))])
    yield InputCase("only empty text parts", [user(texts("", ""))])
    yield InputCase("spaces kept", [user(texts(" a ", " "))])
    yield InputCase("a null text", [user(texts("Is it sunny?", None))])
    yield InputCase("an image and text", [user([IMAGE, *texts("What is this?")])])
    yield InputCase("only an image", [user([IMAGE])])
    yield InputCase("an empty string", [user("")])
    yield InputCase("no parts", [user([])])
    yield InputCase("no messages", [])
    yield InputCase("a system message first", [{"role": "system", "content": "Be brief."}, user("Is it sunny?")])
    yield InputCase("a system message between", [user("Is it sunny?"), {"role": "system", "content": "Be brief."},
                                                 user("In Brooklyn?")])
    yield InputCase("only a system message", [{"role": "system", "content": "Be brief."}])
    yield InputCase("an assistant message before", [{"role": "assistant", "content": "Hello."}, user("Sunny?")])
    yield InputCase("a conversation", [user("Hi"), {"role": "assistant", "content": "Hello."}, user("Sunny?")])
    yield InputCase("format 2", [user({"format": 2, "parts": texts("Is it sunny?", "In Brooklyn?")})])
    yield InputCase("format 2 with content", [user({"format": 2, "parts": texts("p"), "content": "Is it sunny?"})])
    yield InputCase("format 2 without text", [user({"format": 2, "parts": []})])
    yield InputCase("a number text", [user(texts("Is it sunny?", 5))], throws=True)
    yield InputCase("an object text", [user(texts({"a": 1}))], throws=True)
    yield InputCase("a number text in format 2", [user({"format": 2, "parts": texts("p", 5)})], throws=True)
    yield InputCase("a developer message", [{"role": "developer", "content": "Be brief."}, user("Hi")], throws=True)
    yield InputCase("no role", [{"content": "Is it sunny?"}], throws=True)
    yield InputCase("no content", [{"role": "user"}], throws=True)
    # the code scorers' numbers move with the input text
    question = [user(texts("Is it sunny", "in Brooklyn today?")), {"role": "system", "content": "Answer briefly."}]
    answer = "It is sunny in Brooklyn today."
    for scorer, ours in input_code_scorers():
        yield Case(f"{scorer}: a message-list input", {"scorer": scorer, "input": question, "output": answer}, ours,
                   {"input": question}, answer)
    # Mastra's tool-call accuracy scorers throw on an input that becomes no message, before anything else
    booked = {"text": "Booked.", "tool_calls": [{"name": "book", "args": {}, "result": "ok"}]}
    for label, value in (("no messages", []), ("only a system message", [{"role": "system", "content": "Be brief."}]),
                         ("a user message", [user("Book it")])):
        yield Case(f"tool_call_accuracy_code: {label}", {"scorer": "tool_call_accuracy_code", "input": value,
                                                         "output": booked, "options": {"expectedTool": "book"}},
                   code.tool_call_accuracy_code(expected_tool="book"), {"input": value}, booked,
                   mastra_throws=label != "a user message")


def system(content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": "system", "content": content, **extra}


def assistant_message(content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, **extra}


IMAGE_V4 = {**IMAGE, "mimeType": "image/png"}  # an AI SDK v4 part: the agent converts the message the v4 way
FILE = {"type": "file", "data": "data:text/plain;base64,aGk=", "mediaType": "text/plain"}  # a v5 part


def input_shape_cases(ctx: Any) -> Iterator[Case]:
    """Unusual message-list inputs, each run through a real agent (tests/mastra/run_scorers.mjs), and the scorers
    that read them: the code scorers' text, getUserMessageFromRunInput, getCombinedSystemPrompt, the tool-call
    accuracy scorers' "no input message" and prompt alignment's "a user or system prompt is required"."""
    # read alike before and since: kept as regression cases
    yield InputCase("three user messages", [user("a"), user("b"), user("c")])
    yield InputCase("an image-only user message first", [user([IMAGE]), user("b")])
    yield InputCase("an empty user message first", [user(""), user("b")])
    yield InputCase("a whitespace message", [user("   ")])
    yield InputCase("whitespace parts", [user(texts("  ", "\n"))])
    yield InputCase("a text part without text", [user([{"type": "text"}, *texts("a")])])
    yield InputCase("a text part's providerOptions", [user([{"type": "text", "text": "hi", "providerOptions": {}}])])
    yield InputCase("a file part", [user([FILE, *texts("read", "this")])])
    yield InputCase("format 2, an empty content.content", [user({"format": 2, "parts": texts("p"), "content": ""})])
    yield InputCase("format 2, a number content.content", [user({"format": 2, "parts": texts("p"), "content": 5})])
    yield InputCase("format 2, content.text", [user({"format": 2, "parts": [], "text": "t"})])
    yield InputCase("format 2, whitespace content", [user({"format": 2, "parts": texts("p"), "content": "  "})])
    yield InputCase("extra fields", [user("hi", id="u1", createdAt="2024-01-01T00:00:00.000Z", name="bob",
                                          metadata={"k": 1}, foo={"bar": [1]})])
    yield InputCase("a bad createdAt", [user("hi", createdAt="garbage")])
    yield InputCase("threadId with a string", [user("hi", threadId="t1")])
    yield InputCase("unicode", [user("😀 café ΣΟΦΟΣ İstanbul \u00a0 ﬁne \ud800")])
    yield InputCase("a long input", [user("word " * 20000), user("end")])
    yield InputCase("a user message after an assistant one", [assistant_message("A"), user("u")])
    yield InputCase("system, assistant, user", [system("S"), assistant_message("A"), user("u")])
    yield InputCase("an empty assistant message between", [user("a"), assistant_message(""), user("b")])
    yield InputCase("a system message last", [user("a"), assistant_message("A"), user("b"), system("s")])
    yield InputCase("a whitespace system prompt", [system("  "), user("")])
    yield InputCase("two system messages", [system("s1"), system("s2"), user("")])
    yield InputCase("a repeated system message", [system("s"), system("s"), user("")])
    yield InputCase("system text parts", [system(texts("a", "b")), user("")])
    yield InputCase("system empty text parts", [system(texts("", "")), user("")])
    yield InputCase("a system image and text", [system([IMAGE, *texts("s")]), user("x")])
    yield InputCase("format-2 system content.content", [system({"format": 2, "parts": [], "content": "s"}), user("x")])
    yield InputCase("a system message with extra fields", [system("s", id="s1", providerOptions={"a": {}}), user("x")])
    yield InputCase("one system message, no list", system("Be brief."))
    yield InputCase("an assistant message alone", [assistant_message("A")], refused=True)
    # Mastra reads these; evalgate refused them (claiming the agent throws) or read them otherwise
    yield InputCase("an object content", [user({"text": "x"})])
    yield InputCase("an empty object content", [user({}), user("b")])
    yield InputCase("a format that is no 2", [user({"format": "2", "parts": texts("a")})])
    yield InputCase("format 2 without parts", [user({"format": 2, "content": "c"})])
    yield InputCase("format 2, null parts", [user({"format": 2, "parts": None})])
    yield InputCase("format 2, parts no list", [user({"format": 2, "parts": "x", "content": "c"})])
    yield InputCase("format 2, a null part", [user({"format": 2, "parts": [None, *texts("a")]})])
    yield InputCase("format 2, a string part", [user({"format": 2, "parts": ["x", 5, *texts("a")]})])
    yield InputCase("a null in the part list", [user([None, *texts("a")])])
    yield InputCase("a string and a number in the part list", [user(["x", *texts("a"), 5])])
    yield InputCase("a part without a type", [user([{}, {"text": "x"}, *texts("a")])])
    yield InputCase("a part of an unknown type", [user([{"type": "source", "id": "s"}, *texts("a")])])
    yield InputCase("only a string in the part list", [user(["hi"])])
    # an AI SDK v4 message (a part's mimeType, the message's experimental_providerMetadata or threadId): the agent
    # keeps its parts without content.content, so the scorers read the last text part, not the parts joined
    yield InputCase("a v4 image part", [user([*texts("a"), IMAGE_V4, *texts("b")])])
    yield InputCase("a v4 image part after a v5 file part", [user([FILE, IMAGE_V4, *texts("a", "b")])])
    yield InputCase("a v4 image part before a v5 file part", [user([IMAGE_V4, FILE, *texts("a", "b")])])
    yield InputCase("a v4 null text", [user([*texts("a", None), IMAGE_V4])])
    yield InputCase("a v4 empty text", [user([*texts("a", ""), IMAGE_V4])])
    yield InputCase("experimental_providerMetadata", [user(texts("a", "b"), experimental_providerMetadata={"x": 1})])
    yield InputCase("a part's experimental_providerMetadata",
                    [user([{"type": "text", "text": "a", "experimental_providerMetadata": {}}, *texts("b", "c")])])
    yield InputCase("threadId with parts", [user(texts("a", "b"), threadId="t1")])
    yield InputCase("resourceId null with parts", [user(texts("a", "b"), resourceId=None)])
    yield InputCase("threadId with an object content", [user({"text": "x"}, threadId="t1")])
    yield InputCase("a v4 assistant message", [assistant_message(texts("A1", "A2"), experimental_providerMetadata={}),
                                                user("u")])
    yield InputCase("a number id twice, v5", [user("a", id=5), user("b", id=5)])
    yield InputCase("an empty id twice", [user("a", id=""), user("b", id="")])
    yield InputCase("a system message's id again", [system("s", id="x"), user("b", id="x")])
    # the agent throws: every scorer reading the input errors
    yield InputCase("a v4 null part", [user([IMAGE_V4, None, *texts("a")])], throws=True)
    yield InputCase("a v4 number text", [user([IMAGE_V4, *texts(5)])], throws=True)
    yield InputCase("a number content", [user(5)], throws=True)
    yield InputCase("a true content", [user(True)], throws=True)
    yield InputCase("a false content", [user(False)], throws=True)
    for label, value in (("no content", {"role": "system"}), ("a null content", system(None)),
                         ("a number content", system(5)), ("true content", system(True)),
                         ("an empty content", system("")), ("an empty part list", system([])),
                         ("an empty text part", system(texts(""))), ("a null text", system(texts(None))),
                         ("an image only", system([IMAGE])), ("a string part", system(["s"])),
                         ("an object content", system({"text": "s"})),
                         ("format 2 without content.content", system({"format": 2, "parts": texts("s")})),
                         ("parts", {"role": "system", "content": "s", "parts": texts("p")}),
                         ("only parts", {"role": "system", "parts": texts("p")}),
                         ("threadId", system("s", threadId="t1")),
                         ("a text with toString", system(texts({"toString": 1}))),
                         ("v4 and a number content", system(5, experimental_providerMetadata={})),
                         ("v4 and a number text", system([{"type": "text", "text": 5, "mimeType": "t"}]))):
        yield InputCase(f"a system message with {label}", [value, user("hi")], throws=True)
    # user messages sharing an id: the later replaces the earlier one (or is dropped as equal to it), group
    # input_merges
    yield InputCase("an id twice", [user("a", id="x"), user("b", id="x")])
    yield InputCase("the same message twice", [user("a", id="x"), user("a", id="x")])
    yield InputCase("an id twice, apart", [user("a", id="x"), user("m"), user("b", id="x")])
    # Mastra reads these, evalgate refuses them by name: other messages sharing an id (the agent replaces or merges
    # the earlier one), a signal message, a v4 system message (passed on as it is)
    yield InputCase("an id twice, v4", [user(texts("a"), id=5, threadId="t"), user(texts("b"), id=5, threadId="t")],
                    refused=True)
    yield InputCase("a user's id on an assistant message", [user("q", id="x"), assistant_message("A", id="x"),
                                                            user("b")], refused=True)
    yield InputCase("a signal message", [{"role": "signal", "content": "hi"}, user("u")], refused=True)
    yield InputCase("a v4 system message", [system([{"type": "text", "text": "a", "mimeType": "t"}]), user("x")],
                    refused=True)

    # the scorers' numbers and errors on such inputs
    answer = "It is sunny in Brooklyn today."
    for label, value in (("an object content", [user({"text": "Is it sunny?"}), user("In Brooklyn today?")]),
                         ("format-2 parts with a null", [user({"format": 2, "parts": [None, *texts("Sunny today?")]})]),
                         ("a v4 message", [user(texts("Is it sunny", "in Brooklyn today?"), threadId="t1")])):
        for scorer, ours in input_code_scorers():
            yield Case(f"{scorer}: {label}", {"scorer": scorer, "input": value, "output": answer}, ours,
                       {"input": value}, answer)
    bad_system = [system(""), user("Is it sunny?")]
    for scorer, ours in (("content_similarity", code.content_similarity()), ("completeness", code.completeness())):
        yield Case(f"{scorer}: an empty system message", {"scorer": scorer, "input": bad_system, "output": answer},
                   ours, {"input": bad_system}, answer, mastra_throws=True)
    booked = {"text": "Booked.", "tool_calls": [{"name": "book", "args": {}, "result": "ok"}]}
    for label, value, throws in (("one system message, no list", system("Be brief."), True),
                                 ("an empty system message", [system(""), user("Book it")], True),
                                 ("a number content", [user(5)], True),
                                 ("an object content", [user({"text": "Book it"})], False),
                                 ("an id twice", [user("Book", id="x"), user("it", id="x")], False),
                                 ("an assistant message alone", [assistant_message("Booking.")], False)):
        yield Case(f"tool_call_accuracy_code: {label}", {"scorer": "tool_call_accuracy_code", "input": value,
                                                         "output": booked, "options": {"expectedTool": "book"}},
                   code.tool_call_accuracy_code(expected_tool="book"), {"input": value}, booked, mastra_throws=throws)
        if label == "an assistant message alone":
            continue  # the LLM scorer shows the judge the user message, which evalgate refuses to read (above)
        case = judged_case("tool_call_accuracy", [{"evaluations": [{"toolCalled": "book", "wasAppropriate": True,
                                                                    "reasoning": "r"}], "missingTools": []}],
                           {"calls": [{"index": 1, "appropriate": True, "reason": "r"}], "missing_tools": [],
                            "reason": "r"}, throws=throws, ctx=ctx, out=booked, item={"input": value}, input=value,
                           options={"availableTools": [{"id": "book", "description": "book tool"}]})
        case.label = f"tool_call_accuracy: {label}"
        yield case
    # prompt alignment (default "both" mode) needs a user or a system prompt: the input's system messages count
    parts = (0.9, 0.8, 0.7, 1.0)
    for label, value, rejects in (("a system prompt and an empty user message", [system("Be brief."), user("")], False),
                                  ("only a system prompt", [system("Answer in French.")], False),
                                  ("a whitespace system prompt", [system("  "), user("")], False),
                                  ("system text parts", [system(texts("Be", "brief")), user(texts(""))], False),
                                  ("an image-only user message", [system("Be brief."), user([IMAGE])], False),
                                  ("an empty user message", [user("")], True),
                                  ("an object content", [user({"text": "Be brief."})], True),
                                  ("an empty system message", [system(""), user("Hi")], False)):
        throws = label == "an empty system message"
        case = judged_case("prompt_alignment", [alignment_reply(*parts)], alignment_answer(*parts), ctx=ctx,
                           item={"input": value}, input=value, throws=throws)
        case.mastra_rejects = rejects
        case.label = f"prompt_alignment: {label}"
        yield case


def tool_call(call_id: str = "c1", name: str = "weather", v4: bool = False) -> dict[str, Any]:
    """An assistant's tool-call part, AI SDK v5 (`input`) or v4 (`args`)."""
    key = "args" if v4 else "input"
    return {"type": "tool-call", "toolCallId": call_id, "toolName": name, key: {"city": "Paris"}}


def tool_result(call_id: str = "c1", name: str = "weather", v4: bool = False, output: Any = None) -> dict[str, Any]:
    """A tool message's tool-result part, AI SDK v5 (`output: {type, value}`) or v4 (`result`)."""
    part = {"type": "tool-result", "toolCallId": call_id, "toolName": name}
    if v4:
        return {**part, "result": {"temp": 20}}
    return {**part, "output": output if output is not None else {"type": "json", "value": {"temp": 20}}}


def tool_message(*parts: Any, **extra: Any) -> dict[str, Any]:
    return {"role": "tool", "content": list(parts), **extra}


V4 = {"experimental_providerMetadata": {}}  # makes a message of text parts an AI SDK v4 one


def input_merge_cases(ctx: Any) -> Iterator[Case]:
    """Conversation histories with tool calls, as a real agent merges them: every run of assistant and tool
    messages (a tool message is an assistant one to the agent, merged into the calls before it) becomes one input
    message, whose text is the last non-empty `content.content` of them (a v5 message's text parts joined, a string
    content), else the text parts of the only one that has any. Where the merge is not reproduced (the run ends
    the input, so it is merged into the agent's own reply; v4 text parts in two of them; format-2 content,
    metadata, a threadId, a shared id) evalgate refuses by name. Each reading was found by running the agent."""
    history = [user("Weather in Paris?"), assistant_message([*texts("Let me check."), tool_call()]),
               tool_message(tool_result()), user("And in London?")]
    history_v4 = [user("Weather in Paris?"), assistant_message([*texts("Let me check."), tool_call(v4=True)]),
                  tool_message(tool_result(v4=True)), user("And in London?")]
    yield InputCase("a tool call and its result, v5", history)
    yield InputCase("a tool call and its result, v4", history_v4)
    yield InputCase("a text result", [user("u"), assistant_message([tool_call()]),
                                      tool_message(tool_result(output={"type": "text", "value": "20C"})), user("v")])
    yield InputCase("an error result", [user("u"), assistant_message([*texts("A"), tool_call()]),
                                        tool_message(tool_result(output={"type": "error-text", "value": "boom"})),
                                        user("v")])
    yield InputCase("only a tool call", [user("u"), assistant_message([tool_call()]), tool_message(tool_result()),
                                         user("v")])
    yield InputCase("only a tool call, v4", [user("u"), assistant_message([tool_call(v4=True)]),
                                             tool_message(tool_result(v4=True)), user("v")])
    yield InputCase("a v4 call, a v5 result", [user("u"), assistant_message([*texts("A"), tool_call(v4=True)]),
                                               tool_message(tool_result()), user("v")])
    yield InputCase("a v5 call, a v4 result", [user("u"), assistant_message([*texts("A"), tool_call()]),
                                               tool_message(tool_result(v4=True)), user("v")])
    yield InputCase("text after the tool call", [user("u"), assistant_message([tool_call(v4=True), *texts("after")]),
                                                 tool_message(tool_result(v4=True)), user("v")])
    yield InputCase("two texts and a reply", [user("u"), assistant_message(texts("A1", "B")),
                                              tool_message(tool_result()), assistant_message(texts("C")), user("v")])
    yield InputCase("a call, its result, then an answer", [user("u"), assistant_message([tool_call()]),
                                                           tool_message(tool_result()), assistant_message("Done"),
                                                           user("v")])
    yield InputCase("two rounds of calls, v4", [user("u"), assistant_message([*texts("T"), tool_call(v4=True)]),
                                                tool_message(tool_result(v4=True)),
                                                assistant_message([tool_call("c2", v4=True)]),
                                                tool_message(tool_result("c2", v4=True)), user("v")])
    yield InputCase("a v4 text in the second round", [user("u"), assistant_message([tool_call(v4=True)]),
                                                      tool_message(tool_result(v4=True)),
                                                      assistant_message([*texts("X"), tool_call("c2", v4=True)]),
                                                      tool_message(tool_result("c2", v4=True)), user("v")])
    yield InputCase("v4 text parts last", [user("u"), assistant_message([tool_call(v4=True)]),
                                           tool_message(tool_result(v4=True)), assistant_message(texts("X", "Y"), **V4),
                                           user("v")])
    yield InputCase("an empty text before the second call", [user("u"), assistant_message([*texts("A"), tool_call()]),
                                                             tool_message(tool_result()),
                                                             assistant_message([*texts(""), tool_call("c2")]),
                                                             tool_message(tool_result("c2")), user("v")])
    yield InputCase("two histories", [user("u"), assistant_message([*texts("A"), tool_call()]),
                                      tool_message(tool_result()), user("v"),
                                      assistant_message([*texts("B"), tool_call("c2")]),
                                      tool_message(tool_result("c2")),
                                      assistant_message("Final"), user("w")])
    yield InputCase("two calls, results out of order", [user("u"), assistant_message([tool_call(), tool_call("c2")]),
                                                        tool_message(tool_result("c2"), tool_result("c3")), user("v")])
    yield InputCase("two tool messages", [user("u"), tool_message(tool_result()), tool_message(tool_result("c2")),
                                          user("v")])
    yield InputCase("a tool message with no call", [user("u"), tool_message(tool_result()), user("v")])
    yield InputCase("a tool message with no call, v4", [user("u"), tool_message(tool_result(v4=True)), user("v")])
    yield InputCase("a history starting with an assistant message", [assistant_message("A"),
                                                                     tool_message(tool_result()), user("v")])
    yield InputCase("a tool message's string content", [user("u"), assistant_message([tool_call()]),
                                                        {"role": "tool", "content": "20C"}, user("v")])
    yield InputCase("a tool message's text part", [user("u"), assistant_message([tool_call()]),
                                                   tool_message(*texts("tool text"), tool_result()), user("v")])
    yield InputCase("a tool message with no parts", [user(texts("u")), assistant_message(texts("x")), tool_message(),
                                                     user("v")])
    yield InputCase("a tool message's object content", [user("u"), assistant_message([tool_call()]),
                                                        {"role": "tool", "content": {"x": 1}}, user("v")])
    openai_calls = [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]
    openai_result = {"role": "tool", "tool_call_id": "c1", "content": "20C"}
    yield InputCase("OpenAI's tool_calls beside an empty content",
                    [user("u"), assistant_message("", tool_calls=openai_calls), openai_result, user("v")])
    yield InputCase("an empty string before the result", [user("u"), assistant_message(""), tool_message(tool_result()),
                                                          user("v")])
    yield InputCase("an empty text with the call", [user("u"), assistant_message([*texts(""), tool_call()]),
                                                    tool_message(tool_result()), user("v")])
    yield InputCase("an empty text with the call, v4", [user("u"), assistant_message([*texts(""), tool_call(v4=True)]),
                                                        tool_message(tool_result(v4=True)), user("v")])
    yield InputCase("a trailing empty text", [user("u"), assistant_message(texts("A", "")), tool_message(tool_result()),
                                              user("v")])
    yield InputCase("ids on both", [user("u"), assistant_message("A", id="a1"), tool_message(tool_result(), id="t1"),
                                    user("v")])
    yield InputCase("a result's providerOptions", [user("u"), assistant_message([tool_call()]),
                                                   tool_message(tool_result(), providerOptions={"a": {}}), user("v")])
    yield InputCase("a v4 image with the text", [user("u"), assistant_message([*texts("A"), IMAGE_V4]),
                                                 tool_message(tool_result(v4=True)), user("v")])
    yield InputCase("a number text with the call", [user("u"), assistant_message([*texts(5), tool_call()]),
                                                    tool_message(tool_result()), user("v")], throws=True)
    # a v4 message's tool result takes the args of its call in the same message: Object.keys throws on none
    yield InputCase("a v4 result and its call without args", [user([tool_result(), tool_call(),
                                                                     *texts("a")], **V4), user("v")], throws=True)
    yield InputCase("a v4 result and its call with args", [user([tool_result(), tool_call(v4=True), *texts("a")], **V4),
                                                           user("v")])
    yield InputCase("a v4 result and a call of another id", [user([tool_result(), tool_call("c2"), *texts("a")], **V4),
                                                             user("v")])
    yield InputCase("no content with OpenAI's tool_calls",
                    [user("u"), assistant_message(None, tool_calls=openai_calls), openai_result, user("v")],
                    throws=True)
    # v4 text parts in several merged messages, none with a content.content: an incoming text part is appended only
    # while the message has fewer parts of its text than the incoming one (MessageMerger.pushNewPart)
    yield InputCase("v4 text parts in two messages", [user("u"),
                                                      assistant_message([*texts("X", "Y"), tool_call(v4=True)]),
                                                      tool_message(tool_result(v4=True)),
                                                      assistant_message(texts("Z"), **V4), user("v")])
    yield InputCase("v4 text parts twice", [user("u"), assistant_message(texts("X", "Y"), **V4),
                                            assistant_message(texts("X"), **V4), user("v")])
    yield InputCase("an empty v5 text, then v4 text", [user("u"), assistant_message(texts("")),
                                                       assistant_message(texts("X"), **V4), user("v")])
    yield InputCase("v4 text parts repeated", [user("u"), assistant_message(texts("X", "Y", "X"), **V4),
                                               assistant_message(texts("X", "X", "X"), **V4), user("v")])
    yield InputCase("v4 text parts around an empty string", [user("u"), assistant_message(texts("X", "Y"), **V4),
                                                             assistant_message(""),
                                                             assistant_message(texts("Y", "X"), **V4), user("v")])
    yield InputCase("v4 text parts with a new call", [user("u"), assistant_message(texts("X", "Y"), **V4),
                                                      assistant_message([*texts("Y"), tool_call("c2", v4=True)]),
                                                      tool_message(tool_result("c2", v4=True)), user("v")])
    yield InputCase("merged v4 text parts, a null one", [user("u"), assistant_message(texts("X", None), **V4),
                                                         assistant_message(texts("undefined"), **V4), user("v")],
                    refused=True)
    yield InputCase("merged v4 text parts, providerOptions", [user("u"), assistant_message(texts("X", "Y"), **V4),
                                                              assistant_message([{"type": "text", "text": "X",
                                                                                  "providerOptions": {"o": {}}}],
                                                                                **V4), user("v")], refused=True)
    # assistant messages in a row, and the other part types
    yield InputCase("two assistant messages", [user("a"), assistant_message("A1"), assistant_message("A2"), user("b")])
    yield InputCase("an empty text part after", [user("u"), assistant_message("A1"), assistant_message(texts("")),
                                                 user("v")])
    yield InputCase("an empty string, then a text", [user("u"), assistant_message(""), assistant_message("B"),
                                                     user("v")])
    yield InputCase("a system message between", [user("u"), assistant_message("A"), system("s"),
                                                 assistant_message("B"), user("v")])
    yield InputCase("null texts, then an empty one", [user("u"), assistant_message(texts(None, None)),
                                                      assistant_message(texts("")), user("v")])
    yield InputCase("null texts, then a text", [user("u"), assistant_message(texts(None, None)),
                                                assistant_message("B"), user("v")])
    yield InputCase("v4 text parts, then a call", [user("u"), assistant_message(texts("X"), **V4),
                                                   assistant_message([tool_call(v4=True)]),
                                                   tool_message(tool_result(v4=True)), user("v")])
    yield InputCase("a reasoning part", [user("a"), assistant_message([{"type": "reasoning", "text": "think"},
                                                                       *texts("A1")]), user("b")])
    yield InputCase("only a reasoning part", [user("u"), assistant_message([{"type": "reasoning", "text": "hmm"}]),
                                              user("v")])
    yield InputCase("reasoning with a call", [user("u"), assistant_message([{"type": "reasoning", "text": "r"},
                                                                            tool_call()]),
                                              tool_message(tool_result()), user("v")])
    yield InputCase("a v4 reasoning part", [user("u"), assistant_message([{"type": "reasoning", "text": "r",
                                                                           "signature": "s"}, *texts("A")]), user("v")])
    yield InputCase("a redacted reasoning part", [user("u"), assistant_message([{"type": "redacted-reasoning",
                                                                                 "data": "r"}, *texts("A")]),
                                                  user("v")])
    yield InputCase("an assistant's image", [user("u"), assistant_message([*texts("x"), IMAGE]), user("v")])
    yield InputCase("an assistant's file", [user("u"), assistant_message([FILE, *texts("x")]), user("v")])
    # Mastra reads these; evalgate does not reproduce the merge and refuses by name
    yield InputCase("a history ending with a tool result", history[:3], refused=True)
    yield InputCase("an assistant message last", [user("a"), assistant_message("A1")], refused=True)
    # v4 text parts beside a result answering an earlier call: the agent anchors the result on the call and places
    # the texts around it, dropping some (`[text X, result, text Y]` reads "X")
    yield InputCase("v4 texts around a result", [user("u"), assistant_message([tool_call(v4=True)]),
                                                 assistant_message([*texts("X"), tool_result(v4=True), *texts("Y")]),
                                                 user("v")], refused=True)
    yield InputCase("a v4 tool message's text", [user("u"), assistant_message([tool_call(v4=True)]),
                                                 tool_message(*texts("X"), tool_result(v4=True)), user("v")],
                    refused=True)
    yield InputCase("v4 texts between results", [user("u"), assistant_message([tool_call(v4=True),
                                                                               tool_call("c2", v4=True)]),
                                                 tool_message(tool_result(v4=True), *texts("X", "Y"),
                                                              tool_result("c2", v4=True), *texts("X")), user("v")],
                    refused=True)
    yield InputCase("a format-2 assistant message merged", [user("u"), assistant_message("A"),
                                                            assistant_message({"format": 2, "parts": texts("B")}),
                                                            user("v")], refused=True)
    yield InputCase("metadata on a merged message", [user("u"), assistant_message("A", metadata={"k": 1}),
                                                     assistant_message("B"), user("v")], refused=True)
    yield InputCase("a threadId on a merged message", [user("u"), assistant_message(texts("A")),
                                                       assistant_message(texts("B"), threadId="t"), user("v")],
                    refused=True)
    yield InputCase("a tool message with the assistant's id", [user("u"), assistant_message("A", id="a1"),
                                                               tool_message(tool_result(), id="a1"), user("v")],
                    refused=True)
    yield InputCase("a tool-approval request", [user("u"), assistant_message([{
        "type": "tool-approval-request", "approvalId": "p", "toolCallId": "c1"}]), user("v")], refused=True)

    # a user message's other parts: converted as in any message (tool calls and results become tool invocations,
    # never merged: the message stays a user one), they add no text; a v4 one is read by its last text part
    reasoning = {"type": "reasoning", "text": "r"}
    yield InputCase("a user's reasoning part", [user([reasoning, *texts("a", "b")])])
    yield InputCase("a user's reasoning part and an empty text", [user([reasoning, *texts("")])])
    yield InputCase("a user's tool call", [user([tool_call(), *texts("a", "b")])])
    yield InputCase("a user's tool result", [user([tool_result(), *texts("a", "b")])])
    yield InputCase("a user's v4 tool call", [user([tool_call(v4=True), *texts("a", "b")])])
    yield InputCase("a user's v4 tool result", [user([tool_result(v4=True), *texts("a", "b")])])
    yield InputCase("a user's empty text beside a tool call", [user([*texts("a", ""), tool_call()])])
    yield InputCase("a user's redacted reasoning", [user([{"type": "redacted-reasoning", "data": "x"},
                                                          *texts("a", "b")])])
    yield InputCase("a user's v4 reasoning", [user([{**reasoning, "signature": "s"}, *texts("a", "b")])])
    yield InputCase("a user message of a tool call", [user("q"), user([tool_call()]), user("v")])
    yield InputCase("a user message of a tool result first", [user([tool_result()]), user("v")])
    yield InputCase("a user's tool result after an assistant message", [assistant_message("A"),
                                                                         user([tool_result()]), user("v")])
    yield InputCase("a user's tool-approval response", [user([{"type": "tool-approval-response", "approvalId": "p",
                                                               "approved": True}, *texts("a")])], refused=True)

    # user messages sharing an id (MessageList.shouldReplaceMessage): the later one replaces the earlier, and, the
    # newest, is sorted last; one equal to it (messagesAreEqual: its text parts' "text" + text keys alike, so
    # "atextb" equals "a" then "b") is dropped, the earlier staying where it is
    yield InputCase("an id twice, a message between", [user("a", id="x"), user("m"), user("b", id="x")])
    yield InputCase("the same message twice, a message between", [user("a", id="x"), user("m"), user("a", id="x")])
    yield InputCase("a string and its text part", [user("a", id="x"), user("m"), user(texts("a"), id="x")])
    yield InputCase("a string and two text parts", [user("ab", id="x"), user("m"), user(texts("a", "b"), id="x")])
    yield InputCase("equal cache keys", [user(texts("atextb"), id="x"), user("m"), user(texts("a", "b"), id="x")])
    yield InputCase("an empty text part dropped", [user(texts("a", ""), id="x"), user("m"), user("a", id="x")])
    yield InputCase("an empty string and no parts", [user("", id="x"), user("m"), user([], id="x")])
    yield InputCase("one and two empty text parts", [user(texts(""), id="x"), user("m"), user(texts("", ""), id="x")])
    yield InputCase("parts in another order", [user(texts("a", "b"), id="x"), user(texts("b", "a"), id="x")])
    yield InputCase("an id three times", [user("a", id="x"), user("b", id="x"), user("m"), user("a", id="x")])
    yield InputCase("two ids twice", [user("a", id="x"), user("m", id="y"), user("b", id="x"), user("n", id="y")])
    yield InputCase("an assistant message between", [user("a", id="x"), assistant_message("A"), user("b", id="x")])
    yield InputCase("assistant messages kept apart", [assistant_message("A1"), user("a", id="x"),
                                                      assistant_message("A2"), user("b", id="x")])
    yield InputCase("a system message's id between", [user("a", id="x"), system("s", id="x"), user("b", id="x")])
    yield InputCase("the same message twice, a user message between", [user("a", id="x"), assistant_message("A"),
                                                                        user("m"), user("a", id="x")])
    yield InputCase("an id twice, the later after an assistant message", [user("a", id="x"), assistant_message("A"),
                                                                          user("b", id="x")])
    # an equal message dropped after an assistant message leaves that one last (merged into the agent's reply: "a,
    # ok") or next to another assistant message (merged with it: "a, A2, v")
    yield InputCase("the same message twice, an assistant message between",
                    [user("a", id="x"), assistant_message("A"), user("a", id="x")], refused=True)
    yield InputCase("the same message twice between assistant messages",
                    [user("a", id="x"), assistant_message("A1"), user("a", id="x"), assistant_message("A2"), user("v")],
                    refused=True)
    yield InputCase("an id twice, an image", [user([*texts("a"), IMAGE], id="x"), user("a", id="x")], refused=True)
    yield InputCase("an id twice, metadata", [user("a", id="x"), user("b", id="x", metadata={"k": 1})], refused=True)
    yield InputCase("an id twice, a threadId", [user("a", id="x"), user("b", id="x", threadId="t")], refused=True)
    yield InputCase("an id on a user and an assistant message", [user("q", id="x"), assistant_message("A", id="x"),
                                                                 user("b")], refused=True)

    # AI SDK UI messages (`parts`, no `content`) of text and step-start parts: the agent takes them for v4 ones
    # (AIV4Adapter.fromUIMessage: no AI SDK v5 UI characteristics), keeps the parts without content.content, so
    # the last text part is read (empty ones dropped unless all are), and merges assistant ones as any
    def ui(role: str, *parts: Any, **extra: Any) -> dict[str, Any]:
        return {"role": role, "parts": [p if isinstance(p, dict) else {"type": "text", "text": p} for p in parts],
                **extra}

    step = {"type": "step-start"}
    yield InputCase("a UI message", [ui("user", "a", "b", id="1")])
    yield InputCase("a UI message without an id", [ui("user", "a", "b")])
    yield InputCase("a UI message's empty last text", [ui("user", "a", "")])
    yield InputCase("a UI message of empty texts", [ui("user", "", "")])
    yield InputCase("a UI message without parts", [ui("user")])
    yield InputCase("a UI message's step-start", [ui("user", step, "a")])
    yield InputCase("a UI conversation", [ui("user", "a", id="1"), ui("assistant", step, "A1", "A2", id="2"),
                                          ui("user", "b", id="3")])
    yield InputCase("UI assistant messages merged", [ui("user", "a"), ui("assistant", "X", "Y"), ui("assistant", "X"),
                                                     ui("user", "b")])
    yield InputCase("a UI message and core ones merged", [user("a"), ui("assistant", "X"), assistant_message("B"),
                                                          tool_message(tool_result()), user("b")])
    yield InputCase("an empty UI assistant message", [ui("user", "a", "b"), ui("assistant", ""), ui("user", "c")])
    yield InputCase("a UI message's number id", [ui("user", "a", id=5), ui("user", "b", id=6)])
    yield InputCase("a UI message's number text", [ui("user", "a", 5)], throws=True)
    # a file part with a mediaType, a reasoning part with a text, a tool part with a toolCallId make it an AI SDK v5
    # UI message: AIV5Adapter.fromUIMessage joins all its texts with "" into content.content
    weather = {"type": "tool-weather", "toolCallId": "c1", "state": "output-available", "input": {}, "output": {"t": 1}}
    file = {"type": "file", "mediaType": "image/png", "url": IMAGE["image"]}
    yield InputCase("a v5 UI message's tool part", [ui("user", "a"), ui("assistant", step, weather, step, "A1", "A2"),
                                                    ui("user", "b")])
    yield InputCase("a v5 UI message's file part", [ui("user", file, "a", "", "b")])
    yield InputCase("a v5 UI message's reasoning", [ui("user", "a"), ui("assistant", {"type": "reasoning", "text": "r"},
                                                                        " ", "B"), ui("user", "b")])
    yield InputCase("a v5 UI message's empty texts", [ui("user", file, "", "")])
    yield InputCase("a v5 UI message's null text", [ui("user", file, None, "a", None)])
    yield InputCase("a v5 UI message's tool error", [ui("user", "a"), ui("assistant", {
        "type": "tool-weather", "toolCallId": "c1", "state": "output-error", "input": {}, "errorText": "boom"}),
        ui("user", "b")])
    yield InputCase("v5 UI assistant messages merged", [ui("user", "a"), ui("assistant", weather, "X"),
                                                        ui("assistant", file, "Y", "Z"), ui("user", "b")])
    yield InputCase("a v5 UI message's number id", [ui("user", file, "a", id=5), ui("user", file, "b", id=5)])
    yield InputCase("a UI message with content", [{**ui("user", "a", "b"), "content": "c"}], refused=True)
    yield InputCase("a UI message's source part", [ui("user", {"type": "source-url", "sourceId": "s", "url": "u"},
                                                      "a")], refused=True)
    yield InputCase("v5 UI messages merged without text", [ui("user", "a"), ui("assistant", weather, ""),
                                                           ui("assistant", file, ""), ui("user", "b")], refused=True)
    yield InputCase("a UI message's metadata", [ui("user", "a", metadata={"k": 1})], refused=True)
    yield InputCase("a UI message's id twice", [ui("user", "a", id="x"), ui("user", "b", id="x")], refused=True)

    # the scorers' numbers on a tool-call history
    answer = "It is sunny in London today."
    question = [user("What is the weather in Paris?"),
                assistant_message([*texts("Let me check the weather."), tool_call()]),
                tool_message(tool_result()), assistant_message("It is 20 degrees in Paris."),
                user("And is it sunny in London today?")]
    replaced = [user("What is the weather in Paris?", id="q"), user("Is it sunny in London?"),
                user("And is it sunny in London today?", id="q")]
    for label, value in (("a tool-call history", question), ("a v4 tool-call history", history_v4),
                         ("a user message replaced", replaced),
                         ("a user's tool call", [user([tool_call(), *texts("Is it sunny", "in London today?")])])):
        for scorer, ours in input_code_scorers():
            yield Case(f"{scorer}: {label}", {"scorer": scorer, "input": value, "output": answer}, ours,
                       {"input": value}, answer)
    booked = {"text": "Booked.", "tool_calls": [{"name": "book", "args": {}, "result": "ok"}]}
    for label, value in (("a tool-call history", question), ("a v4 tool-call history", history_v4),
                         ("a user message replaced", replaced), ("a history ending with a tool result", history[:3])):
        yield Case(f"tool_call_accuracy_code: {label}", {"scorer": "tool_call_accuracy_code", "input": value,
                                                         "output": booked, "options": {"expectedTool": "book"}},
                   code.tool_call_accuracy_code(expected_tool="book"), {"input": value}, booked)
        if label == "a history ending with a tool result":
            continue  # the LLM scorer shows the judge the user message, which evalgate refuses to read (above)
        case = judged_case("tool_call_accuracy", [{"evaluations": [{"toolCalled": "book", "wasAppropriate": True,
                                                                    "reasoning": "r"}], "missingTools": []}],
                           {"calls": [{"index": 1, "appropriate": True, "reason": "r"}], "missing_tools": [],
                            "reason": "r"}, ctx=ctx, out=booked, item={"input": value}, input=value,
                           options={"availableTools": [{"id": "book", "description": "book tool"}]})
        case.label = f"tool_call_accuracy: {label}"
        yield case
        case = judged_case("answer_relevancy", [{"statements": ["s0", "s1"]}, {"results": [
            {"result": "yes", "reason": "r"}, {"result": "no", "reason": "r"}]}],
            {"statements": [{"statement": "s0", "verdict": "yes", "reason": "r"},
                            {"statement": "s1", "verdict": "no", "reason": "r"}]},
            ctx=ctx, item={"input": value}, input=value)
        case.label = f"answer_relevancy: {label}"
        yield case


def judged_case(scorer: str, judge: list[Any], answer: Any, *, throws: bool = False, options: Any = None,
                item: dict[str, Any] | None = None, out: Any = BASE["output"], **node: Any) -> Case:
    """One judged scorer on the same input: Mastra's judge steps `judge`, evalgate's one reply `answer`."""
    ctx = node.pop("ctx")
    ours = {"input": BASE["input"], **(item or {})}
    built = {"tool_call_accuracy": lambda: judged.tool_call_accuracy(tools=["book"], ctx=ctx),
             "rubric": lambda: judged.rubric(criterion="is polite", ctx=ctx)}
    scorer_fn = built[scorer]() if scorer in built else getattr(judged, scorer)(ctx=ctx)
    theirs = {**BASE, "output": out, "scorer": scorer, "judge": judge, **node}
    if options is not None:
        theirs["options"] = options
    return Case(scorer, theirs, scorer_fn, ours, out, answer, mastra_throws=throws)


def judge_label_cases(ctx: Any) -> Iterator[Case]:
    """Verdict labels outside the prompt's: Mastra's free-string verdicts count only its own word,
    compared as each scorer compares it (trimmed and lower-cased, lower-cased, or exactly)."""
    with_context = {"options": {"context": CONTEXT}, "item": {"context": CONTEXT}}
    yield judged_case("answer_relevancy", [{"statements": ["a", "b", "c", "d"]}, {"results": [
        {"result": r, "reason": "r"} for r in ("maybe", "yes", " UNSURE ", "Yes!")]}],
        {"statements": [{"statement": s, "verdict": v, "reason": "r"}
                        for s, v in zip("abcd", ("maybe", "yes", " UNSURE ", "Yes!"), strict=True)]}, ctx=ctx)
    # faithfulness and hallucination compare exactly: "YES" is not "yes"
    yield judged_case("faithfulness", [{"claims": ["a", "b", "c"]}, {"verdicts": [
        {"verdict": v, "reason": "r"} for v in ("maybe", "yes", "YES")]}],
        {"claims": [{"claim": c, "verdict": v, "reason": "r"}
                    for c, v in zip("abc", ("maybe", "supported", "Supported"), strict=True)]}, ctx=ctx, **with_context)
    yield judged_case("hallucination", [{"claims": ["a", "b", "c", "d"]}, {"verdicts": [
        {"statement": s, "verdict": v, "reason": "r"} for s, v in zip("abcd", ("maybe", "yes", "Yes", "no"),
                                                                      strict=True)]}],
        {"claims": [{"claim": c, "verdict": v, "reason": "r"}
                    for c, v in zip("abcd", ("maybe", "contradicted", "Contradicted", "supported"), strict=True)]},
        ctx=ctx, **with_context)
    yield judged_case("toxicity", [{"verdicts": [{"verdict": v, "reason": "r"} for v in ("maybe", " Yes ", "no")]}],
                      {"statements": [{"statement": "s", "verdict": v, "reason": "r"}
                                      for v in ("maybe", " Toxic ", "ok")]}, ctx=ctx)
    # bias lower-cases without trimming: " yes" is not "yes"
    yield judged_case("bias", [{"opinions": ["a", "b", "c", "d"]}, {"results": [
        {"result": v, "reason": "r"} for v in ("maybe", " yes", "YES", "no")]}],
        {"opinions": [{"opinion": "o", "verdict": v, "reason": "r"}
                      for v in ("maybe", " biased", "BIASED", "unbiased")]}, ctx=ctx)
    # context_relevance's and answer_similarity's labels are an enum: anything else, "High" too, is rejected
    for level in ("maybe", "High"):
        yield judged_case("context_relevance", [{"evaluations": [
            {"context_index": 0, "contextPiece": "a", "relevanceLevel": level, "wasUsed": True, "reasoning": "r"},
            {"context_index": 1, "contextPiece": "b", "relevanceLevel": "high", "wasUsed": True, "reasoning": "r"}],
            "missingContext": [], "overallAssessment": "a"}],
            {"verdicts": [{"index": 1, "relevance": level, "used": True, "reason": "r"},
                          {"index": 2, "relevance": "high", "used": True, "reason": "r"}]},
            throws=True, ctx=ctx, **with_context)
    for match in ("maybe", "Exact"):
        yield judged_case("answer_similarity", [{"outputUnits": ["o"], "groundTruthUnits": ["g"]}, {
            "matches": [{"groundTruthUnit": "g", "outputUnit": None, "matchType": match, "explanation": "e"}],
            "extraInOutput": [], "contradictions": []}],
            {"facts": [{"fact": "g", "verdict": match, "reason": "r"}]},
            throws=True, ctx=ctx, item={"ground_truth": "It is sunny."}, ground_truth="It is sunny.")


def judge_reason_cases(ctx: Any) -> Iterator[Case]:
    """A verdict without its reason: every Mastra judge schema requires it; the scorer throws after a retry."""
    with_context = {"options": {"context": CONTEXT}, "item": {"context": CONTEXT}}
    yield judged_case("answer_relevancy", [{"statements": ["a"]}, {"results": [{"result": "yes"}]}],
                      {"statements": [{"statement": "a", "verdict": "yes"}]}, throws=True, ctx=ctx)
    yield judged_case("faithfulness", [{"claims": ["a"]}, {"verdicts": [{"verdict": "yes"}]}],
                      {"claims": [{"claim": "a", "verdict": "supported"}]}, throws=True, ctx=ctx, **with_context)
    yield judged_case("hallucination", [{"claims": ["a"]}, {"verdicts": [{"statement": "a", "verdict": "no"}]}],
                      {"claims": [{"claim": "a", "verdict": "supported"}]}, throws=True, ctx=ctx, **with_context)
    yield judged_case("toxicity", [{"verdicts": [{"verdict": "no"}]}],
                      {"statements": [{"statement": "s", "verdict": "ok"}]}, throws=True, ctx=ctx)
    yield judged_case("bias", [{"opinions": ["a"]}, {"results": [{"result": "no"}]}],
                      {"opinions": [{"opinion": "a", "verdict": "unbiased"}]}, throws=True, ctx=ctx)
    yield judged_case("context_precision", [{"verdicts": [{"context_index": 0, "verdict": "yes"},
                                                          {"context_index": 1, "verdict": "no", "reason": "r"}]}],
                      {"verdicts": [{"index": 1, "useful": True}, {"index": 2, "useful": False, "reason": "r"}]},
                      throws=True, ctx=ctx, **with_context)
    yield judged_case("context_relevance", [{"evaluations": [
        {"context_index": i, "contextPiece": c, "relevanceLevel": "high", "wasUsed": True}
        for i, c in enumerate(CONTEXT)], "missingContext": [], "overallAssessment": "a"}],
        {"verdicts": [{"index": i, "relevance": "high", "used": True} for i in (1, 2)]},
        throws=True, ctx=ctx, **with_context)
    yield judged_case("context_recall", [{"claims": ["a"]}, {"verdicts": [{"verdict": "yes"}]}],
                      {"sentences": [{"sentence": "a", "attributed": True}]}, throws=True, ctx=ctx,
                      options={"context": CONTEXT}, item={"context": CONTEXT, "ground_truth": "It is sunny."},
                      ground_truth="It is sunny.")
    similarity = {"ctx": ctx, "item": {"ground_truth": "It is sunny."}, "ground_truth": "It is sunny."}
    yield judged_case("answer_similarity", [{"outputUnits": ["o"], "groundTruthUnits": ["g"]}, {
        "matches": [{"groundTruthUnit": "g", "outputUnit": None, "matchType": "exact"}],
        "extraInOutput": [], "contradictions": []}],
        {"facts": [{"fact": "g", "verdict": "exact"}]}, throws=True, **similarity)
    yield judged_case("answer_similarity", [{"outputUnits": ["o"], "groundTruthUnits": ["g"]}, {
        "matches": [{"groundTruthUnit": "g", "outputUnit": None, "matchType": "exact", "explanation": "e"}],
        "extraInOutput": [], "contradictions": [{"outputUnit": "o", "groundTruthUnit": "g"}]}],
        {"facts": [{"fact": "g", "verdict": "exact", "reason": "r"}], "contradictions": [{"statement": "o"}]},
        throws=True, **similarity)
    for part in ("intent", "completeness", "appropriateness", "requirement"):
        theirs = alignment_reply(1, 1, 1, 1)
        ours = alignment_answer(1, 1, 1, 1)
        key = {"intent": "intentAlignment", "completeness": "completeness",
               "appropriateness": "responseAppropriateness"}.get(part)
        if key:
            del theirs[key]["reasoning"]
            del ours[part]["reason"]
        else:
            theirs["requirementsFulfillment"]["requirements"] = [{"requirement": "q", "isFulfilled": True}]
            ours["requirements"]["items"] = [{"requirement": "q", "fulfilled": True}]
        yield judged_case("prompt_alignment", [theirs], ours, throws=True, ctx=ctx)
    yield judged_case("summarization", [{"alignment": [{"claim": "c", "supported": True}], "questions": ["q"]},
                                        {"coverage": [{"question": "q", "answered": True, "reason": "r"}]}],
                      {"claims": [{"claim": "c", "verdict": "supported"}],
                       "key_points": [{"point": "q", "covered": True, "reason": "r"}]}, throws=True, ctx=ctx)
    yield judged_case("summarization", [{"alignment": [{"claim": "c", "supported": True, "reason": "r"}],
                                         "questions": ["q"]}, {"coverage": [{"question": "q", "answered": True}]}],
                      {"claims": [{"claim": "c", "verdict": "supported", "reason": "r"}],
                       "key_points": [{"point": "q", "covered": True}]}, throws=True, ctx=ctx)
    calls = {"text": "Booked.", "tool_calls": [{"name": "book", "args": {}, "result": "ok"}]}
    yield judged_case("tool_call_accuracy", [{"evaluations": [{"toolCalled": "book", "wasAppropriate": True}],
                                              "missingTools": []}],
                      {"calls": [{"index": 1, "appropriate": True}], "missing_tools": []}, throws=True, ctx=ctx,
                      out=calls, options={"availableTools": [{"id": "book", "description": "books"}]})
    yield judged_case("rubric", [{"criteria": [{"criterion": "is polite", "satisfied": True, "required": True}],
                                  "overallAssessment": "a"}],
                      {"criteria": [{"index": 1, "satisfied": True}]}, throws=True, ctx=ctx,
                      options={"criteria": "is polite"})
    # with every reason given, the same replies score
    yield judged_case("toxicity", [{"verdicts": [{"verdict": "no", "reason": ""}]}],
                      {"statements": [{"statement": "s", "verdict": "ok", "reason": ""}]}, ctx=ctx)


def judge_index_cases(ctx: Any) -> Iterator[Case]:
    """A context index of null or none: Mastra's `context_index` is a required number."""
    with_context = {"options": {"context": CONTEXT}, "item": {"context": CONTEXT}}
    for index in (None, "absent"):
        first = {"verdict": "no", "reason": "r"} | ({} if index == "absent" else {"context_index": index})
        ours = {"useful": False, "reason": "r"} | ({} if index == "absent" else {"index": index})
        yield judged_case("context_precision", [{"verdicts": [first, {"context_index": 1, "verdict": "yes",
                                                                      "reason": "r"}]}],
                          {"verdicts": [ours, {"index": 2, "useful": True, "reason": "r"}]},
                          throws=True, ctx=ctx, **with_context)
        first = {"contextPiece": "a", "relevanceLevel": "low", "wasUsed": True, "reasoning": "r"}
        if index != "absent":
            first["context_index"] = index
        ours = {"relevance": "low", "used": True, "reason": "r"} | ({} if index == "absent" else {"index": index})
        yield judged_case("context_relevance", [{"evaluations": [first, {
            "context_index": 1, "contextPiece": "b", "relevanceLevel": "high", "wasUsed": True, "reasoning": "r"}],
            "missingContext": [], "overallAssessment": "a"}],
            {"verdicts": [ours, {"index": 2, "relevance": "high", "used": True, "reason": "r"}]},
            throws=True, ctx=ctx, **with_context)


def judge_count_cases(ctx: Any) -> Iterator[Case]:
    """Fewer or more verdicts than things judged, two naming one index, an index naming none: Mastra's
    tool_call_accuracy, rubric, context_precision and context_relevance never match their verdicts to
    the calls, criteria or chunks; each scores the verdicts it is given (none: its empty-list number)."""
    tools = {"availableTools": [{"id": "book", "description": "books"}]}
    two_calls = {"text": "Booked.", "tool_calls": [{"name": "book", "args": {}, "result": "ok"},
                                                    {"name": "search", "args": {}, "result": "ok"}]}
    one_call = {"text": "Booked.", "tool_calls": [{"name": "book", "args": {}, "result": "ok"}]}

    def tool_case(out: Any, verdicts: list[tuple[Any, str, bool]], missing: list[str] | None = None) -> Case:
        # (evalgate's index, Mastra's toolCalled, appropriate); `missing` is left out of both when None
        theirs: dict[str, Any] = {"evaluations": [{"toolCalled": name, "wasAppropriate": ok, "reasoning": "r"}
                                                  for _, name, ok in verdicts]}
        ours: dict[str, Any] = {"calls": [{"index": index, "appropriate": ok, "reason": "r"}
                                          for index, _, ok in verdicts]}
        if missing is not None:
            theirs["missingTools"], ours["missing_tools"] = missing, missing
        return judged_case("tool_call_accuracy", [theirs], ours, ctx=ctx, out=out, options=tools)

    yield tool_case(two_calls, [(1, "book", True)])  # fewer: 1 of 1 given
    yield tool_case(two_calls, [(2, "search", False)])
    yield tool_case(one_call, [(1, "book", True), (2, "search", False), (3, "book", False)])  # more: 1/3
    yield tool_case(two_calls, [(1, "book", True), (1, "book", False), (1, "book", False)])  # one index thrice
    yield tool_case(one_call, [(7, "weather", True), (2.5, "book", False)])  # indexes naming no call
    for value in ([], [{"role": "system", "content": "Be brief."}]):  # no input message: Mastra throws first
        yield judged_case("tool_call_accuracy", [{"evaluations": [{"toolCalled": "book", "wasAppropriate": True,
                                                                   "reasoning": "r"}]}],
                          {"calls": [{"index": 1, "appropriate": True, "reason": "r"}]}, ctx=ctx, out=one_call,
                          options=tools, item={"input": value}, input=value, throws=True)
    yield tool_case(two_calls, [], ["book"])  # none given: 0 with a missing tool, else 1
    yield tool_case(two_calls, [], [])
    yield tool_case("Sure.", [(1, "book", False)])  # no call made, yet a verdict: it is scored
    yield tool_case("Sure.", [(1, "book", True), (2, "search", False)], ["book"])

    # rubric: each verdict's `required` is the one of the criterion its index names (Mastra's reply
    # repeats it); an index naming no criterion has none, and stays an invalid reply (docs)
    criteria = [{"description": "is polite", "required": True}, {"description": "is short", "required": True},
                {"description": "uses emoji", "required": False}]
    rubric = judged.rubric(criteria=criteria, ctx=ctx)

    def rubric_case(verdicts: list[tuple[float, bool]]) -> Case:
        named = [(criteria[int(n) - 1], ok) for n, ok in verdicts]
        theirs = {"criteria": [{"criterion": c["description"], "satisfied": ok, "required": c["required"],
                                "reasoning": "r"} for c, ok in named],
                  "overallAssessment": "a"}
        ours = {"criteria": [{"index": n, "satisfied": ok, "reason": "r"} for n, ok in verdicts]}
        node = {**BASE, "scorer": "rubric", "options": {"criteria": criteria}, "judge": [theirs]}
        return Case("rubric", node, rubric, {"input": BASE["input"]}, BASE["output"], ours)

    yield rubric_case([(1, True)])  # fewer: the unjudged required criterion does not count
    yield rubric_case([(3, False)])  # only an optional one: every verdict given counts
    yield rubric_case([(3, True)])
    yield rubric_case([(3, False), (1, True), (2, True)])  # in another order: by index, not position
    yield rubric_case([(1, True), (2, True), (3, False), (2.0, True)])  # more, a whole float naming one
    yield rubric_case([])  # none: 1, as Mastra scores an empty analysis

    with_context = {"options": {"context": CONTEXT}, "item": {"context": CONTEXT}}

    def precision_case(verdicts: list[tuple[Any, bool]]) -> Case:
        theirs = {"verdicts": [{"context_index": n - 1, "verdict": "yes" if ok else "no", "reason": "r"}
                               for n, ok in verdicts]}
        ours = {"verdicts": [{"index": n, "useful": ok, "reason": "r"} for n, ok in verdicts]}
        return judged_case("context_precision", [theirs], ours, ctx=ctx, **with_context)

    yield precision_case([(1, True)])
    yield precision_case([(2, False), (3, True), (1, False)])
    yield precision_case([])

    def relevance_case(verdicts: list[tuple[Any, str, bool]], missing: list[str]) -> Case:
        theirs = {"evaluations": [{"context_index": n - 1, "contextPiece": "c", "relevanceLevel": level,
                                   "wasUsed": used, "reasoning": "r"} for n, level, used in verdicts],
                  "missingContext": missing, "overallAssessment": "a"}
        ours = {"verdicts": [{"index": n, "relevance": level, "used": used, "reason": "r"}
                             for n, level, used in verdicts], "missing_context": missing}
        return judged_case("context_relevance", [theirs], ours, ctx=ctx, **with_context)

    yield relevance_case([(1, "high", False)], [])
    yield relevance_case([(1, "high", True), (2, "low", True), (3, "none", True), (3, "none", False)], [])
    yield relevance_case([], ["x"])
    yield relevance_case([], [])


def alignment_reply(intent: Any, requirements: Any, completeness: Any, appropriateness: Any) -> dict[str, Any]:
    """Mastra's prompt-alignment analysis with these four scores."""
    return {"intentAlignment": {"score": intent, "primaryIntent": "p", "isAddressed": True, "reasoning": "r"},
            "requirementsFulfillment": {"requirements": [], "overallScore": requirements},
            "completeness": {"score": completeness, "missingElements": [], "reasoning": "r"},
            "responseAppropriateness": {"score": appropriateness, "formatAlignment": True, "toneAlignment": True,
                                        "reasoning": "r"},
            "overallAssessment": "a"}


def alignment_answer(intent: Any, requirements: Any, completeness: Any, appropriateness: Any) -> dict[str, Any]:
    """evalgate's prompt_alignment reply with these four scores."""
    return {"intent": {"score": intent, "reason": "r"}, "requirements": {"items": [], "score": requirements},
            "completeness": {"score": completeness, "missing": [], "reason": "r"},
            "appropriateness": {"score": appropriateness, "reason": "r"}}


def alignment_range_cases(ctx: Any) -> Iterator[Case]:
    """prompt_alignment's component scores are any numbers in Mastra, and nothing clamps the sum."""
    scorer = judged.prompt_alignment(ctx=ctx)
    for parts in ((1.2, 0.5, 0.5, 0.5), (-0.1, 1, 1, 1), (0, 2, 0, 0), (1, 1, 1, 1.04), (0.5, 0.5, -1, 2)):
        yield Case("prompt_alignment", {**BASE, "scorer": "prompt_alignment", "judge": [alignment_reply(*parts)]},
                   scorer, {"input": BASE["input"]}, BASE["output"], alignment_answer(*parts))
    # a sum above 1 or below 0 is Mastra's score; evalgate's scores are in [0, 1]: a scorer error
    for parts in ((1.5, 1.5, 1.5, 1.5), (-0.5, -0.5, -0.5, -0.5), (1, 1, 1, 1.1)):
        yield Case("prompt_alignment", {**BASE, "scorer": "prompt_alignment", "judge": [alignment_reply(*parts)]},
                   scorer, {"input": BASE["input"]}, BASE["output"], alignment_answer(*parts), out_of_range=True)


def cut_off_cases(ctx: Any) -> Iterator[Case]:
    """Replies cut off (finish reason "stop"): Mastra repairs the JSON (closes strings, arrays, objects and
    literals) and validates what it got; it escapes raw newlines in strings and, after prose, takes the
    last whole object."""
    first_theirs = '{"verdict": "yes", "reason": "r"}'
    first_ours = '{"statement": "s", "verdict": "toxic", "reason": "r"}'
    second_theirs, second_ours = '{"verdict": "no", "reason": "r', '{"statement": "s", "verdict": "ok", "reason": "r'
    head_theirs, head_ours = '{"verdicts": [' + first_theirs, '{"statements": [' + first_ours
    pairs = [  # (Mastra's reply, evalgate's, Mastra throws)
        (f"{head_theirs}, {second_theirs}", f"{head_ours}, {second_ours}", False),  # inside the last string
        (f"{head_theirs}, {second_theirs[:-1]}", f"{head_ours}, {second_ours[:-1]}", False),  # an empty string
        (f"{head_theirs}, {second_theirs[:-2]}", f"{head_ours}, {second_ours[:-2]}", True),  # a key, no value
        (f"{head_theirs}, {second_theirs[:-14]}", f"{head_ours}, {second_ours[:-14]}", True),  # no reason
        (f"{head_theirs}, {second_theirs[:6]}", f"{head_ours}, {second_ours[:6]}", True),  # inside a key
        (f"{head_theirs},", f"{head_ours},", False),
        (head_theirs, head_ours, False),
        ('{"verdicts": [', '{"statements": [', False),
        ('{"verd', '{"stat', True),
        ("{", "{", True),
        ("```json\n" + f"{head_theirs}, {second_theirs}", "```json\n" + f"{head_ours}, {second_ours}", False),
        # raw control characters inside a string are escaped
        (head_theirs[:-2] + '\nline\ttwo"}]}', head_ours[:-2] + '\nline\ttwo"}]}', False),
        # prose, then two objects: the last whole one
        (f'Note {{"x": 1}} then {head_theirs}]}} done', f'Note {{"x": 1}} then {head_ours}]}} done', False),
    ]
    for theirs, ours, throws in pairs:
        yield judged_case("toxicity", [theirs], ours, throws=throws, ctx=ctx)
    # a literal and a number cut short: `tr` is read as true, `0.` as 0
    yield judged_case("context_precision", ['{"verdicts": [{"context_index": 0, "verdict": "no", "reason": "r"}, '
                                            '{"context_index": 1, "reason": "r", "verdict": "yes'],
                      '{"verdicts": [{"index": 1, "useful": false, "reason": "r"}, {"index": 2, "reason": "r", '
                      '"useful": tr', ctx=ctx, options={"context": CONTEXT}, item={"context": CONTEXT})
    # NaN and Infinity are no JSON to JSON.parse: the repair drops them, and the index is then missing
    for constant in ("NaN", "Infinity", "-Infinity"):
        theirs = ('{"verdicts": [{"context_index": N, "verdict": "no", "reason": "r"}, '
                  '{"context_index": 1, "verdict": "yes", "reason": "r"}]}').replace("N", constant, 1)
        ours = ('{"verdicts": [{"index": N, "useful": false, "reason": "r"}, '
                '{"index": 2, "useful": true, "reason": "r"}]}').replace("N", constant, 1)
        yield judged_case("context_precision", [theirs], ours, throws=True, ctx=ctx, options={"context": CONTEXT},
                          item={"context": CONTEXT})
    theirs_aligned = alignment_reply(1, 1, 1, 0.5)
    theirs_aligned["responseAppropriateness"] = theirs_aligned.pop("responseAppropriateness")  # last, score last
    theirs_aligned["responseAppropriateness"]["score"] = theirs_aligned["responseAppropriateness"].pop("score")
    ours_aligned = alignment_answer(1, 1, 1, 0.5)
    ours_aligned["appropriateness"] = {"reason": "r", "score": 0.5}
    yield judged_case("prompt_alignment", [json.dumps(theirs_aligned)[:-3]], json.dumps(ours_aligned)[:-3], ctx=ctx)


def judge_text_field_cases(ctx: Any) -> Iterator[Case]:
    """A required field missing, null or a number: Mastra's schemas require every text field (a statement,
    claim, requirement, tool or criterion) and list, and the scorer throws after its one retry; `""` passes."""
    with_context = {"options": {"context": CONTEXT}, "item": {"context": CONTEXT}}
    truth = {"item": {"ground_truth": "It is sunny."}, "ground_truth": "It is sunny."}
    for bad in ("absent", None, 1):
        def ours(fields: dict[str, Any], key: str, value: Any = bad) -> dict[str, Any]:
            return fields if value == "absent" else {key: value, **fields}

        # the statement, claim or opinion: Mastra's extracted strings (and hallucination's `statement`)
        theirs = None if bad == "absent" else bad
        yield judged_case("answer_relevancy", [{"statements": [theirs]},
                                               {"results": [{"result": "yes", "reason": "r"}]}],
                          {"statements": [ours({"verdict": "yes", "reason": "r"}, "statement")]}, throws=True, ctx=ctx)
        yield judged_case("faithfulness", [{"claims": [theirs]}, {"verdicts": [{"verdict": "yes", "reason": "r"}]}],
                          {"claims": [ours({"verdict": "supported", "reason": "r"}, "claim")]}, throws=True, ctx=ctx,
                          **with_context)
        verdict = {"verdict": "no", "reason": "r"} | ({} if bad == "absent" else {"statement": bad})
        yield judged_case("hallucination", [{"claims": ["a"]}, {"verdicts": [verdict]}],
                          {"claims": [ours({"verdict": "supported", "reason": "r"}, "claim")]}, throws=True, ctx=ctx,
                          **with_context)
        yield judged_case("bias", [{"opinions": [theirs]}, {"results": [{"result": "no", "reason": "r"}]}],
                          {"opinions": [ours({"verdict": "unbiased", "reason": "r"}, "opinion")]}, throws=True, ctx=ctx)
        yield judged_case("context_recall", [{"claims": [theirs]}, {"verdicts": [{"verdict": "yes", "reason": "r"}]}],
                          {"sentences": [ours({"attributed": True, "reason": "r"}, "sentence")]}, throws=True, ctx=ctx,
                          options={"context": CONTEXT}, item={"context": CONTEXT, "ground_truth": "It is sunny."},
                          ground_truth="It is sunny.")
        # answer_similarity: the ground-truth unit, a contradiction's output unit
        match = {"outputUnit": None, "matchType": "exact", "explanation": "e"}
        yield judged_case("answer_similarity", [{"outputUnits": ["o"], "groundTruthUnits": ["g"]}, {
            "matches": [match | ({} if bad == "absent" else {"groundTruthUnit": bad})], "extraInOutput": [],
            "contradictions": []}],
            {"facts": [ours({"verdict": "exact", "reason": "r"}, "fact")], "contradictions": [], "extra": []},
            throws=True, ctx=ctx, **truth)
        contradiction = {"groundTruthUnit": "g", "explanation": "e"} | ({} if bad == "absent" else {"outputUnit": bad})
        yield judged_case("answer_similarity", [{"outputUnits": ["o"], "groundTruthUnits": ["g"]}, {
            "matches": [{"groundTruthUnit": "g", **match}], "extraInOutput": [], "contradictions": [contradiction]}],
            {"facts": [{"fact": "g", "verdict": "exact", "reason": "r"}],
             "contradictions": [ours({"reason": "r"}, "statement")], "extra": []}, throws=True, ctx=ctx, **truth)
        # prompt_alignment: a requirement's text
        aligned, answer = alignment_reply(1, 1, 1, 1), alignment_answer(1, 1, 1, 1)
        aligned["requirementsFulfillment"]["requirements"] = [
            {"isFulfilled": True, "reasoning": "r"} | ({} if bad == "absent" else {"requirement": bad})]
        answer["requirements"]["items"] = [ours({"fulfilled": True, "reason": "r"}, "requirement")]
        yield judged_case("prompt_alignment", [aligned], answer, throws=True, ctx=ctx)
        # summarization: a claim, a key point (Mastra's question)
        claim = {"supported": True, "reason": "r"} | ({} if bad == "absent" else {"claim": bad})
        yield judged_case("summarization", [{"alignment": [claim], "questions": ["q"]},
                                            {"coverage": [{"question": "q", "answered": True, "reason": "r"}]}],
                          {"claims": [ours({"verdict": "supported", "reason": "r"}, "claim")],
                           "key_points": [{"point": "q", "covered": True, "reason": "r"}]}, throws=True, ctx=ctx)
        yield judged_case("summarization", [{"alignment": [{"claim": "c", "supported": True, "reason": "r"}],
                                             "questions": [theirs]},
                                            {"coverage": [{"answered": True, "reason": "r"}
                                                          | ({} if bad == "absent" else {"question": bad})]}],
                          {"claims": [{"claim": "c", "verdict": "supported", "reason": "r"}],
                           "key_points": [ours({"covered": True, "reason": "r"}, "point")]}, throws=True, ctx=ctx)
        # tool_call_accuracy's `toolCalled` and rubric's `criterion`: evalgate's judge names them by index
        calls = {"text": "Booked.", "tool_calls": [{"name": "book", "args": {}, "result": "ok"}]}
        index = "absent" if bad == "absent" else None
        yield judged_case("tool_call_accuracy", [{"evaluations": [{"wasAppropriate": True, "reasoning": "r"}
                                                                  | ({} if bad == "absent" else {"toolCalled": bad})],
                                                  "missingTools": []}],
                          {"calls": [ours({"appropriate": True, "reason": "r"}, "index", index)], "missing_tools": []},
                          throws=True, ctx=ctx, out=calls,
                          options={"availableTools": [{"id": "book", "description": "books"}]})
        yield judged_case("rubric", [{"criteria": [{"satisfied": True, "required": True, "reasoning": "r"}
                                                   | ({} if bad == "absent" else {"criterion": bad})],
                                      "overallAssessment": "a"}],
                          {"criteria": [ours({"satisfied": True, "reason": "r"}, "index", index)]}, throws=True,
                          ctx=ctx, options={"criteria": "is polite"})
    # the lists Mastra requires: answer_similarity's extras and contradictions, prompt_alignment's
    # requirements and missing elements
    for key, ours_key in (("extraInOutput", "extra"), ("contradictions", "contradictions")):
        reply = {"matches": [{"groundTruthUnit": "g", "outputUnit": None, "matchType": "exact", "explanation": "e"}],
                 "extraInOutput": [], "contradictions": []}
        answer = {"facts": [{"fact": "g", "verdict": "exact", "reason": "r"}], "contradictions": [], "extra": []}
        del reply[key], answer[ours_key]
        yield judged_case("answer_similarity", [{"outputUnits": ["o"], "groundTruthUnits": ["g"]}, reply], answer,
                          throws=True, ctx=ctx, **truth)
    aligned, answer = alignment_reply(1, 1, 1, 1), alignment_answer(1, 1, 1, 1)
    del aligned["requirementsFulfillment"]["requirements"], answer["requirements"]["items"]
    yield judged_case("prompt_alignment", [aligned], answer, throws=True, ctx=ctx)
    aligned, answer = alignment_reply(1, 1, 1, 1), alignment_answer(1, 1, 1, 1)
    del aligned["completeness"]["missingElements"], answer["completeness"]["missing"]
    yield judged_case("prompt_alignment", [aligned], answer, throws=True, ctx=ctx)
    # an empty string is a string: these score
    yield judged_case("hallucination", [{"claims": [""]}, {"verdicts": [{"statement": "", "verdict": "yes",
                                                                          "reason": "r"}]}],
                      {"claims": [{"claim": "", "verdict": "contradicted", "reason": "r"}]}, ctx=ctx, **with_context)
    yield judged_case("answer_relevancy", [{"statements": ["", "b"]}, {"results": [
        {"result": "yes", "reason": "r"}, {"result": "no", "reason": "r"}]}],
        {"statements": [{"statement": "", "verdict": "yes", "reason": "r"},
                        {"statement": "b", "verdict": "no", "reason": "r"}]}, ctx=ctx)
    yield judged_case("rubric", [{"criteria": [{"criterion": "", "satisfied": False, "required": True,
                                                "reasoning": "r"}], "overallAssessment": ""}],
                      {"criteria": [{"index": 1, "satisfied": False, "reason": "r"}]}, ctx=ctx,
                      options={"criteria": "is polite"})
    # optional in Mastra, optional here: toxicity has no statement, context_relevance's missing context
    # defaults to none, tool_call_accuracy's missing tools may be left out
    yield judged_case("toxicity", [{"verdicts": [{"verdict": "yes", "reason": "r"}, {"verdict": "no", "reason": "r"}]}],
                      {"statements": [{"verdict": "toxic", "reason": "r"}, {"verdict": "ok", "reason": "r"}]}, ctx=ctx)
    yield judged_case("context_relevance", [{"evaluations": [
        {"context_index": i, "contextPiece": c, "relevanceLevel": "high", "wasUsed": True, "reasoning": "r"}
        for i, c in enumerate(CONTEXT)], "overallAssessment": "a"}],
        {"verdicts": [{"index": i, "relevance": "high", "used": True, "reason": "r"} for i in (1, 2)]},
        ctx=ctx, **with_context)
    calls = {"text": "Booked.", "tool_calls": [{"name": "book", "args": {}, "result": "ok"}]}
    yield judged_case("tool_call_accuracy", [{"evaluations": [{"toolCalled": "book", "wasAppropriate": False,
                                                               "reasoning": "r"}]}],
                      {"calls": [{"index": 1, "appropriate": False, "reason": "r"}]}, ctx=ctx, out=calls,
                      options={"availableTools": [{"id": "book", "description": "books"}]})


def judge_proto_cases(ctx: Any) -> Iterator[Case]:
    """`__proto__` keys: the AI SDK parses replies with secure-json-parse, which rejects any object with an
    own `__proto__` key, or a `constructor` object with a `prototype` key, anywhere in the reply. The
    reply is then no object: one retry, then the scorer throws. A cut-off key the repair drops is no key."""
    verdicts = '[{"verdict": "yes", "reason": "r"}, {"verdict": "no", "reason": "r"}]'
    statements = ('[{"statement": "s", "verdict": "toxic", "reason": "r"}, '
                  '{"statement": "s", "verdict": "ok", "reason": "r"}]')
    pairs = [  # (Mastra's reply, evalgate's, Mastra throws)
        (f'{{"__proto__": {{"x": 1}}, "verdicts": {verdicts}}}',
         f'{{"__proto__": {{"x": 1}}, "statements": {statements}}}', True),
        (f'{{"__proto__": {{"verdicts": {verdicts}}}}}', f'{{"__proto__": {{"statements": {statements}}}}}', True),
        ('{"verdicts": [{"__proto__": {"verdict": "yes"}, "reason": "r"}]}',
         '{"statements": [{"statement": "s", "__proto__": {"verdict": "toxic"}, "reason": "r"}]}', True),
        ('{"verdicts": [{"__proto__": null, "verdict": "yes", "reason": "r"}]}',
         '{"statements": [{"statement": "s", "__proto__": null, "verdict": "toxic", "reason": "r"}]}', True),
        ('{"verdicts": [{"\\u005f_proto__": 5, "verdict": "yes", "reason": "r"}]}',
         '{"statements": [{"statement": "s", "\\u005f_proto__": 5, "verdict": "toxic", "reason": "r"}]}', True),
        (f'{{"constructor": {{"prototype": 1}}, "verdicts": {verdicts}}}',
         f'{{"constructor": {{"prototype": 1}}, "statements": {statements}}}', True),
        # a `constructor` that is no object with a `prototype` key, and `__proto__` as a value, are fine
        (f'{{"constructor": {{"x": 1}}, "verdicts": {verdicts}}}',
         f'{{"constructor": {{"x": 1}}, "statements": {statements}}}', False),
        (f'{{"constructor": "c", "x": "__proto__", "verdicts": {verdicts}}}',
         f'{{"constructor": "c", "x": "__proto__", "statements": {statements}}}', False),
        # cut off after the key: the repair drops it, and what is left scores
        (f'{{"verdicts": {verdicts}, "__proto__"', f'{{"statements": {statements}, "__proto__"', False),
        # after prose: the last whole object is read the same way
        (f'Here: {{"__proto__": 1, "verdicts": {verdicts}}}', f'Here: {{"__proto__": 1, "statements": {statements}}}',
         True),
    ]
    for theirs, ours, throws in pairs:
        yield judged_case("toxicity", [theirs], ours, throws=throws, ctx=ctx)
    yield judged_case("context_precision", ['{"verdicts": [{"context_index": 0, "verdict": "yes", "reason": "r", '
                                            '"__proto__": {}}, {"context_index": 1, "verdict": "no", "reason": "r"}]}'],
                      '{"verdicts": [{"index": 1, "useful": true, "reason": "r", "__proto__": {}}, '
                      '{"index": 2, "useful": false, "reason": "r"}]}', throws=True, ctx=ctx,
                      options={"context": CONTEXT}, item={"context": CONTEXT})


def judge_fence_cases(ctx: Any) -> Iterator[Case]:
    """Fences and arrays: Mastra unwraps only a ```json fence; any other text not starting with `{` or `[`
    is read as its last whole top-level object, so a ``` fence around an array gives the array's last
    object, and an array at the top level (fenced as json or not) is no object."""
    first_theirs, second_theirs = '{"verdict": "yes", "reason": "r"}', '{"verdict": "no", "reason": "r"}'
    first_ours = '{"statement": "s", "verdict": "toxic", "reason": "r"}'
    second_ours = '{"statement": "s", "verdict": "ok", "reason": "r"}'
    whole_theirs = f'{{"verdicts": [{first_theirs}, {second_theirs}]}}'
    whole_ours = f'{{"statements": [{first_ours}, {second_ours}]}}'
    only_theirs, only_ours = f'{{"verdicts": [{second_theirs}]}}', f'{{"statements": [{second_ours}]}}'
    pairs = [  # (Mastra's reply, evalgate's, Mastra throws)
        (f"```\n{whole_theirs}\n```", f"```\n{whole_ours}\n```", False),
        (f"```\n[{whole_theirs}]\n```", f"```\n[{whole_ours}]\n```", False),
        (f"```\n[{whole_theirs}, {only_theirs}]\n```", f"```\n[{whole_ours}, {only_ours}]\n```", False),
        (f"```JSON\n[{only_theirs}, {whole_theirs}]\n```", f"```JSON\n[{only_ours}, {whole_ours}]\n```", False),
        (f"```text\n{only_theirs}\n{whole_theirs}\n```", f"```text\n{only_ours}\n{whole_ours}\n```", False),
        (f"```\n[{first_theirs}, {second_theirs}]\n```", f"```\n[{first_ours}, {second_ours}]\n```", True),
        (f"[{whole_theirs}]", f"[{whole_ours}]", True),
        (f"```json\n[{whole_theirs}]\n```", f"```json\n[{whole_ours}]\n```", True),
        (f" \n[{whole_theirs}]\n", f" \n[{whole_ours}]\n", True),
        ("```\n[]\n```", "```\n[]\n```", True),
    ]
    # JSON.parse skips only JSON's whitespace: after a no-break space, a line separator or a vertical tab the
    # text starts with `{` to trim() (no object is extracted) but is no JSON, and the repair keeps the prefix;
    # after a control character trim() keeps, the object is extracted and scores
    for prefix, throws in (("\u00a0", True), ("\u2028", True), ("\v", True), ("\ufeff", True), ("\x1c", False),
                           (" \r\n\t", False)):
        pairs.append((prefix + whole_theirs, prefix + whole_ours, throws))
    # valid JSON is preprocessed too: a `<|message|>` inside a string cuts the reply there
    for after in ("", '{\\"verdicts\\": []}'):
        theirs = f'{{"verdicts": [{{"verdict": "no", "reason": "<|message|>{after}"}}]}}'
        ours = f'{{"statements": [{{"statement": "s", "verdict": "ok", "reason": "<|message|>{after}"}}]}}'
        pairs.append((theirs, ours, True))
    pairs.append((f'{{"note": "<|message|>", "x": {only_theirs}, "verdicts": {whole_theirs[13:-1]}}}',
                  f'{{"note": "<|message|>", "x": {only_ours}, "statements": {whole_ours[15:-1]}}}', True))
    for theirs, ours, throws in pairs:
        yield judged_case("toxicity", [theirs], ours, throws=throws, ctx=ctx)


# Texts with nothing to read: JavaScript's trim() removes the first seven, not U+200B or U+001C-U+001F
# (which Python's str.strip() removes); Mastra's scorers never look at either, they ask the judge
BLANKS = {"no text": "", "spaces": "   ", "a newline": "\n", "a tab": "\t", "a no-break space": "\u00a0",
          "an ideographic space": "\u3000", "a BOM": "\ufeff", "a zero-width space": "\u200b", "U+001C": "\x1c",
          "U+001F in spaces": " \x1f\n"}


def blank_text_cases(ctx: Any) -> Iterator[Case]:
    """An empty or whitespace-only output, input or ground truth: Mastra's LLM scorers ask the judge on it
    and score its reply (the replies here find statements, claims and opinions in it), except where they
    test it: prompt_alignment throws on an empty output or input, answer_similarity on an empty ground
    truth, context_recall scores one 0. evalgate must ask and score alike."""
    with_context = {"options": {"context": CONTEXT}, "item": {"context": CONTEXT}}
    truth = {"item": {"ground_truth": "It is sunny."}, "ground_truth": "It is sunny."}
    two = [("a", "yes"), ("b", "no")]  # (statement, Mastra's verdict): half of them counted
    replies: dict[str, tuple[list[Any], Any, dict[str, Any]]] = {  # scorer: (Mastra's steps, evalgate's, case)
        "answer_relevancy": ([{"statements": ["a", "b"]}, {"results": [{"result": v, "reason": "r"} for _, v in two]}],
                             {"statements": [{"statement": s, "verdict": v, "reason": "r"} for s, v in two]}, {}),
        "faithfulness": ([{"claims": ["a", "b"]}, {"verdicts": [{"verdict": v, "reason": "r"} for _, v in two]}],
                         {"claims": [{"claim": "a", "verdict": "supported", "reason": "r"},
                                     {"claim": "b", "verdict": "contradicted", "reason": "r"}]}, with_context),
        "hallucination": ([{"claims": ["a", "b"]}, {"verdicts": [{"statement": s, "verdict": v, "reason": "r"}
                                                                 for s, v in two]}],
                          {"claims": [{"claim": "a", "verdict": "contradicted", "reason": "r"},
                                      {"claim": "b", "verdict": "supported", "reason": "r"}]}, with_context),
        "toxicity": ([{"verdicts": [{"verdict": v, "reason": "r"} for _, v in two]}],
                     {"statements": [{"statement": "a", "verdict": "toxic", "reason": "r"},
                                     {"statement": "b", "verdict": "ok", "reason": "r"}]}, {}),
        "bias": ([{"opinions": ["a", "b"]}, {"results": [{"result": v, "reason": "r"} for _, v in two]}],
                 {"opinions": [{"opinion": "a", "verdict": "biased", "reason": "r"},
                               {"opinion": "b", "verdict": "unbiased", "reason": "r"}]}, {}),
        "summarization": ([{"alignment": [{"claim": "a", "supported": True, "reason": "r"},
                                          {"claim": "b", "supported": False, "reason": "r"}], "questions": ["q"]},
                           {"coverage": [{"question": "q", "answered": True, "reason": "r"}]}],
                          {"claims": [{"claim": "a", "verdict": "supported", "reason": "r"},
                                      {"claim": "b", "verdict": "unsupported", "reason": "r"}],
                           "key_points": [{"point": "q", "covered": True, "reason": "r"}]}, {}),
        "prompt_alignment": ([alignment_reply(0.5, 0.5, 0.5, 0.5)], alignment_answer(0.5, 0.5, 0.5, 0.5), {}),
        # these read the output or input without testing it: here so that they keep not testing it
        "context_precision": ([{"verdicts": [{"context_index": 0, "verdict": "no", "reason": "r"},
                                             {"context_index": 1, "verdict": "yes", "reason": "r"}]}],
                              {"verdicts": [{"index": 1, "useful": False, "reason": "r"},
                                            {"index": 2, "useful": True, "reason": "r"}]}, with_context),
        "context_relevance": ([{"evaluations": [{"context_index": 0, "contextPiece": "a", "relevanceLevel": "medium",
                                                 "wasUsed": True, "reasoning": "r"}],
                                "missingContext": [], "overallAssessment": "a"}],
                              {"verdicts": [{"index": 1, "relevance": "medium", "used": True, "reason": "r"}]},
                              with_context),
        "answer_similarity": ([{"outputUnits": ["o"], "groundTruthUnits": ["g"]},
                               {"matches": [{"groundTruthUnit": "g", "outputUnit": None, "matchType": "semantic",
                                             "explanation": "e"}], "extraInOutput": [], "contradictions": []}],
                              {"facts": [{"fact": "g", "verdict": "semantic", "reason": "r"}], "contradictions": [],
                               "extra": []}, truth),
        "context_recall": ([{"claims": ["a", "b"]}, {"verdicts": [{"verdict": v, "reason": "r"} for _, v in two]}],
                           {"sentences": [{"sentence": "a", "attributed": True, "reason": "r"},
                                          {"sentence": "b", "attributed": False, "reason": "r"}]},
                           {"options": {"context": CONTEXT}, "item": {"context": CONTEXT, **truth["item"]},
                            "ground_truth": truth["ground_truth"]}),
        "tool_call_accuracy": ([{"evaluations": [{"toolCalled": "book", "wasAppropriate": False, "reasoning": "r"}],
                                 "missingTools": []}], {"calls": [{"index": 1, "appropriate": False, "reason": "r"}]},
                               {"options": {"availableTools": [{"id": "book", "description": "books"}]}}),
        "rubric": ([{"criteria": [{"criterion": "is polite", "satisfied": False, "required": True, "reasoning": "r"}],
                     "overallAssessment": "a"}], {"criteria": [{"index": 1, "satisfied": False, "reason": "r"}]},
                   {"options": {"criteria": "is polite"}}),
    }
    checked = ("answer_relevancy", "faithfulness", "hallucination", "toxicity", "bias", "summarization",
               "prompt_alignment")
    few = {label: BLANKS[label] for label in ("no text", "an ideographic space", "U+001C")}

    def case(scorer: str, label: str, rejects: bool = False, texts: list[str] | None = None, **node: Any) -> Case:
        theirs, ours, extra = replies[scorer]
        merged = {**extra, **node, "item": {**extra.get("item", {}), **node.get("item", {})}}
        made = judged_case(scorer, theirs, ours, ctx=ctx, **merged)
        if texts is not None:  # several replies: the harness' `text` list, evalgate's `texts`
            made.node["output"], made.run = {"text": texts}, run_from_value({"texts": texts})
        made.label, made.mastra_rejects = f"{scorer}: {label}", rejects
        return made

    # the output: an assistant message with that text, or no message at all (on which tool_call_accuracy throws)
    for scorer in replies:
        blanks = BLANKS if scorer in checked else few
        for label, blank in [*blanks.items(), ("no messages", None)]:
            out = {"messages": []} if blank is None else blank
            made = case(scorer, f"output {label}", scorer == "prompt_alignment" and not blank, out=out)
            made.mastra_throws = scorer == "tool_call_accuracy" and blank is None
            yield made
    # no context and no tool results: faithfulness judges the output against an empty context
    yield case("faithfulness", "no evidence", options={}, item={"context": None})
    # summarization judges the last reply that is not blank to trim(), else the last one with text
    for label, blank in BLANKS.items():
        yield case("summarization", f"a reply, then {label}", texts=["It is sunny.", blank])
    yield case("summarization", "two blank replies", texts=["\u3000", " \n"])
    # the input: a user message with that text, or no input
    for scorer in ("answer_relevancy", "prompt_alignment", "toxicity", "summarization"):
        for label, blank in [*BLANKS.items(), ("no input", None)]:
            made = case(scorer, f"input {label}", scorer == "prompt_alignment" and not blank,
                        item={"input": blank}, input=blank)
            if blank is None:
                del made.node["input"]
            yield made
    # the ground truth (context_recall scores an empty one 0; answer_similarity rejects it)
    for scorer in ("context_recall", "answer_similarity"):
        for label, blank in BLANKS.items():
            yield case(scorer, f"ground truth {label}", scorer == "answer_similarity" and not blank,
                       item={"ground_truth": blank}, ground_truth=blank)


def summary_message_cases(ctx: Any) -> Iterator[Case]:
    """Mastra's summarization on raw messages (getSummary). For an agent's output (every message with a string
    `id`, `content` and `createdAt`: isScorerRunOutputForAgent) it reads every assistant message's text
    (getTextContentFromMastraDBMessage) and judges the last that trim() leaves something of, else the output as
    its other LLM scorers read it; it throws where that reader throws (a null part it reads, a null in a content
    list) and where any assistant message's text is no string (`5`, `true`, `{}`, `[]`: `response.trim is not
    a function`; `0`, `false`, `null` read as ""). Any other list is read as the other LLM scorers read it, and
    never throws. The summary each side shows its judge: test_summarization_judges_the_summary_mastra_picks."""
    sunny = {"type": "text", "text": "It is sunny."}

    def db(content: Any, role: str = "assistant", **extra: Any) -> dict[str, Any]:
        return {k: v for k, v in _db_message(content, role, **extra).items() if v is not ...}  # ...: no such key

    def parts(*values: Any, **content: Any) -> dict[str, Any]:
        return {"format": 2, "parts": [{"type": "text", "text": v} for v in values], **content}

    signal = {"format": 2, "parts": [{"type": "text", "text": "A signal."}],
              "metadata": {"signal": {"type": "assistant"}}}
    throwing: list[tuple[str, list[dict[str, Any]]]] = [
        ("a null part", [db({"format": 2, "parts": [None, sunny]})]),
        ("a null part in an earlier message", [db({"format": 2, "parts": [None]}), db("It is sunny.")]),
        ("a null in a content list", [db([None, sunny])]),
        ("the number 5", [db(parts(5))]),
        ("the number 1e21", [db(parts(1e21))]),
        ("true", [db(parts(True))]),
        ("an object", [db(parts({"a": 1}))]),
        ("an empty list", [db(parts([]))]),
        ("a list", [db(parts([1, "sunny"]))]),
        ("an object with toString", [db(parts({"toString": "x"}))]),
        ("a number after the text part", [db(parts("It is sunny.", 5))]),
        ("a number in an earlier message", [db(parts(5)), db("It is sunny.")]),
        ("an object in an earlier message, the last blank", [db(parts({})), db("It is sunny."), db(" ")]),
        ("a number in a later message", [db("It is sunny."), db(parts(5))]),
        ("a number next to an empty content.content", [db(parts(5, content=""))]),
        ("a number in a content list", [db([{"type": "text", "text": 5}])]),
        ("a number, createdAt null", [db(parts(5), createdAt=None)]),
    ]
    scoring: list[tuple[str, list[dict[str, Any]]]] = [
        ("zero", [db(parts(0))]),
        ("false", [db(parts(False))]),
        ("null", [db(parts(None))]),
        ("an empty text", [db(parts(""))]),
        ("zero in a later message", [db("It is sunny."), db(parts(0))]),
        ("a number before the text part", [db(parts(5, "It is sunny."))]),
        ("a number next to content.content", [db(parts(5, content="It is sunny."))]),
        ("a null part next to content.content", [db({"format": 2, "content": "It is sunny.", "parts": [None]})]),
        ("a null part next to content.text", [db({"format": 2, "text": "It is sunny.", "parts": [None]})]),
        ("content.content a number", [db(parts("It is sunny.", content=7))]),
        ("a string content", [db("It is sunny.")]),
        ("a user message's number", [db(parts(5), "user"), db("It is sunny.")]),
        ("a user message's null part", [db({"format": 2, "parts": [None]}, "user"), db("It is sunny.")]),
        ("a system message's number", [db(parts(5), "system"), db("It is sunny.")]),
        ("a tool message's number", [db(parts(5), "tool"), db("It is sunny.")]),
        ("a signal message's number", [db(parts(5, metadata={"signal": {"type": "assistant"}}), "signal"),
                                       db("It is sunny.")]),
        ("a user message last", [db("It is sunny."), db("Thanks.", "user")]),
        ("content.parts an object", [db({"format": 2, "parts": {"0": sunny}})]),
        ("content.parts a string", [db({"format": 2, "parts": "It is sunny."})]),
        ("content.parts a number", [db({"format": 2, "parts": 5})]),
        ("content.parts an object, then a reply", [db({"format": 2, "parts": {"a": 1}}), db(parts("It is sunny."))]),
        ("content null", [db(None)]),
        ("content a number", [db(5)]),
        ("the last reply blank", [db("First."), db(parts("It is sunny.")), db(" \n")]),
        ("two blank replies", [db("\u3000"), db(" ")]),
        ("a signal message last", [db("It is sunny."), db(signal, "signal")]),
        ("a signal message after a blank reply", [db(" "), db(signal, "signal")]),
        ("only content.body", [db({"format": 2, "parts": [], "body": "It is sunny."})]),
        ("no messages", []),
        # no agent's output: read as the other LLM scorers read it
        ("no id: a number", [db(parts(5), id=...)]),
        ("no id: a null part", [db({"format": 2, "parts": [None, sunny]}, id=...)]),
        ("no id: an object before a reply", [db(parts({}), id=...), db("It is sunny.", id=...)]),
        ("no id: the last reply blank", [db("It is sunny.", id=...), db(" ", id=...)]),
        ("one message without id: the last reply blank", [db("It is sunny."), db(" ", id=...)]),
        ("a number id: a number", [db(parts(5), id=5)]),
        ("no createdAt: a number", [db(parts(5), createdAt=...)]),
        ("no content: a number", [db(parts(5)), {"id": "m2", "role": "assistant", "createdAt": 0}]),
        ("no content, after a reply", [db("It is sunny."), {"id": "m2", "role": "assistant", "createdAt": 0}]),
        ("no id: a number after the text part", [db(parts("It is sunny.", 5), id=...)]),
        ("no id: a signal message last", [db("It is sunny.", id=...), db(signal, "signal", id=...)]),
    ]
    judge = [{"alignment": [{"claim": "a", "supported": True, "reason": "r"},
                            {"claim": "b", "supported": False, "reason": "r"}], "questions": ["q"]},
             {"coverage": [{"question": "q", "answered": True, "reason": "r"}]}]
    answer = {"claims": [{"claim": "a", "verdict": "supported", "reason": "r"},
                         {"claim": "b", "verdict": "unsupported", "reason": "r"}],
              "key_points": [{"point": "q", "covered": True, "reason": "r"}]}
    for throws, group in ((True, throwing), (False, scoring)):
        for label, messages in group:
            case = judged_case("summarization", judge, answer, throws=throws, ctx=ctx, out={"messages": messages},
                               prompts=True)
            case.label = f"summarization: {label}"
            yield case


def absent_value_cases(ctx: Any) -> Iterator[Case]:
    """An item without context reaches Mastra's context scorers as a contextExtractor that finds none:
    context_recall judges its ground truth against nothing and scores the verdicts, context_relevance
    scores 1, context_precision throws. An empty list of available tools is judged against. A ground
    truth JavaScript reads as false (0, false) is none:
    answer_similarity throws, context_recall scores 0; the string "0" is a ground truth."""
    claims = ([{"claims": ["a", "b"]}, {"verdicts": [{"verdict": "yes", "reason": "r"},
                                                     {"verdict": "no", "reason": "r"}]}],
              {"sentences": [{"sentence": "a", "attributed": True, "reason": "r"},
                             {"sentence": "b", "attributed": False, "reason": "r"}]})
    truth = "It is sunny."
    no_context = {"noContext": True}
    yield judged_case("context_recall", *claims, options=no_context, item={"ground_truth": truth},
                      ground_truth=truth, ctx=ctx)
    yield judged_case("context_relevance", [{"evaluations": [], "missingContext": ["m"], "overallAssessment": "a"}],
                      {"verdicts": [], "missing_context": ["m"]}, options=no_context, ctx=ctx)
    precision = judged_case("context_precision", [{"verdicts": []}], {"verdicts": []}, options=no_context, ctx=ctx)
    precision.mastra_rejects = True
    yield precision
    similar = ([{"outputUnits": ["o"], "groundTruthUnits": ["g"]},
                {"matches": [{"groundTruthUnit": "g", "outputUnit": "o", "matchType": "exact", "explanation": "e"}],
                 "extraInOutput": [], "contradictions": []}],
               {"facts": [{"fact": "g", "verdict": "exact", "reason": "r"}], "contradictions": [], "extra": []})
    # an empty list of available tools: Mastra's tool_call_accuracy judges the calls against none
    # (it cannot be made with no list at all: evalgate's not scorable)
    tools = [{"toolCalled": "book", "wasAppropriate": False, "reasoning": "r"},
             {"toolCalled": "book", "wasAppropriate": True, "reasoning": "r"}]
    out = {"text": "Booked.", "tool_calls": [{"name": "book", "args": {}}]}
    for given, scorer in (("tools: []", judged.tool_call_accuracy(tools=[], ctx=ctx)),
                          ("metadata.tools: []", judged.tool_call_accuracy(ctx=ctx))):
        yield Case(f"tool_call_accuracy: {given}", {**BASE, "output": out, "scorer": "tool_call_accuracy",
                                          "options": {"availableTools": []},
                                          "judge": [{"evaluations": tools, "missingTools": []}]},
                   scorer, {"input": BASE["input"], "metadata": {"tools": []}}, out,
                   {"calls": [{"index": 1, "appropriate": False, "reason": "r"},
                              {"index": 2, "appropriate": True, "reason": "r"}]})
    # no output message at all: both tool-call accuracy scorers throw (`run.output.length === 0`)
    for messages in ([], [{"role": "user", "content": "Booked."}]):
        out = {"messages": messages}
        yield Case("tool_call_accuracy_code", {**BASE, "output": out, "scorer": "tool_call_accuracy_code",
                                               "options": {"expectedTool": "book"}},
                   code.tool_call_accuracy_code(expected_tool="book"), {"input": BASE["input"]}, out,
                   mastra_throws=not messages)
    for value in (0, False, 0.0, "0", "false", 7, True, [], {}):
        falsy = value in (0, False)  # 0.0 too
        made = judged_case("answer_similarity", *similar, item={"ground_truth": value}, ground_truth=value, ctx=ctx)
        made.label, made.mastra_rejects = f"answer_similarity: ground truth {value!r}", falsy
        yield made
        made = judged_case("context_recall", *claims, options={"context": CONTEXT},
                           item={"ground_truth": value, "context": CONTEXT}, ground_truth=value, ctx=ctx)
        made.label = f"context_recall: ground truth {value!r}"
        yield made


def rubric_line_cases(ctx: Any) -> Iterator[Case]:
    """A string rubric is split as Mastra splits it: lines, a list marker (`^\\s*(?:[-*•]|\\d+[.)])\\s*`) and
    trim() by JavaScript's whitespace, so a line of only U+001C or U+0085 is a criterion (Python's strip()
    would drop it) and one of only U+FEFF is none. The judge's verdicts name the criteria Mastra lists."""
    lines: list[tuple[str, list[tuple[str, bool]]]] = [  # (rubric, Mastra's criteria and the verdicts on them)
        ("\x1c", [("\x1c", False)]),
        ("is polite\n\x1c", [("is polite", True), ("\x1c", False)]),
        ("\x85\n- is polite", [("\x85", False), ("is polite", True)]),
        ("\x1f- is polite\n\ufeff", [("\x1f- is polite", True)]),
        ("\ufeff- is polite\n\u3000 2) is short", [("is polite", True), ("is short", False)]),
        ("\u0663. is polite\n\x1c* is short", [("\u0663. is polite", True), ("\x1c* is short", True)]),
    ]
    for rubric, verdicts in lines:
        theirs = {"criteria": [{"criterion": c, "satisfied": ok, "required": True, "reasoning": "r"}
                               for c, ok in verdicts], "overallAssessment": "a"}
        ours = {"criteria": [{"index": n, "satisfied": ok, "reason": "r"} for n, (_, ok) in enumerate(verdicts, 1)]}
        node = {**BASE, "scorer": "rubric", "options": {"criteria": rubric}, "judge": [theirs]}
        yield Case("rubric", node, judged.rubric(criterion=rubric, ctx=ctx), {"input": BASE["input"]}, BASE["output"],
                   ours)


def pick(rng: random.Random, values: list[str], most: int = 6) -> list[str]:
    return rng.choices(values, k=rng.randint(0, most))


def cased(rng: random.Random, word: str) -> str:
    return rng.choice([word, word.upper(), f" {word.title()} "])


def reasoned(answer: Any) -> Any:
    """`answer` with a reason in every verdict and prompt_alignment component that has none."""
    if isinstance(answer, list):
        return [reasoned(a) for a in answer]
    if not isinstance(answer, dict):
        return answer
    out = {k: reasoned(v) for k, v in answer.items()}
    verdict = any(k in out for k in ("verdict", "useful", "relevance", "attributed", "covered", "fulfilled",
                                     "appropriate", "satisfied", "statement"))
    if (verdict or (set(out) <= {"score", "missing"} and "score" in out)) and "reason" not in out:
        out["reason"] = "r"
    return out


def judged_cases(rng: random.Random, ctx: Any, per_scorer: int) -> Iterator[Case]:
    for case in random_judged_cases(rng, ctx, per_scorer):
        case.answer = reasoned(case.answer)
        yield case


def random_judged_cases(rng: random.Random, ctx: Any, per_scorer: int) -> Iterator[Case]:
    scorers = {name: getattr(judged, name)(ctx=ctx) for name in (
        "answer_relevancy", "answer_similarity", "faithfulness", "hallucination", "toxicity", "bias",
        "context_precision", "context_relevance", "context_recall", "prompt_alignment", "summarization")}
    for _ in range(per_scorer):
        question = text(rng) or "Weather?"
        theirs, ours = output(rng)
        last = [t for t in (ours.get("texts") or [ours.get("text")]) if t]
        empty_output = not last
        base = {"input": question, "output": theirs}
        item: dict[str, Any] = {"input": question}
        context = [text(rng, 5) or "chunk" for _ in range(rng.randint(0, 3))]
        if context:
            item["context"] = context

        # answer_relevancy (Mastra's judge is told that statements answering an empty input are "no")
        verdicts = [] if empty_output else pick(rng, ["yes", "no", "unsure"])
        if not question.strip():
            verdicts = ["no" for _ in verdicts]
        yield Case("answer_relevancy", {**base, "scorer": "answer_relevancy", "judge": [
            {"statements": [f"s{i}" for i in range(len(verdicts))]},
            {"results": [{"result": cased(rng, v), "reason": "r"} for v in verdicts]}]},
            scorers["answer_relevancy"], item, ours,
            {"statements": [{"statement": f"s{i}", "verdict": v} for i, v in enumerate(verdicts)]})

        # answer_similarity (Mastra rejects a run without ground truth)
        has_truth = rng.random() < 0.85
        facts = pick(rng, ["exact", "semantic", "partial", "missing"])
        contradictions, extra = rng.choice([0, 0, 0, 1, 2]), rng.randint(0, 6)
        node = {**base, "scorer": "answer_similarity", "judge": [
            {"outputUnits": ["o"], "groundTruthUnits": [f"g{i}" for i in range(len(facts))]},
            {"matches": [{"groundTruthUnit": f"g{i}", "outputUnit": None, "matchType": f, "explanation": "e"}
                         for i, f in enumerate(facts)],
             "extraInOutput": [f"x{i}" for i in range(extra)],
             "contradictions": [{"outputUnit": "o", "groundTruthUnit": "g", "explanation": "e"}] * contradictions}]}
        truth_item = dict(item)
        if has_truth:
            node["ground_truth"] = truth_item["ground_truth"] = text(rng) or "It is sunny."
        yield Case("answer_similarity", node, scorers["answer_similarity"], truth_item, ours,
                   {"facts": [{"fact": f"g{i}", "verdict": f} for i, f in enumerate(facts)],
                    "contradictions": [{"statement": "o"}] * contradictions,
                    "extra": [f"x{i}" for i in range(extra)]},
                   mastra_rejects=not has_truth)

        # faithfulness: evidence is the context, else the results of calls that returned
        claims = [] if empty_output else pick(rng, ["supported", "contradicted", "unsupported"])
        mastra_verdict = {"supported": "yes", "contradicted": "no", "unsupported": "unsure"}
        node_claims = [mastra_verdict[c] for c in claims]  # with no evidence too: Mastra judges it
        yield Case("faithfulness", {**base, "scorer": "faithfulness",
                                    "options": {"context": context} if context else {},
                                    "judge": [{"claims": [f"c{i}" for i in range(len(claims))]},
                                              {"verdicts": [{"verdict": v, "reason": "r"} for v in node_claims]}]},
                   scorers["faithfulness"], item, ours,
                   {"claims": [{"claim": f"c{i}", "verdict": c} for i, c in enumerate(claims)]})

        # hallucination: context only; general (speculative) claims count
        claims = [] if empty_output else pick(rng, ["supported", "contradicted", "unsupported", "general"])
        yield Case("hallucination", {**base, "scorer": "hallucination", "options": {"context": context},
                                     "judge": [{"claims": [f"c{i}" for i in range(len(claims))]},
                                               {"verdicts": [{"statement": f"c{i}", "reason": "r",
                                                              "verdict": "no" if c == "supported" else "yes"}
                                                             for i, c in enumerate(claims)]}]},
                   scorers["hallucination"], item, ours,
                   {"claims": [{"claim": f"c{i}", "verdict": c} for i, c in enumerate(claims)]})

        # toxicity: no verdicts is 1 in Mastra
        toxic = [] if empty_output else pick(rng, ["toxic", "ok"])
        yield Case("toxicity", {**base, "scorer": "toxicity", "judge": [
            {"verdicts": [{"verdict": cased(rng, "yes" if t == "toxic" else "no"), "reason": "r"} for t in toxic]}]},
            scorers["toxicity"], item, ours, {"statements": [{"statement": "s", "verdict": t} for t in toxic]})

        # bias
        opinions = [] if empty_output else pick(rng, ["biased", "unbiased"])
        yield Case("bias", {**base, "scorer": "bias", "judge": [
            {"opinions": [f"o{i}" for i in range(len(opinions))]},
            {"results": [{"result": "yes" if o == "biased" else "no", "reason": "r"} for o in opinions]}]},
            scorers["bias"], item, ours, {"opinions": [{"opinion": "o", "verdict": o} for o in opinions]})

        if context:
            # context_precision: verdicts may come back out of order; both sides sort by index
            useful = [rng.random() < 0.5 for _ in context]
            order = list(range(len(context)))
            rng.shuffle(order)
            yield Case("context_precision", {**base, "scorer": "context_precision", "options": {"context": context},
                                             "judge": [{"verdicts": [{"context_index": i, "reason": "r",
                                                                      "verdict": "yes" if useful[i] else "no"}
                                                                     for i in order]}]},
                       scorers["context_precision"], item, ours,
                       {"verdicts": [{"index": i, "useful": useful[i]} for i in order]})

            # context_relevance
            grades = [rng.choice(["high", "medium", "low", "none"]) for _ in context]
            used = [rng.random() < 0.6 for _ in context]
            missing = [f"m{i}" for i in range(rng.choice([0, 0, 1, 2, 4]))]
            yield Case("context_relevance", {**base, "scorer": "context_relevance", "options": {"context": context},
                                             "judge": [{"evaluations": [
                                                 {"context_index": i, "contextPiece": c, "relevanceLevel": g,
                                                  "wasUsed": u, "reasoning": "r"}
                                                 for i, (c, g, u) in enumerate(zip(context, grades, used,
                                                                                   strict=True))],
                                                 "missingContext": missing, "overallAssessment": "a"}]},
                       scorers["context_relevance"], item, ours,
                       {"verdicts": [{"index": i + 1, "relevance": g, "used": u}
                                     for i, (g, u) in enumerate(zip(grades, used, strict=True))],
                        "missing_context": missing})

            # context_recall: no ground truth scores 0
            attributed = [rng.random() < 0.5 for _ in range(rng.randint(0, 5))]
            recall_item = dict(item)
            node = {**base, "scorer": "context_recall", "options": {"context": context}, "judge": [
                {"claims": [f"c{i}" for i in range(len(attributed))]},
                {"verdicts": [{"verdict": cased(rng, "yes" if a else "no"), "reason": "r"} for a in attributed]}]}
            if rng.random() < 0.8:
                node["ground_truth"] = recall_item["ground_truth"] = text(rng) or "truth"
            yield Case("context_recall", node, scorers["context_recall"], recall_item, ours,
                       {"sentences": [{"sentence": f"c{i}", "attributed": a} for i, a in enumerate(attributed)]})

        # prompt_alignment: four component scores (Mastra rejects an empty output)
        parts = [rng.choice([0.0, 0.1, 0.25, 1 / 3, 0.5, 0.7, 0.85, 0.9, 1.0, rng.random()]) for _ in range(4)]
        yield Case("prompt_alignment", {**base, "scorer": "prompt_alignment", "judge": [{
            "intentAlignment": {"score": parts[0], "primaryIntent": "p", "isAddressed": True, "reasoning": "r"},
            "requirementsFulfillment": {"requirements": [], "overallScore": parts[1]},
            "completeness": {"score": parts[2], "missingElements": [], "reasoning": "r"},
            "responseAppropriateness": {"score": parts[3], "formatAlignment": True, "toneAlignment": True,
                                        "reasoning": "r"},
            "overallAssessment": "a"}]},
            scorers["prompt_alignment"], item, ours,
            {"intent": {"score": parts[0]}, "requirements": {"items": [], "score": parts[1]},
             "completeness": {"score": parts[2], "missing": []}, "appropriateness": {"score": parts[3]}},
            mastra_rejects=empty_output)

        # summarization: at most 10 key points count
        supported = [] if empty_output else [rng.random() < 0.7 for _ in range(rng.randint(0, 5))]
        answered = [] if empty_output else [rng.random() < 0.6 for _ in range(rng.choice([0, 1, 3, 8, 12]))]
        node = {**base, "scorer": "summarization", "options": {"source": "\n\n".join(context)} if context else {},
                "judge": [{"alignment": [{"claim": f"c{i}", "supported": s, "reason": "r"}
                                         for i, s in enumerate(supported)],
                           "questions": [f"q{i}" for i in range(len(answered))]},
                          {"coverage": [{"question": f"q{i}", "answered": a, "reason": "r"}
                                        for i, a in enumerate(answered[:10])]}]}
        yield Case("summarization", node, scorers["summarization"], item, ours,
                   {"claims": [{"claim": f"c{i}", "verdict": "supported" if s else rng.choice(["contradicted",
                                                                                              "unsupported"])}
                               for i, s in enumerate(supported)],
                    "key_points": [{"point": f"q{i}", "covered": a} for i, a in enumerate(answered)]})


def tool_and_rubric_cases(rng: random.Random, ctx: Any, per_scorer: int) -> Iterator[Case]:
    for case in random_tool_and_rubric_cases(rng, ctx, per_scorer):
        case.answer = reasoned(case.answer)
        yield case


def random_tool_and_rubric_cases(rng: random.Random, ctx: Any, per_scorer: int) -> Iterator[Case]:
    available = [{"name": t, "description": f"{t} tool"} for t in TOOLS]
    tool_scorer = judged.tool_call_accuracy(tools=available, ctx=ctx)
    for _ in range(per_scorer):
        question = text(rng) or "Book it"
        theirs, ours = output(rng)
        n_calls = len(ours["tool_calls"])
        appropriate = [rng.random() < 0.6 for _ in range(n_calls)]
        missing = rng.sample(TOOLS, k=rng.choice([0, 0, 1])) if not n_calls else []
        yield Case("tool_call_accuracy", {"scorer": "tool_call_accuracy", "input": question, "output": theirs,
                                          "options": {"availableTools": [
                                              {"id": t["name"], "description": t["description"]} for t in available]},
                                          "judge": [{"evaluations": [{"toolCalled": c["name"], "wasAppropriate": a,
                                                                      "reasoning": "r"}
                                                                     for c, a in zip(ours["tool_calls"], appropriate,
                                                                                     strict=True)],
                                                     "missingTools": missing}]},
                   tool_scorer, {"input": question}, ours,
                   {"calls": [{"index": i + 1, "appropriate": a} for i, a in enumerate(appropriate)],
                    "missing_tools": missing})

        criteria = [{"description": f"criterion {i}", "required": rng.random() < 0.6} for i in range(rng.randint(0, 4))]
        satisfied = [rng.random() < 0.6 for _ in criteria]
        if rng.random() < 0.3:
            markers = ["- ", "* ", "1. ", "2) ", "• ", ""]
            marked = "\n".join(f"{rng.choice(markers)}{c['description']}" for c in criteria)
            scorer = judged.rubric(criterion=marked + "\n\n", ctx=ctx) if criteria else None
            node_criteria: Any = marked
            required = [True] * len(criteria)
        else:
            scorer = judged.rubric(criteria=criteria, ctx=ctx)
            node_criteria = criteria
            required = [c["required"] for c in criteria]
        if scorer is None:
            continue
        yield Case("rubric", {"scorer": "rubric", "input": question, "output": theirs,
                              "options": {"criteria": node_criteria},
                              "judge": [{"criteria": [{"criterion": c["description"], "satisfied": s, "required": r,
                                                       "reasoning": "r"}
                                                      for c, s, r in zip(criteria, satisfied, required, strict=True)],
                                         "overallAssessment": "a"}]},
                   scorer, {"input": question}, ours,
                   {"criteria": [{"index": i + 1, "satisfied": s} for i, s in enumerate(satisfied)]})


# ---- running both sides ----


def evalgate_score(case: Case, fake: FakeJudge) -> tuple[float | str | None, int]:
    """(evalgate's score, None for not scorable or "error" where Mastra's throws; judge calls made)."""
    before = fake.calls
    fake.script = case.answer
    value: float | str | None
    try:
        value, _ = normalize(case.scorer.fn(case.item, case.run))
    except NotScorable:
        value = None
    except Exception as exc:
        # an error Mastra does not make is shown as a disagreement, not a crash of every group
        value = "error" if case.mastra_throws or case.out_of_range else f"unexpected error: {exc}"
    finally:
        fake.script = None
    return value, fake.calls - before


def agree(mastra: dict[str, Any], ours: float | str | None, case: Case) -> bool:
    if case.mastra_throws:
        return "error" in mastra and ours == "error"
    if case.out_of_range:
        return isinstance(mastra.get("score"), (int, float)) and not 0 <= mastra["score"] <= 1 and ours == "error"
    if case.mastra_rejects:
        return "error" in mastra and ours is None
    if "error" in mastra or ours is None:
        return False
    return isinstance(ours, (int, float)) and abs(mastra["score"] - ours) <= TOLERANCE


CODE_CASES, TRAJECTORY_CASES, JUDGED_CASES = 100, 300, 16  # per scorer; Mastra's judged pipeline is slow
SHARDS = 2  # Node processes in parallel (the judged scorers cost ~0.3 s of CPU each in Mastra)


def run_node(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mastra's scores for `cases`, from SHARDS Node processes working on interleaved slices at once."""

    def shard(index: int) -> list[dict[str, Any]]:
        proc = subprocess.run(
            ["node", str(HARNESS / "run_scorers.mjs")],
            input=json.dumps(cases[index::SHARDS]),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout)

    with ThreadPoolExecutor(SHARDS) as pool:
        parts = list(pool.map(shard, range(SHARDS)))
    results: list[dict[str, Any]] = [{}] * len(cases)
    for index, part in enumerate(parts):
        results[index::SHARDS] = part
    return results


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeJudge]:
    with FakeJudge() as server:
        yield server


@pytest.fixture(scope="module")
def compared(fake: FakeJudge) -> dict[str, list[tuple[Case, dict[str, Any], float | None]]]:
    judge = Judge(model="scripted", base_url=fake.base_url, api_key_env=None, retries={"attempts": 1})
    ctx = judge.context()
    rng = random.Random(13)
    cases = [
        *code_cases(rng, CODE_CASES),
        *trajectory_cases(rng, TRAJECTORY_CASES),
        *judged_cases(rng, ctx, JUDGED_CASES),
        *tool_and_rubric_cases(rng, ctx, JUDGED_CASES),
    ]
    mastra = run_node([c.node for c in cases])
    assert len(mastra) == len(cases)
    by_scorer: dict[str, list[tuple[Case, dict[str, Any], float | None]]] = defaultdict(list)
    for case, theirs in zip(cases, mastra, strict=True):
        ours, calls_made = evalgate_score(case, fake)
        if case.answer is not None and "judge_calls" in theirs and calls_made > 1:
            raise AssertionError(f"{case.label}: evalgate made {calls_made} judge calls for one item")
        by_scorer[case.label].append((case, theirs, ours))
    judge.close()
    lines = ["", f"{'scorer':<26} {'agree':>7} {'cases':>6}  rate"]
    for label, rows in sorted(by_scorer.items()):
        good = sum(1 for case, theirs, ours in rows if agree(theirs, ours, case))
        lines.append(f"{label:<26} {good:>7} {len(rows):>6}  {good / len(rows):.1%}")
    print("\n".join(lines))
    return by_scorer


EXACT = [
    "content_similarity", "textual_difference", "keyword_coverage", "completeness", "tone_consistency",
    "tool_call_accuracy_code",
    "trajectory_accuracy", "answer_relevancy", "answer_similarity", "faithfulness", "hallucination", "toxicity",
    "bias", "context_precision", "context_relevance", "context_recall", "prompt_alignment", "summarization",
    "tool_call_accuracy", "rubric",
]


@pytest.mark.parametrize("label", EXACT)
def test_scorer_agrees_with_mastra(label: str, compared: dict[str, list[Any]]) -> None:
    rows = compared[label]
    assert len(rows) >= 10, f"too few {label} cases to compare"
    wrong = [(case.node, theirs, ours) for case, theirs, ours in rows if not agree(theirs, ours, case)]
    first = json.dumps(wrong[0], default=str)[:1500] if wrong else ""
    assert not wrong, f"{len(wrong)} of {len(rows)} {label} cases differ; first: {first}"


# Edge cases, each group a parity gap once found by running Mastra; one Node process for all of them.
EDGE_GROUPS: dict[str, Callable[[Any], Iterator[Case]]] = {
    "js_rules": js_rule_cases,
    "completeness_words": completeness_cases,
    "null_expectations": null_expectation_cases,
    "falsy_errors": falsy_error_cases,
    "is_error_results": is_error_result_cases,
    "tool_invocations": tool_invocation_cases,
    "tool_names": tool_name_cases,
    "judge_types": judge_type_cases,
    "entry_nulls": entry_null_cases,
    "is_error_fields": is_error_field_cases,
    "null_step_names": null_step_name_cases,
    "tool_call_ids": tool_call_id_cases,
    "faithfulness_evidence": faithfulness_evidence_cases,
    "message_fields": message_field_cases,
    "message_texts": message_text_cases,
    "input_messages": input_message_cases,
    "input_shapes": input_shape_cases,
    "input_merges": input_merge_cases,
    "judge_labels": judge_label_cases,
    "judge_reasons": judge_reason_cases,
    "judge_indexes": judge_index_cases,
    "judge_counts": judge_count_cases,
    "alignment_range": alignment_range_cases,
    "cut_off_json": cut_off_cases,
    "judge_text_fields": judge_text_field_cases,
    "judge_proto": judge_proto_cases,
    "judge_fences": judge_fence_cases,
    "blank_texts": blank_text_cases,
    "summary_messages": summary_message_cases,
    "absent_values": absent_value_cases,
    "rubric_lines": rubric_line_cases,
}


@pytest.fixture(scope="module")
def edge_compared(fake: FakeJudge) -> dict[str, list[tuple[Case, dict[str, Any], float | str | None]]]:
    judge = Judge(model="scripted", base_url=fake.base_url, api_key_env=None, retries={"attempts": 1})
    ctx = judge.context()
    groups = {name: list(make(ctx)) for name, make in EDGE_GROUPS.items()}
    cases = [case for group in groups.values() for case in group]
    mastra = iter(run_node([c.node for c in cases]))
    out = {name: [(case, next(mastra), input_reading(case) if isinstance(case, InputCase)
                   else evalgate_score(case, fake)[0]) for case in group]
           for name, group in groups.items()}
    judge.close()
    return out


@pytest.mark.parametrize("group", EDGE_GROUPS)
def test_edge_cases_agree_with_mastra(group: str, edge_compared: dict[str, list[Any]]) -> None:
    rows = edge_compared[group]
    assert rows, f"no {group} cases"
    wrong = [(case.label, case.node, theirs, ours) for case, theirs, ours in rows
             if not (input_agrees if isinstance(case, InputCase) else agree)(theirs, ours, case)]
    shown = "\n".join(json.dumps(w, default=str)[:800] for w in wrong)
    assert not wrong, f"{len(wrong)} of {len(rows)} {group} cases differ:\n{shown}"


def random_history(rng: random.Random) -> list[dict[str, Any]]:
    """A conversation history of user, assistant, tool and system messages: strings and part lists of (empty,
    null, repeated) texts, v4 and v5 tool calls and results on a few ids, reasoning and images, shared ids, v4
    markers, UI messages of texts; most end with a user message, as an item's input does."""
    words = ["a", "b", "X", "Y", "", "atextb"]

    def text() -> dict[str, Any]:
        return {"type": "text", "text": rng.choice([*words, None] if rng.random() < 0.1 else words)}

    def parts(role: str) -> list[dict[str, Any]]:
        v4, out = rng.random() < 0.4, []
        for _ in range(rng.randint(0, 3)):
            r, call_id = rng.random(), rng.choice(["c1", "c2", "c3"])
            if r < 0.5:
                out.append(text())
            elif r < 0.65 and role != "tool":
                out.append(tool_call(call_id, v4=v4))
            elif r < 0.8:
                out.append(tool_result(call_id, v4=v4))
            elif r < 0.9:
                out.append({"type": "reasoning", "text": "r"})
            else:
                out.append(IMAGE_V4 if v4 else IMAGE)
        return out

    def message() -> dict[str, Any]:
        role = rng.choice(["user", "user", "assistant", "assistant", "tool", "system"])
        if role == "system":
            return system(rng.choice(["s", "t"]))
        if role != "tool" and rng.random() < 0.2:  # an AI SDK UI message, v4 (texts) or v5 (a tool or file part)
            ui_parts = [{"type": "step-start"}, {"type": "file", "mediaType": "image/png", "url": IMAGE["image"]},
                        {"type": "tool-w", "toolCallId": rng.choice(["c1", "c2"]), "state": "input-available",
                         "input": {}}]
            return {"role": role, "parts": [text() if rng.random() < 0.7 else rng.choice(ui_parts)
                                             for _ in range(rng.randint(0, 3))],
                    **({"id": rng.choice(["x", "y"])} if rng.random() < 0.25 else {})}
        content: Any = rng.choice(words[:4]) if rng.random() < 0.35 else parts(role)
        if role == "tool" and rng.random() < 0.6:
            content = [tool_result(rng.choice(["c1", "c2", "c3"]), v4=rng.random() < 0.5)]
        out = {"role": role, "content": content}
        if rng.random() < 0.25:
            out["id"] = rng.choice(["x", "y"])
        if rng.random() < 0.08:
            out.update(V4)
        return out

    history = [message() for _ in range(rng.randint(1, 6))]
    return [*history, user("end")] if rng.random() < 0.8 else history


def test_random_histories_are_read_as_a_real_agent_reads_them() -> None:
    """Random conversation histories through a real agent (tests/mastra/run_scorers.mjs, "input_text"): wherever
    evalgate reads one, it reads what Mastra's scorers read; where the agent throws, evalgate errors; evalgate
    may only refuse by name (a merge it does not reproduce) what Mastra reads."""
    from evalgate.replies.messages import NotReproduced, UnreadableInput, mastra_input_texts

    rng = random.Random(29)
    values = [random_history(rng) for _ in range(600)]
    mastra = run_node([{"scorer": "input_text", "input": value} for value in values])
    wrong, read = [], 0
    for value, theirs in zip(values, mastra, strict=True):
        try:
            code_text, user_text = mastra_input_texts(value)
            ours: Any = (code_text, user_text, mastra_system_prompt(value), no_input_messages(value))
        except NotReproduced:  # an UnreadableInput: the agent does not throw, evalgate does not reproduce it
            ours = "refused"
        except UnreadableInput:
            ours = "error"
        if "error" in theirs:
            ok = ours == "error"
        else:
            ok = ours == "refused" or ours == (theirs["code"], theirs["user"] or "", theirs["system"],
                                               theirs["messages"] == 0)
            read += ours != "refused"
        if not ok:
            wrong.append((value, theirs, ours))
    assert not wrong, f"{len(wrong)} of {len(values)} differ; first: {json.dumps(wrong[0], default=str)[:1500]}"
    assert read >= len(values) // 2, f"only {read} of {len(values)} histories read"


def test_faithfulness_shows_the_evidence_mastra_reads(fake: FakeJudge) -> None:
    """The tool results Mastra's faithfulness reads as its context (`faithfulness_evidence` cases, whose
    scripted verdicts follow them) are the ones evalgate shows its judge; with none, "(no context)"."""
    judge = Judge(model="scripted", base_url=fake.base_url, api_key_env=None, retries={"attempts": 1})
    checked = 0
    for case in faithfulness_evidence_cases(judge.context()):
        if case.mastra_throws:
            continue
        found = case.answer["claims"][0]["verdict"] == "supported"  # type: ignore[index]
        evalgate_score(case, fake)
        shown = fake.requests[-1]["messages"][1]["content"]
        assert ("temp" in shown) is found and ("(no context)" in shown) is not found, (case.node, shown)
        checked += 1
    judge.close()
    assert checked == 11


def test_summarization_judges_the_summary_mastra_picks(fake: FakeJudge, edge_compared: dict[str, list[Any]]) -> None:
    """The summary evalgate shows its judge is the one Mastra's summarization showed its own (`summary_messages`
    cases: the scores agree whichever text is judged, as both judges' replies are scripted)."""
    judge = Judge(model="scripted", base_url=fake.base_url, api_key_env=None, retries={"attempts": 1})
    wrong, checked = [], 0
    rows = edge_compared["summary_messages"]
    for case, (_, theirs, _) in zip(summary_message_cases(judge.context()), rows, strict=True):
        if case.mastra_throws or "prompts" not in theirs:
            continue
        mastra = theirs["prompts"][0].rsplit("\nSummary:\n", 1)[1].rsplit("\n\nJSON:", 1)[0]
        evalgate_score(case, fake)
        shown = fake.requests[-1]["messages"][1]["content"]
        ours = shown.split("<output>\n", 1)[1].rsplit("\n</output>", 1)[0]
        checked += 1
        if ours != mastra:
            wrong.append((case.label, mastra, ours))
    judge.close()
    assert not wrong, f"{len(wrong)} of {checked} summaries differ (label, Mastra's, evalgate's): {wrong}"
    assert checked >= 30


def test_scripted_judge_answers_reach_both_sides(compared: dict[str, list[Any]]) -> None:
    # The comparison means something only if Mastra's scorer really consumed the scripted answers.
    rows = compared["faithfulness"]
    assert any(theirs.get("judge_calls") == 2 for _, theirs, _ in rows)
    assert len({theirs.get("score") for _, theirs, _ in rows}) > 3
