"""YAML problem file -> validated Problem. Every error names the file, the key path and what was expected.

The file's sections: ``workload``, ``topology``, ``npu``, ``engine``, ``objective``, ``schedule``,
``solver`` (README: "Problem files" documents every key). Values with units are strings such as
"25 GB/s", "4 MiB", "500 ns" (see ``spec.units``); relative paths are relative to the problem file. The
readers of keys and values are ``spec.readers``; this module is the problem file's sections.
"""
from __future__ import annotations

import difflib
import inspect
import typing
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import SpecError, shown
from ..platform.compute import ComputeModel, price
from ..platform.endpoint import NPU, Engine, Option
from ..platform.engines import ENGINES, every_resource
from ..platform.network import Network, grid, grid_steps
from ..platform.topology import ALGORITHMS, KINDS, Dim, Topology
from ..spec import units as U
from ..spec.files import UnreadableFile, confined, read_user_bytes
from ..spec.readers import (
    Ctx,
    boolean,
    bounded,
    choice,
    items,
    join_path,
    kind_of,
    line_of,
    number,
    quantity,
    section,
    text,
    value_with_unit,
)
from ..spec.yamlfile import YMap, load_yaml
from ..workload.astra import astra_to_workload, parse_astra_workload
from ..workload.gnmt import gnmt
from ..workload.llm import llm
from ..workload.model import COLLECTIVES, PARALLELISMS, Comm, Compute, Layer, Workload
from . import platforms
from .model import OBJECTIVES, ORDERS, Objective, Problem, ScheduleSpec, SolverSpec

# Per engine resource: the key of an option's value, its unit dimension (None: a plain number), its bounds.
#: Models built from their architecture in code (``workload: {builder: NAME, args: {...}}``). A builder with
#: a keyword argument ``topology_sizes`` is given the problem's dimensions (their NPU counts) by the loader,
#: not by the file: the LLM builder maps its parallel degrees onto them.
BUILDERS: dict[str, Callable[..., Workload]] = {"gnmt": gnmt, "llm": llm}
#: What the loader passes to a builder itself.
BUILDER_INJECTED = ("topology_sizes",)



# ---------------------------------------------------------------- workload

def _compute(ctx: Ctx, v: Any, path: str, line: int | None) -> Compute:
    if v is None:
        return Compute()
    if isinstance(v, dict):
        section(ctx, v, path, ("time", "flops", "bytes"))
        if "time" in v and ("flops" in v or "bytes" in v):
            raise ctx.error(path, "give either time, or flops and bytes, not both", v.line)
        if "time" in v:
            return Compute(time_s=quantity(ctx, v, "time", path, U.SECONDS, allow_zero=True))
        return Compute(flops=quantity(ctx, v, "flops", path, U.FLOP, allow_zero=True, default=0.0),
                       hbm_bytes=quantity(ctx, v, "bytes", path, U.BYTES, allow_zero=True, default=0.0))
    try:
        return Compute(time_s=value_with_unit(ctx, v, U.SECONDS, path, line, path.rsplit(".", 1)[-1],
                                              allow_zero=True))
    except SpecError as e:
        raise ctx.error(path, e.detail + " (or a mapping with flops and bytes)", line) from None


def _timed(collective: str) -> bool:
    """Whether the platform times ``collective`` (``platform/collectives.phases`` knows it): a collective the
    workload model names (``p2p``) may wait for its phase there."""
    from ..platform.collectives import phases
    try:
        phases(Comm(collective, 1.0), Topology((Dim("probe", "ring", 2, 1, 1.0),)))
    except ValueError:
        return False
    return True


#: The collectives a problem file may name: those the platform times.
TIMED_COLLECTIVES = tuple(c for c in COLLECTIVES if _timed(c))


def _comm(ctx: Ctx, v: Any, path: str, line: int | None, ndims: int) -> Comm | None:
    if v is None:
        return None
    m = section(ctx, v, path, ("collective", "bytes", "dims"), ("collective", "bytes"))
    coll = choice(ctx, m, "collective", path, TIMED_COLLECTIVES)
    nbytes = quantity(ctx, m, "bytes", path, U.BYTES)
    dims = None
    if "dims" in m and m["dims"] != "all":
        dl = m["dims"]
        if not isinstance(dl, list) or not dl:
            raise ctx.error(join_path(path, "dims"), f"expected 'all' or a non-empty list of dimension indices, "
                            f"got {kind_of(dl)}", line_of(m, "dims"))
        dims = tuple(int(number(ctx, d, f"{join_path(path, 'dims')}[{i}]", line_of(dl, i), lo=0, hi=ndims - 1,
                                integer=True)) for i, d in enumerate(dl))
        if len(set(dims)) != len(dims):
            raise ctx.error(join_path(path, "dims"), "a dimension is listed twice", line_of(m, "dims"))
    return Comm(coll, nbytes, dims)


