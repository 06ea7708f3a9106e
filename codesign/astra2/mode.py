"""``codesign simulate --astra2-*``: ASTRA-sim 2.x's inputs run as 2.x runs them, every NPU simulated."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..workload.chakra_wire import NODE_TYPES, Attr, Node, Trace, encode
from .inputs import load_comm_groups, load_network, load_remote_memory, load_system
from .memory import RemoteMemory
from .workload import MEM_LOAD, MEM_STORE, RECV, SEND, RankResult, read_trace, run

BACKENDS = ("congestion-unaware", "congestion-aware")


@dataclass(frozen=True)
class Astra2Result:
    """A run: per rank its figures (ns = 2.x's cycles); the run's finish is the last rank's."""

    backend: str
    npus: int
    ranks: tuple[RankResult, ...]
    events: int

    @property
    def finish_ns(self) -> int:
        return max(r.finish_ns for r in self.ranks)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": "ASTRA-sim 2.x", "backend": self.backend, "npus": self.npus,
                "finish_time_ns": self.finish_ns, "events": self.events,
                "ranks": [r.to_dict() for r in self.ranks]}


def simulate_astra2(network: str, system: str, workload: str, *, comm_group: str | None = None,
                    remote_memory: str | None = None, backend: str = "congestion-unaware",
                    confine_to: Path | None = None) -> Astra2Result:
    """Read 2.x's inputs (the workload is the prefix of ``PREFIX.<rank>.et``) and run them."""
    net = load_network(network, confine_to=confine_to)
    sys_ = load_system(system, len(net.npus), confine_to=confine_to)
    groups = load_comm_groups(comm_group, net.total, confine_to=confine_to)
    memory = load_remote_memory(remote_memory, confine_to=confine_to)
    workload = _prefix(workload)
    traces = [read_trace(workload, r, len(net.npus), npus=net.total, groups=groups, confine_to=confine_to)
              for r in range(net.total)]
    _check_memory_nodes(workload, traces, memory)
    ranks, events = run(net, sys_, traces, aware=backend == "congestion-aware", memory=memory, groups=groups)
    return Astra2Result(backend, net.total, tuple(ranks), events)


def _check_memory_nodes(prefix: str, traces: list[dict[int, Node]], memory: RemoteMemory) -> None:
    """Memory nodes need a remote memory that serves their rank (2.x exits, or indexes past its nodes)."""
    for r, nodes in enumerate(traces):
        n = next((n for n in nodes.values() if n.type in (MEM_LOAD, MEM_STORE)), None)
        if n is None:
            continue
        where = f"node {n.id}" + (f" ({n.name!r})" if n.name else "")
        if memory.memory_type == "NO_MEMORY_EXPANSION":
            raise SpecError(f"{where}: a {NODE_TYPES[n.type]} needs a remote memory, but the memory is "
                            "NO_MEMORY_EXPANSION (2.x exits: 'Remote memory access is not supported'); give "
                            "--astra2-remote-memory with PER_NPU_MEMORY_EXPANSION, PER_NODE_MEMORY_EXPANSION or "
                            "MEMORY_POOL", file=f"{prefix}.{r}.et")
        pool = memory.pool_of(r)
        if memory.memory_type == "PER_NODE_MEMORY_EXPANSION" and pool is not None and pool >= memory.num_nodes:
            raise SpecError(f"rank {r} belongs to memory node {pool} (rank // num-npus-per-node), but num-nodes is "
                            f"{memory.num_nodes}; expected num-nodes x num-npus-per-node to cover every rank with "
                            "memory nodes", file=memory.path, path="num-nodes")


def _prefix(workload: str) -> str:
    """2.x's trace prefix; a folder holding one family ``NAME.<rank>.et`` stands for ``folder/NAME``."""
    p = Path(workload)
    if not p.is_dir():
        return workload
    found = sorted(f.name[:-len(".0.et")] for f in p.glob("*.0.et"))
    if len(found) != 1:
        raise SpecError(f"expected one family of traces NAME.<rank>.et in the folder, found {len(found)} "
                        "(give the prefix PREFIX of PREFIX.<rank>.et)", file=workload)
    return str(p / found[0])


def collective_trace(comm_type: int, nbytes: int, name: str = "coll") -> bytes:
    """A micro-benchmark trace: one collective node (``comm_type`` as Chakra numbers it), as 2.x's examples
    have it (``is_cpu_op`` false, ``comm_type`` and ``comm_size`` as int64)."""
    return program_trace([{"id": 0, "name": name, "comm_type": comm_type, "comm_size": nbytes}])


def program_trace(nodes: list[dict[str, Any]]) -> bytes:
    """A trace from plain node specs: ``{"id", "deps": [ids], "duration_us"}`` for a compute node; with
    ``comm_type`` (Chakra's number) and ``comm_size`` (bytes) a collective node (optional ``involved_dim``,
    ``pg_name``: a communicator group's id);
    with ``send_to`` or ``recv_from`` (a rank), ``comm_size`` and ``tag`` a send or receive node; with
    ``mem`` ("load" or "store") and ``tensor_size`` (bytes) a memory node."""
    out = []
    for d in nodes:
        attrs = [Attr("is_cpu_op", "bool_val", False)]
        kind = 4
        if "comm_type" in d:
            kind = 7
            attrs += [Attr("comm_type", "int64_val", d["comm_type"]), Attr("comm_size", "int64_val", d["comm_size"])]
            if "involved_dim" in d:
                attrs.append(Attr("involved_dim", "bool_list", [bool(x) for x in d["involved_dim"]]))
            if "pg_name" in d:
                attrs.append(Attr("pg_name", "string_val", str(d["pg_name"])))
        elif "send_to" in d or "recv_from" in d:
            kind = SEND if "send_to" in d else RECV
            peer = ("comm_dst", d["send_to"]) if kind == SEND else ("comm_src", d["recv_from"])
            attrs += [Attr(peer[0], "int32_val", peer[1]), Attr("comm_size", "int64_val", d["comm_size"]),
                      Attr("comm_tag", "int32_val", d.get("tag", 0))]
        elif "mem" in d:
            kind = MEM_LOAD if d["mem"] == "load" else MEM_STORE
            attrs.append(Attr("tensor_size", "uint64_val", d["tensor_size"]))
        out.append(Node(id=d["id"], name=d.get("name", f"n{d['id']}"), type=kind,
                        data_deps=tuple(d.get("deps", ())), duration_micros=d.get("duration_us", 0),
                        attrs=tuple(attrs)))
    return encode(Trace("0.0.4", (), tuple(out)))
