"""urllib3's connections, made to keep a deadline (the name resolved and the socket connected within the
exchange's time, and a watchdog that shuts the socket down when the reply is still arriving at it), and
`OriginPool`, the kept-alive connections to one direct origin, with `RequestHeads` (evalgate/infra/net/heads.py),
the heads of the requests sent to it.

THE one override of urllib3's private API lives here (`Watched._new_conn`: urllib3 makes each connection's
socket there). pyproject pins urllib3 `>=2.0,<3`; tests/test_net_transport.py::
test_urllib3_still_makes_its_sockets_in_new_conn fails on a urllib3 that moves it. Everything else used from
urllib3 is public: its connection classes and their `connect`/`request`/`getresponse`/`is_connected`/
`is_closed`/`close` (a direct origin's request head is made by the http.client `request` urllib3's wraps, its
reply read by http.client's reply, whose `begin` is copied here with its header parse replaced: `FinalResponse`),
`HTTPResponse`, its pools and managers (proxies only), `parse_url` and its exceptions.
`direct_connection` gives a connection the arguments urllib3 2.x's `HTTP(S)ConnectionPool._new_conn` gives
it for a direct origin (see there): read that again when raising urllib3's pin."""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import itertools
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from evalgate.infra.net.heads import RequestHeads, head_lines, read_headers

if TYPE_CHECKING:
    import http.client
    import ssl

    from evalgate.infra.net.whole_reply import Received

log = logging.getLogger(__name__)

# Linux's TCP_INFO (its first byte the connection's state) and SO_MEMINFO (its first word the memory the
# socket's received and unread bytes hold: 0 when none wait): getsockopt never gives up the GIL, where a
# poll or an ioctl (FIONREAD) does.
_TCP_INFO = getattr(socket, "TCP_INFO", 11)
_SO_MEMINFO = getattr(socket, "SO_MEMINFO", 55)
_TCP_ESTABLISHED = 1
_TCP_STATE_READABLE = sys.platform == "linux"


class QuietSocket(socket.socket):
    """A TCP socket whose `settimeout` to the value it already has does nothing. urllib3 sets a kept-alive
    connection's socket timeout twice a request (sending, then reading the reply), to the same value here
    (none: the watchdog keeps the deadline); CPython makes that a system call that gives up the GIL, and
    at 64 threads each is a wait to get it back."""

    def settimeout(self, value: float | None) -> None:
        if value is None and self.gettimeout() is None:
            return
        super().settimeout(value)


_PLAIN_TCP = (socket.socket, QuietSocket)  # not wrapped in TLS: its TCP state is the connection's



