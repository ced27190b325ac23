"""The terminal: a progress bar (a line every few seconds in CI logs) and the summary table."""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from typing import Any, TextIO

import click

from evalgate.decide.verdict import Range
from evalgate.infra.redaction import redact
from evalgate.infra.textsafe import visible
from evalgate.report.labels import (
    FAILING_IDS_SHOWN,
    bound_text,
    could_not_evaluate,
    curve_line,
    errored_count,
    item_error,
    shown_unscored,
    turn_label,
    unscored_entries,
)
from evalgate.report.numbers import (
    against_base,
    decision_note,
    delta_text,
    direction,
    repeats_note,
    status_words,
    with_margin,
)
from evalgate.run.budget import dollars

PROGRESS_MIN_ITEMS = 5
CI_PROGRESS_EVERY_S = 5.0


class FailingIds:
    """Per gate and threshold, the failing items: the first few in data order (the same list on every
    run, whatever order items finish in) and how many there are, collected as items finish (for the log)."""

    def __init__(self) -> None:
        self.first: dict[str, list[tuple[int, str]]] = {}
        self.counts: dict[str, int] = {}
        self.bounds: dict[str, Range] = {}

    def watch(self, checks: Any) -> None:
        """The top-level thresholds to watch besides the gates (the loaded spec's scorers)."""
        for check in checks:
            entry = check.entry
            if entry.threshold is not None and entry.turn is None:
                self.bounds[entry.id] = entry.threshold.range

    def note(self, entry_id: str, index: int, item_id: str) -> None:
        self.counts[entry_id] = self.counts.get(entry_id, 0) + 1
        first = self.first.setdefault(entry_id, [])
        if len(first) < FAILING_IDS_SHOWN or index < first[-1][0]:
            bisect.insort(first, (index, item_id))
            del first[FAILING_IDS_SHOWN:]

    def add(self, item: Any) -> list[str]:
        """Note the item's failed gates and missed thresholds; returns the gates."""
        bad: list[str] = []
        index = getattr(item, "index", 0)
        for gate_id, score in item.gates.items():
            # rare: most items pass their gates. A NaN (None, as a results file reads it back) fails too
            if score is None or not score >= 1.0:
                bad.append(gate_id)
                self.note(gate_id, index, item.id)
        for entry_id, bound in self.bounds.items():
            score = item.scores.get(entry_id)
            if isinstance(score, int | float) and ((bound.min is not None and score < bound.min)
                                                   or (bound.max is not None and score > bound.max)):
                self.note(entry_id, index, item.id)
        return bad

    @property
    def ids(self) -> dict[str, list[str]]:
        """Each entry's first failing ids in data order, then `… and N more` when there are more."""
        out = {}
        for entry_id, first in self.first.items():
            more = self.counts[entry_id] - len(first)
            out[entry_id] = [i for _, i in first] + ([f"… and {more} more"] if more > 0 else [])
        return out


class Progress:
    """A bar on a terminal; in CI logs one line every few seconds, never one per item."""

    def __init__(self, total: int, stream: TextIO, tty: bool, retries: Callable[[], int] = lambda: 0) -> None:
        self.total = total
        self.retries = retries  # network retries so far (targets and judge); read at each update
        self.stream = stream
        self.tty = tty
        self.done = 0
        self.errored = 0
        self.started = time.monotonic()
        self.last = self.started
        self.enabled = total > PROGRESS_MIN_ITEMS

    def tick(self, errored: bool) -> None:
        self.done += 1
        self.errored += errored
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            if now - self.last >= 0.1 or self.done == self.total:
                self.last = now
                self._bar(now)
        elif now - self.last >= CI_PROGRESS_EVERY_S:
            self.last = now
            self.stream.write(
                f"evalgate: {self.done}/{self.total} items done, {self.errored} errored, {self.retries()} retries\n"
            )
            self.stream.flush()

    def _bar(self, now: float) -> None:
        width = 30
        filled = int(width * self.done / self.total)
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"{rate:,.0f}/s eta {eta:,.0f}s errors {self.errored} retries {self.retries()} "
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\r" + " " * 79 + "\r")
            self.stream.flush()


