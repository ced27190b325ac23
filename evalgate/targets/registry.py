"""One registry from `target.type` names to target builders, as `scorers.registry` is for scorers.

The built-in types register in `targets/builtins.py` (their modules are imported when a target is
built, not before: the HTTP stack stays unloaded for a recorded run). Third-party types come from the
`evalgate.targets` entry points (docs/targets.md): the entry point's module registers its type with
`@target_type(name, config=Model)`, where `Model` is the pydantic model of its `target:` settings.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalgate.infra.plugins import installed_entry_points
from evalgate.load.spec.plugins import register_target_model
from evalgate.targets.base import Target

ENTRY_POINTS = "evalgate.targets"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TargetContext:
    """What a builder gets beside its settings: the spec's folder, the items in flight, the cache switch."""

    base_dir: Path
    concurrency: int = 4
    use_cache: bool = True


Builder = Callable[[Any, TargetContext], Target]


@dataclass(frozen=True)
class TargetType:
    name: str
    build: Builder
    config: type[BaseModel] | None = None  # a plug-in's settings model; None for the built-ins (spec.models)


class PluginSettings(BaseModel):
    """The base of a plug-in's `target:` model: `type` plus its own settings, unknown keys refused."""

    model_config = ConfigDict(extra="forbid")

    type: str


REGISTRY: dict[str, TargetType] = {}
PLUGIN_PROBLEMS: dict[str, str] = {}  # entry point name -> why it did not load
_loaded = threading.Lock()
_done = False


def target_type(name: str, *, config: type[BaseModel] | None = None) -> Callable[[Builder], Builder]:
    """Register a builder `(settings, TargetContext) -> Target` under `name`.

    config: a plug-in's settings model (a `PluginSettings` subclass: `type` and its own keys); a spec's
    `target:` with this `type` is validated against it, and the builder gets the validated model.
    """

    def register(build: Builder) -> Builder:
        REGISTRY[name] = TargetType(name, build, config)
        if config is not None:
            register_target_model(name, config)
        return build

    return register


def lookup(name: str) -> TargetType | None:
    load_plugins()
    return REGISTRY.get(name)


def load_plugins() -> dict[str, TargetType]:
    """Register every installed `evalgate.targets` entry point (once; idempotent; the built-ins
    registered when `evalgate.targets` was imported).
    An entry point that fails to import, or registers no type of its name, is kept in PLUGIN_PROBLEMS:
    a spec that names it is told why, the others run."""
    global _done
    with _loaded:
        if _done:
            return REGISTRY
        for point in installed_entry_points(ENTRY_POINTS):
            if point.name in REGISTRY:
                PLUGIN_PROBLEMS[point.name] = f"`{point.value}` would replace the built-in target type {point.name!r}"
                continue
            try:
                point.load()
            except Exception as exc:  # a broken plug-in costs only the specs that use it
                PLUGIN_PROBLEMS[point.name] = f"`{point.value}` failed to load: {type(exc).__name__}: {exc}"
                continue
            if point.name not in REGISTRY:
                PLUGIN_PROBLEMS[point.name] = f"`{point.value}` registered no target type {point.name!r}"
            else:
                log.debug("target type %r from the entry point %s", point.name, point.value)
        _done = True
    return REGISTRY


def type_names() -> list[str]:
    return list(load_plugins())
