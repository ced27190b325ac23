"""One HTTP exchange over urllib3: on a kept-alive urllib3 connection of the origin's own pool (`OriginPool`),
or through urllib3's ProxyManager when a proxy serves the origin; the whole body read within the deadline and
a size bound, its Content-Encoding undone without inflating past that bound.

On a direct origin's connection the request and the reply are http.client's: the layer urllib3's connection
subclasses and its `HTTPResponse` wraps, without the per-request objects urllib3 builds around it (its request
options, `HTTPResponse`, decoders and buffers: a third of a request's CPU). A request's head is the one
http.client's `request` makes, made once per method, target and headers (`RequestHeads`: the next such
request differs in its Content-Length alone) and sent with the body. A reply of plain header lines whose
Content-Length frames its body is read whole in as few socket reads as it came in (`read_whole`,
`WholeReply`); any other is read by http.client's reply from the same bytes (`Watched.reply_head`,
`PlainReply`), its header lines parsed as http.client parses them, a plain head without the email parser
(`read_headers`). The bytes sent and the status, headers, body or error read are urllib3's
(tests/test_net_exchange.py holds them to it)."""

from __future__ import annotations

import errno
import functools
import io
import logging
import os
import threading
import time
import zlib
from collections.abc import ItemsView, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from evalgate.infra.net.connections import ExchangeDeadline, OriginPool, PoolClosed, direct_connection, pool_classes
from evalgate.infra.net.errors import BadEncoding, NoRetry, one_line
from evalgate.infra.net.heads import read_headers
from evalgate.infra.net.routes import TlsOptions, TlsSettingError, ca_source, proxy_for, ssl_context
from evalgate.infra.net.whole_reply import Whole, read_whole

if TYPE_CHECKING:  # imported when the first client is built: offline specs never pay for TLS and urllib3
    import http.client
    import ssl

    import urllib3

MAX_REPLY_BYTES = 32 * 2**20  # a reply bigger than this (sent, or once decompressed) is a runaway, not an answer
_READ_CHUNK = 1 << 16
_DIRECT_ORIGINS = 8  # origins whose pools are kept (urllib3's PoolManager kept as many): the least used retired
log = logging.getLogger(__name__)


@functools.cache
def _no_socket_timeout() -> urllib3.Timeout:
    """Sockets without a timeout (None: blocking), the exchange's deadline kept by the watchdog: CPython
    polls before every send and read on a socket with a timeout, a GIL hand-off each at 64 threads."""
    import urllib3

    return urllib3.Timeout(connect=None, read=None)


@functools.cache
def _no_retries() -> urllib3.Retry:
    """What urllib3 makes of `retries=False, redirect=False` for every request, made once (a Retry is
    never changed: `increment` returns a new one): ours decide retries and redirects."""
    import urllib3

    return urllib3.Retry(total=False, redirect=False)


class RawReply:
    """One HTTP exchange's result: status, headers, the whole body."""

    __slots__ = ("content", "headers", "status")

    def __init__(self, status: int, headers: Mapping[str, str], content: bytes) -> None:
        self.status = status
        self.headers = headers
        self.content = content


class ReplyHeaders(Mapping[str, str]):
    """A reply's headers as urllib3's `HTTPHeaderDict` holds them (any case; a repeated header's values
    joined by ", ", and listed once per value by `items`), made from http.client's message (or the header
    lines it is parsed from, as http.client parses them) when first read: most replies' headers never are, and
    making one costs as much as the rest of reading a small reply."""

    __slots__ = ("_made", "_message")

    def __init__(self, message: http.client.HTTPMessage | bytes) -> None:
        self._message = message
        self._made: Mapping[str, str] | None = None

    def _headers(self) -> Mapping[str, str]:
        if self._made is None:
            from urllib3 import HTTPHeaderDict

            message = self._message
            if isinstance(message, bytes):
                message = read_headers(io.BytesIO(message))
            self._made = HTTPHeaderDict(message.items())
        return self._made

    def __getitem__(self, name: str) -> str:
        return self._headers()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._headers())

    def __len__(self) -> int:
        return len(self._headers())

    def items(self) -> ItemsView[str, str]:
        return self._headers().items()

    def __repr__(self) -> str:
        return repr(self._headers())


