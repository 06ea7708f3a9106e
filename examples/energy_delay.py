"""A custom objective with the ``extra`` hook: the least energy per iteration, E = power x T.

Two ways, which must agree:

1. Linearized, in one MILP. Power is a sum over the option binaries, power = p0 + sum p[r,o] y[r,o], so
   E = p0 T + sum p[r,o] (y[r,o] T). Each product of a binary and T is a new variable z[r,o] >= 0 with
   z[r,o] >= T - M (1 - y[r,o]), M an upper bound on T: since p >= 0 and we minimize, z[r,o] = y[r,o] T
   exactly (the McCormick envelope is exact for a binary times a bounded variable). The hook deactivates the
   model's objective ``obj`` and adds ``energy_obj``; T in the master is the simulated period of every
   design the search evaluated, so the energy it minimizes is the simulated one. (A Solution then reports
   the hook's objective as "custom", and ``bound_s`` is None: the bound is on energy, not time.)
2. By epsilon constraints: any objective that grows with both power and T is minimized at a point of the
   power-time Pareto front, so trace the front (codesign.explore.pareto.pareto_front) and take the best point.
   That also gives objectives no MILP can take linearly, such as the energy-delay product E x T = power T^2.

Both are exact about the simulated platform, so they agree (on the quickstart, and on ResNet-50). The
linearization prices the engine's options: a problem that also sizes its network's bandwidths is refused.

Run:  python examples/energy_delay.py [problem.yaml]
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pyomo.environ as pyo

import codesign
from codesign.explore.pareto import pareto_front
from codesign.milp.data import TIME_UNIT
from codesign.platform.endpoint import design_of
from codesign.sim.replay import simulate

HERE = Path(__file__).resolve().parent


def period_upper_bound_us(problem: codesign.Problem) -> float:
    """A safe M (microseconds): twice the slowest design's simulated period. The catalog here is small
    enough to replay every design; on a large one, bound the period by a design you know is slow."""
    res = problem.engine.resources
    slowest = max(simulate(problem, design_of(problem.engine, dict(zip(res, combo)))).period_s
                  for combo in itertools.product(*(range(len(o)) for o in res.values())))
    return 2 * slowest / TIME_UNIT


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
    if problem.network is not None:
        raise codesign.SpecError("this example's energy prices the engine's options, and the problem also sizes "
                                 "its network's bandwidths; give one whose bandwidths are fixed", file=path)
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
    print("the two methods agree" if same else "the two methods differ")
    return e_milp, e_front


if __name__ == "__main__":
    try:
        main(sys.argv[1] if len(sys.argv) > 1 else str(HERE.parent / "problems" / "quickstart.yaml"))
    except codesign.CodesignError as e:  # a problem this example does not suit, or bad input: one line
        print(f"{Path(__file__).name}: {e}", file=sys.stderr)
        sys.exit(e.exit_status)
