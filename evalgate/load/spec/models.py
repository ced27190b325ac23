"""The spec file's models: what `evalgate.yaml` may say (docs/spec.md).

Pure pydantic models, no I/O and nothing of evalgate above the item model: the loader validates
a file against them, `evalgate schema` derives the JSON Schema from them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from evalgate.load.spec.plugins import PLUGIN_TARGETS
from evalgate.run.user_code import FunctionReference

# ---- targets ----


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


MAX_TIMEOUT_S = 86_400.0  # a day: a longer wait is a typo, and `.inf` would overflow the clocks
MAX_BACKOFF_S = 3_600.0
MAX_COMMAND_CHARS = 16 * 1024  # shlex slows quadratically on long tokens; argv strings are capped anyway
Timeout = Annotated[float, Field(gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)]
Backoff = Annotated[float, Field(ge=0, le=MAX_BACKOFF_S, allow_inf_nan=False)]
# USD per 1M tokens, by model, then by `prompt` (or `input`) and `completion` (or `output`). A misspelt
# key used to price those tokens at $0, and a negative or NaN price could pay a budget back or switch it off.
PriceKey = Literal["prompt", "completion", "input", "output"]
PriceTable = dict[str, dict[PriceKey, Annotated[float, Field(ge=0, allow_inf_nan=False)]]]


def _env_name(name: str) -> str:
    if not name or "=" in name or "\0" in name:
        raise ValueError(f"{name!r} is not an environment variable name (no `=`, no NUL, not empty)")
    return name


# `api_key_env: ""` meant no key without a word, `"a=b"` failed on every item: refused with the spec
EnvName = Annotated[str, AfterValidator(_env_name)]


def _env_value(name: str, value: str) -> str:
    if "\0" in value:
        raise ValueError(f"the value of {name} holds a NUL character, which an environment cannot carry")
    return value


def _command_line(value: str | list[str], example: str) -> str | list[str]:
    """A command that can be started: not empty, no NUL, quotes closed, not past MAX_COMMAND_CHARS."""
    size = len(value) if isinstance(value, str) else sum(len(part) for part in value)
    if size > MAX_COMMAND_CHARS:
        raise ValueError(f"the command is {size:,} characters; over {MAX_COMMAND_CHARS // 1024} KiB, put it in a "
                         "script and run that")
    if any("\0" in part for part in ([value] if isinstance(value, str) else value)):
        raise ValueError("the command holds a NUL character, which no command line can carry")
    try:
        argv = shlex.split(value) if isinstance(value, str) else value
    except ValueError as exc:  # e.g. an unclosed quote
        raise ValueError(f"cannot split the command ({str(exc).lower()})") from None
    if not argv or not argv[0]:
        raise ValueError(f"the command is empty; e.g. `{example}`")
    return value


def _http_url(url: str) -> str:
    """An http(s) URL a request can be sent to: a typo in it used to error every item (an outage).

    The URL is not quoted back: it may hold credentials (`https://user:token@host`)."""
    from urllib.parse import urlsplit

    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise ValueError("the URL holds a space or a control character; a URL has none (write a space as %20)")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is no number or out of range
    except ValueError as exc:  # `http://[::1`, `http://host:99999`
        raise ValueError(f"not a URL ({str(exc).lower()})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("not an http(s) URL; e.g. http://127.0.0.1:8787/answer")
    return url


HttpUrl = Annotated[str, AfterValidator(_http_url)]


_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # an HTTP token (RFC 9110)


def _header_names(headers: dict[str, str]) -> dict[str, str]:
    """Names a request can carry: `a:b`, `é` or an empty name used to error every item at its send."""
    for name in headers:
        if not _HEADER_NAME.fullmatch(name):
            raise ValueError(f"{name[:100]!r} is not a header name; a name is letters, digits and "
                             "!#$%&'*+-.^_`|~ (e.g. X-Api-Key), its value goes after the colon")
    return headers


Headers = Annotated[dict[str, str], AfterValidator(_header_names)]


class RecordedTarget(_Strict):
    """The run is each item's recorded `output` (or `outputs`, or each turn's `output`)."""

    type: Literal["recorded"]


class PythonTarget(_Strict):
    """Calls `function(input)` or `function(input, item)`; sync or async; returns text or a run."""

    type: Literal["python"]
    function: FunctionReference = Field(description="`package.module:callable`, imported from the spec's folder")
    timeout_s: Timeout = Field(default=60.0, description="per call: an overrunning call errors its item")


class CommandTarget(_Strict):
    """Runs a command per item: the item as JSON on stdin; stdout is a JSON run or plain text."""

    type: Literal["command"]
    run: str | list[str] = Field(description="the command, e.g. `python agent.py`")
    timeout_s: Timeout = 60.0
    env: dict[str, str] = Field(
        default_factory=dict, description="extra environment variables; `${NAME}` in a value is replaced by that "
        "variable's value, which is masked wherever the agent echoes it"
    )

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        return {_env_name(k): _env_value(k, v) for k, v in value.items()}

    @field_validator("run")
    @classmethod
    def _command(cls, value: str | list[str]) -> str | list[str]:
        return _command_line(value, "python agent.py")


class RetrySettings(_Strict):
    """Retries of network calls: connection errors, timeouts, 5xx, 408 and 429 only; `Retry-After` honoured."""

    attempts: int = Field(default=3, ge=1, le=20, description="tries per request, the first included")
    backoff_s: Backoff = Field(default=0.5, description="base delay, doubled per retry, jittered")
    max_backoff_s: Backoff = Field(default=30.0, description="cap on any one computed backoff")
    max_retry_after_s: Backoff = Field(
        default=60.0, description="longest Retry-After honoured; a server asking for more errors the item"
    )


class TlsSettings(_Strict):
    """TLS for network calls: a CA bundle for a private CA or a TLS-inspecting proxy, a client certificate."""

    ca_bundle: str | None = Field(
        default=None, description="PEM file of CAs to trust instead of the system's (relative to the spec); "
        "default: REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE or SSL_CERT_FILE, else the system store"
    )
    client_cert: str | None = Field(default=None, description="PEM client certificate (may hold the key too)")
    client_key: str | None = Field(default=None, description="PEM private key of client_cert, if separate")


class CacheSettings(_Strict):
    """A response cache on disk, keyed by the target's settings (secrets excluded) and the request."""

    dir: str = Field(default=".evalgate/cache", description="inside the spec's folder, relative to it (no `..`)")
    ttl: float | str | None = Field(default=None, description="seconds, or e.g. `30m`, `12h`, `7d`; none: no expiry")

    @field_validator("dir")
    @classmethod
    def _inside(cls, value: str) -> str:
        # a spec (a fork's) must not have evalgate write where it likes: the cache stays in the spec's folder
        if not value or "\0" in value or os.path.isabs(value) or ".." in re.split(r"[\\/]", value):
            raise ValueError("the cache's `dir` must be a folder inside the spec's folder, relative to it, "
                             "without `..` (e.g. .evalgate/cache)")
        return value

    @field_validator("ttl")
    @classmethod
    def _ttl(cls, value: float | str | None) -> float | str | None:
        from evalgate.infra.net import parse_ttl

        parse_ttl(value)
        return value


