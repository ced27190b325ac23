"""The kept-alive connections to a direct origin (evalgate.infra.net's `OriginPool`), against real servers on
loopback: reused in turn, never sent on once the server closed them, never more than the concurrency, never
kept with a reply left unread, closed with the client; TLS verified on them as urllib3's pools verified it."""

from __future__ import annotations

import contextlib
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from fake_agent import FakeServer
from tls_ca import TestCA

from evalgate.infra.net import HttpClient, HttpError, RetryPolicy, TlsOptions, Transport

ONCE = RetryPolicy(attempts=1)


class TlsFakeServer(FakeServer):
    """The fake agent over HTTPS, with the test CA's certificate for 127.0.0.1 and localhost."""

    def __init__(self, ca: TestCA, host: str = "127.0.0.1") -> None:
        super().__init__(host=host)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(ca.server_file)
        self.socket = context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a refused handshake is what a test is about


def https_agent(srv: FakeServer, host: str | None = None) -> str:
    return f"https://{host or srv.host}:{srv.server_address[1]}/agent"


def client(**kwargs: Any) -> HttpClient:
    options: dict[str, Any] = {"concurrency": 4, "retries": ONCE, "timeout_s": 5.0, "environ": {}, **kwargs}
    return HttpClient(**options)


def wait_until(condition: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def in_threads(count: int, work: Callable[[int], object]) -> None:
    """`work(n)` in `count` threads started together; the first exception raised again here."""
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(n: int) -> None:
        start.wait(5.0)
        try:
            work(n)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30.0)
    assert not any(thread.is_alive() for thread in threads)
    if errors:
        raise errors[0]


def test_one_kept_alive_connection_carries_requests_in_turn_error_replies_included(server: FakeServer) -> None:
    server.faults["n2"] = ["500"]  # an error reply read to its end keeps its connection too
    http = client()
    texts = []
    for n in range(6):
        try:
            texts.append(http.post_json(server.url + "/agent", {"input": f"n{n}"}).body["output"]["text"])
        except HttpError as exc:
            texts.append(f"HTTP {exc.status}")
    assert texts == ["You said: n0", "You said: n1", "HTTP 500", "You said: n3", "You said: n4", "You said: n5"]
    assert server.connections == 1


def test_https_keeps_its_connection_alive_and_verifies_the_name_it_connects_to(ca: TestCA) -> None:
    tls = TlsOptions(ca_bundle=str(ca.ca_file))
    with TlsFakeServer(ca) as srv:
        http = client(tls=tls)
        for host in ("127.0.0.1", "localhost"):  # the certificate's IP address and DNS name
            for n in range(3):
                assert http.post_json(https_agent(srv, host), {"input": f"{host} {n}"}).status == 200
        assert srv.connections == 2  # one per origin, kept alive
    # 127.0.0.2 is loopback too, but not a name on the certificate: refused however trusted the CA
    with TlsFakeServer(ca, host="127.0.0.2") as other:
        with pytest.raises(HttpError, match="not trusted") as caught:
            client(tls=tls).post_json(https_agent(other), {"input": "x"})
        assert "127.0.0.2" in str(caught.value) and other.count == 0


def test_idle_connections_the_server_closed_are_never_sent_on(server: FakeServer) -> None:
    # Every idle connection closed by the server (its keep-alive timeout): the next requests each take a
    # live one or a new one, none fails and none is retried.
    http = client()
    for n in range(4):
        server.faults[f"close {n}"] = ["close_after"]
    in_threads(4, lambda n: http.post_json(server.url + "/agent", {"input": f"close {n}"}))
    assert wait_until(lambda: server.open_connections == 0)  # the server's FINs are out
    opened = server.connections
    replies = []
    in_threads(4, lambda n: replies.append(http.post_json(server.url + "/agent", {"input": f"after {n}"})))
    assert sorted(r.body["output"]["text"] for r in replies) == [f"You said: after {n}" for n in range(4)]
    assert all(r.attempts == 1 for r in replies) and http.stats()["retries"] == 0
    assert server.count == 8 and 1 <= server.connections - opened <= 4


