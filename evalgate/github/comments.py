"""The sticky PR comment over GitHub's REST API (GITHUB_API_URL, so GHES works too).

One comment per key, found by its hidden marker among the comments written by the token's own
identity (GraphQL `viewer`, which answers for GITHUB_TOKEN, App installation tokens and users'
tokens alike, or the `comment-author` input), updated in place (PATCH) or created (POST). Requests
go through the one HTTP layer (`evalgate.infra.net`: proxies, CA bundles), passed in by the caller.
Rate limits are honoured, boundedly; nothing is ever written twice. All the calls of one client (one
step) share one deadline (`deadline_s`, the Action's `github-timeout`): a reply trickled a byte at a time,
rate-limit waits or endless `next` links cannot hold the job past it. The comments are listed once; the
listing stops at a page of ids already seen (a proxy repeating a page) and after MAX_PAGES. Redirects (a renamed or
transferred repository: 301, 302, 307, 308) are followed a few hops, with the same method and body as
GitHub asks, on GITHUB_API_URL's own origin only: the token never goes anywhere else.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urldefrag, urlencode, urljoin, urlsplit, urlunsplit

from evalgate.infra.logs import Timer, log_request
from evalgate.infra.net import Exchange, HttpClient, HttpError, parse_retry_after
from evalgate.infra.redaction import redact, redact_window
from evalgate.infra.textsafe import visible

log = logging.getLogger(__name__)
PER_PAGE = 100
MAX_PAGES = 100  # 10,000 comments: a bound on the listing loop
DEADLINE_S = 120.0  # every GitHub call of one step, waits included (the Action's `github-timeout`)
MAX_ATTEMPTS = 4
MAX_WAIT_S = 60.0  # longest single wait we accept from retry-after / x-ratelimit-reset
MAX_TOTAL_WAIT_S = 120.0
SECONDARY_WAIT_S = 60.0  # GitHub: after a secondary rate limit without retry-after, wait at least a minute
TIMEOUT_S = 30.0
RETRY_STATUSES = {500, 502, 503, 504}
IDEMPOTENT = {"GET", "PATCH", "DELETE"}
MAX_REDIRECTS = 5  # GitHub redirects once (a renamed repository); more is a loop or a misbehaving proxy
REDIRECTS = {301, 302, 303, 307, 308}
# A Location we follow: printable ASCII, no space, no backslash (URL parsers disagree on `\`).
PLAIN_URL = re.compile(r"[!-\[\]-~]{1,2000}")
SHOWN_ORIGIN = 100
KEY_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
MAX_KEY_CHARS = 200  # a marker's key: longer ones keep their start and a hash
VIEWER_QUERY = "query { viewer { login __typename } }"
_REL = re.compile(r'\s*;\s*rel="?([^";,]+)"?')  # what follows a Link target's `<...>`


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
    def spammed(self) -> bool:
        """GitHub's 422 "the endpoint has been spammed": writing again would only make it worse."""
        text = self.message.lower()
        return self.status == 422 and ("spam" in text or "too quickly" in text)

    @property
    def too_long(self) -> bool:
        """A 422 on a comment that is not the spam guard: GitHub's says "Validation Failed" and the
        reason may be missing, so a shorter body is worth one more try whatever the wording."""
        return self.status == 422 and not self.spammed


def comment_key(key: str) -> str:
    """A key safe inside an HTML comment: `-->` or spaces could end or confuse the marker.

    An ASCII key keeps the key it always had, so its comment is still found. Other characters would
    all become `-`, and `évals` and `øvals` share `vals`: such a key also gets a hash of the whole key,
    as does a key longer than MAX_KEY_CHARS, cut to fit."""
    if not key.isascii():  # NFC: a name typed with a composed or a decomposed `é` is one key
        key = unicodedata.normalize("NFC", key)
    safe = re.sub(r"-{2,}", "-", KEY_CHARS.sub("-", key)).strip("-")  # no `--` in a comment
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    if not key.isascii():
        safe = f"{safe}-{digest}" if safe else digest
    safe = safe or "default"
    if len(safe) > MAX_KEY_CHARS:
        # a marker as long as the name crowded the report out of the comment, or was cut off with it
        # (no run found the comment again): a long key keeps its start and a hash of the whole key
        safe = f"{safe[: MAX_KEY_CHARS - len(digest) - 1].rstrip('-')}-{digest}"
    return safe


