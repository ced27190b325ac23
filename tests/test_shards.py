"""Shards and the exact merge: N shard runs merged give what one unsharded run gives, field by field."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from same_id import assert_each_keeps_its_reason, same_id_spec

from evalgate.api import run_spec
from evalgate.results.merge import MergeError, merge
from evalgate.results.shards import parse_shard, shard_of

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "examples" / "weather"
TIMINGS = ("duration_ms", "latency_ms", "duration_s", "created_at")  # created_at: the clock too


def untimed(value: Any) -> Any:
    """The results without anything measured in time (which no two runs share)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def run_sharded(spec: Path, count: int, out: Path) -> list[Path]:
    files = []
    for index in range(1, count + 1):
        path = out / f"shard-{index}.json"
        run_spec(spec, output=path, shard=f"{index}/{count}")
        files.append(path)
    return files


def assert_same_run(full: dict[str, Any], merged: dict[str, Any]) -> None:
    """Everything of one run but timings; floats compared exactly (==, no tolerance)."""
    assert merged["merged"]["shards"] >= 1
    full, merged = untimed(full), untimed(merged)
    merged.pop("merged")
    for key in sorted(full.keys() | merged.keys()):
        assert merged.get(key) == full.get(key), key


def test_four_shards_merged_equal_the_demo_run_judge_included(tmp_path: Path) -> None:
    work = tmp_path / "weather"
    shutil.copytree(DEMO, work)
    run_spec(work / "evalgate.yaml", output=tmp_path / "full.json")
    files = run_sharded(work / "evalgate.yaml", 4, tmp_path)
    result = merge(files, tmp_path / "merged.json")
    full = json.loads((tmp_path / "full.json").read_text())
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert_same_run(full, merged)
    assert full["summary"]["judge"]["calls"] > 0  # the judged scorer really asked the (fake) judge
    assert result.verdict == full["verdict"]
    sizes = [len(json.loads(f.read_text())["items"]) for f in files]
    assert sum(sizes) == full["summary"]["total_items"]
    assert 0 in sizes  # ten ids over four shards leave one empty here: an empty shard merges too


SCORERS_PY = '''
from evalgate import NotScorable

def maybe(item, run):
    if "skip" in run.text:
        raise NotScorable("nothing to judge")
    if "boom" in run.text:
        raise RuntimeError("scorer blew up")
    return 1.0 if "sunny" in run.text else 0.1 + 0.2 * len(run.text) / 7
'''


def turns_spec(folder: Path, shuffle: int | None = None) -> Path:
    """Turn items whose per-turn checks differ in order and kind, NaN-free awkward floats, errors, not scorable."""
    folder.mkdir(parents=True, exist_ok=True)
    texts = ["sunny day", "rainy and 72F", "skip me", "boom", "cloudy, 18C, humid"]
    data = []
    for i in range(60):
        text = texts[i % len(texts)]
        if i % 3 == 0:
            first = [{"type": "python", "function": "scorers:maybe", "id": "maybe"},
                     {"type": "similarity", "value": "It is sunny"}]
            if i % 2:
                first.reverse()  # the order a turn's entries are first seen in decides the report's order
            data.append({"id": f"t{i}", "turns": [
                {"input": "a", "output": text, "scorers": first},
                {"input": "b", "output": {"text": text, "tool_calls": [{"name": "x", "error": "bad"}] if i % 4 else []},
                 "gates": [{"type": "no_tool_errors"}, {"type": "python", "function": "scorers:maybe", "id": "maybe"}]},
            ] + ([{"input": "c", "output": "sunny"}] if i % 5 == 0 else [])})
        else:
            data.append({"id": f"r{i}", "input": f"q{i}", "output": text})
    if shuffle is not None:
        random.Random(shuffle).shuffle(data)
    spec = {
        "version": 1,
        "data": "items.jsonl",
        "max_errors": 40,
        "gates": [{"type": "excludes", "value": "rain"}],
        "scorers": [
            {"type": "python", "function": "scorers:maybe", "id": "maybe", "threshold": 0.5},
            {"type": "similarity", "value": "It is sunny in Brooklyn, 72F.", "threshold": {"max": 0.9}},
        ],
    }
    (folder / "scorers.py").write_text(SCORERS_PY)
    (folder / "items.jsonl").write_text("".join(json.dumps(d) + "\n" for d in data))
    path = folder / "evalgate.yaml"
    path.write_text(json.dumps(spec))
    return path


def test_four_shards_merged_equal_a_turns_run_with_errors_and_not_scorable(tmp_path: Path) -> None:
    spec = turns_spec(tmp_path / "spec")
    run_spec(spec, output=tmp_path / "full.json")
    files = run_sharded(spec, 4, tmp_path)
    merge(files, tmp_path / "merged.json")
    full = json.loads((tmp_path / "full.json").read_text())
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert full["turn_results"] and full["summary"]["errored_items"] and full["summary"]["not_scorable"]
    assert len(full["turn_results"]) == 3
    assert_same_run(full, merged)


def test_one_shard_and_seven_shards_merge_to_the_same_run(tmp_path: Path) -> None:
    spec = turns_spec(tmp_path / "spec")
    run_spec(spec, output=tmp_path / "full.json")
    full = json.loads((tmp_path / "full.json").read_text())
    for count in (1, 7):
        out = tmp_path / str(count)
        out.mkdir()
        merge(run_sharded(spec, count, out), out / "merged.json")
        assert_same_run(full, json.loads((out / "merged.json").read_text()))


def shard_ids(spec: Path, count: int, out: Path) -> list[set[str]]:
    out.mkdir()
    return [{i["id"] for i in json.loads(f.read_text())["items"]} for f in run_sharded(spec, count, out)]


