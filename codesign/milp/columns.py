"""The master's design columns and floors (docs/formulation.md, section 3.7): a column per design of a small
catalog, each design's floor (its LP relaxation, Jackson's bound, the evaluations covering it), and the row
T >= sum of floor x column (``DesignColumns``, a part of ``master.Master``)."""
from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pyomo.core as pyo

from .designs import fits_budgets
from .highs import own_scheduler, set_time_limit

#: The most designs the master gives a column each (``Master._design_columns``; our calibration).
DESIGN_COLUMNS_MAX = 256
#: The most designs a master without columns lists with their floors on request (``DesignColumns.tabulate``,
#: for the search by floors, ``pipeline/floors.py``): 10,000 floor LPs of a millisecond are 10 s.
TABLE_MAX = 10_000


class DesignColumns:
    """Per-design columns and floors of ``master.Master`` (whose attributes they read and set)."""

    def _design_columns(self, m: pyo.ConcreteModel) -> None:
        """A column ``design[d]`` in [0, 1] per design d of the options left open (``designs``), with
        ``y[r, o] = sum of design[d] over the designs that choose o`` (``design_choice``), held at 0 where d is
        over a budget (``fits_budgets``). With y integral, ``design`` is the unit vector of y's design. Before
        each solve the master gets the row T >= sum over d of floor[d] design[d] (``_refloor``), where floor[d]
        is the least period the master allows at d: its LP relaxation with y fixed at d, Jackson's bound there,
        and the evaluations covering d. At integral points this says nothing the master did not; with y
        fractional it lets the LP mix only designs within the budgets, each at its floor, so the LP bound is
        the least floor and HiGHS has no root gap left to close with cuts (docs/formulation.md, 3.7). None
        (``designs`` None) when there are more designs than ``DESIGN_COLUMNS_MAX``."""
        self.designs: np.ndarray | None = None
        self.columns = False  # whether the MILP has the columns (a table without them: ``tabulate``)
        if not self.sized:
            return
        free = self._free_options()
        if math.prod(len(f) for f in free) > DESIGN_COLUMNS_MAX:
            return
        self._table(free)
        self.columns = True
        D = self.designs
        m.DESIGN = pyo.RangeSet(0, len(D) - 1)
        m.design = pyo.Var(m.DESIGN, bounds=(0.0, 1.0))
        self._design_bounds()
        by: dict[tuple[str, int], list[int]] = {}
        for d in range(len(D)):
            for j, r in enumerate(self.sized):
                by.setdefault((r, int(D[d, j])), []).append(d)
        m.design_choice = pyo.Constraint(sorted(by), rule=lambda m, r, o: m.y[r, o] == sum(m.design[d]
                                                                                          for d in by[r, o]))

    def _free_options(self) -> list[list[int]]:
        """Per sized resource, the options not fixed out of the model (by the budgets, or a hook)."""
        return [[o for o in range(len(self.space[r])) if not self.model.y[r, o].fixed] for r in self.sized]

    def _table(self, free: list[list[int]]) -> None:
        """The designs of the options ``free`` and their floors, none computed yet."""
        D = np.array(list(itertools.product(*free)), dtype=np.int64).reshape(-1, len(self.sized))
        self.designs = D  # per design, the option of each sized resource (``sized``'s order)
        self._design_index = {tuple(int(x) for x in row): d for d, row in enumerate(D)}
        #: per design: the least T of the master's LP relaxation there (us; nan: not yet computed, inf: none)
        self.relaxed = np.full(len(D), np.nan)
        #: per design: Jackson's bound there (us; 0: none or not yet computed, ``jackson_known``)
        self.jackson = np.zeros(len(D))
        self.jackson_known = np.zeros(len(D), dtype=bool)  # designs whose every Jackson bound is in ``jackson``
        #: per design: the largest simulated period of an evaluation covering it (us; 0: none)
        self.seen = np.zeros(len(D))
        self._floored: np.ndarray | None = None  # the floors of the last floor row given to HiGHS
        #: per design: the solution of its floor LP (nan: none), a start for HiGHS (``_start_at_best``)
        self._completion: np.ndarray | None = None
        self.excluded = np.zeros(len(D), dtype=bool)  # designs cut off by ``exclude``
        self._floor_time = [0.0, 0]  # seconds the floor LPs took, and how many designs they floored

    @property
    def floor_s_per_design(self) -> float | None:
        """The mean time (s) a design's floor LP has taken here, building the LP included (None: none yet)."""
        t = getattr(self, "_floor_time", None)
        return t[0] / t[1] if t and t[1] else None

    def floors_for(self, idx: np.ndarray, deadline: float) -> None:
        """Jackson's bound and the floor LP at the designs ``idx`` (a probe of their cost), until ``deadline``."""
        idx = np.asarray(idx, dtype=np.int64)
        new = idx[~self.jackson_known[idx]]
        if len(new):
            self.jackson[new] = np.maximum(self.jackson[new], self._jackson_at(new))
            self.jackson_known[new] = True
        self._relaxed_floors(idx, deadline)

    def tabulate(self, limit: int | None = None) -> bool:
        """Give a master without design columns the table of its designs (``designs``, ``fits``, the floors'
        arrays, ``seen`` and ``excluded`` as its evaluations and no-good cuts so far say), without changing its
        MILP: its floors are then computed as a master with columns computes them (``prepare``), for a search
        that reads them instead of solving the MILP (``pipeline/floors.py``). False (no table) where there is
        nothing to size or more than ``limit`` designs (``TABLE_MAX``); True where the table exists."""
        if self.designs is not None:
            return True
        free = self._free_options() if self.sized else []
        if not self.sized or math.prod(len(f) for f in free) > (TABLE_MAX if limit is None else limit):
            return False
        self._table(free)
        self.fits = np.array([fits_budgets(self.md.problem, self._design_choice(d)) for d in range(len(self.designs))],
                             dtype=bool)
        for ev in self.evaluations:
            region = self._region(ev.choice, ev.plateau)
            self.seen[region] = np.maximum(self.seen[region], ev.period_us)
        for choice, plateau in self._exclusions:
            self.excluded[self._region(choice, plateau)] = True
        return True

    def _design_choice(self, d: int) -> dict[str, int]:
        """Design d as a choice (an option index per resource of the space)."""
        row = dict(zip(self.sized, (int(x) for x in self.designs[d])))
        return {r: row.get(r, 0) for r in self.space}

    def _design_bounds(self) -> list[tuple[int, float]]:
        """Set each ``design[d]``'s upper bound: 1 if design d fits the budgets and its relaxation is
        feasible, else 0 (``fits``); return the (d, bound) pairs."""
        m, out = self.model, []
        self.fits = np.zeros(len(self.designs), dtype=bool)
        for d in range(len(self.designs)):
            ok = fits_budgets(self.md.problem, self._design_choice(d)) and self.relaxed[d] != np.inf
            self.fits[d] = ok
            m.design[d].setub(1.0 if ok else 0.0)
            out.append((d, 1.0 if ok else 0.0))
        return out

    def _relaxed_floors(self, todo: np.ndarray, deadline: float) -> None:
        """``relaxed`` at the designs ``todo``, until ``deadline`` (``time.perf_counter``; those left stay nan):
        the least T of the master's LP relaxation with y fixed at each, on the build's rows (the rows held back
        from HiGHS too; the budget rows left out, since ``fits`` decides which designs exist) and the interval
        cuts so far. These rows hold under every budget a restart may set, so the floors do too; later cuts
        only raise them. An LP proven infeasible (a hook's rows, or T's target) rules the design out."""
        import highspy
        started, done = time.perf_counter(), 0
        c, m = self.compiled, self.model
        free = [id(getattr(m, n)) for n in ("area_budget", "power_budget", "network_budget") if hasattr(m, n)]
        rows = [(None if con.lower is None else pyo.value(con.lower), con.body,
                 None if con.upper is None else pyo.value(con.upper)) for con in m.interval.values()]
        h = c.relaxation(rows, free)
        n = h.getNumCol()
        cost = np.zeros(n)
        cost[c.col[id(m.T)]] = 1.0
        h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
        if self.columns:
            zc = np.array([c.col[id(m.design[d])] for d in range(len(self.designs))], dtype=np.int32)
            h.changeColsBounds(len(zc), zc, np.zeros(len(zc)), np.ones(len(zc)))
        ycols = [np.array([c.col[id(m.y[r, o])] for o in range(len(self.space[r]))], dtype=np.int32)
                 for r in self.sized]
        yc = np.concatenate(ycols)
        S = highspy.HighsModelStatus
        with own_scheduler():  # (a caller's own solve may have left one of another thread count)
            for d in todo:  # in the order of ``designs``: the next design differs in one resource, mostly
                left = deadline - time.perf_counter()
                if left <= 0:
                    break
                set_time_limit(h, left, lp=True)
                fix = np.concatenate([(np.arange(len(cols)) == self.designs[d, j]).astype(float)
                                      for j, cols in enumerate(ycols)])
                h.changeColsBounds(len(yc), yc, fix, fix)
                h.run()
                done += 1
                ms = h.getModelStatus()
                if ms == S.kOptimal:
                    self.relaxed[d] = h.getInfo().objective_function_value
                    if not self.columns:  # (a start for HiGHS's runs: only with the columns, where it is exact)
                        continue
                    if self._completion is None:
                        self._completion = np.full((len(self.designs), n), np.nan)
                    self._completion[d] = h.getSolution().col_value
                elif ms == S.kInfeasible:
                    self.relaxed[d] = np.inf
        self._floor_time[0] += time.perf_counter() - started
        self._floor_time[1] += done

    def _refloor(self, deadline: float) -> None:
        """Before a solve: ``relaxed`` at the designs within the budgets not yet computed (until ``deadline``),
        and a new floor row if any design's floor rose since the last one (which stands, weaker)."""
        if self.designs is None or self.compiled is None:
            return
        todo = np.flatnonzero(self.fits & np.isnan(self.relaxed))
        if len(todo) and time.perf_counter() < deadline:
            new = todo[~self.jackson_known[todo]]
            # two designs first, then parts sized to take at most half the time left at the last part's rate
            # per design: a part costs a fixed walk over the phases and intervals and little per design
            # (ResNet-50's 84 designs: 303 ms in parts of two, 13 ms at once), and the deadline is passed by
            # at most the first part (0.1 s on the 500-layer problem)
            at, size = 0, 2
            while at < len(new):
                start = time.perf_counter()
                if start >= deadline:
                    break
                part = new[at:at + size]
                self.jackson[part] = np.maximum(self.jackson[part], self._jackson_at(part))
                self.jackson_known[part] = True
                at += len(part)
                now = time.perf_counter()
                per_design = (now - start) / len(part)
                fit = 0.5 * (deadline - now) / per_design if per_design > 0 else math.inf
                size = max(2, int(min(fit, len(new))))  # an infinite deadline: the rest at once
            if time.perf_counter() < deadline:
                self._relaxed_floors(todo, deadline)
            dead = todo[self.relaxed[todo] == np.inf]
            self.fits[dead] = False
            if len(dead) and self.columns:
                m, c = self.model, self.compiled
                cols = np.array([c.col[id(m.design[int(d)])] for d in dead], dtype=np.int32)
                for d in dead:
                    m.design[int(d)].setub(0.0)
                c.h.changeColsBounds(len(cols), cols, np.zeros(len(cols)), np.zeros(len(cols)))
        if not self.columns:  # (a table: the floors are for ``pipeline/floors.py``, not a row of the MILP)
            return
        floor = np.where(self.fits, self._floors(), 0.0)
        if self._floored is not None and np.all(floor <= self._floored):
            return
        self._floored = floor
        m = self.model
        self._cut(m.visited, m.T >= sum(float(floor[d]) * m.design[int(d)] for d in np.flatnonzero(floor > 0)))

    def _floors(self) -> np.ndarray:
        """Per design, the most its relaxation, Jackson's bound and the evaluations covering it say (us; a
        relaxation not yet computed counts as 0)."""
        # nan (not computed) counts as 0; inf (an infeasible relaxation) stays inf
        return np.maximum(np.where(np.isnan(self.relaxed), 0.0, self.relaxed), np.maximum(self.jackson, self.seen))

    def prepare(self, deadline: float) -> None:
        """Compute the floors of the designs within the budgets (``_refloor``) until ``deadline``
        (``time.perf_counter``), ahead of the first solve (which would compute them). Compiles the master."""
        self.compile()
        self._refloor(deadline)

    def floor_at(self, choice: dict[str, int]) -> float | None:
        """The least period (us) the master allows at the design ``choice`` as far as its floors know (its
        relaxation, Jackson's bound, the evaluations covering it; docs/formulation.md 3.7; inf where its
        relaxation is infeasible), or None where it has none (no design columns, no floor computed yet, or a
        design outside its columns)."""
        if self.designs is None or self._floored is None:
            return None
        d = self._design_index.get(tuple(choice[r] for r in self.sized))
        if d is None or np.isnan(self.relaxed[d]):
            return None
        return float(self._floors()[d])

    def design_floors(self, deadline: float) -> tuple[list[dict[str, int]], np.ndarray] | None:
        """The designs the master admits (within the budgets, not cut off, their floor LP not proven
        infeasible) with their floors (us; ``_floors``, computed until ``deadline``, 0 where not yet): a
        lower bound on the period of each, from the master's rows alone, without HiGHS's branch and bound.
        None where the master has no design columns nor a table (``tabulate``)."""
        if self.designs is None:
            return None
        self.compile()
        self._refloor(deadline)
        floors = self._floors()
        ok = self.fits & ~self.excluded & self._open() & (floors < np.inf)
        if self.time_target_us is not None:
            ok &= floors <= self.time_target_us * (1 + 1e-9)
        idx = np.flatnonzero(ok)
        return [self._design_choice(int(d)) for d in idx], floors[idx]

    def _open(self) -> np.ndarray:
        """Per design, whether its column is open: not held at 0 by its bound (over a budget, dead, or a hook's
        ``setub(0)``) nor fixed (a hook's ``fix(0)``); every design of a table without columns."""
        if not self.columns:
            return np.ones(len(self.designs), dtype=bool)
        design = self.model.design
        return np.array([not design[d].fixed and design[d].ub != 0 for d in range(len(self.designs))], dtype=bool)

    def _region(self, choice: dict[str, int], plateau: frozenset[str]) -> np.ndarray:
        """The designs (indices into ``designs``) equal to ``choice`` but for larger options in ``plateau``."""
        D = self.designs
        mask = np.ones(len(D), dtype=bool)
        for j, r in enumerate(self.sized):
            opts = self.space[r]
            o = choice[r]
            if r in plateau:
                vals = np.array([opt.value for opt in opts])
                mask &= vals[D[:, j]] >= opts[o].value
            else:
                mask &= D[:, j] == o
        return np.flatnonzero(mask)

    def _start_at_best(self, cost: np.ndarray, cap_us: float | None) -> None:
        """Start HiGHS's next run at the design whose completion (its floor LP's solution, T raised to its
        floor) is cheapest under ``cost`` (per column, as HiGHS minimizes), among the designs within the
        budgets not cut off whose floor is at most ``cap_us``: where floors are exact, the master's own
        answer at the LP bound, so HiGHS stops at the root without separating cuts or computing its analytic
        centre (ResNet-50: a run of 29 ms without a start, 5 ms with). A start proves nothing: HiGHS checks
        it, and repairs or drops one the rows added since break."""
        if self.designs is None or self._floored is None or self._completion is None:
            return
        ok = self.fits & ~self.excluded & ~np.isnan(self._completion[:, 0]) & self._open()
        if cap_us is not None:
            ok &= self._floored <= cap_us
        idx = np.flatnonzero(ok)
        if not len(idx):
            return
        X = self._completion[idx].copy()
        X[:, self.compiled.col[id(self.model.T)]] = self._floored[idx]
        best = int(np.argmin((X * cost).sum(axis=1)))  # first of equals; numpy sums, the same on any BLAS
        self.compiled.hint = (np.arange(X.shape[1], dtype=np.int32), X[best])
