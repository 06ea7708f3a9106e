"""Benchmark: codesign's chunk-grain replay (codesign/sim/replay.py), before and after its speed work.

Three codes: "before" is tests/reference_replay.py, the replay as it was frozen before the rewrite; "Python"
is codesign.sim.replay on its Python event loop (CODESIGN_REPLAY=python; main's loop before the compiled
one); "compiled" is the same replay on its compiled loop (codesign/sim/_kernel.c). The equivalence test
holds all three to identical answers. Each case runs them in turn, alternating, and keeps each one's best
time, so a load that comes and goes on a shared machine hits all alike. Times are wall clock
(perf_counter) and CPU (process_time) per whole replay (set-up included), 8 iterations replayed.

Cases: ResNet-50 on ACE at the design of the acceptance target (8 MiB SRAM, 128 GB/s ALU, 128 GB/s DMA),
the 500-layer 1024-NPU problem (problems/scale/, 4 MiB, 128 GB/s, 128 GB/s: ALU contention), ResNet-50 cut
into up to 1024 chunks per collective (both loops, each in a fresh process for its peak memory), the
shipped problems at their solved designs, and how the cost grows with chunks and iterations. Run from the
repository root:

    python benchmarks/sim_replay.py            # everything (about 2 minutes)
    python benchmarks/sim_replay.py --quick    # the two target cases only, fewer repetitions
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import codesign
from codesign.platform.endpoint import Design, design_of
from codesign.sim import replay
from codesign.sim.replay import simulate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import reference_replay  # noqa: E402  (the frozen replay, tests/reference_replay.py)

MiB = 2**20


def ace(sram_mib: float, alu_gbs: float, dma_gbs: float) -> Design:
    return Design("ace", {"sram": sram_mib * MiB, "alu": alu_gbs * 1e9, "dma": dma_gbs * 1e9})


CODES = ("before", "python", "compiled")


def _sim(code: str):
    if code == "before":
        return reference_replay.simulate

    def run(*args, **kw):
        replay.COMPILED = code == "compiled"
        try:
            return simulate(*args, **kw)
        finally:
            replay.COMPILED = replay._kernel is not None
    return run


def paired(problem, design, reps: int, order=None, iterations: int = 8):
    """Best wall and CPU seconds of each code, run alternately; and the compiled loop's result."""
    best = {c: [float("inf"), float("inf")] for c in CODES}
    res = {}
    for _ in range(reps):
        for code in CODES:
            w0, c0 = time.perf_counter(), time.process_time()
            res[code] = _sim(code)(problem, design, order=order, iterations=iterations)
            w, c = time.perf_counter() - w0, time.process_time() - c0
            best[code] = [min(best[code][0], w), min(best[code][1], c)]
    for code in CODES[1:]:
        assert res[code].period_s == res["before"].period_s and res[code].events == res["before"].events, code
    return best, res["compiled"]


HEADER = ("| case | layers | NPUs | chunks | events | before wall (ms) | Python wall (ms) | compiled wall / CPU (ms) | "
          "before M events/s | Python M events/s | compiled M events/s (wall / CPU) | compiled / Python |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


def row(name: str, p, r, best) -> str:
    b, y, a = best["before"], best["python"], best["compiled"]
    ev = r.events
    return (f"| {name} | {len(p.workload.layers)} | {p.topology.npus} | {p.schedule.chunks} | {ev} | "
            f"{b[0] * 1e3:.1f} | {y[0] * 1e3:.1f} | {a[0] * 1e3:.2f} / {a[1] * 1e3:.2f} | "
            f"{ev / b[0] / 1e6:.3f} | {ev / y[0] / 1e6:.3f} | {ev / a[0] / 1e6:.2f} / {ev / a[1] / 1e6:.2f} | "
            f"{y[0] / a[0]:.1f}x |")


def scale_problem() -> Path | None:
    found = sorted((ROOT / "problems" / "scale").glob("*.yaml"))
    return found[0] if found else None


def big_chunks(chunks: int, loop: str) -> str:
    """ResNet-50 at ``chunks`` chunks per collective in a fresh process, on the compiled or the Python
    loop: time and peak memory."""
    program = f"""
import dataclasses, resource, time
import codesign
from codesign.platform.endpoint import Design
from codesign.sim.replay import simulate

def hwm_mb():  # the process's peak resident set (ru_maxrss would include the parent's, inherited at fork)
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

p = codesign.load_problem({str(ROOT / 'problems' / 'resnet50_ace_torus3d.yaml')!r})
p = dataclasses.replace(p, schedule=dataclasses.replace(p.schedule, chunks={chunks}))
d = Design("ace", {{"sram": 8 * 2**20, "alu": 128e9, "dma": 128e9}})
base = hwm_mb()
w0, c0 = time.perf_counter(), time.process_time()
r = simulate(p, d)
w, c = time.perf_counter() - w0, time.process_time() - c0
peak = hwm_mb()
print(f"| {chunks} | {loop} | {{r.events}} | {{w:.2f}} | {{c:.2f}} | {{r.events / w / 1e6:.3f}} | {{peak:.0f}} | "
      f"{{peak - base:.0f}} |")
"""
    env = dict(os.environ, CODESIGN_REPLAY=loop)
    out = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=True,
                         env=env)
    return out.stdout.strip()


