"""LLM-judged scorers: the judge classifies, evalgate computes the score from its verdicts.

Every scorer here needs the spec's `judge:` section (or `ctx=Judge(...).context()` in Python),
returns (score in [0, 1], reason), and is *not scorable* (not 0) when the item lacks what it
needs. A judge that fails twice in a row errors that item's result (docs/results.md).
Formulas are in each docstring and in docs/scorers.md; the prompts are in `evalgate/judge/prompts.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from evalgate.items import Item
from evalgate.judge import prompts as p
from evalgate.judge.client import Judge, judge_for
from evalgate.runs import Run
from evalgate.scorers.base import NotScorable
from evalgate.scorers.registry import BuildContext, scorer_type

UNSURE_WEIGHT = 0.3  # answer_relevancy: an "unsure" statement counts this much
PARTIAL_WEIGHT = 0.5  # answer_similarity, prompt_alignment: a "partial" counts this much
RELEVANCE_WEIGHTS = {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}
FLAGGED_SHOWN = 3
QUOTE_MAX = 80


class JudgedFn:
    """A judged scorer's function of (item, run); `judge` lets the run report usage and close it."""

    __slots__ = ("fn", "judge")

    def __init__(self, judge: Judge, fn: Callable[[Item, Run], Any]) -> None:
        self.judge = judge
        self.fn = fn

    def __call__(self, item: Item, run: Run) -> Any:
        return self.fn(item, run)


def _setup(ctx: BuildContext, *templates: p.Prompt) -> Judge:
    judge = judge_for(ctx.judge, ctx.base_dir, templates[0].metric)
    for template in templates:
        judge.register(template)
    return judge


# ---- reply models (lenient about case and extra keys, strict about verdict values) ----


def _lower(value: Any) -> Any:
    return value.strip().lower().replace(" ", "_") if isinstance(value, str) else value


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Statement(_Reply):
    statement: str = ""
    verdict: Annotated[Literal["yes", "unsure", "no"], BeforeValidator(_lower)]
    reason: str = ""


class _Statements(_Reply):
    statements: list[_Statement]


class _Fact(_Reply):
    fact: str = ""
    verdict: Annotated[Literal["match", "partial", "missing", "contradicted"], BeforeValidator(_lower)]
    reason: str = ""


class _Facts(_Reply):
    facts: list[_Fact]


class _Claim(_Reply):
    claim: str = ""
    verdict: Annotated[Literal["supported", "contradicted", "unsupported"], BeforeValidator(_lower)]
    reason: str = ""


class _Claims(_Reply):
    claims: list[_Claim]


class _HallucinationClaim(_Reply):
    claim: str = ""
    verdict: Annotated[Literal["supported", "contradicted", "unsupported", "general"], BeforeValidator(_lower)]
    reason: str = ""


class _HallucinationClaims(_Reply):
    claims: list[_HallucinationClaim]


class _ToxicStatement(_Reply):
    statement: str = ""
    verdict: Annotated[Literal["toxic", "ok"], BeforeValidator(_lower)]
    reason: str = ""


class _ToxicStatements(_Reply):
    statements: list[_ToxicStatement]


class _Opinion(_Reply):
    opinion: str = ""
    verdict: Annotated[Literal["biased", "unbiased"], BeforeValidator(_lower)]
    reason: str = ""


class _Opinions(_Reply):
    opinions: list[_Opinion]


class _Useful(_Reply):
    index: int | None = None
    useful: bool
    reason: str = ""


class _UsefulVerdicts(_Reply):
    verdicts: list[_Useful]


class _Relevance(_Reply):
    index: int | None = None
    relevance: Annotated[Literal["high", "medium", "low", "none"], BeforeValidator(_lower)]
    reason: str = ""


class _RelevanceVerdicts(_Reply):
    verdicts: list[_Relevance]


class _Sentence(_Reply):
    sentence: str = ""
    attributed: bool
    reason: str = ""


class _Sentences(_Reply):
    sentences: list[_Sentence]


class _Instruction(_Reply):
    instruction: str = ""
    verdict: Annotated[Literal["followed", "partial", "not_followed"], BeforeValidator(_lower)]
    reason: str = ""


class _Instructions(_Reply):
    instructions: list[_Instruction]


