"""The merge from the shards' replay columns: byte for byte what reading every item gives, and used
only when the columns describe the very items in the file."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from test_shards import DEMO, assert_same_run, run_sharded, turns_spec, untimed

from evalgate.api import run_spec
from evalgate.decide.verdict import Aggregator, Entry
from evalgate.results import merge as merging
from evalgate.results.merge import merge
from evalgate.results.score_columns import Recorder, columns_sha256, decode
from evalgate.results.writer import ITEMS_SHA256_PENDING, ResultsWriter

AWKWARD = [0.1 + 0.2, 1 / 3, 5e-324, 2.2250738585072014e-308, 0.9999999999999999, -0.0, 0.0, 1.0, 0.5]


def costs_spec(folder: Path) -> Path:
    """Recorded replies that cost money (awkward amounts) under a budget that errors the last items."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    rows = [{"id": f"c{i}", "input": f"q{i}", "output": {
        "text": rng.choice(["sunny in Brooklyn", "rain", "It is sunny in Brooklyn, 72F."]),
        "cost_usd": rng.choice([0.1 + 0.2, 1 / 3, 0.013, 1e-9])}} for i in range(80)]
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "evalgate.yaml").write_text(
        "version: 1\nname: costs\ndata: runs.jsonl\ntarget: {type: recorded}\nmax_errors: 80\n"
        "budget: {max_usd: 12}\ngates:\n  - type: includes\n    value: sunny\n"
        "scorers:\n  - type: similarity\n    value: It is sunny in Brooklyn, 72F.\n    threshold: 0.5\n")
    return folder / "evalgate.yaml"


def demo_spec(folder: Path) -> Path:
    shutil.copytree(DEMO, folder)
    return folder / "evalgate.yaml"


SPECS = {"demo": demo_spec, "turns": turns_spec, "costs": costs_spec}


def _no_item_reading(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the merge read every item although the columns were there")


def _watch_item_reads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """A list that gets an entry each time the merge reads a shard item by item (not from its columns)."""
    read: list[bool] = []
    real = merging._add_items

    def spy(*args: Any, **kwargs: Any) -> Any:
        read.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(merging, "_add_items", spy)
    return read


def merged(files: list[Path], out: Path, monkeypatch: pytest.MonkeyPatch, *, columns: bool) -> Any:
    with monkeypatch.context() as patch:
        if columns:
            patch.setattr(merging, "_add_items", _no_item_reading)
        else:
            patch.setattr(merging, "_columns", lambda files: None)
        return merge(files, out)


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_merging_the_columns_writes_the_bytes_reading_every_item_writes(kind: str, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    spec = SPECS[kind](tmp_path / "spec")
    files = run_sharded(spec, 4, tmp_path)
    assert all("replay" in json.loads(f.read_text())["shard"] for f in files)
    fast = merged(files, tmp_path / "fast.json", monkeypatch, columns=True)
    slow = merged(files, tmp_path / "slow.json", monkeypatch, columns=False)
    assert (tmp_path / "fast.json").read_bytes() == (tmp_path / "slow.json").read_bytes()
    assert fast.errored == slow.errored and fast.summary == slow.summary
    summary = json.loads((tmp_path / "fast.json").read_text())["summary"]
    if kind == "costs":  # spend summed in data order, and items the budget stopped shown as errored
        assert summary["cost"]["target_usd"] > 0 and summary["errored_items"] > 0 and fast.errored
    if kind == "turns":
        assert summary["not_scorable"] and summary["errored_items"]


def test_a_shard_edited_after_its_run_is_read_item_by_item(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The columns hold the run's scores; an item changed since no longer matches them: the items decide."""
    files = run_sharded(turns_spec(tmp_path / "spec"), 3, tmp_path)
    text = files[1].read_text()
    edited = text.replace('"excludes:rain":1.0', '"excludes:rain":0.0', 1)
    assert edited != text
    files[1].write_text(edited)
    read = _watch_item_reads(monkeypatch)
    result = merge(files, tmp_path / "m.json")
    assert read, "an edited shard was merged from its columns"
    reference = merged(files, tmp_path / "ref.json", monkeypatch, columns=False)
    assert result.gate_results == reference.gate_results


def test_shards_too_big_to_hold_are_read_item_by_item(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = run_sharded(turns_spec(tmp_path / "spec"), 2, tmp_path)
    merged(files, tmp_path / "fast.json", monkeypatch, columns=True)
    monkeypatch.setattr(merging, "COLUMNS_MAX_BYTES", 1000)
    monkeypatch.setattr(merging, "_columns", lambda files, real=merging._columns: real(files))
    assert merging._columns([merging.read_shard(f) for f in files]) is None
    merge(files, tmp_path / "big.json")
    assert (tmp_path / "fast.json").read_bytes() == (tmp_path / "big.json").read_bytes()


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 0, 1]])
def test_the_items_digest_is_of_the_items_as_the_file_holds_them(order: list[int], tmp_path: Path) -> None:
    """Written over its placeholder once the items are copied, in data order, whatever order they finished in."""
    writer = ResultsWriter(tmp_path / "out.json")
    for index in order:
        writer.append({"index": index, "id": f"i{index}", "output": {"text": "é" * index}})
    writer.finish({"name": "x", "shard": {"replay": {"items_sha256": ITEMS_SHA256_PENDING}}}, items_digest=True)
    writer.close()
    data = (tmp_path / "out.json").read_bytes()
    rest = data.partition(b', "items": [')[2]
    assert json.loads(data)["shard"]["replay"]["items_sha256"] == hashlib.sha256(rest[:-3]).hexdigest()
    assert [i["index"] for i in json.loads(data)["items"]] == [0, 1, 2]
    plain = ResultsWriter(tmp_path / "plain.json")
    plain.append({"index": 0, "id": "a"})
    plain.finish({"name": ITEMS_SHA256_PENDING})  # a run that is no shard writes no digest, whatever its data says
    plain.close()
    assert json.loads((tmp_path / "plain.json").read_text())["name"] == ITEMS_SHA256_PENDING


def test_a_repeats_shard_records_no_columns(tmp_path: Path) -> None:
    spec = costs_spec(tmp_path / "spec")
    spec.write_text(spec.read_text() + "repeats: 2\n")
    files = run_sharded(spec, 2, tmp_path)
    assert not any("replay" in json.loads(f.read_text())["shard"] for f in files)


# ---- the columns themselves ----


def _positions(*values: int) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}q", *values)).decode()


