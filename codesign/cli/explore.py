"""The command line of sweeps, Pareto fronts and shadow prices: ``codesign sweep | pareto | shadow``.

``register(subparsers)`` adds the three subcommands to the main parser and returns their handlers; each
handler takes the parsed arguments and returns the exit status. Errors are raised as CodesignError and
printed on one line by ``codesign.cli.main``.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..spec.files import inside
from ..spec.outputs import claim_file, output_file, write_output
from ..spec.units import SECONDS, format_quantity
from .progress import ProgressBar, wanted

Handler = Callable[[argparse.Namespace], int]

CONFINE_HELP = ("refuse any input file (workload.astra, a solver profile path, --solution) outside the problem "
                "file's folder: for services that run problem files they did not write")


def register(sub: Any) -> dict[str, Handler]:
    """Add ``sweep``, ``pareto`` and ``shadow`` to ``sub`` (argparse subparsers); return {name: handler}."""
    s = sub.add_parser("sweep", help="solve a problem over a grid of parameter values, with resume and plots",
                       description="Solve every point of a parameter sweep. Results stream to --out as points "
                       "finish; rerunning the same command skips points already there.")
    s.add_argument("problem", help="problem YAML file (its optional 'sweep:' section gives defaults)")
    s.add_argument("--param", action="append", default=[], metavar="PATH=VALUES",
                   help="a YAML key path and its values: 25GB/s,50GB/s | 1mm^2:8mm^2:8 | log:1GB/s:100GB/s:5")
    mode = s.add_mutually_exclusive_group()
    mode.add_argument("--grid", dest="mode", action="store_const", const="grid", help="every combination (default)")
    mode.add_argument("--one-at-a-time", dest="mode", action="store_const", const="one_at_a_time",
                      help="each parameter over its values, the others as in the file")
    s.add_argument("--workers", type=int, metavar="N", help="worker processes (default: one per core)")
    s.add_argument("--scheduler", metavar="ADDRESS", help="run on Dask: 'local' (a LocalCluster) or tcp://host:8786")
    s.add_argument("--out", metavar="CSV", help="results file (default: sweep_<problem>.csv here)")
    s.add_argument("--time-limit", type=float, metavar="S", help="solver time limit per point, in seconds")
    s.add_argument("--solver", metavar="NAME", help="solver profile (default, fast, exact) or a YAML path")
    s.add_argument("--retry-failed", action="store_true", help="solve again the points recorded as errors")
    s.add_argument("--validate", action="store_true", help="replay each point's solution in the simulator too")
    s.add_argument("--no-plots", action="store_true", help="do not draw the metric-vs-parameter plots")
    s.add_argument("--quiet", action="store_true", help="no progress bar and no table")
    s.add_argument("--confine", action="store_true", help=CONFINE_HELP)
    s.add_argument("--progress", action="store_true",
                   help="show the progress bar on stderr even when it is not a terminal")
    p = sub.add_parser("pareto", help="trace the Pareto front of two metrics by epsilon constraints")
    p.add_argument("problem", help="problem YAML file")
    p.add_argument("--x", default="area", choices=("area", "power", "iteration_time", "network_cost"),
                   help="x axis (default area)")
    p.add_argument("--y", default="iteration_time", choices=("area", "power", "iteration_time", "network_cost"),
                   help="y axis (default iteration_time)")
    p.add_argument("--points", type=int, metavar="N", help="N evenly spaced epsilons (default: every corner)")
    p.add_argument("--max-points", type=int, default=60, metavar="N",
                   help="the exact walk stops after N points and says so (default 60)")
    p.add_argument("--out", metavar="PNG", help="the plot (default: pareto_<problem>.png here)")
    p.add_argument("--csv", metavar="CSV", help="also write the front's points here")
    p.add_argument("--time-limit", type=float, metavar="S", help="solver time limit per solve, in seconds")
    p.add_argument("--solver", metavar="NAME", help="solver profile or a YAML path")
    p.add_argument("--confine", action="store_true", help=CONFINE_HELP)
    p.add_argument("--progress", action="store_true",
                   help="show the progress bar on stderr even when it is not a terminal")
    h = sub.add_parser("shadow", help="what one more unit of each resource is worth, at the solved design")
    h.add_argument("problem", help="problem YAML file")
    h.add_argument("--only", action="append", metavar="PATH", help="price only this resource (repeatable)")
    h.add_argument("--json", action="store_true", help="print one JSON document")
    h.add_argument("--time-limit", type=float, metavar="S",
                   help="time limit of the solve, in seconds from the command's start (the pricing after it replays "
                        "one design per resource)")
    h.add_argument("--solver", metavar="NAME", help="solver profile or a YAML path")
    h.add_argument("--confine", action="store_true", help=CONFINE_HELP)
    return {"sweep": sweep_command, "pareto": pareto_command, "shadow": shadow_command}


def _limit(x: float | None) -> float | None:
    if x is not None and not (x > 0 and math.isfinite(x)):
        raise SpecError("--time-limit must be a positive number of seconds")
    return x


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _fmt(v: Any) -> str:
    if _missing(v):
        return "-"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def table(df: Any, pl: Any, limit: int = 200) -> str:
    """The summary table: each point's values as written, status, iteration time, area, power, design."""
    from ..pipeline.solution import design_keys, design_labels
    from ..spec.units import format_quantity

    labels = design_labels()
    design = [(c, labels[r]) for r, c in design_keys().items() if c in df.columns]
    heads = [p.path for p in pl.params]
    shown = list(zip(df.iterrows(), pl.points))[:limit]
    width = [min(28, max([len(h)] + [len(str(pt.values.get(h, "(file)"))) for _, pt in shown])) for h in heads]
    lines = ["  ".join([f"{'#':>4s}", *[f"{h:>{w}.{w}s}" for h, w in zip(heads, width)], f"{'status':10s}",
                        f"{'T (ms)':>9s}", f"{'area':>6s}", f"{'power':>6s}", "design"])]
    for (_, r), pt in shown:
        vals = [str(pt.values.get(h, "(file)")) for h in heads]
        t = r["iteration_time_s"]
        dtext = ", ".join(f"{lab} {format_quantity(r[c], dim) if dim else _fmt(r[c])}" for c, (lab, dim) in design
                          if not _missing(r[c]))
        if r["status"] not in ("optimal", "time_limit"):
            from .main import one_line  # (main imports this module)
            dtext = one_line(str(r["error"]))[:90]
        lines.append("  ".join([f"{pt.index:>4d}", *[f"{v:>{w}.{w}s}" for v, w in zip(vals, width)],
                                f"{r['status']:10s}", f"{t * 1e3:>9.4f}" if not _missing(t) else f"{'-':>9s}",
                                f"{_fmt(r['area_mm2']):>6s}", f"{_fmt(r['power_w']):>6s}", dtext]))
    if len(df) > limit:
        lines.append(f"... and {len(df) - limit} more points in the results file")
    return "\n".join(lines)


