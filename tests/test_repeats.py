"""`repeats: K`: K independent trials per item, averages over every trial (Mastra's rule on the data listed K
times), error bars clustered by item, pass@k / pass^k / flaky items, and statistical threshold rules."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import mastra_fields, run_cli
from fake_agent import FakeServer
from test_cache import run as run_cached
from test_cache import write_spec as write_cached_spec

from evalgate import checks, run_evals
from evalgate.decide import stats
from evalgate.results.model import Results

WORDS = ["sunny in Brooklyn", "rainy", "sunny and warm", "cloudy in Brooklyn", "sunny", "snow in Brooklyn"]


def counting_agent() -> Any:
    """Deterministic in (input, how many times this input was asked): trial t of an item answers the same
    as the t-th listing of that item in a data set listed K times."""
    asked: dict[str, int] = {}

    def agent(question: str) -> str:
        count = asked.get(question, 0)
        asked[question] = count + 1
        return WORDS[(hash_of(question) + 3 * count) % len(WORDS)] + " " + question

    return agent


def hash_of(text: str) -> int:
    return sum(map(ord, text))


DATA = [{"id": f"q{i}", "input": f"question {i}"} for i in range(7)]
SCORERS = [
    {"scorer": checks.similarity("sunny in Brooklyn"), "threshold": 0.3},
    checks.includes("Brooklyn"),
]


def test_averages_are_those_of_the_data_listed_k_times_to_the_last_bit() -> None:
    repeated = run_evals(data=DATA, target=counting_agent(), gates=[checks.includes("sunny")], scorers=SCORERS,
                         repeats=3, concurrency=1)
    listed = [dict(item, id=f"{item['id']}-{t}") for t in range(3) for item in DATA]  # item1..N, three times
    flat = run_evals(data=listed, target=counting_agent(), gates=[checks.includes("sunny")], scorers=SCORERS,
                     concurrency=1)
    assert repeated.scores == flat.scores  # exact float equality, not approx
    assert [g.score for g in repeated.gate_results] == [g.score for g in flat.gate_results]
    assert [t.average_score for t in repeated.threshold_results] == [t.average_score for t in flat.threshold_results]
    assert repeated.verdict == flat.verdict
    assert repeated.summary["total_items"] == 7 and repeated.summary["trials"] == 21
    assert repeated.summary["repeats"] == 3


def test_records_keep_every_trial_and_the_item_means() -> None:
    def agent(question: str) -> Any:
        trial = calls.setdefault(question, 0)
        calls[question] += 1
        if question == "boom" and trial == 1:
            raise RuntimeError("the model timed out")
        return "sunny" if (question == "always" or trial % 2 == 0) else "rain"

    calls: dict[str, int] = {}
    result = run_evals(data=[{"id": "a", "input": "always"}, {"id": "f", "input": "flaky"},
                             {"id": "b", "input": "boom"}],
                       target=agent, gates=[checks.includes("sunny")], repeats=3, concurrency=1, max_errors=1)
    out = result.to_dict()
    Results.model_validate(out)
    json.dumps(out, allow_nan=False)
    flaky = out["items"][1]
    assert [t["trial"] for t in flaky["trials"]] == [0, 1, 2]
    assert [t["gates"]["includes:sunny"] for t in flaky["trials"]] == [1.0, 0.0, 1.0]
    assert [t["run"]["text"] for t in flaky["trials"]] == ["sunny", "rain", "sunny"]
    assert all(t["error"] is None and t["duration_ms"] >= 0 for t in flaky["trials"])
    assert flaky["gates"] == {"includes:sunny": pytest.approx(2 / 3)}  # the item's mean
    assert flaky["output"]["text"] == "rain"  # the failing trial is the one a reader needs
    boom = out["items"][2]
    assert boom["trials"][1]["error"] == "RuntimeError: the model timed out" and boom["trials"][1]["run"] is None
    assert out["summary"]["errored_items"] == 1 and out["summary"]["errored_trials"] == 1
    gate = out["gate_results"][0]
    # 8 scored trials (one errored): 7 passed. As if the data were listed three times.
    assert gate["score"] == 7 / 8 and gate["n"] == 8 and gate["items"] == 3
    assert gate["pass_at_k"] == 1.0  # every item passed at least once
    # pass^3: only "always" passed every trial; boom's errored trial counts as a failure (not left out)
    assert gate["pass_all_k"] == pytest.approx(1 / 3)
    # the curve, k = 1..3, each item's unbiased estimate averaged: always 3 of 3, flaky and boom 2 of 3
    curve = gate["pass_k_curve"]
    assert [p["k"] for p in curve] == [1, 2, 3] and all(p["items"] == 3 for p in curve)
    assert [p["pass_all_k"] for p in curve] == pytest.approx([7 / 9, 5 / 9, 1 / 3])
    assert [p["pass_at_k"] for p in curve] == pytest.approx([7 / 9, 1.0, 1.0])
    assert all(lo <= p["pass_all_k"] <= hi for p in curve for lo, hi in [p["pass_all_k_ci95"]])
    assert gate["flaky"] == 1 and gate["flaky_items"] == ["f"]


def test_error_bars_are_clustered_by_item() -> None:
    scores = {"a": [1.0, 1.0, 1.0], "b": [0.0, 0.0, 1.0], "c": [0.0, 0.0, 0.0], "d": [1.0, 0.0, 1.0]}

    def agent(question: str) -> str:
        trial = calls.setdefault(question, 0)
        calls[question] += 1
        return "yes" if scores[question][trial] else "no"

    calls: dict[str, int] = {}
    result = run_evals(data=[{"id": k, "input": k} for k in scores], target=agent, scorers=[checks.includes("yes")],
                       repeats=3, concurrency=1)
    bar = result.to_dict()["score_stats"]["includes:yes"]
    expected = stats.estimate(list(scores.values()))
    assert expected is not None and expected.method == "wilson-clustered"
    assert bar["n"] == 12 and bar["items"] == 4
    assert bar["stderr"] == pytest.approx(np.std([np.mean(v) for v in scores.values()], ddof=1) / 2)
    assert bar["ci95"] == pytest.approx(list(expected.ci))
    assert (bar["pass_at_k"], bar["pass_all_k"], bar["flaky"]) == (0.75, 0.25, 2)


def test_without_repeats_records_and_results_have_no_trials(tmp_path: Path) -> None:
    result = run_evals(data=DATA, target=counting_agent(), scorers=SCORERS, concurrency=1)
    out = result.to_dict()
    assert all("trials" not in item for item in out["items"])
    assert "repeats" not in out["summary"] and "trials" not in out["summary"]
    threshold = out["threshold_results"][0]
    assert "uncertain" not in threshold and "pass_at_k" not in threshold
    assert mastra_fields(threshold)["average_score"] == result.threshold_results[0].average_score


def test_repeats_in_the_spec_and_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "coin.py").write_text(
        "import random\nrng = random.Random(7)\n\ndef answer(q):\n    return 'ok' if rng.random() < 0.7 else 'no'\n")
    spec = {"version": 1, "data": [{"id": f"i{i}", "input": str(i)} for i in range(20)],
            "target": {"type": "python", "function": "coin:answer"}, "concurrency": 1, "repeats": 2,
            "scorers": [{"type": "includes", "value": "ok"}]}
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    assert run_cli("run", "-o", "a.json", cwd=tmp_path).code == 0
    a = json.loads((tmp_path / "a.json").read_text())
    assert a["summary"]["repeats"] == 2 and all(len(i["trials"]) == 2 for i in a["items"])
    result = run_cli("run", "-o", "b.json", "--repeats", "5", cwd=tmp_path)
    assert result.code == 0, result.output
    b = json.loads((tmp_path / "b.json").read_text())
    assert b["summary"]["trials"] == 100 and b["score_stats"]["includes:ok"]["n"] == 100
    assert re.search(r"\d\.\d{3} (± \d|\[\d)", result.stdout)  # the terminal shows the error bar
    spec["repeats"] = 0
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    bad = run_cli("run", cwd=tmp_path)
    assert bad.code == 2 and "repeats" in bad.stderr


def test_every_trial_is_its_own_request_never_one_cached_reply(tmp_path: Path) -> None:
    with FakeServer() as server:
        write_cached_spec(tmp_path, server.url, {"dir": ".cache"}, n=4)
        first = run_cached(tmp_path, "--repeats", "3")
        assert server.count == 12  # 4 items x 3 trials: no trial served another's reply
        assert first["summary"]["network"]["cache_hits"] == 0
        second = run_cached(tmp_path, "--repeats", "3")
        assert server.count == 12 and second["summary"]["network"]["cache_hits"] == 12  # a re-run replays
        run_cached(tmp_path)  # without repeats: the keys of before this feature
        assert server.count == 16


def test_resume_keeps_finished_items_with_their_trials(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(
        "import os, signal, time\n\ndef answer(q):\n    if q == 'stop' and os.environ.get('STOP'):\n"
        "        os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, not a raise\n"
        "        time.sleep(5)\n    return 'ok ' + q\n")
    spec = {"version": 1, "data": [{"id": "a", "input": "a"}, {"id": "b", "input": "b"}, {"id": "s", "input": "stop"}],
            "target": {"type": "python", "function": "agent:answer"}, "concurrency": 1, "repeats": 2,
            "gates": [{"type": "includes", "value": "ok"}]}
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    import os

    killed = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "-o", "r.json"], cwd=tmp_path,
                            env={**os.environ, "STOP": "1"}, capture_output=True, text=True, timeout=60)
    assert killed.returncode == 130
    head, *journal = [json.loads(line) for line in (tmp_path / "r.json.items.jsonl").read_text().splitlines()]
    assert head["index"] is None and head["evalgate_journal"]["checks"]  # the run's checks, no item
    assert [r["id"] for r in journal] == ["a", "b"] and all(len(r["trials"]) == 2 for r in journal)
    resumed = run_cli("run", "-o", "r.json", "--resume", cwd=tmp_path)
    assert resumed.code == 0, resumed.output
    out = json.loads((tmp_path / "r.json").read_text())
    assert out["summary"]["resumed_items"] == 2 and out["summary"]["trials"] == 6
    assert out["gate_results"][0]["score"] == 1.0 and out["gate_results"][0]["n"] == 6


# ---- statistical threshold rules ----


def _threshold(rate_items: list[float], threshold: Any) -> Any:
    data = [{"id": f"i{n}", "input": "yes" if v else "no"} for n, v in enumerate(rate_items)]
    return run_evals(data=data, target=lambda q: q, scorers=[{"scorer": checks.includes("yes"),
                                                              "threshold": threshold}])


def test_confidence_rule_passes_inside_misses_outside_and_resolves_uncertain() -> None:
    eighty = [1.0] * 80 + [0.0] * 20  # 0.80, Wilson [0.711, 0.867]
    inside = _threshold(eighty, {"min": 0.7, "confidence": 0.95})
    assert inside.verdict == "passed" and inside.threshold_results[0].uncertain is False
    outside = _threshold(eighty, {"min": 0.9, "confidence": 0.95})
    assert outside.verdict == "scored" and outside.threshold_results[0].uncertain is False
    overlap = _threshold(eighty, {"min": 0.82, "confidence": 0.95})  # average below, interval overlaps
    result = overlap.threshold_results[0]
    assert result.uncertain is True and result.passed and overlap.verdict == "passed"  # noise alone never fails
    assert result.interval == pytest.approx(stats.wilson(0.8, 100))
    strict = _threshold(eighty, {"min": 0.82, "confidence": 0.95, "when_uncertain": "fail"})
    assert strict.threshold_results[0].uncertain is True and strict.verdict == "scored"
    # a release gate must prove quality: 0.86 average, but the interval reaches below 0.82
    release = _threshold([1.0] * 86 + [0.0] * 14, {"min": 0.82, "confidence": 0.95, "when_uncertain": "fail"})
    assert release.verdict == "scored" and release.threshold_results[0].uncertain is True
    # a max bound: lower is better
    low = _threshold([1.0] * 5 + [0.0] * 95, {"max": 0.2, "confidence": 0.9})
    assert low.verdict == "passed" and low.threshold_results[0].uncertain is False


def test_confidence_is_validated_in_the_spec(tmp_path: Path) -> None:
    for bad, words in (({"min": 0.5, "confidence": 1.5}, "confidence"),
                       ({"min": 0.5, "when_uncertain": "fail"}, "needs `confidence`"),
                       ({"min": 0.5, "confidence": 0.9, "when_uncertain": "maybe"}, "when_uncertain")):
        spec = {"version": 1, "data": [{"input": "x", "output": "x"}],
                "scorers": [{"type": "includes", "value": "x", "threshold": bad}]}
        (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
        result = run_cli("validate", cwd=tmp_path)
        assert result.code == 2 and words in result.stderr, result.output


# ---- end to end against truth ----


def test_run_evals_intervals_cover_a_seeded_agents_true_rate() -> None:
    """A python target failing at a known, seeded rate, run end to end: the reported 95% intervals cover
    the true rate about 95% of the time, and agree with the pure functions on the same data."""
    rng = random.Random(2024)
    true_rate, runs, covered = 0.7, 200, 0

    def agent(question: str) -> str:
        return "ok" if rng.random() < true_rate else "wrong"

    data = [{"id": f"q{i}", "input": f"q{i}"} for i in range(30)]
    for run in range(runs):
        repeats = 5 if run % 2 else None
        result = run_evals(data=data, target=agent, gates=[checks.includes("ok")], repeats=repeats, concurrency=1)
        gate = result.gate_results[0]
        covered += gate.ci95[0] <= true_rate <= gate.ci95[1]
        if run < 4:
            by_item = [[t.gates["includes:ok"] for t in item.trials] if item.trials else [item.gates["includes:ok"]]
                       for item in result.items]
            assert tuple(gate.ci95) == stats.estimate(by_item).ci
    assert 0.90 <= covered / runs <= 0.99


def test_repeats_on_recorded_runs_is_warned(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{input: x, output: x}]\nrepeats: 3\ngates:\n  - type: includes\n    value: x\n")
    result = run_cli("validate", cwd=tmp_path)
    assert result.code == 0 and "evalgate.yaml:3: repeats: the recorded target replays the same run" in result.stderr
    # With a judge, every trial asks it again: repeats then measure how much its verdicts vary.
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{input: x, output: x}]\nrepeats: 3\njudge: {model: m, api_key_env: null}\n"
        "scorers:\n  - type: answer_relevancy\n")
    judged = run_cli("validate", cwd=tmp_path)
    assert judged.code == 0 and "repeats" not in judged.stderr
