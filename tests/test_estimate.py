"""`evalgate estimate`: calls, tokens and cost from the spec, its data and price tables; nothing is sent."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import run_cli
from fake_agent import FakeServer
from fake_judge import FakeJudge

from evalgate.judge import prompts

SYSTEM = "You are brief."
PRICES = {"prompt": 0.15, "completion": 0.6}


def tok(text: str) -> int:
    return math.ceil(len(text) / 4)


def write_spec(tmp_path: Path, url: str, budget: float) -> Path:
    spec = {
        "version": 1,
        "data": [{"id": "a", "input": "What is the weather in Paris today?"},
                 {"id": "b", "inputs": ["hi there", "and tomorrow?"]}],
        "target": {"type": "openai", "base_url": f"{url}/v1", "model": "fake-mini", "max_tokens": 100,
                   "system": SYSTEM, "api_key_env": None, "prices": {"fake-mini": PRICES}},
        "scorers": [{"type": "answer_relevancy"}, {"type": "includes", "value": "x"}],
        "judge": {"model": "gpt-4o-mini", "base_url": f"{url}/v1", "max_tokens": 200, "api_key_env": None},
        "budget": {"max_usd": budget},
    }
    path = tmp_path / "evalgate.yaml"
    path.write_text(json.dumps(spec))
    return path


def test_estimate_counts_calls_tokens_and_cost_and_sends_nothing(tmp_path: Path, server: FakeServer) -> None:
    spec = write_spec(tmp_path, server.url, budget=1.0)
    done = run_cli("estimate", spec, "--json", cwd=tmp_path)
    assert done.code == 0, done.output
    assert server.count == 0  # neither the target nor the judge was asked anything
    found = json.loads(done.stdout)
    target, judge = found["lines"]
    assert target["calls"] == [3, 3]  # one call per turn: 1 + 2
    system = tok(SYSTEM)
    low = (system + tok("What is the weather in Paris today?")) + (system + tok("hi there")) \
        + (system + tok("hi there") + tok("and tomorrow?"))
    assert target["prompt_tokens"] == [low, low + 100]  # the second turn resends a reply of up to 100 tokens
    assert target["completion_tokens"] == [0, 300]
    high_cost = ((low + 100) * 0.15 + 300 * 0.6) / 1e6
    assert target["cost_usd"] == [pytest.approx(low * 0.15 / 1e6), pytest.approx(high_cost)]
    assert judge["calls"] == [2, 4]  # one judged scorer, two items; a repair each at most
    ask = tok(prompts.ANSWER_RELEVANCY.system)
    assert judge["prompt_tokens"][0] == 2 * ask + tok("What is the weather in Paris today?") + tok("hi there") + 2 * 12
    assert judge["completion_tokens"] == [0, 800]
    low_total, high_total = found["cost_usd"]
    assert low_total == pytest.approx(target["cost_usd"][0] + judge["cost_usd"][0])
    assert high_total == pytest.approx(target["cost_usd"][1] + judge["cost_usd"][1])


def test_repeats_multiply_every_call_by_the_trials(tmp_path: Path, server: FakeServer) -> None:
    spec = write_spec(tmp_path, server.url, budget=1.0)
    once = json.loads(run_cli("estimate", spec, "--json", cwd=tmp_path).stdout)
    data = json.loads(spec.read_text())
    spec.write_text(json.dumps({**data, "repeats": 3}))
    done = run_cli("estimate", spec, "--json", cwd=tmp_path)
    assert done.code == 0, done.output
    thrice = json.loads(done.stdout)
    assert thrice["items"] == once["items"] == 2
    for line, single in zip(thrice["lines"], once["lines"], strict=True):
        assert line["calls"] == [3 * n for n in single["calls"]]
        assert line["prompt_tokens"] == [3 * n for n in single["prompt_tokens"]]
    assert thrice["cost_usd"] == [pytest.approx(3 * c) for c in once["cost_usd"]]


def test_the_printed_estimate_says_whether_the_budget_fits(tmp_path: Path, server: FakeServer) -> None:
    fits = run_cli("estimate", write_spec(tmp_path, server.url, budget=1.0), cwd=tmp_path)
    assert "target (openai) fake-mini: 3 calls" in fits.stdout and "judge gpt-4o-mini: 2 - 4 calls" in fits.stdout
    assert "budget max_usd $1: fits" in fits.stdout
    tight = run_cli("estimate", write_spec(tmp_path, server.url, budget=1e-7), cwd=tmp_path)
    assert "does not fit" in tight.stdout
    assert server.count == 0


def test_unknown_prices_and_agents_say_so(tmp_path: Path) -> None:
    spec = {"version": 1, "data": [{"input": "hi"}], "target": {"type": "command", "run": "cat"},
            "scorers": [{"type": "faithfulness"}], "judge": {"model": "house-model", "api_key_env": None}}
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    done = run_cli("estimate", cwd=tmp_path)
    assert done.code == 0, done.output
    assert "target (command): 1 calls; tokens and cost are whatever the agent reports" in done.stdout
    assert "no price for `house-model`" in done.stdout and "total: unknown" in done.stdout
    bad = run_cli("estimate", "missing.yaml", cwd=tmp_path)
    assert bad.code == 2 and "Traceback" not in bad.output


def _strict_json(text: str) -> object:
    def refuse(name: str) -> object:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


OVERFLOWING = """\
version: 1
data:
  - {id: a, input: "What is the weather in Paris today?"}
