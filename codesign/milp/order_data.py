"""The network-order problem at one design, as single-machine scheduling: data, bounds and heuristics.

The serial network model (``model.py``, ``schedule.serial.run_sequence``) serves collectives whole, one at a
time. When every collective of an iteration is awaited only in the next iteration, and every wait
point comes before every issue point in program order (data parallelism, and ASTRA-sim's MICRO), the
iterations do not overlap on the network and the period of a fixed order is a closed form. Measure
time from the start of W, the last compute task that waits for a collective. Collective k is released
at r_k (the end of its issuing task), takes p_k, and the next iteration reaches W at
    T = P + max(0, max_k (C_k - d_k)),   d_k = P - u_k - G_k,
where P is the iteration's compute, u_k the delay after k (the layer's update) and G_k the compute from
k's waiting task up to W. Minimizing T is 1|r_j|L_max (DESIGN.md, "Structure worth exploiting").

Everything here is in the model's time unit (microseconds, ``data.TIME_UNIT``) and pure numpy/Python:
the evaluator (a longest-path pass, identical to run_sequence on these instances), Horn's preemptive
bound, Schrage's list schedule, a local search, and the immediate selections an incumbent implies.
"""
from __future__ import annotations

import heapq
import itertools
import time
from dataclasses import dataclass

import numpy as np

from ..platform.costs import collective_time, compute_time
from ..platform.endpoint import design_area_mm2, design_of, design_power_w
from ..schedule.iteration import Iteration
from .data import TIME_UNIT, ModelData


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


def completions(inst: Instance, seq) -> np.ndarray:
    """Completion times along ``seq`` served as early as possible (the longest path, vectorized):
    C_n = Q_n + max_{m <= n} (r_(m) - Q_(m-1)), Q the prefix sums of the durations in order."""
    s = np.asarray(seq, dtype=np.int64)
    q = np.cumsum(inst.proc[s])
    return q + np.maximum.accumulate(inst.release[s] - (q - inst.proc[s]))


def lmax(inst: Instance, seq) -> float:
    """L_max of serving ``seq`` (a permutation of collectives) as early as possible."""
    if len(seq) == 0:
        return -np.inf
    s = np.asarray(seq, dtype=np.int64)
    return float(np.max(completions(inst, s) - inst.due[s]))


def starts(inst: Instance, seq) -> np.ndarray:
    """Start of every collective (us from the cut) when served in ``seq`` as early as possible."""
    out = np.zeros(inst.n)
    t = -np.inf
    for k in seq:
        out[k] = max(t, inst.release[k])
        t = out[k] + inst.proc[k]
    return out


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


def schrage(inst: Instance) -> list[int]:
    """Schrage's list schedule: whenever the network frees, the released collective due first (for
    data-parallel training that is LIFO's choice); if none is released, the next to be released."""
    order = list(np.argsort(inst.release, kind="stable"))
    r, p, d = inst.release, inst.proc, inst.due
    heap: list[tuple[float, int]] = []
    seq: list[int] = []
    t, i = -np.inf, 0
    while len(seq) < inst.n:
        if not heap and r[order[i]] > t:
            t = r[order[i]]
        while i < inst.n and r[order[i]] <= t:
            heapq.heappush(heap, (d[order[i]], order[i]))
            i += 1
        _, k = heapq.heappop(heap)
        seq.append(int(k))
        t += p[k]
    return seq


def local_search(inst: Instance, seq: list[int], budget_s: float = 0.2) -> list[int]:
    """Insertion moves (take one collective, put it elsewhere), best move first, until none helps or the
    time budget runs out. Only moves of the critical collective (the latest) or of one before it on
    the critical block can shorten L_max, so those are tried."""
    best = np.asarray(seq, dtype=np.int64)
    val = lmax(inst, best)
    t_end = time.perf_counter() + budget_s
    n = inst.n
    while time.perf_counter() < t_end:
        C = completions(inst, best)
        late = C - inst.due[best]
        crit = int(np.argmax(late))
        # the critical block: back from the critical position to the last start at a release
        start = crit
        S = C - inst.proc[best]
        while start > 0 and S[start] <= C[start - 1] + 1e-12:
            start -= 1
        found = False
        for i in range(start, crit + 1):
            rest = np.delete(best, i)
            for j in range(n):
                if j == i:
                    continue
                cand = np.insert(rest, j, best[i])
                v = lmax(inst, cand)
                if v < val - 1e-9:
                    best, val, found = cand, v, True
                    break
            if found or time.perf_counter() > t_end:
                break
        if not found:
            break
    return best.tolist()


