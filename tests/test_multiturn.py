"""Multi-turn items through the public API: `inputs`, `turns`, per-turn checks, not scorable.

Specs run in process with `evalgate.run_spec` (fast, table-driven) and as a real `evalgate run`
subprocess where exit codes and messages matter; Python targets through `evalgate.run_evals`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, mastra_fields, run_cli

import evalgate
from evalgate import NotScorable, checks

Spec = Callable[..., dict[str, Any]]


@pytest.fixture
def spec(tmp_path: Path) -> Spec:
    """spec(data, gates=[], scorers=[]): the results JSON (header) of running it in process."""

    def _run(data: list[Any], gates: list[Any] = (), scorers: list[Any] = ()) -> dict[str, Any]:  # type: ignore[assignment]
        path = tmp_path / "evalgate.yaml"
        # JSON is YAML: the data set goes inline.
        path.write_text(json.dumps({"version": 1, "data": data, "gates": list(gates), "scorers": list(scorers)}))
        return evalgate.run_spec(path).to_dict()

    return _run


def inc(value: str, threshold: Any = None, **extra: Any) -> dict[str, Any]:
    entry = {"type": "includes", "value": value, **extra}
    if threshold is not None:
        entry["threshold"] = threshold
    return entry


def turn(output: Any, gates: list[Any] = (), scorers: list[Any] = (), input: str = "q") -> dict[str, Any]:  # type: ignore[assignment]
    return {"input": input, "output": output, "gates": list(gates), "scorers": list(scorers)}


def gate(id: str, score: float) -> dict[str, Any]:
    return {"id": id, "passed": score >= 1.0, "score": score}


def thr(id: str, average: float, threshold: Any, passed: bool) -> dict[str, Any]:
    return {"id": id, "passed": passed, "average_score": average, "threshold": threshold, "higher_is_better": True}


def tr(
    index: int, gates: list[Any] = (), thresholds: list[Any] = (), scores: dict[str, float] | None = None
) -> dict[str, Any]:  # type: ignore[assignment]
    return {"index": index, "gate_results": list(gates), "threshold_results": list(thresholds), "scores": scores or {}}


SUNNY = inc("sunny")


def with_entries(turn_results: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The turn results that hold something (whether empty turn indexes are listed is not pinned here)."""
    return [t for t in turn_results or [] if t["gate_results"] or t["threshold_results"] or t["scores"]]


