"""Anchors for the ASTRA-sim 2.x mode: random inputs run by a rebuilt ASTRA-sim 2.x, its figures kept as test data.

    python benchmarks/astra2_anchors.py --bin DIR --out tests/data/astra2/anchors.json [--cases 240] [--seed 31]
    python benchmarks/astra2_anchors.py --kinds nodes --bin DIR --out tests/data/astra2/anchors_nodes.json

``--kinds nodes``: cases with a program per rank of send/receive pairs, collectives on communicator groups
(a --comm-group-configuration file), memory nodes (a remote memory per NPU, per node or a pool) and the
doubleBinaryTree and one* algorithms, for figures of 2.x on what tests/test_sim_astra2_nodes.py derives by
hand. Without ``--bin`` only codesign runs (a check of the generator; its output is not anchors).

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
from codesign.errors import SpecError  # noqa: E402

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


def random_nodes_case(rng: random.Random, i: int) -> dict:
    """A case of send/receive, group, memory nodes and the tree and one* algorithms: steps applied to every
    rank alike, so that what one rank sends another receives and a group's members issue the same collectives."""
    aware = rng.random() < 0.4
    dims = 1 if aware or rng.random() < 0.5 else 2
    npus = [rng.choice((2, 4, 8) if dims > 1 else (2, 4, 8, 16)) for _ in range(dims)]
    total = 1
    for n in npus:
        total *= n
    topo = [rng.choice(("Ring", "FullyConnected", "Switch")) for _ in range(dims)]
    plain = ("ring", "direct", "halvingDoubling", "doubleBinaryTree")
    impl = {}
    for k in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"):
        names = [rng.choice(plain if k != "all-to-all" else ("ring", "direct")) for _ in range(dims)]
        if rng.random() < 0.3:
            cut = rng.randrange(dims)
            names = names[:cut] + [rng.choice(("oneRing", "oneDirect") if k == "all-to-all" else
                                              ("oneRing", "oneDirect", "oneHalvingDoubling"))]
        impl[f"{k}-implementation"] = names
    system = {"scheduling-policy": rng.choice(("LIFO", "FIFO")), "endpoint-delay": rng.choice((1, 10, 50)),
              "active-chunks-per-dimension": rng.choice((1, 1, 2)), "preferred-dataset-splits": rng.choice((1, 2, 4)),
              **impl, "collective-optimization": rng.choice(("baseline", "localBWAware")), "local-mem-bw": 1600}
    network = {"topology": topo, "npus_count": npus, "bandwidth": [rng.choice((25.0, 50.0, 100.0)) for _ in npus],
               "latency": [rng.choice((1.0, 100.0, 500.0)) for _ in npus]}
    ranks = list(range(total))
    half = total // 2
    order = ranks[:] if rng.random() < 0.5 else rng.sample(ranks, total)
    groups = {"1": order[:half], "2": order[half:]} if half > 1 else {}
    memory = rng.choice(({"memory-type": "PER_NPU_MEMORY_EXPANSION"}, {"memory-type": "MEMORY_POOL"},
                         {"memory-type": "PER_NODE_MEMORY_EXPANSION", "num-nodes": 2, "num-npus-per-node": half or 1}))
    memory = {**memory, "remote-mem-latency": rng.choice((0, 100, 1000)), "remote-mem-bw": rng.choice((10, 100))}
    programs: dict[int, list[dict]] = {r: [] for r in ranks}

    def add(r: int, node: dict) -> None:
        p = programs[r]
        if p and rng.random() < 0.7:
            node["deps"] = [len(p) - 1]
        p.append({"id": len(p), **node})
    for _ in range(rng.choice((2, 3, 4))):
        kind = rng.choice(("p2p", "p2p", "coll", "group", "mem", "comp"))
        size = rng.choice((1 << 20, 65536, 4096))
        if kind == "p2p":
            src, dst = rng.sample(ranks, 2)
            tag = rng.randrange(8)
            add(src, {"send_to": dst, "comm_size": size, "tag": tag})
            add(dst, {"recv_from": src, "comm_size": size, "tag": tag})
        elif kind in ("coll", "group"):
            ctype = rng.choice(tuple(COMM))
            g = rng.choice(("1", "2")) if kind == "group" and groups else None
            for r in (groups[g] if g else ranks):
                add(r, {"comm_type": COMM[ctype], "comm_size": size, **({"pg_name": g} if g else {})})
        elif kind == "mem":
            for r in rng.sample(ranks, rng.randint(1, total)):
                add(r, {"mem": rng.choice(("load", "store")), "tensor_size": size})
        else:
            for r in ranks:
                add(r, {"duration_us": rng.choice((1, 5, 20))})
    for r in ranks:
        if not programs[r]:
            add(r, {"duration_us": 1})
    return {"name": f"nodes{i:03d}", "backend": "congestion-aware" if aware else "congestion-unaware",
            "network": network, "system": system, "groups": groups, "memory": memory,
            "programs": {str(r): p for r, p in programs.items()}}


