"""The `trajectory_accuracy` scorer: every expectation option, defaults vs items, as a gate."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import mastra_fields, run_cli

import evalgate
from evalgate.load.items import Item
from evalgate.replies import Run, run_from_value
from evalgate.scorers.base import NotScorable
from evalgate.scorers.trajectory import trajectory_accuracy


def run_of(*calls: str | dict[str, Any], usage: dict[str, Any] | None = None, latency_ms: float | None = None) -> Run:
    value: dict[str, Any] = {"text": "ok", "tool_calls": [{"name": c} if isinstance(c, str) else c for c in calls]}
    if usage is not None:
        value["usage"] = usage
    if latency_ms is not None:
        value["latency_ms"] = latency_ms
    return run_from_value(value)


def score(expected: Any, run: Run, **defaults: Any) -> float:
    value, _ = trajectory_accuracy(**defaults).fn(Item(input="q", expected_trajectory=expected), run)
    return value


SEARCH_SUMMARIZE = run_of("search", "fetch", "summarize")

# (case, expected_trajectory, run, score): accuracy alone scores matched / expected steps.
ACCURACY = [
    ("relaxed: extras between are fine", ["search", "summarize"], SEARCH_SUMMARIZE, 1.0),
    ("relaxed is the default and keeps order", ["summarize", "search"], SEARCH_SUMMARIZE, 0.5),
    ("relaxed: a missing step", ["search", "translate"], SEARCH_SUMMARIZE, 0.5),
    (
        "strict: exact sequence",
        {"steps": ["search", "fetch", "summarize"], "ordering": "strict"},
        SEARCH_SUMMARIZE,
        1.0,
    ),
    # 1 of 2 matched (0.5), minus half the extra-step ratio (1 extra / 2 expected * 0.5 = 0.25).
    ("strict: extras penalised", {"steps": ["search", "fetch"], "ordering": "strict"}, SEARCH_SUMMARIZE, 0.75),
    (
        "strict: a gap breaks positions",
        {"steps": ["search", "summarize"], "ordering": "strict"},
        SEARCH_SUMMARIZE,
        0.25,
    ),
    ("unordered: presence only", {"steps": ["summarize", "search"], "ordering": "unordered"}, SEARCH_SUMMARIZE, 1.0),
    (
        "unordered: each call matches once",
        {"steps": ["search", "search"], "ordering": "unordered"},
        SEARCH_SUMMARIZE,
        0.5,
    ),
    ("empty steps: only no calls is right", {"steps": []}, run_of(), 1.0),
    ("empty steps with calls", {"steps": []}, run_of("search"), 0.0),
    ("kind: tool_call matches", [{"name": "search", "step_type": "tool_call"}], SEARCH_SUMMARIZE, 1.0),
    (
        "kind: another kind never matches a tool call",
        [{"name": "search", "stepType": "agent_run"}],
        SEARCH_SUMMARIZE,
        0.0,
    ),
    ("repeats allowed by default", ["search"], run_of("search", "x", "search"), 1.0),
    # 1.0 minus 0.1 per repeated tool name.
    (
        "allow_repeated_steps: false",
        {"steps": ["search"], "allowRepeatedSteps": False},
        run_of("search", "x", "search"),
        0.9,
    ),
]


@pytest.mark.parametrize(("case", "expected", "run", "value"), ACCURACY, ids=[c[0] for c in ACCURACY])
def test_accuracy_by_ordering(case: str, expected: Any, run: Run, value: float) -> None:
    assert score(expected, run) == pytest.approx(value, abs=1e-12)


def test_step_data_is_compared_only_with_a_kind_and_as_json() -> None:
    run = run_of(
        {"name": "get_weather", "args": {"city": "Oslo", "units": "F"}, "result": {"t": 41}},
        {"name": "save", "args": {"v": 1}, "error": "disk full"},
    )
    step = {"name": "get_weather", "step_type": "tool_call"}
    # Mastra compares JSON strings: key order matters, unless `compare_data: value`.
    assert score([{**step, "tool_args": {"city": "Oslo", "units": "F"}}], run) == 1.0
    assert score([{**step, "tool_args": {"units": "F", "city": "Oslo"}}], run) == 0.0
    assert score([{**step, "tool_args": {"units": "F", "city": "Oslo"}}], run, compare_data="value") == 1.0
    # A failed call has no result to compare (Mastra keeps results of returned calls only).
    assert score([{"name": "save", "step_type": "tool_call", "tool_result": {"error": "disk full"}}], run) == 0.0
    assert score([{**step, "tool_args": {"city": "Lima"}}], run) == 0.0
    assert score([{**step, "toolResult": {"t": 41.0}}], run) == 1.0  # 41 == 41.0, as in JSON
    assert score([{**step, "success": True}], run) == 1.0
    assert score([{"name": "save", "step_type": "tool_call", "success": False}], run) == 1.0
    assert score([{"name": "save", "step_type": "tool_call", "success": True}], run) == 0.0
    # Without a kind only the name is compared (Mastra's generic step).
    assert score([{"name": "get_weather", "tool_args": {"city": "Lima"}}], run) == 1.0
    # Non-object args are compared as {value: ...}, as Mastra's trajectory stores them.
    assert (
        score(
            [{"name": "echo", "step_type": "tool_call", "tool_args": {"value": "hi"}}],
            run_of({"name": "echo", "args": "hi"}),
        )
        == 1.0
    )


def test_step_budget_and_redundant_calls() -> None:
    five = run_of(*(["a", "b"] * 2), "c")
    assert score({"max_steps": 5}, five) == 1.0
    # Over the budget: 1 - overshoot / budget; averaged with the redundancy check (on once a budget is set),
    # then rounded to 2 decimals as Mastra does: 0.875 -> 0.88 (`round: false` keeps it).
    assert score({"max_steps": 4}, five) == 0.88
    assert score({"max_steps": 4}, five, round=False) == 0.875
    assert score({"max_steps": 4, "no_redundant_calls": False}, five) == pytest.approx(0.75)
    same_args = run_of(
        {"name": "a", "args": {"q": 1}}, {"name": "a", "args": {"q": 1}}, {"name": "a", "args": {"q": 2}}
    )
    assert score({"no_redundant_calls": True}, same_args) == pytest.approx(0.8)  # 1 - 0.2 per repeat
    assert score({"no_redundant_calls": False}, same_args) == 1.0


def test_token_and_duration_budgets_use_the_run_measurements() -> None:
    assert score({"max_total_tokens": 100}, run_of(usage={"prompt_tokens": 60, "completion_tokens": 40})) == 1.0
    assert score(
        {"max_total_tokens": 100, "no_redundant_calls": False}, run_of(usage={"total_tokens": 150})
    ) == pytest.approx(0.5)
    assert score({"max_total_duration_ms": 1000, "no_redundant_calls": False}, run_of(latency_ms=1500)) == 0.5
    with pytest.raises(NotScorable, match="usage"):
        score({"max_total_tokens": 100}, run_of())


def test_blacklist_is_a_hard_zero() -> None:
    run = run_of("search", "delete_all", "summarize")
    assert score({"steps": ["search", "summarize"], "blacklisted_tools": ["delete_all"]}, run) == 0.0
    assert score({"blacklistedSequences": [["search", "delete_all"]]}, run) == 0.0
    assert score({"blacklisted_sequences": [["search", "summarize"]]}, run) == 1.0  # not contiguous
    assert score({"steps": ["search", "summarize"], "blacklisted_tools": ["drop"]}, run) == 1.0


def test_tolerated_tool_failures_are_retries_after_a_failure() -> None:
    failed = {"name": "fetch", "error": "timeout"}
    two_retries = run_of(failed, failed, failed, "fetch")  # three failures, so three retries
    assert score(["fetch"], run_of(failed, "fetch")) == 1.0  # one retry, within the default 2
    # accuracy 1.0 (weight 0.4); tool failures 1 - 0.2 * (3 - 2) = 0.8 (weight 0.2).
    # (0.4 x 1.0 + 0.2 x 0.8) / 0.6 = 0.9333..., rounded to 0.93
    assert score(["fetch"], two_retries) == 0.93
    assert score(["fetch"], two_retries, round=False) == pytest.approx((0.4 * 1.0 + 0.2 * 0.8) / 0.6)
    assert score({"steps": ["fetch"], "max_retries_per_tool": 3}, two_retries) == 1.0
    assert score({"steps": ["fetch"], "maxRetriesPerTool": 0}, two_retries) == 0.8  # (0.4 + 0.2 x 0.4) / 0.6
    # A pending call (never got a result) counts as a failure too.
    assert (
        score({"steps": ["fetch"], "max_retries_per_tool": 0}, run_of({"name": "fetch", "status": "pending"}, "fetch"))
        < 1.0
    )


def test_weights_combine_dimensions() -> None:
    run = run_of("search", "x", "y")
    expectation = {"steps": ["search", "summarize"], "max_steps": 3}
    assert score(expectation, run) == 0.71  # (0.4 x 0.5 + 0.3 x 1.0) / 0.7, rounded
    assert score(expectation, run, round=False) == pytest.approx((0.4 * 0.5 + 0.3 * 1.0) / 0.7)
    assert score(expectation, run, weights={"efficiency": 0}) == pytest.approx(0.5)


def test_entry_parameters_are_defaults_the_item_overrides() -> None:
    run = SEARCH_SUMMARIZE
    assert score(None, run, steps=["search", "summarize"]) == 1.0
    assert score(None, run, steps=["search", "summarize"], ordering="strict") == 0.25
    assert score({"ordering": "relaxed"}, run, steps=["search", "summarize"], ordering="strict") == 1.0
    assert score({"steps": ["translate"]}, run, steps=["search"]) == 0.0


def test_without_an_expectation_mastra_scores_the_calls_alone() -> None:
    # Mastra's createTrajectoryScorerCode reads `run.expectedTrajectory ?? {}`: nothing expected is 1,
    # unless a call failed more often than max_retries_per_tool allows
    assert score(None, SEARCH_SUMMARIZE) == 1.0
    assert score(None, SEARCH_SUMMARIZE, ordering="strict") == 1.0
    failing = run_of(*[{"name": "search", "error": "timeout"}] * 4)
    assert score(None, failing) < 1.0
    assert score(None, failing) == score({}, failing)


def test_empty_not_scorable_without_an_expectation() -> None:
    with pytest.raises(NotScorable, match="no expected_trajectory"):
        score(None, SEARCH_SUMMARIZE, empty="not_scorable")
    with pytest.raises(NotScorable):
        score(None, SEARCH_SUMMARIZE, ordering="strict", empty="not_scorable")  # tuning alone is no expectation
    assert score(None, SEARCH_SUMMARIZE, blacklisted_tools=["drop"], empty="not_scorable") == 1.0


def test_reason_names_what_differed() -> None:
    fn = trajectory_accuracy().fn
    value, reason = fn(Item(input="q", expected_trajectory=["search", "translate"]), SEARCH_SUMMARIZE)
    assert value == 0.5 and reason is not None and "missing: translate" in reason
    assert fn(Item(input="q", expected_trajectory=["search"]), SEARCH_SUMMARIZE)[1] is None


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"ordering": "loose"}, "ordering"),
        ({"steps": [{"nam": "x"}]}, "unknown step key"),
        ({"weights": {"speed": 1}}, "unknown weight"),
        ({"max_steps": -1}, "max_steps"),
    ],
)
def test_bad_parameters_raise(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        trajectory_accuracy(**params)


def test_a_bad_item_expectation_is_a_scorer_error_not_a_crash() -> None:
    result = evalgate.run_evals(
        data=[
            {
                "input": "q",
                "output": {"text": "", "tool_calls": [{"name": "a"}]},
                "expected_trajectory": {"order": "x"},
            },
            {"input": "q", "output": {"text": "", "tool_calls": [{"name": "a"}]}, "expected_trajectory": ["a"]},
        ],
        scorers=[trajectory_accuracy()],
        max_errors=1,
    )
    assert result.outcome.errored_items == 1
    assert "unknown key(s) ['order']" in result.items[0].scorer_errors["trajectory_accuracy"]
    assert result.scores == {"trajectory_accuracy": 1.0}


def test_spec_gate_with_camel_case_items_and_not_scorable(write: Callable[[str, str], Path], tmp_path: Path) -> None:
    data = [
        {
            "id": "ok",
            "input": "q",
            "output": {"text": "", "tool_calls": [{"name": "search"}, {"name": "summarize"}]},
            "expectedTrajectory": {"steps": [{"name": "search", "stepType": "tool_call"}, "summarize"], "maxSteps": 3},
        },
        {"id": "free", "input": "q", "output": "no expectation here"},
    ]
    (tmp_path / "data.json").write_text(json.dumps(data), encoding="utf-8")
    spec = write(
        "evalgate.yaml",
        """
        version: 1
        data: data.json
        gates:
          - type: trajectoryAccuracy
            ordering: strict
            empty: not_scorable
    """,
    )
    out = tmp_path / "results.json"
    result = run_cli("run", spec, "--output", out)
    assert result.code == 0, result.output
    results = json.loads(out.read_text())
    assert mastra_fields(results["gate_results"]) == [{"id": "trajectory_accuracy", "passed": True, "score": 1.0}]
    assert results["summary"]["not_scorable"] == {"trajectory_accuracy": 1}
    # The same gate fails when the agent skips a step.
    data[0]["output"]["tool_calls"] = [{"name": "search"}]
    (tmp_path / "data.json").write_text(json.dumps(data), encoding="utf-8")
    assert run_cli("run", spec).code == 1


def test_spec_entry_with_a_bad_ordering_is_a_spec_error(write: Callable[[str, str], Path]) -> None:
    spec = write(
        "evalgate.yaml",
        """
        version: 1
        data: [{input: q, output: hi}]
        scorers:
          - type: trajectory_accuracy
            ordering: sideways
    """,
    )
    result = run_cli("run", spec)
    assert result.code == 2
    assert "evalgate.yaml:5" in result.output or "line 5" in result.output, result.output


def test_spec_entry_nulls_are_kept_under_the_items(write: Callable[[str, str], Path], tmp_path: Path) -> None:
    # Mastra's `{...defaults, ...item}` keeps a null default: a null budget throws unless the item
    # sets its own, a null no_redundant_calls still checks redundancy.
    data = [
        {"id": "own", "input": "q", "output": {"text": "", "tool_calls": [{"name": "a"}]},
         "expected_trajectory": {"steps": ["a"], "max_steps": 3}},
        {"id": "null", "input": "q", "output": {"text": "", "tool_calls": [{"name": "a", "args": {}}] * 2},
         "expected_trajectory": ["a"]},
    ]
    (tmp_path / "data.json").write_text(json.dumps(data), encoding="utf-8")
    spec = write("evalgate.yaml", """
        version: 1
        data: data.json
        scorers:
          - type: trajectory_accuracy
            max_steps: null
          - {type: trajectory_accuracy, id: redundancy, no_redundant_calls: null}
    """)
    out = tmp_path / "results.json"
    run_cli("run", spec, "--output", out)
    items = json.loads(out.read_text())["items"]
    assert items[0]["scores"]["trajectory_accuracy"] == 1.0
    assert "not null" in items[1]["scorer_errors"]["trajectory_accuracy"]
    assert [i["scores"]["redundancy"] for i in items] == [1.0, 0.91]  # left out: 1.0
    # a null weights mapping is a spec error (Mastra's factory throws on it)
    bad = write("evalgate.yaml", """
        version: 1
        data: [{input: q, output: hi, expected_trajectory: [a]}]
        scorers:
          - {type: trajectory_accuracy, weights: null}
    """)
    result = run_cli("run", bad)
    assert result.code == 2 and "weights" in result.output, result.output


def test_an_explicit_null_changes_the_entry_hash() -> None:
    from evalgate.load.build import entry_hash
    from evalgate.scorers.registry import lookup

    entry = lookup("trajectory_accuracy")
    assert entry is not None
    model = entry.model("scorer")
    absent, null = (entry_hash(model.model_validate({"type": "trajectory_accuracy", **extra}))
                    for extra in ({}, {"max_steps": None}))
    assert absent != null
