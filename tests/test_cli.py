"""The command line as a user runs it, and the README's promises."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import ROOT

REQUIRED = {"status", "iteration_time_s", "bound_s", "gap", "solve_time_s", "engine", "design", "area_mm2",
            "compute_time_s", "exposed_comm_s", "schedule", "model"}


def run(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codesign", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_solve_json_is_one_clean_document():
    r = run("solve", "problems/quickstart.yaml", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # fails if a solver banner or anything else leaks onto stdout
    assert REQUIRED <= doc.keys()
    assert doc["status"] == "optimal" and doc["engine"] == "ace"
    assert set(doc["design"]) == {"sram_bytes", "alu_rate_bytes_per_s", "dma_bandwidth_bytes_per_s"}
    assert set(doc["model"]) == {"variables", "binaries", "constraints"} and doc["model"]["binaries"] == 6
    assert doc["area_mm2"] <= 3.0 + 1e-9
    assert doc["iteration_time_s"] >= doc["bound_s"] * (1 - 1e-9)
    assert doc["exposed_comm_s"] == pytest.approx(doc["iteration_time_s"] - doc["compute_time_s"])
    for task in doc["schedule"]:
        assert {"name", "kind", "layer", "start_s", "end_s"} <= task.keys()
        assert task["end_s"] >= task["start_s"] >= 0


def test_resnet50_problem_is_optimal_in_seconds():
    r = run("solve", "problems/resnet50_ace_torus3d.yaml", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["status"] == "optimal" and doc["gap"] <= 1e-4
    assert doc["solve_time_s"] < 10
    assert doc["area_mm2"] <= 4.0 + 1e-9
    assert len([t for t in doc["schedule"] if t["kind"] == "comm"]) == 54


def test_summary_and_out_dir(tmp_path):
    r = run("solve", "problems/quickstart.yaml", "--out", str(tmp_path / "o"), "--solver", "fast")
    assert r.returncode == 0, r.stderr
    for line in ("design", "iteration time", "solver", "search", "any order", "replayed"):
        assert re.search(rf"^{line}\s", r.stdout, re.M), r.stdout
    assert "bound" in r.stdout and "gap" in r.stdout
    for f in ("solution.json", "schedule.csv", "summary.txt", "gantt.png"):
        assert (tmp_path / "o" / f).stat().st_size > 0
    assert json.loads((tmp_path / "o" / "solution.json").read_text())["status"] == "optimal"


def test_infeasible_problem_exits_1_with_reason(tmp_path):
    text = (ROOT / "problems/quickstart.yaml").read_text().replace("area_budget: 3 mm^2", "area_budget: 0.5 mm^2")
    p = tmp_path / "tight.yaml"
    p.write_text(text)
    r = run("solve", str(p))
    assert r.returncode == 1
    assert "area budget 0.5 mm^2 < smallest configuration 0.75 mm^2" in r.stderr
    assert "Traceback" not in r.stderr


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [ln.strip() for ln in text.splitlines() if ln.startswith("    python3 -m venv")]


def test_readme_has_the_two_setup_commands_and_ci_runs_the_test_one():
    cmds = _readme_commands()
    assert len(cmds) == 2
    main, tests = cmds
    problem = re.search(r"codesign solve (\S+)", main).group(1)
    assert (ROOT / problem).exists()
    ci = (ROOT / ".ci/run").read_text()
    install, test = tests.split("&& pip install")[1].split("&&")
    assert ("pip install" + install).strip() in ci
    assert test.strip() in ci


def test_readme_main_job_runs():
    main = _readme_commands()[0]
    problem = re.search(r"codesign solve (\S+)", main).group(1)
    r = run("solve", problem)
    assert r.returncode == 0, r.stderr
    assert "optimal" in r.stdout


def test_simulate_astra_json():
    d = ROOT / "tests" / "data" / "astra"
    r = run("simulate", "--astra-workload", str(d / "workload/Resnet50_DataParallel.txt"), "--astra-network",
            str(d / "network/sample_Torus3D.json"), "--astra-system", str(d / "system/sample_torus_sys.txt"),
            "--passes", "2", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {"finish_time_ns", "compute_time_ns", "exposed_comm_time_ns", "layers"} <= doc.keys()
    assert doc["finish_time_ns"] == doc["compute_time_ns"] + doc["exposed_comm_time_ns"]
    assert doc["passes"] == 2 and len(doc["layers"]) == 54 and doc["layers"][0]["name"] == "conv1"


def test_simulate_missing_input_is_one_line():
    d = ROOT / "tests" / "data" / "astra"
    r = run("simulate", "--astra-workload", str(d / "workload/microAllReduce.txt"), "--astra-network", "nope.json",
            "--astra-system", str(d / "system/sample_torus_sys.txt"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "nope.json" in r.stderr


def test_gnmt_problem_solves_and_replays_close():
    r = run("solve", "problems/gnmt_ace_torus2d.yaml", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["status"] == "optimal"
    v = doc["validation"]
    assert v["simulated_s"] >= v["lower_bound_s"]
    assert abs(v["rel_diff"]) < 0.05, v["findings"]  # 21% before oversize chunks streamed through SRAM


def test_simulate_problem_needs_fixed_design_or_solution(tmp_path):
    r = run("simulate", "problems/quickstart.yaml")
    assert r.returncode == 2
    sram = next(i for i, t in enumerate((ROOT / "problems/quickstart.yaml").read_text().splitlines(), 1)
                if t.strip().startswith("sram:"))
    assert r.stderr.strip() == (f"codesign: error: problems/quickstart.yaml:{sram}: engine.sram: 2 options: fix each "
                                "resource to one value to simulate the problem, or pass --solution from 'solve --out'")
    r = run("solve", "problems/quickstart.yaml", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    r = run("simulate", "problems/quickstart.yaml", "--solution", str(tmp_path / "solution.json"), "--json",
            "--out", str(tmp_path / "sim"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    saved = json.loads((tmp_path / "solution.json").read_text())
    # the same design and order replayed again: the validation's figure, exactly
    assert doc["iteration_time_s"] == pytest.approx(saved["validation"]["simulated_s"], rel=1e-12)
    assert doc["iteration_time_s"] >= doc["lower_bound_s"]
    assert (tmp_path / "sim" / "timeline.png").stat().st_size > 0
