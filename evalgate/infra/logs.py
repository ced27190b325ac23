"""The log: the standard `logging` module, one handler on stderr, every record redacted.

`evalgate -v ...`, `evalgate run -v ...`, `EVALGATE_LOG=debug` (or the Action's `RUNNER_DEBUG=1`)
turn debug on: requests (method, URL, status, attempts, cache hits, time), items and the run's
timings. Whatever a record holds passes `redaction.redact` in the handler's filter, so a secret
cannot reach the log even from a library (urllib3's request lines), and a `::` is broken so that
no line of the Action's log is taken for a workflow command.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping
from typing import TextIO

from evalgate.infra.redaction import redact_cut
from evalgate.infra.textsafe import visible

ENV_LEVEL = "EVALGATE_LOG"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
LOGGERS = ("evalgate", "urllib3")  # ours, and the HTTP library's (its request lines through a proxy)
QUIET = ("urllib3.util.retry",)  # a line per request saying evalgate retries by itself: noise
LINE_MAX = 4000  # one record's bound: a reply or a data row never floods the log
FORMAT = "%(asctime)s evalgate %(levelname)s %(name)s: %(message)s"


def safe_line(text: str) -> str:
    """A log line: secrets masked, bounded, control characters escaped, no workflow command."""
    line = visible(redact_cut(text, LINE_MAX))
    return line.replace("::", ":\u200b:").replace("##[", "##\u200b[")


class RedactingFilter(logging.Filter):
    """Formats each record once and keeps only its redacted text: the arguments (a header, a URL
    with a key in its query) never reach a formatter or a stream as they were."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
            record.exc_text = None
        record.msg = safe_line(message)
        record.args = None
        return True


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]  # typeshed's generic is not at runtime
    """Writes to whatever `sys.stderr` is when a record comes (the CLI wraps it; tests capture it)."""

    def __init__(self) -> None:
        super().__init__()
        self.addFilter(RedactingFilter())
        self.setFormatter(logging.Formatter(FORMAT))

    @property  # the stream is read, never set, here
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass  # StreamHandler's __init__ sets it; stderr is always the current one


_handler: StderrHandler | None = None


def level_from(verbose: bool, environ: Mapping[str, str]) -> int:
    """DEBUG for `-v`; else EVALGATE_LOG's level (debug, info, warning, error); else WARNING."""
    if verbose:
        return logging.DEBUG
    return LEVELS.get(environ.get(ENV_LEVEL, "").strip().lower(), logging.WARNING)


def configure(verbose: bool = False, environ: Mapping[str, str] | None = None, *, reset: bool = False) -> int:
    """Route evalgate's and urllib3's records through one redacting stderr handler; idempotent.
    A later call only ever lowers the level (`evalgate -v run` and `evalgate run -v` agree), unless
    `reset`: a new command in the same process starts from its own flags."""
    global _handler
    import os

    level = level_from(verbose, os.environ if environ is None else environ)
    if _handler is None:
        _handler = StderrHandler()
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _handler not in logger.handlers or reset:
            if _handler not in logger.handlers:
                logger.addHandler(_handler)
            logger.propagate = False
            logger.setLevel(level)
        else:
            logger.setLevel(min(level, logger.level or logging.WARNING))
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.INFO)
    return logging.getLogger("evalgate").level


def debug_on(logger: logging.Logger) -> bool:
    return logger.isEnabledFor(logging.DEBUG)


def log_request(logger: logging.Logger, method: str, url: str, headers: Mapping[str, str], *, status: int,
                attempts: int, from_cache: bool, elapsed_ms: float) -> None:
    """One request's debug line: header names only (their values are credentials more often than not)."""
    if not debug_on(logger):
        return
    how = "from the cache" if from_cache else f"{attempts} attempt{'s' if attempts != 1 else ''}"
    names = ", ".join(sorted(headers)) or "none"
    logger.debug("%s %s -> %s in %.0f ms (%s; headers: %s)", method, url, status, elapsed_ms, how, names)


class Timer:
    """Milliseconds since it was made (a monotonic clock), for the debug lines' timings."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def ms(self) -> float:
        return (time.monotonic() - self.start) * 1000.0
