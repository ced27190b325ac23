"""Results files are read as a stream: every layout reads as `json.loads` reads it, a broken one is
refused by name, and a big one is read in memory that does not grow with its items."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CLI_TIMEOUT_S, run_cli

from evalgate.results import stream as results_stream
from evalgate.results.stream import StreamedResults

ITEMS = [{"index": i, "id": f"q{i}", "text": 'brackets ]}[{ and "quotes" \\ in a string', "scores": {"s": i / 3},
          "turns": [{"index": 0, "gates": {"g": 1.0}, "nested": [[{}], {"a": [1, {"b": []}]}]}]} for i in range(6)]
HEAD = {"schema_version": 1, "name": "n", "verdict": None, "scores": {}, "gate_results": [], "threshold_results": [],
        "summary": {"total_items": 6, "errored_items": 0}}


def evalgate_layout(items: list[dict[str, object]]) -> str:
    """As a run writes it: the header on the first line, then an item a line, then `]}`."""
    return json.dumps(HEAD)[:-1] + ', "items": [' + ",\n".join(json.dumps(i) for i in items) + "]}\n"


LAYOUTS = {
    "a run's": evalgate_layout(ITEMS),
    "no items": evalgate_layout([]),
    "indented": json.dumps({**HEAD, "items": ITEMS}, indent=2),
    "one line, a key after the items": json.dumps({**HEAD, "items": ITEMS, "comparison": {"k": [1, {"x": "]"}]}}),
    "a blank line between items": evalgate_layout(ITEMS).replace("},\n{", "},\n\n{", 1),
    "the end on a line of its own": evalgate_layout(ITEMS)[:-3] + "\n]}\n",
    "a key named items inside": json.dumps({"x": {"items": [1]}, **HEAD, "items": ITEMS}),
    "a lone surrogate escaped": json.dumps({**HEAD, "items": [{"id": "\ud800", "index": 0}]}),
}


@pytest.mark.parametrize("chunk", [7, 1 << 20], ids=["tiny chunks", "1 MiB chunks"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=list(LAYOUTS))
def test_every_layout_reads_as_json_loads_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str,
                                                    chunk: int) -> None:
    monkeypatch.setattr(results_stream, "CHUNK", chunk)  # tiny: every string and bracket cut at a chunk's end
    path = tmp_path / "r.json"
    path.write_text(LAYOUTS[layout], encoding="utf-8")
    whole = json.loads(path.read_bytes())
    streamed = StreamedResults(path)
    assert streamed.header == {k: v for k, v in whole.items() if k != "items"}
    assert list(streamed.items()) == whole["items"]
    assert list(streamed.items()) == whole["items"]  # read again: from the file again
    assert streamed.has_items == bool(whole["items"])


BROKEN = {
    "cut short": (evalgate_layout(ITEMS)[:-40], "ends early"),
    "cut short, one line": (json.dumps({**HEAD, "items": ITEMS})[:-30], "ends early"),
    "an item that is a number": (json.dumps({**HEAD, "items": [ITEMS[0], 7]}), "not a JSON object"),
    "an item that is a list": (json.dumps({**HEAD, "items": [[1]]}), "not a JSON object"),
    "items that are no list": (json.dumps({**HEAD, "items": {"a": 1}}), "not a list"),
    "a bracket that does not match": (json.dumps({**HEAD, "items": ITEMS}).replace('"b": []', '"b": [}', 1),
                                      "does not match"),
}


@pytest.mark.parametrize("case", BROKEN, ids=list(BROKEN))
def test_a_broken_file_is_refused_saying_what_is_wrong(tmp_path: Path, case: str) -> None:
    text, said = BROKEN[case]
    path = tmp_path / "r.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=said):
        list(StreamedResults(path).items())
    result = run_cli("report", path)  # and the CLI names the file, exit 2, no traceback
    assert result.code == 2 and "Traceback" not in result.output, result.output
    assert result.stderr.startswith(f"evalgate report: error: {path} is not an evalgate results file"), result.stderr


def test_an_item_broken_in_a_runs_layout_is_named_by_position(tmp_path: Path) -> None:
    bad = evalgate_layout(ITEMS).replace('"id": "q4"', '"id": 4')
    (tmp_path / "r.json").write_text(bad, encoding="utf-8")
    for args in (("report", "r.json"), ("compare", "r.json", "r.json")):
        result = run_cli(*args, cwd=tmp_path)
        assert result.code == 2 and "Traceback" not in result.output, result.output
        assert "not an evalgate results file" in result.stderr and "items.4.id" in result.stderr, result.stderr


# The measured process is started by a small launcher: a child forked from pytest (grown big by earlier tests)
# starts with pytest's resident pages counted, and Linux keeps that high-water mark across exec in ru_maxrss.
LAUNCHER = """import os, subprocess, sys, threading
proc = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = threading.Timer(float(sys.argv[1]), proc.kill)
deadline.start()
_, status, usage = os.wait4(proc.pid, 0)
deadline.cancel()
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def peak_rss_mib(argv: list[str], cwd: Path) -> tuple[int, float]:
    """(exit code, peak RSS in MiB) of a whole process, killed past the CLI's timeout."""
    launched = subprocess.run([sys.executable, "-c", LAUNCHER, str(CLI_TIMEOUT_S), *argv], cwd=cwd,
                              capture_output=True, text=True, timeout=CLI_TIMEOUT_S + 30, check=True)
    code, kib = launched.stdout.split()
    return int(code), int(kib) / 1024.0


def test_a_big_results_file_is_reported_and_compared_in_little_memory(tmp_path: Path) -> None:
    """80 MB of items: read whole (as before), they took over 1 GB; streamed, a report holds one item at a
    time and a comparison the baseline's scores. The bound leaves room for the interpreter and pydantic."""
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "input": "q", "output": {
        "text": "sunny" if i % 3 else "rain"}}) + "\n" for i in range(3)))
    (tmp_path / "evalgate.yaml").write_text("version: 1\nname: s\ndata: runs.jsonl\ntarget: {type: recorded}\n"
                                            "gates:\n  - type: includes\n    value: sunny\n")
    assert run_cli("run", "-o", "small.json", cwd=tmp_path).code == 1  # a gate fails: its items are listed
    first = (tmp_path / "small.json").read_bytes().split(b"\n", 1)[0]
    head = first[:first.index(b', "items": [')]
    pad = "x" * 4000
    with (tmp_path / "big.json").open("wb") as out:  # 20,000 items of 4 KB, as a run lays them out
        out.write(head + b', "items": [')
        for i in range(20_000):
            record = {"index": i, "id": f"q{i}", "input": pad, "output": {"text": pad}, "gates": {
                "includes:sunny": float(i % 2)}, "scores": {}}
            out.write((",\n" if i else "").encode() + json.dumps(record).encode())
        out.write(b"]}\n")
    assert (tmp_path / "big.json").stat().st_size > 80e6
    for argv in (["report", "big.json"], ["compare", "big.json", "big.json"]):
        code, peak = peak_rss_mib([sys.executable, "-m", "evalgate.cli", *argv], tmp_path)
        assert code in (0, 1) and peak < 200, (argv, code, peak)