def _built(ctx: Ctx, m: YMap, sizes: tuple[int, ...]) -> Workload:
    """``workload: {builder: NAME, args: {...}}``: a model built from its architecture in code (``sizes``: the
    topology's dimensions, for a builder that takes ``topology_sizes``)."""
    for k in ("astra", "layers", "parallelism", "last_bottom_layer", "clock"):
        if k in m:
            raise ctx.error(join_path("workload", k), "not allowed with 'builder' (the builder sets it)", line_of(m, k))
    name = choice(ctx, m, "builder", "workload", tuple(BUILDERS))
    fn = BUILDERS[name]
    args = m.get("args", {}) or {}
    if not isinstance(args, dict):
        raise ctx.error("workload.args", f"expected a mapping of {name}'s arguments, got {kind_of(args)}",
                        line_of(m, "args"))
    params = [p for p in inspect.signature(fn).parameters if p not in BUILDER_INJECTED]
    hints = typing.get_type_hints(fn)
    checked: dict[str, Any] = {}
    if "topology_sizes" in inspect.signature(fn).parameters:
        checked["topology_sizes"] = sizes
    for k, v in args.items():
        if k not in params:
            near = difflib.get_close_matches(str(k)[:100], params, n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]!r}?" if near else f"; valid: {', '.join(params)}"
            raise ctx.error(f"workload.args.{str(k)[:40]}", f"{name} has no argument {shown(k)}{hint}",
                            line_of(args, k))
        checked[k] = _builder_arg(ctx, hints.get(k), v, f"workload.args.{k}", line_of(args, k))
    try:
        return fn(**checked)
    except (TypeError, ValueError, ArithmeticError) as e:
        raise ctx.error("workload.args", f"{name}: {shown(str(e), 200)[1:-1]}", line_of(m, "args")) from None


def _chakra(ctx: Ctx, m: YMap, sizes: tuple[int, ...]) -> Workload:
    """``workload: {chakra: PATH, npu: N, groups: {GROUP: [dims]}}``: one NPU's Chakra execution trace
    (``workload.chakra``; docs/chakra.md): PATH is a ``.et`` file, a folder with one ``*.N.et``, or the prefix
    of ``PATH.N.et``; ``groups`` places the trace's process groups (``pg_name`` / ``comm_group``) on
    topology dimensions, for collectives without ``involved_dim``."""
    for k in ("astra", "builder", "args", "layers", "parallelism", "last_bottom_layer", "clock"):
        if k in m:
            raise ctx.error(join_path("workload", k), "not allowed with 'chakra' (the trace sets the workload)",
                            line_of(m, k))
    src = m["chakra"]
    if not isinstance(src, str) or not src:
        raise ctx.error("workload.chakra", f"expected the path of a trace file, folder or prefix, got {kind_of(src)}",
                        line_of(m, "chakra"))
    npus = 1
    for s in sizes:
        npus *= s
    rank = int(number(ctx, m["npu"], "workload.npu", line_of(m, "npu"), integer=True, lo=0, hi=npus - 1)) \
        if "npu" in m else None
    groups = None
    if "groups" in m:
        g = m["groups"]
        if not isinstance(g, dict) or not g:
            raise ctx.error("workload.groups", f"expected a non-empty mapping of process group to a list of dimension "
                            f"indices, got {kind_of(g)}", line_of(m, "groups"))
        groups = {}
        for name, dl in g.items():
            gp = f"workload.groups.{str(name)[:40]}"
            if not isinstance(dl, list) or not dl:
                raise ctx.error(gp, f"expected a non-empty list of dimension indices, got {kind_of(dl)}",
                                line_of(g, name))
            dims = tuple(int(number(ctx, d, f"{gp}[{i}]", line_of(dl, i), integer=True, lo=0, hi=len(sizes) - 1))
                         for i, d in enumerate(dl))
            if len(set(dims)) != len(dims):
                raise ctx.error(gp, "a dimension is listed twice", line_of(g, name))
            groups[str(name)] = dims
    from ..workload.chakra import SUFFIX, read_trace, trace_path, trace_to_workload  # (its codec only where read)
    try:
        # --confine: nothing outside the folder is listed or probed, so no answer says what is there
        for q in (ctx.dir / src, ctx.dir / f"{src}.{rank or 0}{SUFFIX}"):  # (the second: a prefix's file)
            confined(q, what="Chakra trace", confine_to=ctx.confine_to)
        file = trace_path(ctx.dir / src, rank)
    except ValueError as e:
        raise ctx.error("workload.chakra", f"{shown(src)}: {e}", line_of(m, "chakra")) from None
    except UnreadableFile as e:
        raise ctx.error("workload.chakra", f"{shown(src)}: {e.detail}", line_of(m, "chakra")) from None
    try:
        data = read_user_bytes(file, what="Chakra trace", confine_to=ctx.confine_to)
    except UnreadableFile as e:
        raise ctx.error("workload.chakra", f"{shown(src)}: {e.detail}", line_of(m, "chakra")) from None
    return trace_to_workload(read_trace(data, str(file)), file=str(file), dim_sizes=sizes,
                             name=text(ctx, m, "name", "workload") or file.name.split(".")[0],
                             npu=rank or 0, groups=groups)


def _builder_arg(ctx: Ctx, kind: Any, v: Any, path: str, line: int | None) -> Any:
    """A builder's argument checked against its annotation, so that 'batch_per_npu: .inf' or 'true' is an
    error here rather than a workload of infinite or boolean sizes: int, a whole number in [0, 2^31];
    float, a finite number >= 0; bool; str; a tuple of ints, a list of such whole numbers."""
    if kind is bool:
        if not isinstance(v, bool):
            raise ctx.error(path, f"expected true or false, got {kind_of(v)}", line)
        return v
    if kind is int:
        return int(number(ctx, v, path, line, integer=True, lo=0, hi=2**31))
    if kind is float:
        return number(ctx, v, path, line, lo=0)
    if kind is str and not isinstance(v, str):
        raise ctx.error(path, f"expected text, got {kind_of(v)}", line)
    if typing.get_origin(kind) in (tuple, list) and typing.get_args(kind)[:1] == (int,):
        if not isinstance(v, list):
            raise ctx.error(path, f"expected a list of whole numbers (such as [0, 1]), got {kind_of(v)}", line)
        return tuple(int(number(ctx, x, f"{path}[{i}]", line_of(v, i), integer=True, lo=0, hi=2**31))
                     for i, x in enumerate(v))
    return v


