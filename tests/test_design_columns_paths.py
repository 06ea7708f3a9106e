"""Paths of the master's design columns and floors (``Master._design_columns``, docs/formulation.md 3.7) that
tests/test_design_columns.py leaves alone: a family skipping the hints whose floor rules them out
(``Family.master``), ``interval_cuts`` returning at once where the floor row holds Jackson's bound, ``exclude``
through the columns (under ``order: optimize``), ``smallest_at`` holding the designs above its period at 0 and
giving every column its bound back, and the floors of network design spaces (listed options and grid cells)."""
from __future__ import annotations

import dataclasses
import itertools
import random
import time

import numpy as np
import pytest
from conftest import ROOT
from test_design_columns import _fixed_value, _plain, _with_intervals

import codesign.milp.master as master_module
import codesign.pipeline.solve as solve_module
from codesign.milp.data import ModelData, model_data
from codesign.milp.master import Evaluation, Master, fits_budgets
from codesign.pipeline.search import choice_from
from codesign.pipeline.solve import Family, build, policy_evaluator, run
from codesign.platform.endpoint import design_area_mm2
from codesign.platform.network import grid
from codesign.problem.load import load_problem
from codesign.problem.model import SolverSpec

SPEC = SolverSpec(time_limit_s=30.0, mip_gap=1e-9)
QUICK = ROOT / "problems" / "quickstart.yaml"
RESNET = ROOT / "problems" / "resnet50_ace_torus3d.yaml"
RESNET_OPT = ROOT / "problems" / "resnet50_ace_optimize_torus3d.yaml"
LIBRA_RESNET = ROOT / "problems" / "libra" / "resnet50_3d.yaml"
LIBRA_GPT3 = ROOT / "problems" / "libra" / "gpt3_3d.yaml"
#: the relative margin ``Family.master`` gives a hint's floor over the period it is held against
HINT_MARGIN = 1e-7


def _key(choice: dict[str, int]) -> tuple:
    """A design as ``Family.replays`` keys it."""
    return tuple(sorted(choice.items()))


def _every_design(space: dict) -> list[dict[str, int]]:
    return [dict(zip(space, c)) for c in itertools.product(*(range(len(o)) for o in space.values()))]


def _budgetless(p):
    return dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=None, power_budget_w=None))


def _prepared(md: ModelData) -> Master:
    """A master whose floors are all computed (every design within the budgets)."""
    m = Master(md)
    m.prepare(time.perf_counter() + 30.0)
    assert m.designs is not None and not np.isnan(m.relaxed[m.fits]).any() and m.jackson_known[m.fits].all()
    return m


def _expected_hints(hints, floor, period, best: float | None, cap: float | None):
    """Which hints ``Family.master`` replays, by its rule said again: in order, a hint within the budgets is
    skipped when its floor is above the cap (minimizing time: the least period of a design within the budgets
    replayed so far, hints included; else the time target), else replayed. Checks no floor is within 1e-6 of its
    cap (a tie the rule could take either way)."""
    evaluated, skipped = [], []
    for c in hints:
        limit = best if cap is None else cap
        f = floor[_key(c)]
        assert limit == np.inf or abs(f - limit) > 1e-6 * limit, (c, f, limit)
        if limit is not None and f > limit * (1 + HINT_MARGIN):
            skipped.append(_key(c))
            continue
        evaluated.append(_key(c))
        if cap is None:
            best = min(best, period[_key(c)])
    return evaluated, skipped


def _recording_evaluator(monkeypatch) -> list[tuple]:
    """Record every design a family's evaluator replays (``Family.evaluator`` wraps ``policy_evaluator``)."""
    calls: list[tuple] = []
    real = solve_module.policy_evaluator

    def recording(md):
        evaluate = real(md)

        def each(choice):
            calls.append(_key(choice))
            return evaluate(choice)
        return each
    monkeypatch.setattr(solve_module, "policy_evaluator", recording)
    return calls


