"""Reports read at a glance: `0.82 ± 0.04`, the baseline's `base 0.90 · Δ -0.08 [-0.13, -0.03] ▼` with its
significance in words, Regressions (pass -> fail first, with excerpts), Flaky items, the user's direction."""

from __future__ import annotations

import re
from typing import Any

from evalgate import checks, run_evals
from evalgate.report.markdown import COMMENT_LIMIT, ReportContext, render, utf8_size
from evalgate.report.terminal import render_table
from evalgate.results.model import Results


def _results(**extra: Any) -> Results:
    data: dict[str, Any] = {
        "schema_version": 1, "name": "demo", "verdict": "failed",
        "scores": {"includes:sunny": 0.82, "includes:sorry": 0.1},
        "gate_results": [{"id": "called_tool:t", "passed": True, "score": 1.0, "n": 50, "items": 50,
                          "stderr": 0.0, "ci95": [0.93, 1.0]}],
        "threshold_results": [
            {"id": "includes:sunny", "passed": True, "average_score": 0.82, "threshold": 0.7, "n": 50, "items": 50,
             "stderr": 0.05, "ci95": [0.78, 0.86]},
            {"id": "includes:sorry", "passed": True, "average_score": 0.1, "threshold": {"max": 0.2},
             "higher_is_better": True, "n": 50, "items": 50, "stderr": 0.04, "ci95": [0.04, 0.21],
             "uncertain": True, "interval": [0.04, 0.21]},
        ],
        "summary": {"total_items": 50, "errored_items": 0, "failure_reason": "regression"},
        "items": [{"id": "q1", "input": "weather @octocat?", "output": {"text": "<b>no</b> idea, ask @octocat"},
                   "scores": {"includes:sunny": 0.0}},
                  {"id": "q2", "input": "weather?", "output": {"text": "sunny"}, "scores": {"includes:sunny": 1.0}}],
        "comparison": {
            "baseline": {"name": "demo", "verdict": "passed", "created_at": "2026-01-01T00:00:00Z",
                         "git_sha": "abcdef1234567890"},
            "settings": {"confidence": 0.95, "max_drop": 0.0, "correction": "holm"},
            "entries": [
                {"id": "includes:sunny", "turn": None, "kind": "threshold", "base_average": 0.9,
                 "head_average": 0.82, "delta": -0.08, "ci95": [-0.13, -0.03], "p_value": 0.0021,
                 "method": "mcnemar-newcombe", "status": "regressed", "pairs": 50, "max_drop": 0.0},
                {"id": "called_tool:t", "turn": None, "kind": "gate", "base_average": 1.0, "head_average": 1.0,
                 "delta": 0.0, "ci95": [-0.07, 0.07], "p_value": 1.0, "method": "mcnemar-newcombe",
                 "status": "unchanged", "pairs": 50, "max_drop": 0.0},
                {"id": "judged", "turn": None, "kind": "tracked", "base_average": 0.5, "head_average": 0.4,
                 "status": "incomparable", "reason": "judged by another model"},
            ],
            "flipped": [
                {"item": "q2", "entry": "includes:sunny", "turn": None, "base_score": 0.0, "head_score": 1.0,
                 "direction": "fail->pass"},
                {"item": "q1", "entry": "includes:sunny", "turn": None, "base_score": 1.0, "head_score": 0.0,
                 "direction": "pass->fail"},
            ],
            "matched_items": 50, "new_items": 0, "missing_items": 0, "changed_items": 0, "regressions": 1,
            "warnings": [],
        },
    }
    data.update(extra)
    return Results.model_validate(data)


