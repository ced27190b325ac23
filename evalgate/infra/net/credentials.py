"""What a request carries that is secret: `${VAR}` in header templates, a URL's userinfo and `api_key=`,
and header values that cannot be sent (named, never quoted)."""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Mapping
from urllib.parse import unquote, unquote_plus, urlsplit

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(template: str, environ: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """Replace `${NAME}` with the environment's value; returns (text, the values substituted).

    Raises KeyError(name) for an unset variable. The returned values are secrets to redact.
    """
    env = os.environ if environ is None else environ
    used: list[str] = []

    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise KeyError(name)
        used.append(env[name])
        return env[name]

    return _ENV_REF.sub(sub, template), used


def env_names(template: str) -> list[str]:
    """The `${NAME}` references in a template."""
    return _ENV_REF.findall(template)


_SECRET_PARAM = re.compile(r"key|token|secret|passw|pwd|auth|sig|credential|session", re.IGNORECASE)


def url_secrets(url: str) -> list[str]:
    """The secrets a URL carries: its userinfo's password, and the values of query parameters named
    like one (`api_key`, `token`, `sig`, ...), as written and decoded; with userinfo, the Basic
    credentials made of it (`basic_auth`)."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0]
    found: list[str] = []
    if userinfo:
        password = userinfo.partition(":")[2]
        found += [password, unquote(password), basic_auth(url) or ""]
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if value and _SECRET_PARAM.search(unquote_plus(name)):
            found += [value, unquote_plus(value)]
    return [s for s in found if s]


def basic_auth(url: str) -> str | None:
    """`Basic <base64 user:password>` from a URL's userinfo (as curl and requests send it), or None."""
    userinfo = urlsplit(url).netloc.rpartition("@")[0]
    if not userinfo:
        return None
    user, _, password = userinfo.partition(":")
    pair = f"{unquote(user)}:{unquote(password)}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


_BAD_HEADER_CHARS = re.compile(r"[\r\n\x00]")


def header_problem(name: str, value: str, source: str | None = None) -> str | None:
    """Why a header value cannot be sent, naming where it came from and never quoting it; None if fine.

    A secret pasted with a trailing newline is the common case: http.client would refuse it with
    an exception that prints the value.
    """
    where = f"environment variable {source}" if source else f"header {name}"
    if _BAD_HEADER_CHARS.search(value):
        what = "a line break" if ("\n" in value or "\r" in value) else "a NUL character"
        return (f"{where} contains {what}, which cannot be sent in the {name} header "
                "(a secret pasted with a trailing newline?); remove it")
    try:
        value.encode("latin-1")
    except UnicodeEncodeError as exc:
        char = value[exc.start]
        return (f"{where} contains U+{ord(char):04X} at position {exc.start}, which cannot be sent in the "
                f"{name} header (pasted with an invisible character?); remove it")
    return None
