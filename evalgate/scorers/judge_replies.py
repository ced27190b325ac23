"""The judge's JSON replies, one shape per judged scorer's prompt (`evalgate/judge/prompts.py`).

Imported when a judged scorer is built, not with the registry: a run without a judge never
builds these models.

Types are strict, as Mastra's judge-output schemas (JSON Schema, checked without coercion): a boolean
is no number, "yes" or 1 no boolean, a number no string. A reply of the wrong type is an invalid
reply (one repair, then a scorer error), where Mastra's scorer throws after its one retry.

As in Mastra's schemas, every verdict's `reason` is required (Mastra's `reason`, `reasoning` or
`explanation`; `""` is one), and so is a context chunk's `index` (`context_index`, a number, never
null). A label Mastra reads as a free string is any string here, compared as Mastra compares it
(judged.py); a label Mastra lists as an enum must be one of the prompt's, exactly as written.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


def _lower(value: Any) -> Any:
    return value.strip().lower().replace(" ", "_") if isinstance(value, str) else value


def _whole(value: Any) -> Any:
    # JSON.parse reads `3.0` as the number 3: a whole float is that whole number (booleans stay rejected)
    return int(value) if isinstance(value, float) and value.is_integer() else value


Number = float  # any JSON number, 1e400 (infinite) too: Mastra's context_index is a `number`
Whole = Annotated[int, BeforeValidator(_whole)]


class Reply(BaseModel):
    # strict: no bool-to-number, "yes"-to-bool or "0.5"-to-float coercion; a judge may add keys of its own
    model_config = ConfigDict(extra="ignore", strict=True)


class Verdict(Reply):
    """One judged piece of the output: its verdict as the judge wrote it, and why.

    Mastra's verdicts are free strings its scorers compare with their one counted word, so any
    label scores (judged.py compares it as Mastra does). Subclasses add the piece itself.
    """

    verdict: str
    reason: str


class Statement(Verdict):
    statement: str = ""


class Statements(Reply):
    statements: list[Statement]


class Fact(Reply):
    # Mastra's matchType is an enum: another label, "Exact" too, is an invalid reply
    fact: str = ""
    verdict: Literal["exact", "semantic", "partial", "missing"]
    reason: str


class Contradiction(Reply):
    statement: str = ""
    reason: str


class Facts(Reply):
    facts: list[Fact]
    contradictions: list[Contradiction] = Field(default_factory=list)
    extra: list[str] = Field(default_factory=list)


class Claim(Verdict):
    claim: str = ""


class Claims(Reply):
    claims: list[Claim]


class HallucinationClaim(Verdict):
    claim: str = ""


class HallucinationClaims(Reply):
    claims: list[HallucinationClaim]


class ToxicStatement(Verdict):
    statement: str = ""


class ToxicStatements(Reply):
    statements: list[ToxicStatement]


class Opinion(Verdict):
    opinion: str = ""


class Opinions(Reply):
    opinions: list[Opinion]


class Useful(Reply):
    index: Number
    useful: bool
    reason: str


class UsefulVerdicts(Reply):
    verdicts: list[Useful]


class Relevance(Reply):
    index: Number
    relevance: Literal["high", "medium", "low", "none"]  # Mastra's relevanceLevel enum, exactly
    used: bool
    reason: str


class RelevanceVerdicts(Reply):
    verdicts: list[Relevance]
    missing_context: list[str] = Field(default_factory=list)


class Sentence(Reply):
    sentence: str = ""
    attributed: bool
    reason: str


class Sentences(Reply):
    sentences: list[Sentence]


class Component(Reply):
    score: Number  # Mastra's component scores are any numbers, and nothing clamps them
    reason: str


class Requirement(Reply):
    requirement: str = ""
    fulfilled: bool
    reason: str


class Requirements(Reply):
    items: list[Requirement] = Field(default_factory=list)
    score: Number


class Completeness(Reply):
    score: Number
    missing: list[str] = Field(default_factory=list)
    reason: str


class Alignment(Reply):
    intent: Component
    requirements: Requirements
    completeness: Completeness
    appropriateness: Component


class KeyPoint(Reply):
    point: str = ""
    covered: bool
    reason: str


class SummaryClaim(Reply):
    # Mastra's `supported` is a boolean: a label other than the prompt's is an invalid reply
    claim: str = ""
    verdict: Annotated[Literal["supported", "contradicted", "unsupported"], BeforeValidator(_lower)]
    reason: str


class Summary(Reply):
    claims: list[SummaryClaim]
    key_points: list[KeyPoint]


class CallVerdict(Reply):
    index: Number | None = None
    appropriate: bool
    reason: str


class ToolCalls(Reply):
    calls: list[CallVerdict]
    missing_tools: list[str] = Field(default_factory=list)
    reason: str = ""


class CriterionVerdict(Reply):
    index: Number | None = None
    satisfied: bool
    reason: str


class Criteria(Reply):
    criteria: list[CriterionVerdict]


class Grade(Reply):
    grade: Whole
    reason: str = ""
