"""One solve, end to end: problem -> design search (master MILP on HiGHS, simulator) -> Solution.

codesign answers with the design whose simulated steady-state period is least (or, minimizing area or
power, the smallest design whose simulated period meets the target): the period of the platform as
``sim/replay.py`` runs it, every network dimension its own resource. The master MILP
(``milp/master.py``) bounds every design from below with a relaxation of that platform; the search
(``search.py``) evaluates in the simulator the designs the master proposes, until the master's best
design is one it has evaluated. So the status, objective, bound and gap are about the simulated
platform: "optimal" means no design within the constraints does better there.

With a policy order (``schedule: {order: lifo | fifo}``) a design's evaluation is its replay under the
policy, exact; a design whose pools never held anything back covers the designs that are larger in
those pools only (the replay would not change: ``Evaluation.plateau``). With ``order: optimize`` the
design's evaluation replays several dispatch priorities (LIFO, FIFO, and priorities refined on the
per-dimension flow shop, ``milp/flowshop.py``) and keeps the best, while its cut carries a proven lower
bound for every order at that design; the gap between the two is reported (status ``feasible`` when the
search ends with it open).
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyomo.core as pyo

from ..errors import InfeasibleError, SolverError
from ..milp.compute_order import with_compute_order
from ..milp.data import TIME_UNIT, ModelData, check_ranges, model_data
from ..milp.master import Evaluation, Master, fits_budgets, unusable, within
from ..platform.endpoint import Design, Engine, design_area_mm2, design_of, design_power_w
from ..platform.engines import engine_kind
from ..problem.model import Problem, at_design
from ..sim.replay import SimResult, simulate
from ..spec.units import SECONDS, format_quantity
from .search import TIE, Search, SearchResult, Visit, network_cost
from .solution import NetworkChoice, ScheduledTask, Solution

Extra = Callable[[pyo.ConcreteModel, Problem], None]


@dataclass(frozen=True)
class Replayed:
    """What an evaluation keeps: the replay of the design's best order, how to replay that order again
    (``policy`` lifo or fifo, or fixed ``priority``: collectives highest first, as sim.replay takes them),
    and the simulated period (s) of every order tried (``order: optimize``). ``own``: False when ``sim`` is
    the replay of a design that covers this one (the same replay, by the plateau argument), which the
    answer replays again at its own design."""

    sim: SimResult
    policy: str | None = None
    priority: tuple[tuple[int, int], ...] | None = None
    tried: dict[str, float] | None = None
    own: bool = True


#: A design's evaluation for the search (``search.Evaluator``), with what it keeps: a ``Replayed``.
Evaluator = Callable[[dict[str, int]], tuple[Evaluation, float, Replayed]]


def plateau(engine: Engine, limited: dict[str, bool]) -> frozenset[str]:
    """The sized resources that may be larger without changing a replay in which ``limited`` says which
    pools held something back: those that size a pool (and nothing else) that never did."""
    kind = engine_kind(engine.kind)
    return frozenset(r for r in engine.sized
                     if not kind.resource(r).takes_cores and not limited.get(kind.resource(r).pool, True))


def policy_evaluator(md: ModelData) -> Evaluator:
    """Evaluate a design by replaying it under the problem's policy (exact); ``record=False``: without the
    replay's record of what it did (a third faster; the answer is replayed again, ``_solution``)."""
    p = md.problem

    def evaluate(choice: dict[str, int], record: bool = True) -> tuple[Evaluation, float, Replayed]:
        sim = simulate(at_design(p, choice), design_of(p.engine, choice), record=record)
        period = sim.period_s / TIME_UNIT
        return Evaluation(dict(choice), period, plateau(p.engine, sim.limited)), period, Replayed(sim)
    return evaluate


def any_order_bound_s(problem: Problem, design: Design) -> tuple[float, str]:
    """A proven lower bound (s) on the simulated period at ``design`` for every network order, and what
    sets it: the per-dimension flow shop's with its SRAM cliques (``milp/order_bound.py``) when every
    collective completes in the next iteration, else the resource loads of ``schedule/bounds.py``."""
    from ..milp.lateness import separable
    from ..milp.order_bound import order_bound
    from ..schedule.bounds import lower_bound
    from ..schedule.iteration import build_iteration
    if separable(build_iteration(problem.workload, problem.schedule.overlap)) is not None:
        b = order_bound(problem, design)
    else:
        b = lower_bound(problem, design)
    return b.bound_s, b.binding


