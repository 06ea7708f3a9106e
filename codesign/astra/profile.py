"""The fast path's phase profiles: a ring, direct or halving-doubling phase worked out once and kept.

Without the shared bus, a packet phase on node 0 is a fixed pattern: endpoint visit, send, receive after
the message time, endpoint visit (and local reduction), send again; ring and halving-doubling keep one
packet in flight, direct one per peer. Nothing outside the phase can change its timing: the analytical
network never queues, and the fixed endpoint wait does not depend on other packets. So the phase's
timeline, relative to its start, is the same every time a chunk of that size starts it on that dimension
("batched identical chunks": the k chunks of a collective, and the same layer in every pass, share one
profile).

``profile_phase`` gives, relative to the start: the phase's last receive, the reduction after it, when
the exit happens, and (computed when first asked) the events that caused the exit. Ring and
halving-doubling are walked along their one chain with ASTRA's packet machine (``algorithms.PacketPhase``)
and no event queue (``_linear_profile``); direct is replayed on a private event queue (``_Recorder``),
which gives the same result for the others too. The system layer then registers each chunk's exit in the
Sys bucket the packet path would use (``system.SystemLayer._fill_fast``), and orders exits that share a
bucket from their causes exactly as the packet path would (``SystemLayer._exit_order``).

The profile is exact only if every time is a whole number of ns (then a bucket runs at its key's time,
whoever created it) and the phase's own events at one time run in an order the phase alone decides
(``_Recorder._check_order``); otherwise ``FastPathFallback`` is raised and the run is redone on the general
path.
"""
from __future__ import annotations

from heapq import heappop, heappush
from typing import Any

from .algorithms import A2A, AG, AR, RS, PacketPhase, processing_ns

__all__ = ["FastPathFallback", "PhaseProfile", "profile_phase", "recorded_profile"]


class FastPathFallback(Exception):
    """The fast path cannot prove it reproduces the general path's order here; run the general path."""


class PhaseProfile:
    """A phase relative to its start (ns): its last receive, the reduction after it, and its causes.

    ``processing`` is None when the packet of the last receive carries nothing to reduce (the exit runs
    in the endpoint visit's bucket) or the reduction's cycles (the exit is registered that much later);
    ``exit_delay`` is from the start to the exit. ``chain`` lists the events that caused the exit, newest
    first, as (offset from the start, kind): "R" a receive (an engine event), "B" a Sys bucket entry; the
    phase's start ends the chain. Only exits that share a bucket need it, so it may be computed late.
    """

    __slots__ = ("last_receive", "processing", "exit_delay", "_chain", "_redo")

    def __init__(self, last_receive: float, processing: int | None, exit_delay: int,
                 chain: tuple[tuple[float, str], ...] | None = None, redo: Any = None) -> None:
        self.last_receive = last_receive
        self.processing = processing
        self.exit_delay = exit_delay
        self._chain = chain
        self._redo = redo

    @property
    def chain(self) -> tuple[tuple[float, str], ...]:
        if self._chain is None:
            self._chain = self._redo()
        return self._chain

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PhaseProfile) and (self.last_receive, self.processing, self.exit_delay,
                                                    self.chain) == (other.last_receive, other.processing,
                                                                    other.exit_delay, other.chain)

    def __repr__(self) -> str:
        return (f"PhaseProfile(last_receive={self.last_receive}, processing={self.processing}, "
                f"exit_delay={self.exit_delay}, chain={self.chain})")


class _Clock:
    """The engine as PacketPhase sees it: ``now`` and ``schedule`` (a receive)."""

    __slots__ = ("rec", "now")

    def __init__(self, rec: _Recorder) -> None:
        self.rec = rec
        self.now: float = 0

    def schedule(self, t: float, fn: Any, arg: Any = None) -> None:
        self.rec.push(t, "R", fn, arg)


