"""Pure cost functions of the platform: what a collective asks of each resource, and how long a demand
takes at a rate.

The design master (``milp/master.py``) and the simulator (``sim/replay.py``, through
``platform/pools.py``) read the same functions, so they cannot disagree about a cost:
- ``collective_demands``: per chunk of a collective, each phase's link time (bytes over the dimension's
  bandwidth, plus per message step the hop latency and the endpoint delay), the bytes it receives to
  reduce and to store, and the collective's input and output: the same for every engine and design;
- ``capacities``: the endpoint pools a design gives (``engines.py`` says which resource sets which pool);
  ``phase_demand``: what a chunk asks of them in a phase, by the engine's rule; ``alone_time``: a
  chunk-phase's time alone on the endpoint, the one formula the MILP and the simulator read;
- ``compute_time_terms``: a compute task's core-bound and memory-bound times with what communication
  leaves it.
What happens when several chunk-phases share the endpoint is the simulator's (``platform/pools.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..workload.model import Comm, Compute
from .collectives import Phase, payload_bytes, phases
from .endpoint import NPU, Design, Engine
from .engines import POOLS, engine_kind
from .topology import Topology


def link_time(ph: Phase, topology: Topology, endpoint_delay_s: float) -> float:
    """Seconds the phase occupies its dimension: serialization plus per-step hop latency and endpoint delay;
    where the dimension states them (a calibrated cluster, ``topology.Dim``), plus its once-per-phase latency
    and one pass over the phase's buffer at ``buffer_bandwidth`` per half (a reduce-scatter or an all-gather
    one, an all-reduce two, so that the two halves cost what the all-reduce they make up costs). An all-reduce
    of S bytes on p GPUs of a ring takes  phase_latency + 2(p-1) hops latency + 2(p-1)/p S / bandwidth
    + 2 S / buffer_bandwidth : its bus bandwidth rises with S as the fixed terms amortize, and with p as the
    buffer term's share falls, as NCCL's measured curves do (docs/accuracy.md, "Communication")."""
    d = topology.dims[ph.dim]
    t = ph.wire_bytes / d.bandwidth + ph.steps * (d.hops * d.latency + endpoint_delay_s)
    if d.phase_latency:
        t += d.phase_latency
    if d.buffer_bandwidth is not None:
        t += (2 if ph.op == "all_reduce" else 1) * ph.buffer_bytes / d.buffer_bandwidth
    return t


def resource_time(demand: float, rate: float) -> float:
    """Seconds to serve ``demand`` units at ``rate`` units/s; a zero demand costs nothing even at rate 0."""
    if demand <= 0.0:
        return 0.0
    if rate <= 0.0:
        return float("inf")
    return demand / rate


@dataclass(frozen=True)
class CollectiveDemands:
    """What one chunk of a collective asks, the same for every engine and design: per phase i its
    dimension, its seconds on that dimension's links (``phase_link_s``), the bytes it receives to
    reduce (``phase_reduce_bytes``) and to store (``phase_copy_bytes``); and the collective's input and
    output per chunk (``in_bytes``, ``out_bytes``), what an engine that keeps data on chip reads and writes.
    """

    chunks: int
    chunk_bytes: float
    phase_dims: tuple[int, ...]
    phase_link_s: tuple[float, ...]
    phase_reduce_bytes: tuple[float, ...]
    phase_copy_bytes: tuple[float, ...]
    in_bytes: float
    out_bytes: float

    def link_load_s(self) -> dict[int, float]:
        """Per dimension, the chunk's total link seconds over the phases on it."""
        load: dict[int, float] = {}
        for d, t in zip(self.phase_dims, self.phase_link_s):
            load[d] = load.get(d, 0.0) + t
        return load


def collective_demands(comm: Comm, topology: Topology, engine: Engine, chunks: int) -> CollectiveDemands:
    """Per-chunk demands of ``comm`` split into ``chunks`` equal chunks (the engine gives the endpoint delay)."""
    c = comm.bytes / chunks
    phs = phases(comm, topology, c)
    link = tuple(link_time(p, topology, engine.endpoint_delay_s) for p in phs)
    inp, out = payload_bytes(comm, topology, c)
    return CollectiveDemands(chunks, c, tuple(p.dim for p in phs), link, tuple(p.reduce_wire for p in phs),
                             tuple(p.copy_wire for p in phs), inp, out)


def capacities(engine: Engine, npu: NPU, design: Design) -> dict[str, float]:
    """Each endpoint pool's capacity under ``design`` (bytes/s, or bytes for SRAM): what the resource that
    sizes it gives (``engines.Resource.capacity``), unlimited where no resource does."""
    kind = engine_kind(engine.kind)
    out = {}
    for pool in POOLS:
        r = kind.sizing(pool)
        out[pool] = r.capacity(design.get(r.name), npu) if r is not None else float("inf")
    return out


def phase_demand(engine: Engine, dem: CollectiveDemands, i: int) -> tuple[float, float]:
    """(memory bytes, reduce bytes) a chunk asks of the endpoint in phase i."""
    kind = engine_kind(engine.kind)
    return kind.memory_bytes(dem, i, engine), dem.phase_reduce_bytes[i] if kind.reduces else 0.0


def phase_endpoint_times(engine: Engine, dem: CollectiveDemands, i: int, caps: dict[str, float]) -> dict[str, float]:
    """Seconds a chunk needs in phase i from each pool alone (its demand over the pool's capacity)."""
    mem, red = phase_demand(engine, dem, i)
    return {"memory": resource_time(mem, caps["memory"]), "reduction": resource_time(red, caps["reduction"])}


def alone_time(engine: Engine, dem: CollectiveDemands, i: int, caps: dict[str, float]) -> float:
    """A chunk's time in phase i alone on the endpoint: the largest of its link time and its pool times.
    The MILP's phase terms and the simulator's alone rate are this, one formula."""
    return max(dem.phase_link_s[i], *phase_endpoint_times(engine, dem, i, caps).values())


def compute_time_terms(task: Compute, npu: NPU, cores_left: float, hbm_left: float) -> tuple[float, float]:
    """(core-bound seconds, memory-bound seconds) of a compute task; its time is the larger.

    Given as a time t0 at the full NPU: t0 * cores/cores_left and t0 * u * HBM / hbm_left (u: the
    HBM share compute draws at full speed: the task's own bytes over t0 where it states them, as a task
    timed by a compute model does, else the NPU's ``compute_hbm_utilization``), and never below t0. Given as
    FLOPs and bytes: the roofline, FLOPs over the compute rate of the cores left, bytes over the HBM
    bandwidth left.
    """
    if task.time_s is not None:
        t0 = task.time_s
        core = t0 * npu.cores / cores_left if cores_left > 0 else float("inf")
        mem = compute_hbm_bytes(task, npu) / hbm_left if hbm_left > 0 else float("inf")
        return max(core, t0), mem
    flops = task.flops or 0.0
    nbytes = task.hbm_bytes or 0.0
    rate = npu.compute_flops * cores_left / npu.cores
    return resource_time(flops, rate), resource_time(nbytes, hbm_left)


def compute_hbm_bytes(task: Compute, npu: NPU) -> float:
    """HBM bytes a compute task moves: its own where stated, else (a time alone) the NPU's
    ``compute_hbm_utilization`` of the full bandwidth over its time."""
    if task.hbm_bytes is not None:
        return task.hbm_bytes
    return (task.time_s or 0.0) * npu.compute_hbm_utilization * npu.hbm_bandwidth
