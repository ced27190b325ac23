"""Real runs for the HTML report's tests: recorded outputs (some hostile) scored by the real CLI."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

CHROMIUM = "/usr/bin/chromium"  # Debian's: Playwright's driver only, never a browser download
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, driven by Playwright (one per test module: the sync API allows one)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()

SPEC = """\
version: 1
name: page-test
data: runs.jsonl
target: {type: recorded}
gates:
  - type: called_tool
    tool: get_weather
scorers:
  - type: includes
    value: Brooklyn
    threshold: 0.5
  - type: similarity
    id: closeness
    value: It is sunny in Brooklyn, 72F.
"""

# Each is an output text, an id or an input: none may run, load, navigate or become markup.
HOSTILE = [
    '<img src=x onerror="window.__pwned=1">',
    '</script><script>window.__pwned=2</script>',
    '<a href="javascript:window.__pwned=3">click me</a>',
    '<svg xmlns="http://www.w3.org/2000/svg" onload="window.__pwned=4"><script>window.__pwned=5</script></svg>',
    '<!-- <script>window.__pwned=6</script> -->\u2028\u2029 & &amp; &lt;b&gt;',
    '<iframe src="https://example.com/"></iframe><link rel=stylesheet href="https://example.com/x.css">',
]
CITIES = ["Brooklyn", "Paris", "Tokyo", "London"]


def record(i: int, *, calls_tool: bool, text: str | None = None, item_id: str | None = None) -> dict[str, Any]:
    city = CITIES[i % len(CITIES)]
    calls = [{"name": "get_weather", "args": {"city": city}, "result": "sunny"}] if calls_tool else []
    return {"id": item_id or f"q{i:05d}", "input": f"What is the weather in {city}?",
            "output": {"text": text if text is not None else f"It is sunny in {city}, 72F.", "tool_calls": calls}}


def write_run(folder: Path, records: list[dict[str, Any]], name: str) -> Path:
    """Score `records` with the spec: `<name>.json` in `folder` (compared with base.json when it exists)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evalgate.yaml").write_text(SPEC, encoding="utf-8")
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    args = ["run", "--no-save", "-o", f"{name}.json"]
    if name != "base" and (folder / "base.json").exists():
        args += ["--baseline", "base.json"]
    done = run_cli(*args, cwd=folder, timeout=300)
    assert done.code in (0, 1), done.output
    return folder / f"{name}.json"


def compared_runs(folder: Path, items: int = 40) -> Path:
    """head.json compared with base.json: items 0-4 stop calling the tool (regressed), items 5-7 start
    (improved), items 8-13 carry hostile outputs, item 14 a hostile id."""
    base = [record(i, calls_tool=not 5 <= i < 8) for i in range(items)]
    write_run(folder, base, "base")
    head = [record(i, calls_tool=not i < 5) for i in range(items)]
    for k, text in enumerate(HOSTILE):
        head[8 + k] = record(8 + k, calls_tool=True, text=text)
    head[14] = record(14, calls_tool=True, item_id=HOSTILE[0])
    return write_run(folder, head, "head")


def embedded_data(page: str) -> Any:
    """The page's data block read back as JSON."""
    found = re.search(r'<script type="application/json" id="evalgate-data">(.*?)</script>', page, re.S)
    assert found is not None
    return json.loads(found.group(1))
