"""``codesign simulate --astra2-*``: ASTRA-sim 2.x's inputs run as 2.x runs them, every NPU simulated."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..workload.chakra_wire import Attr, Node, Trace, encode
from .inputs import load_comm_groups, load_network, load_remote_memory, load_system
from .workload import RankResult, read_trace, run

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
    load_comm_groups(comm_group, net.total, confine_to=confine_to)
    load_remote_memory(remote_memory, confine_to=confine_to)
    workload = _prefix(workload)
    traces = [read_trace(workload, r, len(net.npus), confine_to=confine_to) for r in range(net.total)]
    ranks, events = run(net, sys_, traces, aware=backend == "congestion-aware")
    return Astra2Result(backend, net.total, tuple(ranks), events)


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
    """A trace from plain node specs: ``{"id", "deps": [ids], "duration_us"}`` for a compute node, or with
    ``comm_type`` (Chakra's number) and ``comm_size`` (bytes) a collective node (optional ``involved_dim``)."""
    out = []
    for d in nodes:
        attrs = [Attr("is_cpu_op", "bool_val", False)]
        if "comm_type" in d:
            attrs += [Attr("comm_type", "int64_val", d["comm_type"]), Attr("comm_size", "int64_val", d["comm_size"])]
            if "involved_dim" in d:
                attrs.append(Attr("involved_dim", "bool_list", [bool(x) for x in d["involved_dim"]]))
        out.append(Node(id=d["id"], name=d.get("name", f"n{d['id']}"), type=7 if "comm_type" in d else 4,
                        data_deps=tuple(d.get("deps", ())), duration_micros=d.get("duration_us", 0),
                        attrs=tuple(attrs)))
    return encode(Trace("0.0.4", (), tuple(out)))
