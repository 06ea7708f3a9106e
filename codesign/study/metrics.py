"""The ACE study's metrics, defined once (docs/reproduce.md states them in words). Every time is the
simulator's (``sim/replay.py``): a case's iteration time is ``codesign.solve``'s answer, which is the
simulated period of the best design, and the HBM sweep replays its micro benchmark directly. SI units
throughout: seconds, bytes, bytes/s.

- **Speedup** of ACE in a case (workload x network): T(best baseline) / T(ACE), T the simulated
  steady-state period, by two definitions of the best baseline. Ours (``speedup``): the fastest of the
  baseline configurations (the split codesign chooses, the communication- and compute-optimized splits,
  no overlap). The paper's (``speedup_paper``): the better of its two fixed splits, compute-optimized and
  communication-optimized (``PAPER_BASELINES``). Their ratio is what tuning the baseline's split takes of
  ACE's gain.
- **Effective network-bandwidth utilization**: the bandwidth the network delivers while it is in use,
  as a share of its peak: U = (sum_d W_d / T_net) / (sum_d B_d), with W_d the bytes each NPU sends on
  dimension d per iteration, B_d = links_d x bandwidth_d its injection bandwidth, and T_net the time per
  period during which some chunk-phase is on a link. The gain of ACE is U(ACE) / U(best baseline),
  which for the same bytes is T_net(best baseline) / T_net(ACE).
- **HBM bandwidth needed to drive the network**: the least memory bandwidth given to communication
  (baseline: comm_hbm_share x hbm_bandwidth, with ample cores; ACE: its DMA bandwidth, with ample ALUs
  and SRAM) at which one large all-reduce over the whole network runs at DRIVE (95%) of the throughput
  the ideal endpoint reaches on the same network; found by bisection on a log scale over the swept
  bandwidth. The reduction is needed(baseline) / needed(ACE).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..platform.collectives import phases
from ..platform.endpoint import Design
from ..problem.model import Problem
from ..schedule.iteration import build_iteration
from ..sim.replay import SimResult, simulate

DRIVE = 0.95            # share of the ideal endpoint's all-reduce throughput that counts as "driving" the network
HBM_SEARCH = (1e9, 1e14)  # bytes/s: the bisection's bracket
HBM_STEPS = 40            # bisection steps on log(bandwidth): a ratio of (1e5)^(2^-40) between the last two


# ---------------------------------------------------------------- network utilization

def busy_time(intervals: Iterable[tuple[float, float]], period_s: float) -> float:
    """Length of the union of ``intervals`` (s) folded modulo ``period_s``: how long per period at least
    one of them is in progress. An interval as long as the period covers all of it."""
    if period_s <= 0:
        return 0.0
    pieces: list[tuple[float, float]] = []
    for s, e in intervals:
        if e - s >= period_s:
            return period_s
        if e <= s:
            continue
        a = s % period_s
        b = a + (e - s)
        if b <= period_s:
            pieces.append((a, b))
        else:  # wraps into the next period
            pieces += [(a, period_s), (0.0, b - period_s)]
    pieces.sort()
    total, cur_s, cur_e = 0.0, None, None
    for s, e in pieces:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return min(total, period_s)


def comm_intervals(sim: SimResult) -> list[tuple[float, float]]:
    """Each chunk-phase's [start, end] (s) on a link in the replay's measured period."""
    return [(s, e) for row, _, kind, s, e in sim.timeline if kind == "comm" and row.startswith("dim")]


@dataclass(frozen=True)
class NetworkLoad:
    """Bytes each NPU sends per iteration on each dimension (by name) and the NPU's peak injection
    bandwidth over all dimensions (bytes/s)."""

    wire_bytes: dict[str, float]
    peak_bandwidth: float

    @property
    def total_bytes(self) -> float:
        return sum(self.wire_bytes.values())


def network_load(problem: Problem) -> NetworkLoad:
    it = build_iteration(problem.workload, problem.schedule.overlap)
    dims = problem.topology.dims
    wire = {d.name: 0.0 for d in dims}
    for c in it.comms:
        for ph in phases(c.comm, problem.topology):
            wire[dims[ph.dim].name] += ph.wire_bytes
    return NetworkLoad(wire, sum(d.bandwidth for d in dims))


def utilization(load: NetworkLoad, net_busy_s: float) -> float:
    """Effective network-bandwidth utilization (module docstring): delivered over peak while in use."""
    if net_busy_s <= 0 or load.peak_bandwidth <= 0:
        return 0.0
    return load.total_bytes / net_busy_s / load.peak_bandwidth


# ---------------------------------------------------------------- HBM bandwidth needed

def scale_network(problem: Problem, factor: float) -> Problem:
    """``problem`` with every link ``factor`` times faster."""
    dims = tuple(dataclasses.replace(d, link_bandwidth=d.link_bandwidth * factor) for d in problem.topology.dims)
    return dataclasses.replace(problem, topology=dataclasses.replace(problem.topology, dims=dims))


def with_comm_hbm(problem: Problem, bandwidth: float) -> tuple[Problem, Design]:
    """The micro benchmark's problem and design with ``bandwidth`` bytes/s of memory bandwidth for
    communication and every other endpoint resource as the file gives it (ample)."""
    e = problem.engine
    fixed = {r: opts[0].value for r, opts in e.resources.items()}
    if e.kind == "baseline":  # all of an NPU whose HBM is the swept bandwidth (the benchmark has no compute)
        npu = dataclasses.replace(problem.npu, hbm_bandwidth=bandwidth)
        return dataclasses.replace(problem, npu=npu), Design("baseline", {**fixed, "comm_hbm_share": 1.0})
    if e.kind == "ace":
        return problem, Design("ace", {**fixed, "dma": bandwidth})
    return problem, Design(e.kind, fixed)


def sim_time(problem: Problem, design: Design) -> float:
    """Seconds per iteration of a micro benchmark (its collectives only) in the chunk-grain replay."""
    return simulate(problem, design, iterations=5).period_s


def least_bandwidth(time_at: Callable[[float], float], target_s: float, bracket: tuple[float, float] = HBM_SEARCH,
                    steps: int = HBM_STEPS) -> float:
    """The least bandwidth b in ``bracket`` with time_at(b) <= target_s (time_at non-increasing in b), by
    bisection on log(b); inf if even the bracket's top misses the target."""
    lo, hi = bracket
    if time_at(hi) > target_s:
        return math.inf
    if time_at(lo) <= target_s:
        return lo
    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        if time_at(mid) <= target_s:
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class HbmPoint:
    """One network of the HBM sweep: its per-NPU injection bandwidth, the all-reduce's time on the ideal
    endpoint (s) and, per engine (baseline, ace), the least HBM bandwidth that drives it (bytes/s)."""

    npus: int
    net_scale: float
    network_bandwidth: float
    ideal_time_s: float
    needed: dict[str, float]

    @property
    def reduction(self) -> float:
        return self.needed["baseline"] / self.needed["ace"] if self.needed["ace"] > 0 else math.nan


