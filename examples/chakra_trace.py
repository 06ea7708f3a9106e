"""Size ACE for a Chakra execution trace, and let the solver order the trace's independent compute tasks.

The script writes a small trace of its own (one NPU's iteration of a 2-layer model, tensor parallel on
dimension 0 of a 4x4 torus and data parallel on dimension 1), the way a profiler's converter would: the
backward pass lists layer 2's weight gradient before its input gradient, although the two are independent.
The input gradient's tensor-parallel all-reduce blocks layer 1's backward, so the trace's own order leaves
it exposed; the solver computes the input gradient first and hides the all-reduce behind the weight
gradient. docs/chakra.md has the rules. The same from the shell, once the trace is written:

    codesign solve DIR/chakra_mlp.yaml
    codesign export-chakra DIR/chakra_mlp.yaml --out DIR/back     # a problem's workload as a trace again

Run:  python examples/chakra_trace.py [output folder]
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import yaml

import codesign
from codesign.pipeline.solution import design_text
from codesign.platform.endpoint import design_of
from codesign.sim.replay import simulate
from codesign.workload.chakra_wire import Attr, Node, Trace, encode

HERE = Path(__file__).resolve().parent
COMP, COLL = 4, 7          # Chakra's NodeType
ALL_REDUCE = 0             # Chakra's CollectiveCommType


def compute(i: int, name: str, deps: tuple[int, ...], *, gflop: float | None = None, us: int = 0) -> Node:
    """A compute node on the NPU: its cost as FLOPs (``num_ops``, priced on the problem's NPU) or as a
    measured ``duration_micros``."""
    attrs = [Attr("is_cpu_op", "bool_val", False)]
    if gflop is not None:
        attrs += [Attr("num_ops", "int64_val", int(gflop * 1e9)), Attr("tensor_size", "uint64_val", 0)]
    return Node(i, name, COMP, data_deps=deps, duration_micros=us, attrs=tuple(attrs))


def all_reduce(i: int, name: str, mib: int, deps: tuple[int, ...], place: Attr) -> Node:
    return Node(i, name, COLL, data_deps=deps, attrs=(Attr("comm_type", "int64_val", ALL_REDUCE),
                                                       Attr("comm_size", "int64_val", mib * 2**20), place))


def write_trace(folder: Path) -> Path:
    tp = Attr("involved_dim", "bool_list", [True, False])   # ASTRA-sim's way: one flag per dimension
    dp = Attr("pg_name", "string_val", "data")               # PyTorch's way: a process group, mapped in the problem
    nodes = (compute(0, "fc1.forward", (), gflop=4.8),
             compute(1, "fc2.forward", (0,), gflop=4.8),
             compute(2, "fc2.weight_grad", (1,), us=40),
             compute(3, "fc2.input_grad", (1,), us=40),
             all_reduce(4, "fc2.input_grad.tp", 2, (3,), tp),
             all_reduce(5, "fc2.weight_grad.dp", 1, (2,), dp),
             compute(6, "fc1.weight_grad", (4,), us=40),
             all_reduce(7, "fc1.weight_grad.dp", 1, (6,), dp))
    (folder / "chakra_mlp.0.et").write_bytes(encode(Trace("0.0.4", (), nodes)))
    problem = yaml.safe_load((HERE.parent / "problems" / "quickstart.yaml").read_text())
    problem.update(name="chakra_mlp", description="a 2-layer model's Chakra trace on a 4x4 torus, ACE sized",
                   workload={"chakra": "chakra_mlp", "npu": 0, "groups": {"data": [1]}})
    path = folder / "chakra_mlp.yaml"
    path.write_text(yaml.safe_dump(problem, sort_keys=False))
    return path


def main(folder: Path) -> codesign.Solution:
    folder.mkdir(parents=True, exist_ok=True)
    path = write_trace(folder)
    problem = codesign.load_problem(path)
    print("trace order   ", ", ".join(s.name for s in problem.workload.program))
    sol = codesign.solve(problem)
    for note in sol.notes:
        print("note          ", note)
    ran = [t.name for t in sol.schedule if t.kind != "comm"]
    print("solver's order", ", ".join(dict.fromkeys(ran)))
    print(f"design         {design_text(sol.design)}: {sol.iteration_time_s * 1e6:.1f} us per iteration "
          f"({sol.status}), exposed communication {sol.exposed_comm_s * 1e6:.1f} us")
    traced = simulate(problem, design_of(problem.engine, sol.choice)).period_s  # the trace's own order
    print(f"trace's order  {traced * 1e6:.1f} us per iteration at that design")
    return sol


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="codesign-chakra-")))
