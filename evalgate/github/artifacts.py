"""`baseline: auto`: the base branch's results, from the newest successful run of this workflow there.

REST, through the same client as the sticky comment (`GitHub.request`): this run's workflow, its runs on
the base branch with status success (newest first), the first of them with an unexpired artifact of the
given name, that artifact's zip, and in it the results file. Needs `actions: read`. Anything missing
(a first run, an expired artifact, a token that may not read Actions) is a `NoBaseline` with the reason:
the comparison is skipped with a notice, never a red job.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from evalgate.github.comments import CommentError, GitHub
from evalgate.infra.files import MAX_RESULTS_BYTES, atomic_writer
from evalgate.infra.net import HttpError

RUNS_LOOKED_AT = 10  # base-branch runs tried, newest first, before giving up
MAX_ZIP_BYTES = 256 * 1024 * 1024
MAX_INFLATE_RATIO = 200  # results JSON deflates 5 to 50 times; a zip bomb, about 1,000
CHUNK = 1 << 20


class NoBaseline(Exception):
    """No baseline could be found; the message says why, for a notice."""


@dataclass
class Found:
    path: Path  # the results file, extracted to a temporary folder
    run_id: int
    run_url: str
    head_sha: str
    artifact: str


def _refused(exc: CommentError, what: str) -> NoBaseline:
    if exc.status in (401, 403):
        return NoBaseline(f"the token may not read {what} (HTTP {exc.status}); give the job `permissions: "
                          "actions: read` (a fork's pull request gets a read-only token that cannot)")
    if exc.status == 404:
        return NoBaseline(f"{what} not found (HTTP 404)")
    return NoBaseline(f"GitHub answered {exc} while reading {what}")


def workflow_of(client: GitHub, repo: str, run_id: str) -> int:
    try:
        data = client.request("GET", f"/repos/{repo}/actions/runs/{quote(run_id, safe='')}").json()
    except CommentError as exc:
        raise _refused(exc, "this workflow run") from None
    workflow = data.get("workflow_id") if isinstance(data, dict) else None
    if not isinstance(workflow, int):
        raise NoBaseline("GitHub did not say which workflow this run belongs to")
    return workflow


def successful_runs(client: GitHub, repo: str, workflow_id: int, branch: str) -> list[dict[str, Any]]:
    try:
        data = client.request("GET", f"/repos/{repo}/actions/workflows/{workflow_id}/runs",
                              params={"branch": branch, "status": "success", "per_page": RUNS_LOOKED_AT}).json()
    except CommentError as exc:
        raise _refused(exc, "the workflow's runs") from None
    runs = data.get("workflow_runs") if isinstance(data, dict) else None
    if not isinstance(runs, list):
        raise NoBaseline("GitHub's list of workflow runs is not what it should be")
    # newest first, whatever order the page came in; a pull request from a fork's `main` is on "main"
    # too, but its results are not the base branch's
    runs = [r for r in runs if isinstance(r, dict) and isinstance(r.get("id"), int)
            and r.get("event") not in ("pull_request", "pull_request_target")]
    return sorted(runs, key=lambda r: (str(r.get("created_at") or ""), r["id"]), reverse=True)


def artifact_of(client: GitHub, repo: str, run_id: int, name: str) -> dict[str, Any] | None:
    """The run's artifact of this name, None when it has none; NoBaseline when only an expired one is left."""
    try:
        data = client.request("GET", f"/repos/{repo}/actions/runs/{run_id}/artifacts",
                              params={"name": name, "per_page": 100}).json()
    except CommentError as exc:
        raise _refused(exc, "the run's artifacts") from None
    artifacts = [a for a in (data.get("artifacts") if isinstance(data, dict) else None) or []
                 if isinstance(a, dict) and a.get("name") == name and isinstance(a.get("id"), int)]
    live = [a for a in artifacts if not a.get("expired")]
    if live:
        return max(live, key=lambda a: str(a.get("created_at") or ""))
    if artifacts:
        raise NoBaseline(f"the artifact `{name}` of run {run_id} has expired")
    return None


