"""The quick checks, exactly as CONTRACT section 5 defines them (Mastra's `checks`)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalgate import checks
from evalgate.load.items import Item
from evalgate.replies import Run, ToolCall
from evalgate.scorers.base import Scorer
from evalgate.scorers.checks import dice

ITEM = Item(input="q")


def score(scorer: Scorer, run: Run) -> float:
    result = scorer(ITEM, run)
    return result[0] if isinstance(result, tuple) else result


def text(*texts: str) -> Run:
    return Run(texts=list(texts))


def calls(*specs: str | ToolCall) -> Run:
    return Run(texts=["ok"], tool_calls=[ToolCall(s) if isinstance(s, str) else s for s in specs])


# ---- text checks ----


@pytest.mark.parametrize(
    ("scorer", "run", "expected"),
    [
        (checks.includes("brooklyn"), text("It is sunny in Brooklyn."), 1.0),
        (checks.includes("brooklyn", ignore_case=False), text("It is sunny in Brooklyn."), 0.0),
        (checks.includes("Brooklyn", ignore_case=False), text("It is sunny in Brooklyn."), 1.0),
        (checks.includes("Paris"), text("It is sunny in Brooklyn."), 0.0),
        (checks.excludes("paris"), text("It is sunny in Brooklyn."), 1.0),
        (checks.excludes("BROOKLYN"), text("It is sunny in Brooklyn."), 0.0),
        (checks.excludes("BROOKLYN", ignore_case=False), text("It is sunny in Brooklyn."), 1.0),
        (checks.equals("hello"), text("Hello"), 1.0),
        (checks.equals("hello", ignore_case=False), text("Hello"), 0.0),
        # equals never trims
        (checks.equals("Hello"), text("Hello "), 0.0),
        (checks.equals("Hello"), text(" Hello"), 0.0),
        (checks.equals("Hello"), text("Hello\n"), 0.0),
    ],
)
def test_text_checks(scorer: Scorer, run: Run, expected: float) -> None:
    assert score(scorer, run) == expected


@pytest.mark.parametrize(
    ("scorer", "expected_empty", "expected_blank"),
    [
        # "" occurs in every string, as in JavaScript's String.prototype.includes
        (checks.includes(""), 1.0, 1.0),
        (checks.includes(" "), 0.0, 1.0),
        (checks.includes("a"), 0.0, 0.0),
        (checks.excludes(""), 0.0, 0.0),
        (checks.excludes("a"), 1.0, 1.0),
        (checks.equals(""), 1.0, 0.0),
        (checks.equals("   "), 0.0, 1.0),
        (checks.matches("^$"), 1.0, 0.0),
        (checks.matches(r"\s*", exact=True), 1.0, 1.0),
        (checks.matches(r"\S"), 0.0, 0.0),
        # Dice: whitespace is removed first, so "" and "   " both equal "" (score 1)
        (checks.similarity(""), 1.0, 1.0),
        (checks.similarity("   "), 1.0, 1.0),
        (checks.similarity("ab"), 0.0, 0.0),
    ],
)
def test_empty_and_whitespace_only_text(scorer: Scorer, expected_empty: float, expected_blank: float) -> None:
    assert score(scorer, text("")) == expected_empty
    assert score(scorer, Run(texts=[])) == expected_empty  # no assistant message at all
    assert score(scorer, text("   ")) == expected_blank


def test_multiple_texts_join_with_space_for_includes_excludes_similarity() -> None:
    run = text("Hello", "World")
    assert score(checks.includes("o W"), run) == 1.0
    assert score(checks.includes("oW"), run) == 0.0
    assert score(checks.excludes("o W"), run) == 0.0
    assert score(checks.excludes("oW"), run) == 1.0
    # similarity removes whitespace, so the joiner cannot matter there
    assert score(checks.similarity("HelloWorld"), run) == 1.0


def test_multiple_texts_join_with_nothing_for_equals_and_matches() -> None:
    run = text("Hello", "World")
    assert score(checks.equals("HelloWorld"), run) == 1.0
    assert score(checks.equals("Hello World"), run) == 0.0
    assert score(checks.matches("oW"), run) == 1.0
    assert score(checks.matches("o W"), run) == 0.0
    assert score(checks.matches("Hello.World", exact=True), run) == 0.0
    assert score(checks.matches("HelloWorld", exact=True), run) == 1.0


@pytest.mark.parametrize(
    ("pattern", "exact", "flags", "subject", "expected"),
    [
        (r"\d+F", False, "", "It is 72F.", 1.0),
        (r"\d+F", True, "", "It is 72F.", 0.0),
        (r"It is \d+F\.", True, "", "It is 72F.", 1.0),
        # exact covers the whole alternation (Mastra's `^a|b$` would match "ab" and "xb")
        ("a|b", True, "", "a", 1.0),
        ("a|b", True, "", "b", 1.0),
        ("a|b", True, "", "ab", 0.0),
        ("a|b", True, "", "xb", 0.0),
        ("a|b", True, "", "ax", 0.0),
        ("a|b", False, "", "xbx", 1.0),
        ("hello", False, "", "HELLO", 0.0),
        ("hello", False, "i", "HELLO", 1.0),
        ("hello", True, "i", "HELLO", 1.0),
        ("^b", False, "", "a\nb", 0.0),
        ("^b", False, "m", "a\nb", 1.0),
        ("a.b", False, "", "a\nb", 0.0),
        ("a.b", False, "s", "a\nb", 1.0),
        ("HELLO", False, "gi", "hello", 1.0),  # g changes nothing (Mastra reuses its RegExp; evalgate does not)
        ("x", False, "u", "x", 1.0),
    ],
)
def test_matches(pattern: str, exact: bool, flags: str, subject: str, expected: float) -> None:
    assert score(checks.matches(pattern, exact=exact, flags=flags), text(subject)) == expected


@pytest.mark.parametrize(("pattern", "flags"), [("(", ""), ("a", "x"), ("a", "y")])
def test_matches_rejects_bad_pattern_or_flag(pattern: str, flags: str) -> None:
    with pytest.raises(ValueError):
        checks.matches(pattern, flags=flags)


# ---- similarity (Dice on character bigrams, whitespace removed) ----


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # worked by hand: bigrams and their multiset intersection
        ("night", "nacht", 2 * 1 / (5 + 5 - 2)),  # ni ig gh ht / na ac ch ht -> {ht}
        ("abcd", "abce", 2 * 2 / (4 + 4 - 2)),  # ab bc cd / ab bc ce -> {ab, bc}
        ("aaaa", "aa", 2 * 1 / (4 + 2 - 2)),  # aa aa aa / aa -> multiset, one aa
        ("aaa", "aaa", 1.0),
        ("ab", "ba", 0.0),
        ("hello world", "helloworld", 1.0),  # whitespace removed, then equal
        ("a b", "ab", 1.0),
        ("", "", 1.0),
        ("  ", "\t\n", 1.0),
        # 1-character strings: equal -> 1, else 0 (no bigram)
        ("a", "a", 1.0),
        ("a", "b", 0.0),
        ("a", "ab", 0.0),
        ("ab", "a", 0.0),
        ("a", "", 0.0),
        (" a ", "a", 1.0),
    ],
)
def test_dice_known_pairs(a: str, b: str, expected: float) -> None:
    assert dice(a, b) == expected
    assert dice(b, a) == expected


def test_similarity_case_and_cutoff() -> None:
    assert score(checks.similarity("NIGHT"), text("nacht")) == 0.25
    assert score(checks.similarity("NIGHT", ignore_case=False), text("nacht")) == 0.0
    assert score(checks.similarity("ABC", ignore_case=False), text("ABC")) == 1.0
    # cutoff: 1 if the coefficient >= cutoff (inclusive), else 0
    assert score(checks.similarity("night", cutoff=0.25), text("nacht")) == 1.0
    assert score(checks.similarity("night", cutoff=0.26), text("nacht")) == 0.0
    assert score(checks.similarity("night", cutoff=0.0), text("zzzz")) == 1.0


@given(st.text(max_size=30), st.text(max_size=30))
def test_dice_is_symmetric_and_in_unit_interval(a: str, b: str) -> None:
    value = dice(a, b)
    assert 0.0 <= value <= 1.0
    assert value == dice(b, a)


@given(st.text(max_size=30))
def test_dice_of_a_string_with_itself_is_one(a: str) -> None:
    assert dice(a, a) == 1.0


@given(st.text(alphabet="ab cAB\U0001f600", max_size=25), st.text(alphabet="abc AB\U0001f600", max_size=12))
def test_similarity_against_a_value_scores_as_dice_does(output: str, value: str) -> None:
    # The scorer counts shared bigrams by a set when the value's bigrams are distinct, else by the
    # multiset loop; small alphabets make both cases (and repeated bigrams in the output) common.
    for ignore_case in (True, False):
        expected = dice(output.lower(), value.lower()) if ignore_case else dice(output, value)
        assert score(checks.similarity(value, ignore_case=ignore_case), text(output)) == expected


LONG_VALUE = "".join(chr(0x4E00 + i) for i in range(checks.FEW_BIGRAMS + 16))  # its bigrams each once, many


@given(st.text(alphabet=LONG_VALUE[:24] + "ab \U0001f600", max_size=60))
def test_similarity_against_a_value_of_many_bigrams_scores_as_dice_does(output: str) -> None:
    # Past FEW_BIGRAMS the value's bigrams are not each searched for in the output: the output's are made
    assert score(checks.similarity(LONG_VALUE), text(output)) == dice(output, LONG_VALUE)
    assert score(checks.similarity(LONG_VALUE[:20]), text(output)) == dice(output, LONG_VALUE[:20])


# ---- tool-call checks ----

PENDING = ToolCall("get_weather", {"city": "Paris"}, status="pending")
ERRORED = ToolCall("get_weather", {"city": "Paris"}, error="timeout")
STATUS_ERROR = ToolCall("get_weather", status="error")
OK = ToolCall("get_weather", {"city": "Paris"}, result={"temp": 60}, status="ok")
EMPTY_ERROR = ToolCall("get_weather", error="")


@pytest.mark.parametrize(
    ("scorer", "run", "expected"),
    [
        (checks.called_tool("get_weather"), calls("get_weather"), 1.0),
        (checks.called_tool("get_weather"), calls("search"), 0.0),
        (checks.called_tool("get_weather"), calls(), 0.0),
        # every call counts, whatever its outcome
        (checks.called_tool("get_weather"), calls(PENDING), 1.0),
        (checks.called_tool("get_weather"), calls(ERRORED), 1.0),
        (checks.called_tool("get_weather", times=2), calls("get_weather", "search"), 0.0),
        (checks.called_tool("get_weather", times=2), calls("get_weather", ERRORED), 1.0),
        (checks.called_tool("get_weather", times=2), calls("get_weather", "x", "get_weather", "y"), 1.0),
        (checks.did_not_call("search"), calls("get_weather"), 1.0),
        (checks.did_not_call("search"), calls("get_weather", "search"), 0.0),
        (checks.did_not_call("search"), calls(ToolCall("search", status="pending")), 0.0),
        (checks.did_not_call("search"), calls(), 1.0),
        (checks.tool_order(["a", "b"]), calls("a", "b"), 1.0),
        (checks.tool_order(["a", "b"]), calls("a", "x", "y", "b"), 1.0),
        (checks.tool_order(["a", "b"]), calls("b", "a"), 0.0),
        (checks.tool_order(["a", "b"]), calls("b", "a", "b"), 1.0),
        (checks.tool_order(["a", "a"]), calls("a"), 0.0),
        (checks.tool_order(["a", "a"]), calls("a", "b", "a"), 1.0),
        (checks.tool_order(["a"]), calls(), 0.0),
        (checks.max_tool_calls(2), calls("a", "b"), 1.0),
        (checks.max_tool_calls(2), calls("a", "b", "c"), 0.0),
        (checks.max_tool_calls(0), calls(), 1.0),
        (checks.max_tool_calls(0), calls(PENDING), 0.0),
        (checks.used_no_tools(), calls(), 1.0),
        (checks.used_no_tools(), calls(PENDING), 0.0),
        (checks.no_tool_errors(), calls(), 1.0),
        (checks.no_tool_errors(), calls(OK, "search"), 1.0),
        (checks.no_tool_errors(), calls(EMPTY_ERROR), 1.0),  # an empty error is no error
        (checks.no_tool_errors(), calls(OK, PENDING), 0.0),  # called, no result came back
        (checks.no_tool_errors(), calls(OK, ERRORED), 0.0),
        (checks.no_tool_errors(), calls(STATUS_ERROR), 0.0),
    ],
)
def test_tool_checks(scorer: Scorer, run: Run, expected: float) -> None:
    assert score(scorer, run) == expected


def test_tool_args_needs_at_least_these_values() -> None:
    run = calls(ToolCall("get_weather", {"city": "Paris", "units": "C"}), ToolCall("search", {"q": "x"}))
    assert score(checks.tool_args("get_weather", {"city": "Paris"}), run) == 1.0
    assert score(checks.tool_args("get_weather", {"city": "Paris", "units": "C"}), run) == 1.0
    assert score(checks.tool_args("get_weather", {"city": "London"}), run) == 0.0
    assert score(checks.tool_args("get_weather", {"days": 3}), run) == 0.0
    assert score(checks.tool_args("search", {"city": "Paris"}), run) == 0.0


# ---- JSON checks ----


@pytest.mark.parametrize(
    ("subject", "expected"),
    [('{"a": 1}', 1.0), ('  [1, 2]\n', 1.0), ('```json\n{"a": 1}\n```', 1.0), ("{a: 1}", 0.0), ("", 0.0)],
)
def test_json_valid(subject: str, expected: float) -> None:
    assert score(checks.json_valid(), text(subject)) == expected


def test_json_nested_past_the_recursion_limit_is_the_checks_error_saying_so() -> None:
    # a RecursionError escaped the checks' `except ValueError`: the reason was Python's "maximum recursion
    # depth exceeded while decoding a JSON array from a unicode string"
    deep = text("[" * 5000 + "]" * 5000)
    for scorer in (checks.json_valid(), checks.json_schema(schema={"type": "array"})):
        with pytest.raises(ValueError, match="nests too deeply"):
            scorer(ITEM, deep)


def test_json_schema_reports_where_it_fails() -> None:
    schema = {"type": "object", "required": ["temp"], "properties": {"temp": {"type": "number"}}}
    scorer = checks.json_schema(schema=schema)
    assert score(scorer, text('{"temp": 72}')) == 1.0
    value, reason = scorer(ITEM, text('{"temp": "hot"}'))
    assert value == 0.0
    assert "temp" in reason
    assert score(scorer, text("not json")) == 0.0


@pytest.mark.parametrize(
    ("schema", "subject", "expected"),
    [
        # JSON Schema's regexes are ECMA-262 with `u`: \d is ASCII, \p{..} a property, $ the end of the text
        ({"properties": {"n": {"type": "string", "pattern": "^\\d+$"}}}, '{"n": "\u0663"}', 0.0),
        ({"properties": {"n": {"type": "string", "pattern": "^\\d+$"}}}, '{"n": "42"}', 1.0),
        ({"properties": {"n": {"type": "string", "pattern": "^a$"}}}, '{"n": "a\\n"}', 0.0),
        ({"properties": {"n": {"type": "string", "pattern": "^\\p{Lu}"}}}, '{"n": "\u00c4rger"}', 1.0),
        ({"patternProperties": {"^\\w+$": {}}, "additionalProperties": False}, '{"caf\u00e9": 1}', 0.0),
        ({"patternProperties": {"^\\w+$": {"type": "number"}}}, '{"ok": "x"}', 0.0),
        ({"patternProperties": {"^[a-z]+$": {}}, "unevaluatedProperties": False}, '{"ok": 1}', 1.0),
    ],
)
def test_json_schema_patterns_are_ecma_262(schema: dict, subject: str, expected: float) -> None:
    assert score(checks.json_schema(schema=schema), text(subject)) == expected


HOSTILE_SCHEMA_RUN = """
import sys
from evalgate import checks
from evalgate.load.items import Item
from evalgate.replies import Run
item = Item(input="q")
for schema, output in [
    ({"properties": {"name": {"type": "string", "pattern": "^(a|a)*$"}}}, '{"name": "%sb"}' % ("a" * 45)),
    ({"patternProperties": {"^(a|a)*$": {}}, "additionalProperties": False}, '{"%sb": 1}' % ("a" * 45)),
    ({"patternProperties": {"^(a|a)*$": {}}, "unevaluatedProperties": False}, '{"%sb": 1}' % ("a" * 45)),
]:
    try:
        checks.json_schema(schema=schema)(item, Run(texts=[output]))
    except ValueError as exc:
        print(exc)
