"""Rows held back from HiGHS (``milp.highs._Held``): a compiled model gives HiGHS only the rows that zero
breaks and the rows of integer columns, and the rest once an answer breaks them. The answers, bounds and
statuses are those of the whole model."""
from __future__ import annotations

import random

import numpy as np
import pyomo.environ as pyo
import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import codesign.milp.highs as H
from codesign.milp.data import model_data
from codesign.milp.highs import CompiledModel, solve_model
from codesign.milp.master import Master
from codesign.problem.load import load_problem
from codesign.problem.model import SolverSpec

SPEC = SolverSpec(time_limit_s=20.0, mip_gap=1e-9)


def _facility(seed: int) -> pyo.ConcreteModel:
    """Facility location with a makespan: open sites (binaries), assign demand (continuous), a load per
    site under a capacity that opening buys, and the largest load as the objective's second term. The
    x <= y and load rows hold at zero, so they are held back."""
    rnd = random.Random(seed)
    n, k = rnd.randint(2, 5), rnd.randint(2, 7)
    m = pyo.ConcreteModel()
    m.y = pyo.Var(range(n), domain=pyo.Binary)
    m.x = pyo.Var(range(n), range(k), bounds=(0, 1))
    m.L = pyo.Var(domain=pyo.NonNegativeReals)
    m.c = pyo.ConstraintList()
    d = [rnd.uniform(1, 5) for _ in range(k)]
    for j in range(k):
        m.c.add(sum(m.x[i, j] for i in range(n)) == 1)
        for i in range(n):
            m.c.add(m.x[i, j] <= m.y[i])
    for i in range(n):
        m.c.add(m.L >= sum(d[j] * m.x[i, j] for j in range(k)))
        m.c.add(sum(d[j] * m.x[i, j] for j in range(k)) <= rnd.uniform(4, 12) * m.y[i])
    m.obj = pyo.Objective(expr=sum(rnd.uniform(5, 30) * m.y[i] for i in range(n)) + rnd.uniform(0.5, 3) * m.L
                          + sum(rnd.uniform(0, 4) * m.x[i, j] for i in range(n) for j in range(k)))
    return m


@pytest.fixture
def hold_all():
    """Hold rows back in models of any size (the threshold keeps small masters whole)."""
    saved = H.HOLD_MIN_ROWS
    H.HOLD_MIN_ROWS = 0
    yield
    H.HOLD_MIN_ROWS = saved


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))  # the fixture only sets the threshold, the same for every example
def test_held_rows_give_the_whole_models_answer(hold_all, seed):
    m = _facility(seed)
    c = CompiledModel(m)
    assert len(c.held.rows) > 0 and c.rows < c.model_rows
    got = c.solve(SPEC, 20.0)
    want = solve_model(_facility(seed), SPEC)  # Pyomo's own HiGHS interface, every row
    assert got.status == want.status
    if want.status == "optimal":
        # (two solve paths agree to HiGHS's tolerances: a row within 1e-7, an integer within 1e-6)
        assert got.objective == pytest.approx(want.objective, rel=1e-7, abs=1e-5)
        assert got.bound <= want.objective * (1 + 1e-7) + 1e-5
        x = np.array([pyo.value(v) for v in c.vars])  # the answer loaded breaks no row of the model
        for con in m.component_data_objects(pyo.Constraint, active=True):
            lo, body, hi = con.to_bounded_expression(True)
            val = pyo.value(body)
            assert (lo is None or val >= lo - 1e-6) and (hi is None or val <= hi + 1e-6)
        assert len(x) == c.h.getNumCol()


