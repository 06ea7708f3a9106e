"""Solving a Pyomo model with HiGHS and reporting what came back, honestly.

Uses Pyomo's newer solver interface (``pyomo.contrib.solver``), which reports the termination
condition, the incumbent and the best bound without raising on a non-optimal result.

The MILP modules import ``pyomo.core`` (the modelling components, as ``pyo``), not ``pyomo.environ``: environ
also loads every plugin Pyomo ships (GDP, DAE, writers, transformations, a dozen solver interfaces), half of
Pyomo's import time and none of it used by a solve; the one interface used, HiGHS's, is imported itself
(``pyomo_highs``). What needs a plugin imports ``pyomo.environ`` where it needs it (an LP/MPS writer, a
transformation).
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyomo.core as pyo
from pyomo.common.numeric_types import native_numeric_types
from pyomo.contrib.solver.common.results import TerminationCondition as TC
from pyomo.core.expr.numeric_expr import (
    DivisionExpression,
    LinearExpression,
    MonomialTermExpression,
    NegationExpression,
    ProductExpression,
    SumExpression,
)

from ..errors import SolverError
from ..problem.model import SolverSpec
from .size import ModelSize


@dataclass(frozen=True)
class SolveStats:
    """What the solver said: ``status`` is optimal | time_limit | infeasible | error; objective and bound
    are in the objective's units (microseconds for time, mm^2, W); gap is relative."""

    status: str
    termination: str
    objective: float | None
    bound: float | None
    gap: float | None
    solve_time_s: float
    size: ModelSize
    has_solution: bool


def model_size(m: pyo.ConcreteModel) -> ModelSize:
    """Counts of the variables HiGHS sees (fixed ones are presolved away by Pyomo) and active constraints."""
    vs = [v for v in m.component_data_objects(pyo.Var, active=True) if not v.fixed]
    ncons = sum(1 for _ in m.component_data_objects(pyo.Constraint, active=True))
    return ModelSize(len(vs), sum(1 for v in vs if v.is_binary()), ncons)


#: HiGHS heuristics the design master runs without (``CompiledModel.solve``); benchmarks/highs_heuristics.py
#: turns each back on to measure it. The sub-MIPs (RINS, RENS, root reduced cost): the master has a few dozen
#: binaries at most, which branch-and-bound settles in a few nodes, while a sub-MIP presolves the whole model
#: (65 s of the 500-layer problem's master after its first cut, past the time limit, which HiGHS does not
#: check there; 2-5 s of each of GPT-3 175B's master runs). Feasibility jump: most of a small master's run,
#: for an incumbent the tree finds anyway. Every design, period and status of the 69 regret files is the
#: same without them (BENCHMARKS.md, "Design search: regret" and "HiGHS's heuristics").
HEURISTICS = {"mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False,
              "mip_heuristic_run_root_reduced_cost": False, "mip_heuristic_run_feasibility_jump": False}


def set_time_limit(h: Any, left_s: float, lp: bool) -> None:
    """Give the next run of the Highs ``h`` ``left_s`` seconds (at least 10 ms). HiGHS's clock runs on across
    the runs of one Highs: a MIP's limit counts from its own start, an LP's from the clock's (highspy 1.16),
    so an LP's limit gets the clock added."""
    h.setOptionValue("time_limit", max(0.01, left_s) + (h.getRunTime() if lp else 0.0))


@contextlib.contextmanager
def own_scheduler() -> Iterator[None]:
    """HiGHS's thread pool dropped before and after the runs within (whatever happens in between). HiGHS keeps
    one per process, sized by the run that starts it; a run that asks for another number of threads fails
    while it lives (a solve through Pyomo that names none takes every core; codesign's runs take one,
    ``new_highs``, or the problem's ``solver.threads``), so each solve here starts and leaves none."""
    import highspy
    highspy.Highs.resetGlobalScheduler(True)
    try:
        yield
    finally:
        highspy.Highs.resetGlobalScheduler(True)


def pyomo_highs(m: pyo.ConcreteModel, *, threads: int = 1, solver_options: dict | None = None, **options: Any):
    """One solve of ``m`` through Pyomo's HiGHS interface, silent, its solution left unloaded, HiGHS's thread
    pool reset around it (``own_scheduler``); ``options`` are the interface's (``time_limit``, ``rel_gap``).
    Returns Pyomo's results."""
    from pyomo.contrib.solver.solvers.highs import Highs  # what SolverFactory("highs") makes, without the registry

    with own_scheduler():
        return Highs().solve(m, load_solutions=False, raise_exception_on_nonoptimal_result=False,
                                            tee=False, threads=threads,
                                            solver_options={"output_flag": False, **(solver_options or {})},
                                            **options)


