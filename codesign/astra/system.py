"""ASTRA-sim 1.0's system layer (Sys.cc, StreamBaseline, DataSet), replayed for node 0. Times in ns.

- Sys events are grouped per integer tick ("buckets", ASTRA's event_queue) and run in registration
  order; an event registered with delay 0 joins the bucket being run.
- A collective of S bytes becomes chunks of S // preferred-dataset-splits (a remainder becomes one
  more, smaller chunk); each chunk walks its phases, one dimension each (``plan``).
- Each dimension queue serves ``active-chunks-per-dimension`` chunk-phases at a time, never preempts,
  and starts waiting chunks by collective priority, then arrival at that queue.
- A chunk moves to its next phase only once every NPU has finished the phase; the last NPU releases
  that barrier after node 0's bucket of the tick, so phase exits are applied at the end of the bucket.
- Collectives run over *logical* dimensions: the network's own, or, when a HYBRID_TRANSFORMER's
  model-parallel group ends inside a dimension, that dimension split in two (Sys::break_dimension); each
  logical dimension has its own queue and maps to a physical dimension and a stride inside it. A
  collective takes part only in the dimensions its layer involves (``involved``), as Sys::generate_collective.
- Priorities follow Sys::get_priority: the loop asks for the system file's policy (``NONE``), for LIFO or
  FIFO explicitly (the hybrid loops do), or for the highest priority (DLRM's embedding all-to-alls).
- ``fast``: packet phases are not replayed packet by packet but registered as their exit, from a profile
  worked out once per (dimension, algorithm, type, size) (``astra.profile``); exits sharing a bucket are
  ordered as the packet path would order them, or ``FastPathFallback`` says the general path must run.
"""
from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from typing import TYPE_CHECKING, Any

from ..errors import SpecError
from ..sim.events import EventLoop
from .algorithms import A2A, AG, AR, RS, NetworkTiming, PacketPhase, one_direct_ns, one_ring_ns, ring_over_ns, tree_ns
from .inputs import AstraNetwork, AstraSystem
from .profile import FastPathFallback, PhaseProfile, profile_phase

if TYPE_CHECKING:
    from .membus import MemBus

HIGHEST_PRIORITY = 100_000_000   # Sys::get_priority for SchedulingPolicy::HIGHEST (DLRM all-to-alls)
_IMPL_KEY = {AR: "all-reduce-implementation", AG: "all-gather-implementation",
             RS: "reduce-scatter-implementation", A2A: "all-to-all-implementation"}
#: asymmetric: duration over all NPUs; ``ringSplit`` is a ring of k NPUs cut from a ring dimension of n > k by a
#: model-parallel group (astra.mode._plan_dimensions names it), whose wrap-around link takes k-1 hops
_TIMED = ("doubleBinaryTree", "oneRing", "oneDirect", "ringSplit")
POLICIES = ("NONE", "LIFO", "FIFO", "HIGHEST")
ALL = (True,) * 10        # ASTRA's involved-dimension vectors have 10 entries


class Collective:
    """A collective (ASTRA's DataSet): finishes when all its chunks have finished all phases."""

    __slots__ = ("total", "finished", "creation_tick", "finish_tick", "callback", "arg")

    def __init__(self, tick: int) -> None:
        self.total = 0
        self.finished = 0
        self.creation_tick = tick
        self.finish_tick = 0
        self.callback: Callable[[Any], None] | None = None
        self.arg: Any = None


class Stream:
    """One chunk of a collective walking its phases: (dim, algorithm, phase type, input bytes)."""

    __slots__ = ("priority", "coll", "phases", "step", "queue", "last_init", "chain", "tail")

    def __init__(self, priority: int, coll: Collective, phases: list[tuple[int, str, str, int]]) -> None:
        self.priority = priority
        self.coll = coll
        self.phases = phases
        self.step = 0
        self.queue: DimQueue | None = None
        self.last_init = 0
        self.chain: Any = None      # fast path: (profile or None, start, start number, started in exits)
        self.tail: Any = None       # fast path: the current phase's last steps (see PhaseProfile)


class DimQueue:
    """A dimension's chunk queue: ``running`` (at most ``threshold``) and a priority heap of waiters."""

    __slots__ = ("dim", "threshold", "running", "waiting", "latency_ns", "chunks")

    def __init__(self, dim: int, threshold: int) -> None:
        self.dim = dim
        self.threshold = threshold
        self.running: list[Stream] = []
        self.waiting: list[tuple[int, int, Stream]] = []
        self.latency_ns = 0
        self.chunks = 0


