"""evalgate: the eval gate for LLM agents (gates, thresholds and one verdict), in CI."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from evalgate.api import run_evals, run_spec
    from evalgate.decide.comparison import Comparison, compare
    from evalgate.judge import Judge
    from evalgate.results.merge import MergeError, merge
    from evalgate.results.writer import EvalResult
    from evalgate.scorers import checks
    from evalgate.scorers.base import NotScorable, Scorer
    from evalgate.scorers.custom import scorer

# The public API, imported on first use: `evalgate --help` and the Action start without
# building every scorer model or loading the HTTP stack.
_EXPORTS = {
    "EvalResult": "evalgate.api",
    "run_evals": "evalgate.api",
    "run_spec": "evalgate.api",
    "compare": "evalgate.decide.comparison",
    "Comparison": "evalgate.decide.comparison",
    "Judge": "evalgate.judge",
    "merge": "evalgate.results.merge",
    "MergeError": "evalgate.results.merge",
    "checks": "evalgate.scorers.checks",  # the module itself (_MODULES)
    "NotScorable": "evalgate.scorers.base",
    "Scorer": "evalgate.scorers.base",
    "scorer": "evalgate.scorers.custom",
}

_MODULES = {"checks"}  # names that are a module, not a name in it

__all__ = ["Comparison", "EvalResult", "Judge", "MergeError", "NotScorable", "Scorer", "__version__", "checks",
           "compare", "merge", "run_evals", "run_spec", "scorer"]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evalgate' has no attribute {name!r}")
    imported = importlib.import_module(module)
    value = imported if name in _MODULES else getattr(imported, name)
    globals()[name] = value
    return value
