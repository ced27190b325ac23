"""Bad specs and data: exit 2, `file:line: what to change`, never a traceback (real CLI, subprocess)."""

from __future__ import annotations

import json
import os
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import CliResult, dedent, run_cli

ITEM = """\
data:
  - input: hi
    output: hello
"""

# The spec of the cases about the data file items.jsonl: with the agent, and with its runs recorded in it.
JSONL_SPEC = """\
version: 1
data: items.jsonl
gates:
  - type: no_tool_errors
"""
RECORDED_JSONL_SPEC = JSONL_SPEC.replace("gates:", "target: {type: recorded}\ngates:")


def python_target_spec(function: str) -> str:
    """A spec of one item whose target is the python function `function` (`module:name`)."""
    return ("version: 1\ndata:\n  - input: hi\ntarget:\n  type: python\n"
            f"  function: {function}\ngates:\n  - type: no_tool_errors\n")


# name -> (files, expected `file:line` locations, expected message fragments, forbidden fragments)
CASES: dict[str, tuple[dict[str, str], list[str], list[str], list[str]]] = {
    "typo'd key suggests the closest": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                gates:
                  - type: called_tool
                    toool: get_weather
                """
        },
        ["evalgate.yaml:7"],
        ["unknown key `toool`", "did you mean `tool`?"],
        [],
    ),
    "a number in exponent form that YAML reads as text says how to write it": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                scorers:
                  - type: includes
                    value: hello
                    threshold: 5e-1
                  - type: includes
                    id: capped
                    value: bye
                    threshold: {max: 2E-1}
                """
        },
        ["evalgate.yaml:8", "evalgate.yaml:12"],
        ["YAML reads `5e-1` as text: write `5.0e-1`", "YAML reads `2E-1` as text: write `2.0e-1`"],
        # the mapping is the right shape, its `max` is wrong: not "threshold: should be a number" beside it
        ["scorers[1].threshold: Input should be"],
    ),
    "typo'd top-level key": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                scorer:
                  - type: includes
                    value: a
                """
        },
        ["evalgate.yaml:5"],
        ["unknown key `scorer`", "did you mean `scorers`?"],
        [],
    ),
    "unknown type suggests called_tool": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                gates:
                  - type: no_tool_errors
                  - type: caled_tool
                    tool: x
                """
        },
        ["evalgate.yaml:7"],
        ["unknown type `caled_tool`", "did you mean `called_tool`?"],
        [],
    ),
    "entry without a type lists the types": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                gates:
                  - tool: get_weather
                """
        },
        ["evalgate.yaml:6"],
        ["needs a `type`", "`called_tool`", "`no_tool_errors`"],
        ["`calledTool`"],
    ),
    "gates take no threshold": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                gates:
                  - type: no_tool_errors
                    threshold: 0.5
                """
        },
        ["evalgate.yaml:7"],
        ["unknown key `threshold`"],
        [],
    ),
    "threshold min > max": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                scorers:
                  - type: includes
                    value: a
                    threshold: {min: 0.8, max: 0.2}
                """
        },
        ["evalgate.yaml:8"],
        ["min (0.8) is greater than max (0.2)"],
        ["constrained-float", "function-after", "valid number"],
    ),
    "threshold above 1": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                scorers:
                  - type: includes
                    value: a
                    threshold: 1.5
                """
        },
        ["evalgate.yaml:8"],
        ["less than or equal to 1", "1.5"],
        ["valid dictionary"],
    ),
    "threshold bound below 0": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                scorers:
                  - type: includes
                    value: a
                    threshold:
                      max: -0.1
                """
        },
        ["evalgate.yaml:9"],
        ["greater than or equal to 0"],
        ["valid number", "constrained-float"],
    ),
    "threshold not finite": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                scorers:
                  - type: includes
                    value: a
                    threshold: .nan
                  - type: includes
                    value: b
                    threshold: {min: .inf}
                """
        },
        ["evalgate.yaml:8", "evalgate.yaml:11"],
        ["finite number"],
        ["valid dictionary"],
    ),
    "threshold mapping with neither bound": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                scorers:
                  - type: includes
                    value: a
                    threshold: {}
                """
        },
        ["evalgate.yaml:8"],
        ["`min` and/or `max`"],
        ["constrained-float"],
    ),
    "duplicate scorer ids": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                scorers:
                  - type: includes
                    value: a
                  - type: includes
                    value: a
                """
        },
        ["evalgate.yaml:8"],
        ["`includes:a` is already used at line 6", "id:"],
        [],
    ),
    "duplicate explicit gate ids": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                gates:
                  - type: called_tool
                    tool: a
                    id: tools
                  - type: called_tool
                    tool: b
                    id: tools
                """
        },
        ["evalgate.yaml:9"],
        ["`tools` is already used at line 6"],
        [],
    ),
    "duplicate item ids": (
        {
            "evalgate.yaml": JSONL_SPEC,
            "items.jsonl": '{"id": "a", "input": 1, "output": "x"}\n{"id": "a", "input": 2, "output": "y"}\n',
        },
        ["items.jsonl:2"],
        ["`a` is already used at line 1"],
        [],
    ),
    "an item without an id named like another's id": (
        {
            "evalgate.yaml": JSONL_SPEC,
            # results and reports call an item without an id `item-N`: here both would be `item-2`
            "items.jsonl": '{"id": "item-2", "input": 1, "output": "x"}\n{"input": 2, "output": "y"}\n',
        },
        ["items.jsonl:2"],
        ["this item has no id, so it is `item-2`, the id of the item at line 1"],
        [],
    ),
    "a key YAML reads as a boolean": (
        {
            "evalgate.yaml": """\
                version: 1
                data: [{input: a, output: b}]
                judge:
                  model: m
                  1: x
                gates:
                  - type: no_tool_errors
                yes: 1
                """,
        },
        ["evalgate.yaml:5", "evalgate.yaml:8"],
        ["judge: the key `1` is read as 1, not as a name; quote it: '1':",
         "the key `yes` is read as true, not as a name; quote it: 'yes':"],
        ["[1]", "Keys should be strings"],
    ),
    "a key YAML reads as no name, where any value goes": (
        {
            "evalgate.yaml": """\
                version: 1
                data: [{input: a, output: '{"no": "x"}', metadata: {1: kept}}]
                gates:
                  - type: json_schema
                    schema:
                      type: object
                      properties:
                        no: {type: number}
                  - type: tool_args
                    tool: t
                    args: {on: 1}
                  - type: includes
                    value: a
                    2: b
                """,
        },
        ["evalgate.yaml:8", "evalgate.yaml:11", "evalgate.yaml:14"],
        ["gates[0].schema.properties: the key `no` is read as false, not as a name; quote it: 'no':",
         "gates[1].args: the key `on` is read as true, not as a name; quote it: 'on':",
         "gates[2]: the key `2` is read as 2, not as a name; quote it: '2':"],
        ["gates[2][2]", "Keys should be strings", "metadata"],
    ),
    "true and 1.0 where a whole number belongs": (
        {
            "evalgate.yaml": """\
                version: true
                data: [{input: a, output: b}]
                concurrency: true
                max_errors: 1.0
                gates:
                  - type: no_tool_errors
                """,
        },
        ["evalgate.yaml:1", "evalgate.yaml:3", "evalgate.yaml:4"],
        ["version: write the number 1, not true", "concurrency: Input should be a valid integer",
         "max_errors: Input should be a valid integer"],
        [],
    ),
    "an empty item id": (
        {
            "evalgate.yaml": JSONL_SPEC,
            "items.jsonl": '{"id": "", "input": 1, "output": "x"}\n',
        },
        ["items.jsonl:1"],
        ["the id is empty; name the item or leave `id` out"],
        [],
    ),
    "empty inline data": (
        {
            "evalgate.yaml": """\
                version: 1
                data: []
                gates:
                  - type: no_tool_errors
                """
        },
        ["evalgate.yaml:2"],
        ["data set is empty"],
        [],
    ),
    "empty data file": (
        {
            "evalgate.yaml": JSONL_SPEC,
            "items.jsonl": "\n",
        },
        ["items.jsonl"],
        ["data set is empty"],
        [],
    ),
    "item with both input and turns": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                  - input: hi
                    turns:
                      - input: x
                        output: y
                gates:
                  - type: no_tool_errors
                """
        },
        ["evalgate.yaml:5"],
        ["exactly one of `input`, `inputs`, `turns`", "`input` and `turns`"],
        [],
    ),
    "item with none of input, inputs, turns": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - id: lonely
                    output: hello
                gates:
                  - type: no_tool_errors
                """
        },
        ["evalgate.yaml:3"],
        ["exactly one of", "none of them"],
        [],
    ),
    "bad JSONL line": (
        {
            "evalgate.yaml": JSONL_SPEC,
            "items.jsonl": '{"input": 1, "output": "x"}\n\n{"input": 2, output: "y"}\n',
        },
        ["items.jsonl:3"],
        ["invalid JSON"],
        [],
    ),
    "a JSONL line cut short, and an item pretty-printed over lines": (
        {
            "evalgate.yaml": RECORDED_JSONL_SPEC,
            "items.jsonl": '{"input": 1, "output": "x"\n{"input": 2, "output": "y"}\n{\n  "input": 3,\n'
                           '  "output": "z"\n}\n{"input": 4, output: "w"}\n',
        },
        ["items.jsonl:1", "items.jsonl:3", "items.jsonl:7"],
        ["items.jsonl:1: invalid JSON: Expecting ',' delimiter at the end of the line; JSONL holds one whole item "
         "on each line",
         "items.jsonl:3: invalid JSON: Expecting property name enclosed in double quotes at the end of the line",
         "items.jsonl:7: invalid JSON: Expecting property name enclosed in double quotes at column 14"],
        ["line 2 column 1", "(char "],
    ),
    "every bad JSONL line at once": (
        {
            "evalgate.yaml": RECORDED_JSONL_SPEC,
            # a recorded set is streamed: a bad line no longer ends the reading at the first
            "items.jsonl": '{"input": 1, "output": "x"}\n{not json\n{"input": 2, "output": "y"}\n'
                           '{"input": 3, "output": "z", "nope": 1}\n[1, 2\n' + "[" * 150 + "]" * 150 + "\n",
        },
        ["items.jsonl:2", "items.jsonl:4", "items.jsonl:5", "items.jsonl:6"],
        ["invalid JSON", "unknown key `nope`", "nested more than"],
        [],
    ),
    "unknown key in a JSONL item": (
        {
            "evalgate.yaml": JSONL_SPEC,
            "items.jsonl": '{"input": 1, "output": "x"}\n{"input": 2, "output": "y", "grund_truth": "z"}\n',
        },
        ["items.jsonl:2"],
        ["unknown key `grund_truth`", "did you mean `ground_truth`?"],
        [],
    ),
    "unknown key in a JSON item, with its line": (
        {
            "evalgate.yaml": """\
                version: 1
                data: items.json
                gates:
                  - type: no_tool_errors
                """,
            "items.json": '{"items": [\n  {"input": 1, "output": "x"},\n  {"input": 2, "output": "y",\n'
            '   "grund_truth": 3}\n]}\n',
        },
        ["items.json:4"],
        ["unknown key `grund_truth`", "did you mean `ground_truth`?"],
        [],
    ),
    "threshold that is not a number": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                scorers:
                  - type: includes
                    value: a
                    threshold: true
                """
        },
        ["evalgate.yaml:8"],
        ["should be a valid number or a mapping (got True)"],
        ["instance of Bounds"],
    ),
    "same id at a turn index with different thresholds": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - turns:
                      - input: hi
                        output: hello
                        scorers: [{type: includes, value: hello, threshold: 0.5}]
                  - turns:
                      - input: ho
                        output: hello
                        scorers: [{type: includes, value: hello, threshold: 0.7}]
                """
        },
        ["evalgate.yaml:10"],
        ["`includes:hello`", "share a threshold", "line 6"],
        [],
    ),
    "YAML syntax error": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                scorers:
                  - type: includes
                     value: [a
                """
        },
        ["evalgate.yaml:7"],
        ["invalid YAML"],
        [],
    ),
    "YAML syntax error in a data file": (
        {
            "evalgate.yaml": """\
                version: 1
                data: items.yaml
                gates:
                  - type: no_tool_errors
                """,
            "items.yaml": "- input: a\n  output: b\n- input: [c\n  output: d\n",
        },
        ["items.yaml:"],
        ["invalid YAML"],
        [],
    ),
    "JSON data file syntax error": (
        {
            "evalgate.yaml": """\
                version: 1
                data: items.json
                gates:
                  - type: no_tool_errors
                """,
            "items.json": '[\n  {"input": 1, "output": "x"},\n  {"input": 2 "output": "y"}\n]\n',
        },
        ["items.json:3"],
        ["invalid JSON"],
        [],
    ),
    "CSV row with a bad JSON column": (
        {
            "evalgate.yaml": """\
                version: 1
                data: items.csv
                gates:
                  - type: no_tool_errors
                """,
            "items.csv": 'input,output\nhi,hello\nho,"{""text"": oops}"\n',
        },
        ["items.csv:3"],
        ["column `output`"],
        [],
    ),
    "missing data file": (
        {
            "evalgate.yaml": """\
                version: 1
                name: x
                data: nope.jsonl
                gates:
                  - type: no_tool_errors
                """
        },
        ["evalgate.yaml:3"],
        ["nope.jsonl", "relative to the spec"],
        [],
    ),
    "no gates and no scorers": (
        {"evalgate.yaml": "version: 1\n" + ITEM},
        ["evalgate.yaml:"],
        ["no gates and no scorers"],
        [],
    ),
    "recorded item without output": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                  - input: ho
                gates:
                  - type: no_tool_errors
                """
        },
        ["evalgate.yaml:5"],
        ["recorded target needs `output`"],
        [],
    ),
    "bad run format in a recorded output": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output:
                      text: hello
                      tool_calls:
                        - name: get_weather
                          status: lost
                gates:
                  - type: no_tool_errors
                """
        },
        ["evalgate.yaml:5"],
        ["status must be one of"],
        [],
    ),
    "wrong version": (
        {"evalgate.yaml": "version: 2\n" + ITEM + "gates:\n  - type: no_tool_errors\n"},
        ["evalgate.yaml:1"],
        ["version"],
        [],
    ),
    "bad regex": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                scorers:
                  - type: matches
                    pattern: "([a-z]"
                """
        },
        ["evalgate.yaml:6"],
        ["invalid regex"],
        [],
    ),
    "an invalid item does not take the next item's default id": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: {text: hello, cost_usd: "x"}
                  - input: hi2
                    output: hello
                  - input: hi3
                    output: hello
                gates:
                  - type: includes
                    value: hello
                """
        },
        ["evalgate.yaml:4"],
        ["`cost_usd` must be a number"],
        ["no id", "item-1", "evalgate.yaml:5", "evalgate.yaml:7"],
    ),
    "a number YAML reads as text says how to write it": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: {text: hello, cost_usd: 1e-6}
                gates:
                  - type: includes
                    value: hello
                """
        },
        ["evalgate.yaml:4"],
        ["`cost_usd` must be a number, got the string '1e-6'", "write 1.0e-06"],
        [],
    ),
    "python target that cannot be imported": (
        {
            "evalgate.yaml": python_target_spec("no_such_agent:answer")
        },
        ["evalgate.yaml:6"],
        ["cannot import `no_such_agent`"],
        [],
    ),
    "a misspelt function in a python target": (
        {
            "evalgate.yaml": python_target_spec("agent:answr"),
            "agent.py": "import json\n\n\ndef answer(text):\n    return text\n",
        },
        ["evalgate.yaml:6"],
        ["`agent` has no attribute `answr`; did you mean `answer`?"],
        [],
    ),
    "a misspelt method in a python target": (
        {
            "evalgate.yaml": python_target_spec("agent:Agent.anwser"),
            "agent.py": "class Agent:\n    @staticmethod\n    def answer(text):\n        return text\n",
        },
        ["evalgate.yaml:6"],
        ["`agent` has no attribute `Agent.anwser`; did you mean `Agent.answer`?"],
        [],
    ),
    "a misspelt price key would price those tokens at $0": (
        {
            "evalgate.yaml": "version: 1\n" + ITEM + dedent("""\
                judge:
                  model: gpt-4o
                  prices: {gpt-4o: {promt: 2.5, completion: 10}}
                scorers:
                  - type: includes
                    value: hello
                """)
        },
        ["evalgate.yaml:7"],
        ["judge.prices.gpt-4o.promt", "'prompt', 'completion', 'input' or 'output'"],
        [],
    ),
    "a negative or NaN price": (
        {
            "evalgate.yaml": "version: 1\n" + ITEM + dedent("""\
                target:
                  type: openai
                  model: m
                  prices:
                    m: {prompt: -1}
                    n: {completion: .nan}
                scorers:
                  - type: includes
                    value: hello
                """)
        },
        ["evalgate.yaml:9", "evalgate.yaml:10"],
        ["target.prices.m.prompt: Input should be greater than or equal to 0", "target.prices.n.completion"],
        [],
    ),
    "a USD budget over a judge with no price": (
        {
            "evalgate.yaml": "version: 1\n" + ITEM + dedent("""\
                judge:
                  model: local-llama
                  base_url: http://127.0.0.1:9/v1
                budget:
                  max_usd: 2
                scorers:
                  - type: includes
                    value: hello
                """)
        },
        ["evalgate.yaml:9"],
        ["budget.max_usd: the judge's model `local-llama` has no price",
         "add `judge.prices: {local-llama: {prompt: <USD per 1M tokens>, completion: <USD per 1M tokens>}}`",
         "`budget.max_tokens`"],
        [],
    ),
    "a USD budget over an openai target with no price": (
        {
            "evalgate.yaml": "version: 1\n" + ITEM + dedent("""\
                target:
                  type: openai
                  base_url: http://127.0.0.1:9/v1
                  model: gpt-4o
                  prices: {gpt-4o-mini: {prompt: 0.15, completion: 0.6}}
                budget: {max_usd: 2}
                scorers:
                  - type: includes
                    value: hello
                """)
        },
        ["evalgate.yaml:10"],
        ["budget.max_usd: the target's model `gpt-4o` has no price in `target.prices`"],
        [],
    ),
    "a rubric criterion that is no {description, required}": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                judge: {model: gpt-4o-mini, base_url: "http://127.0.0.1:9/v1", api_key_env: null}
                scorers:
                  - type: rubric
                    criteria:
                      - is polite
                      - description: [is short]
                      - {description: is kind, requird: false}
                """
        },
        ["evalgate.yaml:10: scorers[0].criteria[1].description: Input should be a valid string",
         "evalgate.yaml:11: scorers[0].criteria[2].requird: unknown key `requird`; did you mean `required`?"],
        [],
        ["validation error for", "input_value=", "errors.pydantic.dev"],
    ),
    "a section that is no mapping": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - input: hi
                    output: hello
                target: recorded
                budget: 5
                compare: {entries: {includes:a: 0.1}}
                scorers:
                  - type: includes
                    value: a
                """
        },
        ["evalgate.yaml:5: target: Input should be a mapping (got 'recorded')",
         "evalgate.yaml:6: budget: Input should be a mapping (got 5)",
         "evalgate.yaml:7: compare.entries.includes:a: Input should be a mapping (got 0.1)"],
        [],
        ["instance of", "object to extract fields", "BudgetSpec", "CompareEntrySpec"],
    ),
    "a turn that is no mapping": (
        {
            "evalgate.yaml": """\
                version: 1
                data:
                  - turns:
                      - hi
                scorers:
                  - type: includes
                    value: a
                """
        },
        ["evalgate.yaml:4: data[0].turns[0]: Input should be a mapping (got 'hi')"],
        [],
        ["instance of", "Turn"],
    ),
    "spec is not a mapping": (
        {"evalgate.yaml": "- just\n- a list\n"},
        ["evalgate.yaml:1"],
        ["`version: 1`"],
        [],
    ),
}


def _write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(dedent(text), encoding="utf-8")


# `run` shares `validate`'s loading path: a few cases check it too.
RUN_TOO = [
    "typo'd key suggests the closest",
    "a USD budget over a judge with no price",
    "bad JSONL line",
    "missing data file",
    "python target that cannot be imported",
]


RUNS = [(c, "validate") for c in CASES] + [(c, "run") for c in RUN_TOO]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], CliResult]:
    """Every case's CLI run, started a few at a time: each is a fresh interpreter, mostly start-up."""

    def one(run: tuple[str, str]) -> CliResult:
        root = tmp_path_factory.mktemp("spec")
        _write_files(root, CASES[run[0]][0])
        return run_cli(run[1], "evalgate.yaml", cwd=root)

    tmp_path_factory.getbasetemp()  # made once here: four threads making it at once would make four
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(RUNS, pool.map(one, RUNS), strict=True))


