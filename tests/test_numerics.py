"""Never a wrong answer from numbers HiGHS cannot hold, nor from a time limit.

An option a budget rules out takes its coefficients out of the model, however large; figures HiGHS
cannot hold beside nanoseconds are refused, naming the key; a time limit that stops a search before it
finds a design meeting a target says so, and never calls the problem infeasible.
"""
from __future__ import annotations

import dataclasses

import pytest
from conftest import ROOT, ace, problem, ring2, two_layer_workload

import codesign
from codesign import InfeasibleError, SolverError, SpecError, solve
from codesign.platform.endpoint import Option
from codesign.platform.topology import Dim, Topology
from codesign.problem.model import Objective
from codesign.workload.model import Comm, Compute, Layer, Workload

SLOW, FAST = (100e9, 1.0), (400e9, 2.0)


def with_option(engine, resource: str, option: Option, first: bool = True):
    opts = (option, *engine.resources[resource]) if first else (*engine.resources[resource], option)
    return dataclasses.replace(engine, resources={**engine.resources, resource: opts})


def test_an_option_no_budget_admits_leaves_the_model_whatever_its_area():
    eng = ace([SLOW, FAST], area_budget_mm2=2.5)
    base = solve(problem(two_layer_workload(), ring2(), eng))
    for area in (1e15, 1e300):
        s = solve(problem(two_layer_workload(), ring2(), with_option(eng, "dma", Option(800e9, area_mm2=area))))
        assert s.status == "optimal" and s.choice == {**base.choice, "dma": base.choice["dma"] + 1}
        assert s.iteration_time_s == pytest.approx(base.iteration_time_s, rel=1e-12)


def test_a_usable_option_of_astronomic_power_is_refused_by_name():
    eng = with_option(ace([SLOW, FAST]), "dma", Option(800e9, power_w=1e308), first=False)
    with pytest.raises(SpecError, match=r"engine\.dma\[2\]\.power"):
        solve(problem(two_layer_workload(), ring2(), eng))


@pytest.mark.parametrize("bandwidth, nbytes", [(1e-300, 1e6), (100e9, 1e21)])
def test_tasks_too_long_to_hold_are_refused_naming_the_dimension(bandwidth, nbytes):
    topo = Topology((Dim("d0", "ring", 2, 1, bandwidth, 0.0),))
    with pytest.raises(SpecError, match=r"topology\.dims\[0\]: a chunk of .* takes"):
        solve(problem(two_layer_workload(nbytes=nbytes), topo, ace([SLOW, FAST])))


def test_a_compute_task_too_long_to_hold_is_refused():
    w = Workload("w", "data", (Layer("l", Compute(time_s=1e9), Compute(time_s=1e-6), Compute(time_s=1e-6),
                                      weight_grad_comm=Comm("all_reduce", 1e6)),))
    with pytest.raises(SpecError, match=r"workload: compute task l\.forward takes"):
        solve(problem(w, ring2(), ace([SLOW, FAST])))


def test_a_short_time_limit_under_a_target_is_a_time_limit_never_infeasible():
    """The 50 us target is met by the fast DMA (60 us: no; see test_milp_small: 60 and 70 us) -- take a
    meetable one, 65 us, and a time limit too short to evaluate any design: no 'infeasible' claim."""
    p = problem(two_layer_workload(), ring2(), ace([SLOW, FAST]), objective=Objective("area", 65e-6))
    with pytest.raises(SolverError) as e:
        solve(p, time_limit=1e-6)
    assert "infeasible" not in str(e.value).replace("not proven infeasible", "")
    assert not isinstance(e.value, InfeasibleError)
    s = solve(p)
    assert s.status == "optimal" and s.design["dma"] == 400e9


def test_the_exact_profile_can_say_optimal():
    p = codesign.load_problem(ROOT / "problems" / "quickstart.yaml", solver_profile="exact")
    s = solve(p)
    assert s.status == "optimal" and s.gap == 0.0
