"""Every example in examples/ runs, and does what its docstring says."""
from __future__ import annotations

import re
import runpy
import subprocess
import sys

import pytest
from conftest import ROOT

from codesign import SpecError


def test_examples_run_as_scripts():
    for ex in sorted((ROOT / "examples").glob("*.py")):
        r = subprocess.run([sys.executable, str(ex)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{ex.name}: {r.stderr}"


def test_custom_constraint_example_holds():
    mod = runpy.run_path(str(ROOT / "examples" / "custom_constraint.py"))
    s = mod["main"](str(ROOT / "problems" / "resnet50_ace_torus3d.yaml"))
    assert s.power_w <= 1.5 + 1e-9
    assert s.design["sram"] >= 2 * 9437184 / 4  # the largest ResNet-50 all-reduce (fp32), in 4 chunks


def test_an_engine_registered_from_outside_replays_as_ace_without_alus_to_wait_for():
    """examples/in_network_engine.py: one EngineKind registered, and the MILP, the simulator, the reports and
    the JSON take it; where ACE's ALUs never hold anything back the two engines replay alike."""
    from codesign.platform.engines import ENGINES
    mod = runpy.run_path(str(ROOT / "examples" / "in_network_engine.py"))
    try:
        for name in ("quickstart", "resnet50_ace_torus3d"):
            innet, ace = mod["main"](str(ROOT / "problems" / f"{name}.yaml"))
            assert innet.status == ace.status == "optimal"
            assert innet.iteration_time_s == ace.iteration_time_s
            assert innet.design["buffer"] == ace.design["sram"] and innet.design["dma"] == ace.design["dma"]
            assert "buffer_bytes" in innet.to_dict()["design"]
    finally:
        ENGINES.pop("innet", None)  # the registry is the process's: leave it as the other tests expect


def test_network_codesign_example_chooses_within_the_budgets():
    """examples/network_codesign.py: the fastest design within the $ and area budgets, replayed; the
    cheapest network within 10% of it no dearer and within its target."""
    mod = runpy.run_path(str(ROOT / "examples" / "network_codesign.py"))
    fastest, cheap, on_grid = mod["main"](str(ROOT / "problems" / "libra" / "msft1t_3d.yaml"))
    assert fastest.status == cheap.status == on_grid.status == "optimal"
    assert fastest.network.total <= fastest.network.budget + 1e-9
    assert cheap.network.total <= fastest.network.total + 1e-9
    assert cheap.iteration_time_s <= fastest.iteration_time_s * 1.10 * (1 + 1e-9)
    assert on_grid.network.options[0] > 6 and on_grid.network.total <= on_grid.network.budget + 1e-9
    assert on_grid.continuous_bound_s <= on_grid.iteration_time_s


def test_llm_example_replays_every_set_up_and_selective_recomputation_is_cheaper():
    """examples/llm_parallelism.py: full recomputation re-runs every layer's forward (and its tensor-parallel
    all-reduces) before its backward, selective only the attention core: less work, so a shorter iteration
    under either schedule."""
    rows = runpy.run_path(str(ROOT / "examples" / "llm_parallelism.py"))["main"]()
    t = {(s, r): period for s, r, period, _ in rows}
    assert len(t) == 4 and all(p > 0 for p in t.values())
    for schedule in ("1f1b", "gpipe"):
        assert t[schedule, "selective"] < t[schedule, "full"]


def test_calibrated_gpu_example():
    """examples/calibrated_gpu.py: the calibrated A100 is slower than its peak FLOP/s and HBM roofline (products
    below the peak, kernels that cost a launch), and the memory it prints is the builder's."""
    t_cal, t_roof = runpy.run_path(str(ROOT / "examples" / "calibrated_gpu.py"))["main"](
        str(ROOT / "problems" / "llm" / "gpt3_175b_selene.yaml"))
    assert t_cal > t_roof > 0


# An example given a shipped problem it does not suit says what it needs, on one line (exit 2), where it crashed
# (KeyError: 'sram', an AttributeError on a fixed network, KeyError: 'bw[0]', ...).
UNSUITED = [("custom_constraint", "resnet50_baseline_torus3d", "sizes none"),
            ("in_network_engine", "resnet50_baseline_torus3d", "baseline engine has no sram"),
            ("network_codesign", "quickstart", "the problem fixes them"),
            ("energy_delay", "libra/resnet50_3d", "also sizes its network's bandwidths"),
            ("llm_parallelism", "quickstart", "not built by it")]


@pytest.mark.parametrize("example, problem, says", UNSUITED)
def test_an_example_refuses_a_problem_it_does_not_suit(example, problem, says):
    from codesign.platform.engines import ENGINES
    mod = runpy.run_path(str(ROOT / "examples" / f"{example}.py"))
    try:
        with pytest.raises(SpecError, match=says):
            mod["main"](str(ROOT / "problems" / f"{problem}.yaml"))
    finally:
        ENGINES.pop("innet", None)  # (in_network_engine registers it: the registry is the process's)


def test_an_unsuited_problem_is_one_line_on_the_command_line():
    r = subprocess.run([sys.executable, str(ROOT / "examples/network_codesign.py"),
                        str(ROOT / "problems/quickstart.yaml")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("network_codesign.py: "), r.stderr


def test_custom_constraint_reports_a_cap_no_design_meets():
    """On the quickstart no design meets even the 1.5 W cap (an uncaught InfeasibleError before): both caps are
    reported infeasible and main returns None."""
    mod = runpy.run_path(str(ROOT / "examples" / "custom_constraint.py"))
    assert mod["main"](str(ROOT / "problems" / "quickstart.yaml")) is None


def test_the_examples_name_only_files_that_exist():
    """custom_constraint.py named codesign/milp/model.py, which does not exist."""
    for ex in sorted((ROOT / "examples").glob("*.py")):
        for path in re.findall(r"codesign/[\w/]+\.py", ex.read_text()):
            assert (ROOT / path).is_file(), f"{ex.name} names {path}"
