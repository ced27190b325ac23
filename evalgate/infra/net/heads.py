"""The heads of HTTP messages on a direct origin's connections: a request's, as http.client makes it, made once
and kept per method, target and headers (`RequestHeads`); a reply's header lines, parsed as http.client parses
them (`read_headers`), without the email parser for a head of plain header lines."""

from __future__ import annotations

import http.client
import io
import re
from collections.abc import Callable, Mapping
from typing import Any

_KEPT_HEADS = 64  # per origin: past as many (a header templated per item), a head is made for each request


class RequestHeads:
    """The heads of the requests to one origin, each as http.client's `request` makes it on a connection of the
    origin (`Watched.head_for`), kept per method, target and headers: a request like an earlier one differs
    from it in its Content-Length alone. Making a head through http.client's putrequest, putheader (urllib3's
    and its own) and endheaders was a fifth of an exchange's CPU."""

    __slots__ = ("_kept", "_make")

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        # (what precedes the body's length, what follows it), or (the whole head, None) for a request without a
        # body. Two threads making the same head at once make the same bytes.
        self._kept: dict[tuple[Any, ...], tuple[bytes, bytes | None]] = {}

    def head(self, method: str, target: str, body: bytes | None, headers: Mapping[str, str]) -> bytes:
        """The head of this request, as http.client's `request` sends it on a connection of the origin."""
        key = (method, target, body is None, *headers.items())
        parts = self._kept.get(key)
        if parts is None:
            made: bytes = self._make().head_for(method, target, body, headers)
            parts = _head_parts(made, body, headers)
            if parts is None:
                return made
            if len(self._kept) < _KEPT_HEADS:
                self._kept[key] = parts
        before, after = parts
        if after is None:
            return before
        assert body is not None  # a request with a body has its length between the two parts
        return b"%s%d%s" % (before, len(body), after)


def _head_parts(head: bytes, body: bytes | None, headers: Mapping[str, str]) -> tuple[bytes, bytes | None] | None:
    """`head` split around the body's length in the Content-Length http.client set (the first such line: the
    request line and Host hold no line break); None when the caller sent a length or an encoding of its own."""
    if body is None:
        return head, None
    if any(name.lower() in ("content-length", "transfer-encoding") for name in headers):
        return None
    before, line, after = head.partition(b"\r\nContent-Length: %d\r\n" % len(body))
    return (before + b"\r\nContent-Length: ", b"\r\n" + after) if line else None


# http.client's bounds on a reply's head (`_MAXLINE`, `_MAXHEADERS`), with its errors past them.
MAX_LINE = 65536
MAX_HEADERS = 100
# A plain header line: a name of the characters the email parser takes for one, a colon, a value of printable
# ASCII and tabs, CRLF. Anything else in a head (a folded line, a line that is no header, a bare LF or CR,
# control or non-ASCII bytes) is parsed by http.client's own parser.
PLAIN_LINE = re.compile(rb"[!-9;-~]+:[\t -~]*\r\n")
# Content types the email parser reads a body of parts for (a defect, parts), even from a head alone.
PARTED = re.compile(rb"multipart|message", re.IGNORECASE)


def read_headers(fp: Any) -> http.client.HTTPMessage:
    """A reply's headers read from `fp` (its status line read), as http.client's `parse_headers(fp)` gives them:
    the same lines read within the same bounds, the same errors, the same message (names, values, defects,
    what is left over). A head of plain lines (every one `Name: value`, printable ASCII) is split here, each
    line as the email parser splits it; any other goes to http.client's parser."""
    lines = head_lines(fp)
    parted = any(PARTED.search(line) for line in lines if line[:13].lower() == b"content-type:")
    if not parted and all(PLAIN_LINE.fullmatch(line) for line in lines[:-1]):
        message = http.client.HTTPMessage()
        for line in lines[:-1]:
            name, _, value = line.decode("ascii").partition(":")
            message[name] = value.lstrip(" \t")[:-2]
        message.set_payload("")
        return message
    return http.client.parse_headers(io.BytesIO(b"".join(lines)))


def head_lines(fp: Any) -> list[bytes]:
    """The head's lines up to and with the blank one (or the end of the stream), as http.client reads them."""
    lines: list[bytes] = []
    while True:
        line = fp.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("header line")
        lines.append(line)
        if len(lines) > MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
        if line in (b"\r\n", b"\n", b""):
            return lines