def workload(ctx: Ctx, w: Any, ndims: int, top: YMap, sizes: tuple[int, ...] | None = None) -> Workload:
    """The ``workload`` section; ``sizes``: the topology's dimensions (ASTRA's hybrid and Transformer loops and
    the LLM builder place their collectives on them)."""
    path = "workload"
    sizes = tuple(sizes) if sizes is not None else (2,) * ndims
    m = section(ctx, w, path, ("astra", "clock", "name", "parallelism", "layers", "last_bottom_layer", "builder",
                               "args", "chakra", "npu", "groups"), parent=top, key="workload")
    if "chakra" in m:
        return _chakra(ctx, m, sizes)
    for k in ("npu", "groups"):
        if k in m:
            raise ctx.error(join_path(path, k), "goes with 'chakra' (a trace's NPU and its process groups)",
                            line_of(m, k))
    if "builder" in m:
        return _built(ctx, m, sizes)
    if "args" in m:
        raise ctx.error("workload.args", "'args' goes with 'builder'", line_of(m, "args"))
    if "astra" in m:
        for k in ("parallelism", "layers", "last_bottom_layer"):
            if k in m:
                raise ctx.error(join_path(path, k), "not allowed with 'astra' (the ASTRA-sim file sets it)",
                                line_of(m, k))
        src = m["astra"]
        if not isinstance(src, str):
            raise ctx.error("workload.astra", f"expected a file path, got {kind_of(src)}", line_of(m, "astra"))
        clock = quantity(ctx, m, "clock", path, U.HERTZ, default=1e9)
        wpath = (ctx.dir / src)
        if not wpath.exists():
            raise ctx.error("workload.astra", f"workload file {shown(src)} not found (looked in {ctx.dir})",
                            line_of(m, "astra"))
        name = text(ctx, m, "name", path) or wpath.stem
        key = ("astra", str(wpath), clock, name, sizes, ctx.confine_to)
        if ctx.memo is not None and key in ctx.memo:
            return ctx.memo[key]  # a sweep's points read one file: read and converted once (a Workload is frozen)
        try:
            aw = parse_astra_workload(wpath, confine_to=ctx.confine_to)
        except UnreadableFile as e:  # refused or unreadable: the key that named it is the place to fix
            raise ctx.error("workload.astra", f"{shown(src)}: {e.detail}", line_of(m, "astra")) from None
        wl = astra_to_workload(aw, cycle_s=1.0 / clock, name=name, dim_sizes=sizes)
        if ctx.memo is not None:
            ctx.memo[key] = wl
        return wl
    if "layers" not in m:
        raise ctx.error(path, "expected either 'astra: <file>' or 'layers: [...]'", getattr(m, "line", None))
    par = choice(ctx, m, "parallelism", path, PARALLELISMS, default="data")
    layers = []
    names: set[str] = set()
    lst = items(ctx, m, "layers", path)
    for i, lv in enumerate(lst):
        lp = f"workload.layers[{i}]"
        lm = section(ctx, lv, lp, ("name", "forward", "input_grad", "weight_grad", "forward_comm",
                                   "input_grad_comm", "weight_grad_comm", "update"), ("name",), lst, i)
        name = text(ctx, lm, "name", lp)
        if not name:
            raise ctx.error(join_path(lp, "name"), "expected a non-empty name", getattr(lm, "line", None))
        if name in names:
            raise ctx.error(join_path(lp, "name"), f"layer name {shown(name)} is used twice", line_of(lm, "name"))
        names.add(name)
        layers.append(Layer(
            name=name,
            forward=_compute(ctx, lm.get("forward"), join_path(lp, "forward"), line_of(lm, "forward")),
            input_grad=_compute(ctx, lm.get("input_grad"), join_path(lp, "input_grad"), line_of(lm, "input_grad")),
            weight_grad=_compute(ctx, lm.get("weight_grad"), join_path(lp, "weight_grad"), line_of(lm, "weight_grad")),
            forward_comm=_comm(ctx, lm.get("forward_comm"), join_path(lp, "forward_comm"), line_of(lm, "forward_comm"),
                               ndims),
            input_grad_comm=_comm(ctx, lm.get("input_grad_comm"), join_path(lp, "input_grad_comm"),
                                  line_of(lm, "input_grad_comm"), ndims),
            weight_grad_comm=_comm(ctx, lm.get("weight_grad_comm"), join_path(lp, "weight_grad_comm"),
                                   line_of(lm, "weight_grad_comm"), ndims),
            update_s=quantity(ctx, lm, "update", lp, U.SECONDS, allow_zero=True, default=0.0)))
    if layers[0].input_grad_comm is not None and par != "hybrid_dlrm":
        raise ctx.error("workload.layers[0].input_grad_comm", "the first layer computes no input gradient, so it "
                        "issues no input-gradient collective (only hybrid_dlrm's embedding does)",
                        line_of(lst[0], "input_grad_comm"))
    last_bottom = None
    if par == "hybrid_dlrm":
        if "last_bottom_layer" not in m:
            raise ctx.error("workload.last_bottom_layer", "hybrid_dlrm needs the 0-based index of the last "
                            "bottom-MLP layer", getattr(m, "line", None))
        b = int(number(ctx, m["last_bottom_layer"], "workload.last_bottom_layer", line_of(m, "last_bottom_layer"),
                       lo=0, hi=len(layers) - 2, integer=True))
        last_bottom = b + 1
    return Workload(name=text(ctx, m, "name", path) or Path(ctx.file).stem, parallelism=par,
                    layers=tuple(layers), dlrm_last_bottom=last_bottom, source=ctx.file)