def test_a_hint_whose_floor_is_above_the_best_fitting_period_is_not_replayed(monkeypatch):
    """Minimizing time, a member's master replays a hint only if its floor is at most the least period of the
    designs within the member's budgets the family has replayed (an earlier member's, or an earlier hint's):
    a design above it cannot be the answer. Hints at or below it are replayed, before the first master solve."""
    p = load_problem(QUICK)
    md = model_data(p)
    probe = _prepared(model_data(_budgetless(p)))  # the floors hold under every budget
    designs = _every_design(md.space)
    floor = {_key(c): probe.floor_at(c) for c in designs}
    evaluate = policy_evaluator(md)
    period = {_key(c): evaluate(c)[0].period_us for c in designs}
    # the first member: budgets that leave out the design of least floor, so that its answer is another
    least = min(designs, key=lambda c: floor[_key(c)])
    first = dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=design_area_mm2(p.engine, least)
                                                              * (1 - 1e-3)))
    fam = Family(first)
    solve_module.solve(first, family=fam)
    before = set(fam.replays)
    assert before
    # the second member is the problem itself: hints are the designs within its budgets not replayed yet, the
    # highest floor first (so that some come after a replay whose period is below their floor)
    hints = sorted((c for c in designs if fits_budgets(p, c) and _key(c) not in before), key=lambda c: -floor[_key(c)])
    fam.hint(hints)
    best = min(period[k] for k in before if fits_budgets(p, dict(k)))
    evaluated, skipped = _expected_hints(fam.hints, floor, period, best, None)
    assert evaluated and skipped  # both paths are taken
    calls = _recording_evaluator(monkeypatch)
    b = build(p, family=fam, time_limit=60.0)
    assert calls == evaluated  # in the hints' order, the skipped ones never replayed
    assert set(fam.replays) - before == set(evaluated)
    assert b.search.known == len(b.search.visits) == sum(fits_budgets(p, dict(k)) for k in fam.replays)
    for k in skipped:
        assert b.master.floor_at(dict(k)) == pytest.approx(floor[k], rel=1e-9)


def test_a_replayed_hint_lowers_the_period_the_later_hints_are_held_against(monkeypatch):
    """In a family that has replayed nothing, the first hint is replayed (no period to hold it against), and
    its period is the cap of the hints after it: the least floor first, every later hint above its period is
    skipped."""
    p = load_problem(QUICK)
    md = model_data(p)
    probe = _prepared(model_data(_budgetless(p)))
    designs = [c for c in _every_design(md.space) if fits_budgets(p, c)]
    floor = {_key(c): probe.floor_at(c) for c in designs}
    evaluate = policy_evaluator(md)
    period = {_key(c): evaluate(c)[0].period_us for c in designs}
    fam = Family(p)
    fam.hint(sorted(designs, key=lambda c: floor[_key(c)]))
    evaluated, skipped = _expected_hints(fam.hints, floor, period, np.inf, None)
    assert evaluated and skipped
    calls = _recording_evaluator(monkeypatch)
    build(p, family=fam, time_limit=60.0)
    assert calls == evaluated and set(fam.replays) == set(evaluated)


def test_minimizing_area_a_hint_whose_floor_misses_the_time_target_is_not_replayed(monkeypatch):
    """Minimizing area under an iteration-time target, the cap is the target, not a replayed period: a hint whose
    floor is above it (its floor LP infeasible under the target's row, or Jackson's bound above it) is skipped;
    the rest are replayed, in order."""
    base = load_problem(QUICK)
    probe = _prepared(model_data(_budgetless(base)))
    target_us = float(np.median(probe.relaxed[probe.fits]))
    p = dataclasses.replace(base, objective=dataclasses.replace(base.objective, minimize="area",
                                                                iteration_time_target_s=target_us * 1e-6))
    md = model_data(p)
    area_probe = _prepared(model_data(_budgetless(p)))  # the target's row is in the floors' LPs
    assert area_probe.time_target_us == pytest.approx(target_us)
    designs = [c for c in _every_design(md.space) if fits_budgets(p, c)]
    floor = {_key(c): area_probe.floor_at(c) for c in designs}
    assert np.isinf(area_probe.relaxed).any()  # designs whose relaxation the target makes infeasible
    assert all(floor[_key(area_probe._design_choice(int(d)))] == np.inf for d in np.flatnonzero(
        np.isinf(area_probe.relaxed)) if fits_budgets(p, area_probe._design_choice(int(d))))  # no floor there
    fam = Family(p)
    fam.hint(designs)
    evaluated, skipped = _expected_hints(fam.hints, floor, {}, None, target_us)
    assert evaluated and skipped
    calls = _recording_evaluator(monkeypatch)
    b = build(p, family=fam, time_limit=60.0)
    assert b.master.objective == "area" and b.master.time_target_us == pytest.approx(target_us)
    assert calls == evaluated and set(fam.replays) == set(evaluated)


