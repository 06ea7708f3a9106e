"""The co-design MILP in Pyomo: engine sizing plus the steady-state schedule of one training iteration.

Component names are the public API for ``extra(model, problem)`` hooks (README: "The model"):

  y[r, o]             binary: option o of sized resource r is chosen (only resources with > 1 option)
  T                   iteration time, the steady-state period (model time unit: microseconds)
  compute_start[j]    start of compute task j in program order (us); compute_start[0] == 0
  compute_time[j]     duration of compute task j (us): a Var >= each bound when the design changes it
  comm_start[k]       start of collective k (us)
  phase_time[k, i]    a chunk's time in phase i of collective k (us): >= links, >= each endpoint resource
                      (baseline: HBM, cores; ACE: ALUs, and DMA in the first and last phase)
  interval[k]         the chunk pipeline's interval (us): >= each resource's per-chunk load, SRAM bound
  comm_time[k]        Expression: sum_i phase_time + (chunks - 1) * interval  (us)
  area, power         Expressions: engine area (mm^2) and power (W) of the chosen options
  obj                 the objective (T, area or power)
Constraint blocks: one_option, area_budget, power_budget, compute_bound, chain, compute_wrap, phase_bound,
interval_bound, release, wait, network_seq, network_wrap, time_target. Sets: RES, OPT, J, K.
"""
from __future__ import annotations

import pyomo.environ as pyo

from ..schedule.serial import Order
from .data import TIME_UNIT, ModelData, Term


