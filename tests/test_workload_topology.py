"""The ASTRA-sim importer, the iteration's dependencies, and the topology and layer graphs."""
from __future__ import annotations

import pytest
from conftest import ROOT

from codesign.platform.topology import Dim, Topology
from codesign.schedule.iteration import build_iteration
from codesign.workload import load_astra_workload, parse_astra_workload

WL = ROOT / "problems" / "workloads"


def test_resnet50_import():
    w = load_astra_workload(WL / "Resnet50_DataParallel.txt")
    assert w.parallelism == "data" and len(w.layers) == 54
    conv1 = w.layers[0]
    assert conv1.name == "conv1"
    assert conv1.forward.time_s == pytest.approx(13003e-9)
    assert conv1.weight_grad_comm.collective == "all_reduce" and conv1.weight_grad_comm.bytes == 37632
    assert conv1.update_s == pytest.approx(3229e-9)
    # ASTRA-sim's compute per pass: all forward, weight-grad and input-grad but layer 1's input grad
    raw = parse_astra_workload(WL / "Resnet50_DataParallel.txt")
    it = build_iteration(w)
    total = sum(c.demand.time_s for c in it.computes)
    expect = sum(ly.fwd_compute + ly.wg_compute + ly.ig_compute for ly in raw.layers) - raw.layers[0].ig_compute
    assert total == pytest.approx(expect * 1e-9)
    assert len(it.computes) == 3 * 54 - 1 and len(it.comms) == 54


def test_data_parallel_dependencies():
    it = build_iteration(load_astra_workload(WL / "Resnet50_DataParallel.txt"))
    names = [c.name for c in it.computes]
    assert names[:2] == ["conv1.forward", "layer_64_1_conv4.forward"]
    assert names[54] == "fc1000.weight_grad" and names[-1] == "conv1.weight_grad"
    for c in it.comms:
        assert it.computes[c.issue_after].kind == "weight_grad" and it.computes[c.issue_after].layer == c.layer
        assert c.next_iteration and it.computes[c.wait_before].kind == "forward"
        assert it.computes[c.wait_before].layer == c.layer


def test_dlrm_blocking_all_to_alls():
    w = load_astra_workload(WL / "DLRM_HybridParallel.txt")
    assert w.parallelism == "hybrid_dlrm" and w.dlrm_last_bottom == 5  # HYBRID_DLRM 4: top MLP at layer 6
    it = build_iteration(w)
    fwd, bwd = it.comms[0], it.comms[1]
    assert fwd.urgent and bwd.urgent and fwd.comm.collective == "all_to_all"
    assert it.computes[fwd.issue_after].name == "Embedding.forward"
    assert it.computes[fwd.wait_before].name == "MLP_Top_0.forward" and not fwd.next_iteration
    assert it.computes[bwd.issue_after].name == "MLP_Top_0.input_grad"
    assert bwd.wait_before == 0 and bwd.next_iteration
    assert all(not c.urgent for c in it.comms[2:])


def test_micro_issues_everything_at_start():
    it = build_iteration(load_astra_workload(WL / "microAllReduce.txt"))
    assert len(it.computes) == 1 and it.computes[0].demand.time_s == 0
    assert [c.issue_after for c in it.comms] == [0]


def test_torus_graph():
    t = Topology(tuple(Dim(f"d{i}", "ring", 4, 2, 25e9) for i in range(3)))
    g = t.graph()
    assert t.npus == 64 and g.number_of_nodes() == 64
    assert g.number_of_edges() == 3 * 16 * 4  # 16 rings of 4 per dimension
    assert all(deg == 6 for _, deg in g.degree())


def test_switch_and_fully_connected_graph():
    t = Topology((Dim("fc", "fully_connected", 4, 3, 10e9), Dim("sw", "switch", 2, 1, 10e9)))
    g = t.graph()
    npus = [n for n in g if n[0] != "switch"]
    assert len(npus) == 8 and g.number_of_nodes() == 8 + 4  # one switch per group of the switch dimension
    fc_edges = [e for e in g.edges(data=True) if e[2]["dim"] == 0]
    assert len(fc_edges) == 2 * 6 and all(e[2]["bandwidth"] == pytest.approx(10e9) for e in fc_edges)


def test_layer_graph():
    w = load_astra_workload(WL / "Resnet50_DataParallel.txt")
    g = w.graph()
    assert g.number_of_nodes() == 54 and g.number_of_edges() == 53
    assert g.nodes["conv1"]["layer"].weight_grad_comm.bytes == 37632
