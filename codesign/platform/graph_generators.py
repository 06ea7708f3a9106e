"""Named network graphs with parameters: ``dgx_a100:nodes=2``, ``torus:dims=4x4x4,link=50GB/s``.

Each generator builds the graph of a known machine (``GENERATORS`` lists them with their parameters and
defaults). The shapes follow their public definitions, written anew here:
- ``dgx_a100`` / ``dgx_h100``: 8 GPUs per node on one NVSwitch (``nvlink`` bytes/s each way per GPU); with
  more than one node, each GPU has its own NIC (``nic`` bytes/s) and NIC b joins IB switch ``b % rails``
  (ForestColl's ``a100_topology``: 300 GB/s, 25 GB/s, two IB switches, odd and even NICs);
- ``mi250``: ForestColl's 16-GCD MI250 box, xGMI bundles of 50 GB/s per link, each GCD on one IB switch
  (16 GB/s) when there is more than one box;
- ``dgx1``: the V100 hybrid cube-mesh, 8 GPUs, one or two NVLinks (``link`` each) between neighbours;
- ``ndv2`` / ``dgx2``: TE-CCL's NDv2 (the cube-mesh at 50/25 GB/s, 12.5 GB/s between chassis, alpha 0.7 us
  inside and 1.3 us between) and DGX-2 (16 GPUs per chassis on a switch at 125 GB/s, alpha 0.35 us; odd GPU
  g of a chassis sends to GPU g-1 of every other at 12.5 GB/s, alpha 2.6 us);
- ``fat_tree``: two levels, ``leaves`` leaf switches of ``npus_per_leaf`` NPUs, each leaf linked to each of
  ``spines`` spine switches;
- ``torus`` / ``mesh``: a grid of ``dims`` (``4x4x4``), each neighbour pair one link of ``link`` per
  direction (a torus dimension of 2 has one link, not two);
- ``dragonfly``: Kim, Dally, Scott and Abts (ISCA 2008): ``groups`` groups of ``routers`` routers, all
  routers of a group linked to each other (``local``), ``npus_per_router`` NPUs on each, and one ``global``
  link between every two groups, leaving from router ``j // globals_per_router`` of the group for its j-th
  other group (the consecutive arrangement); the balanced dragonfly has groups = routers x
  globals_per_router + 1, and fewer groups leave ports unused;
- ``hammingmesh``: Hoefler et al. (SC 2022): boards of ``board`` (``2x2``) NPUs in a 2-D mesh of ``link``
  links, ``grid`` (``4x4``) boards; every row of NPUs across the grid has one switch (standing for the row's
  fat tree, of full bisection) that the NPUs on each board's west and east edges join with a ``net`` link,
  every column one that the north and south edges join.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError, shown
from ..spec.units import BYTES_PER_S, SECONDS, UnitError, parse_quantity
from .graph import Graph, RawLink, build_graph

GB = 1e9
US = 1e-6


@dataclass(frozen=True)
class Generator:
    """A named graph builder: its parameters (name -> (kind, default)) and the function that builds it."""

    build: Callable[..., Graph]
    params: dict[str, tuple[str, Any]]
    about: str


class _Builder:
    """Collects nodes and links for ``build_graph``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[tuple[str, str, str]] = []
        self.links: list[RawLink] = []

    def node(self, nid: str, kind: str = "npu") -> str:
        self.nodes.append((f"node {nid}", nid, kind))
        return nid

    def link(self, u: str, v: str, bw: float, lat: float, directed: bool = False) -> None:
        self.links.append(RawLink(f"link {u} - {v}", u, v, bw, lat, directed))

    def graph(self) -> Graph:
        return build_graph(self.name, self.nodes, self.links, file=self.name)


def _nvswitch_nodes(name: str, nodes: int, nvlink: float, nic: float, rails: int, latency: float) -> Graph:
    b = _Builder(name)
    ib = [b.node(f"ib{r}", "switch") for r in range(rails)] if nodes > 1 else []
    for a in range(nodes):
        sw = b.node(f"n{a}.nvswitch", "switch")
        for g in range(8):
            gpu = b.node(f"n{a}.gpu{g}")
            b.link(gpu, sw, nvlink, latency)
            if nodes > 1:
                n = b.node(f"n{a}.nic{g}", "nic")
                b.link(gpu, n, nic, latency)
                b.link(n, ib[g % rails], nic, latency)
    return b.graph()