def test_shuffling_the_data_leaves_every_item_in_its_shard(tmp_path: Path) -> None:
    ordered = shard_ids(turns_spec(tmp_path / "a"), 4, tmp_path / "out-a")
    shuffled = shard_ids(turns_spec(tmp_path / "b", shuffle=3), 4, tmp_path / "out-b")
    assert ordered == shuffled
    assert all(ordered) and len(set().union(*ordered)) == 60


def test_membership_is_a_stable_hash_of_the_id() -> None:
    # sha256("q1") and friends: the same on every machine and Python
    assert [shard_of(f"q{i}", 4) for i in range(8)] == [shard_of(f"q{i}", 4) for i in range(8)]
    counts = [0] * 4
    for i in range(4000):
        counts[shard_of(f"item-{i}", 4) - 1] += 1
    assert min(counts) > 900  # ids spread evenly
    assert shard_of("q1", 1) == 1
    with pytest.raises(ValueError, match="I/N"):
        parse_shard("2")
    with pytest.raises(ValueError, match="counts from 1"):
        parse_shard("0/4")
    with pytest.raises(ValueError, match="counts from 1"):
        parse_shard("5/4")


# ---- refusals name the files ----


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    return run_sharded(turns_spec(tmp_path / "spec"), 3, tmp_path)


def test_a_missing_shard_is_refused(shards: list[Path]) -> None:
    with pytest.raises(MergeError, match=r"shard 2/3 missing: got .*shard-1.json \(1/3\), .*shard-3.json \(3/3\)"):
        merge([shards[0], shards[2]])


def test_a_shard_count_no_run_writes_is_refused_at_once(shards: list[Path], tmp_path: Path) -> None:
    # Every file says it is one of 10**12 shards: listing the missing ones took for ever (and all
    # memory). A count over --shard's limit is now a malformed shard record, named at once.
    edited = []
    for path in shards:
        forged = tmp_path / f"forged-{path.name}"
        forged.write_text(path.read_text().replace('"count": 3', '"count": 1000000000000', 1))
        edited.append(forged)
    done = run_cli("merge", *edited, cwd=tmp_path, timeout=60)
    assert done.code == 2 and "Traceback" not in done.stderr
    assert "forged-shard-1.json: its `shard` record is malformed" in done.stderr
    # the same with 10**12 turns, which the verdict would list one by one
    turns = tmp_path / "turns-of-shard-2.json"
    turns.write_text(shards[1].read_text().replace('"turn_count": 3', '"turn_count": 1000000000000', 1))
    done = run_cli("merge", shards[0], turns, shards[2], cwd=tmp_path, timeout=60)
    assert done.code == 2 and "turns-of-shard-2.json: its `shard` record is malformed" in done.stderr


def test_many_missing_shards_are_named_ten_at_a_time(shards: list[Path], tmp_path: Path) -> None:
    edited = []
    for path in shards:  # shards 1-3 of 1024: the largest count --shard allows
        forged = tmp_path / f"of-1024-{path.name}"
        forged.write_text(path.read_text().replace('"count": 3', '"count": 1024', 1))
        edited.append(forged)
    with pytest.raises(MergeError) as caught:
        merge(edited)
    message = str(caught.value)
    assert message.startswith("shard 4/1024, 5/1024, 6/1024, 7/1024, 8/1024, 9/1024, 10/1024, 11/1024, 12/1024, "
                              "13/1024 and 1011 more missing: got ")
    assert len(message) < 500


def test_a_repeated_shard_is_refused(shards: list[Path], tmp_path: Path) -> None:
    copy = tmp_path / "copy-of-2.json"
    shutil.copy(shards[1], copy)
    with pytest.raises(MergeError, match=r"copy-of-2.json: shard 2/3 again \(also .*shard-2.json\)"):
        merge([*shards, copy])


def test_shards_of_another_spec_or_data_are_refused(shards: list[Path], tmp_path: Path) -> None:
    other = turns_spec(tmp_path / "other")
    (other.parent / "items.jsonl").write_text((other.parent / "items.jsonl").read_text().replace("sunny", "SUNNY"))
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    [_, second, _] = run_sharded(other, 3, foreign)
    with pytest.raises(MergeError, match=r"foreign/shard-2.json: from another data than .*shard-1.json"):
        merge([shards[0], second, shards[2]])
    spec = json.loads(other.read_text())
    spec["max_errors"] = 3
    other.write_text(json.dumps(spec))
    [_, second, _] = run_sharded(other, 3, foreign)
    with pytest.raises(MergeError, match=r"foreign/shard-2.json: from another spec than"):
        merge([shards[0], second, shards[2]])
    four = tmp_path / "four"
    four.mkdir()
    [_, second, _, _] = run_sharded(turns_spec(tmp_path / "spec"), 4, four)
    with pytest.raises(MergeError, match=r"four/shard-2.json: from another shard count"):
        merge([shards[0], second, shards[2]])


def test_an_item_in_two_shards_is_refused(shards: list[Path]) -> None:
    first = shards[0].read_text().splitlines(keepends=True)
    second = shards[1].read_text()
    stolen = first[1] if first[1].endswith(",\n") else first[1].replace("]}", ",")  # an item of shard 1
    head, _, rest = second.partition('"items": [')
    shards[1].write_text(head + '"items": [' + stolen.replace(",\n", ",\n").rstrip(",\n") + ",\n" + rest)
    with pytest.raises(MergeError, match=r"shard-(1|2).json: item '[rt]\d+' is also in .*shard-(1|2).json"):
        merge(shards)


def test_results_that_are_not_a_shard_are_refused(tmp_path: Path) -> None:
    spec = turns_spec(tmp_path / "spec")
    run_spec(spec, output=tmp_path / "whole.json")
    with pytest.raises(MergeError, match=r"whole.json: not a shard's results; write each with .*--shard I/N"):
        merge([tmp_path / "whole.json"])
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(MergeError, match=r"junk.json: not an evalgate results file"):
        merge([tmp_path / "junk.json"])


