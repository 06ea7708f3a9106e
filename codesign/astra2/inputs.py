"""ASTRA-sim 2.x's input files, read as its parsers read them and checked as a user needs.

- The network YAML of the analytical backends (astra-network-analytical ``NetworkParser``): exactly the
  keys ``topology`` (``Ring``, ``FullyConnected`` or ``Switch`` per dimension), ``npus_count`` (> 1 each),
  ``bandwidth`` (GB/s per unidirectional link, 1 GB = 2^30 B) and ``latency`` (ns per link), one value per
  dimension. A 1.0-style JSON network (``topology-name``, ``units-count``, ...) is named as such, with the
  line that fixes it.
- The system JSON (``Sys::initialize_sys``, ``CollectiveImplLookup``). Keys 2.x does not read are a warning,
  as 2.x ignores them.
- The communicator-group JSON (``{"<id>": [ranks]}``) and the remote-memory JSON.

Anything malformed raises SpecError naming the file, the line, the key and what was expected.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputWarning, SpecError, shown
from ..spec.files import parse_json, read_user_file
from ..spec.yamlfile import load_yaml
from .memory import RemoteMemory

TOPOLOGIES = ("Ring", "FullyConnected", "Switch")
NET_KEYS = ("topology", "npus_count", "bandwidth", "latency")
#: The 1.0 analytical network keys: a file with them is a 1.0 network.
V1_NET_KEYS = ("topology-name", "topologies-per-dim", "units-count", "links-count", "link-bandwidth",
               "link-latency", "dimensions-count")
ALGORITHMS = ("ring", "direct", "halvingDoubling", "doubleBinaryTree", "oneRing", "oneDirect",
              "oneHalvingDoubling")
COLLECTIVES = {"all-reduce-implementation": "ALL_REDUCE", "all-gather-implementation": "ALL_GATHER",
               "reduce-scatter-implementation": "REDUCE_SCATTER", "all-to-all-implementation": "ALL_TO_ALL"}
#: Every key ``Sys::initialize_sys`` and ``CollectiveImplLookup`` read; the others 2.x ignores.
SYS_KEYS = ("scheduling-policy", "collective-optimization", "local-reduction-delay",
            "active-chunks-per-dimension", "L", "o", "g", "G", "endpoint-delay", "model-shared-bus",
            "preferred-dataset-splits", "peak-perf", "local-mem-bw", "roofline-enabled", "trace-enabled",
            "replay-only", "track-local-mem", "local-mem-trace-filename", *COLLECTIVES,
            *(k + "-custom" for k in COLLECTIVES))
#: Keys many 2.x sample files carry that 2.x itself never reads (no warning for them: 2.x says nothing).
QUIET_KEYS = ("boost-mode", "intra-dimension-scheduling", "inter-dimension-scheduling")
#: The most NPUs the mode simulates (our bound on work: every NPU is simulated, as in 2.x).
MAX_NPUS = 4096


@dataclass(frozen=True)
class Network:
    """The analytical network: per dimension its topology, NPUs, GB/s per link and ns per link."""

    topologies: tuple[str, ...]
    npus: tuple[int, ...]
    bandwidth_gbps: tuple[float, ...]
    latency_ns: tuple[float, ...]
    path: str = ""

    @property
    def total(self) -> int:
        return math.prod(self.npus)

    def bytes_per_ns(self, dim: int) -> float:
        """``bw_GBps_to_Bpns``: GB/s with 1 GB = 2^30 B, over 1e9 ns."""
        return self.bandwidth_gbps[dim] * (1 << 30) / 1_000_000_000


@dataclass(frozen=True)
class System:
    """The system JSON's settings that timing depends on (cycles = ns, bytes)."""

    scheduling_policy: str
    endpoint_delay: int
    active_chunks: int
    splits: int
    implementations: dict[str, tuple[str, ...]]
    collective_optimization: str
    local_mem_bw: float                # GB/s; 0 when absent (no local processing: see docs/astra-sim-2.md)
    roofline: bool
    peak_perf_tflops: float
    path: str = ""
    #: per collective, the algorithm of a communicator group smaller than the system: 2.x runs such a group as
    #: one logical ring (``CommunicatorGroup::get_collective_plan``) with the list's only algorithm, or ring when
    #: the list names more than one
    group_implementations: dict[str, str] = field(default_factory=dict)