class PlainReply:
    """http.client's reply (which urllib3's `HTTPResponse` wraps) as `_body` reads urllib3's: its headers as
    an `HTTPHeaderDict` gives them, read a socket read at a time without decoding, and a failure raised as
    urllib3 raises it (`Connection broken: ...`, a body cut short of its Content-Length included), without the
    reply object, decoders and buffers urllib3 builds for every request."""

    __slots__ = ("_done", "_reply", "headers", "status", "version")

    def __init__(self, reply: http.client.HTTPResponse) -> None:
        self._reply = reply
        self._done = 0
        self.status = reply.status
        self.version = reply.version
        self.headers = ReplyHeaders(reply.msg)

    def content_encoding(self) -> str | None:
        """Its Content-Encoding, as `headers.get` gives it, the headers not made."""
        found = self._reply.msg.get_all("Content-Encoding")
        return ", ".join(found) if found else None

    @property
    def length_remaining(self) -> int | None:
        return self._reply.length

    def read1(self, amount: int, decode_content: bool = False) -> bytes:
        """At most `amount` bytes from one socket read; b"" at the end, which closes the reply (http.client's
        read1 leaves a reply read to its Content-Length open before Python 3.13)."""
        reply = self._reply
        try:
            data = reply.read1(amount)
        except Exception as exc:
            error = _broken(exc)
            if error is exc:
                raise
            raise error from exc
        if data:
            self._done += len(data)
            if reply.length == 0:
                reply.close()
            return data
        reply.close()
        if reply.length:  # the connection ended short of the Content-Length
            from urllib3.exceptions import IncompleteRead

            cut = IncompleteRead(self._done, reply.length)
            raise _broken(cut) from cut
        return data

    def isclosed(self) -> bool:
        return self._reply.isclosed()

    def close(self) -> None:
        self._reply.close()


class WholeReply:
    """A reply `read_whole` read, as `_body` reads a `PlainReply`: its body handed out a read at a time."""

    __slots__ = ("_body", "_done", "_encoding", "headers", "status")
    version = 11

    def __init__(self, whole: Whole) -> None:
        self.status = whole.status
        self.headers = ReplyHeaders(whole.header_lines)
        self._body = whole.body
        self._encoding = whole.encoding
        self._done = 0

    def content_encoding(self) -> str | None:
        return self._encoding

    @property
    def length_remaining(self) -> int:
        return len(self._body) - self._done

    def read1(self, amount: int, decode_content: bool = False) -> bytes:
        data = self._body[self._done:self._done + amount]
        self._done += len(data)
        return data

    def isclosed(self) -> bool:
        return self._done == len(self._body)

    def close(self) -> None:
        pass


def _broken(exc: Exception) -> Exception:
    """What urllib3's `HTTPResponse` raised for `exc` while reading a body: a TLS failure as its SSLError,
    a connection's failure as its ProtocolError("Connection broken: ..."), a timeout and anything else as
    they are."""
    import http.client
    import ssl

    from urllib3.exceptions import ProtocolError, SSLError

    if isinstance(exc, ssl.SSLError):
        return SSLError(exc)
    if isinstance(exc, TimeoutError):  # a socket's (none has a timeout here): the client's "timed out"
        return exc
    if isinstance(exc, OSError | http.client.HTTPException):
        return ProtocolError(f"Connection broken: {exc!r}", exc)
    return exc


def read_body(reply: Any, max_bytes: int, deadline: float) -> bytes:
    """The whole body as sent, at most `max_bytes`; NoRetry past that (the rest is never read).

    Read on a blocking socket, the exchange's deadline watched (`ExchangeDeadline`): a server that trickles
    a byte now and then has the socket shut down at the deadline, and the read stops there.
    """
    read = getattr(reply, "read1", None) or reply.read  # read1: one socket read (urllib3 >= 2.2)
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() >= deadline:
            raise TimeoutError("the reply was still arriving at the deadline")
        chunk = read(_READ_CHUNK, decode_content=False)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise NoRetry(f"the reply is larger than {_size(max_bytes)}; it was not read (a runaway reply?)")
        chunks.append(chunk)
        if getattr(reply, "length_remaining", None) == 0:  # its Content-Length read: no read to learn
            return b"".join(chunks)  # what that says


def _body(reply: Any, max_bytes: int, deadline: float) -> bytes:
    """`read_body`, the connection closed (never reused) when it is not all read."""
    try:
        if reply.status >= 200:
            return read_body(reply, max_bytes, deadline)
        reply.close()  # `101 Switching Protocols`, asked by nobody: no body, and no more HTTP on this connection
        return b""
    except BaseException:
        reply.close()  # the connection holds an unread rest: never reused
        raise


