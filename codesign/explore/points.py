"""A sweep point as a worker sees it: the task it receives, the solve and checks it runs, the row it
returns. The planner (``sweep``) and the executors (``executors``) both import this module, and neither
imports the other at module level.
"""
from __future__ import annotations

import heapq
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InfeasibleError
from ..pipeline.solution import Solution, design_keys
from ..pipeline.solve import Extra, Family, solve
from ..problem.model import Problem
from .pacing import paced_collections

#: Per-point result columns, in SI units (area mm^2), as ``solution_row`` fills them.
RESULT_COLUMNS = ("status", "error", "iteration_time_s", "bound_s", "gap", "objective", "area_mm2", "power_w",
                  "compute_time_s", "exposed_comm_s", "comm_time_s", "solve_time_s")


@dataclass(frozen=True)
class Check:
    """A step run after a point's solve, in the worker: ``fn(problem, solution) -> {column: value}`` filling
    ``columns`` (the simulator's validation of a solution will be one). A check that raises leaves the solve's
    status and puts its message in ``error``."""

    name: str
    columns: tuple[str, ...]
    fn: Callable[[Problem, Solution], Mapping[str, Any]]


@dataclass(frozen=True)
class PointTask:
    """What a worker receives: the point's validated problem and the solve options (all picklable)."""

    key: str
    problem: Problem
    time_limit: float | None = None
    extra: Extra | None = None
    checks: tuple[Check, ...] = ()


@dataclass(frozen=True)
class BatchTask:
    """Several points for one worker, run one after another: a family's points (``pipeline.solve.Family``, the
    same problem but for its budgets), or a part of them, or a run of whole families (``batches``). A family's
    points share the master and the replays there, and a batch pays the round trip to the worker once.
    ``key`` is the first point's (the runners name a task by it)."""

    key: str
    tasks: tuple[PointTask, ...]
    #: the sweep the batch belongs to (``run_plan`` names each run): a worker's families and hints serve one
    #: sweep only, so that a point's answer depends on its own sweep alone, whatever ran in the worker before
    sweep: str = ""


_SOLVE_LOCK = threading.Lock()  # one HiGHS solve per process at a time, whatever the worker's thread count
#: How many families a worker process keeps (the most recently used): a worker keeps its families between
#: batches, so a family whose points came in several batches is built once per worker.
FAMILIES_KEPT = 2
_families: list[Family] = []  # most recently used last; guarded by _SOLVE_LOCK
#: How many of this process's latest answers a new family is given to evaluate first (``Family.hint``): a
#: family of the next bandwidth often has the same answers at the same budgets.
HINTS_KEPT = 10
#: How many of the designs that the process's last family proposed (``Family.proposed``) a new family is given
#: to evaluate first, after the answers: its searches propose much the same ones, and a replay costs less than
#: the master solve that would propose it (ResNet-50's ACE grid: a replay about 17 ms, a master solve and its
#: tie-break about 80 ms; 139 master solves for 50 points before, 103 after, BENCHMARKS.md). The bound is what
#: hints may cost a family in replays where they turn out useless (our calibration; the families of ResNet-50's
#: grid propose 1-29).
PROPOSALS_KEPT = 64
_answers: list[dict[str, int]] = []  # the latest answers' designs, most recent last; guarded by _SOLVE_LOCK
_sweep: str | None = None  # the sweep whose families and answers those are; guarded by _SOLVE_LOCK


def _family(task: PointTask) -> Family | None:
    """This process's family of the task's problem (made on first use), or None if it cannot have one."""
    if not Family.eligible(task.problem, task.extra):
        return None
    for f in _families:
        if f.admits(task.problem):
            _families.remove(f)
            _families.append(f)
            return f
    f = Family(task.problem)
    f.hint(_answers)
    if _families:
        f.hint(_families[-1].proposed()[-PROPOSALS_KEPT:])
        f.adopt(_families[-1])
    _families.append(f)
    del _families[:-FAMILIES_KEPT]
    return f


def solution_row(s: Solution) -> dict[str, Any]:
    """A Solution as one results row (SI units, area in mm^2)."""
    row = {c: getattr(s, c) for c in RESULT_COLUMNS if c not in ("error",)}
    row["error"] = "; ".join(s.notes)
    keys = design_keys()
    row.update({keys[r]: v for r, v in s.design.items()})
    row.update(evaluations=s.evaluations, master_solves=s.master_solves)
    net = s.network
    if net is not None:  # which network won: each open dimension's link bandwidth, and the network's cost
        row.update({f"{n}_link_bandwidth_bytes_per_s": b for n, b, k in zip(net.names, net.link_bandwidth, net.options)
                    if k > 1})
        row["network_cost"] = net.total
    return row


