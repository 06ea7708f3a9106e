"""Chunk-grain replay of training iterations for a design: codesign's own simulator.

Compute runs in program order on one server, waiting where the iteration says (schedule/iteration.py). Each
released collective is cut into the schedule's chunks; every chunk walks its
phases, each phase queued at its dimension, which serves one chunk-phase at a time in order of
urgency, then priority (the policy's, or the solution's network order), then arrival, like ASTRA-sim
1.0's queues. Unlike the MILP, collectives on different dimensions run at the same time, endpoint
resources are shared among the chunk-phases active at once, compute slows while communication holds
cores or HBM bandwidth, and ACE admits a chunk only when its SRAM has room. Times in seconds.

Between events every rate is constant, so the replay advances by exact piecewise-linear progress: each
change to the set of active work recomputes the rates and schedules the next completion. The loop is
written for speed (the design search replays every design it evaluates; see ``_Replay``) and answers
bit for bit what the straightforward one did (tests/test_replay_equivalence.py).
"""
from __future__ import annotations

import math
import os
from collections import deque
from dataclasses import dataclass, field
from heapq import heappop, heappush

from ..platform.collectives import phases
from ..platform.costs import collective_demands, compute_hbm_bytes, compute_time_terms
from ..platform.endpoint import Design
from ..platform.pools import (
    PhaseWork,
    Pools,
    alone_rate,
    compute_rate,
    oversubscribed,
    phase_rates,
    phase_work,
    sram_need,
)
from ..problem.model import Problem
from ..schedule.iteration import Order, build_iteration

KERNEL_ABI = 2  # _kernel.c's ABI: the argument list _run_compiled passes
try:
    from . import _kernel  # the event loop compiled (setup.py builds it where a C compiler is found)
except ImportError:  # pragma: no cover - the install had no compiler: the Python loop answers the same
    _kernel = None
if getattr(_kernel, "ABI", None) != KERNEL_ABI:  # built from another version of _kernel.c: rerun pip install
    _kernel = None

INF = float("inf")
EPS = 1e-12
LIMIT = 1 << 62  # the compiled loop keeps priorities and rate-memo keys in 64-bit integers

#: whether replays run the compiled event loop; both loops answer bit for bit the same. Set
#: CODESIGN_REPLAY=python to run the Python one (benchmarks/sim_replay.py compares the two).
COMPILED = _kernel is not None and os.environ.get("CODESIGN_REPLAY", "") != "python"


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


def _compute_hbm_rate(task, npu, rate: float) -> float:
    """HBM bytes/s a compute task draws at progress rate ``rate`` (fraction per second)."""
    return compute_hbm_bytes(task, npu) * rate


def _compute_draw(task, npu, pools: Pools, comm_busy: bool, comm_memory_rate: float) -> tuple[float, float]:
    """A compute task's progress rate (``pools.compute_rate``) while communication is busy or not and draws
    ``comm_memory_rate`` bytes/s of HBM, and the HBM bytes/s the task itself draws at that rate."""
    r = compute_rate(task, npu, pools, comm_busy, comm_memory_rate)
    return r, _compute_hbm_rate(task, npu, r)


def _active_rates(ws: list[PhaseWork], pools: Pools) -> tuple[tuple[float, ...], float, float, bool, bool]:
    """For a sequence of active chunk-phases (in start order): their rates (``pools.phase_rates``), the
    memory and reduction traffic they draw at those rates (bytes/s, summed in that order, as the reference
    summed them), and whether the memory pool and the reduction pool are oversubscribed."""
    mem_over, red_over = oversubscribed(ws, pools) if ws else (False, False)
    rates = phase_rates(ws, pools, (mem_over, red_over))
    mem = 0.0
    red = 0.0
    for w, r in zip(ws, rates):
        mem += w.memory_bytes * r
    for w, r in zip(ws, rates):
        red += w.reduce_bytes * r
    return tuple(rates), mem, red, mem_over, red_over