@dataclass
class SweepSettings:
    """A checked sweep: its plan (every point validated), mode, workers, scheduler and results file (not yet
    created: ``codesign sweep`` checks it with ``output_file``, ``codesign validate`` writes nothing)."""

    plan: Any
    mode: str
    workers: int | None
    scheduler: str | None
    out: Path
    out_flag: str


def sweep_settings(problem: str, *, params: Sequence[str] = (), mode: str | None = None, workers: int | None = None,
                   scheduler: str | None = None, out: str | None = None, time_limit: float | None = None,
                   solver: str | None = None, validate: bool = False, confine: bool = False) -> SweepSettings | None:
    """The sweep to run: the command line's options over the problem file's ``sweep:`` section (``read_section``),
    planned, so every parameter path and every point is validated; None if neither names a parameter.
    ``codesign sweep`` runs what this returns and ``codesign validate`` calls it on the file alone, so the
    two accept and reject the same ``sweep:`` sections."""
    from ..explore.executors import bad_workers
    from ..explore.sweep import VALIDATE, load_document, plan, read_section

    _, _, section = load_document(problem)
    cfg = read_section(section, problem) if section is not None else {}
    chosen: Any = list(params) or cfg.get("params")
    if not chosen:
        return None
    if workers is not None and (wrong := bad_workers(workers)):
        raise SpecError(f"--workers: {wrong}")
    mode = mode or cfg.get("mode", "grid")
    tl = _limit(time_limit) if time_limit is not None else cfg.get("time_limit")
    folder = Path(problem).resolve().parent
    if confine and not out and cfg.get("out") and not inside(Path(cfg["out"]), folder):
        # (the lock and the plots go beside the results file: confining it confines them)
        raise SpecError(f"refused: the results file is outside {folder} (--confine allows only files in the "
                        "problem file's folder)", file=problem, path="sweep.out")
    pl = plan(problem, chosen, mode=mode, time_limit=tl, solver_profile=solver, checks=[VALIDATE] if validate else [],
              confine=confine)
    return SweepSettings(pl, mode, workers if workers is not None else cfg.get("workers"),
                         scheduler or cfg.get("scheduler"),
                         Path(out or cfg.get("out") or f"sweep_{Path(problem).stem}.csv"),
                         "--out" if out or not cfg.get("out") else "sweep.out")


