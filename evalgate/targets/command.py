"""The `command` target: one process per turn, the item as JSON on stdin, the run on stdout."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from evalgate.cases import Case
from evalgate.runs import Run, RunFormatError, run_from_value
from evalgate.targets.base import History, TargetError

STDERR_TAIL = 500


class CommandTarget:
    concurrent = True

    def __init__(
        self, run: str | list[str], cwd: Path, timeout_s: float = 60.0, env: dict[str, str] | None = None
    ) -> None:
        self.argv = shlex.split(run) if isinstance(run, str) else list(run)
        self.cwd = cwd
        self.timeout_s = timeout_s
        self.env = {**os.environ, **(env or {})}

    def payload(self, case: Case, turn: int, history: History) -> dict[str, Any]:
        item = case.item.model_dump(mode="json", exclude_none=True, exclude={"output", "outputs"})
        item["id"] = case.id
        if len(case.item.turn_inputs()) > 1:
            item["turn"] = turn
            item["input"] = case.item.turn_inputs()[turn]
            item["history"] = [{"input": i, "output": r.to_dict()} for i, r in history]
        return item

    def run(self, case: Case, turn: int, history: History) -> Run:
        stdin = json.dumps(self.payload(case, turn, history), ensure_ascii=False)
        started = time.perf_counter()
        try:
            proc = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # so a timeout kills the whole process group
            )
        except OSError as exc:
            raise TargetError(f"cannot start `{self.argv[0]}`: {exc.strerror}") from None
        try:
            out, err = proc.communicate(stdin.encode(), timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            _, err = proc.communicate()
            raise TargetError(f"timed out after {self.timeout_s:g}s{_tail(err)}") from None
        if proc.returncode != 0:
            raise TargetError(f"exited with code {proc.returncode}{_tail(err)}")
        run = _parse_stdout(out.decode("utf-8", errors="replace"))
        if run.latency_ms is None:
            run.latency_ms = (time.perf_counter() - started) * 1000.0
        return run

    def close(self) -> None:
        pass


def _parse_stdout(text: str) -> Run:
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            value = json.loads(stripped)
        except ValueError:
            value = None
        if isinstance(value, (dict, list)):
            try:
                return run_from_value(value)
            except RunFormatError as exc:
                raise TargetError(f"stdout is JSON but not a run: {exc}") from None
    return Run(texts=[text.removesuffix("\n")])


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it may have exited on its own
        os.killpg(proc.pid, signal.SIGKILL)


def _tail(err: bytes | None) -> str:
    text = (err or b"").decode("utf-8", errors="replace").strip()
    if not text:
        return ""
    if len(text) > STDERR_TAIL:
        text = "…" + text[-STDERR_TAIL:]
    return f": {text}"
