"""Reading a network graph from a file: networkx node-link JSON, GraphML, or an edge list.

- Node-link JSON (what ``networkx.node_link_data`` and most tools write)::

      {"directed": false,
       "nodes": [{"id": "gpu0", "kind": "npu"}, {"id": "sw0", "kind": "switch"}],
       "links": [{"source": "gpu0", "target": "sw0", "bandwidth": "300 GB/s", "latency": "0.7 us"}]}

  Undirected (the default): each link is two, each direction of the stated bandwidth; ``"directed": true``
  lists each direction as its own link. ``edges`` is read where ``links`` is absent (networkx 3.4's name).
- GraphML: node data ``kind``, edge data ``bandwidth``, ``latency`` (and ``cost``); the graph's own
  ``edgedefault`` says whether it is directed.
- An edge list (any other name): one link a line, ``SOURCE TARGET BANDWIDTH [LATENCY]`` (units without a
  space: ``300GB/s``), undirected; ``node ID KIND`` declares a node's kind (undeclared ones are NPUs);
  ``#`` starts a comment.

A bandwidth or latency is a number in bytes/s or seconds, or text with a unit (``spec/units.py``). Every
error names the file and the key path (``links[3].bandwidth``) or line; ``graph.build_graph`` validates.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import SpecError, shown
from ..spec.files import parse_json, read_user_file
from ..spec.units import BYTES_PER_S, SECONDS, UnitError, parse_quantity
from .graph import Graph, RawLink, build_graph


def read_graph(path: str | Path) -> Graph:
    """The graph in the file at ``path``, by its suffix: ``.json``, ``.graphml``/``.xml``, or an edge list."""
    file = str(path)
    text = read_user_file(path, what="network graph file")
    suffix = Path(path).suffix.lower()
    name = Path(path).stem
    if suffix == ".json":
        return node_link_graph(parse_json(text, file, "network graph (node-link JSON)"), file, name)
    if suffix in (".graphml", ".xml"):
        return _graphml(text, file, name)
    return _edge_list(text, file, name)


def _quantity(value: Any, dim, file: str | None, path: str) -> float:
    try:
        return parse_quantity(value, dim)
    except UnitError as e:
        raise SpecError(str(e), file=file, path=path) from None


def node_link_graph(doc: Any, file: str | None, name: str) -> Graph:
    """A graph from a node-link document (already parsed JSON)."""
    if not isinstance(doc, dict):
        raise SpecError("expected a node-link object with 'nodes' and 'links'", file=file)
    directed = doc.get("directed", False)
    if not isinstance(directed, bool):
        raise SpecError(f"expected true or false, got {shown(directed)}", file=file, path="directed")
    nodes_doc = doc.get("nodes")
    key = "links" if "links" in doc or "edges" not in doc else "edges"
    links_doc = doc.get(key)
    for k, v in (("nodes", nodes_doc), (key, links_doc)):
        if not isinstance(v, list):
            raise SpecError(f"expected a list, got {shown(v)}", file=file, path=k)
    nodes = []
    for i, n in enumerate(nodes_doc):
        if not isinstance(n, dict) or "id" not in n:
            raise SpecError("expected a node with an 'id' (and a 'kind')", file=file, path=f"nodes[{i}]")
        nodes.append((f"nodes[{i}]", n["id"], n.get("kind", "npu")))
    raws = []
    for i, lk in enumerate(links_doc):
        where = f"{key}[{i}]"
        if not isinstance(lk, dict) or "source" not in lk or "target" not in lk:
            raise SpecError("expected a link with 'source' and 'target'", file=file, path=where)
        if "bandwidth" not in lk:
            raise SpecError("expected a bandwidth such as \"25 GB/s\"", file=file, path=f"{where}.bandwidth")
        bw = _quantity(lk["bandwidth"], BYTES_PER_S, file, f"{where}.bandwidth")
        lat = _quantity(lk.get("latency", 0.0), SECONDS, file, f"{where}.latency")
        cost = _quantity_plain(lk.get("cost"), file, f"{where}.cost")
        raws.append(RawLink(where, lk["source"], lk["target"], bw, lat, directed, cost))
    return build_graph(str(doc.get("graph", {}).get("name", name)) if isinstance(doc.get("graph"), dict) else name,
                       nodes, raws, file=file)


def _quantity_plain(value: Any, file: str | None, path: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"expected a number, got {shown(value)}", file=file, path=path)
    return float(value)


def _graphml(text: str, file: str, name: str) -> Graph:
    import networkx as nx

    try:
        g = nx.parse_graphml(text)
    except Exception as e:  # (networkx raises several kinds for malformed XML)
        raise SpecError(f"not a GraphML file: {str(e)[:80]}", file=file) from None
    nodes = [(f"node {shown(n)}", n, data.get("kind", "npu")) for n, data in g.nodes(data=True)]
    raws = []
    for u, v, data in g.edges(data=True):
        where = f"edge {u} -> {v}"
        if "bandwidth" not in data:
            raise SpecError("expected a bandwidth such as \"25 GB/s\"", file=file, path=f"{where}: bandwidth")
        bw = _quantity(data["bandwidth"], BYTES_PER_S, file, f"{where}: bandwidth")
        lat = _quantity(data.get("latency", 0.0), SECONDS, file, f"{where}: latency")
        raws.append(RawLink(where, u, v, bw, lat, g.is_directed(), _quantity_plain(data.get("cost"), file, where)))
    return build_graph(str(g.graph.get("name", name) or name), nodes, raws, file=file)


def _edge_list(text: str, file: str, name: str) -> Graph:
    declared: dict[str, tuple[str, str]] = {}
    raws = []
    for no, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"line {no}"
        if words[0] == "node":
            if len(words) != 3:
                raise SpecError("expected 'node ID KIND'", file=file, path=where)
            if words[1] in declared:
                raise SpecError(f"duplicate node id {shown(words[1])}", file=file, path=where)
            declared[words[1]] = (where, words[2])
            continue
        if len(words) not in (3, 4):
            raise SpecError(f"expected 'SOURCE TARGET BANDWIDTH [LATENCY]', got {len(words)} fields", file=file,
                            path=where)
        bw = _quantity(words[2], BYTES_PER_S, file, f"{where}: bandwidth")
        lat = _quantity(words[3], SECONDS, file, f"{where}: latency") if len(words) == 4 else 0.0
        raws.append(RawLink(where, words[0], words[1], bw, lat, False))
    nodes = [(where, nid, kind) for nid, (where, kind) in declared.items()]
    for raw in raws:
        for end in (raw.source, raw.target):
            if end not in declared:
                declared[end] = (raw.where, "npu")
                nodes.append((raw.where, end, "npu"))
    return build_graph(name, nodes, raws, file=file)
