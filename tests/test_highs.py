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
