"""The `target:` models that plug-ins add: a third-party target type's settings, validated as the
built-in ones are. Filled by `evalgate.targets.registry` when it loads the `evalgate.targets` entry
points; read by `Spec` when a spec's `target.type` is not built in.
"""

from __future__ import annotations

from pydantic import BaseModel

PLUGIN_TARGETS: dict[str, type[BaseModel]] = {}


def register_target_model(name: str, model: type[BaseModel]) -> None:
    PLUGIN_TARGETS[name] = model
