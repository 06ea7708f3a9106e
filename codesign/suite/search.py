"""The suite's design search: best first over the shared catalog, each design's suite objective bounded from
below by every workload's proven floors there, until the best design evaluated on every workload is no worse
than the bound of every design left (docs/suites.md, "How the answer is proven").

Per workload, the master of its single solve (``milp/master.py``) lists the catalog's designs with their
floors (``Master.tabulate``, ``Master.prepare``; docs/formulation.md 3.7): at each design, a proven lower
bound on that workload's simulated period (the master's LP relaxation with the design fixed, Jackson's
bound there, and the evaluations covering it). A design's suite objective is a non-decreasing function of
its workloads' periods, so the same function of their floors bounds it from below. The search keeps, per
workload and design, the floor or the simulated period once known (a replay covers the designs on its
plateau too: ``Evaluation.plateau``), and repeats: take the design of least bound among those not yet known
on every workload; simulate it on one of its unknown workloads (the one whose floor weighs most); stop when
no such design is left that could beat, or tie with a smaller design, the best fully known one. Each
workload's own best (the normaliser of a slowdown, and what regret is against) is found first by the same
search over that workload alone, sharing the replays. The search is exact and proven: nothing heuristic
decides the answer, only which replay comes next."""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import InfeasibleError, SolverError
from ..milp.data import TIME_UNIT, check_ranges, model_data
from ..milp.master import Master, unusable
from ..pipeline.search import TIE, network_cost
from ..pipeline.solve import policy_evaluator, precheck
from ..platform.endpoint import design_area_mm2, design_power_w
from .spec import Suite


@dataclass
class _Member:
    """One workload's part of the search: its master's catalog and floors, and its replays so far."""

    master: Master
    evaluate: Callable
    floor: np.ndarray  # per design, the proven floor (s)
    exact: np.ndarray  # per design, the simulated period (s) once a replay covers it, else nan

    def low(self) -> np.ndarray:
        """Per design, the simulated period where known, else the floor: a lower bound (s)."""
        return np.where(np.isnan(self.exact), self.floor, self.exact)


@dataclass(frozen=True)
class SuiteResult:
    """How the suite's search ended. ``design``: index into ``choices``; ``periods_s[i]``: workload i's
    simulated period there; ``own_best_s[i]``, ``own_choice[i]``: its own best design's; ``objective`` and
    ``bound`` in the objective's unit (s, a ratio, mm^2 or W); ``status``: optimal | time_limit."""

    status: str
    choice: dict[str, int]
    periods_s: tuple[float, ...]
    own_best_s: tuple[float, ...]
    own_choice: tuple[dict[str, int], ...]
    own_proven: tuple[bool, ...]
    objective: float
    bound: float | None
    simulations: int
    designs_simulated: int
    catalog: int
    solve_time_s: float
    notes: tuple[str, ...] = ()

    @property
    def gap(self) -> float | None:
        if self.bound is None:
            return None
        return max(0.0, self.objective - self.bound) / max(abs(self.objective), 1e-300)


