"""`--resume`: items already in `<output>.items.jsonl` are not run again.

Each journal record is turned back into an `ItemResult` whose contributions are rebuilt from
its recorded gates, scores, not-scorable results and scorer errors, so the aggregator sees
every item exactly once, whether it ran now or in the killed run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from evalgate.cases import Case, Check
from evalgate.engine import Contribution, ItemResult, TurnScores
from evalgate.results import read_journal
from evalgate.runs import Run, RunFormatError, run_from_value

NAN = float("nan")


def finished_records(journal: Path) -> dict[int, dict[str, Any]]:
    """The finished items of a journal by data index (a later line for the same index wins)."""
    return {r["index"]: r for r in read_journal(journal) if isinstance(r.get("index"), int)}


def skip_finished(
    cases: Iterable[Case],
    records: dict[int, dict[str, Any]],
    gates: list[Check],
    scorers: list[Check],
    take: Callable[[ItemResult], None],
) -> Iterator[Case]:
    """Yield the cases still to run; hand each already-finished one to `take` as an ItemResult.

    A record whose id does not match the case at that index (the data changed) is run again.
    """
    for case in cases:
        record = records.get(case.index)
        if record is not None and record.get("id") == case.id:
            take(item_from_record(record, case, gates, scorers))
        else:
            yield case


def item_from_record(record: dict[str, Any], case: Case, gates: list[Check], scorers: list[Check]) -> ItemResult:
    """The ItemResult a journal record came from, contributions included."""
    item = ItemResult(
        index=case.index,
        id=case.id,
        input=record.get("input"),
        run=_run(record.get("output")),
        error=record.get("error"),
        gates=dict(record.get("gates") or {}),
        scores=dict(record.get("scores") or {}),
        reasons=dict(record.get("reasons") or {}),
        not_scorable=dict(record.get("not_scorable") or {}),
        scorer_errors=dict(record.get("scorer_errors") or {}),
        duration_ms=float(record.get("duration_ms") or 0.0),
        judge_cost=dict(record.get("judge_cost_usd") or {}),
    )
    if case.item.turns is not None:
        item.turn_count = len(case.item.turns)
    if item.error is not None:
        return item  # an errored target: no scores, no contributions
    item.contributions = contributions(item, gates, scorers, "")
    turns = record.get("turns")
    if case.turn_checks is not None and isinstance(turns, list):
        item.turns = []
        for index, checks in enumerate(case.turn_checks):
            turn = turns[index] if index < len(turns) and isinstance(turns[index], dict) else {}
            scores = TurnScores(index, turn.get("input"), _run(turn.get("output")) or Run(),
                                dict(turn.get("gates") or {}), dict(turn.get("scores") or {}),
                                dict(turn.get("reasons") or {}))
            item.turns.append(scores)
            turn_gates = [c for c in checks if c.entry.kind == "gate"]
            turn_scorers = [c for c in checks if c.entry.kind != "gate"]
            view = ItemResult(index=0, id="", input=None, gates=scores.gates, scores=scores.scores,
                              scorer_errors=item.scorer_errors)
            item.contributions += contributions(view, turn_gates, turn_scorers, f"turn-{index}:")
    return item


def contributions(item: ItemResult, gates: list[Check], scorers: list[Check], label: str) -> list[Contribution]:
    """What each check gave the aggregator for this item, as the engine's `_score` decided it.

    A gate always contributes (a raising gate scored 0); absent from `gates` means not scorable.
    A scorer contributes its score, nothing if it errored, else None (not scorable).
    A null score in the journal was a NaN (strict JSON has none).
    """
    out: list[Contribution] = []
    for check in gates:
        key = check.entry.id
        out.append((check.entry, _number(item.gates[key]) if key in item.gates else None))
    for check in scorers:
        key = check.entry.id
        if key in item.scores:
            out.append((check.entry, _number(item.scores[key])))
        elif f"{label}{key}" not in item.scorer_errors:
            out.append((check.entry, None))
    return out


def _number(value: Any) -> float:
    return NAN if value is None else float(value)


def _run(value: Any) -> Run | None:
    if value is None:
        return None
    try:
        return run_from_value(value)
    except RunFormatError:
        return Run()
