"""ASTRA-sim 1.0 mode against ASTRA-sim 1.0 itself: every sample workload, pinned to the finish time
ASTRA-sim 1.0's own analytical binary printed (built from its ASTRA-sim-1.0 branch, outside this
repository; docs/astra-sim-modes.md). Also: the command line prints that time for every row, the fast
path gives the general path's nanoseconds, the loops' dimensions, the refusals, and the import weight.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from codesign.astra.mode import break_dimension, involved_dimensions, simulate_astra
from codesign.cli import main
from codesign.errors import SpecError

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "astra"

TORUS = ("sample_Torus3D.json", "sample_torus_sys.txt")            # 4x4x4 rings, ring_ring_ring, 4 chunks
TORUS_DBT = ("sample_Torus3D.json", "sample_3dim_sys.txt")         # double binary tree, 1 chunk
RFS = ("sample_Ring_FullyConnected_Switch.json", "sample_torus_sys.txt")   # 2 x 8 x 2, rings
RFS_DBT = ("sample_Ring_FullyConnected_Switch.json", "sample_3dim_sys.txt")
SWITCH = ("sample_Switch.json", "sample_a2a_sys.txt")              # 4 NPUs, tree / halving-doubling
ONE_HD = ("sample_Torus3D.json", "one_hd_sys.txt")                 # all-reduce: oneHalvingDoubling (ours)
BOOST = ("sample_Torus3D.json", "boost_sys.txt")                   # sample_torus_sys.txt, boost-mode: 1 (ours)
SCF = ("sample_Torus3D.json", "scf_sys.txt")                       # intra-dimension-scheduling: SCF (ours)
THEMIS = ("sample_Torus3D.json", "themis_sys.txt")                 # inter-dimension-scheduling: themis (ours)
RING16 = ("ring16.json", "ring_sys.txt")                           # one ring of 16 NPUs, ring (ours)
BUS = ("sample_Torus3D.json", "shared_bus_torus_sys.txt")          # model-shared-bus: 1 (ours)
BUS_RFS = ("sample_Ring_FullyConnected_Switch.json", "shared_bus_torus_sys.txt")
BUS_DIRECT = ("sample_Switch.json", "shared_bus_direct_sys.txt")

#: (workload, (network, system), passes, finish time ASTRA-sim 1.0 printed, ns)
REFERENCE = [
    # ASTRA-sim 1.0's release build (analytical backend d27635b), run on these files by an earlier session
    ("DLRM_HybridParallel.txt", ONE_HD, 2, 260601),
    ("DLRM_HybridParallel.txt", BOOST, 2, 172673),
    ("DLRM_HybridParallel.txt", SCF, 2, 182717),
    ("DLRM_HybridParallel.txt", THEMIS, 2, 170940),
    ("DLRM_Enhanced.txt", TORUS, 2, 172673),   # HYBRID_DLRM_ENHANCED: ASTRA-sim 1.0 runs it as HYBRID_DLRM
    ("MLP_Inference.txt", TORUS, 2, 896332),   # DISTRIBUTED_INFERENCE: forward passes only
    ("Transformer_HybridParallel.txt", RING16, 1, 589281052),   # group 4 cuts the ring into 4 rings of 4
    ("MLP_HybridParallel_Data_Model.txt", TORUS, 1, 269127),
    ("MLP_HybridParallel_Data_Model.txt", TORUS, 2, 538254),
    ("MLP_HybridParallel_Data_Model.txt", TORUS_DBT, 1, 280861),
    ("MLP_HybridParallel_Data_Model.txt", TORUS_DBT, 2, 561722),
    ("MLP_HybridParallel_Data_Model.txt", RFS, 1, 320235),
    ("MLP_HybridParallel_Data_Model.txt", RFS, 2, 640470),
    ("MLP_HybridParallel_Data_Model.txt", RFS_DBT, 1, 358299),
    ("MLP_HybridParallel_Data_Model.txt", RFS_DBT, 2, 716598),
    ("MLP_HybridParallel_Data_Model.txt", SWITCH, 1, 444581),
    ("MLP_HybridParallel_Data_Model.txt", SWITCH, 2, 889162),
    ("sample_per_layer_parallel_HybridCustomized.txt", TORUS, 1, 471162),
    ("sample_per_layer_parallel_HybridCustomized.txt", TORUS, 2, 942324),
    ("sample_per_layer_parallel_HybridCustomized.txt", TORUS_DBT, 1, 566828),
    ("sample_per_layer_parallel_HybridCustomized.txt", TORUS_DBT, 2, 1133656),
    ("sample_per_layer_parallel_HybridCustomized.txt", RFS, 1, 585268),
    ("sample_per_layer_parallel_HybridCustomized.txt", RFS, 2, 1170536),
    ("sample_per_layer_parallel_HybridCustomized.txt", RFS_DBT, 1, 526935),
    ("sample_per_layer_parallel_HybridCustomized.txt", RFS_DBT, 2, 1053870),
    ("sample_per_layer_parallel_HybridCustomized.txt", SWITCH, 1, 316574),
    ("sample_per_layer_parallel_HybridCustomized.txt", SWITCH, 2, 633148),
    ("Transformer_HybridParallel.txt", TORUS, 1, 577978116),
    ("Transformer_HybridParallel.txt", TORUS, 2, 1155589689),
    ("Transformer_HybridParallel.txt", TORUS_DBT, 1, 798060509),
    ("Transformer_HybridParallel.txt", TORUS_DBT, 2, 1595754454),
    ("Transformer_HybridParallel.txt", RFS, 1, 573348636),
    ("Transformer_HybridParallel.txt", RFS, 2, 1146374139),
    # Transformer_HybridParallel.txt on RFS_DBT: ASTRA-sim 1.0 crashed (exit 139); refused here
    ("Transformer_HybridParallel.txt", SWITCH, 1, 650027592),
    ("Transformer_HybridParallel.txt", SWITCH, 2, 1300055184),
    ("Transformer_HybridParallel_Fwd_In_Bckwd.txt", TORUS, 1, 663688206),
    ("Transformer_HybridParallel_Fwd_In_Bckwd.txt", TORUS, 2, 1327376412),
    ("Transformer_HybridParallel_Fwd_In_Bckwd.txt", TORUS_DBT, 1, 816630515),
    ("Transformer_HybridParallel_Fwd_In_Bckwd.txt", TORUS_DBT, 2, 1633261030),
    ("Transformer_HybridParallel_Fwd_In_Bckwd.txt", RFS, 1, 666254445),
    ("Transformer_HybridParallel_Fwd_In_Bckwd.txt", RFS, 2, 1332508890),
    # Transformer_HybridParallel_Fwd_In_Bckwd.txt on RFS_DBT: ASTRA-sim 1.0 crashed (exit 139); refused here
    ("Transformer_HybridParallel_Fwd_In_Bckwd.txt", SWITCH, 1, 740009261),
    ("Transformer_HybridParallel_Fwd_In_Bckwd.txt", SWITCH, 2, 1480018522),
    ("tutorial_gpt3.txt", TORUS, 1, 1672364664),
    ("tutorial_gpt3.txt", TORUS, 2, 3344729328),
    ("tutorial_gpt3.txt", TORUS_DBT, 1, 4856060472),
    ("tutorial_gpt3.txt", TORUS_DBT, 2, 9712120944),
    ("tutorial_gpt3.txt", RFS, 1, 1828932771),
    ("tutorial_gpt3.txt", RFS, 2, 3657865542),
    ("tutorial_gpt3.txt", RFS_DBT, 1, 4831587103),
    ("tutorial_gpt3.txt", RFS_DBT, 2, 9663174206),
    ("tutorial_gpt3.txt", SWITCH, 1, 1407271878),
    ("tutorial_gpt3.txt", SWITCH, 2, 2814543756),
    ("Resnet50_DataParallel.txt", TORUS, 1, 2619438),
    ("Resnet50_DataParallel.txt", TORUS, 2, 4875201),
    ("Resnet50_DataParallel.txt", TORUS_DBT, 1, 24933040),
    ("Resnet50_DataParallel.txt", TORUS_DBT, 2, 49514694),
    ("Resnet50_DataParallel.txt", RFS, 1, 5234506),
    ("Resnet50_DataParallel.txt", RFS, 2, 10105337),
    ("Resnet50_DataParallel.txt", RFS_DBT, 1, 46377850),
    ("Resnet50_DataParallel.txt", RFS_DBT, 2, 92404314),
    ("Resnet50_DataParallel.txt", SWITCH, 1, 16475538),
    ("Resnet50_DataParallel.txt", SWITCH, 2, 32587401),
    ("DLRM_HybridParallel.txt", TORUS, 1, 93476),
    ("DLRM_HybridParallel.txt", TORUS, 2, 172673),
    ("DLRM_HybridParallel.txt", TORUS_DBT, 1, 827475),
    ("DLRM_HybridParallel.txt", TORUS_DBT, 2, 1641044),
    ("DLRM_HybridParallel.txt", RFS, 1, 456023),
    ("DLRM_HybridParallel.txt", RFS, 2, 900244),
    ("DLRM_HybridParallel.txt", RFS_DBT, 1, 1497286),
    ("DLRM_HybridParallel.txt", RFS_DBT, 2, 2980666),
    ("DLRM_HybridParallel.txt", SWITCH, 1, 616432),
    ("DLRM_HybridParallel.txt", SWITCH, 2, 1221429),
    ("MLP_ModelParallel.txt", TORUS, 1, 564501),
    ("MLP_ModelParallel.txt", TORUS, 2, 1129002),
    ("MLP_ModelParallel.txt", TORUS_DBT, 1, 883651),
    ("MLP_ModelParallel.txt", TORUS_DBT, 2, 1767302),
    ("MLP_ModelParallel.txt", RFS, 1, 679990),
    ("MLP_ModelParallel.txt", RFS, 2, 1359980),
    ("MLP_ModelParallel.txt", RFS_DBT, 1, 792083),
    ("MLP_ModelParallel.txt", RFS_DBT, 2, 1584166),
    ("MLP_ModelParallel.txt", SWITCH, 1, 425154),
    ("MLP_ModelParallel.txt", SWITCH, 2, 850308),
    ("tutorial_vgg16.txt", TORUS, 1, 6653837),
    ("tutorial_vgg16.txt", TORUS, 2, 12696075),
    ("tutorial_vgg16.txt", TORUS_DBT, 1, 100483241),
    ("tutorial_vgg16.txt", TORUS_DBT, 2, 200355547),
    ("tutorial_vgg16.txt", RFS, 1, 10085777),
    ("tutorial_vgg16.txt", RFS, 2, 19559955),
    ("tutorial_vgg16.txt", RFS_DBT, 1, 144816313),
    ("tutorial_vgg16.txt", RFS_DBT, 2, 289021691),
    ("tutorial_vgg16.txt", SWITCH, 1, 42112073),
    ("tutorial_vgg16.txt", SWITCH, 2, 83612547),
    ("microAllReduce.txt", TORUS, 1, 22933),
    ("microAllReduce.txt", TORUS, 2, 45861),
    ("microAllReduce.txt", TORUS_DBT, 1, 488643),
    ("microAllReduce.txt", TORUS_DBT, 2, 610785),
    ("microAllReduce.txt", RFS, 1, 63721),
    ("microAllReduce.txt", RFS, 2, 125945),
    ("microAllReduce.txt", RFS_DBT, 1, 643119),
    ("microAllReduce.txt", RFS_DBT, 2, 959777),
    ("microAllReduce.txt", SWITCH, 1, 172605),
    ("microAllReduce.txt", SWITCH, 2, 345205),
    ("microAllToAll.txt", TORUS, 1, 63011),
    ("microAllToAll.txt", TORUS, 2, 108831),
    ("microAllToAll.txt", TORUS_DBT, 1, 503),
    ("microAllToAll.txt", TORUS_DBT, 2, 1001),
    ("microAllToAll.txt", RFS, 1, 204274),
    ("microAllToAll.txt", RFS, 2, 397030),
    ("microAllToAll.txt", RFS_DBT, 1, 3466),
    ("microAllToAll.txt", RFS_DBT, 2, 6927),
    ("microAllToAll.txt", SWITCH, 1, 13889),
    ("microAllToAll.txt", SWITCH, 2, 27773),
    ("microAllReduce.txt", BUS, 1, 238172),
    ("microAllReduce.txt", BUS_DIRECT, 1, 52557),
    ("microAllReduce.txt", BUS_RFS, 1, 302881),
    ("microAllToAll.txt", BUS, 1, 459466),
    ("microAllToAll.txt", BUS_DIRECT, 1, 29073),
    ("microAllToAll.txt", BUS_RFS, 1, 676471),
    ("MLP_HybridParallel_Data_Model.txt", BUS, 1, 526696),
    ("MLP_HybridParallel_Data_Model.txt", BUS_DIRECT, 1, 413909),
    ("MLP_HybridParallel_Data_Model.txt", BUS_RFS, 1, 559142),
    ("sample_per_layer_parallel_HybridCustomized.txt", BUS, 1, 1988951),
    ("sample_per_layer_parallel_HybridCustomized.txt", BUS_DIRECT, 1, 334815),
    ("sample_per_layer_parallel_HybridCustomized.txt", BUS_RFS, 1, 1602790),
    ("MLP_ModelParallel.txt", BUS, 1, 3302290),
    ("MLP_ModelParallel.txt", BUS_DIRECT, 1, 394482),
    ("MLP_ModelParallel.txt", BUS_RFS, 1, 2237450),
    ("DLRM_HybridParallel.txt", BUS, 1, 833470),
    ("DLRM_HybridParallel.txt", BUS_DIRECT, 1, 221285),
    ("DLRM_HybridParallel.txt", BUS_RFS, 1, 1290267),
    ("Resnet50_DataParallel.txt", BUS, 1, 22608804),
    ("Resnet50_DataParallel.txt", BUS_DIRECT, 1, 5146257),
    ("Resnet50_DataParallel.txt", BUS_RFS, 1, 27945021),
    ("Transformer_HybridParallel.txt", BUS, 1, 1060871231),
    ("Transformer_HybridParallel.txt", BUS_DIRECT, 1, 740412759),
    ("Transformer_HybridParallel.txt", BUS_RFS, 1, 1082846186),
    ("tutorial_gpt3.txt", BUS, 1, 4950957082),
    ("tutorial_gpt3.txt", BUS_DIRECT, 1, 1405246190),
    ("tutorial_gpt3.txt", BUS_RFS, 1, 5517644297),
]


def _paths(wl: str, pair: tuple[str, str]) -> tuple[Path, Path, Path]:
    return DATA / "workload" / wl, DATA / "network" / pair[0], DATA / "system" / pair[1]


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(args)
    out, err = capsys.readouterr()
    return status, out, err


def _astra_args(wl: str, pair: tuple[str, str], passes: int = 1) -> list[str]:
    w, n, s = _paths(wl, pair)
    return ["simulate", "--astra-workload", str(w), "--astra-network", str(n), "--astra-system", str(s),
            "--passes", str(passes)]


@pytest.mark.parametrize("wl, pair, passes, finish", REFERENCE,
                         ids=[f"{w[:-4]}-{p[0][7:-5]}-{p[1][:-8]}-{k}" for w, p, k, _ in REFERENCE])
def test_matches_astra_sim_and_the_command_line_prints_it(wl, pair, passes, finish, capsys):
    status, out, err = _cli(_astra_args(wl, pair, passes), capsys)
    assert status == 0 and err == ""
    assert f"finish {finish} ns" in out
    # the general (packet-level) path gives the same nanoseconds, and every other figure too
    fast = simulate_astra(*_paths(wl, pair), passes=passes)
    general = simulate_astra(*_paths(wl, pair), passes=passes, fast=False)
    assert general.finish_time_ns == fast.finish_time_ns == finish
    a, b = fast.to_dict(), general.to_dict()
    for key in ("events", "fast_path"):
        a.pop(key), b.pop(key)
    assert a == b
    assert fast.fast_path == ("bus" not in pair[1])       # the shared bus always runs the general path


def test_json_output_of_a_transformer_run(capsys):
    status, out, _ = _cli(_astra_args("Transformer_HybridParallel_Fwd_In_Bckwd.txt", TORUS) + ["--json"],
                          capsys)
    doc = json.loads(out)
    assert status == 0 and doc["finish_time_ns"] == 663688206
    assert doc["parallelism"] == "HYBRID_TRANSFORMER_FWD_IN_BCKWD" and len(doc["layers"]) == 21
    # layers 2..9 and 11..18 are computed forward twice (re-computation from checkpoints 2 and 11)
    fwd = [la["fwd_compute_ns"] for la in doc["layers"]]
    spec = [100000, 100000, 4946203, 4946203, 4946203, 297516, 297516, 4946203, 19784812, 19784812,
            4946203, 4946203, 4946203, 4946203, 297516, 297516, 4946203, 19784812, 19784812, 4946203,
            41838182]
    assert fwd == [c * (2 if 2 <= i <= 9 or 11 <= i <= 18 else 1) for i, c in enumerate(spec)]


# --- how layers and groups map to dimensions --------------------------------------------------------------
def test_break_dimension_follows_sys_break_dimension():
    # 4x4x4: a group of 4 is dimension 0, of 16 dimensions 0-1, of 1 nothing, of 128 (> 64 NPUs) nothing
    assert break_dimension([4, 4, 4], 4) == ([(4, 0, 1), (4, 1, 1), (4, 2, 1)], 0, None)
    assert break_dimension([4, 4, 4], 16)[1:] == (1, None)
    assert break_dimension([4, 4, 4], 1)[1:] == (-1, None)
    assert break_dimension([4, 4, 4], 128)[1:] == (-1, None)
    # 2 x 8 x 2 with a group of 4: the 8 splits into 2 (stride 1) and 4 (stride 2); the group ends at 1
    assert break_dimension([2, 8, 2], 4) == ([(2, 0, 1), (2, 1, 1), (4, 1, 2), (2, 2, 1)], 1, 1)


def test_involved_dimensions_per_parallelism():
    none, every = (False,) * 10, (True,) * 10
    assert involved_dimensions("DATA") == (none, none, every)
    assert involved_dimensions("MODEL") == (every, every, none)
    fwd, ig, wg = involved_dimensions("HYBRID_DATA_MODEL")
    assert fwd == ig == (True,) + (False,) * 9 and wg == (False,) + (True,) * 9
    fwd, _, wg = involved_dimensions("HYBRID_MODEL_DATA")
    assert fwd[:2] == (False, True) and wg[:2] == (True, False)
    fwd, _, wg = involved_dimensions("HYBRID_TRANSFORMER", boundary=1)
    assert fwd[:3] == (True, True, False) and wg[:3] == (False, False, True)


def test_a_group_on_the_whole_network_leaves_weight_gradients_without_dimensions(tmp_path):
    # model_parallel_NPU_group 4 on the 4-NPU switch: every dimension is model parallel, so the weight
    # gradients have no dimension left and are never issued (ASTRA: "all dims disabled")
    r = simulate_astra(*_paths("Transformer_HybridParallel.txt", SWITCH))
    assert r.finish_time_ns == 650027592
    assert all(la.wg_comm_ns == 0 for la in r.layers)


# --- refusals: exit 2, one line ---------------------------------------------------------------------------
def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _system(tmp: Path, extra: str = "", impl: str = "ring_ring_ring") -> Path:
    return _write(tmp / "s.txt", "scheduling-policy: LIFO\nendpoint-delay: 1\nactive-chunks-per-dimension: 1\n"
                  f"preferred-dataset-splits: 1\nall-reduce-implementation: {impl}\n"
                  f"all-gather-implementation: {impl}\nreduce-scatter-implementation: {impl}\n"
                  f"all-to-all-implementation: {impl}\ncollective-optimization: localBWAware\n" + extra)


LAYER = "l -1 10 ALLGATHER 4096 10 ALLREDUCE 4096 10 ALLREDUCE 4096 1"
RING8 = {"topology-name": "Hierarchical", "dimensions-count": 1, "topologies-per-dim": ["Ring"], "units-count": [8],
         "links-count": [2], "link-latency": [500], "link-bandwidth": [25]}


@pytest.mark.parametrize("workload, network, extra, impl, match", [
    (f"DATA\n1\n{LAYER}\n", TORUS[0], "boost-mode: 1\n", "doubleBinaryTree_doubleBinaryTree_doubleBinaryTree",
     "boost-mode: 1 with doubleBinaryTree is not implemented"),
    (f"DATA\n1\n{LAYER}\n", TORUS[0], "boost-mode: 2\n", "ring_ring_ring", "boost-mode: expected 0 or 1"),
    (f"DATA\n1\n{LAYER}\n", TORUS[0], "model-shared-bus: 1\nL: 1\no: 1\ng: 1\n", "ring_ring_ring",
     "G: model-shared-bus: 1 needs the LogGP parameters"),
    (f"DATA\n1\n{LAYER}\n", TORUS[0], "model-shared-bus: 1\nL: 1\no: 1\ng: 1\nG: 0.1\n",
     "doubleBinaryTree_doubleBinaryTree_doubleBinaryTree", "model-shared-bus is replayed with ring"),
    (f"HYBRID_TRANSFORMER model_parallel_NPU_group: 4\n1\n{LAYER}\n", RFS[0], "",
     "doubleBinaryTree_doubleBinaryTree_doubleBinaryTree", "crashes on doubleBinaryTree"),
    (f"HYBRID_TRANSFORMER model_parallel_NPU_group: 4\n1\n{LAYER}\n", RING8, "", "direct",
     "splits Ring dimension 0 into rings of 4 and 2 NPUs; the ring of 4 closes over 3 hops, so a direct phase"),
    (f"DATA\n1\n{LAYER}\n", {**RING8, "units-count": [6]}, "", "oneHalvingDoubling",
     "oneHalvingDoubling needs a power-of-two NPU count"),
    (f"DATA\n1\n{LAYER}\n", TORUS[0], "", "oneHalvingDoubling_ring", "alone (no window)"),
    (f"DATA\n1\n{LAYER}\n", TORUS[0], "inter-dimension-scheduling: themisFlex\n", "ring_ring_ring",
     "themisFlex is not implemented"),
    (f"DATA\n1\n{LAYER}\n", TORUS[0], "inter-dimension-scheduling: themis\n", "oneRing", "not with doubleBinaryTree"),
    (f"HYBRID_TRANSFORMER model_parallel_NPU_group: 2\n1\n{LAYER}\n", TORUS[0], "inter-dimension-scheduling: "
     "themis\n", "ring_ring_ring", "a model-parallel group that splits a dimension"),
    (f"HYBRID_TRANSFORMER model_parallel_NPU_group: 6\n1\n{LAYER}\n", RFS[0], "", "ring_ring_ring",
     "do not split dimension 1"),
    (f"HYBRID_TRANSFORMER model_parallel_NPU_group: 4\n1\n{LAYER}\n", "sample_Switch.json", "", "ring",
     None),                                                      # accepted: a valid control case
    (f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 checkpoints: 1 1 "
     f"checkpoint_initiates: 1 0\n2\n{LAYER}\n{LAYER}\n", TORUS[0], "", "ring_ring_ring",
     "no checkpoint lies at or below it"),
    (f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 checkpoints: 1 5 "
     f"checkpoint_initiates: 1 1\n2\n{LAYER}\n{LAYER}\n", TORUS[0], "", "ring_ring_ring",
     "checkpoints layer 5 does not exist"),
    (f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 checkpoints: 1 0\n1\n{LAYER}\n",
     TORUS[0], "", "ring_ring_ring", "expected 'checkpoint_initiates:', got nothing"),
    (f"HYBRID_CUSTOMIZED\n1\n{LAYER} HYBRID_TRANSFORMER\n", TORUS[0], "", "ring_ring_ring",
     "13th field, one of DATA, MODEL"),
])
def test_refusals_exit_2_with_one_line(tmp_path, capsys, workload, network, extra, impl, match):
    w = _write(tmp_path / "w.txt", workload)
    s = _system(tmp_path, extra, impl)
    n = _write(tmp_path / "n.json", json.dumps(network)) if isinstance(network, dict) else DATA / "network" / network
    status = main(["simulate", "--astra-workload", str(w), "--astra-network", str(n), "--astra-system", str(s)])
    out, err = capsys.readouterr()
    if match is None:
        assert status == 0 and "finish" in out
        return
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("codesign: error: ") and match in err, err


def test_bad_system_values_name_the_line_and_the_nearest_key(tmp_path):
    s = _system(tmp_path, "model-shared-buss: 1\n")
    with pytest.raises(SpecError) as e:
        simulate_astra(DATA / "workload" / "microAllReduce.txt", DATA / "network" / TORUS[0], s)
    assert e.value.line == 10 and "did you mean 'model-shared-bus'" in str(e.value)
    s = _system(tmp_path, "G: fast\n")
    with pytest.raises(SpecError, match=r"s.txt:10: G: expected a number, got the text 'fast'"):
        simulate_astra(DATA / "workload" / "microAllReduce.txt", DATA / "network" / TORUS[0], s)


# --- the fast path ----------------------------------------------------------------------------------------
def _random_case(rng: random.Random, tmp: Path) -> tuple[Path, Path, Path, int]:
    """A small random network, system and workload with whole-ns times (the fast path's domain)."""
    nd = rng.randint(1, 3)
    topo = [rng.choice(["Ring", "FullyConnected", "Switch"]) for _ in range(nd)]
    units = [rng.choice([2, 4, 4, 8]) for _ in range(nd)]
    links = [2 * rng.randint(1, 2) if t == "Ring" else (u - 1) * rng.randint(1, 2) if t == "FullyConnected"
             else rng.randint(1, 2) for t, u in zip(topo, units)]
    net = {"topology-name": "Hierarchical", "dimensions-count": nd, "topologies-per-dim": topo,
           "units-count": units, "links-count": links,
           "link-latency": [rng.choice([1, 5, 10, 100]) for _ in range(nd)],
           "link-bandwidth": [rng.choice([8, 16, 25, 32]) for _ in range(nd)],
           "nic-latency": [0] * nd, "router-latency": [rng.choice([0, 10]) for _ in range(nd)]}
    n = _write(tmp / "n.json", json.dumps(net))
    impl = "_".join(rng.choice(["ring", "ring", "halvingDoubling", "direct"]) for _ in range(nd))
    a2a = "_".join(rng.choice(["ring", "direct"]) for _ in range(nd))
    s = _write(tmp / "s.txt", f"scheduling-policy: {rng.choice(['LIFO', 'FIFO'])}\n"
               f"endpoint-delay: {rng.choice([1, 5, 10])}\n"
               f"active-chunks-per-dimension: {rng.choice([1, 1, 2])}\n"
               f"preferred-dataset-splits: {rng.choice([1, 2, 3, 4])}\nall-reduce-implementation: {impl}\n"
               f"all-gather-implementation: {impl}\nreduce-scatter-implementation: {impl}\n"
               f"all-to-all-implementation: {a2a}\n"
               f"collective-optimization: {rng.choice(['baseline', 'localBWAware'])}\n")
    par = rng.choice(["DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "MICRO", "HYBRID_TRANSFORMER"])
    head = par + (f" model_parallel_NPU_group: {rng.choice([1, 2, 4])}" if par == "HYBRID_TRANSFORMER" else "")
    rows = []
    for i in range(rng.randint(1, 5)):
        fields = []
        for _ in range(3):
            kind = rng.choice(["ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL", "NONE"])
            nbytes = 0 if kind == "NONE" else rng.choice([64, 1000, 4096, 65536, 1 << 20])
            fields += [rng.randint(0, 3000), kind, nbytes]
        rows.append(" ".join(str(x) for x in [f"l{i}", -1, *fields, rng.randint(0, 50)]))
    w = _write(tmp / "w.txt", f"{head}\n{len(rows)}\n" + "\n".join(rows) + "\n")
    return w, n, s, rng.choice([1, 2])


def test_fast_path_gives_the_general_paths_results_on_random_cases(tmp_path):
    rng = random.Random(2021)
    fast_runs = 0
    for _ in range(40):
        w, n, s, passes = _random_case(rng, tmp_path)
        try:
            general = simulate_astra(w, n, s, passes=passes, fast=False)
        except SpecError:
            continue
        fast = simulate_astra(w, n, s, passes=passes)
        a, b = fast.to_dict(), general.to_dict()
        fast_runs += a.pop("fast_path")
        for d in (a, b):
            d.pop("events")
        b.pop("fast_path")
        assert a == b, (w.read_text(), n.read_text(), s.read_text())
    assert fast_runs >= 30          # the fast path ran (did not fall back) on most of them


@pytest.mark.parametrize("line", ["intra-dimension-scheduling: SCF", "inter-dimension-scheduling: themis"])
def test_scf_and_themis_on_random_cases_are_the_same_on_both_paths(tmp_path, line):
    """SCF's queue order (a list placed by ASTRA's insert rules, not a priority heap) and Themis's chunk orders
    are the same on the fast and the general path; and they change something: some runs finish at another time
    than under FIFO and baseline."""
    rng = random.Random(2022)
    differs = runs = 0
    for _ in range(25):
        w, n, s, passes = _random_case(rng, tmp_path)
        fifo_text = s.read_text()
        scf = _write(tmp_path / "scf.txt", fifo_text + line + "\n")
        try:
            general = simulate_astra(w, n, scf, passes=passes, fast=False)
        except SpecError:
            continue
        fast = simulate_astra(w, n, scf, passes=passes)
        a, b = fast.to_dict(), general.to_dict()
        for d in (a, b):
            d.pop("events"), d.pop("fast_path")
        assert a == b, (w.read_text(), n.read_text(), scf.read_text())
        runs += 1
        differs += simulate_astra(w, n, s, passes=passes).finish_time_ns != general.finish_time_ns
    assert runs >= 15 and differs >= 1


def test_fast_path_falls_back_on_fractional_times(tmp_path):
    # HBM-bound messages (hbm-scale 1, slow HBM) take fractional ns: the fast path gives way
    net = {"topology-name": "Hierarchical", "dimensions-count": 1, "topologies-per-dim": ["Ring"],
           "units-count": [4], "links-count": [2], "link-latency": [1], "link-bandwidth": [100],
           "hbm-latency": [3], "hbm-bandwidth": [0.7], "hbm-scale": [1]}
    n = _write(tmp_path / "n.json", json.dumps(net))
    w, s = DATA / "workload" / "microAllReduce.txt", _system(tmp_path, impl="ring")
    fast, general = simulate_astra(w, n, s), simulate_astra(w, n, s, fast=False)
    assert not fast.fast_path and fast.finish_time_ns == general.finish_time_ns


# --- import weight ------------------------------------------------------------------------------------------
HEAVY = ("pyomo", "highspy", "networkx", "pandas", "matplotlib", "numpy", "yaml")


def test_the_astra_command_line_imports_no_heavy_library():
    w, n, s = _paths("Resnet50_DataParallel.txt", TORUS)
    code = ("import sys\nfrom codesign.cli import main\n"
            f"assert main(['simulate', '--astra-workload', {str(w)!r}, '--astra-network', {str(n)!r}, "
            f"'--astra-system', {str(s)!r}]) == 0\n"
            f"print('loaded:', ' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "finish 2619438 ns" in r.stdout and r.stdout.rstrip().endswith("loaded:"), r.stdout


def test_walked_ring_and_halving_doubling_profiles_equal_replayed_ones(tmp_path):
    """The fast path walks one-packet phases without an event queue (ring in closed form); a full replay
    gives the same."""
    from codesign.astra.inputs import load_astra_network, load_astra_system
    from codesign.astra.profile import FastPathFallback, _linear_profile, _ring_profile, recorded_profile
    from codesign.astra.system import SystemLayer
    from codesign.sim.events import EventLoop
    rng = random.Random(7)
    compared = 0
    for _ in range(40):
        units, topo = rng.choice([2, 4, 8, 16]), rng.choice(["Ring", "FullyConnected", "Switch"])
        links = 2 if topo == "Ring" else units - 1 if topo == "FullyConnected" else 1
        n = _write(tmp_path / "n.json", json.dumps({
            "topology-name": "Hierarchical", "dimensions-count": 1, "topologies-per-dim": [topo],
            "units-count": [units], "links-count": [links], "link-latency": [rng.choice([1, 10, 500])],
            "link-bandwidth": [rng.choice([1, 16, 25, 64])]}))
        s = _system(tmp_path, impl="ring").read_text().replace("endpoint-delay: 1",
                                                                f"endpoint-delay: {rng.choice([1, 10])}")
        host = SystemLayer(EventLoop(), load_astra_network(n), load_astra_system(_write(tmp_path / "s.txt", s)))
        for algo in ("ring", "halvingDoubling"):
            for ptype in ("ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL")[:3 + (algo == "ring")]:
                data = rng.choice([1, 100, 4096, 1 << 20, 12345678])
                try:
                    replayed = recorded_profile(host, 0, algo, ptype, data)
                except FastPathFallback:
                    continue
                assert _linear_profile(host, 0, algo, ptype, data, True) == replayed
                assert _linear_profile(host, 0, algo, ptype, data) == replayed     # chain walked late
                if algo == "ring":                                                  # in closed form
                    assert _ring_profile(host, 0, ptype, data) == replayed
                compared += 1
    assert compared > 200


def test_per_layer_figures_match_astras_end_to_end_csv():
    """compute, exposed and total communication of every layer, as ASTRA-sim 1.0's EndToEnd.csv has them"""
    doc = json.loads((DATA / "end_to_end.json").read_text())
    pairs = {"TORUS": TORUS, "RFS": RFS, "SWITCH": SWITCH, "BUS": BUS}
    for run in doc["runs"]:
        r = simulate_astra(*_paths(run["workload"], pairs[run["pair"]]), passes=run["passes"])
        ours = [[la.name, la.fwd_compute_ns, la.wg_compute_ns, la.ig_compute_ns, la.fwd_exposed_ns,
                 la.wg_exposed_ns, la.ig_exposed_ns, la.fwd_comm_ns, la.wg_comm_ns, la.ig_comm_ns]
                for la in r.layers]
        assert ours == run["layers"], run["workload"]
