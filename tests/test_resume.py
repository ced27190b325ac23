"""Nothing lost: a killed or interrupted run leaves its items on disk; `--resume` scores each item once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from fake_agent import FakeServer
from same_id import assert_each_keeps_its_reason, same_id_spec

from evalgate.api import run_spec
from evalgate.results import writer as results

ITEMS = 24
WAIT_S = 30.0


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        srv.default_fault = "slow:0.05"
        yield srv


def question(i: int) -> str:
    return f"weather in Paris #{i}" if i % 3 else f"hello #{i}"


def write_spec(tmp_path: Path, url: str) -> None:
    spec = {
        "version": 1,
        "data": [{"id": f"q{i}", "input": question(i)} for i in range(ITEMS)],
        "target": {
            "type": "http",
            "url": f"{url}/agent",
            "response": {"text": "output.text", "tool_calls": "output.tool_calls"},
        },
        "concurrency": 2,
        "gates": [{"type": "no_tool_errors"}],
        "scorers": [
            {"type": "called_tool", "tool": "get_weather", "threshold": 0.5},
            {"type": "similarity", "value": "It is sunny in Paris, 72F."},
        ],
    }
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))


def start(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "evalgate.cli", "run", "-o", "out.json", *args],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def item_lines(journal: Path) -> list[str]:
    """The journal's item lines: its first line records the run's checks, no item."""
    return [line for line in journal.read_text().splitlines()[1:] if line.endswith("}")]


def wait_for_lines(journal: Path, count: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if journal.exists() and len(item_lines(journal)) >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"the journal never reached {count} items")


def journal_ids(journal: Path) -> list[str]:
    return [json.loads(line)["id"] for line in item_lines(journal)]


def headline(results: dict) -> dict:
    keep = ("verdict", "scores", "gate_results", "threshold_results")
    summary = {k: results["summary"][k] for k in ("total_items", "errored_items", "not_scorable")}
    return {**{k: results[k] for k in keep}, "summary": summary}


def test_resume_after_a_killed_run_scores_each_item_once(tmp_path: Path, server: FakeServer) -> None:
    write_spec(tmp_path, server.url)
    journal = tmp_path / "out.json.items.jsonl"
    proc = start(tmp_path)
    wait_for_lines(journal, 6)
    proc.kill()  # a crash: no chance to clean up
    proc.wait(WAIT_S)
    with journal.open("a") as handle:
        handle.write('{"index": 99, "id": "torn')  # a line cut short by the crash
    done = journal_ids(journal)
    assert 6 <= len(done) < ITEMS
    before = server.count

    resumed = start(tmp_path, "--resume")
    out, err = resumed.communicate(timeout=WAIT_S)
    assert resumed.returncode == 0, out + err
    sent_after = [r["body"]["input"] for r in server.requests[before:]]
    expected = [question(i) for i in range(ITEMS) if f"q{i}" not in done]
    assert sorted(sent_after) == sorted(expected)  # only the unfinished items were sent

    results = json.loads((tmp_path / "out.json").read_text())
    assert [i["id"] for i in results["items"]] == [f"q{i}" for i in range(ITEMS)]
    assert results["summary"]["total_items"] == ITEMS
    assert results["summary"]["resumed_items"] == len(done)

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    write_spec(fresh, server.url)
    full = start(fresh)
    full.communicate(timeout=WAIT_S)
    assert headline(json.loads((fresh / "out.json").read_text())) == headline(results)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_writes_results_for_what_finished(stop: int, tmp_path: Path, server: FakeServer) -> None:
    """Ctrl-C, or SIGTERM as `timeout` and CI systems cancel with: what finished is written, exit 128 + signal."""
    write_spec(tmp_path, server.url)
    journal = tmp_path / "out.json.items.jsonl"
    proc = start(tmp_path)
    wait_for_lines(journal, 4)
    proc.send_signal(stop)
    out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 128 + stop, out + err
    assert "interrupted" in err
    results = json.loads((tmp_path / "out.json").read_text())
    assert results["summary"]["interrupted"] is True
    finished = [i["id"] for i in results["items"]]
    assert 4 <= len(finished) < ITEMS and len(set(finished)) == len(finished)
    assert results["summary"]["total_items"] == len(finished)

    resumed = start(tmp_path, "--resume")
    resumed.communicate(timeout=WAIT_S)
    results = json.loads((tmp_path / "out.json").read_text())
    assert [i["id"] for i in results["items"]] == [f"q{i}" for i in range(ITEMS)]
    assert results["summary"]["interrupted"] is False


BLOCKING_AGENT = """\
import time
from pathlib import Path
def agent(text):
    here = Path(__file__).parent
    (here / "started").touch()
    for _ in range(3000):  # until the test says go (30 s at most)
        if (here / "go").exists():
            break
        time.sleep(0.01)
    return "answer to " + text