TOOL_STATUS = Literal["ok", "error", "pending"]


class StatusMapping(_Strict):
    """A tool call's status read from the agent's own states, e.g. Mastra's `result`, `output-error`, `call`."""

    path: str = Field(description="JMESPath to the call's state, e.g. `state`")
    map: dict[str, TOOL_STATUS] = Field(
        description="the agent's states to evalgate's: {result: ok, output-error: error, call: pending}"
    )

    @field_validator("path")
    @classmethod
    def _expression(cls, value: str) -> str:
        return _jmespath(value)


class ResponseMapping(_Strict):
    """Where the run is in the agent's JSON reply: a known format, and/or JMESPath expressions."""

    format: Literal["mastra", "openai", "ai-sdk", "messages"] | None = Field(
        default=None,
        description="read a whole reply or message list in this shape (docs/targets.md); "
        "the JMESPath fields you set still override their part",
    )
    text: str | None = Field(default="text", description="JMESPath to the reply's text")
    tool_calls: str | None = Field(default="tool_calls", description="JMESPath to the list of tool calls")
    usage: str | None = Field(default="usage", description="JMESPath to token usage")
    cost_usd: str | None = Field(default="cost_usd", description="JMESPath to the cost in USD")
    latency_ms: str | None = Field(
        default=None, description="JMESPath to a latency the agent reports; default: the measured round trip"
    )
    tool_call_fields: dict[Literal["name", "args", "result", "error", "status"], str | StatusMapping] = Field(
        default_factory=dict,
        description="JMESPath per tool-call field, e.g. {name: tool, args: input}; "
        "`status` may be {path: state, map: {result: ok, output-error: error, call: pending}}",
    )

    @field_validator("text", "tool_calls", "usage", "cost_usd", "latency_ms")
    @classmethod
    def _expression(cls, value: str | None) -> str | None:
        return _jmespath(value) if value is not None else None

    @field_validator("tool_call_fields")
    @classmethod
    def _fields(cls, value: dict[str, str | StatusMapping]) -> dict[str, str | StatusMapping]:
        for name, expression in value.items():
            if isinstance(expression, StatusMapping):
                if name != "status":
                    raise ValueError(f"`{name}` takes a JMESPath expression; only `status` takes {{path, map}}")
                continue
            _jmespath(expression)
        return value


