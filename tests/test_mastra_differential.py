"""Differential test: evalgate's verdict engine against Mastra's real runEvals() and checks.

Random cases (seeded) are run through the real @mastra/core 1.71.0 / @mastra/evals 1.10.2 by
tests/mastra/run_mastra.mjs and through `evalgate.run_spec`; verdicts, gate results, threshold
results, scores and turn results must agree exactly (floats to the last bit).

Generated cases stay inside what the contract says agrees with Mastra: unique explicit ids,
no `exact` alternation or `exact` with the m flag (CONTRACT 6.4), no raising targets or scorers (CONTRACT 6.1).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evalgate.api import run_spec

HARNESS = Path(__file__).parent / "mastra"
READY = shutil.which("node") is not None and (HARNESS / "node_modules" / "@mastra" / "core").is_dir()

if not READY and os.environ.get("CI"):
    pytest.fail("CI must run the Mastra differential test: `npm ci` in tests/mastra", pytrace=False)
pytestmark = pytest.mark.skipif(not READY, reason="needs node and `npm ci` in tests/mastra")

WORDS = ["It", "is", "sunny", "in", "Brooklyn", "rain", "72F.", "SNOW", "😀", "ab", "a", "Ärger", "", " ", "\u0663",
         "ſun", "café", "K\u212a", "\r", "ΟΔΟΣ", "İstanbul", "STRASSE", "straße", "ﬁ"]
TOOLS = ["get_weather", "search", "book"]
# the last ones mean something else to Python's regex than to JavaScript's (docs/mastra-semantics.md)
PATTERNS = ["sun+y", "^It", r"F\.$", "rain|snow", "[0-9]+F", "b", r"\d+", r"\w+$", r"\bcaf", "^.{2}$", "[^]",
            "s", r"\s\S", "k", r"^\S+$", "ä"]
BOUNDS = [0.0, 0.25, 1 / 3, 0.5, 0.6, 2 / 3, 0.75, 0.8, 1.0]


def _text(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(0, 6))
    sep = rng.choice([" ", " ", "", "\u00a0", "\n"])
    return sep.join(words)


def _calls(rng: random.Random) -> list[dict[str, Any]]:
    calls = []
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        call: dict[str, Any] = {"name": rng.choice(TOOLS), "args": {"q": rng.choice(WORDS)}}
        outcome = rng.random()
        if outcome < 0.6:
            call["result"] = {"ok": True}
        elif outcome < 0.75:
            call["error"] = "timeout"
        elif outcome < 0.85:
            call["status"] = "pending"
        else:
            call["status"] = "error"
            call["error"] = "boom"
        calls.append(call)
    return calls


def _run(rng: random.Random) -> tuple[Any, Any]:
    """(run for the harness, the same run for evalgate)."""
    if rng.random() < 0.2:
        text = _text(rng)
        return text, text
    calls = _calls(rng)
    if rng.random() < 0.2:
        texts = [_text(rng) for _ in range(rng.randint(2, 3))]
        return {"text": texts, "tool_calls": calls}, {"texts": texts, "tool_calls": calls}
    text = _text(rng)
    return {"text": text, "tool_calls": calls}, {"text": text, "tool_calls": calls}


def _threshold(rng: random.Random) -> Any:
    kind = rng.random()
    if kind < 0.4:
        return rng.choice(BOUNDS)
    low, high = sorted(rng.choices(BOUNDS, k=2))
    if kind < 0.6:
        return {"min": low}
    if kind < 0.8:
        return {"max": high}
    return {"min": low, "max": high}


def _entry(rng: random.Random, index: int, kind: str, prefix: str = "") -> dict[str, Any]:
    choice = rng.choice(
        ["includes", "excludes", "equals", "matches", "similarity", "called_tool", "did_not_call",
         "tool_order", "max_tool_calls", "used_no_tools", "no_tool_errors", "fixed"]
    )
    entry: dict[str, Any] = {"type": choice, "id": f"{prefix}{kind}{index}-{choice}"}
    if choice in ("includes", "excludes", "equals", "similarity"):
        entry["value"] = rng.choice([w for w in WORDS if w.strip()] + ["sunny in", "It is sunny in Brooklyn"])
        if rng.random() < 0.3:
            entry["ignore_case"] = False
        if choice == "similarity" and rng.random() < 0.3:
            entry["cutoff"] = rng.choice([0.2, 0.5, 0.8])
        if rng.random() < 0.2:
            entry["value"] = rng.choice(["οδος", "i̇stanbul", "strasse", "İSTANBUL", "ς", "fi"])  # lower-casing's cases
    elif choice == "matches":
        entry["pattern"] = rng.choice(PATTERNS)
        entry["flags"] = rng.choice(["", "i", "u", "iu", "m", "s"])
        # Mastra's `exact` is `^src$`: an alternation's halves, or under m any line (CONTRACT 6.4)
        entry["exact"] = "|" not in entry["pattern"] and "m" not in entry["flags"] and rng.random() < 0.3
    elif choice in ("called_tool", "did_not_call"):
        entry["tool"] = rng.choice(TOOLS)
        if choice == "called_tool" and rng.random() < 0.3:
            entry["times"] = rng.randint(0, 2)
    elif choice == "tool_order":
        entry["tools"] = rng.sample(TOOLS, k=rng.randint(0, 2))
    elif choice == "max_tool_calls":
        entry["max"] = rng.randint(0, 2)
    if kind == "scorer" and rng.random() < 0.6:
        entry["threshold"] = _threshold(rng)
    return entry


FIXED_VALUES = [0.0, 0.25, 0.1, 0.2, 0.3, 0.5, 1.0, 1.0, 0.7, "not_scorable"]


def _case(seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    rng = random.Random(seed)
    gates = [_entry(rng, i, "gate") for i in range(rng.randint(0, 3))]
    scorers = [_entry(rng, i, "scorer") for i in range(rng.randint(0 if gates else 1, 3))]
    fixed_ids = [e["id"] for e in gates + scorers if e["type"] == "fixed"]
    shape = rng.choice(["input"] * 3 + ["inputs", "turns"])
    # per-turn entries come from one menu per turn index, so shared ids share thresholds
    turn_menu = [[_entry(rng, i, "gate" if rng.random() < 0.4 else "scorer", f"t{t}-") for i in range(2)]
                 for t in range(3)]
    harness_items, our_items = [], []
    for n in range(rng.randint(1, 5)):
        fixed = {i: rng.choice(FIXED_VALUES) for i in fixed_ids}
        if shape == "input":
            theirs, ours = _run(rng)
            harness_items.append({"input": f"q{n}", "output": theirs, "fixed": fixed})
            our_items.append({"input": f"q{n}", "output": ours, "metadata": {"fixed": fixed}})
        elif shape == "inputs":
            count = rng.randint(1, 3)
            pairs = [_run(rng) for _ in range(count)]
            inputs = [f"q{n}-{k}" for k in range(count)]
            harness_items.append({"inputs": inputs, "outputs": [p[0] for p in pairs], "fixed": fixed})
            our_items.append({"inputs": inputs, "outputs": [p[1] for p in pairs], "metadata": {"fixed": fixed}})
        else:
            h_turns, o_turns, turn_fixed = [], [], {}
            for t in range(rng.randint(1, 3)):
                theirs, ours = _run(rng)
                chosen = [e for e in turn_menu[t] if rng.random() < 0.6]
                h_gates = [e for e in chosen if "gate" in e["id"].split("-")[1]]
                h_scorers = [e for e in chosen if e not in h_gates]
                t_fixed = {e["id"]: rng.choice(FIXED_VALUES) for e in chosen if e["type"] == "fixed"}
                turn_input = f"q{n}-t{t}"
                turn_fixed[turn_input] = t_fixed
                h_turns.append({"input": turn_input, "output": theirs, "gates": h_gates, "scorers": h_scorers,
                                "fixed": t_fixed})
                o_turns.append({"input": turn_input, "output": ours, "gates": [_ours(e) for e in h_gates],
                                "scorers": [_ours(e) for e in h_scorers]})
            harness_items.append({"turns": h_turns, "fixed": fixed})
            our_items.append({"turns": o_turns, "metadata": {"fixed": fixed, "turn_fixed": turn_fixed}})
    harness = {"data": harness_items, "gates": gates, "scorers": scorers}
    ours_spec = {
        "version": 1,
        "name": f"case-{seed}",
        "data": our_items,
        "target": {"type": "recorded"},
        "gates": [_ours(e) for e in gates],
        "scorers": [_ours(e) for e in scorers],
    }
    return harness, ours_spec


def _ours(entry: dict[str, Any]) -> dict[str, Any]:
    if entry["type"] != "fixed":
        return entry
    out = {"type": "python", "id": entry["id"], "function": f"mastra_fixed:{entry['id'].replace('-', '_')}"}
    if "threshold" in entry:
        out["threshold"] = entry["threshold"]
    return out


def _normal(mastra: dict[str, Any]) -> dict[str, Any]:
    """Mastra's result in evalgate's shape (absent keys as evalgate writes them)."""

    def gates(rows: list[dict[str, Any]] | None) -> list[tuple[str, bool, float]]:
        return [(g["id"], g["passed"], g["score"]) for g in rows or []]

    def thresholds(rows: list[dict[str, Any]] | None) -> list[tuple[str, bool, float, Any]]:
        return [(t["id"], t["passed"], t["averageScore"], t["threshold"]) for t in rows or []]

    turns = None
    if mastra.get("turnResults") is not None:
        turns = [
            (t["index"], gates(t.get("gateResults")), thresholds(t.get("thresholdResults")), t.get("scores") or {})
            for t in mastra["turnResults"]
        ]
    return {
        "verdict": mastra["verdict"],
        "gates": gates(mastra["gateResults"]),
        "thresholds": thresholds(mastra["thresholdResults"]),
        "scores": mastra["scores"] or {},
        "turns": turns,
        "not_scorable": mastra["summary"].get("notScorable") or {},
    }


def _evalgate(result: Any) -> dict[str, Any]:
    outcome = result.outcome
    turns = None
    if outcome.turn_results is not None:
        turns = [
            (t.index, [(g.id, g.passed, g.score) for g in t.gate_results],
             [(r.id, r.passed, r.average_score, r.threshold) for r in t.threshold_results], t.scores)
            for t in outcome.turn_results
        ]
    return {
        "verdict": outcome.verdict,
        "gates": [(g.id, g.passed, g.score) for g in outcome.gate_results],
        "thresholds": [(t.id, t.passed, t.average_score, t.threshold) for t in outcome.threshold_results],
        "scores": outcome.scores,
        "turns": turns,
        "not_scorable": outcome.not_scorable,
    }


FIXED_MODULE = '''
from evalgate import NotScorable

def __getattr__(name):
    ident = name.replace("_", "-")

    def fixed(item, run):
        meta = item.metadata or {}
        # a per-turn view has no `turns`; the whole conversation keeps them
        per_turn = item.turns is None and item.input in (meta.get("turn_fixed") or {})
        table = meta["turn_fixed"][item.input] if per_turn else meta.get("fixed") or {}
        value = table[ident]
        return NotScorable("fixed") if value == "not_scorable" else float(value)

    return fixed
'''

CASES = 160


def run_mastra(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mastra's own runEvals on each case (tests/mastra/run_mastra.mjs): one result per case."""
    proc = subprocess.run(["node", str(HARNESS / "run_mastra.mjs")], input=json.dumps(cases), capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def mastra_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return run_mastra([_case(seed)[0] for seed in range(CASES)])


@pytest.mark.parametrize("seed", range(CASES))
def test_verdict_engine_agrees_with_mastra(seed: int, mastra_results: list[dict[str, Any]], tmp_path: Path) -> None:
    _, spec = _case(seed)
    mastra = mastra_results[seed]
    assert "error" not in mastra, f"Mastra rejected the case: {mastra}"
    (tmp_path / "mastra_fixed.py").write_text(FIXED_MODULE)
    (tmp_path / "spec.yaml").write_text(json.dumps(spec))
    result = run_spec(tmp_path / "spec.yaml", concurrency=1)
    assert _evalgate(result) == _normal(mastra)


# ---- raw messages whose `parts` or `toolInvocations` Mastra's readers cannot read ----

CALL = {"type": "tool-invocation",
        "toolInvocation": {"state": "result", "toolCallId": "c1", "toolName": "t", "args": {}, "result": 1}}
LEGACY = {"state": "result", "toolCallId": "c9", "toolName": "t", "args": {}, "result": 1}
ODD = {"an object": {}, "a string": "x", "an empty string": "", "0": 0, "1": 1, "false": False, "true": True,
       "null": None}


def _message(content: Any, role: str = "assistant") -> dict[str, Any]:
    return {"id": "m1", "role": role, "createdAt": "1970-01-01T00:00:00.000Z", "content": content}


def _odd_runs() -> list[tuple[str, list[dict[str, Any]], dict[str, str]]]:
    """(label, messages, {reader that throws in Mastra ("text", "tools"): the field evalgate's error names})."""
    runs: list[tuple[str, list[dict[str, Any]], dict[str, str]]] = []
    for name, value in ODD.items():
        thrown = {} if value is None else {"tools": "content.parts"}  # `parts?.filter`: null is no parts
        runs.append((f"parts {name}", [_message({"format": 2, "content": "hello", "parts": value})], thrown))
        thrown = {} if value is None else {"tools": "content.toolInvocations"}  # `legacy ?? []`
        runs.append((f"toolInvocations {name}", [_message({"format": 2, "content": "hello", "parts": [CALL],
                                                           "toolInvocations": value})], thrown))
    text = {"type": "text", "text": "hello"}
    runs += [
        ("a null part, content set", [_message({"format": 2, "content": "hello", "parts": [None, CALL, text]})],
         {"tools": "content.parts[0]"}),
        ("a null part, no content", [_message({"format": 2, "parts": [CALL, None, text]})],
         {"tools": "content.parts[1]", "text": "content.parts[1]"}),
        ("parts that are no objects", [_message({"format": 2, "parts": [5, "s", [], True, CALL, text]})], {}),
        ("a content list with a null", [_message([None, text])], {"text": "content[0]"}),
        ("legacy entries that are no objects", [_message({"format": 2, "content": "hello", "parts": [],
                                                          "toolInvocations": [None, 5, "x", [], LEGACY]})], {}),
        ("a toolInvocation that is no object",
         [_message({"format": 2, "content": "hello", "parts": [{"type": "tool-invocation", "toolInvocation": 5},
                                                               {"type": "tool-invocation", "toolInvocation": "t"},
                                                               {"type": "tool-invocation", "toolInvocation": None},
                                                               CALL]})], {}),
        ("a user message's null part",  # the checks read the text of assistant messages only
         [_message({"format": 2, "parts": [None, text]}, "user"), _message("hello")],
         {"tools": "messages[0].content.parts[0]"}),
        ("the second message's parts", [_message({"format": 2, "content": "a", "parts": [CALL]}),
                                        _message({"format": 2, "content": "b", "parts": {"0": CALL}})],
         {"tools": "messages[1].content.parts"}),
    ]
    return runs


TEXT_CHECKS = frozenset({"includes", "equals", "matches"})
ODD_ENTRIES: list[tuple[str, dict[str, Any]]] = [
    ("scorer", {"type": "includes", "value": "hello", "id": "s"}),
    ("scorer", {"type": "equals", "value": "hello", "id": "s"}),
    ("scorer", {"type": "called_tool", "tool": "t", "id": "s"}),
    ("scorer", {"type": "no_tool_errors", "id": "s"}),
    ("scorer", {"type": "used_no_tools", "id": "s"}),
    ("gate", {"type": "called_tool", "tool": "t", "id": "g"}),
    ("gate", {"type": "matches", "pattern": "hel+o", "id": "g"}),
]
ODD_CASES = [(label, messages, thrown, kind, entry) for label, messages, thrown in _odd_runs()
             for kind, entry in ODD_ENTRIES]


@pytest.fixture(scope="module")
def odd_mastra_results() -> list[dict[str, Any]]:
    return run_mastra([{"data": [{"input": "q", "output": {"messages": messages}}], f"{kind}s": [entry]}
                       for _, messages, _, kind, entry in ODD_CASES])


@pytest.mark.parametrize("index", range(len(ODD_CASES)),
                         ids=[f"{c[0]}-{c[3]}-{c[4]['type']}" for c in ODD_CASES])
def test_messages_mastra_cannot_read_error_the_check_that_reads_them(
        index: int, odd_mastra_results: list[dict[str, Any]], tmp_path: Path) -> None:
    """A check whose Mastra reader throws (`parts: {}` before `.filter`, `toolInvocations: 0` before `.map`,
    a null part before `.type`) gives no number: a scorer's error, a gate's 0, as evalgate maps a throw."""
    _, messages, thrown, kind, entry = ODD_CASES[index]
    mastra = odd_mastra_results[index]
    field = thrown.get("text" if entry["type"] in TEXT_CHECKS else "tools")
    spec = {"version": 1, "name": "odd", "data": [{"input": "q", "output": {"messages": messages}}],
            "target": {"type": "recorded"}, f"{kind}s": [entry]}
    (tmp_path / "spec.yaml").write_text(json.dumps(spec))
    item = run_spec(tmp_path / "spec.yaml", concurrency=1, keep_items=True).items[0]
    assert item.error is None
    if kind == "scorer":
        # Mastra's scorer throws (its whole run rejects) exactly where evalgate's scorer errors
        assert ("error" in mastra) == (field is not None), mastra
        if field is not None:
            assert mastra["error_id"] == "RUN_EXPERIMENT_SCORER_FAILED_TO_SCORE_RESULT"
            assert "s" not in item.scores
            assert field in item.scorer_errors["s"], item.scorer_errors
            return
    assert "error" not in mastra, mastra
    assert not item.scorer_errors, item.scorer_errors
    gates = {g["id"]: g["score"] for g in mastra["gateResults"] or []}
    assert item.gates == gates and item.scores == (mastra["scores"] or {})
    if kind == "gate" and field is not None:  # a gate that throws scores 0 in both, and says why here
        assert gates["g"] == 0 and field in item.reasons["g"], item.reasons


# ---- text parts whose text is no string: the checks' `join` makes it one, as JavaScript's ToString ----

TEXT_VALUES: list[tuple[Any, str | None]] = [  # (a text part's `text`, what the checks read; None: Mastra throws)
    (5, "5"), (0, ""), (-5.5, "-5.5"), (1e21, "1e+21"), (1.5e-7, "1.5e-7"), (0.0001, "0.0001"),
    (123456789012345678901234, "1.2345678901234569e+23"), (True, "true"), (False, ""), ({}, "[object Object]"),
    ({"valueOf": 1}, "[object Object]"), ([1, 2], "1,2"), ([None, 1, [2, [3]], {}], ",1,2,3,[object Object]"),
    ([], ""), ({"toString": 1}, None), ([{"toString": "x"}], None),
]


def _text_value_runs() -> list[tuple[str, list[dict[str, Any]], str | None]]:
    runs = []
    for value, read in TEXT_VALUES:
        runs.append((f"parts {value!r}", [_message({"format": 2, "parts": [{"type": "text", "text": value}]})], read))
        runs.append((f"list {value!r}", [_message([{"type": "text", "text": "x"}, {"type": "text", "text": value}])],
                     read))
    # `content.content` and `content.text` count only as non-empty strings; the parts are read instead
    runs.append(("content.content 5", [_message({"format": 2, "content": 5, "text": [1], "parts": [
        {"type": "text", "text": 7}]})], "7"))
    return runs


TEXT_VALUE_CASES = [(label, messages, read, entry) for label, messages, read in _text_value_runs()
                    for want in ["x" if read is None else read]
                    for entry in ({"type": "equals", "value": want, "id": "s", "ignore_case": False},
                                  {"type": "includes", "value": want[-3:], "id": "s"},
                                  {"type": "matches", "pattern": "^" + re.escape(want) + "$", "id": "s"})]


@pytest.fixture(scope="module")
def text_value_results() -> list[dict[str, Any]]:
    return run_mastra([{"data": [{"input": "q", "output": {"messages": messages}}], "scorers": [entry]}
                       for _, messages, _, entry in TEXT_VALUE_CASES])


@pytest.mark.parametrize("index", range(len(TEXT_VALUE_CASES)),
                         ids=[f"{c[0]}-{c[3]['type']}" for c in TEXT_VALUE_CASES])
def test_a_text_part_that_is_no_string_reads_as_javascript_writes_it(
        index: int, text_value_results: list[dict[str, Any]], tmp_path: Path) -> None:
    """`{type: "text", text: 5}` is "5" to Mastra's checks (`?.text || ""`, then `join`): 0 is "", {} is
    "[object Object]", [1, 2] is "1,2", 1e21 is "1e+21"; an object with its own `toString` throws."""
    _, messages, read, entry = TEXT_VALUE_CASES[index]
    mastra = text_value_results[index]
    spec = {"version": 1, "name": "text", "data": [{"input": "q", "output": {"messages": messages}}],
            "target": {"type": "recorded"}, "scorers": [entry]}
    (tmp_path / "spec.yaml").write_text(json.dumps(spec))
    item = run_spec(tmp_path / "spec.yaml", concurrency=1, keep_items=True).items[0]
    assert ("error" in mastra) == (read is None), mastra
    if read is None:
        assert "s" not in item.scores and "toString" in item.scorer_errors["s"], item.scorer_errors
        return
    assert item.scores == mastra["scores"] == {"s": 1}, (item.scores, item.reasons)
