"""ASTRA-sim 1.0's hybrid, model-parallel and Transformer loops in `codesign solve`.

Per mode: the problem file under problems/astra/ solves (status optimal), and, on the same inputs with the
ideal engine and one chunk, the chunk replay's steady-state period agrees with the ASTRA-sim mode's
steady-state pass (the difference between two consecutive pass ends once it repeats). Where they differ,
it is by what only ASTRA has, bounded from the program (``astra_extra_ns``): one cycle per move of its
loop, one more endpoint delay per phase, whole-ns truncation of each message, and its local reduction of
3 x floor(bytes / 500000) cycles per received message that carries partial sums (codesign's ideal engine
reduces for free).
"""
from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

import codesign
from codesign.astra.mode import simulate_astra
from codesign.errors import SpecError
from codesign.platform.collectives import phases
from codesign.platform.endpoint import Design
from codesign.problem.load import parse_problem
from codesign.schedule.iteration import build_iteration
from codesign.sim.replay import simulate
from codesign.spec.yamlfile import load_yaml
from codesign.workload.astra import astra_to_workload, parse_astra_workload

PROBLEMS = ROOT / "problems" / "astra"
DATA = ROOT / "tests" / "data" / "astra"

#: (problem file, ASTRA workload file, parallelism)
MODES = [
    ("mlp_model_ace_torus3d.yaml", "MLP_ModelParallel.txt", "MODEL"),
    ("mlp_hybrid_data_model_ace_torus3d.yaml", "MLP_HybridParallel_Data_Model.txt", "HYBRID_DATA_MODEL"),
    ("mlp_hybrid_model_data_ace_torus3d.yaml", "MLP_HybridParallel_Model_Data.txt", "HYBRID_MODEL_DATA"),
    ("mlp_hybrid_customized_ace_torus3d.yaml", "sample_per_layer_parallel_HybridCustomized.txt", "HYBRID_CUSTOMIZED"),
    ("transformer_hybrid_ace_torus3d.yaml", "Transformer_HybridParallel.txt", "HYBRID_TRANSFORMER"),
    ("transformer_recompute_ace_torus3d.yaml", "Transformer_HybridParallel_Fwd_In_Bckwd.txt",
     "HYBRID_TRANSFORMER_FWD_IN_BCKWD"),
    ("gpt3_tutorial_recompute_ace_torus3d.yaml", "tutorial_gpt3.txt", "HYBRID_TRANSFORMER_FWD_IN_BCKWD"),
]
IDS = [m[0].removesuffix("_ace_torus3d.yaml") for m in MODES]


def ideal_one_chunk(problem_file: Path) -> codesign.Problem:
    """The problem on the same network with the ideal engine and one chunk per collective."""
    doc = copy.deepcopy(load_yaml(problem_file))
    doc["engine"] = {"type": "ideal", "endpoint_delay": doc["engine"]["endpoint_delay"]}
    doc["schedule"] = {"order": "fifo", "chunks": 1}
    return parse_problem(doc, problem_file)


def astra_system(tmp: Path) -> Path:
    """ASTRA-sim's sample_torus_sys.txt with one chunk per collective and FIFO (the file's policy only
    orders the blocking forward collectives, which never meet another collective on their dimensions)."""
    text = (DATA / "system" / "sample_torus_sys.txt").read_text()
    path = tmp / "sys.txt"
    path.write_text(text.replace("preferred-dataset-splits: 4", "preferred-dataset-splits: 1").replace("LIFO", "FIFO"))
    return path


