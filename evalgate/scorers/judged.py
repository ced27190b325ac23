"""LLM-judged scorers: the judge classifies, evalgate computes the score from its verdicts.

Every scorer here needs the spec's `judge:` section (or `ctx=Judge(...).context()` in Python) and
returns (score in [0, 1], reason). Each gives the number Mastra's scorer of the same name gives
(`@mastra/evals` 1.10.2) on the same judge verdicts: it judges the same messages (the last
assistant message with text, and the user's first message), computes Mastra's formula with its
edge cases, and rounds to 2 decimals. The prompts are evalgate's own (`evalgate/judge/prompts.py`); the judge's
answer carries what Mastra's formula needs, in one call where Mastra makes two or three.

Verdict labels are read as Mastra reads its judge's: where Mastra's verdict is a free string, a label
the prompt does not list (a "maybe") is just not the counted word, compared as that Mastra scorer
compares it (trimmed and lower-cased for answer_relevancy and toxicity, lower-cased for bias,
exactly for faithfulness and hallucination); where Mastra's is an enum (answer_similarity,
context_relevance), another label is an invalid reply. Every verdict needs its reason.

An empty or whitespace-only output, input or ground truth is judged as any other, as Mastra judges
it: none of Mastra's LLM scorers tests the text it shows its judge (prompt_alignment and
answer_similarity throw on an empty one, `""`, and context_recall scores an empty ground truth 0).

Options that depart from Mastra, on every judged scorer: `round: false` (the exact value),
`empty: not_scorable` (an item with nothing to judge, a blank output say, is not scorable
instead of Mastra's number) and `conversation: true` (judge every assistant message and every
turn's input). A judge that fails twice in a row errors that item's result. Formulas: each
docstring and docs/scorers.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalgate.judge import prompts as p
from evalgate.judge.client import Judge, judge_for
from evalgate.load.items import Item
from evalgate.load.spec.context import BuildContext
from evalgate.replies import Run
from evalgate.replies.messages import (
    NO_INPUT_MESSAGES,
    mastra_input_texts,
    mastra_system_prompt,
    no_input_messages,
)
from evalgate.replies.model import js_truthy, shown_name
from evalgate.scorers.base import NotScorable, ScoreError
from evalgate.scorers.js import text as jstext
from evalgate.scorers.registry import scorer_type

UNSURE_WEIGHT = 0.3  # answer_relevancy: an "unsure" statement counts this much
# answer_similarity (Mastra's defaults): exact 1 + bonus, semantic 0.8, partial half of that, missing -0.15
EXACT_BONUS, SEMANTIC, MISSING_PENALTY, CONTRADICTION_PENALTY, EXTRA_PENALTY, EXTRA_MAX = 0.2, 0.8, 0.15, 1.0, 0.05, 0.2
RELEVANCE_WEIGHTS = {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}
UNUSED_HIGH_PENALTY, MISSING_CONTEXT_PENALTY, MISSING_CONTEXT_MAX = 0.1, 0.15, 0.5  # context_relevance
ALIGNMENT_WEIGHTS = (0.4, 0.3, 0.2, 0.1)  # prompt_alignment: intent, requirements, completeness, appropriateness
# prompt_alignment's default "both" mode; with no system prompt, the user score stands for both
USER_SHARE, SYSTEM_SHARE = 0.7, 0.3
MAX_KEY_POINTS = 10  # summarization: Mastra's maxQuestions
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


# ---- options shared by every judged scorer ----

Empty = Literal["score", "not_scorable"]


@dataclass(frozen=True)
class Options:
    """`round`, `empty` and `conversation` of a judged scorer entry."""

    round: bool = True
    empty: Empty = "score"
    conversation: bool = False

    def value(self, score: float) -> float:
        """Mastra's roundToTwoDecimals, unless `round: false`."""
        return jstext.round2(score) if self.round else score

    def nothing(self, score: float, reason: str) -> tuple[float, str]:
        """Mastra's score for an item with nothing to judge, or not scorable with `empty: not_scorable`."""
        if self.empty == "not_scorable":
            raise NotScorable(reason)
        return score, f"{reason}: {score:g}, as Mastra scores it"

    def needs_text(self, text: str, what: str) -> None:
        """With `empty: not_scorable`, a blank `text` makes the item not scorable; by default it is judged,
        as Mastra judges it."""
        if self.empty == "not_scorable" and blank(text):
            raise NotScorable(f"{what} is empty (no text, or only whitespace): nothing to judge")


def blank(text: str) -> bool:
    """No text, or only whitespace as JavaScript's `trim()` takes it (jstext.WS_CHARS: tab, line feed,
    vertical tab, form feed, carriage return, space, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029,
    U+202F, U+205F, U+3000, U+FEFF), the test Mastra's summarization puts to a reply. A zero-width
    space (U+200B) is text, and so is a control character U+001C to U+001F, which Python's
    `str.strip()` would remove."""
    return not jstext.trim(text)


# ---- reply models (lenient about case and extra keys, strict about verdict values) ----


# ---- what the judge is shown ----


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _input(item: Item, options: Options) -> str:
    """The user's first message (Mastra); with `conversation`, every turn's input. "" if there is none."""
    inputs = item.turn_inputs()
    if not inputs or all(i is None for i in inputs):
        return ""
    if options.conversation and len(inputs) > 1:
        return "\n".join(f"Turn {n}: {_text(value)}" for n, value in enumerate(inputs, 1))
    return mastra_input_texts(inputs[0])[1]  # the first user message, as a real agent converts the input