"""


def test_json_schema_pattern_that_backtracks_errors_the_item_instead_of_hanging() -> None:
    """`^(a|a)*$` on 45 characters is 2**45 steps to Python's re: the run never ended. In a child
    process with a deadline, so that a regression fails here instead of hanging the suite."""
    try:
        done = subprocess.run([sys.executable, "-c", HOSTILE_SCHEMA_RUN], capture_output=True, text=True,
                              timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("a backtracking JSON Schema pattern still hangs the scorer")
    assert done.returncode == 0, done.stderr[-1000:]
    assert done.stdout.count("ran over") == 3, done.stdout


@pytest.mark.parametrize("schema", [{"pattern": "("}, {"patternProperties": {"a{2,1}": {}}},
                                    {"properties": {"x": {"pattern": "(?<n>a)(?<n>b)"}}}])
def test_json_schema_pattern_javascript_refuses_is_a_spec_error(schema: dict) -> None:
    with pytest.raises(ValueError, match="JSON Schema /"):
        checks.json_schema(schema=schema)


@pytest.mark.parametrize(("schema", "where"), [
    ({"$ref": "#/$defs/answer"}, "/$ref: '#/$defs/answer'"),
    ({"$defs": {"answer": {}}, "properties": {"a": {"items": {"$ref": "#/$defs/anwser"}}}},
     "/properties/a/items/$ref: '#/$defs/anwser'"),
    ({"$defs": {"a": {"$anchor": "answer"}}, "$ref": "#anwser"}, "/$ref: '#anwser'"),
])
def test_json_schema_ref_to_nowhere_in_it_is_a_spec_error(schema: dict, where: str) -> None:
    """It errored every item (PointerToNowhere) at run time: an outage, exit 4, for a typo in the spec."""
    with pytest.raises(ValueError, match=re.escape(f"JSON Schema {where} points at nothing in the schema")):
        checks.json_schema(schema=schema)


@pytest.mark.parametrize("schema", [
    {"$ref": "#"},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
])
def test_json_schema_that_refers_to_itself_without_end_is_a_spec_error(schema: dict) -> None:
    """Every item errored with a RecursionError at run time: an outage, exit 4, for a loop in the spec."""
    with pytest.raises(ValueError, match="refers to itself without end"):
        checks.json_schema(schema=schema)


@pytest.mark.parametrize("schema", [
    {"$defs": {"a": {"type": "object"}}, "$ref": "#/$defs/a"},
    {"$schema": "http://json-schema.org/draft-04/schema#", "definitions": {"a": {}}, "$ref": "#/definitions/a"},
    {"$defs": {"a": {"$anchor": "answer", "type": "object"}}, "properties": {"x": {"$ref": "#answer"}}},
    {"properties": {"a/b c": {"type": "object"}}, "$ref": "#/properties/a~1b%20c"},
    {"properties": {"x": {"$id": "http://example.com/x", "$defs": {"y": {}}, "$ref": "#/$defs/y"}}},
    {"not": {"enum": [{"$ref": "#/nowhere"}]}},  # data, not a schema
    # a loop that goes down into the value ends: a tree
    {"$defs": {"node": {"type": "object", "properties": {"children": {"items": {"$ref": "#/$defs/node"}}}}},
     "$ref": "#/$defs/node"},
])
def test_json_schema_refs_into_it_are_followed(schema: dict) -> None:
    assert score(checks.json_schema(schema=schema), text("{}")) == 1.0


def test_json_schema_nested_too_deeply_is_a_spec_error_not_a_bug() -> None:
    schema: dict = {"pattern": "a"}
    for _ in range(5000):
        schema = {"items": schema}
    with pytest.raises(ValueError, match="nests too deeply"):
        checks.json_schema(schema=schema)


def test_json_schema_pattern_inside_a_const_is_data() -> None:
    scorer = checks.json_schema(schema={"const": {"pattern": "("}})
    assert score(scorer, text('{"pattern": "("}')) == 1.0


def test_json_schema_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        checks.json_schema()


# ---- ids ----


def test_default_ids_are_readable() -> None:
    assert checks.called_tool("get_weather").id == "called_tool:get_weather"
    assert checks.includes("Brooklyn").id == "includes:Brooklyn"
    assert checks.tool_order(["a", "b"]).id == "tool_order:a,b"
    assert checks.max_tool_calls(2).id == "max_tool_calls:2"
    assert checks.no_tool_errors().id == "no_tool_errors"
    assert checks.includes("Brooklyn", id="city").id == "city"


def test_similarity_removes_javascripts_whitespace_from_ascii_text_as_the_regex_does() -> None:
    # ASCII text takes a faster path than the JavaScript \s regex; every ASCII character must agree
    from evalgate.scorers.checks import JS_WHITESPACE, without_whitespace

    for code in range(128):
        text = f"a{chr(code)}b {chr(code)}\t"
        assert without_whitespace(text) == JS_WHITESPACE.sub("", text), code
    assert without_whitespace("a\u00a0b\u3000c d") == "abcd"  # beyond ASCII: the regex itself
