"""What a scorer is, and what it may return."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalgate.load.items import Item
from evalgate.replies import Run


class NotScorable(Exception):
    """Return or raise this when an item lacks what the scorer needs.

    Not scorable results are left out of averages and counted in `summary.not_scorable`.
    """

    def __init__(self, reason: str = "not scorable") -> None:
        super().__init__(reason)
        self.reason = reason


class ScoreError(ValueError):
    """A scorer returned something that is not a score."""


ScoreFn = Callable[[Item, Run], Any]


@dataclass(frozen=True, slots=True)
class Scorer:
    """A named scoring function of (item, run) -> score in [0, 1]."""

    id: str
    fn: ScoreFn
    higher_is_better: bool = True
    judged: bool = False
    type: str = "python"

    def __call__(self, item: Item, run: Run) -> Any:
        return self.fn(item, run)


def normalize(result: Any) -> tuple[float | None, str | None]:
    """(score, reason) from what a scorer returned; score None means not scorable.

    Accepts a number, (number, reason), a mapping {score, reason}, or a NotScorable.
    """
    if result.__class__ is float:
        return _checked(result), None
    if isinstance(result, NotScorable):
        return None, result.reason
    reason = None
    if isinstance(result, tuple) and len(result) == 2:
        result, reason = result
    elif isinstance(result, dict) and "score" in result:
        result, reason = result["score"], result.get("reason")
    if isinstance(result, NotScorable):
        return None, result.reason
    if result is None:
        return None, str(reason) if reason else "not scorable"
    if isinstance(result, bool) or not isinstance(result, (int, float)):
        raise ScoreError(f"a scorer must return a number in [0, 1], got {type(result).__name__}")
    return _checked(float(result)), None if reason is None else str(reason)


def _checked(score: float) -> float:
    # NaN passes through: Mastra averages it, and a non-finite average fails its bound.
    if not math.isnan(score) and not 0.0 <= score <= 1.0:
        raise ScoreError(f"a score must be in [0, 1], got {score}")
    return score
