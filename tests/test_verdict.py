"""Verdict semantics (CONTRACT section 2), through evalgate.decide.verdict.Aggregator directly."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalgate.decide.verdict import Aggregator, Entry, Outcome

NAN = float("nan")
ORDER = {"passed": 0, "scored": 1, "failed": 2}


def gate(id: str, turn: int | None = None) -> Entry:
    return Entry(id, "gate", turn=turn)


def scorer(id: str, threshold: Any = None, turn: int | None = None) -> Entry:
    return Entry(id, "scorer", threshold, turn=turn)


def aggregate(
    scores: list[tuple[Entry, list[float | None]]], *, errored: int = 0, items: int | None = None, max_errors: int = 0
) -> Outcome:
    """Feed each entry's item scores (None: not scorable) and fold them into an Outcome."""
    aggregator = Aggregator([entry for entry, _ in scores if entry.turn is None])
    for entry, values in scores:
        for value in values:
            aggregator.add(entry, value)
    total = items if items is not None else max((len(v) for _, v in scores), default=0)
    for n in range(total):
        aggregator.add_item(errored=n < errored)
    return aggregator.outcome(max_errors)


# Each case: the entries with their per-item scores, then the expected verdict.
VERDICT_TABLE: list[tuple[str, list[tuple[Entry, list[float | None]]], str | None]] = [
    # gates only
    ("gate at 1.0 passes", [(gate("g"), [1.0, 1.0])], "passed"),
    ("gate below 1.0 fails", [(gate("g"), [1.0, 0.0])], "failed"),
    ("gate at 0.999 fails", [(gate("g"), [0.999])], "failed"),
    ("one failing gate of two", [(gate("a"), [1.0]), (gate("b"), [0.0])], "failed"),
    # thresholds only: a number is a minimum, inclusive
    ("number: average at min", [(scorer("s", 0.5), [1.0, 0.0])], "passed"),
    ("number: average just below min", [(scorer("s", 0.5), [0.4999999])], "scored"),
    ("number: average above min", [(scorer("s", 0.5), [0.75])], "passed"),
    ("number 0 admits 0", [(scorer("s", 0.0), [0.0])], "passed"),
    ("number 1 admits only 1", [(scorer("s", 1.0), [1.0, 0.99])], "scored"),
    ("{min}: at", [(scorer("s", {"min": 0.7}), [0.7])], "passed"),
    ("{min}: below", [(scorer("s", {"min": 0.7}), [0.6999])], "scored"),
    ("{min}: above", [(scorer("s", {"min": 0.7}), [0.9])], "passed"),
    ("{max}: at", [(scorer("s", {"max": 0.2}), [0.2])], "passed"),
    ("{max}: above", [(scorer("s", {"max": 0.2}), [0.2001])], "scored"),
    ("{max}: below", [(scorer("s", {"max": 0.2}), [0.0])], "passed"),
    ("{min,max}: at min", [(scorer("s", {"min": 0.3, "max": 0.6}), [0.3])], "passed"),
    ("{min,max}: at max", [(scorer("s", {"min": 0.3, "max": 0.6}), [0.6])], "passed"),
    ("{min,max}: inside", [(scorer("s", {"min": 0.3, "max": 0.6}), [0.5])], "passed"),
    ("{min,max}: below", [(scorer("s", {"min": 0.3, "max": 0.6}), [0.29])], "scored"),
    ("{min,max}: above", [(scorer("s", {"min": 0.3, "max": 0.6}), [0.61])], "scored"),
    ("{min,max}: min == max, at", [(scorer("s", {"min": 0.5, "max": 0.5}), [0.5])], "passed"),
    ("{min,max}: min == max, off", [(scorer("s", {"min": 0.5, "max": 0.5}), [0.5, 0.6])], "scored"),
    # both: a failing gate outranks a missed threshold
    ("gate pass, threshold pass", [(gate("g"), [1.0]), (scorer("s", 0.5), [0.5])], "passed"),
    ("gate pass, threshold miss", [(gate("g"), [1.0]), (scorer("s", 0.5), [0.4])], "scored"),
    ("gate fail, threshold pass", [(gate("g"), [0.0]), (scorer("s", 0.5), [0.9])], "failed"),
    ("gate fail, threshold miss", [(gate("g"), [0.0]), (scorer("s", 0.5), [0.1])], "failed"),
    # bare (tracked) scorers never make a verdict
    ("bare scorers only", [(scorer("a"), [0.0]), (scorer("b"), [1.0])], None),
    ("bare scorer beside a passing gate", [(gate("g"), [1.0]), (scorer("a"), [0.0])], "passed"),
    ("bare scorer beside a missed threshold", [(scorer("t", 0.9), [0.1]), (scorer("a"), [1.0])], "scored"),
    # NaN: a non-finite average fails its gate or bound
    ("NaN gate", [(gate("g"), [1.0, NAN])], "failed"),
    ("NaN threshold number", [(scorer("s", 0.0), [NAN])], "scored"),
    ("NaN threshold {max}", [(scorer("s", {"max": 1.0}), [NAN])], "scored"),
    ("NaN threshold {min,max}", [(scorer("s", {"min": 0.0, "max": 1.0}), [0.5, NAN])], "scored"),
    # not scorable: left out of the average; all-not-scorable entries are left out entirely
    ("not scorable left out of gate average", [(gate("g"), [1.0, None, 1.0])], "passed"),
    ("not scorable left out of threshold average", [(scorer("s", 0.75), [1.0, None, 0.5])], "passed"),
    ("all-not-scorable gate is left out", [(gate("g"), [None, None])], None),
    ("all-not-scorable threshold is left out", [(scorer("s", 0.5), [None])], None),
    ("all-not-scorable gate beside a miss", [(gate("g"), [None]), (scorer("s", 0.5), [0.0])], "scored"),
    # per-turn entries fold into the same verdict
    ("turn gate fails", [(gate("g"), [1.0]), (gate("tg", turn=1), [0.0])], "failed"),
    ("turn threshold missed", [(gate("g"), [1.0]), (scorer("ts", 0.5, turn=0), [0.2])], "scored"),
    ("only turn entries, passing", [(gate("tg", turn=0), [1.0]), (scorer("ts", 0.5, turn=1), [0.5])], "passed"),
    ("only bare turn scorers", [(scorer("ts", turn=0), [0.5])], None),
]