def render_table(result: Any, failing: dict[str, list[str]], *, color: bool) -> str:
    """A compact summary: gates, thresholds, tracked scores, errored items, the verdict."""
    outcome = result.outcome

    def mark(passed: bool) -> str:
        if not color:
            return "PASS" if passed else "FAIL"
        return click.style("✔", fg="green") if passed else click.style("✘", fg="red", bold=True)

    counts = {**getattr(result, "extra_summary", {}), "errored_items": outcome.errored_items,
              "total_items": outcome.total_items}
    lines = [f"{one_line(result.name)}: {run_counts(counts)}, {result.duration_s:.1f}s"]
    network = getattr(result, "extra_summary", {}).get("network")
    if network:
        lines.append(network_line(network))
    sections: list[tuple[str, list[str]]] = []
    compared = {(e.get("turn"), e.get("id")): e for e in (getattr(result, "comparison", None) or {}).get("entries")
                or []}

    def versus(entry_id: str, turn: int | None) -> str:
        text = against_base(compared.get((turn, entry_id)))
        return f"  {one_line(text, 200)}" if text else ""

    rows = _gate_rows(outcome, failing, mark, versus)
    sections.append(("Gates (must average 1.0)", rows))
    rows = _threshold_rows(outcome, failing, mark, versus)
    sections.append(("Thresholds", rows))
    with_threshold = {t.id for t in outcome.threshold_results}
    rows = [f"       {one_line(sid):<40} {with_margin(score, outcome.score_stats.get(sid))}"
            for sid, score in outcome.scores.items() if sid not in with_threshold]
    sections.append(("Tracked scores", rows))
    sections.append(("Flaky items (trials disagree)", flaky_rows(outcome)))
    sections.append(("Reliability over repeated trials (errored trials count as failures)",
                     reliability_rows(outcome)))
    rows = _errored_rows(result, outcome)
    sections.append(("Errored items", rows))
    if outcome.not_scorable:
        sections.append(("Not scorable", [f"       {one_line(k):<40} {v} items"
                                          for k, v in outcome.not_scorable.items()]))
    comparison = getattr(result, "comparison", None)
    if comparison:
        sections.append(comparison_section(comparison))
    failed_comparison = getattr(result, "extra_summary", {}).get("comparison_error")
    if failed_comparison:
        sections.append(("Comparison with the baseline", [f"  not made: {one_line(failed_comparison)}"]))
    for title, rows in sections:
        if rows:
            lines += ["", title, *rows]
    lines += ["", verdict_line(outcome, color=color)]
    if getattr(result, "failure_reason", None) == "regression":
        lines[-1] += " (regressed against the baseline)"
    if outcome.failure_reason == "errors":
        top = getattr(result, "extra_summary", {}).get("top_error") or {}
        lines.append(could_not_evaluate(counts, one_line(str(top.get("message") or ""), 200)))
    return "\n".join(lines)


Mark = Callable[[bool], str]
Versus = Callable[[str, int | None], str]


def _gate_rows(outcome: Any, failing: dict[str, list[str]], mark: Mark, versus: Versus) -> list[str]:
    """Every gate's row, the run's then each turn's."""
    all_gates = [(None, g) for g in outcome.gate_results] + [
        (t.index, g) for t in outcome.turn_results or [] for g in t.gate_results
    ]
    rows: list[str] = []
    for turn, gate in all_gates:
        label = one_line(turn_label(gate.id, turn))
        row = f"  {mark(gate.passed)} {label:<40} {with_margin(gate.score, gate):<15}{versus(gate.id, turn)}"
        if gate.pass_all_k is not None:
            row += f"  pass^k {gate.pass_all_k:.2f}  pass@k {gate.pass_at_k:.2f}"
        if not gate.passed and failing.get(gate.id):
            row += "  failing: " + failing_text(failing[gate.id])
        if gate.unscored:
            row += f"  {one_line(gate.unscored, 200)}"
        rows.append(row)
    return rows


