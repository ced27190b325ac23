"""What a target is: something that turns one turn of an item into a Run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from evalgate.load.cases import Case
from evalgate.replies import Run

History = Sequence[tuple[Any, Run]]  # (input, run) of the turns before this one


def trial_key(key: dict[str, Any], case: Case) -> dict[str, Any]:
    """A response-cache key for one trial: with `repeats`, each trial is its own request, never one cached
    reply served K times; without repeats the key is unchanged, so existing caches still hit."""
    return key if case.trial is None else {**key, "trial": case.trial}


class TargetError(Exception):
    """The target failed for this item; the message is recorded as the item's error."""


class Target(Protocol):
    #: False for targets with no I/O (recorded): the engine then runs items inline.
    concurrent: bool

    def run(self, case: Case, turn: int, history: History) -> Run:
        """The run for turn `turn` of `case`, given the conversation so far."""
        ...

    def close(self) -> None: ...
