"""A GPT-3 175B iteration on Selene's A100s: the calibrated A100 profile against one peak FLOP/s.

    python examples/calibrated_gpu.py [problem.yaml]

The problem names the calibrated profile (npu: {profile: a100-sxm-80gb}); the same problem with the NPU given
by its datasheet values alone (312 TFLOP/s, 2,039 GB/s, no compute model) gets the roofline, as codesign
predicted before profiles existed. Korthikanti et al. measured 13.75 s for this configuration
(docs/accuracy.md). Also prints the memory per GPU the LLM builder counts.
"""
from __future__ import annotations

import sys
from pathlib import Path

from codesign.platform.endpoint import Design
from codesign.problem.load import parse_problem
from codesign.sim.replay import simulate
from codesign.spec.yamlfile import load_yaml

ROOT = Path(__file__).resolve().parent.parent


def period(problem) -> float:
    design = Design(problem.engine.kind, {r: opts[0].value for r, opts in problem.engine.resources.items()})
    return simulate(problem, design, iterations=4).period_s


def main(path: str) -> tuple[float, float]:
    doc = load_yaml(path)
    calibrated = parse_problem(doc, path)
    if calibrated.npu.compute_model is None:
        raise SystemExit(f"{path}: its npu names no calibrated profile (npu: {{profile: ...}})")
    n = calibrated.npu
    doc["npu"] = {"compute": n.compute_flops, "hbm_bandwidth": n.hbm_bandwidth, "hbm_capacity": n.hbm_capacity}
    roofline = parse_problem(doc, path)
    t_cal, t_roof = period(calibrated), period(roofline)
    print(f"{calibrated.name}: {t_cal:.2f} s per iteration on the calibrated {n.profile}, {t_roof:.2f} s on its "
          f"peak FLOP/s and HBM bandwidth alone")
    mem = dict(calibrated.workload.memory_bytes)
    print(f"memory per GPU: {sum(mem.values()) / 2**30:.1f} GiB of {n.hbm_capacity / 2**30:.0f} GiB ("
          + ", ".join(f"{k} {v / 2**30:.1f}" for k, v in mem.items()) + " GiB)")
    return t_cal, t_roof


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "problems" / "llm" / "gpt3_175b_selene.yaml"))
