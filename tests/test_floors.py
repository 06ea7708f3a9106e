"""The search by floors (pipeline/floors.py) returns the best design of the catalog, as replaying every design
finds it, and calls an answer optimal only where every design's proven bound is within the tie tolerance of it.

Small random catalogs of the quickstart's ACE engine (SRAM x ALU x DMA, 2-4 options each, random budgets),
searched three ways: the whole solve (whose search switches to the floors), the search by floors from the
start on a master with design columns, and on a master without them (its table, ``Master.tabulate``, as a
catalog beyond 256 designs has it). Each answer is checked against the replay of every design within the
budgets."""
from __future__ import annotations

import dataclasses
import math
import time

from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import codesign
import codesign.milp.columns as columns_module
from codesign.milp.data import model_data
from codesign.milp.master import fits_budgets
from codesign.pipeline.floors import search_by_floors, worth_switching
from codesign.pipeline.search import TIE, Search
from codesign.pipeline.solve import policy_evaluator
from codesign.platform.endpoint import Option, design_of
from codesign.sim.replay import simulate

QUICK = codesign.load_problem(ROOT / "problems" / "quickstart.yaml")
KIB = 1024


def _catalog(data) -> codesign.Problem:
    """The quickstart with random option lists and an area budget that leaves some designs out."""
    e = QUICK.engine
    sram = data.draw(st.lists(st.sampled_from([256, 512, 1024, 2048, 4096]), min_size=2, max_size=4, unique=True))
    rates = st.lists(st.sampled_from([50, 100, 200, 400, 800]), min_size=1, max_size=3, unique=True)
    alu, dma = data.draw(rates), data.draw(rates)
    res = {"sram": [Option(s * KIB, s / 2048, s / 8192) for s in sorted(sram)],
           "alu": [Option(r * 1e9, r / 300, r / 300) for r in sorted(alu)],
           "dma": [Option(r * 1e9, r / 500, r / 500) for r in sorted(dma)]}
    engine = dataclasses.replace(e, resources=res, area_budget_mm2=None, power_budget_w=None)
    largest = sum(max(o.area_mm2 for o in opts) for opts in res.values()) + engine.fixed_area_mm2
    least = sum(min(o.area_mm2 for o in opts) for opts in res.values()) + engine.fixed_area_mm2
    budget = least + data.draw(st.floats(0.3, 1.0)) * (largest - least)
    return dataclasses.replace(QUICK, engine=dataclasses.replace(engine, area_budget_mm2=budget))


def _replayed(p: codesign.Problem) -> dict[tuple, float]:
    """Every design within the budgets and its simulated period (us)."""
    import itertools
    out = {}
    space = p.engine.resources
    for combo in itertools.product(*(range(len(o)) for o in space.values())):
        c = dict(zip(space, combo))
        if fits_budgets(p, c):
            out[tuple(sorted(c.items()))] = simulate(p, design_of(p.engine, c)).period_s * 1e6
    return out


def _check(res, periods: dict[tuple, float]) -> None:
    best = min(periods.values())
    assert res.status == "optimal"
    got = periods[tuple(sorted(res.visit.choice.items()))]
    assert got <= best * (1 + TIE)  # the answer is the catalog's best
    assert res.bound <= best * (1 + 1e-9)  # the bound bounds every design
    assert got - res.bound <= TIE * got  # "optimal": within the tie tolerance of the bound


def _by_floors(p: codesign.Problem, monkeypatch, columns: bool, deadline: float = math.inf):
    md = model_data(p)
    search = Search(md, policy_evaluator(md), deadline=deadline)
    with monkeypatch.context() as mp:
        if not columns:
            mp.setattr(columns_module, "DESIGN_COLUMNS_MAX", 0)
        master = search.master()
    assert (master.designs is not None) == columns
    assert master.plain and master.tabulate()
    return search, search_by_floors(search, master, 0, 0, None)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_floors_find_the_catalogs_best_with_and_without_columns(data, monkeypatch):
    p = _catalog(data)
    periods = _replayed(p)
    for columns in (True, False):
        search, res = _by_floors(p, monkeypatch, columns)
        _check(res, periods)
        # every design evaluated lies within the budgets, and the covered ones were not replayed again
        assert all(fits_budgets(p, v.choice) for v in search.visits) and search.evaluated <= len(periods)
    s = codesign.solve(p)  # the whole solve: its search switches to the floors after its first master solve
    assert s.status == "optimal" and s.iteration_time_s * 1e6 <= min(periods.values()) * (1 + TIE)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_out_of_time_the_floors_answer_time_limit_with_a_true_bound(data, monkeypatch):
    """Stopped before the floors close on the answer, the search says time_limit (never optimal), and its
    bound is below every design's period."""
    p = _catalog(data)
    periods = _replayed(p)
    _, res = _by_floors(p, monkeypatch, columns=False, deadline=time.perf_counter() - 1.0)
    assert res.status == "time_limit" and res.bound <= min(periods.values()) * (1 + 1e-9)


def test_optimal_is_never_said_while_a_designs_floor_is_below_the_answer(monkeypatch):
    """A design whose floor is lowered below every period stands in the way of the proof: the search must
    evaluate it before it may say optimal (it cannot stop on the best evaluated design while it is open)."""
    p = dataclasses.replace(QUICK, engine=dataclasses.replace(QUICK.engine, area_budget_mm2=None))
    periods = _replayed(p)
    md = model_data(p)
    search = Search(md, policy_evaluator(md), deadline=math.inf)
    master = search.master()
    master.prepare(math.inf)
    worst = max(periods, key=periods.get)
    d = master._design_index[tuple(dict(worst)[r] for r in master.sized)]
    master.relaxed[d] = 0.0  # (a weaker floor: still a lower bound)
    master.jackson[d] = 0.0
    res = search_by_floors(search, master, 0, 0, None)
    _check(res, periods)
    assert any(v.choice == dict(worst) for v in search.visits)


def test_a_hooked_master_is_left_to_its_solves():
    """An extra hook may constrain the master beyond its floors: such a search never switches."""
    md = model_data(QUICK)
    search = Search(md, policy_evaluator(md), deadline=math.inf)
    master = search.master(extra=lambda m, p: None)
    assert not master.plain and not worth_switching(search, master, 1e9)
    res = search.run(master)
    assert res.status == "optimal" and not res.by_floors


def test_a_wide_catalog_solves_by_floors_to_the_enumerations_best():
    """A baseline catalog of 18 x 16 = 288 designs (beyond the 256 that get columns)."""
    p = codesign.load_problem(ROOT / "problems" / "paper" / "dlrm_n16_baseline.yaml")
    e = p.engine
    cores = [Option(float(c), 0.0, 0.0) for c in range(1, 37, 2)]
    shares = [Option(round(0.0625 * (i + 1), 4), 0.0, 0.0) for i in range(16)]
    p = dataclasses.replace(p, engine=dataclasses.replace(e, resources={"comm_cores": cores, "comm_hbm_share": shares}))
    s = codesign.solve(p)
    assert s.status == "optimal"
    periods = _replayed(p)
    assert len(periods) == 288
    assert s.iteration_time_s * 1e6 <= min(periods.values()) * (1 + TIE)
