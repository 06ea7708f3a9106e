"""Benchmark: joint ACE sizing + network order (``order: optimize``), the naive big-M model against ours.

Instances: ResNet-50's layers (ASTRA-sim's workload, problems/resnet50_ace_torus3d.yaml: 4x4x4 torus,
the ACE catalog of 6 SRAM x 4 ALU x 4 DMA options under 4 mm^2 and 6 W) cut to N collectives: for
N < 54 layers evenly spaced through the network, for N > 54 the 54 layers repeated (renamed). Chunks
per collective 1, 4, 8. ``--family fast`` makes every link 4x faster, so that communication no longer
swamps compute and the order matters more.

Each case runs in a fresh process (HiGHS's thread pool and Pyomo's caches start cold), on
``--threads`` threads (2), with ``--time-limit`` seconds (60) and a relative gap of 1e-4:
  naive  benchmarks/naive_bigm.py built in Pyomo, solved by HiGHS through Pyomo, no MIP start;
  ours   codesign.solve with order: optimize (enumerate designs, dominance, Horn's bound, list schedule
         + local search, positional MILPs in highspy with immediate selections, start and cutoff).
Reported: wall time (build + solve), status, period found and proven bound (us), gap, the size of the
(largest) MILP, its largest big-M, and the LP relaxation's bound. Run from the repository root:

    /work/venv/bin/python benchmarks/milp_scaling.py                    # the full table (~20 min)
    /work/venv/bin/python benchmarks/milp_scaling.py --n 54 --chunks 4 --models ours
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


def instance(n: int, chunks: int, threads: int, time_limit: float, family: str = "resnet"):
    """ResNet-50's problem cut or repeated to ``n`` collectives, ``chunks`` per collective."""
    import numpy as np

    import codesign
    from codesign.problem.model import SolverSpec
    p = codesign.load_problem(ROOT / "problems" / "resnet50_ace_torus3d.yaml")
    layers = p.workload.layers
    if n <= len(layers):
        idx = sorted(set(np.linspace(0, len(layers) - 1, n).round().astype(int).tolist()))
        chosen = [layers[i] for i in idx]
    else:
        L = len(layers)
        chosen = [dataclasses.replace(layers[i % L], name=f"{layers[i % L].name}#{i // L}") for i in range(n)]
    w = dataclasses.replace(p.workload, layers=tuple(chosen))
    topo = p.topology
    if family == "fast":
        topo = dataclasses.replace(topo, dims=tuple(dataclasses.replace(d, link_bandwidth=4 * d.link_bandwidth)
                                                    for d in topo.dims))
    return dataclasses.replace(p, workload=w, topology=topo,
                               schedule=dataclasses.replace(p.schedule, order="optimize", chunks=chunks),
                               solver=SolverSpec("bench", time_limit, 1e-4, threads, True))


def run_naive(p, time_limit: float) -> dict:
    from naive_bigm import build_naive

    from codesign.milp.data import model_data
    from codesign.milp.diagnostics import largest_big_m, lp_relaxation_bound
    from codesign.milp.highs import solve_model
    t0 = time.perf_counter()
    md = model_data(p)
    m = build_naive(md)
    built = time.perf_counter() - t0
    st = solve_model(m, p.solver, time_limit)
    total = time.perf_counter() - t0
    root = lp_relaxation_bound(m, time_limit)   # after the timed solve, as for ours
    return {"status": st.status, "total_s": total, "build_s": built, "objective_us": st.objective,
            "bound_us": st.bound, "gap": st.gap, "variables": st.size.variables, "binaries": st.size.binaries,
            "constraints": st.size.constraints, "big_m": largest_big_m(m), "root_lp_us": root}


def run_ours(p, time_limit: float) -> dict:
    import codesign
    from codesign.milp.data import TIME_UNIT
    t0 = time.perf_counter()
    s = codesign.solve(p, time_limit=time_limit, diagnose=True)
    d = s.diagnostics
    total = time.perf_counter() - t0 - d["lp_time_s"]   # the diagnostic LP runs after the solve; not counted
    return {"status": s.status, "total_s": total, "build_s": None, "objective_us": s.iteration_time_s / TIME_UNIT,
            "bound_us": s.bound_s / TIME_UNIT, "gap": s.gap, "variables": d["variables"], "binaries": d["binaries"],
            "constraints": d["constraints"], "big_m": 0.0, "root_lp_us": d["root_lp_bound"],
            "horn_us": d["horn_bound"], "milps": d["milps"], "settled": d["settled"],
            "lifo_us": s.order_comparison["lifo_s"] / TIME_UNIT, "fifo_us": s.order_comparison["fifo_s"] / TIME_UNIT}


