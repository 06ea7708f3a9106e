"""Sweep parameters: YAML key paths, their values (units, lists, ranges), and editing a problem document.

A parameter is a key path into the problem file, as its errors name it (``topology.dims[1].bandwidth``,
``engine.area_budget``, ``npu.hbm_bandwidth``), and a list of values written as the file would write
them. Values are given as

    25GB/s,50GB/s,100GB/s        a list (commas), or a YAML list
    1mm^2:8mm^2:8                8 values evenly spaced from 1 to 8 mm^2, both ends included
    log:1GB/s:100GB/s:5          5 values evenly spaced in log scale: 1, 3.16, 10, 31.6, 100 GB/s

Range values keep the unit of their first end ("2 mm^2"), so the problem's own validation still checks
their dimension: a size given for a bandwidth is one clear SpecError, not a silently wrong number.
``canonical`` turns a value into what it means (SI float, area in mm^2) for keys and result columns.
"""
from __future__ import annotations

import copy
import difflib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError, shown
from ..spec import units as U
from ..spec.readers import Token, parse_path, path_text

_NUMBER_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S.*?)?\s*$")

#: The most points a sweep plans (our bound): planning takes about 0.1 ms and a few KB a point (the quickstart's
#: 20,000 in 2.4 s), so 100,000 stay within seconds and hundreds of MB, and a mistyped range of 10^9 values is
#: refused rather than left to exhaust memory. A larger study is several sweeps into one results file.
MAX_POINTS = 100_000


@dataclass(frozen=True)
class Param:
    """One swept parameter: its key path (as written), the path's tokens, and its values (as written)."""

    path: str
    tokens: tuple[Token, ...]
    values: tuple[Any, ...]


def check_path(doc: Any, tokens: Sequence[Token], *, file: str | None = None) -> None:
    """Raise SpecError unless ``tokens`` leads to a value in ``doc``, or to a new key of an existing mapping
    (a key the file leaves at its default, such as ``engine.power_budget``: the problem's validation then
    says whether that key exists at all)."""
    node = doc
    for n, t in enumerate(tokens):
        here = path_text(tokens[:n]) or "(top level)"
        last = n == len(tokens) - 1
        if isinstance(t, int):
            if not isinstance(node, list):
                raise SpecError(f"{here} is not a list, so it has no item [{t}]", file=file, path=path_text(tokens))
            if t >= len(node):
                raise SpecError(f"{here} has {len(node)} item(s), so [{t}] is out of range", file=file,
                                path=path_text(tokens))
            node = node[t]
            continue
        if isinstance(node, list):
            raise SpecError(f"{here} is a list, so it has no key {shown(t)}; give an index, e.g. {here}[0].{t}",
                            file=file, path=path_text(tokens))
        if not isinstance(node, dict):
            raise SpecError(f"{here} is a value, not a mapping, so it has no key {shown(t)}", file=file,
                            path=path_text(tokens))
        if t not in node:
            if last:
                return
            near = difflib.get_close_matches(t, [str(k) for k in node], n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]!r}?" if near else f"; keys there: {', '.join(map(str, node))}"
            raise SpecError(f"no key {shown(t)} under {here}{hint}", file=file, path=path_text(tokens))
        node = node[t]


def get_value(doc: Any, tokens: Sequence[Token], default: Any = None) -> Any:
    node = doc
    for t in tokens:
        try:
            node = node[t]
        except (KeyError, IndexError, TypeError):
            return default
    return node


def set_value(doc: Any, tokens: Sequence[Token], value: Any) -> None:
    """Set the value at ``tokens`` in ``doc`` in place (the path must pass ``check_path``)."""
    node = doc
    for t in tokens[:-1]:
        node = node[t]
    node[tokens[-1]] = value


def apply(doc: Any, assignments: Mapping[tuple[Token, ...], Any]) -> Any:
    """A copy of ``doc`` with each path set to its value; the original is untouched. Only the containers
    on the paths are copied (shallowly, keeping the loader's line numbers); the rest is shared with ``doc``,
    which the problem's parser only reads (a deep copy of the whole document was a tenth of a sweep point's
    time on the quickstart)."""
    out = copy.copy(doc)
    for tokens, value in assignments.items():
        node = out
        for t in tokens[:-1]:
            node[t] = copy.copy(node[t])
            node = node[t]
        node[tokens[-1]] = value
    return out


# ---------------------------------------------------------------- values

def _unit_dimension(unit: str) -> U.Dimension | None:
    for dim in U.ALL_DIMENSIONS:
        if unit in dim.units:
            return dim
    return None


def _split_quantity(text: str, where: str, file: str | None) -> tuple[float, str, U.Dimension | None]:
    """"25GB/s" -> (25.0, "GB/s", BYTES_PER_S); a bare number has unit "" and no dimension."""
    m = _NUMBER_UNIT.match(text)
    if not m:
        raise SpecError(f"expected a number with an optional unit (e.g. '25 GB/s'), got {shown(text)}", file=file,
                        path=where)
    unit = (m.group(2) or "").strip()
    if not unit:
        return float(m.group(1)), "", None
    dim = _unit_dimension(unit)
    if dim is None:
        raise SpecError(f"unknown unit {shown(unit)} in {shown(text)}", file=file, path=where)
    return float(m.group(1)), unit, dim