def optimize_evaluator(md: ModelData, refine_s: float) -> Evaluator:
    """Evaluate a design for ``order: optimize``: the best of LIFO, FIFO and flow-shop-refined priorities
    in the simulator; the cut carries the proven any-order bound (computed at every design).

    A design that another evaluated design covers (larger only in resources whose pools held nothing back
    in any of that design's replays: ``plateau``, as the exact search uses it) replays each of those orders
    exactly as that design did: its runs are that design's (``Replayed.own`` False: replayed again only if
    it is the answer), and its bound is its own."""
    from ..milp.flowshop import flow_shop, refine_priority
    from ..milp.lateness import separable
    from .search import covers
    p = md.problem
    it = md.iteration
    sep = separable(it) is not None
    lifo_rank = sorted(range(len(it.comms)), key=lambda k: (not it.comms[k].urgent, -it.comms[k].issue_after))
    fifo_rank = sorted(range(len(it.comms)), key=lambda k: (not it.comms[k].urgent, it.comms[k].issue_after))
    seen: list[tuple[Evaluation, dict[str, Replayed]]] = []   # each replayed design, with its orders' runs

    def replay_orders(q: Problem, design: Design) -> dict[str, Replayed]:
        fifo = tuple((k, 0) for k in fifo_rank)  # FIFO's dispatch is fixed priorities in issue order
        runs = {"lifo": Replayed(simulate(q, design, policy="lifo", record=True), policy="lifo"),
                "fifo": Replayed(simulate(q, design, order=fifo, record=True), priority=fifo)}
        if sep:
            fs = flow_shop(q, design)
            best, _ = refine_priority(fs, [lifo_rank, fifo_rank], max(refine_s, 0.05))
            if best not in (lifo_rank, fifo_rank):
                prio = tuple((k, 0) for k in best)
                runs["refined"] = Replayed(simulate(q, design, order=prio, record=True), priority=prio)
        return runs

    def evaluate(choice: dict[str, int]) -> tuple[Evaluation, float, Replayed]:
        design = design_of(p.engine, choice)
        q = at_design(p, choice)  # the network at the design's bandwidths
        bound_s, _ = any_order_bound_s(q, design)
        cover = next(((ev, r) for ev, r in seen if covers(ev, choice, md.space)), None)
        if cover is None:
            runs = replay_orders(q, design)
            flat = frozenset.intersection(*(plateau(p.engine, r.sim.limited) for r in runs.values()))
            seen.append((Evaluation(dict(choice), 0.0, flat), runs))
            name = min(runs, key=lambda n: runs[n].sim.period_s)
            won = runs[name]
        else:
            (flat, runs) = cover[0].plateau, cover[1]
            name = min(runs, key=lambda n: runs[n].sim.period_s)
            won = dataclasses.replace(runs[name], own=False)
        tried = {f"{n}_s": r.sim.period_s for n, r in runs.items()}
        won = dataclasses.replace(won, tried=tried)
        return Evaluation(dict(choice), bound_s / TIME_UNIT, flat), won.sim.period_s / TIME_UNIT, won
    return evaluate


def precheck(p: Problem) -> None:
    """Budgets no configuration can meet, said in the user's terms before any solve."""
    e = p.engine
    if e.area_budget_mm2 is not None and e.min_area_mm2() > e.area_budget_mm2 + 1e-12:
        budget, least = _apart(e.area_budget_mm2, e.min_area_mm2())
        raise InfeasibleError(f"area budget {budget} mm^2 < smallest configuration {least} mm^2 "
                              f"(short by {e.min_area_mm2() - e.area_budget_mm2:g} mm^2)")
    if e.power_budget_w is not None and e.min_power_w() > e.power_budget_w + 1e-12:
        budget, least = _apart(e.power_budget_w, e.min_power_w())
        raise InfeasibleError(f"power budget {budget} W < smallest configuration {least} W "
                              f"(short by {e.min_power_w() - e.power_budget_w:g} W)")
    net = p.network
    if net is not None and net.budget is not None and not within(net.min_cost(p.topology), net.budget):
        least = net.min_cost(p.topology)
        budget, cheapest = _apart(net.budget, least)
        raise InfeasibleError(f"network cost budget {budget} {net.unit} < cheapest network {cheapest} {net.unit} "
                              f"(short by {least - net.budget:g} {net.unit})")


def _apart(a: float, b: float) -> tuple[str, str]:
    """``a`` and ``b`` with the fewest significant digits (6 at least) that tell them apart: a budget 1e-7
    below the smallest design is "0.7499999 < 0.75", not "0.75 < 0.75"."""
    for digits in range(6, 18):
        x, y = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if x != y:
            return x, y
    return repr(a), repr(b)


def _budgetless(p: Problem) -> Problem:
    """``p`` without its area and power budgets: what a family's problems have in common."""
    return dataclasses.replace(p, engine=dataclasses.replace(p.engine, area_budget_mm2=None, power_budget_w=None))