def toward(inst: Instance, seq: list[int], reference: list[int], lmax_cap: float, budget_s: float = 0.5) -> list[int]:
    """Among orders with L_max <= ``lmax_cap``, move ``seq`` toward ``reference`` (the LIFO order): swap
    adjacent collectives that ``reference`` serves the other way round while L_max stays within the cap.
    L_max only sees the critical collective, so many orders tie; the one nearest the policy changes
    the policy only where it gains (and replays like it elsewhere)."""
    rank = np.empty(inst.n, dtype=np.int64)
    rank[np.asarray(reference)] = np.arange(inst.n)
    cur = np.asarray(seq, dtype=np.int64)
    cap = lmax_cap + 1e-9 * max(1.0, abs(lmax_cap))
    t_end = time.perf_counter() + budget_s
    changed = True
    while changed and time.perf_counter() < t_end:
        changed = False
        for i in range(inst.n - 1):
            a, b = cur[i], cur[i + 1]
            if rank[a] > rank[b]:
                cur[i], cur[i + 1] = b, a
                if lmax(inst, cur) <= cap:
                    changed = True
                else:
                    cur[i], cur[i + 1] = a, b
    return cur.tolist()


def immediate_selections(inst: Instance, lmax_target: float) -> list[tuple[int, int]]:
    """Pairs (i, j) where i must precede j in every order with L_max < ``lmax_target``: if j went first,
    i could not finish before r_j + p_j + p_i, making it late by at least ``lmax_target`` (Carlier and
    Pinson's immediate selection on a pair)."""
    r, p, d = inst.release, inst.proc, inst.due
    # j before i forces C_i >= max(r_j + p_j, r_i) + p_i
    late = np.maximum((r + p)[None, :], r[:, None]) + p[:, None] - d[:, None]  # [i, j]
    np.fill_diagonal(late, -np.inf)
    ii, jj = np.nonzero(late >= lmax_target - 1e-9 * max(1.0, abs(lmax_target)))
    return list(zip(ii.tolist(), jj.tolist()))


# ------------------------------------------------------------------------------------------ designs
@dataclass(frozen=True)
class Candidate:
    """One design of the catalog: option indices, area (mm^2), power (W), durations (s)."""

    choice: dict[str, int]
    area_mm2: float
    power_w: float
    pc: tuple[float, ...]
    dc: tuple[float, ...]


def candidates(md: ModelData) -> list[Candidate]:
    """Every design within the budgets, with its compute and collective durations."""
    eng, p = md.engine, md.problem
    names = list(eng.resources)
    out = []
    for combo in itertools.product(*(range(len(eng.options(r))) for r in names)):
        choice = dict(zip(names, combo))
        area, power = design_area_mm2(eng, choice), design_power_w(eng, choice)
        if eng.area_budget_mm2 is not None and area > eng.area_budget_mm2 * (1 + 1e-12) + 1e-12:
            continue
        if eng.power_budget_w is not None and power > eng.power_budget_w * (1 + 1e-12) + 1e-12:
            continue
        design = design_of(eng, choice)
        pc = tuple(compute_time(c.demand, eng, p.npu, design) for c in md.iteration.computes)
        dc = tuple(collective_time(dem, eng, p.npu, design) for dem in md.demands)
        out.append(Candidate(choice, area, power, pc, dc))
    return out


def undominated(cands: list[Candidate], cost: str) -> tuple[list[Candidate], int]:
    """Drop designs that another design beats or equals on every duration at no more ``cost`` (area_mm2
    or power_w): any order runs at least as fast on the other (durations only enter the longest path
    with positive signs), so the dominated one can only tie. Returns the survivors and the count dropped."""
    if not cands:
        return cands, 0
    dur = np.array([c.pc + c.dc for c in cands])
    cst = np.array([getattr(c, cost) for c in cands])
    keep = []
    for a in range(len(cands)):
        le = np.all(dur <= dur[a] * (1 + 1e-12) + 1e-15, axis=1) & (cst <= cst[a] + 1e-12)
        strict = np.any(dur < dur[a] * (1 - 1e-12), axis=1) | (cst < cst[a] - 1e-12)
        le[a] = False
        # dominated by a strictly better design, or by an identical one listed earlier
        if np.any(le & strict) or np.any(le[:a] & ~strict[:a]):
            continue
        keep.append(cands[a])
    return keep, len(cands) - len(keep)