def test_the_cli_runs_shards_and_merges_with_exit_codes(tmp_path: Path) -> None:
    spec = turns_spec(tmp_path)
    for index in (1, 2):
        result = run_cli("run", spec, "--shard", f"{index}/2", "-o", f"s{index}.json", cwd=tmp_path)
        assert result.code in (0, 1), result.output
        assert f"shard {index}/2: this verdict is the shard's own" in result.stdout
    merged = run_cli("merge", "s1.json", "s2.json", "-o", "merged.json", "--fail-on", "scored", cwd=tmp_path)
    full = run_cli("run", spec, "-o", "full.json", "--fail-on", "scored", cwd=tmp_path)
    assert merged.code == full.code, merged.output
    assert merged.stdout.splitlines()[-2] == full.stdout.splitlines()[-2]  # the verdict line
    refused = run_cli("merge", "s1.json", "-o", "m.json", cwd=tmp_path)
    assert refused.code == 2 and "shard 2/2 missing" in refused.stderr and "Traceback" not in refused.output
    assert not (tmp_path / "m.json").exists()
    bad = run_cli("run", spec, "--shard", "3/2", "-o", "x.json", cwd=tmp_path)
    assert bad.code == 2 and "--shard" in bad.stderr
    no_output = run_cli("run", spec, "--shard", "1/2", cwd=tmp_path)
    assert no_output.code == 2 and "--output" in no_output.stderr
    with_baseline = run_cli("run", spec, "--shard", "1/2", "-o", "y.json", "--baseline", "full.json", cwd=tmp_path)
    assert with_baseline.code == 2 and "evalgate compare" in with_baseline.stderr
    assert not (tmp_path / "y.json").exists()


def test_evalgate_merge_is_the_function_whatever_was_imported_first(tmp_path: Path, shards: list[Path]) -> None:
    import evalgate
    from evalgate.results.merge import MergeError as Imported

    assert Imported is evalgate.MergeError
    assert evalgate.merge(shards).summary["total_items"] == 60