"""


def test_ctrl_c_before_the_first_item_of_a_resumed_run_writes_its_results(tmp_path: Path) -> None:
    """CI may pass --resume on every run: stopped before any item finished, it wrote no results and exited 3."""
    (tmp_path / "agent.py").write_text(BLOCKING_AGENT)
    (tmp_path / "evalgate.yaml").write_text(json.dumps({
        "version": 1, "data": [{"id": "a", "input": "a"}, {"id": "b", "input": "b"}],
        "target": {"type": "python", "function": "agent:agent"}, "scorers": [{"type": "includes", "value": "answer"}]}))
    proc = start(tmp_path, "--resume")
    deadline = time.monotonic() + WAIT_S
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (tmp_path / "started").exists(), "the agent never started"
    proc.send_signal(signal.SIGINT)  # the first item is in the agent's hands: nothing has finished
    out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 130 and "internal error" not in err, out + err
    results = json.loads((tmp_path / "out.json").read_text())
    assert results["summary"]["interrupted"] is True and results["items"] == []
    (tmp_path / "go").touch()
    resumed = start(tmp_path, "--resume")
    out, err = resumed.communicate(timeout=WAIT_S)
    assert resumed.returncode == 0, out + err
    assert [i["id"] for i in json.loads((tmp_path / "out.json").read_text())["items"]] == ["a", "b"]


def test_resume_needs_output(tmp_path: Path) -> None:
    write_spec(tmp_path, "http://127.0.0.1:9")
    proc = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "--resume"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=WAIT_S)
    assert proc.returncode == 2 and "--output" in proc.stderr


# ---- resume rebuilds every kind of result: turns, not scorable, scorer errors, errored items ----

SCORERS_PY = '''
from evalgate import NotScorable

def maybe(item, run):
    if "skip" in run.text:
        raise NotScorable("nothing to judge")
    if "boom" in run.text:
        raise RuntimeError("scorer blew up")
    return 1.0 if "sunny" in run.text else 0.25
'''


def recorded_spec(tmp_path: Path) -> Path:
    data = []
    for i in range(12):
        text = ["sunny day", "rainy", "skip me", "boom"][i % 4]
        if i % 5 == 4:
            data.append({"id": f"t{i}", "turns": [
                {"input": "a", "output": text, "scorers": [{"type": "includes", "value": "sunny", "threshold": 0.1}]},
                {"input": "b", "output": {"text": "ok", "tool_calls": [{"name": "x", "error": "bad"}]},
                 "gates": [{"type": "no_tool_errors"}]},
            ]})
        else:
            data.append({"id": f"r{i}", "input": f"q{i}", "output": text})
    spec = {
        "version": 1,
        "data": data,
        "max_errors": 20,
        "gates": [{"type": "excludes", "value": "rain"}],
        "scorers": [
            {"type": "python", "function": "scorers:maybe", "id": "maybe", "threshold": 0.5},
            {"type": "excludes", "value": "rain"},
        ],
    }
    (tmp_path / "scorers.py").write_text(SCORERS_PY)
    path = tmp_path / "evalgate.yaml"
    path.write_text(json.dumps(spec))
    return path


def journal_lines(out: Path) -> list[str]:
    """The journal lines a complete run wrote (its journal is removed; the results hold the same lines)."""
    return [json.dumps(item, ensure_ascii=False) + "\n" for item in json.loads(out.read_text())["items"]]


def test_a_complete_run_removes_its_journal_and_resumes_from_its_results(tmp_path: Path) -> None:
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    full = run_spec(spec, output=out).header()
    assert not out.with_name("out.json.items.jsonl").exists()
    again = run_spec(spec, output=out, resume=True)
    assert again.summary["resumed_items"] == 12 and again.header()["scores"] == full["scores"]


def test_resume_rebuilds_aggregates_exactly(tmp_path: Path) -> None:
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    full = run_spec(spec, output=out).header()
    journal = out.with_name("out.json.items.jsonl")
    lines = journal_lines(out)
    keep = [line for n, line in enumerate(lines) if n % 3 != 2]  # these finished in the "killed" run
    journal.write_text("".join(keep) + lines[2][:20])
    out.unlink()
    resumed = run_spec(spec, output=out, resume=True)
    assert resumed.summary["resumed_items"] == len(keep)
    header = resumed.header()
    for key in ("verdict", "scores", "gate_results", "threshold_results", "turn_results"):
        assert header[key] == full[key], key
    for key in ("total_items", "errored_items", "not_scorable"):
        assert header["summary"][key] == full["summary"][key], key
    assert full["summary"]["not_scorable"] and full["summary"]["errored_items"]  # the case is not trivial
    final = json.loads(out.read_text())
    assert [i["id"] for i in final["items"]] == [f"{'t' if i % 5 == 4 else 'r'}{i}" for i in range(12)]


def test_a_journal_from_other_data_is_not_trusted(tmp_path: Path) -> None:
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    run_spec(spec, output=out)
    journal = out.with_name("out.json.items.jsonl")
    records = [json.loads(line) for line in journal_lines(out)]
    records[0]["id"] = "someone-else"
    records[0]["gates"] = {"excludes:rain": 0.0}
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    resumed = run_spec(spec, output=out, resume=True)
    assert resumed.summary["resumed_items"] == len(records) - 1
    assert json.loads(out.read_text())["items"][0]["id"] == "r0"


@pytest.mark.parametrize("index", ["3", 2**70, -1, True, None])
def test_a_journal_line_with_an_index_that_is_no_items_is_left_out(tmp_path: Path, index: object) -> None:
    # A hand-edited or hostile journal: the resumed results hold every item once, in data order
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    full = run_spec(spec, output=out).header()
    lines = journal_lines(out)
    stray = json.loads(lines[3])
    stray["index"] = index
    journal = out.with_name("out.json.items.jsonl")
    journal.write_text("".join(lines[:3]) + json.dumps(stray) + "\n" + "".join(lines[4:6]))
    resumed = run_spec(spec, output=out, resume=True)
    assert resumed.summary["resumed_items"] == 5
    final = json.loads(out.read_text())
    assert [i["index"] for i in final["items"]] == list(range(12))
    assert resumed.header()["scores"] == full["scores"]


@pytest.mark.parametrize("bad", [b"garbage\n", b"\xff\xfe not UTF-8\n", b"null\n", b"[1]\n", b"\n"],
                         ids=["text", "not-utf8", "null", "list", "blank"])
def test_a_line_that_is_no_record_is_left_out_and_the_lines_after_it_are_kept(tmp_path: Path, bad: bytes) -> None:
    """A damaged or edited line mid-journal: the items after it were cut off and run again without a word."""
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    full = run_spec(spec, output=out).header()
    lines = [line.encode() for line in journal_lines(out)]
    out.with_name("out.json.items.jsonl").write_bytes(b"".join(lines[:3]) + bad + b"".join(lines[4:]))
    out.unlink()
    resumed = run_spec(spec, output=out, resume=True)
    assert resumed.summary["resumed_items"] == 11
    assert any("1 journal lines are no JSON record" in note for note in resumed.notes), resumed.notes
    assert resumed.header()["scores"] == full["scores"]
    final = strict_json(out.read_text())
    assert [i["id"] for i in final["items"]] == [json.loads(line)["id"] for line in lines]


def test_a_journal_line_behind_a_byte_order_mark_never_reaches_the_results(tmp_path: Path) -> None:
    """`json.loads` skips a BOM in bytes; copied into the results, it made a file no JSON parser reads."""
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    full = run_spec(spec, output=out).header()
    lines = [line.encode() for line in journal_lines(out)]
    out.with_name("out.json.items.jsonl").write_bytes(b"".join(lines[:3]) + b"\xef\xbb\xbf" + b"".join(lines[3:]))
    out.unlink()
    resumed = run_spec(spec, output=out, resume=True)
    assert resumed.summary["resumed_items"] == 11 and resumed.header()["scores"] == full["scores"]
    final = strict_json(out.read_bytes().decode("utf-8"))
    assert [i["id"] for i in final["items"]] == [json.loads(line)["id"] for line in lines]


def test_a_journal_line_nested_too_deep_to_parse_is_no_record_not_an_internal_error(tmp_path: Path) -> None:
    """A run cuts what it writes at 64 levels; a line nested past the parser's limit raised RecursionError (exit 3)."""
    recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    first = run_cli("run", "-o", "out.json", cwd=tmp_path)
    lines = journal_lines(out)
    deep = "[" * 5000 + "]" * 5000 + "\n"
    journal = out.with_name("out.json.items.jsonl")
    journal.write_text("".join(lines[:3]) + deep + "".join(lines[3:]))
    out.unlink()
    resumed = run_cli("run", "-o", "out.json", "--resume", cwd=tmp_path)
    assert resumed.code == first.code == 1 and "1 journal lines are no JSON record" in resumed.stderr, resumed.output
    assert json.loads(out.read_text())["summary"]["resumed_items"] == 12
    journal.write_text(deep)  # without --resume: the file at the journal's path is asked whether it is one
    again = run_cli("run", "-o", "out.json", cwd=tmp_path)
    assert again.code == 2 and "is in the way of the journal" in again.stderr and journal.read_text() == deep


