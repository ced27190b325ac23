"""evalgate.infra.net against real servers on 127.0.0.1: proxies from the environment, TLS with a test CA,
Retry-After, and secrets that never leave (redaction before cutting, line breaks in header values)."""

from __future__ import annotations

import base64
import email.utils
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_agent import FakeServer
from fake_proxy import FakeProxy
from tls_ca import TestCA

from evalgate.infra.net import (
    WATCHDOG,
    HttpClient,
    HttpError,
    RetryPolicy,
    TlsOptions,
    bypasses_proxy,
    proxy_for,
)

FAST = RetryPolicy(attempts=3, backoff_s=0.01, max_backoff_s=0.05)
SECRET = "sk-evalgate-test-9f8e7d6c5b4a"


class TlsServer(FakeServer):
    """The fake agent over HTTPS with a certificate from the test CA; optionally asks for a client's."""

    def __init__(self, ca: TestCA, *, client_ca: bool = False) -> None:
        super().__init__()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(ca.server_file)
        if client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(ca.ca_file)
        self.socket = context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # refused handshakes are what some tests are about


@pytest.fixture
def proxy() -> Iterator[FakeProxy]:
    with FakeProxy() as fake:
        yield fake


@pytest.fixture
def tls_server(ca: TestCA) -> Iterator[TlsServer]:
    with TlsServer(ca) as srv:
        yield srv


def client(environ: dict[str, str] | None = None, **kwargs: object) -> HttpClient:
    options: dict = {"concurrency": 2, "retries": FAST, "timeout_s": 5.0, "environ": environ or {}, **kwargs}
    return HttpClient(**options)


# ---- proxies ----


def test_http_proxy_carries_plain_http_requests(server: FakeServer, proxy: FakeProxy) -> None:
    http = client({"HTTP_PROXY": proxy.url})
    for n in range(3):
        assert http.post_json(server.url + "/agent", {"input": f"via proxy {n}"}).body["output"]["text"]
    http.close()
    assert proxy.count("POST") == 3 and server.count == 3
    assert all(target.startswith(server.url + "/agent") for _, target, _ in proxy.seen)


def test_https_proxy_tunnels_tls_with_connect(tls_server: TlsServer, proxy: FakeProxy, ca: TestCA) -> None:
    http = client({"HTTPS_PROXY": proxy.url}, tls=TlsOptions(ca_bundle=str(ca.ca_file)))
    for n in range(3):
        assert http.post_json(tls_server.url + "/agent", {"input": f"tunnel {n}"}).status == 200
    http.close()
    host_port = tls_server.url.removeprefix("https://")
    assert proxy.seen[0][:2] == ("CONNECT", host_port)  # the proxy sees where, never what
    assert proxy.count("CONNECT") == 1 and proxy.count("POST") == 0  # one tunnel, kept alive
    assert tls_server.count == 3


@pytest.mark.parametrize("environ_for", [
    lambda proxy: {"HTTP_PROXY": proxy, "NO_PROXY": "127.0.0.1"},
    lambda proxy: {"http_proxy": proxy, "no_proxy": "localhost,127.0.0.0/8"},  # an IP network
    lambda proxy: {"ALL_PROXY": proxy, "NO_PROXY": "*"},
    lambda proxy: {"HTTPS_PROXY": proxy},  # a plain-http URL does not use the https proxy
])
def test_no_proxy_and_the_scheme_decide_what_bypasses_the_proxy(server: FakeServer, proxy: FakeProxy,
                                                                  environ_for: object) -> None:
    http = client(environ_for(proxy.url))  # type: ignore[operator]
    assert http.post_json(server.url + "/agent", {"input": "direct"}).status == 200
    assert proxy.count() == 0 and server.count == 1


def test_lowercase_proxy_variables_and_all_proxy_are_used(server: FakeServer, proxy: FakeProxy) -> None:
    for environ in ({"http_proxy": proxy.url}, {"ALL_PROXY": proxy.url}, {"HTTP_PROXY": proxy.url.removeprefix("http://")}):
        assert client(environ).post_json(server.url + "/agent", {"input": "x"}).status == 200
    assert proxy.count("POST") == 3


