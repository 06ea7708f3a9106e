"""Text reports: the terminal summaries of a solve and of a simulation, the order comparison and the
diagnostics (a design's values as text are ``pipeline.solution.design_text``, which explore uses too)."""
from __future__ import annotations

from ..pipeline.solution import Solution, design_text
from ..problem.model import Problem
from ..spec.units import BYTES, BYTES_PER_S, FLOP_PER_S, SECONDS, format_quantity

#: The unit each objective is reported in ("custom": an extra hook's own objective, in its own units).
OBJECTIVE_UNITS = {"iteration_time": "s", "area": "mm^2", "power": "W", "network_cost": "", "custom": ""}
#: The widest line a report prints: longer ones continue on the next, under the value column.
WIDTH = 120
_INDENT = " " * 16


def wrapped(line: str, width: int = WIDTH) -> list[str]:
    """``line`` cut into lines of at most ``width`` characters where it can be, the rest indented to the value
    column (16): after a '; ' (a clause) if one fits, else after a ', ' (an item), else at a space, never
    inside parentheses."""
    out = []
    while len(line) > width:
        cut = _cut(line, width)
        if cut < 0:
            break
        out.append(line[:cut].rstrip())
        line = _INDENT + line[cut:].lstrip()
    return out + [line]


def _cut(line: str, width: int) -> int:
    """Where to cut ``line`` (the index the next line starts at), -1 if nowhere before ``width``: the last
    clause's end outside parentheses, then inside, then an item's end outside, a space outside, an item inside."""
    depth, best = 0, {}
    for i, ch in enumerate(line[:width + 1]):
        depth += (ch == "(") - (ch == ")")
        if i > 17 and ch == " ":
            for sep in ("; ", ", "):
                if line[i - 1:i + 1] == sep:
                    best[(sep, depth == 0)] = i + 1
            if depth == 0:
                best[(" ", True)] = i + 1
    order = (("; ", True), ("; ", False), (", ", True), (" ", True), (", ", False))
    return next((best[k] for k in order if k in best), -1)


def _lines(lines: list[str]) -> str:
    return "\n".join(piece for line in lines for piece in wrapped(line))


def summary(s: Solution, p: Problem, validation=None) -> str:
    """The readable summary ``codesign solve`` prints."""
    t = lambda x: format_quantity(x, SECONDS)  # noqa: E731
    topo = p.topology
    kinds = "/".join(d.kind for d in topo.dims)
    w = p.workload
    lines = [f"problem         {s.problem}: {w.name} ({len(w.layers)} layers, {w.parallelism}) "
             f"on {topo.shape} {kinds} ({topo.npus} NPUs), {s.engine} engine"]
    lines.append(f"design          {design_text(s.design)}")
    if p.engine.resources or p.engine.area_budget_mm2 is not None or p.engine.power_budget_w is not None:
        power_budget = f" (budget {p.engine.power_budget_w:g} W)" if p.engine.power_budget_w is not None else ""
        area_budget = f" (budget {p.engine.area_budget_mm2:g} mm^2)" if p.engine.area_budget_mm2 is not None else ""
        lines.append(f"                area {s.area_mm2:.4g} mm^2{area_budget}, "
                     f"power {s.power_w:.4g} W{power_budget}")
    lines.extend(network_lines(s))
    busiest = ""
    if s.sim is not None:
        dims = {k: v for k, v in s.sim.utilization.items() if k.startswith("dim")}
        if dims:
            name = max(dims, key=dims.get)
            busiest = f"; busiest dimension {name.split(':', 1)[-1]} {100 * dims[name]:.0f}% of the period"
    lines.append(f"iteration time  {t(s.iteration_time_s)} simulated (compute {t(s.compute_time_s)}, exposed "
                 f"communication {t(s.exposed_comm_s)}{busiest}; {s.chunks} chunk(s) per collective)")
    mem = memory_line(p)
    if mem:
        lines.append(mem)

    def val(x: float | None) -> str:
        if x is None:
            return "n/a"
        if s.objective_kind == "iteration_time":
            return format_quantity(x, SECONDS, digits=6)
        unit = s.network.unit if s.objective_kind == "network_cost" and s.network else OBJECTIVE_UNITS[s.objective_kind]
        return f"{x:.6g} {unit}".rstrip()
    obj, bound = val(s.objective), val(s.objective_bound)
    gap = f"{100 * s.gap:.3f}%" if s.gap is not None else "n/a"
    lines.append(f"solver          {s.status}: minimize {s.objective_kind.replace('_', ' ')}, objective {obj}, "
                 f"bound {bound}, gap {gap}, {s.solve_time_s:.2f} s (master MILP on HiGHS + simulator)")
    order = "orders chosen by the search" if s.order_policy == "optimize" else f"{s.order_policy.upper()} order"
    size = (f" of {s.model.variables} variables ({s.model.binaries} binary), {s.model.constraints} constraints"
            if s.model is not None else "")
    lines.append(f"search          {s.evaluations} design(s) simulated, {s.master_solves} master MILP solve(s){size}; "
                 f"{order}")
    if s.any_order_bound_s is not None:
        below = max(0.0, s.iteration_time_s - s.any_order_bound_s) / s.iteration_time_s if s.iteration_time_s else 0.0
        where = f"{100 * below:.1f}% below" if below >= 5e-4 else "attained"
        lines.append(f"any order       no network order replays this design faster than {t(s.any_order_bound_s)} "
                     f"(proven; {where})")
    if validation is not None:
        v = validation
        lines.append(f"replayed        {t(v.simulated_s)} ({100 * v.rel_diff:+.1f}% against the answer; resource-load "
                     f"bound {t(v.bound.bound_s)}, set by {v.bound.binding}; {v.sim.events} events)")
    lines.extend(llm_lines(s, p))
    for n in s.notes:
        lines.append(f"note            {n}")
    return _lines(lines)


