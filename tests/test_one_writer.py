"""One writer per results file: a second run, `--resume`, merge or compare on an --output another
evalgate process is writing is refused before it does anything; a killed run leaves no lock behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli

WAIT_S = 30.0

# Item `b` waits (30 s at most) until the test creates `go`; every call is logged, one line each.
AGENT = """\
import time
from pathlib import Path
def agent(text):
    here = Path(__file__).parent
    with (here / "calls.log").open("a") as log:
        log.write(text + "\\n")
    if text == "b":
        (here / "started").touch()
        for _ in range(3000):
            if (here / "go").exists():
                break
            time.sleep(0.01)
    else:
        time.sleep(0.02)  # some work: the journal is flushed once finished items hold a few ms of it
    return "answer to " + text
"""


def write_project(folder: Path) -> None:
    (folder / "agent.py").write_text(AGENT)
    (folder / "evalgate.yaml").write_text(json.dumps({
        "version": 1, "data": [{"id": x, "input": x} for x in "abc"], "concurrency": 1,
        "target": {"type": "python", "function": "agent:agent"},
        "scorers": [{"type": "includes", "value": "answer"}]}))


def start(folder: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "evalgate.cli", "run", "-o", "out.json", *args], cwd=folder,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert path.exists(), f"{path.name} never appeared"


def calls(folder: Path) -> list[str]:
    return (folder / "calls.log").read_text().split()


@pytest.fixture
def busy(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A run writing out.json, held at item `b` until the test creates `go`."""
    write_project(tmp_path)
    first = start(tmp_path)
    try:
        wait_for(tmp_path / "started")
        yield tmp_path, first
    finally:
        (tmp_path / "go").touch()
        if first.poll() is None:
            first.communicate(timeout=WAIT_S)


def assert_refused(pid: int, code: int, stderr: str) -> None:
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    command, message = lines[0].split(": error: ", 1)  # the refusing command names itself
    assert command in {"evalgate run", "evalgate merge", "evalgate compare"}, stderr
    assert message == (f"out.json: another evalgate process (pid {pid}) is writing it; wait for it to "
                       "finish, or write the results to another file"), stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("how", [(), ("--resume",)], ids=["again", "resume"])
def test_a_second_run_on_the_same_output_is_refused_and_the_first_finishes_intact(
        busy: tuple[Path, subprocess.Popen[str]], how: tuple[str, ...]) -> None:
    folder, first = busy
    second = start(folder, *how)
    out, err = second.communicate(timeout=WAIT_S)
    assert_refused(first.pid, second.returncode, err)
    assert len(err.strip().splitlines()) == 1 and out == "", out + err
    assert calls(folder) == ["a", "b"]  # the second run called nothing
    (folder / "go").touch()
    out, err = first.communicate(timeout=WAIT_S)
    assert first.returncode == 0, out + err
    results = json.loads((folder / "out.json").read_text())
    assert [i["id"] for i in results["items"]] == ["a", "b", "c"] and results["summary"]["interrupted"] is False
    assert calls(folder) == ["a", "b", "c"]
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("out.json")) == ["out.json"]  # no lock left
    again = run_cli("run", "-o", "out.json", "--resume", cwd=folder)
    assert again.code == 0, again.output
    assert calls(folder) == ["a", "b", "c"]  # resumed from the results: nothing to run


def test_a_merge_or_a_compare_writing_a_runs_output_is_refused(
        busy: tuple[Path, subprocess.Popen[str]], tmp_path_factory: pytest.TempPathFactory) -> None:
    folder, first = busy
    shards = tmp_path_factory.mktemp("shards")
    (shards / "evalgate.yaml").write_text(json.dumps({
        "version": 1, "data": [{"id": f"q{i}", "input": "q", "output": "sunny"} for i in range(6)],
        "target": {"type": "recorded"}, "gates": [{"type": "includes", "value": "sunny"}]}))
    for index in (1, 2):
        made = run_cli("run", "--shard", f"{index}/2", "-o", f"s{index}.json", cwd=shards)
        assert made.code == 0, made.output
    merged = run_cli("merge", shards / "s1.json", shards / "s2.json", "--output", "out.json", cwd=folder)
    assert_refused(first.pid, merged.code, merged.stderr)
    assert merged.stderr.strip().splitlines()[1:] == ["evalgate merge: nothing was merged (exit 2)"]
    assert run_cli("merge", shards / "s1.json", shards / "s2.json", "-o", "whole.json", cwd=shards).code == 0
    compared = run_cli("compare", shards / "whole.json", shards / "whole.json", "--output", "out.json", cwd=folder)
    assert_refused(first.pid, compared.code, compared.stderr)
    assert compared.stdout == ""  # refused before comparing anything
    assert not (folder / "out.json").exists()  # neither wrote it: the run, still going, writes it at its end
    (folder / "go").touch()
    out, err = first.communicate(timeout=WAIT_S)
    assert first.returncode == 0, out + err
    assert [i["id"] for i in json.loads((folder / "out.json").read_text())["items"]] == ["a", "b", "c"]


def test_a_killed_run_leaves_no_lock_its_resume_would_meet(tmp_path: Path) -> None:
    """SIGKILL gives a run no chance to clean up: the kernel drops its lock, so `--resume` goes ahead."""
    write_project(tmp_path)
    first = start(tmp_path)
    wait_for(tmp_path / "started")
    journal = tmp_path / "out.json.items.jsonl"
    deadline = time.monotonic() + WAIT_S
    while '"id": "a"' not in journal.read_text() and '"id":"a"' not in journal.read_text():
        assert time.monotonic() < deadline, "item a was never journaled"
        time.sleep(0.02)
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=WAIT_S)
    assert (tmp_path / "out.json.lock").exists()  # left behind, but held by nobody
    (tmp_path / "go").touch()
    resumed = run_cli("run", "-o", "out.json", "--resume", cwd=tmp_path)
    assert resumed.code == 0, resumed.output
    results = json.loads((tmp_path / "out.json").read_text())
    assert [i["id"] for i in results["items"]] == ["a", "b", "c"] and results["summary"]["resumed_items"] == 1
    assert calls(tmp_path) == ["a", "b", "b", "c"]  # `a` from the journal; `b`, cut short, again
    assert not (tmp_path / "out.json.lock").exists()


def test_a_file_at_the_lock_path_that_is_no_lock_is_never_written_or_removed(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(json.dumps({
        "version": 1, "data": [{"id": "a", "input": "q", "output": "sunny"}], "target": {"type": "recorded"},
        "gates": [{"type": "includes", "value": "sunny"}]}))
    (tmp_path / "out.json.lock").write_text("my notes\n")
    done = run_cli("run", "-o", "out.json", cwd=tmp_path)
    assert done.code == 2 and "Traceback" not in done.output, done.output
    assert "out.json.lock" in done.stderr and "is in the way" in done.stderr
    assert (tmp_path / "out.json.lock").read_text() == "my notes\n" and not (tmp_path / "out.json").exists()
