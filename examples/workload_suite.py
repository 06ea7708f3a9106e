"""One ACE for three workloads: the ACE study's suite under a tighter area budget, where the workloads disagree.

Loads ``problems/suites/ace_study_suite.yaml`` (ResNet-50, GNMT and DLRM on the 64-NPU study platform), lowers
the area budget from 4 mm^2 to 1.6 mm^2 so that SRAM, ALU and DMA compete for it, and solves the suite for each
objective: the one design, proven best for the objective, and per workload its time there, its own best
(an engine sized for it alone, solved and proven by the same search) and the regret. The same from the shell,
with the file's own budget:

    codesign solve problems/suites/ace_study_suite.yaml

Run:  python examples/workload_suite.py [suite.yaml] [area budget, mm^2]
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from codesign.suite.search import solve_suite
from codesign.suite.spec import load_suite

HERE = Path(__file__).resolve().parent


def main(path: str, area_mm2: float) -> dict:
    """Solve the suite at ``path`` with the area budget ``area_mm2`` for each time objective; the results by
    objective."""
    suite = load_suite(path)
    tight = tuple(dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=area_mm2))
                  for p in suite.problems)
    suite = dataclasses.replace(suite, problems=tight)
    out = {}
    for objective in ("weighted_time", "geomean_slowdown", "max_slowdown"):
        res = solve_suite(dataclasses.replace(suite, objective=objective))
        out[objective] = res
        print(f"{objective}: {res.status}, objective {res.objective:.6g}, design {res.choice} "
              f"({res.simulations} simulations of {res.designs_simulated} of {res.catalog} designs)")
        for name, t, own in zip(suite.names, res.periods_s, res.own_best_s):
            print(f"  {name:<10} {t * 1e3:9.4f} ms at the suite's design, own best {own * 1e3:9.4f} ms, "
                  f"regret {100 * (t / own - 1):5.2f}%")
    return out


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(HERE.parent / "problems" / "suites" / "ace_study_suite.yaml"),
         float(sys.argv[2]) if len(sys.argv) > 2 else 1.6)