@pytest.mark.parametrize(("case", "command"), RUNS)
def test_spec_error(case: str, command: str, outcomes: dict[tuple[str, str], CliResult]) -> None:
    _, locations, fragments, forbidden = CASES[case]
    result = outcomes[(case, command)]
    assert result.code == 2, result.output
    assert "Traceback" not in result.output
    for location in locations:
        assert location in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    for fragment in forbidden:
        assert fragment not in result.stderr, result.stderr
    assert "nothing was run" in result.stderr


def test_missing_spec_file_exits_2(tmp_path: Path) -> None:
    result = run_cli("run", "absent.yaml", cwd=tmp_path)
    assert result.code == 2
    assert "absent.yaml" in result.stderr
    assert "Traceback" not in result.output


def test_default_spec_is_evalgate_yaml(tmp_path: Path) -> None:
    result = run_cli("run", cwd=tmp_path)
    assert result.code == 2
    assert "evalgate.yaml" in result.stderr
    assert "Traceback" not in result.output


def test_unknown_option_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("run", "--fail-on", "sometimes", cwd=tmp_path)
    assert result.code == 2
    assert "Traceback" not in result.output


def test_errors_name_the_path_relative_to_cwd(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "spec.yaml").write_text("version: 1\n" + ITEM + "gates:\n  - type: nope\n")
    result = run_cli("validate", "evals/spec.yaml", cwd=tmp_path)
    assert result.code == 2
    assert "evals/spec.yaml:6" in result.stderr


