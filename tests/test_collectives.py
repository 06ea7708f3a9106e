"""Collective byte counts against hand-computed values, and the invariants they must keep."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign.platform.collectives import payload_bytes, phases
from codesign.platform.costs import alone_time, capacities, collective_demands, phase_demand
from codesign.platform.endpoint import NPU, Design, Engine, Option
from codesign.platform.topology import Dim, Topology
from codesign.workload.model import Comm

MiB = 2**20


def torus(*sizes: int, kind: str = "ring", algorithm: str = "") -> Topology:
    return Topology(tuple(Dim(f"d{i}", kind, s, 2, 25e9, 500e-9, algorithm) for i, s in enumerate(sizes)))


def test_ring_all_reduce_one_dim_hand_values():
    (ph,) = phases(Comm("all_reduce", 1 * MiB), torus(4))
    # 2(p-1) = 6 steps of S/p = 256 KiB; 3/4 of S reduced, 3/4 of S gathered
    assert ph.steps == 6
    assert ph.reduce_wire == 786432 and ph.copy_wire == 786432
    assert ph.wire_bytes == 1572864


def test_hierarchical_all_reduce_4x4x4_hand_values():
    phs = phases(Comm("all_reduce", 1 * MiB), torus(4, 4, 4))
    assert [(p.op, p.dim) for p in phs] == [("reduce_scatter", 0), ("reduce_scatter", 1), ("all_reduce", 2),
                                            ("all_gather", 1), ("all_gather", 0)]
    assert [p.buffer_bytes for p in phs] == [MiB, MiB / 4, MiB / 16, MiB / 4, MiB]
    assert [p.wire_bytes for p in phs] == [786432, 196608, 98304, 196608, 786432]
    assert [p.steps for p in phs] == [3, 3, 6, 3, 3]


def test_direct_and_halving_doubling_steps():
    (d,) = phases(Comm("all_reduce", 8e6), torus(8, kind="fully_connected"))
    assert d.algorithm == "direct" and d.steps == 2 and d.wire_bytes == pytest.approx(2 * 7e6)
    (h,) = phases(Comm("reduce_scatter", 8e6), torus(8, algorithm="halving_doubling"))
    assert h.steps == 3 and h.wire_bytes == pytest.approx(7e6)


def test_all_to_all_ring_relays():
    (a,) = phases(Comm("all_to_all", 4e6), torus(4))
    # shards of 1 MB travel 1, 2 and 3 hops: 6 MB on the links, in p(p-1)/2 = 6 steps
    assert a.steps == 6 and a.wire_bytes == pytest.approx(6e6)
    (b,) = phases(Comm("all_to_all", 4e6), torus(4, kind="fully_connected"))
    assert b.steps == 1 and b.wire_bytes == pytest.approx(3e6)


def test_payload_bytes():
    t = torus(4, 4)
    assert payload_bytes(Comm("all_reduce", 16e6), t) == (16e6, 16e6)
    assert payload_bytes(Comm("reduce_scatter", 16e6), t) == (16e6, 1e6)
    assert payload_bytes(Comm("all_gather", 16e6), t) == (1e6, 16e6)


def test_comm_restricted_to_dims():
    phs = phases(Comm("all_reduce", 1e6, dims=(1,)), torus(4, 8))
    assert [p.dim for p in phs] == [1] and phs[0].peers == 8


sizes = st.lists(st.integers(2, 9), min_size=1, max_size=4)
nbytes = st.floats(1e3, 1e9)


@given(sizes, nbytes)
def test_all_reduce_is_reduce_scatter_then_all_gather(ss, S):
    t = torus(*ss)
    ar = sum(p.wire_bytes for p in phases(Comm("all_reduce", S), t))
    rs = sum(p.wire_bytes for p in phases(Comm("reduce_scatter", S), t))
    ag = sum(p.wire_bytes for p in phases(Comm("all_gather", S), t))
    assert ar == pytest.approx(rs + ag, rel=1e-9)
    # reduce-scatter sends (P-1)/P of the buffer per NPU over the whole hierarchy
    P = math.prod(ss)
    assert rs == pytest.approx(S * (P - 1) / P, rel=1e-9)


@given(sizes, nbytes)
def test_baseline_hbm_is_3_5x_network_for_all_reduce(ss, S):
    """docs/paper.md: 5 bytes of HBM per reduce-scatter byte, 2 per all-gather byte -> 3.5x."""
    base, ace = Engine("baseline"), Engine("ace")
    dem = collective_demands(Comm("all_reduce", S), torus(*ss), base, chunks=1)
    wire = sum(p.wire_bytes for p in phases(Comm("all_reduce", S), torus(*ss)))
    hbm = sum(phase_demand(base, dem, i)[0] for i in range(len(dem.phase_dims)))
    assert hbm == pytest.approx(3.5 * wire, rel=1e-9)
    # ACE reads and writes each byte once: 2S, i.e. P/(P-1) times the network bytes
    P = math.prod(ss)
    dma = sum(phase_demand(ace, dem, i)[0] for i in range(len(dem.phase_dims)))
    assert dma == pytest.approx(2 * S)
    assert hbm / dma == pytest.approx(3.5 * (P - 1) / P, rel=1e-9)


def _ace(sram: float, alu: float, dma: float) -> tuple[Engine, Design]:
    e = Engine("ace", {"sram": (Option(sram),), "alu": (Option(alu),), "dma": (Option(dma),)}, endpoint_delay_s=1e-8)
    return e, Design("ace", {"sram": sram, "alu": alu, "dma": dma})


def _alone(dem, e: Engine, d: Design) -> list[float]:
    """Each phase's time alone on the endpoint: the largest of its link time and its endpoint times."""
    caps = capacities(e, NPU(), d)
    return [alone_time(e, dem, i, caps) for i in range(len(dem.phase_link_s))]


@settings(max_examples=60)
@given(sizes, nbytes, st.integers(1, 8), st.floats(1e5, 1e8), st.floats(1e9, 1e12), st.floats(1e9, 5e11),
       st.floats(1.01, 4.0))
def test_more_resources_never_make_a_phase_slower_alone(ss, S, k, sram, alu, dma, f):
    t = torus(*ss)
    e, d = _ace(sram, alu, dma)
    base = _alone(collective_demands(Comm("all_reduce", S), t, e, k), e, d)
    assert all(x >= 0 for x in base)
    for r in ("alu", "dma"):
        vals = dict(d.values)
        vals[r] *= f
        e2, d2 = _ace(vals["sram"], vals["alu"], vals["dma"])
        more = _alone(collective_demands(Comm("all_reduce", S), t, e2, k), e2, d2)
        assert all(a <= b * (1 + 1e-12) for a, b in zip(more, base))
    wider = Topology(tuple(Dim(x.name, x.kind, x.size, x.links, x.link_bandwidth * f, x.latency) for x in t.dims))
    more = _alone(collective_demands(Comm("all_reduce", S), wider, e, k), e, d)
    assert all(a <= b * (1 + 1e-12) for a, b in zip(more, base))
