"""The words Mastra's completeness scorer extracts, reproduced without the compromise NLP library.

Mastra (`@mastra/evals` completeness) runs compromise over the text and keeps, as lower-case
ASCII words (accents removed, split at anything not a-z or 0-9): the nouns, the verbs turned to
their infinitive, the topics, and every term of the text *after* that conversion (it changes the
document in place). So the elements are the text's words with each verb phrase rewritten as
compromise's toInfinitive rewrites it: auxiliaries and modals removed, the main verb an infinitive
("was running" -> "run", "is" -> "be"), a negated phrase led by do/does ("don't know" -> "does not
know"), plus the pieces of contracted pronouns ("it's" -> "it", "s").

What is a verb comes from compromise's tagger, replayed over its own model (tagger.py, tagmatch.py).
docs/scorers.md gives the measured agreement and what still differs.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from evalgate.scorers import jstext, tagger

_NON_WORD = re.compile(r"[^a-z0-9]+")
PRONOUNS = frozenset(["i", "you", "he", "she", "it", "we", "they", "who", "that", "this", "there", "what"])
# Contraction endings after a pronoun: the word they stand for.
_CONTRACTED = {"'s": "is", "'re": "are", "'m": "am", "'ll": "will", "'ve": "have", "'d": "would"}
_SPLIT_WORDS = {"that's": ("that", "is"), "what's": ("what", "is"), "let's": ("let", "us")}
_NEGATED = {"can't": "can", "won't": "will", "shan't": "shall", "ain't": "is"}
_COPULA = frozenset(["are", "were", "been", "is", "am", "was", "be", "being"])
_TENSES = ("Infinitive", "Participle", "PastTense", "Gerund", "PresentTense")
_NOT_ROOT = frozenset(["Negative", "Auxiliary", "Modal", "Adverb", "Prefix"])
_SENTENCE_END = re.compile(r"[.!?]")
_STOP = re.compile(r"[.!?\u203D\u2E18\u203C\u2047-\u2049]$")  # a sentence ends at these before whitespace
_NEWLINES = re.compile(r"(?:\r?\n|\r)+")
_NOT_WORD = frozenset([".", "?", "!", ":", ";", "-", "–", "—", "--", "...", "(", ")", "[", "]", '"', "'", "`", "«", "»",
                       "*", "•"])
_BOUNDARY = re.compile(r"^[!?.]+$")
_SUBJECT_PLURAL = frozenset(["i", "we", "they", "those"])


def normalize(text: str) -> str:
    """Mastra's normalizeString: NFD, combining marks removed, lower-cased."""
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(c for c in decomposed if not "\u0300" <= c <= "\u036f").lower()


def clean(term: str) -> list[str]:
    """Mastra's cleanAndSplitTerm: the a-z/0-9 runs of the normalized term."""
    return [w for w in _NON_WORD.sub(" ", normalize(term)).split(" ") if w]


def _convert(word: str, rules: dict[str, Any]) -> str:
    """suffix-thumb's convert (compromise's conjugation models): exceptions, then the longest known suffix."""
    if word in rules.get("ex", {}):
        return str(rules["ex"][word])
    if any(word.endswith(end) for end in rules.get("same", ())):
        return word
    fwd: dict[str, str] = rules.get("fwd", {})
    both: dict[str, str] = rules.get("both", {})
    for i in range(len(word) - 1, 0, -1):
        stem, suffix = word[: len(word) - i], word[len(word) - i :]
        if suffix in fwd:
            return stem + fwd[suffix]
        if suffix in both:
            return stem + both[suffix]
    if "" in fwd:
        return word + fwd[""]
    if "" in both:
        return word + both[""]
    return word


def infinitive(text: str, tags: set[str]) -> str:
    """compromise's toInfinitive of a verb phrase's root (its words, space-separated), by the tense its tags
    give (else its ending). Like compromise, it conjugates the first word and keeps the second (a particle,
    "set up"), or conjugates the second after a prefix; a third word is lost."""
    if text in _COPULA:
        return "be"
    tense = next((t for t in _TENSES if t in tags), None) or tagger.guess_tense(text)
    rules = {"Participle": "fromParticiple", "PastTense": "fromPast", "PresentTense": "fromPresent",
             "Gerund": "fromGerund"}.get(tense or "")
    if not rules:
        return text
    words = text.split(" ")
    verb, particle, prefix = words[0], words[1] if len(words) > 1 else "", ""
    if particle and verb in tagger.model().prefixes:
        prefix, verb, particle = verb, particle, ""
    out = _convert(verb, tagger.model().to_infinitive[rules])
    return " ".join(w for w in (prefix, out, particle) if w)


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
    """(lower-case word, raw token it came from or "" for a word a contraction implies), split as compromise
    splits contractions: "don't" -> do + not, "it's" -> it + is."""
    out: list[tuple[str, str]] = []
    for n, line in enumerate(_NEWLINES.split(jstext.trim(text))):
        if n:
            out.append(("\n", ""))  # compromise ends a sentence at every line break
        for whole in jstext.WS_ONE.split(jstext.trim(line)):
            for token in _hyphen_pieces(whole):
                out += _contraction(token)
    return out


