"""Large catalogs: the whole `codesign solve` command against replaying every in-budget design once.

Widens shipped problems' catalogs to about 200, 300, 500 and 1,000 designs (the baseline's communication
cores x HBM share, ACE's SRAM x ALU x DMA grid, budgets lifted so that every design is in the budget), and for
each runs, as separate processes in the same run: the enumeration (load the problem, replay every design,
the whole command), `python -m codesign solve FILE --json` with this checkout's code, and optionally the same
with another checkout's (``--before DIR``, e.g. /work/main, for a paired before figure). Prints per catalog
the times, the ratios solve / enumeration, the evaluations, and whether each answer's period is the
enumeration's best (within the tie tolerance, 1e-7).

    python benchmarks/large_catalogs.py                          # every problem and size
    python benchmarks/large_catalogs.py --before /work/main --sizes 200 300 500 1000
    python benchmarks/large_catalogs.py --problems resnet50_n16_baseline --sizes 300
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT / "problems" / "paper"
PYTHON = sys.executable
TIE = 1e-7

#: per problem: how its catalog grows (a grid over its resources) for each size
GRIDS = {
    "resnet50_n16_baseline": "baseline", "dlrm_n64_baseline": "baseline", "resnet50_n16_ace": "ace",
}


def _split(n: int, parts: int) -> list[int]:
    """Option counts of ``parts`` resources whose product is about ``n`` (the later ones larger)."""
    base = max(2, round(n ** (1 / parts)))
    counts = [base] * parts
    counts[-1] = max(2, round(n / base ** (parts - 1)))
    return counts


def widened(name: str, size: int) -> tuple[dict, int]:
    """The problem ``name`` of problems/paper/ as a YAML document with a catalog of about ``size`` designs."""
    import numpy as np
    import yaml
    doc = yaml.safe_load((PAPER / f"{name}.yaml").read_text())
    doc["workload"]["astra"] = str((PAPER / doc["workload"]["astra"]).resolve())
    e = doc["engine"]
    e.pop("area_budget", None)
    e.pop("power_budget", None)
    if GRIDS[name] == "baseline":
        nc, ns = _split(size, 2)
        e["comm_cores"] = [int(c) for c in np.unique(np.round(np.linspace(1, 40, nc)))]
        e["comm_hbm_share"] = [round(float(x), 4) for x in np.linspace(0.05, 1.0, ns)]
        designs = len(e["comm_cores"]) * len(e["comm_hbm_share"])
    else:
        ns, na, nd = _split(size, 3)
        kib = np.unique(np.round(np.geomspace(128, 16384, ns)))
        e["sram"] = [{"size": f"{int(k)} KiB", "area": f"{k / 2048:.4g} mm^2", "power": f"{k / 8192:.4g} W"}
                     for k in kib]
        e["alu"] = [{"rate": f"{r:.4g} GB/s", "area": f"{r / 640:.4g} mm^2", "power": f"{r / 640:.4g} W"}
                    for r in np.geomspace(32, 800, na)]
        e["dma"] = [{"bandwidth": f"{b:.4g} GB/s", "area": f"{b / 640:.4g} mm^2", "power": f"{b / 427:.4g} W"}
                    for b in np.geomspace(32, 800, nd)]
        designs = len(kib) * na * nd
    doc["name"] = f"{name}_wide{designs}"
    return doc, designs


def enumerate_designs(path: str) -> None:
    """The enumeration, as its own command: replay every design within the budgets; print the best (JSON)."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from design_regret import catalog

    import codesign
    from codesign.platform.endpoint import design_of
    from codesign.sim.replay import simulate
    p = codesign.load_problem(path)
    designs = catalog(p.engine)
    periods = [simulate(p, design_of(p.engine, c)).period_s for c in designs]
    print(json.dumps({"designs": len(designs), "best_s": min(periods)}))


def timed(argv: list[str], cwd: Path, timeout: float) -> tuple[float, dict | None]:
    """Wall time (s) of a command and its JSON output (None if it failed or timed out)."""
    t0 = time.perf_counter()
    try:
        r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "PYTHONPATH": str(cwd)})
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t0, None
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        print(f"  {' '.join(argv[:4])} ... exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}", flush=True)
        return wall, None
    return wall, json.loads(r.stdout)


def solve_cell(out: dict | None, wall: float, enum_s: float, best_s: float) -> str:
    """One solve's figures: time, ratio to the enumeration, status, evaluations, whether it found the best."""
    if out is None:
        return f"{wall:7.2f}s  (failed)"
    same = out["iteration_time_s"] <= best_s * (1 + TIE) and out["iteration_time_s"] >= best_s * (1 - TIE)
    return (f"{wall:7.2f}s {wall / enum_s:5.2f}x {out['status']:>10s} {out['search']['evaluations']:4d} ev "
            f"{out['search']['master_solves']:4d} ms {'best' if same else 'NOT BEST'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="*", default=list(GRIDS), choices=list(GRIDS))
    ap.add_argument("--sizes", nargs="*", type=int, default=[200, 300, 500, 1000])
    ap.add_argument("--before", type=Path, help="another checkout whose `codesign solve` to time too (e.g. /work/main)")
    ap.add_argument("--time-limit", type=float, default=60.0, help="the solves' --time-limit (s)")
    ap.add_argument("--enumerate", metavar="FILE", help=argparse.SUPPRESS)  # (the enumeration's own command)
    args = ap.parse_args()
    if args.enumerate:
        enumerate_designs(args.enumerate)
        return 0
    import yaml
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    print(f"{'catalog':34s} {'designs':>7s} {'enumerate':>9s}   {'solve (this checkout)':44s}"
          + ("   solve (before)" if args.before else ""), flush=True)
    bad = 0
    with tempfile.TemporaryDirectory(prefix="large-catalogs-") as tmp:
        for name in args.problems:
            for size in args.sizes:
                doc, n = widened(name, size)
                path = Path(tmp) / f"{doc['name']}.yaml"
                path.write_text(yaml.safe_dump(doc, sort_keys=False))
                enum_s, best = timed([PYTHON, str(Path(__file__).resolve()), "--enumerate", str(path)], ROOT, 3600)
                solve = [PYTHON, "-m", "codesign", "solve", str(path), "--json", "--time-limit", str(args.time_limit)]
                wall, out = timed(solve, ROOT, args.time_limit + 120)
                cell = solve_cell(out, wall, enum_s, best["best_s"])
                line = f"{doc['name']:34s} {best['designs']:7d} {enum_s:8.2f}s   {cell}"
                bad += out is None or not math.isclose(out["iteration_time_s"], best["best_s"], rel_tol=TIE)
                if args.before:
                    bwall, bout = timed(solve, args.before, args.time_limit + 120)
                    line += f"   {solve_cell(bout, bwall, enum_s, best['best_s'])}"
                print(line, flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
