"""The `mastra` target: an agent or a workflow on a Mastra server, read with no mapping.

Agents: `POST {url}/api/agents/{agent}/generate` with `{messages, memory?, ...options}`; the reply
is read by `evalgate.replies.formats.read_mastra` (text, every tool call with its result, error or pending
state, usage). Conversations either send the history as messages, or, with `memory:`, run on a
Mastra memory thread of their own (a fresh id per item and repeat) so the server keeps the history.

Workflows: `POST {url}/api/workflows/{workflow}/start-async` with `{inputData: input}`, Mastra's own
endpoint that creates a run, starts it and answers with its result. The run records the result
(structured in `result`; as text when it is a string, or where the target's `text:` finds one) and
every step's outcome in `steps`. A run that ended failed or suspended is the workflow's output, scored
as Mastra's runEvals scores it: with no output (`result` absent, no text); only a reply that could not
be had (transport, timeout, not a workflow result) errors the item.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jmespath

from evalgate.infra.logs import log_request
from evalgate.infra.net import HttpError
from evalgate.load import spec as s
from evalgate.load.cases import Case
from evalgate.replies import Run, RunFormatError
from evalgate.replies.formats import read_mastra
from evalgate.targets.base import History, TargetError
from evalgate.targets.http import (
    HeaderTemplates,
    compile_body,
    item_context,
    make_client,
    redact_reply,
    snippet,
)

log = logging.getLogger(__name__)


def user_messages(value: Any) -> list[dict[str, Any]]:
    """A turn's input as messages: a message list or one message as is, anything else as user text."""
    if isinstance(value, list) and value and all(isinstance(m, Mapping) and "role" in m for m in value):
        return [dict(m) for m in value]
    if isinstance(value, Mapping) and "role" in value and "content" in value:
        return [dict(value)]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return [{"role": "user", "content": text}]


