"""Workload suites (docs/suites.md): the suite optimum against a brute force over the catalog for every
objective, a suite of one against the single-workload solve, and bad input as one line."""
from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
import yaml
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codesign.cli.main import main
from codesign.errors import InfeasibleError
from codesign.milp.data import model_data
from codesign.milp.designs import fits_budgets
from codesign.pipeline.solve import policy_evaluator, solve
from codesign.platform.endpoint import design_area_mm2, design_power_w
from codesign.problem.load import parse_problem
from codesign.suite.search import solve_suite
from codesign.suite.spec import parse_suite

QUICK = yaml.safe_load((ROOT / "problems" / "quickstart.yaml").read_text())


def _layers(scale: float, nbytes: float) -> list[dict]:
    """Four layers of compute ``scale`` x 10 us each, all-reducing ``nbytes`` MiB each."""
    return [{"name": f"fc{i}", "forward": f"{10 * scale} us", "input_grad": f"{10 * scale} us",
             "weight_grad": f"{10 * scale} us", "update": "1 us",
             "weight_grad_comm": {"collective": "all_reduce", "bytes": f"{nbytes * (i + 1)} MiB"}} for i in range(3)]


def _suite_doc(objective: str, entries: list[tuple[str, float, float, float, str | None]]) -> dict:
    """The quickstart platform with a three-option SRAM and one entry per (name, weight, compute scale, MiB,
    target)."""
    doc = {k: copy.deepcopy(v) for k, v in QUICK.items() if k not in ("workload", "name", "description")}
    doc["engine"]["sram"].insert(1, {"size": "1 MiB", "area": "0.45 mm^2", "power": "0.1 W"})
    doc["objective"] = {"minimize": objective}
    doc["workloads"] = []
    for name, w, scale, mib, target in entries:
        e = {"name": name, "weight": w, "workload": {"name": name, "parallelism": "data",
                                                     "layers": _layers(scale, mib)}}
        if target is not None:
            e["iteration_time_target"] = target
        doc["workloads"].append(e)
    return doc


def _brute(suite) -> tuple[float, list[dict[str, int]], np.ndarray, int]:
    """Every design of the catalog simulated on every workload: the least suite objective, the designs
    reaching it (within 1e-7), each workload's own best (s) and how many designs fit the budgets."""
    mds = [model_data(p) for p in suite.problems]
    space = mds[0].space
    names = [r for r in space if len(space[r]) > 1]
    p0 = suite.problems[0]
    designs = []
    periods = []
    for combo in itertools.product(*(range(len(space[r])) for r in names)):
        c = {r: 0 for r in space} | dict(zip(names, combo))
        if not fits_budgets(p0, c):
            continue
        periods.append([policy_evaluator(md)(c)[1] * 1e-6 for md in mds])
        designs.append(c)
    T = np.array(periods)  # designs x workloads
    w = np.array(suite.weights)
    own = T.min(axis=0)
    ok = np.all([T[:, i] <= t * (1 + 1e-9) if t is not None else np.ones(len(T), bool)
                 for i, t in enumerate(suite.targets_s)], axis=0)
    f = {"weighted_time": T @ w, "geomean_slowdown": np.exp((np.log(T / own) @ w) / w.sum()),
         "max_slowdown": (T / own).max(axis=1),
         "area": np.array([design_area_mm2(p0.engine, c) for c in designs]),
         "power": np.array([design_power_w(p0.engine, c) for c in designs])}[suite.objective]
    f = np.where(ok, f, np.inf)
    best = float(f.min())
    return best, [designs[i] for i in np.flatnonzero(f <= best * (1 + 1e-7))], own, len(designs)


@pytest.mark.parametrize("objective", ["weighted_time", "geomean_slowdown", "max_slowdown", "area", "power"])
def test_the_suite_optimum_is_the_brute_force_optimum(objective, tmp_path):
    targets = ("0.35 ms", "0.9 ms") if objective in ("area", "power") else (None, None)
    doc = _suite_doc(objective, [("small", 1.0, 1.0, 2.0, targets[0]), ("wide", 2.0, 3.0, 6.0, targets[1])])
    doc["engine"]["area_budget"] = "2 mm^2"  # (SRAM, ALU and DMA compete for it)
    suite = parse_suite(doc, tmp_path / "s.yaml")
    res = solve_suite(suite)
    best, designs, own, n = _brute(suite)
    assert res.status == "optimal" and res.gap == 0.0
    assert res.objective == pytest.approx(best, rel=1e-9)
    assert res.choice in designs
    assert res.own_best_s == pytest.approx(tuple(own), rel=1e-9)
    assert res.simulations < n * len(suite.problems)  # the floors spared some replays


def test_an_unmeetable_target_is_proven_infeasible(tmp_path):
    doc = _suite_doc("area", [("small", 1.0, 1.0, 2.0, "1 us"), ("wide", 1.0, 3.0, 6.0, "1 s")])
    with pytest.raises(InfeasibleError, match="small: target"):
        solve_suite(parse_suite(doc, tmp_path / "s.yaml"))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.sampled_from([1.5, 2.0, 2.6, 3.0]), bw=st.sampled_from(["12.5 GB/s", "25 GB/s", "50 GB/s"]),
       scale=st.sampled_from([0.5, 1.0, 4.0]), mib=st.sampled_from([1.0, 4.0]))
