"""compromise's match engine and post-tagger: its ~570 match rules, run over the pre-tagger's tags.

The rules are compromise's own (data/compromise-en.json, parsed by compromise itself into match tokens
and indexed by the words and tags each needs, exported by tests/mastra/export_compromise.mjs); this
module is the engine that runs them, ported step by step from compromise's `match` and `sweep`
(1-one/match/methods/match, 1-one/sweep) so a rule matches where compromise's does. As in compromise,
every rule is matched against the tags the pre-tagger left, then the matches are applied in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalgate.scorers.tagger import Model, Term

Reg = dict[str, Any]
_START_QUOTE = re.compile("[\u0022\uFF02\u0027\u201C\u2018\u201F\u201B\u201E\u2E42\u201A\u00AB\u2039\u2035\u2036\u2037"
                          "\u301D\u0060\u301F]")
_END_QUOTE = re.compile("[\u0022\uFF02\u0027\u201D\u2019\u00BB\u203A\u2032\u2033\u2034\u301E\u00B4]")
_HYPHEN = re.compile(r"^[-–—]$")
_DASH = re.compile(r" [-–—]{1,3} ")
_TITLE = re.compile(r"^[^\W\d_a-z][a-z'\u00C0-\u00FF]")
_UPPER = re.compile(r"^[^\W\d_a-z]+$")


def _method(name: str, t: Term) -> bool:
    """compromise's @methods (termMethods.js)."""
    if name in ("hasQuote", "hasQuotation"):
        return bool(_START_QUOTE.search(t.pre) or _END_QUOTE.search(t.post))
    posts = {"hasComma": ",", "hasExclamation": "!", "hasSemicolon": ";", "hasColon": ":"}
    if name in posts:
        return posts[name] in t.post
    if name == "hasPeriod":
        return "." in t.post and "..." not in t.post
    if name == "hasQuestionMark":
        return "?" in t.post or "¿" in t.post
    if name == "hasEllipses":
        return ".." in t.post or "…" in t.post
    if name == "hasSlash":
        return "/" in t.text
    if name == "hasHyphen":
        return bool(_HYPHEN.search(t.post) or _HYPHEN.search(t.pre))
    if name == "hasDash":
        return bool(_DASH.search(t.post) or _DASH.search(t.pre))
    if name == "hasContraction":
        return bool(t.implicit)
    if name == "isAcronym":
        return "Acronym" in t.tags
    if name == "isKnown":
        return bool(t.tags)
    if name == "isTitleCase":
        return bool(_TITLE.match(t.text)) and t.text[:1].isupper()
    if name == "isUpperCase":
        return bool(_UPPER.match(t.text)) and t.text.isupper()
    return False


@cache
def _regex(source: str) -> re.Pattern[str]:
    return re.compile(source)


def _does_match(t: Term, reg: Reg, index: int, length: int) -> bool | None:
    """compromise's doesMatch: one term against one match token."""
    if reg.get("anything"):
        return True
    if reg.get("start") and index != 0:
        return False
    if reg.get("end") and index != length - 1:
        return False
    if "word" in reg:
        word = reg["word"]
        if t.machine and t.machine == word:
            return True
        return word in (t.text, t.normal)
    if "tag" in reg:
        return reg["tag"] in t.tags
    if "method" in reg:
        return _method(reg["method"], t)
    if "regex" in reg:
        return _regex(reg["regex"]["source"]).search(t.normal) is not None
    if "switch" in reg:
        return bool(t.switch == reg["switch"])
    if "fastOr" in reg:
        if reg.get("pos") and reg["pos"] not in t.tags:
            return None
        word = t.implicit or t.machine or t.normal
        return word in reg["_or"] or t.text in reg["_or"]
    if "choices" in reg:
        if reg.get("operator") == "and":
            return all(match(t, r, index, length) for r in reg["choices"])
        return any(match(t, r, index, length) for r in reg["choices"])
    return False


def match(t: Term, reg: Reg | None, index: int, length: int) -> bool:
    """compromise's wrapMatch: doesMatch, inverted for a negative token."""
    if not isinstance(reg, dict):
        return False  # compromise tests a multi-word choice as a term too: it never matches
    found = bool(_does_match(t, reg, index, length))
    return not found if reg.get("negative") else found


