"""The Action's entrypoint: small named steps from settings to exit code.

settings → run the spec (results file) → load results → outputs, job summary, sticky comment,
annotations → exit code from `fail-on`. Every output is written whatever happens, before exiting.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalgate.errors import SpecError, shortened
from evalgate.github.comments import CommentError, GitHub, marker
from evalgate.github.settings import COMMENT_EVENTS, Settings, SettingsError, excerpt
from evalgate.github.workflow import Log, append_summary, summary_room, write_outputs
from evalgate.infra import heap, isolation, logs, redaction, safeio
from evalgate.infra.files import write_file
from evalgate.infra.net import HttpClient, RetryPolicy
from evalgate.infra.redaction import redact_cut
from evalgate.infra.textsafe import visible
from evalgate.report.labels import errored_count, num, turn_label
from evalgate.report.markdown import COMMENT_LIMIT, ReportContext, cell, render
from evalgate.report.numbers import delta_text
from evalgate.results.model import Results, load_results
from evalgate.results.writer import write_results_streamed

OUTPUT_NAMES = ("verdict", "passed", "failure-reason", "gate-failures", "threshold-misses", "errored-items",
                "scores", "results-path", "html-file", "comment-url", "comment-file", "regressions")
TOKEN_INPUTS = ("INPUT_GITHUB-TOKEN", "INPUT_GITHUB_TOKEN")
MAX_ANNOTATIONS = 10  # of each level: the runner shows only a few per step anyway
RETRY_COMMENT_LIMIT = 30_000
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_ERRORS = 4  # the verdict failed because too many items errored: an outage, not a regression
LOGGED_OUTPUTS = 3  # failing items whose output is printed to the log
LOGGED_CHARS = 2000


@dataclass
class Lines:
    """Where each top-level gate and scorer is in the spec, for annotations."""

    spec_file: str = ""
    gates: dict[str, int | None] = field(default_factory=dict)
    scorers: dict[str, int | None] = field(default_factory=dict)


def empty_outputs() -> dict[str, str]:
    return dict.fromkeys(OUTPUT_NAMES, "")


# ---- steps ----


def baseline_step(settings: Settings, log: Log, http: HttpClient | str,
                  sleep: Callable[[float], None] = time.sleep) -> Path | None:
    """The results to compare with: the `baseline` input's file, or with `auto` the base branch's artifact.
    None, with a notice saying why, when there is none: a missing baseline never fails the job."""
    if not settings.baseline:
        return None
    if settings.baseline != "auto":
        path = (settings.base_dir / settings.baseline).resolve()
        if path.is_file():
            return path
        log.annotate("notice", f"no baseline results at {settings.relative(path)}: the comparison is skipped",
                     title="evalgate: no baseline")
        return None
    from evalgate.github.artifacts import NoBaseline, find_baseline

    if not settings.base_ref:  # a push to the default branch: it makes the baseline, it has none
        print("evalgate: baseline: auto compares pull requests with their base branch; not a pull request")
        return None
    if not settings.token or not settings.repository or isinstance(http, str) or settings.api_problem:
        why = http if isinstance(http, str) and http else settings.api_problem or \
            "baseline: auto needs github-token and GITHUB_REPOSITORY"
        log.annotate("notice", f"{why}; the comparison is skipped", title="evalgate: no baseline")
        return None
    client = GitHub(settings.api_url, settings.token, http, sleep=sleep, deadline_s=settings.github_timeout_s)
    try:
        found = find_baseline(client, repo=settings.repository, run_id=settings.run_id, branch=settings.base_ref,
                              artifact=settings.baseline_artifact, results_name=settings.results_file.name,
                              server_url=settings.server_url)
    except NoBaseline as exc:
        log.annotate("notice", f"{exc}; the comparison is skipped", title="evalgate: no baseline")
        return None
    except Exception as exc:  # whatever GitHub sends back, a baseline is never worth a red job
        log.annotate("notice", f"the baseline could not be fetched ({type(exc).__name__}); the comparison is "
                     "skipped", title="evalgate: no baseline")
        return None
    with log.untrusted():  # GitHub's run id and sha, GITHUB_SERVER_URL: a line break would start a command
        print(f"evalgate: baseline from {found.run_url} (artifact {found.artifact}, {found.head_sha[:7]})")
    return found.path


def run_spec_step(settings: Settings, log: Log, lines: Lines, baseline: Path | None = None) -> None:
    """Run the spec, writing the results file; its log is untrusted text (model outputs, data)."""
    from evalgate.api import run_spec
    from evalgate.report.terminal import FailingIds, render_table

    def on_start(loaded: Any) -> None:
        lines.spec_file = settings.relative(loaded.path)
        lines.gates = {c.entry.id: c.line for c in loaded.gates}
        lines.scorers = {c.entry.id: c.line for c in loaded.scorers}
        failing.watch(loaded.scorers)
        for warning in loaded.warnings:
            print(f"warning: {warning}")

    failing = FailingIds()
    shown: list[Any] = []

    def on_result(item: Any) -> None:
        bad = failing.add(item)
        if bad and len(shown) < LOGGED_OUTPUTS:
            shown.append((item, bad))

    with log.untrusted():
        result = run_spec(settings.spec_path, output=settings.results_file, concurrency=settings.concurrency,
                          on_start=on_start, on_result=on_result, journal=journal_location(settings),
                          baseline=baseline, shard=settings.shard, max_cost=settings.max_cost)
        print(render_table(result, failing.ids, color=False))
        for item, bad in shown:  # the model's own words help most when a gate fails
            text = item.run.text if item.run is not None else ""
            print(f"\n--- item {item.id}: failed {', '.join(bad)}; its output:\n{redact_cut(text, LOGGED_CHARS)}")
        print(f"results: {settings.relative(settings.results_file)}")
    annotate_warnings(result, log)


def annotate_warnings(result: Any, log: Log) -> None:
    """The run's own warnings (a reply mapping that hides failed tool calls, a cache that keeps nothing)
    change what the numbers mean: in the log they would scroll by unseen."""
    for warning in list(result.extra_summary.get("warnings") or ())[:MAX_ANNOTATIONS]:
        log.annotate("warning", redact_cut(str(warning), 1000), title="evalgate: warning")


def journal_location(settings: Settings) -> Path | None:
    """The journal under RUNNER_TEMP, out of the user's workspace; beside the results file (and removed
    with the run's end all the same) when there is no writable RUNNER_TEMP."""
    journal = settings.journal_file
    if journal is None:
        return None
    try:
        journal.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return journal if os.access(journal.parent, os.W_OK) else None


