"""The spending cap against a fake OpenAI-compatible server that reports usage: no new item starts past it."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from fake_agent import FakeServer

from evalgate.api import run_spec
from evalgate.report.markdown import ReportContext, render
from evalgate.results.model import load_results

ITEMS = 40
PRICES = {"fake-mini": {"prompt": 1000.0, "completion": 1000.0}}  # USD per 1M tokens: $0.001 per token


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        srv.default_fault = "slow:0.02"
        yield srv


def write_spec(tmp_path: Path, url: str, budget: dict | None = None, concurrency: int = 4) -> Path:
    spec = {
        "version": 1,
        "data": [{"id": f"q{i}", "input": f"question number {i}"} for i in range(ITEMS)],
        "target": {"type": "openai", "base_url": f"{url}/v1", "model": "fake-mini", "api_key_env": None,
                   "prices": PRICES, "timeout_s": 5},
        "concurrency": concurrency,
        "max_errors": ITEMS,
        "scorers": [{"type": "includes", "value": "said"}],
    }
    if budget is not None:
        spec["budget"] = budget
    path = tmp_path / "evalgate.yaml"
    path.write_text(json.dumps(spec))
    return path


def cost_per_item(tmp_path: Path, server: FakeServer) -> float:
    free = tmp_path / "free"
    free.mkdir()
    result = run_spec(write_spec(free, server.url), output=free / "out.json")
    costs = [i["output"]["cost_usd"] for i in json.loads((free / "out.json").read_text())["items"]]
    assert result.summary["errored_items"] == 0 and len(set(costs)) <= 2
    return max(costs)


def test_the_cap_stops_scheduling_within_one_concurrency_window(tmp_path: Path, server: FakeServer) -> None:
    each = cost_per_item(tmp_path, server)  # 3 words of prompt + 10 of completion: $0.013 an item
    before = server.count
    cap = each * 10.5
    concurrency = 4
    result = run_spec(write_spec(tmp_path, server.url, {"max_usd": cap}, concurrency), output=tmp_path / "out.json")
    sent = server.count - before
    # the cap is crossed by the 11th finished item; only the items already in flight may follow it
    assert 11 <= sent <= 11 + concurrency - 1
    results = json.loads((tmp_path / "out.json").read_text())
    not_run = [i for i in results["items"] if i["error"] and i["error"].startswith("budget exceeded")]
    assert len(not_run) == ITEMS - sent and all(i["output"] is None for i in not_run)
    assert results["summary"]["errored_items"] == ITEMS - sent  # counted as errors, never scored
    budget = results["summary"]["budget"]
    assert budget["items_not_run"] == ITEMS - sent and budget["max_usd"] == cap
    assert budget["spent_usd"] == pytest.approx(each * sent)
    assert budget["spent_usd"] - cap < each * concurrency  # overshoot bounded by one window
    assert result.outcome.errored_items == ITEMS - sent and result.verdict is None  # max_errors: ITEMS
    report = render(load_results(tmp_path / "out.json"), ReportContext())
    assert f"**Budget exceeded**: {ITEMS - sent} items were not run" in report
    assert not_run[0]["id"] in report  # named among the errored items


def test_a_token_cap_and_the_cli_option_and_a_shard_share(tmp_path: Path, server: FakeServer) -> None:
    spec = write_spec(tmp_path, server.url, {"max_tokens": 13 * 6}, concurrency=1)
    result = run_spec(spec, output=tmp_path / "tokens.json")
    assert result.summary["budget"]["items_not_run"] == ITEMS - 6  # 13 tokens an item, strictly in order
    # --max-cost wins over the spec, and a shard of 2 enforces half of it
    before = server.count
    done = run_cli("run", spec, "--max-cost", "0.052", "--shard", "1/2", "-o", "shard.json", cwd=tmp_path)
    assert done.code in (0, 1), done.output
    shard = json.loads((tmp_path / "shard.json").read_text())
    assert shard["summary"]["budget"]["max_usd"] == pytest.approx(0.026)
    assert "shard 1/2" in shard["summary"]["budget"]["share"]
    assert server.count - before == 2  # $0.013 an item, one at a time: two reach $0.026
    assert "items not run: budget exceeded" in done.stdout
    (tmp_path / "whole").mkdir()
    whole = write_spec(tmp_path / "whole", server.url, {"max_usd": 0.052, "split_across_shards": False}, 1)
    run_spec(whole, output=tmp_path / "whole.json", shard="1/2")
    assert json.loads((tmp_path / "whole.json").read_text())["summary"]["budget"]["max_usd"] == 0.052


def test_no_budget_no_budget_summary(tmp_path: Path, server: FakeServer) -> None:
    result = run_spec(write_spec(tmp_path, server.url), output=tmp_path / "out.json")
    assert "budget" not in result.summary and result.summary["errored_items"] == 0


# ---- cost per item and per check, from a priced fake judge ----


def test_cost_per_item_and_per_check_add_up_and_merge_exactly(tmp_path: Path) -> None:
    from fake_judge import FakeJudge

    from evalgate.results.merge import merge

    with FakeJudge() as judge:
        data = [{"id": f"c{i}", "input": f"What is the weather in city {i}?", "context": [f"City {i} is sunny."],
                 "output": {"text": f"City {i} is sunny today.", "tool_calls": [], "cost_usd": 0.001 * (i + 1)}}
                for i in range(12)]
        spec = {
            "version": 1, "data": data,
            "scorers": [{"type": "faithfulness"}, {"type": "answer_relevancy", "id": "relevant"}],
            "judge": {"model": "priced-judge", "base_url": judge.base_url, "api_key_env": None,
                      "prices": {"priced-judge": {"prompt": 100.0, "completion": 300.0}}},
        }
        path = tmp_path / "evalgate.yaml"
        path.write_text(json.dumps(spec))
        result = run_spec(path, output=tmp_path / "full.json")
        for index in (1, 2, 3):
            run_spec(path, output=tmp_path / f"s{index}.json", shard=f"{index}/3")
    full = json.loads((tmp_path / "full.json").read_text())
    cost = full["summary"]["cost"]
    items = full["items"]
    assert set(items[0]["judge_cost_usd"]) == {"faithfulness", "relevant"}
    assert all(i["cost_usd"] == pytest.approx(i["output"]["cost_usd"] + sum(i["judge_cost_usd"].values()))
               for i in items)
    assert cost["target_usd"] == pytest.approx(sum(0.001 * (i + 1) for i in range(12)))
    assert cost["judge_usd"] == pytest.approx(full["summary"]["judge"]["cost_usd"])  # every billed call charged
    assert cost["by_check"]["faithfulness"] == pytest.approx(sum(i["judge_cost_usd"]["faithfulness"] for i in items))
    assert result.summary["cost"] == cost
    report = render(load_results(tmp_path / "full.json"), ReportContext())
    assert f"cost ${cost['usd']:.4f}" in report and "faithfulness $" in report
    top = max(items, key=lambda i: i["cost_usd"])
    assert f"most: {top['id']} ${top['cost_usd']:.4f}" in report  # the priciest items, named
    merged = merge([tmp_path / f"s{index}.json" for index in (1, 2, 3)], tmp_path / "merged.json")
    assert merged.summary["cost"] == cost  # summed again in data order: the same floats


def recorded_costs(tmp_path: Path, items: int, usd: float, max_usd: float) -> Path:
    rows = [{"id": f"q{i}", "input": "q", "output": {"text": "sunny", "cost_usd": usd}} for i in range(items)]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(json.dumps({"version": 1, "data": "runs.jsonl", "target": {"type": "recorded"},
                                "budget": {"max_usd": max_usd}, "max_errors": items,
                                "gates": [{"type": "includes", "value": "sunny"}]}))
    return spec


def test_ten_cents_reach_a_ten_cent_cap(tmp_path: Path) -> None:
    """0.01 added ten times is 0.09999999999999999: the cap is reached all the same."""
    result = run_spec(recorded_costs(tmp_path, 12, 0.01, 0.1))
    assert result.summary["budget"]["items_not_run"] == 2


def test_a_resume_counts_the_journals_spend_and_starts_what_the_budget_stopped(tmp_path: Path) -> None:
    spec = recorded_costs(tmp_path, 10, 0.001, 0.0045)
    out = tmp_path / "out.json"
    first = run_spec(spec, output=out)
    assert first.summary["budget"]["items_not_run"] == 5
    again = run_spec(spec, output=out, resume=True)  # the same cap: the journal's spend already reached it
    assert again.summary["budget"]["items_not_run"] == 5 and again.summary["budget"]["spent_usd"] == 0.005
    raised = run_spec(spec, output=out, resume=True, max_cost=1.0)
    assert raised.summary["budget"]["items_not_run"] == 0 and raised.summary["errored_items"] == 0
    assert any("5 items the budget had stopped were started again" in note for note in raised.notes)
    assert raised.summary["budget"]["spent_usd"] == 0.01


def test_the_merge_of_shards_gives_the_runs_caps_not_the_sum_of_their_shares(tmp_path: Path) -> None:
    from evalgate.results.merge import merge

    spec = recorded_costs(tmp_path, 12, 0.001, 1.0)
    data = json.loads(spec.read_text())
    data["budget"]["max_tokens"] = 100_000
    spec.write_text(json.dumps(data))
    files = []
    for index in range(1, 7):
        files.append(tmp_path / f"s{index}.json")
        run_spec(spec, output=files[-1], shard=f"{index}/6")
    shares = [json.loads(f.read_text())["summary"]["budget"] for f in files]
    added = 0.0
    for share in shares:  # left to right, as a naive merge would: Python 3.12's sum() compensates to 1.0
        added += share["max_usd"]
    assert added != 1.0 and sum(s["max_tokens"] for s in shares) == 99_996
    merged = merge(files).summary["budget"]
    assert merged["max_usd"] == 1.0 and merged["max_tokens"] == 100_000
    assert "share" not in merged and "run_max_usd" not in merged
    assert merged == {**run_spec(spec).summary["budget"], "spent_usd": merged["spent_usd"]}


@pytest.mark.parametrize("poison", [float("nan"), -100.0, float("inf"), 10**400],
                         ids=["nan", "negative", "infinity", "past-the-largest-float"])
def test_a_recorded_cost_that_is_no_amount_cannot_switch_the_budget_off(tmp_path: Path, poison: float) -> None:
    """Recorded data is untrusted: a NaN cost made every comparison with the cap false, a negative one
    paid the cap back, a 400-digit one overflowed the sum (OverflowError: an internal error). Such a
    cost adds nothing; the other items' spend still reaches the cap."""
    spec = recorded_costs(tmp_path, 12, 0.01, 0.1)
    rows = (tmp_path / "runs.jsonl").read_text().splitlines()
    first = json.loads(rows[0])
    first["output"]["cost_usd"] = poison
    first["output"]["usage"] = {"total_tokens": -10**9, "prompt_tokens": 5}
    rows[0] = json.dumps(first)  # json writes NaN and Infinity, as a careless exporter would
    (tmp_path / "runs.jsonl").write_text("\n".join(rows) + "\n")
    data = json.loads(spec.read_text())
    data["budget"]["max_tokens"] = 10**6
    spec.write_text(json.dumps(data))
    budget = run_spec(spec).summary["budget"]
    assert budget["items_not_run"] == 1  # ten items of 0.01 after the poisoned one reach 0.10
    assert budget["spent_usd"] == pytest.approx(0.1)


