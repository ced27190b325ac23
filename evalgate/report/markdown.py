"""The Markdown report: one renderer for the job summary, the PR comment and `evalgate report`.

Everything from the data set or the model is untrusted: table cells escape pipes, newlines, HTML
and Markdown punctuation; `@mentions` and `#123` references are broken with a zero-width space so
nobody is pinged; excerpts are bounded. `fit` keeps the text under a size limit, dropping item
details first.
"""

from __future__ import annotations

import heapq
import html
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from string import Template
from typing import Any

from evalgate.infra.redaction import redact
from evalgate.infra.textsafe import visible
from evalgate.report.labels import (
    Row,
    bound_text,
    could_not_evaluate,
    curve_points,
    errored_count,
    item_error,
    num,
    result_rows,
    shown_unscored,
    unscored_entries,
)
from evalgate.report.numbers import (
    against_base,
    delta_text,
    direction,
    interval_suffix,
    repeats_note,
    status_words,
)
from evalgate.report.trend import trend_section
from evalgate.results.model import ItemRecord, Results
from evalgate.run.budget import dollars, saturated

COMMENT_LIMIT = 65_536  # GitHub's limit on a comment body
EXCERPT_CHARS = 400
EXCERPT_LINES = 8
CELL_CHARS = 160
ITEMS_PER_ENTRY = 5
ERRORED_SHOWN = 10
ZWSP = "&#8203;"  # zero-width space: `@&#8203;someone` renders as @someone but pings nobody

ICON = {"passed": "✅", "scored": "⚠️", "failed": "❌", None: "ℹ️"}
MARKDOWN_PUNCT = re.compile(r"([\\`*_\[\]!~|#])")
# `_` between letters or digits never starts emphasis: ids such as `called_tool:x` stay as written
CODE_PUNCT = re.compile(r"[\\`*\[\]!~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
COMMAND_START = re.compile(r"((?:^|\n)[ \t]*)::")
MENTION = re.compile(r"@(?=[A-Za-z0-9_-])")
REFERENCE = re.compile(r"(?<!&)#(?=\d)")  # not the &#8203; we add
# What GitHub turns into a link in text (not in a `<pre>` block): `scheme://`, `www.`, and `GH-123`,
# an issue reference that also notes the mention on that issue. A zero-width space after `:`, `www`
# or `GH` unmakes each and renders the same.
# evalgate's own link (the workflow run): a plain web address, else it is left out.
WEB_ADDRESS = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%/+-]*)?")
LINK_START = re.compile(r"(:)(?=//)|(?<![A-Za-z0-9])(www)(?=\.)|(?<![A-Za-z0-9])(gh)(?=-\d)", re.IGNORECASE)


def utf8_size(text: str) -> int:
    """Bytes: never fewer than GitHub's characters, so a body under it fits any way GitHub counts."""
    return len(text.encode("utf-8"))


# ---- escaping ----


def _no_pings(text: str) -> str:
    return REFERENCE.sub("#" + ZWSP, MENTION.sub("@" + ZWSP, text))


no_pings = _no_pings  # for a body evalgate did not render (`evalgate comment --body-file`)


def _no_links(text: str) -> str:
    """Untrusted text in a line or `<code>` shows a URL as text: no phishing link in a PR comment."""
    return LINK_START.sub(lambda m: m.group() + ZWSP, text)


def _no_commands(text: str) -> str:
    """Entities for `::` at a line start and `##[`: same rendering, but a report echoed to a log
    (`cat` of the comment file) cannot start a workflow command."""
    return COMMAND_START.sub(lambda m: m.group(1) + "&#58;:", text).replace("##[", "&#35;#[")