def set_result_outputs(settings: Settings, results: Results, outputs: dict[str, str]) -> None:
    outcome = results.outcome
    outputs["verdict"] = results.verdict or ""
    outputs["passed"] = "false" if results.verdict in settings.fail_verdicts else "true"
    outputs["failure-reason"] = results.summary.failure_reason or ""
    outputs["gate-failures"] = str(len(outcome.gate_failures))
    outputs["threshold-misses"] = str(len(outcome.threshold_misses))
    outputs["errored-items"] = str(results.summary.errored_items)
    # A NaN average (a scorer's NaN, as Mastra keeps it) is null, as the results file writes it
    scores = {k: v if isinstance(v, int | float) and math.isfinite(v) else None for k, v in results.scores.items()}
    outputs["scores"] = json.dumps(scores, separators=(",", ":"), allow_nan=False)
    outputs["results-path"] = settings.relative(settings.results_file)
    comparison = getattr(results, "comparison", None)
    outputs["regressions"] = str(comparison.get("regressions", 0)) if isinstance(comparison, dict) else ""


def html_step(settings: Settings, results: Results, outputs: dict[str, str], log: Log) -> None:
    """The HTML report beside the results (input `html-path`), for the workflow to upload with them.
    A page that cannot be written is a warning: the verdict, the results and the comment stand."""
    from evalgate.report.html import render_html, write_html

    path = settings.html_file
    if path is None:
        return
    try:
        write_html(path, render_html(results))
    except OSError as exc:
        log.annotate("warning", f"the HTML report was not written: {exc.strerror or exc}: "
                     f"{excerpt(settings.relative(path))}", title="evalgate: no HTML report")
        return
    outputs["html-file"] = settings.relative(path)


def report_context(settings: Settings, **fields: Any) -> ReportContext:
    """Where the report goes, and where its HTML page is (named in the footer)."""
    html = settings.html_file
    return ReportContext(run_url=settings.run_url, html=html.name if html is not None else "", **fields)


