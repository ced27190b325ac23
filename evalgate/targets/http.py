"""The `http` target: your agent as a service. Each turn is one JSON request; the reply is mapped to a run.

The body is a JSON template whose string leaves may be placeholders, substituted as JSON values:
`{{input}}` (this turn's input), `{{item.<field>}}` (any item field, dotted paths allowed),
`{{turn}}`, `{{history}}` (earlier turns as `{input, output}`), `{{messages}}` (the conversation as
chat messages, ending with this turn's input) and `{{session}}` (the id the previous turn's reply
carried). A placeholder inside a longer string is replaced by its text.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jmespath

from evalgate.infra import isolation, redaction
from evalgate.infra.logs import log_request
from evalgate.infra.net import (
    HttpClient,
    HttpError,
    Response,
    cache_from_settings,
    env_names,
    expand_env,
    header_problem,
    policy_from_settings,
    tls_from_settings,
)
from evalgate.load import spec as s
from evalgate.load.cases import Case
from evalgate.replies import TOOL_STATUSES, Run, RunFormatError, run_from_value
from evalgate.replies.formats import (
    guess_failing_format,
    guess_format,
    measure,
    parse_arguments,
    read_reply,
    tool_call_paths,
    usage_as_sent,
)
from evalgate.targets.base import History, TargetError, trial_key

log = logging.getLogger(__name__)
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.\-]*)\s*\}\}")
WHOLE = re.compile(r"\A\{\{\s*([A-Za-z_][A-Za-z0-9_.\-]*)\s*\}\}\Z")
NAMES = ("input", "turn", "history", "messages", "session")
REPLY_SHOWN = 200
SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie|password", re.IGNORECASE)

Context = Mapping[str, Any]


# ---- body templates ----


def compile_body(template: Any) -> Callable[[Context], Any]:
    """A function rendering `template` for a context; ValueError for an unknown placeholder."""
    if isinstance(template, str):
        stripped = template.strip()
        if stripped.startswith(("{", "[")):
            with contextlib.suppress(ValueError):
                template = json.loads(stripped)  # a body written as a JSON string is a structure
    for name in placeholders(template):
        root = name.split(".", 1)[0]
        if root == "item" and "." in name:
            continue
        if name not in NAMES:
            raise ValueError(
                f"unknown placeholder `{{{{{name}}}}}` in body; use {{{{input}}}}, {{{{item.<field>}}}}, "
                "{{turn}}, {{history}}, {{messages}} or {{session}}"
            )
    return _compile(template)


def placeholders(template: Any) -> list[str]:
    """Every placeholder name used in a template."""
    if isinstance(template, str):
        return PLACEHOLDER.findall(template)
    if isinstance(template, Mapping):
        return [n for v in template.values() for n in placeholders(v)]
    if isinstance(template, list):
        return [n for v in template for n in placeholders(v)]
    return []


def _compile(template: Any) -> Callable[[Context], Any]:
    # Compiled once: per request only the placeholder leaves do any work.
    if isinstance(template, str):
        whole = WHOLE.match(template)
        if whole:
            name = whole.group(1)
            return lambda ctx: lookup(ctx, name)
        if PLACEHOLDER.search(template):
            return lambda ctx: PLACEHOLDER.sub(lambda m: _as_text(lookup(ctx, m.group(1))), template)
        return lambda ctx: template
    if isinstance(template, Mapping):
        parts = [(k, _compile(v)) for k, v in template.items()]
        if not any(placeholders(template)):
            return lambda ctx: json.loads(json.dumps(template))
        return lambda ctx: {k: part(ctx) for k, part in parts}
    if isinstance(template, list):
        items = [_compile(v) for v in template]
        return lambda ctx: [part(ctx) for part in items]
    return lambda ctx: template


def lookup(ctx: Context, name: str) -> Any:
    """`input`, `item.metadata.user`, ...; a missing field is null."""
    head, _, rest = name.partition(".")
    value = ctx.get(head)
    for key in rest.split(".") if rest else ():
        if isinstance(value, Mapping):
            value = value.get(key)
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


# ---- reply mapping ----


class FieldPath:
    """A JMESPath expression of field names only (`output.text`, `usage`), walked without jmespath's
    interpreter: the same result (a missing field, or a field of what has none, is null) at a fifth of
    its cost, paid per reply and per mapped part."""

    __slots__ = ("keys",)

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys

    def search(self, value: Any) -> Any:
        for key in self.keys:
            try:
                value = value.get(key)  # as jmespath's field: whatever has `.get`
            except AttributeError:
                return None
        return value


def _field_names(node: dict[str, Any]) -> list[str] | None:
    """The field names of a parsed JMESPath made of fields and `.` only, in order; None for anything else."""
    if node["type"] == "field":
        return [node["value"]]
    if node["type"] != "subexpression":
        return None
    names: list[str] = []
    for child in node["children"]:
        part = _field_names(child)
        if part is None:
            return None
        names += part
    return names


def compile_path(expression: str) -> Any:
    """A compiled JMESPath (its `.search(value)`): a FieldPath when it is field names only."""
    compiled = jmespath.compile(expression)
    names = _field_names(compiled.parsed)
    return FieldPath(tuple(names)) if names is not None else compiled


class ReplyMapping:
    """`response:`: a reply format and/or JMESPath expressions, compiled once.

    Without a format the expressions (defaults included) are the mapping. With one, the format
    reads the reply and only the expressions the spec sets override their part.
    """

    def __init__(self, config: s.ResponseMapping) -> None:
        def comp(expression: str | None) -> Any:
            return compile_path(expression) if expression else None

        self.format = config.format
        given = config.model_fields_set

        def use(name: str) -> bool:
            return self.format is None or name in given

        self.text = comp(config.text) if use("text") else None
        self.tool_calls = comp(config.tool_calls) if use("tool_calls") else None
        self.usage = comp(config.usage) if use("usage") else None
        self.cost_usd = comp(config.cost_usd)
        self.latency_ms = comp(config.latency_ms)
        self.call_fields: dict[str, Any] = {}
        self.status_map: dict[str, str] | None = None
        for name, field in config.tool_call_fields.items():
            if isinstance(field, s.StatusMapping):
                self.call_fields[name] = jmespath.compile(field.path)
                self.status_map = dict(field.map)
            else:
                self.call_fields[name] = jmespath.compile(field)
        self.text_expression = config.text
        self.calls_expression = config.tool_calls
        # for the one warning about tool calls the mapping misses
        self._found_calls = False
        self._lookalike: tuple[str, str | None] | None = None
        self._hidden: str | None = None  # a format that sees failed calls this mapping reads as fine

    def run(self, body: Any) -> Run:
        """The run in a parsed reply; TargetError naming what did not fit."""
        if self.format is not None:
            return self._formatted(body)
        if isinstance(body, str):
            return Run(texts=[body])
        if not isinstance(body, (Mapping, list)):
            raise TargetError(f"the reply is JSON but not an object: {snippet(json.dumps(body))}")
        text = self.text.search(body) if self.text else None
        calls = self.tool_calls.search(body) if self.tool_calls else None
        if text is None and not calls:
            hint = _format_hint(body)
            raise TargetError(
                f"nothing at response.text `{self.text_expression}` in the reply{hint}: {snippet(json.dumps(body))}"
            )
        value: dict[str, Any] = {"text": self._text(text, body)}
        if calls:
            if not isinstance(calls, list):
                raise TargetError(f"response.tool_calls must find a list, found {type(calls).__name__}")
            value["tool_calls"] = [self._call(c) for c in calls]
            self._found_calls = True
        elif not self._found_calls and self._lookalike is None:
            paths = tool_call_paths(body)
            if paths:
                self._lookalike = (paths[0], guess_format(body))
        if self.usage is not None:
            usage = usage_as_sent(self.usage.search(body))
            if usage is not None:
                value["usage"] = usage
        try:
            run = run_from_value(value)
        except RunFormatError as exc:
            raise TargetError(f"the reply does not map to a run: {exc}") from None
        if run.tool_calls and self._hidden is None:
            self._check_hidden_failures(run, body)
        self._measurements(run, body)
        return run

    def _check_hidden_failures(self, run: Run, body: Any) -> None:
        """Note a known reply shape whose failed tool calls the mapping reads as successes."""
        guess = guess_failing_format(body)
        if guess is None:
            return
        try:
            formatted = read_reply(guess, body)
        except RunFormatError:
            return
        if sum(c.failed for c in formatted.tool_calls) > sum(c.failed for c in run.tool_calls):
            self._hidden = guess

    def _formatted(self, body: Any) -> Run:
        assert self.format is not None  # called for a mapping with a format only
        try:
            run = read_reply(self.format, body)
        except RunFormatError as exc:
            raise TargetError(f"the reply is not in the `{self.format}` format: {exc}") from None
        if not isinstance(body, (Mapping, list)):
            return run
        if self.text is not None:
            text = self._text(self.text.search(body), body)
            if text is not None:  # nothing there: the format's text stands
                run.texts = [text]
                run.output_texts = run.judge_texts = None  # every scorer reads the mapped text, not Mastra's
                run.unreadable.pop("text", None)
                run.unreadable.pop("output_texts", None)
                run.unreadable.pop("agent_responses", None)
                run.unreadable.pop("output_messages", None)
                run.agent_output = True
        if self.tool_calls is not None:
            calls = self.tool_calls.search(body)
            if calls is not None and not isinstance(calls, list):
                raise TargetError(f"response.tool_calls must find a list, found {type(calls).__name__}")
            try:
                run.tool_calls = run_from_value({"tool_calls": [self._call(c) for c in calls or []]}).tool_calls
                run.unreadable.pop("tool_calls", None)
            except RunFormatError as exc:
                raise TargetError(f"the reply does not map to a run: {exc}") from None
        if self.usage is not None:
            run.usage = usage_as_sent(self.usage.search(body))
        self._measurements(run, body)
        return run

    def _measurements(self, run: Run, body: Any) -> None:
        if not isinstance(body, (Mapping, list)):
            return
        if self.cost_usd is not None:  # a NaN or negative cost would switch a `budget:` off: not a cost
            cost = measure(self.cost_usd.search(body))
            if cost is not None:
                run.cost_usd = cost
        if self.latency_ms is not None:
            latency = measure(self.latency_ms.search(body))
            if latency is not None:
                run.latency_ms = float(latency)

    def _text(self, text: Any, body: Any) -> str | None:
        """A string, a number as text, or None; a list or object is a mapping mistake, said so."""
        if text is None or isinstance(text, str):
            return text
        if isinstance(text, (list, Mapping)):
            found = f"a list of {len(text)}" if isinstance(text, list) else "an object with keys " + ", ".join(
                f"`{k}`" for k in list(text)[:6]
            )
            guess = guess_format(text) or guess_format(body)
            advice = (
                f"to read it as {_SHAPES[guess]}, set "
                f"`response: {{format: {guess}}}`"
                if guess
                else "point `text` at a string, or set `response.format` (mastra, openai, ai-sdk or messages) "
                "to read a whole reply or message list"
            )
            raise TargetError(f"response.text `{self.text_expression}` found {found}, not text; {advice}")
        return _as_text(text)

    def _call(self, raw: Any) -> dict[str, Any]:
        if not isinstance(raw, Mapping):
            return {"name": _as_text(raw)}
        if self.call_fields:
            call = {name: expr.search(raw) for name, expr in self.call_fields.items()}
            for name in ("name", "args", "result", "error", "status"):
                if name not in self.call_fields and name in raw:
                    call[name] = raw[name]
        elif "function" in raw and "name" not in raw:  # an OpenAI-shaped call
            function = raw.get("function")
            if not isinstance(function, Mapping):
                raise TargetError(f"a tool call's `function` must be an object, got {snippet(json.dumps(function))}")
            call = {"name": function.get("name"), "args": parse_arguments(function.get("arguments"))}
        else:
            call = {k: raw[k] for k in ("name", "args", "result", "error", "status") if k in raw}
        call = {k: v for k, v in call.items() if v is not None}
        if "name" in call and not isinstance(call["name"], str):
            call["name"] = _as_text(call["name"])
        if "status" in call:
            call["status"] = self._status(call["status"])
            if call["status"] is None:
                del call["status"]
        return call

    def _status(self, state: Any) -> str | None:
        if self.status_map is not None:
            key = state if isinstance(state, str) else _as_text(state)
            if key not in self.status_map:
                known = ", ".join(f"`{k}`" for k in self.status_map)
                raise TargetError(
                    f"a tool call's state `{snippet(key)}` is not in tool_call_fields.status.map ({known}); "
                    "add it, mapped to ok, error or pending"
                )
            return self.status_map[key]
        if isinstance(state, str) and state in TOOL_STATUSES:
            return state
        raise TargetError(
            f"a tool call's status `{snippet(_as_text(state))}` is not ok, error or pending; map the agent's "
            "states with `tool_call_fields: {status: {path: <where the state is>, map: {<state>: ok|error|pending}}}`"
        )

    def warnings(self) -> list[str]:
        """Once per run: replies held tool calls the mapping never found, or failures it cannot see."""
        if self._hidden is not None:
            return [
                f"response.tool_calls `{self.calls_expression}` reads tool calls that failed (a tool threw, or "
                f"no result came back) as successful: these replies are {_SHAPES[self._hidden]}, whose errors "
                f"are elsewhere; set `response: {{format: {self._hidden}}}` to read them"
            ]
        if self._found_calls or self._lookalike is None:
            return []
        path, guess = self._lookalike
        advice = (
            f"set `response: {{format: {guess}}}` to read them with their results and errors "
            f"(or `response.tool_calls: \"{path}\"` with `tool_call_fields`)"
            if guess
            else f"set `response.tool_calls: \"{path}\"` and map their fields with `tool_call_fields`"
        )
        return [
            f"no tool calls were found in any reply at response.tool_calls `{self.calls_expression}`, "
            f"but the replies hold what looks like tool calls at `{path}`; {advice}"
        ]


_SHAPES = {"mastra": "a Mastra reply", "openai": "an OpenAI reply", "ai-sdk": "an AI SDK reply",
           "messages": "a message list"}


def _format_hint(body: Any) -> str:
    guess = guess_format(body)
    return f" (it looks like {_SHAPES[guess]}: try `response: {{format: {guess}}}`)" if guess else ""


def snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= REPLY_SHOWN else flat[: REPLY_SHOWN - 1] + "…"


# ---- shared by the network targets ----


def make_client(config: Any, base_dir: Path, concurrency: int, use_cache: bool) -> HttpClient:
    """The pooled client for a target's `retries`, `cache`, `tls` and `timeout_s` settings.

    ValueError (a spec error at `target:`) for a CA bundle or client certificate it cannot use."""
    return HttpClient(
        concurrency=concurrency,
        retries=policy_from_settings(config.retries),
        timeout_s=config.timeout_s,
        cache=cache_from_settings(config.cache, base_dir, enabled=use_cache),
        tls=tls_from_settings(getattr(config, "tls", None), base_dir),
    )


class HeaderTemplates:
    """Headers whose values may name environment variables; expanded per request, never logged."""

    def __init__(self, headers: Mapping[str, str], client: HttpClient) -> None:
        self.templates = dict(headers)
        self.client = client
        self.dynamic = any("${" in v for v in self.templates.values())
        self.secrets: list[str] = []
        self._lock = threading.Lock()
        # literal values of auth-like headers are secrets too
        literal = [v for k, v in self.templates.items() if SECRET_HEADER.search(k) and "${" not in v]
        client.add_secrets(literal)
        redaction.register(literal)

    def expand(self) -> dict[str, str]:
        if not self.dynamic:
            return self.templates
        out: dict[str, str] = {}
        found: list[str] = []
        for name, template in self.templates.items():
            try:
                value, used = expand_env(template, isolation.evalgate_env())
            except KeyError as missing:
                raise TargetError(f"header {name}: environment variable {missing.args[0]} is not set") from None
            if used:
                for variable in env_names(template):
                    problem = header_problem(name, os.environ.get(variable, ""), variable)
                    if problem is not None:
                        raise TargetError(problem)
            out[name] = value
            found += used
        with self._lock:
            new = [v for v in found if v not in self.secrets]
            if new:
                self.secrets += new
                self.client.add_secrets(new)
                redaction.register(new)
        return out

    def for_cache_key(self) -> dict[str, str]:
        """Header templates, with literal values of auth-like headers left out."""
        return {k: ("<secret>" if SECRET_HEADER.search(k) and "${" not in v else v) for k, v in self.templates.items()}


def redact_reply(reply: Response, client: HttpClient) -> Any:
    """The reply's body with any known secret replaced (an echoing agent must not leak a token)."""
    text = reply.text or json.dumps(reply.body, ensure_ascii=False)
    if client.redact(text) == text:
        return reply.body
    return _redact_value(reply.body, client)


