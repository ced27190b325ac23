"""The installed packages' entry points, read once per process: the scorer and target registries each
select their group (`evalgate.scorers`, `evalgate.targets`) from one scan of the installed distributions,
where a scan per group read every package's metadata twice (~7 ms each, on every run)."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Protocol


class _Selectable(Protocol):
    """What `entry_points()` gives without arguments (grouped before Python 3.12, flat since): both select."""

    def select(self, *, group: str) -> Iterable[EntryPoint]: ...


@functools.cache
def _installed() -> _Selectable:
    return entry_points()


def installed_entry_points(group: str) -> tuple[EntryPoint, ...]:
    """The entry points of `group`, as `importlib.metadata.entry_points(group=group)` lists them."""
    return tuple(_installed().select(group=group))
