"""Draw codesign's data flow (docs/architecture.md): boxes for the packages, arrows for what flows.

    python docs/figures/dataflow.py        # writes docs/figures/dataflow.png beside this script

Only matplotlib is needed. The picture is drawn by hand (fixed coordinates) so it stays the same from
run to run; edit BOXES and ARROWS when the packages change.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

OUT = Path(__file__).resolve().with_name("dataflow.png")

INPUT, CORE, SOLVE, OUTPUT, SIDE = "#eeeeee", "#dbe9f6", "#fde7c8", "#d9f0d3", "#efe1f4"

#: name -> (x centre, y centre, width, height, title, detail, colour)
BOXES = {
    "yaml": (0.9, 3.0, 1.4, 1.0, "problem file", "YAML", INPUT),
    "spec": (2.7, 3.0, 1.5, 1.0, "spec", "units, yamlfile,\nreaders", CORE),
    "problem": (4.6, 3.0, 1.6, 1.0, "problem", "load -> Problem", CORE),
    "workload": (3.9, 1.3, 1.5, 1.0, "workload", "layers: ASTRA-sim\ntext, builder, GNMT", CORE),
    "platform": (5.5, 1.3, 1.5, 1.0, "platform", "topology, endpoint,\ncollectives, costs", CORE),
    "schedule": (6.6, 3.0, 1.5, 1.0, "schedule", "iteration, serial,\nbounds", CORE),
    "milp": (8.6, 3.9, 1.5, 0.9, "milp", "Pyomo / HiGHS", SOLVE),
    "sim": (8.6, 2.1, 1.5, 0.9, "sim", "events, replay", SOLVE),
    "pipeline": (10.6, 3.0, 1.6, 1.0, "pipeline", "solve, validation\n-> Solution", SOLVE),
    "report": (12.7, 4.3, 1.5, 0.8, "report", "text, files, plots", OUTPUT),
    "explore": (12.7, 3.0, 1.5, 0.8, "explore", "sweep, pareto", OUTPUT),
    "study": (12.7, 1.7, 1.5, 0.8, "study", "the ACE study", OUTPUT),
    "cli": (14.6, 3.0, 1.3, 1.0, "cli", "codesign ...", OUTPUT),
    "astra_in": (4.6, 0.0, 2.0, 0.8, "ASTRA-sim 1.0 inputs", "workload, network, system", INPUT),
    "astra": (8.6, 0.3, 1.5, 0.9, "astra", "ASTRA-sim 1.0 mode", SIDE),
}

#: (from, to, label, curvature); a label sits at the middle of its arrow unless LABEL_AT says where
ARROWS = [
    ("yaml", "spec", "text", 0.0),
    ("spec", "problem", "values", 0.0),
    ("workload", "problem", "", 0.0),
    ("platform", "problem", "", 0.0),
    ("problem", "schedule", "Problem", 0.0),
    ("schedule", "milp", "", 0.0),
    ("schedule", "sim", "tasks", 0.0),
    ("milp", "pipeline", "design, order", 0.0),
    ("sim", "pipeline", "period", 0.0),
    ("pipeline", "report", "", 0.0),
    ("pipeline", "explore", "", 0.0),
    ("pipeline", "study", "", 0.0),
    ("report", "cli", "", 0.0),
    ("explore", "cli", "", 0.0),
    ("study", "cli", "", 0.0),
    ("astra_in", "workload", "workload text", 0.0),
    ("astra_in", "astra", "", 0.0),
    ("sim", "astra", "EventLoop", 0.0),
    ("astra", "cli", "simulate --astra-*", 0.0),
]
LABEL_AT = {("astra", "cli"): (12.0, 0.3), ("astra_in", "workload"): (4.95, 0.45)}
#: arrows drawn as a right angle (leave horizontally, arrive vertically), around the boxes in between
ELBOWS = {("astra", "cli")}


def _edge(box: tuple, towards: tuple[float, float]) -> tuple[float, float]:
    """Where the line from the box's centre to ``towards`` leaves the box."""
    x, y, w, h = box[:4]
    dx, dy = towards[0] - x, towards[1] - y
    if dx == 0 and dy == 0:
        return x, y
    sx = (w / 2) / abs(dx) if dx else float("inf")
    sy = (h / 2) / abs(dy) if dy else float("inf")
    s = min(sx, sy)
    return x + dx * s, y + dy * s


def draw(out: Path = OUT) -> Path:
    fig, ax = plt.subplots(figsize=(15, 5.6))
    for x, y, w, h, title, detail, colour in BOXES.values():
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                    facecolor=colour, edgecolor="#444444", linewidth=1.0))
        ax.text(x, y + h * 0.18, title, ha="center", va="center", fontsize=11, fontweight="bold")
        ax.text(x, y - h * 0.18, detail, ha="center", va="center", fontsize=8, color="#333333")
    for a, b, label, rad in ARROWS:
        ba, bb = BOXES[a], BOXES[b]
        if (a, b) in ELBOWS:
            start, end = (ba[0] + ba[2] / 2, ba[1]), (bb[0], bb[1] - bb[3] / 2)
            style = "angle,angleA=0,angleB=90,rad=0"
        else:
            start, end = _edge(ba, bb[:2]), _edge(bb, ba[:2])
            style = f"arc3,rad={rad}"
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, linewidth=1.1,
                                     color="#555555", connectionstyle=style, shrinkA=2, shrinkB=2))
        if label:
            mx, my = LABEL_AT.get((a, b), ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2))
            ax.text(mx, my + 0.12, label, ha="center", va="bottom", fontsize=7.5, color="#555555",
                    bbox=dict(facecolor="white", edgecolor="none", pad=0.5))
    ax.set_xlim(-0.1, 15.4)
    ax.set_ylim(-0.6, 4.9)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("codesign: from a problem file to a report (arrows: what flows; every package imports "
                 "only the layers below it)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(draw())
