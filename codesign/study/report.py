"""The ACE study's reports: the table beside the paper's numbers, the per-case tables, and the files
(CSV of every case, the HBM sweep, the comparisons, summary.json, table.md). Times in the tables are
milliseconds, bandwidths GB/s (1e9 bytes/s); the files keep SI units.
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any, Sequence

from .cases import CONFIGS, WORKLOAD_LABELS

CASE_COLUMNS = ("key", "group", "workload", "npus", "shape", "config", "engine", "latency_s", "status", "gap",
                "milp_s", "sim_s", "sim_vs_milp", "lower_bound_s", "milp_compute_s", "milp_exposed_s", "sim_compute_s",
                "sim_exposed_s", "milp_net_busy_s", "sim_net_busy_s", "wire_bytes", "peak_network_bandwidth",
                "milp_utilization", "sim_utilization", "comm_cores", "comm_hbm_share", "sram_bytes", "alu_bytes_per_s",
                "dma_bytes_per_s", "area_mm2", "solve_s", "wall_s", "file", "finding", "error")
HBM_COLUMNS = ("npus", "shape", "net_scale", "network_bandwidth", "milp_ideal_allreduce_s", "milp_baseline_hbm",
               "milp_ace_hbm", "milp_reduction", "sim_ideal_allreduce_s", "sim_baseline_hbm", "sim_ace_hbm",
               "sim_reduction", "wall_s", "error")


def _x(v: float | None, digits: int = 2) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:.{digits}f}"


def _pair(avg: float | None, mx: float | None, digits: int = 2) -> str:
    return f"{_x(avg, digits)} ({_x(mx, digits)})"


def headline_table(summary: dict[str, Any]) -> str:
    """Our numbers beside the paper's (markdown)."""
    head = summary["headline_figure"]
    other = "milp" if head == "simulator" else "sim"
    paper = summary["paper"]
    cols = ("simulator" if head == "simulator" else "MILP") + " (headline)", "MILP" if other == "milp" else "simulator"
    lines = [f"| metric | paper | ours: {cols[0]} | ours: {cols[1]} |", "|---|---|---|---|"]
    for w, d in summary["workloads"].items():
        p = paper["workloads"].get(w, {})
        lines.append(f"| {WORKLOAD_LABELS.get(w, w)} speedup over the best baseline, avg (max) over sizes | "
                     f"{_pair(p.get('speedup_avg'), p.get('speedup_max'))} | {_pair(d['speedup_avg'], d['speedup_max'])} | "
                     f"{_pair(d[other]['speedup_avg'], d[other]['speedup_max'])} |")
    o = summary[other]
    lines.append(f"| HBM bandwidth to drive the same network bandwidth, baseline / ACE, avg | "
                 f"{paper['hbm_reduction_avg']:.1f} | {_x(summary['hbm_reduction_avg'])} | {_x(o['hbm_reduction_avg'])} |")
    lines.append(f"| effective network-bandwidth utilization, ACE / best baseline, avg (max) | "
                 f"{_pair(paper['utilization_gain_avg'], paper['utilization_gain_max'])} | "
                 f"{_pair(summary['utilization_gain_avg'], summary['utilization_gain_max'])} | "
                 f"{_pair(o['utilization_gain_avg'], o['utilization_gain_max'])} |")
    return "\n".join(lines)


def _ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v * 1e3:.3f}"


def case_table(summary: dict[str, Any], group: str = "study") -> str:
    """Per workload and size: best baseline, ACE, ideal, speedup and utilization gain by both figures, and
    the largest difference between MILP and replay among the case's configurations."""
    header = ("| workload | NPUs | best baseline: MILP / sim | its time (ms): MILP / sim | MILP's split | ACE design "
              "| ACE (ms): MILP / sim | ideal (ms): sim | speedup: MILP / sim | utilization gain: MILP / sim "
              "| largest sim vs MILP |")
    lines = [header, "|---" * 11 + "|"]
    for c in summary["comparisons"]:
        if c["group"] != group:
            continue
        if "error" in c:
            lines.append(f"| {c['workload']} | {c['npus']} | {c['error']} |" + " |" * 8)
            continue
        lines.append(
            f"| {WORKLOAD_LABELS.get(c['workload'], c['workload'])} | {c['npus']} ({c['shape']}) "
            f"| {c['milp_best_baseline']} / {c['sim_best_baseline']} | {_ms(c['milp_baseline_s'])} / {_ms(c['sim_baseline_s'])} "
            f"| {c['baseline_design']} | {c['ace_design']} | {_ms(c['milp_ace_s'])} / {_ms(c['sim_ace_s'])} "
            f"| {_ms(c['sim_ideal_s'])} | {_x(c['milp_speedup'], 3)} / {_x(c['sim_speedup'], 3)} "
            f"| {_x(c['milp_utilization_gain'], 3)} / {_x(c['sim_utilization_gain'], 3)} "
            f"| {100 * c['worst_sim_vs_milp']:+.1f}% ({c['worst_sim_vs_milp_config']}) |")
    return "\n".join(lines)


