"""The sticky comment client against a fake GitHub API on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_github import BOT, DROP, SPAMMED, FakeGitHub
from hypothesis import given
from hypothesis import strategies as st

from evalgate.github.comments import (
    MAX_KEY_CHARS,
    CommentError,
    GitHub,
    comment_key,
    graphql_url,
    link_targets,
    marker,
)
from evalgate.infra.net import Exchange, HttpClient, RetryPolicy

REPO = "octo/agent"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_token("app", BOT, integration=True)
        fake.add_token("pat", "alice")
        fake.add_pull(REPO, 1, head_sha="c" * 40)
        yield fake


class Clock:
    """Records waits instead of sleeping, so rate-limit tests are instant."""

    def __init__(self) -> None:
        self.waits: list[float] = []
        self.now = 1_000_000.0

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def time(self) -> float:
        return self.now


def client(github: FakeGitHub, token: str = "app", clock: Clock | None = None, author: str = "") -> GitHub:
    clock = clock or Clock()
    http = HttpClient(concurrency=1, retries=RetryPolicy(attempts=1), timeout_s=10.0, environ={})
    return GitHub(github.url, token, http, author=author, sleep=clock.sleep, clock=clock.time)


def test_identity_comes_from_graphql_viewer_for_every_kind_of_token(github: FakeGitHub) -> None:
    github.add_token("ghs_app", "evalgate-ci[bot]", integration=True)
    assert client(github, "pat").login() == "alice"
    assert client(github, "app").login() == BOT
    assert client(github, "ghs_app").login() == "evalgate-ci[bot]"
    assert not any(r.path == "/user" for r in github.requests())  # GraphQL answered: no REST guesswork


def test_graphql_lives_beside_the_rest_api() -> None:
    assert graphql_url("https://api.github.com") == "https://api.github.com/graphql"
    assert graphql_url("https://ghes.example/api/v3/") == "https://ghes.example/api/graphql"


def test_an_app_token_finds_its_own_comment_and_never_duplicates_it(github: FakeGitHub) -> None:
    """Installation tokens cannot call GET /user: the comment was posted again on every run."""
    github.add_token("ghs_app", "evalgate-ci[bot]", integration=True)
    github.add_comment(REPO, 1, "mallory", marker("k") + "\nplanted")
    github.add_comment(REPO, 1, BOT, marker("k") + "\nanother app's")
    first = client(github, "ghs_app").upsert(REPO, 1, marker("k") + "\none", "k")
    second = client(github, "ghs_app").upsert(REPO, 1, marker("k") + "\ntwo", "k")
    assert (first.action, second.action) == ("created", "updated") and first.url == second.url
    ours = [c for c in github.comments_on(REPO, 1) if c["user"]["login"] == "evalgate-ci[bot]"]
    assert len(ours) == 1 and ours[0]["body"].endswith("two")
    assert [c["body"] for c in github.comments_on(REPO, 1)][:2] == [marker("k") + "\nplanted",
                                                                    marker("k") + "\nanother app's"]


def test_a_bot_named_without_its_suffix_is_still_recognised(github: FakeGitHub) -> None:
    """GraphQL may name a Bot `slug` where REST says `slug[bot]`; a User is never taken for a Bot."""
    github.add_token("ghs_app", "evalgate-ci[bot]", integration=True)
    ours = github.add_comment(REPO, 1, "evalgate-ci[bot]", marker("k") + "\nold")
    gh = client(github, "ghs_app")
    from evalgate.github.comments import Identity

    assert gh.find(REPO, 1, Identity("evalgate-ci", bot=True), "k") == github.public(ours)
    assert gh.find(REPO, 1, Identity("evalgate-ci", bot=False), "k") is None


def test_a_user_named_like_the_apps_bot_is_someone_else(github: FakeGitHub) -> None:
    """GraphQL names the App's Bot `evalgate-ci`; the User `evalgate-ci` (the App's owner) is another account:
    its older comment with the marker was taken for ours and overwritten with the report."""
    from evalgate.github.comments import Identity

    github.add_token("ghs_app", "evalgate-ci[bot]", integration=True)
    github.add_comment(REPO, 1, "evalgate-ci", marker("k") + "\nthe owner's own words")
    ours = github.add_comment(REPO, 1, "evalgate-ci[bot]", marker("k") + "\nold")
    gh = client(github, "ghs_app")
    assert gh.find_all(REPO, 1, Identity("evalgate-ci", bot=True), "k") == [github.public(ours)]
    assert gh.find(REPO, 1, Identity("evalgate-ci[bot]", bot=True), "k") == github.public(ours)


def test_no_identity_is_ever_guessed_from_a_refused_get_user(github: FakeGitHub) -> None:
    """A token that can ask neither GraphQL nor GET /user: no comment rather than a duplicate."""
    github.add_token("ghs_blind", "evalgate-ci[bot]", integration=True, graphql=False)
    github.add_comment(REPO, 1, "evalgate-ci[bot]", marker("k") + "\nold")
    with pytest.raises(CommentError) as caught:
        client(github, "ghs_blind").upsert(REPO, 1, marker("k") + "\nnew", "k")
    assert "comment-author" in str(caught.value) and github.requests("POST")[-1].path == "/graphql"
    assert len(github.comments_on(REPO, 1)) == 1
    done = client(github, "ghs_blind", author="evalgate-ci[bot]").upsert(REPO, 1, marker("k") + "\nnew", "k")
    assert done.action == "updated" and len(github.comments_on(REPO, 1)) == 1


def test_a_post_answered_5xx_that_landed_is_not_posted_again(github: FakeGitHub) -> None:
    github.fail_next("POST", r"/issues/1/comments$", 502, message="Server Error", landed=True)
    done = client(github, "pat").upsert(REPO, 1, marker("k") + "\nbody", "k")
    assert done.action == "created" and done.url.endswith("#issuecomment-1000")
    assert len(github.comments_on(REPO, 1)) == 1
    assert [r.path for r in github.requests("POST") if r.path != "/graphql"] == [f"/repos/{REPO}/issues/1/comments"]


def test_a_post_answered_5xx_that_did_not_land_is_sent_once_more(github: FakeGitHub) -> None:
    clock = Clock()
    github.fail_next("POST", r"/issues/1/comments$", 503, message="Service Unavailable")
    done = client(github, "pat", clock).upsert(REPO, 1, marker("k") + "\nbody", "k")
    assert done.action == "created" and len(github.comments_on(REPO, 1)) == 1
    assert len([r for r in github.requests("POST") if r.path.endswith("/comments")]) == 2 and clock.waits == [2.0]


def test_a_spammed_endpoint_is_not_written_again(github: FakeGitHub) -> None:
    github.fail_next("POST", r"/comments$", 422, message=SPAMMED)
    with pytest.raises(CommentError) as caught:
        client(github, "pat").upsert(REPO, 1, marker("k") + "\nbody", "k")
    assert caught.value.spammed and not caught.value.too_long
    assert len([r for r in github.requests("POST") if r.path.endswith("/comments")]) == 1


def test_a_secondary_rate_limit_without_retry_after_waits_a_minute_once(github: FakeGitHub) -> None:
    clock = Clock()
    limited = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
    github.fail_next("GET", r"/comments$", 403, message=limited, times=2)
    with pytest.raises(CommentError) as caught:
        client(github, "pat", clock).upsert(REPO, 1, marker("k") + "\nbody", "k")
    assert caught.value.status == 403 and clock.waits == [60.0]
    assert github.comments_on(REPO, 1) == []


def test_finds_its_own_comment_on_a_later_page_and_ignores_look_alikes(github: FakeGitHub) -> None:
    github.add_comment(REPO, 1, "mallory", marker("k") + "\nfake")
    github.add_comment(REPO, 1, BOT, marker("k-2") + "\nother job")
    github.add_comment(REPO, 1, BOT, "text " + marker("k"))
    github.add_comment(REPO, 1, BOT, marker("k") + "suffix")
    for n in range(230):
        github.add_comment(REPO, 1, "reviewer", f"c{n}")
    ours = github.add_comment(REPO, 1, BOT, marker("k") + "\nold body")
    done = client(github).upsert(REPO, 1, marker("k") + "\nnew body", "k")
    assert done.action == "updated" and done.url == ours["html_url"]
    assert ours["body"] == marker("k") + "\nnew body"
    pages = [r.query.get("page", ["1"])[0] for r in github.requests("GET") if r.path.endswith("/comments")]
    assert pages == ["1", "2", "3"]
    assert next(r.query.get("per_page") for r in github.requests("GET") if r.path.endswith("/comments")) == ["100"]


def test_a_listing_entry_of_another_shape_is_skipped_not_a_crash(github: FakeGitHub) -> None:
    """One entry whose `user` or `body` is not what GitHub sends cost the whole comment (AttributeError)."""
    ours = github.add_comment(REPO, 1, BOT, marker("k") + "\nold")
    for user, body in (("mallory", marker("k")), (["x"], "hi"), ({"login": BOT, "type": "Bot"}, 5)):
        github.add_comment(REPO, 1, "reviewer", "")["user"] = user
        github.comments_on(REPO, 1)[-1]["body"] = body
    done = client(github).upsert(REPO, 1, marker("k") + "\nnew", "k")
    assert (done.action, done.id) == ("updated", ours["id"])
    assert github.comments_on(REPO, 1)[0]["body"] == marker("k") + "\nnew"


def test_creates_when_absent_then_updates(github: FakeGitHub) -> None:
    gh = client(github, "pat")
    assert gh.upsert(REPO, 1, marker("x") + "\none", "x").action == "created"
    assert gh.upsert(REPO, 1, marker("x") + "\ntwo", "x").action == "updated"
    [comment] = github.comments_on(REPO, 1)
    assert comment["user"]["login"] == "alice" and comment["body"].endswith("two")


def test_retries_429_and_secondary_limits_honouring_the_headers(github: FakeGitHub) -> None:
    clock = Clock()
    github.fail_next("POST", "/graphql", 429, headers={"retry-after": "3"})
    github.fail_next("GET", "/comments", 403, headers={"x-ratelimit-remaining": "0",
                                                       "x-ratelimit-reset": str(int(clock.now) + 10)},
                     message="API rate limit exceeded")
    github.fail_next("POST", "/comments", 403, message="You have exceeded a secondary rate limit.")
    done = client(github, "pat", clock).upsert(REPO, 1, marker("k") + "\nbody", "k")
    assert done.action == "created"
    assert clock.waits == [3.0, 8.0, 60.0]  # the reset was 10 s away when asked, 3 s had passed; a secondary
    # limit without retry-after waits a minute, as GitHub asks


def test_gives_up_when_asked_to_wait_too_long(github: FakeGitHub) -> None:
    clock = Clock()
    github.fail_next("POST", "/graphql", 429, headers={"retry-after": "3600"}, times=2)
    github.fail_next("GET", "/user", 429, headers={"retry-after": "3600"})
    with pytest.raises(CommentError) as caught:
        client(github, "pat", clock).login()
    assert "429" in str(caught.value) and clock.waits == []


def test_retries_are_bounded(github: FakeGitHub) -> None:
    clock = Clock()
    github.fail_next("GET", "/comments", 502, times=100)
    with pytest.raises(CommentError) as caught:
        client(github, "pat", clock).find(REPO, 1, "alice", "k")
    assert caught.value.status == 502 and len(clock.waits) == 3


def test_read_only_and_too_long_are_recognised(github: FakeGitHub) -> None:
    github.add_token("ro", BOT, integration=True, read_only=True)
    with pytest.raises(CommentError) as caught:
        client(github, "ro").upsert(REPO, 1, "x", "k")
    assert caught.value.read_only
    with pytest.raises(CommentError) as caught:
        client(github, "pat").upsert(REPO, 1, "x" * 70_000, "k")
    assert caught.value.too_long
    with pytest.raises(CommentError) as caught:
        client(github, "pat").upsert(REPO, 999, "x", "k")
    assert caught.value.status == 404


def test_a_link_to_another_host_never_takes_the_token_there(github: FakeGitHub) -> None:
    """Only the link's path and query are used: the request (and token) stay on GITHUB_API_URL."""
    github.link_template = "http://evil.invalid:{port}{path}?per_page={per_page}&page={page}"
    for n in range(150):
        github.add_comment(REPO, 1, "reviewer", f"c{n}")
    assert client(github, "pat").find(REPO, 1, "alice", "k") is None
    pages = [r.query.get("page", ["1"])[0] for r in github.requests("GET") if r.path.endswith("/comments")]
    assert pages == ["1", "2"]


