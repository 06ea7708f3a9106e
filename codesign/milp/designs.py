"""Designs and budgets: an evaluated design (``Evaluation``), the one test of a budget (``within``), whether a
design fits the budgets, and the options no design within them can take."""
from __future__ import annotations

from dataclasses import dataclass

from ..platform.endpoint import design_area_mm2, design_power_w


@dataclass(frozen=True)
class Evaluation:
    """One design the simulator evaluated: its option indices, simulated period (us), and the resources
    that may be larger without changing the replay (their capacity never limited anything)."""

    choice: dict[str, int]
    period_us: float
    plateau: frozenset[str] = frozenset()


def within(value: float, budget: float) -> bool:
    """Whether ``value`` is within ``budget``, up to the rounding of the sums that make it (1e-12, relative
    and absolute): the one test of a budget, for the options it rules out and the designs it admits."""
    return value <= budget * (1 + 1e-12) + 1e-12


def fits_budgets(problem, choice: dict[str, int]) -> bool:
    """Whether the design ``choice`` is within ``problem``'s area, power and network budgets (``within``)."""
    e, net = problem.engine, problem.network
    return ((e.area_budget_mm2 is None or within(design_area_mm2(e, choice), e.area_budget_mm2))
            and (e.power_budget_w is None or within(design_power_w(e, choice), e.power_budget_w))
            and (net is None or net.budget is None or within(sum(net.costs(problem.topology, choice)), net.budget)))


def unusable(engine) -> list[tuple[str, int]]:
    """Options that cannot fit a budget even with the smallest options of every other resource."""
    out = []
    for attr, budget in (("area_mm2", engine.area_budget_mm2), ("power_w", engine.power_budget_w)):
        if budget is None:
            continue
        floor = {r: min(getattr(o, attr) for o in opts) for r, opts in engine.resources.items()}
        base = getattr(engine, f"fixed_{attr}") + sum(floor.values())
        for r in engine.sized:
            for o, opt in enumerate(engine.options(r)):
                if not within(base - floor[r] + getattr(opt, attr), budget):
                    out.append((r, o))
    return sorted(set(out))
