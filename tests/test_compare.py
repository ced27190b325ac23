"""Comparison with a baseline: paired per entry, regressions fail the verdict, incomparable entries and changed
items are left out, and the error rates hold in simulation through `compare_results` itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import REPO, run_cli
from scipy import stats as sp

import evalgate
from evalgate import checks, run_evals
from evalgate.decide.comparison import CompareOptions, compare_results

RUNS = 1000


def coin_results(rates: dict[str, float] | float, items: int = 100, seed: int = 0, repeats: int | None = None,
                 **kwargs: Any) -> Any:
    """A run of an agent that calls its tool with probability `rate` (per item id when a mapping)."""
    rng = np.random.default_rng(seed)

    def agent(question: str) -> dict[str, Any]:
        rate = rates if isinstance(rates, float) else rates.get(question, 0.9)
        calls = [{"name": "get_weather", "args": {}}] if rng.random() < rate else []
        return {"text": "ok", "tool_calls": calls}

    return run_evals(data=[{"id": f"q{i}", "input": f"q{i}"} for i in range(items)], target=agent,
                     concurrency=1, repeats=repeats,
                     scorers=[{"scorer": checks.called_tool("get_weather"), "threshold": 0.5}], **kwargs)


def test_a_real_drop_is_regressed_and_fails_the_verdict() -> None:
    base, head = coin_results(0.95, seed=1), coin_results(0.6, seed=2)
    comparison = evalgate.compare(base, head)
    entry = comparison.to_dict()["entries"][0]
    assert entry["status"] == "regressed" and entry["method"] == "mcnemar-newcombe"
    key = "called_tool:get_weather"
    assert entry["delta"] == pytest.approx(head.scores[key] - base.scores[key])
    assert entry["ci95"][1] < 0 and entry["pairs"] == 100
    regressed = sum(f["direction"] == "pass->fail" for f in comparison.flipped)
    improved = sum(f["direction"] == "fail->pass" for f in comparison.flipped)
    assert entry["p_value"] == pytest.approx(sp.binomtest(min(regressed, improved), regressed + improved).pvalue)
    assert comparison.flipped[0]["direction"] == "pass->fail"  # pass -> fail first
    assert [f["direction"] for f in comparison.flipped] == sorted(f["direction"] for f in comparison.flipped)[::-1]
    assert len(comparison.regressions) == 1


def test_the_same_run_twice_is_not_a_regression() -> None:
    base = coin_results(0.8, seed=3)
    comparison = evalgate.compare(base, base)
    entry = comparison.entries[0]
    # nothing changed on any item: unchanged, though Newcombe's interval still allows a small change either way
    assert entry.status == "unchanged" and entry.delta == 0 and entry.ci95[0] < 0 < entry.ci95[1]
    assert comparison.matched_items == 100 and not comparison.flipped and not comparison.regressions


def test_run_with_baseline_fails_with_reason_regression(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(
        "import os, random\nrng = random.Random(int(os.environ['SEED']))\nRATE = float(os.environ['RATE'])\n\n"
        "def answer(q):\n    return 'yes' if rng.random() < RATE else 'no'\n")
    spec = {"version": 1, "data": [{"id": f"q{i}", "input": str(i)} for i in range(120)],
            "target": {"type": "python", "function": "agent:answer"}, "concurrency": 1,
            "scorers": [{"type": "includes", "value": "yes", "threshold": 0.3}]}
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))

    def run(rate: float, seed: int, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "RATE": str(rate), "SEED": str(seed), "GITHUB_SHA": f"{seed:040d}"}
        return subprocess.run([sys.executable, "-m", "evalgate.cli", "run", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)

    assert run(0.9, 1, "-o", "base.json").returncode == 0
    same = run(0.9, 2, "-o", "same.json", "--baseline", "base.json")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "Compared with baseline" in same.stdout
    worse = run(0.5, 3, "-o", "head.json", "--baseline", "base.json")
    assert worse.returncode == 1, worse.stdout + worse.stderr
    head = json.loads((tmp_path / "head.json").read_text())
    assert head["verdict"] == "failed" and head["summary"]["failure_reason"] == "regression"
    assert head["threshold_results"][0]["passed"]  # 0.5 >= 0.3: only the comparison failed it
    assert head["comparison"]["baseline"]["git_sha"] == f"{1:040d}"
    assert head["comparison"]["regressions"] == 1 and head["comparison"]["entries"][0]["status"] == "regressed"
    assert "▼" in worse.stdout and "regressed" in worse.stdout
    # `evalgate compare` reaches the same result from the two files
    result = run_cli("compare", "base.json", "same.json", "-o", "cmp.json", cwd=tmp_path)
    assert result.code == 0, result.output
    result = run_cli("compare", "base.json", "head.json", "-o", "cmp.json", cwd=tmp_path)
    assert result.code == 1
    written = json.loads((tmp_path / "cmp.json").read_text())
    assert written["comparison"]["entries"] == head["comparison"]["entries"]
    assert len(written["items"]) == 120
    missing = run_cli("run", "--baseline", "nope.json", cwd=tmp_path)
    assert missing.code == 2 and "nope.json" in missing.stderr and "Traceback" not in missing.output
    (tmp_path / "bad.json").write_text("{\"not\": \"results\"}")
    bad = run_cli("run", "--baseline", "bad.json", cwd=tmp_path)
    assert bad.code == 2 and "not an evalgate results file" in bad.stderr


def test_tracked_scorers_are_compared_but_never_fail() -> None:
    def run(rate: float, seed: int) -> Any:
        rng = np.random.default_rng(seed)
        return run_evals(data=[{"id": f"q{i}", "input": "x"} for i in range(100)], concurrency=1,
                         target=lambda q: "yes" if rng.random() < rate else "no",
                         gates=[checks.excludes("never")], scorers=[checks.includes("yes")])

    comparison = evalgate.compare(run(0.9, 1), run(0.4, 2))
    by_id = {e.id: e for e in comparison.entries}
    assert by_id["includes:yes"].kind == "tracked" and by_id["includes:yes"].status == "regressed"
    assert by_id["excludes:never"].status == "unchanged"
    assert comparison.regressions == []


def test_max_drop_per_entry_and_lower_is_better() -> None:
    def run(rate: float, seed: int) -> Any:
        rng = np.random.default_rng(seed)
        return run_evals(data=[{"id": f"q{i}", "input": "x"} for i in range(200)], concurrency=1,
                         target=lambda q: "sorry" if rng.random() < rate else "sunny",
                         scorers=[{"scorer": checks.includes("sorry"), "threshold": {"max": 0.5}}])

    base, head = run(0.1, 1), run(0.3, 2)
    worse = evalgate.compare(base, head)
    entry = worse.entries[0]
    assert not entry.higher_is_better and entry.delta > 0 and entry.status == "regressed"
    assert entry.ci95[0] > 0  # head - base, as the numbers go: more "sorry"
    assert worse.flipped[0]["direction"] == "pass->fail" and worse.flipped[0]["head_score"] == 1.0
    tolerant = evalgate.compare(base, head, entries={"includes:sorry": {"max_drop": 0.5}})
    assert tolerant.entries[0].status == "unchanged" and tolerant.entries[0].max_drop == 0.5
    better = evalgate.compare(head, base)
    assert better.entries[0].status == "improved"


def test_repeats_compare_item_means_with_a_paired_t() -> None:
    base = coin_results(0.9, items=60, seed=4, repeats=3)
    head = coin_results(0.5, items=60, seed=5, repeats=3)
    entry = evalgate.compare(base, head).entries[0]
    assert entry.method == "paired-t" and entry.status == "regressed" and entry.pairs == 60


def _results(values: dict[str, list[float]], **entry_fields: Any) -> dict[str, Any]:
    """A hand-made results dict: one threshold entry `e` with these per-item scores."""
    scores = [v[0] for v in values.values()]
    return {
        "schema_version": 1, "name": "s", "verdict": "passed", "scores": {"e": sum(scores) / len(scores)},
        "gate_results": [], "summary": {"total_items": len(values), "errored_items": 0},
        "threshold_results": [{"id": "e", "passed": True, "average_score": sum(scores) / len(scores),
                               "threshold": 0.1, **entry_fields}],
        "items": [{"id": k, "scores": {"e": v[0]}, "data_hash": f"h-{k}"} for k, v in values.items()],
    }


@pytest.mark.parametrize("threshold", [{"max": 0.3}, {"min": 0.1, "max": 0.9}, 0.1])
def test_a_threshold_is_read_typed_from_a_dict_and_from_a_results_file(tmp_path: Path, threshold: Any) -> None:
    """The direction an entry is compared in comes from its typed threshold (ThresholdRange), whichever form the
    results come in: only a `max` says lower is better. A dict whose threshold is none is refused, not guessed."""
    base = _results({f"i{n}": [1.0 if n % 3 else 0.0] for n in range(30)}, threshold=threshold)
    head = _results({f"i{n}": [0.0] for n in range(30)}, threshold=threshold)
    lower_is_better = isinstance(threshold, dict) and "min" not in threshold
    paths = []
    for name, results in (("base", base), ("head", head)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(results))
        paths.append(path)
    for entry in (compare_results(base, head).entries[0], evalgate.compare(*paths).entries[0]):
        assert entry.higher_is_better is not lower_is_better
        assert entry.status == ("improved" if lower_is_better else "regressed")
    head["threshold_results"][0]["threshold"] = "high"
    with pytest.raises(ValueError, match="threshold"):
        compare_results(base, head)


def test_an_entry_nothing_scored_on_one_side_has_no_average_there(tmp_path: Path) -> None:
    """A gate no result could be scored for is written with a null score: compared, its average is None on
    that side, read from a file or given as a dict alike (the terminal once printed `improved nan → 1.00`)."""
    base = _results({f"i{n}": [1.0] for n in range(10)})
    base["threshold_results"][0]["average_score"] = None
    head = _results({f"i{n}": [1.0] for n in range(10)})
    (tmp_path / "base.json").write_text(json.dumps(base))
    (tmp_path / "head.json").write_text(json.dumps(head))
    for entry in (compare_results(base, head).entries[0],
                  evalgate.compare(tmp_path / "base.json", tmp_path / "head.json").entries[0]):
        assert entry.base_average is None and entry.head_average == 1.0
    done = run_cli("compare", "base.json", "head.json", cwd=tmp_path)
    assert done.code == 0 and "nan" not in done.output, done.output


def test_changed_parameters_and_judges_make_an_entry_incomparable() -> None:
    base = _results({f"i{n}": [1.0] for n in range(30)}, params_hash="aaa")
    head = _results({f"i{n}": [0.0] for n in range(30)}, params_hash="bbb")
    entry = compare_results(base, head).entries[0]
    assert entry.status == "incomparable" and entry.reason == "its parameters changed"
    assert compare_results(base, head).regressions == []
    judged_base = _results({f"i{n}": [1.0] for n in range(30)}, judged=True)
    judged_head = _results({f"i{n}": [0.0] for n in range(30)}, judged=True)
    judged_base["summary"]["judge"] = {"model": "gpt-4o-mini", "prompts": {"faithfulness": "111"}}
    judged_head["summary"]["judge"] = {"model": "gpt-4o", "prompts": {"faithfulness": "111"}}
    entry = compare_results(judged_base, judged_head).entries[0]
    assert entry.status == "incomparable" and "another model" in entry.reason
    judged_head["summary"]["judge"] = {"model": "gpt-4o-mini", "prompts": {"faithfulness": "222"}}
    entry = compare_results(judged_base, judged_head).entries[0]
    assert entry.status == "incomparable" and "prompts changed (faithfulness)" in entry.reason
    judged_head["summary"]["judge"] = judged_base["summary"]["judge"]
    assert compare_results(judged_base, judged_head).entries[0].status == "regressed"


def test_items_match_by_id_and_changed_data_is_unmatched() -> None:
    base = _results({"a": [1.0], "b": [1.0], "c": [0.0], "gone": [1.0]})
    head = _results({"a": [1.0], "b": [0.0], "c": [0.0], "new": [1.0]})
    head["items"][2]["data_hash"] = "other"  # c asks something else now
    comparison = compare_results(base, head)
    assert (comparison.matched_items, comparison.new_items, comparison.missing_items,
            comparison.changed_items) == (2, 1, 1, 1)
    assert comparison.entries[0].pairs == 2
    assert [(f["item"], f["direction"]) for f in comparison.flipped] == [("b", "pass->fail")]
    assert any("other data" in w for w in comparison.warnings)


def test_options_are_validated_and_recorded() -> None:
    with pytest.raises(ValueError, match="confidence"):
        CompareOptions(confidence=1.2).check()
    with pytest.raises(ValueError, match="max_drop"):
        CompareOptions.from_settings({"entries": {"x": {"max_drop": 2}}})
    options = CompareOptions.from_settings({"confidence": 0.9, "entries": {"x": {"max_drop": 0.1}}}, max_drop=0.02)
    assert options.to_dict() == {"confidence": 0.9, "max_drop": 0.02, "correction": "holm", "errors": "fail",
                                 "when_uncertain": "pass", "entries": {"x": {"max_drop": 0.1}}}


def test_compare_spec_section_is_validated(tmp_path: Path) -> None:
    spec = {"version": 1, "data": [{"input": "x", "output": "x"}], "gates": [{"type": "includes", "value": "x"}],
            "compare": {"max_drop": 1.5}}
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    result = run_cli("validate", cwd=tmp_path)
    assert result.code == 2 and "max_drop" in result.stderr


# ---- calibration through compare_results ----


def _binary_results(outcomes: dict[str, np.ndarray]) -> dict[str, Any]:
    """Results of several 0/1 threshold entries, one trial per item."""
    names = list(outcomes)
    count = len(outcomes[names[0]])
    return {
        "schema_version": 1, "name": "sim", "verdict": "passed", "gate_results": [],
        "scores": {n: float(outcomes[n].mean()) for n in names}, "summary": {"total_items": count, "errored_items": 0},
        "threshold_results": [{"id": n, "passed": True, "average_score": float(outcomes[n].mean()), "threshold": 0.0}
                              for n in names],
        "items": [{"id": f"i{i}", "scores": {n: float(outcomes[n][i]) for n in names}} for i in range(count)],
    }


# The false-alarm rates are enumerated exactly in tests/test_stats.py (bench/exact.py); these check that
# compare_results decides with those tests.


def test_the_regression_p_shown_is_the_exact_one_the_decision_used() -> None:
    """4 of 20 items pass -> fail, none the other way: p = 1/16 one-sided, not significant, and the p the
    entry reports for its status is that one (not the two-sided p of no change)."""
    base = np.array([1.0] * 5 + [0.0] * 15)
    head = np.array([1.0] + [0.0] * 19)
    entry = compare_results(_binary_results({"g": base}), _binary_results({"g": head})).entries[0]
    assert entry.status == "uncertain" and entry.p_regression == pytest.approx(1 / 16)
    assert entry.p_decision == entry.p_regression and entry.alpha == pytest.approx(0.025)
    assert entry.p_value == pytest.approx(1 / 8)


def test_entries_constant_on_both_runs_do_not_dilute_a_real_drop() -> None:
    """Three entries that never moved and one with 9 of 10 discordant pairs against head (p = 11/1024):
    Holm over four (0.025/4) would leave it uncertain; the constant ones cannot reach the level and leave
    the family (Tarone), so it is regressed."""
    constant = np.ones(50)
    base = np.array([1.0] * 40 + [0.0] * 10)
    head = base.copy()
    head[:9] = 0.0
    head[45] = 1.0
    outcomes = {"drop": base, "a": constant, "b": constant, "c": constant}
    comparison = compare_results(_binary_results(outcomes), _binary_results({**outcomes, "drop": head}))
    entry = next(e for e in comparison.entries if e.id == "drop")
    assert entry.p_regression == pytest.approx(11 / 1024)
    assert entry.status == "regressed" and entry.alpha == pytest.approx(0.025)
    assert [e.status for e in comparison.entries if e.id != "drop"] == ["unchanged"] * 3


def _with_errors(results: dict[str, Any], errored: range) -> dict[str, Any]:
    for index in errored:
        record = results["items"][index]
        record["scores"] = {}
        record["error"] = "TimeoutError: the agent did not answer"
    results["summary"]["errored_items"] = len(errored)
    return results


def test_an_item_that_errors_on_head_counts_as_a_failure() -> None:
    """A head that errors on 10 of 100 items that passed on base: by default they are failures (Δ -0.10,
    regressed); `errors: skip` leaves them out (Δ 0 on 90 pairs), as before."""
    passing = np.ones(100)
    base = _binary_results({"g": passing})
    head = _with_errors(_binary_results({"g": passing}), range(10))
    entry = compare_results(base, head).entries[0]
    assert entry.pairs == 100 and entry.errored_pairs == 10
    assert entry.delta == pytest.approx(-0.10) and entry.status == "regressed"
    comparison = compare_results(base, head)
    assert any("errored" in w and "failure" in w for w in comparison.warnings)
    skipped = compare_results(base, head, CompareOptions(errors="skip")).entries[0]
    assert skipped.pairs == 90 and skipped.delta == 0.0 and skipped.status == "unchanged"


def test_a_scorer_that_raises_on_head_counts_as_a_failure_of_its_entry() -> None:
    """A real run whose scorer raises on 12 of 60 items (a judge that stops answering, say): those items have
    no score, only `scorer_errors`; compared with a base that passed them, they count as failures."""

    def grader(failing: set[str]) -> Any:
        def polite(item: Any, run: Any) -> float:
            if item.id in failing:
                raise RuntimeError("the judge's reply was no JSON")
            return 1.0
        return polite

    data = [{"id": f"q{i}", "input": f"q{i}"} for i in range(60)]

    def agent(question: str) -> dict[str, Any]:
        return {"text": "ok"}

    base = run_evals(data=data, target=agent, concurrency=1, scorers=[{"scorer": grader(set()), "threshold": 0.5}])
    head = run_evals(data=data, target=agent, concurrency=1, max_errors=60,
                     scorers=[{"scorer": grader({f"q{i}" for i in range(12)}), "threshold": 0.5}])
    assert head.to_dict()["items"][0]["scorer_errors"]
    entry = evalgate.compare(base, head).entries[0]
    assert entry.pairs == 60 and entry.errored_pairs == 12 and entry.delta == pytest.approx(-0.2)
    assert entry.status == "regressed"
    skipped = evalgate.compare(base, head, errors="skip").entries[0]
    assert skipped.pairs == 48 and skipped.delta == 0.0


def test_matched_averages_stand_beside_delta() -> None:
    """Items added in the PR move the head's whole-run average; delta compares the matched items only."""
    base = _binary_results({"g": np.array([1.0, 1.0, 1.0, 0.0])})
    head = _binary_results({"g": np.array([1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])})
    entry = compare_results(base, head).to_dict()["entries"][0]
    assert entry["base_average"] == 0.75 and entry["head_average"] == 0.75
    assert entry["base_matched"] == 0.75 and entry["head_matched"] == 0.5
    assert entry["delta"] == pytest.approx(entry["head_matched"] - entry["base_matched"])


