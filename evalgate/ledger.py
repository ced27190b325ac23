"""Who spent what: each judge call is charged to the item and the check that made it.

The engine opens a ledger on the thread that scores an item and names the judged check before
calling it; the judge charges every billed call to whatever ledger is open on its thread. No
ledger open (a judge used outside a run): nothing is recorded.
"""

from __future__ import annotations

import threading

_local = threading.local()


class Ledger:
    """One item's judge spend, by check label (`faithfulness`, `turn-1:rubric`)."""

    __slots__ = ("by_check", "check")

    def __init__(self) -> None:
        self.by_check: dict[str, float] = {}
        self.check: str | None = None


def open_ledger() -> Ledger:
    ledger = Ledger()
    _local.ledger = ledger
    return ledger


def close_ledger() -> None:
    _local.ledger = None


def charge(usd: float | None) -> None:
    """A judge call's cost; None (a model without a price) is not charged: summary.judge says it is unknown."""
    ledger = getattr(_local, "ledger", None)
    if ledger is None or ledger.check is None or usd is None:
        return
    ledger.by_check[ledger.check] = ledger.by_check.get(ledger.check, 0.0) + usd
