"""`judge.serve`: a local judge server the run starts, reads its base URL from, and stops."""

from __future__ import annotations

import atexit
import contextlib
import queue
import shlex
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from evalgate.infra import isolation
from evalgate.judge.errors import JudgeError, excerpt

SERVE_START_TIMEOUT_S = 20.0
FIRST_LINE_MAX = 64 * 1024  # a base URL is a line, not a stream


class Server:
    """A judge server started for the run: its first stdout line must be its base URL.

    Its stdin is a pipe evalgate never writes: it closes when evalgate exits, however it exits,
    so a server that quits on end-of-stdin never outlives the run. `python` means this interpreter.
    """

    def __init__(self, command: str | list[str], cwd: Path) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if self.argv and self.argv[0] in ("python", "python3"):
            self.argv[0] = sys.executable
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None

    def start(self) -> str:
        try:
            run_as = isolation.unprivileged(self.cwd or ".")  # as root: the checkout's owner, not root
        except ValueError as exc:
            raise JudgeError(f"judge.serve: {exc}") from None
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server
        try:
            self.proc = subprocess.Popen(
                self.argv, cwd=self.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                env=isolation.child_env(),  # the code a spec serves gets no runner credential
                **run_as,
            )
        except OSError as exc:
            raise JudgeError(f"judge.serve could not start {self.argv[0]!r}: {exc.strerror}") from None
        atexit.register(self.stop)
        lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=_drain, args=(self.proc.stdout, lines), daemon=True).start()
        try:
            first = lines.get(timeout=SERVE_START_TIMEOUT_S).decode("utf-8", errors="replace").strip()
        except queue.Empty:
            first = ""
        if not first.startswith(("http://", "https://")):
            why = self._stderr_tail()
            self.stop()
            raise JudgeError(
                f"judge.serve: {shlex.join(self.argv)!r} did not print its base URL as its first line"
                + (f"; it said: {why}" if why else "")
            )
        return first

    def _stderr_tail(self) -> str:
        if self.proc is not None and self.proc.poll() is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0)
            return excerpt(self._stderr.read()[-2000:].decode("utf-8", errors="replace"))
        return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def _drain(stream: Any, lines: queue.Queue[bytes]) -> None:
    # The first line is the base URL; b"" when the server exited without one (it fails at once, not
    # after the timeout). The rest is read and dropped, so a chatty server never blocks on a full pipe
    # and its logs never pile up here for the whole run.
    with contextlib.suppress(OSError, ValueError):
        lines.put(stream.readline(FIRST_LINE_MAX))
        while stream.read1(1 << 16):
            pass
    lines.put(b"")
    with contextlib.suppress(OSError):
        stream.close()
