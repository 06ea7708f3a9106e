"""``codesign accuracy`` (predictions against measured runs) and ``codesign calibrate`` (a profile fitted to
microbenchmarks and single-node runs); docs/accuracy.md."""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from ..errors import SpecError

Handler = Callable[[argparse.Namespace], int]


def register(sub: Any) -> dict[str, Handler]:
    """Add ``accuracy`` and ``calibrate`` to ``sub`` (argparse subparsers)."""
    a = sub.add_parser("accuracy", help="predict measured training runs and report the errors",
                       description="Rebuild each row of a measured-runs CSV (vTrain's columns, docs/accuracy.md) "
                       "as an LLM training problem on a cluster profile, simulate it, and print measured, "
                       "predicted and error per row, the mean and worst absolute error, and Spearman's rank "
                       "correlation within each model size.")
    a.add_argument("runs", help="measured runs, CSV")
    a.add_argument("--platform", required=True, metavar="NAME", help="cluster profile (shipped name or .yaml path)")
    a.add_argument("--json", action="store_true", help="one JSON document on stdout")
    c = sub.add_parser("calibrate", help="fit a platform profile to microbenchmarks or single-node runs",
                       description="Fit a profile's parameters by least absolute relative deviation (LPs on "
                       "HiGHS) and write the fitted profile, with its residuals, to a new file. 'compute': a "
                       "GPU's compute model to single-node training runs; 'collectives': a cluster's intra-node "
                       "network to nccl-tests all-reduce tables. Never fit multi-node training runs: those are "
                       "what 'codesign accuracy' judges.")
    c.add_argument("what", choices=("compute", "collectives"), help="what to fit")
    c.add_argument("data", nargs="+", help="compute: one runs CSV; collectives: nccl-tests tables (..._<N>gpu.csv)")
    c.add_argument("--platform", required=True, metavar="NAME", help="the cluster profile to start from")
    c.add_argument("--out", required=True, metavar="FILE", help="the fitted profile (.yaml)")
    c.add_argument("--every", type=int, default=1, metavar="K", help="compute: fit every K-th run (default 1)")
    c.add_argument("--iterations", type=int, default=6, metavar="N", help="compute: LP iterations at most")
    c.add_argument("--gemm", metavar="CSV", help="compute: measured matrix products (m, n, k, TFLOP/s) that pin "
                   "gemm_efficiency before the other four are fitted to the runs")
    return {"accuracy": accuracy_command, "calibrate": calibrate_command}


def accuracy_command(args: argparse.Namespace) -> int:
    from ..calibrate.accuracy import accuracy, as_json, platform_of
    from ..calibrate.runs import read_runs

    runs = read_runs(args.runs)
    cl, gpu = platform_of(args.platform)
    acc = accuracy(runs, cl, gpu)
    if args.json:
        print(json.dumps(as_json(acc), indent=1))
        return 0
    print(f"{'line':>4}  {'model':<7} {'GPUs':>5} {'TPxDPxPP':>10} {'mb':>3}  {'measured':>9}  {'predicted':>9}  error")
    for r in acc.rows:
        run = r.run
        head = (f"{run.line:>4}  {run.model:<7} {run.gpus:>5} {f'{run.tp}x{run.dp}x{run.pp}':>10} "
                f"{run.micro_batch:>3}  {run.measured_s:>8.3f}s")
        print(head + (f"  {r.predicted_s:>8.3f}s  {100 * r.error:+6.1f}%" if r.predicted_s is not None
                      else f"  not predicted: {r.why}"))
    n = len(acc.errors)
    if acc.mean_abs_error is None:
        print("no row could be predicted")
        return 1
    print(f"{n} of {len(acc.rows)} rows predicted on {acc.platform}: mean absolute error "
          f"{100 * acc.mean_abs_error:.1f}%, worst {100 * acc.max_abs_error:.1f}%")
    rho = ", ".join(f"{m} {v:.2f}" if v is not None else f"{m} -" for m, v in acc.spearman.items())
    print(f"Spearman rank correlation within each model: {rho}")
    return 0