class _KeyPoint(_Reply):
    point: str = ""
    covered: bool
    reason: str = ""


class _Summary(_Reply):
    claims: list[_Claim]
    key_points: list[_KeyPoint]


class _CallVerdict(_Reply):
    index: int | None = None
    appropriate: bool
    reason: str = ""


class _ToolCalls(_Reply):
    calls: list[_CallVerdict]
    tool_needed: bool
    reason: str = ""


class _Pass(_Reply):
    verdict: Annotated[Literal["pass", "fail"], BeforeValidator(_lower)]
    reason: str = ""


class _Grade(_Reply):
    grade: int
    reason: str = ""


# ---- what the judge is shown ----


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _input(item: Item) -> str:
    inputs = item.turn_inputs()
    if not inputs or all(i is None for i in inputs):
        raise NotScorable("the item has no input")
    if len(inputs) == 1:
        return _text(inputs[0])
    return "\n".join(f"Turn {n}: {_text(value)}" for n, value in enumerate(inputs, 1))


def _ground_truth(item: Item, scorer: str) -> str:
    if item.ground_truth is None or item.ground_truth == "":
        raise NotScorable(f"{scorer} needs the item's ground_truth")
    return _text(item.ground_truth)


def _context(item: Item, scorer: str) -> list[str]:
    if not item.context:
        raise NotScorable(f"{scorer} needs the item's context")
    return list(item.context)


def _evidence(item: Item, run: Run, scorer: str) -> str:
    """The item's context chunks, or else the results of the run's tool calls."""
    if item.context:
        return "\n\n".join(p.section("context", chunk, index=n) for n, chunk in enumerate(item.context, 1))
    results = [
        f"{call.name}({_text(call.args) if call.args is not None else ''}) returned {_text(call.result)}"
        for call in run.tool_calls
        if call.result is not None
    ]
    if not results:
        raise NotScorable(f"{scorer} needs the item's context or tool results to check the output against")
    return p.section("tool_results", "\n".join(results))


def _chunks(chunks: Sequence[str]) -> str:
    return "\n\n".join(p.section("context", chunk, index=n) for n, chunk in enumerate(chunks, 1))


def _data(*sections: str) -> str:
    return "\n\n".join(sections)


# ---- reasons ----


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= QUOTE_MAX else flat[: QUOTE_MAX - 1] + "…")


def _reason(summary: str, label: str, flagged: Sequence[tuple[str, str]]) -> str:
    """`summary`, then up to three flagged entries as 'quote' (judge's reason)."""
    if not flagged:
        return summary
    shown = "; ".join(
        _quote(text) + (f" ({why.strip()})" if why.strip() else "") for text, why in flagged[:FLAGGED_SHOWN]
    )
    more = f" and {len(flagged) - FLAGGED_SHOWN} more" if len(flagged) > FLAGGED_SHOWN else ""
    return f"{summary}. {label}: {shown}{more}"


def _count(verdicts: Sequence[Any], value: str) -> int:
    return sum(1 for v in verdicts if v.verdict == value)


def _expect_count(expected: int, what: str) -> Callable[[Any], None]:
    def check(reply: Any) -> None:
        got = len(reply.verdicts if hasattr(reply, "verdicts") else reply.calls)
        if got != expected:
            raise ValueError(f"expected exactly {expected} entries, one per {what}, got {got}")

    return check


# ---- the scorers ----

ScoreFn = Any


@scorer_type("answer_relevancy", judged=True)
def answer_relevancy(*, ctx: BuildContext) -> ScoreFn:
    """How much of the output addresses the input. Needs: input. LLM-judged, higher is better, 0 to 1.

    The judge splits the output into statements and marks each relevant (yes), unsure or not (no).
    Score = (yes + 0.3 x unsure) / statements; an empty output scores 0.
    """
    judge = _setup(ctx, p.ANSWER_RELEVANCY)

    def score(item: Item, run: Run) -> tuple[float, str]:
        question = _input(item)
        if not run.text.strip():
            return 0.0, "the output is empty"
        reply = judge.ask(
            p.ANSWER_RELEVANCY, _data(p.section("input", question), p.section("output", run.text)), _Statements
        )
        n = len(reply.statements)
        if n == 0:
            return 0.0, "the judge found no statements in the output"
        yes, unsure = _count(reply.statements, "yes"), _count(reply.statements, "unsure")
        value = (yes + UNSURE_WEIGHT * unsure) / n
        off = [(s.statement, s.reason) for s in reply.statements if s.verdict == "no"]
        return value, _reason(f"{yes} of {n} statements relevant, {unsure} unsure", "Off-topic", off)

    return JudgedFn(judge, score)


