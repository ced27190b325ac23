"""One registry from spec `type` names (and Mastra's camelCase aliases) to scorer factories.

A factory's signature is its spec schema: the registry turns its parameters into a pydantic
model for `gates:` entries and one (with `threshold`) for `scorers:` entries.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from evalgate.load.spec.context import BuildContext
from evalgate.scorers.base import Scorer

ID_MAX = 40

Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True)]  # strict: `true` is no threshold


class Bounds(BaseModel):
    """A range threshold: the average must lie within [min, max]; either may be absent."""

    model_config = ConfigDict(extra="forbid")

    min: Unit | None = None
    max: Unit | None = None
    confidence: float | None = Field(
        default=None, gt=0.5, lt=1.0, allow_inf_nan=False, strict=True,
        description="decide on the interval at this confidence, not on the average: inside the bounds passes, "
        "outside misses, overlapping a bound is uncertain (see when_uncertain)",
    )
    when_uncertain: Literal["pass", "fail"] | None = Field(
        default=None, description="with `confidence`: what an uncertain result does to the verdict (default pass)"
    )

    @model_validator(mode="after")
    def _check(self) -> Bounds:
        if self.min is None and self.max is None:
            raise ValueError("a threshold mapping needs `min` and/or `max`")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"threshold min ({self.min}) is greater than max ({self.max})")
        if self.when_uncertain is not None and self.confidence is None:
            raise ValueError("`when_uncertain` needs `confidence` (e.g. `confidence: 0.95`)")
        return self


Threshold = Unit | Bounds
NOT_SCORABLE_HELP = ("when every result of this gate or threshold was not scorable: leave_out (Mastra's runEvals) "
                     "leaves it out of the verdict, fail makes it not met; default: the spec's `not_scorable`")


@dataclass
class ScorerType:
    name: str
    factory: Callable[..., Any]
    aliases: tuple[str, ...] = ()
    higher_is_better: bool = True
    judged: bool = False
    main: str | None = None
    _models: dict[str, type[BaseModel]] = field(default_factory=dict, repr=False)

    @property
    def summary(self) -> str:
        return (inspect.getdoc(self.factory) or "").split("\n\n")[0].replace("\n", " ")

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        """The factory's signature, read once: each entry built asked for it several times (seconds a 10,000)."""
        return inspect.signature(self.factory)

    @functools.cached_property
    def params(self) -> dict[str, inspect.Parameter]:
        return {
            name: p
            for name, p in self.signature.parameters.items()
            if p.kind is not inspect.Parameter.KEYWORD_ONLY
        }

    def model(self, kind: Literal["gate", "scorer"]) -> type[BaseModel]:
        """The pydantic model of this type's entry under `gates:` or `scorers:`."""
        if kind not in self._models:
            hints = typing.get_type_hints(self.factory, include_extras=True)
            fields: dict[str, Any] = {
                "type": (Literal[(self.name, *self.aliases)], ...),
                "id": (str | None, Field(default=None, min_length=1)),
            }
            for name, param in self.params.items():
                default = ... if param.default is inspect.Parameter.empty else param.default
                fields[name] = (hints.get(name, Any), default)
            if kind == "scorer":
                fields["threshold"] = (Threshold | None, None)
            fields["not_scorable"] = (Literal["leave_out", "fail"] | None, Field(
                default=None, description=NOT_SCORABLE_HELP))
            title = "".join(part.title() for part in self.name.split("_"))
            with warnings.catch_warnings():  # `schema` (json_schema's key) shadows a BaseModel attribute
                warnings.simplefilter("ignore", UserWarning)
                self._models[kind] = create_model(
                    f"{title}{'Gate' if kind == 'gate' else 'Scorer'}",
                    __config__=ConfigDict(extra="forbid", title=f"{self.name} ({kind})"),
                    __doc__=inspect.getdoc(self.factory),
                    **fields,
                )
        return self._models[kind]

    @property
    def takes_nulls(self) -> bool:
        """The factory tells an explicit null from an absent parameter (keyword-only `nulls`)."""
        return "nulls" in self.signature.parameters

    def build(
        self, params: dict[str, Any], *, id: str | None = None, ctx: BuildContext, nulls: frozenset[str] = frozenset()
    ) -> Scorer:
        """A Scorer from validated parameters; the id defaults to `type:main-argument`.

        `nulls`: the parameters the entry set to null explicitly, for a factory that takes them.
        """
        accepted = self.params
        kwargs = {k: v for k, v in params.items() if k in accepted}
        if "ctx" in self.signature.parameters:
            kwargs["ctx"] = ctx
        if nulls and self.takes_nulls:
            kwargs["nulls"] = nulls
        made = self.factory(**kwargs)
        scorer_id = id or default_id(self, kwargs)
        if isinstance(made, Scorer):
            return replace(made, id=scorer_id, type=self.name)
        return Scorer(
            id=scorer_id,
            fn=made,
            higher_is_better=self.higher_is_better,
            judged=self.judged,
            type=self.name,
        )


REGISTRY: dict[str, ScorerType] = {}
ALIASES: dict[str, str] = {}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def scorer_type(
    name: str,
    *,
    higher_is_better: bool = True,
    judged: bool = False,
    aliases: tuple[str, ...] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Scorer]]:
    """Register a factory under `name` (and its camelCase alias).

    The decorated function, called from Python, returns a ready Scorer:
    `checks.includes("Brooklyn")` has id `includes:Brooklyn`; pass `id=` to name it.
    """

    def register(factory: Callable[..., Any]) -> Callable[..., Scorer]:
        all_aliases = tuple(dict.fromkeys(a for a in (camel(name), *aliases) if a != name))
        entry = ScorerType(name, factory, all_aliases, higher_is_better, judged)
        REGISTRY[name] = entry
        for alias in all_aliases:
            ALIASES[alias] = name

        @functools.wraps(factory)
        def make(*args: Any, id: str | None = None, ctx: BuildContext | None = None, **kwargs: Any) -> Scorer:
            bound = inspect.signature(factory).bind_partial(*args, **kwargs)
            bound.apply_defaults()
            params = {k: v for k, v in bound.arguments.items() if k != "ctx"}
            return entry.build(params, id=id, ctx=ctx or BuildContext())

        make.scorer_type = entry  # type: ignore[attr-defined]
        return make

    return register


def lookup(type_name: str) -> ScorerType | None:
    return REGISTRY.get(ALIASES.get(type_name, type_name))


def default_id(entry: ScorerType, params: dict[str, Any]) -> str:
    """`type:main-argument`, readable in a PR comment (`called_tool:get_weather`)."""
    names = list(entry.params)
    if not names:
        return entry.name
    value = params.get(names[0])
    if value is None and params.get("reference") == "ground_truth":  # a check given the items' ground truth
        return f"{entry.name}:ground_truth"
    default = entry.params[names[0]].default
    if default is not inspect.Parameter.empty and value == default:
        return entry.name  # an option left at its default does not name the entry
    if isinstance(value, str):
        shown = value.rsplit(":", 1)[-1] if entry.name == "python" else value
    elif isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        shown = ",".join(str(v) for v in value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        shown = f"{value:g}"
    else:
        return entry.name
    shown = re.sub(r"\s+", " ", shown).strip()
    if len(shown) > ID_MAX:
        shown = shown[: ID_MAX - 1] + "…"
    return f"{entry.name}:{shown}" if shown else entry.name