def _system_prompt(item: Item, options: Options) -> str:
    """The input's system messages as Mastra's getCombinedSystemPrompt reads them, where `_input` reads as Mastra."""
    inputs = item.turn_inputs()
    if not inputs or (options.conversation and len(inputs) > 1):
        return ""
    return mastra_system_prompt(inputs[0])


def _output(run: Run, options: Options) -> str:
    """The last assistant message with text (Mastra); with `conversation`, all of them joined.

    Mastra messages are read as Mastra's LLM scorers read them (`judge_texts`), not as the checks do."""
    texts = run.texts if run.judge_texts is None else run.judge_texts
    if options.conversation:
        return " ".join(texts)
    for text in reversed(texts):
        if text:
            return text
    return ""


def _summary(run: Run, options: Options) -> str:
    """Mastra's summarization (getSummary) reads the last assistant message whose text
    (getTextContentFromMastraDBMessage: `Run.texts`) is not blank to `trim()`; with none, or for a message list
    that is no agent's output (`Run.agent_output`), the output as its other LLM scorers read it. Raises where
    it throws: a text that is no string (`5`, `{}`), which it cannot trim, or one its reader cannot read."""
    if not options.conversation:
        run.require("agent_responses")
        if run.agent_output:
            for text in reversed(run.texts):
                if not blank(text):
                    return text
    return _output(run, options)


def _ground_truth(item: Item) -> str | None:
    """The item's ground truth as the judge is shown it; None for none (null or "")."""
    if item.ground_truth is None or item.ground_truth == "":
        return None
    return _text(item.ground_truth)


def _mastra_ground_truth(item: Item) -> str | None:
    """The ground truth of the scorers Mastra has (answer_similarity, context_recall): None also for 0
    and false, which JavaScript reads as false and Mastra takes for none (`!run.groundTruth`). evalgate's
    own readers (rubric, `reference: ground_truth`) show a 0 to their judge."""
    return _ground_truth(item) if js_truthy(item.ground_truth) else None


def _tool_results(run: Run) -> str:
    run.require("tool_calls")  # Mastra's tool results come through mergeToolInvocations (extractToolResults)
    results = [
        _returned(call.name, call.args, call.result)
        for call in run.tool_calls
        # every call that returned (`state: 'result'`), `isError` ones too
        if call.result is not None and call.status != "pending"
    ]
    return p.section("tool_results", "\n".join(results)) if results else ""


def _returned(name: Any, args: Any, result: Any) -> str:
    shown = shown_name(name) if js_truthy(name) else "a tool"
    return f"{shown}({_text(args) if args is not None else ''}) returned {_text(result)}"


def faithfulness_tool_results(run: Run) -> str:
    """Mastra's faithfulness evidence: the results of the `state: 'result'` entries of the assistant
    messages' legacy `toolInvocations` (not their parts) when the run came as Mastra messages."""
    legacy = run.legacy_tool_invocations
    if legacy is None:
        return _tool_results(run)
    results = []
    for invocation in legacy:
        if invocation is None:  # `toolCall.state` on null: Mastra's scorer throws
            raise ValueError("a null entry in a message's `toolInvocations`: Mastra's faithfulness cannot read it")
        if isinstance(invocation, Mapping) and invocation.get("state") == "result" \
                and invocation.get("result") is not None:
            results.append(_returned(invocation.get("toolName"), invocation.get("args"), invocation["result"]))
    return p.section("tool_results", "\n".join(results)) if results else ""


def _chunks(chunks: Sequence[str]) -> str:
    return "\n\n".join(p.section("context", chunk, index=n) for n, chunk in enumerate(chunks, 1))


def _data(*sections: str) -> str:
    return "\n\n".join(s for s in sections if s)


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


# How each Mastra scorer compares the judge's free-string verdict with the one word it counts; any
# other label (a "maybe", or a case Mastra does not fold) counts as not that word.
def _trim_lower(label: str) -> str:
    return jstext.trim(label).lower()  # `.trim().toLowerCase()`


def _lower_only(label: str) -> str:
    return label.lower()  # bias: `.toLowerCase()`, no trim


def _exact(label: str) -> str:
    return label  # faithfulness, hallucination: `=== "yes"`


# Mastra's tool_call_accuracy, rubric, context_precision and context_relevance never match their
# verdicts to the calls, criteria or chunks: each scores the verdicts given, however many, and an
# index (Mastra's toolCalled, criterion, context_index) only names what a reason quotes.
def _position(index: float, count: int) -> int | None:
    """The 0-based position a judge's 1-based `index` names among `count`, or None if it names none."""
    if isinstance(index, int) or (isinstance(index, float) and index.is_integer()):
        return int(index) - 1 if 1 <= index <= count else None
    return None


def _named(index: float, names: Sequence[str], what: str) -> str:
    position = _position(index, len(names))
    return names[position] if position is not None else f"{what} {index:g}"


# ---- the scorers ----

ScoreFn = Any


