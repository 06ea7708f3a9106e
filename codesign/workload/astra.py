"""Importer for ASTRA-sim 1.0 text workloads (format: docs/astra-sim-1.0.md, "Inputs").

Line 1 is the parallelism (``DATA``, ``MODEL``, ``HYBRID_DLRM <b>``, ``MICRO``, ...), line 2 the layer
count, then one line per layer with 12 whitespace-separated fields (13 for ``HYBRID_CUSTOMIZED``):
name, reserved, fwd compute, fwd comm type, fwd comm bytes, ig compute, ig comm type, ig comm bytes,
wg compute, wg comm type, wg comm bytes, update delay. Compute and update delay are in cycles of the
workload clock (1 GHz in ASTRA-sim 1.0, so 1 cycle = 1 ns); communication is in bytes.

``parse_astra_workload`` keeps the raw records (cycles, ASTRA names) for the ASTRA-compatible simulator;
``astra_to_workload`` converts them to codesign's Workload in SI units.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import SpecError, shown
from ..spec.files import read_user_file
from .model import Comm, Compute, Issue, Layer, Step, Workload

ASTRA_COMM_TYPES = {"NONE": None, "ALLREDUCE": "all_reduce", "ALLGATHER": "all_gather",
                    "REDUCESCATTER": "reduce_scatter", "ALLTOALL": "all_to_all"}
ASTRA_PARALLELISMS = {"DATA": "data", "MODEL": "model", "HYBRID_DATA_MODEL": "hybrid_data_model",
                      "HYBRID_MODEL_DATA": "hybrid_model_data", "HYBRID_DLRM": "hybrid_dlrm",
                      "MICRO": "micro", "HYBRID_CUSTOMIZED": "hybrid_customized",
                      "HYBRID_TRANSFORMER": "hybrid_transformer",
                      "HYBRID_TRANSFORMER_FWD_IN_BCKWD": "hybrid_transformer_fwd_in_bckwd",
                      "DISTRIBUTED_INFERENCE": "distributed_inference"}
#: Names ASTRA-sim 1.0 reads as another loop: Workload.cc runs HYBRID_DLRM_ENHANCED as HYBRID_DLRM (the same
#: iterate function, the last bottom layer read the same way, layer 0 on every dimension).
ASTRA_ALIASES = {"HYBRID_DLRM_ENHANCED": "HYBRID_DLRM"}
#: Every loop imports: codesign's MILP schedules them all (``astra_to_workload``).
SUPPORTED = tuple(ASTRA_PARALLELISMS)


@dataclass(frozen=True)
class AstraLayer:
    """One layer line, as ASTRA-sim reads it (cycles and bytes, ASTRA comm-type names)."""

    name: str
    fwd_compute: int
    fwd_comm_type: str
    fwd_comm_bytes: int
    ig_compute: int
    ig_comm_type: str
    ig_comm_bytes: int
    wg_compute: int
    wg_comm_type: str
    wg_comm_bytes: int
    update_delay: int
    parallelism: str | None = None  # HYBRID_CUSTOMIZED's 13th field
    line: int = 0


@dataclass(frozen=True)
class AstraWorkload:
    """A parsed ASTRA-sim 1.0 workload file."""

    path: str
    parallelism: str          # ASTRA's word, e.g. "HYBRID_DLRM"
    args: tuple[str, ...]     # the rest of line 1, e.g. ("4",) for HYBRID_DLRM
    layers: tuple[AstraLayer, ...]
    header_line: int = 1


def _int(tok: str, file: str, line: int, what: str) -> int:
    if tok.isascii() and tok.isdigit():   # the common case: plain digits
        return int(tok)
    try:
        v = float(tok)
    except ValueError:
        raise SpecError(f"{what}: expected a number, got {shown(tok, 20)}", file=file, line=line) from None
    if not math.isfinite(v) or v < 0 or v != int(v):
        raise SpecError(f"{what}: expected a whole number >= 0, got {shown(tok, 20)}", file=file, line=line)
    return int(v)


def _comm_type(tok: str, file: str, line: int, what: str) -> str:
    if tok not in ASTRA_COMM_TYPES:
        raise SpecError(f"{what}: unknown communication type {shown(tok, 20)}; expected one of "
                        f"{', '.join(ASTRA_COMM_TYPES)}", file=file, line=line)
    return tok


def parse_astra_workload(path: str | Path, *, confine_to: Path | None = None) -> AstraWorkload:
    """Read an ASTRA-sim 1.0 workload file; a malformed file raises SpecError with its line number. A bad
    token is quoted at most 20 characters long: the file may be anything the user named (``/etc/passwd``).
    ``confine_to``: refuse a file outside this folder (``read_user_file``)."""
    file = str(path)
    text = read_user_file(path, what="workload file", confine_to=confine_to)
    rows = [(i + 1, ln.split()) for i, ln in enumerate(text.splitlines())]
    rows = [(n, toks) for n, toks in rows if toks]
    if not rows:
        raise SpecError("empty workload file; expected the parallelism on line 1", file=file, line=1)
    n0, head = rows[0]
    head = [ASTRA_ALIASES.get(head[0], head[0]), *head[1:]]
    if head[0] not in ASTRA_PARALLELISMS:
        raise SpecError(f"unknown parallelism {shown(head[0], 20)}; expected one of "
                        f"{', '.join([*ASTRA_PARALLELISMS, *ASTRA_ALIASES])}", file=file, line=n0)
    if len(rows) < 2:
        raise SpecError("missing the layer count on line 2", file=file, line=n0 + 1)
    n1, count_toks = rows[1]
    count = _int(count_toks[0], file, n1, "layer count")
    body = rows[2:]
    if len(body) != count:
        raise SpecError(f"the layer count says {count} layers but the file has {len(body)} layer "
                        f"lines", file=file, line=n1)
    width = 13 if head[0] == "HYBRID_CUSTOMIZED" else 12
    layers = []
    for n, toks in body:
        if len(toks) < width:
            raise SpecError(f"layer line has {len(toks)} fields; expected {width} (name reserved "
                            "fwd_compute fwd_comm_type fwd_comm_bytes ig_compute ig_comm_type "
                            "ig_comm_bytes wg_compute wg_comm_type wg_comm_bytes update_delay)",
                            file=file, line=n)
        name = toks[0]
        label = name if len(name) <= 20 else name[:20] + "..."  # for messages
        layers.append(AstraLayer(
            name=name,
            fwd_compute=_int(toks[2], file, n, f"layer {label} forward compute"),
            fwd_comm_type=_comm_type(toks[3], file, n, f"layer {label} forward comm type"),
            fwd_comm_bytes=_int(toks[4], file, n, f"layer {label} forward comm bytes"),
            ig_compute=_int(toks[5], file, n, f"layer {label} input-grad compute"),
            ig_comm_type=_comm_type(toks[6], file, n, f"layer {label} input-grad comm type"),
            ig_comm_bytes=_int(toks[7], file, n, f"layer {label} input-grad comm bytes"),
            wg_compute=_int(toks[8], file, n, f"layer {label} weight-grad compute"),
            wg_comm_type=_comm_type(toks[9], file, n, f"layer {label} weight-grad comm type"),
            wg_comm_bytes=_int(toks[10], file, n, f"layer {label} weight-grad comm bytes"),
            update_delay=_int(toks[11], file, n, f"layer {label} update delay"),
            parallelism=toks[12] if width == 13 else None,
            line=n))
    return AstraWorkload(path=file, parallelism=head[0], args=tuple(head[1:]), layers=tuple(layers),
                         header_line=n0)


@dataclass(frozen=True)
class TransformerHeader:
    """Line 1 of a HYBRID_TRANSFORMER workload: the model-parallel group and, for
    HYBRID_TRANSFORMER_FWD_IN_BCKWD, the checkpoint layers and the layers that start a re-computation."""

    group: int                          # model_parallel_NPU_group: NPUs of one model-parallel group
    checkpoints: tuple[int, ...] = ()   # 0-based layer indices
    initiates: tuple[int, ...] = ()     # checkpoint_initiates, 0-based layer indices


def transformer_header(aw: AstraWorkload) -> TransformerHeader:
    """Read ``model_parallel_NPU_group: G`` and, for ..._FWD_IN_BCKWD, ``checkpoints: K l1 .. lK
    checkpoint_initiates: M i1 .. iM`` from line 1, as ASTRA-sim 1.0 reads them (a label, then numbers)."""
    file, line = aw.path, aw.header_line
    toks = list(aw.args)
    labels = ["model_parallel_NPU_group:"]
    if aw.parallelism == "HYBRID_TRANSFORMER_FWD_IN_BCKWD":
        labels += ["checkpoints:", "checkpoint_initiates:"]
    usage = " ".join(f"{lab} {'G' if i == 0 else 'K l1 .. lK'}" for i, lab in enumerate(labels))
    pos = 0

    def take(what: str) -> int:
        nonlocal pos
        if pos >= len(toks):
            raise SpecError(f"{aw.parallelism} needs '{usage}' on line 1; {what} is missing", file=file,
                            line=line)
        v = _int(toks[pos], file, line, what)
        pos += 1
        return v

    values: list[tuple[int, ...]] = []
    for i, label in enumerate(labels):
        if pos >= len(toks) or toks[pos] != label:
            got = shown(toks[pos], 20) if pos < len(toks) else "nothing"
            raise SpecError(f"{aw.parallelism} needs '{usage}' on line 1; expected {label!r}, got {got}",
                            file=file, line=line)
        pos += 1
        if i == 0:
            values.append((take("model_parallel_NPU_group"),))
            continue
        count = take(f"the number of {label[:-1]}")
        values.append(tuple(take(f"{label[:-1]} layer") for _ in range(count)))
    if pos != len(toks):
        raise SpecError(f"unexpected {shown(toks[pos], 20)} on line 1; expected '{usage}'", file=file, line=line)
    group = values[0][0]
    if group < 1:
        raise SpecError(f"model_parallel_NPU_group must be at least 1, got {group}", file=file, line=line)
    for label, layers in zip(labels[1:], values[1:]):
        for i in layers:
            if i >= len(aw.layers):
                raise SpecError(f"{label[:-1]} layer {i} does not exist; the workload has layers 0.."
                                f"{len(aw.layers) - 1}", file=file, line=line)
    return TransformerHeader(group, *values[1:])


#: The loops whose iteration comes from walking ASTRA-sim's state machine (``astra_program``); DATA,
#: HYBRID_DLRM and MICRO run codesign's own loops for them (``schedule.iteration``), which are the same.
PROGRAM_LOOPS = ("MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_CUSTOMIZED", "HYBRID_TRANSFORMER",
                 "HYBRID_TRANSFORMER_FWD_IN_BCKWD", "DISTRIBUTED_INFERENCE")
#: HYBRID_CUSTOMIZED's per-layer parallelisms (its 13th field)
LAYER_PARALLELISMS = ("DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_DLRM", "MICRO")
_KINDS = ("forward", "input_grad", "weight_grad")


def _label(name: str) -> str:
    return name if len(name) <= 20 else name[:20] + "..."


def model_parallel_boundary(group: int, sizes: tuple[int, ...], *, file: str, line: int) -> int:
    """The last dimension of a model-parallel group of ``group`` NPUs on dimensions of ``sizes`` NPUs, as
    ASTRA-sim's ``Sys::break_dimension`` fills it from dimension 0 up: -1 when the group is 1 NPU or more
    than the network (everything data parallel). A group that ends inside a dimension is refused: ASTRA
    splits that dimension in two logical ones, and codesign's collectives span whole dimensions."""
    if group == 1:
        return -1
    below = 1
    for d, n in enumerate(sizes):
        if below * n < group:
            below *= n
        elif below * n == group:
            return d
        else:
            first = group // below if group % below == 0 else None
            how = (f"write it as two dimensions of {first} and {n // first} NPUs in the problem's topology to "
                   "model the group" if first and n % first == 0 else "no split of it gives the group")
            raise SpecError(f"model_parallel_NPU_group {group} ends inside topology.dims[{d}] ({n} NPUs, {below} "
                            f"NPU(s) in the dimensions below it): codesign's collectives span whole dimensions, so "
                            f"it cannot solve this mapping ({how})", file=file, line=line,
                            path="model_parallel_NPU_group")
    return -1


