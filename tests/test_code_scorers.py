"""Code scorers (no LLM) against hand-computed values, and through a spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalgate import run_spec
from evalgate.errors import SpecError
from evalgate.items import Item
from evalgate.loader import load_spec
from evalgate.runs import Run, ToolCall
from evalgate.scorers import code
from evalgate.scorers.base import NotScorable, Scorer, normalize


def score(scorer: Scorer, output: str = "", **item: Any) -> float | None:
    run = Run(texts=[output], latency_ms=item.pop("latency_ms", None), cost_usd=item.pop("cost_usd", None),
              tool_calls=[ToolCall(n) for n in item.pop("calls", [])])
    item.setdefault("input", "q")
    try:
        value, _ = normalize(scorer.fn(Item(**item), run))
    except NotScorable:
        return None
    return value


def test_content_similarity() -> None:
    # equal after lower-casing
    assert score(code.content_similarity(), "Hello World", ground_truth="hello world") == 1.0
    # case kept: bigrams He el ll lo oW Wo or rl ld vs he el ll lo ow wo or rl ld share 6 -> 2*6/(10+10-2)
    assert score(code.content_similarity(ignore_case=False), "Hello World", ground_truth="hello world") == 12 / 18
    # whitespace kept: "ab cd" {ab, "b ", " c", cd} vs "abcd" {ab, bc, cd} share 2 -> 2*2/(5+4-2)
    assert score(code.content_similarity(ignore_whitespace=False), "ab cd", ground_truth="abcd") == 4 / 7
    assert score(code.content_similarity(), "ab cd", ground_truth="abcd") == 1.0
    # no ground truth: compared with the input
    assert score(code.content_similarity(), "hello", input="hello") == 1.0


def test_textual_difference() -> None:
    # difflib: 3 matching characters of 4 + 4 -> 2*3/8
    assert score(code.textual_difference(), "abcd", ground_truth="abce") == 0.75
    assert score(code.textual_difference(), "same", ground_truth="same") == 1.0
    assert score(code.textual_difference(), "abc", input="xyz") == 0.0


def test_keyword_coverage() -> None:
    chosen = code.keyword_coverage(["sunny", "72F", "umbrella"])
    assert score(chosen, "It is SUNNY, 72F.") == 2 / 3
    # whole words only: "sun" is not in "sunny"
    assert score(code.keyword_coverage(["sun"]), "sunny") == 0.0
    # from ground truth: sunny, skies, brooklyn ("in" is a stopword) -> 2 of 3 in the output
    assert score(code.keyword_coverage(), "sunny in Brooklyn", ground_truth="Sunny skies in Brooklyn") == 2 / 3
    assert score(code.keyword_coverage([]), "anything") is None


def test_completeness() -> None:
    # forecasts -> forecast, predict, rain; output has forecast and raining -> rain: 2 of 3
    assert score(code.completeness(), "Forecast: raining", ground_truth="The forecasts predict rain") == 2 / 3
    assert score(code.completeness(), "x", ground_truth="the and of") is None  # only stopwords


def test_tone_consistency() -> None:
    # with ground truth: sentiment(great news) = 3/2 both -> 1
    assert score(code.tone_consistency(), "Great news!", ground_truth="Great news!") == 1.0
    # "This is terrible." = -3/3 = -1 vs 1.5: difference 2.5, capped at 1 -> 0
    assert score(code.tone_consistency(), "This is terrible.", ground_truth="Great news!") == 0.0
    # without: sentences 1.5 and -1.5, variance 2.25 -> 0
    assert score(code.tone_consistency(), "Great day. Terrible night.") == 0.0
    # "Good day." = 2/2 = 1, "Fine night." = 1/2: mean .75, variance .0625 -> .9375
    assert score(code.tone_consistency(), "Good day. Fine night.") == 0.9375
    assert score(code.tone_consistency(), "One sentence only.") == 1.0


def test_latency_and_cost() -> None:
    assert score(code.latency(1000), latency_ms=800) == 1.0
    assert score(code.latency(1000), latency_ms=1000) == 1.0
    assert score(code.latency(1000), latency_ms=1200) == 0.0
    assert score(code.latency(1000)) is None
    assert score(code.cost(0.001), cost_usd=0.002) == 0.0
    assert score(code.cost(0.001), cost_usd=0.0005) == 1.0
    assert score(code.cost(0.001)) is None


def test_tool_call_accuracy_code() -> None:
    calls = ["search", "get_weather"]
    assert score(code.tool_call_accuracy_code("get_weather"), calls=calls) == 1.0
    assert score(code.tool_call_accuracy_code("get_weather", strict=True), calls=calls) == 0.0
    assert score(code.tool_call_accuracy_code("get_weather", strict=True), calls=["get_weather"]) == 1.0
    order = code.tool_call_accuracy_code(expected_order=["search", "get_weather"])
    assert score(order, calls=["search", "x", "get_weather"]) == 1.0
    assert score(order, calls=["get_weather", "search"]) == 0.0
    strict = code.tool_call_accuracy_code(expected_order=["search", "get_weather"], strict=True)
    assert score(strict, calls=calls) == 1.0
    assert score(strict, calls=["search", "x", "get_weather"]) == 0.0
    # no expectation on the entry: the item's expected_trajectory
    fallback = code.tool_call_accuracy_code()
    assert score(fallback, calls=calls, expected_trajectory=[{"name": "search"}, "get_weather"]) == 1.0
    assert score(fallback, calls=calls) is None
    with pytest.raises(ValueError, match="not both"):
        code.tool_call_accuracy_code("a", ["a"])


def test_code_scorers_through_a_spec(tmp_path: Path) -> None:
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(
        """\
version: 1
data:
  - input: What is the weather?
    ground_truth: Sunny skies in Brooklyn
    output: {text: Sunny in Brooklyn, latency_ms: 900, cost_usd: 0.01, tool_calls: [{name: get_weather}]}
scorers:
  - type: content_similarity
  - type: textual_difference
  - type: keyword_coverage
    keywords: [sunny, brooklyn]
  - type: completeness
  - type: tone_consistency
  - type: latency
    max_ms: 1000
  - type: cost
    max_usd: 0.001
  - type: tool_call_accuracy_code
    expected_tool: get_weather
    threshold: 1
"""
    )
    result = run_spec(spec)
    assert result.verdict == "passed"
    assert result.scores["keyword_coverage:sunny,brooklyn"] == 1.0
    assert result.scores["latency:1000"] == 1.0
    assert result.scores["cost:0.001"] == 0.0
    assert result.scores["tool_call_accuracy_code:get_weather"] == 1.0
    assert result.scores["completeness"] == 2 / 3  # sunny, brooklyn of sunny, skies, brooklyn


def test_bad_arguments_are_spec_errors(tmp_path: Path) -> None:
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(
        "version: 1\ndata: [{input: q, output: a}]\nscorers:\n"
        "  - type: tool_call_accuracy_code\n    expected_tool: a\n    expected_order: [a]\n"
    )
    with pytest.raises(SpecError) as caught:
        load_spec(spec)
    assert caught.value.problems[0].line == 4
    assert "not both" in caught.value.problems[0].message