def run_point(task: PointTask) -> dict[str, Any]:
    """Solve one point and run its checks; never raises: a failure is a row with status ``error``."""
    t0 = time.perf_counter()
    row: dict[str, Any] = {"status": "error", "error": ""}
    try:
        with _SOLVE_LOCK:
            sol = solve(task.problem, time_limit=task.time_limit, extra=task.extra, family=_family(task),
                        order_bound=False)  # the row does not carry it
            if sol.choice not in _answers:
                _answers.append(dict(sol.choice))
                del _answers[:-HINTS_KEPT]
        row.update(solution_row(sol))
        for check in task.checks:
            try:
                row.update(check.fn(task.problem, sol))
            except Exception as e:
                row["error"] = f"check {check.name}: {type(e).__name__}: {e}"
    except InfeasibleError as e:
        row.update(status="infeasible", error=str(e))
    except Exception as e:
        row["error"] = f"{type(e).__name__}: {e}"
    row["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    row["wall_s"] = time.perf_counter() - t0
    return row


def run_batch(batch: BatchTask) -> dict[str, Any]:
    """Run a batch's points in order; ``{"rows": [each point's row]}``. Never raises. The first batch of a
    sweep in this process drops the families and answers of the sweep before (a pool's workers outlive a
    sweep: ``executors.PoolRunner``). The collector's full collections run less often meanwhile
    (``paced_collections``)."""
    global _sweep
    with _SOLVE_LOCK:
        if batch.sweep != _sweep:
            _families.clear()
            _answers.clear()
            _sweep = batch.sweep
    with paced_collections():
        return {"rows": [run_point(t) for t in batch.tasks]}


def larger_budgets_first(task: PointTask) -> tuple[float, float]:
    """A sort key for a family's points: the larger budgets (area, then power) first, so that a member's
    answer can settle the smaller budgets' (``Family.proven``)."""
    area, power = Family.budgets(task.problem)
    return (-area, -power)


#: What starting a family's batch in a worker costs, in points' time (our calibration): its first point is
#: searched without the cuts and answers of the family's others (ResNet-50's ACE sweep: about ten points'
#: time; the quickstart's: about one).
SETUP = 4.0


def family_groups(tasks: Sequence[PointTask], family_of: Callable[[PointTask], Any],
                  order: Callable[[PointTask], Any] | None = None) -> dict[Any, list[PointTask]]:
    """The tasks by family (``family_of``), families in the order they first appear, each family's tasks in
    their order in ``tasks`` or sorted by ``order`` (a key)."""
    groups: dict[Any, list[PointTask]] = {}
    for t in tasks:
        groups.setdefault(family_of(t), []).append(t)
    if order is not None:
        for group in groups.values():
            group.sort(key=order)
    return groups


def batches(tasks: list[PointTask], family_of: Callable[[PointTask], Any], workers: int, setup: float = SETUP,
            order: Callable[[PointTask], Any] | None = None, sweep: str = "") -> list[BatchTask]:
    """The tasks in batches (``family_of(task)``: a hashable guess at a task's family, checked by the
    worker), largest first: a family each, or a family's part, or where there are many whole families a run
    of them (``_joined``). A family's points share their replays, cuts and answers in one worker (``Family``), so
    a family cut between workers pays for its start in each: families stay whole unless cutting more of
    them shortens the sweep. The sweep's length is estimated as the busiest worker's load when the batches
    go out largest first, each to the least loaded worker, a batch costing its points plus ``setup``. The
    family with the largest parts is cut into one more near-equal part, again and again, and the cutting
    that gave the shortest sweep is kept (the search goes on past a step that does not shorten it, for as
    many steps as there are workers: two families on four workers shorten only once both are cut), and so is
    every family cut into the same number of parts, 2, 3, ..., while that shortens it (a hundred families of
    a hundred on 64 workers: in three). Five families of ten on two workers: one is cut in halves (25 + 3
    setups each), not all five (25 + 5).
    A family's points keep their order in ``tasks``, or are sorted by ``order`` (a key; the sweep's is
    ``larger_budgets_first``); its parts are runs of that order. ``sweep``: the sweep's name (``BatchTask``)."""
    groups = family_groups(tasks, family_of, order)
    w = max(1, workers)

    def cut(parts: dict[Any, int]) -> list[BatchTask]:
        out = []
        for f, group in groups.items():
            k, at = parts[f], 0
            for i in range(k):  # k parts in that order, their sizes within one point of each other
                chunk = tuple(group[at:at + len(group) // k + (i < len(group) % k)])
                at += len(chunk)
                out.append(BatchTask(chunk[0].key, chunk, sweep))
        return sorted(out, key=lambda b: -len(b.tasks))  # stable: family order among equals

    parts = {f: 1 for f in groups}
    best = cut(parts)
    shortest = busiest(best, w, setup)

    def shorter(parts: dict[Any, int]) -> bool:
        """Whether cutting by ``parts`` shortens the sweep (it is then the best)."""
        nonlocal best, shortest
        out = cut(parts)
        span = busiest(out, w, setup)
        if span < shortest - 1e-9:
            best, shortest = out, span
            return True
        return False

    since = 0
    while since < w:
        open_ = [f for f in groups if parts[f] < len(groups[f])]
        if not open_:
            break
        f = max(open_, key=lambda f: -(-len(groups[f]) // parts[f]))  # the largest parts; the first among equals
        parts[f] += 1
        since = 0 if shorter(parts) else since + 1
    # many equal families on fewer workers shorten only once every one is cut, more steps than the search
    # above waits for: also every family cut into the same k parts, while that keeps shortening
    k, since = 2, 0
    while since < 2 and k <= max((len(g) for g in groups.values()), default=1):
        since = 0 if shorter({f: min(k, len(g)) for f, g in groups.items()}) else since + 1
        k += 1
    if len(best) == len(groups):  # every family whole
        rank = {f: n for n, f in enumerate(groups)}
        best = _joined(sorted(best, key=lambda b: rank[family_of(b.tasks[0])]), w, setup, sweep)
    return best


#: Batches per worker beyond which whole families are joined into fewer batches (``batches``; our calibration).
BATCHES_PER_WORKER = 4


def _joined(work: list[BatchTask], workers: int, setup: float, sweep: str) -> list[BatchTask]:
    """Many whole families (more than ``BATCHES_PER_WORKER`` a worker) joined into that many batches, each
    a run of consecutive families in the plan's order: a batch costs a round trip to its worker (about 1 ms on
    the local pool, 4 ms on Dask, with the driver's share of two cores), and a worker given neighbours (the
    next bandwidths) has hints that fit (``Family.hint``). Runs end where their cost (points, and ``setup`` a
    family) reaches an equal share; the joined batches are kept only where the busiest worker's estimated load
    does not rise (uneven families may not share out as well in fewer batches). ``work``: one batch per
    family, in the plan's order, largest first on return."""
    target = BATCHES_PER_WORKER * max(1, workers)
    whole = sorted(work, key=lambda b: -len(b.tasks))
    if len(work) <= target:
        return whole
    total = sum(len(b.tasks) + setup for b in work)
    out: list[tuple[BatchTask, int]] = []  # each batch, and how many families it joins
    run: list[BatchTask] = []
    done = 0.0  # the cost of the runs so far: a run ends where it reaches its share of the whole
    for b in work:
        run.append(b)
        done += len(b.tasks) + setup
        if done * target >= total * (len(out) + 1) or b is work[-1]:
            tasks = tuple(t for r in run for t in r.tasks)
            out.append((BatchTask(tasks[0].key, tasks, sweep), len(run)))
            run = []
    out.sort(key=lambda bn: -len(bn[0].tasks))
    joined = _span([len(b.tasks) + setup * n for b, n in out], workers)
    return [b for b, _ in out] if joined <= busiest(whole, workers, setup) + 1e-9 else whole


def busiest(work: list[BatchTask], workers: int, setup: float = 0.0) -> float:
    """The busiest worker's load when ``work`` goes out in order, each batch to the least loaded worker, a
    batch costing its points plus ``setup``."""
    return _span([len(b.tasks) + setup for b in work], workers)


def _span(costs: list[float], workers: int) -> float:
    """The busiest worker's load when jobs of ``costs`` go out in order, each to the least loaded worker."""
    loads = [0.0] * max(1, workers)
    for c in costs:
        heapq.heapreplace(loads, loads[0] + c)
    return max(loads)


def error_row(message: str) -> dict[str, Any]:
    """The row of a point that failed outside ``run_point`` (its worker died, or its future raised)."""
    return {"status": "error", "error": message}
