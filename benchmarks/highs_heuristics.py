"""HiGHS's primal heuristics on the design master: solve times with and without one, and the answers.

The design master (codesign/milp/master.py) runs HiGHS without its sub-MIP heuristics and without
feasibility jump (``codesign/milp/highs.py``, ``HEURISTICS``). This benchmark turns one heuristic back on
for every master run, solves each problem both ways in alternation, and prints the best time of
each and whether every answer (design, simulated period, status) is the same.

    python benchmarks/highs_heuristics.py [--heuristic mip_heuristic_run_feasibility_jump] [--repeat 3]
        [problem.yaml ...]

Default problems: quickstart at eight area budgets (a sweep's points), ResNet-50 ACE, GNMT, the LIBRA
GPT-3 network problem. Times are whole solves in this process (s).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

import codesign.milp.highs as highs
from codesign.pipeline.solve import solve
from codesign.problem.load import load_problem

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heuristic", default="mip_heuristic_run_feasibility_jump")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    cases: list[tuple[str, list]] = []
    if args.files:
        cases = [(f, [load_problem(f)]) for f in args.files]
    else:
        q = load_problem(ROOT / "problems" / "quickstart.yaml")
        cases.append(("quickstart x 8 area budgets",
                      [dataclasses.replace(q, engine=dataclasses.replace(q.engine, area_budget_mm2=b))
                       for b in (0.9, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0)]))
        for f in ("resnet50_ace_torus3d.yaml", "gnmt_ace_torus2d.yaml", "libra/gpt3_3d.yaml"):
            cases.append((f, [load_problem(ROOT / "problems" / f)]))

    if args.heuristic not in highs.HEURISTICS:
        raise SystemExit(f"--heuristic: one of {', '.join(highs.HEURISTICS)}")

    print(f"{args.heuristic}; best of {args.repeat} alternating runs; load average {os.getloadavg()[0]:.2f}")
    print("| problem | heuristic on (s) | off (s) | on / off | same answers |")
    print("|---|---|---|---|---|")
    for name, problems in cases:
        best = {True: float("inf"), False: float("inf")}
        answers = {}
        for _ in range(args.repeat):
            for state in (True, False):
                highs.HEURISTICS[args.heuristic] = state
                t0 = time.perf_counter()
                sols = [solve(p) for p in problems]
                best[state] = min(best[state], time.perf_counter() - t0)
                answers[state] = [(s.choice, s.iteration_time_s, s.status) for s in sols]
        print(f"| {name} | {best[True]:.3f} | {best[False]:.3f} | {best[True] / best[False]:.2f}x | "
              f"{'yes' if answers[True] == answers[False] else 'NO'} |")


if __name__ == "__main__":
    main()
