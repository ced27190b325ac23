"""`not_scorable: fail`: a gate or threshold whose every result was not scorable fails the verdict (issue 34).

By default such an entry is left out of the verdict, as Mastra's runEvals leaves it out (same name, same
number). With the option, spec-wide or on the entry, it is not met, with why, through `evalgate run`,
`--resume`, shards and `merge`, `run_evals` and the reports. Real runs: `evalgate` in a subprocess on
recorded outputs (a `trajectory_accuracy` gate with `empty: not_scorable` and items without an
`expected_trajectory`, an `includes` against a ground truth no item has)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import dedent, merged_from_two_shards, run_cli

from evalgate import checks, run_evals

DATA = """
data:
  - {id: q01, input: "question 1", output: "It is sunny in Brooklyn."}
  - {id: q02, input: "question 2", output: "It is sunny in Queens."}
  - {id: q03, input: "question 3", output: "It is sunny in Harlem."}
"""
ENTRIES = """
gates:
  - {type: trajectory_accuracy, empty: not_scorable}
scorers:
  - {type: includes, reference: ground_truth, threshold: 0.5}
  - {type: includes, value: sunny, threshold: 1}
"""
TURNS = """
  - id: c1
    turns:
      - input: "Is it cold in Oslo?"
        output: "It is sunny in Oslo."
        gates:
          - {type: trajectory_accuracy, empty: not_scorable, not_scorable: fail}
      - {input: "And tomorrow?", output: "Sunny again."}
  - id: c2
    turns:
      - input: "Is it cold in Paris?"
        output: "It is sunny in Paris."
        gates:
          - {type: trajectory_accuracy, empty: not_scorable, not_scorable: fail}