def test_no_more_connections_to_an_origin_than_the_concurrency_under_load(server: FakeServer) -> None:
    server.delay_s = 0.005
    http = client(concurrency=4)

    def ten(n: int) -> None:
        for i in range(10):
            http.post_json(server.url + "/agent", {"input": f"{n}-{i}"})

    in_threads(16, ten)
    assert server.count == 160
    assert server.connections <= 4 and server.peak_in_flight <= 4
    http.close()
    assert wait_until(lambda: server.open_connections == 0)  # closing the client closed every idle connection


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_exchanges_run_on_sockets_without_a_timeout(server: FakeServer, ca: TestCA, scheme: str) -> None:
    # The connect has a timeout (what is left of the deadline); the request and reply must not: on a socket
    # with one, CPython polls before every send and read, a system call that gives up the GIL (at 64 threads
    # a wait to get it back, twice a request). The watchdog keeps the exchange's deadline instead.
    http = client(tls=TlsOptions(ca_bundle=str(ca.ca_file)))
    with TlsFakeServer(ca) if scheme == "https" else contextlib.nullcontext(server) as srv:
        url = https_agent(srv) if scheme == "https" else srv.url + "/agent"
        for n in range(3):
            assert http.post_json(url, {"input": f"n{n}"}).status == 200
        pool, _ = http.transport.route(scheme, "127.0.0.1", srv.server_address[1])
        (conn,) = pool._idle
        assert conn.sock.gettimeout() is None and srv.connections == 1
    http.close()


def test_a_burst_past_the_pool_size_keeps_only_size_connections_idle(server: FakeServer) -> None:
    # The transport alone (no limiter): 12 requests at once open 12 connections; 4 stay kept alive.
    server.delay_s = 0.5  # long enough for all 12 to be in flight together on a loaded machine
    transport = Transport(4, environ={})
    origin = ("http", "127.0.0.1", server.server_address[1])

    def one(n: int) -> None:
        reply = transport.send("POST", server.url + "/agent", origin, "/agent", b'{"input": "x"}', {}, 5.0)
        assert reply.status == 200

    in_threads(12, one)
    assert server.connections == 12
    assert wait_until(lambda: server.open_connections == 4)
    in_threads(4, one)  # the 4 kept carry the next 4 at once
    assert server.connections == 12
    transport.close()
    assert wait_until(lambda: server.open_connections == 0)
    one(0)  # a closed transport opens afresh when used again
    assert server.connections == 13


@pytest.mark.parametrize(("fault", "said"), [
    ("huge", "larger than 32 MiB"),  # the size bound: the rest never read
    ("trickle", "timed out"),  # the deadline fell mid-body
    ("reset", "connection failed"),  # cut short by the server
    ("switching", "HTTP 101"),  # an upgrade: no more HTTP on that connection
])
def test_a_reply_not_read_to_its_end_never_returns_its_connection(server: FakeServer, fault: str, said: str) -> None:
    http = client(timeout_s=1.0)
    pool, _ = http.transport.route("http", "127.0.0.1", server.server_address[1])
    assert http.post_json(server.url + "/agent", {"input": "before"}).status == 200 and pool.idle() == 1
    server.faults["x"] = [fault]
    with pytest.raises(HttpError, match=said):
        http.post_json(server.url + "/agent", {"input": "x"})
    assert pool.idle() == 0  # closed, not kept: whatever is left on it is no next request's reply
    reply = http.post_json(server.url + "/agent", {"input": "after"})
    assert reply.body["output"]["text"] == "You said: after"  # its own reply, not the rest of another
    assert server.connections == 2