def test_when_uncertain_fail_needs_the_drop_shown_within_max_drop() -> None:
    """Non-inferiority: 30 noisy items cannot show a drop within 0.05, so the entry fails under
    when_uncertain: fail; 400 identical items can."""
    rng = np.random.default_rng(5)
    small = (rng.random(30) < 0.8).astype(float)
    flipped = small.copy()
    flipped[:3] = 1.0 - flipped[:3]
    options = CompareOptions(max_drop=0.05, when_uncertain="fail")
    comparison = compare_results(_binary_results({"g": small}), _binary_results({"g": flipped}), options)
    entry = comparison.entries[0]
    assert entry.status == "uncertain" and entry.fails and comparison.failures == [entry]
    assert "when_uncertain" in (entry.reason or "")
    assert not compare_results(_binary_results({"g": small}), _binary_results({"g": flipped}),
                               CompareOptions(max_drop=0.05)).failures
    large = np.ones(400)
    sure = compare_results(_binary_results({"g": large}), _binary_results({"g": large}), options).entries[0]
    assert sure.status == "unchanged" and not sure.fails


def test_compare_cli_takes_the_error_policy_and_when_uncertain(tmp_path: Path) -> None:
    base = _binary_results({"g": np.array([1.0] * 5 + [0.0] * 15)})
    head = _binary_results({"g": np.array([1.0] + [0.0] * 19)})
    (tmp_path / "base.json").write_text(json.dumps(base))
    (tmp_path / "head.json").write_text(json.dumps(head))
    lenient = run_cli("compare", tmp_path / "base.json", tmp_path / "head.json")
    assert lenient.code == 0 and "p = 0.0625 (level 0.025)" in lenient.stdout
    strict = run_cli("compare", tmp_path / "base.json", tmp_path / "head.json", "--when-uncertain", "fail",
                     "--errors", "skip", "-o", tmp_path / "out.json")
    assert strict.code == 1 and "uncertain under when_uncertain: fail" in strict.stdout
    written = json.loads((tmp_path / "out.json").read_text())
    assert written["comparison"]["settings"]["errors"] == "skip"
    assert written["comparison"]["failures"] == 1 and written["summary"]["failure_reason"] == "regression"


