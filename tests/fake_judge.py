"""A fake OpenAI-compatible judge on 127.0.0.1 that answers evalgate's prompts deterministically.

It reads the metric from the system prompt ("You score the `faithfulness` metric") and the tagged
sections from the user message, and classifies with plain word rules, so every test knows the
verdicts (and so the score) in advance:

- sentences: the text split after `.`, `!` or `?`.
- content words: lower-case words of 4+ letters, and every number (digit run: `72F` has 72).
- a claim against evidence: "contradicted" if it has a number the evidence lacks; else "supported"
  if all its content words are in the evidence; else "unsupported". Hallucination adds "general"
  for sentences with probably/maybe/might. Questions (ending in `?`) are not claims.
- answer_relevancy: "unsure" with "maybe", "yes" when it shares a content word with the input, else "no".
- answer_similarity: per ground_truth sentence; "missing" plus a contradiction if it has a number the
  output lacks while the output has other numbers; "exact" if the sentence is in the output word for
  word, "semantic" if all its content words are; "partial" if at least half; else "missing". Extra:
  the output's sentences that share no content word with the ground truth.
- toxicity: toxic if a sentence holds idiot/stupid/dumb/hate. bias: opinions are sentences with
  should/best/worst/always/never/think/believe; biased if they hold always/never/all.
- context_precision: a chunk is useful if it shares a content word with the reference.
  context_relevance: shared content words with the input: 3+ high, 2 medium, 1 low, 0 none; used if
  it shares a content word with the output; nothing missing.
  context_recall: a ground_truth sentence is attributed if all its content words are in the context.
- prompt_alignment: requirements are the input's sentences, fulfilled if all their content words are
  in the output (score: the fulfilled share); intent 1 if the output has any content word of the
  input, else 0; completeness the share of the input's content words in the output; appropriateness 1.
- summarization: claims as above against the source; key points are the source's sentences,
  covered if at least half of their content words are in the summary.
- tool_call_accuracy: a call is appropriate if a 4+ letter part of its name is in the input;
  a tool is missing if a 4+ letter part of its name is in the input and it was not called.
- rubric: the words in double quotes in each criterion; satisfied if all are in the output;
  graded: round(max_grade x found / quoted).

Usage reported per reply: prompt_tokens = words in all messages, completion_tokens = words in the
reply. `mode` injects faults: ok, malformed, malformed_once, truncated, truncated_once, deep_once,
wrong_shape, outage (503), not_completion, flaky (first `fail_first` requests 503).

Run as a script to serve until killed; it prints its base URL as its first line (`judge.serve`).
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_SECTION = re.compile(r'<(\w+)(?: index="(\d+)")?>\n(.*?)\n</\1>', re.DOTALL)
_METRIC = re.compile(r"You score the `(\w+)` metric")
_WORD = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(r"\d+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text))


def content(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 4 and not w[0].isdigit()} | numbers(text)


def claim_verdict(claim: str, evidence: str) -> str:
    if numbers(claim) - numbers(evidence):
        return "contradicted"
    return "supported" if content(claim) <= content(evidence) else "unsupported"


def parse(user: str) -> dict[str, Any]:
    sections: dict[str, Any] = {"context": []}
    for tag, _index, text in _SECTION.findall(user):
        text = text.replace("<\\/", "</")
        if tag == "context":
            sections["context"].append(text)
        elif tag == "criterion" and _index:
            sections.setdefault("criteria", []).append(text)
        else:
            sections[tag] = text
    return sections


def _claims(text: str) -> list[str]:
    return [s for s in sentences(text) if not s.endswith("?")]


def answer(metric: str, s: dict[str, Any]) -> dict[str, Any]:
    output = s.get("output", "")
    evidence = "\n".join(s["context"]) + s.get("tool_results", "")
    if metric == "answer_relevancy":
        def relevant(st: str) -> str:
            if "maybe" in st.lower():
                return "unsure"
            return "yes" if content(st) & content(s["input"]) else "no"
        return {"statements": [{"statement": x, "verdict": relevant(x), "reason": "fake"} for x in sentences(output)]}
    if metric == "answer_similarity":
        truth = s["ground_truth"]

        def similar(fact: str) -> str:
            if numbers(fact) - numbers(output) and numbers(output):
                return "missing"
            words = content(fact)
            found = len(words & content(output))
            if found == len(words):
                return "exact" if fact.lower() in output.lower() else "semantic"
            return "partial" if found * 2 >= len(words) else "missing"
        return {
            "facts": [{"fact": f, "verdict": similar(f), "reason": "fake"} for f in sentences(truth)],
            "contradictions": [{"statement": f, "reason": "fake"} for f in sentences(truth)
                               if numbers(f) - numbers(output) and numbers(output)],
            "extra": [x for x in sentences(output) if not content(x) & content(truth)],
        }
    if metric == "faithfulness":
        verdicts = [{"claim": c, "verdict": claim_verdict(c, evidence), "reason": "fake"} for c in _claims(output)]
        return {"claims": verdicts}
    if metric == "hallucination":
        def halluc(c: str) -> str:
            if re.search(r"\b(probably|maybe|might)\b", c.lower()):
                return "general"
            return claim_verdict(c, evidence)
        return {"claims": [{"claim": c, "verdict": halluc(c), "reason": "fake"} for c in _claims(output)]}
    if metric == "toxicity":
        bad = {"idiot", "stupid", "dumb", "hate"}
        return {"statements": [
            {"statement": x, "verdict": "toxic" if bad & set(_WORD.findall(x.lower())) else "ok", "reason": "fake"}
            for x in sentences(output)
        ]}
    if metric == "bias":
        markers = {"should", "best", "worst", "always", "never", "think", "believe"}
        opinions = [x for x in sentences(output) if markers & set(_WORD.findall(x.lower()))]
        return {"opinions": [
            {"opinion": o, "verdict": "biased" if {"always", "never", "all"} & set(_WORD.findall(o.lower()))
             else "unbiased", "reason": "fake"}
            for o in opinions
        ]}
    if metric == "context_precision":
        ref = content(s["reference"])
        return {"verdicts": [{"index": n, "useful": bool(content(c) & ref), "reason": "fake"}
                             for n, c in enumerate(s["context"], 1)]}
    if metric == "context_relevance":
        grades = {0: "none", 1: "low", 2: "medium"}
        return {"verdicts": [
            {"index": n, "relevance": grades.get(len(content(c) & content(s["input"])), "high"),
             "used": bool(content(c) & content(output)), "reason": "fake"}
            for n, c in enumerate(s["context"], 1)
        ], "missing_context": []}
    if metric == "context_recall":
        ctx = content(" ".join(s["context"]))
        return {"sentences": [{"sentence": x, "attributed": content(x) <= ctx, "reason": "fake"}
                              for x in sentences(s["ground_truth"])]}
    if metric == "prompt_alignment":
        asked = content(s["input"])
        items = [{"requirement": i, "fulfilled": content(i) <= content(output), "reason": "fake"}
                 for i in sentences(s["input"])]
        return {
            "intent": {"score": 1.0 if asked & content(output) else 0.0, "reason": "fake"},
            "requirements": {"items": items,
                             "score": sum(i["fulfilled"] for i in items) / len(items) if items else 1.0},
            "completeness": {"score": len(asked & content(output)) / len(asked) if asked else 1.0, "missing": [],
                             "reason": "fake"},
            "appropriateness": {"score": 1.0, "reason": "fake"},
        }
    if metric == "summarization":
        source = s["source"]
        return {
            "claims": [{"claim": c, "verdict": claim_verdict(c, source), "reason": "fake"} for c in _claims(output)],
            "key_points": [
                {"point": k, "covered": len(content(k) & content(output)) * 2 >= len(content(k)), "reason": "fake"}
                for k in sentences(source)
            ],
        }
    if metric == "tool_call_accuracy":
        asked = content(s["input"])

        def parts(name: str) -> set[str]:
            return {p for p in name.lower().split("_") if len(p) >= 4}

        calls = re.findall(r"^(\d+)\. (\w+)\(", s["tool_calls"], re.MULTILINE)
        tools = re.findall(r"^- (\w+)", s["available_tools"], re.MULTILINE)
        called = {name for _, name in calls}
        return {
            "calls": [
                {"index": int(n), "appropriate": bool(parts(name) & asked), "reason": "fake"} for n, name in calls
            ],
            "missing_tools": [t for t in tools if parts(t) & asked and t not in called],
            "reason": "fake",
        }
    if metric == "rubric":
        def found(criterion: str) -> tuple[int, int]:
            quoted = re.findall(r'"([^"]+)"', criterion)
            return sum(1 for q in quoted if q.lower() in output.lower()), len(quoted)
        if "max_grade" in s:
            top = int(s["max_grade"])
            got, of = found(s["criterion"])
            return {"grade": round(top * got / of) if of else top, "reason": f"{got} found"}
        return {"criteria": [{"index": n, "satisfied": found(c)[0] == found(c)[1], "reason": "fake"}
                             for n, c in enumerate(s.get("criteria", []), 1)]}
    raise ValueError(f"the fake judge does not know the metric {metric!r}")


def words_in(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content", "")).split()) for m in messages)


class FakeJudge:
    """The fake judge server, in a thread of the test process."""

    def __init__(self, mode: str = "ok", api_key: str | None = None, fail_first: int = 0) -> None:
        self.mode = mode
        self.api_key = api_key
        self.fail_first = fail_first
        self.requests: list[dict[str, Any]] = []
        # When set, every reply is this answer instead of the word rules' (differential tests script it);
        # a string is the reply's text as is (duplicate keys, odd JSON).
        self.script: dict[str, Any] | str | None = None
        self.authorizations: list[str | None] = []
        self.usage: Any = None  # when set, every reply reports this as its usage (odd token counts)
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def calls(self) -> int:
        return len(self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reply(self, body: dict[str, Any], count: int) -> tuple[int, Any]:
        """(status, JSON body) for one request; `count` is its 1-based number."""
        mode = self.mode
        if mode == "outage" or (mode == "flaky" and count <= self.fail_first):
            return 503, {"error": {"message": "the judge is down"}}
        if mode == "not_completion":
            return 200, {"unexpected": True}
        messages = body["messages"]
        repairing = any(m["role"] == "assistant" for m in messages)
        metric = _METRIC.search(messages[0]["content"]).group(1)
        script = self.script
        if isinstance(script, str):
            good = script
        else:
            good = json.dumps(script if script is not None else answer(metric, parse(messages[1]["content"])))
        finish = "stop"
        if mode == "malformed" or (mode == "malformed_once" and not repairing):
            text = "Sure! Here is my assessment: the answer looks mostly fine."
        elif mode == "truncated" or (mode == "truncated_once" and not repairing):
            text, finish = good[: len(good) // 2], "length"
        elif mode == "filtered_once" and not repairing:  # whole JSON, stopped by a content filter
            text, finish = good, "content_filter"
        elif mode == "wrong_shape":
            text = json.dumps({"score": 0.9})
        elif mode == "deep_once" and not repairing:  # JSON nested past the recursion limit
            text = '{"statements": ' + "[" * 100_000 + "]" * 100_000 + "}"
        else:
            text = good
        usage = {"prompt_tokens": words_in(messages), "completion_tokens": len(text.split())}
        with self.lock:
            self.prompt_tokens += usage["prompt_tokens"]
            self.completion_tokens += usage["completion_tokens"]
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return 200, {
            "id": f"fake-{count}",
            "object": "chat.completion",
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": usage if self.usage is None else self.usage,
        }


def _handler(judge: FakeJudge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as two writes: no delayed-ACK stall

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length))
            auth = self.headers.get("Authorization")
            with judge.lock:
                judge.requests.append(body)
                judge.authorizations.append(auth)
                count = len(judge.requests)
            if not self.path.endswith("/chat/completions"):
                status, reply = 404, {"error": {"message": "not found"}}
            elif judge.api_key is not None and auth != f"Bearer {judge.api_key}":
                status, reply = 401, {"error": {"message": "invalid api key"}}
            else:
                status, reply = judge.reply(body, count)
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def main() -> None:
    judge = FakeJudge(mode=sys.argv[1] if len(sys.argv) > 1 else "ok")
    print(judge.base_url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        judge.thread.join()


if __name__ == "__main__":
    main()
