"""The results CSV of a sweep: one line per finished point, appended as it finishes, resumable.

Why it survives SIGKILL: each row is one physical line (messages have their newlines replaced) written
with a single ``os.write`` on a file opened O_APPEND, so after a kill the file holds whole rows plus at
most one torn last line; on open a torn line is dropped and its point is solved again. A row is
never written twice because the key of every row already in the file is skipped, and two sweeps cannot
append to one file at once (an advisory lock on a file beside it, which stays there; the kernel drops the
lock when a process dies). Whenever the file must change other than by appending (dropping a torn line,
adding columns for a sweep of other parameters, dropping the ``error`` rows of the points a sweep solves
again), it is rewritten to a temporary file that then replaces it atomically. Lines end at ``\n`` alone: a
row's text may hold other characters Python counts as line breaks (a form feed in a message, U+2028 in a
name). Rows reach the kernel at once (a killed process loses nothing); they are not fsync'ed, so a power
cut may lose the last rows, which a rerun then solves again.
"""
from __future__ import annotations

import csv
import io
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import SpecError

TEXT_COLUMNS = ("key", "problem", "status", "error", "worker")

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock, the rest works
    fcntl = None  # type: ignore[assignment]


def cell(v: Any) -> str:
    """A value as CSV text: floats exactly (repr round-trips), None empty, text on one line."""
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v).replace("\r", " ").replace("\n", " | ")


def typed(column: str, text: str) -> Any:
    """A CSV cell back as a value: numbers, booleans, None for empty; text columns stay text."""
    if text == "":
        return None
    if column in TEXT_COLUMNS:
        return text
    if text in ("True", "False"):
        return text == "True"
    try:
        return float(text)
    except ValueError:
        return text


class ResultsFile:
    """An open, locked results CSV. ``rows`` maps each key in the file to its row (typed values)."""

    def __init__(self, path: str | Path, columns: Sequence[str], *, retry: Collection[str] = ()) -> None:
        """Open (or create) and lock the file. ``retry``: keys whose ``error`` rows are dropped, to be solved again
        (a sweep's own points under ``retry_failed``); every other row stays, whatever its status."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_path = self.path.with_name(f".{self.path.name}.lock")
        self._lock_fd = self._lock()
        try:
            header, rows, clean = self._read()
            keep = [r for r in rows if not (r.get("status") == "error" and r["key"] in retry)]
            by_key: dict[str, dict[str, Any]] = {}
            for r in keep:
                by_key[r["key"]] = r  # a duplicate (a file edited by hand) keeps its last row, once
            cols = list(header) + [c for c in columns if c not in header] if header else list(columns)
            if cols != header or len(by_key) != len(rows) or not clean:
                self._rewrite(cols, by_key.values())
            self.columns = cols
            self.rows = by_key
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except BaseException:  # (a full disk, say: the lock must not outlive this attempt)
            os.close(self._lock_fd)
            self._lock_fd = -1
            raise

    def _lock(self) -> int:
        """A descriptor holding the lock file's exclusive lock; SpecError if another sweep holds it. The lock file
        is never deleted: one deleted between another sweep's open and its lock would leave that sweep locking a
        file nobody else sees."""
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise SpecError("another sweep is writing this results file; wait for it or choose another --out",
                                file=str(self.path)) from None
        return fd

    def _read(self) -> tuple[list[str], list[dict[str, Any]], bool]:
        """(header, rows, whether the file ended cleanly); a torn last line is left out."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return [], [], False
        clean = data.endswith(b"\n") or not data
        if not clean:
            data = data[: data.rfind(b"\n") + 1]
        lines = data.decode("utf-8", errors="replace").split("\n")[:-1]  # (not splitlines: see the module's docstring)
        if not lines:
            return [], [], False
        reader = csv.reader(lines)
        header = next(reader)
        if "key" not in header:
            raise SpecError("exists and is not a codesign results file (no 'key' column); choose another --out",
                            file=str(self.path))
        rows = []
        for rec in reader:
            if len(rec) != len(header):
                clean = False  # a line cut where a newline stood: drop it
                continue
            rows.append({c: typed(c, t) for c, t in zip(header, rec)})
        return header, rows, clean

    def _rewrite(self, columns: Sequence[str], rows: Any) -> None:
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(columns)
            for r in rows:
                w.writerow([cell(r.get(c)) for c in columns])
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def append(self, row: Mapping[str, Any]) -> None:
        """Write one row as one line with one system call (see the module docstring)."""
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow([cell(row.get(c)) for c in self.columns])
        data = buf.getvalue().encode()
        while data:
            n = os.write(self._fd, data)
            data = data[n:]
        self.rows[str(row["key"])] = dict(row)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # (the lock file stays: see _lock)
            self._lock_fd = -1
