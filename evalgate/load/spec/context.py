"""What building a spec's entries may use beyond their own parameters."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal


@dataclass(frozen=True)
class BuildContext:
    """What building an entry may use from outside its parameters (a scorer factory's keyword-only `ctx`).

    base_dir: the spec's folder (relative paths in entries start there).
    judge: the spec's Judge (built once by the loader, shared by its judged scorers), a JudgeSpec,
    or None when the spec has no `judge:` section.
    not_scorable: the spec's `not_scorable`, for the entries that set none (`Entry.not_scorable`).
    """

    base_dir: Path = Path(".")
    judge: Any = None
    not_scorable: Literal["leave_out", "fail"] = "leave_out"
