"""The design master: a MILP over the design space whose period bounds what the platform can do.

codesign looks for the design whose *simulated* steady-state period is least: the period of the platform
as the simulator runs it (``sim/replay.py``: every network dimension its own resource, collectives cut
into chunks that walk their phases, endpoint pools shared by what runs at once, ACE's SRAM holding what
is in flight). The search is a logic-based Benders decomposition (Hooker and Ottosson, Math.
Programming 96, 2003): this MILP proposes a design, the simulator evaluates it, the evaluation comes
back as a cut, and the loop ends when the MILP's best design is one already evaluated
(``pipeline/search.py``). The MILP therefore carries two kinds of constraints on its period ``T``:

- a **relaxation of the platform**, valid for every design and every network order, linear in the
  option binaries (the bounds below, in microseconds); the MILP's bound is a proven lower bound on the
  simulated period of every design it has not evaluated;
- **evaluation cuts**: for each evaluated design d with simulated period f(d),
  ``T >= f(d) - (f(d) - P) * mismatch(y, d)``, where mismatch counts the resources whose option differs
  from d's (a resource whose capacity never limited anything in d's replay may also be larger: the
  replay would be the same, ``Evaluation.plateau``). At d itself the cut is T >= f(d); anywhere else it
  says no more than T >= P, which the relaxation already says.

The relaxation (every time is what a chunk or an iteration needs at least; ``docs/formulation.md``):

  P                 all compute at the full NPU's speed (compute never runs faster in the platform);
  phase_time[k, i]  a chunk's time in phase i of collective k alone on the endpoint: at least its link
                    time and its memory and reduction demand over the pool the design gives it, each
                    term depending on one resource, so linear in y (``platform/pools.py`` says the same);
  dimension load    every chunk-phase on a dimension, one at a time: T >= sum over chunks and phases;
  pool load         all communication memory and reduction traffic of an iteration through its pool;
  SRAM (ACE)        Little's law per SRAM option: bytes held x least residence <= SRAM x T;
  the cycle         compute in program order at full speed; collective k ends at least ``span[k]`` after
                    its release, where the span is its traversal, its heaviest dimension's work plus
                    what comes before and after it, and, when only q of its chunks fit in the SRAM,
                    ceil(chunks / q) traversals; the task that waits for it starts after it ends (in the
                    next iteration, T later, for weight gradients);
  interval cuts     per dimension, the collectives released after one time and due before another must
                    pass through it between the two (Jackson's preemptive bound, the same as Horn's), and
                    per SRAM option the chunks too big to share the SRAM likewise; there are O(K^2) of
                    them, so they are added as cuts when the master's design violates one
                    (``interval_cuts``). Only for iterations whose collectives all complete in the next
                    iteration (``lateness.separable``), where releases and due dates are constants.

Where the catalog is small (``DESIGN_COLUMNS_MAX``), the master also has a column per design and, before each
solve, the row T >= sum over designs of floor x column, each design's floor being what the rows above and the
evaluations say there (``_design_columns``): the same integer points, and an LP bound that is already the
best design's, so HiGHS proves its answers at the root instead of separating cuts for tens of milliseconds.

Component names are the public API for ``extra(model, problem)`` hooks (README, "Adding your own
constraints"): ``y[r, o]`` (sets ``RES``, ``OPT``), ``design[d]`` (set ``DESIGN``, small catalogs only),
``T`` (us), ``phase_time[k, i]`` (us), ``area`` (mm^2), ``power`` (W), ``obj``. Schedule variables of the
relaxation (``compute_start``, ``comm_end``) exist but constrain only the relaxation: the schedule codesign
reports is the simulator's.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyomo.core as pyo

from ..platform.costs import compute_time_terms
from ..platform.endpoint import design_area_mm2, design_power_w
from ..platform.engines import engine_kind
from ..platform.network import key as net_key
from ..platform.pools import sram_need
from ..problem.model import SolverSpec
from .data import TIME_UNIT, ModelData, Term, unusable, within
from .highs import CompiledModel, SolveStats, own_scheduler, set_time_limit
from .lateness import Shape, instance, separable

#: A relative tolerance for "this cut is violated" (the master's T is in microseconds).
VIOLATION = 1e-7


@dataclass(frozen=True)
class Evaluation:
    """One design the simulator evaluated: its option indices, simulated period (us), and the resources
    that may be larger without changing the replay (their capacity never limited anything)."""

    choice: dict[str, int]
    period_us: float
    plateau: frozenset[str] = frozenset()


def fits_budgets(problem, choice: dict[str, int]) -> bool:
    """Whether the design ``choice`` is within ``problem``'s area, power and network budgets (``within``)."""
    e, net = problem.engine, problem.network
    return ((e.area_budget_mm2 is None or within(design_area_mm2(e, choice), e.area_budget_mm2))
            and (e.power_budget_w is None or within(design_power_w(e, choice), e.power_budget_w))
            and (net is None or net.budget is None or within(sum(net.costs(problem.topology, choice)), net.budget)))


def nominal_compute_us(md: ModelData) -> list[float]:
    """Each compute task's time at the full NPU (us): what compute takes at least, on any design."""
    npu = md.problem.npu
    return [max(compute_time_terms(c.demand, npu, npu.cores, npu.hbm_bandwidth)) / TIME_UNIT
            for c in md.iteration.computes]


