"""ASTRA-sim 1.0 compatible simulation mode (analytical backend), driven by codesign's event loop.

``simulate_astra(workload, network, system, passes)`` reads ASTRA-sim 1.0's own three input files and
reproduces what ASTRA-sim 1.0 reports for them: the time all passes finish, the total compute, the
exposed communication (finish - compute) and, per layer, compute, exposed (waiting) and total
communication time for the forward, input-gradient and weight-gradient collectives (ASTRA's
EndToEnd.csv columns). Everything is in ns, which are ASTRA's cycles of its 1 GHz clock; results are
whole ns because ASTRA truncates time to whole cycles.

The training loops (DATA, MODEL, HYBRID_DLRM, MICRO) follow ASTRA's Workload.cc: each step of the loop
is a Sys event, every move between steps costs one cycle, waits register on the layer whose collective
is pending and resume when it finishes plus its update delay. The collectives run in
``astra.system.SystemLayer``. Semantics: docs/astra-sim-1.0.md.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..sim.events import EventLoop
from ..workload.astra import AstraLayer, AstraWorkload, parse_astra_workload
from .inputs import AstraNetwork, AstraSystem, load_astra_network, load_astra_system
from .system import SystemLayer

FWD, IG, WG = 0, 1, 2
SUPPORTED = ("DATA", "MODEL", "HYBRID_DLRM", "MICRO")
_WAIT_END = "wait"


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
    events: int
    collectives: int
    chunks: int
    avg_chunk_latency_ns: tuple[float | None, ...]   # per dimension, init to leaving the queue
    pass_end_ns: tuple[int, ...]     # when each pass issued its last collective ("pass: N finished")
    layers: tuple[AstraLayerStats, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-ready); ``layers`` is a list of per-layer dicts."""
        d = asdict(self)
        d["avg_chunk_latency_ns"] = list(self.avg_chunk_latency_ns)
        d["pass_end_ns"] = list(self.pass_end_ns)
        d["layers"] = [asdict(layer) for layer in self.layers]
        return d