def sweep_command(args: argparse.Namespace) -> int:
    from ..explore.plots import plot_sweep
    from ..explore.sweep import run_plan

    st = sweep_settings(args.problem, params=args.param, mode=args.mode, workers=args.workers,
                        scheduler=args.scheduler, out=args.out, time_limit=args.time_limit, solver=args.solver,
                        validate=args.validate, confine=args.confine)
    if st is None:
        raise SpecError("no parameters: give --param PATH=VALUES or a 'sweep: {params: ...}' section",
                        file=args.problem)
    pl, mode, workers, scheduler = st.plan, st.mode, st.workers, st.scheduler
    out = output_file(st.out, flag=st.out_flag)
    if not args.no_plots:  # the pictures' places are checked now too, not after the sweep
        from ..explore.plots import plot_paths
        for png in plot_paths(pl.params, out.with_suffix("")):
            claim_file(png, flag=st.out_flag)
    executor = scheduler if scheduler else "local"
    if scheduler == "local":
        executor = "dask"
    t0 = time.perf_counter()
    bar = ProgressBar(enabled=wanted(args.progress, args.quiet))

    def progress(pr: Any) -> None:
        if pr.row is None and not args.quiet:
            where = f"Dask ({scheduler})" if scheduler else f"{workers or 'one per core'} local process(es)"
            print(f"{len(pl.points)} points ({mode.replace('_', '-')}): {pr.cached} already in {out}, "
                  f"solving {pr.total} on {where}", file=sys.stderr, flush=True)
        else:
            bar(pr)
    try:
        df = run_plan(pl, executor=executor, workers=workers, out=out, retry_failed=args.retry_failed,
                      progress=progress)
    finally:
        bar.close()
    wall = time.perf_counter() - t0
    solved = int(df["status"].isin(("optimal", "feasible", "time_limit")).sum())
    failed = int((df["status"] == "error").sum())
    infeasible = int((df["status"] == "infeasible").sum())
    if not args.quiet:
        print(table(df, pl))
    fresh = int(df.loc[~df["cached"], "key"].nunique())
    cached = int(df.loc[df["cached"], "key"].nunique())
    same = len(df) - df["key"].nunique()
    print(f"{len(df)} points: {solved} solved, {infeasible} infeasible, {failed} failed "
          f"({fresh} run now in {wall:.1f} s, {cached} from {out}"
          + (f"; {same} repeat(s) of the same problem" if same else "") + ")")
    print(f"results         {out}")
    if not args.no_plots and solved:
        pngs = plot_sweep(df, pl.params, out.with_suffix(""), flag=st.out_flag)
        print(f"plots           {', '.join(str(p) for p in pngs)}")
    return 1 if solved + infeasible == 0 else 0