def _bounded(text: str, limit: int) -> str:
    """Redacted, then cut: a cut secret would no longer match the redaction of the whole report."""
    text = redact(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _inert(text: str) -> str:
    """Markdown punctuation as character references: `<code>` is raw HTML, inside which GitHub still
    reads Markdown (a link, an image, emphasis, a backslash that unmakes `</code>`)."""
    return CODE_PUNCT.sub(lambda m: f"&#{ord(m.group())};", text)


def cell(text: Any, limit: int = CELL_CHARS) -> str:
    """Untrusted text in a table cell or a line: one line, no HTML, no Markdown, no pings, no links."""
    flat = " ".join(str(text).split())
    escaped = html.escape(_bounded(flat, limit), quote=False)
    return _no_links(_no_pings(MARKDOWN_PUNCT.sub(r"\\\1", escaped)))


def code(text: Any, limit: int = CELL_CHARS, *, table: bool = True) -> str:
    """An id as `<code>`: HTML-escaped, no pings, no links; pipes escaped for table cells."""
    escaped = _inert(html.escape(_bounded(" ".join(str(text).split()), limit), quote=False))
    escaped = _no_commands(_no_links(_no_pings(escaped)))
    if table:
        escaped = escaped.replace("|", "\\|")
    return f"<code>{escaped}</code>"


def excerpt(value: Any, limit: int = EXCERPT_CHARS, lines: int = EXCERPT_LINES) -> str:
    """A bounded `<pre>` block: its content cannot close the block, run HTML or ping anyone."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = redact(text)  # before the cut, which could leave part of a secret
    kept = text.splitlines()[:lines]
    short = "\n".join(kept)
    cut = len(short) > limit or len(kept) < len(text.splitlines())
    short = short[:limit] + ("…" if cut else "")
    body = _no_commands(_no_pings(html.escape(short, quote=False)))
    return f"<pre>{body}</pre>"


# ---- numbers ----


def num_pm(value: float | None, result: Any) -> str:
    """`0.820 ± 0.041` or `0.833 [0.641, 0.967]`: the average and its 95% interval (the bare number without
    one), as `numbers.interval_suffix` writes it."""
    text = num(value)
    if text != "–" and value is not None:
        text += interval_suffix(value, result)
    return text


def reliability(result: Any) -> str:
    """` · pass^k 0.53 · pass@k 1.00` for 0/1 entries run with repeats."""
    all_k, at_k = getattr(result, "pass_all_k", None), getattr(result, "pass_at_k", None)
    if all_k is None:
        return ""
    return f" · pass^k {_rate(all_k)} · pass@k {_rate(at_k)}"


def _rate(value: Any) -> str:
    """A pass rate with 2 decimals; `–` for none (a results file read back may lack one)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "–"
    return f"{value:.2f}"


# ---- sections ----


@dataclass
class ReportContext:
    """Where the report goes: a comment carries the marker and links to the job summary."""

    run_url: str = ""
    marker: str = ""
    comment: bool = False
    html: str = ""  # the HTML report's file name, uploaded with the results: the footer says where it is


def headline(results: Results) -> str:
    verdict = results.verdict
    if getattr(results.summary, "failure_reason", None) == "errors":  # an outage, not a regression
        return f"## {ICON[verdict]} evalgate · {cell(results.name, 100)}: **{outage(results)}**"
    word = verdict if verdict else "no verdict"
    return f"## {ICON[verdict]} evalgate · {cell(results.name, 100)}: **{word}**"


def outage(results: Results) -> str:
    """`could not evaluate: 12 of 12 items errored: <the most common error>`, escaped and bounded."""
    summary = results.summary
    top = summary.top_error if isinstance(summary.top_error, dict) else {}
    message = cell(str(top["message"]), 200) if top.get("message") else ""
    return could_not_evaluate(summary, message)


def status(results: Results) -> str:
    found = result_rows(results)
    gates = [e for e in found if e.kind == "gate"]
    thresholds = [e for e in found if e.kind == "threshold"]
    summary = results.summary
    parts = []
    if gates:
        parts.append(f"{sum(e.result.passed for e in gates)}/{len(gates)} gates passed")
    if thresholds:
        parts.append(f"{sum(e.result.passed for e in thresholds)}/{len(thresholds)} thresholds met")
    comparison = _comparison(results)
    if comparison is not None:
        regressed = sum(1 for e in comparison.get("entries") or [] if e.get("status") == "regressed"
                        and e.get("kind") != "tracked")
        parts.append(f"{regressed} regressed against the baseline")
    repeats = repeats_note(summary.model_extra or {})
    if repeats:
        trials = getattr(summary, "trials", None)
        total = f" = {trials} trials" if isinstance(trials, int) else ""
        parts.append(f"{summary.total_items} items × {repeats.removesuffix(' per item')}{total}, "
                     f"{errored_count(summary)}")
    else:
        parts.append(f"{summary.total_items} items, {summary.errored_items} errored")
    text = " · ".join(parts)
    if getattr(summary, "failure_reason", None) == "regression":
        text += ("\n\n> **Failed because it regressed against the baseline**: the interval of head − base lies "
                 "below −max_drop, beyond what noise explains. See *Regressions* below.")
    text += _unscored_note(results)
    if summary.error_budget_exceeded:
        text += (
            f"\n\n> **Failed because {errored_count(summary)}**, more than `max_errors: "
            f"{summary.max_errors}` allows. Errors are not scores: see *Errored items* below."
        )
    if getattr(summary, "interrupted", False):
        text += "\n\n> The run was interrupted: these results cover only the items that finished."
    raw_budget = getattr(summary, "budget", None)
    budget: dict[str, Any] = raw_budget if isinstance(raw_budget, dict) else {}
    not_run = amount(budget.get("items_not_run")) if budget else None
    if (not_run or 0) >= 1:  # numbers only: a results file is untrusted (a fork's), its text must not reach the comment
        usd, tokens = amount(budget.get("max_usd")), amount(budget.get("max_tokens"))
        caps = " and ".join(c for c in (f"${usd:g}" if usd else "", f"{tokens:.0f} tokens" if tokens else "") if c)
        spent = dollars(amount(budget.get("spent_usd")) or 0)
        text += (f"\n\n> **Budget exceeded**: {not_run:.0f} items were not run (the cap is {caps or 'unknown'}; "
                 f"spent {spent}, {amount(budget.get('spent_tokens')) or 0:.0f} tokens). They count as errored items.")
    return text


def _unscored_note(results: Results) -> str:
    """Why gates or thresholds have no score: those that failed the verdict, those left out of it."""
    failed, left_out = unscored_entries(results)
    text = ""
    if results.verdict is None:
        text += ("\n\nNo gates or thresholds produced a score: this run only reports scores." if not left_out else
                 f"\n\n> **No gate or threshold could be scored**: {cell(shown_unscored(left_out), 600)}")
        return text
    if failed and not results.summary.error_budget_exceeded:  # an outage says so below, and why
        text += f"\n\n> **Failed because a gate or threshold has no score**: {cell(shown_unscored(failed), 600)}"
    if left_out:
        text += (f"\n\n> Left out of the verdict, every result not scorable (as Mastra's runEvals does): "
                 f"{cell(shown_unscored(left_out), 600)}")
    return text


def amount(value: Any) -> float | None:
    """A number a float holds, else None: a results file read back may hold text, a list, a NaN or an
    integer past any float where a figure belongs (formatting them crashed the report)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not abs(value) <= sys.float_info.max:
        return None
    return float(value)


def mark(passed: bool) -> str:
    return "✅" if passed else "❌"


def _versus(results: Results, row: Row) -> str:
    """` (base 0.900, −0.350 [−0.47, −0.22]) ❌ regressed` after an entry's score, with a baseline."""
    comparison = _comparison(results) or {}
    found = next((e for e in comparison.get("entries") or [] if e.get("id") == row.id and e.get("turn") == row.turn),
                 None)
    text = against_base(found)
    if not text or found is None:
        return ""
    return f" {cell(text, 200)}".replace(") ", f") {STATUS_ICON.get(str(found.get('status')), '')} ", 1)


def gate_table(results: Results, max_rows: int | None) -> str:
    rows = [e for e in result_rows(results) if e.kind == "gate"]
    if not rows:
        return ""
    lines = ["### Gates", "", "| Gate | Score | Pass |", "|---|---:|:---:|"]
    lines += [f"| {code(e.label)} | {num_pm(e.result.score, e.result)}{reliability(e.result)}{_versus(results, e)} "
              f"| {mark(e.result.passed)}"
              f"{' ' + cell(e.result.unscored, 200) if getattr(e.result, 'unscored', None) else ''} |"
              for e in _cap(rows, max_rows)]
    return "\n".join(lines + _more(rows, max_rows))


def threshold_table(results: Results, max_rows: int | None) -> str:
    rows = [e for e in result_rows(results) if e.kind == "threshold"]
    if not rows:
        return ""
    lines = ["### Thresholds", "", "| Scorer | Average | Bound | Pass | Direction |", "|---|---:|---|:---:|---|"]
    for e in _cap(rows, max_rows):
        t = e.result
        bound = bound_text(t.threshold)
        passed = mark(t.passed) + (" uncertain" if getattr(t, "uncertain", None) else "")
        if getattr(t, "unscored", None):
            passed += " " + cell(t.unscored, 200)
        lines.append(f"| {code(e.label)} | {num_pm(t.average_score, t)}{reliability(t)}{_versus(results, e)} "
                     f"| {bound} | {passed} | {direction(t)} |")
    return "\n".join(lines + _more(rows, max_rows))


def tracked_table(results: Results, max_rows: int | None) -> str:
    with_threshold = {t.id for t in results.threshold_results}
    rows = [(sid, score, results.score_stats.get(sid)) for sid, score in results.scores.items()
            if sid not in with_threshold]
    for turn in results.turn_results or []:
        turn_thresholds = {t.id for t in turn.threshold_results}
        rows += [(f"turn {turn.index + 1}: {sid}", s, turn.score_stats.get(sid)) for sid, s in turn.scores.items()
                 if sid not in turn_thresholds]
    if not rows and not results.summary.not_scorable:
        return ""
    lines = []
    if rows:
        lines += ["### Tracked scores", "", "| Scorer | Average |", "|---|---:|"]
        lines += [f"| {code(sid)} | {num_pm(score, bar)} |" for sid, score, bar in _cap(rows, max_rows)]
        lines += _more(rows, max_rows)
    if results.summary.not_scorable:  # capped as the rows are: a thousand long ids left no room for the gates
        pairs = list(results.summary.not_scorable.items())
        counts = [f"{code(k, table=False)}: {v}" for k, v in _cap(pairs, max_rows)]
        if len(counts) < len(pairs):
            counts.append(f"… and {len(pairs) - len(counts)} more")
        lines += ["", f"Not scorable (left out of the averages): {', '.join(counts)}"]
    return "\n".join(lines)


def _cap(rows: list[Any], max_rows: int | None) -> list[Any]:
    return rows if max_rows is None else rows[:max_rows]


def _more(rows: list[Any], max_rows: int | None) -> list[str]:
    if max_rows is None or len(rows) <= max_rows:
        return []
    return ["", f"*… and {len(rows) - max_rows} more rows, in the job summary and the results file.*"]


# ---- the items behind a failure ----


def _mapping(value: Any) -> dict[str, Any]:
    """A turn record's field as a mapping: a results file from a fork may hold anything there."""
    return value if isinstance(value, dict) else {}


def _scores_of(item: ItemRecord, entry: Row) -> tuple[dict[str, Any], dict[str, str], Any, Any]:
    """The item's scores for this entry's kind, its reasons, input and output (the turn's, per turn)."""
    source: dict[str, Any] = {
        "gates": item.gates, "scores": item.scores, "reasons": item.reasons, "not_scorable": item.not_scorable,
        "scorer_errors": item.scorer_errors, "reasons_by_kind": item.reasons_by_kind,
        "input": item.input, "output": item.output,
    }
    if entry.turn is not None:
        turns = item.turns or []
        source = next((t for t in turns if t.get("index") == entry.turn), {})
    scores = _mapping(source.get("gates" if entry.kind == "gate" else "scores"))
    reasons = {**_mapping(source.get("not_scorable")), **_mapping(source.get("reasons"))}
    if entry.kind != "gate":  # a raising gate's error is its reason: these are scorers', one perhaps of its id
        reasons.update(_mapping(source.get("scorer_errors")))
    by_kind = source.get("reasons_by_kind")  # a gate and a scorer of one id (at a turn): each one's own reason
    if isinstance(by_kind, dict) and any(isinstance(v, dict) and entry.id in v for v in by_kind.values()):
        own = by_kind.get("gates" if entry.kind == "gate" else "scores")
        reasons[entry.id] = str(own.get(entry.id, "")) if isinstance(own, dict) else ""
    return scores, reasons, source.get("input"), source.get("output")


EntryKey = tuple[str, int | None, str]  # (kind, turn, id) of a gate or threshold row


def _score_of(item: ItemRecord, entry: Row) -> Any:
    """The item's score for this entry (its turn's, per turn), as `_scores_of` finds it but without its
    reasons: this runs for every item and every failed entry (10,000 items and 1,000 gates)."""
    if entry.turn is None:
        return (item.gates if entry.kind == "gate" else item.scores).get(entry.id)
    turn = next((t for t in item.turns or [] if t.get("index") == entry.turn), None) or {}
    return _mapping(turn.get("gates" if entry.kind == "gate" else "scores")).get(entry.id)


def _badness(entry: Row) -> tuple[Callable[[float], bool], bool]:
    """Whether a score pulled this entry out of bounds, and whether the lowest scores are the worst."""
    if entry.kind == "gate":
        return (lambda score: score < 1.0), True
    bounds = entry.result.threshold.range
    average = entry.result.average_score
    if bounds.max is not None and average is not None and average > bounds.max:
        high = bounds.max
        return (lambda score: score > high), False
    low = bounds.min if bounds.min is not None else 1.0
    return (lambda score: score < low), True


class Responsible:
    """The items that pulled one entry out of bounds: how many, and the worst few with their scores."""

    __slots__ = ("bad", "count", "heap", "keep", "worst_first")

    def __init__(self, entry: Row, keep: int) -> None:
        self.bad, self.worst_first = _badness(entry)
        self.keep = keep
        self.count = 0
        self.heap: list[tuple[float, int, int, ItemRecord]] = []  # the kept, negated: the best of them on top

    def see(self, position: int, item: ItemRecord, score: Any) -> None:
        if not (isinstance(score, int | float) and self.bad(score)):
            return
        self.count += 1
        key = float(score) if self.worst_first else -float(score)
        # the worst first, then by index, then by position (a stable sort of the data's order)
        row = (-key, -(item.index or 0), -position, item)
        if len(self.heap) < self.keep:
            heapq.heappush(self.heap, row)
        elif row > self.heap[0]:
            heapq.heapreplace(self.heap, row)

    @property
    def rows(self) -> list[tuple[ItemRecord, float]]:
        ordered = sorted(self.heap, reverse=True)
        return [(item, -key if self.worst_first else key) for key, _, _, item in ordered]


class ItemDigest:
    """What the report shows of the items, gathered in one pass over them (a results file's items are
    read one at a time: a million never sit in memory): per failed entry its responsible items, the
    errored items, the items a regression flipped, the priciest items."""

    def __init__(self, results: Results, keep: int = ITEMS_PER_ENTRY, priciest_shown: int = 3) -> None:
        failing = [e for e in result_rows(results) if not e.result.passed]
        self.responsible = {(e.kind, e.turn, e.id): Responsible(e, keep) for e in failing}
        self.errored: list[tuple[ItemRecord, str]] = []  # the first few errored items, with why
        self.flipped: dict[str, ItemRecord] = {}
        wanted = _flipped_ids(results)
        costs: list[tuple[float, int, str]] = []
        watched = [(entry, self.responsible[(entry.kind, entry.turn, entry.id)]) for entry in failing]
        for position, item in enumerate(results.each_item()):
            for entry, found in watched:
                found.see(position, item, _score_of(item, entry))
            if len(self.errored) < ERRORED_SHOWN and (why := item_error(item)):
                self.errored.append((item, why))
            if item.id in wanted and item.id not in self.flipped:
                self.flipped[item.id] = item
            cost = item_cost(item)
            if cost is not None:  # the priciest few, the first of equal costs kept
                row = (cost, -position, str(item.id))
                if len(costs) < priciest_shown:
                    heapq.heappush(costs, row)
                elif row > costs[0]:
                    heapq.heapreplace(costs, row)
        self.priciest = [(item_id, cost) for cost, _, item_id in sorted(costs, reverse=True)]


def _flipped_ids(results: Results) -> set[str]:
    comparison = _comparison(results)
    flipped = (comparison or {}).get("flipped") or []
    return {str(f.get("item")) for f in flipped if isinstance(f, dict)}


def responsible(results: Results, entry: Row) -> list[tuple[ItemRecord, float]]:
    """Items that pulled this entry's average out of bounds, with their scores, worst first."""
    found = Responsible(entry, keep=sys.maxsize)
    for position, item in enumerate(results.each_item()):
        found.see(position, item, _score_of(item, entry))
    return found.rows


def output_text(output: Any) -> str:
    if not isinstance(output, dict):
        return "" if output is None else str(output)
    text = output.get("text")  # untrusted: a results file may come from a fork's job
    text = text if isinstance(text, str) else "" if text is None else str(text)
    calls = output.get("tool_calls")
    names = [str(c.get("name", "?")) for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    if names:
        text += ("\n" if text else "") + "[tool calls: " + ", ".join(names) + "]"
    return text


def item_block(item: ItemRecord, score: float, entry: Row) -> str:
    _, reasons, given, output = _scores_of(item, entry)
    reason = reasons.get(entry.id, "")
    head = f"**{code(item.id, table=False)}** · score {num(score)}"
    if reason:
        head += f" · {cell(reason, 300)}"
    return "\n\n".join([head, "Input:", excerpt(given), "Output:", excerpt(output_text(output))])


def detail_block(results: Results, entry: Row, max_items: int, digest: ItemDigest) -> str:
    found = digest.responsible[(entry.kind, entry.turn, entry.id)]
    rows, count = found.rows, found.count
    if entry.kind == "gate":
        title = f"{mark(False)} Gate {code(entry.label, table=False)}: {num(entry.result.score)} (must be 1.0)"
    else:
        title = (f"⚠️ Threshold {code(entry.label, table=False)}: {num(entry.result.average_score)} "
                 f"(bound {bound_text(entry.result.threshold)})")
    unscored = getattr(entry.result, "unscored", None)  # no item scored it: why, not "0 items responsible"
    title += f": {cell(unscored, 300)}" if unscored else f", {count} item{'s' if count != 1 else ''} responsible"
    parts = [f"<details><summary>{title}</summary>"]
    parts += [item_block(item, score, entry) for item, score in rows[:max_items]]
    if count > max_items:
        parts.append(f"*… and {count - max_items} more items.*")
    if not count and not results.has_items:
        parts.append("*Item details are not in this results file.*")
    parts.append("</details>")
    return "\n\n".join(parts)


def errored_block(results: Results, max_items: int, digest: ItemDigest) -> str:
    errored = digest.errored
    count = results.summary.errored_items
    if not count:
        return ""
    parts = [f"<details><summary>Errored items: {errored_count(results.summary)}; what errored is left out "
             "of the averages, their other scores count</summary>"]
    for item, message in errored[:max_items]:
        parts.append(f"**{code(item.id, table=False)}**\n\n{excerpt(message)}")
    if count > min(len(errored), max_items):
        parts.append(f"*… and {count - min(len(errored), max_items)} more.*")
    parts.append("</details>")
    return "\n\n".join(parts)


REGRESSIONS = "### Regressions"
FAILURES = "### Failures"
Block = tuple[str, str]  # (the section it belongs to, its text)


def failure_blocks(results: Results, max_items: int, digest: ItemDigest | None = None) -> list[Block]:
    """Regressions against the baseline first (they are what a pull request changed), then failures.
    `digest`: the items' digest, gathered once for the several sizes `render` tries."""
    digest = digest or ItemDigest(results, max_items)
    blocks: list[Block] = [(REGRESSIONS, b) for b in regression_blocks(results, max_items, digest)]
    failing = [e for e in result_rows(results) if not e.result.passed]
    for entry in sorted(failing, key=lambda e: e.kind != "gate"):  # gate failures first
        blocks.append((FAILURES, detail_block(results, entry, max_items, digest)))
    errored = errored_block(results, min(max_items * 2, ERRORED_SHOWN), digest)
    if errored:
        blocks.append((FAILURES, errored))
    return blocks


# ---- the baseline: comparison, regressions, flaky items ----

STATUS_ICON = {"regressed": "❌", "improved": "✅", "unchanged": "➖", "uncertain": "❔", "incomparable": "⚪"}


def _comparison(results: Results) -> dict[str, Any] | None:
    comparison = getattr(results, "comparison", None)
    return comparison if isinstance(comparison, dict) else None


def _label(entry: dict[str, Any]) -> str:
    turn = entry.get("turn")
    return str(entry.get("id")) if turn is None else f"turn {turn + 1}: {entry.get('id')}"


def _head_results(results: Results) -> dict[tuple[Any, str], Any]:
    found: dict[tuple[Any, str], Any] = {(e.turn, e.id): e.result for e in result_rows(results)}
    for sid, bar in results.score_stats.items():
        found.setdefault((None, sid), bar)
    for turn in results.turn_results or []:
        for sid, bar in turn.score_stats.items():
            found.setdefault((turn.index, sid), bar)
    return found


def comparison_table(results: Results, max_rows: int | None) -> str:
    comparison = _comparison(results)
    if comparison is None:
        return ""
    base = comparison.get("baseline") or {}
    sha = f" @ <code>{cell(str(base.get('git_sha'))[:7], 10)}</code>" if base.get("git_sha") else ""
    intro = (f"Baseline {cell(base.get('name') or '?', 100)}{sha} ({cell(base.get('verdict') or 'no verdict', 20)}): "
             f"{comparison.get('matched_items', 0)} items matched, {comparison.get('new_items', 0)} new, "
             f"{comparison.get('missing_items', 0)} missing.")
    if comparison.get("changed_items"):
        intro += f" {comparison['changed_items']} changed their data and are not compared."
    settings = comparison.get("settings") or {}
    correction = cell(settings.get("correction", "holm"), 20)
    intro += (f" Δ is head − base on the matched items with its 95% interval; an entry regresses when the interval "
              f"lies below −max_drop ({correction} correction across entries).")
    head = _head_results(results)
    rows = comparison.get("entries") or []
    flips = flip_counts(comparison)
    given = settings.get("confidence")
    confidence = given if isinstance(given, float) else 0.95
    lines = ["### Compared with the baseline", "", intro, "",
             "| Entry | Head | Baseline · Δ [95% interval] | Status |", "|---|---:|---|---|"]
    for entry in _cap(rows, max_rows):
        result = head.get((entry.get("turn"), entry.get("id")))
        value = num_pm(entry.get("head_average"), result)
        status = str(entry.get("status", ""))
        icon = STATUS_ICON.get(status, "")
        tracked = entry.get("kind") == "tracked" and status == "regressed"
        said = status_words(entry, flips.get((entry.get("turn"), str(entry.get("id")))), confidence)
        mde = entry.get("mde")
        if isinstance(mde, int | float) and math.isfinite(mde) and status in ("uncertain", "unchanged", "improved"):
            said += f"; this run can detect a drop of {mde:.2f} or more"
        words = cell(said, 300) + (" (tracked: never fails)" if tracked else "")
        label = "" if status == "incomparable" else f"**{status}**: "
        lines.append(f"| {code(_label(entry))} | {value} | {delta_text(entry)} | {icon} {label}{words} |")
    lines += _more(rows, max_rows)
    lines += ["", p_value_details(_cap(rows, max_rows), correction)]
    for warning in (comparison.get("warnings") or [])[:5]:
        lines += ["", f"> {cell(warning, 300)}"]
    return "\n".join(lines)


def flip_counts(comparison: dict[str, Any]) -> dict[tuple[Any, str], dict[str, int]]:
    """Per entry (turn, id), how many of the items kept in `flipped` went each way."""
    counts: dict[tuple[Any, str], dict[str, int]] = {}
    for flip in comparison.get("flipped") or []:
        if isinstance(flip, dict):
            per = counts.setdefault((flip.get("turn"), str(flip.get("entry"))), {})
            per[str(flip.get("direction"))] = per.get(str(flip.get("direction")), 0) + 1
    return counts


SHOWN_STATS = ("method", "pairs", "p_value", "p_regression")


def p_value_details(rows: list[dict[str, Any]], correction: str) -> str:
    """The statistics behind each status, folded: method, pairs, p-values and whatever else each entry carries."""
    extra = sorted({k for e in rows for k, v in e.items() if k not in COMPARED_KEYS and amount(v) is not None})
    lines = [f"<details><summary>p-values, methods and the correction ({correction} across entries)</summary>", "",
             "| Entry | Method | Pairs | p | p (a drop beyond max_drop) |"
             + "".join(f" {cell(k, 40)} |" for k in extra),
             "|---|---|---:|---:|---:|" + "---:|" * len(extra)]
    for entry in rows:
        values = [cell(str(entry.get("method") or "–"), 40), str(entry.get("pairs") or 0),
                  p_text(entry.get("p_value")), p_text(entry.get("p_regression")),
                  *(p_text(entry.get(k)) for k in extra)]
        lines.append(f"| {code(_label(entry))} | " + " | ".join(values) + " |")
    return "\n".join([*lines, "", "</details>"])


COMPARED_KEYS = frozenset({"id", "turn", "kind", "status", "base_average", "head_average", "delta", "ci95", "p_value",
                           "p_regression", "method", "pairs", "max_drop", "higher_is_better", "reason"})


def p_text(value: Any) -> str:
    number = amount(value)
    if number is None:
        return "–"
    return "< 0.001" if 0 <= number < 0.001 else f"{number:.3g}"


def regression_blocks(results: Results, max_items: int, digest: ItemDigest) -> list[str]:
    """Per regressed entry, the items that went from pass to fail, with their input and output."""
    comparison = _comparison(results)
    if comparison is None:
        return []
    regressed = [e for e in comparison.get("entries") or [] if e.get("status") == "regressed"]
    if not regressed:
        return []
    items = digest.flipped
    bases = {str(b.get("id")): dict(b) for b in comparison.get("base_items") or [] if isinstance(b, dict)}
    flipped = comparison.get("flipped") or []
    blocks = []
    for entry in sorted(regressed, key=lambda e: e.get("kind") == "tracked"):
        worse = [f for f in flipped if f.get("entry") == entry.get("id") and f.get("turn") == entry.get("turn")
                 and f.get("direction") == "pass->fail"]
        title = (f"{STATUS_ICON['regressed']} {code(_label(entry), table=False)}: {delta_text(entry)}, "
                 f"{len(worse)} item{'s' if len(worse) != 1 else ''} pass → fail")
        if entry.get("kind") == "tracked":
            title += " (tracked: reported, never failing)"
        parts = [f"<details><summary>{title}</summary>"]
        for flip in worse[:max_items]:
            parts.append(flipped_item(flip, items.get(str(flip.get("item"))), entry, bases.get(str(flip.get("item")))))
        if len(worse) > max_items:
            parts.append(f"*… and {len(worse) - max_items} more items.*")
        if not worse:
            parts.append("*No single item flipped: the scores moved across many items.*")
        parts.append("</details>")
        blocks.append("\n\n".join(parts))
    return blocks


def flipped_item(flip: dict[str, Any], record: ItemRecord | None, entry: dict[str, Any],
                 base: dict[str, Any] | None) -> str:
    """An item that went from pass to fail: its scores base → head, each side's reason, its input, and the
    base's output beside this run's when the results carry it (`comparison.base_items`)."""
    head = (f"**{code(flip.get('item'), table=False)}** · base {num(flip.get('base_score'))} → "
            f"head {num(flip.get('head_score'))}")
    if record is None:
        return head
    row = Row("gate" if entry.get("kind") == "gate" else "threshold", str(entry.get("id")), entry.get("turn"), None)
    _, reasons, given, output = _scores_of(record, row)
    base_reason = _mapping((base or {}).get("reasons")).get(row.id) if row.turn is None else None
    lines = [head]
    if base_reason:
        lines.append(f"Base's reason: {cell(str(base_reason), 300)}")
    if reasons.get(row.id):
        lines.append(f"Head's reason: {cell(reasons[row.id], 300)}")
    lines += ["Input:", excerpt(given)]
    if base is not None and row.turn is None and base.get("output") is not None:
        lines += ["Base output:", excerpt(output_text(base.get("output")))]
    lines += ["Head output:" if base is not None and row.turn is None else "Output:", excerpt(output_text(output))]
    return "\n\n".join(lines)


def flaky_table(results: Results, max_rows: int | None) -> str:
    """0/1 entries run with repeats whose trials disagreed on some items."""
    rows = []
    for entry in result_rows(results):
        if getattr(entry.result, "flaky", None):
            rows.append((entry.label, entry.result))
    for sid, bar in results.score_stats.items():
        if bar.flaky:
            rows.append((sid, bar))
    if not rows:
        return ""
    lines = ["### Flaky items", "", "Items whose trials disagreed: sometimes passed, sometimes failed.", "",
             "| Entry | Flaky | Items |", "|---|---:|---|"]
    for label, result in _cap(rows, max_rows):
        shown = ", ".join(code(i) for i in (result.flaky_items or [])[:10])
        more = f" … and {result.flaky - min(10, len(result.flaky_items or []))} more" if result.flaky > 10 else ""
        lines.append(f"| {code(label)} | {result.flaky} | {shown}{more} |")
    return "\n".join(lines + _more(rows, max_rows))


def reliability_details(results: Results, max_rows: int | None) -> str:
    """0/1 entries run with repeats: pass^k and pass@k by k with their intervals, folded."""
    rows = [(e.label, e.result.pass_k_curve) for e in result_rows(results) if getattr(e.result, "pass_k_curve", None)]
    rows += [(sid, bar.pass_k_curve) for sid, bar in results.score_stats.items() if bar.pass_k_curve]
    if not rows:
        return ""
    lines = ["<details><summary>pass^k and pass@k by k: how reliably each item passes repeated trials</summary>", "",
             "pass^k is the chance that k trials of an item all pass, pass@k that at least one of k passes, each "
             "averaged over the items with its 95% interval; an errored trial counts as a failure.", "",
             "| Entry | k | pass^k [95%] | pass@k [95%] | Items |", "|---|---:|---:|---:|---:|"]
    for label, curve in _cap(rows, max_rows):
        for point in curve_points(curve):
            lines.append(f"| {code(label)} | {point.k} | {_rate(point.pass_all_k)} {_pair(point.pass_all_k_ci95)} "
                         f"| {_rate(point.pass_at_k)} {_pair(point.pass_at_k_ci95)} | {point.items} |")
    return "\n".join([*lines, *_more(rows, max_rows), "", "</details>"])


def _pair(interval: Any) -> str:
    low, high = interval
    return f"[{_rate(low)}, {_rate(high)}]"


def judge_note(judge: Any) -> str:
    """`judge gpt-4o-mini · 120 calls · $0.0123`: which judge scored this, so a baseline judged
    differently is recognised, and what it cost."""
    if not isinstance(judge, dict) or not judge.get("model"):
        return ""
    note = f"judge {cell(str(judge['model']), 60)}"
    calls = judge.get("calls")
    if isinstance(calls, int):
        note += f" · {calls} calls"
    cost = judge.get("cost_usd")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and abs(cost) <= sys.float_info.max:
        note += f" · {dollars(cost)}"  # no NaN, infinity or integer past any float: an edited file's
    prompts = judge.get("prompts")
    if isinstance(prompts, dict) and prompts:
        shown = ", ".join(f"{cell(str(k), 40)} {cell(str(v), 16)}" for k, v in list(prompts.items())[:5])
        note += f" · prompts {shown}"
    return note


def item_cost(item: Any) -> float | None:
    """An item's `cost_usd` (run and judge), which a record holds only with a judge's cost; else what its
    runs cost (a target that reports cost, no judge), every trial's with repeats."""
    cost = amount(getattr(item, "cost_usd", None))
    if cost is not None:
        return cost
    runs = [t.get("run") for t in item.trials if isinstance(t, dict)] if item.trials else [item.output]
    costs = [c for run in runs if isinstance(run, dict) and (c := amount(run.get("cost_usd"))) is not None]
    total = 0.0
    for usd in costs:  # in order, as the run adds them
        total += usd
    return saturated(total) if costs else None


def cost_note(cost: Any, top: Sequence[tuple[str, float]] = (), shown: int = 5) -> str:
    """`cost $0.0123 (target $0.01; judge: faithfulness $0.002; most: q7 $0.004)`: the run's cost, by check."""
    usd = amount(cost.get("usd")) if isinstance(cost, dict) else None
    if usd is None:
        return ""
    text = f"cost {dollars(usd)}"
    parts = []
    target = amount(cost.get("target_usd"))
    if target:
        parts.append(f"target {dollars(target)}")
    by_check = cost.get("by_check")
    checks = [(k, spent) for k, v in (by_check.items() if isinstance(by_check, dict) else ())
              if (spent := amount(v)) is not None]
    if checks:
        named = ", ".join(f"{cell(str(k), 40)} {dollars(v)}" for k, v in checks[:shown])
        more = f", … {len(checks) - shown} more" if len(checks) > shown else ""
        parts.append(f"judge: {named}{more}")
    if top:
        parts.append("most: " + ", ".join(f"{cell(k, 40)} {dollars(v)}" for k, v in top))
    return text + (f" ({'; '.join(parts)})" if parts else "")


def footer(results: Results, ctx: ReportContext, truncated: bool, priciest: Sequence[tuple[str, float]] = ()) -> str:
    run_url = ctx.run_url if WEB_ADDRESS.fullmatch(ctx.run_url) else ""  # `--run-url` or the runner's env
    parts = []
    if run_url:
        parts.append(f"[workflow run]({run_url})")
    version = getattr(results, "evalgate_version", None)
    if version:
        parts.append(f"evalgate {cell(version, 40)}")
    duration = results.summary.duration_s
    if duration is not None:
        parts.append(f"{duration:.1f} s")
    judge = judge_note(getattr(results.summary, "judge", None))
    if judge:
        parts.append(judge)
    cost = cost_note(getattr(results.summary, "cost", None), priciest)
    if cost:
        parts.append(cost)
    if ctx.html:
        parts.append(f"every item in the HTML report: {code(ctx.html, 80, table=False)} in the run's artifacts")
    text = f"<sub>{' · '.join(parts)}</sub>" if parts else ""
    if truncated:
        where = f"the [job summary]({run_url})" if run_url else "the job summary"
        text = f"*Shortened to fit: the full report is in {where} and the results file.*\n\n" + text
    return text


# ---- assembly and fitting ----


def _template() -> Template:
    return Template(resources.files("evalgate.report").joinpath("templates/report.md").read_text("utf-8"))


def assemble(results: Results, ctx: ReportContext, *, blocks: Iterable[Block], max_rows: int | None,
             truncated: bool, priciest: Sequence[tuple[str, float]] = ()) -> str:
    tables = [t for t in (gate_table(results, max_rows), threshold_table(results, max_rows),
                          tracked_table(results, max_rows), comparison_table(results, max_rows),
                          trend_section(results) if max_rows != 0 else "", flaky_table(results, max_rows),
                          reliability_details(results, max_rows)) if t]
    details = ""
    block_list = list(blocks)
    for section in (REGRESSIONS, FAILURES):
        texts = [text for where, text in block_list if where == section]
        if texts:
            details += section + "\n\n" + "\n\n".join(texts) + "\n\n"
    text = _template().substitute(
        marker=(ctx.marker + "\n") if ctx.marker else "",
        headline=headline(results),
        status=status(results),
        tables="\n\n".join(tables),
        details=details,
        footer=footer(results, ctx, truncated, priciest),
    )
    # The last line of defence for everything above: no known secret, no control or bidi character.
    text = visible(redact(text))
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def render(results: Results, ctx: ReportContext | None = None, *, limit: int | None = None,
           size: Callable[[str], int] = utf8_size) -> str:
    """The report, at most `limit` (by `size`): item details shrink first, then go, then rows."""
    ctx = ctx or ReportContext()
    digest = ItemDigest(results)  # one pass over the items, for every size tried

    def assembled(blocks: Iterable[Block], max_rows: int | None, truncated: bool) -> str:
        return assemble(results, ctx, blocks=blocks, max_rows=max_rows, truncated=truncated,
                        priciest=digest.priciest)

    text = assembled(failure_blocks(results, ITEMS_PER_ENTRY, digest), None, False)
    if limit is None or size(text) <= limit:
        return text
    blocks: list[Block] = []
    for per_entry in (3, 1):  # fewer items per failure
        blocks = failure_blocks(results, per_entry, digest)
        text = assembled(blocks, None, True)
        if size(text) <= limit:
            return text

    def fits(keep: int) -> str | None:
        candidate = assembled(blocks[:keep], None, True)
        return candidate if size(candidate) <= limit else None

    low, high = 0, len(blocks)  # then as many failures as fit: a binary search on the count
    best = fits(0)
    if best is not None:
        while low < high:
            middle = (low + high + 1) // 2
            candidate = fits(middle)
            if candidate is not None:
                low, best = middle, candidate
            else:
                high = middle - 1
        return best
    for max_rows in (200, 50, 10, 0):
        text = assembled([], max_rows, True)
        if size(text) <= limit:
            return text
    return hard_cut(text, limit, size)


def hard_cut(text: str, limit: int, size: Callable[[str], int]) -> str:
    """Last resort: whole lines up to the limit (huge names); never half an escape or tag."""
    note = "\n\n*Shortened to fit: see the job summary.*\n"
    kept: list[str] = []
    used = size(note)
    for line in text.splitlines():
        cost = size(line) + 1
        if used + cost > limit:
            break
        kept.append(line)
        used += cost
    return "\n".join(kept) + note
