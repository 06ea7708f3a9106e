"""Network co-design: per-dimension bandwidths under a cost budget, chosen with the endpoint.

- A two-dimension case solved by hand (docs/network.md, "The closed form"): one all-reduce over two ring
  dimensions, blocking, on the ideal engine, so the period is the compute plus a0/bw0 + a1/bw1 with
  a_d the bytes a chunk sends on dimension d; under c0 bw0 + c1 bw1 <= B the optimum is
  bw_d = B sqrt(a_d / c_d) / (sqrt(a0 c0) + sqrt(a1 c1)) and the period P + (sqrt(a0 c0) + sqrt(a1 c1))^2 / B.
  Placed on a grid of options around it, the solve must find it to 1e-6.
- Against brute force on small random instances: every (endpoint, bandwidths) design within the budgets
  replayed, and the solve's answer must be the best (minimizing time) or the cheapest network meeting a
  target (minimizing network cost); more network budget is never slower.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
from conftest import problem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codesign import InfeasibleError, solve
from codesign.platform.endpoint import Engine, Option, design_area_mm2, design_of
from codesign.platform.network import Network, grid, key, topology_at
from codesign.platform.topology import Dim, Topology
from codesign.problem.load import parse_problem
from codesign.problem.model import Objective, at_design
from codesign.sim.replay import simulate
from codesign.workload.model import Comm, Compute, Layer, Workload

US = 1e-6
SETTINGS = settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def two_dims(S: float, p0: int, p1: int, c0: float, c1: float, B: float, grid0, grid1) -> dict:
    """The hand-solvable problem as a problem document: one layer whose weight-gradient all-reduce of S
    bytes spans two rings, blocking the next iteration's forward; ideal engine; no latency; one chunk."""
    return {"name": "two_dims", "workload": {"name": "one", "parallelism": "data", "layers": [
        {"name": "l", "forward": "10 us", "input_grad": "0 us", "weight_grad": "10 us", "update": "0 us",
         "weight_grad_comm": {"collective": "all_reduce", "bytes": f"{S!r} B"}}]},
        "topology": {"cost_budget": B, "dims": [
            {"name": "a", "kind": "ring", "size": p0, "bandwidth": [f"{g!r} B/s" for g in grid0], "cost_per_gbps": c0},
            {"name": "b", "kind": "ring", "size": p1, "bandwidth": [f"{g!r} B/s" for g in grid1],
             "cost_per_gbps": c1}]},
        "engine": {"type": "ideal"}, "schedule": {"order": "lifo", "chunks": 1}}


@pytest.mark.parametrize("S,p0,p1,c0,c1,B", [(64 * 2**20, 4, 4, 1.0, 4.0, 800.0), (3e7, 8, 2, 2.5, 0.7, 333.0)])
def test_closed_form_bandwidth_split(S, p0, p1, c0, c1, B):
    # a chunk's bytes per dimension: reduce-scatter and all-gather on the first ring, all-reduce of
    # the 1/p0 shard on the second (platform/collectives.py)
    a0 = 2 * S * (p0 - 1) / p0
    a1 = 2 * S / p0 * (p1 - 1) / p1
    root = math.sqrt(a0 * c0) + math.sqrt(a1 * c1)
    B_bps = B * 1e9  # cost per GB/s: the budget buys B GB/s of unit cost
    bw = (B_bps * math.sqrt(a0 / c0) / root, B_bps * math.sqrt(a1 / c1) / root)
    assert c0 * bw[0] + c1 * bw[1] == pytest.approx(B_bps, rel=1e-12)
    steps = (0.5, 0.8, 0.95, 1.0, 1.05, 1.25, 2.0)
    p = parse_problem(two_dims(S, p0, p1, c0, c1, B, [bw[0] * f for f in steps], [bw[1] * f for f in steps]),
                      "two_dims.yaml")
    s = solve(p)
    assert s.status == "optimal"
    assert s.network.bandwidth[0] == pytest.approx(bw[0], rel=1e-6)
    assert s.network.bandwidth[1] == pytest.approx(bw[1], rel=1e-6)
    assert s.iteration_time_s == pytest.approx(20 * US + root**2 / B_bps, rel=1e-6)
    assert s.network.total == pytest.approx(B, rel=1e-9)
    assert s.bound_s <= s.iteration_time_s * (1 + 1e-9)


