"""The `python` target: calls the user's function, sync or async, from worker threads."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from evalgate.infra import isolation
from evalgate.infra.redaction import redact_cut
from evalgate.infra.textsafe import plain
from evalgate.load.cases import Case
from evalgate.replies import Run, RunFormatError, run_from_value
from evalgate.replies.formats import checked_measures
from evalgate.run.overruns import Overran, Overruns, StillRunning
from evalgate.run.user_code import MESSAGE_CHARS, copied, describe_exception, exit_argument
from evalgate.targets.base import History, TargetError


class PythonTarget:
    concurrent = True

    def __init__(self, fn: Callable[..., Any], timeout_s: float | None = None) -> None:
        self.fn = fn
        self.timeout_s = timeout_s
        self.arity = _positional_arity(fn)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._loop_lock = threading.Lock()
        self.overruns = Overruns()  # calls and event loops still running past timeout_s

    def _call_args(self, case: Case, turn: int, history: History) -> list[Any]:
        # Copies: a function that edits its input (`x["q"] = ...`) changed the input the results record,
        # and what the item's later turns, trials and checks saw.
        args: list[Any] = [copied(case.item.turn_inputs()[turn])]
        if self.arity >= 2:
            args.append(copied(case.item))
        if self.arity >= 3:
            args.append(copied([{"input": i, "output": r.text} for i, r in history]))
        return args

    def run(self, case: Case, turn: int, history: History) -> Run:
        started = time.perf_counter()
        try:
            result = self._call(self._call_args(case, turn, history))
            if inspect.isawaitable(result):
                result = self._await(result)
        except TargetError:
            raise
        except BaseException as exc:  # sys.exit, KeyboardInterrupt, GeneratorExit: this item's error only
            if isolation.user_interrupt(exc):
                raise  # the user's Ctrl-C stops the run
            raise TargetError(_describe(exc)) from None
        if isinstance(result, Mapping) and not isinstance(result, dict):  # read as a run too: cut it as a dict is
            result = dict(result)
        try:
            run = run_from_value(plain(result) if isinstance(result, (dict, list)) else result)
        except RunFormatError as exc:
            why = redact_cut(str(exc), MESSAGE_CHARS)  # it may quote the value's keys or values, of any length
            raise TargetError(f"the function returned something that is not a run: {why}") from None
        except RecursionError:
            raise TargetError("the function returned a value nested too deeply to record") from None
        run = checked_measures(run)
        if run.latency_ms is None:
            run.latency_ms = (time.perf_counter() - started) * 1000.0
        return run

    def _call(self, args: list[Any]) -> Any:
        """fn(*args); with timeout_s, a sync call that overruns errors the item.

        Python cannot stop a thread: the overrunning call finishes in the background, unobserved.
        """
        if self.timeout_s is None or inspect.iscoroutinefunction(self.fn):
            return self.fn(*args)
        return self._in_thread(args)

    def _in_thread(self, args: list[Any]) -> Any:
        try:
            return self.overruns.call(self.fn, tuple(args), self.timeout_s, "evalgate-call")  # type: ignore[arg-type]
        except Overran:
            raise TargetError(f"timed out after {self.timeout_s:g}s") from None
        except StillRunning as exc:
            raise TargetError(str(exc)) from None

    def _await(self, awaitable: Any) -> Any:
        # One event loop on its own thread serves every worker, so async agents share clients.
        if self.timeout_s is not None and self.overruns.count:
            try:
                self.overruns.refuse_when_hung(self.timeout_s)
            except StillRunning as exc:
                if inspect.iscoroutine(awaitable):
                    awaitable.close()  # never run: no "never awaited" warning
                raise TargetError(str(exc)) from None
        with self._loop_lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._loop_thread = threading.Thread(target=_serve, args=(self._loop,), name="evalgate-async",
                                                     daemon=True)
                self._loop_thread.start()
        loop = self._loop
        future = asyncio.run_coroutine_threadsafe(_as_coroutine(awaitable), loop)
        try:
            return future.result(self.timeout_s)
        except TimeoutError:
            future.cancel()
            if not _responsive(loop):  # blocking code in a coroutine stalled the loop: next calls get a new one
                with self._loop_lock:
                    if self._loop is loop:
                        self._loop = None
                        self.overruns.hold()  # until the loop runs again
                        loop.call_soon_threadsafe(self.overruns.release)
            raise TargetError(f"timed out after {self.timeout_s:g}s") from None
        except _Escaped as escaped:
            raise TargetError(_describe(escaped.inner)) from None

    def close(self) -> None:
        with self._loop_lock:
            loop, thread = self._loop, self._loop_thread
            self._loop = self._loop_thread = None
        if loop is not None and thread is not None:
            with contextlib.suppress(RuntimeError):  # closed already
                loop.call_soon_threadsafe(loop.stop)
            thread.join(1.0)  # a loop stalled by a blocking coroutine is left to the interpreter's exit


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"the function called sys.exit({exit_argument(exc)}); the item errored, the run goes on"
    return describe_exception(exc)


class _Escaped(Exception):
    """sys.exit, KeyboardInterrupt or GeneratorExit in a coroutine, carried out of the loop without stopping it."""

    def __init__(self, inner: BaseException) -> None:
        super().__init__(type(inner).__name__)
        self.inner = inner


async def _as_coroutine(awaitable: Any) -> Any:
    try:
        return await awaitable
    except (SystemExit, KeyboardInterrupt, GeneratorExit) as exc:  # would end the loop's thread
        raise _Escaped(exc) from None


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    try:
        loop.run_forever()
    finally:  # closed here: left to its __del__ at the interpreter's exit, it printed a traceback
        loop.close()


def _responsive(loop: asyncio.AbstractEventLoop, wait_s: float = 0.2) -> bool:
    pong = threading.Event()
    try:
        loop.call_soon_threadsafe(pong.set)
    except RuntimeError:  # closed
        return False
    return pong.wait(wait_s)


def _positional_arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    count = 0
    for p in params:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            return 3
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return count
