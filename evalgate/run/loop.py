"""The run loop: it draws the cases, hands them to the engine and tells its listeners what happened.

Events, in the order a listener sees them (`Listener`'s methods):
- `item_started(case)`: a case is drawn from the data (a resumed or a budget-skipped one too);
- `trial_finished(trial)`: with repeats, each trial as it finishes (the engine merges an item's
  trials, a reducer over them, into the item's result);
- `item_finished(item)`: an item's result, as items finish (completion order);
- `item_in_order(item)`: the same results in data order, the order aggregation needs;
- `run_finished(result)`: once, after the last item or an interruption, each listener adding its part
  of the summary, in the order the listeners were given.
What each part of a run does with these (the journal, the aggregator, costs and budget, the shard
record, progress, the judge tally) is a listener in `evalgate/run/listeners.py`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence

from evalgate.load.cases import Case
from evalgate.results.writer import EvalResult
from evalgate.run.engine import ItemResult


class Listener:
    """A part of the run that follows its events; every method is optional (the base does nothing)."""

    def item_started(self, case: Case) -> None:
        """A case drawn from the data, in data order."""

    def trial_finished(self, trial: ItemResult) -> None:
        """One trial of an item run with repeats, as it finishes."""

    def item_finished(self, item: ItemResult) -> None:
        """An item's result, as items finish."""

    def item_in_order(self, item: ItemResult) -> None:
        """An item's result, in data order."""

    def run_finished(self, result: EvalResult) -> None:
        """The run is over (completed or interrupted): add this part of the summary."""


def _overriding(listeners: Sequence[Listener], event: str) -> list[Callable[..., None]]:
    """The listeners' handlers of `event` that do something (the base's no-ops are skipped: an event per
    item reaches only who follows it)."""
    base = getattr(Listener, event)
    return [getattr(listener, event) for listener in listeners if getattr(type(listener), event) is not base]


class Events:
    """Fans each event out to the listeners that follow it, in the order the listeners were given."""

    def __init__(self, listeners: Sequence[Listener]) -> None:
        self.started = _overriding(listeners, "item_started")
        self.trial = _overriding(listeners, "trial_finished")
        self.finished = _overriding(listeners, "item_finished")
        self.in_order = _overriding(listeners, "item_in_order")
        self.done = _overriding(listeners, "run_finished")

    def item_started(self, case: Case) -> None:
        for handle in self.started:
            handle(case)

    def trial_finished(self, trial: ItemResult) -> None:
        for handle in self.trial:
            handle(trial)

    def item_finished(self, item: ItemResult) -> None:
        for handle in self.finished:
            handle(item)

    def item_in_order(self, item: ItemResult) -> None:
        for handle in self.in_order:
            handle(item)

    def run_finished(self, result: EvalResult) -> None:
        for handle in self.done:
            handle(result)

    def drawn(self, cases: Iterable[Case]) -> Iterator[Case]:
        """The cases, each announced as it is drawn."""
        if not self.started:
            yield from cases
            return
        for case in cases:
            self.item_started(case)
            yield case


class DataOrder(Listener):
    """Turns `item_finished` (completion order) into `item_in_order` (data order): the cases drawn, in
    order (a shard's indices have gaps), and the results that finished before an earlier one.

    inline: the engine runs items one after another, so results already come in data order.
    """

    def __init__(self, inline: bool, emit: Callable[[ItemResult], None] | None = None) -> None:
        self.emit: Callable[[ItemResult], None] = emit or (lambda item: None)  # set to Events.item_in_order
        self.inline = inline
        self.waiting: dict[int, ItemResult] = {}
        self.order: deque[int] = deque()

    def item_started(self, case: Case) -> None:
        if not self.inline:
            self.order.append(case.index)

    def item_finished(self, item: ItemResult) -> None:
        if self.inline:
            self.emit(item)
        else:
            self.push(item)

    def push(self, result: ItemResult) -> None:
        """A result, in whatever order (a resumed item's too)."""
        order = self.order
        if not self.waiting and order and order[0] == result.index:
            order.popleft()
            self.emit(result)
            return
        self.waiting[result.index] = result
        while order and order[0] in self.waiting:
            self.emit(self.waiting.pop(order.popleft()))

    def drain(self) -> None:
        for index in sorted(self.waiting):
            self.emit(self.waiting.pop(index))
