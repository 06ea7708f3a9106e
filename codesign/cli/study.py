"""The command line of the ACE study: ``codesign reproduce [--json] [--out DIR] [--workers N] [--scheduler ADDR]``.

``register(subparsers)`` adds the subcommand and returns {name: handler}; the handler takes the parsed
arguments and returns the exit status. Errors are raised as CodesignError (SpecError for bad options)
and printed on one line by ``codesign.cli.main``.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import SpecError, shown
from ..spec.outputs import claim_outputs, output_dir, record_outputs
from .progress import ProgressBar, wanted

Handler = Callable[[argparse.Namespace], int]
DEFAULT_OUT = "out/ace_study"  # out/ is ignored by git


def register(sub: Any) -> dict[str, Handler]:
    """Add ``reproduce`` to ``sub`` (argparse subparsers); return {"reproduce": handler}."""
    r = sub.add_parser("reproduce", help="run the ACE study (ISCA 2021) and print it beside the paper's numbers",
                       description="Solve every case of the ACE study (problems/paper/) and run its HBM-bandwidth "
                       "sweep, then print ACE's speedup over the best baseline per workload, the HBM-bandwidth "
                       "reduction and the network-utilization gain beside the paper's numbers; write plots and "
                       "CSVs to --out. Cases are recorded in --out as they finish: rerunning the command "
                       "solves only what is missing.")
    r.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of the tables")
    r.add_argument("--out", metavar="DIR", default=DEFAULT_OUT,
                   help=f"write cases.csv, hbm.csv (both resumable), comparisons.csv, summary.json, table.md and "
                   f"plots here (default: ./{DEFAULT_OUT})")
    r.add_argument("--workers", type=int, metavar="N", help="worker processes (default: one per core)")
    r.add_argument("--scheduler", metavar="ADDRESS", help="run on Dask: 'local' (a LocalCluster) or tcp://host:8786")
    r.add_argument("--workloads", metavar="LIST", help="a subset, e.g. resnet50,dlrm (default: all three)")
    r.add_argument("--sizes", metavar="LIST", help="network sizes, e.g. 16,64 (default: 16,32,64,128)")
    r.add_argument("--problems", metavar="DIR", help="the case files (default: problems/paper/ of the source tree)")
    r.add_argument("--no-latency", action="store_true", help="skip the link-latency sensitivity (64 NPUs)")
    r.add_argument("--no-hbm", action="store_true", help="skip the HBM-bandwidth sweep")
    r.add_argument("--no-plots", action="store_true", help="do not draw the plots")
    r.add_argument("--time-limit", type=float, metavar="S", help="solver time limit per case, in seconds")
    r.add_argument("--quiet", action="store_true", help="no progress on stderr")
    r.add_argument("--progress", action="store_true",
                   help="show the progress bar on stderr even when it is not a terminal")
    return {"reproduce": reproduce_command}


def _list(text: str | None, what: str, cast: Callable[[str], Any]) -> tuple | None:
    if text is None:
        return None
    try:
        items = tuple(cast(x.strip()) for x in text.split(",") if x.strip())
    except ValueError:
        raise SpecError(f"--{what}: expected a comma-separated list, got {shown(text)}") from None
    if not items:
        raise SpecError(f"--{what}: expected at least one value")
    return items


def reproduce_command(args: argparse.Namespace) -> int:
    from ..explore.executors import bad_workers
    from ..study.cases import SHAPES, WORKLOADS
    from ..study.plots import PLOTS, plot_files
    from ..study.report import FILES, json_document, report_files, report_text
    from ..study.run import run_study

    if args.time_limit is not None and not (args.time_limit > 0 and math.isfinite(args.time_limit)):
        raise SpecError("--time-limit must be a positive number of seconds")
    if args.workers is not None and (wrong := bad_workers(args.workers)):
        raise SpecError(f"--workers: {wrong}")
    workloads = _list(args.workloads, "workloads", str) or tuple(WORKLOADS)
    sizes = _list(args.sizes, "sizes", int) or tuple(SHAPES)

    out = Path(args.out)
    executor = "dask" if args.scheduler == "local" else (args.scheduler or "local")

    bar = ProgressBar(enabled=wanted(args.progress, args.quiet), unit="cases")

    def progress(pr: Any) -> None:
        if args.quiet:
            return
        if pr.row is None:
            where = (f"Dask ({args.scheduler})" if args.scheduler
                     else f"{args.workers or 'one per core'} local process(es)")
            print(f"{pr.cached} already in {out}, solving {pr.total} on {where}", file=sys.stderr, flush=True)
            return
        row = pr.row
        if row.get("error"):  # a failed case is said whether or not the bar shows
            what = row.get("file") or f"HBM sweep, {row.get('npus')} NPUs, network x{row.get('net_scale'):g}"
            bar.message(f"[{pr.done}/{pr.total}] {what} FAILED: {row['error']}")
        bar(pr)

    out = output_dir(args.out)  # a wrong --out is found now, not after the study
    names = FILES + (() if args.no_plots else PLOTS)
    claim_outputs(out, names)  # (cases.csv and hbm.csv are results files: checked by their header as they open)
    try:
        study = run_study(workloads=workloads, sizes=sizes, latency=not args.no_latency, hbm=not args.no_hbm,
                          executor=executor, workers=args.workers, out=out, problems_dir=args.problems,
                          time_limit=args.time_limit, progress=progress)
    finally:
        bar.close()
    files = report_files(study.summary, study.cases)
    if not args.no_plots:
        files.update(plot_files(study.summary, study.cases, study.hbm))
    unwritten = None  # a file not written: said after the report, which is printed all the same
    try:
        written = record_outputs(out, names, files)
    except SpecError as e:
        unwritten = e
    if args.json:
        print(json.dumps(json_document(study.summary, study.cases), indent=1))
    else:
        print(report_text(study.summary))
        if unwritten is None:
            print(f"\nwrote {', '.join(str(p) for p in written)} (cases.csv and hbm.csv there too)")
    if unwritten is not None:
        raise unwritten
    failed = study.summary.get("failed") or []
    if failed:
        print(f"codesign: warning: {len(failed)} case(s) failed: {', '.join(failed[:5])}; rerun the command to "
              "solve them again", file=sys.stderr)
        return 1
    return 0
