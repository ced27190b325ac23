"""YAML with positions: the loaded value plus the line of every mapping key and value.

Errors about a spec or data file name the line by looking a pydantic error's location up here.
"""

from __future__ import annotations

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


def load(text: str) -> tuple[Any, Positions]:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        value = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or str(exc)
        raise YAMLSyntaxError(f"invalid YAML: {problem}", line) from None
    except yaml.YAMLError as exc:
        raise YAMLSyntaxError(f"invalid YAML: {exc}", None) from None
    finally:
        loader.dispose()
    positions = Positions()
    if node is not None:
        _walk(node, (), positions)
    return value, positions


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
