"""A fake GitHub REST API on 127.0.0.1 that behaves like GitHub's for the sticky-comment calls.

- `GET /user`: the token's login; tokens registered as `integration` (GITHUB_TOKEN, App installation
  tokens) get 403 "Resource not accessible by integration"; GITHUB_TOKEN's comments are written as
  github-actions[bot], an App's as `slug[bot]` (`user.type` "Bot").
- `POST /graphql` (`/api/graphql` under GHES's `/api/v3`): `query { viewer { login __typename } }`
  answers for every token that may use GraphQL (`graphql=False` tokens get 403, as tokens without
  GraphQL access do); other queries get a GraphQL error.
- `GET /repos/{o}/{r}/issues/{n}/comments`: `per_page` (default 30, max 100) and `page`, with
  `Link` headers (first/prev/next/last) on absolute URLs, oldest first.
- `POST .../issues/{n}/comments` 201, `PATCH /repos/{o}/{r}/issues/comments/{id}` 200,
  `DELETE /repos/{o}/{r}/issues/comments/{id}` 204 with no body (the author's own comments only),
  `GET /repos/{o}/{r}/pulls/{n}`; 404 for unknown repos, issues, comments; 401 without a token;
  403 "Resource not accessible by integration" for read-only tokens; 422 for a body over 65,536
  characters; every answer carries `x-ratelimit-*` headers.
- `fail_next(...)` queues faults: 429 with `retry-after`, secondary-rate-limit 403s, 5xx, and
  non-JSON bodies (`raw`, an HTML error page), dropped connections (status `DROP`); with
  `landed=True` the request is carried out first and then answered with the fault (a POST that
  created its comment but whose answer was a 502, as GitHub's front end sometimes does).
- 422 "Validation Failed" with "the endpoint has been spammed" via `fail_next(..., 422, message=SPAMMED)`.
- Actions, for `baseline: auto`: `GET /repos/{o}/{r}/actions/runs/{id}` (its `workflow_id`),
  `GET .../actions/workflows/{id}/runs?branch=&status=` (newest first), `GET .../actions/runs/{id}/artifacts`
  (with `expired`), and `GET .../actions/artifacts/{id}/zip`: 410 when expired, else a 302 to storage on
  another host name (`localhost`), which serves the zip and records whether a token came along. A token
  added with `actions_read=False` gets 403 "Resource not accessible by integration" on these.
- `rename(old, new)`: the repository is renamed, as GitHub does it: its issues, comments, runs and
  artifacts move to `new`, the numeric id `/repositories/{id}/...` reaches it, and the old name
  answers 301 to that id for GET and 307 for writes (method and body kept), query string kept.
- `redirect_next(method, path_regex, status, location)` answers with a redirect to `location` (a
  format string: `{url}` this API's base, `{path}`, `{query}`, `{hop}` a counter, so each hop of a
  chain differs); to another server's origin, to itself (a loop), or with hostile text.
- `link_template` and `max_per_page` vary what GitHub fixes: how `Link` URLs are spelt (order of
  the query, relative, another host name) and the largest page.
- `together_next(method, path_regex, parties)`: that many matching requests are held until all have
  arrived, then answered: two jobs that list a PR's comments at the same moment both see none.
- `paging` misbehaves as a broken GitHub or a caching proxy would: `"repeat"` answers every page of a
  comment listing with the first page and a `next` link to the page after; `"forever"` pads the listing
  with other people's comments, new ids on every page, and a `next` link on every page (bounded:
  FOREVER_PAGES pages, so a client without its own bound still ends).
- `trickle_next(method, path_regex, every_s)`: the next matching answer is written a byte every `every_s`
  seconds (the head included), as a slow proxy would; bounded by TRICKLE_MAX_S and by `close`.
A `prefix` serves it under a path like GitHub Enterprise Server's `/api/v3`.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

BOT = "github-actions[bot]"
MAX_BODY = 65_536
NOT_ACCESSIBLE = "Resource not accessible by integration"
SPAMMED = "Validation Failed: the endpoint has been spammed."
DROP = 0  # a fault status: close the connection without answering
FOREVER_PAGES = 100_000  # `paging = "forever"` ends here: the fake never runs without a bound
TRICKLE_MAX_S = 30.0  # a trickled answer stops after this long whatever its size


@dataclass
class Token:
    login: str
    integration: bool = False  # GITHUB_TOKEN or an App installation token: /user refused
    read_only: bool = False  # a fork PR's token
    graphql: bool = True  # may ask GraphQL who it is
    actions_read: bool = True  # `permissions: actions: read`


@dataclass
class BytesBody:
    data: bytes
    content_type: str = "application/zip"


@dataclass
class Fault:
    method: str
    path: re.Pattern[str]
    status: int
    headers: dict[str, str]
    body: dict[str, Any]
    times: int
    raw: str | None = None  # a non-JSON body (an HTML error page from a proxy)
    landed: bool = False  # carried out, then answered with this fault
    effect: Any = None  # done as the fault is answered (what made it true: a comment deleted meanwhile)


@dataclass
class Redirect:
    method: str
    path: re.Pattern[str]
    status: int
    location: str  # a format string: {url}, {path}, {query}, {hop}
    times: int


class Trickling:
    """A writer that sends one byte every `every_s` seconds, for at most TRICKLE_MAX_S, until `stop`."""

    def __init__(self, out: Any, every_s: float, stop: threading.Event) -> None:
        self.out, self.every_s, self.stop = out, every_s, stop
        self.until = time.monotonic() + TRICKLE_MAX_S

    def write(self, data: bytes) -> int:
        for byte in data:
            if self.stop.wait(self.every_s) or time.monotonic() > self.until:
                raise ConnectionAbortedError("the trickle ended")
            self.out.write(bytes([byte]))
            self.out.flush()
        return len(data)

    def flush(self) -> None:
        self.out.flush()

    # what socketserver's handler asks of its writer when the handler returns (a trickle that ended in time)
    @property
    def closed(self) -> bool:
        return bool(self.out.closed)

    def close(self) -> None:
        self.out.close()


@dataclass
class RawBody:
    text: str


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    authorization: str
    body: Any


@dataclass
class State:
    tokens: dict[str, Token] = field(default_factory=dict)
    repos: set[str] = field(default_factory=set)
    issues: set[tuple[str, int]] = field(default_factory=set)
    pulls: dict[tuple[str, int], str] = field(default_factory=dict)
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    log: list[Request] = field(default_factory=list)
    next_id: int = 1000
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    artifacts: dict[int, dict[str, Any]] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    blob_auth: list[str] = field(default_factory=list)  # the Authorization header each blob download carried
    renamed: dict[str, int] = field(default_factory=dict)  # an old full name -> the repository's id
    repository_ids: dict[int, str] = field(default_factory=dict)  # id -> the current full name
    redirects: list[Redirect] = field(default_factory=list)
    hops: int = 0
    barriers: list[list[Any]] = field(default_factory=list)  # [method, path, barrier, arrivals left]
    trickles: list[tuple[str, re.Pattern[str], float]] = field(default_factory=list)


class FakeGitHub:
    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix.rstrip("/")
        self.state = State()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        # How `Link` URLs are spelt; GitHub's are absolute, other servers may reorder or go relative.
        self.link_template = "{base}{path}?per_page={per_page}&page={page}"
        self.max_per_page = 100
        self.paging = "normal"  # or "repeat", "forever": see the module's docstring
        self.stopping = threading.Event()

    # ---- set-up ----

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}{self.prefix}"

    def __enter__(self) -> FakeGitHub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()  # a trickling answer stops
        self.server.shutdown()
        self.server.server_close()

    def add_token(self, token: str, login: str, *, integration: bool = False, read_only: bool = False,
                  graphql: bool = True, actions_read: bool = True) -> None:
        """A token writing as `login`; `integration` tokens are refused `GET /user` (GITHUB_TOKEN
        writes as github-actions[bot] whatever login is given; an App token as its `slug[bot]`)."""
        if integration and not login.endswith("[bot]"):
            login = BOT
        self.state.tokens[token] = Token(login, integration, read_only, graphql, actions_read)

    def add_run(self, repo: str, run_id: int, *, workflow_id: int, branch: str, conclusion: str = "success",
                created_at: str = "2026-01-01T00:00:00Z", head_sha: str = "c" * 40, event: str = "push") -> None:
        self.state.repos.add(repo)
        self.state.runs[run_id] = {
            "id": run_id, "workflow_id": workflow_id, "head_branch": branch, "head_sha": head_sha,
            "status": "completed" if conclusion else "in_progress", "conclusion": conclusion or None,
            "created_at": created_at, "event": event, "_repo": repo,
        }

    def add_artifact(self, repo: str, run_id: int, name: str, data: bytes, *, expired: bool = False) -> int:
        artifact_id = self.state.next_id
        self.state.next_id += 1
        self.state.artifacts[artifact_id] = {
            "id": artifact_id, "name": name, "size_in_bytes": len(data), "expired": expired,
            "archive_download_url": f"{self.url}/repos/{repo}/actions/artifacts/{artifact_id}/zip",
            "created_at": "2026-01-01T00:00:00Z", "workflow_run": {"id": run_id}, "_data": data, "_repo": repo,
        }
        return artifact_id

    def add_pull(self, repo: str, number: int, head_sha: str = "0" * 40) -> None:
        self.state.repos.add(repo)
        self.state.issues.add((repo, number))
        self.state.pulls[(repo, number)] = head_sha

    def add_comment(self, repo: str, number: int, login: str, body: str) -> dict[str, Any]:
        with self.lock:
            return self._create(repo, number, login, body)

    def fail_next(self, method: str, path_regex: str, status: int, *, headers: dict[str, str] | None = None,
                  message: str = "", times: int = 1, raw: str | None = None, landed: bool = False,
                  effect: Any = None) -> None:
        body = {"message": message, "documentation_url": "https://docs.github.com/rest"}
        self.state.faults.append(Fault(method, re.compile(path_regex), status, headers or {}, body, times, raw,
                                       landed, effect))

    def rename(self, old: str, new: str, repo_id: int = 4242) -> None:
        """`old` is renamed `new`: everything moves, the old name redirects to `/repositories/{repo_id}`."""
        with self.lock:
            state = self.state
            state.repos = {new if r == old else r for r in state.repos}
            state.issues = {(new if r == old else r, n) for r, n in state.issues}
            state.pulls = {(new if r == old else r, n): sha for (r, n), sha in state.pulls.items()}
            for comment in state.comments.values():
                if comment["_issue"][0] == old:
                    comment["_issue"] = (new, comment["_issue"][1])
                    comment["url"] = comment["url"].replace(f"/repos/{old}/", f"/repos/{new}/")
                    comment["html_url"] = comment["html_url"].replace(f"/{old}/", f"/{new}/")
            for record in [*state.runs.values(), *state.artifacts.values()]:
                if record["_repo"] == old:
                    record["_repo"] = new
            state.renamed[old] = repo_id
            state.repository_ids[repo_id] = new

    def redirect_next(self, method: str, path_regex: str, status: int, location: str, *, times: int = 1) -> None:
        self.state.redirects.append(Redirect(method, re.compile(path_regex), status, location, times))

    def together_next(self, method: str, path_regex: str, parties: int) -> None:
        self.state.barriers.append([method, re.compile(path_regex), threading.Barrier(parties, timeout=10), parties])

    def trickle_next(self, method: str, path_regex: str, every_s: float) -> None:
        self.state.trickles.append((method, re.compile(path_regex), every_s))

    def _trickle(self, method: str, path: str) -> float | None:
        with self.lock:
            found = next((t for t in self.state.trickles if t[0] == method and t[1].search(path)), None)
            if found is not None:
                self.state.trickles.remove(found)
        return found[2] if found is not None else None

    def _meet(self, method: str, path: str) -> None:
        """Hold a request at its barrier (outside the lock) until the others arrive."""
        with self.lock:
            found = next((b for b in self.state.barriers if b[0] == method and b[1].search(path)), None)
            if found is not None:
                found[3] -= 1  # arrivals left to hold
                if not found[3]:
                    self.state.barriers.remove(found)
        if found is not None:
            found[2].wait()

    def comments_on(self, repo: str, number: int) -> list[dict[str, Any]]:
        return [c for c in self.state.comments.values() if c["_issue"] == (repo, number)]

    def requests(self, method: str | None = None) -> list[Request]:
        return [r for r in self.state.log if method is None or r.method == method]

    # ---- behaviour ----

    def _create(self, repo: str, number: int, login: str, body: str) -> dict[str, Any]:
        cid = self.state.next_id
        self.state.next_id += 1
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        comment = {
            "id": cid,
            "node_id": f"IC_{cid}",
            "url": f"{self.url}/repos/{repo}/issues/comments/{cid}",
            "html_url": f"https://github.com/{repo}/pull/{number}#issuecomment-{cid}",
            "body": body,
            "user": {"login": login, "id": len(login), "type": "Bot" if login.endswith("[bot]") else "User"},
            "created_at": now,
            "updated_at": now,
            "author_association": "NONE",
            "_issue": (repo, number),
        }
        self.state.comments[cid] = comment
        return comment

    @staticmethod
    def public(comment: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in comment.items() if not k.startswith("_")}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None,
                      trickle_s: float | None = None) -> None:
                if trickle_s is not None:  # the whole answer, head included, written a byte at a time
                    self.wfile = Trickling(self.wfile, trickle_s, fake.stopping)
                raw = isinstance(body, RawBody)
                if body is None:  # 204 No Content
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if isinstance(body, BytesBody):
                    data, kind = body.data, body.content_type
                else:
                    data = body.text.encode() if raw else json.dumps(body).encode()
                    kind = "text/html" if raw else "application/json; charset=utf-8"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                reset = int(time.time()) + 3600
                for key, value in {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999",
                                   "x-ratelimit-reset": str(reset), "x-ratelimit-used": "1",
                                   "x-ratelimit-resource": "core", **(headers or {})}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

            def _handle(self, method: str) -> None:
                parts = urlsplit(self.path)
                path, query = parts.path, parse_qs(parts.query)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                auth = self.headers.get("Authorization", "")
                fake._meet(method, path)
                trickle_s = fake._trickle(method, path)
                with fake.lock:
                    logged = path[len(fake.prefix):] if path.startswith(fake.prefix + "/") else path
                    fake.state.log.append(Request(method, logged, query, auth, body))
                    status, payload, headers = fake.route(method, path, query, auth, body)
                if status == DROP:  # the connection reset before any answer
                    self.close_connection = True
                    return
                try:
                    self._send(status, payload, headers, trickle_s)
                except (ConnectionAbortedError, BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up on a trickle, or the trickle ended

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PATCH(self) -> None:
                self._handle("PATCH")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        return Handler

    @property
    def graphql_path(self) -> str:
        """github.com: /graphql; GHES: /api/graphql beside the REST API's /api/v3."""
        return self.prefix.removesuffix("/v3") + "/graphql" if self.prefix.endswith("/v3") else "/graphql"

    def route(self, method: str, path: str, query: dict[str, list[str]], auth: str,
              body: Any) -> tuple[int, Any, dict[str, str]]:
        if path.startswith("/_blob/"):  # artifact storage: another host, no GitHub token wanted
            self.state.blob_auth.append(auth)
            blob = self.state.blobs.get(path.removeprefix("/_blob/"))
            return (200, BytesBody(blob), {}) if blob is not None else (404, {"message": "BlobNotFound"}, {})
        if path == self.graphql_path:
            path = "/graphql"
        elif path.startswith(self.prefix + "/"):
            path = path[len(self.prefix):]
        else:
            return 404, {"message": "Not Found"}, {}
        moved = self._moved(method, path, query)
        if moved is not None:
            return moved
        match = re.fullmatch(r"/repositories/(\d+)(/.*)?", path)
        if match and int(match.group(1)) in self.state.repository_ids:  # GitHub's name-free address
            path = f"/repos/{self.state.repository_ids[int(match.group(1))]}{match.group(2) or ''}"
        for fault in self.state.faults:
            if fault.times > 0 and fault.method == method and fault.path.search(path):
                fault.times -= 1
                if fault.landed:
                    self._route(method, path, query, auth, body)
                if fault.effect is not None:
                    fault.effect()
                return fault.status, (RawBody(fault.raw) if fault.raw is not None else fault.body), fault.headers
        return self._route(method, path, query, auth, body)

    def _moved(self, method: str, path: str, query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]] | None:
        """A queued redirect, or the old name of a renamed repository: GitHub answers a GET 301 and a write
        307 (the client must send the same method and body again), to the repository's id."""
        raw_query = urlencode(query, doseq=True)
        for redirect in self.state.redirects:
            if redirect.times > 0 and redirect.method == method and redirect.path.search(path):
                redirect.times -= 1
                self.state.hops += 1
                location = redirect.location.format(url=self.url, path=path, query=raw_query, hop=self.state.hops)
                return redirect.status, {"message": "Moved", "url": location}, {"Location": location}
        match = re.fullmatch(r"/repos/([^/]+/[^/]+)(/.*)?", path)
        repo_id = self.state.renamed.get(match.group(1)) if match else None
        if match is None or repo_id is None:
            return None
        location = f"{self.url}/repositories/{repo_id}{match.group(2) or ''}" + (f"?{raw_query}" if raw_query else "")
        status, message = (301, "Moved Permanently") if method in ("GET", "HEAD") else (307, "Temporary Redirect")
        return status, {"message": message, "url": location,
                        "documentation_url": "https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api"
                        "#follow-redirects"}, {"Location": location}

    def _route(self, method: str, path: str, query: dict[str, list[str]], auth: str,
               body: Any) -> tuple[int, Any, dict[str, str]]:
        token = self.state.tokens.get(auth.removeprefix("Bearer ").removeprefix("token "))
        if token is None:
            return 401, {"message": "Bad credentials"}, {}
        if method == "POST" and path == "/graphql":
            return self._graphql(token, body)
        if method == "GET" and path == "/user":
            if token.integration:
                return 403, {"message": NOT_ACCESSIBLE}, {}
            return 200, {"login": token.login, "id": 1, "type": "User"}, {}
        match = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", path)
        if match:
            repo, number = match.group(1), int(match.group(2))
            if (repo, number) not in self.state.issues:
                return 404, {"message": "Not Found"}, {}
            if method == "GET":
                return self._page(path, repo, number, query)
            if method == "POST":
                return self._write(token, body, lambda text: self._create(repo, number, token.login, text), 201)
        match = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)", path)
        if match and method in ("PATCH", "DELETE"):
            comment = self.state.comments.get(int(match.group(2)))
            if comment is None or comment["_issue"][0] != match.group(1):
                return 404, {"message": "Not Found"}, {}
            if comment["user"]["login"] != token.login:
                return 403, {"message": NOT_ACCESSIBLE}, {}
            if method == "DELETE":
                if token.read_only:
                    return 403, {"message": NOT_ACCESSIBLE}, {}
                del self.state.comments[comment["id"]]
                return 204, None, {}
            return self._write(token, body, lambda text: self._update(comment, text), 200)
        if "/actions/" in path and method == "GET":
            if not token.actions_read:
                return 403, {"message": NOT_ACCESSIBLE}, {}
            return self._actions(path, query)
        match = re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)", path)
        if match and method == "GET":
            sha = self.state.pulls.get((match.group(1), int(match.group(2))))
            if sha is None:
                return 404, {"message": "Not Found"}, {}
            return 200, {"number": int(match.group(2)), "head": {"sha": sha}}, {}
        return 404, {"message": "Not Found"}, {}

    def _graphql(self, token: Token, body: Any) -> tuple[int, Any, dict[str, str]]:
        if not token.graphql:
            return 403, {"message": NOT_ACCESSIBLE}, {}
        query = body.get("query") if isinstance(body, dict) else None
        if not isinstance(query, str) or not re.fullmatch(r"\s*(query\s*)?\{\s*viewer\s*\{[\w\s]+\}\s*\}\s*", query):
            return 200, {"errors": [{"message": "this fake answers only `query { viewer { ... } }`"}]}, {}
        fields = set(re.findall(r"\w+", query.split("viewer", 1)[1]))
        viewer = {"login": token.login, "__typename": "Bot" if token.login.endswith("[bot]") else "User"}
        return 200, {"data": {"viewer": {k: v for k, v in viewer.items() if k in fields}}}, {}

    def _actions(self, path: str, query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        match = re.fullmatch(r"/repos/([^/]+/[^/]+)/actions/runs/(\d+)", path)
        if match:
            run = self.state.runs.get(int(match.group(2)))
            if run is None or run["_repo"] != match.group(1):
                return 404, {"message": "Not Found"}, {}
            return 200, self.public(run), {}
        match = re.fullmatch(r"/repos/([^/]+/[^/]+)/actions/workflows/(\d+)/runs", path)
        if match:
            branch = query.get("branch", [None])[0]
            status = query.get("status", [None])[0]
            per_page = min(100, int(query.get("per_page", ["30"])[0]))
            runs = [r for r in self.state.runs.values() if r["_repo"] == match.group(1)
                    and r["workflow_id"] == int(match.group(2)) and (branch is None or r["head_branch"] == branch)
                    and (status is None or status in (r["conclusion"], r["status"]))]
            runs.sort(key=lambda r: (r["created_at"], r["id"]), reverse=True)
            return 200, {"total_count": len(runs), "workflow_runs": [self.public(r) for r in runs[:per_page]]}, {}
        match = re.fullmatch(r"/repos/([^/]+/[^/]+)/actions/runs/(\d+)/artifacts", path)
        if match:
            run = self.state.runs.get(int(match.group(2)))
            if run is None or run["_repo"] != match.group(1):
                return 404, {"message": "Not Found"}, {}
            name = query.get("name", [None])[0]
            found = [self.public(a) for a in self.state.artifacts.values()
                     if a["workflow_run"]["id"] == run["id"] and (name is None or a["name"] == name)]
            return 200, {"total_count": len(found), "artifacts": found}, {}
        match = re.fullmatch(r"/repos/([^/]+/[^/]+)/actions/artifacts/(\d+)/zip", path)
        if match:
            artifact = self.state.artifacts.get(int(match.group(2)))
            if artifact is None or artifact["_repo"] != match.group(1):
                return 404, {"message": "Not Found"}, {}
            if artifact["expired"]:
                return 410, {"message": "Artifact has expired"}, {}
            key = f"a{artifact['id']}"
            self.state.blobs[key] = artifact["_data"]
            port = self.server.server_address[1]
            return 302, {"message": "Found"}, {"Location": f"http://localhost:{port}/_blob/{key}"}
        return 404, {"message": "Not Found"}, {}

    def _update(self, comment: dict[str, Any], text: str) -> dict[str, Any]:
        comment["body"] = text
        comment["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return comment

    def _write(self, token: Token, body: Any, apply: Any, status: int) -> tuple[int, Any, dict[str, str]]:
        if token.read_only:
            return 403, {"message": NOT_ACCESSIBLE}, {}
        text = body.get("body") if isinstance(body, dict) else None
        if not isinstance(text, str):
            return 422, {"message": "Invalid request.\n\n\"body\" wasn't supplied."}, {}
        if len(text) > MAX_BODY:
            return 422, {"message": "Validation Failed", "errors": [{
                "resource": "IssueComment", "code": "custom", "field": "body",
                "message": f"body is too long (maximum is {MAX_BODY} characters)"}]}, {}
        return status, self.public(apply(text)), {}

    def _page(self, path: str, repo: str, number: int, query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        per_page = min(self.max_per_page, max(1, int(query.get("per_page", ["30"])[0])))
        page = max(1, int(query.get("page", ["1"])[0]))
        comments = [self.public(c) for c in self.comments_on(repo, number)]
        last = max(1, -(-len(comments) // per_page))
        if self.paging == "repeat":  # a proxy that ignores `page`: the first page, again and again
            chunk, last = comments[:per_page], page + 1
        elif self.paging == "forever":  # a next link on every page, never the same ids twice
            chunk = comments[(page - 1) * per_page: page * per_page]
            chunk += [{"id": 10**9 + page * 1000 + i, "user": {"login": "someone", "type": "User"}, "body": "hi",
                       "html_url": f"{self.url}/c/{page}-{i}"} for i in range(per_page - len(chunk))]
            last = min(page + 1, FOREVER_PAGES)
        else:
            chunk = comments[(page - 1) * per_page: page * per_page]
        full = f"{self.prefix}{path}"

        def link(to: int, rel: str) -> str:
            url = self.link_template.format(base=self.url.removesuffix(self.prefix), path=full, per_page=per_page,
                                            page=to, port=self.server.server_address[1])
            return f'<{url}>; rel="{rel}"'

        links = []
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        return 200, chunk, ({"Link": ", ".join(links)} if links else {})