# (case, items (each a list of turns), top-level gates, expected turn_results, expected verdict)
TURN_TABLE: list[tuple[str, list[list[dict[str, Any]]], list[Any], list[dict[str, Any]], str | None]] = [
    (
        "one id at one turn index averages across items",
        [[turn("sunny", [SUNNY])], [turn("rain", [SUNNY])]],
        [],
        [tr(0, [gate("includes:sunny", 0.5)])],
        "failed",
    ),
    (
        "the same id at another turn index is its own average",
        [[turn("sunny", [SUNNY]), turn("sunny", [SUNNY])], [turn("sunny", [SUNNY]), turn("rain", [SUNNY])]],
        [],
        [tr(0, [gate("includes:sunny", 1.0)]), tr(1, [gate("includes:sunny", 0.5)])],
        "failed",
    ),
    (
        "a shorter conversation does not dilute a later turn",
        [
            [turn("rain", scorers=[inc("sunny", 0.5)])],
            [turn("sunny", scorers=[inc("sunny", 0.5)]), turn("sunny", scorers=[inc("sunny", 0.5)])],
        ],
        [],
        [
            tr(0, [], [thr("includes:sunny", 0.5, 0.5, True)], {"includes:sunny": 0.5}),
            tr(1, [], [thr("includes:sunny", 1.0, 0.5, True)], {"includes:sunny": 1.0}),
        ],
        "passed",
    ),
    (
        "a missed turn threshold makes the verdict scored",
        [[turn("sunny, 72F", [SUNNY], [inc("72F", 0.8)])], [turn("sunny, 60F", [SUNNY], [inc("72F", 0.8)])]],
        [],
        [tr(0, [gate("includes:sunny", 1.0)], [thr("includes:72F", 0.5, 0.8, False)], {"includes:72F": 0.5})],
        "scored",
    ),
    (
        "a failing turn gate beats a missed threshold",
        [[turn("rain", [SUNNY]), turn("rain", scorers=[inc("72F", 0.8)])]],
        [],
        [
            tr(0, [gate("includes:sunny", 0.0)]),
            tr(1, [], [thr("includes:72F", 0.0, 0.8, False)], {"includes:72F": 0.0}),
        ],
        "failed",
    ),
    (
        "a range threshold per turn",
        [
            [turn("sorry, sunny", scorers=[inc("sorry", {"max": 0.2})])],
            [turn("sunny", scorers=[inc("sorry", {"max": 0.2})])],
        ],
        [],
        [tr(0, [], [thr("includes:sorry", 0.5, {"max": 0.2}, False)], {"includes:sorry": 0.5})],
        "scored",
    ),
    (
        "tracked turn scorers are reported and never decide",
        [[turn("rain", scorers=[inc("sunny")])]],
        [],
        [tr(0, [], [], {"includes:sunny": 0.0})],
        None,
    ),
    (
        "tracked turn scorers next to a passing turn gate",
        [[turn("rain", [inc("rain")], [inc("sunny")])]],
        [],
        [tr(0, [gate("includes:rain", 1.0)], [], {"includes:sunny": 0.0})],
        "passed",
    ),
    (
        "a later-turn regression is hidden at the top level",
        [[turn("It is sunny in Oslo."), turn("Tomorrow: rain, probably.")]],
        [SUNNY],
        [tr(0), tr(1)],
        "passed",
    ),
    (
        "a per-turn gate catches the later-turn regression",
        [[turn("It is sunny in Oslo.", [SUNNY]), turn("Tomorrow: rain, probably.", [SUNNY])]],
        [SUNNY],
        [tr(0, [gate("includes:sunny", 1.0)]), tr(1, [gate("includes:sunny", 0.0)])],
        "failed",
    ),
]


@pytest.mark.parametrize(
    ("case", "items", "gates", "turn_results", "verdict"), TURN_TABLE, ids=[c[0] for c in TURN_TABLE]
)
def test_turn_aggregation_and_verdict(
    spec: Spec,
    case: str,
    items: list[list[dict[str, Any]]],
    gates: list[Any],
    turn_results: list[Any],
    verdict: str | None,
) -> None:
    results = spec([{"id": f"c{i}", "turns": turns} for i, turns in enumerate(items)], gates=gates)
    assert mastra_fields(with_entries(results["turn_results"])) == with_entries(turn_results)
    assert results["verdict"] == verdict
    if gates:  # the whole conversation passes its top-level gate in both regression cases
        assert mastra_fields(results["gate_results"]) == [gate("includes:sunny", 1.0)]


def test_turn_entries_keep_first_seen_order_and_ids(spec: Spec) -> None:
    results = spec(
        [
            {"turns": [turn("a b", [inc("a"), inc("b", id="bee")])]},
            {"turns": [turn("a b", [inc("b", id="bee"), inc("c")])]},
        ]
    )
    assert [g["id"] for g in results["turn_results"][0]["gate_results"]] == ["includes:a", "bee", "includes:c"]
    assert mastra_fields(results["turn_results"][0]["gate_results"][1]) == gate("bee", 1.0)


def test_per_turn_checks_see_only_their_turn(spec: Spec) -> None:
    results = spec(
        [
            {
                "turns": [
                    turn(
                        {"text": "Looking it up", "tool_calls": [{"name": "get_weather"}]},
                        [checks_entry("called_tool", tool="get_weather")],
                    ),
                    turn(
                        "It is sunny",
                        [checks_entry("used_no_tools"), inc("sunny"), checks_entry("excludes", value="Looking")],
                    ),
                ]
            }
        ],
    )
    assert results["verdict"] == "passed"


def checks_entry(type_: str, **params: Any) -> dict[str, Any]:
    return {"type": type_, **params}


# ---- the whole conversation at the top level ----