def test_error_bars_direction_and_uncertain_in_the_tables() -> None:
    text = render(_results())
    # the first row of each entry carries its comparison with the base
    # a lopsided interval reads as [lo, hi] (`1.000 ± 0.035` would say 1.035 is possible); a symmetric one as ±
    assert ("| <code>called_tool:t</code> | 1.000 [0.930, 1.000] (base 1.000, 0.000 \\[−0.07, +0.07\\]) ➖ unchanged "
            "| ✅ |") in text
    assert ("| <code>includes:sunny</code> | 0.820 ± 0.040 (base 0.900, −0.080 \\[−0.13, −0.03\\]) ❌ regressed "
            "| ≥ 0.7 | ✅ | higher is better |") in text
    # the user's `max` bound says lower is better, whatever the scorer's default
    assert "| <code>includes:sorry</code> | 0.100 [0.040, 0.210] | ≤ 0.2 | ✅ uncertain | lower is better |" in text


def test_the_comparison_reads_base_delta_interval_arrow_and_significance() -> None:
    text = render(_results())
    assert "Baseline demo @ <code>abcdef1</code> (passed): 50 items matched" in text
    assert ("| <code>includes:sunny</code> | 0.820 ± 0.040 | base 0.90 · Δ -0.08 [-0.13, -0.03] ▼ worse "
            "| ❌ **regressed**: dropped 0.90 → 0.82: 1 of 50 items went from pass to fail; worse beyond "
            "max\\_drop, more than noise explains at 95% |") in text
    assert "base 1.00 · Δ 0.00 [-0.07, +0.07] ≈ | ➖ **unchanged**: unchanged at 1.00; no drop beyond max" in text
    details = text.split("<details><summary>p-values, methods and the correction (holm across entries)</summary>")[1]
    assert "| <code>includes:sunny</code> | " in details.split("</details>")[0]
    assert "| 0.0021 |" in details.split("</details>")[0]  # the p-value, folded away from the status
    assert "⚪ not compared: judged by another model" in text
    assert "**Failed because it regressed against the baseline**" in text
    assert "1 regressed against the baseline" in text


def test_arrows_follow_the_direction_of_better_not_the_sign_of_the_number() -> None:
    from evalgate.report.numbers import delta_text

    rose = {"base_average": 0.1, "delta": 0.27, "ci95": [0.21, 0.33]}
    assert delta_text({**rose, "higher_is_better": False}) == "base 0.10 · Δ +0.27 [+0.21, +0.33] ▼ worse"
    assert delta_text({**rose, "higher_is_better": True}) == "base 0.10 · Δ +0.27 [+0.21, +0.33] ▲ better"
    fell = {"base_average": 0.4, "delta": -0.2, "ci95": [-0.3, -0.1], "higher_is_better": False}
    assert delta_text(fell).endswith("▲ better")  # fewer apologies
    assert delta_text({**fell, "ci95": [-0.3, 0.1]}).endswith("≈")


def test_regressions_list_pass_to_fail_items_with_escaped_excerpts() -> None:
    text = render(_results())
    section = text.split("### Regressions")[1]
    assert "1 item pass → fail" in section
    assert "**<code>q1</code>** · base 1.000 → head 0.000" in section
    assert "q2" not in section.split("</details>")[0]  # fail -> pass is not a regression
    assert "&lt;b&gt;no&lt;/b&gt; idea, ask @&#8203;octocat" in section  # no HTML, nobody pinged


def test_flaky_items_and_pass_k_from_a_run_with_repeats() -> None:
    calls: dict[str, int] = {}

    def agent(q: str) -> str:
        calls[q] = calls.get(q, 0) + 1
        return "sunny" if q != "flip" or calls[q] % 2 else "rain"

    result = run_evals(data=[{"id": "steady", "input": "steady"}, {"id": "flip", "input": "flip"}], target=agent,
                       gates=[checks.includes("sunny")], repeats=4, concurrency=1)
    results = Results.model_validate(result.to_dict())
    text = render(results)
    assert "### Flaky items" in text and "| <code>includes:sunny</code> | 1 | <code>flip</code> |" in text
    assert re.search(r"0\.750 (± |\[)", text) and "pass^k 0.50 · pass@k 1.00" in text
    assert "2 items × 4 trials = 8 trials, 0 of 2 items errored (0 of 8 trials)" in text
    table = render_table(result, {}, color=False)
    assert "Flaky items (trials disagree)" in table and "flip" in table and "pass^k 0.50" in table


