"""What ``codesign simulate P.yaml`` replays: the problem's fixed design, or a saved solution's design and order."""
from __future__ import annotations

from pathlib import Path

from ..errors import SpecError, shown
from ..pipeline.solution import design_keys
from ..platform.endpoint import Design, design_of
from ..platform.network import key
from ..problem.model import Problem, at_design
from ..schedule.iteration import Order, build_iteration
from ..spec.files import parse_json, read_user_file


def design_and_order(problem: Problem, solution_path: str | None, *,
                     confine_to: Path | None = None) -> tuple[Design, Order | None]:
    """The design to replay and its dispatch priorities (None: the problem's policy). ``confine_to``: refuse
    a solution file outside this folder (``read_user_file``)."""
    eng = problem.engine
    if solution_path is None:
        open_ = [r for r, opts in eng.resources.items() if len(opts) > 1]
        if open_:
            raise SpecError(f"{len(eng.resources[open_[0]])} options: fix each resource to one value to simulate "
                            "the problem, or pass --solution from 'solve --out'",
                            file=problem.path, path=f"engine.{open_[0]}")
        return design_of(eng, {r: 0 for r in eng.resources}), None
    file = str(solution_path)
    text = read_user_file(solution_path, what="solution file", confine_to=confine_to)
    doc = parse_json(text, file, "solution JSON file")
    if not isinstance(doc, dict) or not isinstance(doc.get("design"), dict):
        raise SpecError("expected the solution.json written by 'codesign solve --out'", file=file, path="design")
    if doc.get("engine") != eng.kind:
        raise SpecError(f"the solution is for a {shown(doc.get('engine'))} engine but the problem has {eng.kind!r}",
                        file=file, path="engine")
    choice = {}
    for r, opts in eng.resources.items():
        key = design_keys()[r]
        if key not in doc["design"]:
            raise SpecError(f"missing the value of {r}", file=file, path=f"design.{key}")
        v = doc["design"][key]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SpecError(f"expected a number, got {shown(v)}", file=file, path=f"design.{key}")
        match = [i for i, o in enumerate(opts) if abs(o.value - v) <= 1e-9 * max(abs(v), 1.0)]
        if not match:
            raise SpecError(f"{shown(v)} is not one of the problem's options for {r}", file=file, path=f"design.{key}")
        choice[r] = match[0]
    seq = doc.get("priority")
    order = None
    if seq is not None:
        order = _order(seq, len(build_iteration(problem.workload, problem.schedule.overlap).comms), file, "priority")
    return design_of(eng, choice), order


def network_at(problem: Problem, solution_path: str | None, *, confine_to: Path | None = None) -> Problem:
    """The problem with its network fixed for a replay: a problem without open bandwidths as it is; with
    them, the bandwidths a saved solution chose (its ``network`` section), else an error naming the first
    open dimension."""
    net = problem.network
    if net is None or not net.sized:
        return problem
    if solution_path is None:
        d = next(d for d, b in enumerate(net.bandwidths) if len(b) > 1)
        raise SpecError(f"{len(net.bandwidths[d])} bandwidths: fix each dimension's bandwidth to one value to "
                        "simulate the problem, or pass --solution from 'solve --out'",
                        file=problem.path, path=f"topology.dims[{d}].bandwidth")
    file = str(solution_path)
    doc = parse_json(read_user_file(solution_path, what="solution file", confine_to=confine_to), file,
                     "solution JSON file")
    dims = doc.get("network", {}).get("dims") if isinstance(doc, dict) and isinstance(doc.get("network"), dict) \
        else None
    if not isinstance(dims, list) or len(dims) != len(net.bandwidths):
        raise SpecError(f"expected the chosen bandwidth of each of the problem's {len(net.bandwidths)} dimensions "
                        "(the solution of a problem with open bandwidths)", file=file, path="network.dims")
    choice = {}
    for d, opts in enumerate(net.bandwidths):
        v = dims[d].get("link_bandwidth_bytes_per_s") if isinstance(dims[d], dict) else None
        where = f"network.dims[{d}].link_bandwidth_bytes_per_s"
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SpecError(f"expected a number, got {shown(v)}", file=file, path=where)
        match = [i for i, bw in enumerate(opts) if abs(bw - v) <= 1e-9 * max(abs(v), 1.0)]
        if not match:
            raise SpecError(f"{shown(v)} is not one of the problem's bandwidths for dimension {d}", file=file,
                            path=where)
        choice[key(d)] = match[0]
    return at_design(problem, choice)


def _order(seq: object, count: int, file: str, where: str) -> Order:
    """Saved dispatch priorities: [collective, offset] pairs naming each of the problem's ``count``
    collectives once (the replay ranks every collective by them), offsets whole numbers >= 0."""
    pairs = list(seq) if isinstance(seq, list) else None
    if pairs is None or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, int) and not
                                                                             isinstance(x, bool) for x in p)
                                for p in pairs):
        raise SpecError("expected a list of [collective, offset] pairs of whole numbers", file=file, path=where)
    ks = sorted(k for k, _ in pairs)
    if ks != list(range(count)) or any(off < 0 for _, off in pairs):
        raise SpecError(f"expected each of the problem's {count} collectives (0..{count - 1}) once, with an offset "
                        f">= 0: is the solution for this problem?", file=file, path=where)
    return tuple((k, off) for k, off in pairs)


def compute_ordered(problem: Problem, solution_path: str | None, *, confine_to: Path | None = None) -> Problem:
    """A task graph's workload (a Chakra trace) in the compute order a saved solution ran (its
    ``compute_order``), or, without one, in the order the solver chooses now (milp/compute_order.py); any
    other problem as it is."""
    from ..milp.compute_order import with_compute_order
    g = problem.workload.task_graph
    if g is None or g.decided:
        return problem
    order = None
    if solution_path is not None:
        file = str(solution_path)
        doc = parse_json(read_user_file(solution_path, what="solution file", confine_to=confine_to), file,
                         "solution JSON file")
        seq = doc.get("compute_order") if isinstance(doc, dict) else None
        if seq is not None:
            ok = isinstance(seq, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in seq)
            if not ok or sorted(seq) != list(range(len(g.tasks))):
                raise SpecError(f"expected each of the trace's {len(g.tasks)} compute tasks once, got "
                                f"{shown(seq, 40)}", file=file, path="compute_order")
            order = tuple(seq)
    return with_compute_order(problem, order=order)[0]
