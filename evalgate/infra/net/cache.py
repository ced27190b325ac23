"""The response cache: JSON replies on disk under a digest of the caller's key, written redacted."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from evalgate.infra import redaction
from evalgate.infra.files import MAX_CACHE_ENTRY_BYTES, open_capped, write_file
from evalgate.infra.net.errors import loads

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

    def __init__(self, directory: str | Path, ttl_s: float | None = None, root: str | Path | None = None) -> None:
        """root: the folder the cache must stay in (the spec's): no folder from there down is followed as a
        symlink, and a cache folder that leads outside it (symlinks followed) is neither read nor written."""
        self.dir = Path(directory)
        self.root = Path(root) if root is not None else self.dir
        self.ttl_s = ttl_s
        self.outside = not Path(os.path.realpath(self.dir)).is_relative_to(os.path.realpath(self.root))
        self._lock = threading.Lock()
        self.unstored = 0  # replies a write failed to keep: a re-run sends them again
        self._first_failure: str | None = None
        self.unread = 0  # entries that could not be read: asked again
        self._first_unread: str | None = None

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        """The stored reply ({"status", "body", "elapsed_ms"}), or None if absent, expired or unreadable. An entry
        that is no regular file (a FIFO, a symlink, a device), is over MAX_CACHE_ENTRY_BYTES, or holds no reply
        (nested too deep, fields of the wrong type) is a miss that `problem()` warns of, never the item's error."""
        path = self._path(key)
        if self.outside:
            self._unreadable(path, OSError(errno.EPERM, "the cache's folder leads outside the spec's folder"))
            return None
        try:
            with open_capped(path, limit=MAX_CACHE_ENTRY_BYTES, what="cache entry", follow=False) as handle:
                if self.ttl_s is not None and time.time() - os.fstat(handle.fileno()).st_mtime > self.ttl_s:
                    return None
                data = handle.read(MAX_CACHE_ENTRY_BYTES + 1)
            if len(data) > MAX_CACHE_ENTRY_BYTES:
                raise ValueError("it grew while it was read")
            value = loads(data)["value"]
            if not _is_stored_reply(value):
                raise ValueError("it holds no stored reply")
            return value
        except (FileNotFoundError, NotADirectoryError):  # no entry (its folder's name taken by a file: no folder)
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self._unreadable(path, exc)
            return None

    def _unreadable(self, path: Path, exc: BaseException) -> None:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        with self._lock:
            self.unread += 1
            if self._first_unread is None:
                self._first_unread = f"{path.name}: {reason}"[:300]

    def put(self, key: str, value: Any) -> None:
        """Store a JSON-able value, every known secret masked (its keys too); failures to write are
        counted, never raised (the cache is an optimisation). Written through `evalgate.infra.files.write_file`: never
        through a symlinked sub-folder or entry."""
        path = self._path(key)
        try:
            # masked here, where it is written, keys included: a reply is content evalgate did not author
            stored = {k: redaction.redact_value(v, foreign=True) for k, v in value.items()} if isinstance(
                value, dict) else redaction.redact_value(value, foreign=True)
            data = json.dumps({"value": stored}, ensure_ascii=False).encode("utf-8")
            write_file(path, data, root=self.root, scratch="", durable=False)
        except (OSError, TypeError, ValueError) as exc:
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
            said = []
            if self.unread:
                said.append(f"the response cache in {self.dir} had {self.unread} cache entries it could not read "
                            f"({self._first_unread}); those requests were sent again")
            if self.unstored:
                said.append(f"the response cache in {self.dir} could not keep {self.unstored} replies "
                            f"({self._first_failure}); a re-run sends those requests again")
            return "; ".join(said) or None


def _is_stored_reply(value: Any) -> bool:
    """What `HttpClient.request` stores: an int status, a body, a number of milliseconds."""
    return (isinstance(value, dict) and "body" in value and type(value.get("status", 200)) is int
            and type(value.get("elapsed_ms") or 0.0) in (int, float))


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
    return ResponseCache(directory, parse_ttl(settings.ttl), root=base_dir)
