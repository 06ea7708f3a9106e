"""ForestColl's optimal all-gather algorithmic bandwidth (tests/data/forestcoll_allgather.csv) beside codesign's
cut bound and tree packing on the same graphs, with the seconds each of codesign's took. Run:
``PYTHONPATH=. python benchmarks/collectives.py``."""
from __future__ import annotations

import csv
import time
from fractions import Fraction
from pathlib import Path

from codesign.milp.tree_packing import pack_trees
from codesign.platform.graph_bounds import cut_bound
from codesign.platform.graph_generators import generate

DATA = Path(__file__).resolve().parent.parent / "tests/data/forestcoll_allgather.csv"


def main() -> None:
    with open(DATA) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    print(f"{'graph':<18} {'GPUs':>4} {'ForestColl GB/s':>16} {'bound GB/s':>12} {'rel. diff':>10} "
          f"{'bound s':>8} {'packing GB/s':>13} {'packing s':>10}")
    for r in rows:
        spec = f"{r['generator']}:nodes={r['nodes']}"
        g = generate(spec)
        t0 = time.perf_counter()
        cb = cut_bound(g)
        t_bound = time.perf_counter() - t0
        algbw = cb.rate * len(g.npus) / Fraction(10**9)
        exact = Fraction(int(r["gpus"]) * int(r["k"])) / Fraction(r["U"])
        p = pack_trees(g, target_rate=float(cb.rate), time_limit_s=60)
        print(f"{spec:<18} {len(g.npus):>4} {float(exact):>16.6f} {float(algbw):>12.6f} "
              f"{float(algbw / exact - 1):>10.1e} {t_bound:>8.2f} {p.rate * len(g.npus) / 1e9:>13.6f} "
              f"{p.solve_time_s:>10.2f}{'' if p.optimal else ' (not optimal)'}")


if __name__ == "__main__":
    main()