def marker(key: str) -> str:
    """The hidden first line that finds the comment again. A secret in the key (`comment-key` holding a
    header's `${VAR}` value) is masked first: the body's redaction would otherwise rewrite the marker
    posted, no later run would find it, and every run would post one more comment."""
    safe = comment_key(redact(key))
    for _ in range(3):  # `a b` becomes `a-b`: the safe key may spell a secret the key did not
        masked = redact(safe)
        if masked == safe:
            break
        safe = comment_key(masked)
    return f"<!-- evalgate:{safe} -->"


def marker_in(body: str) -> str | None:
    """The key of a body's first-line marker, if it has one."""
    match = re.match(r"<!-- evalgate:([A-Za-z0-9._-]+) -->", body)
    return match.group(1) if match else None


@dataclass
class Upserted:
    url: str
    action: str  # "created" or "updated"
    id: Any = None  # the comment's id, as GitHub gave it
    removed: int = 0  # duplicates of it deleted on the way

    def __str__(self) -> str:
        deleted = f" ({self.removed} duplicate{'s' if self.removed != 1 else ''} deleted)" if self.removed else ""
        return f"{self.action}: {self.url}{deleted}"


def _message(response: Exchange) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    if not isinstance(data, dict):
        return ""
    # A 422 says "Validation Failed" on top and why in `errors` ("body is too long ...").
    details = [str(e.get("message", "")) if isinstance(e, dict) else str(e) for e in data.get("errors") or []]
    return "; ".join([str(data.get("message", "")), *[d for d in details if d]])[:500]


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) with the default port spelt out and case folded; ValueError for a bad port."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


def shown_origin(url: str) -> str:
    """An origin for a message: never the path, query or user info, where a token could hide."""
    scheme, host, port = origin(url)
    return visible(f"{scheme}://{host}:{port}")[:SHOWN_ORIGIN]


def links(response: Exchange) -> dict[str, str]:
    """The `Link` header's targets by rel (`next`, `last`, ...)."""
    found: dict[str, str] = {}
    for url, rels in link_targets(response.headers.get("Link", "")):
        for rel in rels.split():
            found.setdefault(rel, url)
    return found


def link_targets(header: str) -> list[tuple[str, str]]:
    """Each `<url>; rel="..."` of a Link header, as `re.findall(r'<([^>]*)>\\s*;\\s*rel="?([^";,]+)"?')`
    finds them, in linear time: that regex rescans to the end from every `<` no `>` follows, and a
    hostile or broken server's 64 KiB header of them took minutes."""
    out: list[tuple[str, str]] = []
    start = header.find("<")
    while start >= 0:
        end = header.find(">", start + 1)
        if end < 0:
            break
        match = _REL.match(header, end + 1)
        if match is None:  # every `<` before this `>` ends at it too, and fails alike
            start = header.find("<", end + 1)
            continue
        out.append((header[start + 1 : end], match.group(1)))
        start = header.find("<", match.end())
    return out


def same_account(author: str | None, who: Identity, author_type: object) -> bool:
    """A comment's REST `user.login` and `user.type` against the token's identity. REST names an App's
    account `slug[bot]`; GraphQL may name the same Bot `slug`, and then an author `slug` is a User of that
    login (the App's owner, say): someone else, whose comments are never taken for ours."""
    if not author:
        return False
    if who.bot and not who.login.endswith("[bot]"):
        return author == f"{who.login}[bot]" and author_type == "Bot"
    return author == who.login


def graphql_url(api_url: str) -> str:
    """github.com: https://api.github.com/graphql; GHES: https://HOST/api/graphql (REST is /api/v3)."""
    base = api_url.rstrip("/")
    return base[: -len("/v3")] + "/graphql" if base.endswith("/api/v3") else base + "/graphql"


@dataclass(frozen=True)
class Identity:
    login: str
    bot: bool = False


