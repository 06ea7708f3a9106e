"""The replay must not change what it answers when it gets faster.

``tests/reference_replay.py`` is the replay as it was before the speed work (commit 7020241), frozen.
Every field of every SimResult (and of its Realized, with ``record=True``) must be identical, float for
float, between it and ``codesign.sim.replay.simulate``: on the shipped problems at several designs, on
some of the ACE study's problems (DLRM's urgent collectives, no overlap, the ideal and baseline
engines), and on small random problems covering every engine, parallelism, collective, algorithm,
chunk count, SRAM size, dispatch rule (LIFO, FIFO, fixed priorities with iteration offsets),
``overlap: false`` and iteration count. Every test runs twice: on the compiled event loop
(codesign/sim/_kernel.c) and on the Python one, which must both answer what the reference does.
"""
from __future__ import annotations

import dataclasses
import math

import pytest
import reference_replay
from conftest import ROOT, problem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_platform_lp import cases as platform_lp_cases

import codesign
from codesign.platform.endpoint import Design, Engine, Option, design_of
from codesign.platform.topology import Dim, Topology
from codesign.problem.model import ScheduleSpec
from codesign.schedule.iteration import build_iteration
from codesign.sim import replay
from codesign.sim.replay import simulate
from codesign.workload.model import Comm, Compute, Layer, Workload


@pytest.fixture(autouse=True, scope="module", params=["compiled", "python"] if replay._kernel else ["python"])
def loop(request):
    """The event loop the replay runs: the compiled one, where it was built (tests/test_install.py fails
    where a compiler was at hand and it was not), and the Python one."""
    was = replay.COMPILED
    replay.COMPILED = request.param == "compiled"
    yield request.param
    replay.COMPILED = was