def test_a_journal_of_lines_that_are_no_records_is_refused_untouched(tmp_path: Path) -> None:
    """Each such line costs a parse and is left out: a file of millions of them is no journal to read."""
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    run_spec(spec, output=out)
    journal = out.with_name("out.json.items.jsonl")
    body = "".join(journal_lines(out)[:2]) + "\n" * 1001
    journal.write_text(body)
    out.unlink()
    refused = run_cli("run", "-o", "out.json", "--resume", cwd=tmp_path)
    assert refused.code == 2 and "holds more than 1000 lines that are no journal record" in refused.stderr
    assert "Traceback" not in refused.output and journal.read_text() == body and not out.exists()


def test_resume_without_a_journal_runs_everything(tmp_path: Path) -> None:
    spec = recorded_spec(tmp_path)
    result = run_spec(spec, output=tmp_path / "new.json", resume=True)
    assert result.summary["total_items"] == 12 and result.summary["resumed_items"] == 0
    assert os.path.exists(tmp_path / "new.json")


def test_a_journaled_item_whose_data_changed_under_its_id_is_run_again(tmp_path: Path) -> None:
    """Same id, other input and output: the journal's scores are of other data (its data_hash says so)."""
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    run_spec(spec, output=out)
    data = json.loads(spec.read_text())
    data["data"][0] = {"id": "r0", "input": "what now?", "output": "rain all day"}
    spec.write_text(json.dumps(data))
    fresh = run_spec(spec).header()
    resumed = run_spec(spec, output=out, resume=True)
    assert resumed.summary["resumed_items"] == 11
    assert resumed.header()["scores"] == fresh["scores"] and resumed.verdict == fresh["verdict"]
    assert any("1 journaled items hold other data now" in note for note in resumed.notes)
    assert json.loads(out.read_text())["items"][0]["input"] == "what now?"


