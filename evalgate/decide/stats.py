"""Error bars and paired comparisons: pure functions, no I/O, standard library only.

The methods (docs/statistics.md says why each was chosen, and what the simulations showed):

- one run, K = 1: the mean of the scores with a Student t interval (mean ± t(n-1) · s/√n, clipped to
  [0, 1]); for 0/1 scores the Wilson score interval, which behaves near 0 and 1.
- repeats (K > 1 trials per item): trials of one item are correlated, so the standard error is clustered by
  item (the cluster-robust form; with equal K it is sd(item means)/√items) and the t interval has items-1
  degrees of freedom; for 0/1 scores a Wilson interval on Kish's effective sample size
  n_eff = p(1-p)/SE², kept within [items, n].
- two runs on the same items: paired. 0/1 scores with one trial each: the regression test exact on the
  discordant pairs (one-sided McNemar) against no change, Tango's score test against a tolerated drop, and
  Newcombe's hybrid score interval (his method 10) shown for the difference; otherwise the paired t
  interval and tests on the differences of item means.
- many entries: Holm-Bonferroni on one-sided p-values within Tarone's family (tests that can reach the
  level), so an unchanged agent is called regressed on any entry with probability at most
  (1 - confidence) / 2 (enumerated exactly in the tests).
- repeats, 0/1 entries: pass@k (Chen et al. 2021) and pass^k (tau-bench) per item by their unbiased
  estimators over its trials, averaged over items with the clustered 0/1 interval, for k = 1..K.
- power: the drop a comparison detects (`detectable_drop`) and the items it needs (`items_needed`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, reduce
from itertools import repeat
from operator import add, mul, sub

Interval = tuple[float, float]
# The quantile every run's 95% error bars use, as `NormalDist().inv_cdf(0.975)` gives it (tests/test_stats.py
# holds them equal): importing `statistics` (fractions, decimal) would cost every merge and report 2.5 ms
# that only another confidence needs.
_KNOWN_QUANTILES = {0.975: 1.9599639845400536}


# ---- distributions ----


def normal_quantile(p: float) -> float:
    known = _KNOWN_QUANTILES.get(p)
    if known is not None:
        return known
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with df degrees of freedom."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The p quantile of Student's t (bisection on the CDF, to ~1e-12)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must lie in (0, 1)")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0


EXACT_CDF_UP_TO = 10_000  # integer arithmetic costs O(k·n) bit operations: fine here, minutes at 10**6


def binomial_cdf_half(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2): exactly (integer arithmetic, one rounding) up to
    EXACT_CDF_UP_TO trials; beyond, to about 1e-13 relative, in time linear in k at worst (a baseline's
    results file may hold millions of discordant pairs)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n > EXACT_CDF_UP_TO:
        return _binomial_cdf_half_large(k, n)
    term = total = 1
    for i in range(k):
        term = term * (n - i) // (i + 1)
        total += term
    return total / (1 << n)


def _binomial_cdf_half_large(k: int, n: int) -> float:
    """The sum from its largest term C(n, k) / 2**n down, each term the one above times i / (n - i + 1),
    stopped once terms no longer change the sum."""
    if 2 * k > n:  # the upper tail is the short sum: P(X <= k) = 1 - P(X <= n - k - 1)
        return 1.0 - _binomial_cdf_half_large(n - k - 1, n)
    total = term = 1.0
    for i in range(k, 0, -1):
        term *= i / (n - i + 1)
        total += term
        if term < total * 1e-17:
            break
    return min(1.0, math.exp(_log_binomial_pmf_half(k, n) + math.log(total)))


def _log_binomial_pmf_half(k: int, n: int) -> float:
    """log(C(n, k) / 2**n) by Loader's saddle-point form (R's dbinom): differences of log-gammas
    lose about n·1e-16 of it to cancellation, this keeps about 1e-15 at any n."""
    if k == 0 or k == n:
        return -n * math.log(2.0)
    half = n / 2.0
    deviance = _stirling_error(n) - _stirling_error(k) - _stirling_error(n - k) - _bd0(k, half) - _bd0(n - k, half)
    return deviance - 0.5 * (math.log(2.0 * math.pi) + math.log(k) + math.log1p(-k / n))


def _stirling_error(n: int) -> float:
    """log(n!) - log(sqrt(2πn) (n/e)^n): the error of Stirling's formula."""
    if n <= 15:
        return math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n - 0.5 * math.log(2.0 * math.pi)
    nn = float(n) * n
    s0, s1, s2, s3, s4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
    if n > 500:
        return (s0 - s1 / nn) / n
    if n > 80:
        return (s0 - (s1 - s2 / nn) / nn) / n
    if n > 35:
        return (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n
    return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n


def _bd0(x: float, mean: float) -> float:
    """x·log(x/mean) + mean - x, without its cancellation when x is near the mean."""
    if abs(x - mean) < 0.1 * (x + mean):
        v = (x - mean) / (x + mean)
        total = (x - mean) * v
        term = 2.0 * x * v
        for j in range(1, 1000):
            term *= v * v
            following = total + term / (2 * j + 1)
            if following == total:
                return following
            total = following
        return total
    return x * math.log(x / mean) + mean - x


# ---- one run ----


def wilson(p: float, n: float, confidence: float = 0.95, z: float | None = None) -> Interval:
    """Wilson score interval for a proportion p observed on n (possibly effective, non-integer) trials;
    z: the quantile, when not the normal one of `confidence` (a t quantile for continuous scores)."""
    if n <= 0:
        return (0.0, 1.0)
    if z is None:
        z = normal_quantile((1.0 + confidence) / 2.0)
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = z * math.sqrt(max(p * (1.0 - p) / n + z2 / (4.0 * n * n), 0.0)) / denominator
    low = 0.0 if p <= 0.0 else max(0.0, centre - half)  # exact ends at 0 and 1, not 1 - 1e-16
    high = 1.0 if p >= 1.0 else min(1.0, centre + half)
    return (low, high)


def clustered_wilson(p: float, stderr: float | None, items: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson's interval on Kish's effective sample size n_eff = p(1-p)/SE², kept within [items, n]: a rate
    of n trials clustered in `items` items, SE its cluster-robust standard error (None: fewer than two items)."""
    if stderr and 0.0 < p < 1.0:
        n_eff = min(float(n), max(float(items), p * (1.0 - p) / (stderr * stderr)))
    elif 0.0 < p < 1.0:
        n_eff = float(n)  # identical item means: no sign of clustering
    else:
        n_eff = float(items)  # all 0 or all 1: clustering unknown, assume the worst
    return wilson(p, n_eff, confidence)


def t_interval(mean: float, stderr: float, df: float, confidence: float = 0.95,
               low: float = 0.0, high: float = 1.0) -> Interval:
    half = t_quantile((1.0 + confidence) / 2.0, df) * stderr
    return (min(high, max(low, mean - half)), max(low, min(high, mean + half)))


# Not frozen, though nothing changes one: a frozen dataclass's generated methods cost every command's
# start about 0.5 ms each (nothing hashes these, which frozen would allow).
@dataclass(slots=True)
class Estimate:
    """An entry's average with its error bar."""

    mean: float
    n: int  # scored results (trials)
    items: int  # items contributing (clusters)
    stderr: float | None
    ci: Interval | None
    method: str  # "wilson", "t", "wilson-clustered", "t-clustered"
    binary: bool
    pass_at_k: float | None = None  # 0/1 with K > 1: share of items with at least one trial scoring 1
    pass_all_k: float | None = None  # 0/1 with K > 1: share of items where every trial scored 1
    flaky: int = 0  # 0/1 with K > 1: items whose trials disagree


_POSITIVE = (0.0).__lt__  # value > 0, as a C call (False for NaN)
_EXACT = 2.0**53  # floats hold every whole number up to here


def whole_steps(total: float, steps: int) -> bool:
    """Whether adding `steps` values of -1, 0 or 1 to `total`, left to right, stays in whole numbers that
    floats hold exactly: the sum is then `total` plus their count, whatever their order (and -0.0 is
    never made from a +0.0 start, which a total of -0.0 could, so that one is left out)."""
    return total.is_integer() and abs(total) + steps <= _EXACT and (total != 0.0 or math.copysign(1.0, total) > 0)


class Moments:
    """Per-item sums folded in one item at a time: enough for a clustered standard error.

    Values are shifted by the first one seen, so a constant entry has exactly zero variance and
    nearly-constant ones lose no precision.
    """

    __slots__ = ("binary", "bounded", "cross", "items", "items_all", "items_any", "n", "shift", "square",
                 "started", "sum", "sum_n2")

    def __init__(self) -> None:
        self.shift = 0.0
        self.started = False
        self.items = 0
        self.n = 0
        self.sum = 0.0  # Σ S'_i, S'_i the item's sum of shifted values
        self.square = 0.0  # Σ S'_i²
        self.cross = 0.0  # Σ S'_i · n_i
        self.sum_n2 = 0  # Σ n_i²
        self.binary = True
        self.bounded = True  # every value within [0, 1]
        self.items_all = 0
        self.items_any = 0

    def add_item(self, values: Sequence[float]) -> None:
        """One item's scored values (its trials, or its one score)."""
        count = len(values)
        if not count:
            return
        if not self.started:
            self.shift = values[0] if math.isfinite(values[0]) else 0.0
            self.started = True
        raw = 0.0
        for value in values:
            raw += value
            if value != 0.0 and value != 1.0:
                self.binary = False
                if not 0.0 <= value <= 1.0:
                    self.bounded = False
        shifted = raw - self.shift * count
        self.items += 1
        self.n += count
        self.sum += shifted
        self.square += shifted * shifted
        self.cross += shifted * count
        self.sum_n2 += count * count
        if raw == count:
            self.items_all += 1
        if raw > 0:
            self.items_any += 1

    def add_each(self, values: Sequence[float]) -> None:
        """`add_item([value])` for each value in order (items of one score each, the case without repeats):
        the same floats, added left to right in the same order, by C loops (`reduce`, `map`) instead of
        a Python call and list per value."""
        if not values:
            return
        if not self.started:
            self.shift = values[0] if math.isfinite(values[0]) else 0.0
            self.started = True
        unrepeated = self.n == self.items  # every count so far 1: `cross` got the very additions `sum` got
        ones = values.count(1.0)
        zeros = values.count(0.0)  # -0.0 too
        count = len(values)
        if (ones + zeros == count and (self.shift == 1.0 or self.shift == 0.0) and whole_steps(self.sum, count)
                and whole_steps(self.square, count) and (unrepeated or whole_steps(self.cross, count))):
            # 0/1 scores (a gate's, most checks') shifted by 0 or 1: each shifted value is -1, 0 or 1 and its
            # square 0 or 1, so the three sums are counts, the very floats the loops below give
            moved, squares = (ones, ones) if self.shift == 0.0 else (-zeros, zeros)
            self.sum += moved
            self.square += squares
            self.cross = self.sum if unrepeated else self.cross + moved
        else:
            shifted = list(map(sub, values, repeat(self.shift)))
            self.sum = reduce(add, shifted, self.sum)
            self.square = reduce(add, map(mul, shifted, shifted), self.square)
            # shifted * count, count being 1
            self.cross = self.sum if unrepeated else reduce(add, shifted, self.cross)
        self.items_all += ones
        self.items_any += ones if ones + zeros == count else sum(map(_POSITIVE, values))
        if self.binary and ones + zeros != count:  # -0.0 counts as 0.0, NaN as neither
            self.binary = False
        if self.bounded and ones + zeros != count and not (min(values) >= 0.0 and max(values) <= 1.0):
            self.bounded = False  # NaN fails both comparisons
        self.items += count
        self.n += count
        self.sum_n2 += count

    @property
    def repeated(self) -> bool:
        return self.n > self.items

    def estimate(self, confidence: float = 0.95, mean: float | None = None) -> Estimate | None:
        """mean: the entry's average as the verdict computed it (left-to-right sum); else from these sums."""
        if self.n == 0:
            return None
        shifted_mean = self.sum / self.n
        if mean is None:
            mean = self.shift + shifted_mean
        repeated = self.repeated
        extra: dict[str, float | int] = {}
        if self.binary and repeated:
            extra = {"pass_at_k": self.items_any / self.items, "pass_all_k": self.items_all / self.items,
                     "flaky": self.items_any - self.items_all}
        if not math.isfinite(mean):
            return Estimate(mean, self.n, self.items, None, None, "t", self.binary, **extra)  # type: ignore[arg-type]
        stderr: float | None = None
        if self.items >= 2:
            residual = self.square - 2.0 * shifted_mean * self.cross + shifted_mean * shifted_mean * self.sum_n2
            variance = self.items / (self.items - 1) * max(residual, 0.0) / (self.n * self.n)
            stderr = math.sqrt(variance)
        if self.binary:
            p = min(1.0, max(0.0, mean))
            ci = clustered_wilson(p, stderr, self.items, self.n, confidence) if repeated else wilson(p, self.n,
                                                                                                     confidence)
            method = "wilson-clustered" if repeated else "wilson"
            return Estimate(mean, self.n, self.items, stderr, ci, method, True, **extra)  # type: ignore[arg-type]
        method = "t-clustered" if repeated else "t"
        if stderr is None:
            return Estimate(mean, self.n, self.items, None, (0.0, 1.0), method, False)
        if self.bounded and stderr > 0.0 and 0.0 < mean < 1.0:
            # scores in [0, 1]: Wilson's interval on the effective size p(1-p)/SE² with the t quantile. Near a
            # bound (mostly 1s, a few 0s) the symmetric t interval under-covers; in the middle the two agree.
            n_eff = mean * (1.0 - mean) / (stderr * stderr)
            z = t_quantile((1.0 + confidence) / 2.0, self.items - 1)
            return Estimate(mean, self.n, self.items, stderr, wilson(mean, n_eff, z=z), "wilson-t" + method[1:],
                            False)
        ci = t_interval(mean, stderr, self.items - 1, confidence)
        return Estimate(mean, self.n, self.items, stderr, ci, method, False)


def estimate(values_by_item: Sequence[Sequence[float]], confidence: float = 0.95) -> Estimate | None:
    """The error bar of an entry from its scored values grouped by item."""
    moments = Moments()
    for values in values_by_item:
        moments.add_item(values)
    return moments.estimate(confidence)


# ---- pass@k and pass^k over repeated trials ----


PASS_K_ID = ".pass^k"  # `<entry id>.pass^k`: how a comparison and `compare.entries` name an entry's pass^k


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chen et al. (2021): the chance that at least one of k trials, drawn without replacement from an item's n
    trials of which c passed, passed: 1 - C(n-c, k)/C(n, k), unbiased for 1 - (1-p)^k. One rounding."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n, got n={n}, c={c}, k={k}")
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total


def pass_all_k(n: int, c: int, k: int) -> float:
    """tau-bench's pass^k (Yao et al. 2024): the chance that all k trials, drawn without replacement from an
    item's n trials of which c passed, passed: C(c, k)/C(n, k), unbiased for p^k. One rounding."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n and 0 <= c <= n, got n={n}, c={c}, k={k}")
    return math.comb(c, k) / math.comb(n, k)


@dataclass(slots=True)  # not frozen: see Estimate
class PassK:
    """pass@k and pass^k at one k: the average over the items with at least k trials of each item's unbiased
    estimate, with a 95% interval clustered by item (`item_rate`)."""

    k: int
    items: int
    pass_at_k: float
    pass_at_k_ci95: Interval
    pass_all_k: float
    pass_all_k_ci95: Interval


def item_rate(values: Sequence[tuple[float, int, int]], confidence: float = 0.95) -> tuple[float, Interval]:
    """The average of per-item rates in [0, 1] and its interval: (value, weight, trials) rows, `weight` items
    each holding `trials` trials. The standard error is that of the item means (items are the clusters); the
    interval is the one evalgate gives a clustered 0/1 rate: Wilson on Kish's effective size, kept within
    [items, trials] (`clustered_wilson`)."""
    items = trials = 0
    total = 0.0
    for value, weight, held in values:
        items += weight
        trials += weight * held
        total += value * weight
    if not items:
        return math.nan, (0.0, 1.0)
    mean = min(1.0, max(0.0, total / items))
    stderr: float | None = None
    if items >= 2:
        square = 0.0
        for value, weight, _ in values:
            square += weight * (value - mean) ** 2
        stderr = math.sqrt(square / (items - 1) / items)
    return mean, clustered_wilson(mean, stderr, items, trials, confidence)


def pass_k_curve(counts: Mapping[tuple[int, int], int], confidence: float = 0.95) -> list[PassK]:
    """pass@k and pass^k for k = 1..K, K the most trials an item has. counts: items by (n, c), n an item's
    trials (an errored trial counts, as a failure) and c those that passed. An item with fewer than k trials
    is left out at that k (it says nothing of k trials in a row)."""
    rows = sorted((n, c, w) for (n, c), w in counts.items() if n >= 1 and w > 0)  # sorted: one sum, one float
    most = max((n for n, _, _ in rows), default=0)
    curve = []
    for k in range(1, most + 1):
        held = [(n, c, w) for n, c, w in rows if n >= k]
        at_k, at_ci = item_rate([(pass_at_k(n, c, k), w, n) for n, c, w in held], confidence)
        all_k, all_ci = item_rate([(pass_all_k(n, c, k), w, n) for n, c, w in held], confidence)
        curve.append(PassK(k, sum(w for _, _, w in held), at_k, at_ci, all_k, all_ci))
    return curve


# ---- two runs on the same items ----


@dataclass(slots=True)  # not frozen: see Estimate
class Difference:
    """head - base on matched items: the estimate, its interval, a two-sided p-value of no change, and two
    one-sided tests: `below(bound)`, the p-value that head - base < bound (a regression beyond it), and
    `above(bound)`, that head - base > bound (a drop smaller than it: non-inferiority). `least_p(bound)` is
    the smallest p-value `below(bound)` could give on data like these (Tarone's modification, in `holm`)."""

    delta: float
    ci: Interval
    p_value: float | None
    method: str  # "mcnemar-newcombe" or "paired-t"
    pairs: int
    below: Callable[[float], float]
    above: Callable[[float], float]
    least_p: Callable[[float], float]
    sd: float = 0.0  # of the paired differences (n - 1): what the detectable drop is computed from


def mcnemar_p(regressed: int, improved: int) -> float:
    """Exact McNemar: min(1, 2 · P(X <= min(b, c))), X ~ Binomial(b + c, 1/2)."""
    discordant = regressed + improved
    if discordant == 0:
        return 1.0
    return min(1.0, 2.0 * binomial_cdf_half(min(regressed, improved), discordant))


def normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def newcombe_paired(both: int, regressed: int, improved: int, neither: int, confidence: float = 0.95) -> Interval:
    """Newcombe's hybrid score interval (1998, method 10) for head - base of paired 0/1 outcomes, with the
    continuity-corrected correlation φ of his worked example (plain φ narrows it with few discordant pairs).

    both: 1 on both runs; regressed: base 1, head 0; improved: base 0, head 1; neither: 0 on both.
    """
    n = both + regressed + improved + neither
    if n == 0:
        return (-1.0, 1.0)
    p_head, p_base = (both + improved) / n, (both + regressed) / n
    l_head, u_head = wilson(p_head, n, confidence)
    l_base, u_base = wilson(p_base, n, confidence)
    margins = (both + regressed) * (improved + neither) * (both + improved) * (regressed + neither)
    phi = 0.0
    if margins:
        cross = both * neither - regressed * improved
        # Newcombe's φ̂*: a positive AD - BC less N/2, floored at 0; a negative one as it is
        phi = (max(cross - n / 2.0, 0.0) if cross > 0 else cross) / math.sqrt(margins)
    delta = p_head - p_base
    down = math.sqrt(max((p_head - l_head) ** 2 - 2.0 * phi * (p_head - l_head) * (u_base - p_base)
                         + (u_base - p_base) ** 2, 0.0))
    up = math.sqrt(max((u_head - p_head) ** 2 - 2.0 * phi * (u_head - p_head) * (p_base - l_base)
                       + (p_base - l_base) ** 2, 0.0))
    return (max(-1.0, delta - down), min(1.0, delta + up))


def tango_z(regressed: int, improved: int, n: int, bound: float, correction: float = 0.0) -> float:
    """Tango's (1998) score statistic for H0: head - base = bound on paired 0/1 outcomes, the variance taken
    at the restricted maximum-likelihood rate of base-1/head-0 pairs; `correction` moves c - b toward H0."""
    b, c = regressed, improved
    a2 = 2.0 * n
    linear = -(b + c) + (b - c) * bound + 2.0 * n * bound
    constant = -b * bound * (1.0 - bound)
    rate = (-linear + math.sqrt(max(linear * linear - 4.0 * a2 * constant, 0.0))) / (2.0 * a2)
    variance = n * (2.0 * rate + bound * (1.0 - bound))
    shift = c - b - n * bound
    shift = shift + correction if shift < -correction else shift - correction if shift > correction else 0.0
    if variance <= 0.0:
        return 0.0 if shift == 0.0 else math.copysign(math.inf, shift)
    return shift / math.sqrt(variance)


# The continuity correction of the score test: c - b moves in whole steps, and with one (not ½) the size
# stays under 2.31% at n = 20-200 for every max_drop and discordance rate (tests/test_stats.py enumerates it).
SCORE_CORRECTION = 1.0


def paired_binary(both: int, regressed: int, improved: int, neither: int, confidence: float = 0.95) -> Difference:
    """0/1 outcomes, one trial per item. The tests: against a bound of 0, exact and conditional on the
    discordant pairs (one-sided McNemar: under no change each is a regression with probability ½); against
    another bound, Tango's score test with a continuity correction of one pair."""
    n = both + regressed + improved + neither
    delta = (improved - regressed) / n if n else 0.0
    discordant = regressed + improved

    def below(bound: float) -> float:
        if n == 0:
            return 1.0
        if bound == 0.0:  # P(X >= regressed), X ~ Binomial(discordant, 1/2)
            return binomial_cdf_half(improved, discordant)
        return normal_cdf(tango_z(regressed, improved, n, bound, SCORE_CORRECTION))

    def above(bound: float) -> float:
        if n == 0:
            return 1.0
        if bound == 0.0:
            return binomial_cdf_half(regressed, discordant)
        return normal_cdf(-tango_z(regressed, improved, n, bound, SCORE_CORRECTION))

    def least_p(bound: float) -> float:
        """Given the discordant pairs, every one of them a regression: 2^-D for the exact test. The score
        test is not conditional on them (how many there are says something about the drop), so only an
        entry without any (it cannot move) leaves the family: the enumeration in tests/test_stats.py
        found Tarone's rule on 2^-D-like bounds raising the family-wise rate there."""
        if n == 0 or discordant == 0:
            return 1.0
        if bound == 0.0:
            return binomial_cdf_half(0, discordant)
        return 0.0

    sd = math.sqrt(max(discordant - n * delta * delta, 0.0) / (n - 1)) if n > 1 else 0.0
    return Difference(delta, newcombe_paired(both, regressed, improved, neither, confidence),
                      mcnemar_p(regressed, improved), "mcnemar-newcombe", n, below, above, least_p, sd)


def _never(bound: float) -> float:
    return 1.0


def paired_means(differences: Sequence[float], confidence: float = 0.95) -> Difference:
    """Paired t on per-item differences (head - base of item means)."""
    n = len(differences)
    if n == 0:
        return Difference(0.0, (-1.0, 1.0), None, "paired-t", 0, _never, _never, _never)
    total = 0.0
    for d in differences:
        total += d
    mean = total / n
    if n < 2:
        return Difference(mean, (-1.0, 1.0), None, "paired-t", n, _never, _never, _never)
    square = 0.0
    for d in differences:
        square += (d - mean) ** 2
    stderr = math.sqrt(square / (n - 1) / n)
    df = n - 1
    if stderr == 0.0:
        # every item moved by the same amount: certain, on these items. With no move at all (every
        # difference 0) the test could give nothing else, so it leaves the family (Tarone).
        p_value = 1.0 if mean == 0.0 else 0.0
        still = mean == 0.0

        def below(bound: float) -> float:
            return 0.0 if mean < bound else 1.0

        def above(bound: float) -> float:
            return 0.0 if mean > bound else 1.0

        def least(bound: float) -> float:
            return below(bound) if still else 0.0

        return Difference(mean, (mean, mean), p_value, "paired-t", n, below, above, least, 0.0)
    p_value = min(1.0, 2.0 * t_cdf(-abs(mean) / stderr, df))

    def below_t(bound: float) -> float:
        return t_cdf((mean - bound) / stderr, df)

    def above_t(bound: float) -> float:
        return t_cdf((bound - mean) / stderr, df)

    ci = t_interval(mean, stderr, df, confidence, -1.0, 1.0)
    return Difference(mean, ci, p_value, "paired-t", n, below_t, above_t, lambda bound: 0.0, stderr * math.sqrt(n))


# ---- power ----


def detectable_drop(sd: float, n: int, alpha: float, power: float = 0.8, max_drop: float = 0.0,
                    binary: bool = False) -> float | None:
    """The smallest drop of head - base the one-sided test at `alpha` finds with probability `power`, with
    n paired items whose differences have standard deviation `sd`: max_drop + (z_(1-α) + z_power)·sd/√n.
    For 0/1 differences a drop D needs at least D discordant pairs per item, so sd² is at least D(1 - D):
    the drop is then the fixed point of that bound. None with fewer than two pairs."""
    if n < 2 or not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        return None
    z = normal_quantile(1.0 - alpha) + normal_quantile(power)
    drop = max_drop + z * sd / math.sqrt(n)
    if binary:
        drop = max(drop, max_drop + (1.0 - max_drop) / 2.0)  # from above: 0 is a fixed point too when sd is 0
        for _ in range(100):  # a contraction: converges in a few steps
            following = max_drop + z * math.sqrt(max(sd * sd, drop * (1.0 - drop)) / n)
            if abs(following - drop) < 1e-12:
                break
            drop = min(following, 1.0)
    return min(drop, 1.0) if drop <= 1.0 else None


def items_needed(sd: float, drop: float, alpha: float, power: float = 0.8, max_drop: float = 0.0) -> int | None:
    """n = ((z_(1-α) + z_power)·sd / (drop - max_drop))², rounded up: items to find a drop with `power`."""
    if drop <= max_drop or not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        return None
    z = normal_quantile(1.0 - alpha) + normal_quantile(power)
    return max(2, math.ceil((z * sd / (drop - max_drop)) ** 2 - 1e-9))


# ---- many entries ----


def holm(p_values: Sequence[float], alpha: float, least: Sequence[float] | None = None) -> list[bool]:
    """Holm-Bonferroni: which hypotheses are rejected, family-wise error at most alpha.

    least: each test's smallest attainable p-value given its data's ancillary counts (the discordant pairs
    of an exact test). With them, Tarone's modification: the family is K tests, K the least k for which
    at most k tests can reach alpha/k; a test that cannot leaves the family and is never rejected.
    """
    m = len(p_values)
    members = list(range(m))
    if least is not None:
        members = tarone_family(least, alpha)
    order = sorted(members, key=lambda i: p_values[i])
    rejected = [False] * m
    for rank, index in enumerate(order):
        if p_values[index] <= alpha / (len(order) - rank):
            rejected[index] = True
        else:
            break
    return rejected


def adjusted(p_values: Sequence[float], alpha: float, correction: str = "holm",
             least: Sequence[float] | None = None) -> list[float]:
    """p-values adjusted for the correction, each rejected exactly when at most alpha: Holm's step-down
    max over j <= rank of (m - j + 1)·p_(j), Bonferroni's m·p, within Tarone's family."""
    m = len(p_values)
    if correction == "none":
        return list(p_values)
    members = list(range(m)) if least is None else tarone_family(least, alpha)
    # outside the family: K·p, K Tarone's size, above alpha since their smallest p is above alpha/K
    k = next((k for k in range(1, m + 1) if sum(1 for p in least or () if p <= alpha / k) <= k), m)
    out = [min(1.0, k * p) for p in p_values]
    size = len(members)
    if correction == "bonferroni":
        for i in members:
            out[i] = min(1.0, size * p_values[i])
        return out
    running = 0.0
    for rank, i in enumerate(sorted(members, key=lambda i: p_values[i])):
        running = max(running, min(1.0, (size - rank) * p_values[i]))
        out[i] = running
    return out


def tarone_family(least: Sequence[float], alpha: float) -> list[int]:
    """Tarone (1990): the tests kept, those whose smallest attainable p-value is at most alpha/K."""
    for k in range(1, len(least) + 1):
        able = [i for i, p in enumerate(least) if p <= alpha / k]
        if len(able) <= k:
            return able
    return list(range(len(least)))


def bonferroni(p_values: Sequence[float], alpha: float, least: Sequence[float] | None = None) -> list[bool]:
    """alpha / m for each of the m tests (m of Tarone's family with `least`, as in `holm`)."""
    members = set(range(len(p_values)) if least is None else tarone_family(least, alpha))
    return [i in members and p <= alpha / len(members) for i, p in enumerate(p_values)]


Status = str  # "improved" | "regressed" | "unchanged" | "uncertain"


def status(ci: Interval, max_drop: float, regressed: bool) -> Status:
    """regressed: the (multiplicity-adjusted) test says head - base < -max_drop; improved: the interval lies
    above 0; uncertain: a drop beyond max_drop can be neither ruled out nor shown; unchanged otherwise."""
    if regressed:
        return "regressed"
    low, _ = ci
    if low > 0.0:
        return "improved"
    if low < -max_drop:
        return "uncertain"
    return "unchanged"
