"""ASTRA-sim 1.0 network JSON (analytical backend) and system text files, as frozen dataclasses.

Both formats are ASTRA-sim's own (docs/astra-sim-1.0.md, "Inputs"; its sample files are under
tests/data/astra/). Units are ASTRA's: latencies in ns (1 cycle = 1 ns),
link bandwidth in GB/s per link (the analytical backend reads it GiB-based, bytes/ns = GB/s x 2^30/1e9),
HBM bandwidth in GB/s read as bytes/ns, endpoint delay in cycles. Defaults are those of ASTRA-sim 1.0's
analytical front end; anything malformed raises SpecError naming the file, the key and what was expected.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError, shown
from ..spec.files import parse_json, read_user_file

TOPOLOGIES = ("Ring", "FullyConnected", "Switch")
COLLECTIVE_ALGORITHMS = ("ring", "direct", "halvingDoubling", "doubleBinaryTree",
                         "oneRing", "oneDirect", "oneHalvingDoubling")

# key -> (required, default when absent); per-dimension lists must have dimensions-count entries
_NET_LISTS = {"topologies-per-dim": (True, None), "units-count": (True, None),
              "links-count": (True, None), "link-latency": (True, None),
              "link-bandwidth": (True, None), "nic-latency": (False, 0.0),
              "router-latency": (False, 0.0), "hbm-latency": (False, 0.0),
              "hbm-bandwidth": (False, 1.0), "hbm-scale": (False, 0.0)}
_NET_KEYS = ("topology-name", "dimensions-count", "dimension-type", *_NET_LISTS)


@dataclass(frozen=True)
class AstraDim:
    """One network dimension of the analytical backend (ns, GB/s, NPU and link counts)."""

    topology: str               # Ring, FullyConnected or Switch
    npus: int                   # units-count
    links: int                  # links-count per NPU
    link_latency_ns: float
    link_bandwidth_gbps: float  # per link, GB/s (read GiB-based by ASTRA)
    nic_latency_ns: float = 0.0
    router_latency_ns: float = 0.0
    hbm_latency_ns: float = 0.0
    hbm_bandwidth: float = 1.0  # bytes/ns (ASTRA reads the GB/s figure as bytes/ns)
    hbm_scale: float = 0.0


@dataclass(frozen=True)
class AstraNetwork:
    """A parsed ASTRA-sim 1.0 analytical network file."""

    path: str
    dims: tuple[AstraDim, ...]

    @property
    def npus(self) -> int:
        """Total NPU count, the product of units-count."""
        n = 1
        for d in self.dims:
            n *= d.npus
        return n


@dataclass(frozen=True)
class AstraSystem:
    """A parsed ASTRA-sim 1.0 system file (cycles of 1 ns; implementations one entry per dimension)."""

    path: str
    scheduling_policy: str                      # LIFO or FIFO
    endpoint_delay: int                         # cycles per message endpoint visit
    active_chunks_per_dimension: int
    preferred_dataset_splits: int
    collective_optimization: str                # baseline or localBWAware
    all_reduce_implementation: tuple[str, ...]
    reduce_scatter_implementation: tuple[str, ...]
    all_gather_implementation: tuple[str, ...]
    all_to_all_implementation: tuple[str, ...]
    boost_mode: int = 0
    intra_dimension_scheduling: str = "FIFO"
    inter_dimension_scheduling: str = "baseline"
    model_shared_bus: int = 0
    lines: tuple[tuple[str, int], ...] = ()     # (key, line) for error messages

    def line_of(self, key: str) -> int | None:
        """Line of ``key`` in the file, for messages about values that only fail against the network."""
        for k, n in self.lines:
            if k == key:
                return n
        return None


def _nearest(word: str, choices: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _read(path: str | Path, what: str, confine_to: Path | None) -> str:
    return read_user_file(path, what=f"{what} file", confine_to=confine_to)


def _number(v: Any, file: str, key: str, *, integer: bool = False, minimum: float = 0.0,
            strict: bool = False) -> float | int:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool)
    if ok and integer:
        ok = float(v).is_integer()
    if not ok:
        raise SpecError(f"expected {'a whole number' if integer else 'a number'}, got {shown(v, 20)}",
                        file=file, path=key)
    if v < minimum or (strict and v == minimum):
        raise SpecError(f"expected a value {'>' if strict else '>='} {minimum:g}, got {shown(v, 20)}",
                        file=file, path=key)
    return int(v) if integer else float(v)


def load_astra_network(path: str | Path, *, confine_to: Path | None = None) -> AstraNetwork:
    """Read an ASTRA-sim 1.0 analytical network JSON (``topology-name`` Hierarchical). ``confine_to``:
    refuse a file outside this folder."""
    file = str(path)
    text = _read(path, "network", confine_to)
    raw = parse_json(text, file, "network file")
    if not isinstance(raw, dict):
        raise SpecError("expected a JSON object with per-dimension lists", file=file)
    for key in raw:
        if key not in _NET_KEYS:
            raise SpecError(f"unknown key{_nearest(key, _NET_KEYS)}; expected one of "
                            f"{', '.join(_NET_KEYS)}", file=file, path=key)
    name = raw.get("topology-name", "Hierarchical")
    if name != "Hierarchical":
        raise SpecError(f"only the Hierarchical analytical topology exists in ASTRA-sim 1.0, got "
                        f"{shown(name, 20)}", file=file, path="topology-name")
    count = _number(raw.get("dimensions-count", 1), file, "dimensions-count", integer=True, minimum=1)
    lists: dict[str, list[Any]] = {}
    for key, (required, default) in _NET_LISTS.items():
        if key not in raw:
            if required:
                raise SpecError(f"missing key; expected a list of {count} value(s), one per "
                                "dimension", file=file, path=key)
            lists[key] = [default] * count
            continue
        v = raw[key]
        if not isinstance(v, list):
            raise SpecError(f"expected a list with one value per dimension, got {shown(v, 20)}",
                            file=file, path=key)
        if len(v) != count:
            told = "" if "dimensions-count" in raw else " (the default when it is absent)"
            raise SpecError(f"has {len(v)} value(s) but dimensions-count is {count}{told}; expected "
                            "one value per dimension", file=file, path=key)
        lists[key] = v
    dims = []
    for i in range(count):
        topo = lists["topologies-per-dim"][i]
        if topo not in TOPOLOGIES:
            near = _nearest(topo, TOPOLOGIES) if isinstance(topo, str) else ""
            raise SpecError(f"unknown topology {shown(topo, 20)}{near}; expected "
                            f"one of {', '.join(TOPOLOGIES)}", file=file, path=f"topologies-per-dim[{i}]")

        def num(key: str, **kw: Any) -> Any:
            return _number(lists[key][i], file, f"{key}[{i}]", **kw)  # noqa: B023 - called at once
        dims.append(AstraDim(
            topology=topo, npus=num("units-count", integer=True, minimum=1),
            links=num("links-count", integer=True, minimum=1),
            link_latency_ns=num("link-latency"), link_bandwidth_gbps=num("link-bandwidth", strict=True),
            nic_latency_ns=num("nic-latency"), router_latency_ns=num("router-latency"),
            hbm_latency_ns=num("hbm-latency"), hbm_bandwidth=num("hbm-bandwidth", strict=True),
            hbm_scale=num("hbm-scale")))
    return AstraNetwork(path=file, dims=tuple(dims))


_SYS_KEYS = ("scheduling-policy", "endpoint-delay", "active-chunks-per-dimension",
             "preferred-dataset-splits", "boost-mode", "all-reduce-implementation",
             "all-gather-implementation", "reduce-scatter-implementation",
             "all-to-all-implementation", "collective-optimization", "intra-dimension-scheduling",
             "inter-dimension-scheduling", "local-reduction-delay", "model-shared-bus", "L", "o", "g",
             "G", "seprate-log", "gap-denominator")
_SYS_REQUIRED = ("scheduling-policy", "preferred-dataset-splits", "all-reduce-implementation",
                 "all-gather-implementation", "reduce-scatter-implementation",
                 "all-to-all-implementation", "collective-optimization")


def _implementations(value: str, file: str, key: str, line: int) -> tuple[str, ...]:
    algos = tuple(a for a in value.split("_") if a)
    for a in algos:
        base = a
        for prefix in ("oneDirect", "direct"):
            if a.startswith(prefix) and a[len(prefix):].isdigit():
                base = prefix          # a direct window, e.g. direct4
        if base not in COLLECTIVE_ALGORITHMS:
            raise SpecError(f"unknown collective algorithm {shown(a, 20)}{_nearest(a, COLLECTIVE_ALGORITHMS)}; "
                            f"expected per-dimension algorithms joined by '_' from "
                            f"{', '.join(COLLECTIVE_ALGORITHMS)}", file=file, path=key, line=line)
    if not algos:
        raise SpecError("expected at least one algorithm", file=file, path=key, line=line)
    return algos


def load_astra_system(path: str | Path, *, confine_to: Path | None = None) -> AstraSystem:
    """Read an ASTRA-sim 1.0 system file: one ``key: value`` per line. ``confine_to``: refuse a file outside
    this folder."""
    file = str(path)
    values: dict[str, tuple[str, int]] = {}
    for n, raw_line in enumerate(_read(path, "system", confine_to).splitlines(), start=1):
        if not raw_line.strip():
            continue
        key, colon, value = raw_line.partition(":")
        key, value = key.strip(), value.strip()
        if not colon:
            raise SpecError(f"expected 'key: value', got {shown(raw_line.strip(), 20)}", file=file, line=n)
        if key not in _SYS_KEYS:
            raise SpecError(f"unknown key {shown(key, 20)}{_nearest(key, _SYS_KEYS)}", file=file, path=key,
                            line=n)
        if key in values:
            raise SpecError(f"key given twice (first on line {values[key][1]})", file=file, path=key,
                            line=n)
        if len(value.split()) != 1:
            raise SpecError(f"expected one value, got {shown(value, 20)}", file=file, path=key, line=n)
        values[key] = (value, n)
    for key in _SYS_REQUIRED:
        if key not in values:
            raise SpecError("missing key (ASTRA-sim 1.0 has no default for it)", file=file, path=key)

    def integer(key: str, default: int, minimum: int) -> int:
        if key not in values:
            return default
        v, n = values[key]
        try:
            x = int(v)
        except ValueError:
            raise SpecError(f"expected a whole number, got {shown(v, 20)}", file=file, path=key, line=n) from None
        if x < minimum:
            raise SpecError(f"expected a whole number >= {minimum}, got {x}", file=file, path=key,
                            line=n)
        return x

    def choice(key: str, default: str, options: tuple[str, ...]) -> str:
        if key not in values:
            return default
        v, n = values[key]
        if v not in options:
            raise SpecError(f"expected one of {', '.join(options)}, got {shown(v, 20)}{_nearest(v, options)}",
                            file=file, path=key, line=n)
        return v

    def impl(key: str) -> tuple[str, ...]:
        v, n = values[key]
        return _implementations(v, file, key, n)

    return AstraSystem(
        path=file,
        scheduling_policy=choice("scheduling-policy", "LIFO", ("LIFO", "FIFO")),
        endpoint_delay=integer("endpoint-delay", 10, 0),
        active_chunks_per_dimension=integer("active-chunks-per-dimension", 1, 1),
        preferred_dataset_splits=integer("preferred-dataset-splits", 1, 1),
        collective_optimization=choice("collective-optimization", "baseline",
                                       ("baseline", "localBWAware")),
        all_reduce_implementation=impl("all-reduce-implementation"),
        reduce_scatter_implementation=impl("reduce-scatter-implementation"),
        all_gather_implementation=impl("all-gather-implementation"),
        all_to_all_implementation=impl("all-to-all-implementation"),
        boost_mode=integer("boost-mode", 0, 0),
        intra_dimension_scheduling=choice("intra-dimension-scheduling", "FIFO",
                                          ("FIFO", "RG", "SCF", "smallestFirst",
                                           "lessRemainingPhaseFirst")),
        inter_dimension_scheduling=choice("inter-dimension-scheduling", "baseline",
                                          ("baseline", "ascending", "themis", "offlineGreedy",
                                           "themisFlex", "offlineGreedyFlex", "roundRobin")),
        model_shared_bus=integer("model-shared-bus", 0, 0),
        lines=tuple((k, n) for k, (_, n) in values.items()))
