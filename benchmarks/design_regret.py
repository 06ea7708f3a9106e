"""Design regret: is the design codesign calls optimal the one its own simulator finds best?

For every problem file with a sized engine (or the ones named), replay every design of the catalog that
meets the budgets in the simulator (``sim.replay.simulate``, the problem's order policy) and compare the
best simulated period with the simulated period of the design ``codesign.solve`` chose:

    regret = simulated period of the chosen design / best simulated period - 1

and the prediction error |answer - simulated| / simulated of the period the solve reports. Prints one
line per file and a summary (median, mean, max, files over 1%), the figures BENCHMARKS.md records.

    python benchmarks/design_regret.py                      # every file under problems/ with a choice
    python benchmarks/design_regret.py problems/quickstart.yaml --workers 2
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def catalog(engine) -> list[dict[str, int]]:
    """Every design within the engine's budgets."""
    from codesign.platform.endpoint import design_area_mm2, design_power_w
    out = []
    for combo in itertools.product(*(range(len(o)) for o in engine.resources.values())):
        c = dict(zip(engine.resources, combo))
        if engine.area_budget_mm2 is not None and design_area_mm2(engine, c) > engine.area_budget_mm2 + 1e-9:
            continue
        if engine.power_budget_w is not None and design_power_w(engine, c) > engine.power_budget_w + 1e-9:
            continue
        out.append(c)
    return out


def regret(path: str) -> dict:
    """Solve one problem file and replay every design of its catalog (minimizing iteration time)."""
    import dataclasses

    import codesign
    from codesign.platform.endpoint import design_of
    from codesign.problem.model import Objective
    from codesign.sim.replay import simulate
    p = codesign.load_problem(path)
    p = dataclasses.replace(p, objective=Objective())  # the question is the fastest design
    t0 = time.perf_counter()
    s = codesign.solve(p)
    solve_s = time.perf_counter() - t0
    designs = catalog(p.engine)
    t0 = time.perf_counter()
    periods = [simulate(p, design_of(p.engine, c)).period_s for c in designs]
    brute_s = time.perf_counter() - t0
    best = min(periods)
    chosen = simulate(p, design_of(p.engine, s.choice), order=s.priority).period_s
    return {"file": str(Path(path).relative_to(ROOT)) if Path(path).is_absolute() else path,
            "designs": len(designs), "evaluations": s.evaluations, "status": s.status,
            "answer_s": s.iteration_time_s, "chosen_simulated_s": chosen, "best_simulated_s": best,
            "regret": chosen / best - 1.0, "prediction_error": abs(s.iteration_time_s - chosen) / chosen,
            "bound_s": s.bound_s, "solve_s": solve_s, "brute_force_s": brute_s}


def files(args: list[str]) -> list[str]:
    if args:
        return args
    import codesign
    out = []
    for f in sorted((ROOT / "problems").rglob("*.yaml")):
        try:
            p = codesign.load_problem(f)
        except codesign.CodesignError:
            continue
        if p.engine.sized:
            out.append(str(f))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="problem files (default: every file under problems/ with a choice)")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    todo = files(args.files)
    print(f"{len(todo)} problem files; solving each and replaying its whole catalog ({args.workers} workers)")
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(regret, todo))
    print(f"{'file':52s} {'designs':>7s} {'evals':>5s} {'answer':>10s} {'best':>10s} {'regret':>7s} {'pred.err':>8s} "
          f"{'solve':>6s}")
    for r in rows:
        print(f"{r['file']:52s} {r['designs']:7d} {r['evaluations']:5d} {r['answer_s'] * 1e6:9.1f}u "
              f"{r['best_simulated_s'] * 1e6:9.1f}u {100 * r['regret']:6.2f}% {100 * r['prediction_error']:7.3f}% "
              f"{r['solve_s']:5.1f}s")
    reg = [r["regret"] for r in rows]
    err = [r["prediction_error"] for r in rows]
    print(f"regret: median {100 * statistics.median(reg):.2f}%, mean {100 * statistics.mean(reg):.3f}%, "
          f"max {100 * max(reg):.2f}%, files over 1%: {sum(x > 0.01 for x in reg)} of {len(reg)}")
    print(f"prediction error: median {100 * statistics.median(err):.3f}%, max {100 * max(err):.3f}%")
    print(f"solve time: median {statistics.median(r['solve_s'] for r in rows):.2f} s, max "
          f"{max(r['solve_s'] for r in rows):.2f} s; evaluations per solve: median "
          f"{statistics.median(r['evaluations'] for r in rows)}, against {statistics.median(r['designs'] for r in rows)} "
          f"designs per catalog; wall {time.perf_counter() - t0:.0f} s")
    return 0 if max(reg) <= 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
