"""The `recorded` target: the item's own recorded output(s)."""

from __future__ import annotations

from evalgate.load.cases import Case
from evalgate.replies import Run
from evalgate.targets.base import History, TargetError


class RecordedTarget:
    concurrent = False

    def run(self, case: Case, turn: int, history: History) -> Run:
        if case.recorded is None:
            raise TargetError("this item has no recorded output")
        run: Run = case.recorded[turn]
        return run

    def close(self) -> None:
        pass
