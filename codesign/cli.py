"""The command line: ``codesign solve | validate``.

Errors a user can fix (bad input, infeasible problems, solver trouble) print one line on stderr and
exit with status 2 (bad input) or 1; they never print a traceback (``--debug`` shows one).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from .errors import CodesignError


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="codesign", description="Co-design of compute-communication overlap for "
                                 "distributed DL training: ACE sizing and schedules as HiGHS MILPs.")
    ap.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("solve", help="solve a problem file and print the chosen design and schedule")
    s.add_argument("problem", help="problem YAML file")
    s.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    s.add_argument("--time-limit", type=float, metavar="S", help="solver time limit in seconds")
    s.add_argument("--solver", metavar="NAME", help="solver profile from solvers/ (default, fast, exact) or a YAML path")
    s.add_argument("--out", metavar="DIR", help="write solution.json, schedule.csv, summary.txt and gantt.png here")
    v = sub.add_parser("validate", help="check a problem file without solving it")
    v.add_argument("problem", help="problem YAML file")
    m = sub.add_parser("simulate", help="simulate ASTRA-sim 1.0 inputs in its analytical semantics")
    m.add_argument("--astra-workload", metavar="W", required=True, help="ASTRA-sim 1.0 workload text file")
    m.add_argument("--astra-network", metavar="N", required=True, help="ASTRA-sim analytical network JSON")
    m.add_argument("--astra-system", metavar="S", required=True, help="ASTRA-sim system text file")
    m.add_argument("--passes", type=int, default=1, metavar="K", help="training passes (default 1)")
    m.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    return ap


def _solve(args: argparse.Namespace) -> int:
    from .pipeline import solve
    from .report import summary, write_outputs
    from .spec import load_problem

    if args.time_limit is not None and not (args.time_limit > 0 and math.isfinite(args.time_limit)):
        raise_usage("--time-limit must be a positive number of seconds")
    problem = load_problem(args.problem, solver_profile=args.solver)
    sol = solve(problem, time_limit=args.time_limit)
    if args.out:
        written = write_outputs(sol, problem, Path(args.out))
    if args.json:
        print(json.dumps(sol.to_dict(), indent=2))
    else:
        print(summary(sol, problem))
        if args.out:
            print(f"wrote           {', '.join(str(w) for w in written)}")
    return 0


def raise_usage(msg: str) -> None:
    from .errors import SpecError
    raise SpecError(msg)


def _validate(args: argparse.Namespace) -> int:
    from .iteration import build_iteration
    from .spec import load_problem

    p = load_problem(args.problem)
    it = build_iteration(p.workload)
    sized = ", ".join(f"{r} ({len(o)} options)" for r, o in p.engine.resources.items()) or "nothing"
    print(f"{args.problem}: valid. {p.workload.name}: {len(p.workload.layers)} layers ({p.workload.parallelism}), "
          f"{len(it.comms)} collectives; network {p.topology.shape} ({p.topology.npus} NPUs); "
          f"{p.engine.kind} engine sizing {sized}; minimize {p.objective.minimize.replace('_', ' ')}")
    return 0


def _simulate(args: argparse.Namespace) -> int:
    from .sim import simulate_astra

    if args.passes < 1:
        raise_usage("--passes must be at least 1")
    res = simulate_astra(args.astra_workload, args.astra_network, args.astra_system, passes=args.passes)
    d = res.to_dict()
    if args.json:
        print(json.dumps(d, indent=2))
        return 0
    print(f"ASTRA-sim 1.0 mode: {d['parallelism']} workload, {d['npus']} NPUs, {d['passes']} pass(es)")
    print(f"finish {d['finish_time_ns']} ns, compute {d['compute_time_ns']} ns, exposed communication "
          f"{d['exposed_comm_time_ns']} ns ({d['events']} events)")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return {"solve": _solve, "validate": _validate, "simulate": _simulate}[args.command](args)
    except CodesignError as e:
        print(f"codesign: error: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("codesign: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # an internal error: one line unless --debug
        if args.debug:
            raise
        print(f"codesign: internal error: {type(e).__name__}: {e} (rerun with --debug for the traceback)",
              file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