@pytest.mark.parametrize(("case", "scores", "expected"), VERDICT_TABLE, ids=[c[0] for c in VERDICT_TABLE])
def test_verdict_table(case: str, scores: list[tuple[Entry, list[float | None]]], expected: str | None) -> None:
    assert aggregate(scores).verdict == expected


def test_results_keep_spec_order_and_echo_threshold() -> None:
    bounds = {"min": 0.3, "max": 0.6}
    outcome = aggregate(
        [
            (gate("z"), [1.0]),
            (gate("a"), [0.0]),
            (scorer("tracked"), [0.25]),
            (scorer("range", bounds), [0.5]),
            (scorer("min", 0.7), [0.5]),
        ]
    )
    assert [g.id for g in outcome.gate_results] == ["z", "a"]
    assert [(g.passed, g.score) for g in outcome.gate_results] == [(True, 1.0), (False, 0.0)]
    assert [t.id for t in outcome.threshold_results] == ["range", "min"]
    assert outcome.threshold_results[0].threshold == bounds
    assert outcome.threshold_results[1].threshold == 0.7
    assert outcome.threshold_results[1].average_score == 0.5
    # `scores` holds scorers (tracked and thresholded), never gates
    assert outcome.scores == {"tracked": 0.25, "range": 0.5, "min": 0.5}


def test_not_scorable_counted_and_all_not_scorable_left_out_everywhere() -> None:
    outcome = aggregate(
        [(gate("g"), [None, None]), (scorer("s", 0.5), [None, None]), (scorer("t"), [None, 0.4])]
    )
    assert outcome.gate_results == []
    assert outcome.threshold_results == []
    assert outcome.scores == {"t": 0.4}
    assert outcome.not_scorable == {"g": 2, "s": 2, "t": 1}
    assert outcome.verdict is None
    # left out of the verdict as Mastra leaves them out, but named, with why
    assert [(r.id, r.kind, r.turn, r.reason) for r in outcome.not_scored] == [
        ("g", "gate", None, "no result could be scored: 2 not scorable"),
        ("s", "threshold", None, "no result could be scored: 2 not scorable")]


