"""ASTRA-sim 1.0 compatible simulation mode (analytical backend), driven by codesign's event loop.

``simulate_astra(workload, network, system, passes)`` reads ASTRA-sim 1.0's own three input files and
reproduces what ASTRA-sim 1.0 reports for them: the time all passes finish, the total compute, the
exposed communication (finish - compute) and, per layer, compute, exposed (waiting) and total
communication time for the forward, input-gradient and weight-gradient collectives (ASTRA's
EndToEnd.csv columns). Everything is in ns, which are ASTRA's cycles of its 1 GHz clock; results are
whole ns because ASTRA truncates time to whole cycles.

The training loops follow ASTRA's Workload.cc, one per parallelism: DATA, MODEL, HYBRID_DLRM, MICRO, the
hybrid data/model loops (HYBRID_DATA_MODEL, HYBRID_MODEL_DATA, HYBRID_CUSTOMIZED) and the Transformer loops
(HYBRID_TRANSFORMER, HYBRID_TRANSFORMER_FWD_IN_BCKWD with checkpoints and forward re-computation). Each
step of a loop is a Sys event, every move between steps costs one cycle, waits register on the layer whose
collective is pending and resume when it finishes plus its update delay. The collectives run in
``astra.system.SystemLayer`` over the dimensions each layer involves (``involved_dimensions``); the
endpoint bus is ``astra.membus``. Semantics: docs/astra-sim-1.0.md; the loops beyond DATA, MODEL,
HYBRID_DLRM and MICRO, and where we followed ASTRA-sim's source over that page: docs/astra-sim-modes.md.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError, shown
from ..sim.events import EventLoop
from ..workload.astra import AstraLayer, AstraWorkload, TransformerHeader, parse_astra_workload, transformer_header
from .algorithms import A2A, AG, AR, RS
from .inputs import MAX_PASSES, AstraNetwork, AstraSystem, load_astra_network, load_astra_system
from .profile import FastPathFallback
from .system import ALL, SystemLayer

FWD, IG, WG, FIB = 0, 1, 2, 3          # FIB: ASTRA's Forward_In_BackPass (re-computation)
SUPPORTED = ("DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_CUSTOMIZED", "HYBRID_DLRM",
             "HYBRID_TRANSFORMER", "HYBRID_TRANSFORMER_FWD_IN_BCKWD", "MICRO", "DISTRIBUTED_INFERENCE")
#: the per-layer parallelisms HYBRID_CUSTOMIZED takes (its 13th field)
LAYER_PARALLELISMS = ("DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_DLRM", "MICRO")
_WAIT_END = "wait"
_TYPES = {"ALLREDUCE": AR, "ALLGATHER": AG, "REDUCESCATTER": RS, "ALLTOALL": A2A}
NONE_DIMS = (False,) * 10


@dataclass(frozen=True)
class AstraLayerStats:
    """Per-layer totals over all passes (ns), as ASTRA's EndToEnd.csv reports them.

    ``*_exposed_ns`` is the time the training loop sat waiting for that collective; ``*_comm_ns`` the
    collective's total time from issue to finish including the update delay.
    """

    name: str
    fwd_compute_ns: int
    ig_compute_ns: int
    wg_compute_ns: int
    fwd_exposed_ns: int
    ig_exposed_ns: int
    wg_exposed_ns: int
    fwd_comm_ns: int
    ig_comm_ns: int
    wg_comm_ns: int


@dataclass(frozen=True)
class AstraResult:
    """What an ASTRA-sim 1.0 run reports, in ns (= cycles)."""

    finish_time_ns: int
    compute_time_ns: int
    exposed_comm_time_ns: int
    passes: int
    npus: int
    parallelism: str
    events: int                      # engine events processed (fewer on the fast path)
    collectives: int
    chunks: int
    avg_chunk_latency_ns: tuple[float | None, ...]   # per dimension, init to leaving the queue
    pass_end_ns: tuple[int, ...]     # when each pass issued its last collective ("pass: N finished")
    layers: tuple[AstraLayerStats, ...]
    fast_path: bool = False          # the run used the fast path (same results; fewer engine events)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-ready); ``layers`` is a list of per-layer dicts."""
        d = asdict(self)
        d["avg_chunk_latency_ns"] = list(self.avg_chunk_latency_ns)
        d["pass_end_ns"] = list(self.pass_end_ns)
        d["layers"] = [asdict(layer) for layer in self.layers]
        return d


