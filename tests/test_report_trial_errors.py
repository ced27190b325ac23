"""With `repeats`, errors live on trials: the terminal, `evalgate report` (Markdown, JUnit) and the headline say
why each item errored, on which trials, and count items and trials apart. A real run: a python target failing on
chosen trials and a judged scorer against the fake judge answering malformed replies."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import dedent, run_cli

FAKE_JUDGE = Path(__file__).parent / "fake_judge.py"
JUDGE_ERROR = "answer_relevancy: JudgeError: the judge (fake) gave no usable answer_relevancy verdict"
AGENT = '''
asked = {}

def answer(question):
    n = asked.get(question, 0)
    asked[question] = n + 1
    if (question == "question 2" and n == 1) or question == "question 4":
        raise RuntimeError(f"the model timed out on call {n + 1}")
    return f"It is sunny in Brooklyn. {question}"
'''


def write_run(tmp_path: Path) -> Path:
    (tmp_path / "agent.py").write_text(dedent(AGENT), encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_text(dedent(f"""
        version: 1
        name: trials
        data:
          - {{id: q01, input: "question 1"}}
          - {{id: q02, input: "question 2"}}
          - {{id: q03, input: "question 3"}}
          - {{id: q04, input: "question 4"}}
        target: {{type: python, function: "agent:answer"}}
        concurrency: 1
        repeats: 2
        gates:
          - {{type: includes, value: sunny}}
        scorers:
          - {{type: answer_relevancy, threshold: 0.5}}
        judge:
          model: fake
          serve: "{sys.executable} {FAKE_JUDGE.as_posix()} malformed"
          api_key_env: null
          retries: {{attempts: 1}}
        """), encoding="utf-8")
    return spec


def test_trial_errors_are_shown_with_their_reasons_trials_and_counts(tmp_path: Path) -> None:
    spec = write_run(tmp_path)
    results = tmp_path / "out.json"
    runs = [run_cli("run", spec, "--output", results, cwd=tmp_path) for _ in range(2)]
    assert runs[0].code == 4, runs[0].stderr
    assert runs[0].stdout.split("results:")[0].splitlines()[1:] == \
        runs[1].stdout.split("results:")[0].splitlines()[1:], "the same output on every run"
    out = runs[1].stdout
    assert out.startswith("trials: 4 items × 2 trials = 8 trials, 4 of 4 items errored (8 of 8 trials), ")
    rows = {line.split(":")[0].strip(): line for line in out.splitlines() if line.startswith("  q0")}
    assert f"q01: 2 of 2 trials errored: trials 1, 2: {JUDGE_ERROR}" in rows["q01"]
    assert f"q02: 2 of 2 trials errored: trial 1: {JUDGE_ERROR}" in rows["q02"]
    assert rows["q02"].endswith("; trial 2: RuntimeError: the model timed out on call 2")
    assert rows["q04"] == ("  q04: 2 of 2 trials errored: trial 1: RuntimeError: the model timed out on call 1; "
                           "trial 2: RuntimeError: the model timed out on call 2")
    # the most common error is the judge's, on 3 items, not the one trial whose run failed first
    assert "could not evaluate: 4 of 4 items errored (8 of 8 trials): JudgeError: the judge (fake)" in out

    report = run_cli("report", results, cwd=tmp_path)
    assert report.code == 0, report.stderr
    text = report.stdout
    assert text.startswith("## ❌ evalgate · trials: **could not evaluate: 4 of 4 items errored (8 of 8 trials): "
                           "JudgeError: the judge (fake)")
    assert "4 items × 2 trials = 8 trials, 4 of 4 items errored (8 of 8 trials)" in text
    assert "**Failed because 4 of 4 items errored (8 of 8 trials)**" in text
    assert "<summary>Errored items: 4 of 4 items errored (8 of 8 trials); " in text
    errored = text.split("<summary>Errored items")[1].split("</details>")[0]
    assert [line for line in errored.splitlines() if line.startswith("**")] == [
        f"**<code>q0{n}</code>**" for n in range(1, 5)]  # every item listed, in data order
    assert "… and" not in errored
    assert f"<pre>2 of 2 trials errored: trial 1: {JUDGE_ERROR}" in errored
    assert "; trial 2: RuntimeError: the model timed out on call 2</pre>" in errored

    junit = run_cli("report", results, "--format", "junit", cwd=tmp_path)
    assert 'name="trials: items" tests="4" failures="0" errors="4"' in junit.stdout
    assert f'message="2 of 2 trials errored: trials 1, 2: {JUDGE_ERROR}' in junit.stdout


def test_without_repeats_items_are_counted_as_before(tmp_path: Path) -> None:
    spec = write_run(tmp_path)
    spec.write_text(spec.read_text(encoding="utf-8").replace("repeats: 2\n", ""), encoding="utf-8")
    shown = run_cli("run", spec, "--output", tmp_path / "out.json", cwd=tmp_path)
    assert shown.stdout.startswith("trials: 4 items, 4 errored, ")
    assert f"  q01: {JUDGE_ERROR}" in shown.stdout
    assert "  q04: RuntimeError: the model timed out on call 1" in shown.stdout
    assert "could not evaluate: 4 of 4 items errored: JudgeError" in shown.stdout
    assert "trials" not in shown.stdout.split("\n", 1)[1]


def test_a_merge_of_shards_says_what_one_run_says(tmp_path: Path) -> None:
    spec = write_run(tmp_path)
    whole = run_cli("run", spec, "--output", tmp_path / "whole.json", cwd=tmp_path)
    for index in (1, 2):
        shard = run_cli("run", spec, "--shard", f"{index}/2", "-o", f"s{index}.json", cwd=tmp_path)
        assert shard.code in (0, 1, 4), shard.stderr
    merged = run_cli("merge", "s1.json", "s2.json", "-o", "merged.json", cwd=tmp_path)
    assert merged.code == 4, merged.stderr

    def said(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith(("  q0", "could not evaluate"))]

    assert said(merged.stdout) == said(whole.stdout) and len(said(whole.stdout)) == 5
    assert "could not evaluate: 4 of 4 items errored (8 of 8 trials): JudgeError" in merged.stdout
