"""Spec errors that name the file, the line and what to change.

Pydantic's errors are translated here: locations become lines (via yamlpos), unknown keys
get the closest valid key, unknown `type`s the closest registered type.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # SpecError and display_path are imported by every command, pydantic only by some
    from pydantic import BaseModel, ValidationError

    from evalgate.load.yaml_positions import Positions

MAX_PROBLEMS = 20


class Problem:
    """What is wrong, and where: a file, a line (None: the file as a whole) and a message.

    A plain class: every command imports this module, and a dataclass generates and compiles its
    methods at import (about 0.4 ms, and `dataclasses` itself 0.7 ms for `evalgate --help`)."""

    __slots__ = ("file", "line", "message")

    def __init__(self, file: str, line: int | None, message: str) -> None:
        self.file = file
        self.line = line
        self.message = message

    def __repr__(self) -> str:
        return f"Problem({self.file!r}, {self.line!r}, {self.message!r})"

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {shortened(self.message)}"


MAX_MESSAGE_CHARS = 2000


def shortened(message: str) -> str:
    """A message that quotes a long value (a 100 KB `type:`) cut in its middle: its start says what
    is wrong and where, its end what to change; a value pages long in between hides both."""
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    head, tail = MAX_MESSAGE_CHARS * 3 // 5, MAX_MESSAGE_CHARS // 4
    return f"{message[:head]} ... ({len(message) - head - tail:,} characters left out) ... {message[-tail:]}"


class SpecError(Exception):
    """One or more problems with a spec or its data; the CLI prints them and exits 2.

    The same problem on many lines of a file is one problem (`grouped`); at most MAX_PROBLEMS are kept."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = grouped(problems)[:MAX_PROBLEMS]
        super().__init__("\n".join(str(p) for p in self.problems))


LINES_SHOWN = 5  # of a problem repeated on many lines, the line numbers listed after its first
MAX_COLLECTED = 10_000  # problems read from a data set before its reader stops, repeated ones included


def grouped(problems: Sequence[Problem]) -> list[Problem]:
    """Problems with one message in one file as one: at its first line, saying on how many more lines
    and which (`... (and 19 more lines: 2, 3, 4, 5, 6, …)`). A misnamed field on every line of a data
    file is one error to fix, not a screenful; distinct problems keep their order."""
    import re  # only when there are problems: not on every command's start

    groups: dict[tuple[str, str], list[Problem]] = {}
    for problem in problems:  # items inline in the spec are named by index: `data[3].inptu: ...` is `data[0]`'s too
        key = re.sub(r"^data\[\d+\]", "data[]", problem.message)
        groups.setdefault((problem.file, key), []).append(problem)
    out: list[Problem] = []
    for (file, _), same in groups.items():
        first = same[0]
        message = first.message
        more = sorted({p.line for p in same[1:] if p.line and p.line != first.line})
        if not more:
            out.append(first)
            continue
        shown = ", ".join(str(line) for line in more[:LINES_SHOWN]) + (", …" if len(more) > LINES_SHOWN else "")
        lines = "line" if len(more) == 1 else "lines"
        out.append(Problem(file, first.line, f"{message} (and {len(more)} more {lines}: {shown})"))
    return out


TOO_DEEP = "nested too deeply to read; flatten the structure"


def not_utf8(exc: UnicodeDecodeError) -> str:
    """What to change when a file is not UTF-8 text."""
    return f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x}); save the file as UTF-8"


def not_utf8_line(exc: UnicodeDecodeError) -> int:
    """The line of the first byte that is not UTF-8, when the whole file was decoded at once."""
    return exc.object[: exc.start].count(b"\n") + 1


def display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except (ValueError, RuntimeError, OSError):  # outside the cwd; a symlink loop (RuntimeError before 3.13)
        return str(path)


def suggest(word: str, choices: Sequence[str]) -> str:
    """' Did you mean `x`?' for the closest choice, or a list of choices when none is close."""
    import difflib  # only when a spec has a problem: not on every command's start

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if close:
        return f"; did you mean `{close[0]}`?"
    if len(choices) <= 12:
        return "; valid: " + ", ".join(f"`{c}`" for c in choices)
    return ""