def involved_dimensions(policy: str, boundary: int = -1) -> tuple[tuple[bool, ...], ...]:
    """Workload::decode_involved_dimensions: the (fwd, ig, wg) logical dimensions a layer's collectives use.

    DATA-like loops reduce weight gradients over every dimension and nothing else; MODEL the reverse;
    HYBRID_DATA_MODEL puts the model-parallel collectives on dimension 0 and the data-parallel ones on the
    rest, HYBRID_MODEL_DATA the other way round; the Transformer loops split at ``boundary``, the last
    logical dimension of the model-parallel group (Sys::break_dimension).
    """
    if policy in ("DATA", "HYBRID_DLRM", "MICRO"):
        return NONE_DIMS, NONE_DIMS, ALL
    if policy in ("MODEL", "DISTRIBUTED_INFERENCE"):
        return ALL, ALL, NONE_DIMS
    if policy == "ALL":
        return ALL, ALL, ALL
    first = (True,) + (False,) * 9
    rest = (False,) + (True,) * 9
    if policy == "HYBRID_DATA_MODEL":
        return first, first, rest
    if policy == "HYBRID_MODEL_DATA":
        return rest, rest, first
    model = tuple(i <= boundary for i in range(10))
    data = tuple(i > boundary for i in range(10))
    return model, model, data


class _Layer:
    """A layer's pending collectives, waits and totals (ASTRA's Layer)."""

    def __init__(self, spec: AstraLayer, loop: _Loop, involved: tuple[tuple[bool, ...], ...]) -> None:
        self.spec = spec
        self.loop = loop
        self.sys = loop.sys
        self.comm = ((spec.fwd_comm_type, spec.fwd_comm_bytes), (spec.ig_comm_type, spec.ig_comm_bytes),
                     (spec.wg_comm_type, spec.wg_comm_bytes))
        self.involved = involved
        self.pending: tuple[list[Any], ...] = ([], [], [])
        self.waiting_since: tuple[list[int], ...] = ([], [], [])
        self.blocking = [False, False, False]
        self.compute = [0, 0, 0]
        self.exposed = [0, 0, 0]
        self.comm_total = [0, 0, 0]
        self.collectives = 0
        self.checkpoint = False        # HYBRID_TRANSFORMER_FWD_IN_BCKWD: re-computation starts here
        self.initiates = False         # ... and is started by this layer's input-gradient step

    def load_compute(self, kind: int) -> int:
        c = (self.spec.fwd_compute, self.spec.ig_compute, self.spec.wg_compute)[kind]
        self.compute[kind] += c
        return c

    def issue(self, kind: int, policy: str = "NONE", blocking: bool = False) -> None:
        """Layer::issue_*_comm with Sys::get_priority's policy (NONE: the system file's)."""
        self.blocking[kind] = blocking
        ctype, nbytes = self.comm[kind]
        coll = None if ctype == "NONE" else self.sys.generate(_TYPES[ctype], nbytes, policy,
                                                              self.involved[kind])
        if coll is None:                 # nothing to do: a blocking issue continues right away
            if blocking:
                self.loop.call()
            return
        self.collectives += 1
        self.pending[kind].append(coll)
        coll.callback, coll.arg = self._finished, (kind, coll)

    def finished_blocking(self, kind: int) -> bool:
        """True if no ``kind`` collective is pending; else note when the loop started waiting."""
        if not self.pending[kind]:
            return True
        if not self.waiting_since[kind]:
            self.waiting_since[kind].append(self.sys.tick())
        return False

    def _finished(self, arg: tuple[int, Any]) -> None:
        self.sys.register(self.spec.update_delay, self._after_update, arg)

    def _after_update(self, arg: tuple[int, Any]) -> None:
        kind, coll = arg
        coll.finish_tick += self.spec.update_delay
        self.comm_total[kind] += coll.finish_tick - coll.creation_tick
        pending, since = self.pending[kind], self.waiting_since[kind]
        wake = False
        if len(pending) == 1 and self.blocking[kind]:
            self.exposed[kind] += coll.finish_tick - coll.creation_tick
            wake = True
        elif since:
            self.exposed[kind] += coll.finish_tick - since.pop(0)
            wake = True
        pending.remove(coll)
        if wake:
            self.loop.call()
        self.sys.add_finished_streams(coll.total)