@pytest.mark.parametrize("path", [QUICK, RESNET])
def test_interval_cuts_return_at_once_where_the_floor_row_holds_jacksons_bound(path):
    """Where the floors hold Jackson's bound at a design (``jackson_known``, and a floor row), ``interval_cuts``
    adds nothing there, whatever the period, and returns 0; where they do not (floors that ran out of time, a
    restart that dropped the floor row), it adds the cuts the design violates, each a row of ``m.interval``."""
    md = model_data(load_problem(path))
    m = _prepared(md)
    assert m._release_due is not None
    fitting = [int(d) for d in np.flatnonzero(m.fits)]
    assert len(fitting) >= 2 and (m._floored[fitting] > m.P).all()
    jackson = m.jackson.copy()
    for d in fitting:
        assert m.interval_cuts(m._design_choice(d), 0.0, max_cuts=10**6) == 0
    assert len(m.model.interval) == 0 and m.intervals == {} and np.array_equal(m.jackson, jackson)

    # a restart drops the floor row (its floors and Jackson's bounds stay): the cuts are needed again
    d = fitting[0]
    m.restart(md)
    assert m._floored is None and m.jackson_known[d]
    added = m.interval_cuts(m._design_choice(d), 0.0, max_cuts=10**6)
    assert added > 0 and len(m.model.interval) == added == len(m.intervals)
    m._refloor(time.perf_counter() + 30.0)  # the floor row again: nothing more at any design
    n = len(m.model.interval)
    assert all(m.interval_cuts(m._design_choice(e), 0.0, max_cuts=10**6) == 0 for e in fitting)
    assert len(m.model.interval) == n

    # floors that had no time: no Jackson's bound known; a floor row all the same (an evaluation's period there)
    fresh = Master(md)
    fresh.compile()
    choice = fresh._design_choice(d)
    fresh.add_evaluation(Evaluation(choice, 2 * fresh.P))
    fresh._refloor(deadline=0.0)
    assert not fresh.jackson_known.any() and fresh._floored[d] == 2 * fresh.P
    added = fresh.interval_cuts(choice, 0.0, max_cuts=10**6)
    assert added > 0 and len(fresh.model.interval) == added
    assert fresh.jackson[d] == jackson[d]  # the bound the worst cut says there: the floors' Jackson bound


def _region(space: dict, sized: list[str], choice: dict[str, int], plateau: frozenset[str]) -> set[tuple]:
    """The designs (as tuples over ``sized``) equal to ``choice`` but for options at least as large in ``plateau``."""
    out = set()
    for c in itertools.product(*(range(len(space[r])) for r in sized)):
        if all(space[r][o].value >= space[r][choice[r]].value if r in plateau else o == choice[r]
               for r, o in zip(sized, c)):
            out.add(c)
    return out


def _design_of(master: Master) -> tuple:
    choice = choice_from(master)
    return tuple(choice[r] for r in master.sized)


def test_exclude_marks_exactly_its_region_and_the_master_never_picks_from_it(monkeypatch):
    """``exclude`` on a master with design columns (``order: optimize``, whose search excludes every design it
    evaluates): the ``excluded`` mask is the region (the design and, with a plateau, those larger only there),
    and the master's optima, excluding each in turn, are every design within the budgets outside the region, at
    the values of the master without columns under the same exclusions, then infeasible."""
    p = load_problem(QUICK)
    p = dataclasses.replace(p, schedule=dataclasses.replace(p.schedule, order="optimize"))
    md = model_data(p)
    m, plain = Master(md), _with_intervals(_plain(md, monkeypatch))
    assert m.designs is not None
    sized, space = m.sized, m.space
    at = {tuple(int(x) for x in row): d for d, row in enumerate(m.designs)}
    small = {r: 0 for r in space}
    regions = [(small, frozenset({sized[0]})), ({**small, sized[1]: 1, sized[2]: 1}, frozenset())]
    gone: set[tuple] = set()
    for choice, plateau in regions:
        m.exclude(choice, plateau)
        plain.exclude(choice, plateau)
        gone |= _region(space, sized, choice, plateau)
        assert {tuple(int(x) for x in m.designs[d]) for d in np.flatnonzero(m.excluded)} == gone
    assert 1 < len(gone) < len(m.designs) - 1
    left = {k for k, d in at.items() if m.fits[d]} - gone
    seen = []
    while True:
        x, y = m.solve(SPEC, 30.0), plain.solve(SPEC, 30.0)
        assert x.status == y.status
        if x.status != "optimal":
            break
        assert x.objective == pytest.approx(y.objective, rel=1e-7)
        k = _design_of(m)
        assert k not in gone and not m.excluded[at[k]]
        seen.append(k)
        m.exclude(dict(zip(sized, k)))
        plain.exclude(dict(zip(sized, k)))
        gone.add(k)
        assert m.excluded[at[k]]
    assert x.status == "infeasible" and sorted(seen) == sorted(left)


