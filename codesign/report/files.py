"""The files a solve writes under --out: solution.json, schedule.csv, summary.txt and the pictures."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from ..pipeline.solution import Solution
from ..problem.model import Problem
from .plots import gantt, timeline_png
from .text import summary
from .trace import write_trace

#: Every file ``write_outputs`` may write.
OUTPUTS = ("solution.json", "schedule.csv", "summary.txt", "gantt.png", "timeline.png", "trace.json")


def write_outputs(s: Solution, p: Problem, out: Path, *, plot: bool = True, validation=None) -> list[Path]:
    """Write solution.json, schedule.csv, summary.txt, gantt.png and, when validated, trace.json and timeline.png
    into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    doc = s.to_dict()
    if validation is not None:
        doc["validation"] = validation.to_dict()
    (out / "solution.json").write_text(json.dumps(doc, indent=2))
    written.append(out / "solution.json")
    with open(out / "schedule.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "kind", "layer", "start_s", "end_s"])
        for task in s.schedule:
            w.writerow([task.name, task.kind, task.layer, f"{task.start_s:.9e}", f"{task.end_s:.9e}"])
    written.append(out / "schedule.csv")
    (out / "summary.txt").write_text(summary(s, p, validation) + "\n")
    written.append(out / "summary.txt")
    if plot:
        written.append(gantt(s, out / "gantt.png"))
        if validation is not None:
            written.append(timeline_png(validation.sim, p, out / "timeline.png"))
    if validation is not None:
        written.append(write_trace(validation.sim, p, out / "trace.json"))
    return written
