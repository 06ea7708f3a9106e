"""Reproduce the ACE study (docs/paper.md) with codesign: every case solved by the MILP and replayed.

    python -m codesign.study --generate         # (re)write problems/paper/ from study/cases.py
    codesign reproduce [--json] [--out DIR]     # run the study (codesign/cli/study.py)

    from codesign.study.run import run_study
    study = run_study(workers=2)
    print(study.summary["workloads"]["resnet50"]["speedup_avg"])

Each case (a problem file under problems/paper/, built by ``study.cases``) is solved with
``codesign.solve`` and replayed with ``codesign.pipeline.validation.validate``; the HBM-bandwidth sweep runs a
micro benchmark per network size and bandwidth (``study.metrics``). Cases run in a local process
pool, one solve per process at a time (HiGHS through Pyomo must not share a process). The summary's
headline figures come from the simulator's replay of the MILP's designs; the MILP's own figures sit
beside them under ``milp``. Times in seconds, bandwidths in bytes/s.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import SpecError
from .cases import (BASELINES, HBM_ENGINES, HBM_NET_SCALES, SENSITIVITY_NPUS, SHAPES, WORKLOADS, Case, HbmCase,
                    generate, hbm_cases, study_cases)
from .metrics import (busy_time, hbm_point, maximum, mean, milp_comm_intervals, network_load, sim_comm_intervals,
                      utilization)

#: The paper's numbers (docs/paper.md, from the abstract of Rashidi et al., ISCA 2021).
PAPER = {
    "workloads": {"resnet50": {"speedup_avg": 1.41, "speedup_max": 1.51},
                  "gnmt": {"speedup_avg": 1.12, "speedup_max": 1.17},
                  "dlrm": {"speedup_avg": 1.13, "speedup_max": 1.19}},
    "hbm_reduction_avg": 3.5, "utilization_gain_avg": 1.44, "utilization_gain_max": 2.67,
}
HEADLINE = "sim"  # which figure the top-level numbers use: the replay ("sim") or the MILP ("milp")
FIGURES = ("sim", "milp")


def default_problems_dir() -> Path:
    """problems/paper/ of the source tree this package runs from."""
    return Path(__file__).resolve().parents[2] / "problems" / "paper"


# ---------------------------------------------------------------- the workers' side

def _quiet_worker() -> None:
    """Pool initializer: the solver's chatter goes to stderr, never into ``--json`` on stdout."""
    try:
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def run_case(problems_dir: str, case: Case, time_limit: float | None = None) -> dict[str, Any]:
    """Solve and replay one case; return its row (never raises: a failure is a row with ``error``)."""
    from ..pipeline.solve import solve
    from ..pipeline.validation import validate
    from ..problem.load import load_problem

    t0 = time.perf_counter()
    row: dict[str, Any] = {"key": case.key, "group": case.group, "workload": case.workload, "npus": case.npus,
                           "shape": "x".join(map(str, SHAPES[case.npus])), "config": case.config,
                           "latency_s": case.latency_s, "file": f"problems/paper/{case.file}", "error": ""}
    try:
        problem = load_problem(Path(problems_dir) / case.file)
        sol = solve(problem, time_limit=time_limit)
        val = validate(problem, sol)
        load = network_load(problem)
        sim = val.sim
        net_milp = busy_time(milp_comm_intervals(sol), sol.iteration_time_s)
        net_sim = busy_time(sim_comm_intervals(sim), sim.period_s)
        row.update({
            "engine": problem.engine.kind, "status": sol.status, "gap": sol.gap, "solve_s": sol.solve_time_s,
            "milp_s": sol.iteration_time_s, "sim_s": sim.period_s, "sim_vs_milp": val.rel_diff,
            "lower_bound_s": val.bound.bound_s, "milp_compute_s": sol.compute_time_s,
            "milp_exposed_s": sol.exposed_comm_s, "sim_compute_s": sim.compute_time_s,
            "sim_exposed_s": sim.exposed_comm_s, "milp_net_busy_s": net_milp, "sim_net_busy_s": net_sim,
            "wire_bytes": load.total_bytes, "peak_network_bandwidth": load.peak_bandwidth,
            "milp_utilization": utilization(load, net_milp), "sim_utilization": utilization(load, net_sim),
            "comm_cores": sol.design.get("comm_cores"), "comm_hbm_share": sol.design.get("comm_hbm_share"),
            "sram_bytes": sol.design.get("sram"), "alu_bytes_per_s": sol.design.get("alu"),
            "dma_bytes_per_s": sol.design.get("dma"), "area_mm2": sol.area_mm2 if problem.engine.kind == "ace" else None,
            "finding": val.findings[0] if (val.flagged and val.findings) else "",
        })
    except Exception as e:  # noqa: BLE001 - one failed case must not end the study; the row says why
        row["error"] = f"{type(e).__name__}: {e}"
    row["wall_s"] = time.perf_counter() - t0
    return row


