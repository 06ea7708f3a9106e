"""Result objects: what a solve found, in SI units, ready for reports and JSON; and a design's values
as text (``design_text``), which the reports and the explorations both print."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..milp.size import ModelSize
from ..platform.engines import every_resource
from ..spec.units import BYTES_PER_S, Dimension, format_quantity


def design_keys() -> dict[str, str]:
    """The JSON name of each resource's design value, with its unit (``engines.Resource.json_key``)."""
    return {name: r.json_key for name, r in every_resource().items()}


def design_labels() -> dict[str, tuple[str, Dimension | None]]:
    """Each resource's label and unit (None: a plain number), as the reports print it."""
    return {name: (r.label, r.quantity) for name, r in every_resource().items()}


def design_text(values: dict[str, float]) -> str:
    """'SRAM 4 MiB, ALU 128 GB/s, ...' for a design's values (units per ``engines.Resource``)."""
    parts = []
    labels = design_labels()
    for r, v in values.items():
        label, dim = labels[r]
        parts.append(f"{label} {format_quantity(v, dim) if dim else f'{v:g}'}")
    return ", ".join(parts) if parts else "(nothing to size)"


@dataclass(frozen=True)
class ScheduledTask:
    """One task of the steady-state iteration; times in seconds from the iteration's first compute task."""

    name: str
    kind: str      # forward | input_grad | weight_grad | idle | comm
    layer: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class NetworkChoice:
    """The network a solve chose, per dimension: ``names``, ``link_bandwidth`` (bytes/s per link per
    direction), ``bandwidth`` (bytes/s an NPU drives into the dimension, all its links), ``cost`` (in
    ``unit``); ``total`` against ``budget`` (None: no budget); ``options``: how many bandwidths each
    dimension could take (1: fixed); ``tolerance``: a range's grid ratio minus one, else None."""

    names: tuple[str, ...]
    link_bandwidth: tuple[float, ...]
    bandwidth: tuple[float, ...]
    cost: tuple[float, ...]
    total: float
    budget: float | None
    unit: str
    options: tuple[int, ...]
    tolerance: tuple[float | None, ...]

    def text(self) -> str:
        """'network local 200 GB/s, global 100 GB/s (cost 600 $)': the NPU's bandwidth per dimension."""
        bws = ", ".join(f"{n} {format_quantity(b, BYTES_PER_S)}" for n, b in zip(self.names, self.bandwidth))
        return f"network {bws} (cost {self.total:.4g} {self.unit})"

    def to_dict(self) -> dict[str, Any]:
        return {"dims": [{"name": n, "link_bandwidth_bytes_per_s": lb, "bandwidth_bytes_per_s": b, "cost": c,
                          "options": k, "tolerance": t}
                         for n, lb, b, c, k, t in zip(self.names, self.link_bandwidth, self.bandwidth, self.cost,
                                                      self.options, self.tolerance)],
                "cost": self.total, "budget": self.budget, "unit": self.unit}


