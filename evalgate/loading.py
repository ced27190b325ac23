"""Importing a user's `package.module:callable` from the spec's folder."""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise ValueError(
                f"cannot import `{module_name}` ({exc.msg}); it is looked up from {folder}"
            ) from None
        except Exception as exc:  # the user's module raised while importing
            raise ValueError(
                f"importing `{module_name}` raised {type(exc).__name__}: {exc}"
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