def test_edited_or_broken_shard_files_are_refused_by_name(shards: list[Path], tmp_path: Path) -> None:
    """Hostile input: whatever a shard file holds, the merge names it and never crashes."""
    good = shards[1].read_text()
    assert '"turns":[' in good and '"kind": "gate"' in good and '"kind": "scorer", "threshold": 0.5' in good
    cases = {
        "list.json": "[1, 2]",
        "count.json": good.replace('"count": 3', '"count": "3"', 1),
        "entries.json": good.replace('"kind": "gate"', '"kind": "boss"', 1),
        "cut.json": good[: len(good) // 2],
        "item.json": good.replace('{"index"', '[{"index"', 1),
        "turns.json": good.replace('"turns":[', '"turns":[7, ', 1),
        "summary.json": json.dumps({**json.loads(good), "summary": [1]}, indent=1),
        "threshold.json": good.replace('"kind": "scorer", "threshold": 0.5', '"kind": "scorer", "threshold": "x"', 1),
        # an item's own fields, of types no run writes (these once ended in an internal error)
        "error.json": good.replace('"error":null', '"error":["x"]', 1),
        "output.json": good.replace('"output":{', '"output":7,"was":{', 1),
        "scorer-errors.json": good.replace('"error":null', '"error":null,"scorer_errors":{"k":1.5}', 1),
        "reasons-by-kind.json": good.replace('"error":null', '"error":null,"reasons_by_kind":{"gates":["x"]}', 1),
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(MergeError, match=rf"{name}: "):
            merge([shards[0], path, shards[2]])
    for name, field in (("error.json", "error"), ("output.json", "output"), ("scorer-errors.json", "scorer_errors"),
                        ("reasons-by-kind.json", "reasons_by_kind")):
        with pytest.raises(MergeError, match=rf"{name}: item '\w+' has a `{field}` that is not what evalgate writes"):
            merge([shards[0], tmp_path / name, shards[2]])
    # the same items, pretty-printed: read whole, merged the same
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(json.loads(good), indent=2))
    again = merge([shards[0], pretty, shards[2]], tmp_path / "m.json")
    assert again.summary["total_items"] == 60 and (tmp_path / "m.json").is_file()
    # and on one line (json.dumps' own layout): the header's line holds every item, not evalgate's one
    one_line = tmp_path / "one-line.json"
    one_line.write_text(json.dumps(json.loads(good)))
    merged = merge([shards[0], one_line, shards[2]], tmp_path / "m1.json")
    assert merged.summary == again.summary and merged.outcome == again.outcome


TRIALS_PY = '''
import collections

calls = collections.Counter()

def agent(text):
    # The k-th call for an input answers the k-th of three replies: trials differ, every run sees the same three.
    calls[text] += 1
    replies = ["sunny", "rainy", "boom"] if int(text[1:]) % 2 else ["sunny", "skip me", "sunny"]
    return text + " " + replies[calls[text] % 3]
'''


def test_two_shards_of_a_repeats_run_merge_to_the_unsharded_run_error_bars_included(tmp_path: Path) -> None:
    folder = tmp_path / "spec"
    folder.mkdir()
    (folder / "scorers.py").write_text(SCORERS_PY)
    (folder / "agent.py").write_text(TRIALS_PY)
    (folder / "items.jsonl").write_text("".join(json.dumps({"id": f"i{i}", "input": f"q{i}"}) + "\n"
                                                for i in range(30)))
    spec = {
        "version": 1, "data": "items.jsonl", "repeats": 3, "concurrency": 1, "max_errors": 30,
        "target": {"type": "python", "function": "agent:agent"},
        "gates": [{"type": "excludes", "value": "rain"}],
        "scorers": [{"type": "python", "function": "scorers:maybe", "id": "maybe", "threshold": 0.5}],
    }
    (folder / "evalgate.yaml").write_text(json.dumps(spec))
    run_spec(folder / "evalgate.yaml", output=tmp_path / "full.json")
    files = run_sharded(folder / "evalgate.yaml", 2, tmp_path)
    merge(files, tmp_path / "merged.json")
    full = json.loads((tmp_path / "full.json").read_text())
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert full["summary"]["repeats"] == 3 and full["summary"]["trials"] == 90
    assert all(len(item["trials"]) == 3 for item in full["items"])
    gate = full["gate_results"][0]
    assert 0 < gate["score"] < 1 and gate["stderr"] > 0 and gate["n"] == 90 and gate["items"] == 30
    for shard in files:  # every trial of an item stays in the item's shard
        for item in json.loads(shard.read_text())["items"]:
            assert [t["trial"] for t in item["trials"]] == [0, 1, 2]
    assert_same_run(full, merged)


def recorded_spec(folder: Path, name: str, sunny: float) -> Path:
    """A recorded run in which a share `sunny` of the answers say "sunny" (same ids and inputs whatever it is)."""
    rows = [{"id": f"q{i}", "input": f"weather {i}?",
             "output": {"text": "sunny" if i < sunny * 60 else "rain", "tool_calls": []}} for i in range(60)]
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = {"version": 1, "name": "weather", "data": f"{name}.jsonl", "target": {"type": "recorded"},
            "scorers": [{"type": "includes", "value": "sunny", "threshold": 0.2}]}
    path = folder / f"{name}.yaml"
    path.write_text(json.dumps(spec))
    return path


def test_merge_with_a_baseline_compares_as_the_unsharded_run_does(tmp_path: Path) -> None:
    base, head = recorded_spec(tmp_path, "base", 0.95), recorded_spec(tmp_path, "head", 0.5)
    assert run_cli("run", base, "-o", "base.json", cwd=tmp_path).code == 0
    for index in (1, 2):
        assert run_cli("run", head, "--shard", f"{index}/2", "-o", f"s{index}.json", cwd=tmp_path).code in (0, 1)
    merged = run_cli("merge", "s1.json", "s2.json", "-o", "merged.json", "--baseline", "base.json", cwd=tmp_path)
    full = run_cli("run", head, "-o", "full.json", "--baseline", "base.json", cwd=tmp_path)
    assert merged.code == full.code == 1, merged.output  # the threshold passes (0.5 >= 0.2): the drop fails it
    merged_raw, full_raw = (json.loads((tmp_path / f).read_text()) for f in ("merged.json", "full.json"))
    assert merged_raw["verdict"] == full_raw["verdict"] == "failed"
    assert merged_raw["summary"]["failure_reason"] == full_raw["summary"]["failure_reason"] == "regression"
    assert untimed(merged_raw["comparison"]) == untimed(full_raw["comparison"])
    assert merged_raw["comparison"]["regressions"] == 1 and "regressed" in merged.stdout
    same = run_cli("merge", "s1.json", "s2.json", "-o", "again.json", "--baseline", "full.json", cwd=tmp_path)
    assert same.code == 0, same.output  # compared with itself: nothing regressed, the verdict stands
    unwritten = run_cli("merge", "s1.json", "s2.json", "--baseline", "base.json", cwd=tmp_path)
    assert unwritten.code == 2 and "--output" in unwritten.stderr and "Traceback" not in unwritten.output


def test_a_merged_outage_exits_4_as_the_unsharded_run_does(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("def answer(q):\n    raise ConnectionError('the agent is down')\n")
    spec = {"version": 1, "data": [{"id": f"q{i}", "input": str(i)} for i in range(8)],
            "target": {"type": "python", "function": "agent:answer"},
            "scorers": [{"type": "includes", "value": "yes"}]}
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))
    for index in (1, 2):
        run_cli("run", "--shard", f"{index}/2", "-o", f"s{index}.json", cwd=tmp_path)
    merged = run_cli("merge", "s1.json", "s2.json", "-o", "merged.json", cwd=tmp_path)
    full = run_cli("run", "-o", "full.json", cwd=tmp_path)
    assert merged.code == full.code == 4, merged.output + full.output
    assert json.loads((tmp_path / "merged.json").read_text())["summary"]["failure_reason"] == "errors"


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_results_path_that_is_no_file_is_refused_not_read(kind: str, shards: list[Path], tmp_path: Path) -> None:
    """A FIFO would block the merge (and compare, and --baseline) forever, /dev/zero fill the memory."""
    if kind == "fifo":
        path = tmp_path / "shard.fifo"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    with pytest.raises(MergeError, match="not a regular file"):
        merge([shards[0], path, shards[2]])
    merged = run_cli("merge", shards[0], path, shards[2], timeout=30)
    assert merged.code == 2 and "not a regular file" in merged.stderr, merged.output
    compared = run_cli("compare", shards[0], path, timeout=30)
    assert compared.code == 2 and "not a regular file" in compared.stderr, compared.output
    baseline = run_cli("run", turns_spec(tmp_path / "again"), "--baseline", path, timeout=30)
    assert baseline.code == 2 and "not a regular file" in baseline.stderr, baseline.output


def test_an_output_path_that_is_no_file_is_never_renamed_over(shards: list[Path], tmp_path: Path) -> None:
    """Results are written beside --output and renamed over it: a FIFO or a device there (as root,
    /dev/stdout) would be replaced by a file. run, merge and compare refuse it before any work."""
    import stat

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    spec = turns_spec(tmp_path / "spec-b")
    commands = [("run", spec, "-o", fifo), ("merge", *shards, "-o", fifo),
                ("compare", shards[0], shards[0], "-o", fifo)]
    for args in commands:
        done = run_cli(*args, cwd=tmp_path, timeout=30)
        assert done.code == 2 and "is a FIFO (named pipe), not a regular file" in done.stderr, (args, done.output)
        assert stat.S_ISFIFO(fifo.stat().st_mode), args
    with pytest.raises(OSError, match="not a regular file"):
        run_spec(spec, output=fifo)
    assert not list(tmp_path.glob("out.fifo.*"))  # no journal, no temporary file left beside it


