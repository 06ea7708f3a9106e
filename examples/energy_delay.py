"""A custom objective with the ``extra`` hook: the least energy per iteration, E = power x T.

Two ways, which must agree:

1. Linearized, in one MILP. Power is a sum over the option binaries, power = p0 + sum p[r,o] y[r,o], so
   E = p0 T + sum p[r,o] (y[r,o] T). Each product of a binary and T is a new variable z[r,o] >= 0 with
   z[r,o] >= T - M (1 - y[r,o]), M an upper bound on T: since p >= 0 and we minimize, z[r,o] = y[r,o] T
   exactly (the McCormick envelope is exact for a binary times a bounded variable). The hook deactivates the
   model's objective ``obj`` and adds ``energy_obj``. (solve() still reports T and its tie-break keeps
   T <= the optimum's T; a Solution's ``bound_s`` is then the energy bound, not a time bound: ignore it.)
2. By epsilon constraints: any objective that grows with both power and T is minimized at a point of the
   power-time Pareto front, so trace the front (codesign.explore.pareto.pareto_front) and take the best point.
   That also gives objectives no MILP can take linearly, such as the energy-delay product E x T = power T^2.

On the quickstart the two agree exactly. They can differ on bigger problems (ResNet-50: 1908.5 uJ by the
MILP, 1865.6 uJ on the front): each MILP is optimal for the network order its fixed point settled on
(README, "The network order"), and the front's many solves visit more orders than the one MILP does.

Run:  python examples/energy_delay.py [problem.yaml]
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pyomo.environ as pyo

import codesign
from codesign.explore.pareto import pareto_front
from codesign.milp.data import TIME_UNIT, model_data
from codesign.pipeline.solve import durations

HERE = Path(__file__).resolve().parent


def period_upper_bound_us(problem: codesign.Problem) -> float:
    """A safe M: every task at its slowest over all designs, run one after another (microseconds), x2."""
    md = model_data(problem)
    res = problem.engine.resources
    worst_c: list[float] = []
    worst_k: list[float] = []
    for combo in itertools.product(*(range(len(o)) for o in res.values())):
        pc, dc = durations(md, dict(zip(res, combo)))
        worst_c = [max(a, b) for a, b in zip(worst_c, pc)] if worst_c else list(pc)
        worst_k = [max(a, b) for a, b in zip(worst_k, dc)] if worst_k else list(dc)
    updates = sum(layer.update_s for layer in problem.workload.layers)
    return 2 * (sum(worst_c) + sum(worst_k) + updates) / TIME_UNIT


def energy_objective(model: pyo.ConcreteModel, problem: codesign.Problem) -> None:
    """Replace the objective by energy per iteration, power (W) x T (us) = microjoules, linearized."""
    eng = problem.engine
    M = period_upper_bound_us(problem)
    model.z = pyo.Var(model.OPT, domain=pyo.NonNegativeReals)
    model.z_is_yT = pyo.Constraint(model.OPT, rule=lambda m, r, o: m.z[r, o] >= m.T - M * (1 - m.y[r, o]))
    p0 = eng.fixed_power_w + sum(opts[0].power_w for r, opts in eng.resources.items() if r not in eng.sized)
    model.energy = pyo.Expression(expr=p0 * model.T + sum(eng.options(r)[o].power_w * model.z[r, o]
                                                            for r, o in model.OPT))
    model.obj.deactivate()
    model.energy_obj = pyo.Objective(expr=model.energy, sense=pyo.minimize)
    model.T.setub(M)  # the linearization is exact only while T <= M; make it a hard bound, not a hope


def main(path: str) -> tuple[float, float]:
    problem = codesign.load_problem(path)
    s = codesign.solve(problem, extra=energy_objective)
    e_milp = s.power_w * s.iteration_time_s
    print(f"linearized MILP   E = {e_milp * 1e6:.3f} uJ per iteration: power {s.power_w:.3g} W, "
          f"T {s.iteration_time_s * 1e6:.2f} us, area {s.area_mm2:.3g} mm^2")
    front = pareto_front(problem, x="iteration_time", y="power")
    best_e = min(front.points, key=lambda p: p.x * p.y)
    best_edp = min(front.points, key=lambda p: p.y * p.x ** 2)
    print(f"power-time front  {len(front.points)} points; least E = {best_e.x * best_e.y * 1e6:.3f} uJ at power "
          f"{best_e.y:.3g} W, T {best_e.x * 1e6:.2f} us")
    print(f"                  least E x T = {best_edp.y * best_edp.x ** 2 * 1e9:.4g} uJ*ms at power "
          f"{best_edp.y:.3g} W, T {best_edp.x * 1e6:.2f} us")
    print(f"time-optimal      E = {front.points[0].x * front.points[0].y * 1e6:.3f} uJ (for comparison)")
    e_front = best_e.x * best_e.y
    same = abs(e_milp - e_front) <= 1e-6 * e_front
    print("the two methods agree" if same else "the two methods differ: each MILP is optimal for its own network "
          "order, and the front's solves visit more orders (see the docstring)")
    return e_milp, e_front


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(HERE.parent / "problems" / "quickstart.yaml"))
