"""evalgate.infra.net: retries, Retry-After, the adaptive limit, keep-alive, redaction, against a real server."""

from __future__ import annotations

import random
import threading
import time

import pytest
from fake_agent import FakeServer

from evalgate.infra import redaction
from evalgate.infra.net import (
    AdaptiveLimiter,
    HttpClient,
    HttpError,
    RetryPolicy,
    expand_env,
    parse_retry_after,
    parse_ttl,
)

FAST = RetryPolicy(attempts=3, backoff_s=0.01, max_backoff_s=0.05)


def client(**kwargs: object) -> HttpClient:
    options: dict = {"concurrency": 4, "retries": FAST, "timeout_s": 2.0, **kwargs}
    return HttpClient(**options)


# ---- policy pieces ----


def test_backoff_doubles_with_jitter_and_respects_the_cap() -> None:
    policy = RetryPolicy(attempts=5, backoff_s=1.0, max_backoff_s=3.0)
    rng = random.Random(7)
    for retry, base in [(1, 1.0), (2, 2.0), (3, 3.0), (4, 3.0)]:
        delays = [policy.delay(retry, None, rng) for _ in range(200)]
        assert min(delays) >= base / 2 and max(delays) <= base
        assert max(delays) - min(delays) > base / 10  # jittered, not constant


def test_retry_after_is_a_floor_with_its_own_ceiling_not_the_backoff_cap() -> None:
    policy = RetryPolicy(attempts=3, backoff_s=0.01, max_backoff_s=0.5)
    assert policy.delay(1, 2.0) == 2.0  # longer than max_backoff_s: honoured all the same
    assert policy.delay(1, 60.0) == 60.0 and not policy.too_long(60.0)
    assert policy.too_long(60.5) and not policy.too_long(None)
    assert RetryPolicy(max_retry_after_s=120).too_long(120) is False


def test_parse_retry_after() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    # what Python's float() reads but HTTP's delay-seconds are not: the usual backoff, not a wait of "infs"
    for odd in ("inf", "Infinity", "nan", "1e400", "1_0", "-5", "+3", "\u0663"):
        assert parse_retry_after(odd) is None, odd
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == pytest.approx(10.0)


def test_parse_ttl() -> None:
    assert parse_ttl(None) is None
    assert parse_ttl(90) == 90.0
    assert parse_ttl("30m") == 1800.0
    assert parse_ttl("7d") == 7 * 86400.0
    with pytest.raises(ValueError):
        parse_ttl("soon")
    with pytest.raises(ValueError):
        parse_ttl(0)


def test_expand_env_reports_values_and_missing_names() -> None:
    text, used = expand_env("Bearer ${TOKEN}", {"TOKEN": "abc123"})
    assert text == "Bearer abc123" and used == ["abc123"]
    with pytest.raises(KeyError):
        expand_env("${NOPE}", {})


def test_redaction_hides_known_secrets() -> None:
    redaction.register(["hunter22", "ab"])  # values under 4 characters are too common to redact
    try:
        assert redaction.redact("x hunter22 y ab") == "x *** y ab"
    finally:
        redaction.forget_all()


def test_limiter_halves_once_per_window_and_recovers_additively() -> None:
    limiter = AdaptiveLimiter(8)
    tokens = [limiter.acquire() for _ in range(4)]
    for token in tokens:  # four 429s from requests in flight together: one decrease
        limiter.release(token, throttled=True)
    assert limiter.limit == 4 and limiter.decreases == 1
    token = limiter.acquire()
    limiter.release(token, throttled=True)  # a request started after the decrease: halves again
    assert limiter.limit == 2 and limiter.lowest == 2
    limiter.release(limiter.acquire(), ok=True)
    assert limiter.limit == 2  # +1/limit per success: about `limit` successes per extra slot
    for _ in range(2):
        limiter.release(limiter.acquire(), ok=True)
    assert limiter.limit == 3
    for _ in range(200):
        limiter.release(limiter.acquire(), ok=True)
    assert limiter.limit == 8  # never above the configured limit


def test_limiter_never_goes_below_one_and_blocks_when_full() -> None:
    limiter = AdaptiveLimiter(2)
    for _ in range(5):
        limiter.release(limiter.acquire(), throttled=True)
    assert limiter.limit == 1
    held = limiter.acquire()
    entered = threading.Event()

    def second() -> None:
        token = limiter.acquire()
        entered.set()
        limiter.release(token)

    thread = threading.Thread(target=second)
    thread.start()
    assert not entered.wait(0.1)  # the one slot is taken
    limiter.release(held)
    assert entered.wait(2.0)
    thread.join(2.0)


# ---- the client against a real server ----


def test_keep_alive_reuses_one_connection(server: FakeServer) -> None:
    http = client()
    for _ in range(20):
        assert http.post_json(server.url + "/agent", {"input": "hi"}).status == 200
    http.close()
    assert server.connections == 1


def test_a_kept_alive_connection_the_server_closed_is_replaced_before_sending(server: FakeServer) -> None:
    # The server closed the idle connection (its keep-alive timeout): the next request goes out on a
    # new one, neither failing nor counted as a retry.
    server.faults["x"] = ["close_after"]
    http = client()
    assert http.post_json(server.url + "/agent", {"input": "x"}).status == 200
    time.sleep(0.2)  # the server's FIN has arrived
    reply = http.post_json(server.url + "/agent", {"input": "y"})
    assert reply.status == 200 and reply.attempts == 1 and http.stats()["retries"] == 0
    assert server.connections == 2