def test_the_merged_output_may_not_replace_a_shard(shards: list[Path]) -> None:
    before = shards[1].read_bytes()
    with pytest.raises(MergeError, match="would replace this shard's results"):
        merge(shards, shards[1])
    done = run_cli("merge", *shards, "-o", shards[1])
    assert done.code == 2 and "would replace this shard's results" in done.stderr
    assert shards[1].read_bytes() == before


def test_the_merged_run_keeps_each_shards_warnings_once_saying_whose(shards: list[Path]) -> None:
    given = (["the cache could not keep 2 replies", "mapping hides failures"], ["mapping hides failures"],
             ["mapping hides failures", 7, "the cache could not keep 5 replies"])  # 7: a forged header's junk
    for path, warnings in zip(shards, given, strict=True):
        results = json.loads(path.read_text())
        results["summary"]["warnings"] = warnings
        path.write_text(json.dumps(results))
    merged = merge(shards)
    assert merged.extra_summary["warnings"] == [
        "shard 1 of 3: the cache could not keep 2 replies",
        "all 3 shards: mapping hides failures",
        "shard 3 of 3: the cache could not keep 5 replies",
    ]
    single = merge([p for p in run_sharded(turns_spec(shards[0].parent / "one"), 1, shards[0].parent / "one")])
    assert "warnings" not in single.extra_summary  # none given, none made up


def test_a_shard_file_that_lost_an_item_is_refused_by_name(shards: list[Path], tmp_path: Path) -> None:
    lines = shards[1].read_text().splitlines(keepends=True)
    assert len(lines) > 3
    cut = tmp_path / "cut.json"
    cut.write_text("".join(lines[:2] + lines[3:]))  # one item line gone: the digest no longer holds either
    with pytest.raises(MergeError, match=r"cut.json: holds \d+ items where its summary counts \d+"):
        merge([shards[0], cut, shards[2]])


def test_shards_run_with_other_repeats_are_refused(tmp_path: Path) -> None:
    spec = recorded_spec(tmp_path, "weather", 0.5)
    run_spec(spec, output=tmp_path / "s1.json", shard="1/2", repeats=3)
    run_spec(spec, output=tmp_path / "s2.json", shard="2/2")
    with pytest.raises(MergeError, match=r"s2.json: ran no repeats, .*s1.json 3; merge only the shards of one run"):
        merge([tmp_path / "s1.json", tmp_path / "s2.json"])


def test_per_turn_thresholds_that_disagree_across_shards_are_refused(tmp_path: Path) -> None:
    """A shard validates only its own items: the merge finds what one whole run refuses."""
    first, second = next((a, b) for a in ("a", "b", "c", "d") for b in ("e", "f", "g", "h")
                         if shard_of(a, 2) == 1 and shard_of(b, 2) == 2)
    rows = [{"id": item_id, "turns": [{"input": "q", "output": "sunny",
                                       "scorers": [{"type": "includes", "value": "sunny", "threshold": bound}]}]}
            for item_id, bound in ((first, 0.5), (second, 0.9))]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(json.dumps({"version": 1, "data": "items.jsonl", "target": {"type": "recorded"},
                                "gates": [{"type": "excludes", "value": "rain"}]}))  # streamed: checked per item
    assert run_cli("validate", spec).code == 2  # the whole run refuses it
    files = run_sharded(spec, 2, tmp_path)
    with pytest.raises(MergeError, match=r"shard-2.json: `includes:sunny` at turn 0 has another threshold"):
        merge(files)


def test_the_merge_never_writes_over_a_shard_named_like_its_scratch_file(shards: list[Path], tmp_path: Path) -> None:
    scratch = tmp_path / "merged.json.tmp"
    shutil.copy(shards[0], scratch)
    with pytest.raises(MergeError, match=r"merged.json.tmp: --output would replace this shard's results"):
        merge([scratch, shards[1], shards[2]], tmp_path / "merged.json")
    assert scratch.read_bytes() == shards[0].read_bytes()


def test_a_summary_holding_text_where_numbers_belong_is_refused(shards: list[Path], tmp_path: Path) -> None:
    """A forged shard header must not reach the report: `summary.budget` is rendered in the comment."""
    good = json.loads(shards[1].read_text())
    forged = {"budget": {"items_not_run": "<img src=x onerror=alert(1)> @octocat", "max_usd": 0},
              "duration_s": "1e<@x>", "max_errors": "x", "judge": {"model": "m", "cost_usd": "x"},
              "network": {"requests": "many"}, "warnings": "not a list"}
    for key, value in forged.items():
        path = tmp_path / f"{key}.json"
        path.write_text(json.dumps({**good, "summary": {**good["summary"], key: value}}))
        with pytest.raises(MergeError, match=rf"{key}.json: its `summary.{key}` is not what evalgate writes"):
            merge([shards[0], path, shards[2]])


HUGE = "1" + "0" * 400  # an integer past the largest float: JSON holds it, a float() overflows


def assert_refused_by_name(cases: dict[str, tuple[str, str]], shards: list[Path], tmp_path: Path) -> None:
    """Each case (name: what the refusal says, the second shard's text) refused by the API and the CLI."""
    for name, (said, text) in cases.items():
        assert text != shards[1].read_text(), name
        (tmp_path / name).write_text(text)
        with pytest.raises(MergeError, match=rf"{name}: .*{said}"):
            merge([shards[0], tmp_path / name, shards[2]])
        done = run_cli("merge", shards[0], name, shards[2], "-o", "merged.json", cwd=tmp_path)
        assert done.code == 2 and f"{name}: " in done.stderr and "Traceback" not in done.output, (name, done.output)
        assert not (tmp_path / "merged.json").exists() and not list(tmp_path.glob("merged.json.*"))


