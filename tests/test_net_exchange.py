"""A direct origin's exchange (http.client's request and reply on a urllib3 connection, `PlainReply`) against
urllib3's own `request`, `getresponse` and `HTTPResponse` (what a proxied exchange still uses): the same bytes
on the wire, and the same status, headers and body, or the same error, read from the same reply bytes; and a
reply whose head closes the connection still read within the exchange's deadline."""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from evalgate.infra.net import HttpClient, HttpError, RetryPolicy, Transport
from evalgate.infra.net.connections import WATCHDOG
from evalgate.infra.net.transport import MAX_REPLY_BYTES, read_body

LONG_BODY = bytes(range(256)) * 1171 + b"x" * 224  # 300,000 bytes: several socket reads
LONG_CHUNKS = [b"y" * n for n in range(1000, 71000, 7000)]
# Replies sent as they are, then the connection closed: whole, cut short, malformed.
REPLIES = {
    "sized, a header twice": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Seen: 1\r\nx-seen: 2\r\n\r\nhello",
    "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n",
    "until the close": b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello, then EOF",
    "an HTTP/1.0 reply": b"HTTP/1.0 503 Service Unavailable\r\nRetry-After: 2\r\n\r\nbusy",
    "sized, many reads long": b"HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n" + LONG_BODY,
    "chunked, many reads long": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 + b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in LONG_CHUNKS) + b"0\r\n\r\n"),
    "no body": b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
    "cut short of its length": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b",
    "chunked, cut short": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\nhel",
    "a chunk size that is not one": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n",
    "a status line that is not one": b"HTTP/1.1 two hundred\r\n\r\n",
    "nothing at all": b"",
    "a 100 Continue first": (b"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n"
                             b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
    "a length below zero": b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nread until the close",
    "a length that is no number": b"HTTP/1.1 200 OK\r\nContent-Length: five\r\n\r\nuntil the close",
    "folded and odd lines": (b"HTTP/1.1 200 OK\r\nX-Folded: one\r\n two\r\nX-Latin: caf\xe9\r\nX-Bare-LF: 1\n"
                             b"Content-Length: 2\r\n\r\nok"),
    "a multipart type": b"HTTP/1.1 200 OK\r\nContent-Type: multipart/mixed; boundary=x\r\nContent-Length: 2\r\n\r\nok",
    "101 headers": b"HTTP/1.1 200 OK\r\n" + b"X-Many: 1\r\n" * 101 + b"\r\nok",
    "a header line too long": b"HTTP/1.1 200 OK\r\nX-Long: " + b"x" * 70_000 + b"\r\n\r\nok",
    "a version that is no HTTP/1": b"HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "sized, then bytes past it": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok, and more",
    "a length twice": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
    "sized, saying close": b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
    "sized, an error status": b"HTTP/1.1 503 Busy\r\nRetry-After: 1\r\nContent-Length: 4\r\n\r\nbusy",
    "a 304 with a length": b"HTTP/1.1 304 Not Modified\r\nContent-Length: 2\r\n\r\n",
}
# Small replies, sent again a few bytes at a time: a head read over several socket reads, and a reply that is
# not read whole read on from the bytes already received
PIECEMEAL = [name for name, reply in REPLIES.items() if 0 < len(reply) < 300]
# sha256 of `inspect.getsource(http.client.HTTPResponse.begin)`, the same in Python 3.10, 3.11, 3.12 and 3.13
BEGIN_SHA256 = "e06ec06b086c7ea0b9857657c435786fe031fdb272ec4080256e40ff04559a0e"
CLOSING = b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"  # the next request on a new connection


class CannedServer:
    """A loopback server answering each connection's request with `reply` and closing it; every request's
    bytes kept as they arrived. piece: the reply sent that many bytes at a time, each a socket read apart."""

    def __init__(self, reply: bytes, piece: int | None = None, reset: bool = False) -> None:
        self.reply = reply
        self.piece = piece
        self.reset = reset  # the connection ended by a reset (RST), not a close (FIN)
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                self.requests.append(_request_bytes(conn))
                piece = self.piece or len(self.reply) or 1
                with contextlib.suppress(OSError):  # a reader that stopped early (a bad status line) closed it
                    for start in range(0, len(self.reply), piece):
                        conn.sendall(self.reply[start:start + piece])
                        if self.piece:
                            time.sleep(0.002)
                if self.reset:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def stop(self) -> None:
        self.stopping = True
        self.thread.join(5)
        self.listener.close()


