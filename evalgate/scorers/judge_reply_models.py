"""The judge's JSON replies, one shape per judged scorer's prompt (`evalgate/judge/prompts.py`).

Imported when a judged scorer is built, not with the registry: a run without a judge never
builds these models.

Types are strict, as Mastra's judge-output schemas (JSON Schema, checked without coercion): a boolean
is no number, "yes" or 1 no boolean, a number no string. A reply of the wrong type is an invalid
reply (one repair, then a scorer error), where Mastra's scorer throws after its one retry.

As in Mastra's schemas, every verdict's `reason` is required (Mastra's `reason`, `reasoning` or
`explanation`; `""` is one), and so is a context chunk's `index` (`context_index`, a number, never
null). So is every text and list whose counterpart Mastra's schema requires: the statement, claim,
opinion, sentence, fact, contradiction, requirement or key point a verdict is about (a string, `""`
too; never null or a number), the index naming a tool call or a criterion (Mastra's `toolCalled`,
`criterion`), answer_similarity's `contradictions` and `extra`, prompt_alignment's requirement
`items` and `missing`. What Mastra leaves optional stays optional: toxicity's statement (Mastra's
verdicts have none), context_relevance's `missing_context` (default `[]`), tool_call_accuracy's
`missing_tools` and overall `reason`. A label Mastra reads as a free string is any string here,
compared as Mastra compares it (judged.py); a label Mastra lists as an enum must be one of the
prompt's, exactly as written.
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
    statement: str  # Mastra's extracted statements are strings, each required


class Statements(Reply):
    statements: list[Statement]


class Fact(Reply):
    # Mastra's matchType is an enum: another label, "Exact" too, is an invalid reply
    fact: str  # Mastra's `groundTruthUnit`
    verdict: Literal["exact", "semantic", "partial", "missing"]
    reason: str


class Contradiction(Reply):
    statement: str  # Mastra's `outputUnit`
    reason: str


class Facts(Reply):
    facts: list[Fact]
    # both lists are required in Mastra's schema (`contradictions`, `extraInOutput`): `[]` when none
    contradictions: list[Contradiction]
    extra: list[str]


class Claim(Verdict):
    claim: str


class Claims(Reply):
    claims: list[Claim]


class HallucinationClaim(Verdict):
    claim: str  # Mastra's claims and each verdict's `statement`


class HallucinationClaims(Reply):
    claims: list[HallucinationClaim]


class ToxicStatement(Verdict):
    statement: str = ""  # Mastra's toxicity verdicts have no statement: optional


class ToxicStatements(Reply):
    statements: list[ToxicStatement]


class Opinion(Verdict):
    opinion: str


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
    missing_context: list[str] = Field(default_factory=list)  # Mastra's `missingContext` defaults to []


class Sentence(Reply):
    sentence: str  # Mastra's extracted claims
    attributed: bool
    reason: str


class Sentences(Reply):
    sentences: list[Sentence]


class Component(Reply):
    score: Number  # Mastra's component scores are any numbers, and nothing clamps them
    reason: str


class Requirement(Reply):
    requirement: str
    fulfilled: bool
    reason: str


class Requirements(Reply):
    items: list[Requirement]  # Mastra's `requirements`: required, `[]` when none
    score: Number


class Completeness(Reply):
    score: Number
    missing: list[str]  # Mastra's `missingElements`: required
    reason: str


class Alignment(Reply):
    intent: Component
    requirements: Requirements
    completeness: Completeness
    appropriateness: Component


class KeyPoint(Reply):
    point: str  # Mastra's `question`
    covered: bool
    reason: str


class SummaryClaim(Reply):
    # Mastra's `supported` is a boolean: a label other than the prompt's is an invalid reply
    claim: str
    verdict: Annotated[Literal["supported", "contradicted", "unsupported"], BeforeValidator(_lower)]
    reason: str


class Summary(Reply):
    claims: list[SummaryClaim]
    key_points: list[KeyPoint]


class CallVerdict(Reply):
    index: Number  # names the call, as Mastra's required `toolCalled` does; any number, as any string there
    appropriate: bool
    reason: str


class ToolCalls(Reply):
    calls: list[CallVerdict]
    missing_tools: list[str] = Field(default_factory=list)  # optional in Mastra's schema too
    reason: str = ""  # Mastra's schema has no overall reason


class CriterionVerdict(Reply):
    # names the criterion, as Mastra's required `criterion` does; its `required` is that criterion's,
    # so an index naming none is an invalid reply (judged.py)
    index: Number
    satisfied: bool
    reason: str


class Criteria(Reply):
    criteria: list[CriterionVerdict]


class Grade(Reply):
    grade: Whole
    reason: str = ""
