"""The one HTTP layer: urllib3 pools, proxies and TLS from the environment, retries, an adaptive
rate limit, a response cache, redaction.

Every network call evalgate makes (the `http` and `openai` targets, the LLM judge, the GitHub
comment) goes through an `HttpClient`:

    client = HttpClient(concurrency=8, retries=RetryPolicy(attempts=3), timeout_s=30,
                        cache=ResponseCache(".evalgate/cache", ttl_s=86400), secrets=[token])
    reply = client.post_json(url, {"input": "hi"}, {"Authorization": f"Bearer {token}"},
                             cache_key={"target": settings_without_secrets, "body": payload})
    reply.status, reply.body, reply.from_cache, reply.attempts
    client.stats()   # {"requests": ..., "retries": ..., "cache_hits": ..., "concurrency_limit": ...}
    client.close()

- **Transport**: urllib3. A `PoolManager` (direct) or a `ProxyManager` per URL, chosen from
  `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` / `NO_PROXY` as curl and requests read them; TLS
  verified against `tls.ca_bundle`, else `REQUESTS_CA_BUNDLE` / `CURL_CA_BUNDLE` / `SSL_CERT_FILE`,
  else the system store; a client certificate when configured. Pools hold `concurrency` connections.
- **Retries** (`RetryPolicy`): connection errors, timeouts, 5xx, 408 and 429 only, with jittered
  exponential backoff capped at `max_backoff_s`; a `Retry-After` header is honoured on its own
  ceiling `max_retry_after_s` (a longer one errors the request, saying so).
- **Rate limits** (`AdaptiveLimiter`): at most `concurrency` requests in flight; each 429 halves the
  limit (once per window of requests that were in flight together), each success adds back
  1/limit, so the limit recovers by one for every `limit` successes (AIMD).
- **Cache** (`ResponseCache`): successful JSON replies stored on disk under a hash of the caller's
  `cache_key`; the caller builds that key from its settings *without secrets* plus the request,
  and the stored reply has every known secret redacted.
- **Secrets**: values passed in `secrets` are replaced by `***` in replies, error messages and the
  cache, before anything is shortened; a header value with a line break is refused by name, never
  echoed.

Errors are `HttpError` (final failure after retries, or a non-2xx status); their messages are safe
to record in results.
"""

from __future__ import annotations

import base64
import contextlib
import email.utils
import functools
import hashlib
import ipaddress
import json
import os
import random
import re
import socket
import sys
import tempfile
import threading
import time
import weakref
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, unquote_plus, urlsplit

from evalgate import __version__, redaction
from evalgate.errors import not_a_file

if TYPE_CHECKING:  # imported when the first client is built: offline specs never pay for TLS and urllib3
    import ssl

    import urllib3

RETRY_STATUSES = frozenset({408, 429})
ERROR_BODY_SHOWN = 300
MAX_REPLY_BYTES = 32 * 2**20  # a reply bigger than this (sent, or once decompressed) is a runaway, not an answer
_READ_CHUNK = 1 << 16
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


# ---- errors ----


class HttpError(Exception):
    """A request failed for good: retries exhausted, a non-retryable status, or a bad reply.

    `status` is the last HTTP status (None for connection errors and timeouts); `attempts` how
    many times the request was sent. The message never holds a secret the client knows of.
    """

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts
        self.body = body


# ---- retries ----


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry.

    attempts: total tries per request, the first included (1 = never retry).
    backoff_s: the base delay; try n waits about backoff_s * 2**(n-1), jittered to [50%, 100%].
    max_backoff_s: the cap on any one computed backoff.
    max_retry_after_s: the longest `Retry-After` honoured (independent of max_backoff_s); a server
    asking for more errors the request instead of stalling the run.
    """

    attempts: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    max_retry_after_s: float = 60.0

    def delay(self, retry: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number `retry` (1 for the first retry).

        The jittered backoff, or the server's Retry-After when that is longer (not capped by
        max_backoff_s: the server knows when it will answer; `too_long` says when to give up).
        """
        rng = rng or random
        base = min(self.max_backoff_s, self.backoff_s * (2 ** (retry - 1)))
        wait = base / 2 + rng.uniform(0, base / 2)  # "equal jitter": spreads retries, keeps a floor
        if retry_after is not None:
            wait = max(wait, retry_after)
        return wait

    def too_long(self, retry_after: float | None) -> bool:
        """The server asked for a wait beyond `max_retry_after_s`."""
        return retry_after is not None and retry_after > self.max_retry_after_s


def retryable_status(status: int) -> bool:
    """5xx, 408 and 429 are worth another try; other statuses are the caller's problem."""
    return status >= 500 or status in RETRY_STATUSES


# HTTP's delay-seconds are digits; a fraction is taken too (some servers send one). Python's float()
# also reads `inf`, `nan`, `1e400`, `1_0` and a sign: no server means those, and `inf` was shown as "infs".
_DELAY_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent or invalid."""
    if not value:
        return None
    value = value.strip()
    if _DELAY_SECONDS.fullmatch(value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a year or offset past any calendar
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


# ---- the adaptive in-flight limit ----


class AdaptiveLimiter:
    """At most `limit` callers inside at once; the limit halves on 429s and recovers additively.

    Use as `with limiter.slot() as slot: ...; slot.throttled()` or acquire/release by hand. A 429
    only lowers the limit if its request started after the last decrease, so a burst of 429s from
    requests that were in flight together counts once (as TCP does per round trip).
    """

    def __init__(self, limit: int, min_limit: int = 1, decrease: float = 0.5) -> None:
        self.max_limit = max(1, limit)
        self.min_limit = max(1, min(min_limit, self.max_limit))
        self.decrease = decrease
        self._window = float(self.max_limit)
        self._in_flight = 0
        self._epoch = 0
        self._cond = threading.Condition()
        self.lowest = self.max_limit
        self.decreases = 0

    @property
    def limit(self) -> int:
        return max(self.min_limit, int(self._window))

    def acquire(self) -> int:
        """Wait for a free slot; returns a token for `release`."""
        with self._cond:
            while self._in_flight >= self.limit:
                self._cond.wait()
            self._in_flight += 1
            return self._epoch

    def release(self, token: int, *, throttled: bool = False, ok: bool = False) -> None:
        """Free the slot; `throttled` for a 429 reply, `ok` for a success (recovers the limit)."""
        with self._cond:
            self._in_flight -= 1
            if throttled and token == self._epoch:
                self._window = max(float(self.min_limit), self._window * self.decrease)
                self._epoch += 1
                self.decreases += 1
                self.lowest = min(self.lowest, self.limit)
            elif ok and self._window < self.max_limit:
                self._window = min(float(self.max_limit), self._window + 1.0 / self._window)
            self._cond.notify_all()

    @contextlib.contextmanager
    def slot(self) -> Iterator[_Slot]:
        token = self.acquire()
        slot = _Slot()
        try:
            yield slot
        finally:
            self.release(token, throttled=slot.was_throttled, ok=slot.was_ok)


@dataclass
class _Slot:
    was_throttled: bool = False
    was_ok: bool = False

    def throttled(self) -> None:
        self.was_throttled = True

    def ok(self) -> None:
        self.was_ok = True


# ---- the response cache ----

_TTL_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_ttl(value: float | int | str | None) -> float | None:
    """Seconds from `3600`, `"90s"`, `"30m"`, `"12h"`, `"7d"`, `"2w"`; None means no expiry."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not value > 0:  # NaN too: it compared as never expiring
            raise ValueError("ttl must be positive")
        return float(value)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", str(value))
    if not match:
        raise ValueError(f"ttl {value!r} is not a duration; write seconds or e.g. 30m, 12h, 7d")
    seconds = float(match.group(1)) * _TTL_UNITS[match.group(2) or "s"]
    if seconds <= 0:
        raise ValueError("ttl must be positive")
    return seconds


