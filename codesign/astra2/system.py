"""ASTRA-sim 2.x's system layer, one ``Sys`` per NPU: event buckets, collectives cut into chunks (streams),
per-dimension queues and the endpoint (times in ns = cycles of 2.x's 1 GHz clock, sizes in bytes).

After ``Sys.cc``, ``StreamBaseline.cc``, ``QueueLevelHandler.cc``, ``MemBus.cc``, ``PacketBundle.cc``:

- a collective of S bytes is cut into chunks of S // k (k = ``preferred-dataset-splits``); a chunk smaller than
  the NPU count is raised to it (not for an all-gather), and the last chunk may be short;
- each chunk is a stream that walks its phases (one per involved dimension; ``localBWAware`` all-reduce:
  reduce-scatters up, an all-reduce on the last dimension, all-gathers down), moving on as soon as *this*
  NPU finished the phase (2.x has no barrier across NPUs between phases);
- a dimension's queue runs ``active-chunks-per-dimension`` streams at once; waiting streams are ordered by
  their collective's priority (LIFO: later collectives first; FIFO: earlier first), behind started ones;
- every packet visits the endpoint: ``endpoint-delay`` cycles, plus, when it carries partial sums,
  3 x int(bytes / local-mem-bw) cycles of local processing (one write, two reads).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..errors import SpecError
from ..sim.events import EventLoop
from .collectives import (
    ACW,
    AG,
    AR,
    CW,
    BinaryTree,
    DoubleBinaryTreeAlgo,
    ListRing,
    LogicalRing,
    base_algorithm,
    make_algorithm,
)
from .inputs import Network, System
from .network import Backend


class DataSet:
    """One collective on one NPU: done when its streams (chunks) are."""

    __slots__ = ("total", "finished", "created", "notify")

    def __init__(self, total: int, now: int, notify: Callable[[int], None]) -> None:
        self.total, self.finished, self.created, self.notify = total, 0, now, notify

    def stream_finished(self, now: int) -> None:
        self.finished += 1
        if self.finished == self.total:
            self.notify(now - self.created)


class Phase:
    __slots__ = ("queue", "algo", "ctype")

    def __init__(self, queue: int, algo: Any, ctype: str) -> None:
        self.queue, self.algo, self.ctype = queue, algo, ctype


class Stream:
    __slots__ = ("sid", "priority", "dataset", "phases", "queue", "phase", "initialized")

    def __init__(self, sid: int, priority: int, dataset: DataSet, phases: list[Phase]) -> None:
        self.sid, self.priority, self.dataset, self.phases = sid, priority, dataset, phases
        self.queue = -1
        self.phase: Phase | None = None
        self.initialized = False
        for p in phases:
            p.algo.stream = self


class Sys:
    """One NPU's system layer."""

    def __init__(self, rank: int, loop: EventLoop, net: Network, system: System, backend: Backend) -> None:
        self.rank, self.loop, self.net, self.cfg, self.backend = rank, loop, net, system, backend
        self.total = net.total
        self._buckets: dict[int, list[tuple[Callable[[Any], None], Any]]] = {}
        dims = len(net.npus)
        self.active: list[list[Stream]] = [[] for _ in range(dims)]
        self.running = [0] * dims
        self.threshold = system.active_chunks     # one queue per dimension (2.x's num-queues-per-dim default)
        self.priority_counter = 0
        self.num_streams = 0
        self.group_streams: dict[int, int] = {}     # a group's stream ids start at id x 10^6 (CommunicatorGroup)
        self.group_rings: dict[int, ListRing] = {}
        self._topologies: dict[tuple[str, ...], list[tuple[LogicalRing, str]]] = {}
        self._tree_counter: dict[tuple[str, int], int] = {}
        self._trees: dict[tuple[str, int], tuple[BinaryTree, BinaryTree]] = {}
        self.rings = []
        stride = 1
        for n in net.npus:
            self.rings.append(LogicalRing(rank, n, stride))
            stride *= n
        # local processing: 2.x divides by local-mem-bw x 1e9 B/s and multiplies by 1e9; absent, it divides by 0
        # and the x86 conversion of infinity to an unsigned integer gives 0: no processing delay
        self._mem_bw = system.local_mem_bw * 1e9

    # ------------------------------------------------------------ events
    def register(self, delay: int, fn: Callable[[Any], None], arg: Any = None) -> None:
        """``try_register_event``: ``fn(arg)`` in this NPU's bucket of tick now + delay."""
        t = self.loop.now + delay
        b = self._buckets.get(t)
        if b is None:
            b = self._buckets[t] = []
            self.loop.schedule(t, self._run_bucket, t)
        b.append((fn, arg))

    def _run_bucket(self, t: int) -> None:
        b = self._buckets[t]
        i = 0
        while i < len(b):
            fn, arg = b[i]
            fn(arg)
            i += 1
        del self._buckets[t]

    # ------------------------------------------------------------ endpoint
    def bundle(self, stream: Stream | None, processed: bool, nbytes: int) -> None:
        """A ``PacketBundle`` through the MemBus (no shared bus): the endpoint delay, then local processing."""
        self.register(self.cfg.endpoint_delay, self._bundle_done, (stream, processed, nbytes))

    def _bundle_done(self, arg: tuple[Stream, bool, int]) -> None:
        stream, processed, nbytes = arg
        if processed:
            self.register(3 * self._processing(nbytes), self._bundle_done, (stream, False, nbytes))
            return
        assert stream.phase is not None
        stream.phase.algo.run("general")

    def _processing(self, nbytes: int) -> int:
        if self._mem_bw == 0:
            return 0
        return int(nbytes / self._mem_bw * 1e9)

    def send_recv(self, stream: Stream, to: int, frm: int, nbytes: int) -> None:
        tag = ("c", stream.sid % 500_000_000)        # 2.x's COLLECTIVE tag range has 5 x 10^8 values
        self.backend.send(self.rank, to, nbytes, tag)
        self.backend.recv(self.rank, frm, nbytes, tag, lambda: self._received(stream))

    def _received(self, stream: Stream) -> None:
        assert stream.phase is not None
        stream.phase.algo.run("received")

    # ------------------------------------------------------------ collectives
    def generate(self, ctype: str, size: int, involved: list[bool], notify: Callable[[int], None],
                 group: tuple[int, tuple[int, ...]] | None = None) -> DataSet:
        """``Sys::generate_collective`` for one NPU: chunks, their phases, the ready list; ``group``: the
        communicator group (id, ranks) of the collective, None for the whole system."""
        cfg = self.cfg
        chunk = size // cfg.splits
        if ctype != AG and self.total > chunk:
            chunk = self.total
            size = cfg.splits * chunk
        streams = math.ceil(size / chunk)
        ds = DataSet(streams, self.loop.now, notify)
        pri = self.priority_counter
        self.priority_counter += 1 if cfg.scheduling_policy == "LIFO" else -1
        impl = cfg.implementations.get(ctype)
        if impl is None:
            raise SpecError(f"the trace has a {ctype} but the system file gives no "
                            f"{ctype.lower().replace('_', '-')}-implementation", file=cfg.path)
        count = 0
        while size > 0:
            count += 1
            size = 0 if chunk > size else size - chunk
            if group is not None and len(group[1]) < self.total:
                phases = self._group_plan(ctype, chunk, group)
            else:      # a group of every NPU takes the system's plan, every dimension involved
                phases = self._plan(ctype, chunk, involved if group is None else [True] * 10, impl)
            if not phases:
                raise SpecError(f"a {ctype} that spans no dimension of more than one NPU (2.x never finishes it)",
                                file=cfg.path)
            if group is None:
                sid = self.num_streams
                self.num_streams += 1
            else:
                sid = self.group_streams.get(group[0], group[0] * 1_000_000)
                self.group_streams[group[0]] = sid + 1
            stream = Stream(sid, pri, ds, phases)
            self._proceed_first(stream)
        ds.total = count
        return ds

    def _topology(self, impl: tuple[str, ...]) -> list[tuple[LogicalRing, str]]:
        """``GeneralComplexTopology``: a ring per dimension with its algorithm, up to the first one* algorithm,
        which is one ring of every NPU (offset 1) and the last logical dimension."""
        out: list[tuple[LogicalRing, str]] = []
        for d, name in enumerate(impl):
            if name.startswith("one"):
                out.append((LogicalRing(self.rank, self.total, 1), base_algorithm(name)))
                return out
            out.append((self.rings[d], name))
        return out

    def _tree(self, ctype: str, d: int, ring: LogicalRing) -> BinaryTree:
        """``DoubleBinaryTreeTopology::get_topology``: the collective type's topology hands out its RootMax and
        RootMin trees of dimension ``d`` in turn, one per phase built."""
        if ring.n & (ring.n - 1):
            raise SpecError(f"doubleBinaryTree on logical dimension {d} of {ring.n} NPUs: expected a power-of-two NPU "
                            "count (2.x's tree leaves the others out and crashes)", file=self.cfg.path)
        key = (ctype, d)
        k = self._tree_counter.get(key, 0)
        self._tree_counter[key] = k + 1
        trees = self._trees.get(key)
        if trees is None:
            members = [ring.member(i) for i in range(ring.n)]
            trees = self._trees[key] = (BinaryTree(members, True), BinaryTree(members, False))
        return trees[k % 2]

    def _plan(self, ctype: str, data: int, involved: list[bool], impl: tuple[str, ...]) -> list[Phase]:
        topo = self._topologies.get(impl)
        if topo is None:
            topo = self._topologies[impl] = self._topology(impl)
        order = list(range(len(topo)))
        if ctype == AG:
            order.reverse()
        live = [d for d in order if topo[d][0].n > 1 and involved[d]]
        steps: list[tuple[str, int, int]] = []
        if ctype != AR or self.cfg.collective_optimization == "baseline":
            steps = [(ctype, d, CW) for d in live]
        elif live:
            last = live[-1]
            steps = [("REDUCE_SCATTER", d, CW) for d in live[:-1]] + [(AR, last, CW)] + \
                [(AG, d, ACW) for d in reversed(live[:-1])]
        out = []
        for c, d, direction in steps:
            ring, name = topo[d]
            if name == "halvingDoubling" and (c == "ALL_TO_ALL" or ring.n & (ring.n - 1)):
                raise SpecError(f"halvingDoubling on logical dimension {d} of {ring.n} NPUs: expected a power-of-two "
                                "NPU count and no all-to-all (2.x stops on it)", file=self.cfg.path)
            if name == "doubleBinaryTree":
                algo: Any = DoubleBinaryTreeAlgo(self, self._tree(ctype, d, ring), data)
            else:
                algo = make_algorithm(self, c, name, ring, data, direction)
            out.append(Phase(d, algo, c))
            data = algo.final
        return out

    def _group_plan(self, ctype: str, data: int, group: tuple[int, tuple[int, ...]]) -> list[Phase]:
        """A group smaller than the system: one phase on a logical ring of its ranks, in dimension 0's queue,
        clockwise (``CommunicatorGroup::get_collective_plan``: one dimension, every collective type as is)."""
        gid, members = group
        ring = self.group_rings.get(gid)
        if ring is None:
            ring = self.group_rings[gid] = ListRing(self.rank, members)
        if ring.n == 1:
            return []
        name = base_algorithm(self.cfg.group_implementations[ctype])
        if name == "doubleBinaryTree":
            raise SpecError(f"doubleBinaryTree on communicator group {gid}: 2.x runs a group on a ring topology, "
                            "which its tree algorithm cannot use (it crashes); expected ring, direct or "
                            "halvingDoubling", file=self.cfg.path)
        if name == "halvingDoubling" and (ctype == "ALL_TO_ALL" or ring.n & (ring.n - 1)):
            raise SpecError(f"halvingDoubling on communicator group {gid} of {ring.n} ranks: expected a power-of-two "
                            "group and no all-to-all (2.x stops on it)", file=self.cfg.path)
        return [Phase(0, make_algorithm(self, ctype, name, ring, data, CW), ctype)]

    def _insert(self, q: list[Stream], s: Stream) -> None:
        i = 0
        while i < len(q) and (q[i].initialized or q[i].priority >= s.priority):
            i += 1
        q.insert(i, s)

    def _proceed_first(self, s: Stream) -> None:
        """The ready list is scheduled at once (2.x's limits are 10^8 streams): the stream's first phase."""
        self.proceed(s)

    def proceed(self, s: Stream) -> None:
        """``proceed_to_next_vnet_baseline``: the stream leaves its phase's queue for the next, or ends."""
        prev = s.queue
        if not s.phases:
            s.dataset.stream_finished(self.loop.now)
        if prev >= 0:
            self.active[prev].remove(s)
        if not s.phases:
            if prev >= 0:
                self._removed(prev)
            return
        p = s.phases.pop(0)
        s.queue, s.phase, s.initialized = p.queue, p, False
        self._insert(self.active[p.queue], s)
        if prev >= 0:
            self._removed(prev)
        self._start(p.queue)

    def _removed(self, q: int) -> None:
        self.running[q] -= 1
        self._start(q)

    def _start(self, q: int) -> None:
        lst = self.active[q]
        i = self.running[q]
        while i < len(lst) and self.running[q] < self.threshold:
            s = lst[i]
            s.initialized = True
            self.running[q] += 1
            i += 1
            assert s.phase is not None
            s.phase.algo.run("init")
