"""What the README shows is what the program prints today.

The README's summary of the main job is compared, line by line, with what `codesign solve` prints on
the same problem (tests/shown.py: each shown line must start a printed line, figure for figure, "..."
standing for what varies, such as timing). Its Python example must run as shown.
"""
from __future__ import annotations

import re
import subprocess
import sys

import shown
from conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_the_main_jobs_summary_is_what_solve_prints():
    """The set-up's command is the block the README shows as the main job's summary (tests/shown.py compares)."""
    command = re.search(r"&& (codesign solve problems/\S+\.yaml)\n", README).group(1)
    blocks = [b for b in shown.shown_outputs(ROOT / "README.md") if b.command == command]
    assert blocks and len(blocks[0].lines) >= 5, f"README shows no output of {command!r}"
    problem = shown.mismatch(blocks[0])
    assert problem is None, problem


def test_the_python_example_runs():
    block = re.search(r"```python\n(import codesign\n.*?)```", README, re.S).group(1)
    r = subprocess.run([sys.executable, "-c", block], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "optimal" in r.stdout
