"""The trend in Markdown: each gate and threshold over the base branch's recent runs, then this run, as
Mermaid `xychart-beta` charts (GitHub draws them). The runs come from `comparison.history`.

Every label is reduced to characters that cannot end a quoted Mermaid string, a code fence or a line.
"""

from __future__ import annotations

import math
import re
from typing import Any

from evalgate.report.labels import result_rows
from evalgate.results.model import Results

CHARTS = 6  # entries charted at most: the comment has room for a few small charts
UNSAFE = re.compile(r"[^A-Za-z0-9 _:.,=+/()%-]")


def label(text: Any, limit: int = 60) -> str:
    """Text safe inside a quoted Mermaid label: letters, digits and a little punctuation; the rest `_`."""
    return UNSAFE.sub("_", str(text))[:limit]


def number(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return f"{min(1.0, max(0.0, float(value))):.3f}"


def run_label(run: dict[str, Any], position: int) -> str:
    """`3: 1a2b3c4` (the run's commit), else `3: 12-06 04:29` (when it ran): numbered, so each is distinct."""
    sha, created = run.get("git_sha"), run.get("created_at")
    if isinstance(sha, str) and sha:
        return f"{position + 1}: {label(sha[:7], 7)}"
    if isinstance(created, str) and len(created) >= 16:
        return f"{position + 1}: {label(created[5:16].replace('T', ' '), 11)}"
    return str(position + 1)


def chart(title: str, points: list[tuple[str, str]], bound: float | None) -> str:
    lines = ["```mermaid", "xychart-beta", f'    title "{title}"',
             "    x-axis [" + ", ".join(f'"{x}"' for x, _ in points) + "]",
             '    y-axis "average" 0 --> 1', "    line [" + ", ".join(y for _, y in points) + "]"]
    if bound is not None:  # the bound as a flat line
        lines.append("    line [" + ", ".join(f"{bound:.3f}" for _ in points) + "]")
    return "\n".join([*lines, "```"])


def trend_section(results: Results) -> str:
    """`### Trend` with a chart per gate and threshold (at most CHARTS), or "" without history."""
    history = (results.comparison or {}).get("history") or []
    runs = [dict(run) for run in history if isinstance(run, dict)]
    if not runs:
        return ""
    charts = []
    for row in [r for r in result_rows(results) if r.turn is None][:CHARTS]:
        head = row.result.score if row.kind == "gate" else row.result.average_score
        points = []
        for position, run in enumerate(runs):
            scores = run.get("scores")
            value = number(scores.get(row.id)) if isinstance(scores, dict) else None
            if value is not None:
                points.append((run_label(run, position), value))
        now = number(head)
        if now is None or not points:
            continue
        points.append(("this run", now))
        bounds = row.result.threshold.range if row.kind == "threshold" else None
        bound = 1.0 if bounds is None else bounds.min if bounds.min is not None else bounds.max
        charts.append(chart(label(f"{row.kind} {row.id}"), points, bound if isinstance(bound, int | float) else None))
    if not charts:
        return ""
    intro = (f"Each gate and threshold over the base branch's last {len(runs)} runs, then this run "
             "(the flat line is its bound).")
    return "\n\n".join(["<details><summary>Trend</summary>", intro, *charts, "</details>"])
