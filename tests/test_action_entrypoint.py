"""The entrypoint end to end, run as the runner runs a container step, against a fake GitHub API."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import action_scenarios as scenarios
import pytest
from fake_github import FakeGitHub
from runner_sim import RunnerFiles

REPO_ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 120


def runner_environment(files: RunnerFiles, env: Callable[..., dict[str, str]], api_url: str) -> dict[str, str]:
    environment = env(workspace=str(files.workspace), output=str(files.output), summary=str(files.summary),
                      event_path=str(files.event), api_url=api_url)
    environment["PATH"] = os.environ.get("PATH", "")
    environment["HOME"] = str(files.root)
    return environment


def launch_subprocess(files: RunnerFiles, env: Callable[..., dict[str, str]], api_url: str,
                      timeout_s: float = TIMEOUT_S) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "entrypoint.py")], cwd=files.workspace,
                          env=runner_environment(files, env, api_url), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout_s)
    return proc.returncode, proc.stdout


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with scenarios.new_github(prefix="/api/v3") as fake:  # GHES-style prefix: GITHUB_API_URL is honoured
        yield fake


@pytest.fixture
def action(tmp_path: Path, github: FakeGitHub) -> scenarios.Action:
    return scenarios.Action(lambda files, env: launch_subprocess(files, env, github.url), tmp_path, github)


def test_failed_pull_request_sets_outputs_summary_annotations_and_one_sticky_comment(action: scenarios.Action) -> None:
    scenarios.failed_pull_request(action)


def test_fork_pull_request_warns_and_keeps_the_body_in_a_file(action: scenarios.Action) -> None:
    scenarios.fork_pull_request(action)


def test_push_event_writes_summary_and_outputs_without_commenting(action: scenarios.Action) -> None:
    scenarios.push_event(action)


def test_spec_error_is_annotated_at_its_line_and_exits_2(action: scenarios.Action) -> None:
    scenarios.spec_error(action)


def test_paths_resolve_against_workspace_and_working_directory(action: scenarios.Action) -> None:
    scenarios.working_directory(action)


def test_exit_code_follows_fail_on(action: scenarios.Action) -> None:
    scenarios.exit_codes(action)


def test_rate_limits_are_waited_out_then_the_comment_is_posted(action: scenarios.Action, github: FakeGitHub) -> None:
    scenarios.write_project(action.root / "ws", "passed")
    github.fail_next("POST", r"/comments$", 429, headers={"retry-after": "1"}, message="API rate limit exceeded")
    github.fail_next("GET", r"/comments$", 403, headers={"retry-after": "0"},
                     message="You have exceeded a secondary rate limit. Please wait a few minutes.")
    run = action.run()
    assert run.code == 0, run.log
    assert len(github.comments_on(scenarios.REPO, scenarios.PR)) == 1
    [comment] = github.comments_on(scenarios.REPO, scenarios.PR)
    assert run.outputs["comment-url"].endswith(f"#issuecomment-{comment['id']}")
    posts = [r.path for r in github.requests("POST")]
    assert posts.count(f"/repos/{scenarios.REPO}/issues/{scenarios.PR}/comments") == 2


def test_a_comment_failure_is_a_warning_not_a_changed_exit_code(action: scenarios.Action, github: FakeGitHub) -> None:
    scenarios.write_project(action.root / "ws", "passed")
    github.fail_next("GET", r"/comments$", 404, message="Not Found")
    run = action.run()
    assert run.code == 0
    [warning] = [c for c in run.commands if c.name == "warning"]
    assert "HTTP 404" in warning.data
    assert run.outputs["comment-url"] == "" and run.outputs["comment-file"] == "evalgate-results.comment.md"


def test_a_huge_report_is_shortened_to_fit_a_comment(action: scenarios.Action, github: FakeGitHub) -> None:
    """Hundreds of failing items with long outputs: details shrink first, the body stays postable."""
    import json

    folder = action.root / "ws"
    scenarios.write_project(folder, "failed")
    long_text = ("a long regressed answer with <b>markup</b> and @someone " * 40).strip()
    rows = [{"id": f"item-{n}-" + "x" * 300, "input": "q" * 2000, "output": {"text": long_text}} for n in range(300)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = (folder / "evalgate.yaml").read_text()
    spec += "".join(f"  - type: includes\n    value: word{n}\n    threshold: 1\n" for n in range(200))
    (folder / "evalgate.yaml").write_text(spec)
    run = action.run()
    assert run.code == 1, run.log[-2000:]
    [comment] = github.comments_on(scenarios.REPO, scenarios.PR)
    assert len(comment["body"].encode()) <= 65_536
    assert "Shortened to fit" in comment["body"]
    assert "[job summary](https://github.com/octo/agent/actions/runs/4242)" in comment["body"]
    assert comment["body"].count("<details>") == comment["body"].count("</details>")
    assert len(run.summary.encode()) <= 1024 * 1024
    assert "called_tool:get_weather" in comment["body"]


def test_any_answer_github_gives_leaves_the_exit_code_alone(action: scenarios.Action, github: FakeGitHub) -> None:
    """A proxy's HTML page instead of JSON: a warning, the outputs, the exit code of the verdict."""
    scenarios.write_project(action.root / "ws", "failed")
    github.fail_next("GET", r"/comments$", 200, raw="<html><body>502 Bad Gateway</body></html>")
    run = action.run()
    assert run.code == 1, run.log
    warnings = [c for c in run.commands if c.name == "warning"]
    assert [c.properties["title"] for c in warnings] == ["evalgate: no PR comment", "evalgate: threshold missed"]
    assert "JSONDecodeError" in warnings[0].data
    assert [c.properties["title"] for c in run.commands if c.name == "error"] == ["evalgate: gate failed"]
    assert run.outputs["verdict"] == "failed" and run.outputs["comment-url"] == ""


def test_a_validation_failure_without_reasons_is_retried_shorter(action: scenarios.Action,
                                                                 github: FakeGitHub) -> None:
    scenarios.write_project(action.root / "ws", "passed")
    github.fail_next("POST", r"/comments$", 422, message="Validation Failed")
    run = action.run()
    assert run.code == 0, run.log
    [comment] = github.comments_on(scenarios.REPO, scenarios.PR)
    assert run.outputs["comment-url"] == comment["html_url"]


