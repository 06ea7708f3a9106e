"""Graph topologies: files and generators read and validated, and the all-gather cut bound computed exactly
(ForestColl's optimum on its own graphs, to 1e-6 relative)."""
from __future__ import annotations

import csv
import json
from fractions import Fraction

import pytest
from conftest import ROOT

from codesign.errors import SpecError
from codesign.platform.graph_bounds import collective_bound, cut_bound
from codesign.platform.graph_files import read_graph
from codesign.platform.graph_generators import generate


def _rows():
    with open(ROOT / "tests/data/forestcoll_allgather.csv") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r['generator']}:{r['nodes']}")
def test_forestcoll_optimum_is_reproduced(row):
    g = generate(f"{row['generator']}:nodes={row['nodes']}")
    assert len(g.npus) == int(row["gpus"])
    algbw = cut_bound(g).rate * len(g.npus) / Fraction(10**9)
    exact = Fraction(int(row["gpus"]) * int(row["k"])) / Fraction(row["U"])
    assert abs(float(algbw) - float(row["optimal_allgather_algbw_GBps"])) <= 5e-4
    assert abs(algbw / exact - 1) <= 1e-6


def test_binding_cut_is_a_certificate():
    """The cut returned gives the rate it reports: B+(S) / |S n V_c|."""
    g = generate("dgx_a100:nodes=2")
    cb = cut_bound(g)
    s = cb.binding_cut
    out = sum(Fraction(lk.bandwidth) for lk in g.links if lk.source in s and lk.target not in s)
    assert out / sum(1 for v in g.npus if v in s) == cb.rate
    assert 0 < cb.cut_npus < len(g.npus)


