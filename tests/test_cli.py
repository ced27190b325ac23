"""The CLI (CONTRACT section 8): exit codes, --output, validate, schema. Real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO, mastra_fields, run_cli

from evalgate.cli import main
from evalgate.results.model import Results
from evalgate.results.writer import journal_path, read_journal

DATA = """\
data:
  - id: brooklyn
    input: Weather in Brooklyn?
    output:
      text: It is sunny in Brooklyn, 72F.
      tool_calls: [{name: get_weather, args: {city: Brooklyn}, result: {temp: 72}}]
  - id: paris
    input: Weather in Paris?
    output:
      text: It is cloudy in Paris, 64F.
      tool_calls: [{name: get_weather, args: {city: Paris}}]
"""
CHECKS = {
    "passed": "gates:\n  - type: called_tool\n    tool: get_weather\n"
    "scorers:\n  - type: includes\n    value: Brooklyn\n    threshold: 0.5\n",
    "scored": "gates:\n  - type: called_tool\n    tool: get_weather\n"
    "scorers:\n  - type: includes\n    value: Brooklyn\n    threshold: 0.51\n",
    "failed": "gates:\n  - type: includes\n    value: Brooklyn\n",
    "none": "scorers:\n  - type: includes\n    value: Brooklyn\n",
}
EXIT = {
    # verdict -> {fail-on: exit code}
    "passed": {"failed": 0, "scored": 0, "never": 0},
    "scored": {"failed": 0, "scored": 1, "never": 0},
    "failed": {"failed": 1, "scored": 1, "never": 0},
    "none": {"failed": 0, "scored": 0, "never": 0},
}


def _spec(tmp_path: Path, verdict: str) -> Path:
    path = tmp_path / f"{verdict}.yaml"
    path.write_text(f"version: 1\nname: {verdict}-demo\n{DATA}{CHECKS[verdict]}", encoding="utf-8")
    return path


@pytest.mark.parametrize("verdict", list(EXIT))
@pytest.mark.parametrize("fail_on", ["failed", "scored", "never", None])
def test_exit_codes(verdict: str, fail_on: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The whole matrix in-process (click's runner runs the real command); the subprocess test below
    # checks the same exit codes reach the shell.
    monkeypatch.chdir(tmp_path)
    spec = _spec(tmp_path, verdict)
    args = ["run", spec.name] + (["--fail-on", fail_on] if fail_on else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == EXIT[verdict][fail_on or "failed"], result.output
    shown = "none" if verdict == "none" else verdict.upper()
    assert f"verdict: {shown}" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize(("verdict", "fail_on"), [("passed", None), ("scored", "scored"), ("failed", None)])
def test_exit_codes_reach_the_shell(verdict: str, fail_on: str | None, tmp_path: Path) -> None:
    spec = _spec(tmp_path, verdict)
    args = ["run", spec.name] + (["--fail-on", fail_on] if fail_on else [])
    result = run_cli(*args, cwd=tmp_path)
    assert result.code == EXIT[verdict][fail_on or "failed"], result.output
    assert f"verdict: {verdict.upper()}" in result.stdout
    assert "Traceback" not in result.output


@pytest.mark.parametrize("fail_on", ["failed", "scored", "never"])
def test_spec_error_is_exit_2_whatever_fail_on(fail_on: str, tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: []\ngates:\n  - type: no_tool_errors\n")
    result = run_cli("run", "--fail-on", fail_on, cwd=tmp_path)
    assert result.code == 2
    assert "Traceback" not in result.output


def test_plain_table_without_a_terminal(tmp_path: Path) -> None:
    result = run_cli("run", _spec(tmp_path, "scored").name, cwd=tmp_path)
    assert "\x1b[" not in result.output  # no colour codes in CI logs
    lines = result.stdout.splitlines()
    assert any("PASS" in line and "called_tool:get_weather" in line for line in lines)
    assert any("FAIL" in line and "includes:Brooklyn" in line and "0.500" in line for line in lines)


def test_failing_gate_lists_failing_items(tmp_path: Path) -> None:
    result = run_cli("run", _spec(tmp_path, "failed").name, cwd=tmp_path)
    assert "failing: paris" in result.stdout


def test_output_writes_results_json_and_journal(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "scored")
    out = tmp_path / "out" / "results.json"
    result = run_cli("run", spec.name, "--output", "out/results.json", cwd=tmp_path)
    assert result.code == 0, result.output
    raw = json.loads(out.read_text())
    results = Results.model_validate(raw)  # CONTRACT section 7
    assert raw["schema_version"] == 1
    assert results.name == "scored-demo"
    assert results.verdict == "scored"
    assert results.scores == {"includes:Brooklyn": 0.5}
    assert [mastra_fields(g.to_dict()) for g in results.gate_results] == [
        {"id": "called_tool:get_weather", "passed": True, "score": 1.0}
    ]
    threshold = raw["threshold_results"][0]
    assert {k: threshold[k] for k in ("id", "passed", "average_score", "threshold")} == {
        "id": "includes:Brooklyn",
        "passed": False,
        "average_score": 0.5,
        "threshold": 0.51,
    }
    assert "turn_results" not in raw  # only when an item has turns
    assert raw["summary"]["total_items"] == 2
    assert raw["summary"]["errored_items"] == 0
    assert raw["summary"]["not_scorable"] == {}
    first = raw["items"][0]
    assert first["id"] == "brooklyn"
    assert first["input"] == "Weather in Brooklyn?"
    assert first["output"]["text"] == "It is sunny in Brooklyn, 72F."
    assert first["output"]["tool_calls"][0]["name"] == "get_weather"
    assert first["error"] is None
    assert first["gates"] == {"called_tool:get_weather": 1.0}
    assert first["scores"] == {"includes:Brooklyn": 1.0}
    assert first["reasons"] == {}
    assert [i["id"] for i in raw["items"]] == ["brooklyn", "paris"]
    # the journal held one line per finished item; a complete run's results replace it
    assert not journal_path(out).exists() and read_journal(journal_path(out)) == []


@pytest.mark.parametrize("option", [["--output", ""], ["--output", "", "--resume"], ["--output", "", "--shard", "1/2"],
                                    ["--junit", ""], ["--baseline", ""]])
def test_an_empty_file_option_is_a_usage_error_before_the_run(tmp_path: Path, option: list[str]) -> None:
    # `-o ''` named the current folder: the journal beside it had no name, an internal error (exit 3)
    spec = _spec(tmp_path, "passed")
    result = run_cli("run", spec.name, *option, cwd=tmp_path)
    assert result.code == 2, result.output
    assert f"Invalid value for '{option[0]}'" in result.stderr and "an empty path; give a file name" in result.stderr
    assert "verdict" not in result.stdout and "internal error" not in result.output


def test_output_for_turns_has_turn_results(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\n"
        "data:\n"
        "  - turns:\n"
        "      - input: hi\n"
        "        output: hello\n"
        "        scorers: [{type: includes, value: hello, threshold: 1}]\n"
        "      - input: weather?\n"
        "        output: {text: sunny, tool_calls: [{name: get_weather}]}\n"
        "        gates: [{type: called_tool, tool: get_weather}]\n"
    )
    result = run_cli("run", "-o", "r.json", cwd=tmp_path)
    assert result.code == 0, result.output
    raw = json.loads((tmp_path / "r.json").read_text())
    Results.model_validate(raw)
    assert raw["verdict"] == "passed"
    turns = {t["index"]: t for t in raw["turn_results"]}
    assert turns[0]["scores"] == {"includes:hello": 1.0}
    assert mastra_fields(turns[1]["gate_results"]) == [{"id": "called_tool:get_weather", "passed": True, "score": 1.0}]


def test_error_budget_is_explained(tmp_path: Path) -> None:
    (tmp_path / "agent_budget.py").write_text("def answer(q):\n    raise TimeoutError('model timed out')\n")
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata:\n  - input: a\n  - input: b\n"
        "target:\n  type: python\n  function: agent_budget:answer\n"
        "gates:\n  - type: no_tool_errors\n"
    )
    result = run_cli("run", cwd=tmp_path)
    assert result.code == 4  # an outage, not a regression: a required check can tell them apart
    assert "2 errored items > max_errors 0" in result.stdout
    assert "could not evaluate: 2 of 2 items errored: TimeoutError: model timed out" in result.stdout
    assert run_cli("run", "--fail-on", "never", cwd=tmp_path).code == 0


def test_concurrency_option(tmp_path: Path) -> None:
    result = run_cli("run", _spec(tmp_path, "passed").name, "--concurrency", "3", cwd=tmp_path)
    assert result.code == 0
    assert run_cli("run", _spec(tmp_path, "passed").name, "--concurrency", "0", cwd=tmp_path).code == 2


def test_validate_ok(tmp_path: Path) -> None:
    result = run_cli("validate", _spec(tmp_path, "passed").name, cwd=tmp_path)
    assert result.code == 0, result.output
    assert "passed.yaml: ok (2 items, 1 gates, 1 scorers)" in result.stdout


def test_validate_does_not_run_the_target(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    (tmp_path / "agent_marker.py").write_text(
        f"from pathlib import Path\ndef answer(q):\n    Path({str(marker)!r}).write_text('x')\n    return q\n"
    )
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata:\n  - input: a\ntarget:\n  type: python\n  function: agent_marker:answer\n"
        "gates:\n  - type: no_tool_errors\n"
    )
    assert run_cli("validate", cwd=tmp_path).code == 0
    assert not marker.exists()


@pytest.fixture(scope="module")
def schema() -> dict:
    result = run_cli("schema")
    assert result.code == 0
    return json.loads(result.stdout)


@pytest.mark.parametrize("spec", ["evalgate.yaml", "failing.yaml"])
def test_schema_validates_the_demo_specs(schema: dict, spec: str) -> None:
    document = yaml.safe_load((REPO / "examples" / "weather" / spec).read_text())
    jsonschema.validate(document, schema)


def test_schema_accepts_inline_data_and_thresholds(schema: dict, tmp_path: Path) -> None:
    document = yaml.safe_load(f"version: 1\n{DATA}{CHECKS['scored']}")
    document["scorers"].append({"type": "similarity", "value": "x", "threshold": {"min": 0.2, "max": 0.9}})
    jsonschema.validate(document, schema)


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda d: d["gates"][0].update(toool="x"), id="unknown key"),
        pytest.param(lambda d: d["gates"][0].update(type="caled_tool"), id="unknown type"),
        pytest.param(lambda d: d.update(version=2), id="version"),
        pytest.param(lambda d: d["scorers"][0].update(threshold=1.5), id="threshold above 1"),
        pytest.param(lambda d: d["gates"][0].update(threshold=0.5), id="gate threshold"),
    ],
)
def test_schema_rejects_what_validation_rejects(schema: dict, mutate: object) -> None:
    document = yaml.safe_load((REPO / "examples" / "weather" / "evalgate.yaml").read_text())
    mutate(document)  # type: ignore[operator]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, schema)


def test_version_option() -> None:
    from evalgate import __version__

    result = run_cli("--version")
    assert result.code == 0
    assert __version__ in result.stdout


def test_help_loads_no_spec_or_network_library() -> None:
    """`evalgate --help` stays a click program: pydantic, PyYAML and urllib3 are what a run needs, and
    importing them would take the help's start-up past the 150 ms a person waits on without noticing."""
    import subprocess
    import sys

    probe = ("import sys, contextlib, io\nfrom evalgate.cli import entry\n"
             "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
             "    entry(['--help'])\n"
             "print(sorted(m for m in ('pydantic', 'yaml', 'urllib3') if m in sys.modules))")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert shown.stdout.strip() == "[]", shown.stdout + shown.stderr


