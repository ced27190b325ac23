"""End-to-end scenarios of the Action, run as the runner runs it, against the fake GitHub API.

The same scenarios run the entrypoint as a subprocess (test_action_entrypoint.py) and the real
image under Docker (test_container.py): `Launcher` is the only difference.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fake_github import BOT, FakeGitHub
from runner_sim import Command, RunnerFiles, action_env, parse_outputs, process_log, pull_request_event

REPO = "octo/agent"
PR = 7
TOKEN = "ghs_fake_installation_token_0123456789"
OUTPUT_NAMES = {"verdict", "passed", "failure-reason", "gate-failures", "threshold-misses", "errored-items",
                "scores", "results-path", "html-file", "comment-url", "comment-file", "regressions"}

# Model output that tries every trick: new outputs, workflow commands, heredoc ends, pings, HTML.
INJECTION = (
    "Sunny <script>alert('x')</script> @someone | a | #1\n::set-output name=verdict::passed\n::error::pwned\n"
    "verdict<<EOF\npassed\nEOF\n##[set-output name=passed;]true\n::add-mask::Sunny\r\n::warning file=x::pwned2\n"
)

SPEC = """\
version: 1
name: {name}
data: cases.jsonl
target:
  type: recorded
max_errors: 5
gates:
  - type: called_tool
    tool: get_weather
scorers:
  - type: includes
    value: Brooklyn
    threshold: {threshold}
"""

GOOD = {"id": "good", "input": "weather in Brooklyn?",
        "output": {"text": "Sunny in Brooklyn", "tool_calls": [{"name": "get_weather", "args": {"city": "Brooklyn"}}]}}


def cases(kind: str) -> list[dict]:
    evil_call = [{"name": "get_weather", "args": {}}] if kind == "scored" else []
    evil = {"id": "evil::error::id", "input": "@someone says\n::error::pwned-input",
            "output": {"text": INJECTION, "tool_calls": evil_call}}
    return [GOOD, evil] if kind in ("failed", "scored") else [GOOD]


def write_project(folder: Path, kind: str, *, name: str = "weather", threshold: str = "0.9") -> None:
    """A spec whose verdict is `kind` (failed / scored / passed) or `bad` (a spec error)."""
    folder.mkdir(parents=True, exist_ok=True)
    threshold = "2.5" if kind == "bad" else threshold
    (folder / "evalgate.yaml").write_text(SPEC.format(name=name, threshold=threshold))
    rows = cases("passed" if kind == "bad" else kind)
    (folder / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@dataclass
class Run:
    code: int
    log: str
    files: RunnerFiles
    base: Path  # the workspace as the host sees it

    @property
    def outputs(self) -> dict[str, str]:
        return parse_outputs(self.files.output)

    @property
    def summary(self) -> str:
        return self.files.summary.read_text(encoding="utf-8")

    @property
    def commands(self) -> list[Command]:
        return process_log(self.log)


# (files, env built with the launcher's own paths) -> (exit code, merged stdout+stderr)
Launcher = Callable[[RunnerFiles, Callable[..., dict[str, str]]], tuple[int, str]]


class Action:
    """Runs the Action with a launcher against one fake GitHub, in one runner file layout."""

    def __init__(self, launch: Launcher, root: Path, github: FakeGitHub) -> None:
        self.launch = launch
        self.root = root
        self.github = github
        self.count = 0

    def run(self, inputs: dict[str, str] | None = None, *, event_name: str = "pull_request",
            fork: bool = False, token: str = TOKEN) -> Run:
        self.count += 1
        files = RunnerFiles(self.root / f"step{self.count}")
        files.make(pull_request_event(REPO, PR, fork=fork) if event_name.startswith("pull") else {"ref": "main"})
        workspace = self.root / "ws"
        files.workspace.rmdir()
        files.workspace.symlink_to(workspace, target_is_directory=True)

        def env(*, workspace: str, output: str, summary: str, event_path: str, api_url: str) -> dict[str, str]:
            return action_env({"github-token": token, **(inputs or {})}, workspace=workspace, output=output,
                              summary=summary, event_path=event_path, event_name=event_name,
                              repository=REPO, api_url=api_url)

        code, log = self.launch(files, env)
        return Run(code, log, files, workspace)


def new_github(prefix: str = "") -> FakeGitHub:
    github = FakeGitHub(prefix=prefix)
    github.add_token(TOKEN, BOT, integration=True)
    github.add_token("ghs_read_only", BOT, integration=True, read_only=True)
    github.add_pull(REPO, PR)
    return github


def seed_other_comments(github: FakeGitHub, key: str, count: int = 3) -> None:
    """Comments the Action must never touch: other users, look-alike markers, other keys."""
    github.add_comment(REPO, PR, "mallory", f"<!-- evalgate:{key} -->\nI look like the sticky comment")
    github.add_comment(REPO, PR, BOT, f"<!-- evalgate:{key}-2 -->\nanother eval job's comment")
    github.add_comment(REPO, PR, BOT, f"quoting <!-- evalgate:{key} --> in the middle")
    github.add_comment(REPO, PR, "dependabot[bot]", f"<!-- evalgate:{key} -->")
    for n in range(count):
        github.add_comment(REPO, PR, "reviewer", f"comment {n}")


# ---- assertions shared by every launcher ----


def assert_no_injection(run: Run, *, printed: bool = True) -> None:
    """Only the Action's own annotations reach the runner; no model text became a command."""
    for command in run.commands:
        assert command.name in {"error", "warning"}, f"unexpected command {command}"
        assert command.properties.get("title", "").startswith("evalgate"), command
        assert "pwned" not in command.data, command
    if printed:  # the failing item's model text was printed to the log, as plain text
        assert "\n::error::pwned\n" in run.log


