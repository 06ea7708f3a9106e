"""The workload builder: hand-checked layer counts, conservation properties, and GNMT end to end.

Hand checks use small shapes; each docstring carries the arithmetic. Byte widths unless stated:
activations and weights 2 bytes, gradients 4 bytes per parameter.
"""
from __future__ import annotations

import pytest
from conftest import ROOT, ace, problem
from hypothesis import given, settings
from hypothesis import strategies as st

from codesign import solve
from codesign.platform.endpoint import Engine
from codesign.platform.topology import Dim, Topology
from codesign.schedule.iteration import build_iteration
from codesign.workload.builder import Work, WorkloadBuilder
from codesign.workload.gnmt import PUBLISHED_PARAMS, gnmt, gnmt_builder


def test_linear_by_hand():
    """3 -> 4 with bias, batch 2 x 5 tokens: N = 10 rows. params 3*4 + 4 = 16; matmul 2*10*3*4 = 240 FLOPs,
    bias add 10*4 = 40. forward bytes: x 10*3*2 = 60, W and b 16*2 = 32, y 10*4*2 = 80 -> 172.
    weight grad bytes: x 60 + dy 80 + dW 16*4 = 64 -> 204. all-reduce 16*4 = 64 bytes."""
    lc = WorkloadBuilder("t", batch=2).linear("fc", 3, 4, tokens_per_sample=5)
    assert lc.params == 16 and lc.allreduce_bytes == 64
    assert lc.forward == Work(280, 172)
    assert lc.input_grad.flops == 240 and lc.weight_grad == Work(280, 204)


def test_embedding_by_hand_and_tied():
    """V = 10 rows of D = 4, batch 2 x 3 tokens: N = 6. params 40; forward 0 FLOPs, bytes 6*4*(2 + 2) = 96;
    no input gradient; weight grad 6*4 = 24 FLOPs (scatter-add), bytes dy 6*4*2 = 48 + rows 6*4*2*4 = 192 +
    dense gradient 40*4 = 160 -> 400; dense all-reduce 160 bytes. A tied twin owns nothing and all-reduces
    nothing, but still computes its gradient contribution."""
    b = WorkloadBuilder("t", batch=2)
    e = b.embedding("emb", 10, 4, tokens_per_sample=3)
    assert e.params == 40 and e.allreduce_bytes == 160
    assert e.forward == Work(0, 96) and e.input_grad == Work() and e.weight_grad == Work(24, 400)
    t = b.embedding("emb2", 10, 4, tokens_per_sample=3, tie_to="emb")
    assert t.params == 0 and t.allreduce_bytes == 0 and t.weight_grad.flops == 24
    assert b.params == 40
    w = b.build()
    assert w.layers[0].weight_grad_comm.bytes == 160 and w.layers[1].weight_grad_comm is None


def test_lstm_by_hand():
    """I = 2, H = 3, T = 4 steps, batch 1: N = 4. params 4*3*(2+3) + 8*3 = 84 (PyTorch: weight_ih 12x2,
    weight_hh 12x3, bias_ih 12, bias_hh 12). forward 4*(8*3*5 + 17*3) = 4*171 = 684 FLOPs; backprop
    4*(8*9 + 51) = 492; dx 4*8*3*2 = 192; weight grad 4*(8*3*5 + 12) = 528. Bidirectional doubles all."""
    b = WorkloadBuilder("t")
    lc = b.lstm("l", 2, 3, seq_len=4)
    assert lc.params == 84 and lc.out == (4, 3)
    assert (lc.forward.flops, lc.backprop.flops, lc.input_grad.flops, lc.weight_grad.flops) == (684, 492, 192, 528)
    bi = b.lstm("bi", 2, 3, seq_len=4, bidirectional=True)
    assert bi.params == 168 and bi.forward.flops == 1368 and bi.out == (4, 6)
    # GNMT's sizes, the PyTorch count 4H(I+H) + 8H: 8,396,800 for 1024 -> 1024, 12,591,104 for 2048 -> 1024
    assert b.lstm("g1", 1024, 1024, seq_len=1).params == 8_396_800
    assert b.lstm("g2", 2048, 1024, seq_len=1).params == 12_591_104


