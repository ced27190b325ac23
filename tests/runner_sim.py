"""What the Actions runner does with a container step's files and log, re-implemented for tests.

- `parse_file_commands`: GITHUB_OUTPUT parsing, as the runner's file-command code reads it
  (`name=value` lines, `name<<DELIM` heredocs ended by a line equal to DELIM, CRLF or LF).
- `process_log`: workflow commands recognised in the log (`::cmd props::data`, the legacy
  `##[cmd props]data`), honouring `::stop-commands::TOKEN` until `::TOKEN::`.
- `action_workspace`/`action_env`: the environment and files the runner prepares.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INPUT_DEFAULTS = {
    "spec": "evalgate.yaml",
    "fail-on": "failed",
    "comment": "true",
    "github-token": "",
    "summary": "true",
    "results-path": "evalgate-results.json",
    "working-directory": ".",
    "concurrency": "",
    "comment-key": "",
    "comment-author": "",
    "baseline": "",
    "baseline-artifact": "evalgate-results",
}


class FileCommandError(ValueError):
    pass


def _read_line(text: str, index: int) -> tuple[str | None, int, str | None]:
    if index >= len(text):
        return None, index, None
    end = text.find("\n", index)
    if end < 0:
        return text[index:], len(text), None
    if end > index and text[end - 1] == "\r":
        return text[index: end - 1], end + 1, "\r\n"
    return text[index:end], end + 1, "\n"


def parse_file_commands(text: str) -> list[tuple[str, str]]:
    """(name, value) pairs in file order; raises like the runner on a malformed file."""
    pairs = []
    line, index, _ = _read_line(text, 0)
    while line is not None:
        if line:
            equals, heredoc = line.find("="), line.find("<<")
            if equals >= 0 and (heredoc < 0 or equals < heredoc):
                key, value = line.split("=", 1)
            elif heredoc >= 0 and (equals < 0 or heredoc < equals):
                key, delimiter = line.split("<<", 1)
                if not key or not delimiter:
                    raise FileCommandError(f"Invalid format {line!r}")
                start = end = index
                temp, index, newline = _read_line(text, index)
                while temp != delimiter:
                    if temp is None:
                        raise FileCommandError(f"Matching delimiter not found {delimiter!r}")
                    if newline is None:
                        raise FileCommandError("EOF marker missing new line")
                    end = index - len(newline)
                    temp, index, newline = _read_line(text, index)
                value = text[start:end] if end > start else ""
            else:
                raise FileCommandError(f"Invalid format {line!r}")
            if not key:
                raise FileCommandError("empty name")
            pairs.append((key, value))
        line, index, _ = _read_line(text, index)
    return pairs


def parse_outputs(path: Path) -> dict[str, str]:
    pairs = parse_file_commands(path.read_bytes().decode("utf-8"))  # no newline translation
    names = [k for k, _ in pairs]
    assert len(names) == len(set(names)), f"an output was set twice: {names}"
    return dict(pairs)


@dataclass
class Command:
    name: str
    properties: dict[str, str]
    data: str


def _unescape(text: str, prop: bool) -> str:
    text = text.replace("%0D", "\r").replace("%0A", "\n")
    if prop:
        text = text.replace("%3A", ":").replace("%2C", ",")
    return text.replace("%25", "%")


def _parse_v2(line: str) -> Command | None:
    line = line.strip()
    if not line.startswith("::"):
        return None
    end = line.find("::", 2)
    if end < 0:
        return None
    info, data = line[2:end], line[end + 2:]
    name, _, props = info.partition(" ")
    properties = {}
    for pair in filter(None, props.split(",")):
        key, _, value = pair.partition("=")
        properties[key] = _unescape(value, True)
    return Command(name, properties, _unescape(data, False))


def _parse_v1(line: str) -> Command | None:
    start = line.find("##[")
    if start < 0:
        return None
    end = line.find("]", start)
    if end < 0:
        return None
    info, data = line[start + 3: end], line[end + 1:]
    name, _, props = info.partition(" ")
    properties = {}
    for pair in filter(None, props.split(";")):
        key, _, value = pair.partition("=")
        properties[key] = value
    return Command(name, properties, data)


def process_log(log: str) -> list[Command]:
    """The commands the runner would act on, stop-commands honoured."""
    found: list[Command] = []
    stop_token: str | None = None
    for line in log.splitlines():
        command = _parse_v2(line) or _parse_v1(line)
        if command is None:
            continue
        if stop_token is not None:
            if command.name == stop_token:
                stop_token = None
            continue
        if command.name == "stop-commands":
            stop_token = command.data
            continue
        found.append(command)
    return found


def pull_request_event(repo: str, number: int, *, fork: bool = False) -> dict[str, Any]:
    head_repo = f"someone-else/{repo.split('/')[1]}" if fork else repo
    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "head": {"sha": "a" * 40, "ref": "feature", "repo": {"full_name": head_repo}},
            "base": {"sha": "b" * 40, "ref": "main", "repo": {"full_name": repo}},
        },
        "repository": {"full_name": repo},
    }


@dataclass
class RunnerFiles:
    """The files the runner prepares for one step: workspace, file commands, event."""

    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def file_commands(self) -> Path:
        return self.root / "file_commands"

    @property
    def workflow(self) -> Path:
        return self.root / "workflow"

    @property
    def output(self) -> Path:
        return self.file_commands / "set_output_1"

    @property
    def summary(self) -> Path:
        return self.file_commands / "step_summary_1"

    @property
    def event(self) -> Path:
        return self.workflow / "event.json"

    def make(self, event: dict[str, Any]) -> RunnerFiles:
        for folder in (self.workspace, self.file_commands, self.workflow):
            folder.mkdir(parents=True, exist_ok=True)
        self.output.write_text("")
        self.summary.write_text("")
        self.event.write_text(json.dumps(event))
        return self


def action_env(inputs: dict[str, str], *, workspace: str, output: str, summary: str, event_path: str,
               event_name: str, repository: str, api_url: str) -> dict[str, str]:
    """The container's environment: every declared input set (empty when not given), hyphens kept."""
    env = {f"INPUT_{name.upper()}": value for name, value in {**INPUT_DEFAULTS, **inputs}.items()}
    env.update({
        "GITHUB_ACTIONS": "true",
        "CI": "true",
        "GITHUB_WORKSPACE": workspace,
        "GITHUB_OUTPUT": output,
        "GITHUB_STEP_SUMMARY": summary,
        "GITHUB_EVENT_PATH": event_path,
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_REPOSITORY": repository,
        "GITHUB_API_URL": api_url,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "4242",
        "GITHUB_SHA": "a" * 40,
        "HOME": "/github/home",
        "RUNNER_TEMP": str(Path(output).parent.parent / "runner_temp"),
    })
    return env
