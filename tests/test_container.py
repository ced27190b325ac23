"""The real image, built and run the way the Actions runner runs a Docker action.

The base image comes from .ci/docker-base.sh (a local debootstrap, since Docker Hub is not
reachable here). Skipped only when EVALGATE_SKIP_DOCKER=1.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import action_scenarios as scenarios
import pytest
from fake_github import FakeGitHub
from runner_sim import RunnerFiles

REPO_ROOT = Path(__file__).resolve().parent.parent
IMAGE = "evalgate-action:test"
BUILD_TIMEOUT_S = 900
RUN_TIMEOUT_S = 180

pytestmark = pytest.mark.skipif(os.environ.get("EVALGATE_SKIP_DOCKER") == "1",
                                reason="EVALGATE_SKIP_DOCKER=1: the container test is off")


@pytest.fixture(scope="module")
def image() -> str:
    name = os.environ.get("EVALGATE_BASE_IMAGE") or local_base()  # e.g. python:3.12-slim where Docker Hub is up
    build = subprocess.run(["docker", "build", "-q", "--build-arg", f"BASE_IMAGE={name}", "-t", IMAGE, str(REPO_ROOT)],
                           capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert build.returncode == 0, build.stdout + build.stderr
    return IMAGE


def local_base() -> str:
    base = subprocess.run(["bash", str(REPO_ROOT / ".ci/docker-base.sh")], capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S)
    assert base.returncode == 0, base.stderr
    return base.stdout.strip().splitlines()[-1]


def launch_container(image: str, files: RunnerFiles, env: Callable[..., dict[str, str]],
                     api_url: str) -> tuple[int, str]:
    """`docker run` as the runner does: workdir, mounts, -e NAME (values from the environment)."""
    environment = env(workspace="/github/workspace", output="/github/file_commands/set_output_1",
                      summary="/github/file_commands/step_summary_1", event_path="/github/workflow/event.json",
                      api_url=api_url)
    command = ["docker", "run", "--rm", "--workdir", "/github/workspace", "--network", "host",
               "-v", f"{files.workspace.resolve()}:/github/workspace",
               "-v", f"{files.file_commands.resolve()}:/github/file_commands",
               "-v", f"{files.workflow.resolve()}:/github/workflow"]
    for name in environment:
        command += ["-e", name]
    command.append(image)
    proc = subprocess.run(command, env={**os.environ, **environment}, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=RUN_TIMEOUT_S)
    return proc.returncode, proc.stdout


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with scenarios.new_github() as fake:
        yield fake


@pytest.fixture
def action(image: str, tmp_path: Path, github: FakeGitHub) -> scenarios.Action:
    return scenarios.Action(lambda files, env: launch_container(image, files, env, github.url), tmp_path, github)


def test_container_failed_pull_request(action: scenarios.Action) -> None:
    scenarios.failed_pull_request(action)


def test_container_fork_pull_request(action: scenarios.Action) -> None:
    scenarios.fork_pull_request(action)


def test_container_push_event(action: scenarios.Action) -> None:
    scenarios.push_event(action)


def test_container_spec_error(action: scenarios.Action) -> None:
    scenarios.spec_error(action)


def test_container_working_directory(action: scenarios.Action) -> None:
    scenarios.working_directory(action)


def test_container_exit_codes(action: scenarios.Action) -> None:
    scenarios.exit_codes(action)


def test_image_has_no_build_tools(image: str) -> None:
    """pip and setuptools are gone from the runtime venv; the entrypoint path is absolute."""
    proc = subprocess.run(["docker", "run", "--rm", "--entrypoint", "/opt/evalgate/bin/python", image, "-c",
                           "import importlib.util as u; print(u.find_spec('pip'), u.find_spec('setuptools'))"],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.stdout.strip() == "None None", proc.stdout + proc.stderr


def test_image_scores_completeness_with_compromise(image: str, tmp_path: Path) -> None:
    """The image carries the mastra-nlp extra: completeness runs compromise in V8 there, with Mastra's number."""
    data = [{"input": "It is sunny in Brooklyn", "output": "sunny Brooklyn"},  # it, be, sunny, in, brooklyn: 2 of 5
            {"input": "He was running", "output": "they run"}]  # he, run: 1 of 2
    (tmp_path / "data.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: data.json\nscorers:\n  - type: completeness\n",
                                            encoding="utf-8")
    command = ["docker", "run", "--rm", "--workdir", "/w", "-v", f"{tmp_path.resolve()}:/w",
               "--entrypoint", "/opt/evalgate/bin/evalgate", image, "run", "evalgate.yaml", "-o", "out.json"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert [i["scores"]["completeness"] for i in results["items"]] == [0.4, 0.5]
