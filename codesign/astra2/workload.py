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
from .memory import MemoryModel, RemoteMemory
from .network import Backend
from .system import Sys

MEM_LOAD, MEM_STORE, COMP, SEND, RECV, COLL = 2, 3, 4, 5, 6, 7
RUNS_NODES = {1: "METADATA_NODE", 0: "INVALID_NODE", COMP: "COMP_NODE", COLL: "COMM_COLL_NODE", SEND: "COMM_SEND_NODE",
              RECV: "COMM_RECV_NODE", MEM_LOAD: "MEM_LOAD_NODE", MEM_STORE: "MEM_STORE_NODE"}
COMM_NODES = (COLL, SEND, RECV)
#: 2.x's front end maps a workload's own tag into [0, 500,000,000) (``Sys::front_end_sim_send``, NATIVE)
NATIVE_TAGS = 500_000_000
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


def _whole(n: Node, name: str, lo: int, hi: int | None = None) -> int | None:
    v = _attr(n, name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        raise ValueError(f"{name}: expected a whole number from {lo}" + (f" to {hi}" if hi is not None else "") +
                         f", got {v!r}")
    return v


def _check_p2p_or_memory(n: Node, rank: int, npus: int) -> str | None:
    """What is wrong with a send, receive or memory node for 2.x (which throws, asserts or hangs on it), or None."""
    try:
        if n.type in (MEM_LOAD, MEM_STORE):
            return "tensor_size: missing; a memory node moves tensor_size bytes" \
                if _whole(n, "tensor_size", 0) is None else None
        size = _whole(n, "comm_size", 1)
        tag = _whole(n, "comm_tag", 0, 2**31 - 1)    # 2.x passes it as a signed 32-bit tag, asserted >= 0
        me, peer = ("comm_src", "comm_dst") if n.type == SEND else ("comm_dst", "comm_src")
        mine = _whole(n, me, 0)
        other = _whole(n, peer, 0, npus - 1)
    except ValueError as e:
        return str(e)
    what = "send" if n.type == SEND else "receive"
    if size is None:
        return "comm_size: missing; expected the bytes to " + what
    if tag is None:
        return "comm_tag: missing; 2.x matches a send and a receive by tag, peers and size"
    if other is None:
        return f"{peer}: missing; expected the rank to {what} {'to' if n.type == SEND else 'from'}"
    if mine is not None and mine != rank:
        return f"{me}: {mine}, but this is rank {rank}'s trace (2.x throws: a {what} is issued by its own rank)"
    if other == rank:
        return f"{peer}: {other}: a {what} to itself (2.x's network asserts against it)"
    return None


def group_of(n: Node) -> int | None:
    """The communicator group a collective node names (``pg_name``); None for the whole system ("" or "0")."""
    pg = _attr(n, "pg_name", "")
    return None if pg in ("", "0", None) else int(str(pg).strip())


def _check_group(n: Node, rank: int, groups: dict[str, tuple[int, ...]]) -> str | None:
    """What 2.x stops on in a collective's ``pg_name`` (``Workload::extract_comm_group``, ``RingTopology``)."""
    pg = _attr(n, "pg_name", "")
    try:
        gid = group_of(n)
    except ValueError:
        return f"pg_name {pg!r}: expected a whole-number communicator group id (2.x reads it with stoi)"
    if gid is None:
        return None
    members = groups.get(str(gid))
    if members is None:
        return (f"pg_name {pg!r}: communicator group {gid} not found (2.x exits); give it in --astra2-comm-group"
                if groups else f"pg_name {pg!r}: a communicator group, but no --astra2-comm-group file is given "
                "(2.x exits: group not found)")
    if rank not in members:
        return f"pg_name {pg!r}: communicator group {gid} does not list rank {rank} (2.x's ring asserts against it)"
    return None


def read_trace(prefix: str, rank: int, dims: int, *, npus: int | None = None,
               groups: dict[str, tuple[int, ...]] | None = None,
               confine_to: Path | None = None) -> dict[int, Node]:
    """``PREFIX.<rank>.et`` as nodes by id, checked for what the mode runs (``npus``: the network's NPUs;
    ``groups``: the communicator groups by id)."""
    groups = groups or {}
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
        if n.type in COMM_NODES and _attr(n, "is_cpu_op"):
            raise SpecError(f"{where}: is_cpu_op: true on a communication node (2.x throws 'Comm node should not be "
                            "on CPU'); expected false", file=file)
        if n.type in (SEND, RECV, MEM_LOAD, MEM_STORE):
            bad = _check_p2p_or_memory(n, rank, npus if npus is not None else rank + 2)
            if bad:
                raise SpecError(f"{where}: {bad}", file=file)
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
            bad = _check_group(n, rank, groups)
            if bad:
                raise SpecError(f"{where}: {bad}", file=file)
        nodes[n.id] = n
    for n in nodes.values():
        for d in (*n.data_deps, *n.ctrl_deps):
            if d not in nodes:
                raise SpecError(f"node {n.id}: depends on node {d}, which the trace does not have (2.x waits for "
                                "it forever)", file=file)
    return nodes


class Workload:
    """One NPU's trace being run."""

    def __init__(self, sys: Sys, nodes: dict[int, Node], result: RankResult, memory: MemoryModel | None = None,
                 groups: dict[str, tuple[int, ...]] | None = None) -> None:
        self.sys, self.nodes, self.res, self.memory = sys, nodes, result, memory
        self.groups = groups or {}
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
        """``HardwareResource::is_available``: a receive never waits; sends, collectives and memory nodes share
        the one communication slot."""
        if self._is_cpu(n):
            return not self.cpu_busy
        if n.type == RECV:
            return True
        return not (self.comp_busy if n.type == COMP else self.comm_busy)

    def _occupy(self, n: Node, busy: bool) -> None:
        if self._is_cpu(n):
            self.cpu_busy = busy
        elif n.type == COMP:
            self.comp_busy = busy
        elif n.type != RECV:
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
            gid = group_of(n)
            group = None if gid is None else (gid, self.groups[str(gid)])
            self.sys.generate(ct, int(_attr(n, "comm_size")), inv, lambda _t, i=n.id: self._coll_done(i), group)
        elif n.type in (SEND, RECV):
            self._point_to_point(n)
        elif n.type in (MEM_LOAD, MEM_STORE):
            assert self.memory is not None
            self.memory.issue(self.sys, int(_attr(n, "tensor_size")), n.id, self.call)
        else:  # invalid and metadata nodes: done at once, their children issued at the next call
            self._skip(n)

    def _point_to_point(self, n: Node) -> None:
        """``issue_send_comm`` / ``issue_recv_comm``: straight to the network (no endpoint delay); a send is done
        when its message arrived, a receive when the message did and it was posted (at once if it came first)."""
        size, tag = int(_attr(n, "comm_size")), ("n", int(_attr(n, "comm_tag")) % NATIVE_TAGS)
        me, backend = self.sys.rank, self.sys.backend
        if n.type == SEND:
            backend.send(me, int(_attr(n, "comm_dst")), size, tag, lambda i=n.id: self.call(i))
        else:
            backend.recv(me, int(_attr(n, "comm_src")), size, tag, lambda i=n.id: self.call(i))

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
        comm = [(self.start[i], self.end[i]) for i, n in self.nodes.items() if n.type in COMM_NODES]
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


def run(net: Network, system: System, traces: list[dict[int, Node]], *, aware: bool,
        memory: RemoteMemory | None = None,
        groups: dict[str, tuple[int, ...]] | None = None) -> tuple[list[RankResult], int]:
    """Every NPU of ``net`` runs its trace on one event loop; (per-rank results, events processed)."""
    loop = EventLoop()
    backend = Backend(loop, net, aware)
    mem = MemoryModel(memory or RemoteMemory())
    results = [RankResult(r) for r in range(net.total)]
    loads = [Workload(Sys(r, loop, net, system, backend), traces[r], results[r], mem, groups)
             for r in range(net.total)]
    for w in loads:
        w.fire()
    loop.run()
    stuck = [w.res.rank for w in loads if not w.finished]
    if stuck:
        raise SpecError(f"rank {stuck[0]} never finishes: its trace waits for a collective or a message the other "
                        f"ranks do not issue the same way ({len(stuck)} rank(s) stuck, as 2.x would hang)")
    return results, loop.events
