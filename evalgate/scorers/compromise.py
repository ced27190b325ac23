"""compromise, the NLP library of Mastra's completeness scorer, run as its own build in V8.

Mastra's completeness reads a text's nouns, verbs (as infinitives), topics and terms with the
compromise library. evalgate runs compromise's own browser build (`data/compromise.js`, the version
below, MIT: `data/compromise-LICENSE.txt`) and Mastra's extraction (`data/completeness.js`) in V8,
embedded through the `mini-racer` package (the optional extra `evalgate-gates[mastra-nlp]`), so
its words are compromise's own. Moving to another compromise release is this file's version and
the build beside it.

One V8 context serves the process: loaded on the first text (about a second) on a thread of its own,
which runs every text for the worker threads, one at a time, and closes the context at exit (V8 crashes
the process when a context made on one thread is freed from another, e.g. after the worker that made it
ended). Each text is capped in size and bounded in time, so a pathological one errors that result
instead of hanging the run. Nothing of V8 is imported until then.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from py_mini_racer import MiniRacer

log = logging.getLogger(__name__)

COMPROMISE_VERSION = "14.20.0"  # the build in data/compromise.js; @mastra/evals 1.10.2 asks for ^14.15.0
EXTRA = "mastra-nlp"
MISSING = (f"`completeness` runs the compromise NLP library (as Mastra's does) in V8 through the mini-racer "
           f"package, which is not installed: pip install 'evalgate-gates[{EXTRA}]'")
MAX_TEXT_CHARS = 100_000  # compromise reads about 20,000 characters a second on a busy runner
TIMEOUT_S = 30.0
MAX_MEMORY_BYTES = 1 << 30

T = TypeVar("T")
_start_lock = threading.Lock()
_jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
_v8_thread: threading.Thread | None = None
_racer: MiniRacer | None = None  # made, used and closed on _v8_thread only


def available() -> bool:
    """Whether mini-racer is installed (looked up, not imported: a run without completeness loads no V8)."""
    try:
        return importlib.util.find_spec("py_mini_racer") is not None
    except (ImportError, ValueError):  # a blocked or half-installed package
        return False


def require() -> None:
    """ValueError naming the extra to install when mini-racer is missing (a spec error where a spec asks)."""
    if not available():
        raise ValueError(MISSING)


def _data(name: str) -> str:
    return resources.files("evalgate.scorers").joinpath("data", name).read_text(encoding="utf-8")


def _load() -> MiniRacer:
    """A V8 context with compromise and Mastra's extraction loaded, checked to be COMPROMISE_VERSION."""
    try:
        from py_mini_racer import MiniRacer
    except ImportError as exc:
        raise ValueError(f"{MISSING} ({exc})") from None
    started = time.perf_counter()
    racer = MiniRacer()
    racer.set_hard_memory_limit(MAX_MEMORY_BYTES)
    racer.eval(_data("compromise.js"), timeout_sec=TIMEOUT_S)
    racer.eval(_data("completeness.js"), timeout_sec=TIMEOUT_S)
    # the words cross as one JSON string: a JavaScript array handed to Python stays a handle into V8, and a
    # handle freed after `close()` (at the interpreter's exit) crashes the process
    racer.eval("function evalgateCompletenessElementsJSON(text) {"
               " return JSON.stringify(evalgateCompletenessElements(text)); }")
    version = racer.eval("nlp.version")
    if version != COMPROMISE_VERSION:
        racer.close()
        raise ValueError(f"data/compromise.js is compromise {version}, not {COMPROMISE_VERSION}: "
                         "update COMPROMISE_VERSION with the build")
    log.debug("compromise %s loaded in V8 in %.2f s", version, time.perf_counter() - started)
    return racer


def elements(text: str) -> list[str]:
    """The distinct words Mastra's completeness extracts from `text`, in its order: lower-case a-z/0-9 runs of
    compromise's nouns, infinitives of its verbs, topics and terms (`extractElements(nlp(text.trim()))`)."""
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"the text is {len(text):,} characters, more than the {MAX_TEXT_CHARS:,} completeness "
                         "reads (compromise takes seconds per 100,000); score shorter texts or use another scorer")
    return [str(w) for w in _on_v8_thread(lambda: _extract(text))]


def _extract(text: str) -> list[Any]:
    """On the V8 thread: the context loaded on first use, then Mastra's extraction of one text."""
    from py_mini_racer import JSEvalException, JSOOMException, JSTimeoutException

    global _racer
    if _racer is None:
        _racer = _load()
    try:
        words: list[Any] = json.loads(_racer.call("evalgateCompletenessElementsJSON", text, timeout_sec=TIMEOUT_S))
    except JSTimeoutException:  # V8 stops the script; the context stays usable for the next text
        raise ValueError(f"compromise did not finish a {len(text):,}-character text in {TIMEOUT_S:g} s") from None
    except JSOOMException:  # the limit stops the script; what it allocated is garbage
        raise ValueError(f"compromise ran out of memory on a {len(text):,}-character text") from None
    except JSEvalException as exc:
        raise ValueError(f"compromise failed on this text: {str(exc)[:300]}") from None
    return words


def _serve() -> None:
    """The V8 thread: runs each job in turn, for as long as the process lives (a daemon thread)."""
    while True:
        work, done = _jobs.get()
        if done.set_running_or_notify_cancel():
            try:
                done.set_result(work())
            except BaseException as exc:  # handed to the caller, who raises it
                done.set_exception(exc)


def _on_v8_thread(work: Callable[[], T]) -> T:
    """`work()` run on the V8 thread (started on first use, with its close at exit), its result or error."""
    global _v8_thread
    with _start_lock:
        if _v8_thread is None:
            _v8_thread = threading.Thread(target=_serve, name="evalgate-v8", daemon=True)
            _v8_thread.start()
            atexit.register(_close)
    done: Future[T] = Future()
    _jobs.put((work, done))
    return done.result()


def _close() -> None:
    """At exit: the context closed on the thread that made it (its V8 thread stops; the exit does not hang)."""
    def close() -> None:
        global _racer
        if _racer is not None:
            _racer.close()
            _racer = None

    _on_v8_thread(close)