def test_a_different_number_of_repeats_is_warned() -> None:
    base = _binary_results({"g": np.ones(10)})
    head = _binary_results({"g": np.ones(10)})
    head["summary"]["repeats"] = 3
    comparison = compare_results(base, head)
    assert any("baseline ran 1 trial per item, this run 3" in w for w in comparison.warnings)


def test_every_entry_reports_the_drop_it_can_detect() -> None:
    """K = 1, 100 items at 0.7: about 0.17 at 80% power (one-sided 2.5%), smaller with more items."""
    rng = np.random.default_rng(8)
    entries = []
    for items in (100, 400):
        rate = np.full(items, 0.7)
        base = _binary_results({"g": (rng.random(items) < rate).astype(float)})
        head = _binary_results({"g": (rng.random(items) < rate).astype(float)})
        entries.append(compare_results(base, head).entries[0])
    assert 0.13 <= entries[0].mde <= 0.21
    assert entries[1].mde < entries[0].mde * 0.6


def test_a_drop_from_085_to_065_on_100_items_is_regressed_at_least_80_percent() -> None:
    rng = np.random.default_rng(2103)
    found = 0
    for _ in range(RUNS):
        base = _binary_results({"g": (rng.random(100) < 0.85).astype(float)})
        head = _binary_results({"g": (rng.random(100) < 0.65).astype(float)})
        found += bool(compare_results(base, head).regressions)
    assert found / RUNS >= 0.80