def hbm_table(summary: dict[str, Any]) -> str:
    header = ("| NPUs | network per NPU (GB/s) | baseline needs (GB/s): MILP / sim | ACE needs (GB/s): MILP / sim "
              "| reduction: MILP / sim |")
    lines = [header, "|---" * 5 + "|"]
    for h in summary["hbm"]:
        if h["error"]:
            lines.append(f"| {h['npus']} | x{h['net_scale']:g}: {h['error']} | | | |")
            continue
        g = 1e9
        lines.append(f"| {h['npus']} ({h['shape']}) | {h['network_bandwidth'] / g:.0f} "
                     f"| {h['milp_baseline_hbm'] / g:.0f} / {h['sim_baseline_hbm'] / g:.0f} "
                     f"| {h['milp_ace_hbm'] / g:.0f} / {h['sim_ace_hbm'] / g:.0f} "
                     f"| {_x(h['milp_reduction'])} / {_x(h['sim_reduction'])} |")
    return "\n".join(lines)


def latency_table(summary: dict[str, Any]) -> str:
    rows = summary["latency_sensitivity"]
    if len({r["latency_s"] for r in rows}) < 2:  # nothing to compare against
        return ""
    wls = list(dict.fromkeys(r["workload"] for r in rows))
    lats = sorted({r["latency_s"] for r in rows})
    lines = ["| link latency | " + " | ".join(f"{WORKLOAD_LABELS.get(w, w)} speedup: sim (MILP)" for w in wls) + " |",
             "|---|" + "---|" * len(wls)]
    for lat in lats:
        cells = []
        for w in wls:
            r = next((r for r in rows if r["workload"] == w and r["latency_s"] == lat), None)
            cells.append("n/a" if r is None else f"{_x(r['sim_speedup'], 3)} ({_x(r['milp_speedup'], 3)})")
        lines.append(f"| {lat * 1e9:g} ns | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report_text(summary: dict[str, Any]) -> str:
    """Everything a reader needs, in markdown: the headline table and the tables behind it."""
    head = summary["headline_figure"]
    intro = (f"ACE study reproduced with codesign: {summary.get('cases_run', '?')} cases in "
             f"{summary.get('wall_s', float('nan')):.0f} s on {summary.get('workers', '?')} worker(s). Headline: the "
             f"{'simulator replay of the MILP designs' if head == 'simulator' else 'MILP'}; the other figure beside it.")
    hbm = ("HBM bandwidth needed to drive the network (one 64 MiB all-reduce, 95% of the ideal endpoint's "
           "throughput):")
    parts = [intro, "", headline_table(summary), "", "Per case (network link latency 1 ns):", "", case_table(summary),
             "", hbm, "", hbm_table(summary)]
    lat = latency_table(summary)
    if lat:
        parts += ["", "Sensitivity to the link latency (64 NPUs):", "", lat]
    if summary.get("failed"):
        parts += ["", "FAILED: " + ", ".join(summary["failed"])]
    parts += ["", "Configurations: " + "; ".join(f"{k}: {v}" for k, v in CONFIGS.items()) + "."]
    return "\n".join(parts)


def _write_csv(path: Path, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in columns})
    return path


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


def write_files(out: Path, summary: dict[str, Any], cases: Sequence[dict[str, Any]],
                hbm: Sequence[dict[str, Any]]) -> list[Path]:
    """cases.csv (every case), comparisons.csv, hbm.csv, summary.json, table.md under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    comps = summary["comparisons"]
    ccols = list(dict.fromkeys(k for c in comps for k in c))
    paths = [_write_csv(out / "cases.csv", cases, CASE_COLUMNS), _write_csv(out / "comparisons.csv", comps, ccols),
             _write_csv(out / "hbm.csv", hbm, HBM_COLUMNS)]
    (out / "summary.json").write_text(json.dumps(json_document(summary, cases), indent=1))
    (out / "table.md").write_text(report_text(summary) + "\n")
    return paths + [out / "summary.json", out / "table.md"]
