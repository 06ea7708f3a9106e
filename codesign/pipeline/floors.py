"""The search by floors: where master solves cost more than what they save, the master's per-design floors
take its place (docs/formulation.md, 3.8).

A plain master (``Master.plain``: minimizing iteration time, no hook) has at every design the value its floor
says there: the least T of its LP relaxation with y fixed at the design, Jackson's bound there, and the periods
of the evaluations covering it (3.7). Its optimum is the least floor over the designs within the budgets, and
the least-area tie-break takes the least tie key among the designs whose floor is within ``TIE`` of it. So the
same search can be run without HiGHS's branch and bound: list the designs (``Master.tabulate``, also beyond the
256 designs that get columns), compute their floors (``Master.prepare``), and repeatedly take the design the
master would propose; evaluate it if no evaluation covers it, else stop. Every evaluation raises the floors of
the designs it covers, as its cut raises the master's value there.

What it proves: when the search stops on an evaluated design c, every design not evaluated has a floor (a
proven lower bound on its simulated period) at least the least floor L, and c's period is within TIE of L:
``optimal``, with bound L. When the time runs out first, the best evaluated design within the budgets and the
bound L (``time_limit``).

When to switch (``worth_switching``): at once where every design's floor is known (a master with design
columns computes them for its first solve, so the floors cost nothing more and the search is the one the
master would make, without its solves); else, measured online, the master's time so far against (a) what the
floors it lacks would cost (per design, the time the floors computed so far took, else a probe of two designs), so
the time spent in master solves is never more than the floors would have cost (a ski rental), and (b) a
share ``ENUMERATION_SHARE`` of replaying every design left at the replays' mean time, so that a master that
settles in a few solves (the shipped problems) is left to settle.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from ..milp.highs import model_size
from ..milp.master import TIE_SCALE, Master
from ..platform.endpoint import design_area_mm2

if TYPE_CHECKING:
    from .search import Search, SearchResult

#: The share of replaying every design left that the master's solves may take before the floors are worth
#: their cost (our calibration: the shipped problems' masters settle in less than a tenth of it).
ENUMERATION_SHARE = 0.15
#: The designs whose floors a probe times, for a master that has computed none.
PROBE = 2


def worth_switching(search: Search, master: Master, master_s: float) -> bool:
    """Whether the search should read the floors instead of solving the master again, after ``master_s``
    seconds of master solves (``pipeline/floors.py``'s docstring: (a) and (b)). Builds the master's table of
    designs (``Master.tabulate``) and probes its floors' cost where it has no figures yet."""
    if not (search.exact and master.plain):
        return False
    if master.designs is not None and not np.isnan(master.relaxed[master.fits]).any():
        return True  # every floor is there (a master with columns computes them for its first solve): free
    if not search.evaluated:
        return False
    mean_replay = search.evaluation_s / search.evaluated
    n = _designs(master)
    if n is None or master_s < ENUMERATION_SHARE * mean_replay * max(0, n - len(search.visits)):
        return False
    if not master.tabulate():
        return False
    master.compile()
    missing = np.flatnonzero(master.fits & np.isnan(master.relaxed))
    if not len(missing):
        return True
    if master.floor_s_per_design is None:
        master.floors_for(missing[:PROBE], time.perf_counter() + 0.5 * max(0.0, search.deadline - time.perf_counter()))
        missing = np.flatnonzero(master.fits & np.isnan(master.relaxed))
    per = master.floor_s_per_design or 0.0
    return master_s >= per * len(missing)


def _designs(master: Master) -> int | None:
    """How many designs the master's open options make (None: nothing to size)."""
    if master.designs is not None:
        return int(master.fits.sum())
    if not master.sized:
        return None
    return int(np.prod([len(f) for f in master._free_options()]))


def tie_keys(master: Master) -> np.ndarray:
    """Per design of the table, the least-area tie-break's objective (``Master.smallest_at``): area plus network
    cost plus 1e-6 times the options' ranks by value, scaled by ``TIE_SCALE``."""
    from .search import network_cost
    ranks = []
    for r in master.sized:
        opts = master.space[r]
        order = sorted(range(len(opts)), key=lambda o: opts[o].value)
        ranks.append({o: n for n, o in enumerate(order)})
    out = np.empty(len(master.designs))
    for d in range(len(master.designs)):
        choice = master._design_choice(d)
        rank = sum(ranks[j][choice[r]] for j, r in enumerate(master.sized))
        out[d] = TIE_SCALE * (design_area_mm2(master.engine, choice) + network_cost(master.md.problem, choice)
                              + 1e-6 * rank)
    return out


def search_by_floors(search: Search, master: Master, solves: int, cuts: int, stats) -> SearchResult:
    """The search from here on without master solves (the module's docstring): ``solves``, ``cuts`` and
    ``stats`` are those of the rounds before, for the result. The master must be plain and tabulated."""
    from .search import TIE, SearchResult
    master.compile()
    master.prepare(time.perf_counter() + 0.5 * max(0.0, search.deadline - time.perf_counter()))
    keys = tie_keys(master)
    size = stats.size if stats is not None else model_size(master.model)
    alive = master.fits & ~master.excluded & master._open()
    while True:
        V = np.where(alive, np.maximum(master._floors(), master.P), np.inf)
        if not np.isfinite(V).any():
            return SearchResult("infeasible", None, None, None, solves, size, stats, cuts, by_floors=True)
        low = float(V.min())
        tied = np.flatnonzero(V <= low * (1 + TIE))
        c = int(tied[np.argmin(keys[tied])])  # (first of equal keys, in the table's order)
        choice = master._design_choice(c)
        if master.seen[c] > 0:
            visit = search.find(choice)
            return SearchResult("optimal", visit, visit.evaluation.period_us, low, solves, size, stats, cuts,
                                by_floors=True)
        if time.perf_counter() >= search.deadline or not search._time_for_one_more():
            why = "the time limit passed" if time.perf_counter() >= search.deadline else search._no_time_why()
            return _stopped(search, master, alive, low, solves, size, stats, cuts, why)
        master.add_evaluation(search._evaluate(choice, record=False).evaluation)


def _stopped(search: Search, master: Master, alive: np.ndarray, low: float, solves: int, size, stats, cuts: int,
             why: str) -> SearchResult:
    """Out of time: the best evaluated design within the budgets, and the least floor as the bound."""
    from .search import SearchResult
    ok = [v for v in search.visits if master.admits(v.choice)]
    best = min(ok, key=lambda v: v.evaluation.period_us, default=None)
    value = best.evaluation.period_us if best is not None else None
    return SearchResult("time_limit", best, value, low, solves, size, stats, cuts, stopped=why, by_floors=True)
