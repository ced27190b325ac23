"""The `evalgate` command: a thin click shell over the API and the renderers (docs/results.md).

Exit codes: 0 ok; 1 the verdict is in --fail-on; 2 a spec or usage error (no traceback);
3 an internal error (one line and a hint to report it); 4 the verdict is in --fail-on because more
items errored than `max_errors` allows (an outage, not a regression); 130 interrupted by Ctrl-C,
143 by SIGTERM (finished items are still written). `entry` guarantees no other code and no
traceback ever leaves the process.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from pathlib import Path
from typing import Any

import click

from evalgate import __version__, redaction
from evalgate.errors import SpecError
from evalgate.report.labels import FAIL_ON, fails

EXIT_FAILED = 1
EXIT_ERRORS = 4


class FiniteFloat(click.FloatRange):
    """A FloatRange that refuses NaN (every comparison with NaN is false, so a range lets it through)."""

    name = "number"  # click says "... is not a valid {name}": a cap of `0x10` is no number, not "no float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


class FilePath(click.Path):
    """A file to write or read: an empty argument is refused (it would name the current folder)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(dir_okay=False, path_type=Path, **kwargs)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value:
            self.fail("an empty path; give a file name", param, ctx)
        return super().convert(value, param, ctx)


def exit_code(verdict: str | None, fail_on: str, failure_reason: str | None = None) -> int:
    """0, or 1 when the verdict is in fail-on; 4 instead of 1 when the run could not evaluate."""
    if not fails(verdict, fail_on):
        return 0
    return EXIT_ERRORS if failure_reason == "errors" else EXIT_FAILED


EXIT_CODES = frozenset({0, 1, 2, 3, 4, 130, 143})
EXIT_INTERNAL = 3
REPORT_HINT = "this is a bug in evalgate: please report it with the command you ran and this line"


def _safe_streams() -> None:
    """Streams that redact known secrets, neutralise control characters and never crash on encoding."""
    from evalgate import safeio

    safeio.install()


def entry(argv: list[str] | None = None) -> None:
    """The `evalgate` command: one of the documented exit codes, never a traceback."""
    from evalgate import isolation

    if argv is None:  # this process is the command: start it again without the runner's credentials
        isolation.reexec_without_credentials()
        isolation.receive_credentials()
    _safe_streams()
    isolation.install_interrupt_handler()
    try:
        returned = main.main(args=argv, prog_name="evalgate", standalone_mode=False)
        code = returned if isinstance(returned, int) else 0
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("evalgate: interrupted", err=True)
        code = isolation.interrupt_exit_code()
    except click.exceptions.ClickException as exc:  # bad options or arguments
        exc.show()
        code = 2
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_INTERNAL)
        if code not in EXIT_CODES:
            click.echo(f"evalgate: internal error: exit code {exc.code!r} from inside the run; {REPORT_HINT}",
                       err=True)
            code = EXIT_INTERNAL
    except BaseException as exc:
        if isinstance(exc, RecursionError | MemoryError):
            what = f"{type(exc).__name__} (an input too deeply nested or too large?)"
        else:
            what = f"{type(exc).__name__}: {redaction.redact_cut(' '.join(str(exc).split()), 300)}"
        click.echo(f"evalgate: internal error: {what}; {REPORT_HINT}", err=True)
        code = EXIT_INTERNAL
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if code in (130, 143) or isolation.INTERRUPTED.is_set():
        os._exit(code)  # do not wait for a hung agent's thread at interpreter exit
    sys.exit(code)


