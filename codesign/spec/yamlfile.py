"""Reading YAML with line numbers, so every error can point at the line it is about.

The loader is PyYAML's SafeLoader (no arbitrary objects are ever built) whose mappings and sequences
remember the line of each key and item. It also bounds what a small file can make it build: aliases
(``*name``) may stand for at most MAX_ALIAS_NODES nodes in all (nine nested aliases in 1 KB, the
"billion laughs", stand for 10^9; the objects are shared, but any walk over them would never end),
mappings and lists may nest at most MAX_DEPTH deep, counting through aliases (deeper, PyYAML's and
our own recursion would overflow the stack), and an integer may have at most MAX_INT_DIGITS digits. A file of
more than MAX_YAML_CHARS characters is not parsed at all.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError, shown
from .files import read_user_file

#: The most nodes (scalars, lists, mappings) that all the aliases of one document may stand for,
#: each alias counted as a copy of what it names. A problem file has a few thousand nodes.
MAX_ALIAS_NODES = 100_000
#: The deepest nesting of lists and mappings, counting through aliases. A problem file nests 5 deep.
MAX_DEPTH = 32
#: The most digits of an integer (Python refuses to convert past 4300; no quantity needs 100).
MAX_INT_DIGITS = 100
#: The largest YAML file parsed, in characters (1 MiB; our bound on work): the largest shipped problem, 500 layers
#: written out, has 75 KB; the pure-Python parse with line numbers takes seconds per 100 KB of layers on a loaded
#: machine (BENCHMARKS.md, "YAML parse"), so a 63 MiB file took 15 s idle and over a minute loaded before any check.
MAX_YAML_CHARS = 2**20


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
    """SafeLoader that bounds alias expansion and nesting depth while it composes the node graph."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._measured: dict[yaml.Node, tuple[int, int]] = {}  # node -> (nodes, depth) it expands to
        self._aliased = 0  # nodes stood for by the aliases so far
        self._depth = 0  # depth of the node being composed
        self._open: set[str] = set()  # anchors of the collections being composed

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self._open:
                raise SpecError(f"the alias *{shown(event.anchor, 30)[1:-1]} is inside its own anchor: a "
                                "recursive structure, which no problem file needs", line=line)
            node = super().compose_node(parent, index)
            nodes, depth = self._measure(node)
            self._aliased += nodes
            if self._aliased > MAX_ALIAS_NODES:
                raise SpecError(f"the aliases stand for more than {MAX_ALIAS_NODES} nodes in all (expanded, "
                                "this file would be far larger than any problem); write the values out",
                                line=line)
            if self._depth + depth > MAX_DEPTH:
                raise SpecError(f"nested more than {MAX_DEPTH} levels deep (counting through aliases)", line=line)
            return node
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)) and self._depth >= MAX_DEPTH:
            raise SpecError(f"nested more than {MAX_DEPTH} levels deep", line=line)
        anchor = event.anchor
        if anchor is not None:
            self._open.add(anchor)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1
            self._open.discard(anchor)  # type: ignore[arg-type]

    def _measure(self, node: yaml.Node) -> tuple[int, int]:
        """(nodes, nesting of lists and mappings) that ``node`` expands to. Every node measured is complete
        and was checked against MAX_DEPTH when composed, so this recursion is at most MAX_DEPTH deep;
        memoized, it visits each distinct node once however often aliases share it."""
        got = self._measured.get(node)
        if got is not None:
            return got
        if isinstance(node, yaml.SequenceNode):
            kids = [self._measure(v) for v in node.value]
        elif isinstance(node, yaml.MappingNode):
            kids = [self._measure(x) for kv in node.value for x in kv]
        else:
            return 1, 0  # a scalar: one node, no nesting
        got = (1 + sum(n for n, _ in kids), 1 + max((d for _, d in kids), default=0))
        self._measured[node] = got
        return got


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
            raise SpecError(f"duplicate key {shown(key)}", line=knode.start_mark.line + 1)
        m[key] = loader.construct_object(vnode, deep=True)
        m.key_lines[key] = knode.start_mark.line + 1
    return m


def _int(loader: _LineLoader, node: yaml.ScalarNode) -> int:
    digits = sum(c.isdigit() for c in node.value)
    if digits > MAX_INT_DIGITS:
        raise SpecError(f"a whole number of {digits} digits; expected at most {MAX_INT_DIGITS}",
                        line=node.start_mark.line + 1)
    return loader.construct_yaml_int(node)


def _seq(loader: _LineLoader, node: yaml.SequenceNode) -> YList:
    s = YList(loader.construct_object(v, deep=True) for v in node.value)
    s.line = node.start_mark.line + 1
    s.item_lines = [v.start_mark.line + 1 for v in node.value]
    return s


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _map)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _seq)
_LineLoader.add_constructor("tag:yaml.org,2002:int", _int)


def load_yaml(path: str | Path, *, what: str = "YAML problem file", confine_to: Path | None = None) -> Any:
    """Parse a YAML file; a missing or unreadable file, or malformed YAML, raises SpecError naming the file
    and line. ``what`` and ``confine_to`` are ``read_user_file``'s."""
    file = str(path)
    text = read_user_file(path, what=what, confine_to=confine_to)
    if len(text) > MAX_YAML_CHARS:
        raise SpecError(f"{len(text) / 2**20:.1f} MiB of YAML is over the {MAX_YAML_CHARS // 2**20} MiB a {what} may "
                        "have (the largest shipped problem has 75 KB); expected a problem file, not data", file=file)
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