def llm_lines(s: Solution, p: Problem) -> list[str]:
    """An LLM workload's model FLOPs utilization and its communication by parallelism (nothing otherwise)."""
    from .llm import llm_report
    r = llm_report(s, p)
    if r is None:
        return []
    t = lambda x: format_quantity(x, SECONDS)  # noqa: E731
    split = ", ".join(f"{k} {t(v)} ({t(r.exposed_s[k])} exposed)" for k, v in r.in_flight_s.items() if v > 0)
    return [f"MFU             {100 * r.mfu:.1f}% on the NPU simulated (a rank of the last pipeline stage): model "
            f"FLOPs {r.model_flops:.4g} an iteration at {format_quantity(p.npu.compute_flops, FLOP_PER_S)} peak, "
            "recomputation not counted",
            f"parallelism     collectives in flight: {split or 'none'}"]


def network_lines(s: Solution) -> list[str]:
    """The chosen network: per dimension its bandwidth per link and per NPU, its cost, whether it was
    open; then the cost breakdown against the budget (nothing without a network design space)."""
    n = s.network
    if n is None:
        return []
    bw = lambda x: format_quantity(x, BYTES_PER_S)  # noqa: E731
    out = []
    for i, name in enumerate(n.names):
        how = ("fixed" if n.options[i] == 1 else
               f"of {n.options[i]} options" if n.tolerance[i] is None else
               f"on a grid of {n.options[i]}, ratio {1 + n.tolerance[i]:g}")
        head = "network" if i == 0 else ""
        out.append(f"{head:16s}dim {i} ({name}): {bw(n.link_bandwidth[i])} per link, {bw(n.bandwidth[i])} per NPU "
                   f"({how}), cost {n.cost[i]:.4g} {n.unit}")
    budget = f" of budget {n.budget:g} {n.unit}" if n.budget is not None else ""
    breakdown = " + ".join(f"{c:.4g}" for c in n.cost)
    out.append(f"                network cost {breakdown} = {n.total:.4g} {n.unit}{budget}")
    return out


def order_comparison_lines(s: Solution) -> list[str]:
    """``order: optimize``: the simulated period of every order tried at the chosen design."""
    c = s.order_comparison
    if not c:
        return []
    t = lambda x: format_quantity(x, SECONDS)  # noqa: E731
    names = {"lifo_s": "LIFO", "fifo_s": "FIFO", "refined_s": "refined priorities",
             "searched_s": "local search"}
    tried = ", ".join(f"{names.get(k, k)} {t(v)}" for k, v in c.items())
    return [f"orders tried    {tried} (simulated at this design)"]


def diagnostics_text(s: Solution) -> str:
    """``--verbose``: the model's size, its largest big-M, and its LP relaxation's bound against the final
    bound (empty if the solve was not asked for diagnostics)."""
    from ..milp.diagnostics import diagnostics_lines
    unit = "us" if s.objective_kind == "iteration_time" else OBJECTIVE_UNITS[s.objective_kind]
    return "\n".join(diagnostics_lines(s.diagnostics or {}, unit))


def memory_line(p: Problem) -> str | None:
    """What one NPU holds, where the workload states it (the LLM builder's first pipeline stage), against the
    NPU's HBM capacity where the problem gives one."""
    mem = dict(p.workload.memory_bytes)
    if not mem:
        return None
    gib = lambda x: f"{x / 2 ** 30:.1f} GiB"  # noqa: E731
    cap = f" of {gib(p.npu.hbm_capacity)} HBM" if p.npu.hbm_capacity else ""
    parts = ", ".join(f"{k} {gib(v)}" for k, v in mem.items())
    return f"memory per NPU  {gib(sum(mem.values()))}{cap} ({parts})"


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
    mem = memory_line(p)
    if mem:
        lines.append(mem)
    return _lines(lines)
