"""JavaScript's text and number semantics, as Mastra's scorers and the npm libraries they use apply them.

Mastra's code scorers run on JavaScript strings (UTF-16 code units, JavaScript's whitespace set,
`toLowerCase`), round with `Math.round`, and compare objects through `JSON.stringify`. The helpers
here reproduce exactly that, so a scorer named after Mastra's gives Mastra's number.
"""

from __future__ import annotations

import json
import math
import re
import sys
from functools import cache
from importlib import resources
from typing import Any

# JavaScript's \s and String.prototype.trim set (WhiteSpace + LineTerminator), not Python's.
WS_CLASS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
WS_RUN = re.compile(f"[{WS_CLASS}]+")
WS_ONE = re.compile(f"[{WS_CLASS}]")
# The same set for str.strip: the regex `^\s+|\s+$` is quadratic in a run of spaces inside an agent's text
WS_CHARS = ("\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
            + "\u2028\u2029\u202f\u205f\u3000\ufeff")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
EPSILON = sys.float_info.epsilon  # Number.EPSILON


def trim(text: str) -> str:
    """String.prototype.trim."""
    return text.strip(WS_CHARS)


def utf16(text: str) -> str:
    """The string as UTF-16 code units, one (surrogate) character each: JavaScript's `length` and indexing."""
    if not _ASTRAL.search(text):
        return text
    data = text.encode("utf-16-le", "surrogatepass")
    return "".join(chr(int.from_bytes(data[i : i + 2], "little")) for i in range(0, len(data), 2))


def js_round(x: float) -> float:
    """Math.round: the nearest integer, halves toward +infinity."""
    if not math.isfinite(x):
        return x
    low = math.floor(x)
    return float(low + 1 if x - low >= 0.5 else low)


def round2(x: float) -> float:
    """Mastra's roundToTwoDecimals: Math.round((x + Number.EPSILON) * 100) / 100."""
    return js_round((x + EPSILON) * 100) / 100