def test_keys_cannot_break_the_marker() -> None:
    assert comment_key("my eval --> <b>") == "my-eval-b"
    assert marker("") == "<!-- evalgate:default -->"


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=MAX_KEY_CHARS))
def test_an_ascii_key_is_the_very_key_it_always_was(key: str) -> None:
    """Its comment, posted by an earlier version, is still found and updated: never a second one."""
    import re

    before = re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9._-]+", "-", key)).strip("-") or "default"
    assert comment_key(key) == before
    assert comment_key(before) == before  # a body file's marker keeps its key


def test_a_key_too_long_for_a_comment_gets_a_short_marker() -> None:
    name = "evals " * 14_000
    keys = {comment_key(name), comment_key(name + "x"), comment_key("évals " * 14_000)}
    assert len(keys) == 3 and all(len(k) <= MAX_KEY_CHARS and comment_key(k) == k for k in keys)
    assert comment_key(name).startswith("evals-evals-") and comment_key("a" * MAX_KEY_CHARS) == "a" * MAX_KEY_CHARS


def test_names_that_differ_only_beyond_ascii_keep_their_own_comment(github: FakeGitHub) -> None:
    """`évals` and `øvals` both lost every letter but `vals`: the second eval overwrote the first's comment."""
    names = ["évals", "øvals", "日本語", "中文", "vals"]
    keys = [comment_key(name) for name in names]
    assert len(set(keys)) == len(names) and keys[-1] == "vals"
    assert comment_key("e\u0301vals") == keys[0]  # a decomposed é is the same name
    assert all(comment_key(k) == k and marker(k) == marker(name) for k, name in zip(keys, names, strict=True))
    for round_ in ("one", "two"):
        for name in names:
            done = client(github).upsert(REPO, 1, marker(name) + f"\n{name} {round_}", name)
            assert done.action == ("created" if round_ == "one" else "updated"), name
    bodies = [c["body"] for c in github.comments_on(REPO, 1)]
    assert bodies == [marker(name) + f"\n{name} two" for name in names]