def test_an_optimize_search_never_proposes_a_design_it_excluded(monkeypatch):
    """Through the pipeline (``order: optimize``: each evaluated design and its plateau leave the master): no
    master answer, nor the least-area design ``smallest_at`` loads, is a design excluded before it, and the
    mask at the end is the union of the regions excluded (ResNet-50's shipped ``order: optimize`` problem, whose
    search takes plateaus out with its evaluated designs)."""
    p = load_problem(RESNET_OPT)
    assert p.schedule.order == "optimize"
    built = build(p, time_limit=60.0)
    m = built.master
    assert m.designs is not None
    at = {tuple(int(x) for x in row): d for d, row in enumerate(m.designs)}
    calls, picked = [], []

    def checked(real):
        def each(*args, **kw):
            out = real(*args, **kw)
            ok = out.has_solution if hasattr(out, "has_solution") else out
            if ok:
                d = at[_design_of(m)]
                assert not m.excluded[d], f"{real.__name__} picked design {d}, excluded"
                picked.append(d)
            return out
        return each
    monkeypatch.setattr(m, "solve", checked(m.solve))
    monkeypatch.setattr(m, "smallest_at", checked(m.smallest_at))
    real_exclude = m.exclude

    def exclude(choice, plateau=frozenset()):
        calls.append((dict(choice), frozenset(plateau)))
        real_exclude(choice, plateau)
    monkeypatch.setattr(m, "exclude", exclude)
    res = run(built)
    assert res.visit is not None and len(calls) >= 2 and any(pl for _, pl in calls) and picked
    want = set().union(*(_region(m.space, m.sized, c, pl) for c, pl in calls))
    assert {tuple(int(x) for x in m.designs[d]) for d in np.flatnonzero(m.excluded)} == want
    assert {at[tuple(v.choice[r] for r in m.sized)] for v in built.search.visits} <= set(np.flatnonzero(m.excluded))


def _col_bounds(m: Master) -> tuple[np.ndarray, np.ndarray]:
    """HiGHS's bounds of the design columns, in design order."""
    lp = m.compiled.h.getLp()
    cols = [m.compiled.col[id(m.model.design[d])] for d in range(len(m.designs))]
    return np.asarray(lp.col_lower_)[cols], np.asarray(lp.col_upper_)[cols]


def test_smallest_at_holds_the_designs_above_its_period_at_zero_and_restores_every_bound():
    """During its run ``smallest_at`` holds at 0 exactly the designs within the budgets whose floor is above its
    period (less a design a hook already held at 0); after it every column has its bound back, in Pyomo and in
    HiGHS, the hook's 0 included; the design it loads is within the period by its floor, not the hook's."""
    md = model_data(load_problem(RESNET))
    m = Master(md)
    assert m.designs is not None
    probe = _prepared(md)
    fitting = np.flatnonzero(probe.fits)
    # as an extra hook would, before the compile: the master's answer, were it not held, and a design whose
    # floor is above any period asked (which ``smallest_at`` must leave at 0, not restore to 1)
    held = int(fitting[np.argmin(probe._floors()[fitting])])
    high = int(fitting[np.argmax(probe._floors()[fitting])])
    for d in (held, high):
        m.model.design[d].setub(0)
    s = m.solve(SPEC, 30.0)
    assert s.status == "optimal"
    floors = m._floored
    T = float(np.median(floors[m.fits]))
    ub = [m.model.design[d].ub for d in range(len(m.designs))]
    lo0, hi0 = _col_bounds(m)
    assert hi0[held] == hi0[high] == 0 and ub[held] == ub[high] == 0
    c = m.compiled
    during = []
    real = c.solve

    def spy(*args, **kw):
        during.append(_col_bounds(m)[1])
        return real(*args, **kw)
    c.solve = spy
    try:
        assert m.smallest_at(SPEC, T, 30.0)
    finally:
        del c.solve
    above = m.fits & (floors > T + 1e-9 + 10 * c.tolerance)
    assert above[high] and (above & (hi0 == 1)).any() and (m.fits & ~above).sum() >= 3  # held ones, and a choice
    assert len(during) == 1
    want = np.where(above, 0.0, hi0)
    assert np.array_equal(during[0], want)
    lo1, hi1 = _col_bounds(m)
    assert np.array_equal(lo1, lo0) and np.array_equal(hi1, hi0)
    assert [m.model.design[d].ub for d in range(len(m.designs))] == ub
    choice = choice_from(m)
    d = m._design_index[tuple(choice[r] for r in m.sized)]
    assert d not in (held, high) and m.fits[d] and m.floor_at(choice) <= T * (1 + 1e-9)
    # the least area (then network cost) among the designs within the period, the held one left out
    ok = [e for e in np.flatnonzero(m.fits & ~above) if e not in (held, high)]
    assert design_area_mm2(m.engine, choice) == pytest.approx(min(design_area_mm2(m.engine, m._design_choice(int(e)))
                                                                  for e in ok), abs=1e-9)


