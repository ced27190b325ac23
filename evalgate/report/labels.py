"""What every presentation shares: verdict policy, entry labels, bounds and numbers.

The terminal table, the Markdown report and JUnit XML say the same thing the same way: a turn is
numbered from 1 (`turn 1: includes:hi`), a bound reads `≥ 0.8 and ≤ 0.95`, a number has 3 decimals.
"""

from __future__ import annotations

import math
from typing import Any

from evalgate.verdict import ThresholdRange

# Verdicts that fail the step (exit 1), for each value of --fail-on / the `fail-on` input.
FAIL_ON: dict[str, frozenset[str]] = {
    "failed": frozenset({"failed"}),
    "scored": frozenset({"failed", "scored"}),
    "never": frozenset(),
}
FAILING_IDS_SHOWN = 5  # item ids listed beside a failed gate in a log


def fails(verdict: str | None, fail_on: str) -> bool:
    """Whether this verdict fails the step under `fail_on`."""
    return verdict in FAIL_ON[fail_on]


def turn_label(entry_id: str, turn: int | None) -> str:
    """An entry's label: its id, prefixed with its turn counted from 1 for per-turn entries."""
    return entry_id if turn is None else f"turn {turn + 1}: {entry_id}"


def num(value: float | None) -> str:
    """A score with 3 decimals; `–` when there is none (or it is not finite)."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.3f}"


def bound_text(threshold: ThresholdRange) -> str:
    """A threshold as text: `≥ 0.8`, `≤ 0.2`, `≥ 0.2 and ≤ 0.8`."""
    parts = []
    if threshold.min is not None:
        parts.append(f"≥ {threshold.min:g}")
    if threshold.max is not None:
        parts.append(f"≤ {threshold.max:g}")
    return " and ".join(parts)


class Row:
    """A gate or threshold result, top level (turn None) or per turn, with its kind.

    A plain class: every command imports this module, and a dataclass generates and compiles its
    methods at import (about 0.4 ms, and `dataclasses` itself 0.7 ms for `evalgate --help`)."""

    __slots__ = ("id", "kind", "result", "turn")

    def __init__(self, kind: str, id: str, turn: int | None, result: Any) -> None:
        self.kind = kind  # "gate" or "threshold"
        self.id = id
        self.turn = turn
        self.result = result

    @property
    def label(self) -> str:
        return turn_label(self.id, self.turn)


def result_rows(outcome: Any) -> list[Row]:
    """Every gate, then every threshold: top level first, then per turn (an Outcome or Results)."""
    turns = outcome.turn_results or []
    out = [Row("gate", g.id, None, g) for g in outcome.gate_results]
    out += [Row("gate", g.id, t.index, g) for t in turns for g in t.gate_results]
    out += [Row("threshold", r.id, None, r) for r in outcome.threshold_results]
    out += [Row("threshold", r.id, t.index, r) for t in turns for r in t.threshold_results]
    return out


def could_not_evaluate(errored_items: int, total_items: int, message: str = "") -> str:
    """The headline of a run that measured nothing: `could not evaluate: 12 of 12 items errored: <the
    most common error>`; `message` comes escaped for where it goes."""
    text = f"could not evaluate: {errored_items} of {total_items} items errored"
    return f"{text}: {message}" if message else text