def test_the_flaky_demo_passes_on_noise_and_fails_on_a_real_drop(tmp_path: Path) -> None:
    """examples/flaky, as docs/statistics.md runs it: the base branch, the same agent with new noise, a regression."""
    folder = REPO / "examples" / "flaky"

    def run(rate: str, seed: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "FLAKY_FAILURE_RATE": rate, "FLAKY_SEED": seed}
        return subprocess.run([sys.executable, "-m", "evalgate.cli", "run", *args], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=120)

    base = tmp_path / "base.json"
    assert run("0.1", "7", "-o", str(base)).returncode == 0
    same = run("0.1", "8", "--baseline", str(base), "-o", str(tmp_path / "same.json"))
    assert same.returncode == 0, same.stdout + same.stderr
    assert json.loads((tmp_path / "same.json").read_text())["comparison"]["regressions"] == 0
    worse = run("0.35", "7", "--baseline", str(base), "-o", str(tmp_path / "head.json"))
    assert worse.returncode == 1, worse.stdout + worse.stderr
    head = json.loads((tmp_path / "head.json").read_text())
    assert head["summary"]["failure_reason"] == "regression" and head["summary"]["repeats"] == 5
    assert {e["id"]: e["status"] for e in head["comparison"]["entries"]} == {
        "called_tool:get_weather": "regressed", "apologies": "regressed", "brooklyn-answer": "regressed",
        # the 0/1 entries' pass^5, compared too: reported, never failing, unless `compare.entries` names them
        "called_tool:get_weather.pass^k": "regressed", "apologies.pass^k": "regressed"}
    reliability = [e for e in head["comparison"]["entries"] if e.get("measure") == "pass^k"]
    assert all(e["kind"] == "tracked" and e["k"] == 5 and not e.get("fails") for e in reliability)
    failing = {e["id"] for e in head["comparison"]["entries"] if e.get("fails")}
    assert failing == {"called_tool:get_weather", "apologies"}  # the thresholds (brooklyn-answer is tracked)