def test_attention_by_hand():
    """Q = K = n = 2, Tq = 3, Tk = 4, batch 1: 12 pairs. params 2*2 + 2*2 + 2 (v) + 2 + 1 (normalize) = 13.
    forward: projections 2*3*2*2 + 2*4*2*2 = 56, scores 12*(5*2 + 5) = 180, context 2*12*2 = 48 -> 284.
    Without normalization: params 10, scores 12*(4*2 + 5) = 156 -> 260."""
    b = WorkloadBuilder("t")
    lc = b.attention("a", 2, 2, 2, query_len=3, key_len=4)
    assert lc.params == 13 and lc.forward.flops == 284 and lc.out == (3, 2)
    plain = b.attention("p", 2, 2, 2, query_len=3, key_len=4, normalize=False)
    assert plain.params == 10 and plain.forward.flops == 260
    assert lc.weight_grad.flops == 56 + 12 * 3 * 2  # dW_q, dW_k 56; dv + db 3n per pair


def test_conv2d_matches_astra_resnet50_allreduce_sizes():
    """ResNet-50 conv1, 3 -> 64, 7x7 stride 2 pad 3 on 224x224: 64*3*49 = 9408 weights, output 112x112,
    2*112*112*9408 = 236,027,904 FLOPs per sample; fp32 all-reduce 37,632 bytes, as ASTRA-sim's
    Resnet50_DataParallel.txt says. A 3x3 64 -> 64 conv: 36,864 weights, 147,456 bytes (layer_64_1_conv2)."""
    astra = {}
    for line in (ROOT / "problems/workloads/Resnet50_DataParallel.txt").read_text().splitlines()[2:]:
        f = line.split()
        astra[f[0]] = int(f[10])
    b = WorkloadBuilder("r")
    c1 = b.conv2d("conv1", 3, 64, 7, input_hw=224, stride=2, padding=3)
    assert c1.params == 9408 and c1.out == (64, 112, 112) and c1.forward.flops == 236_027_904
    assert c1.allreduce_bytes == astra["conv1"] == 37_632
    c2 = b.conv2d("c2", 64, 64, 3, input_hw=56, padding=1)
    assert c2.allreduce_bytes == astra["layer_64_1_conv2"] and c2.out == (64, 56, 56)
    assert c2.input_grad.flops == c2.weight_grad.flops == c2.forward.flops
    dw = b.conv2d("dw", 8, 8, 3, input_hw=4, padding=1, groups=8, bias=True)
    assert dw.params == 8 * 9 + 8 and dw.forward.flops == 2 * 16 * 72 + 16 * 8


def test_layer_norm_and_softmax_by_hand():
    """Layer norm of D = 4 on 2 rows: params 8, forward 7*8 = 56, dx 80, dW 24 FLOPs.
    Softmax of C = 5 on 2 rows: no params, forward 5*10 = 50, dx 4*10 = 40, no all-reduce."""
    b = WorkloadBuilder("t", batch=2)
    ln = b.layer_norm("ln", 4)
    assert ln.params == 8 and (ln.forward.flops, ln.input_grad.flops, ln.weight_grad.flops) == (56, 80, 24)
    sm = b.softmax("sm", 5)
    assert sm.params == 0 and sm.forward.flops == 50 and sm.input_grad.flops == 40 and sm.allreduce_bytes == 0
    assert b.build().layers[1].weight_grad_comm is None


def test_first_layer_keeps_its_backprop_through_time():
    """The iteration runs no input gradient for layer 1; an LSTM there still back-propagates through time
    to get its weight gradient, so that work moves into its weight-gradient task. A later layer keeps it
    in the input-gradient task."""
    b = WorkloadBuilder("t")
    first, second = b.lstm("l1", 2, 3, seq_len=4), b.lstm("l2", 3, 3, seq_len=4)
    w = b.build()
    assert w.layers[0].input_grad.empty
    assert w.layers[0].weight_grad.flops == first.weight_grad.flops + first.backprop.flops
    assert w.layers[1].input_grad.flops == second.input_grad.flops + second.backprop.flops
    assert w.layers[1].weight_grad.flops == second.weight_grad.flops