def test_spec_needs_exactly_one_of_agent_or_workflow(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{input: hi}]\ntarget:\n  type: mastra\n  url: http://127.0.0.1:9\n"
        "gates: [{type: used_no_tools}]\n")
    result = run_cli("validate", cwd=tmp_path)
    assert result.code == 2 and "evalgate.yaml:4" in result.stderr
    assert "exactly one of `agent" in result.stderr and "Traceback" not in result.stderr


def test_max_cost_over_a_model_with_no_price_is_refused(tmp_path: Path) -> None:
    """`--max-cost` with a judge the price tables do not know: its calls would count as $0, so the
    cap would not hold; a token budget alone is fine."""
    (tmp_path / "evalgate.yaml").write_text("version: 1\n" + ITEM + dedent("""\
        judge: {model: local-llama, base_url: "http://127.0.0.1:9/v1"}
        budget: {max_tokens: 1000}
        scorers:
          - type: includes
            value: hello
        """))
    refused = run_cli("run", "evalgate.yaml", "--max-cost", "1", cwd=tmp_path)
    assert refused.code == 2 and "Traceback" not in refused.output
    assert "--max-cost: the judge's model `local-llama` has no price" in refused.stderr
    assert run_cli("run", "evalgate.yaml", cwd=tmp_path).code == 0


