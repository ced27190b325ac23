"""pass@k (Chen et al. 2021) and pass^k (tau-bench) per item, and their curve over items (evalgate.decide.stats)."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import pytest

from evalgate.decide import stats


def test_hand_enumerated_values() -> None:
    # 5 trials, 1 passed (the other 4 failed or errored): pass^k is 0 beyond k = 1, pass@k grows by 1/5
    assert [stats.pass_all_k(5, 1, k) for k in range(1, 6)] == [0.2, 0.0, 0.0, 0.0, 0.0]
    assert [stats.pass_at_k(5, 1, k) for k in range(1, 6)] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0], abs=1e-15)
    # 5 trials, 4 passed: C(4, k) / C(5, k) = (5 - k) / 5
    assert [stats.pass_all_k(5, 4, k) for k in range(1, 6)] == pytest.approx([0.8, 0.6, 0.4, 0.2, 0.0], abs=1e-15)
    assert [stats.pass_at_k(5, 4, k) for k in range(1, 6)] == [0.8, 1.0, 1.0, 1.0, 1.0]
    # the agent whose trials pass half the time: pass^5 = 0.5^5 = 0.031 in expectation (exactly, below)
    assert stats.pass_all_k(10, 10, 10) == 1.0 and stats.pass_at_k(10, 0, 3) == 0.0


def test_the_estimators_are_the_share_of_k_subsets_that_pass() -> None:
    """Brute force: of the C(n, k) ways to pick k of an item's n trials, the share where all (pass^k) or any
    (pass@k) passed. Both sides rounded once from the exact fraction: equal as floats."""
    for n in range(1, 8):
        for c in range(n + 1):
            trials = [1] * c + [0] * (n - c)
            for k in range(1, n + 1):
                picks = list(combinations(trials, k))
                every = Fraction(sum(all(p) for p in picks), len(picks))
                some = Fraction(sum(any(p) for p in picks), len(picks))
                assert stats.pass_all_k(n, c, k) == float(every), (n, c, k)
                assert stats.pass_at_k(n, c, k) == float(some), (n, c, k)


def test_the_estimators_are_unbiased() -> None:
    """Over c ~ Binomial(n, p), exactly: E[C(c,k)/C(n,k)] = p^k and E[pass@k] = 1 - (1-p)^k."""
    for n in (3, 5, 8):
        for p in (Fraction(1, 2), Fraction(1, 3), Fraction(9, 10)):
            for k in range(1, n + 1):
                weights = [math.comb(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1)]
                all_k = sum(w * Fraction(math.comb(c, k), math.comb(n, k)) for c, w in enumerate(weights))
                at_k = sum(w * (1 - Fraction(math.comb(n - c, k), math.comb(n, k))) for c, w in enumerate(weights))
                assert all_k == p**k and at_k == 1 - (1 - p) ** k


def test_out_of_range_arguments_are_refused() -> None:
    for n, c, k in ((3, 1, 0), (3, 1, 4), (3, 4, 1), (0, 0, 1)):
        with pytest.raises(ValueError):
            stats.pass_all_k(n, c, k)
        with pytest.raises(ValueError):
            stats.pass_at_k(n, c, k)


def test_errored_trials_count_as_failures_in_the_curve() -> None:
    """Half the items ran 5 trials and passed them all; the other half errored on 4 of 5 and passed the one
    that ran. Counting only the trials that ran, pass^5 would read 1.0; counted as failures, 0.5."""
    curve = stats.pass_k_curve({(5, 5): 10, (5, 1): 10})
    assert [p.k for p in curve] == [1, 2, 3, 4, 5] and all(p.items == 20 for p in curve)
    assert [p.pass_all_k for p in curve] == pytest.approx([0.6, 0.5, 0.5, 0.5, 0.5])
    assert [p.pass_at_k for p in curve] == pytest.approx([0.6, 0.7, 0.8, 0.9, 1.0])
    for p in curve:
        for value, (low, high) in ((p.pass_all_k, p.pass_all_k_ci95), (p.pass_at_k, p.pass_at_k_ci95)):
            assert 0.0 <= low <= value <= high <= 1.0


def test_pass_at_1_has_the_clustered_interval_of_the_entry_itself() -> None:
    """k = 1 with equal trials per item is the entry's average: the same Wilson interval on Kish's n_eff."""
    items = [[1, 1, 1], [0, 0, 1], [0, 0, 0], [1, 0, 1], [1, 1, 0], [1, 1, 1]]
    counts: dict[tuple[int, int], int] = {}
    for trials in items:
        counts[(3, sum(trials))] = counts.get((3, sum(trials)), 0) + 1
    first = stats.pass_k_curve(counts)[0]
    entry = stats.estimate([[float(v) for v in t] for t in items])
    assert entry is not None and entry.method == "wilson-clustered" and entry.ci is not None
    assert first.pass_at_k == first.pass_all_k == pytest.approx(entry.mean)
    assert first.pass_all_k_ci95 == pytest.approx(entry.ci) and first.pass_at_k_ci95 == pytest.approx(entry.ci)


def test_at_k_every_item_is_one_value_and_wilson_holds_its_items() -> None:
    """At k = K every item's pass^K is 0 or 1: Wilson's interval on the items (n_eff kept at least the items)."""
    curve = stats.pass_k_curve({(4, 4): 6, (4, 2): 3, (4, 0): 1})
    last = curve[-1]
    assert last.k == 4 and last.pass_all_k == 0.6
    assert last.pass_all_k_ci95 == pytest.approx(stats.wilson(0.6, 10))


def test_items_with_fewer_trials_count_up_to_their_own() -> None:
    """An item cut short (2 trials of 4) says nothing of 3 or 4 trials in a row: left out there."""
    curve = stats.pass_k_curve({(4, 4): 3, (2, 2): 1, (2, 0): 1})
    assert [p.items for p in curve] == [5, 5, 3, 3]
    assert curve[1].pass_all_k == pytest.approx((3 + 1 + 0) / 5)
    assert curve[3].pass_all_k == 1.0 and curve[3].pass_all_k_ci95[1] == 1.0


def test_no_items_no_curve_and_identical_items_no_nan() -> None:
    assert stats.pass_k_curve({}) == []
    curve = stats.pass_k_curve({(3, 2): 5})  # every item 2 of 3: no spread between items
    assert curve[0].pass_all_k == pytest.approx(2 / 3) and all(math.isfinite(v) for v in curve[0].pass_all_k_ci95)
    assert curve[0].pass_all_k_ci95 == pytest.approx(stats.wilson(2 / 3, 15))  # no sign of clustering: n trials