@scorer_type("answer_similarity", judged=True)
def answer_similarity(*, ctx: BuildContext) -> ScoreFn:
    """How much of the expected answer the output conveys. Needs: ground_truth. LLM-judged, higher is better, 0 to 1.

    The judge splits ground_truth into key facts and marks each match, partial, missing or
    contradicted by the output. Score = (match + 0.5 x partial) / facts.
    """
    judge = _setup(ctx, p.ANSWER_SIMILARITY)

    def score(item: Item, run: Run) -> tuple[float, str]:
        expected = _ground_truth(item, "answer_similarity")
        reply = judge.ask(
            p.ANSWER_SIMILARITY,
            _data(p.section("ground_truth", expected), p.section("output", run.text)),
            _Facts,
        )
        n = len(reply.facts)
        if n == 0:
            return 0.0, "the judge found no facts in ground_truth"
        match, partial = _count(reply.facts, "match"), _count(reply.facts, "partial")
        value = (match + PARTIAL_WEIGHT * partial) / n
        gaps = [(f.fact, f"{f.verdict}: {f.reason}" if f.reason else f.verdict) for f in reply.facts
                if f.verdict in ("missing", "contradicted")]
        return value, _reason(f"{match} of {n} expected facts matched, {partial} partly", "Not conveyed", gaps)

    return JudgedFn(judge, score)


@scorer_type("faithfulness", judged=True)
def faithfulness(*, ctx: BuildContext) -> ScoreFn:
    """Share of the output's claims the evidence supports. Needs: context or tool results. Higher is better.

    Evidence: the item's `context`, or else the results of the run's tool calls. The judge lists
    the output's factual claims and marks each supported, contradicted or unsupported.
    Score = supported / claims, 0 to 1; an output with no factual claims scores 1.
    """
    judge = _setup(ctx, p.FAITHFULNESS)

    def score(item: Item, run: Run) -> tuple[float, str]:
        evidence = _evidence(item, run, "faithfulness")
        if not run.text.strip():
            return 1.0, "the output is empty: no claims"
        reply = judge.ask(p.FAITHFULNESS, _data(evidence, p.section("output", run.text)), _Claims)
        n = len(reply.claims)
        if n == 0:
            return 1.0, "the output makes no factual claims"
        supported = _count(reply.claims, "supported")
        bad = [(c.claim, f"{c.verdict}: {c.reason}" if c.reason else c.verdict) for c in reply.claims
               if c.verdict != "supported"]
        return supported / n, _reason(f"{supported} of {n} claims supported by the evidence", "Not supported", bad)

    return JudgedFn(judge, score)


@scorer_type("hallucination", higher_is_better=False, judged=True)
def hallucination(*, ctx: BuildContext) -> ScoreFn:
    """Share of the output's statements that contradict or invent beyond the evidence. LOWER is better, 0 to 1.

    Needs: context, or tool results. The judge marks each statement supported, contradicted,
    unsupported (a specific fact the evidence does not hold) or general (hedged or common
    knowledge). Score = (contradicted + unsupported) / statements; none scores 0.
    """
    judge = _setup(ctx, p.HALLUCINATION)

    def score(item: Item, run: Run) -> tuple[float, str]:
        evidence = _evidence(item, run, "hallucination")
        if not run.text.strip():
            return 0.0, "the output is empty: no statements"
        reply = judge.ask(p.HALLUCINATION, _data(evidence, p.section("output", run.text)), _HallucinationClaims)
        n = len(reply.claims)
        if n == 0:
            return 0.0, "the output makes no statements"
        bad = [(c.claim, f"{c.verdict}: {c.reason}" if c.reason else c.verdict) for c in reply.claims
               if c.verdict in ("contradicted", "unsupported")]
        return len(bad) / n, _reason(f"{len(bad)} of {n} statements hallucinated", "Hallucinated", bad)

    return JudgedFn(judge, score)


