"""The debug log: `-v` on every command, EVALGATE_LOG, the Action's RUNNER_DEBUG; requests, retries,
cache hits and timings shown; a secret never, whichever logger a record comes from."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import action_scenarios as scenarios
import pytest
from fake_agent import FakeServer
from fake_github import FakeGitHub
from test_action_entrypoint import launch_subprocess

from evalgate.infra import logs, redaction

SECRET = "agt-5e6f7a8b9c0d-secret"
TIMEOUT_S = 60


def evalgate(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalgate.cli", *map(str, args)], cwd=cwd,
                          env={**os.environ, "AGENT_KEY": SECRET, **(env or {})}, capture_output=True, text=True,
                          timeout=TIMEOUT_S)


def write_spec(folder: Path, url: str, cache: bool = False) -> Path:
    spec = {
        "version": 1,
        "data": [{"input": "weather in Boston?"}, {"input": "hello"}],
        "target": {"type": "http", "url": f"{url}/agent", "response": {"text": "output.text"},
                   "headers": {"Authorization": "Bearer ${AGENT_KEY}", "X-Api-Key": "${AGENT_KEY}"},
                   "retries": {"attempts": 3, "backoff_s": 0.01, "max_backoff_s": 0.05},
                   **({"cache": {"dir": "cache"}} if cache else {})},  # inside the spec's folder
        "scorers": [{"type": "includes", "value": "72F"}],
    }
    path = folder / "spec.yaml"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def debug_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if " evalgate DEBUG " in line]


def test_verbose_shows_each_request_its_retries_and_timing_but_never_the_header_secret(
        tmp_path: Path, server: FakeServer) -> None:
    server.faults["weather in Boston?"] = ["500", "ok"]
    spec = write_spec(tmp_path, server.url)
    done = evalgate("run", "-v", spec, "-o", tmp_path / "r.json", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    lines = debug_lines(done.stderr)
    requests = [line for line in lines if "evalgate.targets.http: POST " in line]
    assert len(requests) == 2, done.stderr
    assert any("(2 attempts; headers: Authorization, X-Api-Key)" in line for line in requests), done.stderr
    assert all(" ms " in line for line in requests)
    # the transport's line per attempt (the 500 and the retry) comes through the same handler
    assert sum('"POST /agent HTTP/1.1" 500' in line for line in lines) == 1, done.stderr
    assert any("run finished" in line for line in lines), done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert any(SECRET in str(value) for value in server.requests[-1]["headers"].values())  # it was really sent


def test_a_second_run_shows_its_cache_hits(tmp_path: Path, server: FakeServer) -> None:
    spec = write_spec(tmp_path, server.url, cache=True)
    evalgate("run", spec, "-o", tmp_path / "r.json", cwd=tmp_path)
    done = evalgate("-v", "run", spec, "-o", tmp_path / "r.json", cwd=tmp_path)  # -v before the command too
    hits = [line for line in debug_lines(done.stderr) if "(from the cache;" in line]
    assert len(hits) == 2, done.stderr
    assert SECRET not in done.stderr


def test_evalgate_log_turns_debug_on_and_no_flag_keeps_the_log_quiet(tmp_path: Path, server: FakeServer) -> None:
    spec = write_spec(tmp_path, server.url)
    quiet = evalgate("run", spec, "-o", tmp_path / "r.json", cwd=tmp_path)
    assert not debug_lines(quiet.stderr)
    loud = evalgate("run", spec, "-o", tmp_path / "r.json", cwd=tmp_path, env={"EVALGATE_LOG": "debug"})
    assert debug_lines(loud.stderr)


@pytest.mark.parametrize("args", [["-v", "validate", "SPEC"], ["validate", "-v", "SPEC"], ["schema", "--verbose"],
                                  ["estimate", "-v", "SPEC"], ["report", "-v", "--help"], ["merge", "-v", "--help"],
                                  ["compare", "-v", "--help"], ["comment", "-v", "--help"]])
def test_every_command_takes_verbose(tmp_path: Path, server: FakeServer, args: list[str]) -> None:
    spec = write_spec(tmp_path, server.url)
    done = evalgate(*[spec if arg == "SPEC" else arg for arg in args], cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_record_holding_a_secret_is_masked_whichever_logger_and_argument_holds_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    redaction.register([SECRET])
    try:
        logs.configure(verbose=True, reset=True)
        logging.getLogger("evalgate.probe").debug("headers %s", {"Authorization": f"Bearer {SECRET}"})
        logging.getLogger("urllib3.connectionpool").debug('"GET /x?key=%s HTTP/1.1" 200', SECRET)
        try:
            raise ValueError(f"bad key {SECRET}")
        except ValueError:
            logging.getLogger("evalgate.probe").exception("failed")
        logging.getLogger("evalgate.probe").debug("::error::pwned")
    finally:
        logs.configure(reset=True, environ={})
        redaction.forget_all()
    err = capsys.readouterr().err
    assert SECRET not in err
    assert err.count("***") >= 3, err
    assert "ValueError: bad key ***" in err
    assert "::error::" not in err  # no workflow command reaches the Action's log through a debug line


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with scenarios.new_github(prefix="/api/v3") as fake:
        yield fake


def test_runner_debug_turns_on_the_actions_debug_log_without_its_token(tmp_path: Path, github: FakeGitHub) -> None:
    def launch(files: object, env: object) -> tuple[int, str]:
        def debug_env(**kwargs: str) -> dict[str, str]:
            return {**env(**kwargs), "RUNNER_DEBUG": "1"}  # type: ignore[operator]

        return launch_subprocess(files, debug_env, github.url)  # type: ignore[arg-type]

    action = scenarios.Action(launch, tmp_path, github)
    scenarios.write_project(action.root / "ws", "failed")
    run = action.run()
    assert run.code == 1, run.log
    api = [line for line in debug_lines(run.log) if "evalgate.github.comments: " in line]
    assert any("/issues/7/comments" in line or "/comments -> 201" in line for line in api), run.log
    assert all("headers: " in line and "Authorization" in line for line in api)
    assert scenarios.TOKEN not in run.log
