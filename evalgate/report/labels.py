"""What every presentation shares: verdict policy, entry labels, bounds and numbers.

The terminal table, the Markdown report and JUnit XML say the same thing the same way: a turn is
numbered from 1 (`turn 1: includes:hi`), a bound reads `≥ 0.8 and ≤ 0.95`, a number has 3 decimals.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # an annotation only: `evalgate --help` (which needs FAIL_ON) need not import pydantic
    from evalgate.decide.verdict import ThresholdRange

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


UNSCORED_SHOWN = 3  # entries named in a verdict's reason; the rest are counted


def unscored_entries(outcome: Any) -> tuple[list[str], list[str]]:
    """`label: why` of the gates and thresholds no result could be scored for (they failed the verdict), and
    of those whose every result was not scorable (left out of it, as Mastra's runEvals): an Outcome or Results,
    plain text (untrusted: the caller escapes it)."""
    failed = [f"{row.label}: {row.result.unscored}" for row in result_rows(outcome)
              if getattr(row.result, "unscored", None)]
    summary = getattr(outcome, "summary", None)
    records = getattr(summary, "not_scored", None) if summary is not None else getattr(outcome, "not_scored", None)
    left_out = []
    for record in records or []:
        turn = _field(record, "turn")
        left_out.append(f"{turn_label(str(_field(record, 'id')), turn if isinstance(turn, int) else None)}: "
                        f"{_field(record, 'reason')}")
    return failed, left_out


def shown_unscored(entries: list[str]) -> str:
    """The first few of `unscored_entries`' lines, the rest counted."""
    more = len(entries) - UNSCORED_SHOWN
    return "; ".join(entries[:UNSCORED_SHOWN]) + (f"; and {more} more" if more > 0 else "")


def _field(record: Any, name: str) -> Any:
    return record.get(name) if isinstance(record, dict) else getattr(record, name, None)


def _own_error(record: Any) -> str:
    """A run's error, else its scorers' errors (`id: reason`), else ""."""
    error = _field(record, "error")
    if error:
        return str(error)
    scorer_errors = _field(record, "scorer_errors")
    if isinstance(scorer_errors, dict) and scorer_errors:
        return "; ".join(f"{k}: {v}" for k, v in scorer_errors.items())
    return ""


REASONS_SHOWN = 3  # distinct reasons listed for one item's trials; the rest are counted


def item_error(item: Any) -> str:
    """Why an item errored, shown alike for items, trials and single scorers. With trials, every distinct
    reason with the trials it hit, in trial order (`2 of 3 trials errored: trial 2: tone: boom; trials 1, 3:
    timeout`); else its own error or its scorers' (`id: reason`); else ""."""
    trials = _field(item, "trials") or []
    by_reason: dict[str, list[int]] = {}
    for n, trial in enumerate(trials, 1):
        error = _own_error(trial)
        if error:
            by_reason.setdefault(error, []).append(n)
    if not by_reason:
        return _own_error(item)
    errored = sum(len(ns) for ns in by_reason.values())
    parts = [f"{trial_names(ns)}: {reason}" for reason, ns in list(by_reason.items())[:REASONS_SHOWN]]
    if len(by_reason) > REASONS_SHOWN:
        parts.append(f"… and {len(by_reason) - REASONS_SHOWN} more reasons")
    return f"{errored} of {len(trials)} trials errored: " + "; ".join(parts)


def trial_names(numbers: list[int]) -> str:
    """`trial 2` or `trials 1, 3`: which trials (counted from 1)."""
    return f"trial {numbers[0]}" if len(numbers) == 1 else "trials " + ", ".join(map(str, numbers))


def errored_count(summary: Any) -> str:
    """`4 items errored`, and with repeats `4 of 4 items errored (8 of 8 trials)`: items and trials apart."""
    errored, total = _field(summary, "errored_items") or 0, _field(summary, "total_items") or 0
    trials, errored_trials = _field(summary, "trials"), _field(summary, "errored_trials")
    if not isinstance(trials, int) or not isinstance(errored_trials, int) or isinstance(trials, bool):
        return f"{errored} of {total} items errored"
    return f"{errored} of {total} items errored ({errored_trials} of {trials} trials)"


def could_not_evaluate(summary: Any, message: str = "") -> str:
    """The headline of a run that measured nothing: `could not evaluate: 12 of 12 items errored (24 of 24
    trials): <the most common error>`; `message` comes escaped for where it goes."""
    text = f"could not evaluate: {errored_count(summary)}"
    return f"{text}: {message}" if message else text


CURVE_POINTS = 6  # the ks a one-line pass^k curve shows at most


def curve_points(curve: Any) -> list[Any]:
    """The points of a pass^k curve a short line shows: every k up to 6, else k = 1, 2, 3, a few between, K."""
    points = list(curve or [])
    if len(points) <= CURVE_POINTS:
        return points
    last = len(points)
    shown = sorted({1, 2, 3, last // 4, last // 2, last})
    return [points[k - 1] for k in shown if k >= 1]


def curve_line(curve: Any) -> str:
    """`pass^k (all k trials pass): k=1 0.80 · k=2 0.66 · k=5 0.41 [0.30, 0.53]; pass@k (any of k passes): …`,
    the interval at the last k (K)."""
    points = curve_points(curve)
    if not points:
        return ""
    last = points[-1]
    every = " · ".join(f"k={p.k} {p.pass_all_k:.2f}" for p in points)
    some = " · ".join(f"k={p.k} {p.pass_at_k:.2f}" for p in points)
    low, high = last.pass_all_k_ci95
    at_low, at_high = last.pass_at_k_ci95
    return (f"pass^k (all k trials pass): {every} [{low:.2f}, {high:.2f}]; "
            f"pass@k (any of k passes): {some} [{at_low:.2f}, {at_high:.2f}]")