def _write(tmp_path, doc, name="g.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return p


STAR = {"directed": False,
        "nodes": [{"id": "gpu0", "kind": "npu"}, {"id": "gpu1", "kind": "npu"}, {"id": "sw0", "kind": "switch"}],
        "links": [{"source": "gpu0", "target": "sw0", "bandwidth": "300 GB/s", "latency": "0.7 us"},
                  {"source": "gpu1", "target": "sw0", "bandwidth": 3e11}]}


def test_node_link_json_as_the_issue_writes_it(tmp_path):
    g = read_graph(_write(tmp_path, STAR))
    assert g.npus == ("gpu0", "gpu1") and g.relays == ("sw0",)
    assert len(g.links) == 4 and all(lk.bandwidth == 300e9 for lk in g.links)
    assert {lk.latency for lk in g.links} == {0.7e-6, 0.0}
    directed = {**STAR, "directed": True, "links": STAR["links"] + [
        {"source": "sw0", "target": "gpu0", "bandwidth": "1 GB/s"}, {"source": "sw0", "target": "gpu1",
                                                                      "bandwidth": "2 GB/s"}]}
    g = read_graph(_write(tmp_path, directed))
    assert len(g.links) == 4 and g.in_bandwidth("gpu1") == 2e9
    # all-gather of M on 2 GPUs: gpu1 needs M/2 through sw0 -> gpu1 at 2 GB/s, gpu0 M/2 at 1 GB/s
    assert collective_bound(g, "all_gather", 2e9).bandwidth_s == pytest.approx(1.0)


def test_graphml_and_edge_list(tmp_path):
    import networkx as nx
    h = nx.Graph()
    h.add_node("a", kind="npu")
    h.add_node("b", kind="npu")
    h.add_edge("a", "b", bandwidth="10 GB/s", latency="1 us")
    p = tmp_path / "g.graphml"
    nx.write_graphml(h, p)
    g = read_graph(p)
    assert len(g.links) == 2 and g.links[0].bandwidth == 10e9
    e = _write(tmp_path, "node sw switch\na sw 10GB/s 1us\nb sw 10GB/s  # b's uplink\n", "g.edges")
    g = read_graph(e)
    assert g.npus == ("a", "b") and g.kinds["sw"] == "switch" and len(g.links) == 4


@pytest.mark.parametrize("change, says", [
    (lambda d: d["links"][1].update(bandwidth="0 GB/s"), "links[1].bandwidth"),
    (lambda d: d["links"][1].update(bandwidth=-5), "links[1].bandwidth: link gpu1 -> sw0: expected a positive"),
    (lambda d: d["links"].append({"source": "gpu0", "target": "gpu0", "bandwidth": 1}), "links[2]: self-loop"),
    (lambda d: d["nodes"].append({"id": "gpu9", "kind": "npu"}), "disconnected NPUs: npu 'gpu9'"),
    (lambda d: d["nodes"][2].update(kind="router"), "nodes[2]: node 'sw0': unknown kind 'router'"),
    (lambda d: d["nodes"].append({"id": "gpu1", "kind": "npu"}), "nodes[3]: duplicate node id 'gpu1'"),
    (lambda d: d["links"].append({"source": "gpu0", "target": "gpu7", "bandwidth": 1}), "links[2]: link to an "
                                                                                       "unknown node"),
    (lambda d: d["links"][0].update(latency="3 GB/s"), "links[0].latency: expected a time"),
])
def test_validation_names_the_node_or_link(tmp_path, change, says):
    doc = json.loads(json.dumps(STAR))
    change(doc)
    p = _write(tmp_path, doc)
    with pytest.raises(SpecError) as e:
        read_graph(p)
    assert str(e.value).startswith(f"{p}: ") and says in str(e.value), str(e.value)


@pytest.mark.parametrize("spec, npus", [("dgx1", 8), ("ndv2:chassis=2", 16), ("ndv2:chassis=3", 24),
                                        ("dgx2:chassis=2", 32), ("dgx_h100:nodes=2", 16), ("mi250:nodes=2", 32),
                                        ("fat_tree:leaves=3,npus_per_leaf=2,spines=2", 6),
                                        ("torus:dims=4x4x4", 64), ("mesh:dims=3x2", 6), ("dragonfly", 72),
                                        ("dragonfly:groups=5,routers=2,npus_per_router=3", 30),
                                        ("hammingmesh", 64), ("hammingmesh:board=1x3,grid=2x2", 12)])
def test_generators(spec, npus):
    assert len(generate(spec).npus) == npus


def test_generator_errors_name_the_key():
    for spec, says in (("dgx_a100:nodez=2", "unknown parameter 'nodez'"), ("dgx_a100:nodes=0", "nodes: expected a "
                       "whole number"), ("torus:dims=4x4,link=5 GB", "link: expected a bandwidth"),
                       ("nosuch", "not a file and not a generator")):
        with pytest.raises(SpecError, match=says):
            generate(spec)


def test_torus_graph_bound_matches_the_dimension_model():
    """A 4x4x4 torus as a graph: its all-gather bound is the single-NPU cut, (N-1)/N M over the NPU's 6 links
    (the torus is vertex-transitive). The dimension model's hierarchical rings on the same links send the same
    (N-1)/N M per NPU, but into one dimension's 2 links at a time: exactly 3x the bound."""
    from codesign.platform.collectives import phases
    from codesign.platform.topology import Dim, Topology
    from codesign.workload.model import Comm

    b, M = 50e9, 64 * 2**20
    g = generate("torus:dims=4x4x4,link=50GB/s")
    bound = collective_bound(g, "all_gather", M).bandwidth_s
    assert bound == pytest.approx((63 / 64) * M / (6 * b), rel=1e-12)
    topo = Topology(tuple(Dim(f"d{i}", "ring", 4, 2, b) for i in range(3)))
    # the dimension model's link seconds: per phase, wire bytes over the dimension's 2 links of b
    dim_time = sum(p.wire_bytes / topo.dims[p.dim].bandwidth
                   for p in phases(Comm("all_gather", M), topo))
    assert dim_time == pytest.approx((63 / 64) * M / (2 * b))  # one dimension's links at a time
    assert bound == pytest.approx(dim_time / 3)


@pytest.mark.parametrize("spec", ["dgx1", "fat_tree:leaves=3,npus_per_leaf=2,spines=2", "torus:dims=3x3",
                                  "ndv2:chassis=2"])
def test_tree_packing_is_feasible_and_no_better_than_the_bound(spec):
    """Each tree spans every NPU from its root, the links carry no more than their bandwidth, and the packing's
    rate never passes the cut bound (which holds for every schedule)."""
    from codesign.milp.tree_packing import pack_trees

    g = generate(spec)
    x = float(cut_bound(g).rate)
    p = pack_trees(g, target_rate=x, time_limit_s=20)
    load = [0.0] * len(g.links)
    for t in p.trees:
        reached = {t.root}
        for parent, child, path in t.edges:
            assert parent in reached and g.links[path[0]].source == parent and g.links[path[-1]].target == child
            reached.add(child)
            for i in path:
                load[i] += t.rate
        assert reached == set(g.npus)
    assert all(ld <= lk.bandwidth * (1 + 1e-7) for ld, lk in zip(load, g.links))
    assert p.rate <= x * (1 + 1e-7)
    for r in g.npus:
        assert sum(t.rate for t in p.trees if t.root == r) >= p.rate * (1 - 1e-7)


@pytest.mark.parametrize("groups, routers, per_router", [(9, 4, 2), (5, 2, 2), (4, 3, 1), (2, 1, 1)])
def test_dragonfly_joins_every_two_groups_once(groups, routers, per_router):
    """Kim et al.'s dragonfly: routers of a group all linked, one global link between every two groups, and no
    router with more than its share of global links."""
    import itertools
    import re

    g = generate(f"dragonfly:groups={groups},routers={routers},globals_per_router={per_router}")
    group = {n: int(re.match(r"g(\d+)", n).group(1)) for n in g.kinds}
    router_links = [(lk.source, lk.target) for lk in g.links if g.kinds[lk.source] == g.kinds[lk.target] == "switch"]
    glob = [(u, v) for u, v in router_links if group[u] != group[v]]
    pairs = sorted(tuple(sorted((group[u], group[v]))) for u, v in glob)
    assert pairs == sorted(p for p in itertools.combinations(range(groups), 2) for _ in range(2))  # both ways once
    local = {(u, v) for u, v in router_links if group[u] == group[v]}
    assert len(local) == groups * routers * (routers - 1)
    per = {}
    for u, _ in glob:
        per[u] = per.get(u, 0) + 1
    assert max(per.values(), default=0) <= per_router


def test_dragonfly_with_too_many_groups_names_the_limit():
    with pytest.raises(SpecError, match=r"expected groups <= 9"):
        generate("dragonfly:groups=10")


def test_hammingmesh_boards_and_lines():
    """A 2x2 board on a 4x4 grid: 4 mesh links a board (8 directed), every NPU on a board's edge joins its row's
    switch and its column's (all do on a 2x2 board): 8 + 8 switches, 64 NPUs x 2 links, each both ways."""
    g = generate("hammingmesh:board=2x2,grid=4x4")
    npu_links = [lk for lk in g.links if g.kinds[lk.source] == g.kinds[lk.target] == "npu"]
    assert len(npu_links) == 16 * 4 * 2
    assert len(g.relays) == 16 and len(g.links) == len(npu_links) + 64 * 2 * 2


@pytest.mark.parametrize("spec", ["dgx_a100:nodes=2", "dragonfly:groups=5,routers=2,globals_per_router=2",
                                  "hammingmesh:board=2x2,grid=2x2", "fat_tree:leaves=3,npus_per_leaf=2,spines=2"])
def test_a_cut_bound_stopped_early_is_still_a_bound(spec):
    """Stopped at once by its deadline, the cut bound returns a real cut: a shard throughput no lower than the
    exact optimum (so a time bound no higher: weaker, still valid), marked inexact; the exact one is marked so."""
    g = generate(spec)
    exact, early = cut_bound(g), cut_bound(g, deadline=0.0)
    assert exact.exact and not early.exact and early.rate >= exact.rate
    caps = {}
    for lk in g.links:
        if lk.source in early.binding_cut and lk.target not in early.binding_cut:
            caps[lk.source, lk.target] = lk.bandwidth
    assert early.rate == Fraction(sum(map(Fraction, caps.values()))) / early.cut_npus
