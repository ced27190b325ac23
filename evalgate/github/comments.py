"""The sticky PR comment over GitHub's REST API (GITHUB_API_URL, so GHES works too).

One comment per key, found by its hidden marker among the comments written by the token's own
identity, updated in place (PATCH) or created (POST). Rate limits are honoured, boundedly.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import requests

from evalgate import __version__

BOT_LOGIN = "github-actions[bot]"  # who GITHUB_TOKEN writes as; GET /user refuses that token
PER_PAGE = 100
MAX_PAGES = 100  # 10,000 comments: a bound on the listing loop
MAX_ATTEMPTS = 4
MAX_WAIT_S = 60.0  # longest single wait we accept from retry-after / x-ratelimit-reset
MAX_TOTAL_WAIT_S = 120.0
TIMEOUT_S = 30.0
RETRY_STATUSES = {500, 502, 503, 504}
IDEMPOTENT = {"GET", "PATCH"}
KEY_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


class CommentError(Exception):
    """A request GitHub refused; `status` 0 when it never answered."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(f"HTTP {status}: {message}" if status else message)

    @property
    def read_only(self) -> bool:
        """The token may not write here (a fork PR's GITHUB_TOKEN, missing `pull-requests: write`)."""
        return self.status == 403 and "not accessible" in self.message.lower()

    @property
    def too_long(self) -> bool:
        """Any 422 on a comment: GitHub's says "Validation Failed" and the reason may be missing, so
        a shorter body is worth one more try whatever the wording."""
        return self.status == 422


def comment_key(key: str) -> str:
    """A key safe inside an HTML comment: `-->` or spaces could end or confuse the marker."""
    return re.sub(r"-{2,}", "-", KEY_CHARS.sub("-", key)).strip("-") or "default"  # no `--` in a comment


def marker(key: str) -> str:
    return f"<!-- evalgate:{comment_key(key)} -->"


def marker_in(body: str) -> str | None:
    """The key of a body's first-line marker, if it has one."""
    match = re.match(r"<!-- evalgate:([A-Za-z0-9._-]+) -->", body)
    return match.group(1) if match else None


@dataclass
class Upserted:
    url: str
    action: str  # "created" or "updated"


