"""Shards: `--shard I/N` runs the items whose id hashes to shard I, so N matrix jobs split one data set.

Membership depends on the item's id alone (SHA-256, so every machine and Python agrees, in any
order of the data), and a case is the unit: its repeats and turns stay together. The results file
of a shard records what `evalgate merge` needs to rebuild the unsharded run exactly.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalgate.decide.verdict import NOT_SCORABLE_RULES, Entry, ThresholdRange
from evalgate.infra.textsafe import plain

if TYPE_CHECKING:  # the merge imports this module: it must not pay for the spec's models
    from evalgate.load.cases import Case
    from evalgate.load.loader import LoadedSpec

_SHARD = r"\s*(\d+)\s*/\s*(\d+)\s*"  # compiled (and cached by re) on first use: the merge never parses one
MAX_SHARDS = 1024


@dataclass(slots=True)  # not frozen (nothing changes or hashes one): frozen costs every merge's start 0.5 ms
class Shard:
    """Shard `index` (1-based) of `count`."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, item_id: str) -> bool:
        return shard_of(item_id, self.count) == self.index


def parse_shard(text: str) -> Shard:
    """`2/4` → Shard(2, 4); ValueError saying what is expected otherwise."""
    match = re.fullmatch(_SHARD, text or "")
    if match is None:
        raise ValueError(f"a shard is I/N, e.g. 2/4 (the second of four), got {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if not 1 <= count <= MAX_SHARDS:
        raise ValueError(f"the shard count N in I/N must be between 1 and {MAX_SHARDS}, got {count}")
    if not 1 <= index <= count:
        raise ValueError(f"the shard index I in I/N counts from 1 to N ({count}), got {index}")
    return Shard(index, count)


def shard_of(item_id: str, count: int) -> int:
    """The 1-based shard an item id belongs to, out of `count`."""
    digest = hashlib.sha256(item_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def select(cases: Iterable[Case], shard: Shard) -> Iterator[Case]:
    """The cases of this shard, with their indices in the whole data set (the merge orders by them)."""
    count, index = shard.count, shard.index
    for case in cases:
        if shard_of(case.id, count) == index:
            yield case


def fingerprints(loaded: LoadedSpec) -> tuple[str, str]:
    """SHA-256 of the spec file's bytes and of the data (the data file's bytes, or the inline items)."""
    spec_hash = hashlib.sha256(loaded.path.read_bytes()).hexdigest()
    data = loaded.spec.data
    digest = hashlib.sha256()
    if isinstance(data, str):
        with (loaded.base_dir / data).open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    else:
        try:
            text = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
        except TypeError:  # keys that do not sort together (YAML's `{1: a, b: c}`): sorted as JSON writes them
            text = json.dumps(plain(data), sort_keys=True, ensure_ascii=False, default=str)
        digest.update(text.encode("utf-8", "surrogatepass"))
    return spec_hash, digest.hexdigest()


def missing_ids(loaded: LoadedSpec) -> bool:
    """True when an item has no `id`: it is sharded by its position (`item-N`), which reordering changes."""
    cases = loaded.cases
    return cases is not None and any(c.item.id is None for c in cases)


def entry_record(entry: Entry, first: tuple[int, int] | None) -> dict[str, Any]:
    """An aggregation entry as the shard's results file lists it; `first`: (item index, position) first seen."""
    return {
        "id": entry.id,
        "kind": entry.kind,
        "threshold": entry.threshold.to_json() if entry.threshold is not None else None,
        "higher_is_better": entry.higher_is_better,
        "turn": entry.turn,
        "first": list(first) if first is not None else None,
        "params_hash": entry.params_hash,
        "judged": entry.judged,
        "not_scorable": entry.not_scorable,
    }


def entry_from_record(record: dict[str, Any]) -> Entry:
    threshold = record.get("threshold")
    typed = ThresholdRange.of(threshold) if threshold is not None else None  # ValueError: not a threshold
    rule = record.get("not_scorable", "leave_out")  # absent: a shard of before the option, Mastra's rule
    if rule not in NOT_SCORABLE_RULES:
        raise ValueError(f"`not_scorable` is neither {' nor '.join(NOT_SCORABLE_RULES)}")
    return Entry(record["id"], record["kind"], typed, bool(record.get("higher_is_better", True)),
                 record.get("turn"), record.get("params_hash"), bool(record.get("judged", False)), rule)


def shard_files(patterns: Iterable[str], base: Path) -> list[Path]:
    """Files matching glob patterns (relative to `base`), sorted, each once."""
    import glob  # the Action's alone: not on every merge's and run's start

    found: dict[Path, None] = {}
    for pattern in patterns:
        # glob.glob, not Path.glob: on Python 3.11 Path.glob raises IndexError for `.` or `/` and
        # AttributeError for `./`; glob.glob matches what it can (an absolute pattern ignores root_dir)
        names = glob.glob(pattern, root_dir=base, recursive=True, include_hidden=True)
        for match in sorted(base / name for name in names):
            if match.is_file():
                found.setdefault(match, None)
    return list(found)