def summary_step(settings: Settings, results: Results) -> None:
    if not (settings.summary and settings.summary_file):
        return
    if settings.shard is not None:
        append_summary(settings.summary_file, f"> **evalgate shard {settings.shard}**: this job's items only; "
                       "the merge job gives the run's verdict and the PR comment.\n")
    room = summary_room(settings.summary_file)
    append_summary(settings.summary_file, render(results, report_context(settings), limit=room))


def comment_body(settings: Settings, results: Results, key: str, limit: int = COMMENT_LIMIT) -> str:
    ctx = report_context(settings, marker=marker(key), comment=True)
    return render(results, ctx, limit=limit)


def comment_step(settings: Settings, results: Results, log: Log, outputs: dict[str, str],
                 http: HttpClient | str, sleep: Callable[[float], None] = time.sleep) -> None:
    """On pull requests: write the body to a file, then upsert the sticky comment; failures only warn.

    http: the client to reach GitHub through, or why there is none (e.g. an unreadable CA bundle);
    sleep: how rate-limit waits are waited (tests record them instead).
    A shard job never comments: the merge job posts the one comment for the whole run."""
    number = settings.pr_number
    if settings.shard is not None:
        return
    if number is None:
        if settings.event_name in COMMENT_EVENTS and settings.comment:  # a PR's job that cannot tell which PR
            why = (f"GITHUB_EVENT_PATH {settings.event_problem}" if settings.event_problem
                   else "its event names no pull request number")
            log.annotate("warning", f"the PR comment was not posted: this is a {settings.event_name} event, but "
                         f"{why}; the verdict and the job summary stand", title="evalgate: no PR comment")
        return
    key = settings.comment_key or results.name
    body = comment_body(settings, results, key)
    path = settings.comment_file
    try:  # never through a symlink, never outside the workspace; the comment is posted all the same
        write_file(path, body.encode("utf-8"), root=settings.workspace)
        outputs["comment-file"] = settings.relative(path)
    except OSError as exc:
        log.annotate("warning", f"the comment's body was not written to {settings.relative(path)}: "
                     f"{exc.strerror or exc}", title="evalgate: no comment file")
        outputs["comment-file"] = ""
    if not settings.comment:
        return
    if not settings.token or not settings.repository:
        log.annotate("warning", "no github-token or GITHUB_REPOSITORY: the PR comment was not posted; "
                     f"its body is in {outputs['comment-file']}", title="evalgate: no PR comment")
        return
    if settings.api_problem:  # GitHub was never asked: "GitHub answered" would mislead
        log.annotate("warning", f"the PR comment was not posted: {settings.api_problem}. The body is in "
                     f"{outputs['comment-file']}.", title="evalgate: no PR comment")
        return
    if isinstance(http, str):
        log.annotate("warning", comment_warning(CommentError(0, http), outputs["comment-file"]),
                     title="evalgate: no PR comment")
        return
    client = GitHub(settings.api_url, settings.token, http, author=settings.comment_author,
                    graphql=settings.graphql_url or None, sleep=sleep, deadline_s=settings.github_timeout_s)
    try:
        try:
            done = client.upsert(settings.repository, number, body, key)
        except CommentError as exc:
            if not exc.too_long:
                raise
            done = client.upsert(settings.repository, number, comment_body(settings, results, key,
                                                                          RETRY_COMMENT_LIMIT), key)
        outputs["comment-url"] = done.url
        with log.untrusted():  # the URL is GitHub's answer: a line break in it would start a command
            print(f"evalgate: PR comment {done}")
    except CommentError as exc:
        log.annotate("warning", comment_warning(exc, outputs["comment-file"]), title="evalgate: no PR comment")
    except Exception as exc:  # e.g. an HTML page instead of JSON: a comment never changes the exit code
        failure = CommentError(0, f"something unexpected ({type(exc).__name__})")
        log.annotate("warning", comment_warning(failure, outputs["comment-file"]), title="evalgate: no PR comment")


def comment_warning(exc: CommentError, comment_file: str) -> str:
    if exc.read_only:
        why = ("the token cannot write to this pull request (a fork's pull request gets a read-only token; "
               "otherwise grant `pull-requests: write`)")
    elif exc.spammed:
        why = f"GitHub refused it as too many writes ({exc}); it was not sent again"
    else:
        why = f"GitHub answered {exc}"
    return (f"the PR comment was not posted: {why}. The body is in {comment_file}; the workflow_run pattern "
            "in the docs posts it with `evalgate comment`.")