def test_a_cap_says_which_spend_the_agent_never_reported(tmp_path: Path, server: FakeServer) -> None:
    """An http agent that reports token usage but no cost: a USD cap would count $0 for it, silently;
    the run says so (summary.warnings, stderr). The token cap sees its usage: nothing to say there."""
    spec = {
        "version": 1,
        "data": [{"id": f"q{i}", "input": f"question number {i}"} for i in range(5)],
        "target": {"type": "http", "url": f"{server.url}/agent", "timeout_s": 5, "response": {"text": "output.text"}},
        "budget": {"max_usd": 1.0, "max_tokens": 1_000_000},
        "scorers": [{"type": "includes", "value": "said"}],
    }
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    done = run_cli("run", "evalgate.yaml", "--output", "out.json", cwd=tmp_path)
    said = json.loads((tmp_path / "out.json").read_text())["summary"].get("warnings", [])
    expected = "budget.max_usd: 5 of 5 runs of the target reported no `cost_usd`, so the cap counted nothing for them"
    budget_warnings = [w for w in said if w.startswith("budget.")]
    assert len(budget_warnings) == 1 and budget_warnings[0].startswith(expected), said
    assert expected in done.stderr, done.stderr
    # the openai target prices every reply it gets: no warning
    priced = run_spec(write_spec(tmp_path, server.url, {"max_usd": 100.0, "max_tokens": 10**9}),
                      output=tmp_path / "priced.json")
    assert not [w for w in priced.summary.get("warnings", []) if w.startswith("budget.")]


