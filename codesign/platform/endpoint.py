"""The NPU endpoint, the communication engine beside it, and the engine's design space.

Which engines there are, what each sizes and what each asks of the endpoint is the registry of
``engines.py``; here are the values: the NPU, an engine's catalog of options per sized resource (value,
area, power; a fixed value is a catalog of one) with its budgets, and a design (one option each).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .compute import ComputeModel


@dataclass(frozen=True)
class NPU:
    """The accelerator: compute rate (FLOP/s), HBM bandwidth (bytes/s), cores, and per-core reduction
    rate (bytes/s of reduced output) when cores run a collective.

    ``compute_hbm_utilization`` is the fraction of the full HBM bandwidth that compute given as a time
    (ASTRA-sim workloads) draws at full speed: when less is left to it, it slows in proportion.
    Default values are codesign's calibration, not measurements; problems state their own.
    """

    compute_flops: float = 120e12
    hbm_bandwidth: float = 900e9
    cores: int = 16
    core_reduce_rate: float = 25e9
    compute_hbm_utilization: float = 0.5
    #: A calibrated compute model (``platform.compute``): tasks that list their kernels are timed by it
    #: instead of the roofline of ``compute_flops`` and ``hbm_bandwidth``. None: the roofline.
    compute_model: ComputeModel | None = None
    #: HBM capacity, bytes (None: not stated); what the memory a configuration needs is checked against.
    hbm_capacity: float | None = None
    #: The profile the NPU came from (``platform.profiles``), for reports; "" when given value by value.
    profile: str = ""


@dataclass(frozen=True)
class Option:
    """One choice for a sized resource: its value (unit per the resource, ``engines.Resource``), area in
    mm^2, power in W."""

    value: float
    area_mm2: float = 0.0
    power_w: float = 0.0


@dataclass(frozen=True)
class Engine:
    """A communication engine and its design space.

    ``resources`` maps each resource of the engine kind (``engines.ENGINES[kind]``) to its catalog of
    options (at least one). ``hbm_per_reduce_byte``/``hbm_per_copy_byte``: the baseline's HBM bytes
    touched per byte received to reduce and to store (docs/paper.md's memory-traffic model).
    ``endpoint_delay_s`` is paid once per message step at the endpoint (ASTRA-sim's endpoint-delay).
    ``fixed_area_mm2`` / ``fixed_power_w`` count parts of the engine that do not vary with the design.
    """

    kind: str
    resources: dict[str, tuple[Option, ...]] = field(default_factory=dict)
    area_budget_mm2: float | None = None
    power_budget_w: float | None = None
    endpoint_delay_s: float = 0.0
    hbm_per_reduce_byte: float = 5.0
    hbm_per_copy_byte: float = 2.0
    fixed_area_mm2: float = 0.0
    fixed_power_w: float = 0.0

    def options(self, resource: str) -> tuple[Option, ...]:
        return self.resources[resource]

    @property
    def sized(self) -> list[str]:
        """Resources with more than one option: where the MILP decides."""
        return [r for r, opts in self.resources.items() if len(opts) > 1]

    def min_area_mm2(self) -> float:
        return self.fixed_area_mm2 + sum(min(o.area_mm2 for o in opts) for opts in self.resources.values())

    def min_power_w(self) -> float:
        return self.fixed_power_w + sum(min(o.power_w for o in opts) for opts in self.resources.values())


@dataclass(frozen=True)
class Design:
    """One concrete choice: a value per resource (units per ``engines.Resource``)."""

    kind: str
    values: dict[str, float]

    def get(self, resource: str, default: float = 0.0) -> float:
        return self.values.get(resource, default)


def design_of(engine: Engine, choice: dict[str, int]) -> Design:
    """The Design picked by option indices ``choice[resource]``."""
    return Design(engine.kind, {r: engine.resources[r][choice[r]].value for r in engine.resources})


def design_area_mm2(engine: Engine, choice: dict[str, int]) -> float:
    """The engine's area (mm^2) at ``choice`` (names that are not the engine's, a network's, count nothing)."""
    return engine.fixed_area_mm2 + sum(engine.resources[r][i].area_mm2 for r, i in choice.items()
                                       if r in engine.resources)


def design_power_w(engine: Engine, choice: dict[str, int]) -> float:
    """The engine's power (W) at ``choice`` (names that are not the engine's count nothing)."""
    return engine.fixed_power_w + sum(engine.resources[r][i].power_w for r, i in choice.items()
                                      if r in engine.resources)