@pytest.mark.parametrize(("value", "message"), [(".inf", "finite number"), ("1e10", "less than or equal to 86400")])
def test_a_mastra_timeout_no_clock_can_hold_is_a_spec_error(tmp_path: Path, value: str, message: str) -> None:
    """Every item used to error with "the request could not be sent (OverflowError)": an outage, exit 4."""
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{input: hi}]\ntarget:\n  type: mastra\n  agent: weather\n  url: http://127.0.0.1:9\n"
        f"  timeout_s: {value}\n  retries: {{attempts: 1}}\ngates: [{{type: used_no_tools}}]\n")
    result = run_cli("run", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "evalgate.yaml:7: target.timeout_s: Input should be" in result.stderr and message in result.stderr
    assert "OverflowError" not in result.output and "nothing was run" in result.stderr


@pytest.mark.parametrize(("setting", "where"), [
    ('data: "items\\ud800.jsonl"', "data: the text"),  # was an internal error (exit 3) with -o
    ('target: {type: command, run: "python3 agent\\ud800.py"}', "target.run: the text"),  # every item errored
    ('target: {type: command, run: [python3, agent.py], env: {"K\\udc00": v}}', "target.env: a key"),
    ('target: {type: openai, model: m, base_url: "http://127.0.0.1:9/v1", api_key_env: "K\\ud800"}',
     "target.api_key_env: the text"),  # was an internal error (exit 3)
])
def test_half_a_surrogate_pair_in_the_spec_is_a_spec_error_at_its_line(tmp_path: Path, setting: str,
                                                                       where: str) -> None:
    (tmp_path / "evalgate.yaml").write_text(f"version: 1\ngates: [{{type: no_tool_errors}}]\n{setting}\n"
                                            + ("" if setting.startswith("data") else "data: [{input: hi}]\n"))
    result = run_cli("run", "evalgate.yaml", "-o", "out.json", cwd=tmp_path)
    assert result.code == 2, result.output
    assert f"evalgate.yaml:3: {where} holds \\u" in result.stderr, result.stderr
    assert "half of a UTF-16 surrogate pair" in result.stderr and "nothing was run" in result.stderr
    assert "internal error" not in result.output and "UnicodeEncodeError" not in result.output


def test_half_a_surrogate_pair_in_inline_items_is_kept(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text('version: 1\ndata: [{input: "a\\ud800", output: "b\\udc00"}]\n'
                                            "gates: [{type: includes, value: b}]\n")
    result = run_cli("run", "evalgate.yaml", "-o", "out.json", cwd=tmp_path)
    assert result.code == 0, result.output


def test_half_a_surrogate_pair_in_a_checks_value_is_checked_as_mastra_checks_it(tmp_path: Path) -> None:
    # A JavaScript string may hold one, and Mastra's `includes` finds it in the output: same answer here.
    (tmp_path / "evalgate.yaml").write_text('version: 1\ndata: [{input: a, output: "b\\ud83d"}, {input: a, '
                                            'output: b}]\nscorers: [{type: includes, value: "\\ud83d"}]\n')
    result = run_cli("run", "evalgate.yaml", "-o", "out.json", cwd=tmp_path)
    assert result.code == 0, result.output
    items = json.loads((tmp_path / "out.json").read_text())["items"]
    assert [i["scores"]["includes:\ud83d"] for i in items] == [1.0, 0.0]
    # a check's file is a file name all the same
    (tmp_path / "evalgate.yaml").write_text('version: 1\ndata: [{input: a, output: b}]\n'
                                            'gates: [{type: json_schema, schema_file: "s\\ud800.json"}]\n')
    result = run_cli("run", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2 and "evalgate.yaml:3: gates[0].schema_file: the text holds \\ud800" in result.stderr


HUGE = str(10**400)  # YAML reads it as an int: no float can hold it


@pytest.mark.parametrize(("lines", "command", "where"), [
    (f"judge: {{model: gpt-4o-mini, max_tokens: {HUGE}}}\nscorers: [{{type: faithfulness}}]", "estimate",
     "judge.max_tokens"),
    (f"gates: [{{type: max_tool_calls, max: {HUGE}}}]", "run", "gates[0].max"),
    (f"scorers: [{{type: trajectory_accuracy, steps: [x], max_steps: {HUGE}}}]", "run", "scorers[0].max_steps"),
])
def test_a_number_past_the_largest_float_is_a_spec_error_at_its_line(tmp_path: Path, lines: str, command: str,
                                                                      where: str) -> None:
    """Each was an internal error (exit 3): OverflowError: int too large to convert to float."""
    (tmp_path / "evalgate.yaml").write_text(f"version: 1\ndata: [{{input: a, output: b}}]\n{lines}\n")
    result = run_cli(command, "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert f"evalgate.yaml:3: {where}: the number is too large to use (over 1.8e308)" in result.stderr
    assert "internal error" not in result.output and "OverflowError" not in result.output


def test_a_huge_number_in_an_item_is_kept(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(f"version: 1\ndata: [{{input: {HUGE}, output: b}}]\n"
                                            "gates: [{type: includes, value: b}]\n")
    assert run_cli("run", "evalgate.yaml", cwd=tmp_path).code == 0


@pytest.mark.parametrize(("value", "said"), [
    ("!!bool maybe", "cannot read 'maybe' as bool"),
    ('!!int ""', "cannot read '' as int"),
    ('!!float ""', "cannot read '' as float"),
    ("!!timestamp soon", "cannot read 'soon' as timestamp"),
    ("!!set [a, b]", "expected a mapping node, but found sequence"),
    ("!!map [a]", "expected a mapping node, but found sequence"),
])
@pytest.mark.parametrize("where", ["evalgate.yaml", "items.yaml"])
def test_a_tagged_value_yaml_cannot_read_is_a_spec_error_at_its_line(tmp_path: Path, value: str, said: str,
                                                                      where: str) -> None:
    """Each was an internal error (exit 3): KeyError, IndexError, AttributeError or TypeError from inside PyYAML."""
    item = f"- input: hi\n  output: {{text: hello, latency_ms: {value}}}\n"
    if where == "items.yaml":
        (tmp_path / "items.yaml").write_text("# one item\n" + item)
        data = "data: items.yaml\n"
    else:
        data = "data:\n" + textwrap.indent(item, "  ")
    (tmp_path / "evalgate.yaml").write_text(f"version: 1\n{data}gates: [{{type: no_tool_errors}}]\n")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    line = 3 if where == "items.yaml" else 4
    assert f"{where}:{line}: invalid YAML: {said}" in result.stderr
    assert "internal error" not in result.output and "Traceback" not in result.output


LOOP = "Too many levels of symbolic links"
LINK = "is a symbolic link, not a regular file; evalgate never writes through a link"  # the one writer's refusal


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
@pytest.mark.parametrize(("args", "said", "why"), [
    (["validate", "evalgate.yaml"], "evalgate.yaml:2: data: cannot read the data file `loop.jsonl`", LOOP),
    (["run", "evalgate.yaml", "-o", "out.json"], "evalgate.yaml:2: data: cannot read the data file `loop.jsonl`",
     LOOP),
    (["run", "ok.yaml", "-o", "loop.json"], "evalgate run: error: cannot write the results", LINK),
    (["run", "ok.yaml", "-o", "out.json", "--junit", "loop.json"], "evalgate run: error: cannot write the JUnit XML",
     LINK),
])
def test_a_symlink_loop_is_a_usage_error_naming_it(tmp_path: Path, args: list[str], said: str, why: str) -> None:
    """Each was an internal error (exit 3): RuntimeError: Symlink loop, resolving the path to show or compare it."""
    for name in ("loop", "loop.jsonl", "loop.json"):
        (tmp_path / name).symlink_to(tmp_path / f"{name}.back")
        (tmp_path / f"{name}.back").symlink_to(tmp_path / name)
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: loop.jsonl\ngates: [{type: includes, value: a}]\n")
    (tmp_path / "ok.yaml").write_text("version: 1\ndata: [{input: a, output: a}]\ngates: [{type: no_tool_errors}]\n")
    result = run_cli(*args, cwd=tmp_path)
    assert result.code == 2, result.output
    assert said in result.stderr and why in result.stderr and "loop" in result.stderr, result.stderr
    assert "internal error" not in result.output


@pytest.mark.parametrize(("serve", "message"), [
    ('""', "the command is empty"),  # every judged item errored: IndexError: list index out of range
    ("[]", "the command is empty"),
    ("\"'unclosed\"", "cannot split the command (no closing quotation)"),
])
def test_a_judge_serve_command_that_cannot_start_is_a_spec_error_at_its_line(tmp_path: Path, serve: str,
                                                                             message: str) -> None:
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{input: a, output: b}]\njudge:\n  model: m\n  api_key_env: null\n"
        f"  serve: {serve}\nscorers: [{{type: rubric, criterion: polite}}]\n")
    result = run_cli("run", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert f"evalgate.yaml:6: judge.serve: {message}" in result.stderr, result.stderr
    assert "IndexError" not in result.output and "nothing was run" in result.stderr


@pytest.mark.parametrize(("setting", "said"), [
    ("  tls:\n    ca_bundle: junk.pem\n",
     "evalgate.yaml:7: target.tls.ca_bundle junk.pem: not a readable PEM CA bundle"),
    ("  conversation: session\n", "evalgate.yaml:6: target.conversation: session needs `session:`"),
])
def test_a_target_setting_refused_when_the_target_is_built_is_said_at_its_own_line(tmp_path: Path, setting: str,
                                                                                    said: str) -> None:
    # it was said at `type:` (line 4), as `target.type: tls.ca_bundle ...`: not the setting to change
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{input: a}]\ntarget:\n  type: http\n  url: http://127.0.0.1:9/agent\n"
        f"{setting}gates: [{{type: no_tool_errors}}]\n")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert said in result.stderr, result.stderr
    assert "target.type" not in result.stderr


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_judge_ca_bundle_that_is_no_bundle_is_a_spec_error_at_its_line(tmp_path: Path, command: str) -> None:
    # the judge connects at its first call: every judged item errored and `run` was an outage (exit 4)
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{input: a, output: b}]\njudge:\n  model: m\n  base_url: http://127.0.0.1:9/v1\n"
        "  api_key_env: null\n  tls:\n    ca_bundle: junk.pem\nscorers: [{type: rubric, criterion: polite}]\n")
    result = run_cli(command, "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "evalgate.yaml:8: judge.tls.ca_bundle" in result.stderr and "not a readable PEM CA bundle" in result.stderr
    assert "nothing was run" in result.stderr and "errored" not in result.output


def test_a_problem_quoting_a_value_pages_long_is_cut_in_its_middle(tmp_path: Path) -> None:
    # `unknown type` and duplicate ids quoted the whole value: one 100 KB line hid the file:line and the advice
    long = "x" * 100_000
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: [{input: a, output: b}]\n"
        f"gates: [{{type: includes, value: a, id: {long}}}, {{type: includes, value: b, id: {long}}}]\n")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(line) < 2100, len(line)
    assert line.startswith("error: evalgate.yaml:3: gates[1]: the id `xxx")
    assert "characters left out" in line and line.endswith("is already used at line 3; give this entry its own `id:`")


