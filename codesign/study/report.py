"""The ACE study's reports: the table beside the paper's numbers, the per-case tables, and the files
(comparisons.csv, summary.json, table.md; ``run_study`` itself writes cases.csv and hbm.csv). Every time
is the simulator's. Times in the tables are milliseconds, bandwidths GB/s (1e9 bytes/s); the files keep
SI units.
"""
from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

from ..spec.outputs import Fill
from .cases import CONFIGS, WORKLOAD_LABELS


def _x(v: float | None, digits: int = 2) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:.{digits}f}"


def _pair(avg: float | None, mx: float | None, digits: int = 2) -> str:
    return f"{_x(avg, digits)} ({_x(mx, digits)})"


def headline_table(summary: dict[str, Any]) -> str:
    """Our numbers beside the paper's (markdown)."""
    paper = summary["paper"]
    lines = ["| metric | paper | ours |", "|---|---|---|"]
    for w, d in summary["workloads"].items():
        p = paper["workloads"].get(w, {})
        label = WORKLOAD_LABELS.get(w, w)
        lines.append(f"| {label} speedup over the best baseline, the paper's (its fixed comp-opt and comm-opt "
                     f"splits), avg (max) over sizes | {_pair(p.get('speedup_avg'), p.get('speedup_max'))} "
                     f"| {_pair(d.get('speedup_paper_avg'), d.get('speedup_paper_max'))} |")
        lines.append(f"| {label} speedup over the best baseline, ours (every baseline, the searched split "
                     f"included), avg (max) | {_pair(p.get('speedup_avg'), p.get('speedup_max'))} "
                     f"| {_pair(d['speedup_avg'], d['speedup_max'])} |")
    lines.append(f"| HBM bandwidth to drive the same network bandwidth, baseline / ACE, avg | "
                 f"{paper['hbm_reduction_avg']:.1f} | {_x(summary['hbm_reduction_avg'])} |")
    lines.append(f"| effective network-bandwidth utilization, ACE / best baseline, avg (max) | "
                 f"{_pair(paper['utilization_gain_avg'], paper['utilization_gain_max'])} | "
                 f"{_pair(summary['utilization_gain_avg'], summary['utilization_gain_max'])} |")
    return "\n".join(lines)


def _ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v * 1e3:.4g}"


def _paper(c: dict[str, Any]) -> str:
    """The speedup over the paper's best baseline and which of its splits that was."""
    if c.get("speedup_paper") is None:
        return "n/a"
    return f"{_x(c['speedup_paper'], 3)} ({c['paper_baseline'].replace('_', '-')})"


def case_table(summary: dict[str, Any], group: str = "study") -> str:
    """Per workload and size: the best baseline and its split, ACE and its design, the ideal endpoint, the
    speedup, the utilization of the network by the best baseline and by ACE, and their ratio."""
    header = ("| workload | NPUs | best baseline | its split | its time (ms) | ACE design | ACE (ms) | ideal (ms) "
              "| speedup | speedup over the paper's baseline | utilization: best baseline / ACE | utilization gain |")
    lines = [header, "|---" * 12 + "|"]
    for c in summary["comparisons"]:
        if c["group"] != group:
            continue
        if "error" in c:
            lines.append(f"| {c['workload']} | {c['npus']} | {c['error']} |" + " |" * 9)
            continue
        lines.append(
            f"| {WORKLOAD_LABELS.get(c['workload'], c['workload'])} | {c['npus']} ({c['shape']}) "
            f"| {c['best_baseline']} "
            f"| {c['baseline_design']} | {_ms(c['baseline_s'])} | {c['ace_design']} | {_ms(c['ace_s'])} "
            f"| {_ms(c['ideal_s'])} | {_x(c['speedup'], 3)} | {_paper(c)} "
            f"| {_x(c['utilization_baseline'], 3)} / {_x(c['utilization_ace'], 3)} | {_x(c['utilization_gain'], 3)} |")
    return "\n".join(lines)


