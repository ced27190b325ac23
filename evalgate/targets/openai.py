"""The `openai` target: a model behind any OpenAI-compatible chat-completions endpoint.

Each turn sends the growing conversation (system prompt, earlier user inputs and assistant
replies, this turn's input) and records the reply's text, the tool calls the model asked for
(name and parsed arguments; no result, since nothing runs them), token usage, and the cost
from the spec's price table.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalgate.infra import isolation
from evalgate.infra.logs import log_request
from evalgate.infra.net import HttpError
from evalgate.load import spec as s
from evalgate.load.cases import Case
from evalgate.load.spec.models import PriceKey
from evalgate.replies import Run, RunFormatError
from evalgate.replies.formats import run_from_chat_completion
from evalgate.run.budget import saturated
from evalgate.targets.base import History, TargetError, trial_key
from evalgate.targets.http import HeaderTemplates, make_client, redact_reply, snippet

log = logging.getLogger(__name__)
PER_TOKENS = 1_000_000
PROMPT_KEYS: tuple[PriceKey, ...] = ("prompt", "input")
COMPLETION_KEYS: tuple[PriceKey, ...] = ("completion", "output")


def chat_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base if base.endswith("/chat/completions") else base + "/chat/completions"


def as_content(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def tool_definitions(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`{name, description, parameters}` or the full `{type: function, function: {...}}` form."""
    return [
        t if t.get("type") == "function" and "function" in t else {"type": "function", "function": t} for t in tools
    ]


def cost_of(usage: Mapping[str, Any] | None, prices: Mapping[PriceKey, float] | None) -> float | None:
    """USD for the usage at prices per 1M tokens (`prompt`/`input`, `completion`/`output`)."""
    if not usage or not prices:
        return None

    def price(keys: tuple[PriceKey, ...]) -> float:
        return next((float(prices[k]) for k in keys if k in prices), 0.0)

    # a server may name them as the Responses API does: priced at $0, they would slip past a USD cap
    prompt = usage.get("prompt_tokens", usage.get("input_tokens")) or 0
    completion = usage.get("completion_tokens", usage.get("output_tokens")) or 0
    # the server's token counts are its word: 1e308 of them at $2 per 1M is past any float, and an infinite cost
    # would count as nothing against a cap; held at the largest float
    return saturated((prompt * price(PROMPT_KEYS) + completion * price(COMPLETION_KEYS)) / PER_TOKENS)


class OpenAITarget:
    concurrent = True

    def __init__(self, config: s.OpenAITarget, base_dir: Path, concurrency: int = 4, use_cache: bool = True) -> None:
        self.config = config
        self.url = chat_url(config.base_url)
        self.client = make_client(config, base_dir, concurrency, use_cache)
        headers = dict(config.headers)
        if config.api_key_env:
            headers.setdefault("Authorization", "Bearer ${" + config.api_key_env + "}")
        self.headers = HeaderTemplates(headers, self.client)
        self.tools = tool_definitions(config.tools)
        self.key_settings = {"type": "openai", "url": self.url, "headers": self.headers.for_cache_key()}

    def messages(self, case: Case, turn: int, history: History) -> list[dict[str, Any]]:
        """System prompt, then the conversation so far, then this turn's input."""
        messages: list[dict[str, Any]] = []
        if self.config.system:
            messages.append({"role": "system", "content": self.config.system})
        for previous, run in history:
            messages += _user(previous)
            messages.append({"role": "assistant", "content": run.text})
        messages += _user(case.item.turn_inputs()[turn])
        return messages

    def payload(self, case: Case, turn: int, history: History) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.config.model, "messages": self.messages(case, turn, history)}
        if self.config.temperature is not None:
            payload["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            payload["max_tokens"] = self.config.max_tokens
        if self.tools:
            payload["tools"] = self.tools
        return payload

    def run(self, case: Case, turn: int, history: History) -> Run:
        payload = self.payload(case, turn, history)
        if self.config.api_key_env and isolation.getenv(self.config.api_key_env) is None:
            raise TargetError(
                f"environment variable {self.config.api_key_env} is not set "
                "(set it, or `api_key_env: null` for an endpoint without a key)"
            )
        try:
            key = trial_key({**self.key_settings, "body": payload}, case)
            headers = self.headers.expand()
            reply = self.client.post_json(self.url, payload, headers, cache_key=key)
        except HttpError as exc:
            raise TargetError(str(exc)) from None
        log_request(log, "POST", self.url, headers, status=reply.status, attempts=reply.attempts,
                    from_cache=reply.from_cache, elapsed_ms=reply.elapsed_ms)
        if not reply.is_json:
            raise TargetError(f"the reply is not JSON: {snippet(self.client.redact(reply.text)) or '(empty)'}")
        try:
            run = self.parse(redact_reply(reply, self.client))
        except TargetError:
            self.client.forget(key)  # no completion (an error sent with 200): asked again next run, not replayed
            raise
        run.latency_ms = reply.elapsed_ms
        return run

    def parse(self, body: Any) -> Run:
        """A chat-completions reply as a run; TargetError if it is not one."""
        if not isinstance(body, Mapping):
            raise TargetError(f"the reply is not a chat completion: {snippet(json.dumps(body))}")
        try:
            run = run_from_chat_completion(body)
        except RunFormatError as exc:
            raise TargetError(f"{exc}: {snippet(json.dumps(body))}") from None
        prices = self.config.prices.get(self.config.model) or self.config.prices.get(str(body.get("model")))
        run.cost_usd = cost_of(run.usage, prices)
        return run

    def stats(self) -> dict[str, Any]:
        return self.client.stats()

    def warnings(self) -> list[str]:
        return self.client.warnings()

    def close(self) -> None:
        self.client.close()


def _user(value: Any) -> list[dict[str, Any]]:
    # An input that is already a list of chat messages is sent as is.
    if isinstance(value, list) and value and all(isinstance(m, Mapping) and "role" in m for m in value):
        return [dict(m) for m in value]
    return [{"role": "user", "content": as_content(value)}]
