"""Pareto fronts against brute force, shadow prices against finite differences, the energy objective."""
from __future__ import annotations

import dataclasses
import itertools
import json
import runpy
import subprocess
import sys

import pytest
from conftest import ROOT

import codesign
from codesign.explore.pareto import metric, pareto_front
from codesign.pipeline.shadow import _Platform, resources, shadow_prices, solve_lp

QUICK = str(ROOT / "problems" / "quickstart.yaml")


def every_design(problem: codesign.Problem) -> list[codesign.Solution]:
    """Each design of the catalog solved alone (its catalog cut to the one option), budgets lifted."""
    eng = dataclasses.replace(problem.engine, area_budget_mm2=None, power_budget_w=None)
    out = []
    for combo in itertools.product(*(range(len(o)) for o in eng.resources.values())):
        res = {r: (opts[i],) for (r, opts), i in zip(eng.resources.items(), combo)}
        out.append(codesign.solve(dataclasses.replace(problem, engine=dataclasses.replace(eng, resources=res))))
    return out


def brute_front(sols: list[codesign.Solution], x: str, y: str) -> list[tuple[float, float]]:
    pts = sorted({(round(metric(s, x), 9), round(metric(s, y), 12)) for s in sols})
    front, best = [], float("inf")
    for px, py in pts:
        if py < best:
            front.append((px, py))
            best = py
    return front


@pytest.fixture(scope="module")
def quick() -> codesign.Problem:
    return codesign.load_problem(QUICK)


@pytest.fixture(scope="module")
def designs(quick) -> list[codesign.Solution]:
    return every_design(quick)


@pytest.mark.parametrize("x, y", [("area", "iteration_time"), ("iteration_time", "power"), ("power", "area")])
def test_exact_walk_finds_exactly_the_brute_force_front(quick, designs, x, y):
    front = pareto_front(quick, x, y)
    got = [(round(p.x, 9), round(p.y, 12)) for p in front.points]
    assert got == brute_front(designs, x, y)
    assert f"min-{x.replace('iteration_time', 'time')}" in front.points[0].role
    assert front.points[-1].role.endswith("end")
    assert front.solves <= 2 * len(got) + 3  # a walk, not an enumeration of the 8 designs
    assert front.dropped == 0


def test_evenly_spaced_epsilons_give_points_of_the_front_and_both_ends(quick, designs):
    exact = brute_front(designs, "area", "iteration_time")
    front = pareto_front(quick, "area", "iteration_time", points=3)
    got = [(round(p.x, 9), round(p.y, 12)) for p in front.points]
    assert set(got) <= set(exact) and got[0] == exact[0] and got[-1] == exact[-1]
    assert front.as_posed is not None and front.as_posed.area_mm2 <= 3.0 + 1e-9  # the file's own 3 mm^2 budget
    assert front.x_budget == 3.0


def test_bad_axes_are_spec_errors(quick):
    with pytest.raises(codesign.SpecError, match="must differ"):
        pareto_front(quick, "area", "area")
    with pytest.raises(codesign.SpecError, match="expected one of"):
        pareto_front(quick, "energy", "area")
    with pytest.raises(codesign.SpecError, match=r"from 2 \(the two ends\)"):
        pareto_front(quick, points=1)


