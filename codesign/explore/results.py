"""The results CSV of a sweep: one line per finished point, appended as it finishes, resumable.

Why it survives SIGKILL: each row is one physical line (messages have their newlines replaced) written
with a single ``os.write`` on a file opened O_APPEND, so after a kill the file holds whole rows plus at
most one torn last line; on open a torn line is dropped and its point is solved again. A row is
never written twice because the key of every row already in the file is skipped, and two sweeps cannot
append to one file at once (an advisory lock on a file beside it, which stays there; the kernel drops the
lock when a process dies). Whenever the file must change other than by appending (dropping a torn line,
adding columns for a sweep of other parameters, dropping the ``error`` rows of the points a sweep solves
again), it is rewritten to a temporary file that then replaces it atomically (``spec.outputs.replace_file``: created
exclusively, so a link planted at its name is never followed). Lines end at ``\n`` alone: a
row's text may hold other characters Python counts as line breaks (a form feed in a message, U+2028 in a
name). Rows reach the kernel at once (a killed process loses nothing); they are not fsync'ed, so a power
cut may lose the last rows, which a rerun then solves again.

Nothing a user made is rewritten: a file is taken for a results file only if it is UTF-8 text whose header begins
with ``key`` and holds every one of ``MARKS`` and whose every complete line has the header's fields; anything else,
and a symbolic link at the file or at its lock, is refused (SpecError) and left as it is. A failure to write (a
full disk) is a SpecError too, naming the file: the rows written before it stay, and a rerun solves the rest.
"""
from __future__ import annotations

import csv
import io
import os
import stat
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..spec.outputs import replace_file

TEXT_COLUMNS = ("key", "problem", "status", "error", "worker")
#: The columns every results file codesign writes has (a sweep's, the study's cases.csv and hbm.csv): a file
#: without them is not one, whatever else it holds.
MARKS = ("key", "status", "error", "worker", "wall_s")
_NOT_OURS = "exists and is not a codesign results file ({}); it is left as it is: choose another --out"

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock, the rest works
    fcntl = None  # type: ignore[assignment]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


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
        self._fd = self._lock_fd = -1
        if self.path.is_symlink():
            raise SpecError(_NOT_OURS.format("a symbolic link, which codesign does not write through"),
                            file=str(self.path))
        self._lock_path = self.path.with_name(f".{self.path.name}.lock")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock_fd = self._lock()
        except OSError as e:
            raise self._cannot("open", e) from None
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
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | _NOFOLLOW)
        except BaseException as e:  # (a full disk, say: the lock must not outlive this attempt)
            os.close(self._lock_fd)
            self._lock_fd = -1
            if isinstance(e, OSError):
                raise self._cannot("update", e) from None
            raise

    def _cannot(self, what: str, e: OSError) -> SpecError:
        """A failure to write the file, as one line: nothing in it was lost."""
        return SpecError(f"cannot {what} the results file: {e.strerror or e}; the rows in it are kept (rerun the "
                         "command once the cause is gone to solve the rest)", file=str(self.path))

    def _lock(self) -> int:
        """A descriptor holding the lock file's exclusive lock; SpecError if another sweep holds it. The lock file
        is never deleted: one deleted between another sweep's open and its lock would leave that sweep locking a
        file nobody else sees."""
        try:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o644)
        except OSError as e:
            if not os.path.islink(self._lock_path):
                raise
            raise SpecError(f"its lock {self._lock_path.name} is a symbolic link, which codesign does not write "
                            "through; remove it or choose another --out", file=str(self.path)) from e
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
            fd = os.open(self.path, os.O_RDONLY | _NOFOLLOW)
        except FileNotFoundError:
            return [], [], False
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise SpecError(_NOT_OURS.format("not a regular file"), file=str(self.path))
            data = f.read()
        clean = data.endswith(b"\n") or not data
        if not clean:
            data = data[: data.rfind(b"\n") + 1]  # a torn last line (a killed sweep): dropped, its point solved again
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SpecError(_NOT_OURS.format(f"not UTF-8 text, byte {e.start + 1}"), file=str(self.path)) from None
        lines = text.split("\n")[:-1]  # (not splitlines: see the module's docstring)
        if not lines:
            return [], [], False
        reader = csv.reader(lines)
        header = next(reader)
        missing = [c for c in MARKS if c not in header]
        if header[:1] != ["key"] or missing:
            why = "its first column is not 'key'" if header[:1] != ["key"] else f"no {', '.join(missing)} column"
            raise SpecError(_NOT_OURS.format(why), file=str(self.path))
        rows = []
        for n, rec in enumerate(reader, 2):
            if len(rec) != len(header):  # codesign writes a row as one line: this one was edited
                raise SpecError(_NOT_OURS.format(f"line {n} has {len(rec)} fields, the header {len(header)}"),
                                file=str(self.path))
            rows.append({c: typed(c, t) for c, t in zip(header, rec)})
        return header, rows, clean

    def _rewrite(self, columns: Sequence[str], rows: Any) -> None:
        def fill(f: Any) -> None:
            text = io.TextIOWrapper(f, encoding="utf-8", newline="", write_through=True)
            w = csv.writer(text, lineterminator="\n")
            w.writerow(columns)
            for r in rows:
                w.writerow([cell(r.get(c)) for c in columns])
            text.detach()  # (the binary file stays open for its owner to flush and close)
        replace_file(self.path, fill)

    def rewrite(self, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> None:
        """Replace the file by ``columns`` and ``rows`` (the lock held), atomically; SpecError if it cannot be
        written, the file then as it was. The file stays open for appending: the new one is appended to."""
        try:
            self._rewrite(columns, rows)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | _NOFOLLOW)
        except OSError as e:
            raise self._cannot("rewrite", e) from None
        os.close(self._fd)
        self._fd, self.columns = fd, list(columns)
        self.rows = {str(r["key"]): dict(r) for r in rows}

    def append(self, row: Mapping[str, Any]) -> None:
        """Write one row as one line with one system call (see the module docstring)."""
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow([cell(row.get(c)) for c in self.columns])
        data = buf.getvalue().encode()
        try:
            while data:
                n = os.write(self._fd, data)
                data = data[n:]
        except OSError as e:  # (a full disk: at most a torn last line, which the next open drops)
            raise self._cannot("append to", e) from None
        self.rows[str(row["key"])] = dict(row)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # (the lock file stays: see _lock)
            self._lock_fd = -1
