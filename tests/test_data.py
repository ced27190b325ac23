"""Every data format (.jsonl .json .yaml .yml .csv, inline) gives the same cases and the same results."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import run_cli

from evalgate.api import run_spec
from evalgate.errors import SpecError
from evalgate.load.loader import load_spec

ITEMS: list[dict[str, Any]] = [
    {
        "id": "brooklyn",
        "input": "Weather in Brooklyn?",
        "ground_truth": "It is sunny in Brooklyn, 72F.",
        "output": {
            "text": "It is sunny in Brooklyn, 72F.",
            "tool_calls": [{"name": "get_weather", "args": {"city": "Brooklyn"}, "result": {"temp": 72}}],
        },
    },
    {
        "id": "paris",
        "input": "Weather in Paris?",
        "ground_truth": "It is cloudy in Paris, 64F.",
        "output": {
            "text": "Sorry, the tool failed.",
            "tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}, "error": "timeout"}],
        },
    },
    {"id": "hello", "input": "Hi!", "output": "Hello! Ask me about the weather."},
]

CHECKS = """\
gates:
  - type: called_tool
    tool: get_weather
scorers:
  - type: no_tool_errors
    threshold: 0.5
  - type: includes
    value: weather
  - type: similarity
    value: "It is sunny in Brooklyn, 72F."