def _contraction(token: str) -> list[tuple[str, str]]:
    word = strip_edges(token.replace("\u2019", "'")).lower()
    if word in _SPLIT_WORDS:  # compromise rewrites these as two words of their own
        first, second = _SPLIT_WORDS[word]
        stripped = strip_edges(token)
        lead = token.find(stripped)
        return [(first, token[:lead] + first), (second, second + token[lead + len(stripped) :])]
    if word in _NEGATED or (word.endswith("n't") and len(word) > 3):
        return [(_NEGATED.get(word, word[:-3]), token), ("not", "")]
    if word == "cannot":
        return [("can", token), ("not", "")]
    for end, full in _CONTRACTED.items():
        if end in ("'ll", "'ve", "'re", "'m") and word.endswith(end) and len(word) > len(end):
            return [(word[: -len(end)], token), (full, "")]  # after any word: "should've" is should + have
        if word.endswith(end) and word[: -len(end)] in PRONOUNS:
            # 's is "is", "has" or a possessive: the tagger decides, as compromise's contractionTwo does
            return [(word[: -len(end)], token), (full if end != "'s" else "'s", "")]
    return [(word, token)]


_DASHES = re.compile(r"[-–—]")
_LETTERS_DASH = re.compile(r"^([a-z\u00C0-\u00FF`\"'/]+)[-–—]([a-z0-9\u00C0-\u00FF].*)", re.IGNORECASE | re.DOTALL)
_NUMBER_DASH = re.compile(r"^[('\"]?([0-9]{1,4})[-–—]([a-z\u00C0-\u00FF`\"'/-]+[)'\"]?$)", re.IGNORECASE)


def _hyphen_pieces(token: str) -> list[str]:
    """compromise's hasHyphen/splitHyphens: "non-blocking" is two words, "re-do", "x-ray", "flower-like" one."""
    parts = _DASHES.split(token)
    if len(parts) <= 1:
        return [token]
    if len(parts[0]) == 1 and re.match(r"[a-z]", parts[0], re.IGNORECASE):
        return [token]
    m = tagger.model()
    if parts[0] in m.prefixes or re.sub(r"[.?!]$", "", parts[1].strip()) in m.hyphen_suffixes:
        return [token]
    if not (_LETTERS_DASH.match(token) or _NUMBER_DASH.match(token)):
        return [token]
    dash = _DASHES.search(token).group(0)  # type: ignore[union-attr]
    return [p + dash for p in parts[:-1]] + [parts[-1]]


def _sentences(terms: list[tuple[str, str]]) -> list[list[tagger.Term]]:
    """The terms as tagger terms, in sentences ending at a token that ends in . ! or ?"""
    sentences: list[list[tagger.Term]] = [[]]
    pending = ""  # a contraction's punctuation follows its last word
    for n, (word, token) in enumerate(terms):
        if word == "\n" and not token:
            if sentences[-1]:
                sentences.append([])
            continue
        if word == "'s" and not token:  # compromise's contractionTwo splits "it's" after tagging, or not
            head_s = sentences[-1][-1]
            head_s.implicit, head_s.apostrophe_s = "", True
            head_s.post, pending = pending, ""
            if _STOP.search(head_s.post):
                sentences.append([])
            continue
        if token in _NOT_WORD or _BOUNDARY.match(token) or (not word and not token):
            if sentences[-1]:  # punctuation alone is no term: it follows the word before
                sentences[-1][-1].post += token
                if _STOP.search(token):
                    sentences.append([])
            continue
        stripped = (strip_edges(token) or token) if token else word
        lead = token.find(stripped) if token and stripped else 0
        pre = token[:lead] if token else ""
        post = token[lead + len(stripped):] if token else pending
        if n + 1 < len(terms) and not terms[n + 1][1]:
            pending, post = post, ""
        sentence = sentences[-1]
        head = bool(token) and n + 1 < len(terms) and not terms[n + 1][1]  # a contraction's first word
        if not token:  # the word a contraction implies: compromise gives it no text of its own
            term = tagger.Term(text="", normal="", machine=word, implicit=word)
        elif head:
            term = tagger.Term(text=stripped, normal=stripped.lower().replace("\u2019", "'"), machine=word,
                               implicit=word)
        else:
            term = tagger.Term(text=stripped, normal=word.strip("'") or stripped.lower())
        term.pre, term.post, term.index, term.raw = pre, post, len(sentence), token
        sentence.append(term)
        if _STOP.search(post):
            sentences.append([])
    tagger.tag(sentences)
    return [s for s in sentences if s]