def annotate_step(results: Results, lines: Lines, log: Log) -> None:
    """::error for failed gates, ::warning for missed thresholds, at the entry's line in the spec."""
    outcome = results.outcome
    # when too many items errored, "could not evaluate" says it once: not again per entry left unscored
    outage = outcome.error_budget_exceeded
    for gate in [g for g in outcome.gate_failures if not (outage and g.unscored)][:MAX_ANNOTATIONS]:
        averaged = f"averaged {gate.score:.3f}" if gate.score is not None else (gate.unscored or "has no score")
        log.annotate("error", f"gate `{gate.id}` {averaged}; a gate must average 1.0",
                     file=lines.spec_file or None, line=lines.gates.get(gate.id), title="evalgate: gate failed")
    for miss in [t for t in outcome.threshold_misses if not (outage and t.unscored)][:MAX_ANNOTATIONS]:
        averaged = (f"averaged {miss.average_score:.3f}" if miss.average_score is not None
                    else (miss.unscored or "has no score"))
        log.annotate("warning", f"`{miss.id}` {averaged}, outside its threshold "
                     f"{miss.threshold}", file=lines.spec_file or None, line=lines.scorers.get(miss.id),
                     title="evalgate: threshold missed")
    for entry in regressed_entries(getattr(results, "comparison", None))[:MAX_ANNOTATIONS]:
        entry_id, turn = str(entry.get("id")), entry.get("turn")
        line = (lines.gates if entry.get("kind") == "gate" else lines.scorers).get(entry_id) if turn is None else None
        # delta_text names the matched averages when the results have them (Δ compares those), else the base's
        head = "" if "head_matched" in entry else f"head {num(_number(entry.get('head_average')))}, "
        log.annotate("error", f"`{turn_label(entry_id, turn if isinstance(turn, int) else None)}` regressed "
                     f"against the baseline: {head}"
                     f"{delta_text(entry, 3)}; a drop beyond max_drop {num(_number(entry.get('max_drop')))} "
                     "that the data shows fails the verdict", file=lines.spec_file or None, line=line,
                     title="evalgate: regression")
    if results.summary.error_budget_exceeded:
        summary = results.summary
        top = summary.top_error or {}
        why = f": {redact_cut(str(top['message']), 300)}" if top.get("message") else ""
        log.annotate("error", f"could not evaluate: {errored_count(summary)}"
                     f"{why} (max_errors: {summary.max_errors}; an outage, not a regression: exit code 4)",
                     file=lines.spec_file or None, title="evalgate: could not evaluate")


def regressed_entries(comparison: Any) -> list[dict[str, Any]]:
    """The comparison's entries that failed the verdict: regressed gates and thresholds, never tracked ones."""
    entries = comparison.get("entries") if isinstance(comparison, dict) else None
    return [e for e in entries if isinstance(e, dict) and e.get("status") == "regressed"
            and e.get("kind") in ("gate", "threshold")] if isinstance(entries, list) else []


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def failure_summary(settings: Settings, message: str, details: list[str] | None = None) -> None:
    """A short job summary when there are no results to render (a spec error, a crash)."""
    if not (settings.summary and settings.summary_file):
        return
    lines = [f"### ❌ evalgate: {cell(message, 500)}", ""] + [f"- {cell(d, 500)}" for d in details or []]
    # cell() escapes Markdown and HTML; the summary is no log either: control and bidi characters shown
    lines = [visible(line) for line in lines]
    with contextlib.suppress(OSError):
        append_summary(settings.summary_file, "\n".join(lines) + "\n")


def spec_error_step(settings: Settings, exc: SpecError, log: Log) -> None:
    failure_summary(settings, "the spec has errors; nothing was run", [str(p) for p in exc.problems])
    for problem in exc.problems:
        file = settings.relative(settings.base_dir / problem.file) if problem.file else None
        log.annotate("error", shortened(problem.message), file=file, line=problem.line, title="evalgate: spec error")


