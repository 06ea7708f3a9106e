"""ASTRA-sim 2.x's analytical remote memory, which MEM_LOAD / MEM_STORE nodes use (ns, bytes).

After astra-memory-analytical's ``AnalyticalRemoteMemory.cc`` (641cce8, the commit 2.x pins): an access of
``tensor_size`` bytes takes ``remote-mem-latency + int(tensor_size / remote-mem-bw)`` ns (both read as whole
numbers, the bandwidth in bytes per ns). ``PER_NPU_MEMORY_EXPANSION``: every NPU has its own memory, accesses
never wait for each other's. ``PER_NODE_MEMORY_EXPANSION``: NPU r belongs to node r // num-npus-per-node; a node
serves one access at a time, the others wait first come first served. ``MEMORY_POOL``: one memory for all NPUs,
one access at a time. ``NO_MEMORY_EXPANSION``: 2.x stops on any memory node (codesign refuses the trace).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RemoteMemory:
    """The remote-memory JSON's settings."""

    memory_type: str = "NO_MEMORY_EXPANSION"
    latency_ns: int = 0            # remote-mem-latency
    bytes_per_ns: int = 0          # remote-mem-bw (2.x's "GB/sec or B/ns", a whole number)
    num_nodes: int = 0
    npus_per_node: int = 0
    path: str = ""

    def runtime_ns(self, nbytes: int) -> int:
        """``get_remote_mem_runtime``: latency plus bytes over bandwidth, truncated."""
        return self.latency_ns + int(nbytes / self.bytes_per_ns)

    def pool_of(self, rank: int) -> int | None:
        """The shared memory an NPU's accesses queue for (None: its own, no queue)."""
        if self.memory_type == "PER_NODE_MEMORY_EXPANSION":
            return rank // self.npus_per_node
        return 0 if self.memory_type == "MEMORY_POOL" else None


class MemoryModel:
    """The one remote memory of a run; ``issue`` calls ``done(node id)`` in the issuing NPU's event buckets."""

    def __init__(self, cfg: RemoteMemory) -> None:
        self.cfg = cfg
        self._busy: dict[int, bool] = {}
        self._pending: dict[int, deque[tuple[Any, int, int, Callable[[Any], None]]]] = {}

    def issue(self, sys: Any, nbytes: int, node_id: int, done: Callable[[Any], None]) -> None:
        pool = self.cfg.pool_of(sys.rank)
        if pool is None:
            sys.register(self.cfg.runtime_ns(nbytes), done, node_id)
            return
        if self._busy.get(pool):
            self._pending.setdefault(pool, deque()).append((sys, nbytes, node_id, done))
            return
        self._start(pool, sys, nbytes, node_id, done)

    def _start(self, pool: int, sys: Any, nbytes: int, node_id: int, done: Callable[[Any], None]) -> None:
        # 2.x registers the workload's callback, then the memory's own, in the same bucket: the NPU learns
        # first, then the next access starts
        t = self.cfg.runtime_ns(nbytes)
        sys.register(t, done, node_id)
        sys.register(t, self._finished, pool)
        self._busy[pool] = True

    def _finished(self, pool: int) -> None:
        q = self._pending.get(pool)
        if q:
            self._start(pool, *q.popleft())
        else:
            self._busy[pool] = False