"""
GATE_WHY = "no result could be scored: 3 not scorable (the item has no expected_trajectory)"
THRESHOLD_WHY = "no result could be scored: 3 not scorable (the item has no ground_truth to compare with)"


def spec(tmp_path: Path, name: str, head: str = "", entries: str = ENTRIES, data: str = DATA) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"version: 1\nname: {name}\n" + dedent(head) + dedent(data) + dedent(entries), encoding="utf-8")
    return path


def run(tmp_path: Path, path: Path, *extra: str | Path) -> tuple[int, str, dict[str, Any]]:
    out = tmp_path / f"{path.stem}.json"
    ran = run_cli("run", path, "--output", out, *extra, cwd=tmp_path)
    assert ran.code in (0, 1), ran.stderr
    return ran.code, ran.stdout, json.loads(out.read_text(encoding="utf-8"))


def verdict_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("verdict:"))


def decided(results: dict[str, Any]) -> dict[str, Any]:
    """What the verdict is made of: one run's and a merged or resumed run's must be equal."""
    summary = results["summary"]
    return {"verdict": results["verdict"], "gate_results": results["gate_results"],
            "threshold_results": results["threshold_results"], "turn_results": results.get("turn_results"),
            "not_scored": summary.get("not_scored"), "not_scorable": summary["not_scorable"],
            "failure_reason": summary["failure_reason"]}


@pytest.mark.parametrize("head", ["", "not_scorable: leave_out\n"], ids=["absent", "leave_out"])
def test_by_default_an_entry_never_scorable_is_left_out_of_the_verdict_as_mastra(tmp_path: Path, head: str) -> None:
    code, out, results = run(tmp_path, spec(tmp_path, "default", head))
    assert code == 0 and results["verdict"] == "passed"  # Mastra's runEvals: same name, same number
    assert results["gate_results"] == []
    assert [t["id"] for t in results["threshold_results"]] == ["includes:sunny"]
    assert results["summary"]["not_scored"] == [
        {"id": "trajectory_accuracy", "kind": "gate", "turn": None, "reason": GATE_WHY},
        {"id": "includes:ground_truth", "kind": "threshold", "turn": None, "reason": THRESHOLD_WHY}]
    assert verdict_line(out).startswith("verdict: PASSED (left out as not scorable, as Mastra's runEvals does: ")


def test_not_scorable_fail_makes_a_gate_and_a_threshold_with_nothing_scorable_fail_with_why(tmp_path: Path) -> None:
    code, out, results = run(tmp_path, spec(tmp_path, "strict", "not_scorable: fail\n"))
    assert code == 1  # the verdict's failing exit code: a gate failed, no outage
    assert results["verdict"] == "failed" and results["summary"]["failure_reason"] == "gates"
    gate = results["gate_results"][0]
    assert (gate["id"], gate["passed"], gate["score"], gate["unscored"]) == (
        "trajectory_accuracy", False, None, GATE_WHY)
    assert [(t["id"], t["passed"], t["average_score"], t.get("unscored")) for t in results["threshold_results"]] == [
        ("includes:ground_truth", False, None, THRESHOLD_WHY), ("includes:sunny", True, 1.0, None)]
    assert "not_scored" not in results["summary"]  # not left out: reported as failing
    assert results["summary"]["not_scorable"] == {"trajectory_accuracy": 3, "includes:ground_truth": 3}
    assert verdict_line(out) == (f"verdict: FAILED (trajectory_accuracy: {GATE_WHY}; "
                                 f"includes:ground_truth: {THRESHOLD_WHY})")

    saved = tmp_path / "strict.json"
    markdown = run_cli("report", saved, cwd=tmp_path).stdout
    assert "0/1 gates passed · 1/2 thresholds met" in markdown
    assert ("> **Failed because a gate or threshold has no score**: trajectory\\_accuracy: no result could be "
            "scored: 3 not scorable (the item has no expected\\_trajectory)") in markdown
    assert ("Gate <code>trajectory_accuracy</code>: – (must be 1.0): no result could be scored: 3 not scorable "
            "(the item has no expected\\_trajectory)</summary>") in markdown  # why, not "0 items responsible"
    page = run_cli("report", "--format", "html", saved, cwd=tmp_path).stdout
    assert (f'"why":["gate trajectory_accuracy: {GATE_WHY}","threshold includes:ground_truth: {THRESHOLD_WHY}"]'
            in page)
    junit = run_cli("report", "--format", "junit", saved, cwd=tmp_path).stdout
    assert f'<failure message="{GATE_WHY}" type="gate"' in junit


@pytest.mark.parametrize(("head", "gate", "threshold", "failing", "left_out"), [
    ("", ", not_scorable: fail", "", ["trajectory_accuracy"], ["includes:ground_truth"]),
    ("not_scorable: fail\n", "", ", not_scorable: leave_out", ["trajectory_accuracy"], ["includes:ground_truth"]),
    ("not_scorable: fail\n", ", not_scorable: leave_out", "", ["includes:ground_truth"], ["trajectory_accuracy"]),
], ids=["gate-fails", "threshold-left-out", "gate-left-out"])
def test_an_entry_own_not_scorable_overrides_the_spec(tmp_path: Path, head: str, gate: str, threshold: str,
                                                      failing: list[str], left_out: list[str]) -> None:
    entries = ENTRIES.replace("empty: not_scorable}", f"empty: not_scorable{gate}}}").replace(
        "threshold: 0.5}", f"threshold: 0.5{threshold}}}")
    code, out, results = run(tmp_path, spec(tmp_path, "own", head, entries))
    assert code == 1 and results["verdict"] == "failed"
    unscored = [r["id"] for r in results["gate_results"] + results["threshold_results"] if r.get("unscored")]
    assert unscored == failing
    assert [record["id"] for record in results["summary"]["not_scored"]] == left_out
    assert "left out as not scorable, as Mastra's runEvals does: " + left_out[0] in verdict_line(out)


def test_shards_merged_and_a_resumed_run_decide_as_one_run(tmp_path: Path) -> None:
    path = spec(tmp_path, "one", "not_scorable: fail\n", data=DATA + TURNS)
    code, out, one = run(tmp_path, path)
    assert code == 1
    turn_gate = one["turn_results"][0]["gate_results"][0]
    assert (turn_gate["id"], turn_gate["passed"], turn_gate["unscored"]) == (
        "trajectory_accuracy", False, "no result could be scored: 2 not scorable (the item has no expected_trajectory)")

    merged_path, merged_run = merged_from_two_shards(path, tmp_path, "shard")
    assert merged_run.code == 1, merged_run.stderr
    assert decided(json.loads(merged_path.read_text(encoding="utf-8"))) == decided(one)
    assert verdict_line(merged_run.stdout) == verdict_line(out)

    # a run stopped after two items, resumed from its journal
    out_path = tmp_path / "one.json"
    journal = out_path.with_name("one.json.items.jsonl")
    items = one["items"]
    journal.write_text("".join(json.dumps(item) + "\n" for item in items[:2]), encoding="utf-8")
    out_path.unlink()
    code, resumed_out, resumed = run(tmp_path, path, "--resume")
    assert code == 1 and resumed["summary"]["resumed_items"] == 2
    assert decided(resumed) == decided(one)
    assert verdict_line(resumed_out) == verdict_line(out)


@pytest.mark.parametrize(("head", "entries", "key_line", "message"), [
    ("not_scorable: failed\n", ENTRIES, 3, "not_scorable: Input should be 'leave_out' or 'fail' (got 'failed')"),
    ("", ENTRIES.replace("empty: not_scorable}", "empty: not_scorable, not_scorable: nope}"), 8,
     "gates[0].not_scorable: Input should be 'leave_out' or 'fail' (got 'nope')"),
    ("", ENTRIES.replace("value: sunny, threshold: 1}", "value: sunny, not_scorable: fail}"), 11,
     "scorers[1].not_scorable: this scorer has no `threshold`, so it never changes the verdict"),
], ids=["spec-wide", "entry", "tracked-scorer"])
def test_a_bad_not_scorable_is_a_spec_error_at_its_line(tmp_path: Path, head: str, entries: str, key_line: int,
                                                        message: str) -> None:
    path = spec(tmp_path, "bad", head, entries)
    ran = run_cli("run", path, "--output", tmp_path / "bad.json", cwd=tmp_path)
    assert ran.code == 2
    assert f"bad.yaml:{key_line}: {message}" in ran.stderr
    assert "Traceback" not in ran.stderr and not (tmp_path / "bad.json").exists()


def test_entries_sharing_an_id_at_a_turn_must_share_not_scorable(tmp_path: Path) -> None:
    turns = TURNS.replace("empty: not_scorable, not_scorable: fail}\n      - {input", "empty: not_scorable}\n"
                          "      - {input")
    path = spec(tmp_path, "turns", data=DATA + turns, entries="")
    ran = run_cli("validate", path, cwd=tmp_path)
    assert ran.code == 2, ran.stdout
    assert ("turn 0 gate `trajectory_accuracy` has `not_scorable: fail`, but the same id at that turn has "
            "`leave_out`") in ran.stderr


def test_run_evals_takes_not_scorable_for_the_run_and_per_entry() -> None:
    data = [{"id": f"q{n}", "input": "hi", "output": "It is sunny."} for n in range(3)]
    gates = [{"type": "trajectory_accuracy", "empty": "not_scorable"}]
    by_default = run_evals(data=data, gates=gates, scorers=[{"scorer": checks.includes("sunny"), "threshold": 1}])
    assert by_default.verdict == "passed"  # Mastra's runEvals leaves the gate out
    strict = run_evals(data=data, gates=gates, not_scorable="fail")
    assert strict.verdict == "failed"
    assert strict.gate_results[0].unscored == GATE_WHY

    ground_truth = {"scorer": checks.includes(reference="ground_truth"), "threshold": 0.5, "not_scorable": "fail"}
    own = run_evals(data=data, gates=gates, scorers=[ground_truth])
    assert own.verdict == "failed" and [g.id for g in own.gate_results] == []
    assert own.threshold_results[0].unscored == THRESHOLD_WHY
    with pytest.raises(ValueError, match="not_scorable must be 'leave_out' or 'fail'"):
        run_evals(data=data, gates=gates, not_scorable="strict")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"scorers\[0\].not_scorable: this scorer has no `threshold`"):
        run_evals(data=data, gates=gates, scorers=[{"scorer": checks.includes("x"), "not_scorable": "fail"}])
