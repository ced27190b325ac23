"""A fake agent service and a fake OpenAI-compatible chat-completions server, on 127.0.0.1.

Used by the tests (as a thread in the test process) and by bench/http.py (as a subprocess:
`python tests/fake_agent.py --delay 0.02` prints `PORT <n>`, then serves until killed).

Routes:
- `POST /agent` (any other path but the chat one): body `{"input": ...}` (or `{"messages": [...]}`);
  replies `{"output": {"text": ..., "tool_calls": [...]}, "usage": ..., "session": ...}`.
- `POST /v1/chat/completions`: an OpenAI chat completion; asks for `get_weather` when tools are
  offered and the last user message names a city.

Faults, injected per input (the request's `input`, or the last user message):
`server.faults["some input"] = ["500", "429:1", "ok"]` is consumed one action per request for that
input; then replies are normal. Actions: `500`, `503`, `400`, `429` or `429:<retry-after>`, `hang`
(no reply until the client gives up), `reset` (headers and half a body, then a TCP reset),
`malformed` (200 with broken JSON), `deep` (200 with JSON nested 100,000 deep), `extra:<JSON object>`
(a normal reply with these keys set, e.g. `extra:{"usage": {"prompt_tokens": NaN}}`), `slow:<seconds>`,
`redirect:<3xx>` (to `server.redirect_to`), `early_hints` / `switching` (a `103 Early Hints` / a
`101 Switching Protocols`, then after 0.2 s the normal reply),
`gzip` (a normal reply, gzip-compressed), `bomb` (a small gzip reply that inflates to 64 MiB), `brotli`
(a reply in an encoding evalgate does not decode), `huge` (a 40 MiB reply), `trickle` (a reply
that never ends: a byte every 0.1 s), `trickle_unsized` (the same with no Content-Length: a body that ends when
the connection closes), `close_after` (a normal reply,
then the connection closed without a word), `trickle_headers` (a status line and headers that never end:
a byte every 0.1 s, so no single socket read ever times out), `echo` / `echo_escaped` (the same, each
character a JSON `\\u` escape) / `400echo` /
`401pad` (a reply, a 400, or a 401 after 270 bytes of padding, quoting the request's Authorization
and X-Api-Key headers: a leaky agent). `server.default_fault` applies to every request without a queued action.
`server.max_in_flight = n` answers 429 (Retry-After: `server.retry_after`) to a request arriving
while n are already being served.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import json
import socket
import struct
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CITIES = ("Brooklyn", "Paris", "Tokyo", "London", "Cairo", "Oslo", "Lima", "Sydney")
HANG_S = 10.0  # a "hang" sleeps this long at most, so a server thread never outlives a test by much


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, port: int = 0, delay_s: float = 0.0, host: str = "127.0.0.1") -> None:
        super().__init__((host, port), Handler)  # a loopback address: 127.0.0.1 unless a test needs another
        self.host = host
        self.delay_s = delay_s
        self.faults: dict[str, list[str]] = {}
        self.default_fault: str | None = None
        self.max_in_flight: int | None = None
        self.retry_after: float = 0.05
        self.redirect_to = "https://agent.example/v2/agent"
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []  # {path, headers, body}
        self.replied_at: dict[str, float] = {}  # request key (its input) -> time.monotonic() of the reply
        self.in_flight = 0
        self.peak_in_flight = 0
        self.count = 0
        self.connections = 0  # accepted, ever
        self.open_connections = 0  # accepted and not yet shut down by the server (counted once it is)
        self.keep_log = True
        self.stopping = threading.Event()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.server_address[1]}"

    def start(self) -> FakeServer:
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.lock:
            self.connections += 1
            self.open_connections += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        # counted here, after the socket is shut down: the handler's `finish` comes before, and a client
        # told the connection was closed there could still send on it
        try:
            super().shutdown_request(request)
        finally:
            with self.lock:
                self.open_connections -= 1

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()

    def next_fault(self, key: str) -> str | None:
        with self.lock:
            queue = self.faults.get(key)
            if queue:
                return queue.pop(0)
        return self.default_fault

    def requests_for(self, key: str) -> int:
        with self.lock:
            return sum(1 for r in self.requests if request_key(r["body"]) == key)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def request_key(body: Any) -> str:
    """The input a request is about: `input`, or the last user message's content."""
    if isinstance(body, dict):
        if "input" in body:
            value = body["input"]
            return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        messages = body.get("messages")
        if isinstance(messages, list):
            for message in reversed(messages):
                if isinstance(message, dict) and message.get("role") == "user":
                    content = message.get("content")
                    return content if isinstance(content, str) else json.dumps(content)
    return ""