def _bits(values: Any) -> list[bytes]:
    return [struct.pack("<d", v) for v in values]


def test_columns_round_trip_every_float_to_the_bit() -> None:
    gate, scorer = Entry("g", "gate"), Entry("s", "scorer")
    recorder = Recorder()
    floats = [*AWKWARD, math.inf, -math.inf, math.nan]
    for position, value in enumerate(floats):
        scorer_score = None if position % 4 == 1 else value
        contributions = [(gate, value)] if position % 3 else [(gate, value), (scorer, scorer_score)]
        recorder.add(100 + position, f"i{position}", contributions, read_whole=position == 2)
    raw = json.loads(json.dumps({**recorder.record([gate.key, scorer.key]), "items_sha256": "x"}))
    replay = decode(raw, 2)
    assert replay is not None
    assert list(replay.index) == [100 + p for p in range(len(floats))] and replay.records == [2]
    gates, scorers = replay.columns
    assert gates.at is None and _bits(gates.scores) == _bits(floats)
    expected = [p for p in range(len(floats)) if p % 3 == 0 and p % 4 != 1]
    assert list(scorers.at or []) == expected
    assert _bits(scorers.scores) == _bits(floats[p] for p in expected)
    assert scorers.not_scorable == sum(1 for p in range(len(floats)) if p % 3 == 0 and p % 4 == 1)


@pytest.mark.parametrize("damage", ["version", "index", "ids", "at", "order", "records", "records-twice", "length",
                                    "digest", "base64", "feeds", "edited"])
def test_malformed_columns_are_not_used(damage: str) -> None:
    entry = Entry("g", "gate")
    recorder = Recorder()
    for position in range(5):
        recorder.add(position, f"i{position}", [(entry, 0.5)] if position != 2 else [], read_whole=False)
    raw = {**recorder.record([entry.key]), "items_sha256": "x"}
    assert decode(raw, 1) is not None
    feed = raw["feeds"][0]
    changes: dict[str, Any] = {
        "version": {"version": 2},
        "index": {"index": raw["feeds"][0]["scores"]},  # four floats' bytes for five items
        "ids": {"ids": [*raw["ids"][:4], 5]},
        "at": {"feeds": [{**feed, "at": _positions(0, 1, 3, 10)}]},  # item 10 of five
        "order": {"feeds": [{**feed, "at": _positions(1, 0, 3, 4)}]},
        "records": {"records": [7]},
        "records-twice": {"records": [1, 1]},
        "length": {"feeds": [{**feed, "scores": feed["scores"][:-12] + "="}]},
        "digest": {"items_sha256": None},
        "base64": {"index": "not base64!"},
        "feeds": {"feeds": []},
        "edited": {"feeds": [{**feed, "not_scorable": 1}]},  # well formed, but not what the run wrote
    }
    damaged = {**raw, **changes[damage]}
    if damage != "edited":  # refused for its shape, not for its digest
        damaged["columns_sha256"] = columns_sha256(damaged)
    assert decode(damaged, 1) is None


