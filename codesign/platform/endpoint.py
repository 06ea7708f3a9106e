"""The NPU endpoint and the communication engine that runs collectives beside it.

Three engines, as in the ACE study (docs/paper.md):
- ``baseline``: collectives run on ``comm_cores`` of the NPU's cores and use a reserved share
  ``comm_hbm_share`` of its HBM bandwidth; compute keeps the rest. Per byte sent, a reduce-scatter
  step touches ``hbm_per_reduce_byte`` (5) bytes of HBM and an all-gather step ``hbm_per_copy_byte``
  (2): the memory-traffic model of docs/paper.md that yields the 3.5x.
- ``ace``: the Accelerator Collectives Engine: ``sram`` bytes, reduction ``alu`` rate (bytes/s) and
  ``dma`` bandwidth (bytes/s) to HBM. It reads each input once and writes each output once and uses
  no NPU cores; its DMA bandwidth is drawn from HBM and so is reserved away from compute.
- ``ideal``: communication costs the endpoint nothing; only the network limits it.

Sized resources are catalogs of options (value, area, power); a fixed value is a catalog of one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

ENGINE_KINDS = ("baseline", "ace", "ideal")
#: The endpoint pool each sized resource sets and nothing else (``pools.Pools``): memory traffic,
#: reduction, or SRAM. ``comm_cores`` is absent: the cores it gives communication are taken from compute.
POOL_OF = {"sram": "sram", "alu": "reduction", "dma": "memory", "comm_hbm_share": "memory"}
#: The sized resources of each engine and the unit of their option values.
RESOURCES = {"baseline": {"comm_cores": "cores", "comm_hbm_share": "fraction of HBM bandwidth"},
             "ace": {"sram": "bytes", "alu": "bytes/s", "dma": "bytes/s"},
             "ideal": {}}


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


@dataclass(frozen=True)
class Option:
    """One choice for a sized resource: its value (unit per RESOURCES), area in mm^2, power in W."""

    value: float
    area_mm2: float = 0.0
    power_w: float = 0.0


@dataclass(frozen=True)
class Engine:
    """A communication engine and its design space.

    ``resources`` maps each resource of RESOURCES[kind] to its catalog of options (at least one).
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
    """One concrete choice: a value per resource (units per RESOURCES)."""

    kind: str
    values: dict[str, float]

    def get(self, resource: str, default: float = 0.0) -> float:
        return self.values.get(resource, default)


def design_of(engine: Engine, choice: dict[str, int]) -> Design:
    """The Design picked by option indices ``choice[resource]``."""
    return Design(engine.kind, {r: engine.resources[r][choice[r]].value for r in engine.resources})


def design_area_mm2(engine: Engine, choice: dict[str, int]) -> float:
    return engine.fixed_area_mm2 + sum(engine.resources[r][i].area_mm2 for r, i in choice.items())


def design_power_w(engine: Engine, choice: dict[str, int]) -> float:
    return engine.fixed_power_w + sum(engine.resources[r][i].power_w for r, i in choice.items())