class Family:
    """What the solves of problems that differ only in the engine's area and power budgets share, kept
    between them (a sweep's points along a budget axis, or several budget axes, in one worker process).

    Budgets enter a solve in two places only: the master's budget rows (right-hand sides) and which options
    they rule out (``unusable``: options fixed out of the master). Nothing else reads them: the iteration,
    the collectives' demands, the simulator and the any-order bound are functions of the workload and the
    platform. So what one member learns holds for every other:
    - each design's replay (the simulator is deterministic): one ``replays`` for all of them;
    - the cuts: a design's evaluation cut and an interval cut bound the period of designs, whatever the
      budgets. A member's master starts with the cuts of every design the family has evaluated that fits
      the member's budgets, and every interval cut found so far, so it proves its answer in fewer rounds;
    - an answer: a member whose budgets are no larger than those of a member solved to optimality, and
      within whose budgets that member's design fits, has the same answer, proven by the same bound (its
      designs are a subset of the other's, and that subset holds the other's optimum); it is not solved
      again (``proven``). Nor is one whose budgets are no larger than those of a member proven infeasible.
    Members that set the same budgets have the same master up to the budget rows and the options their
    budgets rule out: a master built for the largest budgets (the sweep runs them first) is restarted for
    every member that rules out at least its options (``Master.restart``: the budget rows take the member's
    values, the further options are held at 0) and given the family's cuts. A member's answer is its
    problem's, proven as a solve alone proves it; the path there differs (fewer master solves and
    evaluations), so the bound may differ within the MIP gap, and where designs tie within the gap another
    of them may be the answer. Only ``schedule.order`` lifo or fifo
    (optimize's evaluations are timed heuristics), no ``extra`` hook (whose changes to the master cannot be
    re-applied) and no compute order left to choose."""

    #: Masters kept per family (the most recently used): a few sets of budgets, or of ruled-out options.
    MASTERS_KEPT = 4

    def __init__(self, problem: Problem) -> None:
        self.base = _budgetless(problem)
        self.md = model_data(problem)
        self.masters: dict[tuple, Master] = {}  # by _master_key; most recently used last
        self.replays: dict[tuple[tuple[str, int], ...], tuple[Evaluation, float, Replayed]] = {}
        self.bounds: dict[tuple[tuple[str, int], ...], tuple[float, str]] = {}
        self.intervals: dict[tuple, tuple] = {}  # every interval cut a member's master added (Master.intervals)
        #: the members' optimal answers with their (area, power) budgets (inf: none), for ``proven``
        self.answers: list[tuple[float, float, Solution]] = []
        #: the members proven infeasible: their (area, power) budgets and why, for ``proven``
        self.infeasible: list[tuple[float, float, str]] = []
        self.hints: list[dict[str, int]] = []  # designs to evaluate before a member's first master solve (hint)
        self.donor: Family | None = None  # a family whose masters this one may rebind (adopt)

    @staticmethod
    def eligible(problem: Problem, extra: Extra | None = None) -> bool:
        """Whether a solve of ``problem`` can share a family's work at all: not with a task graph whose
        compute order is still to be chosen (``with_compute_order`` runs a time-limited MILP per solve)."""
        graph = getattr(problem.workload, "task_graph", None)
        return (extra is None and problem.schedule.order in ("lifo", "fifo")
                and (graph is None or bool(graph.decided)))

    def admits(self, problem: Problem, extra: Extra | None = None) -> bool:
        """Whether ``problem`` is a member: equal to the family's but for the budgets."""
        return self.eligible(problem, extra) and _budgetless(problem) == self.base

    @staticmethod
    def _master_key(master: Master) -> tuple:
        """Which budgets a master sets, and the options its build ruled out."""
        e = master.md.problem.engine
        return (e.area_budget_mm2 is None, e.power_budget_w is None, master.ruled_out)

    def _kept_master(self, problem: Problem) -> Master | None:
        """A kept master that ``problem`` can restart (``Master.restart``), taken out of the family: one that
        sets the same budgets and whose build ruled out no option ``problem``'s budgets allow; of those, the one
        that ruled out the most (the fewest columns held at 0), then the most recently used."""
        e = problem.engine
        out = frozenset(unusable(e))
        fits = [k for k in self.masters if k[:2] == (e.area_budget_mm2 is None, e.power_budget_w is None)
                and k[2] <= out]
        if not fits:
            return None
        return self.masters.pop(max(reversed(fits), key=lambda k: len(k[2])))

    def data(self, problem: Problem) -> ModelData:
        """A member's model data: the family's (iteration, demands, their cache), with the member's problem."""
        return dataclasses.replace(self.md, problem=problem)

    def master(self, md: ModelData, search: Search) -> Master:
        """The master of a member (``md``), with the family's cuts: a kept one restarted to what
        ``search.master()`` would build and compile, or that new master, compiled. Then the family's evaluated
        designs that fit the member's budgets join ``search`` as known visits (so that every design a search
        holds is within its budgets, as the master's own proposals are), and their cuts and the interval cuts
        join the master, after its build (a restart drops them). The master leaves the family until ``keep``
        gives it back (``assign`` does), so two builds never share one master's budget rows."""
        if search.visits:
            raise ValueError("a family member's search starts with the family's visits only")
        evaluate = self.evaluator(md)
        master = self._kept_master(md.problem)
        if master is not None:
            master.restart(md)
        else:
            master = self._spare(md)
            if master is None:
                master = search.master()
                master.compile()
        # hints take at most half the time the member has left: a replay is milliseconds on the shipped
        # problems, but a slow one under a tight time limit must not leave the search no time of its own
        stop = time.perf_counter() + 0.5 * (search.deadline - time.perf_counter())
        master.prepare(stop)  # the floors (docs/formulation.md 3.7), within that time
        fits = [r[0].period_us for r in self.replays.values() if fits_budgets(md.problem, r[0].choice)]
        best = min(fits, default=math.inf)
        for c in self.hints:
            if time.perf_counter() >= stop:
                break
            if not fits_budgets(md.problem, c):
                continue
            # a design whose floor is above a period some design within the budgets reaches cannot be the
            # answer (nor one whose floor misses the target): its replay would prove nothing the master needs
            floor = master.floor_at(c)
            cap = best if master.objective == "iteration_time" else master.time_target_us
            if floor is not None and (floor == math.inf or (cap is not None and floor > cap * (1 + 1e-7))):
                continue  # (inf: the master rules the design out)
            ev, _, _ = evaluate(c)  # once for the family: the evaluator keeps its replays
            best = min(best, ev.period_us)
        search.visits.extend(Visit(*r) for r in self.replays.values() if fits_budgets(md.problem, r[0].choice))
        search.known = len(search.visits)
        search.tie_break_last = True  # every design evaluated serves the members after this one
        for v in search.visits:
            master.add_evaluation(v.evaluation)
        master.add_intervals(self.intervals.values())
        return master

    def adopt(self, other: Family) -> None:
        """Borrow from ``other``'s kept masters for this family's first master: a member this family has no
        master for rebinds one (``Master.rebind``) where the two problems differ only in link times the design
        does not choose (the family of the next bandwidth of a fixed dimension, in a sweep), which costs a walk
        of a few rows where a build costs milliseconds of Pyomo. The model is the one a build would make, so the
        answer is too. A master rebound leaves ``other`` (a later member of it builds one again); after this
        family's first master, ``other`` is let go."""
        self.donor = other

    def _spare(self, md: ModelData) -> Master | None:
        """A master of the donor family (``adopt``) rebound to ``md`` (``Master.rebind``), taken out of it; None
        if none can be."""
        donor, self.donor = self.donor, None  # once: a chain of donors would keep every family alive
        if donor is None:
            return None
        for key, master in reversed(list(donor.masters.items())):
            try:
                ok = master.rebind(md)
            except Exception:  # (a row that reads a column the build did not have: never, by construction)
                del donor.masters[key]
                continue
            if ok:
                del donor.masters[key]
                return master
        return None

    def hint(self, choices: list[dict[str, int]]) -> None:
        """Designs worth evaluating before a member's first master solve, e.g. the answers of the family
        solved before this one (the last bandwidth's, in a sweep along bandwidths): a member whose answer is
        one of them then proves it in one round instead of several. Any evaluation is a valid cut, whatever
        suggested it, so a hint changes the path to a proof, never the proof. Designs not of this family's
        design space are ignored."""
        space = self.md.space
        for c in choices:
            if set(c) == set(space) and all(0 <= o < len(space[r]) for r, o in c.items()) and c not in self.hints:
                self.hints.append(dict(c))

    def proposed(self) -> list[dict[str, int]]:
        """The designs the members' searches evaluated, in the order they did (not those evaluated as hints):
        the designs whose bounds the master could not rule out, which a family of a nearby problem (the next
        bandwidth of a sweep) often cannot either."""
        return [ev.choice for ev, _, _ in self.replays.values() if ev.choice not in self.hints]

    def keep(self, master: Master) -> None:
        """Keep a member's master, once a solve has compiled it, for the next member with its key, and the
        interval cuts it found for every member."""
        self.intervals.update(master.intervals)
        if master.compiled is None:
            return
        self.masters.pop(key := self._master_key(master), None)
        self.masters[key] = master
        for old in list(self.masters)[:-self.MASTERS_KEPT]:
            del self.masters[old]

    @staticmethod
    def budgets(problem: Problem) -> tuple[float, float]:
        """The engine's (area mm^2, power W) budgets, inf where there is none."""
        e = problem.engine
        return (float("inf") if e.area_budget_mm2 is None else e.area_budget_mm2,
                float("inf") if e.power_budget_w is None else e.power_budget_w)

    def remember(self, problem: Problem, sol: Solution) -> None:
        """Keep a member's answer for ``proven`` if it is proven optimal."""
        if sol.status == "optimal":
            self.answers.append((*self.budgets(problem), sol))

    def remember_infeasible(self, problem: Problem, why: str) -> None:
        """Keep a member proven infeasible (``InfeasibleError``'s message) for ``proven``."""
        self.infeasible.append((*self.budgets(problem), why))

    def proven(self, problem: Problem, started: float) -> Solution | None:
        """``problem``'s answer if an earlier member's settles it: a member solved to optimality under
        budgets at least ``problem``'s (so every design within ``problem``'s budgets was within its) whose
        design fits ``problem``'s budgets (so it is among them, and no design among them does better: the
        other member's bound holds for them all). The same design, schedule, status and bound, with no master
        solve and no evaluation of its own (None if no member settles it). Raises InfeasibleError if a
        member under budgets at least ``problem``'s was proven infeasible (no design within those, so none
        within these)."""
        area, power = self.budgets(problem)
        for a, w, why in self.infeasible:
            if a >= area and w >= power:
                raise InfeasibleError(f"infeasible as under budgets at least this point's, which admit every design "
                                      f"these admit (area {_budget(a, 'mm^2')}, power {_budget(w, 'W')}): {why}")
        for a, w, sol in reversed(self.answers):
            if a >= area and w >= power and fits_budgets(problem, sol.choice):
                return dataclasses.replace(
                    sol, problem=problem.name, solve_time_s=time.perf_counter() - started, evaluations=0,
                    master_solves=0, diagnostics=None, duals=None, notes=(*sol.notes, (
                        "proven by the solve under budgets at least this point's (area "
                        f"{_budget(a, 'mm^2')}, power {_budget(w, 'W')}), whose "
                        "answer fits these budgets: every design within them was within those")))
        return None

    def evaluator(self, md: ModelData) -> Evaluator:
        """``policy_evaluator(md)``, each design replayed once for the whole family."""
        evaluate = policy_evaluator(md)

        def cached(choice: dict[str, int], record: bool = True) -> tuple[Evaluation, float, Replayed]:
            key = tuple(sorted(choice.items()))
            if key not in self.replays:
                self.replays[key] = evaluate(choice) if record else evaluate(choice, record=False)
            return self.replays[key]
        return cached

    def any_order_bound_s(self, problem: Problem, design: Design, choice: dict[str, int]) -> tuple[float, str]:
        """``any_order_bound_s`` at a design, computed once for the whole family."""
        key = tuple(sorted(choice.items()))
        if key not in self.bounds:
            self.bounds[key] = any_order_bound_s(problem, design)
        return self.bounds[key]


