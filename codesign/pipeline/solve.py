"""One solve, end to end: problem -> MILP(s) on HiGHS -> Solution.

The network order is a policy (LIFO or FIFO), but which collectives wait for which depends on their
durations, and those depend on the design. So the solve is a fixed point: replay the policy at a design
to get the order, solve the MILP for the best design under that order, and repeat until the policy
replayed at the MILP's design gives back the order the MILP used (usually one or two rounds). The
result is optimal for that order, and the order is the one the policy really produces at that design.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

import pyomo.environ as pyo

from ..errors import InfeasibleError, SolverError
from ..milp.data import TIME_UNIT, ModelData, model_data
from ..milp.highs import SolveStats, solve_model
from ..milp.model import build_model
from ..platform.costs import collective_time, compute_time
from ..platform.endpoint import design_area_mm2, design_of, design_power_w
from ..problem.model import Problem
from ..schedule.serial import Order, SerialReplay, run_policy, run_sequence
from ..spec.units import SECONDS, format_quantity
from .solution import ScheduledTask, Solution

MAX_ROUNDS = 5
Extra = Callable[[pyo.ConcreteModel, Problem], None]


def durations(md: ModelData, choice: dict[str, int]) -> tuple[list[float], list[float]]:
    """Compute and collective durations (s) at a design, from the shared cost functions."""
    p = md.problem
    design = design_of(p.engine, choice)
    pc = [compute_time(c.demand, p.engine, p.npu, design) for c in md.iteration.computes]
    dc = [collective_time(dem, p.engine, p.npu, design) for dem in md.demands]
    return pc, dc


def replay_policy(md: ModelData, choice: dict[str, int]) -> SerialReplay:
    pc, dc = durations(md, choice)
    return run_policy(md.iteration, pc, dc, md.problem.schedule.order)


def _first_guess(md: ModelData) -> dict[str, int]:
    """The design the first round's order is replayed at: the middle option of each resource."""
    return {r: (len(opts) - 1) // 2 for r, opts in md.engine.resources.items()}


def _choice_from(m: pyo.ConcreteModel, md: ModelData) -> dict[str, int]:
    choice = {}
    for r, opts in md.engine.resources.items():
        if r in md.engine.sized:
            choice[r] = max(range(len(opts)), key=lambda o: pyo.value(m.y[r, o]))
        else:
            choice[r] = 0
    return choice


def precheck(p: Problem) -> None:
    """Budgets no configuration can meet, said in the user's terms before any solve."""
    e = p.engine
    if e.area_budget_mm2 is not None and e.min_area_mm2() > e.area_budget_mm2 + 1e-12:
        raise InfeasibleError(f"area budget {e.area_budget_mm2:g} mm^2 < smallest configuration "
                              f"{e.min_area_mm2():g} mm^2 (short by {e.min_area_mm2() - e.area_budget_mm2:g} mm^2)")
    if e.power_budget_w is not None and e.min_power_w() > e.power_budget_w + 1e-12:
        raise InfeasibleError(f"power budget {e.power_budget_w:g} W < smallest configuration "
                              f"{e.min_power_w():g} W (short by {e.min_power_w() - e.power_budget_w:g} W)")


def _explain_infeasible(md: ModelData, order: Order, extra: Extra | None, time_left: float) -> str:
    """Why the MILP is infeasible, by re-solving relaxed versions of it."""
    p = md.problem
    spec = p.solver
    if extra is not None:
        base = build_model(md, order)
        if solve_model(base, spec, time_left).status != "infeasible":
            return "the problem is feasible without your extra constraints; they make it infeasible"
    if p.objective.iteration_time_target_s is not None:
        m = build_model(md, order, objective="iteration_time")  # same budgets, no target
        st = solve_model(m, spec, time_left)
        if st.has_solution:
            best = st.objective * TIME_UNIT
            target = p.objective.iteration_time_target_s
            return (f"iteration-time target {format_quantity(target, SECONDS)} < best achievable "
                    f"{format_quantity(best, SECONDS)} within the budgets (short by "
                    f"{format_quantity(best - target, SECONDS)})")
    e = p.engine
    if e.area_budget_mm2 is not None and e.power_budget_w is not None:
        m = build_model(md, order, objective="area")
        m.del_component(m.area_budget)
        if hasattr(m, "time_target"):
            m.del_component(m.time_target)
        st = solve_model(m, spec, time_left)
        if st.has_solution:
            return (f"no configuration meets both budgets: area budget {e.area_budget_mm2:g} mm^2 < smallest area "
                    f"{st.objective:g} mm^2 among configurations within the power budget {e.power_budget_w:g} W")
    return "the constraints admit no schedule (check budgets, targets and extra constraints)"


def solve(problem: Problem, *, time_limit: float | None = None, extra: Extra | None = None,
          diagnose: bool = False, refine_s: float = 0.0) -> Solution:
    """Solve ``problem``: choose the engine design and report the steady-state schedule.

    ``time_limit`` (s) overrides the problem's solver time limit and bounds the whole solve. ``extra``,
    if given, is called as ``extra(model, problem)`` after each model is built and before it is solved
    (README: "Adding your own constraints"). ``diagnose`` adds model diagnostics (sizes, largest big-M,
    the LP relaxation's bound against the final bound) to ``Solution.diagnostics``, at the cost of an
    LP solve. With ``schedule: {order: optimize}`` the order is chosen with the design
    (``milp/order_solve.py``); ``refine_s`` seconds then go to refining, at the chosen design, the
    dispatch priorities the chunk-grain replay uses (``Solution.priority``, milp/flowshop.py).
    Raises InfeasibleError (with the reason) or SolverError.
    """
    precheck(problem)
    md = model_data(problem)
    limit = time_limit if time_limit is not None else problem.solver.time_limit_s
    t_start = time.perf_counter()
    if problem.schedule.order == "optimize":
        if extra is not None:
            from ..errors import SpecError
            raise SpecError("extra constraints need the Pyomo model of a fixed network order; order: optimize "
                            "decomposes into highspy subproblems: use order lifo or fifo with extra",
                            path="schedule.order")
        return _solve_optimized(md, limit, t_start, diagnose, refine_s)
    choice = _first_guess(md)
    if problem.objective.minimize != "iteration_time" and md.engine.sized:
        # a time target is met, if at all, near the fastest designs: take the first order from there
        # (the middle design's order can make a meetable target look infeasible)
        fastest = dataclasses.replace(problem, objective=dataclasses.replace(problem.objective,
                                                                             minimize="iteration_time"))
        choice = solve(fastest, time_limit=max(0.1, limit / 2), extra=extra).choice
    used: Order | None = None
    stats: SolveStats | None = None
    model = None
    stable = False
    rounds = 0
    seen: list[Order] = []
    last_model = None
    for rounds in range(1, MAX_ROUNDS + 1):
        order = replay_policy(md, choice).order
        if order == used:
            stable = True
            rounds -= 1
            break
        if order in seen:  # a cycle between orders: keep the last solve, say so below
            break
        seen.append(order)
        left = max(0.1, limit - (time.perf_counter() - t_start))
        model = build_model(md, order)
        if extra is not None:
            extra(model, problem)
        round_stats = solve_model(model, problem.solver, left)
        if round_stats.status == "infeasible":
            if used is None:
                raise InfeasibleError(_explain_infeasible(md, order, extra, left))
            model = last_model  # a later round's order cannot meet the target: keep the last answer
            break
        stats = round_stats
        if not stats.has_solution:
            bound = f"; best bound {stats.bound:.6g}" if stats.bound is not None else ""
            raise SolverError(f"HiGHS stopped ({stats.termination}) after {stats.solve_time_s:.1f} s without a "
                              f"feasible design{bound}; raise the time limit (--time-limit) or relax the problem")
        choice = _choice_from(model, md)
        used = order
        last_model = model
    else:
        stable = replay_policy(md, choice).order == used
    assert stats is not None and model is not None and used is not None
    if stats.status == "optimal":
        choice, used = _tie_break(md, used, choice, model, extra,
                                  max(0.1, limit - (time.perf_counter() - t_start)))
        stable = stable and replay_policy(md, choice).order == used
    sol = _solution(md, choice, used, stats, model, rounds, stable, time.perf_counter() - t_start)
    if diagnose:
        from ..milp.diagnostics import pyomo_diagnostics
        sol = dataclasses.replace(sol, diagnostics=pyomo_diagnostics(model, stats.bound))
    return sol


def _solve_optimized(md: ModelData, limit: float, t_start: float, diagnose: bool,
                     refine_s: float = 0.0) -> Solution:
    """``order: optimize``: design and order from the decomposition, reported like a policy solve, plus
    the LIFO and FIFO periods at the chosen design (serial network model) for comparison, the
    flow-shop bound on the simulated period, and (``refine_s`` > 0) priorities refined for the replay."""
    from ..milp.diagnostics import order_diagnostics
    from ..milp.flowshop import flow_shop, list_schedule, refine_priority, replay_bound
    from ..milp.order_solve import solve_order
    from ..milp.size import ModelSize
    res = solve_order(md, time_limit_s=limit, diagnose=diagnose)
    d = order_diagnostics(res)
    size = ModelSize(d["variables"], d["binaries"], d["constraints"])
    p = md.problem
    stats = SolveStats(res.status, "enumerate_and_bound", res.objective, res.bound_us, res.gap, res.solve_time_s,
                       size, True)
    design = design_of(p.engine, res.choice)
    rb = replay_bound(p, design)
    priority = None
    notes_extra = [f"the simulator cannot beat {format_quantity(rb.bound_s, SECONDS)} at this design with any order "
                   f"(flow-shop bound, set by {rb.binding})"]
    comparison: dict[str, float] = {}
    if refine_s > 0:
        fs = flow_shop(p, design)
        it = md.iteration
        seq = [k for k, _ in res.order]
        lifo_pri = sorted(range(len(it.comms)), key=lambda k: (not it.comms[k].urgent, -it.comms[k].issue_after))
        best, val = refine_priority(fs, [seq, lifo_pri], refine_s)
        base = list_schedule(fs, seq)
        comparison["flow_shop_sequence_s"] = base * TIME_UNIT
        comparison["flow_shop_refined_s"] = val * TIME_UNIT
        if val < base * (1 - 1e-9):
            priority = tuple((k, 0) for k in best)
            notes_extra.append(f"dispatch priorities refined for the chunk-grain replay: flow-shop period "
                               f"{format_quantity(val * TIME_UNIT, SECONDS)} against "
                               f"{format_quantity(base * TIME_UNIT, SECONDS)} for the sequence as priorities")
    sol = _solution(md, res.choice, res.order, stats, None, 0, True, time.perf_counter() - t_start,
                    predicted_s=res.period_us * TIME_UNIT)
    T = sol.iteration_time_s
    comparison.update({"optimized_s": T, "lifo_s": res.lifo_us * TIME_UNIT, "fifo_s": res.fifo_us * TIME_UNIT})
    notes = list(sol.notes)
    if p.objective.minimize == "iteration_time" and T > 0:
        notes.append(f"the chosen order is {100 * (comparison['lifo_s'] - T) / comparison['lifo_s']:.2f}% faster "
                     f"than LIFO and {100 * (comparison['fifo_s'] - T) / comparison['fifo_s']:.2f}% faster than "
                     "FIFO at this design (serial network model)")
    notes.extend(notes_extra)
    return dataclasses.replace(sol, order_comparison=comparison, diagnostics=d, notes=tuple(notes),
                               replay_bound_s=rb.bound_s, priority=priority, solve_time_s=time.perf_counter() - t_start)


def _tie_break(md: ModelData, order: Order, choice: dict[str, int], m: pyo.ConcreteModel, extra: Extra | None,
               time_left: float) -> tuple[dict[str, int], Order]:
    """Among designs as good as the optimum, the one with the least area (minimizing time) or the
    shortest iteration (minimizing area or power): a second, lexicographic solve. Returns the design
    and the network order it runs under."""
    p = md.problem
    if not md.engine.sized or not m.obj.active:  # nothing to choose, or a hook's own objective
        return choice, order
    first = p.objective.minimize
    second = "area" if first == "iteration_time" else "iteration_time"
    best = pyo.value(m.obj)
    m2 = build_model(md, order, objective=second)
    if extra is not None:
        extra(m2, p)
    keep = {"iteration_time": m2.T, "area": m2.area, "power": m2.power}[first]
    m2.lexicographic = pyo.Constraint(expr=keep <= best * (1 + 1e-7) + 1e-9)
    st = solve_model(m2, p.solver, time_left)
    if st.status != "optimal":
        return choice, order
    new = _choice_from(m2, md)
    rep = replay_policy(md, new)
    if rep.order == order:
        return new, order
    if first != "iteration_time":
        # same area or power; the policy's own order at the new design decides whether it is better
        target = p.objective.iteration_time_target_s
        if (rep.period_s <= replay_policy(md, choice).period_s * (1 + 1e-9)
                and (target is None or rep.period_s <= target * (1 + 1e-9))):
            return new, rep.order
    return choice, order


def _solution(md: ModelData, choice: dict[str, int], order: Order, stats: SolveStats, m: pyo.ConcreteModel | None,
              rounds: int, stable: bool, wall: float, *, predicted_s: float | None = None) -> Solution:
    p = md.problem
    pc, dc = durations(md, choice)
    rep = run_sequence(md.iteration, pc, dc, order)
    notes = []
    what = p.objective.minimize
    if m is not None and not m.obj.active:
        what = "custom"  # an extra hook replaced the objective: its value and bound are in its own units
        notes.append("the objective is the extra hook's own; objective and bound are in its units")
    T = rep.period_s
    if what == "iteration_time":
        T_milp = pyo.value(m.T) * TIME_UNIT if m is not None else predicted_s
        if abs(T_milp - T) > 1e-6 * max(T, 1e-12) + 1e-12:
            notes.append(f"the MILP's period {format_quantity(T_milp, SECONDS)} differs from the replay of its "
                         f"order {format_quantity(T, SECONDS)}")
    if not stable:
        notes.append(f"the {p.schedule.order.upper()} order did not settle: the design is optimal for the order "
                     "shown, which the policy does not reproduce exactly at that design")
    if stats.status == "time_limit":
        what_found = "design and order are" if p.schedule.order == "optimize" else "design is"
        notes.append(f"time limit reached: the {what_found} the best found, within {100 * (stats.gap or 0):.2f}% of "
                     "the bound, not proven optimal")
    schedule = []
    it = md.iteration
    for j, c in enumerate(it.computes):
        layer = p.workload.layers[c.layer].name if c.layer >= 0 else ""
        schedule.append(ScheduledTask(c.name, c.kind, layer, rep.compute_start_s[j], rep.compute_start_s[j] + pc[j]))
    for k, c in enumerate(it.comms):
        schedule.append(ScheduledTask(c.name, "comm", p.workload.layers[c.layer].name, rep.comm_start_s[k],
                                      rep.comm_start_s[k] + dc[k]))
    schedule.sort(key=lambda t: (t.start_s, t.kind == "comm"))
    compute_total = sum(pc)
    scale = TIME_UNIT if what == "iteration_time" else 1.0
    design = design_of(p.engine, choice)
    return Solution(
        problem=p.name, engine=p.engine.kind, objective_kind=what, status=stats.status, iteration_time_s=T,
        bound_s=stats.bound * TIME_UNIT if (what == "iteration_time" and stats.bound is not None) else None,
        objective=T if what == "iteration_time" else stats.objective,
        objective_bound=stats.bound * scale if stats.bound is not None else None, gap=stats.gap,
        solve_time_s=wall, design=dict(design.values), choice=dict(choice),
        area_mm2=design_area_mm2(p.engine, choice), power_w=design_power_w(p.engine, choice),
        compute_time_s=compute_total, exposed_comm_s=max(0.0, T - compute_total), comm_time_s=sum(dc),
        schedule=tuple(schedule), order_policy=p.schedule.order, order=order, order_rounds=rounds,
        order_stable=stable, model=stats.size, chunks=p.schedule.chunks, notes=tuple(notes))
