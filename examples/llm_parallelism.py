"""The LLM builder at work: one 7B-class GPT on the same 64 NPUs under four training set-ups.

problems/llm/gpt_7b_ace_64npu.yaml builds a GPT-3 6.7B-class model with Megatron-LM's tensor, pipeline and
data parallelism (``workload: {builder: llm, args: ...}``, docs/llm.md). This example keeps its model,
network, NPU and one ACE design fixed and changes how it is trained: the pipeline schedule (1F1B or GPipe)
and activation recomputation (full or selective), then replays each in the simulator. Every variant does
the same useful work; what moves is the recomputed forward passes and where the collectives fall.

    python examples/llm_parallelism.py [problem.yaml]
"""
from __future__ import annotations

import copy
import sys
from pathlib import Path

from codesign.errors import CodesignError, SpecError
from codesign.platform.endpoint import design_of
from codesign.problem.load import parse_problem
from codesign.sim.replay import simulate
from codesign.spec.yamlfile import load_yaml

HERE = Path(__file__).resolve().parent
PROBLEM = HERE.parent / "problems" / "llm" / "gpt_7b_ace_64npu.yaml"
VARIANTS = [("1f1b", "full"), ("1f1b", "selective"), ("gpipe", "full"), ("gpipe", "selective")]


def main(path: str | Path = PROBLEM) -> list[tuple[str, str, float, float]]:
    """Replay each (schedule, recompute) variant at the catalog's largest ACE: [(schedule, recompute,
    iteration time s, exposed communication s)]."""
    doc = load_yaml(path)
    wl = doc.get("workload") if isinstance(doc, dict) else None
    if not isinstance(wl, dict) or wl.get("builder") != "llm":
        raise SpecError("this example varies the LLM builder's schedule and recomputation, and the problem's "
                        "workload is not built by it; give one with 'workload: {builder: llm, ...}' (problems/llm/)",
                        file=str(path), path="workload")
    rows = []
    for schedule, recompute in VARIANTS:
        d = copy.deepcopy(doc)
        d["workload"]["args"].update(schedule=schedule, recompute=recompute)
        p = parse_problem(d, path)
        design = design_of(p.engine, {r: len(opts) - 1 for r, opts in p.engine.resources.items()})
        sim = simulate(p, design)
        rows.append((schedule, recompute, sim.period_s, sim.exposed_comm_s))
    return rows


if __name__ == "__main__":
    try:
        rows = main(*sys.argv[1:2])
    except CodesignError as e:  # a problem this example does not suit, or bad input: one line
        print(f"{Path(__file__).name}: {e}", file=sys.stderr)
        sys.exit(e.exit_status)
    print(f"{'schedule':9s} {'recompute':10s} {'iteration':>10s} {'exposed comm':>13s}")
    for schedule, recompute, t, exposed in rows:
        print(f"{schedule:9s} {recompute:10s} {t:9.3f} s {exposed * 1e3:10.1f} ms")
    best = min(rows, key=lambda r: r[2])
    print(f"fastest: {best[0]} with {best[1]} recomputation")
