"""``order: optimize`` on the main job (problems/resnet50_ace_optimize_torus3d.yaml) at 1, 2, 4, 8 and 16
chunks: the proven bound, the best order's simulated period, the gap, the status and the whole command's
seconds (``python -m codesign solve FILE --json``, a fresh process each), for this code and, with
``--before DIR``, for the code checked out in DIR (e.g. a worktree of main), run alternately.

    python benchmarks/orders.py [--before DIR] [--chunks 1 2 4 8 16]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "resnet50_ace_optimize_torus3d.yaml"


def copy_at(chunks: int, folder: Path) -> Path:
    """The main job with ``chunks`` chunks per collective, written in ``folder`` beside its workload."""
    text = PROBLEM.read_text()
    text, n = re.subn(r"chunks: \d+", f"chunks: {chunks}", text)
    assert n == 1, "the problem's schedule line changed: update this benchmark"
    out = folder / f"chunks{chunks}.yaml"
    out.write_text(text)
    (folder / "workloads").mkdir(exist_ok=True)
    shutil.copy(ROOT / "problems" / "workloads" / "Resnet50_DataParallel.txt", folder / "workloads")
    return out


def run(code: Path, problem: Path) -> tuple[dict, float]:
    """One whole ``solve --json`` with ``code`` first on the path: (its answer, wall seconds)."""
    env = dict(os.environ, PYTHONPATH=str(code))
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "codesign", "solve", str(problem), "--json"], cwd=code, env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out), time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="a checkout of the code to compare against")
    ap.add_argument("--chunks", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    a = ap.parse_args()
    ms = 1e3
    print(f"{'chunks':>6} {'bound before':>12} {'bound after':>11} {'best before':>11} {'best after':>10} "
          f"{'gap before':>10} {'gap after':>9} {'status before':>13} {'status after':>12} "
          f"{'s before':>8} {'s after':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for c in a.chunks:
            f = copy_at(c, Path(tmp))
            old, t_old = run(a.before, f) if a.before else ({}, float("nan"))
            new, t_new = run(ROOT, f)

            def g(d: dict, k: str, scale: float = ms) -> str:
                return f"{d[k] * scale:.4g}" if k in d else "-"
            print(f"{c:>6} {g(old, 'bound_s'):>12} {g(new, 'bound_s'):>11} {g(old, 'iteration_time_s'):>11} "
                  f"{g(new, 'iteration_time_s'):>10} {g(old, 'gap', 100):>9}% {g(new, 'gap', 100):>8}% "
                  f"{old.get('status', '-'):>13} {new['status']:>12} {t_old:>8.2f} {t_new:>7.2f}")
    print("(times in ms; bound: the proven lower bound over every design and order; gap: (best - bound) / best)")


if __name__ == "__main__":
    main()
