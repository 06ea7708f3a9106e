"""Fuzz: mutated shipped problems make ``codesign validate`` accept, or reject with exactly one line.

The mutations and the checks live in benchmarks/fuzz_problems.py (run it by hand for a larger tally;
BENCHMARKS.md has one). Here a fixed seed and CODESIGN_FUZZ_MUTATIONS mutations (default 150, a few
seconds) run in-process; a finding names the mutation and keeps the mutated file beside the temp folder.
"""
from __future__ import annotations

import importlib.util
import os
import sys

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("fuzz_problems", ROOT / "benchmarks" / "fuzz_problems.py")
fuzz_problems = sys.modules["fuzz_problems"] = importlib.util.module_from_spec(_spec)  # (dataclasses need it)
_spec.loader.exec_module(fuzz_problems)

MUTATIONS = int(os.environ.get("CODESIGN_FUZZ_MUTATIONS", "150"))


def test_mutated_problems_are_accepted_or_rejected_in_one_line():
    tally = fuzz_problems.fuzz(MUTATIONS, seed=20240601)
    assert tally.total == MUTATIONS
    assert tally.findings == [], "\n".join(tally.findings[:10]) + "\n\n" + tally.table()
    # every kind ran, and the mutations are not all trivially rejected or accepted
    kinds = {k for k, _ in tally.counts}
    assert kinds == set(fuzz_problems.KINDS)
    rejected = sum(n for (_, o), n in tally.counts.items() if o == "rejected")
    assert 0 < rejected < MUTATIONS


def test_the_checker_flags_what_it_should(tmp_path):
    """The checker itself: a traceback, two lines or an unlocated error are findings."""
    def fake(lines: str, rc: int):
        def main(argv):
            sys.stderr.write(lines)
            return rc
        return main
    p = tmp_path / "x.yaml"
    assert fuzz_problems.check(p, fake("", 0))[0] == "valid"
    assert fuzz_problems.check(p, fake(f"codesign: error: {p}:3: a.b: expected\n", 2))[0] == "rejected"
    assert fuzz_problems.check(p, fake("codesign: error: one\ncodesign: error: two\n", 2))[0] == "finding"
    assert fuzz_problems.check(p, fake("codesign: error: no place at all\n", 2))[0] == "finding"
    assert fuzz_problems.check(p, fake("Traceback (most recent call last):\n", 3))[0] == "finding"
    assert fuzz_problems.check(p, fake("codesign: warning: nowhere\n", 0))[0] == "finding"

    def hang(argv):
        while True:
            pass
    assert fuzz_problems.check(p, hang, limit_s=0.2) == ("finding", "raised TookTooLong: more than 0.2 s")
