"""The validated problem: domain objects that the MILP and the evaluators read (built by ``problem.load``)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..platform.endpoint import NPU, Engine
from ..platform.network import Network, topology_at
from ..platform.topology import Topology
from ..workload.model import Workload

OBJECTIVES = ("iteration_time", "area", "power", "network_cost")
#: Network orders: a dispatch policy, or ``optimize``: chosen by the solver with the design (milp/order_solve.py).
ORDERS = ("lifo", "fifo", "optimize")


@dataclass(frozen=True)
class Objective:
    """Minimize ``minimize``; for area, power or network cost, subject to ``iteration_time_target`` (seconds)."""

    minimize: str = "iteration_time"
    iteration_time_target_s: float | None = None


@dataclass(frozen=True)
class ScheduleSpec:
    """How collectives share the network: a policy order (or ``optimize``: the solver's choice), the chunks
    each collective is cut into, and whether communication may overlap compute (False: every collective
    blocks the next compute task)."""

    order: str = "lifo"
    chunks: int = 1
    overlap: bool = True


@dataclass(frozen=True)
class SolverSpec:
    """HiGHS settings: time limit (s), relative MIP gap, threads, presolve, and the profile they came from."""

    profile: str = "default"
    time_limit_s: float = 60.0
    mip_gap: float = 1e-4
    threads: int = 1
    presolve: bool = False


@dataclass(frozen=True)
class Problem:
    """Everything one solve needs, in SI units."""

    name: str
    workload: Workload
    topology: Topology
    npu: NPU
    engine: Engine
    objective: Objective = field(default_factory=Objective)
    schedule: ScheduleSpec = field(default_factory=ScheduleSpec)
    solver: SolverSpec = field(default_factory=SolverSpec)
    description: str = ""
    path: str | None = None
    #: The network's design space (open bandwidths, their cost and budget), or None: the topology as given.
    #: When set, an open dimension's ``link_bandwidth`` in ``topology`` stands for nothing (the loader puts
    #: its largest option there); ``at_design`` fixes it.
    network: Network | None = None


def at_design(problem: Problem, choice: dict[str, int]) -> Problem:
    """The problem with its network fixed at the bandwidths ``choice`` picks, and no network design space
    left: what the simulator replays, and what the platform LP and shadow prices move, for a design
    (unchanged when the problem has no network design space)."""
    if problem.network is None:
        return problem
    return dataclasses.replace(problem, topology=topology_at(problem.topology, problem.network, choice), network=None)