def _redact_value(value: Any, client: HttpClient) -> Any:
    if isinstance(value, str):
        return client.redact(value)
    if isinstance(value, Mapping):
        return {k: _redact_value(v, client) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(v, client) for v in value]
    return value


def item_context(case: Case) -> dict[str, Any]:
    item = case.item.model_dump(mode="json", exclude_none=True, exclude={"output", "outputs"})
    item["id"] = case.id
    return item


# ---- the target ----


class HttpTarget:
    """POST (or PUT/GET) per turn through one pooled keep-alive client."""

    concurrent = True

    def __init__(self, config: s.HttpTarget, base_dir: Path, concurrency: int = 4, use_cache: bool = True) -> None:
        self.config = config
        body = config.body
        if body is None:
            body = {"messages": "{{messages}}"} if config.conversation == "messages" else {"input": "{{input}}"}
        self.render = compile_body(body)
        used = placeholders(body)
        if config.conversation == "messages" and "messages" not in used and "history" not in used:
            raise ValueError("conversation: messages needs `{{messages}}` (or `{{history}}`) in body")
        if config.conversation == "session" and (config.session is None or "session" not in used):
            raise ValueError(
                "conversation: session needs `session:` (where the reply has the id) and `{{session}}` in body"
            )
        self.uses_item = any(n.startswith("item.") for n in used)
        self.uses_messages = "messages" in used  # built per request only when the body asks for them
        self.mapping = ReplyMapping(config.response)
        self.session_expr = jmespath.compile(config.session) if config.session else None
        self.client = make_client(config, base_dir, concurrency, use_cache)
        self.headers = HeaderTemplates(config.headers, self.client)
        self.sessions: dict[int, Any] = {}
        self.key_settings = {
            "type": "http",
            "url": config.url,
            "method": config.method,
            "headers": self.headers.for_cache_key(),
        }

    def context(self, case: Case, turn: int, history: History) -> dict[str, Any]:
        inputs = case.item.turn_inputs()
        ctx: dict[str, Any] = {"input": inputs[turn], "turn": turn}
        if self.uses_item:
            ctx["item"] = item_context(case)
        if history or len(inputs) > 1:
            ctx["history"] = [{"input": i, "output": r.text} for i, r in history]
        if self.uses_messages:
            messages: list[dict[str, Any]] = []
            for previous, run in history:
                messages.append({"role": "user", "content": previous})
                messages.append({"role": "assistant", "content": run.text})
            messages.append({"role": "user", "content": inputs[turn]})
            ctx["messages"] = messages
        ctx["session"] = self.sessions.get(case.index) if turn else None
        return ctx

    def run(self, case: Case, turn: int, history: History) -> Run:
        payload = self.render(self.context(case, turn, history))
        headers = self.headers.expand()
        try:
            reply = self.client.request(
                self.config.method,
                self.config.url,
                json_body=payload if self.config.method != "GET" else None,
                headers=headers,
                cache_key=trial_key({**self.key_settings, "body": payload}, case),
            )
        except HttpError as exc:
            raise TargetError(str(exc)) from None
        log_request(log, self.config.method, self.config.url, headers, status=reply.status, attempts=reply.attempts,
                    from_cache=reply.from_cache, elapsed_ms=reply.elapsed_ms)
        if not reply.is_json:
            raise TargetError(f"the reply is not JSON: {snippet(self.client.redact(reply.text)) or '(empty)'}")
        body = redact_reply(reply, self.client)
        run = self.mapping.run(body)
        if run.latency_ms is None:
            run.latency_ms = reply.elapsed_ms
        self._keep_session(case, turn, body)
        return run

    def _keep_session(self, case: Case, turn: int, body: Any) -> None:
        if self.session_expr is None:
            return
        if turn + 1 < len(case.item.turn_inputs()):
            self.sessions[case.index] = self.session_expr.search(body) if isinstance(body, (Mapping, list)) else None
        else:
            self.sessions.pop(case.index, None)

    def stats(self) -> dict[str, Any]:
        return self.client.stats()

    def warnings(self) -> list[str]:
        return self.mapping.warnings() + self.client.warnings()

    def close(self) -> None:
        self.client.close()
