"""The design columns and floors of the master (``Master._design_columns``, docs/formulation.md 3.7): a column
per design, and the row T >= sum of floor[d] design[d]. They change the master's LP relaxation, never its
integer points: the floor at a design is what the master without them says there, and both masters have
the same optimum under any evaluations."""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pyomo.environ as pyo
import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import codesign.milp.columns as columns_module
from codesign.milp.data import model_data
from codesign.milp.master import Evaluation, Master
from codesign.pipeline.search import choice_from
from codesign.problem.load import load_problem
from codesign.problem.model import SolverSpec

SPEC = SolverSpec(time_limit_s=30.0, mip_gap=1e-9)
QUICK = ROOT / "problems" / "quickstart.yaml"
RESNET = ROOT / "problems" / "resnet50_ace_torus3d.yaml"
DLRM_BASE = ROOT / "problems" / "paper" / "dlrm_n64_baseline.yaml"


def _plain(md, monkeypatch) -> Master:
    """The master without design columns (as one with more designs than ``DESIGN_COLUMNS_MAX`` is built)."""
    with monkeypatch.context() as mp:
        mp.setattr(columns_module, "DESIGN_COLUMNS_MAX", 0)
        m = Master(md)
    assert m.designs is None
    return m


def _with_intervals(plain: Master) -> Master:
    """``plain`` with every interval cut that any design of its catalog violates (``interval_cuts`` at T = 0):
    what the floors fold in as Jackson's bound at each design."""
    import itertools
    for combo in itertools.product(*(range(len(plain.space[r])) for r in plain.sized)):
        plain.interval_cuts(dict(zip(plain.sized, combo)), 0.0, max_cuts=10**6)
    return plain


def _fixed_value(master: Master, choice: dict[str, int]) -> float | None:
    """The master's optimum with y fixed at ``choice`` (None: infeasible), y released after."""
    y = master.model.y
    for r in master.sized:
        for o in range(len(master.space[r])):
            if not y[r, o].fixed:
                y[r, o].fix(1.0 if o == choice[r] else 0.0)
    try:
        master.compiled = None  # fixed columns are compiled as constants
        s = master.solve(SPEC, 30.0)
        return s.objective if s.status == "optimal" else None
    finally:
        for r in master.sized:
            for o in range(len(master.space[r])):
                if (r, o) not in master.ruled_out:
                    y[r, o].unfix()
        master.compiled = None


@pytest.mark.parametrize("path", [QUICK, RESNET, DLRM_BASE])
def test_a_floor_is_the_masters_value_at_its_design(path, monkeypatch):
    """relaxed[d] is the least T the master without design columns allows at design d (not more: the floors
    cut off nothing the master allows; not less: they are as strong as the master there)."""
    p = load_problem(path)
    p = dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=None, power_budget_w=None))
    md = model_data(p)
    m = Master(md)
    assert m.designs is not None and m.fits.all()
    m.solve(SPEC, 30.0)
    assert not np.isnan(m.relaxed).any()
    plain = _plain(md, monkeypatch)
    rnd = random.Random(1)
    for d in rnd.sample(range(len(m.designs)), min(6, len(m.designs))):
        choice = {r: int(m.designs[d, j]) for j, r in enumerate(m.sized)}
        want = _fixed_value(plain, choice)
        assert want is not None
        assert m.relaxed[d] == pytest.approx(want, rel=1e-7, abs=1e-6), choice



@pytest.mark.parametrize("path", [QUICK, RESNET, ROOT / "problems" / "paper" / "resnet50_n64_baseline.yaml"])
def test_jackson_at_every_design_is_what_interval_cuts_finds_there(path):
    """The floors' Jackson bounds, computed for all designs at once, are bit for bit the largest bound
    ``interval_cuts`` finds at each design alone (so skipping it where the floor holds loses nothing)."""
    m = Master(model_data(load_problem(path)))
    assert m.designs is not None and m._release_due is not None
    every = np.arange(len(m.designs))
    at_once = m._jackson_at(every)
    assert (at_once > m.P).all()
    for d in every:
        m.jackson[:] = 0.0
        m.interval_cuts(m._design_choice(int(d)), 0.0, max_cuts=0)  # records the largest bound at d in jackson
        assert m.jackson[d] == at_once[d]


