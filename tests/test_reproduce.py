"""The ACE study (codesign/study/): metric definitions on hand-checkable cases, the generated
problem files, and reduced studies through the API and the command line: on the sweep's pool and in
this process alike, and resumed from their results files."""
from __future__ import annotations

import argparse
import json
import math
import os
import signal

import pytest
from conftest import problem, ring2

from codesign.cli.study import register
from codesign.pipeline.solve import solve
from codesign.platform.endpoint import Engine, Option
from codesign.problem.load import load_problem
from codesign.study.cases import (
    CONFIGS,
    SHAPES,
    Case,
    HbmCase,
    case_document,
    dump,
    hbm_cases,
    hbm_document,
    study_cases,
)
from codesign.study.metrics import (
    DRIVE,
    busy_time,
    comm_intervals,
    least_bandwidth,
    network_load,
    sim_time,
    utilization,
    with_comm_hbm,
)
from codesign.study.run import CASE_COLUMNS, compare, default_problems_dir, run_study
from codesign.workload.model import Comm, Layer, Workload

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
    sim = solve(p).sim  # the replay behind the answer
    busy = busy_time(comm_intervals(sim), sim.period_s)
    assert busy == pytest.approx(S / B, rel=1e-6)
    assert utilization(load, busy) == pytest.approx(1.0, rel=1e-6)


def test_utilization_halves_when_the_endpoint_halves_the_pace():
    # Baseline endpoint with 3.5 S bytes of HBM traffic per all-reduce (5 x S/2 + 2 x S/2) and an HBM
    # share of 1.75 B: the collective takes 2 S/B, the link is half used while it runs.
    w = Workload("one", "data", (Layer("l1", weight_grad_comm=Comm("all_reduce", S)),))
    eng = Engine("baseline", {"comm_cores": (Option(79),), "comm_hbm_share": (Option(1.75 * B / 900e9),)})
    p = problem(w, ring2(B), eng)
    sim = solve(p).sim
    assert sim.period_s == pytest.approx(2 * S / B, rel=1e-6)
    assert utilization(network_load(p), busy_time(comm_intervals(sim), sim.period_s)) == pytest.approx(0.5, rel=1e-6)


# ---------------------------------------------------------------- HBM bandwidth needed

def _micro(engine: Engine):
    w = Workload("ar", "micro", (Layer("ar", weight_grad_comm=Comm("all_reduce", S)),))
    return problem(w, ring2(B), engine)


def test_hbm_needed_on_two_npus_is_the_traffic_ratio():
    # One chunk on one dimension: the all-reduce takes max(S/B, HBM bytes / bandwidth). To reach DRIVE of
    # the ideal's throughput the baseline needs 3.5 S / (S / (DRIVE B)) = 3.5 DRIVE B, ACE (reads S, writes
    # S) 2 DRIVE B: a reduction of 1.75 = 3.5 (p-1)/p with p = 2, in the simulator as on paper.
    ideal = _micro(Engine("ideal"))
    base = _micro(Engine("baseline", {"comm_cores": (Option(79),), "comm_hbm_share": (Option(0.5),)}))
    ace = _micro(Engine("ace", {"sram": (Option(2**30),), "alu": (Option(1e13),), "dma": (Option(450e9),)}))
    assert sim_time(*with_comm_hbm(ideal, 0.0)) == pytest.approx(S / B, rel=1e-9)
    target = sim_time(*with_comm_hbm(ideal, 0.0)) / DRIVE
    need_b = least_bandwidth(lambda b: sim_time(*with_comm_hbm(base, b)), target)
    need_a = least_bandwidth(lambda b: sim_time(*with_comm_hbm(ace, b)), target)
    assert need_b == pytest.approx(3.5 * DRIVE * B, rel=1e-6)
    assert need_a == pytest.approx(2.0 * DRIVE * B, rel=1e-6)
    assert need_b / need_a == pytest.approx(1.75, rel=1e-6)


def test_least_bandwidth_brackets():
    assert least_bandwidth(lambda b: 1.0 / b, 1e-3, (1.0, 1e6)) == pytest.approx(1e3, rel=1e-6)
    assert least_bandwidth(lambda b: 1.0, 0.5, (1.0, 1e6)) == math.inf     # never fast enough
    assert least_bandwidth(lambda b: 0.1, 0.5, (1.0, 1e6)) == 1.0          # always fast enough


