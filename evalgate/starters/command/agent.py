"""The agent under test, as a command: evalgate starts it once per item.

Its stdin is the item as one JSON object (`id`, `input`, `ground_truth`, `metadata`, ...); what it
prints is the reply: plain text, or a JSON run such as {"text": "...", "tool_calls": [...]}.
A stand-in that works offline: replace it with your agent, in any language.
"""

import json
import sys

CAPITALS = {"france": "Paris", "japan": "Tokyo", "kenya": "Nairobi", "peru": "Lima", "canada": "Ottawa"}


def answer(question: str) -> str:
    for country, capital in CAPITALS.items():
        if country in question.lower():
            return f"The capital of {country.title()} is {capital}."
    return "I do not know."


if __name__ == "__main__":
    item = json.load(sys.stdin)
    print(json.dumps({"text": answer(str(item["input"]))}))