def test_columns_edited_after_the_run_are_not_added(tmp_path: Path) -> None:
    """The items' digest does not cover the columns: a score changed in them (one base64 character) was
    added as it stood, the verdict silently another than the items' (and the unsharded run's)."""
    spec = demo_spec(tmp_path / "spec")
    run_spec(spec, output=tmp_path / "full.json")
    files = run_sharded(spec, 2, tmp_path)
    head, mark, items = files[0].read_bytes().partition(b', "items": [')
    header = json.loads(head + b"}")
    feed = header["shard"]["replay"]["feeds"][0]  # a gate every item of the demo passes
    scores = list(struct.unpack(f"<{len(base64.b64decode(feed['scores'])) // 8}d", base64.b64decode(feed["scores"])))
    assert scores and all(score == 1.0 for score in scores)
    feed["scores"] = base64.b64encode(struct.pack(f"<{len(scores)}d", 0.0, *scores[1:])).decode()
    files[0].write_bytes(json.dumps(header, ensure_ascii=False)[:-1].encode() + mark + items)
    merge(files, tmp_path / "merged.json")
    full = json.loads((tmp_path / "full.json").read_text())
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert merged["verdict"] == full["verdict"] == "passed"
    assert_same_run(full, merged)


def test_an_item_listed_twice_among_the_records_is_counted_once(tmp_path: Path) -> None:
    """The records are the items the merge reads for their cost: one listed twice was counted twice,
    the merged cost silently off. Columns that list an item twice are not used: the items decide."""
    files = run_sharded(costs_spec(tmp_path / "spec"), 2, tmp_path)
    merge(files, tmp_path / "untouched.json")
    head, mark, items = files[0].read_bytes().partition(b', "items": [')
    header = json.loads(head + b"}")
    records = header["shard"]["replay"]["records"]
    assert records
    header["shard"]["replay"]["records"] = [records[0], *records]
    header["shard"]["replay"]["columns_sha256"] = columns_sha256(header["shard"]["replay"])  # only its shape is wrong
    files[0].write_bytes(json.dumps(header, ensure_ascii=False)[:-1].encode() + mark + items)
    merge(files, tmp_path / "merged.json")
    untouched = json.loads((tmp_path / "untouched.json").read_text())
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert merged["summary"]["cost"] == untouched["summary"]["cost"]
    assert untimed(merged) == untimed(untouched)


def test_an_item_the_merge_reads_that_is_not_json_is_refused_by_name(tmp_path: Path) -> None:
    """The items the columns send the merge to read (their cost, their error) are parsed: one that is not
    JSON, in a file whose digests still match, ended the merge in an internal error (exit 3)."""
    files = run_sharded(costs_spec(tmp_path / "spec"), 2, tmp_path)
    head, mark, items = files[0].read_bytes().partition(b', "items": [')
    header = json.loads(head + b"}")
    lines = items[:-len(b"]}\n")].split(b",\n")
    position = header["shard"]["replay"]["records"][-1]
    assert position > 0  # not on the header's line
    lines[position] = lines[position].partition(b',"input"')[0] + b', oops}'
    body = b",\n".join(lines)
    header["shard"]["replay"]["items_sha256"] = hashlib.sha256(body).hexdigest()
    files[0].write_bytes(json.dumps(header, ensure_ascii=False)[:-1].encode() + mark + body + b"]}\n")
    done = run_cli("merge", *files, "-o", "merged.json", cwd=tmp_path)
    assert done.code == 2 and "Traceback" not in done.output, done.output
    assert f"{files[0].name}: an item is not JSON" in done.stderr and not (tmp_path / "merged.json").exists()


