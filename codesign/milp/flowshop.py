"""The per-dimension flow shop of chunk-phases: a lower bound the simulator can never beat, and the
flow shop's own list schedule of an order.

The simulator (sim/replay.py) cuts each collective into m chunks; chunk c of collective k walks phases
i = 0..n_k-1, phase i on dimension dim(k, i); each dimension serves one chunk-phase at a time; a
chunk-phase never runs faster than alone on the endpoint (its ``alone`` time: the largest of its link
time and its memory and reduction demands over the pools), ACE's SRAM holds a chunk from admission
to its last phase, and compute never runs faster than on the full NPU. Relax everything else
(pool sharing, compute contention, the dispatch rule) and what is left is a flow shop with one
machine per dimension, re-entrant routes (reduce-scatter and all-gather visit a dimension twice) and
a cumulative SRAM. For data-parallel iterations (lateness.separable) the period is
T = P + max(0, max_k C_k - d_k) with nominal compute, and each of the following is a valid bound:

  dim d        one machine, preemption allowed: collective k brings work m * sum of its alone times on
               d, released at r_k + head (its first chunk's phases before d), due at d_k - tail (its
               last chunk's phases after d): Horn's bound on L_max (lateness.horn_bound);
  collective   k alone: r_k + for each dimension d, the phases before d's first visit + m times its
               per-chunk work on d + the phases after d's last visit (reduce-scatter and all-gather
               visit a dimension twice, so "sum + (m - 1) max" would overstate a re-entrant route), and
               at least ceil(m / q) traversals when only q of its chunks fit in the SRAM at once;
  sram_exclusive  chunks holding more than half the SRAM never coexist: one machine (Horn's bound);
  memory, reduction  all bytes through the engine's pools within one period (as schedule/bounds.py);
  sram         Little's law: sum over chunks of SRAM held x its least residence <= SRAM x T;
  compute      P, the iteration's compute on the full NPU.

``replay_bound`` is their maximum: no order, and no simulated replay, beats it at that design
(tests/test_order_optimize.py checks it against the simulator). ``list_schedule`` evaluates an order
as the flow shop's priority dispatch with alone times: an achievable schedule of the relaxation,
so its gap to ``replay_bound`` is the flow shop's optimality gap. Times in seconds at the API, in
microseconds (``data.TIME_UNIT``) inside.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from ..platform.costs import collective_demands, compute_time_terms, resource_time
from ..platform.endpoint import Design
from ..platform.pools import Pools, phase_rates, phase_work, sram_need
from ..problem.model import Problem
from ..schedule.bounds import LowerBound
from ..schedule.iteration import build_iteration
from .data import TIME_UNIT
from .lateness import Instance, horn_bound, instance, separable


@dataclass(frozen=True)
class FlowShop:
    """The relaxation at one design (us): per collective its route (dims), alone time per phase, SRAM
    held per chunk (bytes); chunks m; the nominal-compute single-machine data (releases, dues, P)."""

    dims: tuple[tuple[int, ...], ...]
    alone: tuple[tuple[float, ...], ...]
    sram_hold: tuple[float, ...]
    chunks: int
    base: Instance
    sram: float
    memory_us: float       # all memory traffic of an iteration over the memory pool
    reduction_us: float
    ndims: int


def flow_shop(problem: Problem, design: Design) -> FlowShop:
    it = build_iteration(problem.workload, problem.schedule.overlap)
    shape = separable(it)
    if shape is None:
        raise ValueError("the flow-shop bound needs collectives awaited in the next iteration (data parallelism)")
    npu, eng, m = problem.npu, problem.engine, problem.schedule.chunks
    pools = Pools.of(eng, npu, design)
    pc = [max(compute_time_terms(c.demand, npu, npu.cores, npu.hbm_bandwidth)) for c in it.computes]
    dims, alone, hold = [], [], []
    mem = red = 0.0
    for c in it.comms:
        dem = collective_demands(c.comm, problem.topology, eng, m)
        works = [phase_work(dem, i, eng, 0.0) for i in range(len(dem.phase_dims))]
        dims.append(tuple(w.dim for w in works))
        alone.append(tuple(1.0 / phase_rates([w], pools)[0] / TIME_UNIT for w in works))
        hold.append(sram_need(dem.chunk_bytes, pools.sram) if math.isfinite(pools.sram) else 0.0)
        mem += m * sum(w.memory_bytes for w in works)
        red += m * sum(w.reduce_bytes for w in works)
    # durations on the serial network are not used by the flow shop; the base carries r, d and P
    base = instance(shape, pc, [0.0] * len(it.comms))
    mem_us = resource_time(mem, pools.memory) / TIME_UNIT
    red_us = resource_time(red, pools.reduction) / TIME_UNIT
    return FlowShop(tuple(dims), tuple(alone), tuple(hold), m, base, pools.sram, mem_us, red_us,
                    len(problem.topology.dims))


#: A lower bound (s) on the simulated period at one design, whatever the order, with its terms (s):
#: the same value type as bounds.LowerBound, whose resource-load terms this relaxation tightens.
ReplayBound = LowerBound


def bound_terms(fs: FlowShop) -> dict[str, float]:
    """Each bound of the module docstring, as a period (us)."""
    b, m, K = fs.base, fs.chunks, len(fs.dims)
    P = b.compute
    terms = {"compute": P}
    for d in range(fs.ndims):
        ks = [k for k in range(K) if d in fs.dims[k]]
        if not ks:
            continue
        rel, work, due = [], [], []
        for k in ks:
            on = [i for i, x in enumerate(fs.dims[k]) if x == d]
            a = fs.alone[k]
            rel.append(b.release[k] + sum(a[:on[0]]))
            work.append(m * sum(a[i] for i in on))
            due.append(b.due[k] - sum(a[on[-1] + 1:]))
        inst = Instance(np.array(rel), np.array(work), np.array(due), P)
        terms[f"dim{d}"] = inst.period(horn_bound(inst))
    single = -np.inf
    sram = fs.sram if math.isfinite(fs.sram) and fs.sram > 0 else math.inf
    for k in range(K):
        if not fs.dims[k]:
            continue
        a = fs.alone[k]
        span = sum(a)
        for d in set(fs.dims[k]):
            # the first chunk reaches d after the phases before d's first visit, the last leaves after
            # the phases after d's last visit, and d serves all m chunks' visits one at a time
            on = [i for i, x in enumerate(fs.dims[k]) if x == d]
            span = max(span, sum(a[:on[0]]) + m * sum(a[i] for i in on) + sum(a[on[-1] + 1:]))
        if fs.sram_hold[k] > 0 and math.isfinite(sram):
            # at most q of its chunks fit in the SRAM at once, so its chunks pass in ceil(m / q) waves
            q = max(1, int(sram // fs.sram_hold[k] + 1e-9))
            span = max(span, math.ceil(m / q) * sum(a))
        single = max(single, b.release[k] + span - b.due[k])
    terms["collective"] = b.period(single)
    if math.isfinite(sram):
        # chunks holding more than half the SRAM exclude each other: one machine, each chunk for its traversal
        big = [k for k in range(K) if fs.dims[k] and fs.sram_hold[k] > sram / 2 * (1 + 1e-12)]
        if big:
            inst = Instance(b.release[big], np.array([m * sum(fs.alone[k]) for k in big]), b.due[big], P)
            terms["sram_exclusive"] = inst.period(horn_bound(inst))
    terms["memory"], terms["reduction"] = fs.memory_us, fs.reduction_us
    if math.isfinite(fs.sram) and fs.sram > 0:
        terms["sram"] = sum(m * h * sum(a) for h, a in zip(fs.sram_hold, fs.alone)) / fs.sram
    return terms


def replay_bound(problem: Problem, design: Design) -> ReplayBound:
    """The flow-shop relaxation's bound at ``design`` (s): no order and no replay beats it."""
    terms = {k: v * TIME_UNIT for k, v in bound_terms(flow_shop(problem, design)).items()}
    return ReplayBound(max(terms.values()), terms)


