"""The LLM builder (codesign/workload/llm.py): every figure of docs/llm.md pinned by hand, the pipeline's
representative program against an exact replay of every stage, and the shipped problems solved."""
from __future__ import annotations

import math
import subprocess
import sys

import pytest
from conftest import ROOT
from pipeline_reference import iteration_time

import codesign
from codesign.errors import SpecError
from codesign.platform.collectives import phases
from codesign.platform.costs import collective_demands, compute_time_terms
from codesign.platform.endpoint import NPU, Design, Engine
from codesign.platform.topology import Dim, Topology
from codesign.problem.model import Objective, Problem, ScheduleSpec, SolverSpec
from codesign.schedule.iteration import build_iteration
from codesign.sim.replay import simulate
from codesign.workload import llm as L
from codesign.workload.model import Compute

GPT3 = dict(layers=96, hidden=12288, heads=96, seq_len=2048, vocab=50257, micro_batch=1, global_batch=1536,
            tensor_parallel=8, pipeline_parallel=8, data_parallel=16, tensor_dims=(0,), pipeline_dims=(1,),
            data_dims=(2, 3), schedule="1f1b", recompute="selective", zero=0)
GPT3_SIZES = (8, 8, 4, 4)


def cfg(**kw) -> L.LLMConfig:
    args = {**GPT3, "ffn_hidden": 0, "act_bytes": 2.0, "weight_bytes": 2.0, "grad_bytes": 2.0,
            "topology_sizes": GPT3_SIZES, **kw}
    return L.config(**args)


# ------------------------------------------------------------------ figures by hand (docs/llm.md)

def test_gpt3_parameters():
    c = cfg()
    assert c.padded_vocab == 51200          # 50257 up to a multiple of 128 x 8 = 1024
    h = 12288
    per_layer = 12 * h * h + 13 * h         # 4h^2 + 2hf + 9h + f at f = 4h
    assert per_layer == 1_812_099_072
    assert L.params_total(c) == 96 * per_layer + 51200 * h + 2048 * h + 2 * h == 174_615_846_912
    b = L.blocks(c)
    assert b["attention"].params == (4 * h * h + 3 * h) // 8 + 3 * h == 75_538_944
    assert b["mlp"].params == (8 * h * h + 4 * h) // 8 + 3 * h == 151_037_952
    assert b["embedding"].params == 51200 * h // 8 + 2048 * h == 103_809_024
    # every rank's shard, replicated LayerNorms and biases counted on each, adds up to the model
    t = 8
    shard = 96 * (b["attention"].params + b["mlp"].params) + b["embedding"].params + b["head"].params
    replicated = 96 * 6 * h + 2048 * h + 2 * h       # on every tensor-parallel rank
    assert t * (shard - replicated) + replicated == L.params_total(c)


def test_gpt3_flops_per_iteration_is_narayanans():
    """[NARAYANAN21]'s FLOPs per iteration: 96 B s l h^2 (1 + s/6h + V/16lh) with full recomputation; 72 without."""
    B, s, l, h, V = 1536, 2048, 96, 12288, 51200
    full = L.model_flops_per_iteration(cfg(recompute="full"))
    assert full == pytest.approx(96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)), rel=1e-15)
    none = L.model_flops_per_iteration(cfg(recompute="none"))
    assert none == pytest.approx(72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h)), rel=1e-15)
    assert none == pytest.approx(3.38620e18, rel=1e-5)     # 3.39e18 FLOPs per iteration
    # selective adds the attention core's forward, 4 s^2 h per layer per sequence
    assert L.model_flops_per_iteration(cfg()) - none == 4 * s * s * h * l * B


def test_flops_per_token():
    """Forward FLOPs per token per layer 24h^2 + 4sh; the whole iteration about 6 N per token (N parameters)."""
    c = cfg(recompute="none")
    b = L.blocks(c)
    h, s, t = 12288, 2048, 8
    fwd = (b["attention"].forward.flops + b["mlp"].forward.flops) * t / (1 * s)
    assert fwd == 24 * h * h + 4 * s * h
    tokens = 1536 * s
    assert L.model_flops_per_iteration(c) / tokens / L.params_total(c) == pytest.approx(6.0, rel=0.04)


