"""The `mastra` target against a real Mastra server, compared with Mastra's own runEvals().

tests/mastra_server/server.mjs serves a real Mastra app (@mastra/core agents and workflow through
@mastra/hono) on 127.0.0.1 with a scripted model: get_weather throws for Atlantis, book_table is a
client tool (its call stays pending), memoryAgent keeps threads, forecastWorkflow has two steps.
run_evals.mjs runs Mastra's runEvals() in process on the same app; verdicts and every average must
be equal.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from evalgate.api import run_spec

SERVER_DIR = Path(__file__).parent / "mastra_server"
READY = shutil.which("node") is not None and (SERVER_DIR / "node_modules" / "@mastra" / "hono").is_dir()

if not READY and os.environ.get("CI"):
    pytest.fail("CI must run the Mastra server tests: `npm ci` in tests/mastra_server", pytrace=False)
pytestmark = pytest.mark.skipif(not READY, reason="needs node and `npm ci` in tests/mastra_server")

START_TIMEOUT_S = 60
SECRET = "mastra-tok-51f0e9d2c7"


class MastraServer:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            ["node", "server.mjs"], cwd=SERVER_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(START_TIMEOUT_S)
        if not line or not line[0].startswith("http://127.0.0.1:"):
            self.close()
            raise RuntimeError(f"the Mastra server did not start: {self.proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]
        self.url = line[0].strip()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # the server exits when its stdin closes
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def mastra() -> Iterator[MastraServer]:
    server = MastraServer()
    try:
        yield server
    finally:
        server.close()


def mastra_run_evals(case: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run(["node", "run_evals.mjs"], cwd=SERVER_DIR, input=json.dumps(case), capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def same_as_mastra(result: Any, mastra: dict[str, Any]) -> None:
    outcome = result.outcome
    assert outcome.verdict == mastra["verdict"]
    assert [(g.id, g.passed, g.score) for g in outcome.gate_results] == [
        (g["id"], g["passed"], g["score"]) for g in mastra["gateResults"] or []]
    assert [(t.id, t.passed, t.average_score, t.threshold) for t in outcome.threshold_results] == [
        (t["id"], t["passed"], t["averageScore"], t["threshold"]) for t in mastra["thresholdResults"] or []]
    assert outcome.scores == mastra["scores"]


def write_spec(tmp_path: Path, target: dict[str, Any], data: list[dict[str, Any]], gates: list[dict[str, Any]],
               scorers: list[dict[str, Any]]) -> Path:
    path = tmp_path / "evalgate.yaml"
    spec = {"version": 1, "data": data, "target": target, "gates": gates, "scorers": scorers, "concurrency": 3}
    path.write_text(json.dumps(spec, indent=1))
    return path


def items(path: Path) -> dict[str, dict[str, Any]]:
    return {i["id"]: i for i in json.loads(path.read_text())["items"]}


WEATHER = [
    {"id": "paris", "input": "What is the weather in Paris?"},
    {"id": "atlantis", "input": "What is the weather in Atlantis?"},  # the tool throws
    {"id": "lima", "input": "weather in Lima"},
    {"id": "booking", "input": "Please book a table in Oslo"},  # a client tool: pending
    {"id": "chat", "input": "Hello there"},
]
GATES = [{"type": "called_tool", "tool": "get_weather", "id": "calls-weather"}]
SCORERS = [
    {"type": "no_tool_errors", "id": "no-errors", "threshold": 0.5},
    {"type": "includes", "value": "F in", "id": "says-temp", "threshold": {"min": 0.3}},
    {"type": "used_no_tools", "id": "no-tools"},
    {"type": "did_not_call", "tool": "book_table", "id": "no-booking", "threshold": 0.9},
]


def mastra_data(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in d.items() if k in ("input", "inputs")} for d in data]


# ---- agents ----


def test_agent_verdict_and_every_average_equal_mastra_run_evals(tmp_path: Path, mastra: MastraServer) -> None:
    spec = write_spec(tmp_path, {"type": "mastra", "url": mastra.url, "agent": "weatherAgent"}, WEATHER, GATES,
                      SCORERS)
    ours = run_spec(spec, output=tmp_path / "out.json")
    theirs = mastra_run_evals({"agent": "weatherAgent", "data": mastra_data(WEATHER), "gates": GATES,
                               "scorers": SCORERS})
    same_as_mastra(ours, theirs)
    assert ours.outcome.verdict == "failed"  # not everything called the tool: a real verdict, not a vacuous pass
    assert ours.scores["no-errors"] == 0.6  # Atlantis threw, Oslo's booking never came back


def test_thrown_tools_are_errors_and_client_tools_pending(tmp_path: Path, mastra: MastraServer) -> None:
    spec = write_spec(tmp_path, {"type": "mastra", "url": mastra.url, "agent": "weatherAgent"}, WEATHER, GATES,
                      SCORERS)
    assert run_cli("run", spec, "-o", "out.json", cwd=tmp_path).code == 1
    got = items(tmp_path / "out.json")
    assert got["atlantis"]["output"]["tool_calls"] == [{
        "name": "get_weather", "args": {"city": "Atlantis"}, "error": "no weather station in Atlantis",
        "status": "error"}]
    assert got["booking"]["output"]["tool_calls"] == [
        {"name": "book_table", "args": {"city": "Oslo"}, "status": "pending"}]
    paris = got["paris"]["output"]
    assert paris["text"] == "It is 56F in Paris."
    assert paris["tool_calls"] == [{"name": "get_weather", "args": {"city": "Paris"},
                                    "result": {"city": "Paris", "temp": 56}, "status": "ok"}]
    assert set(paris["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert paris["usage"]["total_tokens"] == paris["usage"]["prompt_tokens"] + paris["usage"]["completion_tokens"]
    assert paris["latency_ms"] > 0


CONVERSATIONS = [
    {"id": "ada", "inputs": ["My name is Ada", "What is my name?"]},
    {"id": "bob", "inputs": ["My name is Bob", "What is the weather in Atlantis?", "What is my name?"]},
    {"id": "stranger", "inputs": ["What is my name?"]},
]
MEMORY_SCORERS = [
    {"type": "includes", "value": "Your name is Ada", "id": "knows-ada", "threshold": 0.3},
    {"type": "includes", "value": "Your name is Bob", "id": "knows-bob"},
    {"type": "no_tool_errors", "id": "no-errors"},
]


def test_memory_threads_equal_mastra_run_evals(tmp_path: Path, mastra: MastraServer) -> None:
    target = {"type": "mastra", "url": mastra.url, "agent": "memoryAgent", "memory": {"thread": "{{item.id}}"}}
    spec = write_spec(tmp_path, target, CONVERSATIONS, [], MEMORY_SCORERS)
    ours = run_spec(spec, output=tmp_path / "out.json")
    theirs = mastra_run_evals({"agent": "memoryAgent", "data": mastra_data(CONVERSATIONS),
                               "scorers": MEMORY_SCORERS})
    same_as_mastra(ours, theirs)
    got = items(tmp_path / "out.json")
    assert got["bob"]["output"]["texts"][-1] == "Your name is Bob."  # the server kept the history
    assert got["stranger"]["output"]["text"] == "I do not know your name."


def test_memory_threads_are_fresh_per_item_and_per_run(tmp_path: Path, mastra: MastraServer) -> None:
    target = {"type": "mastra", "url": mastra.url, "agent": "memoryAgent",
              "memory": {"thread": "{{item.id}}", "resource": "evals"}}
    data = [{"id": "same", "inputs": ["My name is Ada", "What is my name?"]}]
    spec = write_spec(tmp_path, target, data, [], [{"type": "includes", "value": "Ada"}])
    for _ in range(2):  # a second run must not see the first run's thread
        assert run_cli("run", spec, "-o", "out.json", cwd=tmp_path).code == 0
        assert items(tmp_path / "out.json")["same"]["output"]["texts"] == ["Nice to meet you, Ada.",
                                                                        "Your name is Ada."]
    data = [{"id": "same", "inputs": ["What is my name?"]}]
    spec = write_spec(tmp_path, target, data, [], [{"type": "includes", "value": "know"}])
    assert run_cli("run", spec, "-o", "out.json", cwd=tmp_path).code == 0
    assert items(tmp_path / "out.json")["same"]["output"]["text"] == "I do not know your name."


def test_without_memory_the_history_is_sent_as_messages(tmp_path: Path, mastra: MastraServer) -> None:
    spec = write_spec(tmp_path, {"type": "mastra", "url": mastra.url, "agent": "weatherAgent"},
                      [{"id": "ada", "inputs": ["My name is Ada", "What is my name?"]}], [],
                      [{"type": "includes", "value": "Your name is Ada"}])
    assert run_cli("run", spec, "-o", "out.json", cwd=tmp_path).code == 0
    assert items(tmp_path / "out.json")["ada"]["output"]["texts"] == ["Nice to meet you, Ada.", "Your name is Ada."]


# ---- workflows ----

WORKFLOW_MODULE = '''
def warm(item, run):
    """1 when the workflow's summary says warm (run_evals.mjs's result_includes: no result reads as "")."""
    return 1.0 if "warm" in (run.result or {}).get("summary", "") else 0.0


def fetched(item, run):
    """The first step's output is in the run."""
    return 1.0 if run.steps["fetch-weather"]["output"]["city"] == item.input["city"] else 0.0
