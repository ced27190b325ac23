"""The results JSON (docs/results.md): pydantic models of a results file, the one definition of its records.

The report, JUnit, `compare` and the Action read results files through these. `Results` is a
`verdict.Decision`, as a run's (and a merge's) `Outcome` is: the writer writes those fields, the reader
reads them. The merge holds every item record it adds up, every shard entry and summary to the models
here (`record_problem`, `shard_entries_fit`, `summary_problem`), strictly: what it accepts reads back.
The gate, threshold and turn results are evalgate.decide.verdict's dataclasses, validated as fields here.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Generic, Literal, Required, TypeVar

from pydantic import (
    AfterValidator,
    AllowInfNan,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    Strict,
    StrictBool,
    StrictInt,
    TypeAdapter,
    ValidationError,
)
from typing_extensions import TypedDict  # pydantic reads typing's TypedDict only from Python 3.12

from evalgate.decide.verdict import (
    Decision,
    NotScorableRule,
    Outcome,
    ThresholdRange,
)
from evalgate.infra.files import MAX_RESULTS_BYTES, refuse_unreadable
from evalgate.results.stream import StreamedResults
from evalgate.results.writer import SCHEMA_VERSION


class Summary(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)  # built when results are read

    total_items: int
    errored_items: int
    not_scorable: dict[str, int] = Field(default_factory=dict)
    # gates and thresholds whose every result was not scorable (left out of the verdict, as Mastra): why
    not_scored: list[dict[str, Any]] = Field(default_factory=list)  # [{id, kind, turn, reason}]
    max_errors: int = 0
    error_budget_exceeded: bool = False
    failure_reason: str | None = None  # "errors" (too many errored items) or "gates"; null unless failed
    top_error: dict[str, Any] | None = None  # the most common item error: {"message", "items"}
    duration_s: float | None = None


# An item's fields as a run writes them, strictly: a flag or a numeral is no score, a number no message. The
# merge checks every record it adds up against these (`record_problem`), so what it accepts reads back; a
# `--resume` checks every journal record against them (`journal_record_fits`) before it takes its scores.
Text = Annotated[str, Strict()]
Score = Annotated[float, Strict()] | None  # null: NaN (strict JSON has none)
Fraction = Annotated[float, Strict(), Field(ge=0, le=1)] | None  # a score as a run writes it: in [0, 1], or null
Amount = Annotated[float, Strict(), AllowInfNan(False)]  # money added up: finite
Number = Annotated[float, Strict()]  # a float, or an integer a float holds (a 400-digit one overflows every sum)
Scores = dict[str, Score]
Messages = dict[str, Text]
ByKind = Literal["gates", "scores"]
ScoreT = TypeVar("ScoreT")  # how strictly a record's scores are read: `Score` (a merge) or `Fraction` (a resume)


def _cost_is_a_number(run: dict[str, Any] | None) -> dict[str, Any] | None:
    """A run's `cost_usd`: a number or null (the merge adds it up)."""
    if run is not None and not (run.get("cost_usd") is None or isinstance(run["cost_usd"], int | float)):
        raise ValueError("its cost_usd is no number")
    return run


RunRecord = Annotated[dict[str, Any], AfterValidator(_cost_is_a_number)]


class TurnRecord(TypedDict, Generic[ScoreT], total=False):
    """One of an item's `turns`: its scores (or null) by id, reasons as text, `not_scorable` as ids by kind."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    gates: dict[str, ScoreT] | None
    scores: dict[str, ScoreT] | None
    reasons: Messages | None
    not_scorable: dict[ByKind, list[Text]] | None
    reasons_by_kind: dict[ByKind, Messages] | None  # a gate and a scorer of one id: each one's reason


class ScoredParts(TypedDict, Generic[ScoreT], total=False):
    """What an item and each of its trials hold alike: the error, the results by id, the turns."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    error: Text | None
    gates: dict[str, ScoreT] | None
    scores: dict[str, ScoreT] | None
    reasons: Messages | None
    not_scorable: Messages | None
    scorer_errors: Messages | None
    reasons_by_kind: dict[ByKind, Messages] | None
    turns: list[TurnRecord[ScoreT]] | None
    judge_cost_usd: dict[str, Amount] | None  # a run's are finite (held at the largest float), never null