def test_a_gate_or_threshold_whose_every_result_errored_is_reported_and_not_met() -> None:
    """Errored results (a judge that never answered) are not `not scorable`: the entry stays, not met."""
    aggregator = Aggregator([gate("g"), scorer("s", 0.5), scorer("tracked")])
    for _ in range(3):  # no score for any entry: each item's scorers raised
        aggregator.add_item(errored=True)
    outcome = aggregator.outcome(max_errors=3)
    assert [(g.id, g.passed, g.score) for g in outcome.gate_results] == [("g", False, None)]
    assert [(t.id, t.passed, t.average_score) for t in outcome.threshold_results] == [("s", False, None)]
    assert outcome.threshold_results[0].unscored == "no result could be scored: 3 errored items"
    assert outcome.threshold_results[0].to_dict()["unscored"] == "no result could be scored: 3 errored items"
    assert outcome.scores == {}  # Mastra's numbers: none
    assert outcome.verdict == "failed" and outcome.failure_reason == "gates"
    only = Aggregator([scorer("s", 0.5)])
    only.add(scorer("s", 0.5), None)  # one item not scorable, one errored
    only.add_item(errored=False)
    only.add_item(errored=True)
    shown = only.outcome(max_errors=1)
    assert shown.verdict == "failed"  # nothing measured is no miss: an unscored threshold fails the verdict
    assert shown.threshold_results[0].unscored == "no result could be scored: 1 errored item, 1 not scorable"


def test_nan_average_is_reported_and_fails() -> None:
    outcome = aggregate([(scorer("s", 0.5), [NAN])])
    assert math.isnan(outcome.threshold_results[0].average_score)
    assert outcome.threshold_results[0].passed is False


@pytest.mark.parametrize(
    ("errored", "max_errors", "scores", "expected"),
    [
        (0, 0, [(gate("g"), [1.0])], "passed"),
        (1, 0, [(gate("g"), [1.0])], "failed"),
        (1, 1, [(gate("g"), [1.0])], "passed"),
        (2, 1, [(gate("g"), [1.0])], "failed"),
        (1, 1, [(scorer("s", 0.5), [0.1])], "scored"),
        (2, 1, [(scorer("s", 0.5), [0.9])], "failed"),
        # errored items over budget fail even a plain scoring run
        (1, 0, [(scorer("s"), [0.9])], "failed"),
        (1, 1, [(scorer("s"), [0.9])], None),
    ],
)
def test_errored_items_over_max_errors_fail(
    errored: int, max_errors: int, scores: list[tuple[Entry, list[float | None]]], expected: str | None
) -> None:
    outcome = aggregate(scores, errored=errored, items=3, max_errors=max_errors)
    assert outcome.verdict == expected
    assert outcome.errored_items == errored
    assert outcome.error_budget_exceeded is (errored > max_errors)


def test_turns_aggregate_by_index_and_id() -> None:
    aggregator = Aggregator([gate("top")])
    # two items; turn 1 of both has the same scorer id: one average over them
    for values in ([1.0, 0.2, 1.0], [1.0, 0.6, 0.0]):
        aggregator.add(gate("top"), values[0])
        aggregator.add(scorer("polite", 0.5, turn=1), values[1])
        aggregator.add(gate("tool", turn=0), values[2])
        aggregator.add_item(errored=False)
    outcome = aggregator.outcome()
    turns = {t.index: t for t in outcome.turn_results or []}
    assert sorted(turns) == [0, 1]
    assert turns[1].scores == {"polite": 0.4}
    assert [(t.id, t.passed) for t in turns[1].threshold_results] == [("polite", False)]
    assert [(g.id, g.score, g.passed) for g in turns[0].gate_results] == [("tool", 0.5, False)]
    assert outcome.verdict == "failed"
    assert outcome.turn_results is not None
    assert aggregate([(gate("g"), [1.0])]).turn_results is None


# ---- properties ----

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
item_scores = st.lists(unit, min_size=1, max_size=8)
threshold = st.one_of(
    unit,
    st.fixed_dictionaries({"min": unit}),
    st.fixed_dictionaries({"max": unit}),
    st.tuples(unit, unit).map(lambda p: {"min": min(p), "max": max(p)}),
)


def _rank(verdict: str | None) -> int:
    return -1 if verdict is None else ORDER[verdict]


@given(
    gates=st.lists(item_scores, min_size=1, max_size=3),
    thresholds=st.lists(st.tuples(threshold, item_scores), max_size=3),
    which=st.integers(min_value=0),
    position=st.integers(min_value=0),
    drop=st.floats(min_value=0.0, max_value=1.0, exclude_min=True),
)
def test_lowering_a_gate_score_never_improves_the_verdict(
    gates: list[list[float]],
    thresholds: list[tuple[Any, list[float]]],
    which: int,
    position: int,
    drop: float,
) -> None:
    def outcome(gate_scores: list[list[float]]) -> str | None:
        entries = [(gate(f"g{i}"), s) for i, s in enumerate(gate_scores)]
        entries += [(scorer(f"s{i}", t), s) for i, (t, s) in enumerate(thresholds)]
        return aggregate(entries).verdict

    before = outcome(gates)
    lowered = [list(s) for s in gates]
    g = lowered[which % len(lowered)]
    i = position % len(g)
    g[i] = max(0.0, g[i] - drop)
    after = outcome(lowered)
    assert _rank(after) >= _rank(before)


