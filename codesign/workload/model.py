"""The workload: a training iteration's layers, their compute and their communication.

A layer's compute is given either as a time measured at the full NPU (all cores, all HBM bandwidth),
or as FLOPs and HBM bytes, which the NPU's roofline turns into a time (see ``platform.costs.compute_time``).
Communication is a collective with a size in bytes, over some or all network dimensions.
Collective sizes follow one convention everywhere: ``bytes`` is the per-NPU size of the full buffer
(all-reduce: input = output = bytes; reduce-scatter: input bytes, output bytes/P; all-gather: input
bytes/P, output bytes; all-to-all: input = output = bytes; p2p: each NPU sends ``bytes`` to one neighbour
in the dimension and receives ``bytes`` from the other, one message each way, as the stages of a pipeline
pass activations on).

A workload's iteration is its ``parallelism``'s training loop over the layers
(``schedule.iteration.build_iteration``), unless the workload carries its own ``program``: the compute
tasks of one iteration in program order, each with the collectives it releases and the task that waits
for each. ASTRA-sim's hybrid, model-parallel and Transformer loops (``workload.astra``) and the pipeline
schedules of the LLM builder (``workload.llm``) are given that way. A workload imported from a task graph
(a Chakra execution trace, ``workload.chakra``) also carries its ``task_graph``: the precedence its compute tasks
must keep, so that their order on the NPU, one at a time, is a decision (``milp/compute_order.py``) and
its ``program`` one order of the graph.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx

#: ``p2p`` is one message of ``bytes`` to a neighbour (one step on one dimension); the platform
#: (``platform/collectives.py``) must time it before a problem can use it: ``problem.load`` refuses it until then.
COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p")
#: The training loops a problem file names (``workload.parallelism``); ASTRA-sim's other loops, and
#: pipelines, come with their own ``Workload.program``.
PARALLELISMS = ("data", "model", "hybrid_data_model", "hybrid_model_data", "hybrid_dlrm", "micro")
PHASE_KINDS = ("forward", "input_grad", "weight_grad")


#: What a kernel is: a matrix product (``gemm``, on the tensor cores), an element-wise or reduction kernel
#: whose time is its memory traffic (``memory``: LayerNorm, softmax, dropout, GeLU, the optimizer step), or
#: the framework's host work around a blocking point-to-point exchange (``exchange``: no GPU work; Megatron
#: synchronizes the device around it, so the GPU idles while the host does it).
KERNEL_KINDS = ("gemm", "memory", "exchange")


@dataclass(frozen=True)
class Kernel:
    """One GPU kernel of a compute task, as the platform's compute model prices it (``platform.compute``).

    ``gemm``: ``batch`` independent products of an (m x k) by a (k x n) matrix, 2 m n k FLOPs each, ``bytes`` the
    HBM traffic of its operands and result; ``memory``: ``bytes`` of HBM traffic and ``flops`` of vector work.
    ``count``: how many times the kernel runs back to back (r merged micro-batches run it r times)."""

    name: str
    kind: str
    flops: float
    bytes: float
    m: int = 0
    n: int = 0
    k: int = 0
    batch: int = 1
    count: int = 1

    def times(self, r: int) -> Kernel:
        return Kernel(self.name, self.kind, self.flops, self.bytes, self.m, self.n, self.k, self.batch,
                      self.count * r)


@dataclass(frozen=True)
class Compute:
    """One compute task's demand: a time at the full NPU, or FLOPs plus HBM bytes (roofline).

    ``kernels``, where the workload knows them (the LLM builder does), say how the FLOPs and bytes are
    divided among GPU kernels: an NPU with a compute model (``platform.compute``, a calibrated profile)
    prices them into ``time_s`` when the problem is assembled, keeping ``hbm_bytes`` as the HBM the task
    draws; without one the roofline of ``flops`` and ``hbm_bytes`` applies. A time given with
    ``hbm_bytes`` draws those bytes over the time; a time alone draws the NPU's ``compute_hbm_utilization``."""

    time_s: float | None = None
    flops: float | None = None
    hbm_bytes: float | None = None
    #: not compared: the MILP and the simulator read the time, FLOPs and bytes alone, so two tasks equal in
    #: those are the same task (a Chakra trace, which keeps no kernels, reads back equal)
    kernels: tuple[Kernel, ...] = field(default=(), compare=False)

    @property
    def empty(self) -> bool:
        return not (self.time_s or self.flops or self.hbm_bytes)


