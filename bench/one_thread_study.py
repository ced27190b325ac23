"""A measurement, not evalgate: `evalgate run` with its worker threads replaced by greenlets on one thread.

evalgate runs an HTTP target's items on `concurrency` threads, each blocking on its own kept-alive
connection. This script runs the same `evalgate run`, every line of evalgate's code unchanged (the client,
the transport and its reader, the deadline watchdog, the limiter, the reply mapping, the scoring), with
one change: each worker is a greenlet, and a socket that would block parks its greenlet until the main
thread's selector says the socket is ready. Nothing waits for the GIL and no OS thread switch comes
between items. `bench/http.py` runs it beside the threaded run: the difference is what the threads'
turn-taking costs, and what is left above the bare client is evalgate's own work per item.

What it replaces, each a seam that must still be there (it stops with a message if one is not):
`evalgate.run.engine._Workers` (the worker threads), `connections.QuietSocket` (the sockets evalgate
connects: here they wait on the selector, not in the kernel) and `connections.WATCHDOG.local` (the
exchange each thread sends, here each greenlet's: a greenlet runs in its own contextvars context).

Usage: python -P bench/one_thread_study.py run spec.yaml --output results.json
(`-P`: this folder's http.py would hide the standard library's `http`). An `http://` target, no judge and
no proxy (TLS and proxies make sockets this study does not park); it stops with a message on anything
else. A retry's wait (`time.sleep`) holds up every item, not one: the bench's agent never needs one.
Needs `greenlet` (installed with the test extra, which brings playwright).
"""

from __future__ import annotations

import contextvars
import errno
import os
import selectors
import socket
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import greenlet  # type: ignore[import-untyped]  # no stubs installed

import evalgate.api
from evalgate.cli import entry
from evalgate.infra.net import connections
from evalgate.load.cases import Case, Check
from evalgate.run import engine
from evalgate.targets.http import HttpTarget

STUCK_S = 60.0  # no socket ready for this long: a greenlet waits on something else (a lock): stop, say so
_SELECTOR = selectors.DefaultSelector()
_HUB = greenlet.getcurrent()
GREENLETS_RUN: list[int] = []


def _park(sock: socket.socket, events: int) -> None:
    """Wait, in a worker greenlet, until `sock` is ready for `events`: the main thread runs meanwhile."""
    _SELECTOR.register(sock.fileno(), events, greenlet.getcurrent())
    try:
        _HUB.switch()
    finally:
        _SELECTOR.unregister(sock.fileno())


def _in_worker() -> bool:
    return greenlet.getcurrent() is not _HUB


class _ParkingSocket(connections.QuietSocket):
    """evalgate's socket, non-blocking inside a worker greenlet, parking the greenlet where it would block."""

    def settimeout(self, value: float | None) -> None:
        if not _in_worker():
            super().settimeout(value)
        elif socket.socket.gettimeout(self) != 0.0:  # the deadline is the watchdog's, as in the threaded run
            socket.socket.settimeout(self, 0.0)

    def connect(self, address: Any) -> None:
        if not _in_worker():
            return super().connect(address)
        socket.socket.settimeout(self, 0.0)
        failed = self.connect_ex(address)
        if failed in (errno.EINPROGRESS, errno.EAGAIN):
            _park(self, selectors.EVENT_WRITE)
            failed = self.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if failed:
            raise OSError(failed, os.strerror(failed))
        return None

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        return self._reading(super().recv, bufsize, flags)  # type: ignore[no-any-return]

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        return self._reading(super().recv_into, buffer, nbytes, flags)  # type: ignore[no-any-return]

    def _reading(self, read: Callable[..., Any], *args: Any) -> Any:
        while True:
            try:
                return read(*args)
            except BlockingIOError:
                if not _in_worker():
                    raise
                _park(self, selectors.EVENT_READ)

    def sendall(self, data: Any, flags: int = 0) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[self.send(view, flags):]
            except BlockingIOError:
                if not _in_worker():
                    raise
                _park(self, selectors.EVENT_WRITE)


class _PerGreenlet:
    """`threading.local` for the watchdog's one attribute, per greenlet (each has its own context)."""

    _exchange: contextvars.ContextVar[Any] = contextvars.ContextVar("exchange", default=None)

    @property
    def exchange(self) -> Any:
        return self._exchange.get()

    @exchange.setter
    def exchange(self, value: Any) -> None:
        self._exchange.set(value)


