"""ASTRA-sim 2.x's analytical network backends and the send/receive matching of its front end (ns, bytes).

- congestion-unaware (astra-network-analytical ``congestion_unaware``): a message of m bytes between two NPUs
  that first differ in dimension d (the lowest such dimension) arrives after
  ``int(hops x latency_d + m / bandwidth_d)``; hops: the shorter way round a (bidirectional) Ring, 1 on
  FullyConnected, 2 through a Switch. Messages never wait for each other.
- congestion-aware (``congestion_aware``, one dimension only, as in 2.x): every hop is a link that carries one
  message at a time, first come first served; a message holds the link for ``int(m / bandwidth)`` and
  reaches the next device after ``int(latency + m / bandwidth)`` (store and forward). A Ring takes the
  shorter way (clockwise on a tie), a Switch goes through the switch, FullyConnected is one hop.
- the front end (``CommonNetworkApi``, ``CallbackTracker``): the n-th send from a to b with a tag and byte
  count matches the n-th receive posted at b for the same; a receive posted after its message arrived runs
  at once (an event at the current time).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from ..errors import SpecError
from ..sim.events import EventLoop
from .inputs import Network

Key = tuple[Any, int, int, int]


class _Entry:
    __slots__ = ("on_send", "on_recv", "arrived")

    def __init__(self) -> None:
        self.on_send: Callable[[], None] | None = None
        self.on_recv: Callable[[], None] | None = None
        self.arrived = False


class Backend:
    """Send/receive matching over one of the two timing models; all NPUs share it and the event loop."""

    def __init__(self, loop: EventLoop, net: Network, aware: bool) -> None:
        self.loop, self.net, self.aware = loop, net, aware
        self._send_ids: dict[Key, int] = {}
        self._recv_ids: dict[Key, int] = {}
        self._entries: dict[tuple[Key, int], _Entry] = {}
        self._bw = [net.bytes_per_ns(d) for d in range(len(net.npus))]
        self._links: dict[tuple[int, int], _Link] = {}
        if aware and len(net.npus) != 1:
            raise SpecError("the congestion-aware backend of ASTRA-sim 2.x simulates one dimension only (it stops on "
                            f"{len(net.npus)}); expected one topology, or --backend congestion-unaware",
                            file=net.path, path="topology")

    # ------------------------------------------------------------ matching
    def send(self, src: int, dst: int, nbytes: int, tag: Any, on_send: Callable[[], None] | None = None) -> None:
        key = (tag, src, dst, nbytes)
        n = self._send_ids.get(key, 0) + 1
        self._send_ids[key] = n
        e = self._entries.get((key, n))
        if e is None:
            e = self._entries[(key, n)] = _Entry()
        e.on_send = on_send
        if self.aware:
            self._route(src, dst, nbytes, (key, n))
        else:
            self.loop.schedule(self.loop.now + self.delay_ns(src, dst, nbytes), self._arrived, (key, n))

    def recv(self, dst: int, src: int, nbytes: int, tag: Any, on_recv: Callable[[], None]) -> None:
        key = (tag, src, dst, nbytes)
        n = self._recv_ids.get(key, 0) + 1
        self._recv_ids[key] = n
        e = self._entries.get((key, n))
        if e is None:
            e = self._entries[(key, n)] = _Entry()
            e.on_recv = on_recv
        elif e.arrived:
            del self._entries[(key, n)]
            self.loop.schedule(self.loop.now, _run, on_recv)
        else:
            e.on_recv = on_recv

    def _arrived(self, k: tuple[Key, int]) -> None:
        e = self._entries[k]
        if e.on_send is not None:
            e.on_send()
        if e.on_recv is not None:
            del self._entries[k]
            e.on_recv()
        else:
            e.arrived = True

    # ------------------------------------------------------------ congestion-unaware
    def delay_ns(self, src: int, dst: int, nbytes: int) -> int:
        """The unaware backend's message time: in the lowest dimension where src and dst differ."""
        stride = 1
        for d, n in enumerate(self.net.npus):
            a, b = (src // stride) % n, (dst // stride) % n
            if a != b:
                topo = self.net.topologies[d]
                if topo == "Ring":
                    cw = (b - a) % n
                    hops = min(cw, n - cw)
                else:
                    hops = 2 if topo == "Switch" else 1
                return int(hops * self.net.latency_ns[d] + nbytes / self._bw[d])
            stride *= n
        raise ValueError("a message to itself")

    # ------------------------------------------------------------ congestion-aware
    def _route(self, src: int, dst: int, nbytes: int, k: tuple[Key, int]) -> None:
        topo, n = self.net.topologies[0], self.net.npus[0]
        if topo == "Switch":
            path = [src, n, dst]
        elif topo == "FullyConnected":
            path = [src, dst]
        else:
            cw = (dst - src) % n
            step = -1 if n - cw < cw else 1
            path = [src]
            while path[-1] != dst:
                path.append((path[-1] + step) % n)
        self._hop(_Message(nbytes, path, k))

    def _hop(self, m: _Message) -> None:
        a, b = m.path[0], m.path[1]
        link = self._links.get((a, b))
        if link is None:
            link = self._links[(a, b)] = _Link(self, self.net.latency_ns[0], self._bw[0])
        link.send(m)

    def _at_next(self, m: _Message) -> None:
        m.path.pop(0)
        if len(m.path) == 1:
            self._arrived(m.key)
        else:
            self._hop(m)


def _run(fn: Callable[[], None]) -> None:
    fn()


class _Message:
    __slots__ = ("nbytes", "path", "key")

    def __init__(self, nbytes: int, path: list[int], key: tuple[Key, int]) -> None:
        self.nbytes, self.path, self.key = nbytes, path, key


class _Link:
    """One unidirectional link of the congestion-aware backend (``Link.cpp``)."""

    __slots__ = ("backend", "latency", "bw", "busy", "pending")

    def __init__(self, backend: Backend, latency: float, bw: float) -> None:
        self.backend, self.latency, self.bw = backend, latency, bw
        self.busy = False
        self.pending: deque[_Message] = deque()

    def send(self, m: _Message) -> None:
        if self.busy:
            self.pending.append(m)
        else:
            self._transmit(m)

    def _transmit(self, m: _Message) -> None:
        self.busy = True
        loop = self.backend.loop
        loop.schedule(loop.now + int(self.latency + m.nbytes / self.bw), self.backend._at_next, m)
        loop.schedule(loop.now + int(m.nbytes / self.bw), self._free)

    def _free(self, _: Any) -> None:
        self.busy = False
        if self.pending:
            self._transmit(self.pending.popleft())
