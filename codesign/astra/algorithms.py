"""ASTRA-sim 1.0's analytical message timing and collective algorithms, seen from node 0 (ns, bytes).

Every NPU of an ASTRA run executes the same program and the congestion-unaware analytical backend never
queues messages, so for the symmetric algorithms (ring, direct, halving-doubling on one dimension) node
0's timeline is everybody's: a message node 0 receives was sent by its partner at the instant node 0
sent its own message of the same step, so it arrives after the same delay T. Those run as ASTRA's packet
state machine (``PacketPhase``, after Ring.cc / AllToAll.cc / HalvingDoubling.cc). The asymmetric ones
(double binary tree, oneRing, oneDirect over all NPUs; oneHalvingDoubling is symmetric and runs as a packet
phase over all NPUs) end when the last NPU is done, because a chunk
only moves on once every NPU has finished the phase; their duration is computed over all NPUs.

Per packet, as ASTRA does it: a visit to the endpoint (MemBus) of ``endpoint-delay`` cycles; a packet
carrying data to reduce also pays 3 x floor(bytes / 500000) cycles of local processing (PacketBundle with
the SimpleMemory that ASTRA 1.0's analytical front end builds: one write and two reads at 500000 B/ns).
"""
from __future__ import annotations

from collections import deque
from functools import partial
from typing import Any, Protocol

from ..errors import SpecError
from ..sim.events import EventLoop
from .inputs import AstraNetwork

AR, AG, RS, A2A = "ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL"
PROCESSING_BYTES_PER_NS = 500_000


