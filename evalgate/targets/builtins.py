"""The built-in target types: one builder each. The network targets' modules are imported when one
is built, so a recorded or python run never loads the HTTP stack."""

from __future__ import annotations

from evalgate.load import spec as s
from evalgate.run.user_code import import_callable
from evalgate.targets.base import Target
from evalgate.targets.command import CommandTarget
from evalgate.targets.python import PythonTarget
from evalgate.targets.recorded import RecordedTarget
from evalgate.targets.registry import TargetContext, target_type


@target_type("recorded")
def recorded(config: s.RecordedTarget, ctx: TargetContext) -> Target:
    return RecordedTarget()


@target_type("python")
def python(config: s.PythonTarget, ctx: TargetContext) -> Target:
    return PythonTarget(import_callable(config.function, ctx.base_dir), config.timeout_s)


@target_type("command")
def command(config: s.CommandTarget, ctx: TargetContext) -> Target:
    return CommandTarget(config.run, ctx.base_dir, config.timeout_s, config.env)


@target_type("http")
def http(config: s.HttpTarget, ctx: TargetContext) -> Target:
    from evalgate.targets.http import HttpTarget

    return HttpTarget(config, ctx.base_dir, ctx.concurrency, ctx.use_cache)


@target_type("openai")
def openai(config: s.OpenAITarget, ctx: TargetContext) -> Target:
    from evalgate.targets.openai import OpenAITarget

    return OpenAITarget(config, ctx.base_dir, ctx.concurrency, ctx.use_cache)


@target_type("mastra")
def mastra(config: s.MastraTarget, ctx: TargetContext) -> Target:
    from evalgate.targets.mastra import MastraTarget

    return MastraTarget(config, ctx.base_dir, ctx.concurrency, ctx.use_cache)
