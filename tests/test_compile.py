"""The compiled master: ``CompiledModel`` reads the masters' expressions with its own walker
(``_sum_of_terms``) and hands the build to HiGHS in one call per kind; both must give exactly what
Pyomo's general walker and one call per row gave."""
from __future__ import annotations

import highspy
import numpy as np
import pyomo.environ as pyo
import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from pyomo.repn.linear import LinearRepnVisitor
from pyomo.repn.util import VarRecorder

import codesign.milp.highs as H
from codesign.milp.data import model_data
from codesign.milp.master import Master
from codesign.problem.load import load_problem


def _model() -> pyo.ConcreteModel:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(4))
    m.p = pyo.Param(mutable=True, initialize=2.5)
    m.e = pyo.Expression(expr=3 * m.x[0] - m.x[1] + 1.5)
    return m


def _pyomo(expr) -> tuple[float, dict[int, float]]:
    """Pyomo's own walker: the constant and the coefficient per variable (by id), summed."""
    var_map: dict[int, object] = {}
    repn = LinearRepnVisitor({}, var_recorder=VarRecorder(var_map, None)).walk_expression(expr)
    assert repn.nonlinear is None
    k = repn.multiplier
    return k * float(repn.constant), {i: k * float(c) for i, c in repn.linear.items()}


def _ours(expr) -> tuple[float, dict[int, float]]:
    const, terms = H._sum_of_terms(expr)
    out: dict[int, float] = {}
    for v, c in terms:
        out[id(v)] = out.get(id(v), 0.0) + c
    return const, out


def _expressions(m: pyo.ConcreteModel):
    """Linear expressions as the masters write them: numbers, variables, sums, scaled, negated and divided
    sub-expressions, a named expression; and (rarely) a mutable parameter, which our walker leaves to Pyomo."""
    leaf = st.one_of(st.floats(-1e3, 1e3, allow_nan=False).map(lambda f: round(f, 3)),
                     st.integers(-5, 5), st.sampled_from([m.x[i] for i in range(4)]), st.just(m.e), st.just(m.p))

    def extend(inner):
        num = st.one_of(st.integers(-4, 4), st.floats(-10, 10, allow_nan=False).map(lambda f: round(f, 2)))
        return st.one_of(
            st.lists(inner, min_size=2, max_size=4).map(sum),
            st.tuples(num, inner).map(lambda t: t[0] * t[1]),
            st.tuples(inner, num).map(lambda t: t[0] * t[1]),
            inner.map(lambda e: -e),
            st.tuples(inner, st.sampled_from([2, 4.0, -8])).map(lambda t: t[0] / t[1]),
            st.tuples(inner, inner).map(lambda t: t[0] - t[1]),
        )
    return st.recursive(leaf, extend, max_leaves=12)


M = _model()


@settings(max_examples=300, deadline=None)
@given(_expressions(M))
def test_our_walker_reads_linear_expressions_as_pyomo_does(expr):
    if not hasattr(expr, "is_expression_type") or (not expr.is_expression_type() and not expr.is_variable_type()):
        expr = 0 * M.x[0] + expr  # a bare number: give it an expression to be part of
    want_c, want = _pyomo(expr)
    try:
        got_c, got = _ours(expr)
    except H._Unhandled:
        return  # a parameter or a product of two variables: Pyomo's walker reads it (below)
    assert got_c == pytest.approx(want_c, rel=1e-12, abs=1e-9)
    for key in set(want) | set(got):
        assert got.get(key, 0.0) == pytest.approx(want.get(key, 0.0), rel=1e-12, abs=1e-9)


def test_what_our_walker_leaves_to_pyomo_compiles_the_same():
    """A mutable parameter and a named expression in a row: the compiled row is Pyomo's reading of it."""
    m = _model()
    m.c = pyo.Constraint(expr=m.p * m.x[2] + m.e >= 10)  # not held back (_Held): 0 breaks it
    m.obj = pyo.Objective(expr=m.x[3])
    c = H.CompiledModel(m)
    lp = c.h.getModel().lp_
    const, coefs = _pyomo(m.c.body)
    a = lp.a_matrix_
    if a.format_ == highspy.MatrixFormat.kRowwise:
        row = {id(c.vars[a.index_[q]]): a.value_[q] for q in range(a.start_[0], a.start_[1])}
    else:
        row = {id(c.vars[j]): a.value_[q] for j in range(lp.num_col_) for q in range(a.start_[j], a.start_[j + 1])}
    assert row == pytest.approx(coefs)
    assert lp.row_lower_[0] == pytest.approx(10 - const)


@pytest.mark.parametrize("name", ["quickstart.yaml", "resnet50_ace_torus3d.yaml", "libra/gpt3_3d.yaml",
                                  "paper/dlrm_n64_ace.yaml"])
def test_a_master_compiles_to_the_model_pyomos_walker_gives_bit_for_bit(name, monkeypatch):
    md = model_data(load_problem(ROOT / "problems" / name))
    fast = Master(md).compile().h.getModel().lp_

    def pyomo_only(expr):
        raise H._Unhandled
    monkeypatch.setattr(H, "_sum_of_terms", pyomo_only)
    slow = Master(md).compile().h.getModel().lp_
    for attr in ("col_cost_", "col_lower_", "col_upper_", "row_lower_", "row_upper_", "integrality_"):
        assert list(getattr(fast, attr)) == list(getattr(slow, attr)), attr
    for attr in ("start_", "index_", "value_"):
        assert list(getattr(fast.a_matrix_, attr)) == list(getattr(slow.a_matrix_, attr)), attr
    assert np.all(np.isfinite(fast.col_cost_))