# ------------------------------------------------------------------ against brute force

@st.composite
def instances(draw):
    layers = []
    for i in range(draw(st.integers(1, 3))):
        t = [draw(st.floats(1.0, 20.0)) * US for _ in range(3)]
        comm = Comm("all_reduce", draw(st.floats(0.2, 4.0)) * 1e6)
        layers.append(Layer(f"l{i}", Compute(time_s=t[0]), Compute(time_s=t[1]), Compute(time_s=t[2]),
                            weight_grad_comm=comm, update_s=1 * US))
    w = Workload("random", "data", tuple(layers))
    ndims = draw(st.integers(1, 2))
    dims, bws, costs = [], [], []
    for d in range(ndims):
        opts = sorted(draw(st.lists(st.sampled_from([12.5e9, 25e9, 50e9, 100e9, 200e9]), min_size=1, max_size=3,
                                    unique=True)))
        bws.append(tuple(opts))
        costs.append(draw(st.sampled_from([0.5, 1.0, 3.0])))
        dims.append(Dim(f"d{d}", draw(st.sampled_from(["ring", "switch"])), draw(st.integers(2, 4)), 1, opts[-1],
                        draw(st.floats(0, 5e-7))))
    topo = Topology(tuple(dims))
    dma = tuple(Option(v, area_mm2=a) for v, a in [(50e9, 0.2), (200e9, 0.6)][:draw(st.integers(1, 2))])
    eng = Engine("ace", {"sram": (Option(8e6),), "alu": (Option(400e9),), "dma": dma},
                 area_budget_mm2=draw(st.one_of(st.none(), st.just(0.5))))
    full = sum(c * b[-1] / 1e9 for c, b in zip(costs, bws))
    low = sum(c * b[0] / 1e9 for c, b in zip(costs, bws))
    budget = low + draw(st.floats(0.0, 1.0)) * (full - low)
    net = Network(tuple(bws), tuple(costs), budget, "$", (None,) * ndims)
    chunks = draw(st.integers(1, 3))
    p = dataclasses.replace(problem(w, topo, eng, chunks=chunks), network=net)
    return p


def designs(p) -> list[dict[str, int]]:
    """Every (endpoint, network) design within the budgets."""
    space = {**p.engine.resources, **p.network.resources(p.topology)}
    out = []
    for combo in itertools.product(*(range(len(o)) for o in space.values())):
        c = dict(zip(space, combo))
        if p.engine.area_budget_mm2 is not None and design_area_mm2(p.engine, c) > p.engine.area_budget_mm2 + 1e-9:
            continue
        if sum(p.network.costs(p.topology, c)) > p.network.budget * (1 + 1e-12) + 1e-12:
            continue
        out.append(c)
    return out


def simulated(p, c) -> float:
    return simulate(at_design(p, c), design_of(p.engine, c)).period_s


@SETTINGS
@given(instances())
def test_the_answer_is_the_best_simulated_design(p):
    every = designs(p)
    periods = [simulated(p, c) for c in every]
    best = min(periods)
    s = solve(p)
    assert s.status == "optimal"
    assert s.iteration_time_s == pytest.approx(best, rel=2e-4)  # zero regret, within the MIP gap
    assert s.iteration_time_s == pytest.approx(simulated(p, s.choice), rel=1e-12)  # what it says is the replay
    assert s.bound_s <= s.iteration_time_s * (1 + 1e-9)
    assert s.network.total <= p.network.budget * (1 + 1e-9) + 1e-9


