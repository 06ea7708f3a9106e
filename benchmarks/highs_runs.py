"""A count of HiGHS runs (``highspy.Highs.run`` calls), for the benchmarks that report them."""
from __future__ import annotations

import highspy


def counter() -> list[int]:
    """Count every ``highspy.Highs.run`` in this process from now on, in the returned list's one item (set
    it to 0 to start over)."""
    runs = [0]
    run = highspy.Highs.run

    def counted(self):
        runs[0] += 1
        return run(self)
    highspy.Highs.run = counted
    return runs