@pytest.mark.parametrize(("where", "url", "message"), [
    ("target", "notaurl", "target.url: not an http(s) URL"),  # every item: "not an http(s) URL: notaurl"
    ("target", "'http://[::1'", "target.url: not a URL (invalid ipv6 url)"),  # "ValueError: Invalid IPv6 URL"
    ("target", "'http://127.0.0.1:99999/'", "target.url: not a URL (port out of range 0-65535)"),
    ("target", "'http://a b/'", "target.url: the URL holds a space"),
    ("judge", "'http://[::1'", "judge.base_url: not a URL (invalid ipv6 url)"),
])
def test_a_url_no_request_can_go_to_is_a_spec_error_at_its_line(tmp_path: Path, where: str, url: str,
                                                                message: str) -> None:
    setting = (f"target:\n  type: http\n  url: {url}\n" if where == "target" else
               f"judge:\n  model: m\n  base_url: {url}\n")
    (tmp_path / "evalgate.yaml").write_text(
        f"version: 1\ndata: [{{input: a, output: b}}]\n{setting}  retries: {{attempts: 1}}\n"
        "scorers: [{type: rubric, criterion: polite}]\n")
    result = run_cli("run", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert f"evalgate.yaml:5: {message}" in result.stderr, result.stderr
    assert "errored" not in result.output and "nothing was run" in result.stderr


@pytest.mark.parametrize("name", ['"a:b"', '""', '"é"'])
@pytest.mark.parametrize("target", ["url: http://127.0.0.1:9/agent", "base_url: http://127.0.0.1:9/v1"],
                         ids=["http", "openai"])
def test_a_header_name_no_request_can_carry_is_a_spec_error_at_its_line(tmp_path: Path, name: str,
                                                                        target: str) -> None:
    # every item errored: "the request could not be sent (ValueError)" or "(UnicodeEncodeError)", exit 4
    kind = "http" if target.startswith("url") else "openai\n  model: m\n  api_key_env: null"
    (tmp_path / "evalgate.yaml").write_text(
        f"version: 1\ndata: [{{input: a}}]\ntarget:\n  type: {kind}\n  {target}\n  retries: {{attempts: 1}}\n"
        f"  headers:\n    {name}: x\ngates: [{{type: no_tool_errors}}]\n")
    result = run_cli("run", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "target.headers: " in result.stderr and "is not a header name" in result.stderr, result.stderr
    assert "could not be sent" not in result.output and "nothing was run" in result.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="needs a FIFO and /dev/zero")
@pytest.mark.parametrize(("schema_file", "said"), [
    ("/dev/zero", "the schema_file is a device, not a regular file"),  # was read until memory ran out
    ("pipe.json", "the schema_file is a FIFO (named pipe), not a regular file"),  # waited for ever for a writer
])
def test_a_schema_file_that_is_no_regular_file_is_a_spec_error_not_a_hang(tmp_path: Path, schema_file: str,
                                                                          said: str) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: [{input: a, output: b}]\n"
                                            f"scorers: [{{type: json_schema, schema_file: {schema_file}}}]\n")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path, timeout=30)
    assert result.code == 2, result.output
    assert f"evalgate.yaml:3: scorers[0]: schema_file '{schema_file}': {said}" in result.stderr, result.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