def dgx_a100(nodes: int = 1, nvlink: float = 300 * GB, nic: float = 25 * GB, rails: int = 2,
             latency: float = 0.0) -> Graph:
    """DGX A100 nodes as ForestColl's ``a100_topology(nodes)`` has them (no latency: its graphs carry none)."""
    return _nvswitch_nodes(f"dgx_a100:nodes={nodes}", nodes, nvlink, nic, rails, latency)


def dgx_h100(nodes: int = 1, nvlink: float = 450 * GB, nic: float = 50 * GB, rails: int = 8,
             latency: float = 0.0) -> Graph:
    """DGX H100 nodes: 900 GB/s of NVLink per GPU (450 each way), a 400 Gb/s NIC per GPU on its own rail."""
    return _nvswitch_nodes(f"dgx_h100:nodes={nodes}", nodes, nvlink, nic, rails, latency)


#: ForestColl's MI250 adjacency: xGMI links between the 16 GCDs of a box (upper triangle of its matrix).
_MI250_LINKS = ((0, 1, 4), (0, 4, 2), (0, 8, 1), (1, 5, 1), (1, 9, 1), (1, 10, 1), (2, 3, 4), (2, 6, 1),
                (2, 9, 1), (2, 10, 1), (3, 7, 2), (3, 11, 1), (4, 5, 4), (4, 6, 1), (5, 6, 1), (5, 7, 1),
                (6, 7, 4), (8, 9, 4), (8, 12, 2), (9, 13, 1), (10, 11, 4), (10, 14, 1), (11, 15, 2),
                (12, 13, 4), (12, 14, 1), (13, 14, 1), (13, 15, 1), (14, 15, 4))


def mi250(nodes: int = 1, xgmi: float = 50 * GB, ib: float = 16 * GB, latency: float = 0.0) -> Graph:
    """ForestColl's ``mi250_topology(nodes)``: 16 GCDs a box on xGMI, every GCD on one IB switch."""
    b = _Builder(f"mi250:nodes={nodes}")
    sw = b.node("ib", "switch") if nodes > 1 else None
    for a in range(nodes):
        for g in range(16):
            b.node(f"n{a}.gcd{g}")
            if sw is not None:
                b.link(f"n{a}.gcd{g}", sw, ib, latency)
        for u, v, m in _MI250_LINKS:
            b.link(f"n{a}.gcd{u}", f"n{a}.gcd{v}", m * xgmi, latency)
    return b.graph()


#: The V100 hybrid cube-mesh (DGX-1, NDv2): (GPU, GPU, NVLinks), as TE-CCL's NDv2 matrix gives it.
_CUBE_MESH = ((0, 1, 2), (0, 2, 1), (0, 3, 1), (0, 4, 2), (1, 2, 1), (1, 3, 2), (1, 5, 1), (2, 3, 2),
              (2, 6, 2), (3, 7, 1), (4, 5, 2), (4, 6, 1), (4, 7, 1), (5, 6, 1), (5, 7, 2), (6, 7, 2))


def _cube_mesh(b: _Builder, prefix: str, link: float, latency: float) -> None:
    for g in range(8):
        b.node(f"{prefix}gpu{g}")
    for u, v, m in _CUBE_MESH:
        b.link(f"{prefix}gpu{u}", f"{prefix}gpu{v}", m * link, latency)


def dgx1(link: float = 25 * GB, latency: float = 0.0) -> Graph:
    """A DGX-1 (V100): the hybrid cube-mesh of 8 GPUs."""
    b = _Builder("dgx1")
    _cube_mesh(b, "", link, latency)
    return b.graph()


def ndv2(chassis: int = 2, link: float = 25 * GB, nic: float = 12.5 * GB, latency: float = 0.7 * US,
         nic_latency: float = 1.3 * US) -> Graph:
    """TE-CCL's NDv2: 2 chassis joined GPU 0 -> GPU 9 and GPU 8 -> GPU 1 (one direction each); more (or one)
    through a switch that GPU 0 of each chassis sends to and that sends to its GPU 1."""
    b = _Builder(f"ndv2:chassis={chassis}")
    for c in range(chassis):
        _cube_mesh(b, f"c{c}.", link, latency)
    if chassis == 2:
        b.link("c0.gpu0", "c1.gpu1", nic, nic_latency, directed=True)
        b.link("c1.gpu0", "c0.gpu1", nic, nic_latency, directed=True)
    else:
        sw = b.node("sw", "switch")
        for c in range(chassis):
            b.link(f"c{c}.gpu0", sw, nic, nic_latency, directed=True)
            b.link(sw, f"c{c}.gpu1", nic, nic_latency, directed=True)
    return b.graph()


