"""The loader: a spec file and its data -> the validated spec, its built cases and checks.

`load_spec(path)` returns a `LoadedSpec`, or raises `SpecError` naming file, line and what to
change (docs/spec.md). Building goes through `evalgate.load.build`, which `run_evals` uses too.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalgate.decide.stats import PASS_K_ID
from evalgate.errors import (
    MAX_COLLECTED,
    MAX_PROBLEMS,
    TOO_DEEP,
    Problem,
    SpecError,
    display_path,
    not_a_file,
    not_utf8,
    not_utf8_line,
    problems_from_validation,
    show_loc,
    suggest,
)
from evalgate.judge.accounting import DEFAULT_PRICES
from evalgate.judge.client import Judge
from evalgate.load.build import CaseBuilder, build_checks, validate_entries
from evalgate.load.cases import Case, Check
from evalgate.load.data import DataError, Located, count_lines, read_file
from evalgate.load.spec.context import BuildContext
from evalgate.load.spec.models import PriceKey, Spec
from evalgate.load.spec.schema import json_schema as spec_schema
from evalgate.load.yaml_positions import MAX_YAML_CHARS, Positions, YAMLSyntaxError, load
from evalgate.scorers.builtins import load_builtins
from evalgate.scorers.registry import REGISTRY
from evalgate.targets import type_names


@dataclass
class LoadedSpec:
    path: Path
    spec: Spec
    positions: Positions
    cases: list[Case] | None  # None: streamed from the data file by `iter_cases`
    gates: list[Check]
    scorers: list[Check]
    warnings: list[Problem] = field(default_factory=list)
    stream: Any = None  # data.CaseStream for large recorded data sets
    # known only once a streamed data set has been read whole (`iter_cases`): per-turn ids come with the items
    late_warnings: list[Problem] = field(default_factory=list)

    @property
    def item_count(self) -> int:
        return len(self.cases) if self.cases is not None else self.stream.count

    def iter_cases(self) -> Iterator[Case]:
        """The cases; a streamed data set raises SpecError at its end if any item was invalid."""
        if self.cases is not None:
            yield from self.cases
            return
        yield from self.stream.iterate()
        if self.stream.problems:
            raise SpecError(self.stream.problems)
        if self.stream.keep is None:  # a shard's stream skips the other shards' items: their ids are unseen
            self.late_warnings = _unknown_compare_ids(self.spec, self.file, self.positions,
                                                      self.gates + self.scorers, self.stream.turn_ids)

    @property
    def name(self) -> str:
        return self.spec.name or self.path.stem

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @property
    def file(self) -> str:
        return display_path(self.path)


def parse_spec(path: Path) -> tuple[Spec, Positions, Any]:
    """Read and validate the spec file itself (not its data)."""
    file = display_path(path)
    unusable = not_a_file(path, limit=MAX_YAML_CHARS, what="spec file")
    if unusable is not None:
        raise SpecError([Problem(file, None, unusable)])
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading BOM is not part of the YAML
    except FileNotFoundError:
        raise SpecError([Problem(file, None, "no such spec file")]) from None
    except OSError as exc:
        raise SpecError([Problem(file, None, f"cannot read: {exc.strerror}")]) from None
    except UnicodeDecodeError as exc:
        raise SpecError([Problem(file, not_utf8_line(exc), not_utf8(exc))]) from None
    try:
        raw, positions = load(text)
    except YAMLSyntaxError as exc:
        raise SpecError([Problem(file, exc.line, str(exc))]) from None
    except RecursionError:
        raise SpecError([Problem(file, None, TOO_DEEP)]) from None
    if not isinstance(raw, dict):
        raise SpecError([Problem(file, 1, "a spec is a mapping with `version: 1`, `data`, `target`, `gates` and "
                                          "`scorers`")])
    bad_values = _unusable_values(raw, positions, file)
    if bad_values:
        raise SpecError(bad_values[:20])
    # Before pydantic, which names such a key by its value (`[1]`) at the mapping's first line, or takes it
    # where any value goes (a JSON Schema, a tool's args): no JSON key, so it matched nothing, silently
    keys = _key_problems(raw, positions, file)
    if keys:
        raise SpecError(keys[:20])
    problems: list[Problem] = []
    spec = None
    target_types = type_names()  # the built-ins, then the installed plug-ins'
    try:
        spec = Spec.model_validate(raw)
    except ValidationError as exc:
        problems += problems_from_validation(
            exc, file=file, positions=positions, model=Spec, raw=raw, type_names=target_types
        )
    gates, gate_problems = validate_entries(
        raw.get("gates"), "gate", file=file, positions=positions, prefix=("gates",)
    )
    scorers, scorer_problems = validate_entries(
        raw.get("scorers"), "scorer", file=file, positions=positions, prefix=("scorers",)
    )
    problems += gate_problems + scorer_problems
    if problems or spec is None:
        problems.sort(key=lambda p: p.line or 0)
        raise SpecError(problems)
    # entries are now their types' models, not mappings
    return spec.model_copy(update={"gates": gates, "scorers": scorers}), positions, raw


def _key_problems(raw: Any, positions: Positions, file: str, path: tuple[str | int, ...] = (),
                  texts_under: dict[tuple[Any, ...], list[Any]] | None = None) -> list[Problem]:
    """Keys YAML read as something other than text (`yes`, `on`, `1`), at their own lines.
    texts_under: each mapping's keys as written, indexed once, when the first such key is found (looking
    them up among all keys for every mapping took time quadratic in the spec's size)."""
    problems: list[Problem] = []
    if texts_under is None:
        texts_under = {}
    if isinstance(raw, dict):
        for key in raw:
            if not isinstance(key, str):
                if not texts_under:
                    for written in positions.keys:
                        texts_under.setdefault(written[:-1], []).append(written[-1])
                # its source text: the key under this mapping that is no string key of it
                texts = texts_under.get(path, [])
                text = next((t for t in texts if isinstance(t, str) and t not in raw), str(key))
                where = show_loc(path) + ": " if path else ""
                problems.append(Problem(file, positions.line((*path, text), key=True),
                                        f"{where}the key `{text}` is read as {json.dumps(key, default=str)}, "
                                        f"not as a name; quote it: '{text}':"))
            elif path or key != "data":  # inline data is the items' own: their fields may be anything
                problems += _key_problems(raw[key], positions, file, (*path, key), texts_under)
    elif isinstance(raw, list):
        for index, value in enumerate(raw):
            problems += _key_problems(value, positions, file, (*path, index), texts_under)
    return problems