def _range(spec: str, where: str, file: str | None) -> list[Any]:
    """``a:b:n`` or ``log:a:b:n`` -> n values from a to b, in a's unit."""
    parts = [p.strip() for p in spec.split(":")]
    log = parts[0].lower() == "log"
    if log:
        parts = parts[1:]
    if len(parts) != 3:
        raise SpecError(f"expected a range 'a:b:n' or 'log:a:b:n', got {shown(spec)}", file=file, path=where)
    try:
        n = int(parts[2])
    except ValueError:
        n = 0
    if n < 1 or str(n) != parts[2]:
        raise SpecError(f"the last part of the range {shown(spec)} is the number of values, a whole number >= 1",
                        file=file, path=where)
    if n > MAX_POINTS:
        raise SpecError(f"the range {shown(spec)} has {n:,} values; a sweep plans at most {MAX_POINTS:,} points",
                        file=file, path=where)
    a, ua, da = _split_quantity(parts[0], where, file)
    b, ub, db = _split_quantity(parts[1], where, file)
    if ub and ua != ub:
        if da is not db:
            raise SpecError(f"the ends of the range {shown(spec)} are in different dimensions "
                            f"({shown(ua)}, {shown(ub)})",
                            file=file, path=where)
        b = b * db.units[ub] / da.units[ua]  # type: ignore[union-attr]
    if log and (a <= 0 or b <= 0):
        raise SpecError(f"a log range needs positive ends, got {shown(spec)}", file=file, path=where)
    if n == 1:
        xs = [a]
    elif log:
        xs = [math.exp(math.log(a) + (math.log(b) - math.log(a)) * i / (n - 1)) for i in range(n)]
    else:
        xs = [a + (b - a) * i / (n - 1) for i in range(n)]
    if not ua:
        whole = all(float(p).is_integer() for p in (a, b)) and all(abs(x - round(x)) < 1e-9 for x in xs)
        return [int(round(x)) if whole else float(f"{x:.6g}") for x in xs]
    return [f"{x:.6g} {ua}" for x in xs]  # 6 digits: readable, and the ends stay exact


def parse_values(spec: Any, *, where: str = "", file: str | None = None) -> tuple[Any, ...]:
    """Values of a parameter: a YAML/Python list (items as they are), a comma list, a range, or one value."""
    if isinstance(spec, (list, tuple)):
        vals = list(spec)
    elif isinstance(spec, str):
        s = spec.strip()
        if ":" in s:
            vals = _range(s, where, file)
        else:
            vals = [v.strip() for v in s.split(",")]
            if any(v == "" for v in vals):
                raise SpecError(f"empty value in the list {shown(spec)}", file=file, path=where)
    elif isinstance(spec, (int, float)) and not isinstance(spec, bool):
        vals = [spec]
    else:
        raise SpecError(f"expected values such as '25GB/s,50GB/s', '1mm^2:8mm^2:8' or a list, got {shown(spec)}",
                        file=file, path=where)
    if not vals:
        raise SpecError("expected at least one value", file=file, path=where)
    return tuple(vals)


def parse_param(text: str, *, file: str | None = None) -> Param:
    """``PATH=VALUES`` as the command line writes it."""
    if "=" not in text:
        raise SpecError(f"expected PATH=VALUES (e.g. topology.dims[1].bandwidth=25GB/s,50GB/s), got {shown(text)}",
                        file=file)
    path, spec = text.split("=", 1)
    return make_param(path.strip(), spec, file=file)


def make_param(path: str, spec: Any, *, file: str | None = None) -> Param:
    tokens = parse_path(path, file=file)
    return Param(path_text(tokens), tokens, parse_values(spec, where=path_text(tokens), file=file))


def params_from(spec: Mapping[str, Any] | Iterable[str | Param], *, file: str | None = None) -> list[Param]:
    """Parameters from a mapping {path: values}, ``PATH=VALUES`` strings or Param objects; a path given twice
    is an error."""
    if isinstance(spec, Mapping):
        out = [make_param(str(k), v, file=file) for k, v in spec.items()]
    else:
        out = [p if isinstance(p, Param) else parse_param(p, file=file) for p in spec]
    if not out:
        raise SpecError("a sweep needs at least one parameter (--param PATH=VALUES)", file=file)
    seen: set[str] = set()
    for p in out:
        if p.path in seen:
            raise SpecError("this parameter is given twice", file=file, path=p.path)
        seen.add(p.path)
    return out


def canonical(value: Any) -> Any:
    """What a value means: a number or a quantity string becomes its SI float (area in mm^2, as the problem
    file reads it); anything else (``lifo``) stays as it is."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        m = _NUMBER_UNIT.match(value)
        if m:
            unit = (m.group(2) or "").strip()
            if not unit:
                return float(m.group(1))
            dim = _unit_dimension(unit)
            if dim is not None:
                return float(m.group(1)) * dim.units[unit]
    return value


def dimension_of(values: Iterable[Any]) -> U.Dimension | None:
    """The dimension the values' units share (for axis labels), or None for plain numbers or mixtures."""
    dims: list[U.Dimension | None] = []
    for v in values:
        unit = ""
        if isinstance(v, str):
            m = _NUMBER_UNIT.match(v)
            unit = (m.group(2) or "").strip() if m else ""
        dims.append(_unit_dimension(unit) if unit else None)
    return dims[0] if dims and all(d is dims[0] for d in dims) else None
