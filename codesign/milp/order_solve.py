"""``schedule: {order: optimize}``: the engine design and the network order chosen together, proven.

Decomposition (docs/formulation.md, "Design master and order subproblems"). The design space is a
catalog product (ResNet-50's ACE: 96 designs, 84 within the budgets), so the master enumerates it:
  1. every design within the budgets, with its durations from the shared cost functions;
  2. dominance: a design no faster on any duration than another at no less cost is dropped (any
     order runs at least as fast on the other): 69 of ResNet-50's 84 go here;
  3. per design, Horn's preemptive bound (a lower bound on every order) and a list schedule (Schrage,
     which for data-parallel training is LIFO's choice) improved by insertion moves (an upper bound);
  4. designs in order of their bound: pruned when the bound cannot beat the incumbent; solved by
     the bounds alone when the list schedule meets the bound; otherwise the positional MILP
     (order_model.py) searches for an order that beats the incumbent, with the incumbent as MIP start
     and cutoff and the immediate selections it implies.
The proven bound is the least, over designs, of what was proven for each (its optimum, the cutoff it
could not beat, HiGHS's bound at a time limit, or Horn's bound if never reached), so a time limit
returns the incumbent with an honest gap. Times in microseconds (the model's unit) unless named _s.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..errors import InfeasibleError
from ..schedule.serial import Order, run_policy
from ..spec.units import SECONDS, format_quantity
from .data import TIME_UNIT, ModelData
from .order_data import (
    Candidate,
    Instance,
    candidates,
    horn_bound,
    instance,
    lmax,
    local_search,
    schrage,
    separable,
    toward,
    undominated,
)
from .order_model import solve_positional

TIE = 1e-7  # relative: periods this close tie, and the tie-break (area, or the period) decides


@dataclass
class DesignRecord:
    """What happened to one design: its bound and best period (us) and how it was settled:
    pruned | bounds (list schedule met the bound) | milp (HiGHS solved or cut off) | milp_time_limit | unvisited."""

    choice: dict[str, int]
    cost: float
    lower_us: float
    upper_us: float | None = None
    how: str = "unvisited"
    milp_time_s: float = 0.0
    milp_size: tuple[int, int, int] | None = None   # variables, binaries, constraints
    root_lp_us: float | None = None
    lp_time_s: float = 0.0      # diagnostics only: the LP relaxation solved after the MILP
    nodes: int = 0
    selections: int = 0
    fixed: int = 0              # z columns removed by the windows and by reduced-cost fixing


@dataclass
class OrderResult:
    """The chosen design and order, the proven bound and what it took."""

    choice: dict[str, int]
    order: Order
    period_us: float
    bound_us: float            # on the objective: us for iteration time; mm^2 or W for area or power
    objective: float           # in the same unit as bound_us
    status: str                # optimal | time_limit
    gap: float
    solve_time_s: float
    lifo_us: float
    fifo_us: float
    records: list[DesignRecord] = field(default_factory=list)
    dominated: int = 0
    budget_feasible: int = 0
    notes: list[str] = field(default_factory=list)


def _heuristic(inst: Instance, md: ModelData, c: Candidate, budget_s: float) -> tuple[list[int], float]:
    """The best of Schrage's schedule, LIFO's and FIFO's orders, improved by insertion moves: (order, L)."""
    seqs = [schrage(inst)]
    for pol in ("lifo", "fifo"):
        rep = run_policy(md.iteration, list(c.pc), list(c.dc), pol)
        seqs.append([k for k, _ in rep.order])
    best = min(seqs, key=lambda s: lmax(inst, s))
    if budget_s > 0 and lmax(inst, best) > horn_bound(inst) + 1e-9:
        best = local_search(inst, best, budget_s)
    return best, lmax(inst, best)


def _policy_periods(md: ModelData, c: Candidate) -> tuple[float, float]:
    return tuple(run_policy(md.iteration, list(c.pc), list(c.dc), pol).period_s / TIME_UNIT
                 for pol in ("lifo", "fifo"))  # type: ignore[return-value]


def _near_lifo(md: ModelData, shape, c: Candidate, seq: list[int]) -> list[int]:
    """The chosen order moved toward LIFO's without losing anything (order_data.toward)."""
    inst = instance(shape, list(c.pc), list(c.dc))
    ref = [k for k, _ in run_policy(md.iteration, list(c.pc), list(c.dc), "lifo").order]
    return toward(inst, seq, ref, lmax(inst, seq))


