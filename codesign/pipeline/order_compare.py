"""The chosen network order against LIFO and FIFO in the simulator, at the chosen design.

The replay (sim/replay.py) takes a solution's order as static priorities: each dimension serves the
waiting chunk-phase of highest priority and never idles while one waits (``validation.validate``
replays every solution this way). The LIFO and FIFO policies are replayed as policies: priorities by
issue sequence, so a newly issued collective's chunks overtake an older one's at chunk boundaries.
The MILP's serial model instead serves the order strictly, whole collectives, and may hold the
network idle for an urgent collective about to be released. docs/formulation.md ("What the
simulator says") explains the differences these semantics make. Times in seconds.
"""
from __future__ import annotations

import dataclasses

from ..platform.endpoint import design_of
from ..problem.model import Problem
from .solution import Solution


def simulate_orders(problem: Problem, sol: Solution, *, iterations: int = 8) -> dict[str, float]:
    """Simulated periods (s) at the solution's design: ``optimized_s`` (its refined priorities if it has
    them, else its order, as priorities), ``sequence_s`` (its order as priorities, when it has refined
    priorities), ``lifo_s`` and ``fifo_s`` (the policies), and ``lifo_sequence_s`` (LIFO's serial
    dispatch sequence as priorities: what an ``order: lifo`` solve's validation replays)."""
    from ..milp.data import model_data
    from ..schedule.serial import run_policy
    from ..sim.replay import simulate
    from .solve import durations
    design = design_of(problem.engine, sol.choice)
    out = {"optimized_s": simulate(problem, design, order=sol.priority or sol.order, iterations=iterations).period_s}
    if sol.priority is not None:
        out["sequence_s"] = simulate(problem, design, order=sol.order, iterations=iterations).period_s
    for pol in ("lifo", "fifo"):
        p = dataclasses.replace(problem, schedule=dataclasses.replace(problem.schedule, order=pol))
        out[f"{pol}_s"] = simulate(p, design, order=None, iterations=iterations).period_s
    md = model_data(problem)
    pc, dc = durations(md, sol.choice)
    lifo_seq = run_policy(md.iteration, pc, dc, "lifo").order
    out["lifo_sequence_s"] = simulate(problem, design, order=lifo_seq, iterations=iterations).period_s
    return out