def _threshold_rows(outcome: Any, failing: dict[str, list[str]], mark: Mark, versus: Versus) -> list[str]:
    """Every threshold's row, the run's then each turn's; uncertain ones say why."""
    rows: list[str] = []
    all_thresholds = [(None, t) for t in outcome.threshold_results] + [
        (r.index, t) for r in outcome.turn_results or [] for t in r.threshold_results
    ]
    for turn, th in all_thresholds:
        label = one_line(turn_label(th.id, turn))
        bound = bound_text(th.threshold)
        row = (f"  {mark(th.passed)} {label:<40} {with_margin(th.average_score, th):<15}  {bound:<14} {direction(th)}"
               + versus(th.id, turn))
        if th.uncertain:
            row += f"  uncertain (interval [{th.interval[0]:.3f}, {th.interval[1]:.3f}] overlaps the bound)"
        if th.unscored:
            row += f"  {one_line(th.unscored, 200)}"
        if not th.passed and turn is None and failing.get(th.id):
            row += "  failing: " + failing_text(failing[th.id])
        rows.append(row)
    return rows


def _errored_rows(result: Any, outcome: Any) -> list[str]:
    """The errored items with their errors, the items a budget kept from running first."""
    rows = [f"  {one_line(item.id, 80)}: {one_line(item_error(item) or 'no reason recorded', 400)}"
            for item in result.errored]
    budget = getattr(result, "extra_summary", {}).get("budget")
    if budget and budget.get("items_not_run"):
        rows.insert(0, f"  {budget['items_not_run']} items not run: budget exceeded "
                       f"(spent {dollars(budget['spent_usd'])}, {budget['spent_tokens']} tokens)")
    if outcome.errored_items > len(result.errored):
        rows.append(f"  … and {outcome.errored_items - len(result.errored)} more")
    return rows


def run_counts(summary: dict[str, Any]) -> str:
    """`4 items, 0 errored`; with repeats `4 items × 2 trials = 8 trials, 3 of 4 items errored (5 of 8 trials)`."""
    repeats = repeats_note(summary)
    if not repeats:
        return f"{summary['total_items']} items, {summary['errored_items']} errored"
    trials = summary.get("trials")
    total = f" = {trials} trials" if isinstance(trials, int) else ""
    return f"{summary['total_items']} items × {repeats.removesuffix(' per item')}{total}, {errored_count(summary)}"


def failing_text(ids: list[str]) -> str:
    """`a, b, c … and 5 more`: the ids (each on one line, bounded), the count of the others after them."""
    more = ids[-1] if ids and ids[-1].startswith("… and ") else ""
    shown = ", ".join(one_line(i, 80) for i in (ids[:-1] if more else ids))
    return f"{shown} {more}" if more else shown


def comparison_section(comparison: dict[str, Any]) -> tuple[str, list[str]]:
    """Per entry: `base 0.90 · Δ -0.08 [-0.13, -0.03] ▼` and the status in words; then the flipped items."""
    base = comparison.get("baseline") or {}
    sha = f" @ {one_line(str(base.get('git_sha'))[:7])}" if base.get("git_sha") else ""
    title = (f"Compared with baseline {one_line(str(base.get('name')))}{sha}: "
             f"{comparison.get('matched_items', 0)} items matched, "
             f"{comparison.get('new_items', 0)} new, {comparison.get('missing_items', 0)} missing")
    rows = []
    flips: dict[tuple[Any, str], dict[str, int]] = {}
    for flip in comparison.get("flipped") or []:
        per = flips.setdefault((flip.get("turn"), str(flip.get("entry"))), {})
        per[str(flip.get("direction"))] = per.get(str(flip.get("direction")), 0) + 1
    confidence = (comparison.get("settings") or {}).get("confidence") or 0.95
    for entry in comparison.get("entries") or []:
        label = one_line(turn_label(str(entry["id"]), entry.get("turn")))
        said = status_words(entry, flips.get((entry.get("turn"), str(entry["id"]))), confidence)
        status = "" if entry.get("status") == "incomparable" else f"{entry.get('status')}: "
        note = decision_note(entry)
        stats = f" ({note})" if note else ""
        rows.append(f"  {label:<40} {delta_text(entry):<44} {one_line(status + said, 300)}{stats}")
    flipped = comparison.get("flipped") or []
    worse = [f for f in flipped if f.get("direction") == "pass->fail"]
    if worse:
        shown = ", ".join(f"{one_line(str(f['item']), 80)} ({one_line(str(f['entry']))})"
                          for f in worse[:FAILING_IDS_SHOWN])
        more = f" … and {len(worse) - FAILING_IDS_SHOWN} more" if len(worse) > FAILING_IDS_SHOWN else ""
        rows.append(f"  pass -> fail: {shown}{more}")
    rows += [f"  warning: {one_line(str(w), 300)}" for w in comparison.get("warnings") or []]
    return title, rows


