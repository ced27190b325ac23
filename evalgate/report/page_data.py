"""What the HTML report shows, as plain JSON-able data (docs/html-report.md): the verdict and why, the
entries with their intervals and comparison, the items as compact rows, the base's changed items, the trend.

Pure: a `Results` in, a dict out. Every text is bounded (a 100,000-item run stays under 50 MB) and made
visible (bidi and invisible characters shown), the page renders it with textContent only.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

from evalgate.decide.stats import PASS_K_ID
from evalgate.decide.verdict import higher_is_better
from evalgate.infra.redaction import redact
from evalgate.infra.textsafe import visible
from evalgate.report.labels import (
    bound_text,
    could_not_evaluate,
    num,
    result_rows,
    shown_unscored,
    turn_label,
    unscored_entries,
)
from evalgate.results.model import ByKind, ItemRecord, Results

TEXT_BUDGET = 24_000_000  # characters of item text the page carries, shared among the items
MAX_FIELD = 20_000  # one text field at most, however few items
MIN_FIELD = 240  # one text field at least, however many items (the page's byte cap may cut further)
FAILING = 1
ERRORED = 2
FLAKY = 4
REGRESSED = 8
IMPROVED = 16


def field_limit(items: int) -> int:
    """How many characters one text field keeps: the budget shared among the items' three main texts."""
    return max(MIN_FIELD, min(MAX_FIELD, TEXT_BUDGET // max(1, items * 3)))


def text(value: Any, limit: int) -> str:
    """Untrusted text, redacted, made visible and cut to `limit` characters (saying how much was cut)."""
    if value is None:
        return ""
    raw = value if isinstance(value, str) else dumps(value)
    if len(raw) > limit:
        raw = raw[:limit] + f" … ({len(raw) - limit} more characters in the results file)"
    return visible(redact(raw))


def dumps(value: Any) -> str:
    """JSON text of a value (orjson: the page dumps every item's tool calls); what it refuses, by json."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    except TypeError:  # a lone surrogate, an integer past 64 bits, a NaN's kin
        return json.dumps(value, ensure_ascii=False, default=str)


def finite(value: Any) -> float | None:
    if type(value) is float:  # the common case first: 100,000 items of several scores
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def output_text(output: Any) -> str | None:
    """The output's text (a run's `text`, else its `texts`, else the whole value)."""
    if output is None:
        return None
    if isinstance(output, dict):
        if isinstance(output.get("text"), str):
            return str(output["text"])
        texts = output.get("texts")
        if isinstance(texts, list) and all(isinstance(t, str) for t in texts):
            return "\n".join(texts)
        return dumps({k: v for k, v in output.items() if k not in ("tool_calls", "latency_ms", "usage")})
    return output if isinstance(output, str) else dumps(output)


def tool_calls(output: Any) -> Any:
    calls = mapping(output).get("tool_calls")
    return calls if isinstance(calls, list) and calls else None


# ---- entries ----


def entries(results: Results) -> list[dict[str, Any]]:
    """Gates, thresholds (top level, then per turn) and tracked scores, each with its interval and bounds."""
    out = []
    for row in result_rows(results):
        result = row.result
        ci = getattr(result, "ci95", None) or (None, None)
        entry = {"id": row.id, "label": text(turn_label(row.id, row.turn), 300), "kind": row.kind, "turn": row.turn,
                 "avg": finite(result.score if row.kind == "gate" else result.average_score),
                 "lo": finite(ci[0]), "hi": finite(ci[1]), "passed": bool(result.passed),
                 "uncertain": bool(getattr(result, "uncertain", False)), "flaky": getattr(result, "flaky", None)}
        if getattr(result, "unscored", None):  # no result could be scored: why
            entry["unscored"] = text(result.unscored, 300)
        if row.kind == "gate":
            entry.update({"bound": "= 1.0", "min": 1.0, "max": None, "hib": True})
        else:
            bounds = result.threshold.range
            entry.update({"bound": bound_text(result.threshold), "min": finite(bounds.min), "max": finite(bounds.max),
                          "hib": higher_is_better(result.threshold, result.higher_is_better is not False)})
        if result.pass_k_curve:
            entry["passk"] = curve_rows(result)
        out.append(entry)
    for entry_id, stats in results.score_stats.items():
        ci = stats.ci95 or (None, None)
        out.append({"id": entry_id, "label": text(entry_id, 300), "kind": "tracked", "turn": None,
                    "avg": finite(results.scores.get(entry_id)), "lo": finite(ci[0]), "hi": finite(ci[1]),
                    "passed": None, "uncertain": False, "flaky": stats.flaky, "bound": "", "min": None,
                    "max": None, "hib": True})
        if stats.pass_k_curve:
            out[-1]["passk"] = curve_rows(stats)
    compared: dict[tuple[Any, Any], Any] = {(e.get("turn"), e.get("id")): e
                                             for e in (results.comparison or {}).get("entries") or []}
    for entry in out:
        found = compared.get((entry["turn"], entry["id"]))
        if found is not None:
            entry["cmp"] = comparison_of(found)
            entry["hib"] = bool(found.get("higher_is_better", entry["hib"]))
        reliability = compared.get((entry["turn"], f"{entry['id']}{PASS_K_ID}"))
        k = reliability.get("k") if reliability is not None else None
        if reliability is not None and reliability.get("measure") == "pass^k" and type(k) is int:
            entry["passk_cmp"] = {**comparison_of(reliability), "k": k,
                                  "head": finite(reliability.get("head_average")),
                                  "gates": reliability.get("kind") != "tracked"}
    return out


def curve_rows(bar: Any) -> list[list[float | None]] | None:
    """A result's pass^k curve as rows [k, pass^k, lo, hi, pass@k, lo, hi] (0/1 entries with repeats)."""
    curve = getattr(bar, "pass_k_curve", None)
    if not curve:
        return None
    return [[p.k, finite(p.pass_all_k), finite(p.pass_all_k_ci95[0]), finite(p.pass_all_k_ci95[1]),
             finite(p.pass_at_k), finite(p.pass_at_k_ci95[0]), finite(p.pass_at_k_ci95[1])] for p in curve]


def comparison_of(found: Any) -> dict[str, Any]:
    ci = found.get("ci95") or (None, None)
    shown = {"base": finite(found.get("base_average")), "delta": finite(found.get("delta")), "lo": finite(ci[0]),
             "hi": finite(ci[1]), "status": str(found.get("status") or ""), "max_drop": finite(found.get("max_drop")),
             "p": finite(found.get("p_value")), "p_regression": finite(found.get("p_regression")),
             "method": found.get("method"), "pairs": found.get("pairs"), "reason": text(found.get("reason"), 300)}
    # whatever else the comparison carries (a decision p, matched averages, a detectable effect): shown as is
    extra = {k: v for k, v in found.items() if k not in COMPARED_FIELDS and (finite(v) is not None or
                                                                             isinstance(v, str))}
    shown["extra"] = {text(k, 60): (finite(v) if finite(v) is not None else text(v, 200)) for k, v in extra.items()}
    return shown


COMPARED_FIELDS = frozenset({"id", "turn", "kind", "status", "base_average", "head_average", "delta", "ci95",
                             "p_value", "p_regression", "method", "pairs", "max_drop", "higher_is_better", "reason"})


def why(results: Results, shown: list[dict[str, Any]]) -> list[str]:
    """The verdict's reasons, one line each: the outage, each failing entry, each regression."""
    summary = results.summary
    lines = []
    if summary.failure_reason == "errors":
        top = summary.top_error if isinstance(summary.top_error, dict) else {}
        lines.append(could_not_evaluate(summary, text(top.get("message"), 300)))
    for entry in shown:
        if entry["kind"] == "tracked" or entry["passed"]:
            continue
        lines.append(f"{entry['kind']} {entry['label']}: {entry['unscored']}" if entry.get("unscored") else
                     f"{entry['kind']} {entry['label']}: {num(entry['avg'])} is not {entry['bound']}")
    for entry in shown:
        compared = entry.get("cmp") or {}
        if compared.get("status") == "regressed" and entry["kind"] != "tracked":
            lines.append(f"{entry['label']} regressed: base {num(compared['base'])} → {num(entry['avg'])}, "
                         f"beyond max_drop {compared['max_drop'] or 0:g}")
        reliability = entry.get("passk_cmp") or {}
        if reliability.get("status") == "regressed" and reliability.get("gates"):
            lines.append(f"{entry['label']}: pass^{reliability['k']} regressed: base {num(reliability['base'])} → "
                         f"{num(reliability['head'])}, beyond max_drop {reliability['max_drop'] or 0:g}")
    left_out = unscored_entries(results)[1]
    if not lines and not (left_out and results.verdict is None):
        lines.append("every gate passed and every threshold was met" if results.verdict == "passed"
                     else "no gate or threshold produced a score" if results.verdict is None
                     else f"verdict {results.verdict}")
    if left_out:  # every result not scorable: left out of the verdict, as Mastra's runEvals
        lines.append(("no gate or threshold could be scored: " if results.verdict is None else
                      "left out of the verdict as not scorable (as Mastra's runEvals does): ")
                     + text(shown_unscored(left_out), 600))
    return lines


# ---- items ----


def columns(shown: list[dict[str, Any]]) -> list[int]:
    """The entries scored per item at the top level: the item table's score columns."""
    return [i for i, e in enumerate(shown) if e["turn"] is None]


def reason_for(item: ItemRecord, entry: dict[str, Any]) -> str | None:
    kind: ByKind = "gates" if entry["kind"] == "gate" else "scores"
    by_kind = item.reasons_by_kind or {}
    if entry["id"] in mapping(by_kind.get(kind)):
        return str(by_kind[kind][entry["id"]])
    if kind == "scores" and entry["id"] in item.scorer_errors:
        return "error: " + str(item.scorer_errors[entry["id"]])
    if entry["id"] in item.not_scorable:
        return "not scorable: " + str(item.not_scorable[entry["id"]])
    reason = item.reasons.get(entry["id"])
    return None if reason is None else str(reason)


def fails(score: float | None, entry: dict[str, Any]) -> bool:
    if score is None or entry["kind"] == "tracked":
        return False
    if entry["kind"] == "gate":
        return score < 1.0
    return (entry["min"] is not None and score < entry["min"]) or (entry["max"] is not None and score > entry["max"])


def scores_of(record: Any, shown: list[dict[str, Any]], cols: list[int]) -> list[float | None]:
    gates, scores = mapping(record.get("gates")), mapping(record.get("scores"))
    return [finite((gates if shown[c]["kind"] == "gate" else scores).get(shown[c]["id"])) for c in cols]


def trial_rows(item: ItemRecord, shown: list[dict[str, Any]], cols: list[int], limit: int) -> list[Any] | None:
    if not item.trials:
        return None
    rows = []
    for trial in item.trials:
        trial = mapping(trial)
        run = trial.get("run")
        rows.append([trial.get("trial"), text(output_text(run), limit), text(trial.get("error"), limit),
                     rounded(scores_of(trial, shown, cols)), finite(trial.get("duration_ms"))])
    return rows


def flags(item: ItemRecord, scores: list[float | None], trials: list[Any] | None,
          shown: list[dict[str, Any]], cols: list[int]) -> int:
    found = 0
    if any(fails(s, shown[c]) for s, c in zip(scores, cols, strict=True)):
        found |= FAILING
    if item.error or item.scorer_errors or any(t[2] for t in trials or []):
        found |= ERRORED
    if trials and len(trials) > 1 and any(len({t[3][k] for t in trials}) > 1 for k in range(len(cols))):
        found |= FLAKY
    return found


MASKED = 30  # columns whose failing is a bit of the row's mask (the page's bitwise operations are 32-bit)


def fail_mask(scores: list[float | None], shown: list[dict[str, Any]], cols: list[int]) -> int:
    """Bit k set when the item fails column k, decided here on the exact score (the page shows it rounded)."""
    return sum(1 << k for k, (s, c) in enumerate(zip(scores[:MASKED], cols, strict=False)) if fails(s, shown[c]))


def item_row(item: ItemRecord, shown: list[dict[str, Any]], cols: list[int], limit: int) -> list[Any]:
    """[id, input, output, tool calls, error, scores (6 decimals), reasons, flags, trials, duration_ms, cost,
    turns, fail mask]."""
    scores = scores_of({"gates": item.gates, "scores": item.scores}, shown, cols)
    reasons = {str(k): text(r, limit) for k, c in enumerate(cols) if (r := reason_for(item, shown[c])) is not None}
    trials = trial_rows(item, shown, cols, max(MIN_FIELD, limit // 4))
    extra = item.model_extra or {}
    turns = [[text(mapping(t).get("input"), limit), text(output_text(mapping(t).get("output")), limit)]
             for t in item.turns] if item.turns else None
    calls = tool_calls(item.output)
    return [text(item.id, 500), text(item.input, limit), text(output_text(item.output), limit),
            text(calls, limit) if calls else "", text(item.error, limit), rounded(scores), reasons,
            flags(item, scores, trials, shown, cols), trials, finite(extra.get("duration_ms")),
            finite(extra.get("cost_usd")), turns, fail_mask(scores, shown, cols)]


def rounded(scores: list[float | None]) -> list[float | None]:
    """Six decimals: what the page shows is three; the full number is in the results file."""
    return [None if s is None else round(s, 6) for s in scores]


def base_items(results: Results, shown: list[dict[str, Any]], cols: list[int], limit: int) -> dict[str, Any]:
    """The base's record of each item whose status changed (carried in `comparison.base_items`)."""
    out = {}
    position = {shown[c]["id"]: k for k, c in enumerate(cols)}
    for found in (results.comparison or {}).get("base_items") or []:
        record = mapping(found)
        item_id = str(record.get("id"))
        flips = {str(position[e]): d for e, d in mapping(record.get("flips")).items() if e in position}
        out[text(item_id, 500)] = [text(output_text(record.get("output")), limit), text(record.get("error"), limit),
                                   scores_of(record, shown, cols),
                                   {str(position[k]): text(v, limit) for k, v in mapping(record.get("reasons")).items()
                                    if k in position}, flips]
    return out


def mark_changes(rows: list[list[Any]], base: dict[str, Any]) -> None:
    """An item whose base passed an entry it now fails is regressed; the other way, improved."""
    for row in rows:
        found = base.get(row[0])
        if found is None:
            continue
        directions = set(found[4].values())
        row[7] |= (REGRESSED if "pass->fail" in directions else 0) | (IMPROVED if "fail->pass" in directions else 0)


# ---- the run ----


def facts(results: Results) -> dict[str, Any]:
    """Counts, timings, cost and the judge: numbers, and texts bounded."""
    summary = results.summary
    extra = summary.model_extra or {}
    judge = mapping(extra.get("judge"))
    usage = mapping(judge.get("usage"))
    cost = mapping(extra.get("cost"))
    return {
        "items": summary.total_items, "errored_items": summary.errored_items, "repeats": extra.get("repeats"),
        "trials": extra.get("trials"), "errored_trials": extra.get("errored_trials"),
        "duration_s": finite(summary.duration_s), "interrupted": bool(extra.get("interrupted")),
        "created_at": text((results.model_extra or {}).get("created_at"), 40),
        "version": text((results.model_extra or {}).get("evalgate_version"), 40),
        "git_sha": text((results.model_extra or {}).get("git_sha"), 60),
        "cost_usd": finite(cost.get("usd")), "target_usd": finite(cost.get("target_usd")),
        "cost_by_check": {text(k, 100): finite(v) for k, v in mapping(cost.get("by_check")).items()},
        "judge": None if not judge else {
            "model": text(judge.get("model"), 100), "calls": finite(judge.get("calls")),
            "cached_calls": finite(judge.get("cached_calls")), "failures": finite(judge.get("failures")),
            "tokens": finite(usage.get("total_tokens")), "cost_usd": finite(judge.get("cost_usd")),
            "prompts": {text(k, 100): text(v, 80) for k, v in mapping(judge.get("prompts")).items()}},
        "top_error": text(mapping(summary.top_error).get("message"), 300),
    }


def history(results: Results, shown: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The base branch's recent runs (`comparison.history`, oldest first), then this run."""
    ids = {e["id"] for e in shown if e["turn"] is None}
    runs = []
    for found in (results.comparison or {}).get("history") or []:
        run = mapping(found)
        runs.append({"at": text(run.get("created_at"), 40), "sha": text(run.get("git_sha"), 12),
                     "verdict": text(run.get("verdict"), 20),
                     "scores": {k: finite(v) for k, v in mapping(run.get("scores")).items() if k in ids}})
    if runs:
        runs.append({"at": text((results.model_extra or {}).get("created_at"), 40), "sha": "this run",
                     "verdict": text(results.verdict, 20),
                     "scores": {e["id"]: e["avg"] for e in shown if e["turn"] is None}})
    return runs


def page_data(results: Results, limit: int | None = None) -> dict[str, Any]:
    """Everything the page shows; each text field cut to `limit` characters (default: `field_limit`)."""
    shown = entries(results)
    cols = columns(shown)
    limit = field_limit(results.item_count()) if limit is None else limit
    # a results file's items read one at a time: only their rows, cut to the page's budget, are held
    rows = [item_row(item, shown, cols, limit) for item in results.each_item()]
    base = base_items(results, shown, cols, limit)
    mark_changes(rows, base)
    comparison = results.comparison or {}
    baseline = mapping(comparison.get("baseline"))
    return {
        "name": text(results.name, 200), "verdict": results.verdict,
        "failure_reason": text(results.summary.failure_reason, 40), "why": why(results, shown),
        "facts": facts(results), "entries": shown, "cols": cols, "items": rows, "base": base,
        "baseline": None if not comparison else {
            "name": text(baseline.get("name"), 200), "created_at": text(baseline.get("created_at"), 40),
            "git_sha": text(baseline.get("git_sha"), 60), "verdict": text(baseline.get("verdict"), 20),
            "matched": comparison.get("matched_items"), "new": comparison.get("new_items"),
            "missing": comparison.get("missing_items"),
            "correction": text(mapping(comparison.get("settings")).get("correction"), 20),
            "confidence": finite(mapping(comparison.get("settings")).get("confidence")),
            "warnings": [text(w, 300) for w in comparison.get("warnings") or []]},
        "history": history(results, shown), "field_limit": limit,
    }