def involved_dims(policy: str, boundary: int, ndims: int) -> tuple[tuple[int, ...], ...]:
    """Workload::decode_involved_dimensions on codesign's dimensions: the (forward, input-gradient,
    weight-gradient) dimensions of a layer whose parallelism is ``policy`` (docs/astra-sim-modes.md,
    "Which dimensions a collective uses"); ``boundary`` is the Transformer group's last dimension."""
    every = tuple(range(ndims))
    if policy in ("DATA", "HYBRID_DLRM", "MICRO"):
        return (), (), every
    if policy in ("MODEL", "DISTRIBUTED_INFERENCE"):
        return every, every, ()
    if policy == "ALL":
        return every, every, every
    if policy == "HYBRID_DATA_MODEL":
        return every[:1], every[:1], every[1:]
    if policy == "HYBRID_MODEL_DATA":
        return every[1:], every[1:], every[:1]
    return every[:boundary + 1], every[:boundary + 1], every[boundary + 1:]   # the Transformer loops


def _issued(parallelism: str, i: int, count: int, layer: AstraLayer, last_bottom: int) -> tuple[str, ...]:
    """The collectives (forward, input_grad, weight_grad) ASTRA's loop for ``parallelism`` issues for layer i."""
    if parallelism == "DATA":
        return ("weight_grad",)
    if parallelism == "MICRO":
        return ("weight_grad",) if i == 0 else ()
    if parallelism == "MODEL":
        return ("forward",) + (("input_grad",) if i > 0 else ())
    if parallelism == "DISTRIBUTED_INFERENCE":
        return ("forward",)
    if parallelism == "HYBRID_DLRM":
        return (("weight_grad",) + (("forward",) if layer.fwd_comm_type == "ALLTOALL" else ())
                + (("input_grad",) if i == 0 and last_bottom + 1 < count else ()))
    if parallelism.startswith("HYBRID_TRANSFORMER"):
        return _KINDS
    return ("forward", "weight_grad") + (("input_grad",) if i > 0 else ())   # the hybrid data/model loops


