"""``codesign export-chakra``: a problem's workload written out as MLCommons Chakra execution traces."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..spec.outputs import claim_outputs, output_dir, record_outputs

Handler = Callable[[argparse.Namespace], int]
#: The most files ``--all-npus`` writes, and the most bytes in all (our bounds: a 4M-NPU topology wrote 58,000
#: files before its disk filled). ASTRA-sim's largest studied systems have a few thousand NPUs.
MAX_TRACE_FILES = 16_384
MAX_TRACE_TOTAL_BYTES = 4 * 2**30


def register(sub: Any) -> dict[str, Handler]:
    """Add ``export-chakra`` to ``sub`` (argparse subparsers); return {"export-chakra": handler}."""
    e = sub.add_parser("export-chakra", help="write a problem's workload as Chakra execution traces (.et)",
                       description="Write the iteration of a problem's workload, as codesign runs it on one NPU, "
                       "as a Chakra execution trace NAME.0.et in --out (docs/chakra.md). Every NPU runs the "
                       "same program in codesign's model; --all-npus writes the same graph once per NPU "
                       "(NAME.<rank>.et), the set of files ASTRA-sim reads.")
    e.add_argument("problem", help="problem YAML file")
    e.add_argument("--out", metavar="DIR", required=True, help="folder to write the .et files into")
    e.add_argument("--name", metavar="NAME", help="file name prefix (default: the workload's name)")
    e.add_argument("--all-npus", action="store_true", help="one file per NPU of the topology, not only NPU 0")
    e.add_argument("--confine", action="store_true", help="refuse input files outside the problem file's folder")
    return {"export-chakra": export_command}


def export_command(args: argparse.Namespace) -> int:
    from ..platform.costs import compute_time_terms
    from ..problem.load import load_problem
    from ..schedule.iteration import as_program
    from ..workload.chakra import SUFFIX, graph_to_trace, program_to_trace
    from ..workload.chakra_wire import encode

    problem = load_problem(args.problem, confine=args.confine)
    w, npu = problem.workload, problem.npu
    name = args.name or w.name
    if not name or Path(name).name != name or name.startswith("."):  # the traces stay inside --out
        raise SpecError(f"the trace name {name!r} is not a plain file name (no folders, not starting with '.'); "
                        "give one with --name", path="--name" if args.name else "workload.name",
                        file=None if args.name else args.problem)
    ranks = range(problem.topology.npus) if args.all_npus else range(1)
    _check_trace_files(len(ranks), 0, args.problem)
    out = output_dir(args.out)  # (made only once the files are known to be few enough)
    names = [f"{name}.{r}{SUFFIX}" for r in ranks]
    claim_outputs(out, names)  # a trace of the user's there stops the command now, before any work

    def duration(d: Any) -> float:  # duration_micros for readers that take no roofline: the problem's NPU
        return max(compute_time_terms(d, npu, npu.cores, npu.hbm_bandwidth))

    ndims = len(problem.topology.dims)
    if w.task_graph is not None and problem.schedule.overlap:  # keep the graph's freedom of compute order
        trace = graph_to_trace(w, ndims, duration_s=duration)
    else:
        trace = program_to_trace(w, as_program(w, problem.schedule.overlap), ndims, duration_s=duration)
    data = encode(trace)  # the same bytes for every NPU (codesign's model runs one program on all)
    _check_trace_files(len(ranks), len(data), args.problem)
    record_outputs(out, names, {n: lambda f: f.write(data) for n in names})
    comms = sum(1 for n in trace.nodes if n.type == 7)
    print(f"wrote {len(ranks)} trace{'s' if len(ranks) > 1 else ''} {out / f'{name}.0{SUFFIX}'}"
          + (f" .. {name}.{len(ranks) - 1}{SUFFIX}" if len(ranks) > 1 else "")
          + f": {len(trace.nodes) - comms} compute nodes, {comms} collective nodes")
    return 0


def _check_trace_files(files: int, size: int, problem: str) -> None:
    """At most MAX_TRACE_FILES files and MAX_TRACE_TOTAL_BYTES in all (``size``: one trace's bytes, 0 before
    it is encoded)."""
    if files > MAX_TRACE_FILES or files * size > MAX_TRACE_TOTAL_BYTES:
        raise SpecError(f"--all-npus: {files:,} NPUs would be {files:,} files" + (f" of {size:,} bytes "
                        f"({files * size / 2**30:.3g} GiB)" if size else "") + f"; expected at most "
                        f"{MAX_TRACE_FILES:,} files and {MAX_TRACE_TOTAL_BYTES // 2**30} GiB in all (every file is "
                        "the same trace: write NPU 0's alone and copy it as the simulator needs)", file=problem)