def same(a, b, path: str = "result") -> None:
    """``a`` and ``b`` are identical: floats bit for bit (NaN equal to NaN, 0.0 apart from -0.0), dicts with
    the same keys in the same order, dataclasses field by field."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a).__name__ == type(b).__name__, path
        for f in dataclasses.fields(a):
            same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, float) and isinstance(b, float), f"{path}: {a!r} against {b!r}"
        assert (a == b and math.copysign(1.0, a) == math.copysign(1.0, b)) or (a != a and b != b), \
            f"{path}: {a!r} against {b!r}"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), f"{path}: keys {list(a)[:8]} against {list(b)[:8]}"
        for k in a:
            same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), f"{path}: length {len(a)} against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} against {b!r}"


def _run(sim, p, design, kw):
    try:
        return sim(p, design, **kw)
    except Exception as e:  # a replay that stalls (or rejects its input) must do so in both
        return (type(e).__name__, str(e))


def _phaseless(p) -> bool:
    """Whether a collective spans only dimensions of one NPU (where the replay departs from the reference)."""
    from codesign.platform.collectives import comm_dims
    from codesign.schedule.iteration import build_iteration
    return any(not comm_dims(c.comm, p.topology) for c in build_iteration(p.workload, p.schedule.overlap).comms)


def check(p, design, **kw) -> None:
    if _phaseless(p):  # see test_a_collective_with_no_phase_completes_at_once_and_compute_runs_each_task_once
        return
    same(_run(simulate, p, design, kw), _run(reference_replay.simulate, p, design, kw))


# ------------------------------------------------------------------ the shipped problems

def _designs(engine: Engine) -> list[Design]:
    """The smallest and largest option of every resource, and a mix of the two."""
    rs = list(engine.resources)
    picks = [{r: 0 for r in rs}, {r: len(engine.resources[r]) - 1 for r in rs},
             {r: (len(engine.resources[r]) - 1) * (i % 2) for i, r in enumerate(rs)},
             {r: (len(engine.resources[r]) - 1) // 2 for r in rs}]
    out = []
    for c in picks:
        d = design_of(engine, c)
        if d not in out:
            out.append(d)
    return out


SHIPPED = ["quickstart", "resnet50_ace_torus3d", "resnet50_baseline_torus3d", "resnet50_ace_optimize_torus3d",
           "gnmt_ace_torus2d"]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_problems_at_several_designs(name):
    p = codesign.load_problem(ROOT / "problems" / f"{name}.yaml")
    for i, d in enumerate(_designs(p.engine)):
        check(p, d, record=(i == 0))


def test_resnet50_at_the_benchmark_design_with_every_dispatch_rule():
    p = codesign.load_problem(ROOT / "problems" / "resnet50_ace_torus3d.yaml")
    d = Design("ace", {"sram": 8 * 2**20, "alu": 128e9, "dma": 128e9})
    K = len(build_iteration(p.workload).comms)
    check(p, d, record=True)
    check(p, d, policy="fifo", iterations=5)
    check(p, d, order=tuple((k, k % 3 == 0) for k in reversed(range(K))), record=True)
    small = Design("ace", {"sram": 256 * 2**10, "alu": 64e9, "dma": 64e9})
    check(p, small, order=tuple((k, 0) for k in range(K)), iterations=9)


PAPER = ["dlrm_n16_ace", "dlrm_n16_baseline", "dlrm_n16_ideal", "dlrm_n16_no_overlap", "dlrm_n16_comm_opt",
         "gnmt_n16_no_overlap", "gnmt_n16_baseline", "resnet50_n16_ideal", "resnet50_n16_no_overlap"]


@pytest.mark.parametrize("name", PAPER)
def test_paper_problems(name):
    p = codesign.load_problem(ROOT / "problems" / "paper" / f"{name}.yaml")
    designs = _designs(p.engine)
    check(p, designs[0], record=True)
    if len(designs) > 1:
        check(p, designs[-1], policy="fifo")


# ------------------------------------------------------------------ small random problems

US = 1e-6


@st.composite
def computes(draw) -> Compute:
    if draw(st.integers(0, 3)) == 0:  # a roofline task: FLOPs and HBM bytes
        return Compute(flops=draw(st.floats(1e6, 4e9)), hbm_bytes=draw(st.sampled_from([0.0, 1e5, 3e7])))
    return Compute(time_s=draw(st.floats(0.2, 40.0)) * US)


@st.composite
def comms(draw, ndims: int) -> Comm:
    kind = draw(st.sampled_from(["all_reduce", "all_to_all", "reduce_scatter", "all_gather"]))
    dims = None
    if ndims > 1 and draw(st.booleans()):
        dims = tuple(sorted(draw(st.sets(st.integers(0, ndims - 1), min_size=1, max_size=ndims))))
    return Comm(kind, draw(st.floats(0.02, 6.0)) * 1e6, dims)


@st.composite
def cases(draw):
    ndims = draw(st.integers(1, 4))
    topo = Topology(tuple(Dim(f"d{i}", kind := draw(st.sampled_from(["ring", "switch", "fully_connected"])),
                              draw(st.integers(1 if i else 2, 5)), draw(st.integers(1, 3)),
                              draw(st.floats(10e9, 200e9)), draw(st.floats(0, 5e-7)),
                              draw(st.sampled_from(["", "halving_doubling"] + (["ring"] if kind == "ring" else []))))
                          for i in range(ndims)))
    par = draw(st.sampled_from(["data", "data", "model", "hybrid_data_model", "hybrid_dlrm", "micro"]))
    n = draw(st.integers(2 if par == "hybrid_dlrm" else 1, 5))
    maybe = st.one_of(st.none(), comms(ndims))
    layers = []
    for i in range(n):
        fwd = draw(maybe) if par != "data" else None
        ig = draw(maybe) if par != "data" else None
        if par == "hybrid_dlrm" and i == 0:
            fwd, ig = draw(comms(ndims)), draw(comms(ndims))
        wg = draw(maybe) if i else draw(comms(ndims))
        layers.append(Layer(f"l{i}", draw(computes()), draw(computes()), draw(computes()), fwd, ig, wg,
                            update_s=draw(st.floats(0, 3.0)) * US))
    last_bottom = draw(st.integers(1, n - 1)) if par == "hybrid_dlrm" else None
    w = Workload("w", par, tuple(layers), dlrm_last_bottom=last_bottom)
    kind = draw(st.sampled_from(["ace", "ace", "baseline", "ideal"]))
    if kind == "ace":
        v = {"sram": draw(st.sampled_from([64e3, 256e3, 1e6, 8e6])), "alu": draw(st.floats(20e9, 600e9)),
             "dma": draw(st.floats(20e9, 800e9))}
    elif kind == "baseline":
        v = {"comm_cores": float(draw(st.integers(1, 16))), "comm_hbm_share": draw(st.floats(0.05, 0.6))}
    else:
        v = {}
    eng = Engine(kind, {r: (Option(x),) for r, x in v.items()},
                 endpoint_delay_s=draw(st.sampled_from([0.0, 1e-9, 2e-8])))
    p = problem(w, topo, eng, order=draw(st.sampled_from(["lifo", "fifo", "optimize"])), chunks=draw(st.integers(1, 6)))
    if draw(st.booleans()):
        p = dataclasses.replace(p, schedule=ScheduleSpec(p.schedule.order, p.schedule.chunks, overlap=False))
    kw = {"iterations": draw(st.integers(4, 9)), "record": draw(st.booleans())}
    how = draw(st.sampled_from(["default", "policy", "order"]))
    if how == "policy":
        kw["policy"] = draw(st.sampled_from(["lifo", "fifo"]))
    elif how == "order":
        K = len(build_iteration(w, p.schedule.overlap).comms)
        perm = draw(st.permutations(range(K)))
        kw["order"] = tuple((k, draw(st.integers(0, 1))) for k in perm)
    return p, Design(kind, v), kw


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_random_problems(case):
    p, design, kw = case
    check(p, design, **kw)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(platform_lp_cases(), st.sampled_from([None, "lifo", "fifo"]), st.booleans())
def test_random_data_parallel_problems(case, policy, record):
    """test_platform_lp's problems (data parallel, every engine, contention, overlap or not)."""
    p, design = case
    check(p, design, policy=policy, record=record)


