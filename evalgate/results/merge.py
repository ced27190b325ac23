"""`evalgate merge`: the shards' results files joined into exactly the results of one unsharded run.

Averages are not averaged again: every item's scores are replayed into one Aggregator in data
order (the shards' items carry their index in the whole data set), so the sums, and so every
average, threshold, gate and the verdict, are the very floats one run computes. Items are copied
as their bytes, never encoded again. Refuses, naming the file, shards of another spec or data,
a shard missing or given twice, an item in two shards, an interrupted shard.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import lt
from pathlib import Path
from typing import Any

import orjson

from evalgate.decide.verdict import Aggregator, Entry
from evalgate.errors import display_path
from evalgate.infra.files import MAX_RESULTS_BYTES, UnreadableFile, atomic_writer, refuse_unreadable
from evalgate.infra.redaction import redact_value
from evalgate.results.model import record_problem, shard_entries_fit, summary_problem
from evalgate.results.score_columns import Column, Replay, decode
from evalgate.results.shards import MAX_SHARDS, entry_from_record
from evalgate.results.stream import StreamedResults
from evalgate.results.writer import ErrorTally, EvalResult, dumps_item, json_utf8, new_file, replaceable_file
from evalgate.run.budget import CostTotals, saturated, spend

ITEMS_MARK = b', "items": ['
ITEMS_END = b"]}\n"
# Shards' results up to this size are merged from their columns in memory; bigger ones item by item.
COLUMNS_MAX_BYTES = 256 * 2**20  # held about twice: the files and their lines
WRITE_LINES = 4096
KEEP_ERRORED = 20
SHOWN_MISSING = 10  # shards named in a refusal: N may be up to MAX_SHARDS
MAX_WARNINGS = 50  # a run warns of a handful of things: a longer list is a broken or forged header
NAN = float("nan")
_ABSENT = object()


class MergeError(ValueError):
    """The files cannot be merged into one run; the message names the file and what to do."""


# The merge's own records are plain classes: a dataclass's methods, generated and compiled at import,
# cost every merge's start about 0.4 ms each, and nothing compares or prints these.
class ShardFile:
    """A shard's results file: its header (`head`, its `shard` record) and its items, streamed."""

    __slots__ = ("head", "items", "lines_from", "name", "path", "shard")

    def __init__(self, path: Path, head: dict[str, Any], shard: dict[str, Any],
                 items: Iterator[tuple[int, bytes, dict[str, Any]]], lines_from: int | None = None) -> None:
        self.path = path
        self.head = head
        self.shard = shard
        self.items = items
        self.lines_from = lines_from  # where the items start, in evalgate's layout of one item per line
        self.name = display_path(path)


@dataclass
class ErroredItem:
    """What the report shows of an errored item (the CLI's table, the Action's log)."""

    index: int
    id: str
    input: Any
    error: str | None
    scorer_errors: dict[str, str]
    trials: list[dict[str, Any]] | None = None  # each trial's errors only: which trials errored and why


def trial_errors(trials: Any) -> list[dict[str, Any]] | None:
    """A record's trials as their errors alone (no runs kept in memory), for the reports and summary.top_error."""
    if not isinstance(trials, list):
        return None
    return [{"error": t.get("error"), "scorer_errors": t.get("scorer_errors") or {}} if isinstance(t, dict) else {}
            for t in trials]


def _items_of(path: Path, lines_from: int | None) -> Iterator[tuple[Any, bytes, Any]]:
    """(index, bytes, record) of every item, streamed: one line each as evalgate writes them. The index and
    the record are JSON as the file holds it: the reader checks them."""
    if lines_from is None:  # not evalgate's layout (e.g. reformatted): read by the incremental reader
        for record in StreamedResults(path).items():
            index = record.get("index") if isinstance(record, dict) else None
            yield index, json_utf8(dumps_item(redact_value(record))), record
        return
    with path.open("rb") as handle:
        handle.seek(lines_from)
        for line in handle:
            text = line.rstrip(b"\n")
            if text.endswith(b"]}"):
                text = text[:-2]
            elif text.endswith(b","):
                text = text[:-1]
            if not text:
                continue
            record = _loads(text)
            yield (record.get("index") if isinstance(record, dict) else None), text, record