class _Layer:
    """A layer's pending collectives, waits and totals (ASTRA's Layer)."""

    def __init__(self, spec: AstraLayer, loop: _Loop) -> None:
        self.spec = spec
        self.loop = loop
        self.sys = loop.sys
        self.comm = ((spec.fwd_comm_type, spec.fwd_comm_bytes), (spec.ig_comm_type, spec.ig_comm_bytes),
                     (spec.wg_comm_type, spec.wg_comm_bytes))
        self.pending: tuple[list[Any], ...] = ([], [], [])
        self.waiting_since: tuple[list[int], ...] = ([], [], [])
        self.blocking = [False, False, False]
        self.compute = [0, 0, 0]
        self.exposed = [0, 0, 0]
        self.comm_total = [0, 0, 0]
        self.collectives = 0

    def load_compute(self, kind: int) -> int:
        c = (self.spec.fwd_compute, self.spec.ig_compute, self.spec.wg_compute)[kind]
        self.compute[kind] += c
        return c

    def issue(self, kind: int, highest: bool = False, blocking: bool = False) -> None:
        self.blocking[kind] = blocking
        ctype, nbytes = self.comm[kind]
        coll = None if ctype == "NONE" else self.sys.generate(ctype, nbytes, highest)
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

    def __init__(self, wl: AstraWorkload, sysl: SystemLayer, passes: int, last_bottom: int) -> None:
        self.sys = sysl
        self.passes = passes
        self.parallelism = wl.parallelism
        self.last_bottom = last_bottom
        self.layers = [_Layer(spec, self) for spec in wl.layers]
        self.state = FWD
        self.index = 0
        self.pass_counter = 0
        self.pass_ends: list[int] = []
        self.delay_loaded = False
        self.issued = False
        self.listening = False
        self.finish_tick: int | None = None
        self._step = {"DATA": self._data, "MODEL": self._model, "HYBRID_DLRM": self._dlrm,
                      "MICRO": self._micro}[wl.parallelism]

    def call(self, _: Any = None) -> None:
        self._step()

    def _check_end(self) -> None:
        if self.pass_counter != self.passes:
            return
        self.state = _WAIT_END
        sysl = self.sys
        if sysl.streams_finished != sysl.streams_injected:
            if not self.listening:
                sysl.finished_listeners.append(self.call)
                self.listening = True
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

    def _data(self) -> None:
        self._check_end()
        layer = self.layers[self.index]
        if self.state == FWD:
            if not layer.finished_blocking(WG) or self._compute(FWD):
                return
            self.index += 1
            if self.index == len(self.layers):
                self.index -= 1
                self._next(WG)
            else:
                self._next(FWD)
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

    def _model(self) -> None:
        self._check_end()
        layer = self.layers[self.index]
        if self.state == FWD:
            if not layer.finished_blocking(WG) or self._compute(FWD):
                return
            if not self.issued:
                self.issued = True
                layer.issue(FWD, blocking=True)   # resumes this loop when it finishes
                return
            self.index += 1
            if self.index == len(self.layers):
                self.index -= 1
                self._next(IG)
            else:
                self._next(FWD)
        elif self.state == WG:
            if self._compute(WG) or not layer.finished_blocking(IG):
                return
            self.index -= 1
            if self.index < 0:
                self.index = 0
                self._pass_done()
                self._next(FWD)
            else:
                self._next(IG)
        elif self.state == IG:
            if self._compute(IG):
                return
            if not self.issued and self.index > 0:
                layer.issue(IG)
            self._next(WG)

    def _dlrm(self) -> None:
        self._check_end()
        layer = self.layers[self.index]
        if self.state == FWD:
            if not layer.finished_blocking(WG) or self._compute(FWD):
                return
            if not self.issued and layer.spec.fwd_comm_type == "ALLTOALL":
                self.issued = True
                layer.issue(FWD, highest=True)        # embedding lookup: non-blocking, first
            elif self.index == self.last_bottom and not self.layers[0].finished_blocking(FWD):
                return                                # the top MLP needs the embeddings
            self.index += 1
            if self.index == len(self.layers):
                self.index -= 1
                self._next(WG)
            else:
                self._next(FWD)
        elif self.state == WG:
            if self._compute(WG):
                return
            if not self.issued:
                self.issued = True
                layer.issue(WG)
            if not layer.finished_blocking(IG):
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
                self.layers[0].issue(IG, highest=True)   # embedding gradients back to their owners
            self.index -= 1
            self._next(WG)

    def _micro(self) -> None:
        if self.state != _WAIT_END:
            for _ in range(self.passes):
                self.layers[0].issue(WG)
            self.pass_counter = self.passes
        self._check_end()


def _issued_comms(wl: AstraWorkload, last_bottom: int) -> list[tuple[AstraLayer, str, str, int]]:
    """The (layer, kind, type, bytes) collectives this workload's loop will issue."""
    out = []
    for i, layer in enumerate(wl.layers):
        kinds = {"DATA": ["wg"], "MICRO": ["wg"] if i == 0 else [],
                 "MODEL": ["fwd"] + (["ig"] if i > 0 else []),
                 "HYBRID_DLRM": ["wg"] + (["fwd"] if layer.fwd_comm_type == "ALLTOALL" else [])
                 + (["ig"] if i == 0 and last_bottom + 1 < len(wl.layers) else [])}[wl.parallelism]
        for k in kinds:
            ctype, nbytes = getattr(layer, f"{k}_comm_type"), getattr(layer, f"{k}_comm_bytes")
            if ctype != "NONE":
                out.append((layer, k, ctype, nbytes))
    return out


