"""Shadow prices: what one more unit of a resource is worth in iteration time, at a fixed design.

With the design (every option binary) and the network order fixed, the co-design model is an LP in the
start times, durations and the period T (microseconds). Its constraint duals say how T moves when a
constraint's right-hand side moves: dT = sum_c dual_c * d(rhs_c). A resource's bandwidth or size enters
the LP only through right-hand sides (link time = bytes / bandwidth + latency, HBM time = bytes / rate,
SRAM interval = chunk x residence / size, compute slowed by the HBM left to it...), so by the chain rule

    dT/d(theta) = sum_c dual_c * d(rhs_c)/d(theta).

d(rhs_c)/d(theta) is read off the model itself: the LP is built again with theta moved up by a relative
1e-6, and each constraint's constant part is differenced. A forward difference, because "one more" is
the direction asked about, and because a right-hand side may itself have a breakpoint there (ACE's SRAM
term changes form when the SRAM is exactly a chunk's size, as in the quickstart). Nothing here depends
on which constraint encodes what, so a new constraint in the model is priced without change here; the
coefficients of the variables must not depend on theta (checked).

At a kink (two critical paths tied, or such a breakpoint) T is not differentiable and the LP's dual is
one subgradient of several. So each price is checked against the one-sided derivative of the replay
(the event replay of the same design and order, exact for it) and flagged ``kink`` where they differ;
``plus_step_us`` is one whole step of the resource, replayed.

Reported per resource: the marginal ``dT_dvalue`` (seconds of iteration time per SI unit: s per B/s,
s per byte) and ``saves_us_per_step``: microseconds of iteration time one more step (1 GB/s, 1 MiB, one
core, 0.01 of HBM share) saves, from the marginal.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import pyomo.environ as pyo
from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.contrib.solver.common.results import TerminationCondition as TC
from pyomo.repn import generate_standard_repn

from ..errors import SolverError, SpecError
from ..milp.data import TIME_UNIT, model_data
from ..milp.model import build_model
from ..problem.model import Problem
from ..schedule.serial import Order, run_sequence
from .solution import Solution
from .solve import durations

REL_H = 1e-6  # relative forward step for d(rhs)/d(theta) and the one-sided derivative
#: unit label and "one more" step of each kind of resource, in SI
STEPS = {"B/s": ("GB/s", 1e9), "bytes": ("MiB", 2.0**20), "cores": ("core", 1.0), "share": ("0.01", 0.01)}


@dataclass(frozen=True)
class ShadowPrice:
    """The price of one resource at the design. ``value`` in SI (``unit``); ``dT_dvalue`` (from the duals) and
    ``one_sided`` (the replay's derivative for more of it) in s per unit; ``saves_us_per_step`` (from the duals)
    and ``plus_step_us`` (one whole step, replayed) in microseconds of iteration time (positive: faster);
    ``kink``: the two derivatives differ, so T has a kink here and the dual is one subgradient of several."""

    param: str
    label: str
    value: float
    unit: str
    step_label: str
    dT_dvalue: float
    saves_us_per_step: float
    plus_step_us: float
    one_sided: float = 0.0
    kink: bool = False


@dataclass(frozen=True)
class ShadowReport:
    problem: str
    design: dict[str, float]
    iteration_time_s: float
    prices: tuple[ShadowPrice, ...]

    def table(self) -> str:
        from ..spec.units import BYTES, BYTES_PER_S, format_quantity
        fmt = {"B/s": lambda v: format_quantity(v, BYTES_PER_S), "bytes": lambda v: format_quantity(v, BYTES)}
        lines = [f"{'resource':46s} {'value':>11s}   {'one more step saves (marginal)':32s} {'(whole step)':>12s}"]
        for p in self.prices:
            v = fmt.get(p.unit, lambda v: f"{v:g}")(p.value)
            saves = f"{p.saves_us_per_step:.4g} us per {p.step_label}" + (" *" if p.kink else "")
            lines.append(f"{p.label:46s} {v:>11s}   {saves:32s} {p.plus_step_us:>9.4g} us")
        kinks = [p for p in self.prices if p.kink]
        if kinks:
            lines.append("* a kink: critical paths tie (or a term has a breakpoint) here, so the dual is one "
                         "subgradient; the one-sided derivative for more: " + "; ".join(
                             f"{p.label}: {-p.one_sided * STEPS[p.unit][1] / 1e-6:.4g} us per {p.step_label}"
                             for p in kinks))
        return "\n".join(lines)


Setter = Callable[[Problem, float], Problem]


def resources(problem: Problem, choice: dict[str, int]) -> list[tuple[str, str, str, float, Setter]]:
    """(param path, label, unit, current value, setter) for every resource the LP prices at ``choice``."""
    out: list[tuple[str, str, str, float, Setter]] = []
    npu = problem.npu
    out.append(("npu.hbm_bandwidth", "HBM bandwidth", "B/s", npu.hbm_bandwidth,
                lambda p, v: dataclasses.replace(p, npu=dataclasses.replace(p.npu, hbm_bandwidth=v))))
    for d, dim in enumerate(problem.topology.dims):
        def set_bw(p: Problem, v: float, d: int = d) -> Problem:
            dims = list(p.topology.dims)
            dims[d] = dataclasses.replace(dims[d], link_bandwidth=v)
            return dataclasses.replace(p, topology=dataclasses.replace(p.topology, dims=tuple(dims)))
        out.append((f"topology.dims[{d}].bandwidth", f"link bandwidth, dim {d} ({dim.name}), per link", "B/s",
                    dim.link_bandwidth, set_bw))
    if problem.engine.kind == "baseline":
        out.append(("npu.core_reduce_rate", "reduction rate per core", "B/s", npu.core_reduce_rate,
                    lambda p, v: dataclasses.replace(p, npu=dataclasses.replace(p.npu, core_reduce_rate=v))))
    units = {"sram": "bytes", "alu": "B/s", "dma": "B/s", "comm_cores": "cores", "comm_hbm_share": "share"}
    names = {"sram": "ACE SRAM", "alu": "ACE reduction ALUs", "dma": "ACE DMA", "comm_cores": "cores for communication",
             "comm_hbm_share": "HBM share for communication"}
    for r, opts in problem.engine.resources.items():
        i = choice.get(r, 0)

        def set_opt(p: Problem, v: float, r: str = r, i: int = i) -> Problem:
            ops = list(p.engine.resources[r])
            ops[i] = dataclasses.replace(ops[i], value=v)
            res = {**p.engine.resources, r: tuple(ops)}
            return dataclasses.replace(p, engine=dataclasses.replace(p.engine, resources=res))
        out.append((f"engine.{r}", names[r], units[r], opts[i].value, set_opt))
    return out


def _lp(problem: Problem, choice: dict[str, int], order: Order) -> pyo.ConcreteModel:
    m = build_model(model_data(problem), order, objective="iteration_time", fixed_choice=choice)
    for v in m.y.values():
        v.domain = pyo.Reals  # fixed anyway; an integer column, even fixed, makes HiGHS withhold the duals
    return m


def _rhs(m: pyo.ConcreteModel) -> tuple[list[str], list[float], list[tuple]]:
    """Per active constraint: its name, its right-hand side (bound minus constant part, in us) and its
    variable coefficients (to check they do not move with the parameter)."""
    names, rhs, coefs = [], [], []
    for c in m.component_data_objects(pyo.Constraint, active=True):
        repn = generate_standard_repn(c.body, compute_values=True)
        bound = c.lower if c.lower is not None else c.upper
        names.append(c.name)
        rhs.append(pyo.value(bound) - pyo.value(repn.constant))
        coefs.append(tuple(round(float(a), 12) for a in repn.linear_coefs))
    return names, rhs, coefs


def solve_lp(m: pyo.ConcreteModel) -> tuple[float, dict[str, float]]:
    """Solve the fixed-design LP: (T in us, dual per constraint name)."""
    res = SolverFactory("highs").solve(m, load_solutions=False, raise_exception_on_nonoptimal_result=False,
                                       tee=False, solver_options={"output_flag": False})
    if res.termination_condition != TC.convergenceCriteriaSatisfied:
        raise SolverError(f"the fixed-design LP did not solve ({res.termination_condition.name})")
    duals = res.solution_loader.get_duals()
    return float(res.incumbent_objective), {c.name: float(v) for c, v in duals.items()}


def replay_period(problem: Problem, choice: dict[str, int], order: Order) -> float:
    """T (s) of the design and order by the event replay (equal to the LP's optimum)."""
    md = model_data(problem)
    pc, dc = durations(md, choice)
    return run_sequence(md.iteration, pc, dc, order).period_s


def shadow_prices(problem: Problem, solution: Solution, *, only: list[str] | None = None) -> ShadowReport:
    """The price of every resource (or of the param paths in ``only``) at ``solution``'s design and order."""
    choice, order = dict(solution.choice), solution.order
    m0 = _lp(problem, choice, order)
    T0, duals = solve_lp(m0)
    names, _, c0 = _rhs(m0)
    lam = [duals.get(n, 0.0) for n in names]
    T_replay = replay_period(problem, choice, order)
    res = resources(problem, choice)
    if only:
        unknown = [o for o in only if o not in {r[0] for r in res}]
        if unknown:
            raise SpecError(f"no priced resource {unknown[0]!r}; expected one of {', '.join(r[0] for r in res)}")
        res = [r for r in res if r[0] in only]
    _, r0, _ = _rhs(m0)
    prices = []
    for path, label, unit, value, setter in res:
        h = value * REL_H
        n, r1, c = _rhs(_lp(setter(problem, value + h), choice, order))
        if n != names or c != c0:
            raise SolverError(f"{path}: the LP's structure or coefficients move with the parameter; "
                              "the chain rule on right-hand sides does not apply")
        dT_us = sum(lm * (a - b) for lm, a, b in zip(lam, r1, r0)) / h
        one_sided = (replay_period(setter(problem, value + h), choice, order) - T_replay) / h  # s per unit
        kink = abs(dT_us * TIME_UNIT - one_sided) > 1e-3 * max(abs(one_sided), abs(dT_us * TIME_UNIT)) + 1e-6 * (
            T_replay / value)
        step_label, step = STEPS[unit]
        plus = (T_replay - replay_period(setter(problem, value + step), choice, order)) / TIME_UNIT
        prices.append(ShadowPrice(path, label, value, unit, step_label, dT_us * TIME_UNIT + 0.0,
                                  -dT_us * step + 0.0, plus + 0.0, one_sided + 0.0, kink))  # + 0.0: no '-0'
    if abs(T0 * TIME_UNIT - T_replay) > 1e-6 * T_replay:
        raise SolverError(f"the fixed-design LP's period {T0:.6g} us differs from the replay's "
                          f"{T_replay / TIME_UNIT:.6g} us")
    return ShadowReport(solution.problem, dict(solution.design), T_replay, tuple(prices))
