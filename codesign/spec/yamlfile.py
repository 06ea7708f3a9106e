"""Reading YAML with line numbers, so every error can point at the line it is about.

The loader is PyYAML's SafeLoader (no arbitrary objects are ever built) whose mappings and sequences
remember the line of each key and item.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError


class YMap(dict):
    """A mapping that knows the 1-based line of itself and of each of its keys."""

    line: int = 0
    key_lines: dict

    def line_of(self, key: object) -> int:
        return self.key_lines.get(key, self.line)


class YList(list):
    """A sequence that knows the 1-based line of itself and of each item."""

    line: int = 0
    item_lines: list

    def line_of(self, i: int) -> int:
        return self.item_lines[i] if 0 <= i < len(self.item_lines) else self.line


class _LineLoader(yaml.SafeLoader):
    pass


def _map(loader: _LineLoader, node: yaml.MappingNode) -> YMap:
    loader.flatten_mapping(node)
    m = YMap()
    m.line = node.start_mark.line + 1
    m.key_lines = {}
    for knode, vnode in node.value:
        key = loader.construct_object(knode, deep=True)
        try:
            hash(key)
        except TypeError:
            raise SpecError(f"malformed YAML: a {type(key).__name__.lstrip('Y').lower()} cannot be a key",
                            line=knode.start_mark.line + 1) from None
        if key in m:
            raise SpecError(f"duplicate key {key!r}", line=knode.start_mark.line + 1)
        m[key] = loader.construct_object(vnode, deep=True)
        m.key_lines[key] = knode.start_mark.line + 1
    return m


def _seq(loader: _LineLoader, node: yaml.SequenceNode) -> YList:
    s = YList(loader.construct_object(v, deep=True) for v in node.value)
    s.line = node.start_mark.line + 1
    s.item_lines = [v.start_mark.line + 1 for v in node.value]
    return s


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _map)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _seq)


def load_yaml(path: str | Path) -> Any:
    """Parse a YAML file; a missing file or malformed YAML raises SpecError naming the file and line."""
    file = str(path)
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise SpecError("file not found", file=file) from None
    except IsADirectoryError:
        raise SpecError("is a directory, expected a YAML problem file", file=file) from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"cannot read: {e}", file=file) from None
    try:
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except SpecError as e:
        raise SpecError(e.detail, file=file, line=e.line) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        what = getattr(e, "problem", None) or str(e).splitlines()[0]
        ctx = getattr(e, "context", None)
        msg = f"malformed YAML: {what}" + (f" ({ctx})" if ctx else "")
        raise SpecError(msg, file=file, line=line) from None
