"""Replaying an iteration with fixed durations: the steady-state period of a policy or of a fixed order.

Compute is one server running tasks in program order; the network is one server running collectives
whole, without preemption. ``run_policy`` dispatches like ASTRA-sim 1.0's queues: when the network is
free it takes the waiting collective of highest priority (urgent ones first; then LIFO: the most
recently issued; FIFO: the earliest). ``run_sequence`` serves a fixed cyclic order strictly, waiting for
the next collective in the order even if another is ready: for a fixed order the earliest-start
schedule is optimal, so its period is exactly what the MILP finds for that order and design.

A network order is a tuple of (collective index, iteration offset): the steady-state sequence, starting
from the first collective of a reference iteration n, of the dispatches that follow; an offset of 1
means the copy of that collective issued in iteration n+1 (DLRM's forward all-to-all can overtake the
previous iteration's last all-reduces).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

from .iteration import Iteration

Order = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class SerialReplay:
    """Steady state of a replay: period (s), one iteration's start times relative to its first compute
    task (s), the network order, and whether the order and period settled."""

    period_s: float
    compute_start_s: tuple[float, ...]
    comm_start_s: tuple[float, ...]
    order: Order
    converged: bool
    iterations: int


def _replay(it: Iteration, p: list[float], d: list[float], policy: str, order: Order | None,
            max_iter: int) -> SerialReplay:
    J, K = len(it.computes), len(it.comms)
    waits: dict[int, list[tuple[int, int, float]]] = {}
    for c in it.comms:
        waits.setdefault(c.wait_before, []).append((c.index, 1 if c.next_iteration else 0, c.delay_s))
    releases: dict[int, list[int]] = {}
    for c in it.comms:
        releases.setdefault(c.issue_after, []).append(c.index)

    comp_start: list[list[float]] = []
    comm_start: dict[tuple[int, int], float] = {}
    comm_end: dict[tuple[int, int], float] = {}
    dispatch: list[tuple[int, int]] = []
    ready: list[tuple] = []          # heap of (priority key, k, n) released and waiting
    released_at: dict[tuple[int, int], float] = {}
    seq = 0                          # global issue counter (ASTRA's priority stamp)
    net_free = 0.0
    now_comp = 0.0
    # a strict order may start with collectives of earlier iterations; before iteration 0 they do not exist
    strict_pos = -max((off for _, off in order), default=0) * K if order is not None else 0

    def key(k: int, n: int) -> tuple:
        urgent = 0 if it.comms[k].urgent else 1
        return (urgent, -seq if policy == "lifo" else seq)

    def dispatch_until(limit: float, once: bool = False) -> bool:
        """Run the network over every dispatch that starts strictly before ``limit`` (or just the
        next one if ``once``); False when nothing could be dispatched."""
        nonlocal net_free, strict_pos
        progressed = False
        while True:
            if order is not None:
                k, off = order[strict_pos % K]
                n = strict_pos // K + off
                if n < 0:
                    strict_pos += 1
                    continue
                if (k, n) not in released_at:
                    return progressed
                start = max(net_free, released_at[(k, n)])
                if start >= limit:
                    return progressed
                strict_pos += 1
            else:
                if not ready:
                    return progressed
                # among those released by the time the network frees, highest priority first
                t_free = net_free
                cand = [e for e in ready if released_at[(e[1], e[2])] <= t_free]
                if not cand:
                    first = min(ready, key=lambda e: released_at[(e[1], e[2])])
                    t_free = released_at[(first[1], first[2])]
                    cand = [e for e in ready if released_at[(e[1], e[2])] <= t_free]
                if t_free >= limit:
                    return progressed
                best = min(cand)
                ready.remove(best)
                heapq.heapify(ready)
                _, k, n = best
                start = t_free
            comm_start[(k, n)] = start
            comm_end[(k, n)] = start + d[k]
            net_free = start + d[k]
            dispatch.append((k, n))
            progressed = True
            if once:
                return True

    inf = float("inf")
    n_done = 0
    for n in range(max_iter):
        starts = []
        for j in range(J):
            # the compute task may start once its predecessor ends and its awaited collectives end
            t = now_comp
            for k, back, delay in waits.get(j, ()):
                m = n - back
                if m < 0:
                    continue
                # one dispatch at a time: each starts before (k, m) ends, hence before any new release
                while (k, m) not in comm_end:
                    if not dispatch_until(inf, once=True):
                        raise RuntimeError("collective never dispatched: inconsistent order")
                t = max(t, comm_end[(k, m)] + delay)
            # collectives that start before t are decided by then; later ones wait for new releases
            dispatch_until(t)
            starts.append(t)
            now_comp = t + p[j]
            for k in releases.get(j, ()):
                released_at[(k, n)] = now_comp
                seq += 1
                heapq.heappush(ready, (key(k, n), k, n))
        comp_start.append(starts)
        n_done = n + 1
        if n >= 6 and _settled(comp_start, n):
            break
    dispatch_until(inf)
    n_ref = n_done - 3 if n_done >= 4 else n_done - 1
    period = comp_start[n_ref + 1][0] - comp_start[n_ref][0] if n_ref + 1 < len(comp_start) else comp_start[-1][0]
    base = comp_start[n_ref][0]
    rel_comp = tuple(s - base for s in comp_start[n_ref])
    rel_comm = tuple(comm_start.get((k, n_ref), inf) - base for k in range(K))
    order_out = _window(dispatch, comm_start, K, n_ref)
    return SerialReplay(period, rel_comp, rel_comm, order_out, n_done < max_iter, n_done)


def _settled(comp_start: list[list[float]], n: int) -> bool:
    """The last three periods agree to 1e-9: the max-plus recursion has reached its cycle."""
    per = [comp_start[i + 1][0] - comp_start[i][0] for i in range(n - 3, n)]
    scale = max(abs(x) for x in per) or 1.0
    return max(per) - min(per) <= 1e-9 * scale


def _window(dispatch: list[tuple[int, int]], comm_start: dict, K: int, n_ref: int) -> Order:
    if K == 0:
        return ()
    timeline = sorted(dispatch, key=lambda kn: (comm_start[kn], kn[1]))
    first = next(i for i, (k, n) in enumerate(timeline) if n == n_ref)
    window = [(k, n - n_ref) for k, n in timeline[first:first + K]]
    return normalize_order(window)


def normalize_order(window: list[tuple[int, int]] | Order) -> Order:
    """Rotate a cyclic order to start at its first entry of least offset, and shift offsets to start at 0.

    Moving the head of a cyclic order to its tail adds one iteration to it, so the rotation keeps the
    same cyclic sequence."""
    w = list(window)
    if not w:
        return ()
    lo = min(off for _, off in w)
    i = next(j for j, (_, off) in enumerate(w) if off == lo)
    rotated = w[i:] + [(k, off + 1) for k, off in w[:i]]
    return tuple((k, off - lo) for k, off in rotated)


def run_policy(it: Iteration, p: list[float], d: list[float], policy: str, max_iter: int = 60) -> SerialReplay:
    """Replay under a dispatch policy, ``lifo`` or ``fifo``, until the period settles."""
    if policy not in ("lifo", "fifo"):
        raise ValueError(f"unknown policy {policy!r}")
    return _replay(it, p, d, policy, None, max_iter)


def run_sequence(it: Iteration, p: list[float], d: list[float], order: Order, max_iter: int = 60) -> SerialReplay:
    """Replay with the network serving ``order`` strictly, cyclically."""
    if sorted(k for k, _ in order) != list(range(len(it.comms))):
        raise ValueError("the order must hold every collective exactly once")
    return _replay(it, p, d, "fifo", tuple(order), max_iter)


def issue_order(it: Iteration) -> Order:
    """FIFO's static order: collectives in the order they are issued."""
    return tuple((c.index, 0) for c in sorted(it.comms, key=lambda c: (c.issue_after, c.index)))
