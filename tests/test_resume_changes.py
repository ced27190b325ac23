"""--resume after the spec or the data changed, and output paths that would overwrite a user's file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from evalgate.api import run_spec
from evalgate.errors import SpecError
from evalgate.results.model import load_results
from evalgate.results.writer import journal_path

CALLS = "calls.txt"
AGENT = """\
from pathlib import Path
def agent(text):
    with Path(__file__).with_name("calls.txt").open("a") as f:
        f.write(text + "\\n")
    return "answer to " + text
"""


def project(tmp_path: Path, items: int, scorers: list[dict]) -> Path:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "input": f"q{i}"}) + "\n"
                                                 for i in range(items)))
    spec = {"version": 1, "data": "data.jsonl", "target": {"type": "python", "function": "agent:agent"},
            "concurrency": 1, "scorers": scorers}
    path = tmp_path / "evalgate.yaml"
    path.write_text(json.dumps(spec))
    return path


def calls(tmp_path: Path) -> list[str]:
    path = tmp_path / CALLS
    return path.read_text().split() if path.exists() else []


def test_a_scorer_added_before_resume_scores_every_resumed_item_without_running_them_again(tmp_path: Path) -> None:
    first = {"type": "includes", "value": "answer"}
    spec = project(tmp_path, 4, [first])
    run_spec(spec, output=tmp_path / "r.json")
    assert len(calls(tmp_path)) == 4
    added = {"type": "includes", "value": "q1", "threshold": 0.5}
    project(tmp_path, 4, [first, added])
    result = run_spec(spec, output=tmp_path / "r.json", resume=True)
    assert len(calls(tmp_path)) == 4  # scored from the recorded runs: the agent was not asked again
    assert result.outcome.scores["includes:q1"] == 0.25  # one of four outputs holds "q1"
    assert [t.id for t in result.outcome.threshold_results] == ["includes:q1"]
    assert result.outcome.not_scorable == {}
    assert any("`includes:q1` is new" in note and "4 resumed items" in note for note in result.notes)
    written = load_results(tmp_path / "r.json")
    assert all("includes:q1" in item.scores for item in written.items)


@pytest.mark.parametrize("output", [{"text": 5}, {"text": "x", "tool_calls": "none"}, 7], ids=str)
def test_a_recorded_output_that_is_no_run_is_run_again_not_scored_as_an_empty_one(tmp_path: Path,
                                                                                   output: object) -> None:
    """A check added since the journal is scored on the recorded runs: an edited output read as an empty
    run gave every check of that item (the old ones too) the empty text's score."""
    first = {"type": "includes", "value": "answer"}
    spec = project(tmp_path, 4, [first])
    run_spec(spec, output=tmp_path / "r.json")
    records = json.loads((tmp_path / "r.json").read_text())["items"]
    records[1]["output"] = output
    journal_path(tmp_path / "r.json").write_text("".join(json.dumps(r) + "\n" for r in records))
    project(tmp_path, 4, [first, {"type": "includes", "value": "q", "threshold": 0.5}])
    result = run_spec(spec, output=tmp_path / "r.json", resume=True)
    assert calls(tmp_path)[4:] == ["q1"]  # that item alone was asked again
    assert result.outcome.scores == {"includes:answer": 1.0, "includes:q": 1.0}
    assert any("1 resumed items were run again" in note for note in result.notes), result.notes


def test_a_shrunken_data_set_writes_only_its_items(tmp_path: Path) -> None:
    scorers = [{"type": "includes", "value": "answer"}]
    spec = project(tmp_path, 6, scorers)
    run_spec(spec, output=tmp_path / "r.json")
    project(tmp_path, 3, scorers)
    result = run_spec(spec, output=tmp_path / "r.json", resume=True)
    written = load_results(tmp_path / "r.json")
    assert written.summary.total_items == 3 == len(written.items)
    assert [item.id for item in written.items] == ["q0", "q1", "q2"]
    assert any("3 journaled items are no longer in the data set" in note for note in result.notes)


def test_changed_ids_run_again_and_are_said(tmp_path: Path) -> None:
    scorers = [{"type": "includes", "value": "answer"}]
    spec = project(tmp_path, 3, scorers)
    run_spec(spec, output=tmp_path / "r.json")
    (tmp_path / "data.jsonl").write_text('{"id": "new", "input": "x"}\n{"id": "q1", "input": "q1"}\n')
    result = run_spec(spec, output=tmp_path / "r.json", resume=True)
    assert calls(tmp_path)[-1] == "x" and calls(tmp_path).count("q1") == 1
    assert any("1 journaled items have a different id" in note for note in result.notes)