def test_the_token_is_not_handed_to_the_code_under_test(action: scenarios.Action) -> None:
    """A `command` target runs the PR's code: it must not find the comment token in its environment."""
    import json

    folder = action.root / "ws"
    scenarios.write_project(folder, "passed")
    probe = "import json, os; print(json.dumps({'text': json.dumps(dict(os.environ))}))"
    spec = (folder / "evalgate.yaml").read_text().replace(
        "  type: recorded\n", f"  type: command\n  run: {json.dumps([sys.executable, '-c', probe])}\n")
    (folder / "evalgate.yaml").write_text(spec)
    run = action.run()
    results = (folder / "evalgate-results.json").read_text()
    assert "GITHUB_REPOSITORY" in results, run.log  # the probe ran and saw the environment
    assert scenarios.TOKEN not in results and scenarios.TOKEN not in run.log


# ---- outages, App tokens, GitHub's limits ----


def dead_agent_project(folder: Path) -> str:
    """A spec whose http agent is not running: every item errors with connection refused."""
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    scenarios.write_project(folder, "passed")
    spec = (folder / "evalgate.yaml").read_text().replace(
        "  type: recorded\n", f"  type: http\n  url: http://127.0.0.1:{port}/agent\n"
        "  retries: {attempts: 2, backoff_s: 0.01}\n").replace("max_errors: 5", "max_errors: 0")
    (folder / "evalgate.yaml").write_text(spec)
    return f"http://127.0.0.1:{port}"


def test_a_dead_agent_is_told_apart_from_a_regression(action: scenarios.Action, github: FakeGitHub) -> None:
    where = dead_agent_project(action.root / "ws")
    run = action.run()
    assert run.code == 4, run.log
    outputs = scenarios.assert_outputs_complete(run)
    assert outputs["verdict"] == "failed" and outputs["failure-reason"] == "errors" and outputs["passed"] == "false"
    headline = f"could not evaluate: 1 of 1 items errored: connection refused at {where}"
    shown = headline.replace("://", ":&#8203;//")  # Markdown shows a URL in untrusted text, never links it
    [comment] = github.comments_on(scenarios.REPO, scenarios.PR)
    assert shown in comment["body"].splitlines()[1]  # the line after the marker
    assert shown in run.summary
    [error] = [c for c in run.commands if c.name == "error"]
    assert error.properties["title"] == "evalgate: could not evaluate" and headline in error.data
    assert not list(run.base.rglob("*.items.jsonl"))
    assert action.run({"fail-on": "never"}).code == 0


def test_a_comment_key_holding_a_header_value_keeps_one_comment(tmp_path: Path, github: FakeGitHub) -> None:
    """`${STAGE}` in a header makes its value a secret, and `comment-key: ${{ matrix.stage }}` holds it: the
    marker posted was masked by the body's redaction, so no run found it again and each posted one more."""
    folder = tmp_path / "ws"
    dead_agent_project(folder)
    spec = (folder / "evalgate.yaml").read_text()
    (folder / "evalgate.yaml").write_text(spec.replace("  retries:", "  headers: {X-Stage: '${STAGE}'}\n  retries:"))
    action = scenarios.Action(lambda files, env: launch_subprocess(files, lambda **p: {**env(**p), "STAGE": "staging"},
                                                                   github.url), tmp_path, github)
    for _ in range(2):
        run = action.run({"comment-key": "weather-staging"})
        assert run.code == 4, run.log
    [comment] = github.comments_on(scenarios.REPO, scenarios.PR)
    assert comment["body"].startswith("<!-- evalgate:weather -->\n") and "staging" not in comment["body"]
    assert run.outputs["comment-url"] == comment["html_url"]


def test_a_spec_name_longer_than_a_comment_keeps_one_comment(action: scenarios.Action, github: FakeGitHub) -> None:
    """The marker held the whole name: the report cut to fit a comment lost its marker line with the
    name, no run found the comment again, and every run posted another."""
    scenarios.write_project(action.root / "ws", "passed", name="evals " * 14_000)
    for _ in range(2):
        run = action.run()
        assert run.code == 0, run.log[-2000:]
    [comment] = github.comments_on(scenarios.REPO, scenarios.PR)
    assert comment["body"].startswith("<!-- evalgate:evals-evals-") and len(comment["body"].encode()) <= 65_536
    assert run.outputs["comment-url"] == comment["html_url"]


def test_an_app_token_updates_its_one_comment(action: scenarios.Action, github: FakeGitHub) -> None:
    """An installation token cannot call GET /user: GraphQL viewer names it, so no duplicate."""
    github.add_token("ghs_app_installation", "evalgate-ci[bot]", integration=True)
    scenarios.write_project(action.root / "ws", "passed")
    scenarios.seed_other_comments(github, "weather")
    others = {c["id"]: c["body"] for c in github.comments_on(scenarios.REPO, scenarios.PR)}
    for _ in range(2):
        run = action.run(token="ghs_app_installation")
        assert run.code == 0, run.log
    ours = [c for c in github.comments_on(scenarios.REPO, scenarios.PR) if c["id"] not in others]
    assert len(ours) == 1 and ours[0]["user"]["login"] == "evalgate-ci[bot]"
    assert {c["id"]: c["body"] for c in github.comments_on(scenarios.REPO, scenarios.PR) if c["id"] in others} == others
    assert [r.path for r in github.requests("POST")].count("/api/graphql") == 2  # GHES: beside /api/v3
    assert not any(r.path == "/user" for r in github.requests())


def test_comment_author_covers_a_token_that_cannot_ask(action: scenarios.Action, github: FakeGitHub) -> None:
    github.add_token("ghs_no_graphql", "evalgate-ci[bot]", integration=True, graphql=False)
    scenarios.write_project(action.root / "ws", "passed")
    blind = action.run(token="ghs_no_graphql")
    assert blind.code == 0
    [warning] = [c for c in blind.commands if c.name == "warning"]
    assert "comment-author" in warning.data and github.comments_on(scenarios.REPO, scenarios.PR) == []
    for _ in range(2):
        assert action.run({"comment-author": "evalgate-ci[bot]"}, token="ghs_no_graphql").code == 0
    assert len(github.comments_on(scenarios.REPO, scenarios.PR)) == 1