@pytest.mark.parametrize("call, msg", [
    (lambda b: (b.linear("x", 2, 2), b.linear("x", 2, 2)), "used twice"),
    (lambda b: b.embedding("e", 4, 2, tie_to="nope"), "names no earlier layer"),
    (lambda b: (b.embedding("e", 4, 2), b.linear("o", 2, 5, tie_to="e")), "cannot tie 10 weights"),
    (lambda b: b.lstm("l", 0, 2, seq_len=1), "input_size must be > 0"),
    (lambda b: b.conv2d("c", 3, 4, 2, input_hw=4, groups=2), "do not divide"),
    (lambda b: b.conv2d("c", 1, 1, 5, input_hw=3), "does not fit"),
    (lambda b: b.build(), "no layers"),
])
def test_bad_input_is_named(call, msg):
    with pytest.raises(ValueError, match=msg):
        call(WorkloadBuilder("t"))


def test_bad_parallelism_is_named():
    with pytest.raises(ValueError, match="parallelism 'pipeline'"):
        WorkloadBuilder("t", parallelism="pipeline")


# ---------------------------------------------------------------- properties

_layer = st.one_of(
    st.tuples(st.just("linear"), st.integers(1, 64), st.integers(1, 64), st.integers(1, 8), st.booleans()),
    st.tuples(st.just("lstm"), st.integers(1, 64), st.integers(1, 64), st.integers(1, 8), st.booleans()),
    st.tuples(st.just("conv2d"), st.integers(1, 16), st.integers(1, 16), st.integers(1, 3), st.integers(3, 12)),
    st.tuples(st.just("attention"), st.integers(1, 32), st.integers(1, 32), st.integers(1, 8), st.integers(1, 8)),
    st.tuples(st.just("embedding"), st.integers(1, 100), st.integers(1, 32), st.integers(1, 8), st.booleans()),
)


