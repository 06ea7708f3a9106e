"""Frozen reference: codesign's chunk replay as of commit 7020241 (before the speed work on branch ``replay``).

A verbatim copy of ``codesign/sim/events.py`` (EventLoop), the parts of ``codesign/platform/pools.py`` the
replay uses, and ``codesign/sim/replay.py``, with only the imports changed. tests/test_replay_equivalence.py
compares ``codesign.sim.replay.simulate`` against ``simulate`` here field by field: the fast replay must
give exactly what this one does. Do not edit (other than imports): it is the specification by example.
The cost functions it shares with the package (collectives, costs, endpoint, iteration) are not copied:
both replays read the same ones.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from heapq import heappop, heappush
from typing import Any

from codesign.platform.collectives import phases
from codesign.platform.costs import CollectiveDemands, collective_demands, compute_time_terms
from codesign.platform.endpoint import NPU, Design, Engine
from codesign.problem.model import Problem
from codesign.schedule.iteration import Order, build_iteration
from codesign.workload.model import Compute


# ---------------------------------------------------------------- codesign/sim/events.py

class EventLoop:
    """Heap-based event loop.

    ``schedule(t, fn, arg)`` queues ``fn(arg)`` to run at absolute time ``t`` (never earlier than the
    current time); ``run()`` processes events in (time, sequence) order until the heap is empty or
    ``until`` is passed. ``now`` is the time of the event being processed; ``events`` counts the events
    processed so far.
    """

    __slots__ = ("now", "events", "_heap", "_seq")

    def __init__(self) -> None:
        self.now: float = 0
        self.events: int = 0
        self._heap: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self._seq: int = 0

    def schedule(self, t: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Run ``fn(arg)`` at absolute time ``t``; ``t`` below ``now`` is an error in the caller."""
        if t < self.now:
            raise ValueError(f"event scheduled in the past: t={t} < now={self.now}")
        seq = self._seq + 1
        self._seq = seq
        heappush(self._heap, (t, seq, fn, arg))

    def schedule_after(self, delay: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Run ``fn(arg)`` ``delay`` time units after ``now``."""
        self.schedule(self.now + delay, fn, arg)

    def pending(self) -> int:
        """Number of events still queued."""
        return len(self._heap)

    def run(self, until: float | None = None) -> int:
        """Process events in time order; return the number processed by this call.

        With ``until`` the loop stops before the first event later than ``until`` (that event stays
        queued), which lets a caller advance the clock in slices.
        """
        heap = self._heap
        pop = heappop
        # count without touching a counter per event: processed = queued at start + pushed - left
        seq0, queued0 = self._seq, len(heap)
        try:
            if until is None:
                while heap:
                    t, _, fn, arg = pop(heap)
                    self.now = t
                    fn(arg)
            else:
                while heap and heap[0][0] <= until:
                    t, _, fn, arg = pop(heap)
                    self.now = t
                    fn(arg)
        finally:
            done = queued0 + self._seq - seq0 - len(heap)
            self.events += done
        return done


# ---------------------------------------------------------------- codesign/platform/pools.py

INF = float("inf")


def sram_need(chunk_bytes: float, sram_bytes: float) -> float:
    """SRAM a chunk holds while in flight: itself, or all of the SRAM for a chunk larger than it, which
    streams through and so waits for the SRAM to be empty. (Cutting such chunks smaller instead would
    make a bigger SRAM mean fewer chunks and less pipelining: slower, which no engine would choose.)"""
    return min(chunk_bytes, sram_bytes)


@dataclass(frozen=True)
class Pools:
    """Capacities under a design: memory (bytes/s), reduction (bytes/s), SRAM (bytes), comm cores."""

    memory: float
    reduction: float
    sram: float
    comm_cores: float
    hbm: float

    @classmethod
    def of(cls, engine: Engine, npu: NPU, design: Design) -> Pools:
        r = endpoint_rates(engine, npu, design)
        if engine.kind == "baseline":
            return cls(r["hbm"], r["cores"], INF, design.get("comm_cores"), npu.hbm_bandwidth)
        if engine.kind == "ace":
            return cls(r["dma"], r["alu"], r["sram"], 0.0, npu.hbm_bandwidth)
        return cls(INF, INF, INF, 0.0, npu.hbm_bandwidth)


def endpoint_rates(engine: Engine, npu: NPU, design: Design) -> dict[str, float]:
    # (frozen with the rest: the engine rates as costs.py gave them before the engine registry)
    if engine.kind == "baseline":
        return {"hbm": design.get("comm_hbm_share") * npu.hbm_bandwidth,
                "cores": design.get("comm_cores") * npu.core_reduce_rate}
    if engine.kind == "ace":
        return {"alu": design.get("alu"), "dma": design.get("dma"), "sram": design.get("sram")}
    return {}


@dataclass(frozen=True)
class PhaseWork:
    """What one chunk-phase asks: seconds on its dimension's links, memory bytes, reduction bytes."""

    dim: int
    link_s: float
    memory_bytes: float
    reduce_bytes: float
    wire_bytes: float


def phase_work(dem: CollectiveDemands, i: int, engine: Engine, wire_bytes: float) -> PhaseWork:
    # (frozen: the demands CollectiveDemands carried before the engine registry, computed the same way)
    kind = engine.kind
    last = len(dem.phase_dims) - 1
    if kind == "baseline":
        mem = engine.hbm_per_reduce_byte * dem.phase_reduce_bytes[i] + engine.hbm_per_copy_byte * dem.phase_copy_bytes[i]
    elif kind == "ace":
        mem = (dem.in_bytes if i == 0 else 0.0) + (dem.out_bytes if i == last else 0.0)
    else:
        mem = 0.0
    red = dem.phase_reduce_bytes[i] if kind != "ideal" else 0.0
    return PhaseWork(dem.phase_dims[i], dem.phase_link_s[i], mem, red, wire_bytes)


def water_fill(capacity: float, demands: list[float]) -> list[float]:
    """Max-min fair shares of ``capacity`` for ``demands`` (same unit): nobody gets more than it asks,
    and what the modest leave is split among the rest."""
    out = [0.0] * len(demands)
    left, users = capacity, len(demands)
    for i in sorted(range(len(demands)), key=demands.__getitem__):
        share = left / users
        out[i] = min(demands[i], share)
        left -= out[i]
        users -= 1
    return out


def alone_rate(w: PhaseWork, pools: Pools) -> float:
    """Progress rate of a chunk-phase with the endpoint to itself: the MILP's ``phase_time`` inverted."""
    r = 1.0 / w.link_s if w.link_s > 0 else INF
    if w.memory_bytes > 0:
        r = min(r, pools.memory / w.memory_bytes)
    if w.reduce_bytes > 0:
        r = min(r, pools.reduction / w.reduce_bytes)
    return r


def oversubscribed(active: list[PhaseWork], pools: Pools) -> tuple[bool, bool]:
    """Whether the memory pool, and whether the reduction pool, cannot serve every active chunk-phase at
    its link's pace. When neither is, every phase runs at its link's pace, and a larger pool would change
    nothing: the design search uses this to know a replay holds for larger options too."""
    mem = red = 0.0
    for w in active:
        link = 1.0 / w.link_s if w.link_s > 0 else INF
        mem += w.memory_bytes * link if w.memory_bytes > 0 else 0.0
        red += w.reduce_bytes * link if w.reduce_bytes > 0 else 0.0
    return mem > pools.memory, red > pools.reduction


def phase_rates(active: list[PhaseWork], pools: Pools) -> list[float]:
    """Progress rate (fraction of the phase per second) of each active chunk-phase.

    Each phase is capped by its link; the memory and reduction pools are water-filled against what
    each phase could use given its other limits, alternating until the two agree (a few rounds for the
    handful of phases a network has active at once)."""
    n = len(active)
    if n == 1:
        return [alone_rate(active[0], pools)]
    link = [1.0 / w.link_s if w.link_s > 0 else INF for w in active]
    if not any(oversubscribed(active, pools)):
        return link  # no pool is oversubscribed: every phase runs at its link's pace
    lim_mem = [INF] * n
    lim_red = [INF] * n
    rates = link
    for _ in range(4):
        want = [w.memory_bytes * min(link[i], lim_red[i]) for i, w in enumerate(active)]
        got = water_fill(pools.memory, want)
        lim_mem = [got[i] / w.memory_bytes if w.memory_bytes > 0 else INF for i, w in enumerate(active)]
        want = [w.reduce_bytes * min(link[i], lim_mem[i]) for i, w in enumerate(active)]
        got = water_fill(pools.reduction, want)
        lim_red = [got[i] / w.reduce_bytes if w.reduce_bytes > 0 else INF for i, w in enumerate(active)]
        new = [min(link[i], lim_mem[i], lim_red[i]) for i in range(n)]
        if new == rates:
            break
        rates = new
    return rates


def compute_rate(task: Compute, npu: NPU, pools: Pools, comm_busy: bool, comm_memory_rate: float,
                 engine_kind: str) -> float:
    """Progress rate (fraction of the task per second) of a compute task given communication's use now.

    Communication's memory traffic counts against HBM on both engines (ACE's DMA reads and writes HBM)."""
    cores_left = npu.cores - (pools.comm_cores if comm_busy else 0.0)
    hbm_left = max(npu.hbm_bandwidth - comm_memory_rate, 1e-9 * npu.hbm_bandwidth)
    t = max(compute_time_terms(task, npu, cores_left, hbm_left))
    return 1.0 / t if t > 0 else INF


# ---------------------------------------------------------------- codesign/sim/replay.py

INF = float("inf")
EPS = 1e-12


@dataclass
class Realized:
    """What a replay did in its reference iteration (the first of the two it measures), in seconds from
    the replay's start. Keys: chunk-phase (k, c, i) = phase i of chunk c of collective k; chunk (k, c).

    ``dim_pred[(k, c, i)]``: the chunk-phase its dimension served just before it, as (k', c', i', off)
    with off the iteration of that chunk-phase minus this one's (0 or negative), or None for the first;
    ``admit_after[(k, c)]``: the chunk whose departure from the SRAM let it in, (k', c', off), or None if
    it entered when released; ``compute_start``/``compute_end`` per compute task."""

    iteration: int
    phase_start: dict[tuple[int, int, int], float]
    phase_end: dict[tuple[int, int, int], float]
    dim_pred: dict[tuple[int, int, int], tuple[int, int, int, int] | None]
    admitted: dict[tuple[int, int], float]
    admit_after: dict[tuple[int, int], tuple[int, int, int] | None]
    compute_start: list[float]
    compute_end: list[float]


@dataclass
class SimResult:
    """Steady state of a replay. Times in s, bytes in bytes; utilizations are busy fractions of the period."""

    period_s: float
    compute_time_s: float          # compute per iteration as simulated (stretched by contention)
    nominal_compute_s: float       # the same tasks alone on the NPU
    exposed_comm_s: float
    utilization: dict[str, float]
    sram_peak_bytes: float
    sram_wait_s: float             # mean time a chunk waits for SRAM room
    dim_stretch: dict[str, float]  # per dimension: busy time / the same chunk-phases each alone on the endpoint
    hbm_peak_bytes_per_s: float
    iterations: int
    events: int
    chunks_per_collective: list[int]
    bytes_sent: dict[int, float]   # per collective, wire bytes per NPU in one steady-state iteration
    bytes_expected: dict[int, float]
    timeline: list[tuple[str, str, str, float, float]] = field(default_factory=list)  # row, name, kind, start, end
    window_s: tuple[float, float] = (0.0, 0.0)
    #: per pool (``memory``, ``reduction``, ``sram``): whether its capacity ever held anything back: a
    #: phase slower than its link allows, or a chunk waiting for SRAM room. A pool that never did could
    #: be larger without changing anything in this replay.
    limited: dict[str, bool] = field(default_factory=dict)
    realized: Realized | None = None


class _Replay:
    def __init__(self, problem: Problem, design: Design, order: Order | None, iterations: int,
                 record: bool = False, policy: str | None = None) -> None:
        self.p, self.design = problem, design
        # dispatch by issue order when no order is given: the problem's policy, LIFO for order: optimize
        self.lifo = (policy or (problem.schedule.order if problem.schedule.order in ("lifo", "fifo") else "lifo")) == "lifo"
        self.limited = {"memory": False, "reduction": False, "sram": False}
        self.record = record
        self.ref = iterations - 3  # the reference iteration: the first of the two measured
        # (recording) the last chunk-phase each dimension started, and the chunk leaving the SRAM now
        self.last_on_dim: list[tuple[int, int, int, int] | None] = [None] * len(problem.topology.dims)
        self.leaving: tuple[int, int, int] | None = None
        self.rec: dict[str, dict] = {"start": {}, "end": {}, "pred": {}, "admitted": {}, "after": {},
                                     "cstart": {}, "cend": {}}
        self.it = build_iteration(problem.workload, problem.schedule.overlap)
        self.pools = Pools.of(problem.engine, problem.npu, design)
        self.kind = problem.engine.kind
        self.max_iter = iterations
        self.eng = EventLoop()
        self.order_pos = None
        if order is not None:
            self.order_pos = {k: (pos, off) for pos, (k, off) in enumerate(order)}
        self._prepare_collectives()
        self.waits: dict[int, list[tuple[int, int, float]]] = {}
        self.releases: dict[int, list[int]] = {}
        for c in self.it.comms:
            self.waits.setdefault(c.wait_before, []).append((c.index, 1 if c.next_iteration else 0, c.delay_s))
            self.releases.setdefault(c.issue_after, []).append(c.index)
        D = len(problem.topology.dims)
        self.queues: list[list] = [[] for _ in range(D)]
        self.dim_busy = [False] * D
        self.active: dict[int, list] = {}    # id -> [PhaseWork, remaining, rate, chunk]
        self.compute: list | None = None     # [task index, iteration, remaining, rate]
        self.next_id = 0
        self.arrivals = 0
        self.issue_seq = 0
        self.version = 0
        self.last = 0.0
        self.n, self.j = 0, 0
        self.done: dict[tuple[int, int], float] = {}
        self.chunks_left: dict[tuple[int, int], int] = {}
        self.sent: dict[tuple[int, int], float] = {}
        self.sram_free = self.pools.sram
        self.sram_queue: list = []
        self.iter_start: list[float] = []
        self.snaps: list[dict[str, float]] = []
        self.acc = {"compute": 0.0, "nominal": 0.0, "comm_any": 0.0, "hbm_comm": 0.0, "hbm_compute": 0.0,
                    "reduce": 0.0, "sram": 0.0, "sram_wait": 0.0, **{f"dim{d}": 0.0 for d in range(D)},
                    **{f"alone{d}": 0.0 for d in range(D)}}
        self.sram_peak = 0.0
        self.hbm_peak = 0.0
        self.timeline: list[tuple[str, str, str, float, float]] = []
        self.compute_started = 0.0

    # ------------------------------------------------------------------ set-up
    def _prepare_collectives(self) -> None:
        self.works: list[list[PhaseWork]] = []
        self.nchunks: list[int] = []
        self.chunk_bytes: list[float] = []
        self.expected: dict[int, float] = {}
        for c in self.it.comms:
            k = self.p.schedule.chunks
            dem = collective_demands(c.comm, self.p.topology, self.p.engine, k)
            wires = [ph.wire_bytes for ph in phases(c.comm, self.p.topology, dem.chunk_bytes)]
            self.works.append([phase_work(dem, i, self.p.engine, wires[i]) for i in range(len(wires))])
            self.nchunks.append(k)
            self.chunk_bytes.append(dem.chunk_bytes)
            self.expected[c.index] = sum(ph.wire_bytes for ph in phases(c.comm, self.p.topology))

    # ------------------------------------------------------------------ fluid bookkeeping
    def _advance(self) -> None:
        now = self.eng.now
        dt = now - self.last
        if dt <= 0:
            return
        acc = self.acc
        mem_rate = 0.0
        red_rate = 0.0
        for item in self.active.values():
            w, rate = item[0], item[2]
            item[1] -= rate * dt
            mem_rate += w.memory_bytes * rate
            red_rate += w.reduce_bytes * rate
            acc[f"dim{w.dim}"] += dt
        if self.active:
            acc["comm_any"] += dt
        acc["hbm_comm"] += mem_rate * dt
        acc["reduce"] += red_rate * dt
        if self.compute is not None:
            j, _, _, rate = self.compute
            self.compute[2] -= rate * dt
            acc["compute"] += dt
            task = self.it.computes[j].demand
            acc["hbm_compute"] += self._compute_hbm_rate(task, rate) * dt
        acc["sram"] += (self.pools.sram - self.sram_free) * dt if math.isfinite(self.pools.sram) else 0.0
        acc["sram_wait"] += len(self.sram_queue) * dt
        self.last = now

    def _compute_hbm_rate(self, task, rate: float) -> float:
        """HBM bytes/s a compute task draws at progress rate ``rate`` (fraction per second)."""
        npu = self.p.npu
        if task.time_s is not None:
            return task.time_s * npu.compute_hbm_utilization * npu.hbm_bandwidth * rate
        return (task.hbm_bytes or 0.0) * rate

    def _recompute(self) -> None:
        items = list(self.active.values())
        works = [it[0] for it in items]
        rates = phase_rates(works, self.pools)
        if works:
            mem_over, red_over = oversubscribed(works, self.pools)
            self.limited["memory"] |= mem_over
            self.limited["reduction"] |= red_over
        mem = 0.0
        for it, r in zip(items, rates):
            it[2] = r
            mem += it[0].memory_bytes * r
        nxt = INF
        for it in items:
            nxt = min(nxt, max(it[1], 0.0) / it[2] if it[2] > 0 else INF)
        if self.compute is not None:
            task = self.it.computes[self.compute[0]].demand
            r = compute_rate(task, self.p.npu, self.pools, bool(self.active), mem, self.kind)
            self.compute[3] = r
            nxt = min(nxt, max(self.compute[2], 0.0) / r if r > 0 else INF)
            mem += self._compute_hbm_rate(task, r)
        self.hbm_peak = max(self.hbm_peak, mem)
        self.version += 1
        if nxt < INF:
            self.eng.schedule(self.eng.now + nxt, self._tick, self.version)

    def _tick(self, version: int) -> None:
        if version != self.version:
            return
        self._advance()
        # finished: what is left would take less time than the clock can resolve at this magnitude
        # (otherwise a remainder below the float spacing of ``now`` never shrinks and the replay spins)
        tol = 1e-15 + 4e-16 * self.eng.now
        finished = [i for i, it in self.active.items() if it[1] <= 1e-9 or it[1] <= tol * it[2]]
        for i in finished:
            self._phase_done(i)
        if self.compute is not None and (self.compute[2] <= 1e-9 or self.compute[2] <= tol * self.compute[3]):
            self._compute_done()
        self._start_phases()
        self._recompute()

    # ------------------------------------------------------------------ network
    def _priority(self, k: int, n: int) -> tuple:
        urgent = 0 if self.it.comms[k].urgent else 1
        if self.order_pos is not None:
            pos, off = self.order_pos[k]
            return (urgent, (n - off) * len(self.it.comms) + pos)
        self.issue_seq += 1
        return (urgent, -self.issue_seq if self.lifo else self.issue_seq)

    def _release(self, k: int, n: int) -> None:
        key = (k, n)
        works = self.works[k]
        if not works:
            self._collective_done(key)
            return
        prio = self._priority(k, n)
        self.chunks_left[key] = self.nchunks[k]
        self.sent[key] = 0.0
        for c in range(self.nchunks[k]):
            chunk = [key, 0, prio, c]
            if math.isfinite(self.pools.sram):
                self.arrivals += 1
                heappush(self.sram_queue, (prio, self.arrivals, chunk))
            else:
                if self.record:
                    self.rec["admitted"][(k, n, c)] = self.eng.now
                    self.rec["after"][(k, n, c)] = None
                self._enqueue(chunk)
        self._admit()

    def _admit(self) -> None:
        while self.sram_queue:
            chunk = self.sram_queue[0][2]
            need = sram_need(self.chunk_bytes[chunk[0][0]], self.pools.sram)
            if need > self.sram_free * (1 + 1e-12):
                self.limited["sram"] = True
                return
            heappop(self.sram_queue)
            if self.record:
                (k, n), c = chunk[0], chunk[3]
                self.rec["admitted"][(k, n, c)] = self.eng.now
                self.rec["after"][(k, n, c)] = self.leaving
            self.sram_free -= need
            self.sram_peak = max(self.sram_peak, self.pools.sram - self.sram_free)
            self._enqueue(chunk)

    def _enqueue(self, chunk: list) -> None:
        w = self.works[chunk[0][0]][chunk[1]]
        self.arrivals += 1
        heappush(self.queues[w.dim], (chunk[2], self.arrivals, chunk))

    def _start_phases(self) -> None:
        for d, q in enumerate(self.queues):
            if not self.dim_busy[d] and q:
                chunk = heappop(q)[2]
                self.dim_busy[d] = True
                self.next_id += 1
                w = self.works[chunk[0][0]][chunk[1]]
                self.active[self.next_id] = [w, 1.0, 0.0, chunk, self.eng.now]
                if self.record:
                    x = (chunk[0][0], chunk[0][1], chunk[3], chunk[1])  # k, n, c, i
                    self.rec["start"][x] = self.eng.now
                    self.rec["pred"][x] = self.last_on_dim[d]
                    self.last_on_dim[d] = x
                self.acc[f"alone{d}"] += 1.0 / alone_rate(w, self.pools)

    def _phase_done(self, i: int) -> None:
        w, _, _, chunk, start = self.active.pop(i)
        self.dim_busy[w.dim] = False
        key = chunk[0]
        if self.record:
            self.rec["end"][(key[0], key[1], chunk[3], chunk[1])] = self.eng.now
        self.sent[key] += w.wire_bytes
        if key[1] >= self.max_iter - 5:  # enough to cover the measured window, whichever iteration issued it
            self.timeline.append((f"dim{w.dim}", self.it.comms[key[0]].name, "comm", start, self.eng.now))
        chunk[1] += 1
        if chunk[1] < len(self.works[key[0]]):
            self._enqueue(chunk)
            return
        if math.isfinite(self.pools.sram):
            self.sram_free += sram_need(self.chunk_bytes[key[0]], self.pools.sram)
            self.leaving = (key[0], key[1], chunk[3])
            self._admit()
            self.leaving = None
        self.chunks_left[key] -= 1
        if self.chunks_left[key] == 0:
            self._collective_done(key)

    def _collective_done(self, key: tuple[int, int]) -> None:
        c = self.it.comms[key[0]]
        self.done[key] = self.eng.now + c.delay_s
        if c.delay_s > 0:
            self.eng.schedule(self.done[key], self._wake, None)
        else:
            self._try_compute()

    # ------------------------------------------------------------------ compute
    def _wake(self, _: object) -> None:
        self._advance()
        self._try_compute()
        self._start_phases()
        self._recompute()

    def _try_compute(self) -> None:
        if self.compute is not None or self.n >= self.max_iter:
            return
        n, j = self.n, self.j
        for k, back, _ in self.waits.get(j, ()):
            m = n - back
            if m < 0:
                continue
            ready = self.done.get((k, m))
            if ready is None or ready > self.eng.now + EPS:
                return  # a collective's completion or its wake-up will call back
        if j == 0:
            self.iter_start.append(self.eng.now)
            self.snaps.append(dict(self.acc))
        task = self.it.computes[j].demand
        self.compute = [j, n, 1.0, 0.0]
        self.compute_started = self.eng.now
        if self.record:
            self.rec["cstart"][(j, n)] = self.eng.now
        nominal = max(compute_time_terms(task, self.p.npu, self.p.npu.cores, self.p.npu.hbm_bandwidth))
        self.acc["nominal"] += nominal

    def _compute_done(self) -> None:
        j, n, _, _ = self.compute
        self.compute = None
        if self.record:
            self.rec["cend"][(j, n)] = self.eng.now
        if n >= self.max_iter - 4:
            c = self.it.computes[j]
            self.timeline.append(("compute", c.name, c.kind, self.compute_started, self.eng.now))
        for k in self.releases.get(j, ()):
            self._release(k, n)
        self.j += 1
        if self.j == len(self.it.computes):
            self.j, self.n = 0, self.n + 1
        self._try_compute()

    def run(self) -> SimResult:
        self._try_compute()
        self._start_phases()
        self._recompute()
        self.eng.run()
        if len(self.iter_start) < self.max_iter:
            raise RuntimeError("the replay stalled before its last iteration (a collective never completed)")
        return self._result()

    def _result(self) -> SimResult:
        a, b = self.max_iter - 3, self.max_iter - 1
        t_a, t_b = self.iter_start[a], self.iter_start[b]
        span = t_b - t_a
        iters = b - a
        s_a, s_b = self.snaps[a], self.snaps[b]
        per = {key: (s_b[key] - s_a[key]) for key in s_a}
        D = len(self.p.topology.dims)
        util = {"compute": per["compute"] / span if span else 0.0}
        for d in range(D):
            util[f"dim{d}:{self.p.topology.dims[d].name}"] = per[f"dim{d}"] / span if span else 0.0
        util["hbm_comm"] = per["hbm_comm"] / span / self.p.npu.hbm_bandwidth if span else 0.0
        util["hbm_compute"] = per["hbm_compute"] / span / self.p.npu.hbm_bandwidth if span else 0.0
        if self.kind != "ideal":
            util["reduction"] = per["reduce"] / span / self.pools.reduction if span else 0.0
            util["comm_memory"] = per["hbm_comm"] / span / self.pools.memory if span else 0.0
        if math.isfinite(self.pools.sram):
            util["sram"] = per["sram"] / span / self.pools.sram if span else 0.0
        stretch = {}
        for d in range(D):
            alone = per[f"alone{d}"]
            stretch[f"dim{d}:{self.p.topology.dims[d].name}"] = per[f"dim{d}"] / alone if alone > 0 else 1.0
        period = span / iters
        compute = per["compute"] / iters
        ref = self.max_iter - 3
        sent = {k: v for (k, n), v in self.sent.items() if n == ref}
        t_end = t_a + period
        timeline = [(r, nm, kd, max(s, t_a), min(e, t_end)) for r, nm, kd, s, e in self.timeline
                    if e > t_a and s < t_end]
        return SimResult(
            period_s=period, compute_time_s=compute, nominal_compute_s=per["nominal"] / iters,
            exposed_comm_s=max(0.0, period - compute), utilization=util, sram_peak_bytes=self.sram_peak,
            sram_wait_s=per["sram_wait"] / max(1, sum(self.nchunks)) / iters, dim_stretch=stretch, hbm_peak_bytes_per_s=self.hbm_peak, iterations=self.max_iter,
            events=self.eng.events, chunks_per_collective=list(self.nchunks), bytes_sent=sent,
            bytes_expected=dict(self.expected), timeline=[(r, nm, kd, s - t_a, e - t_a) for r, nm, kd, s, e in timeline],
            window_s=(t_a, t_b), limited=dict(self.limited), realized=self._realized() if self.record else None)

    def _realized(self) -> Realized:
        ref, rec = self.ref, self.rec

        def mine(d: dict) -> dict:
            return {(k, c, i): v for (k, n, c, i), v in d.items() if n == ref}

        pred = {}
        for (k, n, c, i), p in rec["pred"].items():
            if n == ref:
                pred[(k, c, i)] = None if p is None else (p[0], p[2], p[3], p[1] - ref)
        after = {}
        for (k, n, c), p in rec["after"].items():
            if n == ref:
                after[(k, c)] = None if p is None else (p[0], p[2], p[1] - ref)
        J = len(self.it.computes)
        return Realized(ref, mine(rec["start"]), mine(rec["end"]), pred,
                        {(k, c): v for (k, n, c), v in rec["admitted"].items() if n == ref}, after,
                        [rec["cstart"][(j, ref)] for j in range(J)], [rec["cend"][(j, ref)] for j in range(J)])


def simulate(problem: Problem, design: Design, *, order: Order | None = None, iterations: int = 8,
             record: bool = False, policy: str | None = None) -> SimResult:
    """Replay ``iterations`` training iterations of ``problem`` at ``design`` and report the steady state
    over the last two. ``order``: collectives as fixed dispatch priorities, highest first; None: dispatch
    by ``policy`` (lifo | fifo; default the problem's, LIFO for order: optimize). ``record``: also return
    what the reference iteration did (``SimResult.realized``)."""
    if iterations < 4:
        raise ValueError("simulate needs at least 4 iterations to measure a steady state")
    if policy not in (None, "lifo", "fifo"):
        raise ValueError(f"unknown policy {policy!r}")
    return _Replay(problem, design, order, iterations, record, policy).run()
