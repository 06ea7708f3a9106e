"""The results CSV (``explore.results.ResultsFile``) loses nothing a user made: a retry drops only the ``error``
rows of the points it solves again, text with unusual line breaks comes back whole, two sweeps never hold its lock
at once, and a failed open leaves no lock behind."""
from __future__ import annotations

import errno

import pytest

import codesign.explore.results as results
from codesign.errors import SpecError
from codesign.explore.results import ResultsFile

COLS = ["key", "problem", "status", "error", "iteration_time_s", "worker", "wall_s"]


def _write(path, rows) -> None:
    f = ResultsFile(path, COLS)
    try:
        for r in rows:
            f.append(r)
    finally:
        f.close()


def test_a_retry_drops_only_the_error_rows_of_its_own_points(tmp_path):
    """``feasible`` is an answer (a search with ``order: optimize`` stopped by its time limit with an incumbent),
    and another sweep's rows in the same file are not this sweep's to drop, error or not."""
    path = tmp_path / "r.csv"
    _write(path, [{"key": "mine-ok", "status": "optimal", "iteration_time_s": 1.0},
                  {"key": "mine-feasible", "status": "feasible", "iteration_time_s": 2.0},
                  {"key": "mine-error", "status": "error", "error": "boom"},
                  {"key": "theirs-error", "status": "error", "error": "theirs"}])
    f = ResultsFile(path, COLS, retry={"mine-ok", "mine-feasible", "mine-error"})
    try:
        assert sorted(f.rows) == ["mine-feasible", "mine-ok", "theirs-error"]
        assert f.rows["mine-feasible"]["status"] == "feasible"
    finally:
        f.close()
    f = ResultsFile(path, COLS)  # and the file on disk says so
    try:
        assert sorted(f.rows) == ["mine-feasible", "mine-ok", "theirs-error"]
    finally:
        f.close()


@pytest.mark.parametrize("brk", ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_text_holding_another_line_break_comes_back_whole(tmp_path, brk):
    path = tmp_path / "r.csv"
    rows = [{"key": "k1", "problem": "plain", "status": "optimal", "iteration_time_s": 1.5},
            {"key": "k2", "problem": f"a{brk}b", "status": "error", "error": f"page{brk}break"},
            {"key": "k3", "problem": "after", "status": "optimal", "iteration_time_s": 2.5}]
    _write(path, rows)
    before = path.read_bytes()
    f = ResultsFile(path, COLS)
    try:
        assert sorted(f.rows) == ["k1", "k2", "k3"]
        assert (f.rows["k2"]["problem"], f.rows["k2"]["error"]) == (f"a{brk}b", f"page{brk}break")
    finally:
        f.close()
    assert path.read_bytes() == before  # nothing taken for a torn line and rewritten


def test_a_second_sweep_is_refused_while_the_first_holds_the_file(tmp_path):
    path = tmp_path / "r.csv"
    first = ResultsFile(path, COLS)
    try:
        with pytest.raises(SpecError, match="another sweep"):
            ResultsFile(path, COLS)
    finally:
        first.close()
    ResultsFile(path, COLS).close()  # free once the first closed


@pytest.mark.skipif(results.fcntl is None, reason="no advisory locks on this platform")
def test_a_sweep_that_opened_the_lock_as_another_closed_still_excludes_a_third(tmp_path, monkeypatch):
    """Sweep A closes between sweep B's open of the lock file and B's lock: B holds the lock, and a third sweep C
    is refused (a lock file deleted at A's close would leave B locking a file C no longer sees)."""
    import fcntl
    path = tmp_path / "r.csv"
    a = ResultsFile(path, COLS)

    class Between:
        LOCK_EX, LOCK_NB = fcntl.LOCK_EX, fcntl.LOCK_NB
        fired = False

        @classmethod
        def flock(cls, fd, how):
            if not cls.fired:
                cls.fired = True
                a.close()  # A finishes exactly here
            return fcntl.flock(fd, how)

    monkeypatch.setattr(results, "fcntl", Between)
    b = ResultsFile(path, COLS)
    monkeypatch.setattr(results, "fcntl", fcntl)
    try:
        with pytest.raises(SpecError, match="another sweep"):
            ResultsFile(path, COLS)
    finally:
        b.close()


def test_a_failed_open_leaves_no_lock_behind(tmp_path, monkeypatch):
    path = tmp_path / "r.csv"
    _write(path, [{"key": "k1", "status": "optimal"}])

    def full(self, columns, rows):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ResultsFile, "_rewrite", full)
    with pytest.raises(SpecError, match="cannot update the results file: No space left on device"):
        ResultsFile(path, [*COLS, "new_column"])  # a new column: the file is rewritten
    monkeypatch.undo()
    f = ResultsFile(path, [*COLS, "new_column"])  # the disk has room again: not refused as locked
    try:
        assert list(f.rows) == ["k1"] and "new_column" in f.columns
    finally:
        f.close()

