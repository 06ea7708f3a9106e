"""The command line: ``codesign solve | validate | simulate | sweep | pareto | shadow | reproduce``.

Errors a user can fix (bad input, infeasible problems, solver trouble) print one line on stderr and
exit with status 2 (bad input) or 1; they never print a traceback (``--debug`` shows one).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import CodesignError, InputWarning, SpecError
from ..spec.outputs import claim_outputs, output_dir, record_outputs
from .clock import process_started
from .explore import CONFINE_HELP

#: Characters a message must not print as they are: line breaks and terminal control codes (C0, DEL, C1).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def one_line(text: str) -> str:
    """``text`` with each control character written as its escape (``\\n``, ``\\r``, ``\\x1b``): a message that
    quotes what a user wrote (a key path, a sweep point's value, a file name) stays one line and cannot drive the
    terminal."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad argument reported on one line as every other error is (argparse's own prints the
    whole usage first); subcommands' parsers are of this class too (``add_subparsers`` makes its own type)."""

    def error(self, message: str) -> Any:  # (argparse's signature: never returns)
        print(f"codesign: error: {one_line(message)} (see '{one_line(self.prog)} --help')", file=sys.stderr)
        sys.exit(2)


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="codesign", description="Co-design of compute-communication overlap for "
                                 "distributed DL training: ACE sizing and schedules as HiGHS MILPs.")
    ap.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("solve", help="solve a problem file and print the chosen design and schedule")
    s.add_argument("problem", help="problem YAML file")
    s.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    s.add_argument("--time-limit", type=float, metavar="S", help="solver time limit in seconds")
    s.add_argument("--solver", metavar="NAME",
                   help="solver profile (default, fast, exact; from solvers/ or shipped) or a YAML path")
    s.add_argument("--out", metavar="DIR", help="write solution.json, schedule.csv, summary.txt, gantt.png and, "
                   "with the replay, timeline.png and trace.json here")
    s.add_argument("--no-validate", action="store_true", help="skip the replay of the solution in the simulator")
    s.add_argument("--verbose", action="store_true",
                   help="model diagnostics: sizes, largest big-M, root LP bound against the final bound")
    s.add_argument("--refine", type=float, default=0.0, metavar="S",
                   help="with order: optimize, seconds spent refining dispatch priorities for the chunk-grain replay")
    s.add_argument("--confine", action="store_true", help=CONFINE_HELP)
    v = sub.add_parser("validate", help="check a problem file without solving it")
    v.add_argument("problem", help="problem YAML file")
    v.add_argument("--confine", action="store_true", help=CONFINE_HELP)
    m = sub.add_parser("simulate", help="replay a problem's design in the simulator, or run ASTRA-sim 1.0 inputs")
    m.add_argument("problem", nargs="?", help="problem YAML file (every engine resource fixed, or --solution)")
    m.add_argument("--solution", metavar="FILE", help="solution.json from 'solve --out': its design and order")
    m.add_argument("--iterations", type=int, default=8, metavar="N", help="iterations to replay (default 8)")
    m.add_argument("--out", metavar="DIR", help="write simulation.json, timeline.png and trace.json here")
    m.add_argument("--astra-workload", metavar="W", help="ASTRA-sim 1.0 workload text file")
    m.add_argument("--astra-network", metavar="N", help="ASTRA-sim analytical network JSON")
    m.add_argument("--astra-system", metavar="S", help="ASTRA-sim system text file")
    m.add_argument("--passes", type=int, default=1, metavar="K", help="ASTRA-sim training passes (default 1)")
    from .astra2 import add_arguments as add_astra2_arguments
    add_astra2_arguments(m)
    m.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    m.add_argument("--confine", action="store_true", help=CONFINE_HELP + "; with --astra-*, the working folder's")
    from .calibrate import register as register_calibrate  # accuracy | calibrate
    from .chakra import register as register_chakra  # export-chakra
    from .collective import register as register_collective  # collective
    from .explore import register as register_sweep  # sweep | pareto | shadow
    from .study import register as register_reproduce  # reproduce
    ap.set_defaults(more_handlers={**register_sweep(sub), **register_reproduce(sub), **register_chakra(sub),
                                   **register_calibrate(sub), **register_collective(sub)})
    return ap