def _decoded(content: bytes, encoding: str | None, max_bytes: int) -> bytes:
    """The body with its Content-Encoding (gzip, deflate) undone, never inflated past `max_bytes`:
    a reply of a few KiB that decompresses to gigabytes (a "zip bomb") stops at the limit."""
    if not encoding:
        return content
    codings = [c.strip().lower() for c in (encoding or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if len(codings) > 2:
        raise NoRetry(f"the reply is encoded {len(codings)} times over (Content-Encoding); not decoded")
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip"):
            content = _inflate(content, 16 + zlib.MAX_WBITS, max_bytes, coding)
        elif coding == "deflate":  # zlib-wrapped as the RFC says, or raw as some servers send it
            try:
                content = _inflate(content, zlib.MAX_WBITS, max_bytes, coding)
            except BadEncoding:
                content = _inflate(content, -zlib.MAX_WBITS, max_bytes, coding)
        else:
            shown = one_line(coding, 40)
            raise NoRetry(f"the reply is compressed with `{shown}` (Content-Encoding), which evalgate does not "
                           "decode; have the server send it plain, gzip or deflate")
    return content


def _inflate(data: bytes, wbits: int, max_bytes: int, coding: str) -> bytes:
    out = bytearray()
    while data:
        inflater = zlib.decompressobj(wbits)
        try:
            out += inflater.decompress(data, max_bytes + 1 - len(out))
        except zlib.error:
            raise BadEncoding(f"the reply says Content-Encoding {coding} but is not valid {coding} data") from None
        if len(out) > max_bytes:
            raise NoRetry(f"the reply decompresses to more than {_size(max_bytes)}; it was not read "
                           "(a runaway reply, or a compression bomb)")
        if not inflater.eof:
            break  # a truncated stream: what came is what there is
        data = inflater.unused_data if wbits > zlib.MAX_WBITS else b""  # gzip: the next member, if any
    return bytes(out)


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit >= 2**20 and limit % 2**20 == 0 else f"{limit} bytes"


def _urllib3_error(exc: Exception) -> Exception:
    """What urllib3's `urlopen` (retries off, no proxy) raised for `exc`, raised while connecting, sending or
    reading the reply's head: a TLS failure as its SSLError, a connection that failed as its ProtocolError
    ("Connection aborted."); a timeout and urllib3's own errors (NewConnectionError, ...) as they are."""
    import http.client
    import ssl

    from urllib3.exceptions import ProtocolError, SSLError
    from urllib3.util.ssl_match_hostname import CertificateError

    if isinstance(exc, ssl.SSLError | ssl.CertificateError | CertificateError):
        return SSLError(exc)
    if isinstance(exc, TimeoutError):  # a socket's (connecting, the TLS handshake): our deadline's own words
        return exc
    if isinstance(exc, OSError | http.client.HTTPException):
        return ProtocolError("Connection aborted.", exc)
    return exc


def _sent(conn: Any, head: bytes, data: bytes | None, method: str, target: str,
          max_bytes: int) -> PlainReply | WholeReply:
    """The request (`head`, then `data`) sent on `conn` and its reply read whole (`read_whole`) or its head read,
    as urllib3's `_make_request` does: connected first (a TLS failure is told as one), and a server that closed
    the connection while the request went out may have replied all the same (a 413, say): that reply is read."""
    try:
        if conn.is_closed:
            conn.connect()
        try:
            conn.send_request(head + data if data else head)
        except BrokenPipeError:
            pass
        except OSError as exc:
            if exc.errno not in (errno.EPROTOTYPE, errno.ECONNRESET):
                raise
        read = read_whole(conn.sock, method, max_bytes)
        if isinstance(read, Whole):
            return WholeReply(read)
        reply = conn.reply_head(method, read)
        _warn_of_bad_headers(reply, conn, target)
        return PlainReply(reply)
    except Exception as exc:
        error = _urllib3_error(exc)
        if error is exc:
            raise
        raise error  # noqa: B904  # the cause as its context, as urllib3 raised it (the client's words read it)


def _warn_of_bad_headers(reply: http.client.HTTPResponse, conn: Any, target: str) -> None:
    """urllib3's warning for a reply head http.client could not wholly parse (a line that is no header,
    say): logged as urllib3's `getresponse` logged it; the reply is read all the same. A head whose parse noted
    no defect and left nothing over passes urllib3's check, without the check's other look-ups."""
    if not reply.msg.defects and not reply.msg.get_payload():
        return
    from urllib3.exceptions import HeaderParsingError
    from urllib3.util.response import assert_header_parsing

    try:
        assert_header_parsing(reply.msg)
    except (HeaderParsingError, TypeError) as exc:
        scheme = "https" if conn.default_port == 443 else "http"
        log.warning("Failed to parse headers (url=%s://%s:%s%s): %s", scheme, conn.host, conn.port, target, exc)


_TARGETS: dict[str, str] = {}


def _request_target(path: str) -> str:
    """The request line's target as urllib3's `urlopen` sent it (its `parse_url`: what a URL may not hold
    percent-encoded, dot segments removed), worked out once per path."""
    found = _TARGETS.get(path)
    if found is None:
        from urllib3.util import parse_url

        found = parse_url(path).url
        if len(_TARGETS) < 256:
            _TARGETS[path] = found
    return found


def _exchange(pool: OriginPool, method: str, target: str, data: bytes | None, headers: Mapping[str, str],
              max_bytes: int, deadline: float) -> RawReply:
    """One request on a connection of the origin's pool, connect to body within the deadline (see _Watchdog),
    on a socket without a timeout. The connection goes back to the pool only when its reply was read to the
    end and keeps it alive; an error, a reply cut short or not read, `Connection: close` or an upgrade closes it."""
    conn = pool.take()
    try:
        with ExchangeDeadline(deadline):
            head = pool.heads.head(method, target, data, headers)
            reply = _sent(conn, head, data, method, target, max_bytes)
            content = _body(reply, max_bytes, deadline)
    except BaseException:
        conn.close()
        raise
    log.debug('%s "%s %s HTTP/%d.%d" %s %s', pool.origin, method, target, reply.version // 10, reply.version % 10,
              reply.status, len(content))
    if reply.status >= 200 and reply.isclosed() and not conn.is_closed:  # all read; http.client closes what
        pool.give(conn)  # the reply says not to keep (after the watch ended: no shutdown can follow)
    else:
        conn.close()
    return RawReply(reply.status, reply.headers, _decoded(content, reply.content_encoding(), max_bytes))


class Transport:
    """urllib3 underneath: for a direct origin, its own pool of urllib3 connections (`OriginPool`); a
    ProxyManager per proxy for the origins a proxy serves (forwarding, CONNECT tunnels: urllib3's pools),
    picked per origin from the environment, all sharing one TLS context. Each pool keeps `size` connections
    idle at most."""

    def __init__(self, size: int, tls: TlsOptions | None = None, environ: Mapping[str, str] | None = None) -> None:
        self.size = max(1, size)
        self.environ = dict(os.environ if environ is None else environ)
        self.tls = tls or TlsOptions()
        self._ssl: ssl.SSLContext | None = None
        self._direct: dict[tuple[str, str, int], OriginPool] = {}
        self._proxies: dict[str, urllib3.ProxyManager] = {}
        self._routes: dict[tuple[str, str, int], tuple[Any, str | None]] = {}
        self._lock = threading.Lock()
        self.proxy_secrets: list[str] = []
        # A bad CA bundle or certificate is an error now, not on every request. The spec's own `tls:`
        # files are loaded now; a bundle from the environment (set on many machines, needed only for
        # https) must be readable now and is parsed (~25 ms) for the first https origin.
        if self.tls.ca_bundle or self.tls.client_cert:
            self.context()
        else:
            source, cafile = ca_source(self.tls, self.environ)
            if cafile is not None and not os.access(cafile, os.R_OK):
                raise TlsSettingError(f"{source} {cafile}: not a readable PEM CA bundle (missing or not readable)")

    def context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl_context(self.tls, self.environ)
        return self._ssl

    def route(self, scheme: str, host: str, port: int) -> tuple[Any, str | None]:
        """(the origin's pool or its proxy's manager, the proxy's shown origin or None), decided once per origin."""
        key = (scheme, host, port)
        found = self._routes.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._routes.get(key)
            if found is None:
                proxy = proxy_for(scheme, host, port, self.environ)
                if proxy is None:
                    found = (self._direct_pool(key), None)
                else:
                    found = (self._proxy_manager(proxy), _origin_of(proxy))
                self._routes[key] = found
        return found

    def _direct_pool(self, key: tuple[str, str, int]) -> OriginPool:
        """A new direct origin's pool (under the lock); past `_DIRECT_ORIGINS` of them, the least recently
        used one is retired (its idle connections closed), as urllib3's PoolManager retired its pools."""
        if len(self._direct) >= _DIRECT_ORIGINS:
            oldest = min(self._direct, key=lambda origin: self._direct[origin].last_used)
            self._direct.pop(oldest).close()
            self._routes.pop(oldest, None)
        scheme, host, port = key
        make = direct_connection(scheme, host, port, self.context() if scheme == "https" else None)
        pool = self._direct[key] = OriginPool(make, self.size, f"{scheme}://{host}:{port}")
        return pool

    def _proxy_manager(self, proxy: str) -> urllib3.ProxyManager:
        import urllib3

        manager = self._proxies.get(proxy)
        if manager is None:
            parts = urlsplit(proxy)
            headers = None
            if parts.username is not None or parts.password is not None:
                credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
                self.proxy_secrets += [s for s in (parts.password, unquote(parts.password or "")) if s]
                headers = urllib3.make_headers(proxy_basic_auth=credentials)
            bare = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
            manager = urllib3.ProxyManager(bare, num_pools=8, maxsize=self.size, proxy_headers=headers,
                                           ssl_context=self.context(), proxy_ssl_context=self.context())  # rare: eager
            manager.pool_classes_by_scheme = pool_classes()
            self._proxies[proxy] = manager
        return manager

    def send(self, method: str, url: str, origin: tuple[str, str, int], path: str, data: bytes | None,
             headers: Mapping[str, str], timeout_s: float, max_bytes: int = MAX_REPLY_BYTES) -> RawReply:
        """One exchange, the whole body read (at most `max_bytes`, decoded by us within that bound) within
        `timeout_s` from the start; urllib3's own retries, redirects and decompression off (ours decide)."""
        import urllib3

        deadline = time.monotonic() + timeout_s  # the whole exchange, however the server paces it
        for fresh in (False, True):
            pool, proxy = self.route(*origin)
            try:
                if proxy is None:
                    return _exchange(pool, method, _request_target(path), data, headers, max_bytes, deadline)
                return self._via_proxy(pool, method, url, origin, path, data, headers, max_bytes, deadline)
            except (PoolClosed, urllib3.exceptions.ClosedPoolError):
                if fresh:  # closed again: the transport is being closed while in use
                    raise
                with self._lock:  # this origin's pool was retired or closed: a fresh one
                    self._routes.pop(origin, None)
        raise AssertionError("unreachable")

    def _via_proxy(self, manager: urllib3.ProxyManager, method: str, url: str, origin: tuple[str, str, int],
                   path: str, data: bytes | None, headers: Mapping[str, str], max_bytes: int,
                   deadline: float) -> RawReply:
        """One exchange through a proxy, on urllib3's pools (a forwarded request, or a CONNECT tunnel)."""
        # a forwarding proxy needs the absolute URL, never with the userinfo (sent as Authorization)
        target = f"{origin[0]}://{urlsplit(url).netloc.rpartition('@')[2]}{path}"
        reply = None
        try:
            # Connect, request, reply head and body within the deadline (see _Watchdog), on sockets
            # without a timeout: CPython polls before each send and read on a socket with one.
            with ExchangeDeadline(deadline):
                reply = manager.urlopen(method, target, body=data, headers=headers, retries=_no_retries(),
                                        redirect=False, timeout=_no_socket_timeout(), preload_content=False,
                                        decode_content=False, assert_same_host=False)
                content = _body(reply, max_bytes, deadline)
        finally:
            if reply is not None:
                reply.release_conn()  # after the watch ended: no shutdown can follow
        content = _decoded(content, reply.headers.get("Content-Encoding"), max_bytes)
        return RawReply(reply.status, reply.headers, content)

    def close(self) -> None:
        """Close every idle connection (a connection in use is closed when its request ends); the transport
        stays usable, with new pools."""
        with self._lock:
            pools, managers = list(self._direct.values()), list(self._proxies.values())
            self._direct, self._proxies, self._routes = {}, {}, {}
        for pool in pools:
            pool.close()
        for manager in managers:
            manager.clear()


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


_SPLIT_CACHE: dict[str, tuple[str, str, int, str]] = {}


def split_url(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path?query) of an http(s) URL; ValueError otherwise."""
    found = _SPLIT_CACHE.get(url)
    if found is not None:
        return found
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    found = (parts.scheme, parts.hostname, port, path)
    if len(_SPLIT_CACHE) < 256:
        _SPLIT_CACHE[url] = found
    return found
