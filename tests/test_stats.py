"""evalgate.decide.stats: cross-checked against scipy.stats, and calibrated against truth by simulation.

The simulations draw agents with known pass rates from seeded generators and check what a user relies on:
95% intervals cover the true rate 93-97% of the time, identical agents are rarely called regressed,
many compared entries do not multiply false alarms, and a real drop is found.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from scipy import stats as sp

from evalgate.decide import stats


def _bench_module(name: str) -> ModuleType:
    """bench/NAME.py loaded by its path: bench/ on sys.path would make its http.py shadow the standard
    library's http package for every test collected after this one."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", Path(__file__).resolve().parent.parent / "bench"
                                                  / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


exact = _bench_module("exact")  # the enumeration

RUNS = 1000


# ---- against scipy ----


@pytest.mark.parametrize("df", [1, 2, 4, 9, 29, 99, 999])
@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995, 0.99999])
def test_t_quantile_matches_scipy(df: int, p: float) -> None:
    assert stats.t_quantile(p, df) == pytest.approx(sp.t.ppf(p, df), rel=1e-9)
    assert stats.t_quantile(1 - p, df) == pytest.approx(sp.t.ppf(1 - p, df), rel=1e-9)


@pytest.mark.parametrize("t", [-30.0, -2.5, -0.3, 0.0, 0.7, 2.0, 12.0])
@pytest.mark.parametrize("df", [1, 3, 30, 500])
def test_t_cdf_matches_scipy(t: float, df: int) -> None:
    assert stats.t_cdf(t, df) == pytest.approx(sp.t.cdf(t, df), abs=1e-13)


@pytest.mark.parametrize(("regressed", "improved"), [(0, 1), (1, 0), (3, 10), (10, 3), (7, 7), (25, 40),
                                                    (140, 100), (600, 540), (0, 30)])
def test_mcnemar_matches_scipy_exact_binomial(regressed: int, improved: int) -> None:
    expected = sp.binomtest(min(regressed, improved), regressed + improved, 0.5).pvalue
    assert stats.mcnemar_p(regressed, improved) == pytest.approx(expected, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize(("regressed", "improved"), [
    (5_000, 5_001), (4_900, 5_200), (6_000, 5_000), (1, 10_001), (20_000, 20_500), (50_000, 49_000)])
def test_mcnemar_on_many_discordant_pairs_matches_scipy(regressed: int, improved: int) -> None:
    # past the integer arithmetic's range: Loader's saddle point and a short sum, still to ~1e-12
    expected = sp.binomtest(min(regressed, improved), regressed + improved, 0.5).pvalue
    assert stats.mcnemar_p(regressed, improved) == pytest.approx(expected, rel=1e-11, abs=1e-300)


@pytest.mark.parametrize(("k", "n"), [(3_000, 10_001), (5_000, 10_001), (7_000, 10_001), (12_345, 25_000),
                                      (0, 50_000), (49_999, 50_000)])
def test_binomial_cdf_in_both_tails_matches_scipy(k: int, n: int) -> None:
    assert stats.binomial_cdf_half(k, n) == pytest.approx(sp.binom.cdf(k, n, 0.5), rel=1e-11, abs=1e-300)


def test_mcnemar_on_millions_of_pairs_is_quick_and_exact() -> None:
    """A baseline's results file may hold millions of items: the exact integer sum took O(k·n) bit
    operations (about 100 s at 10**6 pairs, hours at 4·10**6). A subprocess with a deadline, so a
    regression fails instead of hanging."""
    import subprocess
    import sys

    pairs = [(2_000_000, 2_001_000), (500_000, 501_500), (10_000_000, 10_010_000), (10**9, 10**9 + 30_000)]
    code = f"from evalgate.decide.stats import mcnemar_p; print([mcnemar_p(b, c) for b, c in {pairs!r}])"
    done = subprocess.run([sys.executable, "-c", code], text=True, timeout=60, capture_output=True)
    assert done.returncode == 0, done.stderr
    expected = [sp.binomtest(min(b, c), b + c, 0.5).pvalue for b, c in pairs]
    assert json.loads(done.stdout) == pytest.approx(expected, rel=1e-11)


def test_mcnemar_without_discordant_pairs_is_one() -> None:
    assert stats.mcnemar_p(0, 0) == 1.0


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 10), (10, 10), (7, 30), (21, 30), (50, 100), (999, 1000)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_scipy(k: int, n: int, confidence: float) -> None:
    expected = sp.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    low, high = stats.wilson(k / n, n, confidence)
    assert low == pytest.approx(expected.low, abs=1e-12)
    assert high == pytest.approx(expected.high, abs=1e-12)


