"""compromise's English tagger, as far as telling a noun from a verb needs it.

Mastra's completeness turns the text's verbs into infinitives, and compromise (the NLP library it
uses) decides what is a verb in passes: the lexicon, then for unknown words the word's ending and
its neighbours, then for ambiguous words ("records", "runs") clues in the words around them, then
its ~570 match rules (tagmatch.py). This module replays those passes over compromise's own model
(data/compromise-en.json, exported from the library by tests/mastra/export_compromise.mjs), loaded
on first use. docs/scorers.md gives the measured agreement.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from evalgate.scorers import tagmatch

_PREFIX = re.compile(r"^(under|over|mis|re|un|dis|semi)-?")
_LEX_PREFIX = re.compile(r"^(under|over|mis|re|un|dis|semi|pre|post)-?")
_ALLOW_PREFIX = frozenset(["Verb", "Infinitive", "PastTense", "Gerund", "PresentTense", "Adjective", "Participle"])
_TITLE = re.compile(r"^[^\W\d_a-z][^\W\d_A-Z'’]", re.UNICODE)  # /^\p{Lu}[\p{Ll}'’]/u, near enough
_DIGIT = re.compile(r"[0-9]")
_NOT_PROPER = ("Date", "Month", "WeekDay", "Unit", "Expression")
_SPLIT_AT = re.compile(r"[,:;]")
_NUMBER = re.compile(r"^[0-9]+$")
_MAYBE_DATE = frozenset(["may", "april", "august", "jan"])
_TIMEOUT = 1.0  # seconds per regex and word: compromise's patterns are simple, this only bounds a pathological word
_UNCOUNTABLE = ("Acronym", "Abbreviation", "ProperNoun", "Uncountable", "Possessive", "Pronoun", "Activity",
                "Honorific", "Month")


class Tags:
    """A term's tags in the order they were given, as compromise's (JavaScript) Set keeps them: compromise
    breaks ties between tags by that order, and a Python set's order changes with every process."""

    __slots__ = ("_d",)

    def __init__(self, tags: Iterable[str] = ()) -> None:
        self._d: dict[str, None] = dict.fromkeys(tags)

    def __contains__(self, tag: object) -> bool:
        return tag in self._d

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._d))

    def __len__(self) -> int:
        return len(self._d)

    def __bool__(self) -> bool:
        return bool(self._d)

    def __eq__(self, other: object) -> bool:
        return set(self._d) == (set(other) if isinstance(other, (set, frozenset, Tags)) else other)

    __hash__ = None  # type: ignore[assignment]

    def __and__(self, other: Iterable[str]) -> set[str]:
        return {t for t in other if t in self._d}

    def __le__(self, other: Iterable[str]) -> bool:
        return set(self._d) <= set(other)

    def __isub__(self, other: Iterable[str]) -> Tags:
        for t in other:
            self._d.pop(t, None)
        return self

    def add(self, tag: str) -> None:
        self._d.setdefault(tag, None)

    def update(self, tags: Iterable[str]) -> None:
        for t in tags:
            self._d.setdefault(t, None)

    def discard(self, tag: str) -> None:
        self._d.pop(tag, None)

    def difference_update(self, tags: Iterable[str]) -> None:
        self -= tags

    def clear(self) -> None:
        self._d.clear()


@dataclass
class Term:
    text: str  # as written (case kept), without surrounding punctuation
    normal: str  # lower case
    post: str = ""  # punctuation after it
    pre: str = ""
    index: int = 0  # position in its sentence
    raw: str = ""  # the token it came from ("" for a word a contraction implies)
    machine: str = ""  # a contraction's piece: "do" of "don't" (its normal), "not" of the implied word
    implicit: str = ""
    apostrophe_s: bool = False  # "it's": is, has or possessive, decided after the pre-tagger

    @property
    def word(self) -> str:
        return self.machine or self.normal
    tags: Tags = field(default_factory=Tags)
    switch: str | None = None