# ---------------------------------------------------------------- topology, npu

def _bandwidths(ctx: Ctx, dm: YMap, p: str, tolerance: float) -> tuple[tuple[float, ...], float | None]:
    """A dimension's link bandwidth (bytes/s): one value, a list of options, or a range ``{min, max}``
    made a geometric grid of ratio ``1 + tolerance``; ascending, with the range's tolerance (or None)."""
    v = dm["bandwidth"]
    bp = join_path(p, "bandwidth")
    if isinstance(v, list):
        if not v:
            raise ctx.error(bp, "empty list: give at least one bandwidth (e.g. [50 GB/s, 100 GB/s])",
                            line_of(dm, "bandwidth"))
        opts = [value_with_unit(ctx, x, U.BYTES_PER_S, f"{bp}[{i}]", line_of(v, i), "bandwidth")
                for i, x in enumerate(v)]
        if len(set(opts)) != len(opts):
            raise ctx.error(bp, "a bandwidth is listed twice", line_of(dm, "bandwidth"))
        return tuple(sorted(opts)), None
    if isinstance(v, dict):
        r = section(ctx, v, bp, ("min", "max"), ("min", "max"), dm, "bandwidth")
        lo = quantity(ctx, r, "min", bp, U.BYTES_PER_S)
        hi = quantity(ctx, r, "max", bp, U.BYTES_PER_S)
        if hi < lo:
            raise ctx.error(join_path(bp, "max"), f"expected a bandwidth >= min "
                            f"({U.format_quantity(lo, U.BYTES_PER_S)})", line_of(r, "max"))
        points = grid_steps(lo, hi, tolerance) + 1
        if points > MAX_GRID:
            raise ctx.error(bp, f"this range at tolerance {tolerance:g} is {points} grid points; codesign takes "
                            f"at most {MAX_GRID} per dimension (raise topology.tolerance or narrow the range)",
                            line_of(dm, "bandwidth"))
        return grid(lo, hi, tolerance), tolerance
    return (quantity(ctx, dm, "bandwidth", p, U.BYTES_PER_S),), None


#: Grid points one bandwidth range may become (each is a binary of the master MILP).
MAX_GRID = 400


def topology(ctx: Ctx, t: Any, top: YMap) -> tuple[Topology, Network | None]:
    """The topology, and the network's design space when a dimension's bandwidth is open (a list or a
    range), has a cost, or the topology has a cost budget (else None)."""
    m = section(ctx, t, "topology", ("dims", "cost_budget", "cost_unit", "tolerance"), ("dims",), parent=top,
                key="topology")
    lst = items(ctx, m, "dims", "topology")
    tolerance = number(ctx, m.get("tolerance", 0.02), "topology.tolerance", line_of(m, "tolerance"), lo=0,
                       lo_open=True, hi=1)
    dims = []
    options, costs, tols = [], [], []
    for i, dv in enumerate(lst):
        p = f"topology.dims[{i}]"
        dm = section(ctx, dv, p, ("name", "kind", "size", "links", "bandwidth", "latency", "algorithm",
                                  "cost_per_gbps", "phase_latency", "buffer_bandwidth"),
                     ("kind", "size", "bandwidth"), lst, i)
        kind = choice(ctx, dm, "kind", p, KINDS)
        # (a million NPUs in one dimension is past any machine; a float of 1e308 would overflow the byte counts)
        size = int(number(ctx, dm.get("size"), join_path(p, "size"), line_of(dm, "size"), integer=True, lo=0,
                          hi=2**20))
        if size <= 1:
            raise ctx.error(join_path(p, "size"), f"a dimension needs at least 2 NPUs for its collectives to have "
                            f"peers, got {size}", line_of(dm, "size"))
        links = int(number(ctx, dm.get("links", 1), join_path(p, "links"), line_of(dm, "links"), integer=True, lo=1))
        algo = choice(ctx, dm, "algorithm", p, ALGORITHMS, default="") if "algorithm" in dm else ""
        if algo == "halving_doubling" and size & (size - 1):
            raise ctx.error(join_path(p, "algorithm"), f"halving_doubling needs a power-of-two size, got {size}",
                            line_of(dm, "algorithm"))
        bws, tol = _bandwidths(ctx, dm, p, tolerance)
        options.append(bws)
        tols.append(tol)
        costs.append(number(ctx, dm.get("cost_per_gbps", 0.0), join_path(p, "cost_per_gbps"),
                            line_of(dm, "cost_per_gbps"), lo=0))
        # an open dimension's nominal bandwidth is its largest: its link times then bound every option's
        dims.append(Dim(name=text(ctx, dm, "name", p, default=f"dim{i}"), kind=kind, size=size, links=links,
                        link_bandwidth=bws[-1],
                        latency=quantity(ctx, dm, "latency", p, U.SECONDS, allow_zero=True, default=0.0),
                        algorithm=algo,
                        phase_latency=quantity(ctx, dm, "phase_latency", p, U.SECONDS, allow_zero=True, default=0.0),
                        buffer_bandwidth=quantity(ctx, dm, "buffer_bandwidth", p, U.BYTES_PER_S)
                        if "buffer_bandwidth" in dm else None))
    topo = Topology(tuple(dims))
    open_ = any(len(o) > 1 for o in options) or any(costs) or "cost_budget" in m
    if not open_:
        return topo, None
    budget = number(ctx, m["cost_budget"], "topology.cost_budget", line_of(m, "cost_budget"), lo=0) \
        if "cost_budget" in m else None
    unit = text(ctx, m, "cost_unit", "topology", default="$") or "$"
    return topo, Network(tuple(options), tuple(costs), budget, unit, tuple(tols))


