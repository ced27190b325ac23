"""Secrets in what evalgate did not write: a reply's keys, encoded echoes, redirect Locations, ordinary words,
and credentials in the runner's environment that no spec names. The real CLI, a real agent on 127.0.0.1.

What a user relies on: no form of a known secret in any byte evalgate writes (results, journal, JUnit,
the Markdown report, the response cache), and a results file that stays results whatever the secret is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from fake_agent import FakeServer

from evalgate.infra import redaction

SECRET = "ak+LEAK/key=9f3c2b1a"  # `+`, `/` and `=`: its URL-encoded forms differ from it
PROVIDER_KEY = "sk-proj-UNNAMED0provider4key7"


def encoded_forms(secret: str) -> list[str]:
    forms = {secret, quote(secret, safe=""), quote(secret), quote_plus(secret, safe=""), quote_plus(secret),
             json.dumps(secret)[1:-1].replace("/", "\\/")}
    return sorted(forms | {f.replace("%2B", "%2b").replace("%2F", "%2f").replace("%3D", "%3d") for f in forms})


def leaks(folder: Path, secret: str, inputs: set[Path]) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and path not in inputs:
            data = path.read_bytes()
            found += [f"{path.relative_to(folder)}: {form}" for form in encoded_forms(secret) if form.encode() in data]
    return found


def cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalgate.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env})


def http_spec(url: str) -> str:
    return (f"version: 1\ndata: data.jsonl\nmax_errors: 5\ntarget:\n  type: http\n  url: {url}/agent\n"
            "  headers:\n    Authorization: 'Bearer ${AGENT_KEY}'\n  retries: {attempts: 1}\n"
            "  cache: {dir: cache}\n  response: {text: output.text, tool_calls: output.tool_calls}\n"
            "scorers:\n  - type: includes\n    value: hi\n")


@pytest.fixture
def agent() -> FakeServer:
    server = FakeServer().start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_reply_holding_the_secret_as_a_key_url_encoded_or_in_a_location_leaks_nowhere(
        tmp_path: Path, agent: FakeServer) -> None:
    """An agent that puts the header's secret in a JSON key (nested), URL-encodes it in its text, or
    redirects to a URL carrying it: results, JUnit, the Markdown report and the cache show `***`."""
    replies = {
        "key": {"output": {"text": "hi", "tool_calls": [{"name": "t", "args": {SECRET: {"k": SECRET}}}]},
                "usage": {SECRET: 1}},
        "encoded": {"output": {"tool_calls": [], "text": " ".join(
            ["hi", quote(SECRET, safe=""), quote_plus(SECRET), quote(SECRET).replace("%2B", "%2b")])}},
    }
    for name, reply in replies.items():
        agent.faults[name] = ["extra:" + json.dumps(reply)]
    agent.faults["moved"] = ["redirect:302"]
    agent.redirect_to = f"https://agent.example/callback?state={quote(SECRET, safe='')}&t={quote_plus(SECRET)}"
    (tmp_path / "data.jsonl").write_text("".join(json.dumps({"id": n, "input": n}) + "\n"
                                                 for n in (*replies, "moved")))
    (tmp_path / "evalgate.yaml").write_text(http_spec(agent.url))
    run = cli(["run", "evalgate.yaml", "-o", "out/r.json", "--junit", "out/j.xml"], tmp_path, AGENT_KEY=SECRET)
    assert run.returncode == 0, run.stderr  # no gate: the redirect is an errored item, not a verdict
    report = cli(["report", "out/r.json"], tmp_path, AGENT_KEY=SECRET)
    assert report.returncode == 0, report.stderr
    items = {i["id"]: i for i in json.loads((tmp_path / "out/r.json").read_text())["items"]}
    assert items["key"]["output"]["tool_calls"][0]["args"] == {"***": {"k": "***"}}
    assert "redirect" in items["moved"]["error"] and "***" in items["moved"]["error"], items["moved"]["error"]
    assert list((tmp_path / "cache").rglob("*.json")), "nothing was cached"
    found = leaks(tmp_path, SECRET, {tmp_path / "evalgate.yaml", tmp_path / "data.jsonl"})
    found += [f"printed: {f}" for f in encoded_forms(SECRET) if f in run.stdout + run.stderr + report.stdout]
    assert not found, found


@pytest.mark.parametrize("word", ["summary", "item", "core", "verdict"])
def test_a_secret_that_is_an_ordinary_word_leaves_the_results_file_readable(tmp_path: Path, word: str) -> None:
    """A header's `${VAR}` whose value is `summary`: masking it inside evalgate's own keys (`total_***s`)
    wrote a results file `evalgate report` refused, and the Action posted nothing."""
    (tmp_path / "agent.py").write_text(
        "import json, os\nw = os.environ['W']\n"
        "print(json.dumps({'text': 'hi ' + w, 'tool_calls': [{'name': w, 'args': {w: w, w + '_x': 1}}]}))\n")
    (tmp_path / "evalgate.yaml").write_text(
        f"version: 1\ndata:\n  - {{id: a, input: hi}}\ntarget:\n  type: command\n"
        f"  run: [{json.dumps(sys.executable)}, agent.py]\n  env: {{W: '${{WORD}}'}}\n"
        "gates:\n  - type: includes\n    value: hi\n"
        "scorers:\n  - type: max_tool_calls\n    max: 3\n    threshold: 0.5\n")
    run = cli(["run", "evalgate.yaml", "-o", "out/r.json", "--junit", "out/j.xml"], tmp_path, WORD=word)
    assert run.returncode == 0, run.stderr
    for fmt in ("markdown", "junit"):
        shown = cli(["report", "out/r.json", "--format", fmt], tmp_path, WORD=word)
        assert shown.returncode == 0, shown.stderr
    raw = json.loads((tmp_path / "out/r.json").read_text())
    assert {"summary", "items", "scores", "verdict", "name"} <= set(raw) and raw["summary"]["total_items"] == 1
    [item] = raw["items"]
    assert item["output"]["text"] == "hi ***" and item["output"]["tool_calls"][0]["args"] == {"***": "***", "***_x": 1}
    resumed = cli(["run", "evalgate.yaml", "-o", "out/r.json", "--resume"], tmp_path, WORD=word)
    assert resumed.returncode == 0, resumed.stderr


def test_a_provider_key_no_spec_names_is_masked_wherever_a_failing_agent_prints_it(tmp_path: Path) -> None:
    """The README's workflow sets OPENAI_API_KEY on the step; a `command` agent that fails printing it put
    it in the results, JUnit and the Markdown summary. Credential-named variables are secrets by name."""
    (tmp_path / "agent.py").write_text(
        "import os, sys\nk = os.environ['OPENAI_API_KEY']\nprint('key ' + k)\n"
        "print('stderr: bad key ' + k + ' ' + k.upper(), file=sys.stderr)\nsys.exit(3)\n")
    (tmp_path / "evalgate.yaml").write_text(
        f"version: 1\ndata:\n  - {{id: a, input: hi}}\ntarget:\n  type: command\n"
        f"  run: [{json.dumps(sys.executable)}, agent.py]\ngates:\n  - type: includes\n    value: hi\n")
    env = {"OPENAI_API_KEY": PROVIDER_KEY, "SHORT_TOKEN": "abc", "HOME_DIR_PATH": "/tmp"}
    run = cli(["run", "evalgate.yaml", "-o", "out/r.json", "--junit", "out/j.xml"], tmp_path, **env)
    assert run.returncode == 4, run.stderr
    markdown = cli(["report", "out/r.json", "--format", "markdown"], tmp_path, **env)
    (tmp_path / "out/summary.md").write_text(markdown.stdout)
    [item] = json.loads((tmp_path / "out/r.json").read_text())["items"]
    assert "***" in item["error"] and "exit" in item["error"], item["error"]
    found = leaks(tmp_path, PROVIDER_KEY, {tmp_path / "agent.py", tmp_path / "evalgate.yaml"})
    assert not found and PROVIDER_KEY not in run.stdout + run.stderr, found


def test_the_credential_name_rule() -> None:
    """The documented rule (docs/security.md): names like credentials, not paths, ids or endpoints."""
    named = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
             "AZURE_CLIENT_SECRET", "AZURE_OPENAI_API_KEY", "DB_PASSWORD", "PGPASSWORD", "MYSQL_PWD", "GH_PAT",
             "INPUT_GITHUB-TOKEN", "secret_key", "ACTIONS_RUNTIME_URL"]
    not_named = ["HOME", "PATH", "PWD", "OLDPWD", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK", "AZURE_CLIENT_ID",
                 "AZURE_OPENAI_ENDPOINT", "GOOGLE_APPLICATION_CREDENTIALS", "SSL_KEY_FILE", "MONKEY",
                 "INPUT_COMMENT-KEY", "INPUT_CACHE-KEY"]
    assert [n for n in named if not redaction.looks_like_credential(n)] == []
    assert [n for n in not_named if redaction.looks_like_credential(n)] == []


def test_redaction_keeps_evalgates_structure_and_masks_foreign_keys() -> None:
    redaction.register(["summary", "includes"])
    try:
        head = {"summary": {"total_items": 1, "top_error": {"message": "no summary"}},
                "scores": {"includes:summary": 1.0}, "verdict": "passed",
                "gate_results": [{"id": "includes:summary", "kind": "gate"}]}
        masked_head = {**head, "summary": {"total_items": 1, "top_error": {"message": "no ***"}}}
        assert redaction.redact_value(head) == masked_head
        item = {"id": "summary", "input": {"summary": "a summary"}, "output": {"text": "summary", "x": {"summary": 1}},
                "reasons": {"includes:summary": "summary missing"}}
        assert redaction.redact_value(item) == {"id": "summary", "input": {"***": "a ***"},
                                                "output": {"text": "***", "x": {"***": 1}},
                                                "reasons": {"includes:summary": "*** missing"}}
        assert redaction.redact_value({"summary": {"summary": 1}}, foreign=True) == {"***": {"***": 1}}
    finally:
        redaction.forget_all()