def key_digest(value: Any) -> str:
    """A stable hex digest of a JSON-able value (dict key order does not matter)."""
    data = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()  # a lone surrogate too


class ResponseCache:
    """JSON values on disk, one file per key, written atomically; entries older than `ttl_s` are misses.

    Safe to share between threads and processes (last writer wins; readers never see torn files).
    """

    def __init__(self, directory: str | Path, ttl_s: float | None = None) -> None:
        self.dir = Path(directory)
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self.unstored = 0  # replies a write failed to keep: a re-run sends them again
        self._first_failure: str | None = None

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        """The stored value, or None if absent, expired or unreadable."""
        path = self._path(key)
        try:
            if self.ttl_s is not None and time.time() - path.stat().st_mtime > self.ttl_s:
                return None
            with path.open("rb") as handle:
                return json.loads(handle.read())["value"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, value: Any) -> None:
        """Store a JSON-able value, every known secret masked (its keys too); failures to write are
        ignored (the cache is an optimisation)."""
        path = self._path(key)
        try:
            # masked here, where it is written, keys included: a reply is content evalgate did not author
            stored = {k: redaction.redact_value(v, foreign=True) for k, v in value.items()} if isinstance(
                value, dict) else redaction.redact_value(value, foreign=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(json.dumps({"value": stored}, ensure_ascii=False).encode("utf-8"))
            os.replace(tmp, path)
        except (OSError, TypeError, ValueError) as exc:
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(tmp)
            with self._lock:
                self.unstored += 1
                if self._first_failure is None:
                    self._first_failure = f"{type(exc).__name__}: {exc}"[:300]

    def discard(self, key: str) -> None:
        """Remove the stored value, if any."""
        with contextlib.suppress(OSError):
            self._path(key).unlink()

    def problem(self) -> str | None:
        """What the run should be told when writes failed: the cache silently costing nothing is a surprise."""
        with self._lock:
            if not self.unstored:
                return None
            return (f"the response cache in {self.dir} could not keep {self.unstored} replies "
                    f"({self._first_failure}); a re-run sends those requests again")


def cache_from_settings(settings: Any, base_dir: Path, *, enabled: bool = True) -> ResponseCache | None:
    """A ResponseCache from spec settings (`dir`, `ttl`), or None when absent or bypassed.

    `--no-cache` reaches here as enabled=False, passed down by whoever builds the client.
    A relative `dir` is relative to the spec's folder.
    """
    if settings is None or not enabled:
        return None
    directory = Path(settings.dir)
    if not directory.is_absolute():
        directory = base_dir / directory
    return ResponseCache(directory, parse_ttl(settings.ttl))


def policy_from_settings(settings: Any) -> RetryPolicy:
    """A RetryPolicy from spec settings (`attempts`, `backoff_s`, `max_backoff_s`, `max_retry_after_s`)."""
    if settings is None:
        return RetryPolicy()
    ceiling = getattr(settings, "max_retry_after_s", RetryPolicy.max_retry_after_s)
    return RetryPolicy(settings.attempts, settings.backoff_s, settings.max_backoff_s, ceiling)


# ---- secrets ----


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


# ---- where requests go: proxies and TLS, from the environment ----


def environ_proxies(environ: Mapping[str, str]) -> dict[str, str]:
    """`{scheme: proxy URL, "no": NO_PROXY}` from `<scheme>_proxy` variables, lowercase winning, as
    the standard library's `getproxies_environment` reads them (HTTP_PROXY ignored under CGI)."""
    proxies: dict[str, str] = {}
    for name, value in environ.items():
        lower = name.lower()
        if value and lower.endswith("_proxy"):
            proxies[lower[:-6]] = value
    if "REQUEST_METHOD" in environ:
        proxies.pop("http", None)
    for name, value in environ.items():
        if name.endswith("_proxy"):
            if value:
                proxies[name[:-6].lower()] = value
            else:
                proxies.pop(name[:-6].lower(), None)
    return proxies


def bypasses_proxy(host: str, port: int, no_proxy: str) -> bool:
    """NO_PROXY: `*`, host names and domain suffixes (`.corp.example`, `corp.example`), `host:port`,
    and IP networks (`10.0.0.0/8`), as curl and requests read it."""
    import urllib.request  # the standard library's matching of names and suffixes

    if not no_proxy.strip():
        return False
    if urllib.request.proxy_bypass_environment(f"{host}:{port}", {"no": no_proxy}):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    for entry in no_proxy.split(","):
        entry = entry.strip()
        if "/" in entry:
            with contextlib.suppress(ValueError):
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
    return False


def proxy_for(scheme: str, host: str, port: int, environ: Mapping[str, str]) -> str | None:
    """The proxy URL a request to this origin goes through, or None for a direct connection."""
    proxies = environ_proxies(environ)
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or bypasses_proxy(host, port, proxies.get("no", "")):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


CA_BUNDLE_ENV = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")


@dataclass(frozen=True)
class TlsOptions:
    """How to verify servers and who to be: a CA bundle (PEM) replacing the system store, and a
    client certificate (PEM; the key in `client_key` or in the same file)."""

    ca_bundle: str | None = None
    client_cert: str | None = None
    client_key: str | None = None

    def resolved(self, base_dir: Path | None = None) -> TlsOptions:
        """Relative paths resolved against `base_dir` (the spec's folder)."""
        if base_dir is None:
            return self

        def place(value: str | None) -> str | None:
            if value is None:
                return None
            path = Path(value).expanduser()
            return str(path if path.is_absolute() else base_dir / path)

        return TlsOptions(place(self.ca_bundle), place(self.client_cert), place(self.client_key))


def tls_from_settings(settings: Any, base_dir: Path | None = None) -> TlsOptions:
    """TlsOptions from spec settings (`ca_bundle`, `client_cert`, `client_key`); empty if None."""
    if settings is None:
        return TlsOptions()
    return TlsOptions(settings.ca_bundle, settings.client_cert, settings.client_key).resolved(base_dir)


class TlsSettingError(ValueError):
    """A CA bundle or client certificate that cannot be used; the message names its setting."""


def ca_source(tls: TlsOptions, environ: Mapping[str, str]) -> tuple[str, str | None]:
    """(where the CA bundle comes from, its path): the spec's setting, else the first `CA_BUNDLE_ENV`
    variable set, else (`tls.ca_bundle`, None) for the system store."""
    if tls.ca_bundle is None:
        for name in CA_BUNDLE_ENV:
            if environ.get(name):
                return name, environ[name]
    return "tls.ca_bundle", tls.ca_bundle


def ssl_context(tls: TlsOptions, environ: Mapping[str, str]) -> ssl.SSLContext:
    """A verifying client context; ValueError naming the setting when a file cannot be used."""
    import ssl

    source, cafile = ca_source(tls, environ)
    # OpenSSL reads a FIFO until a writer comes and closes it: for ever, in a CI job
    for setting, file in ((source, cafile), ("tls.client_cert", tls.client_cert), ("tls.client_key", tls.client_key)):
        unusable = not_a_file(Path(file), what=setting) if file is not None and not os.path.isdir(file) else None
        if unusable is not None:
            raise TlsSettingError(f"{setting} {file}: {unusable}")
    try:
        if cafile is not None and os.path.isdir(cafile):
            context = ssl.create_default_context(capath=cafile)
        else:
            context = ssl.create_default_context(cafile=cafile)
    except (OSError, ssl.SSLError) as exc:
        raise TlsSettingError(f"{source} {cafile}: not a readable PEM CA bundle ({_exception_summary(exc)})") from None
    if tls.client_cert is not None:
        try:
            context.load_cert_chain(tls.client_cert, tls.client_key)
        except (OSError, ssl.SSLError) as exc:
            why = _exception_summary(exc)
            raise TlsSettingError(f"tls.client_cert {tls.client_cert}: cannot be loaded ({why})") from None
    return context


# ---- the client ----


@dataclass
class Response:
    """A successful (2xx) reply. `body` is the parsed JSON, or None if the reply was not JSON."""

    status: int
    body: Any
    text: str
    headers: Mapping[str, str] = field(default_factory=dict)
    elapsed_ms: float = 0.0
    attempts: int = 1
    from_cache: bool = False
    is_json: bool = True


@dataclass
class Exchange:
    """One request's answer, whatever its status (for callers with their own rules, e.g. GitHub's)."""

    status: int
    headers: Mapping[str, str]
    text: str
    url: str

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not (nested too deeply included)."""
        return loads(self.text)


@dataclass
class _Counters:
    requests: int = 0
    retries: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    rate_limited: int = 0
    failures: int = 0


_CLIENTS: weakref.WeakSet[HttpClient] = weakref.WeakSet()
USER_AGENT = f"evalgate/{__version__}"


class _Raw:
    """One HTTP exchange's result: status, headers, the whole body."""

    __slots__ = ("content", "headers", "status")

    def __init__(self, status: int, headers: Mapping[str, str], content: bytes) -> None:
        self.status = status
        self.headers = headers
        self.content = content


class _NoRetry(Exception):
    """A failure no retry can fix (a certificate the CA bundle does not vouch for, a runaway reply)."""


class _BadEncoding(_NoRetry):
    """A body that is not what its Content-Encoding says."""


def _read_body(reply: Any, max_bytes: int, deadline: float, timeout_s: float) -> bytes:
    """The whole body as sent, at most `max_bytes`; _NoRetry past that (the rest is never read).

    TimeoutError at `deadline` (monotonic): a server that trickles a byte now and then never trips a
    socket timeout, so each read may wait only for what is left of the attempt's time.
    """
    read = getattr(reply, "read1", None) or reply.read  # read1: one socket read (urllib3 >= 2.2)
    sock = getattr(getattr(reply, "connection", None), "sock", None)
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the reply was still arriving at the deadline")
        with contextlib.suppress(AttributeError, OSError):
            sock.settimeout(min(timeout_s, left))  # type: ignore[union-attr]
        chunk = read(_READ_CHUNK, decode_content=False)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise _NoRetry(f"the reply is larger than {_size(max_bytes)}; it was not read (a runaway reply?)")
        chunks.append(chunk)


def _decoded(content: bytes, encoding: str | None, max_bytes: int) -> bytes:
    """The body with its Content-Encoding (gzip, deflate) undone, never inflated past `max_bytes`:
    a reply of a few KiB that decompresses to gigabytes (a "zip bomb") stops at the limit."""
    codings = [c.strip().lower() for c in (encoding or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if len(codings) > 2:
        raise _NoRetry(f"the reply is encoded {len(codings)} times over (Content-Encoding); not decoded")
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip"):
            content = _inflate(content, 16 + zlib.MAX_WBITS, max_bytes, coding)
        elif coding == "deflate":  # zlib-wrapped as the RFC says, or raw as some servers send it
            try:
                content = _inflate(content, zlib.MAX_WBITS, max_bytes, coding)
            except _BadEncoding:
                content = _inflate(content, -zlib.MAX_WBITS, max_bytes, coding)
        else:
            shown = _one_line(coding, 40)
            raise _NoRetry(f"the reply is compressed with `{shown}` (Content-Encoding), which evalgate does not "
                           "decode; have the server send it plain, gzip or deflate")
    return content


def _inflate(data: bytes, wbits: int, max_bytes: int, coding: str) -> bytes:
    out = bytearray()
    while data:
        inflater = zlib.decompressobj(wbits)
        try:
            out += inflater.decompress(data, max_bytes + 1 - len(out))
        except zlib.error:
            raise _BadEncoding(f"the reply says Content-Encoding {coding} but is not valid {coding} data") from None
        if len(out) > max_bytes:
            raise _NoRetry(f"the reply decompresses to more than {_size(max_bytes)}; it was not read "
                           "(a runaway reply, or a compression bomb)")
        if not inflater.eof:
            break  # a truncated stream: what came is what there is
        data = inflater.unused_data if wbits > zlib.MAX_WBITS else b""  # gzip: the next member, if any
    return bytes(out)


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit >= 2**20 and limit % 2**20 == 0 else f"{limit} bytes"


class _Watchdog:
    """Shuts down the TCP socket of an exchange still under way at its deadline.

    http.client reads the status line and headers (and a proxy's CONNECT answer) with a socket timeout
    per read: a server sending a byte just inside each one holds the request for ~100 header lines x
    64 KiB x timeout_s, that is for ever. No socket timeout can end that; a shutdown() from another
    thread makes the blocked read return at once, whatever TLS or tunnel sits on the socket. One daemon
    thread for the process, started with the first exchange (a thread per request costs ~166 us). Only
    exchanges in flight are held (a set, not a heap of every deadline ever set), so it stays as small
    as the concurrency; it wakes at the earliest deadline.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._active: set[_Exchange] = set()
        self._wake = float("inf")  # when the thread looks next; an earlier deadline wakes it
        self._thread: threading.Thread | None = None
        self.local = threading.local()  # the exchange this thread is sending, set by `_Exchange`

    def attach(self, sock: socket.socket) -> None:
        """Watch `sock` for the exchange the calling thread is sending (from the connection's hooks)."""
        exchange = getattr(self.local, "exchange", None)
        if exchange is None:
            return
        with self._cond:
            exchange.sock = sock
            self._active.add(exchange)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="evalgate-deadlines", daemon=True)
                self._thread.start()
            if exchange.deadline < self._wake:
                self._wake = exchange.deadline
                self._cond.notify()

    def in_flight(self) -> int:
        """How many exchanges are watched now (none once every reply's head has come)."""
        with self._cond:
            return len(self._active)

    def end(self, exchange: _Exchange) -> bool:
        """Stop watching; True when the deadline shut the socket down first. Under the lock, so once
        this returns no shutdown can follow (the connection may go back to the pool)."""
        self.local.exchange = None
        with self._cond:
            self._active.discard(exchange)
            exchange.sock = None
            return exchange.fired

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                wake = float("inf")
                for exchange in list(self._active):
                    if exchange.deadline <= now:
                        self._active.discard(exchange)
                        exchange.fired = True
                        with contextlib.suppress(OSError):  # already closed: nothing left to stop
                            exchange.sock.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]
                    else:
                        wake = min(wake, exchange.deadline)
                self._wake = wake
                self._cond.wait(None if wake == float("inf") else wake - now)


WATCHDOG = _Watchdog()


class _Exchange:
    """One attempt's deadline, watched from the first socket it gets until `urlopen` returns (the body
    has its own deadline in `_read_body`). An exchange the watchdog cut off is a timeout."""

    __slots__ = ("deadline", "fired", "sock")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.sock: socket.socket | None = None
        self.fired = False

    def __enter__(self) -> _Exchange:
        WATCHDOG.local.exchange = self
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        # A shut-down socket surfaces as whatever the read in progress makes of an EOF (a closed
        # connection, a TLS error, headers cut short): past the deadline, it is our timeout.
        if WATCHDOG.end(self) and kind is not None and issubclass(kind, Exception):
            raise TimeoutError("the reply's head was still arriving at the deadline") from None


class _DnsTimeout(TimeoutError):
    """A host name not resolved by the exchange's deadline."""


class _Lookup:
    __slots__ = ("addresses", "done", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.addresses: list[Any] = []
        self.error: OSError | None = None


class _Resolver:
    """Host names resolved within an exchange's deadline.

    getaddrinfo has no timeout: glibc waits resolv.conf's `timeout` x `attempts` per name server, and
    longer for a stalled NSS module. So it runs in a daemon thread that the exchange stops waiting for
    at its deadline. Lookups of one name in flight together share that thread: a dead resolver holds
    one thread per name, however many requests wait on it. Nothing is cached: the next connection
    asks again, as every resolver user expects (TTLs are the resolver's business)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, int, int], _Lookup] = {}

    def resolve(self, host: str, port: int, family: int, deadline: float) -> list[Any]:
        if _is_ip_literal(host):  # no resolver asked: a literal resolves at once
            return socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
        key = (host, port, family)
        with self._lock:
            lookup = self._pending.get(key)
            if lookup is None:
                lookup = self._pending[key] = _Lookup()
                threading.Thread(target=self._lookup, args=(key, lookup), name="evalgate-dns", daemon=True).start()
        if not lookup.done.wait(max(0.0, deadline - time.monotonic())):
            raise _DnsTimeout(f"no answer resolving {host}")
        if lookup.error is not None:  # a fresh exception per waiter: one object raised in many threads tangles
            raise type(lookup.error)(*lookup.error.args)
        return lookup.addresses

    def _lookup(self, key: tuple[str, int, int], lookup: _Lookup) -> None:
        try:
            lookup.addresses = socket.getaddrinfo(key[0], key[1], key[2], socket.SOCK_STREAM)
        except OSError as exc:  # socket.gaierror included
            lookup.error = exc
        except Exception as exc:  # a bad IDNA label, say: a resolution failure all the same
            lookup.error = socket.gaierror(socket.EAI_NONAME, f"{type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self._pending.pop(key, None)
            lookup.done.set()


_RESOLVER = _Resolver()


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.partition("%")[0])  # an IPv6 literal may carry a zone (fe80::1%eth0)
    except ValueError:
        return False
    return True


def _connect_within(conn: Any, deadline: float) -> socket.socket:
    """urllib3's `HTTPConnection._new_conn`, with the name resolved and every address tried within
    `deadline`: urllib3 resolves without a bound and gives each address the whole connect timeout."""
    from urllib3.exceptions import ConnectTimeoutError, LocationParseError, NameResolutionError, NewConnectionError
    from urllib3.util.connection import allowed_gai_family

    host = conn.dns_name  # as given, a trailing dot kept: it matters to the resolver (`Watched.__init__`)
    try:
        host.encode("idna")
    except UnicodeError:
        raise LocationParseError(f"'{host}', label empty or too long") from None
    limit = conn.timeout if isinstance(conn.timeout, int | float) else None
    try:
        error: OSError | None = None
        for family, kind, proto, _, address in _RESOLVER.resolve(host, conn.port, allowed_gai_family(), deadline):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the deadline passed while connecting")
            sock = socket.socket(family, kind, proto)
            try:
                for option in conn.socket_options or ():  # what urllib3 sets (TCP_NODELAY), as it would
                    sock.setsockopt(*option)
                sock.settimeout(left if limit is None else min(limit, left))
                if conn.source_address:
                    sock.bind(conn.source_address)
                sock.connect(address)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            sys.audit("http.client.connect", conn, conn.host, conn.port)
            return sock
        raise error or OSError("getaddrinfo returned no address")
    except socket.gaierror as exc:
        raise NameResolutionError(conn.host, conn, exc) from exc
    except _DnsTimeout as exc:
        raise ConnectTimeoutError(conn, f"Resolving {conn.host} timed out") from exc
    except TimeoutError as exc:
        raise ConnectTimeoutError(conn, f"Connection to {conn.host} timed out") from exc
    except OSError as exc:
        raise NewConnectionError(conn, f"Failed to establish a new connection: {exc}") from exc


@functools.cache
def pool_classes() -> dict[str, Any]:
    """urllib3's pools, their connections reporting each exchange's socket to the watchdog."""
    import http.client

    import urllib3
    from urllib3.connection import HTTPConnection, HTTPSConnection

    class FinalResponse(http.client.HTTPResponse):
        # http.client skips only a `100 Continue`: a `103 Early Hints` (or `102 Processing`) was taken for
        # the reply, and the real one, left on the kept-alive connection, read by the next request as its own
        def _read_status(self) -> tuple[str, int, str]:
            while True:
                version, status, reason = super()._read_status()  # type: ignore[misc]
                if not 101 < status < 200:
                    return version, status, reason
                http.client.parse_headers(self.fp)  # an interim reply's headers: read past, none kept

    class Watched:
        response_class = FinalResponse

        # A dup of the TCP socket, kept for the connection's life: one handle under whatever wraps it
        # (TLS detaches the socket it wraps; SSLSocket.shutdown would drop its state mid-read).
        watch_sock: socket.socket | None = None

        def __init__(self, host: str, *args: Any, **kwargs: Any) -> None:
            self.dns_name = host.strip("[]")  # the name to resolve: `host` drops a trailing dot
            super().__init__(host, *args, **kwargs)  # type: ignore[call-arg]

        # THE override of urllib3's private API (docs/architecture.md, "net"): `HTTPConnection.connect`
        # makes its socket in `_new_conn`, for http, https and tunnels alike. pyproject pins urllib3 below 3;
        # tests/test_net_transport.py::test_urllib3_still_makes_its_sockets_in_new_conn fails if it moves.
        def _new_conn(self) -> socket.socket:
            # Resolve and connect within the exchange's deadline: the watchdog holds no socket before.
            exchange = getattr(WATCHDOG.local, "exchange", None)
            sock = super()._new_conn() if exchange is None else _connect_within(self, exchange.deadline)  # type: ignore[misc]
            self.watch_sock = sock.dup()
            WATCHDOG.attach(self.watch_sock)
            return sock

        def request(self, *args: Any, **kwargs: Any) -> None:
            if self.watch_sock is not None:  # a kept-alive connection (a new one attaches in _new_conn)
                WATCHDOG.attach(self.watch_sock)
            super().request(*args, **kwargs)  # type: ignore[misc]

        def close(self) -> None:
            try:
                super().close()  # type: ignore[misc]
            finally:
                if self.watch_sock is not None:
                    self.watch_sock.close()
                    self.watch_sock = None

    class WatchedHTTP(Watched, HTTPConnection):
        pass

    class WatchedHTTPS(Watched, HTTPSConnection):
        pass

    class HTTPPool(urllib3.HTTPConnectionPool):
        ConnectionCls = WatchedHTTP

    class HTTPSPool(urllib3.HTTPSConnectionPool):
        ConnectionCls = WatchedHTTPS

    return {"http": HTTPPool, "https": HTTPSPool}


class Transport:
    """urllib3 underneath: one direct PoolManager and one ProxyManager per proxy, picked per origin
    from the environment, all sharing one TLS context; each pool keeps `size` connections."""

    def __init__(self, size: int, tls: TlsOptions | None = None, environ: Mapping[str, str] | None = None) -> None:
        self.size = max(1, size)
        self.environ = dict(os.environ if environ is None else environ)
        self.tls = tls or TlsOptions()
        self._ssl: ssl.SSLContext | None = None
        self._direct: urllib3.PoolManager | None = None
        self._proxies: dict[str, urllib3.ProxyManager] = {}
        self._routes: dict[tuple[str, str, int], tuple[Any, str | None]] = {}
        self._lock = threading.Lock()
        self.proxy_secrets: list[str] = []
        # A bad CA bundle or certificate is an error now, not on every request. The spec's own `tls:`
        # files are loaded now; a bundle from the environment (set on many machines, needed only for
        # https) must be readable now and is parsed (~25 ms) for the first https origin.
        if self.tls.ca_bundle or self.tls.client_cert:
            self.context()
        else:
            source, cafile = ca_source(self.tls, self.environ)
            if cafile is not None and not os.access(cafile, os.R_OK):
                raise TlsSettingError(f"{source} {cafile}: not a readable PEM CA bundle (missing or not readable)")

    def context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl_context(self.tls, self.environ)
        return self._ssl

    def route(self, scheme: str, host: str, port: int) -> tuple[Any, str | None]:
        """(the pool for this origin, the proxy's shown origin or None), decided once per origin."""
        key = (scheme, host, port)
        found = self._routes.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._routes.get(key)
            if found is None:
                proxy = proxy_for(scheme, host, port, self.environ)
                if proxy is None:
                    import urllib3

                    if self._direct is None:
                        self._direct = urllib3.PoolManager(num_pools=8, maxsize=self.size)
                        self._direct.pool_classes_by_scheme = pool_classes()
                    tls = {"ssl_context": self.context()} if scheme == "https" else None
                    manager: Any = self._direct.connection_from_host(host, port, scheme, pool_kwargs=tls)
                    found = (manager, None)
                else:
                    found = (self._proxy_manager(proxy), _origin_of(proxy))
                self._routes[key] = found
        return found

    def _proxy_manager(self, proxy: str) -> urllib3.ProxyManager:
        import urllib3

        manager = self._proxies.get(proxy)
        if manager is None:
            parts = urlsplit(proxy)
            headers = None
            if parts.username is not None or parts.password is not None:
                credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
                self.proxy_secrets += [s for s in (parts.password, unquote(parts.password or "")) if s]
                headers = urllib3.make_headers(proxy_basic_auth=credentials)
            bare = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
            manager = urllib3.ProxyManager(bare, num_pools=8, maxsize=self.size, proxy_headers=headers,
                                           ssl_context=self.context(), proxy_ssl_context=self.context())  # rare: eager
            manager.pool_classes_by_scheme = pool_classes()
            self._proxies[proxy] = manager
        return manager

    def send(self, method: str, url: str, origin: tuple[str, str, int], path: str, data: bytes | None,
             headers: Mapping[str, str], timeout_s: float, max_bytes: int = MAX_REPLY_BYTES) -> _Raw:
        """One exchange, the whole body read (at most `max_bytes`, decoded by us within that bound) within
        `timeout_s` from the start; urllib3's own retries, redirects and decompression off (ours decide)."""
        import urllib3

        deadline = time.monotonic() + timeout_s  # the whole exchange, however the server paces it
        timeout = urllib3.Timeout(connect=timeout_s, read=timeout_s, total=timeout_s)
        for fresh in (False, True):
            pool, proxy = self.route(*origin)
            # a forwarding proxy needs the absolute URL, never with the userinfo (sent as Authorization)
            target = path if proxy is None else f"{origin[0]}://{urlsplit(url).netloc.rpartition('@')[2]}{path}"
            # Connect, request, status line and headers within the deadline (see _Watchdog); should the
            # socket be shut down as the head arrived, _read_body finds the deadline passed at once.
            with _Exchange(deadline):
                try:
                    reply = pool.urlopen(method, target, body=data, headers=headers, retries=False,
                                         redirect=False, timeout=timeout, preload_content=False,
                                         decode_content=False, assert_same_host=False)
                except urllib3.exceptions.ClosedPoolError:
                    if fresh:
                        raise
                    with self._lock:  # the manager retired this origin's pool (more origins than pools)
                        self._routes.pop(origin, None)
                    continue
            try:
                if reply.status >= 200:
                    content = _read_body(reply, max_bytes, deadline, timeout_s)
                else:  # `101 Switching Protocols`, asked by nobody: no body, and no more HTTP on this connection
                    reply.close()
                    content = b""
            except BaseException:
                reply.close()  # the connection holds an unread rest: never reused
                raise
            finally:
                reply.release_conn()
            content = _decoded(content, reply.headers.get("Content-Encoding"), max_bytes)
            return _Raw(reply.status, reply.headers, content)
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            managers = [m for m in (self._direct, *self._proxies.values()) if m is not None]
            self._direct, self._proxies, self._routes = None, {}, {}
        for manager in managers:
            manager.clear()


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


_SPLIT_CACHE: dict[str, tuple[str, str, int, str]] = {}


def _split(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path?query) of an http(s) URL; ValueError otherwise."""
    found = _SPLIT_CACHE.get(url)
    if found is not None:
        return found
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    found = (parts.scheme, parts.hostname, port, path)
    if len(_SPLIT_CACHE) < 256:
        _SPLIT_CACHE[url] = found
    return found


class HttpClient:
    """A pooled keep-alive session with retries, an adaptive in-flight limit and an optional cache.

    concurrency: connections kept alive and the initial (and highest) in-flight limit.
    retries: a RetryPolicy. timeout_s: connect and read timeout per attempt.
    cache: a ResponseCache or None. secrets: values to redact from replies, errors and the cache.
    tls: a CA bundle and client certificate; environ: where proxies and CA-bundle variables are read
    (the process environment by default). ValueError for a CA bundle or certificate it cannot use.
    Thread-safe: share one client between the worker threads.
    """

    def __init__(
        self,
        concurrency: int = 4,
        retries: RetryPolicy | None = None,
        timeout_s: float = 60.0,
        cache: ResponseCache | None = None,
        secrets: Iterable[str] = (),
        *,
        min_limit: int = 1,
        sleep: Any = time.sleep,
        tls: TlsOptions | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.concurrency = max(1, concurrency)
        self.retries = retries or RetryPolicy()
        self.timeout_s = timeout_s
        self.cache = cache
        redaction.register(secrets)
        self.limiter = AdaptiveLimiter(self.concurrency, min_limit=min_limit)
        self._sleep = sleep
        self._rng = random.Random()
        self._counts = _Counters()
        self._lock = threading.Lock()
        self.transport = Transport(self.concurrency, tls, environ)
        self._url_headers: dict[str, dict[str, str]] = {}
        _CLIENTS.add(self)

    # -- public --

    def post_json(
        self,
        url: str,
        json_body: Any,
        headers: Mapping[str, str] | None = None,
        *,
        cache_key: Any = None,
        timeout_s: float | None = None,
    ) -> Response:
        """POST `json_body` as JSON; the reply (JSON parsed when it is JSON), or HttpError.

        cache_key: a JSON-able value identifying the request *without secrets* (e.g. the
        target's settings and the body); with a cache configured, a hit returns without sending.
        """
        return self.request("POST", url, json_body=json_body, headers=headers, cache_key=cache_key, timeout_s=timeout_s)

    def request(
        self,
        method: str,
        url: str,
        *,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
        cache_key: Any = None,
        timeout_s: float | None = None,
    ) -> Response:
        """Send with retries and the in-flight limit; see `post_json`."""
        key = None
        if self.cache is not None and cache_key is not None:
            key = key_digest(cache_key)
            hit = self.cache.get(key)
            if isinstance(hit, dict) and "body" in hit:
                self._count(cache_hits=1)
                elapsed = float(hit.get("elapsed_ms") or 0.0)
                return Response(int(hit.get("status", 200)), hit["body"], "", {}, elapsed, 0, from_cache=True)
            self._count(cache_misses=1)
        data = _encode(json_body) if json_body is not None else None
        send_headers = self._headers({**self._from_url(url), **(headers or {})}, data is not None)
        reply = self._send_with_retries(method, url, data, send_headers, timeout_s or self.timeout_s)
        if key is not None and self.cache is not None and reply.is_json:
            self.cache.put(key, {"status": reply.status, "body": reply.body, "elapsed_ms": reply.elapsed_ms})
        return reply

    def forget(self, cache_key: Any) -> None:
        """Drop the reply cached under `cache_key`: one its caller could not use (an error sent with status
        200) is a failure, asked again next run instead of replayed until the cache expires."""
        if self.cache is not None and cache_key is not None:
            self.cache.discard(key_digest(cache_key))

    def exchange(
        self,
        method: str,
        url: str,
        *,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> Exchange:
        """One request, no retry, any status: for callers with their own rules (GitHub's rate limits).

        HttpError (status None) only when no answer came: refused, reset, timed out, TLS refused.
        """
        data = _encode(json_body) if json_body is not None else None
        send_headers = self._headers({**self._from_url(url), **(headers or {})}, data is not None)
        try:
            scheme, host, port, path = _split(url)
        except ValueError as exc:
            raise HttpError(self.redact(str(exc))) from None
        timeout = timeout_s or self.timeout_s
        self._count(requests=1)
        try:
            raw = self.transport.send(method, url, (scheme, host, port), path, data, send_headers, timeout)
        except Exception as exc:
            problem = self._final_problem(exc, scheme, host, port, timeout)
            self._count(failures=1)
            raise HttpError(f"{method} {self.redact(url)}: {self.redact(problem)}") from None
        text = raw.content.decode("utf-8", errors="replace")
        return Exchange(raw.status, raw.headers, self.redact(text), url)

    def download(self, url: str, *, max_bytes: int, timeout_s: float | None = None) -> tuple[int, bytes]:
        """GET a binary body (an artifact's zip from storage), with only the client's own headers: a
        caller's credentials never travel to another host. HttpError when no answer came or it is too big."""
        self._from_url(url)  # its secrets, for the messages; no credentials are sent
        try:
            scheme, host, port, path = _split(url)
        except ValueError as exc:
            raise HttpError(self.redact(str(exc))) from None
        timeout = timeout_s or self.timeout_s
        self._count(requests=1)
        headers = {**self._headers(None, False), "Accept": "*/*"}
        try:
            raw = self.transport.send("GET", url, (scheme, host, port), path, None, headers, timeout, max_bytes)
        except Exception as exc:
            problem = self._final_problem(exc, scheme, host, port, timeout)
            self._count(failures=1)
            raise HttpError(f"GET {self.redact(url)}: {self.redact(problem)}") from None
        if len(raw.content) > max_bytes:
            raise HttpError(f"GET {self.redact(url)}: larger than {max_bytes} bytes")
        return raw.status, raw.content

    def add_secrets(self, secrets: Iterable[str]) -> None:
        """More values to keep out of error messages (e.g. expanded at request time): one registry, redaction's."""
        redaction.register(secrets)

    @staticmethod
    def redact(text: str) -> str:
        """`text` with every known secret masked (evalgate.redaction, the one registry)."""
        return redaction.redact(text)

    def stats(self) -> dict[str, Any]:
        """Counters for the results' summary: requests sent, retries, cache hits, the adapted limit."""
        with self._lock:
            c = self._counts
            out: dict[str, Any] = {
                "requests": c.requests,
                "retries": c.retries,
                "failed_requests": c.failures,
                "rate_limited": c.rate_limited,
                "concurrency_limit": self.limiter.max_limit,
                "current_limit": self.limiter.limit,
                "lowest_limit": self.limiter.lowest,
            }
            if self.cache is not None:
                out["cache_hits"] = c.cache_hits
                out["cache_misses"] = c.cache_misses
                if self.cache.unstored:
                    out["cache_unstored"] = self.cache.unstored
            return out

    def warnings(self) -> list[str]:
        """What the run's summary should warn of: a response cache that could not be written."""
        problem = self.cache.problem() if self.cache is not None else None
        return [problem] if problem is not None else []

    def close(self) -> None:
        self.transport.close()
        _CLIENTS.discard(self)

    # -- internals --

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self._counts, name, getattr(self._counts, name) + delta)

    def _from_url(self, url: str) -> dict[str, str]:
        """The headers a URL asks for (its userinfo as Basic credentials); its secrets (that password, an
        `api_key=` in its query) are redacted from now on, so no message shows them."""
        found = self._url_headers.get(url)
        if found is None:
            redaction.register(url_secrets(url))
            auth = basic_auth(url)
            found = {"Authorization": auth} if auth else {}
            if len(self._url_headers) < 256:
                self._url_headers[url] = found
        return found

    def _headers(self, headers: Mapping[str, str] | None, has_body: bool) -> dict[str, str]:
        """The headers to send; HttpError naming (never quoting) a value that cannot be sent."""
        out = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if has_body:
            out["Content-Type"] = "application/json"
        for name, value in (headers or {}).items():
            problem = header_problem(name, value)
            if problem is not None:
                raise HttpError(problem)
            out[name] = value
        return out

    def _redirect_hint(self, location: str | None) -> str:
        """What to do about a redirect. Never followed: a POST would have to be re-sent, perhaps as a
        GET, and its API key could go to another host."""
        # redacted, then cut
        where = f" to {_one_line(redaction.redact_window(location, 200), 200)}" if location else ""
        return f"; the server redirects{where}: evalgate does not follow redirects, put the final URL in the spec"

    def _problem(self, exc: Exception, scheme: str, host: str, port: int, timeout_s: float) -> str:
        """What went wrong, in words a user acts on; raises _NoRetry when retrying cannot help."""
        from urllib3 import exceptions as u3

        if isinstance(exc, _NoRetry):  # the transport's own verdict on the reply (too big, undecodable)
            raise exc
        where = f"{scheme}://{host}:{port}"
        if self.transport.proxy_secrets:
            redaction.register(self.transport.proxy_secrets)
        if isinstance(exc, u3.ProxyError):
            proxy = self.transport.route(scheme, host, port)[1]
            cause = exc.original_error
            if isinstance(cause, u3.NewConnectionError) and "refused" in str(cause):
                return f"connection refused at the proxy {proxy} (from HTTPS_PROXY/HTTP_PROXY; NO_PROXY bypasses it)"
            return f"the proxy {proxy} failed: {_exception_summary(cause or exc)}"
        if isinstance(exc, u3.NameResolutionError):
            return f"cannot resolve the host name {host}"
        if isinstance(exc.__cause__, _DnsTimeout):
            return f"timed out resolving the host name {host} after {timeout_s:g}s (the DNS resolver did not answer)"
        if isinstance(exc, u3.NewConnectionError):
            if isinstance(exc.__cause__ or exc.__context__, ConnectionRefusedError) or "refused" in str(exc):
                return f"connection refused at {where}"
            return f"cannot connect to {where}: {_exception_summary(exc.__cause__ or exc)}"
        if isinstance(exc, u3.ConnectTimeoutError):
            return f"timed out connecting to {where} after {timeout_s:g}s"
        if isinstance(exc, (u3.ReadTimeoutError, TimeoutError)):
            return f"timed out after {timeout_s:g}s"
        if isinstance(exc, u3.SSLError):
            reason = _exception_summary(exc.__cause__ or exc)
            if "CERTIFICATE_VERIFY_FAILED" in str(exc) or "certificate verify failed" in str(exc):
                raise _NoRetry(f"TLS: the certificate of {where} is not trusted ({reason}); give the CA bundle "
                               "in tls.ca_bundle or REQUESTS_CA_BUNDLE")
            return f"TLS with {where} failed: {reason}"
        if isinstance(exc, TlsSettingError):  # an environment CA bundle, parsed for the first https origin
            raise _NoRetry(str(exc))
        if isinstance(exc, u3.ClosedPoolError):
            return "connection failed: the pool was closed"
        if isinstance(exc, (OSError, u3.HTTPError)):
            cause = exc.__cause__ or exc.__context__ if isinstance(exc, u3.ProtocolError) else exc
            return f"connection failed: {_exception_summary(cause or exc)}"
        # Anything else is a bug or a value http.client refused: its message may quote a header.
        raise _NoRetry(f"the request could not be sent ({type(exc).__name__})")

    def _final_problem(self, exc: Exception, scheme: str, host: str, port: int, timeout_s: float) -> str:
        """`_problem` for a caller that never retries: retryable or not, only the words."""
        try:
            return self._problem(exc, scheme, host, port, timeout_s)
        except _NoRetry as final:
            return str(final)

    def _send_with_retries(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str], timeout_s: float
    ) -> Response:
        policy = self.retries
        attempts = max(1, policy.attempts)
        shown_url = self.redact(url)
        try:
            scheme, host, port, path = _split(url)
        except ValueError as exc:
            raise HttpError(self.redact(str(exc))) from None
        origin = (scheme, host, port)
        for attempt in range(1, attempts + 1):
            token = self.limiter.acquire()
            throttled = ok = False
            retry_after: float | None = None
            started = time.perf_counter()
            try:
                self._count(requests=1)
                raw = self.transport.send(method, url, origin, path, data, headers, timeout_s)
            except Exception as exc:
                try:
                    problem = self._problem(exc, scheme, host, port, timeout_s)
                except _NoRetry as final:
                    self._count(failures=1)
                    raise HttpError(f"{method} {shown_url}: {self.redact(str(final))}", attempts=attempt) from None
                status = None
            else:
                status = raw.status
                elapsed = (time.perf_counter() - started) * 1000.0
                if 200 <= status < 300:
                    ok = True
                    try:
                        return self._response(status, raw, elapsed, attempt)
                    except TooDeep as exc:
                        self._count(failures=1)
                        raise HttpError(f"{method} {shown_url}: the reply {exc}", status=status,
                                        attempts=attempt) from None
                throttled = status == 429
                retry_after = parse_retry_after(raw.headers.get("Retry-After"))
                text = raw.content[: 4 * (ERROR_BODY_SHOWN + redaction.longest())].decode("utf-8", errors="replace")
                body = redaction.redact_window(text, ERROR_BODY_SHOWN)
                problem = f"HTTP {status}" + (f": {_one_line(body)}" if body.strip() else "")
                if 300 <= status < 400:
                    problem += self._redirect_hint(raw.headers.get("Location"))
                if not retryable_status(status):
                    self._count(failures=1)
                    raise HttpError(f"{method} {shown_url}: {problem}", status=status, attempts=attempt, body=body)
            finally:
                self.limiter.release(token, throttled=throttled, ok=ok)
            if throttled:
                self._count(rate_limited=1)
            if policy.too_long(retry_after):
                self._count(failures=1)
                raise HttpError(
                    f"{method} {shown_url}: {problem}; the server asked to retry after {retry_after:g}s, more than "
                    f"max_retry_after_s ({policy.max_retry_after_s:g}s): not retried",
                    status=status, attempts=attempt,
                )
            if attempt == attempts:
                break
            self._count(retries=1)
            self._sleep(policy.delay(attempt, retry_after, self._rng))
        self._count(failures=1)
        if status is None:  # no answer: what went wrong first, so the most common error reads well
            tries = f", {attempts} attempts" if attempts > 1 else ""
            raise HttpError(f"{self.redact(problem)} ({method} {shown_url}{tries})", attempts=attempts)
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        raise HttpError(f"{method} {shown_url}: {self.redact(problem)}{tries}", status=status, attempts=attempts)

    def _response(self, status: int, raw: _Raw, elapsed_ms: float, attempt: int) -> Response:
        """The reply with every known secret redacted: an agent echoing a token must not leak it into
        results or the cache."""
        text = raw.content.decode("utf-8", errors="replace")
        try:
            body, is_json = loads(text), True
        except TooDeep:
            raise
        except ValueError:
            body, is_json = None, False
        if not redaction.known():
            return Response(status, body, text, raw.headers, elapsed_ms, attempt, is_json=is_json)
        masked = redaction.redact(text)
        if is_json and (masked != text or "\\" in text):
            # keys included, and an echo in JSON escapes (`\u0074...`) that is not in the text, only in the
            # strings it decodes to
            walked = redaction.redact_value(body, foreign=True)
            if walked != body:
                body, masked = walked, redaction.redact(json.dumps(walked, ensure_ascii=False))
        return Response(status, body, masked, raw.headers, elapsed_ms, attempt, is_json=is_json)


def global_stats() -> dict[str, int]:
    """Retries and requests summed over every open client (the CLI's progress line)."""
    totals = {"requests": 0, "retries": 0, "rate_limited": 0}
    for client in list(_CLIENTS):
        stats = client.stats()
        for key in totals:
            totals[key] += stats[key]
    return totals


class TooDeep(ValueError):
    """JSON nested deeper than the interpreter can parse: bad JSON, not a crash."""


def loads(text: str | bytes) -> Any:
    """`json.loads`, with JSON nested past the recursion limit (`[[[[...` 100,000 deep) a ValueError
    (`TooDeep`) like any other bad JSON, never a RecursionError that skips every `except ValueError`."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeep("is JSON nested too deeply (about 1,000 levels or more) to be read") from None


def _encode(value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (valid in JSON, not in UTF-8): sent as its JSON escape
        return json.dumps(value, separators=(",", ":")).encode("ascii")


def _exception_summary(exc: BaseException) -> str:
    text = str(exc)
    name = type(exc).__name__
    return _one_line(f"{name}: {text}" if text else name)


def _one_line(text: str, limit: int = ERROR_BODY_SHOWN) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


__all__ = [
    "AdaptiveLimiter",
    "Exchange",
    "HttpClient",
    "HttpError",
    "Response",
    "ResponseCache",
    "RetryPolicy",
    "TlsOptions",
    "TooDeep",
    "Transport",
    "cache_from_settings",
    "env_names",
    "expand_env",
    "global_stats",
    "header_problem",
    "key_digest",
    "loads",
    "parse_retry_after",
    "parse_ttl",
    "policy_from_settings",
    "retryable_status",
    "tls_from_settings",
    "url_secrets",
]
