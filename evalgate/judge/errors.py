"""The judge's one error and how much of a reply an error message may quote."""

from __future__ import annotations

from evalgate.infra.redaction import redact

REPLY_SHOWN = 200


class JudgeError(RuntimeError):
    """The judge could not give a usable verdict: request failed, or two bad replies in a row."""


def excerpt(text: str) -> str:
    """A reply flattened to one line and cut to REPLY_SHOWN characters, for error messages.

    Redacted before it is cut: a reply may echo the key, and a cut secret would no longer match.
    """
    flat = " ".join(redact(text).split())
    return flat if len(flat) <= REPLY_SHOWN else flat[: REPLY_SHOWN - 1] + "…"
