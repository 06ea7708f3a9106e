"""The solve layer reports what HiGHS found: a time limit with an incumbent is said, not hidden."""
from __future__ import annotations

import random

import pyomo.environ as pyo

from codesign.milp.highs import solve_model
from codesign.problem.model import SolverSpec


def naive_lmax(n: int, seed: int = 1) -> pyo.ConcreteModel:
    """1|r_j|L_max with pairwise big-M ordering: the weak formulation that stalls HiGHS at modest n."""
    rnd = random.Random(seed)
    r = [rnd.uniform(0, 50) for _ in range(n)]
    p = [rnd.uniform(1, 10) for _ in range(n)]
    d = [r[j] + rnd.uniform(5, 60) for j in range(n)]
    M = sum(p) + max(r)
    m = pyo.ConcreteModel()
    m.s = pyo.Var(range(n), bounds=(0, M))
    m.L = pyo.Var()
    m.x = pyo.Var([(i, j) for i in range(n) for j in range(i + 1, n)], domain=pyo.Binary)
    m.c = pyo.ConstraintList()
    for j in range(n):
        m.c.add(m.s[j] >= r[j])
        m.c.add(m.L >= m.s[j] + p[j] - d[j])
    for i in range(n):
        for j in range(i + 1, n):
            m.c.add(m.s[j] >= m.s[i] + p[i] - M * (1 - m.x[i, j]))
            m.c.add(m.s[i] >= m.s[j] + p[j] - M * m.x[i, j])
    m.obj = pyo.Objective(expr=m.L)
    return m


def test_time_limit_keeps_incumbent_bound_and_gap():
    m = naive_lmax(20)
    st = solve_model(m, SolverSpec(time_limit_s=1.0, mip_gap=0.0))
    assert st.status == "time_limit"
    assert st.has_solution and st.objective is not None and st.bound is not None
    assert st.bound <= st.objective
    assert st.gap is not None and st.gap > 0
    assert st.solve_time_s < 5
    assert st.size.binaries == 20 * 19 // 2


def test_time_limit_without_incumbent_keeps_bound():
    st = solve_model(naive_lmax(30), SolverSpec(time_limit_s=0.3, mip_gap=0.0))
    assert st.status == "time_limit" and not st.has_solution
    assert st.objective is None and st.gap is None and st.bound is not None


def _hard_block(n: int):
    """An extra hook that welds a hard scheduling block onto the co-design model."""
    def extra(model, problem):
        model.hard = naive_lmax(n)
        model.hard.obj.deactivate()
        model.obj.expr = model.obj.expr + model.hard.L
    return extra


def test_pipeline_reports_time_limit_with_incumbent():
    from conftest import ace, problem, ring2, two_layer_workload

    from codesign import solve
    s = solve(problem(two_layer_workload(), ring2(), ace([(100e9, 1.0), (400e9, 2.0)])), time_limit=1.5,
              extra=_hard_block(20))
    assert s.status == "time_limit"
    assert s.gap is not None and s.gap > 0
    assert any("time limit reached" in n for n in s.notes)


def test_pipeline_time_limit_without_incumbent_is_an_error():
    import pytest
    from conftest import ace, problem, ring2, two_layer_workload

    from codesign import SolverError, solve
    with pytest.raises(SolverError, match="no design was evaluated within the time limit"):
        solve(problem(two_layer_workload(), ring2(), ace([(100e9, 1.0), (400e9, 2.0)])), time_limit=0.3,
              extra=_hard_block(30))


def test_infeasible_is_reported():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.Binary)
    m.c = pyo.Constraint(expr=m.x >= 2)
    m.obj = pyo.Objective(expr=m.x)
    st = solve_model(m, SolverSpec())
    assert st.status == "infeasible" and not st.has_solution


def test_optimal_reports_zero_gap():
    m = pyo.ConcreteModel()
    m.y = pyo.Var([0, 1, 2], domain=pyo.Binary)
    m.one = pyo.Constraint(expr=sum(m.y.values()) == 1)
    m.obj = pyo.Objective(expr=5 * m.y[0] + 3 * m.y[1] + 4 * m.y[2])
    st = solve_model(m, SolverSpec())
    assert st.status == "optimal" and st.objective == 3 and st.gap == 0


def _facility(seed: int) -> pyo.ConcreteModel:
    """A small facility-location MILP: binaries that open sites, continuous flows, a cost to minimize."""
    rnd = random.Random(seed)
    n, k = rnd.randint(3, 6), rnd.randint(3, 8)
    m = pyo.ConcreteModel()
    m.y = pyo.Var(range(n), domain=pyo.Binary)
    m.x = pyo.Var(range(n), range(k), bounds=(0, 1))
    m.c = pyo.ConstraintList()
    for j in range(k):
        m.c.add(sum(m.x[i, j] for i in range(n)) == 1)
        for i in range(n):
            m.c.add(m.x[i, j] <= m.y[i])
    cost = [[rnd.uniform(1, 20) for _ in range(k)] for _ in range(n)]
    m.obj = pyo.Objective(expr=sum(rnd.uniform(5, 30) * m.y[i] for i in range(n))
                          + sum(cost[i][j] * m.x[i, j] for i in range(n) for j in range(k)))
    return m


