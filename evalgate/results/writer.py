"""Results JSON v1 (docs/results.md): the header, the streaming writer (reading back: results.model).

Each finished item is appended to `<output>.items.jsonl` (the journal; the Action keeps it under
RUNNER_TEMP) as it completes; a background thread hands the appended lines to the operating system
every FLUSH_WINDOW_S, so a killed run loses at most the items of its last FLUSH_WINDOW_S, rerun on
`--resume` (the run loop's thread never waits on a write: at 64 threads a write that gives up the GIL
waits milliseconds to get it back, and the loop would stall per item); `finish` then writes the results JSON
atomically, copying the journal's bytes in data order without encoding any item again or holding
every item in memory, and removes the journal once a complete run's results are safely written.
Items are encoded with orjson (about 3x faster than `json` here); anything it refuses (a lone
surrogate, an integer beyond 64 bits, a non-string key) goes through `json` as before.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import hashlib
import json
import math
import os
import stat
import threading
import weakref
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Final

import orjson

from evalgate import __version__
from evalgate.decide.verdict import GateResult, Outcome, ThresholdResult, TurnResult
from evalgate.infra.files import (
    MAX_RESULTS_BYTES,
    atomic_writer,
    check_writable,
    default_root,
    open_for_append,
    refuse_unreadable,
    scratch_file,
)
from evalgate.infra.redaction import holds_secret, redact_value
from evalgate.infra.textsafe import plain
from evalgate.results.stream import StreamedResults

SCHEMA_VERSION: Final = 1


def header(name: str, outcome: Outcome, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything of the results JSON but `items`, in the documented key order."""
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "name": name, **outcome.written()}
    summary = {
        "total_items": outcome.total_items,
        "errored_items": outcome.errored_items,
        "not_scorable": outcome.not_scorable,
        "max_errors": outcome.max_errors,
        "error_budget_exceeded": outcome.error_budget_exceeded,
        "failure_reason": outcome.failure_reason,
    }
    if outcome.not_scored:  # only when some gate or threshold had nothing scorable
        summary["not_scored"] = [record.to_dict() for record in outcome.not_scored]
    meta = dict(meta or {})
    summary.update(meta.pop("summary", {}))
    out["summary"] = summary
    out.update(meta)
    finite: dict[str, Any] = _finite(out)
    return finite


