"""A shard's replay: what its run fed the aggregator, kept as columns for `evalgate merge`.

Without repeats an item gives each entry at most one score, and an entry's sums depend only on its
own scores in data order. So a shard's results record, beside its items, each item's data index and
id, and per entry the scores it took (which items, which floats, how many not scorable). The merge
lays the shards' columns out in the whole data set's order and adds them: the very floats of one
run, without parsing every item again. Items that errored or cost money are listed too: the merge
reads just those items for the error table and the cost sums. The items' SHA-256 ties the columns
to the very items the run wrote, the columns' own SHA-256 to the columns it wrote: a shard file
edited since, its items or its columns, is read item by item. Arrays travel as base64 of
little-endian 8-byte values, so a float is kept to the last bit (NaN and infinities included).
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from array import array
from collections.abc import Sequence
from operator import lt
from typing import Any

from evalgate.decide.verdict import Entry

VERSION = 1
_Key = tuple[int | None, str, str]


def _pack(values: array[Any]) -> str:
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return base64.b64encode(values.tobytes()).decode("ascii")


def columns_sha256(raw: dict[str, Any]) -> str:
    """SHA-256 of a replay's columns (all but its digests) as JSON writes them: an edit to the columns,
    which the items' digest does not see, no longer matches it."""
    columns = {key: value for key, value in raw.items() if not key.endswith("_sha256")}
    return hashlib.sha256(json.dumps(columns, sort_keys=True).encode("ascii")).hexdigest()


def _unpack(typecode: str, text: Any) -> array[Any]:
    """The array `_pack` wrote; ValueError when the text is not one."""
    if not isinstance(text, str):
        raise ValueError("not a packed array")
    values = array(typecode)
    values.frombytes(base64.b64decode(text, validate=True))
    if sys.byteorder != "little":
        values.byteswap()
    return values


class _Feed:
    __slots__ = ("at", "not_scorable", "scores")

    def __init__(self) -> None:
        self.at = array("q")  # the positions of the items that scored, ascending
        self.scores = array("d")
        self.not_scorable = 0


class Recorder:
    """Collects a shard run's replay as its results are taken, in data order."""

    def __init__(self) -> None:
        self.index = array("q")
        self.ids: list[str] = []
        self.records: list[int] = []  # items the merge reads whole: errored, or with a cost
        self.feeds: dict[_Key, _Feed] = {}
        self.broken = False  # an entry scored twice in one item: not a column; the merge reads the items
        self._by_entry: dict[int, _Feed] = {}  # by id(entry): a check's entry is the same object every item
        self._pinned: list[Entry] = []  # keeps those ids from being reused

    def add(self, index: int, item_id: str, contributions: Sequence[tuple[Entry, float | None]],
            read_whole: bool) -> None:
        position = len(self.ids)
        self.index.append(index)
        self.ids.append(item_id)
        if read_whole:
            self.records.append(position)
        by_entry = self._by_entry
        for entry, score in contributions:
            feed = by_entry.get(id(entry))
            if feed is None:
                feed = self.feeds.get(entry.key)
                if feed is None:
                    feed = self.feeds[entry.key] = _Feed()
                by_entry[id(entry)] = feed
                self._pinned.append(entry)
            if score is None:
                feed.not_scorable += 1
                continue
            at = feed.at
            if at and at[-1] == position:
                self.broken = True
            at.append(position)
            feed.scores.append(score)

    def record(self, keys: Sequence[_Key]) -> dict[str, Any] | None:
        """The replay for the results' `shard` record; `keys`: its entries, in the record's order."""
        if self.broken or len(keys) != len(set(keys)) or not self.feeds.keys() <= set(keys):
            return None
        count = len(self.ids)
        feeds = []
        for key in keys:
            feed = self.feeds.get(key) or _Feed()
            feeds.append({"at": None if len(feed.at) == count else _pack(feed.at), "scores": _pack(feed.scores),
                          "not_scorable": feed.not_scorable})
        columns = {"version": VERSION, "items": count, "index": _pack(self.index), "ids": self.ids,
                   "records": self.records, "feeds": feeds}
        return {**columns, "columns_sha256": columns_sha256(columns)}


# Plain classes, not dataclasses: those generate and compile their methods at import, which every
# merge would pay for (about 0.4 ms each); nothing compares or prints these.
class Column:
    """One entry's scores in a shard: `at` the item positions that scored (None: every item)."""

    __slots__ = ("at", "not_scorable", "scores")

    def __init__(self, at: array[int] | None, scores: array[float], not_scorable: int) -> None:
        self.at = at
        self.scores = scores
        self.not_scorable = not_scorable


class Replay:
    """A shard's replay, decoded."""

    __slots__ = ("columns", "ids", "index", "items_sha256", "records")

    def __init__(self, index: array[int], ids: list[str], records: list[int], columns: list[Column],
                 items_sha256: str) -> None:
        self.index = index
        self.ids = ids
        self.records = records
        self.columns = columns
        self.items_sha256 = items_sha256  # of the items array's contents in the file, between its brackets


def decode(raw: Any, entries: int) -> Replay | None:
    """The replay of a shard record (`entries` long); None when there is none or it is not well formed,
    and the merge reads every item instead."""
    if not isinstance(raw, dict) or raw.get("version") != VERSION:
        return None
    try:
        if raw.get("columns_sha256") != columns_sha256(raw):  # edited (or written before the columns had one)
            return None
    except (TypeError, ValueError, RecursionError):  # e.g. a column nested past the recursion limit
        return None
    try:
        count = raw["items"]
        index = _unpack("q", raw["index"])
        ids = raw["ids"]
        records = raw["records"]
        feeds = raw["feeds"]
        digest = raw["items_sha256"]
        if (digest.__class__ is not str or count.__class__ is not int or len(index) != count
                or not isinstance(ids, list) or len(ids) != count or not all(i.__class__ is str for i in ids)
                or not isinstance(records, list)
                or not all(r.__class__ is int and 0 <= r < count for r in records)
                or not all(map(lt, records, records[1:]))  # ascending, each once: an item's cost is counted once
                or not isinstance(feeds, list) or len(feeds) != entries):
            return None
        columns = []
        for feed in feeds:
            at = None if feed["at"] is None else _unpack("q", feed["at"])
            scores = _unpack("d", feed["scores"])
            skipped = feed["not_scorable"]
            if skipped.__class__ is not int or skipped < 0 or len(scores) != (count if at is None else len(at)):
                return None
            if at is not None and at and (at[0] < 0 or at[-1] >= count or not all(map(lt, at, at[1:]))):
                return None  # positions must be items of this shard, each once, ascending
            columns.append(Column(at, scores, skipped))
    except (KeyError, TypeError, ValueError):
        return None
    return Replay(index, ids, records, columns, digest)