def comment_cli(github: FakeGitHub, *args: str, token: str = "pat",
                **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_WORKFLOW", "GITHUB_JOB")}
    env.update(GITHUB_API_URL=github.url, GITHUB_TOKEN=token, GITHUB_REPOSITORY=REPO, **extra)
    return subprocess.run([sys.executable, "-m", "evalgate.cli", "comment", *args], env=env, capture_output=True,
                          text=True, timeout=60)


def test_comment_command_posts_a_body_file_once(github: FakeGitHub, tmp_path: Path) -> None:
    """The workflow_run half of the fork pattern: post the artifact's body, keyed by its marker."""
    body = tmp_path / "comment.md"
    body.write_text(marker("weather") + "\n## report")
    first = comment_cli(github, "--body-file", str(body), "--pr", "1")
    assert first.returncode == 0, first.stderr
    second = comment_cli(github, "--body-file", str(body), "--pr", "1", "--head-sha", "c" * 40)
    assert second.returncode == 0 and "updated" in second.stdout
    [comment] = github.comments_on(REPO, 1)
    assert comment["body"] == marker("weather") + "\n## report"
    assert "pat" not in first.stdout + first.stderr


def test_comment_command_refuses_a_moved_head_and_reports_failures(github: FakeGitHub, tmp_path: Path) -> None:
    body = tmp_path / "comment.md"
    body.write_text("plain body")
    moved = comment_cli(github, "--body-file", str(body), "--pr", "1", "--head-sha", "d" * 40)
    assert moved.returncode == 1 and github.comments_on(REPO, 1) == []
    missing = comment_cli(github, "--body-file", str(body), "--pr", "5")
    assert missing.returncode == 1 and "404" in missing.stderr
    keyed = comment_cli(github, "--body-file", str(body), "--pr", "1", "--key", "nightly")
    assert keyed.returncode == 0
    assert github.comments_on(REPO, 1)[0]["body"] == marker("nightly") + "\nplain body"


# ---- what another GitHub-like server may do differently ----


def test_finds_its_comment_after_an_edit_in_the_web_ui(github: FakeGitHub) -> None:
    """A comment saved from the browser comes back with CRLF line endings: still ours, no duplicate."""
    ours = github.add_comment(REPO, 1, BOT, marker("k") + "\r\n## old\r\n")
    done = client(github).upsert(REPO, 1, marker("k") + "\nnew", "k")
    assert done.action == "updated" and ours["body"] == marker("k") + "\nnew"
    assert len(github.comments_on(REPO, 1)) == 1


def test_finds_its_marker_on_its_own_line_but_never_inside_a_line(github: FakeGitHub) -> None:
    github.add_comment(REPO, 1, BOT, "quoting " + marker("k") + " here")
    deleted = github.add_comment(REPO, 1, "ghost", marker("k"))
    deleted["user"] = None  # a deleted account's comments have `user: null`
    ours = github.add_comment(REPO, 1, BOT, "  \n" + marker("k") + "  \nold")
    assert client(github).find(REPO, 1, BOT, "k") == github.public(ours)


@pytest.mark.parametrize("template", [
    "{base}{path}?page={page}&per_page={per_page}",  # the query in another order
    "{path}?page={page}",  # a relative reference, resolved against the request's URL
    "http://localhost:{port}{path}?per_page={per_page}&page={page}",  # the same server by another name
])
def test_follows_every_spelling_of_the_next_link(github: FakeGitHub, template: str) -> None:
    github.link_template = template
    github.max_per_page = 30  # a server with smaller pages than asked for
    for n in range(70):
        github.add_comment(REPO, 1, "reviewer", f"c{n}")
    ours = github.add_comment(REPO, 1, BOT, marker("k") + "\nold")
    assert client(github).find(REPO, 1, BOT, "k") == github.public(ours)
    gets = [r for r in github.requests("GET") if r.path.endswith("/comments")]
    assert len(gets) == 3 and all(r.authorization == "Bearer app" for r in gets)


def test_a_comment_deleted_meanwhile_is_created_again(github: FakeGitHub) -> None:
    old = github.add_comment(REPO, 1, BOT, marker("k") + "\nold")
    # someone deletes it between our listing and our PATCH
    github.fail_next("PATCH", r"/issues/comments/\d+$", 404, message="Not Found",
                     effect=lambda: github.state.comments.pop(old["id"]))
    done = client(github).upsert(REPO, 1, marker("k") + "\nnew", "k")
    assert done.action == "created" and done.url.endswith("#issuecomment-1001")
    assert [r.method for r in github.requests() if "graphql" not in r.path] == ["GET", "PATCH", "POST"]  # listed once


def test_any_validation_failure_counts_as_too_long() -> None:
    """GitHub's 422 says "Validation Failed"; the reason may be missing or a plain string."""
    assert CommentError(422, "Validation Failed").too_long
    assert not CommentError(403, "Validation Failed").too_long


def test_a_dropped_connection_is_retried_for_reads_and_updates_only(github: FakeGitHub) -> None:
    """Reads and PATCH are idempotent; a POST may have landed, so the marker is looked for first."""
    clock = Clock()
    github.add_comment(REPO, 1, "alice", marker("k") + "\nold")
    github.fail_next("GET", "/comments", DROP)
    github.fail_next("PATCH", "/comments/", DROP)
    assert client(github, "pat", clock).upsert(REPO, 1, marker("k") + "\nnew", "k").action == "updated"
    assert clock.waits == [1.0, 1.0]
    github.fail_next("POST", "/comments", DROP)
    assert client(github, "pat", clock).upsert(REPO, 1, marker("j") + "\nnew", "j").action == "created"
    assert len([r for r in github.requests("POST") if r.path.endswith("/comments")]) == 2
    assert len(github.comments_on(REPO, 1)) == 2  # k and j, once each


def test_comment_command_lets_no_other_line_pass_for_a_marker(github: FakeGitHub, tmp_path: Path) -> None:
    """A fork's body claiming another job's key must not become that job's sticky comment."""
    body = tmp_path / "comment.md"
    body.write_text(marker("weather") + "\n## report\n" + marker("nightly") + "\n")
    assert comment_cli(github, "--body-file", str(body), "--pr", "1").returncode == 0
    gh = client(github, "pat")
    assert gh.find(REPO, 1, "alice", "weather") is not None
    assert gh.find(REPO, 1, "alice", "nightly") is None


def test_comment_command_reports_an_answer_that_is_not_json(github: FakeGitHub, tmp_path: Path) -> None:
    body = tmp_path / "comment.md"
    body.write_text("plain body")
    github.fail_next("GET", "/comments", 200, raw="<html>maintenance</html>")
    result = comment_cli(github, "--body-file", str(body), "--pr", "1")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "unexpected answer" in result.stderr


def test_the_comment_goes_through_the_jobs_proxy(github: FakeGitHub) -> None:
    """One HTTP stack: a runner behind a proxy reaches GitHub through it, token and all."""
    from fake_proxy import FakeProxy

    with FakeProxy() as proxy:
        http = HttpClient(concurrency=1, retries=RetryPolicy(attempts=1), environ={"HTTP_PROXY": proxy.url})
        done = GitHub(github.url, "pat", http).upsert(REPO, 1, marker("k") + "\nvia proxy", "k")
        http.close()
    assert done.action == "created" and len(github.comments_on(REPO, 1)) == 1
    methods = [method for method, _, _ in proxy.seen]
    assert methods == ["POST", "GET", "POST"]  # GraphQL viewer, the listing (once), the comment
    assert all(target.startswith(github.url) for _, target, _ in proxy.seen)


def test_a_dropped_graphql_query_is_asked_again(github: FakeGitHub) -> None:
    """Asking who we are changes nothing, so it is retried like a read (a POST to /comments is not)."""
    clock = Clock()
    github.fail_next("POST", "/graphql", DROP)
    github.fail_next("POST", "/graphql", 502)
    assert client(github, "app", clock).login() == BOT and clock.waits == [1.0, 2.0]


def failed_weather_run(tmp_path: Path, item: str) -> None:
    """`results.json` in tmp_path: the run of one recorded item (YAML flow mapping) that fails its gate."""
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\nname: weather\ntarget: {type: recorded}\ngates: [{type: includes, value: sunny}]\n"
        f"data: [{item}]\n")
    ran = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "-o", "results.json"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 1, ran.stderr