@SETTINGS
@given(instances(), st.floats(1.0, 1.5))
def test_least_network_cost_meeting_a_target_is_the_brute_force_one(p, slack):
    p = dataclasses.replace(p, network=dataclasses.replace(p.network, budget=None))  # the target alone
    every = designs(dataclasses.replace(p, network=dataclasses.replace(p.network, budget=math.inf)))
    periods = [simulated(p, c) for c in every]
    target = min(periods) * slack
    s = solve(dataclasses.replace(p, objective=Objective("network_cost", target)))
    cheapest = min(sum(p.network.costs(p.topology, c)) for c, t in zip(every, periods) if t <= target * (1 + 1e-9))
    assert s.network.total == pytest.approx(cheapest, rel=1e-6, abs=1e-9)
    assert s.iteration_time_s <= target * (1 + 1e-9)


@SETTINGS
@given(instances(), st.floats(0.0, 1.0))
def test_more_budget_is_never_slower(p, more):
    full = sum(c * b[-1] / 1e9 for c, b in zip(p.network.cost_per_gbps, p.network.bandwidths))
    richer = dataclasses.replace(p, network=dataclasses.replace(
        p.network, budget=p.network.budget + more * (full - p.network.budget)))
    assert solve(richer).iteration_time_s <= solve(p).iteration_time_s * (1 + 2e-4)


def test_a_budget_no_network_meets_is_infeasible_with_the_shortfall():
    p = parse_problem(two_dims(1e6, 4, 4, 1.0, 1.0, 10.0, [50e9, 100e9], [50e9]), "t.yaml")
    with pytest.raises(InfeasibleError, match=r"network cost budget 10 \$ < cheapest network 100 \$"):
        solve(p)


# ------------------------------------------------------------------ ranges

@given(st.floats(1e9, 1e11), st.floats(1.0, 50.0), st.floats(0.001, 0.5))
@settings(max_examples=50, deadline=None)
def test_a_range_grid_is_within_its_tolerance_of_every_bandwidth(lo, span, tol):
    g = grid(lo, lo * span, tol)
    assert g[0] == lo and g[-1] == lo * span
    assert all(b / a <= (1 + tol) * (1 + 1e-12) for a, b in zip(g, g[1:]))


def test_a_range_narrower_than_rounding_is_its_two_ends():
    lo = 100e9
    assert grid(lo, lo * (1 + 1e-15), 0.02) == (lo, lo * (1 + 1e-15))
    assert grid(lo, lo, 0.02) == (lo,)


def test_a_network_built_in_code_without_tolerances_lists_every_dimension_as_options():
    net = Network(((50e9, 100e9), (25e9,)), (1.0, 0.0))
    assert net.tolerance == (None, None)


def test_a_range_becomes_a_grid_and_topology_at_picks_from_it():
    doc = two_dims(1e6, 4, 4, 1.0, 1.0, 1000.0, [50e9], [50e9])
    doc["topology"]["tolerance"] = 0.1
    doc["topology"]["dims"][0]["bandwidth"] = {"min": "10 GB/s", "max": "100 GB/s"}
    p = parse_problem(doc, "t.yaml")
    g = p.network.bandwidths[0]
    assert len(g) == math.ceil(math.log(10) / math.log(1.1)) + 1 and p.network.tolerance == (0.1, None)
    assert topology_at(p.topology, p.network, {key(0): 3}).dims[0].link_bandwidth == g[3]
    s = solve(p)
    assert s.network.link_bandwidth[0] in g and s.network.options == (len(g), 1)


# ------------------------------------------------------------------ the command line and the shipped problems

def test_solve_prints_bandwidths_endpoint_cost_breakdown_and_gap(capsys):
    from conftest import ROOT

    from codesign.cli import main
    assert main(["solve", str(ROOT / "problems" / "libra" / "gpt3_3d.yaml")]) == 0
    out = capsys.readouterr().out
    net = [ln for ln in out.splitlines() if "dim " in ln and "per NPU" in ln]
    assert len(net) == 3 and all("of " in ln and "options" in ln and " $" in ln for ln in net)
    assert "network cost " in out and " = " in out and "of budget 3000 $" in out
    assert "design          SRAM" in out
    assert "solver          optimal" in out and "gap 0.000%" in out