def _finite(value: Any) -> Any:
    """NaN and infinities become null: the results must parse as strict JSON everywhere."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


# One encoder for every item: json.dumps with options builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=str)
# A finished item's journal line reaches the operating system within this many seconds (a background
# thread writes what was appended since): a killed run reruns at most the items of that window.
FLUSH_WINDOW_S = 0.05
JOURNAL_READ_BUFFER = 1 << 20
# A header value `finish` writes over with the SHA-256 of the items array's contents (between its
# brackets), once they are written: as long as the digest, so nothing moves.
ITEMS_SHA256_PENDING = "sha256-of-the-items-array-written-once-the-items-are-written...."
UNREADABLE_LINES_MAX = 1000  # lines of a resumed journal that hold no record, before it is refused
_NO_ITEM_ABOVE = 2**62  # item indices are positions in a data set: far below what an array("q") holds


def dumps_item(record: dict[str, Any]) -> str:
    try:
        return _ENCODER.encode(record)
    except (ValueError, TypeError, RecursionError):  # NaN, a cycle, or nesting too deep from user code
        return _ENCODER.encode(plain(record))


def item_bytes(record: dict[str, Any]) -> bytes:
    """One item as a JSON line's bytes, newline included, every known secret redacted; NaN and infinities
    become null, as in `dumps_item`."""
    try:
        data = orjson.dumps(record, default=str, option=orjson.OPT_APPEND_NEWLINE)
        if holds_secret(data):  # rare: masked in the record's strings, never in its JSON text
            data = orjson.dumps(redact_value(record), default=str, option=orjson.OPT_APPEND_NEWLINE)
        return data
    except TypeError:  # orjson refuses it (a lone surrogate, a huge integer, a non-string key): json takes it
        return json_utf8(dumps_item(redact_value(record)) + "\n")


def json_utf8(text: str) -> bytes:
    """UTF-8, a lone surrogate (valid in JSON data, not in UTF-8) kept as its JSON escape `\\udXXX`.

    Every string in the results is a JSON string literal, so the backslash escape is valid JSON. JSON text
    is redacted before it is written, as a value (`redact_value`), never as text.
    """
    return text.encode("utf-8", "backslashreplace")


@dataclass
class EvalResult:
    """What a run produced: the outcome (verdict, averages) and, when kept, every item."""

    name: str
    outcome: Outcome
    items: list[Any] = field(default_factory=list)
    errored: list[Any] = field(default_factory=list)
    duration_s: float = 0.0
    interrupted: bool = False
    results_path: Path | None = None
    extra_summary: dict[str, Any] = field(default_factory=dict)  # network stats, resumed items
    notes: list[str] = field(default_factory=list)  # what --resume found changed, for the user
    extra: dict[str, Any] = field(default_factory=dict)  # top-level keys: `shard`, `merged`
    created_at: str | None = None
    git_sha: str | None = None
    compare_settings: dict[str, Any] | None = None  # the spec's `compare:` section
    comparison: dict[str, Any] | None = None  # with a baseline: evalgate.compare's block
    failure_reason: str | None = None  # "regression" when a comparison failed the verdict

    @property
    def verdict(self) -> str | None:
        return self.outcome.verdict

    @property
    def gate_results(self) -> list[GateResult]:
        return self.outcome.gate_results

    @property
    def threshold_results(self) -> list[ThresholdResult]:
        return self.outcome.threshold_results

    @property
    def turn_results(self) -> list[TurnResult] | None:
        return self.outcome.turn_results

    @property
    def scores(self) -> dict[str, float]:
        return self.outcome.scores

    @property
    def summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = self.header()["summary"]
        return summary

    def header(self) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "duration_s": round(self.duration_s, 3),
            "interrupted": self.interrupted,
            **self.extra_summary,
        }
        if self.failure_reason is not None:
            summary["failure_reason"] = self.failure_reason
        meta: dict[str, Any] = {"summary": summary, "evalgate_version": __version__}
        if self.created_at is not None:
            meta["created_at"] = self.created_at
        if self.git_sha is not None:
            meta["git_sha"] = self.git_sha
        if self.compare_settings is not None:
            meta["compare_settings"] = self.compare_settings
        if self.comparison is not None:
            meta["comparison"] = self.comparison
        meta.update(self.extra)
        return header(self.name, self.outcome, meta)

    def apply_comparison(self, comparison: Any) -> None:
        """Record a comparison; a regressed gate or threshold (or one left uncertain under `when_uncertain: fail`)
        makes the verdict failed."""
        self.comparison = comparison.to_dict()
        if comparison.failures and self.outcome.verdict != "failed":
            self.outcome.verdict = "failed"
            self.failure_reason = "regression"

    def to_dict(self) -> dict[str, Any]:
        """The results JSON (docs/results.md), items included when they were kept."""
        out = self.header()
        out["items"] = [json.loads(dumps_item(r.record())) for r in self.items]
        return out


ERROR_KINDS = 100  # distinct error messages counted for summary.top_error: a bound on memory
ERROR_CHARS = 300


class ErrorTally:
    """The most common item error (target error, else the first scorer error), for "could not evaluate"."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, item: Any) -> None:
        """An errored item (an ItemResult, or the merge's record of one). With repeats each distinct reason of
        its trials counts the item once: a judge failing on every trial is the top error, not the one trial
        whose run failed and whose error the item carries."""
        trials = getattr(item, "trials", None) or []
        messages = [m for t in trials if (m := _first_error(t)) is not None]
        own = _first_error(item)
        for message in dict.fromkeys(m[:ERROR_CHARS] for m in (messages or ([own] if own else []))):
            if message in self.counts or len(self.counts) < ERROR_KINDS:
                self.counts[message] = self.counts.get(message, 0) + 1

    def top(self) -> dict[str, Any] | None:
        if not self.counts:
            return None
        message = max(self.counts, key=lambda m: self.counts[m])  # the first seen wins a tie
        return {"message": message, "items": self.counts[message]}