def _budget(value: float, unit: str) -> str:
    """A budget as the note on an answer proven by another member writes it ("none" for no budget)."""
    return "none" if value == float("inf") else f"{value:.12g} {unit}"


@dataclass
class Built:
    """A solve built and not yet run (``build``): the problem's model data, the search that evaluates
    designs in the simulator, and its master MILP. Between ``build`` and ``run`` the master can be read
    (``model``, the Pyomo model) or written (``write``); it is compiled for HiGHS at its first solve.
    (Built with a ``family``, it is compiled already and holds the family's cuts; a restarted one holds the
    options its budgets rule out beyond its build's at 0 in HiGHS only.) Constraints of your own go in
    through ``build``'s ``extra``: the tie-break and the explanation of an infeasible problem build further
    masters, and each gets the hook."""

    problem: Problem
    md: ModelData
    search: Search
    master: Master
    extra: Extra | None
    limit_s: float
    started: float
    family: Family | None = None
    compute_order: tuple[int, ...] | None = None  # a task graph's, as chosen (milp/compute_order.py)
    compute_status: str | None = None  # how it was chosen (``ComputeOrder.status``)

    @property
    def model(self) -> pyo.ConcreteModel:
        """The master MILP (``milp/master.py``) as it stands: before ``run``, without evaluation cuts."""
        return self.master.model

    @property
    def optimize(self) -> bool:
        return self.problem.schedule.order == "optimize"

    def write(self, path: str | Path) -> Path:
        """Write the master MILP as it stands, its format by the suffix (``.lp``, ``.mps``), names kept."""
        import pyomo.environ  # noqa: F401  (the LP and MPS writers are plugins that environ registers)
        self.master.model.write(str(path), io_options={"symbolic_solver_labels": True})
        return Path(path)