@pytest.mark.parametrize("p", [0.975, 0.95, 0.995, 0.5, 0.025, 1e-9])
def test_normal_quantile_is_statistics_own_to_the_last_bit(p: float) -> None:
    # the 95% quantile is kept as a number (no import of `statistics` for it): the very float it computes
    from statistics import NormalDist

    assert stats.normal_quantile(p) == NormalDist().inv_cdf(p)
    assert stats.normal_quantile((1.0 + 0.95) / 2.0) == NormalDist().inv_cdf(0.975)


def test_t_interval_and_paired_t_match_scipy() -> None:
    rng = np.random.default_rng(1)
    values = rng.beta(2, 3, size=40)
    est = stats.estimate([[v] for v in values.tolist()])
    assert est is not None and est.method == "wilson-t" and not est.binary
    assert est.ci == pytest.approx(_wilson_t(values.mean(), sp.sem(values), 39), abs=1e-10)
    expected = sp.ttest_1samp(values, 0.0).confidence_interval(0.95)
    assert est.ci == pytest.approx((expected.low, expected.high), abs=0.005)  # in the middle: the t interval
    assert est.stderr == pytest.approx(sp.sem(values), rel=1e-10)
    stretched = values * 3 - 0.8  # not scores in [0, 1]: the t interval
    beyond = stats.estimate([[v] for v in stretched.tolist()])
    wide = sp.ttest_1samp(stretched, 0.0).confidence_interval(0.95)
    assert beyond is not None and beyond.method == "t"
    assert beyond.ci == pytest.approx((max(0.0, wide.low), min(1.0, wide.high)), abs=1e-10)
    base, head = rng.beta(2, 2, size=35), rng.beta(2, 2, size=35)
    diff = stats.paired_means((head - base).tolist())
    ref = sp.ttest_rel(head, base)
    assert diff.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    ci = ref.confidence_interval(0.95)
    assert diff.ci == pytest.approx((ci.low, ci.high), abs=1e-10)
    # the one-sided p behind the regression call is the t test against the shifted bound
    one_sided = sp.ttest_1samp(head - base, -0.05, alternative="less").pvalue
    assert diff.below(-0.05) == pytest.approx(one_sided, rel=1e-9)


def _wilson_t(mean: float, stderr: float, df: int) -> tuple[float, float]:
    """Wilson's interval on n_eff = p(1-p)/SE² with the t quantile, from its formula."""
    z, n_eff = sp.t.ppf(0.975, df), mean * (1 - mean) / stderr**2
    centre = (mean + z * z / (2 * n_eff)) / (1 + z * z / n_eff)
    half = z * math.sqrt(mean * (1 - mean) / n_eff + z * z / (4 * n_eff * n_eff)) / (1 + z * z / n_eff)
    return centre - half, centre + half


def test_skewed_bounded_scores_get_the_bounded_interval() -> None:
    """Mostly 1s, some 0s and halves, 20 items: the t interval covered the truth 0.89-0.91 of the time."""
    rng = np.random.default_rng(66)
    truth, hits, runs = 0.875, 0, 2000
    for _ in range(runs):
        est = stats.estimate([[float(v)] for v in rng.choice([1.0, 0.0, 0.5], 20, p=[0.85, 0.1, 0.05])])
        assert est is not None
        hits += est.ci[0] <= truth <= est.ci[1]
    assert 0.93 <= hits / runs <= 0.98


