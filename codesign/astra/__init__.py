"""ASTRA-sim 1.0 compatibility: its system/network inputs and its analytical semantics.

``inputs`` reads ASTRA-sim's network JSON and system text files; ``algorithms`` and ``system`` model its
collective algorithms and its system layer on codesign's event loop (``codesign.sim.events``), ``membus``
its LogGP shared bus, ``profile`` the fast path's per-phase profiles; ``mode`` runs an ASTRA-sim workload
with them (``simulate_astra``, times in ns): every training loop of ASTRA-sim 1.0's Workload.cc but
distributed inference (docs/astra-sim-modes.md). The ASTRA-sim workload reader is
``codesign.workload.astra``, with the other workload formats.
"""
from __future__ import annotations

from typing import Any

__all__ = ["simulate_astra", "AstraResult", "AstraLayerStats"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import mode
        return getattr(mode, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
