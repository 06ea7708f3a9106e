"""One output layer (``codesign/spec/outputs.py``) for every command that writes: no file of the user's is written
over, none through a symbolic link, checked before the work and again at the moment of writing; a sweep's results
CSV that is not codesign's is refused, never rewritten; a full disk is one line (exit 2), not an internal error,
and loses nothing. Issue 29, items 6 and 11 (the full disk of a sweep); each test failed before its fix."""
from __future__ import annotations

import errno
import os

import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

import codesign.explore.results as results
from codesign.cli import main
from codesign.errors import SpecError
from codesign.explore.results import ResultsFile

QUICK = str(ROOT / "problems/quickstart.yaml")
AREA = "engine.area_budget=3mm^2"
ENOSPC = OSError(errno.ENOSPC, "No space left on device")


def error_line(capsys, argv: list[str]) -> tuple[str, str]:
    """(stdout, the one error line) of a command that must exit 2."""
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert "Traceback" not in err and len(err.splitlines()) == 1 and err.startswith("codesign: error: "), err
    return out, err[len("codesign: error: "):].rstrip("\n")


@pytest.fixture
def no_solve(monkeypatch):
    """Reaching the solver is already the failure: the refusal must come before any work."""
    import codesign.explore.points  # noqa: F401  (imported now, it keeps the real solve for later tests)

    def refuse(*args, **kwargs):
        raise AssertionError("the work started before the output was checked")
    monkeypatch.setattr("codesign.pipeline.solve.solve", refuse)
    monkeypatch.setattr("codesign.explore.pareto.pareto_front", refuse)
    monkeypatch.setattr("codesign.study.run.run_study", refuse)


@pytest.fixture
def serial(monkeypatch):
    """A sweep's points solved in this process (no pool to start: fast, and patches reach them)."""
    import codesign.explore.points as points
    import codesign.explore.sweep as sw
    import codesign.pipeline.solve as ps
    # (a module first imported while another test's fixture stood in for solve would keep the stand-in)
    monkeypatch.setattr(points, "solve", ps.solve)
    real = sw.make_runner
    monkeypatch.setattr(sw, "make_runner", lambda executor, workers, *a, **kw: real("serial", None, *a, **kw))


def _mine(path, data: bytes = b"the user's own\n"):
    path.write_bytes(data)
    return data


# ---------------------------------------------------------------- a user's file where a result goes

@pytest.mark.parametrize("argv, name", [
    (["export-chakra", QUICK, "--out", "{d}"], "mlp4.0.et"),
    (["pareto", QUICK, "--out", "{d}/front.png"], "front.png"),
    (["pareto", QUICK, "--csv", "{d}/front.csv", "--out", "{d}/p.png"], "front.csv"),
    (["pareto", QUICK], "pareto_quickstart.png"),  # the default name, in the working folder
    (["sweep", QUICK, "--param", AREA, "--out", "{d}/r.csv"], "r_engine_area_budget.png"),
    (["reproduce", "--out", "{d}", "--workloads", "resnet50", "--sizes", "16"], "table.md"),
], ids=["export-chakra", "pareto-out", "pareto-csv", "pareto-default", "sweep-plot", "reproduce"])
@pytest.mark.parametrize("link", [False, True], ids=["file", "link"])
def test_no_command_writes_over_a_users_file_or_through_a_link(tmp_path, capsys, monkeypatch, no_solve, argv, name,
                                                                  link):
    """Each was overwritten (or written through the link to a file outside the folder); now refused before any
    work, with one line naming the file, and the file (or the link's target) is as it was."""
    monkeypatch.chdir(tmp_path)
    target = tmp_path / name
    if link:
        outside = tmp_path.parent / f"{tmp_path.name}-outside"
        before = _mine(outside)
        target.symlink_to(outside)
    else:
        before = _mine(target)
    _, msg = error_line(capsys, [a.format(d=tmp_path) for a in argv])
    assert name in msg and ("symbolic link" in msg if link else "codesign did not write it" in msg), msg
    assert (outside if link else target).read_bytes() == before
    assert target.is_symlink() == link


