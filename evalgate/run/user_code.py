"""Importing a user's `package.module:callable` from the spec's folder, and describing what it raises.

An import that takes long is said on stderr, and one that never returns (a loop or a wait at
module level) is stopped after IMPORT_LIMIT_S: otherwise `validate` or `run` would hold a CI job
until the job's own timeout, saying nothing.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import importlib
import importlib.util
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

from pydantic import AfterValidator

from evalgate.infra import isolation
from evalgate.infra.redaction import redact_cut

_lock = threading.Lock()
IMPORT_NOTICE_S = 15.0  # then every minute: "still importing ..."
IMPORT_LIMIT_S = 600.0  # no module's import takes ten minutes but one that never returns
MESSAGE_CHARS = 1000  # of an exception's message, quoted in an item's or a result's error


class _ImportTimeout(BaseException):  # not an Exception: the module's own `except Exception` lets it through
    pass


def check_reference(reference: str) -> str:
    """`reference` when it can name a callable (`package.module:function`); else ValueError saying what to write.

    The spec's models check it (so the problem is at the `function:` line, before any import), and
    import_callable again (the Python API). A relative module name (`.agent`) is refused here: the
    module is imported by its full name from the spec's folder, so there is no package for it to be
    relative to, and importlib's own message ("the 'package' argument is required") says nothing of that."""
    module_name, sep, attr_path = reference.partition(":")
    if not sep or not module_name or not attr_path:
        raise ValueError(f"`{reference}` should look like `package.module:function`")
    if module_name.startswith("."):
        absolute = module_name.lstrip(".")
        example = f", e.g. `{absolute}:{attr_path}`" if absolute else ""
        raise ValueError(f"`{module_name}` is a relative module name, which is not supported: write the module's "
                         f"full dotted name as imported from the spec's folder{example}")
    return reference


def describe_exception(exc: BaseException, limit: int = MESSAGE_CHARS) -> str:
    """`Type: message` for an exception the code under test raised: secrets masked, then cut to `limit`.

    Never raises: the exception's own `__str__` may raise (even itself again), and that used to escape
    evalgate's handlers and end the run with a traceback. A message of megabytes is no item's error either."""
    try:
        text = str(exc)
    except BaseException as inner:  # what the user's __str__ raised says nothing of the failure
        if isolation.user_interrupt(inner):
            raise
        text = f"(its message could not be read: str() raised {type(inner).__name__})"
    text = redact_cut(text, limit)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def copied(value: Any) -> Any:
    """A deep copy to hand the code under test, which may edit what it gets; the value itself if it cannot be
    copied (an object from the Python API)."""
    try:
        return copy.deepcopy(value)
    except Exception:
        return value


def exit_argument(exc: SystemExit) -> str:
    """What sys.exit() was given, as describe_exception reads it (`3`, `bye`, or nothing): its repr may raise."""
    return describe_exception(exc, 300).removeprefix("SystemExit").removeprefix(": ")


# A `function:` setting (python target and scorer): checked where the spec is validated
FunctionReference = Annotated[str, AfterValidator(check_reference)]


def import_callable(reference: str, base_dir: Path) -> Callable[..., Any]:
    """Import `module:attr` with `base_dir` first on sys.path; ValueError says what is wrong."""
    module_name, _, attr_path = check_reference(reference).partition(":")
    folder = str(base_dir.resolve())
    with _lock:
        if folder not in sys.path:
            sys.path.insert(0, folder)
        try:
            with _watched(module_name):
                module = _shadowed(module_name, Path(folder)) or importlib.import_module(module_name)
        except _ImportTimeout:
            sys.modules.pop(module_name, None)  # half a module: a later import starts again
            raise ValueError(
                f"importing `{module_name}` did not finish in {IMPORT_LIMIT_S:g} s: does the module loop or wait "
                "when imported? Move that work into the function, or under `if __name__ == \"__main__\":`"
            ) from None
        except ModuleNotFoundError as exc:
            raise ValueError(
                f"cannot import `{module_name}` ({exc.msg}); it is looked up from {folder}"
            ) from None
        except SystemExit as exc:  # a script, not a module: it exits when imported
            raise ValueError(
                f"importing `{module_name}` called sys.exit({exit_argument(exc)}); guard its script part with "
                "`if __name__ == \"__main__\":`"
            ) from None
        except BaseException as exc:  # the user's module raised while importing
            if isolation.user_interrupt(exc):
                raise
            raise ValueError(f"importing `{module_name}` raised {describe_exception(exc, 300)}") from None
    target: Any = module
    parts = attr_path.split(".")
    for depth, part in enumerate(parts):
        try:
            target = getattr(target, part)
        except AttributeError:
            hint = _close_name(target, part)
            if hint:
                hint = f"; did you mean `{'.'.join([*parts[:depth], hint])}`?"
            raise ValueError(f"`{module_name}` has no attribute `{attr_path}`{hint}") from None
    if not callable(target):
        raise ValueError(f"`{reference}` is not callable")
    function: Callable[..., Any] = target
    return function


def _close_name(owner: Any, name: str) -> str:
    """The public name of `owner` closest to a misspelt `name` (`answr` -> `answer`), or ''."""
    try:
        names = [n for n in dir(owner) if isinstance(n, str) and not n.startswith("_")]
    except Exception:  # the user's own `__dir__` may raise: then no hint, the error stands
        return ""
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return close[0] if close else ""


@contextlib.contextmanager
def _watched(module_name: str) -> Iterator[None]:
    """Say on stderr when the import takes long; on the main thread, stop it after IMPORT_LIMIT_S.

    The limit is a SIGALRM timer, which interrupts a Python loop or a sleep at module level (an
    import cannot be stopped from another thread). Elsewhere, or without SIGALRM, only the notice."""
    started = time.monotonic()
    done = threading.Event()

    def notice() -> None:
        wait = IMPORT_NOTICE_S
        while not done.wait(wait):
            print(f"evalgate: still importing `{module_name}` ({time.monotonic() - started:.0f} s)", file=sys.stderr,
                  flush=True)
            wait = 60.0

    threading.Thread(target=notice, name="evalgate-import-notice", daemon=True).start()
    alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    previous: Any = None

    def expire(signum: int, frame: Any) -> None:
        raise _ImportTimeout

    if alarm:
        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, IMPORT_LIMIT_S)
    ours = isolation.handles_interrupts()
    try:
        yield
    finally:
        done.set()
        if ours and not isolation.handles_interrupts():  # a module that took SIGINT or SIGTERM (or ignores them)
            isolation.install_interrupt_handler()  # made Ctrl-C and a cancelled job lose the finished items
        if alarm and signal.getsignal(signal.SIGALRM) is expire:  # the module did not take SIGALRM for itself
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)


def _shadowed(module_name: str, folder: Path) -> ModuleType | None:
    """The folder's own `module_name` when another folder's module of that name is loaded.

    Two specs in one process (tests, the Python API) may both say `agent:answer`; each must
    get the `agent.py` beside it, not whichever was imported first.
    """
    loaded = sys.modules.get(module_name)
    candidate = folder / (module_name.replace(".", "/") + ".py")
    if loaded is None or not candidate.is_file():
        return None
    if Path(getattr(loaded, "__file__", "") or "").resolve() == candidate.resolve():
        return loaded
    unique = f"{module_name}@{abs(hash(str(candidate)))}"
    if unique in sys.modules:
        return sys.modules[unique]
    spec = importlib.util.spec_from_file_location(unique, candidate)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    spec.loader.exec_module(module)
    return module
