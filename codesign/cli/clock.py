"""When the command started: a time limit is the whole command's, the interpreter's start and the imports
before ``main`` included. The one module that reads the process's own ``/proc`` entry (no user's file)."""
from __future__ import annotations

import os
import time

#: When this module was imported (``time.perf_counter``): the start of the clock where the process's own start
#: cannot be read.
_IMPORTED = time.perf_counter()


def process_started() -> float:
    """When this process started, as a ``time.perf_counter()`` reading (s): a time limit is the whole command's,
    and the interpreter's start and the imports before ``main`` are part of it (0.1-0.5 s, more on a loaded
    machine). Linux: the start time in ``/proc/self/stat`` (clock ticks since boot) against ``CLOCK_BOOTTIME``,
    which counts from the same boot; elsewhere, or unreadable, when this module was imported."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()  # (the command name before it may hold spaces)
        start = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of the whole line: starttime
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - start
    except (OSError, ValueError, IndexError, AttributeError):  # not Linux (no /proc, no CLOCK_BOOTTIME)
        return _IMPORTED
    now = time.perf_counter()
    # a process that lived a minute before it imported codesign (a longer-lived program calling main()) is not
    # charged its age; nor is a start that the two clocks put in the future
    return now - age if 0.0 <= age <= now - _IMPORTED + 60.0 else _IMPORTED