_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_NUMBER = int(sys.float_info.max)  # beyond it a setting meets float arithmetic in OverflowError


# Where text leaves the process as a file name, a command, an environment, a header or a URL: the
# data's path, these sections whole, and a check's file and module.
_SYSTEM_SECTIONS = frozenset({"data", "target", "judge", "compare", "pass_env"})
_SYSTEM_CHECK_KEYS = frozenset({"schema_file", "function"})


def _unusable_values(raw: Any, positions: Positions, file: str, path: tuple[str | int, ...] = (),
                     system: bool = False) -> list[Problem]:
    """Text and numbers outside `data` that no use of a setting can take, at their lines.

    Half of a UTF-16 surrogate pair (`"\\ud800"`) where text leaves the process (`system`): no file
    name, command line, environment or header can carry one, so a path or a command failed with
    UnicodeEncodeError at run time. Elsewhere (a check's `value`) it is kept, as a JavaScript string
    keeps it: Mastra's checks read it as it is. An integer past the largest float (`10**400`): the
    costs, ids and limits computed from it overflowed. Items may hold either: results keep them."""
    problems: list[Problem] = []
    where = show_loc(path) if path else "(top level)"

    def found(text: str, line: int | None, what: str) -> None:
        half = _SURROGATE.search(text) if system else None
        if half is not None:
            problems.append(Problem(file, line, f"{where}: {what} holds \\u{ord(half.group()):04x}, half of a "
                                    "UTF-16 surrogate pair and no character; write the character itself "
                                    "(e.g. \\U0001F600, not \\ud83d\\ude00)"))

    if isinstance(raw, dict):
        in_check = len(path) == 2 and path[0] in ("gates", "scorers")
        for key, value in raw.items():
            if isinstance(key, str):
                found(key, positions.line((*path, key), key=True), "a key")
            inner = system or (key in _SYSTEM_SECTIONS if not path else in_check and key in _SYSTEM_CHECK_KEYS)
            if path or key != "data" or isinstance(value, str):  # items' values are theirs: results keep them
                problems += _unusable_values(value, positions, file, (*path, key), inner)
    elif isinstance(raw, list):
        for index, value in enumerate(raw):
            problems += _unusable_values(value, positions, file, (*path, index), system)
    elif isinstance(raw, str):
        found(raw, positions.line(path), "the text")
    elif isinstance(raw, int) and not isinstance(raw, bool) and abs(raw) > _MAX_NUMBER:
        problems.append(Problem(file, positions.line(path), f"{where}: the number is too large to use "
                                "(over 1.8e308); write a smaller one"))
    return problems