def test_clustered_stderr_is_sd_of_item_means_over_sqrt_items() -> None:
    rng = np.random.default_rng(2)
    values = rng.beta(2, 2, size=(30, 5))
    est = stats.estimate(values.tolist())
    assert est is not None and est.method == "wilson-t-clustered" and est.items == 30 and est.n == 150
    means = values.mean(axis=1)
    assert est.mean == pytest.approx(values.mean(), rel=1e-12)
    assert est.stderr == pytest.approx(means.std(ddof=1) / math.sqrt(30), rel=1e-10)
    assert est.ci == pytest.approx(_wilson_t(values.mean(), est.stderr, 29), rel=1e-9)


def test_constant_and_near_constant_entries() -> None:
    ones = stats.estimate([[1.0]] * 40)
    assert ones is not None and ones.stderr == 0.0 and ones.binary
    assert ones.ci[1] == 1.0 and ones.ci[0] == pytest.approx(sp.binomtest(40, 40).proportion_ci(method="wilson").low)
    steady = stats.estimate([[0.8000001], [0.8000001], [0.8000001]])
    assert steady is not None and steady.stderr == 0.0 and steady.ci == (0.8000001, 0.8000001)
    one = stats.estimate([[0.4]])
    assert one is not None and one.stderr is None and one.ci == (0.0, 1.0)


def test_pass_at_k_pass_all_k_and_flaky() -> None:
    est = stats.estimate([[1, 1, 1], [1, 0, 1], [0, 0, 0], [1, 1, 1]])
    assert est is not None and est.binary and est.method == "wilson-clustered"
    assert (est.pass_at_k, est.pass_all_k, est.flaky) == (0.75, 0.5, 1)
    assert stats.estimate([[1.0], [0.0]]).pass_at_k is None  # one trial: no pass@k to speak of


def test_newcombe_interval_reduces_to_the_point_without_discordance_and_contains_the_estimate() -> None:
    low, high = stats.newcombe_paired(40, 0, 0, 10)
    assert low < 0.0 < high  # no change seen, but some could hide
    diff = stats.paired_binary(60, 25, 5, 10)
    assert diff.ci[0] < diff.delta == -0.2 < diff.ci[1] < 0
    assert diff.p_value == pytest.approx(sp.binomtest(5, 30, 0.5).pvalue)


def test_holm_against_its_definition() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    assert stats.holm(p, 0.05) == [True, False, False, True]  # 0.005<=.0125, 0.01<=.0167, 0.03>.025: stop
    assert stats.holm([0.02, 0.02], 0.05) == [True, True]
    assert stats.bonferroni([0.02, 0.02], 0.05) == [True, True]
    assert stats.holm([0.03, 0.04], 0.05) == [False, False]


def test_status_follows_the_interval_and_max_drop() -> None:
    assert stats.status((-0.13, -0.03), 0.0, True) == "regressed"
    assert stats.status((-0.13, -0.03), 0.0, False) == "uncertain"  # not significant once adjusted
    assert stats.status((-0.04, 0.05), 0.0, False) == "uncertain"
    assert stats.status((-0.04, 0.05), 0.05, False) == "unchanged"
    assert stats.status((0.01, 0.05), 0.0, False) == "improved"


# ---- calibration against truth ----


def _coverage(draw, runs: int = RUNS) -> float:
    """Share of runs whose 95% interval covers the truth; `draw` gives (values by item, true rate)."""
    hits = 0
    for _ in range(runs):
        values, truth = draw()
        est = stats.estimate(values)
        assert est is not None
        hits += est.ci[0] <= truth <= est.ci[1]
    return hits / runs


def _binary(rng: np.random.Generator, items: int, trials: int, rate: float, spread: float = 0.0) -> list[list[float]]:
    """Pass/fail trials of an agent whose items have pass rates drawn around `rate` (Beta, mean `rate`)."""
    if spread:
        concentration = 1.0 / spread
        p = rng.beta(rate * concentration, (1 - rate) * concentration, size=items)
    else:
        p = np.full(items, rate)
    return rng.binomial(1, np.repeat(p[:, None], trials, axis=1)).astype(float).tolist()


