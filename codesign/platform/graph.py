"""Networks as graphs: NPUs and relays (switches, NICs) joined by directed links.

A ``Graph`` is what any machine's network is, where the dimension model (``topology.py``) is a product of
identical dimensions: a DGX-1's hybrid cube-mesh, NVSwitch nodes on rail NICs, fat trees, meshes. Each
link has a bandwidth (bytes/s, in its own direction) and a latency (seconds). An NPU holds data and may
copy what it receives onto several links; a relay (``switch`` or ``nic``) only forwards: it neither
stores data of its own, nor copies, nor reduces.

Graphs come from a file (``graph_files``) or a generator (``graph_generators``); both end in
``build_graph``, which validates: every rule names the node or link at fault (``SpecError``, exit 2).
Parallel links between the same two nodes in the same direction are one link of their summed bandwidth
(and the larger latency): a 4-link xGMI bundle is one link of 4x the bandwidth.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import SpecError, shown

if TYPE_CHECKING:
    import networkx as nx

#: A node's kinds: an NPU computes and holds data; a switch or a NIC only forwards.
NODE_KINDS = ("npu", "switch", "nic")
RELAY_KINDS = ("switch", "nic")


@dataclass(frozen=True)
class Link:
    """One directed link: ``bandwidth`` in bytes/s, ``latency`` in seconds, ``cost`` in the user's unit (or None)."""

    source: str
    target: str
    bandwidth: float
    latency: float = 0.0
    cost: float | None = None


@dataclass(frozen=True)
class Graph:
    """A validated network: ``kinds`` maps each node id to its kind, in the order given; ``links`` are directed,
    at most one per ordered pair of nodes."""

    name: str
    kinds: dict[str, str]
    links: tuple[Link, ...]

    @property
    def npus(self) -> tuple[str, ...]:
        return tuple(n for n, k in self.kinds.items() if k == "npu")

    @property
    def relays(self) -> tuple[str, ...]:
        return tuple(n for n, k in self.kinds.items() if k != "npu")

    def digraph(self) -> nx.DiGraph:
        """The graph as a networkx DiGraph: node attribute ``kind``, edge attributes ``bandwidth``, ``latency``."""
        import networkx as nx

        g = nx.DiGraph(name=self.name)
        for n, k in self.kinds.items():
            g.add_node(n, kind=k)
        for lk in self.links:
            g.add_edge(lk.source, lk.target, bandwidth=lk.bandwidth, latency=lk.latency)
        return g

    def reversed(self) -> Graph:
        """The same nodes with every link turned around (reduce-scatter is all-gather on it, run backwards)."""
        return Graph(self.name, self.kinds, tuple(Link(lk.target, lk.source, lk.bandwidth, lk.latency, lk.cost)
                                                  for lk in self.links))

    def out_bandwidth(self, node: str) -> float:
        """Bytes/s leaving ``node`` over all its links."""
        return sum(lk.bandwidth for lk in self.links if lk.source == node)

    def in_bandwidth(self, node: str) -> float:
        """Bytes/s entering ``node`` over all its links."""
        return sum(lk.bandwidth for lk in self.links if lk.target == node)


@dataclass(frozen=True)
class RawLink:
    """A link as a reader found it, before validation: where it was written (``where``: a key path or a line),
    its ends, its bandwidth and latency already in SI (a reader parses the units), whether it is one direction."""

    where: str
    source: Any
    target: Any
    bandwidth: float
    latency: float
    directed: bool
    cost: float | None = None

    def at(self, key: str) -> str:
        """Where the link's ``key`` was written: ``links[3].bandwidth`` in a document, ``line 4: bandwidth`` else."""
        return f"{self.where}.{key}" if self.where.endswith("]") else f"{self.where}: {key}"


def build_graph(name: str, nodes: Sequence[tuple[str, Any, Any]], links: Iterable[RawLink], *,
                file: str | None = None) -> Graph:
    """Validate and build a graph. ``nodes``: (where, id, kind) as written; ``links``: as read. Raises SpecError
    naming ``file`` and the node's or link's place for: a duplicate or non-text id, an unknown kind, a link to an
    unknown node, a self-loop, a bandwidth not positive, a latency negative, fewer than two NPUs, an NPU that
    cannot reach or be reached from the others."""
    kinds: dict[str, str] = {}
    for where, nid, kind in nodes:
        if not isinstance(nid, (str, int)) or isinstance(nid, bool):
            raise SpecError(f"expected a node id (text or a number), got {shown(nid)}", file=file, path=where)
        nid = str(nid)
        if nid in kinds:
            raise SpecError(f"duplicate node id {shown(nid)}", file=file, path=where)
        if kind not in NODE_KINDS:
            raise SpecError(f"node {shown(nid)}: unknown kind {shown(kind)}; expected one of {', '.join(NODE_KINDS)}",
                            file=file, path=where)
        kinds[nid] = kind
    merged: dict[tuple[str, str], Link] = {}
    for raw in links:
        ends = []
        for end in (raw.source, raw.target):
            if str(end) not in kinds or isinstance(end, bool):
                raise SpecError(f"link to an unknown node {shown(end)}", file=file, path=raw.where)
            ends.append(str(end))
        u, v = ends
        if u == v:
            raise SpecError(f"self-loop at node {shown(u)}: a link must join two different nodes", file=file,
                            path=raw.where)
        if not raw.bandwidth > 0 or not math.isfinite(raw.bandwidth):
            raise SpecError(f"link {u} -> {v}: expected a positive finite bandwidth, got {raw.bandwidth:g} B/s",
                            file=file, path=raw.at("bandwidth"))
        if not raw.latency >= 0 or not math.isfinite(raw.latency):
            raise SpecError(f"link {u} -> {v}: expected a latency of zero or more, got {raw.latency:g} s",
                            file=file, path=raw.at("latency"))
        for a, b in ((u, v),) if raw.directed else ((u, v), (v, u)):
            old = merged.get((a, b))
            if old is None:
                merged[(a, b)] = Link(a, b, raw.bandwidth, raw.latency, raw.cost)
            else:  # parallel links: one of their summed bandwidth
                cost = None if old.cost is None and raw.cost is None else (old.cost or 0.0) + (raw.cost or 0.0)
                merged[(a, b)] = Link(a, b, old.bandwidth + raw.bandwidth, max(old.latency, raw.latency), cost)
    g = Graph(name, kinds, tuple(merged.values()))
    _check_connected(g, file)
    return g


def _check_connected(g: Graph, file: str | None) -> None:
    """SpecError naming an NPU that the first NPU cannot reach, or that cannot reach it (a collective needs every
    NPU to reach every other, through any nodes)."""
    npus = g.npus
    if len(npus) < 2:
        raise SpecError(f"expected at least two nodes of kind npu, got {len(npus)}", file=file, path="nodes")
    out: dict[str, list[str]] = {n: [] for n in g.kinds}
    inn: dict[str, list[str]] = {n: [] for n in g.kinds}
    for lk in g.links:
        out[lk.source].append(lk.target)
        inn[lk.target].append(lk.source)
    first = npus[0]
    for adj, how in ((out, "cannot be reached from"), (inn, "cannot reach")):
        seen = {first}
        stack = [first]
        while stack:
            for w in adj[stack.pop()]:
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
        for n in npus:
            if n not in seen:
                raise SpecError(f"disconnected NPUs: npu {shown(n)} {how} npu {shown(first)}", file=file,
                                path=f"nodes[{list(g.kinds).index(n)}]")