# Chosen so that the three shards' sums, each rounded to 8 decimals, add up to other last digits than
# the items' spend added in data order, once or twice over (the test checks that it is so).
PRICED = [0.00359066212, 0.00220679339, 0.00620747578, 0.00157949029, 0.00528705603, 0.00392551134]


@pytest.mark.parametrize("repeats", [None, 2], ids=["columns", "items"])
def test_a_merged_budget_adds_the_items_spend_in_data_order_not_the_shards_rounded_sums(
        tmp_path: Path, repeats: int | None) -> None:
    from evalgate.results.merge import merge

    spec = recorded_costs(tmp_path, 12, 0.0, 1.0)
    rows = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    for n, row in enumerate(rows):
        row["output"]["cost_usd"] = PRICED[n % len(PRICED)]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if repeats:
        data = json.loads(spec.read_text())
        data["repeats"] = repeats
        spec.write_text(json.dumps(data))
    files = []
    for index in (1, 2, 3):
        files.append(tmp_path / f"s{index}.json")
        run_spec(spec, output=files[-1], shard=f"{index}/3")
    spent = [json.loads(f.read_text())["summary"]["budget"]["spent_usd"] for f in files]
    total = 0.0
    for row in rows:
        for _ in range(repeats or 1):
            total += row["output"]["cost_usd"]
    shards_added = 0.0
    for figure in spent:  # left to right, as a naive merge adds (Python 3.12's sum() compensates)
        shards_added += figure
    assert round(shards_added, 8) != round(total, 8) and shards_added != round(total, 8)  # not trivial
    merged = merge(files, tmp_path / "merged.json").summary["budget"]
    assert merged["spent_usd"] == round(total, 8) == run_spec(spec).summary["budget"]["spent_usd"]
    assert json.loads((tmp_path / "merged.json").read_text())["summary"]["budget"]["spent_usd"] == round(total, 8)


