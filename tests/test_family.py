"""A family's answers (``pipeline.solve.Family``: the solves of one problem under several budgets, sharing
replays, cuts, masters and answers) against brute force: every design of a 27-design catalog replayed once,
and each member's answer checked against the best design within its budgets. Whatever the order the
members come in, every reported word holds: the status, the design within the budgets, the period the
design replays to, the bound below every design within them, and "optimal" within the MIP gap."""
from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codesign.errors import InfeasibleError
from codesign.milp.master import within
from codesign.pipeline.solve import Family, solve
from codesign.platform.endpoint import design_area_mm2, design_of, design_power_w
from codesign.problem.load import parse_problem
from codesign.problem.model import Objective, at_design
from codesign.sim.replay import simulate
from codesign.spec.yamlfile import load_yaml

QUICK = Path(__file__).resolve().parent.parent / "problems" / "quickstart.yaml"


@pytest.fixture(scope="module")
def catalog():
    """The quickstart with a third option per resource, and every design's replayed period (s)."""
    doc = load_yaml(QUICK)
    eng = doc["engine"]
    eng["sram"].append({"size": "8 MiB", "area": "2.1 mm^2", "power": "0.6 W"})
    eng["alu"].insert(1, {"rate": "200 GB/s", "area": "0.6 mm^2", "power": "0.55 W"})
    eng["dma"].insert(1, {"bandwidth": "200 GB/s", "area": "0.45 mm^2", "power": "0.4 W"})
    base = parse_problem(doc, "three_options.yaml")
    e = base.engine
    designs = [dict(zip(e.resources, c)) for c in itertools.product(*(range(len(o)) for o in e.resources.values()))]
    period = {tuple(sorted(c.items())): simulate(at_design(base, c), design_of(e, c)).period_s for c in designs}
    return base, designs, period


def _best(q, designs, period) -> float | None:
    """The least objective of the designs within ``q``'s budgets (and its time target), or None."""
    e, obj = q.engine, q.objective
    key = lambda c: tuple(sorted(c.items()))  # noqa: E731
    ok = [c for c in designs
          if (e.area_budget_mm2 is None or within(design_area_mm2(e, c), e.area_budget_mm2))
          and (e.power_budget_w is None or within(design_power_w(e, c), e.power_budget_w))
          and (obj.iteration_time_target_s is None or period[key(c)] <= obj.iteration_time_target_s * (1 + 1e-9))]
    value = {"iteration_time": lambda c: period[key(c)], "area": lambda c: design_area_mm2(e, c)}[obj.minimize]
    return min(map(value, ok), default=None)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objective=st.sampled_from(["iteration_time", "area"]), slack=st.sampled_from([1.0, 1.05, 1.5]),
       budgets=st.lists(st.tuples(st.integers(0, 26), st.sampled_from([0.0, 1e-13, -1e-9, 0.05]),
                                  st.one_of(st.none(), st.integers(0, 26))), min_size=2, max_size=5),
       largest_first=st.booleans())
def test_every_member_answers_as_brute_force_says(catalog, objective, slack, budgets, largest_first):
    base, designs, period = catalog
    e = base.engine
    areas = sorted(design_area_mm2(e, c) for c in designs)
    powers = sorted(design_power_w(e, c) for c in designs)
    target = None if objective == "iteration_time" else slack * min(period.values())
    members = [dataclasses.replace(base, objective=Objective(objective, target), engine=dataclasses.replace(
        e, area_budget_mm2=areas[a] + d, power_budget_w=None if w is None else powers[w])) for a, d, w in budgets]
    if largest_first:  # as a sweep runs them: later members may take an earlier one's answer
        members.sort(key=lambda q: (-q.engine.area_budget_mm2, -(q.engine.power_budget_w or math.inf)))
    family = Family(members[0])
    gap = base.solver.mip_gap
    for q in members:
        best = _best(q, designs, period)
        try:
            s = solve(q, family=family)
        except InfeasibleError:
            assert best is None, (q.engine, best)
            continue
        assert best is not None and s.status == "optimal", (q.engine, s.status)
        qe = q.engine
        assert within(s.area_mm2, qe.area_budget_mm2)
        assert qe.power_budget_w is None or within(s.power_w, qe.power_budget_w)
        assert s.iteration_time_s == period[tuple(sorted(s.choice.items()))]
        value = s.iteration_time_s if objective == "iteration_time" else s.area_mm2
        assert best <= value <= best * (1 + gap) + 1e-12, (q.engine, value, best)
        assert s.objective_bound <= best * (1 + 1e-9) + 1e-12, (q.engine, s.objective_bound, best)
        if target is not None:
            assert s.iteration_time_s <= target * (1 + 1e-9)


def test_no_answer_is_over_its_budget_once_its_binaries_are_rounded(catalog):
    """HiGHS takes a binary within 1e-6 of 0 or 1, so the master's budget row can hold at y = 0.9999997 for a
    design over the budget; such a design is cut off (``Master.admits``), never the answer."""
    base, designs, _ = catalog
    e = base.engine
    for a in sorted({design_area_mm2(e, c) for c in designs})[1:]:
        for below in (5e-7, 1e-9):
            q = dataclasses.replace(base, engine=dataclasses.replace(e, area_budget_mm2=a - below))
            s = solve(q)
            assert s.status == "optimal" and within(s.area_mm2, a - below), (a, below, s.area_mm2)


def test_a_member_under_an_infeasible_member_s_budgets_is_infeasible_without_a_solve():
    p = parse_problem(load_yaml(QUICK), "quickstart.yaml")
    p = dataclasses.replace(p, objective=Objective("area", 300e-6))  # faster than any design replays
    at = lambda a: dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=a))  # noqa: E731
    family = Family(p)
    with pytest.raises(InfeasibleError, match="target 300 us < best achievable") as larger:
        solve(at(3.0), family=family)
    with pytest.raises(InfeasibleError) as smaller:
        solve(at(2.0), family=family)
    assert str(smaller.value) == ("infeasible as under budgets at least this point's, which admit every design "
                                  f"these admit (area 3 mm^2, power none): {larger.value}")
    with pytest.raises(InfeasibleError, match="^iteration-time target 300 us < best achievable"):
        solve(at(3.5), family=family)  # larger budgets: solved, and proven infeasible on their own