def merge_step(settings: Settings, log: Log) -> bool:
    """Merge mode: the shards' results files into the results file; False (annotated) when they do not merge."""
    from evalgate.report.terminal import render_table
    from evalgate.results.merge import MergeError, merge
    from evalgate.results.shards import shard_files

    files = shard_files(settings.results, settings.base_dir)
    if not files:
        log.annotate("error", f"no files match `results`: {excerpt(', '.join(settings.results))} (in "
                     f"{excerpt(settings.working_directory)}); download the shards' artifacts there first",
                     title="evalgate: nothing to merge")
        return False
    try:
        with log.untrusted():  # the file names too: an artifact's name is anyone's text
            print(f"evalgate: merging {len(files)} shards: " + ", ".join(settings.relative(f) for f in files))
            result = merge(files, settings.results_file)
            if not _reads_back(settings.results_file):
                # the columns let through an item no run writes (a shard edited, its digests forged): every
                # item read names the file and the item; no file is left that nothing reads
                settings.results_file.unlink(missing_ok=True)
                result = merge(files, settings.results_file, read_items=True)
                if not _reads_back(settings.results_file):
                    settings.results_file.unlink(missing_ok=True)
                    raise MergeError("the merged results do not read back as evalgate results (a shard was "
                                     "edited?); run the shards again")
            print(render_table(result, {}, color=False))
            print(f"results: {settings.relative(settings.results_file)}")
    except MergeError as exc:
        log.annotate("error", str(exc), title="evalgate: cannot merge the shards")
        return False
    annotate_warnings(result, log)  # the shards' warnings: their jobs' logs are not where anyone looks
    return True


def _reads_back(path: Path) -> bool:
    try:
        load_results(path)
    except (OSError, ValueError):
        return False
    return True


def compare_merged_step(settings: Settings, log: Log, baseline: Path) -> None:
    """Merge mode with a baseline: the merged run is compared (shards never are), as `evalgate compare` does.
    A baseline that cannot be compared is a notice, never a red job."""
    from evalgate.decide.comparison import CompareOptions, add_to_results, compare_results

    path = settings.results_file
    try:
        head_results = load_results(path)
        head = head_results.file_header
        comparison = compare_results(load_results(baseline), head_results,
                                     CompareOptions.from_settings(head.get("compare_settings")))
    except Exception as exc:
        log.annotate("notice", f"the baseline could not be compared ({type(exc).__name__}); the comparison is "
                     "skipped", title="evalgate: no baseline")
        return
    write_results_streamed(path, add_to_results(head, comparison), head_results.each_record())


def spec_lines(settings: Settings, lines: Lines) -> None:
    """The spec's entry lines for annotations, when the merge job has the spec checked out."""
    from evalgate.load.loader import load_spec

    try:
        loaded = load_spec(settings.spec_path)
    except SpecError:
        return
    lines.spec_file = settings.relative(loaded.path)
    lines.gates = {c.entry.id: c.line for c in loaded.gates}
    lines.scorers = {c.entry.id: c.line for c in loaded.scorers}


# ---- orchestration ----


