"""Pure cost functions: how long compute and collectives take for a given engine design.

The MILP and the evaluators share these. The MILP needs each collective's time on each resource as a
constant per option (so durations stay linear in the option binaries); the evaluators need the same
times for one concrete design. Both come from ``collective_demands`` (what a collective asks of each
resource, design-independent) and ``resource_time`` (demand over rate).

Collective timing model (one collective, split into k chunks that pipeline through its phases):
    duration = sum over phases of f_ph  +  (k - 1) * B
where f_ph, a chunk's time in phase ph, is its longest time on any resource it uses there (links of
the phase's dimension, including hop latency and endpoint delay per step; HBM and cores on the
baseline; ALUs on ACE, and ACE's DMA, which streams the input in during the first phase and the
output out during the last, as the baseline's HBM traffic overlaps its phases), and B, the pipeline's interval,
is the largest per-chunk load on one resource summed over all phases that use it (each dimension's
links, HBM, cores, ALUs, DMA) or ACE's SRAM bound by Little's law: bytes in flight = throughput x
residence. With ``sram`` bytes and a chunk residing R seconds (its traversal at link speed), at most
sram/R bytes/s flow, so B >= chunk*R/sram. A chunk larger than the SRAM streams through it in
SRAM-sized pieces, each residing only for a piece's traversal, so it takes one traversal at bandwidth
plus its latency terms once per piece (``sram_interval``).
For k = 1 this is the sum of phase times; for identical chunks through a serial pipeline it is the
flow-shop makespan sum(t) + (k-1) max(t).
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
    ACE's DMA reads (input) and writes (output) for the chunk; ``residence_s``: its traversal at link speed.
    """

    chunks: int
    chunk_bytes: float
    phase_dims: tuple[int, ...]
    phase_link_s: tuple[float, ...]
    phase_hbm_bytes: tuple[float, ...]
    phase_reduce_bytes: tuple[float, ...]
    ace_in_bytes: float
    ace_out_bytes: float
    residence_s: float
    residence_latency_s: float  # the part of residence_s that does not scale with the chunk's bytes

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
    lat = sum(p.steps * (topology.dims[p.dim].hops * topology.dims[p.dim].latency + engine.endpoint_delay_s)
              for p in phs)
    return CollectiveDemands(chunks, c, tuple(p.dim for p in phs), link, hbm, red, inp, out, sum(link), lat)


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


def sram_interval(dem: CollectiveDemands, sram_bytes: float) -> float:
    """Little's law: the least seconds per chunk that ``sram_bytes`` of SRAM can sustain.

    A chunk that fits resides ``residence_s``: chunk * residence / sram. A larger one streams through in
    pieces of the SRAM's size, one at a time: its bandwidth part once, its latency part once per piece."""
    c = dem.chunk_bytes
    if sram_bytes <= 0.0:
        return float("inf") if c > 0 else 0.0
    if c <= sram_bytes:
        return c * dem.residence_s / sram_bytes
    return (dem.residence_s - dem.residence_latency_s) + c / sram_bytes * dem.residence_latency_s


def collective_time(dem: CollectiveDemands, engine: Engine, npu: NPU, design: Design) -> float:
    """Seconds for the whole collective under a concrete design (the model of the module docstring)."""
    if not dem.phase_dims:
        return 0.0
    rates = endpoint_rates(engine, npu, design)
    traversal = 0.0
    loads: dict[str, float] = {f"link{d}": t for d, t in dem.link_load_s().items()}
    for i, link_s in enumerate(dem.phase_link_s):
        ep = phase_resource_times(dem, i, engine.kind, rates)
        traversal += max([link_s, *ep.values()])
        for r, t in ep.items():
            loads[r] = loads.get(r, 0.0) + t
    if engine.kind == "ace":
        loads["sram"] = sram_interval(dem, rates["sram"])
    return traversal + (dem.chunks - 1) * max(loads.values())


def compute_slowdowns(engine: Engine, npu: NPU, design: Design) -> tuple[float, float]:
    """(cores left to compute, HBM bandwidth left to compute in bytes/s) under ``design``."""
    if engine.kind == "baseline":
        return (npu.cores - design.get("comm_cores"),
                npu.hbm_bandwidth * (1.0 - design.get("comm_hbm_share")))
    if engine.kind == "ace":
        return float(npu.cores), npu.hbm_bandwidth - design.get("dma")
    return float(npu.cores), npu.hbm_bandwidth


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


def compute_time(task: Compute, engine: Engine, npu: NPU, design: Design) -> float:
    """Seconds a compute task takes with what the engine's design leaves to compute."""
    cores_left, hbm_left = compute_slowdowns(engine, npu, design)
    return max(compute_time_terms(task, npu, cores_left, hbm_left))