@dataclass(frozen=True)
class Comm:
    """A collective: its type (one of COLLECTIVES), its size in bytes, the dimensions it spans (None: all)."""

    collective: str
    bytes: float
    dims: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Layer:
    """One layer: compute for forward, input gradient and weight gradient, the collective each phase
    issues (or None), and the update delay in seconds after its weight-gradient collective."""

    name: str
    forward: Compute = field(default_factory=Compute)
    input_grad: Compute = field(default_factory=Compute)
    weight_grad: Compute = field(default_factory=Compute)
    forward_comm: Comm | None = None
    input_grad_comm: Comm | None = None
    weight_grad_comm: Comm | None = None
    update_s: float = 0.0

    def compute(self, kind: str) -> Compute:
        return {"forward": self.forward, "input_grad": self.input_grad,
                "weight_grad": self.weight_grad}[kind]

    def comm(self, kind: str) -> Comm | None:
        return {"forward": self.forward_comm, "input_grad": self.input_grad_comm,
                "weight_grad": self.weight_grad_comm}[kind]


@dataclass(frozen=True)
class Issue:
    """A collective a program step releases when it ends: awaited before step ``wait`` (of the next
    iteration if ``next_iteration``), ``delay_s`` after it ends. ``layer`` indexes ``Workload.layers`` (the
    layer it is reported under); ``kind`` labels it (``forward_comm``, ``tp``, ``p2p``, ``dp``, ...);
    ``urgent`` collectives go before all others at every dimension. ``kernels``: the host's work around it
    (``exchange`` kernels) where it runs beside compute, which a compute model prices into ``delay_s``."""

    name: str
    kind: str
    layer: int
    comm: Comm
    wait: int
    next_iteration: bool = False
    delay_s: float = 0.0
    urgent: bool = False
    kernels: tuple[Kernel, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Step:
    """One compute task of a program: its name, the layer it belongs to (-1: none, such as an optimizer
    step), its kind (``forward``, ``input_grad``, ``weight_grad``, ``backward``, ``recompute``,
    ``optimizer``, ``idle``: the representative NPU waits while other NPUs compute, as a pipeline's
    bubble), its demand, and the collectives it releases when it ends."""

    name: str
    layer: int
    kind: str
    demand: Compute
    issues: tuple[Issue, ...] = ()


@dataclass(frozen=True)
class GraphComm:
    """A collective of a task graph: released when every task of ``after`` has ended, awaited before every
    task of ``before``; with no ``before`` it is awaited before the next iteration's task ``next_wait``
    (None: its first task, whichever the order puts first). Other fields as ``Issue``'s."""

    name: str
    kind: str
    layer: int
    comm: Comm
    after: tuple[int, ...]
    before: tuple[int, ...] = ()
    next_wait: int | None = None
    delay_s: float = 0.0
    urgent: bool = False


@dataclass(frozen=True)
class TaskGraph:
    """An iteration as a graph: compute ``tasks`` (steps without issues) numbered in a topological order,
    ``preds[j]`` the tasks that must end before task j starts (all numbered below j), and the collectives.
    One NPU runs one task at a time, so an iteration is an order of the tasks that keeps ``preds`` (and puts
    every collective's ``after`` before its ``before``); ``program(order)`` is that iteration as a program.
    ``decided`` says how the workload's program order was chosen, once it has been
    (``milp/compute_order.py``); empty while it is the trace's own order."""

    tasks: tuple[Step, ...]
    preds: tuple[tuple[int, ...], ...]
    comms: tuple[GraphComm, ...]
    decided: str = ""

    def __post_init__(self) -> None:
        # tasks are numbered in a topological order (the trace order): the ordering code relies on it
        for j, ps in enumerate(self.preds):
            if any(not 0 <= i < j for i in ps):
                raise ValueError(f"task {self.tasks[j].name!r}: its predecessors must come before it in the numbering")

    def program(self, order: tuple[int, ...] | list[int]) -> tuple[Step, ...]:
        """The tasks in ``order`` (a permutation of their indices) with each collective issued by the last of
        its ``after`` tasks and awaited before the first of its ``before``. Raises ValueError if ``order``
        is not a permutation or breaks a precedence."""
        n = len(self.tasks)
        if sorted(order) != list(range(n)):
            raise ValueError(f"an order of the {n} tasks must name each once")
        pos = {t: i for i, t in enumerate(order)}
        for j, ps in enumerate(self.preds):
            for i in ps:
                if pos[i] >= pos[j]:
                    raise ValueError(f"task {self.tasks[i].name!r} must come before {self.tasks[j].name!r}")
        issues: list[list[Issue]] = [[] for _ in range(n)]
        for c in self.comms:
            at = max(pos[a] for a in c.after)
            if c.before:
                wait, nxt = min(pos[b] for b in c.before), False
                if wait <= at:
                    raise ValueError(f"collective {c.name!r} is awaited before it is released")
            else:
                wait, nxt = (pos[c.next_wait] if c.next_wait is not None else 0), True
            issues[at].append(Issue(c.name, c.kind, c.layer, c.comm, wait, nxt, c.delay_s, c.urgent))
        return tuple(Step(self.tasks[t].name, self.tasks[t].layer, self.tasks[t].kind, self.tasks[t].demand,
                          tuple(issues[i])) for i, t in enumerate(order))


@dataclass(frozen=True)
class Workload:
    """A model's training iteration.

    ``parallelism`` selects the training loop (as ASTRA-sim 1.0 names them); ``dlrm_last_bottom`` is
    the 1-based index of the last bottom-MLP layer for ``hybrid_dlrm`` (ASTRA-sim's ``HYBRID_DLRM b``
    counts b from 0, so layers 1..b+1 are embedding plus bottom MLP).
    """

    name: str
    parallelism: str
    layers: tuple[Layer, ...]
    dlrm_last_bottom: int | None = None
    source: str | None = None
    #: the iteration as explicit steps (None: ``parallelism``'s loop over ``layers``)
    program: tuple[Step, ...] | None = None
    #: the task graph the program is one order of (None: the program order is given, not chosen)
    task_graph: TaskGraph | None = None
    #: memory one NPU needs, bytes by what holds it (weights, gradients, optimizer, activations), where the
    #: workload knows it (the LLM builder, ``llm_memory``); empty: not stated
    memory_bytes: tuple[tuple[str, float], ...] = ()
    #: the model's FLOPs of one iteration over all NPUs divided by the NPUs (recomputation is not model work),
    #: where the workload knows the whole job and not only the program's NPU (the LLM builder); None: not stated
    model_flops_per_npu: float | None = None

    def graph(self) -> nx.DiGraph:
        """The layer graph: a node per layer (attribute ``layer``), edges in forward data-flow order."""
        import networkx as nx

        g = nx.DiGraph(name=self.name, parallelism=self.parallelism)
        for i, layer in enumerate(self.layers):
            g.add_node(layer.name, index=i, layer=layer)
            if i:
                g.add_edge(self.layers[i - 1].name, layer.name)
        return g

    @property
    def total_comm_bytes(self) -> float:
        """Bytes of the collectives of one iteration (of its program, if it has one)."""
        if self.program is not None:
            return sum(i.comm.bytes for s in self.program for i in s.issues)
        return sum(c.bytes for layer in self.layers for k in PHASE_KINDS
                   if (c := layer.comm(k)) is not None)
