"""Add your own constraint to the co-design MILP with the ``extra`` hook.

Here: the ACE's SRAM must hold at least two of the largest chunk any collective moves (double
buffering), and the design must stay under a power cap. The hook receives the built Pyomo model and
the problem; component names are documented in codesign/milp/model.py and the README. A cap no
design can meet is reported as infeasible, with the hook named as the cause.

Run:  python examples/custom_constraint.py [problem.yaml]
"""
from __future__ import annotations

import sys
from pathlib import Path

import pyomo.environ as pyo

import codesign
from codesign.schedule.iteration import build_iteration

HERE = Path(__file__).resolve().parent


def double_buffered_sram(model: pyo.ConcreteModel, problem: codesign.Problem, power_cap_w: float = 1.5) -> None:
    """SRAM >= 2 x the largest chunk, and power <= ``power_cap_w``."""
    chunks = problem.schedule.chunks
    largest = max(c.comm.bytes for c in build_iteration(problem.workload, problem.schedule.overlap).comms) / chunks
    options = problem.engine.options("sram")
    if "sram" in problem.engine.sized:
        sram = sum(o.value * model.y["sram", i] for i, o in enumerate(options))
        model.double_buffer = pyo.Constraint(expr=sram >= 2 * largest)
    model.power_cap = pyo.Constraint(expr=model.power <= power_cap_w)


def main(path: str) -> codesign.Solution:
    problem = codesign.load_problem(path)
    plain = codesign.solve(problem)
    custom = codesign.solve(problem, extra=double_buffered_sram)
    for label, s in (("as posed", plain), ("double-buffered, <= 1.5 W", custom)):
        print(f"{label:26s} {s.status:8s} T = {s.iteration_time_s * 1e3:.4f} ms  "
              f"SRAM {s.design['sram'] / 2**20:g} MiB  ALU {s.design['alu'] / 1e9:g} GB/s  "
              f"DMA {s.design['dma'] / 1e9:g} GB/s  area {s.area_mm2:.2f} mm^2  power {s.power_w:.2f} W")
    try:
        codesign.solve(problem, extra=lambda m, p: double_buffered_sram(m, p, power_cap_w=0.5))
    except codesign.InfeasibleError as err:
        print(f"{'double-buffered, <= 0.5 W':26s} infeasible: {err}")
    return custom


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(HERE.parent / "problems" / "resnet50_ace_torus3d.yaml"))