def test_per_turn_entries_carry_error_bars_and_are_compared_by_turn() -> None:
    def run(good: int) -> Any:
        data = [{"id": f"c{i}", "turns": [
            {"input": "hi", "output": "hello", "gates": [{"type": "includes", "value": "hello"}]},
            {"input": "weather?", "output": "sunny" if i < good else "no idea",
             "gates": [{"type": "includes", "value": "sunny"}]},
        ]} for i in range(80)]
        return run_evals(data=data, scorers=[checks.includes("hello")])

    base, head = run(78), run(40)
    turn = head.turn_results[1].gate_results[0]
    assert turn.n == 80 and turn.items == 80 and turn.ci95[0] < 0.5 < turn.ci95[1]
    comparison = evalgate.compare(base, head)
    by_turn = {(e.turn, e.id): e for e in comparison.entries}
    assert by_turn[(1, "includes:sunny")].status == "regressed"
    assert by_turn[(0, "includes:hello")].status == "unchanged"
    assert by_turn[(None, "includes:hello")].kind == "tracked"
    assert {f["turn"] for f in comparison.flipped} == {1}


def test_a_compare_entry_naming_no_entry_is_warned_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{input: x, output: x}]\nscorers:\n  - type: includes\n    value: x\n"
        "compare:\n  entries:\n    includes:y: {max_drop: 0.1}\n    includes:x: {max_drop: 0.1}\n"
        "    includes:x.pass^k: {max_drop: 0.1}\n    includes:z.pass^k: {max_drop: 0.1}\n")
    result = run_cli("validate", cwd=tmp_path)
    assert result.code == 0, result.output
    assert "evalgate.yaml:8: compare.entries: `includes:y` is not the id of a gate or scorer" in result.stderr
    # an entry's pass^k is named `ID.pass^k`: known for an entry of the spec, warned for another
    assert "evalgate.yaml:11: compare.entries: `includes:z.pass^k` is not the id" in result.stderr
    assert result.stderr.count("is not the id") == 2