def phase_worst_us(md: ModelData) -> dict[tuple[int, int], float]:
    """Per phase (k, i), the longest a chunk can take there alone on any design (us): the largest of its link
    term's and endpoint terms' values over their options (the SRAM gates' big-M values are made of these)."""
    out = {}
    for k, dem in enumerate(md.demands):
        for i in range(len(dem.phase_dims)):
            worst = max(md.link_term(k, i).coeffs)
            for t in md.phase_terms(k, i):
                worst = max(worst, max(t.coeffs))
            out[k, i] = worst
    return out


#: The most designs the master gives a column each (``Master._design_columns``; our calibration).
DESIGN_COLUMNS_MAX = 256


#: The least-area tie-break's objective scale (``Master.smallest_at``): its rank terms 1e-6 apart become 1e-3.
TIE_SCALE = 1e3


class Master:
    """The master MILP and the data its cuts need. ``model`` is the Pyomo model."""

    def __init__(self, md: ModelData, *, objective: str | None = None, time_target_s: float | None = None):
        self.md = md
        p = md.problem
        self.engine = p.engine
        self.network = p.network
        self.chunks = p.schedule.chunks
        self.space = md.space  # the engine's resources and the network's open dimensions (bw[d])
        self.sized = md.sized
        self.nph = [len(d.phase_dims) for d in md.demands]
        self.compute_us = nominal_compute_us(md)
        self.P = float(sum(self.compute_us))
        self.shape: Shape | None = separable(md.iteration)
        sram = engine_kind(self.engine.kind).sizing("sram")
        self.sram: str | None = sram.name if sram is not None else None  # the resource that sizes the SRAM
        m = pyo.ConcreteModel(name=p.name)
        self.model = m
        self._design(m)
        self._phases(m)
        self._loads(m)
        self._cycle(m)
        self._objective(m, objective or p.objective.minimize,
                        time_target_s if time_target_s is not None else p.objective.iteration_time_target_s)
        m.interval = pyo.ConstraintList()
        m.visited = pyo.ConstraintList()
        self.evaluations: list[Evaluation] = []  # the evaluations whose cuts the master holds (add_evaluation)
        self.compiled: CompiledModel | None = None
        self._tie = None  # smallest_at's objective, built on its first call
        #: the interval cuts added, by (tag, members): their (tag, release, due, members), which hold for every
        #: design and budget of this model data (``add_intervals`` gives them to another master)
        self.intervals: dict[tuple, tuple] = {}
        self._release_due = self._interval_data() if self.shape is not None else None

    # ------------------------------------------------------------------ building blocks
    def _constant(self, t: Term) -> bool:
        """Whether the Term does not depend on the choice (no resource, or one of a single option)."""
        return t.resource is None or t.resource not in self.sized

    def lin(self, t: Term):
        """A Term as a linear expression in y (a float when it does not depend on the choice)."""
        if self._constant(t):
            return t.coeffs[0]
        return sum(c * self.model.y[t.resource, o] for o, c in enumerate(t.coeffs))

    def _design(self, m: pyo.ConcreteModel) -> None:
        eng, space = self.engine, self.space
        m.RES = pyo.Set(initialize=self.sized, ordered=True)
        pairs = [(r, o) for r in self.sized for o in range(len(space[r]))]
        m.OPT = pyo.Set(initialize=pairs, dimen=2, ordered=True)
        m.y = pyo.Var(m.OPT, domain=pyo.Binary)
        m.one_option = pyo.Constraint(m.RES, rule=lambda m, r: sum(m.y[r, o] for o in range(len(space[r]))) == 1)

        def choice_sum(attr: str):
            total = getattr(eng, f"fixed_{attr}")
            for r, opts in eng.resources.items():
                if r in self.sized:
                    total = total + sum(getattr(opts[o], attr) * m.y[r, o] for o in range(len(opts)))
                else:
                    total = total + getattr(opts[0], attr)
            return total

        m.area = pyo.Expression(expr=choice_sum("area_mm2"))
        m.power = pyo.Expression(expr=choice_sum("power_w"))
        #: the options the build's budgets rule out: fixed, out of the model's rows, with whatever huge area or
        #: power they have (``restart`` holds further ones at 0 by their bounds)
        self.ruled_out = frozenset(unusable(eng))
        for r, o in self.ruled_out:
            m.y[r, o].fix(0)
        if eng.area_budget_mm2 is not None:
            m.area_budget = pyo.Constraint(expr=m.area <= eng.area_budget_mm2)
        if eng.power_budget_w is not None:
            m.power_budget = pyo.Constraint(expr=m.power <= eng.power_budget_w)
        self._network(m)
        self._design_columns(m)
        m.T = pyo.Var(domain=pyo.NonNegativeReals)

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
        if not self.sized:
            return
        free = [[o for o in range(len(self.space[r])) if not m.y[r, o].fixed] for r in self.sized]
        if math.prod(len(f) for f in free) > DESIGN_COLUMNS_MAX:
            return
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
        m.DESIGN = pyo.RangeSet(0, len(D) - 1)
        m.design = pyo.Var(m.DESIGN, bounds=(0.0, 1.0))
        self._design_bounds()
        by: dict[tuple[str, int], list[int]] = {}
        for d in range(len(D)):
            for j, r in enumerate(self.sized):
                by.setdefault((r, int(D[d, j])), []).append(d)
        m.design_choice = pyo.Constraint(sorted(by), rule=lambda m, r, o: m.y[r, o] == sum(m.design[d]
                                                                                          for d in by[r, o]))

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
        c, m = self.compiled, self.model
        free = [id(getattr(m, n)) for n in ("area_budget", "power_budget", "network_budget") if hasattr(m, n)]
        rows = [(None if con.lower is None else pyo.value(con.lower), con.body,
                 None if con.upper is None else pyo.value(con.upper)) for con in m.interval.values()]
        h = c.relaxation(rows, free)
        n = h.getNumCol()
        cost = np.zeros(n)
        cost[c.col[id(m.T)]] = 1.0
        h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
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
                ms = h.getModelStatus()
                if ms == S.kOptimal:
                    self.relaxed[d] = h.getInfo().objective_function_value
                    if self._completion is None:
                        self._completion = np.full((len(self.designs), n), np.nan)
                    self._completion[d] = h.getSolution().col_value
                elif ms == S.kInfeasible:
                    self.relaxed[d] = np.inf

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
            if len(dead):
                m, c = self.model, self.compiled
                cols = np.array([c.col[id(m.design[int(d)])] for d in dead], dtype=np.int32)
                for d in dead:
                    m.design[int(d)].setub(0.0)
                self.fits[dead] = False
                c.h.changeColsBounds(len(cols), cols, np.zeros(len(cols)), np.zeros(len(cols)))
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
        None where the master has no design columns (nothing to size, or more designs than
        ``DESIGN_COLUMNS_MAX``)."""
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
        ``setub(0)``) nor fixed (a hook's ``fix(0)``)."""
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

    def _network(self, m: pyo.ConcreteModel) -> None:
        """The network's cost (the problem's unit), linear in the bandwidth binaries, under its budget:
        binaries times constants, so exact (``platform/network.Network.dim_cost``)."""
        net, topo = self.network, self.md.problem.topology
        if net is None:
            m.network_cost = pyo.Expression(expr=0.0)
            return
        total = 0.0
        for d in range(len(net.bandwidths)):
            costs = net.option_costs(topo, d)
            r = net_key(d)
            total = total + (sum(c * m.y[r, o] for o, c in enumerate(costs)) if r in self.sized else costs[0])
        m.network_cost = pyo.Expression(expr=total)
        if net.budget is not None:
            floor = net.min_cost(topo)
            for d in range(len(net.bandwidths)):
                r = net_key(d)
                if r not in self.sized:
                    continue
                costs = net.option_costs(topo, d)
                for o, c in enumerate(costs):  # options no other dimensions' choice can pay for
                    if not within(floor - min(costs) + c, net.budget):
                        m.y[r, o].fix(0)
            m.network_budget = pyo.Constraint(expr=m.network_cost <= net.budget * (1 + 1e-12) + 1e-12)

    def _phases(self, m: pyo.ConcreteModel) -> None:
        md = self.md
        ki = [(k, i) for k in range(len(md.demands)) for i in range(self.nph[k])]
        m.phase_time = pyo.Var(ki, domain=pyo.NonNegativeReals)
        m.phase_bound = pyo.ConstraintList()
        self.max_phase_us = phase_worst_us(md)
        for k, i in ki:
            link = self.lin(md.link_term(k, i))  # a constant, or per option of an open dimension's bandwidth
            if isinstance(link, float):
                m.phase_time[k, i].setlb(max(0.0, link))
            else:
                m.phase_bound.add(m.phase_time[k, i] >= link)
            for t in md.phase_terms(k, i):
                m.phase_bound.add(m.phase_time[k, i] >= self.lin(t))

    def traversal(self, k: int):
        """A chunk's least time through all phases of collective k (us, linear in y)."""
        return sum(self.model.phase_time[k, i] for i in range(self.nph[k]))

    def _max_traversal(self, k: int) -> float:
        return sum(self.max_phase_us[k, i] for i in range(self.nph[k]))

    def work(self, k: int, d: int):
        """Dimension d's work for all chunks of collective k (us, linear in y)."""
        dims = self.md.demands[k].phase_dims
        return self.chunks * sum(self.model.phase_time[k, i] for i in range(self.nph[k]) if dims[i] == d)

    def _gate(self, resource: str, o: int, big_m: float):
        """0 when option o of ``resource`` is chosen, ``big_m`` otherwise (0 for a fixed resource)."""
        if resource not in self.sized:
            return 0.0
        return big_m * (1 - self.model.y[resource, o])

    def _loads(self, m: pyo.ConcreteModel) -> None:
        """Every dimension, every pool and (ACE) the SRAM must carry one iteration's traffic per period."""
        md = self.md
        m.loads = pyo.ConstraintList()
        m.loads.add(m.T >= self.P)
        K = len(md.demands)
        ndims = len(md.problem.topology.dims)
        for d in range(ndims):
            ks = [k for k in range(K) if d in md.demands[k].phase_dims]
            if ks:
                m.loads.add(m.T >= sum(self.work(k, d) for k in ks))
        for term in md.pool_load_terms():
            m.loads.add(m.T >= self.lin(term))
        #: the rows whose big-M values are made of ``max_phase_us`` (``rebind`` writes them again), by the key
        #: ``_gated_row`` takes, in the order of the build
        self._gated: list[tuple[tuple, Any]] = []
        for key in self._gates():
            if key[0] == "hold":
                self._gated.append((key, m.loads.add(self._gated_row(key))))

    def _gates(self) -> list[tuple]:
        """The keys of the SRAM's gated rows the build makes: ("hold", o) per SRAM option o whose Little's-law
        row says something (bytes held), ("waves", k, o) per collective k and option o that passes the SRAM in
        more than one wave; in the order the build adds them within each of its lists."""
        if self.sram is None:
            return []
        opts = self.engine.options(self.sram)
        out = [("hold", o) for o, opt in enumerate(opts) if self._held_big(opt.value) > 0]
        out += [("waves", k, o) for k in range(len(self.md.demands)) if self.nph[k]
                for o, opt in enumerate(opts) if self._waves(k, opt.value) > 1]
        return out

    def _held(self, sram_bytes: float) -> list[float]:
        """Per collective: its chunks' bytes held in an SRAM of ``sram_bytes`` over that SRAM (Little's law)."""
        return [self.chunks * sram_need(dem.chunk_bytes, sram_bytes) / sram_bytes for dem in self.md.demands]

    def _held_big(self, sram_bytes: float) -> float:
        return sum(h * self._max_traversal(k) for k, h in enumerate(self._held(sram_bytes)))

    def _gated_row(self, key: tuple):
        """The gated row ``key`` (``_gates``): the SRAM option's Little's-law load, or a collective's waves."""
        m = self.model
        o = key[-1]
        S = self.engine.options(self.sram)[o].value
        if key[0] == "hold":
            held = self._held(S)
            held_us = sum(h * self.traversal(k) for k, h in enumerate(held) if self.nph[k])
            return m.T + self._gate(self.sram, o, self._held_big(S)) >= held_us
        k = key[1]
        waves = self._waves(k, S)
        big = waves * self._max_traversal(k)
        return m.comm_end[k] + self._gate(self.sram, o, big) >= self._release(k) + waves * self.traversal(k)

    def _release(self, k: int):
        """When collective k is issued: the end of the compute task it follows (us, linear)."""
        after = self.md.iteration.comms[k].issue_after
        return self.model.compute_start[after] + self.compute_us[after]

    def _cycle(self, m: pyo.ConcreteModel) -> None:
        """Compute in program order at full speed; each collective at least its span after its release."""
        md = self.md
        it = md.iteration
        J, K = len(it.computes), len(it.comms)
        m.compute_start = pyo.Var(range(J), domain=pyo.NonNegativeReals)
        m.comm_end = pyo.Var(range(K), domain=pyo.NonNegativeReals)
        m.compute_start[0].fix(0.0)
        p = self.compute_us
        m.cycle = pyo.ConstraintList()
        for j in range(J - 1):
            m.cycle.add(m.compute_start[j + 1] >= m.compute_start[j] + p[j])
        m.cycle.add(m.compute_start[0] + m.T >= m.compute_start[J - 1] + p[J - 1])
        waves: dict[int, list[tuple]] = {}
        for key in self._gates():
            if key[0] == "waves":
                waves.setdefault(key[1], []).append(key)
        for k, c in enumerate(it.comms):
            release = self._release(k)
            for span in self._spans(k):
                m.cycle.add(m.comm_end[k] >= release + span)
            for key in waves.get(k, ()):
                self._gated.append((key, m.cycle.add(self._gated_row(key))))
            shift = m.T if c.next_iteration else 0.0
            m.cycle.add(m.compute_start[c.wait_before] + shift >= m.comm_end[k] + c.delay_s / TIME_UNIT)

    def _spans(self, k: int) -> list:
        """Lower bounds on collective k's span (us): its traversal, and per dimension the phases before
        its first visit, all chunks' work there, and the phases after its last visit."""
        if not self.nph[k]:
            return [0.0]
        dims = self.md.demands[k].phase_dims
        pt = self.model.phase_time
        out = [self.traversal(k)]
        for d in sorted(set(dims)):
            on = [i for i, x in enumerate(dims) if x == d]
            out.append(sum(pt[k, i] for i in range(on[0])) + self.work(k, d)
                       + sum(pt[k, i] for i in range(on[-1] + 1, self.nph[k])))
        return out

    def _waves(self, k: int, sram_bytes: float) -> int:
        """Chunks of collective k pass the SRAM in ceil(chunks / q) waves when only q fit at once."""
        hold = sram_need(self.md.demands[k].chunk_bytes, sram_bytes)
        if hold <= 0:
            return 1
        q = max(1, int(sram_bytes // hold + 1e-9))
        return math.ceil(self.chunks / q)

    def _objective(self, m: pyo.ConcreteModel, what: str, target_s: float | None) -> None:
        self.objective = what
        self.time_target_us = target_s / TIME_UNIT if target_s is not None and what != "iteration_time" else None
        if target_s is not None and what != "iteration_time":
            m.time_target = pyo.Constraint(expr=m.T <= target_s / TIME_UNIT)
        m.obj = pyo.Objective(expr={"iteration_time": m.T, "area": m.area, "power": m.power,
                                    "network_cost": m.network_cost}[what], sense=pyo.minimize)
        self._obj_expr = m.obj.expr

    @property
    def custom(self) -> bool:
        """Whether a hook replaced or changed the objective (its value is then in the hook's own units)."""
        m = self.model
        return not m.obj.active or m.obj.expr is not self._obj_expr

    def compile(self) -> CompiledModel:
        """The master in HiGHS, compiled from the Pyomo model as it stands on the first call (after any hook
        changed it); the rows added after it are cuts, which ``restart`` drops."""
        if self.compiled is None:
            z = getattr(self.model, "design", None) if self.designs is not None else None
            self.compiled = CompiledModel(self.model, structural=list(z.values()) if z is not None else ())
        return self.compiled

    def solve(self, spec: SolverSpec, time_limit_s: float, integrality: float = 1e-6) -> SolveStats:
        """Solve the master with HiGHS (compiled on the first call, after any hook changed the model);
        ``integrality``: ``CompiledModel.solve``'s."""
        self.compile()
        t0 = time.perf_counter()
        self._refloor(t0 + 0.5 * time_limit_s)  # the floors take at most half the time
        self._start_at_best(self.compiled.cost, self.time_target_us)
        return self.compiled.solve(spec, time_limit_s - (time.perf_counter() - t0), integrality=integrality)

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

    # ------------------------------------------------------------------ re-use across budgets
    def restart(self, md: ModelData) -> None:
        """Make this master the model ``Master(md)`` would build and compile, for an ``md`` whose problem differs
        from the one it was built for only in the engine's area and power budgets (the caller's ``Family``
        checks), which set the same budgets and rule out at least the options the build's did. The budgets
        are right-hand sides of the build: the cuts go, the budget rows take the new values, and HiGHS is given
        the build's own calls again (``CompiledModel.restart``), so it holds the model a fresh compile would.
        The options the new budgets rule out beyond the build's stay in its rows, held at 0 by their column
        bounds where a fresh build fixes them out: the same designs and the same values at each, one column
        each more for HiGHS. Call after the first ``solve`` (it compiles)."""
        m, eng = self.model, md.problem.engine
        why = self._unrestartable(eng)
        if why is not None:
            raise ValueError(why)
        out = frozenset(unusable(eng))
        self.md, self.engine = md, eng
        bounds = {}
        for name, budget in (("area_budget", eng.area_budget_mm2), ("power_budget", eng.power_budget_w)):
            con = getattr(m, name, None)
            if con is not None:
                con.set_value(con.body <= budget)
                bounds[id(con)] = (None, budget)
        for name in ("interval", "visited"):  # the cuts (none at the build)
            m.del_component(name)
            setattr(m, name, pyo.ConstraintList())
        self.intervals = {}
        self.evaluations = []
        c = self.compiled
        cols = {c.col[id(m.y[r, o])]: (0.0, 0.0) for r, o in sorted(out - self.ruled_out)}
        if self.designs is not None:
            self.seen[:] = 0.0
            self.excluded[:] = False
            self._floored = None
            cols.update({c.col[id(m.design[d])]: (0.0, ub) for d, ub in self._design_bounds()})
        c.restart(bounds, cols)

    def rebind(self, md: ModelData) -> bool:
        """Make this master the model ``Master(md)`` would build and compile, restarted for ``md``'s budgets
        (``restart``), where ``md``'s problem differs from the one it was built for only in its topology, in
        ways that change nothing but link times the design does not choose: a sweep along a dimension's
        bandwidth or latency without a network design space (with one, a latency only: the bandwidths are the
        network's, which must be the same). Such a model has the same rows and columns,
        and only these numbers differ: the phase times' lower bounds (their link times) and the big-M values
        of the SRAM's gated rows (made of the phases' longest times, ``phase_worst_us``). Those are written
        again, through the same functions the build uses, and HiGHS is given the build's calls with them
        (``CompiledModel.rebuild``): where a build costs milliseconds of Pyomo, this costs a walk of a few
        rows. The floors and the cuts go (they hold for the old link times). False, and the master as it was,
        where ``md`` differs in anything else, or its budgets could not restart this master. Call after the
        first ``solve`` (it compiles). For masters built without a hook (a family's): rows or bounds a hook
        added stay as it wrote them, for the old link times."""
        if not self._rebinds(md):
            return False
        m, c = self.model, self.compiled
        old_md, old_worst = self.md, self.max_phase_us
        self.md, self.max_phase_us = md, phase_worst_us(md)
        if self._gates() != [key for key, _ in self._gated]:  # a Little's-law row says nothing at one of the two
            self.md, self.max_phase_us = old_md, old_worst
            return False
        cols = {}
        for k, i in m.phase_time:
            link = md.link_term(k, i)
            if self._constant(link):
                v = m.phase_time[k, i]
                v.setlb(max(0.0, link.coeffs[0]))
                cols[c.col[id(v)]] = (float(v.lb), c.inf if v.ub is None else float(v.ub))
        rows = {}
        for key, con in self._gated:
            con.set_value(self._gated_row(key))
            rows[c.row_of[id(con)][0]] = con
        c.rebuild(cols, rows)
        self._release_due = self._interval_data() if self.shape is not None else None
        if self.designs is not None:
            self.relaxed[:] = np.nan
            self.jackson[:] = 0.0
            self.jackson_known[:] = False
            self._completion = None
        self.restart(md)
        return True

    def _rebinds(self, md: ModelData) -> bool:
        """Whether ``rebind`` can make this master ``md``'s (see there)."""
        old = self.md
        po, pn = old.problem, md.problem
        e = pn.engine
        same = dataclasses.replace(pn, topology=po.topology, engine=dataclasses.replace(
            e, area_budget_mm2=po.engine.area_budget_mm2, power_budget_w=po.engine.power_budget_w))
        if same != po or md.cells != old.cells or len(pn.topology.dims) != len(po.topology.dims):
            return False
        if self._unrestartable(e) is not None:
            return False
        m = self.model
        if len(md.demands) != len(old.demands) or any(dataclasses.replace(a, phase_link_s=b.phase_link_s) != b
                                                      for a, b in zip(md.demands, old.demands)):
            return False
        for k, i in m.phase_time:
            a, b = md.link_term(k, i), old.link_term(k, i)
            if a != b and not (self._constant(a) and self._constant(b)):
                return False  # an open dimension's link times are coefficients of its options
        net = pn.network
        if net is None:
            return True
        return md.space == old.space and all(net.option_costs(pn.topology, d) == net.option_costs(po.topology, d)
                                             for d in range(len(net.bandwidths)))

    def _unrestartable(self, engine) -> str | None:
        """Why ``restart`` cannot make this master one for ``engine``'s budgets, or None if it can: it must be
        compiled, set the same budgets, and its build must have ruled out no option those budgets allow."""
        if self.compiled is None:
            return "restart needs a compiled master (solve it once first)"
        if not frozenset(unusable(engine)) >= self.ruled_out:
            return "the new budgets allow options the build ruled out; build a master for them"
        for name, budget in (("area_budget", engine.area_budget_mm2), ("power_budget", engine.power_budget_w)):
            if hasattr(self.model, name) != (budget is not None):
                return f"{name}: the new problem sets it and the built one does not, or the reverse"
        return None

    def smallest_at(self, spec: SolverSpec, T_us: float, time_limit_s: float, integrality: float = 1e-6) -> bool:
        """Among the designs the master admits at period ``T_us``, load the one of least area plus network
        cost (the smallest endpoint and network) into the model's variables (False if HiGHS found none in
        time): the design to evaluate when several tie on the bound, so that its plateau covers the larger
        ones. Leaves the master as it was."""
        c = self.compiled
        m = self.model
        c.add(None, m.T, T_us + 1e-9)
        # ties go to the least area plus network cost (two units summed: only the order among ties matters),
        # then to the smaller options (the rank terms: designs of equal area are common, the baseline's
        # options cost none and ACE's areas add up alike). Scaled so that a rank apart is 1e-3, far above
        # HiGHS's absolute gap and tolerance (1e-6), and solved with no relative gap: an improvement within
        # either would let the start (the master's design) stand as "optimal" over a smaller design
        if self._tie is None:
            self._tie = TIE_SCALE * (m.area + m.network_cost + 1e-6 * self._smallness())
        c.set_objective(self._tie)
        above = np.zeros(0, dtype=np.int32)
        if self.designs is not None and self._floored is not None:
            # designs whose floor is above T cannot be on it: held at 0, so that the LP cannot mix them in
            # (beyond HiGHS's feasibility tolerance, which the row T <= T_us is allowed, and then some)
            out = np.flatnonzero(self.fits & (self._floored > T_us + 1e-9 + 10 * c.tolerance) & self._open())
            # (not one a hook holds at 0: its bound is restored to 1)
            above = np.array([c.col[id(m.design[int(d)])] for d in out], dtype=np.int32)
            if len(above):
                c.h.changeColsBounds(len(above), above, np.zeros(len(above)), np.zeros(len(above)))
            self._start_at_best(c.cost, T_us + 1e-9)
        try:
            return c.solve(spec, time_limit_s, gap=0.0, integrality=integrality).has_solution
        finally:
            c.pop_row()
            c.set_objective(m.obj.expr, m.obj.sense == pyo.minimize)
            if len(above):
                c.h.changeColsBounds(len(above), above, np.zeros(len(above)), np.ones(len(above)))

    def _smallness(self):
        """Sum over resources of the chosen option's rank by value: ties on area go to smaller options."""
        m = self.model
        total = 0.0
        for r in self.sized:
            opts = self.space[r]
            rank = {o: n for n, o in enumerate(sorted(range(len(opts)), key=lambda o: opts[o].value))}
            total = total + sum(rank[o] * m.y[r, o] for o in range(len(opts)))
        return total

    def _cut(self, where: pyo.ConstraintList, expr) -> None:
        """Add a constraint to the Pyomo model and, once compiled, to HiGHS as well."""
        con = where.add(expr)
        if self.compiled is not None:
            self.compiled.add(None if con.lower is None else pyo.value(con.lower), con.body,
                              None if con.upper is None else pyo.value(con.upper))

    # ------------------------------------------------------------------ cuts
    def _away(self, choice: dict[str, int], plateau: frozenset[str]) -> list:
        """Per sized resource, an expression that is 1 where the design leaves the region of ``choice`` and
        its plateau (the designs equal to ``choice`` but for larger options in ``plateau``) through that
        resource, and 0 inside it: their sum is 0 exactly in the region."""
        m = self.model
        terms = []
        for r in self.sized:
            opts = self.space[r]
            o = choice[r]
            if r in plateau:
                terms.append(sum(m.y[r, q] for q in range(len(opts)) if opts[q].value < opts[o].value))
            else:
                terms.append(1 - m.y[r, o])
        return terms

    def add_evaluation(self, ev: Evaluation) -> None:
        """T >= f(d) wherever the design is d's (or d's plateau), and nothing new elsewhere."""
        slack = max(0.0, ev.period_us - self.P)
        m = self.model
        self.evaluations.append(ev)
        if self.designs is not None:
            region = self._region(ev.choice, ev.plateau)
            self.seen[region] = np.maximum(self.seen[region], ev.period_us)  # in the floor row, before the next solve
            return
        self._cut(m.visited, m.T >= ev.period_us - slack * sum(self._away(ev.choice, ev.plateau)))

    def admits(self, choice: dict[str, int]) -> bool:
        """Whether the design ``choice`` is within the budgets (``fits_budgets``). The master's own rows do
        not say so exactly: HiGHS takes a binary within its integrality tolerance (1e-6) of 0 or 1, so a
        budget row can hold at a solution whose design, rounded, is over the budget by up to that share of
        its area (a 3.5 mm^2 design under a 3.4999995 mm^2 budget, at y = 0.9999997)."""
        return fits_budgets(self.md.problem, choice)

    def exclude(self, choice: dict[str, int], plateau: frozenset[str] = frozenset()) -> None:
        """Forbid the design ``choice`` and, with ``plateau``, the designs larger than it in those resources
        only (a no-good cut: at least one resource leaves the region)."""
        if self.sized and self.designs is not None:
            region = self._region(choice, plateau)
            self.excluded[region] = True
            if len(region):
                self._cut(self.model.visited, sum(self.model.design[int(d)] for d in region) <= 0)
            if self.compiled is not None:
                self.compiled.forget_start()
        elif self.sized:
            terms = self._away(choice, plateau)
            if all(isinstance(t, (int, float)) for t in terms):
                # the region is every design (the smallest options, all on the plateau): none is left, which
                # the one-option-per-resource rows say as infeasible
                m = self.model
                terms = [sum(m.y[r, q] for q in range(len(self.space[r]))) for r in self.sized] + [-len(self.sized)]
            self._cut(self.model.visited, sum(terms) >= 1)
            if self.compiled is not None:
                # the incumbent is usually the design just forbidden: as a start it would cost HiGHS an LP
                # (its repair, with the design fixed) to find it infeasible
                self.compiled.forget_start()

    def _interval_data(self):
        """Per dimension: each collective's release and due date shifted by the link time of the phases
        before its first and after its last visit there (constants: the engine does not change a link
        time, and with open bandwidths each dimension's largest is taken, the shortest time, so the shift
        stays a lower bound), from the separable iteration's closed form (lateness.instance, nominal compute)."""
        md = self.md
        K = len(md.demands)
        inst = instance(self.shape, [t * TIME_UNIT for t in self.compute_us], [0.0] * K)
        out = {}
        for d in range(len(md.problem.topology.dims)):
            ks, rel, due = [], [], []
            for k in range(K):
                dims = md.demands[k].phase_dims
                if d not in dims:
                    continue
                on = [i for i, x in enumerate(dims) if x == d]
                link = [s / TIME_UNIT for s in md.demands[k].phase_link_s]
                ks.append(k)
                rel.append(inst.release[k] + sum(link[:on[0]]))
                due.append(inst.due[k] - sum(link[on[-1] + 1:]))
            if ks:
                out[("dim", d)] = (ks, np.array(rel), np.array(due))
        ks = [k for k in range(K) if self.nph[k]]
        out["sram"] = (ks, inst.release[ks], inst.due[ks])
        return out

    def _phase_values_at(self, idx: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
        """``md.phase_values`` at each design of ``idx`` (indices into ``designs``) at once: per (k, i), an
        array over the designs, each entry the same float ``phase_values`` gives at that design."""
        D = self.designs[idx]
        col = {r: j for j, r in enumerate(self.sized)}

        def at(t: Term) -> np.ndarray:
            if t.resource is None or t.resource not in col:
                return np.full(len(idx), t.coeffs[0])
            return np.asarray(t.coeffs)[D[:, col[t.resource]]]
        out = {}
        for k, dem in enumerate(self.md.demands):
            for i in range(len(dem.phase_link_s)):
                v = at(self.md.link_term(k, i))
                for t in self.md.phase_terms(k, i):
                    v = np.maximum(v, at(t))
                out[k, i] = v
        return out

    def _jackson_at(self, idx: np.ndarray) -> np.ndarray:
        """Jackson's bound (us) at each design of ``idx``: the largest P + L_max that ``interval_cuts`` finds
        at the design, over the dimensions and the SRAM (0 where it finds none), computed for all at once."""
        out = np.zeros(len(idx))
        if self._release_due is None or not len(idx):
            return out
        values = self._phase_values_at(idx)
        zero = np.zeros(len(idx))
        for key, (ks, rel, due) in self._release_due.items():
            if key == "sram":
                if self.sram is None:
                    continue
                j = self.sized.index(self.sram) if self.sram in self.sized else None
                opts = self.engine.options(self.sram)
                w = np.array([self.chunks * sum((values[k, i] for i in range(self.nph[k])), zero) for k in ks])
                groups = {}
                for n, d in enumerate(idx):
                    groups.setdefault(int(self.designs[d, j]) if j is not None else 0, []).append(n)
                for o, members in groups.items():
                    S = opts[o].value
                    sel = [n for n, k in enumerate(ks)
                           if sram_need(self.md.demands[k].chunk_bytes, S) > S / 2 * (1 + 1e-12)]
                    if len(sel) >= 2:
                        cols = np.array(members)
                        out[cols] = np.maximum(out[cols], self.P + _best_intervals(rel[sel], due[sel], w[sel][:, cols]))
            else:
                d = key[1]
                if len(ks) < 2:
                    continue
                w = np.array([self.chunks * sum((values[k, i] for i in range(self.nph[k])
                                                 if self.md.demands[k].phase_dims[i] == d), zero) for k in ks])
                out = np.maximum(out, self.P + _best_intervals(rel, due, w))
        return out

    def interval_cuts(self, choice: dict[str, int], T_us: float, max_cuts: int = 8) -> int:
        """Add the interval cuts that the design ``choice`` violates at period ``T_us`` (at most
        ``max_cuts``, the most violated first); return how many were added. No-op unless separable."""
        if self._release_due is None:
            return 0
        if self.designs is not None:
            d = self._design_index.get(tuple(choice[r] for r in self.sized))
            if d is not None and self.jackson_known[d] and self._floored is not None and self._floored[d] > 0:
                return 0  # the floor row holds T at this design above Jackson's bound here already
        found = []
        values = self.md.phase_values(choice)  # (k, i) -> us alone at this design
        for key, (ks, rel, due) in self._release_due.items():
            if key == "sram":
                if self.sram is None:
                    continue
                o = choice[self.sram]
                S = self.engine.options(self.sram)[o].value
                sel = [n for n, k in enumerate(ks)
                       if sram_need(self.md.demands[k].chunk_bytes, S) > S / 2 * (1 + 1e-12)]
                w = np.array([self.chunks * sum(values[k, i] for i in range(self.nph[k])) for k in ks])
                tag = ("sram", o)
            else:
                d = key[1]
                sel = list(range(len(ks)))
                w = np.array([self.chunks * sum(values[k, i] for i in range(self.nph[k])
                                                if self.md.demands[k].phase_dims[i] == d) for k in ks])
                tag = key
            if len(sel) < 2:
                continue
            sel = np.array(sel)
            best = _best_interval(rel[sel], due[sel], w[sel])
            if best is None:
                continue
            a, b, lmax = best
            bound = self.P + lmax
            if bound > T_us * (1 + VIOLATION) + 1e-9:
                members = [ks[sel[n]] for n in range(len(sel))
                           if rel[sel[n]] >= rel[sel[a]] - 1e-12 and due[sel[n]] <= due[sel[b]] + 1e-12]
                found.append((bound, tag, float(rel[sel[a]]), float(due[sel[b]]), tuple(members)))
        found.sort(key=lambda x: -x[0])  # the most violated first
        if found and self.designs is not None:
            d = self._design_index.get(tuple(choice[r] for r in self.sized))
            if d is not None:  # the floor at this design: what the worst cut says there
                self.jackson[d] = max(self.jackson[d], found[0][0])
        added = 0
        for _, tag, ra, db, members in found[:max_cuts]:
            added += self.add_intervals([(tag, ra, db, members)])
        return added

    def add_intervals(self, cuts) -> int:
        """Add interval cuts (``intervals``' values: tag, release, due, members) this master lacks; return how
        many. They depend on the model data only (release and due dates at nominal compute, link times, the
        SRAM gate), so a master of the same data under other budgets may take another's."""
        added = 0
        for tag, ra, db, members in cuts:
            if (tag, members) in self.intervals:
                continue
            self.intervals[tag, members] = (tag, ra, db, members)
            self._add_interval(tag, ra, db, members)
            added += 1
        return added

    def _add_interval(self, tag, ra: float, db: float, members: tuple[int, ...]) -> None:
        m = self.model
        if tag[0] == "dim":
            lhs = sum(self.work(k, tag[1]) for k in members)
            self._cut(m.interval, m.T >= self.P + ra + lhs - db)
        else:
            o = tag[1]
            lhs = sum(self.chunks * self.traversal(k) for k in members)
            big = sum(self.chunks * self._max_traversal(k) for k in members)
            self._cut(m.interval, m.T + self._gate(self.sram, o, big) >= self.P + ra + lhs - db)


def _best_interval(rel: np.ndarray, due: np.ndarray, w: np.ndarray) -> tuple[int, int, float] | None:
    """max over a, b of rel[a] + sum(w[k] : rel[k] >= rel[a], due[k] <= due[b]) - due[b], and its (a, b):
    Jackson's preemptive bound on the maximum lateness of jobs (rel, w, due) on one machine."""
    n = len(rel)
    best = None
    order_due = np.argsort(due, kind="stable")
    for a in range(n):
        mask = rel[order_due] >= rel[a] - 1e-12
        cum = np.cumsum(np.where(mask, w[order_due], 0.0))
        vals = np.where(mask, rel[a] + cum - due[order_due], -np.inf)
        j = int(np.argmax(vals))
        if best is None or vals[j] > best[2]:
            best = (a, int(order_due[j]), float(vals[j]))
    return best


def _best_intervals(rel: np.ndarray, due: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``_best_interval``'s value for each column of ``w`` (jobs x designs), with the same floating-point
    operations in the same order per column."""
    best = np.full(w.shape[1], -np.inf)
    order_due = np.argsort(due, kind="stable")
    wo = w[order_due]
    for a in range(len(rel)):
        mask = rel[order_due] >= rel[a] - 1e-12
        cum = np.cumsum(np.where(mask[:, None], wo, 0.0), axis=0)
        vals = np.where(mask[:, None], rel[a] + cum - due[order_due][:, None], -np.inf)
        best = np.maximum(best, vals.max(axis=0))
    return best
