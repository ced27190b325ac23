"""The release step that pins action.yml to the pushed image, and the action.yml it produces."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / ".github" / "scripts" / "pin_image.py"
DIGEST = "sha256:" + "0123456789abcdef" * 4
WORKFLOW = """\
name: uses the pinned action
on: [pull_request]
permissions: {}
jobs:
  evals:
    runs-on: ubuntu-latest
    permissions:
      contents: read
    steps:
      - uses: ./
        with:
          spec: evalgate.yaml
          shard: 1/4
          fail-on: failed
"""


def pin(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "action.yml"), *args],
                          capture_output=True, text=True, timeout=30)


def test_main_builds_the_dockerfile() -> None:
    assert "\n  image: Dockerfile\n" in (REPO / "action.yml").read_text()


def test_the_pinned_action_runs_the_digest_and_changes_nothing_else(tmp_path: Path) -> None:
    original = (REPO / "action.yml").read_text()
    (tmp_path / "action.yml").write_text(original)
    done = pin(tmp_path, "ghcr.io/Evalgate/evalgate", DIGEST)
    assert done.returncode == 0, done.stderr
    pinned = (tmp_path / "action.yml").read_text()
    assert pinned == original.replace("  image: Dockerfile\n", f"  image: docker://ghcr.io/evalgate/evalgate@{DIGEST}\n")
    again = pin(tmp_path, "ghcr.io/evalgate/evalgate", DIGEST)
    assert again.returncode == 1 and "already pinned" in again.stderr


@pytest.mark.skipif(shutil.which("actionlint") is None, reason="actionlint is not installed (.ci/lint.sh installs it)")
def test_actionlint_accepts_the_pinned_action_and_its_inputs(tmp_path: Path) -> None:
    """actionlint reads a local action's metadata for `uses: ./`: a broken action.yml or an unknown input fails."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=30)  # actionlint's project root
    shutil.copy(REPO / "action.yml", tmp_path / "action.yml")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "use.yml").write_text(WORKFLOW)
    lint = subprocess.run(["actionlint", "-no-color", ".github/workflows/use.yml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    # unpinned, the action needs its Dockerfile beside it (this release tree has none)
    assert lint.returncode == 1 and 'file "Dockerfile" does not exist' in lint.stdout
    assert pin(tmp_path, "ghcr.io/evalgate/evalgate", DIGEST).returncode == 0
    lint = subprocess.run(["actionlint", "-no-color", ".github/workflows/use.yml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    # the check is real: an input the pinned action.yml does not declare is an error
    (tmp_path / ".github" / "workflows" / "use.yml").write_text(WORKFLOW.replace("shard: 1/4", "shards: 1/4"))
    lint = subprocess.run(["actionlint", "-no-color", ".github/workflows/use.yml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert lint.returncode == 1 and "shards" in lint.stdout
    # and so is a runs section the rewrite broke
    broken = (tmp_path / "action.yml").read_text().replace("  using: docker\n", "  using: dockerr\n")
    (tmp_path / "action.yml").write_text(broken)
    (tmp_path / ".github" / "workflows" / "use.yml").write_text(WORKFLOW)
    lint = subprocess.run(["actionlint", "-no-color", ".github/workflows/use.yml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert lint.returncode == 1, lint.stdout


@pytest.mark.parametrize(("image", "digest", "message"), [
    ("ghcr.io/evalgate/evalgate", "sha256:abc", "not an image digest"),
    ("ghcr.io/evalgate/evalgate", "latest", "not an image digest"),
    ("ghcr.io/evalgate evalgate", DIGEST, "not an image name"),
    ("evalgate", DIGEST, "not an image name"),
])
def test_bad_references_are_refused_and_the_file_is_untouched(tmp_path: Path, image: str, digest: str,
                                                              message: str) -> None:
    shutil.copy(REPO / "action.yml", tmp_path / "action.yml")
    done = pin(tmp_path, image, digest)
    assert done.returncode == 1 and message in done.stderr
    assert (tmp_path / "action.yml").read_text() == (REPO / "action.yml").read_text()


def test_an_action_without_a_dockerfile_image_is_refused(tmp_path: Path) -> None:
    (tmp_path / "action.yml").write_text("name: x\ndescription: y\nruns:\n  using: node20\n  main: index.js\n"
                                         "image: Dockerfile\n")
    done = pin(tmp_path, "ghcr.io/evalgate/evalgate", DIGEST)
    assert done.returncode == 1 and "no `image: Dockerfile` under `runs:`" in done.stderr