def launch_in_process(waits: list[float]) -> scenarios.Launcher:
    """The entrypoint's `action()` in this process, with GitHub's waits recorded instead of slept."""
    import contextlib
    import io

    from evalgate.github.main import action, github_http
    from evalgate.github.workflow import Log

    def launch(files: RunnerFiles, env: Callable[..., dict[str, str]]) -> tuple[int, str]:
        environment = env(workspace=str(files.workspace), output=str(files.output), summary=str(files.summary),
                          event_path=str(files.event), api_url=launch.api_url)  # type: ignore[attr-defined]
        stream = io.StringIO()
        here = os.getcwd()
        try:
            with contextlib.redirect_stdout(stream):
                code = action(environment, Log(stream), github_http(environment), sleep=waits.append)
        finally:
            os.chdir(here)
        return code, stream.getvalue()

    return launch


def test_a_secondary_rate_limit_waits_a_minute_once_then_gives_up_with_a_warning(tmp_path: Path,
                                                                               github: FakeGitHub) -> None:
    waits: list[float] = []
    launch = launch_in_process(waits)
    launch.api_url = github.url  # type: ignore[attr-defined]
    action = scenarios.Action(launch, tmp_path, github)
    scenarios.write_project(tmp_path / "ws", "failed")
    limited = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
    github.fail_next("GET", r"/comments$", 403, message=limited, times=5)
    run = action.run()
    assert run.code == 1  # the verdict's exit code: a comment never turns a job red or green
    assert waits == [60.0]
    [warning] = [c for c in run.commands if c.name == "warning" and "comment" in c.properties.get("title", "")]
    assert "secondary rate limit" in warning.data
    assert github.comments_on(scenarios.REPO, scenarios.PR) == []


def test_a_spammed_endpoint_gets_one_post_and_a_warning(action: scenarios.Action, github: FakeGitHub) -> None:
    from fake_github import SPAMMED

    scenarios.write_project(action.root / "ws", "passed")
    github.fail_next("POST", r"/comments$", 422, message=SPAMMED)
    run = action.run()
    assert run.code == 0
    posts = [r.path for r in github.requests("POST")]
    assert posts.count(f"/repos/{scenarios.REPO}/issues/{scenarios.PR}/comments") == 1
    [warning] = [c for c in run.commands if c.name == "warning"]
    assert "not sent again" in warning.data


def test_a_sharded_matrix_then_a_merge_job_gives_one_comment_and_the_exit_code(action: scenarios.Action) -> None:
    scenarios.sharded_matrix(action)


def test_bad_shard_and_merge_inputs_are_refused(action: scenarios.Action) -> None:
    scenarios.write_project(action.root / "ws", "passed")
    for inputs, message in (({"shard": "5/4"}, "input `shard`"), ({"mode": "merge"}, "input `results` is needed"),
                            ({"mode": "fan-out"}, "input `mode` must be run or merge")):
        run = action.run(inputs)
        assert run.code == 2, run.log
        [error] = [c for c in run.commands if c.name == "error"]
        assert message in error.data
    nothing = action.run({"mode": "merge", "results": "shards/*.json"})
    assert nothing.code == 2
    [error] = [c for c in nothing.commands if c.name == "error"]
    assert "no files match `results`: shards/*.json" in error.data


def test_the_merge_job_compares_the_merged_run_with_the_baseline_and_shards_do_not(action: scenarios.Action) -> None:
    folder = action.root / "ws"
    scenarios.write_project(folder, "passed")
    base = action.run({"results-path": "base.json"})
    assert base.code == 0, base.log
    for index in (1, 2):
        run = action.run({"shard": f"{index}/2", "results-path": f"shards/shard-{index}.json", "baseline": "base.json"})
        assert run.code == 0, run.log
        assert "comparison" not in json.loads((folder / f"shards/shard-{index}.json").read_text())
    merged = action.run({"mode": "merge", "results": "shards/*.json", "results-path": "merged.json",
                         "baseline": "base.json"})
    assert merged.code == 0, merged.log
    results = json.loads((folder / "merged.json").read_text())
    assert results["comparison"]["regressions"] == 0 and results["verdict"] == "passed"
    assert merged.outputs["regressions"] == "0"


def test_a_results_path_that_cannot_be_written_is_a_file_error_not_a_bug(action: scenarios.Action) -> None:
    """`results-path: out/` (a folder): refused before the run, exit 2, said as what it is."""
    scenarios.write_project(action.root / "ws", "passed")
    (action.root / "ws" / "outdir").mkdir()
    run = action.run({"results-path": "outdir"})
    assert run.code == 2, run.log
    [error] = [c for c in run.commands if c.name == "error"]
    assert "could not write or read a file" in error.data and "is a directory" in error.data
    assert "outdir (input `results-path`)" in error.data and "bug" not in error.data


def test_the_runs_own_warnings_are_annotated(action: scenarios.Action) -> None:
    from fake_agent import FakeServer

    folder = action.root / "ws"
    folder.mkdir(parents=True)
    with FakeServer() as agent:
        (folder / "evalgate.yaml").write_text(
            "version: 1\ndata: [{id: q1, input: 'weather in Paris?'}]\n"
            f"target:\n  type: http\n  url: {agent.url}/agent\n  cache: {{dir: .cache}}\n"
            "  response: {text: output.text, tool_calls: output.tool_calls}\n"
            "gates:\n  - type: called_tool\n    tool: get_weather\n")
        (folder / ".cache").write_text("a file where the cache's folder should be")
        run = action.run()
    assert run.code == 0, run.log
    [warning] = [c for c in run.commands if c.properties.get("title") == "evalgate: warning"]
    assert warning.name == "warning" and "could not keep 1 replies" in warning.data


