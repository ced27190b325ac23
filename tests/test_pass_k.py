"""pass@k and pass^k end to end: a real agent server on 127.0.0.1 whose trials error, the run's curve, the
merge of its shards, a comparison where pass^k regresses, and the reports (docs/statistics.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from fake_agent import FakeServer
from report_runs import CHROMIUM, browser

from evalgate import checks
from evalgate.api import run_evals, run_spec
from evalgate.decide.comparison import compare
from evalgate.report import markdown
from evalgate.report.page_data import entries as page_entries
from evalgate.report.page_data import why as page_why
from evalgate.results.merge import merge
from evalgate.results.model import load_results

__all__ = ["browser"]  # the fixture, used by name
GATE = "called_tool:get_weather"
CITIES = ("Brooklyn", "Paris", "Tokyo", "London", "Cairo", "Oslo", "Lima", "Sydney")


def questions(count: int) -> list[str]:
    return [f"weather in {CITIES[i % len(CITIES)]} #{i}" for i in range(count)]


def write_spec(folder: Path, url: str, count: int, **top: Any) -> Path:
    """`count` items of 5 trials each; every trial the agent answers calls get_weather (the gate)."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "version": 1, "name": "reliability", "repeats": 5, "concurrency": 1, "max_errors": 1000,
        "data": [{"id": f"q{i}", "input": q} for i, q in enumerate(questions(count))],
        "target": {"type": "http", "url": f"{url}/agent", "retries": {"attempts": 1},
                   "response": {"text": "output.text", "tool_calls": "output.tool_calls"}},
        "gates": [{"type": "called_tool", "tool": "get_weather"}],
        **top,
    }
    path = folder / "evalgate.yaml"
    path.write_text(json.dumps(spec))
    return path


def fail_trials(server: FakeServer, errored: dict[int, int], count: int) -> None:
    """Item i's first errored[i] requests are answered 400 (a trial error, not retried); the rest normally."""
    server.faults.clear()
    for i, question in enumerate(questions(count)):
        if errored.get(i):
            server.faults[question] = ["400"] * errored[i]


def test_errored_trials_count_as_failures_of_pass_k(server: FakeServer, tmp_path: Path) -> None:
    """Half the items error on 4 of their 5 trials. The trials that ran all pass, so counting only them
    pass^5 read 1.0; with the errored trials counted as failures it is 0.5, and the curve says the rest."""
    spec = write_spec(tmp_path / "spec", server.url, 10)
    fail_trials(server, {i: 4 for i in range(5, 10)}, 10)
    done = run_cli("run", spec, "-o", tmp_path / "out.json", cwd=tmp_path)
    assert done.code == 0, done.output  # Mastra's average leaves errored trials out: the gate passes
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["summary"]["errored_trials"] == 20
    gate = out["gate_results"][0]
    assert gate["score"] == 1.0 and gate["n"] == 30  # Mastra's average: the scored trials, every one passed
    assert gate["pass_all_k"] == 0.5 and gate["pass_at_k"] == 1.0
    curve = gate["pass_k_curve"]
    assert [p["k"] for p in curve] == [1, 2, 3, 4, 5] and {p["items"] for p in curve} == {10}
    # clean items 1 at every k; the others 1 of 5: pass^1 = 1/5, pass^k = 0 beyond, pass@k = k/5
    assert [p["pass_all_k"] for p in curve] == pytest.approx([0.6, 0.5, 0.5, 0.5, 0.5])
    assert [p["pass_at_k"] for p in curve] == pytest.approx([0.6, 0.7, 0.8, 0.9, 1.0])
    low, high = curve[-1]["pass_all_k_ci95"]
    assert 0.0 < low < 0.5 < high < 1.0
    # the terminal says it in a line of its own, with plain words
    assert "pass^k (all k trials pass)" in done.stdout and "k=5 0.50" in done.stdout, done.stdout
    # the Markdown report folds the curve in a details block; the HTML page's entry carries it
    results = load_results(tmp_path / "out.json")
    text = markdown.render(results)
    assert "<summary>pass^k and pass@k by k" in text and "| 5 | 0.50 [" in text, text
    entry = next(e for e in page_entries(results) if e["id"] == GATE)
    assert entry["passk"][-1][:2] == [5, 0.5]