@scorer_type("answer_relevancy", judged=True)
def answer_relevancy(round: bool = True, empty: Empty = "score", conversation: bool = False, *,
                     ctx: BuildContext) -> ScoreFn:
    """How much of the output addresses the input. Needs: input. LLM-judged, higher is better, 0 to 1.

    Mastra's answer-relevancy: the judge splits the output into statements and marks each relevant
    (yes), unsure or not (no). Score = (yes + 0.3 x unsure) / statements, rounded to 2 decimals;
    no statements: 0. An empty output or input is judged too, as in Mastra.
    """
    options = Options(round, empty, conversation)
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, p.ANSWER_RELEVANCY)

    def score(item: Item, run: Run) -> tuple[float, str]:
        question, output = _input(item, options), _output(run, options)
        options.needs_text(output, "the output")
        options.needs_text(question, "the input")
        reply = judge.ask(p.ANSWER_RELEVANCY, _data(p.section("input", question), p.section("output", output)),
                          r.Statements)
        n = len(reply.statements)
        if n == 0:
            return options.nothing(0.0, "the judge found no statements in the output")
        labels = [_trim_lower(s.verdict) for s in reply.statements]
        relevant = 0.0
        for label in labels:  # Mastra's order of additions
            if label == "yes":
                relevant += 1
            elif label == "unsure":
                relevant += UNSURE_WEIGHT
        yes, unsure = labels.count("yes"), labels.count("unsure")
        off = [(s.statement, s.reason) for s, label in zip(reply.statements, labels, strict=True)
               if label not in ("yes", "unsure")]
        return options.value(relevant / n), _reason(f"{yes} of {n} statements relevant, {unsure} unsure", "Off-topic",
                                                    off)

    return JudgedFn(judge, score)


@scorer_type("answer_similarity", judged=True)
def answer_similarity(round: bool = True, empty: Empty = "score", conversation: bool = False, *,
                      ctx: BuildContext) -> ScoreFn:
    """How closely the output matches the expected answer. Needs: ground_truth. LLM-judged, higher is better, 0 to 1.

    Mastra's answer-similarity: the judge classes each key fact of ground_truth exact (1.2),
    semantic (0.8), partial (0.4) or missing (-0.15), and lists contradictions and extra statements.
    Score = sum / (1.2 x facts) - 1 per contradiction - min(0.05 x extra, 0.2), clamped to [0, 1],
    rounded to 2 decimals; no facts: 0. Without ground_truth (or with null, "", 0 or false, which
    Mastra reads as none) Mastra rejects the run: not scorable.
    """
    options = Options(round, empty, conversation)
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, p.ANSWER_SIMILARITY)

    def score(item: Item, run: Run) -> tuple[float, str]:
        expected = _mastra_ground_truth(item)
        if expected is None:
            raise NotScorable("answer_similarity needs the item's ground_truth")
        reply = judge.ask(
            p.ANSWER_SIMILARITY,
            _data(p.section("ground_truth", expected), p.section("output", _output(run, options))),
            r.Facts,
        )
        n = len(reply.facts)
        if n == 0:
            return options.nothing(0.0, "the judge found no facts in ground_truth")
        total = 0.0
        for fact in reply.facts:  # Mastra's order of additions
            if fact.verdict == "exact":
                total += 1 + EXACT_BONUS
            elif fact.verdict == "semantic":
                total += SEMANTIC
            elif fact.verdict == "partial":
                total += SEMANTIC * 0.5
            else:
                total -= MISSING_PENALTY
        value = total / (n * (1 + EXACT_BONUS))
        value -= len(reply.contradictions) * CONTRADICTION_PENALTY
        value -= min(len(reply.extra) * EXTRA_PENALTY, EXTRA_MAX)
        value = max(0.0, min(1.0, value))
        counts = ", ".join(f"{_count(reply.facts, v)} {v}" for v in ("exact", "semantic", "partial", "missing"))
        flagged = [(c.statement, f"contradiction: {c.reason}" if c.reason else "contradiction")
                   for c in reply.contradictions]
        flagged += [(f.fact, f"missing: {f.reason}" if f.reason else "missing") for f in reply.facts
                    if f.verdict == "missing"]
        summary = f"{n} expected facts: {counts}; {len(reply.contradictions)} contradictions, {len(reply.extra)} extra"
        return options.value(value), _reason(summary, "Not conveyed", flagged)

    return JudgedFn(judge, score)


def _evidence(item: Item, run: Run, tool_results: Callable[[Run], str] | None) -> str:
    if item.context:
        return _chunks(item.context)
    return tool_results(run) if tool_results is not None else ""


