"""``order: optimize`` after the design search, where its gap is open: a tighter proof and a better order.

The search (``search.Search._run_bounded``) bounds the designs it did not evaluate by the master's
relaxation, which knows nothing of the order. When the catalog is small enough to bound every design
(``MAX_DESIGNS``), the least any-order bound (``solve.any_order_bound_s``) over the designs within the
budgets is a lower bound on every answer: each design's best order replays no faster than its own
bound. The proven bound is the larger of that and the search's.

Then the answer's order is improved in the simulator itself: a local search over fixed dispatch
priorities (insertion and swap moves of one collective, first improvement, in a seeded random order),
started from the best of LIFO, FIFO and the flow-shop-refined priorities, each candidate replayed by
``sim/replay.py``. The answer is that replay; "optimal" only where the gap closes within ``TIE``.
"""
from __future__ import annotations

import dataclasses
import itertools
import random
import time

from ..milp.data import TIME_UNIT
from ..milp.designs import fits_budgets
from ..platform.endpoint import Design, design_of
from ..problem.model import Problem, at_design
from ..sim.replay import SimResult, simulate
from .search import TIE, SearchResult

MAX_DESIGNS = 512   # bounding each costs ~5 ms: more is the master's job
SEARCH_CAP_S = 4.0  # seconds of simulator local search at most (the whole command's limit rules)
#: replays of the local search at most: the same answer on every run where this, not the clock, stops it
SEARCH_REPLAYS = 600

Priority = tuple[tuple[int, int], ...]


def least_bound_us(problem: Problem, deadline: float) -> float | None:
    """The least any-order bound (us) over the designs within the budgets, or None when the catalog is
    larger than ``MAX_DESIGNS``, a network is designed too, or the deadline passes first."""
    from .solve import any_order_bound_s
    e = problem.engine
    if problem.network is not None:
        return None
    sized = list(e.resources)  # every resource, one option or more: design_of takes each
    sizes = [len(e.resources[r]) for r in sized]
    n = 1
    for s in sizes:
        n *= s
    if n > MAX_DESIGNS:
        return None
    least = float("inf")
    for idx in itertools.product(*(range(s) for s in sizes)):
        if time.perf_counter() > deadline:
            return None
        choice = dict(zip(sized, idx))
        if fits_budgets(problem, choice):
            least = min(least, any_order_bound_s(at_design(problem, choice), design_of(e, choice))[0])
    return least / TIME_UNIT if least < float("inf") else None


def local_search(problem: Problem, design: Design, starts: list[Priority], budget_s: float,
                 seed: int = 0, floor_s: float = 0.0, replays: int = SEARCH_REPLAYS) -> tuple[Priority, float]:
    """The best of ``starts`` (fixed priorities, highest first) improved by insertion and swap moves,
    each replayed by the simulator, until no move helps, ``replays`` replays are spent, ``budget_s`` passes
    or the period meets ``floor_s`` (a proven bound, within ``TIE``): (priority, period s)."""
    spent = [0]

    def period(prio: Priority) -> float:
        spent[0] += 1
        return simulate(problem, design, order=prio).period_s

    def out_of_budget() -> bool:
        return spent[0] >= replays or time.perf_counter() > t_end

    scored = [(period(s), s) for s in starts]
    val, best = min(scored, key=lambda x: x[0])
    K = len(best)
    rnd = random.Random(seed)
    t_end = time.perf_counter() + budget_s
    moves = [(kind, i, j) for kind in (0, 1) for i in range(K) for j in range(K) if i != j and (kind == 0 or i < j)]
    improved = val > floor_s * (1 + TIE)
    while improved and not out_of_budget():
        improved = False
        rnd.shuffle(moves)
        for kind, i, j in moves:
            cand = list(best)
            if kind == 0:
                cand.insert(j, cand.pop(i))
            else:
                cand[i], cand[j] = cand[j], cand[i]
            v = period(tuple(cand))
            if v < val * (1 - 1e-9):
                best, val, improved = tuple(cand), v, v > floor_s * (1 + TIE)
                break
            if out_of_budget():
                break
    return best, val


def _starts(problem: Problem, payload) -> list[Priority]:
    """LIFO and FIFO as fixed priorities, and the answer's own priorities if it has them."""
    from ..schedule.iteration import build_iteration
    it = build_iteration(problem.workload, problem.schedule.overlap)
    comms = it.comms
    lifo = sorted(range(len(comms)), key=lambda k: (not comms[k].urgent, -comms[k].issue_after))
    fifo = sorted(range(len(comms)), key=lambda k: (not comms[k].urgent, comms[k].issue_after))
    out = [tuple((k, 0) for k in lifo), tuple((k, 0) for k in fifo)]
    if payload.priority is not None:
        out.append(tuple(payload.priority))
    return out


def prove(problem: Problem, res: SearchResult, deadline: float) -> SearchResult:
    """``res`` (an ``order: optimize`` search minimizing time, gap open) with the least-bound proof and
    the answer's order improved by the local search; unchanged otherwise."""
    if res.status != "feasible" or res.visit is None or res.bound is None or res.objective is None:
        return res
    if problem.objective.iteration_time_target_s is not None or problem.objective.minimize != "iteration_time":
        return res
    least = least_bound_us(problem, deadline)
    bound = max(res.bound, least) if least is not None else res.bound
    visit, value = res.visit, res.objective
    left = deadline - time.perf_counter()
    if value > bound * (1 + TIE) and left > 0.2:
        q = at_design(problem, visit.choice)
        design = design_of(problem.engine, visit.choice)
        prio, period_s = local_search(q, design, _starts(problem, visit.payload),
                                      min(SEARCH_CAP_S, 0.5 * left), floor_s=bound * TIME_UNIT)
        if period_s / TIME_UNIT < value * (1 - 1e-9):
            sim: SimResult = simulate(q, design, order=prio, record=True)
            tried = dict(visit.payload.tried or {})
            tried["searched_s"] = sim.period_s
            payload = dataclasses.replace(visit.payload, sim=sim, policy=None, priority=prio, tried=tried, own=True)
            value = sim.period_s / TIME_UNIT
            visit = dataclasses.replace(visit, simulated_us=value, payload=payload)
    status = "optimal" if value <= bound * (1 + TIE) + 1e-12 else "feasible"
    return dataclasses.replace(res, status=status, visit=visit, objective=value, bound=bound)
