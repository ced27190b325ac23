"""A reply read whole off a direct origin's connection in the common case (`read_whole`): a head of plain lines
whose one Content-Length frames the body, read in as few socket reads as it arrived in, never past its end.

Every other reply (chunked, read until the close, an interim one first, an HTTP/1.0 one, a head that is not
plain, more bytes than it frames, a read that failed or ended early) is read by http.client's reader
(`Watched.reply_head`) from the same bytes: those already received (`Received`), then the socket's, the
read that ended or failed ending or failing again at the same point. So a reply reads the same either way;
reading one of the common kind through http.client's objects (its reply, socket file and header message)
was a sixth of a run's CPU at 64 connections. tests/test_net_exchange.py holds both paths to urllib3's.
"""

from __future__ import annotations

import io
import re
import socket
from typing import Any

from evalgate.infra.net.heads import PARTED, PLAIN_LINE

_READ = 1 << 16  # one socket read; a head not ended within it goes to http.client's reader
_STATUS_LINE = re.compile(rb"HTTP/1\.1 ([1-9][0-9][0-9])(?: [\t -~]*)?\r\n")
_PLAIN_LINES = re.compile(b"(?:%s)*" % PLAIN_LINE.pattern)
# The headers that decide how a body is framed, kept or decoded; the name, then the value as http.client keeps
# it (leading blanks off, trailing ones kept)
_FRAMING = re.compile(rb"^(content-length|transfer-encoding|content-encoding|connection|content-type):[\t ]*"
                      rb"([^\r]*)\r$", re.IGNORECASE | re.MULTILINE)
_NO_BODY = (204, 304)


class Whole:
    """A reply read whole: its status, its header lines (the head past the status line, for `read_headers`),
    its body as sent and its Content-Encoding as `headers.get` gives it."""

    __slots__ = ("body", "encoding", "header_lines", "status")

    def __init__(self, status: int, header_lines: bytes, body: bytes, encoding: str | None) -> None:
        self.status = status
        self.header_lines = header_lines
        self.body = body
        self.encoding = encoding


class Received:
    """What was read of a reply `read_whole` left to http.client's reader: the bytes, then how the socket went
    on (`end`: None, reading on; b"", its end; an error, raised again)."""

    __slots__ = ("data", "end")

    def __init__(self, data: bytes, end: bytes | OSError | None = None) -> None:
        self.data = data
        self.end = end

    def socket_for(self, sock: socket.socket) -> Any:
        """What http.client's reply reads from in place of `sock` (all it asks of one is `makefile`)."""
        return _ReplayingSocket(self, sock)


def read_whole(sock: socket.socket, method: str, max_bytes: int) -> Whole | Received:
    """The reply on `sock` read whole when its head is plain and frames its body by a Content-Length of at most
    `max_bytes`; else what was received of it, for http.client's reader."""
    data = b""  # up to the head's end (within two reads), then the body's reads after it in `rest`
    rest: list[bytes] = []
    try:
        while (end := data.find(b"\r\n\r\n")) < 0:
            if len(data) >= _READ:  # a long head
                return Received(data)
            chunk = sock.recv(_READ)
            if not chunk:
                return Received(data, end=b"")
            data += chunk
        framed = _framing(data[:end + 2], method)
        if framed is None or framed[1] > max_bytes:
            return Received(data)
        status, length, encoding = framed
        missing = length - (len(data) - end - 4)
        while missing > 0:  # read no further than the body's end
            chunk = sock.recv(min(missing, _READ))
            if not chunk:
                return Received(b"".join([data, *rest]), end=b"")
            rest.append(chunk)
            missing -= len(chunk)
    except OSError as exc:
        return Received(b"".join([data, *rest]), end=exc)
    if missing < 0:  # bytes past the body: http.client's reader keeps to what it did with them
        return Received(data)
    head_end = data.index(b"\r\n") + 2
    return Whole(status, data[head_end:end + 4], b"".join([data[end + 4:], *rest]), encoding)


def _framing(head: bytes, method: str) -> tuple[int, int, str | None] | None:
    """(status, Content-Length, Content-Encoding) of a head that ends in CRLF, when http.client would read its
    body by that length and keep the connection: an HTTP/1.1 final reply with a body, every line plain
    (`read_headers` splits them itself), one Content-Length of digits, no Transfer-Encoding, no `close`, not a
    content type the email parser reads parts of. None for any other."""
    status_line = _STATUS_LINE.match(head)
    if status_line is None or method == "HEAD":
        return None
    status = int(status_line[1])
    if status < 200 or status in _NO_BODY or not _PLAIN_LINES.fullmatch(head, status_line.end()):
        return None
    lengths: list[bytes] = []
    encodings: list[str] = []
    for name, value in _FRAMING.findall(head, status_line.end()):
        name = name.lower()
        if name == b"content-length":
            lengths.append(value)
        elif name == b"content-encoding":
            encodings.append(value.decode("ascii"))
        elif _reframes(name, value):
            return None
    if len(lengths) != 1 or not lengths[0].isdigit():
        return None
    return status, int(lengths[0]), ", ".join(encodings) if encodings else None


def _reframes(name: bytes, value: bytes) -> bool:
    """Whether this header (a Transfer-Encoding, a Connection, a Content-Type) has http.client read the body by
    other means, close the connection, or the email parser read parts."""
    if name == b"transfer-encoding":
        return True
    if name == b"connection":
        return b"close" in value.lower()
    return PARTED.search(value) is not None


class _ReplayingSocket:
    """A connection's socket as http.client's reply reads it after `read_whole`: the bytes received first."""

    def __init__(self, received: Received, sock: socket.socket) -> None:
        self.received = received
        self.sock = sock

    def makefile(self, mode: str) -> io.BufferedReader:
        # the socket's own raw file underneath: the socket stays open while the reply reads, as with its own
        return io.BufferedReader(_Replay(self.received, self.sock.makefile("rb", buffering=0)))


class _Replay(io.RawIOBase):
    """The received bytes, then the socket's raw file (or its end, or its error, as `read_whole` met it)."""

    def __init__(self, received: Received, raw: Any) -> None:
        super().__init__()
        self.rest = memoryview(received.data)
        self.end = received.end
        self.raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.rest:
            size = min(len(buffer), len(self.rest))
            buffer[:size] = self.rest[:size]
            self.rest = self.rest[size:]
            return size
        if self.end is None:
            return int(self.raw.readinto(buffer))
        if isinstance(self.end, OSError):
            raise self.end
        return 0

    def close(self) -> None:
        try:
            self.raw.close()
        finally:
            super().close()
