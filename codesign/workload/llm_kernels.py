"""The GPU kernels of a GPT layer as Megatron-LM runs them on one tensor-parallel rank, per micro-batch.

``llm.blocks`` counts each block's FLOPs and compulsory HBM bytes for the roofline; this module divides
the same work among the kernels that do it, so that a calibrated compute model (``platform.compute``) can
price each by its shape: a matrix product's time depends on its (m, n, k), which its FLOPs alone cannot
say, and each kernel pays a launch. The matrix products' FLOPs add up to ``llm.blocks``' exactly
(``tests/test_compute_model.py`` checks it); the memory-bound kernels are Megatron's fused ones
(docs/accuracy.md, "The kernels"). A memory-bound kernel's vector FLOPs are not counted (as
[NARAYANAN21] counts none), but for the embedding's scatter-add, which ``llm.blocks`` counts:

- attention, forward: LayerNorm; the QKV product (n x 3h/t x h); per head, the scores QK^T (s x s x d) and
  the attention over V (s x d x s), batched over b a/t heads; the fused scale-mask-softmax; the attention
  dropout; the output projection (n x h x h/t); the fused bias-dropout-residual;
- MLP, forward: LayerNorm; FC1 (n x f/t x h); the fused bias-GeLU; FC2 (n x h x f/t); bias-dropout-residual;
- backward: each product's input gradient (m and k of the forward swapped) and weight gradient (the weight's
  shape, k = n tokens, accumulated into the fp32 main gradient), each memory-bound kernel's backward
  reading its saved input and the incoming gradient and writing the outgoing one;
- selective recomputation re-runs the attention core (scores, softmax, dropout, attention over V);
- sequence parallelism [KORTHIKANTI22] runs the LayerNorms and the bias-dropout-residual kernels on the
  rank's n/t tokens.

n = b s tokens, h hidden, f the MLP width, a heads of d = h/a, t the tensor-parallel size, A bytes per
activation, W per weight; a dropout mask is one byte per element.
"""
from __future__ import annotations

from dataclasses import dataclass

from .model import Kernel

#: Bytes per element of Megatron's fp32 main-gradient buffer, read and written by a weight-gradient product.
MAIN_GRAD = 4.0


@dataclass(frozen=True)
class Shape:
    """What the kernels of one rank depend on: tokens n, sequence s, micro-batch b, hidden h, MLP width f,
    heads a, tensor-parallel size t, padded vocabulary V, activation and weight bytes A, W."""

    n: int
    s: int
    b: int
    h: int
    f: int
    a: int
    t: int
    V: int
    A: float
    W: float
    #: sequence parallelism: the LayerNorms, dropouts and residual adds run on n/t tokens of the rank
    sequence_parallel: bool = False

    @property
    def seq_tokens(self) -> float:
        """Tokens the sequence-parallel region's kernels see on this rank: n/t with sequence parallelism, else n."""
        return self.n / self.t if self.sequence_parallel else float(self.n)

    @property
    def heads_here(self) -> int:
        return self.a // self.t

    @property
    def head_dim(self) -> int:
        return self.h // self.a

    @property
    def scores(self) -> float:
        """Attention-score elements of this rank: b (a/t) s^2."""
        return float(self.b * self.heads_here * self.s * self.s)


def gemm(name: str, m: int, n: int, k: int, A: float, batch: int = 1, out_bytes: float | None = None,
         weight_grad: bool = False) -> Kernel:
    """A product of (m x k) by (k x n), ``batch`` times: 2 m n k FLOPs each; it reads both operands and writes
    the result (a weight gradient reads and writes the fp32 main gradient instead)."""
    out = MAIN_GRAD * 2 if weight_grad else (A if out_bytes is None else out_bytes)
    nbytes = batch * (A * (m * k + k * n) + out * m * n)
    return Kernel(name, "gemm", 2.0 * m * n * k * batch, nbytes, m, n, k, batch)


def memory(name: str, nbytes: float, flops: float = 0.0) -> Kernel:
    return Kernel(name, "memory", flops, nbytes)


def exchange(name: str, count: int = 1) -> Kernel:
    """The host's part of ``count`` blocking pipeline exchanges (Megatron's ``_communicate``: receive buffers,
    the batched send/receive, a device synchronization): no GPU work, priced by the profile's
    ``exchange_overhead``."""
    return Kernel(name, "exchange", 0.0, 0.0, count=count)


def _ln(x: Shape, tag: str, backward: bool = False) -> Kernel:
    nh = x.seq_tokens * x.h
    return memory(f"{tag}.layernorm{'.grad' if backward else ''}", x.A * nh * (3 if backward else 2))


