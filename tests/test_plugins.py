"""Third-party target and scorer types: the example package in tests/plugin_example, built into a wheel,
pip-installed into a folder, found through its `evalgate.targets` / `evalgate.scorers` entry points by
a real `evalgate run` in a fresh interpreter."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "tests" / "plugin_example"
TIMEOUT_S = 120


def build_wheel(out: Path) -> Path:
    """The example package as a wheel (pure Python: the files, METADATA, WHEEL, entry_points.txt, RECORD),
    made here so the test needs no build backend from the network."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    name, version = project["name"].replace("-", "_"), project["version"]
    info = f"{name}-{version}.dist-info"
    files: dict[str, bytes] = {
        str(p.relative_to(EXAMPLE)): p.read_bytes()
        for p in sorted((EXAMPLE / "evalgate_example_plugin").glob("*.py"))
    }
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {version}\n".encode()
    files[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: evalgate-tests\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n")
    groups = project["entry-points"]
    files[f"{info}/entry_points.txt"] = "".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()) + "\n" for group, points in groups.items()
    ).encode()

    def digest(data: bytes) -> str:
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = "".join(f"{path},{digest(data)},{len(data)}\n" for path, data in files.items()) + f"{info}/RECORD,,\n"
    files[f"{info}/RECORD"] = record.encode()
    wheel = out / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder the example plug-in is pip-installed into (its dist-info holds the entry points)."""
    root = tmp_path_factory.mktemp("plugin")
    wheel = build_wheel(root)
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                    "--no-index", "--target", str(target), str(wheel)], check=True, timeout=TIMEOUT_S)
    assert (target / "evalgate_example_plugin" / "targets.py").is_file()
    return target


def evalgate(site: Path | None, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    paths = [str(REPO), *([str(site)] if site is not None else [])]
    return subprocess.run([sys.executable, "-m", "evalgate.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=TIMEOUT_S, env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})


def write_spec(folder: Path, target: dict[str, object]) -> Path:
    spec = {
        "version": 1,
        "data": [{"input": "hello"}, {"input": "what's up"}],
        "target": target,
        "gates": [{"type": "includes", "value": "ECHO: "}],
        "scorers": [{"type": "shouts", "threshold": 1.0}, {"type": "shouts", "id": "long", "min_letters": 10}],
    }
    path = folder / "spec.yaml"
    path.write_text(json.dumps(spec, indent=1), encoding="utf-8")
    return path


def test_a_plugin_target_and_scorer_run_in_a_real_evalgate_run(site: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, {"type": "echo", "prefix": "echo: ", "upper": True})
    done = evalgate(site, "run", spec, "-o", tmp_path / "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert results["verdict"] == "passed"
    items = results["items"]
    assert [i["output"]["text"] for i in items] == ["ECHO: HELLO", "ECHO: WHAT'S UP"]
    assert results["scores"]["shouts"] == 1.0
    # the plug-in's own parameter is read: "ECHOHELLO" has 9 letters, "ECHOWHATSUP" 11
    assert [i["scores"]["long"] for i in items] == [0.0, 1.0]


def test_a_plugin_scorer_scores_and_fails_as_a_builtin_would(site: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, {"type": "echo", "prefix": "echo: "})  # not upper-cased: nothing shouts
    done = evalgate(site, "run", spec, "-o", tmp_path / "r.json", "--fail-on", "scored", cwd=tmp_path)
    results = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert done.returncode == 1, done.stderr
    assert results["scores"]["shouts"] == 0.0
    assert results["verdict"] == "scored"  # its threshold missed, as a built-in's would


def test_a_plugin_targets_settings_are_checked_at_their_line(site: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, {"type": "echo", "upper": "loudly", "colour": "red"})
    done = evalgate(site, "validate", spec, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "spec.yaml:" in done.stderr and "target" in done.stderr
    assert "upper" in done.stderr
    assert "Traceback" not in done.stderr


def test_without_the_plugin_its_types_are_unknown_and_said_so(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, {"type": "echo"})
    done = evalgate(None, "validate", spec, cwd=tmp_path)
    assert done.returncode == 2
    assert "unknown type `echo`" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
