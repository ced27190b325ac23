"""The judge client against the fake judge on 127.0.0.1: repair, faults, cache, usage, cost, secrets, serve."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli
from fake_judge import FakeJudge
from pydantic import BaseModel

from evalgate import run_evals, run_spec
from evalgate.judge import Judge, cost_usd, parse_reply
from evalgate.judge.prompts import ANSWER_RELEVANCY, FAITHFULNESS, RUBRIC_BINARY, RUBRIC_GRADED
from evalgate.judge.served import Server
from evalgate.load.items import Item
from evalgate.replies import Run
from evalgate.scorers import judge_reply_models as r
from evalgate.scorers import judged

FAKE_JUDGE = Path(__file__).with_name("fake_judge.py")
SECRET = "sk-evalgate-test-DO-NOT-LEAK-0123456789"
ITEMS = [  # distinct outputs: identical prompts would share one cached reply
    {"id": f"i{n}", "input": "Weather in Brooklyn?", "context": ["Brooklyn is sunny, 72F."], "output": text}
    for n, text in enumerate(["It is sunny in Brooklyn. It is 72F.", "Brooklyn is sunny.", "It is 72F in Brooklyn."])
]


@pytest.fixture
def fake() -> Iterator[FakeJudge]:
    with FakeJudge() as server:
        yield server


@pytest.fixture(autouse=True)
def _cache_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALGATE_NO_CACHE", raising=False)


def _judge(fake: FakeJudge, **options: object) -> Judge:
    settings = {"model": "gpt-4o-mini", "base_url": fake.base_url, "api_key_env": None,
                "retries": {"attempts": 1}, **options}
    return Judge(**settings)


def _faithfulness_run(judge: Judge, max_errors: int = 0) -> object:
    scorer = {"scorer": judged.faithfulness(ctx=judge.context()), "threshold": 0.5}
    return run_evals(data=ITEMS, scorers=[scorer], max_errors=max_errors)


# ---- replies: parse, repair, give up ----


class _Verdict(BaseModel):
    verdict: str


def test_parse_reply_tolerates_fences_and_chatter() -> None:
    assert parse_reply('```json\n{"verdict": "pass"}\n```', _Verdict).verdict == "pass"
    assert parse_reply('Here you go: {"verdict": "pass"} Hope it helps.', _Verdict).verdict == "pass"
    with pytest.raises(ValueError, match="not a JSON object"):
        parse_reply("Looks fine to me.", _Verdict)
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_reply('{"verdict": [1 2]}', _Verdict)
    with pytest.raises(ValueError, match="required shape"):
        parse_reply('{"score": 1}', _Verdict)
    # repaired as Mastra repairs it: the key with no value is dropped, and `{}` has no verdict
    with pytest.raises(ValueError, match="required shape: verdict: Field required"):
        parse_reply('{"verdict": } x }', _Verdict)


@pytest.mark.parametrize(("reply", "verdict"), [
    ('{"verdict": "pa', "pa"),  # a string cut off is closed
    ('```json\n{"verdict": "pass"', "pass"),  # an unclosed ```json fence
    ('{"verdict": "one\ntwo"}', "one\ntwo"),  # a raw newline in a string is escaped
    ('Not {"verdict": "this"} but {"verdict": "that"}.', "that"),  # after prose, the last whole object
    ('{"other": [1, {"a": tr', None),  # `tr` is completed to true; no verdict
])
def test_parse_reply_repairs_json_as_mastra_does(reply: str, verdict: str | None) -> None:
    if verdict is None:
        with pytest.raises(ValueError, match="required shape"):
            parse_reply(reply, _Verdict)
    else:
        assert parse_reply(reply, _Verdict).verdict == verdict


# Mastra's preprocessText regexes, as written there (JavaScript `\\s` spelled out, `$` as `\\Z`): the
# reference the linear implementation must agree with, on inputs small enough for them.
_JS_WS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_PIECES = ["```json", "```", "``", "json", " ", "\n", "\t", "\u00a0", "\u3000", "{", "}", '"', "\\", "x",
           "<|message|>", "[", ":"]


def _mastra_preprocess(text: str) -> str:
    import re

    from evalgate.judge.repair import escape_control_chars, last_balanced_object

    match = re.search(r"<\|message\|>([\s\S]+)\Z", text)
    if match:
        text = match.group(1)
    start = re.sub(f"^[{_JS_WS}]+", "", text)
    if re.match(r"^```json\b", start, re.ASCII):
        fenced = re.match(f"^```json[{_JS_WS}]*\n?([\\s\\S]*?)\n?[{_JS_WS}]*```[{_JS_WS}]*\\Z", start)
        if fenced and fenced.group(1):
            text = re.sub(f"[{_JS_WS}]+\\Z", "", re.sub(f"^[{_JS_WS}]+", "", fenced.group(1)))
        else:
            text = re.sub(f"^```json[{_JS_WS}]*\n?", "", start, count=1)
    balanced = last_balanced_object(text)
    return escape_control_chars(balanced if balanced is not None else text)


def test_reply_preprocessing_gives_mastras_regexes_answer() -> None:
    import random

    from evalgate.judge.repair import preprocess

    rng = random.Random(11)
    texts = ["".join(rng.choice(_PIECES) for _ in range(rng.randrange(1, 14))) for _ in range(30_000)]
    texts += ['```json\n{"a": 1}\n```', '  ```json {"a": 1} ```  \n', "```json```", '```json \n ``` ', "x<|message|>",
              '<|message|>```json\n{"a": "b"}\n```', '```json\u3000{"a": 1}\u00a0```\u2028']
    differ = [t for t in texts if preprocess(t) != _mastra_preprocess(t)]
    assert not differ, differ[:5]


@pytest.mark.parametrize("reply", [
    "```json" + " " * 1_000_000 + "x",  # Mastra's fence regex: a lazy group before 1M spaces, quadratic
    "{" + " " * 1_000_000 + "x",  # its trailing-whitespace regex over a run that does not end the text
    "<|message|>" * 100_000,
], ids=["open-fence", "inner-spaces", "markers"])
def test_a_hostile_reply_is_read_in_linear_time(reply: str) -> None:
    """A judge's reply is untrusted: one of a few MB must not hold the run for hours (the regexes took
    569 s on 10,000 spaces). Run in a subprocess with a deadline, so a regression fails, not hangs."""
    import subprocess

    code = "import sys; from evalgate.judge.repair import preprocess; preprocess(sys.stdin.read())"
    done = subprocess.run([sys.executable, "-c", code], input=reply, text=True, timeout=60, capture_output=True)
    assert done.returncode == 0, done.stderr


def test_a_reply_stopped_by_a_content_filter_is_asked_again(fake: FakeJudge) -> None:
    # Mastra fails a structured reply that ended for a content filter, whatever its JSON, and retries once
    fake.mode = "filtered_once"
    judge = _judge(fake)
    reply = judge.ask(FAITHFULNESS, "<context>\nBrooklyn is sunny.\n</context>\n\n<output>\nIt is sunny.\n</output>",
                      r.Claims)
    assert fake.calls == 2 and judge.tally().repairs == 1
    assert [c.verdict for c in reply.claims]
    judge.close()


@pytest.mark.parametrize("mode", ["malformed_once", "truncated_once", "deep_once"])
def test_one_bad_reply_is_repaired(fake: FakeJudge, mode: str) -> None:
    fake.mode = mode
    result = _faithfulness_run(_judge(fake))
    assert result.verdict == "passed"
    assert result.scores == {"faithfulness": 1.0}
    assert fake.calls == 2 * len(ITEMS)
    # items are judged concurrently, so find a repair among the requests rather than by position
    repairs = [r["messages"] for r in fake.requests if len(r["messages"]) > 2]
    assert len(repairs) == len(ITEMS)
    repair = repairs[0]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    assert "could not be used" in repair[3]["content"]
    judge = result.summary["judge"]
    assert judge["repairs"] == len(ITEMS)
    assert judge["failures"] == 0
    assert judge["calls"] == 2 * len(ITEMS)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("malformed", "not a JSON object"),
        ("truncated", "cut off"),
        ("wrong_shape", "required shape"),
    ],
)
def test_two_bad_replies_error_the_result(fake: FakeJudge, mode: str, message: str) -> None:
    fake.mode = mode
    result = _faithfulness_run(_judge(fake))
    assert fake.calls == 2 * len(ITEMS)  # one repair per item, never more
    for item in result.items:
        assert "after one repair" in item.scorer_errors["faithfulness"]
        assert message in item.scorer_errors["faithfulness"]
    assert result.summary["errored_items"] == len(ITEMS)
    assert result.verdict == "failed"  # errors exceed max_errors (0)
    assert result.summary["judge"]["failures"] == len(ITEMS)


def test_outage_errors_results_within_the_retry_budget(fake: FakeJudge) -> None:
    fake.mode = "outage"
    judge = _judge(fake, retries={"attempts": 2, "backoff_s": 0.0, "max_backoff_s": 0.0})
    result = _faithfulness_run(judge, max_errors=len(ITEMS))
    assert fake.calls == 2 * len(ITEMS)  # retried once each, then given up
    for item in result.items:
        assert "judge request failed" in item.scorer_errors["faithfulness"]
        assert "503" in item.scorer_errors["faithfulness"]
    assert result.summary["errored_items"] == len(ITEMS)
    assert result.summary["error_budget_exceeded"] is False  # within max_errors
    assert result.summary["judge"]["retries"] == len(ITEMS)


def test_outage_beyond_max_errors_fails_the_run(fake: FakeJudge) -> None:
    fake.mode = "outage"
    result = _faithfulness_run(_judge(fake), max_errors=1)
    assert result.summary["errored_items"] == len(ITEMS)
    assert result.summary["error_budget_exceeded"] is True
    assert result.verdict == "failed"


def test_a_transient_outage_is_retried_through(fake: FakeJudge) -> None:
    fake.mode, fake.fail_first = "flaky", 1
    result = _faithfulness_run(_judge(fake, retries={"attempts": 3, "backoff_s": 0.0}))
    assert result.verdict == "passed"
    assert result.summary["errored_items"] == 0
    assert result.summary["judge"]["retries"] == 1


def test_a_reply_that_is_not_a_completion_errors(fake: FakeJudge) -> None:
    fake.mode = "not_completion"
    result = _faithfulness_run(_judge(fake), max_errors=len(ITEMS))
    assert all("not a chat completion" in i.scorer_errors["faithfulness"] for i in result.items)


def test_a_reply_that_is_not_a_completion_is_not_replayed_from_the_cache(tmp_path: Path, fake: FakeJudge) -> None:
    # stored as any JSON reply is, it errored every verdict of every later run until the cache expired
    fake.mode = "not_completion"
    spec = _spec(tmp_path, fake, "  cache: {dir: judge-cache}\n")
    first = run_spec(spec)
    assert first.summary["judge"]["failures"] == 2 * len(ITEMS)
    fake.mode = "ok"
    second = run_spec(spec)
    assert second.summary["judge"]["failures"] == 0 and second.summary["judge"]["cached_calls"] == 0
    assert fake.calls == 4 * len(ITEMS)
    assert run_spec(spec).summary["judge"]["cached_calls"] == 2 * len(ITEMS)  # the good replies are kept


# ---- the request ----


def test_request_asks_for_json_at_temperature_zero(fake: FakeJudge) -> None:
    _faithfulness_run(_judge(fake, max_tokens=300))
    body = fake.requests[0]
    assert body["model"] == "gpt-4o-mini"
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 300
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0]["content"] == FAITHFULNESS.system
    _faithfulness_run(_judge(fake, json_mode=False))
    assert "response_format" not in fake.requests[-1]


# ---- cache, usage, cost ----


def _spec(tmp_path: Path, fake: FakeJudge, judge_extra: str = "", model: str = "gpt-4o-mini") -> Path:
    (tmp_path / "data.json").write_text(json.dumps(ITEMS))
    path = tmp_path / "evalgate.yaml"
    path.write_text(
        f"version: 1\ndata: data.json\njudge:\n  model: {model}\n  base_url: {fake.base_url}\n"
        f"  api_key_env: null\n{judge_extra}"
        "scorers:\n  - type: faithfulness\n    threshold: 0.9\n  - type: answer_relevancy\n"
    )
    return path


def test_second_run_is_served_from_the_cache(tmp_path: Path, fake: FakeJudge) -> None:
    spec = _spec(tmp_path, fake, "  cache: {dir: judge-cache}\n")
    first = run_spec(spec)
    sent = fake.calls
    assert sent == 2 * len(ITEMS)
    assert first.summary["judge"]["cached_calls"] == 0
    second = run_spec(spec)
    assert fake.calls == sent  # zero judge calls
    assert second.scores == first.scores
    judge = second.summary["judge"]
    assert judge["cached_calls"] == sent
    assert judge["calls"] == 0
    assert judge["usage"]["total_tokens"] == 0
    assert judge["cost_usd"] == 0.0
    assert (tmp_path / "judge-cache").is_dir()
    bypassed = run_spec(spec, use_cache=False)  # --no-cache: every request is sent again
    assert fake.calls == 2 * sent
    assert bypassed.summary["judge"]["cached_calls"] == 0


def test_a_judge_cache_that_cannot_be_written_is_a_warning(tmp_path: Path, fake: FakeJudge) -> None:
    spec = _spec(tmp_path, fake, "  cache: {dir: judge-cache}\n")
    (tmp_path / "judge-cache").write_text("not a folder")
    result = run_spec(spec)
    assert result.summary["judge"]["calls"] == 2 * len(ITEMS)  # the run is whole; only nothing was kept
    [warning] = result.summary["warnings"]
    assert warning.startswith("judge gpt-4o-mini: the response cache in ") and "could not keep 6 replies" in warning


def test_every_trial_asks_the_judge_and_a_rerun_replays_each_trial(tmp_path: Path, fake: FakeJudge) -> None:
    # Recorded runs: every trial's output is the same, so only the trial in the key keeps trials apart.
    spec = _spec(tmp_path, fake, "  cache: {dir: judge-cache}\n")
    first = run_spec(spec, repeats=3)
    assert fake.calls == 2 * len(ITEMS) * 3  # no trial was given another trial's verdict
    assert first.summary["judge"]["cached_calls"] == 0
    second = run_spec(spec, repeats=3)
    assert fake.calls == 2 * len(ITEMS) * 3 and second.summary["judge"]["cached_calls"] == 2 * len(ITEMS) * 3
    assert second.scores == first.scores
    plain = run_spec(spec)  # without repeats: the keys of before repeats existed, none of a trial's
    assert fake.calls == 2 * len(ITEMS) * 4 and plain.summary["judge"]["cached_calls"] == 0
    again = run_spec(spec)
    assert fake.calls == 2 * len(ITEMS) * 4 and again.summary["judge"]["cached_calls"] == 2 * len(ITEMS)


def test_usage_and_cost_add_up(tmp_path: Path, fake: FakeJudge) -> None:
    result = run_spec(_spec(tmp_path, fake))
    judge = result.summary["judge"]
    usage = judge["usage"]
    assert usage["prompt_tokens"] == fake.prompt_tokens > 0
    assert usage["completion_tokens"] == fake.completion_tokens > 0
    assert usage["total_tokens"] == fake.prompt_tokens + fake.completion_tokens
    # gpt-4o-mini: $0.15 / 1M prompt tokens, $0.60 / 1M completion tokens
    expected = (fake.prompt_tokens * 0.15 + fake.completion_tokens * 0.60) / 1e6
    assert judge["cost_usd"] == pytest.approx(expected)
    assert judge["prompts"] == {"answer_relevancy": ANSWER_RELEVANCY.hash, "faithfulness": FAITHFULNESS.hash}


def test_price_table_is_configurable_and_unknown_models_cost_null(tmp_path: Path, fake: FakeJudge) -> None:
    priced = run_spec(_spec(tmp_path, fake, "  prices: {my-judge: {prompt: 1.0, completion: 2.0}}\n", "my-judge"))
    expected = (fake.prompt_tokens * 1.0 + fake.completion_tokens * 2.0) / 1e6
    assert priced.summary["judge"]["cost_usd"] == pytest.approx(expected)
    unpriced = run_spec(_spec(tmp_path, fake, model="some-local-model"))
    assert unpriced.summary["judge"]["cost_usd"] is None
    assert unpriced.summary["judge"]["usage"]["total_tokens"] > 0


def test_a_token_count_past_any_float_is_left_out_not_the_verdicts_error(tmp_path: Path, fake: FakeJudge) -> None:
    # `1` and 400 zeros is a JSON integer; priced, it overflowed a float and errored every verdict it came with
    fake.usage = {"prompt_tokens": 10**400, "completion_tokens": 7}
    result = run_spec(_spec(tmp_path, fake))
    assert result.summary["errored_items"] == 0
    assert all(not item.scorer_errors for item in result.items)
    judge = result.summary["judge"]
    assert judge["calls"] == 2 * len(ITEMS) and judge["failures"] == 0
    assert judge["usage"]["prompt_tokens"] == 0 and judge["usage"]["completion_tokens"] == 7 * judge["calls"]
    assert judge["cost_usd"] == pytest.approx(7 * judge["calls"] * 0.60 / 1e6)


def test_cost_formula() -> None:
    assert cost_usd("gpt-4o-mini", 1_000_000, 0, {"gpt-4o-mini": {"prompt": 0.15, "completion": 0.6}}) == 0.15
    assert cost_usd("nope", 10, 10, {}) is None


def test_prompt_hashes_identify_templates() -> None:
    hashes = {FAITHFULNESS.hash, ANSWER_RELEVANCY.hash, RUBRIC_BINARY.hash, RUBRIC_GRADED.hash}
    assert len(hashes) == 4
    assert all(len(h) == 12 for h in hashes)
    assert FAITHFULNESS.hash == FAITHFULNESS.hash  # stable within a process; the text fixes it across runs


# ---- secrets ----


def test_the_api_key_is_sent_but_never_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALGATE_TEST_JUDGE_KEY", SECRET)
    with FakeJudge(api_key=SECRET) as fake:
        spec = _spec(tmp_path, fake).read_text().replace("api_key_env: null", "api_key_env: EVALGATE_TEST_JUDGE_KEY")
        (tmp_path / "evalgate.yaml").write_text(spec)
        out = tmp_path / "out" / "results.json"
        result = run_cli("run", "evalgate.yaml", "--output", out, cwd=tmp_path)
        assert result.code == 0, result.output
        assert fake.authorizations[0] == f"Bearer {SECRET}"
    written = "".join(p.read_text() for p in out.parent.iterdir())
    assert json.loads(out.read_text())["summary"]["judge"]["calls"] == 2 * len(ITEMS)
    assert SECRET not in result.output + written


def test_a_rejected_key_is_not_echoed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALGATE_TEST_JUDGE_KEY", SECRET)
    with FakeJudge(api_key="the-right-key") as fake:
        spec = _spec(tmp_path, fake).read_text().replace("api_key_env: null", "api_key_env: EVALGATE_TEST_JUDGE_KEY")
        (tmp_path / "evalgate.yaml").write_text(spec)
        out = tmp_path / "results.json"
        result = run_cli("run", "evalgate.yaml", "--output", out, cwd=tmp_path)
    assert result.code == 4, result.output  # every item errored on a wrong key: could not evaluate
    text = out.read_text()
    errors = [i["scorer_errors"]["faithfulness"] for i in json.loads(text)["items"]]
    assert all("401" in e and "$EVALGATE_TEST_JUDGE_KEY" in e for e in errors)
    assert SECRET not in result.output + text


def test_the_key_is_not_in_the_judges_repr(fake: FakeJudge, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALGATE_TEST_JUDGE_KEY", SECRET)
    judge = _judge(fake, api_key_env="EVALGATE_TEST_JUDGE_KEY")
    _faithfulness_run(judge)
    assert fake.authorizations[-1] == f"Bearer {SECRET}"
    assert SECRET not in repr(judge) + str(judge.settings) + json.dumps(judge.settings.model_dump())


# ---- judge.serve ----


def test_serve_starts_a_local_judge_and_stops_it(fake: FakeJudge) -> None:
    judge = Judge(model="m", serve=[sys.executable, str(FAKE_JUDGE)], api_key_env=None)
    scorer = judged.toxicity(ctx=judge.context())
    score, reason = scorer.fn(Item(input="q"), Run(texts=["You are stupid. Nice day."]))
    assert (score, reason) == (0.5, "1 of 2 statements toxic. Toxic: 'You are stupid.' (fake)")
    server = judge._server
    assert server is not None and server.proc is not None
    proc = server.proc
    judge.close()
    assert proc.poll() is not None  # stopped
    # a run opens it again on demand and closes it at the end
    result = run_evals(data=[{"input": "q", "output": "Fine."}], scorers=[scorer])
    assert result.scores == {"toxicity": 0.0}
    assert judge._server is None


def test_serve_that_prints_no_url_errors_fast() -> None:
    judge = Judge(model="m", serve=[sys.executable, "-c", "print('ready!')"], api_key_env=None)
    result = run_evals(data=[{"input": "q", "output": "Fine."}], scorers=[judged.toxicity(ctx=judge.context())])
    [item] = result.items
    assert "did not print its base URL" in item.scorer_errors["toxicity"]


def test_a_judge_key_with_a_trailing_newline_is_named_never_shown(fake: FakeJudge,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-judge-pasted-0a1b2c3d4e5f"
    monkeypatch.setenv("EVALGATE_JUDGE_KEY", key + "\n")
    result = _faithfulness_run(_judge(fake, api_key_env="EVALGATE_JUDGE_KEY"), max_errors=len(ITEMS))
    for item in result.items:
        message = item.scorer_errors["faithfulness"]
        assert "environment variable EVALGATE_JUDGE_KEY contains a line break" in message and key not in message
    assert fake.calls == 0
    # within max_errors, yet nothing was measured: the threshold is not met, and says why (issue 34, defect 7)
    [threshold] = result.threshold_results
    assert result.verdict == "failed" and threshold.unscored == f"no result could be scored: {len(ITEMS)} judge errors"


def test_a_served_judge_that_logs_to_stdout_is_read_not_kept(tmp_path: Path) -> None:
    # Every line after the URL used to be queued for nobody: 300 MB of logs, 300 MB held by evalgate.
    done = tmp_path / "done"
    script = (f"import pathlib, sys\nprint('http://127.0.0.1:9/v1', flush=True)\n"
              f"for _ in range(200_000): sys.stdout.buffer.write(b'x' * 1000 + b'\\n')\n"
              f"sys.stdout.flush()\npathlib.Path({str(done)!r}).touch()\nsys.stdin.read()\n")
    before = _rss_mb()
    server = Server([sys.executable, "-c", script], tmp_path)
    try:
        assert server.start() == "http://127.0.0.1:9/v1"
        deadline = time.monotonic() + 30
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # the last reads
        assert done.exists() and _rss_mb() - before < 50
    finally:
        server.stop()


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
