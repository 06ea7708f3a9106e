"""The progress bar of the long commands (``sweep``, ``pareto``, ``reproduce``): done/total, rate and ETA.

It goes to stderr, and only when stderr is a terminal or the command was given ``--progress``: a log or a
pipe gets no redrawn lines, and stdout (a ``--json`` document, a table) never sees it. The text is
``format_progress``, a pure function of the counts, so it is tested without a terminal.
"""
from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

#: A terminal line is redrawn at most this often (s): a sweep at 50 points/s must not spend its time drawing.
REDRAW_S = 0.1


def _duration(s: float) -> str:
    """A short duration: 42 s, 3 min 05 s, 1 h 02 min."""
    s = max(0.0, s)
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def format_progress(done: int, total: int | None, elapsed_s: float, *, unit: str = "points", failed: int = 0,
                    fraction: float | None = None, width: int = 24) -> str:
    """One line: a bar, ``done/total unit``, the rate (unit/s over ``elapsed_s``, seconds since the first
    unit started) and the time left at that rate. ``total`` None: the count is open-ended and ``fraction``
    (0..1, the share of the work done, e.g. the part of a Pareto front's range walked) sizes the bar and
    the ETA instead. No ETA before the first unit is done, and none once everything is."""
    if fraction is None and total:
        fraction = done / total
    f = min(1.0, max(0.0, fraction)) if fraction is not None and math.isfinite(fraction) else None
    bar = f"[{'#' * int(width * f)}{'.' * (width - int(width * f))}] " if f is not None else ""
    count = f"{done}/{total} {unit}" if total is not None else f"{done} {unit}"
    parts = [bar + count]
    if failed:
        parts.append(f"{failed} failed")
    if done and elapsed_s > 0:
        parts.append(f"{done / elapsed_s:.3g} {unit}/s")
    parts.append(f"{_duration(elapsed_s)} elapsed")
    if done and f is not None and 0 < f < 1:
        parts.append(f"ETA {_duration(elapsed_s * (1 - f) / f)}")
    return ", ".join(parts)


class ProgressBar:
    """A progress line on ``stream`` (stderr), redrawn in place; silent unless ``enabled`` (default: the
    stream is a terminal). Forced on a stream that is not a terminal (``--progress`` into a log), it writes
    one line per tenth of the work instead of redrawing."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None, unit: str = "points",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = self.tty if enabled is None else enabled
        self.unit, self.clock = unit, clock
        self._drawn = -math.inf
        self._tenth = -1
        self._open = False  # a redrawn line is on the terminal without its newline

    def update(self, done: int, total: int | None, elapsed_s: float, *, failed: int = 0,
               fraction: float | None = None, final: bool = False) -> None:
        """Show the state; ``final`` (or done == total) ends the line."""
        if not self.enabled:
            return
        final = final or (total is not None and done >= total)
        text = format_progress(done, total, elapsed_s, unit=self.unit, failed=failed, fraction=fraction)
        if self.tty:
            now = self.clock()
            if not final and now - self._drawn < REDRAW_S:
                return
            self._drawn = now
            self.stream.write("\r" + text + "\x1b[K" + ("\n" if final else ""))
            self._open = not final
        else:
            f = fraction if fraction is not None else (done / total if total else 0.0)
            tenth = int(10 * min(1.0, max(0.0, f)))
            if not final and tenth <= self._tenth:
                return
            self._tenth = tenth
            self.stream.write(text + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        """A line of its own on the stream (always, bar or not), above a redrawn bar."""
        if self._open:
            self.stream.write("\r\x1b[K")
            self._open = False
            self._drawn = -math.inf  # redraw the bar at the next update
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End a line left open (the command stopped before the last unit)."""
        if self.enabled and self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False

    def __call__(self, pr: Any) -> None:
        """A sweep's or a study's ``Progress`` callback (``codesign.explore.sweep.Progress``)."""
        if pr.total:
            self.update(pr.done, pr.total, pr.elapsed_s, failed=pr.failed)


def wanted(flag: bool, quiet: bool = False) -> bool | None:
    """The ``enabled`` of a command's bar: off with ``--quiet``, on with ``--progress``, else None (on when
    stderr is a terminal)."""
    if quiet:
        return False
    return True if flag else None


class Ticker:
    """A command's one progress line while it works without counts to show (``codesign solve``): after
    ``after_s`` seconds, on a terminal only, ``what: N s elapsed`` redrawn each second on stderr, erased when
    the work ends (a solve of a second or two prints nothing; a pipe or log never gets the line).
    ``stage(text)`` names what it is doing now (searching, replaying the answer, writing files)."""

    def __init__(self, what: str, stream: TextIO | None = None, *, after_s: float = 3.0, every_s: float = 1.0,
                 enabled: bool | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = tty if enabled is None else enabled
        self.what, self.after_s, self.every_s, self.clock = what, after_s, every_s, clock
        self._stage = ""
        self._shown = False
        self._thread = None
        import threading
        self._stop = threading.Event()

    def stage(self, text: str) -> None:
        self._stage = text

    def line(self, elapsed_s: float) -> str:
        return f"{self.what}: {self._stage + ', ' if self._stage else ''}{_duration(elapsed_s)} elapsed"

    def _run(self, start: float) -> None:
        if self._stop.wait(self.after_s):
            return
        while True:
            self.stream.write("\r" + self.line(self.clock() - start) + "\x1b[K")
            self.stream.flush()
            self._shown = True
            if self._stop.wait(self.every_s):
                return

    def __enter__(self) -> Ticker:
        if self.enabled:
            import threading
            self._thread = threading.Thread(target=self._run, args=(self.clock(),), daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            if self._shown:  # erase it: the report follows on stdout, and a terminal shows both
                self.stream.write("\r\x1b[K")
                self.stream.flush()
