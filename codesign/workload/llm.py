"""Decoder-only Transformer (GPT) training, built from its architecture: Megatron-LM's tensor, pipeline and
data parallelism, activation recomputation and ZeRO, as one representative NPU's iteration.

Every figure is derived in docs/llm.md, with its source:
[SHOEYBI19]   M. Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter Language Models Using
              Model Parallelism", arXiv 1909.08053: tensor parallelism; a Transformer layer's attention
              and MLP blocks each all-reduce their output in the forward pass and their input gradient in
              the backward pass (operators g and f, Figure 3): 2 all-reduces per layer per pass.
[NARAYANAN21] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
              Megatron-LM", SC'21, arXiv 2104.04473: FLOPs per iteration, 96 B s l h^2 (1 + s/6h + V/16lh)
              with full recomputation; the 1F1B schedule (PipeDream-Flush) and GPipe's, the pipeline bubble
              (p - 1) / m; point-to-point transfers of b s h activations between stages; t = 8 within a server.
[KORTHIKANTI22] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
              arXiv 2205.05198: full recomputation (a layer's forward re-run before its backward) and
              selective recomputation (only the attention core: QK^T, softmax, dropout, attention over V).
[RAJBHANDARI20] S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
              Models", SC'20, arXiv 1910.02054: stages 1-3; reduce-scatter of gradients plus all-gather of
              parameters instead of the all-reduce (stage 1, 2), parameters gathered on use (stage 3).
[BROWN20]     T. Brown et al., "Language Models are Few-Shot Learners", arXiv 2005.14165, Table 2.1:
              the GPT-3 models (layers, d_model, heads, context 2048, batch in tokens).

The representative NPU (docs/llm.md, "The pipeline as one NPU's program") is one tensor-parallel rank of
the *last* pipeline stage. Its program is its own micro-batch forwards and backwards in the schedule's
order (1F1B: F and B alternate from the first micro-batch; GPipe: all forwards, then all backwards), with
Megatron's blocking point-to-point exchanges on the pipeline dimension between them. In that order the
whole bubble falls between iterations: after its last backward, the last micro-batch's gradient goes down
the pipeline through the other p - 1 stages' backward, the first stage's data-parallel gradient
collectives and optimizer step follow, and the next iteration's first micro-batch comes up through their
forward. Those other stages' tasks run on the representative NPU's program as ``idle`` steps (kind
``idle``: it waits while they compute; they are balanced copies of its own layers), with their
tensor-parallel all-reduces and point-to-point transfers, so the bubble is (p - 1) (t_f + t_b) plus the
transfers, as every stage sees it. The data-parallel traffic on its dimensions is the first stage's: the
same bytes per stage, and the first stage's is the one on the critical path.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from . import llm_kernels as K
from .builder import Work  # FLOPs and HBM bytes of a compute task: the layer builder's
from .llm_memory import memory_per_gpu
from .model import Comm, Issue, Kernel, Layer, Step, Workload

SCHEDULES = ("1f1b", "gpipe")
RECOMPUTE = ("none", "selective", "full")
#: How a point-to-point transfer is expressed until ``platform/collectives.py`` times ``p2p`` (one message
#: of S bytes to a neighbour, one step): as an all-gather over the pipeline dimension whose buffer is
#: S p / (p - 1), so that each NPU sends exactly S bytes into the dimension (its phase sends (p - 1)/p of
#: the buffer). What differs: a ring dimension takes p - 1 message steps for it instead of one (p - 2
#: extra hop latencies and endpoint delays), and ACE's DMA reads S / (p - 1) and writes S p / (p - 1)
#: instead of S each. Set to "p2p" once the platform times it.
P2P_AS = "all_gather"
#: Megatron-LM pads the vocabulary to a multiple of 128 x tensor-parallel size (``--make-vocab-size-divisible-by
#: 128``, ``_vocab_size_with_padding``), so each rank holds an equal, aligned slice of the embedding.
VOCAB_ALIGN = 128
#: HBM bytes per parameter of a mixed-precision Adam step (fused): it reads the fp32 master weight, the two
#: moments and the fp32 gradient (16 bytes), writes the weight and the moments (12) and the 2-byte copy the
#: kernels read (2): 30 (docs/llm.md, "The optimizer step").
ADAM_BYTES_PER_PARAM = 30.0
#: The weight-gradient GEMMs accumulate into Megatron's fp32 main-gradient buffer (``main_grad``): read and
#: written once per micro-batch, 4 bytes each way.
MAIN_GRAD_BYTES = 8.0


@dataclass(frozen=True)
class Block:
    """One block of the stage as the representative NPU (one tensor-parallel rank) runs it, per micro-batch:
    its parameters on this rank, forward, input-gradient and weight-gradient work, the extra backward work of
    selective recomputation, and the bytes of its tensor-parallel all-reduces (forward, backward; 0: none)."""

    name: str
    kind: str                   # embedding | attention | mlp | head
    params: int                 # on this rank
    forward: Work
    input_grad: Work
    weight_grad: Work
    selective: Work = field(default_factory=Work)
    tp_forward_bytes: float = 0.0
    tp_backward_bytes: float = 0.0


@dataclass(frozen=True)
class LLMConfig:
    """The model, the batch and the parallel mapping, validated (``LLMConfig.of``)."""

    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int
    ffn_hidden: int
    micro_batch: int
    global_batch: int
    tp: int
    pp: int
    dp: int
    tp_dims: tuple[int, ...]
    pp_dims: tuple[int, ...]
    dp_dims: tuple[int, ...]
    schedule: str
    recompute: str
    zero: int
    act_bytes: float
    weight_bytes: float
    grad_bytes: float
    #: Whether each layer's data-parallel gradient reduction starts when its backward ends, beside the rest
    #: of the backward (Megatron's ``--overlap-grad-reduce``, DeepSpeed's buckets), or all of them after the
    #: last backward, as Megatron's local DDP and vTrain's runs without gradient buckets do.
    overlap_grad_reduce: bool = True
    #: Sequence parallelism [KORTHIKANTI22]: the LayerNorms, dropouts and residual adds split over the tensor
    #: group by tokens, each tensor-parallel all-reduce a reduce-scatter and an all-gather of the same bytes.
    sequence_parallel: bool = False
    #: Interleaved 1F1B [NARAYANAN21] 2.2.2: each stage holds this many model chunks of layers / (p v) layers
    virtual_stages: int = 1

    @property
    def micro_batches(self) -> int:
        """m: micro-batches per data-parallel replica per iteration, B / (d b)."""
        return self.global_batch // (self.dp * self.micro_batch)

    @property
    def padded_vocab(self) -> int:
        step = VOCAB_ALIGN * self.tp
        return -(-self.vocab // step) * step

    @property
    def layers_per_stage(self) -> int:
        return self.layers // self.pp

    @property
    def tokens(self) -> int:
        """n = b s: tokens of one micro-batch."""
        return self.micro_batch * self.seq_len


def _degree(name: str, dims: tuple[int, ...], sizes: tuple[int, ...], degree: int) -> None:
    for d in dims:
        if not 0 <= d < len(sizes):
            raise ValueError(f"{name}_dims names dimension {d}; the topology has dimensions 0..{len(sizes) - 1}")
    prod = math.prod(sizes[d] for d in dims)
    if prod != degree:
        what = " x ".join(str(sizes[d]) for d in dims) or "no dimension (1)"
        raise ValueError(f"{name}_parallel = {degree} but {name}_dims {list(dims)} hold {what} = {prod} NPUs; "
                         "each parallelism takes whole dimensions, their NPU counts multiplied")


def config(layers: int, hidden: int, heads: int, seq_len: int, vocab: int, ffn_hidden: int, micro_batch: int,
           global_batch: int, tensor_parallel: int, pipeline_parallel: int, data_parallel: int,
           tensor_dims: tuple[int, ...], pipeline_dims: tuple[int, ...], data_dims: tuple[int, ...],
           schedule: str, recompute: str, zero: int, act_bytes: float, weight_bytes: float, grad_bytes: float,
           topology_sizes: tuple[int, ...] | None, overlap_grad_reduce: bool = True,
           sequence_parallel: bool = False, virtual_stages: int = 1) -> LLMConfig:
    """Check the arguments (each error says which and why) and return the configuration."""
    for k, v in dict(layers=layers, hidden=hidden, heads=heads, seq_len=seq_len, vocab=vocab, micro_batch=micro_batch,
                     global_batch=global_batch, tensor_parallel=tensor_parallel, pipeline_parallel=pipeline_parallel,
                     data_parallel=data_parallel).items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{k} must be a whole number >= 1, got {v!r}")
    ffn = ffn_hidden or 4 * hidden
    for k, v in dict(act_bytes=act_bytes, weight_bytes=weight_bytes, grad_bytes=grad_bytes).items():
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{k} must be a number > 0, got {v!r}")
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    t, p, d = tensor_parallel, pipeline_parallel, data_parallel
    if heads % t or ffn % t:
        raise ValueError(f"tensor_parallel {t} must divide the heads ({heads}) and ffn_hidden ({ffn}): Megatron splits "
                         "attention by heads and the MLP by columns")
    if layers % p:
        raise ValueError(f"pipeline_parallel {p} must divide layers {layers} (stages of equal layers)")
    if global_batch % (d * micro_batch):
        raise ValueError(f"global_batch {global_batch} is not a multiple of data_parallel x micro_batch = "
                         f"{d} x {micro_batch}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule {schedule!r}: expected one of {', '.join(SCHEDULES)}")
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute {recompute!r}: expected one of {', '.join(RECOMPUTE)}")
    if isinstance(zero, bool) or zero not in (0, 1, 2, 3):
        raise ValueError(f"zero must be 0, 1, 2 or 3, got {zero!r}")
    if zero >= 2 and p > 1:
        raise ValueError(f"zero {zero} with pipeline_parallel {p}: ZeRO-2 and -3 partition gradients that the pipeline "
                         "accumulates over micro-batches (DeepSpeed refuses the pair; Megatron's distributed optimizer "
                         "is ZeRO-1): use zero 0 or 1")
    tdims, pdims, ddims = tuple(tensor_dims), tuple(pipeline_dims), tuple(data_dims)
    if topology_sizes is not None:
        sizes = tuple(topology_sizes)
        _degree("tensor", tdims, sizes, t)
        _degree("pipeline", pdims, sizes, p)
        _degree("data", ddims, sizes, d)
        used = list(tdims) + list(pdims) + list(ddims)
        if len(set(used)) != len(used):
            raise ValueError(f"a dimension is named twice among tensor_dims {list(tdims)}, pipeline_dims {list(pdims)} "
                             f"and data_dims {list(ddims)}")
        if sorted(used) != list(range(len(sizes))):
            missing = sorted(set(range(len(sizes))) - set(used))
            raise ValueError(f"dimension(s) {missing} belong to no parallelism: every NPU of the topology trains, "
                             "so tensor_dims, pipeline_dims and data_dims together name every dimension")
    if p > 1 and len(pdims) != 1:
        raise ValueError(f"pipeline_dims {list(pdims)}: a pipeline of {p} stages lies along one dimension (its "
                         "stages pass activations to their neighbour in it)")
    for k, v in dict(overlap_grad_reduce=overlap_grad_reduce, sequence_parallel=sequence_parallel).items():
        if not isinstance(v, bool):
            raise ValueError(f"{k} must be true or false, got {v!r}")
    v = virtual_stages
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"virtual_stages must be a whole number >= 1, got {v!r}")
    if v > 1 and (pipeline_parallel < 2 or schedule != "1f1b" or layers % (pipeline_parallel * v)
                  or (global_batch // (data_parallel * micro_batch)) % pipeline_parallel):
        raise ValueError(f"virtual_stages {v}: interleaved 1F1B needs a pipeline (pipeline_parallel >= 2), schedule "
                         "1f1b, layers a multiple of pipeline_parallel x virtual_stages and micro-batches a "
                         "multiple of pipeline_parallel (Megatron's conditions)")
    if zero >= 2 and not overlap_grad_reduce:
        raise ValueError(f"zero {zero} reduce-scatters every micro-batch's gradients as its backward runs; "
                         "overlap_grad_reduce: false goes with zero 0 or 1")
    return LLMConfig(layers, hidden, heads, seq_len, vocab, ffn, micro_batch, global_batch, t, p, d, tdims, pdims,
                     ddims, schedule, recompute, zero, float(act_bytes), float(weight_bytes), float(grad_bytes),
                     overlap_grad_reduce, sequence_parallel, v)


# ---------------------------------------------------------------------------------------------- blocks

def blocks(c: LLMConfig) -> dict[str, Block]:
    """The embedding, attention, MLP and head blocks of one tensor-parallel rank, per micro-batch.

    With n = b s tokens, h hidden, f the MLP width, a heads, t the tensor-parallel size, V the padded
    vocabulary, A activation bytes, W weight bytes (docs/llm.md, "One layer" has each line's derivation):
    - attention: params (4h^2 + 3h)/t + 3h; forward 8nh^2/t (QKV 6, output projection 2) + 4nsh/t (scores and
      attention over V); input gradient 8nh^2/t + 8nsh/t; weight gradient 8nh^2/t; selective recomputation
      re-runs the 4nsh/t core;
    - MLP: params (2hf + f)/t + 3h; forward 4nhf/t; input and weight gradient 4nhf/t each;
    - embedding (first stage): params V h/t + s h; a lookup; the vocabulary-parallel embedding all-reduces
      its output (n h A) over the tensor group in the forward pass;
    - head (last stage): final LayerNorm (2h params) and the logits against the tied embedding, 2nhV/t forward,
      2nhV/t each gradient; the vocabulary-parallel cross-entropy's three all-reduces of one fp32 per token
      as one of 12n bytes in the forward pass, and the all-reduce of the logits' input gradient (n h A).
    Attention and MLP all-reduce n h A bytes over the tensor group in each pass ([SHOEYBI19] g and f).
    """
    n, h, f, s, t, a = c.tokens, c.hidden, c.ffn_hidden, c.seq_len, c.tp, c.heads
    A, W, V = c.act_bytes, c.weight_bytes, c.padded_vocab
    ht, ft = h / t, f / t
    S = c.micro_batch * (a / t) * s * s        # attention scores on this rank, elements
    tp_ar = n * h * A if t > 1 else 0.0
    # attention: LayerNorm, QKV GEMM, scores, softmax, attention over V, output projection, bias-dropout-residual
    # the sequence-parallel region's kernels (LayerNorm 2nh, bias-dropout-residual 3nh) see n/t tokens with it
    nsp = n / t if c.sequence_parallel else n
    att_act = A * (2 * n * h + 5 * nsp * h + 8 * n * ht + 4 * S)
    att_w = 4 * h * ht * W
    att_params = round((4 * h * h + 3 * h) / t) + 3 * h
    x = K.Shape(n, s, c.micro_batch, h, f, a, t, V, A, W, c.sequence_parallel)
    kf, ki, kw = K.attention(x)
    core = Work(4.0 * n * s * ht, A * (4 * n * ht + 4 * S), K.attention_core_forward(x))
    attention = Block("attention", "attention", att_params,
                      forward=Work(8.0 * n * h * ht + 4.0 * n * s * ht, att_act + att_w, kf),
                      input_grad=Work(8.0 * n * h * ht + 8.0 * n * s * ht, 2 * att_act + att_w, ki),
                      weight_grad=Work(8.0 * n * h * ht, att_params * MAIN_GRAD_BYTES, kw),
                      selective=core, tp_forward_bytes=tp_ar, tp_backward_bytes=tp_ar)
    # MLP: LayerNorm, FC1 (h -> f), GeLU, FC2 (f -> h), bias-dropout-residual
    mlp_act = A * (2 * n * h + 5 * nsp * h + 4 * n * ft)
    mlp_w = 2 * h * ft * W
    mlp_params = round((2 * h * f + f) / t) + 3 * h
    kf, ki, kw = K.mlp(x)
    mlp = Block("mlp", "mlp", mlp_params,
                forward=Work(4.0 * n * h * ft, mlp_act + mlp_w, kf),
                input_grad=Work(4.0 * n * h * ft, 2 * mlp_act + mlp_w, ki),
                weight_grad=Work(4.0 * n * h * ft, mlp_params * MAIN_GRAD_BYTES, kw),
                tp_forward_bytes=tp_ar, tp_backward_bytes=tp_ar)
    # embedding: word (vocabulary-parallel) and learned position embeddings, gathered for n tokens
    emb_params = round(V * h / t) + s * h
    kf, _, kw = K.embedding(x, n * h * (2 * W + A), float(n * h), n * h * A + emb_params * MAIN_GRAD_BYTES)
    embedding = Block("embedding", "embedding", emb_params,
                      forward=Work(0.0, n * h * (2 * W + A), kf),
                      input_grad=Work(),
                      weight_grad=Work(float(n * h), n * h * A + emb_params * MAIN_GRAD_BYTES, kw),
                      tp_forward_bytes=tp_ar)
    # head: final LayerNorm, logits (column-parallel over the vocabulary), cross-entropy
    logits = n * V / t
    kf, ki, kw = K.head(x, 4 * logits * 4, 2 * logits * 4)
    head = Block("head", "head", 2 * h,
                 forward=Work(2.0 * n * h * V / t, A * (3 * n * h + logits) + h * (V / t) * W + 4 * logits * 4, kf),
                 input_grad=Work(2.0 * n * h * V / t, A * (3 * n * h) + h * (V / t) * W + 2 * logits * 4, ki),
                 weight_grad=Work(2.0 * n * h * V / t, A * n * h + 4 * logits + (h * V / t + 2 * h) * MAIN_GRAD_BYTES,
                                  kw),
                 tp_forward_bytes=12.0 * n if t > 1 else 0.0, tp_backward_bytes=tp_ar)
    return {"embedding": embedding, "attention": attention, "mlp": mlp, "head": head}


def params_total(c: LLMConfig) -> int:
    """Trainable parameters of the model (all ranks, tied embedding once): l (4h^2 + 2hf + 9h + f) + V h + s h + 2h."""
    h, f = c.hidden, c.ffn_hidden
    return c.layers * (4 * h * h + 2 * h * f + 9 * h + f) + c.padded_vocab * h + c.seq_len * h + 2 * h


def model_flops_per_iteration(c: LLMConfig) -> float:
    """FLOPs of one iteration over all NPUs, [NARAYANAN21]'s count generalised to an MLP of width f and to the
    recomputation: B (l ((k)(8sh^2 + 4s^2h + 4shf)) + 6shV) with k = 3 (forward, backward as 2 forwards), 4
    with full recomputation; selective adds the attention core's 4s^2h per layer. With f = 4h and full
    recomputation this is their 96 B s l h^2 (1 + s/6h + V/16lh)."""
    s, h, f, V, B, l = c.seq_len, c.hidden, c.ffn_hidden, c.padded_vocab, c.global_batch, c.layers
    per_layer = 8 * s * h * h + 4 * s * s * h + 4 * s * h * f
    k = 4 if c.recompute == "full" else 3
    extra = 4 * s * s * h if c.recompute == "selective" else 0
    return float(B * (l * (k * per_layer + extra) + 6 * s * h * V))


def bubble_fraction(c: LLMConfig) -> float:
    """The pipeline bubble over the ideal time, (p - 1) / m, for 1F1B and GPipe alike ([NARAYANAN21] 2.2.1)."""
    return (c.pp - 1) / c.micro_batches


# ---------------------------------------------------------------------------------------------- program

class _Program:
    """Steps in order; collectives awaited by "the next step" are resolved when the next step is added."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.issues: list[list[tuple]] = []     # per step: (name, kind, layer, comm, wait, next_iter)
        self.to_next: list[tuple[int, int]] = []  # (step, issue index) awaited by the next step

    def step(self, name: str, layer: int, kind: str, work: Work) -> int:
        self.steps.append(Step(name, layer, kind, work.compute()))
        self.issues.append([])
        j = len(self.steps) - 1
        for s, k in self.to_next:
            self.issues[s][k][4] = j
        self.to_next = []
        return j

    def issue(self, name: str, kind: str, layer: int, comm: Comm, wait: int | str | None = "next",
              next_iteration: bool = False, at: int | None = None, kernels: tuple[Kernel, ...] = ()
              ) -> tuple[int, int]:
        """Release ``comm`` after step ``at`` (default the last); awaited before ``wait`` ("next": the step after
        it; an index; None: set later with ``await_at``); ``kernels``: the host's work around it."""
        j = len(self.steps) - 1 if at is None else at
        rec = [name, kind, layer, comm, None, next_iteration, kernels]
        self.issues[j].append(rec)
        key = (j, len(self.issues[j]) - 1)
        if wait == "next":
            self.to_next.append(key)
        elif wait is not None:
            rec[4] = wait
        return key

    def attach(self, kernel: Kernel) -> None:
        """Add ``kernel`` to the last step's demand (its FLOPs and bytes unchanged: a kernel of none)."""
        st = self.steps[-1]
        self.steps[-1] = replace(st, demand=replace(st.demand, kernels=st.demand.kernels + (kernel,)))

    def await_at(self, key: tuple[int, int], step: int, next_iteration: bool = False) -> None:
        rec = self.issues[key[0]][key[1]]
        rec[4], rec[5] = step, next_iteration

    def build(self) -> tuple[Step, ...]:
        for s, k in self.to_next:                 # awaited by the first step of the next iteration
            self.issues[s][k][4], self.issues[s][k][5] = 0, True
        out = []
        for st, iss in zip(self.steps, self.issues):
            out.append(Step(st.name, st.layer, st.kind, st.demand,
                            tuple(Issue(nm, kd, ly, cm, w, nx, kernels=ks) for nm, kd, ly, cm, w, nx, ks in iss)))
        return tuple(out)


def _p2p(c: LLMConfig) -> Comm:
    """The activation (or its gradient) one micro-batch passes between adjacent stages: n h A bytes
    ([NARAYANAN21] 4.1, without the scatter/gather optimization), on the pipeline dimension."""
    S = c.tokens * c.hidden * c.act_bytes
    if P2P_AS == "p2p":
        return Comm("p2p", S, c.pp_dims)
    return Comm(P2P_AS, S * c.pp / (c.pp - 1), c.pp_dims)


def _dims(dims: tuple[int, ...]) -> tuple[int, ...] | None:
    return tuple(dims) if dims else None


def _layers(c: LLMConfig, bl: dict[str, Block], kinds: list[str], names: list[str]) -> list[Layer]:
    """The representative's layers: each block's compute and its tensor- and data-parallel collectives."""
    tp, dp = _dims(c.tp_dims), _dims(c.dp_dims)
    grad_coll = "all_reduce" if c.zero == 0 else "reduce_scatter"
    layers = []
    for nm, k in zip(names, kinds):
        b = bl[k]
        fwd_c = Comm("all_reduce", b.tp_forward_bytes, tp) if b.tp_forward_bytes and tp else None
        bwd_c = Comm("all_reduce", b.tp_backward_bytes, tp) if b.tp_backward_bytes and tp else None
        dp_c = Comm(grad_coll, b.params * c.grad_bytes, dp) if dp else None
        selective = b.selective if c.recompute == "selective" else Work()
        layers.append(Layer(nm, b.forward.compute(), (b.input_grad + selective).compute(), b.weight_grad.compute(),
                            fwd_c, bwd_c, dp_c))
    return layers


def _scaled(comm: Comm | None, r: int) -> Comm | None:
    """``comm`` for ``r`` merged micro-batches: r times the bytes."""
    return comm if comm is None or r == 1 else Comm(comm.collective, comm.bytes * r, comm.dims)


def _label(j: int, r: int) -> str:
    return f"mb{j}" if r == 1 else f"mb{j}-{j + r - 1}"


class _LLMBuilder:
    """The representative NPU's program, step by step (module docstring; docs/llm.md): its own micro-batches
    in the schedule's order, then the bubble (the other stages' last backward down, the first stage's
    optimizer, their first forward up), with the collectives each step releases and who awaits them."""

    def __init__(self, c: LLMConfig, merge: bool) -> None:
        self.c, self.p, self.m, self.zero = c, c.pp, c.micro_batches, c.zero
        self.bl = blocks(c)
        lps = c.layers_per_stage
        # the layers: the embedding (the first stage's), this stage's attention and MLP blocks, the head
        self.names = ["embedding"] + [f"L{k}.{x}" for k in range(lps) for x in ("attention", "mlp")] + ["head"]
        self.kinds = ["embedding"] + ["attention", "mlp"] * lps + ["head"]
        self.layers = _layers(c, self.bl, self.kinds, self.names)
        L = len(self.layers)
        self.EMB, self.HEAD = 0, L - 1
        self.first_stage = self.p == 1
        self.blocks_idx = list(range(1, L - 1))
        self.own = ([self.EMB] if self.first_stage else []) + self.blocks_idx + [self.HEAD]  # forward order
        self.ghost_first = [self.EMB] + self.blocks_idx                                       # the first stage's
        # what another stage runs of the last micro-batch on the way down and of the first on the way up: its
        # whole stage, or with interleaving one model chunk, 1/v of its layers ([NARAYANAN21] 2.2.2: the
        # bubble shrinks by v)
        chunk = self.blocks_idx[: len(self.blocks_idx) // c.virtual_stages]
        self.ghost_chunk, self.ghost_chunk_first = chunk, [self.EMB] + chunk
        self.work = {i: self.bl[self.kinds[i]] for i in range(L)}
        self.dp = _dims(c.dp_dims)
        self.P = _Program()
        self.p2p = _p2p(c) if self.p > 1 else None
        # ZeRO-3: each use of a layer's weights waits for an all-gather of them, released two steps earlier
        self.gathers: list[tuple[int, int]] = []     # (step that waits, layer)
        self.dp_keys: dict[int, list[tuple[int, int]]] = {}
        self.per_mb_reduce = self.zero >= 2          # ZeRO-2/3 reduce-scatter every micro-batch's gradients (p = 1)
        self.can_merge = merge and not self.per_mb_reduce and self.zero != 3
        #: without overlap, the gradient reductions the backward would release, issued after its last step
        self.deferred: list[tuple[str, int, Comm]] = []

    # ---- the steps of one micro-batch
    def fwd(self, order: list[int], label: str, kind: str, recompute: bool = False, r: int = 1) -> None:
        for i in order:
            b = self.work[i]
            what = "recompute" if recompute else "forward"
            self.P.step(f"{label}.{self.names[i]}.{what}", i, kind if kind == "idle" else what, b.forward.times(r))
            self.zero3_gather(i)
            if self.layers[i].forward_comm is not None:
                self.P.issue(f"{label}.{self.names[i]}.tp_forward{'.recompute' if recompute else ''}", "tp", i,
                             _scaled(self.layers[i].forward_comm, r))

    def zero3_gather(self, i: int) -> None:
        if self.zero == 3 and self.dp:
            self.gathers.append((len(self.P.steps) - 1, i))

    def bwd(self, order: list[int], label: str, kind: str, carry: dict | None = None, r: int = 1) -> None:
        """Backward of ``order`` (forward order; run reversed). Full recomputation re-runs each Transformer
        layer's forward (attention, MLP) before its backward; the head and the embedding are not re-run.
        ``carry``: collect the data-parallel gradient collectives (released when a layer's backward ends)."""
        rev = list(reversed(order))
        k = 0
        while k < len(rev):
            i = rev[k]
            group = [i]
            if (self.c.recompute == "full" and self.kinds[i] == "mlp" and k + 1 < len(rev)
                    and self.kinds[rev[k + 1]] == "attention"):
                group = [rev[k + 1], i]                            # the layer: attention, MLP
                self.fwd(group, label, kind, recompute=True, r=r)  # (ZeRO-3: its gathers serve the backward too)
            for j2 in (list(reversed(group)) if len(group) > 1 else group):
                self._backward_step(j2, label, kind, carry, r, alone=len(group) == 1)
            k += len(group)

    def _backward_step(self, i: int, label: str, kind: str, carry: dict | None, r: int, alone: bool) -> None:
        b = self.work[i]
        total = b.input_grad + b.weight_grad + (b.selective if self.c.recompute == "selective" else Work())
        self.P.step(f"{label}.{self.names[i]}.backward", i, kind if kind == "idle" else "backward", total.times(r))
        if alone:
            self.zero3_gather(i)
        layer = self.layers[i]
        if layer.input_grad_comm is not None:
            self.P.issue(f"{label}.{self.names[i]}.tp_backward", "tp", i, _scaled(layer.input_grad_comm, r))
        if layer.weight_grad_comm is not None and carry is not None and not self.c.overlap_grad_reduce:
            self.deferred.append((f"{label}.{self.names[i]}.{'dp' if self.zero == 0 else 'reduce_scatter'}", i,
                                  layer.weight_grad_comm))
        elif layer.weight_grad_comm is not None and carry is not None:
            key = self.P.issue(f"{label}.{self.names[i]}.{'dp' if self.zero == 0 else 'reduce_scatter'}", "dp", i,
                               layer.weight_grad_comm, wait=None)
            carry.setdefault(i, []).append(key)

    def exchange(self, label: str, r: int = 1, blocking: bool = True) -> tuple[int, int]:
        """A Megatron exchange after the step just added, once its tensor-parallel all-reduce is done (a step of
        no work waits for it): awaited by the next step (``blocking``), or by a later one (``P.await_at``). The
        host's part of it (``llm_kernels.exchange``) ends the step before a blocking one (the GPU idles while the
        host runs it); beside compute (an interior stage's second exchange, beside the head) it delays the
        exchange's end instead, so the head's compute and the exchange with its host work overlap."""
        if self.P.to_next or not self.P.steps:
            self.P.step(f"{label}.wait", self.HEAD, "idle", Work())
        host = K.exchange(f"{label}.host", r)
        if blocking:
            self.P.attach(host)
        return self.P.issue(f"{label}.p2p", "p2p", self.HEAD, _scaled(self.p2p, r), wait="next" if blocking else None,
                            kernels=() if blocking else (host,))

    # ---- the representative's micro-batches. The steady state runs at the slowest stage's own cycle: the
    # last stage's forward, backward and one exchange, or an interior stage's with two exchanges (p >= 3):
    # t_f + t_b + c + max(head, c). So an interior stage's second exchange runs beside the head's compute
    # (released before it, awaited after it) and the exchange after each backward blocks (docs/llm.md).
    # With merging, a run of identical micro-batches that follow one another and whose collectives all
    # complete within the run's own steps is one step each of r times the work and bytes (docs/llm.md,
    # "Identical micro-batches"): the same time but for r - 1 hop latencies and endpoint delays per message.
    def one_f_one_b(self) -> None:
        """With interleaving, a micro-batch's v chunk transfers each way run as one exchange of v times the
        bytes (the same link time but for v - 1 hop latencies)."""
        p, m, HEAD, v = self.p, self.m, self.HEAD, self.c.virtual_stages
        body = [i for i in self.own if i != HEAD]
        runs = [(0, 1), (1, m - 2), (m - 1, 1)] if self.can_merge and m >= 4 else [(j, 1) for j in range(m)]
        for j, r in runs:
            last = j + r - 1 == m - 1
            lab = _label(j, r)
            self.fwd(body, lab, "forward", r=r)
            beside = (self.exchange(f"{lab}.interior_send_forward_recv_backward", r * v, blocking=False)
                      if p >= 3 and 1 <= j and j + r - 1 <= m - 2 else None)
            self.fwd([HEAD], lab, "forward", r=r)
            carry = self.dp_keys if (self.first_stage and (last or self.per_mb_reduce)) else None
            self.bwd([HEAD], lab, "backward", carry, r=r)
            if beside is not None:
                self.P.await_at(beside, len(self.P.steps))       # before the first step of the body's backward
            self.bwd(body, lab, "backward", carry, r=r)
            if p > 1 and j + r - 1 <= m - 2:
                self.exchange(f"{lab}.send_backward_recv_forward", r * v)

    def gpipe(self) -> None:
        """All forwards, then all backwards (last micro-batch first); an interior stage exchanges twice per
        micro-batch in each, the last stage once: the second runs beside the head's compute."""
        p, m, HEAD = self.p, self.m, self.HEAD
        body = [i for i in self.own if i != HEAD]
        fruns = [(0, 1), (1, m - 1)] if self.can_merge and m >= 3 else [(j, 1) for j in range(m)]
        for j, r in fruns:
            lab = _label(j, r)
            if j:
                self.exchange(f"{lab}.recv_forward", r)
            self.fwd(body, lab, "forward", r=r)
            beside = self.exchange(f"{lab}.interior_send_forward", r, blocking=False) if j and p >= 3 else None
            self.fwd([HEAD], lab, "forward", r=r)
            if beside is not None:
                self.P.step(f"{lab}.head.wait", HEAD, "idle", Work())
                self.P.await_at(beside, len(self.P.steps) - 1)
        bruns = [(m - 1, 1), (0, m - 1)] if self.can_merge and m >= 3 else [(j, 1) for j in reversed(range(m))]
        for n_, (j, r) in enumerate(bruns):
            lab = _label(j, r)
            beside = None
            if n_:
                self.exchange(f"{lab}.send_backward", r)
                if p >= 3:
                    beside = self.exchange(f"{lab}.interior_recv_backward", r, blocking=False)
            self.bwd([HEAD], lab, "backward", None, r=r)
            if beside is not None:
                self.P.await_at(beside, len(self.P.steps))
            self.bwd(body, lab, "backward", None, r=r)

    def chain_reduce_scatters(self) -> None:
        """ZeRO-2/3 (p = 1): each micro-batch's reduce-scatter before the next one's backward of the layer."""
        for keys in self.dp_keys.values():
            for a_key, b_key in zip(keys, keys[1:]):
                self.P.await_at(a_key, b_key[0])   # awaited by the step that released the next one
        self.dp_keys = {i: keys[-1:] for i, keys in self.dp_keys.items()}

    # ---- the bubble: the other stages' last backward (down), the first stage's optimizer, first forward (up)
    def drain(self) -> None:
        self.exchange("drain.send_backward")
        last_mb = self.m - 1 if self.c.schedule == "1f1b" else 0
        for s in range(self.p - 2, -1, -1):
            order = self.ghost_chunk_first if s == 0 else self.ghost_chunk
            self.bwd(order, f"stage{s}.mb{last_mb}", "idle", self.dp_keys if s == 0 else None)
            if s > 0:
                self.exchange(f"stage{s}.send_backward")

    def optimizer(self) -> tuple[int, list[tuple[int, tuple[int, int]]]]:
        """The first stage's optimizer step (awaiting every data-parallel gradient collective) and, with
        ZeRO-1/2, the parameters' all-gathers it releases: (its step, [(layer, issue key)])."""
        c, work = self.c, self.work
        stage = self.ghost_first if self.p > 1 else self.own
        dp_stage_params = sum(work[i].params for i in stage)
        for name, i, comm in self.deferred:    # after the last backward, in the order it would release them
            self.dp_keys.setdefault(i, []).append(self.P.issue(name, "dp", i, comm, wait=None))
        opt_bytes = dp_stage_params * ADAM_BYTES_PER_PARAM / (c.dp if self.zero >= 1 else 1)
        opt = self.P.step("stage0.optimizer" if self.p > 1 else "optimizer", -1, "optimizer",
                          Work(0.0, opt_bytes, (K.memory("optimizer.adam", opt_bytes),)))
        for keys in self.dp_keys.values():
            for key in keys:
                self.P.await_at(key, opt)
        gathers: list[tuple[int, tuple[int, int]]] = []
        if self.zero in (1, 2) and self.dp:
            for i in stage:
                comm = Comm("all_gather", work[i].params * c.weight_bytes, self.dp)
                gathers.append((i, self.P.issue(f"{self.names[i]}.all_gather_params", "dp", i, comm, wait=None)))
        return opt, gathers

    def fill(self) -> dict[int, int]:
        """The next iteration's first micro-batch up through the other stages: {layer: the step of its
        first forward} (for the parameters' all-gathers to await)."""
        first_fwd: dict[int, int] = {}
        if self.p == 1:
            return {i: next(j for j, st in enumerate(self.P.steps) if st.layer == i) for i in self.own}
        for s in range(0, self.p - 1):
            order = self.ghost_chunk_first if s == 0 else self.ghost_chunk
            start = len(self.P.steps)
            self.fwd(order, f"stage{s}.mb0", "idle")
            if s == 0:
                for i in order:
                    first_fwd[i] = next(j for j in range(start, len(self.P.steps)) if self.P.steps[j].layer == i)
            self.exchange(f"stage{s}.send_forward")   # the last one is awaited by the next iteration's first step
        return first_fwd

    def zero3_gathers(self, program: tuple[Step, ...]) -> tuple[Step, ...]:
        """ZeRO-3: all-gather each layer's parameters, released two steps before the step using them."""
        J = len(program)
        extra: dict[int, list[Issue]] = {}
        for use, i in self.gathers:
            rel = use - 2
            comm = Comm("all_gather", self.work[i].params * self.c.weight_bytes, self.dp)
            extra.setdefault(rel % J, []).append(Issue(f"{program[use].name}.all_gather_params", "dp", i, comm,
                                                       use, rel < 0))
        return tuple(Step(st.name, st.layer, st.kind, st.demand, st.issues + tuple(extra.get(j, ())))
                     for j, st in enumerate(program))

    def program(self) -> tuple[Step, ...]:
        if self.c.schedule == "1f1b" or self.p == 1:
            self.one_f_one_b()
        else:
            self.gpipe()
        if self.per_mb_reduce:
            self.chain_reduce_scatters()
        if self.p > 1:
            self.drain()
        opt, gathers = self.optimizer()
        first_fwd = self.fill()
        # with interleaving the fill runs the first model chunk only: a later chunk's layers are first used after
        # it, so their gathers are awaited at its last forward (earlier than needed: never optimistic)
        last_fill = max(first_fwd.values(), default=None)
        for i, key in gathers:
            at = first_fwd.get(i, last_fill)
            self.P.await_at(key, at, next_iteration=at <= opt)
        program = self.P.build()
        return self.zero3_gathers(program) if self.gathers else program


def build_llm(c: LLMConfig, name: str = "llm", merge: bool = True) -> Workload:
    """The Workload: the representative NPU's layers and its program (module docstring; docs/llm.md)."""
    b = _LLMBuilder(c, merge)
    program = b.program()
    mem = memory_per_gpu(c)
    # every stage's layers and the head, not only the program's (last) stage: the job's MFU, not its rank's
    flops = model_flops_per_iteration(replace(c, recompute="none")) / (c.tp * c.pp * c.dp)
    return Workload(name, "llm", tuple(b.layers), source="codesign.workload.llm (built from the architecture)",
                    program=program, memory_bytes=(("weights", mem.weights), ("gradients", mem.gradients),
                                                   ("optimizer", mem.optimizer), ("activations", mem.activations)),
                    model_flops_per_npu=flops)


def llm(layers: int = 96, hidden: int = 12288, heads: int = 96, seq_len: int = 2048, vocab: int = 50257,
        ffn_hidden: int = 0, micro_batch: int = 1, global_batch: int = 1536, tensor_parallel: int = 8,
        pipeline_parallel: int = 8, data_parallel: int = 16, tensor_dims: tuple[int, ...] = (0,),
        pipeline_dims: tuple[int, ...] = (1,), data_dims: tuple[int, ...] = (2, 3), schedule: str = "1f1b",
        recompute: str = "selective", zero: int = 0, act_bytes: float = 2.0, weight_bytes: float = 2.0,
        grad_bytes: float = 2.0, merge_micro_batches: bool = True, overlap_grad_reduce: bool = True,
        sequence_parallel: bool = False, virtual_stages: int = 1, name: str = "llm", *,
        topology_sizes: tuple[int, ...] | None = None) -> Workload:
    """A decoder-only Transformer's training iteration on one tensor-parallel rank of the last pipeline stage.

    Defaults: GPT-3 175B ([BROWN20] Table 2.1: 96 layers, d_model 12288, 96 heads, context 2048, batch 3.2M
    tokens = 1536 sequences; GPT-2's BPE vocabulary of 50257) with MLP width 4h, micro-batch 1, on
    t x p x d = 8 x 8 x 16 NPUs (our choice for 1024 NPUs, after [NARAYANAN21]'s t = 8 within a server),
    1F1B, selective recomputation [KORTHIKANTI22], no ZeRO, 2-byte activations, weights and gradients.
    ``ffn_hidden`` 0 means 4 x hidden. ``*_dims``: the topology dimensions each parallelism takes, whole, their
    sizes multiplied giving its degree (checked when ``topology_sizes`` is given, as a problem file does).
    ``sequence_parallel``: Megatron's sequence parallelism (each tensor-parallel all-reduce becomes a reduce-scatter
    and an all-gather of the same bytes, timed as the all-reduce they make up; the LayerNorms, dropouts and
    residual adds on n/t tokens).
    ``virtual_stages``: interleaved 1F1B with v model chunks per stage: the bubble (p - 1)(t_f + t_b)/v, each
    micro-batch's transfers v times the bytes.
    ``overlap_grad_reduce``: each layer's data-parallel gradient reduction starts as its backward ends (true),
    or all of them after the last backward (false, Megatron's local DDP).
    ``merge_micro_batches``: run the steady state's identical micro-batches as one step each of their summed
    work (exact but for per-message latencies, docs/llm.md); false lays out every micro-batch.
    """
    cfg = config(layers, hidden, heads, seq_len, vocab, ffn_hidden, micro_batch, global_batch, tensor_parallel,
                 pipeline_parallel, data_parallel, tuple(tensor_dims), tuple(pipeline_dims), tuple(data_dims),
                 schedule, recompute, zero, act_bytes, weight_bytes, grad_bytes, topology_sizes, overlap_grad_reduce,
                 sequence_parallel, virtual_stages)
    if not isinstance(merge_micro_batches, bool):
        raise ValueError(f"merge_micro_batches must be true or false, got {merge_micro_batches!r}")
    return build_llm(cfg, name, merge_micro_batches)
