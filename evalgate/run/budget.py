"""A spending cap: once the run's spend reaches `budget.max_usd` or `budget.max_tokens`, no new item starts.

Spend is what finished items' runs report (`cost_usd`, `usage`) plus what the judge was billed so
far. Items already in flight when the cap is reached still finish (at most one concurrency
window); every item not started is errored as `budget exceeded`: not scored, counted against
`max_errors`, listed among the errored items.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

BUDGET_EXCEEDED = "budget exceeded"
MAX_USD = sys.float_info.max  # where every sum of spend stops (`saturated`)


class CostTotals:
    """The run's cost from its items, added in data order (so a merge of shards adds up the same)."""

    def __init__(self) -> None:
        self.items = 0
        self.target_usd = 0.0
        self.by_check: dict[str, float] = {}

    def add(self, run_cost: float | None, judge_cost: dict[str, float]) -> None:
        self.items += 1
        self.target_usd += spend(run_cost)  # a NaN, a negative or a 400-digit cost is no amount
        for check, usd in judge_cost.items():
            self.by_check[check] = self.by_check.get(check, 0.0) + usd

    def summary(self) -> dict[str, Any]:
        judge = 0.0
        for usd in self.by_check.values():
            judge += usd
        target, judge = saturated(self.target_usd), saturated(judge)
        return {"usd": round(saturated(target + judge), 8), "target_usd": round(target, 8),
                "judge_usd": round(judge, 8),
                "by_check": {k: round(saturated(v), 8) for k, v in self.by_check.items()}}