CONVERSATION_GATES = [
    inc("Sun ny"),  # includes/excludes/similarity: assistant texts joined by one space
    {"type": "equals", "value": "Sunny"},  # equals/matches: joined with nothing
    {"type": "matches", "pattern": "^Sunny$"},
    {"type": "excludes", "value": "Sunny"},
    {"type": "called_tool", "tool": "get_weather", "times": 2},  # calls accumulate across turns
    {"type": "tool_order", "tools": ["get_weather", "get_alerts", "get_weather"]},
    {"type": "max_tool_calls", "max": 3},
]
TURN_OUTPUTS = [
    {"text": "Sun", "tool_calls": [{"name": "get_weather"}, {"name": "get_alerts"}]},
    {"text": "ny", "tool_calls": [{"name": "get_weather"}]},
]


@pytest.mark.parametrize("shape", ["inputs", "turns"])
def test_top_level_checks_see_the_whole_conversation(spec: Spec, shape: str) -> None:
    if shape == "inputs":
        item = {"inputs": ["weather?", "and alerts?"], "outputs": TURN_OUTPUTS}
    else:
        item = {"turns": [turn(o) for o in TURN_OUTPUTS]}
    results = spec([item], gates=CONVERSATION_GATES)
    assert {g["id"]: g["score"] for g in results["gate_results"]} == {
        "includes:Sun ny": 1.0,
        "equals:Sunny": 1.0,
        "matches:^Sunny$": 1.0,
        "excludes:Sunny": 1.0,
        "called_tool:get_weather": 1.0,
        "tool_order:get_weather,get_alerts,get_weather": 1.0,
        "max_tool_calls:3": 1.0,
    }


def test_conversation_outputs_may_be_message_lists(spec: Spec) -> None:
    openai_turn = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
        },
        {"role": "assistant", "content": "Still sunny."},
    ]
    mastra_turn = [{"role": "assistant", "content": {"format": 2, "parts": [{"type": "text", "text": "Sunny."}]}}]
    results = spec(
        [{"inputs": ["a", "b"], "outputs": [mastra_turn, openai_turn]}],
        gates=[inc("Sunny.  Still", id="joined"), {"type": "no_tool_errors"}],
    )
    # Three assistant messages (one with no text) joined by spaces; the call never got a result.
    assert {g["id"]: g["score"] for g in results["gate_results"]} == {"joined": 1.0, "no_tool_errors": 0.0}


def test_recorded_inputs_need_one_output_per_input(tmp_path: Path) -> None:
    path = tmp_path / "evalgate.yaml"
    path.write_text(
        "version: 1\ndata:\n  - inputs: [a, b]\n    outputs: [only one]\ngates: [{type: includes, value: x}]\n"
    )
    result = run_cli("run", path)
    assert result.code == 2
    assert "evalgate.yaml:4" in result.output and "one output per input (2), got 1 outputs" in result.output


# ---- spec errors ----


def test_same_id_at_a_turn_index_must_share_a_threshold(tmp_path: Path) -> None:
    path = tmp_path / "evalgate.yaml"
    path.write_text(
        "version: 1\n"
        "data:\n"
        "  - turns:\n"
        "      - {input: a, output: x, scorers: [{type: includes, value: x, threshold: 0.5}]}\n"
        "  - turns:\n"
        "      - input: a\n"
        "        output: x\n"
        "        scorers:\n"
        "          - {type: includes, value: x, threshold: 0.9}\n"
    )
    result = run_cli("run", path)
    assert result.code == 2, result.output
    assert "evalgate.yaml:9" in result.output and "line 4" in result.output and "share a threshold" in result.output
    assert "Traceback" not in result.output


