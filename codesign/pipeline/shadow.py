"""Shadow prices: what one more unit of a resource is worth in iteration time, at the chosen design.

At a fixed design the platform's schedule is an LP (``milp/platform.py``): every chunk-phase on its
dimension in the order the simulator served it, every duration as the replay realized it, and the
period T its least solution (equal to the replay's). Its constraint duals say how T moves when a
constraint's right-hand side moves: dT = sum_c dual_c * d(rhs_c). A resource enters the LP only through
durations, which sit in right-hand sides, so by the chain rule

    dT/d(theta) = sum_c dual_c * d(rhs_c)/d(theta).

How a duration moves with theta: a chunk-phase's realized time is its time alone on the endpoint
(link time = bytes / bandwidth + latency; memory and reduction demand over their pools) stretched by
what it shared with others; a compute task's is its time at the full NPU stretched by what
communication took from it. The stretch is held where the replay left it (exact when nothing was
shared, a first-order model otherwise), so d(rhs_c)/d(theta) is read off the LP built again with theta
moved up by a relative 1e-6 and each constraint's constant part differenced.

At a kink (two critical paths tied, a term at a breakpoint, or a stretch that moves) T is not
differentiable as the LP says, so each price is checked against the one-sided derivative of the replay
itself and flagged ``kink`` where they differ; ``plus_step_us`` is one whole step of the resource,
replayed.

Reported per resource: the marginal ``dT_dvalue`` (seconds of iteration time per SI unit: s per B/s,
s per byte) and ``saves_us_per_step``: microseconds of iteration time one more step (1 GB/s, 1 MiB, one
core, 0.01 of HBM share) saves, from the marginal.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import pyomo.core as pyo
from pyomo.contrib.solver.common.results import TerminationCondition as TC
from pyomo.repn import generate_standard_repn

from ..errors import SolverError, SpecError
from ..milp.compute_order import with_compute_order
from ..milp.data import TIME_UNIT, model_data
from ..milp.highs import pyomo_highs
from ..milp.master import nominal_compute_us
from ..milp.platform import build_platform_lp, realized_durations
from ..platform.endpoint import design_of
from ..platform.engines import engine_kind
from ..problem.model import Problem, at_design
from ..sim.replay import simulate
from .solution import Solution

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
    plus_step_us: float | None
    one_sided: float | None = 0.0
    kink: bool = False
    #: what one more step costs (``cost_unit``): a network dimension's cost per GB/s times its links, an
    #: engine resource's area per step between its chosen option and the next (mm^2); None: no price
    cost_per_step: float | None = None
    cost_unit: str = ""
    #: one more step would pass the resource's highest value on this NPU (all its cores but one, all its HBM): no
    #: design has it, so nothing is replayed for more (``plus_step_us`` and ``one_sided`` None) and the duals'
    #: marginal is one for a platform that cannot be built
    at_limit: bool = False

    @property
    def saves_us_per_cost(self) -> float | None:
        """Microseconds of iteration time one unit of cost buys here (``saves_us_per_step / cost_per_step``)."""
        if not self.cost_per_step:
            return None
        return self.saves_us_per_step / self.cost_per_step


@dataclass(frozen=True)
class ShadowReport:
    problem: str
    design: dict[str, float]
    iteration_time_s: float
    prices: tuple[ShadowPrice, ...]

    def table(self) -> str:
        from ..spec.units import BYTES, BYTES_PER_S, format_quantity
        fmt = {"B/s": lambda v: format_quantity(v, BYTES_PER_S), "bytes": lambda v: format_quantity(v, BYTES)}
        priced = any(p.cost_per_step for p in self.prices)
        lines = [f"{'resource':46s} {'value':>11s}   {'one more step saves (marginal)':32s} {'(whole step)':>12s}"
                 + ("   per unit of cost" if priced else "")]
        for p in self.prices:
            v = fmt.get(p.unit, lambda v: f"{v:g}")(p.value)
            if p.at_limit:
                lines.append(f"{p.label:46s} {v:>11s}   {'at its limit: no more is possible':32s}")
                continue
            saves = f"{p.saves_us_per_step:.4g} us per {p.step_label}" + (" *" if p.kink else "")
            per = (f"   {p.saves_us_per_cost:.4g} us per {p.cost_unit} ({p.cost_per_step:.4g} {p.cost_unit} per "
                   f"{p.step_label})" if p.saves_us_per_cost is not None else "")
            lines.append(f"{p.label:46s} {v:>11s}   {saves:32s} {p.plus_step_us:>9.4g} us{per}")
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
    kind = engine_kind(problem.engine.kind)
    if any(r.takes_cores for r in kind.resources):  # the rate a core reduces at prices those cores
        out.append(("npu.core_reduce_rate", "reduction rate per core", "B/s", npu.core_reduce_rate,
                    lambda p, v: dataclasses.replace(p, npu=dataclasses.replace(p.npu, core_reduce_rate=v))))
    for r, opts in problem.engine.resources.items():
        i = choice.get(r, 0)

        def set_opt(p: Problem, v: float, r: str = r, i: int = i) -> Problem:
            ops = list(p.engine.resources[r])
            ops[i] = dataclasses.replace(ops[i], value=v)
            res = {**p.engine.resources, r: tuple(ops)}
            return dataclasses.replace(p, engine=dataclasses.replace(p.engine, resources=res))
        res = kind.resource(r)
        out.append((f"engine.{r}", res.description, res.unit, opts[i].value, set_opt))
    return out


def _highest(problem: Problem, path: str) -> float | None:
    """The highest value the resource at ``path`` may take on the problem's NPU (``Resource.limits``; an engine
    resource's only), or None."""
    if not path.startswith("engine."):
        return None
    return engine_kind(problem.engine.kind).resource(path.split(".", 1)[1]).limits(problem.npu)[1]


