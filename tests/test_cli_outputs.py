"""Where results go: a wrong --out is the user's mistake (exit 2, one line, before any work), and a reader
that goes away (``codesign ... | head``) ends codesign quietly, as it ends git.

The issue "Never a wrong answer", case 9: each of these was an internal error (exit 3) before.
"""
from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

from codesign.cli import main

QUICK = str(ROOT / "problems/quickstart.yaml")


@pytest.fixture
def no_solve(monkeypatch):
    """Reaching the solver is already the failure: a wrong --out must be found before it."""
    def refuse(*args, **kwargs):
        raise AssertionError("the solve started before --out was checked")
    monkeypatch.setattr("codesign.pipeline.solve.solve", refuse)


def one_error(capsys, argv: list[str]) -> str:
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert out == "" and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("codesign: error: "), err
    return err[len("codesign: error: "):].rstrip("\n")


def test_solve_out_that_is_a_file(tmp_path, capsys, no_solve):
    f = tmp_path / "README.md"
    f.write_text("not a folder\n")
    msg = one_error(capsys, ["solve", QUICK, "--out", str(f)])
    assert msg == f"--out {f}: expected a folder to write into, but it is an existing file"


def test_solve_out_that_cannot_be_created(tmp_path, capsys, no_solve):
    blocker = tmp_path / "file"
    blocker.write_text("")
    msg = one_error(capsys, ["solve", QUICK, "--out", str(blocker / "sub")])
    assert msg.startswith(f"--out {blocker / 'sub'}: cannot create the folder: "), msg


def test_solve_out_under_proc(capsys, no_solve):
    msg = one_error(capsys, ["solve", QUICK, "--out", "/proc/x"])
    assert msg.startswith("--out /proc/x: cannot create the folder: "), msg


def test_simulate_out_that_is_a_file(tmp_path, capsys):
    f = tmp_path / "taken"
    f.write_text("")
    fixed = tmp_path / "fixed.yaml"
    text = (ROOT / "problems/quickstart.yaml").read_text()
    for old in ("    - {size: 2 MiB, area: 0.9 mm^2, power: 0.2 W}\n",
                "    - {rate: 400 GB/s, area: 1.2 mm^2, power: 1.2 W}\n",
                "    - {bandwidth: 400 GB/s, area: 0.8 mm^2, power: 0.8 W}\n"):  # one option each: a fixed design
        text = text.replace(old, "")
    fixed.write_text(text)
    msg = one_error(capsys, ["simulate", str(fixed), "--out", str(f)])
    assert msg == f"--out {f}: expected a folder to write into, but it is an existing file"


def test_sweep_and_pareto_outputs_that_are_folders(tmp_path, capsys, no_solve):
    msg = one_error(capsys, ["sweep", QUICK, "--param", "engine.area_budget=2mm^2,3mm^2", "--out", str(tmp_path)])
    assert msg == f"--out {tmp_path}: expected a file name, but it is a folder"
    msg = one_error(capsys, ["pareto", QUICK, "--out", str(tmp_path)])
    assert msg == f"--out {tmp_path}: expected a file name, but it is a folder"
    msg = one_error(capsys, ["pareto", QUICK, "--csv", str(tmp_path)])
    assert msg == f"--csv {tmp_path}: expected a file name, but it is a folder"


def test_reproduce_out_that_is_a_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("codesign.study.run.run_study", lambda **kw: (_ for _ in ()).throw(AssertionError("ran")))
    f = tmp_path / "taken"
    f.write_text("")
    msg = one_error(capsys, ["reproduce", "--out", str(f), "--workloads", "resnet50", "--sizes", "16"])
    assert msg == f"--out {f}: expected a folder to write into, but it is an existing file"


@pytest.mark.parametrize("argv", [["validate", QUICK], ["solve", QUICK, "--json", "--no-validate"]],
                         ids=["validate", "solve-json"])
