"""Build a data-parallel training workload from layer shapes: FLOPs, HBM bytes and gradient all-reduces.

Each method adds one layer and derives, from its shape, the work of its three compute tasks (forward,
input gradient, weight gradient) as FLOPs plus HBM bytes (the NPU's roofline turns them into seconds,
``platform.costs.compute_time_terms``) and the bytes of its weight-gradient all-reduce.

Conventions (every formula below follows them):
- a multiply-add is 2 FLOPs; an add, a multiply, a comparison or a transcendental (exp, tanh, sigmoid) is 1;
- matrix layers: input gradient ~ forward and weight gradient ~ forward (each is one matmul of the same
  size), so backward ~ 2x forward;
- HBM bytes are compulsory traffic: every tensor a kernel reads or writes crosses HBM once per kernel
  (on-chip reuse inside a kernel is assumed perfect, reuse across kernels none). Activations and their
  gradients take ``act_bytes`` per element, weights as the kernels read them ``weight_bytes``, weight
  gradients ``grad_bytes_per_param``. Element-wise glue (dropout, residual adds, casts) is not counted;
- the weight-gradient all-reduce moves ``params x grad_bytes_per_param`` bytes (ASTRA-sim's ResNet-50
  workload all-reduces fp32 gradients: 4 bytes per parameter), issued when the layer's weight gradient
  is done. A parameter shared by several layers (``tie_to``) is all-reduced once, by the layer that owns
  it; since a tie must point to an earlier layer, the owner's backward runs last, when the gradient is whole.

Backward work that weight gradients need even when the input gradient is not (an LSTM's back-propagation
through time, attention's score gradient) is kept apart as ``backprop``: ``build`` adds it to the input
gradient task, except for the first layer, whose input gradient the iteration never runs
(``schedule.iteration.build_iteration``); there it joins the weight-gradient task instead.
"""
from __future__ import annotations

from dataclasses import dataclass

from .model import PARALLELISMS, Comm, Compute, Kernel, Layer, Workload


@dataclass(frozen=True)
class Work:
    """FLOPs and HBM bytes of one compute task (or part of one), and, where known, the kernels that do it
    (``model.Kernel``; their FLOPs add up to ``flops``)."""

    flops: float = 0.0
    bytes: float = 0.0
    kernels: tuple[Kernel, ...] = ()

    def __add__(self, other: Work) -> Work:
        return Work(self.flops + other.flops, self.bytes + other.bytes, self.kernels + other.kernels)

    def times(self, k: float) -> Work:
        """``k`` times the work; kernels run ``k`` times (``k`` a whole number where there are kernels)."""
        if self.kernels and k != int(k):
            raise ValueError(f"kernels run a whole number of times, not {k}")
        return Work(k * self.flops, k * self.bytes, tuple(kr.times(int(k)) for kr in self.kernels))

    def compute(self) -> Compute:
        if not (self.flops or self.bytes):
            return Compute(kernels=self.kernels)   # equal to Compute(): kernels are not compared
        return Compute(flops=self.flops, hbm_bytes=self.bytes, kernels=self.kernels)


@dataclass(frozen=True)
class LayerCost:
    """One layer's derivation: shape, owned parameters, work per phase, all-reduce bytes.

    ``params`` counts the parameters this layer owns (a tied weight counts at its owner);
    ``weights`` is the size of its tieable weight matrix; ``out`` the output shape per sample.
    """

    name: str
    kind: str
    shape: str
    params: int
    weights: int
    forward: Work
    input_grad: Work
    backprop: Work
    weight_grad: Work
    allreduce_bytes: float
    tied_to: str | None = None
    out: tuple[int, ...] = ()


