"""The LLM judge: an OpenAI-compatible chat-completions client for the judged scorers.

It asks for one JSON object, validates it against the scorer's pydantic model, and on a bad reply
(not JSON, cut off for its length, wrong shape) asks once more, quoting the problem; JSON cut off in
a reply that ended normally is first repaired as Mastra repairs it (evalgate/judge/repair.py). A
second bad reply raises `JudgeError`, which the engine records as that item's scorer error
(docs/results.md).

Every request goes through `evalgate.infra.net.HttpClient` (retries with Retry-After, the adaptive
in-flight limit, the response cache): no second HTTP stack. The API key is read from the
environment at first use, sent only in the Authorization header, and redacted from every error.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evalgate.infra import isolation, redaction
from evalgate.infra.logs import log_request
from evalgate.infra.net import (
    HttpClient,
    HttpError,
    TooDeep,
    cache_from_settings,
    header_problem,
    loads,
    policy_from_settings,
    tls_from_settings,
)
from evalgate.judge import repair
from evalgate.judge.accounting import DEFAULT_PRICES, Tally, cost_usd
from evalgate.judge.errors import JudgeError, excerpt
from evalgate.judge.prompts import Prompt
from evalgate.judge.served import Server
from evalgate.load.spec.context import BuildContext
from evalgate.load.spec.models import JudgeSpec
from evalgate.replies.formats import measure
from evalgate.run.budget import saturated
from evalgate.run.judge_ledger import charge, current_trial

T = TypeVar("T", bound=BaseModel)

DEFAULT_CONCURRENCY = 8

# ---- replies ----

def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")

log = logging.getLogger(__name__)


def _json_parse(text: str) -> Any:
    """`text` as the AI SDK's safeParseJSON reads it: JSON.parse, where NaN and Infinity are no JSON
    (1e400 is still infinite), then secure-json-parse's refusal of `__proto__` and `constructor.prototype`."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return loads(text)  # raises TooDeep, the too-deep error every JSON reader of evalgate's gives
    return repair.reject_prototype_keys(text, value)


def parse_reply(content: str, model: type[T], check: Callable[[T], None] | None = None) -> T:
    """The reply as `model`; ValueError saying what is wrong (not JSON, wrong shape, failed check).

    The text is read as Mastra reads it (evalgate/judge/repair.py): after a `<|message|>` marker,
    inside a ```json fence, or, when it does not start with `{` or `[`, its last whole top-level
    object (so the last object in a ``` fence of another kind, even inside an array there); raw
    newlines in strings escaped, and JSON cut off repaired by closing what is open. What that gives
    is validated like any reply: an array is no object.
    """
    # Mastra preprocesses every reply before JSON.parse, valid JSON too (a `<|message|>` inside a string
    # cuts it), and strips no fence but ```json and no whitespace JSON.parse would not skip
    prepared = repair.preprocess(content)
    try:
        value = repair.parse_partial(prepared, _json_parse)
    except TooDeep as exc:
        raise ValueError(f"the reply {exc}") from None
    except ValueError:
        if "{" not in prepared:
            raise ValueError("the reply is not a JSON object") from None
        try:
            _json_parse(prepared)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the reply is not valid JSON ({exc.msg} at character {exc.pos})") from None
        except repair.ForbiddenKey as exc:
            raise ValueError(str(exc)) from None
        raise ValueError("the reply is not valid JSON") from None
    try:
        parsed = model.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors(include_url=False)[:5]
        )
        raise ValueError(f"the JSON does not have the required shape: {problems}") from None
    if check is not None:
        check(parsed)
    return parsed


def _content(body: Any) -> tuple[str, str | None]:
    """(message content, finish_reason) of a chat completion; ValueError if it has none."""
    try:
        choice = body["choices"][0]
        content = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ValueError("the judge's reply is not a chat completion (no choices[0].message.content)") from None
    if not isinstance(content, str):
        raise ValueError("the judge's reply has no text content")
    return content, choice.get("finish_reason")


# ---- the client ----


