"""The platform at one design as an LP: every chunk-phase on its dimension, in the order the simulator served them.

Given what a replay did (``sim.replay.Realized``: which chunk-phase each dimension served just before
each other, which departure let each chunk into the SRAM, and how long everything took), the schedule
of one steady-state iteration is an LP in start times and the period T (microseconds):

  chunk[k, c, i]   start of phase i of chunk c of collective k; a chunk's phases follow each other;
  admit[k, c]      the chunk enters the SRAM (ACE) no earlier than its collective's release and than the
                   departure that made room for it; its first phase starts after it enters;
  dimension order  each chunk-phase starts after the one its dimension served before it ends (that one
                   may belong to an earlier iteration: its copy there starts T, 2T ... earlier);
  compute          in program order, each task after the collectives it waits for (the next iteration's
                   forward T later, for weight gradients), the first task of the next iteration T after
                   the first of this one;
  T                minimized.
With every duration fixed as the replay realized it, this is a max-plus system whose least period is the
replay's period: the LP and the simulator agree exactly (tests/test_platform_lp.py). Durations may be
given instead (``phase_us``, ``compute_us``): with each chunk-phase's time alone on the endpoint and each
task's time at the full NPU, it is a lower bound for this order, equal to the replay when nothing was
contended. Its duals price every duration: how much the period moves per microsecond of each
chunk-phase or compute task (``pipeline/shadow.py`` builds on them).
"""
from __future__ import annotations

import pyomo.core as pyo

from .data import TIME_UNIT, ModelData


def realized_durations(realized) -> tuple[dict[tuple[int, int, int], float], list[float]]:
    """Each chunk-phase's and each compute task's duration (us) as the replay realized them."""
    phase = {x: (realized.phase_end[x] - s) / TIME_UNIT for x, s in realized.phase_start.items()}
    compute = [(e - s) / TIME_UNIT for s, e in zip(realized.compute_start, realized.compute_end)]
    return phase, compute


def build_platform_lp(md: ModelData, realized, *, phase_us: dict[tuple[int, int, int], float] | None = None,
                      compute_us: list[float] | None = None) -> pyo.ConcreteModel:
    """The LP of the module docstring for the reference iteration of ``realized`` (times in us): the
    durations the replay realized, unless ``phase_us[(k, c, i)]`` and ``compute_us[j]`` are given."""
    it = md.iteration
    J, K = len(it.computes), len(it.comms)
    nph = [len(d.phase_dims) for d in md.demands]
    chunks = md.problem.schedule.chunks
    m = pyo.ConcreteModel(name=f"{md.problem.name} platform")
    m.T = pyo.Var(domain=pyo.Reals)
    m.compute_start = pyo.Var(range(J), domain=pyo.Reals)
    keys = [(k, c, i) for k in range(K) for c in range(chunks) for i in range(nph[k])]
    m.chunk = pyo.Var(keys, domain=pyo.Reals)
    m.admit = pyo.Var([(k, c) for k in range(K) for c in range(chunks) if nph[k]], domain=pyo.Reals)
    m.comm_end = pyo.Var(range(K), domain=pyo.Reals)
    m.compute_start[0].fix(0.0)

    dur, cdur = realized_durations(realized)
    dur = phase_us if phase_us is not None else dur
    cdur = compute_us if compute_us is not None else cdur
    m.dur = pyo.Param(keys, initialize=dur, mutable=True)
    m.cdur = pyo.Param(range(J), initialize=dict(enumerate(cdur)), mutable=True)

    m.chain = pyo.Constraint(range(J - 1), rule=lambda m, j: m.compute_start[j + 1] >= m.compute_start[j] + m.cdur[j])
    m.wrap = pyo.Constraint(expr=m.compute_start[0] + m.T >= m.compute_start[J - 1] + m.cdur[J - 1])
    m.phase_chain = pyo.ConstraintList()
    m.release = pyo.ConstraintList()
    m.collective_end = pyo.ConstraintList()
    for k, c in enumerate(it.comms):
        j = c.issue_after
        if not nph[k]:
            m.collective_end.add(m.comm_end[k] >= m.compute_start[j] + m.cdur[j])
        for ch in range(chunks if nph[k] else 0):
            m.release.add(m.admit[k, ch] >= m.compute_start[j] + m.cdur[j])
            m.phase_chain.add(m.chunk[k, ch, 0] >= m.admit[k, ch])
            for i in range(nph[k] - 1):
                m.phase_chain.add(m.chunk[k, ch, i + 1] >= m.chunk[k, ch, i] + m.dur[k, ch, i])
            last = nph[k] - 1
            m.collective_end.add(m.comm_end[k] >= m.chunk[k, ch, last] + m.dur[k, ch, last])
    m.wait = pyo.Constraint(range(K), rule=lambda m, k: (
        m.compute_start[it.comms[k].wait_before] + (m.T if it.comms[k].next_iteration else 0.0)
        >= m.comm_end[k] + it.comms[k].delay_s / TIME_UNIT))

    m.dimension_order = pyo.ConstraintList()
    for x, pred in realized.dim_pred.items():
        if pred is None:
            continue
        k2, c2, i2, off = pred
        m.dimension_order.add(m.chunk[x] >= m.chunk[k2, c2, i2] + off * m.T + m.dur[k2, c2, i2])
    m.sram_order = pyo.ConstraintList()
    for (k, ch), trig in realized.admit_after.items():
        if trig is None:
            continue
        k2, c2, off = trig
        last = nph[k2] - 1
        m.sram_order.add(m.admit[k, ch] >= m.chunk[k2, c2, last] + off * m.T + m.dur[k2, c2, last])
    m.obj = pyo.Objective(expr=m.T, sense=pyo.minimize)
    return m
