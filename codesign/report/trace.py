"""One simulated steady-state period as a Chrome trace (``trace.json``), for the timeline viewers people
already use: Perfetto (ui.perfetto.dev), chrome://tracing, Speedscope.

The format is Chrome's trace-event JSON ("Trace Event Format", the JSON Object form): ``traceEvents``, one
``ph: "X"`` (complete) event per task with ``ts`` and ``dur`` in microseconds, and ``ph: "M"`` metadata naming
the process (the representative NPU) and one thread per resource: compute, then each network dimension. A
dimension serves a collective's chunk-phases back to back; those that follow each other without a gap are one
event, as the timeline picture draws them (a period at 1024 chunks holds some 300,000 chunk-phases).
"""
from __future__ import annotations

import json
from typing import BinaryIO

from ..problem.model import Problem
from ..spec.units import SECONDS, format_quantity

#: The trace's process id: the one NPU the replay follows (every NPU of a symmetric platform does the same).
PID = 0


def trace_events(res, p: Problem) -> list[dict]:
    """The trace events of one simulated period of ``res`` (a ``SimResult``) on problem ``p``."""
    rows = ["compute"] + [f"dim{d}" for d in range(len(p.topology.dims))]
    names = ["compute"] + [f"{d.name} (dim{i})" for i, d in enumerate(p.topology.dims)]
    tid = {row: i for i, row in enumerate(rows)}
    title = f"{p.name}: one NPU, simulated period {format_quantity(res.period_s, SECONDS, 6)}"
    events: list[dict] = [{"ph": "M", "pid": PID, "name": "process_name", "args": {"name": title}}]
    for i in tid.values():
        events.append({"ph": "M", "pid": PID, "tid": i, "name": "thread_name", "args": {"name": names[i]}})
        events.append({"ph": "M", "pid": PID, "tid": i, "name": "thread_sort_index", "args": {"sort_index": i}})
    last: dict[str, tuple[dict, float, float]] = {}  # row -> its open event, its start and end (s)
    for row, name, kind, start, end in sorted(res.timeline, key=lambda t: (t[0], t[3], t[4])):
        if row not in tid:
            continue
        prev = last.get(row)
        if prev is not None and prev[0]["name"] == name and prev[0]["cat"] == kind and prev[2] == start:
            prev[0]["dur"] = (end - prev[1]) * 1e6  # the next chunk-phase of the same collective, back to back
            last[row] = (prev[0], prev[1], end)
            continue
        event = {"ph": "X", "pid": PID, "tid": tid[row], "name": name, "cat": kind, "ts": start * 1e6,
                 "dur": (end - start) * 1e6}
        events.append(event)
        last[row] = (event, start, end)
    return events


def write_trace(res, p: Problem, f: BinaryIO) -> None:
    """Write ``trace.json`` into ``f``, an open binary file (the output layer's, ``spec.outputs``): open it in
    ui.perfetto.dev or chrome://tracing."""
    doc = {"traceEvents": trace_events(res, p), "displayTimeUnit": "ms",
           "otherData": {"problem": p.name, "period_us": res.period_s * 1e6, "source": "codesign simulator"}}
    f.write(json.dumps(doc).encode())