class Judge:
    """An OpenAI-compatible judge, shared by every judged scorer of a spec.

    Build it from a spec's `JudgeSpec`, or in Python: `Judge(model="gpt-4o-mini")` (same fields).
    Thread-safe; connects (and starts `serve`) at the first call; `close()` ends both, and a later
    call opens them again.
    """

    def __init__(
        self, settings: JudgeSpec | None = None, *, base_dir: str | Path = ".", use_cache: bool = True, **options: Any
    ) -> None:
        if settings is None:
            settings = JudgeSpec(**options)
        elif options:
            settings = settings.model_copy(update=options)
        self.settings: JudgeSpec = settings
        self.base_dir = Path(base_dir)
        self.prices = {**DEFAULT_PRICES, **settings.prices}
        self.prompts: dict[str, str] = {}
        self._tally = Tally()
        self._lock = threading.Lock()
        self._open_lock = threading.Lock()
        self._http: HttpClient | None = None
        self._server: Server | None = None
        self._base_url: str | None = None
        self._key: str | None = None
        self.use_cache = use_cache  # False: bypass `cache` (run_spec's use_cache, `--no-cache`)

    def __repr__(self) -> str:  # never shows the key
        return f"Judge(model={self.settings.model!r}, base_url={self.settings.base_url!r})"

    @property
    def model(self) -> str:
        return self.settings.model

    def context(self) -> BuildContext:
        """A BuildContext carrying this judge, for building judged scorers in Python."""
        return BuildContext(base_dir=self.base_dir, judge=self)

    def register(self, prompt: Prompt) -> None:
        """Record a scorer's prompt template (its hash goes into the results)."""
        with self._lock:
            # rubric's binary and graded templates share a name: keep every hash, sorted, comma-joined
            known = set(filter(None, self.prompts.get(prompt.metric, "").split(","))) | {prompt.hash}
            self.prompts[prompt.metric] = ",".join(sorted(known))

    # -- asking --

    def ask(self, prompt: Prompt, data: str, reply: type[T], check: Callable[[T], None] | None = None) -> T:
        """The judge's verdict on `data` (the prompt's tagged sections), validated as `reply`.

        One repair attempt after a bad reply; JudgeError after a second one or a failed request.
        """
        messages: list[dict[str, str]] = [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": data},
        ]
        content, finish = self._complete(messages)
        try:
            return parse_reply(content, reply, check) if finish not in _CUT_OFF else _cut_off(finish)
        except ValueError as first:
            problem = str(first)
        self._count(repairs=1)
        messages += [
            {"role": "assistant", "content": content},
            {"role": "user", "content": repair_request(problem, prompt)},
        ]
        content, finish = self._complete(messages)
        try:
            return parse_reply(content, reply, check) if finish not in _CUT_OFF else _cut_off(finish)
        except ValueError as second:
            self._count(failures=1)
            raise JudgeError(
                f"the judge ({self.model}) gave no usable {prompt.metric} verdict after one repair: {second}; "
                f"its reply began: {excerpt(content)!r}"
            ) from None

    def _complete(self, messages: list[dict[str, str]]) -> tuple[str, str | None]:
        http, url, key = self._open()
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": messages,
            "temperature": self.settings.temperature,
        }
        if self.settings.max_tokens is not None:
            body["max_tokens"] = self.settings.max_tokens
        if self.settings.json_mode:
            body["response_format"] = {"type": "json_object"}
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        try:
            reply = http.post_json(url, body, headers, cache_key=self._cache_key(body))
        except HttpError as exc:
            self._count(failures=1)
            hint = ""
            if exc.status in (401, 403):
                hint = f" (check the API key in ${self.settings.api_key_env})" if self.settings.api_key_env else ""
            raise JudgeError(f"judge request failed: {http.redact(str(exc))}{hint}") from None
        log_request(log, "POST", url, headers, status=reply.status, attempts=reply.attempts,
                    from_cache=reply.from_cache, elapsed_ms=reply.elapsed_ms)
        try:
            content, finish = _content(reply.body)
        except ValueError as exc:
            self._count(failures=1)
            http.forget(self._cache_key(body))  # no completion (an error sent with 200): asked again next run
            raise JudgeError(f"{exc}: {excerpt(http.redact(reply.text))!r}") from None
        if reply.from_cache:
            self._count(cached_calls=1)
        else:
            self._account(reply.body.get("usage"), reply.body.get("model"))
        return content, finish

    def _cache_key(self, body: dict[str, Any]) -> dict[str, Any]:
        # Never the key; a served judge's URL changes every run (a fresh port), so its command stands in.
        where = self.settings.serve if self.settings.serve is not None else self.settings.base_url
        key: dict[str, Any] = {"judge": {"where": where}, "body": body}
        trial = current_trial()
        if trial is not None:  # with repeats, trials are independent: none replays another's verdict
            key["trial"] = trial
        return key

    # -- accounting --

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self._tally, name, getattr(self._tally, name) + delta)

    def _account(self, usage: Any, reply_model: Any) -> None:
        usage = usage if isinstance(usage, dict) else {}
        # `input_tokens`/`output_tokens` (the Responses API's names) too: else such calls are free against a cap
        prompt_tokens = _int(usage.get("prompt_tokens", usage.get("input_tokens")))
        completion_tokens = _int(usage.get("completion_tokens", usage.get("output_tokens")))
        # Price by the configured name first (what the user wrote), then the name the server reports.
        cost = cost_usd(self.model, prompt_tokens, completion_tokens, self.prices)
        if cost is None and isinstance(reply_model, str):
            cost = cost_usd(reply_model, prompt_tokens, completion_tokens, self.prices)
        with self._lock:
            t = self._tally
            t.calls += 1
            t.prompt_tokens += prompt_tokens
            t.completion_tokens += completion_tokens
            t.unmetered_calls += not prompt_tokens + completion_tokens
            if cost is None:
                t.unpriced_calls += 1
            else:
                t.cost_usd = saturated(t.cost_usd + cost)
        # to the item and check being scored on this thread (cost per entry and item)
        charge(cost, prompt_tokens + completion_tokens)

    def tally(self) -> Tally:
        with self._lock:
            return Tally(**asdict(self._tally))

    def retries(self) -> int:
        return self._http.stats()["retries"] if self._http is not None else 0

    def warnings(self) -> list[str]:
        """What the run should warn of (a cache that could not be written), until `close()`."""
        return [f"judge {self.model}: {w}" for w in self._http.warnings()] if self._http is not None else []

    # -- connection and the served judge --

    def _open(self) -> tuple[HttpClient, str, str | None]:
        with self._open_lock:
            if self._http is None:
                s = self.settings
                env = s.api_key_env
                key = (isolation.getenv(env) or None) if env else None
                redaction.register([key])
                problem = header_problem("Authorization", key, env) if key else None
                if problem is not None:
                    raise JudgeError(f"judge: {problem}")
                cache = cache_from_settings(s.cache, self.base_dir, enabled=self.use_cache)
                try:
                    http = HttpClient(
                        concurrency=s.concurrency or DEFAULT_CONCURRENCY,
                        retries=policy_from_settings(s.retries),
                        timeout_s=s.timeout_s,
                        cache=cache,
                        secrets=[key] if key else [],
                        tls=tls_from_settings(s.tls, self.base_dir),
                    )
                except ValueError as exc:
                    raise JudgeError(f"judge: {exc}") from None
                try:
                    if s.serve is not None:  # started last: nothing above can fail and leave it running
                        self._server = Server(s.serve, self.base_dir)
                        self._base_url = self._server.start()
                    else:
                        self._base_url = s.base_url
                except BaseException:
                    http.close()
                    raise
                self._http = http
                self._key = key
            assert self._base_url is not None
            base = self._base_url.rstrip("/")
            url = base if base.endswith("/chat/completions") else base + "/chat/completions"
            return self._http, url, self._key

    def close(self) -> None:
        with self._open_lock:
            if self._http is not None:
                self._http.close()
                self._http = None
            if self._server is not None:
                self._server.stop()
                self._server = None
            self._key = None