def _first_error(record: Any) -> str | None:
    """A run's error, else its first scorer's; a trial may be an ItemResult or a results file's mapping."""
    def field(name: str) -> Any:
        return record.get(name) if isinstance(record, dict) else getattr(record, name, None)
    scorer_errors = field("scorer_errors")
    first = next(iter(scorer_errors.values()), None) if isinstance(scorer_errors, dict) else None
    error = field("error") or first
    return str(error) if error else None


def replaceable_file(path: Path) -> None:
    """OSError (UnsafeWrite) when `path` is no regular file or a symlink, or a folder on its way is one: a
    results file is written beside its path and renamed over it, which would replace a device or a FIFO
    (as root, /dev/stdout itself). Said before any work, not after it."""
    check_writable(path)


class ResultsWriter:
    """Journal each item as it finishes; write the results JSON at the end."""

    def __init__(self, path: Path, *, resume: bool = False, journal: Path | None = None,
                 checks: Checks | None = None) -> None:
        """checks: each top-level check's params hash by kind (`gates`, `scorers`), recorded on the
        journal's first line so that a resume can tell a check whose parameters changed since, or that
        moved to the other kind (its journaled scores are stale either way)."""
        replaceable_file(path)
        self.path = path
        self.journal_path = journal or journal_path(path)
        # where no folder may be a symlink, fixed now: the code under test may change the working directory
        self.root, self.journal_root = default_root(path), default_root(self.journal_path)
        # Each journal line's item index and byte offset, in file order (two arrays: no object per line).
        self.indices = array("q")
        self.starts = array("q")
        self.ascending = True  # every line's index above the one before: the journal is the items, in order
        self.data_start = 0  # where the items begin: after the journal's own first line, if it has one
        self.checks: JournalChecks | None = None  # the journaled run's checks (see `checks` above)
        self.unreadable_lines = 0  # resumed: lines of the journal that hold no record
        # a finished run's journal is gone: its results hold the items (a dangling symlink there is no journal
        # gone: never written through)
        if resume and not os.path.lexists(self.journal_path):
            self._journal_from_results()
        self.created = not (resume and self.journal_path.exists())
        if not _replaceable(self.journal_path):
            raise FileExistsError(errno.EEXIST, "is in the way of the journal and is not one; move it or choose "
                                  "another --output", str(self.journal_path))
        leaked: list[dict[str, Any]] = []
        if not self.created:
            refuse_unreadable(self.journal_path, limit=MAX_RESULTS_BYTES, what="journal")
            leaked = self._index_journal()
            self.handle = open_for_append(self.journal_path, root=self.journal_root)
        else:
            self.handle = open_for_append(self.journal_path, root=self.journal_root, truncate=True)
            if checks is not None:
                self.handle.write(_journal_head(checks))
                self.data_start = self.handle.tell()
        self.size = self.handle.tell()  # kept here: tell() on every append would be a system call
        self.flusher = _Flusher(self._write_pending)  # the lines appended, written in batches
        for record in leaked:  # the later line of an index is its record: this one redacted
            data = item_bytes(record)
            self._note(record["index"], self.size)
            self.size += len(data)
            self.handle.write(data)
        self.handle.flush()  # on disk before the resume reads the records back

    def _journal_from_results(self) -> None:
        """The finished run's items back into a journal, read from its results one at a time (UnreadableFile:
        no regular file, or one too big to be evalgate's)."""
        refuse_unreadable(self.path, limit=MAX_RESULTS_BYTES, what="results file")  # said, not taken for no run
        try:
            streamed = StreamedResults(self.path)
        except (OSError, ValueError, RecursionError):  # absent, or no results (nested too deep): no items
            return
        if not streamed.has_items_array:
            return
        with contextlib.suppress(ValueError, RecursionError), \
                atomic_writer(self.journal_path, root=self.journal_root) as handle:
            # damaged items: the writer removes its scratch file, no journal, as if the results held no items
            checks = _checks_of_results(streamed.header)
            if checks["gates"] or checks["scorers"]:
                handle.write(_journal_head(checks))
            for item in streamed.items():
                if isinstance(item, dict) and isinstance(item.get("index"), int):
                    handle.write(json_utf8(dumps_item(redact_value(item)) + "\n"))

    def _index_journal(self) -> list[dict[str, Any]]:
        """Index the journal's lines, cut a torn last one; the records of lines holding a known secret
        (journaled before it was known, or planted), which are never copied: to append redacted."""
        good = 0
        leaked = []
        with self.journal_path.open("rb") as handle:
            offset = 0
            head = _read_journal_head(handle.readline())
            if head is not None:
                self.checks = head
                offset = good = self.data_start = handle.tell()
            else:
                handle.seek(0)
            for line in handle:
                if not line.endswith(b"\n"):
                    break  # a torn last line from a killed run: cut, the next item goes in its place
                try:
                    record = _load_line(line)
                    index = record["index"]
                except (ValueError, KeyError, TypeError):
                    # no record (edited, damaged): never copied, its item runs again; the lines after it count
                    index = None
                    self.unreadable_lines += 1
                    if self.unreadable_lines > UNREADABLE_LINES_MAX:  # each costs a parse: a file of them, minutes
                        raise FileExistsError(
                            errno.EEXIST, f"holds more than {UNREADABLE_LINES_MAX} lines that are no journal "
                            "record: it is no journal, or one damaged past reading; move it, or run without "
                            "--resume", str(self.journal_path)) from None
                else:
                    if holds_secret(line):
                        leaked.append(record)
                        index = None
                self._note(index, offset)
                offset += len(line)
                good = offset
        with self.journal_path.open("r+b") as handle:
            handle.truncate(good)
        return leaked

    def _note(self, index: Any, start: int) -> None:
        if index.__class__ is not int or not 0 <= index < _NO_ITEM_ABOVE:
            index = -1  # not an item of a data set (a hand-edited journal): its line is never copied
        indices = self.indices
        if index < 0 or (indices and index <= indices[-1]):
            self.ascending = False
        indices.append(index)
        self.starts.append(start)

    def offsets(self) -> dict[int, tuple[int, int]]:
        """Each item's line as (offset, length without the newline); a repeated index: its last line."""
        ends = [*self.starts[1:], self.size] if self.starts else []  # no line yet (stopped before the first item)
        return {index: (start, end - start - 1)
                for index, start, end in zip(self.indices, self.starts, ends, strict=True) if index >= 0}

    def journaled(self) -> JournalRecords:
        """The journal's finished items by data index, read from it when asked for (a later line wins)."""
        self.flush()
        return JournalRecords(self)

    def append(self, record: dict[str, Any]) -> None:
        """The item's line, written by the flusher within FLUSH_WINDOW_S (its offset known now)."""
        data = item_bytes(record)
        self._note(record["index"], self.size)
        self.size += len(data)
        self.flusher.add(data)

    def flush(self) -> None:
        """Every appended line to the operating system, now; a write the flusher failed raises here."""
        self.flusher.now()

    def _write_pending(self, batch: list[bytes]) -> None:
        if batch:
            self.handle.write(b"".join(batch))
        self.handle.flush()

    def finish(self, head: dict[str, Any], *, complete: bool = True, keep: set[int] | None = None,
               items_digest: bool = False) -> None:
        """Write the results JSON; a complete run's journal is then removed (an interrupted run keeps
        it for `--resume`). `keep`: only these items (a resumed journal may hold others).
        `items_digest`: write the items' SHA-256 over the head's last ITEMS_SHA256_PENDING (a shard's)."""
        self.flusher.stop()
        self.flush()
        opening = json_utf8(json.dumps(redact_value(head), ensure_ascii=False, indent=None)[:-1])
        digest_at = opening.rfind(ITEMS_SHA256_PENDING.encode()) if items_digest else -1
        # A buffer wide enough that items finished out of order (lines a few concurrencies apart) are found
        # in it by `_copy_sorted`'s seeks, not read again from the file one system call each.
        with self.journal_path.open("rb", buffering=JOURNAL_READ_BUFFER) as journal, \
                atomic_writer(self.path, root=self.root) as file:
            file.write(opening)
            file.write(b', "items": [')
            out = _Hashing(file) if digest_at >= 0 else file
            journal.seek(self.data_start)
            if keep is None and self.ascending:  # the common case: the journal is the items array
                _copy_lines(journal, out, self.size - self.data_start)
            else:
                offsets = self.offsets()
                order = sorted(offsets if keep is None else keep & offsets.keys())
                if _in_order(order, offsets, self.size, self.data_start):
                    _copy_lines(journal, out, self.size - self.data_start)
                else:
                    _copy_sorted(journal, out, order, offsets)
            file.write(b"]}\n")
            if isinstance(out, _Hashing):  # the placeholder has the digest's length: written over in place
                file.seek(digest_at)
                file.write(out.digest.hexdigest().encode())
        if complete:
            self.handle.close()
            self.journal_path.unlink(missing_ok=True)

    def close(self) -> None:
        self.flusher.stop()
        if not self.handle.closed:
            self.flush()
        self.handle.close()

    def discard(self) -> None:
        """Remove the journal this run created: the run was not valid. A resumed journal is kept."""
        self.flusher.stop()
        self.flusher.pending.clear()
        self.handle.close()
        if self.created:
            self.journal_path.unlink(missing_ok=True)