def build_model(md: ModelData, order: Order, *, objective: str | None = None,
                time_target_s: float | None = None, fixed_choice: dict[str, int] | None = None) -> pyo.ConcreteModel:
    """Build the MILP for network ``order``. ``objective`` overrides the problem's; ``fixed_choice``
    fixes the design (the model is then an LP)."""
    p = md.problem
    eng = md.engine
    it = md.iteration
    chunks = p.schedule.chunks
    J, K = len(it.computes), len(it.comms)
    m = pyo.ConcreteModel(name=p.name)

    sized = eng.sized
    m.RES = pyo.Set(initialize=sized, ordered=True)
    pairs = [(r, o) for r in sized for o in range(len(eng.options(r)))]
    m.OPT = pyo.Set(initialize=pairs, dimen=2, ordered=True)
    m.y = pyo.Var(m.OPT, domain=pyo.Binary)
    m.one_option = pyo.Constraint(m.RES, rule=lambda m, r: sum(m.y[r, o] for o in range(len(eng.options(r)))) == 1)
    if fixed_choice:
        for r, o in pairs:
            # continuous once fixed, so HiGHS sees an LP and returns duals (shadow prices)
            m.y[r, o].domain = pyo.UnitInterval
            m.y[r, o].fix(1 if fixed_choice[r] == o else 0)

    def lin(t: Term):
        """A Term as a Pyomo expression (or a float when it does not depend on the choice)."""
        if t.resource is None or t.resource not in sized:
            return t.coeffs[0]
        return sum(c * m.y[t.resource, o] for o, c in enumerate(t.coeffs))

    def choice_sum(attr: str):
        total = getattr(eng, f"fixed_{attr}")
        for r, opts in eng.resources.items():
            if r in sized:
                total = total + sum(getattr(opts[o], attr) * m.y[r, o] for o in range(len(opts)))
            else:
                total = total + getattr(opts[0], attr)
        return total

    m.area = pyo.Expression(expr=choice_sum("area_mm2"))
    m.power = pyo.Expression(expr=choice_sum("power_w"))
    if eng.area_budget_mm2 is not None:
        m.area_budget = pyo.Constraint(expr=m.area <= eng.area_budget_mm2)
    if eng.power_budget_w is not None:
        m.power_budget = pyo.Constraint(expr=m.power <= eng.power_budget_w)

    # ---- compute: durations, program order, and the cyclic wrap into the next iteration
    m.J = pyo.RangeSet(0, J - 1)
    m.T = pyo.Var(domain=pyo.NonNegativeReals)
    m.compute_start = pyo.Var(m.J, domain=pyo.NonNegativeReals)
    terms = [md.compute_terms(j) for j in range(J)]
    varying = [j for j in range(J) if any(t.resource in sized for t in terms[j])]
    m.compute_time = pyo.Var(m.J, domain=pyo.NonNegativeReals)
    m.compute_bound = pyo.ConstraintList()
    for j in range(J):
        if j in varying:
            for t in terms[j]:
                m.compute_bound.add(m.compute_time[j] >= lin(t))
        else:
            m.compute_time[j].fix(max(t.coeffs[0] for t in terms[j]))
    m.compute_start[0].fix(0.0)
    m.chain = pyo.Constraint(pyo.RangeSet(0, J - 2) if J > 1 else [],
                             rule=lambda m, j: m.compute_start[j + 1] >= m.compute_start[j] + m.compute_time[j])
    m.compute_wrap = pyo.Constraint(expr=m.compute_start[0] + m.T >= m.compute_start[J - 1] + m.compute_time[J - 1])

    # ---- collectives: phase times, pipeline interval, duration
    m.K = pyo.RangeSet(0, K - 1) if K else pyo.Set(initialize=[])
    nph = {k: len(md.demands[k].phase_dims) for k in range(K)}
    ki = [(k, i) for k in range(K) for i in range(nph[k])]
    m.phase_time = pyo.Var(ki, domain=pyo.NonNegativeReals)
    m.interval = pyo.Var(m.K, domain=pyo.NonNegativeReals)
    m.comm_start = pyo.Var(m.K, domain=pyo.NonNegativeReals)
    m.phase_bound = pyo.ConstraintList()
    m.interval_bound = pyo.ConstraintList()
    comm_time = {}
    for k in range(K):
        dem = md.demands[k]
        loads: dict[str, list] = {}
        for i in range(nph[k]):
            m.phase_bound.add(m.phase_time[k, i] >= dem.phase_link_s[i] / TIME_UNIT)
            for t in md.phase_terms(k, i):
                e = lin(t)
                m.phase_bound.add(m.phase_time[k, i] >= e)
                loads.setdefault(t.resource, []).append(e)
        if chunks > 1 and nph[k]:
            for d, s in dem.link_load_s().items():
                m.interval_bound.add(m.interval[k] >= s / TIME_UNIT)
            for es in loads.values():
                m.interval_bound.add(m.interval[k] >= sum(es))
            if eng.kind == "ace":
                m.interval_bound.add(m.interval[k] >= lin(md.sram_term(k)))
        else:
            m.interval[k].fix(0.0)
        comm_time[k] = sum(m.phase_time[k, i] for i in range(nph[k])) + (chunks - 1) * m.interval[k]
    m.comm_time = pyo.Expression(m.K, rule=lambda m, k: comm_time[k])

    # ---- precedence between compute and collectives
    m.release = pyo.Constraint(m.K, rule=lambda m, k: m.comm_start[k] >= m.compute_start[it.comms[k].issue_after]
                               + m.compute_time[it.comms[k].issue_after])

    def wait_rule(m, k):
        c = it.comms[k]
        shift = m.T if c.next_iteration else 0.0
        return m.compute_start[c.wait_before] + shift >= m.comm_start[k] + m.comm_time[k] + c.delay_s / TIME_UNIT
    m.wait = pyo.Constraint(m.K, rule=wait_rule)

    # ---- the network serves collectives whole, in ``order``, cyclically
    seq = list(order)
    m.network_seq = pyo.Constraint(pyo.RangeSet(0, len(seq) - 2) if len(seq) > 1 else [], rule=lambda m, n: (
        m.comm_start[seq[n + 1][0]] + seq[n + 1][1] * m.T >= m.comm_start[seq[n][0]] + seq[n][1] * m.T
        + m.comm_time[seq[n][0]]))
    if seq:
        (k0, o0), (kl, ol) = seq[0], seq[-1]
        m.network_wrap = pyo.Constraint(expr=m.comm_start[k0] + (o0 + 1) * m.T >= m.comm_start[kl] + ol * m.T
                                        + m.comm_time[kl])

    # ---- objective
    what = objective or p.objective.minimize
    target = time_target_s if time_target_s is not None else p.objective.iteration_time_target_s
    if target is not None and what != "iteration_time":
        m.time_target = pyo.Constraint(expr=m.T <= target / TIME_UNIT)
    m.obj = pyo.Objective(expr={"iteration_time": m.T, "area": m.area, "power": m.power}[what], sense=pyo.minimize)
    return m