@dataclass
class _State:
    """compromise's match state over terms[start_i:] (a view, not a copy: a clause can be long)."""

    terms: list[Term]
    regs: list[Reg]
    start_i: int
    phrase_length: int
    size: int = 0
    t: int = 0
    r: int = 0
    groups: dict[str, list[int]] = field(default_factory=dict)  # name -> [start, length]
    in_group: str | None = None
    has_group: bool = False
    memo: dict[tuple[str, int, int], int] = field(default_factory=dict)  # shared by one rule's tries in a clause

    def at(self, k: int) -> Term | None:
        return self.terms[self.start_i + k] if 0 <= k < self.size else None

    def reg(self, k: int) -> Reg | None:
        return self.regs[k] if 0 <= k < len(self.regs) else None

    def matches(self, k: int, reg: Reg | None) -> bool:
        t = self.at(k)
        return t is not None and match(t, reg, self.start_i + k, self.phrase_length)


def _group(s: _State, index: int) -> list[int]:
    key = str(s.in_group)
    if key not in s.groups:
        s.groups[key] = [index, 0]
    return s.groups[key]


def _scan(s: _State, key: tuple[str, int], start: int, stop: Any) -> int:
    """The first position from `start` on where stop(position) holds (else the end), remembered for every
    position passed: compromise retries a rule from each term, and a greedy token rescans the same run of
    terms each time (quadratic in a long run); what it finds depends on the position only."""
    passed, t, found = [], start, None
    while t < s.size:
        known = s.memo.get((key[0], key[1], s.start_i + t))
        if known is not None:
            found = known - s.start_i
            break
        passed.append(t)
        if stop(t):
            found = t
            break
        t += 1
    if found is None:
        found = s.size
    for p in passed:
        s.memo[(key[0], key[1], s.start_i + p)] = s.start_i + found
    return found


def _greedy(s: _State, end_reg: Reg | None) -> int | None:
    reg = {**s.regs[s.r], "start": False, "end": False}
    if reg.get("min") is None and reg.get("max") is None:
        return _scan(s, ("greedy", id(s.regs[s.r])), s.t,
                     lambda t: (end_reg is not None and s.matches(t, end_reg)) or not s.matches(t, reg))
    start = s.t
    t = s.t
    while t < s.size:
        count = t - start + 1
        if end_reg is not None and s.matches(t, end_reg) and (reg.get("min") is None or count >= reg["min"]):
            return t
        if reg.get("max") is not None and count == reg["max"]:
            return t
        if not s.matches(t, reg):
            if reg.get("min") is not None and count < reg["min"]:
                return None
            return t
        t += 1
    if reg.get("min") is not None and t - start + 1 < reg["min"]:
        return None
    return t


def _greedy_to(s: _State, next_reg: Reg | None) -> int | None:
    if next_reg is None:
        return s.size
    t = _scan(s, ("to", id(next_reg)), s.t, lambda t: s.matches(t, next_reg))
    return t if t < s.size else None


def _end_greedy(reg: Reg, s: _State) -> bool:
    if reg.get("end") and reg.get("greedy") and s.start_i + s.t < s.phrase_length - 1:
        return s.matches(s.t, {**reg, "end": False})
    return False


def _found_optional(s: _State) -> None:
    reg, nxt = s.regs[s.r], s.reg(s.r + 1)
    if (reg.get("negative") or s.matches(s.t, nxt)) and (s.at(s.t + 1) is None or not s.matches(s.t + 1, nxt)):
        s.r += 1


def _contraction_skip(s: _State) -> None:
    term, reg = s.at(s.t), s.regs[s.r]
    nxt = s.at(s.t + 1)
    if term is not None and term.implicit and nxt is not None:
        if not nxt.implicit:
            return
        if reg.get("word") == term.normal:
            s.t += 1
        if reg.get("method") == "hasContraction":
            s.t += 1