class _Platform:
    """The chosen design's replay and its durations, and the LP at the same structure for a moved problem."""

    def __init__(self, problem: Problem, solution: Solution):
        self.problem, self.choice, self.priority = problem, dict(solution.choice), solution.priority
        design = design_of(problem.engine, self.choice)
        self.sim = simulate(problem, design, order=self.priority, record=True)
        self.phase0, self.compute0 = realized_durations(self.sim.realized)
        self.alone0, self.nominal0 = self._alone(problem)

    def _alone(self, problem: Problem) -> tuple[dict[tuple[int, int], float], list[float]]:
        md = model_data(problem)
        return md.phase_values(self.choice), nominal_compute_us(md)

    def lp(self, problem: Problem) -> pyo.ConcreteModel:
        """The LP with each duration stretched as in the replay, from ``problem``'s alone times."""
        alone, nominal = self._alone(problem)
        phase = {(k, c, i): d * _ratio(alone[k, i], self.alone0[k, i]) for (k, c, i), d in self.phase0.items()}
        compute = [d * _ratio(n, n0) for d, n, n0 in zip(self.compute0, nominal, self.nominal0)]
        return build_platform_lp(model_data(problem), self.sim.realized, phase_us=phase, compute_us=compute)

    def replay(self, problem: Problem) -> float:
        """The replay's period (s) of the same design and order on ``problem``."""
        return simulate(problem, design_of(problem.engine, self.choice), order=self.priority).period_s


def _ratio(x: float, x0: float) -> float:
    return x / x0 if x0 > 0 else 1.0


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
    """Solve a fixed-design LP: (T in us, dual per constraint name)."""
    res = pyomo_highs(m)
    if res.termination_condition != TC.convergenceCriteriaSatisfied:
        raise SolverError(f"the fixed-design LP did not solve ({res.termination_condition.name})")
    duals = res.solution_loader.get_duals()
    return float(res.incumbent_objective), {c.name: float(v) for c, v in duals.items()}


def step_costs(problem: Problem, choice: dict[str, int]) -> dict[str, tuple[float, str]]:
    """Per priced param path, what one more SI unit of it costs, and in what: a network dimension's link
    bandwidth its cost per B/s times its links (the network's unit); an engine resource the area slope of
    its catalog from the chosen option to the next larger one (else from the next smaller), mm^2 per unit.
    Resources with one option, or none that differ in area, have no price."""
    out: dict[str, tuple[float, str]] = {}
    net = problem.network
    if net is not None:
        for d in range(len(problem.topology.dims)):
            if net.cost_per_gbps[d] > 0:
                out[f"topology.dims[{d}].bandwidth"] = (net.dim_cost(problem.topology, d, 1.0), net.unit)
    for r, opts in problem.engine.resources.items():
        if len(opts) < 2:
            continue
        i = choice.get(r, 0)
        by_value = sorted(opts, key=lambda o: o.value)
        n = by_value.index(opts[i])
        a, b = (by_value[n], by_value[n + 1]) if n + 1 < len(by_value) else (by_value[n - 1], by_value[n])
        if b.value > a.value and b.area_mm2 != a.area_mm2:
            out[f"engine.{r}"] = ((b.area_mm2 - a.area_mm2) / (b.value - a.value), "mm^2")
    return out