def test_shards_merge_to_the_same_curve_as_one_run(server: FakeServer, tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec", server.url, 12)
    errored = {1: 2, 4: 5, 7: 1, 10: 3}
    fail_trials(server, errored, 12)
    full = run_spec(spec, output=tmp_path / "full.json").to_dict()
    shards = []
    for index in (1, 2, 3):
        fail_trials(server, errored, 12)  # the same faults for the shard's items
        path = tmp_path / f"shard-{index}.json"
        run_spec(spec, output=path, shard=f"{index}/3")
        shards.append(path)
    merge(shards, tmp_path / "merged.json")
    merged = json.loads((tmp_path / "merged.json").read_text())
    curve = merged["gate_results"][0]["pass_k_curve"]
    assert curve == json.loads(json.dumps(full["gate_results"][0]["pass_k_curve"]))  # exactly, every float
    # the item whose 5 trials all errored counts too (0 of 5), as do items 1, 7 and 10 (3, 4 and 2 of 5)
    assert {p["items"] for p in curve} == {12} and curve[0]["pass_all_k"] == pytest.approx((8 + 0.6 + 0.8 + 0.4) / 12)
    # pass^5: the 8 items that never errored
    assert merged["gate_results"][0]["pass_all_k"] == full["gate_results"][0]["pass_all_k"] == pytest.approx(8 / 12)


def test_a_pass_k_regression_is_flagged_and_gates_when_named(server: FakeServer, tmp_path: Path) -> None:
    """Base: 10 items pass 5 of 5, 10 pass 3 of 5 (two errored trials). Head: every item passes 4 of 5. The
    average is 0.8 on both (errors count as failures), pass^5 falls from 0.5 to 0: a reliability regression."""
    count = 20
    base_spec = write_spec(tmp_path / "base", server.url, count)
    fail_trials(server, {i: 2 for i in range(10, 20)}, count)
    assert run_cli("run", base_spec, "-o", tmp_path / "base.json", cwd=tmp_path).code == 0

    fail_trials(server, dict.fromkeys(range(count), 1), count)
    head_spec = write_spec(tmp_path / "head", server.url, count)
    done = run_cli("compare", tmp_path / "base.json", tmp_path / "base.json", cwd=tmp_path)  # a run against itself
    assert done.code == 0, done.output
    assert run_cli("run", head_spec, "-o", tmp_path / "head.json", cwd=tmp_path).code == 0
    done = run_cli("compare", tmp_path / "base.json", tmp_path / "head.json", "-o", tmp_path / "cmp.json",
                   cwd=tmp_path)
    compared = {e["id"]: e for e in json.loads((tmp_path / "cmp.json").read_text())["comparison"]["entries"]}
    average, reliability = compared[GATE], compared[GATE + ".pass^k"]
    assert average["delta"] == pytest.approx(0.0) and average["status"] != "regressed"
    assert reliability["measure"] == "pass^k" and reliability["k"] == 5 and reliability["pairs"] == count
    assert reliability["base_matched"] == 0.5 and reliability["head_matched"] == 0.0
    assert reliability["delta"] == pytest.approx(-0.5) and reliability["status"] == "regressed"
    assert reliability["kind"] == "tracked" and not reliability.get("fails")  # not named: reported only
    assert f"{GATE}.pass^k" in done.stdout and "regressed" in done.stdout, done.stdout

    # named in the spec's `compare:`, it gates: the run against the baseline fails on it alone
    named = write_spec(tmp_path / "named", server.url, count,
                       compare={"entries": {GATE + ".pass^k": {"max_drop": 0.1}}})
    fail_trials(server, dict.fromkeys(range(count), 1), count)
    done = run_cli("run", named, "--baseline", tmp_path / "base.json", "-o", tmp_path / "gated.json", cwd=tmp_path)
    gated = json.loads((tmp_path / "gated.json").read_text())
    entry = next(e for e in gated["comparison"]["entries"] if e["id"] == GATE + ".pass^k")
    assert entry["kind"] == "gate" and entry["status"] == "regressed" and entry["fails"], entry
    assert entry["max_drop"] == 0.1 and entry["p_decision"] <= entry["alpha"]
    assert [e["id"] for e in gated["comparison"]["entries"] if e.get("fails")] == [GATE + ".pass^k"]
    assert gated["verdict"] == "failed" and done.code == 1, done.output
    assert "pass^5 (all 5 trials of an item pass): dropped 0.50 → 0.00" in done.stdout, done.stdout
    # the reports say why the verdict failed: the HTML page's reasons and entry, the Markdown's status line
    results = load_results(tmp_path / "gated.json")
    shown = page_entries(results)
    assert any(f"{GATE}: pass^5 regressed: base 0.500 → 0.000" in line for line in page_why(results, shown))
    entry = next(e for e in shown if e["id"] == GATE)
    assert entry["passk_cmp"]["status"] == "regressed" and entry["passk_cmp"]["gates"]
    assert "1 regressed against the baseline" in markdown.render(results)


@pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_page_shows_the_curve_and_the_gating_pass_k_in_a_browser(browser: Any, server: FakeServer,
                                                                       tmp_path: Path) -> None:
    count = 12
    fail_trials(server, {i: 2 for i in range(6, 12)}, count)
    assert run_cli("run", write_spec(tmp_path / "base", server.url, count), "-o", tmp_path / "base.json",
                   cwd=tmp_path).code == 0
    fail_trials(server, dict.fromkeys(range(count), 1), count)
    named = write_spec(tmp_path / "head", server.url, count, compare={"entries": {GATE + ".pass^k": {"max_drop": 0}}})
    run_cli("run", named, "--baseline", tmp_path / "base.json", "-o", tmp_path / "head.json", cwd=tmp_path)
    done = run_cli("report", tmp_path / "head.json", "--format", "html")
    assert done.code == 0, done.output
    path = tmp_path / "head.html"
    path.write_text(done.stdout, encoding="utf-8")
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    entries = page.locator("#entries").inner_text()
    assert "pass^k (all k trials of an item pass): k=1 0.80" in entries, entries  # every item 4 of 5
    assert "k=5 0.00" in entries and "Against the base: pass^5 0.50 → 0.00" in entries and "regressed" in entries
    assert f"{GATE}: pass^5 regressed: base 0.500 → 0.000" in page.locator("#overview").inner_text()
    assert problems == []
    page.close()


def test_runs_of_other_repeats_compare_pass_k_at_the_fewer_trials() -> None:
    """Base 5 trials an item, head 3: pass^3 is compared (each item's unbiased pass^3 from its own trials)."""
    def agent(fails_every: int) -> Any:
        calls: dict[str, int] = {}

        def answer(question: str) -> str:
            calls[question] = calls.get(question, 0) + 1
            return "no" if calls[question] % fails_every == 0 else "yes"
        return answer

    data = [{"id": f"i{i}", "input": f"q{i}"} for i in range(30)]
    base = run_evals(data=data, target=agent(5), gates=[checks.includes("yes")], repeats=5, concurrency=1)
    head = run_evals(data=data, target=agent(2), gates=[checks.includes("yes")], repeats=3, concurrency=1)
    comparison = compare(base, head)
    reliability = next(e for e in comparison.entries if e.measure == "pass^k")
    # base: 4 of 5 pass, pass^3 = C(4,3)/C(5,3) = 0.4; head: 2 of 3 pass, pass^3 = 0
    assert reliability.id == "includes:yes.pass^k" and reliability.k == 3 and reliability.pairs == 30
    assert reliability.base_matched == pytest.approx(0.4) and reliability.head_matched == 0.0
    assert reliability.status == "regressed" and reliability.kind == "tracked" and not reliability.fails
    assert any("and pass^k at k = 3" in w for w in comparison.warnings), comparison.warnings