def test_a_bad_spec_on_resume_keeps_the_journal(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: data.jsonl\ngates:\n  - type: includes\n    value: a\n")
    (tmp_path / "data.jsonl").write_text('{"input": "a", "output": "a"}\n{"question": 5, "output": "a"}\n')
    journal = journal_path(tmp_path / "r.json")
    journal.write_text('{"index": 0, "id": "item-1", "gates": {"includes:a": 1.0}}\n')
    with pytest.raises(SpecError):
        run_spec(tmp_path / "evalgate.yaml", output=tmp_path / "r.json", resume=True)
    assert journal.exists(), "the journal of an interrupted run is the user's: never deleted"


@pytest.mark.parametrize("target", ["evalgate.yaml", "data.jsonl", "data.jsonl.tmp"])
def test_output_that_would_overwrite_the_spec_or_the_data_is_refused(tmp_path: Path, target: str) -> None:
    spec = project(tmp_path, 1, [{"type": "includes", "value": "answer"}])
    (tmp_path / "data.jsonl.tmp").write_text("mine")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    output = tmp_path / target.removesuffix(".tmp") if target.endswith(".tmp") else tmp_path / target
    if target == "data.jsonl.tmp":  # `-o data` writes data.items.jsonl: name the data file after the journal
        (tmp_path / "data.jsonl").rename(tmp_path / "r.json.items.jsonl")
        spec.write_text(spec.read_text().replace('"data.jsonl"', '"r.json.items.jsonl"'))
        before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
        output = tmp_path / "r.json"
    with pytest.raises(SpecError, match="would overwrite"):
        run_spec(spec, output=output)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    assert calls(tmp_path) == []


def test_a_file_of_the_users_at_the_journals_path_is_never_overwritten(tmp_path: Path) -> None:
    spec = project(tmp_path, 1, [{"type": "includes", "value": "answer"}])
    theirs = journal_path(tmp_path / "r.json")
    theirs.write_text("my notes, not a journal\n")
    with pytest.raises(FileExistsError, match="not one"):
        run_spec(spec, output=tmp_path / "r.json")
    assert theirs.read_text() == "my notes, not a journal\n"
    theirs.write_text('{"index": 0, "id": "q0"}\n')  # an earlier run's journal is started over
    run_spec(spec, output=tmp_path / "r.json")
    assert load_results(tmp_path / "r.json").summary.total_items == 1


def test_resume_never_cuts_a_file_of_the_users_at_the_journals_path(tmp_path: Path) -> None:
    """--resume reads the journal back and cuts a torn last line: a file that is no journal was cut to nothing."""
    project(tmp_path, 2, [{"type": "includes", "value": "answer"}])
    theirs = journal_path(tmp_path / "r.json")
    theirs.write_text("my notes, not a journal\nmore notes\n")
    refused = run_cli("run", "evalgate.yaml", "-o", "r.json", "--resume", cwd=tmp_path)
    assert refused.code == 2 and "is in the way of the journal and is not one" in refused.stderr, refused.output
    assert "Traceback" not in refused.output
    assert theirs.read_text() == "my notes, not a journal\nmore notes\n" and calls(tmp_path) == []
    theirs.write_text("\nmy notes, after a blank line\n")
    refused = run_cli("run", "evalgate.yaml", "-o", "r.json", "--resume", cwd=tmp_path)
    assert refused.code == 2 and theirs.read_text() == "\nmy notes, after a blank line\n", refused.output
    theirs.write_bytes(b'{"index":0,"id":"q')  # a killed run's journal, its first line torn: resumed
    resumed = run_cli("run", "evalgate.yaml", "-o", "r.json", "--resume", cwd=tmp_path)
    assert resumed.code == 0, resumed.output
    assert load_results(tmp_path / "r.json").summary.total_items == 2 and calls(tmp_path) == ["q0", "q1"]


# An agent that fails the second of every three calls for one input: each run of `repeats: 3` errors
# that item's trial 1 (trials run in order at concurrency 1), whichever run it is.
FLAKY_AGENT = """\
from pathlib import Path
def agent(text):
    count = Path(__file__).with_name("count-" + text)
    asked = int(count.read_text()) if count.exists() else 0
    count.write_text(str(asked + 1))
    if text == "q1" and asked % 3 == 1:
        raise RuntimeError("flaky")
    return "answer to " + text
"""


def test_a_changed_check_rescores_a_repeated_item_with_an_errored_trial(tmp_path: Path) -> None:
    """One errored trial of three: the other two were scored by the old check, so the journal's scores
    are stale; the item is run again, as every other resumed item is, not taken as journaled."""
    def write(value: str, where: Path) -> Path:
        where.mkdir(exist_ok=True)
        (where / "agent.py").write_text(FLAKY_AGENT)
        (where / "data.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "input": f"q{i}"}) + "\n"
                                                  for i in range(3)))
        spec = {"version": 1, "data": "data.jsonl", "target": {"type": "python", "function": "agent:agent"},
                "concurrency": 1, "repeats": 3, "max_errors": 3,
                "scorers": [{"type": "includes", "value": value, "id": "says", "threshold": 0.5}]}
        (where / "evalgate.yaml").write_text(json.dumps(spec))
        return where / "evalgate.yaml"

    spec = write("answer", tmp_path)
    first = run_spec(spec, output=tmp_path / "r.json")
    assert first.outcome.scores["says"] == 1.0 and first.summary["errored_trials"] == 1
    write("nowhere", tmp_path)  # the same id measures something else now
    fresh = run_spec(write("nowhere", tmp_path / "fresh"), output=tmp_path / "fresh" / "r.json").header()
    resumed = run_spec(spec, output=tmp_path / "r.json", resume=True)
    assert resumed.header()["scores"] == fresh["scores"] == {"says": 0.0}
    assert resumed.header()["threshold_results"] == fresh["threshold_results"]
    assert resumed.summary["errored_trials"] == fresh["summary"]["errored_trials"] == 1
    items = json.loads((tmp_path / "r.json").read_text())["items"]
    assert [t["scores"] for t in items[1]["trials"]] == [{"says": 0.0}, {}, {"says": 0.0}]
    assert any("`says` changed since the journal" in note for note in resumed.notes), resumed.notes