def _simple(s: _State) -> bool:
    reg = s.regs[s.r]
    term = s.at(s.t)
    start_at = s.t
    if reg.get("optional") and s.reg(s.r + 1) is not None and reg.get("negative"):
        return True
    if reg.get("optional") and s.reg(s.r + 1) is not None:
        _found_optional(s)
    if term is not None and term.implicit and s.at(s.t + 1) is not None:
        _contraction_skip(s)
    s.t += 1
    if reg.get("end") and s.t != s.size and not reg.get("greedy"):
        return False
    if reg.get("greedy"):
        end = _greedy(s, s.reg(s.r + 1))
        if end is None:
            return False
        s.t = end
        if reg.get("end") and s.start_i + s.t != s.phrase_length:
            return False
    if s.has_group:
        g = _group(s, start_at)
        current = s.regs[s.r]
        if s.t > 1 and current.get("greedy"):
            g[1] += s.t - start_at
        else:
            g[1] += 1
    return True


def _try_choice(s: _State, regs: list[Reg], skip: int) -> int:
    n = 0
    for cr in regs:
        t = s.t + skip + n
        if s.at(t) is None or not s.matches(t, cr):
            return 0
        n += 1
        if cr.get("greedy"):
            gr = {**cr, "start": False, "end": False}
            n += _scan(s, ("run", id(cr)), t + 1, lambda i, gr=gr: not s.matches(i, gr)) - (t + 1)
    return n


def _try_choices(s: _State, skip: int) -> int:
    for regs in s.regs[s.r]["choices"]:
        if not isinstance(regs, list):
            return 0
        n = _try_choice(s, regs, skip)
        if n > 0:
            return n
    return 0


def _or_block(s: _State) -> bool:
    reg = s.regs[s.r]
    n = _try_choices(s, 0)
    if n and reg.get("greedy"):
        n += _repeat(s, reg, n)
    return _block_end(s, reg, n)


def _repeat(s: _State, reg: Reg, skip: int) -> int:
    """How many more terms the choices of a greedy (a|b)+ take from s.t + skip on, remembered per position."""
    passed: list[tuple[int, int]] = []
    at, total = skip, 0
    while True:
        known = s.memo.get(("or", id(reg), s.start_i + s.t + at))
        if known is not None:
            total = known
            break
        more = _try_choices(s, at)
        passed.append((at, more))
        if more == 0:
            break
        at += more
    for position, more in reversed(passed):
        total += more
        s.memo[("or", id(reg), s.start_i + s.t + position)] = total
    return s.memo.get(("or", id(reg), s.start_i + s.t + skip), total)


def _and_block(s: _State) -> bool:
    reg = s.regs[s.r]
    longest, every = 0, True
    for block in reg["choices"]:
        ok = all(s.at(s.t + w) is not None and s.matches(s.t + w, cr) for w, cr in enumerate(block))
        if ok and len(block) > longest:
            longest = len(block)
        if not ok:
            every = False
            break
    return _block_end(s, reg, longest if every else 0)


def _block_end(s: _State, reg: Reg, n: int) -> bool:
    if n:
        if reg.get("negative"):
            return False
        if s.has_group:
            _group(s, s.t)[1] += n
        if reg.get("end") and s.t + s.start_i + n != s.phrase_length:
            return False
        s.t += n
        return True
    if reg.get("negative"):
        if not reg.get("optional"):
            s.t += 1
        return True
    return bool(reg.get("optional"))


def _astrix(s: _State) -> bool:
    reg = s.regs[s.r]
    skip_to = _greedy_to(s, s.reg(s.r + 1))
    if not skip_to:
        return False
    if reg.get("min") is not None and skip_to - s.t < reg["min"]:
        return False
    if reg.get("max") is not None and skip_to - s.t > reg["max"]:
        s.t += reg["max"]
        return True
    if s.has_group:
        _group(s, s.t)[1] += skip_to - s.t
    s.t = skip_to
    return True


def _negative(s: _State) -> bool:
    reg = s.regs[s.r]
    tmp = {**reg, "negative": False}
    if s.matches(s.t, tmp):
        return False
    if reg.get("optional"):
        nxt = s.reg(s.r + 1)
        if nxt is not None:
            if s.matches(s.t, nxt):
                s.r += 1
            elif nxt.get("optional") and s.reg(s.r + 2) is not None and s.matches(s.t, s.reg(s.r + 2)):
                s.r += 2
    if reg.get("greedy"):
        return _neg_greedy(s, tmp, s.reg(s.r + 1))
    s.t += 1
    return True