@dataclass(frozen=True)
class Model:
    lexicon: dict[str, list[str]]
    multi: dict[str, int]  # first word of a multi-word entry -> the most words of one
    switches: dict[str, str]
    clues: dict[str, Any]
    parents: dict[str, list[str]]
    conflicts: dict[str, frozenset[str]]
    depth: dict[str, int]
    suffixes: list[dict[str, str]]
    ends_with: dict[str, list[tuple[re.Pattern[str], str]]]
    neighbours: dict[str, list[list[str]]]
    to_infinitive: dict[str, Any]
    prefixes: frozenset[str]
    hyphen_suffixes: frozenset[str]
    regex_text: list[tuple[_Regex, list[str]]]
    regex_normal: list[tuple[_Regex, list[str]]]
    regex_numbers: list[tuple[_Regex, list[str]]]
    children: dict[str, list[str]]
    post_rules: list[dict[str, Any]]
    post_hooks: dict[str, tuple[int, list[int]]]  # word or #Tag -> (its place in compromise's index, rules)


# What compromise's Unicode properties match among ASCII characters: an ASCII word needs no `regex` (slow)
_ASCII_PROPERTIES = {"Letter": "A-Za-z", "Number": "0-9", "Currency_Symbol": "$", "Emoji_Presentation": "",
                     "Extended_Pictographic": ""}
_PROPERTY = re.compile(r"\\p\{(\w+)\}|\\.|\[|\]")


def _ascii_source(source: str) -> str:
    """The pattern with each \\p{..} written as the ASCII characters it matches, in a class or as one."""
    out, inside, last = [], False, 0
    for m in _PROPERTY.finditer(source):
        out.append(source[last : m.start()])
        last = m.end()
        token = m.group(0)
        if m.group(1):
            chars = _ASCII_PROPERTIES[m.group(1)]
            token = chars if inside else (f"[{chars}]" if chars else "(?!)")
        elif token == "[":
            inside = True
        elif token == "]":
            inside = False
        out.append(token)
    out.append(source[last:])
    return "".join(out).replace("[]", "(?!)")


class _Regex:
    """One of compromise's regexes, with JavaScript's meaning: Python's `re` (ASCII \\w and \\d, as JavaScript's)
    and, for a pattern with Unicode properties, the JavaScript translation (jsregex) for a word that is not ASCII."""

    def __init__(self, source: str, flags: str) -> None:
        from evalgate.scorers import jsregex  # with the model, on first use: not on every run's start

        self.js = jsregex.compile_js(source, flags) if "\\p{" in source else None
        self.py = re.compile(_ascii_source(source), re.ASCII | (re.IGNORECASE if "i" in flags else 0))

    def search(self, text: str) -> bool:
        if self.js is not None and not text.isascii():
            return self.js.search(text, timeout=_TIMEOUT)
        return self.py.search(text) is not None


def _regexes(raw: list[list[Any]]) -> list[tuple[_Regex, list[str]]]:
    return [(_Regex(source, flags), [tags] if isinstance(tags, str) else tags) for source, tags, flags in raw]


@cache
def model() -> Model:
    raw = json.loads(resources.files("evalgate.scorers").joinpath("data/compromise-en.json").read_text("utf-8"))
    lexicon: dict[str, list[str]] = {}
    multi: dict[str, int] = {}
    for tags, words in raw["lexicon"].items():
        for word in words.split("|"):
            lexicon[word] = tags.split(",")
            if " " in word:
                first, n = word.split(" ", 1)[0], word.count(" ") + 1
                multi[first] = max(multi.get(first, 0), n)
    switches = {w: form for form, words in raw["switches"].items() for w in words.split("|")}
    tags = raw["tags"]
    ends_with = {ch: [(re.compile(src), tag) for src, tag, _ in regs] for ch, regs in raw["endsWith"].items()}
    return Model(
        lexicon=lexicon, multi=multi, switches=switches, clues=raw["clues"],
        parents={t: v[0] for t, v in tags.items()}, conflicts={t: frozenset(v[1]) for t, v in tags.items()},
        depth={t: len(v[0]) for t, v in tags.items()}, suffixes=raw["suffixes"], ends_with=ends_with,
        neighbours=raw["neighbours"], to_infinitive=raw["toInfinitive"], prefixes=frozenset(raw["prefixes"]),
        hyphen_suffixes=frozenset(raw["hyphenSuffixes"]),
        regex_text=_regexes(raw["regexText"]),
        regex_normal=_regexes(raw["regexNormal"]), regex_numbers=_regexes(raw["regexNumbers"]),
        children={t: v[2] for t, v in tags.items()}, post_rules=tagmatch.prepare(raw["postTagger"]["rules"]),
        post_hooks={key: (n, rules) for n, (key, rules) in enumerate(raw["postTagger"]["hooks"])},
    )


