"""As root (the Action's container), command agents run as the checkout's owner: they cannot read the token
from evalgate's memory (`/proc/<parent>/mem`), which as root they could. Real CLI, real agent, real /proc."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

TOKEN = "ghs_RUNAS_0a9b8c7d6e5f4a3b2c1d"
OWNER = 1001  # the runner's user on GitHub's hosted runners
PYTHON = "/usr/bin/python3"  # readable by another user (this interpreter may live under /root)

# Looks for the token in its parent's memory; prints it reversed (so no redaction hides a find).
SNOOP = """\
import json, os, re, sys
sys.stdin.read()
found, why = "", ""
ppid = os.getppid()
try:
    with open(f"/proc/{ppid}/maps") as maps, open(f"/proc/{ppid}/mem", "rb", 0) as mem:
        for line in maps:
            start, end = (int(x, 16) for x in line.split()[0].split("-"))
            if "r" not in line.split()[1] or end - start > 64 * 2**20:
                continue
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue
            hit = re.search(rb"ghs_RUNAS_[0-9a-f]{20}", chunk)
            if hit:
                found = hit.group().decode()[::-1]
                break
except OSError as exc:
    why = type(exc).__name__
try:
    open("wrote.txt", "w").write("x")
except OSError:
    pass  # another user than the checkout's owner (EVALGATE_TARGET_USER) may not write here
print(json.dumps({"text": f"uid={os.getuid()} found={found} why={why}"}))
"""


@pytest.fixture
def workspace() -> Iterator[Path]:
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not Path(PYTHON).exists():
        pytest.skip("needs root and /usr/bin/python3: the container's case")
    base = Path(tempfile.mkdtemp(prefix="evalgate-runas-", dir="/tmp"))
    try:
        base.chmod(0o755)
        folder = base / "ws"
        folder.mkdir()
        (folder / "agent.py").write_text(SNOOP)
        (folder / "evalgate.yaml").write_text(
            f"version: 1\ndata:\n  - {{id: a, input: hi}}\ntarget:\n  type: command\n  run: [{PYTHON}, agent.py]\n"
            "  timeout_s: 30\nscorers:\n  - type: includes\n    value: found=\n")
        for path in (folder, folder / "agent.py"):
            os.chown(path, OWNER, OWNER)
        yield folder
    finally:
        shutil.rmtree(base, ignore_errors=True)


def evalgate_run(folder: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GITHUB_TOKEN": TOKEN, **extra}
    return subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "evalgate.yaml", "-o", str(folder / "r.json")],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def run(folder: Path, **extra: str) -> str:
    done = evalgate_run(folder, **extra)
    assert done.returncode == 0, done.stderr
    [item] = json.loads((folder / "r.json").read_text())["items"]
    assert item["error"] is None, item["error"]
    return str(item["output"]["text"])


def test_as_root_a_command_agent_runs_as_the_checkouts_owner_and_cannot_read_the_token(workspace: Path) -> None:
    text = run(workspace)
    assert text.startswith(f"uid={OWNER} found= ") and "why=PermissionError" in text, text
    assert (workspace / "wrote.txt").stat().st_uid == OWNER  # it writes in the checkout as the runner's user would


def test_the_snoop_finds_the_token_when_the_agent_keeps_root(workspace: Path) -> None:
    """What the change prevents (and proof that the snoop works): as root, the agent reads the token."""
    text = run(workspace, EVALGATE_TARGET_USER="root")
    assert text.startswith("uid=0 found=") and TOKEN[::-1] in text, text


def test_a_named_user_is_used_and_a_bad_one_is_an_item_error(workspace: Path) -> None:
    assert run(workspace, EVALGATE_TARGET_USER="1002:1002").startswith("uid=1002 found= ")
    done = evalgate_run(workspace, EVALGATE_TARGET_USER="runner")
    [item] = json.loads((workspace / "r.json").read_text())["items"]
    assert done.returncode == 4 and "EVALGATE_TARGET_USER" in item["error"], (done.stderr, item)
