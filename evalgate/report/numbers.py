"""How error bars and comparisons read, in the terminal table and the Markdown report alike."""

from __future__ import annotations

import math
from typing import Any

from evalgate.decide.verdict import higher_is_better


def margin(result: Any) -> float | None:
    """Half the width of the 95% interval: the `± 0.04` of `0.82 ± 0.04`."""
    ci = getattr(result, "ci95", None)
    if not ci or ci[0] is None or ci[1] is None:
        return None
    low, high = float(ci[0]), float(ci[1])
    return (high - low) / 2.0


def interval_suffix(value: float, result: Any, digits: int = 3) -> str:
    """` ± 0.041` when the 95% interval is symmetric about `value` (as shown), else ` [0.861, 1.000]`:
    `1.000 ± 0.139` for [0.861, 1] would read as if 1.139 were possible. "" without an interval."""
    ci = getattr(result, "ci95", None)
    if not ci or ci[0] is None or ci[1] is None or not all(math.isfinite(x) for x in ci):
        return ""
    low, high = ci
    if abs((low + high) / 2.0 - value) < 0.5 * 10.0 ** -digits:
        return f" ± {(high - low) / 2.0:.{digits}f}"
    return f" [{low:.{digits}f}, {high:.{digits}f}]"


def with_margin(value: float | None, result: Any, digits: int = 3) -> str:
    """`0.820 ± 0.041` (or `0.833 [0.641, 0.967]` for a lopsided interval); the bare number without one."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.{digits}f}" + interval_suffix(value, result, digits)


def direction(result: Any) -> str:
    """What the user's bound says: `{max: 0.2}` reads lower is better whatever the scorer's default."""
    default = getattr(result, "higher_is_better", True)
    better = higher_is_better(getattr(result, "threshold", None), True if default is None else default)
    return "higher is better" if better else "lower is better"


def repeats_note(summary: Any) -> str:
    """`5 trials per item` when the run had repeats."""
    repeats = getattr(summary, "repeats", None) if not isinstance(summary, dict) else summary.get("repeats")
    return f"{repeats} trials per item" if isinstance(repeats, int) and repeats > 1 else ""


def signed(value: float | None, digits: int = 2) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0.0 else text  # no sign on a zero


def arrow(entry: dict[str, Any]) -> str:
    """▲ better or ▼ worse when the interval of head - base excludes 0 (a change the data shows), by the
    entry's direction of better, not the number's: a lower-is-better score that rose is ▼ worse; ≈ otherwise."""
    ci = entry.get("ci95")
    if not ci or ci[0] is None or ci[1] is None:  # an interval written as nulls (NaN) shows no direction
        return ""
    better_high = entry.get("higher_is_better") is not False
    low, high = (ci[0], ci[1]) if better_high else (-ci[1], -ci[0])
    if low > 0:
        return "▲ better"
    if high < 0:
        return "▼ worse"
    return "≈"


def delta_text(entry: dict[str, Any], digits: int = 2) -> str:
    """`base 0.90 · Δ -0.08 [-0.13, -0.03] ▼`; with the averages on the matched items (those Δ compares)
    when they are recorded: `matched: base 0.90 → head 0.82 · Δ -0.08 [-0.13, -0.03] ▼`."""
    base, head = entry.get("base_matched"), entry.get("head_matched")
    if isinstance(base, int | float) and isinstance(head, int | float):
        text = f"matched: base {base:.{digits}f} → head {head:.{digits}f}"
    else:
        base = entry.get("base_average")
        text = f"base {base:.{digits}f}" if isinstance(base, int | float) else "base –"
    if entry.get("delta") is None:
        return text
    text += f" · Δ {signed(entry['delta'], digits)}"
    ci = entry.get("ci95")
    if ci:
        text += f" [{signed(ci[0], digits)}, {signed(ci[1], digits)}]"
    mark = arrow(entry)
    return f"{text} {mark}" if mark else text


def against_base(entry: dict[str, Any] | None, digits: int = 3) -> str:
    """`(base 0.900, −0.350 [−0.47, −0.22]) regressed`: an entry's first row carries its comparison; "" without."""
    if not entry or not isinstance(entry.get("base_average"), int | float):
        return ""
    text = f"base {entry['base_average']:.{digits}f}"
    if isinstance(entry.get("delta"), int | float):
        text += f", {signed(entry['delta'], digits).replace('-', '−')}"
        ci = entry.get("ci95")
        if ci and ci[0] is not None and ci[1] is not None:
            text += f" [{signed(ci[0]).replace('-', '−')}, {signed(ci[1]).replace('-', '−')}]"
    status = str(entry.get("status") or "")
    return f"({text}) {'not compared' if status == 'incomparable' else status}".rstrip()