def test_a_huge_comparison_still_fits_a_comment() -> None:
    entries = [{"id": f"scorer-{n}-" + "x" * 100, "turn": None, "kind": "threshold", "base_average": 0.9,
                "head_average": 0.5, "delta": -0.4, "ci95": [-0.5, -0.3], "p_value": 0.0001,
                "method": "paired-t", "status": "regressed", "pairs": 100, "max_drop": 0.0} for n in range(300)]
    flipped = [{"item": f"i{k}", "entry": e["id"], "turn": None, "base_score": 1.0, "head_score": 0.0,
                "direction": "pass->fail"} for e in entries[:50] for k in range(20)]
    items = [{"id": f"i{k}", "input": "q" * 3000, "output": {"text": "a" * 3000}} for k in range(20)]
    big = _results(items=items, comparison={**_results().comparison, "entries": entries, "flipped": flipped})  # type: ignore[attr-defined]
    text = render(big, ReportContext(comment=True, marker="<!-- evalgate:x -->"), limit=COMMENT_LIMIT)
    assert utf8_size(text) <= COMMENT_LIMIT
    assert "### Compared with the baseline" in text and "Shortened to fit" in text


def test_junit_fails_a_regressed_entry_that_met_its_bound_saying_so() -> None:
    import xml.etree.ElementTree as ET

    from evalgate.report.junit import render_junit

    root = ET.fromstring(render_junit(_results()))
    case = next(c for c in root.iter("testcase") if c.get("name") == "includes:sunny")
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "regression"
    assert failure.get("message") == ("regressed against the baseline: base 0.90 · Δ -0.08 [-0.13, -0.03] ▼ worse; "
                                      "max_drop 0")
    unchanged = next(c for c in root.iter("testcase") if c.get("name") == "called_tool:t")
    assert unchanged.find("failure") is None


def test_errors_of_trials_and_of_single_scorers_read_like_item_errors() -> None:
    from evalgate.report.labels import item_error

    judged = {"id": "q01", "error": None, "scorer_errors": {}, "trials": [
        {"trial": 0, "error": None, "scorer_errors": {}},
        {"trial": 1, "error": None, "scorer_errors": {"faithfulness": "the judge's reply is no JSON"}},
        {"trial": 2, "error": "timeout after 30s"}]}
    assert item_error(judged) == ("2 of 3 trials errored: trial 2: faithfulness: the judge's reply is no JSON; "
                                  "trial 3: timeout after 30s")
    same = {"id": "q05", "error": "timeout after 30s", "trials": [{"error": "timeout after 30s"}, {"error": None},
                                                                  {"error": "timeout after 30s"}]}
    assert item_error(same) == "2 of 3 trials errored: trials 1, 3: timeout after 30s"
    assert item_error({"id": "q02", "scorer_errors": {"tone": "boom"}}) == "tone: boom"
    assert item_error({"id": "q03", "error": "exited with code 1: KeyError: 'x'"}).startswith("exited with code 1")
    assert item_error({"id": "q04", "trials": [{"trial": 0}]}) == ""


def test_the_status_is_said_in_words_with_the_items_that_moved() -> None:
    from evalgate.report.numbers import status_words

    gate = {"status": "uncertain", "base_average": 1.0, "head_average": 0.75, "pairs": 20, "higher_is_better": True}
    assert status_words(gate, {"pass->fail": 5}) == ("dropped 1.00 → 0.75: 5 of 20 items went from pass to fail; "
                                                     "too few items to call it at 95%")
    fewer = {"status": "improved", "base_average": 0.4, "head_average": 0.1, "pairs": 30, "higher_is_better": False}
    assert status_words(fewer, {"fail->pass": 9}, 0.9) == ("fell 0.40 → 0.10: 9 of 30 items went from fail to pass; "
                                                            "better, more than noise explains at 90%")
    assert status_words({"status": "incomparable", "reason": "its parameters changed"}) == (
        "not compared: its parameters changed")
