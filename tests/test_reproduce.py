"""The ACE study (codesign/study/): metric definitions on hand-checkable cases, the generated
problem files, and a reduced study through the API and the command line."""
from __future__ import annotations

import argparse
import json
import math

import pytest

from codesign.cli.study import register
from codesign.pipeline.solve import solve
from codesign.pipeline.validation import validate
from codesign.platform.endpoint import Engine, Option, design_of
from codesign.problem.load import load_problem
from codesign.study.cases import (CONFIGS, HBM_ENGINES, SHAPES, HbmCase, case_document, dump, hbm_cases, hbm_document,
                                  study_cases)
from codesign.study.metrics import (DRIVE, busy_time, least_bandwidth, milp_comm_intervals, model_time, network_load,
                                    sim_comm_intervals, sim_time, utilization, with_comm_hbm)
from codesign.study.run import compare, default_problems_dir, run_study
from codesign.workload.model import Comm, Layer, Workload

from conftest import problem, ring2

B = 100e9  # the 2-NPU ring's link bandwidth (bytes/s)
S = 8e6    # the all-reduce's bytes per NPU


# ---------------------------------------------------------------- busy time and utilization

def test_busy_time_is_the_union_folded_into_one_period():
    assert busy_time([(0.0, 1.0), (0.5, 2.0), (3.0, 4.0)], 10.0) == pytest.approx(3.0)
    assert busy_time([(9.0, 11.0)], 10.0) == pytest.approx(2.0)             # wraps: [9, 10) and [0, 1)
    assert busy_time([(9.0, 11.0), (10.5, 12.0)], 10.0) == pytest.approx(3.0)  # [9,10) + [0,2)
    assert busy_time([(25.0, 26.0)], 10.0) == pytest.approx(1.0)            # a later iteration's copy
    assert busy_time([(0.0, 30.0)], 10.0) == pytest.approx(10.0)
    assert busy_time([], 10.0) == 0.0


def test_utilization_is_one_when_the_links_alone_set_the_pace():
    # Two NPUs, one link of B: an all-reduce of S puts S bytes on the wire per NPU (S/2 reduce-scatter,
    # S/2 all-gather) and takes S/B on the ideal endpoint; so while it runs the link is fully used.
    w = Workload("one", "data", (Layer("l1", weight_grad_comm=Comm("all_reduce", S)),))
    p = problem(w, ring2(B), Engine("ideal"))
    load = network_load(p)
    assert load.total_bytes == pytest.approx(S)
    assert load.peak_bandwidth == pytest.approx(B)
    sol = solve(p)
    busy = busy_time(milp_comm_intervals(sol), sol.iteration_time_s)
    assert busy == pytest.approx(S / B)
    assert utilization(load, busy) == pytest.approx(1.0)
    sim = validate(p, sol).sim
    assert utilization(load, busy_time(sim_comm_intervals(sim), sim.period_s)) == pytest.approx(1.0, rel=1e-6)


def test_utilization_halves_when_the_endpoint_halves_the_pace():
    # Baseline endpoint with 3.5 S bytes of HBM traffic per all-reduce (5 x S/2 + 2 x S/2) and an HBM
    # share of 1.75 B: the collective takes 2 S/B, the link is half used while it runs.
    w = Workload("one", "data", (Layer("l1", weight_grad_comm=Comm("all_reduce", S)),))
    eng = Engine("baseline", {"comm_cores": (Option(79),), "comm_hbm_share": (Option(1.75 * B / 900e9),)})
    p = problem(w, ring2(B), eng)
    sol = solve(p)
    load = network_load(p)
    assert utilization(load, busy_time(milp_comm_intervals(sol), sol.iteration_time_s)) == pytest.approx(0.5)


# ---------------------------------------------------------------- HBM bandwidth needed

def _micro(engine: Engine):
    w = Workload("ar", "micro", (Layer("ar", weight_grad_comm=Comm("all_reduce", S)),))
    return problem(w, ring2(B), engine)


