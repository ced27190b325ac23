"""Who spent what: each judge call is charged to the item and the check that made it.

The engine opens a ledger on the thread that scores an item and names the judged check before
calling it; the judge charges every billed call to whatever ledger is open on its thread. No
ledger open (a judge used outside a run): nothing is recorded. The ledger also names the trial being
scored (with `repeats`), so the judge's response cache keeps trials apart as the targets' does.
"""

from __future__ import annotations

import threading

from evalgate.run.budget import saturated

_local = threading.local()


class Ledger:
    """One item's judge spend, by check label (`faithfulness`, `turn-1:rubric`), and its tokens."""

    __slots__ = ("by_check", "check", "tokens", "trial")

    def __init__(self, trial: int | None = None) -> None:
        self.by_check: dict[str, float] = {}
        self.tokens = 0  # journaled: a resumed run's token cap counts the judge calls this item made
        self.check: str | None = None
        self.trial = trial


def open_ledger(trial: int | None = None) -> Ledger:
    ledger = Ledger(trial)
    _local.ledger = ledger
    return ledger


def close_ledger() -> None:
    _local.ledger = None


def current_trial() -> int | None:
    """The trial being scored on this thread (with `repeats`); None without repeats or outside a run."""
    ledger = getattr(_local, "ledger", None)
    return ledger.trial if ledger is not None else None


def charge(usd: float | None, tokens: int = 0) -> None:
    """A judge call's cost and tokens; a cost of None (a model without a price) is not charged: summary.judge
    says it is unknown."""
    ledger = getattr(_local, "ledger", None)
    if ledger is None or ledger.check is None:
        return
    ledger.tokens += tokens
    if usd is None:
        return
    ledger.by_check[ledger.check] = saturated(ledger.by_check.get(ledger.check, 0.0) + usd)
