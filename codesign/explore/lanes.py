"""Handing a sweep's points to its workers as they free up, each walking its own lane of neighbouring points.

A worker keeps what its points taught it: a family's master, replays and cuts (``pipeline.solve.Family``),
and its last answers as hints for the next family (``points.run_batch``). Both serve most when a worker's
next point is the neighbour of its last one: the same family, or the next bandwidth. Planning the batches
before the sweep (``points.batches``) cannot know which worker runs which batch, nor how long a family will
take (ResNet-50's ACE families differ twofold), so on two workers it gave one worker every other family and
cut one family between them: 98-107 master solves and 68-76 replays for the 50-point ResNet-50 grid, against
78 and 48 in one process; lanes make 85-92 and 55-61 (BENCHMARKS.md, "Lanes").

``Lanes`` orders the points as the plan does (a family's points together, larger budgets first; families in
the order they first appear), starts the workers at evenly spaced points, and, each time a worker finishes a
chunk, gives it the chunk that follows in its lane; once its lane runs into points already handed out, the
worker starts at the middle of the longest run of points nobody has taken (or at its start, where no worker
walks into it). A chunk's size aims at ``CHUNK_S`` of work at the mean point time so far, and is at most the
points left over twice the workers, so the lanes end together (guided self-scheduling). Each chunk is one
task, and a lane's chunks run on one worker (``executors.PoolRunner.run_dynamic``), ``DEPTH`` of them
handed to it at once.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

from .points import BatchTask, PointTask, family_groups

#: The work a chunk aims at (s; our calibration): a chunk costs a round trip to its worker (about 1 ms on the
#: local pool, 3 ms to a Dask actor), during which that worker waits.
CHUNK_S = 0.2
#: Chunks a lane has handed to its worker at once (our calibration). Two spare a worker the round trip between
#: chunks, but a chunk waiting at a worker can no longer go to one that frees up first: on ResNet-50's grid,
#: two left the workers 0.3-0.5 s apart at the end, one mostly within 0.07 s.
DEPTH = 1


class Lanes:
    """The chunks of a sweep's points, handed out as workers free up (see the module's docstring)."""

    def __init__(self, tasks: Sequence[PointTask], family_of: Callable[[PointTask], Any], workers: int,
                 sweep: str = "", order: Callable[[PointTask], Any] | None = None, chunk_s: float = CHUNK_S) -> None:
        groups = family_groups(tasks, family_of, order)
        self.seq: list[PointTask] = [t for g in groups.values() for t in g]
        #: the position of each family's first point
        self._families = list(itertools.accumulate((len(g) for g in groups.values()), initial=0))[:-1]
        self.workers = max(1, workers)
        self.sweep = sweep
        self.chunk_s = chunk_s
        self.taken = [False] * len(self.seq)
        self.left = len(self.seq)
        self._start: dict[str, int] = {}  # a chunk's key -> its first point's position
        self._lane: dict[str, int] = {}  # a chunk's key -> its lane
        self._end: dict[int, int] = {}  # a lane -> the position after its last chunk handed out
        self._points = 0  # points finished, and their summed time (s), for the mean point time
        self._seconds = 0.0

    def first(self) -> list[list[BatchTask]]:
        """Per lane, its first ``DEPTH`` chunks of one point each, the lanes at evenly spaced positions (moved
        to a family's first point within half a lane): the first chunks measure the point time."""
        n = len(self.seq)
        half = n / (2 * self.workers)  # half a lane: how far a start moves to a family's first point
        starts: list[int] = []
        for i in range(self.workers):
            lo = starts[-1] + 1 if starts else 0
            at = max(lo, self._snap((i * n) // self.workers, half, lo))
            if at < n:
                starts.append(at)
        out = [[self._chunk(s, 1, lane)] for lane, s in enumerate(starts)]
        for _ in range(DEPTH - 1):
            for lane, chunks in enumerate(out):
                nxt = self._next(lane, 1)
                if nxt is not None:
                    chunks.append(nxt)
        return out

    def follow(self, done: BatchTask, row: dict[str, Any] | None) -> BatchTask | None:
        """The next chunk of the lane of ``done``, which finished (``row``: its result, ``{"rows": [...]}``,
        or None or a row without ``rows`` where it failed as a whole): the chunk after the lane's last one
        handed out; None once every point is handed out."""
        for r in (row or {}).get("rows") or ():
            s = r.get("wall_s")
            if isinstance(s, (int, float)) and math.isfinite(s):
                self._points += 1
                self._seconds += float(s)
        return self._next(self._lane[done.key], self._size())

    def _next(self, lane: int, size: int) -> BatchTask | None:
        """The chunk of ``size`` points after ``lane``'s last one, or, where that point is taken, near the
        middle of the longest run of points not handed out (at its start where no lane walks into it)."""
        if not self.left:
            return None
        at = self._end[lane]
        if at < len(self.seq) and not self.taken[at]:
            return self._chunk(at, size, lane)
        a, b = self._longest_free_run()
        if not (a and a in self._end.values()):  # no lane goes on into the run: start at its start
            return self._chunk(a, size, lane)
        # a lane that ended at a goes on into the run: start near its middle, so that both get half
        return self._chunk(self._snap(a + (b - a) // 2, (b - a) / 4, a + 1, b), size, lane)

    def _snap(self, at: int, within: float, lo: int = 0, hi: int | None = None) -> int:
        """The first point of a family nearest ``at`` (the earlier of two as near), at most ``within`` from it
        and in [lo, hi), else ``at``: a worker that starts a family whole cuts none."""
        hi = len(self.seq) if hi is None else hi
        near = [f for f in self._families if lo <= f < hi and abs(f - at) <= within]
        return min(near, key=lambda f: (abs(f - at), f)) if near else at

    def _size(self) -> int:
        """Points in the next chunk: ``chunk_s`` at the mean point time, at most the points left over twice
        the workers, at least one."""
        guided = -(-self.left // (2 * self.workers))
        if not self._points:
            return 1
        mean = self._seconds / self._points
        return max(1, min(int(self.chunk_s / mean), guided)) if mean > 0 else guided

    def _longest_free_run(self) -> tuple[int, int]:
        """The longest run [a, b) of points not handed out (the first among equals)."""
        best, a = (0, 0), None
        for i, t in enumerate([*self.taken, True]):
            if not t and a is None:
                a = i
            elif t and a is not None:
                if i - a > best[1] - best[0]:
                    best = (a, i)
                a = None
        return best

    def _chunk(self, start: int, size: int, lane: int) -> BatchTask:
        """``lane``'s chunk of up to ``size`` points from ``start``, up to the next point already handed out."""
        end = start
        while end < len(self.seq) and end - start < size and not self.taken[end]:
            self.taken[end] = True
            end += 1
        self.left -= end - start
        tasks = tuple(self.seq[start:end])
        self._start[tasks[0].key] = start
        self._lane[tasks[0].key] = lane
        self._end[lane] = end
        return BatchTask(tasks[0].key, tasks, self.sweep)
