"""Sweeps on warm executors, in one process: lanes against the batches planned ahead, and one worker against two,
on the local pool and on a Dask LocalCluster, the variants alternating run by run.

    python benchmarks/sweep_executors.py                      # ResNet-50 ACE's 50-point grid, 3 rounds
    python benchmarks/sweep_executors.py --quickstart --rounds 5
    python benchmarks/sweep_executors.py --bandwidths 10 --no-batches   # 100 points, lanes only

``--alone`` runs each executor with no other alive: a block of ``--rounds`` sweeps on a new pool or cluster (warmed up
first, then closed), the executors' blocks in turn, ``--blocks`` times. Otherwise the two pools and the two clusters
are all alive for the whole run, and an idle cluster's heartbeats and monitors take their share of the two cores
(about 6% of one core for the two clusters here).

``--one-core`` (with ``--alone``) confines each one-worker executor's whole tree of processes (this driver, the
pool's processes, or the cluster's scheduler, nanny and worker), every thread of each, to one core while it is
timed, so that one worker against two is also one core against two: on two cores, a one-worker sweep otherwise has
a second core for what is not its worker's point work (the driver, Dask's scheduler and event loops), and a
two-worker sweep has none.

``--oldest A,B`` compares two values of the collector's oldest threshold while a batch runs
(``pacing.OLDEST_THRESHOLD``; with 10, Python's default, the batches keep Python's thresholds), set in this process
for the serial runs and in each Dask worker through ``Client.run``: first the sweep in this process, with no cluster
alive (a cluster's scheduler and client would be in this process's heap), then on warm Dask clusters of one and two
workers; the two values alternate round by round (which goes first alternating too), and each executor's ratio is the
median over rounds.

``--bandwidths N`` sizes the grid: N bandwidths of the swept dimension (ResNet-50: 5 by default, each with ten area
budgets; the quickstart: 20, each with two), so that a sweep's fixed costs (the plan, the first chunks of one
point, a family the workers share) can be told from its per-point ones.

Every executor is started and warmed up (a two-point sweep of other families) before the first timed sweep, and
kept for the whole run, as a long-lived pool or cluster would be: what is timed is ``plan`` + ``run_plan`` of
the grid with validation on. "batches" is the same code with the executor's ``run_dynamic`` taken away, so
``run_plan`` sends the batches planned ahead (``points.batches``) as it does with one worker. The medians over
rounds are printed, each variant's master solves and replays (summed over the points), and the 1 -> 2 speed-up
as the median of each round's ratio (the two runs of a round back to back: the machine is shared and its load
moves between rounds).
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GRIDS = {
    "quickstart": (str(ROOT / "problems" / "quickstart.yaml"),
                   {"topology.dims[1].bandwidth": "log:5GB/s:200GB/s:20", "engine.area_budget": "2mm^2,3mm^2"}),
    "resnet50": (str(ROOT / "problems" / "resnet50_ace_torus3d.yaml"),
                 {"topology.dims[0].bandwidth": "log:8GiB/s:128GiB/s:5", "engine.area_budget": "0.5mm^2:5mm^2:10"}),
}


def grid(name: str, bandwidths: int | None = None) -> tuple[str, dict[str, str]]:
    """A grid of ``GRIDS`` with ``bandwidths`` values of its bandwidth axis (None: as there)."""
    problem, params = GRIDS[name]
    if bandwidths is None:
        return problem, params
    axis = next(k for k in params if k.endswith(".bandwidth"))
    return problem, {**params, axis: params[axis].rsplit(":", 1)[0] + f":{bandwidths}"}


WARM = {"schedule.chunks": "2,3"}  # two points of other families: imports, one per worker


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quickstart", action="store_true", help="the quickstart's 40 points instead of ResNet-50's 50")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bandwidths", type=int, default=None, help="bandwidths in the grid (its size; see above)")
    ap.add_argument("--no-batches", action="store_true", help="leave out the batches on two workers")
    ap.add_argument("--alone", action="store_true", help="each executor with no other alive (see above)")
    ap.add_argument("--blocks", type=int, default=2, help="blocks of rounds per executor with --alone")
    ap.add_argument("--one-core", action="store_true", help="with --alone: one worker on one core (see above)")
    ap.add_argument("--oldest", help="two values of pacing.OLDEST_THRESHOLD to compare, e.g. 10,100 (see above)")
    args = ap.parse_args()
    if args.one_core and not args.alone:
        ap.error("--one-core goes with --alone")
    if args.oldest and args.alone:
        ap.error("--oldest and --alone are two different runs")
    if args.alone:
        return alone(args)
    if args.oldest:
        return oldest(args)

    from dask.distributed import Client, LocalCluster

    from codesign.explore import executors
    from codesign.explore.sweep import VALIDATE, plan, run_plan

    problem, params = grid("quickstart" if args.quickstart else "resnet50", args.bandwidths)
    clusters = {w: Client(LocalCluster(n_workers=w, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=logging.CRITICAL), set_as_default=False) for w in (1, 2)}
    # (name, executor, workers, lanes)
    variants = [("local, 1", "local", 1, False), ("local, 2, lanes", "local", 2, True),
                ("local, 2, batches", "local", 2, False), ("dask, 1", clusters[1], 1, False),
                ("dask, 2, lanes", clusters[2], 2, True), ("dask, 2, batches", clusters[2], 2, False)]
    if args.no_batches:
        variants = [v for v in variants if "batches" not in v[0]]
    dynamic = {c: c.run_dynamic for c in (executors.PoolRunner, executors.DaskRunner)}

    def lanes(on: bool) -> None:
        for cls, fn in dynamic.items():
            if on:
                cls.run_dynamic = fn
            elif "run_dynamic" in cls.__dict__:
                del cls.run_dynamic

    walls: dict[str, list[float]] = {v[0]: [] for v in variants}
    work: dict[str, tuple[int, int]] = {}
    print(f"{Path(problem).name}, {' x '.join(f'{k} {v}' for k, v in params.items())}; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    try:
        with tempfile.TemporaryDirectory() as d:
            for name, ex, w, on in variants:  # (each its own file: a sweep resumes from one it finds)
                lanes(on)
                run_plan(plan(problem, WARM, checks=[VALIDATE]), executor=ex, workers=w,
                         out=Path(d) / f"warm-{name}.csv")
            for r in range(args.rounds):
                for name, ex, w, on in variants:
                    lanes(on)
                    t0 = time.perf_counter()
                    df = run_plan(plan(problem, params, checks=[VALIDATE]), executor=ex, workers=w,
                                  out=Path(d) / f"{r}-{name}.csv")
                    walls[name].append(time.perf_counter() - t0)
                    work[name] = (int(df["master_solves"].sum()), int(df["evaluations"].sum()))
                    if not (df["status"] == "optimal").all():
                        raise SystemExit(f"{name}: not every point optimal")
    finally:
        lanes(True)
        for c in clusters.values():
            cluster = c.cluster
            c.close()
            cluster.close()
    print(f"| executor, workers | wall (s), median of {args.rounds} | each round | master solves, replays "
          "(last round) |")
    print("|---|---|---|---|")
    for name, _, _, _ in variants:
        print(f"| {name} | {statistics.median(walls[name]):.2f} | "
              f"{', '.join(f'{x:.2f}' for x in walls[name])} | {work[name][0]}, {work[name][1]} |")
    def ratio(a: list[float], b: list[float]) -> float:
        return statistics.median(x / y for x, y in zip(a, b))
    for ex in ("local", "dask"):
        one, lane = walls[f"{ex}, 1"], walls[f"{ex}, 2, lanes"]
        each = ", ".join(f"{x / y:.2f}x" for x, y in zip(one, lane))
        if args.no_batches:
            print(f"{ex}: 1 -> 2 workers {ratio(one, lane):.2f}x with lanes ({each})")
            continue
        batch = walls[f"{ex}, 2, batches"]
        print(f"{ex}: 1 -> 2 workers {ratio(one, lane):.2f}x with lanes ({each}), {ratio(one, batch):.2f}x with the "
              f"batches; on two workers the lanes are {ratio(batch, lane):.2f}x the batches' speed")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def alone(args: argparse.Namespace) -> None:
    """``--alone``: one worker against two, each executor with no other alive, lanes on two workers."""
    from dask.distributed import Client, LocalCluster

    from codesign.explore import executors
    from codesign.explore.sweep import VALIDATE, plan, run_plan

    problem, params = grid("quickstart" if args.quickstart else "resnet50", args.bandwidths)
    every_cpu = os.sched_getaffinity(0)
    names = ["local, 1", "local, 2", "dask, 1", "dask, 2"]
    walls: dict[str, list[list[float]]] = {n: [] for n in names}  # per block, its rounds
    work: dict[str, tuple[int, int]] = {}
    print(f"{Path(problem).name}, {' x '.join(f'{k} {v}' for k, v in params.items())}; each executor alone; "
          f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as d:
        for b in range(args.blocks):
            for name in names:
                kind, w = name.split(", ")[0], int(name.split(", ")[1])
                cluster = client = None
                try:
                    if kind == "dask":
                        cluster = LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                               dashboard_address=None, silence_logs=logging.CRITICAL)
                        client = Client(cluster, set_as_default=False)
                    ex = client if client is not None else "local"
                    run_plan(plan(problem, WARM, checks=[VALIDATE]), executor=ex, workers=w,
                             out=Path(d) / f"warm-{b}-{name}.csv")
                    if args.one_core and w == 1:
                        _confine({max(every_cpu)})  # (not cpu 0, which takes more interrupts)
                    block = []
                    for r in range(args.rounds):
                        t0 = time.perf_counter()
                        df = run_plan(plan(problem, params, checks=[VALIDATE]), executor=ex, workers=w,
                                      out=Path(d) / f"{b}-{r}-{name}.csv")
                        block.append(time.perf_counter() - t0)
                        work[name] = (int(df["master_solves"].sum()), int(df["evaluations"].sum()))
                        if not (df["status"] == "optimal").all():
                            raise SystemExit(f"{name}: not every point optimal")
                    walls[name].append(block)
                finally:
                    try:
                        if client is not None:
                            client.close()
                    finally:
                        if cluster is not None:
                            cluster.close()
                        executors.shutdown_pools()
                        if args.one_core:
                            _confine(every_cpu)
    if args.one_core:
        print(f"one-worker executors confined to one core of {len(every_cpu)}")
    print(f"| executor, workers | wall (s), median of {args.blocks} x {args.rounds} | each block's rounds | "
          "master solves, replays (last round) |")
    print("|---|---|---|---|")
    for name in names:
        every = [x for block in walls[name] for x in block]
        print(f"| {name} | {statistics.median(every):.2f} | "
              f"{'; '.join(', '.join(f'{x:.2f}' for x in block) for block in walls[name])} | "
              f"{work[name][0]}, {work[name][1]} |")
    for kind in ("local", "dask"):
        each = [statistics.median(a) / statistics.median(b)
                for a, b in zip(walls[f"{kind}, 1"], walls[f"{kind}, 2"])]
        print(f"{kind}: 1 -> 2 workers {statistics.median(each):.2f}x (each block's median walls: "
              f"{', '.join(f'{x:.2f}x' for x in each)})")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _confine(cpus: set[int]) -> int:
    """Every thread of this process and of every process under it on ``cpus`` (a thread's affinity is its own:
    setting a process's sets its first thread's only; threads started later inherit their starter's). Checked
    afterwards, once more if a thread was missed; returns how many threads are on ``cpus``. A thread or process
    that ended meanwhile is skipped."""
    import psutil

    def threads() -> list[int]:
        out = []
        for proc in [psutil.Process(), *psutil.Process().children(recursive=True)]:
            try:
                out += [t.id for t in proc.threads()]
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        return out

    for _ in range(2):
        missed = 0
        for tid in threads():
            try:
                if os.sched_getaffinity(tid) != cpus:
                    os.sched_setaffinity(tid, cpus)
                    missed += os.sched_getaffinity(tid) != cpus
            except (ProcessLookupError, PermissionError):
                pass  # (ended meanwhile)
        if not missed:
            break
    else:
        raise SystemExit(f"{missed} thread(s) could not be put on cpus {sorted(cpus)}")
    return len(threads())


def _set_oldest(value: int) -> int:
    """In a worker (``Client.run``) or here: the oldest threshold a batch runs with."""
    from codesign.explore import pacing
    pacing.OLDEST_THRESHOLD = value
    return value


def oldest(args: argparse.Namespace) -> None:
    """``--oldest A,B``: the sweep with each of two oldest thresholds, in this process and on Dask."""
    from dask.distributed import Client, LocalCluster

    from codesign.explore import pacing
    from codesign.explore.sweep import VALIDATE, plan, run_plan

    values = [int(v) for v in args.oldest.split(",")]
    if len(values) != 2:
        raise SystemExit("--oldest takes two values, e.g. 10,100")
    problem, params = grid("quickstart" if args.quickstart else "resnet50", args.bandwidths)
    print(f"{Path(problem).name}, {' x '.join(f'{k} {v}' for k, v in params.items())}; oldest threshold "
          f"{values[0]} against {values[1]}; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    names = ["serial", "dask, 1", "dask, 2"]
    walls: dict[tuple[str, int], list[float]] = {(n, v): [] for n in names for v in values}
    kept = pacing.OLDEST_THRESHOLD

    def rounds(executors: list[tuple[str, Any, int]], d: str) -> None:
        for name, ex, w in executors:
            run_plan(plan(problem, WARM, checks=[VALIDATE]), executor=ex, workers=w, out=Path(d) / f"warm-{name}.csv")
        for r in range(args.rounds):
            for name, ex, w in executors:
                for v in (values if r % 2 == 0 else values[::-1]):
                    if ex == "serial":
                        _set_oldest(v)
                    else:
                        ex.run(_set_oldest, v)
                    t0 = time.perf_counter()
                    df = run_plan(plan(problem, params, checks=[VALIDATE]), executor=ex, workers=w,
                                  out=Path(d) / f"{r}-{name}-{v}.csv")
                    walls[name, v].append(time.perf_counter() - t0)
                    if not (df["status"] == "optimal").all():
                        raise SystemExit(f"{name}: not every point optimal")

    try:
        with tempfile.TemporaryDirectory() as d:
            rounds([("serial", "serial", 1)], d)  # first, with no cluster alive: its objects would be in this heap
            with contextlib.ExitStack() as stack:
                clients = {}
                for w in (1, 2):
                    cluster = stack.enter_context(LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                                               dashboard_address=None, silence_logs=logging.CRITICAL))
                    clients[w] = stack.enter_context(Client(cluster, set_as_default=False))
                rounds([("dask, 1", clients[1], 1), ("dask, 2", clients[2], 2)], d)
    finally:
        pacing.OLDEST_THRESHOLD = kept
    print(f"| executor, workers | wall (s) at {values[0]}, median of {args.rounds} | at {values[1]} | "
          f"{values[0]} / {values[1]} (median of the rounds' ratios) |")
    print("|---|---|---|---|")
    for name in names:
        a, b = walls[name, values[0]], walls[name, values[1]]
        print(f"| {name} | {statistics.median(a):.3f} | {statistics.median(b):.3f} | "
              f"{statistics.median(x / y for x, y in zip(a, b)):.3f} |")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