def _line(text: str, key: str) -> int | None:
    """The line where ``"key"`` first appears in a JSON text (for messages)."""
    i = text.find(f'"{key}"')
    return text.count("\n", 0, i) + 1 if i >= 0 else None


def _json(path: str | Path, what: str, confine_to: Path | None) -> tuple[Any, str]:
    text = read_user_file(path, what=what, confine_to=confine_to)
    return parse_json(text, str(path), what), text


def load_network(path: str | Path, *, confine_to: Path | None = None) -> Network:
    """Read an analytical network YAML (``NetworkParser::parse_network_config_yml``)."""
    file = str(path)
    head = read_user_file(path, what="ASTRA-sim 2.x network YAML", confine_to=confine_to).lstrip()
    if head.startswith("{"):
        doc, text = _json(path, "network file", confine_to)
        if isinstance(doc, dict) and any(k in doc for k in V1_NET_KEYS):
            raise SpecError("this is an ASTRA-sim 1.0 analytical network (JSON with topology-name/units-count); "
                            "2.x reads a YAML network: give it as --astra-network (1.0 mode), or write the YAML "
                            "'topology: [Ring]', 'npus_count: [N]', 'bandwidth: [GB/s]', 'latency: [ns]'",
                            file=file, line=1)
    doc = load_yaml(path, what="ASTRA-sim 2.x network YAML", confine_to=confine_to)
    if not isinstance(doc, dict):
        raise SpecError("expected a mapping with topology, npus_count, bandwidth and latency", file=file)
    for k in doc:
        if k not in NET_KEYS:
            raise SpecError(f"unknown key; expected only {', '.join(NET_KEYS)}", file=file, path=str(k),
                            line=doc.line_of(k))
    lists = {}
    for k in NET_KEYS:
        if k not in doc:
            raise SpecError("missing key; expected a list with one value per dimension", file=file, path=k)
        v = doc[k]
        if not isinstance(v, list) or not v:
            raise SpecError(f"expected a non-empty list [..] with one value per dimension, got {shown(v, 20)}",
                            file=file, path=k, line=doc.line_of(k))
        lists[k] = v
    n = len(lists["topology"])
    for k in NET_KEYS[1:]:
        if len(lists[k]) != n:
            raise SpecError(f"has {len(lists[k])} value(s) but topology has {n}; expected one per dimension",
                            file=file, path=k, line=doc.line_of(k))
    topo = []
    for i, t in enumerate(lists["topology"]):
        if t not in TOPOLOGIES:
            raise SpecError(f"expected one of {', '.join(TOPOLOGIES)}, got {shown(t, 20)}", file=file,
                            path=f"topology[{i}]", line=doc.line_of("topology"))
        topo.append(t)

    def num(k: str, i: int, *, integer: bool = False, lo: float = 0.0, strict: bool = False) -> Any:
        v = lists[k][i]
        ok = isinstance(v, int) if integer else isinstance(v, (int, float))
        if isinstance(v, bool) or not ok or not math.isfinite(v) or v < lo or (strict and v == lo):
            want = ("a whole number" if integer else "a number") + (f" > {lo:g}" if strict else f" >= {lo:g}")
            raise SpecError(f"expected {want}, got {shown(v, 20)}", file=file, path=f"{k}[{i}]",
                            line=doc.line_of(k))
        return v
    npus = tuple(num("npus_count", i, integer=True, lo=1, strict=True) for i in range(n))
    if math.prod(npus) > MAX_NPUS:
        raise SpecError(f"{math.prod(npus):,} NPUs; expected at most {MAX_NPUS:,} (every NPU is simulated)",
                        file=file, path="npus_count", line=doc.line_of("npus_count"))
    return Network(tuple(topo), npus, tuple(float(num("bandwidth", i, strict=True)) for i in range(n)),
                   tuple(float(num("latency", i)) for i in range(n)), file)


