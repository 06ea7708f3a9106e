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
A design the master proposes that is over a budget once its binaries are rounded (HiGHS takes a binary
within 1e-6 of 0 or 1) is cut off and the master solved again (``Master.admits``).
So what is reported is what the simulator says the design does, and "optimal" means that no design
within the constraints does better in the simulator. All rounds share one deadline; when it passes,
the best evaluated design is returned with the master's last bound (status ``time_limit``).

An evaluation's cut carries a period that is exact for the design (the policy's simulated period) or,
for ``order: optimize``, a proven lower bound over every order at the design; ``Visit.simulated_us``
is always the best period the simulator reached there.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyomo.core as pyo

from ..errors import SolverError
from ..milp.data import ModelData
from ..milp.highs import SolveStats
from ..milp.master import Evaluation, Master
from ..milp.size import ModelSize
from ..platform.endpoint import design_area_mm2, design_power_w
from ..problem.model import Problem
from .floors import search_by_floors, worth_switching


def network_cost(problem: Problem, choice: dict[str, int]) -> float:
    """The network's cost at ``choice`` (the problem's unit; 0 without a network design space)."""
    net = problem.network
    return sum(net.costs(problem.topology, choice)) if net is not None else 0.0

Extra = Callable[[pyo.ConcreteModel, Problem], None]
TIE = 1e-7  # relative: periods this close tie, and the least area decides
TIE_INT = 1e-9  # how far from 0 or 1 a binary may be when the search closes a gap to TIE (``Search.run``)
#: Evaluate one design: (the evaluation whose period the cut carries, the best simulated period in us,
#: whatever the caller wants kept with the visit). An exact search's evaluator also takes ``record=False``
#: (``pipeline/floors.py``: the replay's record is kept only for the answer, replayed again).
Evaluator = Callable[..., tuple[Evaluation, float, Any]]


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
    #: True: HiGHS failed on the master and the search went on without it (``Search._enumerate``)
    enumerated: bool = False
    #: what ended the search, in words ("the time limit passed", ...; empty: the master settled)
    stopped: str = ""
    #: True: the search went on by the master's floors instead of its solves (``pipeline/floors.py``)
    by_floors: bool = False

    @property
    def gap(self) -> float | None:
        if self.objective is None or self.bound is None:
            return None
        return max(0.0, self.objective - self.bound) / max(abs(self.objective), 1e-12)


def choice_from(master: Master) -> dict[str, int]:
    """The design in the master's current solution (option indices per resource)."""
    m = master.model
    return {r: (max(range(len(opts)), key=lambda o: pyo.value(m.y[r, o])) if r in master.sized else 0)
            for r, opts in master.space.items()}