class MastraTarget:
    concurrent = True

    def __init__(self, config: s.MastraTarget, base_dir: Path, concurrency: int = 4, use_cache: bool = True) -> None:
        self.config = config
        base = config.url.rstrip("/")
        if not base.endswith("/api"):
            base += "/api"
        if config.workflow is not None:
            self.url = f"{base}/workflows/{quote(config.workflow, safe='')}/start-async"
        else:
            self.url = f"{base}/agents/{quote(str(config.agent), safe='')}/generate"
        self.text_at = jmespath.compile(config.text) if config.text is not None else None
        self.client = make_client(config, base_dir, concurrency, use_cache)
        self.headers = HeaderTemplates(config.headers, self.client)
        self.thread = self.resource = None
        if config.memory is not None:
            self.thread = compile_body(config.memory.thread)
            self.resource = compile_body(config.memory.resource) if config.memory.resource is not None else None
        self.threads: dict[tuple[int, int, int], tuple[str, str]] = {}
        self._lock = threading.Lock()
        self.key_settings = {"type": "mastra", "url": self.url, "headers": self.headers.for_cache_key()}

    # ---- requests ----

    def payload(self, case: Case, turn: int, history: History) -> dict[str, Any]:
        value = case.item.turn_inputs()[turn]
        if self.config.workflow is not None:
            return {"inputData": value}
        body: dict[str, Any] = dict(self.config.options)
        if self.thread is None:
            messages: list[dict[str, Any]] = []
            for previous, run in history:
                messages += user_messages(previous)
                messages.append({"role": "assistant", "content": run.text})
            body["messages"] = messages + user_messages(value)
        else:
            thread, resource = self._thread_for(case, turn)
            body["messages"] = user_messages(value)
            body["memory"] = {"thread": thread, "resource": resource}
        return body

    def _thread_for(self, case: Case, turn: int) -> tuple[str, str]:
        """The item's memory thread: its template plus a fresh suffix, kept for its later turns."""
        # A conversation's turns run in order on one worker thread, so the worker tells repeats of
        # one item apart even when they are in flight together.
        key = (case.index, int(getattr(case, "repeat", 0) or 0), threading.get_ident())
        last = turn + 1 >= len(case.item.turn_inputs())
        with self._lock:
            if turn == 0 or key not in self.threads:
                ctx = {"item": item_context(case)}
                assert self.thread is not None
                name = _text(self.thread(ctx)) or case.id
                thread = f"{name}-{uuid.uuid4().hex[:12]}"  # never a thread an earlier run left behind
                resource = _text(self.resource(ctx)) if self.resource is not None else None
                self.threads[key] = (thread, resource or thread)
            found = self.threads[key]
            if last:
                del self.threads[key]
        return found

    def run(self, case: Case, turn: int, history: History) -> Run:
        payload = self.payload(case, turn, history)
        cache_payload = payload
        if "memory" in payload:
            # The thread's fresh suffix must not defeat the cache; what the server remembers (the
            # earlier inputs) must be part of the key instead.
            cache_payload = {**payload, "memory": {"history": case.item.turn_inputs()[:turn]}}
        key = {**self.key_settings, "body": cache_payload}
        headers = self.headers.expand()
        try:
            reply = self.client.post_json(self.url, payload, headers, cache_key=key)
        except HttpError as exc:
            raise TargetError(_not_found_hint(str(exc), self.config)) from None
        log_request(log, "POST", self.url, headers, status=reply.status, attempts=reply.attempts,
                    from_cache=reply.from_cache, elapsed_ms=reply.elapsed_ms)
        if not reply.is_json:
            raise TargetError(f"the reply is not JSON: {snippet(self.client.redact(reply.text)) or '(empty)'}")
        body = redact_reply(reply, self.client)
        try:
            run = self._workflow_run(body) if self.config.workflow is not None else self._agent_run(body)
        except TargetError:
            self.client.forget(key)  # no reply to read: run again next time, not replayed
            raise
        if self.config.workflow is not None and body["status"] != "success":
            self.client.forget(key)  # a failed run is scored, but run again next time: not replayed
        run.latency_ms = reply.elapsed_ms
        return run

    # ---- replies ----

    def _agent_run(self, body: Any) -> Run:
        try:
            return read_mastra(body)
        except RunFormatError as exc:
            shown = snippet(json.dumps(body))
            raise TargetError(f"the reply is not a Mastra generate() reply: {exc}: {shown}") from None

    def _workflow_run(self, body: Any) -> Run:
        if not isinstance(body, Mapping) or not isinstance(body.get("status"), str):
            raise TargetError(f"the reply is not a Mastra workflow result: {snippet(json.dumps(body))}")
        raw_steps = found if isinstance(found := body.get("steps"), Mapping) else {}
        steps = {k: _step(v) for k, v in raw_steps.items() if k != "input" and isinstance(v, Mapping)}
        status = body["status"]
        if status != "success":
            # runEvals' executeWorkflow: `output: status === "success" ? result : undefined`, then scores it
            failure = f"{_workflow_failure(self.config.workflow or '', status, body, steps)}: the run has no output"
            return Run(steps=steps, unreadable={"text": failure, "output_texts": failure})
        result = body.get("result")
        texts, why = self._result_text(result)
        unreadable = {"text": why, "output_texts": why} if why else {}
        return Run(texts=texts, result=result, steps=steps, unreadable=unreadable)

    def _result_text(self, result: Any) -> tuple[list[str], str | None]:
        """The run's texts from a workflow's result, or why it has none (what a text check then errors with)."""
        if self.text_at is not None:
            found = self.text_at.search(result)
            if isinstance(found, str):
                return [found], None
            return [], f"`text: {self.config.text}` finds {_kind(found)} in the workflow's result, not text"
        if isinstance(result, str):
            return [result], None
        return [], (f"the workflow's result is {_kind(result)}, not text: set the target's `text:` to where the "
                    "text is in it (e.g. `text: summary`), or score `run.result` with a python scorer")

    def stats(self) -> dict[str, Any]:
        return self.client.stats()

    def warnings(self) -> list[str]:
        return self.client.warnings()

    def close(self) -> None:
        self.client.close()


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, Mapping):
        return "a JSON object"
    if isinstance(value, list):
        return "a JSON list"
    return f"the JSON value {snippet(json.dumps(value))}"


def _step(raw: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"status": raw.get("status")}
    if "output" in raw:
        out["output"] = raw["output"]
    if raw.get("error") is not None:
        error = raw["error"]
        out["error"] = error.get("message") if isinstance(error, Mapping) and error.get("message") else _text(error)
    return out


def _workflow_failure(workflow: str, status: str, body: Mapping[str, Any], steps: Mapping[str, Any]) -> str:
    failed = [k for k, v in steps.items() if v.get("status") in ("failed", "suspended")]
    where = f" at step `{failed[-1]}`" if failed else ""
    error = body.get("error")
    message = error.get("message") if isinstance(error, Mapping) else error
    if status == "suspended":
        return f"workflow `{workflow}` suspended{where} (evalgate does not resume workflows)"
    return f"workflow `{workflow}` {status}{where}" + (f": {snippet(_text(message))}" if message else "")


def _not_found_hint(message: str, config: s.MastraTarget) -> str:
    if "HTTP 404" in message:
        kind, name = ("workflow", config.workflow) if config.workflow is not None else ("agent", config.agent)
        return f"{message} (is `{name}` the {kind}'s id on the Mastra server at {config.url}?)"
    return message
