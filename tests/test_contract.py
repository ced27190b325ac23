"""CONTRACT.md audit: each test pins a requirement evalgate once missed (section in the test name).

CLI tests run the real `evalgate` in a subprocess; library tests call `evalgate.run_evals`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, run_cli

import evalgate

CHECK = "gates:\n  - type: includes\n    value: hello\n"


def spec_with(tmp_path: Path, data: str, rest: str = CHECK) -> Path:
    path = tmp_path / "evalgate.yaml"
    path.write_text(f"version: 1\ndata: {data}\n{rest}", encoding="utf-8")
    return path


def assert_spec_error(result: CliResult, *fragments: str) -> None:
    """Exit 2, the problems named, no traceback (CONTRACT section 8)."""
    assert result.code == 2, result.output
    assert "Traceback" not in result.output, result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


# ---- section 8: no traceback on any bad spec or data file ----


@pytest.mark.parametrize(
    "content",
    [bytes(range(256)), "version: 1\nname: caf\xe9\n".encode("latin-1"), "version: 1\n".encode("utf-16")],
    ids=["binary", "latin-1", "utf-16"],
)
def test_s8_a_spec_that_is_not_utf8_is_a_spec_error(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "evalgate.yaml").write_bytes(content)
    for command in ("run", "validate"):
        assert_spec_error(run_cli(command, cwd=tmp_path), "evalgate.yaml", "UTF-8")
    if content.startswith(b"version: 1\n"):
        assert "evalgate.yaml:2:" in run_cli("validate", cwd=tmp_path).stderr


# suffix -> (content, where the problem is reported: CSV is decoded by the block, so no line)
NOT_UTF8 = {
    ".jsonl": ('{"input": "a", "output": "hello"}\n{"input": "caf\xe9", "output": "hello"}\n', "items.jsonl:2:"),
    ".json": ('[{"input": "caf\xe9", "output": "hello"}]', "items.json:1:"),
    ".yaml": ("- {input: a, output: hello}\n- {input: caf\xe9, output: hello}\n", "items.yaml:2:"),
    ".csv": ("input,output\ncaf\xe9,hello\n", "items.csv"),
}


@pytest.mark.parametrize("suffix", list(NOT_UTF8))
def test_s8_a_data_file_that_is_not_utf8_is_a_spec_error(tmp_path: Path, suffix: str) -> None:
    content, where = NOT_UTF8[suffix]
    (tmp_path / f"items{suffix}").write_bytes(content.encode("latin-1"))
    spec_with(tmp_path, f"items{suffix}")
    for command in ("run", "validate"):
        assert_spec_error(run_cli(command, cwd=tmp_path), where, "UTF-8")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("items.jsonl", '{"input": ' + "[" * 100_000 + "]" * 100_000 + ', "output": "hello"}\n'),
        ("items.json", '[{"input": ' + "[" * 100_000 + "]" * 100_000 + ', "output": "hello"}]'),
        ("items.yaml", "- {input: " + "[" * 5000 + "]" * 5000 + ", output: hello}\n"),
    ],
    ids=["jsonl", "json", "yaml"],
)
def test_s8_deeply_nested_data_is_a_spec_error(tmp_path: Path, name: str, content: str) -> None:
    (tmp_path / name).write_text(content, encoding="utf-8")
    spec_with(tmp_path, name)
    assert_spec_error(run_cli("validate", cwd=tmp_path), name, "nested")


def test_s8_a_deeply_nested_spec_is_a_spec_error(tmp_path: Path) -> None:
    spec_with(tmp_path, "[{input: a, output: hello, metadata: {x: " + "[" * 5000 + "]" * 5000 + "}}]")
    assert_spec_error(run_cli("validate", cwd=tmp_path), "evalgate.yaml", "nested")


def test_s8_a_csv_the_csv_module_refuses_is_a_spec_error(tmp_path: Path) -> None:
    # a field may be as long as a row (16 MiB): this one is longer
    (tmp_path / "items.csv").write_text("input,output\n" + "a" * (17 * 2**20) + ",hello\n", encoding="utf-8")
    spec_with(tmp_path, "items.csv")
    assert_spec_error(run_cli("validate", cwd=tmp_path), "items.csv:2")


def test_s8_lone_surrogates_in_data_still_give_results(tmp_path: Path) -> None:
    """`\\ud800` is valid JSON; the results JSON must keep it escaped instead of crashing."""
    (tmp_path / "items.jsonl").write_text(
        '{"id": "x\\ud800", "input": "a\\udfff", "output": "hello \\ud83d"}\n', encoding="utf-8"
    )
    spec_with(tmp_path, "items.jsonl", "gates:\n  - type: includes\n    value: bye\n")
    result = run_cli("run", "-o", "out.json", cwd=tmp_path)
    assert result.code == 1, result.output
    assert "Traceback" not in result.output
    results = json.loads((tmp_path / "out.json").read_bytes().decode("utf-8"))
    assert results["items"][0]["id"] == "x\ud800"
    assert results["items"][0]["output"]["text"] == "hello \ud83d"


def test_s8_an_unwritable_junit_path_is_a_usage_error(tmp_path: Path) -> None:
    spec_with(tmp_path, "[{input: a, output: hello}]")
    (tmp_path / "file").write_text("", encoding="utf-8")
    result = run_cli("run", "--junit", "file/junit.xml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "Traceback" not in result.output
    assert "junit.xml" in result.stderr


def test_s8_an_empty_command_is_a_spec_error_naming_target_run(tmp_path: Path) -> None:
    spec = spec_with(tmp_path, "[{input: a}]")
    spec.write_text(spec.read_text(encoding="utf-8") + "target:\n  type: command\n  run: ''\n", encoding="utf-8")
    assert_spec_error(run_cli("validate", cwd=tmp_path), "evalgate.yaml:8", "target.run")
    spec.write_text(spec.read_text(encoding="utf-8").replace("run: ''", "run: 'echo \"a'"), encoding="utf-8")
    assert_spec_error(run_cli("validate", cwd=tmp_path), "evalgate.yaml:8", "target.run")


# ---- section 2: validation before anything runs ----


def test_s2_a_spec_whose_turns_have_no_checks_has_no_gate_or_scorer(tmp_path: Path) -> None:
    spec_with(tmp_path, "[{turns: [{input: a, output: hello, gates: [], scorers: []}, {input: b, output: c}]}]", "")
    for command in ("run", "validate"):
        assert_spec_error(run_cli(command, cwd=tmp_path), "no gates and no scorers")


@pytest.mark.parametrize("item", ["{inputs: [], outputs: []}", "{turns: []}"])
def test_s2_inputs_and_turns_must_not_be_empty(tmp_path: Path, item: str) -> None:
    spec_with(tmp_path, f"[{item}]")
    assert_spec_error(run_cli("validate", cwd=tmp_path), "evalgate.yaml:2", "at least one")


def test_s2_s4_an_unknown_key_in_a_threshold_names_the_closest(tmp_path: Path) -> None:
    spec_with(
        tmp_path,
        "[{input: a, output: hello}]",
        "scorers:\n  - type: includes\n    value: a\n    threshold: {min: 0.5, mx: 0.9}\n",
    )
    assert_spec_error(run_cli("validate", cwd=tmp_path), "evalgate.yaml:6", "unknown key `mx`; did you mean `max`?")


def test_s4_an_unknown_key_in_judge_names_the_closest(tmp_path: Path) -> None:
    spec_with(tmp_path, "[{input: a, output: hello}]", CHECK + "judge:\n  modle: gpt-4o-mini\n")
    result = run_cli("validate", cwd=tmp_path)
    assert_spec_error(result, "unknown key `modle`; did you mean `model`?")
    assert "`model` is required" not in result.stderr  # the typo's suggestion already says it


def test_s4_a_gate_threshold_is_an_unknown_key(tmp_path: Path) -> None:
    spec_with(tmp_path, "[{input: a, output: hello}]", "gates:\n  - type: used_no_tools\n    threshold: 0.5\n")
    assert_spec_error(run_cli("validate", cwd=tmp_path), "evalgate.yaml:5", "unknown key `threshold`", "scorers:")


def test_s4_a_csv_may_hold_turns(tmp_path: Path) -> None:
    turns = json.dumps([{"input": "a", "output": "hello", "gates": [{"type": "includes", "value": "hello"}]}])
    (tmp_path / "items.csv").write_text('turns\n"' + turns.replace('"', '""') + '"\n', encoding="utf-8")
    spec_with(tmp_path, "items.csv", "")
    result = run_cli("run", cwd=tmp_path)
    assert result.code == 0, result.output
    assert "turn 1: includes:hello" in result.stdout


# ---- sections 3 and 5: the run's text ----


def test_s3_s5_a_turn_without_text_joins_as_an_empty_text() -> None:
    """Mastra joins every turn's assistant message, an empty one included: "a" + " " + "" + " " + "b"."""
    item = {"inputs": ["q1", "q2", "q3"], "outputs": ["a", {"tool_calls": [{"name": "t", "result": 1}]}, "b"]}
    gates = [
        {"type": "includes", "value": "a  b", "id": "two-spaces"},
        {"type": "includes", "value": "a b", "id": "one-space"},
        {"type": "equals", "value": "ab", "id": "joined"},
    ]
    result = evalgate.run_evals(data=[item], gates=gates)
    assert {g.id: g.score for g in result.gate_results} == {"two-spaces": 1.0, "one-space": 0.0, "joined": 1.0}