@scorer_type("faithfulness", judged=True)
def faithfulness(round: bool = True, empty: Empty = "score", conversation: bool = False, *,
                 ctx: BuildContext) -> ScoreFn:
    """Share of the output's claims the evidence supports. Needs: context or tool results. Higher is better.

    Mastra's faithfulness. Evidence: the item's `context`, or else the results of the run's tool
    calls (for Mastra messages, as Mastra reads them: the assistant messages' legacy
    `toolInvocations` only, not their parts). The judge lists the output's claims and marks each
    supported, contradicted or unsupported. Score = supported / claims, rounded to 2 decimals; no
    claims: 0. An empty output, and an item with no evidence, are judged too, as in Mastra.
    """
    options = Options(round, empty, conversation)
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, p.FAITHFULNESS)

    def score(item: Item, run: Run) -> tuple[float, str]:
        evidence, output = _evidence(item, run, faithfulness_tool_results), _output(run, options)
        if not evidence and empty == "not_scorable":
            raise NotScorable("faithfulness needs the item's context, or the run's tool results, to check against")
        options.needs_text(output, "the output")
        # no evidence is judged too, as Mastra judges it (an empty context): its claims are unsupported
        reply = judge.ask(p.FAITHFULNESS, _data(evidence or p.section("context", "(no context)"),
                                                p.section("output", output)), r.Claims)
        n = len(reply.claims)
        if n == 0:
            return options.nothing(0.0, "the output makes no factual claims")
        supported = sum(1 for c in reply.claims if _exact(c.verdict) == "supported")
        bad = [(c.claim, f"{c.verdict}: {c.reason}" if c.reason else c.verdict) for c in reply.claims
               if _exact(c.verdict) != "supported"]
        return options.value(supported / n), _reason(f"{supported} of {n} claims supported by the evidence",
                                                     "Not supported", bad)

    return JudgedFn(judge, score)


@scorer_type("hallucination", higher_is_better=False, judged=True)
def hallucination(
    round: bool = True,
    empty: Empty = "score",
    conversation: bool = False,
    count_general: bool = True,
    use_tool_results: bool = False,
    *,
    ctx: BuildContext,
) -> ScoreFn:
    """Share of the output's claims not supported by the context. LOWER is better, 0 to 1.

    Mastra's hallucination. Evidence: the item's `context` (with `use_tool_results: true`, the
    run's tool results when there is no context). The judge marks each claim supported,
    contradicted, unsupported or general (hedged, subjective or common knowledge beyond the
    evidence). Score = (contradicted + unsupported + general) / claims, rounded to 2 decimals;
    `count_general: false` leaves general claims out of the count. No claims: 0. An empty output is
    judged too, and with no evidence every claim is unsupported (both as in Mastra).
    """
    options = Options(round, empty, conversation)
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, p.HALLUCINATION)
    flagged_verdicts = ("contradicted", "unsupported", "general") if count_general else ("contradicted", "unsupported")

    def score(item: Item, run: Run) -> tuple[float, str]:
        # a `getContext` of Mastra's extractToolResults: every call that returned, parts too
        evidence, output = _evidence(item, run, _tool_results if use_tool_results else None), _output(run, options)
        if not evidence and empty == "not_scorable":
            raise NotScorable("hallucination needs the item's context to check the output against")
        options.needs_text(output, "the output")
        reply = judge.ask(p.HALLUCINATION, _data(evidence or p.section("context", "(no context)"),
                                                 p.section("output", output)), r.HallucinationClaims)
        n = len(reply.claims)
        if n == 0:
            return options.nothing(0.0, "the output makes no claims")
        bad = [(c.claim, f"{c.verdict}: {c.reason}" if c.reason else c.verdict) for c in reply.claims
               if _exact(c.verdict) in flagged_verdicts]
        return options.value(len(bad) / n), _reason(f"{len(bad)} of {n} claims hallucinated", "Hallucinated", bad)

    return JudgedFn(judge, score)


@scorer_type("toxicity", higher_is_better=False, judged=True)
def toxicity(round: bool = True, empty: Empty = "score", conversation: bool = False, *,
             ctx: BuildContext) -> ScoreFn:
    """Share of the output's statements that are toxic. Needs: output only. LLM-judged, LOWER is better, 0 to 1.

    Mastra's toxicity. Score = toxic statements / statements, rounded to 2 decimals. As in Mastra,
    an output the judge finds no statements in scores 1; `empty: not_scorable` instead. An empty
    output is judged too, as in Mastra.
    """
    options = Options(round, empty, conversation)
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, p.TOXICITY)

    def score(item: Item, run: Run) -> tuple[float, str]:
        output = _output(run, options)
        options.needs_text(output, "the output")
        reply = judge.ask(p.TOXICITY, p.section("output", output), r.ToxicStatements)
        n = len(reply.statements)
        if n == 0:
            return options.nothing(1.0, "the judge found no statements")
        toxic = [(s.statement, s.reason) for s in reply.statements if _trim_lower(s.verdict) == "toxic"]
        return options.value(len(toxic) / n), _reason(f"{len(toxic)} of {n} statements toxic", "Toxic", toxic)

    return JudgedFn(judge, score)


@scorer_type("bias", higher_is_better=False, judged=True)
def bias(round: bool = True, empty: Empty = "score", conversation: bool = False, *, ctx: BuildContext) -> ScoreFn:
    """Share of the output's opinions that are biased. Needs: output only. LLM-judged, LOWER is better, 0 to 1.

    Mastra's bias. Score = biased opinions / opinions, rounded to 2 decimals; no opinions: 0. An
    empty output is judged too, as in Mastra.
    """
    options = Options(round, empty, conversation)
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, p.BIAS)

    def score(item: Item, run: Run) -> tuple[float, str]:
        output = _output(run, options)
        options.needs_text(output, "the output")
        reply = judge.ask(p.BIAS, p.section("output", output), r.Opinions)
        n = len(reply.opinions)
        if n == 0:
            return options.nothing(0.0, "the output expresses no opinions")
        biased = [(o.opinion, o.reason) for o in reply.opinions if _lower_only(o.verdict) == "biased"]
        return options.value(len(biased) / n), _reason(f"{len(biased)} of {n} opinions biased", "Biased", biased)

    return JudgedFn(judge, score)


