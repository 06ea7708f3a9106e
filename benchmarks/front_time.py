"""The time of a Pareto front (``codesign.pareto_front``, what ``codesign pareto`` traces) in this process, with two
values of the collector's oldest threshold while its solves run (``pacing.OLDEST_THRESHOLD``; 10 is Python's
default, which the solves then keep), alternating run by run (which goes first alternating too).

    python benchmarks/front_time.py                                   # ResNet-50 ACE, area against time, 4 rounds
    python benchmarks/front_time.py problems/quickstart.yaml --rounds 6

The process imports pandas first, as a notebook or ``codesign pareto`` (which writes the front with it) has: a
full collection walks every object not frozen, the caller's included. Prints each value's median wall, and the
median of the rounds' ratios.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem", nargs="?", default=str(ROOT / "problems" / "resnet50_ace_torus3d.yaml"))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--oldest", default="10,100", help="two values of pacing.OLDEST_THRESHOLD (default 10,100)")
    args = ap.parse_args()
    import pandas  # noqa: F401 (the caller's heap, see above)

    from codesign.explore import pacing
    from codesign.explore.pareto import pareto_front
    from codesign.problem.load import load_problem

    values = [int(v) for v in args.oldest.split(",")]
    if len(values) != 2:
        raise SystemExit("--oldest takes two values, e.g. 10,100")
    problem = load_problem(args.problem)
    print(f"{Path(args.problem).name}: area against iteration time, exact walk; oldest threshold {values[0]} "
          f"against {values[1]}; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    front = pareto_front(problem)  # warm-up: imports, first solves
    walls: dict[int, list[float]] = {v: [] for v in values}
    kept = pacing.OLDEST_THRESHOLD
    try:
        for r in range(args.rounds):
            for v in (values if r % 2 == 0 else values[::-1]):
                pacing.OLDEST_THRESHOLD = v
                t0 = time.perf_counter()
                front = pareto_front(problem)
                walls[v].append(time.perf_counter() - t0)
    finally:
        pacing.OLDEST_THRESHOLD = kept
    print(f"{len(front.points)} points, {front.solves} solves a front")
    for v in values:
        print(f"oldest {v}: median {statistics.median(walls[v]):.3f} s ({', '.join(f'{x:.3f}' for x in walls[v])})")
    ratio = statistics.median(a / b for a, b in zip(walls[values[0]], walls[values[1]]))
    print(f"{values[0]} / {values[1]}: {ratio:.3f} (median of the rounds' ratios)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
