"""The built-in scorer types, and the installed plug-ins': `load_builtins()` registers every one.

Each module registers its factories with `@scorer_type` when it is imported; this is the one
place that imports them all, called by whatever needs the full registry (the loader, the schema).
A third-party package adds scorer types through the `evalgate.scorers` entry points
(docs/scorers.md): loading one imports its module, whose `@scorer_type` factories register.
"""

from __future__ import annotations

import logging
import threading

from evalgate.infra.plugins import installed_entry_points
from evalgate.scorers.registry import REGISTRY, ScorerType

ENTRY_POINTS = "evalgate.scorers"
PLUGIN_PROBLEMS: dict[str, str] = {}  # entry point name -> why it did not load
log = logging.getLogger(__name__)
_plugins = threading.Lock()
_plugins_loaded = False


def load_builtins() -> dict[str, ScorerType]:
    """Register every built-in scorer type, then the plug-ins' (idempotent), and return the registry.

    The registry lists the built-ins first, module by module in a fixed order, whatever was imported
    before: the JSON Schema and the "valid types" of an error message do not depend on import history.
    """
    from evalgate.scorers import checks, code, custom, judged, trajectory  # registering is the point

    _load_plugins()
    modules = [m.__name__ for m in (checks, code, custom, judged, trajectory)]
    rank = {name: i for i, name in enumerate(modules)}
    ordered = sorted(REGISTRY.items(), key=lambda kv: rank.get(kv[1].factory.__module__, len(modules)))
    if list(REGISTRY.items()) != ordered:
        REGISTRY.clear()
        REGISTRY.update(ordered)
    return REGISTRY


def _load_plugins() -> None:
    """Import each `evalgate.scorers` entry point once. One that fails to import, or would replace a
    built-in type, is kept in PLUGIN_PROBLEMS (a spec naming it is told why); the others load."""
    global _plugins_loaded
    with _plugins:
        if _plugins_loaded:
            return
        _plugins_loaded = True
        for point in installed_entry_points(ENTRY_POINTS):
            before = dict(REGISTRY)
            try:
                point.load()
            except Exception as exc:  # a broken plug-in costs only the specs that use it
                PLUGIN_PROBLEMS[point.name] = f"`{point.value}` failed to load: {type(exc).__name__}: {exc}"
                continue
            replaced = [name for name, entry in before.items() if REGISTRY.get(name) is not entry]
            if replaced:
                REGISTRY.update(before)  # a built-in keeps its name: a spec's meaning never depends on a plug-in
                PLUGIN_PROBLEMS[point.name] = f"`{point.value}` would replace the scorer type(s) {replaced}"
            else:
                log.debug("scorer types %s from the entry point %s", sorted(REGISTRY.keys() - before.keys()),
                          point.value)