class TrialRecord(ScoredParts[ScoreT], total=False):
    """One of an item's `trials` (with repeats): {trial, run, gates, scores, error, duration_ms, ...}."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    run: RunRecord | None


class ItemRecord(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)  # built when results are read

    id: Text
    index: StrictInt | None = None
    input: Any = None
    output: RunRecord | None = None
    error: Text | None = None
    gates: Scores = Field(default_factory=dict)
    scores: Scores = Field(default_factory=dict)
    reasons: Messages = Field(default_factory=dict)
    not_scorable: Messages = Field(default_factory=dict)
    scorer_errors: Messages = Field(default_factory=dict)
    # a gate and a scorer of one id share their `reasons` key: each one's reason, {"gates": {...}, "scores": {...}}
    reasons_by_kind: dict[ByKind, Messages] | None = None
    # read as they come (a fork's results file may hold anything in a turn: the reports read each field
    # warily); a merge, which adds them up, holds them to TurnRecord and TrialRecord (`record_problem`)
    turns: list[dict[str, Any]] | None = None
    trials: list[dict[str, Any]] | None = None  # with repeats: {trial, run, gates, scores, error, duration_ms}
    data_hash: Text | None = None
    judge_cost_usd: dict[str, Amount] | None = Field(default=None, exclude_if=lambda costs: costs is None)


class AddedUp(TypedDict, total=False):
    """The parts of an item record that a merge adds up beyond ItemRecord's: its turns and trials as written."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    turns: list[TurnRecord[Score]] | None
    trials: list[TrialRecord[Score]] | None


class JournalParts(ScoredParts[ScoreT], total=False):
    """What a journal record (`<output>.items.jsonl`) and each of its trials hold, as `--resume` takes them back:
    its scores within [0, 1], its time a number, its per-turn parameters' digests text. Its output and run it
    reads warily when it rebuilds them, so they may hold anything here."""

    duration_ms: Number | None
    turn_params_hash: Messages | None


class JournalTrial(JournalParts[ScoreT], total=False):
    """One of a journal record's `trials`: a trial has none of its own (a list, if an edit put one there)."""

    trials: list[Any] | None


class JournalRecord(JournalParts[ScoreT], total=False):
    """A journal record `--resume` may take as the item's result; one that is not (edited?) is run again."""

    trials: list[JournalTrial[ScoreT]] | None


def journal_record_fits(record: Any) -> bool:
    """Whether a journal record holds what a run writes, type for type (JournalRecord)."""
    try:
        _journal_record().validate_python(record)
    except ValidationError:
        return False
    return True


@cache
def _journal_record() -> TypeAdapter[JournalRecord[Fraction]]:
    return TypeAdapter(JournalRecord[Fraction])


def record_problem(record: dict[str, Any]) -> str | None:
    """The first field of an item record that is not what a run writes there (its name); None if all are."""
    try:
        ItemRecord.model_validate(record)
        if "turns" in record or "trials" in record:
            _added_up().validate_python(record)
    except ValidationError as exc:
        where = exc.errors()[0]["loc"]
        return str(where[0]) if where else "record"
    return None


@cache
def _added_up() -> TypeAdapter[AddedUp]:
    return TypeAdapter(AddedUp)


def _finite_bounds(threshold: ThresholdRange) -> ThresholdRange:
    for bound in (threshold.min, threshold.max):
        try:
            if bound is not None and not math.isfinite(bound):
                raise ValueError("its bounds are not finite")
        except OverflowError:  # an integer past the largest float
            raise ValueError("its bounds are not finite") from None
    return threshold