def test_the_merge_job_annotates_the_shards_warnings_saying_whose(action: scenarios.Action) -> None:
    """A shard's warning is in its own job's log, where nobody looks: the merge job names it, and
    which shards gave it (a count in it is that shard's, not the run's)."""
    from fake_agent import FakeServer

    folder = action.root / "ws"
    folder.mkdir(parents=True)
    with FakeServer() as agent:
        # q0 falls in shard 1, q1 and q2 in shard 2: their caches keep 1 and 2 replies less
        (folder / "evalgate.yaml").write_text(
            "version: 1\ndata: [{id: q0, input: 'weather in Paris?'}, {id: q1, input: 'and Oslo?'},"
            " {id: q2, input: 'and Lima?'}]\n"
            f"target:\n  type: http\n  url: {agent.url}/agent\n  cache: {{dir: .cache}}\n"
            "  response: {text: output.text, tool_calls: output.tool_calls}\n"
            "gates:\n  - type: called_tool\n    tool: get_weather\n")
        (folder / ".cache").write_text("a file where the cache's folder should be")
        for index in (1, 2):
            shard = action.run({"shard": f"{index}/2", "results-path": f"shards/shard-{index}.json"})
            assert shard.code == 0, shard.log
    merged = action.run({"mode": "merge", "results": "shards/*.json", "results-path": "merged.json"})
    assert merged.code == 0, merged.log
    warnings = [c.data for c in merged.commands if c.properties.get("title") == "evalgate: warning"]
    assert len(warnings) == 2
    assert warnings[0].startswith("shard 1 of 2: ") and "could not keep 1 replies" in warnings[0]
    assert warnings[1].startswith("shard 2 of 2: ") and "could not keep 2 replies" in warnings[1]
    results = json.loads((folder / "merged.json").read_text())
    assert results["summary"]["warnings"] == warnings


def test_a_shard_files_name_cannot_start_a_workflow_command(action: scenarios.Action) -> None:
    """An artifact's file name is anyone's text: `##[warning]` in it must not become an annotation."""
    folder = action.root / "ws"
    scenarios.write_project(folder, "passed")
    for index in (1, 2):
        assert action.run({"shard": f"{index}/2", "results-path": f"shards/shard-{index}.json"}).code == 0
    (folder / "shards/shard-2.json").rename(folder / "shards/##[warning]pwned by a file name.json")
    merged = action.run({"mode": "merge", "results": "shards/*.json", "results-path": "merged.json"})
    assert merged.code == 0, merged.log
    assert "##[warning]pwned by a file name.json" in merged.log  # printed, as plain text
    scenarios.assert_no_injection(merged, printed=False)


def test_a_nan_average_is_null_in_the_scores_output_not_a_crash(action: scenarios.Action) -> None:
    """A scorer's NaN is kept (as Mastra keeps it) and written as null: the outputs say so too."""
    folder = action.root / "ws"
    folder.mkdir(parents=True)
    (folder / "nan.py").write_text("def score(item, run):\n    return float('nan')\n")
    (folder / "evalgate.yaml").write_text(
        "version: 1\ndata: [{id: q1, input: hi, output: hello}]\ntarget: {type: recorded}\n"
        "gates: [{type: includes, value: hello}]\nscorers: [{type: python, function: 'nan:score'}]\n")
    run = action.run()
    assert run.code == 0, run.log
    assert json.loads(run.outputs["scores"]) == {"python:score": None}
    assert run.outputs["verdict"] == "passed" and run.outputs["results-path"]


def test_the_action_runs_its_items_with_the_start_up_heap_frozen(action: scenarios.Action) -> None:
    """The entrypoint is the command's own process: what its start-up built is frozen before the first item
    (evalgate/infra/heap.py; test_heap.py has the CLI's and a library caller's)."""
    from test_heap import frozen_during_the_run, project

    folder = action.root / "ws"
    folder.mkdir(parents=True)
    project(folder)
    run = action.run()
    assert run.code == 0, run.log
    assert frozen_during_the_run(folder) > 10_000


def test_a_secret_cut_by_the_logged_excerpt_is_redacted_before_the_cut(action: scenarios.Action) -> None:
    """The failing item's output is cut for the log: cutting first would leave the secret's head."""
    from evalgate.github.main import LOGGED_CHARS

    folder = action.root / "ws"
    scenarios.write_project(folder, "passed")
    row = {"id": "leaky", "input": "q", "output": {"text": "A" * (LOGGED_CHARS - 15) + scenarios.TOKEN,
                                                   "tool_calls": []}}  # fails the called_tool gate
    with (folder / "cases.jsonl").open("a") as handle:
        handle.write(json.dumps(row) + "\n")
    run = action.run()
    assert run.code == 1, run.log
    assert "A" * 100 in run.log and scenarios.TOKEN[:8] not in run.log


def test_a_spec_errors_summary_shows_control_and_bidi_characters_as_escapes(action: scenarios.Action) -> None:
    folder = action.root / "ws"
    scenarios.write_project(folder, "passed")
    (folder / "cases.jsonl").write_text(json.dumps({"input": "q", "evil\u202e<b>@octocat\u0007key": 1}) + "\n")
    run = action.run()
    assert run.code == 2, run.log
    assert "unknown key" in run.summary or "extra" in run.summary.lower()
    assert "\u202e" not in run.summary and "\u0007" not in run.summary and "@octocat" not in run.summary


def test_a_renamed_repository_keeps_one_sticky_comment(action: scenarios.Action, github: FakeGitHub) -> None:
    """GITHUB_REPOSITORY still names the old repository: 301/307 to `/repositories/{id}` are followed,
    the first run creates the comment there and the second updates it."""
    scenarios.write_project(action.root / "ws", "passed")
    github.rename(scenarios.REPO, "octo/agent-renamed", repo_id=99)
    first = action.run()
    second = action.run()
    assert (first.code, second.code) == (0, 0), second.log
    [comment] = github.comments_on("octo/agent-renamed", scenarios.PR)
    assert first.outputs["comment-url"] == second.outputs["comment-url"] == comment["html_url"]
    assert "PR comment updated" in second.log
    assert not [c for c in first.commands + second.commands if c.name == "warning"]
    moved = [(r.method, r.path) for r in github.requests() if r.path.startswith("/repositories/99/")]
    assert {m for m, _ in moved} == {"GET", "POST", "PATCH"}


def test_a_redirect_loop_is_a_warning_and_the_verdict_keeps_the_exit_code(action: scenarios.Action,
                                                                          github: FakeGitHub) -> None:
    scenarios.write_project(action.root / "ws", "failed")
    github.redirect_next("GET", r"/comments$", 302, "{url}{path}?{query}", times=10)
    run = action.run()
    assert run.code == 1, run.log  # the verdict's exit code, as for any other GitHub failure
    [warning] = [c for c in run.commands if c.properties.get("title") == "evalgate: no PR comment"]
    assert "HTTP 302" in warning.data and "redirect loop" in warning.data
    assert run.outputs["verdict"] == "failed" and run.outputs["comment-url"] == ""
    assert github.comments_on(scenarios.REPO, scenarios.PR) == []


