"""Result objects: what a solve found, in SI units, ready for reports and JSON; and a design's values
as text (``design_text``), which the reports and the explorations both print."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..milp.size import ModelSize
from ..spec.units import BYTES, BYTES_PER_S, format_quantity

#: JSON names of design values, with their units.
DESIGN_KEYS = {"sram": "sram_bytes", "alu": "alu_rate_bytes_per_s", "dma": "dma_bandwidth_bytes_per_s",
               "comm_cores": "comm_cores", "comm_hbm_share": "comm_hbm_share"}

#: A sized resource's label and unit dimension (None: a plain number), as the reports print it.
DESIGN_LABELS = {"sram": ("SRAM", BYTES), "alu": ("ALU", BYTES_PER_S), "dma": ("DMA", BYTES_PER_S),
                 "comm_cores": ("comm cores", None), "comm_hbm_share": ("comm HBM share", None)}


def design_text(values: dict[str, float]) -> str:
    """'SRAM 4 MiB, ALU 128 GB/s, ...' for a design's values (units per platform.endpoint.RESOURCES)."""
    parts = []
    for r, v in values.items():
        label, dim = DESIGN_LABELS[r]
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
class Solution:
    """The answer to one problem.

    ``status``: optimal | time_limit (an incumbent, not proven optimal; see gap) | infeasible.
    ``iteration_time_s`` is the steady-state period of the chosen design under its network order;
    ``bound_s`` the solver's proven lower bound on it (minimizing iteration time only);
    ``objective``/``objective_bound`` are in the objective's unit (s, mm^2 or W).
    ``order_comparison`` (``order: optimize`` only): the period (s) of the chosen order and of LIFO's and
    FIFO's at the chosen design, in the MILP's serial network model (keys ``optimized_s``, ``lifo_s``,
    ``fifo_s``). ``diagnostics``: model statistics when the solve was asked for them (``--verbose``).
    ``replay_bound_s`` (``order: optimize``): a lower bound on the simulated period at this design, for
    any order (milp/flowshop.py: the per-dimension flow-shop relaxation). ``priority``: when the solve
    refined them, collectives as dispatch priorities for the chunk-grain replay (highest first, offsets
    as in ``order``); ``order`` stays the serial network's sequence that ``iteration_time_s`` is for.
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
    order_rounds: int
    order_stable: bool
    model: ModelSize
    chunks: int = 1
    notes: tuple[str, ...] = field(default_factory=tuple)
    order_comparison: dict[str, float] | None = None
    diagnostics: dict[str, Any] | None = None
    replay_bound_s: float | None = None
    priority: tuple[tuple[int, int], ...] | None = None

    @property
    def design_named(self) -> dict[str, float]:
        return {DESIGN_KEYS[k]: v for k, v in self.design.items()}

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``codesign solve --json``."""
        return {
            "problem": self.problem, "status": self.status, "objective_kind": self.objective_kind,
            "iteration_time_s": self.iteration_time_s, "bound_s": self.bound_s, "objective": self.objective,
            "objective_bound": self.objective_bound, "gap": self.gap, "solve_time_s": self.solve_time_s,
            "engine": self.engine, "design": self.design_named, "area_mm2": self.area_mm2, "power_w": self.power_w,
            "compute_time_s": self.compute_time_s, "exposed_comm_s": self.exposed_comm_s,
            "comm_time_s": self.comm_time_s, "chunks": self.chunks,
            "order": {"policy": self.order_policy, "rounds": self.order_rounds, "stable": self.order_stable,
                      "sequence": [list(x) for x in self.order]},
            "schedule": [asdict(t) for t in self.schedule],
            "model": asdict(self.model), "notes": list(self.notes),
            **({"order_comparison": self.order_comparison} if self.order_comparison is not None else {}),
            **({"diagnostics": self.diagnostics} if self.diagnostics is not None else {}),
            **({"replay_bound_s": self.replay_bound_s} if self.replay_bound_s is not None else {}),
            **({"priority": [list(x) for x in self.priority]} if self.priority is not None else {}),
        }
