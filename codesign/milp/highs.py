"""Solving a Pyomo model with HiGHS and reporting what came back, honestly.

Uses Pyomo's newer solver interface (``pyomo.contrib.solver``), which reports the termination
condition, the incumbent and the best bound without raising on a non-optimal result.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.contrib.solver.common.results import TerminationCondition as TC

from ..problem.model import SolverSpec
from .size import ModelSize


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


# ---------------------------------------------------------------------------------------------------
# highspy's own API, for models built as arrays (order_model.py): no Pyomo translation, MIP starts,
# and an objective cutoff.

@dataclass(frozen=True)
class ArrayModel:
    """A MILP as arrays: minimize cost @ x subject to row_lo <= A x <= row_hi, col_lo <= x <= col_hi;
    A given as COO triplets; ``integer[j]`` marks integer (here: binary) columns."""

    cost: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    integer: np.ndarray
    row_lo: np.ndarray
    row_hi: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray

    @property
    def size(self) -> ModelSize:
        return ModelSize(len(self.cost), int(self.integer.sum()), len(self.row_lo))


@dataclass(frozen=True)
class ArrayResult:
    """What HiGHS said about an ArrayModel: status optimal | time_limit | cutoff (no solution better than
    the cutoff exists: the cutoff is a proven bound) | infeasible | error; ``x`` the incumbent or None."""

    status: str
    objective: float | None
    bound: float | None
    x: np.ndarray | None
    solve_time_s: float
    nodes: int


def new_highs():
    """A silent highspy.Highs, its start-up banner kept off stdout (``--json`` prints only JSON there)."""
    import os
    import sys
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            import highspy
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    h.setOptionValue("output_flag", False)
    return h


def _pass(h, m: ArrayModel, relax: bool = False) -> None:
    import highspy
    lp = highspy.HighsLp()
    n, r = len(m.cost), len(m.row_lo)
    lp.num_col_, lp.num_row_ = n, r
    lp.col_cost_ = np.asarray(m.cost, dtype=float)
    lp.col_lower_ = np.asarray(m.col_lo, dtype=float)
    lp.col_upper_ = np.asarray(m.col_hi, dtype=float)
    lp.row_lower_ = np.asarray(m.row_lo, dtype=float)
    lp.row_upper_ = np.asarray(m.row_hi, dtype=float)
    order = np.lexsort((m.rows, m.cols))
    cols = np.asarray(m.cols)[order]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.searchsorted(cols, np.arange(n + 1)).astype(np.int32)
    lp.a_matrix_.index_ = np.asarray(m.rows)[order].astype(np.int32)
    lp.a_matrix_.value_ = np.asarray(m.vals, dtype=float)[order]
    if not relax and m.integer.any():
        lp.integrality_ = [highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous
                           for b in m.integer]
    h.passModel(lp)


def solve_arrays(m: ArrayModel, *, time_limit_s: float, rel_gap: float, threads: int = 1, presolve: bool = True,
                 start: np.ndarray | None = None, cutoff: float | None = None) -> ArrayResult:
    """Solve ``m`` with HiGHS. ``start``: a feasible point handed over as the MIP start. ``cutoff``: only
    solutions with objective below it are wanted; if HiGHS proves there are none, status is ``cutoff``."""
    import highspy
    h = new_highs()
    # HiGHS keeps one thread pool per process, sized by the first solve; a solve asking for another
    # size fails unless the pool is reset first (and reset after, for the next solver in this process)
    h.resetGlobalScheduler(True)
    h.setOptionValue("time_limit", max(0.01, float(time_limit_s)))
    h.setOptionValue("mip_rel_gap", float(rel_gap))
    h.setOptionValue("threads", int(threads))
    h.setOptionValue("presolve", "on" if presolve else "off")
    if cutoff is not None:
        h.setOptionValue("objective_bound", float(cutoff))
    _pass(h, m)
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(np.asarray(start, dtype=float))
        h.setSolution(sol)
    t0 = time.perf_counter()
    h.run()
    wall = time.perf_counter() - t0
    h.resetGlobalScheduler(True)
    ms = h.getModelStatus()
    info = h.getInfo()
    S = highspy.HighsModelStatus
    has = info.primal_solution_status == highspy.kSolutionStatusFeasible
    x = np.array(h.getSolution().col_value) if has else None
    obj = info.objective_function_value if has else None
    bound = info.mip_dual_bound
    bound = bound if bound is not None and math.isfinite(bound) else None
    if ms == S.kOptimal:
        status = "optimal"
    elif ms in (S.kTimeLimit, S.kIterationLimit, S.kInterrupt, S.kSolutionLimit):
        status = "time_limit"
    elif ms == S.kObjectiveBound or (ms == S.kInfeasible and cutoff is not None):
        status = "cutoff"
    elif ms in (S.kInfeasible, S.kUnboundedOrInfeasible):
        status = "infeasible"
    else:
        status = "error"
    return ArrayResult(status, obj, bound, x, wall, int(info.mip_node_count))