def write_inputs(case: dict, folder: Path) -> tuple[Path, Path, str]:
    net = folder / "network.yml"
    net.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in case["network"].items()))
    sys_ = folder / "system.json"
    sys_.write_text(json.dumps(case["system"], indent=1))
    n = 1
    for c in case["network"]["npus_count"]:
        n *= c
    data = program_trace(case["program"]) if "program" in case else b""
    for r in range(n):
        (folder / f"w.{r}.et").write_bytes(program_trace(case["programs"][str(r)]) if "programs" in case else data)
    if case.get("groups"):
        (folder / "groups.json").write_text(json.dumps(case["groups"]))
    if "memory" in case:
        (folder / "memory.json").write_text(json.dumps(case["memory"]))
    return net, sys_, str(folder / "w")


def run_astra2(binary: Path, net: Path, sys_: Path, prefix: str, memory: Path,
               groups: Path | None = None) -> tuple[list[int] | None, float, str]:
    t = time.perf_counter()
    extra = [f"--comm-group-configuration={groups}"] if groups else []
    p = subprocess.run([str(binary), f"--workload-configuration={prefix}", f"--system-configuration={sys_}",
                        f"--remote-memory-configuration={memory}", f"--network-configuration={net}", *extra],
                       capture_output=True, text=True, timeout=120, cwd=net.parent)  # (2.x writes log/ there)
    dt = time.perf_counter() - t
    found = {int(a): int(b) for a, b in FINISH.findall(p.stdout + p.stderr)}
    if p.returncode != 0 or not found:
        return None, dt, f"exit {p.returncode}: {(p.stderr or p.stdout).strip().splitlines()[-1:]}"
    return [found[r] for r in sorted(found)], dt, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", type=Path, help="the 2.x build's bin folder (without it, only codesign runs)")
    ap.add_argument("--kinds", choices=("collectives", "nodes"), default="collectives")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    out, same, crashed, refused = [], 0, 0, 0
    t_2x = t_ours = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        memory = Path(tmp) / "memory.json"
        memory.write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
        for i in range(args.cases):
            case = random_case(rng, i) if args.kinds == "collectives" else random_nodes_case(rng, i)
            folder = Path(tmp) / case["name"]
            folder.mkdir()
            net, sys_, prefix = write_inputs(case, folder)
            mem = folder / "memory.json" if "memory" in case else memory
            groups = folder / "groups.json" if case.get("groups") else None
            ranks, why = None, "2.x not run (no --bin)"
            if args.bin is not None:
                binary = args.bin / ("AstraSim_Analytical_Congestion_" +
                                     ("Aware" if case["backend"] == "congestion-aware" else "Unaware"))
                ranks, dt, why = run_astra2(binary, net, sys_, prefix, mem, groups)
                t_2x += dt
            t = time.perf_counter()
            try:
                res = simulate_astra2(str(net), str(sys_), prefix, backend=case["backend"], remote_memory=str(mem),
                                      comm_group=str(groups) if groups else None)
            except SpecError as e:       # refused: kept with the reason, beside what 2.x did
                case["codesign_refused"] = str(e)
                case["astra2_finish_ns"] = ranks
                out.append(case)
                refused += 1
                continue
            ours = [r.finish_ns for r in res.ranks]
            case["codesign_events"] = res.events
            t_ours += time.perf_counter() - t
            case["astra2_finish_ns"] = ranks
            if ranks is None:
                case["astra2_crash"] = why
                crashed += args.bin is not None
            else:
                same += ranks == ours
            out.append(case)
    args.out.write_text(json.dumps({"origin": "ASTRA-sim 2.x (github.com/astra-sim/astra-sim 518bd51, analytical "
                                    "backends of astra-network-analytical 599a047), rebuilt outside this repository; "
                                    f"inputs: benchmarks/astra2_anchors.py --seed {args.seed}; "
                                    "MIT licence (figures only)",
                                    "cases": out}, indent=1))
    if args.bin is None:
        print(f"{len(out)} cases run by codesign only (no --bin: not anchors): {len(out) - refused} finished, "
              f"{refused} refused (a hang or what 2.x crashes on); codesign {t_ours:.1f} s in all")
        return 0
    print(f"{len(out)} cases: {same} exact in every rank, {crashed} where 2.x stopped, {refused} codesign refused "
          f"(a hang or what 2.x crashes on), {len(out) - same - crashed - refused} different; 2.x {t_2x:.1f} s, "
          f"codesign {t_ours:.1f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