def _continuous(rng: np.random.Generator, items: int, trials: int, mean: float) -> list[list[float]]:
    """Scores in [0, 1]: item means ~ Beta around `mean`, trials ~ Beta around the item's mean."""
    mu = rng.beta(4 * mean, 4 * (1 - mean), size=items)
    shape = np.ones((1, trials))
    return rng.beta(10 * mu[:, None] * shape, 10 * (1 - mu[:, None]) * shape).tolist()


def _any_agent(rng: np.random.Generator) -> tuple[list[list[float]], float]:
    """An agent with a pass rate anywhere in [0.5, 0.95], on 30 to 100 items."""
    rate = float(rng.uniform(0.5, 0.95))
    return _binary(rng, int(rng.integers(30, 101)), 1, rate), rate


CALIBRATION = [
    # (label, draw: rng -> (values by item, true rate))
    ("0/1 K=1, 30-100 items, rate in [0.5, 0.95]", _any_agent),
    ("0/1 K=1, 60 items at 0.9", lambda rng: (_binary(rng, 60, 1, 0.9), 0.9)),
    ("0/1 K=5, 40 items around 0.7", lambda rng: (_binary(rng, 40, 5, 0.7, spread=0.5), 0.7)),
    ("0/1 K=5, 40 items at 0.7 (no item effect)", lambda rng: (_binary(rng, 40, 5, 0.7), 0.7)),
    ("0/1 K=5, 30 items around 0.9", lambda rng: (_binary(rng, 30, 5, 0.9, spread=0.3), 0.9)),
    ("continuous K=1, 50 items", lambda rng: (_continuous(rng, 50, 1, 0.4), 0.4)),
    ("continuous K=5, 40 items", lambda rng: (_continuous(rng, 40, 5, 0.6), 0.6)),
]


@pytest.mark.parametrize(("label", "draw"), CALIBRATION, ids=[c[0] for c in CALIBRATION])
def test_95_percent_intervals_cover_the_true_rate(label: str, draw) -> None:
    rng = np.random.default_rng(1200 + len(label))
    coverage = _coverage(lambda: draw(rng))
    assert 0.93 <= coverage <= 0.97, f"{label}: {coverage:.3f}"


def test_wilson_coverage_exactly_over_a_grid_of_sizes_and_rates() -> None:
    """Without simulation noise: the binomial coverage of the one-trial 0/1 interval, n 20-200, p 0.05-0.95.

    Wilson's coverage oscillates with n and p (a discrete binomial): about 0.95 on average, rarely below
    0.93 (30 items at 0.7 is one such point: 0.930), never far below.
    """
    coverages = []
    for n in range(20, 201, 5):
        for p in np.arange(0.05, 0.951, 0.01):
            pmf = sp.binom.pmf(np.arange(n + 1), n, p)
            covered = [stats.wilson(k / n, n)[0] <= p <= stats.wilson(k / n, n)[1] for k in range(n + 1)]
            coverages.append(float(pmf[covered].sum()))
    coverages_arr = np.array(coverages)
    assert 0.945 <= coverages_arr.mean() <= 0.955
    assert coverages_arr.min() >= 0.915
    assert (coverages_arr < 0.93).mean() <= 0.02


def _paired_counts(base: np.ndarray, head: np.ndarray) -> tuple[int, int, int, int]:
    both = int((base & head).sum())
    regressed = int((base & ~head).sum())
    improved = int((~base & head).sum())
    return both, regressed, improved, len(base) - both - regressed - improved


def _regressed(diffs: list[stats.Difference], max_drop: float = 0.0, confidence: float = 0.95) -> list[bool]:
    alpha = (1 - confidence) / 2
    rejected = stats.holm([d.below(-max_drop) for d in diffs], alpha)
    return [stats.status(d.ci, max_drop, r) == "regressed" for d, r in zip(diffs, rejected, strict=True)]


# ---- exact sizes of the 0/1 regression test, by enumeration (bench/exact.py) ----

RATES = [0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0]  # discordance rates: pairs that differ


