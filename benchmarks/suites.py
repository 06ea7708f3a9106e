"""Workload suites (docs/suites.md): the ACE study's three workloads on one ACE, against three separate solves.

Solves ``problems/suites/ace_study_suite.yaml`` (ResNet-50, GNMT and DLRM on the 64-NPU study platform, one
ACE under 4 mm^2 and 6 W) for each suite objective, and the three single-workload files it is made of
(``problems/paper/<workload>_n64_ace.yaml``), in one run, and prints per objective the suite's status, solve
time, replays (simulations) and distinct designs replayed, against the separate solves' sum of evaluations
and time; then the whole command ``codesign solve`` on the suite file (the process included), timed. The
issue's target: proven in <= 10 s on 2 cores, evaluating fewer designs than the three separate solves.

    python benchmarks/suites.py                  # the shipped suite
    python benchmarks/suites.py --area 1.6       # the same with a tighter area budget (mm^2)
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "problems" / "suites" / "ace_study_suite.yaml"
SINGLES = [ROOT / "problems" / "paper" / f"{w}_n64_ace.yaml" for w in ("resnet50", "gnmt", "dlrm")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--area", type=float, help="area budget (mm^2) for the suite and the singles alike")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from codesign.pipeline.solve import solve
    from codesign.problem.load import load_problem
    from codesign.suite.search import solve_suite
    from codesign.suite.spec import load_suite

    def budget(p):
        if args.area is None:
            return p
        return dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=args.area))

    evaluations, single_s = 0, 0.0
    for f in SINGLES:
        t0 = time.perf_counter()
        sol = solve(budget(load_problem(f)))
        single_s += time.perf_counter() - t0
        evaluations += sol.evaluations
        print(f"single  {f.name:<24} {sol.status:<8} {sol.iteration_time_s:.6g} s  {sol.evaluations:>3} evaluations  "
              f"{time.perf_counter() - t0:.2f} s")
    print(f"single  sum of the three solves: {evaluations} evaluations, {single_s:.2f} s")
    suite = load_suite(SUITE)
    suite = dataclasses.replace(suite, problems=tuple(budget(p) for p in suite.problems))
    for objective in ("weighted_time", "geomean_slowdown", "max_slowdown"):
        t0 = time.perf_counter()
        res = solve_suite(dataclasses.replace(suite, objective=objective))
        wall = time.perf_counter() - t0
        regrets = ", ".join(f"{n} {100 * (t / o - 1):.2f}%" for n, t, o in zip(suite.names, res.periods_s,
                                                                              res.own_best_s))
        print(f"suite   {objective:<18} {res.status:<8} objective {res.objective:.6g}  {res.simulations:>3} "
              f"simulations of {res.designs_simulated:>3} designs (catalog {res.catalog})  {wall:.2f} s  "
              f"regret {regrets}")
    if args.area is None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "codesign", "solve", str(SUITE)], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        print(f"command codesign solve {SUITE.relative_to(ROOT)}: {time.perf_counter() - t0:.2f} s (whole process)")


if __name__ == "__main__":
    main()