class ShardEntry(TypedDict, total=False):
    """One of a shard's `shard.entries`: a gate or scorer as the run recorded it, its threshold a finite range."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    id: Required[Text]
    kind: Required[Literal["gate", "scorer"]]
    turn: StrictInt | None
    threshold: Annotated[ThresholdRange, AfterValidator(_finite_bounds)] | None
    params_hash: Text | None
    first: tuple[StrictInt, StrictInt] | None  # per-turn entries: (item, turn) where the data set first saw it
    not_scorable: NotScorableRule  # absent in a shard written before the option: leave_out


@cache
def _shard_entries() -> TypeAdapter[list[ShardEntry]]:
    return TypeAdapter(list[ShardEntry])  # built when first asked for: a command reading results needs it not


def shard_entries_fit(entries: Any) -> bool:
    """Whether `shard.entries` is a list of ShardEntry records."""
    try:
        _shard_entries().validate_python(entries)
    except ValidationError:
        return False
    return True


# A summary's counters as a run writes them: numbers (finite), flags or null, in mappings at most three deep
Counter = StrictBool | Amount | None
Counters = dict[str, Counter | dict[str, Counter | dict[str, Counter]]]


class BudgetSummary(BaseModel):
    """`summary.budget`: its share of the run's caps (`share`, a shard's) and counters."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    __pydantic_extra__: dict[str, Counter | dict[str, Counter | dict[str, Counter]]] = Field(init=False)

    share: Text = ""


class JudgeSummary(BaseModel):
    """`summary.judge`: the model, its prompts' digests and counters."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    __pydantic_extra__: dict[str, Counter | dict[str, Counter | dict[str, Counter]]] = Field(init=False)

    model: Text = ""
    prompts: dict[str, Text] | None = None


class ShardSummary(TypedDict, total=False):
    """The `summary` fields a merge adds up or shows, as a run writes them (the merge holds a shard to these:
    text where a number belongs would reach the merged summary and report)."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    duration_s: Amount
    max_errors: StrictInt | None
    trials: StrictInt | None
    errored_trials: StrictInt | None
    resumed_items: StrictInt | None
    repeats: StrictInt | None
    budget: BudgetSummary | None
    network: Counter | Counters
    judge: JudgeSummary | None
    warnings: list[Any] | None


def summary_problem(summary: dict[str, Any]) -> str | None:
    """The first `summary` field a merge reads that is not what a run writes there (its name); None if all are."""
    try:
        _shard_summary().validate_python(summary)
    except ValidationError as exc:
        where = exc.errors()[0]["loc"]
        return str(where[0]) if where else "summary"
    return None


@cache
def _shard_summary() -> TypeAdapter[ShardSummary]:
    return TypeAdapter(ShardSummary)


class ComparedEntry(TypedDict, total=False):
    """One entry of `comparison.entries` (evalgate.decide.comparison.EntryComparison as written)."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    id: str
    turn: int | None
    kind: str
    status: str
    base_average: float | None
    head_average: float | None
    delta: float | None
    ci95: tuple[float | None, float | None] | None
    p_value: float | None
    p_regression: float | None
    p_within: float | None  # one-sided: the drop is within max_drop
    p_decision: float | None  # the p the status came from, held to `alpha`
    alpha: float | None
    base_matched: float | None  # the averages on the matched items, the ones delta compares
    head_matched: float | None
    mde: float | None  # the drop found with 80% power
    method: str | None
    pairs: int
    errored_pairs: int
    max_drop: float | None
    higher_is_better: bool
    when_uncertain: str
    fails: bool
    reason: str | None


class FlippedItem(TypedDict, total=False):
    """One item of `comparison.flipped`: an item that passed an entry in one run and failed it in the other."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    item: str
    entry: str
    turn: int | None
    kind: str
    base_score: float | None
    head_score: float | None
    direction: str


