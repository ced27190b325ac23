"""The spec file (CONTRACT section 4): pydantic models, loading with line numbers, validation.

`load_spec(path)` returns a `LoadedSpec` (the validated model, its data and the built
scorers), or raises `SpecError` naming file, line and what to change.
"""

from __future__ import annotations

import shlex
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    field_validator,
)

from evalgate import scorers as _scorers  # noqa: F401 - registers every scorer type
from evalgate.errors import (
    TOO_DEEP,
    Problem,
    SpecError,
    display_path,
    not_utf8,
    not_utf8_line,
    problems_from_validation,
    show_loc,
    suggest,
)
from evalgate.items import Item, Turn
from evalgate.scorers.base import Scorer
from evalgate.scorers.registry import REGISTRY, BuildContext, lookup
from evalgate.verdict import Entry
from evalgate.yamlpos import Positions, YAMLSyntaxError, load

# ---- targets ----


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RecordedTarget(_Strict):
    """The run is each item's recorded `output` (or `outputs`, or each turn's `output`)."""

    type: Literal["recorded"]


class PythonTarget(_Strict):
    """Calls `function(input)` or `function(input, item)`; sync or async; returns text or a run."""

    type: Literal["python"]
    function: str = Field(description="`package.module:callable`, imported from the spec's folder")
    timeout_s: float | None = Field(default=None, gt=0, description="per call; none by default")


class CommandTarget(_Strict):
    """Runs a command per item: the item as JSON on stdin; stdout is a JSON run or plain text."""

    type: Literal["command"]
    run: str | list[str] = Field(description="the command, e.g. `python agent.py`")
    timeout_s: float = Field(default=60.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict, description="extra environment variables")

    @field_validator("run")
    @classmethod
    def _command(cls, value: str | list[str]) -> str | list[str]:
        try:
            argv = shlex.split(value) if isinstance(value, str) else value
        except ValueError as exc:  # e.g. an unclosed quote
            raise ValueError(f"cannot split the command ({str(exc).lower()})") from None
        if not argv or not argv[0]:
            raise ValueError("the command is empty; e.g. `python agent.py`")
        return value


class RetrySettings(_Strict):
    """Retries of network calls: connection errors, timeouts, 5xx, 408 and 429 only; `Retry-After` honoured."""

    attempts: int = Field(default=3, ge=1, le=20, description="tries per request, the first included")
    backoff_s: float = Field(default=0.5, ge=0, description="base delay, doubled per retry, jittered")
    max_backoff_s: float = Field(default=30.0, ge=0, description="cap on any one wait, Retry-After included")


class CacheSettings(_Strict):
    """A response cache on disk, keyed by the target's settings (secrets excluded) and the request."""

    dir: str = Field(default=".evalgate/cache", description="relative to the spec's folder")
    ttl: float | str | None = Field(default=None, description="seconds, or e.g. `30m`, `12h`, `7d`; none: no expiry")

    @field_validator("ttl")
    @classmethod
    def _ttl(cls, value: float | str | None) -> float | str | None:
        from evalgate.net import parse_ttl

        parse_ttl(value)
        return value