def load_spec(path: str | Path, *, use_cache: bool = True) -> LoadedSpec:
    """Parse, validate and prepare a spec and its data; SpecError on any problem.

    use_cache: False makes the spec's judge bypass its response cache (`--no-cache`).
    """
    load_builtins()
    path = Path(path)
    spec, positions, _ = parse_spec(path)
    file = display_path(path)
    # One judge per spec, shared by its judged scorers (their calls, cost and cache are one).
    judge = Judge(spec.judge, base_dir=path.parent, use_cache=use_cache) if spec.judge is not None else None
    ctx = BuildContext(base_dir=path.parent, judge=judge, not_scorable=spec.not_scorable)
    gates, problems, warnings = build_checks(
        spec.gates, "gate", file=file, positions=positions, prefix=("gates",), ctx=ctx
    )
    scorers, more, more_warnings = build_checks(
        spec.scorers, "scorer", file=file, positions=positions, prefix=("scorers",), ctx=ctx
    )
    problems += more
    warnings += more_warnings
    problems += _judge_tls_problems(spec, path.parent, file, positions)
    if spec.budget is not None and spec.budget.max_usd is not None:
        problems += [Problem(file, positions.line(("budget", "max_usd")), message)
                     for message in unpriced_spend(spec, "budget.max_usd")]
    # With a judge, repeats of recorded runs do measure something: how much the judge's verdicts vary.
    if spec.target.type == "recorded" and spec.repeats is not None and spec.repeats > 1 and spec.judge is None:
        warnings.append(Problem(file, positions.line(("repeats",)), "repeats: the recorded target replays the "
                                "same run every trial, so repeats change nothing but the work; they are for agents"))
    if spec.target.type == "recorded" and isinstance(spec.data, str) and (gates or scorers) and not problems:
        # Replaying recorded runs costs nothing, so a big data set is validated while it is
        # scored, one item at a time, instead of being held in memory; a bad item still
        # ends the run with exit 2 and no results.
        stream = CaseStream(spec, path, positions, ctx)
        return LoadedSpec(path, spec, positions, None, gates, scorers, warnings, stream)
    cases, data_problems = load_cases(spec, path, positions, ctx)
    problems += data_problems
    if not problems and not gates and not scorers and not any(any(c.turn_checks or ()) for c in cases):
        problems.append(
            Problem(
                file,
                positions.line(()),
                "there are no gates and no scorers; add at least one under `gates:` or `scorers:`",
            )
        )
    if problems:
        raise SpecError(problems)
    turn_ids = (c.entry.id for case in cases for turn in case.turn_checks or () for c in turn)
    warnings += _unknown_compare_ids(spec, file, positions, gates + scorers, turn_ids)
    return LoadedSpec(path, spec, positions, cases, gates, scorers, warnings)


def _judge_tls_problems(spec: Spec, base_dir: Path, file: str, positions: Positions) -> list[Problem]:
    """The judge's `tls:` files, loaded now as a target's are: the judge connects at its first call, so a
    bad bundle used to error every judged item, the run an outage (exit 4) for a setting in the spec."""
    tls = spec.judge.tls if spec.judge is not None else None
    if tls is None or (tls.ca_bundle is None and tls.client_cert is None):
        return []
    from evalgate.infra.net import ssl_context, tls_from_settings

    try:
        ssl_context(tls_from_settings(tls, base_dir), os.environ)
    except ValueError as exc:
        message = str(exc)
        key = message.split(" ", 1)[0]
        if not key.startswith("tls."):  # a bundle named by the environment, not by the spec
            return [Problem(file, positions.line(("judge", "tls")), f"judge.tls: {message}")]
        return [Problem(file, positions.line(("judge", *key.split("."))), f"judge.{message}")]
    return []


def unpriced_spend(spec: Spec, cap: str) -> list[str]:
    """What a USD cap (`cap` names it) could not count: a model without a price. Its calls would
    count as $0, so the run could spend past the cap with nothing said."""
    out = []
    target = spec.target
    if target.type == "openai" and target.model not in target.prices:
        out.append(f"{cap}: the target's model `{target.model}` has no price in `target.prices`, so its calls "
                   f"would count as $0 against the cap; add `target.prices: {{{target.model}: {{prompt: <USD per 1M "
                   "tokens>, completion: <USD per 1M tokens>}}`, or cap tokens with `budget.max_tokens`")
    elif target.type == "openai":
        out += _half_priced(cap, f"target.prices.{target.model}", target.prices[target.model])
    judge = spec.judge
    if judge is not None and judge.model not in judge.prices and judge.model not in DEFAULT_PRICES:
        out.append(f"{cap}: the judge's model `{judge.model}` has no price (neither in `judge.prices` nor built in), "
                   f"so its calls would count as $0 against the cap; add `judge.prices: {{{judge.model}: {{prompt: "
                   "<USD per 1M tokens>, completion: <USD per 1M tokens>}}`, or cap tokens with `budget.max_tokens`")
    elif judge is not None and judge.model in judge.prices:
        out += _half_priced(cap, f"judge.prices.{judge.model}", judge.prices[judge.model])
    return out