def _neg_greedy(s: _State, reg: Reg, next_reg: Reg | None) -> bool:
    skip = 0
    for t in range(s.t, s.size):
        if s.matches(t, reg) or (next_reg is not None and s.matches(t, next_reg)):
            break
        skip += 1
        if reg.get("max") is not None and skip == reg["max"]:
            break
    if skip == 0 or (reg.get("min") and reg["min"] > skip):
        return False
    s.t += skip
    return True


def _from_here(terms: list[Term], regs: list[Reg], start_i: int, phrase_length: int,
               memo: dict[tuple[str, int, int], int] | None = None) -> tuple[list[int], dict[str, list[int]]] | None:
    """compromise's fromHere: the regs matched from terms[start_i] on: ([start, end], groups) or None."""
    if start_i >= len(terms) or not regs:
        return None
    s = _State(terms, regs, start_i, phrase_length, size=len(terms) - start_i, memo={} if memo is None else memo)
    while s.r < len(regs):
        reg = regs[s.r]
        s.has_group = bool(reg.get("group"))
        s.in_group = reg.get("group") if s.has_group else None
        if s.at(s.t) is None:
            if any(not rest.get("optional") for rest in regs[s.r :]):
                return None
            break
        if reg.get("anything") and reg.get("greedy"):
            alive = _astrix(s)
        elif "choices" in reg and reg.get("operator") == "or":
            alive = _or_block(s)
        elif "choices" in reg and reg.get("operator") == "and":
            alive = _and_block(s)
        elif reg.get("anything"):
            alive = False if reg.get("negative") else _simple(s)
        elif _end_greedy(reg, s):
            alive = _simple(s)
        elif reg.get("negative"):
            alive = _negative(s)
        elif s.matches(s.t, reg):
            alive = _simple(s)
        else:
            alive = bool(reg.get("optional"))
        if not alive:
            return None
        s.r += 1
    if s.t == 0:
        return None
    groups = {k: [start_i + g[0], start_i + g[0] + g[1]] for k, g in s.groups.items()}
    return [start_i, start_i + s.t], groups


def _plain(reg: Reg) -> bool:
    """Is the token one that must match the term it starts at (so a rule with it first fails at once where not)?"""
    return not (reg.get("optional") or reg.get("negative") or reg.get("anything") or "choices" in reg)


class _Index:
    """Where each word, tag and switch is in a clause: a rule is tried only where its first token can match
    (compromise tries every term; the result is the same, and a long text stays linear)."""

    def __init__(self, terms: list[Term]) -> None:
        self.words: dict[str, set[int]] = {}
        self.keys: dict[str, set[int]] = {}  # fast-or lookup: implicit, machine or normal; and text
        self.tags: dict[str, set[int]] = {}
        self.switches: dict[str, set[int]] = {}
        for i, t in enumerate(terms):
            for w in {t.machine, t.text, t.normal} - {""}:
                self.words.setdefault(w, set()).add(i)
            for w in {t.implicit or t.machine or t.normal, t.text}:
                self.keys.setdefault(w, set()).add(i)
            for tag in t.tags:
                self.tags.setdefault(tag, set()).add(i)
            if t.switch:
                self.switches.setdefault(t.switch, set()).add(i)

    def starts(self, reg: Reg, n: int) -> list[int] | range:
        if "word" in reg:
            return sorted(self.words.get(reg["word"], ()))
        if "tag" in reg:
            return sorted(self.tags.get(reg["tag"], ()))
        if "switch" in reg:
            return sorted(self.switches.get(reg["switch"], ()))
        if "fastOr" in reg and not reg.get("pos"):
            return sorted(set().union(*(self.keys.get(w, ()) for w in reg["_or"])))
        return range(n)


