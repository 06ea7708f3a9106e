"""Multi-dimensional networks: each dimension a ring, a fully-connected group, or a switch.

An NPU sits in every dimension at once (a 4x4x4 torus is three ring dimensions of 4). Dimension d has
``size`` NPUs, ``links`` links per NPU, each of ``link_bandwidth`` bytes/s per direction and ``latency``
seconds per hop. As in ASTRA-sim 1.0's analytical backend, a ring or switch dimension drives all of an
NPU's links together (bandwidth ``links * link_bandwidth``), while a fully-connected dimension spreads
its links over the ``size - 1`` peers. Two optional terms follow measured NCCL curves (``costs.link_time``):
``phase_latency``, seconds a collective phase pays once (NCCL's launch and synchronization), and
``buffer_bandwidth``, bytes/s at which the endpoints pass over a phase's buffer (the reduce and copy work of
NCCL's kernels); without them a dimension is ASTRA-sim's latency-bandwidth line.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx

KINDS = ("ring", "fully_connected", "switch")
ALGORITHMS = ("ring", "direct", "halving_doubling")
#: The collective algorithm each kind runs unless the problem says otherwise.
DEFAULT_ALGORITHM = {"ring": "ring", "fully_connected": "direct", "switch": "direct"}


@dataclass(frozen=True)
class Dim:
    """One network dimension. Bandwidths in bytes/s per link per direction, latency in seconds per hop."""

    name: str
    kind: str
    size: int
    links: int
    link_bandwidth: float
    latency: float = 0.0
    algorithm: str = ""
    phase_latency: float = 0.0                 # seconds per collective phase
    buffer_bandwidth: float | None = None      # bytes/s over the phase's buffer; None: no such term

    @property
    def algo(self) -> str:
        return self.algorithm or DEFAULT_ALGORITHM[self.kind]

    @property
    def bandwidth(self) -> float:
        """Bytes/s an NPU can send into this dimension, all its links together."""
        return self.links * self.link_bandwidth

    @property
    def hops(self) -> int:
        """Hops a message to a neighbour crosses: two through a switch, one otherwise."""
        return 2 if self.kind == "switch" else 1


@dataclass(frozen=True)
class Topology:
    """A multi-dimensional network of ``npus = prod(size_d)`` NPUs."""

    dims: tuple[Dim, ...]

    @property
    def npus(self) -> int:
        return math.prod(d.size for d in self.dims)

    @property
    def shape(self) -> str:
        return "x".join(str(d.size) for d in self.dims)

    def graph(self) -> nx.MultiGraph:
        """The physical graph: nodes are NPU coordinate tuples (or ``("switch", d, group)`` nodes);
        edges carry ``dim``, ``bandwidth`` (bytes/s, all parallel links of that edge) and ``latency``."""
        import networkx as nx

        g = nx.MultiGraph(name=f"{self.shape} network")
        coords = list(itertools.product(*(range(d.size) for d in self.dims)))
        g.add_nodes_from(coords)
        for di, d in enumerate(self.dims):
            groups: dict[tuple, list[tuple]] = {}
            for c in coords:
                groups.setdefault(c[:di] + c[di + 1:], []).append(c)
            for key, members in groups.items():
                members.sort(key=lambda c: c[di])
                if d.kind == "ring":
                    pairs = [(members[i], members[(i + 1) % len(members)]) for i in range(len(members))]
                    if len(members) == 2:
                        pairs = pairs[:1]
                    # a ring NPU's links split between its two neighbours
                    bw = d.bandwidth / (2 if len(members) > 2 else 1)
                    for a, b in pairs:
                        g.add_edge(a, b, dim=di, bandwidth=bw, latency=d.latency)
                elif d.kind == "fully_connected":
                    bw = d.bandwidth / (len(members) - 1)
                    for a, b in itertools.combinations(members, 2):
                        g.add_edge(a, b, dim=di, bandwidth=bw, latency=d.latency)
                else:
                    sw = ("switch", di, key)
                    g.add_node(sw)
                    for a in members:
                        g.add_edge(a, sw, dim=di, bandwidth=d.bandwidth, latency=d.latency)
        return g
