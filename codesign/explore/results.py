"""The results CSV of a sweep: one line per finished point, appended as it finishes, resumable.

Why it survives SIGKILL: each row is one physical line (messages have their newlines replaced) written
with a single ``os.write`` on a file opened O_APPEND, so after a kill the file holds whole rows plus at
most one torn last line; on open a torn line is dropped and its point is solved again. A row is
never written twice because the key of every row already in the file is skipped, and two sweeps cannot
append to one file at once (an advisory lock beside it; the kernel drops it when a process dies).
Whenever the file must change other than by appending (dropping a torn line, adding columns for a sweep of
other parameters, ``retry_failed`` dropping error rows), it is rewritten to a temporary file that then
replaces it atomically. Rows reach the kernel at once (a killed process loses nothing); they are not
fsync'ed, so a power cut may lose the last rows, which a rerun then solves again.
"""
from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import SpecError

#: Statuses that are answers; a rerun skips them. ``error`` rows are skipped too unless retry_failed.
FINAL = ("optimal", "time_limit", "infeasible")
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

    def __init__(self, path: str | Path, columns: Sequence[str], *, retry_failed: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_path = self.path.with_name(f".{self.path.name}.lock")
        self._lock_fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(self._lock_fd)
                raise SpecError("another sweep is writing this results file; wait for it or choose another --out",
                                file=str(self.path)) from None
        try:
            header, rows, clean = self._read()
        except BaseException:
            os.close(self._lock_fd)
            raise
        keep = [r for r in rows if not retry_failed or r.get("status") in FINAL]
        by_key: dict[str, dict[str, Any]] = {}
        for r in keep:
            by_key[r["key"]] = r  # a duplicate (a file edited by hand) keeps its last row, once
        cols = list(header) + [c for c in columns if c not in header] if header else list(columns)
        if cols != header or len(by_key) != len(rows) or not clean:
            self._rewrite(cols, by_key.values())
        self.columns = cols
        self.rows = by_key
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def _read(self) -> tuple[list[str], list[dict[str, Any]], bool]:
        """(header, rows, whether the file ended cleanly); a torn last line is left out."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return [], [], False
        clean = data.endswith(b"\n") or not data
        if not clean:
            data = data[: data.rfind(b"\n") + 1]
        lines = data.decode("utf-8", errors="replace").splitlines()
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
            try:
                self._lock_path.unlink()
            except OSError:
                pass
            os.close(self._lock_fd)
            self._lock_fd = -1
