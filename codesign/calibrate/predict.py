"""A measured run as a codesign problem on a cluster profile, and its predicted iteration time.

The run's GPUs are laid out as Megatron-LM numbers its ranks: tensor parallelism fastest, then data, then
pipeline parallelism, ``node_size`` consecutive ranks to a node. Each parallelism then spans a part of a node
and a number of nodes; each part is one topology dimension, on the node's network (NVLink through
NVSwitch) or between nodes (each GPU's share of its node's InfiniBand NICs), at the cluster profile's
bandwidth, latency and algorithm. The engine is ``ideal`` (NCCL's own cost on the GPU is inside the
measured collective curves the profile is fitted to) and collectives run as one chunk; the iteration is
the LLM builder's (``workload.llm``), timed by the GPU profile's compute model.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import SpecError
from ..platform.compute import price
from ..platform.endpoint import NPU, Design, Engine
from ..platform.topology import Dim, Topology
from ..problem.model import Problem, ScheduleSpec
from ..problem.platforms import Cluster, Link
from ..sim.replay import simulate
from ..workload.llm import llm
from ..workload.model import Workload
from .runs import Run


@dataclass(frozen=True)
class Layout:
    """The topology of a run and the dimensions each parallelism takes."""

    topology: Topology
    tensor_dims: tuple[int, ...]
    data_dims: tuple[int, ...]
    pipeline_dims: tuple[int, ...]


class Unsupported(ValueError):
    """A run codesign cannot yet rebuild (the reason names what is missing)."""


def layout(run: Run, cluster: Cluster) -> Layout:
    """Megatron's rank order on ``cluster``'s nodes, as topology dimensions (module docstring)."""
    room = cluster.node_size
    dims: list[Dim] = []
    taken: dict[str, list[int]] = {"tensor": [], "data": [], "pipeline": []}
    inter: list[tuple[str, int]] = []
    for what, degree in (("tensor", run.tp), ("data", run.dp), ("pipeline", run.pp)):
        inside = min(degree, room)
        if degree % inside or room % inside:
            raise Unsupported(f"{what} parallelism {degree} does not split evenly over nodes of {cluster.node_size}")
        room //= inside
        if inside > 1:
            taken[what].append(len(dims))
            dims.append(_dim(f"{what}.intra", inside, cluster.intra_node))
        if degree // inside > 1:
            inter.append((what, degree // inside))
    for what, size in inter:
        taken[what].append(len(dims))
        dims.append(_dim(f"{what}.inter", size, cluster.inter_node))
    if len(taken["pipeline"]) > 1:
        raise Unsupported(f"pipeline parallelism {run.pp} spans both a node's GPUs and nodes; the LLM builder "
                          "lays a pipeline along one dimension")
    if not dims:
        raise Unsupported("a run on one GPU has no network for codesign to place")
    return Layout(Topology(tuple(dims)), tuple(taken["tensor"]), tuple(taken["data"]), tuple(taken["pipeline"]))


def _dim(name: str, size: int, link: Link) -> Dim:
    return Dim(name, "switch", size, 1, link.bandwidth, link.latency, link.algorithm, link.phase_latency,
               link.buffer_bandwidth)


def problem_of(run: Run, cluster: Cluster, gpu: NPU) -> Problem:
    """The run as a problem: the LLM builder's iteration on ``cluster`` with ``gpu``, engine ideal."""
    lay = layout(run, cluster)
    sizes = tuple(d.size for d in lay.topology.dims)
    try:
        w = _workload(run, lay, sizes)
    except ValueError as e:  # the row's configuration, as the LLM builder checks it: the user's data
        raise SpecError(f"this run's configuration: {e}", file=run.file, line=run.line, path="(row)") from None
    if gpu.compute_model is not None:
        w = price(w, gpu.compute_model, gpu.hbm_bandwidth)
    return Problem(name=w.name, workload=w, topology=lay.topology, npu=gpu, engine=Engine("ideal"),
                   schedule=ScheduleSpec(chunks=1))


def _workload(run: Run, lay: Layout, sizes: tuple[int, ...]) -> Workload:
    """The LLM builder's iteration for ``run`` on ``lay`` (ValueError: a configuration it refuses)."""
    return llm(layers=run.layers, hidden=run.hidden, heads=run.heads, seq_len=run.seq_len, vocab=run.vocab,
            ffn_hidden=run.ffn_hidden, micro_batch=run.micro_batch, global_batch=run.global_batch,
            tensor_parallel=run.tp, pipeline_parallel=run.pp, data_parallel=run.dp, tensor_dims=lay.tensor_dims,
            pipeline_dims=lay.pipeline_dims, data_dims=lay.data_dims, schedule="1f1b", recompute=run.recompute,
            overlap_grad_reduce=run.overlap_grad_reduce, sequence_parallel=run.sequence_parallel,
            virtual_stages=run.virtual_stages,
            name=f"row{run.line}", topology_sizes=sizes)


def predict(run: Run, cluster: Cluster, gpu: NPU) -> float:
    """The run's predicted iteration time (s): the simulated steady-state period."""
    p = problem_of(run, cluster, gpu)
    return simulate(p, Design("ideal", {}), iterations=4).period_s
