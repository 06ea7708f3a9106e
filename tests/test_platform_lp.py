"""The platform LP (milp/platform.py) and the simulator agree exactly at a design.

Built from what a replay did (which chunk-phase each dimension served before which, which departure let
each chunk into the SRAM) and the durations it realized, the LP's least period is the replay's, on every
engine, with contention, several dimensions, chunks, and collectives that block compute (DLRM, no
overlap). With durations at their alone times it bounds the replay from below, and equals it when
nothing shared a pool.
"""
from __future__ import annotations

import dataclasses

import pytest
from conftest import ROOT, problem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import codesign
from codesign.milp.data import TIME_UNIT, model_data
from codesign.milp.highs import solve_model
from codesign.milp.master import nominal_compute_us
from codesign.milp.platform import build_platform_lp
from codesign.platform.endpoint import Design, Engine, Option
from codesign.platform.topology import Dim, Topology
from codesign.problem.model import ScheduleSpec, SolverSpec
from codesign.sim.replay import simulate
from codesign.workload.model import Comm, Compute, Layer, Workload

US = 1e-6
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def cases(draw):
    t = st.floats(0.5, 30.0).map(lambda x: x * US)
    layers = []
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["all_reduce", "all_to_all", "reduce_scatter", "all_gather"]))
        layers.append(Layer(f"l{i}", Compute(time_s=draw(t)), Compute(time_s=draw(t)), Compute(time_s=draw(t)),
                            weight_grad_comm=Comm(kind, draw(st.floats(0.1, 6.0)) * 1e6), update_s=draw(t) / 20))
    topo = Topology(tuple(Dim(f"d{i}", draw(st.sampled_from(["ring", "switch", "fully_connected"])),
                              draw(st.integers(2, 4)), draw(st.integers(1, 2)), draw(st.floats(20e9, 200e9)),
                              draw(st.floats(0, 5e-7))) for i in range(draw(st.integers(1, 3)))))
    kind = draw(st.sampled_from(["ace", "baseline", "ideal"]))
    if kind == "ace":
        v = {"sram": draw(st.sampled_from([128e3, 1e6, 8e6])), "alu": draw(st.floats(30e9, 400e9)),
             "dma": draw(st.floats(30e9, 600e9))}
    elif kind == "baseline":
        v = {"comm_cores": float(draw(st.integers(1, 16))), "comm_hbm_share": draw(st.floats(0.05, 0.6))}
    else:
        v = {}
    eng = Engine(kind, {r: (Option(x),) for r, x in v.items()}, endpoint_delay_s=draw(st.floats(0, 2e-8)))
    p = problem(Workload("w", "data", tuple(layers)), topo, eng, order=draw(st.sampled_from(["lifo", "fifo"])),
                chunks=draw(st.integers(1, 4)))
    if draw(st.booleans()):
        p = dataclasses.replace(p, schedule=ScheduleSpec(p.schedule.order, p.schedule.chunks, overlap=False))
    return p, Design(kind, v)


def lp_period(p, sim, **durations) -> float:
    st_ = solve_model(build_platform_lp(model_data(p), sim.realized, **durations), SolverSpec())
    assert st_.status == "optimal"
    return st_.objective * TIME_UNIT


@SETTINGS
@given(cases())
def test_the_lp_at_realized_durations_is_the_replay(case):
    p, design = case
    sim = simulate(p, design, record=True)
    assert lp_period(p, sim) == pytest.approx(sim.period_s, rel=1e-9)


@SETTINGS
@given(cases())
def test_at_alone_durations_the_lp_bounds_the_replay_and_meets_it_when_nothing_is_shared(case):
    p, design = case
    sim = simulate(p, design, record=True)
    md = model_data(p)
    choice = {r: 0 for r in p.engine.resources}
    alone = md.phase_values(choice)
    lb = lp_period(p, sim, phase_us={(k, c, i): alone[k, i] for k, c, i in sim.realized.phase_start},
                   compute_us=nominal_compute_us(md))
    assert lb <= sim.period_s * (1 + 1e-9)
    if p.engine.kind == "ideal":
        assert lb == pytest.approx(sim.period_s, rel=1e-9)


@pytest.mark.parametrize("name", ["resnet50_ace_torus3d.yaml", "paper/dlrm_n64_ace.yaml",
                                  "paper/resnet50_n16_baseline.yaml"])
def test_shipped_problems(name):
    p = codesign.load_problem(ROOT / "problems" / name)
    choice = {r: len(o) - 1 for r, o in p.engine.resources.items()}
    sim = simulate(p, codesign.platform.endpoint.design_of(p.engine, choice), record=True)
    assert lp_period(p, sim) == pytest.approx(sim.period_s, rel=1e-9)
