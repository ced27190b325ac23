"""The Action's `baseline` input: a results file, or `auto` (the base branch's newest successful run's artifact,
found over the fake GitHub's Actions API); nothing found is a notice, never a red job."""

from __future__ import annotations

import contextlib
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_github import BOT, FakeGitHub
from runner_sim import RunnerFiles, action_env, parse_outputs, process_log, pull_request_event

from evalgate.github.main import action, github_http
from evalgate.github.workflow import Log

REPO = "octo/agent"
PR = 7
TOKEN = "ghs_actions_token_0123456789"
NO_ACTIONS = "ghs_no_actions_read_0123"
WORKFLOW = 99
THIS_RUN = 4242  # GITHUB_RUN_ID in runner_sim

SPEC = """\
version: 1
name: weather
data: cases.jsonl
target:
  type: recorded
scorers:
  - type: includes
    value: Brooklyn
    threshold: 0.3
"""


def write_project(folder: Path, failing: int) -> None:
    """60 recorded answers, `failing` of them without "Brooklyn" (a threshold of 0.3 passes either way)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evalgate.yaml").write_text(SPEC)
    rows = [{"id": f"q{i}", "input": f"weather {i}?",
             "output": "Rain, sorry @octocat" if i < failing else "Sunny in Brooklyn"} for i in range(60)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def base_results_zip(tmp_path: Path) -> bytes:
    """The base branch's results, made by running evalgate there, zipped as upload-artifact does."""
    from evalgate.api import run_spec

    folder = tmp_path / "base"
    write_project(folder, failing=0)
    run_spec(folder / "evalgate.yaml", output=folder / "evalgate-results.json")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(folder / "evalgate-results.json", "evalgate-results.json")
    return buffer.getvalue()


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(prefix="/api/v3")
    fake.add_token(TOKEN, BOT, integration=True)
    fake.add_token(NO_ACTIONS, BOT, integration=True, actions_read=False)
    fake.add_pull(REPO, PR)
    fake.add_run(REPO, THIS_RUN, workflow_id=WORKFLOW, branch="feature", conclusion="")
    with fake:
        yield fake


def run_action(tmp_path: Path, github: FakeGitHub, inputs: dict[str, str], *, token: str = TOKEN,
               event_name: str = "pull_request", failing: int = 30,
               monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, dict[str, str], RunnerFiles]:
    files = RunnerFiles(tmp_path / "runner").make(
        pull_request_event(REPO, PR) if event_name == "pull_request" else {"ref": "refs/heads/main"})
    write_project(files.workspace, failing=failing)
    env = action_env({"github-token": token, **inputs}, workspace=str(files.workspace), output=str(files.output),
                     summary=str(files.summary), event_path=str(files.event), event_name=event_name,
                     repository=REPO, api_url=github.url)
    monkeypatch.chdir(tmp_path)  # the Action changes directory into the workspace
    stream = io.StringIO()
    http = github_http({})  # no proxy variables: loopback traffic goes straight to the fake
    try:
        with contextlib.redirect_stdout(stream):  # one log, as the container's
            code = action(env, Log(stream), http=http, sleep=lambda s: None)
    finally:
        if not isinstance(http, str):
            http.close()
    return code, stream.getvalue(), parse_outputs(files.output), files


def notices(log: str) -> list[str]:
    return [c.data for c in process_log(log) if c.name == "notice"]


