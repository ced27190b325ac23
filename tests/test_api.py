"""The Python API, shaped like Mastra's runEvals."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from evalgate import NotScorable, checks, run_evals, scorer
from evalgate.results.model import Results

DATA = [
    {"input": "What is the weather in Brooklyn?", "ground_truth": "sunny"},
    {"input": "What is the weather in Paris?", "ground_truth": "cloudy"},
    {"input": "Hi!", "ground_truth": None},
]


def agent(question: str) -> dict[str, Any]:
    for city, sky in (("Brooklyn", "sunny"), ("Paris", "cloudy")):
        if city in question:
            return {
                "text": f"It is {sky} in {city}.",
                "tool_calls": [{"name": "get_weather", "args": {"city": city}, "result": {"sky": sky}}],
            }
    return {"text": "Which city?", "tool_calls": []}


@scorer
def mentions_truth(item: Any, run: Any) -> Any:
    """1 if the answer mentions the ground truth; not scorable without one."""
    if not item.ground_truth:
        return NotScorable("no ground truth")
    return 1.0 if item.ground_truth in run.text else 0.0


def test_run_evals_mastra_shaped() -> None:
    result = run_evals(
        data=DATA,
        target=agent,
        gates=[checks.no_tool_errors()],
        scorers=[
            {"scorer": mentions_truth, "threshold": 0.7},
            checks.includes("Brooklyn"),
            {"scorer": checks.called_tool("get_weather"), "threshold": {"min": 0.5, "max": 0.8}},
        ],
        concurrency=2,
    )
    assert result.verdict == "passed"
    assert [(g.id, g.passed, g.score) for g in result.gate_results] == [("no_tool_errors", True, 1.0)]
    assert [(t.id, t.passed, t.average_score, t.threshold) for t in result.threshold_results] == [
        ("mentions_truth", True, 1.0, 0.7),
        ("called_tool:get_weather", True, 2 / 3, {"min": 0.5, "max": 0.8}),
    ]
    assert result.scores == {"mentions_truth": 1.0, "includes:Brooklyn": 1 / 3, "called_tool:get_weather": 2 / 3}
    assert result.summary["total_items"] == 3
    assert result.summary["not_scorable"] == {"mentions_truth": 1}
    assert [i.id for i in result.items] == ["item-1", "item-2", "item-3"]
    assert result.items[2].not_scorable == {"mentions_truth": "no ground truth"}


def test_the_issue_example_fails_its_gate() -> None:
    result = run_evals(
        data=DATA,
        target=agent,
        gates=[checks.called_tool("get_weather")],
        scorers=[{"scorer": mentions_truth, "threshold": 0.7}, checks.includes("Brooklyn")],
        concurrency=4,
    )
    assert result.verdict == "failed"  # "Hi!" made no call
    assert result.gate_results[0].score == 2 / 3


def test_to_dict_is_the_results_json() -> None:
    result = run_evals(
        data=DATA,
        target=agent,
        gates=[checks.called_tool("get_weather")],
        scorers=[{"scorer": checks.includes("sunny"), "threshold": 0.5}],
    )
    out = result.to_dict()
    json.dumps(out, allow_nan=False)  # strict JSON
    parsed = Results.model_validate(out)
    assert parsed.verdict == "failed"
    assert out["schema_version"] == 1
    assert out["name"] == "evals"
    # Mastra's fields, then the error bar: 2 of 3 items, Wilson's interval for 0/1 scores
    assert out["gate_results"] == [{"id": "called_tool:get_weather", "passed": False, "score": 2 / 3, "n": 3,
                                    "items": 3, "stderr": pytest.approx(1 / 3),
                                    "ci95": [pytest.approx(0.2076596), pytest.approx(0.9385081)]}]
    assert out["threshold_results"][0]["threshold"] == 0.5
    assert out["summary"]["total_items"] == 3
    assert [i["id"] for i in out["items"]] == ["item-1", "item-2", "item-3"]
    assert out["items"][0]["output"]["tool_calls"][0]["args"] == {"city": "Brooklyn"}
    assert out["items"][2]["gates"] == {"called_tool:get_weather": 0.0}


def test_async_and_two_argument_targets() -> None:
    async def answer(question: str, item: Any) -> str:
        await asyncio.sleep(0)
        return f"{question} -> {item.ground_truth}"

    result = run_evals(data=DATA[:2], target=answer, scorers=[checks.includes("sunny")])
    assert [i.run.text for i in result.items] == [
        "What is the weather in Brooklyn? -> sunny",
        "What is the weather in Paris? -> cloudy",
    ]
    assert result.verdict is None  # a tracked scorer only: a plain scoring run


def test_no_target_replays_recorded_outputs() -> None:
    data = [{"input": "a", "output": "sunny"}, {"input": "b", "output": {"text": "rain", "tool_calls": []}}]
    result = run_evals(data=data, scorers=[{"scorer": checks.includes("sunny"), "threshold": 0.5}])
    assert result.verdict == "passed"
    assert result.scores == {"includes:sunny": 0.5}


def test_one_argument_scorer_gets_the_run() -> None:
    @scorer(id="short")
    def short(run: Any) -> float:
        return 1.0 if len(run.text) < 23 else 0.0  # 24, 22 and 11 characters

    result = run_evals(data=DATA, target=agent, scorers=[short])
    assert result.scores == {"short": 2 / 3}


def test_plain_functions_are_scorers_named_after_them() -> None:
    def polite(item: Any, run: Any) -> tuple[float, str]:
        return (0.0, "no please") if "please" not in run.text else (1.0, "")

    result = run_evals(data=DATA[:1], target=agent, scorers=[polite])
    assert result.scores == {"polite": 0.0}
    assert result.items[0].reasons == {"polite": "no please"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scorers": [{"scorer": checks.includes("a"), "threshold": 1.5}]}, "threshold"),
        ({"scorers": [{"scorer": checks.includes("a"), "threshold": {"min": 0.9, "max": 0.1}}]}, "threshold"),
        ({"scorers": [{"scorer": checks.includes("a"), "threshold": float("nan")}]}, "threshold"),
        ({"scorers": [checks.includes("a"), checks.includes("a")]}, "includes:a"),
        ({"gates": [{"scorer": checks.no_tool_errors(), "threshold": 0.5}]}, "gates take no threshold"),
        ({"scorers": [{"scorer": checks.includes("a"), "treshold": 0.5}]}, "treshold"),
        ({}, "at least one gate or scorer"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run_evals(data=DATA, target=agent, **kwargs)


def test_empty_data_raises() -> None:
    with pytest.raises(ValueError, match="empty"):
        run_evals(data=[], target=agent, gates=[checks.no_tool_errors()])


@pytest.mark.parametrize("type_value", [{"a": 1}, ["includes"], None], ids=["mapping", "list", "null"])
def test_a_check_whose_type_names_no_scorer_is_the_clis_error_not_a_type_error(tmp_path: Any, type_value: Any) -> None:
    # A per-turn entry's `type: {a: 1}` was looked up in the registry as a key: the API raised
    # TypeError (unhashable type: 'dict') where the CLI reports the entry and its unknown type.
    from conftest import run_cli

    entry = {"type": type_value, "value": "hi"}
    data = [{"id": "a", "turns": [{"input": "hi", "output": "hi", "gates": [entry]}]}]
    spec = {"version": 1, "data": data, "target": {"type": "recorded"}}
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    cli = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert cli.code == 2, cli.output
    first = cli.stderr.splitlines()[0]
    assert first.startswith("error: evalgate.yaml:1: data[0].turns[0].gates[0]: "), first
    shown = first.removeprefix("error: evalgate.yaml:1: ")
    with pytest.raises(ValueError) as raised:
        run_evals(data=data)
    assert str(raised.value) == shown
    # a top-level entry, as the API's `gates=` takes it, says the same of `gates[0]`
    with pytest.raises(ValueError) as raised:
        run_evals(data=[{"input": "hi", "output": "hi"}], gates=[entry])
    assert str(raised.value) == shown.replace("data[0].turns[0].gates[0]", "gates[0]")
