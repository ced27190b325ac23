"""The spec file's models, its JSON Schema and the context its entries are built in.

Imports nothing of evalgate above the item model: no scorer, target or loader.
"""

from evalgate.load.spec.context import BuildContext
from evalgate.load.spec.models import (
    TARGET_TYPES,
    BudgetSpec,
    CacheSettings,
    CommandTarget,
    HttpTarget,
    JudgeSpec,
    MastraMemory,
    MastraTarget,
    OpenAITarget,
    PythonTarget,
    RecordedTarget,
    ResponseMapping,
    RetrySettings,
    Spec,
    StatusMapping,
    TargetSpec,
    TlsSettings,
)

__all__ = [
    "TARGET_TYPES",
    "BudgetSpec",
    "BuildContext",
    "CacheSettings",
    "CommandTarget",
    "HttpTarget",
    "JudgeSpec",
    "MastraMemory",
    "MastraTarget",
    "OpenAITarget",
    "PythonTarget",
    "RecordedTarget",
    "ResponseMapping",
    "RetrySettings",
    "Spec",
    "StatusMapping",
    "TargetSpec",
    "TlsSettings",
]