def set_tag(term: Term, tag: str, m: Model, safe: bool = False) -> None:
    """compromise's setTag: drop the tags it conflicts with, add it and its parents (safe: not over a conflict)."""
    if tag in term.tags or tag == ".":
        return
    conflicts = m.conflicts.get(tag, frozenset())
    if safe and term.tags & conflicts:
        return
    term.tags -= conflicts
    term.tags.update(m.parents.get(tag, ()))
    term.tags.add(tag)


def _looks_plural(word: str) -> bool:
    # compromise's looksPlural, its common path: ends in s, not in ss/us/is
    if len(word) <= 3:
        return False
    return word.endswith("s") and not word.endswith(("ss", "us", "is", "was", "ous"))


def _fill(term: Term, m: Model) -> None:
    for tag in list(term.tags):
        term.tags.update(m.parents.get(tag, ()))
    if "Noun" in term.tags and not term.tags & {"Plural", "Singular"} and not any(t in term.tags for t in _UNCOUNTABLE):
        term.tags.add("Plural" if _looks_plural(term.normal) else "Singular")
    if term.tags == {"Verb"}:  # a bare verb: its tense from its ending
        tense = guess_tense(term.normal)
        if tense:
            term.tags.add(tense)


def _lexicon(terms: list[Term], m: Model) -> None:
    i = 0
    while i < len(terms):
        t = terms[i]
        if t.tags:
            i += 1
            continue
        n = m.multi.get(t.word, 0)
        done = False
        for end in range(min(len(terms), i + n) - 1, i, -1):
            words = " ".join(x.word for x in terms[i : end + 1])
            if words in m.lexicon:
                tags = m.lexicon[words]
                for x in terms[i : end + 1]:
                    for tag in tags:
                        set_tag(x, tag, m)
                if "PhrasalVerb" in tags and len(tags) == 2:
                    set_tag(terms[i + 1], "Particle", m)
                done = True
                break
        if not done and t.word in m.lexicon:
            for tag in m.lexicon[t.word]:
                set_tag(t, tag, m)
        elif not done and _LEX_PREFIX.match(t.word):
            stem = _LEX_PREFIX.sub("", t.word, count=1)
            known = m.lexicon.get(stem)
            if known and len(stem) > 3 and all(tag in _ALLOW_PREFIX for tag in known):
                for tag in known:
                    set_tag(t, tag, m)
        i += 1


def _clauses(terms: list[Term]) -> list[list[Term]]:
    out, start = [], 0
    for i, t in enumerate(terms):
        if _SPLIT_AT.search(t.post) and _split_on(terms, i + 1):
            out.append(terms[start : i + 1])
            start = i + 1
    if start < len(terms):
        out.append(terms[start:])
    return out


def _split_on(terms: list[Term], i: int) -> bool:
    if i >= len(terms):
        return False
    t = terms[i]
    if t.normal == "like" or t.normal in _MAYBE_DATE or t.tags & {"Place", "Date"}:
        return False
    if i > 0:
        last = terms[i - 1]
        if "Date" in last.tags or last.normal in _MAYBE_DATE or "Adjective" in last.tags or "Adjective" in t.tags:
            return False
    return not (len(t.normal) in (1, 2, 4) and _NUMBER.match(t.normal))


def _suffix(word: str, m: Model) -> str | None:
    most = min(7, len(word) - 1)
    for n in range(most, 1, -1):
        tag = m.suffixes[n].get(word[-n:])
        if tag is not None:
            return tag
    return None


def _proper(t: Term) -> bool:
    if t.index == 0 or not _TITLE.match(t.text) or _DIGIT.search(t.text):
        return False
    return not any(x in t.tags for x in _NOT_PROPER) and not re.search(r"[\"']$", t.pre) and t.normal != "the"


def _second_pass(terms: list[Term], m: Model, yelling: bool) -> None:
    for t in terms:
        if t.normal in m.switches:
            t.switch = m.switches[t.normal]
        elif _PREFIX.match(t.normal):
            stem = _PREFIX.sub("", t.normal, count=1)
            if len(stem) > 3 and stem in m.switches:
                t.switch = m.switches[stem]
        if not yelling and _proper(t):  # an unknown title-case word is a proper noun
            _fill(t, m)
            if "Noun" not in t.tags:
                t.tags.clear()
            t.tags.add("ProperNoun")
        if not t.tags:
            tag = _suffix(t.normal, m) or (_suffix(t.implicit, m) if t.implicit else None)
            if tag:
                t.tags.add(tag)
        _regex(t, m)