@pytest.mark.parametrize(("where", "setting"), [("target", "ca_bundle"), ("target", "client_cert"),
                                                ("judge", "ca_bundle")])
def test_a_tls_file_that_is_a_fifo_is_a_spec_error_not_a_hang(tmp_path: Path, where: str, setting: str) -> None:
    # OpenSSL read the FIFO until a writer came: `evalgate validate` waited for ever
    os.mkfifo(tmp_path / "ca.pem")
    tls = f"  base_url: http://127.0.0.1:9/v1\n  tls:\n    {setting}: ca.pem\n"
    section = (f"target:\n  type: openai\n  model: m\n{tls}gates: [{{type: no_tool_errors}}]\n" if where == "target"
               else f"judge:\n  model: m\n{tls}scorers: [{{type: rubric, criterion: polite}}]\n")
    (tmp_path / "evalgate.yaml").write_text(f"version: 1\ndata: [{{input: a, output: b}}]\n{section}")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path, timeout=30)
    assert result.code == 2, result.output
    line = 8 if where == "target" else 7
    assert (f"evalgate.yaml:{line}: {where}.tls.{setting} " in result.stderr
            and "is a FIFO (named pipe), not a regular file" in result.stderr), result.stderr


@pytest.mark.parametrize("where", ["target", "judge"])
@pytest.mark.parametrize("name", ['""', '"a=b"'])
def test_an_api_key_env_that_names_no_variable_is_a_spec_error_at_its_line(tmp_path: Path, where: str,
                                                                           name: str) -> None:
    # `""` silently meant "no key"; `"a=b"` errored every item ("environment variable a=b is not set").
    section = (f"target: {{type: openai, model: m, base_url: 'http://127.0.0.1:9/v1',\n  api_key_env: {name}}}\n"
               if where == "target" else
               f"judge: {{model: m, base_url: 'http://127.0.0.1:9/v1',\n  api_key_env: {name}}}\n")
    (tmp_path / "evalgate.yaml").write_text(f"version: 1\ndata: [{{input: a, output: b}}]\n{section}"
                                            "gates: [{type: no_tool_errors}]\n")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert f"evalgate.yaml:4: {where}.api_key_env: " in result.stderr
    assert "is not an environment variable name" in result.stderr


