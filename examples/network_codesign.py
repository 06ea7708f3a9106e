"""Network co-design: bandwidth per dimension under a cost budget, chosen with the ACE endpoint.

On LIBRA's MSFT-1T problem (problems/libra/msft1t_3d.yaml: tensor parallelism over the first two
dimensions of a 16x8x32 network, data parallelism over the third, LIBRA's cost per GB/s per dimension):
1. the fastest (endpoint, bandwidths) design under the $ budget and the 4 mm^2 area budget, replayed;
2. what one more GB/s on each dimension, or one more step of an ACE resource, saves per iteration, and
   per $ or mm^2 of it (shadow prices at the chosen design): where the next dollar should go;
3. the cheapest network that stays within 10% of that iteration time (minimize network cost under a
   target);
4. the same problem with every bandwidth a range (a geometric grid, 10% apart) instead of a few options.

Run:  python examples/network_codesign.py [problem.yaml]
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import codesign
from codesign.pipeline.solution import design_text
from codesign.platform.network import grid
from codesign.problem.model import Objective

HERE = Path(__file__).resolve().parent


def show(title: str, s) -> None:
    bound = f" (bound {s.bound_s * 1e3:.3f} ms)" if s.bound_s is not None else ""
    print(f"{title}: {s.status}, iteration time {s.iteration_time_s * 1e3:.3f} ms{bound}, {s.evaluations} design(s) "
          f"replayed")
    print(f"  {s.network.text()}; endpoint: {design_text(s.design)}, {s.area_mm2:.3g} mm^2")


def main(problem: str):
    p = codesign.load_problem(problem)
    if p.network is None:
        raise codesign.SpecError("this example chooses the network's bandwidths, and the problem fixes them; give "
                                 "a problem whose topology has bandwidth options and a cost_per_gbps (problems/libra/)",
                                 file=problem)
    fastest = codesign.solve(p)
    show("fastest under the budgets", fastest)

    rep = codesign.shadow_prices(p, fastest)
    for price in rep.prices:
        if price.cost_per_step:
            print(f"  one more {price.step_label} of {price.label}: "
                  f"saves {price.saves_us_per_step:.4g} us per iteration, "
                  f"{price.saves_us_per_cost:.4g} us per {price.cost_unit}")

    target = fastest.iteration_time_s * 1.10
    cheap = codesign.solve(dataclasses.replace(p, objective=Objective("network_cost", target)))
    show(f"cheapest network within 10% ({target * 1e3:.3f} ms)", cheap)

    net = p.network
    ranges = tuple(grid(b[0], b[-1], 0.10) for b in net.bandwidths)
    ranged = dataclasses.replace(p, network=dataclasses.replace(net, bandwidths=ranges,
                                                                tolerance=(0.10,) * len(ranges)))
    on_grid = codesign.solve(ranged)
    show(f"bandwidths on grids of {'/'.join(str(len(r)) for r in ranges)} points, 10% apart", on_grid)
    if on_grid.continuous_bound_s is None:  # (a bound over the ranges comes with a proven answer only)
        print(f"  no bound over the continuous ranges: the grid solve ended {on_grid.status}")
    else:
        gap = 1 - on_grid.continuous_bound_s / on_grid.iteration_time_s
        print(f"  no bandwidth anywhere in the ranges replays faster than {on_grid.continuous_bound_s * 1e3:.3f} ms "
              f"(proven): this answer is within {100 * gap:.2f}% of the best continuous design")
    return fastest, cheap, on_grid


if __name__ == "__main__":
    try:
        main(sys.argv[1] if len(sys.argv) > 1 else str(HERE.parent / "problems" / "libra" / "msft1t_3d.yaml"))
    except codesign.CodesignError as e:  # a problem this example does not suit, or bad input: one line
        print(f"{Path(__file__).name}: {e}", file=sys.stderr)
        sys.exit(e.exit_status)
