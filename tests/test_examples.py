"""Every example in examples/ runs, and does what its docstring says."""
from __future__ import annotations

import runpy
import subprocess
import sys

from conftest import ROOT


def test_examples_run_as_scripts():
    for ex in sorted((ROOT / "examples").glob("*.py")):
        r = subprocess.run([sys.executable, str(ex)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{ex.name}: {r.stderr}"


def test_custom_constraint_example_holds():
    mod = runpy.run_path(str(ROOT / "examples" / "custom_constraint.py"))
    s = mod["main"](str(ROOT / "problems" / "resnet50_ace_torus3d.yaml"))
    assert s.power_w <= 1.5 + 1e-9
    assert s.design["sram"] >= 2 * 9437184 / 4  # the largest ResNet-50 all-reduce (fp32), in 4 chunks
