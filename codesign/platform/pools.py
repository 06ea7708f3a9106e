"""The endpoint's shared pools: what active chunk-phases share, and what compute is left to run with.

Every chunk-phase has a link time (it holds its dimension's links) and demands on two shared pools:
memory traffic (baseline: HBM bytes within communication's reserved share; ACE: DMA bytes) and
reduction (baseline: bytes on communication's cores; ACE: bytes on the ALUs). Active chunk-phases share
each pool max-min fairly and without waste (water-filling: a phase that needs less than an equal share
leaves the rest to the others); a phase progresses at the slowest of its link and its shares, so a
phase alone on the endpoint takes exactly ``costs.alone_time``, the MILP's ``phase_time``. Compute gets what
communication leaves at that instant: all cores unless a baseline collective is running, and the HBM
bandwidth communication is not using -- the contention the MILP's static split only approximates.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..workload.model import Compute
from .costs import CollectiveDemands, capacities, compute_time_terms, phase_demand
from .endpoint import NPU, Design, Engine
from .engines import engine_kind

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
        """The pools ``design`` gives (``costs.capacities``) and the cores communication takes while it runs."""
        caps = capacities(engine, npu, design)
        cores = sum(design.get(r.name) for r in engine_kind(engine.kind).resources if r.takes_cores)
        return cls(caps["memory"], caps["reduction"], caps["sram"], cores, npu.hbm_bandwidth)


@dataclass(frozen=True)
class PhaseWork:
    """What one chunk-phase asks: seconds on its dimension's links, memory bytes, reduction bytes."""

    dim: int
    link_s: float
    memory_bytes: float
    reduce_bytes: float
    wire_bytes: float


def phase_work(dem: CollectiveDemands, i: int, engine: Engine, wire_bytes: float) -> PhaseWork:
    """Chunk-phase i of a collective as the pools see it (``costs.phase_demand``)."""
    mem, red = phase_demand(engine, dem, i)
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


def phase_rates(active: list[PhaseWork], pools: Pools, over: tuple[bool, bool] | None = None) -> list[float]:
    """Progress rate (fraction of the phase per second) of each active chunk-phase.

    Each phase is capped by its link; the memory and reduction pools are water-filled against what
    each phase could use given its other limits, alternating until the two agree (a few rounds for the
    handful of phases a network has active at once). ``over``: ``oversubscribed(active, pools)``, where the
    caller has it already."""
    n = len(active)
    if n == 1:
        return [alone_rate(active[0], pools)]
    link = [1.0 / w.link_s if w.link_s > 0 else INF for w in active]
    if not any(oversubscribed(active, pools) if over is None else over):
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


def compute_rate(task: Compute, npu: NPU, pools: Pools, comm_busy: bool, comm_memory_rate: float) -> float:
    """Progress rate (fraction of the task per second) of a compute task given communication's use now:
    the cores communication takes while it runs, and its memory traffic, which comes out of HBM on every
    engine (ACE's DMA reads and writes HBM)."""
    cores_left = npu.cores - (pools.comm_cores if comm_busy else 0.0)
    hbm_left = max(npu.hbm_bandwidth - comm_memory_rate, 1e-9 * npu.hbm_bandwidth)
    t = max(compute_time_terms(task, npu, cores_left, hbm_left))
    return 1.0 / t if t > 0 else INF