class _Recorder:
    """A private host for one PacketPhase: its events, in ASTRA's order, with what caused each."""

    def __init__(self, host: Any) -> None:
        self.engine = _Clock(self)
        self.timing = host.timing
        self.endpoint = host.endpoint
        self.ldims = host.ldims
        self.bus = None
        self.heap: list[tuple[float, int, int]] = []
        self.events: list[tuple[float, str, int, Any, Any]] = []   # time, kind, cause, fn, arg
        self.current = -1                                        # -1: the phase's start
        self.exit_event: int | None = None

    def push(self, t: float, kind: str, fn: Any, arg: Any) -> None:
        if t != int(t):
            raise FastPathFallback("a fractional message time")
        i = len(self.events)
        self.events.append((t, kind, self.current, fn, arg))
        heappush(self.heap, (t, i, i))

    def register(self, delay: int, fn: Any, arg: Any = None) -> None:
        self.push(self.engine.now + delay, "B", fn, arg)

    def phase_exit(self, stream: Any) -> None:
        self.exit_event = self.current

    def run(self) -> None:
        while self.heap and self.exit_event is None:
            t, _, i = heappop(self.heap)
            self.current = i
            self.engine.now = t
            _, _, _, fn, arg = self.events[i]
            fn(arg)
        self._check_order()

    def _check_order(self) -> None:
        """Refuse a phase whose own events at one time could run in another order in ASTRA's queue.

        Receives at one time run in the order they were sent, bucket entries in the order they were
        registered; but a receive and a bucket entry at the same time run in the order of the receive and
        of the bucket's creation, which other phases decide. That is harmless only when one receive at
        that time caused (directly or through other entries at that time) every bucket entry there.
        """
        at: dict[float, list[int]] = {}
        for i, (t, _, _, _, _) in enumerate(self.events):
            at.setdefault(t, []).append(i)
        for t, ids in at.items():
            kinds = {self.events[i][1] for i in ids}
            if len(kinds) < 2:
                continue
            receives = [i for i in ids if self.events[i][1] == "R"]
            if len(receives) > 1:
                raise FastPathFallback("a phase's receives and bucket entries coincide")
            for i in ids:
                j = i
                while j >= 0 and self.events[j][0] == t and self.events[j][1] == "B":
                    j = self.events[j][2]
                if j != receives[0] and self.events[i][1] == "B":
                    raise FastPathFallback("a phase's receive and bucket entry coincide")


class _Step:
    """A host for a one-packet-in-flight PacketPhase that notes its single pending request."""

    __slots__ = ("engine", "timing", "endpoint", "ldims", "bus", "pending", "done", "now", "due")

    def __init__(self, host: Any) -> None:
        self.engine = self
        self.timing = host.timing
        self.endpoint = host.endpoint
        self.ldims = host.ldims
        self.bus = None
        self.now: float = 0
        self.pending: Any = None      # the endpoint visit's argument: bytes to reduce, or -1
        self.due: float = 0           # when the packet in flight arrives
        self.done = False

    def register(self, delay: int, fn: Any, arg: Any = None) -> None:
        self.pending = arg

    def schedule(self, t: float, fn: Any, arg: Any = None) -> None:
        self.due = t

    def phase_exit(self, stream: Any) -> None:
        self.done = True


def _linear_profile(host: Any, dim: int, algo: str, ptype: str, data: int,
                    with_chain: bool = False) -> PhaseProfile:
    """Ring and halving-doubling keep one packet in flight, so their events form one chain: a packet is
    inserted (at the start or on a receive), visits the endpoint (E), is reduced if it carries partials
    (the reduction's cycles), then PacketPhase._general sends it and its receive inserts the next. This
    walks that chain with PacketPhase's own methods, without an event queue; ``recorded_profile`` gives
    the same profile (tests/test_sim_astra_modes.py checks it). The causes are listed only when asked
    (``with_chain``); otherwise the profile walks the chain again when they are first needed."""
    st = _Step(host)
    ph = PacketPhase(st, None, dim, algo, ptype, data)
    ph.start()
    e = host.endpoint
    chain: list[tuple[float, str]] = []     # oldest first; reversed at the end
    inserted = 0.0                          # when the current packet was inserted (0: the start)
    first = True
    while True:
        visit = inserted + e
        proc = None if st.pending < 0 else processing_ns(st.pending)
        general = visit if proc is None else visit + proc
        if with_chain:
            if not first:
                chain.append((inserted, "R"))
            chain.append((visit, "B"))          # _general runs inside the endpoint visit's entry,
            if proc is not None:
                chain.append((general, "B"))    # or is its own entry, registered by the visit
        st.now = general
        ph._general(None)
        if st.done:
            if not with_chain:
                return PhaseProfile(inserted, proc, int(general), None,
                                    lambda: _linear_profile(host, dim, algo, ptype, data, True).chain)
            chain.pop()                         # the exit's own entry is not one of its causes
            chain.reverse()
            return PhaseProfile(inserted, proc, int(general), tuple(chain))
        if st.due != int(st.due):               # every time whole, or a bucket's time depends on
            raise FastPathFallback("a fractional message time")   # who created it
        st.now = inserted = st.due
        first = False
        ph._received(None)


