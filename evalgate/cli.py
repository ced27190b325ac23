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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from evalgate import __version__
from evalgate.errors import SpecError
from evalgate.infra import logs, redaction
from evalgate.report.labels import FAIL_ON, fails

T = TypeVar("T")
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
    from evalgate.infra import safeio

    safeio.install()


def entry(argv: list[str] | None = None) -> None:
    """The `evalgate` command: one of the documented exit codes, never a traceback."""
    from evalgate.infra import heap, isolation

    if argv is None:  # this process is the command: start it again without the runner's credentials
        isolation.reexec_without_credentials()
        isolation.receive_credentials()
        heap.command_process()
    _safe_streams()
    isolation.register_credential_env()  # a provider key set on the step for another tool is a secret too
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


def _command() -> str:
    """`evalgate run`, `evalgate validate`, ...: how a message names the command that writes it."""
    context = click.get_current_context(silent=True)
    return context.command_path if context is not None else "evalgate"


def _print_spec_error(exc: SpecError) -> None:
    for problem in exc.problems:
        click.echo(f"error: {problem}", err=True)
    click.echo(f"{_command()}: the spec has errors; nothing was run (exit 2)", err=True)


VERBOSE_HELP = "Debug log on stderr: requests (redacted), retries, cache hits, timings. Also EVALGATE_LOG=debug."


def _where(path: Path, exc: OSError) -> str:
    """The path the user gave, and the part of it at fault when that is another (`out/r.json` at `out`)."""
    part = str(exc.filename) if exc.filename else ""
    return str(path) if not part or part == str(path) else f"{path} (at `{part}`)"


def _shown_path(path: Path) -> str:
    """A path inside the working directory as a relative one (`.evalgate/runs/...json`), others as given."""
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _error(message: str) -> None:
    """An error line on stderr that names the command: `evalgate merge: error: ...`."""
    click.echo(f"{_command()}: error: {message}", err=True)


DEFAULT_SPEC = "evalgate.yaml"


def _require_spec(spec: Path) -> None:
    """Exit 2 when SPEC is not there, saying which command looked for what (the default spec or a path)."""
    if spec.exists() or spec.is_symlink():  # a broken link or a folder: the loader says what it is
        return
    command = _command()
    if str(spec) == DEFAULT_SPEC:
        click.echo(f"{command}: error: there is no {DEFAULT_SPEC} in this folder ({Path.cwd()}); give the spec's "
                   f"path (`{command} path/to/spec.yaml`), or start one here with `evalgate init`", err=True)
    else:
        click.echo(f"{command}: error: {spec}: no such spec file; check the path (it is relative to this "
                   "folder)", err=True)
    sys.exit(2)