def _first(regs: list[tuple[_Regex, list[str]]], text: str) -> list[str] | None:
    return next((tags for pattern, tags in regs if pattern.search(text)), None)


def _regex(t: Term, m: Model) -> None:
    """compromise's checkRegex: e-mails, urls, numbers, times; the word's ending as a last resort."""
    text = t.text
    if re.search(r"['‘’‛‵′`´]", t.post) and not re.search(r"['‘’‛‵′`´]", t.pre):
        text += t.post.strip()
    normal = t.word
    tags = _first(m.regex_text, text) or _first(m.regex_normal, normal)
    if not tags and re.search(r"[0-9]", normal):
        tags = _first(m.regex_numbers, normal)
    if not tags and not t.tags and normal:
        tags = next(([tag] for pattern, tag in m.ends_with.get(normal[-1], ()) if pattern.search(normal)), None)
    for tag in tags or ():
        set_tag(t, tag, m)


def _neighbours(terms: list[Term], i: int, m: Model) -> bool:
    t = terms[i]
    if t.tags:
        return False
    nb = m.neighbours
    prev = terms[i - 1] if i > 0 else None
    nxt = terms[i + 1] if i + 1 < len(terms) else None
    tag = None
    if prev:
        tag = next((b for a, b in nb["leftWords"] if prev.normal == a), None)
    if not tag and nxt:
        tag = next((b for a, b in nb["rightWords"] if nxt.normal == a), None)
    if not tag and prev:
        tag = next((b for a, b in nb["leftTags"] if a in prev.tags), None)
    if not tag and nxt:
        tag = next((b for a, b in nb["rightTags"] if a in nxt.tags), None)
    if tag:
        t.tags.add(tag)
        _fill(t, m)
        return True
    return False


def _check_tag(term: Term | None, obj: dict[str, Any] | None, m: Model) -> Any:
    if term is None or not obj:
        return None
    # compromise sorts by depth, deepest first; V8's sort keeps tags of one depth in the order they came
    tags = sorted(term.tags, key=lambda tag: -m.depth.get(tag, 0))
    found = next((tag for tag in tags if obj.get(tag)), None)
    return obj.get(found) if found else None


def _pick(terms: list[Term], i: int, clues: dict[str, Any] | None, m: Model) -> Any:
    if not clues:
        return None
    before = i - 1 if not (i > 0 and terms[i - 1].text == "also") else max(0, i - 2)
    prev = terms[before] if before >= 0 else None
    nxt = terms[i + 1] if i + 1 < len(terms) else None
    tag = clues.get("afterWords", {}).get(nxt.normal or nxt.implicit) if nxt else None
    tag = tag or (clues.get("beforeWords", {}).get(prev.normal or prev.implicit) if prev else None)
    tag = tag or _check_tag(prev, clues.get("beforeTags"), m)
    return tag or _check_tag(nxt, clues.get("afterTags"), m)


def _capital(terms: list[Term], i: int) -> str | None:
    t = terms[i]
    return "Noun" if "ProperNoun" in t.tags and re.match(r"^[A-Z][a-z]", t.text) else None


def _adhoc(form: str, terms: list[Term], i: int) -> str | None:
    """compromise's extra leans for some ambiguous words (its _adhoc.js)."""
    alone = i == 0 and len(terms) == 1
    if form in ("Adj|Gerund", "Actor|Verb", "Adj|Past", "Adj|Present", "Noun|Gerund", "Person|Noun"):
        return _capital(terms, i)
    if form == "Adj|Noun":
        end_noun = i + 1 == len(terms) and i > 0 and "Determiner" in terms[i - 1].tags
        return _capital(terms, i) or ("Noun" if end_noun else None)
    if form == "Noun|Verb":
        return (_capital(terms, i) if i > 0 else None) or ("Infinitive" if alone else None)
    if form == "Plural|Verb":
        start = "Plural" if i == 0 and len(terms) > 3 else None
        return _capital(terms, i) or ("PresentTense" if alone else None) or start
    if form == "Person|Verb":
        return _capital(terms, i) if i != 0 else None
    if form == "Person|Adj":
        if i == 0 and len(terms) > 1:
            return "Person"
        return "Person" if _capital(terms, i) else None
    return None


_BESIDE = frozenset(["there", "this", "it", "him", "her", "us"])
_VERB_TYPES = ("PastTense", "PresentTense", "Auxiliary", "Modal", "Particle")


