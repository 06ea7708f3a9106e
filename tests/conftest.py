"""Shared helpers: small problems built in code, so each test states exactly what it solves."""
from __future__ import annotations

from pathlib import Path

import pytest

from codesign.platform.endpoint import NPU, Engine, Option
from codesign.platform.topology import Dim, Topology
from codesign.problem.model import Objective, Problem, ScheduleSpec, SolverSpec
from codesign.workload.model import Comm, Compute, Layer, Workload

ROOT = Path(__file__).resolve().parent.parent


def two_layer_workload(nbytes: float = 1e6, t: float = 10e-6, update: float = 0.0) -> Workload:
    """Two layers of 10 us per compute task, each all-reducing ``nbytes`` of weight gradients."""
    def layer(name: str) -> Layer:
        return Layer(name, Compute(time_s=t), Compute(time_s=t), Compute(time_s=t),
                     weight_grad_comm=Comm("all_reduce", nbytes), update_s=update)
    return Workload("two", "data", (layer("l1"), layer("l2")))


def ring2(bandwidth: float = 100e9) -> Topology:
    """Two NPUs on one ring, one link: an all-reduce of S bytes puts S bytes on the wire per NPU."""
    return Topology((Dim("d0", "ring", 2, 1, bandwidth, 0.0),))


def problem(workload: Workload, topology: Topology, engine: Engine, *, npu: NPU | None = None,
            objective: Objective | None = None, order: str = "lifo", chunks: int = 1) -> Problem:
    return Problem("test", workload, topology, npu or NPU(hbm_bandwidth=900e9, cores=80, core_reduce_rate=25e9,
                                                           compute_hbm_utilization=0.5),
                   engine, objective or Objective(), ScheduleSpec(order, chunks), SolverSpec(time_limit_s=30))


def ace(dma: list[tuple[float, float]], *, alu: float = 1e12, sram: float = 64 * 2**20, **kw) -> Engine:
    """An ACE with fixed ALU and SRAM and DMA options given as (bytes/s, mm^2)."""
    return Engine("ace", {"sram": (Option(sram),), "alu": (Option(alu),),
                          "dma": tuple(Option(v, a) for v, a in dma)}, **kw)


@pytest.fixture
def root() -> Path:
    return ROOT
