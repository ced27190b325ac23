"""Code scorers: deterministic text and run metrics, no LLM (Mastra's code-based scorers).

The reference text, where a scorer compares against one, is the item's `ground_truth` when
present, else its input (docs/spec.md, *Items*); a non-string value is compared as JSON.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from difflib import SequenceMatcher
from typing import Annotated, Any

from pydantic import Field

from evalgate.items import Item
from evalgate.runs import Run
from evalgate.scorers.base import NotScorable
from evalgate.scorers.registry import scorer_type

ScoreFn = Any
_WS = re.compile(r"\s+")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

def _split(text: str) -> list[str]:
    return text.split()


# Words that carry no topic: left out of keyword_coverage and completeness.
STOPWORDS = frozenset(
    _split(
        """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves please tell give show let get got also"""
    )
)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def reference(item: Item) -> tuple[str, str]:
    """(text, where it came from): ground_truth when present, else the input; NotScorable if neither."""
    if item.ground_truth not in (None, ""):
        return _text(item.ground_truth), "ground_truth"
    inputs = [i for i in item.turn_inputs() if i is not None]
    if inputs:
        return " ".join(_text(i) for i in inputs), "input"
    raise NotScorable("needs the item's ground_truth or input to compare with")


def dice(a: str, b: str, *, strip_whitespace: bool = True) -> float:
    """Dice coefficient of character bigrams (whitespace removed first, as Mastra's similarity)."""
    if strip_whitespace:
        a, b = _WS.sub("", a), _WS.sub("", b)
    if a == b:
        return 1.0
    if len(a) < 2 or len(b) < 2:
        return 0.0
    first = Counter(a[i : i + 2] for i in range(len(a) - 1))
    shared = 0
    for i in range(len(b) - 1):
        bigram = b[i : i + 2]
        if first[bigram] > 0:
            first[bigram] -= 1
            shared += 1
    return 2.0 * shared / (len(a) + len(b) - 2)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def extract_keywords(text: str) -> list[str]:
    """Distinct non-stopword words, in order of first appearance."""
    return list(dict.fromkeys(w for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())))


