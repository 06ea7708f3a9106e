"""Model diagnostics for ``--verbose``: how big a model is, how big its big-M constants are, and how far
its LP relaxation's bound is from the final bound (the strength of a formulation in one number).

Two sources: a Pyomo model (the LIFO/FIFO co-design model of ``model.py``, or the naive baseline of
``benchmarks/naive_bigm.py``) and an ``order_solve.OrderResult`` (the decomposition behind
``order: optimize``). Both become a plain dict, so the Solution can carry it into JSON.
Bounds are in the objective's unit (microseconds for the iteration time, mm^2, W).
"""
from __future__ import annotations

import math
import time
from typing import Any

import pyomo.environ as pyo


def largest_big_m(m: pyo.ConcreteModel) -> float:
    """The largest |coefficient| of a binary variable in any constraint: for a disjunctive (big-M) model
    this is its largest M; for the co-design model, the largest duration an option can add."""
    from pyomo.repn import generate_standard_repn
    big = 0.0
    for c in m.component_data_objects(pyo.Constraint, active=True):
        repn = generate_standard_repn(c.body, compute_values=True, quadratic=False)
        for v, coef in zip(repn.linear_vars, repn.linear_coefs):
            if v.is_binary() and not v.fixed:
                big = max(big, abs(float(coef)))
    return big


def lp_relaxation_bound(m: pyo.ConcreteModel, time_limit_s: float = 60.0) -> float | None:
    """The LP relaxation's optimum of ``m`` (binaries relaxed to [0, 1]) on a clone, through HiGHS."""
    from pyomo.contrib.solver.common.factory import SolverFactory
    from pyomo.contrib.solver.common.results import TerminationCondition as TC
    r = m.clone()
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(r)
    res = SolverFactory("highs").solve(r, load_solutions=False, raise_exception_on_nonoptimal_result=False,
                                       time_limit=time_limit_s, solver_options={"output_flag": False})
    if res.termination_condition != TC.convergenceCriteriaSatisfied:
        return None
    return res.incumbent_objective


def pyomo_diagnostics(m: pyo.ConcreteModel, final_bound: float | None, *, lp: bool = True) -> dict[str, Any]:
    """Counts, the largest big-M and the root LP bound against ``final_bound`` for a Pyomo model."""
    from .highs import model_size
    size = model_size(m)
    t0 = time.perf_counter()
    root = lp_relaxation_bound(m) if lp else None
    return {"kind": "pyomo", "variables": size.variables, "binaries": size.binaries,
            "constraints": size.constraints, "largest_big_m": largest_big_m(m), "root_lp_bound": root,
            "final_bound": final_bound, "lp_time_s": time.perf_counter() - t0}


def order_diagnostics(res) -> dict[str, Any]:
    """What the order decomposition did (``order_solve.OrderResult``): designs enumerated, dropped,
    pruned and solved; the largest order MILP; root LP against final bound where a MILP ran."""
    recs = res.records
    how: dict[str, int] = {}
    for r in recs:
        how[r.how] = how.get(r.how, 0) + 1
    milps = [r for r in recs if r.milp_size is not None]
    largest = max(milps, key=lambda r: r.milp_size[0]).milp_size if milps else (0, 0, 0)
    chosen = next((r for r in recs if r.choice == res.choice), None)
    roots = [r.root_lp_us for r in milps if r.root_lp_us is not None]
    return {"kind": "order", "designs_in_budget": res.budget_feasible, "dominated": res.dominated,
            "settled": how, "milps": len(milps), "variables": largest[0], "binaries": largest[1],
            "constraints": largest[2], "largest_big_m": 0.0,
            "milp_time_s": sum(r.milp_time_s for r in recs), "nodes": sum(r.nodes for r in recs),
            "lp_time_s": sum(r.lp_time_s for r in recs),
            "selections": sum(r.selections for r in recs), "fixed_columns": sum(r.fixed for r in recs),
            "root_lp_bound": min(roots) if roots else None,
            "horn_bound": min(r.lower_us for r in recs) if recs else None,
            "chosen_design_bound": chosen.lower_us if chosen else None,
            "final_bound": res.bound_us}


def _num(x: float | None, unit: str) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.6g} {unit}".strip()


def diagnostics_lines(d: dict[str, Any], unit: str = "us") -> list[str]:
    """Readable lines of a diagnostics dict (``--verbose``)."""
    if not d:
        return []
    lines = [(f"model size      {d['variables']} variables, {d['binaries']} binaries, {d['constraints']} "
              f"constraints; largest big-M {d['largest_big_m']:.6g}")]
    if d["kind"] == "order":
        settled = ", ".join(f"{k} {v}" for k, v in sorted(d["settled"].items()))
        lines[0] = (f"order solve     {d['designs_in_budget']} designs in budget, {d['dominated']} dominated, "
                    f"of the rest: {settled}")
        lines.append(f"order MILPs     {d['milps']} solved by HiGHS ({d['milp_time_s']:.2f} s, {d['nodes']} nodes, "
                     f"{d['selections']} immediate selections, {d['fixed_columns']} columns fixed by windows and "
                     f"reduced costs); largest {d['variables']} variables, "
                     f"{d['binaries']} binaries, {d['constraints']} constraints; no big-M (largest 0)")
        lines.append(f"bounds          Horn (preemptive) {_num(d['horn_bound'], unit)}, root LP "
                     f"{_num(d['root_lp_bound'], unit)}, final {_num(d['final_bound'], unit)}")
    else:
        lines.append(f"bounds          root LP {_num(d['root_lp_bound'], unit)}, final {_num(d['final_bound'], unit)}")
    return lines
