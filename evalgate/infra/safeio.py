"""The process's stdout and stderr as evalgate writes them: redacted and terminal-safe.

Whatever reaches a stream (the verdict table, spec errors, a target's output in the Action's log)
passes through `redact` and `textsafe.terminal`: no known secret, no control sequence from data
or a model. Characters the stream cannot encode (a lone surrogate) print as escapes.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from evalgate.infra.redaction import redact
from evalgate.infra.textsafe import terminal


class SafeStream:
    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: Any) -> int:
        if isinstance(text, str):
            text = terminal(redact(text))
        return self._stream.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def close(self) -> None:
        """Kept open: a `python` target that closed sys.stdout made the verdict's printing fail (exit 3)."""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def install() -> None:
    """Wrap sys.stdout and sys.stderr once (idempotent)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, SafeStream):
            continue
        if stream is None:  # started with the descriptor closed (`evalgate run >&-`): the results file still counts
            stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the process's own stream, never closed
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
        setattr(sys, name, SafeStream(stream))
