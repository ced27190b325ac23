"""How many items, or repeats, a suite needs to find a drop: `evalgate plan`. Pure: results in, a Plan out.

Per gate and threshold of a results file, from its item records: K (trials per item), the variance of a
trial around its item's rate σ_w² (from the trials with repeats; p̄(1 - p̄) for 0/1 scores, or the variance
of the scores, without them: an upper bound, since it also holds the spread between items), and the
standard deviation of a paired difference of item means between two runs, SD_d² = 2σ_w²/K + τ² (τ², how
unevenly a change hits items, is taken as 0: a change that hits only some items needs more). The one-sided
test at alpha/M (M entries, Holm's first step) finds a drop D with the asked power when
n ≥ ((z_(1-α/M) + z_power)·SD_d / (D - max_drop))². docs/statistics.md shows it against simulations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalgate.decide import stats
from evalgate.decide.comparison import CompareOptions, entry_infos, item_views


@dataclass(frozen=True)
class EntryPlan:
    id: str
    turn: int | None
    items: int
    repeats: int
    binary: bool
    within_variance: float  # σ_w²: of a trial around its item's rate
    sd: float  # SD_d: of a paired difference of item means, at the run's K
    max_drop: float
    detectable: float | None  # the drop this suite finds now with the asked power
    items_needed: int | None  # at the run's K, to find the asked drop
    repeats_needed: int | None  # on the run's items, to find the asked drop (None: more items are needed)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "turn": self.turn, "items": self.items, "repeats": self.repeats,
                "binary": self.binary, "within_variance": self.within_variance, "sd": self.sd,
                "max_drop": self.max_drop, "detectable": self.detectable, "items_needed": self.items_needed,
                "repeats_needed": self.repeats_needed}


@dataclass(frozen=True)
class Plan:
    drop: float
    power: float
    alpha: float  # one-sided, per entry: (1 - confidence) / 2 / entries
    entries: list[EntryPlan]

    def to_dict(self) -> dict[str, Any]:
        return {"drop": self.drop, "power": self.power, "alpha": self.alpha,
                "entries": [e.to_dict() for e in self.entries]}


def _variances(per_item: list[list[float]]) -> tuple[float, int, bool]:
    """σ_w², the trials per item (their mean, rounded) and whether every score is 0 or 1."""
    values = [v for trials in per_item for v in trials]
    binary = all(v in (0.0, 1.0) for v in values)
    repeats = max(1, round(len(values) / len(per_item)))
    repeated = [trials for trials in per_item if len(trials) > 1]
    if repeated:
        within = sum(_variance(t) for t in repeated) / len(repeated)
    elif binary:
        mean = sum(values) / len(values)
        within = mean * (1.0 - mean)
    else:
        within = _variance(values) if len(values) > 1 else 0.0
    return within, repeats, binary


def _variance(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1)


def paired_sd(within: float, mean: float, drop: float, repeats: int, binary: bool, z_alpha: float,
              z_power: float) -> float:
    """SD_d at a drop of `drop`: 2σ_w²/K, the head's σ_w² moved as a 0/1 rate's p(1 - p) moves with the drop.
    0/1 without repeats: McNemar's test sees the discordant pairs, r = p(1 - p + D) + (1 - p)(p - D) of them,
    with variance r under no change and r - D² under the drop: SD_d is what makes z·SD_d their blend."""
    if not binary:
        return math.sqrt(2.0 * within / repeats)
    head = max(0.0, within + _rate_variance(mean - drop) - _rate_variance(mean))
    if repeats > 1:
        return math.sqrt((within + head) / repeats)
    discordant = mean * (1.0 - mean + drop) + (1.0 - mean) * (mean - drop)
    blend = z_alpha * math.sqrt(discordant) + z_power * math.sqrt(max(discordant - drop * drop, 0.0))
    return blend / (z_alpha + z_power)


def _rate_variance(rate: float) -> float:
    rate = min(1.0, max(0.0, rate))
    return rate * (1.0 - rate)


def detectable(within: float, mean: float, items: int, repeats: int, binary: bool, alpha: float, power: float,
               max_drop: float) -> float | None:
    """The drop found with `power`: D = max_drop + (t_(1-α) + t_power)·SD_d(D)/√n (t on n - 1 degrees of
    freedom), solved by iterating from D = max_drop."""
    if items < 2:
        return None
    z_alpha, z_power = stats.t_quantile(1.0 - alpha, items - 1), stats.t_quantile(power, items - 1)
    drop = max_drop
    # 0/1 without repeats: the exact test moves in whole discordant pairs, a continuity correction of 1/n
    step = 1.0 / items if binary and repeats == 1 else 0.0
    for _ in range(200):
        sd = paired_sd(within, mean, drop, repeats, binary, z_alpha, z_power)
        following = min(1.0, max_drop + step + (z_alpha + z_power) * sd / math.sqrt(items))
        if abs(following - drop) < 1e-10:
            break
        drop = following
    return drop if drop < 1.0 else None


def plan_results(results: Mapping[str, Any], drop: float, power: float = 0.8, entries: int | None = None,
                 options: CompareOptions | None = None) -> Plan:
    """The plan for each gate and threshold of `results` (a results file's JSON, with its items)."""
    options = options or CompareOptions.from_settings(results.get("compare_settings"))
    infos = {key: info for key, info in entry_infos(results).items() if info.gating}
    family = entries if entries is not None else max(1, len(infos))
    alpha = (1.0 - options.confidence) / 2.0 / family
    z_alpha, z_power = stats.normal_quantile(1.0 - alpha), stats.normal_quantile(power)
    views = item_views(results.get("items") or [])
    plans = []
    for key in infos:
        per_item = [values for view in views if (values := view.values().get(key))]
        if not per_item:
            continue
        within, repeats, binary = _variances(per_item)
        mean = sum(v for trials in per_item for v in trials) / sum(len(t) for t in per_item)
        max_drop = options.drop_for(key[2])
        sd = paired_sd(within, mean, drop, repeats, binary, z_alpha, z_power)
        needed_k = None
        if drop > max_drop and within > 0.0:
            target = (drop - max_drop) ** 2 * len(per_item) / (z_alpha + z_power) ** 2  # SD_d² that is enough
            head = within + (_rate_variance(mean - drop) - _rate_variance(mean) if binary else 0.0)
            needed_k = max(1, math.ceil((within + max(head, 0.0)) / target - 1e-9))
        plans.append(EntryPlan(
            key[2], key[0], len(per_item), repeats, binary, within, sd, max_drop,
            detectable(within, mean, len(per_item), repeats, binary, alpha, power, max_drop),
            _items_needed(sd, drop, alpha, power, max_drop, binary and repeats == 1), needed_k))
    return Plan(drop, power, alpha, plans)


def _items_needed(sd: float, drop: float, alpha: float, power: float, max_drop: float, stepped: bool) -> int | None:
    """The normal-theory n, with Fleiss's continuity correction for the exact 0/1 test: n/4·(1 + √(1 + 4/(n·d)))²."""
    n = stats.items_needed(sd, drop, alpha, power, max_drop)
    if n is None or not stepped:
        return n
    gap = drop - max_drop
    return max(2, math.ceil(n / 4.0 * (1.0 + math.sqrt(1.0 + 4.0 / (n * gap))) ** 2 - 1e-9))


def plan_lines(plan: Plan) -> list[str]:
    """The plan as the terminal shows it, a line per entry."""
    lines = [f"To find a drop of {plan.drop:g} with {plan.power:.0%} power (one-sided test at {plan.alpha:.3g} "
             "per entry):"]
    for entry in plan.entries:
        name = entry.id if entry.turn is None else f"turn {entry.turn + 1}: {entry.id}"
        now = f"{entry.detectable:.3f}" if entry.detectable is not None else "–"
        items = f"{entry.items_needed} items" if entry.items_needed is not None else "no number of items"
        repeats = (f"{entry.repeats_needed} repeats on its {entry.items} items" if entry.repeats_needed is not None
                   else "repeats cannot")
        trials = f"{entry.repeats} trial{'s' if entry.repeats != 1 else ''}"
        lines.append(f"  {name}: {entry.items} items × {trials} can detect a drop of {now} or more; "
                     f"needs {items} at {trials}, or {repeats}")
    if not plan.entries:
        lines.append("  no gate or threshold has scored items in this results file")
    return lines
