"""Calibration figures of evalgate's statistics, by simulation against known truth (needs numpy).

Not a speed benchmark: it prints how often 95% intervals cover the true rate, how often an unchanged
agent is called regressed (one entry, and any of ten), and how often a real drop is found, each over
RUNS simulated runs of agents with known pass rates, through evalgate.stats and evalgate.comparison.
The tests (tests/test_stats.py, tests/test_compare.py) assert the same figures stay within bounds.

    python bench/calibration.py [--runs 2000] [--seed 12]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from evalgate import stats
from evalgate.comparison import compare_results


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


def results(outcomes: dict[str, np.ndarray]) -> dict[str, Any]:
    names = list(outcomes)
    count = len(outcomes[names[0]])
    return {"name": "sim", "gate_results": [], "scores": {},
            "threshold_results": [{"id": n, "passed": True, "average_score": float(outcomes[n].mean()),
                                   "threshold": 0.0} for n in names],
            "items": [{"id": f"i{i}", "scores": {n: float(outcomes[n][i]) for n in names}} for i in range(count)]}


def regressed_share(rng: np.random.Generator, runs: int, entries: int, items: int, base_rate: Any,
                    head_rate: Any) -> float:
    hits = 0
    for _ in range(runs):
        base_p, head_p = base_rate(rng, (entries, items)), head_rate(rng, (entries, items))
        base = results({f"e{k}": (rng.random(items) < base_p[k]).astype(float) for k in range(entries)})
        head = results({f"e{k}": (rng.random(items) < head_p[k]).astype(float) for k in range(entries)})
        hits += bool(compare_results(base, head).regressions)
    return hits / runs


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
        ("continuous, K=1, 50 items (t)", continuous(50, 1, 0.4), 0.4),
        ("continuous, K=5, 40 items (clustered t)", continuous(40, 5, 0.6), 0.6),
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

    print("comparisons, 0/1 entries, one trial per item (target: false <= 0.05, power >= 0.80)")
    base, head = shared()
    print(f"  identical agents called regressed, 1 entry, 60 items          "
          f"{regressed_share(rng, args.runs, 1, 60, base, head):.3f}")
    base, head = shared()
    print(f"  unchanged agent failed on any of 10 entries (Holm), 50 items  "
          f"{regressed_share(rng, args.runs, 10, 50, base, head):.3f}")
    power = regressed_share(rng, args.runs, 1, 100, lambda r, s: np.full(s, 0.85), lambda r, s: np.full(s, 0.65))
    print(f"  drop 0.85 -> 0.65 called regressed, 100 items                 {power:.3f}")


if __name__ == "__main__":
    main()
