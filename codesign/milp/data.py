"""Everything the MILP needs, precomputed from the problem with the shared cost functions.

Every time in the model depends on at most one sized resource, so it is a ``Term``: the resource (or
None) and its value per option of that resource; the model writes it as sum_o y[r, o] * coeff[o],
which keeps durations linear in the option binaries.

Time coefficients are in the model's time unit (TIME_UNIT seconds): HiGHS's tolerances are absolute
(about 1e-7), so a model written in seconds would lose nanosecond latencies in the noise.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..platform.costs import CollectiveDemands, collective_demands, compute_time_terms, phase_demand, resource_time
from ..platform.endpoint import Engine, Option
from ..platform.engines import engine_kind
from ..platform.network import key as net_key
from ..platform.network import topology_at
from ..problem.model import Problem
from ..schedule.iteration import Iteration, build_iteration

TIME_UNIT = 1e-6  # seconds per model time unit: the MILP's clock runs in microseconds
#: The longest single task (us) the model takes: with HiGHS's absolute tolerances (about 1e-7 of a
#: microsecond) and nanosecond latencies beside it, 1e10 us (2.8 hours) already spans 19 orders.
MAX_TASK_US = 1e10
#: The largest area (mm^2) or power (W) of an option the model takes (HiGHS refuses matrix entries of
#: 1e15 and more, and areas of 0.1 mm^2 sit beside them).
MAX_COST = 1e9



@dataclass(frozen=True)
class Term:
    """A time (model units) that depends on ``resource``'s option: ``coeffs[o]``; constant if resource is None."""

    resource: str | None
    coeffs: tuple[float, ...]


@dataclass
class ModelData:
    problem: Problem
    iteration: Iteration
    demands: list[CollectiveDemands]
    _phase_cache: dict = field(default_factory=dict, repr=False)
    #: True: a ranged dimension's option o stands for every bandwidth of its grid cell [bw_o, bw_o+1], so
    #: its link times are taken at the cell's upper end (its cost stays at the lower): the master then
    #: bounds every bandwidth of the range, not only the grid's (``pipeline.solve.continuous_bound_us``)
    cells: bool = False

    @property
    def engine(self) -> Engine:
        return self.problem.engine

    @property
    def space(self) -> dict[str, tuple[Option, ...]]:
        """The design space: the engine's resources and, with a network design space, each dimension's
        bandwidths as ``bw[d]`` (options without area or power). A design is one option of each."""
        p = self.problem
        if p.network is None:
            return dict(p.engine.resources)
        return {**p.engine.resources, **p.network.resources(p.topology)}

    @property
    def sized(self) -> list[str]:
        """The names in ``space`` with more than one option: where the master decides."""
        return [r for r, opts in self.space.items() if len(opts) > 1]

    def link_term(self, k: int, i: int) -> Term:
        """A chunk's link time in phase i of collective k (model units): a constant, or per option of its
        dimension's bandwidth when the network leaves it open (``costs.link_time`` on the topology with
        that bandwidth; the demands hold it at the largest)."""
        hit = self._phase_cache.get(("link", k, i))
        if hit is None:
            p, dem = self.problem, self.demands[k]
            d = dem.phase_dims[i]
            net = p.network
            if net is None or len(net.bandwidths[d]) == 1:
                hit = Term(None, (dem.phase_link_s[i] / TIME_UNIT,))
            else:
                comm = self.iteration.comms[k].comm
                coeffs = []
                n = len(net.bandwidths[d])
                ranged = self.cells and net.tolerance and net.tolerance[d] is not None
                for o in range(n):
                    topo = topology_at(p.topology, net, {net_key(d): min(o + 1, n - 1) if ranged else o})
                    coeffs.append(collective_demands(comm, topo, p.engine, dem.chunks).phase_link_s[i] / TIME_UNIT)
                hit = Term(net_key(d), tuple(coeffs))
            self._phase_cache["link", k, i] = hit
        return hit

    def phase_terms(self, k: int, i: int) -> list[Term]:
        """The endpoint times of a chunk in phase i of collective k, one Term per pool it asks something of
        (``costs.phase_endpoint_times`` at each option of the resource that sizes the pool)."""
        hit = self._phase_cache.get((k, i))
        if hit is None:
            eng, npu, dem = self.engine, self.problem.npu, self.demands[k]
            kind = engine_kind(eng.kind)
            hit = []
            for pool, demand in zip(("memory", "reduction"), phase_demand(eng, dem, i)):
                r = kind.sizing(pool)
                if r is None or demand <= 0.0:
                    continue  # an unlimited pool, or nothing asked of it
                hit.append(Term(r.name, tuple(resource_time(demand, r.capacity(o.value, npu)) / TIME_UNIT
                                              for o in eng.options(r.name))))
            self._phase_cache[k, i] = hit
        return hit

    def phase_values(self, choice: dict[str, int]) -> dict[tuple[int, int], float]:
        """A chunk's time alone on the endpoint in each phase (k, i) at the design ``choice`` (us): the
        largest of its link time and its endpoint terms at the chosen options (``pools.alone_rate``)."""
        out = {}
        for k, dem in enumerate(self.demands):
            for i in range(len(dem.phase_link_s)):
                lt = self.link_term(k, i)
                v = lt.coeffs[choice[lt.resource]] if lt.resource is not None else lt.coeffs[0]
                for t in self.phase_terms(k, i):
                    v = max(v, t.coeffs[choice[t.resource]] if t.resource is not None else t.coeffs[0])
                out[k, i] = v
        return out

    def pool_load_terms(self) -> list[Term]:
        """Per endpoint resource, one iteration's demand on it over its capacity (us): what a period must
        hold when every chunk-phase's traffic passes through the pool that resource sizes."""
        chunks = self.problem.schedule.chunks
        acc: dict[str | None, list[float]] = {}
        for k, dem in enumerate(self.demands):
            for i in range(len(dem.phase_dims)):
                for t in self.phase_terms(k, i):
                    tot = acc.setdefault(t.resource, [0.0] * len(t.coeffs))
                    for o, c in enumerate(t.coeffs):
                        tot[o] += chunks * c
        return [Term(r, tuple(v)) for r, v in acc.items()]