def test_the_committed_schema_is_the_one_the_models_generate() -> None:
    """evalgate.schema.json (what the examples' yaml-language-server lines point at) is generated, not edited."""
    import json as _json

    from evalgate.load.loader import json_schema

    committed = Path(__file__).resolve().parent.parent / "evalgate.schema.json"
    assert _json.loads(committed.read_text()) == json_schema(), "run: evalgate schema > evalgate.schema.json"


@pytest.mark.parametrize("data", ['"a\\0b.jsonl"', "x" * 300 + ".jsonl"])
@pytest.mark.parametrize("command", ["validate", "estimate", "run"])
def test_a_data_path_no_file_can_have_is_a_spec_error_at_its_line(tmp_path: Path, data: str, command: str) -> None:
    (tmp_path / "evalgate.yaml").write_text(f"version: 1\ndata: {data}\ntarget: {{type: recorded}}\n"
                                            "gates: [{type: includes, value: sunny}]\n")
    result = run_cli(command, "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "evalgate.yaml:2: data:" in result.output and "internal error" not in result.output


@pytest.mark.parametrize("data", ['"a\\0b"', '"a\\0b.jsonl"'])
def test_a_nul_in_the_data_path_is_a_spec_error_when_the_run_writes_results(tmp_path: Path, data: str) -> None:
    # --output is checked against the data file's path before anything runs: that check met the NUL first
    (tmp_path / "evalgate.yaml").write_text(f"version: 1\ndata: {data}\ntarget: {{type: recorded}}\n"
                                            "gates: [{type: includes, value: sunny}]\n")
    result = run_cli("run", "evalgate.yaml", "-o", "out.json", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "evalgate.yaml:2: data: the data file's path holds a NUL character" in result.output
    assert "internal error" not in result.output and not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("output", ['{"text": "b", "latency_ms": %s, "usage": {"total_tokens": %s}}',
                                    '{"messages": [{"role": "assistant", "content": "b"}], "latency_ms": %s, '
                                    '"usage": {"total_tokens": %s}}'], ids=["run", "messages"])
def test_a_recorded_number_past_the_largest_float_reads_as_infinity(tmp_path: Path, output: str) -> None:
    """`1` and 400 zeros is a JSON integer: the latency scorer, trajectory_accuracy's limits and the token
    budget overflowed on it (every item errored: exit 4). It now reads as 1e999 does."""
    huge = "1" + "0" * 400
    checks = ("scorers: [{type: latency, max_ms: 100}, {type: trajectory_accuracy, steps: [], max_total_tokens: 5}, "
              "{type: includes, value: b}]\nbudget: {max_tokens: 10}\n")
    outcomes = []
    for number in (huge, "1e999"):
        (tmp_path / "runs.jsonl").write_text('{"id": "a", "input": "q", "output": %s}\n' % (output % (number, number)))
        (tmp_path / "evalgate.yaml").write_text(f"version: 1\ndata: runs.jsonl\n{checks}")
        result = run_cli("run", "evalgate.yaml", "-o", "out.json", cwd=tmp_path)
        assert result.code == 0, result.output
        raw = json.loads((tmp_path / "out.json").read_text())
        assert raw["items"][0]["error"] is None
        outcomes.append((raw["scores"], raw["summary"]["not_scorable"], raw["summary"]["budget"]))
    assert outcomes[0] == outcomes[1]


def test_nan_and_infinity_are_refused_where_a_number_bounds_the_run(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: [{id: a, input: q, output: sunny}]\n"
                                            "target: {type: recorded}\ngates: [{type: includes, value: sunny}]\n")
    for value in ("nan", "inf"):
        result = run_cli("run", "--max-cost", value, cwd=tmp_path)
        assert result.code == 2 and "is not a finite number" in result.output, result.output
    assert run_cli("run", "-o", "r.json", cwd=tmp_path).code == 0
    for option in ("--confidence", "--max-drop"):
        result = run_cli("compare", "r.json", "r.json", option, "nan", cwd=tmp_path)
        assert result.code == 2 and "is not a finite number" in result.output, result.output


@pytest.mark.parametrize("settings", ["abc", {"confidence": 5, "max_drop": "x"}, {"entries": [1]},
                                      {"confidence": [1]}])
def test_compare_settings_edited_into_nonsense_are_a_clear_error(tmp_path: Path, settings: object) -> None:
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: [{id: a, input: q, output: sunny}]\n"
                                            "target: {type: recorded}\ngates: [{type: includes, value: sunny}]\n")
    assert run_cli("run", "-o", "r.json", cwd=tmp_path).code == 0
    head = json.loads((tmp_path / "r.json").read_text())
    head["compare_settings"] = settings
    (tmp_path / "h.json").write_text(json.dumps(head))
    result = run_cli("compare", "r.json", "h.json", cwd=tmp_path)
    assert result.code == 2 and "h.json: its compare_settings cannot be used" in result.output, result.output


def test_a_csv_field_as_long_as_a_jsonl_line_may_be_is_read(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("id,input,output\na," + "q" * 200_000 + ",sunny\n")
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: rows.csv\ntarget: {type: recorded}\n"
                                            "gates: [{type: includes, value: sunny}]\n")
    result = run_cli("run", cwd=tmp_path)
    assert result.code == 0, result.output


def test_an_interrupt_before_any_item_does_not_point_at_a_results_file(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "slow.py").write_text("import time\ntime.sleep(30)\ndef answer(text):\n    return text\n")
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: [{id: a, input: q}]\n"
                                            "target: {type: python, function: 'slow:answer'}\n"
                                            "gates: [{type: includes, value: q}]\n")
    proc = subprocess.Popen([sys.executable, "-m", "evalgate.cli", "run", "-o", "out.json"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)  # inside the target's import
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "out.json" not in stderr and not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("closed", ["stdout", "stderr", "both"])
def test_a_run_started_with_its_output_streams_closed_still_writes_its_results(tmp_path: Path, closed: str) -> None:
    """`evalgate run ... >&-` (a job that discards the log) ended in an internal error, no results file."""
    import os
    import subprocess
    import sys

    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{id: a, input: q, output: sunny}]\n"
        "scorers: [{type: includes, value: sunny, threshold: 0.5}]\n")
    fds = {"stdout": (1,), "stderr": (2,), "both": (1, 2)}[closed]
    done = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "-o", "out.json"], cwd=tmp_path, timeout=60,
                          preexec_fn=lambda: [os.close(fd) for fd in fds], capture_output=False)
    assert done.returncode == 0
    assert json.loads((tmp_path / "out.json").read_text())["verdict"] == "passed"
