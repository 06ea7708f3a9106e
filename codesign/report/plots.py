"""Pictures: the Gantt chart of a solution's steady-state iteration and the timeline of a simulated
period, as PNG, to a path or an open binary file (what ``spec.outputs`` hands a writer). matplotlib is imported
inside the functions, on first use."""
from __future__ import annotations

from pathlib import Path

from ..pipeline.solution import Solution
from ..problem.model import Problem
from ..spec.units import SECONDS, format_quantity

#: One colour per task kind, shared by every timeline picture; idle (grey) is the representative NPU waiting.
KIND_COLORS = {"forward": "#4C72B0", "input_grad": "#DD8452", "weight_grad": "#55A868", "backward": "#8172B3",
               "recompute": "#64B5CD", "optimizer": "#937860", "comm": "#C44E52", "idle": "#999999"}
#: Colours for a kind no entry names (a workload of one's own), none of them grey, so none reads as idle.
_MORE_COLORS = ("#DA8BC3", "#8C8C00", "#CCB974", "#2F4F4F", "#FF7F0E", "#17BECF")
#: The hatch of a task's part that runs past the period, drawn where it runs: at the next iteration's start.
WRAP_HATCH = "////"


def kind_color(kind: str, seen: dict[str, str] | None = None) -> str:
    """The colour of ``kind``; an unknown kind gets the next of ``_MORE_COLORS`` (kept in ``seen``)."""
    if kind in KIND_COLORS:
        return KIND_COLORS[kind]
    seen = {} if seen is None else seen
    return seen.setdefault(kind, _MORE_COLORS[len(seen) % len(_MORE_COLORS)])


def _finish(fig, ax, path: Path, kinds: dict[str, str], wrapped: bool = False) -> Path:
    """Legend of the task kinds drawn (beside the plot, never over its bars), then write the picture and free it."""
    import matplotlib.pyplot as plt
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in kinds.values()]
    labels = list(kinds)
    if wrapped:
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="#555555", hatch=WRAP_HATCH))
        labels.append("runs past the period:\ndrawn at the next\niteration's start")
    ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png", bbox_inches="tight")  # (format: ``path`` may be an open file)
    plt.close(fig)
    return path


Spans = list[tuple[float, float]]


def time_axis(period_s: float) -> tuple[str, float]:
    """The unit a time axis up to ``period_s`` is drawn in (the unit its figure is printed in) and its factor."""
    unit = format_quantity(period_s, SECONDS).split()[-1]
    return unit, {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}[unit]


