"""Memory per GPU of a GPT training configuration: weights, gradients, optimizer state and activations, on the
most loaded GPU of the pipeline (its first stage, which holds the most micro-batches' activations and the
embedding); what ``codesign solve`` and ``simulate`` report and the problem loader checks against the NPU's HBM
capacity (docs/llm.md, "Memory per GPU").

Model state, per parameter on the rank (mixed precision with Adam, as Megatron trains): the W-byte weight
the kernels read, a 4-byte fp32 main gradient, and 12 bytes of optimizer state (fp32 master weight, first and
second moments) [RAJBHANDARI20]; ZeRO-1 (Megatron's distributed optimizer) divides the optimizer state over
the data-parallel group, ZeRO-2 the gradients too, ZeRO-3 the weights too.

Activations, per Transformer layer and micro-batch, in bytes, [KORTHIKANTI22] Table 2 (s sequence, b
micro-batch, h hidden, a heads, t tensor-parallel size; 2-byte activations, 1-byte dropout masks):
- no recomputation: s b h (10 + 24/t + 5 a s / (h t)); with sequence parallelism s b h (34/t + 5 a s / (h t));
- selective recomputation (the attention core's s^2 terms recomputed): s b h (10 + 24/t), or s b h 34/t with
  sequence parallelism;
- full recomputation: 2 s b h, each layer's input (2 s b h / t with sequence parallelism), plus one layer's
  activations while its backward runs.
The first stage of 1F1B holds p micro-batches in flight over its l/p layers: l layers' worth; interleaving
with v chunks adds (p - 1)/(p v) of that ([KORTHIKANTI22] 4.2.3). An MLP of width f scales the 24/t term's
MLP share (16 of its 24: the GeLU's input and FC2's input, 8 each) by f / 4h.
"""
from __future__ import annotations

from dataclasses import dataclass

#: Bytes per parameter of the fp32 main gradient and of Adam's state (master weight, two moments).
GRAD_BYTES, OPTIMIZER_BYTES = 4.0, 12.0


@dataclass(frozen=True)
class Memory:
    """Bytes per GPU, by what holds them."""

    weights: float
    gradients: float
    optimizer: float
    activations: float

    @property
    def model_state(self) -> float:
        return self.weights + self.gradients + self.optimizer

    @property
    def total(self) -> float:
        return self.model_state + self.activations

    def as_dict(self) -> dict[str, float]:
        return {"weights_bytes": self.weights, "gradients_bytes": self.gradients, "optimizer_bytes": self.optimizer,
                "activations_bytes": self.activations, "total_bytes": self.total}


def layer_activation_bytes(s: int, b: int, h: int, a: int, t: int, f: int, recompute: str,
                           sequence_parallel: bool) -> float:
    """Bytes one Transformer layer keeps for its backward, per micro-batch (module docstring)."""
    sbh = float(s) * b * h
    if recompute == "full":   # each layer's input, split over the tensor group with sequence parallelism
        return 2.0 * sbh / (t if sequence_parallel else 1)
    mlp_scale = f / (4.0 * h)
    per_t = 8.0 + 16.0 * mlp_scale          # 24/t at f = 4h: attention's 8, the MLP's 16
    if sequence_parallel:
        base = (10.0 + per_t) / t
    else:
        base = 10.0 + per_t / t
    core = 5.0 * a * s / (h * t) if recompute == "none" else 0.0
    return sbh * (base + core)


def memory_per_gpu(c, *, embedding: bool = True) -> Memory:
    """Memory of the first pipeline stage's GPU under ``c`` (an ``llm.LLMConfig``); ``embedding`` false leaves
    out the embedding's and the head's parameters (as [KORTHIKANTI22] Figure 1 counts a stage)."""
    from .llm import blocks

    bl = blocks(c)
    lps = c.layers_per_stage
    params = lps * (bl["attention"].params + bl["mlp"].params)
    if embedding:
        params += bl["embedding"].params + (bl["head"].params if c.pp == 1 else 0)
    d = c.dp
    weights = params * c.weight_bytes / (d if c.zero >= 3 else 1)
    grads = params * GRAD_BYTES / (d if c.zero >= 2 else 1)
    optimizer = params * OPTIMIZER_BYTES / (d if c.zero >= 1 else 1)
    per_layer = layer_activation_bytes(c.seq_len, c.micro_batch, c.hidden, c.heads, c.tp, c.ffn_hidden,
                                       c.recompute, c.sequence_parallel)
    in_flight = min(c.pp, c.micro_batches) if c.schedule == "1f1b" else c.micro_batches
    layers_held = lps * in_flight
    if c.virtual_stages > 1:
        layers_held *= 1.0 + (c.pp - 1) / (c.pp * c.virtual_stages)
    acts = per_layer * layers_held
    if c.recompute == "full":   # the layer being recomputed holds its whole activations for its backward
        acts += layer_activation_bytes(c.seq_len, c.micro_batch, c.hidden, c.heads, c.tp, c.ffn_hidden, "none",
                                       c.sequence_parallel)
    return Memory(weights, grads, optimizer, acts)
