"""The results file keeps every value exactly, however the items are encoded, in data order."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

from conftest import CLI_TIMEOUT_S, run_cli
from same_id import BY_KIND, assert_each_keeps_its_reason, same_id_spec

from evalgate import run_evals
from evalgate.api import run_spec
from evalgate.results.model import load_results
from evalgate.results.writer import ResultsWriter, item_bytes

AWKWARD = [0.1 + 0.2, 1 / 3, 5e-324, 2.2250738585072014e-308, 0.9999999999999999, 1e-7, 0.123456789,
           struct.unpack("d", struct.pack("Q", 0x3FEFFFFFFFFFFFFF))[0]]


def test_awkward_floats_and_values_round_trip_exactly(tmp_path: Path) -> None:
    big = 2**70 + 1  # beyond orjson's 64 bits: json encodes it
    data = [{"id": f"x{i}", "input": {"n": big, "s": "é \u2028 \ud83d", "k": [None, True, -0.0]}, "output": "ok"}
            for i in range(len(AWKWARD))]
    scores = iter(AWKWARD)

    def exact(item: object, run: object) -> float:
        return next(scores)

    result = run_evals(data=data, scorers=[exact], concurrency=1)
    writer = ResultsWriter(tmp_path / "out.json")
    for item in result.items:
        writer.append(item.record())
    writer.finish(result.header())
    writer.close()
    written = json.loads((tmp_path / "out.json").read_bytes())
    assert [i["scores"]["exact"] for i in written["items"]] == AWKWARD
    assert [struct.pack("d", i["scores"]["exact"]) for i in written["items"]] == [struct.pack("d", f) for f in AWKWARD]
    assert written["items"][0]["input"] == {"n": big, "s": "é \u2028 \ud83d", "k": [None, True, -0.0]}
    assert written["items"] == [json.loads(json.dumps(i.record())) for i in result.items]


def test_nan_scores_are_null_in_both_encoders() -> None:
    record = {"index": 0, "id": "a", "scores": {"s": float("nan"), "t": float("inf")}}
    assert json.loads(item_bytes(record)) == {"index": 0, "id": "a", "scores": {"s": None, "t": None}}
    surrogate = {**record, "id": "\ud800"}  # orjson refuses a lone surrogate: json takes it, escaped
    assert json.loads(item_bytes(surrogate)) == {"index": 0, "id": "\ud800", "scores": {"s": None, "t": None}}


def test_items_finishing_out_of_order_are_written_in_data_order(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path / "out.json")
    for index in (2, 0, 3, 1):
        writer.append({"index": index, "id": f"i{index}", "duration_ms": 0.0})
    writer.finish({"schema_version": 1, "name": "x"})
    writer.close()
    assert [i["index"] for i in json.loads((tmp_path / "out.json").read_text())["items"]] == [0, 1, 2, 3]


def test_a_big_recorded_run_writes_every_item_once_in_order(tmp_path: Path) -> None:
    """Thousands of fast items share journal writes; the copy to the results file splits no line."""
    lines = [json.dumps({"id": f"q{i}", "input": f"question {i}\nwith a newline", "output": f"answer {i} \u00e9"})
             for i in range(5000)]
    (tmp_path / "runs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "spec.yaml").write_text(
        "version: 1\ndata: runs.jsonl\ngates:\n  - type: includes\n    value: answer\n", encoding="utf-8")
    run_spec(tmp_path / "spec.yaml", output=tmp_path / "out.json")
    results = load_results(tmp_path / "out.json")
    assert [i.id for i in results.items] == [f"q{i}" for i in range(5000)]
    assert results.items[4999].input == "question 4999\nwith a newline"
    assert results.items[17].output == {"text": "answer 17 \u00e9", "tool_calls": []}


def test_item_lines_redact_known_secrets_in_both_encoders() -> None:
    """orjson writes the journal and the results' items: a secret there is masked as in every other writer."""
    from evalgate.infra import redaction

    secret, quoted = "ghp_results4f3e2d1c", 'pass"word-9c8b7a'
    redaction.register([secret, quoted])
    try:
        fast = item_bytes({"index": 0, "id": "a", "input": f"token {secret}", "output": {"text": f"say {quoted}"}})
        slow = item_bytes({"index": 0, "id": "\ud800", "input": f"token {secret}"})  # orjson refuses: json writes it
    finally:
        redaction.forget_all()
    for line in (fast, slow):
        assert secret.encode() not in line and b"word-9c8b7a" not in line, line
    assert json.loads(fast)["input"] == "token ***" and json.loads(fast)["output"]["text"] == "say ***"
    assert json.loads(slow)["input"] == "token ***"


