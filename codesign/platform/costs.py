"""Pure cost functions of the platform: what a collective asks of each resource, and how long a demand
takes at a rate.

The design master (``milp/master.py``) and the simulator (``sim/replay.py``, through
``platform/pools.py``) read the same functions, so they cannot disagree about a cost:
- ``collective_demands``: per chunk of a collective, each phase's link time (bytes over the dimension's
  bandwidth, plus per message step the hop latency and the endpoint delay), the baseline's HBM bytes
  (``hbm_per_reduce_byte`` per reduced byte, ``hbm_per_copy_byte`` per copied byte: docs/paper.md's
  memory-traffic model), the bytes to reduce, and what ACE's DMA reads in its first phase and writes in
  its last; all design-independent;
- ``endpoint_rates``: the rates a design gives those demands (the baseline's HBM share and cores; ACE's
  ALUs, DMA and SRAM); ``phase_resource_times``: demand over rate, per phase;
- ``compute_time_terms``: a compute task's core-bound and memory-bound times with what communication
  leaves it.
A chunk-phase alone on the endpoint takes the largest of its link time and its ``phase_resource_times``;
what happens when several share the endpoint is the simulator's (``platform/pools.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..workload.model import Comm, Compute
from .collectives import Phase, payload_bytes, phases
from .endpoint import NPU, Design, Engine
from .topology import Topology


def link_time(ph: Phase, topology: Topology, endpoint_delay_s: float) -> float:
    """Seconds the phase occupies its dimension: serialization plus per-step hop latency and endpoint delay."""
    d = topology.dims[ph.dim]
    return ph.wire_bytes / d.bandwidth + ph.steps * (d.hops * d.latency + endpoint_delay_s)


def resource_time(demand: float, rate: float) -> float:
    """Seconds to serve ``demand`` units at ``rate`` units/s; a zero demand costs nothing even at rate 0."""
    if demand <= 0.0:
        return 0.0
    if rate <= 0.0:
        return float("inf")
    return demand / rate


@dataclass(frozen=True)
class CollectiveDemands:
    """What one chunk of a collective asks of each resource (design-independent).

    ``phase_link_s[i]``: seconds on the links of phase i's dimension; ``phase_hbm_bytes[i]``: baseline
    HBM bytes touched; ``phase_reduce_bytes[i]``: bytes summed; ``ace_in_bytes``/``ace_out_bytes``: what
    ACE's DMA reads (input) and writes (output) for the chunk.
    """

    chunks: int
    chunk_bytes: float
    phase_dims: tuple[int, ...]
    phase_link_s: tuple[float, ...]
    phase_hbm_bytes: tuple[float, ...]
    phase_reduce_bytes: tuple[float, ...]
    ace_in_bytes: float
    ace_out_bytes: float

    @property
    def ace_hbm_bytes(self) -> float:
        return self.ace_in_bytes + self.ace_out_bytes

    def phase_dma_bytes(self, i: int) -> float:
        """ACE DMA bytes during phase i: the input in the first phase, the output in the last."""
        last = len(self.phase_dims) - 1
        return (self.ace_in_bytes if i == 0 else 0.0) + (self.ace_out_bytes if i == last else 0.0)

    def link_load_s(self) -> dict[int, float]:
        """Per dimension, the chunk's total link seconds over the phases on it."""
        load: dict[int, float] = {}
        for d, t in zip(self.phase_dims, self.phase_link_s):
            load[d] = load.get(d, 0.0) + t
        return load


def collective_demands(comm: Comm, topology: Topology, engine: Engine, chunks: int) -> CollectiveDemands:
    """Per-chunk demands of ``comm`` split into ``chunks`` equal chunks."""
    c = comm.bytes / chunks
    phs = phases(comm, topology, c)
    link = tuple(link_time(p, topology, engine.endpoint_delay_s) for p in phs)
    hbm = tuple(engine.hbm_per_reduce_byte * p.reduce_wire + engine.hbm_per_copy_byte * p.copy_wire
                for p in phs)
    red = tuple(p.reduce_bytes for p in phs)
    inp, out = payload_bytes(comm, topology, c)
    return CollectiveDemands(chunks, c, tuple(p.dim for p in phs), link, hbm, red, inp, out)


def endpoint_rates(engine: Engine, npu: NPU, design: Design) -> dict[str, float]:
    """Rates of the endpoint resources a collective uses under ``design``, in the demands' units per second:
    baseline ``hbm`` (bytes/s) and ``cores`` (reduced bytes/s); ACE ``alu``, ``dma`` (bytes/s), ``sram`` (bytes)."""
    if engine.kind == "baseline":
        return {"hbm": design.get("comm_hbm_share") * npu.hbm_bandwidth,
                "cores": design.get("comm_cores") * npu.core_reduce_rate}
    if engine.kind == "ace":
        return {"alu": design.get("alu"), "dma": design.get("dma"), "sram": design.get("sram")}
    return {}


def phase_resource_times(dem: CollectiveDemands, i: int, kind: str, rates: dict[str, float]) -> dict[str, float]:
    """Seconds a chunk spends on each endpoint resource in phase i (links excluded)."""
    if kind == "baseline":
        return {"hbm": resource_time(dem.phase_hbm_bytes[i], rates["hbm"]),
                "cores": resource_time(dem.phase_reduce_bytes[i], rates["cores"])}
    if kind == "ace":
        return {"alu": resource_time(dem.phase_reduce_bytes[i], rates["alu"]),
                "dma": resource_time(dem.phase_dma_bytes(i), rates["dma"])}
    return {}


def compute_time_terms(task: Compute, npu: NPU, cores_left: float, hbm_left: float) -> tuple[float, float]:
    """(core-bound seconds, memory-bound seconds) of a compute task; its time is the larger.

    Given as a time t0 at the full NPU: t0 * cores/cores_left and t0 * u * HBM / hbm_left (u: the
    HBM share compute draws at full speed), and never below t0. Given as FLOPs and bytes: the roofline,
    FLOPs over the compute rate of the cores left, bytes over the HBM bandwidth left.
    """
    if task.time_s is not None:
        t0 = task.time_s
        core = t0 * npu.cores / cores_left if cores_left > 0 else float("inf")
        mem = t0 * npu.compute_hbm_utilization * npu.hbm_bandwidth / hbm_left if hbm_left > 0 else float("inf")
        return max(core, t0), mem
    flops = task.flops or 0.0
    nbytes = task.hbm_bytes or 0.0
    rate = npu.compute_flops * cores_left / npu.cores
    return resource_time(flops, rate), resource_time(nbytes, hbm_left)