def _comm(kind: str, nbytes: int, dims: tuple[int, ...], sizes: tuple[int, ...] | None) -> Comm | None:
    """A collective over ``dims`` (None in the Comm when that is every dimension); None when ASTRA would not
    run it: no type, no bytes, or no dimension taking part. ASTRA's all-gather size is each NPU's shard (its
    phases send it, then the grown buffer: docs/astra-sim-1.0.md, "Algorithms"); codesign's ``bytes`` is the
    gathered buffer, the shard times the NPUs of the dimensions it spans."""
    coll = ASTRA_COMM_TYPES[kind]
    if coll is None or nbytes <= 0 or not dims:
        return None
    size = float(nbytes)
    if coll == "all_gather":
        if sizes is None:
            raise ValueError("an ALLGATHER's bytes depend on the network's dimensions: give dim_sizes")
        size *= math.prod(sizes[d] for d in dims)
    return Comm(coll, size, None if sizes is None or len(dims) == len(sizes) else tuple(dims))


def astra_to_workload(aw: AstraWorkload, *, cycle_s: float = 1e-9, name: str | None = None,
                      dim_sizes: tuple[int, ...] | None = None) -> Workload:
    """Convert parsed ASTRA records to a Workload, cycles -> seconds with ``cycle_s`` per cycle.

    ``dim_sizes``: the NPUs of each dimension of the network it runs on (the problem's topology), which
    the hybrid and Transformer loops need to place their collectives. Each layer keeps only the
    collectives ASTRA's loop issues, over the dimensions its parallelism involves; MODEL, the hybrid and
    the Transformer loops come with their program (``astra_program``), walked from ASTRA's state machine.
    Raises SpecError (file, line) for what codesign cannot solve faithfully.
    """
    par = aw.parallelism
    where = dict(file=aw.path, line=aw.header_line)
    if par not in ASTRA_PARALLELISMS:
        raise SpecError(f"parallelism {par} is not one codesign imports", **where)
    if not aw.layers:
        raise SpecError("the workload has no layers", file=aw.path, line=aw.header_line + 1)
    if par in PROGRAM_LOOPS and par not in ("MODEL", "DISTRIBUTED_INFERENCE") and dim_sizes is None:
        raise ValueError(f"{par} places its collectives on the network's dimensions: give dim_sizes")
    ndims = len(dim_sizes) if dim_sizes is not None else None
    last_bottom = None
    if par == "HYBRID_DLRM":
        if not aw.args:
            raise SpecError("HYBRID_DLRM needs the index of the last bottom-MLP layer after it "
                            "(e.g. 'HYBRID_DLRM 4')", **where)
        b = _int(aw.args[0], aw.path, aw.header_line, "HYBRID_DLRM last bottom layer")
        if b + 2 > len(aw.layers):
            raise SpecError(f"HYBRID_DLRM {b}: the top MLP would start at layer {b + 2} but the file "
                            f"has {len(aw.layers)} layers", **where)
        last_bottom = b + 1
    header = transformer_header(aw) if par.startswith("HYBRID_TRANSFORMER") else None
    boundary = -1
    if header is not None:
        boundary = model_parallel_boundary(header.group, tuple(dim_sizes or ()), **where)
    layers = []
    for i, al in enumerate(aw.layers):
        if par == "HYBRID_CUSTOMIZED":
            policy = al.parallelism or ""
            if policy not in LAYER_PARALLELISMS:
                raise SpecError(f"layer {_label(al.name)}: HYBRID_CUSTOMIZED needs each layer's parallelism as its "
                                f"13th field, one of {', '.join(LAYER_PARALLELISMS)}; got {shown(policy, 20)}",
                                file=aw.path, line=al.line)
        elif par == "HYBRID_DLRM" and i == 0:
            policy = "ALL"
        else:
            policy = par
        dims = involved_dims(policy, boundary, ndims or 1)   # without the topology: one dimension stands for all
        issued = _issued(par, i, len(aw.layers), al, (last_bottom or 0) - 1)
        raw = {"forward": (al.fwd_comm_type, al.fwd_comm_bytes), "input_grad": (al.ig_comm_type, al.ig_comm_bytes),
               "weight_grad": (al.wg_comm_type, al.wg_comm_bytes)}
        comms = {k: _comm(*raw[k], dims[n], dim_sizes) if k in issued else None for n, k in enumerate(_KINDS)}
        layers.append(Layer(
            name=al.name,
            forward=Compute(time_s=al.fwd_compute * cycle_s),
            input_grad=Compute(time_s=al.ig_compute * cycle_s),
            weight_grad=Compute(time_s=al.wg_compute * cycle_s),
            forward_comm=comms["forward"], input_grad_comm=comms["input_grad"],
            weight_grad_comm=comms["weight_grad"], update_s=al.update_delay * cycle_s))
    layers_t = tuple(layers)
    program = astra_program(aw, layers_t, header) if par in PROGRAM_LOOPS else None
    return Workload(name=name or Path(aw.path).stem, parallelism=par.lower(), layers=layers_t,
                    dlrm_last_bottom=last_bottom, source=aw.path, program=program)


