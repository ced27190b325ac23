"""The architecture holds: imports flow one way, every module imports alone, the map is true.

The import graph is read from the source with `ast`, module-level and in-function imports alike
(only `if TYPE_CHECKING:` blocks are left out: they never run). Importing `a.b.c` runs `a` and
`a.b` first, so an import also depends on each package it enters that the importer is not already
inside: that is how `judge -> scorers.prompts` once ran `scorers/__init__`, which imported the
judged scorers, which imported the half-initialised judge.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "evalgate"
DOCS = ROOT / "docs" / "architecture.md"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# evalgate/starters/ is package data: the agent stubs `evalgate init` copies into a user's folder, no modules
STARTERS = PACKAGE / "starters"
MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if STARTERS not in p.parents}
PACKAGES = {name for name, path in MODULES.items() if path.name == "__init__.py"}


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _imports(name: str, path: Path) -> tuple[set[str], set[str]]:
    """(evalgate modules this one imports, top-level names of other packages it imports)."""
    package = name if name in PACKAGES else name.rpartition(".")[0]
    targets: set[str] = set()
    external: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                targets.add(alias.name)
            continue
        if node.level:  # relative: resolved against this module's package
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            source = ".".join([*base, node.module] if node.module else base)
        else:
            source = node.module or ""
        targets.add(source)
        for alias in node.names:
            if f"{source}.{alias.name}" in MODULES:  # `from pkg import submodule`
                targets.add(f"{source}.{alias.name}")
    own: set[str] = set()
    for target in targets:
        if target.split(".")[0] != "evalgate":
            external.add(target.split(".")[0])
            continue
        if target not in MODULES:
            continue
        inside = {name, *_ancestors(name)}
        own |= {t for t in (*_ancestors(target), target) if t not in inside}
    return own, external


GRAPH: dict[str, set[str]] = {}
EXTERNAL: dict[str, set[str]] = {}
for _name, _path in MODULES.items():
    GRAPH[_name], EXTERNAL[_name] = _imports(_name, _path)


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path (first node repeated at the end), or None."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def _reachable(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in GRAPH[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _in(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


# ---- the graph reader reads what it should ----


def test_the_graph_reader_sees_in_function_relative_and_submodule_imports(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from evalgate.cli import main\n"
        "def f():\n    from evalgate.judge import prompts\n"
        "from ..judge import errors\n"
        "import click\n"
    )
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    own, external = _imports("evalgate.report.probe", path)
    # the package entered counts (its __init__ runs first); evalgate itself, already running, does not
    assert own == {"evalgate.judge", "evalgate.judge.prompts", "evalgate.judge.errors"}
    assert "evalgate.cli" not in own  # TYPE_CHECKING imports never run
    assert external == {"typing", "click"}


def test_a_cycle_is_found_and_shown() -> None:
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


# ---- the rules ----


def test_no_import_cycle() -> None:
    cycle = _find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


CORE = ("evalgate.run.engine", "evalgate.decide.verdict", "evalgate.decide.stats", "evalgate.scorers")
SHELL = ("evalgate.cli", "evalgate.github", "evalgate.report")


@pytest.mark.parametrize("module", [m for m in MODULES if _in(m, *CORE)])
def test_the_core_reaches_no_shell_and_no_click(module: str) -> None:
    reached = _reachable(module) | {module}
    shell = sorted(m for m in reached if _in(m, *SHELL))
    assert not shell, f"{module} reaches {shell}"
    clicky = sorted(m for m in reached if "click" in EXTERNAL[m])
    assert not clicky, f"{module} reaches click through {clicky}"


@pytest.mark.parametrize("module", [m for m in MODULES if _in(m, "evalgate.judge")])
def test_the_judge_imports_no_scorer(module: str) -> None:
    scorers = sorted(m for m in _reachable(module) if _in(m, "evalgate.scorers"))
    assert not scorers, f"{module} reaches {scorers}"


@pytest.mark.parametrize("module", [m for m in MODULES if _in(m, "evalgate.load.spec")])
def test_the_spec_imports_no_scorer_target_or_loader(module: str) -> None:
    banned = ("evalgate.scorers", "evalgate.targets", "evalgate.load.loader", "evalgate.load.build", "evalgate.judge")
    found = sorted(m for m in _reachable(module) if _in(m, *banned))
    assert not found, f"{module} reaches {found}"


@pytest.mark.parametrize("module", [m for m in MODULES if _in(m, "evalgate.github")])
def test_github_renders_through_report_never_through_cli(module: str) -> None:
    assert "evalgate.cli" not in _reachable(module)


# ---- every module and public name imports alone ----


def _fresh_import(statement: str) -> tuple[str, str | None]:
    done = subprocess.run(
        [sys.executable, "-c", statement], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )
    return statement, None if done.returncode == 0 else done.stderr.strip().splitlines()[-1]


def test_every_module_and_public_name_imports_alone_in_a_fresh_interpreter() -> None:
    import evalgate

    statements = [f"import {m}" for m in MODULES]
    statements += [f"from evalgate import {n}" for n in evalgate.__all__]
    with ThreadPoolExecutor(max_workers=4) as pool:  # one interpreter each, a few at a time
        failures = [(s, why) for s, why in pool.map(_fresh_import, statements) if why is not None]
    assert not failures, "\n".join(f"{s}: {why}" for s, why in failures)


# ---- docs/architecture.md is the map of these modules ----


def test_the_architecture_doc_lists_every_module_and_only_real_ones() -> None:
    text = DOCS.read_text(encoding="utf-8")
    listed = set(re.findall(r"`(evalgate/[\w/]+\.py)`", text))
    files = {str(p.relative_to(ROOT)) for p in MODULES.values()}
    assert not listed - files, f"docs/architecture.md lists modules that do not exist: {sorted(listed - files)}"
    assert not files - listed, f"docs/architecture.md does not list: {sorted(files - listed)}"


def _row_key(module: str) -> str | None:
    """A module's row on the map: a stage folder's modules one by one (`load/loader`), else the package or
    module directly under evalgate (`targets`, `api`)."""
    parts = module.split(".")[1:]
    if not parts or (parts[0] in STAGES and len(parts) == 1):  # evalgate's and a stage folder's __init__
        return None
    return "/".join(parts[:2]) if parts[0] in STAGES else parts[0]


STAGES = {"load", "run", "decide", "results", "infra"}
ROW_KEYS = {k for m in MODULES if (k := _row_key(m)) is not None}


def _doc_rows() -> dict[str, int]:
    """The map's rows: each stage module, package or top-level module named on a row of the diagram."""
    diagram = DOCS.read_text(encoding="utf-8").split("```")[1]
    rows: dict[str, int] = {}
    for line in diagram.splitlines():
        names = re.findall(r"(?<![\w/])((?:\w+/)?\w+)(?:/|\.py\b)", re.sub(r"\([^)]*\)", "", line))
        names = [n for n in names if n in ROW_KEYS]
        if names:
            number = max(rows.values(), default=-1) + 1
            for name in names:
                rows.setdefault(name, number)
    return rows