def test_export_chakra_replaces_its_own_files(tmp_path, capsys):
    """What codesign wrote (listed in the folder's .codesign-outputs) it writes again: a rerun is not refused."""
    out = tmp_path / "traces"
    for _ in range(2):
        assert main(["export-chakra", QUICK, "--out", str(out)]) == 0
    assert (out / "mlp4.0.et").stat().st_size > 0
    listed = [line.split("\t")[0] for line in (out / ".codesign-outputs").read_text().splitlines()]
    assert listed == ["mlp4.0.et"]
    assert sorted(p.name for p in out.iterdir()) == [".codesign-outputs", "mlp4.0.et"]  # no temporary file left


def test_a_file_saved_during_the_solve_is_kept_and_the_answer_still_printed(tmp_path, capsys, monkeypatch):
    """``solve --out`` checked only before the solve: a summary.txt the user saved while it ran was overwritten.
    Now the write refuses it (exit 2, one line naming it), the other files are written and the answer printed."""
    import codesign.pipeline.solve as ps
    real = ps.solve

    def solve_while_the_user_saves(*args, **kwargs):
        sol = real(*args, **kwargs)
        (tmp_path / "summary.txt").write_text("saved meanwhile\n")
        return sol
    monkeypatch.setattr(ps, "solve", solve_while_the_user_saves)
    out, msg = error_line(capsys, ["solve", QUICK, "--out", str(tmp_path), "--no-validate"])
    assert "iteration time" in out  # the answer
    assert msg.startswith(f"--out {tmp_path}: summary.txt is there and codesign did not write it"), msg
    assert msg.endswith("it is kept, and codesign's summary.txt was not written"), msg
    assert (tmp_path / "summary.txt").read_text() == "saved meanwhile\n"
    assert (tmp_path / "solution.json").exists() and (tmp_path / "gantt.png").exists()


def test_a_file_saved_after_a_failed_write_is_the_users(tmp_path, capsys, monkeypatch):
    """A write stopped by a full disk listed its names as codesign's: a gantt.png the user put there afterwards was
    overwritten by the next run. Now only a file written whole is listed, and the user's is refused."""
    import codesign.report.files as files

    monkeypatch.setattr(files, "gantt", lambda *a, **k: (_ for _ in ()).throw(ENOSPC))
    assert main(["solve", QUICK, "--out", str(tmp_path), "--no-validate"]) == 2
    monkeypatch.undo()
    mine = _mine(tmp_path / "gantt.png")
    capsys.readouterr()
    _, msg = error_line(capsys, ["solve", QUICK, "--out", str(tmp_path), "--no-validate"])
    assert "gantt.png is there and codesign did not write it" in msg
    assert (tmp_path / "gantt.png").read_bytes() == mine


def test_a_result_is_never_placed_over_a_file_that_appears_as_it_is_written(tmp_path):
    """The last moment: between the check and the rename a file appears; ``link`` does not replace it."""
    from codesign.spec.outputs import Refused, write_output
    target = tmp_path / "plot.png"

    def fill(f):
        f.write(b"codesign's")
        _mine(target, b"appeared")
    with pytest.raises(Refused, match="plot.png"):
        write_output(target, fill)
    assert target.read_bytes() == b"appeared"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plot.png"]


# ---------------------------------------------------------------- a sweep's results CSV

COLS = ["key", "problem", "status", "error", "worker", "wall_s"]


def _results_file(path, *, torn: bool = False) -> bytes:
    f = ResultsFile(path, COLS)
    try:
        f.append({"key": "k1", "problem": "p", "status": "optimal", "wall_s": 1.5})
    finally:
        f.close()
    if torn:
        with open(path, "ab") as fh:
            fh.write(b"k2,p,opt")
    return path.read_bytes()