class _Watchdog:
    """Shuts down the TCP socket of an exchange still under way at its deadline.

    A socket timeout bounds each read, not the exchange: a server sending a byte just inside each one
    holds the request for ~100 header lines x 64 KiB x timeout_s, that is for ever. A shutdown() from
    another thread makes the blocked read (or send) return at once, whatever TLS or tunnel sits on the
    socket; so exchanges run on sockets without a timeout (CPython polls before every send and read
    on a socket with one, a GIL hand-off each), this the one bound from connect to the body. One daemon
    thread for the process, started with the first exchange (a thread per request costs ~166 us). Only
    exchanges in flight are held (a set, not a heap of every deadline ever set), so it stays as small
    as the concurrency; it wakes at the earliest deadline.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # taken as itself where nothing waits: a Condition's `with` is two calls more
        self._cond = threading.Condition(self._lock)
        self._active: set[ExchangeDeadline] = set()
        self._wake = float("inf")  # when the thread looks next; an earlier deadline wakes it
        self._thread: threading.Thread | None = None
        self.local = threading.local()  # the exchange this thread is sending, set by `ExchangeDeadline`

    def attach(self, sock: socket.socket) -> None:
        """Watch `sock` for the exchange the calling thread is sending (from the connection's hooks)."""
        exchange = getattr(self.local, "exchange", None)
        if exchange is None:
            return
        with self._lock:
            exchange.sock = sock
            self._active.add(exchange)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="evalgate-deadlines", daemon=True)
                self._thread.start()
            if exchange.deadline < self._wake:
                self._wake = exchange.deadline
                self._cond.notify()

    def in_flight(self) -> int:
        """How many exchanges are watched now (none once every reply has been read)."""
        with self._lock:
            return len(self._active)

    def end(self, exchange: ExchangeDeadline) -> bool:
        """Stop watching; True when the deadline shut the socket down first. Under the lock, so once
        this returns no shutdown can follow (the connection may go back to the pool)."""
        self.local.exchange = None
        with self._lock:
            self._active.discard(exchange)
            sock, exchange.sock = exchange.sock, None
            fired = exchange.fired
        if exchange.holds and sock is not None:
            sock.close()
        return fired

    def hold(self, sock: socket.socket) -> bool:
        """Whether `sock` is the watched socket of the exchange the calling thread is reading; it is then
        closed when that exchange ends, not now. http.client closes a connection as soon as a reply's head
        says `Connection: close`, its body still to read: closing the watched handle then would leave that
        body's reads with no deadline (a server that stalls after the head would hold the request for ever)."""
        exchange = getattr(self.local, "exchange", None)
        if exchange is None or exchange.sock is not sock:
            return False
        exchange.holds = True
        return True

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                wake = float("inf")
                for exchange in list(self._active):
                    if exchange.deadline <= now:
                        self._active.discard(exchange)
                        exchange.fired = True
                        with contextlib.suppress(OSError):  # already closed: nothing left to stop
                            exchange.sock.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]
                    else:
                        wake = min(wake, exchange.deadline)
                self._wake = wake
                self._cond.wait(None if wake == float("inf") else wake - now)


WATCHDOG = _Watchdog()


class ExchangeDeadline:
    """One attempt's deadline, watched from the first socket it gets until its reply's body is read. An
    exchange the watchdog cut off is a timeout, whatever the read in progress made of it (an error, or an
    EOF that ended a body sent without a length)."""

    __slots__ = ("deadline", "fired", "holds", "sock")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.sock: socket.socket | None = None
        self.fired = False
        self.holds = False  # the watched socket is the exchange's to close (`_Watchdog.hold`)

    def __enter__(self) -> ExchangeDeadline:
        WATCHDOG.local.exchange = self
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        # A shut-down socket surfaces as whatever the read in progress makes of an EOF (a closed
        # connection, a TLS error, headers or a body cut short): past the deadline, it is our timeout.
        if WATCHDOG.end(self) and (kind is None or issubclass(kind, Exception)):
            raise TimeoutError("the reply was still arriving at the deadline") from None


class DnsTimeout(TimeoutError):
    """A host name not resolved by the exchange's deadline."""


