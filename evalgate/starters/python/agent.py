"""The agent under test: evalgate calls `answer(input)` once per item of data.jsonl.

A stand-in that works offline (no model, no key): replace its body with your agent's call.
Return the reply's text, or a run mapping such as
    {"text": "...", "tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}, "result": {...}}]}
so the tool checks (`called_tool`, `no_tool_errors`, ...) can see what the agent did.
"""

CAPITALS = {"france": "Paris", "japan": "Tokyo", "kenya": "Nairobi", "peru": "Lima", "canada": "Ottawa"}


def answer(question: str) -> str:
    for country, capital in CAPITALS.items():
        if country in question.lower():
            return f"The capital of {country.title()} is {capital}."
    return "I do not know."