def test_a_cache_ttl_that_is_not_a_number_of_seconds_is_a_spec_error(tmp_path: Path) -> None:
    # `.nan` compared as never expiring, without a word
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: [{input: a}]\ntarget: {type: openai, model: m, "
                                            "base_url: 'http://127.0.0.1:9/v1',\n  cache: {ttl: .nan}}\n"
                                            "gates: [{type: no_tool_errors}]\n")
    result = run_cli("validate", "evalgate.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "evalgate.yaml:4: target.cache.ttl: ttl must be positive" in result.stderr


RELATIVE_FUNCTION = {
    "target": ("target:\n  type: python\n  function: {ref}\ngates:\n  - type: no_tool_errors\n", 6, "answer"),
    "scorer": ("target: {{type: recorded}}\nscorers:\n  - type: python\n    id: mine\n    function: {ref}\n", 8,
               "score"),
}


@pytest.mark.parametrize("where", list(RELATIVE_FUNCTION))
@pytest.mark.parametrize(("module", "fixed"), [(".agent", "agent"), ("..tools.agent", "tools.agent")])
def test_a_relative_module_in_function_is_a_spec_error_at_its_line(tmp_path: Path, where: str, module: str,
                                                                   fixed: str) -> None:
    # `function: ".agent:answer"` got importlib's own words: "importing `.agent` raised TypeError: the
    # 'package' argument is required to perform a relative import", and a scorer's at the entry's line.
    (tmp_path / "tools").mkdir()
    for folder in (tmp_path, tmp_path / "tools"):
        (folder / "agent.py").write_text("def answer(question):\n    return 'hi'\n\n\n"
                                         "def score(item, run):\n    return 1.0\n")
    section, line, name = RELATIVE_FUNCTION[where]
    spec = "version: 1\ndata:\n  - {{input: hi, output: hi}}\n" + section
    (tmp_path / "evalgate.yaml").write_text(spec.format(ref=f'"{module}:{name}"'))
    label = "target.function" if where == "target" else "scorers[0].function"
    for command in ("validate", "run"):
        result = run_cli(command, "evalgate.yaml", cwd=tmp_path)
        assert result.code == 2, result.output
        assert f"evalgate.yaml:{line}: {label}: `{module}` is a relative module name" in result.stderr, result.stderr
        assert "write the module's full dotted name" in result.stderr and f"e.g. `{fixed}:{name}`" in result.stderr
        assert "'package' argument" not in result.output and "Traceback" not in result.output
    # what the message says to write works
    (tmp_path / "evalgate.yaml").write_text(spec.format(ref=f'"{fixed}:{name}"'))
    assert run_cli("validate", "evalgate.yaml", cwd=tmp_path).code == 0
