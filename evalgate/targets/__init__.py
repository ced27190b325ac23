"""Targets: one module per `target.type`, registered in `targets/registry.py` (plug-ins through the
`evalgate.targets` entry points); `build_target` builds the one a spec names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalgate.targets import builtins  # noqa: F401  - registers the built-in types
from evalgate.targets.base import History, Target, TargetError
from evalgate.targets.registry import PLUGIN_PROBLEMS, PluginSettings, TargetContext, lookup, target_type, type_names


def build_target(
    config: Any,
    base_dir: Path,
    *,
    concurrency: int = 4,
    use_cache: bool = True,
) -> Target:
    """The adapter for a spec's `target:` (a `spec.TargetSpec`, or a plug-in's settings model);
    ValueError if it cannot be set up.

    concurrency sizes the network targets' connection pools; use_cache=False bypasses their cache.
    """
    found = lookup(config.type)
    if found is None:
        why = PLUGIN_PROBLEMS.get(config.type)
        raise ValueError(f"unsupported target type {config.type!r}" + (f": {why}" if why else ""))
    return found.build(config, TargetContext(base_dir, concurrency, use_cache))


__all__ = ["History", "PluginSettings", "Target", "TargetContext", "TargetError", "build_target", "target_type",
           "type_names"]
