"""evalgate: the eval gate for LLM agents (gates, thresholds and one verdict), in CI."""

__version__ = "0.1.0"

from evalgate.scorers import checks  # noqa: E402
from evalgate.scorers.base import NotScorable, Scorer  # noqa: E402
from evalgate.scorers.custom import scorer  # noqa: E402
from evalgate.api import EvalResult, run_evals, run_spec  # noqa: E402

__all__ = ["EvalResult", "NotScorable", "Scorer", "checks", "run_evals", "run_spec", "scorer", "__version__"]
