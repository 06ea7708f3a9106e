"""The area-versus-iteration-time Pareto front of an ACE design space, by epsilon constraints.

``pareto_front`` solves "minimize iteration time subject to area <= eps" (then the least area at that
time) for a walk of epsilons that visits every corner of the front, from the fastest design down to the
smallest; the problem's own area budget is lifted to show the whole front, and its own answer is
marked. The same from the shell:

    codesign pareto problems/quickstart.yaml --x area --y iteration_time

Run:  python examples/pareto_front.py [problem.yaml] [output folder]
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import codesign
from codesign.explore.pareto import pareto_front
from codesign.pipeline.solution import design_text

HERE = Path(__file__).resolve().parent


def main(problem_path: str, out_dir: Path):
    problem = codesign.load_problem(problem_path)
    front = pareto_front(problem, x="area", y="iteration_time")
    print(f"{len(front.points)} Pareto-optimal designs ({front.method}, {front.solves} solves):")
    for p in front.points:
        print(f"  area {p.x:5.2f} mm^2  T {p.y * 1e6:8.1f} us  {design_text(p.solution.design)}"
              + (f"  <- {p.role}" if p.role else ""))
    if front.as_posed is not None:
        print(f"as posed (area budget {problem.engine.area_budget_mm2} mm^2): area {front.as_posed.area_mm2:.2f} mm^2, "
              f"T {front.as_posed.iteration_time_s * 1e6:.1f} us")
    print(f"plot: {front.plot(out_dir / 'pareto.png')}")
    return front


if __name__ == "__main__":
    problem = sys.argv[1] if len(sys.argv) > 1 else str(HERE.parent / "problems" / "quickstart.yaml")
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp(prefix="codesign-pareto-"))
    try:
        main(problem, out)
    except codesign.CodesignError as e:  # a problem this example does not suit, or bad input: one line
        print(f"{Path(__file__).name}: {e}", file=sys.stderr)
        sys.exit(e.exit_status)