def test_rank_work_adds_up_to_the_model():
    """t x d ranks x m micro-batches of each stage's blocks give the model's FLOPs (plus the embedding's
    scatter-add, n h per rank per micro-batch over all n tokens, masked outside the rank's vocabulary slice,
    which their count leaves out)."""
    for rec in ("none", "selective", "full"):
        c = cfg(recompute=rec)
        b = L.blocks(c)
        sel = b["attention"].selective.flops if rec == "selective" else 0.0
        k = 2 if rec == "full" else 1
        layer = k * (b["attention"].forward.flops + b["mlp"].forward.flops) + sum(
            x.input_grad.flops + x.weight_grad.flops for x in (b["attention"], b["mlp"])) + sel
        head = b["head"].forward.flops + b["head"].input_grad.flops + b["head"].weight_grad.flops
        per_replica_mb = 96 * layer + head + b["embedding"].weight_grad.flops
        total = 8 * 16 * c.micro_batches * per_replica_mb
        assert total == pytest.approx(L.model_flops_per_iteration(c) + 8 * 1536 * 2048 * 12288, rel=1e-12)


def test_collective_bytes():
    w = L.llm(**GPT3, topology_sizes=GPT3_SIZES)
    n, h = 2048, 12288
    act = n * h * 2
    assert act == 50_331_648
    att = w.layers[1]
    assert att.name == "L0.attention"
    assert att.forward_comm.bytes == att.input_grad_comm.bytes == act and att.forward_comm.dims == (0,)
    assert att.weight_grad_comm.collective == "all_reduce" and att.weight_grad_comm.dims == (2, 3)
    assert att.weight_grad_comm.bytes == 75_538_944 * 2
    assert w.layers[2].weight_grad_comm.bytes == 151_037_952 * 2
    head = w.layers[-1]
    assert head.forward_comm.bytes == 12 * n                # the cross-entropy's three fp32 all-reduces
    assert head.input_grad_comm.bytes == act
    # the pipeline transfer: n h A bytes on the wire, on the pipeline dimension
    p2p = [i.comm for s in w.program for i in s.issues if i.kind == "p2p"]
    topo = Topology(tuple(Dim(f"d{k}", "ring", n_, 2, 41e9) for k, n_ in enumerate(GPT3_SIZES)))
    smallest = min(p2p, key=lambda x: x.bytes)
    assert smallest.dims == (1,) and smallest.collective == L.P2P_AS
    (ph,) = phases(smallest, topo)
    assert ph.wire_bytes == pytest.approx(act) and ph.dim == 1


def test_bubble_fraction_and_micro_batches():
    c = cfg()
    assert c.micro_batches == 96 and L.bubble_fraction(c) == pytest.approx(7 / 96)
    assert L.bubble_fraction(cfg(pipeline_parallel=1, pipeline_dims=(), data_dims=(1, 2, 3),
                                 data_parallel=128)) == 0.0


def test_two_tensor_parallel_all_reduces_per_layer_per_pass():
    """[SHOEYBI19]: per layer 2 in the forward, 2 in the backward; full recomputation re-runs the 2 forward ones."""
    for rec, per_layer in (("selective", 4), ("full", 6)):
        w = L.llm(**{**GPT3, "recompute": rec}, merge_micro_batches=False, topology_sizes=GPT3_SIZES)
        mb = [i for s in w.program if s.name.startswith("mb5.") for i in s.issues if i.kind == "tp"]
        blocks = [i for i in mb if ".L" in i.name]
        assert len(blocks) == 12 * per_layer      # 12 layers per stage
        assert all(i.wait == [k for k, s in enumerate(w.program) if i in s.issues][0] + 1 for i in blocks)


