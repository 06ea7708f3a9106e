"""ASTRA-sim 2.x's workload layer on Chakra traces, one per NPU, and the run of all NPUs (ns, bytes).

After ``Workload.cc``, ``HardwareResource.cc`` and ``Statistics.cc``: the nodes whose dependencies (data and
control) are done are issued in id order, each only if its resource is free: one compute node and one
communication node at a time per NPU (2.x's ``HardwareResource``; 1.0 overlapped any number of
collectives). A compute node takes ``duration_micros`` x 1000 ns (1 ns when 0), or with ``roofline-enabled``
``num_ops`` / min(local-mem-bw x intensity, peak-perf); a collective node is a collective of the system layer.
An NPU finishes when nothing is left to issue or running; its exposed communication is its finish minus the
compute it ran.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..sim.events import EventLoop
from ..spec.files import read_user_bytes
from ..workload.chakra_wire import COMM_TYPES, NODE_TYPES, Node, WireError, decode
from .inputs import Network, System
from .network import Backend
from .system import Sys

COMP, COLL = 4, 7
RUNS_NODES = {1: "METADATA_NODE", 0: "INVALID_NODE", COMP: "COMP_NODE", COLL: "COMM_COLL_NODE"}
TIMED = ("ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER", "ALL_TO_ALL")


@dataclass
class RankResult:
    """One NPU's figures, in ns (cycles)."""

    rank: int
    finish_ns: int = -1
    compute_ns: int = 0          # the compute it ran (2.x's tics_gpu_ops)
    gpu_time_ns: int = 0         # union of compute node intervals
    comm_time_ns: int = 0        # union of communication node intervals
    overlap_ns: int = 0
    collectives: tuple[tuple[int, str, int, int, int], ...] = ()   # (node id, type, bytes, start, end)

    @property
    def exposed_ns(self) -> int:
        return self.finish_ns - self.compute_ns

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "finish_time_ns": self.finish_ns, "compute_time_ns": self.compute_ns,
                "exposed_comm_time_ns": self.exposed_ns, "gpu_time_ns": self.gpu_time_ns,
                "comm_time_ns": self.comm_time_ns, "overlap_ns": self.overlap_ns,
                "collectives": [{"node": n, "type": t, "bytes": b, "start_ns": s, "end_ns": e}
                                for n, t, b, s, e in self.collectives]}


def _attr(node: Node, name: str, default: Any = None) -> Any:
    a = node.attr(name)
    return default if a is None else a.value


def read_trace(prefix: str, rank: int, dims: int, *, confine_to: Path | None = None) -> dict[int, Node]:
    """``PREFIX.<rank>.et`` as nodes by id, checked for what the mode runs."""
    file = f"{prefix}.{rank}.et"
    if not Path(file).is_file():
        raise SpecError(f"no trace {Path(file).name} (2.x reads one PREFIX.<rank>.et per NPU of the network)",
                        file=file)
    try:
        trace = decode(read_user_bytes(file, what="Chakra trace", confine_to=confine_to))
    except WireError as e:
        raise SpecError(f"not a Chakra trace: {e}", file=file) from None
    nodes = {}
    for n in trace.nodes:
        where = f"node {n.id}" + (f" ({n.name!r})" if n.name else "")
        if n.id in nodes:
            raise SpecError(f"{where}: id given twice", file=file)
        if n.type not in RUNS_NODES:
            raise SpecError(f"{where}: {NODE_TYPES.get(n.type, n.type)} is not simulated by codesign's 2.x mode yet "
                            "(it runs compute and collective nodes)", file=file)
        if _attr(n, "is_cpu_op") is None:
            raise SpecError(f"{where}: is_cpu_op: missing; ASTRA-sim 2.x reads it on every node (its resource "
                            "check stops without it)", file=file)
        if n.type == COLL:
            ct = _attr(n, "comm_type")
            ct = COMM_TYPES.get(ct, ct) if isinstance(ct, int) else ct
            if ct not in TIMED:
                raise SpecError(f"{where}: comm_type: expected one of {', '.join(TIMED)}, got {ct!r}", file=file)
            size = _attr(n, "comm_size")
            if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
                raise SpecError(f"{where}: comm_size: expected a whole number of bytes > 0, got {size!r}", file=file)
            inv = _attr(n, "involved_dim")
            if inv is not None and (not isinstance(inv, list) or len(inv) < dims):
                raise SpecError(f"{where}: involved_dim: expected a bool per network dimension ({dims})", file=file)
            if inv is None and dims > 4:
                raise SpecError(f"{where}: involved_dim: missing on a {dims}-dimensional network (2.x assumes 4)",
                                file=file)
            pg = _attr(n, "pg_name", "")
            if pg not in ("", "0", None):
                raise SpecError(f"{where}: pg_name {pg!r}: communicator groups other than the whole system are not "
                                "simulated by codesign's 2.x mode yet", file=file)
        nodes[n.id] = n
    for n in nodes.values():
        for d in (*n.data_deps, *n.ctrl_deps):
            if d not in nodes:
                raise SpecError(f"node {n.id}: depends on node {d}, which the trace does not have (2.x waits for "
                                "it forever)", file=file)
    return nodes