def _jmespath(expression: str) -> str:
    import jmespath
    from jmespath.exceptions import JMESPathError

    try:
        jmespath.compile(expression)
    except JMESPathError as exc:
        why = str(exc).splitlines()[0].removeprefix("Invalid jmespath expression:").strip().rstrip(":").lower()
        raise ValueError(f"`{expression}` is not a JMESPath expression ({why})") from None
    return expression


class HttpTarget(_Strict):
    """POSTs each item to your agent's HTTP endpoint and maps its JSON reply to a run."""

    type: Literal["http"]
    url: HttpUrl
    method: Literal["POST", "PUT", "GET"] = "POST"
    headers: Headers = Field(default_factory=dict, description="values may use `${ENV_VAR}`; never logged")
    body: Any = Field(
        default=None,
        description="JSON template (default `{input: '{{input}}'}`); `{{input}}`, `{{item.<field>}}`, "
        "`{{messages}}`, `{{history}}`, `{{session}}`, `{{turn}}` become JSON values",
    )
    timeout_s: Timeout = 60.0
    response: ResponseMapping = Field(default_factory=ResponseMapping)
    conversation: Literal["messages", "session"] | None = Field(
        default=None, description="multi-turn: send the whole history, or carry a session id between turns"
    )
    session: str | None = Field(default=None, description="JMESPath to the session id in the reply (`session` mode)")
    retries: RetrySettings = Field(default_factory=RetrySettings)
    cache: CacheSettings | None = None
    tls: TlsSettings | None = None

    @field_validator("session")
    @classmethod
    def _session(cls, value: str | None) -> str | None:
        return _jmespath(value) if value is not None else None


class OpenAITarget(_Strict):
    """Any OpenAI-compatible chat-completions endpoint: records text, tool calls, usage and cost."""

    type: Literal["openai"]
    model: str
    base_url: HttpUrl = "https://api.openai.com/v1"
    api_key_env: EnvName | None = Field(default="OPENAI_API_KEY", description="the variable holding the API key")
    system: str | None = None
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    tools: list[dict[str, Any]] = Field(default_factory=list, description="function definitions offered to the model")
    headers: Headers = Field(default_factory=dict, description="extra headers; `${ENV_VAR}` allowed")
    prices: PriceTable = Field(
        default_factory=dict,
        description="USD per 1M tokens by model: {model: {prompt: 0.15, completion: 0.6}}",
    )
    timeout_s: Timeout = 60.0
    retries: RetrySettings = Field(default_factory=RetrySettings)
    cache: CacheSettings | None = None
    tls: TlsSettings | None = None


class MastraMemory(_Strict):
    """Mastra memory threads: the server keeps each conversation's history."""

    thread: str = Field(
        default="{{item.id}}",
        description="thread id template (`{{item.<field>}}`); a fresh suffix makes it new per item and repeat",
    )
    resource: str | None = Field(
        default=None, description="resource id template; default: the thread id (as Mastra's runEvals)"
    )