def processing_ns(nbytes: int) -> int:
    """Local reduction of a received packet: mem_write + 2 x mem_read, floor(bytes/500000) cycles each."""
    return 3 * (nbytes // PROCESSING_BYTES_PER_NS)


class NetworkTiming:
    """Message times of the analytical HierarchicalTopology, in ns."""

    def __init__(self, net: AstraNetwork) -> None:
        self.net = net
        self.npus = [d.npus for d in net.dims]
        self.total = net.npus
        self._bw: list[float] = []
        for i, d in enumerate(net.dims):
            bw = d.link_bandwidth_gbps * (1 << 30) / 1e9       # ASTRA reads GB/s GiB-based
            if d.topology == "Ring":
                scalar = d.links - (d.links % 2)               # an odd ring link is left unused
            elif d.topology == "FullyConnected":
                scalar = d.links // (d.npus - 1) if d.npus > 1 else 1   # integer division, as ASTRA
            else:
                scalar = d.links
            if scalar == 0 and d.npus > 1:
                need = "at least 2 (a ring uses links in pairs)" if d.topology == "Ring" else \
                    f"at least units-count - 1 = {d.npus - 1} (one per peer)"
                raise SpecError(f"links-count {d.links} gives this {d.topology} dimension no bandwidth "
                                f"(ASTRA-sim 1.0 stops on it); expected {need}", file=net.path,
                                path=f"links-count[{i}]")
            self._bw.append(bw * scalar)
        self._cache: dict[tuple[int, int, int], float] = {}

    def hops(self, dim: int, distance: int) -> int:
        """Hops between two NPUs ``distance`` apart (in index) inside ``dim``."""
        topo = self.net.dims[dim].topology
        if topo == "Ring":
            distance %= self.npus[dim]
            return min(distance, self.npus[dim] - distance)
        return 1 if topo == "FullyConnected" else 2

    def message_ns(self, dim: int, nbytes: int, distance: int) -> float:
        """One message of ``nbytes`` between NPUs ``distance`` apart inside ``dim`` (ns).

        ASTRA accumulates the link latency, serialization, NIC and router terms in an int (each
        addition truncates), then takes the max with the scaled HBM time, which stays fractional.
        """
        key = (dim, nbytes, distance)
        t = self._cache.get(key)
        if t is None:
            d = self.net.dims[dim]
            comm = int(self.hops(dim, distance) * d.link_latency_ns)
            comm = int(comm + nbytes / self._bw[dim])
            comm = int(comm + 2 * d.nic_latency_ns)
            if d.topology == "Switch":
                comm = int(comm + d.router_latency_ns)
            hbm = (d.hbm_latency_ns + nbytes / d.hbm_bandwidth) * d.hbm_scale
            t = comm if comm > hbm else hbm
            self._cache[key] = t
        return t

    def pair_ns(self, src: int, dst: int, nbytes: int) -> float:
        """A message between global NPU ids: it travels in the highest dimension where they differ."""
        a, b, dim = src, dst, -1
        diff = 0
        for d, n in enumerate(self.npus):
            if a % n != b % n:
                dim, diff = d, abs(a % n - b % n)
            a //= n
            b //= n
        return self.message_ns(dim, nbytes, diff)

    def max_ns(self, nbytes: int) -> float:
        """Slowest message from an NPU to any other (farthest peer of every dimension)."""
        return max(self.message_ns(d, nbytes, n // 2) for d, n in enumerate(self.npus) if n > 1)


def tree_ns(timing: NetworkTiming, dim: int, data: int, e: int) -> float:
    """DoubleBinaryTreeAllReduce over ``dim``: until the last leaf has its result (ns).

    The tree is ASTRA's: an in-order complete tree over indices 0..n-2 under a root n-1 with one
    child (its mirror image, the other tree, takes as long). Leaves send after one endpoint visit;
    an inner node forwards once both children arrived (+ endpoint + processing), down likewise.
    """
    n, proc = timing.npus[dim], processing_ns(data)

    def t(a: int, b: int) -> float:
        return timing.message_ns(dim, data, abs(a - b))

    def up(lo: int, hi: int) -> tuple[int, float]:          # subtree root, its send-up time
        mid = (lo + hi) // 2
        if lo == hi:
            return mid, e
        (left, tl), (right, tr) = up(lo, mid - 1), up(mid + 1, hi)
        return mid, max(tl + t(left, mid), tr + t(right, mid)) + e + proc

    def down(lo: int, hi: int, parent: int, sent: float) -> float:   # last leaf's finish
        mid = (lo + hi) // 2
        got = sent + t(parent, mid)
        if lo == hi:
            return got + e
        return max(down(lo, mid - 1, mid, got + e + proc), down(mid + 1, hi, mid, got + e + proc))

    child, sent = up(0, n - 2)
    return down(0, n - 2, n - 1, sent + t(child, n - 1) + e + proc)


def one_ring_ns(timing: NetworkTiming, ptype: str, data: int, e: int) -> float:
    """Ring algorithm over all NPUs (``oneRing``): until the slowest NPU is done (ns)."""
    return ring_over_ns(timing, list(range(timing.total)), ptype, data, e)


def ring_over_ns(timing: NetworkTiming, members: list[int], ptype: str, data: int, e: int) -> float:
    """Ring algorithm over the NPUs ``members`` (global ids, in ring order): until the slowest is done (ns).

    NPU i sends step m once it received step m-1 from NPU i-1 (posted when it sent step m-1) and
    visited its endpoint; the link i-1 -> i runs in the highest dimension where the two ids differ.
    ``oneRing`` is the ring of every NPU; a ring dimension split by a model-parallel group into a ring of k < n
    NPUs whose wrap-around link takes k-1 hops is the ring of NPU 0's k NPUs (every other such ring is a copy).
    """
    n = len(members)
    msg = data if ptype == AG else data // n
    steps = 2 * (n - 1) if ptype == AR else n * (n - 1) // 2 if ptype == A2A else n - 1
    link = [timing.pair_ns(members[(i - 1) % n], members[i], msg) for i in range(n)]
    proc = processing_ns(msg)
    sent = [float(e)] * n                              # first send after one endpoint visit
    for m in range(1, steps + 1):
        got = [max(sent[i - 1] + link[i], sent[i]) for i in range(n)]
        extra = e + (proc if ptype == RS or (ptype == AR and m < n) else 0)
        sent = [g + extra for g in got]
    return max(sent)                                   # after the last receive: exit


def one_direct_ns(timing: NetworkTiming, ptype: str, data: int, e: int) -> float:
    """Direct algorithm over all NPUs (``oneDirect``): every peer at once, twice for an all-reduce."""
    msg = data if ptype == AG else data // timing.total
    far = timing.max_ns(msg)
    if ptype == AR:    # the all-gather half leaves once every reduce-scatter message is in
        return 3 * e + 2 * far + processing_ns(msg)
    return 2 * e + far + (processing_ns(msg) if ptype == RS else 0)


class Host(Protocol):
    """What a phase needs from the system layer."""

    engine: EventLoop
    timing: NetworkTiming
    endpoint: int
    ldims: list[tuple[int, int, int]]   # per logical dimension: NPUs, physical dimension, stride in it
    bus: Any                            # membus.MemBus when model-shared-bus is on, else None

    def register(self, delay: int, fn: Any, arg: Any = None) -> None: ...
    def phase_exit(self, stream: Any) -> None: ...


class PacketPhase:
    """Ring, direct (AllToAll) and halving-doubling phases: ASTRA's packet state machine on node 0."""

    __slots__ = ("host", "stream", "dim", "stride", "n", "kind", "ptype", "par", "nz_round", "count", "free",
                 "received", "zero", "nz", "toggle", "packets", "msg", "dist", "halving")

    def __init__(self, host: Host, stream: Any, dim: int, algo: str, ptype: str, data: int) -> None:
        self.host, self.stream, self.ptype = host, stream, ptype
        if algo == "oneHalvingDoubling":
            # one ring of every NPU (GeneralComplexTopology's), node 0's partner at distance d is NPU d: with
            # power-of-two dimensions every NPU's partner is as far, in the same dimension, so node 0's
            # timeline is everybody's as for halvingDoubling on one dimension. dim -1: timed by NPU pair.
            self.n, self.dim, self.stride = host.timing.total, -1, 1
            algo = "halvingDoubling"
        else:
            self.n, self.dim, self.stride = host.ldims[dim]   # logical NPUs; physical dim and stride in it
        n = self.n
        self.free = self.received = self.zero = self.nz = 0
        self.toggle = False
        self.packets: deque[tuple[int, int]] = deque()
        self.halving = True             # halving-doubling: partner distance doubles, size halves
        if algo == "halvingDoubling":
            self.kind, self.par = "hd", 1
            k = n.bit_length() - 1
            self.count, self.nz_round = (2 * k if ptype == AR else k), k - 1
            self.msg, self.dist = (data, n // 2) if ptype == AG else (data // 2, 1)
            self.halving = ptype != AG
        else:
            self.kind = "ring" if algo == "ring" else "direct"
            self.msg = data if ptype == AG else data // n
            self.dist = 1
            if self.kind == "ring":
                self.par, self.nz_round = 1, n - 1
                self.count = 2 * (n - 1) if ptype == AR else n * (n - 1) // 2 if ptype == A2A else n - 1
            else:
                window = algo[len("direct"):]
                self.par = min(int(window), n - 1) if window else n - 1
                self.nz_round = self.par
                self.count = 2 * (n - 1) if ptype == AR else n - 1

    def start(self) -> None:
        for _ in range(self.par):
            self._insert()

    def _insert(self) -> None:
        if self.zero == 0 and self.nz == 0:
            self.zero, self.nz, self.toggle = self.par, self.nz_round, not self.toggle
        if self.zero > 0:               # goes out straight after the endpoint visit
            self.zero -= 1
            processed = send_back = False
            to_ma = True
        elif self.nz > 0:               # a received packet: reduce it first if it carries partials
            send_back = self.nz > self.par
            self.nz -= 1
            processed = self.ptype == RS or (self.ptype == AR and self.toggle)
            to_ma = False
        else:
            raise RuntimeError("ASTRA packet machine ran out of packets")   # cannot happen
        size = self.msg
        self.packets.append((size, self.dist))
        if self.kind == "direct":                      # next peer, skipping ourselves
            self.dist = self.dist + 1 if self.dist + 1 < self.n else 1
        elif self.kind == "hd":
            if self.halving:
                self.dist, self.msg = self.dist * 2, self.msg // 2
                if self.dist == self.n and self.ptype == AR:   # turn around: all-gather half
                    self.halving, self.dist, self.msg = False, self.dist // 2, self.msg * 2
            else:
                self.dist, self.msg = self.dist // 2, self.msg * 2
        bus = self.host.bus
        if bus is None:                 # the endpoint visit: a fixed wait
            self.host.register(self.host.endpoint, self._bundle, size if processed else -1)
        else:                           # the shared bus (LogGP), NPU to MA before a send, MA to NPU after
            deliver = partial(self._bundle, size if processed else -1)
            (bus.to_ma if to_ma else bus.to_npu)(size, processed, send_back, deliver)

    def _bundle(self, processed_bytes: int) -> None:
        if processed_bytes >= 0:
            self.host.register(processing_ns(processed_bytes), self._general)
        else:
            self._general(None)

    def _general(self, _: Any) -> None:
        self.free += 1
        if self.kind == "direct" and self.ptype == AR and self.count <= self.n - 1:
            if self.received < self.n - 1:   # the all-gather half waits for every reduce message
                return
            for _ in range(self.par):
                self._ready()
        else:
            self._ready()
        if self.count == 0 and self.free == self.par:
            self.host.phase_exit(self.stream)

    def _ready(self) -> None:
        if not self.packets or self.count == 0 or self.free == 0:
            return
        size, dist = self.packets.popleft()
        host = self.host
        eng = host.engine
        t = (host.timing.message_ns(self.dim, size, dist * self.stride) if self.dim >= 0 else
             host.timing.pair_ns(0, dist, size))
        eng.schedule(eng.now + t, self._received)
        self.count -= 1
        self.free -= 1

    def _received(self, _: Any) -> None:
        self.received += 1
        self._insert()
