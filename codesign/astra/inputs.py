"""ASTRA-sim 1.0 network JSON (analytical backend) and system text files, as frozen dataclasses.

Both formats are ASTRA-sim's own (docs/astra-sim-1.0.md, "Inputs"; its sample files are under
tests/data/astra/). Units are ASTRA's: latencies in ns (1 cycle = 1 ns),
link bandwidth in GB/s per link (the analytical backend reads it GiB-based, bytes/ns = GB/s x 2^30/1e9),
HBM bandwidth in GB/s read as bytes/ns, endpoint delay in cycles. Defaults are those of ASTRA-sim 1.0's
analytical front end; anything malformed raises SpecError naming the file, the line, the key and what was
expected, with the nearest valid key or value when there is one.

Values are checked with the project's validation toolkit, ``codesign.spec.readers`` (``section`` for
unknown or missing keys, ``number`` for numbers, ``choice`` for words). A value that is plainly valid (a
number in range, a known key) is taken here without loading the toolkit, whose YAML layer costs the
command line ~20 ms at start-up; anything else goes to the toolkit, which accepts it or raises its error.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
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
#: The most training passes one run simulates (our bound on work): ResNet-50's take about 10 ms each here, larger
#: workloads far more, and ASTRA-sim's own examples run 1 to 10; ``--passes 1e9`` would never end.
MAX_PASSES = 1000
#: The most dimensions a network may have: ASTRA-sim 1.0's involved-dimension vectors have 10 entries.
MAX_DIMS = 10
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
    model_shared_bus: int = 0                   # 1: the LogGP shared bus (astra.membus)
    local_reduction_delay: int = 1              # cycles per 100 bytes reduced on the shared bus
    loggp: dict[str, float] = field(default_factory=dict)   # L, o, g, G when given (C floats, as ASTRA)
    lines: tuple[tuple[str, int], ...] = ()     # (key, line) for error messages

    def line_of(self, key: str) -> int | None:
        """Line of ``key`` in the file, for messages about values that only fail against the network."""
        for k, n in self.lines:
            if k == key:
                return n
        return None


def _read(path: str | Path, what: str, confine_to: Path | None) -> str:
    return read_user_file(path, what=f"{what} file", confine_to=confine_to)


def _readers() -> Any:
    from ..spec import readers
    return readers


def _number(v: Any, file: str, key: str, *, integer: bool = False, minimum: float = 0.0,
            strict: bool = False, line: int | None = None) -> float | int:
    """readers.number for one value at ``key``: >= minimum (> with ``strict``), a whole number with
    ``integer``. Plain in-range numbers are taken directly (readers.number would return them unchanged)."""
    t = type(v)
    if (t is int or (t is float and v - v == 0)) and (v > minimum or (v == minimum and not strict)) \
            and (not integer or v == int(v)):
        return int(v) if integer else float(v)
    r = _readers()
    x = r.number(r.Ctx(file), v, key, line, lo=minimum, integer=integer, lo_open=strict)
    return int(x) if integer else x


def _choice(v: Any, file: str, key: str, options: tuple[str, ...], line: int | None = None) -> str:
    """readers.choice for one value: one of ``options``, else an error with the nearest option."""
    if v in options:
        return v
    r = _readers()
    return r.choice(r.Ctx(file), _LineMap({key: v}, {key: line}), key, "", options)


def _known_keys(m: dict[str, Any], file: str, allowed: tuple[str, ...], required: tuple[str, ...] = (),
                lines: dict[str, int] | None = None) -> None:
    """readers.section: no unknown key (with the nearest valid one), no missing required key."""
    if all(k in allowed for k in m) and all(k in m for k in required):
        return
    r = _readers()
    r.section(r.Ctx(file), _LineMap(m, lines or {}), "", allowed, required)


class _LineMap(dict):
    """A mapping that tells readers the line of each key (as the YAML reader's YMap does)."""

    def __init__(self, values: dict[str, Any], lines: dict[str, int | None]) -> None:
        super().__init__(values)
        self.key_lines = lines
        self.line = min((n for n in lines.values() if n), default=None)

    def line_of(self, key: object) -> int | None:
        return self.key_lines.get(key, self.line)   # type: ignore[call-overload]


def load_astra_network(path: str | Path, *, confine_to: Path | None = None) -> AstraNetwork:
    """Read an ASTRA-sim 1.0 analytical network JSON (``topology-name`` Hierarchical). ``confine_to``:
    refuse a file outside this folder."""
    file = str(path)
    text = _read(path, "network", confine_to)
    raw = parse_json(text, file, "network file")
    if not isinstance(raw, dict):
        raise SpecError("expected a JSON object with per-dimension lists", file=file)
    _known_keys(raw, file, _NET_KEYS)
    name = raw.get("topology-name", "Hierarchical")
    if name != "Hierarchical":
        raise SpecError(f"only the Hierarchical analytical topology exists in ASTRA-sim 1.0, got "
                        f"{shown(name, 20)}", file=file, path="topology-name")
    count = _number(raw.get("dimensions-count", 1), file, "dimensions-count", integer=True, minimum=1)
    if count > MAX_DIMS:
        raise SpecError(f"expected at most {MAX_DIMS} dimensions (ASTRA-sim 1.0's involved-dimension vectors have "
                        f"{MAX_DIMS} entries), got {count}", file=file, path="dimensions-count")
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
        topo = _choice(lists["topologies-per-dim"][i], file, f"topologies-per-dim[{i}]", TOPOLOGIES)

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
            if a.startswith(prefix) and a[len(prefix):].isascii() and a[len(prefix):].isdigit():
                base = prefix          # a direct window, e.g. direct4
        _choice(base, file, key, COLLECTIVE_ALGORITHMS, line)
    if not algos:
        raise SpecError("expected at least one algorithm, joined by '_' (one per dimension)", file=file,
                        path=key, line=line)
    return algos


def _float32(x: float) -> float:
    """ASTRA-sim 1.0 keeps L, o, g and G in C floats."""
    return struct.unpack("f", struct.pack("f", x))[0]


def _system_keys(path: str | Path, confine_to: Path | None) -> tuple[dict[str, str], dict[str, int]]:
    """A system file's ``key: value`` lines: (value by key, line by key); every key known, none twice, each
    with one value, the required ones present."""
    file = str(path)
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    for n, raw_line in enumerate(_read(path, "system", confine_to).splitlines(), start=1):
        if not raw_line.strip():
            continue
        key, colon, value = raw_line.partition(":")
        key, value = key.strip(), value.strip()
        if not colon:
            raise SpecError(f"expected 'key: value', got {shown(raw_line.strip(), 20)}", file=file, line=n)
        if key in values:
            raise SpecError(f"key given twice (first on line {lines[key]})", file=file, path=key, line=n)
        values[key] = value
        lines[key] = n
        _known_keys({key: value}, file, _SYS_KEYS, lines={key: n})
        if len(value.split()) != 1:
            raise SpecError(f"expected one value, got {shown(value, 20)}", file=file, path=key, line=n)
    _known_keys(values, file, _SYS_KEYS, _SYS_REQUIRED, lines)
    return values, lines


def load_astra_system(path: str | Path, *, confine_to: Path | None = None) -> AstraSystem:
    """Read an ASTRA-sim 1.0 system file: one ``key: value`` per line. ``confine_to``: refuse a file outside
    this folder."""
    file = str(path)
    values, lines = _system_keys(path, confine_to)

    def integer(key: str, default: int, minimum: int) -> int:
        if key not in values:
            return default
        v = values[key]
        plain = v.isascii() and v.isdigit()
        return int(_number(int(v) if plain else v, file, key, integer=True, minimum=minimum, line=lines[key]))

    def real(key: str) -> float:
        v = values[key]
        try:
            x = float(v)
        except ValueError:
            x = v               # not a number: readers.number explains
        return float(_number(x, file, key, line=lines[key]))

    def choice(key: str, default: str, options: tuple[str, ...]) -> str:
        if key not in values:
            return default
        return _choice(values[key], file, key, options, lines[key])

    def impl(key: str) -> tuple[str, ...]:
        return _implementations(values[key], file, key, lines[key])

    loggp: dict[str, float] = {}
    for k in ("L", "o", "g", "G"):
        if k in values:
            x = _float32(real(k))
            loggp[k] = x if k == "G" else float(int(x))   # L, o, g become whole cycles (Tick)
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
        local_reduction_delay=integer("local-reduction-delay", 1, 0),
        loggp=loggp,
        lines=tuple(lines.items()))