def test_json_carries_the_network(capsys):
    import json

    from conftest import ROOT

    from codesign.cli import main
    assert main(["solve", str(ROOT / "problems" / "libra" / "gpt3_3d.yaml"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    net = doc["network"]
    assert [d["name"] for d in net["dims"]] == ["package", "node", "pod"]
    assert net["cost"] == pytest.approx(sum(d["cost"] for d in net["dims"])) and net["cost"] <= net["budget"]


@pytest.mark.parametrize("change,key,phrase", [
    (lambda t: t["dims"][0].update(bandwidth={"min": "100 GB/s", "max": "50 GB/s"}), "topology.dims[0].bandwidth.max",
     "expected a bandwidth >= min"),
    (lambda t: t["dims"][0].update(bandwidth=[]), "topology.dims[0].bandwidth", "empty list"),
    (lambda t: t["dims"][0].update(bandwidth=["50 GB/s", "50 GB/s"]), "topology.dims[0].bandwidth", "listed twice"),
    (lambda t: t["dims"][1].update(cost_per_gbps=-1), "topology.dims[1].cost_per_gbps", "expected a number >= 0"),
    (lambda t: t.update(cost_budget="lots"), "topology.cost_budget", "expected a number"),
    (lambda t: t.update(tolerance=0, cost_budget=5), "topology.tolerance", "expected a number > 0"),
    (lambda t: t["dims"][0].update(bandwidth={"min": "1 MB/s", "max": "100 GB/s"}) or t.update(tolerance=0.001),
     "topology.dims[0].bandwidth", "grid points"),
    # counted before any point is made: trillions of points are refused at once, not built
    (lambda t: t["dims"][0].update(bandwidth={"min": "1 GB/s", "max": "400 GB/s"}) or t.update(tolerance=1e-12),
     "topology.dims[0].bandwidth", "5991464547112 grid points"),
])
def test_bad_network_input_is_one_line_naming_the_key(tmp_path, capsys, change, key, phrase):
    import yaml

    from codesign.cli import main
    doc = two_dims(1e6, 4, 4, 1.0, 1.0, 1000.0, [50e9, 100e9], [50e9])
    change(doc["topology"])
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{key}:" in err[0] and phrase in err[0] and str(path) in err[0], err


def test_minimizing_network_cost_needs_a_network(tmp_path, capsys):
    import yaml

    from codesign.cli import main
    doc = two_dims(1e6, 4, 4, 0.0, 0.0, 1000.0, [50e9], [50e9])
    del doc["topology"]["cost_budget"]
    doc["objective"] = {"minimize": "network_cost", "iteration_time_target": "1 ms"}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(path)]) == 2
    assert "objective.minimize" in capsys.readouterr().err


def test_pareto_of_network_cost_and_time_is_a_staircase(tmp_path):
    from codesign.explore.pareto import pareto_front
    p = parse_problem(two_dims(3e7, 4, 4, 1.0, 4.0, 1e9, [25e9, 50e9, 100e9], [12.5e9, 25e9, 50e9]), "t.yaml")
    front = pareto_front(p, "network_cost", "iteration_time")
    xs = [pt.x for pt in front.points]
    ys = [pt.y for pt in front.points]
    assert len(xs) >= 3 and xs == sorted(xs) and ys == sorted(ys, reverse=True)
    for pt in front.points:  # each point: no network as cheap is faster (brute force over the 9 networks)
        cheaper = [c for c in designs(p) if sum(p.network.costs(p.topology, c)) <= pt.x * (1 + 1e-9)]
        assert pt.y <= min(simulated(p, c) for c in cheaper) * (1 + 2e-4)


def test_the_readme_network_block_is_what_solve_prints(capsys):
    """README, "Co-designing the network": each shown line starts a printed line (up to "...")."""
    import re

    from conftest import ROOT

    from codesign.cli import main
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Co-designing the network"):]
    section = section[:section.index("\n### ", 10)]
    shown = [ln[4:] for ln in section.splitlines() if ln.startswith("    ")]
    assert len(shown) >= 6
    assert main(["solve", str(ROOT / "problems" / "libra" / "msft1t_3d.yaml")]) == 0
    norm = lambda t: re.sub(r"\s+", " ", t).strip()  # noqa: E731
    printed = [norm(x) for x in capsys.readouterr().out.splitlines()]
    for line in shown:
        prefix = norm(line.split("...")[0].rstrip(" ,;("))
        assert any(p.startswith(prefix) for p in printed), line


@SETTINGS
@given(instances(), st.randoms(use_true_random=False))
def test_the_continuous_bound_is_below_every_bandwidth_of_the_ranges(p, rnd):
    """With ranges, the solve's continuous bound (the relaxation over each grid cell) is below the replay of
    designs whose bandwidths are anywhere in the ranges, off the grid too, and below the answer."""
    lo_hi = [(b[0], b[-1] * 2) for b in p.network.bandwidths]
    net = dataclasses.replace(p.network, bandwidths=tuple(grid(lo, hi, 0.25) for lo, hi in lo_hi),
                              tolerance=(0.25,) * len(lo_hi), budget=None)
    q = dataclasses.replace(p, network=net)
    s = solve(q)
    assert s.continuous_bound_s is not None and s.continuous_bound_s <= s.iteration_time_s * (1 + 1e-9)
    space = list(itertools.product(*(range(len(o)) for o in p.engine.resources.values())))
    for _ in range(8):
        bws = [lo * (hi / lo) ** rnd.random() for lo, hi in lo_hi]  # anywhere in the range, off the grid
        topo = dataclasses.replace(p.topology, dims=tuple(dataclasses.replace(d, link_bandwidth=bw)
                                                          for d, bw in zip(p.topology.dims, bws)))
        c = dict(zip(p.engine.resources, rnd.choice(space)))
        if p.engine.area_budget_mm2 is not None and design_area_mm2(p.engine, c) > p.engine.area_budget_mm2 + 1e-9:
            continue
        t = simulate(dataclasses.replace(p, topology=topo, network=None), design_of(p.engine, c)).period_s
        assert s.continuous_bound_s <= t * (1 + 1e-9)


def test_simulate_replays_a_saved_solutions_bandwidths(tmp_path, capsys):
    import yaml
    from conftest import ROOT

    from codesign.cli import main
    fixed_engine = tmp_path / "p.yaml"
    fixed_engine.write_text(yaml.safe_dump(two_dims(1e6, 4, 4, 1.0, 1.0, 1000.0, [50e9, 100e9], [50e9])))
    assert main(["simulate", str(fixed_engine)]) == 2
    assert "topology.dims[0].bandwidth: 2 bandwidths" in capsys.readouterr().err
    prob = str(ROOT / "problems" / "libra" / "msft1t_3d.yaml")
    assert main(["solve", prob, "--out", str(tmp_path / "s")]) == 0
    solved = capsys.readouterr().out
    assert main(["simulate", prob, "--solution", str(tmp_path / "s" / "solution.json")]) == 0
    out = capsys.readouterr().out
    t = [ln for ln in solved.splitlines() if ln.startswith("iteration time")][0].split()[2:4]
    assert out.splitlines()[1].split()[2:4] == t  # the same period, replayed at the chosen bandwidths


def test_validate_names_the_open_bandwidths(capsys):
    from conftest import ROOT

    from codesign.cli import main
    assert main(["validate", str(ROOT / "problems" / "libra" / "gpt3_3d.yaml")]) == 0
    assert "sizing bandwidth package (6 options), node (5 options), pod (4 options) under 3000 $" in \
        capsys.readouterr().out


def test_a_sweep_says_which_network_won(tmp_path):
    import codesign
    doc = two_dims(1e6, 4, 4, 1.0, 1.0, 1000.0, [25e9, 50e9, 100e9], [50e9])
    df = codesign.sweep(doc, {"topology.cost_budget": [300.0, 1000.0]}, executor="serial", out=tmp_path / "s.csv")
    assert "a_link_bandwidth_bytes_per_s" in df.columns and "b_link_bandwidth_bytes_per_s" not in df.columns
    for _, row in df.iterrows():
        sol = solve(parse_problem({**doc, "topology": {**doc["topology"], "cost_budget": row["topology.cost_budget"]}},
                                  "t.yaml"))
        assert row["a_link_bandwidth_bytes_per_s"] == sol.network.link_bandwidth[0]
        assert row["network_cost"] == pytest.approx(sol.network.total)