def stem(word: str) -> str:
    """A light English stem, so `forecasts` meets `forecast` and `raining` meets `rain`."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@scorer_type("content_similarity")
def content_similarity(ignore_case: bool = True, ignore_whitespace: bool = True) -> ScoreFn:
    """Character-bigram Dice coefficient between the output and the reference (ground_truth, else input), 0 to 1.

    ignore_case lower-cases both; ignore_whitespace removes all whitespace first (otherwise
    spaces are part of the bigrams). 1 = same characters; higher is better.
    """

    def score(item: Item, run: Run) -> tuple[float, str]:
        expected, source = reference(item)
        text = run.text
        if ignore_case:
            expected, text = expected.lower(), text.lower()
        return dice(text, expected, strip_whitespace=ignore_whitespace), f"compared with {source}"

    return score


@scorer_type("textual_difference")
def textual_difference() -> ScoreFn:
    """Sequence-match ratio (Python's difflib) between the output and the reference, 0 to 1.

    2 x matching characters / total characters; 1 = identical texts; higher is better
    (higher means more similar, as in Mastra).
    """

    def score(item: Item, run: Run) -> tuple[float, str]:
        expected, source = reference(item)
        ratio = SequenceMatcher(None, run.text, expected, autojunk=False).ratio()
        return ratio, f"compared with {source}"

    return score


@scorer_type("keyword_coverage")
def keyword_coverage(keywords: list[str] | None = None) -> ScoreFn:
    """Share of the keywords that appear in the output (case-insensitive, whole words), 0 to 1.

    Keywords: `keywords` if given, else the non-stopword words of the reference (ground_truth,
    else input). Score = keywords found / keywords; not scorable if there are none.
    """
    fixed = [k.lower() for k in keywords] if keywords is not None else None

    def score(item: Item, run: Run) -> tuple[float, str]:
        wanted = fixed if fixed is not None else extract_keywords(reference(item)[0])
        if not wanted:
            raise NotScorable("no keywords to look for")
        text = f" {' '.join(words(run.text))} "
        missing = [k for k in wanted if f" {' '.join(words(k))} " not in text]
        found = len(wanted) - len(missing)
        reason = f"{found} of {len(wanted)} keywords found"
        return found / len(wanted), reason + (f"; missing: {', '.join(missing[:10])}" if missing else "")

    return score


@scorer_type("completeness")
def completeness() -> ScoreFn:
    """Share of the reference's content words (stemmed) that the output covers, 0 to 1.

    Reference: ground_truth, else input. Words are lower-cased, stopwords dropped, lightly
    stemmed (forecasts -> forecast). Score = covered / reference words; not scorable if none.
    """

    def score(item: Item, run: Run) -> tuple[float, str]:
        expected, source = reference(item)
        wanted = list(dict.fromkeys(stem(w) for w in extract_keywords(expected)))
        if not wanted:
            raise NotScorable(f"the {source} has no content words")
        have = {stem(w) for w in words(run.text)}
        missing = [w for w in wanted if w not in have]
        covered = len(wanted) - len(missing)
        reason = f"{covered} of {len(wanted)} elements of the {source} covered"
        return covered / len(wanted), reason + (f"; missing: {', '.join(missing[:10])}" if missing else "")

    return score


# A small sentiment lexicon (-3 to 3), enough to tell a cheerful reply from a curt or gloomy one.
SENTIMENT: dict[str, int] = {
    **dict.fromkeys(_split("great excellent amazing wonderful fantastic perfect delighted love"), 3),
    **dict.fromkeys(_split("good happy glad nice pleased enjoy thanks thank welcome helpful sunny"), 2),
    **dict.fromkeys(_split("fine ok okay sure clear calm pleasant easy"), 1),
    **dict.fromkeys(_split("sorry unfortunately problem issue difficult cold rainy"), -1),
    **dict.fromkeys(_split("bad sad poor wrong annoying fail failed error unable cannot"), -2),
    **dict.fromkeys(_split("terrible awful horrible hate worst angry stupid useless disaster"), -3),
}
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentiment(text: str) -> float:
    """Comparative sentiment: lexicon sum / number of words (0 for no words)."""
    tokens = words(text)
    if not tokens:
        return 0.0
    total = 0
    for token in tokens:
        total += SENTIMENT.get(token, 0)
    return total / len(tokens)


@scorer_type("tone_consistency")
def tone_consistency() -> ScoreFn:
    """Does the output keep one tone? 0 to 1, higher is better (lexicon sentiment, no LLM).

    With ground_truth: 1 - min(1, |sentiment(output) - sentiment(ground_truth)|).
    Without: the output's sentences' sentiments; 1 - min(1, their variance) (one sentence: 1).
    Sentiment = lexicon score sum / word count.
    """

    def score(item: Item, run: Run) -> tuple[float, str]:
        if item.ground_truth not in (None, ""):
            out, ref = sentiment(run.text), sentiment(_text(item.ground_truth))
            return 1.0 - min(1.0, abs(out - ref)), f"sentiment {out:.3f} vs ground_truth {ref:.3f}"
        sentences = [s for s in _SENTENCE.split(run.text.strip()) if s]
        if len(sentences) < 2:
            return 1.0, "a single sentence: one tone"
        values = [sentiment(s) for s in sentences]
        mean = sum(values) / len(values)
        variance = sum((v - mean) ** 2 for v in values) / len(values)
        return 1.0 - min(1.0, variance), f"sentiment variance {variance:.4f} over {len(values)} sentences"

    return score


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


def _subsequence(wanted: list[str], names: list[str]) -> bool:
    it = iter(names)
    return all(any(n == w for n in it) for w in wanted)


@scorer_type("tool_call_accuracy_code")
def tool_call_accuracy_code(
    expected_tool: str | None = None,
    expected_order: list[str] | None = None,
    strict: bool = False,
) -> ScoreFn:
    """1 if the run called the expected tool(s), else 0 (no LLM). Higher is better.

    expected_tool: called at least once (strict: it is the only call). expected_order: these
    tools in this order, others may come between (strict: exactly this sequence). With neither,
    the item's expected_trajectory (tool names) is the expected order; not scorable without one.
    """
    if expected_tool is not None and expected_order is not None:
        raise ValueError("give `expected_tool` or `expected_order`, not both")

    def score(item: Item, run: Run) -> tuple[float, str]:
        names = [c.name for c in run.tool_calls]
        called = ", ".join(names) or "no tools"
        if expected_tool is not None:
            ok = names == [expected_tool] if strict else expected_tool in names
            return (1.0 if ok else 0.0), f"called {called}; expected {expected_tool}" + (" only" if strict else "")
        order = expected_order if expected_order is not None else _trajectory_names(item.expected_trajectory)
        if order is None:
            raise NotScorable("needs `expected_tool`, `expected_order` or the item's expected_trajectory")
        ok = names == order if strict else _subsequence(order, names)
        return (1.0 if ok else 0.0), f"called {called}; expected order {', '.join(order) or '(none)'}"

    return score