def calibrate_command(args: argparse.Namespace) -> int:
    from dataclasses import replace

    import yaml

    from ..calibrate.accuracy import platform_of
    from ..calibrate.fit import fit_compute, fit_gemm_efficiency, fit_link, read_gemms, read_nccl, residuals_by_size
    from ..calibrate.runs import read_runs
    from ..problem.platforms import profile_path
    from ..spec.files import read_user_file
    from ..spec.outputs import claim_file, write_output
    from ..spec.readers import Ctx

    if args.every < 1 or args.iterations < 1:
        raise SpecError("expected a whole number >= 1", path="--every" if args.every < 1 else "--iterations")
    out = claim_file(args.out)  # a file of the user's there, or a link, stops the command now, before any work
    cl, gpu = platform_of(args.platform)
    gpu_file = profile_path(Ctx(cl.file), cl.gpu, "gpu", None)
    command = "codesign calibrate " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["calibrate"] else ""
    if args.what == "collectives":
        samples = [s for f in args.data for s in read_nccl(f)]
        link, errors = fit_link(samples, cl.intra_node.algorithm)
        doc = yaml.safe_load(read_user_file(cl.file, what="platform profile"))
        kept = {k: v for k, v in doc.get("intra_node", {}).items() if k not in ("phase_latency", "buffer_bandwidth")}
        doc["intra_node"] = {**kept, **_link_doc(link)}  # a term this fit leaves out is not kept from the start
        summary = _residuals(errors)
        buf = f"{link.buffer_bandwidth / 1e9:.1f} GB/s" if link.buffer_bandwidth else "none"
        print(f"intra_node: bandwidth {link.bandwidth / 1e9:.2f} GB/s, latency {link.latency * 1e6:.3f} us per "
              f"step, phase latency {link.phase_latency * 1e6:.2f} us, buffer bandwidth {buf} ({link.algorithm}); "
              f"{len(samples)} samples, {summary}")
        for lo, hi, mean, worst in residuals_by_size(samples, errors):
            print(f"  {lo / 2**20:>5.0f} MiB to {hi / 2**20:>5.0f} MiB: mean {100 * mean:.2f}%, "
                  f"worst {100 * worst:.2f}%")
    else:
        if len(args.data) != 1:
            raise SpecError("compute takes one runs CSV", path="data")
        runs = read_runs(args.data[0])[:: args.every]
        multi = next((r for r in runs if r.gpus > cl.node_size), None)
        if multi is not None:  # multi-node runs are what predictions are judged by: never fitted to
            raise SpecError(f"a run on {multi.gpus} GPUs spans more than one node of {cl.node_size}; calibrate "
                            "compute fits single-node runs only (codesign accuracy judges multi-node ones)",
                            file=multi.file, line=multi.line, path="# GPUs")
        if args.gemm:
            eff, gerr = fit_gemm_efficiency(read_gemms(args.gemm), gpu.compute_model, gpu.hbm_bandwidth)
            gpu = replace(gpu, compute_model=replace(gpu.compute_model, gemm_efficiency=eff))
            print(f"gemm_efficiency {eff:.4f} from {len(gerr)} measured product(s) of {args.gemm}, "
                  f"{_residuals(gerr)}")
        fit = fit_compute(runs, cl, gpu, iterations=args.iterations, fix_gemm=bool(args.gemm),
                          progress=lambda i, e: print(f"iteration {i}: mean absolute error {100 * e:.2f}%",
                                                      file=sys.stderr))
        m = fit.model
        doc = yaml.safe_load(read_user_file(gpu_file, what="platform profile"))
        cm = doc["npu"]["compute_model"]
        cm.update({"gemm_efficiency": round(m.gemm_efficiency, 4), "memory_efficiency": round(m.memory_efficiency, 4),
                   "kernel_overhead": f"{m.kernel_overhead_s * 1e6:.3f} us",
                   "host_overhead": f"{m.host_overhead_s * 1e6:.2f} us",
                   "exchange_overhead": f"{m.exchange_overhead_s * 1e6:.1f} us"})
        errors = list(fit.errors)
        summary = _residuals(errors)
        print(f"compute_model: gemm_efficiency {m.gemm_efficiency:.4f}, memory_efficiency {m.memory_efficiency:.4f}, "
              f"kernel_overhead {m.kernel_overhead_s * 1e6:.3f} us, host_overhead {m.host_overhead_s * 1e6:.2f} us, "
              f"exchange_overhead {m.exchange_overhead_s * 1e6:.1f} us; "
              f"{len(errors)} runs, {summary}")
    doc["calibration"] = {"command": command, "residuals": summary}
    text = (f"# fitted by: {command}\n" if command else "") + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True,
                                                                             width=110)
    write_output(out, lambda f: f.write(text.encode()))
    print(f"wrote {out}")
    return 0


def _link_doc(link: Any) -> dict[str, str]:
    """A fitted network as a cluster profile's ``intra_node`` keys (``problem.platforms.LINK_KEYS``)."""
    out = {"bandwidth": f"{link.bandwidth / 1e9:.2f} GB/s", "latency": f"{link.latency * 1e6:.3f} us",
           "algorithm": link.algorithm}
    if link.phase_latency > 0:
        out["phase_latency"] = f"{link.phase_latency * 1e6:.2f} us"
    if link.buffer_bandwidth is not None:
        out["buffer_bandwidth"] = f"{link.buffer_bandwidth / 1e9:.1f} GB/s"
    return out


def _residuals(errors: list[float]) -> str:
    a = [abs(e) for e in errors]
    return f"mean absolute error {100 * sum(a) / len(a):.2f}%, worst {100 * max(a):.2f}%"