@scorer_type("context_precision", judged=True)
def context_precision(
    reference: Literal["output", "ground_truth"] = "output",
    round: bool = True,
    empty: Empty = "score",
    conversation: bool = False,
    *,
    ctx: BuildContext,
) -> ScoreFn:
    """Are the useful context chunks ranked first? Needs: context. LLM-judged, higher is better, 0 to 1.

    Mastra's context-precision: the judge marks each chunk useful or not for producing the output
    (`reference: ground_truth`: the item's ground_truth when present). Score = mean average
    precision over the judge's verdicts (however many, in its index order): the mean, over the
    useful ones, of (useful up to it) / (its position), rounded to 2 decimals; none useful: 0.
    No context: not scorable (Mastra rejects the run).
    """
    options = Options(round, empty, conversation)
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, p.CONTEXT_PRECISION)

    def score(item: Item, run: Run) -> tuple[float, str]:
        if not item.context:
            raise NotScorable("context_precision needs the item's context")
        chunks = list(item.context)
        expected = _ground_truth(item) if reference == "ground_truth" else None
        target = expected if expected is not None else _output(run, options)
        options.needs_text(target, "the ground_truth" if expected is not None else "the output")
        reply = judge.ask(
            p.CONTEXT_PRECISION,
            _data(p.section("input", _input(item, options)), p.section("reference", target), _chunks(chunks)),
            r.UsefulVerdicts,
        )
        # Mastra orders the verdicts by the judge's index (a required number), a stable sort, and
        # scores them however many there are: a chunk left out or judged twice is no error
        verdicts = sorted(reply.verdicts, key=lambda v: v.index)
        useful = 0
        total = 0.0
        for position, verdict in enumerate(verdicts, 1):
            if verdict.useful:
                useful += 1
                total += useful / position
        judged = f"{len(verdicts)} verdicts on {len(chunks)} context chunks"
        if not useful:
            return 0.0, f"none useful: {judged}"
        ranks = ", ".join(str(n) for n, v in enumerate(verdicts, 1) if v.useful)
        return options.value(total / useful), f"{useful} useful of {judged}, at positions {ranks}"

    return JudgedFn(judge, score)


@scorer_type("context_relevance", judged=True)
def context_relevance(round: bool = True, empty: Empty = "score", conversation: bool = False, *,
                      ctx: BuildContext) -> ScoreFn:
    """How relevant the context is to the input, and was it used? Needs: input, context. Higher is better, 0 to 1.

    Mastra's context-relevance: the judge grades each chunk high (1), medium (0.7), low (0.3) or
    none (0), says whether the output used it, and lists missing information. Score = mean grade
    - 0.1 per unused high-relevance chunk - min(0.15 per missing piece, 0.5), at least 0, rounded
    to 2 decimals, over the judge's verdicts however many (as Mastra); no verdicts: 0 if
    information is missing, else 1. No context: 1, as Mastra scores an empty context.
    """
    options = Options(round, empty, conversation)
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, p.CONTEXT_RELEVANCE)

    def score(item: Item, run: Run) -> tuple[float, str]:
        if not item.context:
            return options.nothing(1.0, "the item has no context")
        chunks = list(item.context)
        reply = judge.ask(
            p.CONTEXT_RELEVANCE,
            _data(p.section("input", _input(item, options)), _chunks(chunks),
                  p.section("output", _output(run, options))),
            r.RelevanceVerdicts,
        )
        if not reply.verdicts:
            # Mastra's number for no evaluations, neither penalized nor rounded
            value = 0.0 if reply.missing_context else 1.0
            return value, _reason(f"no verdicts, {len(reply.missing_context)} missing: {value:g}, as Mastra scores it",
                                  "Missing", [(m, "missing") for m in reply.missing_context])
        total = 0.0
        for verdict in reply.verdicts:
            total += RELEVANCE_WEIGHTS[verdict.relevance]
        relevance = total / (len(reply.verdicts) * RELEVANCE_WEIGHTS["high"])
        unused = sum(1 for v in reply.verdicts if v.relevance == "high" and not v.used)
        missing = min(len(reply.missing_context) * MISSING_CONTEXT_PENALTY, MISSING_CONTEXT_MAX)
        value = max(0.0, relevance - unused * UNUSED_HIGH_PENALTY - missing) * 1
        grades = ", ".join(v.relevance for v in reply.verdicts)
        flagged = [(_named(v.index, chunks, "chunk"), v.reason) for v in reply.verdicts if v.relevance == "none"]
        flagged += [(m, "missing") for m in reply.missing_context]
        summary = f"chunk relevance: {grades}; {unused} highly relevant unused, {len(reply.missing_context)} missing"
        return options.value(value), _reason(summary, "Irrelevant or missing", flagged)

    return JudgedFn(judge, score)