def _finite(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer past the largest float: no run writes one, no sum could hold it
        return False


class _BadRecord(Exception):
    """An item record whose field is not what a run writes (the field's name, as the message)."""


def _one_item(line: bytes) -> bool:
    """Whether the rest of the header's line is one item (or none), as evalgate writes its results."""
    text = line.rstrip(b"\n")
    text = text[:-2] if text.endswith(b"]}") else text[:-1] if text.endswith(b",") else text
    if not text:
        return True
    try:
        return isinstance(_loads(text), dict)
    except (ValueError, RecursionError):
        return False


def _loads(text: bytes) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN, a lone surrogate's escape: json reads what it wrote
        # strictly UTF-8 (json.loads of bytes lets a surrogate's bytes through): the merge copies an
        # item's bytes, and no run writes bytes that are not UTF-8
        return json.loads(text.decode("utf-8"))


def read_shard(path: Path) -> ShardFile:
    """The header of a shard's results file (items are streamed later); MergeError if it is not one."""
    name = display_path(path)
    try:  # a FIFO would block, a device never end, a file of gigabytes is no shard
        refuse_unreadable(path, limit=MAX_RESULTS_BYTES, what="results file")
    except UnreadableFile as exc:
        raise MergeError(f"{name}: {exc.strerror}") from None
    try:
        with path.open("rb") as handle:
            first = handle.readline()
            size = os.fstat(handle.fileno()).st_size
        mark = first.find(ITEMS_MARK)
        head: Any = None
        lines_from: int | None = None
        if first.startswith(b"{") and mark > 0:
            try:
                head = json.loads(first[:mark] + b"}")
                lines_from = mark + len(ITEMS_MARK)
            except ValueError:
                head = None  # the mark was somewhere else: read the file as a whole below
            if head is not None and not _one_item(first[lines_from:]):
                lines_from = None  # items share the line (a file rewritten on one line): read it whole
        if head is None:
            head = StreamedResults(path).header  # every key but `items`, whatever the layout
    except OSError as exc:
        raise MergeError(f"{name}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, RecursionError) as exc:
        raise MergeError(f"{name}: not an evalgate results file ({str(exc).splitlines()[0]})") from None
    if not isinstance(head, dict) or head.get("schema_version") != 1:
        raise MergeError(f"{name}: not an evalgate results file (no schema_version 1)")
    shard = head.get("shard")
    if not isinstance(shard, dict) or not {"index", "count", "spec_sha256", "data_sha256", "entries"} <= shard.keys():
        raise MergeError(f"{name}: not a shard's results; write each with `evalgate run SPEC --shard I/N --output ...`")
    # every turn is in some item's record, a byte at least: a larger turn_count is forged (and would
    # have the verdict list that many turns)
    if not _well_formed(shard) or shard.get("turn_count", 0) > size:
        raise MergeError(f"{name}: its `shard` record is malformed (edited?); run the shard again")
    if not isinstance(head.get("summary") or {}, dict):
        raise MergeError(f"{name}: its `summary` is not a mapping (edited?); run the shard again")
    wrong = summary_problem(head.get("summary") or {})
    if wrong is not None:
        raise MergeError(f"{name}: its `summary.{wrong}` is not what evalgate writes (edited?); run the shard again")
    if (head.get("summary") or {}).get("interrupted"):
        raise MergeError(f"{name}: shard {shard['index']}/{shard['count']} was interrupted; "
                         "finish it (`evalgate run ... --resume`) before merging")
    return ShardFile(path, head, shard, _items_of(path, lines_from), lines_from=lines_from)


def _well_formed(shard: dict[str, Any]) -> bool:
    def whole(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    return (whole(shard["count"]) and whole(shard["index"]) and 1 <= shard["index"] <= shard["count"] <= MAX_SHARDS
            and isinstance(shard["entries"], list) and whole(shard.get("turn_count", 0))
            and shard_entries_fit(shard["entries"]))


def check_shards(files: list[ShardFile]) -> None:
    """Same spec, same data, same N, every shard once; MergeError naming the files otherwise."""
    if not files:
        raise MergeError("no results files to merge; pass each shard's results file (e.g. shards/*.json)")
    first = files[0]
    for other in files[1:]:
        for key, what in (("spec_sha256", "spec"), ("data_sha256", "data"), ("count", "shard count")):
            if other.shard[key] != first.shard[key]:
                raise MergeError(
                    f"{other.name}: from another {what} than {first.name} ({key} {str(other.shard[key])[:12]} vs "
                    f"{str(first.shard[key])[:12]}); merge only the shards of one run"
                )
    top = _top_entries(first)
    for other in files[1:]:  # one spec, one list: the merge takes the first shard's (an edit would go unseen)
        if _top_entries(other) != top:
            raise MergeError(f"{other.name}: its gates and scorers (`shard.entries`) are not those of {first.name}, "
                             "although both are of one spec (edited?); run the shards again")
    repeats = _repeats(first)
    for other in files[1:]:
        if _repeats(other) != repeats:  # `--repeats` on one job's command line and not another's
            raise MergeError(f"{other.name}: ran {_repeats(other) or 'no'} repeats, {first.name} "
                             f"{repeats or 'none'}; merge only the shards of one run")
    count = first.shard["count"]
    seen: dict[int, ShardFile] = {}
    for file in files:
        index = file.shard["index"]
        if index in seen:
            raise MergeError(f"{file.name}: shard {index}/{count} again (also {seen[index].name}); "
                             "pass each shard's results once")
        seen[index] = file
    missing = [i for i in range(1, count + 1) if i not in seen]  # count <= MAX_SHARDS (_well_formed)
    if missing:
        named = ", ".join(f"{i}/{count}" for i in missing[:SHOWN_MISSING])
        more = f" and {len(missing) - SHOWN_MISSING} more" if len(missing) > SHOWN_MISSING else ""
        raise MergeError(f"shard {named}{more} missing: got "
                         + ", ".join(f"{f.name} ({f.shard['index']}/{count})" for f in files[:SHOWN_MISSING])
                         + (f" and {len(files) - SHOWN_MISSING} more files" if len(files) > SHOWN_MISSING else ""))


def _top_entries(file: ShardFile) -> list[dict[str, Any]]:
    """The spec's gates and scorers as the shard recorded them (per-turn entries differ from shard to shard, and
    so does what the shard's items said when not scorable)."""
    return [{k: v for k, v in record.items() if k != "not_scorable_why"}
            for record in file.shard["entries"] if record.get("first") is None]


def _repeats(file: ShardFile) -> Any:
    return (file.head.get("summary") or {}).get("repeats")


def _aggregator(files: list[ShardFile], clustered: bool = False) -> tuple[Aggregator, dict[tuple[Any, ...], Entry]]:
    """Top-level entries in spec order, then per-turn entries where the whole data set first saw them."""
    top = [entry_from_record(e) for e in files[0].shard["entries"] if e.get("first") is None]
    turn_entries: dict[tuple[Any, ...], tuple[tuple[int, int], Entry]] = {}
    for file in files:
        for record in file.shard["entries"]:
            if record.get("first") is None:
                continue
            entry = entry_from_record(record)
            first = tuple(record["first"])
            known = turn_entries.get(entry.key)
            if known is not None and known[1].threshold != entry.threshold:
                # a shard checks only its own items: the run would have refused the spec (`evalgate validate`)
                raise MergeError(f"{file.name}: `{entry.id}` at turn {entry.turn} has another threshold than in "
                                 f"an earlier shard ({known[1].threshold!r} vs {entry.threshold!r}); entries sharing "
                                 "an id at a turn share a threshold: fix the data (`evalgate validate` says where)")
            if known is not None and known[1].not_scorable != entry.not_scorable:
                raise MergeError(f"{file.name}: `{entry.id}` at turn {entry.turn} has another `not_scorable` than in "
                                 f"an earlier shard ({known[1].not_scorable} vs {entry.not_scorable}); entries sharing "
                                 "an id at a turn share it: fix the data (`evalgate validate` says where)")
            if known is None or first < known[0]:
                turn_entries[entry.key] = (first, entry)
    aggregator = Aggregator(top, clustered=clustered)
    for _, entry in sorted(turn_entries.values(), key=lambda pair: pair[0]):
        aggregator.declare(entry)
    aggregator.turn_count = max(int(f.shard.get("turn_count") or 0) for f in files)
    _not_scorable_reasons(files, aggregator)
    return aggregator, {key: aggregator.entries[key] for key in aggregator.entries}


def _not_scorable_reasons(files: list[ShardFile], aggregator: Aggregator) -> None:
    """Each entry's first not scorable reason over the shards (lowest item index), as one run keeps it."""
    found = []
    for file in files:
        for record in file.shard["entries"]:
            why = record.get("not_scorable_why")
            if isinstance(why, list) and len(why) == 2 and isinstance(why[0], int) and isinstance(why[1], str):
                found.append((why[0], (record.get("turn"), record.get("kind"), record.get("id")), why[1]))
    for _, key, reason in sorted(found, key=lambda row: row[0]):
        aggregator.add_not_scorable_reason(key, reason)


def _causes(record: dict[str, Any], aggregator: Aggregator, entries: dict[Any, Entry]) -> None:
    """Why an item (each trial of it) gave no score, counted as the run counted it (`Aggregator.add_causes`)."""
    trials = record.get("trials")
    for part in trials if isinstance(trials, list) else (record,):
        if not isinstance(part, dict):
            continue
        errors = part.get("scorer_errors")
        aggregator.add_causes(part.get("error") is not None, errors if isinstance(errors, dict) else {}, {},
                              lambda turn, key: entries.get((turn, "scorer", key)))


def _number(value: Any) -> float:
    return NAN if value is None else float(value)


def _replay(record: dict[str, Any], aggregator: Aggregator, top: tuple[list[Entry], list[Entry]],
            entries: dict[Any, Entry]) -> None:
    """One item's contributions, as the engine gave them (see resume.contributions); with repeats,
    each trial's in trial order, as the run fed them to the aggregator."""
    trials = record.get("trials")
    if isinstance(trials, list):
        for trial, recorded in enumerate(trials):
            _replay_one(recorded, aggregator, top, entries, trial)
        return
    _replay_one(record, aggregator, top, entries, 0)


def _replay_one(record: dict[str, Any], aggregator: Aggregator, top: tuple[list[Entry], list[Entry]],
                entries: dict[Any, Entry], trial: int) -> None:
    if record.get("error") is not None:
        return
    gates = record.get("gates") or {}
    scores = record.get("scores") or {}
    errors = record.get("scorer_errors") or {}
    if trial:
        def add(entry: Entry, score: float | None) -> None:
            aggregator.add(entry, score, trial)
    else:
        add = aggregator.add
    top_gates, top_scorers = top
    for entry in top_gates:  # a gate always contributes: absent means not scorable
        value = gates.get(entry.id, _ABSENT)
        add(entry, None if value is _ABSENT else value if value.__class__ is float else _number(value))
    for entry in top_scorers:  # a scorer: its score, nothing when it errored, else not scorable
        value = scores.get(entry.id, _ABSENT)
        if value is not _ABSENT:
            add(entry, value if value.__class__ is float else _number(value))
        elif entry.id not in errors:
            add(entry, None)
    turns = record.get("turns") or []
    for index, turn in enumerate(turns):
        for key, value in (turn.get("gates") or {}).items():
            add(entries[(index, "gate", key)], _number(value))
        for key, value in (turn.get("scores") or {}).items():
            add(entries[(index, "scorer", key)], _number(value))
        kinds = turn.get("not_scorable")  # by kind, as runs record it since a gate and a scorer may share an id
        if kinds is not None:
            for key in kinds.get("gates") or ():
                add(entries[(index, "gate", key)], None)
            for key in kinds.get("scores") or ():
                add(entries[(index, "scorer", key)], None)
    for label in record.get("not_scorable") or {}:  # older records: only the labels, the kind guessed
        if not label.startswith("turn-"):
            continue
        turn_text, _, key = label[5:].partition(":")
        if not turn_text.isdigit() or int(turn_text) >= len(turns):
            continue
        index = int(turn_text)
        turn = turns[index]
        if "not_scorable" in turn:
            continue  # counted above
        gate = entries.get((index, "gate", key))
        scorer = entries.get((index, "scorer", key))
        if gate is not None and (scorer is None or key in (turn.get("scores") or {}) or label in errors):
            add(gate, None)  # the scorer of that id scored or errored: the gate was not scorable
        elif scorer is not None:
            add(scorer, None)


def _errored(record: dict[str, Any]) -> bool:
    trials = record.get("trials")
    if isinstance(trials, list):  # with repeats: errored when any trial errored, as the run counts it
        return any(_errored(t) for t in trials if isinstance(t, dict))
    return record.get("error") is not None or bool(record.get("scorer_errors"))


def _sum_counters(values: list[Any]) -> Any:
    """Numbers added, mappings merged key by key; anything else: the first."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        total = present[0]
        for value in present[1:]:  # left to right: Python 3.12's `sum()` compensates floats
            total += value
        return total
    if all(isinstance(v, dict) for v in present):
        keys = dict.fromkeys(k for v in present for k in v)
        return {k: _sum_counters([v.get(k) for v in present]) for k in keys}
    return present[0]


def _summary_extras(files: list[ShardFile], judge_usd: float = 0.0, budget_usd: float = 0.0) -> dict[str, Any]:
    """The summary's figures beyond the outcome; `judge_usd`: the items' judge spend added in data order;
    `budget_usd`: the items' spend as the budget counts it, added in data order."""
    summaries = [f.head.get("summary") or {} for f in files]
    extras: dict[str, Any] = {
        "duration_s": round(max(float(s.get("duration_s") or 0.0) for s in summaries), 3),
        "interrupted": False,
    }
    for key in ("network", "resumed_items", "budget", "trials", "errored_trials"):
        values = [s.get(key) for s in summaries if key in s]
        if values:
            extras[key] = _sum_counters(values)
    warnings = _warnings(files)
    if warnings:
        extras["warnings"] = warnings
    repeats = [s["repeats"] for s in summaries if "repeats" in s]
    if repeats:
        extras["repeats"] = repeats[0]
    budgets: list[dict[str, Any]] = [b for s in summaries if isinstance(b := s.get("budget"), dict)]
    if isinstance(extras.get("budget"), dict):  # each shard ran a share: the run's caps are the merged run's
        merged = extras["budget"]
        merged.pop("share", None)
        # every item was counted by a budget: added up as one run does, not the shards' rounded figures (each
        # off by up to 5e-9)
        if len(budgets) == len(summaries):
            merged["spent_usd"] = round(saturated(budget_usd), 8)
        elif isinstance(merged.get("spent_usd"), float):  # the shards' figures, whose sum may pass the largest float
            merged["spent_usd"] = saturated(merged["spent_usd"])
        for key in ("max_usd", "max_tokens"):
            caps = {b.get(f"run_{key}") for b in budgets}
            merged.pop(f"run_{key}", None)
            if len(caps) == 1 and f"run_{key}" in budgets[0]:
                merged[key] = caps.pop()
    network = extras.get("network")
    if isinstance(network, dict):  # limits are no counters: the lowest any shard fell to, else the highest
        for key in [k for k in network if k.endswith("_limit")]:
            limits = [s["network"][key] for s in summaries
                      if isinstance(s.get("network"), dict) and _finite(s["network"].get(key))]
            if limits:
                network[key] = min(limits) if key.startswith("lowest") else max(limits)
    judges = [s["judge"] for s in summaries if isinstance(s.get("judge"), dict)]
    if judges:
        judge = _sum_counters(judges)
        judge["model"] = ", ".join(dict.fromkeys(m for j in judges for m in str(j.get("model", "")).split(", ") if m))
        prompts: dict[str, Any] = {}
        for j in judges:
            prompts.update(j.get("prompts") or {})
        judge["prompts"] = dict(sorted(prompts.items()))
        costs = [j.get("cost_usd") for j in judges]
        if any(c is None for c in costs):
            judge["cost_usd"] = None
        elif any(s.get("resumed_items") for s in summaries):  # its figure leaves out its journaled items
            judge["cost_usd"] = round(saturated(sum(costs)), 8)
        else:  # as the run adds it up, not the shards' rounded figures (each off by up to 5e-9)
            judge["cost_usd"] = round(saturated(judge_usd), 8)
        extras["judge"] = judge
    return extras


def _warnings(files: list[ShardFile]) -> list[str]:
    """The shards' run warnings, each once, in shard order, saying which shards gave it (a count in a
    warning is each such shard's own, not the run's): `shard 2 of 4: ...`, `all 4 shards: ...`."""
    shards_of: dict[str, list[int]] = {}
    for file in files:
        summary = file.head.get("summary")
        found = summary.get("warnings") if isinstance(summary, dict) else None
        for warning in found if isinstance(found, list) else ():
            if isinstance(warning, str):
                shards = shards_of.setdefault(warning, [])
                if file.shard["index"] not in shards:
                    shards.append(file.shard["index"])
    count = files[0].shard["count"]
    out = []
    for warning, shards in shards_of.items():
        if count == 1:
            out.append(warning)
        elif len(shards) == count:
            out.append(f"all {count} shards: {warning}")
        else:
            which = ", ".join(map(str, shards))
            out.append(f"shard{'s' if len(shards) > 1 else ''} {which} of {count}: {warning}")
    return out[:MAX_WARNINGS]


class _Spend:
    """Costs and errored items, taken from item records in data order as one run takes them."""

    def __init__(self, result: EvalResult) -> None:
        self.result = result
        self.costs = CostTotals()
        self.judge_usd = 0.0  # summary.judge.cost_usd: every judge cost added in data order, as the run does
        # summary.budget.spent_usd, as the budget counts (amounts above 0 only): the targets' and the
        # judges' spend, each added in data order, as one run adds its items that finish in data order
        self.budget_target_usd = 0.0
        self.budget_judge_usd = 0.0
        self.errors = ErrorTally()  # summary.top_error, counted in data order as one run counts it
        self.errored = 0

    def take(self, index: int, item_id: str, record: dict[str, Any]) -> bool:
        """Count the item's spend and, when it errored, show it; True when it errored.
        _BadRecord (before anything is counted) when a field is not what a run writes (the results model's)."""
        wrong = record_problem(record)
        if wrong is not None:
            raise _BadRecord(wrong)
        trials = record.get("trials")
        for part in trials if isinstance(trials, list) else (record,):  # with repeats: every trial's spend
            judge_cost = part.get("judge_cost_usd")
            run_cost = (part.get("run" if part is not record else "output") or {}).get("cost_usd")
            if judge_cost or run_cost is not None:
                self.costs.add(run_cost, judge_cost if isinstance(judge_cost, dict) else {})
                self.budget_target_usd += spend(run_cost)
            if judge_cost and isinstance(judge_cost, dict):
                for usd in judge_cost.values():
                    if _finite(usd):
                        self.judge_usd += usd
                    self.budget_judge_usd += spend(usd)
        errored = _errored(record)
        if errored:
            self.errored += 1
            shown = ErroredItem(index, item_id, record.get("input"), record.get("error"),
                                dict(record.get("scorer_errors") or {}), trial_errors(record.get("trials")))
            self.errors.add(shown)
            if len(self.result.errored) < KEEP_ERRORED:
                self.result.errored.append(shown)
        return errored


def merge(paths: Sequence[str | Path], output: str | Path | None = None, *, read_items: bool = False) -> EvalResult:
    """Join shards' results files into the results of one unsharded run; write them to `output`.

    Returns an EvalResult (verdict, gates, thresholds, turns, scores, errored items) like `run_spec`.
    MergeError, naming the file, when they are not the complete shards of one run; WriterBusy (an OSError)
    while another process writes `output`.
    read_items: check every item, not only those the shards' columns point at (slower): names the file
    and item that a shard edited with its digests forged would otherwise pass into the merged results.
    """
    if output is None:
        return _merge(paths, None, read_items)
    from evalgate.results.lock import writing

    replaceable_file(Path(output))  # before any work: the merged file is renamed over it
    _not_a_shard(Path(output), paths)
    with writing(Path(output)):  # a run, or another merge, writing it too: WriterBusy
        return _merge(paths, output, read_items)


def _merge(paths: Sequence[str | Path], output: str | Path | None, read_items: bool) -> EvalResult:
    files = [read_shard(Path(p)) for p in paths]
    check_shards(files)
    files.sort(key=lambda f: f.shard["index"])
    clustered = "repeats" in (files[0].head.get("summary") or {})
    aggregator, entries = _aggregator(files, clustered)
    max_errors = int((files[0].head.get("summary") or {}).get("max_errors") or 0)
    result = EvalResult(name=str(files[0].head.get("name", "")), outcome=aggregator.outcome(max_errors),
                        created_at=files[0].head.get("created_at"), git_sha=files[0].head.get("git_sha"),
                        compare_settings=files[0].head.get("compare_settings"))
    result.results_path = Path(output) if output is not None else None
    spend = _Spend(result)
    columns = None if clustered or read_items else _columns(files)
    if columns is not None:  # every shard recorded its scores as columns: add those, read few items
        try:
            lines = _add_columns(columns, aggregator, spend)
        except _ReadItems:
            aggregator, entries = _aggregator(files, clustered)
            spend = _Spend(result)
            result.errored.clear()
        else:
            _finish(result, files, aggregator, spend, max_errors)
            if output is not None:
                _write_whole(Path(output), result.header(), lines)
            return result
    tmp = _add_items(files, aggregator, entries, spend, output)
    _finish(result, files, aggregator, spend, max_errors)
    if output is not None and tmp is not None:
        opening = json_utf8(json.dumps(redact_value(result.header()), ensure_ascii=False)[:-1]) + b', "items": '
        _prepend(tmp, opening, Path(output))
    return result


def _not_a_shard(output: Path, paths: Sequence[str | Path]) -> None:
    """MergeError when the output is one of the shards: merging again would need the file it replaced."""
    with contextlib.suppress(OSError):
        target = output.resolve()
        scratch = target.with_name(target.name + ".tmp")  # where the merge writes before renaming
        lock = target.with_name(target.name + ".lock")  # removed once the merge is written
        for path in paths:
            if Path(path).resolve() in (target, scratch, lock):
                raise MergeError(f"{display_path(Path(path))}: --output would replace this shard's results; "
                                 "write the merged results to another file")


def _finish(result: EvalResult, files: list[ShardFile], aggregator: Aggregator, spend: _Spend,
            max_errors: int) -> None:
    result.outcome = aggregator.outcome(max_errors)
    result.extra_summary.update(_summary_extras(files, spend.judge_usd,
                                                spend.budget_target_usd + spend.budget_judge_usd))
    top_error = spend.errors.top()
    if top_error is not None:
        result.extra_summary["top_error"] = top_error
    if spend.costs.items:
        result.extra_summary["cost"] = spend.costs.summary()
    result.duration_s = result.extra_summary.pop("duration_s")
    first = files[0].shard
    result.extra["merged"] = {"shards": first["count"], "spec_sha256": first["spec_sha256"],
                              "data_sha256": first["data_sha256"]}


def _add_items(files: list[ShardFile], aggregator: Aggregator, entries: dict[Any, Entry], spend: _Spend,
               output: str | Path | None) -> Path | None:
    """Every item read and replayed, in data order; its line copied to a temporary items array."""
    top_entries = [e for e in aggregator.entries.values() if e.turn is None]
    top = ([e for e in top_entries if e.kind == "gate"], [e for e in top_entries if e.kind != "gate"])
    stream = heapq.merge(*(_tagged(n, f) for n, f in enumerate(files)), key=lambda row: row[0])
    out = tmp = None
    if output is not None:
        target = Path(output)
        tmp = target.with_name(target.name + ".tmp")
        out = new_file(tmp)
        out.write(b"[")  # the items array; the header goes in front once the outcome is known
    order = _DataOrder()
    per_file = [0] * len(files)
    try:
        for count, (index, n, text, record) in enumerate(stream):
            per_file[n] += 1
            name = files[n].name
            item_id = str(record.get("id"))
            order.check(name, item_id, index, record)
            try:
                _replay(record, aggregator, top, entries)
                _causes(record, aggregator, entries)
            except (AttributeError, TypeError, KeyError, ValueError, OverflowError):  # a 400-digit score overflows
                raise MergeError(f"{name}: item {item_id!r} does not fit the shards' entries (edited, or another "
                                 "evalgate version?); run the shard again") from None
            try:
                errored = spend.take(index, item_id, record)
            except _BadRecord as bad:
                raise MergeError(f"{name}: item {item_id!r} has a `{bad}` that is not what evalgate writes (edited, "
                                 "or another evalgate version?); run the shard again") from None
            trials = record.get("trials")
            aggregator.add_item(errored, 0, item_id, len(trials) if isinstance(trials, list) else None)
            if out is not None:
                if count:
                    out.write(b",\n")
                out.write(text)
        _check_counts(files, per_file)
        if out is not None:
            out.write(b"]}\n")
            out.close()
    except BaseException:
        if out is not None and tmp is not None:
            out.close()
            tmp.unlink(missing_ok=True)
        raise
    return tmp


class _DataOrder:
    """The items as the merge meets them: each one once, in data order, else a MergeError naming the file."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}  # item id -> the file it came from
        self.previous = -1
        self.previous_name = ""

    def check(self, name: str, item_id: str, index: int, record: dict[str, Any]) -> None:
        if index < 0:
            raise MergeError(f"{name}: item {item_id!r} has index {record.get('index')!r}, not a data index")
        if index == self.previous or item_id in self.ids:
            raise MergeError(f"{name}: item {item_id!r} is also in {self.ids.get(item_id, self.previous_name)}; "
                             "each item belongs to one shard: merge the shards of one run")
        if index < self.previous:
            raise MergeError(f"{name}: item {item_id!r} (index {index}) is out of data order")
        self.ids[item_id] = name
        self.previous_name = name
        self.previous = index


def _check_counts(files: list[ShardFile], per_file: list[int]) -> None:
    """Each shard holds as many items as its summary counts: one removed (or added) since its run is refused."""
    for file, read in zip(files, per_file, strict=True):
        said = (file.head.get("summary") or {}).get("total_items")
        if isinstance(said, int) and said != read:
            raise MergeError(f"{file.name}: holds {read} items where its summary counts {said} (edited, or "
                             "cut short?); run the shard again")


class _Columns:
    """A shard's replay and its item lines (one per item, in the replay's order)."""

    __slots__ = ("keys", "lines", "replay")

    def __init__(self, replay: Replay, lines: list[bytes], keys: list[tuple[Any, ...]]) -> None:
        self.replay = replay
        self.lines = lines
        self.keys = keys  # the entry of each of the replay's columns


def _columns(files: list[ShardFile]) -> list[_Columns] | None:
    """Every shard's replay with its item lines; None when one has no replay, its lines do not match
    it, or the shards are too big to hold at once: the items are then read one by one."""
    if any(f.lines_from is None or not isinstance(f.shard.get("replay"), dict) for f in files):
        return None
    try:
        if sum(f.path.stat().st_size for f in files) > COLUMNS_MAX_BYTES:
            return None
    except OSError:
        return None
    out = []
    for file in files:
        replay = decode(file.shard["replay"], len(file.shard["entries"]))
        said = (file.head.get("summary") or {}).get("total_items")
        if replay is None or (isinstance(said, int) and said != len(replay.ids)):
            return None  # reading item by item names a summary that counts other items
        if file.lines_from is None:
            return None
        try:
            with file.path.open("rb") as handle:
                handle.seek(file.lines_from)
                data = handle.read()  # from the first item on: the header was read already
        except OSError:
            return None  # reading it item by item names the problem
        end = len(data) - len(ITEMS_END)
        if end < 0 or not data.endswith(ITEMS_END):
            return None
        with memoryview(data) as view:
            digest = hashlib.sha256(view[:end]).hexdigest()
        if digest != replay.items_sha256:  # the items changed since the run
            return None
        lines = _item_lines(data, 0, end) if end else []
        del data
        if lines is None or len(lines) != len(replay.ids) or not _lines_match(lines, replay.index):
            return None
        keys = [entry_from_record(record).key for record in file.shard["entries"]]
        out.append(_Columns(replay, lines, keys))
    return out


def _item_lines(data: bytes, start: int, end: int) -> list[bytes] | None:
    """The item lines between `start` and `end`, each but the last ending in `,` (left out); None when
    one does not. Found newline by newline: a find of one byte is a memchr, where `split(b",\\n")` stops
    at every comma in the JSON and takes twice as long."""
    lines = []
    find = data.find
    at = start
    newline = find(b"\n", at, end)
    while newline >= 0:
        if data[newline - 1] != 44:  # b","
            return None
        lines.append(data[at:newline - 1])
        at = newline + 1
        newline = find(b"\n", at, end)
    lines.append(data[at:end])
    return lines


def _lines_match(lines: list[bytes], index: Sequence[int]) -> bool:
    """Each line is the item of that data index, as orjson (or json, its fallback) wrote it."""
    matched = list(map(bytes.startswith, lines, [b'{"index":%d,' % i for i in index]))
    if all(matched):
        return True
    return all(ok or line.startswith(b'{"index": %d,' % i) for ok, line, i in zip(matched, lines, index, strict=True))


def _add_columns(columns: list[_Columns], aggregator: Aggregator, spend: _Spend) -> list[bytes]:
    """The shards' columns added in data order; their errored and costly items read. The item lines
    in data order. A problem (an item twice, out of order) is left to the item-by-item reading,
    which names it: this raises _ReadItems."""
    positions: list[int] = []  # data index of each item, shard after shard
    ids: list[str] = []
    starts = []
    for part in columns:
        part_index = part.replay.index.tolist()  # ints made once: comparing the array makes them pair by pair
        if part_index and (part_index[0] < 0 or not all(map(lt, part_index, part_index[1:]))):
            raise _ReadItems
        starts.append(len(positions))
        positions.extend(part_index)
        ids.extend(part.replay.ids)
    total = len(positions)
    if len(set(positions)) != total or len(set(ids)) != total:
        raise _ReadItems
    order = sorted(range(total), key=positions.__getitem__)  # a few ascending runs: Timsort merges them
    by_key: dict[Any, list[tuple[int, Column]]] = {}
    for n, part in enumerate(columns):
        for key, column in zip(part.keys, part.replay.columns, strict=True):
            by_key.setdefault(key, []).append((n, column))
    for key, entry in aggregator.entries.items():
        found = by_key.get(key, [])
        skipped = sum(column.not_scorable for _, column in found)
        if len(found) == len(columns) and all(column.at is None for _, column in found):
            # every item scored it: the items' order is its order (lists: indexing an array makes a float)
            every: list[float] = []
            for _, column in found:
                every += column.scores.tolist()
            scores = [every[k] for k in order]
        else:
            keys: list[int] = []
            values: list[float] = []
            for n, column in found:
                shard_index = columns[n].replay.index
                keys.extend(shard_index if column.at is None else [shard_index[p] for p in column.at])
                values += column.scores.tolist()
            scores = [values[j] for j in sorted(range(len(keys)), key=keys.__getitem__)]
        aggregator.add_column(entry, scores, skipped)
    flagged = sorted((positions[starts[n] + p], n, p) for n, part in enumerate(columns) for p in part.replay.records)
    for index, n, p in flagged:
        try:
            record = _loads(columns[n].lines[p])
        except (ValueError, RecursionError):
            raise _ReadItems from None  # reading item by item names the file and the item
        if not isinstance(record, dict):
            raise _ReadItems
        try:
            spend.take(index, ids[starts[n] + p], record)
            _causes(record, aggregator, dict(aggregator.entries))
        except _BadRecord:
            raise _ReadItems from None  # reading item by item names the file and the item
    aggregator.add_items(total, spend.errored)
    lines = [line for part in columns for line in part.lines]
    return [lines[k] for k in order]


class _ReadItems(Exception):
    """The columns cannot be trusted as they are: read every item instead."""


def _write_whole(target: Path, head: dict[str, Any], lines: list[bytes]) -> None:
    """The results file at once: the header, then the item lines as the items array."""
    with atomic_writer(target) as out:
        out.write(json_utf8(json.dumps(redact_value(head), ensure_ascii=False)[:-1]) + b', "items": [')
        for start in range(0, len(lines), WRITE_LINES):
            if start:
                out.write(b",\n")
            out.write(b",\n".join(lines[start:start + WRITE_LINES]))
        out.write(ITEMS_END)


def _tagged(n: int, file: ShardFile) -> Iterator[tuple[int, int, bytes, dict[str, Any]]]:
    """The file's items tagged with its position; an index that is not a number sorts first and is refused."""
    try:
        for index, text, record in file.items:
            if not isinstance(record, dict):
                raise MergeError(f"{file.name}: an item is not a JSON object; was the file edited?")
            yield (index if isinstance(index, int) and not isinstance(index, bool) else -1), n, text, record
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, MergeError):
            raise
        raise MergeError(f"{file.name}: an item is not JSON ({str(exc).splitlines()[0]}); "
                         "was the file cut short?") from None


def _prepend(tmp: Path, opening: bytes, target: Path) -> None:
    """The results file: the header, then the items array written to `tmp` (which starts with `[`)."""
    try:
        with tmp.open("rb") as body, atomic_writer(target, scratch=target.name + ".tmp2") as out:
            out.write(opening)
            for block in iter(lambda: body.read(1 << 20), b""):
                out.write(block)
    finally:  # interrupted or not, no temporary file is left beside the results
        tmp.unlink(missing_ok=True)