def _solve(args: argparse.Namespace) -> int:
    from ..pipeline.solve import solve
    from ..problem.load import parse_problem
    from ..report.files import OUTPUTS, write_outputs
    from ..report.text import summary

    if args.time_limit is not None and not (args.time_limit > 0 and math.isfinite(args.time_limit)):
        raise_usage("--time-limit must be a positive number of seconds")
    from ..spec.yamlfile import load_yaml
    from ..suite.spec import is_suite
    doc = load_yaml(args.problem)
    if is_suite(doc):
        return _solve_suite(args, doc)
    problem = parse_problem(doc, args.problem, solver_profile=args.solver, confine=args.confine)
    if args.refine < 0 or not math.isfinite(args.refine):
        raise_usage("--refine must be a non-negative number of seconds")
    out = output_dir(args.out) if args.out else None  # a wrong --out is found now, not after the solve
    if out is not None:
        claim_outputs(out, OUTPUTS)
    from .progress import Ticker
    unwritten = None  # a file that could not be written: said after the answer, which is printed all the same
    with Ticker(f"solving {args.problem}") as ticker:  # a line on a terminal while a long solve works
        ticker.stage("searching")
        sol = solve(problem, time_limit=args.time_limit, diagnose=args.verbose, refine_s=args.refine,
                    started=args.started)
        if sol.compute_order is not None:  # the reports show the program the solve ran
            from ..milp.compute_order import with_compute_order
            problem = with_compute_order(problem, order=sol.compute_order)[0]
        val = None
        if not args.no_validate:
            from ..pipeline.validation import validate
            ticker.stage("replaying the answer")
            val = validate(problem, sol)
        if out is not None:
            ticker.stage(f"writing {out}")
            try:
                written = write_outputs(sol, problem, out, validation=val)
            except SpecError as e:
                unwritten = e
    if args.json:
        doc = sol.to_dict()
        if problem.workload.memory_bytes:
            doc["memory_per_npu_bytes"] = dict(problem.workload.memory_bytes)
        if val is not None:
            doc["validation"] = val.to_dict()
        from ..report.llm import llm_report
        if (llm := llm_report(sol, problem)) is not None:
            doc["llm"] = llm.to_dict()
        print(json.dumps(doc, indent=2))
    else:
        print(summary(sol, problem, val))
        if sol.order_policy == "optimize":
            from ..report.text import order_comparison_lines
            print("\n".join(order_comparison_lines(sol)))
        if args.verbose:
            from ..report.text import diagnostics_text
            print(diagnostics_text(sol))
        if args.out and unwritten is None:
            print(f"wrote           {', '.join(str(w) for w in written)}")
    if val is not None and val.flagged:
        print(f"codesign: warning: {val.warning()}", file=sys.stderr)
    if unwritten is not None:
        raise unwritten
    return 0


def _solve_suite(args: argparse.Namespace, doc: Any) -> int:
    """``codesign solve`` of a suite (docs/suites.md): its summary, or ``--json``'s document."""
    from ..suite.report import summary, to_dict
    from ..suite.search import solve_suite
    from ..suite.spec import parse_suite
    suite = parse_suite(doc, args.problem, solver_profile=args.solver, confine=args.confine)
    if args.out or args.verbose or args.refine:
        raise_usage("--out, --verbose and --refine are not supported for suites yet")
    res = solve_suite(suite, time_limit=args.time_limit, started=args.started)
    print(json.dumps(to_dict(suite, res), indent=2) if args.json else summary(suite, res))
    return 0


def _with_line(e: CodesignError) -> CodesignError:
    """A SpecError that names a problem file's key path but no line (found after parsing, e.g. a number beyond what
    the MILP holds), with the key's line read from the file; any other error as it is."""
    if not (isinstance(e, SpecError) and e.file and e.path and e.line is None
            and e.file.lower().endswith((".yaml", ".yml"))):  # (a problem file, not a solution's JSON)
        return e
    try:
        from ..spec.readers import line_of_path
        from ..spec.yamlfile import load_yaml
        line = line_of_path(load_yaml(e.file), e.path)
    except Exception:  # (the file is gone or unreadable now: the message stands as it is)
        return e
    return SpecError(e.detail, file=e.file, path=e.path, line=line) if line else e


def raise_usage(msg: str) -> None:
    raise SpecError(msg)