class _Flusher:
    """Writes the lines appended to `pending` every FLUSH_WINDOW_S from a daemon thread, started with the
    first line. The appending thread takes a lock only to add a line (never held across I/O); one batch is
    written at a time, in the order appended. A write's OSError (a full disk) is raised to the appender."""

    def __init__(self, write: Callable[[list[bytes]], None]) -> None:
        # called with a batch of lines (possibly empty), under `writing`; weakly held, so that a writer a
        # failed run never closed is collected and its thread ends rather than wake for ever
        self.write = weakref.WeakMethod(write)
        self.pending: list[bytes] = []
        self.adding = threading.Lock()  # held to add a line or take the batch
        self.writing = threading.Lock()  # one batch written at a time
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        self.error: OSError | None = None

    def add(self, line: bytes) -> None:
        if self.error is not None:
            raise self.error
        with self.adding:
            self.pending.append(line)
        if self.thread is None and not self.stopped.is_set():
            self.thread = threading.Thread(target=self._every_window, name="evalgate-journal", daemon=True)
            self.thread.start()

    def now(self) -> None:
        """Write what is pending, in this thread."""
        if self.error is not None:
            raise self.error
        self._write_batch()
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        """No more writes from the thread (what is pending stays, for `now`)."""
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None

    def _write_batch(self) -> None:
        with self.writing:
            with self.adding:
                batch, self.pending = self.pending, []
            write = self.write()
            if write is None:  # the writer is gone
                self.stopped.set()
                return
            try:
                write(batch)
            except OSError as exc:
                self.error = exc

    def _every_window(self) -> None:
        while not self.stopped.wait(FLUSH_WINDOW_S) and self.error is None:
            self._write_batch()