class _Lookup:
    __slots__ = ("addresses", "done", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.addresses: list[Any] = []
        self.error: OSError | None = None


class _Resolver:
    """Host names resolved within an exchange's deadline.

    getaddrinfo has no timeout: glibc waits resolv.conf's `timeout` x `attempts` per name server, and
    longer for a stalled NSS module. So it runs in a daemon thread that the exchange stops waiting for
    at its deadline. Lookups of one name in flight together share that thread: a dead resolver holds
    one thread per name, however many requests wait on it. Nothing is cached: the next connection
    asks again, as every resolver user expects (TTLs are the resolver's business)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, int, int], _Lookup] = {}

    def resolve(self, host: str, port: int, family: int, deadline: float) -> list[Any]:
        if _is_ip_literal(host):  # no resolver asked: a literal resolves at once
            return socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
        key = (host, port, family)
        with self._lock:
            lookup = self._pending.get(key)
            if lookup is None:
                lookup = self._pending[key] = _Lookup()
                threading.Thread(target=self._lookup, args=(key, lookup), name="evalgate-dns", daemon=True).start()
        if not lookup.done.wait(max(0.0, deadline - time.monotonic())):
            raise DnsTimeout(f"no answer resolving {host}")
        if lookup.error is not None:  # a fresh exception per waiter: one object raised in many threads tangles
            raise type(lookup.error)(*lookup.error.args)
        return lookup.addresses

    def _lookup(self, key: tuple[str, int, int], lookup: _Lookup) -> None:
        try:
            lookup.addresses = socket.getaddrinfo(key[0], key[1], key[2], socket.SOCK_STREAM)
        except OSError as exc:  # socket.gaierror included
            lookup.error = exc
        except Exception as exc:  # a bad IDNA label, say: a resolution failure all the same
            lookup.error = socket.gaierror(socket.EAI_NONAME, f"{type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self._pending.pop(key, None)
            lookup.done.set()


_RESOLVER = _Resolver()


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.partition("%")[0])  # an IPv6 literal may carry a zone (fe80::1%eth0)
    except ValueError:
        return False
    return True


def _connect_within(conn: Any, deadline: float) -> socket.socket:
    """urllib3's `HTTPConnection._new_conn`, with the name resolved and every address tried within
    `deadline`: urllib3 resolves without a bound and gives each address the whole connect timeout."""
    from urllib3.exceptions import ConnectTimeoutError, LocationParseError, NameResolutionError, NewConnectionError
    from urllib3.util.connection import allowed_gai_family

    host = conn.dns_name  # as given, a trailing dot kept: it matters to the resolver (`Watched.__init__`)
    try:
        host.encode("idna")
    except UnicodeError:
        raise LocationParseError(f"'{host}', label empty or too long") from None
    limit = conn.timeout if isinstance(conn.timeout, int | float) else None
    try:
        error: OSError | None = None
        for family, kind, proto, _, address in _RESOLVER.resolve(host, conn.port, allowed_gai_family(), deadline):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the deadline passed while connecting")
            sock = QuietSocket(family, kind, proto)
            try:
                for option in conn.socket_options or ():  # what urllib3 sets (TCP_NODELAY), as it would
                    sock.setsockopt(*option)
                sock.settimeout(left if limit is None else min(limit, left))
                if conn.source_address:
                    sock.bind(conn.source_address)
                sock.connect(address)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            sys.audit("http.client.connect", conn, conn.host, conn.port)
            return sock
        raise error or OSError("getaddrinfo returned no address")
    except socket.gaierror as exc:
        raise NameResolutionError(conn.host, conn, exc) from exc
    except DnsTimeout as exc:
        raise ConnectTimeoutError(conn, f"Resolving {conn.host} timed out") from exc
    except TimeoutError as exc:
        raise ConnectTimeoutError(conn, f"Connection to {conn.host} timed out") from exc
    except OSError as exc:
        raise NewConnectionError(conn, f"Failed to establish a new connection: {exc}") from exc


@functools.cache
def final_response_class() -> type[http.client.HTTPResponse]:
    """http.client's response, reading past interim replies to the final one."""
    import http.client

    class FinalResponse(http.client.HTTPResponse):
        # http.client skips only a `100 Continue`: a `103 Early Hints` (or `102 Processing`) was taken for
        # the reply, and the real one, left on the kept-alive connection, read by the next request as its own
        def _read_status(self) -> tuple[str, int, str]:
            while True:
                version, status, reason = super()._read_status()  # type: ignore[misc]
                if not 101 < status < 200:
                    return version, status, reason
                http.client.parse_headers(self.fp)  # an interim reply's headers: read past, none kept

        # http.client's `begin` (the same in Python 3.10 to 3.13: tests/test_net_exchange.py fails on another),
        # but for its headers, read by `read_headers`: http.client's parse without the email parser's cost for
        # a head of plain lines (two thirds of reading a reply's head). Its debug output left out (never on).
        def begin(self) -> None:
            if self.headers is not None:
                return
            while True:
                version, status, reason = self._read_status()
                if status != http.client.CONTINUE:
                    break
                head_lines(self.fp)  # a `100 Continue`'s headers: read past
            self.code = self.status = status
            self.reason = reason.strip()
            if version in ("HTTP/1.0", "HTTP/0.9"):
                self.version = 10
            elif version.startswith("HTTP/1."):
                self.version = 11
            else:
                raise http.client.UnknownProtocol(version)
            self.headers = self.msg = read_headers(self.fp)
            encoding = self.headers.get("transfer-encoding")
            self.chunked = bool(encoding) and encoding.lower() == "chunked"
            if self.chunked:
                self.chunk_left = None
            self.will_close = self._check_close()
            self.length = None
            length = self.headers.get("content-length")
            if length and not self.chunked:
                try:
                    self.length = int(length)
                except ValueError:
                    self.length = None
                else:
                    if self.length < 0:
                        self.length = None
            no_body = status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED) or 100 <= status < 200
            if no_body or self._method == "HEAD":
                self.length = 0
            if not self.will_close and not self.chunked and self.length is None:
                self.will_close = True

    return FinalResponse