def build(problem: Problem, *, time_limit: float | None = None, extra: Extra | None = None,
          refine_s: float = 0.0, started: float | None = None, family: Family | None = None) -> Built:
    """The first stage of ``solve``: check the problem, gather its model data and build the master MILP
    (with ``extra`` applied). The arguments are ``solve``'s; the time limit counts from ``started``.
    ``family``: a ``Family`` that ``problem`` belongs to (``Family.admits``), whose model data, master,
    replays and cuts the solve uses and extends; the answer is the same as without it, within the MIP gap
    (when no time limit cuts either search short: a member that reads what the family knows gets further)."""
    t0 = time.perf_counter() if started is None else started
    precheck(problem)
    limit = time_limit if time_limit is not None else problem.solver.time_limit_s
    # a task graph's compute order, before the design search, within half the time the solve has left
    problem, order = with_compute_order(problem, max(0.01, 0.5 * (t0 + limit - time.perf_counter())))
    if family is not None and not family.admits(problem, extra):
        raise ValueError("the problem is not a member of the family it was given")
    md = family.data(problem) if family is not None else model_data(problem)
    check_ranges(md, set(unusable(problem.engine)))
    optimize = problem.schedule.order == "optimize"
    if family is not None:
        evaluate = family.evaluator(md)
    else:
        evaluate = optimize_evaluator(md, refine_s) if optimize else policy_evaluator(md)
    search = Search(md, evaluate, deadline=t0 + limit, exact=not optimize)
    if time.perf_counter() >= search.deadline:
        raise SolverError(f"the time limit ({limit:g} s) passed before the search could start (starting and "
                          f"loading the problem took {time.perf_counter() - t0:.2f} s); raise it (--time-limit)")
    master = family.master(md, search) if family is not None else search.master(extra=extra)
    return Built(problem, md, search, master, extra, limit, t0, family, order.order if order else None,
                 order.status if order else None)


def run(built: Built) -> SearchResult:
    """The second stage: the design search (master solves and simulator evaluations) until the master
    settles on an evaluated design or the time limit passes. Raises InfeasibleError when no design
    qualifies (with the reason) and SolverError when the time ran out before any answer."""
    search, master, limit = built.search, built.master, built.limit_s
    res = search.run(master)
    if built.optimize and master.objective == "iteration_time" and not master.custom:
        from .order_search import prove  # the gap left open: every design's bound, the order searched
        res = prove(built.problem, res, built.started + limit)
    if res.status == "infeasible" and (not search.visits or not built.optimize):
        raise InfeasibleError(_explain_infeasible(search, built.extra))
    if res.visit is None and search.visits and master.time_target_us is not None:
        fastest = min(v.simulated_us for v in search.visits) * TIME_UNIT
        target = format_quantity(master.time_target_us * TIME_UNIT, SECONDS)
        if res.status == "infeasible":  # order: optimize, the master out of designs: each simulated, or covered
            least = min(v.evaluation.period_us for v in search.visits) * TIME_UNIT
            raise SolverError(f"no design and order found that meet the iteration-time target {target}: "
                              f"{res.stopped} ({search.evaluated} simulated) under the orders the search tries, "
                              f"the fastest {format_quantity(fastest, SECONDS)}; not proven infeasible: the orders are "
                              f"heuristics', and the proven any-order bounds go down to "
                              f"{format_quantity(least, SECONDS)}")
        elapsed = time.perf_counter() - built.started
        raise SolverError(f"no design was found that meets the iteration-time target {target} (the fastest "
                          f"simulated: {format_quantity(fastest, SECONDS)}) before the search stopped after "
                          f"{elapsed:.3g} s of its {limit:g} s: {res.stopped}; not proven infeasible: raise the "
                          "time limit (--time-limit)")
    if res.visit is None and not (built.optimize and search.visits):
        raise SolverError(f"no design was evaluated within the time limit ({limit:g} s; the search stopped after "
                          f"{time.perf_counter() - built.started:.3g} s: {res.stopped or 'no reason recorded'})"
                          + (f"; the best possible period is at least {format_quantity(res.bound * TIME_UNIT, SECONDS)}"
                             if res.bound is not None and master.objective == "iteration_time" else "")
                          + "; raise it (--time-limit)")
    return res


def assign(built: Built, res: SearchResult, *, diagnose: bool = False, duals: bool = False,
           order_bound: bool = True) -> Solution:
    """The last stage: the answer as a Solution (status, objective, bound, gap, the design and the
    schedule the simulator ran). Minimizing area or power, ties on the objective go to the faster design.
    ``diagnose`` adds the master's statistics; ``duals`` keeps the platform LP's duals at the answer
    (``Solution.duals``, what ``shadow_prices`` reads). ``order_bound`` False: no any-order bound at the
    answer (``Solution.any_order_bound_s`` None) unless ``order: optimize``, whose notes carry it."""
    search, master = built.search, built.master
    custom = master.custom
    chosen, status, objective, bound = _answer(search, master, res, built.optimize, custom)
    if status == "optimal" and built.md.sized and not custom and master.objective != "iteration_time":
        # (minimizing time, the search already evaluates the least-area design among those tied)
        chosen = _tie_break(search, master, chosen, built.extra)
    sol = _solution(built.md, search, master, res, chosen, status, objective, bound, custom, diagnose,
                    0.0, built.family, order_bound)
    sol = dataclasses.replace(sol, solve_time_s=time.perf_counter() - built.started)  # the answer's making too
    if built.family is not None:
        built.family.keep(master)
        built.family.remember(built.problem, sol)
    if built.compute_order is not None:
        sol = dataclasses.replace(sol, compute_order=built.compute_order)
    if built.compute_status in ("heuristic", "feasible"):
        sol = _unproven_order(built, sol)
    if duals:
        from .shadow import platform_duals
        sol = dataclasses.replace(sol, duals=platform_duals(built.problem, sol))
    return sol