def test_the_architecture_doc_draws_every_import_pointing_down() -> None:
    rows = _doc_rows()
    assert set(rows) == ROW_KEYS, f"not on the map: {sorted(ROW_KEYS - set(rows))}"
    upward = [
        f"{module} (row {rows[k]}) imports {target} (row {rows[t]})"
        for module, targets in GRAPH.items()
        if (k := _row_key(module)) is not None
        for target in targets
        if (t := _row_key(target)) is not None and rows[t] < rows[k]
    ]
    assert not upward, "imports pointing up the map:\n" + "\n".join(sorted(upward))


# ---- the root holds the project's files, nothing stray ----

ROOT_FILES = {
    ".dockerignore", ".gitignore", "Dockerfile", "README.md", "action.yml", "entrypoint.py",
    "evalgate.schema.json", "pyproject.toml",
}


def test_the_root_holds_no_stray_file() -> None:
    """A redirect left behind (`err.txt` once was) is not committed: the root lists only known files."""
    done = subprocess.run(
        ["git", "ls-files"], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    at_root = {line for line in done.stdout.splitlines() if "/" not in line}
    assert at_root <= ROOT_FILES, f"stray files at the root: {sorted(at_root - ROOT_FILES)}"


# ---- no function over 60 lines ----

MAX_FUNCTION_LINES = 60


def function_lengths(tree: ast.AST, path: str) -> Iterator[tuple[str, int]]:
    """(`path:Class.function`, its lines from `def` to its end, its docstring left out) of every function,
    nested ones too (whose lines count in the function around them as well)."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (child.end_lineno or child.lineno) - child.lineno + 1
                first = child.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
                        isinstance(first.value.value, str):
                    lines -= (first.end_lineno or first.lineno) - first.lineno + 1
                yield f"{path}:{prefix}{child.name}", lines
                yield from walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)

    return walk(tree, "")


def test_the_function_length_reader_leaves_docstrings_out() -> None:
    body = "\n".join(f"    x = {n}" for n in range(3))
    source = f'def f():\n    """One\n    two."""\n{body}\n\nclass C:\n    def g(self):\n        return 1\n'
    assert dict(function_lengths(ast.parse(source), "m.py")) == {"m.py:f": 4, "m.py:C.g": 2}


def test_no_function_is_longer_than_60_lines() -> None:
    lengths = {name: lines for path in MODULES.values()
               for name, lines in function_lengths(ast.parse(path.read_text(encoding="utf-8")),
                                                   str(path.relative_to(ROOT)))}
    too_long = sorted(f"{name}: {lines} lines" for name, lines in lengths.items()
                      if lines > MAX_FUNCTION_LINES)
    assert not too_long, "functions over 60 lines (split them):\n" + "\n".join(too_long)


def private_reaches(paths: list[Path]) -> list[str]:
    """`from evalgate.x import _name` in these files: one module reaching into another's private names
    (a dunder such as `__version__` is fine)."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evalgate"):
                found += [f"{path.name}:{node.lineno}: from {node.module} import {a.name}"
                          for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "tests").glob("*.py"), *(ROOT / "bench").glob("*.py")]
    assert private_reaches(sorted(files)) == []


def test_the_private_reach_finder_finds_one(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("from evalgate.results.writer import _x, y\nfrom evalgate import __version__\n")
    assert private_reaches([planted]) == ["planted.py:1: from evalgate.results.writer import _x"]
