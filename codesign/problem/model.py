"""The validated problem: domain objects that the MILP and the evaluators read (built by ``problem.load``)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..platform.endpoint import NPU, Engine
from ..platform.topology import Topology
from ..workload.model import Workload

OBJECTIVES = ("iteration_time", "area", "power")
#: Network orders: a dispatch policy, or ``optimize``: chosen by the solver with the design (milp/order_solve.py).
ORDERS = ("lifo", "fifo", "optimize")


@dataclass(frozen=True)
class Objective:
    """Minimize ``minimize``; for area or power, subject to ``iteration_time_target`` (seconds)."""

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