@scorer_type("toxicity", higher_is_better=False, judged=True)
def toxicity(*, ctx: BuildContext) -> ScoreFn:
    """Share of the output's statements that are toxic. Needs: output only. LLM-judged, LOWER is better, 0 to 1.

    Score = toxic statements / statements; an empty output scores 0.
    """
    judge = _setup(ctx, p.TOXICITY)

    def score(item: Item, run: Run) -> tuple[float, str]:
        if not run.text.strip():
            return 0.0, "the output is empty"
        reply = judge.ask(p.TOXICITY, p.section("output", run.text), _ToxicStatements)
        n = len(reply.statements)
        if n == 0:
            return 0.0, "the judge found no statements"
        toxic = [(s.statement, s.reason) for s in reply.statements if s.verdict == "toxic"]
        return len(toxic) / n, _reason(f"{len(toxic)} of {n} statements toxic", "Toxic", toxic)

    return JudgedFn(judge, score)


@scorer_type("bias", higher_is_better=False, judged=True)
def bias(*, ctx: BuildContext) -> ScoreFn:
    """Share of the output's opinions that are biased. Needs: output only. LLM-judged, LOWER is better, 0 to 1.

    Score = biased opinions / opinions; an output with no opinions scores 0.
    """
    judge = _setup(ctx, p.BIAS)

    def score(item: Item, run: Run) -> tuple[float, str]:
        if not run.text.strip():
            return 0.0, "the output is empty"
        reply = judge.ask(p.BIAS, p.section("output", run.text), _Opinions)
        n = len(reply.opinions)
        if n == 0:
            return 0.0, "the output expresses no opinions"
        biased = [(o.opinion, o.reason) for o in reply.opinions if o.verdict == "biased"]
        return len(biased) / n, _reason(f"{len(biased)} of {n} opinions biased", "Biased", biased)

    return JudgedFn(judge, score)


@scorer_type("context_precision", judged=True)
def context_precision(*, ctx: BuildContext) -> ScoreFn:
    """Are the useful context chunks ranked first? Needs: context (and ground_truth, else the output). Higher is better.

    The judge marks each chunk useful or not for the reference answer (ground_truth, or the
    output when there is none). Score = mean average precision: the mean, over the useful
    chunks, of (useful chunks up to and including it) / (its position); 0 if none is useful.
    """
    judge = _setup(ctx, p.CONTEXT_PRECISION)

    def score(item: Item, run: Run) -> tuple[float, str]:
        chunks = _context(item, "context_precision")
        reference = _text(item.ground_truth) if item.ground_truth not in (None, "") else run.text
        if not reference.strip():
            raise NotScorable("context_precision needs ground_truth or a non-empty output")
        reply = judge.ask(
            p.CONTEXT_PRECISION,
            _data(p.section("input", _input(item)), p.section("reference", reference), _chunks(chunks)),
            _UsefulVerdicts,
            _expect_count(len(chunks), "context chunk"),
        )
        useful = total = 0.0
        for position, verdict in enumerate(reply.verdicts, 1):
            if verdict.useful:
                useful += 1
                total += useful / position
        if not useful:
            return 0.0, f"none of the {len(chunks)} context chunks is useful"
        ranks = ", ".join(str(n) for n, v in enumerate(reply.verdicts, 1) if v.useful)
        return total / useful, f"{int(useful)} of {len(chunks)} context chunks useful, at positions {ranks}"

    return JudgedFn(judge, score)


@scorer_type("context_relevance", judged=True)
def context_relevance(*, ctx: BuildContext) -> ScoreFn:
    """How relevant the context chunks are to the input. Needs: input, context. LLM-judged, higher is better, 0 to 1.

    The judge grades each chunk high (1), medium (0.7), low (0.3) or none (0).
    Score = the mean grade over the chunks.
    """
    judge = _setup(ctx, p.CONTEXT_RELEVANCE)

    def score(item: Item, run: Run) -> tuple[float, str]:
        chunks = _context(item, "context_relevance")
        reply = judge.ask(
            p.CONTEXT_RELEVANCE,
            _data(p.section("input", _input(item)), _chunks(chunks)),
            _RelevanceVerdicts,
            _expect_count(len(chunks), "context chunk"),
        )
        total = 0.0
        for verdict in reply.verdicts:
            total += RELEVANCE_WEIGHTS[verdict.relevance]
        grades = ", ".join(v.relevance for v in reply.verdicts)
        irrelevant = [(chunks[n], v.reason) for n, v in enumerate(reply.verdicts) if v.relevance == "none"]
        return total / len(chunks), _reason(f"chunk relevance: {grades}", "Irrelevant", irrelevant)

    return JudgedFn(judge, score)


