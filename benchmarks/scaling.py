"""How solve and simulate grow with NPUs, layers and chunks: time and memory per case.

Each case is a synthetic data-parallel model (layers of 8-48 us of compute per task and 1-16 MiB
all-reduces, drawn with a fixed seed, as problems/scale/generate.py draws them) on a network of the
given shape, ACE sized from the scale problem's catalog. Every case runs in a fresh process, which
reports: the whole solve (the design search, replays included), the replay of the chosen design alone,
its events, and the process's peak memory (ru_maxrss).

    python benchmarks/scaling.py                       # the default grid
    python benchmarks/scaling.py --layers 1000 --npus 4096 --chunks 4
    python benchmarks/scaling.py --plot docs/figures/scaling.png
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: NPUs -> the dimensions (kind, size, links, bandwidth GB/s, latency ns)
SHAPES = {
    64: [("ring", 4, 2, 100, 100), ("ring", 4, 2, 50, 100), ("ring", 4, 2, 50, 100)],
    256: [("ring", 4, 2, 100, 100), ("ring", 4, 2, 50, 100), ("ring", 4, 2, 50, 100), ("switch", 4, 1, 50, 500)],
    1024: [("ring", 4, 2, 100, 100), ("ring", 4, 2, 50, 100), ("ring", 8, 2, 50, 100), ("switch", 8, 1, 50, 500)],
    4096: [("ring", 16, 2, 100, 100), ("ring", 16, 2, 50, 100), ("ring", 16, 2, 50, 100)],
}


def document(layers: int, npus: int, chunks: int) -> dict:
    rnd = random.Random(layers)
    ls = []
    for i in range(layers):
        f = rnd.choice([8, 12, 16, 24, 32, 48])
        b = rnd.choice([1, 2, 4, 4, 8, 8, 16])
        ls.append({"name": f"L{i}", "forward": f"{f} us", "input_grad": f"{f} us", "weight_grad": f"{f} us",
                   "update": "1 us", "weight_grad_comm": {"collective": "all_reduce", "bytes": f"{b} MiB"}})
    dims = [{"name": f"d{n}", "kind": k, "size": s, "links": lk, "bandwidth": f"{bw} GB/s", "latency": f"{lat} ns"}
            for n, (k, s, lk, bw, lat) in enumerate(SHAPES[npus])]
    opts = lambda key, vals, area, power: [{key: v, "area": f"{a} mm^2", "power": f"{w} W"}  # noqa: E731
                                            for v, a, w in zip(vals, area, power)]
    return {
        "name": f"scale-{layers}l-{npus}n-{chunks}c",
        "workload": {"name": "synthetic", "parallelism": "data", "layers": ls},
        "topology": {"dims": dims},
        "npu": {"compute": "125 TFLOP/s", "hbm_bandwidth": "900 GB/s", "cores": 80, "core_reduce_rate": "25 GB/s",
                "compute_hbm_utilization": 0.5},
        "engine": {"type": "ace", "area_budget": "4 mm^2", "power_budget": "6 W", "endpoint_delay": "10 ns",
                   "sram": opts("size", ["1 MiB", "2 MiB", "4 MiB", "8 MiB"], [0.45, 0.9, 1.8, 3.6],
                                [0.12, 0.24, 0.48, 0.96]),
                   "alu": opts("rate", ["64 GB/s", "128 GB/s", "256 GB/s"], [0.1, 0.2, 0.4], [0.1, 0.2, 0.4]),
                   "dma": opts("bandwidth", ["64 GB/s", "128 GB/s", "256 GB/s"], [0.1, 0.2, 0.4], [0.15, 0.3, 0.6])},
        "schedule": {"order": "lifo", "chunks": chunks},
        "solver": {"time_limit": "600 s"},
    }


def case(layers: int, npus: int, chunks: int) -> dict:
    """One case in this process (called in a child by ``main``)."""
    import codesign
    from codesign.platform.endpoint import design_of
    from codesign.sim.replay import simulate
    p = codesign.parse_problem(document(layers, npus, chunks), "<scaling>")
    t0 = time.perf_counter()
    s = codesign.solve(p)
    solve_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sim = simulate(p, design_of(p.engine, s.choice))
    sim_s = time.perf_counter() - t0
    return {"layers": layers, "npus": npus, "chunks": chunks, "status": s.status, "period_ms": s.iteration_time_s * 1e3,
            "evaluations": s.evaluations, "solve_s": solve_s, "simulate_s": sim_s, "events": sim.events,
            "events_per_s": sim.events / sim_s if sim_s else 0.0,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run(layers: int, npus: int, chunks: int) -> dict:
    code = (f"import json, sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import scaling; "
            f"print(json.dumps(scaling.case({layers}, {npus}, {chunks})))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        return {"layers": layers, "npus": npus, "chunks": chunks, "error": r.stderr.strip().splitlines()[-1]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, nargs="*", default=None)
    ap.add_argument("--npus", type=int, nargs="*", default=None, choices=sorted(SHAPES))
    ap.add_argument("--chunks", type=int, nargs="*", default=None)
    ap.add_argument("--plot", metavar="PNG", help="draw time and memory against layers")
    args = ap.parse_args()
    if args.layers or args.npus or args.chunks:
        grid = [(l_, n, c) for l_ in (args.layers or [500]) for n in (args.npus or [1024]) for c in (args.chunks or [4])]
    else:  # one axis at a time around 500 layers, 1024 NPUs, 4 chunks
        grid = ([(l_, 1024, 4) for l_ in (50, 100, 250, 500, 1000)] + [(500, n, 4) for n in (64, 256, 4096)]
                + [(500, 1024, c) for c in (1, 16)])
    print(f"Python {sys.version.split()[0]}; each case in a fresh process")
    print(f"{'layers':>6} {'NPUs':>5} {'chunks':>6} {'status':>10} {'period':>10} {'evals':>5} {'solve':>8} "
          f"{'simulate':>8} {'events':>8} {'events/s':>9} {'peak':>7}")
    rows = []
    for l_, n, c in grid:
        r = run(l_, n, c)
        rows.append(r)
        if "error" in r:
            print(f"{l_:6d} {n:5d} {c:6d}  error: {r['error']}")
            continue
        print(f"{l_:6d} {n:5d} {c:6d} {r['status']:>10} {r['period_ms']:8.3f}ms {r['evaluations']:5d} "
              f"{r['solve_s']:7.2f}s {r['simulate_s']:7.2f}s {r['events']:8d} {r['events_per_s'] / 1e6:8.2f}M "
              f"{r['peak_mb']:5.0f}MB", flush=True)
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        ok = [r for r in rows if "error" not in r and r["npus"] == 1024 and r["chunks"] == 4]
        ok.sort(key=lambda r: r["layers"])
        fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
        x = [r["layers"] for r in ok]
        ax[0].plot(x, [r["solve_s"] for r in ok], "o-", label="solve (search, replays included)")
        ax[0].plot(x, [r["simulate_s"] for r in ok], "s-", label="one replay")
        ax[0].set_xlabel("layers (1024 NPUs, 4 chunks)")
        ax[0].set_ylabel("seconds")
        ax[0].legend()
        ax[1].plot(x, [r["peak_mb"] for r in ok], "o-")
        ax[1].set_xlabel("layers")
        ax[1].set_ylabel("peak memory (MB)")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