def test_pareto_cli_plots_and_lists_the_ends(tmp_path):
    r = subprocess.run([sys.executable, "-m", "codesign", "pareto", QUICK, "--x", "area", "--y", "iteration_time",
                        "--out", str(tmp_path / "f.png"), "--csv", str(tmp_path / "f.csv")], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "min-area end" in r.stdout and "min-time end" in r.stdout and "as posed" in r.stdout
    assert (tmp_path / "f.png").stat().st_size > 10_000
    assert len((tmp_path / "f.csv").read_text().splitlines()) == 1 + 5


@pytest.mark.parametrize("name", ["resnet50_ace_torus3d", "resnet50_baseline_torus3d"])
def test_shadow_prices_are_the_lps_derivatives_and_the_replays_where_nothing_is_shared(name):
    """The duals' chain rule equals a one-sided difference of the platform LP re-solved (a step of 1e-6,
    inside the piecewise-linear LP's current piece). Where the chosen design shares nothing (ResNet-50's
    ACE: no pool ever held a phase back), the LP is the replay and the price is the replay's derivative;
    where phases share pools (the baseline), a price that differs from the replay's is flagged."""
    p = codesign.load_problem(ROOT / "problems" / f"{name}.yaml")
    s = codesign.solve(p)
    rep = shadow_prices(p, s)
    plat = _Platform(p, s)
    assert rep.iteration_time_s == pytest.approx(s.iteration_time_s, rel=1e-9)
    T0 = solve_lp(plat.lp(p))[0] * 1e-6
    shared = plat.sim.limited["memory"] or plat.sim.limited["reduction"]
    prices = {q.param: q for q in rep.prices}
    for path, _, _, value, setter in resources(p, s.choice):
        h = value * 1e-6
        lp = (solve_lp(plat.lp(setter(p, value + h)))[0] * 1e-6 - T0) / h
        assert prices[path].dT_dvalue == pytest.approx(lp, rel=1e-3, abs=1e-22), path
        if not shared:
            assert not prices[path].kink and prices[path].one_sided == pytest.approx(lp, rel=1e-3, abs=1e-22), path
        elif prices[path].one_sided != pytest.approx(prices[path].dT_dvalue, rel=1e-3, abs=1e-22):
            assert prices[path].kink, path
    assert shared == (name == "resnet50_baseline_torus3d")
    link0 = prices["topology.dims[0].bandwidth"]
    assert link0.saves_us_per_step > 10  # dim 0 carries the most: one more GB/s saves tens of microseconds
    assert 0 < link0.plus_step_us < link0.saves_us_per_step  # convex in bandwidth: a whole step saves less
    replayed = (rep.iteration_time_s - plat.replay(resources(p, s.choice)[1][4](p, link0.value + 1e9))) * 1e6
    assert link0.plus_step_us == pytest.approx(replayed)


def test_at_a_kink_the_dual_price_is_a_subgradient_and_is_flagged(quick):
    """T is convex in the LP's right-hand sides, so a dual's price never exceeds the one-sided derivative for
    more of the resource (it may claim more saving where critical paths tie); where they differ it says so."""
    s = codesign.solve(quick)
    rep = shadow_prices(quick, s)
    plat = _Platform(quick, s)
    for q in rep.prices:
        h = q.value * 1e-7
        setter = {r[0]: r[4] for r in resources(quick, s.choice)}[q.param]
        d_plus = (plat.replay(setter(quick, q.value + h)) - rep.iteration_time_s) / h
        assert q.one_sided == pytest.approx(d_plus, rel=1e-4, abs=1e-24), q.param
        assert q.dT_dvalue <= d_plus + 1e-6 * abs(d_plus) + 1e-24, q.param
        if not q.kink:
            assert q.dT_dvalue == pytest.approx(d_plus, rel=1e-3, abs=1e-24), q.param
    sram = next(q for q in rep.prices if q.param == "engine.sram")
    assert sram.saves_us_per_step == 0 and sram.plus_step_us == 0  # its SRAM never held a chunk back


def test_shadow_cli_json_and_unknown_resource():
    r = subprocess.run([sys.executable, "-m", "codesign", "shadow", QUICK, "--json", "--only",
                        "topology.dims[1].bandwidth"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [q["param"] for q in doc["prices"]] == ["topology.dims[1].bandwidth"]
    assert doc["prices"][0]["saves_us_per_step"] > 0
    bad = subprocess.run([sys.executable, "-m", "codesign", "shadow", QUICK, "--only", "engine.sramm"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "engine.sram" in bad.stderr and "Traceback" not in bad.stderr


def test_energy_objective_hook_equals_the_best_point_of_the_power_time_front():
    mod = runpy.run_path(str(ROOT / "examples" / "energy_delay.py"))
    e_milp, e_front = mod["main"](QUICK)
    assert e_milp == pytest.approx(e_front, rel=1e-9)
    p = codesign.load_problem(QUICK)
    t_opt = codesign.solve(p)
    assert e_milp < t_opt.power_w * t_opt.iteration_time_s * 0.9  # not simply the time-optimal design


def test_a_point_a_time_limit_stopped_short_is_shown_so_and_the_answer_as_posed_takes_its_place(monkeypatch):
    """The front's solves (each given the front's family) that reach the fastest design come back unproven with a
    worse one (twice its area, the same time), as a time limit may leave them; the answer as posed (the problem's
    own solve, no family) finds the fastest design. It is a design of the front's problem too: it takes the
    unproven point's place as the min-time end. Points not proven say so in their role and the front's notes."""
    from codesign.explore import pareto

    problem = codesign.load_problem(QUICK)
    honest = pareto_front(problem)
    fastest, smallest = honest.points[-1].solution, honest.points[0].solution
    real = pareto.solve

    def solve(q, **kwargs):
        s = real(q, **kwargs)
        if "family" in kwargs and s.choice == fastest.choice:
            return dataclasses.replace(s, status="time_limit", gap=0.01, area_mm2=s.area_mm2 * 2)
        if "family" in kwargs and s.choice == smallest.choice:
            return dataclasses.replace(s, status="time_limit", gap=0.01)
        return s

    monkeypatch.setattr(pareto, "solve", solve)
    front = pareto_front(problem)
    assert front.as_posed is not None and front.as_posed.choice == fastest.choice
    assert all(p.solution.area_mm2 != fastest.area_mm2 * 2 for p in front.points)  # the unproven one is gone
    end = front.points[-1]
    assert (end.solution.choice, end.solution.status, end.role) == (fastest.choice, "optimal", "min-time end")
    assert front.points[0].role == "min-area end (not proven: time_limit)"
    assert front.notes and "not proven optimal" in front.notes[0]


def test_shadow_says_when_its_design_was_not_proven(monkeypatch, capsys):
    """Prices are at the solved design; when a time limit stopped the solve short of a proof, the text says so and
    the JSON carries the status and gap."""
    from codesign.cli import main
    from codesign.pipeline import solve as solve_mod

    real = solve_mod.solve
    seen = {}

    def unproven(problem, **kwargs):
        seen.update(kwargs)
        return dataclasses.replace(real(problem), status="time_limit", gap=0.02)

    monkeypatch.setattr(solve_mod, "solve", unproven)
    assert main(["shadow", QUICK]) == 0
    out = capsys.readouterr().out
    assert "note: the design was not proven optimal (time_limit, gap 2.00%)" in out
    assert seen.get("started") is not None  # the limit counts from the command's start
    assert main(["shadow", QUICK, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["status"], doc["gap"]) == ("time_limit", 0.02)


def test_a_resource_at_its_limit_is_said_so_not_priced_beyond_it(tmp_path, capsys):
    """79 of 80 cores and all of HBM for communication: one more core (none left for compute) or 0.01 more HBM
    share (1.01) is no design, so nothing is replayed for it and the table says so."""
    from codesign.cli import main
    text = (ROOT / "problems/resnet50_baseline_torus3d.yaml").read_text()
    workload = str(ROOT / "problems/workloads/Resnet50_DataParallel.txt")
    edge = (text.replace("workloads/Resnet50_DataParallel.txt", workload)
            .replace("comm_cores: [2, 4, 8, 16]", "comm_cores: [79]")
            .replace("comm_hbm_share: [0.1, 0.2, 0.3, 0.4, 0.5]", "comm_hbm_share: [1.0]"))
    assert "[79]" in edge and "[1.0]" in edge
    f = tmp_path / "edge.yaml"
    f.write_text(edge)
    rep = shadow_prices(codesign.load_problem(str(f)), codesign.solve(codesign.load_problem(str(f))))
    by = {p.param: p for p in rep.prices}
    for path in ("engine.comm_cores", "engine.comm_hbm_share"):
        assert by[path].at_limit and by[path].plus_step_us is None and by[path].one_sided is None
    assert not any(p.at_limit for p in rep.prices if not p.param.startswith("engine."))
    assert main(["shadow", str(f), "--only", "engine.comm_cores"]) == 0
    assert "at its limit: no more is possible" in capsys.readouterr().out
