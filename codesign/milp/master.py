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

import time

import numpy as np
import pyomo.core as pyo

from ..platform.engines import engine_kind
from ..problem.model import SolverSpec
from .columns import DESIGN_COLUMNS_MAX, DesignColumns
from .data import TIME_UNIT, ModelData, Term
from .designs import Evaluation, fits_budgets, unusable, within
from .highs import CompiledModel, SolveStats
from .intervals import VIOLATION, IntervalCuts
from .lateness import Shape, separable
from .relaxation import Relaxation, nominal_compute_us, phase_worst_us
from .reuse import Reuse

#: what other modules import from here (the master's parts live in the modules named above)
__all__ = ["DESIGN_COLUMNS_MAX", "TIE_SCALE", "VIOLATION", "Evaluation", "Master", "fits_budgets",
           "nominal_compute_us", "phase_worst_us", "unusable", "within"]

#: The least-area tie-break's objective scale (``Master.smallest_at``): its rank terms 1e-6 apart become 1e-3.
TIE_SCALE = 1e3


class Master(Relaxation, DesignColumns, IntervalCuts, Reuse):
    """The master MILP and the data its cuts need. ``model`` is the Pyomo model. Its parts: the relaxation's
    rows (``relaxation.py``), the design columns and floors (``columns.py``), the interval cuts
    (``intervals.py``), the re-use across a family's problems (``reuse.py``); the build, the solves and the
    evaluation and no-good cuts are here."""

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
        #: the no-good cuts it holds (``exclude``): each design with its plateau
        self._exclusions: list[tuple[dict[str, int], frozenset[str]]] = []
        #: True: a hook (``extra``) may have changed the model (``Search.master`` says so), which ``plain`` reads
        self.hooked = False
        self.compiled: CompiledModel | None = None
        self._tie = None  # smallest_at's objective, built on its first call
        #: the interval cuts added, by (tag, members): their (tag, release, due, members), which hold for every
        #: design and budget of this model data (``add_intervals`` gives them to another master)
        self.intervals: dict[tuple, tuple] = {}
        self._release_due = self._interval_data() if self.shape is not None else None
        self._built = self._components()

    def _components(self) -> frozenset[str]:
        """The names of the model's components."""
        return frozenset(c.local_name for c in self.model.component_objects(descend_into=False))

    @property
    def plain(self) -> bool:
        """Whether the master is its build's, minimizing iteration time: no hook (``hooked``), no component
        added since (a tie-break's lexicographic row, a target), its own objective. Then its value at every
        design is what its floors say there (docs/formulation.md, 3.7), so a search may read the floors
        instead of solving it (``pipeline/floors.py``)."""
        return (self.objective == "iteration_time" and not self.custom and not self.hooked
                and self.time_target_us is None and self._components() == self._built)

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
            z = getattr(self.model, "design", None) if self.columns else None
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
            if self.columns:
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
        self._exclusions.append((dict(choice), plateau))
        if self.sized and self.designs is not None:
            self.excluded[self._region(choice, plateau)] = True
        if self.sized and self.columns:
            region = self._region(choice, plateau)
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