@scorer_type("context_recall", judged=True)
def context_recall(round: bool = True, empty: Empty = "score", conversation: bool = False, *,
                   ctx: BuildContext) -> ScoreFn:
    """Share of the expected answer the context contains. Needs: context, ground_truth. LLM-judged, higher is better.

    Mastra's context-recall: the judge splits ground_truth into claims and marks each attributable
    to the context or not. Score = attributed / claims, rounded to 2 decimals; no claims or no
    ground_truth (null, "", 0 or false, as Mastra reads it): 0. An item with no context is judged too,
    as Mastra judges an empty context.
    """
    options = Options(round, empty, conversation)
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, p.CONTEXT_RECALL)

    def score(item: Item, run: Run) -> tuple[float, str]:
        expected = _mastra_ground_truth(item)
        if expected is None:
            return options.nothing(0.0, "the item has no ground_truth")
        if not item.context and empty == "not_scorable":
            raise NotScorable("context_recall needs the item's context")
        # no context is judged too, as Mastra judges an empty one (a contextExtractor that finds none)
        reply = judge.ask(p.CONTEXT_RECALL, _data(p.section("ground_truth", expected),
                                                  _chunks(item.context or []) or p.section("context", "(no context)")),
                          r.Sentences)
        n = len(reply.sentences)
        if n == 0:
            return options.nothing(0.0, "the judge found no statements in ground_truth")
        missing = [(s.sentence, s.reason) for s in reply.sentences if not s.attributed]
        found = n - len(missing)
        return options.value(min(1.0, found / n)), _reason(f"{found} of {n} expected statements found in the context",
                                                           "Missing", missing)

    return JudgedFn(judge, score)


@scorer_type("prompt_alignment", judged=True)
def prompt_alignment(round: bool = True, empty: Empty = "score", conversation: bool = False, *,
                     ctx: BuildContext) -> ScoreFn:
    """How well the output follows the user's prompt. Needs: input, output. LLM-judged, higher is better, 0 to 1.

    Mastra's prompt-alignment: the judge scores intent, requirements, completeness and
    appropriateness from 0 to 1. Score = 0.4 intent + 0.3 requirements + 0.2 completeness + 0.1
    appropriateness (taken 0.7 + 0.3 times, as Mastra's default "both" mode does when the user
    prompt stands for both), rounded to 2 decimals. Mastra rejects an empty output (`""`), or an input with
    neither a user message nor a system message: not scorable; one of whitespace only is judged. The input's
    system messages are shown to the judge too.
    As in Mastra, component scores outside 0-1 are taken as given; a total outside [0, 1], which is
    Mastra's score then, is a scorer error.
    """
    options = Options(round, empty, conversation)
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, p.PROMPT_ALIGNMENT)

    def score(item: Item, run: Run) -> tuple[float, str]:
        question, output = _input(item, options), _output(run, options)
        system = _system_prompt(item, options)  # Mastra's "both" mode reads the system prompt too
        if not question and not system:
            raise NotScorable("prompt_alignment needs the item's input (a user or a system prompt)")
        if not output:
            raise NotScorable("prompt_alignment needs a non-empty output")
        if not system:  # a system prompt alone is something to align with
            options.needs_text(question, "the input")
        options.needs_text(output, "the output")
        shown = [p.section("input", question), *([p.section("system_prompt", system)] if system else [])]
        reply = judge.ask(p.PROMPT_ALIGNMENT, _data(*shown, p.section("output", output)), r.Alignment)
        w_intent, w_req, w_comp, w_app = ALIGNMENT_WEIGHTS
        user = (reply.intent.score * w_intent + reply.requirements.score * w_req + reply.completeness.score * w_comp
                + reply.appropriateness.score * w_app)
        value = options.value(user * USER_SHARE + user * SYSTEM_SHARE)
        if not 0.0 <= value <= 1.0:
            # Mastra neither bounds the judge's component scores nor clamps the sum: its score is this
            # number, which no evalgate score can be
            raise ScoreError(f"the judge's component scores give {value:g} (Mastra's score), outside [0, 1]: "
                             f"intent {reply.intent.score:g}, requirements {reply.requirements.score:g}, "
                             f"completeness {reply.completeness.score:g}, "
                             f"appropriateness {reply.appropriateness.score:g}")
        missed = [(r.requirement, r.reason) for r in reply.requirements.items if not r.fulfilled]
        missed += [(m, "missing") for m in reply.completeness.missing]
        summary = (f"intent {reply.intent.score:g}, requirements {reply.requirements.score:g}, "
                   f"completeness {reply.completeness.score:g}, appropriateness {reply.appropriateness.score:g}")
        return value, _reason(summary, "Not followed", missed)

    return JudgedFn(judge, score)


def _ratio(matched: int, total: int) -> float:
    return 0.0 if total == 0 else min(1.0, matched / total)