def _int(value: Any) -> int:
    """A token count of the reply, else 0: one past the largest float (`1` and 400 zeros, a JSON integer)
    overflows pricing as a NaN would poison it, so it counts no more than a count that is not a number."""
    count = measure(value)
    if isinstance(count, float) and count.is_integer():  # `100.0`, as a server doing float arithmetic writes it
        return int(count)
    return count if isinstance(count, int) else 0


# Mastra fails a structured reply that ended for its length or a content filter (then retries once),
# whatever its JSON; a reply that ended otherwise is repaired instead (parse_reply)
_CUT_OFF = ("length", "content_filter")


def _cut_off(finish: str | None) -> Any:
    if finish == "content_filter":
        raise ValueError("the reply was cut off by a content filter (finish_reason: content_filter)")
    raise ValueError("the reply was cut off (finish_reason: length); raise judge.max_tokens or keep reasons short")


def repair_request(problem: str, prompt: Prompt) -> str:
    return (
        f"Your reply could not be used: {problem}. Reply again with ONE complete JSON object and nothing else, "
        f"with short reasons, exactly in this shape:\n{prompt.shape}"
    )


# ---- building ----


def judge_for(settings: Any, base_dir: Path, scorer_type: str) -> Judge:
    """The Judge a judged scorer uses.

    `settings` is a Judge (the loader builds one per spec's `judge:` section, shared by its
    scorers; or from Python), a JudgeSpec (a judge of its own), or None: a ValueError naming
    what to add, which becomes a spec error on the entry's line.
    """
    if isinstance(settings, Judge):
        return settings
    if settings is None:
        raise ValueError(
            f"`{scorer_type}` is scored by an LLM judge: add a `judge:` section to the spec "
            f"(model, base_url, api_key_env), or pass ctx=Judge(...).context() in Python"
        )
    return Judge(settings, base_dir=base_dir)


__all__ = ["Judge", "judge_for", "parse_reply"]
