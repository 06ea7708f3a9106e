"""A GPU's compute model beyond one peak rate: what a kernel of a given shape takes (pure functions).

A matrix product (m x k by k x n) on a GPU runs as output tiles of tm x tn, one thread block per tile, the
streaming multiprocessors (SMs) taking them in waves; the library picks the tile (and may split k across
blocks when there are too few tiles to fill the SMs) that finishes first. So a product's time is not its
FLOPs over the peak rate: a partial last wave idles SMs (wave quantization), small tiles reuse their
operands less and reach less of an SM's peak, and every kernel pays a launch (NVIDIA, "Matrix
Multiplication Background User's Guide", docs/accuracy.md). The model:

- per SM, a tile of tm x tn reaches ``min(1, intensity / balance)`` of the SM's share of the peak, its
  intensity tm tn / (tm + tn) FLOPs per operand byte (a k step moves 2 (tm + tn) bytes of 2-byte operands
  for 2 tm tn FLOPs) against the SM's balance of peak over L2 bandwidth (both datasheet figures), times the
  sustained fraction ``gemm_efficiency`` (fitted);
- a product takes ceil(tiles / SMs) waves of one tile's time, or with k split in s parts, s times the tiles
  of 1/s of the time plus the partial results' fp32 reduction through HBM; never less than its operand and
  result bytes at the memory kernels' bandwidth;
- a memory-bound kernel moves its bytes at ``memory_efficiency`` of the HBM bandwidth (fitted);
- every kernel adds ``kernel_overhead_s`` on the GPU (fitted): the gap between two kernels of a stream;
- the host issues each kernel in ``host_overhead_s`` (fitted: the framework's per-operator CPU time), so a
  task of many small kernels runs at the pace the host issues them: a task takes the larger of its kernels'
  GPU time and their issue time (the stream runs ahead of the host only as far as the host is ahead);
- a blocking pipeline exchange costs the host ``exchange_overhead_s`` (fitted) after the task that ends
  before it, and the GPU idles meanwhile: Megatron synchronizes the device around its point-to-point calls,
  so the stream cannot run ahead of that host work as it runs ahead of kernel issue. An exchange that runs
  beside compute carries it as a delay of the exchange's end (``Issue.delay_s``).

``task_time`` is that time at the full NPU, which ``price`` writes into each task and the MILP and the
simulator then read through ``costs.compute_time_terms``, one formula for both.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..workload.model import Compute, Kernel, Layer, Step, Workload

#: The output tiles a GEMM library chooses among (tm, tn): cuBLAS's and CUTLASS's common tensor-core tiles.
TILES = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64))
#: How many parts a product's k may be split into when its tiles cannot fill the SMs.
SPLITS = (1, 2, 3, 4, 6, 8)
#: Bytes per element of a split product's partial results (fp32), written and read once per part.
PARTIAL_BYTES = 4.0


@dataclass(frozen=True)
class ComputeModel:
    """A GPU's compute model. Datasheet figures: ``matmul_flops`` (FLOP/s, dense tensor cores at the
    training precision), ``sms``, ``l2_bandwidth`` (bytes/s). Fitted (``codesign calibrate``):
    ``gemm_efficiency`` (fraction of an SM's peak a full wave of its best tiles sustains),
    ``memory_efficiency`` (fraction of the HBM bandwidth memory-bound kernels reach), ``kernel_overhead_s``
    (seconds a kernel adds on the GPU), ``host_overhead_s`` (seconds the host takes to issue one),
    ``exchange_overhead_s`` (seconds of host work per blocking pipeline exchange, the GPU idle)."""

    matmul_flops: float
    sms: int
    l2_bandwidth: float
    gemm_efficiency: float = 0.8
    memory_efficiency: float = 0.8
    kernel_overhead_s: float = 2e-6
    host_overhead_s: float = 0.0
    exchange_overhead_s: float = 0.0

    def tile_rate(self, tm: int, tn: int) -> float:
        """FLOP/s one SM sustains on tiles of tm x tn."""
        per_sm = self.matmul_flops / self.sms
        balance = per_sm / (self.l2_bandwidth / self.sms)       # FLOPs per L2 byte at which an SM is fed
        intensity = tm * tn / (tm + tn)     # FLOPs per operand byte: 2 tm tn FLOPs for 2 (tm + tn) bytes a k step
        return per_sm * min(1.0, intensity / balance) * self.gemm_efficiency


def gemm_time(kr: Kernel, model: ComputeModel, hbm_bandwidth: float) -> float:
    """Seconds one run of a matrix-product kernel takes (without the launch overhead)."""
    mem_rate = hbm_bandwidth * model.memory_efficiency
    floor = kr.bytes / mem_rate
    best = math.inf
    for tm, tn in TILES:
        tiles = kr.batch * math.ceil(kr.m / tm) * math.ceil(kr.n / tn)
        rate = model.tile_rate(tm, tn)
        for s in SPLITS:
            if s > 1 and (kr.k < 2 * s * 64 or tiles * s > 4 * model.sms):
                continue
            waves = math.ceil(tiles * s / model.sms)
            t = waves * 2.0 * tm * tn * math.ceil(kr.k / s) / rate
            if s > 1:
                t += 2 * s * PARTIAL_BYTES * kr.batch * kr.m * kr.n / mem_rate
            best = min(best, t)
    return max(best, floor)


def kernel_time(kr: Kernel, model: ComputeModel, hbm_bandwidth: float) -> float:
    """Seconds a kernel takes on the GPU, all its ``count`` runs, the gap after each included (an exchange's:
    the host's time, the GPU idle)."""
    if kr.kind == "exchange":
        return kr.count * model.exchange_overhead_s
    one = gemm_time(kr, model, hbm_bandwidth) if kr.kind == "gemm" else kr.bytes / (
        hbm_bandwidth * model.memory_efficiency)
    return kr.count * (one + model.kernel_overhead_s)


def task_time(task: Compute, model: ComputeModel, hbm_bandwidth: float) -> float:
    """Seconds a compute task takes at the full NPU: its kernels one after another on the GPU, or the host's
    time to issue them if that is longer; then the host's part of the exchanges that end it."""
    kernels = [kr for kr in task.kernels if kr.kind != "exchange"]
    gpu = sum(kernel_time(kr, model, hbm_bandwidth) for kr in kernels)
    host = model.host_overhead_s * sum(kr.count for kr in kernels)
    after = sum(kernel_time(kr, model, hbm_bandwidth) for kr in task.kernels if kr.kind == "exchange")
    return max(gpu, host) + after


def priced(task: Compute, model: ComputeModel, hbm_bandwidth: float) -> Compute:
    """The task with its time at the full NPU set from its kernels (unchanged if it has none or a time)."""
    if not task.kernels or task.time_s is not None:
        return task
    hbm = sum(kr.bytes * kr.count for kr in task.kernels)
    return replace(task, time_s=task_time(task, model, hbm_bandwidth), hbm_bytes=hbm)


def price(workload: Workload, model: ComputeModel, hbm_bandwidth: float) -> Workload:
    """Every compute task of ``workload`` that lists its kernels, timed by ``model`` (layers and program)."""
    def lay(ly: Layer) -> Layer:
        return replace(ly, forward=priced(ly.forward, model, hbm_bandwidth),
                       input_grad=priced(ly.input_grad, model, hbm_bandwidth),
                       weight_grad=priced(ly.weight_grad, model, hbm_bandwidth))

    def step(st: Step) -> Step:
        issues = tuple(replace(i, kernels=(), delay_s=i.delay_s + sum(kernel_time(kr, model, hbm_bandwidth)
                                                                      for kr in i.kernels))
                       if i.kernels else i for i in st.issues)
        return replace(st, demand=priced(st.demand, model, hbm_bandwidth), issues=issues)

    program = tuple(step(st) for st in workload.program) if workload.program else workload.program
    return replace(workload, layers=tuple(lay(ly) for ly in workload.layers), program=program)
