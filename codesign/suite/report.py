"""A suite's answer for people (``summary``) and for programs (``to_dict``, ``solve --json``)."""
from __future__ import annotations

from typing import Any

from ..pipeline.solution import design_keys, design_text
from ..pipeline.solve import network_choice
from ..platform.endpoint import design_area_mm2, design_of, design_power_w
from ..spec.units import SECONDS, format_quantity
from .search import SuiteResult
from .spec import Suite

#: The unit of each suite objective's value.
UNITS = {"weighted_time": "s", "geomean_slowdown": "x", "max_slowdown": "x", "area": "mm^2", "power": "W"}


def weighted_time_s(suite: Suite, res: SuiteResult) -> float:
    """The suite's iteration time: the weighted sum of its workloads' periods at its design (s)."""
    return sum(w * t for w, t in zip(suite.weights, res.periods_s))


def rows(suite: Suite, res: SuiteResult) -> list[dict[str, Any]]:
    """Per workload: its weight, its period at the suite's design, its own best period, the regret
    (suite-design period / own best - 1), whether its own best is proven, its target and a design that reaches
    its own best."""
    p = suite.problems[0]
    keys = design_keys()
    return [{"name": n, "weight": w, "iteration_time_s": t, "own_best_s": o, "regret": t / o - 1.0,
             "own_best_proven": pr, "iteration_time_target_s": tg,
             "own_best_design": {keys[k]: v for k, v in design_of(p.engine, c).values.items()}}
            for n, w, t, o, pr, tg, c in zip(suite.names, suite.weights, res.periods_s, res.own_best_s,
                                             res.own_proven, suite.targets_s, res.own_choice)]


def to_dict(suite: Suite, res: SuiteResult) -> dict[str, Any]:
    """The JSON document of ``codesign solve --json`` for a suite: ``iteration_time_s`` is the weighted sum
    of the workloads' periods, ``objective`` the suite objective's value."""
    p = suite.problems[0]
    keys = design_keys()
    net = network_choice(p, res.choice)
    return {"problem": suite.name, "suite": True, "status": res.status, "objective_kind": suite.objective,
            "objective": res.objective, "objective_bound": res.bound, "gap": res.gap,
            "iteration_time_s": weighted_time_s(suite, res), "solve_time_s": res.solve_time_s, "engine": p.engine.kind,
            "design": {keys[k]: v for k, v in design_of(p.engine, res.choice).values.items()},
            "area_mm2": design_area_mm2(p.engine, res.choice), "power_w": design_power_w(p.engine, res.choice),
            "search": {"simulations": res.simulations, "designs_simulated": res.designs_simulated,
                       "catalog": res.catalog},
            "workloads": rows(suite, res), "notes": list(res.notes),
            **({"network": net.to_dict()} if net is not None else {})}


def summary(suite: Suite, res: SuiteResult) -> str:
    """The suite's answer as text: the design, the objective with its bound, and per workload its time at the
    suite's design, its own best and the regret."""
    p = suite.problems[0]
    unit = UNITS[suite.objective]
    value = (format_quantity(res.objective, SECONDS) if unit == "s" else f"{res.objective:.6g} {unit}")
    gap = f"gap {100 * res.gap:.2f}%" if res.gap is not None else "no bound"
    net = network_choice(p, res.choice)
    lines = [f"suite           {suite.name}: {len(suite.problems)} workloads, minimize {suite.objective}",
             f"status          {res.status} ({gap})",
             f"objective       {value}",
             f"design          {design_text(design_of(p.engine, res.choice).values)}",
             f"area, power     {design_area_mm2(p.engine, res.choice):.4g} mm^2, "
             f"{design_power_w(p.engine, res.choice):.4g} W",
             *([f"network         {net.text()}"] if net is not None else []),
             f"search          {res.simulations} simulations of {res.designs_simulated} designs (catalog "
             f"{res.catalog}), {res.solve_time_s:.2f} s",
             f"{'workload':<16}{'weight':>8}  {'at suite design':>16}  {'own best':>12}  {'regret':>8}"]
    for r in rows(suite, res):
        own = format_quantity(r["own_best_s"], SECONDS) + ("" if r["own_best_proven"] else "*")
        lines.append(f"{r['name']:<16}{r['weight']:>8g}  {format_quantity(r['iteration_time_s'], SECONDS):>16}  "
                     f"{own:>12}  {100 * r['regret']:>7.2f}%")
    lines += [f"note            {n}" for n in res.notes]
    return "\n".join(lines)
