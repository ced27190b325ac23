"""`matches` runs a pattern with JavaScript's meaning, as Mastra's check does (docs/mastra-semantics.md).

The differential test generates patterns from JavaScript's grammar (and from outside it), flags
and texts full of the characters where Python's and JavaScript's regexes differ, and compares
evalgate's check with node's RegExp on every one: the same result, or both refuse the pattern.
evalgate may also refuse, by name, the few constructs it cannot run exactly; never silently differ.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalgate.replies import Run
from evalgate.scorers import checks
from evalgate.scorers.js import properties as jsproperties
from evalgate.scorers.js.regexp import JsRegexError, translate

ORACLE = Path(__file__).parent / "js" / "regexp_oracle.mjs"
PROPERTY_ORACLE = Path(__file__).parent / "js" / "property_runs.mjs"
NODE = shutil.which("node")
if NODE is None and os.environ.get("CI"):
    pytest.fail("CI must run the JavaScript regex differential: install node", pytrace=False)
needs_node = pytest.mark.skipif(NODE is None, reason="needs node")


def _check(pattern: str, text: str, flags: str = "", exact: bool = False) -> float:
    return checks.matches(pattern, exact=exact, flags=flags)(None, Run(texts=[text]))


@pytest.mark.parametrize(
    ("pattern", "flags", "text", "expected"),
    [
        (r"\d", "", "\u0663", 0.0),  # an Arabic-Indic digit is no digit to JavaScript
        (r"\w", "", "é", 0.0),  # \w is ASCII
        (r"\bcafé\b", "", "café!", 0.0),  # é is no word character: no boundary after it
        (r"\s", "", "\x1c", 0.0),  # Python's \s includes the file separator; JavaScript's does not
        (r"\s", "", "\ufeff", 1.0),  # ... and JavaScript's includes the byte order mark
        ("a.b", "", "a\rb", 0.0),  # `.` stops at \r, \u2028 and \u2029 too
        ("a.b", "", "a\u2028b", 0.0),
        ("^b", "m", "a\rb", 1.0),  # so does a line start under m
        ("[^]", "", "\n", 1.0),  # any character
        ("[]", "", "a", 0.0),  # no character
        (r"\a", "", "a", 1.0),  # an escaped letter is the letter
        ("a{,2}", "", "a{,2}", 1.0),  # not a quantifier: text
        (r"\p{L}", "", "p{L}", 1.0),  # without u: the letters p{L}
        (r"\p{L}", "u", "é", 1.0),  # with u: a Unicode property
        ("^.$", "", "😀", 0.0),  # without u, an emoji is two code units
        ("^.$", "u", "😀", 1.0),
        ("^..$", "", "😀", 1.0),
        ("k", "i", "\u212a", 0.0),  # the Kelvin sign is no k to JavaScript's i without u
        ("k", "iu", "\u212a", 1.0),  # ... and is one with u (case folding)
        ("s", "i", "ſ", 0.0),
        (r"\w", "iu", "ſ", 1.0),
        ("ß", "i", "SS", 0.0),
        (r"(a)|\1b", "", "b", 1.0),  # a group that did not take part matches empty
        (r"\1(a)", "", "a", 1.0),
        (r"\10", "", "\x08", 1.0),  # no 10th group: an octal escape
        ("abc$", "", "abc\n", 0.0),  # $ is the end of the text
        (r"\cJ", "", "\n", 1.0),
        (r"[\d-z]", "", "-", 1.0),  # Annex B: \d, `-` and z
        (r"(?<\u0061>x)\k<a>", "", "xx", 1.0),  # a group's name may be written with escapes
        ("^a{0," + "9" * 5000 + "}$", "", "aaa", 1.0),  # a bound of 5,000 digits: no bound (int() stops at 4,300)
        ("^a{1," + "0" * 20 + "1}$", "", "aa", 0.0),  # leading zeros: {1,1}
        ("^" + "(a)" * 100 + r"\100$", "", "a" * 101, 1.0),  # the 100th group, not an octal escape (@)
        ("^" + "(a)" * 100 + r"\100$", "", "a" * 100 + "@", 0.0),
        (r"\p{IDC}", "u", "\u2ff0", 0.0),  # ID_Continue; `regex` read IDC as another property holding U+2FF0
        (r"\p{VS}", "u", "\u180b", 1.0),  # Variation_Selector; `regex`'s VS left out the Mongolian ones
        (r"\p{scx=Deva}", "u", "\u0964", 1.0),  # the danda: Devanagari by its script extensions, Common by script
        (r"\p{sc=Deva}", "u", "\u0964", 0.0),
    ],
)
def test_a_pattern_means_what_it_means_in_javascript(pattern: str, flags: str, text: str, expected: float) -> None:
    assert _check(pattern, text, flags) == expected


@pytest.mark.parametrize(
    ("pattern", "flags"),
    [("(", ""), ("a**", ""), ("a{2,1}", ""), ("[z-a]", ""), (r"\k<x>(?<y>a)", ""), ("a{,2}", "u"), (r"\a", "u"),
     ("a", "ii"), ("a", "y"), ("a", "v"), ("(?<a>x)(?<a>y)", ""), ("(?i:a)", ""), (r"\p{L", "u"), ("]", "u"),
     # property names are exact in JavaScript; `regex` read all of these loosely
     (r"\p{lu}", "u"), (r"\p{Letters}", "u"), (r"\p{Greek}", "u"), (r"\p{sc=greek}", "u"), (r"\p{gc=Greek}", "u"),
     (r"\p{Script=Lu}", "u"), (r"\p{Alnum}", "u"), (r"\p{ID_continue}", "u"), (r"\p{sc=Katakana_Or_Hiragana}", "u")],
)
def test_what_javascript_refuses_is_refused(pattern: str, flags: str) -> None:
    with pytest.raises(ValueError):
        checks.matches(pattern, flags=flags)


@pytest.mark.parametrize(
    ("pattern", "flags", "says"),
    [
        (r"(?:(a)|b)+\1", "", "repeated part"),
        (r"(?<=(a)\1)b", "", "lookbehind"),
        (r"(a)\1", "i", "case rules"),
        ("a{100000}", "", "at most 10,000"),
        ("(?:(?:a{100}){100}){2}", "", "at most 10,000"),
        ("(" * 50_000 + ")" * 50_000, "", "too deeply"),
        (r"\p{CWKCF}", "u", "no table"),
    ],
)
def test_what_cannot_be_run_exactly_is_refused_by_name(pattern: str, flags: str, says: str) -> None:
    with pytest.raises(JsRegexError, match=says):
        translate(pattern, flags)


def test_a_huge_repeat_is_refused_before_it_takes_memory() -> None:
    """`regex` builds every required repetition: this pattern alone took gigabytes before."""
    code = "from evalgate.scorers import checks\ntry:\n    checks.matches('(?:(?:a{1000}){1000}){1000}')\n" \
           "except ValueError as e:\n    print(e)\n"
    done = subprocess.run([sys.executable, "-c", f"import resource; resource.setrlimit(resource.RLIMIT_AS, "
                           f"(1 << 30, 1 << 30))\n{code}"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-500:]
    assert "required repetitions" in done.stdout


# ---- the differential test against node's RegExp ----

LETTERS = ["a", "b", "k", "K", "s", "S", "ſ", "\u212a", "é", "É", "ß", "İ", "i", "ı", "Σ", "σ", "ς", "0", "5",
           "\u0663", "_", " ", "\u00a0", "\ufeff", "\x1c", "\n", "\r", "\u2028", "😀", "-", "/", "x"]
ESCAPES = [r"\d", r"\D", r"\w", r"\W", r"\s", r"\S", ".", r"\x41", r"\u00e9", r"\u{1F600}", r"\uD83D\uDE00",
           r"\uD83D", r"\cJ", r"\c1", r"\0", r"\a", r"\e", r"\z", r"\Z", r"\A", r"\p{L}", r"\p{Lu}", r"\P{Nd}",
           r"\p{Script=Greek}", r"\p{Ll}", r"\-", r"\/", r"\.", r"\k", r"\8", r"\01", r"\x4", r"\u12", "{", "}",
           "]", r"\t", r"\n", r"\r", r"\v", r"\f", r"\b", r"\B", "^", "$"]
CLASS_ITEMS = ["a", "b-k", "A-Z", "0-9", r"\d", r"\w", r"\s", r"\W", r"\b", "-", r"\-", "é", "😀", "ſ", "K", "^",
               r"\p{Lu}", "]", "[", r"\cJ", r"\c_", r"\x41-\x5a", "s-s", r"\0", r"\1"]
QUANTIFIERS = ["", "", "", "*", "+", "?", "{2}", "{1,2}", "{0,}", "*?", "+?", "??", "{2,1}", "{,2}", "{1"]


def _pattern(rng: random.Random, depth: int, names: list[str]) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        choice = rng.random()
        if choice < 0.3:
            atom = rng.choice(LETTERS)
        elif choice < 0.55:
            atom = rng.choice(ESCAPES)
        elif choice < 0.7:
            items = "".join(rng.choice(CLASS_ITEMS) for _ in range(rng.randint(0, 3)))
            atom = f"[{'^' if rng.random() < 0.3 else ''}{items}]"
        elif choice < 0.85 and depth < 3:
            opening = rng.choice(["(", "(", "(?:", "(?=", "(?!", "(?<=", "(?<!", "(?<name>"])
            if opening == "(?<name>":
                names.append(f"n{len(names)}")
                opening = f"(?<{names[-1]}>"
            atom = opening + _pattern(rng, depth + 1, names) + ")"
        elif choice < 0.93:
            atom = rng.choice([r"\1", r"\2", r"\10", r"\k<n0>", r"\k<n1>"])
        else:
            atom = "|"
        parts.append(atom + rng.choice(QUANTIFIERS))
    return "".join(parts)


def _cases(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        flags = "".join(f for f in "imsugd" if rng.random() < 0.3)
        texts = ["".join(rng.choices(LETTERS, k=rng.randint(0, 8))) for _ in range(4)]
        cases.append({"pattern": _pattern(rng, 0, []), "flags": flags, "exact": rng.random() < 0.25,
                      "texts": texts})
    return cases


def _ours(case: dict[str, Any]) -> dict[str, Any]:
    try:
        check = checks.matches(case["pattern"], exact=case["exact"], flags=case["flags"])
    except JsRegexError as exc:
        return {"error": str(exc)}
    except ValueError as exc:  # `regex` refused what the translation wrote: never expected
        return {"error": f"regex: {exc}"}
    return {"results": [check(None, Run(texts=[text])) == 1.0 for text in case["texts"]]}


@needs_node
@pytest.mark.parametrize("seed", range(4))
def test_matches_agrees_with_javascript_regexp(seed: int) -> None:
    cases = _cases(seed, 1500)
    done = subprocess.run([NODE or "node", str(ORACLE)], input=json.dumps(cases), capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads(done.stdout)
    refused = 0
    valid = 0
    for case, js in zip(cases, theirs, strict=True):
        ours = _ours(case)
        label = json.dumps(case, ensure_ascii=True)
        if "error" in js:
            assert "error" in ours and not ours["error"].startswith("regex:"), f"JavaScript refuses it: {label}"
            continue
        valid += 1
        if "error" in ours:
            # only a refusal that says why evalgate does not run it, never a parse the two disagree on
            assert "evalgate" in ours["error"], f"{ours['error']}: {label}"
            refused += 1
            continue
        assert ours["results"] == js["results"], label
    assert valid > 500
    assert refused < valid * 0.05, f"{refused} of {valid} valid patterns refused"


# ---- `\p{..}` names, against node's RegExp ----


def _near_misses(name: str) -> list[str]:
    """Spellings JavaScript refuses and a loose reader would take for `name`."""
    return [name.lower(), name.upper(), name.replace("_", ""), name.replace("_", " "), name.replace("_", "-")]


def _property_names() -> tuple[list[str], list[str]]:
    """(every name JavaScript accepts by evalgate's tables, near misses of them)."""
    good = [*jsproperties.BINARY, *jsproperties.BINARY_ALIASES, *jsproperties.GENERAL_CATEGORY]
    good += [f"{key}={value}" for key in ("gc", "General_Category") for value in jsproperties.GENERAL_CATEGORY]
    good += [f"{key}={value}" for key in ("sc", "Script", "scx", "Script_Extensions") for value in jsproperties.SCRIPT]
    misses = {miss for name in good for miss in _near_misses(name)} - set(good)
    misses |= set(jsproperties.SCRIPT) - set(jsproperties.GENERAL_CATEGORY)  # a script needs its key
    misses |= {f"sc={v}" for v in jsproperties.GENERAL_CATEGORY} | {f"gc={v}" for v in sorted(jsproperties.SCRIPT)}
    misses |= {f"{k}={v}" for k in ("Alphabetic", "ASCII", "script", "SC", "Block", "blk") for v in ("Latin", "Y")}
    misses |= {"Any=Y", "", "=", "gc=", "sc", "Lu=", "IDS_Unary_Operator", "Basic_Emoji", "RGI_Emoji", "Word"}
    return sorted(good), sorted(misses)


def _node_properties(names: list[dict[str, Any]]) -> list[Any]:
    done = subprocess.run([NODE or "node", str(PROPERTY_ORACLE)], input=json.dumps(names), capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@needs_node
def test_property_names_are_the_ones_javascript_accepts() -> None:
    """Each name in evalgate's tables is a pattern in JavaScript, and each near miss a syntax error in
    both: `regex` took `\\p{lu}`, `\\p{Greek}` or `\\p{letter}` and ran a pattern Mastra cannot build."""
    good, misses = _property_names()
    theirs = _node_properties([{"name": n} for n in good + misses])
    accepted = {name for name, answer in zip(good + misses, theirs, strict=True) if answer is not None}
    assert accepted == set(good), (sorted(set(good) - accepted), sorted(accepted - set(good)))
    for name in misses:
        with pytest.raises(JsRegexError, match="invalid property name"):
            translate(f"\\p{{{name}}}", "u")
    for name in good:  # every name JavaScript accepts runs, but the one `regex` has no table for
        if name in jsproperties.UNSUPPORTED:
            with pytest.raises(JsRegexError, match="no table"):
                translate(f"\\p{{{name}}}", "u")
        else:
            translate(f"[\\p{{{name}}}x]", "u")



@pytest.mark.parametrize(
    ("name", "spelt"),
    [("lu", "Lu"), ("Greek", "sc=Greek"), ("Script=old-italic", "sc=Old_Italic"), ("ID_continue", "ID_Continue"),
     ("scx=deva", "scx=Deva")],
)
def test_a_loosely_spelt_property_name_is_told_its_spelling(name: str, spelt: str) -> None:
    with pytest.raises(JsRegexError, match=re.escape(f"JavaScript spells it \\p{{{spelt}}}")):
        translate(f"\\p{{{name}}}", "u")

def _every_character() -> str:
    return "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


def _code_points(runs: list[list[int]]) -> set[int]:
    return {c for first, last in runs for c in range(first, last + 1)}


# `regex` and node each carry their own Unicode version, and a property gains or loses a few old
# characters between versions (scx=Telu took U+0B83 in one); a name given to the wrong property
# differs by hundreds or thousands (IDC: 149,000; VS: 244).
UNICODE_DRIFT = 8


@needs_node
def test_a_property_holds_the_characters_it_holds_in_javascript() -> None:
    """Every binary property and General_Category value, and a seventh of the scripts, compared code
    point by code point with node's RegExp, as evalgate writes the pattern for `regex`, on the
    characters both Unicode versions assign."""
    import regex

    sample = sorted(jsproperties.SCRIPT)[::7]
    names = ["Assigned"] + sorted({*jsproperties.BINARY, *jsproperties.BINARY_ALIASES, *jsproperties.GENERAL_CATEGORY}
                                  - jsproperties.UNSUPPORTED) + [f"{k}={v}" for k in ("sc", "scx") for v in sample]
    theirs = _node_properties([{"name": n, "runs": True} for n in names])
    every = _every_character()

    def ours(name: str) -> set[int]:
        pattern = regex.compile(translate(f"\\p{{{name}}}+", "u").pattern, regex.VERSION0)
        return {c for m in pattern.finditer(every) for c in range(ord(m.group()[0]), ord(m.group()[-1]) + 1)}

    assigned = ours("Assigned") & _code_points(theirs[0])
    differ = {}
    for name, runs in zip(names, theirs, strict=True):
        apart = (ours(name) ^ _code_points(runs)) & assigned
        if len(apart) > UNICODE_DRIFT:
            differ[name] = (len(apart), sorted(apart)[:5])
    assert not differ, differ