def _stack(spec: list, batch: int, g: float = 4.0) -> WorkloadBuilder:
    b = WorkloadBuilder("p", batch=batch, grad_bytes_per_param=g)
    for i, (kind, x, y, z, extra) in enumerate(spec):
        n = f"l{i}"
        if kind == "linear":
            b.linear(n, x, y, tokens_per_sample=z, bias=extra)
        elif kind == "lstm":
            b.lstm(n, x, y, seq_len=z, bidirectional=extra)
        elif kind == "conv2d":
            b.conv2d(n, x, y, z, input_hw=extra, padding=z // 2)
        elif kind == "attention":
            b.attention(n, x, y, x + y, query_len=z, key_len=extra)
        else:
            b.embedding(n, x, y, tokens_per_sample=z)
    return b


@settings(max_examples=60, deadline=None)
@given(st.lists(_layer, min_size=1, max_size=6), st.integers(1, 64), st.sampled_from([2.0, 4.0]))
def test_allreduce_bytes_are_params_times_grad_bytes(spec, batch, g):
    b = _stack(spec, batch, g)
    w = b.build()
    assert w.total_comm_bytes == pytest.approx(b.params * g)
    assert all(layer.weight_grad_comm is None or layer.weight_grad_comm.collective == "all_reduce"
               for layer in w.layers)


@settings(max_examples=60, deadline=None)
@given(st.lists(_layer, min_size=1, max_size=6), st.integers(1, 32))
def test_flops_linear_and_bytes_affine_in_batch(spec, batch):
    """Every FLOP term carries the batch; bytes are activations (x batch) plus weights (fixed)."""
    one, two, three = (_stack(spec, k * batch) for k in (1, 2, 3))
    assert one.params == two.params == three.params
    for a, b, c in zip(one.layers, two.layers, three.layers):
        for ph in ("forward", "input_grad", "backprop", "weight_grad"):
            wa, wb, wc = getattr(a, ph), getattr(b, ph), getattr(c, ph)
            assert wb.flops == pytest.approx(2 * wa.flops) and wc.flops == pytest.approx(3 * wa.flops)
            assert wc.bytes - wb.bytes == pytest.approx(wb.bytes - wa.bytes)


# ---------------------------------------------------------------- GNMT

def test_gnmt_parameter_count_is_the_published_one():
    """160,671,297 (MLPerf GNMT, 4 + 4 layers, hidden 1024, V = 32320): our derivation gives it exactly;
    the model is 2049 V + 94,447,617, so any other vocabulary misses it (tolerance 0)."""
    b = gnmt_builder()
    assert b.params == PUBLISHED_PARAMS == 160_671_297
    assert gnmt_builder(vocab=32_000).params == 2049 * 32_000 + 94_447_617
    own = {lc.name: lc.params for lc in b.layers}
    assert own["enc_embedding"] == 32_320 * 1024 and own["dec_embedding"] == 0
    assert own["enc_lstm1"] == 2 * 8_396_800 and own["attention"] == 2_099_201
    assert own["classifier"] == 1024 * 32_320 + 32_320


def test_gnmt_layer_order_and_collectives():
    w = gnmt()
    assert [layer.name for layer in w.layers] == [
        "enc_embedding", "enc_lstm1", "enc_lstm2", "enc_lstm3", "enc_lstm4", "dec_embedding", "dec_lstm1",
        "attention", "dec_lstm2", "dec_lstm3", "dec_lstm4", "classifier", "loss"]
    comms = [layer.weight_grad_comm for layer in w.layers]
    assert sum(c is not None for c in comms) == 11  # the tied embedding and the loss all-reduce nothing
    assert w.total_comm_bytes == 4 * PUBLISHED_PARAMS
    assert gnmt(grad_bytes_per_param=2).total_comm_bytes == 2 * PUBLISHED_PARAMS


def test_gnmt_flops_per_sample():
    """Forward ~ 2 FLOPs per matmul parameter per token: (46.2M + 46.2M LSTM) * 50 + 33.1M * 50 classifier
    ~ 12.6 GFLOP, plus attention and softmax; backward ~ 2x forward."""
    b = gnmt_builder(batch_per_npu=1)
    fwd = sum(lc.forward.flops for lc in b.layers)
    bwd = sum(lc.input_grad.flops + lc.backprop.flops + lc.weight_grad.flops for lc in b.layers)
    assert fwd == pytest.approx(12.78e9, rel=1e-3)
    assert bwd == pytest.approx(2 * fwd, rel=0.01)


@pytest.mark.parametrize("engine", [Engine("ideal"), ace([(100e9, 1.0), (400e9, 2.0)])], ids=["ideal", "ace"])
def test_gnmt_solves_end_to_end(engine):
    """GNMT on a 4x4 torus (two rings of 4, 50 GB/s links): optimal, and the compute time lies between
    the sum of each task's roofline time on the whole NPU, max(FLOPs / FLOP/s, bytes / HBM bandwidth), and
    the same with the engine's DMA bandwidth taken from HBM all the time (it is taken only while it runs)."""
    torus = Topology((Dim("x", "ring", 4, 1, 50e9, 500e-9), Dim("y", "ring", 4, 1, 50e9, 500e-9)))
    p = problem(gnmt(), torus, engine)
    s = solve(p)
    assert s.status == "optimal"

    def roofline(hbm: float) -> float:
        return sum(max((c.demand.flops or 0) / p.npu.compute_flops, (c.demand.hbm_bytes or 0) / hbm)
                   for c in build_iteration(p.workload).computes)
    assert roofline(p.npu.hbm_bandwidth) * (1 - 1e-9) <= s.compute_time_s
    assert s.compute_time_s <= roofline(p.npu.hbm_bandwidth - s.design.get("dma", 0.0)) * (1 + 1e-9)
    assert s.iteration_time_s >= s.compute_time_s * (1 - 1e-9)


def test_doc_table_matches_code():
    """docs/gnmt.md carries the builder's table for the default GNMT; it must not drift from the code."""
    doc = (ROOT / "docs/gnmt.md").read_text()
    assert gnmt_builder().table() in doc