def covers(ev: Evaluation, choice: dict[str, int], space: dict) -> bool:
    """Whether ``choice`` is ``ev``'s design, or differs only by larger options on ev's plateau
    (``space``: the design space, ``ModelData.space``)."""
    for r, opts in space.items():
        if len(opts) < 2:
            continue
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
    #: True: an evaluation is the design's exact period (a policy's replay). False: it is the best period
    #: of the orders tried, and its cut only a lower bound (order: optimize): see ``_run_bounded``.
    exact: bool = True
    visits: list[Visit] = field(default_factory=list)
    evaluation_s: float = 0.0  # wall time spent evaluating, to tell whether one more fits the deadline
    #: how many of ``visits`` came evaluated with the search (a ``Family``'s earlier members'), not by it
    known: int = 0
    #: True: evaluate the master's design as it comes, and solve the least-area tie-break only once it is an
    #: evaluated one (where the tie-break decides the answer). False: tie-break every round, so that the
    #: design evaluated is the least-area one on the bound, whose plateau covers the most designs (fewer
    #: evaluations for one solve; a family, whose members share every evaluation, gains more from fewer
    #: HiGHS runs). The answer is the same either way: the search ends only on an evaluated least-area design.
    tie_break_last: bool = False

    @property
    def evaluated(self) -> int:
        """The designs this search evaluated itself."""
        return len(self.visits) - self.known

    def _time_for_one_more(self) -> bool:
        """Whether an evaluation, at the mean time the earlier ones took, would end before the deadline."""
        mean = self.evaluation_s / self.evaluated if self.evaluated else 0.0
        return time.perf_counter() + mean <= self.deadline

    def _no_time_why(self) -> str:
        """Why ``_time_for_one_more`` said no, in words."""
        mean = self.evaluation_s / self.evaluated if self.evaluated else 0.0
        left = max(0.0, self.deadline - time.perf_counter())
        return (f"one more design's simulation, at the {mean:.3g} s the earlier ones took on average, would end "
                f"past the time limit ({left:.3g} s left)")

    def _evaluate(self, choice: dict[str, int], record: bool = True) -> Visit:
        t0 = time.perf_counter()
        ev, simulated, payload = self.evaluate(choice) if record else self.evaluate(choice, record=False)
        self.evaluation_s += time.perf_counter() - t0
        visit = Visit(ev, simulated, payload)
        self.visits.append(visit)
        return visit

    def find(self, choice: dict[str, int]) -> Visit | None:
        """The visit that evaluates ``choice``: the first that covers it (its own, or a smaller design's on
        whose plateau it lies), unless its own evaluation is faster than that one by more than TIE (a plateau
        holds to the simulator's rounding, not always to TIE: a larger HBM share can be 5e-7 faster)."""
        first = next((v for v in self.visits if covers(v.evaluation, choice, self.md.space)), None)
        if first is None or first.choice == choice:
            return first
        own = next((v for v in self.visits if v.choice == choice), None)
        return own if own is not None and own.simulated_us < first.simulated_us * (1 - TIE) else first

    def master(self, *, objective: str | None = None, time_target_s: float | None = None,
               extra: Extra | None = None) -> Master:
        """A master for this search's problem with every evaluation so far as a cut."""
        master = Master(self.md, objective=objective, time_target_s=time_target_s)
        if extra is not None:
            master.hooked = True
            extra(master.model, self.md.problem)
        for v in self.visits:
            # an optimize evaluation's bound holds at its own design only: its plateau shares the orders it
            # tried, not its bound over every order
            ev = v.evaluation if self.exact else dataclasses.replace(v.evaluation, plateau=frozenset())
            master.add_evaluation(ev)
        return master

    def run(self, master: Master) -> SearchResult:
        """Alternate master solves and evaluations until the master settles on an evaluated design."""
        if not self.exact:
            return self._run_bounded(master)
        solver = self.md.problem.solver
        solves = cuts = 0
        bound = None
        stats = None
        # the time in master solves, their cuts and tie-breaks: the loop's, but for the evaluations'
        begun, evaluating = time.perf_counter(), self.evaluation_s
        while True:
            left = self.deadline - time.perf_counter()
            if left <= 0:
                return self._stopped(master, solves, bound, stats, cuts, "the time limit passed")
            master_s = time.perf_counter() - begun - (self.evaluation_s - evaluating)
            if solves and worth_switching(self, master, master_s):
                return search_by_floors(self, master, solves, cuts, stats)
            # before its first evaluation, keep a tenth of the time to evaluate what the master finds (known
            # visits, a family's, need none)
            integrality = 1e-6 if solver.mip_gap > TIE else TIE_INT
            stats = master.solve(solver, left if self.evaluated else 0.9 * left, integrality)
            solves += 1
            if _failed(master, stats, self.deadline):
                return self._enumerate(master, solves, stats, cuts)
            if stats.status == "infeasible":
                return SearchResult("infeasible", None, None, None, solves, stats.size, stats, cuts)
            if stats.bound is not None:
                bound = stats.bound
            if not stats.has_solution:
                return self._stopped(master, solves, bound, stats, cuts, _NO_SOLUTION)
            choice = choice_from(master)
            if _over_budget(master, choice):
                cuts += 1
                continue
            if stats.status != "optimal":  # out of time: evaluate the master's design if it is new, and stop
                if self.find(choice) is None and (not self.visits or self._time_for_one_more()):
                    self._evaluate(choice)
                return self._stopped(master, solves, bound, stats, cuts, "the time limit passed during a master solve")
            T_us = pyo.value(master.model.T)
            added = master.interval_cuts(choice, T_us)
            if added:
                cuts += added
                continue
            deferred = self.tie_break_last and self.find(choice) is None
            if master.objective == "iteration_time" and not master.custom and master.sized and not deferred:
                # several designs may tie on the bound: take the smallest, whose plateau covers the rest
                # (and which, once evaluated at the optimum, is the least-area optimal design)
                if master.smallest_at(solver, T_us * (1 + TIE), max(0.01, self.deadline - time.perf_counter()),
                                      integrality):
                    choice = choice_from(master)
                    if _over_budget(master, choice):
                        cuts += 1
                        continue
            visit = self.find(choice)
            if visit is None:
                if not self._time_for_one_more():
                    return self._stopped(master, solves, bound, stats, cuts, self._no_time_why())
                master.add_evaluation(self._evaluate(choice).evaluation)
                continue
            if T_us < visit.evaluation.period_us * (1 - 1e-6) - 1e-6:
                raise SolverError(f"the master's period {T_us:.6g} us is below its evaluated design's "
                                  f"{visit.evaluation.period_us:.6g} us: an evaluation cut did not hold")
            status = "optimal" if stats.status == "optimal" else "time_limit"
            if (status == "optimal" and not master.custom and stats.bound is not None
                    and _objective(master, visit) - stats.bound > TIE * abs(_objective(master, visit))):
                # optimal within the MIP gap is not within the tie tolerance of what is reported (the design's
                # simulated value against the bound): evaluate the master's design itself if a plateau stood
                # for it, else solve again with the gap at TIE and binaries within TIE_INT of 0 or 1 (HiGHS's
                # 1e-6, times an evaluation cut's big-M, let T sit 5e-7 below a design's evaluation), which
                # proves the answer or finds a better one
                if visit.choice != choice and not any(v.choice == choice for v in self.visits):
                    if self._time_for_one_more():
                        master.add_evaluation(self._evaluate(choice).evaluation)
                        continue
                elif solver.mip_gap > TIE:
                    solver = dataclasses.replace(solver, mip_gap=TIE)
                    continue
                status = "feasible"  # (the gap, above TIE, is reported)
            return SearchResult(status, visit, stats.objective, stats.bound, solves, stats.size, stats, cuts)

    def _enumerate(self, master: Master, solves: int, stats: SolveStats, cuts: int) -> SearchResult:
        """The search without HiGHS's branch and bound, where HiGHS failed on the master (``_failed``):
        the designs the master admits, each with its floor (``Master.design_floors``: a lower bound from
        the master's rows at that design), evaluated in order of floor until the best evaluated design is
        within ``TIE`` of every floor not yet evaluated (ties within TIE go to the least area, as
        ``smallest_at`` takes them). Infeasible only if the master admits no design; ``time_limit`` when
        the deadline comes first. Minimizing time with exact evaluations only (``_failed`` says so)."""
        eng = self.md.engine
        while True:
            # (``_failed`` enumerates only a master that lists its designs, or has one design: floor 0)
            listed = master.design_floors(self.deadline)
            choices, floors = listed if listed is not None else ([{r: 0 for r in master.space}], [0.0])
            if not choices:
                return SearchResult("infeasible", None, None, None, solves, stats.size, stats, cuts, True)
            found = [self.find(c) for c in choices]
            best = min((v for v in found if v is not None), default=None,
                       key=lambda v: (v.simulated_us, design_area_mm2(eng, v.choice)))
            left = [(float(f), design_area_mm2(eng, c), c) for c, f, v in zip(choices, floors, found) if v is None]
            low = min((f for f, _, _ in left), default=float("inf"))
            bound = min(low, best.simulated_us) if best is not None else low
            if best is not None and best.simulated_us <= low * (1 + TIE):
                area = design_area_mm2(eng, best.choice)
                left = [x for x in left if x[0] <= best.simulated_us * (1 + TIE) and x[1] < area]
                if not left:
                    return SearchResult("optimal", best, best.simulated_us, bound, solves, stats.size, stats, cuts,
                                        True)
            if time.perf_counter() >= self.deadline or (self.evaluated and not self._time_for_one_more()):
                value = best.simulated_us if best is not None else None
                return SearchResult("time_limit", best, value, bound, solves, stats.size, stats, cuts, True)
            _, _, choice = min(left, key=lambda x: (x[0], x[1]))
            master.add_evaluation(self._evaluate(choice).evaluation)

    def _run_bounded(self, master: Master) -> SearchResult:
        """The search when an evaluation only brackets a design (the best order found above, a bound for
        every order below): each evaluated design leaves the master (a no-good cut), and the search goes
        on while the master's best remaining design could beat the best found. The bound is the least of
        the master's bound over the designs left and the evaluated designs' own bounds; the status is
        ``optimal`` when the best found meets it (within the MIP gap), else ``feasible``."""
        if master.custom:
            from ..errors import SpecError
            raise SpecError("an extra hook's own objective needs an exact evaluation: use order lifo or fifo",
                            path="schedule.order")
        solver = self.md.problem.solver
        gap = max(solver.mip_gap, 1e-9)
        solves = cuts = 0
        stats = None
        for v in self.visits:
            master.exclude(v.choice)
        remaining = None   # the master's bound over the designs not evaluated (None: none left)
        unbounded = False  # the last solve left designs it gave no bound for (out of time before one)
        # lower bounds of the designs a plateau cut took out without evaluating them: the master's bound when
        # they were all still in it
        unevaluated: list[float] = []
        timed_out = False
        why = "every design within the constraints was simulated or replays as one that was"  # (for the messages)
        while True:
            left = self.deadline - time.perf_counter()
            if left <= 0:
                timed_out, why = True, "the time limit passed"
                break
            if self.visits and not master.sized:  # the one design there is has been evaluated
                remaining = None
                unbounded = False
                break
            stats = master.solve(solver, left if self.visits else 0.9 * left)
            solves += 1
            _failed(master, stats, self.deadline, enumerable=False)  # (raises where HiGHS failed)
            if stats.status == "infeasible":
                remaining = None
                unbounded = False
                break
            remaining = stats.bound
            unbounded = remaining is None
            if not stats.has_solution:
                timed_out, why = True, _NO_SOLUTION
                break
            choice = choice_from(master)
            if _over_budget(master, choice):
                cuts += 1
                continue
            T_us = pyo.value(master.model.T)
            added = master.interval_cuts(choice, T_us)
            if added:
                cuts += added
                continue
            if (stats.status == "optimal" and master.objective == "iteration_time" and master.sized
                    and master.smallest_at(solver, T_us * (1 + TIE), max(0.01, self.deadline - time.perf_counter()))):
                # the least-area design at the bound: the evaluator's replays of it cover the larger ones
                choice = choice_from(master)
                if _over_budget(master, choice):
                    cuts += 1
                    continue
            best = self._best_bounded(master)
            if best is not None and remaining is not None and _upper(master, best) <= remaining * (1 + gap):
                break  # no design left can beat the best found
            if stats.status != "optimal":
                if not self.visits or self._time_for_one_more():
                    self._exclude(master, self._evaluate(choice), remaining, unevaluated)
                    unbounded = unbounded and bool(master.sized)  # the one design there is: evaluated
                timed_out, why = True, "the time limit passed during a master solve"
                break
            if not self._time_for_one_more():
                timed_out, why = True, self._no_time_why()
                break
            self._exclude(master, self._evaluate(choice), remaining, unevaluated)
        best = self._best_bounded(master)
        lows = [_lower(master, v) for v in self.visits] + unevaluated
        if remaining is not None:
            lows.append(remaining)
        bound = min(lows) if lows and not unbounded else None
        if best is None:
            status = "time_limit" if timed_out else "infeasible"
            return SearchResult(status, None, None, bound, solves, stats.size if stats else None, stats, cuts,
                                stopped=why)
        value = _upper(master, best)
        # (the search stops within the MIP gap; "optimal" is within the tie tolerance of the bound only)
        closed = bound is not None and value <= bound * (1 + TIE) + 1e-12
        status = "time_limit" if timed_out and not closed else ("optimal" if closed else "feasible")
        return SearchResult(status, best, value, bound, solves, stats.size if stats else None, stats, cuts,
                            stopped=why)

    @staticmethod
    def _exclude(master: Master, v: Visit, remaining: float | None, unevaluated: list[float]) -> None:
        """Take an evaluated design out of the master, with its plateau: the designs larger than it only in
        resources whose pools held nothing back in any order it tried. They replay those orders exactly as
        it did, and their evaluations would borrow its replays (``optimize_evaluator``): the same period at a
        larger design, never a better answer. They leave unevaluated, so the master's bound over the designs
        left before the cut (``remaining``) stands for them."""
        space = master.space
        grows = frozenset(r for r in v.evaluation.plateau if r in master.sized
                          and any(o.value > space[r][v.choice[r]].value for o in space[r]))
        if grows and remaining is not None:  # the cut takes out designs besides this one
            unevaluated.append(remaining)
            master.exclude(v.choice, grows)
        else:
            master.exclude(v.choice)

    def _best_bounded(self, master: Master) -> Visit | None:
        ok = [v for v in self.visits if _upper(master, v) < float("inf")]
        return min(ok, key=lambda v: (_upper(master, v), v.simulated_us,
                                      design_area_mm2(master.engine, v.choice)), default=None)

    def _stopped(self, master: Master, solves: int, bound: float | None, stats: SolveStats | None,
                 cuts: int, why: str) -> SearchResult:
        """The deadline passed: the best evaluated design by the master's objective, and the last bound."""
        size = stats.size if stats is not None else None
        if master.custom:  # a hook's objective: only the master knows its value, at its incumbent
            incumbent = stats is not None and stats.has_solution
            best = self.find(choice_from(master)) if incumbent else None
            best = best or min(self.visits, key=lambda v: v.evaluation.period_us, default=None)
            return SearchResult("time_limit", best, stats.objective if incumbent else None, bound, solves, size,
                                stats, cuts, stopped=why)
        best = min((v for v in self.visits if _admitted(master, v)), key=lambda v: _objective(master, v),
                   default=None)
        value = _objective(master, best) if best is not None else None
        return SearchResult("time_limit", best, value, bound, solves, size, stats, cuts, stopped=why)


