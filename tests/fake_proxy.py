"""A forward proxy on 127.0.0.1 for tests: `CONNECT` tunnels (HTTPS) and absolute-form requests (HTTP).

It counts what passes through (`proxy.seen`: (method, target, Proxy-Authorization) per request) and
can refuse everyone without the right credentials (`proxy.require_auth = "Basic ..."`, a 407), as
a corporate proxy does. Upstream connections go only to 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import threading
from typing import Any

MAX_HEAD = 64 * 1024
TUNNEL_IDLE_S = 10.0


class FakeProxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[tuple[str, str, str]] = []
        self.require_auth: str | None = None
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def count(self, method: str | None = None) -> int:
        with self.lock:
            return sum(1 for m, _, _ in self.seen if method is None or m == method)

    def __enter__(self) -> FakeProxy:
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    """(the request head up to the blank line, whatever body bytes came with it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return b"", b""
        data += chunk
        if len(data) > MAX_HEAD:
            return b"", b""
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _upstream(host_port: str) -> socket.socket:
    host, _, port = host_port.rpartition(":")
    if host not in ("127.0.0.1", "localhost"):
        raise OSError(f"this test proxy only reaches loopback, not {host}")
    return socket.create_connection(("127.0.0.1", int(port)), timeout=10)


class _Handler(socketserver.BaseRequestHandler):
    server: FakeProxy

    def handle(self) -> None:
        client: socket.socket = self.request
        while True:  # keep-alive: one absolute-form request after another; CONNECT ends the loop
            head, rest = _read_head(client)
            if not head:
                return
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
            auth = headers.get("proxy-authorization", "")
            with self.server.lock:
                self.server.seen.append((method, target, auth))
            if self.server.require_auth is not None and auth != self.server.require_auth:
                client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n"
                               b"Content-Length: 0\r\n\r\n")
                continue
            if method == "CONNECT":
                self._tunnel(client, target)
                return
            if not self._forward(client, method, target, lines[1:], headers, rest):
                return

    def _tunnel(self, client: socket.socket, target: str) -> None:
        try:
            upstream = _upstream(target)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        with upstream:
            sockets = [client, upstream]
            while True:
                ready, _, _ = select.select(sockets, [], [], TUNNEL_IDLE_S)
                if not ready:
                    return
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (upstream if sock is client else client).sendall(data)

    def _forward(self, client: socket.socket, method: str, target: str, header_lines: list[str],
                 headers: dict[str, Any], rest: bytes) -> bool:
        """Relay one absolute-form request and its answer as it arrives; the upstream connection is
        closed after its answer."""
        if not target.startswith("http://"):
            client.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return False
        host_port, _, path = target[len("http://"):].partition("/")
        length = int(headers.get("content-length") or 0)
        body = rest
        while len(body) < length:
            chunk = client.recv(65536)
            if not chunk:
                return False
            body += chunk
        kept = [line for line in header_lines if line.split(":", 1)[0].strip().lower()
                not in ("proxy-authorization", "connection", "proxy-connection")]
        request = "\r\n".join([f"{method} /{path} HTTP/1.1", *kept, "Connection: close", "", ""]).encode("latin-1")
        try:
            upstream = _upstream(host_port if ":" in host_port else host_port + ":80")
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return True
        with upstream, contextlib.suppress(OSError):  # the client may give up first
            upstream.sendall(request + body[:length])
            while True:  # relayed as it comes, as real proxies do: a slow server stays slow
                chunk = upstream.recv(65536)
                if not chunk:
                    break
                client.sendall(chunk)
        return True
