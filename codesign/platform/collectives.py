"""Collective algorithms on a multi-dimensional network: what each phase moves, per NPU.

A hierarchical all-reduce of S bytes over dimensions d1..dn runs a reduce-scatter on d1..d(n-1) (the
buffer shrinks by the dimension's size each time), an all-reduce on dn, then all-gathers back on
d(n-1)..d1 (ASTRA-sim's ``localBWAware``). On one dimension of p NPUs with a buffer of D bytes:
- ring: reduce-scatter and all-gather take p-1 steps of D/p; all-reduce is both (2(p-1) steps);
  all-to-all relays D/p to every peer around the ring, p(p-1)/2 steps, D(p-1)/2 bytes on the links.
- direct: one step per half, the (p-1)D/p bytes spread over the peers at once.
- halving_doubling: log2(p) steps per half, messages halving from D/2.
Every phase sends (p-1)/p of its buffer per NPU (a ring all-to-all more, through relays). Bytes that
arrive to be summed are ``reduce_wire``; bytes that arrive to be stored are ``copy_wire``; the
endpoint's HBM traffic and reduction work follow from those (see ``costs``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..workload.model import Comm
from .topology import Dim, Topology


@dataclass(frozen=True)
class Phase:
    """One phase of a collective on one dimension, per NPU. Bytes in bytes, counts in messages."""

    dim: int
    op: str              # reduce_scatter | all_gather | all_reduce | all_to_all
    algorithm: str
    peers: int           # NPUs in the dimension
    buffer_bytes: float  # the buffer the phase works on (all-gather: its output)
    steps: int           # sequential message steps
    reduce_wire: float   # bytes received to be reduced into the local buffer
    copy_wire: float     # bytes received to be stored (all-gather, all-to-all)

    @property
    def wire_bytes(self) -> float:
        """Bytes each NPU sends into the dimension's links in this phase."""
        return self.reduce_wire + self.copy_wire

    @property
    def reduce_bytes(self) -> float:
        """Bytes of summation work each NPU does in this phase."""
        return self.reduce_wire


def _half_steps(algorithm: str, p: int) -> int:
    if algorithm == "ring":
        return p - 1
    if algorithm == "direct":
        return 1
    if algorithm == "halving_doubling":
        return max(1, math.ceil(math.log2(p)))
    raise ValueError(f"unknown algorithm {algorithm!r}")


def _phase(di: int, dim: Dim, op: str, buffer_bytes: float) -> Phase:
    p = dim.size
    algo = dim.algo
    share = buffer_bytes * (p - 1) / p
    half = _half_steps(algo, p)
    if op == "reduce_scatter":
        return Phase(di, op, algo, p, buffer_bytes, half, share, 0.0)
    if op == "all_gather":
        return Phase(di, op, algo, p, buffer_bytes, half, 0.0, share)
    if op == "all_reduce":
        return Phase(di, op, algo, p, buffer_bytes, 2 * half, share, share)
    if op == "all_to_all":
        if algo == "ring":
            # each of the p-1 shards of D/p travels 1..p-1 hops: D(p-1)/2 bytes over the links
            return Phase(di, op, algo, p, buffer_bytes, p * (p - 1) // 2, 0.0, buffer_bytes * (p - 1) / 2)
        return Phase(di, op, algo, p, buffer_bytes, 1 if algo == "direct" else half, 0.0, share)
    raise ValueError(f"unknown collective {op!r}")


def comm_dims(comm: Comm, topology: Topology) -> list[int]:
    """The dimensions a collective spans, in order, skipping any of a single NPU."""
    dims = comm.dims if comm.dims is not None else tuple(range(len(topology.dims)))
    return [d for d in dims if topology.dims[d].size > 1]


def phases(comm: Comm, topology: Topology, nbytes: float | None = None) -> list[Phase]:
    """The phases of ``comm`` (or of one chunk of ``nbytes`` of it), in execution order."""
    S = comm.bytes if nbytes is None else nbytes
    dims = comm_dims(comm, topology)
    if not dims:
        return []
    T = topology.dims
    out: list[Phase] = []
    if comm.collective == "all_to_all":
        return [_phase(d, T[d], "all_to_all", S) for d in dims]
    if comm.collective == "all_reduce":
        buf = S
        for d in dims[:-1]:
            out.append(_phase(d, T[d], "reduce_scatter", buf))
            buf /= T[d].size
        out.append(_phase(dims[-1], T[dims[-1]], "all_reduce", buf))
        for d in reversed(dims[:-1]):
            buf *= T[d].size
            out.append(_phase(d, T[d], "all_gather", buf))
        return out
    if comm.collective == "reduce_scatter":
        buf = S
        for d in dims:
            out.append(_phase(d, T[d], "reduce_scatter", buf))
            buf /= T[d].size
        return out
    if comm.collective == "all_gather":
        buf = S / math.prod(T[d].size for d in dims)
        for d in reversed(dims):
            buf *= T[d].size
            out.append(_phase(d, T[d], "all_gather", buf))
        return out
    raise ValueError(f"unknown collective {comm.collective!r}")


def payload_bytes(comm: Comm, topology: Topology, nbytes: float | None = None) -> tuple[float, float]:
    """(input, output) bytes per NPU of the collective (or one chunk of it): what an engine that
    keeps intermediate data on chip must read from and write to HBM."""
    S = comm.bytes if nbytes is None else nbytes
    P = math.prod(topology.dims[d].size for d in comm_dims(comm, topology)) or 1
    return {"all_reduce": (S, S), "reduce_scatter": (S, S / P), "all_gather": (S / P, S),
            "all_to_all": (S, S)}[comm.collective]