@pytest.mark.parametrize("data", [
    b"key,value\n1,1\n2,two\n",                                  # a key column, but no results file
    b"key,status,error,worker,wall_s,note\n1,ok,,me,1,\xff\xfe\n",  # the columns, but not UTF-8
    b"key,status,error,worker,wall_s\n1,ok,,me,1\n2,ok\n3,ok,,me,1\n",  # a line edited in the middle
    b"name,key,status,error,worker,wall_s\nx,1,ok,,me,1\n",         # key not first
], ids=["key-column", "not-utf8", "edited-line", "key-not-first"])
def test_a_csv_that_is_not_a_results_file_is_refused_not_rewritten(tmp_path, capsys, no_solve, data):
    """A user's CSV with a 'key' column was rewritten (rows dropped, '1' became '1.0', bytes replaced)."""
    csv = tmp_path / "mine.csv"
    csv.write_bytes(data)
    _, msg = error_line(capsys, ["sweep", QUICK, "--param", AREA, "--out", str(csv), "--no-plots"])
    assert msg.startswith(f"{csv}: exists and is not a codesign results file"), msg
    assert csv.read_bytes() == data


def test_a_link_at_the_temporary_name_is_not_followed(tmp_path):
    """A rewrite (here: dropping a torn last line) went through ``.<results>.tmp``: a link planted there had its
    target truncated, and the results file became that link."""
    path = tmp_path / "r.csv"
    _results_file(path, torn=True)
    outside = tmp_path / "outside.txt"
    before = _mine(outside)
    (tmp_path / ".r.csv.tmp").symlink_to(outside)
    f = ResultsFile(path, COLS)
    f.close()
    assert outside.read_bytes() == before
    assert not path.is_symlink() and list(f.rows) == ["k1"]


@pytest.mark.parametrize("name", ["r.csv", ".r.csv.lock"])
def test_a_results_file_or_lock_that_is_a_link_is_refused(tmp_path, name):
    path = tmp_path / "r.csv"
    outside = tmp_path / "elsewhere"
    (tmp_path / name).symlink_to(outside)
    with pytest.raises(SpecError, match="symbolic link"):
        ResultsFile(path, COLS)
    assert not outside.exists()  # not created through the link


# ---------------------------------------------------------------- a full disk during a sweep

