"""The quick checks: deterministic scorers, no LLM (docs/scorers.md; Mastra's `checks`, docs/mastra-semantics.md).

Each factory returns a function of (item, run). Every check scores 1.0 or 0.0, except
`similarity` without a cutoff, which scores the Dice coefficient.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from operator import add
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field

from evalgate.errors import not_a_file
from evalgate.load.items import Item
from evalgate.load.spec.context import BuildContext
from evalgate.replies import Run
from evalgate.scorers.base import NotScorable
from evalgate.scorers.js import regexp as jsregex
from evalgate.scorers.registry import scorer_type

ScoreFn = Any
T = TypeVar("T")
# JavaScript's \s, not Python's: Mastra strips these before comparing.
JS_WHITESPACE = re.compile("[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
REGEX_TIMEOUT_S = 1.0  # per output: a pattern that backtracks catastrophically errors that result
# Each check tests `run.unreadable` before it calls `run.require`: almost every run reads whole, and the
# call, made by every check for every item, cost more than some of the checks themselves.

Value = Annotated[str | None, Field(description="the text to compare with; or `reference: ground_truth`")]
GroundTruth = Annotated[
    Literal["ground_truth"] | None,
    Field(description="`ground_truth`: compare with each item's ground_truth instead of a fixed `value` "
          "(an item without one is not scorable)"),
]


def ground_truth_text(item: Item) -> str:
    """The item's ground_truth as text (JSON for a structure); NotScorable when it has none."""
    truth = item.ground_truth
    if truth is None or truth == "":
        raise NotScorable("the item has no ground_truth to compare with")
    return truth if isinstance(truth, str) else json.dumps(truth, ensure_ascii=False, default=str)


def _expected(value: str | None, reference: str | None, prepare: Callable[[str], T],
              name: str = "value") -> Callable[[Item], T]:
    """What an item is compared with: `value` prepared once, or each item's ground_truth prepared for it.

    Exactly one of `value` and `reference: ground_truth` is given (ValueError: a spec error on the entry)."""
    if (value is None) == (reference is None):
        raise ValueError(f"give `{name}` or `reference: ground_truth`" if value is None else
                         f"give `{name}` or `reference: ground_truth`, not both")
    if value is not None:
        fixed = prepare(value)
        return lambda item: fixed
    last: list[tuple[str, T] | None] = [None]  # items in a row often share a ground truth: prepared once

    def of_item(item: Item) -> T:
        text = ground_truth_text(item)
        seen = last[0]  # one read: another thread may replace it
        if seen is not None and seen[0] == text:
            return seen[1]
        prepared = prepare(text)
        last[0] = (text, prepared)
        return prepared

    return of_item


def negated(check: Callable[[Item, Run], float]) -> Callable[[Item, Run], float]:
    """The inverse of a 0/1 check (`excludes` of `includes`, `did_not_call` of `called_tool`): 1 where it
    gives 0; what it raises (an unreadable run, an item with no ground_truth) is raised as it is."""

    def score(item: Item, run: Run) -> float:
        return 1.0 - check(item, run)

    return score


def _text_holds(value: str | None, ignore_case: bool, reference: str | None) -> ScoreFn:
    needle_of = _expected(value, reference, lambda text: text.lower() if ignore_case else text)

    def score(item: Item, run: Run) -> float:
        needle = needle_of(item)
        if run.unreadable:
            run.require("text")
        return 1.0 if needle in (run.text.lower() if ignore_case else run.text) else 0.0

    return score


@scorer_type("includes")
def includes(value: Value = None, ignore_case: bool = True, reference: GroundTruth = None) -> ScoreFn:
    """1 if `value` (or the item's ground_truth) occurs in the run's text (texts joined by a space), else 0."""
    return _text_holds(value, ignore_case, reference)


@scorer_type("excludes")
def excludes(value: Value = None, ignore_case: bool = True, reference: GroundTruth = None) -> ScoreFn:
    """1 if `value` (or the item's ground_truth) does not occur in the run's text (texts joined by a space), else 0."""
    return negated(_text_holds(value, ignore_case, reference))


@scorer_type("equals")
def equals(value: Value = None, ignore_case: bool = True, reference: GroundTruth = None) -> ScoreFn:
    """1 if the run's text (texts joined with nothing) equals `value` (or the item's ground_truth) exactly,
    no trimming."""
    expected_of = _expected(value, reference, lambda text: text.lower() if ignore_case else text)

    def score(item: Item, run: Run) -> float:
        expected = expected_of(item)
        if run.unreadable:
            run.require("text")
        return 1.0 if (run.joined_text.lower() if ignore_case else run.joined_text) == expected else 0.0

    return score