def test_integers_past_the_largest_float_are_refused_by_name(shards: list[Path], tmp_path: Path) -> None:
    """In a summary counter, a threshold or a score they once ended the merge in an internal error (exit 3)."""
    good = shards[1].read_text()
    assert '"network"' not in good.partition(', "items": [')[0] and '"excludes:rain":1.0' in good
    assert_refused_by_name({
        "network.json": ("its `summary.network` is not what evalgate writes",
                         good.replace('"summary": {', f'"summary": {{"network": {{"requests": {HUGE}}}, ', 1)),
        "threshold.json": ("its `shard` record is malformed",
                           good.replace('"kind": "scorer", "threshold": 0.5',
                                        f'"kind": "scorer", "threshold": {HUGE}', 1)),
        "score.json": ("does not fit the shards' entries",
                       good.replace('"excludes:rain":1.0', f'"excludes:rain":{HUGE}', 1)),
    }, shards, tmp_path)


def test_judge_costs_that_are_no_amount_are_refused_by_name(shards: list[Path], tmp_path: Path) -> None:
    """An item's judge costs are added up by check: text there once ended the merge in exit 3."""
    good = shards[1].read_text()
    assert '"error":null' in good and "judge_cost_usd" not in good
    said = "has a `judge_cost_usd` that is not what evalgate writes"
    assert_refused_by_name({
        "cost-text.json": (said, good.replace('"error":null', '"error":null,"judge_cost_usd":{"maybe":"0.5"}', 1)),
        "cost-list.json": (said, good.replace('"error":null', '"error":null,"judge_cost_usd":{"maybe":[0.5]}', 1)),
        "cost-huge.json": (said, good.replace('"error":null', f'"error":null,"judge_cost_usd":{{"maybe":{HUGE}}}', 1)),
    }, shards, tmp_path)


def test_an_item_whose_bytes_are_not_utf8_is_refused_by_name(shards: list[Path], tmp_path: Path) -> None:
    """The merge copies each item's bytes: a surrogate's UTF-8 bytes (no run writes them, its escape `\\ud800`
    instead) reached the merged results, a file that is not UTF-8 and that JSON readers refuse."""
    lines = shards[1].read_bytes().split(b"\n")
    assert b'"error":null' in lines[2]
    lines[2] = lines[2].replace(b'"error":null', b'"error":"\xed\xa0\x80"', 1)
    (tmp_path / "surrogate.json").write_bytes(b"\n".join(lines))
    done = run_cli("merge", shards[0], "surrogate.json", shards[2], "-o", "merged.json", cwd=tmp_path)
    assert done.code == 2 and "surrogate.json: an item is not JSON" in done.stderr, done.output
    assert "Traceback" not in done.output and not (tmp_path / "merged.json").exists()


def test_a_shard_whose_spec_entries_were_edited_is_refused_by_name(shards: list[Path], tmp_path: Path) -> None:
    """The merge takes the gates and scorers (with their thresholds) of the first shard: one edited there
    gave another verdict than the run's, silently. Shards of one spec record the same ones."""
    good = shards[0].read_text()
    edited = tmp_path / "lenient.json"
    edited.write_text(good.replace('"kind": "scorer", "threshold": 0.5', '"kind": "scorer", "threshold": 0.0', 1))
    assert edited.read_text() != good
    done = run_cli("merge", edited, shards[1], shards[2], "-o", "merged.json", cwd=tmp_path)
    assert done.code == 2 and "Traceback" not in done.output, done.output
    assert "shard-2.json: its gates and scorers (`shard.entries`) are not those of lenient.json" in done.stderr
    assert not (tmp_path / "merged.json").exists()


def test_an_item_the_results_reader_would_refuse_is_refused_by_name(shards: list[Path], tmp_path: Path) -> None:
    """Fields the merge copies but does not add up: of a type no run writes, they were merged, and the merged
    results then failed to load (`evalgate compare`, the Action: no summary, no comment, an internal error)."""
    from evalgate.results.model import load_results

    good = shards[1].read_text()
    assert all(text in good for text in ('"id":"', '"reasons":{}', '"error":null,"gates":{', '"data_hash":"'))
    assert_refused_by_name({
        name: (f"has a `{field}` that is not what evalgate writes", good.replace(old, new, 1))
        for name, field, old, new in (
            ("id.json", "id", '"id":"', '"id":7,"was":"'),
            ("reasons.json", "reasons", '"reasons":{}', '"reasons":{"maybe":7}'),
            ("no-reasons.json", "reasons", '"reasons":{}', '"reasons":null'),
            ("gates.json", "gates", '"error":null,"gates":{', '"error":null,"gates":{"forged":"text",'),
            ("data-hash.json", "data_hash", '"data_hash":"', '"data_hash":7,"was":"'),
        )
    }, shards, tmp_path)
    merge(shards, tmp_path / "merged.json")
    assert load_results(tmp_path / "merged.json").summary.total_items == 60  # what the merge accepts reads back


