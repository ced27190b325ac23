"""The `command` target: one process per turn, the item as JSON on stdin, the run on stdout."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalgate.infra import isolation, redaction
from evalgate.infra.redaction import redact_cut
from evalgate.infra.textsafe import plain
from evalgate.load.cases import Case
from evalgate.replies import Run, RunFormatError, run_from_value
from evalgate.replies.formats import checked_measures
from evalgate.run.user_code import MESSAGE_CHARS
from evalgate.targets.base import History, TargetError

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SURROGATE = re.compile("[\ud800-\udfff]")  # only ever inside a JSON string: there an escape means the same
STDERR_TAIL = 500
STDERR_KEPT_BYTES = 64 * 1024
MAX_STDOUT_BYTES = 32 * 2**20  # a run bigger than this is a runaway agent (`yes`), not an answer


class CommandTarget:
    concurrent = True

    def __init__(
        self, run: str | list[str], cwd: Path, timeout_s: float = 60.0, env: dict[str, str] | None = None
    ) -> None:
        self.argv = shlex.split(run) if isinstance(run, str) else list(run)
        self.cwd = cwd
        self.timeout_s = timeout_s
        base = isolation.child_env()  # the runner's credentials only if `pass_env` names them
        expanded, secrets, self.env_problem = expand_env(env or {}, base)
        redaction.register(secrets)  # an agent that echoes them shows `***`
        self.env = {**base, **expanded}
        try:  # as root (the Action's container), the agent runs as the checkout's owner: no reading our memory
            self.run_as = isolation.unprivileged(cwd)
        except ValueError as exc:
            self.run_as, self.env_problem = {}, self.env_problem or str(exc)

    def payload(self, case: Case, turn: int, history: History) -> dict[str, Any]:
        item = case.item.model_dump(mode="json", exclude_none=True, exclude={"output", "outputs"})
        item["id"] = case.id
        if len(case.item.turn_inputs()) > 1:
            item["turn"] = turn
            item["input"] = case.item.turn_inputs()[turn]
            item["history"] = [{"input": i, "output": r.to_dict()} for i, r in history]
        return item

    def run(self, case: Case, turn: int, history: History) -> Run:
        if self.env_problem is not None:
            raise TargetError(self.env_problem)
        # A lone surrogate (from a `\ud800` in the data) as its JSON escape: written as it is, it was bytes
        # that are no UTF-8, which a strict reader refuses and others read as three other characters.
        stdin = _SURROGATE.sub(_escaped, json.dumps(plain(self.payload(case, turn, history)), ensure_ascii=False))
        started = time.perf_counter()
        try:
            proc = isolation.popen_group(  # its own process group: a timeout or Ctrl-C kills it all
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                **self.run_as,
            )
        except OSError as exc:
            raise TargetError(f"cannot start `{self.argv[0]}`: {exc.strerror}") from None
        try:
            out, err, problem = _communicate(proc, stdin.encode("utf-8"), self.timeout_s)
        finally:
            isolation.kill_group(proc.pid)  # whatever it left running in its group
            isolation.untrack_group(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)
        if problem is not None:
            raise TargetError(f"{problem}{_tail(err)}")
        if proc.returncode is not None and proc.returncode < 0:
            raise TargetError(f"was killed by signal {-proc.returncode}{_tail(err)}")
        if proc.returncode != 0:
            raise TargetError(f"exited with code {proc.returncode}{_tail(err)}")
        # utf-8-sig: a byte order mark (PowerShell, some .NET writers) made a JSON run plain text
        run = checked_measures(_parse_stdout(out.decode("utf-8-sig", errors="replace")))
        if run.latency_ms is None:
            run.latency_ms = (time.perf_counter() - started) * 1000.0
        return run

    def close(self) -> None:
        pass


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def expand_env(env: Mapping[str, str], base: Mapping[str, str]) -> tuple[dict[str, str], list[str], str | None]:
    """(`env` with each `${NAME}` replaced by its value in `base`, the values put in, what is missing or None).

    As in an http target's headers: `${NAME}` was passed on as those characters, so the agent got no key."""
    out: dict[str, str] = {}
    used: list[str] = []
    for key, template in env.items():
        for name in redaction.env_refs(template):
            if name not in base:
                why = (" for the code under test: name it in `pass_env:` to give it" if isolation.is_credential(name)
                       else "")
                return {}, [], f"env {key}: environment variable {name} is not set{why}"
        out[key] = _ENV_REF.sub(lambda match: base[match[1]], template)
        used += [base[name] for name in redaction.env_refs(template)]
    return out, used, None