class WorkloadBuilder:
    """Add layers in forward data-flow order, then ``build()`` the Workload.

    ``batch``: samples per NPU (data parallel). Byte widths in bytes per element. ``update_s_per_param``:
    the optimizer's update delay in seconds per parameter a layer owns (0: not modelled).
    """

    def __init__(self, name: str, *, batch: int = 1, parallelism: str = "data",
                 grad_bytes_per_param: float = 4.0, act_bytes: float = 2.0, weight_bytes: float | None = None,
                 update_s_per_param: float = 0.0, source: str | None = None) -> None:
        if parallelism not in PARALLELISMS:
            raise ValueError(f"parallelism {parallelism!r}: expected one of {', '.join(PARALLELISMS)}")
        _positive(batch=batch, grad_bytes_per_param=grad_bytes_per_param, act_bytes=act_bytes)
        if weight_bytes is not None:
            _positive(weight_bytes=weight_bytes)
        if update_s_per_param < 0:
            raise ValueError(f"update_s_per_param must be >= 0, got {update_s_per_param}")
        self.name, self.batch, self.parallelism, self.source = name, batch, parallelism, source
        self.g, self.a = float(grad_bytes_per_param), float(act_bytes)
        # mixed precision: kernels read a low-precision copy of the weights, as wide as the activations
        self.w = float(weight_bytes) if weight_bytes is not None else self.a
        self.update_s_per_param = update_s_per_param
        self._layers: list[LayerCost] = []

    # ------------------------------------------------------------------ bookkeeping
    @property
    def layers(self) -> tuple[LayerCost, ...]:
        return tuple(self._layers)

    @property
    def params(self) -> int:
        """Total trainable parameters (shared ones once)."""
        return sum(lc.params for lc in self._layers)

    def _add(self, lc: LayerCost) -> LayerCost:
        if any(x.name == lc.name for x in self._layers):
            raise ValueError(f"layer name {lc.name!r} is used twice")
        self._layers.append(lc)
        return lc

    def _tie(self, name: str, tie_to: str | None, weights: int) -> int:
        """Parameters of the weight matrix this layer owns: 0 if tied to an earlier layer's of equal size."""
        if tie_to is None:
            return weights
        owner = next((x for x in self._layers if x.name == tie_to), None)
        if owner is None:
            raise ValueError(f"{name}: tie_to {tie_to!r} names no earlier layer (ties point backwards, to "
                             "the owner, whose backward runs last)")
        if owner.tied_to is not None or owner.weights != weights:
            raise ValueError(f"{name}: cannot tie {weights} weights to {tie_to!r} ({owner.weights} weights"
                             f"{', itself tied' if owner.tied_to else ''})")
        return 0

    def _layer(self, name: str, kind: str, shape: str, params: int, weights: int, fwd: Work, dx: Work,
               wg: Work, bp: Work = Work(), tie_to: str | None = None, out: tuple[int, ...] = ()) -> LayerCost:
        return self._add(LayerCost(name, kind, shape, params, weights, fwd, dx, bp, wg, params * self.g,
                                   tie_to, out))

    # ------------------------------------------------------------------ layers
    def linear(self, name: str, in_features: int, out_features: int, *, tokens_per_sample: int = 1,
               bias: bool = True, tie_to: str | None = None) -> LayerCost:
        """A fully-connected layer y = x W^T + b on N = batch x tokens_per_sample rows.

        params = I*O (+ O bias). forward = 2*N*I*O (+ N*O bias add) FLOPs, reading x (N*I), W and writing
        y (N*O). input grad dx = dy W: 2*N*I*O, reading dy, W, writing dx. weight grad dW = dy^T x:
        2*N*I*O (+ N*O to sum the bias gradient), reading x and dy, writing dW (params x grad bytes).
        """
        _positive(in_features=in_features, out_features=out_features, tokens_per_sample=tokens_per_sample)
        n, i, o, a = self.batch * tokens_per_sample, in_features, out_features, self.a
        p = self._tie(name, tie_to, i * o) + (o if bias else 0)
        mm, b = 2.0 * n * i * o, float(n * o if bias else 0)
        return self._layer(name, "linear", f"{i} -> {o} x {tokens_per_sample} tok", p, i * o,
                           Work(mm + b, n * i * a + (i * o + (o if bias else 0)) * self.w + n * o * a),
                           Work(mm, n * o * a + i * o * self.w + n * i * a),
                           Work(mm + b, n * i * a + n * o * a + (i * o + (o if bias else 0)) * self.g),
                           tie_to=tie_to, out=(tokens_per_sample, o))

    def embedding(self, name: str, num_embeddings: int, dim: int, *, tokens_per_sample: int = 1,
                  tie_to: str | None = None) -> LayerCost:
        """A lookup table of V rows of D: each of N = batch x tokens_per_sample tokens gathers a row.

        params = V*D. forward: 0 FLOPs, reading N rows and writing N*D activations. No input gradient
        (token ids are not differentiable). weight grad: N*D FLOPs (scatter-add of dy into the rows),
        reading dy, read-modify-writing N rows, and writing a dense V*D gradient (PyTorch's default,
        ``sparse=False``). All-reduce: the dense V*D gradient, as PyTorch DDP all-reduces it; a sparse
        gradient would only need the touched rows, but the GNMT references use dense embeddings.
        """
        _positive(num_embeddings=num_embeddings, dim=dim, tokens_per_sample=tokens_per_sample)
        n, v, d = self.batch * tokens_per_sample, num_embeddings, dim
        p = self._tie(name, tie_to, v * d)
        return self._layer(name, "embedding", f"{v} x {d}, {tokens_per_sample} tok", p, v * d,
                           Work(0.0, n * d * (self.w + self.a)), Work(),
                           Work(float(n * d), n * d * (self.a + 2 * self.g) + v * d * self.g),
                           tie_to=tie_to, out=(tokens_per_sample, d))

    def lstm(self, name: str, input_size: int, hidden_size: int, *, seq_len: int,
             bidirectional: bool = False) -> LayerCost:
        """One LSTM layer (PyTorch ``nn.LSTM``, two bias vectors) over seq_len steps; x2 if bidirectional.

        Per direction, with N = batch x seq_len, I inputs, H hidden:
        params = 4H*(I+H) + 8H. forward = N*(8H*(I+H) + 17H) FLOPs: the gate matmuls [x, h] W^T
        (2*4H*(I+H)) plus element-wise 17H (8H bias adds, 4H gate nonlinearities, 3H for
        c = f*c + i*g, 2H for h = o*tanh(c)). Reads x, W_ih once and W_hh once per step (the recursion
        serializes the steps, so the recurrent weights stream from HBM every step), writes h and the
        4H gates plus c kept for backward.
        backprop (through time, which the weight gradients need in any case): N*(8H*H + 17H) for
        dh_{t-1} = dgates W_hh plus the element-wise backward (taken equal to the forward's); reads dy,
        the saved gates and c, and W_hh every step; writes dgates (the split cuDNN's backward-data makes).
        input grad dx = dgates W_ih: N*8H*I, reading dgates and W_ih, writing dx. weight grad
        dW = dgates^T [x, h]: N*8H*(I+H), plus N*4H to sum the bias gradient; reads x, h, dgates.
        Output: H features per step (2H if bidirectional).
        """
        _positive(input_size=input_size, hidden_size=hidden_size, seq_len=seq_len)
        k = 2 if bidirectional else 1
        i, h, t, a, w = input_size, hidden_size, seq_len, self.a, self.w
        n = self.batch * t
        p = k * (4 * h * (i + h) + 8 * h)
        fwd = Work(n * (8.0 * h * (i + h) + 17 * h),
                   n * (i + h + 5 * h) * a + (4 * h * i + t * 4 * h * h + 8 * h) * w)
        bp = Work(n * (8.0 * h * h + 17 * h), n * (h + 5 * h + 4 * h) * a + t * 4 * h * h * w)
        dx = Work(n * 8.0 * h * i, n * (4 * h + i) * a + 4 * h * i * w)
        wg = Work(n * (8.0 * h * (i + h) + 4 * h), n * (i + h + 4 * h) * a + (4 * h * (i + h) + 8 * h) * self.g)
        # both directions do the same work
        return self._layer(name, "lstm", f"{'bi ' if bidirectional else ''}{i} -> {h} x {t} steps", p, p,
                           fwd.times(k), dx.times(k), wg.times(k), bp.times(k), out=(t, k * h))

    def attention(self, name: str, query_size: int, key_size: int, units: int, *, query_len: int,
                  key_len: int, normalize: bool = True) -> LayerCost:
        """Additive (Bahdanau) attention, score(q, k) = v . tanh(W_q q + W_k k [+ b]), as GNMT v2 uses it.

        ``normalize`` (GNMT's "normalized Bahdanau"): v is scaled to g*v/|v| and a bias b is added.
        With B = batch, P = B*Tq*Tk query-key pairs: params = n*(Q+K) + n (+ n + 1 if normalize).
        forward: projections 2*B*Tq*Q*n + 2*B*Tk*K*n; scores (4n + n if normalize) per pair (add q+k,
        bias, tanh, multiply-add with v); softmax 5 per pair; context = probs @ keys: 2*P*K.
        Score kernel fused: the B x Tq x Tk x n tanh tensor never reaches HBM (NVIDIA's MLPerf GNMT
        ``attn_score`` kernel; the plain PyTorch reference materializes it).
        backprop (score gradient): dprobs = dctx keys^T 2*P*K, softmax backward 4*P, score backward 6n
        per pair (tanh recomputed). input grad: dkeys from the context 2*P*K, projections back
        2*B*Tq*Q*n + 2*B*Tk*K*n, plus B*Tk*K to add the two key gradients. weight grad: dW_q, dW_k
        (2*B*Tq*Q*n + 2*B*Tk*K*n) and dv (+ db): 2n (+ n) per pair. Output: K features per query step.
        """
        _positive(query_size=query_size, key_size=key_size, units=units, query_len=query_len, key_len=key_len)
        b, q, k, n, tq, tk, a = self.batch, query_size, key_size, units, query_len, key_len, self.a
        pairs = b * tq * tk
        p = n * (q + k) + n + ((n + 1) if normalize else 0)
        proj = 2.0 * b * (tq * q + tk * k) * n
        score = 5 * n if normalize else 4 * n
        fwd = Work(proj + pairs * (score + 5) + 2.0 * pairs * k,
                   (b * tq * q + 2 * b * tk * k + 2 * b * (tq + tk) * n + 4 * pairs + b * tq * k) * a + p * self.w)
        bp = Work(2.0 * pairs * k + pairs * (4 + 6 * n),
                  (b * tq * k + b * tk * k + 3 * pairs + 2 * b * (tq + tk) * n) * a + n * self.w)
        dx = Work(2.0 * pairs * k + proj + b * tk * k,
                  (b * (tq + tk) * n + b * tq * q + 2 * b * tk * k) * a + n * (q + k) * self.w)
        wg = Work(proj + pairs * (3 * n if normalize else 2 * n),
                  (b * tq * q + b * tk * k + b * (tq + tk) * n) * a + p * self.g)
        return self._layer(name, "attention", f"q {q}, k {k}, n {n}, {tq} x {tk}", p, p, fwd, dx, wg, bp,
                           out=(tq, k))

    def conv2d(self, name: str, in_channels: int, out_channels: int, kernel: int | tuple[int, int], *,
               input_hw: int | tuple[int, int], stride: int = 1, padding: int = 0, groups: int = 1,
               bias: bool = False) -> LayerCost:
        """A 2-D convolution on a C_in x H x W input: output C_out x H_o x W_o,
        H_o = (H + 2*padding - k_h) // stride + 1 (likewise W_o).

        params = C_out*(C_in/groups)*k_h*k_w (+ C_out). MACs = B*H_o*W_o*C_out*(C_in/groups)*k_h*k_w;
        forward, input grad (the transposed convolution) and weight grad are 2*MACs each (+ B*H_o*W_o*C_out
        for the bias add and its gradient sum). Reads input and weights, writes output; backward reads dy
        and weights and writes dx; the weight gradient reads input and dy and writes dW.
        """
        kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
        h, w_ = (input_hw, input_hw) if isinstance(input_hw, int) else input_hw
        _positive(in_channels=in_channels, out_channels=out_channels, kernel=kh * kw, input_hw=h * w_,
                  stride=stride, groups=groups)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: channels {in_channels} -> {out_channels} do not divide into {groups} groups")
        ho, wo = (h + 2 * padding - kh) // stride + 1, (w_ + 2 * padding - kw) // stride + 1
        if ho < 1 or wo < 1:
            raise ValueError(f"{name}: a {kh}x{kw} kernel does not fit a {h}x{w_} input with padding {padding}")
        b, a, cin, cout = self.batch, self.a, in_channels, out_channels
        wts = cout * (cin // groups) * kh * kw
        p = wts + (cout if bias else 0)
        mm = 2.0 * b * ho * wo * wts
        badd = float(b * ho * wo * cout if bias else 0)
        x, y = b * cin * h * w_ * a, b * cout * ho * wo * a
        return self._layer(name, "conv2d", f"{cin} -> {cout}, {kh}x{kw}/{stride}, {h}x{w_} -> {ho}x{wo}", p, wts,
                           Work(mm + badd, x + p * self.w + y), Work(mm, y + p * self.w + x),
                           Work(mm + badd, x + y + p * self.g), out=(cout, ho, wo))

    def layer_norm(self, name: str, features: int, *, tokens_per_sample: int = 1) -> LayerCost:
        """Layer normalization over D features of N = batch x tokens_per_sample rows, with gain and bias.

        params = 2D. forward 7 FLOPs per element (mean, centre, square and sum, scale by 1/sigma, gain,
        bias); input grad 10 per element; weight grad 3 per element (dgain = sum dy*xhat, dbias = sum dy).
        Reads x, writes y; backward reads dy and x and writes dx; the weight gradient reads dy and x.
        """
        _positive(features=features, tokens_per_sample=tokens_per_sample)
        e, d, a = self.batch * tokens_per_sample * features, features, self.a
        return self._layer(name, "layer_norm", f"{d} x {tokens_per_sample} tok", 2 * d, 2 * d,
                           Work(7.0 * e, 2 * e * a + 2 * d * self.w), Work(10.0 * e, 3 * e * a + 2 * d * self.w),
                           Work(3.0 * e, 2 * e * a + 2 * d * self.g), out=(tokens_per_sample, d))

    def softmax(self, name: str, classes: int, *, tokens_per_sample: int = 1) -> LayerCost:
        """Softmax over C classes of N = batch x tokens_per_sample rows (also a softmax loss). No parameters.

        forward 5 FLOPs per element (max, subtract, exp, sum, divide), reading and writing N*C;
        input grad dx = y * (dy - sum(dy * y)): 4 per element, reading y and dy, writing dx.
        """
        _positive(classes=classes, tokens_per_sample=tokens_per_sample)
        e, a = self.batch * tokens_per_sample * classes, self.a
        return self._layer(name, "softmax", f"{classes} x {tokens_per_sample} tok", 0, 0,
                           Work(5.0 * e, 2 * e * a), Work(4.0 * e, 3 * e * a), Work(), out=(tokens_per_sample, classes))

    def custom(self, name: str, *, params: int, forward: Work, input_grad: Work = Work(),
               weight_grad: Work = Work(), backprop: Work = Work()) -> LayerCost:
        """A layer whose per-NPU work (for this builder's batch) the caller derived; all-reduces params x grad bytes."""
        if params < 0:
            raise ValueError(f"{name}: params must be >= 0, got {params}")
        return self._layer(name, "custom", "", params, params, forward, input_grad, weight_grad, backprop)

    # ------------------------------------------------------------------ output
    def build(self, *, dlrm_last_bottom: int | None = None) -> Workload:
        """The Workload, layers in the order they were added (forward data-flow order)."""
        if not self._layers:
            raise ValueError(f"workload {self.name!r} has no layers")
        layers = []
        for idx, lc in enumerate(self._layers):
            first = idx == 0  # the iteration runs no input gradient for layer 1
            ig = Work() if first else lc.input_grad + lc.backprop
            wg = lc.weight_grad + lc.backprop if first else lc.weight_grad
            comm = Comm("all_reduce", lc.allreduce_bytes) if lc.allreduce_bytes > 0 else None
            layers.append(Layer(lc.name, lc.forward.compute(), ig.compute(), wg.compute(), weight_grad_comm=comm,
                                update_s=lc.params * self.update_s_per_param))
        return Workload(self.name, self.parallelism, tuple(layers), dlrm_last_bottom=dlrm_last_bottom,
                        source=self.source)

    def table(self) -> str:
        """A Markdown table of the derivation: per layer shape, parameters, all-reduce bytes and FLOPs for this
        builder's batch. Backward = input grad + backprop + weight grad as derived (``build`` later drops the
        first layer's input gradient, which the iteration never runs)."""
        rows = ["| # | layer | kind | shape | params | all-reduce bytes | forward FLOPs | backward FLOPs |",
                "|---|---|---|---|---:|---:|---:|---:|"]
        for i, lc in enumerate(self._layers, 1):
            bwd = lc.input_grad.flops + lc.backprop.flops + lc.weight_grad.flops
            own = f"{lc.params:,}" + (f" (tied to {lc.tied_to})" if lc.tied_to else "")
            rows.append(f"| {i} | {lc.name} | {lc.kind} | {lc.shape} | {own} | {lc.allreduce_bytes:,.0f} | "
                        f"{lc.forward.flops:.4g} | {bwd:.4g} |")
        return "\n".join(rows)


def _positive(**values: float) -> None:
    for k, v in values.items():
        if not v > 0:
            raise ValueError(f"{k} must be > 0, got {v}")