class Commands(click.Group):
    """The command list of `evalgate --help` with each command's whole first sentence, wrapped, never cut."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalgate")
@click.option("--verbose", "-v", is_flag=True, help=VERBOSE_HELP)
def main(verbose: bool) -> None:
    """evalgate: gates, thresholds and one verdict for LLM agents, in CI."""
    logs.configure(verbose=verbose, reset=True)  # each invocation starts from -v and EVALGATE_LOG alone


@main.command()
@click.argument("spec", default=DEFAULT_SPEC, type=click.Path(dir_okay=False, path_type=Path))
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
@click.option("--html", "html_path", type=FilePath(), help="Also write the HTML report here.")
@click.option("--no-save", is_flag=True,
              help="Without --output, keep no results (by default: .evalgate/runs/ and .evalgate/last.json).")
def run(spec: Path, output: Path | None, fail_on: str, concurrency: int | None, resume: bool, no_cache: bool,
        junit: Path | None = None, repeats: int | None = None, baseline: Path | None = None,
        shard: str | None = None, max_cost: float | None = None, html_path: Path | None = None,
        no_save: bool = False) -> None:
    """Run SPEC (default evalgate.yaml) and print the verdict.

    Without --output the results are kept in .evalgate/runs/ and .evalgate/last.json (--no-save: not)."""
    from evalgate.api import BaselineError, run_spec
    from evalgate.infra import isolation
    from evalgate.results.lock import WriterBusy

    _safe_streams()
    _require_spec(spec)
    picked = _checked_run_options(output, resume, junit, html_path, baseline, shard)
    isolation.scrub_process_env()  # before any user code is imported; `pass_env:` puts names back
    output, kept_at = _results_path(output, no_save)
    display = _RunDisplay(junit, picked)
    started_in = os.getcwd()  # the code under test may change it: --junit is still relative to the user's
    try:
        result = run_spec(
            spec,
            output=output,
            concurrency=concurrency,
            on_start=display.on_start,
            on_result=display.on_result,
            resume=resume,
            use_cache=not no_cache,  # the target's cache and the judge's
            keep_items=(junit is not None or html_path is not None) and output is None,  # they need the items
            repeats=repeats,
            baseline=baseline,
            shard=picked,
            max_cost=max_cost,
        )
    except SpecError as exc:
        _print_spec_error(exc)
        sys.exit(2)
    except (BaselineError, WriterBusy) as exc:  # a baseline that cannot be read, --output being written: nothing ran
        _error(f"{exc}")
        sys.exit(2)
    except OSError as exc:  # e.g. --output in a folder that cannot be created
        shown = _where(output, exc) if output is not None else str(exc.filename or "")
        _error(f"cannot write the results: {exc.strerror or exc}: {shown}")
        sys.exit(2)
    except KeyboardInterrupt:
        display.close()
        # before the first item (a slow import, the spec's validation) no results file was written
        where = f"; finished items are in {output}" if output and Path(output).is_file() else ""
        click.echo(f"{_command()}: interrupted{where}", err=True)
        sys.exit(isolation.interrupt_exit_code())
    finally:
        display.close()
        with contextlib.suppress(OSError):
            os.chdir(started_in)
    output = _show_run(result, display.failing.ids, picked, output, kept_at, Path(started_in))
    _write_reports(result, html_path, junit)
    sys.exit(exit_code(result.verdict, fail_on, result.outcome.failure_reason))


def _checked_run_options(output: Path | None, resume: bool, junit: Path | None, html_path: Path | None,
                         baseline: Path | None, shard: str | None) -> Any:
    """The shard picked (or None); exit 2 with what to change on options that do not go together."""
    from evalgate.api import real_path
    from evalgate.results.shards import parse_shard

    picked = None
    if shard is not None:
        try:
            picked = parse_shard(shard)
        except ValueError as exc:
            _error(f"--shard: {exc}")
            sys.exit(2)
        if output is None:
            _error("--shard needs --output PATH: `evalgate merge` joins the shards' results files")
            sys.exit(2)
        if baseline is not None:  # a shard holds part of the items: only the merged run is comparable
            _error("--baseline compares a whole run, not a shard: `evalgate merge` the shards, then "
                   "`evalgate compare BASE.json MERGED.json`")
            sys.exit(2)
    if resume and output is None:
        _error("--resume needs --output PATH (the run to resume)")
        sys.exit(2)
    for flag, path in (("--junit", junit), ("--html", html_path)):
        if path is not None and output is not None and real_path(path) == real_path(output):
            _error(f"{flag} and --output are the same file; give each its own path")
            sys.exit(2)
    if junit is not None:  # said before the run: a FIFO there would wait for a reader after every item ran
        from evalgate.infra.files import check_writable

        try:
            check_writable(junit)
        except OSError as exc:
            _error(f"cannot write the JUnit XML: {exc.strerror or exc}: {_where(junit, exc)}")
            sys.exit(2)
    return picked


def _results_path(output: Path | None, no_save: bool) -> tuple[Path | None, Path | None]:
    """(where the results go, the kept run's path when evalgate chose it): without --output a run is kept in
    .evalgate/runs/ unless --no-save; a folder that cannot be written keeps nothing, with a warning."""
    if output is not None or no_save:
        return output, None
    from evalgate.results import kept_runs

    try:
        kept_at = kept_runs.new_run_path(Path.cwd()).absolute()
    except OSError as exc:  # a read-only checkout: the run goes on, keeping nothing
        click.echo(f"warning: the results are not kept ({exc.strerror or exc}: {exc.filename}); "
                   "give --output or --no-save", err=True)
        return None, None
    return kept_at, kept_at


class _RunDisplay:
    """What the terminal shows while a run goes: its warnings, a progress bar, the failing items' ids."""

    def __init__(self, junit: Path | None, picked: Any) -> None:
        from evalgate.report.terminal import FailingIds, Progress

        self.junit, self.picked = junit, picked
        self.failing = FailingIds()
        self.progress: Progress | None = None

    def on_start(self, loaded: Any) -> None:
        from evalgate.api import network_retries, refuse_clobber
        from evalgate.report.terminal import Progress

        if self.junit is not None:
            refuse_clobber(loaded, self.junit, "--junit")
        for warning in loaded.warnings:
            click.echo(f"warning: {warning}", err=True)
        total = loaded.item_count
        if self.picked is not None:
            from evalgate.results.shards import missing_ids

            total = -(-total // self.picked.count)  # about this many: ids hash evenly
            if missing_ids(loaded):
                click.echo("warning: items without an `id` are sharded by their position (item-N): "
                           "give every item an id so reordering the data keeps each in its shard", err=True)
        self.progress = Progress(total, sys.stderr, sys.stderr.isatty(), retries=network_retries(loaded))

    def on_result(self, item: Any) -> None:
        self.failing.add(item)
        if self.progress is not None:
            self.progress.tick(item.errored)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.close()


def _show_run(result: Any, failing_ids: Any, picked: Any, output: Path | None, kept_at: Path | None,
              started_in: Path) -> Path | None:
    """The verdict table, the run's notes and warnings, where the results are (a kept run moved to its name
    in .evalgate/runs/ first); returns that path."""
    from evalgate.report.terminal import render_table

    for note in result.notes:
        click.echo(f"warning: {note}", err=True)
    color = sys.stdout.isatty()
    click.echo(render_table(result, failing_ids, color=color), color=color)
    for warning in getattr(result, "extra_summary", {}).get("warnings", ()):
        click.echo(f"warning: {warning}", err=True)
    if picked is not None:
        click.echo(f"shard {picked}: this verdict is the shard's own; `evalgate merge` gives the run's")
    if kept_at is not None and result.results_path is not None and Path(result.results_path).is_file():
        from evalgate.results import kept_runs

        try:
            output = result.results_path = kept_runs.keep(started_in, Path(result.results_path), result.name)
        except OSError as exc:
            click.echo(f"warning: the run's results stay in {output}: {exc.strerror or exc}", err=True)
    if output is not None:
        click.echo(f"results: {_shown_path(Path(output))}")
    return output


def _write_reports(result: Any, html_path: Path | None, junit: Path | None) -> None:
    """The HTML report and the JUnit XML the run was asked for; exit 2 when one cannot be written."""
    writers = ((html_path, _write_html, "the HTML report"), (junit, _write_junit, "the JUnit XML"))
    for path, write, what in writers:
        if path is None:
            continue
        try:
            write(result, path)
        except OSError as exc:
            click.echo(f"{_command()}: cannot write {what}: {exc.strerror or exc}: {path}", err=True)
            sys.exit(2)


@main.command()
@click.argument("spec", default=DEFAULT_SPEC, type=click.Path(dir_okay=False, path_type=Path))
def validate(spec: Path) -> None:
    """Check SPEC and its data without running anything."""
    from evalgate.api import prepare_target
    from evalgate.infra import isolation
    from evalgate.load.loader import load_spec

    _safe_streams()
    _require_spec(spec)
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
@click.option("--errors", type=click.Choice(["fail", "skip"]),
              help="An item that errored on one side: a failure there (default), or left out.")
@click.option("--when-uncertain", type=click.Choice(["pass", "fail"]),
              help="fail: a gate or threshold must show its drop is within max_drop (default pass).")
@click.option("--fail-on", type=click.Choice(sorted(FAIL_ON)), default="failed", show_default=True,
              help="Verdicts (after the comparison) that exit 1.")
def compare_command(base: Path, head: Path, output: Path | None, confidence: float | None, max_drop: float | None,
                    correction: str | None, errors: str | None, when_uncertain: str | None, fail_on: str) -> None:
    """Compare HEAD.json with BASE.json (the base branch's results): paired, entry by entry."""
    _safe_streams()
    verdict, reason = _writing(output, lambda: _compare(base, head, output, confidence=confidence, max_drop=max_drop,
                                                        correction=correction, errors=errors,
                                                        when_uncertain=when_uncertain))
    sys.exit(exit_code(verdict, fail_on, reason))


@main.command(name="plan")
@click.argument("results", metavar="RESULTS.json", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--max-drop", "drop", type=FiniteFloat(0.0, 1.0, min_open=True), required=True,
              help="The drop to find: a regression of this size must fail the comparison.")
@click.option("--power", type=FiniteFloat(0.5, 1.0, max_open=True), default=0.8, show_default=True,
              help="The chance a drop of that size is found.")
@click.option("--entries", type=click.IntRange(min=1),
              help="Entries compared together (default: the gates and thresholds of RESULTS.json).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan_command(results: Path, drop: float, power: float, entries: int | None, as_json: bool) -> None:
    """How many items, or repeats, the suite of RESULTS.json needs to find a drop (docs/statistics.md)."""
    import json

    from evalgate.decide.planning import plan_lines, plan_results
    from evalgate.infra.files import MAX_RESULTS_BYTES, read_capped

    _safe_streams()
    try:  # a regular file under the cap (docs/security.md): a FIFO or /dev/zero is refused, not read
        raw = json.loads(read_capped(results, limit=MAX_RESULTS_BYTES, what="results file"))
        if not isinstance(raw, dict) or not isinstance(raw.get("items"), list):
            raise ValueError("it holds no item records")
        plan = plan_results(raw, drop, power, entries)
    except OSError as exc:
        _error(f"{exc.strerror or exc}: {exc.filename or results}")
        sys.exit(2)
    except (ValueError, TypeError, AttributeError) as exc:
        _error(f"{results}: cannot plan from it ({(str(exc).splitlines() or [type(exc).__name__])[0][:200]})")
        sys.exit(2)
    too_small = [e.id for e in plan.entries if e.max_drop >= drop]
    if too_small:
        click.echo(f"error: --max-drop {drop:g} is not above the drop the comparison tolerates for "
                   f"{', '.join(too_small[:5])} (compare: max_drop); ask for a larger drop", err=True)
        sys.exit(2)
    click.echo(json.dumps(plan.to_dict(), indent=2) if as_json else "\n".join(plan_lines(plan)))


def _writing(output: Path | None, work: Any) -> Any:
    """`work()` holding --output's lock (evalgate.results.lock): exit 2 while another process writes that file."""
    from evalgate.results.lock import WriterBusy, writing

    held = contextlib.ExitStack()
    try:
        if output is not None:
            held.enter_context(writing(output))
    except WriterBusy as exc:
        _error(f"{exc}")
        sys.exit(2)
    except OSError as exc:  # the lock file's folder cannot be written (nor could the results), or it is in the way
        _error(f"{exc.strerror or exc}: {exc.filename or output}")
        sys.exit(2)
    with held:
        return work()


def _compare(base: Path, head: Path, output: Path | None, **overrides: Any) -> tuple[str | None, str | None]:
    """Compare HEAD's results file with BASE's, print the comparison, write HEAD with it to `output`.

    Returns the verdict after the comparison and its failure reason; exits 2 when a file is not results.
    overrides: confidence, max_drop, correction, errors, when_uncertain (None: HEAD's spec `compare:`, else the
    defaults)."""

    from pydantic import ValidationError

    from evalgate.decide.comparison import CompareOptions, add_to_results, compare_results
    from evalgate.infra.files import UnreadableFile
    from evalgate.report.terminal import comparison_section
    from evalgate.results.model import ItemError, load_results
    from evalgate.results.writer import replaceable_file, write_results_streamed

    try:
        if output is not None:
            replaceable_file(output)  # before any work: HEAD with the comparison is renamed over it
        reading = base
        base_results = load_results(base, check_items=False)  # each checked to be a file first; its items
        reading = head  # are checked as the comparison reads them
        head_results = load_results(head, check_items=False)
        head_raw = head_results.file_header
    except UnreadableFile as exc:
        _error(str(exc))
        sys.exit(2)
    except (ValidationError, ValueError) as exc:
        _error(f"{reading}: not an evalgate results file ({str(exc).splitlines()[0][:200]})")
        sys.exit(2)
    except OSError as exc:
        _error(f"{exc.strerror or exc}: {exc.filename or base}")
        sys.exit(2)
    try:
        options = CompareOptions.from_settings(head_raw.get("compare_settings"), **overrides)
    except ValueError as exc:
        _error(f"{head}: its compare_settings cannot be used ({exc}); fix or remove them")
        sys.exit(2)
    try:
        comparison = compare_results(base_results, head_results, options)
    except ItemError as exc:
        _error(f"{exc.path}: not an evalgate results file ({str(exc).splitlines()[0][:200]})")
        sys.exit(2)
    add_to_results(head_raw, comparison)
    title, rows = comparison_section(head_raw["comparison"])
    click.echo("\n".join([title, *rows]))
    verdict = head_raw.get("verdict")
    click.echo(f"verdict: {verdict.upper() if verdict else 'none'}"
               + (f" ({len(comparison.regressions)} regressed)" if comparison.regressions else "")
               + (f" ({uncertain} uncertain under when_uncertain: fail)"
                  if (uncertain := len(comparison.failures) - len(comparison.regressions)) else ""))
    if output is not None:
        try:
            write_results_streamed(output, head_raw, head_results.each_record())
        except OSError as exc:
            _error(f"cannot write the results: {exc.strerror or exc}: {exc.filename or output}")
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
    from evalgate.report.terminal import render_table
    from evalgate.results.lock import WriterBusy
    from evalgate.results.merge import MergeError
    from evalgate.results.merge import merge as merge_files

    _safe_streams()
    if baseline is not None and output is None:
        _error("--baseline needs --output PATH: the merged results the comparison is added to")
        sys.exit(2)
    try:
        result = merge_files(results_files, output)
    except (MergeError, WriterBusy) as exc:
        _error(f"{exc}")
        click.echo(f"{_command()}: nothing was merged (exit 2)", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(f"{_command()}: {exc.strerror or exc}: {exc.filename or output}", err=True)
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
@click.argument("spec", default=DEFAULT_SPEC, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the estimate as JSON.")
def estimate(spec: Path, as_json: bool) -> None:
    """Estimate SPEC's calls, tokens and cost from its data and price tables, without running anything."""
    import json

    from evalgate.load.loader import load_spec
    from evalgate.run.estimate import estimate as estimate_spec
    from evalgate.run.estimate import render

    _safe_streams()
    _require_spec(spec)
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

    from evalgate.load.loader import json_schema

    click.echo(json.dumps(json_schema(), indent=2))



@main.command()
@click.option("--template", "-t", type=click.Choice(["python", "http", "openai", "mastra", "command"]),
              help="The kind of agent: a python function (default; runs offline as written), a service over "
                   "HTTP, an OpenAI-compatible model, an agent on a Mastra server, or any command.")
@click.option("--force", is_flag=True, help="Overwrite the files that exist already.")
def init(template: str | None, force: bool) -> None:
    """Start an eval in this folder: evalgate.yaml, data.jsonl, an agent stub and a GitHub workflow.

    Asks for the template, the eval's name and the agent when standard input is a terminal; takes the
    defaults otherwise. Never overwrites a file without --force."""
    from evalgate import scaffold

    _safe_streams()
    folder = Path.cwd()
    starter = _ask_starter(template, folder) if sys.stdin.isatty() else scaffold.Starter(
        template or "python", scaffold.default_name(folder), scaffold.SETTINGS[template or "python"].default)
    planned = scaffold.files(starter)
    blocked = scaffold.not_folders(folder, list(planned))
    taken = [] if force else scaffold.in_the_way(folder, list(planned))
    for path in blocked:
        _error(f"{path} is a file where a folder is needed; move it away")
    for path in taken:
        _error(f"{path} exists already")
    if blocked or taken:
        fix = "move those files away" + ("" if blocked else ", or overwrite them with `evalgate init --force`")
        click.echo(f"{_command()}: nothing was written; {fix} (exit 2)", err=True)
        sys.exit(2)
    try:
        scaffold.write(folder, planned)
    except OSError as exc:
        _error(f"cannot write {exc.filename or folder}: {exc.strerror or exc}")
        sys.exit(2)
    _print_started(starter, planned)


def _ask_starter(template: str | None, folder: Path) -> Any:
    """The template, the name and the template's setting, asked at the terminal (defaults offered)."""
    from evalgate import scaffold

    def checked(check: Any) -> Any:
        def convert(value: str) -> str:
            try:
                return str(check(value))
            except ValueError as exc:
                raise click.BadParameter(str(exc)) from None

        return convert

    if template is None:
        template = click.prompt("Template", type=click.Choice(scaffold.TEMPLATES), default="python")
    assert template is not None
    name = click.prompt("Name of the eval", default=scaffold.default_name(folder),
                        value_proc=checked(scaffold.check_name))
    setting = scaffold.SETTINGS[template]
    value = click.prompt(setting.question, default=setting.default,
                         value_proc=checked(lambda v: scaffold.check_setting(template, v)))
    return scaffold.Starter(template, name, value)


def _print_started(starter: Any, planned: dict[Path, str]) -> None:
    from evalgate import scaffold

    click.echo(f"evalgate init: {starter.name}, from the {starter.template} template:")
    width = max(len(str(path)) for path in planned) + 3
    for path in planned:
        what = scaffold.DESCRIPTIONS.get(path) or scaffold.stub_description(starter.template)
        click.echo(f"  {path!s:<{width}}{what}")
    click.echo("next:")
    for step in [*scaffold.FIRST_STEPS[starter.template], "evalgate run                 # runs evalgate.yaml"]:
        click.echo(f"  {step}")


# ---- the Action's commands: report and comment (evalgate/report, evalgate/github) ----


def _write_junit(result: Any, path: Path) -> None:
    """JUnit XML from the results file when there is one, else from the items kept in memory."""
    from evalgate.infra.files import write_file
    from evalgate.report.junit import render_junit
    from evalgate.results.model import Results, load_results

    if result.results_path is not None:
        results = load_results(Path(result.results_path))
    else:
        results = Results.model_validate(result.to_dict())
    write_file(path, render_junit(results).encode("utf-8"))
    click.echo(f"junit: {path}")


def _write_html(result: Any, path: Path) -> None:
    """The HTML report of the run just finished (from its results file, else from the items kept)."""
    from evalgate.report.html import render_html, write_html
    from evalgate.results.model import Results, load_results

    if result.results_path is not None:
        results = load_results(Path(result.results_path))
    else:
        results = Results.model_validate(result.to_dict())
    write_html(path, render_html(results))
    click.echo(f"html: {path}")


@main.command()
@click.argument("results_file", metavar="[RESULTS.json]", required=False,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["markdown", "junit", "html"]), default="markdown",
              show_default=True)
@click.option("--run-url", default="", help="A workflow run to link from the footer.")
def report(results_file: Path | None, fmt: str, run_url: str) -> None:
    """Render a results file (default: the last run's) as the Markdown report (job summary, PR comment),
    JUnit XML or the HTML report."""
    from evalgate.report.junit import render_junit
    from evalgate.report.markdown import ReportContext, render

    if fmt == "html":
        from evalgate.report.html import render_html

        page = _read_results(results_file, render_html)
        stdout = click.get_binary_stream("stdout")
        stdout.write(page.encode("utf-8", "backslashreplace"))
        stdout.flush()
        return
    text = _read_results(results_file, lambda results: render_junit(results) if fmt == "junit"
                         else render(results, ReportContext(run_url=run_url)))
    click.echo(text, nl=False)


@main.command()
@click.argument("results_file", metavar="[RESULTS.json]", required=False,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
def view(results_file: Path | None) -> None:
    """Open the HTML report of a results file (default: the last run's) in the browser."""
    import tempfile
    import webbrowser

    from evalgate.report.html import render_html, write_html

    html = _read_results(results_file, render_html)
    folder = Path(tempfile.mkdtemp(prefix="evalgate-report-"))
    page = folder / "report.html"
    write_html(page, html)
    click.echo(f"report: {page}")
    if not webbrowser.open(page.as_uri()):
        click.echo("no browser could be started: open the file above", err=True)


def _read_results(results_file: Path | None, render: Callable[[Any], T]) -> T:
    """The results to report (the file given, else the last run's: .evalgate/last.json) rendered by `render`;
    exit 2 if unusable, an item that is no record found as the items are read included."""
    from pydantic import ValidationError

    from evalgate.errors import not_a_file
    from evalgate.results.kept_runs import last_run
    from evalgate.results.model import load_results

    if results_file is None:
        results_file = last_run(Path.cwd())
        if results_file is None:
            click.echo("error: no results file given and no run kept here (.evalgate/last.json): run "
                       "`evalgate run` first, or give RESULTS.json", err=True)
            sys.exit(2)
    unusable = not_a_file(results_file, what="results file")
    if unusable is not None:
        _error(f"{results_file}: {unusable}")
        sys.exit(2)
    try:  # the items are checked as the report reads them: one pass over a big file, not two
        return render(load_results(results_file, check_items=False))
    except (ValidationError, ValueError) as exc:
        _error(f"{results_file} is not an evalgate results file: {str(exc).splitlines()[0]}")
        sys.exit(2)


@main.command()
@click.option("--results", "results_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Render the comment from this results file (escaped as the Action escapes it): for fork PRs.")
@click.option("--body-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Post this body (the Action's comment-file output); @mentions in it are broken.")
@click.option("--pr", "pr_number", required=True, type=click.IntRange(min=1), help="The pull request number.")
@click.option("--repo", envvar="GITHUB_REPOSITORY", required=True, help="owner/name (default: $GITHUB_REPOSITORY).")
@click.option("--key", default=None,
              help="The sticky comment's key. With --results: this, else `$GITHUB_WORKFLOW/$GITHUB_JOB` of the "
                   "job posting it, never the results' own name (a fork wrote it). With --body-file: the body's "
                   "marker, else `default`.")
@click.option("--head-sha", default=None, help="Refuse unless the PR's head is this commit (workflow_run safety).")
@click.option("--token-env", default="GITHUB_TOKEN", show_default=True, help="The variable holding the token.")
@click.option("--author", default="", help="The login the token writes as (default: asked of GitHub's GraphQL viewer).")
@click.option("--github-timeout", type=click.FloatRange(min=0, min_open=True, max=3600), default=120.0,
              show_default=True, help="Seconds every GitHub call of this command may take in all, waits included.")
def comment(results_file: Path | None, body_file: Path | None, pr_number: int, repo: str, key: str | None,
            head_sha: str | None, token_env: str, author: str = "", github_timeout: float = 120.0) -> None:
    """Post or update the sticky PR comment, without running the PR's code.

    From a fork's run, give `--results`: the comment is rendered here, so whatever the fork wrote into
    the results is escaped text. A `--body-file` is posted as written, its @mentions and #refs broken."""
    import re

    from evalgate.github.comments import CommentError, GitHub
    from evalgate.infra.net import HttpClient, RetryPolicy, header_problem

    if (results_file is None) == (body_file is None):
        _error("give one of --results (a fork's results file) or --body-file")
        sys.exit(2)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo):
        _error(f"--repo must be owner/name, got {repo!r}")
        sys.exit(2)
    from evalgate.infra.isolation import getenv

    token = getenv(token_env) or ""  # the CLI started again without it in its environment
    if not token:
        _error(f"${token_env} is empty: a token with pull-requests: write is needed")
        sys.exit(2)
    problem = header_problem("Authorization", token.strip(), token_env)
    if problem is not None:
        click.echo(f"error: {problem}", err=True)
        sys.exit(2)
    token = token.strip()
    redaction.register([token])
    if results_file is not None:
        body, key = _comment_from_results(results_file, key or _trusted_key(os.environ))
    else:
        assert body_file is not None
        body, key = _comment_from_body_file(body_file, key)
    try:  # proxies and the CA bundle come from the environment, as for every other request
        http = HttpClient(concurrency=1, retries=RetryPolicy(attempts=1), timeout_s=30.0)
    except ValueError as exc:
        _error(f"{exc}")
        sys.exit(2)
    client = GitHub(os.environ.get("GITHUB_API_URL") or "https://api.github.com", token, http, author=author,
                    graphql=os.environ.get("GITHUB_GRAPHQL_URL") or None, deadline_s=github_timeout)
    try:
        if head_sha and client.pull_head_sha(repo, pr_number) != head_sha:
            _error(f"pull request #{pr_number}'s head is not {head_sha}; not commenting")
            sys.exit(1)
        done = client.upsert(repo, pr_number, body, key)
    except (CommentError, ValueError) as exc:  # ValueError: an answer that is not JSON
        reason = exc if isinstance(exc, CommentError) else f"an unexpected answer ({type(exc).__name__})"
        _error(f"the comment was not posted: {reason}")
        sys.exit(1)
    finally:
        http.close()
    click.echo(f"comment {done}")


def _comment_from_body_file(path: Path, key: str | None) -> tuple[str, str]:
    """(body, key): a body file's text as the comment, its marker first and its text made harmless."""
    from evalgate.github.comments import comment_key, marker, marker_in
    from evalgate.infra.textsafe import visible
    from evalgate.report.markdown import COMMENT_LIMIT, hard_cut, no_pings, utf8_size

    body = path.read_text(encoding="utf-8", errors="replace")
    found = marker_in(body)
    key = comment_key(key or found or "default")
    rest = body.split("\n", 1)[1] if found and "\n" in body else ("" if found else body)
    # The marker goes first: it is how the next run finds this comment. The body is a fork's data,
    # so no other line may pass for a marker (another job's comment would be taken for it), it
    # pings nobody under this token's name, and it hides no text from the people (and models) reading it.
    body = marker(key) + "\n" + no_pings(visible(rest, keep_cr=True).replace("<!-- evalgate:", "&lt;!-- evalgate:"))
    if utf8_size(body) > COMMENT_LIMIT:
        body = hard_cut(body, COMMENT_LIMIT, utf8_size)
    return body, key


def _trusted_key(environ: Mapping[str, str]) -> str:
    """The sticky key of a comment rendered from results a fork wrote: chosen by the job posting it (its
    workflow and job, which the runner sets), never the results' `name`, which would let a fork's run
    overwrite another job's verdict. Exit 2 when there is neither `--key` nor a workflow to derive it from."""
    workflow, job = environ.get("GITHUB_WORKFLOW", "").strip(), environ.get("GITHUB_JOB", "").strip()
    if not (workflow and job):
        click.echo("error: --results needs --key (the comment's key; outside a workflow it cannot be derived "
                   "from $GITHUB_WORKFLOW and $GITHUB_JOB): the results' name is the fork's word", err=True)
        sys.exit(2)
    return f"{workflow}/{job}"


def _comment_from_results(path: Path, key: str) -> tuple[str, str]:
    """(body, key): the comment the Action would post for these results, rendered here."""
    from pydantic import ValidationError

    from evalgate.github.comments import comment_key, marker
    from evalgate.report.markdown import COMMENT_LIMIT, ReportContext, render
    from evalgate.results.model import load_results

    try:  # the items are checked as the comment reads them: one pass over a big file, not two
        results = load_results(path, check_items=False)
        key = comment_key(key)
        return render(results, ReportContext(marker=marker(key), comment=True), limit=COMMENT_LIMIT), key
    except (ValidationError, ValueError, OSError) as exc:
        _error(f"{path}: not an evalgate results file: {str(exc).splitlines()[0][:200]}")
        sys.exit(2)


def _verbose_command(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        logs.configure(verbose=True)


# `evalgate run -v` as well as `evalgate -v run`: every command takes the flag (commands added later too).
for _each_command in main.commands.values():
    _each_command.params.append(click.Option(["--verbose", "-v"], is_flag=True, expose_value=False,
                                        callback=_verbose_command, help=VERBOSE_HELP))


if __name__ == "__main__":
    entry()
