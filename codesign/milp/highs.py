"""Solving a Pyomo model with HiGHS and reporting what came back, honestly.

Uses Pyomo's newer solver interface (``pyomo.contrib.solver``), which reports the termination
condition, the incumbent and the best bound without raising on a non-optimal result.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import pyomo.environ as pyo
from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.contrib.solver.common.results import TerminationCondition as TC

from ..problem import SolverSpec


@dataclass(frozen=True)
class ModelSize:
    variables: int
    binaries: int
    constraints: int


@dataclass(frozen=True)
class SolveStats:
    """What the solver said: ``status`` is optimal | time_limit | infeasible | error; objective and bound
    are in the objective's units (microseconds for time, mm^2, W); gap is relative."""

    status: str
    termination: str
    objective: float | None
    bound: float | None
    gap: float | None
    solve_time_s: float
    size: ModelSize
    has_solution: bool


def model_size(m: pyo.ConcreteModel) -> ModelSize:
    """Counts of the variables HiGHS sees (fixed ones are presolved away by Pyomo) and active constraints."""
    vs = [v for v in m.component_data_objects(pyo.Var, active=True) if not v.fixed]
    ncons = sum(1 for _ in m.component_data_objects(pyo.Constraint, active=True))
    return ModelSize(len(vs), sum(1 for v in vs if v.is_binary()), ncons)


def solve_model(m: pyo.ConcreteModel, spec: SolverSpec, time_limit_s: float | None = None) -> SolveStats:
    """Solve with HiGHS; load the incumbent into the model when there is one."""
    solver = SolverFactory("highs")
    limit = time_limit_s if time_limit_s is not None else spec.time_limit_s
    t0 = time.perf_counter()
    res = solver.solve(m, load_solutions=False, raise_exception_on_nonoptimal_result=False, tee=False,
                       time_limit=limit, rel_gap=spec.mip_gap, threads=spec.threads,
                       solver_options={"presolve": "on" if spec.presolve else "off", "output_flag": False})
    wall = time.perf_counter() - t0
    tc = res.termination_condition
    inc = res.incumbent_objective
    bound = res.objective_bound
    has = inc is not None and math.isfinite(inc)
    if has:
        res.solution_loader.load_vars()
    if tc == TC.convergenceCriteriaSatisfied:
        status = "optimal"
    elif tc in (TC.maxTimeLimit, TC.iterationLimit, TC.interrupted):
        status = "time_limit"
    elif tc in (TC.provenInfeasible, TC.infeasibleOrUnbounded, TC.locallyInfeasible):
        status = "infeasible"
    else:
        status = "error"
    if bound is not None and not math.isfinite(bound):
        bound = None
    gap = None
    if has and bound is not None:
        gap = abs(inc - bound) / max(abs(inc), 1e-12)
    return SolveStats(status, tc.name, inc if has else None, bound, gap, wall, model_size(m), has)
