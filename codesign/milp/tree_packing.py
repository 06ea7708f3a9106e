"""All-gather as a packing of spanning out-trees, one family per root, solved as an LP on HiGHS.

A tree of root r carries a part of r's shard to every other NPU: each tree edge is a path from an NPU to an
NPU through relays only (a relay forwards, it does not copy), so a tree edge through a switch uses the
switch's in-link and out-link once each, and a GPU that sends to three GPUs through its switch uses its
uplink three times. The LP (ForestColl's fractional packing):

    maximize x  subject to  sum_T use_T(e) y_T <= c_e  (each link e),   sum_{T of r} y_T >= x  (each root r)

with y_T the bytes/s tree T carries. Column generation finds it exactly: the restricted LP's duals price a
link (w_e) and a root (s_r); a tree of root r improves it iff its cost sum_e w_e use_T(e) is below s_r, and
the cheapest is a minimum spanning arborescence rooted at r (Edmonds) over the NPUs, each NPU-to-NPU edge
priced by its cheapest relay-only path. When no tree improves, the LP is optimal. Every packing's x is at
most the cut bound's x* (each tree crosses every cut that splits its root from an NPU); the packing is
proven optimal when x equals x*, which ForestColl's theorem gives when every relay passes as much in as out.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ..platform.graph import Graph

Path = tuple[int, ...]  # link indices, in order


@dataclass(frozen=True)
class Tree:
    """One out-tree: its root, the bytes/s it carries (``rate``), and its edges (parent NPU, child NPU, the
    link indices of the path between them), parents before children."""

    root: str
    rate: float
    edges: tuple[tuple[str, str, Path], ...]


@dataclass(frozen=True)
class Packing:
    """A tree packing: ``rate`` x (bytes/s of each root's shard), its trees, the LP's iterations and seconds;
    ``optimal``: no tree improves the LP (its optimum, up to the tolerance)."""

    rate: float
    trees: tuple[Tree, ...]
    iterations: int
    solve_time_s: float
    optimal: bool


class _Paths:
    """Cheapest relay-only paths between NPUs under link weights."""

    def __init__(self, g: Graph) -> None:
        self.g = g
        self.npu = {n: g.kinds[n] == "npu" for n in g.kinds}
        self.out: dict[str, list[tuple[int, str]]] = {n: [] for n in g.kinds}
        for i, lk in enumerate(g.links):
            self.out[lk.source].append((i, lk.target))

    def from_npu(self, u: str, w: list[float]) -> dict[str, tuple[float, Path]]:
        """For each NPU v reachable from ``u`` through relays only: (cost, path)."""
        import heapq

        best: dict[str, float] = {u: 0.0}
        back: dict[str, tuple[str, int]] = {}
        heap = [(0.0, u)]
        found: dict[str, tuple[float, Path]] = {}
        while heap:
            d, x = heapq.heappop(heap)
            if d > best.get(x, math.inf):
                continue
            if x != u and self.npu[x]:
                path = []
                y = x
                while y != u:
                    y, i = back[y]
                    path.append(i)
                found[x] = (d, tuple(reversed(path)))
                continue  # an NPU ends a relay path
            for i, y in self.out[x]:
                nd = d + w[i]
                if nd < best.get(y, math.inf):
                    best[y] = nd
                    back[y] = (x, i)
                    heapq.heappush(heap, (nd, y))
        return found


def min_arborescence(n: int, root: int, cost: list[list[float]]) -> list[int]:
    """Chu-Liu/Edmonds on a dense cost matrix (``cost[u][v]``, inf where there is no edge): each node's parent
    in a minimum-cost spanning arborescence rooted at ``root`` (-1 for the root). ValueError if a node cannot
    be reached."""
    inf = math.inf
    pre = [-1] * n
    inw = [inf] * n
    for v in range(n):
        if v == root:
            continue
        for u in range(n):
            c = cost[u][v]
            if u != v and c < inw[v]:
                inw[v], pre[v] = c, u
        if pre[v] < 0:
            raise ValueError(f"node {v} cannot be reached from the root")
    comp = [-1] * n
    seen = [-1] * n
    cnt = 0
    for v in range(n):
        x = v
        while x != root and comp[x] < 0 and seen[x] != v:
            seen[x] = v
            x = pre[x]
        if x != root and comp[x] < 0:  # a cycle through x
            y = pre[x]
            while y != x:
                comp[y] = cnt
                y = pre[y]
            comp[x] = cnt
            cnt += 1
    if cnt == 0:
        return pre
    for v in range(n):
        if comp[v] < 0:
            comp[v] = cnt
            cnt += 1
    sub_cost = [[inf] * cnt for _ in range(cnt)]
    choice: dict[tuple[int, int], tuple[int, int]] = {}
    for u in range(n):
        cu, row = comp[u], cost[u]
        for v in range(n):
            c = row[v]
            if c < inf and u != v and comp[v] != cu:
                c -= inw[v] if v != root else 0.0
                if c < sub_cost[cu][comp[v]]:
                    sub_cost[cu][comp[v]] = c
                    choice[(cu, comp[v])] = (u, v)
    sub = min_arborescence(cnt, comp[root], sub_cost)
    parent = pre[:]
    for V in range(cnt):
        if V != comp[root]:
            u, v = choice[(sub[V], V)]
            parent[v] = u
    parent[root] = -1
    return parent


def _cheapest_tree(paths: _Paths, root: str, w: list[float],
                   table: dict[str, dict[str, tuple[float, Path]]]) -> tuple[float, list[tuple[str, str, Path]]]:
    """The minimum-cost spanning out-tree of ``root`` over the NPUs (cost: its paths' weights), parents first."""
    names = list(table)
    at = {n: i for i, n in enumerate(names)}
    n = len(names)
    cost = [[math.inf] * n for _ in range(n)]
    for u, row in table.items():
        cu = cost[at[u]]
        for v, (c, _) in row.items():
            cu[at[v]] = c
    parent = min_arborescence(n, at[root], cost)
    children: dict[int, list[int]] = {}
    for v, p in enumerate(parent):
        if p >= 0:
            children.setdefault(p, []).append(v)
    edges = []
    queue = [at[root]]
    for u in queue:
        for v in children.get(u, ()):
            edges.append((names[u], names[v], table[names[u]][names[v]][1]))
            queue.append(v)
    return sum(table[u][v][0] for u, v, _ in edges), edges


def _use(edges: list[tuple[str, str, Path]]) -> dict[int, int]:
    use: dict[int, int] = {}
    for _, _, p in edges:
        for i in p:
            use[i] = use.get(i, 0) + 1
    return use


def pack_trees(g: Graph, *, target_rate: float | None = None, max_iterations: int = 500,
               time_limit_s: float = 60.0, tol: float = 1e-9) -> Packing:
    """The LP's tree packing on ``g``. ``target_rate``: the cut bound's x* (bytes/s), where the LP may stop:
    nothing packs more. Raises nothing on a slow LP: it stops at the iteration or time limit, ``optimal`` False."""
    import highspy
    import numpy as np

    from .highs import new_highs

    t0 = time.perf_counter()
    scale = max(lk.bandwidth for lk in g.links)
    E = len(g.links)
    roots = g.npus
    paths = _Paths(g)
    h = new_highs()
    inf = highspy.kHighsInf
    h.addVar(0.0, inf)
    h.changeColCost(0, -1.0)
    for lk in g.links:  # capacity rows 0..E-1
        h.addRow(-inf, lk.bandwidth / scale, 0, np.array([], dtype=np.int32), np.array([], dtype=np.float64))
    for _ in roots:  # root rows E..E+R-1: sum y - x >= 0
        h.addRow(0.0, inf, 1, np.array([0], dtype=np.int32), np.array([-1.0]))
    cols: list[tuple[str, list[tuple[str, str, Path]]]] = []

    def add(ri: int, edges: list[tuple[str, str, Path]]) -> None:
        use = _use(edges)
        idx = np.array([*use, E + ri], dtype=np.int32)
        val = np.array([*map(float, use.values()), 1.0])
        h.addCol(0.0, 0.0, inf, len(idx), idx, val)
        cols.append((roots[ri], edges))

    if time.perf_counter() - t0 >= time_limit_s:
        return Packing(0.0, (), 0, time.perf_counter() - t0, False)
    hop = [1.0] * E
    table = {u: paths.from_npu(u, hop) for u in roots}
    for ri, r in enumerate(roots):
        add(ri, _cheapest_tree(paths, r, hop, table)[1])
    optimal = False
    it = 0
    best: tuple[float, list[float]] = (0.0, [0.0] * len(cols))  # the last LP solved to optimality: rate, y
    deadline = t0 + time_limit_s

    def left() -> float:
        return deadline - time.perf_counter()

    while it < max_iterations and left() > 0:
        it += 1
        h.setOptionValue("time_limit", max(left(), 1e-3))  # the LP's own time counts against the limit too
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            break  # out of time inside the LP: the packing is the last LP's optimum, a feasible one
        sol = h.getSolution()
        best = (sol.col_value[0], list(sol.col_value[1:]))
        if target_rate is not None and best[0] * scale >= target_rate * (1 - 1e-9):
            optimal = True
            break
        dual = sol.row_dual
        # (a tiny weight per hop: among equally priced paths, the shortest)
        w = [max(0.0, -dual[e]) + 1e-9 for e in range(E)]
        table = {u: paths.from_npu(u, w) for u in roots}
        added = 0
        for ri, r in enumerate(roots):
            if left() <= 0:
                added = -1  # pricing cut short: not a proof that no column improves
                break
            cost, edges = _cheapest_tree(paths, r, w, table)
            if cost < dual[E + ri] - tol - 1e-9 * len(edges):
                add(ri, edges)
                added += 1
        if not added:
            optimal = True
            break
    rate, ys = best
    trees = tuple(Tree(r, y * scale, tuple(edges)) for (r, edges), y in zip(cols, ys) if y > 1e-12)
    return Packing(rate * scale, trees, it, time.perf_counter() - t0, optimal)
