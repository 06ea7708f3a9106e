"""Commands the documentation shows with their output, run and compared (tests/test_docs.py, tests/test_readme.py).

The convention, in any docs/*.md page or README.md: an HTML comment naming the command, then (after at most
blank lines) the indented block of what it prints:

    <!-- output of: codesign solve problems/quickstart.yaml -->

        design          SRAM 2 MiB, ALU 400 GB/s, DMA 400 GB/s
        solver          optimal: ..., gap 0.000%, ... (master MILP on HiGHS + simulator)

Each shown line must begin a printed line, in order (lines the block leaves out are skipped), figure for
figure after runs of spaces are made one. ``...`` stands for anything (a figure that varies from run to run,
such as a time: the docs take timings from BENCHMARKS.md, not from a run they show). A shown line ending in
``...`` may stop short of the printed one. The command runs in an empty folder, its arguments naming files of
the repository made absolute, so that what it writes stays out of the checkout. Runs are shared: a command
shown twice, or by two pages, runs once per test session.
"""
from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = re.compile(r"^<!-- output of: (.+?) -->[ \t]*$", re.M)


@dataclass(frozen=True)
class Shown:
    """One command a page shows (its file and line) and the lines it shows as its output."""

    page: str
    line: int
    command: str
    lines: tuple[str, ...]


def shown_outputs(path: Path) -> list[Shown]:
    """Every marked command of ``path`` with its block."""
    text = path.read_text()
    out = []
    for m in MARK.finditer(text):
        rest = text[m.end():].split("\n")[1:]
        block: list[str] = []
        for line in rest:
            if not line.strip():
                if block:
                    break
                continue
            if not line.startswith("    "):
                break
            block.append(line[4:])
        out.append(Shown(str(path.relative_to(ROOT)), text[:m.start()].count("\n") + 1, m.group(1), tuple(block)))
    return out


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def pattern(line: str) -> re.Pattern:
    """A shown line as what a printed line must begin with: ``...`` stands for anything."""
    pieces = [re.escape(p) for p in _norm(line).split("...")]
    return re.compile(r".*?".join(pieces))


@functools.cache
def run(command: str) -> tuple[int, str, str]:
    """(status, stdout, stderr) of ``command`` ('codesign ...' or 'python ...'), run in an empty folder."""
    argv = shlex.split(command)
    head = {"codesign": [sys.executable, "-m", "codesign"], "python": [sys.executable]}[argv[0]]
    args = [str(ROOT / a) if not a.startswith("-") and (ROOT / a).exists() else a for a in argv[1:]]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory(prefix="shown-") as cwd:  # (the checkout's codesign, from any folder)
        r = subprocess.run(head + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout, r.stderr


def mismatch(shown: Shown) -> str | None:
    """None if the command prints what the page shows; else what differs."""
    status, stdout, stderr = run(shown.command)
    if status != 0:
        return f"{shown.page}:{shown.line}: `{shown.command}` exited {status}: {stderr.strip()[-500:]}"
    printed = [_norm(x) for x in stdout.splitlines()]
    at = 0
    for line in shown.lines:
        pat = pattern(line)
        found = next((i for i in range(at, len(printed)) if pat.match(printed[i])), None)
        if found is None:
            return (f"{shown.page}:{shown.line}: `{shown.command}` prints no line (after the ones matched) that "
                    f"begins {line!r}; it printed:\n{stdout}")
        at = found + 1
    return None