def test_a_turn_the_report_could_not_read_is_refused_by_name(shards: list[Path], tmp_path: Path) -> None:
    """A turn's reasons are not added up but shown, in the job summary and the PR comment, beside the items
    behind a failed check: text where their mapping belongs was merged, and rendering the comment then raised
    a TypeError (the Action's merge job: no comment, an internal error)."""
    from evalgate.report.markdown import ReportContext, render
    from evalgate.results.model import load_results

    lines = shards[1].read_text().split("\n")
    at = next(n for n, line in enumerate(lines) if n and '"turns":[' in line and line.endswith(","))

    def forged(**fields: Any) -> str:
        item = json.loads(lines[at][:-1])
        item["turns"][1].update(fields)  # the turn of the per-turn gate that fails: the comment shows its reasons
        return "\n".join([*lines[:at], json.dumps(item, separators=(",", ":")) + ",", *lines[at + 1:]])

    said = "has a `turns` that is not what evalgate writes"
    assert_refused_by_name({
        "turn-reasons.json": (said, forged(reasons="x")),
        "turn-reasons-text.json": (said, forged(reasons={"maybe": 7})),
        "turn-reasons-by-kind.json": (said, forged(reasons_by_kind={"gates": "x"})),
    }, shards, tmp_path)
    merge(shards, tmp_path / "merged.json")
    assert "evalgate" in render(load_results(tmp_path / "merged.json"), ReportContext(comment=True))


def test_an_entry_whose_params_hash_is_no_text_is_refused_by_name(tmp_path: Path) -> None:
    """A shard's entries give the merged results' gates and thresholds, `params_hash` included: one that
    was no text was merged, and the merged results then failed to load (compare, the Action)."""
    [shard] = run_sharded(turns_spec(tmp_path / "spec"), 1, tmp_path)
    opening, mark, items = shard.read_text().partition(', "items": [')
    head = json.loads(opening + "}")
    assert isinstance(head["shard"]["entries"][0]["params_hash"], str)
    head["shard"]["entries"][0]["params_hash"] = {"a": 1}
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(head)[:-1] + mark + items)
    with pytest.raises(MergeError, match=r"forged.json: its `shard` record is malformed"):
        merge([forged])
    done = run_cli("merge", forged, "-o", "merged.json", cwd=tmp_path)
    assert done.code == 2 and "forged.json: its `shard` record is malformed" in done.stderr, done.output


FLAKY_FIRST_PY = '''
import collections

calls = collections.Counter()

def agent(text):
    calls[text] += 1
    if calls[text] == 1:
        raise RuntimeError("cold start")  # the first trial errors: its turn checks are first scored later
    return "sunny"
'''


def test_a_per_turn_check_first_scored_in_a_later_trial_merges(tmp_path: Path) -> None:
    folder = tmp_path / "spec"
    folder.mkdir()
    (folder / "agent.py").write_text(FLAKY_FIRST_PY)
    (folder / "evalgate.yaml").write_text(json.dumps({
        "version": 1, "repeats": 2, "concurrency": 1, "max_errors": 5,
        "target": {"type": "python", "function": "agent:agent"},
        "data": [{"id": "t1", "turns": [{"input": "hello", "gates": [{"type": "includes", "value": "sunny"}]}]},
                 {"id": "t2", "turns": [{"input": "hi", "scorers": [{"type": "includes", "value": "sun"}]}]}],
    }))
    # each run a fresh process: the agent's first call per input fails in every run alike
    assert run_cli("run", folder / "evalgate.yaml", "-o", tmp_path / "full.json").code == 0
    assert run_cli("run", folder / "evalgate.yaml", "-o", tmp_path / "shard.json", "--shard", "1/1").code == 0
    merge([tmp_path / "shard.json"], tmp_path / "merged.json")
    full = json.loads((tmp_path / "full.json").read_text())
    assert full["turn_results"] and full["summary"]["errored_trials"] == 2, "first trials errored, later scored"
    assert_same_run(full, json.loads((tmp_path / "merged.json").read_text()))