def _bias_dropout_residual(x: Shape, tag: str, backward: bool = False) -> Kernel:
    nh = x.seq_tokens * x.h
    return memory(f"{tag}.bias_dropout_residual{'.grad' if backward else ''}", x.A * 3 * nh + nh)


def attention_core_forward(x: Shape) -> tuple[Kernel, ...]:
    """Scores, scale-mask-softmax, attention dropout, attention over V (what selective recomputation re-runs)."""
    B, s, d, S = x.b * x.heads_here, x.s, x.head_dim, x.scores
    return (gemm("attention.scores", s, s, d, x.A, batch=B),
            memory("attention.softmax", 2 * x.A * S),
            memory("attention.dropout", 2 * x.A * S + S),
            gemm("attention.over_v", s, d, s, x.A, batch=B))


def attention(x: Shape) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...], tuple[Kernel, ...]]:
    """(forward, input gradient, weight gradient) kernels of the attention block."""
    n, h, ht, A = x.n, x.h, x.h // x.t, x.A
    B, s, d, S = x.b * x.heads_here, x.s, x.head_dim, x.scores
    forward = (_ln(x, "attention"), gemm("attention.qkv", n, 3 * ht, h, A), *attention_core_forward(x),
               gemm("attention.projection", n, h, ht, A), _bias_dropout_residual(x, "attention"))
    input_grad = (_bias_dropout_residual(x, "attention", True),
                  gemm("attention.projection.dgrad", n, ht, h, A),
                  gemm("attention.over_v.dgrad_v", s, d, s, A, batch=B),
                  gemm("attention.over_v.dgrad_p", s, s, d, A, batch=B),
                  memory("attention.dropout.grad", 2 * A * S + S),
                  memory("attention.softmax.grad", 3 * A * S),
                  gemm("attention.scores.dgrad_q", s, d, s, A, batch=B),
                  gemm("attention.scores.dgrad_k", s, d, s, A, batch=B),
                  gemm("attention.qkv.dgrad", n, h, 3 * ht, A),
                  _ln(x, "attention", True))
    weight_grad = (gemm("attention.qkv.wgrad", h, 3 * ht, n, A, weight_grad=True),
                   gemm("attention.projection.wgrad", ht, h, n, A, weight_grad=True))
    return forward, input_grad, weight_grad


def mlp(x: Shape) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...], tuple[Kernel, ...]]:
    """(forward, input gradient, weight gradient) kernels of the MLP block."""
    n, h, ft, A = x.n, x.h, x.f // x.t, x.A
    forward = (_ln(x, "mlp"), gemm("mlp.fc1", n, ft, h, A), memory("mlp.bias_gelu", 2 * A * n * ft),
               gemm("mlp.fc2", n, h, ft, A), _bias_dropout_residual(x, "mlp"))
    input_grad = (_bias_dropout_residual(x, "mlp", True), gemm("mlp.fc2.dgrad", n, ft, h, A),
                  memory("mlp.bias_gelu.grad", 3 * A * n * ft), gemm("mlp.fc1.dgrad", n, h, ft, A),
                  _ln(x, "mlp", True))
    weight_grad = (gemm("mlp.fc1.wgrad", h, ft, n, A, weight_grad=True),
                   gemm("mlp.fc2.wgrad", ft, h, n, A, weight_grad=True))
    return forward, input_grad, weight_grad


def embedding(x: Shape, forward_bytes: float, grad_flops: float, grad_bytes: float
              ) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...], tuple[Kernel, ...]]:
    """The lookup (forward) and the scatter-add of its gradient (``llm.blocks``' bytes and FLOPs)."""
    return (memory("embedding.lookup", forward_bytes),), (), (memory("embedding.wgrad", grad_bytes, grad_flops),)


def head(x: Shape, ce_forward_bytes: float, ce_backward_bytes: float
         ) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...], tuple[Kernel, ...]]:
    """The final LayerNorm, the logits (n x V/t x h) against the tied embedding and the vocabulary-parallel
    cross-entropy (``ce_*_bytes``, fp32 over the logits)."""
    n, h, vt, A = x.n, x.h, x.V // x.t, x.A
    forward = (_ln(x, "head"), gemm("head.logits", n, vt, h, A, out_bytes=4.0),
               memory("head.cross_entropy", ce_forward_bytes))
    input_grad = (memory("head.cross_entropy.grad", ce_backward_bytes), gemm("head.logits.dgrad", n, h, vt, A),
                  _ln(x, "head", True))
    weight_grad = (gemm("head.logits.wgrad", h, vt, n, A, weight_grad=True),)
    return forward, input_grad, weight_grad