class _ListSchedule:
    """The event loop of ``list_schedule``: per dimension a queue by (rank, arrival), the chunks waiting
    for SRAM by (rank, arrival), and events (time, seq, kind, k, c), kind 0 a release, 1 a phase's end."""

    def __init__(self, fs: FlowShop, priority: list[int]) -> None:
        self.fs, self.m = fs, fs.chunks
        K = len(fs.dims)
        self.rank = {k: i for i, k in enumerate(priority)}
        self.events: list[tuple[float, int, int, int, int]] = [(fs.base.release[k], k, 0, k, -1) for k in range(K)]
        self.seq = K
        heapq.heapify(self.events)
        self.queues: list[list] = [[] for _ in range(fs.ndims)]
        self.busy = [False] * fs.ndims
        self.phase: dict[tuple[int, int], int] = {}   # (k, c) -> phase index in progress or queued
        self.left = [self.m] * K
        self.done = np.full(K, -np.inf)
        self.sram_free = fs.sram if math.isfinite(fs.sram) else math.inf
        self.admit: list = []                          # (rank, arrival, k, c)
        self.arrivals = 0

    def enqueue(self, k: int, c: int) -> None:
        self.arrivals += 1
        heapq.heappush(self.queues[self.fs.dims[k][self.phase[(k, c)]]], (self.rank[k], self.arrivals, k, c))

    def admit_chunks(self) -> None:
        fs = self.fs
        while self.admit and fs.sram_hold[self.admit[0][2]] <= self.sram_free * (1 + 1e-12):
            _, _, k, c = heapq.heappop(self.admit)
            self.sram_free -= fs.sram_hold[k]
            self.phase[(k, c)] = 0
            self.enqueue(k, c)

    def start(self, now: float) -> None:
        for d in range(self.fs.ndims):
            if not self.busy[d] and self.queues[d]:
                _, _, k, c = heapq.heappop(self.queues[d])
                self.busy[d] = True
                self.seq += 1
                heapq.heappush(self.events, (now + self.fs.alone[k][self.phase[(k, c)]], self.seq, 1, k, c))

    def step(self, now: float, kind: int, k: int, c: int) -> None:
        fs = self.fs
        if kind == 0:                 # a release: its chunks queue for the SRAM
            if not fs.dims[k]:
                self.done[k] = now
                return
            for cc in range(self.m):
                self.arrivals += 1
                heapq.heappush(self.admit, (self.rank[k], self.arrivals, k, cc))
            self.admit_chunks()
            return
        self.busy[fs.dims[k][self.phase[(k, c)]]] = False   # a chunk-phase ends
        self.phase[(k, c)] += 1
        if self.phase[(k, c)] < len(fs.dims[k]):
            self.enqueue(k, c)
            return
        self.sram_free += fs.sram_hold[k]
        self.left[k] -= 1
        if self.left[k] == 0:
            self.done[k] = now
        self.admit_chunks()

    def period(self) -> float:
        events = self.events
        while events:
            now, _, kind, k, c = heapq.heappop(events)
            batch = [(kind, k, c)]
            # everything that ends at this instant ends before anything starts (as the replay's tick does)
            while events and events[0][0] <= now + 1e-9:
                batch.append(heapq.heappop(events)[2:])
            for kind, k, c in batch:
                self.step(now, kind, k, c)
            self.start(now)
        return self.fs.base.period(float(np.max(self.done - self.fs.base.due)) if len(self.fs.dims) else -np.inf)