def test_comment_command_renders_a_forks_results_as_escaped_text(github: FakeGitHub, tmp_path: Path) -> None:
    """The fork pattern's safe half: a fork wrote the results, evalgate writes the comment."""
    failed_weather_run(tmp_path,
                       "{id: '@org/security-team <img src=x>', input: q, output: '<details open> @octocat #1 rain'}")
    posted = comment_cli(github, "--results", str(tmp_path / "results.json"), "--pr", "1", "--key", "weather")
    assert posted.returncode == 0, posted.stderr
    [comment] = github.comments_on(REPO, 1)
    body = comment["body"]
    assert body.startswith(marker("weather") + "\n") and "1 items" in body
    assert "@org" not in body and "@octocat" not in body and "<img" not in body and "<details open>" not in body
    assert "@&#8203;org/security-team" in body


def test_comment_command_breaks_mentions_in_a_body_file_and_needs_one_source(github: FakeGitHub,
                                                                             tmp_path: Path) -> None:
    body = tmp_path / "comment.md"
    body.write_text("hello @octocat and @org/security-team, see #12")
    assert comment_cli(github, "--body-file", str(body), "--pr", "1").returncode == 0
    [comment] = github.comments_on(REPO, 1)
    assert "@octocat" not in comment["body"] and "@&#8203;octocat" in comment["body"] and "#12" not in comment["body"]
    for args in ((), ("--body-file", str(body), "--results", str(body))):
        refused = comment_cli(github, *args, "--pr", "1")
        assert refused.returncode == 2 and "one of --results" in refused.stderr
    junk = comment_cli(github, "--results", str(body), "--pr", "1", "--key", "k")
    assert junk.returncode == 2 and "not an evalgate results file" in junk.stderr


