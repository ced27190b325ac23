"""What a person reads when something is wrong: one line per problem, the command named, help not cut."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

from evalgate.errors import Problem, SpecError, grouped

SPEC = "version: 1\ndata: data.jsonl\ngates:\n  - type: includes\n    value: Paris\n"


def write_items(folder: Path, items: list[dict[str, object]]) -> None:
    (folder / "evalgate.yaml").write_text(SPEC)
    (folder / "data.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items))


def test_a_field_misnamed_on_every_line_is_one_error_with_its_count_and_first_lines(tmp_path: Path) -> None:
    write_items(tmp_path, [{"id": f"q{i}", "inptu": "hi", "output": "Paris"} for i in range(20)])
    result = run_cli("validate", cwd=tmp_path)
    assert result.code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == ["error: data.jsonl:1: inptu: unknown key `inptu`; did you mean `input`? "
                      "(and 19 more lines: 2, 3, 4, 5, 6, …)"], result.stderr


def test_repeated_problems_are_counted_past_the_twenty_shown(tmp_path: Path) -> None:
    """Each distinct problem once, each with its own count, however many lines repeat it."""
    items: list[dict[str, object]] = []
    for i in range(300):
        items.append({"inptu": "hi", "output": "Paris"} if i % 3 == 0 else {"input": "hi", "outptu": "Paris"})
    write_items(tmp_path, items)
    result = run_cli("run", cwd=tmp_path)
    assert result.code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        "error: data.jsonl:1: inptu: unknown key `inptu`; did you mean `input`? "
        "(and 99 more lines: 4, 7, 10, 13, 16, …)",
        "error: data.jsonl:2: outptu: unknown key `outptu`; did you mean `output`? "
        "(and 199 more lines: 3, 5, 6, 8, 9, …)",
    ], result.stderr
    assert result.stderr.rstrip().endswith("evalgate run: the spec has errors; nothing was run (exit 2)")


def test_distinct_problems_stay_apart_and_in_order() -> None:
    problems = [Problem("d.jsonl", 3, "a"), Problem("d.jsonl", 1, "b"), Problem("d.jsonl", 7, "a"),
                Problem("e.jsonl", 9, "a"), Problem("d.jsonl", None, "c")]
    assert [str(p) for p in grouped(problems)] == [
        "d.jsonl:3: a (and 1 more line: 7)", "d.jsonl:1: b", "e.jsonl:9: a", "d.jsonl: c"]
    # the same problem twice on one line is said once, with nothing added
    assert [str(p) for p in grouped([Problem("s.yaml", 4, "x"), Problem("s.yaml", 4, "x")])] == ["s.yaml:4: x"]
    assert len(SpecError([Problem("d.jsonl", n, f"m{n}") for n in range(1, 40)]).problems) == 20


def test_validate_and_estimate_name_themselves_and_never_send_you_to_run(tmp_path: Path) -> None:
    for command in ["validate", "estimate"]:
        missing = run_cli(command, "nope.yaml", cwd=tmp_path)
        assert missing.code == 2
        assert missing.stderr.startswith(f"evalgate {command}: error: nope.yaml: no such spec file")
        assert "evalgate run" not in missing.stderr
    write_items(tmp_path, [{"inptu": "hi", "output": "Paris"}])
    for command in ["validate", "estimate", "run"]:
        result = run_cli(command, cwd=tmp_path)
        assert result.code == 2
        assert result.stderr.rstrip().splitlines()[-1].startswith(f"evalgate {command}: the spec has errors")


def test_every_commands_description_is_whole_in_the_top_level_help() -> None:
    from evalgate.cli import main

    result = run_cli("--help")
    assert result.code == 0
    text = " ".join(result.stdout.split())
    for name, command in main.commands.items():
        first = (command.help or "").split("\n\n")[0]
        assert " ".join(first.split()) in text, name
    commands = result.stdout.split("Commands:", 1)[1]
    assert "..." not in commands  # click's cut descriptions end so


def test_items_inline_in_the_spec_share_one_error_too(tmp_path: Path) -> None:
    items = "".join("  - {inptu: hi, output: Paris}\n" for _ in range(8))
    (tmp_path / "s.yaml").write_text(f"version: 1\ndata:\n{items}gates:\n  - type: includes\n    value: Paris\n")
    result = run_cli("validate", "s.yaml", cwd=tmp_path)
    assert result.code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == ["error: s.yaml:3: data[0].inptu: unknown key `inptu`; did you mean `input`? "
                      "(and 7 more lines: 4, 5, 6, 7, 8, …)"], result.stderr


def test_a_csv_column_misnaming_input_is_named(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("id,Inptu,output\n1,hi,Paris\n")
    (tmp_path / "s.yaml").write_text("version: 1\ndata: d.csv\ngates:\n  - type: includes\n    value: Paris\n")
    result = run_cli("validate", "s.yaml", cwd=tmp_path)
    assert result.code == 2
    assert "d.csv:1: a CSV data file needs an `input` column; did you mean `input` for the column `Inptu`?" \
        in result.stderr, result.stderr