def run_flow_shop(p, time_limit: float) -> dict:
    """The flow-shop view at the serial optimum's design: the bound on any replay, LIFO's priorities,
    the serial sequence as priorities, priorities refined for ``time_limit`` s, and the simulator."""
    import codesign
    from codesign.milp.data import TIME_UNIT, model_data
    from codesign.milp.flowshop import bound_terms, flow_shop, list_schedule
    from codesign.platform.endpoint import design_of
    from codesign.sim.replay import simulate
    t0 = time.perf_counter()
    s = codesign.solve(p, refine_s=time_limit)
    total = time.perf_counter() - t0
    design = design_of(p.engine, s.choice)
    fs = flow_shop(p, design)
    it = model_data(p).iteration
    lifo = sorted(range(len(it.comms)), key=lambda k: -it.comms[k].issue_after)
    terms = bound_terms(fs)
    binding = max(terms, key=terms.get)
    pri = s.priority or s.order
    c = s.order_comparison
    lifo_p = dataclasses.replace(p, schedule=dataclasses.replace(p.schedule, order="lifo"))
    return {"total_s": total, "bound_us": terms[binding], "binding": binding,
            "lifo_us": list_schedule(fs, lifo), "sequence_us": c["flow_shop_sequence_s"] / TIME_UNIT,
            "refined_us": c["flow_shop_refined_s"] / TIME_UNIT,
            "sim_refined_us": simulate(p, design, order=pri).period_s / TIME_UNIT,
            "sim_lifo_us": simulate(lifo_p, design).period_s / TIME_UNIT, "serial_us": s.iteration_time_s / TIME_UNIT}


def one_case(args: argparse.Namespace) -> None:
    case = json.loads(args.case)
    p = instance(case["n"], case["chunks"], case["threads"], case["time_limit"], case["family"])
    if case.get("engine") == "baseline":
        b = codesign_problem("resnet50_baseline_torus3d.yaml")
        p = dataclasses.replace(p, engine=b.engine, npu=b.npu)
    run = {"naive": run_naive, "ours": run_ours, "flowshop": run_flow_shop}[case["model"]]
    print(json.dumps({**case, **run(p, case["time_limit"])}))


def codesign_problem(name: str):
    import codesign
    return codesign.load_problem(ROOT / "problems" / name)


def fmt(x, spec: str = ".6g") -> str:
    return "-" if x is None else format(x, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10, 25, 54, 100, 200])
    ap.add_argument("--chunks", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--models", nargs="+", default=["naive", "ours"], choices=["naive", "ours"])
    ap.add_argument("--family", default="resnet", choices=["resnet", "fast"])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--flow-shop", action="store_true", help="the flow-shop table: bound, list schedules, "
                    "priorities refined for --time-limit s, and the simulator, at the serial optimum's design")
    ap.add_argument("--engine", default="ace", choices=["ace", "baseline"])
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        one_case(args)
        return
    if args.flow_shop:
        flow_shop_table(args)
        return
    print(f"Python {platform.python_version()} on {platform.machine()}; HiGHS {args.threads} threads; "
          f"time limit {args.time_limit:g} s; gap 1e-4; family {args.family}")
    print()
    print("| N | chunks | model | status | wall (s) | period (us) | bound (us) | gap | variables | binaries | "
          "constraints | largest M | root LP (us) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.n:
        for k in args.chunks:
            for model in args.models:
                case = {"n": n, "chunks": k, "model": model, "threads": args.threads, "time_limit": args.time_limit,
                        "family": args.family}
                r = subprocess.run([sys.executable, __file__, "--case", json.dumps(case)], capture_output=True,
                                   check=False, text=True, cwd=ROOT)
                line = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
                if r.returncode != 0 or not line:
                    print(f"| {n} | {k} | {model} | error | | | | | | | | | |  <!-- {r.stderr.strip()[-300:]} -->")
                    continue
                o = json.loads(line[-1])
                gap = f"{100 * o['gap']:.3f}%" if o["gap"] is not None else "-"
                print(f"| {n} | {k} | {model} | {o['status']} | {o['total_s']:.2f} | {fmt(o['objective_us'], '.2f')} | "
                      f"{fmt(o['bound_us'], '.2f')} | {gap} | {o['variables']} | {o['binaries']} | "
                      f"{o['constraints']} | {fmt(o['big_m'], '.4g')} | {fmt(o['root_lp_us'], '.2f')} |", flush=True)


def flow_shop_table(args: argparse.Namespace) -> None:
    print(f"Python {platform.python_version()} on {platform.machine()}; {args.engine} engine; priorities refined for "
          f"{args.time_limit:g} s; family {args.family}; periods in us")
    print()
    print("| N | chunks | serial MILP | flow-shop bound (binding) | LIFO | sequence | refined | gap | "
          "simulated refined | simulated LIFO | wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.n:
        for k in args.chunks:
            case = {"n": n, "chunks": k, "model": "flowshop", "threads": args.threads, "time_limit": args.time_limit,
                    "family": args.family, "engine": args.engine}
            r = subprocess.run([sys.executable, __file__, "--case", json.dumps(case)], capture_output=True, text=True,
                               check=False, cwd=ROOT)
            line = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
            if r.returncode != 0 or not line:
                print(f"| {n} | {k} | error | | | | | | | | |  <!-- {r.stderr.strip()[-300:]} -->")
                continue
            o = json.loads(line[-1])
            gap = 100 * (o["refined_us"] - o["bound_us"]) / o["refined_us"]
            print(f"| {n} | {k} | {o['serial_us']:.1f} | {o['bound_us']:.1f} ({o['binding']}) | {o['lifo_us']:.1f} | "
                  f"{o['sequence_us']:.1f} | {o['refined_us']:.1f} | {gap:.2f}% | {o['sim_refined_us']:.1f} | "
                  f"{o['sim_lifo_us']:.1f} | {o['total_s']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