def test_same_id_at_different_turn_indexes_may_differ(spec: Spec) -> None:
    results = spec([{"turns": [turn("x", scorers=[inc("x", 0.5)]), turn("x", scorers=[inc("x", 0.9)])]}])
    assert [t["threshold_results"][0]["threshold"] for t in results["turn_results"]] == [0.5, 0.9]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"turns": [{"input": "a", "output": "x"}], "input": "a"}, "it has `input` and `turns`"),
        ({"turns": [{"input": "a", "output": "x"}], "inputs": ["a"], "outputs": ["x"]}, "it has `inputs` and `turns`"),
    ],
)
def test_turns_cannot_be_combined(tmp_path: Path, item: dict[str, Any], message: str) -> None:
    path = tmp_path / "evalgate.yaml"
    path.write_text(json.dumps({"version": 1, "data": [item], "gates": [inc("x")]}))
    result = run_cli("run", path)
    assert result.code == 2 and message in result.output, result.output


# ---- the CLI end to end ----


def test_cli_turns_results_and_exit_codes(tmp_path: Path) -> None:
    data = [
        {
            "id": "oslo",
            "turns": [
                turn("It is sunny.", [SUNNY], input="Oslo?"),
                turn("72F tomorrow", scorers=[inc("72F", 0.8)], input="Tomorrow?"),
            ],
        },
        {
            "id": "lima",
            "turns": [
                turn("sunny too", [SUNNY], input="Lima?"),
                turn("no idea", scorers=[inc("72F", 0.8)], input="Tomorrow?"),
            ],
        },
    ]
    path = tmp_path / "evalgate.yaml"
    path.write_text(json.dumps({"version": 1, "data": data, "scorers": [inc("sunny")]}))
    out = tmp_path / "results.json"
    default = run_cli("run", path, "--output", out)
    assert default.code == 0, default.output  # scored does not fail by default
    results = json.loads(out.read_text())
    assert results["verdict"] == "scored"
    assert results["scores"] == {"includes:sunny": 1.0}
    assert mastra_fields(results["turn_results"][1]["threshold_results"]) == [thr("includes:72F", 0.5, 0.8, False)]
    oslo = results["items"][0]
    assert oslo["input"] == ["Oslo?", "Tomorrow?"]
    assert [t["input"] for t in oslo["turns"]] == ["Oslo?", "Tomorrow?"]
    assert oslo["turns"][0]["gates"] == {"includes:sunny": 1.0} and oslo["turns"][1]["scores"] == {"includes:72F": 1.0}
    assert run_cli("run", path, "--fail-on", "scored").code == 1


# ---- not scorable ----


@evalgate.scorer(id="city_named")
def city_named(item: Any, run: Any) -> Any:
    """Not scorable for items without a city in metadata."""
    city = (item.metadata or {}).get("city")
    if city is None:
        return NotScorable("no city in metadata")
    return 1.0 if city in run.text else 0.0


@evalgate.scorer(id="never")
def never(item: Any, run: Any) -> Any:
    raise NotScorable("never applies")


@evalgate.scorer(id="none_means_not_scorable")
def returns_none(item: Any, run: Any) -> Any:
    return None


def test_not_scorable_left_out_of_averages_and_counted() -> None:
    data = [
        {"input": "q", "output": "Oslo", "metadata": {"city": "Oslo"}},
        {"input": "q", "output": "Lima", "metadata": {"city": "Quito"}},
        {"input": "q", "output": "hello"},
        {"input": "q", "output": "hello"},
    ]
    result = evalgate.run_evals(data=data, scorers=[{"scorer": city_named, "threshold": 0.5}, returns_none, never])
    assert result.scores == {"city_named": 0.5}  # (1 + 0) / 2: the two not scorable are left out
    assert result.summary["not_scorable"] == {"city_named": 2, "none_means_not_scorable": 4, "never": 4}
    assert [t.id for t in result.threshold_results] == ["city_named"]
    assert result.verdict == "passed"
    assert result.items[2].not_scorable == {
        "city_named": "no city in metadata",
        "never": "never applies",
        "none_means_not_scorable": "not scorable",
    }


