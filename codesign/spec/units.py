"""Parsing quantities with units ("25 GB/s", "4 MiB", "500 ns") into SI floats.

Inside codesign every quantity is SI: seconds, bytes, bytes/s, FLOP, FLOP/s, watts; area is kept in
mm^2 (named so everywhere), the unit chip designers quote. Decimal prefixes are powers of 1000
(GB = 1e9 bytes) and binary prefixes powers of 1024 (GiB = 2^30 bytes), as IEC 80000-13 defines them.
A bare number is taken in the dimension's base unit (bytes, seconds, ...).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import shown


@dataclass(frozen=True)
class Dimension:
    """A physical dimension: its name (for messages), its base unit, and the unit words it accepts."""

    name: str
    base: str
    units: dict[str, float]


_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}


def _prefixed(symbols: list[str], base_factor: float = 1.0, binary: bool = False) -> dict[str, float]:
    out: dict[str, float] = {}
    for sym in symbols:
        for p, f in _DECIMAL.items():
            out[p + sym] = f * base_factor
        if binary:
            for p, f in _BINARY.items():
                out[p + sym] = f * base_factor
    return out


_BYTES = _prefixed(["B", "byte", "bytes"], binary=True)
_SECONDS = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "ps": 1e-12,
            "min": 60.0}
_FLOP = _prefixed(["FLOP", "flop", "FLOPs", "flops"])
_RATE_BYTES = {f"{k}/s": v for k, v in _BYTES.items()} | {f"{k}ps": v for k, v in _prefixed(["B"]).items()}
_RATE_FLOP = {f"{k}/s": v for k, v in _FLOP.items()} | _prefixed(["FLOPS"])
_AREA = {"mm^2": 1.0, "mm2": 1.0, "um^2": 1e-6, "um2": 1e-6, "cm^2": 100.0, "cm2": 100.0}
_POWER = {"W": 1.0, "mW": 1e-3, "uW": 1e-6, "kW": 1e3}
_FREQ = _prefixed(["Hz"])

BYTES = Dimension("a size", "bytes", _BYTES)
SECONDS = Dimension("a time", "s", _SECONDS)
BYTES_PER_S = Dimension("a bandwidth", "B/s", _RATE_BYTES)
FLOP = Dimension("an amount of compute", "FLOP", _FLOP)
FLOP_PER_S = Dimension("a compute rate", "FLOP/s", _RATE_FLOP)
AREA_MM2 = Dimension("an area", "mm^2", _AREA)
WATTS = Dimension("a power", "W", _POWER)
HERTZ = Dimension("a frequency", "Hz", _FREQ)

ALL_DIMENSIONS = (BYTES, SECONDS, BYTES_PER_S, FLOP, FLOP_PER_S, AREA_MM2, WATTS, HERTZ)

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([^\s\d].*?)?\s*$")


class UnitError(ValueError):
    """A value that does not parse, or parses in the wrong dimension; the message says what was expected."""


def example(dim: Dimension) -> str:
    return {"bytes": '"4 MiB"', "s": '"500 ns"', "B/s": '"25 GB/s"', "FLOP": '"2.5 GFLOP"',
            "FLOP/s": '"120 TFLOP/s"', "mm^2": '"1.5 mm^2"', "W": '"2 W"', "Hz": '"1 GHz"'}[dim.base]


def _finite(x: float | int, dim: Dimension, written: object) -> float:
    """``x`` as a float, or UnitError if it is not finite (or too large for a float)."""
    noun = dim.name.split(" ", 1)[1]
    try:
        f = float(x)
    except OverflowError:
        raise UnitError(f"expected a finite {noun}, got a number too large to represent") from None
    if not math.isfinite(f):
        text = str(written) if len(str(written)) <= 60 else str(written)[:60] + "..."
        raise UnitError(f"expected a finite {noun}, got {text}")
    return f


def parse_quantity(value: object, dim: Dimension) -> float:
    """Return ``value`` in SI base units of ``dim`` (area in mm^2).

    Accepts a number (already in base units) or a string "<number> <unit>". Raises UnitError with a
    message naming the expected dimension and the nearest dimension the unit does belong to.
    """
    if isinstance(value, bool):
        raise UnitError(f"expected {dim.name} such as {example(dim)}, got a boolean")
    if isinstance(value, (int, float)):
        return _finite(value, dim, value)
    if not isinstance(value, str):
        kind = ("a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict)
                else "nothing (null)" if value is None else type(value).__name__)
        raise UnitError(f"expected {dim.name} such as {example(dim)}, got {kind}")
    key = (value, dim.name)
    known = _PARSED.get(key)
    if known is not None:
        return known
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[key] = got = _parse_text(value, dim)
    return got


#: Texts parsed already, by (text, dimension name): a sweep parses one problem per point, each the same
#: quantities but the swept ones (a ResNet-50 point: about 50 texts). Only texts that parse are kept.
_PARSED: dict[tuple[str, str], float] = {}
_PARSED_MAX = 100_000


def _parse_text(value: str, dim: Dimension) -> float:
    """``parse_quantity`` of a string."""
    m = _QUANTITY.match(value)
    if not m:
        raise UnitError(f"expected {dim.name} such as {example(dim)}, got {shown(value)}")
    number = float(m.group(1))
    unit = (m.group(2) or "").strip()
    if not unit:
        return _finite(number, dim, value)
    if unit in dim.units:
        return _finite(number * dim.units[unit], dim, value)
    for other in ALL_DIMENSIONS:
        if other is not dim and unit in other.units:
            raise UnitError(f"expected {dim.name} such as {example(dim)}, got {shown(value)}, "
                            f"which is {other.name} ({other.base})")
    raise UnitError(f"unknown unit {shown(unit, 20)} in {shown(value)}; expected {dim.name} such as {example(dim)}")


def format_quantity(value: float, dim: Dimension, digits: int = 4) -> str:
    """A short human string for an SI value, in the unit a person would pick for its magnitude, to ``digits``
    significant digits: 2.5e-6 s -> '2.5 us', 13.4493 s -> '13.45 s', 4194304 B -> '4 MiB'. Every time codesign
    prints goes through here, so one figure never reads '1.34493e+07 us'."""
    if dim is SECONDS:
        for unit, f in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
            # (a value that rounds up to 1000 of a unit is shown in the next unit up: 999.99 us -> '1 ms')
            if abs(float(f"{value / f:.{digits}g}")) >= 1 or unit == "ns":
                x = value / f
                return f"{x:.0f} {unit}" if abs(x) >= 10**digits else f"{x:.{digits}g} {unit}"
    if dim is BYTES:
        for unit, f in (("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
            if abs(value) >= f:
                return f"{value / f:.4g} {unit}"
        return f"{value:.0f} B"
    if dim is BYTES_PER_S:
        for unit, f in (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6)):
            if abs(value) >= f:
                return f"{value / f:.4g} {unit}"
        return f"{value:.4g} B/s"
    if dim is FLOP_PER_S:
        for unit, f in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9)):
            if abs(value) >= f:
                return f"{value / f:.4g} {unit}"
    if dim is HERTZ:
        for unit, f in (("GHz", 1e9), ("MHz", 1e6), ("kHz", 1e3)):
            if abs(value) >= f:
                return f"{value / f:.4g} {unit}"
    return f"{value:.4g} {dim.base}"