def solve_model(m: pyo.ConcreteModel, spec: SolverSpec, time_limit_s: float | None = None) -> SolveStats:
    """Solve with HiGHS; load the incumbent into the model when there is one."""
    limit = time_limit_s if time_limit_s is not None else spec.time_limit_s
    t0 = time.perf_counter()
    res = pyomo_highs(m, threads=spec.threads, time_limit=limit, rel_gap=spec.mip_gap,
                      solver_options={"presolve": "on" if spec.presolve else "off"})
    wall = time.perf_counter() - t0
    tc = res.termination_condition
    inc = res.incumbent_objective
    bound = res.objective_bound
    has = inc is not None and math.isfinite(inc)
    if has:
        res.solution_loader.load_vars()
    if tc == TC.convergenceCriteriaSatisfied:
        status = "optimal"
    elif tc in (TC.maxTimeLimit, TC.iterationLimit, TC.interrupted):
        status = "time_limit"
    elif tc in (TC.provenInfeasible, TC.infeasibleOrUnbounded, TC.locallyInfeasible):
        status = "infeasible"
    else:
        status = "error"
    if bound is not None and not math.isfinite(bound):
        bound = None
    gap = None
    if has and bound is not None:
        gap = abs(inc - bound) / max(abs(inc), 1e-12)
    return SolveStats(status, tc.name, inc if has else None, bound, gap, wall, model_size(m), has)


def new_highs() -> Any:
    """A silent highspy.Highs on one thread, its start-up banner kept off stdout (``--json`` prints only JSON
    there). One thread unless a caller sets more (``CompiledModel.solve`` sets the problem's): HiGHS's default
    (0, automatic) starts a helper thread at each run after its thread pool is reset (``own_scheduler``),
    which spins for work a serial simplex never gives it (a quickstart sweep: 0.28 s of CPU in 1.74 s),
    taking a core from the sweep's other worker."""
    import os
    import sys
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            import highspy
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    return h


# ---------------------------------------------------------------------------------------------------
# A Pyomo model compiled once into highspy, then re-solved as rows are added: the design master is
# solved many times with a few cuts more each time, and Pyomo's own interface re-translates the whole
# model on every solve (about 0.5 s for ResNet-50's master, against 0.05 s for HiGHS itself).

@dataclass
class _Pending:
    """A model being compiled, before it goes to HiGHS: columns (bounds, which are integer), the objective's
    costs and the rows in compressed form (each row's start in ``index`` and ``value``)."""

    lo: list[float] = field(default_factory=list)
    hi: list[float] = field(default_factory=list)
    integers: list[int] = field(default_factory=list)
    cost: Any = ()
    row_lo: list[float] = field(default_factory=list)
    row_hi: list[float] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    index: list[int] = field(default_factory=list)
    value: list[float] = field(default_factory=list)


#: Rows a model needs before any are held back (``_Held``; our calibration): on the quickstart's 73-row master
#: a HiGHS run costs 1-3 ms whatever its rows, so the runs that give HiGHS a held row back cost more than the
#: rows did (a 40-point sweep: 5.1 runs a point instead of 2.85); DLRM's 172-179-row and GNMT's 244-286-row
#: masters about break even in a single solve (131-138 and 187-231 rows at the build since link times became
#: bounds: DLRM's now below this), and ResNet-50's 1,100-row one (828 now) gains most in sweeps, 1.5-1.6x
#: (BENCHMARKS.md, "Compiled in one call, pools kept, rows held back").
HOLD_MIN_ROWS = 150
#: Rows above which a model is left whole (our calibration): GPT-3 175B's 6,966-row master and the 500-layer
#: problem's 12,109-row one need most of their held rows within their first solve, found over 4-5 runs of
#: 0.2-1.5 s each, more than the rows they leave out save (0.87x and 0.76x in benchmarks/held_rows.py).
HOLD_MAX_ROWS = 5000
#: The share of its held rows a model gives HiGHS before it gives them all (our calibration): GPT-3 175B's
#: master needed 1,750 of its 2,661 held rows in its first solve, and more in later ones, a run each time
#: (22 runs instead of 12, each 0.2-1 s); ResNet-50's needs about 175 of its 391, most in its first solve.
GIVE_ALL = 0.5


