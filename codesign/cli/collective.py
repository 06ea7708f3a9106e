"""``codesign collective TOPOLOGY --op OP --bytes SIZE``: a collective's proven lower bound on a graph and the
time of the tree-packing schedule found for it (docs/topologies.md).

The schedule's time is analytic, not simulated: each root's shard of M/N bytes streams through its trees at
the packing's rate x, so the all-gather takes (M/N)/x (its bandwidth term; link latency and pipeline fill not
counted); all-reduce is reduce-scatter then all-gather, one after the other. It is reported as
``schedule_s``, never as a simulated time: the replay at chunk grain is not built yet.
"""
from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import SpecError

Handler = Callable[[argparse.Namespace], int]
OPS = ("all_gather", "reduce_scatter", "all_reduce")
_FILE_SUFFIXES = (".json", ".graphml", ".xml", ".txt", ".edges", ".edgelist", ".csv")


def register(sub: Any) -> dict[str, Handler]:
    """Add ``collective`` to ``sub`` (argparse subparsers)."""
    c = sub.add_parser("collective", help="a collective's lower bound and tree-packing schedule on a graph",
                       description="The lower bound on a collective's time that holds for every schedule on a "
                       "network graph (ForestColl's cut bound for all-gather and reduce-scatter), and the "
                       "throughput-optimal spanning-tree packing's analytic time beside it.")
    c.add_argument("topology", help="a graph file (.json node-link, .graphml, an edge list) or a generator "
                   "with parameters, e.g. dgx_a100:nodes=2")
    c.add_argument("--op", choices=OPS, default="all_gather", help="the collective (default all_gather)")
    c.add_argument("--bytes", default="1MiB", metavar="SIZE",
                   help="the output buffer per GPU, NCCL's convention (default 1MiB)")
    c.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                   help="the whole command's seconds at most (default 60); the packing stops "
                   "with the best so far")
    c.add_argument("--json", action="store_true", help="one JSON document on stdout")
    return {"collective": collective_command}


def load_topology(spec: str) -> Any:
    """The graph ``spec`` names: a file if it exists or looks like one, else a generator."""
    from ..platform.graph_files import read_graph
    from ..platform.graph_generators import generate

    if Path(spec).exists() or Path(spec).suffix.lower() in _FILE_SUFFIXES or "/" in spec:
        return read_graph(spec)
    return generate(spec)


def _nbytes(text: str) -> float:
    from ..spec.units import BYTES, UnitError, parse_quantity

    try:
        v = parse_quantity(text, BYTES)
    except UnitError as e:
        raise SpecError(f"--bytes: {e}") from None
    if not v > 0:
        raise SpecError(f"--bytes: expected a positive size such as 1MiB, got {text!r}")
    return float(v)


def collective_report(graph: Any, op: str, nbytes: float, time_limit_s: float,
                      started: float | None = None) -> dict[str, Any]:
    """The bound and the schedule of ``op`` of ``nbytes`` on ``graph``, as the JSON document prints it.
    ``time_limit_s`` counts from ``started`` (a ``time.perf_counter()`` reading; default now): the packing has
    what the command has left."""
    from ..milp.tree_packing import pack_trees
    from ..platform.graph_bounds import collective_bound, cut_bound

    t0 = time.perf_counter() if started is None else started
    n = len(graph.npus)
    deadline = t0 + time_limit_s
    b = collective_bound(graph, op, nbytes, deadline)
    halves = {"all_gather": [graph], "reduce_scatter": [graph.reversed()],
              "all_reduce": [graph.reversed(), graph]}[op]
    schedule_s: float | None = 0.0
    optimal, trees = True, 0
    for h in halves:
        cb = b.cut if b.cut is not None else cut_bound(h, deadline)
        p = pack_trees(h, target_rate=float(cb.rate), time_limit_s=max(deadline - time.perf_counter(), 0.0))
        # a packing that stops at an inexact cut's rate is not proven optimal: a better cut may be below it
        optimal = optimal and p.optimal and cb.exact
        trees += len(p.trees)
        schedule_s = None if schedule_s is None or p.rate <= 0 else schedule_s + nbytes / n / p.rate
    proven = optimal and schedule_s is not None and schedule_s <= b.bandwidth_s * (1 + 1e-6)
    status = ("optimal (the packing attains the bound's bandwidth term)" if proven else
              "schedule found, gap open" if optimal else
              "time limit: best packing so far" if schedule_s is not None else "time limit: no packing yet")
    return {"topology": graph.name, "op": op, "bytes": nbytes, "npus": n,
            "bound_s": b.bound_s, "bound_bandwidth_s": b.bandwidth_s, "bound_latency_s": b.latency_s,
            "bound_why": b.why, "algbw_bytes_per_s": nbytes / b.bound_s,
            "schedule_s": schedule_s, "schedule_kind": "tree packing, analytic bandwidth term (not simulated)",
            "trees": trees, "gap": None if schedule_s is None else schedule_s / b.bandwidth_s - 1, "status": status,
            "solve_time_s": time.perf_counter() - t0}


def collective_command(args: argparse.Namespace) -> int:
    nbytes = _nbytes(args.bytes)
    if not args.time_limit > 0:
        raise SpecError("--time-limit must be a positive number of seconds")
    r = collective_report(load_topology(args.topology), args.op, nbytes, args.time_limit,
                          started=getattr(args, "started", None))
    if args.json:
        print(json.dumps(r, indent=1))
        return 0
    print(f"{r['op']} of {nbytes:,.0f} B per NPU on {r['topology']} ({r['npus']} NPUs)")
    print(f"  bound     {r['bound_s'] * 1e6:10.3f} us  (algbw {r['algbw_bytes_per_s'] / 1e9:.6g} GB/s; "
          f"{r['bound_why']})")
    if r["schedule_s"] is None:
        print("  schedule        none  (the time limit came before the first packing)")
    else:
        print(f"  schedule  {r['schedule_s'] * 1e6:10.3f} us  ({r['trees']} trees; {r['schedule_kind']})")
        print(f"  gap       {100 * r['gap']:10.4f} %   (schedule over the bound's bandwidth term)")
    print(f"  status    {r['status']}")
    print(f"  solved in {r['solve_time_s']:.2f} s")
    return 0
