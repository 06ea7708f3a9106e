"""Text reports: the terminal summaries of a solve and of a simulation, the order comparison and the
diagnostics (a design's values as text are ``pipeline.solution.design_text``, which explore uses too)."""
from __future__ import annotations

from ..pipeline.solution import Solution, design_text
from ..problem.model import Problem
from ..spec.units import BYTES, SECONDS, format_quantity

#: The unit each objective is reported in ("custom": an extra hook's own objective, in its own units).
OBJECTIVE_UNITS = {"iteration_time": "s", "area": "mm^2", "power": "W", "custom": ""}


def summary(s: Solution, p: Problem, validation=None) -> str:
    """The readable summary ``codesign solve`` prints."""
    t = lambda x: format_quantity(x, SECONDS)  # noqa: E731
    topo = p.topology
    kinds = "/".join(d.kind for d in topo.dims)
    lines = [f"problem         {s.problem}: {p.workload.name} ({len(p.workload.layers)} layers, {p.workload.parallelism}) "
             f"on {topo.shape} {kinds} ({topo.npus} NPUs), {s.engine} engine"]
    lines.append(f"design          {design_text(s.design)}")
    if s.engine != "ideal":
        power_budget = f" (budget {p.engine.power_budget_w:g} W)" if p.engine.power_budget_w is not None else ""
        area_budget = f" (budget {p.engine.area_budget_mm2:g} mm^2)" if p.engine.area_budget_mm2 is not None else ""
        lines.append(f"                area {s.area_mm2:.4g} mm^2{area_budget}, "
                     f"power {s.power_w:.4g} W{power_budget}")
    lines.append(f"iteration time  {t(s.iteration_time_s)}  (compute {t(s.compute_time_s)}, exposed communication "
                 f"{t(s.exposed_comm_s)}; network busy {t(s.comm_time_s)}, {s.chunks} chunk(s) per collective)")
    def val(x: float | None) -> str:
        if x is None:
            return "n/a"
        if s.objective_kind == "iteration_time":
            return f"{x * 1e6:.6g} us"
        return f"{x:.6g} {OBJECTIVE_UNITS[s.objective_kind]}".rstrip()
    obj, bound = val(s.objective), val(s.objective_bound)
    gap = f"{100 * s.gap:.3f}%" if s.gap is not None else "n/a"
    lines.append(f"solver          {s.status}: minimize {s.objective_kind.replace('_', ' ')}, objective {obj}, "
                 f"bound {bound}, gap {gap}, {s.solve_time_s:.2f} s (HiGHS)")
    if s.order_policy == "optimize":
        lines.append(order_model_line(s))
    else:
        lines.append(f"model           {s.model.variables} variables ({s.model.binaries} binary), "
                     f"{s.model.constraints} constraints; {s.order_policy.upper()} network order "
                     f"{'settled' if s.order_stable else 'NOT settled'} after {s.order_rounds} round(s)")
    if validation is not None:
        v = validation
        lines.append(f"simulated       {t(v.simulated_s)} ({100 * v.rel_diff:+.1f}% against the MILP; proven lower bound "
                     f"{t(v.bound.bound_s)}, set by {v.bound.binding}; {v.sim.events} events)")
    for n in s.notes:
        lines.append(f"note            {n}")
    return "\n".join(lines)


def order_model_line(s: Solution) -> str:
    """The ``model`` line of an ``order: optimize`` solve: how the design space and the orders were settled."""
    d = s.diagnostics or {}
    settled = d.get("settled", {})
    milps = d.get("milps", 0)
    head = (f"model           network order chosen by the solver: {d.get('designs_in_budget', '?')} designs in budget, "
            f"{d.get('dominated', 0)} dominated, {settled.get('pruned', 0)} pruned by bounds, "
            f"{settled.get('bounds', 0)} closed by bounds, {milps} order MILP(s)")
    if milps:
        head += (f" (largest {s.model.variables} variables, {s.model.binaries} binary, "
                 f"{s.model.constraints} constraints)")
    return head


def order_comparison_lines(s: Solution, simulated: dict[str, float] | None = None) -> list[str]:
    """Summary lines comparing the chosen order with LIFO and FIFO at the chosen design: the MILP's serial
    network model (``Solution.order_comparison``), if given the simulator's replays
    (``pipeline.order_compare.simulate_orders``), and the flow-shop bound on any replay at this design."""
    c = s.order_comparison
    if not c:
        return []
    t = lambda x: format_quantity(x, SECONDS)  # noqa: E731

    def gain(base: float, x: float) -> str:
        return f"{100 * (base - x) / base:+.2f}%" if base > 0 else "n/a"
    lines = [f"vs policies     MILP model: optimized {t(c['optimized_s'])}, LIFO {t(c['lifo_s'])} "
             f"({gain(c['lifo_s'], c['optimized_s'])} gained), FIFO {t(c['fifo_s'])} "
             f"({gain(c['fifo_s'], c['optimized_s'])} gained)"]
    if simulated:
        sim = simulated
        lines.append(f"                simulated:  optimized {t(sim['optimized_s'])}, LIFO {t(sim['lifo_s'])} "
                     f"({gain(sim['lifo_s'], sim['optimized_s'])} gained), FIFO {t(sim['fifo_s'])} "
                     f"({gain(sim['fifo_s'], sim['optimized_s'])} gained)")
        extra = []
        if "sequence_s" in sim:
            extra.append(f"the serial sequence as priorities {t(sim['sequence_s'])}")
        if "lifo_sequence_s" in sim:
            extra.append("LIFO's sequence as priorities (what an order: lifo solve replays) "
                         f"{t(sim['lifo_sequence_s'])}")
        if extra:
            lines.append(f"                ({'; '.join(extra)})")
    if "flow_shop_refined_s" in c:
        lines.append(f"flow shop       priorities refined for the chunk-grain replay: {t(c['flow_shop_refined_s'])} "
                     f"against {t(c['flow_shop_sequence_s'])} for the serial sequence as priorities")
    if s.replay_bound_s is not None:
        lines.append(f"replay bound    {t(s.replay_bound_s)}: no order replays faster at this design "
                     "(flow-shop relaxation)")
    return lines


def diagnostics_text(s: Solution) -> str:
    """``--verbose``: the model's size, its largest big-M, and its LP relaxation's bound against the final
    bound (empty if the solve was not asked for diagnostics)."""
    from ..milp.diagnostics import diagnostics_lines
    unit = "us" if s.objective_kind == "iteration_time" else OBJECTIVE_UNITS[s.objective_kind]
    return "\n".join(diagnostics_lines(s.diagnostics or {}, unit))


def simulation_summary(p: Problem, design, res) -> str:
    """The readable report of ``codesign simulate P.yaml``."""
    from ..schedule.bounds import lower_bound
    t = lambda x: format_quantity(x, SECONDS)  # noqa: E731
    lb = lower_bound(p, design)
    lines = [f"problem         {p.name}: {p.engine.kind} engine, {design_text(design.values)}",
             f"iteration time  {t(res.period_s)} simulated (compute {t(res.compute_time_s)}, alone "
             f"{t(res.nominal_compute_s)}; exposed communication {t(res.exposed_comm_s)})",
             f"lower bound     {t(lb.bound_s)}, set by {lb.binding}",
             "utilization     " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in res.utilization.items())]
    if res.sram_peak_bytes:
        lines.append(f"SRAM            peak {format_quantity(res.sram_peak_bytes, BYTES)}, mean wait per chunk "
                     f"{t(res.sram_wait_s)}")
    lines.append(f"replay          {res.iterations} iterations, {res.events} events; steady state over the last two")
    return "\n".join(lines)