def solve_suite(suite: Suite, *, time_limit: float | None = None, started: float | None = None) -> SuiteResult:
    """The suite's best design, proven (or the best found when ``time_limit``, s, the whole command's from
    ``started``, passes first). Raises InfeasibleError when no design meets every target (proven)."""
    t0 = time.perf_counter() if started is None else started
    limit = time_limit if time_limit is not None else suite.problems[0].solver.time_limit_s
    deadline = t0 + limit
    n = len(suite.problems)
    members = []
    for i, p in enumerate(suite.problems):  # the floors take at most half the time, shared alike
        now = time.perf_counter()
        members.append(_member(p, now + 0.5 * max(0.0, deadline - now) / (n - i)))
    D = len(members[0].floor)
    first = members[0].master
    choices = [first._design_choice(d) for d in range(D)] if first.designs is not None else [_only(first)]
    key = _tie_keys(suite, first, choices)
    simulated: set[int] = set()
    count = [0]

    def simulate(w: int, d: int) -> None:
        m = members[w]
        ev, period_us, _ = m.evaluate(choices[d], record=False)
        count[0] += 1
        simulated.add(d)
        if m.master.designs is not None:
            m.master.add_evaluation(ev)
            region = m.master._region(ev.choice, ev.plateau)
            fresh = region[np.isnan(m.exact[region])]
            m.exact[fresh] = period_us * TIME_UNIT
        m.exact[d] = period_us * TIME_UNIT

    notes: list[str] = []
    own_best, own_choice, own_proven = [], [], []
    for w in range(len(members)):
        now = time.perf_counter()  # each own best a share of the time left, the suite's search the last share
        share = now + max(0.0, deadline - now) / (n - w + 1)
        st, d, value, _ = _best_first(lambda lows: lows[0], [members[w]], [1.0], key, lambda dd, i: simulate(i, dd),
                                      share, [w], ties=False)
        if d is None:
            raise SolverError(f"workload {suite.names[w]!r}: no design simulated within the time limit ({limit:g} s); "
                              "raise it (--time-limit)")
        own_best.append(value)
        own_choice.append(choices[d])
        own_proven.append(st == "optimal")
    objective = _suite_objective(suite, own_best, choices)
    st, d, value, bound = _best_first(objective, members, list(suite.weights), key, lambda dd, w: simulate(w, dd),
                                      deadline, list(range(len(members))), suite.targets_s)
    if d is None:
        if st == "optimal":
            raise InfeasibleError(_why_infeasible(suite, members))
        raise SolverError(f"no design was simulated on every workload within the time limit ({limit:g} s); raise "
                          "it (--time-limit)")
    if not all(own_proven):
        # every replay is a design the workload could run: its own best found is the least of them all
        own_best = [min(o, float(np.nanmin(m.exact))) for o, m in zip(own_best, members)]
        if suite.objective in ("geomean_slowdown", "max_slowdown"):
            lows = [np.array([m.exact[d]]) for m in members]
            value = float(_suite_objective(suite, own_best, [choices[d]])(lows)[0])
            bound = None  # (a slowdown against an own best not proven is no proven figure)
        st = "time_limit"
        notes.append("the time limit passed before every workload's own best was proven: regrets are against the "
                     "best found")
    if st == "time_limit":
        notes.append("time limit reached: the design is the best evaluated on every workload, not proven optimal")
    periods = tuple(float(m.exact[d]) for m in members)
    return SuiteResult(st, choices[d], periods, tuple(own_best), tuple(own_choice), tuple(own_proven), value,
                       bound, count[0], len(simulated), D, time.perf_counter() - t0, tuple(notes))


def _member(p, deadline: float) -> _Member:
    """Workload ``p``'s master with its catalog and floors (the checks of a single solve first)."""
    precheck(p)
    md = model_data(p)
    check_ranges(md, set(unusable(p.engine)))
    master = Master(md, objective="iteration_time")
    evaluate = policy_evaluator(md)
    if not master.sized:
        return _Member(master, evaluate, np.zeros(1), np.full(1, np.nan))
    if not master.tabulate():
        raise SolverError(f"the design space has more than {10_000:,} designs: a suite's search lists them all "
                          "(fix some resources, or narrow their options)")
    master.prepare(deadline)
    floors = np.where(master.fits, master._floors(), np.inf) * TIME_UNIT
    return _Member(master, evaluate, np.nan_to_num(floors, nan=0.0), np.full(len(floors), np.nan))


def _only(master: Master) -> dict[str, int]:
    return {r: 0 for r in master.space}


def _tie_keys(suite: Suite, master: Master, choices: list[dict[str, int]]) -> np.ndarray:
    """Per design, the single solve's tie-break among designs within TIE: least area plus network cost, then
    the smaller options (``Master.smallest_at``)."""
    p = suite.problems[0]
    ranks = {r: {o: n for n, o in enumerate(sorted(range(len(opts)), key=lambda o: opts[o].value))}
             for r, opts in master.space.items()}
    return np.array([design_area_mm2(p.engine, c) + network_cost(p, c)
                     + 1e-6 * sum(ranks[r][o] for r, o in c.items() if r in master.sized) for c in choices])


