"""completeness's compromise, run as its own build in V8: the version, the bounds, the optional extra.

The scores themselves are held to Mastra's by the differential test (tests/test_mastra_scorers.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalgate.scorers import compromise

REPO = Path(__file__).resolve().parent.parent
HARNESSES = [REPO / "tests" / "mastra", REPO / "tests" / "mastra_server"]

needs_v8 = pytest.mark.skipif(not compromise.available(), reason="needs mini-racer (evalgate-gates[mastra-nlp])")


def locked_compromise(harness: Path) -> str:
    lock = json.loads((harness / "package-lock.json").read_text(encoding="utf-8"))
    return str(lock["packages"]["node_modules/compromise"]["version"])


@pytest.mark.parametrize("harness", HARNESSES, ids=lambda p: p.name)
def test_the_mastra_harnesses_run_the_compromise_evalgate_ships(harness: Path) -> None:
    """The differential tests compare with the compromise a fresh install of @mastra/evals resolves;
    moving on is the build, COMPROMISE_VERSION and these locks (`npm update compromise`)."""
    assert locked_compromise(harness) == compromise.COMPROMISE_VERSION
    installed = harness / "node_modules" / "compromise" / "package.json"
    if installed.is_file():
        assert json.loads(installed.read_text(encoding="utf-8"))["version"] == compromise.COMPROMISE_VERSION


@needs_v8
def test_the_vendored_build_is_the_version_named() -> None:
    assert compromise.elements("It is sunny in Brooklyn") == ["it", "brooklyn", "be", "sunny", "in"]
    racer = compromise._racer
    assert racer is not None and racer.eval("nlp.version") == compromise.COMPROMISE_VERSION
    license_text = (REPO / "evalgate" / "scorers" / "data" / "compromise-LICENSE.txt").read_text(encoding="utf-8")
    assert "MIT" in license_text and "Spencer Kelly" in license_text


@needs_v8
def test_text_reaches_javascript_as_its_utf16_units() -> None:
    # a lone surrogate (from JSON's "\ud83d") and text after a NUL reach compromise as JavaScript holds them
    assert compromise.elements("caf\u00e9 \ud83d ok\x00 done") == ["cafe", "ok", "done"]


@needs_v8
def test_a_text_over_the_cap_errors_at_once() -> None:
    started = time.perf_counter()
    with pytest.raises(ValueError, match="more than the 100,000 completeness reads"):
        compromise.elements("word " * 20_001)
    assert time.perf_counter() - started < 1


@needs_v8
def test_a_text_that_takes_too_long_errors_and_the_next_one_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    compromise.elements("warm up")  # loaded with the real bound
    monkeypatch.setattr(compromise, "TIMEOUT_S", 0.001)
    started = time.perf_counter()
    with pytest.raises(ValueError, match="did not finish a 60,000-character text"):
        compromise.elements("The weather isn't running. " * 2_000 + "x" * 6_000)
    assert time.perf_counter() - started < 5
    monkeypatch.setattr(compromise, "TIMEOUT_S", 30.0)
    assert compromise.elements("He was running") == ["he", "run"]


def cli_in_subprocess(tmp_path: Path, scorer: str, prelude: str = "") -> tuple[subprocess.CompletedProcess[str], bool]:
    """`evalgate run` on a one-item spec scored by `scorer`, in a fresh interpreter; (the process, whether
    V8's package was imported by the end)."""
    (tmp_path / "data.json").write_text(json.dumps([{"input": "It is sunny", "output": "sunny"}]), encoding="utf-8")
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(f"version: 1\ndata: data.json\nscorers:\n  - type: content_similarity\n  - type: {scorer}\n",
                    encoding="utf-8")
    code = (f"import sys\n{prelude}\nfrom evalgate import cli\n"
            "try:\n    cli.entry(['run', sys.argv[1], '--output', sys.argv[2]])\n"
            "finally:\n    print('V8 imported:', sys.modules.get('py_mini_racer') is not None)")
    proc = subprocess.run([sys.executable, "-c", code, str(spec), str(tmp_path / "results.json")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    return proc, "V8 imported: True" in proc.stdout


BLOCK_V8 = "sys.modules['py_mini_racer'] = None  # as if the extra were not installed"


def test_without_the_extra_completeness_is_a_spec_error_naming_it(tmp_path: Path) -> None:
    proc, _ = cli_in_subprocess(tmp_path, "completeness", BLOCK_V8)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "evalgate.yaml:5" in proc.stderr and "pip install 'evalgate-gates[mastra-nlp]'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_without_the_extra_other_scorers_run(tmp_path: Path) -> None:
    proc, _ = cli_in_subprocess(tmp_path, "keyword_coverage", BLOCK_V8)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@needs_v8
@pytest.mark.parametrize(("scorer", "loads_v8"), [("keyword_coverage", False), ("completeness", True)])
def test_only_a_run_that_scores_completeness_loads_v8(tmp_path: Path, scorer: str, loads_v8: bool) -> None:
    proc, imported = cli_in_subprocess(tmp_path, scorer)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert imported is loads_v8
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert set(results["scores"]) == {"content_similarity", scorer}


@needs_v8
def test_a_run_scoring_completeness_on_worker_threads_exits_cleanly(tmp_path: Path) -> None:
    """V8 crashed the process at exit (SIGSEGV) when its context, made on a worker thread that had ended, was
    closed from the main thread: the context now lives and dies on a thread of its own."""
    code = ("import sys\nfrom concurrent.futures import ThreadPoolExecutor\nfrom evalgate.scorers import compromise\n"
            "with ThreadPoolExecutor(4) as pool:\n"
            "    print(list(pool.map(compromise.elements, ['He was running', 'It is sunny in Brooklyn'] * 4))[0])\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "['he', 'run']" in proc.stdout, (proc.returncode, proc.stdout, proc.stderr)