@dataclass
class _Held:
    """The build's rows that HiGHS is given only once a solution breaks them (``CompiledModel.solve``): rows
    that every column at 0 satisfies (their bounds admit a zero activity) and that read a continuous
    column. In the design master these are the option-dependent phase bounds and the SRAM options' gated
    rows, most of which never bind at the master's answers, while HiGHS's root pays for every row on every
    run (ResNet-50's master: 1,100 rows then, about 50 ms a run; the 880 rows it needed, 6-17 ms). Without a
    held row HiGHS solves a relaxation of the model, so its bound holds for the model; an answer that breaks
    no held row is the model's answer. Rows of integer columns alone (a choice, a budget) are never held:
    they decide which designs exist, and holding them back would cost a run wherever a budget binds."""

    member: np.ndarray   # per build row: held back at the build
    rows: np.ndarray     # the held rows' numbers among the model's rows
    starts: np.ndarray   # the held rows in compressed form: each row's start in index and value
    index: np.ndarray
    value: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    given: np.ndarray    # per held row: given to HiGHS since the build

    @classmethod
    def of(cls, pend: _Pending, ncols: int, integers: set[int], hold: bool = True) -> _Held:
        """The rows of ``pend`` to hold back (none unless ``hold``)."""
        starts = np.array(pend.starts + [len(pend.index)], dtype=np.int64)
        index = np.array(pend.index, dtype=np.int64)
        lo, hi = np.array(pend.row_lo, dtype=float), np.array(pend.row_hi, dtype=float)
        continuous = np.ones(ncols, dtype=bool)
        continuous[list(integers)] = False
        reads = np.zeros(len(lo), dtype=bool)
        if len(index):
            reads = _row_sums(continuous[index].astype(np.int64), starts) > 0
        member = reads & (lo <= 0.0) & (hi >= 0.0) & hold
        rows = np.flatnonzero(member)
        st, ix, va = _select(starts, pend.index, pend.value, rows)
        return cls(member, rows, st, ix, va, lo[rows], hi[rows], np.zeros(len(rows), dtype=bool))

    def copy(self) -> _Held:
        return dataclasses.replace(self, lo=self.lo.copy(), hi=self.hi.copy(), given=self.given.copy())

    def move(self, row: int, lo: float, hi: float) -> None:
        """New bounds for the held row ``row`` (a model row number)."""
        i = int(np.searchsorted(self.rows, row))
        self.lo[i], self.hi[i] = lo, hi

    def broken(self, x: np.ndarray, tol: float) -> np.ndarray:
        """The held rows not yet given to HiGHS that ``x`` breaks by more than ``tol`` (HiGHS's own
        feasibility tolerance, which it allows on the rows it holds), as positions among the held rows."""
        left = np.flatnonzero(~self.given)
        if not len(left):
            return left
        act = _row_sums(self.value * x[self.index], self.starts)[left]
        return left[(act < self.lo[left] - tol) | (act > self.hi[left] + tol)]