def _unproven_order(built: Built, sol: Solution) -> Solution:
    """A solution whose task graph runs a compute order not proven best (a list schedule's, or the order MILP
    stopped by its time limit): the design search proves its answer for that order only. Minimizing time,
    the bound becomes one for every compute order too: the resource loads (``schedule/bounds.py``: sums
    over the tasks, the same in any order) at each resource's largest option, which no design undercuts;
    the gap is what that leaves. Otherwise "optimal" stands for that order only and becomes "feasible"."""
    p = built.problem
    how = "a list schedule's" if built.compute_status == "heuristic" else "the order MILP's best in its time"
    if sol.objective_kind != "iteration_time" or sol.bound_s is None:
        status = "feasible" if sol.status == "optimal" else sol.status
        return dataclasses.replace(sol, status=status, notes=(*sol.notes, (
            f"the compute order is {how}, not proven best: the answer is proven for that order only")))
    from ..schedule.bounds import lower_bound
    largest = {r: max(range(len(opts)), key=lambda o: opts[o].value) for r, opts in built.md.space.items()}
    any_order = lower_bound(at_design(p, largest), design_of(p.engine, largest)).bound_s
    bound = min(sol.bound_s, any_order)
    gap = _gap(sol.iteration_time_s, bound)
    status = "feasible" if sol.status == "optimal" and gap > TIE else sol.status
    return dataclasses.replace(sol, status=status, bound_s=bound, objective_bound=bound, gap=gap, notes=(
        *sol.notes, f"the compute order is {how}, not proven best; under any compute order no design replays "
        f"faster than {format_quantity(bound, SECONDS)} (proven: the resource loads at the largest options), "
        f"{100 * gap:.2f}% below the answer"))


def solve(problem: Problem, *, time_limit: float | None = None, extra: Extra | None = None,
          diagnose: bool = False, refine_s: float = 0.0, started: float | None = None,
          family: Family | None = None, order_bound: bool = True) -> Solution:
    """Solve ``problem``: the design whose simulated period is least (or the smallest that meets the
    target), with its steady-state schedule as simulated: ``assign(b, run(b))`` for ``b = build(...)``.

    ``time_limit`` (s) overrides the problem's and bounds the whole solve. ``extra(model, problem)``, if
    given, is called on the master MILP after it is built and before it is solved (README: "Adding your
    own constraints"). ``diagnose`` adds the master's statistics to ``Solution.diagnostics``.
    ``refine_s``: with ``order: optimize``, seconds per design for refining dispatch priorities.
    ``started``: the ``time.perf_counter()`` the time limit counts from (the command line passes its
    own start, so the limit is the whole command's); default: now.
    ``family``: a ``Family`` the problem belongs to (``build``'s): its answer may be an earlier member's
    (``Family.proven``), or proven with the family's cuts; the same answer as without it, within the MIP gap
    (when no time limit cuts either search short).
    ``order_bound`` False skips the any-order bound at the answer (``Solution.any_order_bound_s`` None) unless
    ``order: optimize`` needs it: a sweep's rows do not carry it, and it is a tenth of a quickstart point.
    Raises InfeasibleError (with the reason) or SolverError.
    """
    if family is not None and not diagnose and family.admits(problem, extra):
        precheck(problem)
        known = family.proven(problem, time.perf_counter() if started is None else started)
        if known is not None:
            if order_bound and known.any_order_bound_s is None:  # the member's solve skipped it
                q = at_design(problem, known.choice)
                bound, _ = family.any_order_bound_s(q, design_of(problem.engine, known.choice), known.choice)
                known = dataclasses.replace(known, any_order_bound_s=bound)
            return known
    built = None
    try:
        built = build(problem, time_limit=time_limit, extra=extra, refine_s=refine_s, started=started, family=family)
        return assign(built, run(built), diagnose=diagnose, order_bound=order_bound)  # (keeps the master)
    except BaseException as e:
        if family is not None and built is not None:
            family.keep(built.master)
        if isinstance(e, InfeasibleError) and family is not None and family.admits(problem, extra):
            family.remember_infeasible(problem, str(e))
        raise


def _answer(search: Search, master: Master, res: SearchResult, optimize: bool,
             custom: bool) -> tuple[Visit, str, float, float | None]:
    """The design to report, its status, objective and bound, in the objective's unit."""
    if res.visit is None:  # order: optimize, every design evaluated, none meeting the target
        fastest = min(v.simulated_us for v in search.visits) * TIME_UNIT
        raise InfeasibleError("no design and order found that meet the iteration-time target "
                              f"{format_quantity(master.time_target_us * TIME_UNIT, SECONDS)}; the orders tried reach "
                              f"at best {format_quantity(fastest, SECONDS)}")
    return res.visit, res.status, res.objective, res.bound