def _chunk(terms: list[tagger.Term]) -> list[str]:
    """compromise's chunker, its first passes: which terms are in a verb phrase."""
    chunks = []
    for t in terms:
        chunk = ""
        if t.normal in ("this", "then"):
            chunk = "Noun" if t.normal == "this" else "Pivot"
        elif "Verb" in t.tags:
            chunk = "Verb"
        elif t.tags & {"Noun", "Determiner", "Value"}:
            chunk = "Noun"
        chunks.append(chunk)
    for i, t in enumerate(terms):
        if chunks[i] or not t.tags & {"Adverb", "Negative"} or "Adjective" in t.tags:
            continue
        left = terms[i - 1].tags if i > 0 else tagger.Tags()
        right = terms[i + 1].tags if i + 1 < len(terms) else tagger.Tags()
        if "Adjective" in left:
            continue
        if "Verb" in left or ("Verb" in right and "Adjective" not in right):
            chunks[i] = "Verb"
    return chunks


def _split(phrases: list[list[int]], cut: Any) -> list[list[int]]:
    """Cut each phrase before position k wherever cut(phrase, k) says so."""
    out = []
    for p in phrases:
        start = 0
        for k in range(1, len(p)):
            if cut(p, k):
                out.append(p[start:k])
                start = k
        out.append(p[start:])
    return [p for p in out if p]


def _without(phrases: list[list[int]], drop: Any) -> list[list[int]]:
    """compromise's .not(): the phrases without the terms drop() says, split where those were."""
    out = []
    for p in phrases:
        run: list[int] = []
        for i in p:
            if drop(i):
                if run:
                    out.append(run)
                run = []
            else:
                run.append(i)
        if run:
            out.append(run)
    return out


def _after_run(p: list[int], k: int, skip: Any, then: Any) -> bool:
    """Does p, from position k on, have terms skip() says (maybe none) and then a term then() says?"""
    while k < len(p) and skip(p[k]) and not then(p[k]):
        k += 1
    return k < len(p) and then(p[k])


def _verb_phrases(terms: list[tagger.Term], chunks: list[str]) -> list[list[int]]:
    """compromise's verbs() (its findVerbs): runs of verb-chunk terms without conjunctions, prepositions and
    adjectives, split after a comma and where two verb groups meet; each with a verb in it."""
    def has(i: int, *tags: str) -> bool:
        return any(tag in terms[i].tags for tag in tags)

    def word(i: int) -> str:
        return terms[i].word

    phrases = _without([list(range(len(terms)))], lambda i: chunks[i] != "Verb" or has(i, "Conjunction", "Preposition"))
    phrases = _split(phrases, lambda p, k: "," in terms[p[k - 1]].post)
    # the reason he will is ...
    phrases = _split(phrases, lambda p, k: word(p[k - 1]) in ("do", "did", "am", "was", "is", "will")
                     and word(p[k]) in ("is", "was"))
    # like being pampered; like to be pampered
    phrases = _split(phrases, lambda p, k: word(p[k]) == "being" and has(p[k - 1], "Verb")
                     and not has(p[k - 1], "Copula") and k + 1 < len(p) and has(p[k + 1], "Verb"))
    phrases = _split(phrases, lambda p, k: word(p[k]) == "to" and k + 2 < len(p) and word(p[k + 1]) == "be"
                     and has(p[k - 1], "Verb") and has(p[k + 2], "Verb"))
    phrases = _split(phrases, lambda p, k: word(p[k - 1]) == "help" and has(p[k], "PresentTense"))
    # what i can sell is..; what i can sell will be; directing had
    phrases = _split(phrases, lambda p, k: has(p[k - 1], "PresentTense", "PastTense") and (
        (k == len(p) - 1 and has(p[k], "Copula")) or word(p[k]) in ("had", "has")
        or (k == len(p) - 2 and word(p[k]) == "will" and word(p[k + 1]) == "be")))
    phrases = [p[:-1] if has(p[-1], "Reflexive") else p for p in phrases]
    phrases = _without(phrases, lambda i: has(i, "Adjective"))
    phrases = _split(phrases, lambda p, k: has(p[k - 1], "PastTense") and has(p[k], "PastTense"))
    phrases = _split(phrases, lambda p, k: has(p[k - 1], "PastTense") and has(p[k], "Auxiliary")
                     and _after_run(p, k, lambda i: has(i, "Auxiliary"), lambda i: has(i, "PastTense")))
    phrases = _split(phrases, lambda p, k: has(p[k - 1], "Gerund") and k >= 2 and has(p[k - 2], "Copula")
                     and has(p[k], "PastTense"))
    phrases = [p for p in phrases if p and any(has(i, "Verb") for i in p)]
    # held annually is called: if any phrase has a verb, adverbs, a copula, all are cut before each copula
    if any(has(p[k], "Verb") and not has(p[k], "Auxiliary")
           and _after_run(p, k + 1, lambda i: has(i, "Adverb"), lambda i: has(i, "Copula"))
           for p in phrases for k in range(len(p))):
        phrases = _split(phrases, lambda p, k: has(p[k], "Copula"))
    return phrases


