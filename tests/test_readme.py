"""What the README shows is what the program prints today.

The README's summary of the main job is compared, line by line, with what `codesign solve` prints on
the same problem: each shown line (up to a "..." that marks a part that varies, such as timing) must
start a printed line, figure for figure, to the precision shown. Its Python example must run as shown.
"""
from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT

README = (ROOT / "README.md").read_text()


def _shown_summary() -> list[str]:
    """The indented block after 'The summary of the main job:'."""
    head = re.search(r"The summary of\s+the main job:", README).end()
    lines = []
    for line in README[head:].splitlines()[1:]:
        if not line.strip():
            if lines:
                break
            continue
        if not line.startswith("    "):
            break
        lines.append(line[4:])
    return lines


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_the_main_jobs_summary_is_what_solve_prints():
    shown = _shown_summary()
    assert len(shown) >= 5
    command = re.search(r"codesign solve (problems/\S+\.yaml)", README).group(1)
    r = subprocess.run([sys.executable, "-m", "codesign", "solve", command], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    printed = [_norm(x) for x in r.stdout.splitlines()]
    for line in shown:
        prefix = _norm(line.split("...")[0].rstrip(" ,;("))
        assert any(p.startswith(prefix) for p in printed), f"README shows {line!r}; solve printed:\n{r.stdout}"


def test_the_python_example_runs():
    block = re.search(r"```python\n(import codesign\n.*?)```", README, re.S).group(1)
    r = subprocess.run([sys.executable, "-c", block], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "optimal" in r.stdout