class _Replay:
    """One replay. The set-up turns the problem into flat tables (per collective its phases as work ids,
    per work its dimension, wire bytes and alone time); ``run`` is the event loop, one function whose
    state is local variables (what CPython reads fastest).

    It answers exactly what the straightforward replay did (the frozen copy in tests/reference_replay.py,
    compared field by field, bit for bit): every floating-point operation that reaches an output is the
    same operation on the same operands in the same order. What it saves is the rest:
    - a dimension serves one chunk-phase at a time, so the active set is at most one phase per dimension,
      kept in start order (the order the rates are computed in);
    - the rates of an active set depend only on the (link time, memory bytes, reduction bytes) of its
      phases, in order, and on the pools: they are computed once per distinct sequence, by
      ``pools.phase_rates`` itself, with the traffic they draw and whether a pool is oversubscribed, and
      the compute rate once per sequence and compute task (ResNet-50: 362 sequences in 10760 events;
      the 500-layer problem: 466 in 131920);
    - a rate change supersedes the pending completion, so instead of queueing completions that would be
      discarded the loop keeps the one pending completion and counts the superseded ones as events (the
      event core processed them, by doing nothing); only the wake-ups after a collective's delay need a
      heap. Ties keep the core's (time, sequence) order;
    - a queue (a dimension's, the SRAM's) is a heap of the priorities present, each with a FIFO of its
      chunks: chunks of one priority arrive in order, so (priority, arrival) order is kept with heap
      operations only when a priority appears or empties; priorities are one integer;
    - only a dimension that turned idle, or was given work while idle, is offered work;
    - nothing is formatted per event, and the timeline keeps only what the measured window can show.
    """

    def __init__(self, problem: Problem, design: Design, order: Order | None, iterations: int,
                 record: bool = False, policy: str | None = None) -> None:
        self.p, self.design = problem, design
        # dispatch by issue order when no order is given: the problem's policy, LIFO for order: optimize
        own = problem.schedule.order
        self.lifo = (policy or (own if own in ("lifo", "fifo") else "lifo")) == "lifo"
        self.record = record
        self.compiled = COMPILED
        # whether the compiled loop ran: then ``timeline`` is already clipped to the measured window and ``rec``
        # already the reference iteration's, keyed as Realized keys it
        self.from_kernel = False
        self.ref = iterations - 3  # the reference iteration: the first of the two measured
        self.it = build_iteration(problem.workload, problem.schedule.overlap)
        self.pools = Pools.of(problem.engine, problem.npu, design)
        self.max_iter = iterations
        self.order_pos = None
        if order is not None:
            self.order_pos = {k: (pos, off) for pos, (k, off) in enumerate(order)}
        self._prepare_collectives()

    # ------------------------------------------------------------------ set-up
    def _prepare_collectives(self) -> None:
        """Per collective its phases' PhaseWorks (computed once for all collectives of the same size, kind
        and span), its chunks and chunk bytes, and the bytes it should put on the wire."""
        p = self.p
        k = p.schedule.chunks
        by_comm: dict = {}
        self.works: list[list[PhaseWork]] = []
        self.nchunks: list[int] = []
        self.chunk_bytes: list[float] = []
        self.expected: dict[int, float] = {}
        for c in self.it.comms:
            got = by_comm.get(c.comm)
            if got is None:
                dem = collective_demands(c.comm, p.topology, p.engine, k)
                wires = [ph.wire_bytes for ph in phases(c.comm, p.topology, dem.chunk_bytes)]
                got = by_comm[c.comm] = ([phase_work(dem, i, self.p.engine, wires[i]) for i in range(len(wires))],
                                         dem.chunk_bytes, sum(ph.wire_bytes for ph in phases(c.comm, p.topology)))
            self.works.append(got[0])
            self.nchunks.append(k)
            self.chunk_bytes.append(got[1])
            self.expected[c.index] = got[2]

    # ------------------------------------------------------------------ the event loop
    def run(self) -> SimResult:  # noqa: C901 (one function on purpose: locals are what make it fast)
        p, it, pools, record = self.p, self.it, self.pools, self.record
        npu = p.npu
        D = len(p.topology.dims)
        K = len(it.comms)
        max_iter = self.max_iter
        computes = it.computes
        J = len(computes)

        # --- works: an id per distinct PhaseWork, a rate class per distinct (link, memory, reduction)
        wid_of: dict[PhaseWork, int] = {}
        w_dim: list[int] = []
        w_wire: list[float] = []
        w_inv_alone: list[float] = []
        w_cls: list[int] = []
        cls_of: dict[tuple[float, float, float], int] = {}
        cls_rep: list[PhaseWork] = []
        seqw: list[list[int]] = []  # per collective, its phases' work ids
        for ws in self.works:
            ids = []
            for w in ws:
                wid = wid_of.get(w)
                if wid is None:
                    wid = wid_of[w] = len(w_dim)
                    w_dim.append(w.dim)
                    w_wire.append(w.wire_bytes)
                    w_inv_alone.append(1.0 / alone_rate(w, pools))
                    ck = (w.link_s, w.memory_bytes, w.reduce_bytes)
                    cl = cls_of.get(ck)
                    if cl is None:
                        cl = cls_of[ck] = len(cls_rep)
                        cls_rep.append(w)
                    w_cls.append(cl)
                ids.append(wid)
            seqw.append(ids)
        nph = [len(s) for s in seqw]
        seqd = [[w_dim[x] for x in s] for s in seqw]  # per collective, its phases' dimensions

        # --- compute tasks: a class per distinct demand (the rate memo's key), their time alone
        tc_of: dict = {}
        task_cls: list[int] = []
        tc_task: list = []
        nominal_of: list[float] = []
        for ct in computes:
            tc = tc_of.get(ct.demand)
            if tc is None:
                tc = tc_of[ct.demand] = len(tc_task)
                tc_task.append(ct.demand)
            task_cls.append(tc)
            nominal_of.append(max(compute_time_terms(ct.demand, npu, npu.cores, npu.hbm_bandwidth)))
        waits: list[list[tuple[int, int]]] = [[] for _ in range(J)]
        releases: list[list[int]] = [[] for _ in range(J)]
        for c in it.comms:
            waits[c.wait_before].append((c.index, 1 if c.next_iteration else 0))
            releases[c.issue_after].append(c.index)
        delay = [c.delay_s for c in it.comms]
        comm_name = [c.name for c in it.comms]
        urgent = [c.urgent for c in it.comms]
        nchunks = self.nchunks
        dim_row = [f"dim{d}" for d in range(D)]
        cnames = [(c.name, c.kind) for c in computes]

        # --- priorities: (urgency, rank) as one integer u * BIG + rank, urgent first (a tuple if an order's
        # offsets are not integers). A queue serves the least priority, then the earliest arrival: each
        # queue is a heap of the priorities present and per priority a FIFO of its chunks, in arrival order
        order_pos = self.order_pos
        lifo = self.lifo
        BIG = 1 << 40
        int_prio = True
        if order_pos is not None:
            offs = [off for _, off in order_pos.values()]
            int_prio = all(isinstance(o, int) for o in offs)
            BIG = max(BIG, 4 * ((max_iter + 2 + max((abs(o) for o in offs), default=0)) * (K + 1) + len(order_pos)))

        S = pools.sram
        sram_finite = math.isfinite(S)
        need = [sram_need(b, S) for b in self.chunk_bytes] if sram_finite else []
        if self.compiled and self._compilable(int_prio, BIG, K, D, len(cls_rep)):
            return self._run_compiled(seqw, w_dim, w_cls, w_wire, w_inv_alone, cls_rep, urgent, delay, need, BIG,
                                      task_cls, tc_task, nominal_of, waits, releases, comm_name, cnames, dim_row)
        free = S
        sq_heap: list = []               # the SRAM's queue: priorities present
        sq_fifo: dict = {}               # priority -> chunks waiting for room, in arrival order
        nsq = 0                          # chunks waiting for room
        sram_peak = 0.0
        leaving = None

        # --- dimensions: the active chunk-phase of each (its work id, or -1 when idle)
        slot_w = [-1] * D
        slot_chunk: list = [None] * D
        slot_start = [0.0] * D
        rem = [0.0] * D
        order: list[int] = []  # active dimensions in the order their phases started (the rates' order)
        ocls: list[int] = []   # their rate classes: the memo's key
        q_heap: list[list] = [[] for _ in range(D)]
        q_fifo: list[dict] = [{} for _ in range(D)]
        # dimensions that may start a phase: those that turned idle or were given a chunk-phase while idle
        # since the last start (every other idle one has an empty queue)
        poke: list[int] = list(range(D))

        # --- rates, once per active sequence: (rates, memory rate, reduction rate, {task class: (rate, hbm)})
        memo: dict[tuple[int, ...], tuple] = {}
        lim_mem = lim_red = lim_sram = False
        hbm_peak = 0.0

        # --- accumulators (the reference's ``acc``)
        a_compute = a_nominal = a_comm_any = a_hbm_comm = a_hbm_compute = a_reduce = a_sram = a_sram_wait = 0.0
        accd = [0.0] * D
        alone = [0.0] * D
        iter_start: list[float] = []
        snaps: list[tuple] = []
        timeline: list[tuple[str, str, str, float, float]] = []
        # the timeline keeps what the measured window [t_a, t_a + period] can show: tasks of the last
        # iterations (collectives issued from max_iter - 5 on, compute from max_iter - 4) ending after t_a
        # and starting before t_a + period. Nothing ending before the window's first iteration starts can,
        # so nothing is kept until it does, nor what starts after t_a + period once that is known (tl_end)
        tl_a, tl_b = max_iter - 3, max_iter - 1
        tl_comm_from = tl_compute_from = 1 << 62
        tl_end = INF

        # --- compute
        comp_j = None  # the running task's index, or None
        comp_n = 0
        comp_rem = comp_rate = comp_h = 0.0
        comp_tc = 0
        compute_started = 0.0
        nn = jj = 0  # the next task to run: iteration nn, task jj
        done: dict[tuple[int, int], float] = {}
        rels: dict[tuple[int, int], list] = {}  # (k, n) -> [chunks left, bytes sent]

        # --- recording
        last_on_dim: list = [None] * D
        rec_start: dict = {}
        rec_end: dict = {}
        rec_pred: dict = {}
        rec_adm: dict = {}
        rec_after: dict = {}
        rec_cstart: dict = {}
        rec_cend: dict = {}

        # --- events: one pending completion (INF: none) and a heap of wake-ups, ordered by (time, sequence);
        # seq numbers every event scheduled
        now = 0.0
        last = 0.0
        seq = 0
        tick_t = INF
        tick_s = 0
        wakes: list[tuple[float, int]] = []
        issue_seq = 0

        def try_compute() -> None:
            nonlocal comp_j, comp_n, comp_rem, comp_rate, comp_tc, compute_started, a_nominal
            nonlocal tl_comm_from, tl_compute_from, tl_end
            if comp_j is not None or nn >= max_iter:
                return
            n, j = nn, jj
            for k, back in waits[j]:
                m = n - back
                if m < 0:
                    continue
                ready = done.get((k, m))
                if ready is None or ready > now + EPS:
                    return  # a collective's completion or its wake-up will call back
            if j == 0:
                iter_start.append(now)
                if len(iter_start) == tl_a + 1:
                    tl_comm_from, tl_compute_from = max_iter - 5, max_iter - 4
                elif len(iter_start) == tl_b + 1:
                    t_a = iter_start[tl_a]
                    tl_end = t_a + (now - t_a) / (tl_b - tl_a)
                snaps.append((a_compute, a_nominal, a_comm_any, a_hbm_comm, a_hbm_compute, a_reduce, a_sram,
                              a_sram_wait, tuple(accd), tuple(alone)))
            comp_j, comp_n, comp_rem, comp_rate, comp_tc = j, n, 1.0, 0.0, task_cls[j]
            compute_started = now
            if record:
                rec_cstart[(j, n)] = now
            a_nominal += nominal_of[j]

        def collective_done(k: int, n: int) -> None:
            nonlocal seq
            t = now + delay[k]
            done[(k, n)] = t
            if delay[k] > 0:
                seq += 1
                heappush(wakes, (t, seq))
            else:
                try_compute()

        def enqueue(chunk: list, d: int) -> None:
            prio = chunk[4]
            fifo = q_fifo[d].get(prio)
            if fifo is None:
                q_fifo[d][prio] = deque((chunk,))
                heappush(q_heap[d], prio)
            else:
                fifo.append(chunk)
            if slot_w[d] < 0:
                poke.append(d)

        def admit() -> None:
            nonlocal free, sram_peak, lim_sram, nsq
            while sq_heap:
                prio = sq_heap[0]
                fifo = sq_fifo[prio]
                chunk = fifo[0]
                nd = need[chunk[0]]
                if nd > free * (1 + 1e-12):
                    lim_sram = True
                    return
                fifo.popleft()
                if not fifo:
                    heappop(sq_heap)
                    del sq_fifo[prio]
                nsq -= 1
                if record:
                    x = (chunk[0], chunk[1], chunk[2])
                    rec_adm[x] = now
                    rec_after[x] = leaving
                free -= nd
                if S - free > sram_peak:
                    sram_peak = S - free
                enqueue(chunk, seqd[chunk[0]][0])

        def release(k: int, n: int) -> None:
            nonlocal issue_seq, nsq
            if not nph[k]:
                collective_done(k, n)
                return
            u = 0 if urgent[k] else 1
            if order_pos is not None:
                pos, off = order_pos[k]
                x = (n - off) * K + pos
            else:
                issue_seq += 1
                x = -issue_seq if lifo else issue_seq
            prio = u * BIG + x if int_prio else (u, x)
            key = (k, n)
            rel = rels.get(key)
            if rel is None:
                rel = rels[key] = [nchunks[k], 0.0]
            else:  # released again (the same (k, n)): its counts restart, as the reference's dicts did
                rel[0], rel[1] = nchunks[k], 0.0
            chunks = deque([k, n, c, 0, prio, rel] for c in range(nchunks[k]))
            if sram_finite:
                fifo = sq_fifo.get(prio)
                if fifo is None:
                    sq_fifo[prio] = chunks
                    heappush(sq_heap, prio)
                else:
                    fifo.extend(chunks)
                nsq += len(chunks)
                admit()
            else:
                d = seqd[k][0]
                if record:
                    for c in range(nchunks[k]):
                        rec_adm[(k, n, c)] = now
                        rec_after[(k, n, c)] = None
                fifo = q_fifo[d].get(prio)
                if fifo is None:
                    q_fifo[d][prio] = chunks
                    heappush(q_heap[d], prio)
                else:
                    fifo.extend(chunks)
                if slot_w[d] < 0:
                    poke.append(d)

        def compute_done() -> None:
            nonlocal comp_j, jj, nn
            j, n = comp_j, comp_n
            comp_j = None
            if record:
                rec_cend[(j, n)] = now
            if n >= tl_compute_from and compute_started < tl_end:
                timeline.append(("compute", cnames[j][0], cnames[j][1], compute_started, now))
            # the program moves on before the releases: a collective with nothing to send completes at once,
            # and the task it lets start is the next one, not this one again
            jj += 1
            if jj == J:
                jj, nn = 0, nn + 1
            for k in releases[j]:
                release(k, n)
            try_compute()

        def entry(key: tuple[int, ...]) -> tuple:
            """The rates of an active sequence, computed as the reference's _recompute did."""
            nonlocal lim_mem, lim_red
            rates, mem, red, mem_over, red_over = _active_rates([cls_rep[c] for c in key], pools)
            lim_mem |= mem_over
            lim_red |= red_over
            e = memo[key] = (rates, mem, red, {}, all(r > 0 for r in rates))
            return e

        def comp_entry(e: tuple, tc: int) -> tuple[float, float]:
            nonlocal hbm_peak
            r, h = _compute_draw(tc_task[tc], npu, pools, bool(e[0]), e[1])
            total = e[1] + h
            if total > hbm_peak:
                hbm_peak = total
            got = e[3][tc] = (r, h)
            return got

        cur_mem = cur_red = 0.0
        cur_rates: tuple[float, ...] = ()  # the active phases' rates, in ``order``
        try_compute()
        while True:
            # ---- start: every idle dimension takes its most urgent queued chunk-phase, in dimension order
            if poke:
                if len(poke) > 1:
                    poke.sort()
                for d in poke:
                    qh = q_heap[d]
                    if qh and slot_w[d] < 0:
                        prio = qh[0]
                        fifo = q_fifo[d][prio]
                        chunk = fifo.popleft()
                        if not fifo:
                            heappop(qh)
                            del q_fifo[d][prio]
                        k = chunk[0]
                        wid = seqw[k][chunk[3]]
                        slot_w[d] = wid
                        slot_chunk[d] = chunk
                        slot_start[d] = now
                        rem[d] = 1.0
                        order.append(d)
                        ocls.append(w_cls[wid])
                        if record:
                            x = (k, chunk[1], chunk[2], chunk[3])
                            rec_start[x] = now
                            rec_pred[x] = last_on_dim[d]
                            last_on_dim[d] = x
                        alone[d] += w_inv_alone[wid]
                poke.clear()

            # ---- rates of the active set, and the next completion
            e = memo.get(tuple(ocls))
            if e is None:
                e = entry(tuple(ocls))
            nxt = INF
            cur_rates = e[0]
            if e[4]:  # every rate positive: the time left is max(rem, 0) / rate
                for d, r in zip(order, cur_rates):
                    x = rem[d]
                    if x < 0.0:
                        x = 0.0
                    x /= r
                    if x < nxt:
                        nxt = x
            else:
                for d, r in zip(order, cur_rates):
                    x = rem[d]
                    x = ((0.0 if 0.0 > x else x) / r) if r > 0 else INF
                    if x < nxt:
                        nxt = x
            cur_mem = e[1]
            cur_red = e[2]
            if comp_j is not None:
                cr = e[3].get(comp_tc)
                if cr is None:
                    cr = comp_entry(e, comp_tc)
                comp_rate, comp_h = cr
                x = ((0.0 if 0.0 > comp_rem else comp_rem) / comp_rate) if comp_rate > 0 else INF
                if x < nxt:
                    nxt = x
            elif cur_mem > hbm_peak:
                hbm_peak = cur_mem
            if nxt < INF:
                seq += 1
                tick_t = now + nxt
                tick_s = seq
            else:
                tick_t = INF

            # ---- the next event: a wake-up, or the pending completion, whichever is first in (time, sequence)
            if wakes:
                w0 = wakes[0]
                if w0[0] < tick_t or (w0[0] == tick_t and w0[1] < tick_s):
                    heappop(wakes)
                    now = w0[0]
                    # advance all progress and accumulators to now (rates were constant since the last event)
                    dt = now - last
                    if dt > 0:
                        for d, r in zip(order, cur_rates):
                            rem[d] -= r * dt
                            accd[d] += dt
                        if order:
                            a_comm_any += dt
                        if cur_mem:
                            a_hbm_comm += cur_mem * dt
                        if cur_red:
                            a_reduce += cur_red * dt
                        if comp_j is not None:
                            comp_rem -= comp_rate * dt
                            a_compute += dt
                            a_hbm_compute += comp_h * dt
                        if sram_finite:
                            a_sram += (S - free) * dt
                        if nsq:
                            a_sram_wait += nsq * dt
                        last = now
                    try_compute()
                    continue
            if tick_t == INF:
                break
            now = tick_t

            # ---- a completion. Advance as above, and find what finished: what is left would take less time
            # than the clock resolves at this magnitude (or a remainder below ``now``'s float spacing never
            # shrinks and the replay spins)
            tol = 1e-15 + 4e-16 * now
            fin = None
            dt = now - last
            if dt > 0:
                for d, r in zip(order, cur_rates):
                    x = rem[d] - r * dt
                    rem[d] = x
                    accd[d] += dt
                    if x <= 1e-9 or x <= tol * r:
                        if fin is None:
                            fin = [d]
                        else:
                            fin.append(d)
                if order:
                    a_comm_any += dt
                if cur_mem:
                    a_hbm_comm += cur_mem * dt
                if cur_red:
                    a_reduce += cur_red * dt
                if comp_j is not None:
                    comp_rem -= comp_rate * dt
                    a_compute += dt
                    a_hbm_compute += comp_h * dt
                if sram_finite:
                    a_sram += (S - free) * dt
                if nsq:
                    a_sram_wait += nsq * dt
                last = now
            else:
                for d, r in zip(order, cur_rates):
                    x = rem[d]
                    if x <= 1e-9 or x <= tol * r:
                        if fin is None:
                            fin = [d]
                        else:
                            fin.append(d)
            if fin is not None:
                for d in fin:
                    i = order.index(d)
                    del order[i]
                    del ocls[i]
                    wid = slot_w[d]
                    slot_w[d] = -1
                    poke.append(d)
                    chunk = slot_chunk[d]
                    k, n, c, i, prio, rel = chunk
                    if record:
                        rec_end[(k, n, c, i)] = now
                    rel[1] += w_wire[wid]
                    if n >= tl_comm_from and slot_start[d] < tl_end:
                        timeline.append((dim_row[d], comm_name[k], "comm", slot_start[d], now))
                    i += 1
                    if i < nph[k]:
                        chunk[3] = i
                        d = seqd[k][i]
                        fifo = q_fifo[d].get(prio)
                        if fifo is None:
                            q_fifo[d][prio] = deque((chunk,))
                            heappush(q_heap[d], prio)
                        else:
                            fifo.append(chunk)
                        if slot_w[d] < 0:
                            poke.append(d)
                        continue
                    chunk[3] = i
                    if sram_finite:
                        free += need[k]
                        leaving = (k, n, c)
                        admit()
                        leaving = None
                    rel[0] -= 1
                    if rel[0] == 0:
                        collective_done(k, n)
            if comp_j is not None and (comp_rem <= 1e-9 or comp_rem <= tol * comp_rate):
                compute_done()

        if len(iter_start) < max_iter:
            raise RuntimeError("the replay stalled before its last iteration (a collective never completed)")
        self.events = seq  # every event scheduled was processed (a superseded completion by doing nothing)
        self.iter_start, self.snaps, self.timeline = iter_start, snaps, timeline
        self.limited = {"memory": lim_mem, "reduction": lim_red, "sram": lim_sram}
        self.sram_peak, self.hbm_peak = sram_peak, hbm_peak
        self.sent = {key: rel[1] for key, rel in rels.items()}
        self.rec = {"start": rec_start, "end": rec_end, "pred": rec_pred, "admitted": rec_adm, "after": rec_after,
                    "cstart": rec_cstart, "cend": rec_cend}
        return self._result()

    def _compilable(self, int_prio: bool, big: int, K: int, D: int, ncls: int) -> bool:
        """Whether the compiled loop can take this replay: integer priorities that fit 64 bits, an order (if
        any) that ranks every collective, and rate-memo keys (a digit per active class) that fit too. What
        it cannot take (no shipped or generated problem so far) runs on the Python loop."""
        offs = [off for _, off in (self.order_pos or {}).values()]
        fits = (ncls + 1) ** D < LIMIT and all(-LIMIT < x < LIMIT for x in (big, *offs))
        return (int_prio and fits and len(self.it.computes) > 0 and D <= 64
                and (self.order_pos is None or set(self.order_pos) == set(range(K))))

    def _run_compiled(self, seqw, w_dim, w_cls, w_wire, w_inv_alone, cls_rep, urgent, delay, need, BIG,
                      task_cls, tc_task, nominal_of, waits, releases, comm_name, cnames, dim_row) -> SimResult:
        """``run``'s event loop in C (``_kernel.c``, the same loop statement for statement), on the tables
        ``run`` built. The rates of a sequence of active chunk-phases are still computed here, by
        ``pools.phase_rates``, the first time the kernel meets the sequence. What it leaves differs from the
        Python loop's only where nothing reads it: ``rec`` holds the reference iteration alone, keyed as
        ``Realized`` keys it, and ``timeline`` is already clipped to the measured window (``from_kernel``)."""
        p, pools, npu = self.p, self.pools, self.p.npu
        lim = [False, False]

        def entry(key: tuple[int, ...]) -> tuple:
            rates, mem, red, mem_over, red_over = _active_rates([cls_rep[c] for c in key], pools)
            lim[0] |= mem_over
            lim[1] |= red_over
            return rates, mem, red, all(r > 0 for r in rates)

        def comp_entry(active: bool, mem: float, tc: int) -> tuple[float, float]:
            return _compute_draw(tc_task[tc], npu, pools, active, mem)

        K = len(self.it.comms)
        pos = [0] * K
        off = [0] * K
        if self.order_pos is not None:
            for k, (ps, of) in self.order_pos.items():
                pos[k], off[k] = ps, of
        S = pools.sram
        events, iter_start, snaps, tl, lim_sram, sram_peak, peak_int, hbm_peak, sent, rec = _kernel.run(
            len(p.topology.dims), K, self.max_iter, seqw, w_dim, w_cls, w_wire, w_inv_alone, self.nchunks, delay,
            [1 if u else 0 for u in urgent], need or [0.0] * K, pos, off, task_cls, len(cls_rep), len(tc_task),
            nominal_of, [[x for kb in w for x in kb] for w in waits], releases, BIG, self.lifo, math.isfinite(S),
            self.order_pos is not None, self.record, self.ref, self.max_iter - 3, self.max_iter - 1, S,
            isinstance(S, int), [1 if isinstance(x, int) else 0 for x in need] or [0] * K, dim_row, comm_name, cnames,
            entry, comp_entry)
        if len(iter_start) < self.max_iter:
            raise RuntimeError("the replay stalled before its last iteration (a collective never completed)")
        self.events, self.iter_start, self.snaps = events, iter_start, snaps
        self.timeline, self.from_kernel = tl, True
        self.limited = {"memory": lim[0], "reduction": lim[1], "sram": lim_sram}
        self.sram_peak, self.hbm_peak = int(sram_peak) if peak_int else sram_peak, hbm_peak
        self.sent = dict(sent)
        if rec is not None:
            self.rec = dict(zip(("start", "end", "pred", "admitted", "after", "cstart", "cend"), rec))
        return self._result()

    def _result(self) -> SimResult:
        a, b = self.max_iter - 3, self.max_iter - 1
        t_a, t_b = self.iter_start[a], self.iter_start[b]
        span = t_b - t_a
        iters = b - a
        D = len(self.p.topology.dims)
        names = ["compute", "nominal", "comm_any", "hbm_comm", "hbm_compute", "reduce", "sram", "sram_wait"]
        s_a, s_b = self.snaps[a], self.snaps[b]
        per = {name: s_b[i] - s_a[i] for i, name in enumerate(names)}
        for d in range(D):
            per[f"dim{d}"] = s_b[8][d] - s_a[8][d]
            per[f"alone{d}"] = s_b[9][d] - s_a[9][d]
        util = {"compute": per["compute"] / span if span else 0.0}
        for d in range(D):
            util[f"dim{d}:{self.p.topology.dims[d].name}"] = per[f"dim{d}"] / span if span else 0.0
        util["hbm_comm"] = per["hbm_comm"] / span / self.p.npu.hbm_bandwidth if span else 0.0
        util["hbm_compute"] = per["hbm_compute"] / span / self.p.npu.hbm_bandwidth if span else 0.0
        if math.isfinite(self.pools.reduction):
            util["reduction"] = per["reduce"] / span / self.pools.reduction if span else 0.0
        if math.isfinite(self.pools.memory):
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
        timeline = self.timeline if self.from_kernel else [
            (r, nm, kd, max(s, t_a) - t_a, min(e, t_end) - t_a) for r, nm, kd, s, e in self.timeline
            if e > t_a and s < t_end]
        return SimResult(
            period_s=period, compute_time_s=compute, nominal_compute_s=per["nominal"] / iters,
            exposed_comm_s=max(0.0, period - compute), utilization=util, sram_peak_bytes=self.sram_peak,
            sram_wait_s=per["sram_wait"] / max(1, sum(self.nchunks)) / iters, dim_stretch=stretch,
            hbm_peak_bytes_per_s=self.hbm_peak, iterations=self.max_iter,
            events=self.events, chunks_per_collective=list(self.nchunks), bytes_sent=sent,
            bytes_expected=dict(self.expected), timeline=timeline,
            window_s=(t_a, t_b), limited=dict(self.limited), realized=self._realized() if self.record else None)

    def _realized(self) -> Realized:
        ref, rec = self.ref, self.rec
        J = len(self.it.computes)
        if self.from_kernel:
            return Realized(ref, rec["start"], rec["end"], rec["pred"], rec["admitted"], rec["after"],
                            [rec["cstart"][j] for j in range(J)], [rec["cend"][j] for j in range(J)])

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
    if not problem.workload.layers:  # only the API can build one: the file readers reject it
        raise ValueError(f"workload {problem.workload.name!r} has no layers: there is nothing to replay")
    if policy not in (None, "lifo", "fifo"):
        raise ValueError(f"unknown policy {policy!r}")
    return _Replay(problem, design, order, iterations, record, policy).run()
