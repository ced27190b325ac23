"""JUnit XML for test-report tools: one test case per gate/threshold and one per item.

A gate or threshold case fails when it failed; an item case fails when it scored below 1.0 on a
gate, and is an error when its run or a scorer errored. Text is stripped of characters XML 1.0
cannot carry; ElementTree escapes the rest.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from evalgate.infra.redaction import redact
from evalgate.infra.textsafe import visible
from evalgate.report.labels import bound_text, item_error, num, result_rows, turn_label
from evalgate.report.numbers import delta_text, with_margin
from evalgate.results.model import ItemRecord, Results

INVALID_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
TEXT_LIMIT = 4000


def clean(text: Any, limit: int = TEXT_LIMIT) -> str:
    # Escapes first (`\x1b`, as the terminal and the report show it); only what has none becomes U+FFFD.
    value = INVALID_XML.sub("\ufffd", visible(redact(str(text))))  # redacted before it is cut
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _suite(parent: ET.Element, name: str) -> ET.Element:
    return ET.SubElement(parent, "testsuite", name=clean(name, 200))


def _close(suite: ET.Element) -> tuple[int, int, int]:
    cases = suite.findall("testcase")
    failures = sum(1 for c in cases if c.find("failure") is not None)
    errors = sum(1 for c in cases if c.find("error") is not None)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    return len(cases), failures, errors


def _compared(results: Results) -> dict[tuple[Any, str], dict[str, Any]]:
    comparison = results.comparison or {}
    return {(e.get("turn"), str(e.get("id"))): dict(e) for e in comparison.get("entries") or []
            if isinstance(e, dict)}


def _regression(found: dict[str, Any] | None) -> str:
    """`regressed against the baseline: base 0.90 · Δ -0.27 [-0.33, -0.21] ▼ worse; max_drop 0`, or ""."""
    if not found or found.get("status") != "regressed":
        return ""
    drop = found.get("max_drop")
    return (f"regressed against the baseline: {delta_text(found)}"
            + (f"; max_drop {drop:g}" if isinstance(drop, int | float) else ""))


def _entry_cases(results: Results, suite: ET.Element) -> None:
    compared = _compared(results)
    for entry in result_rows(results):
        case = ET.SubElement(suite, "testcase", classname=f"evalgate.{entry.kind}s", name=clean(entry.label, 300))
        result = entry.result
        # The 95% interval (`± half-width`) as the terminal and the report show it: one pass or miss can be noise.
        average = with_margin(result.score if entry.kind == "gate" else result.average_score, result)
        if getattr(result, "unscored", None):  # nothing was measured: say why, not "averaged –"
            message = str(result.unscored)
        elif entry.kind == "gate":
            message = f"gate averaged {average}; a gate must average 1.0"
        else:
            message = f"average {average} outside the bound {bound_text(result.threshold)}"
        regressed = _regression(compared.get((entry.turn, entry.id)))
        if not result.passed:
            failure = ET.SubElement(case, "failure", message=clean(message, 500), type=entry.kind)
            failure.text = clean(regressed) if regressed else None
        elif regressed:  # within its bound, but worse than the base beyond max_drop: the verdict failed on it
            ET.SubElement(case, "failure", message=clean(regressed, 500), type="regression")
        out = ET.SubElement(case, "system-out")
        out.text = clean(f"averaged {average}; a gate must average 1.0" if entry.kind == "gate"
                         else f"average {average}, bound {bound_text(result.threshold)}")
    for record in results.summary.not_scored:  # every result not scorable: left out of the verdict, as Mastra
        turn = record.get("turn")
        label = turn_label(str(record.get("id")), turn if isinstance(turn, int) else None)
        kind = "gate" if record.get("kind") == "gate" else "threshold"
        case = ET.SubElement(suite, "testcase", classname=f"evalgate.{kind}s", name=clean(label, 300))
        ET.SubElement(case, "skipped", message=clean(f"{record.get('reason')}; left out of the verdict, as "
                                                     "Mastra's runEvals leaves it out", 500))


def _item_case(item: ItemRecord, suite: ET.Element, duration_ms: Any) -> None:
    case = ET.SubElement(suite, "testcase", classname="evalgate.items", name=clean(item.id, 300))
    seconds = _seconds(duration_ms, 1000)
    if seconds is not None:
        case.set("time", seconds)
    message = item_error(item)  # its run's, its scorers' or its trials' (which trials, why)
    if message:
        error = ET.SubElement(case, "error", message=clean(message, 500), type="errored")
        error.text = clean(message)
        return
    failed = {gid: score for gid, score in item.gates.items() if score is not None and score < 1.0}
    gate_reasons = _gate_reasons(item.reasons, item.reasons_by_kind)
    for turn in item.turns or []:
        own = _gate_reasons(turn.get("reasons") or {}, turn.get("reasons_by_kind") or {})
        gates, index = turn.get("gates"), turn.get("index")  # a fork's results file may hold anything there
        for gid, score in (gates if isinstance(gates, dict) else {}).items():
            if isinstance(score, int | float) and score < 1.0:
                label = f"turn {index + 1 if isinstance(index, int) else '?'}: {gid}"
                failed[label] = score
                if gid in own:
                    gate_reasons[label] = own[gid]
    if failed:
        message = "failed gates: " + ", ".join(f"{gid} ({num(score)})" for gid, score in failed.items())
        failure = ET.SubElement(case, "failure", message=clean(message, 500), type="gate")
        reasons = [f"{k}: {v}" for k, v in gate_reasons.items() if k in failed]
        failure.text = clean("\n".join(reasons)) if reasons else None
    if item.gates or item.scores:
        shared = item.gates.keys() & item.scores.keys()  # a gate and a scorer of one id: each its own line
        lines = [f"{k} (gate): {num(v)}" if k in shared else f"{k}: {num(v)}" for k, v in item.gates.items()]
        lines += [f"{k} (scorer): {num(v)}" if k in shared else f"{k}: {num(v)}" for k, v in item.scores.items()]
        out = ET.SubElement(case, "system-out")
        out.text = clean("\n".join(lines))


def _seconds(value: Any, per_second: int = 1) -> str | None:
    """A duration as JUnit's `time` (seconds, 3 decimals); None for one no clock gives (not a number, huge or
    negative), which is left out rather than written as `nan` or a crash."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = value / per_second
    except OverflowError:  # an integer past any float
        return None
    return f"{seconds:.3f}" if math.isfinite(seconds) and seconds >= 0 else None


