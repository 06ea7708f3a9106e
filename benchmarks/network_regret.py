"""Network co-design against brute force, and against LIBRA's own model, on the shipped LIBRA problems.

For each problem file (default: every file under problems/libra/):
- solve it (codesign: the master MILP on HiGHS proposes (endpoint, bandwidths) designs, the simulator
  replays them);
- replay every design of the grid, every endpoint option x every bandwidth option per dimension within the
  area and network cost budgets, and take the best simulated period:

      design regret = simulated period of the chosen design / best simulated period - 1

- LIBRA's model on the same grid (Won et al., ISPASS 2024; its repository's src/model): the iteration is
  the compute plus, per collective, max over dimensions of its bytes there over the dimension's bandwidth
  (no overlap, perfect pipelining across dimensions, no latency, no endpoint). Its best bandwidths under
  the same budget, and their best simulated period with any endpoint: what LIBRA's answer costs on the
  platform codesign simulates.

Prints one line per file and a summary; exits 1 if a regret is over 1%. BENCHMARKS.md records the output.

    python benchmarks/network_regret.py
    python benchmarks/network_regret.py problems/libra/gpt3_3d.yaml
"""
from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def grid_designs(p) -> list[dict[str, int]]:
    """Every (endpoint, bandwidths) design within the area, power and network cost budgets."""
    from codesign.platform.endpoint import design_area_mm2, design_power_w
    e, net = p.engine, p.network
    space = {**e.resources, **net.resources(p.topology)}
    out = []
    for combo in itertools.product(*(range(len(o)) for o in space.values())):
        c = dict(zip(space, combo))
        if e.area_budget_mm2 is not None and design_area_mm2(e, c) > e.area_budget_mm2 + 1e-9:
            continue
        if e.power_budget_w is not None and design_power_w(e, c) > e.power_budget_w + 1e-9:
            continue
        if net.budget is not None and sum(net.costs(p.topology, c)) > net.budget * (1 + 1e-12) + 1e-12:
            continue
        out.append(c)
    return out


def libra_time_s(p, choice: dict[str, int]) -> float:
    """LIBRA's iteration time at the bandwidths ``choice``: compute at the full NPU plus, per collective,
    max over dimensions of its bytes on that dimension over the NPU's bandwidth there."""
    from codesign.milp.data import TIME_UNIT, model_data
    from codesign.milp.master import nominal_compute_us
    from codesign.platform.collectives import phases
    from codesign.problem.model import at_design
    q = at_design(p, choice)
    md = model_data(q)
    total = sum(nominal_compute_us(md)) * TIME_UNIT
    for c in md.iteration.comms:
        per_dim: dict[int, float] = {}
        for ph in phases(c.comm, q.topology):
            per_dim[ph.dim] = per_dim.get(ph.dim, 0.0) + ph.wire_bytes
        total += max((b / q.topology.dims[d].bandwidth for d, b in per_dim.items()), default=0.0)
    return total


def run(path: str) -> dict:
    import dataclasses

    import codesign
    from codesign.platform.endpoint import design_of
    from codesign.platform.network import key
    from codesign.problem.model import Objective, at_design
    from codesign.sim.replay import simulate
    p = codesign.load_problem(path)
    p = dataclasses.replace(p, objective=Objective())  # the question is the fastest design
    t0 = time.perf_counter()
    s = codesign.solve(p)
    solve_s = time.perf_counter() - t0
    designs = grid_designs(p)
    t0 = time.perf_counter()
    periods = [simulate(at_design(p, c), design_of(p.engine, c)).period_s for c in designs]
    brute_s = time.perf_counter() - t0
    best = min(periods)
    chosen = simulate(at_design(p, s.choice), design_of(p.engine, s.choice)).period_s
    nets = {tuple(c[key(d)] for d in range(len(p.topology.dims))) for c in designs}
    keys = [key(d) for d in range(len(p.topology.dims))]
    libra = min(nets, key=lambda n: libra_time_s(p, dict(zip(keys, n))))
    libra_sim = min(t for c, t in zip(designs, periods) if tuple(c[k] for k in keys) == libra)
    ours = tuple(s.choice[k] for k in keys)
    bw = lambda n: "/".join(f"{p.network.bandwidths[d][o] / 1e9:g}" for d, o in enumerate(n))  # noqa: E731
    return {"file": str(Path(path).resolve().relative_to(ROOT)), "designs": len(designs),
            "evaluations": s.evaluations, "status": s.status, "gap": s.gap, "answer_s": s.iteration_time_s,
            "best_s": best, "regret": chosen / best - 1.0, "solve_s": solve_s, "brute_s": brute_s,
            "ours": bw(ours), "libra": bw(libra), "libra_model_s": libra_time_s(p, dict(zip(keys, libra))),
            "libra_sim_s": libra_sim, "cost": s.network.total, "unit": s.network.unit}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="problem files (default: problems/libra/*.yaml)")
    args = ap.parse_args()
    todo = args.files or [str(f) for f in sorted((ROOT / "problems" / "libra").glob("*.yaml"))]
    t0 = time.perf_counter()
    rows = [run(f) for f in todo]
    print(f"{'file':32s} {'designs':>7s} {'evals':>5s} {'status':>8s} {'answer':>10s} {'best':>10s} {'regret':>7s} "
          f"{'solve':>6s} {'brute':>6s}")
    for r in rows:
        print(f"{r['file']:32s} {r['designs']:7d} {r['evaluations']:5d} {r['status']:>8s} {r['answer_s'] * 1e3:8.4f}ms "
              f"{r['best_s'] * 1e3:8.4f}ms {100 * r['regret']:6.2f}% {r['solve_s']:5.1f}s {r['brute_s']:5.1f}s")
    print()
    print(f"{'file':32s} {'codesign GB/s':>16s} {'LIBRA model GB/s':>17s} {'LIBRA model':>12s} "
          f"{'LIBRA simulated':>16s} {'vs codesign':>11s}")
    for r in rows:
        print(f"{r['file']:32s} {r['ours']:>16s} {r['libra']:>17s} {r['libra_model_s'] * 1e3:10.4f}ms "
              f"{r['libra_sim_s'] * 1e3:14.4f}ms {100 * (r['libra_sim_s'] / r['answer_s'] - 1):+10.2f}%")
    worst = max(r["regret"] for r in rows)
    print(f"\ndesign regret: max {100 * worst:.2f}% over {len(rows)} problems; wall {time.perf_counter() - t0:.0f} s")
    return 0 if worst <= 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
