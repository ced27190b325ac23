"""What judging costs: the price table, per-judge tallies, and a run's `summary.judge`.

`summary.judge` records the model, each judged scorer's prompt-template hash, calls, cached
calls, repairs, failures, retries, token usage and cost (null when any billed call had no price).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol

from evalgate.load.spec.models import PriceKey
from evalgate.run.budget import saturated

# USD per 1M tokens. Extend or override with `judge.prices`; an unknown model's cost is null, not 0.
DEFAULT_PRICES: dict[str, dict[PriceKey, float]] = {
    "gpt-4o-mini": {"prompt": 0.15, "completion": 0.60},
    "gpt-4o": {"prompt": 2.50, "completion": 10.00},
    "gpt-4.1": {"prompt": 2.00, "completion": 8.00},
    "gpt-4.1-mini": {"prompt": 0.40, "completion": 1.60},
    "gpt-4.1-nano": {"prompt": 0.10, "completion": 0.40},
    "o4-mini": {"prompt": 1.10, "completion": 4.40},
}


def cost_usd(
    model: str, prompt_tokens: int, completion_tokens: int, prices: Mapping[str, Mapping[PriceKey, float]]
) -> float | None:
    """Cost of one call from a price table (USD per 1M tokens); None when the model is not in it.

    A model's prices are `prompt` (or `input`) and `completion` (or `output`), as for the openai target.
    """
    price = prices.get(model)
    if price is None:
        return None
    prompt = price.get("prompt", price.get("input", 0.0))
    completion = price.get("completion", price.get("output", 0.0))
    # the reply's token counts are its word: 1e308 of them at $2 per 1M is past any float, held at the largest
    return saturated((prompt_tokens * prompt + completion_tokens * completion) / 1e6)


@dataclass
class Tally:
    """What the judge did, added up over a run (thread-safe updates happen in Judge)."""

    calls: int = 0  # requests answered by the server (repairs included), billed
    cached_calls: int = 0  # replies replayed from the cache, not billed
    repairs: int = 0  # second asks after a bad reply
    failures: int = 0  # asks that ended in JudgeError
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0  # calls whose model had no price: the run's cost is then unknown
    unmetered_calls: int = 0  # billed calls whose reply reported no token usage: a budget counted them as nothing

    def minus(self, other: Tally) -> Tally:
        return Tally(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})

    def plus(self, other: Tally) -> Tally:
        return Tally(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})


class CountedJudge(Protocol):
    """What a run's accounting reads of a judge (judge.client.Judge is one): its usage, prompts and notes."""

    model: str
    prompts: dict[str, str]

    def tally(self) -> Tally: ...
    def retries(self) -> int: ...
    def warnings(self) -> list[str]: ...
    def close(self) -> None: ...


class JudgeRun:
    """The judges a run uses: usage counted from the start, reported in `summary.judge`, closed at the end."""

    def __init__(self, scorers: Iterable[Any] = ()) -> None:
        self.judges: list[CountedJudge] = []
        self.start: list[tuple[Tally, int]] = []
        # The items' judge spend added in data order (`charged`); None: not given, the tallies' sum.
        # The tallies add calls as they finish, an order concurrency changes and no merge of shards
        # can follow; items in data order give one sum, the same in a run and in its merged shards.
        self.items_usd: float | None = None
        self.add(scorers)

    def add(self, scorers: Iterable[Any]) -> None:
        """Count the judges of these Scorer objects, from now on (each judge once)."""
        for scorer in scorers:
            judge = getattr(scorer.fn, "judge", None)
            if judge is not None and judge not in self.judges:
                self.judges.append(judge)
                self.start.append((judge.tally(), judge.retries()))

    def watch(self, cases: Iterable[Any]) -> Iterator[Any]:
        """Pass cases through, counting the judges of their per-turn scorers before they run."""
        for case in cases:
            for checks in getattr(case, "turn_checks", None) or ():
                self.add(check.scorer for check in checks)
            yield case

    def charged(self, judge_cost: dict[str, float]) -> None:
        """An item's (or trial's) judge spend by check, as its record's `judge_cost_usd`: called in data order."""
        total = 0.0 if self.items_usd is None else self.items_usd
        for usd in judge_cost.values():
            total += usd
        self.items_usd = saturated(total)

    def summary(self) -> dict[str, Any]:
        total = Tally()
        retries = 0
        prompts: dict[str, str] = {}
        for judge, (tally, before) in zip(self.judges, self.start, strict=True):
            total = total.plus(judge.tally().minus(tally))
            retries += judge.retries() - before
            prompts.update(judge.prompts)
        return {
            "model": ", ".join(dict.fromkeys(j.model for j in self.judges)),
            "calls": total.calls,
            "cached_calls": total.cached_calls,
            "repairs": total.repairs,
            "failures": total.failures,
            "retries": retries,
            "usage": {
                "prompt_tokens": total.prompt_tokens,
                "completion_tokens": total.completion_tokens,
                "total_tokens": total.prompt_tokens + total.completion_tokens,
            },
            # Unknown when any billed call had no price: a partial sum would understate it.
            "cost_usd": None if total.unpriced_calls else round(
                saturated(total.cost_usd if self.items_usd is None else self.items_usd), 8),
            "prompts": dict(sorted(prompts.items())),
        }

    def finish(self, summary: dict[str, Any]) -> None:
        """Put `judge` into the run's summary (when any scorer was judged) and close the judges."""
        if self.judges:
            summary["judge"] = self.summary()
        notes = [note for judge in self.judges for note in judge.warnings()]
        if notes:
            summary["warnings"] = [*summary.get("warnings", ()), *notes]
        for judge in self.judges:
            judge.close()
