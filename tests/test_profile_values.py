"""A GPU profile's compute_model values are checked against the ranges they can take (exit 2, one line naming
the file, line, key and the range), and a user's copy of a shipped profile is not reported under the shipped
profile's name."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codesign.calibrate.accuracy import platform_of
from codesign.problem.load import load_problem

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "codesign" / "problem" / "platforms"


def _problem(tmp_path: Path, key: str, value: str) -> Path:
    gpu = (SHIPPED / "a100-sxm-80gb.yaml").read_text()
    assert f"    {key}: " in gpu
    lines = [f"    {key}: {value}" if ln.startswith(f"    {key}: ") else ln for ln in gpu.splitlines()]
    (tmp_path / "gpu.yaml").write_text("\n".join(lines) + "\n")
    p = (ROOT / "problems" / "llm" / "gpt3_175b_selene.yaml").read_text().replace("profile: a100-sxm-80gb",
                                                                                  "profile: gpu.yaml")
    (tmp_path / "p.yaml").write_text(p)
    return tmp_path / "p.yaml"


@pytest.mark.parametrize("key, value, says", [
    ("gemm_efficiency", "1e-300", "expected a number from 0.01 to 1"),
    ("memory_efficiency", "1.5", "expected a number from 0.01 to 1"),
    ("kernel_overhead", "-3 us", "expected a time from 0 ns to 1 ms"),
    ("host_overhead", "20", "expected a time from 0 ns to 1 ms"),
    ("l2_bandwidth", "5 KB/s", "expected a bandwidth from")])
def test_an_absurd_compute_model_value_is_one_line_exit_2(tmp_path, key, value, says):
    p = _problem(tmp_path, key, value)
    r = subprocess.run([sys.executable, "-m", "codesign", "simulate", str(p)], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    line = next(i for i, ln in enumerate((tmp_path / "gpu.yaml").read_text().splitlines(), 1)
                if ln.startswith(f"    {key}:"))
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()]
    assert f"{tmp_path / 'gpu.yaml'}:{line}: npu.compute_model.{key}: {says}" in r.stderr, r.stderr


def test_a_copy_under_the_shipped_name_is_reported_by_its_file(tmp_path):
    """An edited copy still named a100-sxm-80gb reports as the file the problem names; renamed, as its name;
    the shipped profile as its own name."""
    p = _problem(tmp_path, "gemm_efficiency", "0.5")
    assert load_problem(p).npu.profile == "gpu.yaml"
    (tmp_path / "gpu.yaml").write_text((tmp_path / "gpu.yaml").read_text().replace("name: a100-sxm-80gb",
                                                                                    "name: my-a100"))
    assert load_problem(p).npu.profile == "my-a100"
    assert load_problem(ROOT / "problems" / "llm" / "gpt3_175b_selene.yaml").npu.profile == "a100-sxm-80gb"
    copy = tmp_path / "cluster.yaml"
    copy.write_text((SHIPPED / "vtrain-a100.yaml").read_text())
    assert platform_of(str(copy))[0].name == str(copy)
    assert platform_of("vtrain-a100")[0].name == "vtrain-a100"