def _imperative(terms: list[Term], m: Model) -> None:
    """'[place] tea bags in hot water': a clause's first word, a verb before a noun, is an imperative."""
    t = terms[0]
    if not (t.switch == "Noun|Verb" or "Infinitive" in t.tags) or len(terms) < 2:
        return
    if len(terms) < 4 and terms[1].normal not in _BESIDE:
        return
    if "PhrasalVerb" not in t.tags and t.normal in m.multi:
        return
    if terms[1].tags & {"Noun", "Determiner"} and not any("Verb" in x.tags for x in terms[1:3]):
        set_tag(t, "Imperative", m)


def _third_pass(terms: list[Term], m: Model) -> None:
    for i, t in enumerate(terms):
        _fill(t, m)
        if not _neighbours(terms, i, m) and (not t.tags or t.tags <= {"Hyphenated", "HashTag", "Prefix"}):
            t.tags.add("Noun")
            _fill(t, m)
    for i, t in enumerate(terms):
        if t.switch and not t.tags & {"Acronym", "PhrasalVerb"}:
            tag = _adhoc(t.switch, terms, i) or _pick(terms, i, m.clues.get(t.switch), m)
            if tag:
                set_tag(t, tag, m)
                _fill(t, m)
        if "Verb" in t.tags and not any(x in t.tags for x in _VERB_TYPES):
            set_tag(t, "Infinitive", m)
        if t.post == "-" and i + 1 < len(terms):  # two words with a dash
            set_tag(t, "Hyphenated", m)
            set_tag(terms[i + 1], "Hyphenated", m)
    _imperative(terms, m)


def _set_tags(m: Model) -> Any:
    def apply(terms: list[Term], tag: str | list[str], safe: bool) -> None:
        if isinstance(tag, list):
            for one in tag:
                apply(terms, one, safe)
            return
        tag = tag.strip()
        if " " in tag:  # '#Noun . #Adjective': one tag per term
            for term, one in zip(terms, tag.split(" "), strict=False):
                set_tag(term, one.lstrip("#"), m, safe)
            return
        for term in terms:
            set_tag(term, tag.lstrip("#"), m, safe)
    return apply


def _un_tags(m: Model) -> Any:
    def apply(terms: list[Term], tag: str) -> None:
        tag = tag.strip().lstrip("#")
        for term in terms:
            if tag == "*":
                term.tags.clear()
                continue
            term.tags.difference_update(m.children.get(tag, ()))
            term.tags.discard(tag)
    return apply


_HAS_WORDS = frozenset(["been", "become"])
_IS_WORDS = frozenset(["what", "how", "when", "if", "too"])
_ADJ_LIKE = frozenset(["too", "also", "enough"])
_NOT_POSSESSIVE = frozenset(["that", "there", "let", "here", "everywhere"])
_NOUN_LIKE = frozenset(["is", "are", "did", "were", "could", "should", "must", "had", "have"])


def _is_possessive(terms: list[Term], i: int) -> bool:
    """compromise's isPossessive, rule by rule (its "it's" test asks for a tag named "#Noun", which no
    word has: "it's" before a word is never possessive)."""
    t = terms[i]
    if t.word in _NOT_POSSESSIVE:
        return False
    if "Possessive" in t.tags:
        return True
    if "QuestionWord" in t.tags or t.normal in ("he's", "she's"):
        return False
    nxt = terms[i + 1] if i + 1 < len(terms) else None
    two = terms[i + 2] if i + 2 < len(terms) else None
    if nxt is None:
        return True
    if t.normal == "it's":
        return False
    if nxt.switch == "Noun|Gerund":
        if two is None:
            return bool(t.tags & {"Actor", "ProperNoun"})
        return "Copula" in two.tags
    if "Verb" in nxt.tags:
        return bool(nxt.tags & {"Infinitive"}) or ("Gerund" not in nxt.tags and "PresentTense" in nxt.tags)
    if nxt.switch == "Adj|Noun" and two is not None and (two.normal in _NOUN_LIKE or two.normal in _ADJ_LIKE):
        return two.normal in _NOUN_LIKE
    if "Noun" in nxt.tags:
        if nxt.word in ("here", "there", "everywhere") or "Possessive" in nxt.tags:
            return False
        return not ("ProperNoun" in nxt.tags and "ProperNoun" not in t.tags)
    if i > 0 and terms[i - 1].normal in ("in", "by", "for"):
        return True
    if "Adjective" in nxt.tags:
        if two is None:
            return False
        if "Noun" in two.tags and "Pronoun" not in two.tags:
            return nxt.normal not in ("above", "below", "behind")
        return two.switch == "Noun|Verb"
    return "Value" in nxt.tags


