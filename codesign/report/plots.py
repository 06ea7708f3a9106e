"""Pictures: the Gantt chart of a solution's steady-state iteration and the timeline of a simulated
period, as PNG, to a path or an open binary file (what ``spec.outputs`` hands a writer). matplotlib is imported
inside the functions, on first use."""
from __future__ import annotations

from pathlib import Path

from ..pipeline.solution import Solution
from ..problem.model import Problem

#: One colour per task kind, shared by every timeline picture.
KIND_COLORS = {"forward": "#4C72B0", "input_grad": "#DD8452", "weight_grad": "#55A868", "comm": "#C44E52",
               "idle": "#999999"}


def _finish(fig, ax, path: Path) -> Path:
    """Legend of the task kinds, then write the picture and free it."""
    import matplotlib.pyplot as plt
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in KIND_COLORS.values()]
    ax.legend(handles, list(KIND_COLORS), ncol=5, fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")  # (format: ``path`` may be an open file)
    plt.close(fig)
    return path


def _bars(timeline: list[tuple[str, str, str, float, float]]) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """The timeline's tasks as bars (start, width) in us per (row, kind): a task that starts where the one
    before it on its row ended, for the same collective or compute task, extends that bar. At 1024 chunks a
    period holds some 300,000 chunk-phases, one matplotlib patch each (minutes and gigabytes); a dimension
    serves a collective's chunk-phases back to back, so its bars are its collectives."""
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    last: dict[str, tuple[str, str, list]] = {}  # row -> (name, kind, its open bar [start, end])
    for row, name, kind, start, end in sorted(timeline, key=lambda t: (t[0], t[3], t[4])):
        open_ = last.get(row)
        if open_ is not None and open_[0] == name and open_[1] == kind and open_[2][1] == start:
            open_[2][1] = end
            continue
        bar = [start, end]
        out.setdefault((row, kind), []).append(bar)
        last[row] = (name, kind, bar)
    return {key: [(a * 1e6, (b - a) * 1e6) for a, b in bars] for key, bars in out.items()}


def _draw(ax, y: float, spans: list[tuple[float, float]], color: str, edge: float = 0.2) -> None:
    """Bars (start, width) on row ``y`` as one collection (a patch per bar costs matplotlib about 1 ms and
    10 kB each); a white edge separates them where they are few enough for an edge to show."""
    import numpy as np
    from matplotlib.collections import PolyCollection
    a = np.asarray(spans, dtype=float).reshape(-1, 2)
    x0, x1 = a[:, 0], a[:, 0] + a[:, 1]
    lo, hi = np.full_like(x0, y - 0.3), np.full_like(x0, y + 0.3)
    verts = np.stack([np.stack([x0, lo], 1), np.stack([x0, hi], 1), np.stack([x1, hi], 1), np.stack([x1, lo], 1)], 1)
    ax.add_collection(PolyCollection(verts, facecolors=color, edgecolors="white",
                                     linewidths=edge if len(spans) < 2000 else 0.0), autolim=True)
    ax.autoscale_view()


def timeline_png(res, p: Problem, path: Path) -> Path:
    """One simulated steady-state period: compute and each network dimension's chunk-phases."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = ["compute"] + [f"dim{d}" for d in range(len(p.topology.dims))]
    labels = ["compute"] + [f"{d.name} (dim{i})" for i, d in enumerate(p.topology.dims)]
    colors = KIND_COLORS
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.6 * len(rows)))
    for (row, kind), spans in _bars(res.timeline).items():
        _draw(ax, len(rows) - 1 - rows.index(row), spans, colors.get(kind, "#777777"))
    ax.set_yticks(range(len(rows)), list(reversed(labels)))
    ax.set_xlim(0, res.period_s * 1e6)
    ax.set_xlabel("time in one simulated steady-state period (us)")
    ax.set_title(f"{p.name}: simulated period {res.period_s * 1e3:.3f} ms")
    return _finish(fig, ax, path)


def gantt(s: Solution, path: Path) -> Path:
    """One iteration of the steady state: compute on one row, the network on another."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = KIND_COLORS
    fig, ax = plt.subplots(figsize=(11, 2.8))
    spans: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for task in s.schedule:
        row = 0 if task.kind == "comm" else 1
        spans.setdefault((row, task.kind), []).append((task.start_s * 1e6, (task.end_s - task.start_s) * 1e6))
    for (row, kind), bars in spans.items():
        _draw(ax, row, bars, colors.get(kind, "#777777"), edge=0.3)
    ax.set_xlim(left=min([0.0] + [b[0] for bars in spans.values() for b in bars]))  # from the iteration's start
    ax.axvline(s.iteration_time_s * 1e6, color="black", linestyle="--", linewidth=1)
    ax.set_yticks([0, 1], ["network", "compute"])
    ax.set_xlabel("time in the steady-state iteration (us); dashed: the period")
    ax.set_title(f"{s.problem}: {s.engine}, iteration {s.iteration_time_s * 1e3:.3f} ms ({s.status})")
    return _finish(fig, ax, path)