class JournalRecords:
    """A resumed journal's finished items by data index, each read from the file when asked for: a million
    journaled items are never held at once. Built from the writer's index of the journal's lines (its
    arrays, searched in place when the lines ascend, as a run writes them; else a mapping of the indices)."""

    def __init__(self, writer: ResultsWriter) -> None:
        self.path = writer.journal_path
        self.starts = array("q", writer.starts)
        self.ends = array("q", [*writer.starts[1:], writer.size] if writer.starts else [])
        self.indices = array("q", writer.indices)
        self.line_of: dict[int, int] | None = None
        if not writer.ascending:  # a later line of an index wins; lines that are no record (-1) are none
            self.line_of = {index: n for n, index in enumerate(self.indices) if index >= 0}

    def __len__(self) -> int:
        return len(self.indices) if self.line_of is None else len(self.line_of)

    def get(self, index: int, default: Any = None) -> Any:
        """The record journaled for this data index; `default` when there is none (or its line is no record)."""
        if self.line_of is not None:
            line = self.line_of.get(index)
        else:
            at = bisect.bisect_left(self.indices, index)
            line = at if at < len(self.indices) and self.indices[at] == index else None
        if line is None:
            return default
        with self.path.open("rb") as handle:
            handle.seek(self.starts[line])
            data = handle.read(self.ends[line] - self.starts[line])
        try:
            record = _load_line(data)
        except ValueError:
            return default
        return record if isinstance(record, dict) else default