def _ring_profile(host: Any, dim: int, ptype: str, data: int) -> PhaseProfile:
    """A ring phase in closed form: ``_linear_profile``'s walk, with PacketPhase's bookkeeping written out.

    Packets k = 0..count (count = the messages sent) are inserted at the start and at each receive; every
    n-th one opens a round (it goes out without a reduction) and flips the round's toggle, so packet k is
    reduced when it is not the first of its round and the phase reduces there (reduce-scatter always,
    all-reduce in its first, third... round). Packet k's endpoint visit and reduction end at its send;
    the send of packet ``count`` never happens: that is the exit.
    """
    n, phys, stride = host.ldims[dim]
    e = host.endpoint
    if ptype == AG:
        count, msg = n - 1, data
    else:
        msg = data // n
        count = 2 * (n - 1) if ptype == AR else n * (n - 1) // 2 if ptype == A2A else n - 1
    t = host.timing.message_ns(phys, msg, stride)
    if t != int(t):
        raise FastPathFallback("a fractional message time")
    reduce_ns = processing_ns(msg)
    inserted = 0.0
    k = 0
    while True:
        reduced = k % n != 0 and (ptype == RS or (ptype == AR and (k // n) % 2 == 0))
        proc = reduce_ns if reduced else None
        general = inserted + e + (reduce_ns if reduced else 0)
        if k == count:
            return PhaseProfile(inserted, proc, int(general), None,
                                lambda: _linear_profile(host, dim, "ring", ptype, data, True).chain)
        inserted = general + t
        k += 1


def profile_phase(host: Any, dim: int, algo: str, ptype: str, data: int) -> PhaseProfile:
    """Work out one ring, direct or halving-doubling phase from time 0: how and when it ends."""
    if algo == "ring":
        return _ring_profile(host, dim, ptype, data)
    if algo == "halvingDoubling":
        return _linear_profile(host, dim, algo, ptype, data)
    return recorded_profile(host, dim, algo, ptype, data)


def recorded_profile(host: Any, dim: int, algo: str, ptype: str, data: int) -> PhaseProfile:
    """The profile from a full replay on a private event queue (any packet phase, direct included)."""
    rec = _Recorder(host)
    PacketPhase(rec, None, dim, algo, ptype, data).start()
    rec.run()
    if rec.exit_event is None:
        raise RuntimeError("a phase replayed alone never ended")   # cannot happen
    # the exit ran in a bucket entry: the endpoint visit after the last receive, or the reduction after it
    chain = []
    i = rec.events[rec.exit_event][2]        # what registered the exit's entry
    while i >= 0:
        t, kind, cause, _, _ = rec.events[i]
        chain.append((t, kind))
        i = cause
    exit_t, _, cause, _, _ = rec.events[rec.exit_event]
    if rec.events[cause][1] == "R":          # exit inside the endpoint visit after the receive
        last, processing = rec.events[cause][0], None
    else:                                    # exit after a reduction registered by the endpoint visit
        bundle_t, _, receive, _, _ = rec.events[cause]
        last, processing = rec.events[receive][0], int(exit_t - bundle_t)
    if last + host.endpoint + (processing or 0) != exit_t:
        raise FastPathFallback("an unexpected phase ending")
    return PhaseProfile(last, processing, int(exit_t), tuple(chain))