def agent_reply(body: Any) -> dict[str, Any]:
    """A deterministic weather agent: finds a city, 'calls' get_weather, answers."""
    key = request_key(body)
    city = next((c for c in CITIES if c.lower() in key.lower()), None)
    turn = len(body.get("messages", [])) // 2 if isinstance(body, dict) else 0
    calls = [{"name": "get_weather", "args": {"city": city}, "result": {"temp_f": 72}}] if city else []
    text = f"It is sunny in {city}, 72F." if city else f"You said: {key}"
    session = body.get("session") if isinstance(body, dict) else None
    return {
        "output": {"text": text, "tool_calls": calls},
        "usage": {"prompt_tokens": len(key.split()), "completion_tokens": len(text.split())},
        "session": session or f"s-{zlib.crc32(key.encode('utf-8', 'surrogatepass')) % 10_000}",
        "turn": turn,
    }


@functools.cache
def gzip_bomb() -> bytes:
    """About 64 KiB of gzip that inflates to a 64 MiB JSON reply."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(b'{"output": {"text": "')]
    parts += [packer.compress(b" " * 2**20) for _ in range(64)]
    parts += [packer.compress(b'"}}'), packer.flush()]
    return b"".join(parts)


def chat_reply(body: Any) -> dict[str, Any]:
    """A deterministic chat completion; tool calls when tools are offered and a city is named."""
    key = request_key(body)
    model = body.get("model", "fake") if isinstance(body, dict) else "fake"
    city = next((c for c in CITIES if c.lower() in key.lower()), None)
    message: dict[str, Any] = {"role": "assistant", "content": f"You said: {key}"}
    if city and isinstance(body, dict) and body.get("tools"):
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
            }],
        }
    messages = body.get("messages", []) if isinstance(body, dict) else []
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict))
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 10, "total_tokens": prompt_tokens + 10},
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server: FakeServer

    def setup(self) -> None:
        super().setup()
        # No Nagle: otherwise small replies wait for the client's delayed ACK (40 ms stalls).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.do_POST()

    def do_PUT(self) -> None:
        self.do_POST()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        server = self.server
        with server.lock:
            server.count += 1
            if server.keep_log:
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            server.in_flight += 1
            server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
            over = server.max_in_flight is not None and server.in_flight > server.max_in_flight
        try:
            if over:
                self.reply(429, {"error": "rate limited"}, {"Retry-After": f"{server.retry_after:g}"})
                return
            self.serve(body)
        finally:
            with server.lock:
                server.in_flight -= 1
                if server.keep_log:
                    server.replied_at[request_key(body)] = time.monotonic()

    def serve(self, body: Any) -> None:
        server = self.server
        fault = server.next_fault(request_key(body))
        if fault and fault.startswith("slow:"):
            time.sleep(float(fault.split(":", 1)[1]))
            fault = None
        if server.delay_s:
            time.sleep(server.delay_s)
        if fault is None or fault == "ok" or fault.startswith("extra:"):
            reply = chat_reply(body) if self.path.rstrip("/").endswith("/chat/completions") else agent_reply(body)
            if fault and fault.startswith("extra:"):
                reply.update(json.loads(fault.split(":", 1)[1]))  # NaN, Infinity and -1 welcome
            self.reply(200, reply)
        elif fault in ("500", "503", "400", "404"):
            self.reply(int(fault), {"error": f"injected {fault}"})
        elif fault.startswith("429"):
            after = fault.split(":", 1)[1] if ":" in fault else None
            self.reply(429, {"error": "slow down"}, {"Retry-After": after} if after else {})
        elif fault == "close_after":  # a normal reply, then the connection closed (an idle keep-alive timeout)
            self.reply(200, agent_reply(body))
            self.close_connection = True
        elif fault == "hang":
            server.stopping.wait(HANG_S)
            self.close_connection = True
        elif fault == "reset":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"out")
            self.wfile.flush()
            # SO_LINGER 0: close sends a TCP RST, the client sees a reset mid-response
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
        elif fault in ("echo", "echo_escaped", "400echo", "401pad"):  # an agent that leaks what it was sent
            leaked = f"I got {self.headers.get('Authorization')} and {self.headers.get('X-Api-Key')}"
            if fault == "echo":
                self.reply(200, {"output": {"text": leaked, "tool_calls": []}})
            elif fault == "echo_escaped":  # every character a JSON escape, as `/` is in PHP's `\/`
                escaped = "".join(f"\\u{ord(c):04x}" for c in leaked)
                self.reply_raw(200, ('{"output": {"text": "' + escaped + '", "tool_calls": []}}').encode())
            elif fault == "401pad":  # the header echoed after 270 bytes: straddles a 300-byte cut
                self.reply_raw(401, (" " * 270 + leaked).encode())
            else:
                self.reply(400, {"error": leaked})
        elif fault == "trickle":  # a reply that never ends: one byte every 0.1 s, until HANG_S
            self.trickle_body(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{")
        elif fault == "trickle_unsized":  # a reply with no length, ended by closing: one byte every 0.1 s
            self.trickle_body(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{")
        elif fault == "trickle_headers":  # the head never ends: one byte every 0.1 s, until HANG_S
            head = b"HTTP/1.1 200 OK\r\n" + b"X-Pad: slow\r\n" * 1000
            with contextlib.suppress(OSError):
                for byte in head[: int(HANG_S / 0.1)]:
                    if server.stopping.wait(0.1):
                        break
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
            self.close_connection = True
        elif fault.startswith("redirect:"):  # a load balancer sending http to https, or a moved endpoint
            self.reply(int(fault.split(":", 1)[1]), {"error": "moved"}, {"Location": server.redirect_to})
        elif fault in ("early_hints", "switching"):  # an interim 1xx reply first; the real one a moment later
            status = b"103 Early Hints\r\nLink: </a.css>; rel=preload" if fault == "early_hints" else b"101 Switching"
            self.wfile.write(b"HTTP/1.1 " + status + b"\r\n\r\n")
            self.wfile.flush()
            time.sleep(0.2)
            self.reply(200, agent_reply(body))
        elif fault == "malformed":
            self.reply_raw(200, b'{"output": {"text": "unterminated')
        elif fault == "deep":  # JSON nested past any recursion limit
            self.reply_raw(200, b"[" * 100_000 + b"]" * 100_000)
        elif fault == "gzip":
            self.reply_raw(200, gzip.compress(json.dumps(agent_reply(body)).encode()), {"Content-Encoding": "gzip"})
        elif fault == "bomb":
            self.reply_raw(200, gzip_bomb(), {"Content-Encoding": "gzip"})
        elif fault == "brotli":
            self.reply_raw(200, b"\x1b\x03\x00\xf8\xa5", {"Content-Encoding": "br"})
        elif fault == "huge":  # a runaway: 40 MiB of text in one JSON string
            size = 40 * 2**20
            self.wfile.write(f"HTTP/1.1 200 OK\r\nContent-Length: {size + 25}\r\n\r\n".encode())
            with contextlib.suppress(OSError):  # the client stops reading at its limit
                self.wfile.write(b'{"output": {"text": "')
                for _ in range(40):
                    self.wfile.write(b"x" * 2**20)
                self.wfile.write(b'"}}')
            self.close_connection = True
        else:
            raise ValueError(f"unknown fault {fault!r}")

    def reply(self, status: int, value: Any, headers: dict[str, str] | None = None) -> None:
        self.reply_raw(status, json.dumps(value).encode(), headers)

    def trickle_body(self, head: bytes) -> None:
        """`head`, then one byte every 0.1 s until HANG_S or the server stops; the connection closed after."""
        self.wfile.write(head)
        with contextlib.suppress(OSError):
            for _ in range(int(HANG_S / 0.1)):
                if self.server.stopping.wait(0.1):
                    break
                self.wfile.write(b" ")
                self.wfile.flush()
        self.close_connection = True

    def reply_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        # One write for head and body: one segment per reply.
        lines = [f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}",
                 "Content-Type: application/json", f"Content-Length: {len(data)}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
        self.wfile.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each reply")
    args = parser.parse_args()
    server = FakeServer(args.port, args.delay)
    server.keep_log = False
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