# ---------------------------------------------------------------- speedup and the best baseline

def _row(config: str, t: float, util: float = 0.5, **kw) -> dict:
    r = {c: None for c in CASE_COLUMNS}
    r.update({"key": config, "group": "study", "workload": "w", "npus": 16, "latency_s": 1e-9, "config": config,
              "error": "", "status": "optimal", "iteration_time_s": t, "utilization": util, "comm_cores": 4.0,
              "comm_hbm_share": 0.5, "sram_bytes": 2**20, "alu_bytes_per_s": 1e11, "dma_bytes_per_s": 1e11,
              "area_mm2": 1.0})
    r.update(kw)
    return r


def test_speedup_is_over_the_fastest_baseline():
    rows = [_row("baseline", 2.2, 0.4), _row("comm_opt", 2.1, 0.45), _row("comp_opt", 4.0), _row("no_overlap", 3.0),
            _row("ideal", 1.0), _row("ace", 1.5, 0.6, status="time_limit")]
    (c,) = compare(rows)
    assert c["best_baseline"] == "comm_opt" and c["speedup"] == pytest.approx(2.1 / 1.5)
    assert c["utilization_gain"] == pytest.approx(0.6 / 0.45) and c["ideal_s"] == 1.0
    assert c["baseline_design"] == "4 cores, 50% HBM" and c["not_optimal"] == "ace"


def test_a_failed_case_is_reported_not_compared():
    rows = [_row("baseline", 2.2), _row("ace", 1.5, error="InfeasibleError: x")]
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


# ---------------------------------------------------------------- reduced studies, API and CLI

TINY = {"name": "tiny", "parallelism": "data", "layers": [
    {"name": f"l{i}", "forward": "20 us", "input_grad": "20 us", "weight_grad": "20 us",
     "weight_grad_comm": {"collective": "all_reduce", "bytes": f"{m} MiB"}} for i, m in enumerate((4, 1))]}
VARYING = ("worker", "wall_s", "solve_s")  # where and how fast a row was solved


def _tiny_study(tmp_path):
    """The study's files for DLRM at 16 NPUs, with a two-layer workload instead of DLRM's: quick to solve."""
    pdir = tmp_path / "paper"
    for c in CONFIGS:
        case = Case("dlrm", 16, c)
        (pdir / case.file).parent.mkdir(parents=True, exist_ok=True)
        (pdir / case.file).write_text(dump({**case_document(case), "workload": TINY}, case.key))
    for h in hbm_cases((16,)):
        (pdir / h.file).parent.mkdir(parents=True, exist_ok=True)
        (pdir / h.file).write_text(dump(hbm_document(h), h.file))
    return pdir


def _cli(out, pdir, *extra: str) -> None:
    ap = argparse.ArgumentParser()
    handlers = register(ap.add_subparsers(dest="command"))
    args = ap.parse_args(["reproduce", "--json", "--out", str(out), "--problems", str(pdir), "--workloads", "dlrm",
                          "--sizes", "16", "--no-latency", "--workers", "2", "--quiet", *extra])
    assert handlers["reproduce"](args) == 0


def _fixed(rows):
    return [{k: v for k, v in r.items() if k not in VARYING} for r in rows]


