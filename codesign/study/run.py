"""Reproduce the ACE study (docs/paper.md) with codesign: every case solved, the HBM sweep replayed.

    python -m codesign.study --generate         # (re)write problems/paper/ from study/cases.py
    codesign reproduce [--json] [--out DIR]     # run the study (codesign/cli/study.py)

    from codesign.study.run import run_study
    study = run_study(workers=2, out="out/ace_study")
    print(study.summary["workloads"]["resnet50"]["speedup_avg"])

Each case (a problem file under problems/paper/, built by ``study.cases``) is solved with
``codesign.solve``, whose answer is the simulated period of the best design; the HBM-bandwidth sweep
replays a micro benchmark per network size and bandwidth (``study.metrics``). The problems are loaded
here and sent as data to the sweep's runners (``codesign.explore.executors``): a local process pool
that restarts when a worker dies, Dask (a LocalCluster or a scheduler address), or this process. With
``out``, every finished case is appended to ``cases.csv`` (the HBM sweep to ``hbm.csv``) there as it
finishes, through the sweep's results file (``codesign.explore.results``), so a study killed at any
moment resumes where it stopped: a rerun solves only what is missing from those files, failed, or
whose problem has changed since (a row carries a digest of its problem's content and the solve options).
Times in seconds, bandwidths in bytes/s.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InfeasibleError, SpecError
from ..explore.executors import make_runner
from ..explore.results import ResultsFile
from ..explore.sweep import Progress, point_key
from ..problem.model import Problem
from .cases import (
    BASELINES,
    HBM_ENGINES,
    HBM_NET_SCALES,
    SENSITIVITY_NPUS,
    SHAPES,
    WORKLOADS,
    Case,
    HbmCase,
    generate,
    hbm_cases,
    study_cases,
)
from .metrics import (
    PAPER_BASELINES,
    busy_time,
    comm_intervals,
    fastest,
    hbm_point,
    maximum,
    mean,
    network_load,
    utilization,
)

#: The paper's numbers (docs/paper.md, from the abstract of Rashidi et al., ISCA 2021).
PAPER = {
    "workloads": {"resnet50": {"speedup_avg": 1.41, "speedup_max": 1.51},
                  "gnmt": {"speedup_avg": 1.12, "speedup_max": 1.17},
                  "dlrm": {"speedup_avg": 1.13, "speedup_max": 1.19}},
    "hbm_reduction_avg": 3.5, "utilization_gain_avg": 1.44, "utilization_gain_max": 2.67,
}

#: A case's row (cases.csv), SI units: the case, the solve (``iteration_time_s`` is the simulated period of
#: the design codesign chose, ``bound_s`` a proven lower bound on every design's), the network's use in
#: that replay, the design, and the bookkeeping of the run.
CASE_COLUMNS = ("key", "group", "workload", "npus", "shape", "config", "latency_s", "engine", "status", "gap",
                "iteration_time_s", "bound_s", "compute_time_s", "exposed_comm_s", "net_busy_s", "wire_bytes",
                "peak_network_bandwidth", "utilization", "comm_cores", "comm_hbm_share", "sram_bytes",
                "alu_bytes_per_s", "dma_bytes_per_s", "area_mm2", "power_w", "evaluations", "master_solves",
                "solve_s", "wall_s", "worker", "file", "digest", "notes", "error")
#: A row of the HBM sweep (hbm.csv): one network size and link-bandwidth scale.
HBM_COLUMNS = ("key", "npus", "shape", "net_scale", "network_bandwidth", "ideal_allreduce_s", "baseline_hbm",
               "ace_hbm", "reduction", "status", "wall_s", "worker", "digest", "error")
COLUMNS = {"case": CASE_COLUMNS, "hbm": HBM_COLUMNS}
_INTS = ("npus", "evaluations", "master_solves")
_TEXT = ("digest", "notes", "error", "shape", "file")


def source_tree() -> Path | None:
    """The source tree this package runs from (a checkout or an editable install: ``pyproject.toml`` and
    ``problems/workloads/`` beside the package), or None when it is installed: problems/ is not package data, and
    what sits beside an installed package is ``site-packages``, where nothing may be written."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "problems" / "workloads").is_dir() else None