# ---- redirects: a renamed or transferred repository ----


def test_a_renamed_repository_keeps_its_one_comment_through_301_and_307(github: FakeGitHub) -> None:
    """GitHub answers the old name 301 on GET and 307 on PATCH: followed on the API's origin, the
    comment on page 2 is found and updated in place, never posted a second time."""
    for n in range(150):
        github.add_comment(REPO, 1, "reviewer", f"c{n}")
    ours = github.add_comment(REPO, 1, BOT, marker("k") + "\nold")
    github.rename(REPO, "octo/renamed", repo_id=77)
    done = client(github).upsert(REPO, 1, marker("k") + "\nnew", "k")
    assert done.action == "updated" and ours["body"] == marker("k") + "\nnew"
    assert len(github.comments_on("octo/renamed", 1)) == 151
    paths = [(r.method, r.path) for r in github.requests() if r.method != "POST"]
    assert paths[:2] == [("GET", f"/repos/{REPO}/issues/1/comments"), ("GET", "/repositories/77/issues/1/comments")]
    patches = github.requests("PATCH")
    assert [r.path for r in patches] == [f"/repos/{REPO}/issues/comments/{ours['id']}",
                                         f"/repositories/77/issues/comments/{ours['id']}"]
    assert all(r.body == {"body": marker("k") + "\nnew"} for r in patches)  # 307: method and body kept
    assert {r.authorization for r in github.requests()} == {"Bearer app"}


def test_a_renamed_repository_gets_its_first_comment_through_a_307_post(github: FakeGitHub) -> None:
    github.rename(REPO, "octo/renamed")
    first = client(github).upsert(REPO, 1, marker("k") + "\none", "k")
    second = client(github).upsert(REPO, 1, marker("k") + "\ntwo", "k")
    assert (first.action, second.action) == ("created", "updated") and first.url == second.url
    [comment] = github.comments_on("octo/renamed", 1)
    assert comment["body"] == marker("k") + "\ntwo"
    assert [r.path for r in github.requests("POST") if r.path != "/graphql"] == [
        f"/repos/{REPO}/issues/1/comments", "/repositories/4242/issues/1/comments"]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_redirect_to_another_origin_never_takes_the_token_there(github: FakeGitHub, method: str) -> None:
    """Another port on the same host is another origin: refused, naming it; the other server hears nothing."""
    github.add_token("ghp_secret_token", "alice")
    with FakeGitHub() as other:
        other.add_token("ghp_secret_token", "alice")
        other.add_pull(REPO, 1)
        github.redirect_next(method, r"/issues/1/comments$", 307, other.url + "{path}?t=ghp_secret_token")
        with pytest.raises(CommentError) as caught:
            client(github, "ghp_secret_token").upsert(REPO, 1, marker("k") + "\nbody", "k")
        assert other.requests() == [] and other.comments_on(REPO, 1) == []
    message = str(caught.value)
    assert caught.value.status == 307 and f"another origin, {other.url}" in message
    assert "ghp_secret_token" not in message and "?t=" not in message
    assert github.comments_on(REPO, 1) == []


def test_a_redirect_to_another_host_name_on_the_same_port_is_refused(github: FakeGitHub) -> None:
    port = github.url.rsplit(":", 1)[1]
    github.redirect_next("GET", r"/comments$", 301, f"http://localhost:{port}" + "{path}")
    with pytest.raises(CommentError) as caught:
        client(github).find(REPO, 1, BOT, "k")
    assert f"http://localhost:{port}" in str(caught.value)
    assert len(github.requests("GET")) == 1  # nothing reached `localhost`, the same server under another name


def test_a_redirect_loop_and_an_endless_chain_end_with_a_clear_error(github: FakeGitHub) -> None:
    """A loop is seen when it comes back to an address already asked, before asking it again; a chain of
    distinct hops ends after five. Either is an error saying so, never a hang or a second comment."""
    github.redirect_next("GET", r"/issues/1/comments$", 302, "{url}/repos/octo/agent/issues/2/comments?{query}",
                         times=100)
    github.redirect_next("GET", r"/issues/2/comments$", 302, "{url}/repos/octo/agent/issues/1/comments?{query}",
                         times=100)
    with pytest.raises(CommentError) as caught:
        client(github).find(REPO, 1, BOT, "k")
    assert caught.value.status == 302 and "redirect loop" in str(caught.value)
    assert [r.path for r in github.requests("GET")] == [f"/repos/{REPO}/issues/1/comments",
                                                        f"/repos/{REPO}/issues/2/comments"]
    github.state.redirects.clear()
    github.state.log.clear()
    github.redirect_next("PATCH", r"/comments/\d+$", 308, "{url}{path}?hop={hop}", times=100)
    ours = github.add_comment(REPO, 1, BOT, marker("k") + "\nold")
    with pytest.raises(CommentError) as caught:
        client(github).upsert(REPO, 1, marker("k") + "\nnew", "k")
    assert "more than 5 redirects" in str(caught.value)
    assert len(github.requests("PATCH")) == 6 and ours["body"] == marker("k") + "\nold"
    assert github.requests("POST")[-1].path == "/graphql"  # a refused redirect is no reason to post anew


