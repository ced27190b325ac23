"""When to send a request again: `RetryPolicy`, the statuses worth retrying, `Retry-After`."""

from __future__ import annotations

import email.utils
import random
import re
import time
from dataclasses import dataclass
from typing import Any

RETRY_STATUSES = frozenset({408, 429})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry.

    attempts: total tries per request, the first included (1 = never retry).
    backoff_s: the base delay; try n waits about backoff_s * 2**(n-1), jittered to [50%, 100%].
    max_backoff_s: the cap on any one computed backoff.
    max_retry_after_s: the longest `Retry-After` honoured (independent of max_backoff_s); a server
    asking for more errors the request instead of stalling the run.
    """

    attempts: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    max_retry_after_s: float = 60.0

    def delay(self, retry: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number `retry` (1 for the first retry).

        The jittered backoff, or the server's Retry-After when that is longer (not capped by
        max_backoff_s: the server knows when it will answer; `too_long` says when to give up).
        """
        uniform = rng.uniform if rng is not None else random.uniform
        base = min(self.max_backoff_s, self.backoff_s * (2.0 ** (retry - 1)))
        wait = base / 2 + uniform(0, base / 2)  # "equal jitter": spreads retries, keeps a floor
        if retry_after is not None:
            wait = max(wait, retry_after)
        return wait

    def too_long(self, retry_after: float | None) -> bool:
        """The server asked for a wait beyond `max_retry_after_s`."""
        return retry_after is not None and retry_after > self.max_retry_after_s


def retryable_status(status: int) -> bool:
    """5xx, 408 and 429 are worth another try; other statuses are the caller's problem."""
    return status >= 500 or status in RETRY_STATUSES


# HTTP's delay-seconds are digits; a fraction is taken too (some servers send one). Python's float()
# also reads `inf`, `nan`, `1e400`, `1_0` and a sign: no server means those, and `inf` was shown as "infs".
_DELAY_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent or invalid."""
    if not value:
        return None
    value = value.strip()
    if _DELAY_SECONDS.fullmatch(value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a year or offset past any calendar
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def policy_from_settings(settings: Any) -> RetryPolicy:
    """A RetryPolicy from spec settings (`attempts`, `backoff_s`, `max_backoff_s`, `max_retry_after_s`)."""
    if settings is None:
        return RetryPolicy()
    ceiling = getattr(settings, "max_retry_after_s", RetryPolicy.max_retry_after_s)
    return RetryPolicy(settings.attempts, settings.backoff_s, settings.max_backoff_s, ceiling)