def test_both_check_their_arguments_alike():
    t = Compute(time_s=1e-6)
    w = Workload("w", "data", (Layer("l0", t, t, t, weight_grad_comm=Comm("all_reduce", 1e6)),))
    p = problem(w, Topology((Dim("d0", "ring", 2, 1, 10e9, 0.0),)), Engine("ideal"))
    check(p, Design("ideal", {}), iterations=4)
    for sim in (simulate, reference_replay.simulate):
        with pytest.raises(ValueError):
            sim(p, Design("ideal", {}), iterations=3)


def test_a_workload_with_no_layers_is_refused():
    """Only the API can build one (the file readers reject it); the reference failed on it with an IndexError."""
    p = problem(Workload("w", "data", ()), Topology((Dim("d0", "ring", 2, 1, 10e9, 0.0),)), Engine("ideal"))
    with pytest.raises(ValueError, match="no layers"):
        simulate(p, Design("ideal", {}))


def test_coinciding_completions_and_wake_ups_keep_their_order():
    """Times that are exact binary fractions make chunk-phases, compute tasks and the wake-ups after a
    collective's update delay end at the same instant; the reference orders such ties by (time, sequence)."""
    t = Compute(time_s=2.0**-20)
    comm = Comm("all_reduce", 2.0**12)
    w = Workload("w", "data", tuple(Layer(f"l{i}", t, t, t, weight_grad_comm=comm, update_s=2.0**-20 * (i % 2))
                                    for i in range(4)))
    topo = Topology((Dim("d0", "ring", 2, 1, 2.0**31, 0.0), Dim("d1", "switch", 2, 1, 2.0**30, 0.0)))
    for eng, design in ((Engine("ideal"), Design("ideal", {})),
                        (Engine("ace", {"sram": (Option(2.0**12),), "alu": (Option(2.0**32),),
                                        "dma": (Option(2.0**32),)}),
                         Design("ace", {"sram": 2.0**12, "alu": 2.0**32, "dma": 2.0**32}))):
        for chunks in (1, 2, 4):
            p = problem(w, topo, eng, order="fifo", chunks=chunks)
            check(p, design, record=True)
            check(p, design, policy="lifo")


def test_priorities_that_are_not_integers():
    """An order whose offsets are not integers still ranks (the replay falls back from its integer encoding)."""
    t = Compute(time_s=3e-6)
    w = Workload("w", "data", (Layer("l0", t, t, t, weight_grad_comm=Comm("all_reduce", 2e6)),
                               Layer("l1", t, t, t, weight_grad_comm=Comm("all_reduce", 1e6), update_s=1e-7),
                               Layer("l2", t, t, t, weight_grad_comm=Comm("reduce_scatter", 3e6))))
    topo = Topology((Dim("d0", "ring", 4, 2, 50e9, 1e-7),))
    eng = Engine("ace", {"sram": (Option(1e6),), "alu": (Option(100e9),), "dma": (Option(100e9),)})
    design = Design("ace", {"sram": 1e6, "alu": 100e9, "dma": 100e9})
    p = problem(w, topo, eng, chunks=3)
    check(p, design, order=((2, 0.5), (0, 0), (1, -1)), record=True)
    check(p, design)


def test_a_collective_with_no_phase_completes_at_once_and_compute_runs_each_task_once():
    """A collective over dimensions of one NPU only has nothing to send: it completes when released, and the
    program goes on to the next task. (The frozen reference ran the releasing task a second time, which
    could stall a model-parallel replay: the one place the replay departs from it, on purpose.)"""
    t = Compute(time_s=3e-6)
    topo = Topology((Dim("d0", "ring", 4, 2, 50e9, 1e-7), Dim("d1", "ring", 1, 1, 50e9, 1e-7)))
    eng = Engine("ace", {"sram": (Option(1e6),), "alu": (Option(100e9),), "dma": (Option(100e9),)})
    design = Design("ace", {"sram": 1e6, "alu": 100e9, "dma": 100e9})
    for w in (Workload("w", "data", (Layer("l0", t, t, t, weight_grad_comm=Comm("all_reduce", 2e6)),
                                     Layer("l1", t, t, t, weight_grad_comm=Comm("all_reduce", 1e6, dims=(1,))))),
              Workload("m", "model", (Layer("l0", t, t, t, forward_comm=Comm("all_gather", 1e6, dims=(1,))),
                                      Layer("l1", t, t, t, input_grad_comm=Comm("all_reduce", 1e6))))):
        sim = simulate(problem(w, topo, eng, chunks=2), design, record=True)
        tasks = len(sim.realized.compute_start)
        assert sim.compute_time_s == pytest.approx(tasks * 3e-6, rel=1e-9)  # each task once per iteration
        assert sim.period_s >= sim.compute_time_s