def _failed(master: Master, stats: SolveStats, deadline: float, enumerable: bool = True) -> bool:
    """Whether HiGHS failed on the master rather than answered it: it claims the master infeasible while
    the master admits a design whose floor LP is feasible (``Master.design_floors``), or it stopped with
    no solution, not for the time. Periods of hours in microseconds beside nanosecond latencies put
    HiGHS's absolute tolerances out of reach (a 20 MB/s network: big-M rows of 1e9 us). Raises
    SolverError where the search cannot go on without HiGHS (``Search._enumerate``'s conditions;
    ``enumerable`` False: exact evaluations are not to be had, ``order: optimize``)."""
    if stats.has_solution or stats.termination in _OUT_OF_TIME or time.perf_counter() >= deadline:
        return False
    listed = master.design_floors(deadline) if stats.status == "infeasible" else None
    if stats.status == "infeasible" and (listed is None or not listed[0]):
        return False  # proven as far as the master's own rows say
    if enumerable and master.objective == "iteration_time" and not master.custom and (
            not master.sized or master.designs is not None):
        return True
    raise SolverError(f"HiGHS failed on the master MILP ({stats.termination}"
                      + (", though a design satisfies its rows" if stats.status == "infeasible" else "")
                      + "): not proven infeasible; periods far from microseconds to hours (a unit wrong?) "
                      "strain its tolerances")