def test_a_compare_entry_naming_no_entry_is_warned_once_a_streamed_data_set_was_read(tmp_path: Path) -> None:
    """A recorded data file is streamed: its per-turn ids are known only at the end of the run, where a
    typo is warned (stderr, `summary.warnings`) and an id only a turn declares is not."""
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: data.jsonl\ntarget: {type: recorded}\nscorers:\n  - type: includes\n    value: x\n"
        "compare:\n  entries:\n    greet: {max_drop: 0.1}\n    includes:y: {max_drop: 0.1}\n")
    turn = {"input": "hi", "output": "hello", "gates": [{"type": "includes", "value": "hello", "id": "greet"}]}
    (tmp_path / "data.jsonl").write_text(json.dumps({"id": "a", "turns": [turn]}) + "\n"
                                         + json.dumps({"id": "b", "input": "x", "output": "x"}) + "\n")
    warning = ("evalgate.yaml:10: compare.entries: `includes:y` is not the id of a gate or scorer; "
               "did you mean `includes:x`?")
    for args in (("run", "-o", "out.json"), ("validate",)):
        result = run_cli(*args, cwd=tmp_path)
        assert result.code == 0, result.output
        assert f"warning: {warning}" in result.stderr and result.stderr.count("is not the id") == 1, result.stderr
    assert json.loads((tmp_path / "out.json").read_text())["summary"]["warnings"] == [warning]


def test_entries_only_on_one_side_are_said() -> None:
    base = _results({f"i{n}": [1.0] for n in range(10)})
    head = _results({f"i{n}": [1.0] for n in range(10)})
    head["threshold_results"][0]["id"] = "renamed"
    head["scores"] = {"renamed": 1.0}
    for item in head["items"]:
        item["scores"] = {"renamed": 1.0}
    comparison = compare_results(base, head)
    assert comparison.entries[0].status == "incomparable" and comparison.entries[0].reason == "not in the baseline"
    assert "1 entries of the baseline are not in this run: e" in comparison.warnings


