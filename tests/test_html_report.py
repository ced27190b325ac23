"""The HTML report as a file: self-contained, its data inert, written by `report`, `run --html` and `view`;
runs kept by default; the base's records and history carried in compared results."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import stat
from pathlib import Path

import pytest
from conftest import run_cli
from report_runs import HOSTILE, SPEC, compared_runs, embedded_data, record, write_run


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compared_runs(tmp_path_factory.mktemp("page"))


def test_report_html_is_one_self_contained_page_whose_policy_allows_only_its_own_code(head: Path) -> None:
    done = run_cli("report", head, "--format", "html")
    assert done.code == 0, done.output
    page = done.stdout
    assert not re.search(r"""(src|href)\s*=|@import|url\(""", page.split('id="evalgate-data">')[0])
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert csp is not None
    policy = dict(p.strip().split(" ", 1) for p in html.unescape(csp.group(1)).split(";"))
    assert policy["default-src"] == "'none'" and policy["connect-src"] == "'none'"
    assert policy["base-uri"] == "'none'" and policy["form-action"] == "'none'"
    script = re.search(r"<script>(.*)</script>\s*</body>", page, re.S)
    style = re.search(r"<style>(.*)</style>", page, re.S)
    assert script is not None and style is not None

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert policy["script-src"] == digest(script.group(1))  # nothing else may run, not even inline
    assert policy["style-src"] == digest(style.group(1))


def test_the_embedded_data_cannot_end_its_script_block_and_reads_back_whole(head: Path) -> None:
    page = run_cli("report", head, "--format", "html").stdout
    block = page.split('id="evalgate-data">', 1)[1].split("</script>", 1)[0]
    assert not set(block) & set("<>&\u2028\u2029")
    data = embedded_data(page)
    texts = {row[2] for row in data["items"]}
    assert set(HOSTILE) <= texts  # escaped, not altered: the page shows them as text
    assert HOSTILE[0] in {row[0] for row in data["items"]}


def test_a_compared_run_carries_the_base_records_of_changed_items_so_the_page_needs_one_file(head: Path) -> None:
    results = json.loads(head.read_text())
    base_items = {b["id"]: b for b in results["comparison"]["base_items"]}
    # 0-4 stopped calling the tool, 5-7 started; 8 and 12 (Brooklyn) lost the word in their hostile outputs
    assert set(base_items) == {f"q{i:05d}" for i in (*range(8), 8, 12)}
    assert base_items["q00008"]["flips"] == {"includes:Brooklyn": "pass->fail"}
    assert base_items["q00000"]["flips"] == {"called_tool:get_weather": "pass->fail"}
    assert base_items["q00005"]["flips"] == {"called_tool:get_weather": "fail->pass"}
    assert base_items["q00000"]["output"]["tool_calls"]  # the base's output, not the head's
    data = embedded_data(run_cli("report", head, "--format", "html").stdout)
    flags = {row[0]: row[7] for row in data["items"]}
    assert [i for i, f in flags.items() if f & 8] == [f"q{i:05d}" for i in (*range(5), 8, 12)]  # regressed
    assert [i for i, f in flags.items() if f & 16] == [f"q{i:05d}" for i in range(5, 8)]  # improved
    assert data["base"]["q00000"][0] == "It is sunny in Brooklyn, 72F."


def test_history_travels_through_baselines_and_keeps_the_last_100(tmp_path: Path) -> None:
    runs = [record(i, calls_tool=True) for i in range(6)]
    first = write_run(tmp_path, runs, "base")
    second = write_run(tmp_path, runs, "head")
    history = json.loads(second.read_text())["comparison"]["history"]
    assert [h["created_at"] for h in history] == [json.loads(first.read_text())["created_at"]]
    assert history[0]["scores"]["called_tool:get_weather"] == 1.0
    long = json.loads(second.read_text())
    long["comparison"]["history"] = [{"created_at": f"run {k}", "scores": {}} for k in range(150)]
    (tmp_path / "base.json").write_text(json.dumps(long))
    third = json.loads(write_run(tmp_path, runs, "third").read_text())["comparison"]["history"]
    assert len(third) == 100 and third[0]["created_at"] == "run 51" and third[-1]["created_at"] == long["created_at"]


def test_run_html_writes_the_page_and_view_opens_it_in_the_browser(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(SPEC, encoding="utf-8")
    (tmp_path / "runs.jsonl").write_text(json.dumps(record(0, calls_tool=True)) + "\n", encoding="utf-8")
    done = run_cli("run", "--html", "out/report.html", cwd=tmp_path)
    assert done.code == 0, done.output
    assert "Content-Security-Policy" in (tmp_path / "out" / "report.html").read_text()
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    browser.chmod(browser.stat().st_mode | stat.S_IEXEC)
    env_before = os.environ.get("BROWSER")
    os.environ["BROWSER"] = str(browser)
    try:
        viewed = run_cli("view", cwd=tmp_path)  # no path: the last run
    finally:
        if env_before is None:
            del os.environ["BROWSER"]
        else:
            os.environ["BROWSER"] = env_before
    assert viewed.code == 0, viewed.output
    url = opened.read_text()
    assert url.startswith("file:///") and url.endswith("/report.html")
    page = Path(url.removeprefix("file://")).read_text()
    assert embedded_data(page)["items"][0][0] == "q00000"


def test_a_run_keeps_its_results_by_default_and_report_reads_the_last(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(SPEC, encoding="utf-8")
    (tmp_path / "runs.jsonl").write_text(json.dumps(record(0, calls_tool=False)) + "\n", encoding="utf-8")
    done = run_cli("run", cwd=tmp_path)
    assert done.code == 1, done.output
    kept = list((tmp_path / ".evalgate" / "runs").glob("*.json"))
    assert len(kept) == 1 and re.fullmatch(r"\d{8}T\d{6}Z-page-test\.json", kept[0].name)
    assert f"results: {kept[0].relative_to(tmp_path)}" in done.stdout  # shown relative to where it ran
    assert (tmp_path / ".evalgate" / "last.json").read_bytes() == kept[0].read_bytes()
    assert (tmp_path / ".evalgate" / ".gitignore").read_text().splitlines()[-1] == "*"
    markdown = run_cli("report", cwd=tmp_path)
    assert markdown.code == 0 and "page-test" in markdown.stdout and "failed" in markdown.stdout


def test_no_save_keeps_nothing_and_report_without_a_last_run_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "evalgate.yaml").write_text(SPEC, encoding="utf-8")
    (tmp_path / "runs.jsonl").write_text(json.dumps(record(0, calls_tool=True)) + "\n", encoding="utf-8")
    done = run_cli("run", "--no-save", cwd=tmp_path)
    assert done.code == 0, done.output
    assert not (tmp_path / ".evalgate").exists() and "results:" not in done.stdout
    for command in ("report", "view"):
        missing = run_cli(command, cwd=tmp_path)
        assert missing.code == 2 and "evalgate run" in missing.stderr and "Traceback" not in missing.output


def test_long_texts_are_cut_until_the_page_fits_its_cap(tmp_path: Path) -> None:
    from evalgate.report.html import render_html
    from evalgate.results.model import load_results

    runs = [record(i, calls_tool=True, text=f"{i} " + "long answer " * 5000) for i in range(100)]
    results = load_results(write_run(tmp_path, runs, "base"))  # 6 MB of outputs
    page = render_html(results, max_bytes=1_000_000)
    assert len(page.encode()) < 1_100_000
    data = embedded_data(page)
    assert data["field_limit"] < 20_000
    first = data["items"][0][2]
    assert first.startswith("0 long answer") and "more characters in the results file" in first
    assert len(data["items"]) == 100  # every item is still there


def test_the_markdown_regressions_show_the_base_output_beside_the_head_output(tmp_path: Path) -> None:
    write_run(tmp_path, [record(i, calls_tool=True) for i in range(12)], "base")
    head = write_run(tmp_path, [record(i, calls_tool=False) for i in range(12)], "head")
    markdown = run_cli("report", head).stdout
    section = markdown.split("### Regressions", 1)[1]
    first = section.split("**<code>q00001</code>**", 1)[1].split("**<code>", 1)[0]
    assert "base 1.000 → head 0.000" in first
    base_output, head_output = first.split("Base output:", 1)[1].split("Head output:", 1)
    assert "[tool calls: get_weather]" in base_output and "[tool calls" not in head_output
