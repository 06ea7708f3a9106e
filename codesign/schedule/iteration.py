"""The training iteration as tasks: compute in program order, and collectives with their release and wait points.

Program order (ASTRA-sim 1.0's loop): forward of layers 1..L, then backward from L to 1, each layer's
weight gradient and then its input gradient (layer 1 has no input gradient to compute). A collective
is released when the compute task that issues it ends, and some compute task waits for it (plus a
delay, the layer's update for weight-gradient collectives) before it may start:

- weight-gradient collectives are non-blocking: the next iteration's forward of the same layer waits;
- forward and input-gradient collectives (model parallelism) block the next compute task;
- ``hybrid_dlrm``: the embedding's forward all-to-all is issued after its forward and awaited before the
  first top-MLP layer; its backward all-to-all is issued when the first top layer's input gradient ends
  and awaited before the next iteration begins. Both outrank every other collective.
- ``micro``: every collective is issued at the start of the iteration; there is no compute.

A workload with a ``program`` (``Workload.program``) gives its iteration as explicit steps instead, and
they become the tasks one for one: ASTRA-sim's MODEL, hybrid and Transformer loops with their
re-computation (``workload.astra.astra_program``), and the LLM builder's pipeline schedules with their
bubble (``workload.llm``). Their loops are described where they are built.

With ``overlap=False`` (``schedule: {overlap: false}``: the ACE study's no-overlap baseline) every
collective blocks the compute task after the one that issues it: communication never runs beside
compute.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..workload.model import Comm, Compute, Issue, Step, Workload


#: Dispatch priorities for the network: collectives as (index, iteration offset), highest first; an
#: offset of 1 ranks the copy issued in the next iteration (``sim.replay.simulate``'s ``order``).
Order = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class ComputeTask:
    index: int
    name: str
    layer: int         # index into workload.layers
    kind: str          # forward | input_grad | weight_grad | idle, or a program step's kind (workload.model.Step)
    demand: Compute


@dataclass(frozen=True)
class CommTask:
    """A collective of one iteration. ``wait_before`` is the compute task that waits for it, in the
    next iteration if ``next_iteration``; ``delay_s`` is added after it ends before that task may start."""

    index: int
    name: str
    layer: int
    kind: str          # forward_comm | input_grad_comm | weight_grad_comm, or a program's (workload.model.Issue)
    comm: Comm
    issue_after: int
    wait_before: int
    next_iteration: bool
    delay_s: float
    urgent: bool = False


@dataclass(frozen=True)
class Iteration:
    computes: tuple[ComputeTask, ...]
    comms: tuple[CommTask, ...]


def build_iteration(w: Workload, overlap: bool = True) -> Iteration:
    """Tasks and their dependencies for one training iteration of ``w``."""
    it = _build(w)
    if overlap:
        return it
    J = len(it.computes)
    blocking = []
    for c in it.comms:
        nxt = c.issue_after + 1
        blocking.append(CommTask(c.index, c.name, c.layer, c.kind, c.comm, c.issue_after, nxt % J, nxt >= J,
                                 c.delay_s, c.urgent))
    return Iteration(it.computes, tuple(blocking))


def _from_program(w: Workload) -> Iteration:
    """A program's steps as compute tasks, its issues as collectives (``workload.model.Step``, ``Issue``)."""
    prog = w.program or ()
    if not prog:
        raise ValueError(f"workload {w.name!r} has an empty program")
    J = len(prog)
    computes = []
    comms: list[CommTask] = []
    for j, st in enumerate(prog):
        computes.append(ComputeTask(j, st.name, st.layer, st.kind, st.demand))
        for iss in st.issues:
            if not 0 <= iss.wait < J:
                raise ValueError(f"{iss.name}: waits before step {iss.wait}, outside the program's 0..{J - 1}")
            if not iss.next_iteration and iss.wait <= j:
                raise ValueError(f"{iss.name}: released after step {j} but awaited before step {iss.wait} of the "
                                 "same iteration")
            if not 0 <= iss.layer < len(w.layers):
                raise ValueError(f"{iss.name}: layer {iss.layer} is not one of the workload's")
            comms.append(CommTask(len(comms), iss.name, iss.layer, iss.kind, iss.comm, j, iss.wait, iss.next_iteration,
                                  iss.delay_s, iss.urgent))
    return Iteration(tuple(computes), tuple(comms))


