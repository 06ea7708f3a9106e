"""A proven lower bound on the iteration time of a design, valid for the MILP and the simulator alike.

Whatever the order and however work overlaps, one iteration must fit, in its period T:
- all compute, at no more than the full NPU's speed: T >= sum of compute times at the full NPU;
- every chunk-phase of every collective on its dimension, which serves one at a time, each taking at
  least its link time: T >= sum of link times per dimension;
- all communication memory traffic and reduction work through the engine's pools:
  T >= bytes / pool rate, per pool.
Times in seconds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..platform.costs import collective_demands, compute_time_terms, resource_time
from ..platform.endpoint import Design
from ..platform.pools import Pools, phase_work
from ..problem.model import Problem
from .iteration import build_iteration


@dataclass(frozen=True)
class LowerBound:
    """The bound (s) and each resource's term (s), by name: compute, dim<i>:<name>, memory, reduction."""

    bound_s: float
    terms: dict[str, float]

    @property
    def binding(self) -> str:
        return max(self.terms, key=self.terms.get)


def lower_bound(problem: Problem, design: Design) -> LowerBound:
    it = build_iteration(problem.workload, problem.schedule.overlap)
    npu = problem.npu
    pools = Pools.of(problem.engine, npu, design)
    terms = {"compute": sum(max(compute_time_terms(c.demand, npu, npu.cores, npu.hbm_bandwidth))
                            for c in it.computes)}
    dims = problem.topology.dims
    for d, dim in enumerate(dims):
        terms[f"dim{d}:{dim.name}"] = 0.0
    mem = red = 0.0
    for c in it.comms:
        k = problem.schedule.chunks
        dem = collective_demands(c.comm, problem.topology, problem.engine, k)
        for i, d in enumerate(dem.phase_dims):
            w = phase_work(dem, i, problem.engine, 0.0)
            terms[f"dim{d}:{dims[d].name}"] += k * w.link_s
            mem += k * w.memory_bytes
            red += k * w.reduce_bytes
    if math.isfinite(pools.memory):
        terms["memory"] = resource_time(mem, pools.memory)
    if math.isfinite(pools.reduction):
        terms["reduction"] = resource_time(red, pools.reduction)
    return LowerBound(max(terms.values()), terms)