@scorer_type("summarization", judged=True)
def summarization(round: bool = True, empty: Empty = "score", conversation: bool = False, *,
                  ctx: BuildContext) -> ScoreFn:
    """Is the output a faithful, complete summary of the source? Needs: context, or the input. Higher is better.

    Mastra's summarization. Source: the item's `context` (joined), or else its input. Summary: the
    last assistant message whose text is not blank (JavaScript's `trim()`), else the output as the
    other judged scorers read it (Mastra messages that are no agent's output, without a string `id`,
    `content` or `createdAt`, only so). An agent's assistant message whose text is no string (`5`, `{}`)
    or unreadable is an error, as Mastra's throws. Alignment = supported claims / claims; coverage =
    covered key points / key points (the first 10). Score = min(alignment, coverage), rounded to 2
    decimals; no claims or no key points: 0. An empty summary is judged too, as in Mastra.
    """
    options = Options(round, empty, conversation)
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, p.SUMMARIZATION)

    def score(item: Item, run: Run) -> tuple[float, str]:
        source = "\n\n".join(item.context) if item.context else _input(item, options)
        output = _summary(run, options)
        options.needs_text(output, "the summary")
        reply = judge.ask(p.SUMMARIZATION, _data(p.section("source", source), p.section("output", output)), r.Summary)
        points = reply.key_points[:MAX_KEY_POINTS]
        supported = _count(reply.claims, "supported")
        covered = sum(1 for k in points if k.covered)
        alignment, coverage = _ratio(supported, len(reply.claims)), _ratio(covered, len(points))
        flagged: list[tuple[str, str]] = [(c.claim, c.verdict) for c in reply.claims if c.verdict != "supported"]
        flagged += [(k.point, "not covered") for k in points if not k.covered]
        summary = (f"alignment {supported}/{len(reply.claims)} claims supported, "
                   f"coverage {covered}/{len(points)} key points")
        if not reply.claims or not points:
            return options.nothing(0.0, summary)
        return options.value(min(alignment, coverage)), _reason(summary, "Problems", flagged)

    return JudgedFn(judge, score)


Tool = str | dict[str, Any]


def _tool_line(tool: Any) -> str:
    if isinstance(tool, dict):
        name = tool.get("name") or tool.get("id") or (tool.get("function") or {}).get("name") or "?"
        description = tool.get("description") or (tool.get("function") or {}).get("description") or ""
        return f"- {name}: {description}" if description else f"- {name}"
    return f"- {tool}"


@scorer_type("tool_call_accuracy", judged=True)
def tool_call_accuracy(
    tools: list[Tool] | None = None,
    round: bool = True,
    empty: Empty = "score",
    conversation: bool = False,
    *,
    ctx: BuildContext,
) -> ScoreFn:
    """Were the right tools called, given the tools available? Needs: input, available tools. Higher is better.

    Mastra's LLM tool-call-accuracy. `tools`: names or {name, description} (OpenAI function
    definitions too); without it, the item's `metadata.tools`; with neither, not scorable (Mastra's
    scorer cannot be made without them), while an empty list is judged, as Mastra judges it. The
    judge marks each call appropriate or not and lists the tools that should have been called.
    Score = appropriate verdicts / verdicts, however many the judge gives (as Mastra), rounded to 2
    decimals; no verdicts (no calls, say): 0 if a tool was missing, else 1.
    """
    options = Options(round, empty, conversation)
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, p.TOOL_CALL_ACCURACY)

    def score(item: Item, run: Run) -> tuple[float, str]:
        if no_input_messages(item.first_input):
            raise ValueError(NO_INPUT_MESSAGES)
        run.require("output_messages")  # the same test of Mastra's, of the output
        run.require("tool_calls")  # Mastra's extractToolCalls comes first
        available = tools if tools is not None else (item.metadata or {}).get("tools")
        # none given: Mastra's factory cannot be made without `availableTools`; an empty list it judges
        if available is None or (not available and not isinstance(available, list)):
            raise NotScorable("tool_call_accuracy needs the available tools: `tools:` on the entry or metadata.tools")
        if not available and empty == "not_scorable":
            raise NotScorable("tool_call_accuracy has an empty list of available tools: nothing to judge against")
        calls = [
            f"{n}. {shown_name(c.name)}({_text(c.args) if c.args is not None else ''})"
            for n, c in enumerate(run.tool_calls, 1)
        ]
        reply = judge.ask(
            p.TOOL_CALL_ACCURACY,
            _data(
                p.section("input", _input(item, options)),
                p.section("output", _output(run, options)),
                p.section("available_tools", "\n".join(_tool_line(t) for t in available) or "(no tools)"),
                p.section("tool_calls", "\n".join(calls) or "(no tool calls)"),
            ),
            r.ToolCalls,
        )
        if not reply.calls:
            # Mastra: no evaluations score by missingTools alone, whatever calls were made
            judged = f"no tool call judged ({len(calls)} made)"
            if reply.missing_tools:
                return 0.0, _reason(f"{judged}, a tool needed", "Missing",
                                    [(t, reply.reason) for t in reply.missing_tools])
            return 1.0, f"{judged}, none needed"
        good = sum(1 for c in reply.calls if c.appropriate)
        names = [shown_name(c.name) for c in run.tool_calls]
        wrong = [(_named(c.index, names, "call"), c.reason) for c in reply.calls if not c.appropriate]
        summary = f"{good} of {len(reply.calls)} verdicts appropriate ({len(calls)} tool calls)"
        return options.value(good / len(reply.calls)), _reason(summary, "Inappropriate", wrong)

    return JudgedFn(judge, score)


# Mastra's `/^\s*(?:[-*•]|\d+[.)])\s*/`, read as JavaScript reads it: its whitespace, ASCII digits
_LIST_MARKER = re.compile(f"^[{jstext.WS_CLASS}]*(?:[-*•]|[0-9]+[.)])[{jstext.WS_CLASS}]*")


class Criterion(BaseModel):
    """One rubric criterion; all are required unless marked `required: false`."""

    model_config = ConfigDict(extra="forbid")

    description: Annotated[str, Field(min_length=1)]
    required: bool = True


