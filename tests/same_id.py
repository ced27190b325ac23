"""A spec whose top-level gate and scorer share the id `same`, as Mastra's runEvals allows.

An item's `reasons` is keyed by id, so the two share a key there; each item below makes them give
(or not give) their reasons differently, so a reader can tell whose reason it shows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CHECKS_PY = '''
from evalgate import NotScorable

def gate(item, run):
    if "skip" in run.text:
        raise NotScorable("the gate found nothing to check")
    if "bad" in run.text:
        return 0.0, "the gate's reason"
    if "quiet" in run.text:
        return 0.0
    return 1.0

def scorer(item, run):
    if "skip" in run.text:
        raise NotScorable("the scorer found nothing to judge")
    if "bad" in run.text:
        return 0.25, "the scorer's reason"
    if "quiet" in run.text:
        raise RuntimeError("the scorer blew up")
    if "fine" in run.text:
        return 0.5, "only the scorer's reason"
    return 1.0
'''

# id -> the output it records: both give a reason; both not scorable; the gate fails with no reason while
# the scorer raises; only the scorer gives a reason; neither does.
OUTPUTS = {"bad": "bad answer", "skip": "skip me", "quiet": "quiet", "fine": "fine", "plain": "plain"}

# What each item's record holds by kind (None: no `reasons_by_kind`, as every record before it).
BY_KIND: dict[str, Any] = {
    "bad": {"gates": {"same": "the gate's reason"}, "scores": {"same": "the scorer's reason"}},
    "skip": {"gates": {"same": "the gate found nothing to check"},
             "scores": {"same": "the scorer found nothing to judge"}},
    "quiet": None,
    "fine": {"scores": {"same": "only the scorer's reason"}},
    "plain": None,
}


def same_id_spec(folder: Path, **extra: Any) -> Path:
    """The spec (and its checks' module) in `folder`; `extra`: more top-level spec keys."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "same_id_checks.py").write_text(CHECKS_PY)
    spec = {
        "version": 1,
        "data": [{"id": key, "input": f"q-{key}", "output": text} for key, text in OUTPUTS.items()],
        "max_errors": len(OUTPUTS),
        "gates": [{"type": "python", "function": "same_id_checks:gate", "id": "same"},
                  {"type": "python", "function": "same_id_checks:gate", "id": "alone"}],
        "scorers": [{"type": "python", "function": "same_id_checks:scorer", "id": "same", "threshold": 0.9}],
        **extra,
    }
    path = folder / "evalgate.yaml"
    path.write_text(json.dumps(spec))
    return path


def assert_each_keeps_its_reason(items: list[dict[str, Any]]) -> None:
    """Every item (and trial) holds its gate's and its scorer's reason apart, and `reasons` as it always held."""
    by_id = {item["id"]: item for item in items}
    assert set(by_id) == set(OUTPUTS)
    for key, expected in BY_KIND.items():
        assert by_id[key].get("reasons_by_kind") == expected, key
        for trial in by_id[key].get("trials") or ():  # with repeats: each trial's own, all alike here
            assert trial.get("reasons_by_kind") == expected, (key, trial["trial"])
    # `reasons` keeps what it always held: the reason given last (the scorer's), the gate's when only it gave one
    assert by_id["bad"]["reasons"] == {"same": "the scorer's reason", "alone": "the gate's reason"}
    assert by_id["skip"]["reasons"]["same"] == "the scorer found nothing to judge"
