"""codesign works outside its repository: installed from a wheel, run from any folder.

The issue "Never a wrong answer", case 6: the solver profiles a problem names (``default``, ``fast``,
``exact``) were looked up only in ``solvers/`` beside the problem or above it, so an installed codesign
run on a copied problem failed. They now ship as package data (``codesign/problem/profiles/``, copies of
``solvers/``, the source of truth), and an unknown ``--solver`` is an error against the flag.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from conftest import ROOT

from codesign import load_problem
from codesign.cli import main
from codesign.problem.load import SHIPPED_PROFILES


def test_shipped_profiles_are_copies_of_solvers():
    """solvers/ is the source of truth: after editing a profile there, copy it to codesign/problem/profiles/."""
    source = {p.name: p.read_bytes() for p in (ROOT / "solvers").glob("*.yaml")}
    shipped = {p.name: p.read_bytes() for p in SHIPPED_PROFILES.glob("*.yaml")}
    assert source.keys() == shipped.keys() == {"default.yaml", "fast.yaml", "exact.yaml"}
    for name in source:
        assert shipped[name] == source[name], f"codesign/problem/profiles/{name} differs from solvers/{name}"


def test_profiles_are_found_from_another_folder(tmp_path, monkeypatch):
    shutil.copy(ROOT / "problems/quickstart.yaml", tmp_path / "quickstart.yaml")
    monkeypatch.chdir(tmp_path)
    assert load_problem("quickstart.yaml").solver.profile == "default"
    p = load_problem("quickstart.yaml", solver_profile="fast")
    assert (p.solver.profile, p.solver.time_limit_s, p.solver.mip_gap) == ("fast", 10.0, 1e-2)


def test_a_local_profile_still_wins(tmp_path, monkeypatch):
    (tmp_path / "solvers").mkdir()
    (tmp_path / "solvers/default.yaml").write_text("time_limit: 7 s\n")
    shutil.copy(ROOT / "problems/quickstart.yaml", tmp_path / "quickstart.yaml")
    monkeypatch.chdir(tmp_path)
    assert load_problem("quickstart.yaml").solver.time_limit_s == 7.0


def test_unknown_solver_flag_is_an_error_against_the_flag(capsys):
    rc = main(["solve", str(ROOT / "problems/quickstart.yaml"), "--solver", "x"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err == "codesign: error: --solver: unknown profile 'x'; expected default, exact, fast or a YAML path\n"


def test_missing_solver_flag_file_is_an_error_against_the_flag(tmp_path, capsys):
    rc = main(["solve", str(ROOT / "problems/quickstart.yaml"), "--solver", str(tmp_path / "mine.yaml")])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.startswith("codesign: error: --solver: '") and err.endswith(": solver profile not found\n"), err


def _fresh_venv(where: Path) -> Path:
    """A venv without pip that sees this interpreter's installed dependencies (pyomo, highspy, ...) after
    its own site-packages, so the wheel's codesign is the one imported. Skips if no venv can be made."""
    try:
        venv.create(where, with_pip=False, symlinks=os.name != "nt")
    except Exception as e:  # noqa: BLE001 - e.g. a Python built without venv support
        pytest.skip(f"cannot create a virtual environment: {e}")
    py = where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    own = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    import site
    ours = [p for p in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(p)]
    Path(own, "codesign_test_deps.pth").write_text("\n".join(ours) + "\n")
    return py


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """codesign built as a wheel from a clean copy of the sources (no problems/) and installed into a fresh venv:
    (its python, an empty working folder, the environment to run it in)."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    src = tmp_path / "src"
    shutil.copytree(ROOT / "codesign", src / "codesign", ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / f, src / f)
    py = _fresh_venv(tmp_path / "venv")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"),
                            str(src)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = next((tmp_path / "dist").glob("codesign-*.whl"))
    inst = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index",
                           "-q", str(wheel)], capture_output=True, text=True, timeout=300)
    assert inst.returncode == 0, inst.stdout + inst.stderr
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return py, work, env


def test_wheel_installs_and_solves_from_another_folder(installed):
    """Solve the quickstart problem copied alone into an empty folder, with codesign installed from a wheel."""
    py, work, env = installed
    shutil.copy(ROOT / "problems/quickstart.yaml", work / "quickstart.yaml")
    where = subprocess.run([str(py), "-c", "import codesign; print(codesign.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=60)
    assert where.returncode == 0 and where.stdout.startswith(str(py.parent.parent)), where.stdout + where.stderr
    if _compiler():
        kernel = subprocess.run([str(py), "-c", "from codesign.sim import replay; print(replay.COMPILED)"],
                                cwd=work, env=env, capture_output=True, text=True, timeout=60)
        assert kernel.stdout.strip() == "True", kernel.stdout + kernel.stderr
    exe = py.parent / ("codesign.exe" if os.name == "nt" else "codesign")
    r = subprocess.run([str(exe), "solve", "quickstart.yaml", "--json"], cwd=work, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "optimal"


def _compiler() -> str | None:
    """The C compiler setuptools would build extensions with, if there is one."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc)


def test_the_replay_runs_compiled_where_a_compiler_is():
    """setup.py builds the replay's event loop as an optional extension: an install without a C compiler
    still works (on the Python loop, which answers the same), but one with a compiler must have built it."""
    from codesign.sim import replay
    if not _compiler():
        pytest.skip("no C compiler: the replay runs its Python loop")
    assert replay._kernel is not None, "codesign/sim/_kernel.c was not built: rerun pip install -e ."
    assert replay.COMPILED or os.environ.get("CODESIGN_REPLAY") == "python"


def test_an_installed_study_needs_its_problems_named_and_writes_nothing_beside_the_package(installed):
    """problems/ is not package data: installed, ``codesign reproduce`` says to give --problems, and
    ``python -m codesign.study --generate`` to give --dir (it wrote 114 files into site-packages/problems/), each
    on one line with exit 2, and neither writes anything into site-packages."""
    py, work, env = installed
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    exe = py.parent / ("codesign.exe" if os.name == "nt" else "codesign")
    runs = {"reproduce": [str(exe), "reproduce", "--workloads", "resnet50", "--sizes", "16", "--out", "study"],
            "generate": [str(py), "-m", "codesign.study", "--generate"]}
    for what, argv in runs.items():
        r = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, (what, r.stdout + r.stderr)
        assert "not run from its source tree" in r.stderr and ("--problems" if what == "reproduce" else "--dir") \
            in r.stderr, r.stderr
    assert not (site / "problems").exists()