def _tie_break(search: Search, master: Master, chosen: Visit, extra: Extra | None) -> Visit:
    """Minimizing area or power: among designs as good as the optimum (within TIE), the one with the
    shortest simulated period, by a second, lexicographic search over the same evaluations. (Minimizing
    time, the search itself evaluates the least-area design of those tied on its bound.)"""
    first = master.objective
    eng = search.md.engine
    value = {"area": lambda c: design_area_mm2(eng, c), "power": lambda c: design_power_w(eng, c),
             "network_cost": lambda c: network_cost(search.md.problem, c)}[first]
    best = value(chosen.choice)
    second = search.master(objective="iteration_time", extra=extra)
    keep = {"area": second.model.area, "power": second.model.power, "network_cost": second.model.network_cost}[first]
    second.model.lexicographic = pyo.Constraint(expr=keep <= best * (1 + TIE) + 1e-9)
    if master.time_target_us is not None:
        second.model.time_target = pyo.Constraint(expr=second.model.T <= master.time_target_us)
    res = search.run(second)
    if res.status != "optimal" or res.visit is None:
        return chosen
    return res.visit


def _explain_infeasible(search: Search, extra: Extra | None) -> str:
    """Why no design qualifies, in the user's terms, by searching relaxed versions of the problem."""
    md = search.md
    p = md.problem
    e = p.engine
    if extra is not None and search.run(search.master()).visit is not None:  # (a time limit alone proves nothing)
        return "the problem is feasible without your extra constraints; they make it infeasible"
    target = p.objective.iteration_time_target_s
    if target is not None:
        res = search.run(search.master(objective="iteration_time"))
        if res.visit is not None:
            best = res.visit.simulated_us * TIME_UNIT
            proven = "" if res.status == "optimal" else " (best found; not proven fastest within the time limit)"
            return (f"iteration-time target {format_quantity(target, SECONDS)} < best achievable "
                    f"{format_quantity(best, SECONDS)} within the budgets{proven} (short by "
                    f"{format_quantity(best - target, SECONDS)})")
    if e.area_budget_mm2 is not None and e.power_budget_w is not None:
        lifted = dataclasses.replace(p, engine=dataclasses.replace(e, area_budget_mm2=None))
        m = Master(ModelData(lifted, md.iteration, md.demands), objective="area")
        st = m.solve(p.solver, max(0.1, search.deadline - time.perf_counter()))
        if st.has_solution:
            return (f"no configuration meets both budgets: area budget {e.area_budget_mm2:g} mm^2 < smallest area "
                    f"{st.objective:g} mm^2 among configurations within the power budget {e.power_budget_w:g} W")
    return "the constraints admit no design (check budgets, targets and extra constraints)"


def schedule_of(md: ModelData, sim: SimResult) -> tuple[tuple[ScheduledTask, ...], tuple[tuple[int, int], ...], float]:
    """The reference iteration as the replay ran it (s from its first compute task): compute tasks and
    collectives (first chunk-phase start to last chunk-phase end); the collectives in the order their first
    chunk started; and the sum of their spans (s)."""
    r = sim.realized
    p = md.problem
    it = md.iteration
    base = r.compute_start[0]
    tasks = []
    for j, c in enumerate(it.computes):
        layer = p.workload.layers[c.layer].name if c.layer >= 0 else ""
        tasks.append(ScheduledTask(c.name, c.kind, layer, r.compute_start[j] - base, r.compute_end[j] - base))
    spans: dict[int, list[float]] = {}
    for (k, _, _), s in r.phase_start.items():
        span = spans.setdefault(k, [s, s])
        span[0] = min(span[0], s)
    for (k, _, _), e in r.phase_end.items():
        span = spans[k]
        span[1] = max(span[1], e)
    total = 0.0
    for k, c in enumerate(it.comms):
        if k in spans:
            s, e = spans[k]
        else:  # no phase on any dimension: done at its release
            s = e = r.compute_end[c.issue_after]
        total += e - s
        tasks.append(ScheduledTask(c.name, "comm", p.workload.layers[c.layer].name, s - base, e - base))
    tasks.sort(key=lambda t: (t.start_s, t.kind == "comm"))
    order = tuple((k, 0) for k in sorted(spans, key=lambda k: (spans[k][0], k)))
    return tuple(tasks), order, total