def solve_order(md: ModelData, *, time_limit_s: float, diagnose: bool = False) -> OrderResult:
    """Choose the design and the network order (serial network model) for ``md``'s objective."""
    t0 = time.perf_counter()
    p = md.problem
    shape = separable(md.iteration)
    if shape is None:
        from ..errors import SpecError
        raise SpecError("order: optimize needs every collective to be awaited in the next iteration, after "
                        "every wait point (data parallelism, MICRO); this workload's collectives can overlap "
                        "the next iteration's: use order lifo or fifo", path="schedule.order")
    what = p.objective.minimize
    cost_attr = {"iteration_time": "area_mm2", "area": "area_mm2", "power": "power_w"}[what]
    every = candidates(md)
    if not every:
        raise InfeasibleError(_no_design(md))
    cands, dropped = undominated(every, cost_attr)
    spec = p.solver
    if what == "iteration_time":
        res = _min_time(md, shape, cands, cost_attr, spec, time_limit_s, t0, diagnose)
    else:
        res = _min_cost(md, shape, cands, cost_attr, spec, time_limit_s, t0, diagnose)
    res.dominated, res.budget_feasible = dropped, len(every)
    res.solve_time_s = time.perf_counter() - t0
    return res


def _no_design(md: ModelData) -> str:
    e = md.engine
    return (f"no configuration meets both budgets: area budget {e.area_budget_mm2:g} mm^2 and power budget "
            f"{e.power_budget_w:g} W")


def _min_time(md, shape, cands, cost_attr, spec, limit, t0, diagnose) -> OrderResult:
    insts = {i: instance(shape, list(c.pc), list(c.dc)) for i, c in enumerate(cands)}
    recs = [DesignRecord(c.choice, getattr(c, cost_attr), insts[i].period(horn_bound(insts[i])))
            for i, c in enumerate(cands)]
    visit = sorted(range(len(cands)), key=lambda i: (recs[i].lower_us, recs[i].cost))
    best_i, best_seq, best_T = None, None, float("inf")
    ls_budget = 0.1 + 0.005 * insts[visit[0]].n
    proven: dict[int, float] = {}

    def better(T: float, cost: float) -> bool:
        if best_i is None:
            return True
        if T < best_T * (1 - TIE):
            return True
        return T <= best_T * (1 + TIE) and cost < recs[best_i].cost - 1e-12

    for i in visit:
        rec, inst = recs[i], insts[i]
        left = limit - (time.perf_counter() - t0)
        if best_i is not None:
            cannot_tie = rec.lower_us >= best_T * (1 - TIE) and rec.cost >= recs[best_i].cost
            if rec.lower_us > best_T * (1 + TIE) or cannot_tie:
                rec.how = "pruned"
                proven[i] = rec.lower_us
                continue
            if left <= 0:
                break
        seq, L = _heuristic(inst, md, cands[i], ls_budget if left > 0 else 0.0)
        T = inst.period(L)
        rec.upper_us = T
        if better(T, rec.cost):
            best_i, best_seq, best_T = i, seq, T
        if T <= rec.lower_us * (1 + TIE) + 1e-9:
            rec.how = "bounds"
            proven[i] = T
            continue
        # only an order that beats the incumbent (or ties it at less cost) is of interest here
        want = best_T * (1 + TIE) if rec.cost < recs[best_i].cost - 1e-12 else best_T * (1 - TIE)
        left = limit - (time.perf_counter() - t0)
        if left <= 0.05:
            proven[i] = rec.lower_us
            continue
        out = solve_positional(inst, seq, time_limit_s=left, rel_gap=spec.mip_gap, threads=spec.threads,
                               cutoff_lmax=want - inst.compute, diagnose=diagnose)
        rec.milp_time_s = out.result.solve_time_s
        rec.milp_size = (out.model.arrays.size.variables, out.model.arrays.size.binaries,
                         out.model.arrays.size.constraints)
        rec.nodes, rec.selections = max(0, out.result.nodes), out.model.selections
        rec.fixed = out.fixed + out.model.fixed_out
        rec.root_lp_us = inst.period(out.lp_bound) if out.lp_bound is not None else None
        rec.lp_time_s = out.lp_time_s
        cut = max(want - inst.compute, out.model.lmax_lb)    # L of the cutoff (every better order is in the model)
        if out.lmax is not None and inst.period(out.lmax) < T:
            T = inst.period(out.lmax)
            rec.upper_us = T
            if better(T, rec.cost):
                best_i, best_seq, best_T = i, out.order, T
        if out.status in ("optimal", "cutoff"):
            rec.how = "milp"
            hb = out.lmax_bound if out.status == "optimal" and out.lmax_bound is not None else cut
            proven[i] = max(rec.lower_us, min(inst.period(min(hb, cut)), T))
        else:
            rec.how = "milp_time_limit"
            hb = out.lmax_bound if out.lmax_bound is not None else out.model.lmax_lb
            proven[i] = max(rec.lower_us, inst.period(min(hb, cut)))
    for i, rec in enumerate(recs):
        proven.setdefault(i, rec.lower_us)
    bound = min(min(proven.values()), best_T)
    gap = (best_T - bound) / best_T if best_T > 0 else 0.0
    c = cands[best_i]
    lifo, fifo = _policy_periods(md, c)
    best_seq = _near_lifo(md, shape, c, best_seq)
    status = "optimal" if gap <= max(md.problem.solver.mip_gap, 1e-9) else "time_limit"
    return OrderResult(c.choice, tuple((k, 0) for k in best_seq), best_T, float(bound), best_T, status, float(gap),
                       0.0, lifo, fifo, recs)