def test_hbm_needed_on_two_npus_is_the_traffic_ratio():
    # One chunk on one dimension: the all-reduce takes max(S/B, HBM bytes / bandwidth). To reach DRIVE of
    # the ideal's throughput the baseline needs 3.5 S / (S / (DRIVE B)) = 3.5 DRIVE B, ACE (reads S, writes
    # S) 2 DRIVE B: a reduction of 1.75 = 3.5 (p-1)/p with p = 2, by both figures.
    ideal = _micro(Engine("ideal"))
    base = _micro(Engine("baseline", {"comm_cores": (Option(79),), "comm_hbm_share": (Option(0.5),)}))
    ace = _micro(Engine("ace", {"sram": (Option(2**30),), "alu": (Option(1e13),), "dma": (Option(450e9),)}))
    for fn in (model_time, sim_time):
        target = fn(*with_comm_hbm(ideal, 0.0)) / DRIVE
        assert fn(*with_comm_hbm(ideal, 0.0)) == pytest.approx(S / B, rel=1e-9)
        need_b = least_bandwidth(lambda b, fn=fn: fn(*with_comm_hbm(base, b)), target)
        need_a = least_bandwidth(lambda b, fn=fn: fn(*with_comm_hbm(ace, b)), target)
        assert need_b == pytest.approx(3.5 * DRIVE * B, rel=1e-6)
        assert need_a == pytest.approx(2.0 * DRIVE * B, rel=1e-6)
        assert need_b / need_a == pytest.approx(1.75, rel=1e-6)


def test_least_bandwidth_brackets():
    assert least_bandwidth(lambda b: 1.0 / b, 1e-3, (1.0, 1e6)) == pytest.approx(1e3, rel=1e-6)
    assert least_bandwidth(lambda b: 1.0, 0.5, (1.0, 1e6)) == math.inf     # never fast enough
    assert least_bandwidth(lambda b: 0.1, 0.5, (1.0, 1e6)) == 1.0          # always fast enough


# ---------------------------------------------------------------- speedup and the best baseline

def _row(config: str, milp: float, sim: float, util: float = 0.5, **kw) -> dict:
    r = {"key": config, "group": "study", "workload": "w", "npus": 16, "latency_s": 1e-9, "config": config,
         "error": "", "milp_s": milp, "sim_s": sim, "sim_vs_milp": (sim - milp) / milp,
         "milp_utilization": util, "sim_utilization": util, "comm_cores": 4.0, "comm_hbm_share": 0.5,
         "sram_bytes": 2**20, "alu_bytes_per_s": 1e11, "dma_bytes_per_s": 1e11, "area_mm2": 1.0}
    r.update(kw)
    return r


def test_speedup_is_over_the_fastest_baseline_by_each_figure():
    rows = [_row("baseline", 2.0, 2.2, 0.4), _row("comm_opt", 2.5, 2.1, 0.45), _row("comp_opt", 4.0, 4.0),
            _row("no_overlap", 3.0, 3.0), _row("ideal", 1.0, 1.0), _row("ace", 1.6, 1.5, 0.6)]
    (c,) = compare(rows)
    assert c["milp_best_baseline"] == "baseline" and c["milp_speedup"] == pytest.approx(2.0 / 1.6)
    assert c["sim_best_baseline"] == "comm_opt" and c["sim_speedup"] == pytest.approx(2.1 / 1.5)
    assert c["milp_utilization_gain"] == pytest.approx(0.6 / 0.4)
    assert c["sim_utilization_gain"] == pytest.approx(0.6 / 0.45)
    assert c["worst_sim_vs_milp_config"] == "comm_opt"


def test_a_failed_case_is_reported_not_compared():
    rows = [_row("baseline", 2.0, 2.2), _row("ace", 1.6, 1.5, error="InfeasibleError: x")]
    (c,) = compare(rows)
    assert "ace" in c["error"]


# ---------------------------------------------------------------- the problem files