def hbm_table(summary: dict[str, Any]) -> str:
    lines = ["| NPUs | network per NPU (GB/s) | baseline needs (GB/s) | ACE needs (GB/s) | reduction |",
             "|---" * 5 + "|"]
    for h in summary["hbm"]:
        if h["error"]:
            lines.append(f"| {h['npus']} | x{h['net_scale']:g}: {h['error']} | | | |")
            continue
        g = 1e9
        lines.append(f"| {h['npus']} ({h['shape']}) | {h['network_bandwidth'] / g:.0f} | {h['baseline_hbm'] / g:.0f} "
                     f"| {h['ace_hbm'] / g:.0f} | {_x(h['reduction'])} |")
    return "\n".join(lines)


def latency_table(summary: dict[str, Any]) -> str:
    rows = summary["latency_sensitivity"]
    if len({r["latency_s"] for r in rows}) < 2:  # nothing to compare against
        return ""
    wls = list(dict.fromkeys(r["workload"] for r in rows))
    lats = sorted({r["latency_s"] for r in rows})
    lines = ["| link latency | " + " | ".join(f"{WORKLOAD_LABELS.get(w, w)} speedup (utilization gain)" for w in wls)
             + " |", "|---|" + "---|" * len(wls)]
    for lat in lats:
        cells = []
        for w in wls:
            r = next((r for r in rows if r["workload"] == w and r["latency_s"] == lat), None)
            cells.append("n/a" if r is None else f"{_x(r['speedup'], 3)} ({_x(r['utilization_gain'], 3)})")
        lines.append(f"| {lat * 1e9:g} ns | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report_text(summary: dict[str, Any]) -> str:
    """Everything a reader needs, in markdown: the headline table and the tables behind it."""
    intro = (f"ACE study reproduced with codesign: {summary.get('cases_run', '?')} cases, every time the simulated "
             f"period of the design codesign chose. This run solved {summary.get('solved', '?')} case(s) and HBM "
             f"points in {summary.get('wall_s', float('nan')):.0f} s on {summary.get('where', '?')}"
             + (f" and read {summary['reused']} back from earlier runs" if summary.get("reused") else "") + ".")
    hbm = ("HBM bandwidth needed to drive the network (one 64 MiB all-reduce, 95% of the ideal endpoint's "
           "throughput, in the simulator):")
    parts = [intro, "", headline_table(summary), "", "Per case (network link latency 1 ns):", "", case_table(summary)]
    if summary["hbm"]:
        parts += ["", hbm, "", hbm_table(summary)]
    lat = latency_table(summary)
    if lat:
        parts += ["", "Sensitivity to the link latency (64 NPUs):", "", lat]
    if summary.get("not_optimal"):
        parts += ["", "NOT PROVEN OPTIMAL (time limit): " + ", ".join(summary["not_optimal"])]
    if summary.get("failed"):
        parts += ["", "FAILED: " + ", ".join(summary["failed"])]
    parts += ["", "Configurations: " + "; ".join(f"{k}: {v}" for k, v in CONFIGS.items()) + "."]
    return "\n".join(parts)


def _clean(x: Any) -> Any:
    """JSON without NaN or infinity (null instead)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def json_document(summary: dict[str, Any], cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return _clean({**summary, "cases": list(cases)})


#: The files ``report_files`` makes.
FILES = ("comparisons.csv", "summary.json", "table.md")


def report_files(summary: dict[str, Any], cases: Sequence[dict[str, Any]]) -> dict[str, Fill]:
    """comparisons.csv, summary.json and table.md (beside run_study's cases.csv and hbm.csv), name -> fill
    (``spec.outputs``)."""
    comps = summary["comparisons"]
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=list(dict.fromkeys(k for c in comps for k in c)))
    w.writeheader()
    w.writerows({k: ("" if v is None else v) for k, v in c.items()} for c in comps)
    texts = {"comparisons.csv": buf.getvalue(), "summary.json": json.dumps(json_document(summary, cases), indent=1),
             "table.md": report_text(summary) + "\n"}
    return {n: (lambda f, t=t: f.write(t.encode())) for n, t in texts.items()}
