"""Runs kept by default (docs/results.md): without `--output` a run's results go to
`.evalgate/runs/<time>-<name>.json`, copied to `.evalgate/last.json`, in a folder git ignores
(`.evalgate/.gitignore` holds `*`, as pytest's cache does). `evalgate report` and `view` read the last run.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from evalgate.infra.files import check_writable, write_file

FOLDER = ".evalgate"
KEPT = 50  # the newest runs kept in .evalgate/runs; older ones are removed when a run is saved


def folder(root: Path) -> Path:
    """`.evalgate` under root, made with its `.gitignore` on first use."""
    where = root / FOLDER
    (where / "runs").mkdir(parents=True, exist_ok=True)
    ignore = where / ".gitignore"
    if not ignore.exists():
        write_atomically(ignore, b"# evalgate's kept runs: never committed\n*\n")
    return where


def new_run_path(root: Path, started: float | None = None) -> Path:
    """Where a run writes before its name is known: `.evalgate/runs/<time>-run.json`."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started if started is not None else time.time()))
    return folder(root) / "runs" / f"{stamp}-{os.getpid()}-run.json"


def file_name_part(name: str) -> str:
    """A spec's name as a file name part: letters, digits, `.`, `_`, `-`; at most 60 characters."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-")[:60] or "run"


def keep(root: Path, written: Path, name: str) -> Path:
    """The finished run renamed `<time>-<name>.json`, copied to `last.json`; the oldest runs past KEPT removed."""
    stamp, pid = written.name.split("-")[:2]
    final = written.with_name(f"{stamp}-{file_name_part(name)}.json")
    if final.exists():  # another run of this spec finished in the same second
        final = written.with_name(f"{stamp}-{file_name_part(name)}-{pid}.json")
    os.replace(written, final)
    write_atomically(folder(root) / "last.json", final.read_bytes())
    runs = sorted((root / FOLDER / "runs").glob("*.json"))
    for old in runs[:-KEPT]:
        old.unlink(missing_ok=True)
    return final


def last_run(root: Path) -> Path | None:
    path = root / FOLDER / "last.json"
    return path if path.is_file() else None


def write_atomically(path: Path, data: bytes) -> None:
    """Written beside `path` and renamed over it by the one writer (evalgate.infra.files)."""
    check_writable(path)
    write_file(path, data)
