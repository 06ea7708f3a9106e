"""Compute scheduling: the order of a task graph's compute tasks on the one NPU that runs them.

A workload imported from a graph (a Chakra trace: ``Workload.task_graph``) fixes only a precedence among its
compute tasks; the NPU runs one at a time, so the iteration is one order of them, and the order decides
how much communication the compute hides. This module chooses it before the design search, as a small
disjunctive MILP on HiGHS: minimize the makespan of one iteration, with

- every task of duration d_j (its time alone at the full NPU, ``platform.costs.compute_time_terms``)
  starting after its predecessors end;
- every collective taking its communication bound t_c: its chunk-phases one after another at link speed
  on their dimensions (``CollectiveDemands.phase_link_s``), the least time it takes alone under any
  design; a task awaiting it starts t_c (plus the collective's delay) after the last task releasing it
  ends, and the iteration ends no earlier than each collective does;
- one task at a time: for each pair of tasks the graph leaves unordered, a binary chooses which goes
  first (big-M disjunction);
- one collective at a time on a dimension: two collectives that share a dimension are served one after
  the other, whole (the master MILP's abstraction, ``milp/master.py``), a binary choosing which first.

An order is scored by the same model with the collectives served in the order they are released
(``makespan``): the trace's order, a list schedule and the MILP's order are scored alike, and the best
is kept.

The status is honest: ``optimal`` when HiGHS proves the order best for this makespan, ``feasible`` when
its time limit stopped it with an order, and ``heuristic`` when the graph has more unordered pairs than
``MAX_PAIRS`` (a list schedule by longest path to the end, never worse than the trace's order, is used).
What is not modelled is said in docs/chakra.md: the makespan is one iteration's under the communication
bound, not the period of the design the search will choose.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..platform.costs import collective_demands, compute_time_terms
from ..problem.model import Problem
from ..spec.units import SECONDS, format_quantity
from ..workload.model import TaskGraph
from .data import TIME_UNIT

#: The most task pairs the graph leaves unordered for which the MILP is built (one binary each); beyond,
#: the list schedule decides.
MAX_PAIRS = 400
#: Seconds HiGHS may spend on the order (at most; the problem's own limit when smaller).
TIME_LIMIT_S = 10.0


@dataclass(frozen=True)
class ComputeOrder:
    """An order of the graph's tasks (task indices, first to last), its makespan (s) under the
    communication bound, the trace order's, and how it was found (``optimal``, ``feasible``, ``heuristic``,
    or ``fixed``: the graph allows one order only)."""

    order: tuple[int, ...]
    status: str
    makespan_s: float
    trace_makespan_s: float
    pairs: int
    why: str = ""  # heuristic: why the MILP did not decide

    def note(self) -> str:
        how = {"optimal": "optimal (MILP)", "feasible": "feasible (not proven optimal)",
               "heuristic": f"heuristic (list schedule: {self.why})",
               "fixed": "fixed by the graph's precedence"}[self.status]
        return (f"compute order {how}: one iteration's makespan under the communication bound "
                f"{format_quantity(self.makespan_s, SECONDS)}, "
                f"trace order {format_quantity(self.trace_makespan_s, SECONDS)}"
                f" ({self.pairs} unordered task pairs)")


@dataclass(frozen=True)
class _Comm:
    after: tuple[int, ...]   # tasks that release it (the last to end does)
    before: tuple[int, ...]  # tasks that wait for it in the same iteration
    t: float                 # its communication bound (s): link time of its phases, one after another
    delay: float             # after it ends, before a waiting task may start (s)
    dims: frozenset[int]     # the dimensions it occupies


@dataclass(frozen=True)
class _Instance:
    d: tuple[float, ...]                       # task durations (s)
    preds: tuple[tuple[int, ...], ...]
    comms: tuple[_Comm, ...]


def _instance(problem: Problem, g: TaskGraph) -> _Instance:
    npu = problem.npu
    d = tuple(max(compute_time_terms(t.demand, npu, npu.cores, npu.hbm_bandwidth)) for t in g.tasks)
    comms = []
    for c in g.comms:
        dem = collective_demands(c.comm, problem.topology, problem.engine, 1)
        comms.append(_Comm(c.after, c.before, sum(dem.phase_link_s), c.delay_s, frozenset(dem.phase_dims)))
    return _Instance(d, g.preds, tuple(comms))


def makespan(inst: _Instance, order: tuple[int, ...] | list[int]) -> float:
    """One iteration's makespan (s) with the tasks run in ``order``, each as early as the NPU, its
    predecessors and the collectives it awaits allow, and the collectives served in the order they are
    released, one at a time on each dimension."""
    end = [0.0] * len(inst.d)
    ready = [0.0] * len(inst.d)  # when the collectives a task awaits have ended
    pos = {t: i for i, t in enumerate(order)}
    released: list[list[_Comm]] = [[] for _ in inst.d]  # per task: the collectives it releases last
    for c in inst.comms:
        released[max(c.after, key=pos.__getitem__)].append(c)
    free: dict[int, float] = {}  # per dimension, when it is next free
    span = now = 0.0
    for j in order:
        start = max([now, ready[j]] + [end[i] for i in inst.preds[j]])
        end[j] = now = start + inst.d[j]
        for c in released[j]:
            done = max([now] + [free.get(x, 0.0) for x in c.dims]) + c.t
            for x in c.dims:
                free[x] = done
            span = max(span, done + c.delay)
            for b in c.before:
                ready[b] = max(ready[b], done + c.delay)
    return max(span, now)


def _ancestors(preds: tuple[tuple[int, ...], ...]) -> list[int]:
    """Per task, the set of tasks that must precede it, as a bit set (bit i: task i). Tasks are numbered in
    a topological order (``TaskGraph``: every predecessor has a lower index), so one pass suffices; bit sets
    keep a trace of thousands of tasks at a few megabytes."""
    anc: list[int] = []
    for ps in preds:
        a = 0
        for i in ps:
            a |= anc[i] | (1 << i)
        anc.append(a)
    return anc


def list_schedule(inst: _Instance) -> tuple[int, ...]:
    """A serial list schedule: of the tasks whose predecessors have run, the one with the longest path to
    the iteration's end (durations plus communication bounds) first; ties by index (the trace's order)."""
    import heapq
    n = len(inst.d)
    succ: list[list[int]] = [[] for _ in range(n)]
    for j, ps in enumerate(inst.preds):
        for i in ps:
            succ[i].append(j)
    releases: list[list[_Comm]] = [[] for _ in range(n)]
    for c in inst.comms:
        for a in c.after:
            releases[a].append(c)
    tail = [0.0] * n
    for j in reversed(range(n)):  # successors have higher indices: their tails are known
        best = max([tail[k] for k in succ[j]], default=0.0)
        for c in releases[j]:
            best = max(best, c.t + c.delay + max([tail[b] for b in c.before], default=0.0))
        tail[j] = inst.d[j] + best
    waiting = [len(set(ps)) for ps in inst.preds]
    ready = [(-tail[j], j) for j in range(n) if not waiting[j]]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, j = heapq.heappop(ready)
        order.append(j)
        for k in succ[j]:
            waiting[k] -= 1
            if not waiting[k]:
                heapq.heappush(ready, (-tail[k], k))
    return tuple(order)


def order_tasks(problem: Problem, g: TaskGraph, time_limit_s: float | None = None) -> ComputeOrder:
    """The order of ``g``'s tasks that minimizes one iteration's makespan under the communication bound
    (the module's docstring), with its status. HiGHS gets ``TIME_LIMIT_S`` at most, and ``time_limit_s``
    (else the problem's solver limit) when that is less."""
    inst = _instance(problem, g)
    n = len(inst.d)
    trace = tuple(range(n))
    base = makespan(inst, trace)
    anc = _ancestors(inst.preds)
    n_free = n * (n - 1) // 2 - sum(a.bit_count() for a in anc)  # pairs neither of which must precede the other
    if not n_free:
        return ComputeOrder(trace, "fixed", base, base, 0)
    heur = list_schedule(inst)
    best, best_span = min(((trace, base), (heur, makespan(inst, heur))), key=lambda x: x[1])
    too_many = f"more than the MILP's {MAX_PAIRS} pairs to order"
    if n_free > MAX_PAIRS:
        return ComputeOrder(best, "heuristic", best_span, base, n_free, too_many)
    free = [(i, j) for j in range(n) for i in range(j) if not anc[j] >> i & 1]
    shared = [(a, b) for b in range(len(inst.comms)) for a in range(b) if inst.comms[a].dims & inst.comms[b].dims]
    if n_free + len(shared) > MAX_PAIRS:  # collectives sharing a dimension are pairs to order too
        return ComputeOrder(best, "heuristic", best_span, base, n_free, too_many)
    limit = min(TIME_LIMIT_S, problem.solver.time_limit_s if time_limit_s is None else time_limit_s)
    order, status, bound = _milp(inst, free, shared, limit, problem)
    if order is None:  # HiGHS found no order in its time: the list schedule stands
        return ComputeOrder(best, "heuristic", best_span, base, n_free, "the MILP found no order in its time")
    span = makespan(inst, order)
    if span > best_span:  # scored as the others are (first released, first served), a candidate beats it
        order, span = best, best_span
    # optimal only when HiGHS proved the MILP optimal and the order kept attains its optimum: the MILP also
    # chooses the collectives' order, so its optimum bounds every task order from below
    proven = status == "optimal" and bound is not None and span <= bound * (1 + 1e-6) + 1e-12
    return ComputeOrder(order, "optimal" if proven else "feasible", span, base, n_free)


def _milp(inst: _Instance, free: list[tuple[int, int]], shared: list[tuple[int, int]], limit_s: float,
          problem: Problem) -> tuple[tuple[int, ...] | None, str, float | None]:
    """The disjunctive MILP (times in TIME_UNIT, as the master's): task starts ``s``, collective starts ``q``.
    Returns the order of its incumbent, HiGHS's status and its proven lower bound on the makespan (s)."""
    import pyomo.core as pyo

    from .highs import solve_model

    u = 1.0 / TIME_UNIT
    d = [x * u for x in inst.d]
    n = len(d)
    M = sum(d) + sum((c.t + c.delay) * u for c in inst.comms) + 1.0
    m = pyo.ConcreteModel()
    m.J = pyo.RangeSet(0, n - 1)
    m.K = pyo.RangeSet(0, len(inst.comms) - 1)
    m.s = pyo.Var(m.J, bounds=(0, M))
    m.q = pyo.Var(m.K, bounds=(0, M))
    m.C = pyo.Var(bounds=(0, M))
    m.P = pyo.Set(initialize=free, dimen=2)
    m.x = pyo.Var(m.P, domain=pyo.Binary)   # x[i, j] = 1: task i runs before task j
    m.S = pyo.Set(initialize=shared, dimen=2)
    m.y = pyo.Var(m.S, domain=pyo.Binary)   # y[a, b] = 1: collective a is served before collective b
    m.cons = pyo.ConstraintList()
    for j, ps in enumerate(inst.preds):
        for i in ps:
            m.cons.add(m.s[j] >= m.s[i] + d[i])
        m.cons.add(m.C >= m.s[j] + d[j])
    t = [c.t * u for c in inst.comms]
    for k, c in enumerate(inst.comms):
        for a in c.after:
            m.cons.add(m.q[k] >= m.s[a] + d[a])
        for b in c.before:
            m.cons.add(m.s[b] >= m.q[k] + t[k] + c.delay * u)
        m.cons.add(m.C >= m.q[k] + t[k] + c.delay * u)
    for i, j in free:
        m.cons.add(m.s[j] >= m.s[i] + d[i] - M * (1 - m.x[i, j]))
        m.cons.add(m.s[i] >= m.s[j] + d[j] - M * m.x[i, j])
    for a, b in shared:
        m.cons.add(m.q[b] >= m.q[a] + t[a] - M * (1 - m.y[a, b]))
        m.cons.add(m.q[a] >= m.q[b] + t[b] - M * m.y[a, b])
    m.obj = pyo.Objective(expr=m.C, sense=pyo.minimize)
    spec = dataclasses.replace(problem.solver, mip_gap=1e-6)
    st = solve_model(m, spec, time_limit_s=limit_s)
    if not st.has_solution:
        return None, st.status, None
    s = [pyo.value(m.s[j]) for j in range(n)]
    # start times order the tasks; equal starts (zero-time tasks) keep the trace's order, which is topological
    order = tuple(sorted(range(n), key=lambda j: (round(s[j], 9), j)))
    return order, st.status, (st.bound * TIME_UNIT if st.bound is not None else None)


def with_compute_order(problem: Problem, time_limit_s: float | None = None,
                       order: tuple[int, ...] | None = None) -> tuple[Problem, ComputeOrder | None]:
    """``problem`` with its workload's program in the chosen compute order (``order_tasks``, the MILP run
    for at most ``time_limit_s``), and that order; or, given ``order`` (a solve's ``Solution.compute_order``),
    in that order, with no MILP: what replays and prices a solution use, so they run its program.
    Unchanged (and None) when the workload has no task graph, or its order is decided already
    (``TaskGraph.decided``)."""
    w = problem.workload
    g = w.task_graph
    if g is None or g.decided:
        return problem, None
    if order is not None:
        if sorted(order) != list(range(len(g.tasks))):
            raise ValueError(f"a compute order of {len(order)} tasks for a graph of {len(g.tasks)}")
        decided = "compute order as the solve chose it"
        w2 = dataclasses.replace(w, program=g.program(order), task_graph=dataclasses.replace(g, decided=decided))
        return dataclasses.replace(problem, workload=w2), None
    co = order_tasks(problem, g, time_limit_s)
    w2 = dataclasses.replace(w, program=g.program(co.order), task_graph=dataclasses.replace(g, decided=co.note()))
    return dataclasses.replace(problem, workload=w2), co