def _communicate(proc: subprocess.Popen[bytes], data: bytes, timeout_s: float) -> tuple[bytes, bytes, str | None]:
    """(stdout, the tail of stderr, a problem or None): stdout bounded, the whole exchange by `timeout_s`.

    When the process exits, its group is killed so a background child holding the pipe cannot keep
    the item waiting; a child that left the group (setsid) is abandoned at the deadline.
    """
    deadline = time.monotonic() + timeout_s
    out = bytearray()
    err = bytearray()
    problem: list[str] = []

    def feed() -> None:
        with contextlib.suppress(OSError):  # it may exit without reading its input
            assert proc.stdin is not None
            proc.stdin.write(data)
        with contextlib.suppress(OSError):
            proc.stdin.close()  # type: ignore[union-attr]

    def read_out() -> None:
        stdout = proc.stdout
        assert isinstance(stdout, io.BufferedReader)  # Popen's pipes, unbuffered=False: buffered readers
        for chunk in iter(lambda: stdout.read1(1 << 16), b""):
            if len(out) + len(chunk) > MAX_STDOUT_BYTES:
                problem.append(f"wrote more than {MAX_STDOUT_BYTES // 2**20} MiB to stdout; it was stopped")
                isolation.kill_group(proc.pid)
                return
            out.extend(chunk)

    def read_err() -> None:
        stderr = proc.stderr
        assert isinstance(stderr, io.BufferedReader)
        for chunk in iter(lambda: stderr.read1(1 << 16), b""):
            err.extend(chunk)
            if len(err) > 2 * STDERR_KEPT_BYTES:
                del err[:-STDERR_KEPT_BYTES]

    threads = [threading.Thread(target=f, daemon=True, name="evalgate-command") for f in (feed, read_out, read_err)]
    for thread in threads:
        thread.start()
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        problem.append(f"timed out after {timeout_s:g}s")
    isolation.kill_group(proc.pid)
    for thread in threads[1:]:
        thread.join(max(0.05, deadline - time.monotonic()) if not problem else 1.0)
    if any(t.is_alive() for t in threads[1:]) and not problem:
        problem.append(f"timed out after {timeout_s:g}s: a process it started (outside its process group) "
                       "still holds its output open")
    return bytes(out), bytes(err[-STDERR_KEPT_BYTES:]), (problem[0] if problem else None)


def _parse_stdout(text: str) -> Run:
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            value = json.loads(stripped, parse_int=_json_int)
        except ValueError:
            value = None
        except RecursionError:  # no plain text either: scoring the JSON as text would give a wrong number
            raise TargetError("stdout is JSON nested too deeply (about 1,000 levels or more) to be read") from None
        if isinstance(value, (dict, list)):
            try:  # cut as a python target's value is: a run nested 900 levels deep crashed the results' writer
                return run_from_value(plain(value))
            except RunFormatError as exc:
                # cut: it may quote the agent's keys or values, of any length
                raise TargetError(f"stdout is JSON but not a run: {redact_cut(str(exc), MESSAGE_CHARS)}") from None
    return Run(texts=[text.removesuffix("\n")])


def _json_int(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:  # more digits than Python reads (a tool's result): the run is still JSON, not text
        return f"…(an integer of {len(text.lstrip('-')):,} digits)"


EXCEPTION_LINE = re.compile(r"^\s*[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b.*")


def _tail(err: bytes | None) -> str:
    """`: ValueError: boom; stderr: …the last lines`: the exception first (a report that cuts the text keeps it),
    then the end of stderr. The exception is the last line that names one (Python's last line, Node's first)."""
    text = (err or b"").decode("utf-8", errors="replace").strip()
    if not text:
        return ""
    lines = [line for line in text.splitlines() if line.strip()]
    named = [line.strip() for line in lines if EXCEPTION_LINE.match(line)]
    if len(lines) == 1 or not named:
        return f": {redact_cut(text, STDERR_TAIL, tail=True)}"  # redacted before it is cut
    return f": {redact_cut(named[-1], 300)}; stderr: {redact_cut(text, STDERR_TAIL, tail=True)}"