def fold(spans: Spans, period: float) -> tuple[Spans, Spans]:
    """Bars (start, width) cut at the period: (the parts within [0, period], the parts past it moved back by
    whole periods, as the steady state runs them during the next iteration)."""
    inside, past = [], []
    for x0, w in spans:
        x1 = x0 + w
        if period <= 0 or x1 <= period:
            inside.append((x0, w))
            continue
        if x0 < period:
            inside.append((x0, period - x0))
        a = max(x0, period)
        while a < x1:
            k = int(a // period)
            if (k + 1) * period <= a:  # (a on a period's boundary, floored one short by rounding)
                k += 1
            b = min(x1, (k + 1) * period)
            past.append((a - k * period, b - a))
            a = b
    return inside, past


def _bars(timeline: list[tuple[str, str, str, float, float]], scale: float = 1e6) -> dict[tuple[str, str], Spans]:
    """The timeline's tasks as bars (start, width) in seconds times ``scale`` per (row, kind): a task that starts
    where the one before it on its row ended, for the same collective or compute task, extends that bar. At 1024
    chunks a period holds some 300,000 chunk-phases, one matplotlib patch each (minutes and gigabytes); a
    dimension serves a collective's chunk-phases back to back, so its bars are its collectives."""
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
    return {key: [(a * scale, (b - a) * scale) for a, b in bars] for key, bars in out.items()}


def _draw(ax, y: float, spans: Spans, color: str, edge: float = 0.2, hatch: str | None = None) -> None:
    """Bars (start, width) on row ``y`` as one collection (a patch per bar costs matplotlib about 1 ms and
    10 kB each); a white edge separates them where they are few enough for an edge to show."""
    import numpy as np
    from matplotlib.collections import PolyCollection
    if not spans:
        return
    a = np.asarray(spans, dtype=float).reshape(-1, 2)
    x0, x1 = a[:, 0], a[:, 0] + a[:, 1]
    lo, hi = np.full_like(x0, y - 0.3), np.full_like(x0, y + 0.3)
    verts = np.stack([np.stack([x0, lo], 1), np.stack([x0, hi], 1), np.stack([x1, hi], 1), np.stack([x1, lo], 1)], 1)
    if hatch:  # (light, with the kind's colour in the hatch: the part of a task that wrapped past the period)
        ax.add_collection(PolyCollection(verts, facecolors="white", edgecolors=color, hatch=hatch, linewidths=0.0,
                                         alpha=0.9), autolim=True)
    else:
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
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.6 * len(rows)))
    kinds: dict[str, str] = {}
    seen: dict[str, str] = {}
    unit, scale = time_axis(res.period_s)
    for (row, kind), spans in sorted(_bars(res.timeline, scale).items()):
        if row not in rows:
            continue
        kinds[kind] = kind_color(kind, seen)
        _draw(ax, len(rows) - 1 - rows.index(row), spans, kinds[kind])
    ax.set_yticks(range(len(rows)), list(reversed(labels)))
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlim(0, res.period_s * scale)
    ax.set_xlabel(f"time in one simulated steady-state period ({unit})")
    ax.set_title(f"{p.name}: simulated period {format_quantity(res.period_s, SECONDS)}")
    return _finish(fig, ax, path, _ordered(kinds))


def _ordered(kinds: dict[str, str]) -> dict[str, str]:
    """The kinds drawn, in the order of ``KIND_COLORS`` (then any others)."""
    order = list(KIND_COLORS)
    return dict(sorted(kinds.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))


def gantt_figure(s: Solution):
    """The Gantt chart's figure and axes: one iteration of the steady state, compute on one row, the network on
    another, from the iteration's start to its period; what runs past the period (the last collectives, in the
    steady state during the next iteration's start) is drawn hatched where it runs, at the start."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    unit, scale = time_axis(s.iteration_time_s)
    period = s.iteration_time_s * scale
    fig, ax = plt.subplots(figsize=(11, 2.8))
    spans: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for task in s.schedule:
        row = 0 if task.kind == "comm" else 1
        spans.setdefault((row, task.kind), []).append((task.start_s * scale, (task.end_s - task.start_s) * scale))
    kinds: dict[str, str] = {}
    seen: dict[str, str] = {}
    wrapped = False
    start = min([0.0] + [b[0] for bars in spans.values() for b in bars])  # from the iteration's start
    for (row, kind), bars in sorted(spans.items()):
        kinds[kind] = kind_color(kind, seen)
        inside, past = fold([(x - start, w) for x, w in bars], period)
        _draw(ax, row, [(x + start, w) for x, w in inside], kinds[kind], edge=0.3)
        _draw(ax, row, [(x + start, w) for x, w in past], kinds[kind], hatch=WRAP_HATCH)
        wrapped = wrapped or bool(past)
    ax.set_xlim(start, start + period)
    ax.set_ylim(-0.6, 1.6)
    ax.set_yticks([0, 1], ["network", "compute"])
    ax.set_xlabel(f"time in the steady-state iteration ({unit}), from its start to its period")
    ax.set_title(f"{s.problem}: {s.engine}, iteration {format_quantity(s.iteration_time_s, SECONDS)} ({s.status})")
    return fig, ax, _ordered(kinds), wrapped


def gantt(s: Solution, path: Path) -> Path:
    """Write the Gantt chart of ``s`` (``gantt_figure``) at ``path``."""
    fig, ax, kinds, wrapped = gantt_figure(s)
    return _finish(fig, ax, path, kinds, wrapped)
