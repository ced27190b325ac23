"""The Action's settings: one object parsed from the environment the runner gives a container step.

The runner passes each declared input as `INPUT_<NAME>`, upper-cased with hyphens kept
(`INPUT_GITHUB-TOKEN`), empty when not given. Paths resolve against `GITHUB_WORKSPACE`
and the `working-directory` input.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evalgate.infra.textsafe import visible
from evalgate.report.labels import FAIL_ON

TRUE = {"true", "True", "TRUE"}  # the YAML 1.2 core schema booleans, as @actions/core reads them
FALSE = {"false", "False", "FALSE"}
COMMENT_EVENTS = {"pull_request", "pull_request_target"}

DEFAULTS = {
    "spec": "evalgate.yaml",
    "fail-on": "failed",
    "comment": "true",
    "summary": "true",
    "results-path": "evalgate-results.json",
    "html-path": "evalgate-report.html",
    "working-directory": ".",
    "baseline-artifact": "evalgate-results",
    "mode": "run",
    "github-timeout": "120",
}
MODES = ("run", "merge")
MAX_EVENT_BYTES = 64 * 1024 * 1024  # GitHub caps a webhook payload at 25 MB: the event file is one
EXCERPT_CHARS = 120  # of an input a message shows: enough to recognise it; 10 KB of it would bury what to change


def excerpt(value: str, *, quote: bool = False) -> str:
    """An input as a message shows it: whole when short, else its first EXCERPT_CHARS characters, `…` and
    its length. quote: as repr, so line breaks and control characters show as escapes."""
    cut = value if len(value) <= EXCERPT_CHARS else value[:EXCERPT_CHARS] + "…"
    shown = repr(cut) if quote else cut
    return shown if cut is value else f"{shown} ({len(value):,} characters)"


class SettingsError(ValueError):
    """An input the Action cannot use; reported as an ::error and exit 2.

    The bad value is passed, never formatted by the raiser: it is quoted here, as an excerpt, for every input."""

    def __init__(self, message: str, value: str | None = None) -> None:
        super().__init__(message if value is None else f"{message}, got {excerpt(value, quote=True)}")


def read_input(env: Mapping[str, str], name: str) -> str:
    """The runner's spelling first (`INPUT_FAIL-ON`); `INPUT_FAIL_ON` too, for hand-made `docker run`s."""
    upper = name.upper()
    for key in (f"INPUT_{upper}", f"INPUT_{upper.replace('-', '_')}"):
        value = env.get(key, "").strip()
        if value:
            return value
    return DEFAULTS.get(name, "")


def runner_path(env: Mapping[str, str], name: str) -> str:
    """A file or folder the runner names (GITHUB_OUTPUT, ...), absolute against the directory the step
    started in: GitHub gives absolute paths, but a self-hosted or local runner may not, and the step
    changes into `working-directory` before it writes them. Empty stays empty: not in a runner."""
    value = env.get(name, "")
    return os.path.abspath(value) if value else ""


def parse_bool(name: str, value: str) -> bool:
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise SettingsError(f"input `{name}` must be true or false", value)


def parse_concurrency(value: str) -> int | None:
    if not value:
        return None
    try:
        number = int(value)  # also ValueError past 4,300 digits
    except ValueError:
        number = 0
    if not 1 <= number <= 1024:
        raise SettingsError("input `concurrency` must be a whole number from 1 to 1024", value)
    return number


def parse_shard_input(value: str) -> Any:
    if not value:
        return None
    from evalgate.results.shards import MAX_SHARDS, parse_shard

    try:
        return parse_shard(value)
    except ValueError:  # its message quotes the value whole, or is int()'s about 4,300 digits: the rule instead
        raise SettingsError(f"input `shard` must be I/N, shard I of N (1 <= I <= N <= {MAX_SHARDS}), e.g. 2/4",
                            value) from None


def parse_max_cost(value: str) -> float | None:
    if not value:
        return None
    try:
        number = float(value.lstrip("$"))
    except ValueError:
        raise SettingsError("input `max-cost` must be a number of US dollars", value) from None
    if not number > 0 or number == float("inf"):
        raise SettingsError("input `max-cost` must be more than 0", value)
    return number


GITHUB_TIMEOUT_MAX_S = 3600.0


def parse_github_timeout(value: str) -> float:
    """Seconds every GitHub call of one step may take in all (the comment, `baseline: auto`'s lookup)."""
    try:
        seconds = float(value.strip().removesuffix("s"))
    except ValueError:
        raise SettingsError("input `github-timeout` must be a number of seconds, e.g. 120", value) from None
    if not 0 < seconds <= GITHUB_TIMEOUT_MAX_S:
        raise SettingsError(f"input `github-timeout` must be more than 0 and at most {GITHUB_TIMEOUT_MAX_S:g} "
                            "seconds", value)
    return seconds


