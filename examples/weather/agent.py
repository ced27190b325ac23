"""A small, deterministic weather agent for the demo: no model, no network.

It "calls" a get_weather tool for the city it finds in the question and answers from the
tool's result, recording the call in the run format evalgate scores.
"""

from __future__ import annotations

import re

FORECASTS = {
    "Brooklyn": {"temp_f": 72, "sky": "sunny"},
    "Paris": {"temp_f": 64, "sky": "cloudy"},
    "Tokyo": {"temp_f": 80, "sky": "humid"},
    "London": {"temp_f": 58, "sky": "rainy"},
    "Cairo": {"temp_f": 95, "sky": "clear"},
    "Oslo": {"temp_f": 41, "sky": "snowy"},
    "Lima": {"temp_f": 68, "sky": "overcast"},
    "Sydney": {"temp_f": 77, "sky": "windy"},
}


def get_weather(city: str) -> dict:
    if city not in FORECASTS:
        raise LookupError(f"no forecast for {city}")
    return {"city": city, **FORECASTS[city]}


def answer(question: str) -> dict:
    """The agent: find a known city, call the tool, answer; otherwise ask back."""
    city = next((c for c in FORECASTS if re.search(rf"\b{c}\b", question, re.IGNORECASE)), None)
    if city is None:
        return {"text": "Which city would you like the weather for?", "tool_calls": []}
    call = {"name": "get_weather", "args": {"city": city}}
    try:
        weather = get_weather(city)
    except LookupError as exc:
        call["error"] = str(exc)
        return {"text": f"Sorry, I could not get the weather for {city}.", "tool_calls": [call]}
    call["result"] = weather
    text = f"It is {weather['sky']} in {city}, {weather['temp_f']}F."
    return {"text": text, "tool_calls": [call]}


def broken_answer(question: str) -> dict:
    """A regression: the agent answers from memory and stops calling the tool."""
    return {"text": "It is probably nice out today.", "tool_calls": []}