@pytest.mark.parametrize("location", ["\x1b]0;pwned\x07/x", "http://a b/", "/" + "x" * 5000, "\\\\evil.invalid/x", ""],
                         ids=["control-characters", "space", "too-long", "backslashes", "empty"])
def test_a_hostile_location_is_refused_and_never_echoed(github: FakeGitHub, location: str) -> None:
    github.redirect_next("GET", r"/comments$", 302, location.replace("{", "{{").replace("}", "}}"))
    with pytest.raises(CommentError) as caught:
        client(github).find(REPO, 1, BOT, "k")
    message = str(caught.value)
    assert "redirect" in message and caught.value.status == 302
    assert "\x1b" not in message and "pwned" not in message and "xxxxx" not in message and len(message) < 400
    assert len(github.requests("GET")) == 1


class Stub:
    """An HttpClient that answers every request with one redirect, for an https API the fake cannot be."""

    def __init__(self, status: int, location: str) -> None:
        self.status, self.location = status, location
        self.sent: list[tuple[str, str]] = []

    def add_secrets(self, secrets: object) -> None:
        pass

    def exchange(self, method: str, url: str, **_: object) -> Exchange:
        self.sent.append((method, url))
        return Exchange(self.status, {"Location": self.location}, "{}", url)


def test_a_downgrade_from_https_to_http_is_refused() -> None:
    stub = Stub(301, "http://api.github.com/repositories/1/issues/1/comments")
    github = GitHub("https://api.github.com", "tok", stub, author="alice")  # type: ignore[arg-type]
    with pytest.raises(CommentError) as caught:
        github.find(REPO, 1, "alice", "k")
    assert "https to http" in str(caught.value) and len(stub.sent) == 1


def test_a_same_origin_redirect_keeps_the_default_port_and_follows_it() -> None:
    stub = Stub(308, "https://API.github.com:443/repositories/1/pulls/1")
    github = GitHub("https://api.github.com", "tok", stub, author="alice")  # type: ignore[arg-type]
    with pytest.raises(CommentError):  # the stub redirects forever: a loop, after one hop
        github.pull_head_sha(REPO, 1)
    assert stub.sent == [("GET", f"https://api.github.com/repos/{REPO}/pulls/1"),
                         ("GET", "https://API.github.com:443/repositories/1/pulls/1")]


def test_the_artifact_storage_redirect_is_still_fetched_without_the_token(github: FakeGitHub) -> None:
    """The artifact zip's 302 to storage is another origin on purpose: handed back, fetched without the
    token; a renamed repository's 301 before it is followed."""
    from evalgate.github.artifacts import download

    github.add_run(REPO, 5, workflow_id=1, branch="main")
    artifact = github.add_artifact(REPO, 5, "evalgate-results", b"zip bytes")
    github.rename(REPO, "octo/renamed")
    assert download(client(github), REPO, artifact) == b"zip bytes"
    assert github.state.blob_auth == [""]


def test_comment_command_follows_a_rename_and_exits_1_on_a_refused_redirect(github: FakeGitHub,
                                                                          tmp_path: Path) -> None:
    body = tmp_path / "comment.md"
    body.write_text(marker("weather") + "\n## report")
    github.rename(REPO, "octo/renamed")
    assert comment_cli(github, "--body-file", str(body), "--pr", "1").returncode == 0
    assert len(github.comments_on("octo/renamed", 1)) == 1
    github.redirect_next("GET", r"/comments$", 302, "http://evil.invalid:1/steal?pat")
    refused = comment_cli(github, "--body-file", str(body), "--pr", "1")
    assert refused.returncode == 1 and "another origin, http://evil.invalid:1" in refused.stderr
    assert "steal" not in refused.stderr and len(github.comments_on("octo/renamed", 1)) == 1


_LINK = r'<([^>]*)>\s*;\s*rel="?([^";,]+)"?'  # the regex link_targets replaced


@given(st.lists(st.sampled_from(["<", ">", ";", " ", "rel=", '"', "next", "last", ",", "x",
                                 "https://api.github.com/repos/o/r/issues/1/comments?page=2"]), max_size=24))
def test_link_targets_are_what_the_regex_finds(pieces: list[str]) -> None:
    import re

    header = "".join(pieces)
    assert link_targets(header) == re.findall(_LINK, header)


def test_a_hostile_link_header_is_read_in_linear_time() -> None:
    """64 KiB of `<` (the most a header line may hold) took the regex minutes; a subprocess with a
    deadline, so a regression fails instead of hanging."""
    code = "from evalgate.github.comments import link_targets; link_targets('<' * 65536 + '>' + '<' * 65536)"
    done = subprocess.run([sys.executable, "-c", code], timeout=20, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_two_jobs_that_list_at_once_leave_one_comment_after_the_next_update(github: FakeGitHub) -> None:
    # Two pushes (or a re-run) on one PR: both jobs list before either posts, find nothing, and both
    # post. Each step lists once, so both stay until the next update keeps the oldest and deletes the other.
    from concurrent.futures import ThreadPoolExecutor

    github.together_next("GET", r"/issues/1/comments$", parties=2)
    bodies = [marker("k") + "\nfrom job A", marker("k") + "\nfrom job B"]
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda body: client(github).upsert(REPO, 1, body, "k"), bodies))
    assert [d.action for d in done] == ["created", "created"]  # the race did happen: both posted
    oldest = min(c["id"] for c in github.comments_on(REPO, 1))
    later = client(github).upsert(REPO, 1, marker("k") + "\nnext push", "k")
    assert later.action == "updated" and later.id == oldest and later.removed == 1
    assert [c["body"] for c in github.comments_on(REPO, 1)] == [marker("k") + "\nnext push"]
    assert len([r for r in github.requests("GET") if r.path.endswith("/comments")]) == 3  # once per step


