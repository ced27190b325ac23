"""The response cache: JSON replies on disk under a digest of the caller's key, written redacted."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from evalgate import redaction

_TTL_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_ttl(value: float | int | str | None) -> float | None:
    """Seconds from `3600`, `"90s"`, `"30m"`, `"12h"`, `"7d"`, `"2w"`; None means no expiry."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not value > 0:  # NaN too: it compared as never expiring
            raise ValueError("ttl must be positive")
        return float(value)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", str(value))
    if not match:
        raise ValueError(f"ttl {value!r} is not a duration; write seconds or e.g. 30m, 12h, 7d")
    seconds = float(match.group(1)) * _TTL_UNITS[match.group(2) or "s"]
    if seconds <= 0:
        raise ValueError("ttl must be positive")
    return seconds


def key_digest(value: Any) -> str:
    """A stable hex digest of a JSON-able value (dict key order does not matter)."""
    data = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()  # a lone surrogate too


class ResponseCache:
    """JSON values on disk, one file per key, written atomically; entries older than `ttl_s` are misses.

    Safe to share between threads and processes (last writer wins; readers never see torn files).
    """

    def __init__(self, directory: str | Path, ttl_s: float | None = None) -> None:
        self.dir = Path(directory)
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self.unstored = 0  # replies a write failed to keep: a re-run sends them again
        self._first_failure: str | None = None

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        """The stored value, or None if absent, expired or unreadable."""
        path = self._path(key)
        try:
            if self.ttl_s is not None and time.time() - path.stat().st_mtime > self.ttl_s:
                return None
            with path.open("rb") as handle:
                return json.loads(handle.read())["value"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, value: Any) -> None:
        """Store a JSON-able value, every known secret masked (its keys too); failures to write are
        ignored (the cache is an optimisation)."""
        path = self._path(key)
        try:
            # masked here, where it is written, keys included: a reply is content evalgate did not author
            stored = {k: redaction.redact_value(v, foreign=True) for k, v in value.items()} if isinstance(
                value, dict) else redaction.redact_value(value, foreign=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(json.dumps({"value": stored}, ensure_ascii=False).encode("utf-8"))
            os.replace(tmp, path)
        except (OSError, TypeError, ValueError) as exc:
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(tmp)
            with self._lock:
                self.unstored += 1
                if self._first_failure is None:
                    self._first_failure = f"{type(exc).__name__}: {exc}"[:300]

    def discard(self, key: str) -> None:
        """Remove the stored value, if any."""
        with contextlib.suppress(OSError):
            self._path(key).unlink()

    def problem(self) -> str | None:
        """What the run should be told when writes failed: the cache silently costing nothing is a surprise."""
        with self._lock:
            if not self.unstored:
                return None
            return (f"the response cache in {self.dir} could not keep {self.unstored} replies "
                    f"({self._first_failure}); a re-run sends those requests again")


def cache_from_settings(settings: Any, base_dir: Path, *, enabled: bool = True) -> ResponseCache | None:
    """A ResponseCache from spec settings (`dir`, `ttl`), or None when absent or bypassed.

    `--no-cache` reaches here as enabled=False, passed down by whoever builds the client.
    A relative `dir` is relative to the spec's folder.
    """
    if settings is None or not enabled:
        return None
    directory = Path(settings.dir)
    if not directory.is_absolute():
        directory = base_dir / directory
    return ResponseCache(directory, parse_ttl(settings.ttl))