def _is_or_has(terms: list[Term], i: int) -> str:
    for o in range(i + 1, len(terms)):
        t = terms[o]
        if t.normal in _HAS_WORDS:
            return "has"
        if t.normal in _IS_WORDS or t.tags & {"Gerund", "Determiner", "Adjective"}:
            return "is"
        if t.switch == "Adj|Past" and o + 1 < len(terms):
            after = terms[o + 1]
            if after.normal in _ADJ_LIKE or "Preposition" in after.tags:
                return "is"
        if "PastTense" in t.tags:
            return "is" if o + 1 < len(terms) and terms[o + 1].normal == "for" else "has"
    return "is"


def _contraction_two(terms: list[Term], m: Model) -> None:
    """compromise's contractionTwo for "'s": a possessive, or the word and an implied is/has (us after let),
    after which the words around it are tagged again."""
    for i in range(len(terms) - 1, -1, -1):
        t = terms[i]
        if not t.apostrophe_s:
            continue
        t.apostrophe_s = False
        if _is_possessive(terms, i):
            set_tag(t, "Possessive", m)
            continue
        before = t.normal.split("'")[0]
        nxt = terms[i + 1] if i + 1 < len(terms) else None
        if before == "let":
            word = "us"
        elif before == "there" and nxt is not None and "Plural" in nxt.tags:
            word = "are"
        else:
            word = _is_or_has(terms, i)
        t.machine = t.implicit = before
        t.tags.clear()
        new = Term(text="", normal=word, machine=word, implicit=word, post=t.post)  # made from text: has a normal
        t.post = ""
        terms.insert(i + 1, new)
        for k, x in enumerate(terms):
            x.index = k
        start, end = max(0, i - 1), min(len(terms), i + 3)
        window = terms[start:end]
        _lexicon(window, m)
        yelling = False
        _second_pass(window, m, yelling)
        _third_pass(window, m)


def tag(sentences: list[list[Term]]) -> None:
    """Tag the terms of each sentence in place, as compromise's lexicon, pre-tagger and post-tagger do."""
    m = model()
    for terms in sentences:
        _lexicon(terms, m)
    for terms in sentences:
        for clause in _clauses(terms):
            proper = [t for t in clause if "ProperNoun" not in t.tags]
            yelling = len(proper) > 3 and all(not re.match(r"^[a-z]", t.text) for t in clause)
            _second_pass(clause, m, yelling)
            _third_pass(clause, m)
    for terms in sentences:
        _contraction_two(terms, m)
    clauses = [clause for terms in sentences for clause in _clauses(terms)]
    tagmatch.post_tag(clauses, m, _set_tags(m), _un_tags(m), _looks_plural)


_GUESS = {
    "Gerund": ["ing"], "Actor": ["erer"],
    "Infinitive": ["ate", "ize", "tion", "rify", "then", "ress", "ify", "age", "nce", "ect", "ise", "ine", "ish", "ace",
                   "ash", "ure", "tch", "end", "ack", "and", "ute", "ade", "ock", "ite", "ase", "ose", "use", "ive",
                   "int", "nge", "lay", "est", "ain", "ant", "ent", "eed", "er", "le", "unk", "ung", "upt", "en"],
    "PastTense": ["ept", "ed", "lt", "nt", "ew", "ld"],
    "PresentTense": ["rks", "cks", "nks", "ngs", "mps", "tes", "zes", "ers", "les", "acks", "ends", "ands", "ocks",
                     "lays", "eads", "lls", "els", "ils", "ows", "nds", "ays", "ams", "ars", "ops", "ffs", "als",
                     "urs", "lds", "ews", "ips", "es", "ts", "ns"],
    "Participle": ["ken", "wn"],
}
_GUESS_BY_END = {end: tense for tense, ends in _GUESS.items() for end in ends}


def guess_tense(word: str) -> str | None:
    """compromise's getTense: a verb's tense from its last three, two or one letters."""
    for n in (3, 2):
        if word[-n:] in _GUESS_BY_END:
            return _GUESS_BY_END[word[-n:]]
    return "PresentTense" if word.endswith("s") else None