def resumed_after_editing_one_record(tmp_path: Path, edit: dict) -> tuple[dict, Any]:
    """(the full run's header, the run resumed) after the journal's second record was updated with `edit`."""
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    full = run_spec(spec, output=out).header()
    records = [json.loads(line) for line in journal_lines(out)]
    records[1].update(edit)
    out.with_name("out.json.items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    out.unlink()
    return full, run_spec(spec, output=out, resume=True)


@pytest.mark.parametrize("edit", [{"error": 5}, {"gates": {"excludes:rain": "yes"}}, {"reasons": "x"},
                                  {"duration_ms": "x"}, {"not_scorable": {"maybe": 1}}, {"judge_cost_usd": "x"},
                                  {"scorer_errors": "x"}, {"turns": [7]}, {"reasons_by_kind": {"gates": "x"}},
                                  {"reasons_by_kind": {"checks": {"maybe": "x"}}},
                                  # integers past the largest float: every sum they reach overflows (was exit 3)
                                  {"gates": {"excludes:rain": 10**400}}, {"duration_ms": 10**400},
                                  {"judge_cost_usd": {"excludes:rain": -(10**400)}},
                                  # no scorer gives a score outside [0, 1]: a gate of 5 would pass the gate
                                  {"gates": {"excludes:rain": 5.0}}, {"scores": {"maybe": -0.5}},
                                  {"scores": {"maybe": 1.5}},
                                  # a turn's and a trial's fields are held to the same types
                                  {"turns": [{"gates": {"excludes:rain": 2}}]},
                                  {"turns": [{"not_scorable": {"checks": ["maybe"]}}]},
                                  {"trials": [{"scores": {"maybe": True}}]},
                                  # a run's judge costs are finite numbers (held at the largest float): a null
                                  # one was taken and crashed the cost total
                                  {"judge_cost_usd": {"judge": None}}],
                         ids=lambda edit: json.dumps(edit)[:40])
def test_a_journal_record_edited_into_other_types_is_run_again_not_a_crash(tmp_path: Path, edit: dict) -> None:
    full, resumed = resumed_after_editing_one_record(tmp_path, edit)
    assert resumed.summary["resumed_items"] == 11 and resumed.header()["scores"] == full["scores"]
    assert any("1 journaled items could not be read back" in note for note in resumed.notes)


@pytest.mark.parametrize("edit", [{"judge_cost_usd": None}, {"duration_ms": None},
                                  {"turn_params_hash": None}, {"data_hash": None}, {"reasons": None}])
def test_a_journal_record_with_a_field_a_run_may_leave_null_is_taken(tmp_path: Path, edit: dict) -> None:
    """Null where a run may leave a field out (no judge cost, no digest): the record is taken, not run again."""
    full, resumed = resumed_after_editing_one_record(tmp_path, edit)
    assert resumed.summary["resumed_items"] == 12 and resumed.header()["scores"] == full["scores"]
    assert not any("could not be read back" in note for note in resumed.notes), resumed.notes


def strict_json(text: str) -> Any:
    """JSON as every parser reads it: NaN and Infinity are no JSON values."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} in the results")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_a_journal_line_holding_nan_never_reaches_the_results(tmp_path: Path, value: str) -> None:
    """Python reads `NaN` in a (hand-edited) journal line; copied into the results, no strict parser would."""
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    full = run_spec(spec, output=out).header()
    lines = journal_lines(out)
    edited = lines[1].rstrip("\n")[:-1] + f', "duration_ms": {value}}}\n'
    out.with_name("out.json.items.jsonl").write_text(lines[0] + edited + "".join(lines[2:6]))
    out.unlink()
    resumed = run_spec(spec, output=out, resume=True)
    final = strict_json(out.read_text())
    assert [i["id"] for i in final["items"]] == [i["id"] for i in map(json.loads, lines)]
    assert resumed.header()["scores"] == full["scores"]


def test_a_run_with_a_nan_gate_resumes(tmp_path: Path) -> None:
    """NaN is written as null and read back as NaN: the CLI's failing-ids list must take it too."""
    (tmp_path / "nan.py").write_text("def score(item, run):\n    return float('nan')\n")
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{id: a, input: q, output: x}, {id: b, input: q, output: y}]\n"
        "target: {type: recorded}\ngates: [{type: python, function: 'nan:score'}]\n")
    first = run_cli("run", "-o", "out.json", cwd=tmp_path)
    again = run_cli("run", "-o", "out.json", "--resume", cwd=tmp_path)
    assert first.code == again.code == 1, again.output
    assert "failing: a, b" in again.output and "internal error" not in again.output