class _FullDisk:
    """The os module, but every os.write finds the disk full."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def write(fd, data):
        raise ENOSPC


def test_a_full_disk_while_appending_a_row_is_one_line(tmp_path, capsys, monkeypatch, serial):
    """Was exit 3 (internal error: OSError). The rows written before stay, and a rerun solves the rest."""
    out = tmp_path / "r.csv"
    _results_file(out)  # another sweep's row, which the disk's filling must not cost
    monkeypatch.setattr(results, "os", _FullDisk())
    _, msg = error_line(capsys, ["sweep", QUICK, "--param", AREA, "--out", str(out), "--quiet"])
    assert msg == f"{out}: cannot append to the results file: No space left on device; the rows in it are kept " \
                  "(rerun the command once the cause is gone to solve the rest)"
    monkeypatch.undo()
    f = ResultsFile(out, COLS)
    f.close()
    assert list(f.rows) == ["k1"] and f.rows["k1"]["wall_s"] == 1.5


def test_a_full_disk_while_rewriting_the_csv_leaves_it_whole(tmp_path, monkeypatch):
    path = tmp_path / "r.csv"
    before = _results_file(path, torn=True)  # the torn line makes the next open rewrite the file
    real = results.cell

    def cell(v):
        if v == "optimal":
            raise ENOSPC
        return real(v)
    monkeypatch.setattr(results, "cell", cell)
    with pytest.raises(SpecError, match="cannot update the results file: No space left on device"):
        ResultsFile(path, COLS)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r.csv.lock", "r.csv"]  # no temporary file left


def test_a_full_disk_while_drawing_the_plots_is_one_line(tmp_path, capsys, monkeypatch, serial):
    """Was exit 3. The table and the results file are there; the plot is not half written."""
    import matplotlib.figure
    out = tmp_path / "r.csv"

    def full(self, fname, **kwargs):
        fname.write(b"\x89PNG half")
        raise ENOSPC
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", full)
    printed, msg = error_line(capsys, ["sweep", QUICK, "--param", AREA, "--out", str(out), "--quiet"])
    png = tmp_path / "r_engine_area_budget.png"
    assert msg == f"--out {png}: cannot write {png.name}: No space left on device; nothing there was overwritten"
    assert f"results         {out}" in printed and out.stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r.csv.lock", "r.csv"]


# ---------------------------------------------------------------- the invariant, over any order of events

_EVENTS = st.lists(st.tuples(st.sampled_from(["codesign", "user", "link", "remove"]), st.sampled_from("abc")),
                   max_size=12)


@settings(max_examples=60, deadline=None)
@given(events=_EVENTS)
def test_codesign_writes_a_name_exactly_when_it_is_free_or_its_own(tmp_path_factory, events):
    """Whatever the user does between codesign's writes (saves a file, plants a link, removes one), a write
    succeeds exactly when the name is free or holds what codesign last wrote there, and no byte of the user's
    (nor of a link's target) changes. (The user's files differ in size from codesign's: a stamp is a size and
    a time, and a same-size edit within the clock's tick would look unchanged.)"""
    from codesign.spec.outputs import Refused, write_output
    folder = tmp_path_factory.mktemp("out")
    outside = folder.parent / f"{folder.name}-target"
    outside.write_bytes(b"outside, keep")
    last: dict[str, str] = {}  # name -> who wrote it last: "codesign", "user" or "link"
    user_bytes: dict[str, bytes] = {}
    for i, (who, name) in enumerate(events):
        p = folder / name
        if who == "codesign":
            ok = last.get(name) in (None, "codesign")
            try:
                write_output(p, lambda f, i=i: f.write(b"codesign %d" % i))
                assert ok, (events[: i + 1], "wrote over the user's")
                last[name] = "codesign"
            except Refused:
                assert not ok, (events[: i + 1], "refused its own")
        else:
            if p.is_symlink() or p.exists():
                p.unlink()
            last.pop(name, None)
            if who == "user":
                user_bytes[name] = b"the user's own, longer %d" % i
                p.write_bytes(user_bytes[name])
                last[name] = "user"
            elif who == "link":
                p.symlink_to(outside)
                last[name] = "link"
        for n, w in last.items():
            if w == "user":
                assert (folder / n).read_bytes() == user_bytes[n]
        assert outside.read_bytes() == b"outside, keep"
    assert not [q for q in folder.iterdir() if q.name.endswith(".tmp")]


def test_the_studys_generator_writes_over_no_case_file_of_the_users(tmp_path):
    """``reproduce --problems DIR`` with one case missing regenerated every case, writing over those the user had
    edited; now it writes only the missing ones, and a full regeneration refuses a file it did not write."""
    from codesign.study.cases import generate
    d = tmp_path / "paper"
    files = generate(d, workloads=("resnet50",), sizes=(16,), latency=False)
    mine = _mine(files[0], b"# my own case\n")
    files[1].unlink()
    generate(d, workloads=("resnet50",), sizes=(16,), latency=False, missing_only=True)
    assert files[0].read_bytes() == mine and files[1].exists()
    with pytest.raises(SpecError, match="not written by the study's generator"):
        generate(d, workloads=("resnet50",), sizes=(16,), latency=False)
    assert files[0].read_bytes() == mine


def test_a_users_copy_with_codesigns_size_and_times_is_still_the_users(tmp_path):
    """A file put in place of codesign's with the same size and modification time (``cp -p``, ``rsync -t``) is
    the user's: the list of outputs holds the inode too. A list written before it held one (two fields) still
    lets codesign replace its own file."""
    import shutil

    from codesign.errors import CodesignError
    from codesign.spec.outputs import MANIFEST, write_output
    path = tmp_path / "summary.txt"
    write_output(path, lambda f: f.write(b"codesign's"))
    mine = tmp_path / "mine.txt"
    mine.write_bytes(b"the user's")          # the same size as codesign's
    st = path.stat()
    os.utime(mine, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(path, tmp_path / "aside")    # (kept: its inode is not free to be taken by the copy)
    shutil.copy2(mine, path)                 # a new inode, codesign's size and times
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    with pytest.raises(CodesignError):
        write_output(path, lambda f: f.write(b"codesign's again"))
    assert path.read_bytes() == b"the user's"
    # an older list (size and time only) of a file codesign wrote: still codesign's
    st = path.stat()
    (tmp_path / MANIFEST).write_text(f"summary.txt\t{st.st_size}\t{st.st_mtime_ns}\n")
    write_output(path, lambda f: f.write(b"codesign's again"))
    assert path.read_bytes() == b"codesign's again"