def test_5xx_is_retried_until_it_succeeds(server: FakeServer) -> None:
    server.faults["flaky"] = ["500", "503"]
    http = client()
    reply = http.post_json(server.url + "/agent", {"input": "flaky"})
    assert reply.status == 200 and reply.attempts == 3
    assert reply.body["output"]["text"] == "You said: flaky"
    assert server.requests_for("flaky") == 3
    assert http.stats()["retries"] == 2


def test_retries_are_bounded_and_the_last_problem_is_reported(server: FakeServer) -> None:
    server.faults["down"] = ["500"] * 10
    http = client()
    with pytest.raises(HttpError) as caught:
        http.post_json(server.url + "/agent", {"input": "down"})
    assert caught.value.status == 500 and caught.value.attempts == 3
    assert "HTTP 500" in str(caught.value) and "after 3 attempts" in str(caught.value)
    assert server.requests_for("down") == 3


def test_4xx_other_than_408_and_429_is_not_retried(server: FakeServer) -> None:
    server.faults["bad"] = ["400"]
    with pytest.raises(HttpError) as caught:
        client().post_json(server.url + "/agent", {"input": "bad"})
    assert caught.value.status == 400 and caught.value.attempts == 1
    assert server.requests_for("bad") == 1


def test_429_honours_retry_after(server: FakeServer) -> None:
    server.faults["busy"] = ["429:0.3"]
    http = client(retries=RetryPolicy(attempts=3, backoff_s=0.01, max_backoff_s=5.0))
    started = time.monotonic()
    reply = http.post_json(server.url + "/agent", {"input": "busy"})
    waited = time.monotonic() - started
    assert reply.status == 200 and reply.attempts == 2
    assert 0.3 <= waited < 3.0
    assert http.stats()["rate_limited"] == 1


def test_a_retry_after_date_past_any_calendar_is_no_wait_and_the_429_is_retried(server: FakeServer) -> None:
    # the year overflowed the date parser (OverflowError): the request failed at once, retry-less,
    # with "Python int too large to convert to C long" as the item's error
    for when in ("1 Jan 99999999999999999999 00:00 GMT", "Sun, 06 Nov 1994 08:49:37 +99999999999999999999"):
        server.faults[when] = ["429:" + when]
        http = client(retries=RetryPolicy(attempts=2, backoff_s=0.01, max_backoff_s=0.01))
        reply = http.post_json(server.url + "/agent", {"input": when})
        assert reply.status == 200 and reply.attempts == 2
        assert http.stats()["rate_limited"] == 1
        assert parse_retry_after(when) is None


def test_a_hanging_reply_times_out_and_is_retried_a_bounded_number_of_times(server: FakeServer) -> None:
    server.faults["stuck"] = ["hang", "hang"]
    http = client(timeout_s=0.2, retries=RetryPolicy(attempts=2, backoff_s=0.01, max_backoff_s=0.01))
    started = time.monotonic()
    with pytest.raises(HttpError) as caught:
        http.post_json(server.url + "/agent", {"input": "stuck"})
    assert time.monotonic() - started < 2.0
    assert "timed out after 0.2s" in str(caught.value) and caught.value.status is None
    assert server.requests_for("stuck") == 2


def test_a_connection_reset_mid_response_is_retried(server: FakeServer) -> None:
    server.faults["cut"] = ["reset"]
    http = client()
    reply = http.post_json(server.url + "/agent", {"input": "cut"})
    assert reply.status == 200 and reply.attempts == 2
    assert http.stats()["retries"] == 1


def test_malformed_json_is_returned_not_retried(server: FakeServer) -> None:
    server.faults["junk"] = ["malformed"]
    reply = client().post_json(server.url + "/agent", {"input": "junk"})
    assert reply.status == 200 and not reply.is_json and reply.body is None
    assert server.requests_for("junk") == 1


def test_connection_refused_is_an_error_after_retries() -> None:
    with FakeServer() as srv:
        url = srv.url
    with pytest.raises(HttpError) as caught:
        client().post_json(url + "/agent", {"input": "x"})
    assert f"connection refused at {url}" in str(caught.value) and caught.value.attempts == 3


def test_error_messages_never_hold_a_secret(server: FakeServer) -> None:
    secret = "tok-very-secret-123"
    server.faults["leak"] = ["400echo"]
    http = client(secrets=[secret])
    with pytest.raises(HttpError) as caught:
        http.post_json(server.url + "/agent", {"input": "leak"}, {"Authorization": f"Bearer {secret}"})
    assert secret not in str(caught.value) and secret not in caught.value.body
    assert "***" in str(caught.value)


def test_redacting_before_cutting_shows_no_part_of_any_secret() -> None:
    """Each redaction shortens the text and pulls later text into view: a second copy cut by the
    window must not slide in partly."""
    secret = "sk-abcdefghijklmnop"
    redaction.register([secret])
    try:
        for head in range(0, 40):
            for gap in range(270, 300, 3):
                text = "x" * head + secret + "y" * gap + secret + "z" * 50
                shown = redaction.redact_window(text, 300)
                assert len(shown) <= 300
                assert not any(secret[:n] in shown for n in range(4, len(secret) + 1)), (head, gap)
    finally:
        redaction.forget_all()


def test_a_header_value_that_cannot_be_encoded_is_named_not_quoted() -> None:
    from evalgate.infra.net import header_problem

    problem = header_problem("Authorization", "Bearer tok-evalgate\u200b", "AGENT_TOKEN")
    assert problem is not None and "AGENT_TOKEN" in problem and "U+200B" in problem and "tok-" not in problem
    assert header_problem("Authorization", "Bearer fine", "AGENT_TOKEN") is None
