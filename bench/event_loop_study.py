"""A design study, not evalgate: `evalgate run` with an HTTP target's items driven by one asyncio loop.

evalgate runs an HTTP target's items on `concurrency` threads, each blocking on its own keep-alive
connection (urllib3's, read by http.client). This script runs the same `evalgate run` (loading, the
journal, scoring, the verdict, the results file: all evalgate's own code) with one change: the items'
exchanges are coroutines on one event loop in the main thread, each item's reply handed to
`evaluate_case` as soon as it is read, so no thread waits on a socket or on the GIL. `bench/http.py`
runs it beside the threaded run to show how much of the run's CPU is the threads' turn-taking.

Each item does what `HttpTarget.run` does around its request: the body rendered from the item, the
headers expanded, the cache key made, the body encoded and the reply decoded as the client does it,
the request logged, the reply read by evalgate's own reader (http.client's reply, from the bytes the
loop received) under the exchange's deadline (`asyncio.timeout`), mapped to a run and scored. Left
out, so the study is a floor for that design and not its cost: the adaptive limiter, retries, the
response cache's lookup, proxies and TLS, and framing other than a Content-Length (the fake agent's
replies).

Usage: python -P bench/event_loop_study.py run spec.yaml --output results.json
(`-P`: this folder's http.py would hide the standard library's `http`). An `http` target, POST, no
judge, no repeats, no secret to redact; it stops with a message on anything else.
"""

from __future__ import annotations

import asyncio
import io
import json
import socket
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, cast

import evalgate.api
from evalgate.cli import entry
from evalgate.infra import redaction
from evalgate.infra.logs import log_request
from evalgate.infra.net import Response
from evalgate.infra.net.connections import final_response_class
from evalgate.infra.net.errors import loads
from evalgate.load.cases import Case, Check
from evalgate.replies import Run
from evalgate.run import engine
from evalgate.targets.base import History, TargetError, trial_key
from evalgate.targets.http import HttpTarget, log, redact_reply

LOOPS_RUN: list[int] = []  # one entry per run of `evaluate` below


def _decoded(status: int, content: bytes, elapsed_ms: float) -> Response:
    """The reply as the client makes it when no secret is known (`evaluate` makes sure of that)."""
    text = content.decode("utf-8", errors="replace")
    try:
        body, is_json = loads(text), True
    except ValueError:
        body, is_json = None, False
    return Response(status, body, text, {}, elapsed_ms, 1, is_json=is_json)


class _Answered:
    """One item's target, its reply already read: the rest of `HttpTarget.run`."""

    concurrent = False

    def __init__(self, target: HttpTarget, status: int, content: bytes, elapsed_ms: float) -> None:
        self.target, self.status, self.content, self.elapsed_ms = target, status, content, elapsed_ms

    def run(self, case: Case, turn: int, history: History) -> Run:
        target = self.target
        if self.status != 200:
            raise TargetError(f"status {self.status}")
        reply = _decoded(self.status, self.content, self.elapsed_ms)
        log_request(log, target.config.method, target.config.url, {}, status=reply.status, attempts=1,
                    from_cache=False, elapsed_ms=reply.elapsed_ms)
        if not reply.is_json:
            raise TargetError("the reply is not JSON")
        run = target.mapping.run(redact_reply(reply, target.client))
        if run.latency_ms is None:
            run.latency_ms = reply.elapsed_ms
        return run

    def close(self) -> None:
        pass


def _origin(url: str) -> tuple[str, int, bytes, bytes]:
    rest = url.split("//", 1)[1]
    hostport, _, path = rest.partition("/")
    host, _, port = hostport.partition(":")
    return host, int(port or 80), hostport.encode(), b"/" + path.encode()


class _Received:
    """A reply's bytes, read off the loop, as the socket http.client reads a reply from."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, mode: str) -> io.BytesIO:
        return io.BytesIO(self.data)


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: bytes,
                    body: bytes) -> tuple[int, bytes]:
    """One request on a kept-alive connection: its reply's status and body, read by evalgate's reader
    (http.client's, as `final_response_class` makes it) from the bytes its Content-Length frames."""
    writer.write(head + body)
    reply_head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in reply_head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    received = cast(socket.socket, _Received(reply_head + await reader.readexactly(length)))  # all it reads: makefile
    reply = final_response_class()(received, method="POST")
    reply.begin()
    return reply.status, reply.read()


def evaluate(cases: Iterable[Case], target: Any, gates: list[Check], scorers: list[Check],
             concurrency: int = 1, repeats: int | None = None, on_trial: Any = None, *,
             draw_ahead: bool = False) -> Iterator[engine.ItemResult]:
    """`engine.evaluate` on one event loop: results in completion order, `concurrency` in flight (each
    connection draws its next case itself: `draw_ahead` has nothing to change)."""
    judged = any(c.scorer.judged for c in (*gates, *scorers))
    if not isinstance(target, HttpTarget) or judged or repeats is not None or target.config.method != "POST":
        sys.exit("event_loop_study: an http target with POST, no judge and no repeats only")
    if redaction.known():
        sys.exit("event_loop_study: replies are decoded as the client does when no secret is known; none may be")
    LOOPS_RUN.append(concurrency)
    host, port, hostport, path = _origin(target.config.url)
    shared = engine.top_shared_ids(gates, scorers)
    source = iter(cases)
    finished: deque[engine.ItemResult] = deque()
    loop = asyncio.new_event_loop()
    wake: list[asyncio.Future[None]] = []

    def done(result: engine.ItemResult) -> None:
        finished.append(result)
        if wake and not wake[0].done():
            wake[0].set_result(None)

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        writer.get_extra_info("socket").setsockopt(6, 1, 1)  # TCP_NODELAY, as evalgate's connections
        for case in source:
            payload = target.render(target.context(case, 0, ()))
            target.headers.expand()
            trial_key({**target.key_settings, "body": payload}, case)
            body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()  # as the client's
            head = (b"POST %s HTTP/1.1\r\nHost: %s\r\nAccept-Encoding: identity\r\nContent-Length: %d\r\n"
                    b"Content-Type: application/json\r\nAccept: application/json\r\n\r\n" % (path, hostport, len(body)))
            started = time.perf_counter()
            async with asyncio.timeout(target.config.timeout_s):  # the exchange's deadline, as the watchdog's
                status, content = await _exchange(reader, writer, head, body)
            answered = _Answered(target, status, content, (time.perf_counter() - started) * 1000.0)
            done(engine.evaluate_case(case, answered, gates, scorers, judged, shared))
        writer.close()

    async def every_connection() -> None:
        await asyncio.gather(*(connection() for _ in range(concurrency)))

    everything = loop.create_task(every_connection())
    try:
        while finished or not everything.done():
            if not finished:
                wake[:] = [loop.create_future()]
                loop.run_until_complete(asyncio.wait([wake[0], everything], return_when=asyncio.FIRST_COMPLETED))
            while finished:
                yield finished.popleft()
        everything.result()  # what a connection raised
    finally:
        loop.close()


def main() -> None:
    setattr(evalgate.api, "evaluate", evaluate)  # noqa: B010  (the seam: a module attribute mypy cannot see)
    try:
        entry()
    except SystemExit as stop:
        if not LOOPS_RUN:  # the seam this study replaces has moved: say so, never time the threads as the study
            sys.exit("event_loop_study: `evalgate run` no longer calls evalgate.api.evaluate; update the study")
        raise stop from None


if __name__ == "__main__":
    main()