def test_proxy_credentials_are_sent_and_never_shown(server: FakeServer, proxy: FakeProxy) -> None:
    password = "pr0xy-p@ss-secret"
    proxy.require_auth = "Basic " + base64.b64encode(f"ci:{password}".encode()).decode()
    quoted = password.replace("@", "%40")
    assert client({"HTTP_PROXY": f"http://ci:{quoted}@127.0.0.1:{proxy.server_address[1]}"}).post_json(
        server.url + "/agent", {"input": "x"}).status == 200
    wrong = f"http://ci:wrong-{quoted}@127.0.0.1:{proxy.server_address[1]}"
    with pytest.raises(HttpError) as caught:
        client({"HTTP_PROXY": wrong}).post_json(server.url + "/agent", {"input": "y"})
    assert caught.value.status == 407 and "wrong-" not in str(caught.value) and password not in str(caught.value)


def test_a_dead_proxy_is_a_clear_error(server: FakeServer) -> None:
    with FakeProxy() as dead:
        url = dead.url
    with pytest.raises(HttpError) as caught:
        client({"HTTPS_PROXY": url}).post_json(server.url.replace("http://", "https://") + "/agent", {"input": "x"})
    assert f"connection refused at the proxy {url}" in str(caught.value) and server.count == 0


def test_proxy_choice_follows_curl_and_requests() -> None:
    env = {"HTTPS_PROXY": "http://corp:3128", "HTTP_PROXY": "http://plain:3128",
           "NO_PROXY": ".internal.example, 10.0.0.0/8,api.example:8443"}
    assert proxy_for("https", "api.openai.com", 443, env) == "http://corp:3128"
    assert proxy_for("http", "agent", 80, env) == "http://plain:3128"
    assert proxy_for("https", "llm.internal.example", 443, env) is None
    assert proxy_for("https", "internal.example", 443, env) is None
    assert proxy_for("http", "10.1.2.3", 8080, env) is None
    assert proxy_for("https", "api.example", 8443, env) is None
    assert proxy_for("https", "api.example", 443, env) == "http://corp:3128"
    assert proxy_for("https", "x", 443, {"https_proxy": "http://low", "HTTPS_PROXY": "http://up"}) == "http://low"
    assert proxy_for("http", "x", 80, {"HTTP_PROXY": "http://p", "REQUEST_METHOD": "GET"}) is None  # httpoxy
    assert not bypasses_proxy("example.com", 443, "")


# ---- TLS ----


def test_tls_with_an_unknown_ca_is_refused_without_retrying(tls_server: TlsServer) -> None:
    with pytest.raises(HttpError) as caught:
        client().post_json(tls_server.url + "/agent", {"input": "x"})
    message = str(caught.value)
    assert "not trusted" in message and "ca_bundle" in message and caught.value.attempts == 1
    assert tls_server.count == 0


def test_an_untrusted_certificate_is_an_http_error_for_exchange_and_download_too(tls_server: TlsServer) -> None:
    # The GitHub client's calls: a bare internal exception used to escape them (a crash, not a message).
    http = client()
    with pytest.raises(HttpError, match="not trusted"):
        http.exchange("GET", tls_server.url + "/agent")
    with pytest.raises(HttpError, match="not trusted"):
        http.download(tls_server.url + "/artifact.zip", max_bytes=1024)


