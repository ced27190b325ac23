"""The one builder: validated entries -> Checks, raw items -> Cases.

The loader uses it for spec files (problems carry file and line); `run_evals` for Python values.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError

from evalgate.decide.verdict import NOT_SCORABLE_RULES, Entry, NotScorableRule, ThresholdRange
from evalgate.errors import Problem, problems_from_validation, shortened, show_loc, suggest
from evalgate.load.cases import Case, Check
from evalgate.load.data import BadLine
from evalgate.load.items import Item, plain_item
from evalgate.load.spec.context import BuildContext
from evalgate.load.yaml_positions import Positions
from evalgate.replies import RunFormatError, run_from_value
from evalgate.scorers.base import Scorer
from evalgate.scorers.builtins import load_builtins
from evalgate.scorers.custom import as_scorer
from evalgate.scorers.registry import REGISTRY, ScorerType, Threshold, lookup

# ---- gates and scorers ----

# An entry's keys that are not its type's parameters: they say how the entry counts, not what it measures.
OWN_KEYS = frozenset({"type", "id", "threshold", "not_scorable"})


def validate_entries(
    entries: Any,
    kind: Literal["gate", "scorer"],
    *,
    file: str,
    positions: Positions,
    prefix: tuple[str | int, ...],
) -> tuple[list[BaseModel], list[Problem]]:
    """Validate entries one by one against their type's model.

    Models are built only for the types a spec uses, so start-up does not pay for all of them.
    """
    models: list[BaseModel] = []
    problems: list[Problem] = []
    if not isinstance(entries, list):
        return models, problems  # the Spec model reports it
    for index, raw in enumerate(entries):
        where = (*prefix, index)
        label = show_loc(where)
        if not isinstance(raw, dict):
            problems.append(Problem(file, positions.line(where), f"{label}: an entry is a mapping with a `type`"))
            continue
        scorer_type, message = entry_type(raw.get("type"), label)
        if scorer_type is None:
            problems.append(Problem(file, positions.line((*where, "type")), message))
            continue
        if kind == "gate" and "threshold" in raw:
            problems.append(
                Problem(
                    file,
                    positions.line((*where, "threshold"), key=True),
                    f"{label}.threshold: unknown key `threshold`: a gate takes none (it must average 1.0); "
                    "move the entry under `scorers:` to give it one",
                )
            )
            continue
        if kind == "scorer" and raw.get("not_scorable") is not None and raw.get("threshold") is None:
            problems.append(Problem(file, positions.line((*where, "not_scorable"), key=True), tracked_rule(label)))
            continue
        model = scorer_type.model(kind)
        try:
            models.append(model.model_validate(raw))
        except ValidationError as exc:
            problems += problems_from_validation(
                exc, file=file, positions=positions, model=model, raw=raw, prefix=where
            )
    return models, problems


def tracked_rule(label: str) -> str:
    """What to change where a scorer without a threshold says `not_scorable` (it would change nothing)."""
    return (f"{label}.not_scorable: this scorer has no `threshold`, so it never changes the verdict and "
            "`not_scorable` (what a gate or threshold with nothing scorable does to it) would change nothing; "
            "give it a threshold or remove the key")


def entry_type(type_name: Any, label: str) -> tuple[ScorerType | None, str]:
    """The registered type an entry's `type` names, or None and what to change (`label` names the entry).

    A `type` that is no string (a mapping, a list) names no type: it is never looked up in the registry."""
    scorer_type = lookup(type_name) if isinstance(type_name, str) else None
    if scorer_type is not None:
        return scorer_type, ""
    names = list(REGISTRY)
    if type_name is None:
        return None, f"{label}: needs a `type`; valid: " + ", ".join(f"`{n}`" for n in names)
    return None, f"{label}: unknown type `{type_name}`" + suggest(str(type_name), names)


def params_hash(type_name: str, params: dict[str, Any]) -> str:
    """A short hash of what an entry measures (its type and parameters, not its id or threshold)."""
    data = json.dumps({"type": type_name, **params}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8", "backslashreplace")).hexdigest()[:12]


def _explicit_nulls(model: Any, scorer_type: Any) -> frozenset[str]:
    """The parameters an entry set to null, for a factory where null differs from absent (Mastra's
    `{...defaults, ...item}` keeps a null default)."""
    if not scorer_type.takes_nulls:
        return frozenset()
    return frozenset(k for k in model.model_fields_set - OWN_KEYS if getattr(model, k) is None)


def entry_hash(model: Any) -> str:
    """`params_hash` of one validated entry (its type's model)."""
    scorer_type = lookup(model.type)
    assert scorer_type is not None
    params = model.model_dump(exclude=OWN_KEYS)
    nulls = _explicit_nulls(model, scorer_type)
    if nulls:  # a null that means something measures something else
        params["explicit_nulls"] = sorted(nulls)
    return params_hash(scorer_type.name, params)


def build_entry(model: Any, ctx: BuildContext) -> Scorer:
    """The Scorer of one validated entry (its type's model); ValueError if the factory refuses its arguments."""
    scorer_type = lookup(model.type)
    assert scorer_type is not None  # the entry's model came from the registry
    params = model.model_dump(exclude=OWN_KEYS)
    return scorer_type.build(params, id=model.id, ctx=ctx, nulls=_explicit_nulls(model, scorer_type))


def build_checks(
    entries: list[Any],
    kind: Literal["gate", "scorer"],
    *,
    file: str,
    positions: Positions,
    prefix: tuple[str | int, ...],
    ctx: BuildContext,
    turn: int | None = None,
) -> tuple[list[Check], list[Problem], list[Problem]]:
    """Build validated entries; problems for duplicate ids and factories that refuse their arguments."""
    checks: list[Check] = []
    problems: list[Problem] = []
    warnings: list[Problem] = []
    seen: dict[str, int | None] = {}
    for index, model in enumerate(entries):
        where = (*prefix, index)
        line = positions.line(where)
        try:
            scorer = build_entry(model, ctx)
        except ValueError as exc:
            problems.append(Problem(file, line, f"{show_loc(where)}: {exc}"))
            continue
        if scorer.id in seen:
            problems.append(
                Problem(
                    file,
                    line,
                    f"{show_loc(where)}: the id `{scorer.id}` is already used at line {seen[scorer.id]}; "
                    f"give this entry its own `id:`",
                )
            )
            continue
        seen[scorer.id] = line
        threshold = getattr(model, "threshold", None)
        raw_threshold = threshold.model_dump(exclude_none=True) if isinstance(threshold, BaseModel) else threshold
        if raw_threshold is not None and not scorer.higher_is_better and not isinstance(raw_threshold, dict):
            warnings.append(
                Problem(
                    file,
                    positions.line((*where, "threshold")),
                    f"{show_loc(where)}: lower is better for `{scorer.type}`, but a number threshold is a "
                    f"minimum; did you mean `threshold: {{max: {raw_threshold}}}`?",
                )
            )
        elif isinstance(raw_threshold, dict) and not scorer.higher_is_better and "max" not in raw_threshold:
            warnings.append(
                Problem(
                    file,
                    positions.line((*where, "threshold")),
                    f"{show_loc(where)}: lower is better for `{scorer.type}`, but this threshold has only a `min`",
                )
            )
        typed = ThresholdRange.of(raw_threshold) if raw_threshold is not None else None
        rule = getattr(model, "not_scorable", None) or ctx.not_scorable  # the entry's own, else the spec's
        entry = Entry(scorer.id, kind, typed, scorer.higher_is_better, turn, entry_hash(model), scorer.judged, rule)
        checks.append(Check(scorer, entry, line))
    return checks, problems, warnings


# ---- items ----


def same_looking(item_id: str) -> str:
    """The id as Unicode's NFC form: `café` composed and decomposed are one id (they are shown the same)."""
    return item_id if item_id.isascii() else unicodedata.normalize("NFC", item_id)


class CaseBuilder:
    """Raw items -> Cases: validated, recorded runs converted, per-turn checks built; problems collected."""

    def __init__(self, file: str, ctx: BuildContext, *, recorded: bool) -> None:
        self.recorded = recorded
        self.file = file
        self.ctx = ctx
        self.count = 0  # valid cases so far (another shard's included)
        self.problems: list[Problem] = []
        self.ids: dict[str, tuple[int | None, str]] = {}  # id, NFC-normalised -> (its line, the id as written)
        self.seen = 0
        self.turn_thresholds: dict[tuple[int, str], tuple[Any, int | None]] = {}
        self.turn_rules: dict[tuple[int, str, str], tuple[str, int | None]] = {}  # not_scorable, by turn, kind, id
        self.keep: Callable[[str], bool] | None = None  # a shard's filter on item ids (see loader.CaseStream)

    def problem(self, positions: Positions, path: tuple[str | int, ...], message: str) -> None:
        self.problems.append(Problem(self.file, positions.line(path), message))

    unique_ids = True  # a data file's ids name its items in results and reports

    def add(self, raw: Any, positions: Positions, prefix: tuple[str | int, ...]) -> Case | None:
        self.seen += 1
        plain = None
        if raw.__class__ is dict:
            if self.keep is not None:
                item_id = raw.get("id")
                if item_id is None:
                    item_id = f"item-{self.seen}"  # Case.id of an item without one
                if item_id.__class__ is str and not self.keep(item_id):
                    self.count += 1  # another shard's: its index is taken all the same
                    return None
            plain = plain_item(raw)
        item = plain if plain is not None else self._item(raw, positions, prefix)
        if item is None:
            return None
        # A plain item with an `input` has exactly one of input, inputs, turns: nothing to check.
        shape = shape_problem(item) if plain is None or "input" not in raw else None
        if shape is not None:
            given = [k for k in ("input", "inputs", "turns") if k in item.model_fields_set]
            where = self.where(prefix)
            self.problem(positions, (*prefix, *given) if len(given) == 1 else prefix, f"{where}: {shape}")
            return None
        # its place in the data: an invalid item before it takes its number all the same (nothing runs then,
        # but this item's default id, in a message, must be its own, not the invalid one's)
        case = Case(self.seen - 1, item, positions.line(prefix))
        if self.unique_ids:
            item_id = item.id
            if item_id == "":
                self.problem(positions, (*prefix, "id"), f"{self.where(prefix)}: the id is empty; name the item "
                             "or leave `id` out")
                return None
            # an item without an id is `item-N` in results and reports: no other item may be named so
            named = item_id if item_id is not None else case.id
            ids = self.ids
            key = same_looking(named)
            if key in ids:
                line, first = ids[key]
                if item_id is None:
                    message = (f"{self.where(prefix)}: this item has no id, so it is `{named}`, the id of the "
                               f"item at line {line}; give every item an id")
                elif first != named:
                    message = (f"{self.where(prefix)}: the id {named!a} is the id {first!a} at line {line} "
                               "written another way (the same once Unicode-normalised, NFC): the two would look "
                               "the same in every report; give one another id")
                else:
                    message = f"{self.where(prefix)}: the id `{item_id}` is already used at line {line}"
                self.problem(positions, (*prefix, "id") if item_id is not None else prefix, message)
                return None
            ids[key] = (case.line, named)
        if self.recorded and not self._recorded_runs(case, positions, prefix):
            return None
        if item.turns is not None and not self._turn_checks(case, positions, prefix):
            return None
        self.count += 1
        return case

    def where(self, prefix: tuple[str | int, ...]) -> str:
        """How a problem names the item being added (only ever needed for a problem)."""
        return _where(prefix, self.seen - 1)

    def _item(self, raw: Any, positions: Positions, prefix: tuple[str | int, ...]) -> Item | None:
        if isinstance(raw, BadLine):
            self.problem(positions, prefix, raw.message)
            return None
        if not isinstance(raw, dict):
            message = f"{self.where(prefix)}: an item is a mapping with `input`, `inputs` or `turns`"
            self.problem(positions, prefix, message)
            return None
        try:
            return Item.model_validate(raw)
        except ValidationError as exc:
            self.problems += problems_from_validation(
                exc, file=self.file, positions=positions, model=Item, raw=raw, prefix=prefix
            )
            return None

    def _recorded_runs(self, case: Case, positions: Positions, prefix: tuple[str | int, ...]) -> bool:
        item = case.item
        values = item.__dict__
        if item.turns is None and item.inputs is None:  # the common item: one output
            output = values["output"]
            if output is not None:
                try:
                    case.recorded = [run_from_value(output)]
                except RunFormatError as exc:
                    self.problem(positions, (*prefix, "output"), f"{self.where(prefix)}: {exc}")
                    return False
                # The raw output now lives on as the Run: drop it so 100k items stay small in memory.
                values["output"] = values["outputs"] = None
                return True
            outputs: list[tuple[Any, Any]] = [(output, "output")]
        elif item.turns is not None:
            outputs = [(t.output, ("turns", i, "output")) for i, t in enumerate(item.turns)]
        else:
            inputs = item.inputs or []
            if item.outputs is None or len(item.outputs) != len(inputs):
                have = "no `outputs`" if item.outputs is None else f"{len(item.outputs)} outputs"
                message = (f"{self.where(prefix)}: the recorded target needs one output per input "
                           f"({len(inputs)}), got {have}")
                self.problem(positions, (*prefix, "outputs"), message)
                return False
            outputs = [(o, ("outputs", i)) for i, o in enumerate(item.outputs)]
        runs = []
        for value, where in outputs:
            if value is None:
                path = (*prefix, *where) if where.__class__ is tuple else (*prefix, where)
                key = path[-1] if isinstance(path[-1], str) else "outputs"
                self.problem(positions, path, f"{self.where(prefix)}: the recorded target needs `{key}` here")
                return False
            try:
                runs.append(run_from_value(value))
            except RunFormatError as exc:
                path = (*prefix, *where) if where.__class__ is tuple else (*prefix, where)
                self.problem(positions, path, f"{self.where(prefix)}: {exc}")
                return False
        case.recorded = runs
        values["output"] = values["outputs"] = None
        if item.turns is not None:
            for turn in item.turns:
                turn.__dict__["output"] = None
        return True

    def _turn_checks(self, case: Case, positions: Positions, prefix: tuple[str | int, ...]) -> bool:
        ok = True
        case.turn_checks = []
        for turn_index, turn in enumerate(case.item.turns or []):
            checks: list[Check] = []
            kinds: tuple[tuple[Literal["gate", "scorer"], Any], ...] = (("gate", turn.gates), ("scorer", turn.scorers))
            for kind, entries in kinds:
                key = "gates" if kind == "gate" else "scorers"
                sub = (*prefix, "turns", turn_index, key)
                built, problems = self._checks(entries, kind, positions, sub, turn_index)
                self.problems += problems
                ok = ok and not problems
                for check in built:
                    if kind == "scorer" and not self._same_threshold(check, positions, sub, prefix):
                        ok = False
                    if not self._same_rule(check, positions, sub, prefix):
                        ok = False
                checks += built
            case.turn_checks.append(checks)
        return ok

    def _checks(
        self, entries: Any, kind: Literal["gate", "scorer"], positions: Positions, sub: tuple[str | int, ...], turn: int
    ) -> tuple[list[Check], list[Problem]]:
        models, problems = validate_entries(entries, kind, file=self.file, positions=positions, prefix=sub)
        if problems:
            return [], problems
        built, problems, _ = build_checks(
            models, kind, file=self.file, positions=positions, prefix=sub, ctx=self.ctx, turn=turn
        )
        return built, problems

    def _same_threshold(
        self, check: Check, positions: Positions, sub: tuple[str | int, ...], prefix: tuple[str | int, ...]
    ) -> bool:
        key = (check.entry.turn or 0, check.entry.id)
        seen = self.turn_thresholds.get(key)
        if seen is None:
            self.turn_thresholds[key] = (check.entry.threshold, check.line)
            return True
        if seen[0] == check.entry.threshold:
            return True
        self.problem(
            positions,
            sub,
            f"{self.where(prefix)}: turn {key[0]} scorer `{key[1]}` has threshold {check.entry.threshold!r}, "
            f"but the same id at that turn has {seen[0]!r}{f' at line {seen[1]}' if seen[1] else ''}; "
            "entries sharing an id at a turn index share a threshold",
        )
        return False


    def _same_rule(
        self, check: Check, positions: Positions, sub: tuple[str | int, ...], prefix: tuple[str | int, ...]
    ) -> bool:
        """Entries sharing an id at a turn index are one entry of that turn's results: one `not_scorable`."""
        entry = check.entry
        key = (entry.turn or 0, entry.kind, entry.id)
        seen = self.turn_rules.setdefault(key, (entry.not_scorable, check.line))
        if seen[0] == entry.not_scorable:
            return True
        self.problem(
            positions,
            sub,
            f"{self.where(prefix)}: turn {key[0]} {entry.kind} `{entry.id}` has `not_scorable: {entry.not_scorable}`, "
            f"but the same id at that turn has `{seen[0]}`{f' at line {seen[1]}' if seen[1] else ''}; "
            "entries sharing an id at a turn index share it",
        )
        return False


def shape_problem(item: Item) -> str | None:
    """Why an item is not exactly one of `input`, a non-empty `inputs`, non-empty `turns` (as Mastra checks)."""
    given = [k for k in ("input", "inputs", "turns") if k in item.model_fields_set]
    if len(given) != 1:
        what = "none of them" if not given else " and ".join(f"`{k}`" for k in given)
        return f"an item needs exactly one of `input`, `inputs`, `turns`; it has {what}"
    if given[0] != "input" and not getattr(item, given[0]):
        return f"`{given[0]}` needs at least one entry"
    # a recorded output where no run reads it was dropped without a word
    if given[0] != "input" and "output" in item.model_fields_set:
        where = "each turn's own `output`" if given[0] == "turns" else "`outputs`, one per input"
        return f"`output` goes with `input`; an item with `{given[0]}` records {where}"
    if given[0] != "inputs" and "outputs" in item.model_fields_set:
        where = "each turn's own `output`" if given[0] == "turns" else "`output`"
        return f"`outputs` goes with `inputs`; an item with `{given[0]}` records {where}"
    return None


def _where(prefix: tuple[str | int, ...], index: int) -> str:
    if prefix and prefix[0] == "data":
        return f"data[{prefix[1]}]"
    if prefix:
        return f"item {prefix[0] + 1}" if isinstance(prefix[0], int) else str(prefix)
    return f"item {index + 1}"


# ---- run_evals: the same building from Python values ----


class PythonCaseBuilder(CaseBuilder):
    """Cases from `run_evals` data: dicts or Items; per-turn entries as `python_checks` takes them.

    Like Mastra's runEvals, ids need not be unique; problems are raised (ValueError), not collected.
    """

    unique_ids = False

    def __init__(self, *, recorded: bool, not_scorable: NotScorableRule = "leave_out") -> None:
        super().__init__("data", BuildContext(not_scorable=not_scorable), recorded=recorded)

    def _item(self, raw: Any, positions: Positions, prefix: tuple[str | int, ...]) -> Item | None:
        # Building drops replayed outputs from the item: never from the caller's own objects.
        return raw.model_copy(deep=True) if isinstance(raw, Item) else Item.model_validate(raw)

    def _checks(
        self, entries: Any, kind: Literal["gate", "scorer"], positions: Positions, sub: tuple[str | int, ...], turn: int
    ) -> tuple[list[Check], list[Problem]]:
        return python_checks(entries, kind, turn, where=f"data{show_loc(sub)}", not_scorable=self.ctx.not_scorable), []


def python_cases(data: Iterable[Any], *, recorded: bool, not_scorable: NotScorableRule = "leave_out") -> list[Case]:
    """Every case of `run_evals` data, built before anything runs; ValueError naming the first bad item.

    not_scorable: what the items' per-turn entries that set none do when nothing was scorable."""
    builder = PythonCaseBuilder(recorded=recorded, not_scorable=not_scorable)
    cases: list[Case] = []
    for index, raw in enumerate(data):
        case = builder.add(raw, _NO_POSITIONS, (index,))
        if builder.problems:
            raise ValueError(builder.problems[0].message)
        assert case is not None
        cases.append(case)
    return cases


_NO_POSITIONS = Positions()


_threshold: TypeAdapter[Threshold] = TypeAdapter(Threshold)


def python_checks(values: Iterable[Any], kind: str, turn: int | None = None, *, where: str = "",
                  not_scorable: NotScorableRule = "leave_out") -> list[Check]:
    """Checks from `run_evals` arguments: Scorers, functions, {"scorer": s, "threshold": t} (and optionally
    "not_scorable") or spec-style entries ({"type": "includes", "value": "x"}); ValueError on the first problem.

    where: how problems name the list (`gates`, `data[0].turns[1].scorers`); default: the `kind`'s argument.
    not_scorable: what an entry that sets none does when every result was not scorable (`run_evals`')."""
    checks: list[Check] = []
    seen: set[str] = set()
    for index, value in enumerate(values):
        label = f"{where or kind + 's'}[{index}]"
        scorer, hashed, threshold = _python_entry(value, kind, label)
        if scorer.id in seen:
            raise ValueError(f"two {kind}s have the id `{scorer.id}`; pass id=... to one of them")
        seen.add(scorer.id)
        if threshold is not None:
            try:
                parsed = _threshold.validate_python(threshold)
            except ValidationError as exc:
                raise ValueError(f"invalid threshold for `{scorer.id}`: {exc.errors()[0]['msg']}") from None
            threshold = parsed if isinstance(parsed, float) else parsed.model_dump(exclude_none=True)
        rule = _python_rule(value, kind, label, threshold) or not_scorable
        entry = Entry(scorer.id, kind, threshold, scorer.higher_is_better, turn, hashed, scorer.judged, rule)  # type: ignore[arg-type]
        checks.append(Check(scorer, entry))
    return checks


def _python_entry(value: Any, kind: str, label: str) -> tuple[Scorer, str | None, Any]:
    """The scorer of one `run_evals` entry, its hash (spec-style entries) and its threshold as given."""
    if isinstance(value, dict) and "type" in value:  # a spec-style entry
        scorer, hashed = _python_spec_entry(value, kind, label)
        return scorer, hashed, value.get("threshold")
    if isinstance(value, dict):
        unknown = value.keys() - {"scorer", "threshold", "not_scorable"}
        if unknown or "scorer" not in value:
            raise ValueError(
                f"a scorer entry is a scorer or {{'scorer': s, 'threshold': t}}, got keys {sorted(value)}"
            )
        if kind == "gate" and value.get("threshold") is not None:
            raise ValueError("gates take no threshold: a gate must average 1.0")
        return as_scorer(value["scorer"]), None, value.get("threshold")
    return as_scorer(value), None, None


def _python_rule(value: Any, kind: str, label: str, threshold: Any) -> NotScorableRule | None:
    """A `run_evals` entry's own `not_scorable`, checked as the spec's (`validate_entries`); None: not set."""
    rule = value.get("not_scorable") if isinstance(value, dict) else None
    if rule is None:
        return None
    if rule not in NOT_SCORABLE_RULES:
        raise ValueError(f"{label}.not_scorable: {rule!r} is neither "
                         + " nor ".join(repr(r) for r in NOT_SCORABLE_RULES))
    if kind == "scorer" and threshold is None:
        raise ValueError(tracked_rule(label))
    return rule  # type: ignore[no-any-return]


def _python_spec_entry(value: dict[str, Any], kind: str, label: str) -> tuple[Scorer, str]:
    """A spec-style entry ({"type": "includes", "value": "x"}) built through the registry, and its hash.

    An unknown `type` is the spec's error, worded as `validate_entries` words it (label: the entry)."""
    load_builtins()
    scorer_type, message = entry_type(value["type"], label)
    if scorer_type is None:
        raise ValueError(shortened(message))  # cut as the CLI prints it: a 100 KB `type` hides what to change
    model = scorer_type.model("gate" if kind == "gate" else "scorer").model_validate(value)
    return build_entry(model, BuildContext()), entry_hash(model)