def _shrunk(path, pick) -> object:
    """``path``'s problem with each open dimension's bandwidths cut to ``pick(options)`` (its link bandwidth
    the largest left, as the loader sets it), so that its designs fit ``DESIGN_COLUMNS_MAX``."""
    p = load_problem(path)
    net = p.network
    bws = tuple(pick(b) for b in net.bandwidths)
    topo = dataclasses.replace(p.topology, dims=tuple(dataclasses.replace(d, link_bandwidth=b[-1])
                                                      for d, b in zip(p.topology.dims, bws)))
    return dataclasses.replace(p, topology=topo, network=dataclasses.replace(net, bandwidths=bws))


def _cells(p, tolerance: float = 1.0):
    """``p`` with each open dimension a range from its least to its largest bandwidth, on the grid of that
    tolerance (``ModelData.cells``: option o stands for its grid cell)."""
    net = p.network
    bws = tuple(grid(b[0], b[-1], tolerance) if len(b) > 1 else b for b in net.bandwidths)
    tol = tuple(tolerance if len(b) > 1 else None for b in net.bandwidths)
    q = dataclasses.replace(p, network=dataclasses.replace(net, bandwidths=bws, tolerance=tol))
    md = model_data(q)
    return ModelData(q, md.iteration, md.demands, cells=True)


def _network_cases():
    first3 = lambda b: b[:3]  # noqa: E731
    return {"libra_resnet50": lambda: model_data(_shrunk(LIBRA_RESNET, first3)),
            "libra_gpt3": lambda: model_data(_shrunk(LIBRA_GPT3, first3)),
            "libra_resnet50_cells": lambda: _cells(_shrunk(LIBRA_RESNET, first3))}


@pytest.mark.parametrize("case", sorted(_network_cases()))
def test_a_network_designs_floor_is_the_plain_masters_value_there(case, monkeypatch):
    """With open link bandwidths (listed, or grid cells), the floor at a design within the budgets is the least
    T of the master without design columns with y fixed there: its relaxation alone (``relaxed``), and with the
    interval cuts that design violates (the floor, Jackson's bound folded in)."""
    md = _network_cases()[case]()
    assert md.problem.network is not None and any(r.startswith("bw[") for r in md.sized)
    m = _prepared(md)
    assert 64 < len(m.designs) <= master_module.DESIGN_COLUMNS_MAX and 2 <= m.fits.sum() < len(m.designs)
    assert {r for r in m.sized if r.startswith("bw[")} == {f"bw[{d}]" for d in range(3)}
    bare, cut = _plain(md, monkeypatch), _plain(md, monkeypatch)
    rnd = random.Random(3)
    sample = rnd.sample([int(d) for d in np.flatnonzero(m.fits)], 5)
    for d in sample:
        choice = m._design_choice(d)
        want = _fixed_value(bare, choice)
        assert want is not None and m.relaxed[d] == pytest.approx(want, rel=1e-6), choice
        if cut._release_due is not None:
            cut.interval_cuts(choice, 0.0, max_cuts=10**6)
        want = _fixed_value(cut, choice)
        assert m.floor_at(choice) == pytest.approx(want, rel=1e-6), choice
    if m._release_due is not None:
        assert any(m.jackson[d] > m.relaxed[d] * (1 + 1e-6) for d in sample)  # Jackson's bound counts somewhere
    if md.cells:  # a cell's link times are its upper bandwidth's: no floor above the grid point's, some below
        grid_md = model_data(md.problem)
        at_points = _prepared(grid_md)
        assert np.array_equal(at_points.designs, m.designs)
        ok = m.fits & at_points.fits
        assert (m._floors()[ok] <= at_points._floors()[ok] * (1 + 1e-9)).all()
        assert (m._floors()[ok] < at_points._floors()[ok] * (1 - 1e-6)).any()


def test_an_infinite_time_limit_computes_every_floor():
    """An infinite deadline (the API's ``time_limit=math.inf``) sizes Jackson's parts as the rest at once."""
    import math

    from codesign.pipeline.solve import solve
    p = load_problem(QUICK)
    master = Master(model_data(p))
    master.prepare(math.inf)
    assert master.jackson_known[master.fits].all() and not np.isnan(master.relaxed[master.fits]).any()
    assert solve(p, time_limit=math.inf).status == "optimal"
