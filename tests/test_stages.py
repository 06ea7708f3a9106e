"""The solve in public stages (``build``, ``run``, ``assign``): the same answer as ``solve``, a master a
user can read and write before it runs, and the platform LP's duals kept on the Solution for
``shadow_prices``."""
from __future__ import annotations

import dataclasses

import pyomo.environ as pyo
import pytest

from codesign.pipeline.shadow import shadow_prices
from codesign.pipeline.solve import assign, build, run, solve
from codesign.problem.load import load_problem
from conftest import ROOT


@pytest.fixture(scope="module")
def quick():
    return load_problem(ROOT / "problems" / "quickstart.yaml")


def _answer(s):
    return (s.status, s.iteration_time_s, s.bound_s, s.design, s.area_mm2, s.evaluations, s.master_solves)


def test_build_run_assign_equals_solve(quick):
    built = build(quick)
    staged = assign(built, run(built))
    whole = solve(quick)
    assert _answer(staged) == _answer(whole)
    assert staged.status == "optimal"


def test_the_master_can_be_read_and_written_before_it_runs(quick, tmp_path):
    built = build(quick)
    m = built.model
    assert isinstance(m, pyo.ConcreteModel)
    assert not built.search.visits and built.master.compiled is None  # nothing solved yet
    lp = built.write(tmp_path / "master.lp")
    text = lp.read_text()
    assert "obj:\n+1 T\n" in text and "binary" in text  # minimize the period T over binary options, names kept
    assert sum(1 for _ in m.component_data_objects(pyo.Var)) == built.master.model.nvariables()
    res = run(built)  # writing did not disturb the model
    assert res.status == "optimal"


def test_constraints_through_build_reach_the_answer(quick):
    best = solve(quick)
    biggest = max(best.choice.items(), key=lambda kv: kv[1])  # forbid the chosen option of one resource

    def forbid(m, problem):
        m.forbid = pyo.Constraint(expr=m.y[biggest[0], biggest[1]] == 0)
    built = build(quick, extra=forbid)
    sol = assign(built, run(built))
    assert sol.choice[biggest[0]] != biggest[1]
    assert sol.iteration_time_s >= best.iteration_time_s * (1 - 1e-9)  # a restriction never helps


def test_duals_kept_on_the_solution_price_the_same_as_computed_afresh(quick):
    built = build(quick)
    with_duals = assign(built, run(built), duals=True)
    assert with_duals.duals and all(isinstance(v, float) for v in with_duals.duals.values())
    assert any(abs(v) > 0 for v in with_duals.duals.values())  # some constraint binds the period
    plain = dataclasses.replace(with_duals, duals=None)
    a, b = shadow_prices(quick, with_duals), shadow_prices(quick, plain)
    assert [(p.param, p.dT_dvalue, p.kink) for p in a.prices] == [(p.param, p.dT_dvalue, p.kink) for p in b.prices]
    assert "duals" in with_duals.to_dict() and "duals" not in plain.to_dict()