STATUS_WORDS = {
    "regressed": "regressed: worse than the baseline beyond max_drop, significant",
    "improved": "improved: better than the baseline, significant",
    "unchanged": "unchanged: no drop beyond max_drop",
    "uncertain": "uncertain: a drop beyond max_drop can be neither ruled out nor shown",
    "incomparable": "not compared",
}


def status_words(entry: dict[str, Any], flips: dict[str, int] | None = None, confidence: float = 0.95) -> str:
    """The comparison said plainly: `dropped 1.00 → 0.75: 5 of 20 items went from pass to fail; too few
    items to call it at 95%`. flips: how many items went `pass->fail` and `fail->pass` on this entry."""
    status = str(entry.get("status") or "")
    if status == "incomparable":
        return f"not compared: {entry.get('reason') or 'no data'}"
    base, head = entry.get("base_average"), entry.get("head_average")
    if not isinstance(base, int | float) or not isinstance(head, int | float):
        return STATUS_WORDS.get(status, status)
    better_high = entry.get("higher_is_better") is not False
    worse = head < base if better_high else head > base
    moved = "unchanged at" if head == base else ("dropped" if worse else "improved") if better_high \
        else ("rose" if worse else "fell")
    text = f"{moved} {base:.2f}" if head == base else f"{moved} {base:.2f} → {head:.2f}"
    flips = flips or {}
    pairs = entry.get("pairs")
    went = flips.get("pass->fail" if worse else "fail->pass", 0)
    if went and isinstance(pairs, int):
        text += f": {went} of {pairs} items went from {'pass to fail' if worse else 'fail to pass'}"
    level = f"{confidence:.0%}"
    verdicts = {
        "regressed": f"worse beyond max_drop, more than noise explains at {level}",
        "improved": f"better, more than noise explains at {level}",
        "uncertain": f"too few items to call it at {level}",
        "unchanged": "no drop beyond max_drop",
    }
    return f"{pass_k_words(entry)}{text}; {verdicts.get(status, status)}"


def pass_k_words(entry: dict[str, Any]) -> str:
    """`pass^5 (all 5 trials of an item pass), reported only: ` before an entry's pass^k comparison."""
    k = entry.get("k")
    if entry.get("measure") != "pass^k" or not isinstance(k, int):
        return ""
    gating = "" if entry.get("kind") != "tracked" else ", reported only (compare.entries can name it to gate)"
    return f"pass^{k} (all {k} trials of an item pass){gating}: "


def decision_note(entry: dict[str, Any]) -> str:
    """`p = 0.0625 (level 0.025); this run can detect a drop of 0.12 or more`: the p the status came from
    (one-sided, against -max_drop, corrected across entries) and the level it met or missed, then the drop
    the run could have found. An older results file has only the two-sided p of no change."""
    status = entry.get("status", "")
    if status == "incomparable":
        return ""
    p, alpha = entry.get("p_decision"), entry.get("alpha")
    if "p_within" not in entry:
        p, alpha = entry.get("p_value"), None
    parts = []
    if isinstance(p, int | float) and math.isfinite(p):
        text = f"p = {p:.3g}" if p >= 0.001 else "p < 0.001"
        parts.append(f"{text} (level {alpha:.3g})" if isinstance(alpha, int | float) else text)
    mde = entry.get("mde")
    if isinstance(mde, int | float) and math.isfinite(mde) and status in ("uncertain", "unchanged", "improved"):
        parts.append(f"this run can detect a drop of {mde:.2f} or more")
    return "; ".join(parts)