def test_usage_named_input_and_output_tokens_is_priced_and_reaches_the_cap(tmp_path: Path, server: FakeServer) -> None:
    """A server (the target's or the judge's) that reports `input_tokens`/`output_tokens`, as the Responses
    API names them, was priced at $0: a USD cap counted nothing for it and never stopped the run."""
    server.default_fault = 'extra:{"usage": {"input_tokens": 3, "output_tokens": 10}}'
    write_spec(tmp_path, server.url, {"max_usd": 0.013 * 4}, concurrency=1)  # $0.013 an item, one at a time
    done = run_cli("run", "evalgate.yaml", "--output", "out.json", cwd=tmp_path)
    assert done.code == 0, done.output
    results = json.loads((tmp_path / "out.json").read_text())
    assert [i["output"]["cost_usd"] for i in results["items"][:4]] == [pytest.approx(0.013)] * 4
    assert results["summary"]["budget"]["items_not_run"] == ITEMS - 4 and server.count == 4
    calls, summary = run_priced_judge(tmp_path, {"input_tokens": 1000, "output_tokens": 100})
    assert summary["judge"]["usage"]["prompt_tokens"] == 1000 * calls
    assert summary["judge"]["cost_usd"] == summary["cost"]["usd"] == pytest.approx(0.13 * calls)
    assert calls == 3 and summary["budget"]["items_not_run"] == 7  # $0.39: three calls


@pytest.mark.parametrize(("cap", "expected"), [
    ("max_usd: .inf", "budget.max_usd: Input should be a finite number"),
    ("max_usd: 1.0e+400", "budget.max_usd: Input should be a finite number"),
    ("max_usd: true", "budget.max_usd: write a number, not true"),
    ("max_tokens: true", "budget.max_tokens: write a number, not true"),
], ids=["infinity", "past-the-largest-float", "true-dollars", "true-tokens"])
def test_a_cap_that_is_no_amount_is_a_spec_error(tmp_path: Path, cap: str, expected: str) -> None:
    """`.inf` (or a typo past 1.8e308) switched the cap off while the spec showed one, and the results said
    `max_usd: null`; `true` was read as a $1 (or a 1-token) cap. Each is refused at its line, nothing run."""
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{input: q, output: sunny}]\nscorers: [{type: includes, value: sunny}]\n"
        f"budget:\n  {cap}\n")
    done = run_cli("run", "evalgate.yaml", "--output", "out.json", cwd=tmp_path)
    assert done.code == 2 and "Traceback" not in done.output
    assert f"evalgate.yaml:5: {expected}" in done.stderr, done.stderr
    assert not (tmp_path / "out.json").exists()


def test_token_counts_written_as_whole_floats_count(tmp_path: Path, server: FakeServer) -> None:
    """`"prompt_tokens": 3.0`, as a server doing float arithmetic writes it: the target's reply was priced
    but its tokens counted nothing against a token cap (and the run warned that it reported none); a
    judge's counted as 0 tokens and $0, so neither cap saw its calls."""
    server.default_fault = 'extra:{"usage": {"prompt_tokens": 3.0, "completion_tokens": 10.0, "total_tokens": 13.0}}'
    write_spec(tmp_path, server.url, {"max_tokens": 13 * 4}, concurrency=1)
    done = run_cli("run", "evalgate.yaml", "--output", "out.json", cwd=tmp_path)
    assert done.code == 0, done.output
    summary = json.loads((tmp_path / "out.json").read_text())["summary"]
    assert summary["budget"]["spent_tokens"] == 52 and summary["budget"]["items_not_run"] == ITEMS - 4
    assert server.count == 4 and not summary.get("warnings")
    calls, summary = run_priced_judge(tmp_path, {"prompt_tokens": 1000.0, "completion_tokens": 100.0})
    assert summary["judge"]["usage"]["total_tokens"] == 1100 * calls
    assert calls == 3 and summary["budget"]["items_not_run"] == 7 and summary["cost"]["usd"] == pytest.approx(0.39)


def test_a_cap_below_a_nano_dollar_holds(tmp_path: Path) -> None:
    """The spend is compared to the nano-dollar: a cap of $1e-12 was never reached by a spend that rounds
    to $0 at 9 decimals, so every item ran, hundreds of times the cap."""
    spec = recorded_costs(tmp_path, 30, 1e-13, 1e-12)
    done = run_cli("run", spec, "--output", tmp_path / "out.json", cwd=tmp_path)
    assert done.code in (0, 1), done.output
    budget = json.loads((tmp_path / "out.json").read_text())["summary"]["budget"]
    assert budget["items_not_run"] in (19, 20)  # 1e-13 added ten times may fall a hair short of 1e-12


