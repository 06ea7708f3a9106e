"""MLCommons Chakra execution traces (``.et``) as codesign workloads, and codesign workloads as traces.

A Chakra trace is one NPU's iteration as a graph of nodes (``chakra_wire`` reads the file). The rules
(docs/chakra.md says why each is so):

- ``COMP_NODE`` on the NPU (``is_cpu_op`` false, written as a bool or as 0/1) is a compute task. Its cost:
  ``num_ops`` FLOPs with ``tensor_size`` HBM bytes when ``num_ops`` is there (the problem's NPU prices it
  on its roofline, as for a layer given in flops and bytes), else ``duration_micros`` as a time at the
  full NPU. A CPU op (``is_cpu_op`` true) runs on the host, not the NPU: it passes its dependencies on
  and costs the NPU nothing.
- ``COMM_COLL_NODE`` is a collective: ``comm_type`` (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER or its
  ``_BLOCK`` form, ALL_TO_ALL), ``comm_size`` bytes per NPU (the full buffer, codesign's convention), on
  the topology dimensions ``involved_dim`` marks (a bool per dimension, ASTRA-sim's attribute); without it,
  on those the problem file's ``workload.groups`` gives for its ``pg_name`` or ``comm_group``; without
  either, on every dimension.
- ``COMM_SEND_NODE`` / ``COMM_RECV_NODE`` move ``comm_size`` bytes between this NPU and the peer
  ``comm_dst`` / ``comm_src``, which must differ from it on one topology dimension (ranks count dimension 0
  fastest); they are timed as the LLM builder times a pipeline's transfer (``llm.P2P_AS``).
- Memory, metadata and invalid nodes pass their dependencies on and cost nothing.
- ``data_deps`` and ``ctrl_deps`` are both precedence. Through nodes that are not compute tasks, a task
  depends on every task upstream: a collective is released when the last compute task it depends on
  ends (a collective that depends on another is released with it: the network's order decides between
  them) and awaited before the first task that depends on it; one nothing depends on is awaited before
  the next iteration begins.

The compute tasks' order is the trace's (nodes in file order, kept topological) until
``milp/compute_order.py`` chooses one within the graph (``Workload.task_graph``).

What codesign writes beyond Chakra's attributes carries the prefix ``codesign.`` (exact seconds and bytes
where the schema has whole microseconds and bytes, task and collective kinds, layers, the next iteration's
waits), so that a workload written out and read back is the same workload.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from ..errors import SpecError, shown
from .chakra_wire import (
    COMM_TYPE_IDS,
    COMM_TYPES,
    NODE_TYPE_IDS,
    NODE_TYPES,
    Attr,
    Node,
    Trace,
    TraceTooLarge,
    WireError,
    decode,
    encode,
)
from .llm import P2P_AS
from .model import Comm, Compute, GraphComm, Layer, Step, TaskGraph, Workload

#: Chakra's collective types codesign times, and what it calls them.
COLLECTIVE_OF = {"ALL_REDUCE": "all_reduce", "ALL_GATHER": "all_gather", "REDUCE_SCATTER": "reduce_scatter",
                 "REDUCE_SCATTER_BLOCK": "reduce_scatter", "ALL_TO_ALL": "all_to_all"}
COMM_TYPE_OF = {"all_reduce": "ALL_REDUCE", "all_gather": "ALL_GATHER", "reduce_scatter": "REDUCE_SCATTER",
                "all_to_all": "ALL_TO_ALL"}
#: The schema version codesign writes (that of mlc-chakra 1.0's converters).
VERSION = "0.0.4"
#: Attributes codesign adds to keep what the schema rounds or does not say.
PRIVATE = "codesign."
SUFFIX = ".et"
#: The most (node, upstream task or collective) pairs the dependencies through non-compute nodes may be followed
#: over (our bound on work): a chain of memory nodes that each join one more compute task makes these pairs grow
#: with the square of the nodes (3,000 such pairs of nodes: 4.5 million, 3 s), and the tasks' predecessors with them.
MAX_UPSTREAM_PAIRS = 5_000_000


# ---------------------------------------------------------------- finding the file

def trace_path(src: Path, npu: int | None) -> Path:
    """The ``.et`` file of NPU ``npu`` (default 0) that ``src`` names: a file itself (then ``npu`` must be
    None), a folder holding exactly one ``*.<npu>.et``, or a prefix ``P`` of ``P.<npu>.et`` (ASTRA-sim's
    naming). Raises ValueError saying what was looked for."""
    if src.is_file():
        if npu is not None:
            raise ValueError(f"{src.name} is one trace file; 'npu' picks a file in a folder or by prefix")
        return src
    rank = 0 if npu is None else npu
    if src.is_dir():
        found = sorted(src.glob(f"*.{rank}{SUFFIX}"))
        if len(found) != 1:
            raise ValueError(f"expected one file *.{rank}{SUFFIX} in the folder, found {len(found)}")
        return found[0]
    cand = src.with_name(f"{src.name}.{rank}{SUFFIX}")
    if not cand.is_file():
        raise ValueError(f"no trace: neither a file, a folder nor a prefix of {cand.name}")
    return cand


# ---------------------------------------------------------------- reading

class _Bad(Exception):
    """A malformed node: where (node and attribute) and what was expected."""

    def __init__(self, node: Node, attr: str, msg: str) -> None:
        label = f"node {node.id}" + (f" ({shown(node.name, 40)})" if node.name else "")
        super().__init__(f"{label}: {attr}: {msg}")


def _int(node: Node, name: str, *, lo: int = 0, default: int | None = None) -> int:
    """An integer attribute >= ``lo``, whichever integer field (or a whole double) a producer used."""
    a = node.attr(name)
    if a is None:
        if default is None:
            raise _Bad(node, name, "missing; expected a whole number")
        return default
    v = a.value
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Bad(node, name, f"expected a whole number, got {shown(v)} ({a.kind or 'no value'})")
    if v < lo:
        raise _Bad(node, name, f"expected a whole number >= {lo}, got {v}")
    return v


def _real(node: Node, name: str) -> float | None:
    """A codesign exact value (a finite double >= 0), or None when absent."""
    a = node.attr(name)
    if a is None:
        return None
    if isinstance(a.value, bool) or not isinstance(a.value, (int, float)) or not math.isfinite(a.value) \
            or a.value < 0:
        raise _Bad(node, name, f"expected a number >= 0, got {shown(a.value)}")
    return float(a.value)


def _flag(node: Node, name: str) -> bool:
    """A flag written as a bool or as 0/1 (producers disagree: ``is_cpu_op``)."""
    a = node.attr(name)
    if a is None:
        return False
    if isinstance(a.value, bool):
        return a.value
    if isinstance(a.value, int) and a.value in (0, 1):
        return bool(a.value)
    raise _Bad(node, name, f"expected true or false (or 0 or 1), got {shown(a.value)}")


def _text(node: Node, name: str) -> str | None:
    a = node.attr(name)
    if a is None:
        return None
    if not isinstance(a.value, str):
        raise _Bad(node, name, f"expected text, got {shown(a.value)}")
    return a.value


def _demand(node: Node) -> Compute:
    exact = _real(node, PRIVATE + "time_s")
    if exact is not None:
        return Compute(time_s=exact, flops=_real(node, PRIVATE + "flops"), hbm_bytes=_real(node, PRIVATE + "hbm_bytes"))
    if node.attr("num_ops") is not None:
        flops = _real(node, PRIVATE + "flops")
        hbm = _real(node, PRIVATE + "hbm_bytes")
        return Compute(flops=float(_int(node, "num_ops")) if flops is None else flops,
                       hbm_bytes=float(_int(node, "tensor_size", default=0)) if hbm is None else hbm)
    if not node.duration_micros:
        return Compute()  # no cost at all (as a step that only waits is written)
    return Compute(time_s=node.duration_micros * 1e-6)


def _comm_type(node: Node) -> str:
    a = node.attr("comm_type")
    if a is None:
        raise _Bad(node, "comm_type", f"missing; expected one of {', '.join(COLLECTIVE_OF)}")
    v = a.value
    name = COMM_TYPES.get(v) if isinstance(v, int) and not isinstance(v, bool) else (
        v.upper() if isinstance(v, str) else None)
    if name not in COLLECTIVE_OF:
        got = f"{name} ({v})" if name and isinstance(v, int) else shown(v)
        raise _Bad(node, "comm_type", f"expected one of {', '.join(COLLECTIVE_OF)}, got {got}"
                   + (": codesign does not time it" if name in COMM_TYPE_IDS else ""))
    return COLLECTIVE_OF[name]


def _coll_dims(node: Node, ndims: int, groups: dict[str, tuple[int, ...]] | None) -> tuple[int, ...] | None:
    own = node.attr(PRIVATE + "dims")
    if own is not None:  # codesign's own order of the dimensions, where it is not ascending
        v = own.value
        if not isinstance(v, list) or not v or not all(isinstance(d, int) and 0 <= d < ndims for d in v):
            raise _Bad(node, own.name, f"expected a list of dimension indices 0..{ndims - 1}, got {shown(v)}")
        return tuple(v)
    inv = node.attr("involved_dim")
    if inv is not None:
        v = inv.value
        if not isinstance(v, list) or not all(isinstance(b, bool) or b in (0, 1) for b in v):
            raise _Bad(node, "involved_dim", f"expected a list of booleans, one per dimension, got {shown(v)}")
        if any(v[ndims:]):
            raise _Bad(node, "involved_dim", f"marks dimension {max(i for i, b in enumerate(v) if b)} but the "
                       f"topology has {ndims} (0..{ndims - 1})")
        dims = tuple(i for i, b in enumerate(v) if b)
        if not dims:
            raise _Bad(node, "involved_dim", "marks no dimension")
        return dims
    for key in ("pg_name", "comm_group"):
        a = node.attr(key)
        if a is None or groups is None:
            continue
        g = str(a.value)
        if g not in groups:
            raise _Bad(node, key, f"group {shown(g)} is not in the problem's workload.groups "
                       f"({', '.join(map(repr, groups)) or 'none'})")
        return groups[g]
    return None


def _p2p(node: Node, npu: int, sizes: tuple[int, ...]) -> Comm:
    """A send or receive of ``comm_size`` bytes to or from a peer one dimension away, timed as the LLM
    builder times a transfer between pipeline stages (``llm.P2P_AS``: an all-gather whose phase sends
    exactly the bytes into that dimension)."""
    key = "comm_dst" if node.type == NODE_TYPE_IDS["COMM_SEND_NODE"] else "comm_src"
    peer = _int(node, key)
    total = math.prod(sizes)
    if peer >= total:
        raise _Bad(node, key, f"NPU {peer} is outside the topology's {total} NPUs")

    def coords(r: int) -> list[int]:
        out = []
        for s in sizes:
            out.append(r % s)
            r //= s
        return out

    differ = [d for d, (a, b) in enumerate(zip(coords(npu), coords(peer))) if a != b]
    if len(differ) != 1:
        raise _Bad(node, key, f"NPU {peer} is not NPU {npu}'s peer on one dimension (they differ on "
                   f"{len(differ)} dimensions); codesign times a transfer on one dimension")
    d = differ[0]
    nbytes = _int(node, "comm_size", lo=1)
    p = sizes[d]
    return Comm(P2P_AS, nbytes * p / (p - 1), (d,)) if P2P_AS != "p2p" else Comm("p2p", nbytes, (d,))


def _order(nodes: tuple[Node, ...], by_id: dict[int, Node]) -> list[int]:
    """Node ids in a topological order that keeps file order where the graph allows (Kahn's algorithm,
    the earliest-written ready node first)."""
    import heapq
    at = {n.id: i for i, n in enumerate(nodes)}
    indeg = {n.id: 0 for n in nodes}
    succ: dict[int, list[int]] = {n.id: [] for n in nodes}
    for n in nodes:
        for d in set(n.data_deps) | set(n.ctrl_deps):
            indeg[n.id] += 1
            succ[d].append(n.id)
    ready = [at[i] for i, k in indeg.items() if k == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        i = nodes[heapq.heappop(ready)].id
        out.append(i)
        for s in succ[i]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(ready, at[s])
    if len(out) != len(nodes):
        stuck = next(n for n in nodes if indeg[n.id] > 0)
        raise _Bad(stuck, "data_deps/ctrl_deps", "is on a dependency cycle; expected an acyclic graph")
    return out


def trace_to_workload(trace: Trace, *, file: str, name: str, dim_sizes: tuple[int, ...], npu: int = 0,
                      groups: dict[str, tuple[int, ...]] | None = None) -> Workload:
    """The workload of one NPU's trace (rules: the module's docstring). ``dim_sizes``: the topology's
    dimensions (NPUs each); ``npu``: the trace's rank (for sends and receives); ``groups``: process group
    -> dimensions. Raises SpecError naming ``file``, the node and the attribute."""
    try:
        return _convert(trace, name, dim_sizes, npu, groups)
    except (_Bad, _Empty) as e:
        raise SpecError(str(e), file=file) from None


class _Empty(Exception):
    """A trace with nothing codesign can run."""


def _index(nodes: tuple[Node, ...]) -> dict[int, Node]:
    """The nodes by id, every id unique, every dependency a node of the trace, every type known."""
    if not nodes:
        raise _Empty("the trace has no nodes; expected compute and communication nodes")
    by_id: dict[int, Node] = {}
    for n in nodes:
        if n.id in by_id:
            raise _Bad(n, "id", "used by two nodes; expected unique ids")
        by_id[n.id] = n
    for n in nodes:
        for key, deps in (("data_deps", n.data_deps), ("ctrl_deps", n.ctrl_deps)):
            for d in deps:
                if d not in by_id:
                    raise _Bad(n, key, f"node {d} is not in the trace")
                if d == n.id:
                    raise _Bad(n, key, "depends on itself")
        if n.type not in NODE_TYPES:
            raise _Bad(n, "type", f"expected a node type 0..{max(NODE_TYPES)}, got {n.type}")
    return by_id


def _upstream(topo: list[int], by_id: dict[int, Node], task_of: dict[int, int], is_comm: set[int]
              ) -> tuple[dict[int, frozenset[int]], dict[int, frozenset[int]]]:
    """Per node, the compute tasks and the collectives upstream of it, seen through the nodes that are not
    compute tasks (CPU ops, memory nodes, collectives): (task indices, collective node ids)."""
    up_task: dict[int, frozenset[int]] = {}
    up_comm: dict[int, frozenset[int]] = {}
    work = 0  # pairs followed so far (MAX_UPSTREAM_PAIRS)
    for i in topo:
        n = by_id[i]
        ts: set[int] = set()
        cs: set[int] = set()
        for d in set(n.data_deps) | set(n.ctrl_deps):
            if d in task_of:
                ts.add(task_of[d])
                work += 1
            else:
                ts |= up_task[d]
                cs |= up_comm[d] | ({d} if d in is_comm else set())
                work += 1 + len(up_task[d]) + len(up_comm[d])
            if work > MAX_UPSTREAM_PAIRS:
                raise _Bad(n, "data_deps/ctrl_deps", f"the dependencies through non-compute nodes join more than "
                           f"{MAX_UPSTREAM_PAIRS:,} (node, upstream task) pairs by here; expected a trace whose "
                           "memory and CPU nodes do not each gather the tasks before them")
        up_task[i], up_comm[i] = frozenset(ts), frozenset(cs)
    return up_task, up_comm


def _comm_of(n: Node, npu: int, sizes: tuple[int, ...], groups: dict[str, tuple[int, ...]] | None
             ) -> tuple[Comm, str]:
    """A communication node as a collective (``coll``) or a transfer to its peer (``send``, ``recv``)."""
    if n.type == NODE_TYPE_IDS["COMM_COLL_NODE"]:
        comm = Comm(_comm_type(n), float(_int(n, "comm_size", lo=1)), _coll_dims(n, len(sizes), groups))
        exact = _real(n, PRIVATE + "bytes")
        if exact is not None:  # bytes the schema's integer would round, as codesign wrote them
            comm = Comm(comm.collective, exact, comm.dims)
        return comm, "coll"
    return _p2p(n, npu, sizes), "send" if n.type == NODE_TYPE_IDS["COMM_SEND_NODE"] else "recv"


def _convert(trace: Trace, name: str, sizes: tuple[int, ...], npu: int,
             groups: dict[str, tuple[int, ...]] | None) -> Workload:
    nodes = trace.nodes
    by_id = _index(nodes)
    topo = _order(nodes, by_id)
    COMP, COLL = NODE_TYPE_IDS["COMP_NODE"], NODE_TYPE_IDS["COMM_COLL_NODE"]
    P2P = (NODE_TYPE_IDS["COMM_SEND_NODE"], NODE_TYPE_IDS["COMM_RECV_NODE"])
    task_of: dict[int, int] = {}   # node id -> task index (compute nodes on the NPU)
    comm_ids: list[int] = []
    for i in topo:
        n = by_id[i]
        if n.type == COMP and not _flag(n, "is_cpu_op"):
            task_of[i] = len(task_of)
        elif n.type == COLL or n.type in P2P:
            comm_ids.append(i)
    up_task, up_comm = _upstream(topo, by_id, task_of, set(comm_ids))
    # A collective no compute task precedes is issued at the start: by a zero-time task every other follows.
    start = [] if all(up_task[c] for c in comm_ids) else [-1]
    layers: list[str] = []
    layer_at: dict[str, int] = {}

    def layer(label: str) -> int:
        if label not in layer_at:
            layer_at[label] = len(layers)
            layers.append(label)
        return layer_at[label]

    tasks: list[Step] = []
    preds: list[tuple[int, ...]] = []
    base = len(start)
    if start:
        tasks.append(Step("(start)", layer("(start)"), "idle", Compute()))
        preds.append(())
    for i, _ in sorted(task_of.items(), key=lambda kv: kv[1]):
        n = by_id[i]
        label = n.name or f"node{n.id}"
        own = -1 if _flag(n, PRIVATE + "no_layer") else layer(_text(n, PRIVATE + "layer") or label)
        tasks.append(Step(label, own, _text(n, PRIVATE + "kind") or "compute", _demand(n)))
        preds.append(tuple(sorted({base + u for u in up_task[i]} | ({0} if start else set()))))
    consumers: dict[int, list[int]] = {c: [] for c in comm_ids}
    for i, t in task_of.items():
        for c in up_comm[i]:
            consumers[c].append(base + t)
    comms = []
    # collectives numbered by the task that releases them, then as the trace lists them: the numbering a
    # program gives (step by step), so that a trace written from a program reads back in the same order
    rank = {c: i for i, c in enumerate(comm_ids)}
    comm_ids.sort(key=lambda c: (max((base + u for u in up_task[c]), default=0), rank[c]))
    for c in comm_ids:
        n = by_id[c]
        comm, kind = _comm_of(n, npu, sizes, groups)
        after = tuple(sorted(base + u for u in up_task[c])) or (0,)
        nxt = node_next = None
        if not consumers[c]:
            ref = n.attr(PRIVATE + "next_wait")
            if ref is not None:
                node_next = _int(n, PRIVATE + "next_wait")
                if node_next not in task_of:
                    raise _Bad(n, ref.name, f"node {node_next} is not a compute task of the trace")
                nxt = base + task_of[node_next]
        label = n.name or f"node{n.id}"
        own_layer = _text(n, PRIVATE + "layer")
        comms.append(GraphComm(label, _text(n, PRIVATE + "kind") or kind,
                               layer(own_layer) if own_layer else tasks[max(after)].layer, comm, after,
                               tuple(sorted(consumers[c])), nxt, _real(n, PRIVATE + "delay_s") or 0.0,
                               _flag(n, PRIVATE + "urgent")))
    if not tasks:
        raise _Empty("the trace has no compute task and no collective on the NPU")
    graph = TaskGraph(tuple(tasks), tuple(preds), tuple(comms))
    return Workload(name=name, parallelism="chakra", layers=tuple(Layer(x) for x in layers),
                    program=graph.program(list(range(len(tasks)))), task_graph=graph)


def read_trace(data: bytes, file: str) -> Trace:
    """``data`` (a ``.et`` file's bytes) decoded; SpecError naming ``file`` if it is not a Chakra trace."""
    try:
        return decode(data)
    except TraceTooLarge as e:
        raise SpecError(f"too large a Chakra execution trace: {e}", file=file) from None
    except WireError as e:
        raise SpecError(f"not a Chakra execution trace: {e}", file=file) from None


# ---------------------------------------------------------------- writing

def _exact(name: str, v: float) -> tuple[Attr, ...]:
    """``v`` as a codesign attribute when a whole number would round it."""
    return () if float(v) == int(v) else (Attr(PRIVATE + name, "double_val", float(v)),)


def _comp_node(nid: int, st: Step, layer: str | None, ctrl: tuple[int, ...], data: tuple[int, ...],
               duration_s: Callable[[Compute], float] | None) -> Node:
    d = st.demand
    attrs: list[Attr] = [Attr("is_cpu_op", "bool_val", False), Attr(PRIVATE + "kind", "string_val", st.kind)]
    if layer is not None:
        attrs.append(Attr(PRIVATE + "layer", "string_val", layer))
    else:  # a step of no layer (an optimizer step, a pipeline's idle wait)
        attrs.append(Attr(PRIVATE + "no_layer", "bool_val", True))
    micros = 0
    if d.time_s is None and d.flops is None and d.hbm_bytes is None:
        pass  # no cost given (a step that only waits): none written
    elif d.time_s is not None:
        micros = round(d.time_s * 1e6)
        attrs.append(Attr(PRIVATE + "time_s", "double_val", float(d.time_s)))
        for key in ("flops", "hbm_bytes"):  # a task a compute model timed keeps its work and draws its bytes
            if getattr(d, key) is not None:
                attrs.append(Attr(PRIVATE + key, "double_val", float(getattr(d, key))))
    else:
        flops, hbm = d.flops or 0.0, d.hbm_bytes or 0.0
        attrs += [Attr("num_ops", "int64_val", round(flops)), Attr("tensor_size", "uint64_val", round(hbm)),
                  *_exact("flops", flops), *_exact("hbm_bytes", hbm)]
        if duration_s is not None:
            micros = round(duration_s(d) * 1e6)
    return Node(nid, st.name, NODE_TYPE_IDS["COMP_NODE"], ctrl_deps=ctrl, data_deps=data, duration_micros=micros,
                attrs=tuple(attrs))


def _coll_node(nid: int, name: str, kind: str, comm: Comm, layer: str | None, after: tuple[int, ...],
               next_wait: int | None, delay_s: float, urgent: bool, ndims: int) -> Node:
    if comm.collective not in COMM_TYPE_OF:
        raise ValueError(f"{name}: Chakra has no collective type for {comm.collective!r}")
    attrs = [Attr("is_cpu_op", "bool_val", False),
             Attr("comm_type", "int64_val", COMM_TYPE_IDS[COMM_TYPE_OF[comm.collective]]),
             Attr("comm_size", "int64_val", round(comm.bytes)), *_exact("bytes", comm.bytes),
             Attr(PRIVATE + "kind", "string_val", kind)]
    if comm.dims is not None:
        attrs.append(Attr("involved_dim", "bool_list", [d in comm.dims for d in range(ndims)]))
        if list(comm.dims) != sorted(comm.dims):
            attrs.append(Attr(PRIVATE + "dims", "int64_list", list(comm.dims)))
    if layer is not None:
        attrs.append(Attr(PRIVATE + "layer", "string_val", layer))
    if next_wait is not None:
        attrs.append(Attr(PRIVATE + "next_wait", "int64_val", next_wait))
    if delay_s:
        attrs.append(Attr(PRIVATE + "delay_s", "double_val", float(delay_s)))
    if urgent:
        attrs.append(Attr(PRIVATE + "urgent", "bool_val", True))
    return Node(nid, name, NODE_TYPE_IDS["COMM_COLL_NODE"], data_deps=after, attrs=tuple(attrs))


def program_to_trace(w: Workload, steps: tuple[Step, ...], ndims: int, *,
                     duration_s: Callable[[Compute], float] | None = None) -> Trace:
    """One NPU's iteration (``steps``, a program: ``schedule.iteration.as_program``) as a Chakra trace.

    Compute steps become ``COMP_NODE`` (``num_ops``/``tensor_size`` for FLOPs and HBM bytes, else
    ``duration_micros``; ``duration_s`` gives a step's time for ``duration_micros`` when the writer knows the
    NPU), issues ``COMM_COLL_NODE`` depending on the step that releases them, and a step waiting for a
    collective in the same iteration depends on it. The program order is written as control dependencies
    from each step to the next, so the trace is this order. ``ndims``: the topology's dimensions
    (``involved_dim`` has one entry each). Node ids: steps even, collectives odd, in program order.
    """
    layer_name = [layer.name for layer in w.layers]

    def lay(i: int) -> str | None:
        return layer_name[i] if 0 <= i < len(layer_name) else None

    waits: dict[int, list[int]] = {j: [] for j in range(len(steps))}
    colls: list[Node] = []
    nid = 1
    for j, st in enumerate(steps):
        for iss in st.issues:
            colls.append(_coll_node(nid, iss.name, iss.kind, iss.comm, lay(iss.layer), (2 * j,),
                                    2 * iss.wait if iss.next_iteration else None, iss.delay_s, iss.urgent, ndims))
            if not iss.next_iteration:
                waits[iss.wait].append(nid)
            nid += 2
    out: list[Node] = []
    for j, st in enumerate(steps):
        out.append(_comp_node(2 * j, st, lay(st.layer), (2 * j - 2,) if j else (), tuple(waits[j]), duration_s))
        out += [c for c in colls if c.data_deps == (2 * j,)]
    return Trace(VERSION, (Attr(PRIVATE + "workload", "string_val", w.name),), tuple(out))


def graph_to_trace(w: Workload, ndims: int, *, duration_s: Callable[[Compute], float] | None = None) -> Trace:
    """A workload with a task graph (``Workload.task_graph``) as a Chakra trace of that graph: its precedence as
    control dependencies and each collective depending on all its releasing tasks, so that the order of
    the tasks stays free; written in the workload's program order. Node ids as ``program_to_trace``'s."""
    g = w.task_graph
    assert g is not None and w.program is not None
    names = [s.name for s in w.program]
    pos_of = {}
    for t, task in enumerate(g.tasks):  # the program's steps are the graph's tasks in some order
        pos_of[t] = next(j for j, nm in enumerate(names) if nm == task.name and j not in pos_of.values())
    layer_name = [layer.name for layer in w.layers]
    waits: dict[int, list[int]] = {j: [] for j in range(len(g.tasks))}
    colls: list[tuple[int, Node]] = []
    for k, c in enumerate(g.comms):
        nid = 2 * k + 1
        for b in c.before:
            waits[pos_of[b]].append(nid)
        after = tuple(sorted(2 * pos_of[a] for a in c.after))
        colls.append((max(after), _coll_node(nid, c.name, c.kind, c.comm, layer_name[c.layer], after,
                                              2 * pos_of[c.next_wait] if c.next_wait is not None else None,
                                              c.delay_s, c.urgent, ndims)))
    task_at = {j: t for t, j in pos_of.items()}
    out: list[Node] = []
    for j in range(len(g.tasks)):
        t = task_at[j]
        out.append(_comp_node(2 * j, g.tasks[t], layer_name[g.tasks[t].layer] if g.tasks[t].layer >= 0 else None,
                              tuple(sorted(2 * pos_of[p] for p in g.preds[t])), tuple(sorted(waits[j])), duration_s))
        out += [n for at, n in colls if at == 2 * j]
    return Trace(VERSION, (Attr(PRIVATE + "workload", "string_val", w.name),), tuple(out))


def write_trace(trace: Trace, path: Path) -> None:
    """Write ``trace`` to ``path`` as a ``.et`` file (not gzipped)."""
    path.write_bytes(encode(trace))