def test_a_secret_that_spells_json_is_masked_in_text_and_the_file_stays_results(tmp_path: Path) -> None:
    """A header's `${VAR}` value is a secret, however short: `true`, `null` or `1234` were masked in the
    JSON text, so `"ok":true` became `"ok":***` and `"ms":12345.6` became `***5.6`: results nothing reads."""
    from evalgate.infra import redaction

    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata:\n  - {id: a, input: 'pin 1234 is true', output: {text: 'null 1234 true',"
        " tool_calls: [{name: t, args: {ok: true, n: 12345.6, none: null}}]}}\n"
        "gates: [{type: called_tool, tool: t}]\n")
    redaction.register(["true", "null", "1234", "failed"])
    try:
        run_spec(tmp_path / "evalgate.yaml", output=tmp_path / "out.json")
    finally:
        redaction.forget_all()
    results = load_results(tmp_path / "out.json")  # JSON, and results
    [item] = json.loads((tmp_path / "out.json").read_text())["items"]
    assert item["input"] == "pin *** is ***" and item["output"]["text"] == "*** *** ***"
    assert item["output"]["tool_calls"][0]["args"] == {"ok": True, "n": 12345.6, "none": None}
    assert results.verdict == "passed" and results.items[0].gates == {"called_tool:t": 1.0}


def test_a_secret_inside_base64_text_is_masked_at_any_alignment() -> None:
    """An agent that base64-encodes what it holds (a Basic auth header, a data URL) leaks the secret
    all the same: its encoded forms are masked, as the Actions runner masks them."""
    import base64

    from evalgate.infra import redaction

    secret = "ghs_base64leak0123456789"
    redaction.register([secret])
    try:
        for prefix in (b"", b"u", b"us", b"user:"):
            for encode in (base64.b64encode, base64.urlsafe_b64encode):
                text = encode(prefix + secret.encode() + b"\n").decode()
                masked = redaction.redact(text)
                assert "***" in masked and len(masked) < len(text) - 20, (prefix, text, masked)
        assert redaction.redact("ordinary base64: aGVsbG8gd29ybGQ=") == "ordinary base64: aGVsbG8gd29ybGQ="
    finally:
        redaction.forget_all()


def test_redaction_of_long_repetitive_text_is_the_regexs_answer_found_in_linear_time() -> None:
    """A hostile secret (`xxx…xY`, say a spec's header literal) against a long repetitive output cost
    the regex their product (a 200 KB run took minutes): long texts are searched with `find` instead."""
    import random

    from evalgate.infra import redaction

    forms = ["sk-short-secret-123", "short-secret", "token_abc", "x" * 3000 + "Y"]
    redaction.register(forms)
    try:
        assert len("x" * 200_000) * len(redaction._ordered[0]) > redaction.REGEX_WORK_MAX  # the long path
        assert redaction.redact("x" * 200_000 + forms[3]) == "x" * 200_000 + "***"
        assert redaction.redact_bytes(b"x" * 200_000 + b"Y") == b"x" * 197_000 + b"***"
        rng = random.Random(5)
        pieces = ["a", " ", "sk-", "x", *forms[:3]]
        for _ in range(3000):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
            assert redaction._masked(text, redaction._ordered, "***") == redaction._pattern.sub("***", text), text
    finally:
        redaction.forget_all()


def test_a_secret_too_long_for_a_regex_is_still_masked_everywhere() -> None:
    """A 300 kB header value taken as a secret: its forms are searched with `find` in every text, short or
    long, str or bytes (no regex of them is compiled, which took seconds), with the regex's answer."""
    from evalgate.infra import redaction

    huge = "x" * 150_000 + "Y" + "z" * 150_000
    redaction.register([huge, "sk-short-secret-123"])
    try:
        assert redaction.known() and redaction.longest() > redaction.REGEX_CHARS_MAX
        assert redaction.redact(f"a{huge}b") == "a***b"
        assert redaction.redact("key sk-short-secret-123.") == "key ***."
        assert redaction.redact("xY z") == "xY z"
        assert redaction.redact_bytes(f"[{huge}]".encode()) == b"[***]"
        assert redaction.holds_secret(b'"sk-short-secret-123"') and not redaction.holds_secret(b"nothing here")
        assert redaction.redact_value({"output": {huge: "sk-short-secret-123"}}) == {"output": {"***": "***"}}
    finally:
        redaction.forget_all()

def test_a_runner_token_in_the_data_never_reaches_the_results_file(tmp_path: Path) -> None:
    """The data (or a recorded reply) quoting the runner's token: the results, journal included, show ***."""
    secret = "ghp_datafile0a1b2c3d4e5f"
    (tmp_path / "runs.jsonl").write_text(json.dumps({"id": "a", "input": f"my token is {secret}",
                                                     "output": {"text": f"echo {secret}"}}) + "\n")
    (tmp_path / "spec.yaml").write_text("version: 1\nname: leak\ndata: runs.jsonl\ntarget: {type: recorded}\n"
                                        "scorers:\n  - type: includes\n    value: echo\n")
    env = {**os.environ, "GITHUB_TOKEN": secret}
    proc = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "spec.yaml", "-o", "out.json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    assert secret not in proc.stdout + proc.stderr
    item = json.loads((tmp_path / "out.json").read_text())["items"][0]
    assert item["input"] == "my token is ***" and item["output"]["text"] == "echo ***"
    assert item["scores"] == {"includes:echo": 1.0}  # the scorer saw the real text; only the file is masked
    for path in tmp_path.rglob("*"):  # whatever evalgate wrote
        if path.name != "runs.jsonl":
            assert secret not in path.read_text(errors="replace"), path


def test_a_journal_holding_a_known_secret_never_passes_it_to_the_resumed_results(tmp_path: Path) -> None:
    """A journal written before the token was known (or planted): --resume copies journal lines into the
    results as they are, so a line holding a secret is written again, redacted, and the copy is left out."""
    secret = "ghs_journaled0a1b2c3d4e5f"
    (tmp_path / "spec.yaml").write_text(
        "version: 1\ndata: [{id: a, input: q, output: sunny}, {id: b, input: q, output: rain}, "
        "{id: c, input: q, output: sunny}]\nscorers: [{type: includes, value: sunny}]\n")
    run = [sys.executable, "-m", "evalgate.cli", "run", "spec.yaml", "-o", "out.json"]
    assert subprocess.run(run, cwd=tmp_path, capture_output=True, timeout=CLI_TIMEOUT_S).returncode == 0
    items = json.loads((tmp_path / "out.json").read_text())["items"]
    items[1]["output"]["text"] = f"rain, says {secret}"  # the scores stay the run's: only the text is masked
    items[1]["reasons"] = {"includes:sunny": f"not sunny ({secret})"}
    (tmp_path / "out.json.items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items[:2]))
    env = {**os.environ, "GITHUB_TOKEN": secret}
    proc = subprocess.run([*run, "--resume"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=CLI_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "out.json").read_text())
    assert results["summary"]["resumed_items"] == 2 and results["scores"] == {"includes:sunny": 2 / 3}
    assert [i["id"] for i in results["items"]] == ["a", "b", "c"]
    assert results["items"][1]["output"]["text"] == "rain, says ***"
    assert secret not in (tmp_path / "out.json").read_text() and secret not in proc.stdout + proc.stderr


def test_a_symlink_or_fifo_at_the_journal_path_is_refused_not_followed(tmp_path: Path) -> None:
    """Nothing evalgate writes is a symlink or a FIFO: one there is refused, never written through or read."""
    import pytest

    victim = tmp_path / "victim.txt"
    victim.write_text("")  # empty: a journal path holding an empty file may be started over
    out = tmp_path / "out.json"
    journal = tmp_path / "out.json.items.jsonl"
    journal.symlink_to(victim)
    for resume in (False, True):
        with pytest.raises(FileExistsError, match="in the way of the journal"):
            ResultsWriter(out, resume=resume)
    assert victim.read_text() == ""
    journal.unlink()
    (tmp_path / "out.json").write_text('{"items": [{"index": 0, "id": "a"}]}')  # a finished run's results
    journal.symlink_to(tmp_path / "elsewhere.txt")  # dangling: --resume rebuilt the journal through it
    with pytest.raises(FileExistsError, match="in the way of the journal"):
        ResultsWriter(out, resume=True)
    assert not (tmp_path / "elsewhere.txt").exists()
    journal.unlink()
    os.mkfifo(journal)
    for resume in (False, True):
        with pytest.raises(FileExistsError, match="in the way of the journal"):
            ResultsWriter(out, resume=resume)  # opening a FIFO to read its first line would block


def test_a_symlink_or_fifo_at_the_results_temporary_file_is_replaced_not_written_through(tmp_path: Path) -> None:
    """The results are written to `OUT.tmp`, then renamed: whatever is at that path is not ours to write into."""
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{id: a, input: q, output: sunny}, {id: b, input: q, output: rain}]\n"
        "scorers: [{type: includes, value: sunny}]\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    temporary = tmp_path / "out.json.tmp"
    temporary.symlink_to(victim)
    done = run_cli("run", "-o", "out.json", cwd=tmp_path, timeout=CLI_TIMEOUT_S)
    assert done.code == 0, done.output
    assert victim.read_text() == "precious\n" and not (tmp_path / "out.json").is_symlink()
    assert load_results(tmp_path / "out.json").summary.total_items == 2
    os.mkfifo(temporary)  # opening it to write waited for a reader for ever, after every item had run
    done = run_cli("run", "-o", "out.json", cwd=tmp_path, timeout=CLI_TIMEOUT_S)
    assert done.code == 0, done.output
    assert load_results(tmp_path / "out.json").summary.total_items == 2 and not os.path.lexists(temporary)


def test_the_results_model_reads_back_every_outcome_field_the_header_writes() -> None:
    """Results (the file, read back) and Outcome (the verdict in memory) are one model of the decided fields
    (Decision): the file's top level is the outcome, written and read back field for field."""
    from evalgate.decide.verdict import Decision, GateResult, Outcome, ScoreStats, ThresholdResult, TurnResult
    from evalgate.results.model import Results
    from evalgate.results.writer import header

    gate = GateResult(id="g", passed=False, score=0.5, n=2, items=2, stderr=0.1, ci95=(0.1, 0.9))
    threshold = ThresholdResult(id="t", passed=True, average_score=0.75, threshold={"min": 0.5}, n=2, items=2)
    outcome = Outcome(verdict="failed", scores={"t": 0.75, "s": 0.25}, gate_results=[gate],
                      threshold_results=[threshold], score_stats={"s": ScoreStats(n=2, items=2)},
                      turn_results=[TurnResult(index=0, gate_results=[gate], scores={"s": 0.25})],
                      not_scorable={"t": 1}, errored_items=1, max_errors=3, total_items=4)
    written = header("x", outcome)
    assert issubclass(Results, Decision) and issubclass(Outcome, Decision)
    shared = [name for name in written if name in Outcome.model_fields]
    assert shared == list(Decision.model_fields) == ["verdict", "scores", "gate_results", "threshold_results",
                                                     "turn_results", "score_stats"]
    assert Results.model_validate(json.loads(json.dumps(written))).outcome == outcome


def test_a_gate_and_a_scorer_of_one_id_keep_each_their_reason(tmp_path: Path) -> None:
    """Mastra's runEvals lets a gate and a scorer share an id: both are scored, and the item's `reasons` (keyed
    by id) holds one reason for the two; `reasons_by_kind` keeps each one's, trial by trial with repeats."""
    spec = same_id_spec(tmp_path)
    result = run_cli("run", spec, "-o", tmp_path / "out.json")
    assert result.code == 1, result.output  # the gate failed on `bad`
    items = json.loads((tmp_path / "out.json").read_text())["items"]
    assert_each_keeps_its_reason(items)
    assert next(i for i in items if i["id"] == "quiet")["scorer_errors"] == {"same": "RuntimeError: the scorer blew up"}
    assert load_results(tmp_path / "out.json").items[0].reasons_by_kind == BY_KIND["bad"]
    repeated = run_cli("run", spec, "-o", tmp_path / "repeated.json", "--repeats", "2")
    assert repeated.code == 1, repeated.output
    items = json.loads((tmp_path / "repeated.json").read_text())["items"]
    assert all(len(item["trials"]) == 2 for item in items)
    assert_each_keeps_its_reason(items)