def parse_criteria(text: str) -> list[Criterion]:
    """Mastra's string rubric: one required criterion per line that is not blank, list markers stripped,
    each trimmed (JavaScript's whitespace: a line of U+001C is a criterion, one of U+FEFF none)."""
    lines = (jstext.trim(_LIST_MARKER.sub("", line, count=1)) for line in text.split("\n"))
    return [Criterion(description=line) for line in lines if line]


def _rubric_criteria(criterion: str | None, criteria: list[str | Criterion] | None,
                     scale: str) -> tuple[list[Criterion], str]:
    """(the criteria, the whole rubric as one text) of `criterion` or `criteria`; ValueError for neither or both."""
    if (criterion is None) == (criteria is None):
        raise ValueError("give `criterion` or `criteria`, not both and not neither")
    if criteria is not None:
        listed = [
            c if isinstance(c, Criterion) else Criterion.model_validate(c) if isinstance(c, dict)
            else Criterion(description=c)
            for c in criteria
        ]
        whole = "\n".join(c.description for c in listed)
    else:
        listed = parse_criteria(criterion or "")
        whole = criterion or ""
    if scale == "graded" and criterion is None:
        raise ValueError("`scale: graded` grades one `criterion`; use `criteria` with the binary scale")
    return listed, whole


def _rubric_sections(item: Item, run: Run, criterion_sections: list[str], options: Options) -> list[str]:
    """What the rubric's judge reads: the criteria, the input, ground truth and context where given, the output."""
    out = [*criterion_sections, p.section("input", _input(item, options))]
    expected = _ground_truth(item)
    if expected is not None:
        out.append(p.section("ground_truth", expected))
    if item.context:
        out.append(_chunks(item.context))
    out.append(p.section("output", _output(run, options)))
    return out


@scorer_type("rubric", judged=True)
def rubric(
    criterion: Annotated[str, Field(min_length=1)] | None = None,
    criteria: list[Annotated[str, Field(min_length=1)] | Criterion] | None = None,
    scale: Literal["binary", "graded"] = "binary",
    max_grade: Annotated[int, Field(ge=1, le=100)] = 5,
    conversation: bool = False,
    *,
    ctx: BuildContext,
) -> ScoreFn:
    """Does the output meet a rubric in plain words? Needs: input. LLM-judged, higher is better, 0 to 1.

    Mastra's rubric scorer (binary): `criterion` (one criterion a line) or `criteria` (strings or
    {description, required}). The judge decides each criterion, naming it by index; score = 1 if
    every verdict on a required criterion is satisfied (every verdict, when none is on a required
    one), else 0, over the verdicts given as in Mastra; no criteria or no verdicts: 1.
    `scale: graded` (an evalgate option): the judge's whole-number grade for the whole `criterion`
    from 0 to `max_grade`, divided by max_grade. The judge also sees ground_truth and context.
    """
    listed, whole = _rubric_criteria(criterion, criteria, scale)
    options = Options(True, "score", conversation)
    template = p.RUBRIC_BINARY if scale == "binary" else p.RUBRIC_GRADED
    from evalgate.scorers import judge_reply_models as r
    judge = _setup(ctx, template)

    def in_range(reply: Any) -> None:
        if not 0 <= reply.grade <= max_grade:
            raise ValueError(f"the grade must be a whole number from 0 to {max_grade}, got {reply.grade}")

    def criterion_of(verdict: Any) -> Criterion:
        # a verdict's `required` is its criterion's: an index naming none has no counterpart of Mastra's
        # judge-given `required`, so it stays an invalid reply
        position = _position(verdict.index, len(listed))
        if position is None:
            raise ValueError(f"criterion index {verdict.index:g} names no criterion (1 to {len(listed)})")
        return listed[position]

    def names_criteria(reply: Any) -> None:
        for verdict in reply.criteria:
            criterion_of(verdict)

    def sections(item: Item, run: Run, criterion_sections: list[str]) -> list[str]:
        return _rubric_sections(item, run, criterion_sections, options)

    def score(item: Item, run: Run) -> tuple[float, str]:
        if scale == "graded":
            data = sections(item, run, [p.section("criterion", whole), p.section("max_grade", str(max_grade))])
            graded = judge.ask(template, _data(*data), r.Grade, in_range)
            return graded.grade / max_grade, f"grade {graded.grade}/{max_grade}: {graded.reason}".strip(": ")
        if not listed:
            return 1.0, "no criteria to grade: 1, as Mastra scores an empty rubric"
        shown = [
            p.section("criterion", c.description + ("" if c.required else " (optional)"), index=n)
            for n, c in enumerate(listed, 1)
        ]
        reply = judge.ask(template, _data(*sections(item, run, shown)), r.Criteria, names_criteria)
        if not reply.criteria:
            return 1.0, "the judge gave no verdicts: 1, as Mastra scores an empty analysis"
        # Mastra scores the verdicts given (each with its own `required`), a criterion left out or judged twice too
        verdicts = [(criterion_of(v), v) for v in reply.criteria]
        required = [v for c, v in verdicts if c.required] or [v for _, v in verdicts]
        passed = all(v.satisfied for v in required)
        unmet = [(c.description, v.reason) for c, v in verdicts if not v.satisfied]
        met = sum(1 for _, v in verdicts if v.satisfied)
        summary = f"{met} of {len(verdicts)} verdicts satisfied ({len(listed)} criteria)"
        return (1.0 if passed else 0.0), _reason(summary, "Unmet", unmet)

    return JudgedFn(judge, score)
