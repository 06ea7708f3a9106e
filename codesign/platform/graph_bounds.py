"""Lower bounds on a collective's time on a graph, for every schedule, computed exactly.

Model: data moves in units of elements along links (store-and-forward); an NPU may copy and reduce what it
holds, a relay (switch, NIC) only forwards. ``M`` is the output buffer per NPU for all-gather (NCCL's
convention), the input buffer for reduce-scatter, the buffer for all-reduce and all-to-all; N NPUs.

- All-gather (ForestColl's cut bound): for any node set S holding NPUs but not all of them, the shards of the
  NPUs in S must all leave S: T >= (M/N) |S n V_c| / B+(S). The bound is the maximum over S, i.e. M/N over
  the optimal shard throughput x* = min_S B+(S) / |S n V_c|. It is found exactly (rational arithmetic, integer
  max-flows) by Dinkelbach's iteration: at a ratio x, a source joined to every NPU by x and, for each NPU t,
  a minimum s-t cut decides whether some S has B+(S) < x |S n V_c|; if so x drops to that S's ratio. The last
  S is the certificate (``binding_cut``).
- Reduce-scatter: each shard of an NPU in S needs M/N bytes from outside S: the all-gather bound of the graph
  with every link reversed.
- All-reduce: (a) per element, the NPUs make at least 2(N-1) one-way NPU-to-NPU transfers (the one-way
  gossip bound: before the first NPU x knows the full sum every other NPU has sent, after it every other NPU
  still receives), each leaving its sender on its links and entering its receiver on its own: T >=
  2(N-1) M / sum_v B+(v), and the same with B-; (b) any S splitting the NPUs passes M bytes each way: T >= M /
  min_S B+(S), the smallest NPU-to-NPU max-flow. Reduce-scatter followed by all-gather is not a proven bound
  (a pipelined all-reduce overlaps its two halves on different links), so it is the schedule, not the bound.
- All-to-all: bandwidth-wise a multi-commodity flow problem (``milp/collective_lp.py`` solves it exactly);
  here the cut bound over single NPUs, (N-1)(M/N) / min(B+(v), B-(v)).
Each also holds the latency bound: some byte travels the longest shortest-latency NPU-to-NPU path.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from .graph import Graph

COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all")


@dataclass(frozen=True)
class CutBound:
    """The all-gather cut bound: ``rate`` (bytes/s of each NPU's shard, x*), exact; ``binding_cut``: a node set S
    with B+(S)/|S n V_c| = rate; ``cut_bandwidth`` B+(S) in bytes/s; ``cut_npus`` |S n V_c|; ``maxflows`` run.
    ``exact`` False: a deadline stopped the iteration; ``rate`` is then S's ratio, still an upper bound on every
    schedule's shard throughput (S is a real cut), not proven the least."""

    rate: Fraction
    binding_cut: frozenset[str]
    cut_bandwidth: Fraction
    cut_npus: int
    maxflows: int
    exact: bool = True


def _integer_capacities(g: Graph) -> tuple[dict[tuple[str, str], int], int]:
    """Link capacities as integers (exact: bandwidths times the common denominator) and that denominator."""
    fr = {(lk.source, lk.target): Fraction(lk.bandwidth) for lk in g.links}
    den = math.lcm(*(f.denominator for f in fr.values()))
    return {e: int(f * den) for e, f in fr.items()}, den


def cut_bound(g: Graph, deadline: float | None = None) -> CutBound:
    """ForestColl's optimal all-gather shard throughput on ``g``, exactly, with its binding cut. ``deadline``
    (a ``time.perf_counter()`` reading): stop there with the best cut so far (``exact`` False)."""
    import time

    import networkx as nx
    from networkx.algorithms.flow import preflow_push

    caps, den = _integer_capacities(g)
    npus = g.npus
    n = len(npus)
    out_cap: dict[str, int] = {}
    for (u, _), c in caps.items():
        out_cap[u] = out_cap.get(u, 0) + c
    in_cap: dict[str, int] = {}
    for (_, v), c in caps.items():
        in_cap[v] = in_cap.get(v, 0) + c
    # the first cut: the better of one NPU (its shard leaves over its links) and all but one (every other
    # shard enters over that NPU's links), so that a deadline early on still leaves the obvious bound
    one = min(npus, key=lambda v: out_cap.get(v, 0))
    cut, cut_bw, cut_n = frozenset([one]), out_cap[one], 1
    if n > 1:
        last = min(npus, key=lambda v: in_cap.get(v, 0))
        if Fraction(in_cap[last], n - 1) < Fraction(cut_bw, cut_n):
            cut, cut_bw, cut_n = frozenset(g.kinds) - {last}, in_cap[last], n - 1
    flows = 0
    while True:
        x = Fraction(cut_bw, cut_n)
        p, q = x.numerator, x.denominator
        h = nx.DiGraph()
        for (u, v), c in caps.items():
            h.add_edge(u, v, capacity=c * q)
        for v in npus:
            h.add_edge("\0source", v, capacity=p)
        improved = None
        for t in npus:
            if deadline is not None and time.perf_counter() > deadline:
                return CutBound(x / den, cut, Fraction(cut_bw, den), cut_n, flows, exact=False)
            value, (side, _) = nx.minimum_cut(h, "\0source", t, flow_func=preflow_push)
            flows += 1
            if value < p * n:  # some S (source side) has q B+(S) < p |S n V_c|
                s = frozenset(side) - {"\0source"}
                bw = sum(c for (u, v), c in caps.items() if u in s and v not in s)
                k = sum(1 for v in npus if v in s)
                if improved is None or Fraction(bw, k) < Fraction(improved[1], improved[2]):
                    improved = (s, bw, k)
        if improved is None:
            return CutBound(x / den, cut, Fraction(cut_bw, den), cut_n, flows)
        cut, cut_bw, cut_n = improved


def min_split_bandwidth(g: Graph) -> Fraction:
    """min B+(S) over node sets S holding some NPUs but not all: the smallest NPU-to-NPU max-flow (bytes/s)."""
    import networkx as nx
    from networkx.algorithms.flow import preflow_push

    caps, den = _integer_capacities(g)
    h = nx.DiGraph()
    for (u, v), c in caps.items():
        h.add_edge(u, v, capacity=c)
    first, *rest = g.npus
    best = min(min(nx.maximum_flow_value(h, first, t, flow_func=preflow_push),
                   nx.maximum_flow_value(h, t, first, flow_func=preflow_push)) for t in rest)
    return Fraction(best, den)


def latency_bound(g: Graph) -> float:
    """Seconds: the longest, over ordered NPU pairs, of the shortest-latency path between them."""
    import networkx as nx

    d = g.digraph()
    worst = 0.0
    npus = set(g.npus)
    for u in g.npus:
        dist = nx.single_source_dijkstra_path_length(d, u, weight="latency")
        worst = max(worst, max(dist[v] for v in npus))
    return worst


@dataclass(frozen=True)
class Bound:
    """A lower bound on a collective's time: ``bandwidth_s`` (the bandwidth term), ``latency_s`` and ``bound_s``
    (the larger); ``why``: which argument gives the bandwidth term; ``cut``: the all-gather/reduce-scatter
    certificate where there is one."""

    collective: str
    nbytes: float
    bandwidth_s: float
    latency_s: float
    why: str
    cut: CutBound | None = None

    @property
    def bound_s(self) -> float:
        return max(self.bandwidth_s, self.latency_s)


def collective_bound(g: Graph, collective: str, nbytes: float, deadline: float | None = None) -> Bound:
    """The lower bound on ``collective`` of ``nbytes`` (NCCL's buffer convention, see the module) on ``g``;
    ``deadline``: the cut bound stops there with a valid, maybe weaker, bound (``cut.exact`` False)."""
    n = len(g.npus)
    lat = latency_bound(g)
    if collective in ("all_gather", "reduce_scatter"):
        cb = cut_bound(g if collective == "all_gather" else g.reversed(), deadline)
        bw = float(Fraction(nbytes) / n / cb.rate)
        way = "out" if collective == "all_gather" else "in"
        short = "" if cb.exact else "; time limit: maybe not the tightest cut"
        return Bound(collective, nbytes, bw, lat, f"cut of {cb.cut_npus} NPUs, {float(cb.cut_bandwidth) / 1e9:.6g} "
                     f"GB/s {way}{short}", cb)
    if collective == "all_reduce":
        out = sum(g.out_bandwidth(v) for v in g.npus)
        inn = sum(g.in_bandwidth(v) for v in g.npus)
        gossip = 2 * (n - 1) * nbytes / min(out, inn)
        split = nbytes / float(min(min_split_bandwidth(g), min_split_bandwidth(g.reversed())))
        why = "one-way gossip: 2(N-1) transfers per element" if gossip >= split else "the narrowest NPU split"
        return Bound(collective, nbytes, max(gossip, split), lat, why)
    if collective == "all_to_all":
        worst = min(min(g.out_bandwidth(v), g.in_bandwidth(v)) for v in g.npus)
        return Bound(collective, nbytes, (n - 1) * nbytes / n / worst, lat, "the narrowest NPU's links")
    raise ValueError(f"unknown collective {collective!r}")
