"""The design search: the master MILP proposes a design, the simulator evaluates it, until the best
design the master can find is one the simulator has evaluated.

This is logic-based Benders decomposition (``milp/master.py`` explains the master). Each round:
1. solve the master (HiGHS); it returns a design and a lower bound valid for every design;
2. if the design violates a relaxation cut the master does not hold yet (``Master.interval_cuts``),
   add the cut and solve again;
3. if the design has not been evaluated, evaluate it (replay it in the simulator), add its evaluation
   cut, and solve again;
4. otherwise the master's best design is an evaluated one, whose period in the master is exactly the
   evaluation's: the master's bound proves it optimal (within the MIP gap).
So what is reported is what the simulator says the design does, and "optimal" means that no design
within the constraints does better in the simulator. All rounds share one deadline; when it passes,
the best evaluated design is returned with the master's last bound (status ``time_limit``).

An evaluation's cut carries a period that is exact for the design (the policy's simulated period) or,
for ``order: optimize``, a proven lower bound over every order at the design; ``Visit.simulated_us``
is always the best period the simulator reached there.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import pyomo.environ as pyo

from ..errors import SolverError
from ..milp.data import ModelData
from ..milp.highs import SolveStats
from ..milp.master import Evaluation, Master
from ..milp.size import ModelSize
from ..platform.endpoint import design_area_mm2, design_power_w
from ..problem.model import Problem

Extra = Callable[[pyo.ConcreteModel, Problem], None]
#: Evaluate one design: (the evaluation whose period the cut carries, the best simulated period in us,
#: whatever the caller wants kept with the visit).
Evaluator = Callable[[dict[str, int]], tuple[Evaluation, float, Any]]


@dataclass
class Visit:
    """One evaluated design: the cut it gave, the best simulated period (us) and the evaluator's payload."""

    evaluation: Evaluation
    simulated_us: float
    payload: Any

    @property
    def choice(self) -> dict[str, int]:
        return self.evaluation.choice


@dataclass
class SearchResult:
    """How one search ended. ``status``: optimal | time_limit | infeasible. ``visit``: the design the
    master settled on (optimal) or the best evaluated one the master admits (time_limit).
    ``objective``/``bound``: the master's, in the objective's unit (us for time, mm^2, W, or a hook's)."""

    status: str
    visit: Visit | None
    objective: float | None
    bound: float | None
    master_solves: int
    size: ModelSize | None
    stats: SolveStats | None = None
    cuts: int = 0

    @property
    def gap(self) -> float | None:
        if self.objective is None or self.bound is None:
            return None
        return max(0.0, self.objective - self.bound) / max(abs(self.objective), 1e-12)


def choice_from(master: Master) -> dict[str, int]:
    """The design in the master's current solution (option indices per resource)."""
    m = master.model
    return {r: (max(range(len(opts)), key=lambda o: pyo.value(m.y[r, o])) if r in master.sized else 0)
            for r, opts in master.engine.resources.items()}


def covers(ev: Evaluation, choice: dict[str, int], engine) -> bool:
    """Whether ``choice`` is ``ev``'s design, or differs only by larger options on ev's plateau."""
    for r in engine.sized:
        opts = engine.options(r)
        if r in ev.plateau:
            if opts[choice[r]].value < opts[ev.choice[r]].value:
                return False
        elif choice[r] != ev.choice[r]:
            return False
    return True


@dataclass
class Search:
    """The evaluations of one solve, shared by its stages (the tie-break reuses the first stage's)."""

    md: ModelData
    evaluate: Evaluator
    deadline: float
    visits: list[Visit] = field(default_factory=list)

    def find(self, choice: dict[str, int]) -> Visit | None:
        return next((v for v in self.visits if covers(v.evaluation, choice, self.md.engine)), None)

    def master(self, *, objective: str | None = None, time_target_s: float | None = None,
               extra: Extra | None = None) -> Master:
        """A master for this search's problem with every evaluation so far as a cut."""
        master = Master(self.md, objective=objective, time_target_s=time_target_s)
        if extra is not None:
            extra(master.model, self.md.problem)
        for v in self.visits:
            master.add_evaluation(v.evaluation)
        return master

    def run(self, master: Master) -> SearchResult:
        """Alternate master solves and evaluations until the master settles on an evaluated design."""
        solver = self.md.problem.solver
        solves = cuts = 0
        bound = None
        stats = None
        while True:
            left = self.deadline - time.perf_counter()
            if left <= 0:
                return self._stopped(master, solves, bound, stats, cuts)
            # before the first evaluation, keep a tenth of the time to evaluate what the master finds
            stats = master.solve(solver, left if self.visits else 0.9 * left)
            solves += 1
            if stats.status == "infeasible":
                return SearchResult("infeasible", None, None, None, solves, stats.size, stats, cuts)
            if stats.bound is not None:
                bound = stats.bound
            if not stats.has_solution:
                return self._stopped(master, solves, bound, stats, cuts)
            choice = choice_from(master)
            if stats.status != "optimal":  # out of time: evaluate the master's design if it is new, and stop
                if self.find(choice) is None and time.perf_counter() < self.deadline:
                    ev, simulated, payload = self.evaluate(choice)
                    self.visits.append(Visit(ev, simulated, payload))
                return self._stopped(master, solves, bound, stats, cuts)
            T_us = pyo.value(master.model.T)
            added = master.interval_cuts(choice, T_us)
            if added:
                cuts += added
                continue
            visit = self.find(choice)
            if visit is None:
                if time.perf_counter() >= self.deadline:
                    return self._stopped(master, solves, bound, stats, cuts)
                ev, simulated, payload = self.evaluate(choice)
                self.visits.append(Visit(ev, simulated, payload))
                master.add_evaluation(ev)
                continue
            if T_us < visit.evaluation.period_us * (1 - 1e-6) - 1e-6:
                raise SolverError(f"the master's period {T_us:.6g} us is below its evaluated design's "
                                  f"{visit.evaluation.period_us:.6g} us: an evaluation cut did not hold")
            status = "optimal" if stats.status == "optimal" else "time_limit"
            return SearchResult(status, visit, stats.objective, stats.bound, solves, stats.size, stats, cuts)

    def _stopped(self, master: Master, solves: int, bound: float | None, stats: SolveStats | None,
                 cuts: int) -> SearchResult:
        """The deadline passed: the best evaluated design by the master's objective, and the last bound."""
        size = stats.size if stats is not None else None
        if master.custom:  # a hook's objective: only the master knows its value, at its incumbent
            incumbent = stats is not None and stats.has_solution
            best = self.find(choice_from(master)) if incumbent else None
            best = best or min(self.visits, key=lambda v: v.evaluation.period_us, default=None)
            return SearchResult("time_limit", best, stats.objective if incumbent else None, bound, solves, size,
                                stats, cuts)
        best = min((v for v in self.visits if _admitted(master, v)), key=lambda v: _objective(master, v),
                   default=None)
        value = _objective(master, best) if best is not None else None
        return SearchResult("time_limit", best, value, bound, solves, size, stats, cuts)


def _objective(master: Master, v: Visit) -> float:
    """The master's objective at an evaluated design."""
    what = master.objective
    if what == "area":
        return design_area_mm2(master.engine, v.choice)
    if what == "power":
        return design_power_w(master.engine, v.choice)
    return v.evaluation.period_us


def _admitted(master: Master, v: Visit) -> bool:
    """Whether an evaluated design meets the master's time target (budgets and hooks held when the
    master proposed it)."""
    target = master.time_target_us
    return target is None or v.evaluation.period_us <= target * (1 + 1e-9)