def test_verdict_is_null_when_no_gate_or_threshold_produced_a_number(tmp_path: Path) -> None:
    result = evalgate.run_evals(
        data=[{"input": "q", "output": "hi"}],
        gates=[never],
        scorers=[{"scorer": never, "threshold": 0.9}, checks.includes("hi")],
    )
    assert result.verdict is None
    assert result.gate_results == [] and result.threshold_results == []
    assert result.scores == {"includes:hi": 1.0}
    # The CLI treats it as a plain scoring run: exit 0 even with --fail-on scored.
    (tmp_path / "scorers.py").write_text(
        "from evalgate import NotScorable\n\ndef never(item, run):\n    return NotScorable('n/a')\n"
    )
    path = tmp_path / "evalgate.yaml"
    path.write_text(
        "version: 1\ndata: [{input: q, output: hi}]\n"
        "gates: [{type: python, function: 'scorers:never'}]\n"
        "scorers: [{type: includes, value: hi}]\n"
    )
    out = tmp_path / "results.json"
    cli = run_cli("run", path, "--fail-on", "scored", "--output", out)
    assert cli.code == 0, cli.output
    results = json.loads(out.read_text())
    assert results["verdict"] is None and results["gate_results"] == []
    assert results["summary"]["not_scorable"] == {"python:never": 1}


def test_per_turn_not_scorable_counts_under_its_id(spec: Spec) -> None:
    trajectory = {"type": "trajectory_accuracy", "empty": "not_scorable"}
    results = spec(
        [
            {"turns": [turn("a"), turn({"text": "b", "tool_calls": [{"name": "t"}]}, [trajectory])]},
            {"turns": [turn("a"), turn("b", [trajectory])], "expected_trajectory": []},
        ]
    )
    # one map keyed by id, as Mastra's summary.notScorable
    assert results["summary"]["not_scorable"] == {"trajectory_accuracy": 1}
    assert mastra_fields(with_entries(results["turn_results"])) == [tr(1, [gate("trajectory_accuracy", 1.0)])]
    assert results["verdict"] == "passed"


# ---- python targets and history ----


def test_python_target_gets_the_history_of_an_inputs_item() -> None:
    seen: list[tuple[Any, Any, list[dict[str, Any]]]] = []

    def agent(text: str, item: Any, history: list[dict[str, Any]]) -> dict[str, Any]:
        seen.append((text, item.id, [dict(h) for h in history]))
        return {"text": f"answer {len(history) + 1}", "tool_calls": [{"name": f"tool{len(history) + 1}"}]}

    result = evalgate.run_evals(
        data=[{"id": "conv", "inputs": ["hi", "weather?", "thanks"]}],
        target=agent,
        gates=[checks.tool_order(["tool1", "tool2", "tool3"]), checks.includes("answer 1 answer 2 answer 3")],
        concurrency=1,
    )
    assert result.verdict == "passed"
    assert seen == [
        ("hi", "conv", []),
        ("weather?", "conv", [{"input": "hi", "output": "answer 1"}]),
        ("thanks", "conv", [{"input": "hi", "output": "answer 1"}, {"input": "weather?", "output": "answer 2"}]),
    ]
    assert result.items[0].run is not None and result.items[0].run.texts == ["answer 1", "answer 2", "answer 3"]


def test_one_argument_target_gets_each_input_in_order() -> None:
    result = evalgate.run_evals(
        data=[{"inputs": ["a", "b"]}, {"inputs": ["c"]}],
        target=lambda text: text.upper(),
        gates=[checks.matches("^(AB|C)$")],
    )
    assert result.verdict == "passed"


def test_a_failing_turn_errors_the_whole_item() -> None:
    def agent(text: str) -> str:
        if text == "boom":
            raise RuntimeError("agent crashed")
        return text

    result = evalgate.run_evals(
        data=[{"inputs": ["ok", "boom"]}, {"inputs": ["ok"]}], target=agent, gates=[checks.includes("ok")], max_errors=1
    )
    assert result.items[0].error == "RuntimeError: agent crashed"
    assert result.outcome.errored_items == 1
    assert result.gate_results[0].score == 1.0  # the errored item is left out of the average
    assert result.verdict == "passed"


# ---- the Python API: per-turn checks and the input top-level scorers see ----


