"""How long the ACE study takes: ``codesign reproduce`` as a user runs it, and where its time goes.

Runs ``codesign reproduce --out DIR --workers N`` in a fresh process (every case solved: DIR is emptied
first, since the command reuses the cases it finds there), times the whole command (s), then reads the
``cases.csv`` and ``hbm.csv`` it wrote and prints the work by workload and group (each case's wall time
in its worker, s, and of it the solve's), and the slowest cases.

    python benchmarks/study_time.py                         # --out /tmp/study --workers 2
    python benchmarks/study_time.py --out /tmp/study --workers 1
"""
from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def num(x: str | None) -> float:
    """A CSV cell as a number (an empty cell: 0)."""
    return float(x) if x not in ("", None) else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/study", help="the study's output folder (emptied first)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="do not empty --out: time only what is missing")
    args = ap.parse_args()
    out = Path(args.out)
    if out.exists() and not args.keep:
        shutil.rmtree(out)
    cmd = [sys.executable, "-m", "codesign", "reproduce", "--out", str(out), "--workers", str(args.workers), "--quiet"]
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("$ codesign " + " ".join(cmd[3:]), flush=True)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    print(f"exit {r.returncode}; whole command {wall:.1f} s; load average after: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if r.returncode != 0:
        print(r.stderr[-2000:])
        return 1
    with open(out / "cases.csv", newline="") as f:
        cases = list(csv.DictReader(f))
    hbm = []
    if (out / "hbm.csv").exists():
        with open(out / "hbm.csv", newline="") as f:
            hbm = list(csv.DictReader(f))
    groups: dict[tuple[str, str], list[dict]] = {}
    for c in cases:
        groups.setdefault((c["workload"], c["group"]), []).append(c)
    total = sum(num(c["wall_s"]) for c in cases) + sum(num(h["wall_s"]) for h in hbm)
    print(f"\n{len(cases)} cases and {len(hbm)} HBM points; work summed over them {total:.1f} s "
          f"({total / wall:.2f} workers busy on average)\n")
    print("| workload | group | cases | work (s) | of which solve (s) | slowest case (s) | evaluations (median) |")
    print("|---|---|---|---|---|---|---|")
    for (w, g), rows in sorted(groups.items(), key=lambda kv: -sum(num(c["wall_s"]) for c in kv[1])):
        ev = sorted(int(num(c["evaluations"])) for c in rows)
        slow = max(rows, key=lambda c: num(c["wall_s"]))
        print(f"| {w} | {g} | {len(rows)} | {sum(num(c['wall_s']) for c in rows):.1f} | "
              f"{sum(num(c['solve_s']) for c in rows):.1f} | {num(slow['wall_s']):.1f} ({slow['config']}, "
              f"{slow['npus']} NPUs) | {ev[len(ev) // 2]} |")
    if hbm:
        print(f"| HBM sweep | | {len(hbm)} | {sum(num(h['wall_s']) for h in hbm):.1f} | | "
              f"{max(num(h['wall_s']) for h in hbm):.1f} | |")
    print("\nSlowest cases:")
    for c in sorted(cases, key=lambda c: -num(c["wall_s"]))[:8]:
        print(f"  {c['key']:40s} {num(c['wall_s']):6.1f} s (solve {num(c['solve_s']):.1f} s, "
              f"{c['evaluations']} evaluations, {c['master_solves']} master solves, {c['status']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