class ResponseMapping(_Strict):
    """Where the run is in the agent's JSON reply: JMESPath expressions."""

    text: str | None = Field(default="text", description="JMESPath to the reply's text")
    tool_calls: str | None = Field(default="tool_calls", description="JMESPath to the list of tool calls")
    usage: str | None = Field(default="usage", description="JMESPath to token usage")
    cost_usd: str | None = Field(default="cost_usd", description="JMESPath to the cost in USD")
    tool_call_fields: dict[Literal["name", "args", "result", "error", "status"], str] = Field(
        default_factory=dict, description="JMESPath per tool-call field, e.g. {name: tool, args: input}"
    )

    @field_validator("text", "tool_calls", "usage", "cost_usd")
    @classmethod
    def _expression(cls, value: str | None) -> str | None:
        return _jmespath(value) if value is not None else None

    @field_validator("tool_call_fields")
    @classmethod
    def _fields(cls, value: dict[str, str]) -> dict[str, str]:
        for expression in value.values():
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
    url: str
    method: Literal["POST", "PUT", "GET"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict, description="values may use `${ENV_VAR}`; never logged")
    body: Any = Field(
        default=None,
        description="JSON template (default `{input: '{{input}}'}`); `{{input}}`, `{{item.<field>}}`, "
        "`{{messages}}`, `{{history}}`, `{{session}}`, `{{turn}}` become JSON values",
    )
    timeout_s: float = Field(default=60.0, gt=0)
    response: ResponseMapping = Field(default_factory=ResponseMapping)
    conversation: Literal["messages", "session"] | None = Field(
        default=None, description="multi-turn: send the whole history, or carry a session id between turns"
    )
    session: str | None = Field(default=None, description="JMESPath to the session id in the reply (`session` mode)")
    retries: RetrySettings = Field(default_factory=RetrySettings)
    cache: CacheSettings | None = None

    @field_validator("session")
    @classmethod
    def _session(cls, value: str | None) -> str | None:
        return _jmespath(value) if value is not None else None


class OpenAITarget(_Strict):
    """Any OpenAI-compatible chat-completions endpoint: records text, tool calls, usage and cost."""

    type: Literal["openai"]
    model: str
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str | None = Field(default="OPENAI_API_KEY", description="the variable holding the API key")
    system: str | None = None
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    tools: list[dict[str, Any]] = Field(default_factory=list, description="function definitions offered to the model")
    headers: dict[str, str] = Field(default_factory=dict, description="extra headers; `${ENV_VAR}` allowed")
    prices: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="USD per 1M tokens by model: {model: {prompt: 0.15, completion: 0.6}}",
    )
    timeout_s: float = Field(default=60.0, gt=0)
    retries: RetrySettings = Field(default_factory=RetrySettings)
    cache: CacheSettings | None = None


TargetSpec = Annotated[
    RecordedTarget | PythonTarget | CommandTarget | HttpTarget | OpenAITarget,
    Field(discriminator="type"),
]
TARGET_TYPES = ("recorded", "python", "command", "http", "openai")


class JudgeSpec(_Strict):
    """The OpenAI-compatible model that LLM-judged scorers ask (see docs/scorers.md)."""

    model: str
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str | None = Field(
        default="OPENAI_API_KEY", description="the variable holding the API key; unset: no Authorization header"
    )
    temperature: float = Field(default=0.0, ge=0)
    max_tokens: int | None = Field(default=None, ge=1)
    timeout_s: float = Field(default=60.0, gt=0)
    concurrency: int | None = Field(default=None, ge=1, description="judge calls in flight; default: 8")
    retries: RetrySettings = Field(default_factory=RetrySettings)
    cache: CacheSettings | None = Field(default=None, description="replay identical judge calls from disk")
    prices: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="USD per 1M tokens by model, added to the built-in table: {model: {prompt: 0.15, completion: 0.6}}",
    )
    json_mode: bool = Field(default=True, description="send response_format json_object; off for servers without it")
    serve: str | list[str] | None = Field(
        default=None,
        description="a command evalgate starts for the run (a local judge); its first stdout line is its base URL",
    )
    _client: Any = PrivateAttr(default=None)  # the Judge built from these settings, shared by its scorers


# ---- entries: one model per scorer type, generated from its factory's signature ----


def _entry_union(kind: Literal["gate", "scorer"]) -> Any:
    models = tuple(t.model(kind) for t in REGISTRY.values())
    return Annotated[typing.Union[models], Field(discriminator="type")]  # noqa: UP007


