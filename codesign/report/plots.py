"""Pictures: the Gantt chart of a solution's steady-state iteration and the timeline of a simulated
period. matplotlib is imported inside the functions, on first use."""
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
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def timeline_png(res, p: Problem, path: Path) -> Path:
    """One simulated steady-state period: compute and each network dimension's chunk-phases."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = ["compute"] + [f"dim{d}" for d in range(len(p.topology.dims))]
    labels = ["compute"] + [f"{d.name} (dim{i})" for i, d in enumerate(p.topology.dims)]
    colors = KIND_COLORS
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.6 * len(rows)))
    for row, _, kind, start, end in res.timeline:
        y = len(rows) - 1 - rows.index(row)
        ax.barh(y, (end - start) * 1e6, left=start * 1e6, height=0.6, color=colors.get(kind, "#777777"),
                edgecolor="white", linewidth=0.2)
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
    for task in s.schedule:
        row = 0 if task.kind == "comm" else 1
        ax.barh(row, (task.end_s - task.start_s) * 1e6, left=task.start_s * 1e6, height=0.6,
                color=colors.get(task.kind, "#777777"), edgecolor="white", linewidth=0.3)
    ax.axvline(s.iteration_time_s * 1e6, color="black", linestyle="--", linewidth=1)
    ax.set_yticks([0, 1], ["network", "compute"])
    ax.set_xlabel("time in the steady-state iteration (us); dashed: the period")
    ax.set_title(f"{s.problem}: {s.engine}, iteration {s.iteration_time_s * 1e3:.3f} ms ({s.status})")
    return _finish(fig, ax, path)