@scorer_type("matches")
def matches(pattern: Value = None, exact: bool = False, flags: str = "", reference: GroundTruth = None) -> ScoreFn:
    """1 if the regex (`pattern`, or the item's ground_truth) is found in the text (joined with nothing);
    with `exact`, if it matches all of it.

    The pattern and `flags` mean what they mean to JavaScript's RegExp, as in Mastra's check
    (docs/mastra-semantics.md): i (ignore case), m (multiline), s (dot matches newline), u
    (Unicode: code points, `\\p{..}`); g and d change nothing. What Python cannot run with JavaScript's
    meaning is refused by name.
    """
    if flags:  # bad flags are the entry's error, even when the patterns are the items'
        try:
            jsregex.compile_js("", flags)
        except jsregex.JsRegexError as exc:
            raise ValueError(str(exc).removeprefix("invalid regex '': ")) from None

    def finder(text: str) -> Callable[[str, float], Any]:
        compiled = jsregex.compile_js(text, flags)
        return compiled.fullmatch if exact else compiled.search

    finder_of = _expected(pattern, reference, finder, name="pattern")

    def score(item: Item, run: Run) -> float:
        try:
            find = finder_of(item)
        except ValueError as exc:  # the item's ground truth is no regex JavaScript and Python read alike
            raise ValueError(f"the ground_truth as a regex: {exc}") from None
        if run.unreadable:
            run.require("text")
        try:
            return 1.0 if find(run.joined_text, REGEX_TIMEOUT_S) else 0.0
        except TimeoutError:
            raise ValueError(f"the regex ran over {REGEX_TIMEOUT_S:g}s on this output (catastrophic "
                             "backtracking?); simplify the pattern") from None

    return score


_ASCII_WS = b"\t\n\v\f\r "  # JavaScript's \s within ASCII


def without_whitespace(text: str) -> str:
    if text.isascii():  # the common text: bytes.translate removes the spaces 4x as fast as the regex
        return text.encode("ascii").translate(None, _ASCII_WS).decode("ascii")
    text = JS_WHITESPACE.sub("", text)
    return _utf16(text) if _ASTRAL.search(text) else text  # JavaScript counts UTF-16 code units


