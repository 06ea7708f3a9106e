"""ASTRA-sim 2.x's native collective algorithms on one logical ring of a dimension, per NPU (bytes, ns).

Each phase of a chunk on an NPU is a small packet machine, as 2.x's ``Ring``, ``AllToAll`` (the ``direct``
algorithm) and ``HalvingDoubling`` run it: a packet made ready goes through the endpoint (``endpoint-delay``
cycles, plus local processing when it carries partial sums to reduce), then is sent to the next peer while
a receive is posted from the previous one; every received packet makes the next one. The phase ends when
its step count is spent and every packet came back free. All NPUs run their own machine: the messages
between them go through the network backend, so an NPU that starts late or a busy link delays its peers.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .system import Stream, Sys

AR, AG, RS, A2A = "ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER", "ALL_TO_ALL"
CW, ACW = 1, -1


class LogicalRing:
    """The NPUs of one dimension that share every other coordinate with ``rank`` (``RingTopology``)."""

    def __init__(self, rank: int, size: int, stride: int) -> None:
        self.n, self.stride = size, stride
        self.index = (rank // stride) % size
        self.base = rank - self.index * stride

    def member(self, i: int) -> int:
        return self.base + (i % self.n) * self.stride

    def index_of(self, rank: int) -> int:
        return (rank // self.stride) % self.n

    def receiver(self, rank: int, direction: int) -> int:
        return self.member(self.index_of(rank) + direction)

    def sender(self, rank: int, direction: int) -> int:
        return self.member(self.index_of(rank) - direction)


class ListRing(LogicalRing):
    """A communicator group's ring: its ranks in the order the group file lists them (``RingTopology`` built
    from a list; 2.x does not sort them), ``rank`` one of them."""

    def __init__(self, rank: int, members: tuple[int, ...]) -> None:
        self.members = members
        self.n, self.stride = len(members), 0
        self._pos = {r: i for i, r in enumerate(members)}
        self.index = self._pos[rank]
        self.base = 0

    def member(self, i: int) -> int:
        return self.members[i % self.n]

    def index_of(self, rank: int) -> int:
        return self._pos[rank]


class RingAlgo:
    """``Ring``: 2(N-1) steps of c/N for an all-reduce, N-1 for the others, one packet in flight."""

    def __init__(self, sys: Sys, ctype: str, ring: LogicalRing, data: int, direction: int) -> None:
        n = ring.n
        self.sys, self.ctype, self.ring, self.data, self.direction = sys, ctype, ring, data, direction
        self.rank = sys.rank
        self.receiver = ring.receiver(self.rank, direction)
        self.sender = ring.sender(self.rank, direction)
        self.parallel = 1
        self.steps = {AR: 2 * (n - 1), A2A: n * (n - 1) // 2}.get(ctype, n - 1)
        self.msg = data if ctype == AG else data // n
        self.final = {AR: data, AG: data * n, RS: data // n, A2A: data}[ctype]
        self.received = self.free = self.zero = self.nonzero = 0
        self.toggle = False
        self.left_in_message = 1
        self.packets: deque[tuple[int, int, int]] = deque()   # (to, from, bytes)
        self.stream: Stream | None = None

    def nonzero_packets(self) -> int:
        return (self.ring.n - 1) * self.parallel

    def run(self, event: str) -> None:
        if event == "general":
            self.free += 1
            self.ready()
            self.done()
        elif event == "received":
            self.received += 1
            self.insert()
        else:  # stream init
            for _ in range(self.parallel):
                self.insert()

    def insert(self) -> None:
        if self.zero == 0 and self.nonzero == 0:
            self.zero, self.nonzero = self.parallel, self.nonzero_packets()
            self.toggle = not self.toggle
        self.packets.append((self.receiver, self.sender, self.msg))
        if self.zero > 0:
            processed = False
            self.zero -= 1
        elif self.nonzero > 0:
            processed = self.ctype == RS or (self.ctype == AR and self.toggle)
            self.nonzero -= 1
        else:
            raise AssertionError("a packet with nothing to inject")
        self.release(processed)

    def release(self, processed: bool) -> None:
        """One bundle through the endpoint (``PacketBundle``), then this machine's general event."""
        self.sys.bundle(self.stream, processed, self.msg)
        self.after_release()

    def after_release(self) -> None:
        pass

    def ready(self) -> bool:
        if not self.packets or self.steps == 0 or self.free == 0:
            return False
        to, frm, nbytes = self.packets[0]
        assert self.stream is not None
        self.sys.send_recv(self.stream, to, frm, nbytes)
        if self.left_in_message > 0:
            self.left_in_message -= 1
        if self.left_in_message == 0 and self.steps > 0:
            self.steps -= 1
            if self.steps > 0:
                self.left_in_message = 1
        self.packets.popleft()
        self.free -= 1
        return True

    def done(self) -> None:
        if self.steps == 0 and self.free == self.parallel:
            assert self.stream is not None
            self.sys.proceed(self.stream)