def astra_extra_ns(p: codesign.Problem) -> tuple[float, float]:
    """(lowest, highest) of ASTRA's pass minus codesign's period, from the program: ASTRA pays one cycle per
    move of its loop (at most two per step), one more endpoint delay per phase, its local reduction per
    message that carries partials, and truncates each message to whole ns (at most 1 ns, either way)."""
    it = build_iteration(p.workload, p.schedule.overlap)
    lo, hi = 0.0, 2.0 * len(it.computes)
    for c in it.comms:
        for ph in phases(c.comm, p.topology):
            hi += 2.0 * ph.steps + 1.0
            lo -= 1.0 * ph.steps
            if ph.reduce_wire:
                reducing = ph.steps if ph.op == "reduce_scatter" else ph.steps // 2
                hi += reducing * 3 * (ph.buffer_bytes / ph.peers // 500000)
    return lo, hi


@pytest.mark.parametrize("problem_file, workload, parallelism", MODES, ids=IDS)
def test_mode_solves(problem_file, workload, parallelism):
    p = codesign.load_problem(PROBLEMS / problem_file)
    assert p.workload.parallelism == parallelism.lower() and p.workload.program is not None
    sol = codesign.solve(p, time_limit=120)
    assert sol.status == "optimal", sol.status
    assert sol.design.get("sram") > 0 and sol.iteration_time_s > 0


@pytest.mark.parametrize("problem_file, workload, parallelism", MODES, ids=IDS)
def test_period_agrees_with_astra_steady_state(tmp_path, problem_file, workload, parallelism):
    p = ideal_one_chunk(PROBLEMS / problem_file)
    period_ns = simulate(p, Design("ideal", {})).period_s * 1e9
    r = simulate_astra(PROBLEMS / "workloads" / workload, DATA / "network" / "sample_Torus3D.json",
                       astra_system(tmp_path), passes=4)
    ends = r.pass_end_ns
    per_pass = [b - a for a, b in zip(ends, ends[1:])]
    assert per_pass[-1] == per_pass[-2], per_pass              # ASTRA has reached its steady state
    lo, hi = astra_extra_ns(p)
    diff = per_pass[-1] - period_ns
    assert lo <= diff <= hi, (diff, lo, hi, period_ns)
    assert abs(diff) <= 1e-4 * period_ns                          # within 0.01% on every sample
    # the same compute as ASTRA's pass, re-computed forwards included
    it = build_iteration(p.workload)
    assert sum(c.demand.time_s for c in it.computes) * 1e9 == pytest.approx(r.compute_time_ns / 4, abs=1e-3)


def test_small_messages_agree_to_the_loop_moves(tmp_path):
    """The MLP samples' messages carry no local reduction: the difference is ASTRA's moves and endpoint
    visits, a few ns per pass."""
    p = ideal_one_chunk(PROBLEMS / "mlp_hybrid_data_model_ace_torus3d.yaml")
    period_ns = simulate(p, Design("ideal", {})).period_s * 1e9
    r = simulate_astra(PROBLEMS / "workloads" / "MLP_HybridParallel_Data_Model.txt",
                       DATA / "network" / "sample_Torus3D.json", astra_system(tmp_path), passes=3)
    assert 0 <= r.pass_end_ns[-1] - r.pass_end_ns[-2] - period_ns < 20


def test_loops_as_astra_runs_them():
    """The program walked from ASTRA's state machine: the hybrid backward runs input gradient before weight
    gradient (layer 1's too), waits for the input-gradient collective after the weight gradient, and forward
    collectives block; the Transformer loop also issues layer 1's input-gradient collective."""
    p = codesign.load_problem(PROBLEMS / "mlp_hybrid_data_model_ace_torus3d.yaml")
    it = build_iteration(p.workload)
    names = [c.name for c in it.computes]
    L = len(p.workload.layers)
    assert names[:L] == [f"{la.name}.forward" for la in p.workload.layers]
    assert names[L:L + 2] == [f"{p.workload.layers[-1].name}.input_grad", f"{p.workload.layers[-1].name}.weight_grad"]
    assert names[-2:] == ["layer_64_2_mlp0.input_grad", "layer_64_2_mlp0.weight_grad"]
    for c in it.comms:
        issuer, waiter = it.computes[c.issue_after], it.computes[c.wait_before]
        if c.kind == "forward_comm":          # blocking: the next task waits (the update delay after it)
            assert c.wait_before == c.issue_after + 1 and not c.next_iteration
            assert c.comm.dims == (0,)          # model parallel on dimension 0
        elif c.kind == "input_grad_comm":     # awaited after the same layer's weight gradient
            assert waiter.layer == issuer.layer - 1 and it.computes[c.wait_before - 1].kind == "weight_grad"
            assert c.comm.dims == (0,)
        else:                                 # weight gradient: next iteration's forward of the layer
            assert c.next_iteration and waiter.kind == "forward" and waiter.layer == issuer.layer
            assert c.comm.dims == (1, 2)
        assert c.delay_s == pytest.approx(p.workload.layers[c.layer].update_s)
    tr = build_iteration(codesign.load_problem(PROBLEMS / "transformer_hybrid_ace_torus3d.yaml").workload)
    q1 = [c for c in tr.comms if c.name == "Q1.input_grad_comm"][0]
    assert q1.comm.dims == (0,) and q1.comm.collective == "all_reduce"


def test_transformer_issues_layer_one_input_gradient(tmp_path):
    """The Transformer loops issue layer 1's input-gradient collective (the hybrid loops do not); it is
    awaited after layer 1's weight gradient, before the next pass."""
    _transformer_file(tmp_path / "t.txt", 2)
    w = astra_to_workload(parse_astra_workload(tmp_path / "t.txt"), dim_sizes=(2, 2))
    it = build_iteration(w)
    (ig0,) = [c for c in it.comms if c.layer == 0 and c.kind == "input_grad_comm"]
    assert it.computes[ig0.issue_after].name == "a.input_grad" and ig0.wait_before == 0 and ig0.next_iteration
    hybrid = (tmp_path / "t.txt").read_text().replace("HYBRID_TRANSFORMER model_parallel_NPU_group: 2",
                                                      "HYBRID_DATA_MODEL")
    (tmp_path / "h.txt").write_text(hybrid)
    w = astra_to_workload(parse_astra_workload(tmp_path / "h.txt"), dim_sizes=(2, 2))
    assert not [c for c in build_iteration(w).comms if c.layer == 0 and c.kind == "input_grad_comm"]


def test_recompute_reruns_the_forwards_astra_reruns():
    """checkpoints 2 and 11, initiated by layers 19 and 10: layers 11-18 and 2-9 re-run their forward
    (docs/astra-sim-modes.md), each with its blocking forward collective, before that layer's input gradient."""
    p = codesign.load_problem(PROBLEMS / "transformer_recompute_ace_torus3d.yaml")
    it = build_iteration(p.workload)
    names = [c.name for c in it.computes]
    layers = [la.name for la in p.workload.layers]
    re = [c.layer for c in it.computes if c.name.endswith(".recompute")]
    assert re == list(range(11, 19)) + list(range(2, 10))
    i19 = names.index(f"{layers[19]}.input_grad")
    assert names[i19 - 8:i19] == [f"{layers[k]}.forward.recompute" for k in range(11, 19)]
    i10 = names.index(f"{layers[10]}.input_grad")
    assert names[i10 - 8:i10] == [f"{layers[k]}.forward.recompute" for k in range(2, 10)]
    # a re-computed forward collective blocks like the first one
    tok = [c for c in it.comms if c.name.endswith(".recompute")]
    assert all(c.wait_before == c.issue_after + 1 for c in tok)


def test_group_of_sixteen_spans_two_dimensions():
    p = codesign.load_problem(PROBLEMS / "gpt3_tutorial_recompute_ace_torus3d.yaml")
    kinds = {(c.kind, c.comm.dims) for c in build_iteration(p.workload).comms}
    assert kinds == {("forward_comm", (0, 1)), ("input_grad_comm", (0, 1)), ("weight_grad_comm", (2,))}


def test_allgather_bytes_are_the_gathered_buffer():
    """ASTRA's ALLGATHER size is each NPU's shard; codesign's collective bytes are the gathered buffer."""
    p = codesign.load_problem(PROBLEMS / "mlp_model_ace_torus3d.yaml")
    raw = parse_astra_workload(PROBLEMS / "workloads" / "MLP_ModelParallel.txt")
    assert p.workload.layers[0].forward_comm.collective == "all_gather"
    assert p.workload.layers[0].forward_comm.bytes == raw.layers[0].fwd_comm_bytes * 64   # all three dimensions


SPLIT_DOC = {
    "workload": {"astra": "t.txt"},
    "topology": {"dims": [{"kind": "ring", "size": 2, "bandwidth": "10 GB/s"},
                          {"kind": "fully_connected", "size": 8, "bandwidth": "10 GB/s"},
                          {"kind": "switch", "size": 2, "bandwidth": "10 GB/s"}]},
    "engine": {"type": "ideal"},
}


def _transformer_file(path: Path, group: int) -> None:
    path.write_text(f"HYBRID_TRANSFORMER model_parallel_NPU_group: {group}\n2\n"
                    "a -1 10 NONE 0 10 ALLREDUCE 1000 10 ALLREDUCE 1000 1\n"
                    "b -1 10 ALLREDUCE 1000 10 ALLREDUCE 1000 10 ALLREDUCE 1000 1\n")


def test_group_ending_inside_a_dimension_is_refused(tmp_path):
    """A group of 4 on 2 x 8 x 2 ends inside the 8 (ASTRA splits it into 2 x 4): exit 2, one line naming
    the workload file, its line and the dimension, from solve and validate alike."""
    import yaml
    _transformer_file(tmp_path / "t.txt", 4)
    prob = tmp_path / "p.yaml"
    prob.write_text(yaml.safe_dump(SPLIT_DOC))
    with pytest.raises(SpecError, match=r"model_parallel_NPU_group 4 ends inside topology.dims\[1\]") as e:
        codesign.load_problem(prob)
    assert e.value.file.endswith("t.txt") and e.value.line == 1
    assert "write it as two dimensions of 2 and 4 NPUs" in str(e.value)
    outs = []
    for cmd in ("validate", "solve"):
        r = subprocess.run([sys.executable, "-m", "codesign", cmd, str(prob)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "ends inside topology.dims[1]" in lines[0], r.stderr
        outs.append(lines[0])
    assert outs[0] == outs[1]            # the same check, the same line
    # a group that fills whole dimensions is solved: 2 x 8 = 16 is dimensions 0 and 1
    _transformer_file(tmp_path / "t.txt", 16)
    w = codesign.load_problem(prob).workload
    assert {c.comm.dims for c in build_iteration(w).comms if c.kind != "weight_grad_comm"} == {(0, 1)}


def test_group_of_one_or_beyond_the_network_is_data_parallel(tmp_path):
    for group in (1, 64):
        _transformer_file(tmp_path / "t.txt", group)
        aw = parse_astra_workload(tmp_path / "t.txt")
        w = astra_to_workload(aw, dim_sizes=(2, 8, 2))
        kinds = {c.kind for c in build_iteration(w).comms}
        assert kinds == {"weight_grad_comm"}          # no model-parallel dimension: only data parallelism
        assert all(c.comm.dims is None for c in build_iteration(w).comms)


def test_recompute_that_never_finishes_is_refused(tmp_path):
    """A layer that is its own checkpoint and initiates, with the layer above it initiating too, makes
    ASTRA's state machine loop forever: refused with one line (ASTRA-sim 1.0 would not finish the pass)."""
    (tmp_path / "t.txt").write_text(
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 checkpoints: 1 0 checkpoint_initiates: 2 0 1\n"
        "2\na -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 1000 1\nb -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 1000 1\n")
    with pytest.raises(SpecError, match="would not finish the pass"):
        astra_to_workload(parse_astra_workload(tmp_path / "t.txt"), dim_sizes=(2, 2))


def test_distributed_inference_is_forward_only_and_agrees_with_astra(tmp_path):
    """DISTRIBUTED_INFERENCE (Workload::iterate_distributed_inference): every pass is the forwards alone, each
    awaiting its collective. codesign's program has exactly those steps, and its period is ASTRA's pass."""
    doc = copy.deepcopy(load_yaml(PROBLEMS / "mlp_model_ace_torus3d.yaml"))
    doc["workload"]["astra"] = str(DATA / "workload" / "MLP_Inference.txt")
    doc["engine"] = {"type": "ideal", "endpoint_delay": doc["engine"]["endpoint_delay"]}
    doc["schedule"] = {"order": "fifo", "chunks": 1}
    p = parse_problem(doc, PROBLEMS / "mlp_model_ace_torus3d.yaml")
    assert p.workload.parallelism == "distributed_inference"
    assert [s.name.rsplit(".", 1)[1] for s in p.workload.program] == ["forward"] * len(p.workload.layers)
    period_ns = simulate(p, Design("ideal", {})).period_s * 1e9
    r = simulate_astra(DATA / "workload" / "MLP_Inference.txt", DATA / "network" / "sample_Torus3D.json",
                       astra_system(tmp_path), passes=4)
    per_pass = [b - a for a, b in zip(r.pass_end_ns, r.pass_end_ns[1:])]
    assert per_pass[-1] == per_pass[-2], per_pass
    lo, hi = astra_extra_ns(p)
    assert lo <= per_pass[-1] - period_ns <= hi, (per_pass[-1], period_ns, lo, hi)
