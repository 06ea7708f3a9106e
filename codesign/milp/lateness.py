"""Separable iterations as single-machine scheduling: releases, due dates and Horn's bound.

When every collective of an iteration is awaited only in the next iteration, and every wait point
comes before every issue point in program order (data parallelism, and ASTRA-sim's MICRO), iterations
do not overlap on the network and the period has a closed form. Measure time from the start of W, the
last compute task that waits for a collective. Collective k is released at r_k (the end of its issuing
task), completes at C_k, and the next iteration reaches W at
    T = P + max(0, max_k (C_k - d_k)),   d_k = P - u_k - G_k,
where P is the iteration's compute, u_k the delay after k (the layer's update) and G_k the compute from
k's waiting task up to W: minimizing T is minimizing the maximum lateness (1|r_j|L_max). The relaxations
of ``master.py`` and ``flowshop.py`` build on these releases and due dates; Horn's preemptive bound
(Horn 1974) bounds every order. Everything is in microseconds (``data.TIME_UNIT``), numpy only.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ..schedule.iteration import Iteration
from .data import TIME_UNIT


@dataclass(frozen=True)
class Shape:
    """Where an iteration is cut for the single-machine reduction: W (the last waiting task) and, per
    collective, its issuing task, waiting task and delay (s)."""

    W: int
    issue: tuple[int, ...]
    wait: tuple[int, ...]
    delay_s: tuple[float, ...]


def separable(it: Iteration) -> Shape | None:
    """The reduction's cut, or None when the iteration's collectives can overlap the next iteration's
    (a collective awaited in its own iteration, or a release before the last wait point)."""
    if not it.comms or any(not c.next_iteration for c in it.comms):
        return None
    W = max(c.wait_before for c in it.comms)
    if min(c.issue_after for c in it.comms) < W:
        return None
    return Shape(W, tuple(c.issue_after for c in it.comms), tuple(c.wait_before for c in it.comms),
                 tuple(c.delay_s for c in it.comms))


@dataclass(frozen=True)
class Instance:
    """1|r_j|L_max at one design (us): T = compute + max(0, L_max)."""

    release: np.ndarray
    proc: np.ndarray
    due: np.ndarray
    compute: float

    @property
    def n(self) -> int:
        return len(self.proc)

    def period(self, lmax: float) -> float:
        return self.compute + max(0.0, lmax)


def instance(shape: Shape, pc: list[float], dc: list[float]) -> Instance:
    """The single-machine instance from compute and collective durations (s)."""
    p = np.asarray(pc) / TIME_UNIT
    csum = np.concatenate([[0.0], np.cumsum(p)])   # csum[j] = compute before task j
    P = float(csum[-1])
    W = shape.W
    rel = np.array([csum[i + 1] - csum[W] for i in shape.issue])
    G = np.array([csum[W] - csum[w] for w in shape.wait])
    due = P - np.asarray(shape.delay_s) / TIME_UNIT - G
    return Instance(rel, np.asarray(dc) / TIME_UNIT, due, P)


def horn_bound(inst: Instance) -> float:
    """Horn's bound: L_max of the preemptive earliest-due-date schedule, optimal when collectives may be
    preempted, hence a lower bound for every non-preemptive order (also = Jackson's preemptive
    schedule = max over job sets Q of min r + sum p - max d)."""
    order = np.argsort(inst.release, kind="stable")
    r, p, d = inst.release, inst.proc, inst.due
    heap: list[tuple[float, int]] = []
    left = p.astype(float).copy()
    t, i, L, n = -np.inf, 0, -np.inf, inst.n
    while i < n or heap:
        if not heap:
            t = max(t, r[order[i]])
        while i < n and r[order[i]] <= t:
            heapq.heappush(heap, (d[order[i]], order[i]))
            i += 1
        dk, k = heap[0]
        horizon = r[order[i]] if i < n else np.inf
        run = min(left[k], horizon - t)
        t += run
        left[k] -= run
        if left[k] <= 1e-12:
            heapq.heappop(heap)
            L = max(L, t - dk)
    return float(L)
