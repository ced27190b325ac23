"""What every timing benchmark does first: evalgate's bytecode compiled, as an install leaves it.

pip compiles a package's bytecode when it installs it, and the Docker image runs compileall. A
checkout installed in editable mode under PYTHONDONTWRITEBYTECODE=1 (set on CI machines like this
one) would otherwise compile every evalgate module again in every timed process (~0.1 s), a cost no
installed evalgate pays.
"""

from __future__ import annotations

import compileall
from pathlib import Path

import evalgate


def compile_evalgate() -> None:
    """Write `__pycache__` for the evalgate the benchmarks run (the one this interpreter imports)."""
    compileall.compile_dir(Path(evalgate.__file__).parent, quiet=1)
