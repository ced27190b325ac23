"""`evalgate init`: a folder becomes a runnable eval; nothing is overwritten; prompts at a terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_cli
from fake_agent import FakeServer

TEMPLATES = ["python", "command", "http", "openai", "mastra"]
COMMON = {"evalgate.yaml", "data.jsonl", ".github/workflows/evalgate.yml"}
STUBS = {"python": {"agent.py"}, "command": {"agent.py"}, "http": {"agent_server.py"}, "openai": set(), "mastra": set()}


def written(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("template", TEMPLATES)
def test_each_template_writes_a_spec_that_validates(tmp_path: Path, template: str) -> None:
    made = run_cli("init", "--template", template, cwd=tmp_path)
    assert made.code == 0, made.output
    assert written(tmp_path) == COMMON | STUBS[template]
    # the first line names the eval and its template, with no article to get wrong ("a openai eval")
    assert made.stdout.startswith(f"evalgate init: {tmp_path.name}, from the {template} template:\n"), made.stdout
    for path in written(tmp_path):
        assert path in made.stdout  # every file is listed
    spec = yaml.safe_load((tmp_path / "evalgate.yaml").read_text())
    assert spec["target"]["type"] == template and spec["name"] == tmp_path.name
    items = [json.loads(line) for line in (tmp_path / "data.jsonl").read_text().splitlines()]
    assert len(items) == 5 and all(item["input"] and item["ground_truth"] for item in items)
    checked = run_cli("validate", cwd=tmp_path)
    assert checked.code == 0 and "ok (5 items, 2 gates, 2 scorers)" in checked.stdout, checked.output


def test_python_runs_offline_right_after_init(tmp_path: Path) -> None:
    assert run_cli("init", cwd=tmp_path).code == 0
    ran = run_cli("run", cwd=tmp_path)  # no argument: evalgate.yaml
    assert ran.code == 0, ran.output
    assert "5 items, 0 errored" in ran.stdout, ran.stdout
    assert "\nverdict: PASSED\nresults: .evalgate/runs/" in ran.stdout, ran.stdout  # kept, shown relative
    assert "PASS includes:ground_truth" in ran.stdout


def test_command_runs_its_stub_agent(tmp_path: Path) -> None:
    assert run_cli("init", "-t", "command", cwd=tmp_path).code == 0
    # the stub as written runs under `python3`; this interpreter stands in where `python3` is another
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(spec.read_text().replace('"python3 agent.py"', json.dumps(f"{sys.executable} agent.py")))
    ran = run_cli("run", cwd=tmp_path)
    assert ran.code == 0 and "0 errored" in ran.stdout and "verdict: PASSED" in ran.stdout, ran.output


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_http_runs_against_its_stub_server(tmp_path: Path) -> None:
    assert run_cli("init", "-t", "http", cwd=tmp_path).code == 0
    port = free_port()
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(spec.read_text().replace("127.0.0.1:8787", f"127.0.0.1:{port}"))
    server = subprocess.Popen([sys.executable, "agent_server.py", str(port)], cwd=tmp_path, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout is not None and "listening" in server.stdout.readline()
        ran = run_cli("run", cwd=tmp_path)
        assert ran.code == 0 and "0 errored" in ran.stdout and "verdict: PASSED" in ran.stdout, ran.output
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=10)


def test_openai_calls_a_chat_completions_server_with_the_key_it_names(tmp_path: Path) -> None:
    assert run_cli("init", "-t", "openai", cwd=tmp_path).code == 0
    with FakeServer() as fake:
        spec = tmp_path / "evalgate.yaml"
        spec.write_text(spec.read_text().replace("https://api.openai.com/v1", f"{fake.url}/v1"))
        env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
        proc = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "-o", "r.json"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
    results = json.loads((tmp_path / "r.json").read_text())
    # the fake model knows no capitals: a verdict, every item answered, none errored
    assert proc.returncode == 1 and results["verdict"] == "failed", proc.stderr
    assert results["summary"]["errored_items"] == 0 and len(results["items"]) == 5


def test_an_existing_file_stops_init_before_it_writes_anything(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text('{"input": "mine"}\n')
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "evalgate.yml").write_text("name: mine\n")
    made = run_cli("init", cwd=tmp_path)
    assert made.code == 2
    assert "evalgate init: error: data.jsonl exists already" in made.stderr
    assert "evalgate init: error: .github/workflows/evalgate.yml exists already" in made.stderr
    assert "--force" in made.stderr and "Traceback" not in made.output
    assert written(tmp_path) == {"data.jsonl", ".github/workflows/evalgate.yml"}
    assert (tmp_path / "data.jsonl").read_text() == '{"input": "mine"}\n'
    forced = run_cli("init", "--force", cwd=tmp_path)
    assert forced.code == 0, forced.output
    assert written(tmp_path) == COMMON | STUBS["python"]
    assert '"ground_truth": "Paris"' in (tmp_path / "data.jsonl").read_text()


def test_force_replaces_a_link_not_the_file_it_points_at(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_text("KEEP = 1\n")
    folder = tmp_path / "eval"
    folder.mkdir()
    (folder / "agent.py").symlink_to(elsewhere)
    assert run_cli("init", cwd=folder).code == 2
    assert run_cli("init", "--force", cwd=folder).code == 0
    assert elsewhere.read_text() == "KEEP = 1\n" and not (folder / "agent.py").is_symlink()


def test_run_without_a_spec_says_there_is_none_here_and_how_to_start_one(tmp_path: Path) -> None:
    for command in ["run", "validate", "estimate"]:
        result = run_cli(command, cwd=tmp_path)
        assert result.code == 2
        assert result.stderr.startswith(f"evalgate {command}: error: there is no evalgate.yaml in this folder")
        assert "`evalgate init`" in result.stderr and "`evalgate run`" not in result.stderr.replace(
            f"`evalgate {command} path", "")


@pytest.mark.skipif(shutil.which("actionlint") is None, reason="actionlint is not installed (.ci/lint.sh installs it)")
def test_the_workflow_is_actionlint_clean_with_the_actions_real_inputs(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=30)  # actionlint's project root
    assert run_cli("init", cwd=tmp_path).code == 0
    lint = subprocess.run(["actionlint", "-no-color"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    # `uses: ./` makes actionlint check every `with:` input against this repository's action.yml
    shutil.copy(REPO / "action.yml", tmp_path / "action.yml")
    shutil.copy(REPO / "Dockerfile", tmp_path / "Dockerfile")
    workflow = tmp_path / ".github" / "workflows" / "evalgate.yml"
    text = workflow.read_text()
    assert "uses: evalgate/evalgate@v1" in text
    workflow.write_text(text.replace("uses: evalgate/evalgate@v1", "uses: ./"))
    lint = subprocess.run(["actionlint", "-no-color"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    workflow.write_text(text.replace("uses: evalgate/evalgate@v1", "uses: ./").replace("fail-on:", "fail-onn:"))
    lint = subprocess.run(["actionlint", "-no-color"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert lint.returncode == 1 and "fail-onn" in lint.stdout  # the check is real


class Terminal:
    """A process on a pseudo-terminal: read its screen until a text shows, answer, bounded in time."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(args, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, close_fds=True,
                                     env={**os.environ, "COLUMNS": "200"})
        os.close(slave)
        self.screen = ""

    def expect(self, text: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} on the screen:\n{self.screen}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the process ended: its side of the terminal is closed
                    chunk = b""
                assert chunk, f"the process ended before {text!r} showed:\n{self.screen}"
                self.screen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")

    def send(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\r")

    def finish(self) -> int:
        try:
            return self.proc.wait(timeout=30)
        finally:
            os.close(self.master)


def test_a_terminal_is_asked_for_the_template_name_and_function(tmp_path: Path) -> None:
    term = Terminal([sys.executable, "-m", "evalgate.cli", "init"], tmp_path)
    term.expect("Template (python, command, http, openai, mastra) [python]: ")
    term.send("")  # the default
    term.expect(f"Name of the eval [{tmp_path.name}]: ")
    term.send("capitals quiz")
    term.expect("The agent's function (module:function) [agent:answer]: ")
    term.send("agent")  # no function: asked again, saying what fits
    term.expect("module:function, e.g. agent:answer")
    term.send("bots.capitals:reply")
    term.expect("next:")
    assert term.finish() == 0, term.screen
    spec = yaml.safe_load((tmp_path / "evalgate.yaml").read_text())
    assert spec["name"] == "capitals quiz" and spec["target"]["function"] == "bots.capitals:reply"
    assert written(tmp_path) == COMMON | {"bots/capitals.py"}
    ran = run_cli("run", cwd=tmp_path)  # the stub is the module and function the answers named
    assert ran.code == 0 and "verdict: PASSED" in ran.stdout, ran.output


def test_a_terminal_with_a_template_given_is_asked_only_for_the_rest(tmp_path: Path) -> None:
    term = Terminal([sys.executable, "-m", "evalgate.cli", "init", "--template", "http"], tmp_path)
    term.expect("Name of the eval")
    term.send("svc")
    term.expect("Your agent's URL [http://127.0.0.1:8787/answer]: ")
    term.send("ftp://agent")
    term.expect("an http:// or https:// URL")
    term.send("https://agent.example/api/answer")
    term.expect("next:")
    assert term.finish() == 0, term.screen
    assert "Template" not in term.screen
    spec = yaml.safe_load((tmp_path / "evalgate.yaml").read_text())
    assert spec["target"]["url"] == "https://agent.example/api/answer"


def test_a_file_where_a_folder_is_needed_stops_init_even_with_force(tmp_path: Path) -> None:
    (tmp_path / ".github").write_text("not a folder\n")
    for args in (["init"], ["init", "--force"]):
        made = run_cli(*args, cwd=tmp_path)
        assert made.code == 2
        assert "evalgate init: error: .github is a file where a folder is needed" in made.stderr, made.stderr
        assert written(tmp_path) == {".github"} and (tmp_path / ".github").read_text() == "not a folder\n"