class BaselineInfo(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    name: str | None
    verdict: str | None
    created_at: str | None
    git_sha: str | None
    items: int | None


class BaseItem(TypedDict, total=False):
    """One item of `comparison.base_items`: the base's record of an item whose pass or fail changed."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    id: str
    output: Any
    error: str | None
    gates: dict[str, float | None]
    scores: dict[str, float | None]
    reasons: dict[str, str]
    flips: dict[str, str]  # entry label → "pass->fail" | "fail->pass"


class HistoryRun(TypedDict, total=False):
    """One run of `comparison.history`: the base branch's recent runs, oldest first (the trend)."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    name: str | None
    created_at: str | None
    git_sha: str | None
    verdict: str | None
    items: int | None
    scores: dict[str, float | None]


class ComparisonRecord(TypedDict, total=False):
    """`comparison`, added by `--baseline` or `compare -o`: read as a mapping, each of its fields typed."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    baseline: BaselineInfo
    settings: dict[str, Any]
    entries: list[ComparedEntry]
    flipped: list[FlippedItem]
    flipped_count: int
    matched_items: int
    new_items: int
    missing_items: int
    changed_items: int
    regressions: int
    failures: int  # entries failing the verdict: regressions and, under when_uncertain: fail, uncertain ones
    warnings: list[str]
    base_items: list[BaseItem]  # additive: absent when no item's status changed
    history: list[HistoryRun]  # additive: the base's history, then the base (at most 100)


class ItemsOnDemand(list[ItemRecord]):
    """A results file's items as the list `Results.items` always was, read from the file (all of them) the
    first time anything asks for them: the Python API's `load_results(path).items[3]`. The commands read
    a big file through `Results.each_item` instead, one item at a time, and never fill this list."""

    def __init__(self, results: Results) -> None:
        super().__init__()
        self._results: Results | None = results

    def load(self) -> None:
        if self._results is not None:
            results, self._results = self._results, None
            super().extend(results.stream_items())

    def __iter__(self) -> Iterator[ItemRecord]:
        self.load()
        return super().__iter__()

    def __len__(self) -> int:
        self.load()
        return super().__len__()

    def __bool__(self) -> bool:
        self.load()
        return super().__len__() > 0

    def __getitem__(self, index: Any) -> Any:
        self.load()
        return super().__getitem__(index)

    def __eq__(self, other: object) -> bool:
        self.load()
        return super().__eq__(other)

    __hash__ = None  # a list: unhashable

    def __repr__(self) -> str:
        self.load()
        return super().__repr__()


class Results(Decision):
    """The results JSON, schema_version 1: a Decision (verdict, scores, gate, threshold and turn results)
    with its name, summary, items and comparison."""

    model_config = ConfigDict(extra="allow", defer_build=True)  # built when results are read

    schema_version: Literal[1] = SCHEMA_VERSION
    name: str
    summary: Summary
    items: list[ItemRecord] = Field(default_factory=list)
    comparison: ComparisonRecord | None = None  # with a baseline (docs/results.md)
    # read from a file (`load_results`): the items stay there, read one at a time by `each_item`
    _file: StreamedResults | None = PrivateAttr(default=None)
    _checked = PrivateAttr(default=False)  # every item read once and found a record (`load_results`)

    def each_item(self) -> Iterator[ItemRecord]:
        """Every item, in file order: those held, or, read from a file, each read and checked in turn
        (a million items never sit in memory at once). ItemError naming the item that is no record."""
        if self._streams():
            yield from self.stream_items()
        else:
            yield from self.items

    def stream_items(self) -> Iterator[ItemRecord]:
        """The file's items, each read and checked in turn."""
        assert self._file is not None
        for position, raw in enumerate(self._items()):
            yield _item_record(raw, position, self._file.path)

    def _streams(self) -> bool:
        """Read from a file whose items nobody has asked for as a list: they are read from the file."""
        return self._file is not None and isinstance(self.items, ItemsOnDemand) and self.items._results is not None

    def each_record(self) -> Iterator[dict[str, Any]]:
        """Every item's record as the file holds it (checked as `each_item` checks it), in file order."""
        if not self._streams():
            for item in self.items:
                yield item.model_dump(mode="python")
            return
        path = self._file.path if self._file is not None else None
        for position, raw in enumerate(self._items()):
            if not self._checked:
                _item_record(raw, position, path)
            yield raw

    def _items(self) -> Iterator[Any]:
        """The file's items as parsed; ItemError naming the file where it is not JSON."""
        assert self._file is not None
        try:
            yield from self._file.items()
        except ItemError:
            raise
        except (ValueError, RecursionError) as exc:
            raise ItemError(str(exc) or type(exc).__name__, self._file.path) from None

    def model_dump(self, **options: Any) -> dict[str, Any]:
        """As pydantic's, a results file's items read first unless they are excluded."""
        self._load_items_unless_excluded(options)
        return super().model_dump(**options)

    def model_dump_json(self, **options: Any) -> str:
        self._load_items_unless_excluded(options)
        return super().model_dump_json(**options)

    def _load_items_unless_excluded(self, options: dict[str, Any]) -> None:
        if isinstance(self.items, ItemsOnDemand) and "items" not in (options.get("exclude") or ()):
            self.items.load()

    @property
    def file_header(self) -> dict[str, Any]:
        """Read from a file: its top-level keys but `items` as written (unknown ones included); else the
        model's own."""
        if self._file is None:
            return self.model_dump(mode="json", exclude={"items"})
        return dict(self._file.header)

    def item_count(self) -> int:
        """How many items there are: counted as they are read from a file (one at a time), else those held."""
        if not self._streams():
            return len(self.items)
        return sum(1 for _ in self.each_record())

    @property
    def has_items(self) -> bool:
        return bool(self.items) if self._file is None else self._file.has_items

    @property
    def outcome(self) -> Outcome:
        decided = {name: getattr(self, name) for name in Decision.model_fields}
        return Outcome.model_construct(**decided, not_scorable=self.summary.not_scorable,
                                       errored_items=self.summary.errored_items, max_errors=self.summary.max_errors,
                                       total_items=self.summary.total_items)


def load_results(path: Path, *, check_items: bool = True) -> Results:
    """A results file's header, its items left in the file (`Results.each_item` reads them); whatever a
    run writes (lone surrogates, nulls for NaN) reads back. check_items: read every item once now, so
    that a file whose item is no record is refused here (ValueError) rather than half-way through a report.

    The one way results files are read: the header whole, the items as a stream (evalgate.results.stream).
    ValueError for a path that is no regular file (a FIFO would block, a device never end) or one over
    MAX_RESULTS_BYTES (UnreadableFile, also an OSError)."""
    refuse_unreadable(path, limit=MAX_RESULTS_BYTES, what="results file")
    streamed = StreamedResults(path)
    results = Results.model_validate(_nan_for_null(streamed.header))
    results._file = streamed
    results.items = ItemsOnDemand(results)  # read only if asked for: the commands stream them (`each_item`)
    if check_items:
        for _ in results.each_item():
            pass
        results._checked = True
    return results


class ItemError(ValueError):
    """An item of a results file is no item record: the message says which and why, `path` the file."""

    def __init__(self, message: str, path: Path | None) -> None:
        super().__init__(message)
        self.path = path


def _item_record(raw: Any, position: int, path: Path | None = None) -> ItemRecord:
    try:
        return ItemRecord.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ItemError(f"items.{position}{'.' + where if where else ''}: {first['msg']}", path) from None


# What a comparison may be given without: results built by hand (`evalgate.compare` on dicts) name only the
# entries they compare; a missing field is an empty one, not an error.
_DECISION_DEFAULTS: dict[str, Any] = {"verdict": None, "scores": {}, "gate_results": [], "threshold_results": []}


def read_decision(written: Mapping[str, Any]) -> Decision:
    """The decision results JSON holds (a results file's header, a run's `header()`), typed as a results file
    reads it: thresholds are ThresholdRanges, a null average NaN; a field it lacks, empty. ValidationError (a
    ValueError) if what it holds is not such a decision."""
    return Decision.model_validate(_nan_for_null({**_DECISION_DEFAULTS, **written}))


def _nan_for_null(raw: Any) -> Any:
    """A NaN average was written as null (strict JSON has no NaN): read it back as NaN."""
    if not isinstance(raw, dict):
        return raw
    nan = float("nan")

    def scores(value: Any) -> Any:
        return {k: nan if v is None else v for k, v in value.items()} if isinstance(value, dict) else value

    def results(value: Any, key: str) -> Any:
        if not isinstance(value, list):
            return value
        return [{**r, key: nan} if isinstance(r, dict) and r.get(key, 0) is None else r for r in value]

    out = {**raw, "scores": scores(raw.get("scores"))}
    out["gate_results"] = results(raw.get("gate_results"), "score")
    out["threshold_results"] = results(raw.get("threshold_results"), "average_score")
    if isinstance(raw.get("turn_results"), list):
        out["turn_results"] = [
            {**t, "scores": scores(t.get("scores")), "gate_results": results(t.get("gate_results"), "score"),
             "threshold_results": results(t.get("threshold_results"), "average_score")}
            if isinstance(t, dict) else t
            for t in raw["turn_results"]
        ]
    return out