#: Why there is no default folder of case files, in a message's words.
NO_SOURCE_TREE = ("codesign is installed, not run from its source tree, and the study's problem files are not "
                  "package data")


def default_problems_dir() -> Path:
    """problems/paper/ of the source tree this package runs from; SpecError when there is none (``source_tree``)."""
    root = source_tree()
    if root is None:
        raise SpecError(f"{NO_SOURCE_TREE}: give --problems DIR, a copy of the source tree's problems/paper/ "
                        "(beside its problems/workloads/)")
    return root / "problems" / "paper"


# ---------------------------------------------------------------- the workers' side

@dataclass(frozen=True)
class StudyTask:
    """What a worker receives: a case's problem (``kind`` case) or the HBM sweep's three micro benchmarks at
    one network scale (``kind`` hbm: baseline, ace, ideal), as data; ``key`` names the row."""

    key: str
    kind: str
    problems: tuple[Problem, ...]
    time_limit: float | None = None
    net_scale: float = 1.0


_SOLVE_LOCK = threading.Lock()  # one HiGHS solve per process at a time, whatever the worker's thread count


def run_case(problem: Problem, time_limit: float | None = None) -> dict[str, Any]:
    """Solve one case; its row's results (raises on failure)."""
    from ..pipeline.solve import solve

    with _SOLVE_LOCK:
        sol = solve(problem, time_limit=time_limit)
    sim = sol.sim  # the replay behind the answer: iteration_time_s is its period
    load = network_load(problem)
    busy = busy_time(comm_intervals(sim), sim.period_s)
    d = sol.design
    return {"engine": problem.engine.kind, "status": sol.status, "gap": sol.gap,
            "iteration_time_s": sol.iteration_time_s, "bound_s": sol.bound_s, "compute_time_s": sol.compute_time_s,
            "exposed_comm_s": sol.exposed_comm_s, "net_busy_s": busy, "wire_bytes": load.total_bytes,
            "peak_network_bandwidth": load.peak_bandwidth, "utilization": utilization(load, busy),
            "comm_cores": d.get("comm_cores"), "comm_hbm_share": d.get("comm_hbm_share"), "sram_bytes": d.get("sram"),
            "alu_bytes_per_s": d.get("alu"), "dma_bytes_per_s": d.get("dma"),
            "area_mm2": sol.area_mm2 if problem.engine.kind == "ace" else None,
            "power_w": sol.power_w if problem.engine.kind == "ace" else None,
            "evaluations": sol.evaluations, "master_solves": sol.master_solves, "solve_s": sol.solve_time_s,
            "notes": "; ".join(sol.notes)}


def run_hbm(problems: Sequence[Problem], net_scale: float) -> dict[str, Any]:
    """The HBM sweep at one network scale (``problems``: baseline, ace, ideal micro benchmarks), as a row."""
    pt = hbm_point(dict(zip(HBM_ENGINES, problems)), problems[0].topology.npus, net_scale)
    return {"network_bandwidth": pt.network_bandwidth, "ideal_allreduce_s": pt.ideal_time_s,
            "baseline_hbm": pt.needed["baseline"], "ace_hbm": pt.needed["ace"], "reduction": pt.reduction,
            "status": "done"}


def run_task(task: StudyTask) -> dict[str, Any]:
    """A runner's function (``codesign.explore.executors``): one task's row; never raises (a failure is a
    row with status ``error`` or ``infeasible`` and its message)."""
    import socket

    t0 = time.perf_counter()
    row: dict[str, Any] = {"status": "error", "error": ""}
    try:
        if task.kind == "case":
            row.update(run_case(task.problems[0], task.time_limit))
        else:
            row.update(run_hbm(task.problems, task.net_scale))
    except InfeasibleError as e:
        row.update(status="infeasible", error=str(e))
    except Exception as e:  # noqa: BLE001 - one failed case must not end the study; the row says why
        row.update(status="error", error=f"{type(e).__name__}: {e}")
    row["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    row["wall_s"] = time.perf_counter() - t0
    return row


# ---------------------------------------------------------------- running

@dataclass
class Study:
    """A finished study: every case's row, the HBM sweep's rows (in study order), the summary
    (``summarize``; its keys are described in docs/reproduce.md), the wall time (s) of this run, how many
    rows it solved and how many it took from ``out``, and where it ran."""

    cases: list[dict[str, Any]]
    hbm: list[dict[str, Any]]
    summary: dict[str, Any]
    wall_s: float
    solved: int
    reused: int
    where: str


def _cost(case: Case) -> float:
    """Rough relative solve cost, to start the long cases first."""
    sized = case.config in ("baseline", "no_overlap", "ace")  # catalogs to choose from: longer solves
    return {"resnet50": 10, "gnmt": 2, "dlrm": 2}.get(case.workload, 1) * (3 if sized else 1)


def _digest(problems: Sequence[Problem], *opts: Any) -> str:
    """A digest of the problems' content (``point_key``: labels and paths left out) and the options: a stored
    row is reused only when it matches. Prefixed so that no CSV reader takes it for a number."""
    text = "|".join([*(point_key(p) for p in problems), *map(repr, opts)])
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:20]


