"""Importing a user's `package.module:callable` from the spec's folder."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from evalgate import isolation

_lock = threading.Lock()


def import_callable(reference: str, base_dir: Path) -> Callable[..., Any]:
    """Import `module:attr` with `base_dir` first on sys.path; ValueError says what is wrong."""
    module_name, sep, attr_path = reference.partition(":")
    if not sep or not module_name or not attr_path:
        raise ValueError(f"`{reference}` should look like `package.module:function`")
    folder = str(base_dir.resolve())
    with _lock:
        if folder not in sys.path:
            sys.path.insert(0, folder)
        try:
            module = _shadowed(module_name, Path(folder)) or importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise ValueError(
                f"cannot import `{module_name}` ({exc.msg}); it is looked up from {folder}"
            ) from None
        except SystemExit as exc:  # a script, not a module: it exits when imported
            raise ValueError(
                f"importing `{module_name}` called sys.exit({exc.code!r}); guard its script part with "
                "`if __name__ == \"__main__\":`"
            ) from None
        except BaseException as exc:  # the user's module raised while importing
            if isolation.user_interrupt(exc):
                raise
            raise ValueError(
                f"importing `{module_name}` raised {type(exc).__name__}: {str(exc)[:300]}"
            ) from None
    target: Any = module
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValueError(f"`{module_name}` has no attribute `{attr_path}`") from None
    if not callable(target):
        raise ValueError(f"`{reference}` is not callable")
    return target


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