def run_hbm(problems_dir: str, npus: int, net_scale: float) -> dict[str, Any]:
    """The HBM sweep at one network size and bandwidth scale, as a row."""
    from ..problem.load import load_problem

    t0 = time.perf_counter()
    row: dict[str, Any] = {"npus": npus, "shape": "x".join(map(str, SHAPES[npus])), "net_scale": net_scale, "error": ""}
    try:
        problems = {e: load_problem(Path(problems_dir) / HbmCase(npus, e).file) for e in HBM_ENGINES}
        pt = hbm_point(problems, npus, net_scale)
        row["network_bandwidth"] = pt.network_bandwidth
        for fig in ("model", "sim"):
            name = "milp" if fig == "model" else "sim"
            row[f"{name}_ideal_allreduce_s"] = pt.ideal_time[fig]
            row[f"{name}_baseline_hbm"] = pt.needed[fig]["baseline"]
            row[f"{name}_ace_hbm"] = pt.needed[fig]["ace"]
            row[f"{name}_reduction"] = pt.reduction(fig)
    except Exception as e:  # noqa: BLE001
        row["error"] = f"{type(e).__name__}: {e}"
    row["wall_s"] = time.perf_counter() - t0
    return row


# ---------------------------------------------------------------- running

def _failed_row(kind: str, args: tuple, message: str) -> dict[str, Any]:
    """The row of a job whose worker died before it could report."""
    if kind == "case":
        c: Case = args[1]
        return {"key": c.key, "group": c.group, "workload": c.workload, "npus": c.npus, "config": c.config,
                "latency_s": c.latency_s, "file": f"problems/paper/{c.file}", "error": message, "wall_s": 0.0}
    return {"npus": args[1], "shape": "x".join(map(str, SHAPES[args[1]])), "net_scale": args[2], "error": message,
            "wall_s": 0.0}


@dataclass
class Study:
    """A finished study: every case's row, the HBM sweep's rows, the summary (``summarize``; its keys are
    described in docs/reproduce.md) and the wall time (s)."""

    cases: list[dict[str, Any]]
    hbm: list[dict[str, Any]]
    summary: dict[str, Any]
    wall_s: float
    workers: int


def _pool(workers: int) -> Any:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    # a fork server that has imported codesign once: workers start fast and never inherit a used HiGHS
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["codesign.study.run", "codesign.pipeline.solve", "codesign.pipeline.validation"])
    return ProcessPoolExecutor(workers, mp_context=ctx, initializer=_quiet_worker)


def _cost(case: Case) -> float:
    """Rough relative solve cost, to start the long cases first."""
    sized = case.config in ("baseline", "no_overlap", "ace")  # catalogs to choose from: longer solves
    return {"resnet50": 10, "gnmt": 2, "dlrm": 2}.get(case.workload, 1) * (3 if sized else 1)