def test_the_merge_of_shards_that_each_enforce_the_whole_cap_gives_that_cap(tmp_path: Path) -> None:
    """With `split_across_shards: false` every shard enforces the whole cap: the merge added the shards'
    caps (0.1 + 0.1 + 0.1 = 0.30000000000000004), a cap that no one wrote, in no spec or option."""
    spec = recorded_costs(tmp_path, 12, 0.001, 0.1)
    data = json.loads(spec.read_text())
    data["budget"].update(max_tokens=1000, split_across_shards=False)
    spec.write_text(json.dumps(data))
    files = [tmp_path / f"s{index}.json" for index in (1, 2, 3)]
    for index, file in enumerate(files, 1):
        done = run_cli("run", spec, "--shard", f"{index}/3", "--output", file, cwd=tmp_path)
        assert done.code == 0, done.output
        assert json.loads(file.read_text())["summary"]["budget"]["max_usd"] == 0.1
    done = run_cli("merge", *files, "--output", tmp_path / "merged.json", cwd=tmp_path)
    assert done.code == 0, done.output
    merged = json.loads((tmp_path / "merged.json").read_text())["summary"]["budget"]
    assert merged["max_usd"] == 0.1 and merged["max_tokens"] == 1000 and "share" not in merged


def test_a_resume_counts_the_journals_judge_tokens_against_a_token_cap(tmp_path: Path) -> None:
    """The journal kept each item's judge spend in USD but not in tokens: a resumed run under the same
    `max_tokens` counted the judge calls already made as none, and started items past the cap."""
    from fake_judge import FakeJudge

    with FakeJudge() as judge:
        judge.usage = {"prompt_tokens": 100, "completion_tokens": 10}
        (tmp_path / "evalgate.yaml").write_text(judged_spec(judge.base_url, {"max_tokens": 330}, 1.0, 1.0))
        first = run_cli("run", "--output", "out.json", cwd=tmp_path)
        assert first.code == 0, first.output
        assert judge.calls == 3  # 110 tokens a call: the third reaches 330
        again = run_cli("run", "--output", "out.json", "--resume", cwd=tmp_path)
        assert again.code == 0, again.output
        assert judge.calls == 3  # the journal's 330 tokens already reached the cap: nothing more is asked
    results = json.loads((tmp_path / "out.json").read_text())
    assert results["summary"]["budget"]["spent_tokens"] == 330 and results["summary"]["budget"]["items_not_run"] == 7
    assert [i.get("judge_tokens") for i in results["items"][:3]] == [110] * 3  # what the journal keeps


def test_with_repeats_a_trials_spend_counts_as_it_finishes(tmp_path: Path, server: FakeServer) -> None:
    """With repeats the target's spend was counted once an item's every trial had finished: a trial that
    reached the cap while its sibling still ran let the next items start, past the cap."""
    server.faults["question number 0"] = ["slow:0", "slow:0.5"]  # one trial of the first item is slow
    spec = write_spec(tmp_path, server.url, {"max_usd": 0.013}, concurrency=2)  # $0.013 a trial
    spec.write_text(json.dumps({**json.loads(spec.read_text()), "repeats": 2}))
    done = run_cli("run", spec, "--output", tmp_path / "out.json", cwd=tmp_path)
    assert done.code == 0, done.output
    assert server.count == 2  # the fast trial reached the cap: only its sibling, in flight, may finish
    budget = json.loads((tmp_path / "out.json").read_text())["summary"]["budget"]
    assert budget["items_not_run"] == ITEMS - 1 and budget["spent_usd"] == pytest.approx(0.026)


def test_the_turns_before_a_failed_turn_count_as_spend(tmp_path: Path, server: FakeServer) -> None:
    """A conversation whose last turn failed errored with no run: the turns before it, answered and billed,
    counted nothing against the cap or in summary.cost, so an agent that fails late ran past any cap."""
    data = [{"id": f"c{i}", "inputs": [f"first {i}", f"second {i}", f"third {i}"]} for i in range(10)]
    for i in range(10):
        server.faults[f"third {i}"] = ["500"] * 3  # every attempt of the third turn fails
    spec = write_spec(tmp_path, server.url, {"max_usd": 0.1}, concurrency=1)
    settings = json.loads(spec.read_text())
    settings["target"]["retries"] = {"attempts": 3, "backoff_s": 0}
    spec.write_text(json.dumps({**settings, "data": data}))
    done = run_cli("run", spec, "--output", tmp_path / "out.json", cwd=tmp_path)
    assert done.code == 0, done.output
    results = json.loads((tmp_path / "out.json").read_text())
    first = results["items"][0]
    assert "HTTP 500" in first["error"] and first["output"]["cost_usd"] > 0  # the two turns answered
    spent = [i["output"]["cost_usd"] for i in results["items"] if i["output"] is not None]
    budget = results["summary"]["budget"]
    assert budget["spent_usd"] == results["summary"]["cost"]["usd"] == pytest.approx(sum(spent))
    assert budget["spent_usd"] >= 0.1 and budget["items_not_run"] == 10 - len(spent) >= 5


