"""A count of HiGHS runs (``highspy.Highs.run`` calls), for the benchmarks that report them."""
from __future__ import annotations

import highspy


def counter() -> list[int]:
    """Count every ``highspy.Highs.run`` in this process from now on: the runs of models with integer columns
    (MIPs: the master's solves and tie-breaks) in the returned list's first item, those of LPs (the master's
    floors, docs/formulation.md 3.7; the platform LP) in its second (set them to 0 to start over)."""
    runs = [0, 0]
    run = highspy.Highs.run

    def counted(self):
        out = run(self)
        runs[0 if self.getInfo().mip_node_count >= 0 else 1] += 1
        return out
    highspy.Highs.run = counted
    return runs
