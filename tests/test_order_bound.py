"""The SRAM-clique any-order bound (milp/order_bound.py) and the simulator local search on priorities
(pipeline/order_search.py): the bound is never above any order's replay (every order of tiny instances,
random orders of larger ones), it tightens the flow shop's where chunks crowd the SRAM, and the local
search never returns an order slower than LIFO or FIFO."""
from __future__ import annotations

import dataclasses
import itertools

from conftest import ace, problem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codesign.milp.flowshop import flow_shop, replay_bound
from codesign.milp.order_bound import clique_terms, order_bound
from codesign.pipeline.order_search import local_search
from codesign.platform.endpoint import Design
from codesign.platform.topology import Dim, Topology
from codesign.sim.replay import simulate
from codesign.workload.model import Comm, Compute, Layer, Workload

US = 1e-6


def torus() -> Topology:
    return Topology((Dim("d0", "ring", 4, 1, 100e9, 1e-7), Dim("d1", "ring", 2, 1, 50e9, 1e-7)))


@st.composite
def workloads(draw, most: int = 5) -> Workload:
    t = st.floats(0.0, 30.0).map(lambda x: x * US)
    n = draw(st.integers(2, most))
    return Workload("random", "data", tuple(
        Layer(f"l{i}", Compute(time_s=draw(t)), Compute(time_s=draw(t)), Compute(time_s=draw(t)),
              weight_grad_comm=Comm("all_reduce", draw(st.floats(0.05, 3.0)) * 1e6), update_s=draw(t) / 10)
        for i in range(n)))


def at(w: Workload, chunks: int, sram: float, alu: float, dma: float = 100e9):
    p = problem(w, torus(), ace([(dma, 1.0)], alu=alu, sram=sram), chunks=chunks)
    return p, Design("ace", {"sram": sram, "alu": alu, "dma": dma})


def fifo(p) -> object:
    return dataclasses.replace(p, schedule=dataclasses.replace(p.schedule, order="fifo"))


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.integers(1, 3), st.sampled_from([64e3, 300e3, 1e6, 4e6]), st.sampled_from([50e9, 200e9]),
       st.randoms(use_true_random=False))
def test_no_replay_beats_the_order_bound(w, chunks, sram, alu, rnd):
    p, design = at(w, chunks, sram, alu)
    b = order_bound(p, design).bound_s
    assert b >= replay_bound(p, design).bound_s  # the flow shop's terms are among its terms
    prio = list(range(len(w.layers)))
    rnd.shuffle(prio)
    for r in (simulate(p, design).period_s, simulate(fifo(p), design).period_s,
              simulate(p, design, order=tuple((k, 0) for k in prio)).period_s):
        assert r >= b * (1 - 1e-9)


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(most=4), st.integers(1, 2), st.sampled_from([300e3, 1e6, 2e6]))
def test_every_order_of_a_tiny_instance_respects_the_bound(w, chunks, sram):
    """Brute force: every priority order of up to four collectives replays no faster than the bound."""
    p, design = at(w, chunks, sram, 200e9)
    b = order_bound(p, design).bound_s
    best = min(simulate(p, design, order=tuple((k, 0) for k in prio)).period_s
               for prio in itertools.permutations(range(len(w.layers))))
    assert best >= b * (1 - 1e-9)


def test_the_cliques_tighten_the_flow_shop_where_chunks_crowd_the_sram():
    """2 MB and 0.6 MB all-reduces in one chunk each against a 1.5 MB SRAM: a 2 MB chunk holds it all, so
    while one is in the SRAM nothing else is, and the links idle while it is on the other dimension; the
    per-dimension bounds and the big chunks' exclusion alone miss that."""
    comm = [Comm("all_reduce", s) for s in (2e6, 0.6e6, 2e6, 0.6e6, 0.6e6)]
    w = Workload("crowd", "data", tuple(Layer(f"l{i}", Compute(time_s=5 * US), Compute(time_s=5 * US),
                                              Compute(time_s=5 * US), weight_grad_comm=c) for i, c in enumerate(comm)))
    p, design = at(w, 1, 1.5e6, 200e9)
    assert clique_terms(flow_shop(p, design))
    b, old = order_bound(p, design).bound_s, replay_bound(p, design).bound_s
    assert b > old * (1 + 1e-6)
    best = min(simulate(p, design, order=tuple((k, 0) for k in prio)).period_s
               for prio in itertools.permutations(range(len(comm))))
    assert best >= b * (1 - 1e-9)


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.integers(1, 3), st.sampled_from([300e3, 1e6, 4e6]))
def test_the_local_search_is_never_slower_than_lifo_or_fifo(w, chunks, sram):
    p, design = at(w, chunks, sram, 200e9)
    K = len(w.layers)
    starts = [tuple((k, 0) for k in reversed(range(K))), tuple((k, 0) for k in range(K))]
    prio, period = local_search(p, design, starts, 0.5)
    assert sorted(k for k, _ in prio) == list(range(K))
    assert period == simulate(p, design, order=prio).period_s  # the answer is the replay of the order found
    assert period <= simulate(p, design).period_s * (1 + 1e-12)           # LIFO
    assert period <= simulate(fifo(p), design).period_s * (1 + 1e-12)     # FIFO
