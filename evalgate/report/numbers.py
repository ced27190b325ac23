"""How error bars and comparisons read, in the terminal table and the Markdown report alike."""

from __future__ import annotations

import math
from typing import Any

from evalgate.verdict import higher_is_better


def margin(result: Any) -> float | None:
    """Half the width of the 95% interval: the `± 0.04` of `0.82 ± 0.04`."""
    ci = getattr(result, "ci95", None)
    if not ci or ci[0] is None or ci[1] is None:
        return None
    return (ci[1] - ci[0]) / 2.0


def with_margin(value: float | None, result: Any, digits: int = 3) -> str:
    """`0.820 ± 0.041`, or the bare number when there is no interval."""
    if value is None or not math.isfinite(value):
        return "–"
    text = f"{value:.{digits}f}"
    half = margin(result)
    if half is not None and math.isfinite(half):
        text += f" ± {half:.{digits}f}"
    return text


def direction(result: Any) -> str:
    """What the user's bound says: `{max: 0.2}` reads lower is better whatever the scorer's default."""
    default = getattr(result, "higher_is_better", True)
    better = higher_is_better(getattr(result, "threshold", None), True if default is None else default)
    return "higher is better" if better else "lower is better"


def repeats_note(summary: Any) -> str:
    """`5 trials per item` when the run had repeats."""
    repeats = getattr(summary, "repeats", None) if not isinstance(summary, dict) else summary.get("repeats")
    return f"{repeats} trials per item" if isinstance(repeats, int) and repeats > 1 else ""
