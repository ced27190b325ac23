"""Exact false-regression rates of the 0/1 comparison, by enumeration (no simulation; needs scipy).

An entry's regression test on n paired 0/1 items sees b base-1/head-0 pairs and c base-0/head-1 pairs,
a trinomial with rates (p_b, p_c). On the boundary of "no regression beyond max_drop" (p_c - p_b = -max_drop)
with a discordance rate r = p_b + p_c, the chance the test rejects is a finite sum over (b, c): that is the
test's size there, and its worst case over r is the size. For a family of entries corrected with Holm and
Tarone's modification (evalgate.decide.stats.holm), each entry's smallest attainable p-value (`least_p`) depends on
its discordant pairs D = b + c only; entries are grouped by the largest k with least_p <= alpha/k, and the
family-wise rate is summed exactly over how many entries of each group there are (independent entries).

Used by tests/test_stats.py and bench/calibration.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from functools import lru_cache

import numpy as np
from scipy import stats as sp

from evalgate.decide import stats

ALPHA = 0.025  # one-sided, the comparison's at 95%


@lru_cache(maxsize=64)
def _table(n: int, max_drop: float) -> tuple[np.ndarray, np.ndarray]:
    """p[b, c] of the regression test (1 where b + c > n) and least[D] its smallest p given D discordant."""
    p = np.ones((n + 1, n + 1))
    for b in range(n + 1):
        for c in range(n + 1 - b):
            p[b, c] = stats.paired_binary(0, b, c, n - b - c).below(-max_drop)
    least = np.array([stats.paired_binary(0, d, 0, n - d).least_p(-max_drop) for d in range(n + 1)])
    return p, least


def _trinomial(n: int, max_drop: float, rate: float) -> np.ndarray:
    """P(b, c) on the null's boundary: p_b - p_c = max_drop, p_b + p_c = rate."""
    p_b, p_c = (rate + max_drop) / 2.0, (rate - max_drop) / 2.0
    b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    valid = b + c <= n
    counts = np.stack([b[valid], c[valid], n - b[valid] - c[valid]], axis=1)
    out = np.zeros((n + 1, n + 1))
    out[valid] = sp.multinomial.pmf(counts, n, [p_b, p_c, max(0.0, 1.0 - p_b - p_c)])
    return out


def size(n: int, rate: float, max_drop: float = 0.0, level: float = ALPHA) -> float:
    """P(one entry is called regressed) on the boundary of the null, exactly."""
    p, _ = _table(n, max_drop)
    return float(_trinomial(n, max_drop, rate)[p <= level].sum())


def _classes(least: np.ndarray, m: int, alpha: float) -> np.ndarray:
    """Per D: the largest k in 1..m with least_p(D) <= alpha / k, 0 if none."""
    ks = np.arange(1, m + 1)
    return np.array([int(ks[lp <= alpha / ks].max()) if lp <= alpha else 0 for lp in least])


def _group_tables(n: int, rate: float, max_drop: float, m: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """For one entry: P(class = k) and h[k, s] = P(class = k and p <= alpha / s)."""
    p, least = _table(n, max_drop)
    joint = _trinomial(n, max_drop, rate)
    classes = _classes(least, m, alpha)
    d = np.add.outer(np.arange(n + 1), np.arange(n + 1))
    class_of = np.where(d <= n, classes[np.minimum(d, n)], -1)
    prob = np.array([joint[class_of == k].sum() for k in range(m + 1)])
    h = np.zeros((m + 1, m + 1))
    for k in range(m + 1):
        for s in range(1, m + 1):
            h[k, s] = joint[(class_of == k) & (p <= alpha / s)].sum()
    return prob, h


def _compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def family_size(n: int, groups: Sequence[tuple[int, float]], max_drop: float = 0.0, alpha: float = ALPHA) -> float:
    """P(Holm with Tarone's modification calls any entry regressed), entries independent, each on the
    null's boundary; groups: (how many entries, their discordance rate)."""
    m = sum(count for count, _ in groups)
    tables = [_group_tables(n, rate, max_drop, m, alpha) for _, rate in groups]
    present = sorted({k for prob, _ in tables for k in range(m + 1) if prob[k] > 0.0})
    per_group = [[(comp, math.factorial(count) / math.prod(math.factorial(x) for x in comp))
                  for comp in _compositions(count, len(present))] for count, _ in groups]
    rejected = 0.0
    for choice in _product(per_group):
        counts = np.zeros(m + 2)
        for comp, _ in choice:
            for k, x in zip(present, comp, strict=True):
                counts[k] += x
        able = np.cumsum(counts[::-1])[::-1]  # able[k]: entries of class >= k
        family_k = next(k for k in range(1, m + 1) if able[k] <= k)
        members = int(able[family_k])
        probability, quiet = 1.0, 1.0
        for (comp, ways), (prob, h) in zip(choice, tables, strict=True):
            probability *= ways * math.prod(prob[k] ** x for k, x in zip(present, comp, strict=True))
            quiet *= ways * math.prod((prob[k] - (h[k, members] if k >= family_k and members else 0.0)) ** x
                                      for k, x in zip(present, comp, strict=True))
        rejected += probability - quiet
    return rejected


def _product(lists: Sequence[Sequence[tuple[tuple[int, ...], float]]]) -> Iterator[list[tuple[tuple[int, ...], float]]]:
    if not lists:
        yield []
        return
    for head in lists[0]:
        for rest in _product(lists[1:]):
            yield [head, *rest]