@pytest.mark.parametrize("interrupted", [True, False], ids=["from-the-journal", "from-complete-results"])
def test_a_check_whose_parameters_changed_is_scored_again_not_read_from_the_journal(tmp_path: Path,
                                                                                     interrupted: bool) -> None:
    """Same id, other `value`: the journal's scores measured something else. Recorded outputs are
    scored again; the resumed verdict is the fresh run's."""
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    run_spec(spec, output=out)
    if interrupted:  # the journal of a run cut short: its first line names the checks it ran
        lines = journal_lines(out)
        head = json.dumps({"index": None, "evalgate_journal": {"version": 1, "checks": {
            gate["id"]: gate["params_hash"] for gate in json.loads(out.read_text())["gate_results"]}}})
        out.with_name("out.json.items.jsonl").write_text(head + "\n" + "".join(lines[:8]))
        out.unlink()
    data = json.loads(spec.read_text())
    data["gates"] = [{"type": "excludes", "value": "sunny", "id": "excludes:rain"}]  # same id, other value
    spec.write_text(json.dumps(data))
    fresh = run_spec(spec).header()
    resumed = run_spec(spec, output=out, resume=True)
    assert resumed.header()["gate_results"] == fresh["gate_results"] and resumed.verdict == fresh["verdict"]
    assert any("`excludes:rain` changed since the journal" in note for note in resumed.notes), resumed.notes