def pareto_command(args: argparse.Namespace) -> int:
    from ..explore.pareto import metric, pareto_front, point_text
    from ..problem.load import load_problem

    problem = load_problem(args.problem, solver_profile=args.solver, confine=args.confine)
    out = claim_file(args.out or f"pareto_{Path(args.problem).stem}.png")
    csv = claim_file(args.csv, flag="--csv") if args.csv else None
    bar = ProgressBar(enabled=wanted(args.progress), unit="solves")
    t0 = time.perf_counter()
    try:
        front = pareto_front(problem, args.x, args.y, points=args.points, max_points=args.max_points,
                             time_limit=_limit(args.time_limit),
                             progress=lambda n, f: bar.update(n, None, time.perf_counter() - t0, fraction=f))
    finally:
        bar.close()
    show = {"iteration_time": ("ms", 1e3), "area": ("mm^2", 1.0), "power": ("W", 1.0),
            "network_cost": (problem.network.unit if problem.network is not None else "", 1.0)}
    (ux, sx), (uy, sy) = show[front.x], show[front.y]
    print(f"Pareto front of {front.y} against {front.x}: {len(front.points)} designs ({front.method}, "
          f"{front.solves} solves)")
    for p in front.points:
        sol, status = p.solution, ""
        if sol.status != "optimal":  # (a time limit stopped its solve: not proven)
            status = f"  [{sol.status}" + (f", gap {sol.gap:.2%}" if sol.gap is not None else "") + "]"
        print(f"  {front.x} {p.x * sx:9.4g} {ux:5s} {front.y} {p.y * sy:9.4g} {uy:5s} {point_text(sol)}"
              + status + (f"  <- {p.role}" if p.role else ""))
    for note in front.notes:
        print(f"note: {note}")
    if {front.x, front.y} == {"network_cost", "iteration_time"} and front.points and args.points is None:
        # LIBRA's performance per cost: T x cost grows with each, so its least is a point of the exact front
        best = min(front.points, key=lambda p: p.x * p.y)
        cost = metric(best.solution, "network_cost")
        print(f"perf per cost   least iteration time x network cost on the front: {cost:.4g} {problem.network.unit}, "
              f"{format_quantity(best.solution.iteration_time_s, SECONDS)}: {point_text(best.solution)}")
    if front.as_posed is not None:
        a = front.as_posed
        print(f"as posed        {front.x} {metric(a, front.x) * sx:.4g} {ux}, "
              f"{front.y} {metric(a, front.y) * sy:.4g} {uy}: {point_text(a)}"
              + ("" if a.status == "optimal" else f" [{a.status}]"))
    unwritten = None  # a file not written (a user's file there now, a full disk): said once the other is written
    try:
        write_output(out, front.plot)
        print(f"plot            {out}")
    except SpecError as e:
        unwritten = e
    if csv is not None:
        text = front.to_frame().to_csv(index=False)
        try:
            write_output(csv, lambda f: f.write(text.encode()), flag="--csv")
            print(f"points          {csv}")
        except SpecError as e:
            unwritten = unwritten or e
    if unwritten is not None:
        raise unwritten
    return 0


def _us(x: float) -> str:
    """A time given in microseconds, as every time is printed."""
    return format_quantity(x * 1e-6, SECONDS)


def shadow_command(args: argparse.Namespace) -> int:
    from ..pipeline.shadow import shadow_prices
    from ..pipeline.solution import design_text
    from ..pipeline.solve import solve
    from ..problem.load import load_problem

    problem = load_problem(args.problem, solver_profile=args.solver, confine=args.confine)
    sol = solve(problem, time_limit=_limit(args.time_limit), started=getattr(args, "started", None))
    rep = shadow_prices(problem, sol, only=args.only)
    if args.json:
        print(json.dumps({"problem": rep.problem, "status": sol.status, "gap": sol.gap, "design": rep.design,
                          "iteration_time_s": rep.iteration_time_s, "prices": [p.__dict__ for p in rep.prices]},
                         indent=2))
        return 0
    period = format_quantity(rep.iteration_time_s, SECONDS, 5)
    print(f"design          {design_text(sol.design)}; iteration time {period} "
          f"({sol.order_policy.upper()} order held fixed)")
    if sol.status != "optimal":  # the prices are this design's, which the solve did not prove the best
        gap = f", gap {sol.gap:.2%}" if sol.gap is not None else ""
        print(f"note: the design was not proven optimal ({sol.status}{gap}): the prices are at this design")
    print(rep.table())
    # The headline is the replay's figure for the whole step: the marginal one is a dual, which may overstate it
    best = max((p for p in rep.prices if not p.at_limit and p.plus_step_us is not None),
               key=lambda p: p.plus_step_us, default=None)
    if best is not None and best.plus_step_us > 0:
        print(f"one more {best.step_label} of {best.label} saves {_us(best.plus_step_us)} per iteration (replayed; "
              f"{_us(best.saves_us_per_step)} at the margin)")
    return 0