@pytest.mark.parametrize(
    ("pattern", "flags", "text", "expected"),
    [
        ("abc$", "", "abc\n", 0.0),  # JavaScript's `$` is the end of the text, not before a last newline
        ("abc$", "", "abc", 1.0),
        ("abc$", "m", "abc\nx", 1.0),
        (r"c\$", "", "c$\n", 1.0),
        ("c[$]", "", "c$\n", 1.0),
        ("a$|b", "", "a\nb", 1.0),
    ],
)
def test_s5_matches_dollar_is_the_end_of_the_text(pattern: str, flags: str, text: str, expected: float) -> None:
    gate = evalgate.checks.matches(pattern, flags=flags)
    result = evalgate.run_evals(data=[{"input": "q", "output": text}], gates=[gate])
    assert result.gate_results[0].score == expected


# ---- section 2 through the library: the same validation as a spec ----


def _gate() -> list[dict[str, Any]]:
    return [{"type": "includes", "value": "hello"}]


def test_s2_run_evals_accepts_per_turn_checks_only() -> None:
    item = {"turns": [{"input": "a", "output": "hello", "gates": _gate()}]}
    result = evalgate.run_evals(data=[item])
    assert result.verdict == "passed"
    assert result.turn_results is not None and result.turn_results[0].gate_results[0].passed


