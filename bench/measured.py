"""One whole process run and measured, for the benchmarks that time evalgate's commands."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path


def measured(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MiB) of one whole process; exits on a failure (an exit code past
    1, a verdict being 0 or 1), with the end of its stderr."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    stderr = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{argv} failed ({code}):\n{stderr.decode(errors='replace')[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0