def test_a_cancelled_job_exits_143_with_what_finished_written(tmp_path: Path, github: FakeGitHub) -> None:
    # A cancelled job's step gets SIGTERM: the Action writes the finished items and exits 128 + 15,
    # as the CLI does (it used to say 130, Ctrl-C's code, whatever the signal).
    import signal
    import time

    marker = tmp_path / "agent-is-hanging"

    def launch_and_cancel(files: RunnerFiles, env: Callable[..., dict[str, str]]) -> tuple[int, str]:
        proc = subprocess.Popen([sys.executable, str(REPO_ROOT / "entrypoint.py")], cwd=files.workspace,
                                env=runner_environment(files, env, github.url), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + TIMEOUT_S
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=TIMEOUT_S)
        return proc.returncode, out

    action = scenarios.Action(launch_and_cancel, tmp_path, github)
    folder = action.root / "ws"
    scenarios.write_project(folder, "passed")
    agent = folder / "agent.py"
    agent.write_text(
        "import json, pathlib, sys, time\n"
        "item = json.load(sys.stdin)\n"
        "if item['id'] == 'slow':\n"
        f"    pathlib.Path({str(marker)!r}).touch()\n"
        "    time.sleep(60)\n"
        "print(json.dumps({'text': 'Sunny in Brooklyn', 'tool_calls': [{'name': 'get_weather'}]}))\n"
    )
    spec = (folder / "evalgate.yaml").read_text().replace(
        "  type: recorded\n", f"  type: command\n  run: {json.dumps([sys.executable, str(agent)])}\n")
    (folder / "evalgate.yaml").write_text(spec + "concurrency: 1\n")
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": i, "input": f"weather {i}"}) + "\n"
                                                for i in ("first", "slow", "never")))
    run = action.run()
    assert run.code == 143, run.log
    assert "evalgate was cancelled" in run.log
    results = json.loads((folder / "evalgate-results.json").read_text())
    assert results["summary"]["interrupted"] is True
    assert [i["id"] for i in results["items"]] == ["first"]


# ---- the runner's variables at odd places ----


def with_variables(tmp_path: Path, github: FakeGitHub, variables: Callable[[RunnerFiles], dict[str, str]],
                   timeout_s: float = TIMEOUT_S) -> scenarios.Action:
    """The Action as the runner runs it, with some of the runner's variables replaced."""
    def launch(files: RunnerFiles, env: Callable[..., dict[str, str]]) -> tuple[int, str]:
        def changed(**paths: str) -> dict[str, str]:
            return {**env(**paths), **variables(files)}
        return launch_subprocess(files, changed, github.url, timeout_s)

    return scenarios.Action(launch, tmp_path, github)


@pytest.mark.parametrize("bad_input", [{}, {"fail-on": "sometimes"}])
def test_a_github_output_that_cannot_be_written_is_an_error_naming_it(tmp_path: Path, github: FakeGitHub,
                                                                      bad_input: dict[str, str]) -> None:
    # GITHUB_OUTPUT a directory (or a full disk) used to end in a traceback and exit 1, a passing
    # verdict's outputs lost without a word about where.
    action = with_variables(tmp_path, github, lambda files: {"GITHUB_OUTPUT": str(files.file_commands)})
    scenarios.write_project(action.root / "ws", "passed")
    run = action.run(bad_input)
    assert run.code == 2, run.log
    assert "Traceback" not in run.log
    errors = [c for c in run.commands if c.name == "error"]
    assert "GITHUB_OUTPUT" in errors[-1].data and "is a directory" in errors[-1].data.lower()
    assert errors[-1].properties["title"] == "evalgate: file error"
    assert len(errors) == (2 if bad_input else 1)


def test_a_job_summary_that_cannot_be_written_fails_the_step_and_the_passed_output(tmp_path: Path,
                                                                                   github: FakeGitHub) -> None:
    # GITHUB_STEP_SUMMARY a directory: the step exited 2 but `passed` said true (the verdict's, set
    # before the summary failed), and the error named only the path, not the variable.
    action = with_variables(tmp_path, github, lambda files: {"GITHUB_STEP_SUMMARY": str(files.workflow)})
    scenarios.write_project(action.root / "ws", "passed")
    run = action.run()
    assert run.code == 2, run.log
    outputs = scenarios.assert_outputs_complete(run)
    assert outputs["verdict"] == "passed" and outputs["passed"] == "false"
    [error] = [c for c in run.commands if c.name == "error"]
    assert "GITHUB_STEP_SUMMARY" in error.data and "bug" not in error.data


def test_an_event_whose_pull_request_is_a_list_still_comments_on_its_number(tmp_path: Path,
                                                                           github: FakeGitHub) -> None:
    # A hand-made event with `"pull_request": [7]` made the comment step crash: exit 3, "a bug in
    # evalgate", instead of the verdict's exit code and the comment on the event's `number`.
    def odd_event(files: RunnerFiles) -> dict[str, str]:
        files.event.write_text(json.dumps({"number": 7, "pull_request": [7]}))
        return {}

    action = with_variables(tmp_path, github, odd_event)
    scenarios.write_project(action.root / "ws", "failed")
    run = action.run({"baseline": "auto"})
    assert run.code == 1, run.log
    assert scenarios.assert_outputs_complete(run)["verdict"] == "failed"
    assert "internal error" not in run.log and len(github.comments_on(scenarios.REPO, scenarios.PR)) == 1