def test_s2_run_evals_needs_some_check_even_with_turns() -> None:
    with pytest.raises(ValueError, match="at least one gate or scorer"):
        evalgate.run_evals(data=[{"turns": [{"input": "a", "output": "hello"}]}])


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"input": "a", "inputs": ["a"], "outputs": ["hello"]}, "exactly one of"),
        ({"output": "hello"}, "exactly one of"),
        ({"inputs": [], "outputs": []}, "at least one"),
        ({"turns": []}, "at least one"),
        ({"inputs": ["a", "b"], "outputs": ["hello"]}, "one output per input"),
    ],
)
def test_s2_run_evals_validates_items_before_running(item: dict[str, Any], message: str) -> None:
    ran: list[Any] = []
    with pytest.raises(ValueError, match=message):
        evalgate.run_evals(data=[{"input": "ok", "output": "hello"}, item], gates=[*_gate(), _spy(ran)])
    assert ran == []  # nothing ran: validation comes first


def _spy(ran: list[Any]) -> Any:
    @evalgate.scorer(id="spy")
    def spy(item: Any, run: Any) -> float:
        ran.append(item)
        return 1.0

    return spy


def test_s4_data_and_spec_files_may_start_with_a_byte_order_mark(tmp_path: Path) -> None:
    """Excel and some editors write a UTF-8 BOM first; it is not part of the text."""
    bom = "\ufeff"
    (tmp_path / "d.csv").write_text(bom + "id,input,output\nq1,hi,hello there\n", encoding="utf-8")
    (tmp_path / "d.jsonl").write_text(bom + '{"input": "hi", "output": "hello there"}\n', encoding="utf-8")
    for data in ("d.csv", "d.jsonl"):
        spec = tmp_path / f"spec-{data}.yaml"
        text = f"version: 1\ndata: {data}\nscorers:\n  - type: includes\n    value: hello\n"
        spec.write_text(bom + text, encoding="utf-8")
        result = evalgate.run_spec(spec)
        assert result.scores == {"includes:hello": 1.0}, data


def test_s3_a_falsy_tool_error_is_no_error() -> None:
    from evalgate.replies import run_from_value

    run = run_from_value({"text": "x", "tool_calls": [{"name": "t", "error": False}, {"name": "u", "error": 0}]})
    assert [c.failed for c in run.tool_calls] == [False, False]