def _suite_objective(suite: Suite, own: list[float],
                     choices: list[dict[str, int]]) -> Callable[[list[np.ndarray]], np.ndarray]:
    """The suite objective as a function of the workloads' periods per design (each an array, s); non-decreasing
    in each, so at their lower bounds it is a lower bound."""
    w = np.array(suite.weights)
    total = float(w.sum())
    what = suite.objective
    p = suite.problems[0]
    if what == "weighted_time":
        return lambda lows: sum(wi * t for wi, t in zip(w, lows))
    if what == "geomean_slowdown":
        return lambda lows: np.exp(sum(wi * np.log(t / o) for wi, t, o in zip(w, lows, own)) / total)
    if what == "max_slowdown":
        return lambda lows: np.max(np.vstack([t / o for t, o in zip(lows, own)]), axis=0)
    value = design_area_mm2 if what == "area" else design_power_w
    costs = np.array([value(p.engine, c) for c in choices])
    return lambda lows: costs.copy()


def _best_first(objective, members: list[_Member], weights: list[float], key: np.ndarray, simulate,
                deadline: float, which: list[int], targets=None, ties: bool = True
                ) -> tuple[str, int | None, float, float | None]:
    """Best first over the catalog for ``objective`` of the members' periods (``_suite_objective``), with every
    member under its target (``targets``, s, or None). Returns (status, design or None, its objective, the
    bound). ``which``: the members' indices, passed to ``simulate(design, index)``. ``ties`` False: the value
    only (a workload's own best), not which of the designs tied within TIE the single solve would take."""
    targets = targets or [None] * len(members)
    while True:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ended, step = _round(objective, members, weights, targets, key, deadline, ties)
        if ended is not None:
            return ended
        simulate(step[0], which[step[1]])


def _round(objective, members: list[_Member], weights: list[float], targets: list, key: np.ndarray,
           deadline: float, ties: bool) -> tuple[tuple | None, tuple[int, int] | None]:
    """One round of ``_best_first``: (its answer, None) when the search ends, else (None, (design, member)):
    the replay to run next."""
    lows = [m.low() for m in members]
    ok = np.ones(len(lows[0]), dtype=bool)
    for low, t in zip(lows, targets):
        ok &= np.isfinite(low)
        if t is not None:
            ok &= low <= t * (1 + 1e-9)
    bound = np.where(ok, objective(lows), np.inf)
    known = np.all(np.vstack([~np.isnan(m.exact) for m in members]), axis=0)
    done = known & ok
    best = None
    if done.any():
        least = float(bound[done].min())
        tied = np.flatnonzero(done & (bound <= least * (1 + TIE)))
        best = int(tied[np.argmin(key[tied])])  # ties within TIE go to the single solve's tie-break
    open_ = ok & ~known
    if best is not None:  # what could beat the best, or tie with it and be smaller
        b = bound[best]
        open_ &= (bound < b * (1 - TIE)) | ((bound <= b * (1 + TIE)) & (key < key[best]) & ties)
    value = float(bound[best]) if best is not None else math.inf
    if not open_.any():
        return ("optimal", best, value, value if best is not None else None), None
    if time.perf_counter() >= deadline:
        return ("time_limit", best, value, min(float(bound[ok & ~known].min()), value)), None
    cand = np.flatnonzero(open_)
    d = int(cand[np.lexsort((key[cand], bound[cand]))[0]])
    unknown = [i for i, m in enumerate(members) if np.isnan(m.exact[d])]
    weigh = [members[i].floor[d] / targets[i] if targets[i] is not None else weights[i] * members[i].floor[d]
             for i in unknown]
    return None, (d, unknown[int(np.argmax(weigh))])


def _why_infeasible(suite: Suite, members: list[_Member]) -> str:
    """Which targets no design meets together, in the user's terms."""
    parts = []
    for i, (m, t) in enumerate(zip(members, suite.targets_s)):
        if t is None:
            continue
        least = float(np.nanmin(m.low()))
        if least > t * (1 + 1e-9):
            parts.append(f"{suite.names[i]}: target {t:.6g} s < its least period {least:.6g} s")
    alone = "; ".join(parts) if parts else "each target alone is met by some design, but none meets all of them"
    return f"no design meets every workload's iteration-time target ({alone})"
