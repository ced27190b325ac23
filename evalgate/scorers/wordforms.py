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
_EDGE = re.compile(r"^[^\w']+|[^\w']+$")
AUXILIARIES = frozenset(
    "am is are was were be been being has have had having do does did will would shall should can could "
    "may might must".split()
)
MODALS = frozenset("will would shall should can could may might must".split())
NEGATIONS = frozenset({"not", "never"})
PRONOUNS = frozenset("i you he she it we they who that this there what".split())
DETERMINERS = frozenset("a an the my your his her its our their this that these those some any no every each".split())
# Contraction endings: what the first part is followed by.
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
    return [w for w in _NON_WORD.sub(" ", normalize(term)).strip().split(" ") if w]


def _infinitive(word: str) -> str | None:
    forms, infinitives = _verbs()
    if word in forms:
        return forms[word]
    if word in infinitives:
        return word
    return None


def _terms(text: str) -> list[tuple[str, list[str]]]:
    """(lower-case word, its raw pieces) per token, contractions split as compromise splits them."""
    out: list[tuple[str, list[str]]] = []
    for token in jstext.WS_ONE.split(jstext.trim(text)):
        word = _EDGE.sub("", token.replace("\u2019", "'")).lower()
        if not word:
            out.append(("", [token]))
            continue
        if word in _NEGATED:
            out += [(_NEGATED[word], [token]), ("not", [])]
        elif word.endswith("n't") and len(word) > 3:
            out += [(word[:-3], [token]), ("not", [])]
        else:
            for end, full in _CONTRACTED.items():
                head = word[: -len(end)]
                if word.endswith(end) and head in PRONOUNS:
                    out += [(head, [token]), (full, [])]
                    break
            else:
                out.append((word, [token]))
    return out


def elements(text: str) -> list[str]:
    """The distinct words Mastra's completeness extracts from `text`, in order of appearance."""
    terms = _terms(text)
    words = [w for w, _ in terms]
    kept: list[str] = []
    i = 0
    while i < len(terms):
        word, raw = terms[i]
        if not _starts_verb_group(words, i):
            kept += [w for piece in raw for w in clean(piece)] if raw else [word]
            i += 1
            continue
        j = i
        negated = False
        group: list[str] = []
        while j < len(terms) and (words[j] in AUXILIARIES or words[j] in NEGATIONS):
            negated |= words[j] in NEGATIONS
            group.append(words[j])
            if j > i and words[j] not in AUXILIARIES | NEGATIONS:
                break
            j += 1
        main = words[j] if j < len(terms) and _infinitive(words[j]) and words[j] not in DETERMINERS else None
        if main is not None and (group or True):
            verb = _infinitive(main) or main
            end = j + 1
        else:
            auxes = [w for w in group if w not in NEGATIONS]
            verb = _infinitive(auxes[-1]) or auxes[-1] if auxes else None
            end = j
        # Pronoun pieces of a contraction stay (compromise keeps them in its nouns).
        for k in range(i, end):
            if terms[k][1] and terms[k][0] in PRONOUNS:
                kept += [w for piece in terms[k][1] for w in clean(piece)]
        if negated:
            kept += ["do", "not"] if verb != "do" else ["do", "not"]
        if verb:
            kept += clean(verb)
        i = max(end, i + 1)
    return list(dict.fromkeys(w for w in kept if w))


def _starts_verb_group(words: list[str], i: int) -> bool:
    word = words[i]
    if word in AUXILIARIES:
        return True
    if _infinitive(word) is None:
        return False
    prev = words[i - 1] if i > 0 else None
    if prev in DETERMINERS:
        return False
    return prev is None or prev in PRONOUNS or prev in NEGATIONS or prev == "to" or word in _verbs()[0]


def covered(element: str, others: Iterable[str]) -> bool:
    """Mastra's loose match: up to 3 letters exactly; else one contains the other and is over 60% of it."""
    for other in others:
        if len(element) <= 3:
            if element == other:
                return True
            continue
        longer, shorter = (element, other) if len(element) > len(other) else (other, element)
        if shorter in longer and len(shorter) / len(longer) > 0.6:
            return True
    return False


def coverage(original: list[str], simplified: list[str]) -> float:
    """Mastra's calculateCoverage: share of `original` covered by `simplified`; none: 1 if both empty, else 0."""
    if not original:
        return 1.0 if not simplified else 0.0
    return sum(1 for e in original if covered(e, simplified)) / len(original)