def _solution(md: ModelData, search: Search, master: Master, res: SearchResult, chosen: Visit, status: str,
              objective: float, bound: float | None, custom: bool, diagnose: bool, wall: float,
              family: Family | None = None, order_bound: bool = True) -> Solution:
    p = md.problem
    choice = chosen.choice
    design = design_of(p.engine, choice)
    replayed: Replayed = chosen.payload
    sim = replayed.sim
    if not replayed.own or sim.realized is None:  # a covering design's replay, or one not recorded: the answer's
        # own, which must be the same
        sim = simulate(at_design(p, choice), design, policy=replayed.policy, order=replayed.priority, record=True)
        if abs(sim.period_s - replayed.sim.period_s) > 1e-9 * sim.period_s:
            raise SolverError(f"the design's replay ({sim.period_s:.9g} s) differs from the covering design's "
                              f"({replayed.sim.period_s:.9g} s): a plateau did not hold")
    T = sim.period_s
    what = "custom" if custom else master.objective
    notes = []
    if custom:
        notes.append("the objective is the extra hook's own; objective and bound are in its units")
    if res.enumerated:
        notes.append(f"HiGHS failed on the master MILP ({res.stats.termination}; periods of "
                     f"{format_quantity(T, SECONDS)} strain its tolerances): the designs were simulated in "
                     "order of their floors (the master's LP at each design, a proven lower bound) instead")
    # the gap of the numbers reported: the simulated period (or the objective at the design) against the bound
    bound_s = min(bound * TIME_UNIT, T) if (what == "iteration_time" and bound is not None) else None
    gap = _gap(T, bound_s) if what == "iteration_time" else _gap(objective, bound)
    if status == "optimal" and gap is not None and gap > TIE:
        status = "feasible"
        notes.append(f"the bound is {100 * gap:.2g}% below the answer, above the tie tolerance ({TIE:g}): "
                     "not proven optimal")
    if status == "time_limit":
        notes.append("time limit reached: the design is the best found, " + (
            f"within {100 * gap:.2f}% of the bound" if gap is not None else "with no bound proven for the designs left")
            + ", not proven optimal")
    g = p.workload.task_graph
    if g is not None and g.decided:  # the design's status is about the program in this compute order
        notes.append(g.decided + "; the design search runs that order")
    net = p.network
    ranged = [f"{d} ({p.topology.dims[d].name})" for d, t in enumerate(net.tolerance) if t is not None] if net else []
    continuous = None
    if ranged:
        notes.append(f"bandwidth of dim {', '.join(ranged)} searched on a geometric grid (ratio 1 + tolerance): the "
                     "status and bound are about the grid; bandwidths between its points were not replayed")
        if what == "iteration_time":
            continuous = continuous_bound_us(md, search.deadline)
            if continuous is not None:
                continuous *= TIME_UNIT
                notes.append(f"no bandwidth anywhere in the ranges replays faster than "
                             f"{format_quantity(continuous, SECONDS)} (proven: the relaxation over each grid cell); "
                             f"the answer is within {100 * max(0.0, T - continuous) / T:.2f}% of it")
    any_bound, binding = None, ""
    if order_bound or p.schedule.order == "optimize":
        any_bound, binding = (family.any_order_bound_s(at_design(p, choice), design, choice) if family is not None
                              else any_order_bound_s(at_design(p, choice), design))
    if p.schedule.order == "optimize":
        notes.append(f"no order replays faster than {format_quantity(any_bound, SECONDS)} at this design (proven, "
                     f"set by {binding}); the best order found is {100 * (T - any_bound) / T:.2f}% above it")
        if status == "feasible":
            notes.append("the search ended with the gap open: the orders tried do not reach the bound, which "
                         "may or may not be reachable")
    tasks, order, comm_total = schedule_of(md, sim)
    scale = TIME_UNIT if what == "iteration_time" else 1.0
    diagnostics = None
    if diagnose:
        from ..milp.diagnostics import search_diagnostics
        diagnostics = search_diagnostics(master, res, search)
    return Solution(
        problem=p.name, engine=p.engine.kind, objective_kind=what, status=status, iteration_time_s=T,
        # (the master's microseconds times 1e-6 can land an ulp above the replay's seconds: bound_s is at most T)
        bound_s=bound_s, objective=T if what == "iteration_time" else objective,
        objective_bound=(bound_s if bound_s is not None else bound * scale) if bound is not None else None, gap=gap,
        solve_time_s=wall, design=dict(design.values), choice=dict(choice),
        area_mm2=design_area_mm2(p.engine, choice), power_w=design_power_w(p.engine, choice),
        compute_time_s=sim.compute_time_s, exposed_comm_s=max(0.0, T - sim.compute_time_s), comm_time_s=comm_total,
        schedule=tasks, order_policy=p.schedule.order, order=order, evaluations=search.evaluated,
        master_solves=res.master_solves, model=res.size, chunks=p.schedule.chunks, notes=tuple(notes),
        order_comparison=dict(replayed.tried) if replayed.tried else None, diagnostics=diagnostics,
        any_order_bound_s=any_bound, priority=replayed.priority, sim=sim, network=network_choice(p, choice),
        continuous_bound_s=continuous)


def continuous_bound_us(md: ModelData, deadline: float) -> float | None:
    """A proven lower bound (us) on the simulated period of every design whose ranged bandwidths lie
    anywhere in their ranges, not only on the grid (None without a range, or if HiGHS runs out of time).

    The master's relaxation (formulation.md, section 3) with each grid option standing for its whole cell
    (``ModelData.cells``: link times at the cell's upper bandwidth, which no bandwidth of the cell beats,
    and cost at its lower, which none undercuts), without evaluation cuts, which hold only at grid designs;
    interval cuts are added while the master's design violates one (they hold for every design)."""
    net = md.problem.network
    if net is None or all(t is None for t in net.tolerance) or time.perf_counter() >= deadline:
        return None  # (past the deadline not even built: building it took a second past a 6 s limit)
    master = Master(ModelData(md.problem, md.iteration, md.demands, cells=True), objective="iteration_time")
    spec = md.problem.solver
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        st = master.solve(spec, left)
        if st.status == "infeasible":
            return None
        if st.status != "optimal" or st.bound is None:
            return None
        from .search import choice_from
        if not master.interval_cuts(choice_from(master), pyo.value(master.model.T)):
            return st.bound


def network_choice(p: Problem, choice: dict[str, int]) -> NetworkChoice | None:
    """The network at ``choice``: per dimension its link bandwidth, the NPU's bandwidth into it and its
    cost; the total against the budget (None without a network design space)."""
    net = p.network
    if net is None:
        return None
    topo = at_design(p, choice).topology
    costs = net.costs(p.topology, choice)
    return NetworkChoice(tuple(d.name for d in topo.dims), tuple(d.link_bandwidth for d in topo.dims),
                         tuple(d.bandwidth for d in topo.dims), tuple(costs), sum(costs), net.budget, net.unit,
                         tuple(len(b) for b in net.bandwidths), tuple(net.tolerance))


def _gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    return max(0.0, objective - bound) / max(abs(objective), 1e-12)


def durations(md: ModelData, choice: dict[str, int]) -> tuple[list[float], list[float]]:
    """Compute and collective durations (s) at a design in the serial network model (schedule/serial.py):
    what the examples use to bound a period from above."""
    from ..platform.costs import collective_time, compute_time
    design = design_of(md.engine, choice)
    pc = [compute_time(c.demand, md.engine, md.problem.npu, design) for c in md.iteration.computes]
    dc = [collective_time(dem, md.engine, md.problem.npu, design) for dem in md.demands]
    return pc, dc

