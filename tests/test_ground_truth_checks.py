"""`reference: ground_truth` in the quick checks: each item compared with its own ground truth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from evalgate import checks
from evalgate.load.items import Item
from evalgate.replies import Run
from evalgate.scorers.base import NotScorable, Scorer
from evalgate.scorers.checks import dice


def score(scorer: Scorer, truth: object, *texts: str) -> float:
    result = scorer(Item(input="q", ground_truth=truth), Run(texts=list(texts)))
    return result[0] if isinstance(result, tuple) else result


@pytest.mark.parametrize(
    ("scorer", "truth", "answer", "expected"),
    [
        (checks.includes(reference="ground_truth"), "Paris", "The capital of France is Paris.", 1.0),
        (checks.includes(reference="ground_truth"), "paris", "The capital of France is Paris.", 1.0),
        (checks.includes(reference="ground_truth", ignore_case=False), "paris", "It is Paris.", 0.0),
        (checks.includes(reference="ground_truth"), "Lyon", "The capital of France is Paris.", 0.0),
        (checks.excludes(reference="ground_truth"), "Lyon", "The capital of France is Paris.", 1.0),
        (checks.excludes(reference="ground_truth"), "PARIS", "The capital of France is Paris.", 0.0),
        (checks.equals(reference="ground_truth"), "Paris", "paris", 1.0),
        (checks.equals(reference="ground_truth"), "Paris", "Paris.", 0.0),
        (checks.equals(reference="ground_truth", ignore_case=False), "Paris", "paris", 0.0),
        (checks.matches(reference="ground_truth"), r"^\d+ km$", "42 km", 1.0),
        (checks.matches(reference="ground_truth"), r"^\d+ km$", "about 42 km", 0.0),
        (checks.matches(reference="ground_truth", exact=True), r"\d+", "42 km", 0.0),
        (checks.matches(reference="ground_truth", flags="i"), "PARIS", "paris", 1.0),
        # a ground truth that is no text is compared as its JSON
        (checks.includes(reference="ground_truth"), 42, "The answer is 42.", 1.0),
        (checks.equals(reference="ground_truth"), {"a": 1}, '{"a": 1}', 1.0),
    ],
)
def test_checks_compare_with_the_items_ground_truth(scorer: Scorer, truth: object, answer: str,
                                                    expected: float) -> None:
    assert score(scorer, truth, answer) == expected


def test_the_ground_truth_scores_as_the_same_fixed_value_would() -> None:
    answer = "It is sunny in Brooklyn, 72F."
    for truth in ["It is sunny in Brooklyn.", "sunny sunny sunny", "Brooklyn", "x", "🌞 in Brooklyn"]:
        by_reference = checks.similarity(reference="ground_truth")
        assert score(by_reference, truth, answer) == score(checks.similarity(truth), "unused", answer)
        assert score(by_reference, truth, answer) == pytest.approx(dice(answer.lower(), truth.lower()))
        with_cutoff = checks.similarity(reference="ground_truth", cutoff=0.5)
        assert score(with_cutoff, truth, answer) == score(checks.similarity(truth, cutoff=0.5), None, answer)


def test_each_item_is_scored_against_its_own_ground_truth_in_turn() -> None:
    """The prepared ground truth is reused only for the same text: alternating items never mix them up."""
    scorer = checks.similarity(reference="ground_truth")
    pairs = [("Paris", "Paris"), ("Tokyo", "Paris"), ("Tokyo", "Tokyo"), ("Paris", "Tokyo"), ("Paris", "Paris")]
    assert [score(scorer, truth, answer) for truth, answer in pairs] == [1.0, 0.0, 1.0, 0.0, 1.0]


@pytest.mark.parametrize("truth", [None, ""])
@pytest.mark.parametrize("make", [checks.includes, checks.excludes, checks.equals, checks.matches, checks.similarity])
def test_an_item_without_ground_truth_is_not_scorable(make: object, truth: object) -> None:
    scorer = make(reference="ground_truth")  # type: ignore[operator]
    with pytest.raises(NotScorable, match="no ground_truth"):
        scorer(Item(input="q", ground_truth=truth), Run(texts=["anything"]))


def test_default_ids_say_ground_truth() -> None:
    assert checks.includes(reference="ground_truth").id == "includes:ground_truth"
    assert checks.matches(reference="ground_truth").id == "matches:ground_truth"
    assert checks.includes("Paris").id == "includes:Paris"


SPEC = """\
version: 1
data: data.jsonl
target: {type: python, function: "agent:answer"}
gates:
  - type: includes
    reference: ground_truth
scorers:
  - type: similarity
    reference: ground_truth
    threshold: 0.2
"""


def test_a_spec_gates_on_the_ground_truth_and_counts_items_without_one(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("def answer(q):\n    return 'The capital is ' + q.split()[-1]\n")
    items = [{"id": "paris", "input": "say Paris", "ground_truth": "Paris"},
             {"id": "tokyo", "input": "say Lyon", "ground_truth": "Tokyo"},
             {"id": "open", "input": "say anything"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    (tmp_path / "evalgate.yaml").write_text(SPEC)
    result = run_cli("run", "-o", "results.json", cwd=tmp_path)
    assert result.code == 1, result.output
    assert "failing: tokyo" in result.stdout
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["summary"]["not_scorable"] == {"includes:ground_truth": 1, "similarity:ground_truth": 1}
    gate = next(g for g in results["gate_results"] if g["id"] == "includes:ground_truth")
    assert gate["score"] == 0.5  # two scorable items, one holds its ground truth
    by_item = [i["gates"] for i in results["items"][:2]]
    assert by_item == [{"includes:ground_truth": 1.0}, {"includes:ground_truth": 0.0}]


@pytest.mark.parametrize(
    ("entry", "where", "message"),
    [
        ("  - type: includes\n", "s.yaml:4:", "give `value` or `reference: ground_truth`"),
        ("  - type: equals\n    value: x\n    reference: ground_truth\n", "s.yaml:4:", "not both"),
        ("  - type: matches\n", "s.yaml:4:", "give `pattern` or `reference: ground_truth`"),
        ("  - type: includes\n    reference: groundtruth\n", "s.yaml:5:", "ground_truth"),
    ],
)
def test_a_check_without_exactly_one_thing_to_compare_is_a_spec_error(tmp_path: Path, entry: str, where: str,
                                                                      message: str) -> None:
    (tmp_path / "s.yaml").write_text(f"version: 1\ndata: [{{input: q, output: a}}]\ngates:\n{entry}")
    result = run_cli("validate", "s.yaml", cwd=tmp_path)
    assert result.code == 2
    assert where in result.stderr and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