def within(value: float, budget: float) -> bool:
    """Whether ``value`` is within ``budget``, up to the rounding of the sums that make it (1e-12, relative
    and absolute): the one test of a budget, for the options it rules out and the designs it admits."""
    return value <= budget * (1 + 1e-12) + 1e-12


def unusable(engine: Engine) -> list[tuple[str, int]]:
    """Options that cannot fit a budget even with the smallest options of every other resource. (Here, not
    beside the master that fixes them out, so that ``codesign validate`` checks them without a solver.)"""
    out = []
    for attr, budget in (("area_mm2", engine.area_budget_mm2), ("power_w", engine.power_budget_w)):
        if budget is None:
            continue
        floor = {r: min(getattr(o, attr) for o in opts) for r, opts in engine.resources.items()}
        base = getattr(engine, f"fixed_{attr}") + sum(floor.values())
        for r in engine.sized:
            for o, opt in enumerate(engine.options(r)):
                if not within(base - floor[r] + getattr(opt, attr), budget):
                    out.append((r, o))
    return sorted(set(out))


def check_ranges(md: ModelData, unusable: set[tuple[str, int]] = frozenset()) -> None:
    """Refuse, naming the key, a problem whose numbers HiGHS cannot hold next to its nanoseconds: a
    compute task, a chunk-phase's link time or an endpoint term over ``MAX_TASK_US``; an option's area
    or power over ``MAX_COST`` (unless a budget already rules the option out: ``unusable``)."""
    from ..errors import SpecError
    p = md.problem
    where = {"file": p.path}
    for r, opts in p.engine.resources.items():
        for o, opt in enumerate(opts):
            for what, v, unit in (("area", opt.area_mm2, "mm^2"), ("power", opt.power_w, "W")):
                if (r, o) not in unusable and not abs(v) <= MAX_COST:
                    raise SpecError(f"{v:g} {unit} is more than codesign's MILP holds beside its other figures "
                                    f"(at most {MAX_COST:g} {unit}); a unit missing or wrong?",
                                    path=f"engine.{r}[{o}].{what}", **where)

    def too_long(us: float) -> bool:
        return not us <= MAX_TASK_US  # also catches inf and nan

    for c in md.iteration.computes:
        t = max(compute_time_terms(c.demand, p.npu, p.npu.cores, p.npu.hbm_bandwidth)) / TIME_UNIT
        if too_long(t):
            raise SpecError(f"compute task {c.name} takes {t * TIME_UNIT:.3g} s at the full NPU; codesign holds tasks "
                            f"up to {MAX_TASK_US * TIME_UNIT:.3g} s (a unit missing or wrong?)", path="workload",
                            **where)
    for k, dem in enumerate(md.demands):
        name = md.iteration.comms[k].name
        for i in range(len(dem.phase_link_s)):
            link = max(md.link_term(k, i).coeffs) * TIME_UNIT  # at the smallest bandwidth an open dimension takes
            if too_long(link / TIME_UNIT):
                d = dem.phase_dims[i]
                raise SpecError(f"a chunk of {name} takes {link:.3g} s on this dimension's links; codesign holds tasks "
                                f"up to {MAX_TASK_US * TIME_UNIT:.3g} s (check its bandwidth, latency and the "
                                "collective's bytes)", path=f"topology.dims[{d}]", **where)
            for t in md.phase_terms(k, i):
                for o, us in enumerate(t.coeffs):
                    if too_long(us):
                        path, at = _blamed(p, t, o)
                        raise SpecError(f"a chunk of {name} takes {us * TIME_UNIT:.3g} s {at}; codesign holds tasks "
                                        f"up to {MAX_TASK_US * TIME_UNIT:.3g} s", path=path, **where)


def _blamed(p: Problem, t: Term, o: int) -> tuple[str, str]:
    """The key path to name for an endpoint term too long at option o, and where it is too long: the NPU
    figure the pool's rate is a share of (``npu.hbm_bandwidth`` for the baseline's HBM share) where every
    option is too long, else the option (``engine.alu`` when the resource has one value, as the file then
    writes it)."""
    r = engine_kind(p.engine.kind).resource(t.resource)
    opts = p.engine.options(t.resource)
    if all(not us <= MAX_TASK_US for us in t.coeffs):
        npu, value = p.npu, opts[o].value
        for f in dataclasses.fields(npu):
            v = getattr(npu, f.name)
            if isinstance(v, float) and r.capacity(value, dataclasses.replace(npu, **{f.name: 2 * v + 1})) != \
                    r.capacity(value, npu):
                return f"npu.{f.name}", f"at every {r.label} option"
    if len(opts) > 1:
        return f"engine.{t.resource}[{o}]", "on this option"
    return f"engine.{t.resource}", "at this value"


def model_data(problem: Problem) -> ModelData:
    it = build_iteration(problem.workload, problem.schedule.overlap)
    topo = problem.topology
    net = problem.network
    if net is not None:  # link times at every open dimension's largest bandwidth: constants that bound every option's
        topo = topology_at(topo, net, {net_key(d): len(b) - 1 for d, b in enumerate(net.bandwidths)})
    dem = [collective_demands(c.comm, topo, problem.engine, problem.schedule.chunks) for c in it.comms]
    return ModelData(problem, it, dem)
