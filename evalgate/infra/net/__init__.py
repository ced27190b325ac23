"""The one HTTP layer: urllib3 connections, proxies and TLS from the environment, retries, an adaptive
rate limit, a response cache, redaction. A package along its seams: `client` (HttpClient), `transport`
(one exchange over urllib3), `connections` (deadlines on connecting and on the reply's head, the one
urllib3 override, and each direct origin's pool of kept-alive connections), `routes` (proxies and TLS),
`retry`, `limiter`, `cache`, `credentials` (what a request carries that is secret) and `errors`; every
name callers use is imported from here.

Every network call evalgate makes (the `http` and `openai` targets, the LLM judge, the GitHub
comment) goes through an `HttpClient`:

    client = HttpClient(concurrency=8, retries=RetryPolicy(attempts=3), timeout_s=30,
                        cache=ResponseCache(".evalgate/cache", ttl_s=86400), secrets=[token])
    reply = client.post_json(url, {"input": "hi"}, {"Authorization": f"Bearer {token}"},
                             cache_key={"target": settings_without_secrets, "body": payload})
    reply.status, reply.body, reply.from_cache, reply.attempts
    client.stats()   # {"requests": ..., "retries": ..., "cache_hits": ..., "concurrency_limit": ...}
    client.close()

- **Transport**: urllib3's connections. A direct origin has its own pool (`OriginPool`: kept-alive
  connections, the last used taken first), an origin behind a proxy urllib3's `ProxyManager`, chosen
  from `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` / `NO_PROXY` as curl and requests read them; TLS
  verified against `tls.ca_bundle`, else `REQUESTS_CA_BUNDLE` / `CURL_CA_BUNDLE` / `SSL_CERT_FILE`,
  else the system store; a client certificate when configured. Pools keep `concurrency` connections.
- **Retries** (`RetryPolicy`): connection errors, timeouts, 5xx, 408 and 429 only, with jittered
  exponential backoff capped at `max_backoff_s`; a `Retry-After` header is honoured on its own
  ceiling `max_retry_after_s` (a longer one errors the request, saying so).
- **Rate limits** (`AdaptiveLimiter`): at most `concurrency` requests in flight; each 429 halves the
  limit (once per window of requests that were in flight together), each success adds back
  1/limit, so the limit recovers by one for every `limit` successes (AIMD).
- **Cache** (`ResponseCache`): successful JSON replies stored on disk under a hash of the caller's
  `cache_key`; the caller builds that key from its settings *without secrets* plus the request,
  and the stored reply has every known secret redacted.
- **Secrets**: values passed in `secrets` join evalgate.infra.redaction's one registry and are replaced by
  `***` in replies (their keys too), error messages and the cache, before anything is shortened;
  a header value with a line break is refused by name, never echoed.

Errors are `HttpError` (final failure after retries, or a non-2xx status); their messages are safe
to record in results.
"""

from __future__ import annotations

from evalgate.infra.net.cache import ResponseCache, cache_from_settings, key_digest, parse_ttl
from evalgate.infra.net.client import Exchange, HttpClient, Response, global_stats
from evalgate.infra.net.connections import WATCHDOG, pool_classes
from evalgate.infra.net.credentials import basic_auth, env_names, expand_env, header_problem, url_secrets
from evalgate.infra.net.errors import HttpError, TooDeep, loads
from evalgate.infra.net.limiter import AdaptiveLimiter
from evalgate.infra.net.retry import RetryPolicy, parse_retry_after, policy_from_settings, retryable_status
from evalgate.infra.net.routes import (
    TlsOptions,
    TlsSettingError,
    bypasses_proxy,
    ca_source,
    environ_proxies,
    proxy_for,
    ssl_context,
    tls_from_settings,
)
from evalgate.infra.net.transport import Transport

__all__ = [
    "WATCHDOG",
    "AdaptiveLimiter",
    "Exchange",
    "HttpClient",
    "HttpError",
    "Response",
    "ResponseCache",
    "RetryPolicy",
    "TlsOptions",
    "TlsSettingError",
    "TooDeep",
    "Transport",
    "basic_auth",
    "bypasses_proxy",
    "ca_source",
    "cache_from_settings",
    "env_names",
    "environ_proxies",
    "expand_env",
    "global_stats",
    "header_problem",
    "key_digest",
    "loads",
    "parse_retry_after",
    "parse_ttl",
    "policy_from_settings",
    "pool_classes",
    "proxy_for",
    "retryable_status",
    "ssl_context",
    "tls_from_settings",
    "url_secrets",
]