def test_run_evals_applies_per_turn_gates() -> None:
    result = evalgate.run_evals(
        data=[{"turns": [{"input": "a", "output": "rain", "gates": [{"type": "includes", "value": "sunny"}]}]}],
        scorers=[checks.includes("rain")],
    )
    assert result.verdict == "failed"


def test_scorers_see_the_first_input_of_a_conversation() -> None:
    seen: list[Any] = []

    @evalgate.scorer
    def probe(item: Any, run: Any) -> float:
        seen.append(item.input)
        return 1.0

    evalgate.run_evals(data=[{"inputs": ["first", "second"], "outputs": ["x", "y"]}], scorers=[probe])
    assert seen == ["first"]


def test_demo_conversation_passes_offline(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    result = run_cli("run", "conversation.yaml", "--output", out, cwd=REPO / "examples" / "weather")
    assert result.code == 0, result.output
    results = json.loads(out.read_text())
    assert results["verdict"] == "passed"
    assert {g["id"] for g in results["gate_results"]} == {"no_tool_errors", "trajectory_accuracy"}
    assert [t["index"] for t in results["turn_results"]] == [0, 1, 2]
    paris = results["items"][0]
    assert [c["args"]["day"] for c in paris["output"]["tool_calls"]] == ["today", "tomorrow"]


def test_a_conversations_cost_and_latency_add_up_turn_by_turn(tmp_path: Path) -> None:
    """0.1 + 0.2 + 0.3 added left to right, as JavaScript adds: 0.6000000000000001 on every Python.

    Python 3.12's `sum()` compensates and gives 0.6: the Action's image (3.12) would then disagree
    with a 3.11 run of the same data in the last digit.
    """
    costs = [0.1, 0.2, 0.3]
    data = [{"id": "a", "turns": [turn({"text": "x", "cost_usd": c, "latency_ms": c * 10}) for c in costs]}]
    path = tmp_path / "evalgate.yaml"
    path.write_text(json.dumps({"version": 1, "data": data, "gates": [inc("x")]}))
    run = evalgate.run_spec(path, keep_items=True).items[0].run
    assert run.cost_usd == (0.1 + 0.2) + 0.3 == 0.6000000000000001
    assert run.latency_ms == (1.0 + 2.0) + 3.0


SAME_ID_PY = '''
def gate(item, run):
    return (0.0, "the gate's reason") if "bad" in run.text else 1.0

def scorer(item, run):
    return (0.25, "the scorer's reason") if "bad" in run.text else 1.0
'''


def test_a_gate_and_a_scorer_of_one_id_at_a_turn_keep_each_their_reason(tmp_path: Path) -> None:
    """They share the turn's `reasons` key (it keeps the reason given last, as before); `reasons_by_kind`
    holds each one's, and the report shows the gate's reason for the gate, the scorer's for the scorer."""
    from evalgate.report.markdown import ReportContext, render
    from evalgate.results.model import load_results

    (tmp_path / "same.py").write_text(SAME_ID_PY)
    both = {"gates": [{"type": "python", "function": "same:gate", "id": "same"}],
            "scorers": [{"type": "python", "function": "same:scorer", "id": "same", "threshold": 0.9}]}
    data = [{"id": "conv", "turns": [{"input": "a", "output": "bad answer", **both},
                                     {"input": "b", "output": "bad again", "gates": [inc("again")],
                                      "scorers": [{"type": "python", "function": "same:scorer", "id": "other"}]}]}]
    path = tmp_path / "evalgate.yaml"
    path.write_text(json.dumps({"version": 1, "data": data}))
    evalgate.run_spec(path, output=tmp_path / "out.json")
    first, second = json.loads((tmp_path / "out.json").read_text())["items"][0]["turns"]
    assert first["reasons"] == {"same": "the scorer's reason"}  # the plain format, as it always was
    assert first["reasons_by_kind"] == {"gates": {"same": "the gate's reason"},
                                        "scores": {"same": "the scorer's reason"}}
    assert "reasons_by_kind" not in second  # no id shared by a gate and a scorer: nothing more
    report = render(load_results(tmp_path / "out.json"), ReportContext())
    assert "the gate's reason" in report and "the scorer's reason" in report