def test_bubble_is_the_other_stages_work():
    """Between iterations the representative runs the p - 1 other stages' last backward and first forward as
    idle steps: (p - 1) (t_f + t_b) of work, each stage's own layers (the first stage's embedding too)."""
    c = cfg()
    w = L.build_llm(c)
    idle = [s for s in w.program if s.kind == "idle" and (s.demand.flops or 0) > 0]
    b = L.blocks(c)
    tf = 12 * (b["attention"].forward.flops + b["mlp"].forward.flops)
    tb = 12 * sum(x.input_grad.flops + x.weight_grad.flops for x in (b["attention"], b["mlp"])) \
        + 12 * b["attention"].selective.flops
    emb = b["embedding"].weight_grad.flops
    assert sum(s.demand.flops for s in idle) == pytest.approx(7 * (tf + tb) + emb)
    # the data-parallel all-reduces are the first stage's, released by its backward, awaited by its optimizer
    it = build_iteration(w)
    dp = [k for k in it.comms if k.kind == "dp"]
    assert len(dp) == 1 + 24 and all(it.computes[k.wait_before].kind == "optimizer" for k in dp)
    assert all(it.computes[k.issue_after].name.startswith("stage0.") for k in dp)


# ------------------------------------------------------------------ the pipeline against every stage

NPU_T = NPU(compute_flops=100e12, hbm_bandwidth=1e12, cores=80, core_reduce_rate=25e9, compute_hbm_utilization=0.5)


def _stage_times(w, p: int, rec: str) -> tuple[list[float], list[float], float]:
    def t(d: Compute) -> float:
        return max(compute_time_terms(d, NPU_T, NPU_T.cores, NPU_T.hbm_bandwidth))

    lay = w.layers
    f = [t(x.forward) for x in lay]
    b = [t(Compute(flops=(x.input_grad.flops or 0) + (x.weight_grad.flops or 0),
                   hbm_bytes=(x.input_grad.hbm_bytes or 0) + (x.weight_grad.hbm_bytes or 0))) for x in lay]
    body = list(range(1, len(lay) - 1))
    redo = sum(f[i] for i in body) if rec == "full" else 0.0
    first, mid, last = [0] + body, body, body + [len(lay) - 1]
    tf = [sum(f[i] for i in first)] + [sum(f[i] for i in mid)] * (p - 2) + [sum(f[i] for i in last)]
    tb = ([sum(b[i] for i in first) + redo] + [sum(b[i] for i in mid) + redo] * (p - 2)
          + [sum(b[i] for i in last) + redo])
    opt = t([s for s in w.program if s.kind == "optimizer"][0].demand)
    return tf, tb, opt


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
@pytest.mark.parametrize("p, m, rec, vocab, bandwidth", [
    (2, 1, "none", 1000, 30e9), (2, 5, "full", 30000, 15e9), (3, 2, "selective", 128, 30e9),
    (3, 7, "none", 100000, 300e9), (4, 4, "full", 1000, 30e9), (4, 16, "selective", 30000, 300e9),
    (6, 9, "none", 1000, 15e9), (8, 3, "full", 128, 300e9)])
