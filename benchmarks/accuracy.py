"""codesign's predictions against measured multi-node training runs: ``codesign accuracy`` on the shipped
validation sets (data/measured/validation/), timed as a user runs it (the whole command), and the
predicted-vs-measured picture docs/accuracy.md shows.

    python benchmarks/accuracy.py                       # both sets; writes docs/figures/accuracy.png
    python benchmarks/accuracy.py --no-plot

Prints, per set: rows predicted, mean and worst absolute error, Spearman within each model, the command's wall
time; and the uncalibrated figures beside them (the same rows with the profile's compute model removed: one
peak FLOP/s and the HBM roofline, as codesign predicted before profiles existed).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETS = (("vtrain_multi_node.csv", "vtrain-a100"), ("korthikanti22_table5.csv", "selene-a100"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from codesign.calibrate.accuracy import accuracy, platform_of
    from codesign.calibrate.runs import read_runs

    docs = {}
    for name, platform in SETS:
        path = ROOT / "data" / "measured" / "validation" / name
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "codesign", "accuracy", str(path), "--platform", platform,
                            "--json"], cwd=ROOT, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t0
        doc = json.loads(r.stdout)
        docs[name] = doc
        n = sum(1 for x in doc["rows"] if x["predicted_s"] is not None)
        rho = ", ".join(f"{m} {v:.2f}" if v is not None else f"{m} -" for m, v in doc["spearman_within_model"].items())
        print(f"{name} on {platform}: {n} of {len(doc['rows'])} rows predicted, mean absolute error "
              f"{100 * doc['mean_abs_error']:.1f}%, worst {100 * doc['max_abs_error']:.1f}%; Spearman {rho}; "
              f"codesign accuracy took {wall:.1f} s")
        cl, gpu = platform_of(platform)
        flat = accuracy(read_runs(path), cl, dataclasses.replace(gpu, compute_model=None))
        print(f"  uncalibrated (peak FLOP/s and the HBM roofline, the same network): mean absolute error "
              f"{100 * flat.mean_abs_error:.1f}%, worst {100 * flat.max_abs_error:.1f}%")
    if not args.no_plot:
        plot(docs, ROOT / "docs" / "figures" / "accuracy.png")


def plot(docs: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    hi = 0.0
    for (name, doc), marker in zip(docs.items(), "os"):
        pts = [(x["measured_s"], x["predicted_s"]) for x in doc["rows"] if x["predicted_s"] is not None]
        if not pts:
            continue
        hi = max(hi, *(max(p) for p in pts))
        ax.scatter(*zip(*pts), marker=marker, label=f"{name} ({len(pts)} rows)", alpha=0.8)
    ax.plot([0, hi * 1.05], [0, hi * 1.05], color="grey", lw=1, label="predicted = measured")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured iteration time (s)")
    ax.set_ylabel("codesign's prediction (s)")
    ax.set_title("codesign accuracy: calibrated A100 profiles, multi-node runs")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
