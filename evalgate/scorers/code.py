"""Code scorers: deterministic text and run metrics, no LLM (Mastra's code-based scorers).

Each scorer named after one of Mastra's gives Mastra's number (`@mastra/evals` 1.10.2) by default:
it reads the same text, compares it with the same thing and treats empty input the same way.
Mastra compares the output with the *input* (the user's message) and ignores the ground truth;
the output is every output message's text joined by ", ". What evalgate can do differently is an
explicit option: `reference: ground_truth` compares with the item's ground_truth (the input when
it has none), `empty: not_scorable` marks an item with nothing to compare as not scorable
instead of scoring it as Mastra does. docs/scorers.md gives each formula.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import Field

from evalgate.load.items import Item
from evalgate.replies import Run
from evalgate.replies.messages import NO_INPUT_MESSAGES, mastra_input_texts, no_input_messages
from evalgate.replies.model import ToolName, shown_name
from evalgate.scorers import compromise
from evalgate.scorers.base import NotScorable
from evalgate.scorers.checks import dice
from evalgate.scorers.js import text as jstext
from evalgate.scorers.registry import scorer_type

ScoreFn = Any
Reference = Literal["input", "ground_truth"]
Empty = Literal["score", "not_scorable"]
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def input_text(item: Item) -> str:
    """The user's message as Mastra's code scorers read it: each input message's text, joined by ", ".

    A message list is read as a real agent converts it (system messages set aside; runs.messages
    `mastra_input_texts`, which raises where evalgate cannot read it as Mastra does). A conversation is
    read from its first input (Mastra's multi-turn scorers get the first input).
    """
    return mastra_input_texts(item.first_input)[0]


def output_text(run: Run) -> str:
    """Every output message's text, whatever its role, joined by ", " (Mastra's code scorers)."""
    run.require("output_texts")
    return ", ".join(run.texts if run.output_texts is None else run.output_texts)


def reference_text(item: Item, reference: Reference) -> tuple[str, str]:
    """(text, where it came from): the input, or with `reference: ground_truth` the ground_truth when present."""
    if reference == "ground_truth" and item.ground_truth not in (None, ""):
        return _text(item.ground_truth), "ground_truth"
    return input_text(item), "input"


def _nothing(source: str) -> NotScorable:
    return NotScorable(f"the {source} is empty: nothing to compare with")


@scorer_type("content_similarity")
def content_similarity(
    ignore_case: bool = True,
    ignore_whitespace: bool = True,
    reference: Reference = "input",
    empty: Empty = "score",
) -> ScoreFn:
    """Character-bigram Dice coefficient between the input (Mastra) and the output, 0 to 1. Higher is better.

    Mastra's content-similarity: string-similarity's compareTwoStrings, which removes all
    whitespace first (so ignore_whitespace changes nothing); ignore_case lower-cases both.
    Both empty: 1; one empty: 0.
    """

    def score(item: Item, run: Run) -> tuple[float, str]:
        expected, source = reference_text(item, reference)
        text = output_text(run)
        if ignore_case:
            expected, text = expected.lower(), text.lower()
        if ignore_whitespace:
            expected, text = jstext.trim(jstext.WS_RUN.sub(" ", expected)), jstext.trim(jstext.WS_RUN.sub(" ", text))
        if empty == "not_scorable" and not jstext.WS_RUN.sub("", expected):
            raise _nothing(source)
        return dice(expected, text), f"compared with the {source}"

    return score


@scorer_type("textual_difference")
def textual_difference(reference: Reference = "input", empty: Empty = "score") -> ScoreFn:
    """Similarity by longest common subsequence: 2 x LCS / (input + output length), 0 to 1. Higher is more similar.

    Mastra's textual-difference: identical texts 1, one of them empty 0; lengths in UTF-16 units.
    Texts whose comparison would take seconds (over 4e10 unit pairs) are this score's error.
    """

    def score(item: Item, run: Run) -> tuple[float, str]:
        expected, source = reference_text(item, reference)
        if empty == "not_scorable" and not expected:
            raise _nothing(source)
        try:
            return jstext.lcs_ratio(expected, output_text(run)), f"compared with the {source}"
        except jstext.TooLongToCompare as exc:  # a megabyte reply must not stall the run for minutes
            raise ValueError(f"{exc}, more than evalgate spends on one score (Mastra's table runs out of memory "
                             f"long before); compare shorter texts, or score them with another scorer") from None

    return score


@scorer_type("keyword_coverage")
def keyword_coverage(
    keywords: list[str] | None = None,
    reference: Reference = "input",
    empty: Empty = "score",
) -> ScoreFn:
    """Share of the input's keywords that the output's keywords contain, 0 to 1. Higher is better.

    Mastra's keyword-coverage: keyword-extractor's English extraction (lower-cased words, minus
    571 stopwords and all-digit words) of the input and of the output; no input keywords: 1.
    With `keywords` (an evalgate option), those are looked for instead, as whole words in any case.
    """
    fixed = [k.lower() for k in keywords] if keywords is not None else None

    def score(item: Item, run: Run) -> tuple[float, str]:
        if fixed is not None:
            return _fixed_keywords(fixed, output_text(run), empty)
        expected, source = reference_text(item, reference)
        wanted = jstext.extract_keywords(expected)
        if not wanted:
            if empty == "not_scorable":
                raise NotScorable(f"the {source} has no keywords")
            return 1.0, f"the {source} has no keywords"
        have = set(jstext.extract_keywords(output_text(run)))
        missing = [k for k in wanted if k not in have]
        found = len(wanted) - len(missing)
        reason = f"{found} of {len(wanted)} keywords of the {source} found"
        return found / len(wanted), reason + (f"; missing: {', '.join(missing[:10])}" if missing else "")

    return score


def _fixed_keywords(wanted: list[str], output: str, empty: Empty) -> tuple[float, str]:
    if not wanted:
        if empty == "not_scorable":
            raise NotScorable("no keywords to look for")
        return 1.0, "no keywords to look for"
    text = f" {' '.join(_WORD.findall(output.lower()))} "
    missing = [k for k in wanted if f" {' '.join(_WORD.findall(k))} " not in text]
    found = len(wanted) - len(missing)
    reason = f"{found} of {len(wanted)} keywords found"
    return found / len(wanted), reason + (f"; missing: {', '.join(missing[:10])}" if missing else "")


def covered(element: str, others: Iterable[str]) -> bool:
    """Mastra's loose match: up to 3 letters exactly; else one contains the other and is over 60% of it."""
    for other in others:
        if element == other:
            return True
        if len(element) <= 3:
            continue
        longer, shorter = (element, other) if len(element) > len(other) else (other, element)
        if shorter in longer and len(shorter) / len(longer) > 0.6:
            return True
    return False


