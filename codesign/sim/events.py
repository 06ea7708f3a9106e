"""A tiny discrete-event core: a heap of (time, sequence, callback, argument).

The loop knows nothing of networks, NPUs or collectives; the domain models schedule plain callables
on it. Time is a float or an int in whatever unit the caller uses (the ASTRA-sim compatible mode uses
nanoseconds, ASTRA's 1 GHz cycles). Events at the same time run in the order they were scheduled (the
sequence number breaks ties), which is what makes runs deterministic.

The hot loop is deliberately plain: no generators, no per-event objects beyond the heap tuple, and the
heap functions bound to locals, so CPython runs one to two million trivial events per second.

The ASTRA-sim mode runs on this loop. The chunk replay (``replay.py``) keeps its own loop with the same
semantics (events in (time, sequence) order, every scheduled event counted, a superseded one included):
with at most one pending completion it needs no heap for those, which saves a push and a pop per event.
"""
from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

__all__ = ["EventLoop"]


class EventLoop:
    """Heap-based event loop.

    ``schedule(t, fn, arg)`` queues ``fn(arg)`` to run at absolute time ``t`` (never earlier than the
    current time); ``run()`` processes events in (time, sequence) order until the heap is empty or
    ``until`` is passed. ``now`` is the time of the event being processed; ``events`` counts the events
    processed so far.
    """

    __slots__ = ("now", "events", "_heap", "_seq")

    def __init__(self) -> None:
        self.now: float = 0
        self.events: int = 0
        self._heap: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self._seq: int = 0

    def schedule(self, t: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Run ``fn(arg)`` at absolute time ``t``; ``t`` below ``now`` is an error in the caller."""
        if t < self.now:
            raise ValueError(f"event scheduled in the past: t={t} < now={self.now}")
        seq = self._seq + 1
        self._seq = seq
        heappush(self._heap, (t, seq, fn, arg))

    def schedule_after(self, delay: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Run ``fn(arg)`` ``delay`` time units after ``now``."""
        self.schedule(self.now + delay, fn, arg)

    def pending(self) -> int:
        """Number of events still queued."""
        return len(self._heap)

    def run(self, until: float | None = None) -> int:
        """Process events in time order; return the number processed by this call.

        With ``until`` the loop stops before the first event later than ``until`` (that event stays
        queued), which lets a caller advance the clock in slices.
        """
        heap = self._heap
        pop = heappop
        # count without touching a counter per event: processed = queued at start + pushed - left
        seq0, queued0 = self._seq, len(heap)
        try:
            if until is None:
                while heap:
                    t, _, fn, arg = pop(heap)
                    self.now = t
                    fn(arg)
            else:
                while heap and heap[0][0] <= until:
                    t, _, fn, arg = pop(heap)
                    self.now = t
                    fn(arg)
        finally:
            done = queued0 + self._seq - seq0 - len(heap)
            self.events += done
        return done
