"""The ACE study's pictures (matplotlib, Agg: no display needed).

- ``speedup.png``: ACE's speedup over the best baseline per workload and network size (bars: ours, every
  baseline; diamonds: the paper's baseline, the better of its fixed splits; dashed: the paper's average).
- ``hbm.png``: HBM bandwidth needed to drive the network versus the network's bandwidth per NPU, for
  the baseline endpoint and ACE.
- ``breakdown.png``: iteration time split into compute and exposed communication for every
  configuration, per workload and size.

Every time is the simulator's (codesign's answers are simulated periods).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..spec.outputs import Fill
from .cases import CONFIGS, WORKLOAD_LABELS

SIZE_COLORS = ("#4C72B0", "#55A868", "#DD8452", "#8172B3", "#937860")
ENGINE_COLORS = {"baseline": "#C44E52", "ace": "#4C72B0"}


def _plt() -> Any:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def speedup_png(summary: dict[str, Any], path: Path) -> Path:
    plt = _plt()
    comps = [c for c in summary["comparisons"] if c["group"] == "study" and "error" not in c]
    wls = list(dict.fromkeys(c["workload"] for c in comps))
    sizes = sorted({c["npus"] for c in comps})
    fig, ax = plt.subplots(figsize=(max(5.0, 2.2 * len(wls)), 3.6))
    width = 0.8 / max(1, len(sizes))
    for j, n in enumerate(sizes):
        xs, ys, fixed = [], [], []
        for i, w in enumerate(wls):
            c = next((c for c in comps if c["workload"] == w and c["npus"] == n), None)
            if c is None:
                continue
            xs.append(i - 0.4 + width * (j + 0.5))
            ys.append(c["speedup"])
            fixed.append(c.get("speedup_paper"))
        ax.bar(xs, ys, width * 0.9, color=SIZE_COLORS[j % len(SIZE_COLORS)], label=f"{n} NPUs")
        marks = [(x, y) for x, y in zip(xs, fixed) if y is not None]
        if marks:  # the same ACE over the paper's baseline: the better of its fixed splits
            ax.plot([x for x, _ in marks], [y for _, y in marks], "D", mfc="none", mec="k", ms=5,
                    label="over the paper's baseline (fixed splits)" if j == 0 else None)
    for i, w in enumerate(wls):
        p = (summary["paper"]["workloads"].get(w) or {}).get("speedup_avg")
        if p:
            ax.hlines(p, i - 0.45, i + 0.45, colors="k", linestyles="dashed", lw=1,
                      label="the paper's figure, average" if i == 0 else None)
    ax.axhline(1.0, color="#999999", lw=0.8)
    ax.set_xticks(range(len(wls)), [WORKLOAD_LABELS.get(w, w) for w in wls])
    ax.set_ylabel("speedup of ACE over the best baseline\n(bars: every baseline, the searched split included)",
                  fontsize=8)
    ax.set_ylim(0.9, max([1.6] + [v * 1.05 for c in comps for v in (c["speedup"], c.get("speedup_paper") or 0)]))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png", bbox_inches="tight")
    plt.close(fig)
    return path


def hbm_png(hbm: Sequence[dict[str, Any]], path: Path, hbm_of_npu: float = 900e9) -> Path:
    plt = _plt()
    rows = [h for h in hbm if not h["error"]]
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for eng, label in (("baseline", "baseline endpoint"), ("ace", "ACE")):
        pts: dict[float, list[float]] = {}
        for h in rows:
            pts.setdefault(h["network_bandwidth"], []).append(h[f"{eng}_hbm"])
        xs = sorted(pts)
        ys = [sum(pts[x]) / len(pts[x]) for x in xs]  # the sizes nearly coincide: their mean
        ax.plot([x / 1e9 for x in xs], [y / 1e9 for y in ys], "-", marker="o", ms=4, color=ENGINE_COLORS[eng],
                label=label)
        for h in rows:  # every size, as small dots
            ax.plot(h["network_bandwidth"] / 1e9, h[f"{eng}_hbm"] / 1e9, ".", color=ENGINE_COLORS[eng], ms=2)
    ax.axhline(hbm_of_npu / 1e9, color="#999999", lw=0.8, ls=":")
    ax.text(ax.get_xlim()[0], hbm_of_npu / 1e9, " the NPU's whole HBM (V100: 900 GB/s)", fontsize=7, va="bottom")
    ax.set_xlabel("network bandwidth per NPU, all dimensions (GB/s per direction)")
    ax.set_ylabel("HBM bandwidth needed by communication (GB/s)")
    ax.set_title("HBM bandwidth to reach 95% of the ideal endpoint's all-reduce throughput", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)
    return path


#: How a configuration is named under its bar (its key's underscores are no reader's words).
CONFIG_LABELS = {"baseline": "searched split", "comm_opt": "comm-opt", "comp_opt": "comp-opt",
                 "no_overlap": "no overlap", "ideal": "ideal", "ace": "ACE"}


def breakdown_png(cases: Sequence[dict[str, Any]], path: Path) -> Path:
    """Per workload, per size, a bar per configuration (named under it): compute and exposed communication."""
    plt = _plt()
    from matplotlib.transforms import blended_transform_factory
    rows = [r for r in cases if r["group"] == "study" and not r["error"]]
    wls = list(dict.fromkeys(r["workload"] for r in rows))
    configs = [c for c in CONFIGS if any(r["config"] == c for r in rows)]
    fig, axes = plt.subplots(1, max(1, len(wls)), figsize=(4.6 * max(1, len(wls)), 4.2), squeeze=False)
    for col, w in enumerate(wls):
        sizes = sorted({r["npus"] for r in rows if r["workload"] == w})
        ax = axes[0][col]
        x = 0.0
        ticks: list[tuple[float, str]] = []
        groups: list[tuple[float, int]] = []
        for n in sizes:
            first = x
            for cfg in configs:
                r = next((r for r in rows if r["workload"] == w and r["npus"] == n and r["config"] == cfg), None)
                if r is None:
                    continue
                comp = r["compute_time_s"] * 1e3
                exp = r["exposed_comm_s"] * 1e3
                ax.bar(x, comp, 0.8, color="#4C72B0", label="compute" if x == 0 else None)
                ax.bar(x, exp, 0.8, bottom=comp, color="#C44E52", label="exposed communication" if x == 0 else None)
                ticks.append((x, CONFIG_LABELS.get(cfg, cfg.replace("_", " "))))
                x += 1
            groups.append(((first + x - 1) / 2, n))
            x += 1
        ax.set_xticks([t for t, _ in ticks], [lab for _, lab in ticks], rotation=90, fontsize=6)
        below = blended_transform_factory(ax.transData, ax.transAxes)
        for gx, n in groups:  # the size under its group of bars, below the configurations' names
            ax.text(gx, -0.36, f"{n} NPUs", transform=below, ha="center", va="top", fontsize=7)
        ax.set_title(WORKLOAD_LABELS.get(w, w), fontsize=9)
        ax.set_ylabel("iteration time (ms)", fontsize=8)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="upper right", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 0.94))
    fig.savefig(path, dpi=110, format="png", bbox_inches="tight")
    plt.close(fig)
    return path


#: Every picture ``plot_files`` may make.
PLOTS = ("speedup.png", "breakdown.png", "hbm.png")


def plot_files(summary: dict[str, Any], cases: Sequence[dict[str, Any]],
               hbm: Sequence[dict[str, Any]]) -> dict[str, Fill]:
    """The pictures, name -> fill (``spec.outputs``); hbm.png only when an HBM point has an answer."""
    files: dict[str, Fill] = {"speedup.png": lambda f: speedup_png(summary, f),
                              "breakdown.png": lambda f: breakdown_png(cases, f)}
    if any(not h["error"] for h in hbm):
        files["hbm.png"] = lambda f: hbm_png(hbm, f)
    return files
