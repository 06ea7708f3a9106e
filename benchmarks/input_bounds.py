"""Benchmark: what the bounds on input work bound (issue 29, "Bounds on work"; BENCHMARKS.md, "Bounds on input work").

Three figures, each wall clock (perf_counter) in this process, one run each (a shared machine: read the load
average printed first):

- the YAML parse with line numbers (``spec.yamlfile.load_yaml``) of a problem file of N layers written as flow
  mappings, up to the file just under ``MAX_YAML_CHARS`` (1 MiB);
- the Chakra codec (``chakra_wire.decode``) and the import rules (``chakra.trace_to_workload``) on a trace of
  compute nodes each releasing an all-reduce, up to the size just under ``MAX_TRACE_BYTES`` (8 MiB);
- a time-limited solve (LIBRA's ResNet-50 with every bandwidth a range), wall clock from before the imports to
  the answer, against its limit.

Run from the repository root:

    python benchmarks/input_bounds.py            # all three (about 2 minutes, most of it the largest trace)
    python benchmarks/input_bounds.py --quick    # YAML and a 4 MiB trace only
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LINE = ("    - {name: fc1, forward: 40 us, input_grad: 40 us, weight_grad: 40 us, update: 1 us, "
        "weight_grad_comm: {collective: all_reduce, bytes: 8 MiB}}\n")


def yaml_parse(sizes: list[int]) -> None:
    from codesign.spec.yamlfile import MAX_YAML_CHARS, load_yaml
    with tempfile.TemporaryDirectory() as d:
        for target in sizes:
            n = min(target, MAX_YAML_CHARS - 100) // len(LINE)
            p = Path(d) / "p.yaml"
            p.write_text("workload:\n  layers:\n" + LINE * n)
            t = time.perf_counter()
            load_yaml(p)
            print(f"yaml   {p.stat().st_size / 2**10:8.0f} KiB ({n:6d} layers): {time.perf_counter() - t:6.2f} s")


def trace(nodes: int) -> bytes:
    from codesign.workload.chakra_wire import NODE_TYPE_IDS, Attr, Node, Trace, encode
    out = []
    for i in range(nodes // 2):
        out.append(Node(2 * i, f"c{i}", NODE_TYPE_IDS["COMP_NODE"], ctrl_deps=(2 * i - 2,) if i else (),
                        duration_micros=10, attrs=(Attr("is_cpu_op", "bool_val", False),)))
        out.append(Node(2 * i + 1, f"a{i}", NODE_TYPE_IDS["COMM_COLL_NODE"], data_deps=(2 * i,),
                        attrs=(Attr("comm_type", "int64_val", 0), Attr("comm_size", "int64_val", 1000))))
    return encode(Trace("0.0.4", (), tuple(out)))


def chakra(megabytes: list[float]) -> None:
    from codesign.workload.chakra import trace_to_workload
    from codesign.workload.chakra_wire import MAX_TRACE_BYTES, decode
    per_node = len(trace(20_000)) / 20_000
    for mb in megabytes:
        want = min(mb * 2**20, MAX_TRACE_BYTES - 1000)
        n = int(want / per_node) // 2 * 2
        data = trace(n)
        while len(data) > want:  # (later nodes have longer ids and names than the estimate's)
            n = int(n * want / len(data) * 0.999) // 2 * 2
            data = trace(n)
        t = time.perf_counter()
        tr = decode(data)
        t1 = time.perf_counter()
        trace_to_workload(tr, file="t.et", name="t", dim_sizes=(4,))
        t2 = time.perf_counter()
        print(f"chakra {len(data) / 2**20:6.2f} MiB ({len(tr.nodes):7d} nodes): decode {t1 - t:6.2f} s, "
              f"import rules {t2 - t1:6.2f} s")


def time_limit(limit: float) -> None:
    text = (ROOT / "problems/libra/resnet50_3d.yaml").read_text()
    for lo, hi in (("50 GB/s", "400 GB/s"), ("25 GB/s", "200 GB/s"), ("3.125 GB/s", "25 GB/s")):
        start = text.index(f"bandwidth: [{lo}")
        text = text[:start] + f"bandwidth: {{min: {lo}, max: {hi}}}" + text[text.index("]", start) + 1:]
    ranged = ROOT / "problems/libra/_ranged_benchmark.yaml"  # beside its workload file (named relative to it)
    ranged.write_text(text)
    try:
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "codesign", "solve", str(ranged), "--time-limit", str(limit)],
                           cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t
        status = next((ln.split()[1] for ln in r.stdout.splitlines() if ln.startswith("solver")), r.stderr.strip())
        print(f"solve  --time-limit {limit:g}: {wall:.2f} s wall ({status})")
    finally:
        ranged.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    yaml_parse([100_000, 500_000, 2**20])
    chakra([1, 4] if args.quick else [1, 4, 8])
    if not args.quick:
        time_limit(10)


if __name__ == "__main__":
    main()