@pytest.mark.parametrize("n", [20, 50, 100])
@pytest.mark.parametrize("max_drop", [0.0, 0.02, 0.05, 0.1])
def test_one_entry_is_called_regressed_at_most_2_75_percent_exactly(n: int, max_drop: float) -> None:
    """The chance an agent exactly max_drop worse is called regressed, summed over every outcome."""
    sizes = [exact.size(n, max(rate, max_drop + 1e-9), max_drop) for rate in RATES]
    assert max(sizes) <= 0.0275, sizes
    if max_drop == 0.0:  # exact and conditional on the discordant pairs: never above the nominal 2.5%
        assert max(sizes) <= 0.025


@pytest.mark.parametrize("n", [20, 50, 100])
@pytest.mark.parametrize("max_drop", [0.0, 0.05])
def test_ten_entries_under_holm_fail_at_most_2_75_percent_exactly(n: int, max_drop: float) -> None:
    sizes = [exact.family_size(n, [(10, max(rate, max_drop + 1e-9))], max_drop) for rate in RATES]
    assert max(sizes) <= 0.0275, sizes


@pytest.mark.parametrize("n", [20, 50])
@pytest.mark.parametrize("still", [0.0, 0.01, 0.05])
@pytest.mark.parametrize("max_drop", [0.0, 0.05])
def test_tarone_keeps_the_family_wise_rate_when_entries_barely_move(n: int, still: float, max_drop: float) -> None:
    """One entry at any discordance rate with nine that rarely (or never) move: the nine leave the family
    when they cannot reach the level, and the family-wise rate stays at most 2.5%."""
    sizes = [exact.family_size(n, [(1, max(rate, max_drop + 1e-9)), (9, max(still, max_drop + 1e-9))], max_drop)
             for rate in RATES]
    assert max(sizes) <= 0.025, sizes


def test_the_enumerated_family_rate_is_that_of_holm_itself() -> None:
    """bench/exact.py's grouped sum against every outcome of three entries on 6 items, through stats.holm."""
    n, rate = 6, 0.7
    outcomes = [(b, c) for b in range(n + 1) for c in range(n + 1 - b)]
    pmf = {(b, c): sp.multinomial.pmf([b, c, n - b - c], n, [rate / 2, rate / 2, 1 - rate]) for b, c in outcomes}
    diffs = {o: stats.paired_binary(0, o[0], o[1], n - o[0] - o[1]) for o in outcomes}
    brute = 0.0
    for triple in itertools.product(outcomes, repeat=3):
        ds = [diffs[o] for o in triple]
        if any(stats.holm([d.below(0.0) for d in ds], 0.025, [d.least_p(0.0) for d in ds])):
            brute += math.prod(pmf[o] for o in triple)
    assert brute > 0.0
    assert exact.family_size(n, [(3, rate)]) == pytest.approx(brute, rel=1e-9)


def test_four_of_four_discordant_pairs_are_no_regression() -> None:
    """The audit's case: 4 of 4 discordant pairs against head have probability 1/16 under no change."""
    diff = stats.paired_binary(both=1, regressed=4, improved=0, neither=15)
    assert diff.below(0.0) == pytest.approx(1 / 16)
    assert stats.holm([diff.below(0.0)], 0.025) == [False]


def test_entries_that_cannot_move_leave_holms_family() -> None:
    """Three entries constant on both runs and one with 9 of 10 discordant pairs against head: alone in the
    family (Tarone) its exact p = 11/1024 is significant; among four (Holm's 0.025/4) it was not."""
    drop = stats.paired_binary(31, 9, 1, 9)
    constant = stats.paired_binary(50, 0, 0, 0)
    p = [drop.below(0.0), *(constant.below(0.0) for _ in range(3))]
    least = [drop.least_p(0.0), *(constant.least_p(0.0) for _ in range(3))]
    assert p[0] == pytest.approx(11 / 1024)
    assert stats.holm(p, 0.025) == [False] * 4
    assert stats.holm(p, 0.025, least) == [True, False, False, False]
    assert stats.bonferroni(p, 0.025, least) == [True, False, False, False]