def astra_program(aw: AstraWorkload, layers: tuple[Layer, ...], header: TransformerHeader | None) -> tuple[Step, ...]:
    """One steady-state pass of ASTRA-sim 1.0's MODEL, hybrid (HYBRID_DATA_MODEL, HYBRID_MODEL_DATA,
    HYBRID_CUSTOMIZED) or Transformer loop as program steps, walked from the state machine of
    ``Workload.cc`` (as ``codesign/astra/mode.py`` runs it, docs/astra-sim-modes.md, "The loops"):

    - forward, layer 1..L: wait for the layer's weight-gradient collective of the previous pass, compute,
      issue the forward collective and wait for it (blocking);
    - backward, layer L..1: input gradient (all layers, layer 1 too), issue its collective (not layer 1's,
      except in the Transformer loops); weight gradient, issue its collective (not MODEL); then wait for the
      layer's input-gradient collective before going down;
    - HYBRID_TRANSFORMER_FWD_IN_BCKWD: at the input-gradient step of a layer in ``checkpoint_initiates``
      (once), re-run the forward (compute and blocking collective) from the nearest checkpoint at or
      below it up to the first initiating layer above that checkpoint, then go on with its input gradient.

    Every collective of a layer finishes its update delay after its last chunk, as in ASTRA. The
    walk runs three passes: collectives issued in the middle one and awaited in the last become
    next-iteration waits. ASTRA's one-cycle moves between steps are left out (nanoseconds a step).
    """
    walk = _LoopWalk(aw, layers, header)
    for n_pass in range(3):
        walk.walk_pass(n_pass)
    if walk.events[1] != walk.events[2]:
        raise AssertionError("ASTRA loop walk: passes differ")   # the walk is the same every pass
    return walk.program()