def parse_patterns(value: str) -> tuple[str, ...]:
    """Glob patterns, one per line or separated by commas."""
    return tuple(p.strip() for line in value.splitlines() for p in line.split(",") if p.strip())


def load_event(path: str) -> tuple[dict[str, Any], str]:
    """The event payload, or {} when there is none to read, and why not ("" when read). Only a regular
    file is read, and only so much of it: a FIFO would block the step and /dev/zero never ends; JSON
    nested too deep is none."""
    if not path:
        return {}, "is not set"
    where = visible(path)[:300]
    try:
        # O_NONBLOCK: opening a FIFO nobody writes to returns at once (a regular file ignores it)
        with open(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK)) as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return {}, f"({where}) is not a file"
            data = handle.read(MAX_EVENT_BYTES + 1)
        if len(data) > MAX_EVENT_BYTES:
            return {}, f"({where}) is larger than {MAX_EVENT_BYTES // 2**20} MB"
        event = json.loads(data)
    except OSError as exc:
        return {}, f"({where}) cannot be read: {exc.strerror or exc}"
    except (ValueError, RecursionError):
        return {}, f"({where}) is not a JSON event"
    return (event, "") if isinstance(event, dict) else ({}, f"({where}) is not a JSON object")


def is_web_address(url: str) -> bool:
    """An http(s) URL with a host, a valid port and no spaces or control characters."""
    if any(c.isspace() or not c.isprintable() for c in url):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


