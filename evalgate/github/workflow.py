"""Workflow commands and file commands, written so untrusted text can never forge one.

- Outputs go to `GITHUB_OUTPUT` as `name<<DELIM` blocks whose random delimiter is checked
  to be absent from the value, so model text cannot end a value early or add an output.
- Annotations escape data (`%`, CR, LF) and properties (also `:` and `,`) as the runner expects.
- Everything untrusted is printed between `::stop-commands::TOKEN` and `::TOKEN::`, with a
  random token, so no line of it is read as a command (the runner reads stdout and stderr).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from evalgate.infra.redaction import OWN_WORDS, redact, redact_value
from evalgate.infra.textsafe import no_surrogates, terminal

SUMMARY_LIMIT_BYTES = 1024 * 1024  # the runner refuses a step summary over 1 MiB
MAX_DELIMITER_TRIES = 10


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str = "", **properties: str | int | None) -> str:
    """One workflow command line, e.g. `::error file=a.yaml,line=3,title=x::message`."""
    props = ",".join(
        f"{key}={escape_property(str(value))}" for key, value in properties.items() if value not in (None, "")
    )
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def annotation(level: str, message: str, *, file: str | None = None, line: int | None = None,
               title: str | None = None) -> str:
    return command(level, message, file=file, line=line, title=title)


def output_block(name: str, value: str) -> str:
    """A `name<<DELIM` block with a delimiter proven absent from the value."""
    for _ in range(MAX_DELIMITER_TRIES):
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        if delimiter not in value and delimiter not in name:
            return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"
    raise RuntimeError("could not find a delimiter absent from the output value")  # 2^-128 per try


def _no_wait(path: str, flags: int) -> int:
    """Open the runner's file without blocking: a FIFO nobody reads fails at once (ENXIO), reported
    as a file error, instead of holding the step until the job's timeout. Regular files ignore it.
    O_NOFOLLOW: the runner makes these files; a symlink there is not its, and is not written through."""
    return os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW, 0o666)


def write_outputs(path: str, outputs: Mapping[str, str]) -> None:
    """Append every output to GITHUB_OUTPUT (or print nothing when run outside a runner)."""
    if not path:
        return
    for name in outputs:
        if not name or "<<" in name or "=" in name or "\n" in name:
            raise ValueError(f"bad output name {name!r}")
    # each value masked on its own (a secret spanning a value and a delimiter would break the block),
    # but for evalgate's own words and counts: they carry nothing of a secret, and a 4-character header
    # value such as `${DEBUG}`'s `true` turned `passed=true` into `passed=***` for every step reading it
    text = "".join(output_block(name, _masked(str(value))) for name, value in outputs.items())
    with open(path, "a", encoding="utf-8", errors="backslashreplace", newline="\n", opener=_no_wait) as handle:
        handle.write(text)


def _masked(value: str) -> str:
    """An output value with every secret masked; JSON (`scores`) as JSON, so `null` or a number stays one."""
    if value in OWN_WORDS or value.isdigit():
        return value
    if value.startswith("{"):
        try:
            return json.dumps(redact_value(json.loads(value)), separators=(",", ":"), allow_nan=False)
        except ValueError:
            pass
    return redact(value)


def summary_room(path: str) -> int:
    """Bytes left in the step summary before the runner's 1 MiB limit."""
    try:
        used = Path(path).stat().st_size
    except OSError:
        used = 0
    return max(0, SUMMARY_LIMIT_BYTES - used - 1)


def append_summary(path: str, markdown: str) -> None:
    if not path:
        return
    markdown = no_surrogates(redact(markdown))
    try:
        with open(path, "a", encoding="utf-8", newline="\n", opener=_no_wait) as handle:
            handle.write(markdown if markdown.endswith("\n") else markdown + "\n")
    except OSError as exc:
        if exc.filename:
            raise
        # a failed write or close (ENOSPC on a full disk) names no file: the error must say which one
        raise OSError(exc.errno, exc.strerror, path) from None


class Log:
    """The Action's log: commands are only ever printed while command processing is on."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.token: str | None = None

    def emit(self, line: str) -> None:
        """Print one command line we built (escaped), resuming processing if stopped."""
        self.stream.write(terminal(redact(line)) + "\n")
        self.stream.flush()

    def stop(self) -> None:
        if self.token is None:
            self.token = secrets.token_hex(16)
            self.emit(f"::stop-commands::{self.token}")

    def resume(self) -> None:
        if self.token is not None:
            self.stream.flush()
            self.emit(f"::{self.token}::")
            self.token = None

    @contextmanager
    def untrusted(self) -> Iterator[None]:
        """Anything printed inside is plain text to the runner, whatever it contains."""
        self.stop()
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            self.resume()

    def annotate(self, level: str, message: str, **props: str | int | None) -> None:
        self.emit(annotation(level, message, **props))  # type: ignore[arg-type]
