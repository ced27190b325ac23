"""User code called on a helper thread and waited for at most a timeout (`python` targets and scorers).

Python cannot stop a thread: a call that overruns its timeout keeps running in the background.
`Overruns` counts those still running; while `MAX_OVERRUNNING` are, new calls are refused at once,
so code hung for good costs that many timeouts, not a thread and a timeout per item. Calls resume
as soon as one of them returns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

MAX_OVERRUNNING = 32


class Overran(Exception):
    """The call ran past its timeout; it goes on in the background."""


class StillRunning(Exception):
    """Not called: too many earlier calls are still running past their timeout."""


class Overruns:
    """The overrunning calls of one function (or the stalled event loops of its coroutines)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0

    def refuse_when_hung(self, timeout_s: float) -> None:
        if self.count >= MAX_OVERRUNNING:
            raise StillRunning(
                f"not called: {self.count} earlier calls are still running past timeout_s ({timeout_s:g}s), "
                "so the function looks hung; evalgate calls it again once one returns"
            )

    def hold(self) -> None:
        with self.lock:
            self.count += 1

    def release(self) -> None:
        with self.lock:
            self.count -= 1

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout_s: float, name: str) -> Any:
        """fn(*args) on a daemon thread, its result or its exception (any BaseException, as raised);
        Overran past `timeout_s`, StillRunning when too many earlier calls still run."""
        self.refuse_when_hung(timeout_s)
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["value"] = fn(*args)
            except BaseException as exc:  # re-raised in the waiting thread below
                box["error"] = exc
            finally:
                with self.lock:  # the waiter's timeout and this end cannot cross
                    done.set()
                    overran = box.pop("overran", False)
                    if overran:
                        self.count -= 1

        threading.Thread(target=work, name=name, daemon=True).start()
        if not done.wait(timeout_s):
            with self.lock:
                overran = not done.is_set()  # else it returned just now: take its answer
                if overran:
                    box["overran"] = True
                    self.count += 1
            if overran:
                raise Overran(f"ran over {timeout_s:g}s")
        if "error" in box:
            raise box["error"]
        return box["value"]
