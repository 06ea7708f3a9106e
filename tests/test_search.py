"""The design search answers with the design the simulator finds best, and its bound bounds the simulator.

Against brute force: every design of small random catalogs is replayed in the simulator
(``sim.replay.simulate``), and the solve must return the best of them (zero design regret), say so with a
bound no higher, and break ties toward the least area. The master's relaxation must lie below the
simulated period of every design under every order (it is the bound the search prunes with), and a design
an evaluation's plateau covers must replay to the same period.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
from conftest import problem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codesign import InfeasibleError, solve
from codesign.milp.data import TIME_UNIT, model_data
from codesign.milp.master import Master
from codesign.pipeline.search import Search, covers
from codesign.pipeline.solve import policy_evaluator
from codesign.platform.endpoint import Engine, Option, design_area_mm2, design_of, design_power_w
from codesign.platform.topology import Dim, Topology
from codesign.problem.model import Objective
from codesign.sim.replay import simulate
from codesign.workload.model import Comm, Compute, Layer, Workload

US = 1e-6
SETTINGS = settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
times = st.floats(0.5, 30.0).map(lambda x: x * US)
sizes = st.floats(0.1, 6.0).map(lambda x: x * 1e6)


@st.composite
def workloads(draw) -> Workload:
    layers = []
    for i in range(draw(st.integers(1, 4))):
        comm = Comm(draw(st.sampled_from(["all_reduce", "all_reduce", "reduce_scatter", "all_to_all"])), draw(sizes))
        layers.append(Layer(f"l{i}", Compute(time_s=draw(times)), Compute(time_s=draw(times)),
                            Compute(time_s=draw(times)), weight_grad_comm=comm, update_s=draw(times) / 20))
    return Workload("random", "data", tuple(layers))


@st.composite
def topologies(draw) -> Topology:
    return Topology(tuple(Dim(f"d{i}", draw(st.sampled_from(["ring", "switch"])), draw(st.integers(2, 4)),
                              draw(st.integers(1, 2)), draw(st.floats(20e9, 200e9)), draw(st.floats(0, 5e-7)))
                          for i in range(draw(st.integers(1, 3)))))


def _opts(draw, values: list[float]) -> tuple[Option, ...]:
    k = draw(st.integers(1, len(values)))
    vals = sorted(draw(st.permutations(values))[:k])
    return tuple(Option(v, area_mm2=0.2 * (n + 1), power_w=0.1 * (n + 1)) for n, v in enumerate(vals))


@st.composite
def engines(draw) -> Engine:
    if draw(st.booleans()):
        res = {"sram": _opts(draw, [128e3, 512e3, 2e6, 8e6]), "alu": _opts(draw, [40e9, 100e9, 400e9]),
               "dma": _opts(draw, [40e9, 100e9, 400e9])}
        kind = "ace"
    else:
        res = {"comm_cores": _opts(draw, [2.0, 4.0, 8.0, 16.0]), "comm_hbm_share": _opts(draw, [0.1, 0.3, 0.6])}
        kind = "baseline"
    budget = draw(st.one_of(st.none(), st.floats(0.6, 2.0)))
    return Engine(kind, res, area_budget_mm2=budget, endpoint_delay_s=draw(st.floats(0, 2e-8)))


def designs(engine: Engine) -> list[dict[str, int]]:
    out = []
    for combo in itertools.product(*(range(len(o)) for o in engine.resources.values())):
        c = dict(zip(engine.resources, combo))
        if engine.area_budget_mm2 is None or design_area_mm2(engine, c) <= engine.area_budget_mm2 + 1e-9:
            out.append(c)
    return out


def simulated(p, choice: dict[str, int], **kw) -> float:
    return simulate(p, design_of(p.engine, choice), **kw).period_s


@SETTINGS
@given(workloads(), topologies(), engines(), st.sampled_from(["lifo", "fifo"]), st.integers(1, 3))
def test_the_answer_is_the_best_simulated_design(w, topo, eng, order, chunks):
    p = problem(w, topo, eng, order=order, chunks=chunks)
    every = designs(eng)
    if not every:
        with pytest.raises(InfeasibleError):
            solve(p)
        return
    periods = {tuple(c.values()): simulated(p, c) for c in every}
    best = min(periods.values())
    s = solve(p)
    assert s.status == "optimal"
    assert s.iteration_time_s == pytest.approx(best, rel=1e-9)  # zero regret
    assert s.bound_s <= s.iteration_time_s * (1 + 1e-9)
    tied = [c for c in every if periods[tuple(c.values())] <= best * (1 + 1e-7)]
    assert s.area_mm2 == pytest.approx(min(design_area_mm2(eng, c) for c in tied), abs=1e-9)


@SETTINGS
@given(workloads(), topologies(), engines(), st.integers(1, 3), st.floats(1.0, 1.6), st.randoms(use_true_random=False))
def test_least_area_meeting_a_target_is_the_brute_force_one(w, topo, eng, chunks, slack, rnd):
    base = problem(w, topo, eng, chunks=chunks)
    every = designs(eng)
    if not every:
        return
    periods = {tuple(c.values()): simulated(base, c) for c in every}
    target = min(periods.values()) * slack
    p = dataclasses.replace(base, objective=Objective("power", target))
    s = solve(p)
    meet = [c for c in every if periods[tuple(c.values())] <= target * (1 + 1e-9)]
    assert s.power_w == pytest.approx(min(design_power_w(eng, c) for c in meet), abs=1e-9)
    assert s.iteration_time_s <= target * (1 + 1e-9)
    if slack > 1.0 + 1e-6:
        low = dataclasses.replace(base, objective=Objective("power", min(periods.values()) * 0.99))
        with pytest.raises(InfeasibleError, match="best achievable"):
            solve(low)


@SETTINGS
@given(workloads(), topologies(), engines(), st.integers(1, 3), st.randoms(use_true_random=False))
def test_the_relaxation_bounds_every_design_under_every_order(w, topo, eng, chunks, rnd):
    """The master without evaluation cuts, at each design (its interval cuts added until none is violated),
    lies below the simulated period under LIFO, FIFO and random priorities."""
    p = problem(w, topo, dataclasses.replace(eng, area_budget_mm2=None), chunks=chunks)
    md = model_data(p)
    K = len(md.iteration.comms)
    for choice in designs(p.engine)[:6]:
        master = Master(md)
        for r, o in master.model.y:
            master.model.y[r, o].fix(1 if choice[r] == o else 0)
        while True:
            st_ = master.solve(p.solver, 30)
            assert st_.status == "optimal"
            if not master.interval_cuts(choice, st_.objective):
                break
        prio = list(range(K))
        rnd.shuffle(prio)
        runs = [simulated(p, choice, policy="lifo"), simulated(p, choice, policy="fifo"),
                simulated(p, choice, order=tuple((k, 0) for k in prio))]
        assert st_.objective * TIME_UNIT <= min(runs) * (1 + 1e-9)


@SETTINGS
@given(workloads(), topologies(), engines(), st.integers(1, 3))
def test_a_plateau_replays_the_same(w, topo, eng, chunks):
    """Designs larger only in the resources whose pools never held anything back replay identically."""
    p = problem(w, topo, dataclasses.replace(eng, area_budget_mm2=None), chunks=chunks)
    evaluate = policy_evaluator(model_data(p))
    every = designs(p.engine)
    ev, period, _ = evaluate(every[0])
    for c in every:
        if covers(ev, c, p.engine.resources):
            assert simulated(p, c) / TIME_UNIT == pytest.approx(period, rel=1e-9)


def test_a_time_limit_keeps_the_best_evaluated_design_and_an_honest_bound():
    from conftest import ROOT

    import codesign
    p = codesign.load_problem(ROOT / "problems" / "resnet50_ace_torus3d.yaml")
    md = model_data(p)
    search = Search(md, policy_evaluator(md), deadline=math.inf)
    res = search.run(search.master())
    assert res.status == "optimal"
    first = search.visits[0].simulated_us
    # the same search stopped after its first evaluation
    search2 = Search(md, policy_evaluator(md), deadline=math.inf)
    evaluate = search2.evaluate

    def once(choice):
        search2.deadline = 0.0  # out of time as soon as one design is evaluated
        return evaluate(choice)
    search2.evaluate = once
    cut = search2.run(search2.master())
    assert cut.status == "time_limit" and cut.visit is not None
    assert cut.objective == pytest.approx(first) and cut.bound <= res.objective * (1 + 1e-9)


@SETTINGS
@given(workloads(), topologies(), st.integers(1, 3), st.data())
def test_ties_between_designs_of_no_area_go_to_the_smaller_options(w, topo, chunks, data):
    """A baseline engine's options cost no area (the NPU's own cores and HBM): designs that replay to the same
    period tie on area too, and the answer must be the one of smallest options (least sum of the options'
    ranks), however the master's solves reach it (a re-solve that starts from a larger tied design included)."""
    cores = data.draw(st.lists(st.sampled_from([2.0, 4.0, 8.0, 16.0]), min_size=2, max_size=4, unique=True))
    share = data.draw(st.lists(st.sampled_from([0.1, 0.3, 0.6, 0.8]), min_size=1, max_size=3, unique=True))
    eng = Engine("baseline", {"comm_cores": tuple(Option(v) for v in sorted(cores)),
                              "comm_hbm_share": tuple(Option(v) for v in sorted(share))})
    p = problem(w, topo, eng, chunks=chunks)
    periods = {tuple(c.values()): simulated(p, c) for c in designs(eng)}
    best = min(periods.values())
    s = solve(p)
    tied = [c for c, t in periods.items() if t <= best * (1 + 1e-7)]
    assert s.status == "optimal" and s.iteration_time_s == pytest.approx(best, rel=1e-9)
    assert sum(s.choice.values()) == min(sum(c) for c in tied)


def test_gnmt_no_overlap_takes_the_fewest_cores_of_those_tied():
    """problems/paper/gnmt_n16_no_overlap.yaml: 8, 16 and 32 communication cores replay to the same period
    (the HBM share limits it); the answer is 8 cores, the least of them."""
    from pathlib import Path

    import codesign
    p = codesign.load_problem(Path(__file__).resolve().parent.parent / "problems/paper/gnmt_n16_no_overlap.yaml")
    s = solve(p)
    assert s.status == "optimal"
    assert design_of(p.engine, s.choice).values["comm_cores"] == 8
