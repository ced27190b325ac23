"""`HttpClient`: a pooled keep-alive session with retries, an adaptive in-flight limit, an optional
response cache, and every known secret (evalgate.infra.redaction) masked in replies and messages."""

from __future__ import annotations

import json
import random
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalgate import __version__
from evalgate.infra import redaction
from evalgate.infra.net.cache import ResponseCache, key_digest
from evalgate.infra.net.connections import DnsTimeout
from evalgate.infra.net.credentials import basic_auth, header_problem, url_secrets
from evalgate.infra.net.errors import (
    ERROR_BODY_SHOWN,
    HttpError,
    NoRetry,
    TooDeep,
    exception_summary,
    loads,
    one_line,
)
from evalgate.infra.net.limiter import AdaptiveLimiter
from evalgate.infra.net.retry import RetryPolicy, parse_retry_after, retryable_status
from evalgate.infra.net.routes import TlsOptions, TlsSettingError
from evalgate.infra.net.transport import RawReply, Transport, split_url


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
            scheme, host, port, path = split_url(url)
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
            scheme, host, port, path = split_url(url)
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
        """`text` with every known secret masked (evalgate.infra.redaction, the one registry)."""
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
        where = f" to {one_line(redaction.redact_window(location, 200), 200)}" if location else ""
        return f"; the server redirects{where}: evalgate does not follow redirects, put the final URL in the spec"

    def _problem(self, exc: Exception, scheme: str, host: str, port: int, timeout_s: float) -> str:
        """What went wrong, in words a user acts on; raises NoRetry when retrying cannot help."""
        from urllib3 import exceptions as u3

        if isinstance(exc, NoRetry):  # the transport's own verdict on the reply (too big, undecodable)
            raise exc
        where = f"{scheme}://{host}:{port}"
        if self.transport.proxy_secrets:
            redaction.register(self.transport.proxy_secrets)
        if isinstance(exc, u3.ProxyError):
            proxy = self.transport.route(scheme, host, port)[1]
            cause = exc.original_error
            if isinstance(cause, u3.NewConnectionError) and "refused" in str(cause):
                return f"connection refused at the proxy {proxy} (from HTTPS_PROXY/HTTP_PROXY; NO_PROXY bypasses it)"
            return f"the proxy {proxy} failed: {exception_summary(cause or exc)}"
        if isinstance(exc, u3.NameResolutionError):
            return f"cannot resolve the host name {host}"
        if isinstance(exc.__cause__, DnsTimeout):
            return f"timed out resolving the host name {host} after {timeout_s:g}s (the DNS resolver did not answer)"
        if isinstance(exc, u3.NewConnectionError):
            if isinstance(exc.__cause__ or exc.__context__, ConnectionRefusedError) or "refused" in str(exc):
                return f"connection refused at {where}"
            return f"cannot connect to {where}: {exception_summary(exc.__cause__ or exc)}"
        if isinstance(exc, u3.ConnectTimeoutError):
            return f"timed out connecting to {where} after {timeout_s:g}s"
        if isinstance(exc, (u3.ReadTimeoutError, TimeoutError)):
            return f"timed out after {timeout_s:g}s"
        if isinstance(exc, u3.SSLError):
            reason = exception_summary(exc.__cause__ or exc)
            if "CERTIFICATE_VERIFY_FAILED" in str(exc) or "certificate verify failed" in str(exc):
                raise NoRetry(f"TLS: the certificate of {where} is not trusted ({reason}); give the CA bundle "
                               "in tls.ca_bundle or REQUESTS_CA_BUNDLE")
            return f"TLS with {where} failed: {reason}"
        if isinstance(exc, TlsSettingError):  # an environment CA bundle, parsed for the first https origin
            raise NoRetry(str(exc))
        if isinstance(exc, u3.ClosedPoolError):
            return "connection failed: the pool was closed"
        if isinstance(exc, (OSError, u3.HTTPError)):
            why: BaseException | None = exc.__cause__ or exc.__context__ if isinstance(exc, u3.ProtocolError) else exc
            return f"connection failed: {exception_summary(why or exc)}"
        # Anything else is a bug or a value http.client refused: its message may quote a header.
        raise NoRetry(f"the request could not be sent ({type(exc).__name__})")

    def _final_problem(self, exc: Exception, scheme: str, host: str, port: int, timeout_s: float) -> str:
        """`_problem` for a caller that never retries: retryable or not, only the words."""
        try:
            return self._problem(exc, scheme, host, port, timeout_s)
        except NoRetry as final:
            return str(final)

    def _send_with_retries(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str], timeout_s: float
    ) -> Response:
        policy = self.retries
        attempts = max(1, policy.attempts)
        shown_url = self.redact(url)
        try:
            scheme, host, port, path = split_url(url)
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
                except NoRetry as final:
                    self._count(failures=1)
                    raise HttpError(f"{method} {shown_url}: {self.redact(str(final))}", attempts=attempt) from None
                status = None
            else:
                status = raw.status
                if 200 <= status < 300:
                    ok = True
                    return self._success(method, shown_url, raw, (time.perf_counter() - started) * 1000.0, attempt)
                throttled = status == 429
                retry_after = parse_retry_after(raw.headers.get("Retry-After"))
                problem = self._refusal(method, shown_url, raw, attempt)
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

    def _success(self, method: str, shown_url: str, raw: RawReply, elapsed_ms: float, attempt: int) -> Response:
        """A 2xx reply as a Response; HttpError for a reply nested too deeply to read."""
        try:
            return self._response(raw.status, raw, elapsed_ms, attempt)
        except TooDeep as exc:
            self._count(failures=1)
            raise HttpError(f"{method} {shown_url}: the reply {exc}", status=raw.status, attempts=attempt) from None

    def _refusal(self, method: str, shown_url: str, raw: RawReply, attempt: int) -> str:
        """What a non-2xx reply says (its status, the start of its body redacted, a redirect's advice), to
        retry on; HttpError at once for a status no retry can change."""
        status = raw.status
        text = raw.content[: 4 * (ERROR_BODY_SHOWN + redaction.longest())].decode("utf-8", errors="replace")
        body = redaction.redact_window(text, ERROR_BODY_SHOWN)
        problem = f"HTTP {status}" + (f": {one_line(body)}" if body.strip() else "")
        if 300 <= status < 400:
            problem += self._redirect_hint(raw.headers.get("Location"))
        if not retryable_status(status):
            self._count(failures=1)
            raise HttpError(f"{method} {shown_url}: {problem}", status=status, attempts=attempt, body=body)
        return problem

    def _response(self, status: int, raw: RawReply, elapsed_ms: float, attempt: int) -> Response:
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


def _encode(value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (valid in JSON, not in UTF-8): sent as its JSON escape
        return json.dumps(value, separators=(",", ":")).encode("ascii")