def shared_id_spec(folder: Path) -> Path:
    """Turn items whose turn 1 has a gate and a scorer both with id `maybe`: in one item both, in others
    only one of them, each sometimes not scorable ("skip me"), errored ("boom") or scored."""
    folder.mkdir(parents=True, exist_ok=True)
    gate = {"type": "python", "function": "scorers:maybe", "id": "maybe"}
    scorer = {"type": "python", "function": "scorers:maybe", "id": "maybe"}
    texts = ["skip me", "sunny day", "boom", "rainy"]
    data = []
    for i in range(24):
        which = i % 3  # 0: both, 1: only the gate, 2: only the scorer
        turn = {"input": "b", "output": texts[(i // 3) % len(texts)],
                "gates": [gate] if which != 2 else [], "scorers": [scorer] if which != 1 else []}
        data.append({"id": f"s{i}", "turns": [{"input": "a", "output": "sunny"}, turn]})
    (folder / "scorers.py").write_text(SCORERS_PY)
    (folder / "items.jsonl").write_text("".join(json.dumps(d) + "\n" for d in data))
    path = folder / "evalgate.yaml"
    path.write_text(json.dumps({"version": 1, "data": "items.jsonl", "max_errors": 24,
                                "gates": [{"type": "excludes", "value": "hail"}]}))
    return path


@pytest.mark.parametrize("columns", [True, False])
def test_a_per_turn_gate_and_scorer_sharing_an_id_merge_their_not_scorable_apart(
        columns: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both not scorable at one turn of one item, or one of them in an item that lacks the other: the
    item-by-item merge (older shards, repeats) counts each as the run did."""
    from evalgate.results import merge as merging

    spec = shared_id_spec(tmp_path / "spec")
    run_spec(spec, output=tmp_path / "full.json")
    files = run_sharded(spec, 3, tmp_path)
    if not columns:
        monkeypatch.setattr(merging, "_columns", lambda files: None)
    merge(files, tmp_path / "merged.json")
    full = json.loads((tmp_path / "full.json").read_text())
    merged = json.loads((tmp_path / "merged.json").read_text())
    both = [t for i in full["items"] for t in i["turns"][1:] if t["input"] == "b" and "maybe" in t["gates"]]
    assert both  # the gate scored in some items (and so it has a result)
    assert full["summary"]["not_scorable"]["maybe"] == 2 * 2 + 2 + 2  # both in 2 items, each alone in 2 more
    assert_same_run(full, merged)


def test_shards_written_before_turns_recorded_not_scorable_by_kind_still_merge(tmp_path: Path) -> None:
    """Older results hold only the item's `turn-N:id` labels: the merge still reads them."""
    spec = turns_spec(tmp_path / "spec")
    run_spec(spec, output=tmp_path / "full.json")
    files = run_sharded(spec, 3, tmp_path)
    stripped = 0
    for path in files:
        results = json.loads(path.read_text())
        for item in results["items"]:
            for turn in item.get("turns") or []:
                stripped += turn.pop("not_scorable", None) is not None
        path.write_text(json.dumps(results))
    assert stripped
    merge(files, tmp_path / "merged.json")
    full = json.loads((tmp_path / "full.json").read_text())
    merged = json.loads((tmp_path / "merged.json").read_text())
    merged["items"] = full["items"]  # the older items, as they were
    assert_same_run(full, merged)


def test_four_shards_of_a_priced_judge_run_merge_to_its_judge_cost_to_the_last_digit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each shard's `summary.judge.cost_usd` is rounded to 8 decimals: the merged figure is not their
    sum, but the unsharded run's own, to the last bit."""
    from fake_judge import FakeJudge

    # awkward prices: every call costs a fraction of a cent with digits far past the 8th decimal
    prices = {"priced-judge": {"prompt": 0.123456789, "completion": 0.987654321}}
    with FakeJudge() as judge:
        data = [{"id": f"j{i}", "input": f"What is the weather in city {i}?", "context": [f"City {i} is sunny."],
                 "output": {"text": f"City {i} is sunny today. " * (1 + i % 3), "tool_calls": []}}
                for i in range(40)]
        spec = {"version": 1, "data": data, "concurrency": 4,
                "scorers": [{"type": "faithfulness", "threshold": 0.5}, {"type": "answer_relevancy"}],
                "judge": {"model": "priced-judge", "base_url": judge.base_url, "api_key_env": None,
                          "prices": prices}}
        path = tmp_path / "evalgate.yaml"
        path.write_text(json.dumps(spec))
        run_spec(path, output=tmp_path / "full.json")
        files = run_sharded(path, 4, tmp_path)
    merge(files, tmp_path / "merged.json")
    full = json.loads((tmp_path / "full.json").read_text())
    merged = json.loads((tmp_path / "merged.json").read_text())
    shard_costs = [json.loads(f.read_text())["summary"]["judge"]["cost_usd"] for f in files]
    assert full["summary"]["judge"]["calls"] > 40 and all(c > 0 for c in shard_costs)
    assert merged["summary"]["judge"]["cost_usd"] == full["summary"]["judge"]["cost_usd"]
    assert_same_run(full, merged)
    from evalgate.results import merge as merging

    monkeypatch.setattr(merging, "_columns", lambda files: None)  # item by item (older shards, repeats): the same
    assert merge(files).summary["judge"] == merged["summary"]["judge"]


@pytest.mark.parametrize("repeats", [None, 2], ids=["columns", "repeats-item-by-item"])
def test_merged_shards_keep_the_reasons_of_a_gate_and_a_scorer_of_one_id(tmp_path: Path, repeats: int | None) -> None:
    """Each item's `reasons_by_kind` reaches the merged results as the shard wrote it: whether the merge adds
    the shards' columns or (with repeats, which write none) reads every item."""
    spec = same_id_spec(tmp_path, **({"repeats": repeats} if repeats else {}))
    for index in (1, 2, 3):
        shard = run_cli("run", spec, "--shard", f"{index}/3", "-o", f"s{index}.json", cwd=tmp_path)
        assert shard.code in (0, 1), shard.output
    heads = [json.loads((tmp_path / f"s{index}.json").read_text())["shard"] for index in (1, 2, 3)]
    assert all(("replay" in head) == (repeats is None) for head in heads)
    merged = run_cli("merge", "s1.json", "s2.json", "s3.json", "-o", "merged.json", cwd=tmp_path)
    assert merged.code == 1, merged.output  # the gate failed on `bad`
    full = run_cli("run", spec, "-o", "full.json", cwd=tmp_path)
    assert full.code == 1, full.output
    results = json.loads((tmp_path / "merged.json").read_text())
    assert_each_keeps_its_reason(results["items"])
    assert_same_run(json.loads((tmp_path / "full.json").read_text()), results)


@pytest.mark.parametrize("read_items", [False, True])
def test_a_symlink_or_fifo_at_the_merges_temporary_files_is_replaced_not_written_through(
        shards: list[Path], tmp_path: Path, read_items: bool) -> None:
    """The merge writes beside --output and renames: whatever is at those paths is not its to write into
    (a symlink's target was overwritten, a FIFO made the merge wait for a reader for ever)."""
    out = tmp_path / "merged.json"
    victims = [tmp_path / "victim-1.txt", tmp_path / "victim-2.txt"]
    for victim, scratch in zip(victims, ("merged.json.tmp", "merged.json.tmp2"), strict=True):
        victim.write_text("precious\n")
        (tmp_path / scratch).symlink_to(victim)
    merge(shards, out, read_items=read_items)
    assert [v.read_text() for v in victims] == ["precious\n"] * 2 and not out.is_symlink()
    merge(shards, tmp_path / "clean.json")
    assert json.loads(out.read_text())["items"] == json.loads((tmp_path / "clean.json").read_text())["items"]
    for scratch in ("merged.json.tmp", "merged.json.tmp2"):
        (tmp_path / scratch).unlink(missing_ok=True)
        os.mkfifo(tmp_path / scratch)
        done = run_cli("merge", *shards, "-o", out, cwd=tmp_path, timeout=30)
        assert done.code in (0, 1) and out.read_bytes() == (tmp_path / "clean.json").read_bytes(), done.output
