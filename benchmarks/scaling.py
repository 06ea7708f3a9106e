"""How solve and simulate grow with NPUs, layers and chunks: time and peak memory per case.

Each synthetic case is a data-parallel model (layers of 8-48 us of compute per task and 1-16 MiB
all-reduces, drawn with a fixed seed, as problems/scale/generate.py draws them) on a network of the
given shape, ACE sized from the scale problem's catalog. A case (or a problem file, ``--files``) runs
in two fresh processes, one after the other:

- **solve + validate**: load the problem, ``codesign.solve`` (the design search, replays included),
  then ``validate`` (what ``codesign solve`` does after the search: the replay it carries, and the
  resource-load bound);
- **simulate**: load the problem and replay the chosen design once (what ``codesign simulate
  --solution`` does).

``--split`` also prints where the solve's time went: the evaluations' replays, the HiGHS runs, building
the master in Pyomo and compiling it into highspy (``Split``), and the rest.

Each process reports its phases' wall times (s); the parent measures the process's whole wall time
(interpreter start and imports included) and its peak resident set (GNU ``/usr/bin/time``'s %M; MB =
2^20 bytes). ``--cli`` also times the command a user types, ``codesign solve FILE``, for files.

    python benchmarks/scaling.py                       # the default grid (about 5 minutes on 2 cores)
    python benchmarks/scaling.py --layers 1000 --npus 4096 --chunks 4
    python benchmarks/scaling.py --files problems/scale/synthetic500_ace_1024npu.yaml --cli --repeat 3 --split
    python benchmarks/scaling.py --plot docs/figures/scaling.png
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
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
    """The problem document of one synthetic case (the same layers for a given count, whatever the network)."""
    rnd = random.Random(layers)
    ls = []
    for i in range(layers):
        f = rnd.choice([8, 12, 16, 24, 32, 48])
        b = rnd.choice([1, 2, 4, 4, 8, 8, 16])
        ls.append({"name": f"L{i}", "forward": f"{f} us", "input_grad": f"{f} us", "weight_grad": f"{f} us",
                   "update": "1 us", "weight_grad_comm": {"collective": "all_reduce", "bytes": f"{b} MiB"}})
    dims = [{"name": f"d{n}", "kind": k, "size": s, "links": lk, "bandwidth": f"{bw} GB/s", "latency": f"{lat} ns"}
            for n, (k, s, lk, bw, lat) in enumerate(SHAPES[npus])]
    opts = lambda key, vals, area, power: [{key: v, "area": f"{a} mm^2", "power": f"{w} W"}
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


def _problem(spec: dict):
    """Load a case: ``{"file": path}`` or ``{"layers", "npus", "chunks"}``."""
    import codesign
    if "file" in spec:
        return codesign.load_problem(spec["file"])
    return codesign.parse_problem(document(spec["layers"], spec["npus"], spec["chunks"]), "<scaling>")


class Split:
    """Wall time (s) spent in a few functions of a solve, by wrapping them: the replays of the design
    search's evaluations, the HiGHS runs of the master, building the master in Pyomo, and compiling it
    into highspy."""

    def __init__(self) -> None:
        from codesign.milp import highs, master
        from codesign.pipeline import search
        self.totals = {"replays_s": 0.0, "highs_s": 0.0, "build_s": 0.0, "compile_s": 0.0}
        self.counts = {"replays_s": 0, "highs_s": 0, "build_s": 0, "compile_s": 0}
        for owner, name, key in ((search.Search, "_evaluate", "replays_s"), (highs.CompiledModel, "solve", "highs_s"),
                                 (master.Master, "__init__", "build_s"), (highs.CompiledModel, "__init__", "compile_s")):
            setattr(owner, name, self._wrap(getattr(owner, name), key))

    def _wrap(self, fn, key: str):
        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.totals[key] += time.perf_counter() - t0
                self.counts[key] += 1
        return timed


def solve_phase(spec: dict) -> dict:
    """In a child: load, solve and validate; the phases' wall times (s), the solve's split (``Split``) and
    what the solve found (period in ms, status, MIP gap, the any-order bound's gap for the design)."""
    t0 = time.perf_counter()
    import codesign
    from codesign.pipeline.validation import validate
    split = Split()  # imports the solver's modules (Pyomo, highspy), as the solve would
    import_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    p = _problem(spec)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    s = codesign.solve(p)
    solve_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    val = validate(p, s)
    validate_s = time.perf_counter() - t0
    return {"status": s.status, "period_ms": s.iteration_time_s * 1e3, "evaluations": s.evaluations,
            "master_solves": s.master_solves, "choice": s.choice, "gap": s.gap,
            "any_order_gap": (s.iteration_time_s - s.any_order_bound_s) / s.iteration_time_s
            if s.any_order_bound_s else None,
            "priority": [list(x) for x in s.priority] if s.priority else None,
            "import_s": import_s, "load_s": load_s, "solve_s": solve_s, "validate_s": validate_s,
            **split.totals, "highs_runs": split.counts["highs_s"], "validated_ms": val.simulated_s * 1e3}


def simulate_phase(spec: dict, choice: dict[str, int], priority: list | None) -> dict:
    """In a child: load and replay the design ``choice`` once; wall times (s) and the replay's events."""
    t0 = time.perf_counter()
    from codesign.platform.endpoint import design_of
    from codesign.sim.replay import simulate
    import_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    p = _problem(spec)
    load_s = time.perf_counter() - t0
    order = tuple(tuple(x) for x in priority) if priority else None
    t0 = time.perf_counter()
    sim = simulate(p, design_of(p.engine, choice), order=order)
    simulate_s = time.perf_counter() - t0
    return {"import_s": import_s, "load_s": load_s, "simulate_s": simulate_s, "events": sim.events,
            "events_per_s": sim.events / simulate_s if simulate_s else 0.0, "simulated_ms": sim.period_s * 1e3}


def child(argv: list[str]) -> dict:
    """Run ``argv`` as a child process under ``/usr/bin/time``; its stdout, whole wall time (s, measured
    here) and peak resident set (MB, GNU time's %M)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        t0 = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tf.name, *argv], cwd=ROOT, capture_output=True,
                              text=True, timeout=3600, check=False)
        wall = time.perf_counter() - t0
        maxrss_kb = float(tf.read().strip().splitlines()[-1])
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1], "wall_s": wall}
    return {"out": proc.stdout, "wall_s": wall, "peak_mb": maxrss_kb / 1024}


def _python(call: str) -> list[str]:
    """A child Python that runs ``call`` (an expression on this module) and prints its result as JSON."""
    code = (f"import json, sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); "
            f"import scaling; print(json.dumps({call}))")
    return [sys.executable, "-c", code]


def measure(spec: dict, cli: bool = False) -> dict:
    """One case: the solve + validate process, then the simulate process (and ``codesign solve`` if ``cli``)."""
    a = child(_python(f"scaling.solve_phase({spec!r})"))
    if "error" in a:
        return {**spec, "error": a["error"]}
    r = {**spec, **json.loads(a["out"].strip().splitlines()[-1]), "solve_proc_s": a["wall_s"], "solve_peak_mb": a["peak_mb"]}
    b = child(_python(f"scaling.simulate_phase({spec!r}, {r['choice']!r}, {r['priority']!r})"))
    if "error" in b:
        return {**r, "error": b["error"]}
    sim = json.loads(b["out"].strip().splitlines()[-1])
    r.update({"simulate_s": sim["simulate_s"], "events": sim["events"], "events_per_s": sim["events_per_s"],
              "simulated_ms": sim["simulated_ms"], "sim_load_s": sim["load_s"], "sim_proc_s": b["wall_s"],
              "sim_peak_mb": b["peak_mb"]})
    if cli and "file" in spec:
        c = child([sys.executable, "-m", "codesign", "solve", spec["file"]])
        r.update({"cli_s": c["wall_s"], "cli_peak_mb": c.get("peak_mb", float("nan"))})
    return r


def median_of(runs: list[dict]) -> dict:
    """The first run's fields, with every timing replaced by the median over ``runs`` and the spread kept."""
    r = dict(runs[0])
    for k, v in runs[0].items():
        if isinstance(v, float) and k.endswith(("_s", "_mb")):
            vals = [x[k] for x in runs if k in x]
            r[k] = statistics.median(vals)
            r[k + "_range"] = (min(vals), max(vals))
    r["runs"] = len(runs)
    return r


def label(r: dict) -> str:
    if "file" in r:
        return Path(r["file"]).stem[:28]
    return f"{r['layers']}l {r['npus']}n {r['chunks']}c"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, nargs="*", default=None)
    ap.add_argument("--npus", type=int, nargs="*", default=None, choices=sorted(SHAPES))
    ap.add_argument("--chunks", type=int, nargs="*", default=None)
    ap.add_argument("--files", nargs="*", default=None, help="problem files to measure instead of synthetic cases")
    ap.add_argument("--cli", action="store_true", help="also time the whole 'codesign solve FILE' command (files)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case; times are medians (default 1)")
    ap.add_argument("--split", action="store_true", help="also print where the solve's time went")
    ap.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    ap.add_argument("--plot", metavar="PNG", help="draw time and memory against layers, NPUs and chunks")
    args = ap.parse_args()
    if args.files:
        grid = [{"file": f} for f in args.files]
    elif args.layers or args.npus or args.chunks:
        grid = [{"layers": l_, "npus": n, "chunks": c} for l_ in (args.layers or [500]) for n in (args.npus or [1024])
                for c in (args.chunks or [4])]
    else:  # one axis at a time around 500 layers, 1024 NPUs, 4 chunks, and the target case
        grid = ([{"layers": l_, "npus": 1024, "chunks": 4} for l_ in (50, 100, 250, 500, 1000)]
                + [{"layers": 500, "npus": n, "chunks": 4} for n in (64, 256, 4096)]
                + [{"layers": 500, "npus": 1024, "chunks": c} for c in (1, 8)]
                + [{"layers": 1000, "npus": 4096, "chunks": 4}])
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; each case in fresh processes, "
          f"{args.repeat} run(s) each (times: median); load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("solve+val = codesign.solve + validate in process; proc = the whole process (start, imports, load "
          "included); peak = its max RSS")
    print(f"{'case':28s} {'status':>8s} {'period':>11s} {'evals':>5s} {'solve':>7s} {'valid.':>6s} "
          f"{'solve+val':>9s} {'proc':>7s} {'peak':>6s} {'simulate':>8s} {'proc':>7s} {'peak':>6s} {'events':>8s} "
          f"{'ev/s':>6s}{'  cli (s, MB)' if args.cli else ''}", flush=True)
    rows = []
    for spec in grid:
        runs = [measure(spec, args.cli) for _ in range(args.repeat)]
        bad = [x for x in runs if "error" in x]
        if bad:
            print(f"{label(spec):28s} error: {bad[0]['error']}", flush=True)
            rows.append(bad[0])
            continue
        r = median_of(runs)
        r["load_after"] = os.getloadavg()[0]
        rows.append(r)
        cli = f"  {r['cli_s']:6.2f} {r['cli_peak_mb']:5.0f}" if "cli_s" in r else ""
        print(f"{label(r):28s} {r['status']:>8s} {r['period_ms']:9.3f}ms {r['evaluations']:5d} {r['solve_s']:6.2f}s "
              f"{r['validate_s']:5.2f}s {r['solve_s'] + r['validate_s']:8.2f}s {r['solve_proc_s']:6.2f}s "
              f"{r['solve_peak_mb']:4.0f}MB {r['simulate_s']:7.2f}s {r['sim_proc_s']:6.2f}s {r['sim_peak_mb']:4.0f}MB "
              f"{r['events']:8d} {r['events_per_s'] / 1e6:5.2f}M{cli}", flush=True)
        if args.split:
            other = r["solve_s"] - r["replays_s"] - r["highs_s"] - r["build_s"] - r["compile_s"]
            anyg = f"{100 * r['any_order_gap']:.2f}%" if r.get("any_order_gap") is not None else "-"
            print(f"{'':28s}   solve: replays {r['replays_s']:.2f} s ({r['evaluations']}), HiGHS {r['highs_s']:.2f} s "
                  f"({r['highs_runs']} runs), master build {r['build_s']:.2f} s, compile {r['compile_s']:.2f} s, "
                  f"other {other:.2f} s; load {r['load_s']:.2f} s, import {r['import_s']:.2f} s; MIP gap "
                  f"{100 * (r['gap'] or 0):.3f}%, any-order gap {anyg}", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    if args.plot:
        plot([r for r in rows if "error" not in r and "file" not in r], args.plot)
        print(f"wrote {args.plot}")
    return 0


def plot(rows: list[dict], path: str) -> None:
    """Time (s) and peak memory (MB) against layers, NPUs and chunks, one axis varied at a time around the
    grid's centre (500 layers, 1024 NPUs, 4 chunks); the target case is marked on its own."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    centre = {"layers": 500, "npus": 1024, "chunks": 4}
    axes = [("layers", "layers (1024 NPUs, 4 chunks)"), ("npus", "NPUs (500 layers, 4 chunks)"),
            ("chunks", "chunks per collective (500 layers, 1024 NPUs)")]
    fig, ax = plt.subplots(2, 3, figsize=(12, 6.5), sharey="row")
    for j, (key, title) in enumerate(axes):
        pts = sorted((r for r in rows if all(r[k] == v for k, v in centre.items() if k != key)), key=lambda r: r[key])
        x = [r[key] for r in pts]
        ax[0, j].plot(x, [r["solve_s"] + r["validate_s"] for r in pts], "o-", label="solve + validate")
        ax[0, j].plot(x, [r["simulate_s"] for r in pts], "s-", label="simulate (one replay)")
        ax[0, j].plot(x, [r["solve_proc_s"] for r in pts], "^:", label="solve process (whole)")
        ax[1, j].plot(x, [r["solve_peak_mb"] for r in pts], "o-", label="solve + validate process")
        ax[1, j].plot(x, [r["sim_peak_mb"] for r in pts], "s-", label="simulate process")
        for a in ax[:, j]:
            a.set_xscale("log", base=2)
            a.grid(True, alpha=0.3)
        ax[1, j].set_xlabel(title)
    target = [r for r in rows if r["layers"] == 1000 and r["npus"] == 4096]
    for r in target:
        ax[0, 1].plot([4096], [r["solve_s"] + r["validate_s"]], "r*", ms=12, label="1000 layers, 4096 NPUs")
        ax[0, 1].plot([4096], [r["simulate_s"]], "r*", ms=12)
        ax[1, 1].plot([4096], [r["solve_peak_mb"]], "r*", ms=12)
    ax[0, 0].set_ylabel("wall time (s)")
    ax[1, 0].set_ylabel("peak RSS (MB)")
    ax[0, 1].legend(fontsize=8)
    ax[1, 0].legend(fontsize=8)
    fig.suptitle("codesign at scale: synthetic data-parallel models, ACE sized (benchmarks/scaling.py)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
