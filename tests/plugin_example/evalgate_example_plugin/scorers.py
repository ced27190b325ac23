"""The `shouts` scorer: 1 if the run's text has letters and all of them are upper case."""

from __future__ import annotations

from typing import Any

from evalgate.load.items import Item
from evalgate.replies import Run
from evalgate.scorers.registry import scorer_type


@scorer_type("shouts")
def shouts(min_letters: int = 1) -> Any:
    """1 if the run's text has at least `min_letters` letters and none is lower case."""

    def score(item: Item, run: Run) -> float:
        letters = [c for c in run.text if c.isalpha()]
        return 1.0 if len(letters) >= min_letters and all(c.isupper() for c in letters) else 0.0

    return score
