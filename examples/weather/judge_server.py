"""A stand-in LLM judge for the demo: OpenAI-compatible, deterministic, offline, no API key.

evalgate starts it (`judge.serve` in evalgate.yaml) and stops it when the run ends. It prints its
base URL as its first line, and exits when its stdin closes, so it never outlives evalgate.

It only knows evalgate's `faithfulness` prompt, and judges like a very literal model: each sentence
of the answer is a claim; a claim with a number the tool results lack is "contradicted"; one whose
words (4+ letters) all appear in the tool results is "supported"; anything else "unsupported".
Replace `judge:` with a real model (see docs/scorers.md) to judge for real.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECTION = re.compile(r"<(\w+)(?: index=\"\d+\")?>\n(.*?)\n</\1>", re.DOTALL)


def words(text: str) -> set[str]:
    found = {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4}
    return found | set(re.findall(r"\d+", text))


def verdict(claim: str, evidence: str) -> str:
    if set(re.findall(r"\d+", claim)) - set(re.findall(r"\d+", evidence)):
        return "contradicted"
    return "supported" if words(claim) <= words(evidence) else "unsupported"


def judge(system: str, user: str) -> dict:
    if "`faithfulness` metric" not in system:
        raise ValueError("this demo judge only knows the faithfulness metric")
    sections: dict[str, str] = {}
    for tag, text in SECTION.findall(user):
        sections[tag] = sections.get(tag, "") + "\n" + text
    evidence = sections.get("tool_results", "") + sections.get("context", "")
    claims = [s for s in re.split(r"(?<=[.!?])\s+", sections.get("output", "").strip()) if s and not s.endswith("?")]
    return {"claims": [{"claim": c, "verdict": verdict(c, evidence), "reason": "word match"} for c in claims]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes: no delayed-ACK stall

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        messages = body["messages"]
        try:
            content = json.dumps(judge(messages[0]["content"], messages[1]["content"]))
            status, reply = 200, {
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": sum(len(m["content"].split()) for m in messages),
                          "completion_tokens": len(content.split())},
            }
        except (ValueError, KeyError, IndexError) as exc:
            status, reply = 400, {"error": {"message": str(exc)}}
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def exit_when_stdin_closes() -> None:
    sys.stdin.buffer.read()
    os._exit(0)


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()