def test_reduced_study_survives_a_dead_worker_matches_this_process_and_resumes(tmp_path, capsys):
    pdir, out = _tiny_study(tmp_path), tmp_path / "out"
    kw = {"workloads": ("dlrm",), "sizes": (16,), "latency": False, "problems_dir": pdir}
    killed = []

    def kill_a_worker(pr):  # once the first row is in, kill the pool process that solved it
        if pr.row is not None and not killed:
            killed.append(int(pr.row["worker"].rsplit(":", 1)[1]))
            os.kill(killed[0], signal.SIGKILL)

    pool = run_study(workers=2, out=out, progress=kill_a_worker, **kw)
    assert killed and pool.solved == 6 + 3 and not pool.summary["failed"] and not pool.summary["not_optimal"]
    assert len({r["worker"] for r in pool.cases + pool.hbm}) >= 3  # the pool was restarted
    # in this process: the same rows
    here = run_study(executor="serial", **{**kw, "hbm": False})
    assert here.where == "this process" and _fixed(here.cases) == _fixed(pool.cases)
    # the command line on the same directory solves nothing and reads back exactly the same rows
    _cli(out, pdir)
    doc = json.loads(capsys.readouterr().out)
    assert doc["solved"] == 0 and doc["reused"] == 9
    assert doc["cases"] == pool.cases and doc["hbm"] == pool.hbm
    d = doc["workloads"]["dlrm"]
    assert d["speedup_avg"] > 1.0 and d["speedup_max"] == d["speedup_avg"] and d["paper"]["speedup_avg"] == 1.13
    assert "milp" not in doc and not any(k.startswith("milp") for k in doc["cases"][0])
    for k in ("hbm_reduction_avg", "utilization_gain_avg", "utilization_gain_max"):
        assert doc[k] is not None
    (c,) = doc["comparisons"]
    assert c["best_baseline"] == "baseline"  # its catalog holds the fixed splits, and the answer is the best design
    for r in doc["cases"]:  # each answer is a simulated period, proven optimal over the configuration's designs
        assert r["status"] == "optimal" and r["bound_s"] <= r["iteration_time_s"] * (1 + 1e-9)
        assert r["compute_time_s"] + r["exposed_comm_s"] == pytest.approx(r["iteration_time_s"])
    assert all(r["area_mm2"] <= 4.0 + 1e-9 for r in doc["cases"] if r["config"] == "ace")
    assert all(h["reduction"] > 1.0 for h in doc["hbm"])
    for f in ("cases.csv", "hbm.csv", "comparisons.csv", "summary.json", "table.md", "speedup.png", "hbm.png",
              "breakdown.png"):
        assert (out / f).stat().st_size > 0
    assert len((out / "cases.csv").read_text().splitlines()) == 1 + len(CONFIGS)
    # a study killed mid-write: its last row torn, the row before it missing; a rerun solves those two only
    lines = (out / "cases.csv").read_text().splitlines(keepends=True)
    (out / "cases.csv").write_text("".join(lines[:-2]) + lines[-1][:30])
    resumed = run_study(executor="serial", out=out, **kw)
    assert resumed.solved == 2 and resumed.reused == 4 + 3 and _fixed(resumed.cases) == _fixed(pool.cases)
    # an edited case file is solved again (its row's digest no longer matches)
    f = pdir / Case("dlrm", 16, "ideal").file
    f.write_text(f.read_text().replace("4 MiB", "2 MiB"))
    assert run_study(executor="serial", out=out, **kw).solved == 1


def test_full_study_entry_point_produces_the_keys(monkeypatch):
    # The full study's entry point, in this process, with the solve and the HBM sweep stubbed: the summary's shape.
    import codesign.study.run as R

    def fake_case(problem, time_limit=None):
        t = {"ace": 1.0, "ideal": 0.9}.get(problem.name.rsplit("_", 1)[-1], 1.3)  # names end in the config
        return {"status": "optimal", "iteration_time_s": t, "utilization": 0.5, "sram_bytes": 2**20,
                "alu_bytes_per_s": 1e11, "dma_bytes_per_s": 1e11, "area_mm2": 1.0}

    def fake_hbm(problems, scale):
        return {"network_bandwidth": 3e11 * scale, "reduction": 3.5, "status": "done"}

    monkeypatch.setattr(R, "run_case", fake_case)
    monkeypatch.setattr(R, "run_hbm", fake_hbm)
    st = run_study(executor="serial")
    s = st.summary
    assert set(s["workloads"]) == {"resnet50", "gnmt", "dlrm"}
    for d in s["workloads"].values():
        assert d["speedup_avg"] == pytest.approx(1.3) and set(d["sizes"]) == {"16", "32", "64", "128"}
    assert s["hbm_reduction_avg"] == pytest.approx(3.5)
    assert s["utilization_gain_avg"] == pytest.approx(1.0) and s["utilization_gain_max"] == pytest.approx(1.0)
    assert len(st.cases) == len(study_cases()) and not s["failed"] and st.solved == len(study_cases()) + 12
    assert {r["latency_s"] for r in s["latency_sensitivity"]} == {1e-9, 1e-7, 5e-7}