def hbm_point(problems: dict[str, Problem], npus: int, net_scale: float) -> HbmPoint:
    """The least HBM bandwidth for the baseline and ACE micro benchmarks (``problems`` by engine:
    baseline, ace, ideal) on the network scaled by ``net_scale``."""
    scaled = {k: scale_network(p, net_scale) for k, p in problems.items()}
    ideal = scaled["ideal"]
    t_ideal = sim_time(*with_comm_hbm(ideal, 0.0))
    needed = {eng: least_bandwidth(lambda b, p=scaled[eng]: sim_time(*with_comm_hbm(p, b)), t_ideal / DRIVE)
              for eng in ("baseline", "ace")}
    return HbmPoint(npus, net_scale, sum(d.bandwidth for d in ideal.topology.dims), t_ideal, needed)


# ---------------------------------------------------------------- the best baseline

#: The paper's baselines: its fixed communication- and compute-optimized splits (docs/reproduce.md).
PAPER_BASELINES = ("comm_opt", "comp_opt")


def fastest(by_config: dict[str, dict], configs: Sequence[str]) -> dict | None:
    """The fastest of ``configs`` among a case's rows (``by_config``: config -> row with ``iteration_time_s``
    and ``error``) that ran without error; None if none did."""
    ok = [by_config[c] for c in configs if c in by_config and not by_config[c]["error"]]
    return min(ok, key=lambda r: r["iteration_time_s"]) if ok else None


# ---------------------------------------------------------------- aggregates

def mean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return sum(xs) / len(xs) if xs else math.nan


def maximum(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return max(xs) if xs else math.nan
