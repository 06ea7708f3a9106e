"""ASTRA-sim 1.0's Themis chunk scheduler (``inter-dimension-scheduling: themis`` / ``offlineGreedy``).

Themis (Rashidi et al., ISCA 2022) orders, chunk by chunk, the dimensions a collective's chunk visits so that
the dimensions' loads even out. ASTRA-sim 1.0 keeps one load per dimension (``OfflineGreedy``, computed on
NPU 0 and shared by all), in units of "MiB on dimension 0's bandwidth": a reduce-scatter step over a
dimension of n NPUs adds (chunk / 2^20) (n-1)/n / (B_d / B_0), an all-gather step (chunk / 2^20)(n-1) /
(B_d / B_0), the chunk shrinking by n after a reduce-scatter and growing by n after an all-gather. For each
chunk the dimensions are sorted by load (least first; most first for an all-gather); if the gap between the
least and the most loaded dimension is worth less than 1/16 of a chunk the natural order is kept instead.
The loads restart at every tick in which a collective is generated. Written anew from that description; the
quirks kept are ASTRA's (the natural-order branch adds each position's load with that position's dimension).

The order of floating-point operations is ASTRA's, so the orders, and the finish times, are the same.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

MIB = 1048576


class Themis:
    """The per-dimension loads of NPU 0's OfflineGreedy. ``sizes``: NPUs per dimension; ``bandwidths``: each
    dimension's NPU bandwidth as the analytical backend reports it (only ratios to dimension 0 matter)."""

    def __init__(self, sizes: Sequence[int], bandwidths: Sequence[float]) -> None:
        self.sizes = list(sizes)
        self.bw = list(bandwidths)
        self.loads: list[list[float]] = [[d, 0.0] for d in range(len(sizes))]  # [dimension, load] in order
        self.last_reset: int | None = None

    def new_collective(self, tick: int) -> None:
        """Sys::generate_collective: the loads restart once per tick that generates collectives."""
        if self.last_reset != tick:
            for i, entry in enumerate(self.loads):
                entry[0], entry[1] = i, 0.0
            self.last_reset = tick

    def _ratio(self, d: int) -> float:
        return self.bw[d] / self.bw[0]

    def _add(self, entry: list[float], d: int, chunk: int, gather: bool) -> int:
        n = self.sizes[d]
        if gather:
            entry[1] += ((chunk / MIB) * float(n - 1)) / self._ratio(d)
            return chunk * n
        entry[1] += ((chunk / MIB) * (float(n - 1) / n)) / self._ratio(d)
        return chunk // n

    def order(self, chunk: int, involved: Sequence[bool], gather: bool) -> list[int]:
        """The dimensions, in the order a chunk of ``chunk`` bytes (the recommended chunk size, as ASTRA
        counts it even for a smaller last chunk) visits them; ``gather``: an all-gather (else a reduce-scatter
        or an all-reduce, scheduled as its reduce-scatter half)."""
        loads = self.loads
        loads.sort(key=lambda e: e[1])  # stable, as std::sort's insertion sort on a few dimensions
        if gather:
            loads.reverse()

        def idle(d: int) -> bool:
            return not involved[d] or self.sizes[d] == 1

        result: list[int] = []
        size = chunk
        decided = False
        for pointer, entry in enumerate(loads):
            d = int(entry[0])
            if idle(d):
                result.append(d)
                continue
            if not decided:
                decided = True
                if self._balanced(pointer, entry, chunk, idle, gather):
                    return self._natural(size, idle, gather)
            result.append(d)
            size = self._add(entry, d, size, gather)
        return result

    def _balanced(self, pointer: int, entry: list[float], chunk: int, idle, gather: bool) -> bool:
        """True if the load gap is worth less than chunk/16 bytes (OfflineGreedy's diff_size)."""
        loads = self.loads
        d = int(entry[0])
        if not gather:
            gap = math.fabs(loads[-1][1] - entry[1])
            diff = int((gap * self._ratio(d)) / (float(self.sizes[d] - 1) / self.sizes[d]) * MIB)
        else:
            last = len(loads) - 1
            while idle(int(loads[last][0])):
                last -= 1
            far = int(loads[last][0])
            gap = math.fabs(loads[last][1] - entry[1])
            diff = int((gap * self._ratio(far)) / float(self.sizes[far] - 1) * MIB)
            last -= 1
            while pointer <= last:
                if not idle(int(loads[last][0])):
                    diff //= self.sizes[int(loads[last][0])]
                last -= 1
        return diff < chunk // 16

    def _natural(self, size: int, idle, gather: bool) -> list[int]:
        """The natural order; each position's load grows with the chunk as the position's dimension sees it."""
        by_dim = sorted(self.loads, key=lambda e: e[0])
        self.loads = by_dim[::-1] if gather else by_dim
        for pos in range(len(self.loads)):
            if idle(pos):
                continue
            size = self._add(self.loads[pos], pos, size, gather)
        return list(range(len(self.loads)))