class _GreenWorkers:
    """`engine._Workers` as greenlets: `size` of them take cases in turn, each running until its socket
    would block; `finished` runs them and the selector until a result is there."""

    def __init__(self, size: int, work: Callable[[Case], engine.ItemResult]) -> None:
        self.size, self.work = size, work
        self.todo: deque[Case] = deque()
        self.done: deque[tuple[engine.ItemResult | None, BaseException | None]] = deque()
        self.ready: deque[greenlet.greenlet] = deque()
        self.live = 0

    def start(self, case: Case) -> None:
        self.todo.append(case)
        if self.live < self.size:
            self.live += 1
            GREENLETS_RUN.append(1)
            self.ready.append(greenlet.greenlet(self._serve, parent=_HUB))

    def _serve(self) -> None:
        while self.todo:
            case = self.todo.popleft()
            try:
                self.done.append((self.work(case), None))
            except BaseException as exc:  # to the main greenlet, as a thread's would go to the loop's thread
                self.done.append((None, exc))
        self.live -= 1

    def finished(self, gather_s: float) -> Iterator[engine.ItemResult]:
        # on one thread nothing finishes while the loop sleeps: `gather_s` is not waited, what is there is taken
        while not self.done:
            if self.ready:
                self.ready.popleft().switch()
                continue
            woken = _SELECTOR.select(STUCK_S)
            if not woken:
                sys.exit(f"one_thread_study: no socket ready for {STUCK_S:g}s; a worker waits on something else")
            self.ready.extend(key.data for key, _ in woken)
        while self.done:  # popped, never swapped: a parked worker holds the deque it will append its result to
            result, raised = self.done.popleft()
            if raised is not None:
                raise raised
            assert result is not None
            yield result

    def stop(self) -> None:
        self.todo.clear()


_evaluate = engine.evaluate


def evaluate(cases: Iterable[Case], target: Any, gates: list[Check], scorers: list[Check],
             concurrency: int = 1, repeats: int | None = None, on_trial: Any = None, *,
             draw_ahead: bool = False) -> Iterator[engine.ItemResult]:
    """`engine.evaluate`, refusing what this study cannot park: TLS, proxies, a judge."""
    plain = isinstance(target, HttpTarget) and target.config.url.startswith("http://")
    proxied = any(os.environ.get(name) for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"))
    if not plain or proxied or any(c.scorer.judged for c in (*gates, *scorers)):
        sys.exit("one_thread_study: an http:// target, no proxy and no judge only")
    return _evaluate(cases, target, gates, scorers, concurrency, repeats, on_trial, draw_ahead=draw_ahead)


def main() -> None:
    for module, name in ((engine, "_Workers"), (connections, "QuietSocket"), (connections, "_PLAIN_TCP"),
                         (evalgate.api, "evaluate")):
        if not hasattr(module, name):
            sys.exit(f"one_thread_study: {module.__name__}.{name} is gone; update the study")
    if not hasattr(connections.WATCHDOG, "local"):
        sys.exit("one_thread_study: connections.WATCHDOG.local is gone; update the study")
    # the seams: module attributes mypy cannot see (a private name read as an attribute, not imported)
    setattr(engine, "_Workers", _GreenWorkers)  # noqa: B010
    setattr(connections, "QuietSocket", _ParkingSocket)  # noqa: B010
    plain_tcp = getattr(connections, "_PLAIN_TCP")  # noqa: B009  (checked for reuse by TCP state, as before)
    setattr(connections, "_PLAIN_TCP", (*plain_tcp, _ParkingSocket))  # noqa: B010
    setattr(connections.WATCHDOG, "local", _PerGreenlet())  # noqa: B010  (a threading.local in its type)
    setattr(evalgate.api, "evaluate", evaluate)  # noqa: B010
    try:
        entry()
    except SystemExit as stop:
        if not GREENLETS_RUN:  # never time the threads under this study's name
            sys.exit("one_thread_study: no item ran on a greenlet (concurrency 1, or a seam moved); update the study")
        raise stop from None


if __name__ == "__main__":
    main()
