"""What an LLM training run is judged by: model FLOPs utilization (MFU) and the time its collectives of each
kind of parallelism (tensor, pipeline, data) are in flight, read off a solve's schedule.

MFU, as PaLM (Chowdhery et al. 2022, appendix B) defines it: the model's FLOPs per iteration (a forward and a
backward of twice its FLOPs for every micro-batch; recomputation is not model work) over the iteration time,
the NPUs and their peak rate. The whole job's FLOPs are the builder's count (``Workload.model_flops_per_npu``:
every pipeline stage's layers and the head once, not only the simulated NPU's stage); a workload that does not
state them is judged by its program's NPU, three times the FLOPs of its forward steps.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..problem.model import Problem

#: The kinds of a program's collectives (``workload.model.Issue.kind``) and what a person calls them.
PARALLELISM = {"tp": "tensor", "p2p": "pipeline", "dp": "data"}
#: Schedule kinds that are no model work (the representative waits; optimizer steps are not FLOPs of the model).
_NOT_COMPUTE = ("comm", "idle")


@dataclass(frozen=True)
class LLMReport:
    """``mfu``: model FLOPs utilization (0-1). ``model_flops``: model FLOPs per iteration of one NPU.
    ``in_flight_s`` / ``exposed_s``: per parallelism (tensor, pipeline, data), seconds of the iteration in
    which one of its collectives is in flight, and of those the seconds no compute runs."""

    mfu: float
    model_flops: float
    in_flight_s: dict[str, float]
    exposed_s: dict[str, float]

    def to_dict(self) -> dict:
        return {"mfu": self.mfu, "model_flops_per_npu": self.model_flops,
                "comm_in_flight_s": dict(self.in_flight_s), "comm_exposed_s": dict(self.exposed_s)}


def model_flops_per_npu(p: Problem) -> float | None:
    """Model FLOPs of one iteration per NPU: the workload's own count of the job's, else 3x its program's
    forward steps (None: no program in FLOPs)."""
    if p.workload.model_flops_per_npu is not None:
        return p.workload.model_flops_per_npu
    program = p.workload.program
    if program is None:
        return None
    fwd = [s.demand.flops for s in program if s.kind == "forward"]
    if not fwd or any(f is None for f in fwd):
        return None
    return 3.0 * float(sum(fwd))


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _length(spans: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in spans)


def _minus(spans: list[tuple[float, float]], cover: list[tuple[float, float]]) -> float:
    """Seconds of the disjoint ``spans`` that the disjoint ``cover`` leaves uncovered."""
    left = 0.0
    for a, b in spans:
        t = a
        for c, d in cover:
            if d <= t or c >= b:
                continue
            left += max(0.0, c - t)
            t = max(t, d)
            if t >= b:
                break
        left += max(0.0, b - t)
    return left


def llm_report(solution, p: Problem) -> LLMReport | None:
    """MFU and the time split by parallelism of an LLM workload's solve (None for any other workload)."""
    if p.workload.parallelism != "llm":
        return None
    flops = model_flops_per_npu(p)
    T = solution.iteration_time_s
    if flops is None or not T > 0:
        return None
    from ..schedule.iteration import build_iteration
    kind_of = {c.name: c.kind for c in build_iteration(p.workload, p.schedule.overlap).comms}
    spans: dict[str, list[tuple[float, float]]] = {name: [] for name in PARALLELISM.values()}
    compute: list[tuple[float, float]] = []
    for task in solution.schedule:
        if task.kind == "comm":
            which = PARALLELISM.get(kind_of.get(task.name, ""))
            if which is not None:
                spans[which].append((task.start_s, task.end_s))
        elif task.kind not in _NOT_COMPUTE:
            compute.append((task.start_s, task.end_s))
    busy = _union(compute)
    flight = {k: _union(v) for k, v in spans.items()}
    return LLMReport(flops / (T * p.npu.compute_flops), flops, {k: _length(v) for k, v in flight.items()},
                     {k: _minus(v, busy) for k, v in flight.items()})