def coverage(original: list[str], simplified: list[str]) -> float:
    """Mastra's calculateCoverage: share of `original` covered by `simplified`; none: 1 if both empty, else 0.

    The words are compromise's, already lower-case a-z/0-9 (normalizeString changes none of them)."""
    if not original:
        return 1.0 if not simplified else 0.0
    return sum(1 for e in original if covered(e, simplified)) / len(original)


@scorer_type("completeness")
def completeness(reference: Reference = "input", empty: Empty = "score") -> ScoreFn:
    """Share of the input's words (verbs as infinitives) the output covers, matched loosely, 0 to 1. Higher is better.

    Mastra's completeness: the words are compromise's (its nouns, verbs as infinitives, topics and
    terms), read by compromise's own build in V8 (evalgate.scorers.compromise; the extra
    `evalgate-gates[mastra-nlp]`). A word of up to 3 letters must match exactly; a longer one matches
    a word that contains it, or is contained in it, if the shorter is over 60% of the longer. No
    input words: 1 if the output has none, else 0.
    """
    compromise.require()

    def score(item: Item, run: Run) -> tuple[float, str]:
        expected, source = reference_text(item, reference)
        text = output_text(run)
        wanted = compromise.elements(expected)
        if not wanted and empty == "not_scorable":
            raise NotScorable(f"the {source} has no words")
        have = compromise.elements(text)
        value = coverage(wanted, have)
        if not wanted:
            return value, f"the {source} has no words"
        missing = [w for w in wanted if not covered(w, have)]
        reason = f"{len(wanted) - len(missing)} of {len(wanted)} elements of the {source} covered"
        return value, reason + (f"; missing: {', '.join(missing[:10])}" if missing else "")

    return score


@scorer_type("tone_consistency")
def tone_consistency(
    reference_tone: str | None = None,
    reference: Literal["none", "ground_truth"] = "none",
) -> ScoreFn:
    """Does the output keep one tone? 0 to 1, higher is better (AFINN-165 sentiment, no LLM).

    Mastra's tone scorer: sentiment = the `sentiment` library's comparative score (AFINN word
    values, a negator flips the next word, divided by the token count). With `reference_tone`
    (or, with `reference: ground_truth`, the item's ground_truth): max(0, 1 - |s(output) - s(reference)|).
    Without: the sentences (runs ending in . ! or ?) of the output; max(0, 1 - variance of their sentiments).
    """

    def score(item: Item, run: Run) -> tuple[float, str]:
        text = output_text(run)
        tone = reference_tone
        source = "reference_tone"
        if reference == "ground_truth" and item.ground_truth not in (None, ""):
            tone, source = _text(item.ground_truth), "ground_truth"
        if tone:
            out, ref = jstext.sentiment(text), jstext.sentiment(tone)
            return max(0.0, 1 - abs(out - ref)), f"sentiment {out:.3f} vs {source} {ref:.3f}"
        sentences = _sentences(text) or [text]
        values = [jstext.sentiment(s) for s in sentences]
        mean = 0.0
        for value in values:
            mean += value
        mean /= len(values)
        variance = 0.0
        for value in values:
            variance += (value - mean) ** 2
        variance /= len(values)
        return max(0.0, 1 - variance), f"sentiment variance {variance:.4f} over {len(values)} sentence(s)"

    return score


