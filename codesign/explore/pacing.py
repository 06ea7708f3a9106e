"""The garbage collector's pace while a sweep's or a front's solves run in a process (``paced_collections``).

A process that solves point after point keeps its families' masters and replays alive between them
(``pipeline.solve.Family``), and a full collection walks all of them again to free next to nothing. While such
solves run, full collections come less often; everything is still collected, only later.
"""
from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Collections of the middle generation before the collector looks at every object (a full collection) while a
#: sweep's batch or a front's solve runs, at least (Python's default is 10; our calibration, BENCHMARKS.md "Fewer
#: full collections"). A sweep's worker keeps its families' masters and replays alive between points, and a full
#: collection walks them all again to free next to nothing: ResNet-50's 200-point grid in one Dask worker ran
#: 23-24 full collections (0.19-0.28 s of gc) and 3,000 others (0.10 s); with 100, 2 full ones (0.04-0.05 s). The
#: youngest generation's threshold is left as it is: raising it to 10,000 cut the full collections as well, but
#: its own collections took 0.16 s instead of 0.05 s. (CPython also waits for a quarter of the old objects to be
#: new since the last full collection; an interpreter whose collector ignores the third threshold gains nothing.)
OLDEST_THRESHOLD = 100
_paced = 0  # blocks running with the raised threshold (a Dask worker may have several threads); under the lock
_paced_lock = threading.Lock()
_unpaced = 0  # the oldest threshold the first block found, and _raised what it set; under the lock
_raised = 0


@contextmanager
def paced_collections() -> Iterator[None]:
    """The collector's oldest threshold raised to at least ``OLDEST_THRESHOLD`` while the block runs. When the last
    such block of the process ends (of any thread), the oldest threshold the first one found comes back, unless
    something set another one meanwhile (that one is kept); the other two thresholds are never touched. Every
    object is still collected, only later."""
    global _paced, _unpaced, _raised
    entered = False
    try:
        with _paced_lock:
            if not _paced:
                *young, _unpaced = gc.get_threshold()
                _raised = max(_unpaced, OLDEST_THRESHOLD)
                gc.set_threshold(*young, _raised)
            _paced += 1
            entered = True
        yield
    finally:
        if entered:
            with _paced_lock:
                _paced -= 1
                now = gc.get_threshold()
                if not _paced and now[2] == _raised:
                    gc.set_threshold(*now[:2], _unpaced)
