"""The naive baseline: the co-design MILP with the network order left free by pairwise big-M disjunctions.

This is ``codesign/milp/model.py``'s model (design binaries y, compute chain, per-phase collective
times, releases, waits, the cyclic period T) with its fixed network sequence replaced by the
textbook disjunctive formulation: for every pair of collectives k < k', a binary x[k, k'] and

    comm_start[k'] >= comm_start[k] + comm_time[k] - M (1 - x[k, k'])
    comm_start[k]  >= comm_start[k'] + comm_time[k'] - M x[k, k']

with one global M (a horizon every start respects), plus the cyclic wrap in pairwise form (every
collective of an iteration ends before any of the next starts: comm_start[k] + T >= comm_start[k'] +
comm_time[k'] for all k, k'). It solves the same problem as ``order: optimize`` (joint design and
order, serial network, each iteration's collectives before the next's). No MIP start, no cuts of our
own: every formulation is compared with this one (BENCHMARKS.md, "MILP scaling").
"""
from __future__ import annotations

import pyomo.environ as pyo

from codesign.milp.data import TIME_UNIT, ModelData
from codesign.milp.model import build_model
from codesign.milp.order_data import candidates
from codesign.pipeline.solve import durations
from codesign.schedule.serial import issue_order


def horizon_us(md: ModelData) -> float:
    """A big-M every start time respects: all compute and all collectives at their slowest design,
    end to end (us)."""
    worst_pc = [0.0] * len(md.iteration.computes)
    worst_dc = [0.0] * len(md.iteration.comms)
    for c in candidates(md):
        worst_pc = [max(a, b) for a, b in zip(worst_pc, c.pc)]
        worst_dc = [max(a, b) for a, b in zip(worst_dc, c.dc)]
    if not md.engine.sized:
        worst_pc, worst_dc = durations(md, {r: 0 for r in md.engine.resources})
    return (sum(worst_pc) + sum(worst_dc)) / TIME_UNIT


def build_naive(md: ModelData) -> pyo.ConcreteModel:
    """The joint design + order model with pairwise big-M ordering (see the module docstring)."""
    m = build_model(md, issue_order(md.iteration))
    for name in ("network_seq", "network_wrap"):
        if hasattr(m, name):
            m.del_component(getattr(m, name))
    K = len(md.iteration.comms)
    M = horizon_us(md)
    m.bigM = M
    pairs = [(a, b) for a in range(K) for b in range(a + 1, K)]
    m.PAIRS = pyo.Set(initialize=pairs, dimen=2)
    m.x = pyo.Var(m.PAIRS, domain=pyo.Binary)
    m.before = pyo.Constraint(m.PAIRS, rule=lambda m, a, b: m.comm_start[b] >= m.comm_start[a] + m.comm_time[a]
                              - M * (1 - m.x[a, b]))
    m.after = pyo.Constraint(m.PAIRS, rule=lambda m, a, b: m.comm_start[a] >= m.comm_start[b] + m.comm_time[b]
                             - M * m.x[a, b])
    m.wrap = pyo.Constraint([(a, b) for a in range(K) for b in range(K)],
                            rule=lambda m, a, b: m.comm_start[a] + m.T >= m.comm_start[b] + m.comm_time[b])
    for k in range(K):
        m.comm_start[k].setub(M)
    return m


def order_of(m: pyo.ConcreteModel, K: int) -> tuple[tuple[int, int], ...]:
    """The network order of a solved naive model: collectives by start time."""
    return tuple((k, 0) for k in sorted(range(K), key=lambda k: pyo.value(m.comm_start[k])))
