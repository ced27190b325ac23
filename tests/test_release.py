"""The release as a user installs it: the sdist and wheel built, checked, and the wheel installed in a fresh
venv outside the checkout, where `evalgate init` and `evalgate run` work with the package data it ships.

Offline: the build runs without isolation (the test extra brings build, twine and setuptools), and the venv
sees the already-installed dependencies (`--system-site-packages`) so `pip install --no-index` needs nothing
from a registry; the wheel itself is installed into the venv, and the test checks it is that copy that runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml
from conftest import REPO

import evalgate

STARTERS = {"spec_head.yaml", "checks.yaml", "data.jsonl", "workflow.yml", "python/agent.py", "python/target.yaml",
            "command/agent.py", "http/agent_server.py", "openai/target.yaml", "mastra/target.yaml"}


def clean_env() -> dict[str, str]:
    """This environment without the checkout on PYTHONPATH: the venv must import what it installed."""
    return {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}


def run(args: list[str | Path], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=clean_env(), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built from a copy of the checkout's files (the checkout gets no build/)."""
    root = tmp_path_factory.mktemp("release")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True, timeout=60).stdout.decode().split("\0")
    source = root / "source"
    for name in filter(None, listed):
        if (REPO / name).is_file() and not (REPO / name).is_symlink():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            (source / name).write_bytes((REPO / name).read_bytes())
    out = root / "dist"
    built = run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, source], cwd=root, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


def only(folder: Path, pattern: str) -> Path:
    [found] = folder.glob(pattern)
    return found


def test_the_sdist_and_wheel_pass_twine_check_and_carry_the_package_data(dist: Path) -> None:
    wheel, sdist = only(dist, "evalgate_gates-*.whl"), only(dist, "evalgate_gates-*.tar.gz")
    assert wheel.name == f"evalgate_gates-{evalgate.__version__}-py3-none-any.whl"
    checked = run([sys.executable, "-m", "twine", "check", "--strict", wheel, sdist], cwd=dist)
    assert checked.returncode == 0 and checked.stdout.count("PASSED") == 2, checked.stdout + checked.stderr
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    assert {f"evalgate/starters/{name}" for name in STARTERS} <= in_wheel
    assert {"evalgate/py.typed", "evalgate/scorers/data/compromise-en.json", "evalgate/report/templates/report.md"} \
        <= in_wheel
    assert not any(name.startswith(("tests/", "examples/")) for name in in_wheel)
    with tarfile.open(sdist) as archive:  # a wheel built from the sdist (as pip does) has them too
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {f"evalgate/starters/{name}" for name in STARTERS} <= in_sdist


def test_the_wheel_installed_outside_the_checkout_inits_and_runs(dist: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    made = run([sys.executable, "-m", "venv", "--system-site-packages", venv], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    python, command = venv / "bin" / "python", venv / "bin" / "evalgate"
    wheel = only(dist, "evalgate_gates-*.whl")
    installed = run([python, "-m", "pip", "install", "--no-index", "--find-links", dist,
                     "--disable-pip-version-check", wheel], cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    where = run([python, "-c", "import evalgate; print(evalgate.__file__)"], cwd=tmp_path)
    assert where.stdout.strip().startswith(str(venv)), where.stdout + where.stderr  # the wheel's copy, not the checkout

    project = tmp_path / "project"
    project.mkdir()
    started = run([command, "init"], cwd=project)
    assert started.returncode == 0, started.stdout + started.stderr
    # a scorer that reads the package's own data (compromise's tagger model) runs too
    spec = yaml.safe_load((project / "evalgate.yaml").read_text())
    spec["scorers"].append({"type": "completeness", "reference": "ground_truth"})
    (project / "evalgate.yaml").write_text(yaml.safe_dump(spec))
    ran = run([command, "run", "--output", "results.json"], cwd=project)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "5 items, 0 errored" in ran.stdout and "completeness" in ran.stdout and "verdict: PASSED" in ran.stdout


def test_the_release_publishes_by_trusted_publishing_with_the_token_scope_on_that_job_only() -> None:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "release.yml").read_text())
    jobs = workflow["jobs"]
    assert workflow["permissions"] == {}
    with_oidc = [name for name, job in jobs.items() if "id-token" in (job.get("permissions") or {})]
    assert with_oidc == ["pypi"] and jobs["pypi"]["permissions"] == {"id-token": "write"}
    [publish] = [s for s in jobs["pypi"]["steps"] if s.get("uses", "").startswith("pypa/gh-action-pypi-publish@")]
    assert len(publish["uses"].split("@")[1]) == 40  # pinned by commit SHA, as every action here
    assert "password" not in (publish.get("with") or {})  # no stored token
    built = "\n".join(s.get("run", "") for s in jobs["dist"]["steps"])
    assert "python -m build" in built and "twine check --strict dist/*" in built
    assert set(jobs["pypi"]["needs"]) == {"dist", "publish"}
