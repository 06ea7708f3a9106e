"""Plausible ranges of the quantities a problem file gives, to warn about a value that parses but cannot
be meant: a bare ``latency: 500`` is 500 seconds, ``bandwidth: 25 KB/s`` is a million times too slow.

``RANGES`` is the one table: per quantity its dimension, the keys that give it, the range a real
platform falls in and a typical value. ``implausible`` checks one value against it and, when the number
as written would be plausible in another unit of the same dimension, names the likeliest one (the unit
that brings the value closest to the typical one). The readers (``spec.readers.quantity``) turn the
answer into a warning naming the file, line and key; a warning, never an error: an unusual platform is
allowed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import units as U


@dataclass(frozen=True)
class Plausible:
    """A quantity's plausible range, in SI base units (area in mm^2); None: no bound on that side."""

    what: str                           # "a link latency", for the message
    dim: U.Dimension
    keys: tuple[str, ...] | None        # the keys that give it; None: any key of this dimension
    lo: float | None
    hi: float | None
    typical: float                      # picks the likeliest unit when the number lacks one


KiB, TiB = 2.0**10, 2.0**40

#: First match wins (dimension, then key); the ranges are wide on purpose: they catch a missing or wrong
#: unit (a factor of 1000 or more), not an unusual design.
RANGES: tuple[Plausible, ...] = (
    Plausible("a link latency", U.SECONDS, ("latency",), None, 1e-3, 500e-9),
    Plausible("a collective phase's latency", U.SECONDS, ("phase_latency",), None, 10e-3, 20e-6),
    Plausible("an endpoint delay", U.SECONDS, ("endpoint_delay",), None, 1e-3, 10e-9),
    Plausible("a layer's compute time", U.SECONDS, ("forward", "input_grad", "weight_grad", "time"), None, 1.0,
              100e-6),
    Plausible("an update delay", U.SECONDS, ("update",), None, 1.0, 1e-6),
    Plausible("an iteration-time target", U.SECONDS, ("iteration_time_target",), 1e-6, 3600.0, 1e-3),
    Plausible("a bandwidth", U.BYTES_PER_S, None, 1e6, 100e12, 100e9),
    Plausible("a compute rate", U.FLOP_PER_S, None, 1e9, 1e18, 100e12),
    Plausible("an SRAM size", U.BYTES, ("size", "sram"), KiB, TiB, 4 * 2.0**20),
    Plausible("an amount of data", U.BYTES, ("bytes",), None, TiB, 4 * 2.0**20),
    Plausible("an amount of compute", U.FLOP, ("flops",), None, 1e18, 1e9),
    Plausible("a clock", U.HERTZ, None, 1e6, 100e9, 1e9),
    Plausible("an area", U.AREA_MM2, None, None, 1000.0, 1.0),  # a reticle is about 850 mm^2
    Plausible("a power", U.WATTS, None, None, 1000.0, 1.0),
)

#: The units a missing or wrong one is likely to have been, per dimension.
COMMON_UNITS: dict[str, tuple[str, ...]] = {
    "s": ("ns", "us", "ms", "s"), "bytes": ("B", "KiB", "MiB", "GiB"), "B/s": ("MB/s", "GB/s", "TB/s"),
    "FLOP/s": ("GFLOP/s", "TFLOP/s", "PFLOP/s"), "FLOP": ("MFLOP", "GFLOP", "TFLOP"), "Hz": ("MHz", "GHz"),
    "mm^2": ("um^2", "mm^2"), "W": ("mW", "W"),
}


def range_of(dim: U.Dimension, key: str) -> Plausible | None:
    for r in RANGES:
        if r.dim is dim and (r.keys is None or key in r.keys):
            return r
    return None


def _bounds(r: Plausible) -> str:
    lo = U.format_quantity(r.lo, r.dim) if r.lo is not None else None
    hi = U.format_quantity(r.hi, r.dim) if r.hi is not None else None
    return f"expected {lo} to {hi}" if lo and hi else f"expected at least {lo}" if lo else f"expected at most {hi}"


def _number_written(written: object) -> float | None:
    if isinstance(written, (int, float)) and not isinstance(written, bool):
        return float(written)
    if isinstance(written, str):
        m = U._QUANTITY.match(written)
        if m:
            return float(m.group(1))
    return None


def implausible(value: float, dim: U.Dimension, key: str, written: object) -> str | None:
    """A one-line reason if ``value`` (SI, parsed from ``written`` for key ``key``) is outside its quantity's
    plausible range, with the likeliest intended unit; None if plausible, zero, or of no listed quantity."""
    r = range_of(dim, key)
    if r is None or value == 0 or not math.isfinite(value):
        return None
    if (r.lo is None or value >= r.lo) and (r.hi is None or value <= r.hi):
        return None
    si = U.format_quantity(value, dim)
    text = f"{written} ({si})" if isinstance(written, (int, float)) else str(written).strip()[:40]
    msg = f"{text} is implausible for {r.what}, {_bounds(r)}"
    n = _number_written(written)
    if n is not None and n > 0:
        fits = [(abs(math.log(n * dim.units[u] / r.typical)), u) for u in COMMON_UNITS.get(dim.base, ())
                if u in dim.units and (r.lo is None or n * dim.units[u] >= r.lo)
                and (r.hi is None or n * dim.units[u] <= r.hi)]
        if fits:
            unit = min(fits)[1]
            msg += f"; {'a missing unit' if isinstance(written, (int, float)) else 'a wrong unit'}? " \
                   f"did you mean \"{n:g} {unit}\"?"
    return msg