def test_a_row_added_then_popped_leaves_the_rows_given_since(hold_all):
    """The least-area tie-break adds a row, solves (which may give HiGHS held rows after it) and pops it:
    the pop removes that row, wherever it now is, and keeps the rows given."""
    m = pyo.ConcreteModel()
    m.y = pyo.Var(range(2), domain=pyo.Binary)
    m.z = pyo.Var(domain=pyo.NonNegativeReals)
    m.one = pyo.Constraint(expr=m.y[0] + m.y[1] == 1)
    m.r = pyo.Constraint(expr=m.z >= 5 * m.y[1] - 1)  # holds at zero: held; binds only when y[1] is chosen
    m.obj = pyo.Objective(expr=m.z + m.y[0] + 2 * m.y[1])
    c = CompiledModel(m)
    assert c.solve(SPEC, 20.0).objective == pytest.approx(1.0) and c.rows == 1 and not c.held.given.any()
    c.add(None, m.y[0], 0.0)  # y[0] <= 0: the answer moves to y[1], which breaks the held row
    assert c.solve(SPEC, 20.0).objective == pytest.approx(6.0) and c.held.given.all() and c.rows == 3
    c.pop_row()
    assert c.rows == 2 and c.model_rows == 2
    assert c.solve(SPEC, 20.0).objective == pytest.approx(1.0)  # the added row is gone, the held one stays
    lp = c.h.getLp()
    assert sorted(zip(lp.row_lower_, lp.row_upper_)) == [(-c.inf, 1.0), (1.0, 1.0)]  # 5 y[1] - z <= 1, the choice


def test_resnet50s_master_holds_rows_back_and_answers_as_the_whole_model(monkeypatch):
    md = model_data(load_problem(ROOT / "problems" / "resnet50_ace_torus3d.yaml"))
    held = Master(md)
    held_st = held.solve(md.problem.solver, 60.0)
    assert len(held.compiled.held.rows) > 300
    monkeypatch.setattr(H, "HOLD_MIN_ROWS", 10**9)
    whole = Master(md)
    whole_st = whole.solve(md.problem.solver, 60.0)
    assert len(whole.compiled.held.rows) == 0
    assert held_st.status == whole_st.status == "optimal"
    assert held_st.objective == pytest.approx(whole_st.objective, rel=1e-9)
    assert held_st.size == whole_st.size  # the model's size, held rows and all


def test_a_relaxation_unbounded_without_its_held_rows_solves_as_the_whole_model(hold_all):
    """A free variable that only held rows bound: without them the relaxation is unbounded, so HiGHS
    gets every held row and solves again."""
    m = pyo.ConcreteModel()
    m.y = pyo.Var(range(3), domain=pyo.Binary)
    m.z = pyo.Var()  # free
    m.one = pyo.Constraint(expr=sum(m.y.values()) == 1)
    m.c = pyo.ConstraintList()
    for i, a in enumerate((3.0, 1.0, 2.0)):
        m.c.add(m.z >= a * m.y[i] - 5)  # holds at zero: held
    m.obj = pyo.Objective(expr=m.z + sum((i + 1) * m.y[i] for i in range(3)))
    c = CompiledModel(m)
    st = c.solve(SPEC, 20.0)
    assert st.status == "optimal" and st.objective == pytest.approx(solve_model(m, SPEC).objective)


def test_a_restart_keeps_the_rows_given_and_answers_as_a_fresh_master(monkeypatch):
    """A family's master restarted for another member's budgets (``Master.restart``) keeps the held rows
    that earlier answers needed; its answer is a fresh master's. (Without design columns: with them, the
    floor row decides the answer and ResNet-50's needs no held row.)"""
    import dataclasses

    import codesign.milp.columns as columns_module
    monkeypatch.setattr(columns_module, "DESIGN_COLUMNS_MAX", 0)
    p = load_problem(ROOT / "problems" / "resnet50_ace_torus3d.yaml")
    other = dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=2.0))
    used = Master(model_data(p))
    used.solve(p.solver, 60.0)
    given = int(used.compiled.held.given.sum())
    built = int((~used.compiled.held.member).sum())  # the build's rows that HiGHS got
    assert given > 0 and used.compiled.rows == built + given
    used.restart(model_data(other))
    assert int(used.compiled.held.given.sum()) == given and used.compiled.rows == built + given
    fresh = Master(model_data(other))
    x, y = used.solve(p.solver, 60.0), fresh.solve(p.solver, 60.0)
    assert x.status == y.status == "optimal"
    assert x.objective == pytest.approx(y.objective, rel=1e-9)