NPU_KEYS = ("compute", "hbm_bandwidth", "cores", "core_reduce_rate", "compute_hbm_utilization", "profile",
            "hbm_capacity", "compute_model")
MODEL_KEYS = ("sms", "l2_bandwidth", "gemm_efficiency", "memory_efficiency", "kernel_overhead", "host_overhead",
              "exchange_overhead")
#: The values a compute model accepts (its quantity, lowest, highest): an efficiency is a sustained share of
#: a datasheet peak (below 1% no GPU runs), an overhead a launch's or an operator's time (microseconds; a
#: millisecond is far past any), an exchange's host work a framework's (a tenth of a second is past any), a
#: GPU's SMs and L2 bandwidth what a chip can have. Beyond them a value is a typo, and a prediction from it
#: would be absurd, so it is refused (exit 2), not warned about.
MODEL_RANGES: dict[str, tuple[U.Dimension | None, float, float]] = {
    "sms": (None, 1, 100_000), "l2_bandwidth": (U.BYTES_PER_S, 1e9, 1e15),
    "gemm_efficiency": (None, 0.01, 1.0), "memory_efficiency": (None, 0.01, 1.0),
    "kernel_overhead": (U.SECONDS, 0.0, 1e-3), "host_overhead": (U.SECONDS, 0.0, 1e-3),
    "exchange_overhead": (U.SECONDS, 0.0, 0.1)}


def _compute_model(ctx: Ctx, v: Any, path: str, base: ComputeModel | None, flops: float) -> ComputeModel | None:
    """``npu.compute_model``: a GPU's kernel model (``platform.compute``), on top of ``base`` (a profile's)."""
    if v is None:
        return base if base is None else replace(base, matmul_flops=flops)
    m = section(ctx, v, path, MODEL_KEYS, () if base else ("sms", "l2_bandwidth"))

    d = base or ComputeModel(flops, 1, 1.0)

    def get(key: str, default: float) -> float:
        dim, lo, hi = MODEL_RANGES[key]
        return bounded(ctx, m, key, path, dim, lo, hi, default)

    return ComputeModel(
        matmul_flops=flops,
        sms=int(number(ctx, m.get("sms", d.sms), join_path(path, "sms"), line_of(m, "sms"), lo=1, hi=MODEL_RANGES[
            "sms"][2], integer=True)),
        l2_bandwidth=get("l2_bandwidth", d.l2_bandwidth), gemm_efficiency=get("gemm_efficiency", d.gemm_efficiency),
        memory_efficiency=get("memory_efficiency", d.memory_efficiency),
        kernel_overhead_s=get("kernel_overhead", d.kernel_overhead_s),
        host_overhead_s=get("host_overhead", d.host_overhead_s),
        exchange_overhead_s=get("exchange_overhead", d.exchange_overhead_s))


def npu(ctx: Ctx, n: Any, top: YMap, *, in_profile: bool = False) -> NPU:
    """The ``npu`` section: values of its own, on top of the platform profile it names (``profile``)."""
    d = NPU()
    if n is None:
        return d
    m = section(ctx, n, "npu", NPU_KEYS, parent=top, key="npu")
    if in_profile:
        platforms.check_not_nested(ctx, m, "npu")
    elif "profile" in m:
        pctx, pm, pname = platforms.gpu_section(ctx, m["profile"], "npu.profile", line_of(m, "profile"))
        d = replace(npu(pctx, pm, pm, in_profile=True), profile=pname)
    flops = quantity(ctx, m, "compute", "npu", U.FLOP_PER_S, default=d.compute_flops)
    cap = quantity(ctx, m, "hbm_capacity", "npu", U.BYTES, default=d.hbm_capacity) if (
        "hbm_capacity" in m or d.hbm_capacity is not None) else None
    return NPU(
        compute_flops=flops,
        hbm_bandwidth=quantity(ctx, m, "hbm_bandwidth", "npu", U.BYTES_PER_S, default=d.hbm_bandwidth),
        cores=int(number(ctx, m.get("cores", d.cores), "npu.cores", line_of(m, "cores"), integer=True, lo=1)),
        core_reduce_rate=quantity(ctx, m, "core_reduce_rate", "npu", U.BYTES_PER_S, default=d.core_reduce_rate),
        compute_hbm_utilization=number(ctx, m.get("compute_hbm_utilization", d.compute_hbm_utilization),
                                       "npu.compute_hbm_utilization", line_of(m, "compute_hbm_utilization"),
                                       lo=0, hi=1),
        compute_model=_compute_model(ctx, m.get("compute_model"), "npu.compute_model", d.compute_model, flops),
        hbm_capacity=cap, profile=d.profile)


# ---------------------------------------------------------------- engine

