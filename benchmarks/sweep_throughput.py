"""Sweep throughput, before and after, in one run: points per second per core of this tree's code against a
baseline checkout (today's main), measured in alternating pairs, and whether both give the same answers.

    git worktree add --detach /tmp/codesign-main main          # once: the baseline to compare against
    python benchmarks/sweep_throughput.py --baseline /tmp/codesign-main            # quickstart, 40 points
    python benchmarks/sweep_throughput.py --baseline /tmp/codesign-main --resnet50 # + ResNet-50 ACE, 50 points
    ... --resnet50-dask   # + ResNet-50 on Dask, 1 and 2 workers alternating, this tree only (the 1 -> 2 speed-up)

Every measurement runs in a fresh Python process whose ``PYTHONPATH`` is the tree measured (so its pool
workers and Dask workers import that tree too; the run stops if the process or its Dask workers loaded
codesign from anywhere else). It first sweeps two warm-up points of other families (imports, the pool's fork
server and, where the tree keeps its pool between sweeps, the pool's workers; a Dask cluster's workers), then
times ``plan`` + ``run_plan`` of the sweep with validation on (``VALIDATE``, the simulator's check of each
point), writing the results CSV as ``codesign sweep`` does. points/s/core = points /
wall / workers. A Dask LocalCluster's start is not in the wall (a long-lived cluster would not pay it per
sweep), nor, where the tree keeps its pool between sweeps, the pool's start; the row "local, 2, new pool"
ends the kept pool after the warm-up, so its sweep starts one, as a one-shot ``codesign sweep`` does. The
before/after ratio is the median over pairs of (after rate / before rate), each pair measured
back to back, so a change in the machine's load between pairs cancels out; the machine's load average is
printed before and after. "same answers" compares, point by point (by key), the answers of the two trees
within the MIP gap (``same_answers``: a family's points share cuts and answers, so a point's path to its
proof, and HiGHS's dual bound with it, depends on the points solved before it in its worker; where two
designs' periods lie within the gap of each other, either may be the proven answer). "busiest worker /
even share" sums each worker's point times (the results' ``worker`` and ``wall_s``) and divides the largest
sum by the even share (all of them over the workers): 1.00 is a perfect share-out. It moves much less with
the machine's load than the wall-clock speed-up does.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUICK = str(ROOT / "problems" / "quickstart.yaml")
RESNET = str(ROOT / "problems" / "resnet50_ace_torus3d.yaml")
QUICK_PARAMS = {"topology.dims[1].bandwidth": "log:5GB/s:200GB/s:20", "engine.area_budget": "2mm^2,3mm^2"}
RESNET_PARAMS = {"topology.dims[0].bandwidth": "log:8GiB/s:128GiB/s:5", "engine.area_budget": "0.5mm^2:5mm^2:10"}
#: two points of other families than any measured (no answer is reused from them), one for each of two
#: workers: a kept pool (``executors.PoolRunner``) then has both its workers started
WARM = {"schedule.chunks": "2,3"}
#: The columns that must be the same, point by point, before and after.
ANSWER = ["status", "iteration_time_s", "bound_s", "gap", "objective", "area_mm2", "power_w", "sram_bytes",
          "alu_rate_bytes_per_s", "dma_bandwidth_bytes_per_s", "simulated_s", "sim_flagged"]


def measure(spec: dict) -> dict:
    """In this process (whose codesign is the tree measured): warm up, then time one sweep of ``spec``."""
    import logging

    from codesign.explore.sweep import VALIDATE, plan, run_plan

    workers, executor = spec["workers"], spec["executor"]
    client, where = None, None
    if executor == "dask":
        from dask.distributed import Client, LocalCluster
        client = Client(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                     dashboard_address=None, silence_logs=logging.CRITICAL))
        where = sorted(set(client.run(lambda: __import__("codesign").__file__).values()))
    ex = client or executor
    with tempfile.TemporaryDirectory() as d:
        run_plan(plan(spec["problem"], WARM, checks=[VALIDATE]), executor=ex, workers=workers,
                 out=Path(d) / "warm.csv")
        if spec.get("cold"):  # a one-shot sweep's pool: started in the timed sweep (trees that keep one)
            try:
                from codesign.explore.executors import shutdown_pools
                shutdown_pools()
            except ImportError:
                pass
        t0 = time.perf_counter()
        df = run_plan(plan(spec["problem"], spec["params"], checks=[VALIDATE]), executor=ex, workers=workers,
                      out=Path(d) / "sweep.csv")
        wall = time.perf_counter() - t0
    if client is not None:
        cluster = client.cluster
        client.close()
        cluster.close()
    n = len(df)
    rows = {r["key"]: [None if v != v else v for v in (r.get(c) for c in ANSWER)] for r in df.to_dict("records")}
    # how evenly the points' work was shared: the busiest worker's summed point times against an even share
    # (steadier than the wall-clock speed-up, which the shared machine's load moves from run to run)
    busy = df.groupby("worker")["wall_s"].sum()
    return {"points": n, "wall_s": wall, "per_core": n / wall / workers, "solve_ms": 1e3 * df["solve_time_s"].mean(),
            "busiest": float(busy.max() / (busy.sum() / workers)) if len(busy) else float("nan"),
            "optimal": int((df["status"] == "optimal").sum()), "codesign": __import__("codesign").__file__,
            "dask_workers_codesign": where, "rows": rows}


def run(tree: Path, spec: dict) -> dict:
    """``measure(spec)`` in a fresh process whose codesign (and its workers') is ``tree``'s."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, __file__, "--measure", json.dumps(spec)], env=env, capture_output=True,
                       text=True, cwd=tree)
    if r.returncode != 0:
        raise SystemExit(f"measurement in {tree} failed:\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    workers = out["dask_workers_codesign"] or []
    if not out["codesign"].startswith(str(tree)) or any(not w.startswith(str(tree)) for w in workers):
        raise SystemExit(f"the measurement of {tree} loaded codesign from {out['codesign']} "
                         f"(Dask workers: {out['dask_workers_codesign']})")
    return out


#: The MIP gap of the problems measured (their solver profile's): two proofs of one point may settle on
#: answers this far apart, relative, and both be optimal.
GAP = 1e-4
#: Columns that say which design answered: the same wherever the two periods are the same.
DESIGN = {"area_mm2", "power_w", "sram_bytes", "alu_rate_bytes_per_s", "dma_bandwidth_bytes_per_s"}


def same_answers(after: dict, before: dict) -> tuple[bool, int]:
    """Whether every point has the same answer, within the MIP gap, and at how many points the two runs
    settled on different designs of periods within it. The same status and validation flag; the iteration
    time, objective and validated period within the gap (relative); each run's bound at most the other's
    period (both bound the same problem) and within the gap of it; the gap within the gap; where the periods
    are equal, the same design bit for bit. A family's points share cuts and answers (docs/sweeps.md), so
    a point's path to its proof, and with it HiGHS's dual bound, depends on the points solved before it."""
    if after.keys() != before.keys():
        return False, 0
    moved = 0
    for key, row in after.items():
        a, b = dict(zip(ANSWER, row)), dict(zip(ANSWER, before[key]))
        if a["status"] != b["status"] or a["sim_flagged"] != b["sim_flagged"]:
            return False, moved
        if a["iteration_time_s"] is None or b["iteration_time_s"] is None:
            if a != b:
                return False, moved
            continue
        for col in ("iteration_time_s", "objective", "simulated_s"):
            x, y = a[col], b[col]
            if (x is None) != (y is None) or (x is not None and abs(x - y) > GAP * max(abs(x), abs(y))):
                return False, moved
        for x, y in ((a, b), (b, a)):
            if x["bound_s"] is not None and x["bound_s"] > y["iteration_time_s"] * (1 + 1e-9):
                return False, moved
        if (a["gap"] is None) != (b["gap"] is None) or (a["gap"] is not None and abs(a["gap"] - b["gap"]) > GAP):
            return False, moved
        if any(a[c] != b[c] for c in DESIGN):
            if a["iteration_time_s"] == b["iteration_time_s"]:
                return False, moved
            moved += 1
    return True, moved


def compare(name: str, spec: dict, baseline: Path | None, pairs: int) -> dict:
    """Alternate before/after ``pairs`` times; print one table row; return the medians and the ratio."""
    befores, afters, ratios = [], [], []
    same, moved = True, 0
    for _ in range(pairs):
        b = run(baseline, spec) if baseline else None
        a = run(ROOT, spec)
        afters.append(a)
        if b is not None:
            befores.append(b)
            ratios.append(a["per_core"] / b["per_core"])
            ok, k = same_answers(a["rows"], b["rows"])
            same, moved = same and ok, max(moved, k)
    med = lambda xs, k: statistics.median(x[k] for x in xs) if xs else float("nan")  # noqa: E731
    res = {"name": name, "before": med(befores, "per_core"), "after": med(afters, "per_core"),
           "ratio": statistics.median(ratios) if ratios else float("nan"), "same": same if befores else None,
           "points": afters[0]["points"], "optimal": afters[0]["optimal"], "wall_after": med(afters, "wall_s"),
           "wall_before": med(befores, "wall_s"), "solve_ms_after": med(afters, "solve_ms"),
           "solve_ms_before": med(befores, "solve_ms"), "busiest_before": med(befores, "busiest"),
           "busiest_after": med(afters, "busiest"), "moved": moved}
    print(f"| {name} | {res['points']} | {res['wall_before']:.2f} | {res['before']:.2f} | {res['wall_after']:.2f} | "
          f"{res['after']:.2f} | {res['ratio']:.2f}x | {_same(res)} | {res['busiest_before']:.2f} / "
          f"{res['busiest_after']:.2f} |", flush=True)
    return res


def _same(res: dict) -> str:
    """The "same answers" cell: yes, no, or yes with the points that settled on another design within the gap."""
    if res["same"] is None:
        return "-"
    if not res["same"]:
        return "NO"
    return "yes" + (f" ({res['moved']} on another design within the gap)" if res["moved"] else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, help="a checkout of the code to compare against (today's main)")
    ap.add_argument("--resnet50", action="store_true", help="also the 50-point ResNet-50 ACE sweep on 2 workers")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--resnet50-dask", action="store_true",
                    help="also ResNet-50 on Dask with 1 and 2 workers, this tree only (the 1 -> 2 speed-up)")
    ap.add_argument("--pairs", type=int, default=3, help="before/after pairs per quickstart row (default 3)")
    ap.add_argument("--resnet50-pairs", type=int, default=1, help="before/after pairs of --resnet50 (default 1)")
    ap.add_argument("--dask-pairs", type=int, default=3,
                    help="one-worker/two-worker pairs of --resnet50-dask (default 3)")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(json.loads(args.measure))))
        return
    base = args.baseline.resolve() if args.baseline else None
    rev = lambda t: subprocess.run(["git", "-C", str(t), "rev-parse", "--short", "HEAD"], capture_output=True,  # noqa: E731
                                   text=True).stdout.strip()
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; load average "
          f"before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"after: {ROOT} ({rev(ROOT)}); before: {base} ({rev(base) if base else '-'})")
    print(f"\nquickstart, {len(QUICK_PARAMS)}-parameter grid of 40 points, validation on; median of {args.pairs} pairs")
    print("| executor, workers | points | before wall (s) | before points/s/core | after wall (s) | "
          "after points/s/core | after/before | same answers | busiest worker / even share, before / after |")
    print("|---|---|---|---|---|---|---|---|---|")
    runs = [("serial", 1, False), ("local", 1, False), ("local", 2, False), ("local", 2, True)] + (
        [] if args.no_dask else [("dask", 1, False), ("dask", 2, False)])
    res = {}
    for ex, w, cold in runs:
        spec = {"problem": QUICK, "params": QUICK_PARAMS, "executor": ex, "workers": w, "cold": cold}
        r = compare(f"{ex}, {w}" + (", new pool" if cold else ""), spec, base, args.pairs)
        if not cold:
            res[ex, w] = r
    for ex in ("local", "dask"):
        if (ex, 2) in res:
            r1, r2 = res[ex, 1], res[ex, 2]
            print(f"speed-up 1 -> 2 workers, {ex}: before {r1['wall_before'] / r2['wall_before']:.2f}x, "
                  f"after {r1['wall_after'] / r2['wall_after']:.2f}x (wall of 1 worker / wall of 2)")
    if args.resnet50:
        print(f"\nResNet-50 ACE (problems/resnet50_ace_torus3d.yaml), 50 points, validation on, median of "
              f"{args.resnet50_pairs} pair(s)")
        print("| executor, workers | points | before wall (s) | before points/s/core | after wall (s) | "
              "after points/s/core | after/before | same answers | busiest worker / even share, before / after |")
        print("|---|---|---|---|---|---|---|---|---|")
        spec = {"problem": RESNET, "params": RESNET_PARAMS, "executor": "local", "workers": 2}
        r = res["resnet50", 2] = compare("local, 2", spec, base, args.resnet50_pairs)
        print(f"{r['optimal']} of {r['points']} optimal")
    if args.resnet50_dask:
        print(f"\nResNet-50 ACE, 50 points, validation on, Dask LocalCluster, this tree only; one and two workers "
              f"alternating, {args.dask_pairs} pairs")
        print("| pair | 1 worker: wall (s) | points/s/core | 2 workers: wall (s) | points/s/core | "
              "busiest worker / even share | speed-up 1 -> 2 |")
        print("|---|---|---|---|---|---|---|")
        ratios = []
        for i in range(args.dask_pairs):
            one, two = (run(ROOT, {"problem": RESNET, "params": RESNET_PARAMS, "executor": "dask", "workers": w})
                        for w in (1, 2))
            ratios.append(one["wall_s"] / two["wall_s"])
            print(f"| {i + 1} | {one['wall_s']:.2f} | {one['per_core']:.2f} | {two['wall_s']:.2f} | "
                  f"{two['per_core']:.2f} | {two['busiest']:.2f} | {ratios[-1]:.2f}x |", flush=True)
        print(f"speed-up 1 -> 2 workers, dask: median {statistics.median(ratios):.2f}x "
              f"({', '.join(f'{r:.2f}x' for r in ratios)}; wall of 1 worker / wall of 2, each pair back to back)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if any(r.get("same") is False for r in res.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
