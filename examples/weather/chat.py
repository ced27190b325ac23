"""A deterministic chat agent for the multi-turn demo: it remembers the city across turns.

evalgate calls `chat(message, item, history)` once per turn; `history` holds the earlier
turns as `{input, output}` (the agent's text), so a follow-up like "And tomorrow?" can
refer back to the city asked about first. It answers in OpenAI's chat format, which
evalgate converts to the run format (text + tool calls).
"""

from __future__ import annotations

import json
import re
from typing import Any

from agent import FORECASTS, get_weather


def _city(text: str) -> str | None:
    return next((c for c in FORECASTS if re.search(rf"\b{c}\b", text, re.IGNORECASE)), None)


def chat(message: str, item: Any, history: list[dict[str, str]]) -> list[dict[str, Any]]:
    # The city of this turn, else the last one mentioned earlier in the conversation.
    city = _city(message)
    for turn in reversed(history):
        city = city or _city(turn["input"]) or _city(turn["output"])
    if city is None:
        return [{"role": "assistant", "content": "Which city would you like the weather for?"}]
    if re.search(r"\bthanks?\b", message, re.IGNORECASE):
        return [{"role": "assistant", "content": f"You're welcome. Enjoy {city}!"}]
    when = "tomorrow" if re.search(r"\btomorrow\b", message, re.IGNORECASE) else "today"
    call_id = f"call_{len(history) + 1}"
    args = {"city": city, "day": when}
    weather = get_weather(city)
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(args)}},
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps(weather)},
        {
            "role": "assistant",
            "content": f"{when.capitalize()} it is {weather['sky']} in {city}, {weather['temp_f']}F.",
        },
    ]