def _turn_scorer_changed(spec: Path) -> None:
    """The turn items' turn-0 scorer keeps its id but measures something else (no output holds "xyz")."""
    data = json.loads(spec.read_text())
    for item in data["data"]:
        for turn in item.get("turns", ()):
            if "scorers" in turn:
                turn["scorers"] = [{"type": "includes", "value": "xyz", "id": "includes:sunny", "threshold": 0.1}]
    spec.write_text(json.dumps(data))


@pytest.mark.parametrize("interrupted", [True, False], ids=["from-the-journal", "from-complete-results"])
def test_a_per_turn_check_whose_parameters_changed_is_scored_again_not_read_from_the_journal(
        tmp_path: Path, interrupted: bool) -> None:
    """`data_hash` covers the turns' inputs, not their checks: the record's `turn_params_hash` tells
    the resume that `includes:sunny` on turn 0 measures something else now."""
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    run_spec(spec, output=out)
    if interrupted:
        out.with_name("out.json.items.jsonl").write_text("".join(journal_lines(out)[:8]))  # t4, not t9
        out.unlink()
    _turn_scorer_changed(spec)
    fresh = run_spec(spec, output=tmp_path / "fresh.json").header()
    resumed = run_spec(spec, output=out, resume=True)
    assert resumed.header()["turn_results"] == fresh["turn_results"] and resumed.verdict == fresh["verdict"]
    assert fresh["turn_results"][0]["threshold_results"][0]["passed"] is False  # the stale 0.5 passed
    note = next(n for n in resumed.notes if "per-turn `turn-0:includes:sunny` changed" in n)
    assert f"on {1 if interrupted else 2} resumed items" in note, note
    written = json.loads(out.read_text())["items"][4]
    assert written["turns"][0]["scores"] == {"includes:sunny": 0.0}
    assert written["turn_params_hash"] == json.loads((tmp_path / "fresh.json").read_text())["items"][4][
        "turn_params_hash"]  # the new parameters: a later resume compares with these