@given(
    gates=st.lists(item_scores, max_size=3),
    thresholds=st.lists(st.tuples(threshold, item_scores), max_size=3),
)
def test_verdict_order_failed_over_scored_over_passed(
    gates: list[list[float]], thresholds: list[tuple[Any, list[float]]]
) -> None:
    entries = [(gate(f"g{i}"), s) for i, s in enumerate(gates)]
    entries += [(scorer(f"s{i}", t), s) for i, (t, s) in enumerate(thresholds)]
    outcome = aggregate(entries)
    if not gates and not thresholds:
        assert outcome.verdict is None
    elif any(not g.passed for g in outcome.gate_results):
        assert outcome.verdict == "failed"
    elif any(not t.passed for t in outcome.threshold_results):
        assert outcome.verdict == "scored"
    else:
        assert outcome.verdict == "passed"


@given(st.lists(st.one_of(unit, st.none()), min_size=1, max_size=40))
def test_average_is_a_left_to_right_sum_like_javascript(values: list[float | None]) -> None:
    outcome = aggregate([(scorer("s"), values)])
    # the plain loop of Mastra's runEvals: total += score, then total / count
    total, count = 0.0, 0
    for value in values:
        if value is not None:
            total += value
            count += 1
    if count == 0:
        assert "s" not in outcome.scores
    else:
        assert outcome.scores["s"] == total / count  # bit for bit: no fsum, no rounding


def test_left_to_right_sum_differs_from_fsum_where_it_matters() -> None:
    # A case where naive summation and math.fsum disagree: the average must be the naive one.
    values = [0.1] * 10
    outcome = aggregate([(scorer("s"), values)])
    naive = 0.0
    for v in values:
        naive += v
    assert naive != math.fsum(values)
    assert outcome.scores["s"] == naive / 10


@pytest.mark.parametrize("fed", ["add", "add_scores"])
def test_averages_and_error_bars_stay_exact_over_many_items(fed: str) -> None:
    # Scores wait in batches before they are summed: across batch boundaries the sum stays left to right
    import random

    from evalgate.decide.stats import Moments

    rng = random.Random(3)
    entry = scorer("s", {"min": 0.5, "confidence": 0.95})
    values: list[float | None] = [rng.choice([rng.random(), 0.1, 1 / 3, None]) for _ in range(10_000)]
    aggregator = Aggregator([entry])
    for value in values:
        if fed == "add":
            aggregator.add(entry, value)
        else:
            aggregator.add_scores([(entry, value)])
        aggregator.add_item(False)
    outcome = aggregator.outcome()
    scored = [v for v in values if v is not None]
    total = 0.0
    for value in scored:
        total += value
    moments = Moments()
    for value in scored:
        moments.add_item([value])
    reference = moments.estimate(0.95, mean=total / len(scored))
    assert reference is not None and reference.ci is not None
    assert outcome.scores["s"] == total / len(scored)
    assert outcome.threshold_results[0].interval == reference.ci
    assert outcome.not_scorable == {"s": values.count(None)}
    assert aggregator.outcome() == outcome  # reading the outcome again folds nothing twice


@pytest.mark.parametrize("values", [
    [1.0, 0.0, -0.0, 1.0] * 3000,
    [-0.0] * 5000,
    [0.0, 1.0] * 3000 + [0.1] + [1.0, -0.0] * 3000,  # a fraction: the batches after it are summed one by one
    [1.0] * 5000 + [2.0**53] + [1.0] * 5000,  # past 2**53 a float cannot count every one
])
def test_0_1_scores_summed_by_counting_are_the_left_to_right_sum(values: list[float]) -> None:
    aggregator = Aggregator([scorer("s")])
    for value in values:
        aggregator.add_scores([(aggregator.entries[(None, "scorer", "s")], value)])
        aggregator.add_item(False)
    total = 0.0
    for value in values:
        total += value
    assert repr(aggregator.tallies[(None, "scorer", "s")].average) == repr(total / len(values))