def validate_entries(
    entries: Any,
    kind: Literal["gate", "scorer"],
    *,
    file: str,
    positions: Positions,
    prefix: tuple[str | int, ...],
) -> tuple[list[BaseModel], list[Problem]]:
    """Validate entries one by one against their type's model.

    Models are built only for the types a spec uses, so start-up does not pay for all of them.
    """
    models: list[BaseModel] = []
    problems: list[Problem] = []
    if not isinstance(entries, list):
        return models, problems  # the Spec model reports it
    for index, raw in enumerate(entries):
        where = (*prefix, index)
        label = show_loc(where)
        if not isinstance(raw, dict):
            problems.append(Problem(file, positions.line(where), f"{label}: an entry is a mapping with a `type`"))
            continue
        type_name = raw.get("type")
        scorer_type = lookup(type_name) if isinstance(type_name, str) else None
        if scorer_type is None:
            names = list(REGISTRY)
            if type_name is None:
                message = f"{label}: needs a `type`; valid: " + ", ".join(f"`{n}`" for n in names)
            else:
                message = f"{label}: unknown type `{type_name}`" + suggest(str(type_name), names)
            problems.append(Problem(file, positions.line((*where, "type")), message))
            continue
        if kind == "gate" and "threshold" in raw:
            problems.append(
                Problem(
                    file,
                    positions.line((*where, "threshold"), key=True),
                    f"{label}.threshold: unknown key `threshold`: a gate takes none (it must average 1.0); "
                    "move the entry under `scorers:` to give it one",
                )
            )
            continue
        model = scorer_type.model(kind)
        try:
            models.append(model.model_validate(raw))
        except ValidationError as exc:
            problems += problems_from_validation(
                exc, file=file, positions=positions, model=model, raw=raw, prefix=where
            )
    return models, problems

_DATA_SCHEMA = {
    "anyOf": [
        {"type": "string", "description": "a .jsonl, .json, .yaml/.yml or .csv file, relative to the spec"},
        {"type": "array", "minItems": 1, "items": {"type": "object"}},  # `json_schema` puts Item here
    ]
}


class Spec(_Strict):
    """An evalgate spec: a data set, a target, gates and scorers."""

    model_config = ConfigDict(extra="forbid", title="evalgate spec")

    version: Literal[1]
    name: str | None = Field(default=None, description="default: the file's stem")
    data: Annotated[str | list[Any], WithJsonSchema(_DATA_SCHEMA)]
    target: TargetSpec = Field(default_factory=lambda: RecordedTarget(type="recorded"))
    concurrency: int = Field(default=4, ge=1, le=1024, description="items in flight at once")
    max_errors: int = Field(default=0, ge=0, description="errored items tolerated before `failed`")
    # Mappings here; `parse_spec` validates each against its type's model (`json_schema` lists them).
    gates: list[dict[str, Any]] = Field(default_factory=list, description="entries that must average 1.0")
    scorers: list[dict[str, Any]] = Field(default_factory=list, description="entries, with an optional threshold")
    judge: JudgeSpec | None = None


def json_schema() -> dict[str, Any]:
    """The JSON Schema of spec files, for editors (`evalgate schema`)."""
    schema = Spec.model_json_schema()
    defs = schema.setdefault("$defs", {})
    item = Item.model_json_schema(ref_template="#/$defs/{model}", by_alias=False)
    defs.update(item.pop("$defs", {}))
    defs["Item"] = item
    schema["properties"]["data"]["anyOf"][1]["items"] = {"$ref": "#/$defs/Item"}
    turn = defs["Turn"]["properties"]
    for key, kind in (("gates", "gate"), ("scorers", "scorer")):
        entries = TypeAdapter(list[_entry_union(kind)]).json_schema(ref_template="#/$defs/{model}")  # type: ignore[misc]
        defs.update(entries.pop("$defs", {}))
        description = schema["properties"][key].get("description")
        schema["properties"][key] = {**entries, "default": [], "description": description}
        turn[key]["items"] = entries["items"]
    return schema


