"""What building a spec's entries may use beyond their own parameters."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class BuildContext:
    """What a scorer factory may need from outside its parameters (its keyword-only `ctx`).

    base_dir: the spec's folder (relative paths in entries start there).
    judge: the spec's Judge (built once by the loader, shared by its judged scorers), a JudgeSpec,
    or None when the spec has no `judge:` section.
    """

    base_dir: Path = Path(".")
    judge: Any = None