@dataclass
class Budget:
    max_usd: float | None = None
    max_tokens: int | None = None
    share: str = ""  # e.g. "1/4 of $2 (shard 1/4)": how the cap was derived, for the summary
    target_usd: float = 0.0
    target_tokens: int = 0
    skipped: int = 0
    reason: str | None = None
    judging: Any = None  # the run's JudgeRun: judge calls count as spend
    run_caps: tuple[float | None, int | None] = (None, None)  # a shard's: the whole run's caps, for the merge
    # An agent's spend is what its replies report: runs that report none are counted, to say the cap missed them.
    agent: bool = False  # the target is an agent that may report its spend (not recorded runs)
    runs: int = 0
    without_cost: int = 0
    without_tokens: int = 0

    @classmethod
    def of(cls, settings: Any, max_cost: float | None = None, shard: Any = None,
           agent: bool = False) -> Budget | None:
        """The run's budget from the spec's `budget:` and `--max-cost` (which wins); a shard's share is cap/N.

        agent: the target's spend is whatever its replies report (not recorded runs, which cost nothing)."""
        max_usd = max_cost if max_cost is not None else getattr(settings, "max_usd", None)
        max_tokens = getattr(settings, "max_tokens", None)
        if max_usd is None and max_tokens is None:
            return None
        share = ""
        run_caps = (max_usd, max_tokens)
        if shard is not None and shard.count > 1 and getattr(settings, "split_across_shards", True):
            share = f"shard {shard}: 1/{shard.count} of the run's budget"
            max_usd = max_usd / shard.count if max_usd is not None else None
            max_tokens = max(1, max_tokens // shard.count) if max_tokens is not None else None
        elif shard is not None and shard.count > 1:  # said, so the merge gives the run's caps, not N times them
            share = f"shard {shard}: the run's whole budget (split_across_shards: false)"
        return cls(max_usd=max_usd, max_tokens=max_tokens, share=share, run_caps=run_caps, agent=agent)

    def add(self, item: Any) -> None:
        """Count a finished item's run: its cost and tokens."""
        run = getattr(item, "run", None)
        if run is None:
            return
        self.target_usd += spend(run.cost_usd)
        usage = run.usage or {}
        parts = sum(token_count(usage.get(name)) or token_count(usage.get(other))
                    for name, other in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")))
        # the larger: a reply's `total_tokens: 1` beside its thousand prompt tokens would turn the cap off
        total = max(token_count(usage.get("total_tokens")), parts)
        self.target_tokens += total
        if self.agent:
            self.runs += 1
            self.without_cost += run.cost_usd is None
            self.without_tokens += not total

    def add_resumed(self, item: Any) -> None:
        """Count an item a resumed run takes from its journal: its runs' spend and its judge calls'
        (this run's judges never made those calls, so they are not in their tallies)."""
        for part in getattr(item, "trials", None) or (item,):
            self.add(part)
            for usd in (getattr(part, "judge_cost", None) or {}).values():
                self.target_usd += spend(usd)
            self.target_tokens += token_count(getattr(part, "judge_tokens", 0))

    def spent(self) -> tuple[float, int]:
        """(USD, tokens) so far: the target's finished items and every judge call billed."""
        usd, tokens = self.target_usd, self.target_tokens
        judging = self.judging
        if judging is not None:
            for judge, (start, _) in zip(judging.judges, judging.start, strict=True):
                used = judge.tally().minus(start)
                usd += used.cost_usd
                tokens += used.prompt_tokens + used.completion_tokens
        return saturated(usd), tokens

    def exhausted(self) -> str | None:
        """Why no new item may start, or None."""
        if self.reason is not None:
            return self.reason
        usd, tokens = self.spent()
        # to the nano-dollar: ten items at $0.01 add up to 0.09999999999999999, and reach a $0.10 cap;
        # unrounded too, or a cap below half a nano-dollar would let a spend that rounds to 0 run on past it
        if self.max_usd is not None and (round(usd, 9) >= self.max_usd or usd >= self.max_usd):
            self.reason = f"{BUDGET_EXCEEDED}: {dollars(usd)} spent of max_usd ${self.max_usd:g}; not run"
        elif self.max_tokens is not None and tokens >= self.max_tokens:
            self.reason = f"{BUDGET_EXCEEDED}: {tokens} tokens spent of max_tokens {self.max_tokens}; not run"
        return self.reason

    def gate(self, cases: Iterable[Any], skip: Callable[[Any, str], None]) -> Iterator[Any]:
        """Pass cases on while the budget lasts; hand each later one to `skip` with the reason."""
        for case in cases:
            reason = self.exhausted()
            if reason is None:
                yield case
            else:
                self.skipped += 1
                skip(case, reason)

    def warnings(self) -> list[str]:
        """What the caps could not see: an agent's runs, or a judge's calls, that reported no spend counted as
        nothing."""
        out = []
        for cap, missing, what in (("max_usd", self.without_cost, "no `cost_usd`"),
                                   ("max_tokens", self.without_tokens, "no token `usage`")):
            if getattr(self, cap) is not None and missing:
                out.append(f"budget.{cap}: {missing} of {self.runs} runs of the target reported {what}, so the "
                           "cap counted nothing for them (only what was reported, and the judge's calls); have the "
                           "agent report it (docs/targets.md)")
        judging = self.judging
        for judge, (start, _) in zip(judging.judges, judging.start, strict=True) if judging is not None else ():
            used = judge.tally().minus(start)
            if used.unmetered_calls:  # a judge server that leaves `usage` out (or sends no count) costs $0 here
                out.append(f"budget: {used.unmetered_calls} of {used.calls} calls to the judge {judge.model} reported "
                           "no token `usage`, so the caps counted nothing for them; use a server that reports it")
        return out

    def summary(self) -> dict[str, Any]:
        usd, tokens = self.spent()
        out: dict[str, Any] = {"max_usd": self.max_usd, "max_tokens": self.max_tokens,
                               "spent_usd": round(usd, 8), "spent_tokens": tokens, "items_not_run": self.skipped}
        if self.share:  # the merge gives the run's caps, not the sum of the shares (1/3 + 1/3 + 1/3 < 1)
            out["share"] = self.share
            out["run_max_usd"], out["run_max_tokens"] = self.run_caps
        return out


def spend(value: Any) -> float:
    """A finite amount above 0, else 0. Recorded data and a journal are untrusted text: a NaN would make
    every comparison with the cap false (the budget off), a negative would pay it back, and an integer
    past the largest float would overflow the sum."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    try:
        if not math.isfinite(value) or value <= 0:
            return 0
    except OverflowError:  # an integer past the largest float: no amount either, and no sum could hold it
        return 0
    return value


def saturated(total: float) -> float:
    """A sum of spend, held at the largest float. Amounts are finite, but two of 1e308 (an agent's or a
    judge's word) add up to infinity, which `spend` counts as nothing and JSON cannot hold: the budget
    would be off. At the largest float every cap is reached, and the results still say a number."""
    return total if total <= MAX_USD else MAX_USD  # a NaN too: no sum of amounts makes one


def dollars(usd: float) -> str:
    """`$0.0123`; from a trillion dollars on (a saturated sum), `$1.798e+308`: not 309 digits."""
    return f"${usd:.4f}" if abs(usd) < 1e12 else f"${usd:.4g}"


def token_count(value: Any) -> int:
    """A token count above 0, else 0: an integer, or a float that is one (`10.0`, as a server doing float
    arithmetic writes it; its cost was counted, so its tokens must be too). A fraction of a token is none."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and spend(value) else 0