@pytest.mark.parametrize("kind", ["fifo", "nested"])
def test_an_event_file_that_is_no_event_publishes_the_verdict_without_a_comment(tmp_path: Path, github: FakeGitHub,
                                                                                 kind: str) -> None:
    # GITHUB_EVENT_PATH a FIFO nobody writes to blocked the step until the job's timeout; an event
    # nested 100,000 deep ended in a RecursionError traceback and exit 1 before any input was read.
    def odd_event(files: RunnerFiles) -> dict[str, str]:
        files.event.unlink()
        if kind == "fifo":
            os.mkfifo(files.event)
        else:
            files.event.write_text("[" * 100_000 + "]" * 100_000)
        return {}

    action = with_variables(tmp_path, github, odd_event, timeout_s=30)
    scenarios.write_project(action.root / "ws", "failed")
    run = action.run()
    assert run.code == 1, run.log
    assert scenarios.assert_outputs_complete(run)["verdict"] == "failed"
    assert "Traceback" not in run.log and github.comments_on(scenarios.REPO, scenarios.PR) == []
    [warning] = [c for c in run.commands if c.name == "warning" and "PR comment" in c.data]
    shown = "is not a file" if kind == "fifo" else "is not a JSON event"
    assert "pull_request event, but GITHUB_EVENT_PATH (" in warning.data and shown in warning.data, warning.data


def test_a_pull_request_job_whose_event_cannot_be_read_says_why_there_is_no_comment(tmp_path: Path,
                                                                                   github: FakeGitHub) -> None:
    # Without its event the job cannot tell which pull request to comment on: it said nothing about it.
    def no_event(files: RunnerFiles) -> dict[str, str]:
        files.event.unlink()
        return {}

    action = with_variables(tmp_path, github, no_event)
    scenarios.write_project(action.root / "ws", "passed")
    run = action.run()
    assert run.code == 0, run.log
    [warning] = [c for c in run.commands if c.name == "warning"]
    assert warning.properties["title"] == "evalgate: no PR comment"
    assert "GITHUB_EVENT_PATH (" in warning.data and "cannot be read: No such file or directory" in warning.data
    assert github.comments_on(scenarios.REPO, scenarios.PR) == []
    pushed = action.run(event_name="push")  # a push has no pull request to comment on: nothing to say
    assert not [c for c in pushed.commands if c.name == "warning"], pushed.log


@pytest.mark.parametrize("pattern", [".", "./", "/"])
def test_a_results_pattern_naming_a_folder_is_no_match_not_a_bug(action: scenarios.Action, pattern: str) -> None:
    # `results: .` raised IndexError in the glob (exit 3, "a bug in evalgate"), `./` AttributeError.
    scenarios.write_project(action.root / "ws", "passed")
    run = action.run({"mode": "merge", "results": pattern})
    assert run.code == 2, run.log
    [error] = [c for c in run.commands if c.name == "error"]
    assert f"no files match `results`: {pattern}" in error.data and "bug" not in error.data


@pytest.mark.parametrize(("variables", "inputs", "named"), [
    ({"GITHUB_WORKSPACE": "missing"}, {}, "GITHUB_WORKSPACE"),
    ({"GITHUB_WORKSPACE": "a-file"}, {}, "GITHUB_WORKSPACE"),
    ({}, {"working-directory": "w" * 5000}, "input `working-directory`"),
])
def test_a_workspace_or_working_directory_that_is_no_folder_is_named(tmp_path: Path, github: FakeGitHub,
                                                                     variables: dict[str, str],
                                                                     inputs: dict[str, str], named: str) -> None:
    # A missing GITHUB_WORKSPACE was reported as "working-directory . does not exist", an input the user
    # never set; a working-directory too long for the file system as a file that could not be read.
    def workspace(files: RunnerFiles) -> dict[str, str]:
        (files.root / "a-file").write_text("not a folder")
        return {name: str(files.root / value) for name, value in variables.items()}

    action = with_variables(tmp_path, github, workspace)
    scenarios.write_project(action.root / "ws", "passed")
    run = action.run(inputs)
    assert run.code == 2, run.log
    [error] = [c for c in run.commands if c.name == "error"]
    assert error.data.startswith(named) and error.properties["title"] == "evalgate: bad input"
    assert len(error.data) < 1000 and scenarios.assert_outputs_complete(run)["passed"] == "false"


def test_an_api_url_that_is_no_web_address_is_named_in_the_comment_warning(tmp_path: Path,
                                                                           github: FakeGitHub) -> None:
    # GITHUB_API_URL=ftp://x: the client tried for 15 s, then the warning said the token's account was
    # unknown and to set `comment-author`, sending the user after the wrong input.
    action = with_variables(tmp_path, github, lambda files: {"GITHUB_API_URL": "ftp://x"})
    scenarios.write_project(action.root / "ws", "failed")
    run = action.run({"baseline": "auto"})
    assert run.code == 1, run.log
    [warning] = [c for c in run.commands if c.name == "warning" and c.properties["title"] == "evalgate: no PR comment"]
    assert "GITHUB_API_URL (ftp://x) is not an http(s) address" in warning.data
    assert "comment-author" not in warning.data
    [notice] = [c for c in run.commands if c.name == "notice"]
    assert "GITHUB_API_URL" in notice.data and github.requests() == []


@pytest.mark.parametrize("variable", ["GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"])
def test_a_runner_file_that_is_a_fifo_nobody_reads_is_an_error_not_a_hang(tmp_path: Path, github: FakeGitHub,
                                                                          variable: str) -> None:
    # Opening a FIFO to append waits for a reader: the step hung until the job's timeout.
    def fifo(files: RunnerFiles) -> dict[str, str]:
        os.mkfifo(files.root / "fifo")
        return {variable: str(files.root / "fifo")}

    action = with_variables(tmp_path, github, fifo, timeout_s=30)
    scenarios.write_project(action.root / "ws", "passed")
    run = action.run()
    assert run.code == 2, run.log
    errors = [c for c in run.commands if c.name == "error"]
    assert len(errors) == 1 and variable in errors[0].data and "bug" not in errors[0].data