def test_closed_pipe_ends_quietly(argv):
    """``codesign ... | head``: the reader is gone before codesign writes; no traceback, no message."""
    p = subprocess.Popen([sys.executable, "-m", "codesign", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()
    _, err = p.communicate(timeout=120)
    assert err.decode() == ""
    assert p.returncode == 141  # 128 + SIGPIPE, what a shell shows for 'git log | head'


def test_solve_out_does_not_write_over_a_file_codesign_did_not_write(tmp_path, capsys, no_solve):
    """Nothing a user made is lost: their summary.txt in the folder stops the command before the solve."""
    mine = tmp_path / "summary.txt"
    mine.write_text("my notes\n")
    msg = one_error(capsys, ["solve", QUICK, "--out", str(tmp_path)])
    assert msg.startswith(f"--out {tmp_path}: summary.txt is there and codesign did not write it")
    assert mine.read_text() == "my notes\n"


@pytest.mark.parametrize("name", ["summary.txt", ".codesign-outputs"])
def test_solve_out_does_not_write_through_a_link(tmp_path, capsys, no_solve, name):
    """Neither an output nor the list of outputs is written through a link out of the folder."""
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("keep\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(outside)
    msg = one_error(capsys, ["solve", QUICK, "--out", str(out)])
    assert f"{name} there is a symbolic link" in msg and outside.read_text() == "keep\n"


def test_solve_out_again_replaces_its_own_files_and_drops_a_stale_picture(tmp_path, capsys):
    """A second run into the same folder replaces what codesign wrote; a run without validation removes the
    timeline of the run before, which no longer matches the answer; the user's other files stay."""
    (tmp_path / "notes.md").write_text("mine\n")
    assert main(["solve", QUICK, "--out", str(tmp_path)]) == 0
    assert (tmp_path / "timeline.png").exists()
    assert main(["solve", QUICK, "--out", str(tmp_path), "--no-validate"]) == 0
    capsys.readouterr()
    assert not (tmp_path / "timeline.png").exists() and (tmp_path / "summary.txt").exists()
    assert (tmp_path / "notes.md").read_text() == "mine\n"
    listed = [line.split("\t")[0] for line in (tmp_path / ".codesign-outputs").read_text().splitlines()]
    assert sorted(listed) == ["gantt.png", "schedule.csv", "solution.json", "summary.txt"]
    (tmp_path / "timeline.png").write_text("the user's own now")  # not listed: theirs
    assert main(["solve", QUICK, "--out", str(tmp_path)]) == 2
    assert (tmp_path / "timeline.png").read_text() == "the user's own now"


def test_simulate_out_does_not_write_over_a_file_codesign_did_not_write(tmp_path, capsys):
    sol = tmp_path / "s"
    assert main(["solve", QUICK, "--out", str(sol), "--no-validate"]) == 0
    capsys.readouterr()
    out = tmp_path / "sim"
    out.mkdir()
    (out / "simulation.json").write_text("{}")
    msg = one_error(capsys, ["simulate", QUICK, "--solution", str(sol / "solution.json"), "--out", str(out)])
    assert "simulation.json is there and codesign did not write it" in msg
    assert (out / "simulation.json").read_text() == "{}"


@pytest.mark.parametrize("argv, phrase", [
    (["--param", "engine.area_budget=1mm^2:8mm^2:1000000"], "has 1,000,000 values; a sweep plans at most 100,000"),
    (["--param", "engine.area_budget=1mm^2:8mm^2:1000", "--param", "topology.dims[1].bandwidth=1GB/s:100GB/s:1000"],
     "1,000,000 points (1000 x 1000 values); a sweep plans at most 100,000"),
    (["--param", "engine.area_budget=2mm^2", "--workers", "99999999999999999999"],
     "--workers: expected a whole number from 1 to 100,000, got 99999999999999999999"),
], ids=["range", "grid", "workers"])
def test_a_sweep_too_large_is_refused_before_any_work(tmp_path, capsys, no_solve, argv, phrase):
    """A mistyped range or worker count was an internal error (MemoryError, OverflowError) or ate the memory."""
    out = tmp_path / "r.csv"
    msg = one_error(capsys, ["sweep", QUICK, *argv, "--out", str(out)])
    assert phrase in msg and not out.exists()


def test_the_api_refuses_an_absurd_worker_count(tmp_path):
    from codesign.errors import SpecError
    from codesign.explore.sweep import sweep
    with pytest.raises(SpecError, match="workers: expected a whole number from 1 to 100,000"):
        sweep(QUICK, {"engine.area_budget": "2mm^2"}, workers=10**9, out=tmp_path / "r.csv")


def test_validate_refuses_what_solve_would_refuse(tmp_path, capsys):
    """'validate' ran the parser's checks only: a ring of 10^23 NPUs passed as valid, then 'solve' refused it (a
    chunk taking 5e16 s, beyond what the MILP holds). Both refuse it now, with the same line. (Sizes are bounded
    by the parser since; a link latency of 10^6 s, which the parser only warns about, reaches the MILP's check.)"""
    text = (ROOT / "problems/quickstart.yaml").read_text()
    bad = tmp_path / "huge.yaml"
    old = "kind: ring, size: 4, links: 2, bandwidth: 100 GB/s, latency: 500 ns"
    bad.write_text(text.replace(old, old.replace("500 ns", "1000000 s"), 1))
    assert bad.read_text() != text

    def refusal(argv: list[str]) -> str:
        rc = main(argv)
        out, err = capsys.readouterr()
        lines = err.splitlines()
        assert rc == 2 and out == "" and "Traceback" not in err, err
        assert all(t.startswith("codesign: warning: ") for t in lines[:-1]), err
        assert lines[-1].startswith("codesign: error: "), err
        return lines[-1][len("codesign: error: "):]

    from_validate = refusal(["validate", str(bad)])
    from_solve = refusal(["solve", str(bad), "--no-validate"])
    assert from_validate == from_solve and "codesign holds tasks up to" in from_validate
    line = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if "1000000 s" in t)
    assert from_validate.startswith(f"{bad}:{line}: topology.dims[0]: ")  # the key's line, found in the file


def test_a_file_codesign_wrote_and_the_user_changed_is_theirs(tmp_path, capsys):
    assert main(["solve", QUICK, "--out", str(tmp_path), "--no-validate"]) == 0
    capsys.readouterr()
    (tmp_path / "summary.txt").write_text("edited by hand\n")
    msg = one_error(capsys, ["solve", QUICK, "--out", str(tmp_path), "--no-validate"])
    assert "summary.txt is there and codesign did not write it (or it changed since" in msg
    assert (tmp_path / "summary.txt").read_text() == "edited by hand\n"


def test_a_write_stopped_partway_leaves_the_folder_codesigns(tmp_path, capsys, monkeypatch):
    """A full disk while the pictures are drawn: the answer is printed all the same and one line says what was not
    written; the files already written are codesign's, so the next run, with room again, writes over them instead
    of refusing them as the user's."""
    import errno

    import codesign.report.files as files

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "gantt", full)
    assert main(["solve", QUICK, "--out", str(tmp_path), "--no-validate"]) == 2
    out, err = capsys.readouterr()
    assert "iteration time" in out and "wrote" not in out
    assert err == f"codesign: error: --out {tmp_path}: cannot write gantt.png: No space left on device; nothing " \
                  "there was overwritten\n"
    assert (tmp_path / "solution.json").exists() and not (tmp_path / "gantt.png").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []  # no temporary file left
    monkeypatch.undo()
    assert main(["solve", QUICK, "--out", str(tmp_path), "--no-validate"]) == 0
    assert (tmp_path / "gantt.png").exists()