def run_study(*, workloads: Sequence[str] = tuple(WORKLOADS), sizes: Sequence[int] = tuple(SHAPES),
              latency: bool = True, hbm: bool = True, workers: int | None = None,
              problems_dir: str | Path | None = None, time_limit: float | None = None,
              progress: Callable[[int, int, dict[str, Any]], None] | None = None) -> Study:
    """Run the study (or a reduced one: some ``workloads`` and ``sizes``; ``latency`` adds the link-latency
    sensitivity at 64 NPUs, ``hbm`` the HBM-bandwidth sweep). ``problems_dir`` holds the case files
    (default problems/paper/ of the source tree; generated there if missing). ``workers``: processes
    (default one per core; 1 runs in this process). ``progress(done, total, row)`` after each case."""
    workloads, sizes = tuple(workloads), tuple(sizes)
    for w in workloads:
        if w not in WORKLOADS:
            raise SpecError(f"unknown workload {w!r}; expected some of {', '.join(WORKLOADS)}")
    for n in sizes:
        if n not in SHAPES:
            raise SpecError(f"unknown network size {n}; expected some of {', '.join(map(str, SHAPES))}")
    pdir = Path(problems_dir) if problems_dir is not None else default_problems_dir()
    cases = study_cases(workloads, sizes, latency)
    hcases = [(n, s) for n in sizes for s in HBM_NET_SCALES] if hbm else []
    missing = [c.file for c in cases if not (pdir / c.file).exists()]
    missing += [h.file for h in hbm_cases(sizes) if hbm and not (pdir / h.file).exists()]
    if missing:
        if not (pdir.parent / "workloads").exists():
            raise SpecError(f"{pdir}: {len(missing)} case file(s) missing (e.g. {missing[0]}) and no "
                            f"{pdir.parent / 'workloads'} to generate them beside; run from the source tree")
        generate(pdir, workloads=workloads, sizes=sizes, latency=latency)
    n = workers or os.cpu_count() or 1
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    hrows: list[dict[str, Any]] = []
    total = len(cases) + len(hcases)
    jobs: list[tuple[str, Callable[..., dict[str, Any]], tuple]] = [
        ("case", run_case, (str(pdir), c, time_limit)) for c in sorted(cases, key=_cost, reverse=True)]
    jobs += [("hbm", run_hbm, (str(pdir), nn, s)) for nn, s in hcases]

    def record(kind: str, row: dict[str, Any]) -> None:
        (rows if kind == "case" else hrows).append(row)
        if progress:
            progress(len(rows) + len(hrows), total, row)

    if n == 1:
        for kind, fn, args in jobs:
            record(kind, fn(*args))
    else:
        from concurrent.futures import as_completed
        ex = _pool(min(n, total) or 1)
        try:
            futures = {ex.submit(fn, *args): (kind, args) for kind, fn, args in jobs}
            for f in as_completed(futures):
                kind, args = futures[f]
                try:
                    row = f.result()
                except Exception as e:  # noqa: BLE001 - e.g. a worker killed by a crash in the solver
                    row = _failed_row(kind, args, f"{type(e).__name__}: {e}")
                record(kind, row)
        finally:
            ex.shutdown(wait=True, cancel_futures=True)
    order = {c.key: i for i, c in enumerate(cases)}
    rows.sort(key=lambda r: order[r["key"]])
    hrows.sort(key=lambda r: (r["npus"], r["net_scale"]))
    wall = time.perf_counter() - t0
    summary = summarize(rows, hrows)
    summary["wall_s"] = wall
    summary["workers"] = n
    summary["cases_run"] = len(rows)
    return Study(rows, hrows, summary, wall, n)


# ---------------------------------------------------------------- the summary

