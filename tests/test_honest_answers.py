"""The words of an answer match its numbers (issue 29): "infeasible" only when proven, "optimal" only
within the tie tolerance of the reported bound, and a search that stops says what stopped it."""
from __future__ import annotations

import itertools

import pytest
from conftest import ROOT

from codesign import load_problem, solve
from codesign.milp.master import fits_budgets
from codesign.pipeline.search import TIE
from codesign.platform.endpoint import design_of
from codesign.problem.model import at_design
from codesign.sim.replay import simulate

DATA = ROOT / "tests" / "data"


def _brute_force_s(p) -> float:
    """The least simulated period (s) over every design within the budgets."""
    space = p.engine.resources
    best = float("inf")
    for combo in itertools.product(*(range(len(o)) for o in space.values())):
        choice = dict(zip(space, combo))
        if fits_budgets(p, choice):
            best = min(best, simulate(at_design(p, choice), design_of(p.engine, choice)).period_s)
    return best


def test_periods_of_hours_are_solved_not_called_infeasible():
    # a 20 B/s ALU: periods of 2.6e10 us, where HiGHS called the master infeasible though 23 designs fit
    p = load_problem(DATA / "mlp_slow_alu.yaml")
    s = solve(p, time_limit=60)
    assert s.status == "optimal"
    assert s.iteration_time_s == pytest.approx(_brute_force_s(p), rel=TIE)  # (within TIE, the least area)
    assert s.bound_s <= s.iteration_time_s


def test_one_design_of_hours_is_its_own_answer():
    # nothing to size: HiGHS stopped with no solution, long before the time limit ("no design was evaluated")
    p = load_problem(DATA / "gpt_7b_slow_links_one_design.yaml")
    s = solve(p, time_limit=60)
    assert s.status == "optimal"
    assert s.iteration_time_s == pytest.approx(_brute_force_s(p), rel=1e-12)