def test_a_re_solve_from_the_last_incumbent_reaches_the_fresh_solve_optimum():
    """CompiledModel.solve starts HiGHS from the incumbent of the run before (a start that new cuts may make
    infeasible, which HiGHS repairs or drops); the optimum after each cut is the one a fresh compile of the
    same model finds, within the MIP gap."""
    from codesign.milp.highs import CompiledModel
    spec = SolverSpec(time_limit_s=20.0, mip_gap=1e-6)
    for seed in range(12):
        m = _facility(seed)
        c = CompiledModel(m)
        assert c.solve(spec, 20.0).status == "optimal"
        rnd = random.Random(seed)
        n = len(m.y)
        for _ in range(3):
            # forbid the current set of open sites, or ask for one more site: the last incumbent turns infeasible
            opened = [i for i in range(n) if pyo.value(m.y[i]) > 0.5]
            if rnd.random() < 0.5 and len(opened) < n:
                con = m.c.add(sum(m.y[i] for i in range(n)) >= len(opened) + 1)
            else:
                con = m.c.add(sum(1 - m.y[i] for i in opened) + sum(m.y[i] for i in range(n) if i not in opened) >= 1)
            c.add(pyo.value(con.lower), con.body, None)
            warm = c.solve(spec, 20.0)
            cold = CompiledModel(m).solve(spec, 20.0)
            assert warm.status == cold.status
            if cold.status == "infeasible":
                break
            assert abs(warm.objective - cold.objective) <= 1e-6 * abs(cold.objective) + 1e-9
            assert warm.bound <= warm.objective * (1 + 1e-9)


def test_an_lp_solved_again_and_again_gets_its_whole_time_limit_each_time():
    """HiGHS's clock runs on across the runs of one Highs, and an LP's time limit (unlike a MIP's) is read
    against that clock: a compiled LP re-solved after its runs added up to more than its limit would stop at
    once, without an answer, unless each run's limit starts where the clock stands."""
    from codesign.milp.highs import CompiledModel
    m = _facility(3)
    m.y.domain = pyo.UnitInterval  # the facility problem's relaxation: an LP
    c = CompiledModel(m)
    spec = SolverSpec(time_limit_s=0.02)
    runs = 0
    while c.h.getRunTime() < 0.05:  # runs of about a millisecond, to three times past the time limit
        st = c.solve(spec, 0.02)
        assert st.status == "optimal" and st.has_solution, (runs, c.h.getRunTime())
        runs += 1
        assert runs < 10_000, "HiGHS's clock did not run on across runs"
    st = c.solve(spec, 0.02)
    assert st.status == "optimal" and st.objective is not None


def _lp(h):
    """A two-column LP in ``h`` (its optimum -2.5)."""
    import numpy as np
    h.addVars(2, np.zeros(2), np.ones(2))
    h.changeColsCost(2, np.arange(2, dtype=np.int32), np.array([-1.0, -2.0]))
    h.addRow(-np.inf, 1.5, 2, np.arange(2, dtype=np.int32), np.ones(2))
    return h


def _threads_during_run(h) -> int:
    """The threads that start while ``h`` runs and are still alive after (HiGHS's scheduler, reset before and
    after): thread ids new since before the run, so that another thread ending meanwhile counts for nothing."""
    import os
    h.resetGlobalScheduler(True)
    before = set(os.listdir("/proc/self/task"))
    try:
        h.run()
        return len(set(os.listdir("/proc/self/task")) - before)
    finally:
        h.resetGlobalScheduler(True)


def test_codesigns_highs_runs_on_the_calling_thread_alone():
    """HiGHS's default thread count starts a helper thread at each run after its scheduler is reset, which spins
    for work a serial simplex never gives it: on two cores, a core taken from a sweep's other worker. Every
    Highs codesign makes (``new_highs``: the master's, the floors' relaxations) starts none."""
    import sys

    import highspy
    import pytest

    from codesign.milp.highs import new_highs

    if not sys.platform.startswith("linux"):
        pytest.skip("counts the process's threads in /proc")
    plain = highspy.Highs()
    plain.setOptionValue("output_flag", False)
    if _threads_during_run(_lp(plain)) == 0:
        pytest.skip("HiGHS's default starts no helper thread on this machine (one core)")
    h = _lp(new_highs())
    assert _threads_during_run(h) == 0
    assert h.getInfo().objective_function_value == -2.5


def test_the_floors_are_computed_whatever_scheduler_a_callers_solve_left():
    """A run on one thread fails while HiGHS's scheduler of another thread count is alive (one a caller's own
    solve left running: Pyomo's interface, no count named, takes every core): the floors' LPs reset it first,
    so every design within the budgets gets its floor."""
    import highspy
    import numpy as np
    from conftest import ROOT

    from codesign.milp.data import model_data
    from codesign.milp.master import Master
    from codesign.problem.load import load_problem

    other = _lp(highspy.Highs())
    other.setOptionValue("output_flag", False)
    other.setOptionValue("threads", 2)
    other.resetGlobalScheduler(True)
    other.run()  # its scheduler of two threads stays alive
    try:
        m = Master(model_data(load_problem(ROOT / "problems" / "resnet50_ace_torus3d.yaml")))
        m.prepare(float("inf"))
        assert m.fits.any() and not np.isnan(m.relaxed[m.fits]).any()
    finally:
        highspy.Highs.resetGlobalScheduler(True)
