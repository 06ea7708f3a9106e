"""Start-up: how long a short command takes as a user runs it, the whole process (interpreter, imports, work).

Times ``python -m codesign validate | solve | simulate`` on shipped problems in fresh processes, N runs each, and
prints the median (s). With ``--against CHECKOUT`` (another codesign source tree, e.g. main's), each command
runs alternately from both trees (this one first on even runs, the other first on odd ones, so that a drift in
the machine's load falls on both) and the figure is the median of the runs' paired ratios, this / other: a
ratio measured in one run, as a loaded machine needs.

Each tree's modules are imported from the tree itself (it is the working folder of its runs). Bytecode is
cached as an installed package has it (pip compiles on install): the runs write it under a temporary
``PYTHONPYCACHEPREFIX``, never into either tree, after one untimed warm-up run per command and tree;
``--no-bytecode`` compiles every module at every run instead (what a run with PYTHONDONTWRITEBYTECODE and no
cache sees). A run whose exit status is not 0 stops the benchmark.

    python benchmarks/startup.py                                  # 7 runs of each command
    python benchmarks/startup.py --against /work/main --runs 11   # paired ratios against another checkout
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The commands timed: (label, arguments after ``codesign``). The targets of issue 33 are the first two.
COMMANDS = (
    ("validate resnet50", ["validate", "problems/resnet50_ace_torus3d.yaml"]),
    ("solve quickstart", ["solve", "problems/quickstart.yaml"]),
    ("validate quickstart", ["validate", "problems/quickstart.yaml"]),
    ("simulate resnet50_n16", ["simulate", "problems/paper/resnet50_n16_comm_opt.yaml"]),
    ("solve resnet50", ["solve", "problems/resnet50_ace_torus3d.yaml"]),
)


def environment(cache: str | None) -> dict[str, str]:
    """The runs' environment: bytecode cached under ``cache`` (None: not written, every module compiled)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONPYCACHEPREFIX")}
    if cache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
    return env


def run_once(tree: Path, args: list[str], env: dict[str, str]) -> float:
    """The wall time (s) of one ``python -m codesign ARGS`` from ``tree``, from spawning it to its exit."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "codesign", *args], cwd=tree, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"codesign {' '.join(args)} in {tree}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
    return wall


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="timed runs of each command (and tree); default 7")
    ap.add_argument("--against", type=Path, metavar="CHECKOUT", help="another codesign source tree to compare with")
    ap.add_argument("--no-bytecode", action="store_true", help="compile every module at every run (no .pyc cache)")
    ap.add_argument("--only", metavar="WORD", help="time only the commands whose label contains WORD")
    args = ap.parse_args()
    trees = [ROOT] + ([args.against.resolve()] if args.against else [])
    for t in trees:
        if not (t / "codesign" / "__init__.py").exists():
            sys.exit(f"{t}: not a codesign source tree")
    commands = [c for c in COMMANDS if args.only is None or args.only in c[0]]
    with tempfile.TemporaryDirectory(prefix="codesign-startup-") as cache:
        env = environment(None if args.no_bytecode else cache)
        print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {load()}; "
              f"{args.runs} runs each; bytecode {'compiled at every run' if args.no_bytecode else 'cached'}")
        print(f"this tree: {ROOT}" + (f"; against: {trees[1]}" if len(trees) > 1 else ""))
        head = f"{'command':24s} {'this (s)':>9s}" + (f" {'against (s)':>11s} {'ratio':>6s}" if len(trees) > 1 else "")
        print(head)
        for label, cmd in commands:
            for t in trees:  # warm-up: the bytecode written, the files in the page cache
                run_once(t, cmd, env)
            times: list[list[float]] = [[] for _ in trees]
            for i in range(args.runs):
                order = list(range(len(trees))) if i % 2 == 0 else list(reversed(range(len(trees))))
                for k in order:
                    times[k].append(run_once(trees[k], cmd, env))
            line = f"{label:24s} {statistics.median(times[0]):9.3f}"
            if len(trees) > 1:
                ratio = statistics.median(a / b for a, b in zip(times[0], times[1]))
                line += f" {statistics.median(times[1]):11.3f} {ratio:6.3f}"
            print(line, flush=True)
        print(f"load average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