@pytest.mark.parametrize("hostile", [
    {"budget": {"items_not_run": 3, "max_usd": "<b>x</b> @admin", "spent_usd": [1], "spent_tokens": "@admin"}},
    {"budget": {"items_not_run": 3, "max_usd": {"a": 1}, "max_tokens": 10**400, "spent_usd": "abc"}},
    {"cost": {"usd": 1.0, "target_usd": "abc", "by_check": ["x"]}},
    {"cost": {"usd": 10**400}},
    {"item_cost": 10**400},
], ids=["budget-text", "budget-objects", "cost-text", "cost-past-any-float", "item-cost-past-any-float"])
def test_a_report_of_costs_no_float_holds_is_rendered_not_a_crash(tmp_path: Path, hostile: dict) -> None:
    """A results file is untrusted (a fork's, for `evalgate comment --results`): a budget or cost figure
    that was text, an object or an integer past any float crashed the report (exit 3), and text there
    would have reached the comment as it was. Only numbers are shown."""
    spec = recorded_costs(tmp_path, 6, 0.01, 0.03)
    done = run_cli("run", spec, "--output", "out.json", cwd=tmp_path)
    assert done.code in (0, 1), done.output
    results = json.loads((tmp_path / "out.json").read_text())
    if "item_cost" in hostile:
        results["items"][0]["cost_usd"] = hostile["item_cost"]
    for key in ("budget", "cost"):
        if key in hostile:
            results["summary"][key] = hostile[key]
    (tmp_path / "out.json").write_text(json.dumps(results))
    report = run_cli("report", "out.json", cwd=tmp_path)
    assert report.code == 0 and "Traceback" not in report.output, report.output
    assert "@admin" not in report.stdout and "<b>" not in report.stdout and "abc" not in report.stdout
    if "budget" in hostile:
        assert "**Budget exceeded**: 3 items were not run (the cap is unknown; spent $0.0000" in report.stdout


