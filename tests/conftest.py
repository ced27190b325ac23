"""Shared helpers: write specs into tmp_path, run the real CLI as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_agent import FakeServer
from hypothesis import settings
from tls_ca import TestCA

# A loaded CI machine must not turn a slow example into a failure: no per-example deadline.
settings.register_profile("evalgate", deadline=None)
settings.load_profile("evalgate")

REPO = Path(__file__).resolve().parent.parent
CLI_TIMEOUT_S = 60

# Subprocesses (the CLI, the entrypoint) import this checkout's evalgate, whichever checkout an
# editable install last pointed at.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)

# Every test server is on 127.0.0.1, and evalgate honours the machine's proxy variables as curl does:
# a CI machine behind a proxy must not send the tests' loopback traffic there. The proxy tests set
# their own (test_net_transport.py).
for _name in [n for n in os.environ if n.lower().endswith("_proxy")]:
    del os.environ[_name]


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_cli(*args: str | Path, cwd: Path | None = None, timeout: float = CLI_TIMEOUT_S) -> CliResult:
    """`evalgate ARGS` in a fresh interpreter, as a user (or CI) runs it."""
    proc = subprocess.run(
        [sys.executable, "-m", "evalgate.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def merged_from_two_shards(spec: Path, cwd: Path, stem: str) -> tuple[Path, CliResult]:
    """`evalgate run --shard 1/2` and `2/2` of `spec`, then `evalgate merge` of the two: (the merged file, the
    merge's result). Each shard's exit is 0 or 1 (a verdict), else the test fails with its stderr."""
    shards = []
    for index in (1, 2):
        shard = cwd / f"{stem}-{index}.json"
        ran = run_cli("run", spec, "--shard", f"{index}/2", "--output", shard, cwd=cwd)
        assert ran.code in (0, 1), ran.stderr
        shards.append(shard)
    merged = cwd / f"{stem}-merged.json"
    return merged, run_cli("merge", *shards, "--output", merged, cwd=cwd)


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    """The fake agent (tests/fake_agent.py) on loopback, for this test alone."""
    with FakeServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    """A test certificate authority and a server certificate for 127.0.0.1 and localhost (tests/tls_ca.py)."""
    return TestCA(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """write(name, text): a dedented file in tmp_path; returns its path."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text), encoding="utf-8")
        return path

    return _write


# The error bar every gate, threshold and tracked result carries beside Mastra's fields
# (evalgate.decide.verdict.ErrorBar).
ERROR_BAR_KEYS = frozenset({"n", "items", "stderr", "ci95", "pass_at_k", "pass_all_k", "pass_k_curve", "flaky",
                            "flaky_items", "params_hash", "judged", "score_stats"})


def mastra_fields(value: Any) -> Any:
    """A results fragment with the error bars left out: what Mastra's runEvals has, compared exactly."""
    if isinstance(value, dict):
        return {k: mastra_fields(v) for k, v in value.items() if k not in ERROR_BAR_KEYS}
    if isinstance(value, list):
        return [mastra_fields(v) for v in value]
    return value
