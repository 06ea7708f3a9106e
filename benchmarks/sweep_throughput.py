"""Sweep throughput: points per second per core, the overhead a point costs beyond its own solve, and
the speed-up from 1 to 2 workers on a local pool and on a Dask LocalCluster.

    python benchmarks/sweep_throughput.py              # the quickstart, 40 points per executor
    python benchmarks/sweep_throughput.py --resnet50   # + the ResNet-50 ACE problem, 50 points, pool vs Dask

Every run writes its results CSV (the streaming and resume bookkeeping are part of a point's cost). For an
executor of w workers: points/s/core = N / wall / w; overhead per point = (w x wall - sum of the points'
solve times) / N, so it holds planning (validating every point), pickling, the pool or cluster start,
idle tails and the CSV; "in-process" runs every point in this process, which isolates the per-point
bookkeeping from process start-up. The local pool's fork server (one import of codesign, about 0.7 s,
once per sweeping process) is started before the measurements; a Dask cluster's start-up is reported
apart, as a long-lived cluster would not pay it per sweep.
"""
from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codesign.explore.sweep import plan, run_plan

QUICK = str(ROOT / "problems" / "quickstart.yaml")
RESNET = str(ROOT / "problems" / "resnet50_ace_torus3d.yaml")


def start_dask(workers: int) -> tuple[object, float]:
    """A LocalCluster of ``workers`` single-thread processes with codesign imported in each; its start-up (s)."""
    from dask.distributed import Client, LocalCluster

    t0 = time.perf_counter()
    client = Client(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                 silence_logs=logging.CRITICAL))
    client.run(lambda: __import__("codesign.explore.sweep"))
    return client, time.perf_counter() - t0


def measure(problem: str, params: dict, executor: str, workers: int, tmp: Path) -> dict:
    """One sweep; for Dask the cluster is started (and timed) first, as a user's ``--scheduler`` would find it."""
    client, startup = (start_dask(workers) if executor == "dask" else (None, 0.0))
    t0 = time.perf_counter()
    pl = plan(problem, params)
    t_plan = time.perf_counter() - t0
    df = run_plan(pl, executor=client or executor, workers=workers,
                  out=tmp / f"{executor}-{workers}-{time.time_ns()}.csv")
    wall = time.perf_counter() - t0
    if client is not None:
        cluster = client.cluster
        client.close()
        cluster.close()
    n = len(df)
    solve = float(df["solve_time_s"].sum())
    return {"executor": executor, "workers": workers, "points": n, "wall_s": wall, "plan_ms": 1e3 * t_plan,
            "points_per_s": n / wall, "per_core": n / wall / workers, "solve_ms": 1e3 * solve / n,
            "overhead_ms": 1e3 * (workers * wall - solve) / n, "startup_s": startup, "df": df}


def row(r: dict) -> str:
    return (f"| {r['executor']} | {r['workers']} | {r['points']} | {r['wall_s']:.2f} | {r['points_per_s']:.2f} | "
            f"{r['per_core']:.2f} | {r['solve_ms']:.0f} | {r['overhead_ms']:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=40, help="quickstart points per executor (default 40)")
    ap.add_argument("--resnet50", action="store_true", help="also the 50-point ResNet-50 sweep, pool vs Dask")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="best of K runs per quickstart row (default 3): the "
                    "machine may be shared, and the best run is the least disturbed")
    args = ap.parse_args()
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; "
          f"load average before: {os.getloadavg()[0]:.2f}")
    params = {"topology.dims[1].bandwidth": f"log:5GB/s:200GB/s:{args.points // 2}",
              "engine.area_budget": "2mm^2,3mm^2"}
    runs = [("serial", 1), ("local", 1), ("local", 2)] + ([] if args.no_dask else [("dask", 1), ("dask", 2)])
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        measure(QUICK, params, "serial", 1, tmp)  # warm imports and HiGHS in this process
        measure(QUICK, {"engine.area_budget": "2mm^2,3mm^2"}, "local", 2, tmp)  # start the pool's fork server
        print(f"\nquickstart, {args.points} points (a grid of 2 parameters), best of {args.repeat}; wall includes "
              "planning and the pool's start, not the Dask cluster's (below)")
        print("| executor | workers | points | wall (s) | points/s | points/s/core | solve (ms/point) | "
              "overhead (ms/point) |")
        print("|---|---|---|---|---|---|---|---|")
        res = {}
        for ex, w in runs:
            r = min((measure(QUICK, params, ex, w, tmp) for _ in range(args.repeat)), key=lambda m: m["wall_s"])
            res[(ex, w)] = r
            print(row(r), flush=True)
        print(f"\nplanning (validating {args.points} points): {res[('serial', 1)]['plan_ms']:.0f} ms")
        for w in (1, 2):
            if ("dask", w) in res:
                print(f"Dask LocalCluster start-up, {w} worker(s), codesign imported: {res[('dask', w)]['startup_s']:.2f} s")
        for ex in ("local", "dask"):
            if (ex, 2) in res:
                print(f"speed-up 1 -> 2 workers, {ex}: {res[(ex, 1)]['wall_s'] / res[(ex, 2)]['wall_s']:.2f}x")
        if args.resnet50:
            rp = {"topology.dims[0].bandwidth": "log:8GiB/s:128GiB/s:5", "engine.area_budget": "0.5mm^2:5mm^2:10"}
            print("\nResNet-50 ACE (problems/resnet50_ace_torus3d.yaml), 50 points, 2 workers")
            print("| executor | workers | points | wall (s) | points/s | points/s/core | solve (ms/point) | "
                  "overhead (ms/point) |")
            print("|---|---|---|---|---|---|---|---|")
            a = measure(RESNET, rp, "local", 2, tmp)
            print(row(a), flush=True)
            b = measure(RESNET, rp, "dask", 2, tmp)
            print(row(b), flush=True)
            cols = ["key", "status", "iteration_time_s", "area_mm2", "power_w", "sram_bytes",
                    "alu_rate_bytes_per_s", "dma_bandwidth_bytes_per_s"]
            same = a["df"][cols].fillna(-1).equals(b["df"][cols].fillna(-1))
            print(f"same results on the pool and on Dask (status, iteration time, design, area, power of all "
                  f"{len(a['df'])} points): {same}; {int((a['df']['status'] == 'optimal').sum())} optimal")
            if not same:
                sys.exit(1)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
