"""The demo in examples/weather: offline, deterministic; one spec passes, the other fails."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO, run_cli

from evalgate.results.model import Results

DEMO = REPO / "examples" / "weather"


def test_demo_passes(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    result = run_cli("run", "--output", out, cwd=DEMO)
    assert result.code == 0, result.output
    assert "verdict: PASSED" in result.stdout
    results = Results.model_validate(json.loads(out.read_text()))
    assert results.verdict == "passed"
    assert results.summary.total_items == 10
    assert results.summary.errored_items == 0
    # the demo shows every kind of entry: gates, a min threshold, a max threshold, a tracked scorer
    assert len(results.gate_results) >= 2
    thresholds = [t.threshold for t in results.threshold_results]
    assert any(isinstance(t, float) or (isinstance(t, dict) and "min" in t) for t in thresholds)
    assert any(isinstance(t, dict) and "max" in t for t in thresholds)
    tracked = set(results.scores) - {t.id for t in results.threshold_results}
    assert tracked


def test_demo_regression_fails(tmp_path: Path) -> None:
    result = run_cli("run", "failing.yaml", cwd=DEMO)
    assert result.code == 1, result.output
    assert "verdict: FAILED" in result.stdout
    assert "called_tool:get_weather" in result.stdout


def test_demo_specs_validate() -> None:
    for spec in ("evalgate.yaml", "failing.yaml"):
        result = run_cli("validate", spec, cwd=DEMO)
        assert result.code == 0, result.output