def test_representative_period_is_the_exact_pipeline(schedule, p, m, rec, vocab, bandwidth):
    """The representative NPU's steady-state period equals an exact replay of all p stages (Megatron's
    blocking exchanges, the optimizer after every stage, tests/pipeline_reference.py), stages unequal by the
    first stage's embedding and the last stage's head, on the ideal engine, while a transfer takes no longer
    than a stage's forward of one micro-batch (docs/llm.md, "How exact")."""
    w = L.llm(layers=2 * p, hidden=256, heads=4, seq_len=128, vocab=vocab, micro_batch=1, global_batch=m,
              tensor_parallel=1, pipeline_parallel=p, data_parallel=1, tensor_dims=(), pipeline_dims=(0,),
              data_dims=(), schedule=schedule, recompute=rec, topology_sizes=(p,))
    topo = Topology((Dim("pp", "ring", p, 1, bandwidth, 0.0),))
    prob = Problem("t", w, topo, NPU_T, Engine("ideal", {}), Objective(), ScheduleSpec("lifo", 1), SolverSpec())
    tf, tb, opt = _stage_times(w, p, rec)
    p2p = min((i.comm for s in w.program for i in s.issues if i.kind == "p2p"), key=lambda x: x.bytes)
    c = sum(collective_demands(p2p, topo, prob.engine, 1).phase_link_s)
    assert c <= min(tf)
    ref = iteration_time(tf, tb, c, m, schedule, opt)
    assert simulate(prob, Design("ideal", {})).period_s == pytest.approx(ref, rel=1e-12)


def test_representative_period_on_random_pipelines():
    """30 random pipelines (fixed seed) whose transfers take no longer than a stage's forward: the
    representative's period is the exact replay's."""
    import random
    rng = random.Random(7)
    done = 0
    while done < 30:
        p, m = rng.choice([2, 3, 4, 5, 8]), rng.choice([1, 2, 3, 4, 6, 9, 16])
        schedule, rec = rng.choice(["1f1b", "gpipe"]), rng.choice(["none", "selective", "full"])
        merge, bandwidth = rng.choice([True, False]), rng.choice([1e9, 5e9, 30e9, 300e9])
        vocab, hidden = rng.choice([128, 1000, 30000, 100000]), rng.choice([128, 256, 512])
        w = L.llm(layers=2 * p, hidden=hidden, heads=4, seq_len=128, vocab=vocab, micro_batch=1, global_batch=m,
                  tensor_parallel=1, pipeline_parallel=p, data_parallel=1, tensor_dims=(), pipeline_dims=(0,),
                  data_dims=(), schedule=schedule, recompute=rec, merge_micro_batches=merge, topology_sizes=(p,))
        topo = Topology((Dim("pp", "ring", p, 1, bandwidth, 0.0),))
        prob = Problem("t", w, topo, NPU_T, Engine("ideal", {}), Objective(), ScheduleSpec("lifo", 1), SolverSpec())
        tf, tb, opt = _stage_times(w, p, rec)
        p2p = min((i.comm for s in w.program for i in s.issues if i.kind == "p2p"), key=lambda x: x.bytes)
        c = sum(collective_demands(p2p, topo, prob.engine, 1).phase_link_s)
        if c > min(tf):
            continue
        done += 1
        ref = iteration_time(tf, tb, c, m, schedule, opt)
        assert simulate(prob, Design("ideal", {})).period_s == pytest.approx(ref, rel=1e-12), (p, m, schedule, rec)


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
def test_bubble_fraction_of_the_exact_pipeline(schedule):
    """Equal stages, no transfer time: (m + p - 1) (t_f + t_b), the bubble (p - 1) / m of the ideal m (t_f + t_b)
    ([NARAYANAN21] 2.2.1), for both schedules."""
    for p in (1, 2, 3, 8):
        for m in (1, 2, 5, 96):
            t = iteration_time([1.0] * p, [2.0] * p, 0.0, m, schedule)
            assert t == pytest.approx(3.0 * m * (1 + (p - 1) / m))


