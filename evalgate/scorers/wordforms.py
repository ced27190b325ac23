"""The words Mastra's completeness scorer extracts, reproduced without the compromise NLP library.

Mastra (`@mastra/evals` completeness) runs compromise over the text and keeps, as lower-case
ASCII words (accents removed, split at anything not a-z or 0-9): the nouns, the verbs turned to
their infinitive, the topics, and every term of the text *after* that conversion (it changes the
document in place). So the elements are the text's words with each verb group replaced by its
main verb's infinitive ("was running" -> "run", "is" -> "be", "don't know" -> "do not know"),
plus the pieces of contracted pronouns ("it's" -> "it", "s").

compromise decides what is a verb from a lexicon and from context. This module uses the
infinitives of compromise's own lexicon (data/verbs-en.json) and a few context rules; where the
two disagree (a word that is a verb in one sentence and a noun in the next, verbs outside the
lexicon), the extracted words differ. docs/scorers.md gives the measured agreement.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from functools import cache
from importlib import resources

from evalgate.scorers import jstext

_NON_WORD = re.compile(r"[^a-z0-9]+")
AUXILIARIES = frozenset(
    ["am", "is", "are", "was", "were", "be", "been", "being", "has", "have", "had", "having", "do", "does", "did",
     "will", "would", "shall", "should", "can", "could", "may", "might", "must"]
)
NEGATIONS = frozenset({"not", "never"})
PRONOUNS = frozenset(["i", "you", "he", "she", "it", "we", "they", "who", "that", "this", "there", "what"])
DETERMINERS = frozenset(
    ["a", "an", "the", "my", "your", "his", "her", "its", "our", "their", "this", "that", "these", "those", "some",
     "any", "no", "every", "each"]
)
# Contraction endings after a pronoun: the word they stand for.
_CONTRACTED = {"'s": "is", "'re": "are", "'m": "am", "'ll": "will", "'ve": "have", "'d": "would"}
_NEGATED = {"can't": "can", "won't": "will", "shan't": "shall", "ain't": "is"}


@cache
def _verbs() -> tuple[dict[str, str], frozenset[str]]:
    raw = resources.files("evalgate.scorers").joinpath("data/verbs-en.json").read_text("utf-8")
    data = json.loads(raw)
    return data["forms"], frozenset(data["infinitives"])


def normalize(text: str) -> str:
    """Mastra's normalizeString: NFD, combining marks removed, lower-cased."""
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(c for c in decomposed if not "\u0300" <= c <= "\u036f").lower()


def clean(term: str) -> list[str]:
    """Mastra's cleanAndSplitTerm: the a-z/0-9 runs of the normalized term."""
    return [w for w in _NON_WORD.sub(" ", normalize(term)).split(" ") if w]


def infinitive(word: str) -> str | None:
    """The infinitive of a verb form compromise knows, else None."""
    forms, infinitives = _verbs()
    if word in forms:
        return forms[word]
    return word if word in infinitives else None


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_" or char == "'"  # Python's `\w` (str.isalnum or `_`), and `'`


def strip_edges(token: str) -> str:
    r"""`re.sub(r"^[^\w']+|[^\w']+$", "", token)`, by scanning from both ends: the regex is quadratic
    in a long run of punctuation (a markdown rule of dashes) inside an agent's token."""
    start, end = 0, len(token)
    while start < end and not _word_char(token[start]):
        start += 1
    while end > start and not _word_char(token[end - 1]):
        end -= 1
    return token[start:end]


def _terms(text: str) -> list[tuple[str, str]]:
    """(lower-case word, raw token it came from or ""), contractions split as compromise splits them."""
    out: list[tuple[str, str]] = []
    for token in jstext.WS_ONE.split(jstext.trim(text)):
        word = strip_edges(token.replace("\u2019", "'")).lower()
        if word in _NEGATED or (word.endswith("n't") and len(word) > 3):
            out += [("does", ""), (_NEGATED.get(word, word[:-3]), token), ("not", "")]
            continue
        for end, full in _CONTRACTED.items():
            if word.endswith(end) and word[: -len(end)] in PRONOUNS:
                out += [(word[: -len(end)], token), (full, "")]
                break
        else:
            out.append((word, token))
    return out


def elements(text: str) -> list[str]:
    """The distinct words Mastra's completeness extracts from `text`, in order of appearance."""
    terms = _terms(text)
    words = [w for w, _ in terms]
    kept: list[str] = []
    i = 0
    while i < len(terms):
        word, token = terms[i]
        if not _is_verb(words, i):
            kept += clean(token) if token else [word]
            i += 1
            continue
        # A verb group: auxiliaries and negations, then (maybe) the main verb. compromise keeps the
        # main verb's infinitive, or the last auxiliary's when there is no main verb.
        j, group = i, []
        while j < len(terms) and (words[j] in AUXILIARIES or words[j] in NEGATIONS or words[j] == "does"):
            group.append(words[j])
            j += 1
        if j < len(terms) and words[j] not in DETERMINERS and infinitive(words[j]) and (group or j == i):
            group.append(words[j])
            j += 1
        if j == i:
            j = i + 1
            group = [word]
        main = [w for w in group if w not in NEGATIONS]
        negated = [w for w in group if w in NEGATIONS]
        for k in range(i, j):  # a contracted pronoun keeps its pieces (compromise's nouns)
            if terms[k][0] in PRONOUNS:
                kept += clean(terms[k][1])
        if "does" in group and negated:
            kept.append("does")
        if main:
            last = main[-1]
            kept.append(infinitive(last) or last)
        kept += negated
        i = j
    return list(dict.fromkeys(w for piece in kept for w in clean(piece)))


def _is_verb(words: list[str], i: int) -> bool:
    word = words[i]
    if word in AUXILIARIES or word == "does":
        return True
    if infinitive(word) is None:
        return False
    return i == 0 or words[i - 1] not in DETERMINERS


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
    """Mastra's calculateCoverage: share of `original` covered by `simplified`; none: 1 if both empty, else 0."""
    if not original:
        return 1.0 if not simplified else 0.0
    exact = set(simplified)
    found = sum(1 for e in original if e in exact or covered(e, simplified))
    return found / len(original)
