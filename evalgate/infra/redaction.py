"""The secrets a run knows of, and the one redaction applied wherever evalgate writes text.

Secrets are registered as they become known (the `${VAR}` values a spec's headers use, the
`api_key_env` values, the runner's credentials, the Action's token, the values of the runner's
environment variables named like credentials: `register_credential_env`). Each is known in the
forms it takes when echoed: as written, JSON-escaped, URL-encoded, HTML-escaped and inside base64.

The writers apply it (results, the journal, the response cache, JUnit, the Markdown report, the job
summary, the PR comment, outputs and the log): `redact` for text, `redact_value` for JSON. A JSON
value keeps the structure evalgate wrote (its keys, entry ids, verdict words); what evalgate did not
author (an item's input and output, a reply, an error) is masked keys and all. The HTTP client and
the adapters redact at the source too; the writers are the last line.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, AnyStr

from evalgate.infra.textsafe import plain

MIN_SECRET_CHARS = 4  # shorter values would blank out ordinary words
MASK = "***"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None  # None: no secret, or their forms too long for one regex
_bytes_pattern: re.Pattern[bytes] | None = None  # the same, for text already encoded (the results' item lines)
_ordered: tuple[str, ...] = ()  # the secrets' forms, the longest first
_ordered_bytes: tuple[bytes, ...] = ()
# The regex tries every form at every position: a long repetitive form (`xxx…xY`) against a long
# repetitive text costs their product. Beyond this product, forms are found by str.find (linear).
REGEX_WORK_MAX = 4_000_000
# Compiling the regex takes about 2 us a character of its forms: a 300 kB header value taken as a secret (12
# forms and 6 base64 ones) kept `evalgate validate` compiling for 5 s. Past this many, no regex is made: every
# text is then searched with str.find, as texts past REGEX_WORK_MAX always were.
REGEX_CHARS_MAX = 65_536


def register(values: Iterable[str | None]) -> None:
    """Treat these values as secrets from now on (also as they appear inside a JSON string)."""
    import json  # here: every command imports this module, `evalgate --help` need not load json

    global _pattern, _bytes_pattern, _ordered, _ordered_bytes
    added = False
    with _lock:
        for value in values:
            if not value:
                continue
            forms = _echoed_forms(value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1])
            for form in forms | _base64_forms(value.strip()):
                if len(form) >= MIN_SECRET_CHARS and form not in _secrets:
                    _secrets.add(form)
                    added = True
        if added:
            ordered = sorted(_secrets, key=len, reverse=True)  # the longest first: no half-masked secret
            _ordered = tuple(ordered)
            _ordered_bytes = tuple(s.encode("utf-8", "surrogatepass") for s in ordered)
            if sum(map(len, ordered)) <= REGEX_CHARS_MAX:
                _pattern = re.compile("|".join(map(re.escape, ordered)))
                _bytes_pattern = re.compile(b"|".join(map(re.escape, _ordered_bytes)))
            else:
                _pattern = _bytes_pattern = None


def _echoed_forms(value: str, json_text: str, json_ascii: str) -> set[str]:
    """The secret as an echo shows it: as written and trimmed, JSON-escaped (`\\/` too, as PHP writes
    a `/`), URL-encoded (`+` as `%2B`, `/` as `%2F` or kept; hex in either case; a space as `+`) and
    HTML-escaped (an HTML page, a JUnit report read as text)."""
    import html  # here, as json in `register`: `evalgate --help` need not load them
    from urllib.parse import quote, quote_plus

    forms = {value, value.strip(), json_text, json_ascii, json_ascii.replace("/", "\\/"), html.escape(value)}
    for safe in ("", "/"):
        for encoded in (quote(value, safe=safe), quote_plus(value, safe=safe)):
            forms |= {encoded, re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), encoded)}
    return forms


MIN_BASE64_SECRET_CHARS = 8  # shorter secrets would give encoded forms that ordinary base64 text holds


def _base64_forms(value: str) -> set[str]:
    """The secret as it reads inside any base64 text (standard or URL-safe), as the Actions runner
    masks it too: for each of the 3 byte alignments, the characters that depend on the secret alone."""
    raw = value.encode("utf-8", "surrogatepass")
    if len(value) < MIN_BASE64_SECRET_CHARS:
        return set()
    forms = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        start = (shift * 8 + 5) // 6  # characters holding bits of the prefix
        end = (shift + len(raw)) * 8 // 6  # the last character may hold bits of what follows
        core = encoded[start:end]
        forms |= {core, core.replace("+", "-").replace("/", "_")}
    return forms


# Names of environment variables whose values are credentials though no spec names them (a provider key
# set on the workflow step for another tool): `*_API_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD*`, `*_KEY` and
# the like, `-` or `_` separated, in any case. A value under CREDENTIAL_MIN_CHARS is more likely a flag.
CREDENTIAL_NAME = (r"(?:^|[_-])(?:API[_-]?KEY|KEY|TOKEN|SECRET|PAT|CREDENTIALS?|AUTH|PASSPHRASE)$|[_-]PWD$"
                   r"|PASSW(?:OR)?D|SECRET|PRIVATE[_-]?KEY|ACCESS[_-]?KEY|SESSION[_-]?TOKEN|^AZURE[_-]")
# Named like one, but a path or a setting: GOOGLE_APPLICATION_CREDENTIALS holds a file's path, and the
# Action's inputs (`INPUT_COMMENT-KEY`) are settings but for its token.
NOT_CREDENTIAL_NAME = (r"(?:[_-](?:FILE|PATH|DIR|ID|URL|ENDPOINT|REGION)$)|^GOOGLE_APPLICATION_CREDENTIALS$"
                       r"|^INPUT_(?!.*TOKEN$)")
CREDENTIAL_MIN_CHARS = 8


@functools.cache
def _name_rules() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Compiled on first use: every command imports this module, and `evalgate --help` checks no name."""
    return re.compile(CREDENTIAL_NAME, re.IGNORECASE), re.compile(NOT_CREDENTIAL_NAME, re.IGNORECASE)