# ---- the loaded spec ----


@dataclass(frozen=True)
class Check:
    """A built gate or scorer and its aggregation entry."""

    scorer: Scorer
    entry: Entry
    line: int | None = None


@dataclass(slots=True)
class Case:
    """A validated item, ready to run: recorded runs converted, per-turn checks built."""

    index: int
    item: Item
    line: int | None = None
    recorded: list[Any] | None = None
    turn_checks: list[list[Check]] | None = None

    @property
    def id(self) -> str:
        return self.item.id or f"item-{self.index + 1}"


@dataclass
class LoadedSpec:
    path: Path
    spec: Spec
    positions: Positions
    cases: list[Case] | None  # None: streamed from the data file by `iter_cases`
    gates: list[Check]
    scorers: list[Check]
    warnings: list[Problem] = field(default_factory=list)
    stream: Any = None  # data.CaseStream for large recorded data sets

    @property
    def item_count(self) -> int:
        return len(self.cases) if self.cases is not None else self.stream.count

    def iter_cases(self) -> Iterator[Case]:
        """The cases; a streamed data set raises SpecError at its end if any item was invalid."""
        if self.cases is not None:
            yield from self.cases
            return
        yield from self.stream.iterate()
        if self.stream.problems:
            raise SpecError(self.stream.problems[:20])

    @property
    def name(self) -> str:
        return self.spec.name or self.path.stem

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @property
    def file(self) -> str:
        return display_path(self.path)


def parse_spec(path: Path) -> tuple[Spec, Positions, Any]:
    """Read and validate the spec file itself (not its data)."""
    file = display_path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading BOM is not part of the YAML
    except FileNotFoundError:
        raise SpecError([Problem(file, None, "no such spec file; pass its path to `evalgate run`")]) from None
    except OSError as exc:
        raise SpecError([Problem(file, None, f"cannot read: {exc.strerror}")]) from None
    except UnicodeDecodeError as exc:
        raise SpecError([Problem(file, not_utf8_line(exc), not_utf8(exc))]) from None
    try:
        raw, positions = load(text)
    except YAMLSyntaxError as exc:
        raise SpecError([Problem(file, exc.line, str(exc))]) from None
    except RecursionError:
        raise SpecError([Problem(file, None, TOO_DEEP)]) from None
    if not isinstance(raw, dict):
        message = "a spec is a mapping with `version: 1`, `data`, `target`, `gates` and `scorers`"
        raise SpecError([Problem(file, 1, message)])
    problems: list[Problem] = []
    spec = None
    try:
        spec = Spec.model_validate(raw)
    except ValidationError as exc:
        problems += problems_from_validation(
            exc, file=file, positions=positions, model=Spec, raw=raw, type_names=list(TARGET_TYPES)
        )
    gates, gate_problems = validate_entries(
        raw.get("gates"), "gate", file=file, positions=positions, prefix=("gates",)
    )
    scorers, scorer_problems = validate_entries(
        raw.get("scorers"), "scorer", file=file, positions=positions, prefix=("scorers",)
    )
    problems += gate_problems + scorer_problems
    if problems or spec is None:
        problems.sort(key=lambda p: p.line or 0)
        raise SpecError(problems[:20])
    # entries are now their types' models, not mappings
    return spec.model_copy(update={"gates": gates, "scorers": scorers}), positions, raw