_RUN = re.compile(r"[^.!?]+|[.!?]+")


def _sentences(text: str) -> list[str]:
    """What JavaScript's text.match(/[^.!?]+[.!?]+/g) finds, in linear time (the regex backtracks)."""
    runs = [m.group() for m in _RUN.finditer(text)]
    return [
        runs[i] + runs[i + 1]
        for i in range(len(runs) - 1)
        if runs[i][0] not in ".!?" and runs[i + 1][0] in ".!?"
    ]


@scorer_type("latency")
def latency(max_ms: Annotated[float, Field(gt=0)]) -> ScoreFn:
    """1 if the run's latency_ms is at most `max_ms`, else 0; not scorable if the run has no latency."""

    def score(item: Item, run: Run) -> tuple[float, str]:
        if run.latency_ms is None:
            raise NotScorable("the run has no latency_ms")
        return (1.0 if run.latency_ms <= max_ms else 0.0), f"{run.latency_ms:g} ms (max {max_ms:g})"

    return score


@scorer_type("cost")
def cost(max_usd: Annotated[float, Field(ge=0)]) -> ScoreFn:
    """1 if the run's cost_usd is at most `max_usd`, else 0; not scorable if the run has no cost."""

    def score(item: Item, run: Run) -> tuple[float, str]:
        if run.cost_usd is None:
            raise NotScorable("the run has no cost_usd")
        return (1.0 if run.cost_usd <= max_usd else 0.0), f"${run.cost_usd:g} (max ${max_usd:g})"

    return score


def _trajectory_names(value: Any) -> list[str] | None:
    """Tool names from an item's expected_trajectory: a list of names or of {name|tool|toolName: ...}."""
    if not isinstance(value, list):
        return None
    names: list[str] = []
    for step in value:
        if isinstance(step, str):
            names.append(step)
        elif isinstance(step, dict):
            name = step.get("name") or step.get("tool") or step.get("toolName") or step.get("tool_name")
            if not isinstance(name, str):
                return None
            names.append(name)
        else:
            return None
    return names


def _in_order(names: list[ToolName], order: list[str]) -> bool:
    """Mastra's order check: each expected tool's first call comes after the previous one's."""
    positions = []
    for tool in order:
        if tool not in names:
            return False
        positions.append(names.index(tool))
    return all(b > a for a, b in itertools.pairwise(positions))


@scorer_type("tool_call_accuracy_code")
def tool_call_accuracy_code(
    expected_tool: str | None = None,
    expected_order: list[str] | None = None,
    strict: bool = False,
) -> ScoreFn:
    """1 if the run called the expected tool(s), else 0 (no LLM); no tool calls at all: 0. Higher is better.

    Mastra's code tool-call-accuracy. expected_order (when not empty) wins: the first call of each
    expected tool comes after the first call of the one before (strict: the calls are exactly this
    list). Else expected_tool: called at least once (strict: the one and only call). With neither,
    the item's expected_trajectory (tool names) is the expected order; not scorable without one.
    """

    def score(item: Item, run: Run) -> tuple[float, str]:
        if no_input_messages(item.first_input):
            raise ValueError(NO_INPUT_MESSAGES)
        run.require("output_messages")  # the same test of Mastra's, of the output
        run.require("tool_calls")  # Mastra's extractToolCalls, before anything else is looked at
        names = [c.name for c in run.tool_calls]
        called = ", ".join(map(shown_name, names)) or "no tools"
        order = expected_order
        if expected_tool is None and order is None:
            order = _trajectory_names(item.expected_trajectory)
            if order is None:
                raise NotScorable("needs `expected_tool`, `expected_order` or the item's expected_trajectory")
        if not names:
            return 0.0, "no tool was called"
        if order:
            ok = names == order if strict else _in_order(names, order)
            return (1.0 if ok else 0.0), f"called {called}; expected order {', '.join(order)}"
        if expected_tool is None:
            return 0.0, f"called {called}; expected order is empty"
        ok = names == [expected_tool] if strict else expected_tool in names
        return (1.0 if ok else 0.0), f"called {called}; expected {expected_tool}" + (" only" if strict else "")

    return score
