"""The built-in scorer types: `load_builtins()` registers every one of them.

Each module registers its factories with `@scorer_type` when it is imported; this is the one
place that imports them all, called by whatever needs the full registry (the loader, the schema).
"""

from __future__ import annotations

from evalgate.scorers.registry import REGISTRY, ScorerType


def load_builtins() -> dict[str, ScorerType]:
    """Register every built-in scorer type (idempotent) and return the registry.

    The registry lists the built-ins first, module by module in a fixed order, whatever was imported
    before: the JSON Schema and the "valid types" of an error message do not depend on import history.
    """
    from evalgate.scorers import checks, code, custom, judged, trajectory  # registering is the point

    modules = [m.__name__ for m in (checks, code, custom, judged, trajectory)]
    rank = {name: i for i, name in enumerate(modules)}
    ordered = sorted(REGISTRY.items(), key=lambda kv: rank.get(kv[1].factory.__module__, len(modules)))
    if list(REGISTRY.items()) != ordered:
        REGISTRY.clear()
        REGISTRY.update(ordered)
    return REGISTRY