def _option_value(ctx: Ctx, resource: str, v: Any, path: str, line: int | None, n: NPU) -> float:
    r = every_resource()[resource]
    lo, hi, lo_open, integer = r.limits(n)
    if r.quantity is None:
        return number(ctx, v, path, line, integer=integer, lo=lo, hi=hi, lo_open=lo_open)
    val = value_with_unit(ctx, v, r.quantity, path, line, r.option_key)
    if hi is not None and val >= hi:  # a rate must leave the NPU some of what it draws from (the DMA, of HBM)
        raise ctx.error(path, f"{r.label} {r.option_key} {U.format_quantity(val, r.quantity)} must be below "
                        f"{r.limit_name} {U.format_quantity(hi, r.quantity)}".replace("  ", " "), line)
    return val


def _options(ctx: Ctx, m: YMap, resource: str, n: NPU) -> tuple[Option, ...]:
    p = f"engine.{resource}"
    v = m[resource]
    key = every_resource()[resource].option_key
    if isinstance(v, dict):  # one option written as a mapping, not in a list
        return (_option(ctx, resource, v, p, m, resource, n),)
    if not isinstance(v, list):
        return (Option(_option_value(ctx, resource, v, p, line_of(m, resource), n)),)
    if not v:
        raise ctx.error(p, f"empty design space: list at least one option (e.g. {{{key}: ..., area: ..., power: ...}})",
                        line_of(m, resource))
    out = []
    for i, ov in enumerate(v):
        op = f"{p}[{i}]"
        if isinstance(ov, dict):
            out.append(_option(ctx, resource, ov, op, v, i, n))
        else:
            out.append(Option(_option_value(ctx, resource, ov, op, line_of(v, i), n)))
    return tuple(out)


def _option(ctx: Ctx, resource: str, ov: Any, op: str, parent: Any, key: Any, n: NPU) -> Option:
    """One option written as a mapping: its value under the resource's key, area and power."""
    vkey = every_resource()[resource].option_key
    om = section(ctx, ov, op, (vkey, "area", "power"), (vkey,), parent, key)
    return Option(_option_value(ctx, resource, om[vkey], join_path(op, vkey), line_of(om, vkey), n),
                  quantity(ctx, om, "area", op, U.AREA_MM2, allow_zero=True, default=0.0),
                  quantity(ctx, om, "power", op, U.WATTS, allow_zero=True, default=0.0))


def engine(ctx: Ctx, e: Any, n: NPU, top: YMap) -> Engine:
    p = "engine"
    if not isinstance(e, dict):
        raise ctx.error(p, f"expected a mapping with 'type: {' | '.join(ENGINES)}', got {kind_of(e)}",
                        line_of(top, "engine"))
    if "type" not in e:
        near = difflib.get_close_matches("type", [str(k) for k in e], n=1, cutoff=0.6)
        hint = f" ({near[0]!r} is there: a typo?)" if near else ""
        raise ctx.error("engine.type", f"missing required key; expected one of {', '.join(ENGINES)}{hint}",
                        line_of(e, near[0]) if near else getattr(e, "line", None))
    kind = choice(ctx, e, "type", p, tuple(ENGINES))
    common = ("type", "endpoint_delay", "area_budget", "power_budget", "fixed_area", "fixed_power")
    sized = tuple(r.name for r in ENGINES[kind].resources)
    m = section(ctx, e, p, common + sized + ENGINES[kind].extra_keys, ("type",) + sized)
    # a sweep along a budget edits this section but not its options: they are read once a plan (keyed by their
    # line too: an option written as one number may be the same object at another line, which its warning names)
    resources = {r: _once(ctx, m[r], (r, n, line_of(m, r)), lambda _, r=r: _options(ctx, m, r, n)) for r in sized}

    def coeff(k: str, default: float) -> float:
        return number(ctx, m.get(k, default), join_path(p, k), line_of(m, k), lo=0)

    return Engine(
        kind=kind, resources=resources,
        area_budget_mm2=quantity(ctx, m, "area_budget", p, U.AREA_MM2) if "area_budget" in m else None,
        power_budget_w=quantity(ctx, m, "power_budget", p, U.WATTS) if "power_budget" in m else None,
        endpoint_delay_s=quantity(ctx, m, "endpoint_delay", p, U.SECONDS, allow_zero=True, default=0.0),
        hbm_per_reduce_byte=coeff("hbm_per_reduce_byte", 5.0), hbm_per_copy_byte=coeff("hbm_per_copy_byte", 2.0),
        fixed_area_mm2=quantity(ctx, m, "fixed_area", p, U.AREA_MM2, allow_zero=True, default=0.0),
        fixed_power_w=quantity(ctx, m, "fixed_power", p, U.WATTS, allow_zero=True, default=0.0))


# ---------------------------------------------------------------- objective, schedule, solver

def objective(ctx: Ctx, o: Any, top: YMap) -> Objective:
    if o is None:
        return Objective()
    m = section(ctx, o, "objective", ("minimize", "iteration_time_target"), parent=top, key="objective")
    what = choice(ctx, m, "minimize", "objective", OBJECTIVES, default="iteration_time")
    target = quantity(ctx, m, "iteration_time_target", "objective", U.SECONDS) if "iteration_time_target" in m else None
    if what != "iteration_time" and target is None:
        raise ctx.error("objective.iteration_time_target", f"minimizing {what} needs an iteration-time target "
                        "(e.g. '2 ms')", getattr(m, "line", None))
    if what == "iteration_time" and target is not None:  # said, not silently ignored (a sweep may vary minimize)
        ctx.note("objective.iteration_time_target", "ignored: minimizing iteration time takes no target (a target "
                 "goes with minimize: area, power or network_cost)", line_of(m, "iteration_time_target"))
        target = None
    return Objective(what, target)