_NO_SOLUTION = "HiGHS found no solution of the master in the time left"
#: HiGHS's terminations for running out of time (or of its own limits), where no solution is no failure
_OUT_OF_TIME = ("kTimeLimit", "kIterationLimit", "kInterrupt", "kSolutionLimit")


def _over_budget(master: Master, choice: dict[str, int]) -> bool:
    """Whether the master's design is over a budget once its binaries are rounded (``Master.admits``); if
    so it is cut off (a no-good cut, valid: no such design is within the constraints) for a new solve."""
    if master.admits(choice):
        return False
    master.exclude(choice)
    return True


def _objective(master: Master, v: Visit) -> float:
    """The master's objective at an evaluated design."""
    what = master.objective
    if what == "area":
        return design_area_mm2(master.engine, v.choice)
    if what == "power":
        return design_power_w(master.engine, v.choice)
    if what == "network_cost":
        return network_cost(master.md.problem, v.choice)
    return v.evaluation.period_us


def _upper(master: Master, v: Visit) -> float:
    """The objective an evaluated design is known to reach (inf if it misses the time target)."""
    target = master.time_target_us
    if target is not None and v.simulated_us > target * (1 + 1e-9):
        return float("inf")
    if master.objective == "iteration_time":
        return v.simulated_us
    return _objective(master, v)


def _lower(master: Master, v: Visit) -> float:
    """What an evaluated design may reach at best (inf if even its bound misses the time target)."""
    target = master.time_target_us
    if target is not None and v.evaluation.period_us > target * (1 + 1e-9):
        return float("inf")
    if master.objective == "iteration_time":
        return v.evaluation.period_us
    return _objective(master, v)


def _admitted(master: Master, v: Visit) -> bool:
    """Whether an evaluated design meets the master's time target (budgets and hooks held when the
    master proposed it)."""
    target = master.time_target_us
    return target is None or v.evaluation.period_us <= target * (1 + 1e-9)
