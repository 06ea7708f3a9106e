"""Benchmark: codesign's chunk-grain replay (codesign/sim/replay.py) on the shipped problems.

Prints, per problem, the replay's wall time, events and events/s for the solved design, and how the cost
grows with chunks per collective and with iterations. Run from the repository root:

    python benchmarks/sim_replay.py
"""
from __future__ import annotations

import dataclasses
import platform
import time
from pathlib import Path

import codesign
from codesign.platform.endpoint import design_of
from codesign.sim.replay import simulate

ROOT = Path(__file__).resolve().parent.parent


def timed(problem, design, order, iterations=8, reps=3):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        r = simulate(problem, design, order=order, iterations=iterations)
        best = min(best, time.perf_counter() - t0)
    return r, best


def main() -> None:
    print(f"Python {platform.python_version()} on {platform.machine()}; best of 3 wall times; 8 iterations replayed")
    print()
    print("| problem | layers | NPUs | chunks | events | wall (ms) | events/s | MILP (ms) | replay (ms) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in ("quickstart", "resnet50_ace_torus3d", "resnet50_baseline_torus3d", "gnmt_ace_torus2d"):
        p = codesign.load_problem(ROOT / "problems" / f"{name}.yaml")
        s = codesign.solve(p)
        d = design_of(p.engine, s.choice)
        r, wall = timed(p, d, s.order)
        print(f"| {name} | {len(p.workload.layers)} | {p.topology.npus} | {p.schedule.chunks} | {r.events} | "
              f"{wall * 1e3:.1f} | {r.events / wall / 1e6:.2f} M | {s.iteration_time_s * 1e3:.4g} | "
              f"{r.period_s * 1e3:.4g} |")
    print()
    print("Growth on ResNet-50 ACE (4x4x4):")
    print()
    print("| chunks | iterations | events | wall (ms) |")
    print("|---|---|---|---|")
    p0 = codesign.load_problem(ROOT / "problems" / "resnet50_ace_torus3d.yaml")
    s0 = codesign.solve(p0)
    d0 = design_of(p0.engine, s0.choice)
    for chunks, iters in ((1, 8), (4, 8), (16, 8), (4, 16), (4, 32)):
        p = dataclasses.replace(p0, schedule=dataclasses.replace(p0.schedule, chunks=chunks))
        r, wall = timed(p, d0, None, iterations=iters, reps=1)
        print(f"| {chunks} | {iters} | {r.events} | {wall * 1e3:.1f} |")


if __name__ == "__main__":
    main()
