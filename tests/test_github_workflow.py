"""Workflow commands and GITHUB_OUTPUT: read back the way the runner reads them."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from runner_sim import parse_file_commands, process_log

from evalgate.github.workflow import (
    SUMMARY_LIMIT_BYTES,
    Log,
    annotation,
    escape_data,
    escape_property,
    summary_room,
    write_outputs,
)

NASTY = "a\nb=c\r\nverdict<<EOF\nEOF\nghadelimiter_x\n::set-output name=x::y\n%0A %25"


def test_escaping_matches_the_runner() -> None:
    assert escape_data("50%\r\nnext") == "50%25%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_annotation_round_trips_through_the_runner_parser() -> None:
    line = annotation("error", "line1\n::warning::x", file="dir,x:y.yaml", line=3, title="t: a, b")
    [command] = process_log(line)
    assert command.name == "error"
    assert command.properties == {"file": "dir,x:y.yaml", "line": "3", "title": "t: a, b"}
    assert command.data == "line1\n::warning::x"


def test_outputs_cannot_be_forged_by_their_values(tmp_path: Path) -> None:
    path = tmp_path / "out"
    write_outputs(str(path), {"verdict": NASTY, "passed": "false"})
    assert parse_file_commands(path.read_bytes().decode()) == [("verdict", NASTY), ("passed", "false")]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["verdict", "scores", "comment-url"]), st.text()))
def test_any_value_round_trips(values: dict[str, str]) -> None:
    buffer = io.StringIO()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "output"
        write_outputs(str(path), values)
        buffer.write(path.read_bytes().decode("utf-8"))
    # The runner splits lines on \n and \r\n: a value ending in \r is the one thing it alters.
    expected = [(k, v) for k, v in values.items()]
    parsed = parse_file_commands(buffer.getvalue())
    assert [k for k, _ in parsed] == [k for k, _ in expected]
    for (_, got), (_, want) in zip(parsed, expected, strict=True):
        assert got == want or (want.endswith("\r") and got == want[:-1])


def test_untrusted_text_is_printed_with_commands_stopped() -> None:
    stream = io.StringIO()
    log = Log(stream)
    log.annotate("warning", "before")
    with log.untrusted():
        stream.write("::error::forged\n##[error]forged too\n::add-mask::x\n")
    log.annotate("error", "after")
    commands = process_log(stream.getvalue())
    assert [(c.name, c.data) for c in commands] == [("warning", "before"), ("error", "after")]


def test_summary_room_counts_what_is_already_there(tmp_path: Path) -> None:
    path = tmp_path / "summary"
    assert summary_room(str(path)) == SUMMARY_LIMIT_BYTES - 1
    path.write_bytes(b"x" * 1000)
    assert summary_room(str(path)) == SUMMARY_LIMIT_BYTES - 1001