def _message(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    if not isinstance(data, dict):
        return ""
    # A 422 says "Validation Failed" on top and why in `errors` ("body is too long ...").
    details = [str(e.get("message", "")) if isinstance(e, dict) else str(e) for e in data.get("errors") or []]
    return "; ".join([str(data.get("message", "")), *[d for d in details if d]])[:500]


class GitHub:
    """A small REST client: auth, retries on rate limits, pagination bounded in pages and time."""

    def __init__(self, api_url: str, token: str, *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time) -> None:
        self.api_url = api_url.rstrip("/")
        self.session = requests.Session()
        self.session.headers.update({
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"evalgate/{__version__}",
        })
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"
        self.sleep = sleep
        self.clock = clock
        self.waited = 0.0

    def close(self) -> None:
        self.session.close()

    def _url(self, path_or_url: str) -> str:
        return path_or_url if "://" in path_or_url else f"{self.api_url}{path_or_url}"

    def _next_url(self, response: requests.Response) -> str | None:
        """The `Link` rel="next" target, on the API's own host: the token must never go anywhere
        else, and stopping early would miss our comment (a duplicate), so a relative reference is
        resolved against the request and another host name keeps only its path and query."""
        following = response.links.get("next", {}).get("url")
        if not following:
            return None
        parts = urlsplit(urljoin(response.url, following))
        api = urlsplit(self.api_url)
        return urlunsplit((api.scheme, api.netloc, parts.path, parts.query, ""))

    def _retry_wait(self, response: requests.Response, attempt: int) -> float | None:
        """Seconds to wait before retrying, or None when this answer is final."""
        status = response.status_code
        headers = response.headers
        rate_limited = status == 429 or (
            status == 403
            and (
                "retry-after" in headers
                or headers.get("x-ratelimit-remaining") == "0"
                or "rate limit" in _message(response).lower()
            )
        )
        if not rate_limited and status not in RETRY_STATUSES:
            return None
        wait = 2.0**attempt  # GitHub's advice with no header: wait, then back off
        if "retry-after" in headers:
            with contextlib.suppress(ValueError):
                wait = float(headers["retry-after"])
        elif headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
            with contextlib.suppress(ValueError):
                wait = float(headers["x-ratelimit-reset"]) - self.clock() + 1
        wait = max(0.0, wait)
        if wait > MAX_WAIT_S or self.waited + wait > MAX_TOTAL_WAIT_S:
            return None  # too long for a CI step: give up, the caller warns
        return wait

    def _may_resend(self, method: str, exc: requests.RequestException, attempt: int, wait: float) -> bool:
        """A reset connection is retried for idempotent calls only: a POST may have landed."""
        return (method in IDEMPOTENT and isinstance(exc, requests.ConnectionError)
                and not isinstance(exc, requests.Timeout) and attempt + 1 < MAX_ATTEMPTS
                and self.waited + wait <= MAX_TOTAL_WAIT_S)

    def request(self, method: str, path_or_url: str, **kwargs: Any) -> requests.Response:
        url = self._url(path_or_url)
        for attempt in range(MAX_ATTEMPTS):
            try:
                response = self.session.request(method, url, timeout=TIMEOUT_S, **kwargs)
            except requests.RequestException as exc:
                wait = 2.0**attempt
                if not self._may_resend(method, exc, attempt, wait):
                    raise CommentError(0, f"{method} {urlsplit(url).path}: {type(exc).__name__}") from None
                self.waited += wait
                self.sleep(wait)
                continue
            if response.status_code < 400:
                return response
            wait = self._retry_wait(response, attempt) if attempt + 1 < MAX_ATTEMPTS else None
            if wait is None:
                raise CommentError(response.status_code, _message(response))
            self.waited += wait
            self.sleep(wait)
        raise AssertionError("unreachable")

    def login(self) -> str:
        """The token's own login; github-actions[bot] when GET /user is refused (GITHUB_TOKEN)."""
        try:
            data = self.request("GET", "/user").json()
        except CommentError as exc:
            if exc.status in (401, 403, 404):
                return BOT_LOGIN
            raise
        login = data.get("login") if isinstance(data, dict) else None
        return login if isinstance(login, str) and login else BOT_LOGIN

    def comments(self, repo: str, number: int) -> Iterator[dict[str, Any]]:
        url: str | None = f"/repos/{repo}/issues/{number}/comments"
        params: dict[str, Any] | None = {"per_page": PER_PAGE}
        for _ in range(MAX_PAGES):
            if url is None:
                return
            response = self.request("GET", url, params=params)
            page = response.json()
            if not isinstance(page, list):
                raise CommentError(response.status_code, "the comment listing is not a list")
            yield from (c for c in page if isinstance(c, dict))
            url = self._next_url(response)
            params = None  # the next link carries its own query

    def find(self, repo: str, number: int, login: str, key: str) -> dict[str, Any] | None:
        """Our comment: written by `login`, with the exact marker as a line of its own (look-alikes and
        quotes inside a line ignored; CRLF, as a body saved from the web UI comes back, accepted)."""
        wanted = marker(key)
        for comment in self.comments(repo, number):
            author = (comment.get("user") or {}).get("login")
            body = comment.get("body") or ""
            if author == login and wanted in body and any(line.strip() == wanted for line in body.splitlines()):
                return comment
        return None

    def upsert(self, repo: str, number: int, body: str, key: str) -> Upserted:
        """PATCH our comment when there is one, POST a new one otherwise."""
        login = self.login()
        found = self.find(repo, number, login, key)
        response = None
        if found is not None:
            try:
                response = self.request("PATCH", f"/repos/{repo}/issues/comments/{found['id']}",
                                        json={"body": body})
                action = "updated"
            except CommentError as exc:
                if exc.status != 404:  # deleted since we listed: create it again
                    raise
        if response is None:
            response = self.request("POST", f"/repos/{repo}/issues/{number}/comments", json={"body": body})
            action = "created"
        data = response.json()
        return Upserted(url=str(data.get("html_url", "")) if isinstance(data, dict) else "", action=action)

    def pull_head_sha(self, repo: str, number: int) -> str:
        data = self.request("GET", f"/repos/{repo}/pulls/{number}").json()
        return str(((data or {}).get("head") or {}).get("sha", ""))