def _plural_subjects(terms: list[tagger.Term], chunks: list[str]) -> list[bool]:
    """For each term, compromise's doDoes of a verb there: is the last noun before it i/we/they/those or plural?"""
    out, plural = [], False
    for i, t in enumerate(terms):
        out.append(plural)
        if chunks[i] == "Noun" and t.tags & {"Noun", "Pronoun"}:
            plural = t.word in _SUBJECT_PLURAL or "Plural" in t.tags
    return out


def _pieces(indexes: list[int]) -> list[list[int]]:
    """Runs of consecutive positions: what compromise's .not() leaves of a phrase, one match per run."""
    out: list[list[int]] = []
    for i in indexes:
        if out and out[-1][-1] == i - 1:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def _verb_words(terms: list[tagger.Term], plural: list[bool], phrase: list[int]) -> list[str]:
    """A verb phrase as compromise's toInfinitive leaves it: auxiliaries gone, the main verb an infinitive,
    a negated one led by do/does."""
    # compromise's getMain: the words that are no auxiliary, modal, adverb or negative; of several runs of
    # them, the last run
    if len(phrase) > 1:  # words, a contraction's counted apart ("isn't" is two)
        runs = _pieces([i for i in phrase if not terms[i].tags & _NOT_ROOT])
        root = runs[-1] if runs else []
    else:
        root = list(phrase)
    if not root:
        root = [i for i in phrase if "Negative" not in terms[i].tags]
    if len(terms) == 1 and _SENTENCE_END.search(terms[0].post):
        root = []  # compromise reads a one-word sentence's root with its full stop, and cannot conjugate that
    negative = any("Negative" in terms[i].tags for i in phrase)
    first = root[0] if root else None
    keep = {"Adverb", "Negative", "Prefix"}
    aux = [i for i in phrase if first is not None and i < first and not terms[i].tags & keep]
    # a contraction's implied word ("not" of "don't") shows once its contraction is removed alone
    shows = len(_pieces(aux)) == 1
    removed, in_root = set(aux), set(root)  # sets: one phrase can be a whole long text
    words: list[str] = []
    changed = False  # was the last written term replaced or removed?
    for i in phrase:
        t = terms[i]
        if i in removed:
            changed = shows
        elif i == first:
            tags = set().union(*(terms[k].tags for k in root))
            words += infinitive(" ".join(terms[k].word for k in root if terms[k].word), tags).split(" ")
            changed = True
        elif i in in_root:
            continue
        elif t.raw:
            words += clean(t.raw)
            changed = False
        elif changed:
            words.append(t.word)
    if negative:
        if not any(terms[i].word == "not" for i in phrase):
            words.insert(0, "not")
        words.insert(0, "do" if plural[phrase[0]] else "does")
    return words


def elements(text: str) -> list[str]:
    """The distinct words Mastra's completeness extracts from `text`, in order of appearance."""
    kept: list[str] = []
    for terms in _sentences(_terms(text)):
        chunks = _chunk(terms)
        phrases = {p[0]: p for p in _verb_phrases(terms, chunks)}
        plural = _plural_subjects(terms, chunks)
        i = 0
        while i < len(terms):
            if i in phrases:
                phrase = phrases[i]
                kept += _verb_words(terms, plural, phrase)
                i = phrase[-1] + 1
                continue
            kept += clean(terms[i].raw)  # a word a contraction implies shows only in its contraction
            i += 1
    return list(dict.fromkeys(w for piece in kept for w in clean(piece)))


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
