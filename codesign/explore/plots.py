"""Pictures of a sweep: each metric against each parameter (matplotlib, Agg: no display needed).

One PNG per parameter, one panel per metric. In a grid sweep the other parameters make one line each
(up to ``MAX_LINES``; beyond that, points without lines); in a one-at-a-time sweep a parameter's panel
shows the points where it was the one varied. Points without an answer (infeasible, error) are left out
and counted in the title. Axes are in readable units (GB/s, MiB, ms, mm^2, W); log scale when the
parameter spans 20x or more. Each picture is written through the output layer (``spec.outputs.write_output``):
never over a file of the user's, never through a link, whole or not at all.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..spec.outputs import Refused, write_output

#: metric column -> (label, scale to the shown unit)
METRICS = {"iteration_time_s": ("iteration time (ms)", 1e3), "exposed_comm_s": ("exposed communication (ms)", 1e3),
           "area_mm2": ("area (mm^2)", 1.0), "power_w": ("power (W)", 1.0)}
MAX_LINES = 8
SOLVED = ("optimal", "time_limit")
#: base unit of a dimension -> (shown unit, factor from SI)
_AXIS = {"B/s": ("GB/s", 1e-9), "bytes": ("MiB", 2.0**-20), "s": ("us", 1e6), "FLOP/s": ("TFLOP/s", 1e-12),
         "FLOP": ("GFLOP", 1e-9), "mm^2": ("mm^2", 1.0), "W": ("W", 1.0), "Hz": ("GHz", 1e-9)}


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def axis_for(raw_values: Sequence[Any]) -> tuple[str, float]:
    """(unit label, factor from SI) for a parameter written with ``raw_values``."""
    from .params import dimension_of

    dim = dimension_of(raw_values)
    if dim is None:
        return "", 1.0
    return _AXIS.get(dim.base, (dim.base, 1.0))


def plot_paths(params: Sequence[Any], out_prefix: str | Path) -> list[Path]:
    """The pictures ``plot_sweep`` writes, ``<out_prefix>_<parameter>.png``: what a sweep checks before it runs."""
    out_prefix = Path(out_prefix)
    return [out_prefix.with_name(f"{out_prefix.name}_{slug(p.path)}.png") for p in params]


def plot_sweep(df: Any, params: Sequence[Any], out_prefix: str | Path, *,
               metrics: Sequence[str] = tuple(METRICS), flag: str = "--out") -> list[Path]:
    """Draw ``df`` (from ``codesign.sweep``) against each of ``params`` (Param objects); returns the PNGs
    written, ``plot_paths``. A file of the user's at one of them is kept: ``spec.outputs.Refused`` (naming
    ``flag``) once the others are written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .params import canonical

    out_prefix = Path(out_prefix)
    out_prefix.parent.mkdir(parents=True, exist_ok=True)
    metrics = [m for m in metrics if m in df.columns]
    written, refused = [], []
    for p, path in zip(params, plot_paths(params, out_prefix)):
        col = p.path
        unit, factor = axis_for(p.values)
        rows = df[df["varied"] == col] if "varied" in df.columns else df
        ok = rows[rows["status"].isin(SOLVED)]
        others = [q.path for q in params if q.path != col and "varied" not in df.columns]
        units = {q.path: axis_for(q.values) for q in params}
        numeric = all(isinstance(canonical(v), float) for v in p.values)
        fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4), squeeze=False)
        groups = list(ok.groupby(others, dropna=False)) if others else [((), ok)]
        draw_lines = len(groups) <= MAX_LINES
        for ax, metric in zip(axes[0], metrics):
            label, scale = METRICS.get(metric, (metric, 1.0))
            for g, sub in groups:
                sub = sub.sort_values(col) if numeric else sub
                x = sub[col] * factor if numeric else sub[col].astype(str)
                name = ", ".join(f"{o}={v * units[o][1]:g} {units[o][0]}".rstrip() if isinstance(v, float)
                                 else f"{o}={v}" for o, v in zip(others, g if isinstance(g, tuple) else (g,)))
                ax.plot(x, sub[metric] * scale, marker="o", markersize=3.5, linewidth=1.3 if draw_lines else 0,
                        label=name or None)
            if numeric and len(ok):
                xs = ok[col][ok[col] > 0]
                if len(xs) == len(ok) and xs.max() >= 20 * xs.min():
                    ax.set_xscale("log")
            ax.set_xlabel(f"{col}" + (f" ({unit})" if unit else ""))
            ax.set_ylabel(label)
            ax.grid(True, alpha=0.3)
            if others and draw_lines and metric == metrics[0]:
                ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(0.0, -0.22), ncol=2)  # below, off the data
        missing = len(rows) - len(ok)
        fig.suptitle(f"{df['problem'].iloc[0] if len(df) else ''}: sweep of {col}"
                     + (f" ({missing} point(s) without an answer)" if missing else ""), fontsize=10)
        fig.tight_layout()
        try:
            written.append(write_output(path, lambda f, fig=fig: fig.savefig(f, dpi=110, format="png"),
                                        flag=flag))
        except Refused as e:
            refused.append(e)
        finally:
            plt.close(fig)
    if refused:
        raise refused[0]
    return written