def test_a_journal_without_per_turn_params_keeps_its_per_turn_scores_and_says_so(tmp_path: Path) -> None:
    """A journal of an earlier evalgate records no per-turn params: nothing tells they changed, so the
    items are not run again (that would be every turn item), and a note says the scores were kept."""
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    full = run_spec(spec, output=out).header()
    records = [json.loads(line) for line in journal_lines(out)]
    assert set(records[4]["turn_params_hash"]) == {"turn-0:includes:sunny", "turn-1:no_tool_errors"}
    assert "turn_params_hash" not in records[0]  # an item without per-turn checks: its record is as before
    for record in records:
        record.pop("turn_params_hash", None)
    out.with_name("out.json.items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    out.unlink()
    resumed = run_spec(spec, output=out, resume=True)
    assert resumed.summary["resumed_items"] == 12 and resumed.header()["turn_results"] == full["turn_results"]
    assert any("2 journaled items with per-turn checks do not record those checks' parameters" in n
               for n in resumed.notes), resumed.notes


def _kill_after(count: int) -> Any:
    """An on_result that stops the run as Ctrl-C does once `count` items finished: the journal is kept."""
    seen = []

    def on_result(item: Any) -> None:
        seen.append(item)
        if len(seen) == count:
            raise KeyboardInterrupt

    return on_result


def _interrupted_run(spec: Path, out: Path, count: int) -> None:
    with pytest.raises(KeyboardInterrupt):
        run_spec(spec, output=out, on_result=_kill_after(count))
    assert out.with_name(out.name + ".items.jsonl").exists()


def _first_run(spec: Path, data: dict[str, Any], out: Path, interrupted: bool) -> Path:
    """Write the spec as `data` says and run it into `out`: whole, or stopped after 8 items."""
    spec.write_text(json.dumps(data))
    if interrupted:
        _interrupted_run(spec, out, 8)
    else:
        run_spec(spec, output=out)
    return out


@pytest.mark.parametrize("to", ["gates", "scorers"])
@pytest.mark.parametrize("interrupted", [True, False], ids=["from-the-journal", "from-complete-results"])
def test_a_check_moved_between_gates_and_scorers_is_scored_again_as_its_new_kind(
        tmp_path: Path, interrupted: bool, to: str) -> None:
    """`maybe` keeps its id and parameters but changes kind: its journaled scores are of the other kind
    (a gate that raises scores 0, a scorer that raises errors), so the resumed run scores it again."""
    spec = recorded_spec(tmp_path)
    data = json.loads(spec.read_text())
    maybe = {"type": "python", "function": "scorers:maybe", "id": "maybe"}
    before, after = (data["scorers"], data["gates"]) if to == "gates" else (data["gates"], data["scorers"])
    data["scorers"] = [c for c in data["scorers"] if c.get("id") != "maybe"]
    before, after = (data["scorers"], data["gates"]) if to == "gates" else (data["gates"], data["scorers"])
    before.append(maybe)  # a gate has no threshold
    out = _first_run(spec, data, tmp_path / "out.json", interrupted)
    before.remove(maybe)
    after.append({**maybe, "threshold": 0.5} if to == "scorers" else maybe)
    spec.write_text(json.dumps(data))
    fresh = run_spec(spec).header()
    resumed = run_spec(spec, output=out, resume=True)
    header = resumed.header()
    for key in ("verdict", "scores", "gate_results", "threshold_results"):
        assert header[key] == fresh[key], key
    for key in ("errored_items", "not_scorable"):
        assert header["summary"][key] == fresh["summary"][key], key
    assert "maybe" in {g["id"] for g in fresh["gate_results"]} | set(fresh["scores"])
    other = "scorers" if to == "gates" else "gates"
    assert any(f"`maybe` from `{other}` to `{to}` moved since the journal" in n for n in resumed.notes), resumed.notes


@pytest.mark.parametrize("interrupted", [True, False], ids=["from-the-journal", "from-complete-results"])
def test_a_per_turn_check_moved_between_gates_and_scorers_is_scored_again(tmp_path: Path, interrupted: bool) -> None:
    """Turn 0's `includes:sunny` becomes a gate (turn 1's `no_tool_errors` a scorer): the records' turns
    hold them as the other kind, so the resumed run scores them again rather than find no such score."""
    spec = recorded_spec(tmp_path)
    out = tmp_path / "out.json"
    if interrupted:
        _interrupted_run(spec, out, 9)  # t4 journaled, t9 not
    else:
        run_spec(spec, output=out)
    data = json.loads(spec.read_text())
    for item in data["data"]:
        if "turns" in item:
            first, second = item["turns"]
            first["gates"] = [{"type": "includes", "value": "sunny"}]
            second["scorers"] = [{"type": "no_tool_errors", "threshold": 0.5}]
            del first["scorers"], second["gates"]
    spec.write_text(json.dumps(data))
    fresh = run_spec(spec).header()
    resumed = run_spec(spec, output=out, resume=True)
    assert resumed.header()["turn_results"] == fresh["turn_results"] and resumed.verdict == fresh["verdict"]
    assert resumed.header()["summary"]["not_scorable"] == fresh["summary"]["not_scorable"]
    note = next(n for n in resumed.notes if "moved between `gates` and `scorers`" in n)
    assert "`turn-0:includes:sunny`, `turn-1:no_tool_errors`" in note, note


@pytest.mark.parametrize("interrupted", [True, False], ids=["from-the-journal", "from-complete-results"])
def test_a_scorer_added_beside_a_gate_of_its_id_is_scored_on_the_resumed_items(tmp_path: Path,
                                                                              interrupted: bool) -> None:
    """The records hold the gate `excludes:rain`'s scores: none is the new scorer's of that id."""
    spec = recorded_spec(tmp_path)
    data = json.loads(spec.read_text())
    scorer = data["scorers"].pop()
    assert scorer["type"] == "excludes" and data["gates"][0]["type"] == "excludes"
    out = _first_run(spec, data, tmp_path / "out.json", interrupted)
    data["scorers"].append(scorer)
    spec.write_text(json.dumps(data))
    fresh = run_spec(spec).header()
    resumed = run_spec(spec, output=out, resume=True)
    assert resumed.header()["scores"] == fresh["scores"] and "excludes:rain" in fresh["scores"]
    assert resumed.header()["summary"]["not_scorable"] == fresh["summary"]["not_scorable"]
    assert any("`excludes:rain` is new since the journal" in n for n in resumed.notes), resumed.notes


@pytest.mark.parametrize("repeats", [None, 2], ids=["once", "repeats"])
@pytest.mark.parametrize("interrupted", [True, False], ids=["from-the-journal", "from-complete-results"])
def test_a_resumed_run_keeps_the_reasons_of_a_gate_and_a_scorer_of_one_id(tmp_path: Path, interrupted: bool,
                                                                          repeats: int | None) -> None:
    """The journaled items' `reasons_by_kind` is read back: neither reason is lost, in the results file the
    CLI writes nor in the items a resumed `run_spec` hands back."""
    spec = same_id_spec(tmp_path, **({"repeats": repeats} if repeats else {}))
    out = tmp_path / "out.json"
    if interrupted:
        _interrupted_run(spec, out, 3)  # `bad`, `skip` and `quiet` journaled, the others not
    else:
        run_spec(spec, output=out)
    journal = out.with_name(out.name + ".items.jsonl")
    saved = journal.read_bytes() if interrupted else out.read_bytes()
    resumed = run_cli("run", spec, "-o", out, "--resume")
    assert resumed.code == 1, resumed.output  # the gate failed on `bad`
    results = json.loads(out.read_text())
    assert results["summary"]["resumed_items"] == (3 if interrupted else 5)
    assert_each_keeps_its_reason(results["items"])
    (journal if interrupted else out).write_bytes(saved)  # resume the same run again, in this process
    if not interrupted:
        journal.unlink(missing_ok=True)
    again = run_spec(spec, output=out, resume=True, keep_items=True)
    assert again.summary["resumed_items"] == (3 if interrupted else 5)
    assert_each_keeps_its_reason(again.to_dict()["items"])


def test_a_killed_run_loses_at_most_the_journal_window(tmp_path: Path) -> None:
    """SIGKILL mid-run (no cleanup): every item answered longer ago than the journal's window (plus time
    to score it and for the scheduler) is in the journal; `--resume` sends only the others and the results
    hold every item once. The journal is written in batches from a background thread (docs/targets.md)."""
    items = 400
    slack_s = 0.3  # scoring, the hand-over to the run loop, a loaded machine's scheduling
    spec = {
        "version": 1,
        "data": [{"id": f"q{i}", "input": f"weather in Paris #{i}"} for i in range(items)],
        "target": {"type": "http", "url": "", "response": {"text": "output.text", "tool_calls": "output.tool_calls"}},
        "concurrency": 4,
        "scorers": [{"type": "called_tool", "tool": "get_weather"}],
    }
    with FakeServer(delay_s=0.05) as srv:  # 80 items a second: the first 120 answered take 1.5 s
        spec["target"]["url"] = f"{srv.url}/agent"  # type: ignore[index]
        (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
        journal = tmp_path / "out.json.items.jsonl"
        proc = start(tmp_path)
        deadline = time.monotonic() + WAIT_S
        while len(srv.replied_at) < 120 and time.monotonic() < deadline:  # well into the run
            time.sleep(0.01)
        killed_at = time.monotonic()
        proc.kill()
        proc.wait(WAIT_S)
        answered = dict(srv.replied_at)
        done = set(journal_ids(journal))
        assert len(done) < items, "the run finished before the kill: nothing tested"
        due = {f"q{text.rsplit('#', 1)[1]}" for text, at in answered.items()
               if at < killed_at - results.FLUSH_WINDOW_S - slack_s}
        assert len(due) >= 60
        assert due <= done, f"answered long before the kill, not journaled: {sorted(due - done)[:10]}"

        before = srv.count
        resumed = start(tmp_path, "--resume")
        out, err = resumed.communicate(timeout=WAIT_S)
        assert resumed.returncode == 0, out + err
        sent_after = {r["body"]["input"] for r in srv.requests[before:]}
        assert sent_after == {f"weather in Paris #{i}" for i in range(items) if f"q{i}" not in done}
    final = json.loads((tmp_path / "out.json").read_text())
    assert [i["id"] for i in final["items"]] == [f"q{i}" for i in range(items)]
    assert final["summary"]["resumed_items"] == len(done)