@dataclass(frozen=True)
class Solution:
    """The answer to one problem, about the platform as the simulator runs it.

    ``status``: optimal (no design within the constraints does better in the simulator, within the tie tolerance
    ``search.TIE`` of the bound) | time_limit (the best design found; see gap) | feasible (a gap above the tie
    tolerance is left: with ``order: optimize``, the orders tried do not reach the proven bound). ``gap``:
    (objective - objective_bound) / objective, of the numbers reported. ``iteration_time_s``: the chosen design's
    simulated steady-state period under its order (the problem's policy, or ``priority``). ``bound_s`` (minimizing
    iteration time): a proven lower bound on the simulated period of every design within the constraints (with
    ``order: optimize``, under every order). ``objective``/``objective_bound``: in the objective's unit (s, mm^2, W,
    or an extra hook's). ``compute_time_s``/``exposed_comm_s``: simulated compute per iteration (slowed where
    communication took cores or HBM bandwidth) and the rest of the period; ``comm_time_s``: the collectives' spans
    (first chunk in to last chunk out), summed. ``schedule``: one steady-state iteration as simulated. ``order``:
    its collectives in the order their first chunk started. ``evaluations``/``master_solves``: designs the simulator
    evaluated, solves of the master MILP (of size ``model``). ``any_order_bound_s``: a proven lower bound on the
    chosen design's simulated period under any network order (None where the solve was asked not to compute it: a
    sweep's points). ``order_comparison`` (``order: optimize``): the simulated period (s) of each order tried at the
    chosen design. ``priority``: the dispatch priorities replayed (collectives highest first, as
    ``sim.replay.simulate`` takes them), or None for the policy. ``sim``: the replay itself. ``compute_order``: a
    task graph's (a Chakra trace's) compute order as the solve chose it, the tasks' indices first to last
    (``milp/compute_order.py``); replays and prices of this solution run it. ``duals`` (when
    ``pipeline.solve.assign`` was asked for them): the constraint duals of the platform LP at this design and order
    (``milp/platform.py``; microseconds of period per microsecond of right-hand side, by constraint name), from
    which ``shadow_prices`` prices every resource.
    """

    problem: str
    engine: str
    objective_kind: str
    status: str
    iteration_time_s: float
    bound_s: float | None
    objective: float
    objective_bound: float | None
    gap: float | None
    solve_time_s: float
    design: dict[str, float]
    choice: dict[str, int]
    area_mm2: float
    power_w: float
    compute_time_s: float
    exposed_comm_s: float
    comm_time_s: float
    schedule: tuple[ScheduledTask, ...]
    order_policy: str
    order: tuple[tuple[int, int], ...]
    evaluations: int
    master_solves: int
    model: ModelSize | None
    chunks: int = 1
    notes: tuple[str, ...] = field(default_factory=tuple)
    order_comparison: dict[str, float] | None = None
    diagnostics: dict[str, Any] | None = None
    any_order_bound_s: float | None = None
    priority: tuple[tuple[int, int], ...] | None = None
    sim: Any = field(default=None, compare=False, repr=False)
    #: The network chosen (or fixed) when the problem has a network design space, else None.
    network: NetworkChoice | None = None
    #: With a bandwidth range, minimizing time: a proven lower bound (s) on the simulated period of every
    #: design whose bandwidths lie anywhere in their ranges (the grid's cells), else None.
    continuous_bound_s: float | None = None
    duals: dict[str, float] | None = field(default=None, compare=False, repr=False)
    compute_order: tuple[int, ...] | None = None

    @property
    def design_named(self) -> dict[str, float]:
        keys = design_keys()
        return {keys[k]: v for k, v in self.design.items()}

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``codesign solve --json``."""
        return {
            "problem": self.problem, "status": self.status, "objective_kind": self.objective_kind,
            "iteration_time_s": self.iteration_time_s, "bound_s": self.bound_s, "objective": self.objective,
            "objective_bound": self.objective_bound, "gap": self.gap, "solve_time_s": self.solve_time_s,
            "engine": self.engine, "design": self.design_named, "area_mm2": self.area_mm2, "power_w": self.power_w,
            "compute_time_s": self.compute_time_s, "exposed_comm_s": self.exposed_comm_s,
            "comm_time_s": self.comm_time_s, "chunks": self.chunks,
            "order": {"policy": self.order_policy, "sequence": [list(x) for x in self.order]},
            "search": {"evaluations": self.evaluations, "master_solves": self.master_solves},
            "schedule": [asdict(t) for t in self.schedule],
            "model": asdict(self.model) if self.model is not None else None, "notes": list(self.notes),
            "any_order_bound_s": self.any_order_bound_s,
            **({"order_comparison": self.order_comparison} if self.order_comparison is not None else {}),
            **({"diagnostics": self.diagnostics} if self.diagnostics is not None else {}),
            **({"priority": [list(x) for x in self.priority]} if self.priority is not None else {}),
            **({"network": self.network.to_dict()} if self.network is not None else {}),
            **({"continuous_bound_s": self.continuous_bound_s} if self.continuous_bound_s is not None else {}),
            **({"duals": self.duals} if self.duals is not None else {}),
            **({"compute_order": list(self.compute_order)} if self.compute_order is not None else {}),
        }