class _LoopWalk:
    """The walk of ``astra_program``: each pass's events (``compute``, ``issue``, ``wait``) in order, and for
    every collective issued, the wait that consumed it."""

    def __init__(self, aw: AstraWorkload, layers: tuple[Layer, ...], header: TransformerHeader | None) -> None:
        par = aw.parallelism
        self.layers, self.par = layers, par
        self.where = dict(file=aw.path, line=aw.header_line)
        self.transformer = par.startswith("HYBRID_TRANSFORMER")
        self.recompute = par == "HYBRID_TRANSFORMER_FWD_IN_BCKWD"
        self.checkpoint = set(header.checkpoints) if header else set()
        self.initiates = set(header.initiates) if header else set()
        L = len(layers)
        self.limit = 4 * L * (L + 2) + 16     # a pass longer than this loops: refuse it (ASTRA would not finish)
        self.events: list[list[tuple]] = []
        self.pending: dict[tuple[int, str], list[tuple[int, int]]] = {}
        self.consumed: dict[tuple[int, int], tuple[int, int]] = {}   # comm (pass, n) -> the wait event (pass, n)
        self.n_pass, self.ev = 0, []

    def wait(self, i: int, kind: str) -> None:
        for cid in self.pending.pop((i, kind), []):
            self.consumed[cid] = (self.n_pass, len(self.ev))
        self.ev.append(("wait", i, kind))

    def issue(self, i: int, kind: str, again: bool = False) -> bool:
        if self.layers[i].comm(kind) is None:
            return False
        self.pending.setdefault((i, kind), []).append((self.n_pass, len(self.ev)))
        self.ev.append(("issue", i, kind, again))
        return True

    def walk_pass(self, n_pass: int) -> None:
        """One pass of the state machine: forward up (``fwd``; ``fib``: a forward re-run inside the
        backward), then input gradient (``ig``) and weight gradient (``wg``) down to layer 0."""
        self.n_pass, self.ev = n_pass, []
        self.events.append(self.ev)
        if self.par == "DISTRIBUTED_INFERENCE":   # forward only, every layer's collective awaited
            for i in range(len(self.layers)):
                self._forward("fwd", i)
            return
        state, i, initiated = "fwd", 0, False
        while True:
            if len(self.ev) > self.limit:
                raise SpecError("the re-computation never lets the backward pass reach layer 1 (checkpoints and "
                                "checkpoint_initiates loop; ASTRA-sim 1.0 would not finish the pass)", **self.where)
            if state in ("fwd", "fib"):
                state, i = self._forward(state, i)
            elif state == "ig":
                if self.recompute and i in self.initiates and not initiated:
                    i, initiated, state = self._checkpoint_below(i), True, "fib"
                    continue
                self.ev.append(("compute", i, "input_grad", False))
                if i > 0 or self.transformer:
                    self.issue(i, "input_grad")
                initiated = False
                state = "wg"
            else:   # weight gradient
                self.ev.append(("compute", i, "weight_grad", False))
                if self.par != "MODEL":
                    self.issue(i, "weight_grad")
                self.wait(i, "input_grad")
                i -= 1
                if i < 0:
                    return
                state = "ig"

    def _forward(self, state: str, i: int) -> tuple[str, int]:
        """Layer i's forward (a re-run in state ``fib``): the next state and layer."""
        self.wait(i, "weight_grad")
        self.ev.append(("compute", i, "forward", state == "fib"))
        if self.issue(i, "forward", state == "fib"):
            self.wait(i, "forward")
        if state == "fwd":
            return ("ig", i) if i == len(self.layers) - 1 else ("fwd", i + 1)
        i += 1
        if i == len(self.layers):
            raise SpecError("the forward re-computation runs past the last layer without reaching a layer "
                            "of checkpoint_initiates (ASTRA-sim 1.0 would read past its layers)", **self.where)
        return ("ig" if i in self.initiates else "fib"), i

    def _checkpoint_below(self, i: int) -> int:
        """The nearest checkpoint at or below layer i, where its re-computation starts."""
        c = i
        while c not in self.checkpoint:
            c -= 1
            if c < 0:
                raise SpecError(f"layer {i} is in checkpoint_initiates but no checkpoint lies at or "
                                "below it (ASTRA-sim 1.0 would read before layer 0)", **self.where)
        return c

    def program(self) -> tuple[Step, ...]:
        """The middle pass as the iteration: compute events are its steps, each issue released by the step
        before it and awaited by the step at or after its wait (in the next pass: a next-iteration wait)."""
        layers = self.layers
        step_of: list[dict[int, int]] = []    # per pass: event index -> index of the compute step at or after it
        for ev in self.events:
            idx, nxt = {}, None
            computes = [n for n, e in enumerate(ev) if e[0] == "compute"]
            for n in range(len(ev) - 1, -1, -1):
                if ev[n][0] == "compute":
                    nxt = computes.index(n)
                idx[n] = nxt
            step_of.append(idx)
        steps: list[Step] = []
        issues: list[list[Issue]] = []
        names: dict[str, int] = {}

        def unique(base: str) -> str:
            k = names.get(base, 0)
            names[base] = k + 1
            return base if k == 0 else f"{base}#{k + 1}"

        for n, e in enumerate(self.events[1]):
            if e[0] == "compute":
                _, i, kind, again = e
                steps.append(Step(unique(f"{layers[i].name}.{kind}" + (".recompute" if again else "")), i, kind,
                                  layers[i].compute(kind)))
                issues.append([])
            elif e[0] == "issue":
                _, i, kind, again = e
                p_wait, n_wait = self.consumed[(1, n)]
                at = step_of[p_wait][n_wait]
                nxt_iter = p_wait == 2
                if at is None:            # waited for at the very end of the pass: before the next pass begins
                    at, nxt_iter = 0, True
                issues[-1].append(Issue(unique(f"{layers[i].name}.{kind}_comm" + (".recompute" if again else "")),
                                        f"{kind}_comm", i, layers[i].comm(kind), at, nxt_iter, layers[i].update_s))
        return tuple(Step(s.name, s.layer, s.kind, s.demand, tuple(iss)) for s, iss in zip(steps, issues))


def load_astra_workload(path: str | Path, *, cycle_s: float = 1e-9, dim_sizes: tuple[int, ...] | None = None
                        ) -> Workload:
    """Parse and convert in one step (``dim_sizes``: the network's dimensions, see ``astra_to_workload``)."""
    return astra_to_workload(parse_astra_workload(path), cycle_s=cycle_s, dim_sizes=dim_sizes)