class _Loop:
    """ASTRA's Workload: the training loop as a state machine of Sys events."""

    def __init__(self, wl: AstraWorkload, sysl: SystemLayer, passes: int, last_bottom: int,
                 involved: list[tuple[tuple[bool, ...], ...]], header: TransformerHeader | None) -> None:
        self.sys = sysl
        self.path = wl.path
        self.passes = passes
        self.parallelism = wl.parallelism
        self.last_bottom = last_bottom
        self.layers = [_Layer(spec, self, inv) for spec, inv in zip(wl.layers, involved)]
        if header is not None:
            for i in header.checkpoints:
                self.layers[i].checkpoint = True
            for i in header.initiates:
                self.layers[i].initiates = True
        self.fwd_in_bckwd = wl.parallelism == "HYBRID_TRANSFORMER_FWD_IN_BCKWD"
        self.checkpoint_initiated = False
        self.state = FWD
        self.index = 0
        self.pass_counter = 0
        self.pass_ends: list[int] = []
        self.delay_loaded = False
        self.issued = False
        self.listening = False
        self.finish_tick: int | None = None
        # ``call`` (the Sys event and the layers' wake-up) is the parallelism's step itself
        self.call = {"DATA": self._data, "MODEL": self._model, "HYBRID_DLRM": self._dlrm,
                      "MICRO": self._micro, "HYBRID_DATA_MODEL": self._hybrid,
                      "HYBRID_MODEL_DATA": self._hybrid, "HYBRID_CUSTOMIZED": self._hybrid,
                      "HYBRID_TRANSFORMER": self._transformer,
                      "HYBRID_TRANSFORMER_FWD_IN_BCKWD": self._transformer,
                      "DISTRIBUTED_INFERENCE": self._inference}[wl.parallelism]

    def _check_end(self) -> None:
        if self.pass_counter != self.passes:
            return
        self.state = _WAIT_END
        sysl = self.sys
        if sysl.streams_finished != sysl.streams_injected:
            if not self.listening:
                sysl.finished_listeners.append(self.call)
                self.listening = True
                self.layers[0].finished_blocking(WG)   # as Workload::check_for_sim_end does
            return
        if self.finish_tick is None:
            self.finish_tick = sysl.tick()

    def _pass_done(self) -> None:
        self.pass_counter += 1
        self.pass_ends.append(self.sys.tick())

    def _compute(self, kind: int) -> bool:
        """Load this step's compute once; True while it is still running (a Sys event is pending)."""
        if self.delay_loaded:
            return False
        self.delay_loaded = True
        c = self.layers[self.index].load_compute(kind)
        if c > 0:
            self.sys.register(c, self.call)
            return True
        return False

    def _next(self, state: int) -> None:
        self.state = state
        self.delay_loaded = False
        self.issued = False
        self.sys.register(1, self.call)   # every move of the loop costs one cycle

    def _forward_end(self, backward: int) -> None:
        """Forward moves to the next layer; after the last one, the backward pass starts there."""
        self.index += 1
        if self.index == len(self.layers):
            self.index -= 1
            self._next(backward)
        else:
            self._next(FWD)

    def _blocking_forward(self, layer: Any) -> bool:
        """The forward of the model-parallel loops: wait for the layer's weight gradient of the last pass,
        compute, then issue the forward collective and wait for it. True once all of that is done."""
        if not layer.finished_blocking(WG) or self._compute(FWD):
            return False
        if not self.issued:
            self.issued = True
            layer.issue(FWD, blocking=True)   # resumes this loop when it finishes
            return False
        return True

    def _weight_grad(self, layer: Any, policy: str) -> bool:
        """Compute the weight gradient, issue its collective once, then wait for the layer's input-gradient
        collective. True once the layer's backward is done."""
        if self._compute(WG):
            return False
        if not self.issued:
            self.issued = True
            layer.issue(WG, policy)
        return layer.finished_blocking(IG)

    def _data(self, _: Any = None) -> None:
        if self.pass_counter == self.passes:
            self._check_end()
        layer = self.layers[self.index]
        if self.state == FWD:
            if not layer.finished_blocking(WG) or self._compute(FWD):
                return
            self._forward_end(WG)
        elif self.state == WG:
            if self._compute(WG):
                return
            layer.issue(WG)
            if self.index == 0:
                self._pass_done()
                self._next(FWD)
            else:
                self._next(IG)
        elif self.state == IG:
            if self._compute(IG):
                return
            self.index -= 1
            self._next(WG)

    def _model(self, _: Any = None) -> None:
        if self.pass_counter == self.passes:
            self._check_end()
        layer = self.layers[self.index]
        if self.state == FWD:
            if self._blocking_forward(layer):
                self._forward_end(IG)
        elif self.state == WG:
            if self._compute(WG) or not layer.finished_blocking(IG):
                return
            self._backward_end()
        elif self.state == IG:
            if self._compute(IG):
                return
            if not self.issued and self.index > 0:
                layer.issue(IG, "LIFO")
            self._next(WG)

    def _inference(self, _: Any = None) -> None:
        """Workload::iterate_distributed_inference: forward passes only, each layer's collective blocking."""
        if self.pass_counter == self.passes:
            self._check_end()
        if self.state == FWD and self._blocking_forward(self.layers[self.index]):
            self.index += 1
            if self.index == len(self.layers):
                self.index = 0
                self._pass_done()
            self._next(FWD)

    def _backward_end(self) -> None:
        """Weight gradient done: the layer below, or the end of the pass after layer 1."""
        self.index -= 1
        if self.index < 0:
            self.index = 0
            self._pass_done()
            self._next(FWD)
        else:
            self._next(IG)

    def _hybrid(self, _: Any = None) -> None:
        """iterate_hybrid_parallel_data_model / _model_data / _customized (the same loop in ASTRA)."""
        if self.pass_counter == self.passes:
            self._check_end()
        layer = self.layers[self.index]
        if self.state == FWD:
            if self._blocking_forward(layer):
                self._forward_end(IG)
        elif self.state == WG:
            if self._weight_grad(layer, "FIFO"):
                self._backward_end()
        elif self.state == IG:
            if self._compute(IG):
                return
            if self.index > 0:
                layer.issue(IG, "LIFO")
            self._next(WG)

    def _transformer(self, _: Any = None) -> None:
        """iterate_hybrid_parallel_Transformer and _Transformer_fwd_in_bckwd (re-computation)."""
        if self.pass_counter == self.passes:
            self._check_end()
        layer = self.layers[self.index]
        state = self.state
        if state == FWD or state == FIB:
            if not self._blocking_forward(layer):
                return
            if state == FWD:
                self._forward_end(IG)
                return
            self.index += 1                     # re-computing: up to the layer that started it
            if self.index == len(self.layers):
                raise SpecError("the forward re-computation ran past the last layer without reaching a "
                                "layer of checkpoint_initiates (ASTRA-sim 1.0 would read past its layers)",
                                file=self.path, line=1)
            self._next(IG if self.layers[self.index].initiates else FIB)
        elif state == WG:
            if self._weight_grad(layer, "FIFO"):
                self._backward_end()
        elif state == IG:
            if self.fwd_in_bckwd and layer.initiates and not self.checkpoint_initiated:
                i = self.index
                while not self.layers[i].checkpoint:   # down to the nearest checkpoint
                    i -= 1
                    if i < 0:
                        raise SpecError(f"layer {self.index} is in checkpoint_initiates but no checkpoint "
                                        "lies at or below it (ASTRA-sim 1.0 would read before layer 0)",
                                        file=self.path, line=1)
                self.index = i
                self.checkpoint_initiated = True
                self._next(FIB)
                return
            if self._compute(IG):
                return
            if not self.issued:
                layer.issue(IG, "LIFO")
            self.checkpoint_initiated = False
            self._next(WG)

    def _dlrm(self, _: Any = None) -> None:
        if self.pass_counter == self.passes:
            self._check_end()
        layer = self.layers[self.index]
        if self.state == FWD:
            if not layer.finished_blocking(WG) or self._compute(FWD):
                return
            if not self.issued and layer.spec.fwd_comm_type == "ALLTOALL":
                self.issued = True
                layer.issue(FWD, "HIGHEST")           # embedding lookup: non-blocking, first
            elif self.index == self.last_bottom and not self.layers[0].finished_blocking(FWD):
                return                                # the top MLP needs the embeddings
            self._forward_end(WG)
        elif self.state == WG:
            if not self._weight_grad(layer, "NONE"):
                return
            if self.index == 0:
                self._pass_done()
                self._next(FWD)
            else:
                self._next(IG)
        elif self.state == IG:
            if self._compute(IG):
                return
            if self.index == self.last_bottom + 1:
                self.layers[0].issue(IG, "HIGHEST")   # embedding gradients back to their owners
            self.index -= 1
            self._next(WG)

    def _micro(self, _: Any = None) -> None:
        if self.state != _WAIT_END:
            for _ in range(self.passes):
                self.layers[0].issue(WG)
            self.pass_counter = self.passes
        self._check_end()


