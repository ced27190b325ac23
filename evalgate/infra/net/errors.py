"""What a request that failed says: `HttpError` (the one error callers see), the reasons retrying
cannot help (`NoRetry`), JSON too deep to read (`TooDeep`), and one-line summaries of exceptions."""

from __future__ import annotations

import json
from typing import Any

ERROR_BODY_SHOWN = 300


class HttpError(Exception):
    """A request failed for good: retries exhausted, a non-retryable status, or a bad reply.

    `status` is the last HTTP status (None for connection errors and timeouts); `attempts` how
    many times the request was sent. The message never holds a secret the client knows of.
    """

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts
        self.body = body


class TooDeep(ValueError):
    """JSON nested deeper than the interpreter can parse: bad JSON, not a crash."""


def loads(text: str | bytes) -> Any:
    """`json.loads`, with JSON nested past the recursion limit (`[[[[...` 100,000 deep) a ValueError
    (`TooDeep`) like any other bad JSON, never a RecursionError that skips every `except ValueError`."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeep("is JSON nested too deeply (about 1,000 levels or more) to be read") from None


class NoRetry(Exception):
    """A failure no retry can fix (a certificate the CA bundle does not vouch for, a runaway reply)."""


class BadEncoding(NoRetry):
    """A body that is not what its Content-Encoding says."""


def exception_summary(exc: BaseException) -> str:
    text = str(exc)
    name = type(exc).__name__
    return one_line(f"{name}: {text}" if text else name)


def one_line(text: str, limit: int = ERROR_BODY_SHOWN) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