class MastraTarget(_Strict):
    """A Mastra server (`mastra dev`, or deployed): an agent's generate(), or a workflow run, read with no mapping."""

    type: Literal["mastra"]
    url: HttpUrl = Field(default="http://localhost:4111", description="the server's base URL (routes are under /api)")
    agent: str | None = Field(default=None, description="the agent's id: POST /api/agents/{agent}/generate")
    workflow: str | None = Field(
        default=None, description="a workflow's id: POST /api/workflows/{workflow}/start-async with the input"
    )
    memory: MastraMemory | None = Field(
        default=None, description="conversations on Mastra memory threads instead of sending the history"
    )
    text: str | None = Field(
        default=None,
        description="workflows: JMESPath to the run's text in the workflow's result (e.g. `summary`); without it "
        "a structured result has no text, and the text checks are its error",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="extra generate() options sent with each request, e.g. {maxSteps: 5}",
    )
    headers: Headers = Field(default_factory=dict, description="values may use `${ENV_VAR}`; never logged")
    timeout_s: Timeout = 60.0  # as every target: bounded, so the clocks cannot overflow
    retries: RetrySettings = Field(default_factory=RetrySettings)
    cache: CacheSettings | None = None
    tls: TlsSettings | None = None

    @model_validator(mode="after")
    def _one_entity(self) -> MastraTarget:
        if (self.agent is None) == (self.workflow is None):
            raise ValueError("give exactly one of `agent: <agent id>` or `workflow: <workflow id>`")
        if self.workflow is not None and (self.memory is not None or self.options):
            raise ValueError("`memory` and `options` are for agents; a workflow takes only its input")
        if self.workflow is None and self.text is not None:
            raise ValueError("`text` is for workflows (where in the result the text is); an agent's reply is its text")
        if self.text is not None:
            _jmespath(self.text)
        reserved = {"messages", "memory"} & set(self.options)
        if reserved:
            raise ValueError(f"options: {sorted(reserved)} are set by evalgate; use `memory:` for threads")
        return self


TargetSpec = Annotated[
    RecordedTarget | PythonTarget | CommandTarget | HttpTarget | OpenAITarget | MastraTarget,
    Field(discriminator="type"),
]
TARGET_TYPES = ("recorded", "python", "command", "http", "openai", "mastra")


class JudgeSpec(_Strict):
    """The OpenAI-compatible model that LLM-judged scorers ask (see docs/scorers.md)."""

    model: str
    base_url: HttpUrl = "https://api.openai.com/v1"
    api_key_env: EnvName | None = Field(
        default="OPENAI_API_KEY", description="the variable holding the API key; unset: no Authorization header"
    )
    temperature: float = Field(default=0.0, ge=0)
    max_tokens: int | None = Field(default=None, ge=1)
    timeout_s: Timeout = 60.0
    concurrency: int | None = Field(default=None, ge=1, strict=True, description="judge calls in flight; default: 8")
    retries: RetrySettings = Field(default_factory=RetrySettings)
    cache: CacheSettings | None = Field(default=None, description="replay identical judge calls from disk")
    tls: TlsSettings | None = None
    prices: PriceTable = Field(
        default_factory=dict,
        description="USD per 1M tokens by model, added to the built-in table: {model: {prompt: 0.15, completion: 0.6}}",
    )
    json_mode: bool = Field(default=True, description="send response_format json_object; off for servers without it")
    serve: str | list[str] | None = Field(
        default=None,
        description="a command evalgate starts for the run (a local judge); its first stdout line is its base URL",
    )

    @field_validator("serve")
    @classmethod
    def _serve(cls, value: str | list[str] | None) -> str | list[str] | None:
        # checked as a command target's `run` is: an empty one failed every judged item (IndexError)
        return _command_line(value, "python judge_server.py") if value is not None else None


_DATA_SCHEMA = {
    "anyOf": [
        {"type": "string", "description": "a .jsonl, .json, .yaml/.yml or .csv file, relative to the spec"},
        {"type": "array", "minItems": 1, "items": {"type": "object"}},  # `json_schema` puts Item here
    ]
}


class CompareEntrySpec(_Strict):
    max_drop: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False,
                                   description="the drop this entry tolerates")
    when_uncertain: Literal["pass", "fail"] | None = Field(
        default=None, description="fail: this entry must show its drop is within max_drop")


class CompareSpec(_Strict):
    """How a run is compared with a baseline (`--baseline`, the Action's `baseline` input)."""

    confidence: float = Field(default=0.95, gt=0.5, lt=1.0, allow_inf_nan=False,
                              description="of the intervals of head - base")
    max_drop: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False,
                            description="an entry regresses when head - base lies entirely below -max_drop")
    correction: Literal["holm", "bonferroni", "none"] = Field(
        default="holm", description="keeps the chance an unchanged agent fails on any entry to 1 - confidence"
    )
    errors: Literal["fail", "skip"] = Field(
        default="fail", description="fail: an item or trial that errored counts as a failure; skip: left out")
    when_uncertain: Literal["pass", "fail"] = Field(
        default="pass", description="fail: a gate or threshold must show its drop is within max_drop")
    entries: dict[str, CompareEntrySpec] = Field(default_factory=dict,
                                                 description="per entry id: {max_drop, when_uncertain}; "
                                                 "`ID.pass^k`: that entry's pass^k, which then gates")


