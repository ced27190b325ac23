"""Targets: one module per `target.type`; `build_target` picks one from the spec."""

from __future__ import annotations

from pathlib import Path

from evalgate import spec as s
from evalgate.targets.base import Target, TargetError
from evalgate.targets.command import CommandTarget
from evalgate.targets.python import PythonTarget
from evalgate.targets.recorded import RecordedTarget
from evalgate.user_code import import_callable


def build_target(
    config: s.TargetSpec,  # type: ignore[valid-type]
    base_dir: Path,
    *,
    concurrency: int = 4,
    use_cache: bool = True,
) -> Target:
    """The adapter for a spec's `target:`; ValueError if it cannot be set up.

    concurrency sizes the network targets' connection pools; use_cache=False bypasses their cache.
    """
    if isinstance(config, s.RecordedTarget):
        return RecordedTarget()
    if isinstance(config, s.PythonTarget):
        return PythonTarget(import_callable(config.function, base_dir), config.timeout_s)
    if isinstance(config, s.CommandTarget):
        return CommandTarget(config.run, base_dir, config.timeout_s, config.env)
    if isinstance(config, s.HttpTarget):
        from evalgate.targets.http import HttpTarget  # imported on demand: jmespath, requests

        return HttpTarget(config, base_dir, concurrency, use_cache)
    if isinstance(config, s.OpenAITarget):
        from evalgate.targets.openai import OpenAITarget

        return OpenAITarget(config, base_dir, concurrency, use_cache)
    if isinstance(config, s.MastraTarget):
        from evalgate.targets.mastra import MastraTarget

        return MastraTarget(config, base_dir, concurrency, use_cache)
    raise ValueError(f"unsupported target type {config.type!r}")


__all__ = ["Target", "TargetError", "build_target"]
