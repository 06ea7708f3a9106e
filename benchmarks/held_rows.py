"""Rows held back from HiGHS (``codesign/milp/highs._Held``): whole solves with the rows held back (the
default: masters of ``HOLD_MIN_ROWS`` rows or more) and with every row given to HiGHS from the start,
solved in alternation, with the HiGHS runs each made and whether every answer is the same.

    python benchmarks/held_rows.py [--repeat 3] [problem.yaml ...]

``--any-size`` holds rows back in every model (the thresholds ``HOLD_MIN_ROWS`` and ``HOLD_MAX_ROWS`` off),
to see what the thresholds avoid. Default problems: masters from 73 to 12,109 rows (the quickstart, DLRM,
GNMT, the Transformer's ASTRA-sim mode, ResNet-50 ACE and baseline, GPT-3 175B on 1024 NPUs, the 500-layer
scale problem).
Times are the median whole ``solve`` in this process (s); "runs" counts ``highspy.Highs.run`` calls.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from highs_runs import counter  # benchmarks/highs_runs.py

import codesign.milp.highs as highs
from codesign.milp.data import model_data
from codesign.milp.master import Master
from codesign.pipeline.solve import solve
from codesign.problem.load import load_problem

ROOT = Path(__file__).resolve().parent.parent
FILES = ["quickstart.yaml", "paper/dlrm_n64_ace.yaml", "paper/gnmt_n64_baseline.yaml",
         "astra/transformer_hybrid_ace_torus3d.yaml", "resnet50_ace_torus3d.yaml", "resnet50_baseline_torus3d.yaml",
         "llm/gpt3_175b_ace_1024npu.yaml", "scale/synthetic500_ace_1024npu.yaml"]

_runs = counter()


def once(problem, hold: bool | None) -> tuple[float, int, tuple]:
    """One whole solve with rows held back (True: where the thresholds say; None: in any model) or not:
    its wall (s), HiGHS runs, and answer."""
    saved = highs.HOLD_MIN_ROWS, highs.HOLD_MAX_ROWS
    if hold is None:  # every model holds rows back, whatever its size
        highs.HOLD_MIN_ROWS, highs.HOLD_MAX_ROWS = 0, 10**12
    elif not hold:
        highs.HOLD_MIN_ROWS = 10**12
    _runs[0] = 0
    try:
        t0 = time.perf_counter()
        s = solve(problem)
        wall = time.perf_counter() - t0
    finally:
        highs.HOLD_MIN_ROWS, highs.HOLD_MAX_ROWS = saved
    return wall, _runs[0], (s.status, s.iteration_time_s, tuple(sorted(s.choice.items())), s.evaluations)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--any-size", action="store_true", help="hold rows back in every model, whatever its size")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    files = args.files or [str(ROOT / "problems" / f) for f in FILES]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; rows held back in masters of "
          + ("any size" if args.any_size else f"{highs.HOLD_MIN_ROWS} to {highs.HOLD_MAX_ROWS} rows")
          + f"; median of {args.repeat}, the two ways alternating")
    print("| problem | master rows | held at the build | whole (s) | held (s) | whole/held | runs whole / held | "
          "same answer |")
    print("|---|---|---|---|---|---|---|---|")
    for f in files:
        p = load_problem(f)
        saved = highs.HOLD_MIN_ROWS, highs.HOLD_MAX_ROWS
        if args.any_size:
            highs.HOLD_MIN_ROWS, highs.HOLD_MAX_ROWS = 0, 10**12
        c = Master(model_data(p)).compile()
        highs.HOLD_MIN_ROWS, highs.HOLD_MAX_ROWS = saved
        rows, held = c.model_rows, len(c.held.rows)
        whole, kept, same = [], [], True
        for _ in range(args.repeat):
            a, b = once(p, False), once(p, None if args.any_size else True)
            whole.append(a)
            kept.append(b)
            same = same and a[2] == b[2]
        w = statistics.median(x[0] for x in whole)
        h = statistics.median(x[0] for x in kept)
        name = os.path.relpath(f, ROOT / "problems")
        print(f"| {name} | {rows} | {held} | {w:.3f} | {h:.3f} | {w / h:.2f}x | {whole[0][1]} / {kept[0][1]} | "
              f"{'yes' if same else 'NO'} |", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
