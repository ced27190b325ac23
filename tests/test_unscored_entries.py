"""A configured gate or threshold is always reported, with why it has no score (issue 34, defect 7).

Real runs (`evalgate run` in a subprocess) against the fake judge answering malformed JSON, a python scorer that
raises, and items with nothing to judge: the terminal, the results JSON, `report` (Markdown, JUnit, HTML),
`--baseline` and `merge` of shards say the same thing. An entry whose results errored fails the verdict ("no result
could be scored: 2 judge errors"); one whose every result was not scorable is left out of the verdict, as Mastra's
runEvals leaves it out, and named (`summary.not_scored`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from conftest import dedent, merged_from_two_shards, run_cli

FAKE_JUDGE = Path(__file__).parent / "fake_judge.py"
AGENT = '''
def answer(question):
    return f"It is sunny in Brooklyn. {question}"

def blank(question):
    return ""

def chat(message, item, history):
    return f"It is sunny in Brooklyn. {message}"
'''
SCORER = '''
def broken(item, run):
    raise ValueError("the scorer's table is missing")
'''
DATA = '''
data:
  - {id: q01, input: "question 1"}
  - {id: q02, input: "question 2"}
'''
TURNS = '''
data:
  - id: c1
    turns:
      - input: "Is it cold in Oslo?"
        gates:
          - {type: includes, value: sunny}
        scorers:
          - {type: toxicity, threshold: {max: 0.2}}
      - input: "And tomorrow?"
  - id: c2
    turns:
      - input: "Is it cold in Paris?"
        scorers:
          - {type: toxicity, threshold: {max: 0.2}}
'''


def judge(mode: str) -> str:
    return dedent(f"""
        judge:
          model: fake
          serve: "{sys.executable} {FAKE_JUDGE.as_posix()} {mode}"
          api_key_env: null
          retries: {{attempts: 1}}
        """)


def spec(tmp_path: Path, name: str, body: str, function: str = "answer", data: str = DATA) -> Path:
    (tmp_path / "agent.py").write_text(dedent(AGENT), encoding="utf-8")
    (tmp_path / "checks.py").write_text(dedent(SCORER), encoding="utf-8")
    path = tmp_path / f"{name}.yaml"
    head = f"version: 1\nname: {name}\ntarget: {{type: python, function: \"agent:{function}\"}}\nconcurrency: 1\n"
    path.write_text(head + dedent(data) + dedent(body), encoding="utf-8")
    return path


def run(tmp_path: Path, path: Path, *extra: str | Path) -> tuple[int, str, dict[str, Any]]:
    out = tmp_path / f"{path.stem}.json"
    ran = run_cli("run", path, "--output", out, *extra, cwd=tmp_path)
    assert ran.code in (0, 1, 4), ran.stderr
    return ran.code, ran.stdout, json.loads(out.read_text(encoding="utf-8"))


def verdict_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("verdict:"))


def three_thresholds(tmp_path: Path, mode: str = "malformed", name: str = "three") -> Path:
    return spec(tmp_path, name, dedent("""
        max_errors: 10
        scorers:
          - {type: includes, value: sunny, threshold: 1}
          - {type: includes, value: Brooklyn, threshold: 0.5}
          - {type: toxicity, threshold: {max: 0.2}}
        """) + judge(mode))


def test_a_threshold_every_judge_reply_of_which_was_malformed_is_reported_and_fails_the_verdict(
        tmp_path: Path) -> None:
    code, out, results = run(tmp_path, three_thresholds(tmp_path))
    # within max_errors, but nothing was measured of toxicity: failed, not "scored" (which exits 0)
    assert code == 1
    assert verdict_line(out) == "verdict: FAILED (toxicity: no result could be scored: 2 judge errors)"
    assert [(t["id"], t["passed"], t["average_score"]) for t in results["threshold_results"]] == [
        ("includes:sunny", True, 1.0), ("includes:Brooklyn", True, 1.0), ("toxicity", False, None)]
    assert results["threshold_results"][2]["unscored"] == "no result could be scored: 2 judge errors"
    assert results["verdict"] == "failed"

    markdown = run_cli("report", tmp_path / "three.json", cwd=tmp_path)
    assert "2/3 thresholds met" in markdown.stdout
    assert ("> **Failed because a gate or threshold has no score**: toxicity: no result could be scored: "
            "2 judge errors") in markdown.stdout
    junit = run_cli("report", "--format", "junit", tmp_path / "three.json", cwd=tmp_path)
    assert '<failure message="no result could be scored: 2 judge errors" type="threshold"' in junit.stdout
    page = run_cli("report", "--format", "html", tmp_path / "three.json", cwd=tmp_path)
    assert '"why":["threshold toxicity: no result could be scored: 2 judge errors"]' in page.stdout


def test_a_spec_whose_only_entry_could_not_be_scored_fails_with_the_reason(tmp_path: Path) -> None:
    path = spec(tmp_path, "only", "max_errors: 10\nscorers:\n  - {type: toxicity, threshold: {max: 0.2}}\n"
                + judge("malformed"))
    code, out, results = run(tmp_path, path)
    assert code == 1 and results["verdict"] == "failed"
    assert verdict_line(out) == "verdict: FAILED (toxicity: no result could be scored: 2 judge errors)"


def test_a_scorer_that_raises_is_counted_apart_from_the_judge(tmp_path: Path) -> None:
    path = spec(tmp_path, "raises", """
        max_errors: 10
        gates:
          - {type: includes, value: sunny}
        scorers:
          - {type: python, id: broken, function: "checks:broken", threshold: 0.5}
        """)
    code, out, results = run(tmp_path, path)
    assert code == 1
    assert verdict_line(out) == "verdict: FAILED (broken: no result could be scored: 2 scorer errors)"
    assert results["threshold_results"][0]["unscored"] == "no result could be scored: 2 scorer errors"


def test_a_per_turn_threshold_whose_every_turn_errored_is_reported_and_fails(tmp_path: Path) -> None:
    path = spec(tmp_path, "turns", "max_errors: 10\n" + judge("malformed"), function="chat", data=TURNS)
    code, out, results = run(tmp_path, path)
    assert code == 1
    assert verdict_line(out) == "verdict: FAILED (turn 1: toxicity: no result could be scored: 2 judge errors)"
    first = results["turn_results"][0]
    assert [(t["id"], t["passed"], t["unscored"]) for t in first["threshold_results"]] == [
        ("toxicity", False, "no result could be scored: 2 judge errors")]


def test_an_entry_never_scorable_is_left_out_of_the_verdict_as_mastra_and_named(tmp_path: Path) -> None:
    path = spec(tmp_path, "traj", """
        gates:
          - {type: trajectory_accuracy, empty: not_scorable}
        scorers:
          - {type: includes, value: sunny, threshold: 1}
        """)
    code, out, results = run(tmp_path, path)
    why = "no result could be scored: 2 not scorable (the item has no expected_trajectory)"
    assert code == 0 and results["verdict"] == "passed"  # Mastra's runEvals skips it: same name, same number
    assert results["gate_results"] == []
    assert results["summary"]["not_scored"] == [{"id": "trajectory_accuracy", "kind": "gate", "turn": None,
                                                "reason": why}]
    assert verdict_line(out) == ("verdict: PASSED (left out as not scorable, as Mastra's runEvals does: "
                                 f"trajectory_accuracy: {why})")
    markdown = run_cli("report", tmp_path / "traj.json", cwd=tmp_path).stdout
    assert "> Left out of the verdict, every result not scorable (as Mastra's runEvals does): " in markdown
    junit = run_cli("report", "--format", "junit", tmp_path / "traj.json", cwd=tmp_path).stdout
    assert '<testcase classname="evalgate.gates" name="trajectory_accuracy">' in junit
    assert 'skipped="1"' in junit

    # against itself as the baseline, the entry is in the comparison, present and unscored
    code, out, _ = run(tmp_path, path, "--baseline", tmp_path / "traj.json")
    row = next(line for line in out.splitlines() if line.startswith("  trajectory_accuracy"))
    assert row.endswith(f"not compared: no result could be scored on this run: {why.split(': ', 1)[1]}")


def test_a_spec_whose_only_threshold_was_never_scorable_says_so_not_no_gates(tmp_path: Path) -> None:
    path = spec(tmp_path, "blank", "scorers:\n  - {type: toxicity, threshold: {max: 0.2}, empty: not_scorable}\n"
                + judge("ok"), function="blank")
    code, out, results = run(tmp_path, path)
    assert code == 0 and results["verdict"] is None  # Mastra: no verdict
    line = verdict_line(out)
    assert line.startswith("verdict: none (no gate or threshold could be scored; toxicity: no result could be "
                           "scored: 2 not scorable (the output is empty")
    assert "no gates or thresholds" not in out
    markdown = run_cli("report", tmp_path / "blank.json", cwd=tmp_path).stdout
    assert "> **No gate or threshold could be scored**: toxicity: no result could be scored: 2 not scorable" in markdown


def test_compare_names_the_entry_this_run_could_not_score(tmp_path: Path) -> None:
    run(tmp_path, three_thresholds(tmp_path, "ok", "base"))
    path = spec(tmp_path, "head", dedent("""
        max_errors: 10
        compare: {errors: skip}
        scorers:
          - {type: includes, value: sunny, threshold: 1}
          - {type: includes, value: Brooklyn, threshold: 0.5}
          - {type: toxicity, threshold: {max: 0.2}}
        """) + judge("malformed"))
    code, out, results = run(tmp_path, path, "--baseline", tmp_path / "base.json")
    assert code == 1
    assert "not compared: no result could be scored on this run: 2 judge errors" in out
    entries = {e["id"]: e for e in results["comparison"]["entries"]}
    assert entries["toxicity"]["reason"] == "no result could be scored on this run: 2 judge errors"
    assert entries["toxicity"]["base_average"] == 0.0 and entries["toxicity"]["head_average"] is None


def test_merged_shards_report_unscored_entries_as_one_run(tmp_path: Path) -> None:
    cases = [three_thresholds(tmp_path),
             spec(tmp_path, "turns", "max_errors: 10\n" + judge("malformed"), function="chat", data=TURNS),
             spec(tmp_path, "traj", "gates:\n  - {type: trajectory_accuracy, empty: not_scorable}\n")]
    for path in cases:
        _, one_out, one = run(tmp_path, path)
        merged_path, merged_run = merged_from_two_shards(path, tmp_path, path.stem)
        merged = json.loads(merged_path.read_text(encoding="utf-8"))
        for key in ("verdict", "gate_results", "threshold_results", "turn_results"):
            assert merged.get(key) == one.get(key), (path.stem, key)
        assert merged["summary"].get("not_scored") == one["summary"].get("not_scored"), path.stem
        assert verdict_line(merged_run.stdout) == verdict_line(one_out), path.stem
        assert "no result could be scored: 2 " in verdict_line(merged_run.stdout), path.stem  # and says why