@functools.cache
def _urllib3_user_agent() -> str:
    """What urllib3 sends as User-Agent when a request has none."""
    import urllib3

    return f"python-urllib3/{urllib3.__version__}"  # type: ignore[attr-defined]


class Watched:
    """urllib3's connection (the class after it), reporting each exchange's socket to the watchdog and sending
    a request's head with its body."""

    # A dup of the TCP socket, kept for the connection's life: one handle under whatever wraps it
    # (TLS detaches the socket it wraps; SSLSocket.shutdown would drop its state mid-read).
    watch_sock: socket.socket | None = None

    def __init__(self, host: str, *args: Any, **kwargs: Any) -> None:
        self.dns_name = host.strip("[]")  # the name to resolve: `host` drops a trailing dot
        super().__init__(host, *args, **kwargs)  # type: ignore[call-arg]

    # THE override of urllib3's private API (docs/architecture.md, "net"): `HTTPConnection.connect`
    # makes its socket in `_new_conn`, for http, https and tunnels alike. pyproject pins urllib3 below 3;
    # tests/test_net_transport.py::test_urllib3_still_makes_its_sockets_in_new_conn fails if it moves.
    def _new_conn(self) -> socket.socket:
        # Resolve and connect within the exchange's deadline: the watchdog holds no socket before.
        exchange = getattr(WATCHDOG.local, "exchange", None)
        sock = super()._new_conn() if exchange is None else _connect_within(self, exchange.deadline)  # type: ignore[misc]
        self.watch_sock = sock.dup()
        WATCHDOG.attach(self.watch_sock)
        return sock

    # The request's head, held back from `endheaders` to go out with the body's first chunk: one
    # segment and one system call per request (as http.client sends a bytes body), where urllib3
    # sends two; at 64 threads each send gives up the GIL and waits to get it back.
    held: bytes | None = None

    def request(self, *args: Any, **kwargs: Any) -> None:
        """urllib3's request (through a proxy's pool)."""
        self._sending(super().request, *args, **kwargs)  # type: ignore[misc]

    # Set on a connection made only to learn a request's head (`head_for`): what it would send, never sent.
    kept: list[bytes] | None = None

    def head_for(self, method: str, target: str, body: bytes | None, headers: Mapping[str, str]) -> bytes:
        """The head http.client's `request`, which urllib3's wraps, sends for this request on this connection
        (urllib3's checks of the method and headers; Host, Accept-Encoding and Content-Length as urllib3 sets
        them; urllib3's User-Agent when the caller gives none), made and kept, not sent: call it on a
        connection that is never connected. A request it refuses raises here, as it did when sent."""
        import http.client

        if "User-Agent" not in headers and not any(name.lower() == "user-agent" for name in headers):
            headers = {"User-Agent": _urllib3_user_agent(), **headers}
        self.kept = []
        http.client.HTTPConnection.request(self, method, target, body, headers)  # type: ignore[arg-type]
        made = b"".join(self.kept)
        return made[:len(made) - len(body)] if body else made

    def send_request(self, data: bytes) -> None:
        """A request's bytes (its head, from `head_for`, and its body) sent in one system call, the socket watched
        (a kept-alive connection's: a new one attaches in _new_conn) and, as urllib3's request did, without the
        connect's timeout (None: the watchdog keeps the deadline), else CPython polls at every send and read."""
        if self.watch_sock is not None:
            WATCHDOG.attach(self.watch_sock)
        sock = self.sock  # type: ignore[attr-defined]
        sock.settimeout(getattr(self, "timeout", None))
        sock.sendall(data)

    def reply_head(self, method: str, received: Received) -> http.client.HTTPResponse:
        """The reply to the request sent, its head read as http.client's `getresponse` reads it (a reply that
        says `Connection: close` closes the connection, its body still to read from the reply), without the
        request-and-reply states http.client keeps for a request it sent itself; `received`: what `read_whole`
        read of it, read first."""
        sock = received.socket_for(self.sock)  # type: ignore[attr-defined]
        reply: http.client.HTTPResponse = self.response_class(sock, method=method)  # type: ignore[attr-defined]
        try:
            try:
                reply.begin()
            except ConnectionError:
                self.close()
                raise
            if reply.will_close:
                self.close()
        except BaseException:
            reply.close()
            raise
        return reply

    def _sending(self, request: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        """`request(...)`, the socket watched (a kept-alive connection's: a new one attaches in _new_conn)
        and the head sent with the body."""
        if self.watch_sock is not None:
            WATCHDOG.attach(self.watch_sock)
        try:
            request(*args, **kwargs)
        except BaseException:
            self.held = None
            raise
        held, self.held = self.held, None
        if held:  # no body came: the head alone
            super().send(held)  # type: ignore[misc]

    def endheaders(self, *args: Any, **kwargs: Any) -> None:
        self.held = b""  # the next send is the head: held
        super().endheaders(*args, **kwargs)  # type: ignore[misc]

    def send(self, data: Any) -> None:
        if self.kept is not None:
            self.kept.append(bytes(data))
            return
        held = self.held
        if held is not None and data.__class__ is bytes:
            if not held:
                self.held = data
                return
            self.held = None
            data = held + data
        super().send(data)  # type: ignore[misc]

    # urllib3 asks this of a kept-alive connection before reusing it; its own answer polls the socket, a
    # system call that gives up the GIL (at 64 threads, a wait to get it back per request). On Linux a
    # plain TCP socket tells the same without one: closed by the peer (FIN or RST: not ESTABLISHED) or
    # holding bytes no request asked for (readable, as urllib3 counts it) is not connected.
    @property
    def is_connected(self) -> bool:
        sock = getattr(self, "sock", None)
        if not _TCP_STATE_READABLE or sock is None or sock.__class__ not in _PLAIN_TCP:  # TLS: urllib3's
            return bool(super().is_connected)  # type: ignore[misc]
        try:
            state = sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, 1)[0]
        except OSError:
            return False
        try:
            unread = sock.getsockopt(socket.SOL_SOCKET, _SO_MEMINFO, 4)  # rmem_alloc: a byte order's zero is zero
        except OSError:  # a kernel before 4.6, without SO_MEMINFO: urllib3's answer
            return bool(super().is_connected)  # type: ignore[misc]
        return state == _TCP_ESTABLISHED and unread == b"\0\0\0\0"

    def close(self) -> None:
        try:
            super().close()  # type: ignore[misc]
        finally:
            sock, self.watch_sock = self.watch_sock, None
            if sock is not None and not WATCHDOG.hold(sock):  # a reply still being read: closed when it ends
                sock.close()