@pytest.mark.parametrize("how", ["setting", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE"])
def test_a_ca_bundle_makes_the_private_ca_trusted(tls_server: TlsServer, ca: TestCA, how: str) -> None:
    http = client(tls=TlsOptions(ca_bundle=str(ca.ca_file))) if how == "setting" else client({how: str(ca.ca_file)})
    reply = http.post_json(tls_server.url + "/agent", {"input": "secure"})
    assert reply.status == 200 and reply.body["output"]["text"] == "You said: secure"


def test_the_ca_setting_wins_over_the_environment(tls_server: TlsServer, ca: TestCA, tmp_path: Path) -> None:
    other = TestCA(tmp_path)
    http = client({"REQUESTS_CA_BUNDLE": str(other.ca_file)}, tls=TlsOptions(ca_bundle=str(ca.ca_file)))
    assert http.post_json(tls_server.url + "/agent", {"input": "x"}).status == 200
    with pytest.raises(HttpError):
        client({"REQUESTS_CA_BUNDLE": str(other.ca_file)}).post_json(tls_server.url + "/agent", {"input": "x"})


def test_a_client_certificate_is_presented_when_configured(ca: TestCA) -> None:
    with TlsServer(ca, client_ca=True) as srv:
        with pytest.raises(HttpError):
            client(tls=TlsOptions(ca_bundle=str(ca.ca_file))).post_json(srv.url + "/agent", {"input": "x"})
        assert srv.count == 0
        tls = TlsOptions(ca_bundle=str(ca.ca_file), client_cert=str(ca.client_file),
                         client_key=str(ca.client_key_file))
        assert client(tls=tls).post_json(srv.url + "/agent", {"input": "mtls"}).status == 200


def test_an_unreadable_ca_bundle_is_an_error_naming_its_source(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="REQUESTS_CA_BUNDLE"):
        client({"REQUESTS_CA_BUNDLE": str(tmp_path / "missing.pem")})
    (tmp_path / "junk.pem").write_text("not a certificate")
    with pytest.raises(ValueError, match=r"tls\.ca_bundle"):
        client(tls=TlsOptions(ca_bundle=str(tmp_path / "junk.pem")))


def test_a_bundle_from_the_environment_is_parsed_for_https_only(server: FakeServer, tls_server: TlsServer,
                                                               tmp_path: Path) -> None:
    # Many machines export SSL_CERT_FILE: an http agent must not depend on (or pay for) parsing it.
    (tmp_path / "junk.pem").write_text("not a certificate")
    http = client({"SSL_CERT_FILE": str(tmp_path / "junk.pem")})
    assert http.post_json(server.url + "/agent", {"input": "plain"}).status == 200
    with pytest.raises(HttpError, match=r"SSL_CERT_FILE .*junk\.pem: not a readable PEM CA bundle"):
        http.post_json(tls_server.url + "/agent", {"input": "x"})
    assert tls_server.count == 0


# ---- Retry-After ----


class Waits:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.mark.parametrize(("header", "low", "high"), [
    ("0", 0.0, 0.01),  # retry now: only the (tiny) backoff
    ("1", 1.0, 1.0),
    ("2.5", 2.5, 2.5),  # longer than max_backoff_s: honoured anyway
])
def test_retry_after_is_honoured_beyond_the_backoff_cap(server: FakeServer, header: str, low: float,
                                                         high: float) -> None:
    waits = Waits()
    server.faults["busy"] = [f"429:{header}"]
    http = client(retries=RetryPolicy(attempts=3, backoff_s=0.01, max_backoff_s=0.5), sleep=waits)
    reply = http.post_json(server.url + "/agent", {"input": "busy"})
    assert reply.status == 200 and reply.attempts == 2
    [wait] = waits.waits
    assert low <= wait <= high


def test_retry_after_as_an_http_date(server: FakeServer) -> None:
    waits = Waits()
    server.faults["date"] = ["429:" + email.utils.formatdate(time.time() + 3, usegmt=True)]
    reply = client(sleep=waits).post_json(server.url + "/agent", {"input": "date"})
    assert reply.attempts == 2
    [wait] = waits.waits
    assert 1.0 <= wait <= 3.0  # the date has whole seconds


def test_retry_after_beyond_the_ceiling_errors_the_request_saying_so(server: FakeServer) -> None:
    waits = Waits()
    server.faults["later"] = ["429:120", "429:120"]
    with pytest.raises(HttpError) as caught:
        client(sleep=waits).post_json(server.url + "/agent", {"input": "later"})
    message = str(caught.value)
    assert "retry after 120s" in message and "max_retry_after_s (60s)" in message
    assert waits.waits == [] and server.requests_for("later") == 1
    patient = client(retries=RetryPolicy(attempts=2, max_retry_after_s=300), sleep=waits)
    assert patient.post_json(server.url + "/agent", {"input": "later"}).status == 200
    assert waits.waits == [120.0]


def test_a_real_one_second_retry_after_is_waited(server: FakeServer) -> None:
    server.faults["wait"] = ["503", "429:1"]
    started = time.monotonic()
    reply = client(retries=RetryPolicy(attempts=3, backoff_s=0.01, max_backoff_s=0.01)).post_json(
        server.url + "/agent", {"input": "wait"})
    assert reply.attempts == 3 and time.monotonic() - started >= 1.0


# ---- secrets ----


def test_a_secret_straddling_the_cut_of_an_error_body_is_redacted_first(server: FakeServer) -> None:
    server.faults["pad"] = ["401pad"]
    http = client(secrets=[SECRET])
    with pytest.raises(HttpError) as caught:
        http.post_json(server.url + "/agent", {"input": "pad"}, {"Authorization": f"Bearer {SECRET}"})
    shown = str(caught.value) + caught.value.body
    for cut in range(4, len(SECRET) + 1):
        assert SECRET[:cut] not in shown
    assert "Bearer" in shown  # the redacted echo is there, the key is not


@pytest.mark.parametrize("value", [SECRET + "\n", SECRET + "\r\n", "Bearer " + SECRET + "\nX-Evil: 1"])
def test_a_header_value_with_a_line_break_is_refused_without_echoing_it(server: FakeServer, value: str) -> None:
    with pytest.raises(HttpError) as caught:
        client().post_json(server.url + "/agent", {"input": "x"}, {"Authorization": value})
    assert "line break" in str(caught.value) and "Authorization" in str(caught.value)
    assert SECRET not in str(caught.value) and server.count == 0


def test_replies_echoing_a_secret_are_redacted_in_the_reply_and_the_cache(server: FakeServer, tmp_path: Path) -> None:
    from evalgate.infra.net import ResponseCache

    server.faults["leak"] = ["echo"]
    cache = ResponseCache(tmp_path / "cache")
    http = client(secrets=[SECRET], cache=cache)
    reply = http.post_json(server.url + "/agent", {"input": "leak"}, {"Authorization": f"Bearer {SECRET}"},
                           cache_key={"input": "leak"})
    assert "Bearer ***" in reply.body["output"]["text"] and SECRET not in reply.text
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert files and all(SECRET.encode() not in p.read_bytes() for p in files)


def test_a_spec_trusts_its_ca_bundle_relative_to_the_spec(tls_server: TlsServer, ca: TestCA, tmp_path: Path) -> None:
    from evalgate.api import run_spec

    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.pem").write_bytes(ca.ca_file.read_bytes())
    spec = tmp_path / "evalgate.yaml"
    base = ("version: 1\ndata:\n  - input: weather in Oslo\ntarget:\n  type: http\n"
            f"  url: {tls_server.url}/agent\n  response: {{text: output.text}}\n  retries: {{attempts: 1}}\n")
    gates = "gates:\n  - type: includes\n    value: Oslo\n"
    spec.write_text(base + "  tls: {ca_bundle: certs/ca.pem}\n" + gates)
    assert run_spec(spec).verdict == "passed"
    spec.write_text(base + gates)
    refused = run_spec(spec)
    assert refused.summary["failure_reason"] == "errors" and "not trusted" in refused.summary["top_error"]["message"]


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_not_followed_and_the_error_says_where_to(server: FakeServer, status: int) -> None:
    # Following it would re-send the POST (perhaps as a GET) with its API key, maybe to another host.
    server.redirect_to = "https://agent.example/v2/agent?key=sk-hidden-123"
    server.faults["x"] = [f"redirect:{status}"]
    http = client(secrets=["sk-hidden-123"])
    with pytest.raises(HttpError) as caught:
        http.post_json(server.url + "/agent", {"input": "x"})
    message = str(caught.value)
    assert f"HTTP {status}" in message and "redirects to https://agent.example/v2/agent?key=***" in message
    assert "put the final URL in the spec" in message and "sk-hidden" not in message
    assert server.requests_for("x") == 1 and caught.value.attempts == 1


# ---- replies too big to be answers ----


def test_a_gzip_reply_is_decoded(server: FakeServer) -> None:
    server.faults["Oslo"] = ["gzip"]
    reply = client().post_json(server.url + "/agent", {"input": "Oslo"})
    assert reply.body["output"]["text"] == "It is sunny in Oslo, 72F."


@pytest.mark.parametrize(("fault", "said"), [
    ("bomb", "decompresses to more than 32 MiB"),  # 64 KiB on the wire, 64 MiB inflated
    ("huge", "larger than 32 MiB"),
    ("brotli", "compressed with `br` (Content-Encoding), which evalgate does not decode"),
])
def test_a_runaway_reply_errors_without_being_read_whole_or_retried(server: FakeServer, fault: str, said: str) -> None:
    server.faults["x"] = [fault] * 3
    with pytest.raises(HttpError) as caught:
        client().post_json(server.url + "/agent", {"input": "x"})
    assert said in str(caught.value) and caught.value.attempts == 1
    server.faults["x"] = []
    assert client().post_json(server.url + "/agent", {"input": "x"}).body["output"]["text"] == "You said: x"


@pytest.mark.parametrize("fault", ["trickle", "trickle_unsized"])
def test_a_reply_that_trickles_in_forever_times_out_at_timeout_s(server: FakeServer, fault: str) -> None:
    # A byte every 0.1 s never trips a socket timeout: the attempt as a whole has to end. A body with no
    # length ends at the EOF the deadline's shutdown makes: a timeout all the same, not a reply cut short.
    server.faults["x"] = [fault] * 2
    started = time.monotonic()
    with pytest.raises(HttpError) as caught:
        client(timeout_s=0.5, retries=RetryPolicy(attempts=2, backoff_s=0.01)).post_json(server.url + "/agent",
                                                                                          {"input": "x"})
    assert time.monotonic() - started < 3.0
    assert "timed out after 0.5s" in str(caught.value) and caught.value.attempts == 2


@pytest.mark.parametrize("via_proxy", [False, True], ids=["direct", "forwarding-proxy"])
def test_a_head_that_trickles_in_forever_times_out_at_timeout_s(server: FakeServer, proxy: FakeProxy,
                                                                via_proxy: bool) -> None:
    # A byte of status line and headers every 0.1 s: each socket read waits well under timeout_s, and
    # http.client reads the head before any of our code runs; the server would go on for 10 s an attempt.
    server.faults["x"] = ["trickle_headers"] * 2
    http = client({"HTTP_PROXY": proxy.url} if via_proxy else {}, timeout_s=1.0,
                  retries=RetryPolicy(attempts=2, backoff_s=0.01))
    started = time.monotonic()
    with pytest.raises(HttpError) as caught:
        http.post_json(server.url + "/agent", {"input": "x"})
    assert time.monotonic() - started < 5.0
    assert "timed out after 1s" in str(caught.value) and caught.value.attempts == 2  # retried like any timeout
    assert server.requests_for("x") == 2 and proxy.count("POST") == (2 if via_proxy else 0)
    assert http.post_json(server.url + "/agent", {"input": "y"}).status == 200  # the client is fine after


@pytest.mark.parametrize("via_proxy", [False, True], ids=["direct", "connect-tunnel"])
def test_a_head_that_trickles_in_forever_over_tls_times_out_at_timeout_s(tls_server: TlsServer, proxy: FakeProxy,
                                                                         ca: TestCA, via_proxy: bool) -> None:
    tls_server.faults["x"] = ["trickle_headers"]
    http = client({"HTTPS_PROXY": proxy.url} if via_proxy else {}, timeout_s=1.0, retries=RetryPolicy(attempts=1),
                  tls=TlsOptions(ca_bundle=str(ca.ca_file)))
    started = time.monotonic()
    with pytest.raises(HttpError, match=r"timed out after 1s"):
        http.post_json(tls_server.url + "/agent", {"input": "x"})
    assert time.monotonic() - started < 5.0 and proxy.count("CONNECT") == (1 if via_proxy else 0)


def test_watched_requests_keep_their_connection_and_leave_nothing_watched(server: FakeServer) -> None:
    http = client()
    for n in range(5):
        assert http.post_json(server.url + "/agent", {"input": f"n{n}"}).status == 200
    assert server.connections == 1  # kept alive: the watch never costs the connection
    assert not WATCHDOG.in_flight()  # each exchange unwatched once its head came: no socket left to shut down
    server.faults["x"] = ["trickle_headers"]
    started = time.monotonic()
    with pytest.raises(HttpError, match="timed out"):
        client(timeout_s=0.5, retries=RetryPolicy(attempts=1)).post_json(server.url + "/agent", {"input": "x"})
    assert time.monotonic() - started < 3.0 and not WATCHDOG.in_flight()
    assert http.post_json(server.url + "/agent", {"input": "again"}).status == 200 and server.connections == 2


# ---- secrets in the URL ----


def test_a_urls_password_and_key_parameter_never_show_and_the_password_is_used(server: FakeServer,
                                                                               proxy: FakeProxy) -> None:
    url = server.url.replace("http://", "http://alice:pa%24%24word-9@") + "/agent?v=2&api_key=qk-77e1f0"
    basic = "Basic " + base64.b64encode(b"alice:pa$$word-9").decode()
    server.faults["x"] = ["500", "echo"]
    with pytest.raises(HttpError) as caught:
        client(retries=RetryPolicy(attempts=1)).post_json(url, {"input": "x"})
    assert str(caught.value).startswith(f"POST http://alice:***@127.0.0.1:{server.server_address[1]}/agent?v=2&api_key=***")
    assert server.requests[-1]["headers"]["Authorization"] == basic  # sent as curl and requests send it
    echoed = client().post_json(url, {"input": "x"})  # an agent echoing its Authorization header
    assert echoed.body["output"]["text"] == "I got *** and None"
    refused = url.replace(f":{server.server_address[1]}/", ":9/")
    with pytest.raises(HttpError) as caught:
        client(retries=RetryPolicy(attempts=1)).post_json(refused, {"input": "y"})
    assert "pa$$" not in str(caught.value) and "pa%24" not in str(caught.value) and "qk-77" not in str(caught.value)
    # Through a proxy: the absolute URL in the request line has no userinfo (proxies log request lines).
    assert client({"HTTP_PROXY": proxy.url}).post_json(url, {"input": "z"}).status == 200
    assert proxy.seen[-1][1] == f"{server.url}/agent?v=2&api_key=qk-77e1f0"
    assert server.requests[-1]["headers"]["Authorization"] == basic


def test_json_nested_past_the_recursion_limit_is_bad_json_not_a_crash(server: FakeServer) -> None:
    # A RecursionError is no ValueError: it went past every `except ValueError` meant for bad JSON.
    server.faults["x"] = ["deep"] * 2
    with pytest.raises(HttpError, match="the reply is JSON nested too deeply") as caught:
        client().post_json(server.url + "/agent", {"input": "x"})
    assert caught.value.attempts == 1
    with pytest.raises(ValueError, match="nested too deeply"):
        client().exchange("POST", server.url + "/agent", json_body={"input": "x"}).json()


def test_urllib3_still_makes_its_sockets_in_new_conn(server: FakeServer, ca: TestCA) -> None:
    """The one override of urllib3's private API (evalgate.infra.net: `HTTPConnection._new_conn`): the deadline on
    resolving and connecting, and the watchdog on the reply's head, hang on it. pyproject pins urllib3 below
    3; this fails on a urllib3 whose `connect()` makes its socket elsewhere, for http and https alike."""
    import urllib3

    from evalgate.infra.net import pool_classes

    assert urllib3.__version__.split(".")[0] == "2"
    classes = pool_classes()
    assert classes["http"].ConnectionCls("example.com.", 80).dns_name == "example.com."  # the resolver's name
    with TlsServer(ca) as tls_server:
        for scheme, port, extra in (("http", server.server_address[1], {}),
                                    ("https", tls_server.server_address[1], {"ca_certs": str(ca.ca_file)})):
            conn = classes[scheme].ConnectionCls("127.0.0.1", port, timeout=5, **extra)
            conn.connect()
            try:
                assert conn.watch_sock is not None, scheme  # made by our _new_conn, watched by the deadline
                conn.request("POST", "/agent", body=b'{"input": "hi"}', headers={"Content-Type": "application/json"})
                assert conn.getresponse().status == 200, scheme
            finally:
                conn.close()
