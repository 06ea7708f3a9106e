"""Benchmark: codesign's chunk-grain replay (codesign/sim/replay.py), before and after its speed work.

"Before" is tests/reference_replay.py, the replay as it was frozen before the rewrite (the equivalence
test holds the two to identical answers); "after" is codesign.sim.replay. Each case runs both in turn,
alternating, and keeps each one's best time, so a load that comes and goes on a shared machine hits both
alike. Times are wall clock (perf_counter) and CPU (process_time) per replay, 8 iterations replayed.

Cases: ResNet-50 on ACE at the design of the acceptance target (8 MiB SRAM, 128 GB/s ALU, 128 GB/s DMA),
the 500-layer 1024-NPU problem (problems/scale/, 4 MiB, 128 GB/s, 128 GB/s: ALU contention), ResNet-50 cut
into 1024 chunks per collective (after only, in a fresh process for its peak memory), the shipped problems
at their solved designs, and how the cost grows with chunks and iterations. Run from the repository root:

    python benchmarks/sim_replay.py            # everything (about 3 minutes)
    python benchmarks/sim_replay.py --quick    # the two target cases only, fewer repetitions
"""
from __future__ import annotations

import argparse
import dataclasses
import platform
import subprocess
import sys
import time
from pathlib import Path

import codesign
from codesign.platform.endpoint import Design, design_of
from codesign.sim.replay import simulate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import reference_replay  # noqa: E402  (the frozen replay, tests/reference_replay.py)

MiB = 2**20


def ace(sram_mib: float, alu_gbs: float, dma_gbs: float) -> Design:
    return Design("ace", {"sram": sram_mib * MiB, "alu": alu_gbs * 1e9, "dma": dma_gbs * 1e9})


def paired(problem, design, reps: int, order=None, iterations: int = 8):
    """Best wall and CPU seconds of the reference and the replay, run alternately; and their results."""
    best = {"before": [float("inf"), float("inf")], "after": [float("inf"), float("inf")]}
    res = {}
    for _ in range(reps):
        for name, sim in (("before", reference_replay.simulate), ("after", simulate)):
            w0, c0 = time.perf_counter(), time.process_time()
            res[name] = sim(problem, design, order=order, iterations=iterations)
            w, c = time.perf_counter() - w0, time.process_time() - c0
            best[name] = [min(best[name][0], w), min(best[name][1], c)]
    assert res["before"].period_s == res["after"].period_s and res["before"].events == res["after"].events
    return best, res["after"]


def row(name: str, p, r, best) -> str:
    b, a = best["before"], best["after"]
    ev = r.events
    return (f"| {name} | {len(p.workload.layers)} | {p.topology.npus} | {p.schedule.chunks} | {ev} | "
            f"{b[0] * 1e3:.1f} / {b[1] * 1e3:.1f} | {a[0] * 1e3:.1f} / {a[1] * 1e3:.1f} | "
            f"{ev / b[0] / 1e6:.3f} | {ev / a[0] / 1e6:.3f} / {ev / a[1] / 1e6:.3f} | {b[0] / a[0]:.1f}x |")


def scale_problem() -> Path | None:
    found = sorted((ROOT / "problems" / "scale").glob("*.yaml"))
    return found[0] if found else None


def big_chunks(chunks: int) -> str:
    """ResNet-50 at ``chunks`` chunks per collective in a fresh process: time and peak memory."""
    code = f"""
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
print(f"| {chunks} | {{r.events}} | {{w:.2f}} | {{c:.2f}} | {{r.events / w / 1e6:.3f}} | {{peak:.0f}} | "
      f"{{peak - base:.0f}} |")
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the two target cases only, fewer repetitions")
    args = ap.parse_args()
    reps = 2 if args.quick else 5
    print(f"Python {platform.python_version()} on {platform.machine()}; 8 iterations replayed; before = "
          f"tests/reference_replay.py, after = codesign.sim.replay, run alternately, best of {reps} "
          "(the 500-layer problem: of 2)")
    print()
    print("| case | layers | NPUs | chunks | events | before wall / CPU (ms) | after wall / CPU (ms) | "
          "before M events/s | after M events/s (wall / CPU) | speed-up (wall) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
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
    print("ResNet-50 ACE (4x4x4) at 8 MiB / 128 / 128 GB/s, after only, each in a fresh process (peak = the")
    print("process's peak resident set, VmHWM; replay = its growth during the replay):")
    print()
    print("| chunks | events | wall (s) | CPU (s) | M events/s (wall) | peak RSS (MB) | replay (MB) |")
    print("|---|---|---|---|---|---|---|")
    for chunks in (4, 64, 256, 1024):
        print(big_chunks(chunks), flush=True)
    print()
    print("Growth, after only (ResNet-50 ACE at its solved design):")
    print()
    print("| chunks | iterations | events | wall (ms) |")
    print("|---|---|---|---|")
    s0 = codesign.solve(r50)
    d0 = design_of(r50.engine, s0.choice)
    for chunks, iters in ((1, 8), (4, 8), (16, 8), (4, 16), (4, 32)):
        p = dataclasses.replace(r50, schedule=dataclasses.replace(r50.schedule, chunks=chunks))
        w0 = time.perf_counter()
        r = simulate(p, d0, iterations=iters)
        print(f"| {chunks} | {iters} | {r.events} | {(time.perf_counter() - w0) * 1e3:.1f} |")
    print()


if __name__ == "__main__":
    main()
