"""Targets: one module per `target.type`; `build_target` picks one from the spec."""

from __future__ import annotations

from pathlib import Path

from evalgate import spec as s
from evalgate.loading import import_callable
from evalgate.targets.base import Target, TargetError
from evalgate.targets.command import CommandTarget
from evalgate.targets.python import PythonTarget
from evalgate.targets.recorded import RecordedTarget


def build_target(config: s.TargetSpec, base_dir: Path) -> Target:  # type: ignore[valid-type]
    """The adapter for a spec's `target:`; ValueError if it cannot be set up."""
    if isinstance(config, s.RecordedTarget):
        return RecordedTarget()
    if isinstance(config, s.PythonTarget):
        return PythonTarget(import_callable(config.function, base_dir), config.timeout_s)
    if isinstance(config, s.CommandTarget):
        return CommandTarget(config.run, base_dir, config.timeout_s, config.env)
    raise ValueError(f"unsupported target type {config.type!r}")


__all__ = ["Target", "TargetError", "build_target"]
