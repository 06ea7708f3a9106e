"""Add your own constraint to the co-design MILP with the ``extra`` hook.

Here: the ACE's SRAM must hold at least two of the largest chunk any collective moves (double
buffering), and the design must stay under a power cap. The hook receives the built Pyomo model and
the problem; component names are documented in codesign/milp/master.py and the README. A cap no
design can meet is reported as infeasible, with the hook named as the cause. The problem's engine must size
an SRAM (an ACE's).

Run:  python examples/custom_constraint.py [problem.yaml]
"""
from __future__ import annotations

import sys
from pathlib import Path

import pyomo.environ as pyo

import codesign
from codesign.pipeline.solution import design_text
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


def main(path: str) -> codesign.Solution | None:
    """The problem as posed, double-buffered under 1.5 W (None if no design is), and under 0.5 W."""
    problem = codesign.load_problem(path)
    if "sram" not in problem.engine.sized:
        raise codesign.SpecError(f"this example constrains the engine's SRAM, and the {problem.engine.kind} engine "
                                 "sizes none; give a problem with an ACE engine", file=path)
    _show("as posed", codesign.solve(problem))
    custom = None
    for label, cap in (("double-buffered, <= 1.5 W", 1.5), ("double-buffered, <= 0.5 W", 0.5)):
        try:
            s = codesign.solve(problem, extra=lambda m, p, cap=cap: double_buffered_sram(m, p, power_cap_w=cap))
        except codesign.InfeasibleError as err:  # a cap no design meets (0.5 W here, 1.5 W on larger problems)
            print(f"{label:26s} infeasible: {err}")
            continue
        custom = custom or s
        _show(label, s)
    return custom


def _show(label: str, s: codesign.Solution) -> None:
    print(f"{label:26s} {s.status:8s} T = {s.iteration_time_s * 1e3:.4f} ms  {design_text(s.design)}  "
          f"area {s.area_mm2:.2f} mm^2  power {s.power_w:.2f} W")


if __name__ == "__main__":
    try:
        main(sys.argv[1] if len(sys.argv) > 1 else str(HERE.parent / "problems" / "resnet50_ace_torus3d.yaml"))
    except codesign.CodesignError as e:  # a problem this example does not suit, or bad input: one line
        print(f"{Path(__file__).name}: {e}", file=sys.stderr)
        sys.exit(e.exit_status)
