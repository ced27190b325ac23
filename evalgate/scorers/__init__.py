"""Scorers: the registry and every built-in type (importing this registers them)."""

from evalgate.scorers import checks, code, custom, judged, trajectory
from evalgate.scorers.base import NotScorable, Scorer
from evalgate.scorers.registry import REGISTRY, lookup

__all__ = ["REGISTRY", "NotScorable", "Scorer", "checks", "code", "custom", "judged", "lookup", "trajectory"]
