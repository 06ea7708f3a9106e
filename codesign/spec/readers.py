"""The validation toolkit of the problem file: readers of keys and values that check what they read.

Each reader takes the file's context (``Ctx``), the mapping, the key and its key path, and returns the value
or raises a SpecError naming the file, the key path, the line and what was expected. The readers know no
section of the problem file; ``codesign.problem.load`` builds its sections from them.
"""
from __future__ import annotations

import difflib
import math
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputWarning, SpecError, located, shown
from . import units as U
from .plausible import implausible
from .yamlfile import YList, YMap


class Ctx:
    """The file being read, for error messages, and its folder, for relative paths; ``confine_to`` is that
    folder when the files the problem names must lie inside it (``--confine``), else None."""

    def __init__(self, file: str, *, confine: bool = False, memo: dict | None = None) -> None:
        self.file = file
        # (a sweep's points share a memo and one file: its folder is resolved once, not per point)
        self.dir = memo.get(("folder", file)) if memo is not None else None
        if self.dir is None:
            self.dir = Path(file).resolve().parent
            if memo is not None:
                memo["folder", file] = self.dir
        self.confine_to: Path | None = self.dir if confine else None
        self.notes: list[str] = []  # warnings held until the file has loaded without error
        #: sections already read by an earlier document of the same file (a sweep's points), by what they say
        self.memo = memo

    def error(self, path: str, msg: str, line: int | None = None) -> SpecError:
        return SpecError(msg, file=self.file, path=path, line=line)

    def note(self, path: str, msg: str, line: int | None = None) -> None:
        """Hold a warning about a value; ``emit_notes`` issues it once the whole file has loaded, so that a
        file with an error shows that one error line and nothing else."""
        self.notes.append(located(msg, file=self.file, path=path, line=line))

    def emit_notes(self) -> None:
        """Issue the held warnings as InputWarning (the command line prints each as one stderr line)."""
        for text in self.notes:
            warnings.warn(text, InputWarning, stacklevel=3)
        self.notes.clear()


def line_of(parent: Any, key: Any) -> int | None:
    if isinstance(parent, YMap):
        return parent.line_of(key)
    if isinstance(parent, YList) and isinstance(key, int):
        return parent.line_of(key)
    return getattr(parent, "line", None)


Token = str | int
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_path(text: str, *, file: str | None = None) -> tuple[Token, ...]:
    """``topology.dims[1].bandwidth`` -> ("topology", "dims", 1, "bandwidth"); SpecError if malformed."""
    if not isinstance(text, str) or not text.strip():
        raise SpecError(f"expected a key path such as 'topology.dims[1].bandwidth', got {shown(text)}", file=file)
    s, i, out = text.strip(), 0, []
    while i < len(s):
        if s[i] == "[":
            j = s.find("]", i)
            if j < 0 or not s[i + 1:j].strip().isdigit():
                raise SpecError("expected a list index such as [1] in the key path", file=file, path=text)
            out.append(int(s[i + 1:j]))
            i = j + 1
        else:
            if s[i] == ".":
                if not out:
                    raise SpecError("a key path cannot start with '.'", file=file, path=text)
                i += 1
            m = _KEY.match(s, i)
            if not m:
                raise SpecError(f"expected a key name at character {i + 1} of the key path", file=file, path=text)
            out.append(m.group())
            i = m.end()
        if i < len(s) and s[i] not in ".[":
            raise SpecError(f"unexpected {shown(s[i])} at character {i + 1} of the key path", file=file, path=text)
    if not isinstance(out[0], str):
        raise SpecError("a key path starts with a section name such as 'topology'", file=file, path=text)
    return tuple(out)


def path_text(tokens: Sequence[Token]) -> str:
    return "".join(f"[{t}]" if isinstance(t, int) else (f".{t}" if i else t) for i, t in enumerate(tokens))


def line_of_path(doc: Any, path: str) -> int | None:
    """The line, in ``doc`` (as ``load_yaml`` read it), of the deepest key of ``path`` (``topology.dims[0].size``)
    that the document has; None if it has not even the first, or ``path`` is not a key path."""
    try:
        tokens = parse_path(path)
    except SpecError:
        return None
    node, line = doc, None
    for key in tokens:
        if isinstance(node, YMap) and key in node or isinstance(node, YList) and isinstance(key, int) and \
                0 <= key < len(node):
            line = line_of(node, key)
            node = node[key]
        else:
            break
    return line


def join_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def section(ctx: Ctx, obj: Any, path: str, allowed: tuple[str, ...], required: tuple[str, ...] = (),
            parent: Any = None, key: Any = None) -> YMap:
    """Check that ``obj`` is a mapping with only ``allowed`` keys and every ``required`` one."""
    if not isinstance(obj, dict):
        raise ctx.error(path or "(top level)", f"expected a mapping with keys {', '.join(allowed)}, "
                        f"got {kind_of(obj)}", line_of(parent, key))
    for k in obj:
        if k not in allowed:
            near = difflib.get_close_matches(str(k)[:100], allowed, n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]!r}?" if near else f"; valid keys: {', '.join(allowed)}"
            name = str(k) if len(str(k)) <= 40 else str(k)[:40] + "..."  # a key path, quoted short
            raise ctx.error(join_path(path, name), f"unknown key {shown(k)}{hint}", line_of(obj, k))
    for k in required:
        if k not in obj:
            raise ctx.error(join_path(path, k), f"missing required key {k!r}", getattr(obj, "line", None))
    return obj  # type: ignore[return-value]