def _in_order(order: list[int], offsets: dict[int, tuple[int, int]], size: int, start: int = 0) -> bool:
    """True when the journal holds exactly these items, one line each, in data order."""
    position = start
    for index in order:
        offset, length = offsets[index]
        if offset != position:
            return False
        position = offset + length + 1
    return position == size


class _Hashing:
    """A file that keeps the SHA-256 of what is written to it."""

    def __init__(self, file: Any) -> None:
        self.file = file
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> None:
        self.digest.update(data)
        self.file.write(data)


def _copy_sorted(journal: Any, out: Any, order: list[int], offsets: dict[int, tuple[int, int]]) -> None:
    position = journal.tell()
    for n, index in enumerate(order):
        offset, length = offsets[index]
        if offset != position:  # seek only when out of order: sequential reads stay buffered
            journal.seek(offset)
        if n:
            out.write(b",\n")
        out.write(journal.read(length + 1)[:length])  # the line without its newline
        position = offset + length + 1


def _copy_lines(journal: Any, out: Any, size: int) -> None:
    """The journal's lines as the items array, in blocks: a JSON line holds no raw newline."""
    remaining = size
    while remaining > 0:
        block = journal.read(min(remaining, 1 << 20))
        if not block:
            raise OSError(f"the journal {journal.name} shrank while the results were written")
        remaining -= len(block)
        if remaining == 0:
            block = block[:-1]  # the last line's newline ends the array, not an item
        out.write(block.replace(b"\n", b",\n"))


def _replaceable(journal: Path) -> bool:
    """Whether a file at the journal's path may be started over (or, resumed, cut at a torn last line
    and appended to): absent, empty, or an evalgate journal.

    Never a symlink or anything but a regular file: evalgate writes neither, and opening one could
    block (a FIFO) or write through to another file."""
    try:
        info = journal.lstat()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    try:
        with journal.open("rb") as handle:
            first = handle.readline(1 << 20)
    except FileNotFoundError:
        return True
    except OSError:
        return False  # a directory or unreadable: not ours to replace
    if not first:  # empty (a blank first line is no journal's: evalgate writes none)
        return True
    if not first.endswith(b"\n"):  # torn by a killed run (or longer than read): how evalgate starts a line
        return any(first.startswith(start) or start.startswith(first) for start in _LINE_STARTS)
    try:
        record = json.loads(first)
    except (ValueError, RecursionError):  # nested too deep: evalgate writes no such line
        return False
    return isinstance(record, dict) and (
        (isinstance(record.get("index"), int) and "id" in record) or _read_journal_head(first) is not None)


JOURNAL_HEAD_KEY = "evalgate_journal"
# How a journal's first line starts: its head (sorted keys), or an item (orjson's, or json's, spacing)
_LINE_STARTS = (b'{"evalgate_journal"', b'{"index":')


Checks = dict[str, dict[str, str]]  # "gates" and "scorers": each check's params hash by id


@dataclass
class JournalChecks:
    """What a journal's first line says of the run's top-level checks."""

    hashes: dict[str, str]  # params hash by id (a gate's and a scorer's of one id: the scorer's)
    kinds: Checks | None = None  # by kind; None in a journal written before kinds were recorded