def dgx2(chassis: int = 2, link: float = 125 * GB, nic: float = 12.5 * GB, latency: float = 0.35 * US,
         nic_latency: float = 2.6 * US) -> Graph:
    """TE-CCL's DGX-2: 16 GPUs per chassis on a switch; odd GPU g sends to GPU g-1 of every other chassis."""
    b = _Builder(f"dgx2:chassis={chassis}")
    for c in range(chassis):
        sw = b.node(f"c{c}.sw", "switch")
        for g in range(16):
            b.link(b.node(f"c{c}.gpu{g}"), sw, link, latency)
    for c, d in itertools.permutations(range(chassis), 2):
        for g in range(1, 16, 2):
            b.link(f"c{c}.gpu{g}", f"c{d}.gpu{g - 1}", nic, nic_latency, directed=True)
    return b.graph()


def fat_tree(leaves: int = 4, npus_per_leaf: int = 4, spines: int = 2, link: float = 50 * GB,
             uplink: float = 50 * GB, latency: float = 0.0) -> Graph:
    """A two-level fat tree (leaf-spine): NPUs on leaf switches, every leaf on every spine."""
    b = _Builder(f"fat_tree:leaves={leaves},npus_per_leaf={npus_per_leaf},spines={spines}")
    sp = [b.node(f"spine{s}", "switch") for s in range(spines)]
    for lf in range(leaves):
        leaf = b.node(f"leaf{lf}", "switch")
        for s in sp:
            b.link(leaf, s, uplink, latency)
        for i in range(npus_per_leaf):
            b.link(b.node(f"l{lf}.npu{i}"), leaf, link, latency)
    return b.graph()


def _grid(kind: str, dims: tuple[int, ...], link: float, latency: float) -> Graph:
    b = _Builder(f"{kind}:dims={'x'.join(map(str, dims))}")
    name = {c: "npu" + ".".join(map(str, c)) for c in itertools.product(*(range(d) for d in dims))}
    for c in name.values():
        b.node(c)
    for c in name:
        for i, d in enumerate(dims):
            if c[i] + 1 < d or (kind == "torus" and d > 2):
                n = c[:i] + ((c[i] + 1) % d,) + c[i + 1:]
                b.link(name[c], name[n], link, latency)
    return b.graph()


def torus(dims: tuple[int, ...] = (4, 4), link: float = 50 * GB, latency: float = 0.0) -> Graph:
    """A torus: each NPU linked to its two neighbours in every dimension (wrapping around)."""
    return _grid("torus", dims, link, latency)


def mesh(dims: tuple[int, ...] = (4, 4), link: float = 50 * GB, latency: float = 0.0) -> Graph:
    """A mesh: a torus without the wrap-around links."""
    return _grid("mesh", dims, link, latency)


def dragonfly(groups: int = 9, routers: int = 4, npus_per_router: int = 2, globals_per_router: int = 2,
              link: float = 50 * GB, local: float = 50 * GB, global_: float = 25 * GB,
              latency: float = 0.0) -> Graph:
    """A dragonfly: fully-connected groups of routers, one global link between every two groups."""
    if groups - 1 > routers * globals_per_router:
        raise SpecError(f"topology dragonfly: {groups} groups need {groups - 1} global links a group, more than "
                        f"its {routers} routers x {globals_per_router} globals_per_router; expected groups <= "
                        f"{routers * globals_per_router + 1}")
    b = _Builder(f"dragonfly:groups={groups},routers={routers},npus_per_router={npus_per_router},"
                 f"globals_per_router={globals_per_router}")
    for g in range(groups):
        rs = [b.node(f"g{g}.r{r}", "switch") for r in range(routers)]
        for u, v in itertools.combinations(rs, 2):
            b.link(u, v, local, latency)
        for r, rt in enumerate(rs):
            for i in range(npus_per_router):
                b.link(b.node(f"g{g}.r{r}.npu{i}"), rt, link, latency)
    for g, h in itertools.combinations(range(groups), 2):
        # group g's (h-1)-th other group is h, group h's g-th is g
        b.link(f"g{g}.r{(h - 1) // globals_per_router}", f"g{h}.r{g // globals_per_router}", global_, latency)
    return b.graph()