def _validate(args: argparse.Namespace) -> int:
    from ..problem.load import parse_problem
    from ..schedule.iteration import build_iteration
    from ..spec.yamlfile import load_yaml

    doc = load_yaml(args.problem)
    from ..suite.spec import is_suite
    if is_suite(doc):
        from ..suite.spec import parse_suite
        suite = parse_suite(doc, args.problem, confine=args.confine)
        from ..milp.data import check_ranges, model_data
        from ..milp.designs import unusable
        for q in suite.problems:
            check_ranges(model_data(q), set(unusable(q.engine)))
        print(f"{args.problem}: valid. suite of {len(suite.problems)} workloads ({', '.join(suite.names)}); network "
              f"{suite.problems[0].topology.shape}; {suite.problems[0].engine.kind} engine; minimize "
              f"{suite.objective.replace('_', ' ')}")
        return 0
    p = parse_problem(doc, args.problem, confine=args.confine)
    sweep = None
    if isinstance(doc, dict) and "sweep" in doc:  # checked as 'codesign sweep' checks it, by the same function
        from .explore import sweep_settings
        sweep = sweep_settings(args.problem, confine=args.confine)
    it = build_iteration(p.workload, p.schedule.overlap)
    # what 'solve' refuses before it searches, refused here too: numbers beyond what the MILP can hold
    from ..milp.data import check_ranges, model_data  # (no solver: validate imports none)
    from ..milp.designs import unusable
    check_ranges(model_data(p), set(unusable(p.engine)))
    sized = ", ".join(f"{r} ({len(o)} options)" for r, o in p.engine.resources.items()) or "nothing"
    swept = (f"; sweep of {len(sweep.plan.points)} points ({sweep.mode.replace('_', '-')}) over "
             f"{', '.join(q.path for q in sweep.plan.params)}" if sweep is not None else "")
    net = p.network
    bws = ("" if net is None else " sizing bandwidth " + ", ".join(
        f"{d.name} ({len(b)} {'options' if t is None else 'grid points'})"
        for d, b, t in zip(p.topology.dims, net.bandwidths, net.tolerance) if len(b) > 1)
        + (f" under {net.budget:g} {net.unit}" if net.budget is not None else ""))
    print(f"{args.problem}: valid. {p.workload.name}: {len(p.workload.layers)} layers ({p.workload.parallelism}), "
          f"{len(it.comms)} collectives; network {p.topology.shape} ({p.topology.npus} NPUs){bws}; "
          f"{p.engine.kind} engine sizing {sized}; minimize {p.objective.minimize.replace('_', ' ')}{swept}")
    return 0


def _simulate(args: argparse.Namespace) -> int:
    from .astra2 import given as astra2_given
    from .astra2 import simulate_command as simulate_astra2
    if astra2_given(args):
        return simulate_astra2(args)
    astra = [args.astra_workload, args.astra_network, args.astra_system]
    if args.problem and any(astra):
        raise_usage("give either a problem file or the three --astra-* inputs, not both")
    if not args.problem:
        if not all(astra):
            raise_usage("simulate needs a problem file, or all of --astra-workload, --astra-network, --astra-system")
        return _simulate_astra(args)
    from ..problem.load import load_problem
    from ..report.plots import timeline_png
    from ..report.text import simulation_summary
    from ..sim.replay import simulate
    from .simulate_inputs import compute_ordered, design_and_order, network_at

    if not 4 <= args.iterations <= MAX_ITERATIONS:
        raise_usage(f"--iterations: expected a whole number from 4 (two to settle, two to measure) to "
                    f"{MAX_ITERATIONS:,}, got {args.iterations}")
    confine_to = Path(args.problem).resolve().parent if args.confine else None
    problem = compute_ordered(load_problem(args.problem, confine=args.confine), args.solution, confine_to=confine_to)
    design, order = design_and_order(problem, args.solution, confine_to=confine_to)
    problem = network_at(problem, args.solution, confine_to=confine_to)  # open bandwidths: the solution's
    out = output_dir(args.out) if args.out else None
    if out is not None:
        claim_outputs(out, SIMULATION_OUTPUTS)
    res = simulate(problem, design, order=order, iterations=args.iterations)
    doc = simulation_doc(problem, design, res)
    unwritten = None  # as in 'solve': the answer is printed, then what was not written
    if out is not None:
        text = json.dumps(doc, indent=2)
        try:
            from ..report.trace import write_trace
            record_outputs(out, SIMULATION_OUTPUTS, {"simulation.json": lambda f: f.write(text.encode()),
                                                     "timeline.png": lambda f: timeline_png(res, problem, f),
                                                     "trace.json": lambda f: write_trace(res, problem, f)})
        except SpecError as e:
            unwritten = e
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(simulation_summary(problem, design, res))
        if problem.workload.task_graph is not None:
            print(f"note: {problem.workload.task_graph.decided}")
    if unwritten is not None:
        raise unwritten
    return 0