def test_merged_micro_batches_differ_only_by_latencies():
    """The steady state's identical micro-batches as one step of their summed work: exact without per-message
    latency; with it, short by (r - 1) latencies per merged message."""
    kw = dict(layers=8, hidden=256, heads=4, seq_len=128, vocab=1000, micro_batch=1, global_batch=12,
              tensor_parallel=2, pipeline_parallel=4, data_parallel=1, tensor_dims=(0,), pipeline_dims=(1,),
              data_dims=(), topology_sizes=(2, 4))
    for lat in (0.0, 1e-6):
        topo = Topology((Dim("tp", "switch", 2, 4, 50e9, lat), Dim("pp", "ring", 4, 2, 25e9, lat)))
        eng = Engine("ideal", {}, endpoint_delay_s=lat / 2)
        periods = {}
        for merge in (True, False):
            w = L.llm(**kw, merge_micro_batches=merge)
            prob = Problem("t", w, topo, NPU_T, eng, Objective(), ScheduleSpec("lifo", 1), SolverSpec())
            periods[merge] = simulate(prob, Design("ideal", {})).period_s
        if lat == 0.0:
            assert periods[True] == pytest.approx(periods[False], rel=1e-12)
        else:
            # per middle micro-batch, on its critical path: 10 tensor-parallel all-reduces (4 blocks and the head,
            # each pass) of 2 direct steps through the switch, 2 hops and the endpoint delay a step, and one
            # exchange of 3 ring steps (the interior's other one runs beside the head, whose work is longer)
            r = 12 - 2
            per = 10 * 2 * (2 * lat + lat / 2) + 3 * (lat + lat / 2)
            assert periods[False] - periods[True] == pytest.approx((r - 1) * per, rel=1e-6)


# ------------------------------------------------------------------ ZeRO

def test_zero1_reduce_scatters_and_gathers_after_the_step():
    w = L.llm(**{**GPT3, "zero": 1}, topology_sizes=GPT3_SIZES)
    it = build_iteration(w)
    opt = [k for k, c in enumerate(it.computes) if c.kind == "optimizer"][0]
    rs = [c for c in it.comms if c.comm.collective == "reduce_scatter"]
    ag = [c for c in it.comms if c.kind == "dp" and c.comm.collective == "all_gather"]
    assert len(rs) == len(ag) == 25 and all(c.wait_before == opt for c in rs)
    assert all(c.issue_after == opt and it.computes[c.wait_before].kind == "idle" and not c.next_iteration
               and it.computes[c.wait_before].layer == c.layer for c in ag)
    att = [c for c in ag if c.layer == 1][0]
    assert att.comm.bytes == 75_538_944 * 2 and att.comm.dims == (2, 3)
    # the optimizer updates a 1/d shard: 30 bytes per parameter of the first stage's shard over 16
    stage0 = 103_809_024 + 12 * (75_538_944 + 151_037_952)
    assert it.computes[opt].demand.hbm_bytes == pytest.approx(stage0 * 30 / 16)


def test_zero3_gathers_before_every_use_without_pipeline():
    w = L.llm(**{**GPT3, "zero": 3, "pipeline_parallel": 1, "pipeline_dims": (), "data_parallel": 128,
                 "data_dims": (1, 2, 3), "global_batch": 512}, topology_sizes=GPT3_SIZES)
    it = build_iteration(w)
    m = 4
    fwd = [c for c in it.computes if c.kind == "forward"]
    bwd = [c for c in it.computes if c.kind == "backward"]
    assert len(fwd) == len(bwd) == m * (1 + 192 + 1)
    gathers = [c for c in it.comms if c.comm.collective == "all_gather"]
    assert len(gathers) == len(fwd) + len(bwd)          # one per use of a layer's weights
    assert all(it.computes[c.wait_before].layer == c.layer for c in gathers)
    rs = [c for c in it.comms if c.comm.collective == "reduce_scatter"]
    assert len(rs) == m * 194                            # every micro-batch's gradients


def test_zero_beyond_one_with_a_pipeline_is_refused():
    with pytest.raises(ValueError, match="zero 2 with pipeline_parallel 8"):
        L.llm(**{**GPT3, "zero": 2}, topology_sizes=GPT3_SIZES)


# ------------------------------------------------------------------ the mapping onto the topology