def test_a_suite_of_one_is_the_single_workload_solve(budget, bw, scale, mib, tmp_path):
    doc = _suite_doc("weighted_time", [("only", 1.0, scale, mib, None)])
    doc["engine"]["area_budget"] = f"{budget} mm^2"
    doc["topology"]["dims"][1]["bandwidth"] = bw
    suite = parse_suite(doc, tmp_path / "s.yaml")
    single = {k: v for k, v in doc.items() if k not in ("workloads", "objective")}
    single["workload"] = doc["workloads"][0]["workload"]
    sol = solve(parse_problem(single, tmp_path / "one.yaml"))
    res = solve_suite(suite)
    assert res.status == sol.status == "optimal"
    assert res.choice == sol.choice
    assert res.periods_s[0] == pytest.approx(sol.iteration_time_s, rel=1e-9)
    assert res.own_best_s[0] == pytest.approx(sol.iteration_time_s, rel=1e-9)


def _error(tmp_path, capsys, doc: dict, text: str | None = None) -> str:
    f = tmp_path / "bad.yaml"
    f.write_text(text if text is not None else yaml.safe_dump(doc, sort_keys=False))
    assert main(["solve", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_bad_suites_are_one_line_naming_the_key(tmp_path, capsys):
    base = _suite_doc("weighted_time", [("a", 1.0, 1.0, 2.0, None), ("b", 1.0, 2.0, 2.0, None)])
    dup = copy.deepcopy(base)
    dup["workloads"][1]["name"] = "a"
    assert "workloads[1].name: expected a name" in _error(tmp_path, capsys, dup)
    zero = copy.deepcopy(base)
    zero["workloads"][0]["weight"] = 0
    assert "workloads[0].weight: expected a number > 0" in _error(tmp_path, capsys, zero)
    both = copy.deepcopy(base)
    both["workload"] = both["workloads"][0]["workload"]
    assert "workload: not allowed with 'workloads'" in _error(tmp_path, capsys, both)
    area = copy.deepcopy(base)
    area["objective"] = {"minimize": "area"}
    assert "workloads[0].iteration_time_target: expected a target" in _error(tmp_path, capsys, area)
    inner = copy.deepcopy(base)
    inner["workloads"][1]["workload"]["layers"][0]["forward"] = "fast"
    assert "workloads[1].workload.layers[0].forward:" in _error(tmp_path, capsys, inner)
    unknown = copy.deepcopy(base)
    unknown["workloads"][0]["wieght"] = 1
    assert "workloads[0].wieght: unknown key" in _error(tmp_path, capsys, unknown)
    opt = copy.deepcopy(base)
    opt["schedule"]["order"] = "optimize"
    assert "schedule.order: expected lifo or fifo in a suite" in _error(tmp_path, capsys, opt)
    empty = copy.deepcopy(base)
    empty["workloads"] = []
    assert "workloads: expected a non-empty list" in _error(tmp_path, capsys, empty)
    f = tmp_path / "lines.yaml"
    f.write_text("topology: {dims: [{name: a, kind: ring, size: 2, bandwidth: 1 GB/s}]}\nengine: {type: ideal}\n"
                 "workloads:\n- name: x\n  workload: {layers: [{name: l}]}\n- name: x\n"
                 "  workload: {layers: [{name: l}]}\n")
    assert main(["solve", str(f)]) == 2
    assert "lines.yaml:6: workloads[1].name:" in capsys.readouterr().err


def test_solve_prints_the_suite_and_its_json(tmp_path, capsys):
    doc = _suite_doc("geomean_slowdown", [("a", 1.0, 1.0, 2.0, None), ("b", 2.0, 3.0, 6.0, None)])
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["solve", str(f), "--json"]) == 0
    import json
    d = json.loads(capsys.readouterr().out)
    assert d["status"] == "optimal" and d["objective_kind"] == "geomean_slowdown"
    assert [w["name"] for w in d["workloads"]] == ["a", "b"]
    for w in d["workloads"]:
        assert w["regret"] == pytest.approx(w["iteration_time_s"] / w["own_best_s"] - 1)
        assert w["regret"] >= 0
    assert d["iteration_time_s"] == pytest.approx(sum(w["weight"] * w["iteration_time_s"] for w in d["workloads"]))
    assert d["objective"] == pytest.approx(math.exp(sum(w["weight"] * math.log(1 + w["regret"])
                                                        for w in d["workloads"]) / 3))
    assert main(["solve", str(f)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("suite ") and "regret" in out


def test_the_workload_suite_example_holds():
    import runpy
    mod = runpy.run_path(str(ROOT / "examples" / "workload_suite.py"))
    out = mod["main"](str(ROOT / "problems" / "suites" / "ace_study_suite_tight.yaml"), 1.6)
    for objective, res in out.items():
        assert res.status == "optimal" and res.gap == 0.0
        slow = [t / o for t, o in zip(res.periods_s, res.own_best_s)]
        assert min(slow) >= 1.0 - 1e-12
        if objective == "max_slowdown":
            assert res.objective == pytest.approx(max(slow))
    # min-max cannot do worse on its own measure than the other objectives' designs
    worst = {k: max(t / o for t, o in zip(r.periods_s, r.own_best_s)) for k, r in out.items()}
    assert worst["max_slowdown"] <= min(worst.values()) * (1 + 1e-9)


def test_a_time_limit_is_the_whole_limit(tmp_path):
    import time
    doc = _suite_doc("geomean_slowdown", [("a", 1.0, 1.0, 2.0, None), ("b", 2.0, 3.0, 6.0, None)])
    suite = parse_suite(doc, tmp_path / "s.yaml")
    t0 = time.perf_counter()
    try:
        res = solve_suite(suite, time_limit=0.02, started=t0)
    except Exception as e:  # nothing known on every workload in time: an error, never an unproven "optimal"
        assert "time limit" in str(e)
    else:
        assert res.status in ("optimal", "time_limit")
        if res.status == "time_limit":
            assert res.bound is None or res.bound <= res.objective
    assert time.perf_counter() - t0 < 2.0