class Workload:
    """One NPU's trace being run."""

    def __init__(self, sys: Sys, nodes: dict[int, Node], result: RankResult) -> None:
        self.sys, self.nodes, self.res = sys, nodes, result
        self.parents = {i: set((*n.data_deps, *n.ctrl_deps)) for i, n in nodes.items()}
        self.children: dict[int, list[int]] = {i: [] for i in nodes}
        for i, ps in self.parents.items():
            for p in ps:
                self.children[p].append(i)
        self.free = {i for i, ps in self.parents.items() if not ps}
        self.ongoing: set[int] = set()
        self.comp_busy = self.comm_busy = self.cpu_busy = False
        self.start: dict[int, int] = {}
        self.end: dict[int, int] = {}
        self.finished = False

    def _is_cpu(self, n: Node) -> bool:
        return bool(_attr(n, "is_cpu_op"))

    def fire(self) -> None:
        self.call(None)

    def _available(self, n: Node) -> bool:
        if self._is_cpu(n):
            return not self.cpu_busy
        return not (self.comp_busy if n.type == COMP else self.comm_busy)

    def _occupy(self, n: Node, busy: bool) -> None:
        if self._is_cpu(n):
            self.cpu_busy = busy
        elif n.type == COMP:
            self.comp_busy = busy
        else:
            self.comm_busy = busy

    def issue_free(self) -> None:
        for i in sorted(self.free):
            n = self.nodes[i]
            if i in self.free and self._available(n):
                self.issue(n)

    def issue(self, n: Node) -> None:
        now = self.sys.loop.now
        self.free.discard(n.id)
        self.ongoing.add(n.id)
        self._occupy(n, True)
        self.start[n.id] = now
        cfg = self.sys.cfg
        if n.type == COMP:
            if cfg.roofline and not self._is_cpu(n):
                ops, size = int(_attr(n, "num_ops", 0)), int(_attr(n, "tensor_size", 0))
                if size == 0:
                    self._skip(n)
                    return
                perf = min(cfg.local_mem_bw * 1e9 * (ops / size), cfg.peak_perf_tflops * 1e12)
                runtime = int(ops / perf * 1e9)
            else:
                runtime = n.duration_micros * 1000 or 1
            if not self._is_cpu(n):
                self.res.compute_ns += runtime
            self.sys.register(runtime, self.call, n.id)
        elif n.type == COLL:
            ct = _attr(n, "comm_type")
            ct = COMM_TYPES.get(ct, ct) if isinstance(ct, int) else ct
            inv = _attr(n, "involved_dim")
            inv = [bool(x) for x in inv] if inv is not None else [True] * 4
            self.sys.generate(ct, int(_attr(n, "comm_size")), inv, lambda _t, i=n.id: self._coll_done(i))
        else:  # invalid and metadata nodes: done at once, their children issued at the next call
            self._skip(n)

    def _skip(self, n: Node) -> None:
        self._finish(n.id)

    def _finish(self, i: int) -> None:
        self.ongoing.discard(i)
        self._occupy(self.nodes[i], False)
        self.end[i] = self.sys.loop.now
        for c in self.children[i]:
            ps = self.parents[c]
            ps.discard(i)
            if not ps:
                self.free.add(c)

    def _coll_done(self, i: int) -> None:
        self.call(i)

    def call(self, node_id: int | None) -> None:
        if self.finished:
            return
        if node_id is not None:
            self._finish(node_id)
        self.issue_free()
        if not self.free and not self.ongoing and not (self.comp_busy or self.comm_busy or self.cpu_busy):
            self.finished = True
            self._report()

    def _report(self) -> None:
        r = self.res
        r.finish_ns = self.sys.loop.now
        gpu = [(self.start[i], self.end[i]) for i, n in self.nodes.items() if n.type == COMP and not self._is_cpu(n)]
        comm = [(self.start[i], self.end[i]) for i, n in self.nodes.items() if n.type == COLL]
        r.gpu_time_ns, r.comm_time_ns = _union(gpu), _union(comm)
        r.overlap_ns = max(0, r.gpu_time_ns + r.comm_time_ns - max(self.end.values(), default=0)) if gpu and comm \
            else 0
        r.collectives = tuple(sorted(
            (i, str(COMM_TYPES.get(_attr(n, "comm_type"), _attr(n, "comm_type"))), int(_attr(n, "comm_size")),
             self.start[i], self.end[i]) for i, n in self.nodes.items() if n.type == COLL))


def _union(intervals: list[tuple[int, int]]) -> int:
    """Total length of the union of intervals (``_calculateTotalRuntimeFromIntervals``)."""
    total, cur = 0, None
    for s, e in sorted(intervals):
        if cur is None or s > cur[1]:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return total + (cur[1] - cur[0] if cur is not None else 0)


def run(net: Network, system: System, traces: list[dict[int, Node]], *, aware: bool) -> tuple[list[RankResult], int]:
    """Every NPU of ``net`` runs its trace on one event loop; (per-rank results, events processed)."""
    loop = EventLoop()
    backend = Backend(loop, net, aware)
    results = [RankResult(r) for r in range(net.total)]
    loads = [Workload(Sys(r, loop, net, system, backend), traces[r], results[r]) for r in range(net.total)]
    for w in loads:
        w.fire()
    loop.run()
    stuck = [w.res.rank for w in loads if not w.finished]
    if stuck:
        raise SpecError(f"rank {stuck[0]} never finishes: its trace waits for a collective the other ranks do not "
                        f"issue the same way ({len(stuck)} rank(s) stuck, as 2.x would hang)")
    return results, loop.events