def compare(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One comparison per (group, workload, size, latency): the best baseline by each figure, ACE, the
    ideal endpoint, the speedup and the utilization gain by each figure."""
    groups: dict[tuple, dict[str, dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["group"], r["workload"], r["npus"], r["latency_s"]), {})[r["config"]] = r
    out = []
    for (group, w, n, lat), by in groups.items():
        c: dict[str, Any] = {"group": group, "workload": w, "npus": n, "shape": "x".join(map(str, SHAPES[n])),
                             "latency_s": lat}
        ace = by.get("ace")
        ok = [by[b] for b in BASELINES if b in by and not by[b]["error"]]
        if ace is None or ace["error"] or not ok:
            c["error"] = "missing or failed: " + ", ".join(k for k in ("ace", *BASELINES) if k not in by or by[k]["error"])
            out.append(c)
            continue
        for fig in FIGURES:
            best = min(ok, key=lambda r: r[f"{fig}_s"])
            c[f"{fig}_best_baseline"] = best["config"]
            c[f"{fig}_baseline_s"] = best[f"{fig}_s"]
            c[f"{fig}_ace_s"] = ace[f"{fig}_s"]
            c[f"{fig}_speedup"] = best[f"{fig}_s"] / ace[f"{fig}_s"]
            c[f"{fig}_utilization_baseline"] = best[f"{fig}_utilization"]
            c[f"{fig}_utilization_ace"] = ace[f"{fig}_utilization"]
            c[f"{fig}_utilization_gain"] = (ace[f"{fig}_utilization"] / best[f"{fig}_utilization"]
                                            if best[f"{fig}_utilization"] > 0 else math.nan)
            ideal = by.get("ideal")
            c[f"{fig}_ideal_s"] = ideal[f"{fig}_s"] if ideal and not ideal["error"] else None
        base = by.get("baseline")
        c["baseline_design"] = (f"{base['comm_cores']:g} cores, {base['comm_hbm_share']:.0%} HBM"
                                if base and not base["error"] else "")
        c["ace_design"] = (f"SRAM {ace['sram_bytes'] / 2**20:g} MiB, ALU {ace['alu_bytes_per_s'] / 1e9:g} GB/s, "
                           f"DMA {ace['dma_bytes_per_s'] / 1e9:g} GB/s, {ace['area_mm2']:.2g} mm^2")
        diffs = [(abs(r["sim_vs_milp"]), r["config"], r["sim_vs_milp"]) for r in by.values() if not r["error"]]
        worst = max(diffs)
        c["worst_sim_vs_milp"] = worst[2]
        c["worst_sim_vs_milp_config"] = worst[1]
        out.append(c)
    return out


def summarize(rows: Sequence[dict[str, Any]], hrows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The headline numbers (by the HEADLINE figure), the same by the other figure under ``milp``, the
    paper's beside them, and the comparisons behind them."""
    comps = compare(rows)
    study = [c for c in comps if c["group"] == "study" and "error" not in c]

    def block(fig: str) -> dict[str, Any]:
        wl = {}
        for w in dict.fromkeys(c["workload"] for c in study):
            sp = [c[f"{fig}_speedup"] for c in study if c["workload"] == w]
            wl[w] = {"speedup_avg": mean(sp), "speedup_max": maximum(sp),
                     "sizes": {str(c["npus"]): c[f"{fig}_speedup"] for c in study if c["workload"] == w}}
        gains = [c[f"{fig}_utilization_gain"] for c in study]
        red = [h[f"{fig}_reduction"] for h in hrows if not h["error"]]
        return {"workloads": wl, "hbm_reduction_avg": mean(red), "utilization_gain_avg": mean(gains),
                "utilization_gain_max": maximum(gains)}

    head = block(HEADLINE)
    other = "milp" if HEADLINE == "sim" else "sim"
    out: dict[str, Any] = {"headline_figure": "simulator" if HEADLINE == "sim" else "milp", **head}
    out[other] = block(other)
    for w, d in out["workloads"].items():
        d["paper"] = PAPER["workloads"].get(w)
        d[other] = {k: out[other]["workloads"][w][k] for k in ("speedup_avg", "speedup_max")}
    out["paper"] = PAPER
    out["comparisons"] = comps
    out["latency_sensitivity"] = [
        {"workload": c["workload"], "npus": c["npus"], "latency_s": c["latency_s"],
         "sim_speedup": c.get("sim_speedup"), "milp_speedup": c.get("milp_speedup"),
         "sim_utilization_gain": c.get("sim_utilization_gain"), "milp_utilization_gain": c.get("milp_utilization_gain")}
        for c in comps if c["npus"] == SENSITIVITY_NPUS and "error" not in c]
    out["hbm"] = list(hrows)
    out["failed"] = [r["key"] for r in rows if r["error"]] + [f"hbm n{h['npus']} x{h['net_scale']}" for h in hrows if h["error"]]
    return out


# ---------------------------------------------------------------- python -m codesign.study --generate

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m codesign.study",
                                 description="Write the ACE study's problem files (problems/paper/).")
    ap.add_argument("--generate", action="store_true", help="(re)write every case's problem file")
    ap.add_argument("--dir", default=str(default_problems_dir()), help="where (default: problems/paper/)")
    args = ap.parse_args(argv)
    if not args.generate:
        ap.print_help()
        return 0
    written = generate(args.dir)
    print(f"wrote {len(written)} problem files under {args.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
