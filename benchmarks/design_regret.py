"""Design regret: is the design codesign calls optimal the one its own simulator finds best?

For every problem file with a sized engine and a fixed network (or the ones named; problems whose
bandwidths are chosen too are benchmarks/network_regret.py's), replay every design of the catalog that
meets the budgets in the simulator (``sim.replay.simulate``, the problem's order policy) and compare the
best simulated period with the simulated period of the design ``codesign.solve`` chose:

    regret = simulated period of the chosen design / best simulated period - 1

and the prediction error |answer - simulated| / simulated of the period the solve reports. Prints one
line per file as it finishes (with both designs when the regret is over the tolerance), then a table in
file order and a summary (median, mean, max, files over the tolerance), the figures BENCHMARKS.md records.

With ``order: optimize`` the catalog is replayed under LIFO (the policy ``simulate`` takes for such a
problem) while the chosen design is replayed under the priorities the solve chose, so its regret may be
negative: it measures the design and the order together.

    python benchmarks/design_regret.py                      # every file under problems/ with a choice
    python benchmarks/design_regret.py problems/quickstart.yaml --workers 2
    python benchmarks/design_regret.py --exclude 'paper/latency/*'
"""
from __future__ import annotations

import argparse
import fnmatch
import itertools
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
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
    """Solve one problem file and replay every design of its catalog (minimizing iteration time).

    Returns the file, the catalog's size, the solve's evaluations and status, the answer, the chosen
    and the best design (text) with their simulated periods (s), the regret and prediction error
    (fractions), the bound (s), and the solve's and the brute force's wall times (s)."""
    import dataclasses

    import codesign
    from codesign.pipeline.solution import design_text
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
    best_design = designs[periods.index(best)]
    chosen = simulate(p, design_of(p.engine, s.choice), order=s.priority).period_s
    return {"file": str(Path(path).relative_to(ROOT)) if Path(path).is_absolute() else path,
            "designs": len(designs), "evaluations": s.evaluations, "status": s.status,
            "chosen_design": design_text(design_of(p.engine, s.choice).values),
            "best_design": design_text(design_of(p.engine, best_design).values),
            "answer_s": s.iteration_time_s, "chosen_simulated_s": chosen, "best_simulated_s": best,
            "regret": chosen / best - 1.0, "prediction_error": abs(s.iteration_time_s - chosen) / chosen,
            "bound_s": s.bound_s, "solve_s": solve_s, "brute_force_s": brute_s}


def files(args: list[str]) -> list[str]:
    """The problem files named, or every file under problems/ whose engine has something to size."""
    if args:
        return args
    import codesign
    out = []
    for f in sorted((ROOT / "problems").rglob("*.yaml")):
        try:
            p = codesign.load_problem(f)
        except codesign.CodesignError:
            continue
        if p.network is not None and p.network.sized:
            continue  # bandwidths are chosen too: benchmarks/network_regret.py replays that whole grid
        if p.engine.sized:
            out.append(str(f))
    return out


def warm() -> None:
    """Import what a solve needs once per worker, so the first file's solve time is not the imports'."""
    import highspy  # noqa: F401
    import pyomo.environ  # noqa: F401

    import codesign.pipeline.solve  # noqa: F401


def line(r: dict) -> str:
    """One row of the table (times in us and s)."""
    return (f"{r['file']:52s} {r['designs']:7d} {r['evaluations']:5d} {r['chosen_simulated_s'] * 1e6:11.1f}u "
            f"{r['best_simulated_s'] * 1e6:11.1f}u {100 * r['regret']:7.3f}% {100 * r['prediction_error']:7.3f}% "
            f"{r['solve_s']:6.1f}s {r['brute_force_s']:6.1f}s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="problem files (default: every file under problems/ with a choice)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                    help="skip files whose path under problems/ matches (repeatable)")
    ap.add_argument("--tolerance", type=float, default=0.01, help="regret above which a file is flagged (fraction)")
    args = ap.parse_args()
    todo = [f for f in files(args.files)
            if not any(fnmatch.fnmatch(str(Path(f).resolve().relative_to(ROOT / "problems")), g) for g in args.exclude)]
    # the large problems first, so the two workers finish together
    todo.sort(key=lambda f: (0 if ("/scale/" in f or "/llm/" in f) else 1, f))
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{len(todo)} problem files; solving each and replaying its whole catalog ({args.workers} workers)",
          flush=True)
    head = (f"{'file':52s} {'designs':>7s} {'evals':>5s} {'chosen sim':>12s} {'best sim':>12s} {'regret':>8s} "
            f"{'pred.err':>8s} {'solve':>7s} {'brute':>7s}")
    print(head, flush=True)
    t0 = time.perf_counter()
    rows = []
    with ProcessPoolExecutor(args.workers, initializer=warm) as pool:
        futures = {pool.submit(regret, f): f for f in todo}
        for fut in as_completed(futures):
            r = fut.result()
            rows.append(r)
            print(line(r), flush=True)
            if r["regret"] > args.tolerance:
                print(f"  REGRET over {100 * args.tolerance:g}%: chosen {r['chosen_design']} "
                      f"({r['chosen_simulated_s'] * 1e6:.3f} us), best {r['best_design']} "
                      f"({r['best_simulated_s'] * 1e6:.3f} us)", flush=True)
    rows.sort(key=lambda r: r["file"])
    print(f"\nIn file order (load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}):")
    print(head)
    for r in rows:
        print(line(r))
    print("\nDesigns (chosen / best of the catalog):")
    for r in rows:
        same = "same" if r["chosen_design"] == r["best_design"] else r["best_design"]
        print(f"{r['file']:52s} {r['status']:>9s}  {r['chosen_design']}  /  {same}")
    reg = [r["regret"] for r in rows]
    err = [r["prediction_error"] for r in rows]
    print(f"\nregret: median {100 * statistics.median(reg):.3f}%, mean {100 * statistics.mean(reg):.3f}%, "
          f"max {100 * max(reg):.3f}%, min {100 * min(reg):.3f}%, "
          f"files over {100 * args.tolerance:g}%: {sum(x > args.tolerance for x in reg)} of {len(reg)}, "
          f"over the default MIP gap (0.01%): {sum(x > 1e-4 for x in reg)}")
    print(f"prediction error: median {100 * statistics.median(err):.3f}%, max {100 * max(err):.3f}%")
    print(f"solve time: median {statistics.median(r['solve_s'] for r in rows):.2f} s, max "
          f"{max(r['solve_s'] for r in rows):.2f} s; evaluations per solve: median "
          f"{statistics.median(r['evaluations'] for r in rows)}, max {max(r['evaluations'] for r in rows)}, "
          f"against {statistics.median(r['designs'] for r in rows)} designs per catalog (median); "
          f"wall {time.perf_counter() - t0:.0f} s")
    return 0 if max(reg) <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