def test_auto_compares_with_the_base_branch_artifact_and_fails_on_a_regression(
        tmp_path: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    data = base_results_zip(tmp_path)
    github.add_run(REPO, 500, workflow_id=WORKFLOW, branch="main", created_at="2026-01-01T00:00:00Z")
    github.add_run(REPO, 510, workflow_id=WORKFLOW, branch="main", created_at="2026-01-02T00:00:00Z")
    github.add_run(REPO, 520, workflow_id=WORKFLOW, branch="main", conclusion="failure",
                   created_at="2026-01-03T00:00:00Z")
    github.add_run(REPO, 530, workflow_id=WORKFLOW + 1, branch="main", created_at="2026-01-04T00:00:00Z")
    # a fork's pull request from its own `main`: on branch "main" too, but not the base branch's results
    github.add_run(REPO, 540, workflow_id=WORKFLOW, branch="main", created_at="2026-01-05T00:00:00Z",
                   event="pull_request")
    github.add_artifact(REPO, 540, "evalgate-results", b"a fork's results")
    github.add_artifact(REPO, 500, "evalgate-results", b"not the newest")
    github.add_artifact(REPO, 510, "evalgate-results", data)
    github.add_artifact(REPO, 520, "evalgate-results", b"a failed run")
    code, log, outputs, files = run_action(tmp_path, github, {"baseline": "auto"}, monkeypatch=monkeypatch)
    assert code == 1, log
    assert outputs["verdict"] == "failed" and outputs["regressions"] == "1" and outputs["passed"] == "false"
    results = json.loads((files.workspace / "evalgate-results.json").read_text())
    assert results["summary"]["failure_reason"] == "regression"
    assert results["threshold_results"][0]["passed"]  # 0.5 >= 0.3: only the comparison failed the verdict
    entry = results["comparison"]["entries"][0]
    assert entry["status"] == "regressed" and entry["base_average"] == 1.0 and entry["pairs"] == 60
    assert "/runs/510" in log and not notices(log)
    # the step's one error names the regressed entry at its line in the spec, with the numbers behind it
    [error] = [c for c in process_log(log) if c.name == "error"]
    assert error.properties == {"file": "evalgate.yaml", "line": "7", "title": "evalgate: regression"}
    assert error.data.startswith(
        "`includes:Brooklyn` regressed against the baseline: matched: base 1.000 → head 0.500 · Δ -0.500 [")
    summary = files.summary.read_text()
    assert "### Compared with the baseline" in summary and "### Regressions" in summary
    assert "@octocat" not in summary and "@&#8203;octocat" in summary
    # the zip came from storage on another host without the token
    assert github.state.blob_auth == [""]
    paths = [r.path for r in github.requests("GET") if "/actions/" in r.path]
    assert paths[:3] == [f"/repos/{REPO}/actions/runs/{THIS_RUN}", f"/repos/{REPO}/actions/workflows/{WORKFLOW}/runs",
                         f"/repos/{REPO}/actions/runs/510/artifacts"]


def test_auto_without_any_base_run_is_a_notice(tmp_path: Path, github: FakeGitHub,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    code, log, outputs, _ = run_action(tmp_path, github, {"baseline": "auto"}, monkeypatch=monkeypatch)
    assert code == 0, log
    assert outputs["verdict"] == "passed" and outputs["regressions"] == ""
    assert any("no successful run of this workflow on `main` yet" in n for n in notices(log))


def test_auto_with_a_token_that_may_not_read_actions_is_a_notice(tmp_path: Path, github: FakeGitHub,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    code, log, outputs, _ = run_action(tmp_path, github, {"baseline": "auto"}, token=NO_ACTIONS,
                                       monkeypatch=monkeypatch)
    assert code == 0, log
    assert any("actions: read" in n and "403" in n for n in notices(log))
    assert outputs["verdict"] == "passed" and outputs["regressions"] == ""  # no comparison, no red job
    assert NO_ACTIONS not in log


def test_auto_with_only_an_expired_artifact_is_a_notice(tmp_path: Path, github: FakeGitHub,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    github.add_run(REPO, 600, workflow_id=WORKFLOW, branch="main")
    github.add_artifact(REPO, 600, "evalgate-results", b"gone", expired=True)
    code, log, outputs, _ = run_action(tmp_path, github, {"baseline": "auto"}, monkeypatch=monkeypatch)
    assert code == 0, log
    assert any("expired" in n for n in notices(log)) and outputs["regressions"] == ""


def test_auto_with_a_run_lacking_the_named_artifact_or_a_bad_zip(tmp_path: Path, github: FakeGitHub,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    github.add_run(REPO, 700, workflow_id=WORKFLOW, branch="main")
    github.add_artifact(REPO, 700, "something-else", b"zzz")
    code, log, _, _ = run_action(tmp_path, github, {"baseline": "auto"}, monkeypatch=monkeypatch)
    assert code == 0 and any("uploaded an artifact named `evalgate-results`" in n for n in notices(log))
    github.add_artifact(REPO, 700, "evalgate-results", b"not a zip")
    code, log, _, _ = run_action(tmp_path / "again", github, {"baseline": "auto"}, monkeypatch=monkeypatch)
    assert code == 0 and any("not a zip file" in n for n in notices(log))


def test_auto_reads_a_custom_artifact_name(tmp_path: Path, github: FakeGitHub,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    github.add_run(REPO, 800, workflow_id=WORKFLOW, branch="main")
    github.add_artifact(REPO, 800, "evals-main", base_results_zip(tmp_path))
    code, log, outputs, _ = run_action(tmp_path, github, {"baseline": "auto", "baseline-artifact": "evals-main"},
                                       failing=0, monkeypatch=monkeypatch)
    assert code == 0, log
    assert outputs["regressions"] == "0" and outputs["verdict"] == "passed"


def test_push_with_auto_makes_no_comparison_and_no_notice(tmp_path: Path, github: FakeGitHub,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    code, log, outputs, _ = run_action(tmp_path, github, {"baseline": "auto"}, event_name="push",
                                       monkeypatch=monkeypatch)
    assert code == 0 and not notices(log) and outputs["regressions"] == ""
    assert not [r for r in github.requests() if "/actions/" in r.path]


def test_a_baseline_file_input_and_a_missing_or_bad_one(tmp_path: Path, github: FakeGitHub,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with zipfile.ZipFile(io.BytesIO(base_results_zip(tmp_path))) as archive:
        base = archive.read("evalgate-results.json")
    files_root = tmp_path / "runner" / "workspace"
    files_root.mkdir(parents=True)
    (files_root / "base.json").write_bytes(base)
    code, log, outputs, _ = run_action(tmp_path, github, {"baseline": "base.json"}, monkeypatch=monkeypatch)
    assert code == 1 and outputs["regressions"] == "1", log
    code, log, outputs, _ = run_action(tmp_path / "2", github, {"baseline": "missing.json"}, monkeypatch=monkeypatch)
    assert code == 0 and any("no baseline results at missing.json" in n for n in notices(log))
    bad_root = tmp_path / "3" / "runner" / "workspace"
    bad_root.mkdir(parents=True)
    (bad_root / "bad.json").write_text("{}")
    code, log, outputs, _ = run_action(tmp_path / "3", github, {"baseline": "bad.json"}, monkeypatch=monkeypatch)
    assert code == 0 and any("not an evalgate results file" in n for n in notices(log)), log
    assert outputs["verdict"] == "passed"