def test_compare_output_keeps_a_lone_surrogate_and_redacts_a_known_secret(tmp_path: Path) -> None:
    """`compare -o` rewrites the results as a run writes them: no crash on a lone surrogate, no secret."""
    secret = "ghp_compare9a8b7c6d5e4f"
    rows = [{"id": "a", "input": "lone \ud800 here", "output": {"text": f"sunny, token {secret}"}},
            {"id": "b", "input": "ok", "output": {"text": "rain"}}]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "evalgate.yaml").write_text("version: 1\nname: s\ndata: runs.jsonl\ntarget: {type: recorded}\n"
                                            "scorers:\n  - type: includes\n    value: sunny\n")
    for name in ("base.json", "head.json"):
        assert run_cli("run", "-o", name, cwd=tmp_path).code == 0
    head = json.loads((tmp_path / "head.json").read_text())
    head["items"][0]["output"]["text"] += f" {secret}"  # as if written before the secret was known
    (tmp_path / "head.json").write_text(json.dumps(head))
    env = {**os.environ, "GITHUB_TOKEN": secret}
    done = subprocess.run([sys.executable, "-m", "evalgate.cli", "compare", "base.json", "head.json", "-o", "cmp.json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    written = (tmp_path / "cmp.json").read_text()
    assert secret not in written
    items = json.loads(written)["items"]
    assert items[0]["input"] == "lone \ud800 here" and items[0]["output"]["text"].endswith("***")
    assert "comparison" in json.loads(written)


def test_compare_output_writes_a_number_no_json_holds_as_null(tmp_path: Path) -> None:
    """A results file read back may hold `Infinity` or `NaN` literals: `compare -o` writes strict JSON."""
    (tmp_path / "runs.jsonl").write_text('{"id": "a", "input": "q", "output": {"text": "sunny"}}\n')
    (tmp_path / "evalgate.yaml").write_text("version: 1\nname: s\ndata: runs.jsonl\ntarget: {type: recorded}\n"
                                            "scorers:\n  - type: includes\n    value: sunny\n")
    assert run_cli("run", "-o", "base.json", cwd=tmp_path).code == 0
    head = json.loads((tmp_path / "base.json").read_text())
    head["summary"]["duration_s"] = float("inf")
    head["extra"] = [float("nan")]
    (tmp_path / "head.json").write_text(json.dumps(head))
    result = run_cli("compare", "base.json", "head.json", "-o", "cmp.json", cwd=tmp_path)
    assert result.code == 0, result.stderr

    def strict(literal: str) -> None:
        raise ValueError(literal)

    written = json.loads((tmp_path / "cmp.json").read_text(), parse_constant=strict)
    assert written["summary"]["duration_s"] is None and written["extra"] == [None] and "comparison" in written


def test_compare_names_the_file_that_is_no_results(tmp_path: Path) -> None:
    (tmp_path / "runs.jsonl").write_text('{"id": "a", "input": "q", "output": {"text": "sunny"}}\n')
    (tmp_path / "evalgate.yaml").write_text("version: 1\nname: s\ndata: runs.jsonl\ntarget: {type: recorded}\n"
                                            "scorers:\n  - type: includes\n    value: sunny\n")
    assert run_cli("run", "-o", "good.json", cwd=tmp_path).code == 0
    (tmp_path / "junk.json").write_text('{"not": "results"}')
    for args in (("junk.json", "good.json"), ("good.json", "junk.json")):
        result = run_cli("compare", *args, cwd=tmp_path)
        assert result.code == 2 and "Traceback" not in result.output
        expected = "evalgate compare: error: junk.json: not an evalgate results file"
        assert result.stderr.startswith(expected), result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_a_lone_surrogate_in_a_key_of_an_output_compares(tmp_path: Path) -> None:
    """A run writes a tool call's argument named with a lone surrogate; comparing with its results works."""
    call = {"name": "lookup", "args": {"city\ud800": "Oslo"}}
    row = {"id": "a", "input": "q", "output": {"text": "sunny", "tool_calls": [call]}}
    (tmp_path / "runs.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "evalgate.yaml").write_text("version: 1\nname: s\ndata: runs.jsonl\ntarget: {type: recorded}\n"
                                            "scorers:\n  - type: includes\n    value: sunny\n")
    assert run_cli("run", "-o", "base.json", cwd=tmp_path).code == 0
    written = json.loads((tmp_path / "base.json").read_text())["items"][0]["output"]
    assert "city\ud800" in written["tool_calls"][0]["args"]
    for args in (("compare", "base.json", "base.json", "-o", "cmp.json"),
                 ("run", "--baseline", "base.json", "-o", "h.json")):
        result = run_cli(*args, cwd=tmp_path)
        assert result.code == 0, result.output
    assert json.loads((tmp_path / "cmp.json").read_text())["comparison"]["matched_items"] == 1
    assert json.loads((tmp_path / "h.json").read_text())["comparison"]["matched_items"] == 1


def test_a_score_no_float_holds_is_no_score_to_compare(tmp_path: Path) -> None:
    (tmp_path / "runs.jsonl").write_text('{"id": "a", "input": "q", "output": {"text": "sunny"}}\n'
                                         '{"id": "b", "input": "q", "output": {"text": "rain"}}\n')
    (tmp_path / "evalgate.yaml").write_text("version: 1\nname: s\ndata: runs.jsonl\ntarget: {type: recorded}\n"
                                            "scorers:\n  - type: includes\n    value: sunny\n")
    assert run_cli("run", "-o", "base.json", "--repeats", "2", cwd=tmp_path).code == 0
    head = json.loads((tmp_path / "base.json").read_text())
    head["items"][0]["trials"][0]["scores"]["includes:sunny"] = 10**400  # an edited file: no run writes it
    (tmp_path / "head.json").write_text(json.dumps(head))
    result = run_cli("compare", "base.json", "head.json", cwd=tmp_path)
    assert result.code == 0 and "Traceback" not in result.output, result.output


@pytest.mark.parametrize("repeats", [False, True], ids=["item", "trial"])
def test_a_score_outside_zero_to_one_is_no_score_to_compare(tmp_path: Path, repeats: bool) -> None:
    """No run writes a score outside [0, 1]: an edited file's 1e308 overflowed the paired test (exit 3)."""
    (tmp_path / "runs.jsonl").write_text("".join(f'{{"id": "i{n}", "input": "q", "output": {{"text": '
                                                 f'"{"sunny" if n % 2 else "rain"}"}}}}\n' for n in range(6)))
    (tmp_path / "evalgate.yaml").write_text("version: 1\nname: s\ndata: runs.jsonl\ntarget: {type: recorded}\n"
                                            "scorers:\n  - type: includes\n    value: sunny\n")
    assert run_cli("run", "-o", "base.json", *(["--repeats", "2"] if repeats else []), cwd=tmp_path).code == 0
    head = json.loads((tmp_path / "base.json").read_text())
    for item in head["items"][:3]:
        (item["trials"][0] if repeats else item)["scores"]["includes:sunny"] = 1e308
    (tmp_path / "head.json").write_text(json.dumps(head))
    result = run_cli("compare", "base.json", "head.json", cwd=tmp_path)
    assert result.code == 0 and "Traceback" not in result.output and "internal error" not in result.output, \
        result.output


def test_judge_prompts_that_are_no_mapping_compare_as_no_hashes(tmp_path: Path) -> None:
    (tmp_path / "runs.jsonl").write_text('{"id": "a", "input": "q", "output": {"text": "sunny"}}\n')
    (tmp_path / "evalgate.yaml").write_text("version: 1\nname: s\ndata: runs.jsonl\ntarget: {type: recorded}\n"
                                            "scorers:\n  - type: includes\n    value: sunny\n    threshold: 0.5\n")
    assert run_cli("run", "-o", "base.json", cwd=tmp_path).code == 0
    edited = json.loads((tmp_path / "base.json").read_text())
    edited["threshold_results"][0]["judged"] = True
    edited["summary"]["judge"] = {"model": "m", "prompts": True}
    (tmp_path / "head.json").write_text(json.dumps(edited))
    for args in (("base.json", "head.json"), ("head.json", "base.json"), ("head.json", "head.json")):
        result = run_cli("compare", *args, cwd=tmp_path)
        assert result.code == 0 and "Traceback" not in result.output, result.output


def test_a_run_against_a_baseline_gives_the_same_figures_whatever_order_its_items_finish(tmp_path: Path) -> None:
    """Items finish in any order under concurrency; the comparison pairs them in data order, so its sums (the
    matched averages, Δ, the interval) are the same on every run, to the last digit."""
    (tmp_path / "agent.py").write_text(
        "import random, time\n"
        "def answer(text):\n"
        "    time.sleep(random.random() * 0.01)\n"  # finishing order shuffled from run to run
        "    return text\n", encoding="utf-8")
    (tmp_path / "score.py").write_text(
        "def third(item, run):\n"
        "    return (int(item.input) % 7) / 7 + 1 / 3 if int(item.input) % 7 < 4 else 0.1 * (int(item.input) % 3)\n",
        encoding="utf-8")
    data = "\n".join(f'{{"input": "{n}"}}' for n in range(200))
    (tmp_path / "data.jsonl").write_text(data + "\n", encoding="utf-8")
    (tmp_path / "spec.yaml").write_text(
        "version: 1\ntarget:\n  type: python\n  function: agent:answer\ndata: data.jsonl\nconcurrency: 16\n"
        "scorers:\n  - {type: python, function: 'score:third', id: third}\n", encoding="utf-8")
    evalgate.run_spec(tmp_path / "spec.yaml", output=tmp_path / "base.json")
    figures = set()
    for _ in range(4):
        result = evalgate.run_spec(tmp_path / "spec.yaml", baseline=tmp_path / "base.json")
        [entry] = [e for e in result.comparison["entries"] if e["id"] == "third"]
        figures.add(json.dumps({k: entry[k] for k in ("base_matched", "head_matched", "delta", "ci95")}))
    assert len(figures) == 1, figures


def test_results_built_by_hand_compare_with_only_the_entries_they_name() -> None:
    """`compare` on dicts that hold no verdict (a simulation, a notebook): the entries compared, nothing refused."""
    base = {"gate_results": [{"id": "g", "score": 1.0, "passed": True}],
            "items": [{"id": str(n), "gates": {"g": 1.0}, "scores": {}} for n in range(30)]}
    head = {"gate_results": [{"id": "g", "score": 0.5, "passed": False}],
            "items": [{"id": str(n), "gates": {"g": float(n % 2)}, "scores": {}} for n in range(30)]}
    [entry] = compare_results(base, head).entries
    assert entry.id == "g" and entry.delta == -0.5 and entry.status == "regressed"