def _label(name: str) -> str:
    """A layer's name for a message: the file may be anything the user named, so at most 20 characters."""
    return name if len(name) <= 20 else name[:20] + "..."


def _layer_policies(wl: AstraWorkload) -> list[str]:
    """Each layer's parallelism for involved_dimensions: the workload's, HYBRID_CUSTOMIZED's 13th field,
    ALL for DLRM's embedding layer (as Workload::initialize_workload)."""
    out = []
    for i, layer in enumerate(wl.layers):
        if wl.parallelism == "HYBRID_CUSTOMIZED":
            p = layer.parallelism or ""
            if p not in LAYER_PARALLELISMS:
                raise SpecError(f"layer {_label(layer.name)}: HYBRID_CUSTOMIZED needs each layer's parallelism "
                                f"as its 13th field, one of {', '.join(LAYER_PARALLELISMS)}; got {shown(p, 20)}",
                                file=wl.path, line=layer.line)
            out.append(p)
        elif wl.parallelism == "HYBRID_DLRM" and i == 0:
            out.append("ALL")
        else:
            out.append(wl.parallelism)
    return out


def _issued_kinds(parallelism: str, i: int, count: int, layer: AstraLayer, last_bottom: int) -> list[str]:
    """The collectives (fwd, ig, wg) the loop of ``parallelism`` issues for layer ``i`` of ``count``."""
    if parallelism == "DATA":
        return ["wg"]
    if parallelism == "MICRO":
        return ["wg"] if i == 0 else []
    if parallelism == "MODEL":
        return ["fwd"] + (["ig"] if i > 0 else [])
    if parallelism == "DISTRIBUTED_INFERENCE":
        return ["fwd"]
    if parallelism == "HYBRID_DLRM":
        return (["wg"] + (["fwd"] if layer.fwd_comm_type == "ALLTOALL" else [])
                + (["ig"] if i == 0 and last_bottom + 1 < count else []))
    if parallelism.startswith("HYBRID_TRANSFORMER"):
        return ["fwd", "ig", "wg"]
    return ["fwd", "wg"] + (["ig"] if i > 0 else [])     # the hybrid data/model loops


