"""Calibration figures of evalgate's statistics against known truth (needs numpy and scipy).

Not a speed benchmark: it prints the exact false-regression rates of the 0/1 comparison (enumerated by
bench/exact.py, no simulation), how often 95% intervals cover the true rate, how often a real drop is
found, and the drop `evalgate plan` says a suite detects beside the share of simulated comparisons that
find it, each over RUNS simulated runs of agents with known pass rates, through evalgate.decide.stats,
evalgate.decide.comparison and evalgate.decide.planning. The tests (tests/test_stats.py, test_compare.py, test_plan.py)
assert the same figures stay within bounds.

    python bench/calibration.py [--runs 2000] [--seed 12]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from evalgate.decide import stats
from evalgate.decide.comparison import compare_results
from evalgate.decide.planning import plan_results

sys.path.insert(0, str(Path(__file__).resolve().parent))
import exact  # bench/exact.py

RATES = [0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0]


def coverage(rng: np.random.Generator, runs: int, draw: Any, truth: float | None) -> float:
    """truth None: `draw` returns (values, truth) (an agent whose rate changes from run to run)."""
    hits = 0
    for _ in range(runs):
        values = draw(rng)
        if truth is None:
            values, true_rate = values
        else:
            true_rate = truth
        est = stats.estimate(values)
        hits += est.ci[0] <= true_rate <= est.ci[1]
    return hits / runs


def any_agent(rng: np.random.Generator) -> tuple[list[list[float]], float]:
    rate = float(rng.uniform(0.5, 0.95))
    return binary(int(rng.integers(30, 101)), 1, rate)(rng), rate


def binary(items: int, trials: int, rate: float, spread: float = 0.0) -> Any:
    def draw(rng: np.random.Generator) -> list[list[float]]:
        p = rng.beta(rate / spread, (1 - rate) / spread, size=items) if spread else np.full(items, rate)
        return rng.binomial(1, np.repeat(p[:, None], trials, axis=1)).astype(float).tolist()
    return draw


def continuous(items: int, trials: int, mean: float) -> Any:
    def draw(rng: np.random.Generator) -> list[list[float]]:
        mu = rng.beta(4 * mean, 4 * (1 - mean), size=items)
        shape = np.ones((1, trials))
        return rng.beta(10 * mu[:, None] * shape, 10 * (1 - mu[:, None]) * shape).tolist()
    return draw


def skewed(items: int) -> Any:
    def draw(rng: np.random.Generator) -> list[list[float]]:
        return [[float(v)] for v in rng.choice([1.0, 0.0, 0.5], items, p=[0.85, 0.1, 0.05])]
    return draw


def results(outcomes: dict[str, np.ndarray]) -> dict[str, Any]:
    """0/1 threshold entries; an outcome of shape (items, K) gives K trials per item."""
    names = list(outcomes)
    count = len(outcomes[names[0]])
    items = []
    for i in range(count):
        record: dict[str, Any] = {"id": f"i{i}", "scores": {n: float(np.mean(outcomes[n][i])) for n in names}}
        if np.ndim(outcomes[names[0]]) == 2:
            record["trials"] = [{"trial": t, "error": None, "scores": {n: float(outcomes[n][i][t]) for n in names}}
                                for t in range(outcomes[names[0]].shape[1])]
        items.append(record)
    repeats = outcomes[names[0]].shape[1] if np.ndim(outcomes[names[0]]) == 2 else 1
    return {"name": "sim", "gate_results": [], "scores": {}, "summary": {"repeats": repeats},
            "threshold_results": [{"id": n, "passed": True, "average_score": float(np.mean(outcomes[n])),
                                   "threshold": 0.0} for n in names], "items": items}


def regressed_share(rng: np.random.Generator, runs: int, entries: int, items: int, base_rate: Any,
                    head_rate: Any) -> float:
    hits = 0
    for _ in range(runs):
        base_p, head_p = base_rate(rng, (entries, items)), head_rate(rng, (entries, items))
        base = results({f"e{k}": (rng.random(items) < base_p[k]).astype(float) for k in range(entries)})
        head = results({f"e{k}": (rng.random(items) < head_p[k]).astype(float) for k in range(entries)})
        hits += bool(compare_results(base, head).regressions)
    return hits / runs


def found_share(rng: np.random.Generator, runs: int, items: int, repeats: int, rate: float, drop: float) -> float:
    """Share of comparisons of an agent at `rate` with one at `rate - drop` that call it regressed."""
    hits = 0
    for _ in range(runs):
        base = results({"g": (rng.random((items, repeats)) < rate).astype(float)})
        head = results({"g": (rng.random((items, repeats)) < rate - drop).astype(float)})
        hits += bool(compare_results(base, head).regressions)
    return hits / runs


def exact_sizes() -> None:
    print("exact false-regression rate, 0/1 entries, worst over discordance rates 0.02-1 (nominal 0.025)")
    print(f"  {'items':>5}  {'max_drop':>8}  {'one entry':>9}  {'ten, Holm+Tarone':>16}  "
          f"{'1 + 9 that barely move':>22}")
    for n in (20, 50, 100):
        for max_drop in (0.0, 0.05):
            rates = [max(r, max_drop + 1e-9) for r in RATES]
            one = max(exact.size(n, r, max_drop) for r in rates)
            ten = max(exact.family_size(n, [(10, r)], max_drop) for r in rates)
            still = max(exact.family_size(n, [(1, r), (9, max(0.01, max_drop + 1e-9))], max_drop) for r in rates)
            print(f"  {n:>5}  {max_drop:>8}  {one:>9.4f}  {ten:>16.4f}  {still:>22.4f}")


def power_and_plan(rng: np.random.Generator, runs: int) -> None:
    print(f"detectable drop at 80% power, one entry, items at 0.7 ({runs} runs each; plan within 10% of 0.80)")
    print(f"  {'items':>5}  {'K':>2}  {'plan says':>9}  {'found at that drop':>18}  {'found at 0.10':>13}  "
          f"{'at 0.20':>7}")
    for repeats in (1, 5):
        for items in (50, 100, 200):
            planned = [plan_results(results({"g": (rng.random((items, repeats)) < 0.7).astype(float)}), 0.1)
                       .entries[0].detectable for _ in range(9)]
            drop = float(np.median([d for d in planned if d is not None]))
            found = found_share(rng, runs, items, repeats, 0.7, drop)
            print(f"  {items:>5}  {repeats:>2}  {drop:>9.3f}  {found:>18.3f}"
                  f"  {found_share(rng, runs, items, repeats, 0.7, 0.1):>13.3f}"
                  f"  {found_share(rng, runs, items, repeats, 0.7, 0.2):>7.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"95% interval coverage of the true rate ({args.runs} runs each; target 0.93-0.97)")
    for label, draw, truth in [
        ("0/1, K=1, 30-100 items, rate in [0.5, 0.95] (Wilson)", any_agent, None),
        ("0/1, K=1, 30 items at 0.7 (Wilson; exactly 0.930)", binary(30, 1, 0.7), 0.7),
        ("0/1, K=1, 100 items at 0.9 (Wilson)", binary(100, 1, 0.9), 0.9),
        ("0/1, K=5, 40 items around 0.7 (Wilson on Kish n_eff)", binary(40, 5, 0.7, 0.5), 0.7),
        ("0/1, K=5, 40 items at 0.7, no item effect", binary(40, 5, 0.7), 0.7),
        ("continuous, K=1, 50 items (Wilson-t)", continuous(50, 1, 0.4), 0.4),
        ("continuous, K=5, 40 items (clustered, Wilson-t)", continuous(40, 5, 0.6), 0.6),
        ("mostly 1s, 10% 0s, 5% halves, 20 items (Wilson-t)", skewed(20), 0.875),
    ]:
        print(f"  {label:<55} {coverage(rng, args.runs, draw, truth):.3f}")

    def shared() -> tuple[Any, Any]:
        state: dict[str, np.ndarray] = {}

        def base(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
            state["p"] = rng.beta(2.8, 1.2, size=shape)
            return state["p"]

        def head(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
            return state["p"]

        return base, head

    print("comparisons, 0/1 entries, one trial per item, simulated through compare_results")
    base, head = shared()
    print(f"  identical agents called regressed, 1 entry, 60 items          "
          f"{regressed_share(rng, args.runs, 1, 60, base, head):.3f}")
    base, head = shared()
    print(f"  unchanged agent failed on any of 10 entries (Holm), 50 items  "
          f"{regressed_share(rng, args.runs, 10, 50, base, head):.3f}")
    power = regressed_share(rng, args.runs, 1, 100, lambda r, s: np.full(s, 0.85), lambda r, s: np.full(s, 0.65))
    print(f"  drop 0.85 -> 0.65 called regressed, 100 items                 {power:.3f}")
    exact_sizes()
    power_and_plan(rng, min(args.runs, 500))


if __name__ == "__main__":
    main()