def json_equal(a: Any, b: Any) -> bool:
    """JSON.stringify(a) === JSON.stringify(b): key order matters, 1 equals 1.0, true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, dict) and isinstance(b, dict):
        return _js_keys(a) == _js_keys(b) and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    a, b = _json_null(a), _json_null(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return type(a) is type(b) and a == b


_INDEX_KEY = re.compile(r"0|[1-9][0-9]{0,9}")


def _js_keys(mapping: dict[Any, Any]) -> list[Any]:
    """The keys in a JavaScript object's order: array-index keys ("0", "7", "10") first, ascending,
    then the others as inserted. JSON.stringify writes them so."""
    index = sorted((int(k), k) for k in mapping if isinstance(k, str) and _INDEX_KEY.fullmatch(k)
                   and int(k) < 2**32 - 1)
    indices = {k for _, k in index}
    return [k for _, k in index] + [k for k in mapping if k not in indices]


def _json_null(value: Any) -> Any:
    # JSON.stringify writes NaN and the infinities as null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ---- longest common subsequence (Mastra's textual-difference) ----


# Pairs of code units one comparison may cost: about 3 s here. Mastra's table of m x n JavaScript
# numbers runs out of memory far below it (about 20,000 units a side), so nothing it scores is refused.
LCS_MAX_PAIRS = 4 * 10**10
LCS_MAX_MASK_BYTES = 2**28  # one bit array per character the texts share: thousands of kinds x 200,000 units


class TooLongToCompare(ValueError):
    """The comparison would cost more time or memory than one score may take."""


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of two strings (bit-parallel, Hyyro 2004)."""
    if len(a) < len(b):
        a, b = b, a
    if len(a) * len(b) > LCS_MAX_PAIRS:
        raise TooLongToCompare(f"comparing {len(a):,} with {len(b):,} UTF-16 units costs over {LCS_MAX_PAIRS:,} steps")
    shared = set(a)
    positions: dict[str, list[int]] = {}
    for i, char in enumerate(b):
        if char in shared:  # a character of b alone never matches: no bit array for it
            positions.setdefault(char, []).append(i)
    if sum(where[-1] for where in positions.values()) // 8 > LCS_MAX_MASK_BYTES:
        raise TooLongToCompare(f"comparing {len(a):,} with {len(b):,} UTF-16 units of {len(positions):,} different "
                               f"characters needs over {LCS_MAX_MASK_BYTES >> 20} MB")
    # Each bit array built at once: OR-ing `1 << i` in one by one is quadratic in len(b).
    masks: dict[str, int] = {}
    for char, where in positions.items():
        bits = bytearray(where[-1] // 8 + 1)
        for i in where:
            bits[i >> 3] |= 1 << (i & 7)
        masks[char] = int.from_bytes(bits, "little")
    full = (1 << len(b)) - 1
    row = full
    for char in a:
        match = row & masks.get(char, 0)
        row = ((row + match) | (row - match)) & full
    return len(b) - row.bit_count()


def lcs_ratio(a: str, b: str) -> float:
    """2 x LCS / (len(a) + len(b)) on UTF-16 code units; identical 1, one side empty 0."""
    if a == b:
        return 1.0
    a, b = utf16(a), utf16(b)
    if not a or not b:
        return 0.0
    return 2 * lcs_length(a, b) / (len(a) + len(b))


# ---- keyword-extractor 0.0.28, English, as Mastra's keyword-coverage calls it ----

_URL = re.compile(r"https?://.*[\r\n]*")
_PUNCT = re.compile("\\.|,|;|!|\\?|\\(|\\)|:|\"|^'|'\\Z|\u201c|\u201d|\u2018|\u2019")
_ODD = re.compile(r"_|@|&|#")
_DIGIT = re.compile(r"[0-9]")


@cache
def stopwords() -> frozenset[str]:
    text = resources.files("evalgate.scorers").joinpath("data/stopwords-en.txt").read_text("utf-8")
    return frozenset(line for line in text.split("\n") if line and not line.startswith("# "))


def strip_tags(text: str) -> str:
    """keyword-extractor's `text.replace(/(<([^>]+)>)/ig, "")`, by `find`: that regex rescans to the end
    from every `<` that no `>` follows, quadratic in an agent's text full of them."""
    out: list[str] = []
    kept = 0
    start = text.find("<")
    while start >= 0:
        end = text.find(">", start + 1)
        if end < 0:  # no `>` after this `<`, nor after any later one: no more tags
            break
        if end == start + 1:  # `<>` holds no tag; a later `<` may open one
            start = text.find("<", start + 1)
            continue
        out.append(text[kept:start])
        kept = end + 1
        start = text.find("<", kept)
    out.append(text[kept:])
    return "".join(out)


def extract_keywords(text: str) -> list[str]:
    """keyword_extractor.extract(text, {language: english, remove_digits, return_changed_case,
    remove_duplicates}): lower-cased non-stopwords in order, without duplicates."""
    if not text:
        return []
    text = trim(strip_tags(text))
    if not text:
        return []
    stop = stopwords()
    out: list[str] = []
    for raw in WS_ONE.split(text):
        url = _URL.search(raw) is not None
        word = raw if url else _PUNCT.sub("", raw)
        units = len(utf16(word))
        if units == 1:
            word = _ODD.sub("", word)
            units = len(utf16(word))
        if units and len(_DIGIT.findall(word)) == units:
            continue
        if not word:
            continue
        low = word.lower()
        if low in stop:
            continue
        out.append(word if url else low)
    return list(dict.fromkeys(out))


# ---- sentiment 5.0.2 (AFINN-165 + emoji), English ----

_SENTIMENT_PUNCT = re.compile(r"[.,/#!?$%^&*;:{}=_`\"~()]")
_WS_PAIRS = re.compile(f"[{WS_CLASS}][{WS_CLASS}]+")


@cache
def _sentiment_data() -> tuple[dict[str, int], frozenset[str]]:
    raw = resources.files("evalgate.scorers").joinpath("data/sentiment-en.json").read_text("utf-8")
    data = json.loads(raw)
    return data["labels"], frozenset(data["negators"])


def sentiment_tokens(text: str) -> list[str]:
    """The sentiment library's tokenize: lower-case, punctuation to spaces, split on single spaces."""
    text = text.lower().replace("\n", " ")
    text = _SENTIMENT_PUNCT.sub(" ", text)
    text = _WS_PAIRS.sub(" ", text)
    return trim(text).split(" ")


def sentiment(text: str) -> float:
    """Sentiment().analyze(text).comparative: AFINN score sum (a negator flips the next word) / tokens."""
    labels, negators = _sentiment_data()
    tokens = sentiment_tokens(text)
    score = 0
    for i in range(len(tokens) - 1, -1, -1):
        value = labels.get(tokens[i])
        if value is None:
            continue
        # `negators[prev]` in JavaScript: "constructor" finds Object.prototype's, a truthy function
        if i > 0 and (tokens[i - 1] in negators or tokens[i - 1] == "constructor"):
            value = -value
        score += value
    return score / len(tokens) if tokens else 0.0