def _duals(plat: _Platform, m0: pyo.ConcreteModel) -> dict[str, float]:
    """The LP's duals at the replayed design, after checking its period is the replay's."""
    T0, duals = solve_lp(m0)
    T_replay = plat.sim.period_s
    if abs(T0 * TIME_UNIT - T_replay) > 1e-6 * T_replay:
        raise SolverError(f"the platform LP's period {T0:.6g} us differs from the replay's "
                          f"{T_replay / TIME_UNIT:.6g} us")
    return duals


def platform_duals(problem: Problem, solution: Solution) -> dict[str, float]:
    """The constraint duals of the platform LP at ``solution``'s design and order, by constraint name
    (us of period per us of right-hand side): what ``Solution.duals`` keeps."""
    problem, _ = with_compute_order(problem, order=solution.compute_order)  # a task graph's, as solved
    problem = at_design(problem, solution.choice)  # the network at the solution's bandwidths
    plat = _Platform(problem, solution)
    return _duals(plat, plat.lp(problem))


def shadow_prices(problem: Problem, solution: Solution, *, only: list[str] | None = None) -> ShadowReport:
    """The price of every resource (or of the param paths in ``only``) at ``solution``'s design and order,
    from the platform LP's duals (``solution.duals`` when the solve kept them)."""
    costs = step_costs(problem, solution.choice)
    problem, _ = with_compute_order(problem, order=solution.compute_order)  # a task graph's, as solved
    problem = at_design(problem, solution.choice)  # the network at the solution's bandwidths, held fixed
    plat = _Platform(problem, solution)
    m0 = plat.lp(problem)
    duals = solution.duals if solution.duals is not None else _duals(plat, m0)
    names, r0, c0 = _rhs(m0)
    lam = [duals.get(n, 0.0) for n in names]
    T_replay = plat.sim.period_s
    res = resources(problem, plat.choice)
    if only:
        unknown = [o for o in only if o not in {r[0] for r in res}]
        if unknown:
            raise SpecError(f"no priced resource {unknown[0]!r}; expected one of {', '.join(r[0] for r in res)}")
        res = [r for r in res if r[0] in only]
    prices = []
    for path, label, unit, value, setter in res:
        h = value * REL_H
        n, r1, c = _rhs(plat.lp(setter(problem, value + h)))
        if n != names or c != c0:
            raise SolverError(f"{path}: the LP's structure or coefficients move with the parameter; "
                              "the chain rule on right-hand sides does not apply")
        dT_us = sum(lm * (a - b) for lm, a, b in zip(lam, r1, r0)) / h
        step_label, step = STEPS[unit]
        cost, cunit = costs.get(path, (None, ""))
        hi = _highest(problem, path)
        if hi is not None and value + step > hi * (1 + 1e-12):  # no design has one step more
            prices.append(ShadowPrice(path, label, value, unit, step_label, dT_us * TIME_UNIT + 0.0,
                                      -dT_us * step + 0.0, None, None, False,
                                      None if cost is None else cost * step, cunit, at_limit=True))
            continue
        one_sided = (plat.replay(setter(problem, value + h)) - T_replay) / h  # s per unit
        kink = abs(dT_us * TIME_UNIT - one_sided) > 1e-3 * max(abs(one_sided), abs(dT_us * TIME_UNIT)) + 1e-6 * (
            T_replay / value)
        plus = (T_replay - plat.replay(setter(problem, value + step))) / TIME_UNIT
        prices.append(ShadowPrice(path, label, value, unit, step_label, dT_us * TIME_UNIT + 0.0,
                                  -dT_us * step + 0.0, plus + 0.0, one_sided + 0.0, kink,  # + 0.0: no '-0'
                                  None if cost is None else cost * step, cunit))
    return ShadowReport(solution.problem, dict(solution.design), T_replay, tuple(prices))