def _min_cost(md, shape, cands, cost_attr, spec, limit, t0, diagnose) -> OrderResult:
    """Least area (or power) whose best order meets the iteration-time target; ties: the shortest period."""
    target_us = md.problem.objective.iteration_time_target_s / TIME_UNIT
    insts = {i: instance(shape, list(c.pc), list(c.dc)) for i, c in enumerate(cands)}
    recs = [DesignRecord(c.choice, getattr(c, cost_attr), insts[i].period(horn_bound(insts[i])))
            for i, c in enumerate(cands)]
    visit = sorted(range(len(cands)), key=lambda i: (recs[i].cost, recs[i].lower_us))
    found: tuple[int, list[int], float] | None = None
    undecided_cost = None   # the least cost of a design a time limit left undecided
    ls_budget = 0.1 + 0.005 * insts[visit[0]].n
    for i in visit:
        rec, inst = recs[i], insts[i]
        if found is not None and rec.cost > recs[found[0]].cost + 1e-12:
            rec.how = "pruned"
            continue
        if rec.lower_us > target_us * (1 + 1e-9):
            rec.how = "bounds"
            continue
        left = limit - (time.perf_counter() - t0)
        seq, L = _heuristic(inst, md, cands[i], ls_budget if left > 0 else 0.0)
        T = inst.period(L)
        rec.upper_us = T
        if T > target_us * (1 + 1e-9) and left > 0.05:
            out = solve_positional(inst, seq, time_limit_s=left, rel_gap=spec.mip_gap, threads=spec.threads,
                                   cutoff_lmax=target_us * (1 + 1e-9) - inst.compute, diagnose=diagnose)
            rec.milp_time_s, rec.nodes = out.result.solve_time_s, max(0, out.result.nodes)
            rec.milp_size = (out.model.arrays.size.variables, out.model.arrays.size.binaries,
                             out.model.arrays.size.constraints)
            if out.lmax is not None and inst.period(out.lmax) < T:
                seq, T = out.order, inst.period(out.lmax)
                rec.upper_us = T
            rec.how = "milp" if out.status in ("optimal", "cutoff") else "milp_time_limit"
        elif T > target_us * (1 + 1e-9):
            rec.how = "milp_time_limit"
        else:
            rec.how = "bounds"
        if T <= target_us * (1 + 1e-9):
            if found is None or T < found[2]:
                found = (i, seq, T)
        elif rec.how == "milp_time_limit" and undecided_cost is None:
            undecided_cost = rec.cost
    if found is None:
        best = _best_achievable(md, shape, cands, limit, t0)
        raise InfeasibleError(
            f"iteration-time target {format_quantity(target_us * TIME_UNIT, SECONDS)} < best achievable "
            f"{format_quantity(best * TIME_UNIT, SECONDS)} within the budgets with any network order (short by "
            f"{format_quantity((best - target_us) * TIME_UNIT, SECONDS)})")
    i, seq, T = found
    obj = recs[i].cost
    bound = obj if undecided_cost is None or undecided_cost >= obj else undecided_cost
    gap = (obj - bound) / obj if obj > 0 else 0.0
    lifo, fifo = _policy_periods(md, cands[i])
    seq = _near_lifo(md, shape, cands[i], seq)
    return OrderResult(cands[i].choice, tuple((k, 0) for k in seq), T, bound, obj,
                       "optimal" if gap <= 1e-12 else "time_limit", gap, 0.0, lifo, fifo, recs)


def _best_achievable(md, shape, cands, limit, t0) -> float:
    """The least period over the designs (us), for the infeasibility message."""
    res = _min_time(md, shape, cands, "area_mm2", md.problem.solver, max(limit - (time.perf_counter() - t0), 1.0),
                    time.perf_counter(), False)
    return res.period_us
