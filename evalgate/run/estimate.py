"""`evalgate estimate`: what a run will cost, before it spends anything.

Counts the calls to the target (one per turn) and to the judge (one per judged check and item;
up to twice with a repair), and estimates tokens from the text: about 4 characters a token, for
the inputs, the history a conversation resends, the system prompt and tools, the judge's prompt
templates and the material it judges (a turn's checks: that turn's input and reply). Replies are
bounded by `max_tokens`: the low end assumes empty replies, the high end full ones (unbounded, and
so unknown, without `max_tokens`). The cost comes from the price tables (the openai target's
`prices`, the judge's built-in and `prices` tables). Nothing is sent: no target, no judge, no network.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

CHARS_PER_TOKEN = 4
# The judged data's tags and labels around the material: a small, fixed share per call.
SECTION_OVERHEAD_TOKENS = 12
# What a repair request says was wrong with the reply (a JSON error, up to five shape errors): at most about this.
REPAIR_PROBLEM_TOKENS = 100


def tokens(value: Any) -> int:
    """Rough tokens of a text (or of a value's JSON): 4 characters a token, at least 1 for non-empty."""
    if value is None:
        return 0
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass
class Line:
    """One model's share: calls, prompt and completion tokens, cost, each as a range (low, high)."""

    what: str
    model: str | None
    calls: list[int] = field(default_factory=lambda: [0, 0])
    prompt: list[int] = field(default_factory=lambda: [0, 0])
    completion: list[int | None] = field(default_factory=lambda: [0, 0])
    prices: dict[str, float] | None = None
    note: str = ""
    counts_tokens: bool = True  # False: an agent behind HTTP, a command or a function; only calls are known
    prices_at: tuple[str, ...] | None = None  # where the spec sets `prices` (None: the built-in table)

    def add(self, calls: tuple[int, int], prompt: tuple[int, int], completion: tuple[int, int | None]) -> None:
        self.calls[0] += calls[0]
        self.calls[1] += calls[1]
        self.prompt[0] += prompt[0]
        self.prompt[1] += prompt[1]
        self.completion[0] = (self.completion[0] or 0) + completion[0]
        high = self.completion[1]
        self.completion[1] = None if high is None or completion[1] is None else high + completion[1]

    def price_keys(self) -> tuple[str | None, str | None]:
        """The keys of `prices` this line reads: `prompt` (or `input`), `completion` (or `output`)."""
        prices = self.prices or {}
        prompt = next((k for k in ("prompt", "input") if k in prices), None)
        return prompt, next((k for k in ("completion", "output") if k in prices), None)

    def cost(self) -> tuple[float | None, float | None]:
        if self.prices is None:
            return None, None
        prompt_key, completion_key = self.price_keys()
        prompt_price = self.prices[prompt_key] if prompt_key else 0.0
        completion_price = self.prices[completion_key] if completion_key else 0.0
        low = (self.prompt[0] * prompt_price + (self.completion[0] or 0) * completion_price) / 1e6
        high_completion = self.completion[1]
        high = None if high_completion is None else (self.prompt[1] * prompt_price
                                                     + high_completion * completion_price) / 1e6
        return low, high

    def to_dict(self) -> dict[str, Any]:
        low, high = self.cost()
        if not self.counts_tokens:
            return {"what": self.what, "model": self.model, "calls": self.calls, "prompt_tokens": None,
                    "completion_tokens": None, "cost_usd": [None, None], "note": self.note}
        return {"what": self.what, "model": self.model, "calls": self.calls, "prompt_tokens": self.prompt,
                "completion_tokens": self.completion, "cost_usd": [low, high], "note": self.note}


@dataclass
class Estimate:
    name: str
    items: int
    lines: list[Line]
    budget: Any = None

    def total(self) -> tuple[float | None, float | None]:
        low: float | None = 0.0
        high: float | None = 0.0
        for line in self.lines:
            if not line.calls[1]:
                continue
            line_low, line_high = line.cost()
            low = None if low is None or line_low is None else low + line_low
            high = None if high is None or line_high is None else high + line_high
        return low, high

    def to_dict(self) -> dict[str, Any]:
        low, high = self.total()
        return {"name": self.name, "items": self.items, "lines": [line.to_dict() for line in self.lines],
                "cost_usd": [low, high]}


def estimate(loaded: Any) -> Estimate:
    """The calls, tokens and cost of running a loaded spec, from its data and settings alone."""
    spec = loaded.spec
    target_spec = spec.target
    target = _target_line(target_spec)
    judge = _judge_line(spec.judge)
    reply_cap = getattr(target_spec, "max_tokens", None)
    judge_cap = spec.judge.max_tokens if spec.judge is not None else None
    fixed = tokens(getattr(target_spec, "system", None)) + (tokens(target_spec.tools) if target_spec.type == "openai"
                                                             and target_spec.tools else 0)
    trials = range(spec.repeats or 1)  # with `repeats`, every item's calls are made once per trial
    count = 0
    for case in loaded.iter_cases():
        count += 1
        inputs = case.item.turn_inputs()
        if target_spec.type != "recorded":
            _add_target_calls(target, target_spec.type == "openai", inputs, fixed, reply_cap, trials)
        _add_judge_calls(judge, _judged_checks(loaded, case, inputs, reply_cap), judge_cap, trials)
    result = Estimate(loaded.name, count, [target, judge] if spec.judge is not None else [target], spec.budget)
    _refuse_overflow(result, loaded)
    return result


def _target_line(target_spec: Any) -> Line:
    """The target's line, its prices where the spec gives them; a note where it cannot count or cost."""
    kind = target_spec.type
    model = getattr(target_spec, "model", None)
    target = Line(f"target ({kind})", model)
    if kind == "openai":
        target.prices = (target_spec.prices or {}).get(model)
        target.prices_at = ("target", "prices", str(model))
        if target.prices is None:
            target.note = f"no price for `{model}` in target.prices: cost unknown"
    elif kind == "recorded":
        target.note = "recorded runs: nothing is called"
    else:
        target.note = "tokens and cost are whatever the agent reports at run time"
        target.counts_tokens = False
    return target


def _judge_line(judge_spec: Any) -> Line:
    """The judge's line, priced from the spec's prices over the built-in table."""
    from evalgate.judge.accounting import DEFAULT_PRICES

    judge = Line("judge", judge_spec.model if judge_spec is not None else None)
    if judge_spec is not None:
        judge.prices = {**DEFAULT_PRICES, **judge_spec.prices}.get(judge_spec.model)
        if judge_spec.model in judge_spec.prices:
            judge.prices_at = ("judge", "prices", judge_spec.model)
        if judge.prices is None:
            judge.note = f"no price for `{judge_spec.model}` (judge.prices, built-in table): cost unknown"
    return judge


def _add_target_calls(target: Line, openai: bool, inputs: list[Any], fixed: int, reply_cap: int | None,
                      trials: range) -> None:
    """One item's calls to the target, once per trial; tokens counted for an OpenAI target only."""
    low = high = 0
    for turn, value in enumerate(inputs):  # each turn resends the conversation so far
        history = sum(tokens(v) for v in inputs[:turn])
        low += fixed + history + tokens(value)
        high += fixed + history + tokens(value) + (turn * reply_cap if reply_cap else 0)
    cap = reply_cap * len(inputs) if reply_cap else None
    for _ in trials:
        target.add((len(inputs), len(inputs)), (low, high) if openai else (0, 0), (0, cap) if openai else (0, 0))


Judged = tuple[Any, int, tuple[int, int | None]]  # (check, material tokens, output tokens low and high)


def _judged_checks(loaded: Any, case: Any, inputs: list[Any], reply_cap: int | None) -> list[Judged]:
    """One item's judged checks: top-level checks judge the first input and the whole conversation,
    a turn's checks that turn's input and run (which the first input and all replies need not bound)."""
    item, recorded = case.item, case.recorded
    output: tuple[int, int | None] = (
        (sum(tokens(r.text) for r in recorded), sum(tokens(r.text) for r in recorded)) if recorded
        else (0, reply_cap * len(inputs) if reply_cap else None))
    shared = tokens(item.ground_truth) + tokens(item.context) + SECTION_OVERHEAD_TOKENS
    judged: list[Judged] = [(c, tokens(inputs[0]) + shared, output)
                            for c in (*loaded.gates, *loaded.scorers) if c.scorer.judged]
    for turn, turn_checks in enumerate(case.turn_checks or ()):
        reply: tuple[int, int | None] = (tokens(recorded[turn].text),) * 2 if recorded else (0, reply_cap)
        judged += [(c, tokens(inputs[turn]) + shared, reply) for c in turn_checks if c.scorer.judged]
    return judged


def _add_judge_calls(judge: Line, judged: list[Judged], judge_cap: int | None, trials: range) -> None:
    """Each judged check's calls, once per trial: one, or two with a repair (which resends the exchange and
    the bad reply, and asks again)."""
    from evalgate.judge import prompts
    from evalgate.judge.client import repair_request

    for check, material, output in judged:
        prompt = getattr(prompts, check.scorer.type.upper(), None) or prompts.RUBRIC_GRADED
        ask = tokens(prompt.system) + material
        per_low = ask + output[0]
        per_high = ask + (output[1] if output[1] is not None else output[0])
        repair = tokens(repair_request("", prompt)) + REPAIR_PROBLEM_TOKENS
        for _ in trials:
            judge.add((1, 2), (per_low, 2 * per_high + (judge_cap or 0) + repair),
                      (0, 2 * judge_cap if judge_cap else None))
        if output[1] is None and not judge.note:
            judge.note = "the target has no max_tokens: the judged outputs' length is unknown (counted as empty)"


def _refuse_overflow(result: Estimate, loaded: Any) -> None:
    """A SpecError at the price that makes a cost overflow to infinity (a price near 1e308 is finite, but times
    the tokens it is not): `inf` is no estimate, and `--json` would print `Infinity`, which no JSON reader takes."""
    from evalgate.errors import Problem, SpecError

    def finite(values: tuple[float | None, float | None]) -> bool:
        return all(v is None or math.isfinite(v) for v in values)

    priced = [line for line in result.lines if line.counts_tokens and line.prices is not None]
    over = [line for line in priced if not finite(line.cost())]
    if not over and finite(result.total()):
        return
    problems = []
    for line in over or priced:
        prices = line.prices or {}
        key = max((k for k in line.price_keys() if k is not None), key=lambda k: prices[k])
        where = line.prices_at
        text = ".".join((*where, key)) if where is not None else f"the built-in price of `{line.model}`"
        at = loaded.positions.line((*where, key)) if where is not None else None
        problems.append(Problem(loaded.file, at, f"{text}: {prices[key]:g} USD per 1M tokens makes the estimated "
                                f"cost of the {line.what.split(' ')[0]}'s calls overflow (past 1.8e308 USD); "
                                "write the model's price in USD per 1M tokens"))
    raise SpecError(problems)


def _range(low: float | int | None, high: float | int | None, money: bool = False) -> str:
    def show(value: float | int | None) -> str:
        if value is None:
            return "unknown"
        return f"${value:,.4f}" if money else f"{value:,}"

    return show(low) if low == high else f"{show(low)} - {show(high)}"


def render(result: Estimate) -> str:
    lines = [f"{result.name}: {result.items} items; an estimate before anything runs (about 4 characters a token)"]
    for line in result.lines:
        if not line.calls[1] and line.what.startswith("target") and line.note:
            lines.append(f"  {line.what}: {line.note}")
            continue
        low, high = line.cost()
        model = f" {line.model}" if line.model else ""
        calls, prompt, completion = line.calls, line.prompt, line.completion
        if not line.counts_tokens:
            lines.append(f"  {line.what}: {_range(calls[0], calls[1])} calls; {line.note}")
            continue
        lines.append(f"  {line.what}{model}: {_range(calls[0], calls[1])} calls, prompt {_range(prompt[0], prompt[1])} "
                     f"tokens, completion {_range(completion[0], completion[1])} tokens, cost "
                     f"{_range(low, high, money=True)}")
        if line.note:
            lines.append(f"    note: {line.note}")
    low, high = result.total()
    lines.append(f"total: {_range(low, high, money=True)}")
    budget = result.budget
    if budget is not None and budget.max_usd is not None:
        if high is not None and high <= budget.max_usd:
            verdict = "fits"
        elif low is not None and low > budget.max_usd:
            verdict = "does not fit: the run will stop early and error the items not run"
        else:
            verdict = "may not fit: the run stops starting items once it is reached"
        lines.append(f"budget max_usd ${budget.max_usd:g}: {verdict}")
    return "\n".join(lines)