def test_more_origins_than_pools_kept_retires_the_least_recently_used() -> None:
    # 8 origins' pools are kept (as urllib3's PoolManager kept 8): a ninth closes the idle connection of
    # the one used longest ago, which opens a new one when it is used again.
    servers = [FakeServer().start() for _ in range(9)]
    try:
        http = client()
        for srv in servers:
            assert http.post_json(srv.url + "/agent", {"input": "x"}).status == 200
        assert wait_until(lambda: servers[0].open_connections == 0)
        assert all(srv.open_connections == 1 for srv in servers[1:])
        assert http.post_json(servers[0].url + "/agent", {"input": "again"}).status == 200
        assert servers[0].connections == 2
    finally:
        for srv in servers:
            srv.stop()


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_direct_connection_gets_what_urllib3s_pool_gave_it(scheme: str) -> None:
    # `direct_connection` mirrors urllib3 2.x's `_new_conn` under the PoolManager evalgate used: a urllib3
    # that gives its pools' connections another argument fails here, to be mirrored there.
    import urllib3

    from evalgate.infra.net.connections import direct_connection

    context = ssl.create_default_context() if scheme == "https" else None
    manager = urllib3.PoolManager(num_pools=8, maxsize=4)
    pool = manager.connection_from_host("bücher.example", 8443, scheme,
                                        pool_kwargs={"ssl_context": context} if context else None)
    conn = direct_connection(scheme, "bücher.example", 8443, context)()
    assert set(pool.conn_kw) == ({"blocksize", "ssl_context"} if context else {"blocksize"})
    assert (conn.host, conn.port, conn.blocksize) == ("xn--bcher-kva.example", 8443, pool.conn_kw["blocksize"])
    assert (pool.host, pool.port) == (conn.host, conn.port) and conn.timeout is None  # the watchdog's deadline
    if context:
        assert conn.ssl_context is context and conn.cert_reqs == ssl.CERT_REQUIRED
        passed = ("key_file", "cert_file", "cert_reqs", "key_password", "ca_certs", "ca_cert_dir", "ssl_version",
                  "ssl_minimum_version", "ssl_maximum_version", "assert_hostname", "assert_fingerprint")
        assert all(getattr(pool, name) is None for name in passed)  # urllib3's defaults, left as they are


def test_a_request_routed_to_a_pool_closed_under_it_goes_out_on_a_fresh_one(server: FakeServer) -> None:
    # Another thread closed the origin's pool (the transport closing, or the origin retired) between routing
    # the request and taking a connection: the request is sent on a fresh pool, not failed.
    transport = Transport(2, environ={})
    origin = ("http", "127.0.0.1", server.server_address[1])
    pool, _ = transport.route(*origin)
    pool.close()
    reply = transport.send("POST", server.url + "/agent", origin, "/agent", b'{"input": "x"}', {}, 5.0)
    assert reply.status == 200 and transport.route(*origin)[0] is not pool


class StaleReplyServer:
    """A raw HTTP/1.1 server on loopback: on each connection it answers the first request, then soon after
    sends a second reply nobody asked for and keeps the connection open. A client that reuses it would
    read that stale reply as the next request's answer."""

    def __init__(self) -> None:
        import socket

        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        held = []
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            held.append(conn)
            conn.settimeout(5.0)
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            head, _, body = request.partition(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            while len(body) < length:
                body += conn.recv(65536)
            for text in (f"fresh {self.connections}", "stale"):
                if text == "stale":
                    time.sleep(0.02)  # after the client read the first: it waits in the socket, not in a buffer
                payload = f'{{"output": {{"text": "{text}"}}}}'.encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload))
        for conn in held:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5.0)
        self.listener.close()


def test_a_kept_alive_connection_holding_bytes_nobody_asked_for_is_never_reused() -> None:
    # The second reply is waiting in the socket when the next request goes out: that connection is dropped,
    # and each request reads its own reply on a new one, never the stale one.
    server = StaleReplyServer()
    try:
        http = client()
        url = f"http://127.0.0.1:{server.port}/agent"
        texts = []
        for n in range(3):
            reply = http.post_json(url, {"input": f"n{n}"})
            texts.append(reply.body["output"]["text"])
            time.sleep(0.1)  # the stale reply is in the client's socket before the next request
        assert texts == ["fresh 1", "fresh 2", "fresh 3"]
        assert server.connections == 3 and http.stats()["retries"] == 0
    finally:
        server.close()


def test_a_connections_socket_still_keeps_the_timeouts_it_is_given() -> None:
    # Setting no timeout on a socket that has none is skipped (a system call that gives up the GIL, twice a
    # request); every other change still takes effect.
    import socket

    from evalgate.infra.net.connections import QuietSocket

    with QuietSocket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        assert sock.gettimeout() is None and sock.getblocking()
        sock.settimeout(None)
        assert sock.gettimeout() is None and sock.getblocking()
        sock.settimeout(0.25)
        assert sock.gettimeout() == 0.25 and sock.getblocking()
        sock.settimeout(None)
        assert sock.gettimeout() is None and sock.getblocking()
        sock.settimeout(0.0)
        assert sock.gettimeout() == 0.0 and not sock.getblocking()
        sock.settimeout(None)
        assert sock.getblocking()
        sock.setblocking(False)
        sock.settimeout(None)  # not skipped: the socket had a timeout of 0 (non-blocking)
        assert sock.getblocking()
