"""The MILP and the replay read the same costs: for a fixed design and order they must agree exactly,
and the policy's own replay can never beat the MILP's proven bound for that order."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codesign.milp.data import TIME_UNIT, model_data
from codesign.milp.highs import solve_model
from codesign.milp.model import build_model
from codesign.pipeline.solve import durations
from codesign.platform.endpoint import Engine
from codesign.problem.model import SolverSpec
from codesign.schedule.iteration import build_iteration
from codesign.schedule.serial import issue_order, normalize_order, run_policy, run_sequence
from codesign.workload.model import Comm, Compute, Layer, Workload

from conftest import problem, ring2

us = st.floats(0.0, 50.0).map(lambda x: x * 1e-6)
mb = st.floats(0.01, 4.0).map(lambda x: x * 1e6)


@st.composite
def workloads(draw) -> Workload:
    n = draw(st.integers(1, 6))
    layers = []
    for i in range(n):
        comm = Comm("all_reduce", draw(mb)) if draw(st.booleans()) or i == 0 else None
        layers.append(Layer(f"l{i}", Compute(time_s=draw(us)), Compute(time_s=draw(us)), Compute(time_s=draw(us)),
                            weight_grad_comm=comm, update_s=draw(us) / 10))
    return Workload("random", "data", tuple(layers))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.sampled_from(["lifo", "fifo"]))
def test_milp_period_equals_replay_of_its_order(w, policy):
    p = problem(w, ring2(), Engine("ideal"), order=policy)
    md = model_data(p)
    pc, dc = durations(md, {})
    rep = run_policy(md.iteration, pc, dc, policy)
    m = build_model(md, rep.order)
    st_ = solve_model(m, SolverSpec(time_limit_s=20))
    assert st_.status == "optimal"
    T = st_.objective * TIME_UNIT
    assert T == pytest.approx(rep.period_s, rel=1e-6, abs=1e-12)
    assert T == pytest.approx(run_sequence(md.iteration, pc, dc, rep.order).period_s, rel=1e-6, abs=1e-12)
    # lower bounds any schedule must respect: compute is serial, and so is the network
    assert T >= sum(pc) * (1 - 1e-9)
    assert T >= sum(dc) * (1 - 1e-9)


def test_normalize_order_rotates_cyclically():
    assert normalize_order([(0, 0), (3, -1), (1, 0)]) == ((3, 0), (1, 1), (0, 2))
    assert normalize_order([(2, 0), (1, 0)]) == ((2, 0), (1, 0))


def test_fifo_order_is_issue_order_for_data_parallel():
    layers = tuple(Layer(f"l{i}", Compute(time_s=1e-6), Compute(time_s=1e-6), Compute(time_s=1e-6),
                         weight_grad_comm=Comm("all_reduce", 1e6)) for i in range(4))
    it = build_iteration(Workload("w", "data", layers))
    pc = [1e-6] * len(it.computes)
    rep = run_policy(it, pc, [5e-6] * 4, "fifo")
    assert rep.order == issue_order(it)
    lifo = run_policy(it, pc, [5e-6] * 4, "lifo")
    # c3 runs 5-10 us; at 10 the newest waiting is c1 (released 9), then c0 (11), then c2 (7)
    assert lifo.order == ((3, 0), (1, 0), (0, 0), (2, 0))
