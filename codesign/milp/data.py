"""Everything the MILP needs, precomputed from the problem with the shared cost functions.

Every time in the model depends on at most one sized resource, so it is a ``Term``: the resource (or
None) and its value per option of that resource; the model writes it as sum_o y[r, o] * coeff[o],
which keeps durations linear in the option binaries.

Time coefficients are in the model's time unit (TIME_UNIT seconds): HiGHS's tolerances are absolute
(about 1e-7), so a model written in seconds would lose nanosecond latencies in the noise.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..platform.costs import (CollectiveDemands, collective_demands, compute_slowdowns, compute_time_terms,
                              endpoint_rates, phase_resource_times, sram_interval)
from ..platform.endpoint import Design, Engine
from ..problem.model import Problem
from ..schedule.iteration import Iteration, build_iteration

TIME_UNIT = 1e-6  # seconds per model time unit: the MILP's clock runs in microseconds

#: The endpoint rate (costs.endpoint_rates key) that each sized resource sets.
RATE_OF = {"comm_hbm_share": "hbm", "comm_cores": "cores", "alu": "alu", "dma": "dma", "sram": "sram"}
#: Per engine, the resource that sets the cores left to compute and the one that sets the HBM left.
COMPUTE_DRIVERS = {"baseline": ("comm_cores", "comm_hbm_share"), "ace": (None, "dma"), "ideal": (None, None)}
#: Per engine, the resource behind each endpoint time of a phase.
PHASE_DRIVERS = {"baseline": {"hbm": "comm_hbm_share", "cores": "comm_cores"}, "ace": {"alu": "alu", "dma": "dma"},
                 "ideal": {}}


@dataclass(frozen=True)
class Term:
    """A time (model units) that depends on ``resource``'s option: ``coeffs[o]``; constant if resource is None."""

    resource: str | None
    coeffs: tuple[float, ...]


@dataclass
class ModelData:
    problem: Problem
    iteration: Iteration
    demands: list[CollectiveDemands]

    @property
    def engine(self) -> Engine:
        return self.problem.engine

    def _values(self, resource: str | None) -> list[float | None]:
        return [o.value for o in self.engine.options(resource)] if resource else [None]

    def _term(self, resource: str | None, f) -> Term:
        return Term(resource, tuple(f(v) / TIME_UNIT for v in self._values(resource)))

    def _rates(self, resource: str | None, value: float | None) -> dict[str, float]:
        """Endpoint rates with ``resource`` at ``value`` (the others are not read by the caller)."""
        vals = {} if resource is None else {resource: value}
        return endpoint_rates(self.engine, self.problem.npu, Design(self.engine.kind, vals))

    def phase_terms(self, k: int, i: int) -> list[Term]:
        """The endpoint times of a chunk in phase i of collective k, one Term per endpoint resource."""
        dem, kind = self.demands[k], self.engine.kind
        return [self._term(res, lambda v, rk=rk, res=res: phase_resource_times(dem, i, kind, self._rates(res, v))[rk])
                for rk, res in PHASE_DRIVERS[kind].items()]

    def sram_term(self, k: int) -> Term:
        return self._term("sram", lambda v: sram_interval(self.demands[k], v))

    def compute_terms(self, j: int) -> list[Term]:
        """The core-bound and memory-bound times of compute task j; its duration is the larger."""
        task, npu, kind = self.iteration.computes[j].demand, self.problem.npu, self.engine.kind
        out = []
        for which, res in enumerate(COMPUTE_DRIVERS[kind]):
            def f(v: float | None, res=res, which=which) -> float:
                vals = {} if res is None else {res: v}
                left = compute_slowdowns(self.engine, npu, Design(kind, vals))
                return compute_time_terms(task, npu, *left)[which]
            out.append(self._term(res, f))
        return out


def model_data(problem: Problem) -> ModelData:
    it = build_iteration(problem.workload, problem.schedule.overlap)
    dem = [collective_demands(c.comm, problem.topology, problem.engine, problem.schedule.chunks) for c in it.comms]
    return ModelData(problem, it, dem)