def flaky_rows(outcome: Any) -> list[str]:
    """0/1 entries whose trials disagreed on some items, with the first few ids."""
    rows = []
    pairs = [(g.id, g) for g in outcome.gate_results] + [(t.id, t) for t in outcome.threshold_results]
    for sid, r in [*pairs, *outcome.score_stats.items()]:
        if r.flaky:
            shown = ", ".join(one_line(str(i), 80) for i in r.flaky_items or [])
            more = f" … and {r.flaky - len(r.flaky_items or [])} more" if r.flaky > len(r.flaky_items or []) else ""
            rows.append(f"       {one_line(sid):<40} {r.flaky} items: {shown}{more}")
    return rows


def reliability_rows(outcome: Any) -> list[str]:
    """0/1 entries run with repeats: their pass^k and pass@k curves, a line each."""
    rows = []
    pairs = [(turn_label(g.id, None), g) for g in outcome.gate_results]
    pairs += [(turn_label(g.id, t.index), g) for t in outcome.turn_results or [] for g in t.gate_results]
    pairs += [(turn_label(r.id, None), r) for r in outcome.threshold_results]
    pairs += [(turn_label(r.id, t.index), r) for t in outcome.turn_results or [] for r in t.threshold_results]
    for label, result in [*pairs, *outcome.score_stats.items()]:
        line = curve_line(getattr(result, "pass_k_curve", None))
        if line:
            rows.append(f"       {one_line(label):<40} {line}")
    return rows


def network_line(stats: dict[str, Any]) -> str:
    """Requests, retries, cache hits and the adapted in-flight limit, on one line."""
    parts = [f"{stats.get('requests', 0)} requests", f"{stats.get('retries', 0)} retries"]
    if "cache_hits" in stats:
        parts.append(f"{stats['cache_hits']} from cache")
    if stats.get("rate_limited"):
        parts.append(
            f"{stats['rate_limited']} rate-limited (in-flight limit {stats.get('concurrency_limit')} "
            f"-> lowest {stats.get('lowest_limit')}, now {stats.get('current_limit')})"
        )
    return "network: " + ", ".join(parts)


def verdict_reasons(outcome: Any, verdict: str | None) -> list[str]:
    """Why the verdict is what it is, where a gate or threshold had no score: the entries that could not be
    scored (they failed it), or were left out as not scorable; with no verdict, that none was scored."""
    failed, left_out = unscored_entries(outcome)
    if verdict is None:
        return ["no gates or thresholds" if not left_out else
                one_line("no gate or threshold could be scored; " + shown_unscored(left_out), 400)]
    said = [shown_unscored(failed)] if failed else []
    if left_out:
        said.append("left out as not scorable, as Mastra's runEvals does: " + shown_unscored(left_out))
    return [one_line("; ".join(said), 400)] if said else []


def one_line(text: str, limit: int = 160) -> str:
    """Untrusted text on one bounded line, control and bidi characters shown as escapes, no workflow command."""
    flat = visible(" ".join(redact(text).split()))  # redacted before the cut, which could leave part of a secret
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    # A CI log reads `::cmd::` at a line's start (after spaces: rows start with an id) and `##[cmd]` anywhere; a
    # zero-width space unmakes both and shows the same.
    flat = flat.replace("##[", "##\u200b[")
    return ":\u200b" + flat[1:] if flat.startswith("::") else flat


def verdict_line(outcome: Any, *, color: bool) -> str:
    verdict = outcome.verdict
    text = f"verdict: {verdict.upper() if verdict else 'none'}"
    if outcome.error_budget_exceeded:
        text += f" ({outcome.errored_items} errored items > max_errors {outcome.max_errors})"
    else:
        text += "".join(f" ({why})" for why in verdict_reasons(outcome, verdict))
    if not color or verdict is None:
        return text
    return click.style(text, fg={"passed": "green", "scored": "yellow", "failed": "red"}[verdict], bold=True)