def build_checks(
    entries: list[Any],
    kind: Literal["gate", "scorer"],
    *,
    file: str,
    positions: Positions,
    prefix: tuple[str | int, ...],
    ctx: BuildContext,
    turn: int | None = None,
) -> tuple[list[Check], list[Problem], list[Problem]]:
    """Build validated entries; problems for duplicate ids and factories that refuse their arguments."""
    checks: list[Check] = []
    problems: list[Problem] = []
    warnings: list[Problem] = []
    seen: dict[str, int | None] = {}
    for index, model in enumerate(entries):
        where = (*prefix, index)
        line = positions.line(where)
        scorer_type = lookup(model.type)
        assert scorer_type is not None  # the discriminated union admitted it
        params = model.model_dump(exclude={"type", "id", "threshold"})
        try:
            scorer = scorer_type.build(params, id=model.id, ctx=ctx)
        except ValueError as exc:
            problems.append(Problem(file, line, f"{show_loc(where)}: {exc}"))
            continue
        if scorer.id in seen:
            problems.append(
                Problem(
                    file,
                    line,
                    f"{show_loc(where)}: the id `{scorer.id}` is already used at line {seen[scorer.id]}; "
                    f"give this entry its own `id:`",
                )
            )
            continue
        seen[scorer.id] = line
        threshold = getattr(model, "threshold", None)
        raw_threshold = threshold.model_dump(exclude_none=True) if isinstance(threshold, BaseModel) else threshold
        if raw_threshold is not None and not scorer.higher_is_better and not isinstance(raw_threshold, dict):
            warnings.append(
                Problem(
                    file,
                    positions.line((*where, "threshold")),
                    f"{show_loc(where)}: lower is better for `{scorer.type}`, but a number threshold is a "
                    f"minimum; did you mean `threshold: {{max: {raw_threshold}}}`?",
                )
            )
        elif isinstance(raw_threshold, dict) and not scorer.higher_is_better and "max" not in raw_threshold:
            warnings.append(
                Problem(
                    file,
                    positions.line((*where, "threshold")),
                    f"{show_loc(where)}: lower is better for `{scorer.type}`, but this threshold has only a `min`",
                )
            )
        entry = Entry(scorer.id, kind, raw_threshold, scorer.higher_is_better, turn)
        checks.append(Check(scorer, entry, line))
    return checks, problems, warnings


def load_spec(path: str | Path) -> LoadedSpec:
    """Parse, validate and prepare a spec and its data; SpecError on any problem."""
    from evalgate.data import CaseStream, load_cases  # data imports spec's models

    path = Path(path)
    spec, positions, _ = parse_spec(path)
    file = display_path(path)
    ctx = BuildContext(base_dir=path.parent, judge=spec.judge)
    gates, problems, warnings = build_checks(
        spec.gates, "gate", file=file, positions=positions, prefix=("gates",), ctx=ctx
    )
    scorers, more, more_warnings = build_checks(
        spec.scorers, "scorer", file=file, positions=positions, prefix=("scorers",), ctx=ctx
    )
    problems += more
    warnings += more_warnings
    if spec.target.type == "recorded" and isinstance(spec.data, str) and (gates or scorers) and not problems:
        # Replaying recorded runs costs nothing, so a big data set is validated while it is
        # scored, one item at a time, instead of being held in memory; a bad item still
        # ends the run with exit 2 and no results.
        stream = CaseStream(spec, path, positions, ctx)
        return LoadedSpec(path, spec, positions, None, gates, scorers, warnings, stream)
    cases, data_problems = load_cases(spec, path, positions, ctx)
    problems += data_problems
    if not problems and not gates and not scorers and not any(any(c.turn_checks or ()) for c in cases):
        problems.append(
            Problem(
                file,
                positions.line(()),
                "there are no gates and no scorers; add at least one under `gates:` or `scorers:`",
            )
        )
    if problems:
        raise SpecError(problems[:20])
    return LoadedSpec(path, spec, positions, cases, gates, scorers, warnings)


__all__ = [
    "CacheSettings",
    "Case",
    "Check",
    "CommandTarget",
    "HttpTarget",
    "JudgeSpec",
    "LoadedSpec",
    "OpenAITarget",
    "PythonTarget",
    "RecordedTarget",
    "ResponseMapping",
    "RetrySettings",
    "Spec",
    "Turn",
    "json_schema",
    "load_spec",
]