def run(terms: list[Term], rule: dict[str, Any], index: _Index | None = None) -> list[list[int]]:
    """compromise's match() of one rule in one clause: the [start, end] spans it tags."""
    regs = rule["regs"]
    if not regs:
        return []
    results: list[tuple[list[int], dict[str, list[int]]]] = []
    n = len(terms)
    memo: dict[tuple[str, int, int], int] = {}
    if regs[0].get("start"):
        found = _from_here(terms, regs, 0, n)
        if found:
            results.append(found)
    else:
        shortest = sum(1 for r in regs if not r.get("optional") and not r.get("negative"))
        starts = (index or _Index(terms)).starts(regs[0], n) if rule["_plain"] else range(n)
        after = 0  # compromise skips over a match before it tries again
        for i in starts:
            if i < after:
                continue
            if n - i < shortest:
                break
            found = _from_here(terms, regs, i, n, memo)
            if found:
                results.append(found)
                end = found[0][1]
                after = max(abs(end - 1), i) + 1
    if regs[-1].get("end"):
        results = [r for r in results if r[0][1] == n]
    if rule.get("notIf"):
        results = [r for r in results if not _has_not(terms[r[0][0] : r[0][1]], rule["notIf"])]
    group = rule.get("group")
    if group is not None:
        return [r[1][str(group)] for r in results if str(group) in r[1]]
    return [r[0] for r in results]


def _has_not(terms: list[Term], regs: list[Reg]) -> bool:
    return any(_from_here(terms, regs, i, len(terms)) is not None for i in range(len(terms)))


def _cache(terms: list[Term]) -> set[str]:
    items: set[str] = set()
    for t in terms:
        if t.normal:
            items.add(t.normal)
        if t.switch:
            items.add(f"%{t.switch}%")
        if t.implicit:
            items.add(t.implicit)
        if t.machine:
            items.add(t.machine)
        items.update("#" + tag for tag in t.tags)
    return items


def post_tag(clauses: list[list[Term]], m: Model, set_tag: Any, un_tag: Any, looks_plural: Any) -> None:
    """compromise's postTagger: find every rule's matches in every clause, then apply them in order."""
    rules, hooks = m.post_rules, m.post_hooks
    todo: list[tuple[dict[str, Any], list[Term]]] = []
    for clause in clauses:
        have = _cache(clause)
        index = _Index(clause)
        maybe: list[int] = []
        seen: set[str] = set()
        for _, hooked in sorted(hooks[key] for key in have if key in hooks):  # in the order of compromise's index
            for k in hooked:
                if rules[k]["match"] not in seen:
                    seen.add(rules[k]["match"])
                    maybe.append(k)
        for k in maybe:
            rule = rules[k]
            if not rule["_needs"] <= have:
                continue
            if any(no in have for no in rule.get("ifNo") or ()):
                continue
            if rule["wants"] and sum(1 for w in rule["wants"] if w in have) < rule["minWant"]:
                continue
            if len(clause) < rule["minWords"]:
                continue
            todo += [(rule, clause[start:end]) for start, end in run(clause, rule, index)]
    for rule, terms in todo:
        tag, untag, safe = rule.get("tag"), rule.get("unTag"), bool(rule.get("safe"))
        if not terms or (not tag and not untag):
            continue
        if safe and (not _can_be(terms, tag, m) or terms[-1].post == "-"):
            continue
        if tag:
            set_tag(terms, tag, safe)
            if tag == "Noun":
                last = terms[-1]
                set_tag([last], "Plural" if looks_plural(last.text) else "Singular", safe)
        if untag:
            un_tag(terms, untag)


def _can_be(terms: list[Term], tag: str | None, m: Model) -> bool:
    if not tag or tag not in m.conflicts:
        return True
    conflicts = m.conflicts[tag]
    return not any(t.tags & conflicts for t in terms)


def prepare(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The exported rules, their fast-or word lists made sets (in every nested token)."""
    def fix(reg: Reg) -> None:
        if "fastOr" in reg:
            reg["_or"] = frozenset(reg["fastOr"])
        for choice in reg.get("choices", ()):
            for r in choice if isinstance(choice, list) else [choice]:
                fix(r)

    for rule in rules:
        rule["_needs"] = frozenset(rule["needs"])
        rule["_plain"] = bool(rule["regs"]) and _plain(rule["regs"][0])
        for reg in rule["regs"]:
            fix(reg)
        for reg in rule.get("notIf") or ():
            fix(reg)
    return rules