@pytest.mark.parametrize("change, phrase", [
    (dict(tensor_parallel=4), "tensor_parallel = 4 but tensor_dims [0] hold 8 = 8 NPUs"),
    (dict(data_dims=(2,)), "data_parallel = 16 but data_dims [2] hold 4 = 4 NPUs"),
    (dict(data_dims=(2, 2)), "a dimension is named twice among tensor_dims [0], pipeline_dims [1] and data_dims"),
    (dict(data_parallel=4, data_dims=(3,), global_batch=1536), "dimension(s) [2] belong to no parallelism"),
    (dict(pipeline_parallel=32, pipeline_dims=(1, 2), data_parallel=4, data_dims=(3,), layers=96),
     "a pipeline of 32 stages lies along one dimension"),
    (dict(heads=100), "hidden 12288 is not a multiple of heads 100"),
    (dict(global_batch=1000), "global_batch 1000 is not a multiple of data_parallel x micro_batch"),
    (dict(schedule="interleaved"), "schedule 'interleaved'"),
    (dict(tensor_dims=(5,)), "tensor_dims names dimension 5"),
])
def test_mapping_errors(change, phrase):
    with pytest.raises(ValueError, match="^" + ".*" if False else None) as e:
        L.llm(**{**GPT3, **change}, topology_sizes=GPT3_SIZES)
    assert phrase in str(e.value), str(e.value)


def test_problem_file_error_names_the_args(tmp_path):
    text = (ROOT / "problems" / "llm" / "gpt3_175b_ace_1024npu.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("data_dims: [2, 3]", "data_dims: [2]"))
    r = subprocess.run([sys.executable, "-m", "codesign", "validate", str(bad)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "workload.args: llm: data_parallel = 16 but data_dims [2]" in r.stderr, r.stderr
    bad.write_text(text.replace("data_dims: [2, 3]", "data_dims: two"))
    with pytest.raises(SpecError, match="workload.args.data_dims: expected a list of whole numbers"):
        codesign.load_problem(bad)


# ------------------------------------------------------------------ the shipped problems

@pytest.mark.parametrize("name", ["gpt3_175b_ace_1024npu.yaml", "gpt_7b_ace_64npu.yaml"])
def test_shipped_problems_solve(name):
    p = codesign.load_problem(ROOT / "problems" / "llm" / name)
    sol = codesign.solve(p, time_limit=120)
    assert sol.status == "optimal"
    it = build_iteration(p.workload)
    # compute at full speed bounds the period; the bubble is part of it
    assert sol.iteration_time_s >= sum(max(compute_time_terms(c.demand, p.npu, p.npu.cores, p.npu.hbm_bandwidth))
                                       for c in it.computes) * (1 - 1e-9)
    assert math.isfinite(sol.bound_s)


def test_interleaved_stages_with_zero1_gathers_build(tmp_path):
    """Interleaving runs only the first model chunk in the fill: ZeRO-1's parameter all-gathers of the other
    chunks' layers were a KeyError (exit 3, found by benchmarks/fuzz_problems.py); each is now awaited, none
    later than the layer's first forward in the fill or the fill's end."""
    import yaml
    doc = yaml.safe_load((ROOT / "problems/llm/gpt_7b_ace_64npu.yaml").read_text())
    doc["workload"]["args"]["virtual_stages"] = 2
    path = tmp_path / "v2.yaml"
    path.write_text(yaml.safe_dump(doc))
    p = codesign.load_problem(str(path))
    gathers = [iss for st in p.workload.program for iss in st.issues if iss.name.endswith("all_gather_params")]
    J = len(p.workload.program)
    assert gathers and all(0 <= g.wait < J for g in gathers)
    assert len({g.layer for g in gathers}) == len(gathers)   # one gather per layer, every chunk's


def test_a_dimension_of_1e308_npus_is_one_line(tmp_path, capsys):
    """A float size of 1e308 overflowed the byte counts (exit 3, found by benchmarks/fuzz_problems.py)."""
    from codesign.cli import main
    text = (ROOT / "problems/quickstart.yaml").read_text().replace("size: 4,", "size: 1.0e+308,", 1)
    path = tmp_path / "big.yaml"
    path.write_text(text)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "size" in err and "Traceback" not in err, err
