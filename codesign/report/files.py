"""The files a solve writes under --out: solution.json, schedule.csv, summary.txt and the pictures."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from ..pipeline.solution import Solution
from ..problem.model import Problem
from ..spec.outputs import Fill, record_outputs
from .plots import gantt, timeline_png
from .text import summary
from .trace import write_trace

#: Every file ``write_outputs`` may write.
OUTPUTS = ("solution.json", "schedule.csv", "summary.txt", "gantt.png", "timeline.png", "trace.json")


def text_fill(text: str) -> Fill:
    """A fill (``spec.outputs``) writing ``text`` as UTF-8."""
    return lambda f: f.write(text.encode())


def output_files(s: Solution, p: Problem, *, plot: bool = True, validation=None) -> dict[str, Fill]:
    """What a solve writes, name -> fill: solution.json, schedule.csv, summary.txt, gantt.png and, when validated,
    timeline.png and trace.json. Each is made when written, so a picture costs nothing until then."""
    doc = s.to_dict()
    if validation is not None:
        doc["validation"] = validation.to_dict()
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(["name", "kind", "layer", "start_s", "end_s"])
    for task in s.schedule:
        w.writerow([task.name, task.kind, task.layer, f"{task.start_s:.9e}", f"{task.end_s:.9e}"])
    files = {"solution.json": text_fill(json.dumps(doc, indent=2)), "schedule.csv": text_fill(buf.getvalue()),
             "summary.txt": text_fill(summary(s, p, validation) + "\n")}
    if plot:
        files["gantt.png"] = lambda f: gantt(s, f)
        if validation is not None:
            files["timeline.png"] = lambda f: timeline_png(validation.sim, p, f)
    if validation is not None:
        files["trace.json"] = lambda f: write_trace(validation.sim, p, f)
    return files


def write_outputs(s: Solution, p: Problem, out: Path, *, plot: bool = True, validation=None) -> list[Path]:
    """Write ``output_files`` into ``out`` through the output layer (``spec.outputs.record_outputs``: nothing of
    the user's written over); returns the paths written."""
    return record_outputs(out, OUTPUTS, output_files(s, p, plot=plot, validation=validation))