"""


def _csv(items: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["id", "input", "ground_truth", "output"])
    writer.writeheader()
    for item in items:
        output = item["output"]
        writer.writerow({**item, "output": output if isinstance(output, str) else json.dumps(output)})
    return out.getvalue()


FORMATS = {
    "jsonl": lambda items: "".join(json.dumps(i) + "\n" for i in items),
    "json": lambda items: json.dumps(items, indent=2),
    "yaml": lambda items: yaml.safe_dump(items, sort_keys=False),
    "yml": lambda items: yaml.safe_dump({"items": items}, sort_keys=False),
    "csv": _csv,
}


def _spec(tmp_path: Path, fmt: str) -> Path:
    spec = tmp_path / "evalgate.yaml"
    if fmt == "inline":
        data = yaml.safe_dump({"data": ITEMS}, sort_keys=False)
    else:
        (tmp_path / f"items.{fmt}").write_text(FORMATS[fmt](ITEMS), encoding="utf-8")
        data = f"data: items.{fmt}\n"
    spec.write_text(f"version: 1\nname: formats\n{data}{CHECKS}", encoding="utf-8")
    return spec


def _comparable(path: Path) -> dict[str, Any]:
    result = run_spec(path, keep_items=True).to_dict()
    result.pop("summary")  # holds the duration
    result.pop("created_at")  # a clock reading: a slow machine crosses a second between two runs
    for item in result["items"]:
        item.pop("duration_ms", None)
    return result


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _comparable(_spec(tmp_path_factory.mktemp("inline"), "inline"))


def test_reference_results(reference: dict[str, Any]) -> None:
    assert reference["verdict"] == "failed"  # "hello" made no call
    assert [g["score"] for g in reference["gate_results"]] == [2 / 3]
    assert reference["scores"]["no_tool_errors"] == 2 / 3
    assert reference["scores"]["includes:weather"] == 1 / 3
    assert [i["id"] for i in reference["items"]] == ["brooklyn", "paris", "hello"]
    assert reference["items"][0]["scores"]["similarity:It is sunny in Brooklyn, 72F."] == 1.0


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_gives_the_same_results(fmt: str, tmp_path: Path, reference: dict[str, Any]) -> None:
    assert _comparable(_spec(tmp_path, fmt)) == reference


@pytest.mark.parametrize("fmt", [*sorted(FORMATS), "inline"])
def test_every_format_gives_the_same_items(fmt: str, tmp_path: Path) -> None:
    cases = list(load_spec(_spec(tmp_path, fmt)).iter_cases())
    assert [c.id for c in cases] == ["brooklyn", "paris", "hello"]
    assert [c.item.input for c in cases] == [i["input"] for i in ITEMS]
    assert [c.item.ground_truth for c in cases] == [i.get("ground_truth") for i in ITEMS]
    assert cases[1].recorded[0].tool_calls[0].error == "timeout"


def test_default_ids_count_from_one(tmp_path: Path) -> None:
    (tmp_path / "items.jsonl").write_text('{"input": "a", "output": "x"}\n\n{"input": "b", "output": "y"}\n')
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: items.jsonl\nscorers:\n  - type: includes\n    value: x\n"
    )
    assert [c.id for c in load_spec(tmp_path / "evalgate.yaml").iter_cases()] == ["item-1", "item-2"]


def test_camel_case_aliases_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\n"
        "data:\n"
        "  - input: a\n"
        "    groundTruth: x\n"
        "    expectedTrajectory: [get_weather]\n"
        "    output: x\n"
        "gates:\n"
        "  - type: calledTool\n"
        "    tool: get_weather\n"
        "scorers:\n"
        "  - type: noToolErrors\n"
    )
    loaded = load_spec(tmp_path / "evalgate.yaml")
    assert loaded.cases[0].item.ground_truth == "x"
    assert loaded.cases[0].item.expected_trajectory == ["get_weather"]
    assert [g.entry.id for g in loaded.gates] == ["called_tool:get_weather"]
    assert [s.entry.id for s in loaded.scorers] == ["no_tool_errors"]


def test_csv_extra_columns_become_metadata_and_context_may_be_plain(tmp_path: Path) -> None:
    (tmp_path / "items.csv").write_text(
        'input,output,context,difficulty\n"Hi, there",Hello,the user is polite,easy\nYo,"{""text"": ""Hey""}",,\n'
    )
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: items.csv\nscorers:\n  - type: includes\n    value: he\n"
    )
    cases = list(load_spec(tmp_path / "evalgate.yaml").iter_cases())
    assert cases[0].item.input == "Hi, there"
    assert cases[0].item.context == ["the user is polite"]
    assert cases[0].item.metadata == {"difficulty": "easy"}
    assert cases[0].recorded[0].text == "Hello"
    assert cases[1].recorded[0].text == "Hey"
    assert cases[1].item.metadata is None


def test_csv_extra_columns_join_a_metadata_column_holding_an_object(tmp_path: Path) -> None:
    (tmp_path / "items.csv").write_text(
        'input,output,metadata,difficulty\nHi,Hello,"{""topic"": ""greeting""}",easy\nYo,Hey,null,hard\n'
    )
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: items.csv\ngates: [{type: includes, value: he}]\n")
    cases = list(load_spec(tmp_path / "evalgate.yaml").iter_cases())
    assert cases[0].item.metadata == {"topic": "greeting", "difficulty": "easy"}
    assert cases[1].item.metadata == {"difficulty": "hard"}


@pytest.mark.parametrize(("metadata", "said"), [
    ('"[1]"', "column `metadata` holds [1], but the other columns (`difficulty`) go into the metadata"),
    ('"""easy"""', 'column `metadata` holds "easy", but the other columns (`difficulty`) go into the metadata'),
    ('"{""difficulty"": ""hard""}"', "column `difficulty` and the key `difficulty` of column `metadata` both set"),
])
def test_csv_extra_columns_beside_a_metadata_column_they_cannot_join_are_a_data_error(tmp_path: Path, metadata: str,
                                                                                       said: str) -> None:
    """A list or text was an internal error (exit 3: AttributeError: 'list' object has no attribute 'update');
    a key of both was silently replaced by the column."""
    (tmp_path / "items.csv").write_text(f"input,output,metadata,difficulty\nHi,Hello,,easy\nYo,Hey,{metadata},easy\n")
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: items.csv\ngates: [{type: includes, value: he}]\n")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert f"items.csv:3: {said}" in result.stderr
    assert "internal error" not in result.output


def test_recorded_inputs_and_turns_become_one_run_per_turn(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\n"
        "data:\n"
        "  - inputs: [hi, 'weather?']\n"
        "    outputs: [hello, {text: sunny, tool_calls: [{name: get_weather}]}]\n"
        "  - turns:\n"
        "      - input: hi\n"
        "        output: hello\n"
        "      - input: 'weather?'\n"
        "        output: {text: rainy, tool_calls: [{name: get_weather}]}\n"
        "        gates:\n"
        "          - type: called_tool\n"
        "            tool: get_weather\n"
        "gates:\n"
        "  - type: called_tool\n"
        "    tool: get_weather\n"
    )
    result = run_spec(tmp_path / "evalgate.yaml", keep_items=True)
    assert result.verdict == "passed"
    first, second = result.items
    assert first.run.texts == ["hello", "sunny"]  # the whole conversation for top-level checks
    assert second.turns is not None and second.turns[1].gates == {"called_tool:get_weather": 1.0}
    turn1 = {t.index: t for t in result.turn_results or []}[1]
    assert [(g.id, g.passed) for g in turn1.gate_results] == [("called_tool:get_weather", True)]


PLAIN = [
    {"id": "a", "input": "Weather?", "output": {"text": "Sunny.", "tool_calls": []}},
    {"input": ["a", {"b": 1}], "output": "x", "ground_truth": {"k": [1, 2]}},
    {"input": None},
    {"id": None, "input": "x", "expected_trajectory": ["get_weather"]},
    {"output": "no input at all"},  # a shape problem, reported as for any item
    {},
]
NOT_PLAIN = [
    {"id": 7, "input": "x"},  # validation decides what a non-string id means
    {"input": "x", "groundTruth": "alias"},
    {"input": "x", "metadata": {"k": 1}},
    {"inputs": ["a"], "outputs": ["b"]},
    {"turns": [{"input": "a"}]},
    {"input": "x", "context": ["c"]},
    {"input": "x", "unknown": 1},
]


@pytest.mark.parametrize("raw", PLAIN)
def test_a_plain_item_is_the_item_validation_builds(raw: dict[str, Any]) -> None:
    from evalgate.load.items import Item, plain_item

    built, validated = plain_item(raw), Item.model_validate(raw)
    assert built is not None
    assert built == validated
    assert built.model_fields_set == validated.model_fields_set
    assert built.model_dump() == validated.model_dump()
    assert list(built.__dict__) == list(validated.__dict__)
    for key in raw:  # `Any` fields keep the very value, as validation does
        assert getattr(built, key) is getattr(validated, key)
    built.input = "changed"  # a model like any other: assignment works, the raw dict is not touched
    assert raw.get("input") != "changed"


@pytest.mark.parametrize("raw", NOT_PLAIN)
def test_an_item_that_needs_validating_is_not_built_plain(raw: dict[str, Any]) -> None:
    from evalgate.load.items import plain_item

    assert plain_item(raw) is None


def test_plain_and_validated_items_give_the_same_problems(tmp_path: Path) -> None:
    lines = ['{"id": "a", "output": "x"}', '{"id": 7, "input": "x", "output": "y"}', '{"input": "x"}']
    (tmp_path / "items.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: items.jsonl\nscorers:\n  - type: includes\n"
                                            "    value: x\n")
    with pytest.raises(SpecError) as raised:
        list(load_spec(tmp_path / "evalgate.yaml").iter_cases())
    messages = [(p.line, p.message) for p in raised.value.problems]
    assert messages == [
        (1, "item 1: an item needs exactly one of `input`, `inputs`, `turns`; it has none of them"),
        (2, "id: Input should be a valid string (got 7)"),
        (3, "item 3: the recorded target needs `output` here"),
    ]


@pytest.mark.parametrize("number", ["123456789012345678901234", "-9223372036854775809", "18446744073709551616"])
def test_a_jsonl_integer_beyond_64_bits_stays_exact(tmp_path: Path, number: str) -> None:
    # orjson would read these as floats: the reader must hand such lines to json
    call = f'{{"name": "f", "args": {{"n": {number}}}}}'
    line = f'{{"id": "a", "input": "x", "output": {{"text": "x", "tool_calls": [{call}]}}}}'
    (tmp_path / "items.jsonl").write_text(f'{{"id": "b", "input": "y", "output": "y 1234567890 123456789"}}\n{line}\n')
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: items.jsonl\nscorers:\n  - type: includes\n"
                                            "    value: x\n")
    cases = list(load_spec(tmp_path / "evalgate.yaml").iter_cases())
    args = cases[1].recorded[0].tool_calls[0].args
    assert args["n"] == int(number) and type(args["n"]) is int
    run_spec(tmp_path / "evalgate.yaml", output=tmp_path / "r.json")
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["items"][1]["output"]["tool_calls"][0]["args"]["n"] == int(number)


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
def test_an_integer_too_long_to_read_is_named_at_its_line_with_what_to_do(tmp_path: Path, suffix: str) -> None:
    # Python reads integers of up to 4300 digits: its own message said "use sys.set_int_max_str_digits()",
    # nothing a data file can do, and a .json file's problem had no line.
    huge = "9" * 5000
    content = {
        ".jsonl": f'{{"id": "a", "input": "x", "output": "x"}}\n{{"id": "b", "input": {huge}, "output": "x"}}\n',
        ".json": f'[{{"id": "a", "input": "x", "output": "x"}},\n {{"id": "b", "input": -{huge}, "output": "x"}}]\n',
        ".csv": f'id,input,output,metadata\na,x,x,\nb,x,x,"{{""n"": {huge}}}"\n',
    }[suffix]
    (tmp_path / f"items{suffix}").write_text(content)
    (tmp_path / "evalgate.yaml").write_text(f"version: 1\ndata: items{suffix}\ngates:\n  - type: includes\n"
                                            "    value: x\n")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert f"items{suffix}:{3 if suffix == '.csv' else 2}: " in result.stderr
    assert "a number longer than 4300 digits" in result.stderr and "quote it to keep it as text" in result.stderr
    assert "set_int_max_str_digits" not in result.output


def test_a_csv_row_with_more_fields_than_the_header_is_a_data_error_at_its_line(tmp_path: Path) -> None:
    # An unquoted comma split `Hello, world`: the row's last field was silently dropped and the item
    # ran with its output shifted into the wrong column.
    (tmp_path / "items.csv").write_text("id,input,output\na,hi,Hello\nb,hi,Hello, world\nc,hi,Hello,\n")
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: items.csv\ngates:\n  - type: includes\n"
                                            "    value: Hello\n")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "items.csv:3: this row has 4 fields, the header 3" in result.stderr and "quote a field" in result.stderr
    # an empty cell after the last column (a trailing comma) holds nothing to lose
    (tmp_path / "items.csv").write_text("id,input,output\na,hi,Hello\nc,hi,Hello,\n")
    assert run_cli("validate", "evalgate.yaml", cwd=tmp_path).code == 0


def test_a_csv_byte_that_is_not_utf8_is_named_at_its_line(tmp_path: Path) -> None:
    # The CSV reader decodes by the block: the problem named the file only, with no line to look at.
    rows = "".join(f"{i},é{i},y\n" for i in range(120_000))  # past the first block of 1 MiB
    (tmp_path / "items.csv").write_bytes(b"id,input,output\n" + rows.encode() + b"x,caf\xe9,y\n")
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: items.csv\ngates:\n  - type: includes\n"
                                            "    value: y\n")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "items.csv:120002: not UTF-8 text (byte 0xe9); save the file as UTF-8" in result.stderr


@pytest.mark.parametrize("where", ["input", "ground_truth"])
def test_a_yaml_key_read_as_a_date_is_a_data_error_at_its_line(tmp_path: Path, where: str) -> None:
    # JSON has no date key: hashing the item (or a scorer's text of it) raised "TypeError: keys must be
    # str, ...", an internal error (exit 3)
    other = "ground_truth" if where == "input" else "input"
    (tmp_path / "items.yaml").write_text(f"- id: a\n  {other}: x\n  output: x\n  {where}:\n    2001-01-01: x\n")
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: items.yaml\ngates:\n  - type: includes\n"
                                            "    value: x\nscorers:\n  - type: content_similarity\n"
                                            "    reference: ground_truth\n")
    result = run_cli("run", "evalgate.yaml", "--output", "r.json", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "items.yaml:5: the key `2001-01-01` is read as a date, which no JSON key can be; quote it" in result.stderr
    (tmp_path / "items.yaml").write_text(f"- id: a\n  {other}: x\n  output: x\n  {where}:\n    '2001-01-01': x\n")
    assert run_cli("run", "evalgate.yaml", "--output", "r.json", cwd=tmp_path).code == 0


@pytest.mark.parametrize("shard", [False, True])
def test_yaml_keys_of_two_types_in_one_mapping_run(tmp_path: Path, shard: bool) -> None:
    # `{1: a, b: c}` is valid YAML; sorting its keys to hash the item (and inline data for a shard) raised
    # "TypeError: '<' not supported between instances of 'str' and 'int'", an internal error (exit 3)
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata:\n  - {id: a, input: {1: a, b: c}, output: x}\n"
                                            "  - {id: b, input: x, ground_truth: {1: a, ~: c}, output: x}\n"
                                            "gates:\n  - type: includes\n    value: x\n")
    result = run_cli("run", "evalgate.yaml", "--output", "r.json", *(["--shard", "1/1"] if shard else []),
                     cwd=tmp_path)
    assert result.code == 0, result.output
    items = json.loads((tmp_path / "r.json").read_text())["items"]
    assert [i["id"] for i in items] == ["a", "b"] and items[0]["input"] == {"1": "a", "b": "c"}


@pytest.mark.parametrize(("record", "message"), [
    ('{"id": "a", "turns": [{"input": "x", "output": "y"}], "output": "z"}',
     "`output` goes with `input`; an item with `turns` records each turn's own `output`"),
    ('{"id": "a", "inputs": ["x"], "outputs": ["y"], "output": "z"}',
     "`output` goes with `input`; an item with `inputs` records `outputs`, one per input"),
    ('{"id": "a", "input": "x", "outputs": ["y"]}',
     "`outputs` goes with `inputs`; an item with `input` records `output`"),
])
def test_a_recorded_output_no_run_reads_is_a_data_error_at_its_line(tmp_path: Path, record: str, message: str) -> None:
    # An `output` beside `turns` (or `outputs` beside `input`) was dropped without a word: the run
    # scored other outputs than the ones the data set seemed to record.
    (tmp_path / "items.jsonl").write_text('{"id": "b", "input": "x", "output": "y"}\n' + record + "\n")
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: items.jsonl\ngates:\n  - type: no_tool_errors\n")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert f"items.jsonl:2: item 2: {message}" in result.stderr, result.stderr


JSON_SPEC = "version: 1\ndata: items.json\ngates:\n  - type: includes\n    value: x\n"
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(("content", "where"), [
    # past the recursion limit: json itself gives up
    ('[\n  {"id": "a", "input": "x", "output": "x"},\n  {"id": "b", "input": "x", "output": "x",\n'
     f'   "metadata": {{"deep": {DEEP}}}}}\n]\n', "items.json:4: item 2: "),
    # within it, but past what evalgate reads
    ('[\n  {"id": "a", "input": "x", "output": "x"},\n  {"id": "b", "input": "x", "output": "x",\n'
     f'   "metadata": {"[" * 150 + "]" * 150}}}\n]\n', "items.json:4: item 2: "),
    # the {"items": [...]} form counts its items
    ('{"items": [\n  {"id": "a", "input": "x", "output": "x"},\n  {"id": "b", "input": "x", "output": "x",\n'
     f'   "metadata": {DEEP}}}\n]}}\n', "items.json:4: item 2: "),
    ('\n' + DEEP, "items.json:2: item 1: "),  # the whole file is one list nested too deep
    ('{"rows":\n' + DEEP + "}", "items.json:2: "),  # no item: the file is no list of items either
], ids=["past-recursion", "past-limit", "wrapped", "top-level", "no-item"])
def test_a_json_data_file_nested_too_deep_names_its_line_and_item(tmp_path: Path, content: str, where: str) -> None:
    # The problem named the file alone: `items.json: nested too deeply to read`.
    (tmp_path / "items.json").write_text(content)
    (tmp_path / "evalgate.yaml").write_text(JSON_SPEC)
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert f"error: {where}nested more than 100 levels deep; flatten the structure" in result.stderr, result.stderr
    assert "Traceback" not in result.output


TAB = "\t"


@pytest.mark.parametrize("content", [
    # JSON takes tabs between tokens; YAML, which found the lines, takes none as indentation
    f'[\n{TAB}{{"id": "a", "input": "x", "output": "x"}},\n{TAB}{{"input": "x",\n{TAB}{TAB}"id": 5, "output": "x"}}\n]',
    # brackets in a string nest nothing, but YAML counted them as nesting past its limit
    '[\n  {"id": "a", "input": "' + "[" * 200 + '", "output": "x"},\n  {"input": "x",\n   "id": 5, "output": "x"}\n]',
    # a NEL (U+0085) in a string is a character to JSON, a line break to YAML: every later line was off
    '[\n  {"id": "a", "input": "x\u0085y\u0085z", "output": "x"},\n  {"input": "x",\n   "id": 5, "output": "x"}\n]',
    # a raw tab inside a string is no JSON: said at its line, as before
    f'[\n  {{"id": "a", "input": "x", "output": "x"}},\n  {{"input": "x",\n   "id": "x{TAB}y", "output": "x"}}\n]',
], ids=["tab-indented", "brackets-in-a-string", "nel-in-a-string", "tab-in-a-string"])
def test_a_json_data_files_problems_keep_their_lines(tmp_path: Path, content: str) -> None:
    # A .json file's lines were found by reading it again as YAML: where YAML reads JSON otherwise,
    # an item's problem kept its item (`[1].input`) and lost its line.
    (tmp_path / "items.json").write_text(content, encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text(JSON_SPEC)
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert result.stderr.startswith("error: items.json:4: "), result.stderr
    assert "[1].id: Input should be a valid string (got 5)" in result.stderr or "invalid JSON" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("wrapped", [False, True], ids=["list", "items-mapping"])
def test_a_big_json_data_files_problems_name_their_items_line(tmp_path: Path, wrapped: bool) -> None:
    # Past the size whose every node's line is found, a problem named the file and the item only:
    # `items.json: [N].id: ...`, with no line to go to in a file of hundreds of thousands of lines.
    from evalgate.load.data import MAX_POSITIONS_CHARS

    filler = "x" * 200
    count = MAX_POSITIONS_CHARS // 250 + 1000
    bad = count - 3  # near the end, where a line found from the wrong place would be furthest off
    lines = ['{"name": "big", "items": [' if wrapped else "["]
    for i in range(count):
        item_id = "5" if i == bad else json.dumps(f"item-{i}")
        # each item over two lines, strings with brackets, commas and escaped quotes in them
        lines.append(f'  {{"id": {item_id}, "input": "[{{\\"a\\", {i}}}]",\n   "output": "{filler}"}},')
    lines[-1] = lines[-1].rstrip(",")
    lines.append('], "items_note": "a later key"}' if wrapped else "]")
    text = "\n".join(lines) + "\n"
    assert len(text) > MAX_POSITIONS_CHARS
    (tmp_path / "items.json").write_text(text)
    (tmp_path / "evalgate.yaml").write_text(JSON_SPEC)
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    start = 2 + 2 * bad  # the item's first line
    assert text.splitlines()[start - 1].startswith('  {"id": 5,')
    assert result.stderr.startswith(f"error: items.json:{start}: [{bad}].id: Input should be a valid string"), \
        result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("data", "said"), [
    ('""', "the data file `.` is a directory, not a regular file; point at a file"),
    ('"."', "the data file `.` is a directory, not a regular file; point at a file"),
    ('"cases"', "the data file `cases` is a directory, not a regular file; point at a file"),
    ('"questions"', "the data file `questions` has no type; use .jsonl, .json, .yaml, .yml or .csv"),
    ('"questions.txt"', "unknown data file type `.txt`; use .jsonl, .json, .yaml, .yml or .csv"),
], ids=["empty", "dot", "folder", "no-suffix", "other-suffix"])
def test_a_data_path_of_no_data_file_type_says_what_it_names(tmp_path: Path, data: str, said: str) -> None:
    # All of these said "unknown data file type ``", naming nothing (the first three name a folder).
    (tmp_path / "cases").mkdir()
    (tmp_path / "evalgate.yaml").write_text(f"version: 1\ndata: {data}\ngates:\n  - type: includes\n    value: x\n")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert result.stderr.startswith(f"error: evalgate.yaml:2: data: {said}\n"), result.stderr