class DirectAlgo(RingAlgo):
    """``AllToAll`` (``direct``): N-1 messages in flight, to every peer in turn; an all-reduce's second round
    waits until N-1 packets of the first arrived."""

    def __init__(self, sys: Sys, ctype: str, ring: LogicalRing, data: int, direction: int, window: int) -> None:
        super().__init__(sys, ctype, ring, data, direction)
        self.middle = ring.n - 1
        self.parallel = ring.n - 1 if window < 0 else min(window, ring.n - 1)
        if ctype == A2A:
            self.steps = ring.n - 1

    def nonzero_packets(self) -> int:
        return self.parallel

    def run(self, event: str) -> None:
        if event == "general" and self.ctype == AR and self.steps <= self.middle:
            self.free += 1
            if self.received < self.middle:
                return
            for _ in range(self.parallel):
                self.ready()
            self.done()
        else:
            super().run(event)

    def after_release(self) -> None:
        r = self.ring
        self.receiver = r.receiver(self.receiver, self.direction)
        if self.receiver == self.rank:
            self.receiver = r.receiver(self.receiver, self.direction)
        self.sender = r.sender(self.sender, self.direction)
        if self.sender == self.rank:
            self.sender = r.sender(self.sender, self.direction)


class HalvingDoublingAlgo(RingAlgo):
    """``HalvingDoubling`` (N a power of two): log2 N steps with partners 1, 2, 4, ... apart, messages
    halving (reduce-scatter) then doubling back (all-gather)."""

    def __init__(self, sys: Sys, ctype: str, ring: LogicalRing, data: int) -> None:
        super().__init__(sys, ctype, ring, data, CW)
        n = ring.n
        log = n.bit_length() - 1
        self.steps = 2 * log if ctype == AR else log
        self.log = log
        self.final = {AR: data, AG: data * n, RS: data // n}[ctype]
        self.msg = data if ctype == AG else data // 2
        self.offset = n // 2 if ctype == AG else 1
        self.mult = 0.5 if ctype == AG else 2.0
        self._partner()

    def _partner(self) -> None:
        r = self.ring
        direction = CW if self.offset == 0 or (r.index // self.offset) % 2 == 0 else ACW
        cur = self.rank
        for _ in range(self.offset):
            cur = r.receiver(cur, direction)
        self.receiver = self.sender = cur

    def nonzero_packets(self) -> int:
        return self.log - self.parallel

    def after_release(self) -> None:
        self.offset = int(self.offset * self.mult)
        self.msg = int(self.msg / self.mult)
        if self.offset == self.ring.n and self.ctype == AR:
            self.mult = 0.5
            self.offset = int(self.offset * self.mult)
            self.msg = int(self.msg / self.mult)
        self._partner()


def base_algorithm(name: str) -> str:
    """The phase machine a one* algorithm runs (``generate_collective_phase``: OneRing is Ring, OneDirect is
    AllToAll with its window, OneHalvingDoubling is HalvingDoubling); other names as they are."""
    if name == "oneRing":
        return "ring"
    if name == "oneHalvingDoubling":
        return "halvingDoubling"
    return "direct" + name[9:] if name.startswith("oneDirect") else name


def make_algorithm(sys: Sys, ctype: str, name: str, ring: LogicalRing, data: int, direction: int) -> Any:
    """The phase machine of ``name`` (ring, direct, direct<w>, halvingDoubling) for ``data`` bytes."""
    if name == "ring":
        return RingAlgo(sys, ctype, ring, data, direction)
    if name.startswith("direct"):
        return DirectAlgo(sys, ctype, ring, data, direction, int(name[6:]) if name[6:] else -1)
    return HalvingDoublingAlgo(sys, ctype, ring, data)


class BinaryTree:
    """One of the two trees of ``DoubleBinaryTreeTopology`` over ``members`` (a power-of-two count): a top node
    with one child holding a full subtree, numbered in order (``BinaryTree::build_tree``); RootMax puts the
    subtree on the left (the top is the last member), RootMin on the right (the top is the first)."""

    def __init__(self, members: list[int], root_max: bool) -> None:
        n = len(members)
        depth, tmp = 1, n
        while tmp > 1:
            depth, tmp = depth + 1, tmp // 2
        self.parent: dict[int, int] = {}
        self.children: dict[int, list[int | None]] = {}
        ids = iter(members)

        def subtree(d: int) -> tuple[list[Any], int, list[Any]]:     # (left, id, right), in order
            left = subtree(d - 1) if d > 1 else None
            me = next(ids)
            right = subtree(d - 1) if d > 1 else None
            return [left, me, right]
        if root_max:
            sub = subtree(depth - 1)
            top = [sub, next(ids), None]
        else:
            top_id = next(ids)
            top = [None, top_id, subtree(depth - 1)]
        self.root = top[1]

        def link(node: list[Any], up: int | None) -> None:
            left, me, right = node
            if up is not None:
                self.parent[me] = up
            self.children[me] = [None if left is None else left[1], None if right is None else right[1]]
            for c in (left, right):
                if c is not None:
                    link(c, me)
        link(top, None)

    def kind(self, rank: int) -> str:
        if rank not in self.parent:
            return "root"
        return "leaf" if self.children[rank] == [None, None] else "intermediate"


class DoubleBinaryTreeAlgo:
    """``DoubleBinaryTreeAllReduce`` (every collective type given doubleBinaryTree runs it): the whole chunk goes
    up the tree, reduced at each inner node (a processed bundle per child's message), and back down; the
    leaves' bundles carry no processing; the phase ends where a node sent its last message."""

    def __init__(self, sys: Sys, tree: BinaryTree, data: int) -> None:
        self.sys, self.data, self.final = sys, data, data
        self.rank = sys.rank
        self.type = tree.kind(self.rank)
        self.parent = tree.parent.get(self.rank, -1)
        self.left, self.right = tree.children[self.rank]
        self.state = "begin"
        self.reductions = 0
        self.stream: Stream | None = None

    def _tag(self) -> tuple[str, int]:
        assert self.stream is not None
        return ("c", self.stream.sid % 500_000_000)

    def _send(self, to: int) -> None:
        self.sys.backend.send(self.rank, to, self.data, self._tag())

    def _recv(self, frm: int) -> None:
        stream = self.stream
        self.sys.backend.recv(self.rank, frm, self.data, self._tag(), lambda: self.sys._received(stream))

    def _bundle(self, processed: bool) -> None:
        self.sys.bundle(self.stream, processed, self.data)

    def _exit(self) -> None:
        assert self.stream is not None
        self.sys.proceed(self.stream)

    def run(self, event: str) -> None:
        st, t = self.state, self.type
        if t == "leaf":
            if st == "begin":
                self._bundle(False)
                self.state = "to_parent"
            elif st == "to_parent":
                self._send(self.parent)
                self._recv(self.parent)
                self.state = "from_parent"
            elif st == "from_parent":
                self._bundle(False)
                self.state = "end"
            elif st == "end":
                self._exit()
        elif t == "intermediate":
            if st == "begin":
                self.state = "two_children"
                self._recv(self.left)
                self._recv(self.right)
            elif st == "two_children" and event == "received":
                self._bundle(True)
                self.state = "one_child"
            elif st == "one_child" and event == "received":
                self._bundle(True)
                self.state = "to_parent"
            elif self.reductions < 1 and event == "general":
                self.reductions += 1
            elif st == "to_parent":
                self.state = "from_parent"
                self._send(self.parent)
                self._recv(self.parent)
            elif st == "from_parent" and event == "received":
                self._bundle(True)
                self.state = "to_children"
            elif st == "to_children":
                self._send(self.left)
                self._send(self.right)
                self._exit()
        else:
            only = self.left if self.left is not None else self.right
            assert only is not None
            if st == "begin":
                self.state = "one_child"
                self._recv(only)
            elif st == "one_child":
                self._bundle(True)
                self.state = "to_children"
            elif st == "to_children":
                self._send(only)
                self._exit()