def _half_priced(cap: str, where: str, price: Mapping[PriceKey, float]) -> list[str]:
    """A price without its prompt or its completion half: those tokens would count as $0 against the cap."""
    return [f"{cap}: `{where}` has no `{name}` (or `{other}`) price, so its {name} tokens would count as $0 "
            f"against the cap; add `{name}: <USD per 1M tokens>` (0 if they are free)"
            for name, other in (("prompt", "input"), ("completion", "output"))
            if name not in price and other not in price]


def _unknown_compare_ids(spec: Spec, file: str, positions: Positions, checks: list[Check],
                         turn_ids: Iterable[str]) -> list[Problem]:
    """`compare.entries` naming no entry of the spec: a typo would silently keep the default max_drop.

    turn_ids: the ids of the items' per-turn checks (a streamed data set's are known once it was read)."""
    if spec.compare is None or not spec.compare.entries:
        return []
    known = {c.entry.id for c in checks}
    known.update(turn_ids)
    return [Problem(file, positions.line(("compare", "entries", name), key=True),
                    f"compare.entries: `{name}` is not the id of a gate or scorer" + suggest(name, sorted(known)))
            for name in spec.compare.entries
            if name not in known and not (name.endswith(PASS_K_ID) and name[:-len(PASS_K_ID)] in known)]


def load_cases(
    spec: Spec, spec_path: Path, spec_positions: Positions, ctx: BuildContext
) -> tuple[list[Case], list[Problem]]:
    """Every case, validated, in memory (for targets whose runs cost something)."""
    stream = CaseStream(spec, spec_path, spec_positions, ctx)
    cases = list(stream.iterate())
    return cases, stream.problems


class CaseStream:
    """Cases read and validated one at a time, for large recorded data sets.

    `problems` is complete once iteration has finished; `count` is known up front.
    """

    def __init__(self, spec: Spec, spec_path: Path, spec_positions: Positions, ctx: BuildContext) -> None:
        self.spec = spec
        self.spec_path = spec_path
        self.spec_positions = spec_positions
        self.ctx = ctx
        self.problems: list[Problem] = []
        self.count = len(spec.data) if isinstance(spec.data, list) else count_lines(spec_path.parent / spec.data)
        # A shard's filter on item ids: the other shards' items are counted (indices stay the whole
        # data set's) but neither validated nor converted; their own shard's job checks them.
        self.keep: Callable[[str], bool] | None = None
        # The per-turn check ids met, for `compare.entries`' typo warning (only when it names any).
        self.turn_ids: set[str] = set()
        self._collect_ids = spec.compare is not None and bool(spec.compare.entries)

    def iterate(self) -> Iterator[Case]:
        spec, spec_path = self.spec, self.spec_path
        if isinstance(spec.data, list):
            file = display_path(spec_path)
            located: Iterator[Located] = (
                (raw, self.spec_positions, ("data", i)) for i, raw in enumerate(spec.data)
            )
            line_of_data = self.spec_positions.line(("data",))
        else:
            data_path = spec_path.parent / spec.data
            file = display_path(data_path)
            line_of_data = None
            try:
                located = read_file(data_path)
            except DataError as exc:
                if exc.in_spec:  # the file cannot be used at all: point at the spec's `data:` line
                    where = Problem(display_path(spec_path), self.spec_positions.line(("data",)), f"data: {exc}")
                    self.problems = [where]
                    return
                self.problems = [Problem(exc.file or file, exc.line, str(exc))]
                return
        distinct = DistinctMessages()
        builder = CaseBuilder(file, self.ctx, recorded=spec.target.type == "recorded")
        builder.keep = self.keep
        self.problems = builder.problems
        try:
            for raw, positions, prefix in located:
                case = builder.add(raw, positions, prefix)
                if case is not None and not builder.problems:
                    if self._collect_ids and case.turn_checks:
                        self.turn_ids.update(c.entry.id for turn in case.turn_checks for c in turn)
                    yield case
                if len(builder.problems) >= MAX_COLLECTED or distinct.count(builder.problems) >= MAX_PROBLEMS:
                    break  # enough to fix first: the same problem repeated is counted on, to say on how many lines
        except DataError as exc:
            builder.problems.append(Problem(file, exc.line, str(exc)))
        if not builder.count and not builder.problems:
            data_file = file if isinstance(spec.data, str) else display_path(spec_path)
            builder.problems.append(Problem(data_file, line_of_data, "the data set is empty; add at least one item"))


class DistinctMessages:
    """How many distinct messages a growing list of problems holds, each problem looked at once."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.read = 0

    def count(self, problems: list[Problem]) -> int:
        self.seen.update(p.message for p in problems[self.read:])
        self.read = len(problems)
        return len(self.seen)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of spec files, every built-in scorer type's entry included (`evalgate schema`)."""
    load_builtins()
    types = list(REGISTRY.values())
    return spec_schema([t.model("gate") for t in types], [t.model("scorer") for t in types])
