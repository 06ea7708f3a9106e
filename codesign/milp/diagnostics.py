"""Model diagnostics for ``--verbose``: how big a model is, how big its big-M constants are, and how far
its LP relaxation's bound is from the final bound (the strength of a formulation in one number).

The model is the design master (``master.py``); the search adds what it evaluated. It all becomes a
plain dict, so the Solution can carry it into JSON.
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
    from pyomo.contrib.solver.common.results import TerminationCondition as TC

    from .highs import pyomo_highs
    r = m.clone()
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(r)
    res = pyomo_highs(r, time_limit=time_limit_s)
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


def search_diagnostics(master, res, search) -> dict[str, Any]:
    """What the design search did (``pipeline/search.py``): the master's size, largest big-M and root LP
    bound against the final bound, the interval cuts it added, and every design the simulator evaluated
    (its options, simulated period, the period its cut carries, and its plateau)."""
    d = pyomo_diagnostics(master.model, res.bound)
    d.update(kind="search", master_solves=res.master_solves, interval_cuts=len(master.model.interval),
             evaluations=[{"choice": dict(v.choice), "simulated_us": v.simulated_us,
                           "cut_us": v.evaluation.period_us, "plateau": sorted(v.evaluation.plateau)}
                          for v in search.visits])
    return d


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
    lines.append(f"bounds          root LP {_num(d['root_lp_bound'], unit)}, final {_num(d['final_bound'], unit)}")
    if d.get("kind") == "search":
        lines.append(f"search          {d['master_solves']} master solves, {d['interval_cuts']} interval cuts, "
                     f"{len(d['evaluations'])} designs evaluated in the simulator:")
        for e in d["evaluations"]:
            opts = ", ".join(f"{r} #{o}" for r, o in e["choice"].items())
            plateau = f"; also covers larger {', '.join(e['plateau'])}" if e["plateau"] else ""
            lines.append(f"                {opts}: simulated {e['simulated_us']:.6g} us, cut {e['cut_us']:.6g} us"
                         f"{plateau}")
    return lines