def test_problem_files_are_the_generators_and_valid():
    root = default_problems_dir()
    for c in study_cases():
        path = root / c.file
        assert path.read_text() == dump(case_document(c), f"Case: {c.key}. {CONFIGS[c.config]}."), \
            f"{path} differs from the generator: run python -m codesign.study --generate"
    for h in hbm_cases():
        assert (root / h.file).exists()
    p = load_problem(root / "resnet50_n128_ace.yaml")
    assert p.topology.npus == 128 and p.topology.shape == "4x8x4" and p.engine.area_budget_mm2 == 4.0
    assert load_problem(root / "gnmt_n16_no_overlap.yaml").schedule.overlap is False
    assert load_problem(root / HbmCase(16, "ace").file).workload.parallelism == "micro"
    assert len(study_cases()) == 3 * len(SHAPES) * len(CONFIGS) + 3 * 2 * (len(CONFIGS) - 1)
    assert hbm_document(HbmCase(32, "ideal"))["engine"]["type"] == "ideal"


# ---------------------------------------------------------------- a reduced study, API and CLI

JSON_KEYS = ("hbm_reduction_avg", "utilization_gain_avg", "utilization_gain_max")


def test_reduced_study_through_the_command_line(tmp_path, capsys):
    ap = argparse.ArgumentParser()
    handlers = register(ap.add_subparsers(dest="command"))
    args = ap.parse_args(["reproduce", "--json", "--out", str(tmp_path), "--workloads", "dlrm,gnmt", "--sizes", "16",
                          "--no-latency", "--workers", "1", "--quiet"])
    assert handlers["reproduce"](args) == 0
    doc = json.loads(capsys.readouterr().out)
    for w in ("dlrm", "gnmt"):
        d = doc["workloads"][w]
        assert d["speedup_avg"] > 1.0 and d["speedup_max"] >= d["speedup_avg"]
        assert d["milp"]["speedup_avg"] > 1.0 and d["paper"]["speedup_avg"] > 1.0
    for k in JSON_KEYS:
        assert doc[k] is not None and doc["milp"][k] is not None
    assert doc["headline_figure"] == "simulator"
    assert doc["milp"]["hbm_reduction_avg"] == pytest.approx(3.5 * 15 / 16, rel=0.05)  # docs/paper.md's model at 16
    ace = [r for r in doc["cases"] if r["config"] == "ace"]
    assert all(r["area_mm2"] <= 4.0 + 1e-9 for r in ace)
    for f in ("cases.csv", "hbm.csv", "comparisons.csv", "summary.json", "table.md", "speedup.png", "hbm.png",
              "breakdown.png"):
        assert (tmp_path / f).stat().st_size > 0
    assert len((tmp_path / "cases.csv").read_text().splitlines()) == 1 + 2 * len(CONFIGS)


def test_full_study_entry_point_produces_the_keys(monkeypatch):
    # The full study's entry point with the solve and the HBM sweep stubbed: the summary's shape only.
    import codesign.study.run as R

    def fake_case(problems_dir, case, time_limit=None):
        t = {"ace": 1.0, "ideal": 0.9}.get(case.config, 1.3)
        return _row(case.config, t, t * 1.01, key=case.key, group=case.group, workload=case.workload,
                    npus=case.npus, latency_s=case.latency_s)

    def fake_hbm(problems_dir, npus, scale):
        return {"npus": npus, "shape": "x".join(map(str, SHAPES[npus])), "net_scale": scale, "error": "",
                "network_bandwidth": 3e11 * scale, "milp_reduction": 3.4, "sim_reduction": 3.5}

    monkeypatch.setattr(R, "run_case", fake_case)
    monkeypatch.setattr(R, "run_hbm", fake_hbm)
    st = run_study(workers=1)
    s = st.summary
    assert set(s["workloads"]) == {"resnet50", "gnmt", "dlrm"}
    for d in s["workloads"].values():
        assert d["speedup_avg"] == pytest.approx(1.3 * 1.01 / 1.01) and set(d["sizes"]) == {"16", "32", "64", "128"}
    assert s["hbm_reduction_avg"] == pytest.approx(3.5) and s["milp"]["hbm_reduction_avg"] == pytest.approx(3.4)
    assert s["utilization_gain_avg"] == pytest.approx(1.0) and s["utilization_gain_max"] == pytest.approx(1.0)
    assert len(st.cases) == len(study_cases()) and not s["failed"]
    assert {r["latency_s"] for r in s["latency_sensitivity"]} == {1e-9, 1e-7, 5e-7}
