"""The network's design space: per dimension the link bandwidths it may take and what they cost.

A problem may leave a dimension's ``bandwidth`` open: a list of options or a range (``{min, max}``,
turned into a geometric grid of ratio ``1 + tolerance``), with a linear cost per GB/s of the bandwidth an
NPU drives into the dimension (``links * link_bandwidth``) and a budget on the sum over dimensions
(in the problem's own unit: dollars, watts or mm^2 of SerDes). LIBRA (Won et al., ISPASS 2024) prices a
network the same way, per NPU and per dimension.

The design master takes each open dimension as one more sized "resource" named ``bw[d]`` (binaries
``y['bw[d]', o]``, option values the link bandwidths in bytes/s); the simulator replays a design on the
topology with the chosen bandwidths (``topology_at``). One place for the cost formula: ``dim_cost``.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .endpoint import Option
from .topology import Topology

#: The cost coefficients are per GB/s (what a problem file says); the model works in bytes/s.
GBPS = 1e9


def key(d: int) -> str:
    """The design-space name of dimension d's bandwidth (``y[key(d), o]`` in the master MILP)."""
    return f"bw[{d}]"


def dim_of(name: str) -> int | None:
    """The dimension a design-space name stands for, or None for an engine resource."""
    if name.startswith("bw[") and name.endswith("]"):
        return int(name[3:-1])
    return None


def grid_steps(lo: float, hi: float, tolerance: float) -> int:
    """How many geometric steps of ratio at most ``1 + tolerance`` take ``lo`` to ``hi`` (0 when hi <= lo):
    ``grid`` has one point more. Counted before any point is made, so a caller can refuse a huge grid."""
    if hi <= lo:
        return 0
    return max(1, math.ceil(math.log(hi / lo) / math.log1p(tolerance) - 1e-12))


def grid(lo: float, hi: float, tolerance: float) -> tuple[float, ...]:
    """Bandwidths from ``lo`` to ``hi`` (bytes/s) in geometric steps of ratio at most ``1 + tolerance``:
    every bandwidth in [lo, hi] has a grid point at or below it within that ratio."""
    n = grid_steps(lo, hi, tolerance)
    if n == 0:
        return (lo,)
    ratio = (hi / lo) ** (1.0 / n)
    return tuple(lo * ratio**j for j in range(n)) + (hi,)


@dataclass(frozen=True)
class Network:
    """The network's design space. ``bandwidths[d]``: the link bandwidths (bytes/s per link per
    direction, ascending) dimension d may take (one: fixed); ``cost_per_gbps[d]``: cost per GB/s of an
    NPU's bandwidth into dimension d (all its links); ``budget``: on the summed cost, or None; ``unit``:
    the cost's unit as the problem names it; ``tolerance[d]``: a range's grid ratio minus one (None: the
    options were listed)."""

    bandwidths: tuple[tuple[float, ...], ...]
    cost_per_gbps: tuple[float, ...]
    budget: float | None = None
    unit: str = "$"
    tolerance: tuple[float | None, ...] = ()

    def __post_init__(self) -> None:
        if not self.tolerance:  # every dimension's options listed (no range)
            object.__setattr__(self, "tolerance", (None,) * len(self.bandwidths))

    @property
    def sized(self) -> list[str]:
        """The open dimensions' design-space names (more than one bandwidth)."""
        return [key(d) for d in self.sized_dims()]

    def sized_dims(self) -> list[int]:
        """The open dimensions (more than one bandwidth)."""
        return [d for d, opts in enumerate(self.bandwidths) if len(opts) > 1]

    def resources(self, topology: Topology) -> dict[str, tuple[Option, ...]]:
        """Every dimension as a catalog of options (value: link bandwidth, B/s; no area or power)."""
        return {key(d): tuple(Option(bw) for bw in opts) for d, opts in enumerate(self.bandwidths)}

    def dim_cost(self, topology: Topology, d: int, link_bandwidth: float) -> float:
        """Cost (``unit``) of dimension d at this link bandwidth: the one cost formula."""
        return self.cost_per_gbps[d] * topology.dims[d].links * link_bandwidth / GBPS

    def option_costs(self, topology: Topology, d: int) -> tuple[float, ...]:
        return tuple(self.dim_cost(topology, d, bw) for bw in self.bandwidths[d])

    def costs(self, topology: Topology, choice: dict[str, int]) -> list[float]:
        """Per dimension, its cost at the design ``choice`` (dimensions not in it: their first option)."""
        return [self.dim_cost(topology, d, self.bandwidths[d][choice.get(key(d), 0)])
                for d in range(len(self.bandwidths))]

    def min_cost(self, topology: Topology) -> float:
        return sum(min(self.option_costs(topology, d)) for d in range(len(self.bandwidths)))


def topology_at(topology: Topology, network: Network | None, choice: dict[str, int]) -> Topology:
    """The topology with each open dimension at the bandwidth ``choice`` picks (as is without a network)."""
    if network is None:
        return topology
    dims = tuple(dataclasses.replace(dim, link_bandwidth=network.bandwidths[d][choice.get(key(d), 0)])
                 if len(network.bandwidths[d]) > 1 else dim for d, dim in enumerate(topology.dims))
    return dataclasses.replace(topology, dims=dims)