def test_a_cap_says_which_judge_calls_reported_no_usage(tmp_path: Path) -> None:
    """A judge server that leaves `usage` out (or sends counts that are no numbers): its calls count $0 and
    no tokens against the caps. The run said so for an agent's runs, never for the judge's calls."""
    from fake_judge import FakeJudge

    with FakeJudge() as judge:
        judge.usage = {"prompt_tokens": "many"}
        data = [{"id": f"c{i}", "input": "Is it sunny?", "output": "It is sunny."} for i in range(4)]
        spec = {"version": 1, "data": data, "budget": {"max_usd": 1.0}, "scorers": [{"type": "answer_relevancy"}],
                "judge": {"model": "pj", "base_url": judge.base_url, "api_key_env": None,
                          "prices": {"pj": {"prompt": 1.0, "completion": 1.0}}}}
        (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
        done = run_cli("run", "--output", "out.json", cwd=tmp_path)
        assert done.code == 0, done.output
        judge.usage = None  # the word counts the fake judge reports: nothing to say
        again = run_cli("run", "--output", "again.json", "--no-cache", cwd=tmp_path)
        assert again.code == 0, again.output
    expected = "budget: 4 of 4 calls to the judge pj reported no token `usage`, so the caps counted nothing for them"
    said = json.loads((tmp_path / "out.json").read_text())["summary"].get("warnings", [])
    assert [w for w in said if w.startswith("budget")] == [f"{expected}; use a server that reports it"]
    assert expected in done.stderr
    assert not [w for w in json.loads((tmp_path / "again.json").read_text())["summary"].get("warnings", [])
                if w.startswith("budget")]


@pytest.mark.parametrize("repeats", [None, 2], ids=["once", "trials"])
def test_the_report_names_the_priciest_items_when_only_the_target_reports_cost(
        tmp_path: Path, repeats: int | None) -> None:
    """An item's record has `cost_usd` only with a judge's cost: with a target that reports cost and no
    judge (the openai target's prices), the report named no priciest items."""
    rows = [{"id": f"q{i}", "input": "q", "output": {"text": "sunny", "cost_usd": 0.001 * (i + 1)}} for i in range(5)]
    spec = {"version": 1, "data": rows, "scorers": [{"type": "includes", "value": "sunny"}]}
    if repeats:
        spec["repeats"] = repeats
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    assert run_cli("run", "--output", "out.json", cwd=tmp_path).code == 0
    report = run_cli("report", "out.json", cwd=tmp_path)
    assert report.code == 0, report.output
    each = repeats or 1
    assert (f"most: q4 ${0.005 * each:.4f}, q3 ${0.004 * each:.4f}, q2 ${0.003 * each:.4f}") in report.stdout


@pytest.mark.parametrize(("value", "said"), [
    ("0x10", "'0x10' is not a valid number"), ("", "'' is not a valid number"),
    ("nan", "'nan' is not a finite number"), ("1e400", "'1e400' is not a finite number"),
    ("0", "0.0 is not in the range x>0"), ("-1", "-1.0 is not in the range x>0"),
])
def test_a_max_cost_that_is_no_amount_is_a_usage_error(tmp_path: Path, value: str, said: str) -> None:
    """`--max-cost 0x10` said "'0x10' is not a valid float range": no range was asked for, a number was."""
    spec = recorded_costs(tmp_path, 2, 0.01, 1.0)
    done = run_cli("run", spec, "--max-cost", value, "--output", tmp_path / "out.json", cwd=tmp_path)
    assert done.code == 2 and "Traceback" not in done.output and "float range" not in done.output
    assert f"Invalid value for '--max-cost': {said}" in done.stderr, done.stderr
    assert not (tmp_path / "out.json").exists()


def test_a_total_below_its_parts_cannot_turn_the_token_cap_off(tmp_path: Path, server: FakeServer) -> None:
    """The token cap read `total_tokens` when there was one: a reply saying `total_tokens: 1` beside 13
    tokens of prompt and completion counted 1, and every item ran past the cap."""
    server.default_fault = 'extra:{"usage": {"prompt_tokens": 3, "completion_tokens": 10, "total_tokens": 1}}'
    write_spec(tmp_path, server.url, {"max_tokens": 13 * 4}, concurrency=1)
    done = run_cli("run", "evalgate.yaml", "--output", "out.json", cwd=tmp_path)
    assert done.code == 0, done.output
    budget = json.loads((tmp_path / "out.json").read_text())["summary"]["budget"]
    assert server.count == 4 and budget["spent_tokens"] == 52 and budget["items_not_run"] == ITEMS - 4


@pytest.mark.parametrize("cap", [("budget", {"max_usd": 1.0}), ("--max-cost", "1")], ids=["spec", "option"])
def test_a_usd_cap_over_a_price_without_its_completion_half_is_refused(tmp_path: Path, cap: tuple) -> None:
    """A price table entry with a prompt price and no completion price (or the other way) priced those
    tokens at $0: a USD cap counted nothing for them, as for a model without a price, which is refused."""
    spec = {"version": 1, "data": [{"input": "q"}], "scorers": [{"type": "answer_relevancy"}],
            "target": {"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": None,
                       "prices": {"m": {"input": 1.0}}},
            "judge": {"model": "j", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None,
                      "prices": {"j": {"completion": 1.0}}}}
    option: tuple[str, ...] = ()
    if cap[0] == "budget":
        spec["budget"] = cap[1]
    else:
        option = (cap[0], cap[1])
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    done = run_cli("run", *option, "--output", "out.json", cwd=tmp_path)
    assert done.code == 2 and "Traceback" not in done.output and not (tmp_path / "out.json").exists()
    where = "budget.max_usd" if cap[0] == "budget" else "--max-cost"
    assert (f"{where}: `target.prices.m` has no `completion` (or `output`) price, so its completion tokens would "
            "count as $0 against the cap; add `completion: <USD per 1M tokens>` (0 if they are free)") in done.stderr
    assert f"{where}: `judge.prices.j` has no `prompt` (or `input`) price" in done.stderr
    # a half written as 0 is a price: free tokens, said so (the run then goes on, to a closed port)
    spec["target"]["prices"]["m"]["output"] = 0
    spec["judge"]["prices"]["j"]["prompt"] = 0
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    priced = run_cli("run", *option, "--output", "ok.json", cwd=tmp_path)
    assert priced.code == 4 and (tmp_path / "ok.json").exists(), priced.output


def run_priced_judge(tmp_path: Path, usage: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Ten judged items under a $0.39 cap, the judge reporting `usage` on each call ($0.13 a call for 1,000
    prompt and 100 completion tokens at the prices below): (the judge's calls, the results' summary)."""
    from fake_judge import FakeJudge

    with FakeJudge() as judge:
        judge.usage = usage
        (tmp_path / "judged.yaml").write_text(judged_spec(judge.base_url, {"max_usd": 0.39}, 100.0, 300.0))
        done = run_cli("run", "judged.yaml", "--output", "judged.json", cwd=tmp_path)
        assert done.code == 0, done.output
        calls = judge.calls
    return calls, json.loads((tmp_path / "judged.json").read_text())["summary"]


def judged_spec(judge_url: str, budget: dict[str, Any], prompt_price: float, completion_price: float) -> str:
    """Ten items, one judged scorer (`answer_relevancy`), one at a time under `budget`; the judge `pj` priced
    in USD per million prompt and completion tokens."""
    data = [{"id": f"c{i}", "input": "Is it sunny?", "output": "It is sunny."} for i in range(10)]
    return json.dumps({"version": 1, "data": data, "max_errors": 10, "concurrency": 1, "budget": budget,
                       "scorers": [{"type": "answer_relevancy"}],
                       "judge": {"model": "pj", "base_url": judge_url, "api_key_env": None,
                                 "prices": {"pj": {"prompt": prompt_price, "completion": completion_price}}}})


def strict_json(path: Path) -> Any:
    """The file as strict JSON: an `Infinity` or `NaN` in it is refused, as every other JSON reader refuses it."""
    def refuse(name: str) -> None:
        raise AssertionError(f"{path.name} holds {name}")

    return json.loads(path.read_text(), parse_constant=refuse)


@pytest.mark.parametrize("shape", ["turns", "trials"])
def test_finite_costs_that_add_up_past_the_largest_float_reach_the_cap(tmp_path: Path, shape: str) -> None:
    """Each turn of a conversation (or each trial) reporting $1e308 is finite, but two add up to infinity:
    a conversation's infinite cost counted as $0 against the cap (the budget off for a run of them), and
    the results and the report said nothing of what was spent. The sum stops at the largest float."""
    big = {"text": "sunny", "cost_usd": 1e308}
    rows = [{"id": f"q{i}", "inputs": ["a", "b"], "outputs": [big, big]} if shape == "turns"
            else {"id": f"q{i}", "input": "q", "output": big} for i in range(6)]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {"version": 1, "data": "runs.jsonl", "target": {"type": "recorded"}, "budget": {"max_usd": 1},
            "max_errors": 6, "gates": [{"type": "includes", "value": "sunny"}]}
    if shape == "trials":
        spec["repeats"] = 2
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    done = run_cli("run", "--output", "out.json", cwd=tmp_path)
    assert done.code == 0, done.output
    results = strict_json(tmp_path / "out.json")
    assert results["summary"]["budget"]["items_not_run"] == 5  # the first item reached the cap
    stopped = "budget exceeded: $1.798e+308 spent of max_usd $1; not run"
    assert [i["error"] for i in results["items"][1:]] == [stopped] * 5
    assert results["summary"]["budget"]["spent_usd"] == results["summary"]["cost"]["usd"] == sys.float_info.max
    assert "5 items not run: budget exceeded (spent $1.798e+308, 0 tokens)" in done.stdout
    report = run_cli("report", "out.json", cwd=tmp_path)
    assert "spent $1.798e+308, 0 tokens" in report.stdout and "cost $1.798e+308" in report.stdout, report.output


def test_a_merge_whose_shards_spend_adds_up_past_the_largest_float_says_the_largest_float(tmp_path: Path) -> None:
    from evalgate.results.merge import merge

    spec = recorded_costs(tmp_path, 8, 1e308, 1.0)
    shards = [tmp_path / "s1.json", tmp_path / "s2.json"]
    for index, path in enumerate(shards, 1):
        run_spec(spec, output=path, shard=f"{index}/2")
        assert strict_json(path)["summary"]["budget"]["spent_usd"] == 1e308  # each shard's first item: its cap
    merge(shards, tmp_path / "merged.json")
    summary = strict_json(tmp_path / "merged.json")["summary"]
    assert summary["budget"]["spent_usd"] == summary["cost"]["usd"] == sys.float_info.max
    assert summary["budget"]["items_not_run"] == 6


def test_a_judge_reporting_tokens_past_any_price_reaches_the_cap_and_a_resume_keeps_it(tmp_path: Path) -> None:
    """A judge's token counts are its word: 10**308 prompt tokens at $2 per 1M cost more than a float holds.
    That infinite cost was journaled as null, so a `--resume` under the same cap counted the judge's spend
    as $0 and started the items the budget had stopped."""
    from fake_judge import FakeJudge

    with FakeJudge() as judge:
        judge.usage = {"prompt_tokens": 10**308, "completion_tokens": 1}
        (tmp_path / "evalgate.yaml").write_text(judged_spec(judge.base_url, {"max_usd": 1.0}, 2.0, 2.0))
        first = run_cli("run", "--output", "out.json", cwd=tmp_path)
        assert first.code == 0, first.output
        assert judge.calls == 1
        results = strict_json(tmp_path / "out.json")
        assert results["items"][0]["judge_cost_usd"] == {"answer_relevancy": sys.float_info.max}
        assert results["summary"]["budget"]["spent_usd"] == sys.float_info.max
        assert results["summary"]["budget"]["items_not_run"] == 9
        again = run_cli("run", "--output", "out.json", "--resume", cwd=tmp_path)
        assert again.code == 0, again.output
        assert judge.calls == 1  # the journal's spend still reaches the cap: nothing more is asked
    resumed = strict_json(tmp_path / "out.json")
    assert resumed["summary"]["budget"]["items_not_run"] == 9
    assert resumed["summary"]["cost"]["judge_usd"] == sys.float_info.max  # the journaled item's judge spend