class GitHub:
    """A small REST client: auth, retries on rate limits, pagination bounded in pages and time.

    http: the HttpClient to send through (its proxies and CA bundle); the caller owns and closes it.
    author: the login the token writes as, when known (the `comment-author` input); otherwise it is
    asked of GraphQL `viewer`, never guessed. sleep/clock: injectable, so tests never wait.
    """

    def __init__(self, api_url: str, token: str, http: HttpClient, *, author: str = "",
                 graphql: str | None = None, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time, secondary_wait_s: float = SECONDARY_WAIT_S,
                 deadline_s: float = DEADLINE_S, max_pages: int = MAX_PAGES) -> None:
        self.api_url = api_url.rstrip("/")
        self.graphql_url = graphql or graphql_url(self.api_url)
        self.http = http
        self.headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        }
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
            http.add_secrets([token])
        self.author = author.strip()
        self.sleep = sleep
        self.clock = clock
        self.secondary_wait_s = secondary_wait_s
        self.waited = 0.0
        self.secondary_waited = False
        self._identity: Identity | None = None
        self.deadline_s = deadline_s
        self.max_pages = max_pages
        self._deadline = time.monotonic() + deadline_s  # real time: a trickle takes it, a recorded wait too
        self._listed: dict[tuple[str, int, str], list[dict[str, Any]]] = {}  # ours, by PR and key: listed once

    def _left(self, where: str) -> float:
        """Seconds left of the step's deadline; CommentError once it has passed."""
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise CommentError(0, f"{where}: GitHub took more than {self.deadline_s:g}s in all (the step's "
                                  "deadline, `github-timeout`): stopped")
        return left

    def _url(self, path_or_url: str) -> str:
        return path_or_url if "://" in path_or_url else f"{self.api_url}{path_or_url}"

    def _next_url(self, response: Exchange) -> str | None:
        """The `Link` rel="next" target, on the API's own host: the token must never go anywhere
        else, and stopping early would miss our comment (a duplicate), so a relative reference is
        resolved against the request and another host name keeps only its path and query."""
        following = links(response).get("next")
        if not following:
            return None
        parts = urlsplit(urljoin(response.url, following))
        api = urlsplit(self.api_url)
        return urlunsplit((api.scheme, api.netloc, parts.path, parts.query, ""))

    def _retry_wait(self, response: Exchange, attempt: int, method: str) -> float | None:
        """Seconds to wait before retrying, or None when this answer is final."""
        status = response.status
        headers = response.headers
        message = _message(response).lower()
        primary = headers.get("x-ratelimit-remaining") == "0"
        retry_after = parse_retry_after(headers.get("retry-after"))
        rate_limited = status == 429 or (status == 403 and (retry_after is not None or primary
                                                             or "rate limit" in message))
        if not rate_limited:
            if status in RETRY_STATUSES and method in IDEMPOTENT:  # a POST answered 5xx may have landed
                return self._budget(2.0**attempt)
            return None
        if retry_after is not None:
            wait = retry_after
        elif primary and "x-ratelimit-reset" in headers:
            try:
                wait = float(headers["x-ratelimit-reset"]) - self.clock() + 1
            except ValueError:
                wait = 2.0**attempt
        else:  # a secondary limit without retry-after: GitHub asks for at least a minute, once is enough
            if self.secondary_waited:
                return None
            self.secondary_waited = True
            wait = max(self.secondary_wait_s, 2.0**attempt)
        return self._budget(max(0.0, wait))

    def _budget(self, wait: float) -> float | None:
        if wait > MAX_WAIT_S or self.waited + wait > MAX_TOTAL_WAIT_S:
            return None  # too long for a CI step: give up, the caller warns
        if wait >= self._deadline - time.monotonic():
            return None  # past the step's deadline: waiting would only end in its error
        return wait

    def _redirect(self, where: str, response: Exchange, offsite: bool) -> str | None:
        """Where a redirect leads, when it may be followed with the token: the API's own origin only.
        None: another origin the caller fetches itself, without the token (`offsite`, artifact storage).
        CommentError otherwise; the Location is untrusted text, so only its origin is ever shown."""
        status = response.status
        location = response.headers.get("Location") or ""
        if not location:
            raise CommentError(status, f"{where}: redirected without a Location")
        try:
            if not PLAIN_URL.fullmatch(location):
                raise ValueError
            target = urldefrag(urljoin(response.url, location)).url
            scheme, host, _port = origin(target)
            if scheme not in ("http", "https") or not host:
                raise ValueError
        except ValueError:
            raise CommentError(status, f"{where}: redirected to a Location that is not a plain http(s) URL "
                                       f"({len(location)} characters, not shown): not followed") from None
        if origin(target) == origin(self.api_url):
            return target
        shown = redact_window(shown_origin(target), SHOWN_ORIGIN)
        if urlsplit(self.api_url).scheme.lower() == "https" and scheme == "http":
            raise CommentError(status, f"{where}: redirected from https to http ({shown}): not followed, the "
                                       "token never travels unencrypted")
        if offsite:
            return None
        raise CommentError(status, f"{where}: redirected to another origin, {shown}: not followed, the token "
                                   f"goes only to GITHUB_API_URL's origin ({shown_origin(self.api_url)})")

    def _send(self, method: str, url: str, json: Any, offsite: bool) -> Exchange:
        """One exchange and the redirects it leads to (GitHub: "any request may result in a redirect").
        Every hop re-sends the same method and body: GitHub answers writes to a renamed repository
        with 307, and asks 301/302 to be repeated as they were too. Only 303 turns into a GET."""
        where = f"{method} {urlsplit(url).path}"
        seen = {(method, url)}
        for hop in range(MAX_REDIRECTS + 1):
            timer = Timer()
            timeout_s = min(TIMEOUT_S, self._left(where))
            try:
                response = self.http.exchange(method, url, json_body=json, headers=self.headers, timeout_s=timeout_s)
            except HttpError as exc:
                if not hop:
                    raise
                # the message would name the redirect's target: keep to the path we were asked for
                raise HttpError(f"after {hop} redirect(s): {_no_url(str(exc), url)}") from None
            log_request(log, method, url, self.headers, status=response.status, attempts=1, from_cache=False,
                        elapsed_ms=timer.ms())
            if response.status not in REDIRECTS:
                return response
            target = self._redirect(where, response, offsite)
            if target is None:
                return response
            if response.status == 303:
                method, json = "GET", None
            if (method, target) in seen:
                raise CommentError(response.status, f"{where}: a redirect loop, back to an address already asked "
                                                    f"after {hop + 1} redirects: not followed")
            seen.add((method, target))
            url = target
        raise CommentError(response.status, f"{where}: more than {MAX_REDIRECTS} redirects: not followed further")

    def request(self, method: str, path_or_url: str, *, params: dict[str, Any] | None = None,
                json: Any = None, read: bool = False, offsite: bool = False) -> Exchange:
        """One API call with GitHub's retry rules and its redirects followed on the API's origin;
        `read`: a POST that changes nothing (GraphQL queries), retried like a GET; `offsite`: a redirect
        to another origin is the answer (artifact storage, fetched without the token), not an error."""
        url = self._url(path_or_url)
        kind = "GET" if read else method  # what the retry rules treat it as
        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        for attempt in range(MAX_ATTEMPTS):
            try:
                response = self._send(method, url, json, offsite)
            except HttpError as exc:
                self._left(f"{method} {urlsplit(url).path}")  # timed out at the step's deadline: say that
                wait = 2.0**attempt
                # A reset connection is retried for idempotent calls only: a POST may have landed.
                if kind not in IDEMPOTENT or attempt + 1 >= MAX_ATTEMPTS or self._budget(wait) is None:
                    raise CommentError(0, f"{method} {urlsplit(url).path}: {_no_url(str(exc), url)}") from None
                log.debug("%s %s: no answer (%s); retrying in %.1f s", method, url, exc, wait)
                self.waited += wait
                self.sleep(wait)
                continue
            if response.status < 400:
                return response
            retry_in = self._retry_wait(response, attempt, kind) if attempt + 1 < MAX_ATTEMPTS else None
            if retry_in is None:
                raise CommentError(response.status, _message(response))
            log.debug("%s %s -> %s; retrying in %.1f s", method, url, response.status, retry_in)
            self.waited += retry_in
            self.sleep(retry_in)
        raise AssertionError("unreachable")

    def identity(self) -> Identity:
        """Who the token writes as: the `comment-author` input, else GraphQL `viewer`, else `GET /user`;
        CommentError when none answers (a guess would post duplicates or adopt someone else's marker)."""
        if self._identity is not None:
            return self._identity
        if self.author:
            self._identity = Identity(self.author, bot=self.author.endswith("[bot]"))
            return self._identity
        problems = []
        try:
            data = self.request("POST", self.graphql_url, json={"query": VIEWER_QUERY}, read=True).json()
            viewer = ((data.get("data") or {}).get("viewer") or {}) if isinstance(data, dict) else {}
            login = viewer.get("login")
            if isinstance(login, str) and login:
                self._identity = Identity(login, bot=viewer.get("__typename") == "Bot" or login.endswith("[bot]"))
                return self._identity
            errors = data.get("errors") if isinstance(data, dict) else None
            problems.append(f"GraphQL viewer gave no login{f' ({str(errors)[:200]})' if errors else ''}")
        except (CommentError, ValueError) as exc:
            problems.append(f"GraphQL viewer: {exc}")
        try:
            data = self.request("GET", "/user").json()
            login = data.get("login") if isinstance(data, dict) else None
            if isinstance(login, str) and login:
                self._identity = Identity(login, bot=data.get("type") == "Bot")
                return self._identity
            problems.append("GET /user gave no login")
        except (CommentError, ValueError) as exc:
            problems.append(f"GET /user: {exc}")
        raise CommentError(0, "cannot tell which account the token writes as (" + "; ".join(problems)
                           + "); set the `comment-author` input to that account's login")

    def login(self) -> str:
        """The token's own login (see `identity`)."""
        return self.identity().login

    def comments(self, repo: str, number: int) -> Iterator[dict[str, Any]]:
        """Each comment once, oldest first. The listing ends at the last page, at a page of ids all seen
        before or a `next` link already followed (a proxy or a broken server repeating itself), and after
        `max_pages` pages; the step's deadline bounds it in time."""
        url: str | None = f"/repos/{repo}/issues/{number}/comments"
        params: dict[str, Any] | None = {"per_page": PER_PAGE}
        seen_ids: set[Any] = set()
        followed: set[str] = set()
        for _ in range(self.max_pages):
            if url is None or url in followed:
                return
            followed.add(url)
            response = self.request("GET", url, params=params)
            page = response.json()
            if not isinstance(page, list):
                raise CommentError(response.status, "the comment listing is not a list")
            fresh = [c for c in page if isinstance(c, dict) and _hashable(c.get("id")) not in seen_ids]
            if page and not fresh:
                return  # every id on this page was on an earlier one: the rest would repeat too
            seen_ids.update(_hashable(c.get("id")) for c in fresh)
            yield from fresh
            url = self._next_url(response)
            params = None  # the next link carries its own query

    def find_all(self, repo: str, number: int, login: str | Identity, key: str) -> list[dict[str, Any]]:
        """Our comments, oldest first: written by `login`, with the exact marker as a line of its own
        (look-alikes and quotes inside a line ignored; CRLF, as a body saved from the web UI comes back,
        accepted). More than one only after two jobs raced to create it."""
        who = login if isinstance(login, Identity) else Identity(login, bot=login.endswith("[bot]"))
        wanted = marker(key)
        found: list[dict[str, Any]] = []
        for comment in self.comments(repo, number):
            # a listing entry of another shape (a proxy's, an old GHES's) is no comment of ours, never a crash
            found_user, found_body = comment.get("user"), comment.get("body")
            user: dict[str, Any] = found_user if isinstance(found_user, dict) else {}
            body = found_body if isinstance(found_body, str) else ""
            if (same_account(user.get("login"), who, user.get("type"))
                    and wanted in body and any(line.strip() == wanted for line in body.splitlines())):
                found.append(comment)
        return found

    def find(self, repo: str, number: int, login: str | Identity, key: str) -> dict[str, Any] | None:
        """Our comment (the oldest, should there be more), or None."""
        found = self.find_all(repo, number, login, key)
        return found[0] if found else None

    def upsert(self, repo: str, number: int, body: str, key: str) -> Upserted:
        """PATCH our comment when there is one, POST a new one otherwise. The comments are listed once per
        client (a step): a second upsert (a shorter body after a 422) uses that listing. A POST that got
        no answer or a 5xx may have landed: only then is the marker looked for again before posting a
        second time.

        Two jobs that list at the same moment (two pushes, a re-run) may both post; the next update keeps
        the oldest of ours and deletes the others: distinct ids of comments we wrote, never the one it
        writes."""
        who = self.identity()
        mine = self._ours(repo, number, who, key)
        if mine:
            try:
                done = self._patch(repo, mine[0], body)
            except CommentError as exc:
                if exc.status != 404:  # deleted since we listed: create it again
                    raise
                mine.clear()
            else:
                removed = self._delete(repo, [c.get("id") for c in mine[1:]], keep=mine[0].get("id"))
                del mine[1:]
                return replace(done, removed=removed)
        created = self._create(repo, number, who, key, body)
        mine[:] = [{"id": created.id, "html_url": created.url}]
        return created

    def _ours(self, repo: str, number: int, who: Identity, key: str) -> list[dict[str, Any]]:
        """Our comments with this key, oldest first, listed once per client."""
        listed = self._listed.get((repo, number, key))
        if listed is None:
            listed = self._listed[(repo, number, key)] = self.find_all(repo, number, who, key)
        return listed

    def _create(self, repo: str, number: int, who: Identity, key: str, body: str) -> Upserted:
        path = f"/repos/{repo}/issues/{number}/comments"
        try:
            return _upserted(self.request("POST", path, json={"body": body}), "created")
        except CommentError as exc:
            if exc.status != 0 and exc.status not in RETRY_STATUSES:
                raise
            landed = self.find(repo, number, who, key)
            if landed is not None:
                return Upserted(url=str(landed.get("html_url", "")), action="created", id=landed.get("id"))
            wait = self._budget(2.0)
            if wait is None:
                raise
            self.waited += wait
            self.sleep(wait)
            return _upserted(self.request("POST", path, json={"body": body}), "created")

    def _patch(self, repo: str, comment: dict[str, Any], body: str) -> Upserted:
        comment_id = comment.get("id")
        if not isinstance(comment_id, int) or isinstance(comment_id, bool):  # never put into a URL
            raise CommentError(0, "the comment listing gave our comment no numeric id")
        response = self.request("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", json={"body": body})
        return _upserted(response, "updated")

    def _delete(self, repo: str, ids: list[Any], *, keep: Any) -> int:
        """Delete these comments of ours, each id once and never `keep` (the one just written); how many
        went. Gone already is fine; any other refusal stops the clean-up (the comment itself is written),
        never the step."""
        removed = 0
        for comment_id in dict.fromkeys(i for i in ids if _hashable(i) != _hashable(keep)):
            if not isinstance(comment_id, int) or isinstance(comment_id, bool):
                continue  # not an id GitHub gives: never put into a URL
            try:
                self.request("DELETE", f"/repos/{repo}/issues/comments/{comment_id}")
            except CommentError as exc:
                if exc.status == 404:
                    continue
                break
            removed += 1
        return removed

    def pull_head_sha(self, repo: str, number: int) -> str:
        data = self.request("GET", f"/repos/{repo}/pulls/{number}").json()
        return str(((data or {}).get("head") or {}).get("sha", ""))


def _upserted(response: Exchange, action: str) -> Upserted:
    data = response.json()
    if not isinstance(data, dict):
        return Upserted(url="", action=action)
    return Upserted(url=str(data.get("html_url", "")), action=action, id=data.get("id"))


def _hashable(value: Any) -> Any:
    """An id as a set member: a listing of another shape may give a list or an object."""
    return value if isinstance(value, int | str | float | bool | None) else repr(value)


def _no_url(message: str, url: str) -> str:
    """An HttpError's reason without the method and URL it starts with (the caller names the path)."""
    prefix_end = message.find(url)
    return message[prefix_end + len(url):].lstrip(": ") if prefix_end >= 0 else message
