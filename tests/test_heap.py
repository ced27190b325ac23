"""A command's process freezes what its start-up built before the first item (evalgate/infra/heap.py); a library
caller's process is left as it was. A scorer in the spec writes `gc.get_freeze_count()` as the run sees it."""

from __future__ import annotations

import gc
import json
from pathlib import Path

from conftest import run_cli

from evalgate.api import run_spec

PROBE = (
    "import gc\nfrom pathlib import Path\n"
    "def score(item, run):\n"
    "    Path(__file__).with_name('frozen.txt').write_text(str(gc.get_freeze_count()))\n"
    "    return 1.0\n"
)
SPEC = (
    "version: 1\ndata: [{id: q1, input: hi, output: hello}]\ntarget: {type: recorded}\n"
    "gates: [{type: includes, value: hello}]\nscorers: [{type: python, function: 'heap_probe:score'}]\n"
)


def project(folder: Path) -> Path:
    (folder / "heap_probe.py").write_text(PROBE)
    spec = folder / "evalgate.yaml"
    spec.write_text(SPEC)
    return spec


def frozen_during_the_run(folder: Path) -> int:
    return int((folder / "frozen.txt").read_text())


def test_the_command_runs_its_items_with_the_start_up_heap_frozen(tmp_path: Path) -> None:
    spec = project(tmp_path)
    ran = run_cli("run", spec, "--output", tmp_path / "out.json", cwd=tmp_path)
    assert ran.code == 0, ran.stderr
    # the modules, the spec's models and the target: thousands of objects, not a handful
    assert frozen_during_the_run(tmp_path) > 10_000
    item = json.loads((tmp_path / "out.json").read_text())["items"][0]
    assert item["scores"] == {"python:score": 1.0} and item["gates"] == {"includes:hello": 1.0}


def test_a_library_callers_heap_is_left_as_it_was(tmp_path: Path) -> None:
    before = gc.get_freeze_count()
    result = run_spec(project(tmp_path), output=tmp_path / "out.json")
    assert result.outcome.verdict == "passed"
    assert frozen_during_the_run(tmp_path) == before == gc.get_freeze_count()