def _build(w: Workload) -> Iteration:
    if w.program is not None:
        return _from_program(w)
    L = len(w.layers)
    if w.parallelism == "micro":
        computes = (ComputeTask(0, "iteration", -1, "idle", Compute(time_s=0.0)),)
        comms = []
        for li, layer in enumerate(w.layers):
            for kind in ("forward", "input_grad", "weight_grad"):
                c = layer.comm(kind)
                if c is not None:
                    comms.append(CommTask(len(comms), f"{layer.name}.{kind}_comm", li, f"{kind}_comm", c,
                                          0, 0, True, layer.update_s if kind == "weight_grad" else 0.0))
        return Iteration(computes, tuple(comms))

    order: list[tuple[int, str]] = [(li, "forward") for li in range(L)]
    for li in reversed(range(L)):
        order.append((li, "weight_grad"))
        if li > 0:
            order.append((li, "input_grad"))
    pos = {key: i for i, key in enumerate(order)}
    computes = tuple(ComputeTask(i, f"{w.layers[li].name}.{kind}", li, kind, w.layers[li].compute(kind))
                     for i, (li, kind) in enumerate(order))

    def after(i: int) -> tuple[int, bool]:
        return (i + 1, False) if i + 1 < len(order) else (0, True)

    dlrm = w.parallelism == "hybrid_dlrm"
    top = w.dlrm_last_bottom if dlrm else None  # 0-based index of the first top-MLP layer
    comms: list[CommTask] = []

    def add(li: int, kind: str, c: Comm, issue: int, wait: tuple[int, bool], delay: float, urgent: bool) -> None:
        comms.append(CommTask(len(comms), f"{w.layers[li].name}.{kind}_comm", li, f"{kind}_comm", c,
                              issue, wait[0], wait[1], delay, urgent))

    for li, layer in enumerate(w.layers):
        if layer.forward_comm is not None:
            i = pos[(li, "forward")]
            if dlrm and li == 0:
                add(li, "forward", layer.forward_comm, i, (pos[(top, "forward")], False), 0.0, True)
            else:
                add(li, "forward", layer.forward_comm, i, after(i), 0.0, False)
        if layer.input_grad_comm is not None:
            if dlrm and li == 0:
                add(li, "input_grad", layer.input_grad_comm, pos[(top, "input_grad")], (0, True), 0.0, True)
            elif li > 0:
                i = pos[(li, "input_grad")]
                add(li, "input_grad", layer.input_grad_comm, i, after(i), 0.0, False)
        if layer.weight_grad_comm is not None:
            add(li, "weight_grad", layer.weight_grad_comm, pos[(li, "weight_grad")],
                (pos[(li, "forward")], True), layer.update_s, False)
    return Iteration(computes, tuple(comms))


def as_program(w: Workload, overlap: bool = True) -> tuple[Step, ...]:
    """The iteration of ``w`` as an explicit program (``Workload.program``), whatever form ``w`` gives it in:
    the tasks of ``build_iteration`` one for one, each collective issued by its step. A workload whose
    program is this one has the same iteration (what a Chakra trace is written from: ``workload.chakra``)."""
    it = build_iteration(w, overlap)
    issues: list[list[Issue]] = [[] for _ in it.computes]
    for c in it.comms:
        issues[c.issue_after].append(Issue(c.name, c.kind, c.layer, c.comm, c.wait_before, c.next_iteration,
                                           c.delay_s, c.urgent))
    return tuple(Step(t.name, t.layer, t.kind, t.demand, tuple(issues[t.index])) for t in it.computes)