def show_loc(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def problems_from_validation(
    exc: ValidationError,
    *,
    file: str,
    positions: Positions,
    model: type[BaseModel],
    raw: Any,
    prefix: tuple[str | int, ...] = (),
    type_names: Sequence[str] = (),
) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[tuple[Any, ...]] = set()
    errors = exc.errors(include_url=False)
    paths = [_raw_path(raw, e["loc"], name_last=e["type"] in _KEY_ERRORS) for e in errors]
    specific = [p for e, p in zip(errors, paths, strict=True) if not _is_type_error(e["type"])]
    typo_fixes = _typo_fixes(errors, paths, model, raw)
    shapes: dict[tuple[str | int, ...], list[str]] = {}  # every shape a union accepts, by path
    for error, path in zip(errors, paths, strict=True):
        if _is_type_error(error["type"]):
            shapes.setdefault(path, []).append(_shape(error["msg"]))
    for error, path in zip(errors, paths, strict=True):
        loc = tuple(error["loc"])
        kind = error["type"]
        if _is_type_error(kind) and any(p[: len(path)] == path and (len(p) > len(path) or p in specific)
                                        for p in paths):
            # another branch of a union explains the same value better: one that took its shape (a mapping for
            # `threshold: {max: x}`) and says what is wrong inside, or says more than "a valid ..."
            continue
        if _is_type_error(kind):  # a mapping, not pydantic's "valid dictionary or instance of BudgetSpec"
            error = {**error, "msg": "Input should be " + " or ".join(dict.fromkeys(shapes[path]))}
        if kind == "missing" and (path[:-1], str(loc[-1])) in typo_fixes:
            continue  # the unknown key's "did you mean" already says it
        where = show_loc((*prefix, *path))
        if kind == "extra_forbidden":
            key = str(path[-1]) if path else str(loc[-1])
            valid = _fields_at(model, loc[:-1], raw)
            message = f"{where}: unknown key `{key}`" + suggest(key, valid)
            line = positions.line((*prefix, *path), key=True)
        elif kind in ("union_tag_invalid", "union_tag_not_found"):
            ctx = error.get("ctx") or {}
            tag = ctx.get("tag")
            if tag is None:
                names = [n for n in type_names if n.islower()]  # camelCase aliases would double the list
                message = f"{where}: needs a `type`; valid: " + ", ".join(f"`{n}`" for n in names)
            else:
                message = f"{where}: unknown type `{tag}`" + suggest(str(tag), type_names)
            line = positions.line((*prefix, *path, "type"))
        elif kind == "missing":
            message = f"{where}: `{loc[-1]}` is required"
            line = positions.line((*prefix, *path))
        else:
            message = _value_message(where, error)
            line = positions.line((*prefix, *path))
        signature = (line, message)
        if signature in seen:
            continue
        seen.add(signature)
        problems.append(Problem(file, line, message))
    return problems


def _value_message(where: str, error: Any) -> str:
    """A value's problem: pydantic's message, the value when it is short, a YAML number read as text."""
    message = f"{where}: {_clean(error['msg'])}"
    if error["type"] not in ("value_error", "assertion_error") and "input" in error:
        shown = repr(error["input"])
        if len(shown) <= 60:
            message += f" (got {shown})"
        written = _yaml_number(error["input"]) if "number" in error["msg"] else None
        if written is not None:
            message += f"; YAML reads `{error['input']}` as text: write `{written}`"
    return message


_KEY_ERRORS = ("missing", "extra_forbidden")
_EXPONENT_NUMBER = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+"


def _yaml_number(value: Any) -> str | None:
    """`5e-1` as YAML reads it as a number (`5.0e-1`): YAML 1.1 wants a dot and a signed exponent, and
    reads `5e-1` or `1.0E3` as text, which no number field takes. None for anything else."""
    import re  # only when a spec has a problem: not on every command's start

    if not isinstance(value, str) or not re.fullmatch(_EXPONENT_NUMBER, value):
        return None
    mantissa, _, exponent = value.lower().partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    if exponent[0] not in "+-":
        exponent = "+" + exponent
    return f"{mantissa}e{exponent}"


def _is_type_error(kind: str) -> bool:
    """A value of the wrong shape: in a union, the branch of the right shape says more."""
    return kind.endswith("_type")


def _shape(message: str) -> str:
    """'a valid number' from pydantic's 'Input should be a valid number'; models read as mappings."""
    shape = message.removeprefix("Input should be ")
    return "a mapping" if shape.startswith(_MODEL_SHAPES) else shape


# pydantic's words for a model's input: "... or instance of BudgetSpec", "... or object to extract fields from"
_MODEL_SHAPES = ("a valid dictionary or instance of", "a valid dictionary or object")


def _typo_fixes(
    errors: list[Any], paths: list[tuple[str | int, ...]], model: type[BaseModel], raw: Any
) -> set[tuple[tuple[str | int, ...], str]]:
    """(parent path, valid key) for each unknown key that is a likely typo of that valid key."""
    import difflib

    fixes = set()
    for error, path in zip(errors, paths, strict=True):
        if error["type"] == "extra_forbidden" and path:
            valid = _fields_at(model, error["loc"][:-1], raw)
            close = difflib.get_close_matches(str(path[-1]), valid, n=1, cutoff=0.6)
            if close:
                fixes.add((path[:-1], close[0]))
    return fixes


def _clean(message: str) -> str:
    return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def _raw_path(raw: Any, loc: Sequence[str | int], *, name_last: bool = True) -> tuple[str | int, ...]:
    """The part of a pydantic location that exists in the raw data (union tags dropped).

    With `name_last`, a last key absent from the data (missing or unknown) is kept.
    """
    path: list[str | int] = []
    node = raw
    for part in loc:
        in_dict = isinstance(node, dict) and part in node
        if in_dict or (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
            node = node[part]
            path.append(part)
        elif name_last and isinstance(node, dict) and isinstance(part, str) and part not in node and part == loc[-1]:
            path.append(part)  # a missing or unknown key: still worth naming
    return tuple(path)


def _fields_at(model: type[BaseModel], loc: Sequence[str | int], raw: Any) -> list[str]:
    """The valid keys of the model found at `loc`, for suggestions."""
    tp: Any = model
    node = raw
    for part in loc:
        tp = _descend(tp, part, node)
        if isinstance(node, dict):
            node = node.get(part, node) if isinstance(part, str) else node
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        if tp is None:
            return []
    tp = _unwrap(tp)
    if _is_model(tp):
        return [f.alias or name for name, f in tp.model_fields.items()]
    if _is_union(tp) and isinstance(node, dict) and node.get("type"):
        member = _member_for_tag(tp, node["type"])
        if member is not None:
            return list(member.model_fields)
    if _is_union(tp):  # `JudgeSpec | None`, a threshold's `number | Bounds`: the one mapping it may be
        models = [m for m in map(_unwrap, typing.get_args(tp)) if _is_model(m)]
        if len(models) == 1:
            return [f.alias or name for name, f in models[0].model_fields.items()]
    return []


def _is_model(tp: Any) -> bool:
    from pydantic import BaseModel  # loaded by then: the spec's models raised the error being explained

    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _unwrap(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _member_for_tag(tp: Any, tag: Any) -> type[BaseModel] | None:
    for member in typing.get_args(tp):
        member = _unwrap(member)
        if _is_model(member) and "type" in member.model_fields:
            literal = member.model_fields["type"].annotation
            if tag in typing.get_args(literal):
                model: type[BaseModel] = member
                return model
    return None


def _label_name(part: str | int) -> str | None:
    """`Bounds` from pydantic's union label `function-after[_check(), Bounds]` (a model with a validator)."""
    if isinstance(part, str) and part.endswith("]"):
        return part[:-1].rsplit("[", 1)[-1].rsplit(", ", 1)[-1]
    return None


def _descend(tp: Any, part: str | int, node: Any) -> Any:
    tp = _unwrap(tp)
    if _is_model(tp):
        field = tp.model_fields.get(part) if isinstance(part, str) else None
        return field.annotation if field else None
    origin = typing.get_origin(tp)
    if origin in (list, Sequence) and isinstance(part, int):
        return typing.get_args(tp)[0]
    if _is_union(tp):
        member = _member_for_tag(tp, part)
        if member is not None:
            return member
        for member in typing.get_args(tp):
            inner = _unwrap(member)
            if getattr(inner, "__name__", None) in (part, _label_name(part)):
                return inner
            if typing.get_origin(inner) is list and isinstance(part, int):
                return typing.get_args(inner)[0]
            if _is_model(inner) and part in inner.model_fields:
                return inner.model_fields[part].annotation
    return None


def not_a_file(path: Path, *, limit: int | None = None, what: str = "file") -> str | None:
    """What is wrong with reading `path` as a regular file (None: nothing), without opening it.

    A directory, a FIFO (reading would block), a device (endless) or a file over `limit` bytes
    is named for what it is, never reported as missing.
    """
    import stat

    try:
        info = path.stat()
    except FileNotFoundError:
        return None  # the caller's own "no such file" message says what to pass
    except OSError as exc:
        return f"cannot read the {what}: {exc.strerror}"
    except ValueError:  # a NUL in the path: no file can have that name
        return f"the {what}'s path holds a NUL character; give the file's name"
    mode = info.st_mode
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    for test, kind in kinds:
        if test(mode):
            return f"the {what} is {kind}, not a regular file; point at a file"
    if limit is not None and info.st_size > limit:
        return (f"the {what} is {info.st_size / 2**20:,.0f} MiB; evalgate reads up to {limit // 2**20:,} MiB "
                "of this kind of file (split it, or use .jsonl, which is streamed)")
    return None
