"""Anchors for the ASTRA-sim 2.x mode: random inputs run by a rebuilt ASTRA-sim 2.x, its figures kept as test data.

    python benchmarks/astra2_anchors.py --bin DIR --out tests/data/astra2/anchors.json [--cases 240] [--seed 31]

DIR holds the two binaries of a 2.x build (``AstraSim_Analytical_Congestion_Unaware`` and ``_Aware``, built
outside this repository from github.com/astra-sim/astra-sim, docs/astra-sim-2.md says how). Each case is a
network, a system and a small program per rank (collectives, compute, dependencies), written with codesign's
own writers; the file keeps the inputs and the per-rank finish 2.x printed ("sys[r] finished, T cycles"), and
codesign's figure beside it, so a difference shows at once. Nothing of 2.x is copied: only its outputs.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codesign.astra2.mode import program_trace, simulate_astra2  # noqa: E402

FINISH = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles")
COMM = {"ALL_REDUCE": 0, "ALL_GATHER": 2, "ALL_TO_ALL": 6, "REDUCE_SCATTER": 7}


def random_case(rng: random.Random, i: int) -> dict:
    aware = rng.random() < 0.5
    dims = 1 if aware or rng.random() < 0.5 else rng.choice((2, 3))
    topo = [rng.choice(("Ring", "FullyConnected", "Switch")) for _ in range(dims)]
    npus = [rng.choice((2, 4, 8) if dims > 1 else (2, 3, 4, 5, 6, 8, 16)) for _ in range(dims)]
    pow2 = all(n & (n - 1) == 0 for n in npus)
    algos = ("ring", "direct", "halvingDoubling") if pow2 else ("ring", "direct")
    impl = {k: [rng.choice(algos) for _ in range(dims)] for k in
            ("all-reduce-implementation", "all-gather-implementation", "reduce-scatter-implementation")}
    impl["all-to-all-implementation"] = [rng.choice(("ring", "direct")) for _ in range(dims)]
    system = {"scheduling-policy": rng.choice(("LIFO", "FIFO")), "endpoint-delay": rng.choice((0, 1, 1, 10, 10, 50)),
              "active-chunks-per-dimension": rng.choice((1, 1, 2, 4)),
              "preferred-dataset-splits": rng.choice((1, 2, 4, 8, 16)), **impl,
              "collective-optimization": rng.choice(("baseline", "localBWAware"))}
    if rng.random() < 0.8:
        system["local-mem-bw"] = rng.choice((50, 400, 1600, 3350, 100000))
    network = {"topology": topo, "npus_count": npus, "bandwidth": [rng.choice((25.0, 50.0, 100.0, 400.0, 12.5))
                                                                    for _ in range(dims)],
               "latency": [rng.choice((0.0, 1.0, 100.0, 500.0, 936.25)) for _ in range(dims)]}
    nodes: list[dict] = []
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        ctype = rng.choice(tuple(COMM))
        d: dict = {"id": len(nodes), "comm_type": COMM[ctype], "comm_size": rng.choice((1 << 20, 65536, 3 << 18, 4096,
                                                                                        1_000_000))}
        if dims > 1 and rng.random() < 0.3:
            inv = [rng.random() < 0.6 for _ in range(dims)]
            inv[rng.randrange(dims)] = True
            d["involved_dim"] = inv
        if nodes and rng.random() < 0.6:
            d["deps"] = [rng.randrange(len(nodes))]
        nodes.append(d)
        if rng.random() < 0.4:
            nodes.append({"id": len(nodes), "duration_us": rng.choice((0, 1, 5, 20)), "deps": [len(nodes) - 1]})
    return {"name": f"random{i:03d}", "backend": "congestion-aware" if aware else "congestion-unaware",
            "network": network, "system": system, "program": nodes}


def write_inputs(case: dict, folder: Path) -> tuple[Path, Path, str]:
    net = folder / "network.yml"
    net.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in case["network"].items()))
    sys_ = folder / "system.json"
    sys_.write_text(json.dumps(case["system"], indent=1))
    n = 1
    for c in case["network"]["npus_count"]:
        n *= c
    data = program_trace(case["program"])
    for r in range(n):
        (folder / f"w.{r}.et").write_bytes(data)
    return net, sys_, str(folder / "w")


def run_astra2(binary: Path, net: Path, sys_: Path, prefix: str, memory: Path) -> tuple[list[int] | None, float, str]:
    t = time.perf_counter()
    p = subprocess.run([str(binary), f"--workload-configuration={prefix}", f"--system-configuration={sys_}",
                        f"--remote-memory-configuration={memory}", f"--network-configuration={net}"],
                       capture_output=True, text=True, timeout=120, cwd=net.parent)  # (2.x writes log/ there)
    dt = time.perf_counter() - t
    found = {int(a): int(b) for a, b in FINISH.findall(p.stdout + p.stderr)}
    if p.returncode != 0 or not found:
        return None, dt, f"exit {p.returncode}: {(p.stderr or p.stdout).strip().splitlines()[-1:]}"
    return [found[r] for r in sorted(found)], dt, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    out, same, crashed = [], 0, 0
    t_2x = t_ours = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        memory = Path(tmp) / "memory.json"
        memory.write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
        for i in range(args.cases):
            case = random_case(rng, i)
            folder = Path(tmp) / case["name"]
            folder.mkdir()
            net, sys_, prefix = write_inputs(case, folder)
            binary = args.bin / ("AstraSim_Analytical_Congestion_" + ("Aware" if case["backend"] == "congestion-aware"
                                                                      else "Unaware"))
            ranks, dt, why = run_astra2(binary, net, sys_, prefix, memory)
            t_2x += dt
            t = time.perf_counter()
            res = simulate_astra2(str(net), str(sys_), prefix, backend=case["backend"])
            ours = [r.finish_ns for r in res.ranks]
            case["codesign_events"] = res.events
            t_ours += time.perf_counter() - t
            case["astra2_finish_ns"] = ranks
            if ranks is None:
                case["astra2_crash"] = why
                crashed += 1
            else:
                same += ranks == ours
            out.append(case)
    args.out.write_text(json.dumps({"origin": "ASTRA-sim 2.x (github.com/astra-sim/astra-sim 518bd51, analytical "
                                    "backends of astra-network-analytical 599a047), rebuilt outside this repository; "
                                    f"inputs: benchmarks/astra2_anchors.py --seed {args.seed}; "
                                    "MIT licence (figures only)",
                                    "cases": out}, indent=1))
    print(f"{len(out)} cases: {same} exact in every rank, {crashed} where 2.x stopped, "
          f"{len(out) - same - crashed} different; 2.x {t_2x:.1f} s, codesign {t_ours:.1f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