def test_duplicates_from_an_earlier_race_are_deleted_on_the_next_update(github: FakeGitHub) -> None:
    oldest = github.add_comment(REPO, 1, BOT, marker("k") + "\nfirst")
    github.add_comment(REPO, 1, "reviewer", "looks good")
    github.add_comment(REPO, 1, BOT, marker("k") + "\nsecond")
    github.add_comment(REPO, 1, BOT, marker("k") + "\nthird")
    github.add_comment(REPO, 1, "mallory", marker("k") + "\nnot ours")
    done = client(github).upsert(REPO, 1, marker("k") + "\nnew", "k")
    assert done.action == "updated" and done.url == oldest["html_url"] and done.removed == 2
    assert str(done) == f"updated: {oldest['html_url']} (2 duplicates deleted)"
    assert [c["body"] for c in github.comments_on(REPO, 1)] == [marker("k") + "\nnew", "looks good",
                                                                 marker("k") + "\nnot ours"]


def test_a_refused_delete_leaves_the_duplicate_and_still_updates(github: FakeGitHub) -> None:
    oldest = github.add_comment(REPO, 1, BOT, marker("k") + "\nfirst")
    github.add_comment(REPO, 1, BOT, marker("k") + "\nsecond")
    github.fail_next("DELETE", r"/issues/comments/\d+$", 403, message="Resource not accessible by integration")
    done = client(github).upsert(REPO, 1, marker("k") + "\nnew", "k")
    assert done.action == "updated" and done.url == oldest["html_url"] and done.removed == 0
    assert [c["body"] for c in github.comments_on(REPO, 1)] == [marker("k") + "\nnew", marker("k") + "\nsecond"]


def test_a_forks_results_cannot_plant_another_jobs_marker_through_a_summary_field(github: FakeGitHub,
                                                                                   tmp_path: Path) -> None:
    """The budget counts and the comparison's correction were written into the comment as they stood:
    a fork's results file put `nightly`'s marker on a line of the comment posted with the repository's
    token, and the nightly job then took that comment for its own and overwrote it."""
    failed_weather_run(tmp_path, "{id: a, input: q, output: rain}")
    evil = f"1\n\n{marker('nightly')}\n\n<img src=https://evil.example/p.png> @octocat"
    forged = json.loads((tmp_path / "results.json").read_text())
    forged["summary"]["budget"] = {"max_usd": 0.01, "max_tokens": evil, "items_not_run": 3, "spent_usd": 0.02,
                                   "spent_tokens": evil}  # a count that is text leaves the whole line out
    forged["comparison"] = {"settings": {"correction": evil}, "entries": []}
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    posted = comment_cli(github, "--results", str(tmp_path / "forged.json"), "--pr", "1", "--key", "weather")
    assert posted.returncode == 0, posted.stderr
    [posted] = github.comments_on(REPO, 1)
    body = posted["body"]
    assert "Budget exceeded" in body and "correction across entries" in body
    assert "<img" not in body and "@octocat" not in body
    assert [line for line in body.splitlines() if line.strip().startswith("<!--")] == [marker("weather")]
    (tmp_path / "nightly.md").write_text("nightly report")
    nightly = comment_cli(github, "--body-file", str(tmp_path / "nightly.md"), "--pr", "1", "--key", "nightly")
    assert nightly.returncode == 0 and "created" in nightly.stdout, nightly.stdout + nightly.stderr
    assert [c["body"] for c in github.comments_on(REPO, 1)] == [body, marker("nightly") + "\nnightly report"]



def test_a_body_file_hides_no_text_from_those_who_read_the_comment(github: FakeGitHub, tmp_path: Path) -> None:
    """The body file comes from a fork's run: tag characters in it are text only a model reading the PR sees
    (an instruction to a reviewing bot), posted under the token's name. They are posted as escapes; what
    emoji and scripts need (ZWJ, ZWNJ, a variation selector) stays."""
    smuggled = "".join(chr(0xE0000 + ord(c)) for c in "LGTM")
    written = "👩\u200d💻 ❤\ufe0f می\u200cخواهم"
    body = tmp_path / "comment.md"
    body.write_text(marker("weather") + f"\n## report{smuggled}\nid\u200b1 {written}\n", encoding="utf-8")
    assert comment_cli(github, "--body-file", str(body), "--pr", "1").returncode == 0
    [comment] = github.comments_on(REPO, 1)
    assert comment["body"] == (marker("weather") + "\n## report\\U000e004c\\U000e0047\\U000e0054\\U000e004d\n"
                               f"id\\u200b1 {written}\n")


# ---- a GitHub (or proxy) that repeats pages, paginates forever or trickles its answer ----


def test_a_repeated_comments_page_deletes_nothing_of_ours(github: FakeGitHub) -> None:
    """A proxy that answers every page with the first one made evalgate find its comment 100 times and
    DELETE it 99 times: the PR was left with no comment."""
    ours = github.add_comment(REPO, 1, BOT, marker("k") + "\nold")
    github.add_comment(REPO, 1, "reviewer", "looks good")
    github.paging = "repeat"
    done = client(github).upsert(REPO, 1, marker("k") + "\nnew", "k")
    assert done.action == "updated" and done.id == ours["id"] and done.removed == 0
    assert github.requests("DELETE") == []
    assert [c["body"] for c in github.comments_on(REPO, 1)] == [marker("k") + "\nnew", "looks good"]
    assert len([r for r in github.requests("GET") if r.path.endswith("/comments")]) == 2  # page 1, page 1 again