@dataclass(frozen=True)
class Settings:
    spec: str
    fail_on: str
    comment: bool
    summary: bool
    results_path: str
    working_directory: str
    concurrency: int | None
    comment_key: str
    comment_author: str
    workspace: Path
    event_name: str
    repository: str
    api_url: str
    server_url: str
    run_id: str
    output_file: str
    summary_file: str
    runner_temp: str = ""
    graphql_url: str = ""
    event: dict[str, Any] = field(default_factory=dict, repr=False)
    event_problem: str = ""  # why GITHUB_EVENT_PATH gave no event ("" when it did)
    token: str = field(default="", repr=False)  # never printed: repr=False keeps it out of tracebacks
    baseline: str = ""  # a results file, `auto` (the base branch's artifact), or empty: no comparison
    baseline_artifact: str = "evalgate-results"
    mode: str = "run"
    shard: Any = None  # evalgate.results.shards.Shard: this job runs one shard of a matrix
    results: tuple[str, ...] = ()  # merge mode: the shards' results files (glob patterns)
    max_cost: float | None = None  # USD cap, instead of the spec's budget.max_usd
    github_timeout_s: float = 120.0  # every GitHub call of one step, in all (`github-timeout`)
    html_path: str = "evalgate-report.html"  # `none`: no HTML report

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        fail_on = read_input(env, "fail-on")
        if fail_on not in FAIL_ON:
            raise SettingsError("input `fail-on` must be failed, scored or never", fail_on)
        mode = read_input(env, "mode")
        if mode not in MODES:
            raise SettingsError("input `mode` must be run or merge", mode)
        shard = parse_shard_input(read_input(env, "shard"))
        results = parse_patterns(read_input(env, "results"))
        if mode == "merge" and not results:
            raise SettingsError("input `results` is needed with `mode: merge`: the shards' files, e.g. shards/*.json")
        if mode == "merge" and shard is not None:
            raise SettingsError("inputs `shard` and `mode: merge` exclude each other: shards run, one job merges")
        results_path = read_input(env, "results-path")
        if shard is not None and results_path == DEFAULTS["results-path"]:
            # Every shard job would write the same name, and download-artifact's `merge-multiple`
            # keeps one file per name: each shard's own default name survives the download.
            results_path = f"evalgate-results-shard-{shard.index}-of-{shard.count}.json"
        html_path = read_input(env, "html-path")
        if shard is not None and html_path == DEFAULTS["html-path"]:
            html_path = "none"  # a shard's items only: the merge job writes the run's page
        event, event_problem = load_event(runner_path(env, "GITHUB_EVENT_PATH"))
        settings = cls(
            spec=read_input(env, "spec"),
            fail_on=fail_on,
            comment=parse_bool("comment", read_input(env, "comment")),
            summary=parse_bool("summary", read_input(env, "summary")),
            results_path=results_path,
            working_directory=read_input(env, "working-directory"),
            concurrency=parse_concurrency(read_input(env, "concurrency")),
            comment_key=read_input(env, "comment-key"),
            comment_author=read_input(env, "comment-author"),
            workspace=Path(env.get("GITHUB_WORKSPACE") or os.getcwd()).resolve(),
            event_name=env.get("GITHUB_EVENT_NAME", ""),
            repository=env.get("GITHUB_REPOSITORY", ""),
            api_url=(env.get("GITHUB_API_URL", "").strip() or "https://api.github.com").rstrip("/"),
            server_url=(env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/"),
            run_id=env.get("GITHUB_RUN_ID", ""),
            output_file=runner_path(env, "GITHUB_OUTPUT"),
            summary_file=runner_path(env, "GITHUB_STEP_SUMMARY"),
            runner_temp=runner_path(env, "RUNNER_TEMP"),
            graphql_url=env.get("GITHUB_GRAPHQL_URL", "").strip().rstrip("/"),
            event=event,
            event_problem=event_problem,
            token=read_input(env, "github-token"),
            baseline=read_input(env, "baseline"),
            baseline_artifact=read_input(env, "baseline-artifact"),
            mode=mode,
            shard=shard,
            results=results,
            max_cost=parse_max_cost(read_input(env, "max-cost")),
            github_timeout_s=parse_github_timeout(read_input(env, "github-timeout")),
            html_path=html_path,
        )
        settings.check_inside_workspace()
        return settings

    def check_inside_workspace(self) -> None:
        """SettingsError when the working directory or the results file leads outside the workspace."""
        # action.yml promises paths within the workspace: `..`, an absolute path or a symlink out of it
        # would run whatever spec is there and write results the workflow neither sees nor uploads
        if not self.base_dir.is_relative_to(self.workspace):
            raise SettingsError("input `working-directory` leads outside the workspace (symlinks followed): give a "
                                "folder inside GITHUB_WORKSPACE, relative to it, e.g. `evals` or `.`",
                                self.working_directory)
        results_folder = Path(os.path.realpath(self.results_file.parent))
        if not (self.results_file.is_relative_to(self.workspace)
                and results_folder.is_relative_to(self.workspace)):
            raise SettingsError("input `results-path` leads outside the workspace (symlinks followed): give a file "
                                "inside GITHUB_WORKSPACE, relative to working-directory, e.g. evalgate-results.json",
                                self.results_path)

    @property
    def base_dir(self) -> Path:
        # realpath, not Path.resolve: a symlink loop is then no folder, not a RuntimeError (Python 3.11)
        return Path(os.path.realpath(self.workspace / self.working_directory))

    @property
    def spec_path(self) -> Path:
        return (self.base_dir / self.spec).resolve()

    @property
    def results_file(self) -> Path:
        """Absolute, `..` taken lexically; the file itself is never followed if it is a symlink (the writers
        refuse one: a committed `evalgate-results.json` pointing elsewhere is not written through)."""
        return Path(os.path.normpath(self.base_dir / self.results_path))

    @property
    def html_file(self) -> Path | None:
        """The HTML report's path; None for `html-path: none`."""
        return None if self.html_path.lower() == "none" else Path(os.path.normpath(self.base_dir / self.html_path))

    @property
    def journal_file(self) -> Path | None:
        """The run's journal under RUNNER_TEMP (outside the user's workspace); None beside the results."""
        if not self.runner_temp:
            return None
        import hashlib

        digest = hashlib.sha256(str(self.results_file).encode()).hexdigest()[:16]
        return Path(self.runner_temp) / "evalgate" / f"{digest}.items.jsonl"

    @property
    def comment_file(self) -> Path:
        results = self.results_file
        return results.with_name(results.stem + ".comment.md")

    @property
    def fail_verdicts(self) -> frozenset[str]:
        return FAIL_ON[self.fail_on]

    @property
    def pull_request(self) -> dict[str, Any]:
        """The event's `pull_request` object; {} when it is missing or not an object (a hand-made event)."""
        pull = self.event.get("pull_request")
        return pull if isinstance(pull, dict) else {}

    @property
    def pr_number(self) -> int | None:
        """The pull request a comment goes to; None on push and other events."""
        if self.event_name not in COMMENT_EVENTS:
            return None
        number = self.pull_request.get("number") or self.event.get("number")
        # JSON `true` is an int to Python: it must not become pull request #1
        return number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None

    @property
    def base_ref(self) -> str:
        """The pull request's base branch; empty on other events."""
        base = self.pull_request.get("base")
        ref = base.get("ref") if isinstance(base, dict) else None
        return ref if isinstance(ref, str) else ""

    @property
    def api_problem(self) -> str:
        """Why GitHub's API cannot be reached at GITHUB_API_URL (or GITHUB_GRAPHQL_URL); empty when it can.
        Asked anyway, `ftp://x` or a bad port failed deep in the client, and the warning blamed the token."""
        for name, url in (("GITHUB_API_URL", self.api_url), ("GITHUB_GRAPHQL_URL", self.graphql_url)):
            if url and not is_web_address(url):
                return (f"{name} ({visible(url)[:200]}) is not an http(s) address such as https://api.github.com; "
                        "it is the runner's: set it only in a hand-made `docker run`")
        return ""

    @property
    def run_url(self) -> str:
        if not (self.repository and self.run_id):
            return ""
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"

    def relative(self, path: Path) -> str:
        """A path as the workflow sees it: relative to the workspace when inside it."""
        try:
            return Path(os.path.realpath(path)).relative_to(self.workspace).as_posix()  # realpath: see base_dir
        except ValueError:
            return str(path)
