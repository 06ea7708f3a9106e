"""Where a sweep point's time goes, in one process: milliseconds and HiGHS runs per point of a serial sweep
(``plan`` + ``run_plan``, validation on), this tree against a baseline checkout, alternating.

    python benchmarks/sweep_in_process.py --baseline /tmp/codesign-main [--rounds 3]

Three sweeps: the quickstart's 40 points (20 bandwidths x 2 area budgets), 20 ResNet-50 ACE points
(2 bandwidths x 10 area budgets) and 50 (5 x 10, the grid of ``sweep_throughput.py``). Each measurement runs
in a fresh process whose ``PYTHONPATH`` is the tree measured, after a warm-up point of another family; "MIP
runs" counts ``highspy.Highs.run`` calls on models with integer columns (the master's solves and tie-breaks),
"LPs" those on LPs (the master's floors, docs/formulation.md 3.7). The medians over rounds are printed, and
whether both trees' answers (status, period, area) are the same. The plan (``plan``: every point's problem
parsed and validated) is timed apart too, and the masters built (``Master.__init__``; the rest restart or
rebind one) are counted.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWEEPS = {  # name: (problem, the sweep's parameters, a warm-up point of another family)
    "quickstart, 40 points": (
        "problems/quickstart.yaml",
        {"topology.dims[1].bandwidth": "log:5GB/s:200GB/s:20", "engine.area_budget": "2mm^2,3mm^2"},
        {"schedule.chunks": "2"}),
    "ResNet-50 ACE, 20 points": (
        "problems/resnet50_ace_torus3d.yaml",
        {"topology.dims[0].bandwidth": "8GiB/s,16GiB/s", "engine.area_budget": "0.5mm^2:5mm^2:10"},
        {"schedule.chunks": "2", "engine.area_budget": "0.5mm^2"}),
    "ResNet-50 ACE, 50 points": (  # the grid of benchmarks/sweep_throughput.py: five families of ten
        "problems/resnet50_ace_torus3d.yaml",
        {"topology.dims[0].bandwidth": "log:8GiB/s:128GiB/s:5", "engine.area_budget": "0.5mm^2:5mm^2:10"},
        {"schedule.chunks": "2", "engine.area_budget": "0.5mm^2"}),
}


def measure(name: str) -> dict:
    """In this process: warm up, then one serial sweep of ``name``; ms and HiGHS runs per point, answers."""
    import time

    from highs_runs import counter  # benchmarks/highs_runs.py

    from codesign.explore.sweep import VALIDATE, plan, run_plan
    runs = counter()
    problem, params, warm = SWEEPS[name]
    run_plan(plan(problem, warm, checks=[VALIDATE]), executor="serial")
    from codesign.milp.master import Master
    builds = []
    init = Master.__init__

    def counted(self, *args, **kwargs):
        builds.append(1)
        init(self, *args, **kwargs)
    Master.__init__ = counted
    runs[:] = [0, 0]
    t0 = time.perf_counter()
    pl = plan(problem, params, checks=[VALIDATE])
    planned = time.perf_counter()
    df = run_plan(pl, executor="serial")
    wall = time.perf_counter() - t0
    n = len(df)
    answers = [[r["key"], r["status"], r["iteration_time_s"], r["area_mm2"]] for r in df.to_dict("records")]
    return {"ms": 1e3 * wall / n, "runs": runs[0] / n, "lps": runs[1] / n, "answers": answers,
            "plan_ms": 1e3 * (planned - t0), "builds": len(builds), "codesign": __import__("codesign").__file__}


def run(tree: Path, name: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, __file__, "--measure", name], env=env, capture_output=True, text=True,
                       cwd=tree)
    if r.returncode != 0:
        raise SystemExit(f"measurement in {tree} failed:\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    if not out["codesign"].startswith(str(tree)):
        raise SystemExit(f"the measurement of {tree} loaded codesign from {out['codesign']}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=False)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    rev = lambda t: subprocess.run(["git", "-C", str(t), "rev-parse", "--short", "HEAD"],  # noqa: E731
                                   capture_output=True, text=True).stdout.strip()
    base = args.baseline.resolve() if args.baseline else None
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; this tree {rev(ROOT)}, baseline "
          f"{rev(base) if base else '-'}; median of {args.rounds} rounds, the trees alternating")
    print("| sweep | baseline ms/point | baseline MIP runs / LPs a point | this tree ms/point | this tree MIP runs / "
          "LPs a point | baseline / this tree | same answers | plan ms, baseline / this tree | masters built, baseline "
          "/ this tree |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in SWEEPS:
        before, after = [], []
        for _ in range(args.rounds):
            if base:
                before.append(run(base, name))
            after.append(run(ROOT, name))
        med = lambda xs, k: statistics.median(x[k] for x in xs) if xs else float("nan")  # noqa: E731
        same = "-" if not before else ("yes" if all(b["answers"] == a["answers"] for b, a in zip(before, after))
                                       else "NO")
        b_ms, a_ms = med(before, "ms"), med(after, "ms")
        print(f"| {name} | {b_ms:.1f} | {med(before, 'runs'):.2f} / {med(before, 'lps'):.2f} | {a_ms:.1f} | "
              f"{med(after, 'runs'):.2f} / {med(after, 'lps'):.2f} | {b_ms / a_ms:.2f}x | {same} | "
              f"{med(before, 'plan_ms'):.0f} / {med(after, 'plan_ms'):.0f} | "
              f"{med(before, 'builds'):.0f} / {med(after, 'builds'):.0f} |", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