@pytest.mark.parametrize("correction", ["holm", "bonferroni"])
def test_adjusted_p_values_reject_exactly_what_the_correction_rejects(correction: str) -> None:
    rng = np.random.default_rng(31)
    decide = stats.holm if correction == "holm" else stats.bonferroni
    for _ in range(300):
        p = (rng.random(6) ** 3).tolist()
        least = [v * float(rng.random()) ** 2 for v in p]  # the smallest attainable p is at most the p
        adjusted = stats.adjusted(p, 0.025, correction, least)
        assert [a <= 0.025 for a in adjusted] == decide(p, 0.025, least)


def test_tangos_score_statistic_matches_its_definition() -> None:
    """The restricted maximum-likelihood rate in the variance, found here by maximising the likelihood."""
    n, b, c, bound = 30, 7, 2, -0.1
    rates = np.linspace(-bound + 1e-9, (1 - bound) / 2 - 1e-9, 200_001)
    loglik = b * np.log(rates) + c * np.log(rates + bound) + (n - b - c) * np.log(1 - 2 * rates - bound)
    rate = rates[loglik.argmax()]
    z = (c - b - n * bound) / math.sqrt(n * (2 * rate + bound * (1 - bound)))
    assert stats.tango_z(b, c, n, bound) == pytest.approx(z, rel=1e-4)


def test_a_drop_from_085_to_065_on_100_items_is_found() -> None:
    rng = np.random.default_rng(123)
    found = 0
    for _ in range(RUNS):
        base, head = rng.random(100) < 0.85, rng.random(100) < 0.65
        found += _regressed([stats.paired_binary(*_paired_counts(base, head))])[0]
    assert found / RUNS >= 0.80


def test_paired_interval_covers_the_true_difference() -> None:
    rng = np.random.default_rng(124)
    hits = 0
    for _ in range(RUNS):
        base, head = rng.random(80) < 0.8, rng.random(80) < 0.7
        diff = stats.paired_binary(*_paired_counts(base, head))
        hits += diff.ci[0] <= -0.1 <= diff.ci[1]
    assert 0.93 <= hits / RUNS <= 0.97


def _one_by_one_and_folded(values: list[float]) -> list[tuple[str, float, float]]:
    """Each moment's name, its value from adding `values` one item at a time, and from folding batches of 64."""
    one_by_one, folded = stats.Moments(), stats.Moments()
    for value in values:
        one_by_one.add_item([value])
    for start in range(0, len(values), 64):
        folded.add_each(values[start:start + 64])
    return [(name, getattr(one_by_one, name), getattr(folded, name)) for name in stats.Moments.__slots__]


@pytest.mark.parametrize("seed", range(5))
def test_folding_many_single_scores_gives_the_moments_of_adding_them_one_item_at_a_time(seed: int) -> None:
    # Without repeats the aggregator folds each entry's scores in batches: every sum must be the same float
    rng = np.random.default_rng(seed)
    values = [float(v) for v in rng.choice([0.0, 1.0, 0.25, 1 / 3, 0.1 + 0.2, 5e-324, -0.0, -0.5, 2.5], size=300)]
    if seed == 1:
        values = [float("nan"), *values, float("inf")]
    if seed == 2:
        values = [float(v) for v in rng.integers(0, 2, size=300)]  # binary: Wilson, all/any counts
    for name, a, b in _one_by_one_and_folded(values):
        assert a == b or (math.isnan(a) and math.isnan(b)), name


@pytest.mark.parametrize("first", [0.0, 1.0, -0.0])
@pytest.mark.parametrize("fraction_at", [None, 3, 150])
def test_folding_0_1_scores_by_counting_gives_the_very_floats_of_adding_them(first: float,
                                                                             fraction_at: int | None) -> None:
    # 0/1 batches are summed by counting: every sum, and the sign of every zero, as one item at a time
    rng = np.random.default_rng(7)
    values = [first, *(float(v) for v in rng.choice([0.0, 1.0, -0.0], size=300))]
    if fraction_at is not None:  # the sums are no whole numbers after it: counting must not be used
        values[fraction_at] = 0.1
    for name, a, b in _one_by_one_and_folded(values):
        assert repr(a) == repr(b), name  # repr tells -0.0 from 0.0