def test_a_repeated_item_with_an_errored_trial_is_taken_as_journaled_when_nothing_changed(tmp_path: Path) -> None:
    """The errored trial holds no scores: that alone is no reason to run the item again."""
    (tmp_path / "agent.py").write_text(FLAKY_AGENT)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "input": f"q{i}"}) + "\n"
                                                 for i in range(3)))
    spec = {"version": 1, "data": "data.jsonl", "target": {"type": "python", "function": "agent:agent"},
            "concurrency": 1, "repeats": 3, "max_errors": 3, "scorers": [{"type": "includes", "value": "answer"}]}
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    full = run_spec(tmp_path / "evalgate.yaml", output=tmp_path / "r.json").header()
    resumed = run_spec(tmp_path / "evalgate.yaml", output=tmp_path / "r.json", resume=True)
    assert resumed.summary["resumed_items"] == 3 and not resumed.notes
    assert resumed.header()["scores"] == full["scores"]
    assert (tmp_path / "count-q1").read_text() == "3"  # not asked again


def test_a_changed_per_turn_check_reruns_a_repeated_item_with_an_errored_trial(tmp_path: Path) -> None:
    """The item's `error` is its errored trial's: the per-turn check's change must still be seen."""
    def write(value: str) -> Path:
        (tmp_path / "agent.py").write_text(FLAKY_AGENT)
        data = [{"id": f"q{i}", "turns": [{"input": f"q{i}", "scorers": [
            {"type": "includes", "value": value, "id": "says", "threshold": 0.5}]}]} for i in range(3)]
        spec = {"version": 1, "data": data, "target": {"type": "python", "function": "agent:agent"},
                "concurrency": 1, "repeats": 3, "max_errors": 3}
        (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
        return tmp_path / "evalgate.yaml"

    spec = write("answer")
    first = run_spec(spec, output=tmp_path / "r.json")
    assert first.summary["errored_trials"] == 1
    spec = write("nowhere")
    fresh = run_spec(spec).header()
    resumed = run_spec(spec, output=tmp_path / "r.json", resume=True)
    assert resumed.header()["turn_results"] == fresh["turn_results"]
    assert fresh["turn_results"][0]["scores"] == {"says": 0.0}
    assert any("per-turn `turn-0:says` changed" in note for note in resumed.notes), resumed.notes