def _validate(wl: AstraWorkload, system: AstraSystem, sysl: SystemLayer) -> int:
    """Reject what ASTRA-sim 1.0 would hang or crash on, or what this mode does not implement."""
    if wl.parallelism not in SUPPORTED:
        raise SpecError(f"parallelism {wl.parallelism} is not implemented by codesign's ASTRA-sim mode; "
                        f"supported: {', '.join(SUPPORTED)}", file=wl.path, line=1)
    if not wl.layers:
        raise SpecError("the workload has no layers", file=wl.path, line=2)
    last_bottom = -1
    if wl.parallelism == "HYBRID_DLRM":
        arg = wl.args[0] if wl.args else ""
        if not arg.isdigit() or int(arg) + 1 >= len(wl.layers):
            raise SpecError(f"HYBRID_DLRM needs the 0-based index of the last bottom-MLP layer, below "
                            f"{len(wl.layers) - 1} so a top layer follows it (e.g. 'HYBRID_DLRM 4'), "
                            f"got {arg!r}", file=wl.path, line=1)
        last_bottom = int(arg)
    unsupported = {"model-shared-bus": (system.model_shared_bus, 0), "boost-mode": (system.boost_mode, 0),
                   "intra-dimension-scheduling": (system.intra_dimension_scheduling, "FIFO")}
    for key, (value, ok) in unsupported.items():
        if value != ok:
            raise SpecError(f"{value} is not implemented by codesign's ASTRA-sim mode; use {ok}",
                            file=system.path, path=key, line=system.line_of(key))
    if system.inter_dimension_scheduling not in ("baseline", "ascending"):
        key = "inter-dimension-scheduling"
        raise SpecError(f"{system.inter_dimension_scheduling} is not implemented by codesign's "
                        "ASTRA-sim mode; use baseline", file=system.path, path=key,
                        line=system.line_of(key))
    splits = system.preferred_dataset_splits
    for layer, kind, ctype, nbytes in _issued_comms(wl, last_bottom):
        sysl.plan(ctype)                       # one algorithm per dimension, known algorithms
        if nbytes < splits:
            raise SpecError(f"layer {layer.name}: {kind} {ctype} of {nbytes} bytes cannot be split into "
                            f"{splits} chunks (preferred-dataset-splits); ASTRA-sim 1.0 would never "
                            "finish it", file=wl.path, line=layer.line)
    return last_bottom


def simulate_astra(workload_path: str | Path, network_path: str | Path, system_path: str | Path,
                   passes: int = 1, *, confine_to: Path | None = None) -> AstraResult:
    """Run ASTRA-sim 1.0's analytical simulation of ``passes`` training passes; results in ns.

    Raises SpecError for a missing or malformed input file, for inputs ASTRA-sim 1.0 would hang or
    crash on, and for the features this mode does not implement (named in the message). ``confine_to``
    refuses input files outside that folder (``codesign.spec.files.read_user_file``).
    """
    if isinstance(passes, bool) or not isinstance(passes, int) or passes < 1:
        raise SpecError(f"passes must be a whole number >= 1, got {passes!r}")
    wl = parse_astra_workload(workload_path, confine_to=confine_to)
    net: AstraNetwork = load_astra_network(network_path, confine_to=confine_to)
    system: AstraSystem = load_astra_system(system_path, confine_to=confine_to)
    engine = EventLoop()
    sysl = SystemLayer(engine, net, system)
    last_bottom = _validate(wl, system, sysl)
    loop = _Loop(wl, sysl, passes, last_bottom)
    loop.call()                       # Workload::fire at time 0
    engine.run()
    if loop.finish_tick is None:      # cannot happen for the supported loops; guard against hangs
        raise RuntimeError("ASTRA-sim mode stopped before the workload finished")
    compute = sum(sum(layer.compute) for layer in loop.layers)
    rows = tuple(AstraLayerStats(layer.spec.name, *layer.compute, *layer.exposed, *layer.comm_total)
                 for layer in loop.layers)
    return AstraResult(
        finish_time_ns=loop.finish_tick, compute_time_ns=compute,
        exposed_comm_time_ns=loop.finish_tick - compute, passes=passes, npus=net.npus,
        parallelism=wl.parallelism, events=engine.events,
        collectives=sum(layer.collectives for layer in loop.layers), chunks=sysl.streams_injected,
        avg_chunk_latency_ns=tuple(q.latency_ns / q.chunks if q.chunks else None for q in sysl.queues),
        pass_end_ns=tuple(loop.pass_ends), layers=rows)