def _print_spec_error(exc: SpecError) -> None:
    for problem in exc.problems:
        click.echo(f"error: {problem}", err=True)
    click.echo("evalgate: the spec has errors; nothing was run (exit 2)", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalgate")
def main() -> None:
    """evalgate: gates, thresholds and one verdict for LLM agents, in CI."""


@main.command()
@click.argument("spec", default="evalgate.yaml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--output", "-o", type=FilePath(), help="Write the results JSON here.")
@click.option(
    "--fail-on",
    type=click.Choice(sorted(FAIL_ON)),
    default="failed",
    show_default=True,
    help="Verdicts that exit 1: failed; scored (failed or scored); never.",
)
@click.option(
    "--concurrency", "-c", type=click.IntRange(min=1, max=1024), help="Items in flight (default: the spec's)."
)
@click.option("--resume", is_flag=True, help="Skip items already in OUTPUT.items.jsonl (from an interrupted run).")
@click.option("--no-cache", is_flag=True, help="Bypass the response cache: send every request.")
@click.option("--junit", type=FilePath(), help="Also write JUnit XML here.")
@click.option("--repeats", "-k", type=click.IntRange(min=1, max=100),
              help="Run every item K times as independent trials (default: the spec's `repeats`, else once).")
@click.option("--baseline", type=FilePath(),
              help="Compare with this results file (the base branch's): regressions fail the verdict.")
@click.option("--shard", metavar="I/N", help="Run only shard I of N (1-based), e.g. 2/4; join them with `merge`.")
@click.option("--max-cost", type=FiniteFloat(min=0, min_open=True), metavar="USD",
              help="Stop starting items once the spend reaches this (instead of the spec's budget.max_usd).")
def run(spec: Path, output: Path | None, fail_on: str, concurrency: int | None, resume: bool, no_cache: bool,
        junit: Path | None = None, repeats: int | None = None, baseline: Path | None = None,
        shard: str | None = None, max_cost: float | None = None) -> None:
    """Run SPEC (default evalgate.yaml) and print the verdict."""
    from evalgate import isolation
    from evalgate.api import BaselineError, network_retries, real_path, run_spec
    from evalgate.report.terminal import FailingIds, Progress, render_table
    from evalgate.shards import parse_shard
    from evalgate.writelock import WriterBusy

    _safe_streams()
    picked = None
    if shard is not None:
        try:
            picked = parse_shard(shard)
        except ValueError as exc:
            click.echo(f"error: --shard: {exc}", err=True)
            sys.exit(2)
        if output is None:
            click.echo("error: --shard needs --output PATH: `evalgate merge` joins the shards' results files", err=True)
            sys.exit(2)
        if baseline is not None:  # a shard holds part of the items: only the merged run is comparable
            click.echo("error: --baseline compares a whole run, not a shard: `evalgate merge` the shards, then "
                       "`evalgate compare BASE.json MERGED.json`", err=True)
            sys.exit(2)
    isolation.scrub_process_env()  # before any user code is imported; `pass_env:` puts names back
    if resume and output is None:
        click.echo("error: --resume needs --output PATH (the run to resume)", err=True)
        sys.exit(2)
    if junit is not None and output is not None and real_path(junit) == real_path(output):
        click.echo("error: --junit and --output are the same file; give each its own path", err=True)
        sys.exit(2)

    tty = sys.stderr.isatty()
    failing = FailingIds()
    started_in = os.getcwd()  # the code under test may change it: --junit is still relative to the user's
    progress: Progress | None = None

    def on_start(loaded: Any) -> None:
        nonlocal progress
        if junit is not None:
            from evalgate.api import refuse_clobber

            refuse_clobber(loaded, junit, "--junit")
        for warning in loaded.warnings:
            click.echo(f"warning: {warning}", err=True)
        total = loaded.item_count
        if picked is not None:
            from evalgate.shards import missing_ids

            total = -(-total // picked.count)  # about this many: ids hash evenly
            if missing_ids(loaded):
                click.echo("warning: items without an `id` are sharded by their position (item-N): "
                           "give every item an id so reordering the data keeps each in its shard", err=True)
        progress = Progress(total, sys.stderr, tty, retries=network_retries(loaded))

    def on_result(item: Any) -> None:
        failing.add(item)
        if progress is not None:
            progress.tick(item.errored)

    try:
        result = run_spec(
            spec,
            output=output,
            concurrency=concurrency,
            on_start=on_start,
            on_result=on_result,
            resume=resume,
            use_cache=not no_cache,  # the target's cache and the judge's
            keep_items=junit is not None and output is None,  # JUnit needs the items
            repeats=repeats,
            baseline=baseline,
            shard=picked,
            max_cost=max_cost,
        )
    except SpecError as exc:
        _print_spec_error(exc)
        sys.exit(2)
    except (BaselineError, WriterBusy) as exc:  # a baseline that cannot be read, --output being written: nothing ran
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:  # e.g. --output in a folder that cannot be created
        click.echo(f"evalgate: {exc.strerror or exc}: {exc.filename or output}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        if progress is not None:
            progress.close()
        # before the first item (a slow import, the spec's validation) no results file was written
        where = f"; finished items are in {output}" if output and Path(output).is_file() else ""
        click.echo(f"evalgate: interrupted{where}", err=True)
        sys.exit(isolation.interrupt_exit_code())
    finally:
        if progress is not None:
            progress.close()
        with contextlib.suppress(OSError):
            os.chdir(started_in)
    for note in result.notes:
        click.echo(f"warning: {note}", err=True)
    color = sys.stdout.isatty()
    click.echo(render_table(result, failing.ids, color=color), color=color)
    for warning in getattr(result, "extra_summary", {}).get("warnings", ()):
        click.echo(f"warning: {warning}", err=True)
    if picked is not None:
        click.echo(f"shard {picked}: this verdict is the shard's own; `evalgate merge` gives the run's")
    if output is not None:
        click.echo(f"results: {output}")
    if junit is not None:
        try:
            _write_junit(result, junit)
        except OSError as exc:
            click.echo(f"evalgate: cannot write the JUnit XML: {exc.strerror or exc}: {junit}", err=True)
            sys.exit(2)
    sys.exit(exit_code(result.verdict, fail_on, result.outcome.failure_reason))


@main.command()
@click.argument("spec", default="evalgate.yaml", type=click.Path(dir_okay=False, path_type=Path))
def validate(spec: Path) -> None:
    """Check SPEC and its data without running anything."""
    from evalgate import isolation
    from evalgate.api import prepare_target
    from evalgate.loader import load_spec

    _safe_streams()
    isolation.scrub_process_env()
    try:
        loaded = load_spec(spec)
        isolation.pass_env(loaded.spec.pass_env)
        count = sum(1 for _ in loaded.iter_cases())  # a streamed data set is validated by reading it
        prepare_target(loaded).close()
    except SpecError as exc:
        _print_spec_error(exc)
        sys.exit(2)
    for warning in (*loaded.warnings, *loaded.late_warnings):  # late: a streamed data set's, once it was read
        click.echo(f"warning: {warning}", err=True)
    click.echo(
        f"{loaded.file}: ok ({count} items, {len(loaded.gates)} gates, {len(loaded.scorers)} scorers)"
    )


@main.command(name="compare")
@click.argument("base", metavar="BASE.json", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("head", metavar="HEAD.json", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--output", "-o", type=FilePath(),
              help="Write HEAD's results here with the comparison added (and its verdict, when it regressed).")
@click.option("--confidence", type=FiniteFloat(0.5, 1.0, min_open=True, max_open=True),
              help="Of the intervals (default: HEAD's spec `compare:`, else 0.95).")
@click.option("--max-drop", type=FiniteFloat(0.0, 1.0), help="The drop tolerated (default 0).")
@click.option("--correction", type=click.Choice(["holm", "bonferroni", "none"]),
              help="Across entries (default holm).")
@click.option("--fail-on", type=click.Choice(sorted(FAIL_ON)), default="failed", show_default=True,
              help="Verdicts (after the comparison) that exit 1.")
def compare_command(base: Path, head: Path, output: Path | None, confidence: float | None, max_drop: float | None,
                    correction: str | None, fail_on: str) -> None:
    """Compare HEAD.json with BASE.json (the base branch's results): paired, entry by entry."""
    _safe_streams()
    verdict, reason = _writing(output, lambda: _compare(base, head, output, confidence=confidence, max_drop=max_drop,
                                                        correction=correction))
    sys.exit(exit_code(verdict, fail_on, reason))


def _writing(output: Path | None, work: Any) -> Any:
    """`work()` holding --output's lock (evalgate.writelock): exit 2 while another process writes that file."""
    from evalgate.writelock import WriterBusy, writing

    held = contextlib.ExitStack()
    try:
        if output is not None:
            held.enter_context(writing(output))
    except WriterBusy as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:  # the lock file's folder cannot be written (nor could the results), or it is in the way
        click.echo(f"error: {exc.strerror or exc}: {exc.filename or output}", err=True)
        sys.exit(2)
    with held:
        return work()


def _compare(base: Path, head: Path, output: Path | None, **overrides: Any) -> tuple[str | None, str | None]:
    """Compare HEAD's results file with BASE's, print the comparison, write HEAD with it to `output`.

    Returns the verdict after the comparison and its failure reason; exits 2 when a file is not results.
    overrides: confidence, max_drop, correction (None: HEAD's spec `compare:`, else the defaults)."""

    from pydantic import ValidationError

    from evalgate.comparison import CompareOptions, add_to_results, compare_results
    from evalgate.report.terminal import comparison_section
    from evalgate.results import replaceable_file, write_results_streamed
    from evalgate.results_model import ItemError, load_results

    try:
        if output is not None:
            replaceable_file(output)  # before any work: HEAD with the comparison is renamed over it
        reading = base
        base_results = load_results(base, check_items=False)  # each checked to be a file first; its items
        reading = head  # are checked as the comparison reads them
        head_results = load_results(head, check_items=False)
        head_raw = head_results.file_header
    except (ValidationError, ValueError) as exc:
        click.echo(f"error: {reading}: not an evalgate results file ({str(exc).splitlines()[0][:200]})", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(f"error: {exc.strerror or exc}: {exc.filename or base}", err=True)
        sys.exit(2)
    try:
        options = CompareOptions.from_settings(head_raw.get("compare_settings"), **overrides)
    except ValueError as exc:
        click.echo(f"error: {head}: its compare_settings cannot be used ({exc}); fix or remove them", err=True)
        sys.exit(2)
    try:
        comparison = compare_results(base_results, head_results, options)
    except ItemError as exc:
        click.echo(f"error: {exc.path}: not an evalgate results file ({str(exc).splitlines()[0][:200]})", err=True)
        sys.exit(2)
    add_to_results(head_raw, comparison)
    title, rows = comparison_section(head_raw["comparison"])
    click.echo("\n".join([title, *rows]))
    verdict = head_raw.get("verdict")
    click.echo(f"verdict: {verdict.upper() if verdict else 'none'}"
               + (f" ({len(comparison.regressions)} regressed)" if comparison.regressions else ""))
    if output is not None:
        try:
            write_results_streamed(output, head_raw, head_results.each_record())
        except OSError as exc:
            click.echo(f"error: cannot write the results: {exc.strerror or exc}: {exc.filename or output}", err=True)
            sys.exit(2)
        click.echo(f"results: {output}")
    return verdict, (head_raw.get("summary") or {}).get("failure_reason")


@main.command()
@click.argument("results_files", metavar="SHARD.json...", nargs=-1, required=True,
                type=click.Path(dir_okay=False, path_type=Path))
@click.option("--output", "-o", type=FilePath(), help="Write the merged results here.")
@click.option("--fail-on", type=click.Choice(sorted(FAIL_ON)), default="failed", show_default=True,
              help="Verdicts that exit 1: failed; scored (failed or scored); never.")
@click.option("--baseline", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Compare the merged run with these results (the base branch's), as `evalgate compare` does; "
                   "needs --output.")
def merge(results_files: tuple[Path, ...], output: Path | None, fail_on: str, baseline: Path | None) -> None:
    """Join the shards' results files (from `run --shard I/N`) into the results of one run."""
    from evalgate.merging import MergeError
    from evalgate.merging import merge as merge_files
    from evalgate.report.terminal import render_table
    from evalgate.writelock import WriterBusy

    _safe_streams()
    if baseline is not None and output is None:
        click.echo("error: --baseline needs --output PATH: the merged results the comparison is added to", err=True)
        sys.exit(2)
    try:
        result = merge_files(results_files, output)
    except (MergeError, WriterBusy) as exc:
        click.echo(f"error: {exc}", err=True)
        click.echo("evalgate: nothing was merged (exit 2)", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(f"evalgate: {exc.strerror or exc}: {exc.filename or output}", err=True)
        sys.exit(2)
    color = sys.stdout.isatty()
    click.echo(render_table(result, {}, color=color), color=color)
    if baseline is not None and output is not None:  # the merged run is the whole run: it compares as one
        verdict, reason = _writing(output, lambda: _compare(baseline, output, output))
        sys.exit(exit_code(verdict, fail_on, reason))
    if output is not None:
        click.echo(f"results: {output}")
    sys.exit(exit_code(result.verdict, fail_on, result.outcome.failure_reason))


@main.command()
@click.argument("spec", default="evalgate.yaml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the estimate as JSON.")
def estimate(spec: Path, as_json: bool) -> None:
    """Estimate SPEC's calls, tokens and cost from its data and price tables, without running anything."""
    import json

    from evalgate.estimate import estimate as estimate_spec
    from evalgate.estimate import render
    from evalgate.loader import load_spec

    _safe_streams()
    try:
        result = estimate_spec(load_spec(spec))
    except SpecError as exc:
        _print_spec_error(exc)
        sys.exit(2)
    # allow_nan=False: an `Infinity` or `NaN` is no JSON; estimate refuses the prices that would make one
    click.echo(json.dumps(result.to_dict(), indent=2, allow_nan=False) if as_json else render(result))


@main.command()
def schema() -> None:
    """Print the JSON Schema of spec files (for editors' YAML completion)."""
    import json

    from evalgate.loader import json_schema

    click.echo(json.dumps(json_schema(), indent=2))



# ---- the Action's commands: report and comment (evalgate/report, evalgate/github) ----


def _write_junit(result: Any, path: Path) -> None:
    """JUnit XML from the results file when there is one, else from the items kept in memory."""
    from evalgate.report.junit import render_junit
    from evalgate.results_model import Results, load_results

    if result.results_path is not None:
        results = load_results(Path(result.results_path))
    else:
        results = Results.model_validate(result.to_dict())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_junit(results), encoding="utf-8")
    click.echo(f"junit: {path}")


@main.command()
@click.argument("results_file", metavar="RESULTS.json", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["markdown", "junit"]), default="markdown", show_default=True)
@click.option("--run-url", default="", help="A workflow run to link from the footer.")
def report(results_file: Path, fmt: str, run_url: str) -> None:
    """Render a results file as the Markdown report (job summary, PR comment) or JUnit XML."""
    from pydantic import ValidationError

    from evalgate.errors import not_a_file
    from evalgate.report.junit import render_junit
    from evalgate.report.markdown import ReportContext, render
    from evalgate.results_model import load_results

    unusable = not_a_file(results_file, what="results file")
    if unusable is not None:
        click.echo(f"error: {results_file}: {unusable}", err=True)
        sys.exit(2)
    try:  # the items are checked as the report reads them: one pass over a big file, not two
        results = load_results(results_file, check_items=False)
        text = render_junit(results) if fmt == "junit" else render(results, ReportContext(run_url=run_url))
    except (ValidationError, ValueError) as exc:
        click.echo(f"error: {results_file} is not an evalgate results file: {str(exc).splitlines()[0]}", err=True)
        sys.exit(2)
    click.echo(text, nl=False)


@main.command()
@click.option("--results", "results_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Render the comment from this results file (escaped as the Action escapes it): for fork PRs.")
@click.option("--body-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Post this body (the Action's comment-file output); @mentions in it are broken.")
@click.option("--pr", "pr_number", required=True, type=click.IntRange(min=1), help="The pull request number.")
@click.option("--repo", envvar="GITHUB_REPOSITORY", required=True, help="owner/name (default: $GITHUB_REPOSITORY).")
@click.option("--key", default=None,
              help="The sticky comment's key (default: the results' name with --results; the body's marker, "
                   "else `default`, with --body-file).")
@click.option("--head-sha", default=None, help="Refuse unless the PR's head is this commit (workflow_run safety).")
@click.option("--token-env", default="GITHUB_TOKEN", show_default=True, help="The variable holding the token.")
@click.option("--author", default="", help="The login the token writes as (default: asked of GitHub's GraphQL viewer).")
def comment(results_file: Path | None, body_file: Path | None, pr_number: int, repo: str, key: str | None,
            head_sha: str | None, token_env: str, author: str = "") -> None:
    """Post or update the sticky PR comment, without running the PR's code.

    From a fork's run, give `--results`: the comment is rendered here, so whatever the fork wrote into
    the results is escaped text. A `--body-file` is posted as written, its @mentions and #refs broken."""
    import os
    import re

    from evalgate.github.comments import CommentError, GitHub, comment_key, marker, marker_in
    from evalgate.net import HttpClient, RetryPolicy, header_problem
    from evalgate.report.markdown import COMMENT_LIMIT, hard_cut, no_pings, utf8_size
    from evalgate.textsafe import visible

    if (results_file is None) == (body_file is None):
        click.echo("error: give one of --results (a fork's results file) or --body-file", err=True)
        sys.exit(2)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo):
        click.echo(f"error: --repo must be owner/name, got {repo!r}", err=True)
        sys.exit(2)
    from evalgate.isolation import getenv

    token = getenv(token_env) or ""  # the CLI started again without it in its environment
    if not token:
        click.echo(f"error: ${token_env} is empty: a token with pull-requests: write is needed", err=True)
        sys.exit(2)
    problem = header_problem("Authorization", token.strip(), token_env)
    if problem is not None:
        click.echo(f"error: {problem}", err=True)
        sys.exit(2)
    token = token.strip()
    redaction.register([token])
    if results_file is not None:
        body, key = _comment_from_results(results_file, key)
    else:
        assert body_file is not None
        body = body_file.read_text(encoding="utf-8", errors="replace")
        found = marker_in(body)
        key = comment_key(key or found or "default")
        rest = body.split("\n", 1)[1] if found and "\n" in body else ("" if found else body)
        # The marker goes first: it is how the next run finds this comment. The body is a fork's data,
        # so no other line may pass for a marker (another job's comment would be taken for it), it
        # pings nobody under this token's name, and it hides no text from the people (and models) reading it.
        body = marker(key) + "\n" + no_pings(visible(rest, keep_cr=True).replace("<!-- evalgate:", "&lt;!-- evalgate:"))
        if utf8_size(body) > COMMENT_LIMIT:
            body = hard_cut(body, COMMENT_LIMIT, utf8_size)
    try:  # proxies and the CA bundle come from the environment, as for every other request
        http = HttpClient(concurrency=1, retries=RetryPolicy(attempts=1), timeout_s=30.0)
    except ValueError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    client = GitHub(os.environ.get("GITHUB_API_URL") or "https://api.github.com", token, http, author=author,
                    graphql=os.environ.get("GITHUB_GRAPHQL_URL") or None)
    try:
        if head_sha and client.pull_head_sha(repo, pr_number) != head_sha:
            click.echo(f"error: pull request #{pr_number}'s head is not {head_sha}; not commenting", err=True)
            sys.exit(1)
        done = client.upsert(repo, pr_number, body, key)
    except (CommentError, ValueError) as exc:  # ValueError: an answer that is not JSON
        reason = exc if isinstance(exc, CommentError) else f"an unexpected answer ({type(exc).__name__})"
        click.echo(f"error: the comment was not posted: {reason}", err=True)
        sys.exit(1)
    finally:
        http.close()
    click.echo(f"comment {done}")


def _comment_from_results(path: Path, key: str | None) -> tuple[str, str]:
    """(body, key): the comment the Action would post for these results, rendered here."""
    from pydantic import ValidationError

    from evalgate.github.comments import comment_key, marker
    from evalgate.report.markdown import COMMENT_LIMIT, ReportContext, render
    from evalgate.results_model import load_results

    try:  # the items are checked as the comment reads them: one pass over a big file, not two
        results = load_results(path, check_items=False)
        key = comment_key(key or results.name or "default")
        return render(results, ReportContext(marker=marker(key), comment=True), limit=COMMENT_LIMIT), key
    except (ValidationError, ValueError, OSError) as exc:
        click.echo(f"error: {path}: not an evalgate results file: {str(exc).splitlines()[0][:200]}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    entry()
