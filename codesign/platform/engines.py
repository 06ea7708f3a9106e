"""The communication engines and the resources each sizes: one table that every layer reads.

An engine is what runs collectives at the endpoint. It is described by
- its sized resources, each setting the capacity of one endpoint *pool*: ``memory`` (bytes/s of memory
  traffic communication may move), ``reduction`` (bytes/s it may reduce) or ``sram`` (bytes a chunk
  holds while in flight); a resource may also take cores from compute while communication runs;
- what a chunk asks of the pools in each phase: its memory bytes and, if the engine reduces at the
  endpoint, its reduce bytes (from ``costs.CollectiveDemands``, which is the same for every engine).
A pool that no resource sizes is unlimited. From this the cost module derives a chunk-phase's time
alone on the endpoint (``costs.alone_time``), the simulator its pools (``pools.Pools``), the MILP its
option terms (``milp/data.py``), and the problem files, reports, shadow prices and the Solution's JSON
their keys, labels and units. Adding an engine is one ``register(EngineKind(...))``:
``examples/in_network_engine.py`` adds one from outside the package.

The three of the ACE study (docs/paper.md):
- ``baseline``: collectives on ``comm_cores`` of the NPU's cores (taken from compute while communication
  runs) reducing at ``core_reduce_rate`` each, with a share ``comm_hbm_share`` of HBM bandwidth; per byte
  received, a reduce step touches ``hbm_per_reduce_byte`` (5) bytes of HBM and a copy step
  ``hbm_per_copy_byte`` (2): the memory-traffic model that yields the 3.5x;
- ``ace``: the Accelerator Collectives Engine: ``sram`` bytes, reduction ``alu`` bytes/s, ``dma`` bytes/s
  to HBM; it reads each input once (in the first phase) and writes each output once (in the last);
- ``ideal``: communication costs the endpoint nothing; only the network limits it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..spec.units import BYTES, BYTES_PER_S, Dimension

if TYPE_CHECKING:
    from .costs import CollectiveDemands
    from .endpoint import NPU, Engine

POOLS = ("memory", "reduction", "sram")


def _as_is(value: float, npu: NPU) -> float:
    return value


@dataclass(frozen=True)
class Resource:
    """A resource an engine sizes: its name (``y[name, o]`` in the MILP, the key in a problem's engine
    section), the pool it sets, how a problem file writes an option's value (``option_key``, with
    ``quantity`` its unit, or None for a plain number), its JSON key and labels, and
    ``capacity(value, npu)``: the pool's capacity an option of that value gives (bytes/s or bytes).
    ``takes_cores``: the value is cores taken from compute while communication runs."""

    name: str
    pool: str
    option_key: str
    quantity: Dimension | None
    json_key: str
    label: str
    description: str
    capacity: Callable[[float, NPU], float] = _as_is
    takes_cores: bool = False
    #: the range a value may take on this NPU: (lowest, highest, lowest excluded, whole numbers only)
    limits: Callable[[NPU], tuple[float | None, float | None, bool, bool]] = lambda npu: (None, None, True, False)
    #: what the highest value is, for errors ("the NPU's HBM bandwidth")
    limit_name: str = ""

    @property
    def unit(self) -> str:
        """The kind of unit shadow prices step by (``pipeline/shadow.STEPS``): B/s, bytes, cores or share."""
        if self.quantity is BYTES_PER_S:
            return "B/s"
        if self.quantity is BYTES:
            return "bytes"
        return "cores" if self.takes_cores else "share"


@dataclass(frozen=True)
class EngineKind:
    """An engine: its sized resources, the memory bytes a chunk moves in phase i
    (``memory_bytes(demands, i, engine)``), whether it reduces at the endpoint, and the other keys its
    problem-file section takes (engine coefficients)."""

    name: str
    description: str
    resources: tuple[Resource, ...]
    memory_bytes: Callable[[CollectiveDemands, int, Engine], float]
    reduces: bool = True
    extra_keys: tuple[str, ...] = ()

    def resource(self, name: str) -> Resource:
        return next(r for r in self.resources if r.name == name)

    def sizing(self, pool: str) -> Resource | None:
        """The resource that sets ``pool``, or None when the pool is unlimited."""
        return next((r for r in self.resources if r.pool == pool), None)


ENGINES: dict[str, EngineKind] = {}


def register(kind: EngineKind) -> EngineKind:
    """Add an engine kind (problem files may then say ``engine: {type: <name>}``)."""
    for r in kind.resources:
        if r.pool not in POOLS:
            raise ValueError(f"resource {r.name!r} of engine {kind.name!r} sets pool {r.pool!r}, not one of {POOLS}")
    ENGINES[kind.name] = kind
    return kind


def engine_kind(name: str) -> EngineKind:
    return ENGINES[name]


def every_resource() -> dict[str, Resource]:
    """Every resource of every registered engine, by name (names are shared across engines)."""
    out: dict[str, Resource] = {}
    for kind in ENGINES.values():
        for r in kind.resources:
            out.setdefault(r.name, r)
    return out


# ------------------------------------------------------------------ the engines of the ACE study

def _baseline_memory(dem: CollectiveDemands, i: int, engine: Engine) -> float:
    return engine.hbm_per_reduce_byte * dem.phase_reduce_bytes[i] + engine.hbm_per_copy_byte * dem.phase_copy_bytes[i]


def streaming_memory(dem: CollectiveDemands, i: int, engine: Engine) -> float:
    """An engine that keeps a chunk on chip across phases: it reads the input in the first phase and
    writes the output in the last."""
    last = len(dem.phase_dims) - 1
    return (dem.in_bytes if i == 0 else 0.0) + (dem.out_bytes if i == last else 0.0)


def _no_memory(dem: CollectiveDemands, i: int, engine: Engine) -> float:
    return 0.0


BASELINE = register(EngineKind(
    "baseline", "collectives on the NPU's own cores and a share of its HBM bandwidth",
    (Resource("comm_cores", "reduction", "cores", None, "comm_cores", "comm cores", "cores for communication",
              capacity=lambda v, npu: v * npu.core_reduce_rate, takes_cores=True,
              limits=lambda npu: (1, npu.cores - 1, False, True)),
     Resource("comm_hbm_share", "memory", "share", None, "comm_hbm_share", "comm HBM share",
              "HBM share for communication", capacity=lambda v, npu: v * npu.hbm_bandwidth,
              limits=lambda npu: (0, 1, True, False))),
    _baseline_memory, extra_keys=("hbm_per_reduce_byte", "hbm_per_copy_byte")))

ACE = register(EngineKind(
    "ace", "the Accelerator Collectives Engine: its own SRAM, reduction ALUs and DMA",
    (Resource("sram", "sram", "size", BYTES, "sram_bytes", "SRAM", "ACE SRAM"),
     Resource("alu", "reduction", "rate", BYTES_PER_S, "alu_rate_bytes_per_s", "ALU", "ACE reduction ALUs"),
     Resource("dma", "memory", "bandwidth", BYTES_PER_S, "dma_bandwidth_bytes_per_s", "DMA", "ACE DMA",
              limits=lambda npu: (0, npu.hbm_bandwidth, True, False),
              limit_name="the NPU's HBM bandwidth")),
    streaming_memory))

IDEAL = register(EngineKind("ideal", "communication costs the endpoint nothing", (), _no_memory, reduces=False))