@functools.cache
def connection_classes() -> dict[str, Any]:
    """urllib3's connections for http and https, reporting each exchange's socket to the watchdog."""
    from urllib3.connection import HTTPConnection, HTTPSConnection

    class WatchedHTTP(Watched, HTTPConnection):
        response_class = final_response_class()

    class WatchedHTTPS(Watched, HTTPSConnection):
        response_class = final_response_class()

    return {"http": WatchedHTTP, "https": WatchedHTTPS}


def pool_classes() -> dict[str, Any]:
    """urllib3's pools on those connections: a proxy's (forwarding, and CONNECT tunnels) are urllib3's."""
    import urllib3

    classes = connection_classes()

    class HTTPPool(urllib3.HTTPConnectionPool):
        ConnectionCls = classes["http"]

    class HTTPSPool(urllib3.HTTPSConnectionPool):
        ConnectionCls = classes["https"]

    return {"http": HTTPPool, "https": HTTPSPool}


BLOCKSIZE = 16384  # the read buffer urllib3's PoolManager gives its pools' connections (its `blocksize`)


def direct_connection(scheme: str, host: str, port: int, context: ssl.SSLContext | None) -> Callable[[], Any]:
    """What makes a connection to a direct origin, as urllib3 2.x's `HTTPConnectionPool._new_conn` (http)
    and `HTTPSConnectionPool._new_conn` (https) made it under our PoolManager: the same class and host (a
    non-ASCII name IDNA-encoded by urllib3's own `parse_url`), no socket timeout (the watchdog keeps the
    deadline), the PoolManager's `blocksize`; over https the verifying `context` (certificate and host name
    checked, SNI sent: urllib3 takes the server's name from `host` when no `server_hostname` is given), the
    pool's other TLS arguments being urllib3's defaults (None) in both."""
    if not host.isascii():
        from urllib3.util import parse_url

        host = parse_url(f"{scheme}://{host}").host or host
    cls = connection_classes()[scheme]
    if scheme == "https":
        return functools.partial(cls, host, port, timeout=None, blocksize=BLOCKSIZE, ssl_context=context)
    return functools.partial(cls, host, port, timeout=None, blocksize=BLOCKSIZE)


