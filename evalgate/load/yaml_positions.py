"""YAML with positions: the loaded value plus the line of every mapping key and value.

Errors about a spec or data file name the line by looking a pydantic error's location up here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

Path_ = tuple[str | int, ...]


@dataclass
class Positions:
    """1-based lines by path: `values[("gates", 0, "tool")]`, `keys[...]` for the key itself."""

    values: dict[Path_, int] = field(default_factory=dict)
    keys: dict[Path_, int] = field(default_factory=dict)
    offset: int = 0

    def line(self, path: Path_, *, key: bool = False) -> int | None:
        """The line of the deepest known node on `path`."""
        for end in range(len(path), -1, -1):
            sub = path[:end]
            if key and end == len(path) and sub in self.keys:
                return self.keys[sub] + self.offset
            if sub in self.values:
                return self.values[sub] + self.offset
        return None


class YAMLSyntaxError(ValueError):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


MAX_NODES = 1_000_000  # nodes after expanding aliases: refuses "billion laughs" documents
MAX_DEPTH = 100  # nesting of mappings and lists
MAX_YAML_CHARS = 8 * 2**20  # PyYAML needs about a second and 100 MB per few MiB


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys and names the line of a value it cannot construct."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except YAMLSyntaxError:
            raise
        except yaml.MarkedYAMLError:
            raise
        except (ValueError, OverflowError, TypeError) as exc:  # `2001-13-45`, `!!int abc`, huge numbers
            why = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
            raise self._unreadable(node, f" ({why})") from None
        except (KeyError, IndexError, AttributeError):  # `!!bool maybe`, `!!int ""`, `!!timestamp abc`
            raise self._unreadable(node, "") from None

    @staticmethod
    def _unreadable(node: yaml.Node, why: str) -> YAMLSyntaxError:
        shown = repr(node.value)[:60] if isinstance(node, yaml.ScalarNode) else node.tag
        return YAMLSyntaxError(f"invalid YAML: cannot read {shown} as {node.tag.rsplit(':', 1)[-1]}{why}; "
                               "quote it to keep it as text", node.start_mark.line + 1)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:
        seen: dict[Any, int] = {}
        # `!!set [a]`, `!!map [a]`: a list tagged as a mapping; SafeLoader's own error names the line
        for key_node, _ in node.value if isinstance(node, yaml.MappingNode) else ():
            if isinstance(key_node, yaml.ScalarNode):
                key = (key_node.tag, key_node.value)
                if key in seen:
                    raise YAMLSyntaxError(
                        f"duplicate key `{key_node.value[:60]}` (first at line {seen[key]}): the second would "
                        "silently replace the first; merge them or remove one", key_node.start_mark.line + 1)
                seen[key] = key_node.start_mark.line + 1
                what = _NO_JSON_KEY.get(key_node.tag)
                if what is not None:  # JSON has no such key: writing or hashing the value would fail later
                    raise YAMLSyntaxError(
                        f"the key `{key_node.value[:60]}` is read as {what}, which no JSON key can be; quote it: "
                        f"'{key_node.value[:60]}':", key_node.start_mark.line + 1)
        return super().construct_mapping(node, deep)


_NO_JSON_KEY = {"tag:yaml.org,2002:timestamp": "a date", "tag:yaml.org,2002:binary": "bytes"}


def _expanded_size(root: yaml.Node) -> None:
    """Refuse documents whose aliases expand past MAX_NODES, that nest past MAX_DEPTH, or refer to themselves."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    # iterative post-order walk: (node, depth, children done?)
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 0, False)]
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            active.discard(key)
            size = 1 + sum(sizes[id(c)] for c in children)
            if size > MAX_NODES:
                raise YAMLSyntaxError(
                    f"invalid YAML: its aliases expand to more than {MAX_NODES:,} values; write the data out "
                    "or use fewer aliases", node.start_mark.line + 1)
            sizes[key] = size
            continue
        if key in sizes:
            continue
        if key in active:
            raise YAMLSyntaxError("invalid YAML: an alias refers to the node that contains it",
                                  node.start_mark.line + 1)
        if depth > MAX_DEPTH:
            raise YAMLSyntaxError(f"nested more than {MAX_DEPTH} levels deep; flatten the structure",
                                  node.start_mark.line + 1)
        active.add(key)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children if id(c) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


_BRACKET = re.compile(r"[\[\]{}]")


def _flow_depth_exceeds(text: str, limit: int) -> int | None:
    """The line where `[`/`{` nest past `limit` (PyYAML's scanner slows quadratically with flow depth)."""
    depth = 0
    for match in _BRACKET.finditer(text):
        depth += 1 if match.group() in "[{" else -1
        if depth > limit:
            return text.count("\n", 0, match.start()) + 1
        depth = max(depth, 0)
    return None


def load(text: str) -> tuple[Any, Positions]:
    if len(text) > MAX_YAML_CHARS:
        raise YAMLSyntaxError(f"the YAML is {len(text) / 2**20:.0f} MiB; evalgate reads YAML up to "
                              f"{MAX_YAML_CHARS // 2**20} MiB: use a .jsonl data file for big data sets", None)
    deep = _flow_depth_exceeds(text, MAX_DEPTH)
    if deep is not None:
        raise YAMLSyntaxError(f"nested more than {MAX_DEPTH} levels deep; flatten the structure", deep)
    loader = None
    try:
        loader = _Loader(text)  # its reader refuses control characters before anything is parsed
        node = _compose_fast(text)
        if node is None:
            node = loader.get_single_node()
        if node is not None:
            _expanded_size(node)
        value = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or str(exc)
        raise YAMLSyntaxError(f"invalid YAML: {problem}", line) from None
    except yaml.reader.ReaderError as exc:  # a control character or NUL
        line = text.count("\n", 0, exc.position) + 1 if isinstance(exc.position, int) else None
        what = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
        raise YAMLSyntaxError(f"invalid YAML: the control character {what} is not allowed; remove it "
                              "(or write it as an escape in a double-quoted string)", line) from None
    except yaml.YAMLError as exc:
        raise YAMLSyntaxError(f"invalid YAML: {exc}", None) from None
    finally:
        if loader is not None:
            loader.dispose()
    positions = Positions()
    if node is not None:
        _walk(node, (), positions)
    return value, positions


def _compose_fast(text: str) -> yaml.Node | None:
    """The document's node from libyaml's parser (about 10x faster than PyYAML's own, which makes a spec of
    10,000 entries a matter of seconds); None when libyaml is missing, the document is empty, or libyaml
    refuses it: PyYAML's own parser then composes it again, so every error reads as it always has."""
    if not yaml.__with_libyaml__:
        return None
    parser = yaml.CSafeLoader(text)
    try:
        node: yaml.Node | None = parser.get_single_node()
        return node
    except yaml.YAMLError:
        return None
    finally:
        parser.dispose()


def _walk(node: yaml.Node, path: Path_, positions: Positions) -> None:
    positions.values[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            sub = (*path, key_node.value)
            positions.keys[sub] = key_node.start_mark.line + 1
            _walk(value_node, sub, positions)
    elif isinstance(node, yaml.SequenceNode):
        for index, child in enumerate(node.value):
            _walk(child, (*path, index), positions)
