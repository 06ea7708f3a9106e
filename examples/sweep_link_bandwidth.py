"""Sweep a link bandwidth: how much does the slow dimension of the quickstart's 4x4 torus cost?

``codesign.sweep`` solves the problem at every value of a YAML key path (here the per-link bandwidth of
dimension 1, six values from 5 to 200 GB/s in log scale) on a local process pool, streams each point to
a CSV as it finishes (rerun this script and every point is read back, not solved), and returns a pandas
DataFrame. The same from the shell:

    codesign sweep problems/quickstart.yaml --param "topology.dims[1].bandwidth=log:5GB/s:200GB/s:6"

Run:  python examples/sweep_link_bandwidth.py [problem.yaml] [output folder]
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from codesign.errors import CodesignError
from codesign.explore.params import params_from
from codesign.explore.plots import plot_sweep
from codesign.explore.sweep import sweep
from codesign.pipeline.solution import design_keys, design_text

HERE = Path(__file__).resolve().parent
PARAMS = {"topology.dims[1].bandwidth": "log:5GB/s:200GB/s:6"}


def main(problem: str, out_dir: Path):
    df = sweep(problem, PARAMS, workers=2, out=out_dir / "link_bandwidth.csv")
    columns = {r: c for r, c in design_keys().items() if c in df.columns}  # the resources the engine sizes
    for _, r in df.iterrows():
        chosen = design_text({res: r[c] for res, c in columns.items() if r[c] == r[c]})  # (NaN: not in the design)
        print(f"dim 1 at {r['topology.dims[1].bandwidth'] / 1e9:7.2f} GB/s per link: {r['status']:8s} "
              f"T = {r['iteration_time_s'] * 1e6:7.1f} us, exposed communication {r['exposed_comm_s'] * 1e6:6.1f} us, "
              f"{chosen}")
    pngs = plot_sweep(df, params_from(PARAMS), out_dir / "link_bandwidth")
    print(f"results in {out_dir / 'link_bandwidth.csv'}; plot {pngs[0]}")
    return df


if __name__ == "__main__":  # the guard matters: pool workers import this file
    problem = sys.argv[1] if len(sys.argv) > 1 else str(HERE.parent / "problems" / "quickstart.yaml")
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp(prefix="codesign-sweep-"))
    try:
        main(problem, out)
    except CodesignError as e:  # a problem this example does not suit, or bad input: one line
        print(f"{Path(__file__).name}: {e}", file=sys.stderr)
        sys.exit(e.exit_status)