class PoolClosed(ConnectionError):
    """No connection to take: the origin's pool was closed (the transport closed, or the origin retired)."""


_USES = itertools.count()  # a stamp per take: the least recently used pool is the one retired


class OriginPool:
    """The kept-alive connections to one direct origin: a LIFO stack of idle ones under one lock.

    What urllib3's `HTTPConnectionPool.urlopen` did for evalgate (its retries and redirects off), without
    what evalgate's requests never use: the URL parsed per call, Retry and Timeout objects, a queue whose
    every get and put takes locks that 64 threads contend for. A request takes the connection used last
    (the hottest) or makes one; it comes back only when its reply was read to the end and allows keep-alive
    (`give`), else it is closed. A connection the server closed while idle (its keep-alive timeout) is
    closed when taken and the next one tried: no request is sent on it. At most `size` are kept idle (the
    client's concurrency), so a burst past it closes the extra ones as they come back; connections open at
    once are as many as requests in flight."""

    __slots__ = ("_idle", "_lock", "_make", "closed", "heads", "last_used", "origin", "size")

    def __init__(self, make: Callable[[], Any], size: int, origin: str) -> None:
        self._make = make
        self.size = size
        self.origin = origin  # as the debug log shows it
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self.closed = False
        self.last_used = next(_USES)
        self.heads = RequestHeads(make)

    def take(self) -> Any:
        """An idle connection still connected, or a new one (not yet connected); PoolClosed once closed."""
        while True:
            with self._lock:
                if self.closed:
                    raise PoolClosed("the connection pool was closed")
                self.last_used = next(_USES)
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                log.debug("new connection to %s", self.origin)
                return self._make()
            if conn.is_connected:
                return conn
            conn.close()

    def give(self, conn: Any) -> None:
        """Keep `conn` for the next request (its reply read to the end), or close it: the pool is closed or full."""
        with self._lock:
            if not self.closed and len(self._idle) < self.size:
                self._idle.append(conn)
                return
        conn.close()

    def idle(self) -> int:
        """How many connections wait for a request."""
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        """Close every idle connection; one in use is closed when it comes back."""
        with self._lock:
            self.closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