def break_dimension(npus: list[int], group: int) -> tuple[list[tuple[int, int, int]], int, int | None]:
    """Sys::break_dimension: the logical dimensions for a model-parallel group of ``group`` NPUs.

    Returns (logical dimensions as (NPUs, physical dimension, stride inside it), the last logical dimension
    of the model-parallel group (-1: none), the physical dimension that was split or None). Dimensions
    fill the group from dimension 0 up; the one where the group ends inside is split in two.
    """
    whole = [(n, d, 1) for d, n in enumerate(npus)]
    if group == 1:
        return whole, -1, None
    below = 1
    for d, n in enumerate(npus):
        if below * n < group:
            below *= n
        elif below * n > group:
            first = group // below
            second = n // first
            return whole[:d] + [(first, d, 1), (second, d, first)] + whole[d + 1:], d, d
        else:
            return whole, d, None
    return whole, -1, None


def _plan_dimensions(wl: AstraWorkload, net: AstraNetwork, system: AstraSystem, header: TransformerHeader | None
                     ) -> tuple[list[tuple[int, int, int]] | None, dict[str, tuple[str, ...]] | None, int]:
    """Logical dimensions, per-type algorithms and the Transformer boundary; refuses what is not replayed."""
    npus = [d.npus for d in net.dims]
    impls = {AR: system.all_reduce_implementation, AG: system.all_gather_implementation,
             RS: system.reduce_scatter_implementation, A2A: system.all_to_all_implementation}
    if header is None:
        return None, None, -1
    group = header.group
    where = dict(file=wl.path, line=wl.header_line, path="model_parallel_NPU_group")
    ldims, boundary, split = break_dimension(npus, group)
    if split is None:
        return ldims, impls, boundary
    below = 1
    for n in npus[:split]:
        below *= n
    n = npus[split]
    if group % below or n % (group // below):
        raise SpecError(f"{group} NPUs do not split dimension {split} ({n} NPUs, {below} NPUs below it) "
                        "evenly; ASTRA-sim 1.0 would build a logical topology with the wrong NPU count",
                        **where)
    first = group // below
    topo = net.dims[split].topology
    # a ring of first > 2 NPUs cut from a longer ring closes over first - 1 hops: its ring phases are timed over
    # its NPUs (ringSplit), a direct phase's peers are as uneven and is refused; halving-doubling stays even
    uneven = topo == "Ring" and first > 2 and first < n
    out = {}
    for ctype, impl in impls.items():
        bad = [a for a in impl if a.startswith("one") or a == "doubleBinaryTree"]
        if bad or len(impl) <= split:
            key = {AR: "all-reduce", AG: "all-gather", RS: "reduce-scatter", A2A: "all-to-all"}[ctype]
            raise SpecError(f"the model-parallel group splits dimension {split}; codesign's mode replays a "
                            f"split dimension only with ring, direct or halvingDoubling per dimension "
                            f"(ASTRA-sim 1.0 crashes on doubleBinaryTree there), got {'_'.join(impl)}",
                            file=system.path, path=f"{key}-implementation",
                            line=system.line_of(f"{key}-implementation"))
        inner = impl[split]
        if uneven and inner.startswith("direct"):
            key = {AR: "all-reduce", AG: "all-gather", RS: "reduce-scatter", A2A: "all-to-all"}[ctype]
            raise SpecError(f"the group splits Ring dimension {split} into rings of {first} and {n // first} NPUs; "
                            f"the ring of {first} closes over {first - 1} hops, so a direct phase's NPUs do not all "
                            "see the same message times, which codesign's mode does not replay; use ring or "
                            "halvingDoubling", file=system.path, path=f"{key}-implementation",
                            line=system.line_of(f"{key}-implementation"))
        out[ctype] = impl[:split] + ("ringSplit" if uneven and inner == "ring" else inner,) + impl[split:]
    return ldims, out, boundary


def _boost_mode(system: AstraSystem) -> None:
    """``boost-mode: 1`` runs only the NPUs of NPU 0's ring in each dimension (Sys.cc enables a dimension's
    queues on them, RingTopology::is_enabled the algorithms): those are the NPUs whose messages NPU 0's
    timeline waits for, and that timeline is the one codesign replays, so ring, direct and halving-doubling
    phases (per dimension or over all NPUs, where every NPU is in NPU 0's ring) time the same. A double binary
    tree waits on NPUs beyond that ring, which boost mode does not run: refused."""
    key = "boost-mode"
    where = dict(file=system.path, path=key, line=system.line_of(key))
    if system.boost_mode not in (0, 1):
        raise SpecError(f"expected 0 or 1, got {system.boost_mode}", **where)
    impls = (system.all_reduce_implementation, system.reduce_scatter_implementation,
             system.all_gather_implementation, system.all_to_all_implementation)
    if system.boost_mode == 1 and any("doubleBinaryTree" in impl for impl in impls):
        raise SpecError("1 with doubleBinaryTree is not implemented by codesign's ASTRA-sim mode (the tree waits "
                        "on NPUs that boost mode does not run); use 0", **where)


def _inter_dimension(system: AstraSystem, sysl: SystemLayer) -> None:
    """baseline/ascending, and Themis (themis/offlineGreedy, astra.themis) on the physical dimensions with
    ring, direct and halving-doubling phases; the rest is refused."""
    key = "inter-dimension-scheduling"
    where = dict(file=system.path, path=key, line=system.line_of(key))
    value = system.inter_dimension_scheduling
    if value in ("baseline", "ascending"):
        return
    if value not in ("themis", "offlineGreedy"):
        raise SpecError(f"{value} is not implemented by codesign's ASTRA-sim mode; use baseline or themis", **where)
    natural = [(d, 1) for d in range(len(sysl.timing.npus))]
    if [(pd, stride) for _, pd, stride in sysl.ldims] != natural:
        raise SpecError(f"{value} with a model-parallel group that splits a dimension is not implemented by "
                        "codesign's ASTRA-sim mode; use baseline", **where)
    impls = (system.all_reduce_implementation, system.reduce_scatter_implementation,
             system.all_gather_implementation)
    if any(a.startswith("one") or a == "doubleBinaryTree" for impl in impls for a in impl):
        raise SpecError(f"{value} is replayed with ring, direct and halvingDoubling per dimension; not with "
                        "doubleBinaryTree or one* implementations", **where)
    if sysl.themis is not None and not sysl.themis.bw[0] > 0:
        raise SpecError(f"{value} divides by dimension 0's NPU bandwidth, which is 0 here (its links-count leaves "
                        "no usable link; ASTRA-sim 1.0 fails on it)", **where)


def _validate(wl: AstraWorkload, system: AstraSystem, sysl: SystemLayer,
              involved: list[tuple[tuple[bool, ...], ...]]) -> int:
    """Reject what ASTRA-sim 1.0 would hang or crash on, or what this mode does not implement."""
    if not wl.layers:
        raise SpecError("the workload has no layers", file=wl.path, line=2)
    last_bottom = -1
    if wl.parallelism == "HYBRID_DLRM":
        arg = wl.args[0] if wl.args else ""
        if not (arg.isascii() and arg.isdigit()) or int(arg) + 1 >= len(wl.layers):
            raise SpecError(f"HYBRID_DLRM needs the 0-based index of the last bottom-MLP layer, below "
                            f"{len(wl.layers) - 1} so a top layer follows it (e.g. 'HYBRID_DLRM 4'), "
                            f"got {shown(arg, 20)}", file=wl.path, line=1)
        last_bottom = int(arg)
    _boost_mode(system)
    if system.intra_dimension_scheduling not in ("FIFO", "SCF", "smallestFirst"):
        key = "intra-dimension-scheduling"
        raise SpecError(f"{system.intra_dimension_scheduling} is not implemented by codesign's ASTRA-sim mode; use "
                        "FIFO or SCF", file=system.path, path=key, line=system.line_of(key))
    _inter_dimension(system, sysl)
    splits = system.preferred_dataset_splits
    kinds = {"fwd": FWD, "ig": IG, "wg": WG}
    for i, layer in enumerate(wl.layers):
        for kind in _issued_kinds(wl.parallelism, i, len(wl.layers), layer, last_bottom):
            ctype, nbytes = getattr(layer, f"{kind}_comm_type"), getattr(layer, f"{kind}_comm_bytes")
            if ctype == "NONE":
                continue
            plan = sysl.plan(_TYPES[ctype], involved[i][kinds[kind]])
            if not plan:                       # no dimension takes part: ASTRA skips it
                continue
            if sysl.bus is not None and any(a in ("doubleBinaryTree", "oneRing", "oneDirect", "oneHalvingDoubling",
                                                  "ringSplit")
                                            for _, a, _ in plan):
                raise SpecError("model-shared-bus is replayed with ring, direct and halvingDoubling "
                                "phases only; doubleBinaryTree, oneRing and oneDirect are timed in closed "
                                "form from fixed endpoint delays (oneHalvingDoubling with the bus is not "
                                "checked against ASTRA-sim)", file=system.path,
                                path="model-shared-bus", line=system.line_of("model-shared-bus"))
            if nbytes < splits:
                raise SpecError(f"layer {_label(layer.name)}: {kind} {ctype} of {nbytes} bytes cannot be split into "
                                f"{splits} chunks (preferred-dataset-splits); ASTRA-sim 1.0 would never "
                                "finish it", file=wl.path, line=layer.line)
    return last_bottom


def _membus(system: AstraSystem, host: SystemLayer) -> Any:
    """The LogGP shared bus (membus.MemBus) when the system file asks for it (model-shared-bus: 1), else None."""
    if system.model_shared_bus != 1:
        return None
    from .membus import MemBus
    lg = system.loggp
    missing = [k for k in ("L", "o", "g", "G") if k not in lg]
    if missing:
        raise SpecError(f"model-shared-bus: 1 needs the LogGP parameters L, o, g and G; {', '.join(missing)} "
                        "missing (ASTRA-sim 1.0 leaves them uninitialised)", file=system.path,
                        path=missing[0], line=system.line_of("model-shared-bus"))
    return MemBus(host, True, system.endpoint_delay, int(lg["L"]), int(lg["o"]), int(lg["g"]), lg["G"],
                  system.local_reduction_delay)


def _run(wl: AstraWorkload, net: AstraNetwork, system: AstraSystem, passes: int, ldims: Any, impls: Any,
         involved: list[tuple[tuple[bool, ...], ...]], header: TransformerHeader | None,
         fast: bool) -> tuple[EventLoop, SystemLayer, _Loop]:
    engine = EventLoop()
    sysl = SystemLayer(engine, net, system, ldims, impls)
    sysl.bus = _membus(system, sysl)
    sysl.set_fast(fast and sysl.bus is None)
    last_bottom = _validate(wl, system, sysl, involved)
    loop = _Loop(wl, sysl, passes, last_bottom, involved, header)
    loop.call()                       # Workload::fire at time 0
    engine.run()
    if loop.finish_tick is None:      # cannot happen for the supported loops; guard against hangs
        raise RuntimeError("ASTRA-sim mode stopped before the workload finished")
    return engine, sysl, loop


def simulate_astra(workload_path: str | Path, network_path: str | Path, system_path: str | Path,
                   passes: int = 1, *, confine_to: Path | None = None, fast: bool = True) -> AstraResult:
    """Run ASTRA-sim 1.0's analytical simulation of ``passes`` training passes; results in ns.

    Raises SpecError for a missing or malformed input file, for inputs ASTRA-sim 1.0 would hang or
    crash on, and for the features this mode does not implement (named in the message). ``confine_to``
    refuses input files outside that folder (``codesign.spec.files.read_user_file``).

    ``fast`` (the default) replays ring, direct and halving-doubling phases from per-size profiles
    (``astra.profile``) where that is provably the same as the packet-level general path, and falls back to
    the general path for the whole run where it cannot tell; ``fast=False`` always runs the general path.
    Both give the same nanoseconds; ``AstraResult.fast_path`` says which one ran.
    """
    if isinstance(passes, bool) or not isinstance(passes, int) or not 1 <= passes <= MAX_PASSES:
        raise SpecError(f"passes must be a whole number from 1 to {MAX_PASSES:,}, got {shown(passes)}")
    wl = parse_astra_workload(workload_path, confine_to=confine_to)
    net: AstraNetwork = load_astra_network(network_path, confine_to=confine_to)
    system: AstraSystem = load_astra_system(system_path, confine_to=confine_to)
    if wl.parallelism not in SUPPORTED:
        raise SpecError(f"parallelism {wl.parallelism} is not implemented by codesign's ASTRA-sim mode; "
                        f"supported: {', '.join(SUPPORTED)}", file=wl.path, line=wl.header_line)
    header = transformer_header(wl) if wl.parallelism.startswith("HYBRID_TRANSFORMER") else None
    ldims, impls, boundary = _plan_dimensions(wl, net, system, header)
    policies = _layer_policies(wl)
    involved = [involved_dimensions(p, boundary) for p in policies]
    try:
        engine, sysl, loop = _run(wl, net, system, passes, ldims, impls, involved, header, fast=fast)
        used_fast = sysl.fast
    except FastPathFallback:
        engine, sysl, loop = _run(wl, net, system, passes, ldims, impls, involved, header, fast=False)
        used_fast = False
    compute = sum(sum(layer.compute) for layer in loop.layers)
    rows = tuple(AstraLayerStats(layer.spec.name, *layer.compute, *layer.exposed, *layer.comm_total)
                 for layer in loop.layers)
    return AstraResult(
        finish_time_ns=loop.finish_tick, compute_time_ns=compute,
        exposed_comm_time_ns=loop.finish_tick - compute, passes=passes, npus=net.npus,
        parallelism=wl.parallelism, events=engine.events,
        collectives=sum(layer.collectives for layer in loop.layers), chunks=sysl.streams_injected,
        avg_chunk_latency_ns=tuple(q.latency_ns / q.chunks if q.chunks else None for q in sysl.queues),
        pass_end_ns=tuple(loop.pass_ends), layers=rows, fast_path=used_fast)