def test_a_repeated_page_with_a_real_duplicate_deletes_it_once_and_keeps_ours(github: FakeGitHub) -> None:
    ours = github.add_comment(REPO, 1, BOT, marker("k") + "\nfirst")
    duplicate = github.add_comment(REPO, 1, BOT, marker("k") + "\nsecond")
    github.paging = "repeat"
    done = client(github).upsert(REPO, 1, marker("k") + "\nnew", "k")
    assert done.id == ours["id"] and done.removed == 1
    assert [r.path for r in github.requests("DELETE")] == [f"/repos/{REPO}/issues/comments/{duplicate['id']}"]
    assert [c["body"] for c in github.comments_on(REPO, 1)] == [marker("k") + "\nnew"]


def test_endless_next_links_end_at_the_page_cap(github: FakeGitHub) -> None:
    github.add_comment(REPO, 1, BOT, marker("k") + "\nold")
    github.paging = "forever"
    http = HttpClient(concurrency=1, retries=RetryPolicy(attempts=1), timeout_s=10.0, environ={})
    capped = GitHub(github.url, "app", http, sleep=Clock().sleep, max_pages=7)
    done = capped.upsert(REPO, 1, marker("k") + "\nnew", "k")
    assert done.action == "updated" and github.requests("DELETE") == []
    assert len([r for r in github.requests("GET") if r.path.endswith("/comments")]) == 7


def test_endless_next_links_end_at_the_steps_deadline(github: FakeGitHub) -> None:
    """Endless `next` links, each page slow to come (but within any per-request timeout): the default page
    cap would allow 100 pages; the step's deadline ends it first, with an error that names it."""
    github.paging = "forever"
    for _ in range(100):
        github.trickle_next("GET", r"/issues/1/comments$", 0.0005)  # about 0.2 s a page
    http = HttpClient(concurrency=1, retries=RetryPolicy(attempts=1), timeout_s=10.0, environ={})
    started = time.monotonic()
    with pytest.raises(CommentError) as caught:
        GitHub(github.url, "app", http, sleep=Clock().sleep, deadline_s=1.0).upsert(REPO, 1, "x", "k")
    assert time.monotonic() - started < 5 and "deadline" in str(caught.value) and "github-timeout" in str(caught.value)


def test_a_trickled_answer_cannot_hold_the_step_past_its_deadline(github: FakeGitHub) -> None:
    """A reply written a byte a second: each read succeeds, no socket timeout fires; the step's deadline does."""
    github.trickle_next("POST", r"/graphql$", 0.5)
    http = HttpClient(concurrency=1, retries=RetryPolicy(attempts=1), timeout_s=30.0, environ={})
    started = time.monotonic()
    with pytest.raises(CommentError) as caught:
        GitHub(github.url, "app", http, sleep=time.sleep, deadline_s=2.0).upsert(REPO, 1, marker("k") + "\nx", "k")
    elapsed = time.monotonic() - started
    assert elapsed < 6, elapsed
    assert "GraphQL" in str(caught.value) or "deadline" in str(caught.value), caught.value
    assert github.comments_on(REPO, 1) == []


def test_a_shorter_body_after_a_422_uses_the_one_listing(github: FakeGitHub) -> None:
    ours = github.add_comment(REPO, 1, BOT, marker("k") + "\nold")
    github.fail_next("PATCH", r"/issues/comments/\d+$", 422, message="Validation Failed")
    gh = client(github)
    with pytest.raises(CommentError) as caught:
        gh.upsert(REPO, 1, marker("k") + "\nlong", "k")
    assert caught.value.too_long
    assert gh.upsert(REPO, 1, marker("k") + "\nshort", "k").id == ours["id"]
    assert len([r for r in github.requests("GET") if r.path.endswith("/comments")]) == 1


def test_the_action_input_github_timeout_is_read_and_checked() -> None:
    from evalgate.github.settings import Settings, SettingsError

    base = {"GITHUB_WORKSPACE": os.getcwd()}
    assert Settings.from_env(base).github_timeout_s == 120.0
    assert Settings.from_env({**base, "INPUT_GITHUB-TIMEOUT": "45"}).github_timeout_s == 45.0
    for bad in ("0", "-1", "soon", "nan", "1e9"):
        with pytest.raises(SettingsError, match="github-timeout"):
            Settings.from_env({**base, "INPUT_GITHUB-TIMEOUT": bad})


# ---- a fork's results never choose the comment they overwrite ----


def test_a_forks_results_cannot_choose_which_sticky_comment_they_overwrite(github: FakeGitHub,
                                                                          tmp_path: Path) -> None:
    """`comment --results` took its key from the results' `name`, which the fork writes: a fork named its run
    `nightly` and overwrote the nightly job's verdict. The key comes from the job posting it."""
    nightly = github.add_comment(REPO, 1, "alice", marker("nightly") + "\nnightly: passed")
    failed_weather_run(tmp_path, "{id: a, input: q, output: rain}")
    forged = json.loads((tmp_path / "results.json").read_text())
    forged["name"] = "nightly"
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    refused = comment_cli(github, "--results", str(tmp_path / "forged.json"), "--pr", "1")
    assert refused.returncode == 2 and "--key" in refused.stderr, refused.stderr
    derived = comment_cli(github, "--results", str(tmp_path / "forged.json"), "--pr", "1",
                          GITHUB_WORKFLOW="evals comment", GITHUB_JOB="comment")
    assert derived.returncode == 0, derived.stderr
    given = comment_cli(github, "--results", str(tmp_path / "forged.json"), "--pr", "1", "--key", "evals")
    assert given.returncode == 0, given.stderr
    bodies = {c["id"]: c["body"] for c in github.comments_on(REPO, 1)}
    assert bodies[nightly["id"]] == marker("nightly") + "\nnightly: passed"  # untouched
    assert sorted(b.splitlines()[0] for b in bodies.values()) == sorted(
        [marker("nightly"), marker("evals comment/comment"), marker("evals")])


def test_the_fork_example_workflow_passes_the_key() -> None:
    workflow = (Path(__file__).resolve().parent.parent / "examples/workflows/evalgate-fork-comment.yml").read_text()
    command = workflow[workflow.index("evalgate comment --results"):]
    assert "--results" in command and "--key" in command.split("\n\n")[0]