def _bigrams(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for i in range(len(text) - 1):
        bigram = text[i : i + 2]
        counts[bigram] = counts.get(bigram, 0) + 1
    return counts


def _dice_prepared(a: str, b: str, b_bigrams: dict[str, int]) -> float:
    if a == b:
        return 1.0
    if len(a) < 2 or len(b) < 2:
        return 0.0
    left = b_bigrams.copy()
    get = left.get
    shared = 0
    for i in range(len(a) - 1):
        bigram = a[i : i + 2]
        count = get(bigram)
        if count:
            left[bigram] = count - 1
            shared += 1
    return 2.0 * shared / (len(a) + len(b) - 2)


# At most this many bigrams in `b`: `_dice_distinct` looks each up in `a` (a C search, no string made)
# rather than making each of `a`'s bigrams to look up in `b`'s set (a string and its hash each).
FEW_BIGRAMS = 64


def _dice_distinct(a: str, b: str, b_set: frozenset[str], b_few: tuple[str, ...] | None = None) -> float:
    """`_dice_prepared` for a `b` whose bigrams each occur once: the multiset intersection is then
    the set of `a`'s bigrams found in `b`, which C code counts (twice as fast as the loop).
    b_few: `b_set` as a tuple when it holds at most FEW_BIGRAMS: counted as those found in `a` (the same set)."""
    if a == b:
        return 1.0
    if len(a) < 2 or len(b) < 2:
        return 0.0
    # each bigram of `b` at most once: the shared ones are those of `b` found in `a`, or of `a` found in `b`
    shared = sum(map(a.__contains__, b_few)) if b_few is not None else len(b_set.intersection(map(add, a, a[1:])))
    return 2.0 * shared / (len(a) + len(b) - 2)


def dice(a: str, b: str) -> float:
    """Dice coefficient of character bigrams, whitespace removed (Mastra's similarity).

    The multiset intersection is symmetric, so either side may be the precomputed one.
    """
    b = without_whitespace(b)
    return _dice_prepared(without_whitespace(a), b, _bigrams(b))


def _utf16(text: str) -> str:
    """The string as UTF-16 code units, one (surrogate) character each."""
    data = text.encode("utf-16-le", "surrogatepass")
    return "".join(chr(int.from_bytes(data[i : i + 2], "little")) for i in range(0, len(data), 2))


@scorer_type("similarity")
def similarity(
    value: Value = None,
    ignore_case: bool = True,
    cutoff: Annotated[float, Field(ge=0.0, le=1.0)] | None = None,
    reference: GroundTruth = None,
) -> ScoreFn:
    """Dice coefficient between the text (joined by a space) and `value` (or the item's ground_truth), 0 to 1.

    With `cutoff`: 1 if the coefficient >= cutoff, else 0.
    """
    expected_of = _expected(
        value, reference, lambda text: _Expected(without_whitespace(text.lower() if ignore_case else text)))

    def score(item: Item, run: Run) -> float:
        expected = expected_of(item)
        if run.unreadable:
            run.require("text")
        text = run.text.lower() if ignore_case else run.text
        if expected.distinct is not None:
            coefficient = _dice_distinct(without_whitespace(text), expected.text, expected.distinct, expected.few)
        else:
            coefficient = _dice_prepared(without_whitespace(text), expected.text, expected.bigrams)
        if cutoff is None:
            return coefficient
        return 1.0 if coefficient >= cutoff else 0.0

    return score


class _Expected:
    """A prepared text to compare with: its bigrams, and the shortcuts `_dice_distinct` takes."""

    __slots__ = ("bigrams", "distinct", "few", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.bigrams = _bigrams(text)
        self.distinct = frozenset(self.bigrams) if all(n == 1 for n in self.bigrams.values()) else None
        self.few = tuple(self.distinct) if self.distinct is not None and len(self.distinct) <= FEW_BIGRAMS else None


@scorer_type("called_tool")
def called_tool(tool: str, times: Annotated[int, Field(ge=0)] = 1) -> ScoreFn:
    """1 if the run made at least `times` calls named `tool`, whatever their outcome."""
    return _calls_at_least(tool, times)


def _calls_at_least(tool: str, times: int) -> ScoreFn:
    def score(item: Item, run: Run) -> float:
        if run.unreadable:
            run.require("tool_calls")
        count = 0
        for call in run.tool_calls:
            if call.name == tool:
                count += 1
        return 1.0 if count >= times else 0.0

    return score


@scorer_type("did_not_call")
def did_not_call(tool: str) -> ScoreFn:
    """1 if no call is named `tool`."""
    return negated(_calls_at_least(tool, 1))


@scorer_type("tool_order")
def tool_order(tools: list[str]) -> ScoreFn:
    """1 if `tools` appear in the calls in this order; other calls may come between."""

    def score(item: Item, run: Run) -> float:
        if run.unreadable:
            run.require("tool_calls")
        names = iter(c.name for c in run.tool_calls)
        return 1.0 if all(any(n == tool for n in names) for tool in tools) else 0.0

    return score


@scorer_type("max_tool_calls")
def max_tool_calls(max: Annotated[int, Field(ge=0)]) -> ScoreFn:
    """1 if the run made at most `max` tool calls."""

    def score(item: Item, run: Run) -> float:
        if run.unreadable:
            run.require("tool_calls")
        return 1.0 if len(run.tool_calls) <= max else 0.0

    return score


@scorer_type("used_no_tools")
def used_no_tools() -> ScoreFn:
    """1 if the run made no tool calls."""

    def score(item: Item, run: Run) -> float:
        if run.unreadable:
            run.require("tool_calls")
        return 0.0 if run.tool_calls else 1.0

    return score


@scorer_type("no_tool_errors")
def no_tool_errors() -> ScoreFn:
    """1 if no call failed (an `error`, a status of `error` or `pending`, a result's truthy `error`)
    and no Mastra tool invocation that is not a call failed (`uncounted_tool_errors`)."""

    def score(item: Item, run: Run) -> float:
        if run.unreadable:
            run.require("tool_calls")
        if run.uncounted_tool_errors:
            return 0.0
        for call in run.tool_calls:  # a loop, not any() over a generator: this runs for every item
            if call.failed:
                return 0.0
        return 1.0

    return score


@scorer_type("tool_args")
def tool_args(tool: str, args: dict[str, Any]) -> ScoreFn:
    """1 if some call named `tool` was made with at least these argument values (others may be present)."""

    def score(item: Item, run: Run) -> float:
        if run.unreadable:
            run.require("tool_calls")  # no Mastra check, but the same calls: unknowable where Mastra's are
        for call in run.tool_calls:
            if call.name == tool and isinstance(call.args, dict) and all(
                k in call.args and call.args[k] == v for k, v in args.items()
            ):
                return 1.0
        return 0.0

    return score


_FENCE = re.compile(r"^```[\w-]*\s*\n(.*?)\n?```$", re.DOTALL)


def _parse_json(text: str) -> tuple[bool, Any, str | None]:
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1)
    try:
        return True, json.loads(stripped), None
    except ValueError as exc:
        return False, None, f"not JSON: {exc}"
    except RecursionError:  # JSON or not, it cannot be read: neither 1 nor 0
        raise ValueError("the text nests too deeply (about 1,000 levels or more) to be read as JSON") from None


@scorer_type("json_valid")
def json_valid() -> ScoreFn:
    """1 if the run's text is valid JSON (surrounding whitespace and a ``` fence allowed)."""

    def score(item: Item, run: Run) -> tuple[float, str | None]:
        if run.unreadable:
            run.require("text")  # the text the text checks read
        ok, _, reason = _parse_json(run.joined_text)
        return (1.0 if ok else 0.0), reason

    return score


@cache
def _schema_pattern(pattern: str) -> jsregex.JsPattern:
    """A JSON Schema regex: ECMA-262 with the `u` flag, as the JSON Schema spec (2020-12) says."""
    return jsregex.compile_js(pattern, "u")


class _PatternTimeout(TimeoutError):
    def __init__(self, pattern: str) -> None:
        super().__init__(pattern)
        self.pattern = pattern


class _SchemaRe:
    """What jsonschema's keywords call `re`: `search` in JSON Schema's dialect and within a deadline.

    jsonschema runs `pattern` and `patternProperties` (also inside `additionalProperties` and
    `unevaluatedProperties`) through Python's `re`, which cannot be stopped: `^(a|a)*$` in a schema
    and an agent's 40-character answer hung the run for good. jsonschema has no hook for its regex
    engine, so its modules get this one (jsonschema validates nothing else with `re`).
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)

    @staticmethod
    def search(pattern: str, string: str, flags: int = 0) -> bool:
        try:
            return _schema_pattern(pattern).search(string, REGEX_TIMEOUT_S)
        except TimeoutError:
            raise _PatternTimeout(pattern) from None


_SCHEMA_RE = _SchemaRe()
_JSONSCHEMA_MODULES = ("_keywords", "_utils", "_legacy_keywords")  # where jsonschema calls re.search


def _use_schema_dialect() -> None:
    """Give jsonschema's keyword modules `_SCHEMA_RE` (once; a module it lacks is skipped)."""
    import importlib

    for name in _JSONSCHEMA_MODULES:
        try:
            module = importlib.import_module(f"jsonschema.{name}")
        except ModuleNotFoundError:  # another jsonschema layout: the corpus's hang test says if it still holds
            continue
        if getattr(module, "re", None) is re:
            module.__dict__["re"] = _SCHEMA_RE


_NOT_SCHEMAS = frozenset({"const", "enum", "examples", "default"})  # values, not schemas: a `pattern` there is data


def _schema_patterns(schema: Any, where: str = "") -> list[tuple[str, str]]:
    """Every `pattern` and `patternProperties` regex in the schema, with its JSON pointer."""
    found: list[tuple[str, str]] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            here = f"{where}/{key}"
            if key == "pattern" and isinstance(value, str):
                found.append((here, value))
            elif key == "patternProperties" and isinstance(value, dict):
                found += [(f"{here}/{name}", name) for name in value]
            if key not in _NOT_SCHEMAS:
                found += _schema_patterns(value, here)
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += _schema_patterns(value, f"{where}/{index}")
    return found


def _local_refs(schema: Any, where: str = "") -> list[tuple[str, str]]:
    """Every `$ref` into the schema itself (`#/$defs/x`, `#anchor`), with its JSON pointer; a subschema
    with its own `$id` (`id` before draft 6) is another document, whose refs are left to it."""
    found: list[tuple[str, str]] = []
    if isinstance(schema, dict):
        if where and any(isinstance(schema.get(key), str) for key in ("$id", "id")):
            return found
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            found.append((f"{where}/$ref", ref))
        for key, value in schema.items():
            if key not in _NOT_SCHEMAS:
                found += _local_refs(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += _local_refs(value, f"{where}/{index}")
    return found


def _unresolved_ref(validator_class: Any, schema: Any) -> str | None:
    """The first `$ref` into the schema that points at nothing in it: it failed every item's run instead."""
    import jsonschema_specifications
    import referencing.jsonschema
    from referencing.exceptions import Unresolvable

    refs = _local_refs(schema)
    if not refs:
        return None
    dialect = referencing.jsonschema.specification_with(validator_class.META_SCHEMA.get("$schema", ""),
                                                         default=referencing.jsonschema.DRAFT202012)
    resolver = jsonschema_specifications.REGISTRY.resolver_with_root(dialect.create_resource(schema))
    for where, ref in refs:
        try:
            resolver.lookup(ref)
        except Unresolvable:
            return f"JSON Schema {where}: {ref!r} points at nothing in the schema; fix it or add what it names"
    return None


MAX_SCHEMA_BYTES = 16 * 2**20  # a schema is a page or two; past this it is some other file


def _schema_validator(jsonschema: Any, schema: dict[str, Any] | None, schema_file: str | None,
                      ctx: BuildContext) -> Any:
    """The schema (inline, or read from `schema_file`) checked, its patterns compiled, as a validator."""
    if schema_file is not None:
        path = Path(ctx.base_dir, schema_file)
        # /dev/zero was read until memory ran out, a FIFO until its writer came: say what it is instead
        unusable = not_a_file(path, what="schema_file")
        if unusable is not None:
            raise ValueError(f"schema_file {schema_file!r}: {unusable}")
        try:
            too_big = path.stat().st_size > MAX_SCHEMA_BYTES
            schema = None if too_big else json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"cannot read schema_file {schema_file!r}: {exc.strerror}") from None
        except ValueError as exc:
            raise ValueError(f"schema_file {schema_file!r} is not JSON: {exc}") from None
        if too_big:
            raise ValueError(f"schema_file {schema_file!r} is over {MAX_SCHEMA_BYTES // 2**20} MiB; a JSON Schema "
                             "is read up to that size: point at the schema")
    for where, pattern in _schema_patterns(schema):
        try:
            _schema_pattern(pattern)
        except jsregex.JsRegexError as exc:
            raise ValueError(f"JSON Schema {where}: {exc}") from None
    validator_class = jsonschema.validators.validator_for(schema)
    formats = jsonschema.FormatChecker(formats=())  # the meta-schema's, with `regex` in JSON Schema's dialect
    formats.checkers = {**validator_class.FORMAT_CHECKER.checkers, "regex": (_schema_pattern, jsregex.JsRegexError)}
    try:
        validator_class.check_schema(schema, format_checker=formats)
    except jsonschema.SchemaError as exc:
        raise ValueError(f"invalid JSON Schema: {exc.message}") from None
    unresolved = _unresolved_ref(validator_class, schema)
    if unresolved is not None:
        raise ValueError(unresolved)
    _use_schema_dialect()
    return validator_class(schema)


def _refers_to_itself(jsonschema: Any, validator: Any) -> None:
    """ValueError when checking the plainest values never ends: a `$ref` loop that checks nothing between
    (`$ref: "#"`) failed every item's run with a RecursionError, an outage for a mistake in the spec.
    A loop that goes down into the value (a tree's `children`) ends on these, as on any output."""
    try:
        probes: tuple[Any, ...] = (None, True, 0, "", [], {})
        for probe in probes:
            jsonschema.exceptions.best_match(validator.iter_errors(probe))
    except RecursionError:
        raise ValueError("the JSON Schema refers to itself without end (a `$ref` loop that checks nothing in "
                         "between, such as `$ref: \"#\"`); point the reference at a part of the schema") from None
    except Exception:  # anything else is each output's to meet, as before
        return


@scorer_type("json_schema")
def json_schema(
    schema: dict[str, Any] | None = None,
    schema_file: str | None = None,
    *,
    ctx: BuildContext,
) -> ScoreFn:
    """1 if the run's text is JSON that validates against `schema` (inline) or `schema_file`."""
    import jsonschema  # only specs that use it pay for the import

    if (schema is None) == (schema_file is None):
        raise ValueError("json_schema needs exactly one of `schema` or `schema_file`")
    try:
        validator = _schema_validator(jsonschema, schema, schema_file, ctx)
    except RecursionError:
        raise ValueError("the JSON Schema nests too deeply to be read; flatten it (with $defs and $ref)") from None
    _refers_to_itself(jsonschema, validator)

    def score(item: Item, run: Run) -> tuple[float, str | None]:
        if run.unreadable:
            run.require("text")
        ok, value, reason = _parse_json(run.joined_text)
        if not ok:
            return 0.0, reason
        try:
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        except _PatternTimeout as late:
            raise ValueError(f"the JSON Schema's pattern {late.pattern[:200]!r} ran over {REGEX_TIMEOUT_S:g}s on "
                             "this output (catastrophic backtracking?); simplify the pattern") from None
        if error is None:
            return 1.0, None
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return 0.0, f"{where}: {error.message}"

    return score
