"""`evalgate init`: a runnable starting point (spec, data, agent stub, GitHub workflow) from package data.

The files come from `evalgate/starters/`: the spec is its head, the template's `target:` and the shared
checks; the template's one setting (the function, command, URL, model or agent id) and the eval's name
are written into it as YAML-quoted strings. Nothing here prompts or prints: the CLI does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

TEMPLATES = ("python", "command", "http", "openai", "mastra")
WORKFLOW = Path(".github/workflows/evalgate.yml")
SPEC = Path("evalgate.yaml")
DATA = Path("data.jsonl")
NAME_MAX = 100


@dataclass(frozen=True)
class Setting:
    """The one thing a template asks for: what it means, its default, what a good value looks like."""

    question: str
    default: str
    pattern: str
    hint: str


SETTINGS = {
    "python": Setting("The agent's function (module:function)", "agent:answer",
                      r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*", "module:function, e.g. agent:answer"),
    "command": Setting("The command that runs your agent", "python3 agent.py", r"\S.*",
                       "a command, e.g. node agent.js"),
    "http": Setting("Your agent's URL", "http://127.0.0.1:8787/answer", r"https?://\S+",
                    "an http:// or https:// URL"),
    "openai": Setting("The model", "gpt-4o-mini", r"\S+", "a model name, e.g. gpt-4o-mini"),
    "mastra": Setting("Your agent's id on the Mastra server", "weatherAgent", r"[^\s/?#]+",
                      "an agent id, e.g. weatherAgent"),
}

# What each template says to do after `init`, before `evalgate run`.
FIRST_STEPS = {
    "python": [],
    "command": [],
    "http": ["python3 agent_server.py &    # the stand-in agent; or point `url:` at yours"],
    "openai": ["export OPENAI_API_KEY=...    # the key the target reads"],
    "mastra": ["npx mastra dev               # in your Mastra project, so the agent answers on :4111",
               "edit data.jsonl              # questions your agent can answer"],
}

DESCRIPTIONS = {
    SPEC: "the spec: the target, its gates and scorers (commented)",
    DATA: "5 items: an input and its ground_truth each",
    WORKFLOW: "the GitHub workflow: the evals on every pull request",
}


@dataclass(frozen=True)
class Starter:
    template: str
    name: str
    setting: str


def check_setting(template: str, value: str) -> str:
    """The setting, stripped; ValueError saying what is expected when it does not fit."""
    setting = SETTINGS[template]
    value = value.strip()
    if not re.fullmatch(setting.pattern, value):
        raise ValueError(f"expected {setting.hint}")
    return value


def check_name(value: str) -> str:
    value = " ".join(value.split())
    if not value or len(value) > NAME_MAX:
        raise ValueError(f"give a name of 1 to {NAME_MAX} characters")
    return value


def default_name(folder: Path) -> str:
    """The folder's name, as a spec name: `my-agent` when it has none (`/`)."""
    name = " ".join(folder.resolve().name.split())[:NAME_MAX]
    return name or "my-agent"


def _read(*parts: str) -> str:
    return resources.files("evalgate").joinpath("starters", *parts).read_text(encoding="utf-8")


def _stubs(starter: Starter) -> dict[Path, str]:
    """The agent stand-in: a python target's function in the module its setting names."""
    if starter.template == "python":
        module, function = starter.setting.split(":")
        text = _read("python", "agent.py").replace("def answer(", f"def {function}(")
        return {Path(*module.split(".")).with_suffix(".py"): text}
    if starter.template == "command":
        return {Path("agent.py"): _read("command", "agent.py")}
    if starter.template == "http":
        return {Path("agent_server.py"): _read("http", "agent_server.py")}
    return {}


def stub_description(template: str) -> str:
    if template == "http":
        return "the agent under test: a stand-in server that works offline"
    return "the agent under test: a stand-in that works offline"


def files(starter: Starter) -> dict[Path, str]:
    """Every file `init` writes, by its path relative to the folder, in the order they are listed."""
    quoted = {"{{name}}": json.dumps(starter.name, ensure_ascii=False),
              "{{setting}}": json.dumps(starter.setting, ensure_ascii=False)}
    spec = _read("spec_head.yaml") + _read(starter.template, "target.yaml") + _read("checks.yaml")
    for placeholder, value in quoted.items():
        spec = spec.replace(placeholder, value)
    return {SPEC: spec, DATA: _read("data.jsonl"), **_stubs(starter), WORKFLOW: _read("workflow.yml")}


def in_the_way(folder: Path, paths: list[Path]) -> list[Path]:
    """The paths that exist already (a file, a folder, a link even to nothing)."""
    return [p for p in paths if (folder / p).exists() or (folder / p).is_symlink()]


def not_folders(folder: Path, paths: list[Path]) -> list[Path]:
    """What stands where a path needs a folder (a file named `.github`): no file of init's, so even
    --force leaves it, and writing would fail half-way."""
    found: list[Path] = []
    for path in paths:
        for parent in reversed(path.parents[:-1]):
            if (folder / parent).exists() and not (folder / parent).is_dir() and parent not in found:
                found.append(parent)
    return found


def write(folder: Path, planned: dict[Path, str]) -> None:
    """Write the files, replacing what is there (the CLI has asked for --force); OSError names the file."""
    for relative, text in planned.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():  # replace the link itself, never the file it points at
            path.unlink()
        with path.open("w", encoding="utf-8", newline="\n") as out:
            out.write(text)
