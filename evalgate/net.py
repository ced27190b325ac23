"""The one HTTP layer: pooled keep-alive connections, retries, an adaptive rate limit, a response cache.

Every network call evalgate makes (the `http` and `openai` targets, the LLM judge) goes through
an `HttpClient`:

    client = HttpClient(concurrency=8, retries=RetryPolicy(attempts=3), timeout_s=30,
                        cache=ResponseCache(".evalgate/cache", ttl_s=86400), secrets=[token])
    reply = client.post_json(url, {"input": "hi"}, {"Authorization": f"Bearer {token}"},
                             cache_key={"target": settings_without_secrets, "body": payload})
    reply.status, reply.body, reply.from_cache, reply.attempts
    client.stats()   # {"requests": ..., "retries": ..., "cache_hits": ..., "concurrency_limit": ...}
    client.close()

- **Retries** (`RetryPolicy`): connection errors, timeouts, 5xx, 408 and 429 only, with jittered
  exponential backoff; a `Retry-After` header is honoured (capped at `max_backoff_s`).
- **Rate limits** (`AdaptiveLimiter`): at most `concurrency` requests in flight; each 429 halves the
  limit (once per window of requests that were in flight together), each success adds back
  1/limit, so the limit recovers by one for every `limit` successes (AIMD).
- **Cache** (`ResponseCache`): successful JSON replies stored on disk under a hash of the caller's
  `cache_key`; the caller builds that key from its settings *without secrets* plus the request.
- **Secrets**: values passed in `secrets` are replaced by `***` in every error message.

Errors are `HttpError` (final failure after retries, or a non-2xx status); their messages are safe
to record in results.

The transport is the standard library's `http.client` with a keep-alive pool (one connection per
worker at steady state, TCP_NODELAY, head and body in one write): in bench/http.py it costs a
fraction of `requests`' per-request CPU and import time, which decides the ratio to the floor.
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import http.client
import json
import os
import random
import re
import socket
import ssl
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evalgate import __version__

RETRY_STATUSES = frozenset({408, 429})
ERROR_BODY_SHOWN = 300
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
    max_backoff_s: the cap on any one wait, `Retry-After` included.
    """

    attempts: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0

    def delay(self, retry: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number `retry` (1 for the first retry)."""
        rng = rng or random
        base = min(self.max_backoff_s, self.backoff_s * (2 ** (retry - 1)))
        wait = base / 2 + rng.uniform(0, base / 2)  # "equal jitter": spreads retries, keeps a floor
        if retry_after is not None:
            wait = max(wait, retry_after)
        return min(wait, self.max_backoff_s)


def retryable_status(status: int) -> bool:
    """5xx, 408 and 429 are worth another try; other statuses are the caller's problem."""
    return status >= 500 or status in RETRY_STATUSES


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent or invalid."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
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
        if value <= 0:
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
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


class ResponseCache:
    """JSON values on disk, one file per key, written atomically; entries older than `ttl_s` are misses.

    Safe to share between threads and processes (last writer wins; readers never see torn files).
    """

    def __init__(self, directory: str | Path, ttl_s: float | None = None) -> None:
        self.dir = Path(directory)
        self.ttl_s = ttl_s

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
        """Store a JSON-able value; failures to write are ignored (the cache is an optimisation)."""
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(json.dumps({"value": value}, ensure_ascii=False).encode("utf-8"))
            os.replace(tmp, path)
        except (OSError, TypeError, ValueError):
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(tmp)


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
    """A RetryPolicy from spec settings (`attempts`, `backoff_s`, `max_backoff_s`); defaults if None."""
    if settings is None:
        return RetryPolicy()
    return RetryPolicy(settings.attempts, settings.backoff_s, settings.max_backoff_s)


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


class Redactor:
    """Replaces known secret values (4+ characters) with `***` in text bound for logs and results."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self._lock = threading.Lock()
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        with self._lock:
            self._secrets.update(s for s in secrets if s and len(s) >= 4)

    def __call__(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, "***")
        return text


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
class _Counters:
    requests: int = 0
    retries: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    rate_limited: int = 0
    failures: int = 0


_CLIENTS: weakref.WeakSet[HttpClient] = weakref.WeakSet()
USER_AGENT = f"evalgate/{__version__}"


class _NoDelayHTTPConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _NoDelayHTTPSConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


@lru_cache(maxsize=64)
def _split(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path?query) of an http(s) URL; ValueError otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port, path


class _Pool:
    """Idle keep-alive connections per origin; at most `size` kept per origin."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._idle: dict[tuple[str, str, int], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None

    def get(self, origin: tuple[str, str, int], timeout_s: float) -> tuple[http.client.HTTPConnection, bool]:
        """A connection and whether it was reused (a reused one may have been closed by the server)."""
        with self._lock:
            idle = self._idle.get(origin)
            conn = idle.pop() if idle else None
        if conn is not None:
            conn.timeout = timeout_s
            if conn.sock is not None:
                conn.sock.settimeout(timeout_s)
            return conn, True
        return self.get_new(origin, timeout_s)

    def get_new(self, origin: tuple[str, str, int], timeout_s: float) -> tuple[http.client.HTTPConnection, bool]:
        scheme, host, port = origin
        if scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            return _NoDelayHTTPSConnection(host, port, timeout=timeout_s, context=self._ssl), False
        return _NoDelayHTTPConnection(host, port, timeout=timeout_s), False

    def put(self, origin: tuple[str, str, int], conn: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault(origin, [])
            if len(idle) < self.size:
                idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            conns = [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for conn in conns:
            conn.close()


class _Raw:
    """One HTTP exchange's result: status, headers, the whole body."""

    __slots__ = ("content", "headers", "status")

    def __init__(self, status: int, headers: Mapping[str, str], content: bytes) -> None:
        self.status = status
        self.headers = headers
        self.content = content


_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


class HttpClient:
    """A pooled keep-alive session with retries, an adaptive in-flight limit and an optional cache.

    concurrency: connections kept alive and the initial (and highest) in-flight limit.
    retries: a RetryPolicy. timeout_s: connect and read timeout per attempt.
    cache: a ResponseCache or None. secrets: values to redact from error messages.
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
    ) -> None:
        self.concurrency = max(1, concurrency)
        self.retries = retries or RetryPolicy()
        self.timeout_s = timeout_s
        self.cache = cache
        self.redact = Redactor(secrets)
        self.limiter = AdaptiveLimiter(self.concurrency, min_limit=min_limit)
        self._sleep = sleep
        self._rng = random.Random()
        self._counts = _Counters()
        self._lock = threading.Lock()
        self.pool = _Pool(self.concurrency)
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
        send_headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if data is not None:
            send_headers["Content-Type"] = "application/json"
        send_headers.update(headers or {})
        reply = self._send_with_retries(method, url, data, send_headers, timeout_s or self.timeout_s)
        if key is not None and self.cache is not None and reply.is_json:
            self.cache.put(key, {"status": reply.status, "body": reply.body, "elapsed_ms": reply.elapsed_ms})
        return reply

    def add_secrets(self, secrets: Iterable[str]) -> None:
        """More values to keep out of error messages (e.g. expanded at request time)."""
        self.redact.add(secrets)

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
            return out

    def close(self) -> None:
        self.pool.close()
        _CLIENTS.discard(self)

    # -- internals --

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self._counts, name, getattr(self._counts, name) + delta)

    def _exchange(
        self,
        origin: tuple[str, str, int],
        method: str,
        path: str,
        data: bytes | None,
        headers: dict[str, str],
        timeout_s: float,
    ) -> _Raw:
        """One request on a pooled connection, the whole body read; a server-closed idle connection
        is replaced transparently (once), any other failure raises."""
        for fresh_try in (False, True):
            conn, reused = self.pool.get(origin, timeout_s) if not fresh_try else self.pool.get_new(origin, timeout_s)
            try:
                conn.request(method, path, body=data, headers=headers)
                reply = conn.getresponse()
            except _STALE:
                conn.close()
                if reused and not fresh_try:
                    continue  # the server closed it while idle: not a failure of this request
                raise
            except BaseException:
                conn.close()
                raise
            try:
                content = reply.read()  # the whole body inside the slot; a reset here is retried
            except BaseException:
                conn.close()
                raise
            if reply.will_close:
                conn.close()
            else:
                self.pool.put(origin, conn)
            return _Raw(reply.status, reply.headers, content)
        raise AssertionError("unreachable")

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
                raw = self._exchange(origin, method, path, data, headers, timeout_s)
                content = raw.content
            except TimeoutError:
                problem = f"timed out after {timeout_s:g}s"
                status = None
            except (OSError, http.client.HTTPException) as exc:
                problem = f"connection failed: {_exception_summary(exc)}"
                status = None
            else:
                status = raw.status
                elapsed = (time.perf_counter() - started) * 1000.0
                if 200 <= status < 300:
                    ok = True
                    return _response(status, content, raw, elapsed, attempt)
                throttled = status == 429
                retry_after = parse_retry_after(raw.headers.get("Retry-After"))
                body = self.redact(content[:ERROR_BODY_SHOWN].decode("utf-8", errors="replace"))
                problem = f"HTTP {status}" + (f": {_one_line(body)}" if body.strip() else "")
                if not retryable_status(status):
                    self._count(failures=1)
                    raise HttpError(f"{method} {shown_url}: {problem}", status=status, attempts=attempt, body=body)
            finally:
                self.limiter.release(token, throttled=throttled, ok=ok)
            if throttled:
                self._count(rate_limited=1)
            if attempt == attempts:
                break
            self._count(retries=1)
            self._sleep(policy.delay(attempt, retry_after, self._rng))
        self._count(failures=1)
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        raise HttpError(f"{method} {shown_url}: {self.redact(problem)}{tries}", status=status, attempts=attempts)


def global_stats() -> dict[str, int]:
    """Retries and requests summed over every open client (the CLI's progress line)."""
    totals = {"requests": 0, "retries": 0, "rate_limited": 0}
    for client in list(_CLIENTS):
        stats = client.stats()
        for key in totals:
            totals[key] += stats[key]
    return totals


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _response(status: int, content: bytes, raw: _Raw, elapsed_ms: float, attempt: int) -> Response:
    text = content.decode("utf-8", errors="replace")
    try:
        body, is_json = json.loads(text), True
    except ValueError:
        body, is_json = None, False
    return Response(status, body, text, raw.headers, elapsed_ms, attempt, is_json=is_json)


def _exception_summary(exc: BaseException) -> str:
    text = str(exc)
    name = type(exc).__name__
    return _one_line(f"{name}: {text}" if text else name)


def _one_line(text: str, limit: int = ERROR_BODY_SHOWN) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


__all__ = [
    "AdaptiveLimiter",
    "HttpClient",
    "HttpError",
    "Redactor",
    "Response",
    "ResponseCache",
    "RetryPolicy",
    "cache_from_settings",
    "env_names",
    "expand_env",
    "global_stats",
    "key_digest",
    "parse_retry_after",
    "parse_ttl",
    "policy_from_settings",
    "retryable_status",
]