def schedule(ctx: Ctx, s: Any, top: YMap) -> ScheduleSpec:
    if s is None:
        return ScheduleSpec()
    m = section(ctx, s, "schedule", ("order", "chunks", "overlap"), parent=top, key="schedule")
    return ScheduleSpec(order=choice(ctx, m, "order", "schedule", ORDERS, default="lifo"),
                        chunks=int(number(ctx, m.get("chunks", 1), "schedule.chunks", line_of(m, "chunks"),
                                          integer=True, lo=1, hi=1024)),
                        overlap=boolean(ctx, m, "overlap", "schedule", True))


def solver_settings(ctx: Ctx, s: Any, base: SolverSpec, path: str = "solver", top: Any = None) -> SolverSpec:
    """Settings from a ``solver`` section or a profile file, on top of ``base``."""
    if s is None:
        return base
    m = section(ctx, s, path, ("profile", "time_limit", "gap", "threads", "presolve", "description"),
                parent=top, key="solver")
    return SolverSpec(
        profile=base.profile,
        time_limit_s=quantity(ctx, m, "time_limit", path, U.SECONDS, default=base.time_limit_s),
        mip_gap=number(ctx, m.get("gap", base.mip_gap), join_path(path, "gap"), line_of(m, "gap"), lo=0, hi=1),
        threads=int(number(ctx, m.get("threads", base.threads), join_path(path, "threads"), line_of(m, "threads"),
                           integer=True, lo=1, hi=256)),
        presolve=boolean(ctx, m, "presolve", path, base.presolve))


#: The solver profiles shipped inside the package: copies of the repository's ``solvers/*.yaml`` (their
#: source of truth; tests/test_install.py checks the copies are identical), so an installed codesign
#: finds ``default``, ``fast`` and ``exact`` wherever its problem files are.
SHIPPED_PROFILES = Path(__file__).resolve().parent / "profiles"


def shipped_profiles() -> list[str]:
    return sorted(p.stem for p in SHIPPED_PROFILES.glob("*.yaml"))


def find_profile(name: str, start: Path, *, confine: bool = False) -> Path | None:
    """``solvers/<name>.yaml`` in the problem's folder (``start``) or any folder above it, or in the working
    folder, else the shipped profile ``name``. With ``confine`` only ``start``'s own solvers/ and the shipped
    profiles are looked in. A name ending in .yaml or .yml is a path (relative to ``start``), returned as is."""
    if name.endswith((".yaml", ".yml")):
        return start / name
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None  # a name, not a path: solvers/<name>.yaml must not climb out of solvers/
    folders = [start] if confine else [start, *start.parents, Path.cwd()]
    for cand in [f / "solvers" / f"{name}.yaml" for f in folders] + [SHIPPED_PROFILES / f"{name}.yaml"]:
        if cand.is_file():
            return cand
    return None


def solver(ctx: Ctx, s: Any, override_profile: str | None = None, top: Any = None) -> SolverSpec:
    """The solver settings: the profile's (``override_profile``, the command line's ``--solver``, else the
    file's ``solver.profile``), then the file's ``solver`` keys on top. A profile that the command line names
    and that cannot be had is an error against ``--solver``, not against the problem file."""
    name = override_profile
    if name is None and isinstance(s, dict) and "profile" in s:
        name = s["profile"]
        if not isinstance(name, str):
            raise ctx.error("solver.profile", f"expected a profile name, got {kind_of(name)}", line_of(s, "profile"))
    if name is None:
        return solver_settings(ctx, s, SolverSpec(), top=top)
    flag = override_profile is not None
    names = shipped_profiles()
    expected = f"expected {', '.join(names)} or a YAML path"

    def refuse(msg: str) -> SpecError:
        if flag:
            return SpecError(msg, path="--solver")
        return ctx.error("solver.profile", msg, line_of(s, "profile") if isinstance(s, dict) else None)

    if flag and name.endswith((".yaml", ".yml")):
        prof: Path | None = Path(name)  # the command line's path: relative to the working folder
    else:
        prof = find_profile(name, ctx.dir, confine=ctx.confine_to is not None and not flag)
    if prof is None:
        looked = "" if flag else (f" (or solvers/{shown(name, 30)[1:-1]}.yaml beside the problem" +
                                  ("" if ctx.confine_to else ", in a folder above it or in the working folder") + ")")
        raise refuse(f"unknown profile {shown(name)}; {expected}{looked}")
    # --confine holds the problem file to its folder; the command line's profile and the shipped ones are trusted
    confine_to = None if flag or prof.parent == SHIPPED_PROFILES else ctx.confine_to
    try:
        st = prof.stat()
        # absolute, not resolve: no system call per folder (a file reached by two paths is read twice)
        key: tuple | None = (str(prof.absolute()), st.st_mtime_ns, st.st_size, name, confine_to)
    except OSError:
        key = None  # load_yaml says why
    base = _profiles.get(key) if key is not None else None
    if base is None:
        try:
            doc = load_yaml(prof, what="solver profile", confine_to=confine_to)
        except UnreadableFile as e:
            raise refuse(f"{shown(name)}: {e.detail}") from None
        pctx = Ctx(str(prof))
        base = solver_settings(pctx, doc, SolverSpec(profile=name), path="")
        if key is not None and not pctx.notes:  # a profile with warnings is read (and warns) every time
            _profiles[key] = base
        pctx.emit_notes()
    return solver_settings(ctx, s, base, top=top)


