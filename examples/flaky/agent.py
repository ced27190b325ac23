"""A demo agent that fails at random, at a rate you choose, from a seeded generator.

FLAKY_FAILURE_RATE (default 0.15): the chance any one answer is wrong.
FLAKY_SEED (default 7): the generator's seed, so a run can be replayed exactly.

Each answer draws from a generator seeded by (seed, question, how many times it was asked), so trials of
one item differ, and the same run gives the same answers whatever the concurrency.
"""

from __future__ import annotations

import os
import random
import threading

_asked: dict[str, int] = {}
_lock = threading.Lock()

WEATHER = {"Brooklyn": "sunny, 72F", "Paris": "rainy, 14C", "Tokyo": "cloudy, 18C", "Cairo": "hot, 35C"}


def answer(question: str) -> dict:
    rate = float(os.environ.get("FLAKY_FAILURE_RATE", "0.15"))
    seed = os.environ.get("FLAKY_SEED", "7")
    with _lock:
        count = _asked.get(question, 0)
        _asked[question] = count + 1
    rng = random.Random(f"{seed}:{question}:{count}")
    city = next((c for c in WEATHER if c in question), "Brooklyn")
    if rng.random() < rate:
        return {"text": "Sorry, I could not get the weather.", "tool_calls": []}
    return {
        "text": f"It is {WEATHER[city]} in {city}.",
        "tool_calls": [{"name": "get_weather", "args": {"city": city}, "result": WEATHER[city]}],
    }