def looks_like_credential(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential (docs/security.md lists the rule)."""
    if name.upper().startswith("ACTIONS_") and name.upper().endswith("URL"):
        return True  # the runner's own service URLs carry a signed token in their query
    credential, not_credential = _name_rules()
    return credential.search(name) is not None and not_credential.search(name) is None


def register_credential_env(environ: Mapping[str, str] | None = None) -> None:
    """The values (CREDENTIAL_MIN_CHARS or longer) of the environment's credential-named variables are secrets."""
    env = os.environ if environ is None else environ
    register(value for name, value in env.items()
             if len(value.strip()) >= CREDENTIAL_MIN_CHARS and looks_like_credential(name))


def register_env(names: Iterable[str | None], environ: Mapping[str, str] | None = None) -> None:
    """The values of these environment variables are secrets (unset ones are skipped)."""
    env = os.environ if environ is None else environ
    register(env.get(name) for name in names if name)


def env_refs(template: str) -> list[str]:
    """The `${NAME}` references in a header template."""
    return _ENV_REF.findall(template)


def redact(text: str) -> str:
    pattern, ordered = _pattern, _ordered
    if not ordered or not text:
        return text
    if pattern is None or len(text) * len(ordered[0]) > REGEX_WORK_MAX:
        masked: str = _masked(text, ordered, MASK)
        return masked
    return pattern.sub(MASK, text)


# evalgate's own words in results and outputs (verdicts, kinds, reasons, flags): kept whole where a value is
# one of them. A 4-character header value such as `${DEBUG}`'s `true` or a stage named `failed` is a secret
# to mask in text, but masking `"verdict": "failed"` left results no reader takes, and the word says nothing
# of the secret that the secret's own name did not.
OWN_WORDS = frozenset({"passed", "scored", "failed", "errors", "gates", "regression", "gate", "scorer", "pass",
                       "fail", "holm", "bonferroni", "none", "true", "false"})

# Where a JSON document evalgate writes holds content it did not author: the value under one of these keys
# is masked whole, its keys included (an agent's reply `{"<token>": 1}`). Everywhere else the keys are
# evalgate's (its schema's names, entry ids, turn numbers) and are never touched: masking a secret `item` in
# `total_items` left `total_***s` in a results file no reader takes.
FOREIGN_KEYS = frozenset({"input", "inputs", "output", "outputs", "run", "metadata", "ground_truth", "context",
                          "expected_trajectory"})
# Strings that are structure too: ids joining entries and items across files, digests, packed arrays (a
# shard's replay columns, under their own digest), and enumerations.
KEPT_STRING_KEYS = frozenset({"id", "ids", "entry", "item", "kind", "status", "verdict", "method", "direction",
                              "failure_reason", "schema_version", "data_hash", "items_sha256", "sha256",
                              "columns_sha256", "params_hash", "at", "index", "scores"})


def redact_value(value: Any, *, foreign: bool = False) -> Any:
    """A JSON-able value with every known secret masked, for a file of JSON.

    The structure evalgate wrote is kept: the keys of its own objects, ids, digests and its words
    (OWN_WORDS). Every other string is masked, and under FOREIGN_KEYS (or everywhere, `foreign=True`:
    a reply, a cache entry) the keys too. Masking the JSON text instead cut what is no string: a secret
    `true`, `null` or `1234` turned `"ok":true` or `"duration_ms":12345.6` into `"ok":***` or `***5.6`."""
    if not _ordered:
        return value
    try:
        return _masked_value(value, foreign)
    except RecursionError:  # nested past Python's limit (orjson stops at 255 levels): cut as a python target's run is
        return _masked_value(plain(value), foreign)


def _masked_value(value: Any, foreign: bool, kept: bool = False) -> Any:
    if isinstance(value, str):
        return value if value in OWN_WORDS or kept else redact(value)
    if isinstance(value, dict):
        if foreign:
            return {(redact(k) if isinstance(k, str) else k): _masked_value(v, True) for k, v in value.items()}
        return {k: _masked_value(v, k in FOREIGN_KEYS, k in KEPT_STRING_KEYS) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked_value(v, foreign, kept) for v in value]
    return value


def holds_secret(data: bytes) -> bool:
    """Whether any known secret's form is in these bytes (a JSON line, say): the cheap test before
    `redact_value` walks the value they were made from."""
    pattern, ordered = _bytes_pattern, _ordered_bytes
    if not ordered or not data:
        return False
    if pattern is None or len(data) * len(ordered[0]) > REGEX_WORK_MAX:
        return any(form in data for form in ordered)
    return pattern.search(data) is not None


def redact_bytes(data: bytes) -> bytes:
    """`redact` for UTF-8 text already encoded, such as an item's JSON line."""
    pattern, ordered = _bytes_pattern, _ordered_bytes
    if not ordered or not data:
        return data
    if pattern is None or len(data) * len(ordered[0]) > REGEX_WORK_MAX:
        masked: bytes = _masked(data, ordered, _MASK_BYTES)
        return masked
    return pattern.sub(_MASK_BYTES, data)


def _masked(text: AnyStr, forms: tuple[AnyStr, ...], mask: AnyStr) -> AnyStr:
    """What the regex gives (leftmost match first; at one position the longest form), found with
    `find`, whose search is linear whatever the text and the forms repeat."""
    longest: dict[int, int] = {}
    for form in forms:
        at = text.find(form)
        while at != -1:
            if longest.get(at, 0) < len(form):
                longest[at] = len(form)
            at = text.find(form, at + 1)
    if not longest:
        return text
    parts: list[AnyStr] = []
    done = 0
    for at in sorted(longest):
        if at >= done:
            parts += [text[done:at], mask]
            done = at + longest[at]
    parts.append(text[done:])
    return text[:0].join(parts)


_MASK_BYTES = MASK.encode()


def redact_cut(text: str, limit: int, *, tail: bool = False) -> str:
    """Redact, then bound: cutting first could leave part of a secret that no longer matches."""
    text = redact(text)
    if len(text) <= limit:
        return text
    return "…" + text[-limit:] if tail else text[:limit] + "…"


def redact_window(text: str, limit: int) -> str:
    """The first `limit` characters of `text`, secrets masked first; cheap on a long text. A secret cut by
    the window's end, or by the text's own (a body read only in part), is dropped there: never shown in part."""
    ordered = _ordered
    longest = len(ordered[0]) if ordered else 0
    window = redact(text[: limit + longest])
    for form in ordered:
        for size in range(min(len(form) - 1, len(window)), 0, -1):
            if window.endswith(form[:size]):
                window = window[:-size]
                break
    return window[:limit]


def longest() -> int:
    """The length of the longest form of a known secret (0 with none): how far past a cut to read."""
    ordered = _ordered
    return len(ordered[0]) if ordered else 0


def known() -> bool:
    return bool(_ordered)


def forget_all() -> None:
    """For tests: start again with no secrets."""
    global _pattern, _bytes_pattern, _ordered, _ordered_bytes
    with _lock:
        _secrets.clear()
        _pattern = _bytes_pattern = None
        _ordered, _ordered_bytes = (), ()