def list_schedule(fs: FlowShop, priority: list[int]) -> float:
    """The flow shop's period (us) under ``priority`` (collectives, highest first): each dimension
    serves, whenever it frees, the waiting chunk-phase of highest priority (then earliest arrival); a
    chunk enters when the SRAM has room (in priority order); every chunk-phase takes its alone time."""
    return _ListSchedule(fs, priority).period()


def refine_priority(fs: FlowShop, starts: list[list[int]], budget_s: float, seed: int = 0) -> tuple[list[int], float]:
    """The best of ``starts`` (priority orders) improved by insertion moves under ``list_schedule`` until
    no move helps or ``budget_s`` runs out: (priority, period in us). A heuristic: its gap to
    ``bound_terms`` is what is proven."""
    import random
    import time
    best = min((list(s) for s in starts), key=lambda s: list_schedule(fs, s))
    val = list_schedule(fs, best)
    K = len(best)
    rnd = random.Random(seed)
    t_end = time.perf_counter() + budget_s
    moves = [(i, j) for i in range(K) for j in range(K) if i != j]
    improved = True
    while improved and time.perf_counter() < t_end:
        improved = False
        rnd.shuffle(moves)
        for i, j in moves:
            cand = best[:i] + best[i + 1:]
            cand.insert(j, best[i])
            v = list_schedule(fs, cand)
            if v < val - 1e-9 * max(1.0, val):
                best, val, improved = cand, v, True
                break
            if time.perf_counter() > t_end:
                break
    return best, val
