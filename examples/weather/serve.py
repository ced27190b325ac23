"""The demo weather agent as an HTTP service, for the `http` target (examples/weather/http.yaml).

    python serve.py            # serves http://127.0.0.1:8787/answer until Ctrl-C
    python serve.py --port 0   # any free port; the first line printed says which

POST /answer with {"question": "..."} returns the agent's run: {"text": ..., "tool_calls": [...]}.
Standard library only; loopback only.
"""

from __future__ import annotations

import argparse
import json
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agent import answer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: evalgate reuses one connection per worker

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
            status, reply = 200, answer(str(request["question"]))
        except (ValueError, KeyError, TypeError):
            status, reply = 400, {"error": 'send {"question": "..."}'}
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the demo weather agent on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8787)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"serving the weather agent on http://127.0.0.1:{server.server_address[1]}/answer", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