def solve_out(chunks: int) -> str:
    """``codesign solve --out`` on ResNet-50 ACE at ``chunks`` chunks per collective, as a user runs it (a
    fresh process; its pictures draw a period's chunk-phases): wall time and the process's peak memory."""
    import tempfile

    import yaml
    wrapper = ("import runpy, sys\n"
               "sys.argv = ['codesign'] + sys.argv[1:]\n"
               "try:\n"
               "    runpy.run_module('codesign', run_name='__main__')\n"
               "finally:\n"
               "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
               "    sys.stderr.write('HWM ' + hwm[0].split()[1] + '\\n')\n")
    with tempfile.TemporaryDirectory() as d:
        doc = yaml.safe_load((ROOT / "problems" / "resnet50_ace_torus3d.yaml").read_text())
        doc["schedule"]["chunks"] = chunks
        doc["workload"]["astra"] = str(ROOT / "problems" / doc["workload"]["astra"])
        (Path(d) / "p.yaml").write_text(yaml.safe_dump(doc))
        w0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", wrapper, "solve", str(Path(d) / "p.yaml"), "--out",
                            str(Path(d) / "out")], cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - w0
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    kb = int(r.stderr.split("HWM ")[-1].split()[0])
    return f"| {chunks} | {wall:.1f} | {kb / 1024:.0f} |"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the two target cases only, fewer repetitions")
    args = ap.parse_args()
    reps = 2 if args.quick else 5
    if replay._kernel is None:
        sys.exit("the compiled replay was not built (codesign/sim/_kernel.c): pip install -e . with a C compiler")
    print(f"Python {platform.python_version()} on {platform.machine()}; 8 iterations replayed; before = "
          f"tests/reference_replay.py, Python = codesign.sim.replay's Python loop, compiled = its compiled loop; "
          f"run alternately, best of {reps} (the 500-layer problem: of 2)")
    print()
    print(HEADER)
    r50 = codesign.load_problem(ROOT / "problems" / "resnet50_ace_torus3d.yaml")
    best, r = paired(r50, ace(8, 128, 128), reps)
    print(row("ResNet-50 ACE, 8 MiB / 128 / 128 GB/s", r50, r, best), flush=True)
    path = scale_problem()
    if path is not None:
        big = codesign.load_problem(path)
        best, r = paired(big, ace(4, 128, 128), 2)
        print(row(f"{path.stem}, 4 MiB / 128 / 128 GB/s", big, r, best), flush=True)
    if args.quick:
        return
    for name in ("quickstart", "resnet50_ace_torus3d", "resnet50_baseline_torus3d", "gnmt_ace_torus2d"):
        p = codesign.load_problem(ROOT / "problems" / f"{name}.yaml")
        s = codesign.solve(p)
        best, r = paired(p, design_of(p.engine, s.choice), reps, order=s.priority)
        print(row(f"{name} (solved design)", p, r, best), flush=True)
    print()
    print("ResNet-50 ACE (4x4x4) at 8 MiB / 128 / 128 GB/s, each in a fresh process (peak = the process's peak")
    print("resident set, VmHWM; replay = its growth during the replay):")
    print()
    print("| chunks | loop | events | wall (s) | CPU (s) | M events/s (wall) | peak RSS (MB) | replay (MB) |")
    print("|---|---|---|---|---|---|---|---|")
    for chunks in (4, 64, 256, 1024):
        for loop in ("compiled", "python"):
            print(big_chunks(chunks, loop), flush=True)
    print()
    print("`codesign solve P.yaml --out DIR` on ResNet-50 ACE, a fresh process (search, validation, the files")
    print("and the two pictures):")
    print()
    print("| chunks | wall (s) | peak RSS (MB) |")
    print("|---|---|---|")
    for chunks in (4, 1024):
        print(solve_out(chunks), flush=True)
    print()
    print("Growth, compiled loop (ResNet-50 ACE at its solved design; best of 3):")
    print()
    print("| chunks | iterations | events | wall (ms) |")
    print("|---|---|---|---|")
    s0 = codesign.solve(r50)
    d0 = design_of(r50.engine, s0.choice)
    for chunks, iters in ((1, 8), (4, 8), (16, 8), (4, 16), (4, 32)):
        p = dataclasses.replace(r50, schedule=dataclasses.replace(r50.schedule, chunks=chunks))
        best = float("inf")
        for _ in range(3):
            w0 = time.perf_counter()
            r = simulate(p, d0, iterations=iters)
            best = min(best, time.perf_counter() - w0)
        print(f"| {chunks} | {iters} | {r.events} | {best * 1e3:.1f} |")
    print()


if __name__ == "__main__":
    main()