target:
  type: openai
  base_url: http://127.0.0.1:9/v1
  model: m
  api_key_env: null
  max_tokens: 100
  prices:
    m:
      prompt: 0.15
      completion: %(target)s
scorers:
  - {type: answer_relevancy}
judge:
  model: j
  base_url: http://127.0.0.1:9/v1
  api_key_env: null
  max_tokens: 100
  prices:
    j:
      input: %(judge)s
      output: 0.6
"""


@pytest.mark.parametrize("mode", [("--json",), ()], ids=["json", "text"])
@pytest.mark.parametrize(("target", "judge", "where"), [
    ("1.0e+308", "0.15", "evalgate.yaml:13: target.prices.m.completion: 1e+308"),
    ("0.6", "1.7e+308", "evalgate.yaml:23: judge.prices.j.input: 1.7e+308"),
], ids=["target", "judge"])
def test_a_price_so_large_the_estimate_overflows_is_a_spec_error_at_the_price(
    tmp_path: Path, mode: tuple[str, ...], target: str, judge: str, where: str
) -> None:
    # 1e308 USD per 1M tokens is a finite price, but times the tokens it is past the largest float:
    # `--json` printed `Infinity`, which no JSON reader takes, and the text said `$inf`.
    (tmp_path / "evalgate.yaml").write_text(OVERFLOWING % {"target": target, "judge": judge})
    done = run_cli("estimate", "evalgate.yaml", *mode, cwd=tmp_path)
    assert done.code == 2, done.output
    assert where in done.stderr and "write the model's price in USD per 1M tokens" in done.stderr
    assert "Infinity" not in done.output and "inf" not in done.stdout and "Traceback" not in done.output
    # the same spec with sane prices: the output is strict JSON
    (tmp_path / "evalgate.yaml").write_text(OVERFLOWING % {"target": "0.6", "judge": "0.15"})
    done = run_cli("estimate", "evalgate.yaml", "--json", cwd=tmp_path)
    assert done.code == 0, done.output
    assert all(math.isfinite(c) for c in _strict_json(done.stdout)["cost_usd"])  # type: ignore[index]


def counting_as_estimated(judge: FakeJudge) -> FakeJudge:
    """The judge reports the usage the estimate assumes: 4 characters a token, message by message."""
    answer = judge.reply

    def reply(body: dict, count: int) -> tuple[int, object]:
        status, sent = answer(body, count)
        text = sent["choices"][0]["message"]["content"]
        sent["usage"] = {"prompt_tokens": sum(tok(m["content"]) for m in body["messages"]),
                         "completion_tokens": tok(text)}
        return status, sent

    judge.reply = reply  # type: ignore[method-assign]
    return judge


def test_a_turns_judged_check_is_estimated_from_its_turns_input(tmp_path: Path) -> None:
    """A per-turn judged check judges its turn's input and run: the estimate counted the first turn's
    input instead, so a long later turn cost more than the estimate's high end. Against a judge that
    reports usage as the estimate counts it (4 characters a token), the run's cost lies in the range."""
    with counting_as_estimated(FakeJudge()) as judge:
        turns = [{"input": "Hello there.", "output": "Hi."},
                 {"input": "Is it sunny in Paris? " * 500, "output": "It is sunny in Paris.",
                  "scorers": [{"type": "answer_relevancy"}]}]
        spec = {"version": 1, "data": [{"id": "t", "turns": turns}], "scorers": [{"type": "includes", "value": "x"}],
                "judge": {"model": "j", "base_url": judge.base_url, "api_key_env": None, "max_tokens": 200,
                          "prices": {"j": {"prompt": 1.0, "completion": 2.0}}}}
        (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
        done = run_cli("estimate", "--json", cwd=tmp_path)
        assert done.code == 0, done.output
        low, high = json.loads(done.stdout)["cost_usd"]
        ran = run_cli("run", "--output", "out.json", cwd=tmp_path)
        assert ran.code == 0, ran.output
        assert judge.calls == 1
    spent = json.loads((tmp_path / "out.json").read_text())["summary"]["cost"]["usd"]
    assert low <= spent <= high


def test_the_high_end_holds_a_repair_request(tmp_path: Path) -> None:
    """A repair resends the exchange and asks again, naming the problem and the reply's shape: the high
    end counted the exchange only, so a judge repairing every reply used more prompt tokens than it."""
    with counting_as_estimated(FakeJudge(mode="malformed_once")) as judge:
        data = [{"id": f"q{i}", "input": "Is it sunny?", "output": "Yes."} for i in range(3)]
        spec = {"version": 1, "data": data, "scorers": [{"type": "answer_relevancy"}],
                "judge": {"model": "j", "base_url": judge.base_url, "api_key_env": None, "max_tokens": 60,
                          "prices": {"j": {"prompt": 1.0, "completion": 2.0}}}}
        (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
        done = run_cli("estimate", "--json", cwd=tmp_path)
        assert done.code == 0, done.output
        line = json.loads(done.stdout)["lines"][1]
        ran = run_cli("run", "--output", "out.json", cwd=tmp_path)
        assert ran.code == 0, ran.output
        assert judge.calls == 6 == line["calls"][1]  # every item repaired once
    summary = json.loads((tmp_path / "out.json").read_text())["summary"]
    low, high = line["prompt_tokens"]
    assert low <= summary["judge"]["usage"]["prompt_tokens"] <= high
    assert line["cost_usd"][0] <= summary["cost"]["usd"] <= line["cost_usd"][1]
