"""The architecture: codesign's packages keep the layers of .importlinter, and importing the package (or
asking the command line for help) loads no solver, graph, dataframe or plotting library; README's Layout
names every package and module."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pyomo", "highspy", "networkx", "pandas", "matplotlib")


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_import_contracts_are_kept():
    r = _run("import sys; from importlinter.cli import lint_imports; "
             "sys.exit(lint_imports(config_filename='.importlinter', no_cache=True, no_logo=True))")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 kept, 0 broken" in r.stdout, r.stdout


def test_importing_codesign_loads_no_heavy_library():
    r = _run(f"import sys, codesign; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"import codesign loaded {r.stdout.strip()}"


def test_command_line_help_loads_no_heavy_library():
    r = _run("import sys; sys.argv = ['codesign', '--help']\n"
             "from codesign.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             f"print('loaded:', ' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    assert r.returncode == 0, r.stderr
    assert "usage: codesign" in r.stdout and r.stdout.rstrip().endswith("loaded:"), r.stdout


def _layout() -> dict[str, str]:
    """README's Layout section: each package's entry (its line and the indented lines that follow)."""
    text = (ROOT / "README.md").read_text().split("## Layout", 1)[1]
    entries: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"^      (\w+)/\s+(.*)$", line)
        if m:
            current = m.group(1)
            entries[current] = m.group(2)
        elif current and re.match(r"^ {20,}\S", line):
            entries[current] += " " + line.strip()
        else:
            current = None
    return entries


def test_readme_layout_names_every_package_and_module():
    layout = _layout()
    packages = sorted(p.name for p in (ROOT / "codesign").iterdir() if (p / "__init__.py").exists())
    assert sorted(layout) == packages, "README's Layout lists other packages than codesign/ has"
    for pkg in packages:
        modules = [m.stem for m in (ROOT / "codesign" / pkg).glob("*.py") if not m.stem.startswith("__")]
        missing = [m for m in modules if not re.search(rf"\b{m}\b", layout[pkg])]
        assert not missing, f"README's Layout does not name codesign/{pkg}/{', '.join(missing)}"


def test_ruff_finds_nothing():
    """The house style (pyproject.toml's [tool.ruff]): the same check CI runs on every file."""
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
