"""The agent under test, as a service: POST {"input": "..."} to /answer, get {"text": "..."} back.

A stand-in that works offline: start it (`python3 agent_server.py`) and leave it running while
`evalgate run` sends it the items; then point evalgate.yaml's `url` at your own agent instead.
"""

import contextlib
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CAPITALS = {"france": "Paris", "japan": "Tokyo", "kenya": "Nairobi", "peru": "Lima", "canada": "Ottawa"}
PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 8787


def answer(question: str) -> str:
    for country, capital in CAPITALS.items():
        if country in question.lower():
            return f"The capital of {country.title()} is {capital}."
    return "I do not know."


class Agent(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        body = json.dumps({"text": answer(str(request.get("input", "")))}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet: one line a request is noise here
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Agent)
    print(f"agent listening on http://127.0.0.1:{PORT}/answer (Ctrl-C stops it)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