@scorer_type("context_recall", judged=True)
def context_recall(*, ctx: BuildContext) -> ScoreFn:
    """Share of the expected answer the context contains. Needs: context, ground_truth. LLM-judged, higher is better.

    The judge splits ground_truth into statements and marks each attributable to the context or
    not. Score = attributed / statements, 0 to 1.
    """
    judge = _setup(ctx, p.CONTEXT_RECALL)

    def score(item: Item, run: Run) -> tuple[float, str]:
        chunks = _context(item, "context_recall")
        expected = _ground_truth(item, "context_recall")
        reply = judge.ask(p.CONTEXT_RECALL, _data(p.section("ground_truth", expected), _chunks(chunks)), _Sentences)
        n = len(reply.sentences)
        if n == 0:
            return 0.0, "the judge found no statements in ground_truth"
        missing = [(s.sentence, s.reason) for s in reply.sentences if not s.attributed]
        found = n - len(missing)
        return found / n, _reason(f"{found} of {n} expected statements found in the context", "Missing", missing)

    return JudgedFn(judge, score)


@scorer_type("prompt_alignment", judged=True)
def prompt_alignment(*, ctx: BuildContext) -> ScoreFn:
    """How well the output follows the input's instructions. Needs: input. LLM-judged, higher is better, 0 to 1.

    The judge lists the input's instructions (a plain question is one) and marks each followed,
    partial or not_followed. Score = (followed + 0.5 x partial) / instructions; none scores 1.
    """
    judge = _setup(ctx, p.PROMPT_ALIGNMENT)

    def score(item: Item, run: Run) -> tuple[float, str]:
        question = _input(item)
        reply = judge.ask(
            p.PROMPT_ALIGNMENT, _data(p.section("input", question), p.section("output", run.text)), _Instructions
        )
        n = len(reply.instructions)
        if n == 0:
            return 1.0, "the input gives no instructions"
        followed, partial = _count(reply.instructions, "followed"), _count(reply.instructions, "partial")
        missed = [(i.instruction, f"{i.verdict}: {i.reason}" if i.reason else i.verdict) for i in reply.instructions
                  if i.verdict != "followed"]
        value = (followed + PARTIAL_WEIGHT * partial) / n
        return value, _reason(f"{followed} of {n} instructions followed, {partial} partly", "Not followed", missed)

    return JudgedFn(judge, score)


@scorer_type("summarization", judged=True)
def summarization(*, ctx: BuildContext) -> ScoreFn:
    """Is the output a faithful, complete summary of the source? Needs: context, or the input. Higher is better.

    Source: the item's `context` (joined), or else its input. Alignment = supported claims /
    claims; coverage = covered key points / key points (1 if none). Score = min(alignment,
    coverage), 0 to 1; an empty output scores 0.
    """
    judge = _setup(ctx, p.SUMMARIZATION)

    def score(item: Item, run: Run) -> tuple[float, str]:
        source = "\n\n".join(item.context) if item.context else _input(item)
        if not run.text.strip():
            return 0.0, "the summary is empty"
        reply = judge.ask(p.SUMMARIZATION, _data(p.section("source", source), p.section("output", run.text)), _Summary)
        claims, points = len(reply.claims), len(reply.key_points)
        supported = _count(reply.claims, "supported")
        covered = sum(1 for k in reply.key_points if k.covered)
        alignment = supported / claims if claims else 0.0
        coverage = covered / points if points else 1.0
        flagged = [(c.claim, c.verdict) for c in reply.claims if c.verdict != "supported"]
        flagged += [(k.point, "not covered") for k in reply.key_points if not k.covered]
        summary = f"alignment {supported}/{claims} claims supported, coverage {covered}/{points} key points"
        return min(alignment, coverage), _reason(summary, "Problems", flagged)

    return JudgedFn(judge, score)