def load_system(path: str | Path, dims: int, *, confine_to: Path | None = None) -> System:
    """Read a system JSON as ``Sys::initialize_sys`` does; ``dims``: the network's dimensions."""
    file = str(path)
    doc, text = _json(path, "system JSON file", confine_to)
    if not isinstance(doc, dict):
        raise SpecError("expected a JSON object of system settings", file=file)

    def where(k: str) -> dict[str, Any]:
        return {"file": file, "path": k, "line": _line(text, k)}
    for k in doc:
        if k not in SYS_KEYS and k not in QUIET_KEYS:
            warnings.warn(f"{file}:{_line(text, k)}: {k}: ASTRA-sim 2.x does not read this key; ignored",
                          InputWarning, stacklevel=2)

    def choice(k: str, options: tuple[str, ...], default: str | None) -> str:
        v = doc.get(k, default)
        if v is None:
            raise SpecError(f"missing key; expected one of {', '.join(options)}", **where(k))
        if v not in options:
            raise SpecError(f"expected one of {', '.join(options)}, got {shown(v, 20)}", **where(k))
        return str(v)

    def integer(k: str, default: int | None, lo: int) -> int:
        v = doc.get(k, default)
        if v is None:
            raise SpecError(f"missing key; expected a whole number >= {lo}", **where(k))
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise SpecError(f"expected a whole number >= {lo}, got {shown(v, 20)}", **where(k))
        return v

    def number(k: str) -> float:
        v = doc.get(k, 0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise SpecError(f"expected a number >= 0, got {shown(v, 20)}", **where(k))
        return float(v)
    impls: dict[str, tuple[str, ...]] = {}
    group_impls: dict[str, str] = {}
    for k, ctype in COLLECTIVES.items():
        if k + "-custom" in doc:
            raise SpecError("custom collectives (a Chakra trace per collective) are not simulated by codesign yet; "
                            "use a native implementation", **where(k + "-custom"))
        v = doc.get(k)
        if v is None:
            continue
        if not isinstance(v, list) or not all(isinstance(a, str) for a in v):
            raise SpecError(f"expected a list of algorithm names, one per dimension, such as [\"ring\"], got "
                            f"{shown(v, 30)}", **where(k))
        for a in v:
            base = a[:6] if a.startswith("direct") and a[6:].isdigit() else \
                a[:9] if a.startswith("oneDirect") and a[9:].isdigit() else a
            if base not in ALGORITHMS:
                raise SpecError(f"expected algorithms from {', '.join(ALGORITHMS)}, got {shown(a, 20)}", **where(k))
        one = next((i for i, a in enumerate(v) if a.startswith("one")), None)
        if len(v) > dims:      # GeneralComplexTopology asserts it
            raise SpecError(f"{len(v)} algorithms for a {dims}-dimensional network (2.x asserts); expected one per "
                            "dimension", **where(k))
        if len(v) < dims and one is None:
            raise SpecError(f"{len(v)} algorithm(s) for a {dims}-dimensional network; expected one per dimension, "
                            "or a oneRing / oneDirect / oneHalvingDoubling that spans the rest", **where(k))
        impls[ctype] = tuple(v if one is None else v[:one + 1])
        group_impls[ctype] = v[0] if len(v) == 1 else "ring"
    if integer("model-shared-bus", 0, 0):
        raise SpecError("the LogGP shared bus (model-shared-bus: 1) is not simulated by codesign's 2.x mode yet; "
                        "expected 0", **where("model-shared-bus"))
    rep = doc.get("replay-only", 0)
    if rep not in (0, False):
        raise SpecError("replay-only is not simulated by codesign's 2.x mode yet; expected 0", **where("replay-only"))
    return System(
        scheduling_policy=choice("scheduling-policy", ("LIFO", "FIFO"), None),
        endpoint_delay=integer("endpoint-delay", 10, 0),
        active_chunks=integer("active-chunks-per-dimension", 1, 1),
        splits=integer("preferred-dataset-splits", None, 1),
        implementations=impls,
        collective_optimization=choice("collective-optimization", ("baseline", "localBWAware"), None),
        local_mem_bw=number("local-mem-bw"), roofline=doc.get("roofline-enabled", 0) not in (0, False),
        peak_perf_tflops=number("peak-perf"), path=file, group_implementations=group_impls)


def load_comm_groups(path: str | Path | None, npus: int, *,
                     confine_to: Path | None = None) -> dict[str, tuple[int, ...]]:
    """The communicator-group JSON ``{"<id>": [ranks]}`` (``Workload::initialize_comm_groups``); {} without one."""
    if path is None:
        return {}
    file = str(path)
    doc, text = _json(path, "communicator-group JSON file", confine_to)
    if not isinstance(doc, dict):
        raise SpecError('expected a JSON object {"<group id>": [ranks, ...]}', file=file)
    out = {}
    for k, v in doc.items():
        w = {"file": file, "path": k, "line": _line(text, k)}
        if not k.isdigit():
            raise SpecError("expected a whole-number group id (2.x reads it with stoi)", **w)
        if int(k) == 0:
            raise SpecError("group id 0 is the whole system in 2.x (a group file's 0 fails its assertion); expected "
                            "an id >= 1", **w)
        if not isinstance(v, list) or not v or not all(isinstance(r, int) and not isinstance(r, bool)
                                                       and 0 <= r < npus for r in v):
            raise SpecError(f"expected a non-empty list of ranks from 0 to {npus - 1}, got {shown(v, 30)}", **w)
        if len(set(v)) != len(v):
            raise SpecError("a rank is listed twice", **w)
        out[str(int(k))] = tuple(v)
    return out


MEMORY_TYPES = ("NO_MEMORY_EXPANSION", "PER_NPU_MEMORY_EXPANSION", "PER_NODE_MEMORY_EXPANSION", "MEMORY_POOL")


def load_remote_memory(path: str | Path | None, *, confine_to: Path | None = None) -> RemoteMemory:
    """The remote-memory JSON as astra-memory-analytical reads it (its numbers are whole: 2.x stores them in
    unsigned 64-bit integers, so a fraction is cut off); without a file, no memory expansion."""
    if path is None:
        return RemoteMemory()
    file = str(path)
    doc, text = _json(path, "remote-memory JSON file", confine_to)
    if not isinstance(doc, dict):
        raise SpecError('expected a JSON object such as {"memory-type": "NO_MEMORY_EXPANSION"}', file=file)

    def where(k: str) -> dict[str, Any]:
        return {"file": file, "path": k, "line": _line(text, k)}
    mt = doc.get("memory-type")
    if mt not in MEMORY_TYPES:
        raise SpecError(f"expected one of {', '.join(MEMORY_TYPES)}, got {shown(mt, 30)}", **where("memory-type"))
    if mt == "NO_MEMORY_EXPANSION":
        return RemoteMemory(path=file)

    def whole(k: str, lo: int) -> int:
        v = doc.get(k, 0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or int(v) < lo:
            raise SpecError(f"expected a number >= {lo} ({mt} reads it as a whole number), got {shown(v, 20)}",
                            **where(k))
        return int(v)
    nodes = per = 0
    if mt == "PER_NODE_MEMORY_EXPANSION":
        nodes, per = whole("num-nodes", 1), whole("num-npus-per-node", 1)
    return RemoteMemory(str(mt), whole("remote-mem-latency", 0), whole("remote-mem-bw", 1), nodes, per, file)