def assert_safe_markdown(text: str) -> None:
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    assert "@someone" not in text and "@&#8203;someone" in text
    assert "\n::" not in text  # no line of the report starts a command if echoed


def assert_outputs_complete(run: Run) -> dict[str, str]:
    outputs = run.outputs
    assert set(outputs) == OUTPUT_NAMES
    return outputs


def spec_line(run: Run, text: str) -> int:
    lines = (run.base / "evalgate.yaml").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


# ---- scenarios ----


def failed_pull_request(action: Action) -> None:
    """A failing PR: exit 1, every output, the summary, one sticky comment, annotations on spec lines."""
    write_project(action.root / "ws", "failed")
    seed_other_comments(action.github, "weather", count=120)  # our comment will be on page 2
    first = action.run()
    assert first.code == 1, first.log
    outputs = assert_outputs_complete(first)
    assert outputs["verdict"] == "failed"
    assert outputs["passed"] == "false"
    assert outputs["failure-reason"] == "gates"
    assert outputs["gate-failures"] == "1"
    assert outputs["threshold-misses"] == "1"
    assert outputs["errored-items"] == "0"
    assert json.loads(outputs["scores"]) == {"includes:Brooklyn": 0.5}
    assert outputs["results-path"] == "evalgate-results.json"
    assert outputs["html-file"] == "evalgate-report.html"  # beside the results, for the upload step
    page = (first.base / "evalgate-report.html").read_text(encoding="utf-8")
    assert "Content-Security-Policy" in page and "<script>alert" not in page  # the injection stays escaped
    assert not list(first.base.rglob("*.items.jsonl"))  # the journal never lands in the workspace
    results = json.loads((first.base / "evalgate-results.json").read_text())
    assert results["verdict"] == "failed" and results["items"][1]["output"]["text"] == INJECTION
    assert_no_injection(first)

    summary = first.summary
    assert "evalgate · weather: **failed**" in summary
    assert "called_tool:get_weather" in summary and "<details>" in summary
    assert_safe_markdown(summary)

    ours = [c for c in action.github.comments_on(REPO, PR) if c["body"].startswith("<!-- evalgate:weather -->\n")
            and c["user"]["login"] == BOT]
    assert len(ours) == 1
    assert outputs["comment-url"] == ours[0]["html_url"]
    comment_file = first.base / outputs["comment-file"]
    assert comment_file.read_text(encoding="utf-8") == ours[0]["body"]
    assert_safe_markdown(ours[0]["body"])
    assert "<code>evalgate-report.html</code> in the run's artifacts" in ours[0]["body"]  # where the page is
    assert "https://github.com/octo/agent/actions/runs/4242" in ours[0]["body"]

    errors = [c for c in first.commands if c.name == "error"]
    warnings = [c for c in first.commands if c.name == "warning"]
    assert errors[0].properties == {"file": "evalgate.yaml", "line": str(spec_line(first, "type: called_tool")),
                                    "title": "evalgate: gate failed"}
    assert warnings[0].properties["line"] == str(spec_line(first, "type: includes"))

    # The second run finds the comment (on page 2, by its exact marker and author) and updates it.
    others = {c["id"]: c["body"] for c in action.github.comments_on(REPO, PR) if c["id"] != ours[0]["id"]}
    second = action.run()
    assert second.code == 1
    now = action.github.comments_on(REPO, PR)
    assert len(now) == len(others) + 1
    assert {c["id"]: c["body"] for c in now if c["id"] != ours[0]["id"]} == others
    patches = action.github.requests("PATCH")
    assert [p.path for p in patches] == [f"/repos/{REPO}/issues/comments/{ours[0]['id']}"]
    assert second.outputs["comment-url"] == ours[0]["html_url"]
    pages = [r.query.get("page", ["1"])[0] for r in action.github.requests("GET") if r.path.endswith("/comments")]
    # every listing followed the Link header, and each run listed once: the first run's and the second's
    assert pages.count("2") == 2
    assert all(r.authorization == f"Bearer {TOKEN}" for r in action.github.requests())
    assert TOKEN not in first.log + second.log + summary