def test_the_baseline_and_comment_lines_cannot_start_a_workflow_command(tmp_path: Path, github: FakeGitHub) -> None:
    # "evalgate: baseline from {GITHUB_SERVER_URL}/..." was printed with commands on: a line break in
    # the variable (or in GitHub's run id) started a line the runner read as `::error::`.
    import io
    import zipfile

    server = "https://github.com\n::error::pwned by the server url"
    action = with_variables(tmp_path, github, lambda files: {"GITHUB_SERVER_URL": server})
    folder = action.root / "ws"
    scenarios.write_project(folder, "passed")
    assert action.run(event_name="push").code == 0
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as handle:
        handle.write(folder / "evalgate-results.json", "evalgate-results.json")
    github.add_run(scenarios.REPO, 4242, workflow_id=99, branch="feature", conclusion="")
    github.add_run(scenarios.REPO, 510, workflow_id=99, branch="main")
    github.add_artifact(scenarios.REPO, 510, "evalgate-results", archive.getvalue())
    run = action.run({"baseline": "auto"})
    assert run.code == 0, run.log
    assert "::error::pwned by the server url/octo/agent/actions/runs/510" in run.log  # printed, as plain text
    assert not [c for c in run.commands if "pwned" in c.data], run.commands


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full, a disk that is always full")
def test_a_full_disk_under_the_job_summary_is_named(tmp_path: Path, github: FakeGitHub) -> None:
    # The write (not the open) fails on a full disk and names no file: the error said "a file".
    action = with_variables(tmp_path, github, lambda files: {"GITHUB_STEP_SUMMARY": "/dev/full"})
    scenarios.write_project(action.root / "ws", "passed")
    run = action.run()
    assert run.code == 2, run.log
    [error] = [c for c in run.commands if c.name == "error"]
    assert "No space left on device: /dev/full (GITHUB_STEP_SUMMARY)" in error.data, error.data


def test_a_spec_input_naming_no_file_says_to_set_the_input(action: scenarios.Action) -> None:
    # The CLI's advice ("give the spec's path to `evalgate run`") is no use in the Action: there is no
    # command line, there is the `spec` input.
    scenarios.write_project(action.root / "ws", "passed")
    run = action.run({"spec": "evals/missing.yaml"})
    assert run.code == 2, run.log
    [error] = [c for c in run.commands if c.name == "error"]
    assert error.data.startswith("input `spec`: there is no file evals/missing.yaml;"), error.data
    assert "evalgate run" not in error.data and "evals/missing.yaml" in run.summary
    assert scenarios.assert_outputs_complete(run)["passed"] == "false"


def test_a_large_input_does_not_leave_the_token_in_the_entrypoints_environ(action: scenarios.Action) -> None:
    # The inputs travel with the token to the re-started entrypoint; past 60 KB they did not fit the
    # pipe, the re-start was skipped, and the code under test read the token from its parent's
    # /proc/<pid>/environ (`comment-key` of 70,000 characters was enough).
    folder = action.root / "ws"
    scenarios.write_project(folder, "passed")
    probe = ("import json, os, sys; sys.stdin.read(); "
             "seen = open(f'/proc/{os.getppid()}/environ', 'rb').read().decode('utf-8', 'replace'); "
             "state = 'unread' if 'GITHUB_REPOSITORY' not in seen else 'LEAKED' if sys.argv[1] in seen else 'clean'; "
             "print(json.dumps({'text': state, 'tool_calls': [{'name': 'get_weather'}]}))")
    spec = (folder / "evalgate.yaml").read_text().replace(
        "  type: recorded\n", f"  type: command\n  run: {json.dumps([sys.executable, '-c', probe, scenarios.TOKEN])}\n")
    (folder / "evalgate.yaml").write_text(spec)
    run = action.run({"comment-key": "k" * 70_000}, event_name="push")
    assert run.code in (0, 1), run.log
    outputs = {i["output"]["text"] for i in json.loads((folder / "evalgate-results.json").read_text())["items"]}
    assert outputs == {"clean"}


# ---- bounds: what an input may say, where it may lead ----


LONG_VALUE = "bad%::" + "x" * 10_000  # `%` and `::` must stay escaped in the annotation


@pytest.mark.parametrize("inputs", [
    {"fail-on": LONG_VALUE}, {"comment": LONG_VALUE}, {"summary": LONG_VALUE}, {"concurrency": LONG_VALUE},
    {"concurrency": "9" * 10_006}, {"max-cost": LONG_VALUE}, {"max-cost": "1" * 10_006}, {"mode": LONG_VALUE},
    {"shard": LONG_VALUE}, {"shard": "1/" + "9" * 10_004}, {"spec": LONG_VALUE}, {"working-directory": LONG_VALUE},
    {"mode": "merge", "results": LONG_VALUE},
], ids=lambda inputs: "-".join(f"{k}={v[:4]}" for k, v in inputs.items()))
def test_a_long_bad_input_is_quoted_as_a_short_excerpt_with_its_length(action: scenarios.Action,
                                                                        inputs: dict[str, str]) -> None:
    # A 10 KB bad input was quoted whole in its ::error (and in the log line the runner shows): what
    # to change was lost after pages of the value.
    scenarios.write_project(action.root / "ws", "passed")
    run = action.run(inputs)
    assert run.code == 2, run.log[-3000:]
    [error] = [c for c in run.commands if c.name == "error"]
    name, value = list(inputs.items())[-1]
    assert f"`{name}`" in error.data and value[:60] in error.data, error.data[:300]
    assert f"({len(value):,} characters)" in error.data and len(error.data) < 600, error.data[:300]
    [line] = [line for line in run.log.splitlines() if line.startswith("::error")]
    assert len(line) < 800 and "bad%::" not in line  # escaped for the runner: `%25`, `%3A` in properties
    assert scenarios.assert_outputs_complete(run)["passed"] == "false"


@pytest.mark.parametrize("where", ["..", "absolute", "symlink", "nested-symlink"])
def test_a_working_directory_leading_out_of_the_workspace_is_refused(action: scenarios.Action, where: str) -> None:
    # action.yml says "within the workspace", but `..`, an absolute path or a symlink out of it ran the spec
    # found there and wrote the results there.
    outside = action.root / "elsewhere"
    for folder in (outside, action.root, action.root / "ws"):  # a spec wherever it leads: it would run
        scenarios.write_project(folder, "passed")
    (action.root / "ws" / "out").symlink_to(outside, target_is_directory=True)
    (action.root / "ws" / "deep").mkdir()
    (action.root / "ws" / "deep" / "up").symlink_to("../..", target_is_directory=True)
    given = {"..": "..", "absolute": str(outside), "symlink": "out", "nested-symlink": "deep/up/elsewhere"}[where]
    run = action.run({"working-directory": given})
    assert run.code == 2, run.log
    [error] = [c for c in run.commands if c.name == "error"]
    assert error.data.startswith("input `working-directory`") and "outside the workspace" in error.data, error.data
    assert error.properties["title"] == "evalgate: bad input"
    assert scenarios.assert_outputs_complete(run)["passed"] == "false"
    assert not (outside / "evalgate-results.json").exists() and not (action.root / "evalgate-results.json").exists()