def _no_bool(value: Any) -> Any:
    """A cap is a number: pydantic's lax mode would read `true` as 1 (a $1 or 1-token cap) and `false` as 0."""
    if isinstance(value, bool):
        raise ValueError(f"write a number, not {json.dumps(value)}")
    return value


class BudgetSpec(_Strict):
    """A spending cap: when the spend reaches it, no new item starts; the rest error as `budget exceeded`."""

    # finite: `.inf` (or `1.0e+400`) would switch the cap off while the spec still shows one
    max_usd: Annotated[float | None, BeforeValidator(_no_bool)] = Field(
        default=None, gt=0, allow_inf_nan=False, description="USD: the target's and the judge's cost so far")
    max_tokens: Annotated[int | None, BeforeValidator(_no_bool)] = Field(
        default=None, ge=1, description="tokens: the target's and the judge's so far")
    split_across_shards: bool = Field(
        default=True, description="with `--shard I/N`, each shard enforces 1/N of the caps; false: the whole caps"
    )


def _whole_number(value: Any) -> Any:
    """A YAML integer as written: `true` would pass as 1 and `1.0` as 1 in pydantic's lax mode."""
    if isinstance(value, bool | float):
        raise ValueError(f"write the number 1, not {json.dumps(value)}")
    return value


class Spec(_Strict):
    """An evalgate spec: a data set, a target, gates and scorers."""

    model_config = ConfigDict(extra="forbid", title="evalgate spec")

    version: Annotated[Literal[1], BeforeValidator(_whole_number)]  # `true` and `1.0` are no version 1
    name: str | None = Field(default=None, description="default: the file's stem")
    data: Annotated[str | list[Any], WithJsonSchema(_DATA_SCHEMA)]
    target: TargetSpec = Field(default_factory=lambda: RecordedTarget(type="recorded"))
    concurrency: int = Field(default=4, ge=1, le=1024, strict=True, description="items in flight at once")
    max_errors: int = Field(default=0, ge=0, strict=True, description="errored items tolerated before `failed`")
    not_scorable: Literal["leave_out", "fail"] = Field(
        default="leave_out",
        description="a gate or threshold whose every result was not scorable: leave_out (Mastra's runEvals) leaves "
        "it out of the verdict; fail makes it not met, so the verdict fails (an entry may set its own)",
    )
    repeats: int | None = Field(
        default=None, ge=1, le=100, strict=True,
        description="run every item this many times as independent trials; averages are over every trial, "
        "error bars are clustered by item (see docs/statistics.md)",
    )
    # Mappings here; the loader validates each against its type's model (`json_schema` lists them).
    gates: list[dict[str, Any]] = Field(default_factory=list, description="entries that must average 1.0")
    scorers: list[dict[str, Any]] = Field(default_factory=list, description="entries, with an optional threshold")
    judge: JudgeSpec | None = None
    compare: CompareSpec | None = Field(
        default=None, description="comparison with a baseline: regressions of gates and thresholds fail the verdict"
    )
    budget: BudgetSpec | None = None
    pass_env: list[str] = Field(
        default_factory=list,
        description="runner credentials (GITHUB_TOKEN, ACTIONS_*, INPUT_*) the code under test may see; "
        "by default targets, served judges and python code get none of them",
    )

    @field_validator("target", mode="wrap")
    @classmethod
    def _plugin_target(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """A plug-in's `type` (docs/targets.md) is validated by its own model; the built-ins by the union."""
        kind = value.get("type") if isinstance(value, dict) else None
        model = PLUGIN_TARGETS.get(kind) if isinstance(kind, str) and kind not in TARGET_TYPES else None
        if model is None:
            return handler(value)
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"]))
            raise ValueError(f"{where}: {first['msg']}" if where else first["msg"]) from None

    @field_validator("pass_env")
    @classmethod
    def _pass_env(cls, value: list[str]) -> list[str]:
        return [_env_name(name) for name in value]

    @field_validator("data")
    @classmethod
    def _data_path(cls, value: str | list[Any]) -> str | list[Any]:
        # No file can have such a name, and every use of the path (reading it, or checking that
        # --output does not overwrite it) would stop on it with a ValueError instead.
        if isinstance(value, str) and "\0" in value:
            raise ValueError("the data file's path holds a NUL character; give the file's name")
        return value
