"""`evalgate plan`: the items or repeats a suite needs to find a drop, checked against simulated comparisons
(the drop it says a suite detects is found about 80% of the time by `compare_results` itself)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_cli

from evalgate import checks, run_evals
from evalgate.decide.comparison import compare_results
from evalgate.decide.planning import plan_results


def _results(rng: np.random.Generator, items: int, repeats: int, rate: float) -> dict[str, Any]:
    """Results of one 0/1 threshold entry: items of one pass rate, `repeats` trials each."""
    records = []
    for i in range(items):
        trials = (rng.random(repeats) < rate).astype(float)
        record: dict[str, Any] = {"id": f"i{i}", "scores": {"g": float(trials.mean())}}
        if repeats > 1:
            record["trials"] = [{"trial": t, "scores": {"g": float(v)}, "error": None} for t, v in enumerate(trials)]
        records.append(record)
    return {"schema_version": 1, "name": "sim", "verdict": "passed", "gate_results": [], "scores": {"g": rate},
            "threshold_results": [{"id": "g", "passed": True, "average_score": rate, "threshold": 0.5}],
            "summary": {"total_items": items, "errored_items": 0, "repeats": repeats}, "items": records}


@pytest.mark.parametrize(("items", "repeats"), [(60, 1), (60, 3)])
def test_the_planned_drop_is_found_about_80_percent_of_the_time(items: int, repeats: int) -> None:
    rng = np.random.default_rng(340 + repeats)
    drops = [plan_results(_results(rng, items, repeats, 0.7), 0.1).entries[0].detectable for _ in range(9)]
    drop = float(np.median(drops))
    runs = 250
    found = sum(bool(compare_results(_results(rng, items, repeats, 0.7), _results(rng, items, repeats, 0.7 - drop))
                     .regressions) for _ in range(runs))
    assert 0.72 <= found / runs <= 0.88, (drop, found / runs)


def test_more_repeats_or_items_find_smaller_drops() -> None:
    rng = np.random.default_rng(9)
    one = plan_results(_results(rng, 100, 1, 0.7), 0.1).entries[0]
    five = plan_results(_results(rng, 100, 5, 0.7), 0.1).entries[0]
    assert five.detectable is not None and one.detectable is not None
    assert five.detectable < 0.6 * one.detectable
    assert one.items_needed is not None and one.items_needed > 100  # a drop of 0.1 needs more than 100 items
    assert one.repeats_needed is not None and one.repeats_needed > 1
    bonferroni = plan_results(_results(rng, 100, 1, 0.7), 0.1, entries=10).entries[0]
    assert bonferroni.items_needed is not None and bonferroni.items_needed > one.items_needed


def test_plan_reads_a_real_results_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)

    def agent(question: str) -> dict[str, Any]:
        calls = [{"name": "get_weather", "args": {}}] if rng.random() < 0.8 else []
        return {"text": "ok", "tool_calls": calls}

    result = run_evals(data=[{"id": f"q{i}", "input": f"q{i}"} for i in range(40)], target=agent, concurrency=1,
                       repeats=3, scorers=[{"scorer": checks.called_tool("get_weather"), "threshold": 0.5}])
    path = tmp_path / "results.json"
    path.write_text(json.dumps(result.to_dict()))
    shown = run_cli("plan", path, "--max-drop", "0.1")
    assert shown.code == 0, shown.stderr
    assert "called_tool:get_weather: 40 items × 3 trials can detect a drop of" in shown.stdout
    planned = run_cli("plan", path, "--max-drop", "0.1", "--power", "0.9", "--json")
    entry = json.loads(planned.stdout)["entries"][0]
    assert entry["items"] == 40 and entry["repeats"] == 3 and entry["items_needed"] > 0
    assert json.loads(planned.stdout)["power"] == 0.9


def test_plan_refuses_what_it_cannot_plan_from(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    shown = run_cli("plan", bad, "--max-drop", "0.1")
    assert shown.code == 2 and "cannot plan from it" in shown.stderr and "Traceback" not in shown.stderr
    results = _results(np.random.default_rng(1), 20, 1, 0.7)
    results["compare_settings"] = {"max_drop": 0.1}
    tolerant = tmp_path / "tolerant.json"
    tolerant.write_text(json.dumps(results))
    shown = run_cli("plan", tolerant, "--max-drop", "0.05")
    assert shown.code == 2 and "not above the drop the comparison tolerates" in shown.stderr