@pytest.mark.parametrize("where", [".", "absolute", "a/b", "a/../a/b", "link-inside"])
def test_a_working_directory_inside_the_workspace_still_runs(action: scenarios.Action, where: str) -> None:
    workspace = action.root / "ws"
    scenarios.write_project(workspace, "passed")
    scenarios.write_project(workspace / "a" / "b", "passed")
    (workspace / "link-inside").symlink_to("a/b", target_is_directory=True)
    given = str(workspace) if where == "absolute" else where
    run = action.run({"working-directory": given})
    assert run.code == 0, run.log
    folder = workspace if where in (".", "absolute") else workspace / "a" / "b"
    assert (folder / "evalgate-results.json").is_file()


def test_a_working_directory_that_is_a_symlink_loop_is_no_folder_not_a_bug(action: scenarios.Action) -> None:
    # Path.resolve raised RuntimeError on the loop: exit 3, "a bug in evalgate".
    workspace = action.root / "ws"
    scenarios.write_project(workspace, "passed")
    (workspace / "a").symlink_to("b")
    (workspace / "b").symlink_to("a")
    run = action.run({"working-directory": "a"})
    assert run.code == 2, run.log
    [error] = [c for c in run.commands if c.name == "error"]
    assert error.data.startswith("input `working-directory`: a is not a folder") and "bug" not in error.data


def test_relative_runner_paths_name_the_files_of_the_directory_the_step_started_in(tmp_path: Path,
                                                                                  github: FakeGitHub) -> None:
    # A self-hosted or local runner may give GITHUB_OUTPUT & co. relative: they were opened after the
    # step changed into working-directory, so outputs and summary went to (or failed in) the wrong folder.
    variables = ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_PATH", "RUNNER_TEMP", "GITHUB_WORKSPACE")

    def launch(files: RunnerFiles, env: Callable[..., dict[str, str]]) -> tuple[int, str]:
        environment = runner_environment(files, env, github.url)
        for name in variables:
            environment[name] = os.path.relpath(environment[name], files.root)
        proc = subprocess.run([sys.executable, str(REPO_ROOT / "entrypoint.py")], cwd=files.root, env=environment,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
        return proc.returncode, proc.stdout

    action = scenarios.Action(launch, tmp_path, github)
    evals = action.root / "ws" / "evals"
    scenarios.write_project(evals, "failed")
    run = action.run({"working-directory": "evals"})
    assert run.code == 1, run.log
    assert scenarios.assert_outputs_complete(run)["verdict"] == "failed"
    assert "called_tool:get_weather" in run.summary  # the report, in the runner's file
    assert len(github.comments_on(scenarios.REPO, scenarios.PR)) == 1  # the event named the pull request
    assert (run.files.root / "runner_temp" / "evalgate").is_dir()  # the journal was under RUNNER_TEMP
    assert sorted(p.name for p in evals.iterdir()) == ["cases.jsonl", "evalgate-report.html",
                                                       "evalgate-results.comment.md", "evalgate-results.json",
                                                       "evalgate.yaml"]


def test_a_shard_edited_with_its_digest_forged_is_refused_by_name(action: scenarios.Action) -> None:
    """The merge reads only the items a shard's columns point at: an item edited past what a run writes
    (its digest recomputed) went into merged results that did not load, and the job ended in an internal
    error, "the run wrote no results file", with no summary and nothing naming the shard."""
    folder = action.root / "ws"
    scenarios.write_project(folder, "passed")
    for index in (1, 2):
        assert action.run({"shard": f"{index}/2", "results-path": f"shards/shard-{index}.json"}).code == 0
    shard = folder / "shards/shard-1.json"
    head, mark, items = shard.read_bytes().partition(b', "items": [')
    header = json.loads(head + b"}")
    lines = items[:-len(b"]}\n")].split(b",\n")
    position = next(p for p in range(len(lines)) if p not in header["shard"]["replay"]["records"])
    record = json.loads(lines[position])
    record["reasons"] = {"called_tool": 5}  # a reason is text
    lines[position] = json.dumps(record, separators=(",", ":")).encode()
    body = b",\n".join(lines)
    header["shard"]["replay"]["items_sha256"] = hashlib.sha256(body).hexdigest()
    shard.write_bytes(json.dumps(header)[:-1].encode() + mark + body + b"]}\n")
    merged = action.run({"mode": "merge", "results": "shards/*.json", "results-path": "merged.json"})
    assert merged.code == 2, merged.log
    [error] = [c for c in merged.commands if c.name == "error"]
    assert error.properties["title"] == "evalgate: cannot merge the shards"
    assert f"shards/shard-1.json: item {record['id']!r} has a `reasons` that is not what evalgate writes" in error.data
    assert not (folder / "merged.json").exists() and merged.outputs["passed"] == "false"


def test_outputs_evalgate_words_are_not_masked_by_a_header_value(tmp_path: Path, github: FakeGitHub) -> None:
    """`${STAGE}` in a header makes its value a secret: a value of `failed` (or `true`) masked evalgate's own
    outputs, `verdict=***`, and the results file itself: `"verdict": "***"` (`true`: `"ok":***`, no JSON), so
    the job ended in an internal error, "the run wrote no results file"."""
    for stage in ("failed", "errors", "false", "true", "null"):
        root = tmp_path / stage
        dead_agent_project(root / "ws")
        spec_file = root / "ws/evalgate.yaml"
        header = "  headers: {X-Stage: '${STAGE}'}\n  retries:"
        spec_file.write_text(spec_file.read_text().replace("  retries:", header))
        action = scenarios.Action(lambda files, env, stage=stage: launch_subprocess(
            files, lambda **p: {**env(**p), "STAGE": stage}, github.url), root, github)
        run = action.run({"comment": "false"})
        assert run.code == 4, run.log
        outputs = run.outputs
        assert (outputs["verdict"], outputs["failure-reason"], outputs["passed"]) == ("failed", "errors", "false")
        assert isinstance(json.loads(outputs["scores"]), dict)  # JSON still, `null` and all