'''


def test_workflow_result_and_steps_equal_mastra_run_evals(tmp_path: Path, mastra: MastraServer) -> None:
    (tmp_path / "checks.py").write_text(WORKFLOW_MODULE)
    data = [{"id": c, "input": {"city": c}} for c in ("Paris", "Lima", "Cairo", "Reykjavik")]
    scorers = [{"type": "python", "function": "checks:warm", "id": "warm", "threshold": 0.5}]
    spec = write_spec(tmp_path, {"type": "mastra", "url": mastra.url, "workflow": "forecastWorkflow"}, data,
                      [{"type": "python", "function": "checks:fetched", "id": "fetched"}], scorers)
    ours = run_spec(spec, output=tmp_path / "out.json")
    theirs = mastra_run_evals({
        "workflow": "forecastWorkflow", "data": mastra_data(data),
        "scorers": [{"type": "result_includes", "field": "summary", "value": "warm", "id": "warm",
                     "threshold": 0.5}],
    })
    assert ours.outcome.verdict == theirs["verdict"]
    assert ours.scores["warm"] == theirs["scores"]["warm"]
    assert [(t.id, t.passed, t.average_score) for t in ours.outcome.threshold_results] == [
        (t["id"], t["passed"], t["averageScore"]) for t in theirs["thresholdResults"]]
    assert ours.outcome.gate_results[0].score == 1.0
    paris = items(tmp_path / "out.json")["Paris"]["output"]
    assert paris["result"] == {"summary": "Paris: 56F, cool"}
    assert paris["steps"] == {
        "fetch-weather": {"status": "success", "output": {"city": "Paris", "temp": 56}},
        "summarize": {"status": "success", "output": {"summary": "Paris: 56F, cool"}},
    }


FAILING = [{"id": c.lower(), "input": {"city": c.split("-")[0]}}
           for c in ("Paris", "Atlantis", "Lima", "Atlantis-again", "Cairo")]  # fetch-weather throws for Atlantis


def test_a_failed_workflow_is_scored_as_mastra_run_evals_scores_it(tmp_path: Path, mastra: MastraServer) -> None:
    """A run that ends `failed` is the workflow's output: runEvals scores it with no output (0 here), and the
    verdict and averages are Mastra's, not "could not evaluate"."""
    (tmp_path / "checks.py").write_text(WORKFLOW_MODULE)
    scorers = [{"type": "python", "function": "checks:warm", "id": "warm", "threshold": 0.5}]
    spec = write_spec(tmp_path, {"type": "mastra", "url": mastra.url, "workflow": "forecastWorkflow"}, FAILING,
                      [], scorers)
    result = run_cli("run", spec, "-o", "out.json", cwd=tmp_path)
    theirs = mastra_run_evals({
        "workflow": "forecastWorkflow", "data": mastra_data(FAILING),
        "scorers": [{"type": "result_includes", "field": "summary", "value": "warm", "id": "warm", "threshold": 0.5}],
    })
    ours = json.loads((tmp_path / "out.json").read_text())
    assert theirs["verdict"] == "scored" and ours["verdict"] == "scored"
    assert result.code == 0, result.stderr  # a scored verdict, not 4 (could not evaluate)
    # Lima and Cairo are warm: 2 of 5 (2 of 3, a pass, if the failed runs were left out as errors)
    assert ours["scores"] == theirs["scores"] and theirs["scores"]["warm"] == 0.4
    assert [(t["id"], t["passed"], t["average_score"]) for t in ours["threshold_results"]] == [
        (t["id"], t["passed"], t["averageScore"]) for t in theirs["thresholdResults"]]
    atlantis = items(tmp_path / "out.json")["atlantis"]
    assert atlantis["error"] is None and atlantis["scores"]["warm"] == 0.0
    failed = {"status": "failed", "error": "no weather station in Atlantis"}
    assert atlantis["output"]["steps"]["fetch-weather"] == failed
    assert "result" not in atlantis["output"]


def test_a_text_check_on_a_workflow_reads_its_text_never_its_json(tmp_path: Path, mastra: MastraServer) -> None:
    """`includes: warm` found the key of `{"warm": ...}` in a structured result's JSON; Mastra's checks throw on a
    workflow's result. With no text, a text check is the item's error naming the `text:` to set."""
    data = [{"id": "paris", "input": {"city": "Paris"}}, {"id": "atlantis", "input": {"city": "Atlantis"}}]
    scorers = [{"type": "includes", "value": "summary", "id": "says-summary"}]
    target = {"type": "mastra", "url": mastra.url, "workflow": "forecastWorkflow"}
    spec = write_spec(tmp_path, target, data, [], scorers)
    assert run_cli("run", spec, "-o", "out.json", cwd=tmp_path).code == 4  # failed by errors (max_errors: 0)
    paris, atlantis = items(tmp_path / "out.json")["paris"], items(tmp_path / "out.json")["atlantis"]
    assert "a JSON object, not text: set the target's `text:`" in paris["scorer_errors"]["says-summary"]
    assert "failed at step `fetch-weather`: no weather station in Atlantis: the run has no output" in (
        atlantis["scorer_errors"]["says-summary"])
    # with the text named, the checks read it: "Paris: 56F, cool"
    spec = write_spec(tmp_path, {**target, "text": "summary"}, data[:1],
                      [{"type": "includes", "value": "cool", "id": "cool"}], scorers)
    ours = run_spec(spec, output=tmp_path / "named.json")
    assert ours.scores["says-summary"] == 0.0 and ours.outcome.gate_results[0].score == 1.0


def test_a_failed_workflow_is_run_again_not_replayed_from_the_cache(tmp_path: Path, mastra: MastraServer) -> None:
    # its 200 reply was cached as a success: every later run replayed the failure without running the workflow
    data = [{"id": "paris", "input": {"city": "Paris"}}, {"id": "atlantis", "input": {"city": "Atlantis"}}]
    target = {"type": "mastra", "url": mastra.url, "workflow": "forecastWorkflow", "cache": {"dir": "cache"},
              "text": "summary"}
    spec = write_spec(tmp_path, target, data, [], [{"type": "includes", "value": "Paris"}])
    run_spec(spec)
    second = run_spec(spec, output=tmp_path / "out.json")
    assert second.summary["network"]["cache_hits"] == 1 and second.summary["network"]["requests"] == 1
    assert items(tmp_path / "out.json")["atlantis"]["output"]["steps"]["fetch-weather"]["status"] == "failed"


# ---- the http target reading the same server ----


def test_http_target_with_format_mastra_equals_the_mastra_target(tmp_path: Path, mastra: MastraServer) -> None:
    target = {"type": "http", "url": f"{mastra.url}/api/agents/weatherAgent/generate",
              "body": {"messages": [{"role": "user", "content": "{{input}}"}]}, "response": {"format": "mastra"}}
    spec = write_spec(tmp_path, target, WEATHER, GATES, SCORERS)
    ours = run_spec(spec)
    theirs = mastra_run_evals({"agent": "weatherAgent", "data": mastra_data(WEATHER), "gates": GATES,
                               "scorers": SCORERS})
    same_as_mastra(ours, theirs)


@pytest.mark.parametrize("response,warning", [
    ({}, "warning: no tool calls were found"),
    ({"tool_calls": "toolCalls", "tool_call_fields": {"name": "payload.toolName", "args": "payload.args"}},
     "warning: response.tool_calls `toolCalls` reads tool calls that failed"),
])
def test_http_obvious_mappings_of_mastra_warn_instead_of_passing_silently(
        tmp_path: Path, mastra: MastraServer, response: dict[str, Any], warning: str) -> None:
    target = {"type": "http", "url": f"{mastra.url}/api/agents/weatherAgent/generate",
              "body": {"messages": [{"role": "user", "content": "{{input}}"}]}, "response": response}
    spec = write_spec(tmp_path, target, WEATHER[:2], [{"type": "no_tool_errors"}], [])
    result = run_cli("run", spec, cwd=tmp_path)
    assert result.code == 0  # the mapping hides Atlantis's error: no_tool_errors passes...
    assert result.stderr.count(warning) == 1  # ...and evalgate says so, once
    assert "format: mastra" in result.stderr


# ---- errors and secrets ----


def test_unknown_agent_says_which_id_and_server(tmp_path: Path, mastra: MastraServer) -> None:
    spec = write_spec(tmp_path, {"type": "mastra", "url": mastra.url, "agent": "wetherAgent",
                                 "retries": {"attempts": 1}}, WEATHER[:1], GATES, [])
    assert run_cli("run", spec, "-o", "out.json", cwd=tmp_path).code == 4
    error = items(tmp_path / "out.json")["paris"]["error"]
    assert "HTTP 404" in error and "`wetherAgent` the agent's id" in error


def test_header_secrets_are_written_nowhere(tmp_path: Path, mastra: MastraServer) -> None:
    target = {"type": "mastra", "url": mastra.url, "agent": "weatherAgent",
              "headers": {"Authorization": "Bearer ${MASTRA_TEST_TOKEN}"}}
    spec = write_spec(tmp_path, target, WEATHER[:2], [], [{"type": "includes", "value": "F in"}])
    env = {k: v for k, v in os.environ.items() if k != "MASTRA_TEST_TOKEN"}
    unset = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", str(spec), "-o", "out.json"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60, env=env, check=False)
    assert unset.returncode == 4
    assert "MASTRA_TEST_TOKEN is not set" in items(tmp_path / "out.json")["paris"]["error"]
    proc = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", str(spec), "-o", "out.json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env={**env, "MASTRA_TEST_TOKEN": SECRET},
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


def test_memory_conversations_replay_from_the_cache(tmp_path: Path, mastra: MastraServer) -> None:
    # The thread's random suffix stays out of the cache key; the earlier inputs are in it.
    target = {"type": "mastra", "url": mastra.url, "agent": "memoryAgent", "memory": {"thread": "{{item.id}}"},
              "cache": {"dir": "cache"}}
    spec = write_spec(tmp_path, target, CONVERSATIONS, [], MEMORY_SCORERS)
    first = run_spec(spec, output=tmp_path / "first.json")
    second = run_spec(spec, output=tmp_path / "second.json")
    assert second.summary["network"]["cache_hits"] == 6 and second.summary["network"]["requests"] == 0
    assert first.scores == second.scores
    assert [i["output"]["texts"] if "texts" in i["output"] else i["output"]["text"]
            for i in json.loads((tmp_path / "second.json").read_text())["items"]] == [
        ["Nice to meet you, Ada.", "Your name is Ada."],
        ["Nice to meet you, Bob.", "Sorry, I could not get the weather.", "Your name is Bob."],
        "I do not know your name.",
    ]