def _journal_head(checks: Checks) -> bytes:
    """The journal's first line: no item (its index is null), the run's checks and their params hashes.
    `checks` keeps the by-id map an earlier evalgate reads; `gates`/`scorers` say each check's kind."""
    hashes = {**checks.get("gates", {}), **checks.get("scorers", {})}
    return (json.dumps({"index": None, JOURNAL_HEAD_KEY: {"version": 1, "checks": hashes, **checks}},
                       ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8", "backslashreplace")


def _hashes(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _read_journal_head(line: bytes) -> JournalChecks | None:
    """The checks a journal's first line records, or None when it is an item (or not ours)."""
    if JOURNAL_HEAD_KEY.encode() not in line[:200] or not line.endswith(b"\n"):
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    head = record.get(JOURNAL_HEAD_KEY) if isinstance(record, dict) and record.get("index") is None else None
    if not isinstance(head, dict):
        return None
    hashes = _hashes(head.get("checks"))
    if hashes is None:
        return None
    gates, scorers = _hashes(head.get("gates")), _hashes(head.get("scorers"))
    kinds = {"gates": gates, "scorers": scorers} if gates is not None and scorers is not None else None
    return JournalChecks(hashes, kinds)


def _checks_of_results(raw: Any) -> Checks:
    """The params hashes a results file's header records for its gates and scorers (a scorer without a
    threshold: in `score_stats`); a check with no numeric score is in none of them."""
    checks: Checks = {"gates": {}, "scorers": {}}
    if not isinstance(raw, dict):
        return checks
    stats = raw.get("score_stats")
    sources = (("gates", raw.get("gate_results")), ("scorers", raw.get("threshold_results")),
               ("scorers", [{**v, "id": k} for k, v in stats.items() if isinstance(v, dict)]
                if isinstance(stats, dict) else None))
    for kind, entries in sources:
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, dict) and isinstance(entry.get("id"), str) \
                    and isinstance(entry.get("params_hash"), str):
                checks[kind][entry["id"]] = entry["params_hash"]
    return checks


def journal_path(path: Path) -> Path:
    return path.with_name(path.name + ".items.jsonl")


def read_journal(path: Path) -> list[dict[str, Any]]:
    """Finished items from a journal, skipping a torn last line and any line that is no record."""
    records: list[dict[str, Any]] = []
    if not path.exists():
        return records
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            try:
                record = _load_line(line)
            except ValueError:
                continue  # no record: the writer leaves it out of the results too
            if isinstance(record, dict):
                records.append(record)
    return records


def _load_line(line: bytes) -> Any:
    """A journal line as JSON a run writes: UTF-8 text (no byte order mark, which `json.loads` skips in
    bytes), strict, no NaN or Infinity. Its bytes are copied into the results as they are, and those must
    parse as strict JSON everywhere."""
    try:
        return json.loads(line.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:  # nested too deep to parse: a run cuts what it writes at 64 levels
        raise ValueError("nested too deeply") from None


def _finite_float(text: str) -> float:
    """A JSON number as a float, refused when it is out of a float's range (`1e999` reads as infinity)."""
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} is out of range")
    return number


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not strict JSON")


def write_results_json(path: Path, raw: dict[str, Any]) -> None:
    """A results file rewritten whole (e.g. with a comparison added), atomically: never half a file.
    Written as the run writes it: secrets redacted, a lone surrogate kept as its JSON escape, NaN and
    infinities (which a results file read back may hold) as null."""
    replaceable_file(path)
    with atomic_writer(path) as file:
        file.write(json_utf8(json.dumps(_finite(redact_value(raw)), ensure_ascii=False, allow_nan=False) + "\n"))


def write_results_streamed(path: Path, head: dict[str, Any], items: Iterable[Any]) -> None:
    """A results file rewritten from its header and its items (read one at a time from the file it
    replaces), through the one writer (atomically), in a run's layout: the header on the first line, then
    an item a line. Written as `write_results_json` writes: secrets redacted, NaN and infinities as null.
    The items are read from the old file while the new one is written: it is renamed over it only at the end."""
    replaceable_file(path)
    with atomic_writer(path) as file:
        opening = json.dumps(_finite(redact_value({k: v for k, v in head.items() if k != "items"})),
                             ensure_ascii=False, allow_nan=False)[:-1]
        file.write(json_utf8(opening + (', "items": [' if opening != "{" else '"items": [')))
        for n, item in enumerate(items):
            text = json.dumps(_finite(redact_value(item)), ensure_ascii=False, allow_nan=False)
            file.write(json_utf8((",\n" if n else "") + text))
        file.write(b"]}\n")


def new_file(tmp: Path) -> BinaryIO:
    """A scratch file of our own at `tmp` (evalgate.infra.files.scratch_file): whatever is there is removed first."""
    return scratch_file(tmp)