def _evaluations(master: Master, seed: int, n: int) -> list[Evaluation]:
    """``n`` evaluations at random designs, each with a period at or above the master's floor there and a
    random plateau (what a replay might say)."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        choice = {r: rnd.randrange(len(master.space[r])) for r in master.sized}
        plateau = frozenset(r for r in master.sized if rnd.random() < 0.3)
        out.append(Evaluation(choice, master.P * rnd.uniform(1.0, 4.0), plateau))
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(0, 6), budget=st.sampled_from([None, 0.8, 1.5, 3.0]))
def test_with_and_without_design_columns_the_master_has_one_optimum(seed, n, budget, monkeypatch):
    """Under the same budgets and evaluation cuts, the master with design columns and floors and the one
    without (given the interval cuts the floors fold in) prove the same optimum, and the least-area design on
    it is the same."""
    p = load_problem(QUICK)
    p = dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=budget))
    md = model_data(p)
    a, b = Master(md), _with_intervals(_plain(md, monkeypatch))
    assert a.designs is not None
    for ev in _evaluations(a, seed, n):
        if any((r, o) in a.ruled_out for r, o in ev.choice.items()):
            continue
        a.add_evaluation(ev)
        b.add_evaluation(ev)
    x, y = a.solve(SPEC, 30.0), b.solve(SPEC, 30.0)
    assert x.status == y.status
    if x.status != "optimal":
        return
    assert x.objective == pytest.approx(y.objective, rel=1e-7)
    T = x.objective * (1 + 1e-7)
    assert a.smallest_at(SPEC, T, 30.0) and b.smallest_at(SPEC, T, 30.0)
    # HiGHS's binaries are integral within its tolerance (an area 1.5e-9 off was seen); the catalogs' areas
    # differ by far more than 1e-6
    assert pyo.value(a.model.area) == pytest.approx(pyo.value(b.model.area), abs=1e-6)


def test_a_design_the_relaxation_rules_out_is_held_at_zero():
    """Under an iteration-time target the master minimizes area; a design whose floor is above the target
    has no feasible point and is held at 0 (its relaxation proven infeasible), and the answer meets it."""
    p = load_problem(QUICK)
    md = model_data(p)
    probe = Master(md)
    probe.solve(SPEC, 30.0)
    floors = probe.relaxed[probe.fits]
    target_us = float(np.median(floors))
    m = Master(md, objective="area", time_target_s=target_us * 1e-6)
    s = m.solve(SPEC, 30.0)
    assert s.status == "optimal"
    out = np.isinf(m.relaxed)
    assert out.any() and not m.fits[out].any()
    assert all(m.model.design[int(d)].ub == 0 for d in np.flatnonzero(out))
    choice = choice_from(m)
    d = m._design_index[tuple(choice[r] for r in m.sized)]
    assert m.relaxed[d] <= target_us * (1 + 1e-9)


def test_floors_take_at_most_half_the_time_and_the_solve_stays_sound(monkeypatch):
    """With no time for floors, none is computed (nor Jackson's bounds), and the master still proves what the
    plain master does."""
    p = load_problem(RESNET)
    md = model_data(p)
    m = Master(md)
    m.compile()
    m._refloor(deadline=0.0)
    assert np.isnan(m.relaxed[m.fits]).all()
    assert not m.jackson_known.any()
    s = m.compiled.solve(SPEC, 30.0)
    plain = _plain(md, monkeypatch)  # no floor at all: the master as it is without them
    t = plain.solve(SPEC, 30.0)
    assert s.status == t.status == "optimal"
    assert s.objective == pytest.approx(t.objective, rel=1e-6)


def test_a_restart_keeps_the_floors_and_answers_as_a_fresh_master():
    """The floors hold under every budget (the budget rows are left out of them): a master restarted for
    tighter budgets keeps them, computes none again, and answers as a fresh one."""
    p = load_problem(RESNET)
    tight = dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=1.5))
    used = Master(model_data(p))
    used.solve(SPEC, 30.0)
    before = used.relaxed.copy()
    used.restart(model_data(tight))
    fresh = Master(model_data(tight))
    x, y = used.solve(SPEC, 30.0), fresh.solve(SPEC, 30.0)
    assert np.array_equal(used.relaxed[~np.isnan(before)], before[~np.isnan(before)])
    assert x.status == y.status == "optimal" and x.objective == pytest.approx(y.objective, rel=1e-9)
    # the same designs exist: the fresh build's, and none of the options the tighter budget rules out
    at = {tuple(int(x) for x in row): used.fits[d] for d, row in enumerate(used.designs)}
    fresh_at = {tuple(int(x) for x in row): fresh.fits[d] for d, row in enumerate(fresh.designs)}
    assert {k for k, ok in at.items() if ok} == {k for k, ok in fresh_at.items() if ok}
