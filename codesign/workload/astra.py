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
from .model import Comm, Compute, Layer, Workload

ASTRA_COMM_TYPES = {"NONE": None, "ALLREDUCE": "all_reduce", "ALLGATHER": "all_gather",
                    "REDUCESCATTER": "reduce_scatter", "ALLTOALL": "all_to_all"}
ASTRA_PARALLELISMS = {"DATA": "data", "MODEL": "model", "HYBRID_DATA_MODEL": "hybrid_data_model",
                      "HYBRID_MODEL_DATA": "hybrid_model_data", "HYBRID_DLRM": "hybrid_dlrm",
                      "MICRO": "micro", "HYBRID_CUSTOMIZED": "hybrid_customized",
                      "HYBRID_TRANSFORMER": "hybrid_transformer",
                      "HYBRID_TRANSFORMER_FWD_IN_BCKWD": "hybrid_transformer"}
#: The training loops codesign's MILP schedules; the others import but are rejected by ``astra_to_workload``.
SUPPORTED = ("DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_DLRM", "MICRO")


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
    if head[0] not in ASTRA_PARALLELISMS:
        raise SpecError(f"unknown parallelism {shown(head[0], 20)}; expected one of "
                        f"{', '.join(ASTRA_PARALLELISMS)}", file=file, line=n0)
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


def _comm(kind: str, nbytes: int) -> Comm | None:
    coll = ASTRA_COMM_TYPES[kind]
    if coll is None or nbytes <= 0:
        return None
    return Comm(coll, float(nbytes))


def astra_to_workload(aw: AstraWorkload, *, cycle_s: float = 1e-9, name: str | None = None) -> Workload:
    """Convert parsed ASTRA records to a Workload, cycles -> seconds with ``cycle_s`` per cycle."""
    if aw.parallelism not in SUPPORTED:
        raise SpecError(f"parallelism {aw.parallelism} imports but codesign's scheduler does not model "
                        f"it yet; supported: {', '.join(SUPPORTED)}", file=aw.path, line=aw.header_line)
    last_bottom = None
    if aw.parallelism == "HYBRID_DLRM":
        if not aw.args:
            raise SpecError("HYBRID_DLRM needs the index of the last bottom-MLP layer after it "
                            "(e.g. 'HYBRID_DLRM 4')", file=aw.path, line=aw.header_line)
        b = _int(aw.args[0], aw.path, aw.header_line, "HYBRID_DLRM last bottom layer")
        if b + 2 > len(aw.layers):
            raise SpecError(f"HYBRID_DLRM {b}: the top MLP would start at layer {b + 2} but the file "
                            f"has {len(aw.layers)} layers", file=aw.path, line=aw.header_line)
        last_bottom = b + 1
    layers = []
    for al in aw.layers:
        layers.append(Layer(
            name=al.name,
            forward=Compute(time_s=al.fwd_compute * cycle_s),
            input_grad=Compute(time_s=al.ig_compute * cycle_s),
            weight_grad=Compute(time_s=al.wg_compute * cycle_s),
            forward_comm=_comm(al.fwd_comm_type, al.fwd_comm_bytes),
            input_grad_comm=_comm(al.ig_comm_type, al.ig_comm_bytes),
            weight_grad_comm=_comm(al.wg_comm_type, al.wg_comm_bytes),
            update_s=al.update_delay * cycle_s))
    return Workload(name=name or Path(aw.path).stem, parallelism=ASTRA_PARALLELISMS[aw.parallelism],
                    layers=tuple(layers), dlrm_last_bottom=last_bottom, source=aw.path)


def load_astra_workload(path: str | Path, *, cycle_s: float = 1e-9) -> Workload:
    """Parse and convert in one step."""
    return astra_to_workload(parse_astra_workload(path), cycle_s=cycle_s)