def download(client: GitHub, repo: str, artifact_id: int) -> bytes:
    """The artifact's zip. The URL is built here, on the API's host; GitHub answers with a redirect to
    storage, fetched without the token (another host: the client's own headers only)."""
    try:
        # offsite: the redirect to storage is the answer; one to the API's origin (a renamed repository) is followed
        response = client.request("GET", f"/repos/{repo}/actions/artifacts/{artifact_id}/zip", offsite=True)
    except CommentError as exc:
        if exc.status == 410:
            raise NoBaseline("the baseline artifact has expired (HTTP 410)") from None
        raise _refused(exc, "the baseline artifact") from None
    location = {k.lower(): v for k, v in response.headers.items()}.get("location")
    if response.status not in (301, 302, 303, 307, 308) or not location:
        raise NoBaseline(f"GitHub answered HTTP {response.status} without a download location for the artifact")
    try:
        status, data = client.http.download(location, max_bytes=MAX_ZIP_BYTES)
    except HttpError:  # its message would show the storage URL, signature included
        raise NoBaseline("the baseline artifact could not be downloaded from its storage") from None
    if status != 200:
        raise NoBaseline(f"the artifact storage answered HTTP {status}")
    return data


def results_from_zip(data: bytes, results_name: str, dest: Path) -> None:
    """The results file in the artifact, inflated to `dest`: the member named like `results-path`, else its
    one .json file.

    Nothing is extracted by the names the archive gives (a hostile zip may say `../..`). Inflated a megabyte
    at a time, never whole in memory, and stopped past MAX_RESULTS_BYTES or MAX_INFLATE_RATIO times its
    compressed size, whatever sizes the archive declares (a zip bomb's are lies)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise NoBaseline("the baseline artifact is not a zip file") from None
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        named = [m for m in members if Path(m.filename).name == results_name]
        candidates = named or [m for m in members if m.filename.endswith(".json")
                               and not m.filename.endswith((".items.jsonl", ".tmp"))]
        if not candidates:
            raise NoBaseline(f"the baseline artifact holds no `{results_name}` and no .json file")
        if len(candidates) > 1 and not named:
            raise NoBaseline(f"the baseline artifact holds several .json files and none named `{results_name}`")
        member = candidates[0]
        limit = min(MAX_RESULTS_BYTES, MAX_INFLATE_RATIO * max(member.compress_size, 1))
        if member.file_size > limit:
            raise NoBaseline(_too_big(member.file_size))
        with archive.open(member) as handle, atomic_writer(dest, root=dest.parent, durable=False) as out:
            written = 0
            for block in iter(lambda: handle.read(CHUNK), b""):
                written += len(block)
                if written > limit:
                    raise NoBaseline(_too_big(written))
                out.write(block)


def _too_big(size: int) -> str:
    return (f"the baseline results file inflates past {size // 2**20:,} MiB, more than {MAX_INFLATE_RATIO} times "
            f"its compressed size or {MAX_RESULTS_BYTES // 2**20:,} MiB: refused as a zip bomb")


def find_baseline(client: GitHub, *, repo: str, run_id: str, branch: str, artifact: str, results_name: str,
                  server_url: str = "https://github.com") -> Found:
    """The newest successful run of this workflow on `branch` with the artifact; its results file on disk."""
    if not branch:
        raise NoBaseline("not a pull request: there is no base branch to compare with")
    if not run_id:
        raise NoBaseline("GITHUB_RUN_ID is not set")
    workflow_id = workflow_of(client, repo, run_id)
    runs = [r for r in successful_runs(client, repo, workflow_id, branch) if str(r["id"]) != run_id]
    if not runs:
        raise NoBaseline(f"no successful run of this workflow on `{branch}` yet (the first run uploads it)")
    expired: NoBaseline | None = None
    for run in runs:
        try:
            found = artifact_of(client, repo, run["id"], artifact)
        except NoBaseline as exc:
            if "expired" not in str(exc):
                raise
            expired = exc
            continue
        if found is None:
            continue
        data = download(client, repo, found["id"])
        folder = Path(tempfile.mkdtemp(prefix="evalgate-baseline-"))
        path = folder / "baseline-results.json"
        results_from_zip(data, results_name, path)
        return Found(path, run["id"], f"{server_url}/{repo}/actions/runs/{run['id']}", str(run.get("head_sha", "")),
                     artifact)
    if expired is not None:
        raise expired
    raise NoBaseline(f"none of the last {len(runs)} successful runs on `{branch}` uploaded an artifact named "
                     f"`{artifact}`")