def _request_bytes(conn: socket.socket) -> bytes:
    """One request's head and its Content-Length of body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


@pytest.fixture
def canned() -> Iterator[type[CannedServer]]:
    started: list[CannedServer] = []

    class Started(CannedServer):
        def __init__(self, reply: bytes, piece: int | None = None, reset: bool = False) -> None:
            super().__init__(reply, piece, reset)
            started.append(self)

    yield Started
    for server in started:
        server.stop()


def through_evalgate(port: int, method: str, target: str, body: bytes | None,
                     headers: Mapping[str, str]) -> tuple[Any, ...]:
    """(status, headers, a repeated header's value, body) as a direct exchange read them, or (the error's
    type, its words)."""
    transport = Transport(1, environ={})
    try:
        reply = transport.send(method, f"http://127.0.0.1:{port}{target}", ("http", "127.0.0.1", port), target,
                               body, headers, 5.0)
    except Exception as exc:
        return type(exc).__name__, str(exc)
    finally:
        transport.close()
    return reply.status, list(reply.headers.items()), reply.headers.get("X-SEEN"), reply.content


def through_urllib3(port: int, method: str, target: str, body: bytes | None,
                    headers: Mapping[str, str]) -> tuple[Any, ...]:
    """The same through urllib3's connection, its `request`, `getresponse` and `HTTPResponse`, read as
    evalgate reads a proxied reply."""
    from urllib3.connection import HTTPConnection
    from urllib3.exceptions import ProtocolError

    conn = HTTPConnection("127.0.0.1", port)
    try:
        conn.request(method, target, body=body, headers=headers, preload_content=False, decode_content=False)
        try:
            reply = conn.getresponse()
        except Exception as exc:  # as urllib3's pool words what the reply's head raised
            return type(ProtocolError()).__name__, str(ProtocolError("Connection aborted.", exc))
        content = read_body(reply, MAX_REPLY_BYTES, time.monotonic() + 5.0)
    except Exception as exc:
        return type(exc).__name__, str(exc)
    finally:
        conn.close()
    return reply.status, list(reply.headers.items()), reply.headers.get("X-SEEN"), content


@pytest.mark.parametrize(("method", "body", "headers"), [
    ("POST", b'{"input": "hi"}', {"User-Agent": "evalgate/1", "Accept": "application/json",
                                  "Content-Type": "application/json"}),
    ("POST", b"{}", {"Content-Type": "application/json"}),  # no User-Agent: urllib3's own goes out
    ("POST", None, {"user-agent": "lower/1"}),  # no body: Content-Length 0
    ("GET", None, {"Accept": "*/*"}),
    ("PUT", b"x" * 70_000, {"Host": "api.example", "Accept-Encoding": "gzip"}),  # the caller's own Host
    ("POST", b"{}", {"Content-Length": "2", "User-Agent": "evalgate/1"}),  # the caller's own length
], ids=["json", "no user-agent", "no body", "get", "large, own host", "own length"])
def test_a_request_goes_out_as_urllib3_sent_it(canned: type[CannedServer], method: str, body: bytes | None,
                                               headers: dict[str, str]) -> None:
    # Twice on one transport: the second request's head is the first's, kept (`RequestHeads`), with the
    # second body's length (a caller's own length goes out as given).
    later = body + b" " * 1234 if body is not None and "Content-Length" not in headers else body
    server = canned(CLOSING)
    transport = Transport(1, environ={})
    url, origin = f"http://127.0.0.1:{server.port}/agent?q=1", ("http", "127.0.0.1", server.port)
    try:
        for data in (body, later):
            assert transport.send(method, url, origin, "/agent?q=1", data, headers, 5.0).status == 204
    finally:
        transport.close()
    for data in (body, later):
        assert through_urllib3(server.port, method, "/agent?q=1", data, headers)[0] == 204
    first, second, theirs_first, theirs_second = server.requests
    assert (first, second) == (theirs_first, theirs_second)
    assert first.startswith(f"{method} /agent?q=1 HTTP/1.1\r\n".encode())
    if later is not body:
        assert b"\r\nContent-Length: %d\r\n" % len(later) in second


def test_requests_whose_headers_differ_each_go_out_with_their_own(canned: type[CannedServer]) -> None:
    # A header templated per item: each request has its own head, past the heads kept per origin too.
    server = canned(CLOSING)
    transport = Transport(1, environ={})
    count = 70
    try:
        for n in range(count):
            headers = {"User-Agent": "evalgate/1", "X-Item": f"item-{n}"}
            assert transport.send("POST", f"http://127.0.0.1:{server.port}/agent", ("http", "127.0.0.1", server.port),
                                  "/agent", b"{}" + b" " * n, headers, 5.0).status == 204
    finally:
        transport.close()
    assert len(server.requests) == count
    for n, request in enumerate(server.requests):
        assert b"\r\nX-Item: item-%d\r\n" % n in request
        assert b"\r\nContent-Length: %d\r\n" % (2 + n) in request
        assert request.endswith(b"\r\n\r\n{}" + b" " * n)


def test_a_callers_own_length_goes_out_as_given_whatever_the_body() -> None:
    # A kept head has the body's length put in: never over a Content-Length the caller set itself.
    from evalgate.infra.net.connections import RequestHeads, direct_connection

    make = direct_connection("http", "127.0.0.1", 9, None)  # never connected: heads are made, not sent
    heads = RequestHeads(make)
    for body in (b"{}", b"{}" + b" " * 40, b"{}"):
        for headers in ({"Content-Length": "2"}, {"transfer-encoding": "chunked"}):
            head = heads.head("POST", "/agent", body, headers)
            assert head == make().head_for("POST", "/agent", body, headers)
            assert b"Content-Length: %d\r\n" % len(body) not in head or len(body) == 2


@pytest.mark.parametrize(("method", "headers"), [
    ("POST", {"X-Bad": "one\r\nX-Injected: two"}),
    ("POST", {"X-Bad\r\nX-Injected": "two"}),
    ("PO ST", {"User-Agent": "evalgate/1"}),
], ids=["a line break in a value", "a line break in a name", "a space in the method"])
def test_a_request_urllib3_refuses_is_refused_with_its_words(canned: type[CannedServer], method: str,
                                                             headers: dict[str, str]) -> None:
    server = canned(REPLIES["no body"])
    ours = through_evalgate(server.port, method, "/agent", b"{}", headers)
    theirs = through_urllib3(server.port, method, "/agent", b"{}", headers)
    assert ours == theirs and ours[0] == "ValueError"
    assert not server.requests  # nothing went out


@pytest.mark.parametrize("name", list(REPLIES))
def test_a_reply_reads_as_urllib3_read_it(canned: type[CannedServer], name: str) -> None:
    server = canned(REPLIES[name])
    ours = through_evalgate(server.port, "POST", "/agent", b"{}", {"User-Agent": "evalgate/1"})
    theirs = through_urllib3(server.port, "POST", "/agent", b"{}", {"User-Agent": "evalgate/1"})
    assert ours == theirs
    if name in ("sized, a header twice", "until the close", "sized, many reads long"):  # read whole
        assert ours[-1] == REPLIES[name].partition(b"\r\n\r\n")[2]
    if name == "chunked, many reads long":
        assert ours[-1] == b"".join(LONG_CHUNKS)


@pytest.mark.parametrize("name", PIECEMEAL)
def test_a_reply_sent_in_pieces_reads_as_urllib3_read_it(canned: type[CannedServer], name: str) -> None:
    server = canned(REPLIES[name], piece=7)
    ours = through_evalgate(server.port, "POST", "/agent", b"{}", {"User-Agent": "evalgate/1"})
    theirs = through_urllib3(server.port, "POST", "/agent", b"{}", {"User-Agent": "evalgate/1"})
    assert ours == theirs


@pytest.mark.parametrize("cut", [b"HTTP/1.1 200 OK\r\nContent-", b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nonly"],
                         ids=["mid-head", "mid-body"])
def test_a_reply_cut_by_a_reset_fails_as_urllib3_failed(canned: type[CannedServer], cut: bytes) -> None:
    server = canned(cut, reset=True)
    ours = through_evalgate(server.port, "POST", "/agent", b"{}", {"User-Agent": "evalgate/1"})
    theirs = through_urllib3(server.port, "POST", "/agent", b"{}", {"User-Agent": "evalgate/1"})
    assert ours == theirs and "reset" in ours[1]


def test_a_reply_that_says_close_then_stalls_mid_body_times_out_at_timeout_s() -> None:
    # http.client closes the connection as soon as a head says `Connection: close`, its body still to read:
    # the watchdog's handle on the socket must outlive that, or a server that stalls after the head holds
    # the request until it closes (here 10 s; for ever, for one that never does).
    listener = socket.create_server(("127.0.0.1", 0))
    release = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            _request_bytes(conn)
            conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 100\r\n\r\nthe first")
            release.wait(10)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    http = HttpClient(concurrency=1, retries=RetryPolicy(attempts=1), timeout_s=1.0, environ={})
    started = time.monotonic()
    try:
        with pytest.raises(HttpError, match="timed out after 1s"):
            http.post_json(f"http://127.0.0.1:{listener.getsockname()[1]}/agent", {"input": "x"})
        assert time.monotonic() - started < 5.0
        assert not WATCHDOG.in_flight()
    finally:
        release.set()
        thread.join(5)
        listener.close()
        http.close()


class Said(logging.Handler):
    """The messages logged to the loggers it is added to (however the process's logging is set up:
    evalgate's own handler stops them reaching the root's)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_head_that_does_not_wholly_parse_is_warned_of_as_urllib3_warned(canned: type[CannedServer]) -> None:
    server = canned(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nnot a header line\r\n\r\nok")
    loggers = [logging.getLogger("evalgate.infra.net.transport"), logging.getLogger("urllib3.connection")]
    said = Said()
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(said)
        logger.setLevel(logging.WARNING)
    try:
        ours = through_evalgate(server.port, "POST", "/agent", b"{}", {"User-Agent": "evalgate/1"})
        said_ours, said.messages = said.messages, []
        theirs = through_urllib3(server.port, "POST", "/agent", b"{}", {"User-Agent": "evalgate/1"})
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(said)
            logger.setLevel(level)
    assert ours == theirs and ours[0] == 200
    assert said_ours == said.messages
    assert said_ours[0].startswith(f"Failed to parse headers (url=http://127.0.0.1:{server.port}/agent): ")


HEAD_LINES = [b"Content-Length: 2\r\n", b"not a header line\r\n", b" folded onto nothing\r\n", b"X-Empty:\r\n",
              b": no name\r\n", b"From somebody\r\n", b"X-Bare-LF: 1\n", b"\tX-Tab: 1\r\n", b"X-Nul: \x00\r\n",
              b"Bad Name: 1\r\n", b"X-Colon:: 1\r\n", b"\r\n"]


def test_every_head_urllib3_would_warn_of_has_a_parse_defect_or_a_rest() -> None:
    # The exchange asks urllib3's check only of a head whose parse noted a defect or left something over: every
    # head of up to three lines of these kinds (1,884 of them) that urllib3's check refuses has one or the other
    # ("From ..." as the last line is left over without a defect).
    import http.client
    import io
    import itertools

    from urllib3.exceptions import HeaderParsingError
    from urllib3.util.response import assert_header_parsing

    refused = 0
    for size in range(1, 4):
        for lines in itertools.product(HEAD_LINES, repeat=size):
            message = http.client.parse_headers(io.BytesIO(b"".join(lines) + b"\r\n"))
            try:
                assert_header_parsing(message)
            except HeaderParsingError:
                refused += 1
                assert message.defects or message.get_payload(), lines
    assert refused > 500  # the kinds above do make urllib3 warn


HEAD_KINDS = [b"Content-Length: 2\r\n", b"X-Spaced:   padded  \r\n", b"X-Empty:\r\n", b" folded\r\n",
              b"\tX-Tab: 1\r\n", b"not a header line\r\n", b"From somebody\r\n", b"X-Bare-LF: 1\n", b"X-CR: 1\r2\r\n",
              b"X-Latin: caf\xe9\r\n", b"X-VT: a\x0bb\r\n", b": no name\r\n", b"Content-Type: multipart/mixed\r\n",
              b"content-type: Message/rfc822\r\n", b"Content-Type: text/plain\r\n", b"X-Colon:: 1\r\n"]
ENDS = [b"\r\n", b"\n", b"", b"\r\nthe body"]


def test_a_reply_head_is_read_as_http_client_parses_it() -> None:
    # `read_headers` splits a head of plain lines itself and hands any other to http.client's parser: every head
    # of up to three lines of these kinds, with each ending (a blank line, a bare LF, the end, a body after),
    # gives the same headers, defects and rest, and leaves the stream at the same place (17,476 heads).
    import http.client
    import io
    import itertools

    from evalgate.infra.net.heads import read_headers

    def parsed(message: Any) -> tuple[Any, ...]:
        rest = message.get_payload()
        return (message.items(), [(type(d), str(d)) for d in message.defects],
                [parsed(part) for part in rest] if isinstance(rest, list) else rest, message.get_content_type())

    for size in range(0, 4):
        for lines in itertools.product(HEAD_KINDS, repeat=size):
            for end in ENDS:
                head = b"".join(lines) + end
                ours, theirs = io.BytesIO(head), io.BytesIO(head)
                assert parsed(read_headers(ours)) == parsed(http.client.parse_headers(theirs)), head
                assert ours.read() == theirs.read(), head


STATUS_LINES = [b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 404\r\n", b"HTTP/1.1 204 No Content\r\n", b"HTTP/1.0 200 OK\r\n",
                b"HTTP/1.1 103 Early Hints\r\n", b"HTTP/1.1  200 OK\r\n", b"HTTP/1.1 200 caf\xe9\r\n"]
FRAMING_LINES = [b"Content-Length: 5\r\n", b"content-length: 5 \r\n", b"Content-Length: 05\r\n",
                 b"Content-Length: +5\r\n", b"Content-Length: 3\r\n", b"Transfer-Encoding: chunked\r\n",
                 b"Connection: close\r\n",
                 b"Connection: keep-alive\r\n", b"Content-Encoding: gzip\r\n", b"content-encoding: br \r\n",
                 b"Content-Type: multipart/mixed\r\n", b"X-Folded: a\r\n b\r\n", b"X-Plain: 1\r\n"]
BODIES = [b"hello", b"hel", b"hello, and more"]


class _Sent:
    """Bytes as http.client's reply reads them from a socket (all it asks of one is `makefile`)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, mode: str) -> io.BytesIO:
        return io.BytesIO(self.data)


def test_a_reply_read_whole_is_the_reply_http_client_reads_and_any_other_loses_no_byte() -> None:
    # `read_whole` takes a reply whole only when http.client would read the same status, headers, body and
    # encoding from it, its Content-Length exactly the bytes that follow and the connection kept; any other it
    # leaves with every byte it read, in order, for http.client's reader (every head of a status line and up
    # to two of these lines, each body, POST and HEAD: 7,686 replies).
    import itertools

    from evalgate.infra.net.connections import final_response_class
    from evalgate.infra.net.heads import read_headers
    from evalgate.infra.net.whole_reply import Whole, read_whole

    whole_ones = set()
    for status_line, size, body, method in itertools.product(STATUS_LINES, range(3), BODIES, ("POST", "HEAD")):
        for lines in itertools.product(FRAMING_LINES, repeat=size):
            sent = status_line + b"".join(lines) + b"\r\n" + body
            ours, theirs = socket.socketpair()
            with ours, theirs:
                theirs.sendall(sent)
                theirs.shutdown(socket.SHUT_WR)
                read = read_whole(ours, method, 2**20)
            if not isinstance(read, Whole):
                assert sent.startswith(read.data) and (read.end is None or read.data == sent), sent
                continue
            whole_ones.add(sent)
            reply = final_response_class()(_Sent(sent), method=method)
            reply.begin()
            assert (reply.status, reply.chunked, reply.will_close, reply.length) == (read.status, False, False,
                                                                                     len(read.body)), sent
            assert reply.read() == read.body, sent
            assert sent == sent[:sent.index(b"\r\n") + 2] + read.header_lines + read.body  # nothing past the body
            assert reply.msg.items() == read_headers(io.BytesIO(read.header_lines)).items(), sent
            encodings = reply.msg.get_all("Content-Encoding")
            assert read.encoding == (", ".join(encodings) if encodings else None), sent
    assert b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" in whole_ones
    assert b"HTTP/1.1 404\r\nContent-Length: 3\r\nContent-Encoding: gzip\r\n\r\nhel" in whole_ones


def test_http_clients_begin_is_the_one_the_reply_copies() -> None:
    # FinalResponse.begin is http.client's `begin` (Python 3.10 to 3.13) with its header parse replaced: a
    # Python whose `begin` differs fails here, and the copy is to be read again against it.
    import hashlib
    import http.client
    import inspect

    source = inspect.getsource(http.client.HTTPResponse.begin)
    assert hashlib.sha256(source.encode()).hexdigest() == BEGIN_SHA256