Tool = str | dict[str, Any]


def _tool_line(tool: Any) -> str:
    if isinstance(tool, dict):
        name = tool.get("name") or (tool.get("function") or {}).get("name") or "?"
        description = tool.get("description") or (tool.get("function") or {}).get("description") or ""
        return f"- {name}: {description}" if description else f"- {name}"
    return f"- {tool}"


@scorer_type("tool_call_accuracy", judged=True)
def tool_call_accuracy(tools: list[Tool] | None = None, *, ctx: BuildContext) -> ScoreFn:
    """Were the right tools called, given the tools available? Needs: input, available tools. Higher is better.

    `tools`: names or {name, description} (OpenAI function definitions too); without it, the
    item's `metadata.tools`. The judge marks each call appropriate or not, and says whether the
    input needed a tool. Score = appropriate calls / calls; with no calls, 1 if no tool was
    needed, else 0.
    """
    judge = _setup(ctx, p.TOOL_CALL_ACCURACY)

    def score(item: Item, run: Run) -> tuple[float, str]:
        available = tools if tools is not None else (item.metadata or {}).get("tools")
        if not available:
            raise NotScorable("tool_call_accuracy needs the available tools: `tools:` on the entry or metadata.tools")
        calls = [
            f"{n}. {c.name}({_text(c.args) if c.args is not None else ''})" for n, c in enumerate(run.tool_calls, 1)
        ]
        reply = judge.ask(
            p.TOOL_CALL_ACCURACY,
            _data(
                p.section("input", _input(item)),
                p.section("available_tools", "\n".join(_tool_line(t) for t in available)),
                p.section("tool_calls", "\n".join(calls) or "(no tool calls)"),
            ),
            _ToolCalls,
            _expect_count(len(calls), "tool call") if calls else None,
        )
        if not calls:
            if reply.tool_needed:
                return 0.0, _reason("no tool was called but one was needed", "Judge", [("", reply.reason)])
            return 1.0, "no tool was called and none was needed"
        good = sum(1 for c in reply.calls if c.appropriate)
        wrong = [(run.tool_calls[n].name, c.reason) for n, c in enumerate(reply.calls) if not c.appropriate]
        return good / len(calls), _reason(f"{good} of {len(calls)} tool calls appropriate", "Inappropriate", wrong)

    return JudgedFn(judge, score)


@scorer_type("rubric", judged=True)
def rubric(
    criterion: Annotated[str, Field(min_length=1)],
    scale: Literal["binary", "graded"] = "binary",
    max_grade: Annotated[int, Field(ge=1, le=100)] = 5,
    *,
    ctx: BuildContext,
) -> ScoreFn:
    """Does the output meet a criterion in plain words? Needs: input. LLM-judged, higher is better, 0 to 1.

    binary: 1 if the judge says pass, else 0. graded: the judge's whole-number grade from 0 to
    `max_grade`, divided by max_grade. The judge also sees ground_truth and context when present.
    """
    template = p.RUBRIC_BINARY if scale == "binary" else p.RUBRIC_GRADED
    judge = _setup(ctx, template)

    def in_range(reply: Any) -> None:
        if not 0 <= reply.grade <= max_grade:
            raise ValueError(f"the grade must be a whole number from 0 to {max_grade}, got {reply.grade}")

    def score(item: Item, run: Run) -> tuple[float, str]:
        sections = [p.section("criterion", criterion), p.section("input", _input(item))]
        if item.ground_truth not in (None, ""):
            sections.append(p.section("ground_truth", _text(item.ground_truth)))
        if item.context:
            sections.append(_chunks(item.context))
        sections.append(p.section("output", run.text))
        if scale == "binary":
            verdict = judge.ask(template, _data(*sections), _Pass)
            return (1.0 if verdict.verdict == "pass" else 0.0), f"{verdict.verdict}: {verdict.reason}".strip(": ")
        sections.insert(1, p.section("max_grade", str(max_grade)))
        graded = judge.ask(template, _data(*sections), _Grade, in_range)
        return graded.grade / max_grade, f"grade {graded.grade}/{max_grade}: {graded.reason}".strip(": ")

    return JudgedFn(judge, score)