def run(settings: Settings, log: Log, outputs: dict[str, str], http: HttpClient | str,
        sleep: Callable[[float], None] = time.sleep) -> int:
    """Run, then report whatever finished: outputs, summary and comment even when the run was cut short."""
    from evalgate.api import BaselineError
    lines = Lines()
    if not folders_exist(settings, log):
        return EXIT_USAGE
    os.chdir(settings.base_dir)  # like a `run:` step's working-directory: command targets expect it
    started = time.time()
    failure: BaseException | None = None
    if settings.mode == "merge":
        if not merge_step(settings, log):
            return EXIT_USAGE
        baseline = baseline_step(settings, log, http, sleep)
        if baseline is not None:
            compare_merged_step(settings, log, baseline)
        if settings.spec_path.is_file():
            spec_lines(settings, lines)
    elif not os.path.exists(settings.spec_path):
        # no command line here to give a path on: the spec is the `spec` input
        where = excerpt(settings.relative(settings.spec_path))
        log.annotate("error", f"input `spec`: there is no file {where}; set `spec` to the spec's path, relative to "
                     f"working-directory ({excerpt(settings.working_directory)})", title="evalgate: bad input")
        failure_summary(settings, f"input `spec`: there is no file {where}; nothing was run")
        return EXIT_USAGE
    else:
        # A shard holds part of the data: only the merged run is compared with the baseline.
        baseline = baseline_step(settings, log, http, sleep) if settings.shard is None else None
        try:
            try:
                run_spec_step(settings, log, lines, baseline)
            except BaselineError as exc:  # a baseline file that is not evalgate results: never a red job
                log.annotate("notice", f"{exc}; the comparison is skipped", title="evalgate: no baseline")
                run_spec_step(settings, log, lines)
        except SpecError as exc:
            spec_error_step(settings, exc, log)
            return EXIT_USAGE
        except BaseException as exc:  # reported below, after what finished is published
            failure = exc
    results = finished_results(settings, started)
    if results is not None:
        steps: tuple[Callable[[], None], ...] = (lambda: set_result_outputs(settings, results, outputs),
            lambda: html_step(settings, results, outputs, log), lambda: summary_step(settings, results),
            lambda: comment_step(settings, results, log, outputs, http, sleep))
        for step in steps:
            try:
                step()
            except Exception as exc:  # one failing step must not cost the others
                failure = failure or exc
    elif failure is None:
        failure = RuntimeError("the run wrote no results file")
    if failure is not None:
        raise failure
    assert results is not None
    if settings.shard is not None:
        outputs["passed"] = "true"  # a shard never fails on its verdict: the merge job decides
        return 0
    annotate_step(results, lines, log)
    if results.verdict not in settings.fail_verdicts:
        return 0
    return EXIT_ERRORS if results.summary.failure_reason == "errors" else 1


def folders_exist(settings: Settings, log: Log) -> bool:
    """The workspace and the working directory are folders; else an ::error naming the one at fault."""
    if not is_folder(settings.workspace):  # else every path below would be blamed on working-directory
        log.annotate("error", f"GITHUB_WORKSPACE ({settings.workspace}) is not a folder: it must name the "
                     "checked-out workspace (the runner sets it)", title="evalgate: bad input")
        return False
    if not is_folder(settings.base_dir):
        log.annotate("error", f"input `working-directory`: {excerpt(settings.working_directory)} is not a folder "
                     f"in the workspace ({excerpt(settings.relative(settings.base_dir))}); give a folder relative "
                     "to GITHUB_WORKSPACE", title="evalgate: bad input")
        return False
    return True


def is_folder(path: Path) -> bool:
    """Path.is_dir, but a name too long for the file system (`working-directory` of 5,000 characters)
    is no folder rather than an OSError reported as a file that could not be read."""
    try:
        return path.is_dir()
    except OSError:
        return False


def finished_results(settings: Settings, started: float) -> Results | None:
    """The results file this run wrote (None if it wrote none: an older file is not this run's)."""
    path = settings.results_file
    try:
        if path.stat().st_mtime < started - 2:
            return None
        return load_results(path)
    except (OSError, ValueError):
        return None


def github_http(env: dict[str, str]) -> HttpClient | str:
    """The HTTP client for GitHub's API: proxies and CA bundle from the job's environment, no
    retries of its own (the comment client applies GitHub's rules); or why it cannot be built."""
    try:
        return HttpClient(concurrency=1, retries=RetryPolicy(attempts=1), timeout_s=30.0, environ=env)
    except ValueError as exc:
        return str(exc)


