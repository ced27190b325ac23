"""The adaptive in-flight limit (AIMD): each 429 halves it once per window, each success adds back 1/limit."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass


class AdaptiveLimiter:
    """At most `limit` callers inside at once; the limit halves on 429s and recovers additively.

    Use as `with limiter.slot() as slot: ...; slot.throttled()` or acquire/release by hand. A 429
    only lowers the limit if its request started after the last decrease, so a burst of 429s from
    requests that were in flight together counts once (as TCP does per round trip).
    """

    def __init__(self, limit: int, min_limit: int = 1, decrease: float = 0.5) -> None:
        self.max_limit = max(1, limit)
        self.min_limit = max(1, min(min_limit, self.max_limit))
        self.decrease = decrease
        self._window = float(self.max_limit)
        self._in_flight = 0
        self._epoch = 0
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)  # a slot freed, for callers waiting for one
        self._waiting = 0
        self.lowest = self.max_limit
        self.decreases = 0

    @property
    def limit(self) -> int:
        return max(self.min_limit, int(self._window))

    def acquire(self) -> int:
        """Wait for a free slot; returns a token for `release`."""
        with self._lock:
            while self._in_flight >= self.limit:
                self._waiting += 1
                try:
                    self._freed.wait()
                finally:
                    self._waiting -= 1
            self._in_flight += 1
            return self._epoch

    def release(self, token: int, *, throttled: bool = False, ok: bool = False) -> None:
        """Free the slot; `throttled` for a 429 reply, `ok` for a success (recovers the limit)."""
        with self._lock:
            self._in_flight -= 1
            if throttled and token == self._epoch:
                self._window = max(float(self.min_limit), self._window * self.decrease)
                self._epoch += 1
                self.decreases += 1
                self.lowest = min(self.lowest, self.limit)
            elif ok and self._window < self.max_limit:
                self._window = min(float(self.max_limit), self._window + 1.0 / self._window)
            if self._waiting:  # a limit that rose frees more than one slot
                self._freed.notify_all()

    @contextlib.contextmanager
    def slot(self) -> Iterator[_Slot]:
        token = self.acquire()
        slot = _Slot()
        try:
            yield slot
        finally:
            self.release(token, throttled=slot.was_throttled, ok=slot.was_ok)


@dataclass
class _Slot:
    was_throttled: bool = False
    was_ok: bool = False

    def throttled(self) -> None:
        self.was_throttled = True

    def ok(self) -> None:
        self.was_ok = True