#: Profiles already read in this process, by (file, modification time, size, name, confinement): a sweep
#: validates every point's problem, and parsing the same profile again cost more than the rest of the point.
_profiles: dict[tuple, SolverSpec] = {}


# ---------------------------------------------------------------- the whole problem

TOP_KEYS = ("name", "description", "workload", "topology", "npu", "engine", "objective", "schedule", "solver",
            "sweep")  # sweep: defaults for 'codesign sweep', read and checked by codesign.cli.explore


def load_problem(path: str | Path, *, solver_profile: str | None = None, confine: bool = False) -> Problem:
    """Read and validate a problem file. Raises SpecError (file, key path, expectation) on bad input.
    ``confine``: refuse any file the problem names outside the problem file's folder (the command line's
    ``--confine``, for services that run problem files they did not write)."""
    return parse_problem(load_yaml(path), path, solver_profile=solver_profile, confine=confine)


def _check_capacity(ctx: Ctx, wl: Workload, n: NPU, top: YMap) -> None:
    """A workload that states its memory per NPU must fit the NPU's HBM capacity, where one is given."""
    need = sum(v for _, v in wl.memory_bytes)
    if n.hbm_capacity is None or not wl.memory_bytes or need <= n.hbm_capacity:
        return
    parts = ", ".join(f"{k} {v / 2 ** 30:.1f}" for k, v in wl.memory_bytes)
    raise ctx.error("workload.args", f"the configuration needs {need / 2 ** 30:.1f} GiB per NPU ({parts} GiB), more "
                    f"than the NPU's HBM capacity of {n.hbm_capacity / 2 ** 30:.1f} GiB (npu.hbm_capacity); "
                    "recompute more, raise tensor or pipeline parallelism, or use ZeRO",
                    line_of(top.get("workload"), "args"))


def _once(ctx: Ctx, sub: Any, args: tuple, parse: Callable[[Any], Any]) -> Any:
    """``parse(sub)``, a section of the document, once per ``ctx.memo`` (a sweep's plan) for the same object
    ``sub`` and ``args``: a sweep's points share every container of the document that no parameter edits
    (``explore.params.apply`` copies only those on a parameter's path), so a section none touches is read
    once and its object shared by every point's Problem. The notes it held are held again for each point."""
    memo = ctx.memo
    if memo is None:
        return parse(sub)
    key = ("section", parse.__code__, id(sub), args)
    hit = memo.get(key)
    if hit is not None and hit[0] is sub:
        ctx.notes.extend(hit[2])
        return hit[1]
    held = len(ctx.notes)
    out = parse(sub)
    memo[key] = (sub, out, ctx.notes[held:])  # (sub kept alive with it, so that its id is not reused)
    return out


def parse_problem(doc: Any, path: str | Path, *, solver_profile: str | None = None,
                  confine: bool = False, memo: dict | None = None) -> Problem:
    """Validate an already-loaded problem document (plain dicts and lists are fine: a sweep edits one).
    ``path`` names it in messages and anchors its relative paths; ``confine`` is ``load_problem``'s.
    ``memo``: a dict shared by the documents of one file that differ elsewhere (a sweep's points), so that
    an ASTRA-sim workload file they all name is read once."""
    ctx = Ctx(str(path), confine=confine, memo=memo)
    if doc is None:
        raise ctx.error("(top level)", "the file is empty; expected the sections " + ", ".join(TOP_KEYS[2:]))
    m = section(ctx, doc, "", TOP_KEYS, ("workload", "topology", "engine"))
    topo, network = _once(ctx, m["topology"], (), lambda t: topology(ctx, t, m))
    sizes = tuple(d.size for d in topo.dims)
    wl = _once(ctx, m["workload"], sizes, lambda w: workload(ctx, w, len(sizes), m, sizes))
    n = _once(ctx, m.get("npu"), (), lambda x: npu(ctx, x, m))
    _check_capacity(ctx, wl, n, m)
    if n.compute_model is not None:  # the kernels the workload lists, timed on this NPU
        wl = _once(ctx, wl, (id(n),), lambda w: price(w, n.compute_model, n.hbm_bandwidth))
    eng = _once(ctx, m["engine"], (n,), lambda e: engine(ctx, e, n, m))
    name = text(ctx, m, "name", "") or Path(path).stem  # (read in the order the errors have always come in)
    obj = _once(ctx, m.get("objective"), (), lambda o: objective(ctx, o, m))
    sched = _once(ctx, m.get("schedule"), (), lambda x: schedule(ctx, x, m))
    sol = _once(ctx, m.get("solver"), (solver_profile,), lambda x: solver(ctx, x, solver_profile, m))
    problem = Problem(name=name, workload=wl, topology=topo, npu=n, engine=eng, objective=obj, schedule=sched,
                      solver=sol,
                      description=text(ctx, m, "description", ""), path=str(path), network=network)
    if problem.objective.minimize == "network_cost" and network is None:
        raise ctx.error("objective.minimize", "minimizing network_cost needs a network design space: give a "
                        "dimension a list or range of bandwidths and a cost_per_gbps", line_of(m.get("objective"),
                                                                                               "minimize"))
    ctx.emit_notes()  # implausible values, now that the file has loaded without error
    return problem