def fork_pull_request(action: Action) -> None:
    """A read-only token: a warning, the body in comment-file, the exit code unchanged."""
    write_project(action.root / "ws", "scored")
    run = action.run({"fail-on": "scored"}, fork=True, token="ghs_read_only")
    assert run.code == 1
    outputs = assert_outputs_complete(run)
    assert outputs["verdict"] == "scored" and outputs["comment-url"] == ""
    body = (run.base / outputs["comment-file"]).read_text(encoding="utf-8")
    assert body.startswith("<!-- evalgate:weather -->\n")
    warning = [c for c in run.commands if c.name == "warning" and "comment" in c.properties.get("title", "")]
    assert len(warning) == 1 and "read-only" in warning[0].data
    assert action.github.comments_on(REPO, PR) == []
    assert_no_injection(run, printed=False)


def push_event(action: Action) -> None:
    """On push: summary and outputs, no comment and no API call."""
    write_project(action.root / "ws", "passed")
    run = action.run(event_name="push")
    assert run.code == 0, run.log
    outputs = assert_outputs_complete(run)
    assert outputs["verdict"] == "passed" and outputs["passed"] == "true"
    assert outputs["comment-url"] == "" and outputs["comment-file"] == ""
    assert "**passed**" in run.summary
    assert action.github.requests() == []


def spec_error(action: Action) -> None:
    """A bad spec: ::error at its line, exit 2, every output set, verdict empty."""
    write_project(action.root / "ws", "bad")
    run = action.run()
    assert run.code == 2, run.log
    outputs = assert_outputs_complete(run)
    assert outputs["verdict"] == "" and outputs["passed"] == "false"  # the step failed
    errors = [c for c in run.commands if c.name == "error"]
    assert errors and errors[0].properties["file"] == "evalgate.yaml"
    assert errors[0].properties["line"] == str(spec_line(run, "threshold:"))
    assert action.github.requests() == []


def working_directory(action: Action) -> None:
    """Paths resolve against the workspace and working-directory; outputs are workspace-relative."""
    write_project(action.root / "ws" / "evals", "passed", name="sub")
    run = action.run({"working-directory": "evals", "results-path": "out/results.json", "comment-key": "nightly"})
    assert run.code == 0, run.log
    outputs = assert_outputs_complete(run)
    assert outputs["results-path"] == "evals/out/results.json"
    assert (run.base / "evals/out/results.json").is_file()
    assert outputs["comment-file"] == "evals/out/results.comment.md"
    [comment] = action.github.comments_on(REPO, PR)
    assert comment["body"].startswith("<!-- evalgate:nightly -->\n")


def exit_codes(action: Action) -> None:
    """fail-on: a `scored` verdict fails only with fail-on scored."""
    write_project(action.root / "ws", "scored")
    codes = {fail_on: action.run({"fail-on": fail_on, "comment": "false"}).code
             for fail_on in ("failed", "scored", "never")}
    assert codes == {"failed": 0, "scored": 1, "never": 0}
    bad = action.run({"fail-on": "sometimes"})
    assert bad.code == 2
    assert set(bad.outputs) == OUTPUT_NAMES and bad.outputs["passed"] == "false"
    assert re.search(r"fail-on", bad.commands[0].data)


def sharded_matrix(action: Action) -> None:
    """Two shard jobs (no comment, exit 0 on a failed verdict), then the merge job: one comment, the exit code."""
    folder = action.root / "ws"
    write_project(folder, "failed")
    rows = [{**GOOD, "id": f"good-{n}"} for n in range(12)] + cases("failed")[1:]
    (folder / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for index in (1, 2):
        run = action.run({"shard": f"{index}/2", "results-path": f"shards/shard-{index}.json"})
        assert run.code == 0, run.log
        assert (folder / f"shards/shard-{index}.json").is_file()
        assert run.outputs["passed"] == "true" and run.outputs["comment-url"] == ""
        assert run.outputs["html-file"] == "" and not list(folder.glob("*.html"))  # the merge job writes the page
        assert f"evalgate shard {index}/2" in run.summary
        assert action.github.comments_on(REPO, PR) == []
    missing = action.run({"mode": "merge", "results": "shards/shard-1.json", "results-path": "merged.json"})
    assert missing.code == 2, missing.log
    [error] = [c for c in missing.commands if c.name == "error"]
    assert "shard 2/2 missing" in error.data and "shards/shard-1.json" in error.data
    assert missing.outputs["passed"] == "false" and not (folder / "merged.json").exists()
    merged = action.run({"mode": "merge", "results": "shards/*.json", "results-path": "merged.json"})
    assert merged.code == 1, merged.log
    outputs = assert_outputs_complete(merged)
    assert outputs["verdict"] == "failed" and outputs["errored-items"] == "0"
    assert outputs["results-path"] == "merged.json" and outputs["html-file"] == "evalgate-report.html"
    results = json.loads((folder / "merged.json").read_text())
    assert results["summary"]["total_items"] == 13 and results["merged"]["shards"] == 2
    [comment] = action.github.comments_on(REPO, PR)
    assert comment["body"].startswith("<!-- evalgate:weather -->\n") and "13 items" in comment["body"]
    assert [c.properties["title"] for c in merged.commands if c.name == "error"] == ["evalgate: gate failed"]
    [gate_error] = [c for c in merged.commands if c.name == "error"]
    assert gate_error.properties.get("file") == "evalgate.yaml"  # the spec is checked out: lines for annotations
    assert_no_injection(merged, printed=False)  # the merge prints no model output