def _row_sums(v: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per row of a compressed matrix (``starts`` one longer than its rows), the sum of ``v`` over its entries;
    0 for an empty row, trailing ones too (``np.add.reduceat`` alone refuses a start at the end of ``v``)."""
    sums = np.add.reduceat(np.append(v, 0), starts[:-1]) if len(starts) > 1 else np.zeros(0, dtype=v.dtype)
    return np.where(starts[:-1] == starts[1:], 0, sums)


def _select(starts: Any, index: Any, value: Any, rows: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows ``rows`` of a compressed matrix (``starts`` one longer than its rows, ``index``, ``value``),
    in compressed form: starts (one longer than ``rows``), index, value."""
    out_starts, out_index, out_value = [0], [], []
    for r in rows:
        out_index.extend(index[starts[r]:starts[r + 1]])
        out_value.extend(value[starts[r]:starts[r + 1]])
        out_starts.append(len(out_index))
    return (np.array(out_starts, dtype=np.int64), np.array(out_index, dtype=np.int64),
            np.array(out_value, dtype=float))


class _Unhandled(Exception):
    """An expression ``_sum_of_terms`` leaves to Pyomo's own walker."""


def _sum_of_terms(expr) -> tuple[float, list[tuple[Any, float]]]:
    """The constant and the (variable, coefficient) terms of ``expr`` when it is built only of numbers,
    variables, sums, negations, products and quotients by numbers, and named expressions: what the masters
    are made of, read here at a fraction of the cost of Pyomo's general walker. Raises ``_Unhandled`` on
    anything else (a parameter, a nonlinear term), which the caller then gives to Pyomo's walker. A
    variable may appear in several terms; fixed variables are left to the caller."""
    const = 0.0
    terms: list[tuple[Any, float]] = []
    stack: list[tuple[Any, float]] = [(expr, 1.0)]
    while stack:
        e, k = stack.pop()
        t = type(e)
        if t in native_numeric_types:
            const += k * e
        elif t is MonomialTermExpression:
            c, v = e.args
            if type(c) not in native_numeric_types:
                raise _Unhandled
            terms.append((v, k * c))
        elif t is LinearExpression or t is SumExpression:
            stack.extend((a, k) for a in reversed(e.args))  # popped left to right, as Pyomo walks
        elif t is NegationExpression:
            stack.append((e.args[0], -k))
        elif t is ProductExpression:
            a, b = e.args
            if type(a) in native_numeric_types:
                stack.append((b, k * a))
            elif type(b) in native_numeric_types:
                stack.append((a, k * b))
            else:
                raise _Unhandled
        elif t is DivisionExpression:
            a, b = e.args
            if type(b) not in native_numeric_types:
                raise _Unhandled
            stack.append((a, k / b))
        elif getattr(e, "is_variable_type", None) is not None and e.is_variable_type():
            terms.append((e, k))
        elif getattr(e, "is_named_expression_type", None) is not None and e.is_named_expression_type():
            stack.append((e.expr, k))
        else:
            raise _Unhandled
    return const, terms


class CompiledModel:
    """A linear Pyomo model (after any hooks changed it) held by highspy. ``add(lo, expr, hi)`` adds a
    row for a linear expression over the model's variables; ``solve`` runs HiGHS and loads the incumbent
    into the Pyomo variables, so ``pyo.value`` reads it as after a Pyomo solve."""

    def __init__(self, m: pyo.ConcreteModel, structural: Any = ()):
        import highspy
        from pyomo.repn.linear import LinearRepnVisitor
        from pyomo.repn.util import VarRecorder
        self.model = m
        self.var_map: dict[int, Any] = {}
        self.visitor = LinearRepnVisitor({}, var_recorder=VarRecorder(self.var_map, None))
        self.col: dict[int, int] = {}
        self.vars: list[Any] = []
        self.h = new_highs()
        self.inf = highspy.kHighsInf
        self._error = highspy.HighsStatus.kError
        self._integer = highspy.HighsVarType.kInteger
        # the build gathers columns, the objective and rows here and hands them to HiGHS in one call each
        # (``_flush``): one call per row or column is most of a small master's compile
        self._pending: _Pending | None = _Pending()
        # the last incumbent, handed to the next run as its start (``solve``)
        self._start: Any = None
        #: a start for the next run only (columns, values), in place of the last incumbent
        self.hint: tuple[Any, Any] | None = None
        self._counted: tuple[int, bool, int, int] | None = None  # _counts, by the number of columns
        self._objectives: dict[int, tuple[Any, float, dict[int, float]]] = {}  # set_objective's walks, by id
        objs = list(m.component_data_objects(pyo.Objective, active=True))
        if len(objs) != 1:
            raise ValueError(f"the model has {len(objs)} active objectives; HiGHS takes one")
        for v in m.component_data_objects(pyo.Var, active=True):
            self._column(v)
        # rows of these columns (and integer ones) alone are never held back (``_Held``)
        self._structural = {self.col[id(v)] for v in structural if id(v) in self.col}
        self.set_objective(objs[0].expr, objs[0].sense == pyo.minimize)
        self.model_rows = 0  # the model's rows: the build's and those added since (cuts)
        self.row_of: dict[int, tuple[int, float]] = {}  # id(constraint) -> (its row, the constant moved to the rhs)
        for con in m.component_data_objects(pyo.Constraint, active=True):
            lo, body, hi = con.to_bounded_expression(True)
            self.row_of[id(con)] = (self.model_rows, self.add(lo, body, hi))
        # every call that builds the model in HiGHS, in order, so that ``restart`` can make the same model
        # again without walking Pyomo's expressions; and the rows held back (``_Held``) as the build left them
        calls, held = self._flush()
        self.held = held
        self.built = (calls, len(self.vars), self.model_rows, held.copy(), self.sense, self.offset)

    @property
    def tolerance(self) -> float:
        """HiGHS's primal feasibility tolerance: how far its answers may break a row."""
        return float(self.h.getOptionValue("primal_feasibility_tolerance")[1])

    @property
    def rows(self) -> int:
        """The rows HiGHS holds: the model's less those held back and not yet needed (``_Held``)."""
        return len(self._hrows)

    def _flush(self) -> tuple[list[tuple[str, tuple]], _Held]:
        """Hand the build's columns, objective and rows to HiGHS, but for the rows held back (``_Held``); return
        the calls made and the rows held."""
        pend, self._pending = self._pending, None
        self._build = pend  # the build as compiled, for ``rebuild``
        calls, held = self._record(pend)
        self._hrows = [int(r) for r in np.flatnonzero(~held.member)]
        for name, args in calls:
            if getattr(self.h, name)(*args) == self._error:
                raise ValueError(f"HiGHS refused the model's {name} (a coefficient out of its range?)")
        return calls, held

    def _record(self, pend: _Pending) -> tuple[list[tuple[str, tuple]], _Held]:
        """The calls that hand a build (``pend``) to HiGHS, but for the rows held back (``_Held``), and those rows."""
        n = len(pend.lo)
        held = _Held.of(pend, n, set(pend.integers) | self._structural,
                        HOLD_MIN_ROWS <= len(pend.row_lo) <= HOLD_MAX_ROWS)
        given = np.flatnonzero(~held.member)
        calls: list[tuple[str, tuple]] = [("addVars", (n, np.array(pend.lo), np.array(pend.hi)))]
        if pend.integers:
            k = len(pend.integers)
            calls.append(("changeColsIntegrality", (k, np.array(pend.integers, dtype=np.int32),
                                                    np.full(k, self._integer))))
        cost = np.zeros(n)
        cost[:len(pend.cost)] = pend.cost
        calls.append(("changeColsCost", (n, np.arange(n, dtype=np.int32), cost)))
        if len(given):
            st, ix, va = _select(pend.starts + [len(pend.index)], pend.index, pend.value, given)
            calls.append(("addRows", (len(given), np.array(pend.row_lo)[given], np.array(pend.row_hi)[given], len(ix),
                                      st[:-1].astype(np.int32), ix.astype(np.int32), va)))
        return calls, held

    def rebuild(self, columns: dict[int, tuple[float, float]], rows: dict[int, Any]) -> None:
        """Make the build's record (what ``restart`` and ``relaxation`` hand HiGHS) the one a compile of the
        model as it now stands would make, for a model changed since its build only in the bounds of some
        columns, ``columns`` ({column: (lo, hi)}), and in the expressions of some of its rows, ``rows`` ({the
        build's row number: its constraint}, walked again); the same columns in the same order. HiGHS itself
        is left as it was: ``restart`` hands it the new record. The held rows (``_Held``) an answer needed are
        given again by the next ``restart``, as they are after a change of budgets, where still held."""
        calls, ncols, nrows, *_ = self.built
        b = self._build
        new = _Pending(lo=list(b.lo), hi=list(b.hi), integers=b.integers, cost=b.cost)
        for j, (lo, hi) in columns.items():
            new.lo[j], new.hi[j] = float(lo), float(hi)
        ends = b.starts[1:] + [len(b.index)]
        consts = {}
        for r in range(nrows):
            con = rows.get(r)
            if con is None:
                new.row_lo.append(b.row_lo[r])
                new.row_hi.append(b.row_hi[r])
                new.starts.append(len(new.index))
                new.index.extend(b.index[b.starts[r]:ends[r]])
                new.value.extend(b.value[b.starts[r]:ends[r]])
                continue
            lo, body, hi = con.to_bounded_expression(True)
            const, cols = self._linear(body)
            if len(self.vars) != ncols:
                raise ValueError("a row rebuilt reads a variable the build did not have")
            new.row_lo.append(-self.inf if lo is None else lo - const)
            new.row_hi.append(self.inf if hi is None else hi - const)
            new.starts.append(len(new.index))
            new.index.extend(cols)
            new.value.extend(cols.values())
            consts[id(con)] = (r, const)
        was = set(self.held.rows[self.held.given].tolist())  # rows an answer needed: given again by ``restart``
        calls, held = self._record(new)
        self._build = new
        self.row_of.update(consts)
        self.built = (calls, ncols, nrows, held.copy(), *self.built[4:])
        held.given[:] = np.isin(held.rows, list(was))
        self.held = held
        self._start = None
        self.hint = None

    def restart(self, bounds: dict[int, tuple[float | None, float | None]] | None = None,
                columns: dict[int, tuple[float, float]] | None = None) -> None:
        """Return to the model as built: a new HiGHS given the same calls in the same order as the build,
        so it holds the same model in the same state as a fresh compile would, without the rows added since
        (cuts) and without walking Pyomo again. ``bounds``: {id(constraint): (lo, hi)}, constraints of the
        build given new bounds (in the constraint's own terms, as ``add`` takes them), e.g. a budget.
        ``columns``: {column: (lo, hi)}, columns then given these bounds in HiGHS (e.g. options a budget rules
        out, held at 0; their variables keep their bounds in Pyomo unless the caller sets them)."""
        calls, ncols, nrows, held, self.sense, self.offset = self.built
        hrows = [int(r) for r in np.flatnonzero(~held.member)]  # the build's rows that HiGHS got
        if len(self.vars) != ncols:
            raise ValueError("columns were added after the build; compile the model again instead")
        self.h = new_highs()
        self._start = None  # the budgets changed: the last incumbent may be outside them
        given = np.flatnonzero(self.held.given)  # rows an answer needed before: HiGHS gets them again
        self.held = held.copy()
        at = {r: i for i, r in enumerate(hrows)}
        moved = {}
        for key, (new_lo, new_hi) in (bounds or {}).items():
            row, const = self.row_of[key]
            lo = -self.inf if new_lo is None else new_lo - const
            hi = self.inf if new_hi is None else new_hi - const
            if row in at:
                moved[at[row]] = (lo, hi)
            else:
                self.held.move(row, lo, hi)
        for name, args in calls:
            if name == "addRows" and moved:
                n, lo, hi, *rest = args
                lo, hi = lo.copy(), hi.copy()
                for i, (new_lo, new_hi) in moved.items():
                    lo[i], hi[i] = new_lo, new_hi
                args = (n, lo, hi, *rest)
            getattr(self.h, name)(*args)
            if name == "changeColsCost":
                self.cost = args[2]
        self.model_rows = nrows
        self._hrows = list(hrows)
        if len(given):
            self._give(given)
        if columns:
            n = len(columns)
            lo, hi = zip(*columns.values())
            self.h.changeColsBounds(n, np.array(list(columns), dtype=np.int32), np.array(lo, dtype=float),
                                    np.array(hi, dtype=float))

    def relaxation(self, rows: Any = (), free: Any = ()) -> Any:
        """A new HiGHS holding the LP relaxation of the model as built (the build's calls, every row held back,
        integrality dropped) and ``rows``, (lo, expr, hi) triples over its variables: the model without the cuts
        added since, unless given again, and without the bounds ``restart`` set. ``free``: constraints of the
        build (their ids, as ``row_of`` keys) left without bounds, e.g. budgets."""
        calls, *_ = self.built
        held = self.built[3]
        h = new_highs()
        for name, args in calls:
            if name != "changeColsIntegrality":
                getattr(h, name)(*args)
        given = np.flatnonzero(~held.member)
        at = {int(r): i for i, r in enumerate(given)}
        at.update({int(r): len(given) + i for i, r in enumerate(held.rows)})
        if len(held.rows):
            h.addRows(len(held.rows), held.lo, held.hi, len(held.index), held.starts[:-1].astype(np.int32),
                      held.index.astype(np.int32), held.value)
        for lo, expr, hi in rows:
            const, cols = self._linear(expr)
            idx = np.array(list(cols), dtype=np.int32)
            h.addRow(-self.inf if lo is None else lo - const, self.inf if hi is None else hi - const, len(idx), idx,
                     np.array(list(cols.values()), dtype=float))
        for key in free:
            h.changeRowBounds(at[self.row_of[key][0]], -self.inf, self.inf)
        return h

    def _give(self, held: np.ndarray) -> None:
        """Give HiGHS the held rows at positions ``held`` (``_Held``), after the rows it has."""
        H = self.held
        starts, index, value = _select(H.starts, H.index, H.value, held)
        self.h.addRows(len(held), H.lo[held], H.hi[held], len(index), starts[:-1].astype(np.int32),
                       index.astype(np.int32), value)
        H.given[held] = True
        self._hrows.extend(int(H.rows[i]) for i in held)

    def _counts(self) -> tuple[bool, int, int]:
        """Whether any column is an integer one, and the binary and all columns, of the variables not fixed
        (counted once per set of columns: a small master's solve took a tenth of its time counting)."""
        if self._counted is None or self._counted[0] != len(self.vars):
            free = [v for v in self.vars if not v.fixed]
            self._counted = (len(self.vars), any(v.is_integer() for v in free),
                             sum(1 for v in free if v.is_binary()), len(free))
        return self._counted[1:]

    def forget_start(self) -> None:
        """Give the next run no start (``solve``): the last incumbent is known to be cut off."""
        self._start = None

    def set_objective(self, expr, minimize: bool = True) -> None:
        """Make the linear ``expr`` the objective (minimized unless ``minimize`` is False). An expression set
        before is not walked again (the master swaps its objective and the tie-break's on every round)."""
        known = self._objectives.get(id(expr))
        if known is None or known[0] is not expr:
            known = self._objectives[id(expr)] = (expr, *self._linear(expr))  # expr kept: its id stays its own
        _, const, cols = known
        self.sense = 1.0 if minimize else -1.0
        self.offset = const
        cost = np.zeros(len(self.vars))
        for j, c in cols.items():
            cost[j] = self.sense * c
        self.cost = cost  # per column, as HiGHS minimizes it (the sense applied)
        if self._pending is not None:
            self._pending.cost = cost
            return
        n = len(self.vars)
        self.h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)

    def pop_row(self) -> None:
        """Remove the row added last (rows given to HiGHS from those held back may have come after it)."""
        self.model_rows -= 1
        at = len(self._hrows) - 1 - self._hrows[::-1].index(self.model_rows)
        del self._hrows[at]
        self.h.deleteRows(1, np.array([at], dtype=np.int32))

    def _repn(self, expr):
        repn = self.visitor.walk_expression(expr)
        if repn.nonlinear is not None:
            raise ValueError(f"a nonlinear term in {expr}: the master must stay linear")
        if repn.multiplier != 1:
            repn.linear = {k: repn.multiplier * v for k, v in repn.linear.items()}
            repn.constant *= repn.multiplier
        return repn

    def _column(self, v) -> int:
        key = id(v)
        if key in self.col:
            return self.col[key]
        self.var_map.setdefault(key, v)
        j = len(self.vars)
        self.col[key] = j
        self.vars.append(v)
        if v.fixed:
            lo = hi = float(v.value)
        else:
            lo = -self.inf if v.lb is None else float(v.lb)
            hi = self.inf if v.ub is None else float(v.ub)
        integer = v.is_integer() and not v.fixed
        pend = self._pending
        if pend is not None:
            pend.lo.append(lo)
            pend.hi.append(hi)
            if integer:
                pend.integers.append(j)
            return j
        self.h.addVar(lo, hi)
        if integer:
            self.h.changeColIntegrality(j, self._integer)
        return j

    def add(self, lo: float | None, expr, hi: float | None) -> float:
        """Add the row lo <= expr <= hi (None: unbounded on that side); return the constant of ``expr``,
        which HiGHS's row bounds hold moved to the other side."""
        const, cols = self._linear(expr)
        row_lo = -self.inf if lo is None else lo - const
        row_hi = self.inf if hi is None else hi - const
        self.model_rows += 1
        pend = self._pending
        if pend is not None:
            pend.row_lo.append(row_lo)
            pend.row_hi.append(row_hi)
            pend.starts.append(len(pend.index))
            pend.index.extend(cols)
            pend.value.extend(cols.values())
            return const
        idx = np.array(list(cols), dtype=np.int32)
        status = self.h.addRow(row_lo, row_hi, len(idx), idx, np.array(list(cols.values()), dtype=float))
        if status == self._error:
            self.model_rows -= 1
            raise ValueError(f"HiGHS refused the row {expr} (a coefficient out of its range?)")
        self._hrows.append(self.model_rows - 1)
        return const

    def _linear(self, expr) -> tuple[float, dict[int, float]]:
        """The constant and the column coefficients of a linear expression; a fixed variable (one the
        Pyomo walker left in, inside a named expression) counts as its value, so an option fixed out of
        the model takes its coefficients with it."""
        try:
            const, terms = _sum_of_terms(expr)
        except _Unhandled:
            repn = self._repn(expr)
            const = float(repn.constant)
            terms = [(self.var_map[key], c) for key, c in repn.linear.items()]
        summed: dict[int, list] = {}  # by variable, in order of appearance: terms that cancel make no column
        for v, c in terms:
            if v.fixed:
                const += float(c) * float(v.value)
            else:
                t = summed.setdefault(id(v), [v, 0.0])
                t[1] += float(c)
        cols = {self._column(v): c for v, c in summed.values() if c}
        return float(const), cols

    def solve(self, spec: SolverSpec, time_limit_s: float, gap: float | None = None,
              integrality: float = 1e-6) -> SolveStats:
        """Run HiGHS; load the incumbent into the Pyomo variables. Statuses as ``solve_model``'s. ``gap``: the
        relative MIP gap (None: the problem's). ``integrality``: how far from 0 or 1 HiGHS may take a binary
        (HiGHS's default 1e-6; times a big-M of 1,600 us, 1.6e-3 us of slack in an evaluation cut).

        The incumbent of the run before, if any, is HiGHS's start (``setSolution``). The design master is
        re-solved with a cut or a changed objective each time, so the last design is often the answer or
        close to it: HiGHS checks the start, and where a new cut makes it infeasible it fixes the start's
        integers and solves the LP for the rest (HiGHS's own repair); an incumbent from the start lets it
        stop at the root (the 1,000-layer, 4096-NPU master's HiGHS time 17.4 s -> 8.4 s: docs/formulation.md,
        section 3.6). The start changes no bound: what is proven is proven by HiGHS."""
        import highspy
        h = self.h
        hint, self.hint = self.hint, None
        started = self._start is not None and len(self._start.col_value) == h.getNumCol()
        if hint is not None:
            h.setSolution(len(hint[0]), np.asarray(hint[0], dtype=np.int32), np.asarray(hint[1], dtype=float))
            started = True
        elif started:
            h.setSolution(self._start)
        integer, nb, free = self._counts()

        def limit(left: float) -> None:
            set_time_limit(h, left, lp=not integer)
        limit(float(time_limit_s))
        h.setOptionValue("mip_rel_gap", float(spec.mip_gap if gap is None else gap))
        h.setOptionValue("mip_feasibility_tolerance", float(integrality))
        h.setOptionValue("threads", int(spec.threads))
        h.setOptionValue("presolve", "on" if spec.presolve else "off")
        for name, value in HEURISTICS.items():
            if h.setOptionValue(name, value) == self._error:
                from importlib.metadata import version
                raise SolverError(f"highspy {version('highspy')} has no option {name}: codesign needs highspy 1.11 "
                                  "or newer (pip install -U highspy)")
        S = highspy.HighsModelStatus
        tol = h.getOptionValue("primal_feasibility_tolerance")[1]  # getOptions() copies them all: 30 us
        t0 = time.perf_counter()
        with own_scheduler():  # (another thread count than the last run's)
            while True:
                h.run()
                if started and h.getModelStatus() == S.kSolveError:
                    # HiGHS takes a start that meets its feasibility tolerance only just, then can reject the answer
                    # it reached from it (a row off by the tolerance: "solve error"); the same model solves from
                    # scratch, so run again without the start, in the time left
                    h.clearSolver()
                    limit(float(time_limit_s) - (time.perf_counter() - t0))
                    h.run()
                ms = h.getModelStatus()
                info = h.getInfo()
                has = info.primal_solution_status == highspy.kSolutionStatusFeasible
                sol = h.getSolution() if has else None
                broken = self.held.broken(np.asarray(sol.col_value), tol) if has else ()
                if ms in (S.kUnbounded, S.kUnboundedOrInfeasible) and not self.held.given.all():
                    # without the rows held back the relaxation may be unbounded (a hook's free variable that
                    # only those rows bound): give HiGHS every one, and solve again
                    broken, has = np.flatnonzero(~self.held.given), False
                if not len(broken):
                    break
                # the answer breaks rows held back (``_Held``): HiGHS gets them and solves again, from that answer
                # (which it repairs as it does a start that a new cut breaks), in the time left; once most held
                # rows were needed, the rest likely are too, and each later break would cost a run: all of them
                self._give(broken)
                if self.held.given.mean() > GIVE_ALL and not self.held.given.all():
                    self._give(np.flatnonzero(~self.held.given))
                left = float(time_limit_s) - (time.perf_counter() - t0)
                if ms not in (S.kOptimal, S.kUnbounded, S.kUnboundedOrInfeasible) or left <= 0:
                    has = False  # an answer of the relaxation only; its bound holds for the model
                    break
                if sol is not None:
                    h.setSolution(sol)
                    started = True
                limit(left)
            wall = time.perf_counter() - t0
        obj = self.sense * info.objective_function_value + self.offset if has else None
        raw_bound = info.mip_dual_bound if integer else info.objective_function_value
        bound = self.sense * raw_bound + self.offset if raw_bound is not None and math.isfinite(raw_bound) else None
        if has:
            self._start = sol
            x = sol.col_value
            for j, v in enumerate(self.vars):
                if not v.fixed:
                    v.set_value(x[j], skip_validation=True)
        if ms == S.kOptimal:
            status = "optimal"
        elif ms in (S.kTimeLimit, S.kIterationLimit, S.kInterrupt, S.kSolutionLimit):
            status = "time_limit"
        elif ms in (S.kInfeasible, S.kUnboundedOrInfeasible):
            status = "infeasible"
        else:
            status = "error"
        if status == "optimal" and not has:
            status = "time_limit"  # out of time with rows to give HiGHS: the relaxation's answer is not the model's
        gap = abs(obj - bound) / max(abs(obj), 1e-12) if has and bound is not None else None
        size = ModelSize(free, nb, self.model_rows)
        return SolveStats(status, ms.name if hasattr(ms, "name") else str(ms), obj, bound, gap, wall, size, has)
