"""The trend: the base branch's runs carried through baselines, drawn in Markdown as Mermaid charts that
mermaid's own parser (the npm package's browser build, in Debian's Chromium) accepts, and in the HTML page."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, run_cli
from report_runs import CHROMIUM, browser, record, write_run

MERMAID = REPO / "tests" / "mermaid" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
__all__ = ["browser"]  # the fixture, used by name
pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None or not MERMAID.is_file(),
                                reason="Debian's chromium and tests/mermaid's npm packages (.ci/run installs both)")


@pytest.fixture(scope="module")
def mermaid(browser: Any) -> Iterator[Any]:
    """A blank page with mermaid loaded: `parse(text)` is True, or mermaid's error message."""
    page = browser.new_page()
    page.route("**/*", lambda route: route.abort() if not route.request.url.startswith(("file:", "about:"))
               else route.continue_())
    page.set_content("<!DOCTYPE html><html><body></body></html>")
    page.add_script_tag(path=str(MERMAID))

    def parse(text: str) -> Any:
        return page.evaluate("""async (text) => {
            try { await mermaid.parse(text); return true; } catch (e) { return String(e.message || e); } }""", text)

    yield parse
    page.close()


@pytest.fixture(scope="module")
def chained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four runs, each compared with the one before (as `baseline: auto` chains them); the last regressed."""
    folder = tmp_path_factory.mktemp("trend")
    write_run(folder, [record(i, calls_tool=True) for i in range(12)], "base")
    for n in range(1, 4):
        head = write_run(folder, [record(i, calls_tool=i >= n) for i in range(12)], "head")
        shutil.copy(head, folder / "base.json")
    return head


def test_history_travels_and_the_markdown_charts_parse_with_mermaids_own_parser(chained: Path, mermaid: Any) -> None:
    history = json.loads(chained.read_text())["comparison"]["history"]
    assert [h["scores"]["called_tool:get_weather"] for h in history] == [1.0, 11 / 12, 10 / 12]
    markdown = run_cli("report", chained).stdout
    charts = re.findall(r"```mermaid\n(.*?)```", markdown, re.S)
    assert len(charts) == 2  # the gate and the threshold
    gate = next(c for c in charts if "gate called_tool" in c)
    assert "line [1.000, 0.917, 0.833, 0.750]" in gate and '"this run"]' in gate
    for text in charts:
        assert mermaid(text) is True, text
    assert mermaid(charts[0].replace("line [", "line [oops, ")) is not True  # the parser does check


def test_hostile_entry_ids_and_shas_stay_inside_their_labels(chained: Path, mermaid: Any) -> None:
    results = json.loads(chained.read_text())
    hostile = 'x"]\n```\n<img src=x onerror=alert(1)> @team'
    results["comparison"]["history"][0]["git_sha"] = hostile
    results["threshold_results"][0]["id"] = hostile
    results["scores"] = {hostile: results["scores"]["includes:Brooklyn"]}
    for run in results["comparison"]["history"]:
        run["scores"][hostile] = 0.5
    edited = chained.with_name("edited.json")
    edited.write_text(json.dumps(results))
    markdown = run_cli("report", edited).stdout
    charts = re.findall(r"```mermaid\n(.*?)```", markdown, re.S)
    assert len(charts) == 2 and all(mermaid(text) is True for text in charts)
    assert "<img" not in "".join(charts) and "@team" not in "".join(charts)


def test_the_html_page_draws_the_trend(chained: Path, tmp_path: Path, browser: Any) -> None:
    page_file = tmp_path / "trend.html"
    page_file.write_text(run_cli("report", chained, "--format", "html").stdout, encoding="utf-8")
    page = browser.new_page()
    page.goto(page_file.as_uri())
    page.wait_for_selector("body[data-ready='1']")
    heading = page.locator("#trend h2").inner_text()
    points = page.locator("#trend svg").first.locator("circle").count()
    page.close()
    assert "last 3 runs" in heading and points == 4  # three base runs and this one