def kind_of(obj: Any) -> str:
    """What a value is, for "expected ..., got ..." (an empty mapping or list says so)."""
    if obj is None:
        return "nothing (null)"
    if isinstance(obj, (dict, list)) and not obj:
        return "an empty mapping" if isinstance(obj, dict) else "an empty list"
    return {dict: "a mapping", YMap: "a mapping", list: "a list", YList: "a list", str: f"the text {shown(obj)}",
            bool: f"the boolean {obj}", int: f"the number {obj}", float: f"the number {obj}"
            }.get(type(obj), type(obj).__name__)


def quantity(ctx: Ctx, m: YMap, key: str, path: str, dim: U.Dimension, *, positive: bool = True,
             allow_zero: bool = False, default: Any = None) -> float:
    """A value with a unit, checked > 0 (or >= 0 with ``allow_zero``), and noted (``Ctx.note``) if it is
    implausible for its quantity (``spec.plausible``)."""
    if key not in m:
        if default is None:
            raise ctx.error(join_path(path, key), "missing required key", getattr(m, "line", None))
        return float(default)
    return value_with_unit(ctx, m[key], dim, join_path(path, key), line_of(m, key), key, positive=positive,
                           allow_zero=allow_zero)


def value_with_unit(ctx: Ctx, raw: Any, dim: U.Dimension, path: str, line: int | None, key: str, *,
                    positive: bool = True, allow_zero: bool = False) -> float:
    """``raw`` parsed in ``dim`` (SI), checked > 0 (>= 0 with ``allow_zero``); a value implausible for the
    quantity ``key`` gives (``spec.plausible.RANGES``) is noted as a warning naming the likely unit."""
    try:
        v = U.parse_quantity(raw, dim)
    except U.UnitError as e:
        raise ctx.error(path, str(e), line) from None
    if positive and (v < 0 or (v == 0 and not allow_zero)):
        raise ctx.error(path, f"expected {dim.name} {'>= 0' if allow_zero else '> 0'}, got {shown(raw)}", line)
    why = implausible(v, dim, key, raw)
    if why:
        ctx.note(path, why, line)
    return v


def bounded(ctx: Ctx, m: YMap, key: str, path: str, dim: U.Dimension | None, lo: float, hi: float,
            default: float) -> float:
    """``m[key]`` (``default`` when absent): a quantity in ``dim`` (a plain number when None) that must lie in
    [lo, hi]; the error names the accepted range in the quantity's units."""
    if key not in m:
        return float(default)
    kp, line = join_path(path, key), line_of(m, key)
    if dim is None:
        v = number(ctx, m[key], kp, line)
        shown_range = f"a number from {lo:g} to {hi:g}"
    else:
        v = value_with_unit(ctx, m[key], dim, kp, line, key, positive=False)
        shown_range = f"{dim.name} from {U.format_quantity(lo, dim)} to {U.format_quantity(hi, dim)}"
    if not lo <= v <= hi:
        raise ctx.error(kp, f"expected {shown_range}, got {shown(m[key])}", line)
    return v


def number(ctx: Ctx, value: Any, path: str, line: int | None, *, lo: float | None = None,
           hi: float | None = None, integer: bool = False, lo_open: bool = False) -> float:
    """A plain number in [lo, hi] (or (lo, hi] with ``lo_open``), optionally a whole number."""
    what = "a whole number" if integer else "a number"
    if isinstance(value, str):
        try:  # YAML 1.1 reads 1e-4 (no dot) as text; a user means the number
            value = float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            pass
    try:
        finite = isinstance(value, (int, float)) and math.isfinite(value)
    except OverflowError:
        finite = False
    if isinstance(value, bool) or not finite:
        raise ctx.error(path, f"expected {what}, got {kind_of(value)}", line)
    if integer and value != int(value):
        raise ctx.error(path, f"expected {what}, got {value}", line)
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise ctx.error(path, f"expected {what} {'>' if lo_open else '>='} {lo:g}, got {value}", line)
    if hi is not None and value > hi:
        raise ctx.error(path, f"expected {what} <= {hi:g}, got {value}", line)
    return float(value)


def choice(ctx: Ctx, m: YMap, key: str, path: str, options: tuple[str, ...], default: str | None = None) -> str:
    if key not in m:
        if default is None:
            raise ctx.error(join_path(path, key), f"missing required key; expected one of {', '.join(options)}",
                            getattr(m, "line", None))
        return default
    v = m[key]
    if not isinstance(v, str) or v not in options:
        near = difflib.get_close_matches(v[:100], options, n=1, cutoff=0.5) if isinstance(v, str) else []
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise ctx.error(join_path(path, key), f"expected one of {', '.join(options)}, got {kind_of(v)}{hint}",
                        line_of(m, key))
    return v


def text(ctx: Ctx, m: YMap, key: str, path: str, default: str = "") -> str:
    if key not in m:
        return default
    if not isinstance(m[key], str):
        raise ctx.error(join_path(path, key), f"expected text, got {kind_of(m[key])}", line_of(m, key))
    return m[key]


def items(ctx: Ctx, m: YMap, key: str, path: str, *, allow_empty: bool = False) -> YList:
    p = join_path(path, key)
    if key not in m:
        raise ctx.error(p, "missing required key", getattr(m, "line", None))
    v = m[key]
    if not isinstance(v, list):
        raise ctx.error(p, f"expected a list, got {kind_of(v)}", line_of(m, key))
    if not v and not allow_empty:
        raise ctx.error(p, "expected a non-empty list", line_of(m, key))
    return v  # type: ignore[return-value]


def boolean(ctx: Ctx, m: YMap, key: str, path: str, default: bool) -> bool:
    v = m.get(key, default)
    if not isinstance(v, bool):
        raise ctx.error(join_path(path, key), f"expected true or false, got {kind_of(v)}", line_of(m, key))
    return v
