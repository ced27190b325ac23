"""Runs evalgate commands one after another in this one process: the corpus's fast path.

    python hostile_driver.py CASES.json RESULTS.jsonl

CASES.json is a list of {"id", "cwd", "steps": [[arg, ...], ...], "timeout_s"}. Each step is the
`evalgate` command line, run through the CLI's own entry (`evalgate.cli.entry`) with its streams
captured (a step `["!python", CODE]` runs CODE in the case's folder instead: an attacker's edit between
two commands, or a check of what they wrote; an assertion that fails is its exit code); one JSON line per
step goes to RESULTS.jsonl: exit code, both streams, seconds, and
this process's peak RSS so far. A step that runs past its timeout is recorded as a hang and the
driver exits at once (SIGALRM): nothing here can hang the test that started it.
"""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import sys
import time
from typing import Any


def main() -> None:
    cap_mb = os.environ.get("HOSTILE_MAX_ADDRESS_MB")  # a read that would take gigabytes fails here, not the machine
    if cap_mb:
        resource.setrlimit(resource.RLIMIT_AS, (int(cap_mb) * 2**20, int(cap_mb) * 2**20))
    with open(sys.argv[1], encoding="utf-8") as handle:
        cases = json.load(handle)
    results = open(sys.argv[2], "a", encoding="utf-8")  # noqa: SIM115 - open until os._exit on a hang
    from evalgate import cli

    current: dict[str, Any] = {}

    def hang(signum: int, frame: Any) -> None:
        results.write(json.dumps({**current, "hang": True}) + "\n")
        results.flush()
        os._exit(0)

    signal.signal(signal.SIGALRM, hang)
    home = os.getcwd()
    for case in cases:
        for number, argv in enumerate(case["steps"]):
            current.clear()
            current.update(id=case["id"], step=number, argv=argv)
            out, err = io.StringIO(), io.StringIO()
            saved = (sys.stdout, sys.stderr, dict(os.environ), signal.getsignal(signal.SIGINT))
            sys.stdout, sys.stderr = out, err
            os.chdir(case["cwd"])
            started = time.monotonic()
            signal.alarm(max(1, int(case.get("timeout_s", 20))))
            try:
                if argv[0] == "!python":
                    exec(compile(argv[1], f"{case['id']} step {number}", "exec"), {})
                else:
                    cli.entry(argv)
                code: Any = 0
            except SystemExit as exc:
                code = exc.code
            except BaseException as exc:
                code = f"escaped {type(exc).__name__}: {exc}"
            finally:
                signal.alarm(0)
                sys.stdout, sys.stderr = saved[0], saved[1]
                os.environ.clear()
                os.environ.update(saved[2])
                signal.signal(signal.SIGINT, saved[3])
                os.chdir(home)
            record = {
                **current,
                "code": code,
                "stdout": out.getvalue(),
                "stderr": err.getvalue(),
                "seconds": round(time.monotonic() - started, 3),
                "rss_mb": own_peak_mb(),
            }
            results.write(json.dumps(record, ensure_ascii=True) + "\n")
            results.flush()


def own_peak_mb() -> int:
    """This process's own high-water RSS: VmHWM, not ru_maxrss, which includes the spawner's peak."""
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"VmHWM:"):
                return int(line.split()[1]) // 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


if __name__ == "__main__":
    main()