def action(env: dict[str, str] | None = None, log: Log | None = None, http: HttpClient | str = "",
           sleep: Callable[[float], None] = time.sleep) -> int:
    """Everything but process set-up: usable in-process by tests.

    http: the client for GitHub's API, built by the caller (`github_http`), or why there is none;
    sleep: how GitHub's rate-limit waits are waited."""
    env_is_process = env is None
    env = dict({**isolation.withheld(), **os.environ} if env is None else env)
    if env_is_process:
        safeio.install()  # redacted, terminal-safe log
    log = log or Log()
    # the runner's "debug logging" re-run sets RUNNER_DEBUG=1: evalgate's debug log with it
    logs.configure(verbose=env.get("RUNNER_DEBUG") == "1", environ=env, reset=True)
    outputs = empty_outputs()
    try:
        settings = Settings.from_env(env)
    except SettingsError as exc:
        log.annotate("error", str(exc), title="evalgate: bad input")
        outputs["passed"] = "false"
        publish_outputs(env.get("GITHUB_OUTPUT", ""), outputs, log)
        return EXIT_USAGE
    redaction.register([settings.token])
    redaction.register_credential_env(env)  # the step's provider keys, which no spec may name
    if env_is_process:
        hide_token()
    code = EXIT_INTERNAL
    try:
        code = run(settings, log, outputs, http or "no HTTP client was given for GitHub", sleep)
    except KeyboardInterrupt:
        log.annotate("error", "evalgate was cancelled; finished items are in the results file",
                     title="evalgate: cancelled")
        code = isolation.interrupt_exit_code()  # 130 for SIGINT, 143 for SIGTERM, as the CLI exits
    except OSError as exc:  # a file evalgate must write or read (results-path, the runner's disk): not a bug
        what = f"{exc.strerror or exc}: {file_named(settings, exc.filename)}"
        log.annotate("error", f"evalgate could not write or read a file: {what}", title="evalgate: file error")
        code = EXIT_USAGE
        if not outputs["verdict"]:
            failure_summary(settings, f"evalgate could not write or read a file: {what}; no results were published.")
    except BaseException as exc:  # a crash must still set the outputs; one line, no traceback
        what = "an input too deeply nested or too large" if isinstance(exc, RecursionError | MemoryError) else \
            f"{type(exc).__name__}: {redact_cut(' '.join(str(exc).split()), 300)}"
        log.annotate("error", f"evalgate failed: {what}. This is a bug in evalgate: please report it with this "
                     "line and your spec", title="evalgate: internal error")
        code = EXIT_INTERNAL
        if not outputs["verdict"]:  # nothing was published: the summary still says what happened
            failure_summary(settings, f"evalgate failed: {what}; no results were published. This is a bug in "
                            "evalgate: please report it.")
    finally:
        if code != 0:  # the step fails, whatever the verdict said: a file error or crash after it too
            outputs["passed"] = "false"
        if not publish_outputs(settings.output_file, outputs, log) and code == 0:
            code = EXIT_USAGE  # later steps would read no outputs: the step must not pass
    return code


def file_named(settings: Settings, filename: object) -> str:
    """The file an OSError is about, with what chose it: a path alone (`/dev/full`) does not say
    which input or runner variable to change."""
    if not filename:
        return "a file"
    name = os.fsdecode(filename)  # type: ignore[arg-type]
    where = settings.relative(Path(name))
    chosen_by = {settings.summary_file: "GITHUB_STEP_SUMMARY", settings.output_file: "GITHUB_OUTPUT",
                 str(settings.results_file): "input `results-path`"}.get(name)
    return f"{where} ({chosen_by})" if chosen_by else where


def publish_outputs(path: str, outputs: dict[str, str], log: Log) -> bool:
    """Write the outputs to GITHUB_OUTPUT; False, with an ::error naming it, when the runner's file
    cannot take them (a directory, a full disk): a traceback would say neither what nor where."""
    try:
        write_outputs(path, outputs)
    except OSError as exc:
        log.annotate("error", f"the step outputs could not be written to GITHUB_OUTPUT ({path}): "
                     f"{exc.strerror or exc}; it must name a writable file (the runner sets it)",
                     title="evalgate: file error")
        return False
    return True


def hide_token() -> None:
    """The spec may run the pull request's own code: it must not find the comment token or the
    runner's credentials in the environment. Settings keep their own copy of the token."""
    for name in TOKEN_INPUTS:
        value = os.environ.pop(name, None)
        if value is not None:
            isolation.withhold({name: value})
    isolation.scrub_process_env()


def main() -> None:
    """The container's entrypoint: one log stream, so stop-commands covers stderr too."""
    isolation.reexec_without_credentials(TOKEN_INPUTS)
    isolation.receive_credentials()
    heap.command_process()
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(sys.stdout.fileno(), sys.stderr.fileno())
    isolation.install_interrupt_handler()  # SIGINT and SIGTERM (a cancelled job): write what finished, then stop
    http = github_http(dict(os.environ))  # proxies and CA bundle from the job's environment
    try:
        code = action(http=http)
    finally:
        if isinstance(http, HttpClient):
            http.close()
    sys.stdout.flush()
    if isolation.INTERRUPTED.is_set():
        os._exit(code)  # do not wait for a hung agent's thread at interpreter exit
    sys.exit(code)