#: The most iterations ``simulate`` replays (our bound on work): the steady state shows after a few, and a large
#: problem's iteration costs seconds to replay; ``--iterations 1e9`` would never end.
MAX_ITERATIONS = 1000
#: The files ``simulate --out`` writes.
SIMULATION_OUTPUTS = ("simulation.json", "timeline.png", "trace.json")


def simulation_doc(problem, design, res) -> dict:
    from ..pipeline.solution import design_keys
    from ..schedule.bounds import lower_bound
    lb = lower_bound(problem, design)
    keys = design_keys()  # named as solve --json names them
    return {"problem": problem.name, "engine": problem.engine.kind,
            "design": {keys.get(k, k): v for k, v in design.values.items()},
            "iteration_time_s": res.period_s, "compute_time_s": res.compute_time_s,
            "nominal_compute_s": res.nominal_compute_s, "exposed_comm_s": res.exposed_comm_s,
            "lower_bound_s": lb.bound_s, "utilization": res.utilization, "dim_stretch": res.dim_stretch,
            "sram_peak_bytes": res.sram_peak_bytes if res.sram_peak_bytes else None,
            "sram_wait_s": res.sram_wait_s, "hbm_peak_bytes_per_s": res.hbm_peak_bytes_per_s,
            "iterations": res.iterations, "events": res.events,
            **({"memory_per_npu_bytes": dict(problem.workload.memory_bytes)} if problem.workload.memory_bytes else {})}


def _simulate_astra(args: argparse.Namespace) -> int:
    from ..astra.inputs import MAX_PASSES
    from ..astra.mode import simulate_astra
    if not 1 <= args.passes <= MAX_PASSES:
        raise_usage(f"--passes: expected a whole number from 1 to {MAX_PASSES:,}, got {args.passes}")
    res = simulate_astra(args.astra_workload, args.astra_network, args.astra_system, passes=args.passes,
                         confine_to=Path.cwd() if args.confine else None)
    d = res.to_dict()
    if args.json:
        print(json.dumps(d, indent=2))
        return 0
    print(f"ASTRA-sim 1.0 mode: {d['parallelism']} workload, {d['npus']} NPUs, {d['passes']} pass(es)")
    print(f"finish {d['finish_time_ns']} ns, compute {d['compute_time_ns']} ns, exposed communication "
          f"{d['exposed_comm_time_ns']} ns ({d['events']} events)")
    return 0


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush does not fail again on a closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # not a real file (captured output): nothing will be flushed to a pipe
        pass


def _input_warnings_as_lines(shown: set[str]) -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints each InputWarning once, as one stderr line (``--json`` keeps
    stdout pure JSON), and leaves other warnings to Python's display."""
    default = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *rest: Any, **kw: Any) -> None:
        if not issubclass(category, InputWarning):
            return default(message, category, *rest, **kw)
        text = str(message)
        if text not in shown:  # a sweep validates the same key at every point
            shown.add(text)
            print(f"codesign: warning: {one_line(text)}", file=sys.stderr, flush=True)
    return show


def main(argv: list[str] | None = None, *, started: float | None = None) -> int:
    """Run the command ``argv`` (default: the process's own command line). ``started``: the
    ``time.perf_counter()`` a ``--time-limit`` counts from; default: the process's start when ``argv`` is the
    process's command line (``codesign ...``, ``python -m codesign ...``), else now (a caller's own list, e.g. in
    a longer-lived process)."""
    if started is None:
        started = process_started() if argv is None else time.perf_counter()
    args = _parser().parse_args(argv)
    args.started = started
    with warnings.catch_warnings():
        warnings.simplefilter("always", InputWarning)
        warnings.showwarning = _input_warnings_as_lines(set())
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        handler = {"solve": _solve, "validate": _validate, "simulate": _simulate, **args.more_handlers}[args.command]
        status = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the try, not in the interpreter's exit
        return status
    except BrokenPipeError:
        # The reader went away (codesign ... | head): stop quietly, as git does, with 128 + SIGPIPE.
        _quiet_stdout()
        return 141
    except CodesignError as e:
        print(f"codesign: error: {one_line(str(_with_line(e)))}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("codesign: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # an internal error: one line unless --debug
        if args.debug:
            raise
        print(f"codesign: internal error: {type(e).__name__}: {one_line(str(e))} (rerun with --debug for the "
              "traceback)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