def _typed(row: dict[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    """A row with exactly ``columns``, as a results file gives it back (whole numbers and text restored),
    so that a row solved now and one read back from ``out`` are equal."""
    r = {c: row.get(c) for c in columns}
    for k in _INTS:
        if isinstance(r.get(k), float):
            r[k] = int(r[k])
    for k in _TEXT:
        if k in r:
            r[k] = "" if r[k] is None else str(r[k])
    return r


def _rewrite_sorted(store: ResultsFile, columns: Sequence[str], order: dict[str, int]) -> None:
    """Rewrite ``store``'s file with ``columns`` and its rows in study order, leaving out rows without a
    digest (an older study's format); atomically, while the lock is still held."""
    rows = [_typed(r, columns) for r in store.rows.values() if r.get("digest")]
    rows.sort(key=lambda r: (order.get(str(r["key"]), len(order)), str(r["key"])))
    store.rewrite(columns, rows)


def _hbm_key(npus: int, net_scale: float) -> str:
    return f"hbm/n{npus}_x{net_scale:g}"


def _check(workloads: tuple[str, ...], sizes: tuple[int, ...]) -> None:
    for w in workloads:
        if w not in WORKLOADS:
            raise SpecError(f"unknown workload {w!r}; expected some of {', '.join(WORKLOADS)}")
    for n in sizes:
        if n not in SHAPES:
            raise SpecError(f"unknown network size {n}; expected some of {', '.join(map(str, SHAPES))}")


def run_study(*, workloads: Sequence[str] = tuple(WORKLOADS), sizes: Sequence[int] = tuple(SHAPES),
              latency: bool = True, hbm: bool = True, executor: Any = None, workers: int | None = None,
              out: str | Path | None = None, problems_dir: str | Path | None = None,
              time_limit: float | None = None, progress: Callable[[Progress], None] | None = None) -> Study:
    """Run the study (or a reduced one: some ``workloads`` and ``sizes``; ``latency`` adds the link-latency
    sensitivity at 64 NPUs, ``hbm`` the HBM-bandwidth sweep). ``problems_dir`` holds the case files
    (default problems/paper/ of the source tree; generated there if missing). ``executor`` and ``workers``
    as for ``codesign.sweep``: None (a local pool of ``workers`` processes, default one per core),
    ``"serial"`` (this process), ``"dask"`` (a LocalCluster), a scheduler address or a Client. ``out``: the
    directory whose ``cases.csv`` and ``hbm.csv`` record every finished row and make a rerun resume.
    ``progress(Progress)`` once before the first solve (``row`` None), then after each."""
    from ..problem.load import load_problem

    workloads, sizes = tuple(workloads), tuple(sizes)
    _check(workloads, sizes)
    pdir = Path(problems_dir) if problems_dir is not None else default_problems_dir()
    cases = study_cases(workloads, sizes, latency)
    hpoints = [(n, s) for n in sizes for s in HBM_NET_SCALES] if hbm else []
    missing = [c.file for c in cases if not (pdir / c.file).exists()]
    missing += [h.file for h in hbm_cases(sizes) if hbm and not (pdir / h.file).exists()]
    if missing:
        if not (pdir.parent / "workloads").exists():
            raise SpecError(f"{pdir}: {len(missing)} case file(s) missing (e.g. {missing[0]}) and no "
                            f"{pdir.parent / 'workloads'} to generate them beside; give --problems a folder with "
                            "them all, or run from the source tree")
        generate(pdir, workloads=workloads, sizes=sizes, latency=latency, missing_only=True)

    # every task, with the columns that name its row and the digest that says whether a stored row still holds
    tasks: list[StudyTask] = []
    named: dict[str, dict[str, Any]] = {}
    for c in sorted(cases, key=_cost, reverse=True):
        p = load_problem(pdir / c.file)
        tasks.append(StudyTask(c.key, "case", (p,), time_limit))
        named[c.key] = {"key": c.key, "group": c.group, "workload": c.workload, "npus": c.npus,
                        "shape": "x".join(map(str, SHAPES[c.npus])), "config": c.config, "latency_s": c.latency_s,
                        "file": f"problems/paper/{c.file}" if problems_dir is None else str(pdir / c.file),
                        "digest": _digest((p,), time_limit)}
    hbm_problems = {n: tuple(load_problem(pdir / HbmCase(n, e).file) for e in HBM_ENGINES)
                    for n in (sizes if hbm else ())}
    for n, s in hpoints:
        key = _hbm_key(n, s)
        tasks.append(StudyTask(key, "hbm", hbm_problems[n], None, s))
        named[key] = {"key": key, "npus": n, "shape": "x".join(map(str, SHAPES[n])), "net_scale": s,
                      "digest": _digest(hbm_problems[n], s)}

    out_dir = Path(out) if out is not None else None
    stores: dict[str, ResultsFile] = {}
    t0 = time.perf_counter()
    try:
        if out_dir is not None:
            stores["case"] = ResultsFile(out_dir / "cases.csv", CASE_COLUMNS)
            if hbm:
                stores["hbm"] = ResultsFile(out_dir / "hbm.csv", HBM_COLUMNS)
        rows: dict[str, dict[str, Any]] = {}
        for t in tasks:  # a stored row counts if it is this task's, unchanged, and did not fail
            old = stores[t.kind].rows.get(t.key) if t.kind in stores else None
            if old is not None and old.get("digest") == named[t.key]["digest"] and not old.get("error"):
                rows[t.key] = _typed(old, COLUMNS[t.kind])
        todo = [t for t in tasks if t.key not in rows]
        state = Progress(0, len(todo), len(rows), 0, 0.0)
        where = "nothing to solve"
        if progress:
            progress(state)
        if todo:
            runner = make_runner(executor, workers, todo, fn=run_task)
            where = runner.description
            try:
                for task, row in runner.run(todo):
                    full = {**named[task.key], **row}
                    if task.kind in stores:
                        stores[task.kind].append(full)
                    rows[task.key] = _typed(full, COLUMNS[task.kind])
                    state.done += 1
                    state.failed += bool(full.get("error"))
                    state.elapsed_s, state.row = time.perf_counter() - t0, rows[task.key]
                    if progress:
                        progress(state)
            finally:
                runner.close()
        everything = [c.key for c in study_cases()] + [_hbm_key(n, s) for n in SHAPES for s in HBM_NET_SCALES]
        order = {k: i for i, k in enumerate(everything)}
        for kind, store in stores.items():
            _rewrite_sorted(store, COLUMNS[kind], order)
    finally:
        for store in stores.values():
            store.close()
    crows = [rows[c.key] for c in cases]
    hrows = [rows[_hbm_key(n, s)] for n, s in hpoints]
    wall = time.perf_counter() - t0
    summary = summarize(crows, hrows)
    summary.update(wall_s=wall, where=where, solved=len(todo), reused=len(tasks) - len(todo), cases_run=len(crows),
                   task_time_s=sum(r.get("wall_s") or 0.0 for r in rows.values()))
    return Study(crows, hrows, summary, wall, len(todo), len(tasks) - len(todo), where)


# ---------------------------------------------------------------- the summary

def _split(r: dict[str, Any]) -> str:
    return f"{r['comm_cores']:g} cores, {r['comm_hbm_share']:.0%} HBM" if r.get("comm_cores") is not None else ""


def compare(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One comparison per (group, workload, size, latency): the best baseline (the fastest baseline
    configuration), ACE, the ideal endpoint, the speedup and the utilization gain."""
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
            bad = [k for k in ("ace", *BASELINES) if k not in by or by[k]["error"]]
            c["error"] = "missing or failed: " + ", ".join(bad)
            out.append(c)
            continue
        best = fastest(by, BASELINES)
        ideal = by.get("ideal")
        c.update({
            "best_baseline": best["config"], "baseline_s": best["iteration_time_s"], "baseline_design": _split(best),
            "ace_s": ace["iteration_time_s"], "speedup": best["iteration_time_s"] / ace["iteration_time_s"],
            "utilization_baseline": best["utilization"], "utilization_ace": ace["utilization"],
            "utilization_gain": ace["utilization"] / best["utilization"] if best["utilization"] > 0 else float("nan"),
            "ideal_s": ideal["iteration_time_s"] if ideal and not ideal["error"] else None,
            "ace_design": (f"SRAM {ace['sram_bytes'] / 2**20:g} MiB, ALU {ace['alu_bytes_per_s'] / 1e9:g} GB/s, "
                           f"DMA {ace['dma_bytes_per_s'] / 1e9:g} GB/s, {ace['area_mm2']:.2g} mm^2"),
            "not_optimal": ", ".join(k for k, r in by.items() if not r["error"] and r["status"] != "optimal"),
        })
        paper = fastest(by, PAPER_BASELINES)  # the paper's definition of the best baseline
        c.update({"paper_baseline": paper["config"] if paper else None,
                  "paper_baseline_s": paper["iteration_time_s"] if paper else None,
                  "speedup_paper": paper["iteration_time_s"] / ace["iteration_time_s"] if paper else None})
        out.append(c)
    return out


def summarize(rows: Sequence[dict[str, Any]], hrows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The numbers to set beside the paper's (per workload, the speedup's average and maximum over network
    sizes; the HBM reduction's average; the utilization gain's average and maximum), the paper's, and the
    comparisons behind them."""
    comps = compare(rows)
    study = [c for c in comps if c["group"] == "study" and "error" not in c]
    wl = {}
    for w in dict.fromkeys(c["workload"] for c in study):
        sp = [c["speedup"] for c in study if c["workload"] == w]
        fixed = [c["speedup_paper"] for c in study if c["workload"] == w]
        wl[w] = {"speedup_avg": mean(sp), "speedup_max": maximum(sp), "paper": PAPER["workloads"].get(w),
                 "speedup_paper_avg": mean(fixed), "speedup_paper_max": maximum(fixed),
                 "sizes": {str(c["npus"]): c["speedup"] for c in study if c["workload"] == w}}
    gains = [c["utilization_gain"] for c in study]
    return {
        "workloads": wl, "hbm_reduction_avg": mean([h["reduction"] for h in hrows if not h["error"]]),
        "utilization_gain_avg": mean(gains), "utilization_gain_max": maximum(gains), "paper": PAPER,
        "comparisons": comps,
        "latency_sensitivity": [{k: c.get(k) for k in ("workload", "npus", "latency_s", "speedup", "utilization_gain")}
                                for c in comps if c["npus"] == SENSITIVITY_NPUS and "error" not in c],
        "hbm": list(hrows),
        "failed": [r["key"] for r in rows if r["error"]] + [h["key"] for h in hrows if h["error"]],
        "not_optimal": [r["key"] for r in rows if not r["error"] and r["status"] != "optimal"],
    }


# ---------------------------------------------------------------- python -m codesign.study --generate

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m codesign.study",
                                 description="Write the ACE study's problem files (problems/paper/).")
    ap.add_argument("--generate", action="store_true", help="(re)write every case's problem file")
    ap.add_argument("--dir", help="where (default: problems/paper/ of the source tree)")
    args = ap.parse_args(argv)
    if not args.generate:
        ap.print_help()
        return 0
    root = source_tree()
    if args.dir is None and root is None:
        ap.exit(2, f"{ap.prog}: error: {NO_SOURCE_TREE}: give --dir DIR (beside a copy of problems/workloads/)\n")
    where = Path(args.dir) if args.dir is not None else root / "problems" / "paper"  # type: ignore[operator]
    if not (where.parent / "workloads").is_dir():  # the cases name ../workloads/ for their ASTRA-sim inputs
        ap.exit(2, f"{ap.prog}: error: --dir {where}: expected a folder beside a workloads/ folder of ASTRA-sim "
                "inputs (the cases name ../workloads/), and there is none\n")
    written = generate(where)
    print(f"wrote {len(written)} problem files under {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