def _npu_bandwidth(d: Any) -> float:
    """An NPU's bandwidth in a dimension as the analytical backend reports it to Themis (GB/s as written): its
    links, a ring's made even and a fully-connected one's a multiple of its peers, times the link bandwidth."""
    links = d.links
    if d.topology == "Ring":
        links -= links % 2
    elif d.topology == "FullyConnected" and d.npus > 1:
        links -= links % (d.npus - 1)
    return float(links * d.link_bandwidth_gbps)


class SystemLayer:
    """Node 0's system layer: Sys buckets, collective generation, queues, phase transitions."""

    def __init__(self, engine: EventLoop, net: AstraNetwork, system: AstraSystem,
                 ldims: list[tuple[int, int, int]] | None = None, impls: dict[str, tuple[str, ...]] | None = None,
                 bus: MemBus | None = None, fast: bool = False) -> None:
        self.engine = engine
        self.fast = False               # the fast path (module doc); FastPathFallback when it cannot tell
        self.set_fast(fast)
        self.timing = NetworkTiming(net)
        self.system = system
        self.endpoint = system.endpoint_delay
        # logical dimensions: (NPUs, physical dimension, stride of its NPUs inside the physical one)
        self.ldims = ldims if ldims is not None else [(n, d, 1) for d, n in enumerate(self.timing.npus)]
        self.npus = [n for n, _, _ in self.ldims]
        self.impls = impls if impls is not None else {
            AR: system.all_reduce_implementation, AG: system.all_gather_implementation,
            RS: system.reduce_scatter_implementation, A2A: system.all_to_all_implementation}
        self.bus = bus
        self.queues = [DimQueue(d, system.active_chunks_per_dimension) for d in range(len(self.npus))]
        self.lifo = system.scheduling_policy == "LIFO"
        # SCF (smallestFirst): a queue's waiters are a list in ASTRA's order, placed by Sys::insert_stream
        self.scf = system.intra_dimension_scheduling in ("SCF", "smallestFirst")
        self.themis = None
        if system.inter_dimension_scheduling in ("themis", "offlineGreedy"):
            from .themis import Themis
            self.themis = Themis(self.npus, [_npu_bandwidth(d) for d in net.dims])
        self.priority_counter = 0
        self.arrivals = 0
        self.streams_injected = 0
        self.streams_finished = 0
        self.finished_listeners: list[Callable[[Any], None]] = []
        self._buckets: dict[int, list[Any]] = {}
        self._in_bucket = False
        self._exits: list[Stream] = []
        self._plans: dict[tuple[str, tuple[bool, ...]], list[tuple[int, str, str]]] = {}
        self._timed: dict[tuple[str, int, str, int], float] = {}
        self._profiles: dict[tuple[int, str, str, int], PhaseProfile] = {}
        self._fills = 0
        self._in_exits = False

    def set_fast(self, fast: bool) -> None:
        """Run packet phases on the fast path (their exits from profiles) or packet by packet."""
        self.fast = fast
        self._fill = self._fill_fast if fast else self._fill_general

    # --- Sys events ---------------------------------------------------------------------------------
    def tick(self) -> int:
        """Current time as ASTRA's Sys sees it: whole cycles (ns)."""
        return int(self.engine.now)

    def register(self, delay: int, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Sys::register_event: run ``fn(arg)`` ``delay`` cycles from now, in that tick's bucket."""
        now = self.engine.now
        key = int(now + delay)        # == tick + delay for whole-cycle delays
        bucket = self._buckets.get(key)
        if bucket is None:
            self._buckets[key] = [(fn, arg)]
            self.engine.schedule(now + delay, self._run_bucket, key)
        else:
            bucket.append((fn, arg))

    def _run_bucket(self, key: int) -> None:
        bucket = self._buckets[key]
        self._in_bucket = True
        for fn, arg in bucket:          # events registered with delay 0 join this same bucket
            fn(arg)
        del self._buckets[key]
        self._in_bucket = False
        if self._exits:
            # the last NPU releases the phase barrier after node 0's bucket for this tick has run
            exits, self._exits = self._exits, []
            if self.fast:
                if len(exits) > 1:
                    exits = self._exit_order(exits)
                self._in_exits = True
                for stream in exits:
                    self._proceed(stream)
                self._in_exits = False
                return
            for stream in exits:
                self._proceed(stream)

    def phase_exit(self, stream: Stream) -> None:
        """A chunk finished its current phase on node 0; it moves on once the barrier releases."""
        if self._in_bucket:
            self._exits.append(stream)
        else:
            self._proceed(stream)

    def add_finished_streams(self, count: int) -> None:
        """Sys::increase_finished_streams: after a collective's update delay; wakes listeners."""
        self.streams_finished += count
        for fn in list(self.finished_listeners):
            fn(None)

    # --- collectives ------------------------------------------------------------------------------
    def plan(self, ctype: str, involved: tuple[bool, ...] = ALL) -> list[tuple[int, str, str]]:
        """Phases of one chunk of a ``ctype`` collective over the ``involved`` logical dimensions:
        (logical dim, algorithm, phase type). Sys::generate_collective's loops.

        Raises SpecError when the system file's algorithms do not fit the network.
        """
        key = (ctype, involved)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        sysf = self.system
        impl = self.impls[ctype]
        name = _IMPL_KEY[ctype]
        where = dict(file=sysf.path, path=name, line=sysf.line_of(name))
        if impl[0].startswith("one"):
            # one logical ring/direct over all NPUs: a single phase that uses dimension 0's queue
            if len(impl) != 1 or impl[0] not in ("oneRing", "oneDirect", "oneHalvingDoubling"):
                raise SpecError(f"{'_'.join(impl)}: codesign's ASTRA-sim mode takes oneRing, oneDirect or "
                                "oneHalvingDoubling alone (no window)", **where)
            total = self.timing.total
            if impl[0] == "oneHalvingDoubling" and (total & (total - 1) or ctype == A2A):
                raise SpecError("oneHalvingDoubling needs a power-of-two NPU count and has no all-to-all in "
                                f"ASTRA-sim 1.0; this network has {total} NPUs", **where)
            plan = [(0, impl[0], ctype)] if self.timing.total > 1 and involved[0] else []
            self._plans[key] = plan
            return plan
        if len(impl) != len(self.npus) or any(a.startswith("one") for a in impl):
            raise SpecError(f"has {len(impl)} algorithm(s) but the network has {len(self.npus)} "
                            f"dimension(s); expected one per dimension joined by '_'", **where)
        active = [d for d in range(len(self.npus)) if self.npus[d] > 1]
        for d in active:
            n, a = self.npus[d], impl[d]
            if a in ("halvingDoubling", "doubleBinaryTree") and n & (n - 1):
                raise SpecError(f"{a} needs a power-of-two NPU count, but dimension {d} has {n}",
                                **where)
            if a == "halvingDoubling" and ctype == A2A:
                raise SpecError("halvingDoubling has no all-to-all in ASTRA-sim 1.0", **where)
        active = [d for d in active if involved[d]]
        if ctype == AR and sysf.collective_optimization == "localBWAware" and active:
            last = active[-1]
            plan = ([(d, impl[d], RS) for d in active[:-1]] + [(last, impl[last], AR)]
                    + [(d, impl[d], AG) for d in reversed(active[:-1])])
        else:
            order = list(reversed(active)) if ctype == AG else active
            plan = [(d, impl[d], ctype) for d in order]
        self._plans[key] = plan
        return plan

    def _themis_plan(self, themis: Any, ctype: str, chunk: int,
                     involved: tuple[bool, ...]) -> list[tuple[int, str, str]]:
        """A chunk's phases in the dimension order Themis gives it (Sys::generate_collective under offlineGreedy):
        an all-reduce with localBWAware is reduce-scatters in that order and all-gathers back, with no all-reduce
        phase; otherwise one phase of the collective's type per dimension, in that order."""
        order = themis.order(chunk, involved, gather=ctype == AG)
        impl = self.impls[ctype]
        active = [d for d in order if self.npus[d] > 1 and involved[d]]
        if ctype == AR and self.system.collective_optimization == "localBWAware":
            return [(d, impl[d], RS) for d in active] + [(d, impl[d], AG) for d in reversed(active)]
        return [(d, impl[d], ctype) for d in active]

    def _priority(self, policy: str) -> int:
        """Sys::get_priority: LIFO counts up, FIFO down, NONE follows the system file's policy."""
        if policy == "HIGHEST":
            return HIGHEST_PRIORITY
        p = self.priority_counter
        lifo = self.lifo if policy == "NONE" else policy == "LIFO"
        self.priority_counter += 1 if lifo else -1   # LIFO: later is higher; FIFO: lower
        return p

    def generate(self, ctype: str, nbytes: int, policy: str = "NONE",
                 involved: tuple[bool, ...] = ALL) -> Collective | None:
        """Issue a collective of ``nbytes``; None when no dimension takes part (ASTRA: inactive)."""
        plan = self.plan(ctype, involved)
        splits = self.system.preferred_dataset_splits
        chunk = nbytes // splits
        priority = self._priority(policy)    # taken before the chunk loop, even when inactive
        if not plan:
            return None
        if chunk == 0:
            raise SpecError(f"a {ctype} of {nbytes} bytes split into {splits} chunks leaves empty "
                            "chunks (ASTRA-sim 1.0 would never finish it)",
                            file=self.system.path, path="preferred-dataset-splits")
        coll = Collective(self.tick())
        remaining = nbytes
        themis = self.themis if ctype != A2A else None
        if self.themis is not None:
            self.themis.new_collective(self.tick())
        while remaining > 0:
            c = min(chunk, remaining)        # a remainder becomes one extra, smaller chunk
            remaining -= c
            phases, data = [], c
            for dim, algo, ptype in (plan if themis is None else self._themis_plan(themis, ctype, chunk, involved)):
                phases.append((dim, algo, ptype, data))
                n = self.npus[dim]
                if algo != "doubleBinaryTree":   # ASTRA's tree is an all-reduce whatever the phase
                    data = data * n if ptype == AG else data // n if ptype == RS else data
            coll.total += 1
            self.streams_injected += 1
            self._proceed(Stream(priority, coll, phases))
        return coll

    # --- queues and phase transitions (Sys::proceed_to_next_vnet_baseline) --------------------------
    def _proceed(self, stream: Stream) -> None:
        prev = stream.queue
        if prev is not None:
            prev.running.remove(stream)
        if stream.step == len(stream.phases):
            coll = stream.coll
            coll.finished += 1
            if coll.finished == coll.total:
                coll.finish_tick = int(self.engine.now)
                if coll.callback is not None:
                    coll.callback(coll.arg)
            if prev is not None:
                self._removed(prev, stream)
            return
        q = self.queues[stream.phases[stream.step][0]]
        stream.queue = q
        self.arrivals += 1
        if self.scf:
            self._insert_scf(q.waiting, stream)
        else:
            heappush(q.waiting, (-stream.priority, self.arrivals, stream))
        if prev is not None:
            # the freed queue starts its next chunk first (Sys::SchedulerUnit::notify_stream_removed)
            prev.latency_ns += int(self.engine.now) - stream.last_init
            prev.chunks += 1
            if prev.waiting:
                self._fill(prev)
        self._fill(q)

    def _insert_scf(self, waiting: list[tuple[int, int, Stream]], stream: Stream) -> None:
        """Sys::insert_stream under smallestFirst (ASTRA-sim 1.0): an all-reduce or all-to-all phase goes after
        every waiter of its priority or higher (as FIFO); a reduce-scatter or all-gather phase with one phase
        after it goes last, any other before the first waiter whose phase is no smaller, its size the larger
        of the phase's initial and final data (an all-gather's final is n times its input)."""
        dim, algo, ptype, data = stream.phases[stream.step]
        if ptype in (AR, A2A):
            i = next((k for k, w in enumerate(waiting) if w[2].priority < stream.priority), len(waiting))
        elif len(stream.phases) - stream.step - 1 == 1:
            i = len(waiting)
        else:
            size = self._scf_size(stream)
            i = next((k for k, w in enumerate(waiting) if not self._scf_size(w[2]) < size), len(waiting))
        # the list's order is the queue's: heappop would reorder it, so the fill takes waiting[0] (see _take)
        waiting.insert(i, (0, 0, stream))

    def _scf_size(self, stream: Stream) -> int:
        dim, algo, ptype, data = stream.phases[stream.step]
        n = self.timing.total if algo.startswith("one") else self.ldims[dim][0]
        final = data * n if ptype == AG else data // n if ptype == RS else data
        return max(data, final)

    def _take(self, waiting: list[tuple[int, int, Stream]]) -> Stream:
        return waiting.pop(0)[2] if self.scf else heappop(waiting)[2]

    def _removed(self, q: DimQueue, stream: Stream) -> None:
        q.latency_ns += int(self.engine.now) - stream.last_init
        q.chunks += 1
        if q.waiting:
            self._fill(q)

    #: start waiting chunks while the queue has room (Sys::SchedulerUnit::notify_stream_added):
    #: ``_fill_general`` or ``_fill_fast``, as ``set_fast`` chose
    _fill: Callable[[DimQueue], None]

    def _fill_general(self, q: DimQueue) -> None:
        waiting, running = q.waiting, q.running
        if len(running) >= q.threshold:
            return
        tick = int(self.engine.now)
        while waiting and len(running) < q.threshold:
            stream = self._take(waiting)
            running.append(stream)
            stream.last_init = tick
            dim, algo, ptype, data = stream.phases[stream.step]
            stream.step += 1
            if algo in _TIMED:
                self.register(self._timed_ns(algo, dim, ptype, data), self.phase_exit, stream)
            else:
                PacketPhase(self, stream, dim, algo, ptype, data).start()

    def _fill_fast(self, q: DimQueue) -> None:
        """The fast path's _fill: a packet phase is one registration of its exit (astra.profile)."""
        waiting, running = q.waiting, q.running
        if len(running) >= q.threshold:
            return
        now = self.engine.now
        tick = int(now)
        profiles = self._profiles
        while waiting and len(running) < q.threshold:
            stream = self._take(waiting)
            running.append(stream)
            stream.last_init = tick
            dim, algo, ptype, data = stream.phases[stream.step]
            stream.step += 1
            self._fills += 1
            if algo in _TIMED:
                t = self._timed_ns(algo, dim, ptype, data)
                if t != int(t):
                    raise FastPathFallback("a fractional phase time")
                stream.chain = (None, now, self._fills, self._in_exits)
                self.register(t, self.phase_exit, stream)
                continue
            key = (dim, algo, ptype, data)
            prof = profiles.get(key)
            if prof is None:
                prof = profiles[key] = profile_phase(self, dim, algo, ptype, data)
            stream.chain = (prof, now, self._fills, self._in_exits)
            if self.endpoint > 0:
                # the exit's bucket is in the future either way, so it can be registered now: only the
                # exits' order inside that bucket depends on when, and _exit_order restores it
                self.register(prof.exit_delay, self.phase_exit, stream)
            else:
                # with no endpoint wait the exit's bucket may be the receive's own tick, which may have
                # run already: register from the receive, as the packet path does
                stream.tail = prof
                self.engine.schedule(now + prof.last_receive, self._virtual_receive, stream)

    # --- the fast path's virtual phases ---------------------------------------------------------------
    def _virtual_receive(self, stream: Stream) -> None:
        self.register(self.endpoint, self._virtual_bundle, stream)

    def _virtual_bundle(self, stream: Stream) -> None:
        proc = stream.tail.processing
        if proc is None:
            self.phase_exit(stream)
        else:
            self.register(proc, self.phase_exit, stream)

    def _exit_order(self, exits: list[Stream]) -> list[Stream]:
        """The order ASTRA's event queue gives phase exits that fall in one bucket, from what caused them.

        Two exits are ordered by the events that registered them; events at different times run in time
        order, two receives at one time in the order they were sent, two entries of one bucket in the
        order they were registered, so the comparison walks each exit's causes back (``PhaseProfile.chain``)
        until they differ, ending at the phases' starts (in start order). When the causes are a receive and
        a bucket entry at the same time, or an exit of a phase whose causes were not recorded, the order
        would depend on events the fast path skipped: it gives up and the run is redone on the general path.
        """
        def item(c: Any, i: int) -> tuple[float, str]:
            offsets, start = (() if c[0] is None else c[0].chain), c[1]
            if i < len(offsets):
                off, kind = offsets[i]
                return start + off, kind
            return start, "S"

        def cmp(a: Stream, b: Stream) -> int:
            ca, cb = a.chain, b.chain
            if ca is None or cb is None:
                raise FastPathFallback("an exit of a packet-level phase shares a bucket")
            i = 0
            while True:
                (ta, ka), (tb, kb) = item(ca, i), item(cb, i)
                if ta != tb:
                    return -1 if ta < tb else 1
                if ka == kb == "S":
                    return -1 if ca[2] < cb[2] else 1
                if ka != kb:
                    if ka == "S" and kb == "B" and ca[3]:
                        return 1          # a start in end-of-bucket exits runs after the bucket's entries
                    if kb == "S" and ka == "B" and cb[3]:
                        return -1
                    raise FastPathFallback("a receive and a bucket entry at one time")
                i += 1

        from functools import cmp_to_key
        return sorted(exits, key=cmp_to_key(cmp))

    def _timed_ns(self, algo: str, dim: int, ptype: str, data: int) -> float:
        key = (algo, dim, ptype, data)
        t = self._timed.get(key)
        if t is None:
            if algo == "doubleBinaryTree":
                t = tree_ns(self.timing, self.ldims[dim][1], data, self.endpoint)
            elif algo == "oneRing":
                t = one_ring_ns(self.timing, ptype, data, self.endpoint)
            elif algo == "ringSplit":
                n, pd, stride = self.ldims[dim]
                below = 1
                for m in self.timing.npus[:pd]:
                    below *= m
                t = ring_over_ns(self.timing, [k * stride * below for k in range(n)], ptype, data, self.endpoint)
            else:
                t = one_direct_ns(self.timing, ptype, data, self.endpoint)
            self._timed[key] = t
        return t