def _gate_reasons(given: Mapping[str, Any], by_kind: Mapping[Any, Any] | None) -> dict[str, str]:
    """An item's (or a turn's) reasons, the gate's own for an id a scorer shares (`reasons` holds the
    scorer's there)."""
    reasons = {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else {}
    if isinstance(by_kind, dict) and by_kind:
        gates = by_kind.get("gates")
        gates = gates if isinstance(gates, dict) else {}
        for key in {str(key) for kind in by_kind.values() if isinstance(kind, dict) for key in kind}:
            if key in gates:
                reasons[key] = str(gates[key])
            else:  # only the scorer gave a reason
                reasons.pop(key, None)
    return reasons


def render_junit(results: Results) -> str:
    root = ET.Element("testsuites", name=clean(f"evalgate: {results.name}", 200))
    checks = _suite(root, f"{results.name}: gates and thresholds")
    _entry_cases(results, checks)
    items = _suite(root, f"{results.name}: items")
    for item in results.each_item():
        _item_case(item, items, (item.model_extra or {}).get("duration_ms"))
    totals = [_close(checks), _close(items)]
    root.set("tests", str(sum(t[0] for t in totals)))
    root.set("failures", str(sum(t[1] for t in totals)))
    root.set("errors", str(sum(t[2] for t in totals)))
    duration = _seconds(results.summary.duration_s)
    if duration is not None:
        root.set("time", duration)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