@pytest.mark.parametrize("damage", ["a comma dropped", "a blank line", "a line break inside an item"])
def test_item_lines_not_as_evalgate_writes_them_are_read_one_by_one(damage: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The columns' item lines are the file's lines, each ending in a comma: a line that does not (its
    digests forged to match) must not be copied into the merged items as it stands, which would not
    be JSON; the items are read one by one instead."""
    files = run_sharded(turns_spec(tmp_path / "spec"), 2, tmp_path)
    merge(files, tmp_path / "untouched.json")
    head, mark, items = files[0].read_bytes().partition(b', "items": [')
    header = json.loads(head + b"}")
    lines = items[:-len(b"]}\n")].split(b",\n")
    assert len(lines) > 3
    if damage == "a comma dropped":
        body = b",\n".join(lines[:2]) + b"\n" + b",\n".join(lines[2:])
    elif damage == "a blank line":
        body = b",\n".join(lines[:2]) + b",\n\n" + b",\n".join(lines[2:])
    else:
        lines[1] = lines[1].replace(b',"', b',\n"', 1)
        body = b",\n".join(lines)
    header["shard"]["replay"]["items_sha256"] = hashlib.sha256(body).hexdigest()
    files[0].write_bytes(json.dumps(header, ensure_ascii=False)[:-1].encode() + mark + body + b"]}\n")
    read = _watch_item_reads(monkeypatch)
    try:
        merge(files, tmp_path / "merged.json")
    except merging.MergeError as exc:  # read one by one, a line that is no item is refused by name
        assert damage != "a comma dropped" and files[0].name in str(exc), exc
        return
    assert read, "lines that are not evalgate's were merged from the columns"
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert untimed(merged) == untimed(json.loads((tmp_path / "untouched.json").read_text()))


def test_a_summary_that_counts_other_items_is_refused_with_columns_too(tmp_path: Path) -> None:
    """Read item by item, a shard whose summary counts other items than it holds is refused; its columns
    (which count the items themselves) merged it, so whether it was refused hung on the files' size."""
    files = run_sharded(turns_spec(tmp_path / "spec"), 3, tmp_path)
    text = files[1].read_text()
    total = json.loads(text)["summary"]["total_items"]
    files[1].write_text(text.replace(f'"total_items": {total},', f'"total_items": {total + 1},', 1))
    assert files[1].read_text() != text
    with pytest.raises(merging.MergeError, match=rf"shard-2.json: holds {total} items where its summary counts"):
        merge(files)


def test_a_column_adds_the_floats_adding_each_score_gives() -> None:
    rng = random.Random(3)
    entries = [Entry("g", "gate"), Entry("s", "scorer", 0.5)]
    one, column = Aggregator(entries), Aggregator(entries)
    by_entry: dict[str, list[float]] = {"g": [], "s": []}
    skipped = {"g": 0, "s": 0}
    for _ in range(9000):  # past a fold of 4,096
        for entry in entries:
            score = None if rng.random() < 0.05 else rng.choice([*AWKWARD, rng.random()])
            one.add(entry, score)
            if score is None:
                skipped[entry.id] += 1
            else:
                by_entry[entry.id].append(score)
        one.add_item(False)
    for entry in entries:
        column.add_column(entry, by_entry[entry.id], skipped[entry.id])
    column.add_items(9000, 0)
    a, b = one.outcome(), column.outcome()
    assert [g.to_dict() for g in a.gate_results] == [g.to_dict() for g in b.gate_results]
    assert [t.to_dict() for t in a.threshold_results] == [t.to_dict() for t in b.threshold_results]
    assert _bits([a.gate_results[0].score, a.threshold_results[0].average_score]) == \
        _bits([b.gate_results[0].score, b.threshold_results[0].average_score])
    assert (a.not_scorable, a.total_items) == (b.not_scorable, b.total_items)
    with pytest.raises(ValueError, match="repeats"):
        Aggregator(entries, clustered=True).add_column(entries[0], [1.0])


def test_a_resumed_shard_merges_from_its_columns_as_from_its_items(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Resumed items reach the columns too, and the digest is of the items as resumed (here out of order)."""
    spec = turns_spec(tmp_path / "spec")
    run_spec(spec, output=tmp_path / "full.json")
    files = run_sharded(spec, 2, tmp_path)
    items = json.loads(files[0].read_text())["items"]
    journal = files[0].with_name(files[0].name + ".items.jsonl")
    kept = [json.dumps(item, ensure_ascii=False) + "\n" for n, item in enumerate(items) if n % 3 != 1]
    journal.write_text("".join(reversed(kept)))  # finished out of data order before the "crash"
    files[0].unlink()
    resumed = run_spec(spec, output=files[0], shard="1/2", resume=True)
    assert resumed.summary["resumed_items"] == len(kept)
    assert "replay" in json.loads(files[0].read_text())["shard"]
    merged(files, tmp_path / "fast.json", monkeypatch, columns=True)
    merged(files, tmp_path / "slow.json", monkeypatch, columns=False)
    assert (tmp_path / "fast.json").read_bytes() == (tmp_path / "slow.json").read_bytes()
    merged_run = json.loads((tmp_path / "fast.json").read_text())
    assert merged_run["summary"].pop("resumed_items") == len(kept)  # the one thing a resume adds
    assert_same_run(json.loads((tmp_path / "full.json").read_text()), merged_run)
