"""``schedule: {order: optimize}``: the search chooses the dispatch priorities with the design.

Each design the search evaluates is replayed with several priorities (LIFO, FIFO, and priorities
refined on the per-dimension flow shop) and keeps the best, while the master's cut for it carries a
proven lower bound over every order (the flow-shop relaxation, milp/flowshop.py). So the answer is
never slower than the LIFO solve, and its gap to the bound is reported: ``optimal`` when closed,
``feasible`` when the orders tried leave it open.

The hand-checked case. Two layers on two NPUs (one 100 GB/s link, ideal engine): program order
f1 f2 w2 i2 w1 with f1 = f2 = w2 = 10 us and i2 = w1 = 1 us, so compute is 32 us. Layer 2 all-reduces
2 MB (20 us on the wire), layer 1 0.5 MB (5 us). From the start of f2: c2 is released at 20 us and
due (the next f2) at 32 us; c1 is released at 22 us and due (the next f1) at 22 us. Any priority
dispatch serves c2 at 20 us (nothing else waits, and the platform never holds a free link), then c1
at 40-45: 23 us late, T = 55 us. Holding the link idle for c1 would give 47 us, but no dispatch does;
the flow-shop bound (Horn's preemptive schedule, c2 20-22, c1 22-27, c2 27-45) is 45 us.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ace, problem, ring2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import codesign
from codesign import solve
from codesign.platform.endpoint import Engine
from codesign.report.text import order_comparison_lines, summary
from codesign.workload.model import Comm, Compute, Layer, Workload

US = 1e-6
ROOT = Path(__file__).resolve().parent.parent
SLOW, FAST = (100e9, 1.0), (400e9, 2.0)


def hand_workload() -> Workload:
    l1 = Layer("l1", Compute(time_s=10 * US), Compute(time_s=1 * US), Compute(time_s=1 * US),
               weight_grad_comm=Comm("all_reduce", 0.5e6))
    l2 = Layer("l2", Compute(time_s=10 * US), Compute(time_s=1 * US), Compute(time_s=10 * US),
               weight_grad_comm=Comm("all_reduce", 2e6))
    return Workload("hand", "data", (l1, l2))


def test_hand_case_period_bound_and_gap():
    s = solve(problem(hand_workload(), ring2(), Engine("ideal"), order="optimize"))
    assert s.iteration_time_s == pytest.approx(55 * US, rel=1e-9)
    assert s.any_order_bound_s == pytest.approx(45 * US, rel=1e-9)
    assert s.bound_s == pytest.approx(45 * US, rel=1e-9)
    assert s.status == "feasible" and s.gap == pytest.approx(10 / 55, rel=1e-9)
    assert set(s.order_comparison) >= {"lifo_s", "fifo_s"}
    assert any("gap open" in n for n in s.notes)


us_ = st.floats(0.0, 30.0).map(lambda x: x * US)
mb = st.floats(0.05, 3.0).map(lambda x: x * 1e6)


@st.composite
def workloads(draw) -> Workload:
    n = draw(st.integers(2, 5))
    return Workload("random", "data", tuple(
        Layer(f"l{i}", Compute(time_s=draw(us_)), Compute(time_s=draw(us_)), Compute(time_s=draw(us_)),
              weight_grad_comm=Comm("all_reduce", draw(mb)), update_s=draw(us_) / 10) for i in range(n)))


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.integers(1, 3))
def test_never_slower_than_the_lifo_solve_and_never_below_its_bound(w, chunks):
    eng = ace([SLOW, FAST, (800e9, 3.0)], sram=1e6)
    lifo = solve(problem(w, torus(), eng, chunks=chunks))
    opt = solve(problem(w, torus(), eng, chunks=chunks, order="optimize"))
    assert opt.iteration_time_s <= lifo.iteration_time_s * (1 + 1e-9)
    assert opt.bound_s <= opt.iteration_time_s * (1 + 1e-9)
    assert opt.any_order_bound_s <= opt.iteration_time_s * (1 + 1e-9)
    assert opt.bound_s <= lifo.iteration_time_s * (1 + 1e-9)  # a bound over every order, LIFO's too
    assert opt.status in ("optimal", "feasible")
    if opt.status == "optimal":
        assert opt.gap <= 1e-4


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.integers(1, 3), st.sampled_from([2e5, 1e6, 8e6]))
def test_a_covered_design_borrows_exactly_the_replays_it_would_run(w, chunks, sram):
    """The optimize evaluator reuses a covering design's replays (larger only in pools that held nothing
    back): for every design of the catalog, evaluated smallest first, LIFO and FIFO are what a fresh
    evaluator replays at that design alone."""
    from codesign.milp.data import model_data
    from codesign.pipeline.solve import optimize_evaluator
    eng = ace([SLOW, FAST, (800e9, 3.0)], sram=sram, alu=200e9)
    p = problem(w, torus(), eng, chunks=chunks, order="optimize")
    shared = optimize_evaluator(model_data(p), 0.0)
    borrowed = 0
    for dma in range(3):
        ev, period, rep = shared({"sram": 0, "alu": 0, "dma": dma})
        _, fresh_period, fresh = optimize_evaluator(model_data(p), 0.0)({"sram": 0, "alu": 0, "dma": dma})
        assert rep.tried["lifo_s"] == fresh.tried["lifo_s"] and rep.tried["fifo_s"] == fresh.tried["fifo_s"]
        borrowed += not rep.own
    assert borrowed >= 1  # 800 GB/s of DMA holds nothing back where 400 GB/s did not: it borrows
    s = solve(p)  # an answer that borrowed its replay is replayed again at its own design, and agrees
    assert s.sim.period_s == s.iteration_time_s


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.integers(1, 3), st.sampled_from([None, 3.0, 4.0]))
def test_a_plateau_leaves_the_search_unevaluated_and_changes_nothing_but_the_work(w, chunks, area):
    """An evaluated design leaves the search with its plateau (the designs larger only in pools that held
    nothing back in any order it tried): their evaluations would borrow its replays and find the same
    period. Against the search that evaluates them one by one: the same design and period, no more
    evaluations, and a bound below the best period any design's evaluation finds (brute force over the
    catalog; SRAM and DMA both sized, budgets that bind)."""
    import itertools

    from codesign.milp.data import model_data
    from codesign.pipeline.search import Search
    from codesign.pipeline.solve import optimize_evaluator
    from codesign.platform.endpoint import Option, design_area_mm2
    eng = Engine("ace", {"sram": (Option(2e5, 0.5), Option(1e6, 1.0), Option(8e6, 2.0)), "alu": (Option(200e9),),
                         "dma": tuple(Option(v, a) for v, a in [SLOW, FAST, (800e9, 3.0)])}, area_budget_mm2=area)
    p = problem(w, torus(), eng, chunks=chunks, order="optimize")
    try:
        fast = solve(p)
    except codesign.InfeasibleError:
        return
    one_by_one = Search._exclude

    def each(master, v, remaining, unevaluated):
        master.exclude(v.choice)
    try:
        Search._exclude = staticmethod(each)
        slow = solve(p)
    finally:
        Search._exclude = staticmethod(one_by_one)
    assert (fast.iteration_time_s, fast.design) == (slow.iteration_time_s, slow.design)
    assert fast.evaluations <= slow.evaluations
    assert fast.status == slow.status or (fast.status == "feasible" and fast.gap <= slow.gap + 1e-8)
    best = min(optimize_evaluator(model_data(p), 0.0)(dict(zip(("sram", "alu", "dma"), c)))[2].sim.period_s
               for c in itertools.product(range(3), range(1), range(3))
               if area is None or design_area_mm2(eng, dict(zip(("sram", "alu", "dma"), c))) <= area)
    assert fast.bound_s <= best * (1 + 1e-9) and fast.iteration_time_s <= best * (1 + 1e-9)


def test_a_master_out_of_time_before_any_bound_leaves_no_bound_and_no_optimal(monkeypatch):
    """HiGHS can stop at its time limit with an incumbent and no dual bound yet: the designs it has not
    ruled out then have no lower bound, so neither has the answer, and it is not optimal however close the
    evaluated designs' own bounds are. (The master solve runs; only its bound is withheld, as a time-out
    before the root would.)"""
    from codesign.milp.master import Master
    real = Master.solve

    def out_of_time(self, spec, time_limit_s):
        st = real(self, spec, time_limit_s)
        return dataclasses.replace(st, status="time_limit", bound=None, gap=None)
    monkeypatch.setattr(Master, "solve", out_of_time)
    s = solve(problem(hand_workload(), ring2(), ace([SLOW, FAST]), order="optimize"))
    assert s.status == "time_limit" and s.bound_s is None and s.evaluations == 1
    one = solve(problem(hand_workload(), ring2(), Engine("ideal"), order="optimize"))  # one design, evaluated
    assert one.status == "time_limit" and one.bound_s == pytest.approx(45 * US, rel=1e-9)


def test_resnet50_optimize_is_within_two_percent_of_the_any_order_bound():
    """The issue's target: on ResNet-50's ACE problem the design and priorities found are within 2% of a
    proven lower bound for every design and every order."""
    p = codesign.load_problem(ROOT / "problems" / "resnet50_ace_optimize_torus3d.yaml")
    s = solve(p)
    assert s.gap <= 0.02 and s.bound_s <= s.iteration_time_s
    lifo = solve(dataclasses.replace(p, schedule=dataclasses.replace(p.schedule, order="lifo")))
    assert s.iteration_time_s <= lifo.iteration_time_s * (1 + 1e-9)


def test_report_and_json_say_what_was_tried():
    r = subprocess.run([sys.executable, "-m", "codesign", "solve", str(ROOT / "problems" / "quickstart.yaml"),
                        "--json"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    p = codesign.load_problem(ROOT / "problems" / "quickstart.yaml")
    p = dataclasses.replace(p, schedule=dataclasses.replace(p.schedule, order="optimize"))
    s = solve(p, refine_s=0.2)
    text = summary(s, p) + "\n" + "\n".join(order_comparison_lines(s))
    assert "orders tried" in text and "LIFO" in text and "any order" in text
    doc = s.to_dict()
    assert doc["order"]["policy"] == "optimize" and doc["any_order_bound_s"] <= doc["iteration_time_s"] * (1 + 1e-9)
    json.dumps(doc)


# ------------------------------------------------------------------ the flow-shop relaxation and the simulator

def torus(b0: float = 100e9, b1: float = 50e9):
    from codesign.platform.topology import Dim, Topology
    return Topology((Dim("d0", "ring", 4, 1, b0, 1e-7), Dim("d1", "ring", 2, 1, b1, 1e-7)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.integers(1, 4), st.sampled_from([64e3, 256e3, 4e6]), st.sampled_from([50e9, 200e9]),
       st.randoms(use_true_random=False))
def test_no_replay_beats_the_flow_shop_bound(w, chunks, sram, alu, rnd):
    """Whatever the order (LIFO, FIFO, any priorities), the simulated period respects replay_bound."""
    from codesign.milp.flowshop import replay_bound
    from codesign.platform.endpoint import Design
    from codesign.sim.replay import simulate
    eng = ace([(100e9, 1.0)], alu=alu, sram=sram)
    p = problem(w, torus(), eng, chunks=chunks)
    design = Design("ace", {"sram": sram, "alu": alu, "dma": 100e9})
    b = replay_bound(p, design).bound_s
    K = len(w.layers)
    prio = list(range(K))
    rnd.shuffle(prio)
    runs = [simulate(p, design).period_s,
            simulate(dataclasses.replace(p, schedule=dataclasses.replace(p.schedule, order="fifo")), design).period_s,
            simulate(p, design, order=tuple((k, 0) for k in prio)).period_s]
    for r in runs:
        assert r >= b * (1 - 1e-9)


@st.composite
def timed_workloads(draw) -> Workload:
    """As ``workloads``, but every compute task takes time: a zero-length task ends one event after it
    starts in the replay, so a collective it releases can lose a tie it would win in the flow shop."""
    t = st.floats(0.5, 30.0).map(lambda x: x * US)
    n = draw(st.integers(2, 5))
    return Workload("random", "data", tuple(
        Layer(f"l{i}", Compute(time_s=draw(t)), Compute(time_s=draw(t)), Compute(time_s=draw(t)),
              weight_grad_comm=Comm("all_reduce", draw(mb)), update_s=draw(us_) / 10) for i in range(n)))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(timed_workloads(), st.integers(1, 4), st.randoms(use_true_random=False))
def test_list_schedule_is_the_replay_without_endpoint_contention(w, chunks, rnd):
    """On the ideal engine nothing is shared but the links, so the flow shop's list schedule of a priority
    order is exactly the simulator's replay of it."""
    from codesign.milp.data import TIME_UNIT
    from codesign.milp.flowshop import flow_shop, list_schedule
    from codesign.platform.endpoint import Design
    from codesign.sim.replay import simulate
    p = problem(w, torus(), Engine("ideal"), chunks=chunks)
    design = Design("ideal", {})
    prio = list(range(len(w.layers)))
    rnd.shuffle(prio)
    fs = flow_shop(p, design)
    assert list_schedule(fs, prio) * TIME_UNIT == pytest.approx(
        simulate(p, design, order=tuple((k, 0) for k in prio)).period_s, rel=1e-9, abs=1e-15)


