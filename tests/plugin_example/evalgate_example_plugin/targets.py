"""The `echo` target: replies with the item's input, upper-cased if the spec says so."""

from __future__ import annotations

from evalgate.load.cases import Case
from evalgate.replies import Run
from evalgate.targets import History, PluginSettings, Target, TargetContext, target_type


class EchoSettings(PluginSettings):
    """`target: {type: echo, prefix: "...", upper: true}`"""

    prefix: str = ""
    upper: bool = False


class EchoTarget:
    concurrent = False  # no I/O: the engine runs items inline

    def __init__(self, settings: EchoSettings) -> None:
        self.settings = settings

    def run(self, case: Case, turn: int, history: History) -> Run:
        text = self.settings.prefix + str(case.item.turn_inputs()[turn])
        return Run(texts=[text.upper() if self.settings.upper else text])

    def close(self) -> None:
        pass


@target_type("echo", config=EchoSettings)
def echo(settings: EchoSettings, ctx: TargetContext) -> Target:
    return EchoTarget(settings)
