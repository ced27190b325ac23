"""What the engine runs: a Case (an item ready to run) and a Check (a built gate or scorer)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalgate.decide.verdict import Entry
from evalgate.load.items import Item
from evalgate.scorers.base import Scorer


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
    trial: int | None = None  # with `repeats`: which trial this is (0-based); targets key their cache on it

    @property
    def id(self) -> str:
        return self.item.id or f"item-{self.index + 1}"