def hammingmesh(board: tuple[int, ...] = (2, 2), grid: tuple[int, ...] = (4, 4), link: float = 50 * GB,
                net: float = 50 * GB, latency: float = 0.0) -> Graph:
    """A HammingMesh: 2-D boards on a 2-D grid, every row and column of the grid on its own switch."""
    if len(board) != 2 or len(grid) != 2:
        raise SpecError("topology hammingmesh: board and grid: expected two sizes each, such as 2x2")
    (a, c), (x, y) = board, grid
    b = _Builder(f"hammingmesh:board={a}x{c},grid={x}x{y}")
    name = {(i, j): b.node(f"npu{i}.{j}") for i in range(a * x) for j in range(c * y)}
    for (i, j), n in name.items():
        if (i + 1) % a and (i + 1, j) in name:
            b.link(n, name[(i + 1, j)], link, latency)
        if (j + 1) % c and (i, j + 1) in name:
            b.link(n, name[(i, j + 1)], link, latency)
    for i in range(a * x):  # the row switch of NPU row i joins each board's west and east edge
        sw = b.node(f"row{i}", "switch")
        for j in sorted({j for j in range(c * y) if j % c in (0, c - 1)}):
            b.link(name[(i, j)], sw, net, latency)
    for j in range(c * y):
        sw = b.node(f"col{j}", "switch")
        for i in sorted({i for i in range(a * x) if i % a in (0, a - 1)}):
            b.link(name[(i, j)], sw, net, latency)
    return b.graph()


_T = {"nodes": "int", "chassis": "int", "rails": "int", "leaves": "int", "npus_per_leaf": "int", "spines": "int",
      "dims": "shape", "groups": "int", "routers": "int", "npus_per_router": "int", "globals_per_router": "int",
      "board": "shape", "grid": "shape"}


def _params(fn: Callable[..., Graph]) -> dict[str, tuple[str, Any]]:
    import inspect
    out = {}
    for p in inspect.signature(fn).parameters.values():
        kind = _T.get(p.name) or ("time" if "latency" in p.name else "bandwidth")
        out[p.name.rstrip("_")] = (kind, p.default)  # global_ is written global
    return out


GENERATORS: dict[str, Generator] = {fn.__name__: Generator(fn, _params(fn), (fn.__doc__ or "").split("\n")[0])
                                    for fn in (dgx_a100, dgx_h100, mi250, dgx1, ndv2, dgx2, fat_tree, torus, mesh,
                                               dragonfly, hammingmesh)}
#: The most NPUs a generator builds (a bound on work: a typo of 10^6 nodes must not fill the memory).
MAX_NPUS = 4096


def _value(gen: str, key: str, kind: str, text: str) -> Any:
    where = f"topology {gen}: {key}"
    try:
        if kind == "int":
            v = int(text)
            if v < 1:
                raise ValueError
            return v
        if kind == "shape":
            dims = tuple(int(x) for x in text.lower().split("x"))
            if not dims or min(dims) < 1:
                raise ValueError
            return dims
        return parse_quantity(text, SECONDS if kind == "time" else BYTES_PER_S)
    except UnitError as e:
        raise SpecError(f"{where}: {e}") from None
    except ValueError:
        what = "a whole number of at least 1" if kind == "int" else "sizes such as 4x4x4"
        raise SpecError(f"{where}: expected {what}, got {shown(text)}") from None


def generate(spec: str) -> Graph:
    """The graph ``NAME[:KEY=VALUE,...]`` names; SpecError naming the generator and key for a wrong one."""
    name, _, rest = spec.partition(":")
    gen = GENERATORS.get(name)
    if gen is None:
        raise SpecError(f"topology {shown(name)}: not a file and not a generator; expected a graph file (.json, "
                        f".graphml, an edge list) or one of {', '.join(GENERATORS)}")
    kw: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or key not in gen.params:
            raise SpecError(f"topology {name}: unknown parameter {shown(key)}; expected KEY=VALUE with KEY one of "
                            f"{', '.join(gen.params)}")
        kw[key] = _value(name, key, gen.params[key][0], text.strip())
    npus = _npus(name, {k: d for k, (_, d) in gen.params.items()} | kw)
    if npus > MAX_NPUS:
        raise SpecError(f"topology {spec}: {npus:,} NPUs, more than the {MAX_NPUS:,} a generator builds")
    return gen.build(**{("global_" if k == "global" else k): v for k, v in kw.items()})


def _npus(name: str, p: dict[str, Any]) -> int:
    if name in ("dgx_a100", "dgx_h100"):
        return 8 * p["nodes"]
    if name == "mi250":
        return 16 * p["nodes"]
    if name == "ndv2":
        return 8 * p["chassis"]
    if name == "dgx2":
        return 16 * p["chassis"]
    if name == "fat_tree":
        return p["leaves"] * p["npus_per_leaf"]
    if name in ("torus", "mesh"):
        return math.prod(p["dims"])
    if name == "dragonfly":
        return p["groups"] * p["routers"] * p["npus_per_router"]
    if name == "hammingmesh":
        return math.prod(p["board"]) * math.prod(p["grid"])
    return 8
